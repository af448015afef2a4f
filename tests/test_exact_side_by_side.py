"""Exact multiclass fits grow the K trees of an iteration side by side on copies of
the finder (``ExactSplitFinder.with_threads``): the same model, bit for bit, as
growing them one after another, on every thread count; the copies share the sorted
order and hold the node segments within a bound."""

import gc

import numpy as np
import pytest

from gbc_core import GradientBoostingClassifier
from gbc_core import _split_methods
from gbc_core._common import ROW_STAT_DTYPE
from gbc_core._exact_splitter import ExactSplitFinder, copy_keeps_segments


def _data(n_classes, n=1500, n_features=6, seed=0, missing=False, categorical=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    if categorical:
        X[:, 2] = rng.integers(0, 5, n)
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] + (X[:, 2] if categorical else 0)
                    + rng.normal(size=n), np.linspace(-1.5, 1.5, n_classes - 1))
    if missing:
        X[rng.random(X.shape) < 0.05] = np.nan
    return X.astype(np.float32), y


def _model(X, y, n_jobs, serial, monkeypatch, fit_kw=None, **kw):
    method = _split_methods.method_named("exact")
    with monkeypatch.context() as m:
        if serial:
            m.setattr(method, "side_by_side", False)
        model = GradientBoostingClassifier(split_method="exact", n_estimators=5,
                                           random_state=3, n_jobs=n_jobs, **kw)
        return model.fit(X, y, **(fit_kw or {}))


def _same(a, b, X):
    assert a.n_estimators_ == b.n_estimators_
    # (The model files differ in the stored n_jobs only: compare every tree array.)
    assert (np.concatenate(a.booster_.trees()).tobytes()
            == np.concatenate(b.booster_.trees()).tobytes())
    assert a.train_score_.tobytes() == b.train_score_.tobytes()
    assert a.predict_proba(X).tobytes() == b.predict_proba(X).tobytes()


@pytest.mark.parametrize("n_classes", [3, 5])
@pytest.mark.parametrize("options", [
    {},
    {"subsample": 0.7},
    {"max_features": 3},
    {"max_leaf_nodes": 6, "max_depth": None},
    {"max_leaf_nodes": 5, "max_depth": None, "subsample": 0.8, "max_features": 4},
    {"interaction_cst": [[0, 1], [2, 3, 4, 5]]},
    {"criterion": "squared_error"},
    {"min_weight_fraction_leaf": 0.01},
    {"missing": True},
    {"categorical": True},
    {"weights": True},
])
def test_side_by_side_exact_is_the_one_after_another_model(n_classes, options,
                                                           monkeypatch):
    """On 1, 2, 3 and 4 threads, the exact model with the trees of an iteration
    grown side by side is the one grown one after another (the registry's flag
    off), bit for bit, and the one of one thread."""
    options = dict(options)
    missing = options.pop("missing", False)
    categorical = options.pop("categorical", False)
    weights = options.pop("weights", False)
    X, y = _data(n_classes, missing=missing, categorical=categorical)
    if categorical:
        options["categorical_features"] = [2]
    fit_kw = None
    if weights:
        fit_kw = {"sample_weight": np.random.default_rng(1).uniform(0.5, 2.0, len(y))}
    from gbc_core import _boosting

    lanes = []
    real = _boosting._growers

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        lanes.append(len(out[1]))
        return out

    one = _model(X, y, 1, True, monkeypatch, fit_kw, **options)
    method = _split_methods.method_named("exact")
    for n_jobs in (1, 2, 3, 4):
        serial = _model(X, y, n_jobs, True, monkeypatch, fit_kw, **options)
        with monkeypatch.context() as m:
            m.setattr(_boosting, "_growers", spy)
            side = _model(X, y, n_jobs, False, monkeypatch, fit_kw, **options)
        # Side by side where the rule says so: not with weights (the weighted
        # multinomial state shares its row statistics), nor on 1 thread, nor where
        # some growers would have one thread and others two (3 classes, 4 threads).
        grown_side = not weights and method.grows_side_by_side(n_jobs, n_classes)
        assert (lanes[-1] > 0) == grown_side
        _same(serial, side, X)
        _same(one, side, X)


@pytest.mark.parametrize("n_classes", [3, 5])
@pytest.mark.parametrize("how", ["parallel scans", "root blocks", "copies without segments"])
def test_side_by_side_on_parallel_scans(n_classes, how, monkeypatch):
    """Levels large enough to be scanned on several threads, roots scanned in
    blocks (every eligible feature, on any thread count), and copies that scan
    without node segments (their bound forced): the one-after-another model."""
    from gbc_core import _exact_splitter

    X, y = _data(n_classes, n=20000, n_features=6, seed=1)
    options = {"max_depth": 4}
    if how == "copies without segments":
        monkeypatch.setattr(_exact_splitter, "copy_keeps_segments", lambda *a: False)
        finder = _exact_splitter.ExactSplitFinder(np.asfortranarray(X), 4)
        assert finder.has_segments and not finder.with_threads(2).has_segments
    previous = _exact_splitter._force_blocks(4096 if how == "root blocks" else 0)
    try:
        serial = {j: _model(X, y, j, True, monkeypatch, **options) for j in (1, 2, 4)}
        for n_jobs in (2, 3, 4):
            side = _model(X, y, n_jobs, False, monkeypatch, **options)
            _same(serial[1], side, X)
            if n_jobs in serial:
                _same(serial[n_jobs], side, X)
    finally:
        _exact_splitter._force_blocks(previous)


def test_exact_fits_grow_side_by_side(monkeypatch):
    """A multiclass exact fit on several threads builds its side-by-side growers
    from ``with_threads`` copies of its finder (the registry's flag on), and one
    after another with the flag off or where the threads would deal unevenly."""
    from gbc_core import _boosting

    made = []
    real = _boosting._growers

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        made.append(out)
        return out

    monkeypatch.setattr(_boosting, "_growers", spy)
    X, y = _data(5)
    _model(X, y, 4, False, monkeypatch)
    grower, class_growers = made[-1]
    assert [g.n_threads for g in class_growers] == [1, 1, 1, 1]
    assert all(isinstance(g.finder, ExactSplitFinder) for g in class_growers)
    _model(X, y, 4, True, monkeypatch)
    assert made[-1][1] == []
    # Not where some growers would have one thread and others two (5 < 8 < 10):
    # the exact method takes no uneven lanes; from 2K threads on it does again.
    _model(X, y, 8, False, monkeypatch)
    assert made[-1][1] == []
    _model(X, y, 10, False, monkeypatch)
    assert [g.n_threads for g in made[-1][1]] == [2, 2, 2, 2, 2]


def test_with_threads_shares_the_order_and_finds_the_same_splits():
    """A copy reads its original's sorted order (no sort of its own) and finds
    the same splits on any thread count; the copy outlives nothing it reads."""
    rng = np.random.default_rng(4)
    X = np.asfortranarray(rng.normal(size=(2000, 5)).astype(np.float32))
    X[rng.random(X.shape) < 0.05] = np.nan
    finder = ExactSplitFinder(X, 4)
    wr = rng.integers(-5, 6, 2000).astype(np.float64)
    slot = rng.integers(0, 3, 2000).astype(np.int32)
    stats = np.zeros(2000, dtype=ROW_STAT_DTYPE)
    stats["wr"], stats["w"] = wr, 1.0
    ref = finder.level_splits(stats, slot, grid=(1.0, 1.0), unit_weights=True)
    for t in (1, 2, 3):
        copy = finder.with_threads(t, shares_rows=t == 1)
        assert copy.n_samples == 2000 and copy.n_features == 5
        assert copy.has_segments == finder.has_segments
        out = copy.level_splits(stats, slot, grid=(1.0, 1.0), unit_weights=True)
        assert out.tobytes() == ref.tobytes()
    del finder
    # (The copy keeps the original's order alive.)
    out = copy.level_splits(stats, slot, grid=(1.0, 1.0), unit_weights=True)
    assert out.tobytes() == ref.tobytes()


def test_copies_read_the_block_bytes_of_their_original():
    """The block bytes (per fit, read only) are the original's memory in its
    copies, not a copy of it."""
    from gbc_core._exact_splitter import _force_blocks

    X = np.asfortranarray(np.random.default_rng(2).normal(size=(1000, 4)).astype(np.float32))
    previous = _force_blocks(64)
    try:
        finder = ExactSplitFinder(X, 4)
    finally:
        _force_blocks(previous)
    own = finder._block_bytes()
    assert own is not None
    for t in (1, 2):
        copy = finder.with_threads(t)
        assert copy.reads_block_bytes_of_original
        assert np.array_equal(copy._block_bytes(), own)
    assert not finder.reads_block_bytes_of_original
    # The copy keeps its original (and so the bytes) alive.
    own = own.copy()
    del finder
    gc.collect()
    assert np.array_equal(copy._block_bytes(), own)


def test_a_copy_is_of_the_same_x():
    X = np.asfortranarray(np.random.default_rng(2).normal(size=(300, 4)).astype(np.float32))
    finder = ExactSplitFinder(X, 2)
    with pytest.raises(ValueError, match="sorted_by must be a finder of this X"):
        ExactSplitFinder(X.copy(order="F"), 2, sorted_by=finder)
    with pytest.raises(ValueError, match="sorted_by must be a finder of this X"):
        ExactSplitFinder(np.asfortranarray(X[:, :3]), 2, sorted_by=finder)
    assert ExactSplitFinder(X, 1, sorted_by=finder).n_samples == 300


def test_copies_keep_segments_within_one_finders_bound():
    """The copies that share out a finder's threads hold at most 2^25 values of
    node segments together: each keeps them while its share of the threads allows,
    and scans without them above."""
    bound = 1 << 25
    assert copy_keeps_segments(200_000, 28, 3, 16)          # 5.6M <= 6.3M
    assert not copy_keeps_segments(200_000, 28, 1, 16)      # 5.6M > 2.1M
    assert copy_keeps_segments(1 << 20, 32, 4, 4)           # its own bound: 2^25
    assert not copy_keeps_segments((1 << 20) + 1, 32, 4, 4)
    for n_threads in (2, 4, 16, 32):
        for n_growers in range(1, n_threads + 1):
            share, extra = divmod(n_threads, n_growers)
            shares = [share + (j < extra) for j in range(n_growers)]
            for n_values in (1 << 20, 5_600_000, 1 << 24, bound):
                kept = sum(n_values for t in shares
                           if copy_keeps_segments(n_values, 1, t, n_threads))
                assert kept <= bound
    # A finder without segments makes copies without them.
    X = np.asfortranarray(np.random.default_rng(0).normal(size=(300, 3)).astype(np.float32))
    assert not ExactSplitFinder(X, 2, segments=False).with_threads(1).has_segments
    assert ExactSplitFinder(X, 2).with_threads(1).has_segments
