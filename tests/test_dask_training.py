"""Distributed training on Dask (``DaskGradientBoostingClassifier``, hist) on a local
cluster of two worker processes: the model equals the single-process hist fit of the
concatenated rows where binning is exact, X never leaves its workers, a lost worker
or an interrupted fit ends cleanly."""

import os
import signal
import threading
import time

import numpy as np
import pytest

from conftest import require

require("dask")
require("distributed")
import dask  # noqa: E402
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402
from distributed import Client, LocalCluster, wait  # noqa: E402

import gbc_core.dask as gdask  # noqa: E402
from gbc_core import GradientBoostingClassifier  # noqa: E402
from gbc_core.dask import DaskGradientBoostingClassifier  # noqa: E402

PARAMS = dict(n_estimators=12, max_depth=3, learning_rate=0.3, random_state=0)


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


def _workers(client):
    """The cluster's two workers, asked of the scheduler now (the client's cached
    identity may list none), after waiting for them: a worker process that a loaded
    machine made its nanny restart comes back."""
    client.wait_for_workers(2, timeout=120)
    return sorted(client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.workers)))


def _data(n, n_classes, seed=0, nan=True):
    """Rounded features (few distinct values: exact binning), NaN, continuous weights
    (no exact ties between candidate splits)."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 5)), 1).astype(np.float32)
    X[:, 4] = rng.integers(0, 7, n)
    if nan:
        X[rng.random((n, 5)) < 0.05] = np.nan
    score = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) + rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    w = rng.uniform(0.2, 3.0, n)
    return X, y, w


def _placed(client, arr, where):
    """``arr`` (a NumPy array) as a persisted Dask Array of row blocks of the sizes
    ``where`` gives, block i held by worker ``where[i][1]``."""
    sizes = tuple(n for n, _ in where)
    blocks = da.from_array(arr, chunks=(sizes,) + tuple((s,) for s in arr.shape[1:]))
    with dask.annotate(workers=lambda key: [where[key[1]][1]], allow_other_workers=False):
        placed = blocks.map_blocks(np.asarray)
    placed = client.persist(placed, optimize_graph=False)
    wait(placed)
    return placed


def _holders(client, arr):
    from distributed import futures_of

    who = client.who_has(futures_of(arr))
    return {w for ws in who.values() for w in ws}


def _reference(X, y, w, **extra):
    return GradientBoostingClassifier(split_method="hist", **PARAMS, **extra).fit(
        X, y, sample_weight=w)


def _laid_out(client, X, y, w, layout):
    """(X, y, w) re-ordered for ``layout`` and their persisted Dask Arrays, placed:
    one worker, two, empty partitions, partitions that lack classes (rows sorted by
    class), a worker without rows, or ``"interleaved"`` (partitions of both workers
    alternating, the first on the second worker: the concatenated order is not the
    workers' order), or ``"empty_class_pure_parts"`` (rows sorted by class, with
    empty partitions on both workers)."""
    w0, w1 = _workers(client)
    n = X.shape[0]
    if layout in ("class_pure_parts", "empty_class_pure_parts"):
        # Sorted by class: most partitions lack every class but one.
        order = np.argsort(y, kind="stable")
        X, y, w = X[order], y[order], w[order]
    cuts = {"one_worker": [0, 700, n], "two_workers": [0, 400, 900, n],
            "empty_parts": [0, 0, 600, 600, 1000, n], "class_pure_parts":
            [0, 300, 600, 900, 1200, n], "worker_without_rows": [0, n, n],
            "interleaved": [0, 250, 700, 700, 1100, n],
            "empty_class_pure_parts": [0, 0, 300, 300, 800, 1100, n]}[layout]
    sizes = np.diff(cuts)
    if layout == "one_worker":
        owners = [w0] * len(sizes)
    elif layout == "worker_without_rows":
        owners = [w0] + [w1] * (len(sizes) - 1)
    elif layout == "interleaved":
        owners = [[w1, w0][i % 2] for i in range(len(sizes))]
    else:
        owners = [[w0, w1][i % 2] for i in range(len(sizes))]
    where = [(int(k), h) for k, h in zip(sizes, owners)]
    Xd = _placed(client, X, where)
    yd = _placed(client, y, where)
    wd = _placed(client, w, where)
    assert len(Xd.chunks[0]) == len(sizes)
    assert _holders(client, Xd) == {h for _, h in where}  # the layout under test
    return (X, y, w), (Xd, yd, wd)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("layout", ["one_worker", "two_workers", "empty_parts",
                                    "class_pure_parts", "worker_without_rows"])
def test_equals_single_process_fit(client, n_classes, layout):
    X, y, w = _data(1500, n_classes, seed=n_classes)
    (X, y, w), (Xd, yd, wd) = _laid_out(client, X, y, w, layout)
    ref = _reference(X, y, w)
    model = DaskGradientBoostingClassifier(**PARAMS).fit(Xd, yd, sample_weight=wd)
    diff = np.abs(model.predict_proba(X) - ref.predict_proba(X)).max()
    assert diff <= 1e-9, diff
    assert np.array_equal(model.classes_, ref.classes_)
    assert model.n_estimators_ == ref.n_estimators_
    for a, b in zip(model.trees(), ref.trees()):
        # The same partition of the rows (two splits that part a node's rows alike,
        # e.g. the two rows of a node, tie exactly, and the rounding of the sums,
        # formed per worker, may pick either).
        np.testing.assert_array_equal(np.sort(a["n_samples"]), np.sort(b["n_samples"]))
    np.testing.assert_allclose(model.train_score_, ref.train_score_, rtol=1e-9)


# The parameters a distributed fit trains beyond the basics, each against the
# single-process hist fit of the concatenated rows: rows of zero weight (left out of
# the fit, but counted by the draws), the in-bag rows of subsample and the
# early-stopping hold-out drawn by the rows' places in the concatenated data, the
# exponential loss and the prior. Leaves of 20 rows or more where rows are unseen by
# a tree (out-of-bag, validation): no two splits part a node's rows alike (an exact
# tie the rounding of the per-worker sums may break either way).
SUPPORTED = {
    "subsample": dict(subsample=0.6, min_samples_leaf=20),
    "subsample_max_features": dict(subsample=0.5, max_features=3, min_samples_leaf=20),
    "holdout": dict(n_estimators=200, learning_rate=0.8, n_iter_no_change=3,
                    validation_fraction=0.2, min_samples_leaf=20),
    "exponential_prior": dict(loss="exponential", init="prior"),
    "prior_fractions": dict(init="prior", min_samples_split=0.05, min_samples_leaf=0.01,
                            min_weight_fraction_leaf=0.01),
    # The exact leaf solve: every Newton iteration of the leaves reduces its sums.
    "exact_leaves": dict(leaf_solver="exact", subsample=0.7, min_samples_leaf=20),
    "exact_leaves_exponential": dict(leaf_solver="exact", loss="exponential",
                                     init="prior"),
    # Best-first growth (the histograms of the children of each split reduced, the
    # larger derived from its parent's kept histograms) and the tree rules: the
    # sums of w r^2 of the rows each chosen split sends left (min_impurity_decrease)
    # and the impurities of every node, the last level's included (ccp_alpha),
    # reduced across the workers.
    "max_leaf_nodes": dict(max_leaf_nodes=6, max_depth=None),
    "min_impurity_decrease": dict(min_impurity_decrease=0.001),
    "ccp_alpha": dict(ccp_alpha=0.0005),
    "tree_rules": dict(max_leaf_nodes=6, max_depth=None, min_impurity_decrease=0.001,
                       ccp_alpha=0.0005),
    # Constraints: the ordered-children rule on the reduced histograms, the leaf
    # bounds from the reduced leaf sums (two classes), the interaction groups with
    # the feature draws (any number of classes).
    "monotonic_cst": dict(monotonic_cst=[1, -1, 0, 0, 1], max_leaf_nodes=6, max_depth=None),
    "interaction_cst": dict(interaction_cst=[[0, 1], [1, 2, 3]], max_features=3,
                            subsample=0.8, min_samples_leaf=20),
}
#: The cases whose trees must differ from those of the fit without them (so that the
#: test fails if the distributed fit ignored the parameter).
TREE_SHAPE = ("max_leaf_nodes", "min_impurity_decrease", "ccp_alpha", "tree_rules")


@pytest.mark.parametrize("case, n_classes, layout", [
    ("subsample", 2, "interleaved"), ("subsample_max_features", 3, "class_pure_parts"),
    ("holdout", 2, "interleaved"), ("holdout", 3, "class_pure_parts"),
    ("exponential_prior", 2, "empty_parts"), ("prior_fractions", 3, "interleaved"),
    ("exact_leaves", 2, "worker_without_rows"), ("exact_leaves", 3, "class_pure_parts"),
    ("exact_leaves_exponential", 2, "interleaved"),
    ("monotonic_cst", 2, "interleaved"), ("interaction_cst", 3, "class_pure_parts"),
    *[(case, n_classes, "empty_class_pure_parts") for case in TREE_SHAPE
      for n_classes in (2, 3)],
])
def test_supported_parameters_equal_single_process_fit(client, case, n_classes, layout):
    X, y, w = _data(1500, n_classes, seed=30 + n_classes)
    w[::9] = 0.0  # rows of zero weight: out of the fit, in the draws
    params = dict(PARAMS, **SUPPORTED[case])
    (X, y, w), (Xd, yd, wd) = _laid_out(client, X, y, w, layout)
    ref = GradientBoostingClassifier(split_method="hist", **params).fit(X, y, sample_weight=w)
    model = DaskGradientBoostingClassifier(**params).fit(Xd, yd, sample_weight=wd)
    assert model.n_estimators_ == ref.n_estimators_
    if case == "holdout":
        assert ref.n_estimators_ < 200  # early stopping did stop
        np.testing.assert_allclose(model.validation_score_, ref.validation_score_,
                                   rtol=1e-9)
    if case.startswith("subsample"):
        np.testing.assert_allclose(model.oob_scores_, ref.oob_scores_, rtol=1e-9)
    np.testing.assert_allclose(model.train_score_, ref.train_score_, rtol=1e-9)
    np.testing.assert_allclose(model.init_raw_, ref.init_raw_, rtol=1e-12)
    for a, b in zip(model.trees(), ref.trees()):
        # Rows of zero weight counted by no tree (as in one process).
        np.testing.assert_array_equal(np.sort(a["n_samples"]), np.sort(b["n_samples"]))
    assert np.abs(model.predict_proba(X) - ref.predict_proba(X)).max() <= 1e-9
    assert model.to_local().get_params()["loss"] == params.get("loss", "log_loss")
    if case in TREE_SHAPE:
        # The parameter shaped the trees: other node counts than without it.
        plain = GradientBoostingClassifier(split_method="hist", **PARAMS).fit(
            X, y, sample_weight=w)
        sizes = [t.shape[0] for t in model.trees()]
        assert sizes != [t.shape[0] for t in plain.trees()], sizes
        assert sizes == [t.shape[0] for t in ref.trees()]
        local = model.to_local().get_params()
        assert {k: local[k] for k in SUPPORTED[case]} == SUPPORTED[case]


def test_holdout_is_the_single_process_one():
    """The hold-out draw depends on the group sizes only: drawn per part of the rows
    (each part replaying it with its offsets, as the workers do), it is the
    single-process stratified split, with and without rows of zero weight."""
    from gbc_core._boosting import holdout_draw, holdout_sizes
    from gbc_core._classifier import _stratified_split

    rng = np.random.default_rng(0)
    codes = rng.integers(0, 3, 500)
    classes = np.arange(3)
    for weighted in (None, rng.random(500) > 0.2):
        _, val = _stratified_split(codes, classes, 0.3, np.random.default_rng(5), weighted)
        group = codes if weighted is None else 2 * codes + ~weighted
        n_groups = 3 if weighted is None else 6
        sizes = np.bincount(group, minlength=n_groups)
        if weighted is not None:
            sizes = sizes.reshape(3, 2)
        drawn = holdout_draw(sizes, holdout_sizes(sizes, classes, 0.3),
                             np.random.default_rng(5))
        held = np.zeros(500, bool)
        for start, stop in [(0, 120), (120, 120), (120, 333), (333, 500)]:  # the parts
            before = np.bincount(group[:start], minlength=n_groups)
            for g in range(n_groups):
                at = start + np.flatnonzero(group[start:stop] == g)
                held[at] = np.isin(before[g] + np.arange(at.size), drawn[g])
        np.testing.assert_array_equal(np.flatnonzero(held), val)


def test_warm_start(client):
    """Fitting 5 iterations, then warm-starting to 12: the trees of a 12-iteration
    fit (with subsample: the draws of iteration m are seeded by (seed, m)), equal to
    the single-process fit."""
    X, y, w = _data(1200, 3, seed=41)
    params = dict(PARAMS, subsample=0.7, min_samples_leaf=20)
    Xd, yd, wd = (da.from_array(a, chunks=300) for a in (X, y, w))
    ref = GradientBoostingClassifier(split_method="hist", **params).fit(X, y, sample_weight=w)
    model = DaskGradientBoostingClassifier(**dict(params, n_estimators=5, warm_start=True))
    model.fit(Xd, yd, sample_weight=wd)
    assert model.n_estimators_ == 5
    model.set_params(n_estimators=12)
    model.fit(Xd, yd, sample_weight=wd)
    assert model.n_estimators_ == 12
    np.testing.assert_allclose(model.train_score_, ref.train_score_, rtol=1e-9)
    np.testing.assert_allclose(model.oob_scores_, ref.oob_scores_, rtol=1e-9)
    assert np.abs(model.predict_proba(X) - ref.predict_proba(X)).max() <= 1e-9
    with pytest.raises(ValueError, match="warm_start: n_estimators=3"):
        model.set_params(n_estimators=3).fit(Xd, yd, sample_weight=wd)


def test_parameters_come_from_the_table():
    """The estimator takes every parameter of the in-memory one (the parameter
    table), with its defaults but split_method, plus its own two."""
    from gbc_core._params import PARAMS as TABLE

    params = DaskGradientBoostingClassifier().get_params()
    assert set(params) == {p.name for p in TABLE} | {"client", "step_timeout"}
    assert set(params) - {"client", "step_timeout"} == set(
        GradientBoostingClassifier().get_params())
    for p in TABLE:
        assert params[p.name] == (p.default if p.name != "split_method" else "hist")
    model = DaskGradientBoostingClassifier(max_bins=32, client=None)
    assert model.max_bins == 32 and model.get_params()["max_bins"] == 32
    with pytest.raises(TypeError, match="max_binz"):
        DaskGradientBoostingClassifier(max_binz=32)


def test_a_new_parameter_reaches_the_estimator(monkeypatch):
    """A parameter added to the table is a parameter of the Dask estimator (no
    second list), refused at fit away from its default until the distributed
    trainer names it supported."""
    import inspect

    import gbc_core._params as table
    from gbc_core._distributed import check_supported

    new = table.Param("max_new_leaves", None, [table.NONE, table.Integer(2)], "test")
    monkeypatch.setattr(table, "PARAMS", table.PARAMS + (new,))
    monkeypatch.setattr(table, "DEFAULTS", dict(table.DEFAULTS, max_new_leaves=None))
    init = gdask._estimator_init()
    assert "max_new_leaves" in inspect.signature(init).parameters
    model = DaskGradientBoostingClassifier.__new__(DaskGradientBoostingClassifier)
    init(model, max_new_leaves=8)
    assert model.max_new_leaves == 8
    check_supported({"max_new_leaves": None})
    with pytest.raises(ValueError, match="max_new_leaves=8 is not supported"):
        check_supported({"max_new_leaves": 8})
    monkeypatch.setattr(table, "DEFAULTS", dict(table.DEFAULTS, new_alpha=0.0))
    check_supported({"new_alpha": 0})  # the default, written as an integer
    for value in (0.5, True, np.zeros(2)):
        with pytest.raises(ValueError, match="new_alpha=.* is not supported"):
            check_supported({"new_alpha": value})
    # The parameters of the table the distributed fit trains take any value.
    check_supported({"max_leaf_nodes": 8, "min_impurity_decrease": 0.5, "ccp_alpha": 0.5})


def test_dataframe_labels_and_no_weights(client):
    X, y, _ = _data(1200, 3, seed=5)
    labels = np.array(["low", "mid", "top"])[y]
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    ddf = dd.from_pandas(df, npartitions=4)
    ys = dd.from_pandas(pd.Series(labels), npartitions=4)
    Xv, yv, _ = _data(300, 3, seed=6)
    dv = pd.DataFrame(Xv, columns=[f"f{i}" for i in range(5)])[["f3", "f0", "f4", "f1", "f2"]]
    lv = np.array(["low", "mid", "top"])[yv]
    # Leaves of 20 rows or more: no exact ties between splits that route the
    # validation rows apart (see test_early_stopping_with_eval_set).
    params = dict(PARAMS, init="prior", min_samples_leaf=20)
    ref = GradientBoostingClassifier(split_method="hist", **params).fit(
        df, labels, eval_set=(dv, lv))
    model = DaskGradientBoostingClassifier(**params).fit(
        ddf, ys, eval_set=(dd.from_pandas(dv, npartitions=2),
                           dd.from_pandas(pd.Series(lv), npartitions=2)))
    # eval_set columns by name (given in another order)
    np.testing.assert_allclose(model.validation_score_, ref.validation_score_, rtol=1e-9)
    model_np = DaskGradientBoostingClassifier(**params).fit(
        ddf, ys, eval_set=(dv, lv))
    np.testing.assert_allclose(model_np.validation_score_, ref.validation_score_, rtol=1e-9)
    assert list(model.feature_names_in_) == list(df.columns)
    assert np.abs(model.predict_proba(df) - ref.predict_proba(df)).max() <= 1e-9
    assert (model.predict(df) == ref.predict(df)).all()
    # Dask in, Dask out (the workers score).
    out = model.predict_proba(ddf)
    assert isinstance(out, da.Array)
    np.testing.assert_array_equal(out.compute(), model.predict_proba(df))


def test_read_parquet_columns_pair_with_their_target(client, tmp_path):
    """A frame read from Parquet files, its feature columns and its target column
    passed apart (the optimiser merges the small reads of one column into fewer
    partitions): the fit pairs each row with its label, the in-memory fit's model."""
    X, y, _ = _data(1200, 2, seed=8, nan=False)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)]).assign(target=y)
    for i in range(4):
        df.iloc[i * 300:(i + 1) * 300].to_parquet(tmp_path / f"part-{i}.parquet")
    ddf = dd.read_parquet(str(tmp_path / "*.parquet"))
    features = [f"f{i}" for i in range(5)]
    ref = _reference(df[features], y, None)
    model = DaskGradientBoostingClassifier(**PARAMS).fit(ddf[features], ddf["target"])
    assert np.abs(model.predict_proba(df[features]) - ref.predict_proba(df[features])).max() <= 1e-9


def test_early_stopping_with_eval_set(client):
    X, y, w = _data(2000, 2, seed=7)
    Xv, yv, wv = _data(600, 2, seed=8)
    # Leaves of 20 rows or more: no two splits part a node's rows alike (an exact tie
    # that the rounding of the sums may break either way, routing the validation rows
    # apart).
    params = dict(PARAMS, n_estimators=200, learning_rate=0.8, n_iter_no_change=3,
                  min_samples_leaf=20)
    ref = GradientBoostingClassifier(split_method="hist", **params).fit(
        X, y, sample_weight=w, eval_set=(Xv, yv, wv))
    model = DaskGradientBoostingClassifier(**params).fit(
        da.from_array(X, chunks=500), da.from_array(y, chunks=500),
        sample_weight=da.from_array(w, chunks=500),
        eval_set=(da.from_array(Xv, chunks=200), da.from_array(yv, chunks=200),
                  da.from_array(wv, chunks=200)))
    assert ref.n_estimators_ < 200  # early stopping did stop
    assert model.n_estimators_ == ref.n_estimators_
    np.testing.assert_allclose(model.validation_score_, ref.validation_score_, rtol=1e-9)
    assert np.abs(model.predict_proba(X) - ref.predict_proba(X)).max() <= 1e-9


def test_to_local_saves_loads_and_predicts(client, tmp_path):
    X, y, w = _data(800, 2, seed=3)
    model = DaskGradientBoostingClassifier(**PARAMS).fit(
        da.from_array(X, chunks=300), da.from_array(y, chunks=300))
    local = model.to_local()
    assert type(local) is GradientBoostingClassifier
    assert local.get_params()["split_method"] == "hist"
    local.save(tmp_path / "m.gbc")
    loaded = GradientBoostingClassifier.load(tmp_path / "m.gbc")
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    np.testing.assert_array_equal(model.decision_function(da.from_array(X, chunks=300))
                                  .compute(), local.decision_function(X))


def test_clone_and_pickle_with_a_client(client):
    """An estimator given its client: scikit-learn's ``clone`` (a grid search's)
    copies the parameters and shares the client, and pickle leaves the client out
    (a live connection): the unpickled model predicts alike, its client None."""
    import pickle

    from sklearn.base import clone

    X, y, _ = _data(800, 2, seed=28)
    model = DaskGradientBoostingClassifier(**PARAMS, max_bins=64, client=client)
    copy = clone(model)
    assert copy is not model and copy.client is client
    assert {k: v for k, v in copy.get_params().items() if k != "client"} == {
        k: v for k, v in model.get_params().items() if k != "client"}
    copy.fit(da.from_array(X, chunks=300), da.from_array(y, chunks=300))
    assert not hasattr(model, "booster_")
    loaded = pickle.loads(pickle.dumps(copy))
    assert loaded.client is None and copy.client is client
    np.testing.assert_array_equal(loaded.predict_proba(X), copy.predict_proba(X))


def _count_cpus_and_record_threads(cpus):
    """(On a worker.) Make this process see ``cpus`` CPUs and record the threads each
    part of a fit is given; ``cpus`` None undoes it and returns the record."""
    import gbc_core._distributed as distributed
    import gbc_core._openmp as openmp

    if cpus is None:
        openmp._CPU_COUNT = distributed._real_cpu_count
        distributed.PartTrainer.fit = distributed._real_part_fit
        return distributed._threads_seen
    distributed._real_cpu_count = openmp._CPU_COUNT
    distributed._real_part_fit = real = distributed.PartTrainer.fit
    distributed._threads_seen = seen = []

    def recording_fit(self, comm, n_classes, params, *args):
        seen.append(params["n_threads"])
        return real(self, comm, n_classes, params, *args)

    openmp._CPU_COUNT = cpus
    distributed.PartTrainer.fit = recording_fit
    return None


def test_n_jobs_counts_the_cpus_of_each_worker(client):
    """A negative ``n_jobs`` counts the CPUs of the worker that runs the part (here
    made to see 5), not the client's; a positive one is taken as it is. (A build
    without OpenMP runs one thread whatever ``n_jobs`` says, on every worker.)"""
    from gbc_core._openmp import cpu_count, openmp_enabled

    X, y, _ = _data(600, 2, seed=29)
    Xd, yd = da.from_array(X, chunks=300), da.from_array(y, chunks=300)
    assert cpu_count() != 5
    for n_jobs, threads in ((-2, 4), (3, 3)):
        threads = threads if openmp_enabled() else 1
        client.run(_count_cpus_and_record_threads, 5)
        try:
            DaskGradientBoostingClassifier(**dict(PARAMS, n_estimators=2),
                                           n_jobs=n_jobs).fit(Xd, yd)
        finally:
            seen = client.run(_count_cpus_and_record_threads, None)
        assert sorted(seen.values()) == [[threads], [threads]], (n_jobs, seen)


def test_x_never_leaves_its_workers(client):
    """No partition of X is ever served by its worker's get_data (to the client or to
    another worker): the actors read their rows where they are."""
    X, y, w = _data(1000, 2, seed=9)
    Xd = client.persist(da.from_array(X, chunks=250))
    wait(Xd)
    from distributed import futures_of

    x_keys = {str(f.key) for f in futures_of(Xd)}

    def served(dask_worker):
        return [str(k) for entry in dask_worker.transfer_outgoing_log for k in entry["keys"]]

    before = client.run(served)
    DaskGradientBoostingClassifier(**PARAMS).fit(Xd, da.from_array(y, chunks=250))
    after = client.run(served)
    moved = [k for addr in after for k in after[addr][len(before[addr]):] if k in x_keys]
    assert moved == []
    # The check sees a gather of X (it can fail).
    client.gather(futures_of(Xd)[0])
    again = client.run(served)
    assert any(k in x_keys for addr in again for k in again[addr][len(after[addr]):])


def _actors(client):
    return client.run(lambda dask_worker: len(dask_worker.state.actors))


async def _actor_thread_free(dask_worker):
    """(On a worker.) Whether the thread of its actors' calls (one per worker)
    takes a new call within a second: no call of an ended fit still runs there."""
    import asyncio

    probe = asyncio.get_running_loop().run_in_executor(dask_worker.executors["actor"], int)
    try:
        await asyncio.wait_for(asyncio.shield(probe), 1.0)
    except asyncio.TimeoutError:
        return False
    return True


def _settled(client, deadline=30.0):
    """Wait until no actor, no call of an actor and no task is left on the cluster
    (a worker runs its actors' calls on one thread: a call left running holds up
    the next fit's actors)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if (sum(_actors(client).values()) == 0 and not any(client.processing().values())
                and all(client.run(_actor_thread_free).values())):
            return True
        time.sleep(0.1)
    return False


def test_interrupted_fit_leaves_nothing_behind(client, monkeypatch):
    X, y, _ = _data(2000, 2, seed=11)
    listening = _listening(client)
    real = gdask._wait_all

    def interrupting(c, futures, ranks, what, timeout=None):
        if what == "the fit":
            time.sleep(0.5)  # mid-fit
            raise KeyboardInterrupt
        return real(c, futures, ranks, what, timeout)

    monkeypatch.setattr(gdask, "_wait_all", interrupting)
    model = DaskGradientBoostingClassifier(**dict(PARAMS, n_estimators=5000))
    with pytest.raises(KeyboardInterrupt):
        model.fit(da.from_array(X, chunks=500), da.from_array(y, chunks=500))
    assert _settled(client)
    monkeypatch.setattr(gdask, "_wait_all", real)
    # The cluster is usable again.
    DaskGradientBoostingClassifier(**PARAMS).fit(da.from_array(X, chunks=500),
                                                 da.from_array(y, chunks=500))
    assert _settled(client)
    assert _listening(client) == listening  # (the fit's listener closed)


def _slow_abort(on):
    """(On a worker.) ``on``: the coordinator takes an abort only 45 s after it is
    sent (as on a machine too loaded for the client's bound); else undo."""
    import asyncio

    import gbc_core.dask as g

    if not on:
        g._Coordinator.abort = g._real_abort
        return
    g._real_abort = real = g._Coordinator.abort

    async def slow(self, reason):
        await asyncio.sleep(45)
        return await real(self, reason)

    g._Coordinator.abort = slow


@pytest.mark.parametrize("path", ["sockets", "coordinator"])
def test_an_interrupted_fit_frees_the_workers_without_its_abort(client, monkeypatch, path):
    """An interrupted fit whose abort the coordinator does not take in time (a loaded
    machine): releasing the actors ends every rank's wait at once, and the next fit
    runs, without waiting for the step timeout (300 s here). Before, the ranks
    waited for the step timeout, holding their workers' actor thread, and the next
    fit failed "did not finish reading the partitions"."""
    monkeypatch.setattr(gdask, "_SOCKET_ALLREDUCE", path == "sockets")
    X, y, _ = _data(2000, 2, seed=11)
    Xd, yd = da.from_array(X, chunks=500), da.from_array(y, chunks=500)
    listening = _listening(client)
    real = gdask._wait_all

    def interrupting(c, futures, ranks, what, timeout=None):
        if what == "the fit":
            time.sleep(0.5)  # mid-fit: the ranks wait at the coordinator, or soon will
            raise KeyboardInterrupt
        return real(c, futures, ranks, what, timeout)

    client.run(_slow_abort, True)
    try:
        monkeypatch.setattr(gdask, "_ABORT_TIMEOUT", 0.5)
        monkeypatch.setattr(gdask, "_wait_all", interrupting)
        with pytest.raises(KeyboardInterrupt):
            DaskGradientBoostingClassifier(**dict(PARAMS, n_estimators=5000),
                                           step_timeout=300).fit(Xd, yd)
        monkeypatch.setattr(gdask, "_wait_all", real)
        assert _settled(client), "a rank still waits after the fit was interrupted"
        thread, outcome = _fit_in_a_thread(lambda: DaskGradientBoostingClassifier(
            **PARAMS, step_timeout=300).fit(Xd, yd))
        thread.join(90)
        assert not thread.is_alive(), "the next fit waited for a rank of the last one"
        assert outcome["error"] is None
        assert _settled(client)
        assert _listening(client) == listening
    finally:
        client.run(_slow_abort, False)


def _fit_in_a_thread(fit):
    """Run ``fit()`` in a daemon thread; returns the thread and a dict whose
    ``"error"`` is what it raised (None once it returned)."""
    outcome = {}

    def run():
        try:
            fit()
            outcome["error"] = None
        except Exception as exc:  # noqa: BLE001
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("rank, path", [(0, "sockets"), (1, "sockets"),
                                        (0, "coordinator")])
def test_lost_worker_ends_the_fit_with_an_error(rank, path, monkeypatch):
    """A worker killed mid-fit (rank 0 also holds the all-reduce: its listener, or
    the coordinator): a clear error, not a hang, well before the step timeout; and
    the surviving worker is ready for the next fit at once, not once its rank has
    waited out the step timeout for a rank 0 that is gone (its worker runs every
    actor's calls on one thread), with no port of the fit left open there."""
    monkeypatch.setattr(gdask, "_SOCKET_ALLREDUCE", path == "sockets")
    X, y, _ = _data(3000, 2, seed=13)
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        Xd = da.from_array(X, chunks=750)
        yd = da.from_array(y, chunks=750)
        victim, survivor = _workers(c) if rank == 0 else _workers(c)[::-1]
        listening = _listening(c)[survivor]
        # The worker is killed once the ranks are in their trees, however long a
        # loaded machine takes to start them (not after a fixed time).
        training = threading.Event()
        real_wait_all = gdask._wait_all

        def wait_all(client, futures, ranks, what, timeout=None):
            if what == "the fit":
                training.set()
            return real_wait_all(client, futures, ranks, what, timeout)

        monkeypatch.setattr(gdask, "_wait_all", wait_all)
        thread, outcome = _fit_in_a_thread(lambda: DaskGradientBoostingClassifier(
            **dict(PARAMS, n_estimators=100000), client=c, step_timeout=300).fit(Xd, yd))
        assert training.wait(120), "the fit did not reach its trees"
        time.sleep(1.0)
        assert thread.is_alive(), "the fit of 100,000 trees ended before the kill"
        pid = c.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        thread.join(60)
        assert not thread.is_alive(), "the fit hung after a worker was lost"
        err = outcome["error"]
        assert isinstance(err, RuntimeError)
        assert "left the cluster" in str(err) or "failed on a worker" in str(err)
        # A second fit on the surviving worker: done well within the step timeout
        # (300 s; a rank left waiting would hold the worker for 310 s).
        where = [(300, survivor), (300, survivor)]
        thread, outcome = _fit_in_a_thread(lambda: DaskGradientBoostingClassifier(
            **PARAMS, client=c, step_timeout=300).fit(
                _placed(c, X[:600], where), _placed(c, y[:600], where)))
        thread.join(90)
        assert not thread.is_alive(), "the surviving worker was not ready for a new fit"
        assert outcome["error"] is None
        assert _listening(c)[survivor] == listening


def test_worker_lost_before_the_actors_start_ends_the_fit(monkeypatch):
    """A worker killed once the partitions are placed, before the actors start on
    it (an actor is pinned to the worker holding its rows): an error naming the lost
    worker at once, not the step timeout's."""
    X, y, _ = _data(3000, 2, seed=27)
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        victim = _workers(c)[1]
        real = gdask._parts_of

        def place_then_kill(client, collections):
            placed = real(client, collections)
            os.kill(client.run(os.getpid, workers=[victim])[victim], signal.SIGKILL)
            return placed

        monkeypatch.setattr(gdask, "_parts_of", place_then_kill)
        thread, outcome = _fit_in_a_thread(lambda: DaskGradientBoostingClassifier(
            **PARAMS, client=c, step_timeout=300).fit(
                da.from_array(X, chunks=750), da.from_array(y, chunks=750)))
        thread.join(90)
        assert not thread.is_alive(), "the fit waited for an actor on a lost worker"
        err = outcome["error"]
        assert isinstance(err, RuntimeError)
        assert f"worker(s) ['{victim}'] left the cluster during the start" in str(err)


def test_every_wait_is_bounded(client):
    """A step_timeout too short for the workers to answer: an error naming it, and
    nothing left behind."""
    X, y, _ = _data(400, 2)
    with pytest.raises(RuntimeError, match="within .* s \\(step_timeout\\)"):
        DaskGradientBoostingClassifier(**PARAMS, step_timeout=1e-6).fit(
            da.from_array(X, chunks=100), da.from_array(y, chunks=100))
    assert _settled(client)


def test_refused_options(client, monkeypatch):
    import gbc_core._distributed as distributed

    X, y, _ = _data(200, 2)
    Xd, yd = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    with pytest.raises(ValueError, match="split_method='exact'.*hist"):
        DaskGradientBoostingClassifier(split_method="exact").fit(Xd, yd)
    # What the distributed fit does not train is refused, naming the parameter,
    # never trained as another model: an init estimator.
    from sklearn.dummy import DummyClassifier
    with pytest.raises(ValueError, match="init=DummyClassifier.*init estimator"):
        DaskGradientBoostingClassifier(init=DummyClassifier()).fit(Xd, yd)
    # A parameter of the table the distributed trainer is not taught (as a new one
    # would be): its default trains, another value is refused by name.
    monkeypatch.setattr(distributed, "SUPPORTED_PARAMS",
                        distributed.SUPPORTED_PARAMS - {"max_bins"})
    with pytest.raises(ValueError, match="max_bins=32 is not supported by the "
                                         "distributed fit .only its default, 255"):
        DaskGradientBoostingClassifier(max_bins=32).fit(Xd, yd)
    DaskGradientBoostingClassifier(n_estimators=2).fit(Xd, yd)
    with pytest.raises(TypeError, match="Dask Array or DataFrame"):
        DaskGradientBoostingClassifier().fit(X, y)
    assert _settled(client)


def test_sparse_partitions_are_refused_by_name(client):
    """Sparse blocks are scored on the cluster but not trained on: a clear error."""
    import scipy.sparse as sp

    X, y, _ = _data(200, 2, nan=False)
    Xd = da.from_array(X, chunks=(100, X.shape[1])).map_blocks(sp.csr_matrix)
    with pytest.raises(TypeError, match="a distributed fit trains on dense partitions"):
        DaskGradientBoostingClassifier(n_estimators=2).fit(Xd, da.from_array(y, chunks=100))
    assert _settled(client)


def test_cli_train_dask(client, tmp_path, capsys, monkeypatch):
    """``gbc-core train --dask SCHEDULER``: the workers read the Parquet file's row
    groups and train; the model equals the in-memory hist fit of the file."""
    from conftest import run_main

    pq = require("pyarrow.parquet")
    pa = require("pyarrow")
    X, y, _ = _data(1200, 3, seed=21)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    df["id"] = np.arange(len(df))
    df["y"] = np.array(["a", "b", "c"])[y]
    path = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=300)
    address = client.scheduler.address
    rc, out, err = run_main(capsys, monkeypatch, tmp_path, "train", path, "--target", "y",
                            "--drop", "id", "-o", "m.gbc", "--dask", address,
                            "--split-method", "hist", "--n-estimators", "8",
                            "--random-state", "0")
    assert rc == 0, err
    assert "Dask cluster" in out
    model = GradientBoostingClassifier.load(tmp_path / "m.gbc")
    ref = GradientBoostingClassifier(split_method="hist", n_estimators=8, random_state=0).fit(
        df[[f"f{i}" for i in range(5)]], df["y"])
    assert list(model.feature_names_in_) == [f"f{i}" for i in range(5)]
    assert np.abs(model.predict_proba(df) - ref.predict_proba(df)).max() <= 1e-9
    # exact is refused with --dask, naming the option
    rc, out, err = run_main(capsys, monkeypatch, tmp_path, "train", path, "--target", "y",
                            "-o", "m2.gbc", "--dask", address)
    assert rc != 0 and "--split-method hist" in err


@pytest.mark.parametrize("loss", ["log_loss", "exponential"])
def test_cli_train_dask_prints_the_training_loss_itself(client, tmp_path, capsys,
                                                         monkeypatch, loss):
    """The summary line of ``train --dask`` names the loss and gives the loss itself,
    as the in-memory ``train`` does (two classes: ``train_score_`` of the log-loss
    is the deviance, twice it), computed here by a naive NumPy twin."""
    from conftest import run_main

    pq = require("pyarrow.parquet")
    pa = require("pyarrow")
    X, y, _ = _data(900, 2, seed=22, nan=False)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    df["y"] = np.array(["no", "yes"])[y]
    path = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=300)
    rc, out, err = run_main(capsys, monkeypatch, tmp_path, "train", path, "--target", "y",
                            "-o", "m.gbc", "--dask", client.scheduler.address,
                            "--split-method", "hist", "--n-estimators", "6",
                            "--loss", loss, "--random-state", "0")
    assert rc == 0, err
    name = "exponential loss" if loss == "exponential" else "log-loss"
    printed = float(out.split(f"training {name} ")[1].split()[0])
    raw = GradientBoostingClassifier.load(tmp_path / "m.gbc").decision_function(
        df[[f"f{i}" for i in range(5)]])
    sign = 2.0 * y - 1.0
    expected = (np.mean(np.exp(-sign * raw)) if loss == "exponential"
                else np.mean(np.logaddexp(0.0, raw) - y * raw))
    assert printed == pytest.approx(expected, abs=6e-6)


def test_grower_without_raw_values():
    """A part keeps bins only: the grower takes X=None with a finder that has bins,
    and refuses it where raw values are needed."""
    from gbc_core._common import ROW_STAT_DTYPE
    from gbc_core._exact_splitter import ExactSplitFinder
    from gbc_core._grower import TreeGrower
    from gbc_core._histogram_splitter import HistogramSplitFinder, bin_value_ranges

    X = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(6, 2))
    with pytest.raises(ValueError, match="X is needed"):
        TreeGrower(None, ExactSplitFinder(X, 1), 2, 2, 1, 0.0, 2, 1)
    bins = np.asfortranarray(np.arange(12, dtype=np.uint8).reshape(6, 2) // 2)
    lo, hi = bin_value_ranges(X, bins, 8, 1)
    finder = HistogramSplitFinder(bins, np.full(2, 6, dtype=np.int32), lo, hi, 8, 1)
    grower = TreeGrower(None, finder, 2, 2, 1, 0.0, 2, 1)
    stats = np.zeros(6, dtype=ROW_STAT_DTYPE)
    stats["w"] = 1.0
    stats["wr"] = [-1, -1, -1, 1, 1, 1]
    residual = np.ascontiguousarray(stats["wr"])
    assert grower.grow(stats, residual, None) == 3
    with pytest.raises(ValueError, match="sample mask needs X"):
        grower.grow(stats, residual, np.ones(6, dtype=np.uint8))


@pytest.mark.parametrize("n_classes, class_weight", [(2, {0: 1.0, 1: 3.0}), (3, "balanced")])
def test_class_weight(client, n_classes, class_weight):
    X, y, w = _data(1200, n_classes, seed=17)
    ref = _reference(X, y, w, class_weight=class_weight)
    model = DaskGradientBoostingClassifier(**PARAMS, class_weight=class_weight).fit(
        da.from_array(X, chunks=300), da.from_array(y, chunks=300),
        sample_weight=da.from_array(w, chunks=300))
    assert np.abs(model.predict_proba(X) - ref.predict_proba(X)).max() <= 1e-9


def test_bad_partition_names_the_column(client):
    df = pd.DataFrame({"a": np.arange(40.0), "when": ["x"] * 40})
    ddf = dd.from_pandas(df, npartitions=2)
    ys = dd.from_pandas(pd.Series(np.arange(40) % 2), npartitions=2)
    with pytest.raises(ValueError, match="when"):  # (text, not categorical here)
        DaskGradientBoostingClassifier(**PARAMS, categorical_features=None).fit(ddf, ys)
    assert _settled(client)


def test_partitions_of_other_sizes_are_an_error(client):
    """y, sample_weight or the eval_set labels with as many rows as X in all, and as
    many partitions, but other rows in each: an error naming the partition, not a
    fit on rows paired with other rows' labels."""
    X, y, w = _data(2000, 2, seed=24)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    ddf = dd.from_pandas(df, npartitions=4)
    assert ddf.map_partitions(len).compute().tolist() == [500] * 4
    other = ((300, 700, 700, 300),)
    alike = dd.from_pandas(pd.Series(y), npartitions=4)
    with pytest.raises(ValueError, match=r"partition \d of y has [37]00 rows, the same "
                       r"partition of X 500: X and y must be partitioned alike"):
        DaskGradientBoostingClassifier(**PARAMS).fit(ddf, da.from_array(y, chunks=other))
    with pytest.raises(ValueError, match=r"partition \d of sample_weight has [37]00 rows"):
        DaskGradientBoostingClassifier(**PARAMS).fit(
            ddf, alike, sample_weight=da.from_array(w, chunks=other))
    with pytest.raises(ValueError, match="of y has"):
        DaskGradientBoostingClassifier(**PARAMS).fit(
            da.from_array(X, chunks=500), dd.from_dask_array(da.from_array(y, chunks=other)))
    with pytest.raises(ValueError, match=r"partition \d of eval_set y has [37]00 rows"):
        DaskGradientBoostingClassifier(**PARAMS).fit(
            ddf, alike, eval_set=(ddf, da.from_array(y, chunks=other)))
    assert _settled(client)
    # Partitioned alike, the same fit as in memory.
    model = DaskGradientBoostingClassifier(**PARAMS).fit(ddf, alike)
    reference = _reference(df, y, None)
    assert np.abs(model.predict_proba(df) - reference.predict_proba(df)).max() <= 1e-9


def _error_of(fit):
    """(type, message) of what ``fit()`` raises."""
    with pytest.raises((ValueError, TypeError)) as info:
        fit()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", ["string_with_na", "boolean_with_na", "one_class"])
def test_label_errors_are_the_in_memory_ones(client, case):
    """Labels with NA (a string or boolean column, as Dask reads text), or of one
    class: the error of the in-memory fit, message and rows alike."""
    X, y, _ = _data(400, 2, seed=31)
    labels = {"string_with_na": pd.Series(np.array(["n", "y"], dtype=object)[y],
                                          dtype="string"),
              "boolean_with_na": pd.Series(y.astype(bool), dtype="boolean"),
              "one_class": pd.Series(np.ones(y.shape[0], dtype=np.int64))}[case]
    if case != "one_class":
        labels[[5, 250, 251, 399]] = pd.NA   # in the first and last partitions
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    expected = _error_of(lambda: _reference(df, labels, None))
    got = _error_of(lambda: DaskGradientBoostingClassifier(**PARAMS).fit(
        dd.from_pandas(df, npartitions=4), dd.from_pandas(labels, npartitions=4)))
    assert got == expected
    assert _settled(client)


@pytest.mark.parametrize("kinds, layout", [(("int", "str"), "one_worker"),
                                           (("int", "str"), "two_workers"),
                                           (("int", "bool"), "two_workers")])
def test_labels_of_two_kinds_are_refused_as_in_memory(client, kinds, layout):
    """Labels of two kinds (an object column: numbers and strings, or numbers and
    booleans), on one worker or each kind on a worker of its own: the in-memory
    error, not NumPy's comparison error nor a fit on merged classes."""
    X, y, _ = _data(400, 2, seed=32)
    as_kind = {"int": lambda v: int(v), "str": lambda v: "ny"[v], "bool": lambda v: bool(v)}
    labels = np.array([as_kind[kinds[i >= 200]](v) for i, v in enumerate(y)], dtype=object)
    w0, w1 = _workers(client)
    where = [(200, w0), (200, w0 if layout == "one_worker" else w1)]
    expected = _error_of(lambda: _reference(X, labels, None))
    got = _error_of(lambda: DaskGradientBoostingClassifier(**PARAMS).fit(
        _placed(client, X, where), _placed(client, labels, where)))
    assert got == expected
    assert _settled(client)


def test_nan_eval_set_labels_get_the_in_memory_error(client):
    """A NaN among eval_set's labels: the in-memory error naming eval_set y (not
    "labels not seen in y")."""
    X, y, _ = _data(400, 2, seed=34)
    yv = y.astype(np.float64)
    yv[17] = np.nan
    expected = _error_of(lambda: GradientBoostingClassifier(
        split_method="hist", **PARAMS).fit(X, y.astype(np.float64), eval_set=(X, yv)))
    assert expected[1].startswith("eval_set y contains NaN")
    got = _error_of(lambda: DaskGradientBoostingClassifier(**PARAMS).fit(
        da.from_array(X, chunks=200), da.from_array(y.astype(np.float64), chunks=200),
        eval_set=(da.from_array(X, chunks=200), da.from_array(yv, chunks=200))))
    assert got == expected
    assert _settled(client)


def test_workers_labels_merge_as_one_process_holds_them():
    """The workers' distinct labels as one array: numbers of several numeric dtypes in
    their common dtype (what one array of all the labels would be in one process);
    numbers beside strings or booleans each kept as they are (an object array), never
    converted (ints written as strings, 1 taken for True)."""
    from gbc_core.dask import _merged_labels

    ints, floats = np.array([0, 2], dtype=np.int64), np.array([1.5], dtype=np.float32)
    merged = _merged_labels([ints, floats, np.array([], dtype=np.uint8)])
    expected = np.concatenate([ints, floats]).astype(np.result_type(ints, floats))
    assert merged.dtype == expected.dtype == np.float64
    np.testing.assert_array_equal(merged, expected)
    for other in (np.array(["a"]), np.array([True])):
        merged = _merged_labels([ints, other])
        assert merged.dtype == object
        values = ints.tolist() + other.tolist()
        assert merged.tolist() == values
        assert [type(v) for v in merged] == [type(v) for v in values]


def test_missing_eval_set_labels_are_refused_as_in_memory(client):
    X, y, _ = _data(400, 2, seed=33)
    labels = pd.Series(np.array(["n", "y"], dtype=object)[y], dtype="string")
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    missing = labels.copy()
    missing[[7, 390]] = pd.NA
    expected = _error_of(lambda: GradientBoostingClassifier(
        split_method="hist", **PARAMS).fit(df, labels, eval_set=(df, missing)))
    ddf, dy = dd.from_pandas(df, npartitions=2), dd.from_pandas(labels, npartitions=2)
    for eval_set in ((df, missing), (dd.from_pandas(df, npartitions=3),
                                     dd.from_pandas(missing, npartitions=3))):
        got = _error_of(lambda: DaskGradientBoostingClassifier(**PARAMS).fit(
            ddf, dy, eval_set=eval_set))
        assert got == expected
    assert _settled(client)


def test_labels_with_unknown_chunk_sizes(client):
    """X and y taken from a DataFrame as Dask Arrays (``to_dask_array()``: chunk
    sizes unknown): their sizes are computed and the fit is the in-memory one."""
    X, y, _ = _data(1200, 2, seed=25)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)]).assign(t=y)
    ddf = dd.from_pandas(df, npartitions=3)
    Xd = ddf[[f"f{i}" for i in range(5)]].to_dask_array()
    yd = ddf["t"].to_dask_array()
    assert np.isnan(yd.chunks[0]).all()
    model = DaskGradientBoostingClassifier(**PARAMS).fit(Xd, yd)
    assert np.abs(model.predict_proba(X) - _reference(X, y, None).predict_proba(X)).max() <= 1e-9


_CLI_WITHOUT_DEFAULT_CLIENT = r"""
import sys
from dask.callbacks import Callback
local = []
class Spy(Callback):
    def _pretask(self, key, dsk, state):
        local.append(key)
Spy().register()
from gbc_core.cli import main
rc = main(sys.argv[1:])
print("local tasks", len(local))
sys.exit(rc)
"""


def test_cli_train_dask_in_a_process_of_its_own(client, tmp_path):
    """``gbc-core train --dask SCHEDULER`` as a user runs it: a process with no Dask
    client but the one it opens (``set_as_default=False``). The fit runs on that
    client, and so does the reading of the labels that ``--class-weight`` needs:
    nothing runs on the process's local scheduler (a spy counts its tasks)."""
    import subprocess
    import sys

    X, y, _ = _data(900, 2, seed=26, nan=False)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    df["y"] = np.array(["no", "yes"])[y]
    df.to_csv(tmp_path / "train.csv", index=False)
    proc = subprocess.run(
        [sys.executable, "-c", _CLI_WITHOUT_DEFAULT_CLIENT, "train", "train.csv",
         "--target", "y", "-o", "m.gbc", "--dask", client.scheduler.address,
         "--split-method", "hist", "--n-estimators", "8", "--random-state", "0",
         "--class-weight", '{"yes": 3.0}', "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["local", "tasks", "0"]
    model = GradientBoostingClassifier.load(tmp_path / "m.gbc")
    ref = GradientBoostingClassifier(split_method="hist", n_estimators=8, random_state=0,
                                     class_weight={"yes": 3.0}).fit(
        df[[f"f{i}" for i in range(5)]], df["y"])
    assert np.abs(model.predict_proba(df) - ref.predict_proba(df)).max() <= 1e-9
    assert _settled(client)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_criterion(client, n_classes):
    """criterion="squared_error" ranks the splits of the distributed fit too: the
    single-process hist fit with it (to the rounding of the per-worker sums)."""
    X, y, w = _data(1200, n_classes, seed=23)
    ref = _reference(X, y, w, criterion="squared_error")
    model = DaskGradientBoostingClassifier(**PARAMS, criterion="squared_error").fit(
        da.from_array(X, chunks=300), da.from_array(y, chunks=300),
        sample_weight=da.from_array(w, chunks=300))
    assert model.to_local().get_params()["criterion"] == "squared_error"
    assert np.abs(model.predict_proba(X) - ref.predict_proba(X)).max() <= 1e-9


def test_the_reduce_adds_in_rank_order_whatever_the_arrival_order():
    """The coordinator of a fit (called here without a cluster, its coroutines on an
    event loop of the test) gives every rank the sum of the ranks' arrays added in
    rank order, bit for bit: (0.1 + 0.2) + 0.3, not 0.3 + 0.2 + 0.1, when the ranks
    arrive 2, 1, 0; the columns after the summed ones are the minimum, then the
    maxima."""
    import asyncio

    sent = {0: [0.1, 5.0, -1.0], 1: [0.2, 3.0, 4.0], 2: [0.3, 7.0, 2.0]}
    expected = [(0.1 + 0.2) + 0.3, 3.0, 4.0]
    assert expected[0] != (0.3 + 0.2) + 0.1  # the order shows in the sum

    async def arrive(order):
        coordinator = gdask._Coordinator(len(sent), timeout=30.0)
        tasks = []
        for rank in order:
            tasks.append(asyncio.ensure_future(
                coordinator.allreduce(1, rank, np.array(sent[rank]), 1)))
            await asyncio.sleep(0)  # this rank's call reaches the coordinator now
        return await asyncio.gather(*tasks)

    for order in ([2, 1, 0], [1, 2, 0], [0, 1, 2]):
        for result in asyncio.run(arrive(order)):
            assert result.tolist() == expected, order


# ------------------------------------------------------------ categorical features
def _categorical_frame(n=1200, seed=0):
    """A category column of 10 categories (the first 400 rows hold 5 of them), a
    column of strings with missing values (the first 300 rows without "w"), a
    number; labels from a non-monotone effect of the categories."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 10, n)
    a[: n // 3] = rng.integers(0, 5, n // 3)
    b = rng.integers(0, 4, n)
    b[: n // 4] = rng.integers(0, 3, n // 4)
    x = np.round(rng.normal(size=n), 1)
    effect = np.random.default_rng(99).normal(size=10) * 2
    y = (effect[a] + 0.8 * (b == 3) + x + rng.normal(size=n) > 0).astype(int)
    letters = np.array([f"c{i}" for i in range(10)], dtype=object)
    frame = pd.DataFrame({
        "a": pd.Categorical(letters[a], categories=letters),
        "x": x,
        "b": pd.Series(np.array(["u", "v", "z", "w"], dtype=object)[b], dtype=object),
    })
    frame.loc[::17, "a"] = np.nan
    frame.loc[3::19, "b"] = None
    return frame, y


def test_categorical_features_equal_the_single_process_fit(client):
    """Categories agreed across partitions before the fit (some partitions lack some
    categories; the string column is text in some partitions and only missing in
    none): the model of the concatenated rows, an eval set with an unseen category
    scored alike."""
    frame, y = _categorical_frame()
    valid, yv = _categorical_frame(300, seed=1)
    valid["b"] = valid["b"].astype(object)
    valid.loc[:4, "b"] = "never"
    params = dict(PARAMS, min_samples_leaf=20, n_iter_no_change=3)
    ref = GradientBoostingClassifier(split_method="hist", **params).fit(
        frame, y, eval_set=(valid, yv))
    ddf = dd.from_pandas(frame, npartitions=4, sort=False)
    ys = dd.from_pandas(pd.Series(y), npartitions=4, sort=False)
    model = DaskGradientBoostingClassifier(**params).fit(ddf, ys, eval_set=(valid, yv))
    booster = model.booster_
    assert booster.ensemble.categorical.tolist() == [True, False, True]
    for mine, theirs in zip(booster.categories_, ref.booster_.categories_):
        assert (mine is None and theirs is None) or mine.tolist() == theirs.tolist()
    for a, b in zip(booster.trees(), ref.booster_.trees()):
        for field in ("feature", "threshold", "left", "right", "n_samples"):
            np.testing.assert_array_equal(a[field], b[field])
        np.testing.assert_allclose(a["value"], b["value"], rtol=1e-9, atol=1e-12)
    assert (booster.ensemble.category_sets.tobytes()
            == ref.booster_.ensemble.category_sets.tobytes())
    assert any((t["feature"] == 0).any() for t in booster.trees())
    np.testing.assert_allclose(model.validation_score_, ref.validation_score_, rtol=1e-9)
    assert np.abs(booster.predict_proba(valid) - ref.predict_proba(valid)).max() <= 1e-9
    assert _settled(client)


def test_too_many_categories_over_the_partitions_names_the_column(client):
    frame, y = _categorical_frame()
    halves = np.where(np.arange(1200) < 600, np.arange(1200) % 5, 5 + np.arange(1200) % 5)
    frame["a"] = np.array([f"c{i}" for i in halves], dtype=object)
    ddf = dd.from_pandas(frame, npartitions=2, sort=False)
    ys = dd.from_pandas(pd.Series(y), npartitions=2, sort=False)
    with pytest.raises(ValueError, match=r"'a'.* 10 categories, more than max_bins=7"):
        DaskGradientBoostingClassifier(**PARAMS, max_bins=7).fit(ddf, ys)
    assert _settled(client)


def test_categorical_warm_start(client):
    """5 iterations, then a warm start to 12: the 12-iteration fit; other categories
    are refused as in memory."""
    frame, y = _categorical_frame(seed=3)
    params = dict(PARAMS, min_samples_leaf=20, subsample=0.8)
    ref = GradientBoostingClassifier(split_method="hist", **params).fit(frame, y)
    ddf = dd.from_pandas(frame, npartitions=3, sort=False)
    ys = dd.from_pandas(pd.Series(y), npartitions=3, sort=False)
    model = DaskGradientBoostingClassifier(**dict(params, n_estimators=5, warm_start=True))
    model.fit(ddf, ys)
    model.set_params(n_estimators=12).fit(ddf, ys)
    assert model.n_estimators_ == 12
    np.testing.assert_allclose(model.train_score_, ref.train_score_, rtol=1e-9)
    assert (model.booster_.ensemble.category_sets.tobytes()
            == ref.booster_.ensemble.category_sets.tobytes())
    assert np.abs(model.booster_.predict_proba(frame) - ref.predict_proba(frame)).max() <= 1e-9
    other = frame.assign(b=frame["b"].replace({"u": "U"}))
    with pytest.raises(ValueError, match="warm_start: the categories of feature"):
        model.set_params(n_estimators=14).fit(dd.from_pandas(other, npartitions=3,
                                                             sort=False), ys)
    assert _settled(client)


def test_cli_train_dask_makes_text_columns_categorical(client, tmp_path, capsys,
                                                       monkeypatch):
    """``train --dask`` on a CSV with a text column: categorical by default (the
    workers' frames, "from_dtype"), the in-memory fit of the file; the model handed
    over in memory until the model file holds categories."""
    from conftest import run_main

    frame, y = _categorical_frame(seed=4)
    frame["a"] = frame["a"].astype(object)
    frame["target"] = np.array(["no", "yes"])[y]
    frame.to_csv(tmp_path / "train.csv", index=False)
    saved = {}

    def to_local(self):
        local = GradientBoostingClassifier(**self._model_params())
        local.booster_ = self.booster_
        return local

    monkeypatch.setattr(DaskGradientBoostingClassifier, "to_local", to_local)
    monkeypatch.setattr(GradientBoostingClassifier, "save",
                        lambda self, path: saved.setdefault("model", self))
    rc, out, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t",
                            "target", "-o", "m.gbc", "--dask", client.scheduler.address,
                            "--split-method", "hist", "--n-estimators", "6",
                            "--random-state", "0")
    assert rc == 0, err
    booster = saved["model"].booster_
    read = pd.read_csv(tmp_path / "train.csv")
    ref = GradientBoostingClassifier(split_method="hist", n_estimators=6, random_state=0).fit(
        read.drop(columns="target"), read["target"])
    assert booster.ensemble.categorical.tolist() == [True, False, True]
    assert booster.categories_[0].tolist() == ref.booster_.categories_[0].tolist()
    assert (booster.ensemble.category_sets.tobytes()
            == ref.booster_.ensemble.category_sets.tobytes())
    X = read.drop(columns="target")
    assert np.abs(booster.predict_proba(X) - ref.predict_proba(X)).max() <= 1e-9


# ------------------------------------------------------------ the all-reduce's paths
def _listening(client):
    """(On the workers.) The number of listening TCP sockets of each worker process."""
    def count():
        import psutil

        return sum(c.status == psutil.CONN_LISTEN
                   for c in psutil.Process().net_connections(kind="tcp"))

    return client.run(count)


def _refuse_connect(on):
    """(On a worker.) ``on``: a rank cannot connect to rank 0's all-reduce (as behind
    a firewall); else undo."""
    import gbc_core.dask as g

    if not on:
        g._PartActor.connect = g._real_connect
        return
    g._real_connect = g._PartActor.connect
    g._PartActor.connect = lambda self, *args: "ConnectionRefusedError: (a test)"


@pytest.mark.parametrize("case", [dict(), dict(max_leaf_nodes=6, max_depth=None,
                                               subsample=0.7, min_samples_leaf=20)])
def test_socket_and_coordinator_all_reduce_give_the_same_model(client, monkeypatch, case):
    """The socket all-reduce (the default on plain TCP; no coordinator actor), the
    coordinator actor (TLS, or where the ranks cannot connect to rank 0): the same
    model file, byte for byte; no port left open on the workers."""
    X, y, w = _data(1500, 3, seed=31)
    (X, y, w), (Xd, yd, wd) = _laid_out(client, X, y, w, "interleaved")
    params = dict(PARAMS, **case)
    listening = _listening(client)
    started = []
    real_start = gdask._DaskTransport._start_coordinator

    def start_coordinator(self):
        started.append(True)
        return real_start(self)

    monkeypatch.setattr(gdask._DaskTransport, "_start_coordinator", start_coordinator)
    sockets = DaskGradientBoostingClassifier(**params).fit(Xd, yd, sample_weight=wd)
    assert started == []
    monkeypatch.setattr(gdask, "_SOCKET_ALLREDUCE", False)
    actors = DaskGradientBoostingClassifier(**params).fit(Xd, yd, sample_weight=wd)
    assert started == [True]
    monkeypatch.setattr(gdask, "_SOCKET_ALLREDUCE", True)
    client.run(_refuse_connect, True)
    try:
        refused = DaskGradientBoostingClassifier(**params).fit(Xd, yd, sample_weight=wd)
    finally:
        client.run(_refuse_connect, False)
    assert started == [True, True]
    assert sockets.booster_.to_bytes() == actors.booster_.to_bytes()
    assert refused.booster_.to_bytes() == actors.booster_.to_bytes()
    ref = GradientBoostingClassifier(split_method="hist", **params).fit(
        X, y, sample_weight=w)
    assert np.abs(sockets.predict_proba(X) - ref.predict_proba(X)).max() <= 1e-9
    assert _settled(client)
    assert _listening(client) == listening


def test_encrypted_clusters_keep_the_coordinator():
    """The socket all-reduce is plain TCP: not where the cluster's connections are TLS
    (or another protocol), or its security requires encryption."""
    import types

    plain = types.SimpleNamespace(security=types.SimpleNamespace(require_encryption=False))
    tls = types.SimpleNamespace(security=types.SimpleNamespace(require_encryption=True))
    assert gdask._plain_tcp(plain, ["tcp://10.0.0.1:1", "tcp://10.0.0.2:2"])
    assert gdask._plain_tcp(plain, ["inproc://10.0.0.1/1/2"])
    assert not gdask._plain_tcp(plain, ["tcp://10.0.0.1:1", "tls://10.0.0.2:2"])
    assert not gdask._plain_tcp(plain, ["ucx://10.0.0.1:1"])
    assert not gdask._plain_tcp(tls, ["tcp://10.0.0.1:1"])
