"""The trace of the parallel regions (``_trace.h``): absent from a normal build,
recording a fit's regions and tasks in a build with ``GBC_CORE_TRACE=1`` (the
measuring build of benchmarks/scaling_model.py)."""

import numpy as np
import pytest

from gbc_core import GradientBoostingClassifier, _openmp


def test_a_normal_build_has_no_trace_and_says_how_to_get_one():
    if _openmp.trace_compiled():
        pytest.skip("a traced build (GBC_CORE_TRACE=1)")
    assert _openmp._trace_capsule is None
    with pytest.raises(RuntimeError, match="GBC_CORE_TRACE=1"):
        _openmp.trace_start()
    with pytest.raises(RuntimeError, match="GBC_CORE_TRACE=1"):
        _openmp.trace_stop()


@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_a_traced_build_records_every_tree_its_regions_and_tasks(split_method):
    if not _openmp.trace_compiled():
        pytest.skip("a normal build (no GBC_CORE_TRACE)")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=3000) > 0).astype(int)
    model = GradientBoostingClassifier(n_estimators=4, max_depth=2,
                                       split_method=split_method, n_jobs=2)
    _openmp.trace_start(capacity=100_000)
    model.fit(X, y)
    events, dropped = _openmp.trace_stop()
    assert dropped == 0
    assert events.dtype == _openmp.TRACE_DTYPE
    assert np.all(events["t1"] >= events["t0"])
    assert np.all(np.diff(events["t0"]) >= 0)
    regions = events[events["kind"] == 1]
    assert np.count_nonzero(regions["id"] == 1) == 4  # one per tree
    scan = 8 if split_method == "exact" else 6
    assert np.any(regions["id"] == scan)
    tasks = events[events["kind"] == 0]
    assert len(tasks) > 0
    # Every task lies inside a region of its thread's fit.
    for t in tasks[:200]:
        assert np.any((regions["t0"] <= t["t0"]) & (t["t1"] <= regions["t1"]))
    # Nothing is recorded once stopped.
    model.fit(X, y)
    _openmp.trace_start(capacity=10)
    events, dropped = _openmp.trace_stop()
    assert len(events) == 0 and dropped == 0


@pytest.mark.parametrize("split_method, collect", [("exact", 8), ("hist", 5)])
def test_the_roots_wr2_is_a_task_of_each_trees_first_collect(split_method, collect):
    """The root's w * r^2 of a one-process level-wise tree given every row (phase
    32): one task per tree, inside the tree's first region of the finder's collect
    (the exact root's scan, the root's histogram build); none with a subsample or
    best first (the grower sums it)."""
    if not _openmp.trace_compiled():
        pytest.skip("a normal build (no GBC_CORE_TRACE)")
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=3000) > 0).astype(int)
    for options, per_tree in [(dict(), 1), (dict(subsample=0.7), 0),
                              (dict(max_leaf_nodes=4), 0)]:
        model = GradientBoostingClassifier(n_estimators=3, max_depth=2, n_jobs=2,
                                           split_method=split_method, **options)
        _openmp.trace_start(capacity=100_000)
        model.fit(X, y)
        events, dropped = _openmp.trace_stop()
        assert dropped == 0
        regions = events[events["kind"] == 1]
        side = events[(events["kind"] == 0) & (events["id"] == 32)]
        assert len(side) == 3 * per_tree
        for tree in regions[regions["id"] == 1]:
            inside = regions[(regions["t0"] >= tree["t0"]) & (regions["t1"] <= tree["t1"])
                             & (regions["id"] == collect)]
            first = inside[np.argmin(inside["t0"])]
            mine = side[(side["t0"] >= tree["t0"]) & (side["t1"] <= tree["t1"])]
            assert len(mine) == per_tree
            assert np.all((first["t0"] <= mine["t0"]) & (mine["t1"] <= first["t1"]))


def test_a_traced_build_records_the_binning_sample_and_the_validation_scores():
    if not _openmp.trace_compiled():
        pytest.skip("a normal build (no GBC_CORE_TRACE)")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    X[:, 4] = rng.integers(0, 6, size=3000)
    y = (X[:, 0] + rng.normal(size=3000) > 0).astype(int)
    # Binning (region 13) sorts a sample of each feature of many values (phase 41);
    # the validation rows of a fit with categorical splits are scored through the
    # categorical kernel (region 40), and without them through the predictor's.
    for categorical in ([4], None):
        model = GradientBoostingClassifier(
            n_estimators=4, max_depth=2, split_method="hist", n_jobs=2,
            categorical_features=categorical, n_iter_no_change=2, validation_fraction=0.2)
        _openmp.trace_start(capacity=100_000)
        model.fit(X, y)
        events, dropped = _openmp.trace_stop()
        assert dropped == 0
        regions = events[events["kind"] == 1]
        tasks = events[events["kind"] == 0]
        assert np.any(regions["id"] == 13) and np.any(tasks["id"] == 41)
        assert np.any(regions["id"] == 40)
