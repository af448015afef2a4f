"""Sparse input (scipy.sparse CSR/CSC, matrix and array classes): an implicit zero
is the value 0.0, a stored NaN a missing value, and every result equals that of the
same data dense, bit for bit; prediction never densifies the rows; the histogram
fit bins the sparse columns without densifying X."""

import tracemalloc
import warnings

import numpy as np
import pytest

from conftest import require, traced_peak

sp = require("scipy.sparse")
require("sklearn")

from gbc_core import Booster, GradientBoostingClassifier  # noqa: E402
from gbc_core._binning import BinMapper  # noqa: E402
from gbc_core._histogram_splitter import bin_value_ranges, bin_value_ranges_csc  # noqa: E402
from gbc_core._validation import check_features  # noqa: E402

CONTAINERS = ["csr_matrix", "csr_array", "csc_matrix", "csc_array"]


def _container(name):
    cls = getattr(sp, name, None)
    if cls is None:
        pytest.skip(f"scipy has no {name}")
    return cls


def _data(n=500, p=10, n_classes=2, seed=0, nan=0.05, zeros=0.6):
    """Dense data (float64) with many zeros and some NaN, its labels and weights."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)).round(2)
    X[rng.random((n, p)) < zeros] = 0.0
    X[rng.random((n, p)) < nan] = np.nan
    X[:, 3] = rng.integers(0, 4, size=n)  # few distinct values (incl. 0)
    X[:7, 4] = -0.0
    s = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) - np.nan_to_num(X[:, 2])
    y = np.digitize(s, np.quantile(s, np.linspace(0, 1, n_classes + 1)[1:-1]))
    y = np.where(rng.random(n) < 0.1, rng.integers(0, n_classes, n), y)
    w = rng.random(n) + 0.1
    w[rng.random(n) < 0.1] = 0.0
    return X, y, w


def _sparse(X, name):
    """``X`` in the container ``name``, zeros implicit, NaN stored (and a few
    explicit zeros stored too: they are the same value)."""
    S = sp.coo_matrix(np.nan_to_num(X, nan=1.0))  # the pattern of the nonzeros and NaN
    rows, cols = S.row, S.col
    vals = X[rows, cols]
    extra = np.argwhere(X == 0)[:5]  # a few explicit zeros
    rows = np.concatenate([rows, extra[:, 0]])
    cols = np.concatenate([cols, extra[:, 1]])
    vals = np.concatenate([vals, np.zeros(len(extra))])
    out = _container(name)((vals, (rows, cols)), shape=X.shape)
    assert out.format == name[:3]
    return out


def _bits(a):
    a = np.asarray(a)
    return a.view(np.uint64) if a.dtype == np.float64 else a


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert np.array_equal(_bits(a), _bits(b))


def _all_outputs(model, X):
    out = {name: getattr(model, name)(X) for name in (
        "predict", "predict_proba", "predict_log_proba", "decision_function", "apply",
        "predict_contributions")}
    for name in ("staged_predict", "staged_predict_proba", "staged_decision_function"):
        out[name] = np.stack(list(getattr(model, name)(X)))
    return out


@pytest.mark.parametrize("container", CONTAINERS)
@pytest.mark.parametrize("split_method", ["exact", "hist"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_fit_and_every_method_equal_the_dense_data_bit_for_bit(container, split_method,
                                                               n_classes):
    X, y, w = _data(n_classes=n_classes, seed=n_classes)
    S = _sparse(X, container)
    params = dict(n_estimators=8, max_depth=3, split_method=split_method, max_bins=16,
                  random_state=0, subsample=0.8, learning_rate=0.3)
    dense = GradientBoostingClassifier(**params).fit(X, y, sample_weight=w)
    sparse = GradientBoostingClassifier(**params).fit(S, y, sample_weight=w)
    # The same model: the same bytes of the model format.
    assert dense.to_bytes() == sparse.to_bytes()
    _same(dense.train_score_, sparse.train_score_)
    _same(dense.oob_scores_, sparse.oob_scores_)
    expected = _all_outputs(dense, X)
    for name, got in _all_outputs(sparse, S).items():
        _same(expected[name], got)
    # The Booster and the Ensemble take sparse rows too.
    booster = Booster.from_bytes(sparse.to_bytes())
    _same(booster.predict_proba(X), booster.predict_proba(S))
    _same(booster.predict_contributions(X), booster.predict_contributions(S))
    _same(booster.apply(X), booster.apply(S))
    _same(booster.ensemble.predict_raw(X, iterations=3),
          booster.ensemble.predict_raw(S, iterations=3))
    _same(np.stack(list(booster.staged_predict_proba(X))),
          np.stack(list(booster.staged_predict_proba(S))))


@pytest.mark.parametrize("n_features", [7, 10, 16, 17])
def test_threads_scoring_sparse_rows_equal_one_thread_and_the_dense_rows(n_features):
    # Each thread scatters its row into a buffer of its own; widths below, at and
    # across a cache line (16 floats) check that no two threads' rows overlap.
    X, y, _ = _data(n=300, p=n_features, seed=n_features)
    model = GradientBoostingClassifier(n_estimators=40, max_depth=3, random_state=0)
    booster = model.fit(X, y).booster_
    X_big = np.tile(X, (100, 1))  # 30,000 rows x 40 trees: several threads score
    S = sp.csr_matrix(X_big)  # zeros implicit, NaN stored
    dense = booster.ensemble.predict_raw(X_big, n_jobs=1)
    for n_jobs in (1, 2, 3):
        _same(booster.ensemble.predict_raw(S, n_jobs=n_jobs), dense)
    rows = slice(0, 3000)
    dense = booster.predict_contributions(X_big[rows], n_jobs=1)
    for n_jobs in (2, 3):
        _same(booster.predict_contributions(S[rows], n_jobs=n_jobs), dense)
        _same(booster.predict_contributions(X_big[rows], n_jobs=n_jobs), dense)


@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_early_stopping_eval_set_and_warm_start_on_sparse_data(split_method):
    X, y, w = _data(n=400, n_classes=3, seed=5)
    S = sp.csr_array(_sparse(X, "csr_matrix"))
    base = dict(split_method=split_method, max_bins=32, random_state=3, max_depth=2)
    # The early-stopping hold-out of validation_fraction.
    a = GradientBoostingClassifier(n_estimators=40, n_iter_no_change=3, **base).fit(X, y, w)
    b = GradientBoostingClassifier(n_estimators=40, n_iter_no_change=3, **base).fit(S, y, w)
    assert a.to_bytes() == b.to_bytes()
    _same(a.validation_score_, b.validation_score_)
    # An eval_set, dense and sparse.
    ev_d, ev_s = (X[:100], y[:100]), (S[:100], y[:100])
    a = GradientBoostingClassifier(n_estimators=6, **base).fit(X[100:], y[100:], eval_set=ev_d)
    b = GradientBoostingClassifier(n_estimators=6, **base).fit(S[100:], y[100:], eval_set=ev_s)
    assert a.to_bytes() == b.to_bytes()
    _same(a.validation_score_, b.validation_score_)
    # A warm start on sparse data continues as on the dense data.
    a.set_params(n_estimators=9, warm_start=True).fit(X[100:], y[100:], eval_set=ev_d)
    b.set_params(n_estimators=9, warm_start=True).fit(S[100:], y[100:], eval_set=ev_s)
    assert a.to_bytes() == b.to_bytes()


def test_init_estimator_gets_the_sparse_rows():
    from sklearn.linear_model import LogisticRegression

    X, y, _ = _data(n=300, seed=2)
    X = np.nan_to_num(X)  # (the logistic regression takes no NaN)
    S = _sparse(X, "csr_matrix")
    params = dict(n_estimators=5, init=LogisticRegression(), random_state=0)
    a = GradientBoostingClassifier(**params).fit(X, y)
    b = GradientBoostingClassifier(**params).fit(S, y)
    # (scikit-learn's logistic regression itself solves sparse and dense input apart,
    # to about 1e-7: the init scores, not the trees, differ that much.)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(S), atol=1e-6)
    np.testing.assert_allclose(b.predict_proba(X), b.predict_proba(S), atol=1e-6)


@pytest.mark.filterwarnings("ignore:Constructing a DIA matrix")
@pytest.mark.parametrize("fmt", ["coo", "lil", "dok", "bsr", "dia"])
def test_other_sparse_formats_are_converted(fmt):
    X, y, _ = _data(n=200, seed=7, nan=0.0)
    model = GradientBoostingClassifier(n_estimators=4, random_state=0).fit(X, y)
    S = sp.csr_matrix(X).asformat(fmt)
    _same(model.predict_proba(X), model.predict_proba(S))
    again = GradientBoostingClassifier(n_estimators=4, random_state=0).fit(S, y)
    assert again.to_bytes() == model.to_bytes()


def test_duplicate_entries_add_up_as_toarray_does():
    X, y, _ = _data(n=200, seed=8, nan=0.0)
    C = sp.csr_matrix(X)
    # Every entry split in two halves stored side by side: the same matrix summed.
    S = sp.csr_matrix((np.repeat(C.data / 2, 2), np.repeat(C.indices, 2), C.indptr * 2),
                      shape=X.shape)
    assert not S.has_canonical_format
    model = GradientBoostingClassifier(n_estimators=4, random_state=0).fit(X, y)
    _same(model.predict_proba(S.toarray()), model.predict_proba(S))


def test_implicit_zero_is_zero_and_stored_nan_is_missing():
    # One feature; the trees send 0.0 and NaN to different leaves.
    X = np.array([[0.0], [0.0], [1.0], [1.0], [np.nan], [np.nan]] * 10)
    y = np.array([0, 0, 1, 1, 1, 1] * 10)
    model = GradientBoostingClassifier(n_estimators=3, random_state=0).fit(X, y)
    S = sp.csr_matrix((np.array([1.0, np.nan]), np.array([0, 0]), np.array([0, 0, 1, 2])),
                      shape=(3, 1))  # rows: implicit 0, 1.0, NaN
    _same(model.predict_proba(np.array([[0.0], [1.0], [np.nan]])), model.predict_proba(S))
    assert model.predict(S).tolist() == [0, 1, 1]


def test_infinity_and_integers_as_in_dense_input():
    X, y, _ = _data(n=200, seed=9)
    X[5, 0], X[6, 1] = np.inf, -np.inf
    model = GradientBoostingClassifier(n_estimators=4, random_state=0).fit(X, y)
    _same(model.predict_proba(X), model.predict_proba(_sparse(X, "csr_matrix")))
    Xi = np.nan_to_num(X, posinf=0, neginf=0).round().astype(np.int64)
    Xi[0, 2] = 2**40 + 1  # not a float32: the warning names its column
    with pytest.warns(UserWarning, match=r"column\(s\) 2 hold values"):
        GradientBoostingClassifier(n_estimators=2).fit(sp.csc_matrix(Xi), y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = GradientBoostingClassifier(n_estimators=3, random_state=0).fit(Xi, y)
        b = GradientBoostingClassifier(n_estimators=3, random_state=0).fit(sp.csr_matrix(Xi), y)
    assert a.to_bytes() == b.to_bytes()


def test_sparse_input_errors():
    X, y, _ = _data(n=100, seed=1, nan=0.0)
    model = GradientBoostingClassifier(n_estimators=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="X has 9 features, but GradientBoostingClassifier "
                                         "is expecting 10"):
        model.predict(sp.csr_matrix(X[:, :9]))
    with pytest.raises(ValueError, match="X has 9 features, but the model expects 10"):
        model.booster_.predict(sp.csr_matrix(X[:, :9]))
    with pytest.raises(ValueError, match="Complex data not supported"):
        model.predict(sp.csr_matrix(X.astype(np.complex128)))
    with pytest.raises(ValueError, match="0 sample"):
        GradientBoostingClassifier().fit(sp.csr_matrix((0, 3)), [])
    with pytest.raises(ValueError, match="0 feature"):
        model.booster_.predict(sp.csr_matrix((3, 0)))
    with pytest.raises(TypeError, match="y is a sparse matrix"):
        GradientBoostingClassifier().fit(X, sp.csr_matrix(y.reshape(-1, 1)))
    # A structure scipy would not build: refused before any kernel reads it.
    bad = sp.csr_matrix(X)
    bad.indices = bad.indices.copy()
    bad.indices[0] = 99
    with pytest.raises(ValueError, match="not a valid sparse CSR matrix"):
        model.predict(bad)
    # Without sparse= the validation layer names what it accepts elsewhere.
    with pytest.raises(TypeError, match="sparse input is not supported here"):
        check_features(sp.csr_matrix(X))
    assert not hasattr(GradientBoostingClassifier().fit(sp.csr_matrix(X), y),
                       "feature_names_in_")


def test_binning_of_sparse_columns_equals_the_dense_binning():
    rng = np.random.default_rng(4)
    n = 3000
    X = rng.normal(size=(n, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.7] = 0
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 1] = np.where(rng.random(n) < 0.5, 0, rng.integers(1, 5, n))  # few values
    X[:, 2] = 0  # only zeros (no entry)
    X[:, 3] = np.where(X[:, 3] == 0, 0, X[:, 3])
    X[::3, 3] = -0.0  # stored below: a signed zero that the dense twin keeps
    coo = sp.coo_matrix(np.nan_to_num(X, nan=1.0))
    rows = np.concatenate([coo.row, np.arange(0, n, 3)])
    cols = np.concatenate([coo.col, np.full(len(range(0, n, 3)), 3)])
    S = check_features(sp.csc_matrix((X[rows, cols], (rows, cols)), shape=X.shape),
                       sparse="csc")
    col3 = slice(S.indptr[3], S.indptr[4])
    S.data[col3] = np.where(S.indices[col3] % 3 == 0, np.float32(-0.0), S.data[col3])
    X = S.toarray()  # the same data dense (toarray adds to +0.0: the sign set again)
    X[::3, 3] = -0.0
    assert np.isnan(X).any()
    # subsample below the number of values: the quantiles of a sampled subset.
    for mapper_args in (dict(max_bins=255), dict(max_bins=8, subsample=500),
                        dict(max_bins=20, subsample=10_000)):
        dense = BinMapper(**mapper_args).fit(X, 2)
        sparse = BinMapper(**mapper_args).fit(S, 2)
        for a, b in zip(dense.thresholds, sparse.thresholds):
            _same(a, b)
        bins = dense.transform(X, 2)
        _same(bins, sparse.transform(S, 2))
        zero_bin = dense.transform(np.zeros((1, 6), np.float32))[0]
        lo, hi = bin_value_ranges(np.asfortranarray(X), bins, dense.missing_bin)
        lo_s, hi_s = bin_value_ranges_csc(
            S.data, S.indices.astype(np.int32), S.indptr.astype(np.int64), bins,
            np.ascontiguousarray(zero_bin), dense.missing_bin)
        _same(lo.view(np.uint32), lo_s.view(np.uint32))
        _same(hi.view(np.uint32), hi_s.view(np.uint32))


def test_prediction_never_densifies_the_rows():
    # 20,000 rows x 200,000 features: 16 GB dense in float32, 1.2 MB of entries.
    rng = np.random.default_rng(0)
    n_fit, n, p = 300, 20_000, 200_000
    cols = np.arange(5)
    X_fit = sp.random(n_fit, p, density=0.0, format="csr")
    X_fit = sp.csr_matrix((rng.normal(size=n_fit * 5), (np.repeat(np.arange(n_fit), 5),
                                                         np.tile(cols, n_fit))), shape=(n_fit, p))
    y = (X_fit[:, [0]].toarray().ravel() > 0).astype(int)
    model = GradientBoostingClassifier(n_estimators=5, max_depth=2, split_method="hist",
                                       max_bins=8, random_state=0).fit(X_fit, y)
    nnz_per_row = 10
    X = sp.csr_matrix((rng.normal(size=n * nnz_per_row),
                       rng.integers(0, p, size=n * nnz_per_row).astype(np.int32),
                       np.arange(0, n * nnz_per_row + 1, nnz_per_row)), shape=(n, p))
    X.sum_duplicates()
    tracemalloc.start()
    try:
        proba = model.predict_proba(X)
        contributions_head = model.predict_contributions(X[:3])
        leaves = model.apply(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert proba.shape == (n, 2) and leaves.shape == (n, 5, 1)
    assert contributions_head.shape == (3, p + 1)
    # The entries (12 bytes each, a float32 copy) and the outputs: a few MB, never
    # the 16 GB of the dense rows nor a block of many rows of them (one dense row
    # is 800 KB).
    assert peak < 32 * 2**20, peak
    dense_rows = X[:50].toarray()
    _same(model.predict_proba(dense_rows), proba[:50])


def test_hist_fit_bins_sparse_columns_without_densifying_X():
    # 20,000 rows x 1,000 features: 80 MB dense in float32; the bins take 20 MB.
    # (Features of at most max_bins distinct values: the thresholds come from their
    # counts, without the sorted sample of a quantile binning, a buffer of at most
    # 64 MB for dense and sparse data alike.)
    rng = np.random.default_rng(1)
    n, p, k = 20_000, 1_000, 8
    X = sp.csr_matrix((rng.integers(1, 4, size=n * k), rng.integers(0, p, size=n * k),
                       np.arange(0, n * k + 1, k)), shape=(n, p))
    X.sum_duplicates()
    X = X.tocsc()
    y = rng.integers(0, 2, size=n)
    model = GradientBoostingClassifier(n_estimators=2, max_depth=2, split_method="hist",
                                       max_bins=8, random_state=0)
    _, peak = traced_peak(lambda: model.fit(X, y))
    dense_bytes = n * p * 4
    assert peak < dense_bytes // 2, (peak, dense_bytes)


def _widened(model, n_features):
    """``model``'s trees in a Booster of ``n_features`` features (the trees use the
    first few): a wide model without a wide fit."""
    from gbc_core import Ensemble

    ens = model.booster_.ensemble
    wide = Ensemble(ens.nodes, ens.tree_offsets, n_outputs=ens.n_outputs,
                    init_raw=ens.init_raw, learning_rate=ens.learning_rate,
                    n_features=n_features)
    return Booster(wide, model.classes_)


def test_cli_scores_a_wide_libsvm_file_without_densifying_it(tmp_path, capsys, monkeypatch):
    from conftest import run_main

    pq = require("pyarrow.parquet")
    from gbc_core._tabular import LibsvmData

    rng = np.random.default_rng(3)
    X, y, _ = _data(n=300, p=5, seed=3)
    model = GradientBoostingClassifier(n_estimators=5, random_state=0).fit(X, y)
    p = 300_000  # a chunk of rows at this width: 1.2 MB a row in float32
    booster = _widened(model, p)
    booster.save(tmp_path / "wide.gbc")
    lines = []
    for i in range(5000):
        cols = np.sort(rng.choice(p, size=6, replace=False))
        cols[:2] = rng.choice(5, size=2, replace=False)  # the model's features
        cols = np.unique(cols)
        vals = rng.normal(size=cols.size).round(3)
        lines.append(f"{i % 2} " + " ".join(f"{c + 1}:{v}" for c, v in zip(cols, vals)))
    (tmp_path / "wide.svm").write_text("\n".join(lines) + "\n")
    tracemalloc.start()
    try:
        rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "wide.gbc",
                              "wide.svm", "-o", "wide.parquet", "--quiet")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rc == 0, err
    # Dense chunks of this width would take hundreds of MB (the former reader's
    # chunks of 223 rows: 268 MB); the sparse rows take a few MB.
    assert peak < 64 * 2**20, peak
    X_read, _ = LibsvmData(tmp_path / "wide.svm", n_features=p).read_all()
    assert X_read.format == "csr"
    got = pq.read_table(tmp_path / "wide.parquet").column("proba").to_numpy()
    _same(got, booster.predict_proba(X_read)[:, 1])
    # The same rows dense (the model's 5 features only matter) score alike.
    _same(got, model.predict_proba(X_read[:, :5].toarray())[:, 1])
