"""The seam of the data-parallel fit (``_data_parallel``) with a second transport:
local processes (``_local_processes``). The model equals the single-process hist fit
of the concatenated rows, as the Dask fit does; a lost or stalled process ends the
fit with a clear error, and no process is left behind."""

import os
import signal

import numpy as np
import pytest

from gbc_core import GradientBoostingClassifier
from gbc_core._local_processes import LocalProcesses, fit_local

PARAMS = dict(n_estimators=12, max_depth=3, learning_rate=0.3, random_state=0)


def _data(n, n_classes, seed=0):
    """Rounded features (few distinct values: exact binning), NaN, continuous weights
    (no exact ties between candidate splits)."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 5)), 1).astype(np.float32)
    X[:, 4] = rng.integers(0, 7, n)
    X[rng.random((n, 5)) < 0.05] = np.nan
    score = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) + rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y, rng.uniform(0.2, 3.0, n)


def _assert_same_model(model, ref, X):
    """The Dask tests' equality: the same splits and tree shapes, the losses and the
    probabilities to the rounding of the sums formed per process."""
    assert model.n_estimators_ == ref.n_estimators_
    for a, b in zip(model.trees(), ref.trees()):
        for field in ("feature", "threshold", "left", "right", "n_samples"):
            np.testing.assert_array_equal(a[field], b[field])
    np.testing.assert_allclose(model.train_score_, ref.train_score_, rtol=1e-9)
    assert np.abs(model.predict_proba(X) - ref.predict_proba(X)).max() <= 1e-9


@pytest.mark.parametrize("n_classes, n_processes, extra", [
    (2, 2, {}),
    # The early-stopping hold-out drawn by the rows' places in the concatenated data,
    # the in-bag rows of subsample, the exact leaf solve (each iteration reduced).
    (3, 3, dict(subsample=0.7, n_iter_no_change=3, validation_fraction=0.2,
                leaf_solver="exact", min_samples_leaf=20)),
])
def test_equals_single_process_fit(n_classes, n_processes, extra):
    X, y, w = _data(1500, n_classes, seed=n_classes)
    w[::9] = 0.0  # rows of zero weight: out of the fit, in the draws
    params = dict(PARAMS, **extra)
    ref = GradientBoostingClassifier(split_method="hist", **params).fit(X, y, sample_weight=w)
    # Partitions of several sizes, an empty one, interleaved over the processes.
    model = fit_local(X, y, w, n_processes=n_processes,
                      cuts=[0, 250, 700, 700, 1100, 1500], **params)
    _assert_same_model(model, ref, X)
    if extra:
        assert ref.oob_scores_ is not None and ref.validation_score_ is not None
        np.testing.assert_allclose(model.oob_scores_, ref.oob_scores_, rtol=1e-9)
        np.testing.assert_allclose(model.validation_score_, ref.validation_score_,
                                   rtol=1e-9)


def test_eval_set_and_label_errors_are_the_in_memory_ones():
    X, y, w = _data(600, 2, seed=5)
    params = dict(PARAMS, n_iter_no_change=2)
    ref = GradientBoostingClassifier(split_method="hist", **params).fit(
        X[:400], y[:400], sample_weight=w[:400], eval_set=(X[400:], y[400:], w[400:]))
    model = fit_local(X[:400], y[:400], w[:400], eval_set=(X[400:], y[400:], w[400:]),
                      **params)
    _assert_same_model(model, ref, X)
    np.testing.assert_allclose(model.validation_score_, ref.validation_score_, rtol=1e-9)
    one_class = np.zeros(400, dtype=int)
    with pytest.raises(ValueError) as in_memory:
        GradientBoostingClassifier(split_method="hist").fit(X[:400], one_class)
    with pytest.raises(ValueError, match="only one class") as spread:
        fit_local(X[:400], one_class)
    assert str(spread.value) == str(in_memory.value)


class _Engine(LocalProcesses):
    """Local processes with a fault at the third all-reduce of the fit: rank 1's
    process killed (``"kill"``) or stopped (``"stall"``: it answers no more, as a
    stalled machine; the client's step timeout 1 s from then on, so that the steps
    before it may take as long as a loaded machine makes them)."""

    fault = None
    engines = []

    def __init__(self, n, timeout):
        super().__init__(n, timeout)
        self.steps = 0
        _Engine.engines.append(self)

    def _reduce(self, arrays, n_summed):
        self.steps += 1
        if self.steps == 3:
            if self.fault == "kill":
                self.procs[1].kill()
                self.procs[1].join(30)
            else:
                os.kill(self.procs[1].pid, signal.SIGSTOP)
                self.timeout = 1.0
        return super()._reduce(arrays, n_summed)


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="POSIX signals")
@pytest.mark.parametrize("fault, message", [
    ("kill", r"process 1 was lost during the fit \(exit code -9\)"),
    ("stall", r"process\(es\) \[.*1\] did not finish the fit within 1 s \(step_timeout\)"),
], ids=["kill", "stall"])
def test_a_lost_or_stalled_process_ends_the_fit(monkeypatch, fault, message):
    X, y, _ = _data(600, 2, seed=7)
    monkeypatch.setattr(_Engine, "fault", fault)
    monkeypatch.setattr(_Engine, "engines", [])
    with pytest.raises(RuntimeError, match=message):
        fit_local(X, y, transport=_Engine, **PARAMS)
    [engine] = _Engine.engines
    assert engine.steps >= 3
    assert not any(proc.is_alive() for proc in engine.procs)  # nothing left behind


# ------------------------------------------------------------ categorical features
def _categorical_frame(n=1200, seed=0):
    """A category column of 10 categories (the first 400 rows hold 5 of them only), a
    column of strings (missing values; the first 250 rows without "w") and a
    number; labels from a non-monotone effect of the categories."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 10, n)
    a[:400] = rng.integers(0, 5, 400)
    b = rng.integers(0, 4, n)
    b[:250] = rng.integers(0, 3, 250)
    x = np.round(rng.normal(size=n), 1)
    effect = rng.normal(size=10) * 2
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


CUTS = [0, 250, 400, 400, 900, 1200]


@pytest.mark.parametrize("extra", [
    {},
    dict(subsample=0.7, n_iter_no_change=3, validation_fraction=0.2, max_leaf_nodes=6),
    # A category's rows of a node counted over every part (some parts lack some).
    dict(min_samples_category=80),
])
def test_categorical_features_equal_the_single_process_fit(extra):
    """Categories agreed before the fit (some partitions lack some of them), every
    part encoding with them: the model of the concatenated rows."""
    from gbc_core._local_processes import fit_local_booster

    frame, y = _categorical_frame()
    params = dict(PARAMS, **extra)
    ref = GradientBoostingClassifier(split_method="hist", **params).fit(frame, y)
    booster, _ = fit_local_booster(frame, y, n_processes=3, cuts=CUTS, **params)
    assert booster.ensemble.categorical.tolist() == [True, False, True]
    for mine, theirs in zip(booster.categories_, ref.booster_.categories_):
        assert (mine is None and theirs is None) or mine.tolist() == theirs.tolist()
    _assert_same_model(booster, ref.booster_, frame)
    assert (booster.ensemble.category_sets.tobytes()
            == ref.booster_.ensemble.category_sets.tobytes())
    assert booster.ensemble.nodes.tobytes() != b"" and any(
        (t["feature"] == 0).any() for t in booster.trees())
    if extra.get("min_samples_category", 1) > 1:
        default = GradientBoostingClassifier(split_method="hist", **PARAMS).fit(frame, y)
        assert default.booster_.ensemble.nodes.tobytes() != booster.ensemble.nodes.tobytes()


def test_categorical_features_by_index_eval_set_and_errors():
    """Indices name the categorical features (numbers as categories), a validation
    set with an unseen category; too many categories and mixed kinds over the
    partitions are errors naming the column."""
    from gbc_core._local_processes import fit_local_booster

    frame, y = _categorical_frame(seed=1)
    numbers = np.column_stack([frame["a"].cat.codes.to_numpy() * 10.0, frame["x"]])
    numbers[frame["a"].isna().to_numpy(), 0] = np.nan
    valid = numbers[1000:].copy()
    valid[:5, 0] = 999.0  # unseen
    params = dict(PARAMS, n_iter_no_change=2, categorical_features=[0])
    ref = GradientBoostingClassifier(split_method="hist", **params).fit(
        numbers[:1000], y[:1000], eval_set=(valid, y[1000:]))
    booster, _ = fit_local_booster(numbers[:1000], y[:1000], eval_set=(valid, y[1000:]),
                                   cuts=[0, 300, 1000], **params)
    _assert_same_model(booster, ref.booster_, numbers)
    np.testing.assert_allclose(booster.validation_score_, ref.validation_score_, rtol=1e-9)

    with pytest.raises(ValueError) as in_memory:
        GradientBoostingClassifier(split_method="hist", max_bins=7).fit(frame, y)
    for cuts in ([0, 400, 1200], [0, 200, 400, 800, 1200]):  # 5 | 10, and 5 + 5 | 10
        with pytest.raises(ValueError, match="'a'.* 10 categories, more than max_bins=7"):
            fit_local_booster(frame, y, cuts=cuts, max_bins=7, **PARAMS)
    assert "'a'" in str(in_memory.value)
    # 5 categories in each partition, 10 together: the client's merge refuses.
    halves = np.where(np.arange(1200) < 600, np.arange(1200) % 5, 5 + np.arange(1200) % 5)
    split = frame.assign(a=np.array([f"c{i}" for i in halves], dtype=object))
    with pytest.raises(ValueError, match=r"'a'.* 10 categories, more than max_bins=7"):
        fit_local_booster(split, y, cuts=[0, 600, 1200], max_bins=7, **PARAMS)
    mixed = frame.assign(b=frame["b"].where(np.arange(1200) < 600, 1.5))
    with pytest.raises(ValueError, match="'b'.*mixes values"):
        fit_local_booster(mixed, y, cuts=[0, 600, 1200], categorical_features=["a", "b"],
                          **PARAMS)


def test_fit_local_of_categorical_features_through_the_model_bytes():
    frame, y = _categorical_frame()
    ref = GradientBoostingClassifier(split_method="hist", **PARAMS).fit(frame, y)
    model = fit_local(frame, y, cuts=CUTS, **PARAMS)
    _assert_same_model(model, ref, frame)


class _CountingComm:
    """One rank's all-reduce (nothing to add) that counts its steps."""

    def __init__(self):
        self.steps = 0

    def allreduce(self, values, n_summed):
        from gbc_core._distributed import allreduce_local

        self.steps += 1
        return allreduce_local([values], n_summed)


def _part_fit(X, y, w, carry, **params):
    """A one-rank data-parallel fit (``PartTrainer``): (trees, all-reduce steps);
    ``carry`` False: the grower's sums reduced in steps of their own."""
    import gbc_core._distributed as distributed
    from gbc_core._binning import BinMapper
    from gbc_core._params import DEFAULTS, check_params, resolve

    mapper = BinMapper(255).fit(np.asfortranarray(X), 1)
    bins, lo, hi = distributed.bin_parts([X], mapper, 1)
    checked = check_params(dict(DEFAULTS, split_method="hist", **params))
    resolved = resolve(checked, X.shape[0], X.shape[1],
                       float(X.shape[0] if w is None else w.sum()))
    # (The rows' values route the out-of-bag rows of subsample.)
    kept_X = np.asfortranarray(X) if params.get("subsample", 1.0) < 1.0 else None
    trainer = distributed.PartTrainer(bins, mapper.n_bins_non_missing, mapper.missing_bin,
                                      y, w, np.arange(X.shape[0]), X.shape[0], X=kept_X)
    comm = _CountingComm()
    carried = distributed._Reducer.carry
    try:
        if not carry:
            distributed._Reducer.carry = None   # (the grower then reduces alone)
        ensemble, _ = trainer.fit(comm, 2, resolved, 0, lo, hi)
    finally:
        distributed._Reducer.carry = carried
    return ensemble.trees(), comm.steps


@pytest.mark.parametrize("shape", [dict(max_depth=3),
                                   dict(max_depth=None, max_leaf_nodes=12),
                                   dict(max_depth=4, min_impurity_decrease=1e-4,
                                        ccp_alpha=1e-4)])
def test_one_round_trip_per_level(shape):
    """The sums of a level's splittable test (the root's totals with them) travel
    with its histograms: one all-reduce per level searched (best first, per split)
    besides the tree's leaf values and the training loss (which carries the next
    tree's grid); the trees are those of the grower's sums reduced in steps of their
    own, bit for bit."""
    X, y, w = _data(2000, 2, seed=3)
    params = dict(PARAMS, **shape)
    counts = {}
    for carry in (True, False):
        one, steps_1 = _part_fit(X, y, w, carry, **dict(params, n_estimators=1))
        trees, steps = _part_fit(X, y, w, carry, **params)
        counts[carry] = (steps - steps_1) / (len(trees) - 1)
        if carry:
            carried = trees
    for a, b in zip(carried, trees):
        for field in a.dtype.names:
            assert a[field].tobytes() == b[field].tobytes()
    n_split = np.mean([np.count_nonzero(t["left"] >= 0) for t in carried[1:]])
    extra = 0.0
    if shape.get("min_impurity_decrease"):
        # (One more per level: the sums of w r^2 each chosen split sends left; one
        # at the end of a tree grown to max_depth: its leaves' impurities.)
        extra = shape["max_depth"] + 1
    if "max_leaf_nodes" in shape:
        # The root and the children of every split but the last.
        assert counts[True] <= 2 + n_split
    else:
        assert counts[True] == 2 + shape["max_depth"] + extra
    # Without the carry: one more step per level searched.
    assert counts[False] - counts[True] >= (n_split if "max_leaf_nodes" in shape
                                            else shape["max_depth"])


@pytest.mark.parametrize("subsample", [0.8, 1.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_grid_maxima_travel_with_the_loss(monkeypatch, weighted, subsample):
    """The next tree's grid maxima travel with the training loss's step (the
    log-loss's update, ``OneScoreFit.take_grid_maxima``): one step per tree fewer
    than the grower's own grid step, and the same trees, bit for bit, with
    subsample (the grid is of every row, in the bag or not) and without (every row
    in bag: the grid pass fills the root, ``TreeGrower._grid_and_root``, its grid
    from the maxima's row count, every process's, not the part's own)."""
    from gbc_core import _loss_state

    X, y, w = _data(2000, 2, seed=5)
    params = dict(PARAMS, max_depth=3, subsample=subsample)
    runs = {}
    for grid_with_loss in (True, False):
        if not grid_with_loss:
            monkeypatch.setattr(_loss_state.OneScoreFit, "take_grid_maxima",
                                lambda self, k=0: None)
        one, steps_1 = _part_fit(X, y, w if weighted else None, True,
                                 **dict(params, n_estimators=1))
        trees, steps = _part_fit(X, y, w if weighted else None, True, **params)
        runs[grid_with_loss] = (trees, (steps - steps_1) / (len(trees) - 1))
    assert runs[False][1] - runs[True][1] == 1
    for a, b in zip(runs[True][0], runs[False][0]):
        for field in a.dtype.names:
            assert a[field].tobytes() == b[field].tobytes()


def _naive_reducer_step(comm, histograms, collected, carried):
    """``_distributed._Reducer.finder``'s step written plainly: the collected
    histograms copied out as float64 triples (counts converted), the carried sums,
    a 0 and the negated minima and the maxima appended, one all-reduce, then
    everything written back."""
    part = histograms[collected]
    flat = part.view(np.float64).reshape(part.shape + (3,)).copy()
    flat[..., 0] = part["n"]
    if carried is None:
        total = comm.allreduce(flat, 3)
    else:
        values, n_summed = carried
        sums, low, high = (values[:, :n_summed], values[:, n_summed],
                           values[:, n_summed + 1:])
        packed = np.concatenate([flat.ravel(), sums.ravel(), [0.0], -low, high.ravel()])
        packed = comm.allreduce(packed[None, :], flat.size + sums.size)[0]
        total = packed[:flat.size].reshape(flat.shape)
        at = flat.size + sums.size
        sums[...] = packed[flat.size:at].reshape(sums.shape)
        low[...] = -packed[at + 1:at + 1 + low.size]
        high[...] = packed[at + 1 + low.size:].reshape(high.shape)
    part["n"] = total[..., 0]
    part["w"] = total[..., 1]
    part["s"] = total[..., 2]
    histograms[collected] = part


@pytest.mark.parametrize("carry", [False, True])
def test_reducer_step_is_its_naive_twin(carry):
    """The histogram step of a data-parallel fit (``_Reducer.finder``, packing into
    a buffer kept per fit) sends the array of its naive twin and writes back the
    same sums, steps of several sizes one after another (the buffer grown and
    reused)."""
    from gbc_core._distributed import _Reducer
    from gbc_core._histogram_splitter import BIN_DTYPE

    class Doubling:
        """A two-rank all-reduce of equal parts: sums doubled, min / max kept."""

        def __init__(self):
            self.sent = []

        def allreduce(self, values, n_summed):
            self.sent.append(np.array(values, copy=True))
            out = np.array(values, dtype=np.float64, copy=True)
            out[..., :n_summed] *= 2.0
            return out

    rng = np.random.default_rng(5)
    ours, twin = Doubling(), Doubling()
    reducer = _Reducer(ours)
    for collected in ([0], [1, 3], [], [0, 1, 2, 3], [2]):
        hist = np.zeros((4, 3, 7), dtype=BIN_DTYPE)
        hist["n"] = rng.integers(0, 2**40, size=hist.shape)
        hist["w"] = rng.normal(size=hist.shape)
        hist["s"] = rng.normal(size=hist.shape)
        values = rng.normal(size=(2, 6))
        carried = (values, 3) if carry else None
        a, b = hist.copy(), hist.copy()
        va, vb = values.copy(), values.copy()
        if carry:
            reducer.carry(va, 3)
        reducer.finder(a, np.asarray(collected, dtype=np.intp))
        if collected or carry:
            _naive_reducer_step(twin, b, np.asarray(collected, dtype=np.intp),
                                None if carried is None else (vb, 3))
        assert a.tobytes() == b.tobytes()
        assert va.tobytes() == vb.tobytes()
    assert len(ours.sent) == len(twin.sent) > 0
    for x, z in zip(ours.sent, twin.sent):
        assert x.shape == z.shape and x.tobytes() == z.tobytes()


@pytest.mark.parametrize("shape", [(0, 3), (7, 3), (70_000, 5)])
def test_fortran_copy_of_a_partition_is_numpys(shape):
    """A partition's copy to Fortran order for its sketch (the training cast's tiled
    kernel from C order) holds NumPy's copy bit for bit: NaN, -0.0, +-inf and
    subnormals included, rows beyond one block of the kernel; a partition already
    in Fortran order is not copied."""
    from gbc_core._data_parallel import _fortran

    rng = np.random.default_rng(4)
    X = rng.normal(size=shape).astype(np.float32)
    if X.size:
        X.flat[::97] = np.nan
        X.flat[1::89] = -0.0
        X.flat[2::83] = np.inf
        X.flat[3::79] = -np.inf
        X.flat[4::73] = np.float32(1e-42)
    got = _fortran(X)
    assert got.flags.f_contiguous and got.dtype == np.float32
    assert got.tobytes(order="F") == np.asfortranarray(X).tobytes(order="F")
    F = np.asfortranarray(X)
    assert _fortran(F) is F


def test_a_bad_categorical_features_is_the_single_process_error():
    """A ``categorical_features`` naming no column: the error one process raises,
    its type and message (the parts report it with their description; the client
    raises it)."""
    from gbc_core._local_processes import fit_local_booster

    frame, y = _categorical_frame(seed=2)
    params = dict(PARAMS, categorical_features=["nope"])
    with pytest.raises(ValueError) as in_memory:
        GradientBoostingClassifier(split_method="hist", **params).fit(frame, y)
    with pytest.raises(type(in_memory.value)) as distributed:
        fit_local_booster(frame, y, cuts=[0, 600, 1200], **params)
    assert str(distributed.value) == str(in_memory.value)
    assert "nope" in str(distributed.value)
