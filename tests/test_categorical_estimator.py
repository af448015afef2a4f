"""Categorical features in the estimator and the Booster (``categorical_features``):
which columns are categorical, their encoding (``_categories.py``), the fit with both
split methods and growth policies, prediction of unseen categories and missing
values, the refusals, and accuracy against ordinal coding and scikit-learn's HGB."""

import pickle

import numpy as np
import pandas as pd
import pytest
import scipy.sparse

from gbc_core import GradientBoostingClassifier as GBC
from gbc_core._categories import categorical_mask, encode, fit_encode
from gbc_core._loss import loss_for

LETTERS = np.array([f"c{i:02d}" for i in range(40)], dtype=object)


def _data(n=1200, n_categories=12, n_classes=2, seed=0):
    """A categorical feature with a non-monotone effect per category (random
    order), a second categorical feature of few categories, one numeric feature of
    few distinct values (binned exactly) and labels drawn from them; NaN in some
    rows of each categorical feature."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n_categories, n)
    b = rng.integers(0, 4, n)
    x = rng.integers(0, 30, n).astype(np.float64) / 3
    effect = rng.normal(size=(n_categories, n_classes)) * 2.0
    logit = effect[a] + 0.5 * (b == 2)[:, None] + 0.2 * (x[:, None] - 5) * np.arange(n_classes)
    proba = np.exp(logit - logit.max(1, keepdims=True))
    proba /= proba.sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(proba, 1)).sum(1)
    y = np.minimum(y, n_classes - 1)
    frame = pd.DataFrame({
        "a": pd.Categorical(LETTERS[a]),
        "x": x,
        "b": pd.Series(np.array(["lo", "mid", "hi", "top"], dtype=object)[b], dtype="string"),
    })
    frame.loc[::23, "a"] = np.nan
    frame.loc[5::31, "b"] = pd.NA
    return frame, y


def _codes_array(frame):
    """The frame as the model sees it: the categories' codes, NaN missing."""
    out = np.empty(frame.shape, dtype=np.float64)
    for j, name in enumerate(frame.columns):
        column = frame[name]
        if column.dtype.kind == "f":
            out[:, j] = column.to_numpy()
        else:
            values = column.astype(object).to_numpy()
            present = ~column.isna().to_numpy()
            categories = sorted(set(values[present]))
            codes = np.full(len(values), np.nan)
            codes[present] = [categories.index(v) for v in values[present]]
            out[:, j] = codes
    return out


def _same_model(a, b):
    assert a.booster_.ensemble.nodes.tobytes() == b.booster_.ensemble.nodes.tobytes()
    assert (a.booster_.ensemble.category_sets.tobytes()
            == b.booster_.ensemble.category_sets.tobytes())


# ------------------------------------------------------------- which columns
def test_from_dtype_finds_category_and_string_columns():
    frame, y = _data()
    frame["o"] = pd.Series(np.where(np.arange(len(y)) % 2, "u", "v"), dtype=object)
    frame["o_num"] = pd.Series(np.arange(len(y)) % 3, dtype=object)  # numbers: numeric
    model = GBC(n_estimators=3).fit(frame, y)
    assert model.is_categorical_.tolist() == [True, False, True, True, False]
    categories = model.booster_.categories_
    assert categories[0].tolist() == sorted(set(LETTERS[:12]))
    assert categories[1] is None and categories[4] is None
    assert categories[2].tolist() == ["hi", "lo", "mid", "top"]
    assert categories[3].tolist() == ["u", "v"]
    assert model.feature_names_in_.tolist() == ["a", "x", "b", "o", "o_num"]
    # A NumPy array has no categorical column by dtype; a numeric frame neither.
    assert GBC(n_estimators=2).fit(_codes_array(frame[["a", "x"]]), y).is_categorical_ is None
    assert GBC(n_estimators=2).fit(frame[["x"]], y).is_categorical_ is None
    assert GBC(n_estimators=2, categorical_features=None).fit(
        frame[["x"]], y).is_categorical_ is None


def test_indices_mask_and_names_are_one_model():
    frame, y = _data()
    ref = GBC(n_estimators=5, random_state=0).fit(frame, y)
    for value in ([0, 2], [True, False, True], np.array([True, False, True]), ["a", "b"],
                  np.array([2, 0])):
        model = GBC(n_estimators=5, random_state=0, categorical_features=value).fit(frame, y)
        _same_model(model, ref)
        np.testing.assert_array_equal(model.predict_proba(frame), ref.predict_proba(frame))


def test_a_numeric_array_with_categorical_indices_is_the_frame_of_its_codes():
    """Categories of numbers are the sorted distinct numbers: an array whose
    categorical columns hold any numbers (here 10 x the code, and the codes as text
    in a frame) gives the model of their codes."""
    frame, y = _data()
    codes = _codes_array(frame)
    ref = GBC(n_estimators=5, random_state=0).fit(frame, y)
    scaled = codes.copy()
    scaled[:, [0, 2]] = codes[:, [0, 2]] * 10 - 3
    model = GBC(n_estimators=5, random_state=0, categorical_features=[0, 2]).fit(scaled, y)
    _same_model(model, ref)
    np.testing.assert_array_equal(model.predict_proba(scaled), ref.predict_proba(frame))
    assert model.booster_.categories_[0].tolist() == list(np.arange(12) * 10.0 - 3)
    # A list of rows and an object array alike.
    listed = GBC(n_estimators=5, random_state=0, categorical_features=[0, 2]).fit(
        scaled.tolist(), y)
    _same_model(listed, ref)


def test_object_column_of_strings_and_polars_columns():
    frame, y = _data()
    as_object = frame.assign(a=frame["a"].astype(object), b=frame["b"].astype(object))
    as_object.loc[::23, "a"] = None
    ref = GBC(n_estimators=5, random_state=0).fit(frame, y)
    _same_model(GBC(n_estimators=5, random_state=0).fit(as_object, y), ref)
    pl = pytest.importorskip("polars")
    pframe = pl.DataFrame({
        "a": pl.Series([None if v is None or v != v else v for v in as_object["a"]],
                       dtype=pl.Categorical),
        "x": frame["x"].to_numpy(),
        "b": pl.Series([None if v is pd.NA else v for v in as_object["b"]], dtype=pl.String),
    })
    model = GBC(n_estimators=5, random_state=0).fit(pframe, y)
    _same_model(model, ref)
    np.testing.assert_array_equal(model.predict_proba(pframe), ref.predict_proba(frame))
    enum = pframe.with_columns(pl.col("b").cast(pl.Enum(["top", "mid", "lo", "hi"])))
    _same_model(GBC(n_estimators=5, random_state=0).fit(enum, y), ref)


def test_booleans_are_the_numbers_0_and_1():
    rng = np.random.default_rng(1)
    flag = rng.random(300) < 0.5
    y = (flag ^ (rng.random(300) < 0.2)).astype(int)
    frame = pd.DataFrame({"f": pd.Series(flag, dtype=object), "x": rng.normal(size=300)})
    model = GBC(n_estimators=3, categorical_features=["f"]).fit(frame, y)
    assert model.booster_.categories_[0].tolist() == [0.0, 1.0]
    numbers = frame.assign(f=flag.astype(float))
    np.testing.assert_array_equal(model.predict_proba(frame), model.predict_proba(numbers))


# ------------------------------------------------------------- the fit
@pytest.mark.parametrize("max_leaf_nodes", [None, 6])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_exact_and_hist_are_the_same_model(max_leaf_nodes, n_classes):
    """Every feature binned exactly (categories, and 30 distinct numbers): the
    histogram search has the exact search's candidates, so the same trees."""
    frame, y = _data(n_classes=n_classes)
    args = dict(n_estimators=8, max_depth=4, max_leaf_nodes=max_leaf_nodes, random_state=0)
    exact = GBC(split_method="exact", **args).fit(frame, y)
    hist = GBC(split_method="hist", **args).fit(frame, y)
    _same_model(exact, hist)
    assert exact.booster_.ensemble.category_sets.shape[0] > 0
    assert exact.predict_proba(frame).tobytes() == hist.predict_proba(frame).tobytes()


@pytest.mark.parametrize("max_leaf_nodes", [None, 6])
def test_min_samples_category(max_leaf_nodes):
    """1 is the default's model, byte for byte; a larger value changes the model,
    the same by both split methods, and no categorical node of it sends left a
    category of fewer training rows (in the node) than the value."""
    frame, y = _data(n=900, n_categories=30)
    args = dict(n_estimators=6, max_depth=4, max_leaf_nodes=max_leaf_nodes, random_state=0)
    default = GBC(**args).fit(frame, y)
    _same_model(default, GBC(min_samples_category=1, **args).fit(frame, y))
    m = 40
    exact = GBC(split_method="exact", min_samples_category=m, **args).fit(frame, y)
    hist = GBC(split_method="hist", min_samples_category=m, **args).fit(frame, y)
    _same_model(exact, hist)
    assert exact.predict_proba(frame).tobytes() == hist.predict_proba(frame).tobytes()
    assert exact.booster_.ensemble.nodes.tobytes() != default.booster_.ensemble.nodes.tobytes()
    # The rows of every node (training rows by their path), checked for each
    # categorical split: every category sent left holds at least m of them.
    X = _codes_array(frame)
    ensemble = exact.booster_.ensemble
    leaves = exact.apply(frame).reshape(X.shape[0], -1)
    sets = ensemble.category_sets
    n_checked = 0
    for t, tree in enumerate(exact.booster_.trees()):
        through = _leaves_below(tree)
        for k in range(tree.shape[0]):
            f = tree[k]["feature"]
            if f < 0 or not exact.is_categorical_[f]:
                continue
            rows = np.isin(leaves[:, t], through[k])
            table = sets[int(tree[k]["threshold"])]
            left = [c for c in range(256) if (int(table[c // 32]) >> (c % 32)) & 1]
            counts = np.bincount(X[rows, f][~np.isnan(X[rows, f])].astype(int),
                                 minlength=256)
            assert all(counts[c] >= m for c in left)
            n_checked += 1
    assert n_checked >= 3
    with pytest.raises(ValueError, match="min_samples_category"):
        GBC(min_samples_category=0).fit(frame, y)


def _leaves_below(tree):
    """The leaves under each node of ``tree`` (node -> list of leaf indices)."""
    def below(k):
        if tree[k]["feature"] < 0:
            return [k]
        return below(int(tree[k]["left"])) + below(int(tree[k]["right"]))
    return {k: below(k) for k in range(tree.shape[0])}


@pytest.mark.parametrize("split_method", ["exact", "hist"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_training_scores_are_predict_raw(split_method, n_classes, monkeypatch):
    """The fit's raw scores of the training rows (updated by the rows' leaves) are
    predict_raw's (the sets of the table, in tree order), bit for bit; with
    subsampling the out-of-bag rows too."""
    frame, y = _data(n_classes=n_classes)
    state_type = type(loss_for(n_classes, "log_loss", "newton").start(
        np.zeros(3, np.int32), None, np.zeros((3, 1 if n_classes == 2 else n_classes)), 1))
    seen = {}
    original = loss_for(n_classes, "log_loss", "newton").__class__.start

    def start(self, *args, **kwargs):
        seen["state"] = original(self, *args, **kwargs)
        return seen["state"]

    monkeypatch.setattr(type(loss_for(n_classes, "log_loss", "newton")), "start", start)
    model = GBC(n_estimators=10, max_depth=3, split_method=split_method, subsample=0.7,
                random_state=0).fit(frame, y)
    state = seen["state"]
    assert isinstance(state, state_type)
    raw = model.booster_.predict_raw(frame)
    trained = np.asarray(state.raw).reshape(-1, raw.shape[0]).T
    assert trained.tobytes() == np.ascontiguousarray(raw).tobytes()


@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_threads_give_the_same_model(split_method):
    frame, y = _data(n_classes=3)
    args = dict(n_estimators=6, split_method=split_method, random_state=0)
    one = GBC(n_jobs=1, **args).fit(frame, y)
    two = GBC(n_jobs=2, **args).fit(frame, y)
    _same_model(one, two)
    assert one.predict_proba(frame).tobytes() == two.predict_proba(frame).tobytes()


def test_subsample_weights_and_early_stopping():
    frame, y = _data(n=1500)
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    model = GBC(n_estimators=200, subsample=0.8, n_iter_no_change=5,
                validation_fraction=0.2, random_state=0, split_method="hist").fit(
        frame, y, sample_weight=w)
    assert model.n_estimators_ < 200 and model.best_iteration_ == model.n_estimators_
    assert model.oob_scores_.shape == (model.n_estimators_,)
    # The validation loss of the kept iterations is that of the rows predicted.
    assert np.isfinite(model.validation_score_).all()
    # Weights count: doubling every weight changes nothing, a weight of 0 drops a row.
    twice = GBC(n_estimators=5, random_state=0).fit(frame, y, sample_weight=2 * w)
    once = GBC(n_estimators=5, random_state=0).fit(frame, y, sample_weight=w)
    np.testing.assert_allclose(twice.predict_proba(frame), once.predict_proba(frame),
                               rtol=1e-12)
    zero = w.copy()
    zero[:100] = 0
    dropped = GBC(n_estimators=5, random_state=0).fit(frame, y, sample_weight=zero)
    kept = GBC(n_estimators=5, random_state=0).fit(frame.iloc[100:], y[100:],
                                                   sample_weight=w[100:])
    np.testing.assert_allclose(dropped.predict_proba(frame), kept.predict_proba(frame),
                               rtol=1e-12)


def test_eval_set_scores_through_the_sets():
    """An eval_set's validation loss is the loss of predict_proba on its rows."""
    frame, y = _data(n=1500)
    model = GBC(n_estimators=20, random_state=0).fit(
        frame.iloc[:1000], y[:1000], eval_set=(frame.iloc[1000:], y[1000:]))
    proba = model.predict_proba(frame.iloc[1000:])
    loss = -np.mean(np.log(proba[np.arange(500), y[1000:]]))
    assert model.validation_score_[-1] == pytest.approx(2 * loss, rel=1e-12)
    staged = [p for p in model.staged_predict_proba(frame.iloc[1000:])]
    for m in (0, 9, 19):
        loss_m = -np.mean(np.log(staged[m][np.arange(500), y[1000:]]))
        assert model.validation_score_[m] == pytest.approx(2 * loss_m, rel=1e-12)


# --------------------------------------------------------------- prediction
def test_unseen_categories_and_missing_values_go_the_missing_way():
    frame, y = _data()
    model = GBC(n_estimators=10, random_state=0).fit(frame, y)
    test = frame.iloc[:200].copy()
    missing = test.copy()
    missing["a"] = np.nan
    missing["b"] = pd.NA
    unseen = test.assign(a=pd.Categorical(["zz"] * 200), b=pd.Series(["??"] * 200,
                                                                       dtype="string"))
    want = model.predict_proba(missing)
    np.testing.assert_array_equal(model.predict_proba(unseen), want)
    as_none = test.assign(a=pd.Series([None] * 200, dtype=object),
                          b=pd.Series([None] * 200, dtype=object))
    np.testing.assert_array_equal(model.predict_proba(as_none), want)
    np.testing.assert_array_equal(model.apply(unseen), model.apply(missing))
    # Every path encodes: decision_function, staged, apply, predict.
    assert model.decision_function(unseen).tobytes() == model.decision_function(missing).tobytes()
    for a, b in zip(model.staged_predict_proba(unseen), model.staged_predict_proba(missing)):
        np.testing.assert_array_equal(a, b)
    # Columns matched by name, in any order.
    np.testing.assert_array_equal(model.predict_proba(frame[["b", "x", "a"]]),
                                  model.predict_proba(frame))
    # Another kind of value than the categories: a clear error.
    with pytest.raises(ValueError, match=r"categorical feature 0 \('a'\) has string "
                                         r"categories, got the value 3"):
        model.predict(test.assign(a=pd.Series([3] * 200, dtype=object)))


def test_booster_and_estimator_predict_alike():
    frame, y = _data(n_classes=3)
    model = GBC(n_estimators=5, random_state=0).fit(frame, y)
    booster = model.booster_
    assert booster.predict_proba(frame).tobytes() == model.predict_proba(frame).tobytes()
    codes = encode(frame, booster.categories_)
    assert booster.ensemble.predict_raw(codes).tobytes() == booster.predict_raw(frame).tobytes()
    np.testing.assert_array_equal(codes, np.asarray(_codes_array(frame), np.float32))


def test_pickle_and_file_round_trip():
    frame, y = _data()
    model = GBC(n_estimators=5, random_state=0).fit(frame, y)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict_proba(frame), model.predict_proba(frame))
    loaded = GBC.from_bytes(model.to_bytes())
    np.testing.assert_array_equal(loaded.predict_proba(frame), model.predict_proba(frame))


# ------------------------------------------------------------------ accuracy
def _log_loss(y, proba):
    return float(-np.mean(np.log(np.clip(proba[np.arange(len(y)), y], 1e-15, 1))))


def _high_cardinality(n, seed):
    rng = np.random.default_rng(seed)
    k = 60
    effect = rng.normal(size=k) * 1.5   # no order: category c's effect is random
    a = rng.integers(0, k, n)
    x = rng.normal(size=n)
    logit = effect[a] + 0.7 * x
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    frame = pd.DataFrame({"a": pd.Categorical(np.array([f"k{i}" for i in range(k)])[a]),
                          "x": x})
    return frame, y, a


def test_categorical_beats_ordinal_codes():
    frame, y, a = _high_cardinality(6000, 0)
    train, test = slice(0, 4000), slice(4000, None)
    args = dict(n_estimators=60, max_depth=3, learning_rate=0.1, random_state=0)
    native = GBC(**args).fit(frame.iloc[train], y[train])
    ordinal = frame.assign(a=a.astype(float))
    coded = GBC(categorical_features=None, **args).fit(ordinal.iloc[train], y[train])
    native_loss = _log_loss(y[test], native.predict_proba(frame.iloc[test]))
    ordinal_loss = _log_loss(y[test], coded.predict_proba(ordinal.iloc[test]))
    assert native_loss < ordinal_loss - 0.01


def test_as_accurate_as_scikit_learn_hgb():
    from sklearn.ensemble import HistGradientBoostingClassifier

    frame, y, _ = _high_cardinality(6000, 1)
    train, test = slice(0, 4000), slice(4000, None)
    ours = GBC(n_estimators=100, max_depth=3, learning_rate=0.1, split_method="hist",
               random_state=0).fit(frame.iloc[train], y[train])
    theirs = HistGradientBoostingClassifier(
        max_iter=100, max_depth=3, learning_rate=0.1, early_stopping=False,
        categorical_features="from_dtype", random_state=0).fit(frame.iloc[train], y[train])
    ours_loss = _log_loss(y[test], ours.predict_proba(frame.iloc[test]))
    theirs_loss = _log_loss(y[test], theirs.predict_proba(frame.iloc[test]))
    assert abs(ours_loss - theirs_loss) < 0.03


# -------------------------------------------------------------------- refusals
def test_more_categories_than_max_bins():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 40, 400)
    y = (a % 2).astype(int)
    frame = pd.DataFrame({"zip": pd.Categorical(LETTERS[a]), "x": rng.normal(size=400)})
    for split_method in ("exact", "hist"):
        with pytest.raises(ValueError, match=r"categorical feature 0 \('zip'\) has 40 "
                                             r"categories, more than max_bins=32"):
            GBC(n_estimators=2, max_bins=32, split_method=split_method).fit(frame, y)
    assert GBC(n_estimators=2, max_bins=40).fit(frame, y).booster_.categories_[0].shape == (40,)


def test_bad_values_and_columns_are_named():
    frame, y = _data()
    with pytest.raises(ValueError, match=r"feature indices must be in \[0, 2\], got 3"):
        GBC(categorical_features=[0, 3]).fit(frame, y)
    with pytest.raises(ValueError, match=r"boolean mask must hold one value per feature "
                                         r"\(3\), got 2"):
        GBC(categorical_features=[True, False]).fit(frame, y)
    with pytest.raises(ValueError, match=r"names feature\(s\) not in X: \['zz'\]"):
        GBC(categorical_features=["a", "zz"]).fit(frame, y)
    with pytest.raises(ValueError, match="X has no feature names"):
        GBC(categorical_features=["a"]).fit(_codes_array(frame), y)
    with pytest.raises(ValueError, match="categorical_features must be 'from_dtype', None, "
                                         "or an array-like"):
        GBC(categorical_features="auto").fit(frame, y)
    with pytest.raises(ValueError, match="categorical_features must be"):
        GBC(categorical_features=[0, "a"]).fit(frame, y)
    mixed = frame.assign(m=pd.Series(["u", 1.5] * (len(y) // 2), dtype=object))
    with pytest.raises(ValueError, match=r"categorical feature 3 \('m'\) mixes values of "
                                         r"types \['float', 'str'\]"):
        GBC(categorical_features=["a", "b", "m"]).fit(mixed, y)
    with pytest.raises(ValueError, match=r"categorical feature 1 \('x'\) holds an infinite"):
        GBC(categorical_features=["a", "x", "b"]).fit(frame.assign(x=np.inf), y)
    with pytest.raises(ValueError, match=r"categorical feature 0 has no category"):
        GBC(categorical_features=[0]).fit(np.full((len(y), 2), np.nan), y)


def test_sparse_x_and_monotonic_constraints_are_refused():
    frame, y = _data()
    codes = np.nan_to_num(_codes_array(frame))
    with pytest.raises(ValueError, match=r"categorical features \(columns \[0\]\) need "
                                         r"dense X"):
        GBC(categorical_features=[0]).fit(scipy.sparse.csr_matrix(codes), y)
    # Sparse X without categorical features is still trained as before.
    GBC(n_estimators=2).fit(scipy.sparse.csr_matrix(codes), y)
    model = GBC(n_estimators=2, categorical_features=[0]).fit(codes, y)
    with pytest.raises(ValueError, match="scores dense X only"):
        model.predict(scipy.sparse.csr_matrix(codes))
    with pytest.raises(ValueError, match=r"cannot have monotonic constraints .*\['a'\]"):
        GBC(monotonic_cst={"a": 1}).fit(frame, y)
    GBC(n_estimators=2, monotonic_cst={"x": 1}).fit(frame, y)


def test_exports_refuse_set_splits_and_treeshap_explains_them():
    frame, y = _data()
    model = GBC(n_estimators=3, random_state=0).fit(frame, y)
    with pytest.raises(ValueError, match=r"to_sklearn: the model has categorical features "
                                         r"\['a', 'b'\], .*no categorical splits"):
        model.to_sklearn()
    with pytest.raises(ValueError, match="scikit-learn's tree_ cannot express"):
        model.estimators_[0, 0].tree_
    # TreeSHAP explains them: each row's contributions add up to its raw score.
    phi = model.predict_contributions(frame)
    np.testing.assert_allclose(phi.sum(axis=-1).reshape(-1), model.decision_function(frame),
                               rtol=1e-10, atol=1e-10)


def test_warm_start_needs_the_same_categories():
    frame, y = _data()
    model = GBC(n_estimators=4, warm_start=True, random_state=0).fit(frame, y)
    at_once = GBC(n_estimators=8, random_state=0).fit(frame, y)
    model.set_params(n_estimators=8).fit(frame, y)
    _same_model(model, at_once)
    with pytest.raises(ValueError, match=r"warm_start: the categories of feature\(s\) \[0\]"):
        model.set_params(n_estimators=10).fit(frame.iloc[:-200][frame["a"].iloc[:-200]
                                                                 != "c00"],
                                              y[:-200][frame["a"].iloc[:-200] != "c00"])
    with pytest.raises(ValueError, match="warm_start: the categorical features differ"):
        model.set_params(n_estimators=10, categorical_features=None).fit(
            _codes_array(frame), y)


def test_distributed_fit_encodes_as_the_booster():
    """The distributed fit takes every categorical_features value; its parts encode
    with the categories the client merged, as ``encode`` (tests/test_local_processes.py
    and tests/test_dask_training.py: the fit itself)."""
    from gbc_core._data_parallel import as_float32_part
    from gbc_core._distributed import check_supported
    from gbc_core._params import DEFAULTS

    check_supported(dict(DEFAULTS, split_method="hist", categorical_features=[0]))
    check_supported(dict(DEFAULTS, split_method="hist", categorical_features=None))
    frame, _ = _data()
    _, categories = fit_encode(frame, np.array([True, False, True]), 255)
    np.testing.assert_array_equal(as_float32_part(frame, "X", categories),
                                  encode(frame, categories))
    with pytest.raises(ValueError, match="'a'"):  # text without categories
        as_float32_part(frame, "X")
    assert as_float32_part(frame[["x"]], "X").shape == (len(frame), 1)


def test_encoding_functions():
    frame, y = _data()
    mask = categorical_mask(frame, "from_dtype")
    assert mask.tolist() == [True, False, True]
    Xa, categories = fit_encode(frame, mask, 255)
    assert Xa.dtype == np.float32 and Xa.flags.f_contiguous
    np.testing.assert_array_equal(Xa, _codes_array(frame).astype(np.float32))
    assert Xa[:, 1].tobytes() == frame["x"].to_numpy(np.float32).tobytes()
    assert encode(frame, categories).tobytes() == np.ascontiguousarray(Xa).tobytes()


def test_early_stopping_on_a_scorer_and_eval_metrics():
    """A scikit-learn scorer and the eval metrics see the validation rows through
    the categorical path: the recorded score is the model's on those rows."""
    from sklearn.metrics import f1_score

    frame, y = _data(n=1500)
    model = GBC(n_estimators=30, n_iter_no_change=30, scoring="f1", eval_metric="error",
                random_state=0).fit(frame.iloc[:1000], y[:1000],
                                    eval_set=(frame.iloc[1000:], y[1000:]))
    scores = model.evals_result_["valid_0"]
    kept = model.n_estimators_
    staged = list(model.staged_predict(frame.iloc[1000:]))
    assert scores["f1"][kept - 1] == pytest.approx(f1_score(y[1000:], staged[kept - 1]))
    assert scores["error"][kept - 1] == pytest.approx(np.mean(staged[kept - 1] != y[1000:]))
