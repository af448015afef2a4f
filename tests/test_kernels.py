"""Each Cython kernel against a naive NumPy implementation on random inputs."""

import math
import platform
import struct
import sys

import numpy as np
import pytest

from gbc_core import GradientBoostingClassifier, newton_leaf_values
from gbc_core._common import NODE_DTYPE, ROW_STAT_DTYPE
from gbc_core import _leaves, _loss_state
from gbc_core._loss import loss_for
from gbc_core import _predictor
from gbc_core._predictor import Predictor
from gbc_core._sorting import presort_features
from gbc_core._exact_splitter import ExactSplitFinder
from gbc_core._grower import TreeGrower


def _presort(X, n_threads=2):
    Xf = np.asfortranarray(X, dtype=np.float32)
    n, d = Xf.shape
    order = np.empty((d, n), dtype=np.int32)
    nnm = np.empty(d, dtype=np.int64)
    presort_features(Xf, order, nnm, n_threads)
    return Xf, order, nnm


@pytest.mark.parametrize("n", [1000, 70_000])
@pytest.mark.parametrize("n_threads", [1, 2, 6])  # 6: at most 4 columns at once
@pytest.mark.parametrize("seed", range(3))
def test_presort_matches_stable_argsort(seed, n_threads, n):
    """The stable order (ties in row order, -0.0 equal to 0.0, NaN last) for any
    number of threads, also where a digit takes no pass or no pass runs."""
    rng = np.random.default_rng(seed)
    d = 8
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[:, 1] = np.round(X[:, 1])              # many ties
    X[rng.uniform(size=n) < 0.1, 2] = np.nan  # missing values
    X[:, 3] = rng.choice([-0.0, 0.0, 1.0, -np.inf, np.inf], size=n)
    X[:, 4] *= 1e30
    X[:, 5] = 2.5                            # one value: no pass of the sort runs
    X[:, 6] = np.nan
    X[:, 7] = rng.integers(0, 3, size=n) * np.float32(2.0**-140)  # subnormals
    Xf, order, nnm = _presort(X, n_threads)
    for f in range(d):
        col = Xf[:, f].copy()
        col[col == 0] = 0.0  # -0.0 and +0.0 are one value
        expected = np.argsort(col, kind="stable")  # NaN last, ties in row order
        np.testing.assert_array_equal(order[f], expected)
        assert nnm[f] == np.count_nonzero(~np.isnan(X[:, f]))


def test_presort_of_one_row_and_of_no_column():
    Xf, order, nnm = _presort(np.array([[np.nan, 3.0]], dtype=np.float32))
    assert order.tolist() == [[0], [0]] and nnm.tolist() == [0, 1]
    Xf, order, nnm = _presort(np.empty((5, 0), dtype=np.float32))
    assert order.shape == (0, 5)


def _row_stats(r, w):
    rs = np.empty(r.shape[0], dtype=ROW_STAT_DTYPE)
    rs["wr"] = w * r
    rs["w"] = w
    return rs


def _best_split_naive(X, r, w, rows, min_leaf=1):
    """Brute force: max over features and thresholds of the weighted SSE decrease."""
    best = (-np.inf, None, None)
    Xr, rr, wr = X[rows], r[rows], w[rows]
    W, S = wr.sum(), (wr * rr).sum()
    for f in range(X.shape[1]):
        vals = np.unique(Xr[:, f])
        for lo, hi in zip(vals[:-1], vals[1:]):
            if hi <= np.float32(lo) + np.float32(1e-7):
                continue
            t = float(lo) / 2.0 + float(hi) / 2.0
            if t == float(hi):
                t = float(lo)
            left = Xr[:, f] <= t
            if left.sum() < min_leaf or (~left).sum() < min_leaf:
                continue
            WL, SL = wr[left].sum(), (wr[left] * rr[left]).sum()
            WR, SR = W - WL, S - SL
            gain = SL**2 / WL + SR**2 / WR - S**2 / W
            if gain > best[0] * (1 + 1e-12) + 1e-15:
                best = (gain, f, t)
    return best


def _walk(nodes, Xf):
    """Each node of a grown tree with the rows that reach it (and, for an inner
    node, which of them go left), recomputed from the splits; checks the counts and
    that every row ends in the leaf the tree sends it to."""
    n, d = Xf.shape
    stack = [(0, np.arange(n))]
    while stack:
        j, rows = stack.pop()
        nd = nodes[j]
        assert nd["n_samples"] == rows.size
        left = None
        if nd["feature"] >= 0:
            left = Xf[rows, nd["feature"]] <= nd["threshold"]
            stack += [(nd["left"], rows[left]), (nd["right"], rows[~left])]
        yield nd, rows, left


def _leaf_of_every_row(nodes, Xf):
    pred = Predictor(nodes, np.array([0, nodes.shape[0]]), 1.0, Xf.shape[1])
    return pred.apply(np.ascontiguousarray(Xf))[:, 0, 0]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fast_path", [False, True])
@pytest.mark.parametrize("min_leaf", [2, 5])
def test_grower_splits_have_maximal_gain(seed, weighted, fast_path, min_leaf):
    """Both scans: the general one and the one for data without missing values and
    with positive weights (with unit weights its root test runs two positions per
    step: odd and even ranges, ends set by min_samples_leaf)."""
    rng = np.random.default_rng(seed)
    n, d = 60, 4
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[:, 1] = np.round(X[:, 1] * 2) / 2  # ties
    r = rng.normal(size=n)
    w = rng.uniform(0.2, 3.0, size=n) if weighted else np.ones(n)
    if fast_path:
        w = w.astype(np.float32).astype(np.float64)  # its precondition: float32 weights
    Xf, order, nnm = _presort(X)
    grower = TreeGrower(Xf, ExactSplitFinder(Xf, 2, lean_scans=fast_path), 3, 2, min_leaf,
                        0.0, d, 2)
    grower.grow(_row_stats(r, w), r, None, 0)
    nodes = grower.nodes_array()
    n_checked = 0
    for nd, rows, left in _walk(nodes, Xf):
        np.testing.assert_allclose(nd["weighted_n"], w[rows].sum())
        if left is None:
            continue
        gain, f, t = _best_split_naive(Xf, r, w, rows, min_leaf=min_leaf)
        np.testing.assert_allclose(nd["improvement"], gain, rtol=1e-9, atol=1e-12)
        assert nd["feature"] == f and nd["threshold"] == t  # tie-break: lowest f, lowest t
        n_checked += 1
    assert n_checked >= 3
    np.testing.assert_array_equal(_leaf_of_every_row(nodes, Xf), grower.node_of_row)


@pytest.mark.parametrize("case", [
    "plain", "ties", "subsample", "max_features", "min_leaf", "deep", "missing",
    "best_first", "best_first_subsample", "one_thread", "weighted", "weighted_subsample",
    "weighted_best_first",
])
def test_node_segments_grow_the_trees_of_the_level_scan(case):
    """With segments the exact finder keeps each node's rows contiguous per feature
    (split at every level) and scans a node alone; without, it scans a level's nodes
    together. Both must grow the same trees, node for node and bit for bit, over
    several trees (the segments are rebuilt per tree): unit and positive float32
    weights, sample masks, feature draws, leaf minimums, levels past 255 nodes
    (where the segments stop), features with missing values (never segmented),
    best-first growth, one or two threads (the segments on two threads against the
    level scan on one: 120,000 values per level, so the scan runs in parallel)."""
    rng = np.random.default_rng(5)
    n, d = 20000, 6
    X = rng.normal(size=(n, d)).astype(np.float32)
    if case == "ties":
        X[:, :3] = np.round(X[:, :3] * 2) / 2
    if case == "missing":
        X[rng.uniform(size=n) < 0.1, 2] = np.nan
    Xf = np.asfortranarray(X)
    depth, msl, max_features, leaves, threads = 4, 1, d, 0, 2
    if case == "min_leaf":
        msl = 40
    if case == "max_features":
        max_features = 2
    if case == "deep":
        depth = 12
    if "best_first" in case:
        depth, leaves = -1, 40
    if case == "one_thread":
        threads = 1
    w = rng.uniform(0.2, 3.0, size=n).astype(np.float32).astype(np.float64)
    residuals = []
    for t in range(3):
        r = np.sin(3 * X[:, 0] + t) + np.cos(2 * X[:, 1] * X[:, 3]) + 0.3 * rng.normal(size=n)
        residuals.append(np.where(np.isnan(r), 0.5, r))
    grown = []
    for segments, n_threads in ((True, threads), (False, 1)):
        finder = ExactSplitFinder(Xf, n_threads, segments=segments)
        grower = TreeGrower(Xf, finder, depth, 2, msl, 0.0, max_features, n_threads,
                            max_leaf_nodes=leaves)
        trees = []
        for t, r in enumerate(residuals):
            mask = None
            if "subsample" in case:
                mask = (np.random.default_rng(t).uniform(size=n) < 0.7).astype(np.uint8)
            grower.grow(_row_stats(r, w) if "weighted" in case else None, r, mask, t)
            trees.append((grower.nodes_array().tobytes(), grower.node_of_row.copy()))
        grown.append(trees)
    for (nodes_seg, leaf_seg), (nodes_scan, leaf_scan) in zip(*grown):
        assert nodes_seg == nodes_scan
        np.testing.assert_array_equal(leaf_seg, leaf_scan)
    n_nodes = len(grown[0][0][0]) // NODE_DTYPE.itemsize
    assert n_nodes >= 15

@pytest.mark.parametrize("residuals_only", [False, True])
def test_levels_with_more_nodes_than_a_byte_holds_have_maximal_gain(residuals_only):
    """Unweighted levels of fewer than 255 nodes gather a byte-sized node per row;
    wider levels fall back to the 16-byte records (made at the first such level when
    the tree is grown from the residuals alone, as a fit without sample weights
    grows it): splits are exact on both."""
    rng = np.random.default_rng(11)
    n, d = 8000, 3
    X = rng.normal(size=(n, d)).astype(np.float32)
    Xd = X.astype(np.float64)
    r = np.sin(7 * Xd[:, 0]) + np.sin(7 * Xd[:, 1]) + np.sin(7 * Xd[:, 2])
    r += 0.1 * rng.normal(size=n)
    w = np.ones(n)
    Xf, order, nnm = _presort(X)
    grower = TreeGrower(Xf, ExactSplitFinder(Xf, 2), 11, 2, 3, 0.0, d, 2)
    grower.grow(None if residuals_only else _row_stats(r, w), r, None, 0)
    nodes = grower.nodes_array()
    width = np.bincount(nodes["depth"])  # nodes per level: the slots of its scan
    assert 2 < width[8] < 255 <= width[9]  # level 8: byte path; level 9: records
    n_checked = 0
    for nd, rows, left in _walk(nodes, Xf):
        if left is None:
            # Every such node of 6 rows or more has a split of positive gain.
            assert not (nd["depth"] in (8, 9) and rows.size >= 6)
            continue
        if nd["depth"] in (8, 9):
            # Nodes of a few rows hold splits whose gains tie to the last bits, where
            # the order of the sums picks the winner: check the gain, not which.
            gain, _, _ = _best_split_naive(Xf, r, w, rows, min_leaf=3)
            S, SL = r[rows].sum(), r[rows][left].sum()
            ours = SL**2 / left.sum() + (S - SL) ** 2 / (~left).sum() - S**2 / rows.size
            np.testing.assert_allclose([nd["improvement"], ours], gain, rtol=1e-9, atol=1e-12)
            assert min(left.sum(), (~left).sum()) >= 3
            n_checked += 1
    assert n_checked > 255
    np.testing.assert_array_equal(_leaf_of_every_row(nodes, Xf), grower.node_of_row)


def test_grower_respects_min_samples_and_depth():
    rng = np.random.default_rng(3)
    n, d = 500, 3
    X = rng.normal(size=(n, d)).astype(np.float32)
    r = rng.normal(size=n)
    Xf, order, nnm = _presort(X)
    for depth, mss, msl in [(1, 2, 1), (4, 50, 1), (5, 2, 40), (None, 2, 30)]:
        grower = TreeGrower(Xf, ExactSplitFinder(Xf, 1), -1 if depth is None else depth, mss,
                            msl, 0.0, d, 1)
        grower.grow(_row_stats(r, np.ones(n)), r, None, 0)
        nodes = grower.nodes_array()
        leaves = nodes[nodes["feature"] < 0]
        inner = nodes[nodes["feature"] >= 0]
        assert (leaves["n_samples"] >= msl).all()
        assert (inner["n_samples"] >= mss).all()
        if depth is not None:
            assert nodes["depth"].max() <= depth
        assert leaves["n_samples"].sum() == n


def test_newton_leaf_values_matches_numpy():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = rng.integers(1, 300)
        p = rng.uniform(size=n)
        y = (rng.uniform(size=n) < 0.5).astype(float)
        r = y - p
        leaf = rng.integers(0, 7, size=n)
        w = rng.uniform(0, 2, size=n)
        for weights in (None, w):
            ww = np.ones(n) if weights is None else weights
            gamma = newton_leaf_values(r, p, leaf, weights)
            assert gamma.shape == (leaf.max() + 1,)
            for j in range(leaf.max() + 1):
                m = leaf == j
                den = (ww[m] * p[m] * (1 - p[m])).sum()
                expected = 0.0 if den == 0 else (ww[m] * r[m]).sum() / den
                assert gamma[j] == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_newton_leaf_values_zero_denominator_gives_zero():
    # p = 1 exactly: p (1 - p) = 0, so gamma = 0 (no possible improvement).
    gamma = newton_leaf_values([0.0, 0.0, 0.5], [1.0, 1.0, 0.5], [0, 0, 1])
    assert gamma[0] == 0.0
    assert gamma[1] == pytest.approx(2.0)
    # A leaf id without samples gets 0.
    assert newton_leaf_values([0.5], [0.5], [2]).tolist() == [0.0, 0.0, 2.0]


def test_boosting_update_matches_numpy():
    rng = np.random.default_rng(1)
    n = 70000  # several reduction chunks
    y = (rng.uniform(size=n) < 0.4).astype(float)
    w = rng.uniform(0.5, 2, size=n)
    raw = rng.normal(size=n)
    prob, residual = np.empty(n), np.empty(n)
    rs = np.empty(n, dtype=ROW_STAT_DTYPE)
    _leaves.init_state(y, w, raw, prob, residual, rs)
    np.testing.assert_allclose(prob, 1 / (1 + np.exp(-raw)), rtol=1e-14)
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [0, -1, -1]
    nodes["left"], nodes["right"] = [1, -1, -1], [2, -1, -1]
    leaf = rng.integers(1, 3, size=n).astype(np.int32)
    mask = (rng.uniform(size=n) < 0.7).astype(np.uint8)
    raw0, p0, r0 = raw.copy(), prob.copy(), residual.copy()
    maxima = np.full(2, np.nan)
    loss, n_overflow = _leaves.boosting_update(nodes, leaf, mask, y, w, 0.1, raw, prob,
                                               residual, rs, 2, grid_maxima=maxima)
    assert n_overflow == 0
    # The next tree's grid maxima, of every row (in the bag or not).
    assert maxima.tolist() == [np.abs(rs["wr"]).max(), rs["w"].max()]
    inb = mask.astype(bool)
    for j in (1, 2):
        m = (leaf == j) & inb
        g = (w[m] * r0[m]).sum() / (w[m] * p0[m] * (1 - p0[m])).sum()
        assert nodes["value"][j] == pytest.approx(g, rel=1e-10)
    expected_raw = raw0 + 0.1 * nodes["value"][leaf]
    np.testing.assert_allclose(raw, expected_raw, rtol=1e-14)
    np.testing.assert_allclose(prob, 1 / (1 + np.exp(-expected_raw)), rtol=1e-14)
    np.testing.assert_allclose(residual, y - prob, rtol=1e-14)
    np.testing.assert_allclose(rs["wr"], w * residual, rtol=1e-14)
    p = 1 / (1 + np.exp(-expected_raw))
    ll = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert loss == pytest.approx(np.average(ll[inb], weights=w[inb]), rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_boosting_update_takes_the_grid_maxima(weighted, n_threads):
    """``boosting_update``'s ``grid_maxima``: the largest abs(w r) and w of the row
    statistics it writes (unit weights: abs(r) of the residuals, and 0), what the
    grower's grid pass takes of them, on any number of threads; the update itself
    is the same bit for bit with or without them; a wrong length is refused."""
    rng = np.random.default_rng(11)
    n = 201_234  # (leaf sums in row blocks)
    y = (rng.uniform(size=n) < 0.4).astype(float)
    w = rng.uniform(0.5, 2, size=n) if weighted else None
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [0, -1, -1]
    nodes["left"], nodes["right"] = [1, -1, -1], [2, -1, -1]
    leaf = rng.integers(1, 3, size=n).astype(np.int32)
    raw0 = rng.normal(size=n) * 3

    def run(maxima):
        raw, prob, residual = raw0.copy(), np.empty(n), np.empty(n)
        rs = np.empty(n, dtype=ROW_STAT_DTYPE) if weighted else None
        _leaves.init_state(y, w, raw, prob, residual, rs)
        tree = nodes.copy()
        loss, _ = _leaves.boosting_update(tree, leaf, None, y, w, 0.1, raw, prob,
                                          residual, rs, n_threads, grid_maxima=maxima)
        return loss, tree.tobytes(), raw, prob, residual, rs

    maxima = np.full(2, np.nan)
    taken, plain = run(maxima), run(None)
    assert taken[:2] == plain[:2]
    for a, b in zip(taken[2:], plain[2:]):
        assert (a is None and b is None) or a.tobytes() == b.tobytes()
    residual, rs = taken[4], taken[5]
    if weighted:
        assert maxima.tolist() == [np.abs(rs["wr"]).max(), rs["w"].max()]
    else:
        assert maxima.tolist() == [np.abs(residual).max(), 0.0]
    with pytest.raises(ValueError, match="grid_maxima must have 2 values"):
        run(np.zeros(3))


def _hex(bits):
    return struct.unpack(">d", bytes.fromhex(bits))[0]


def _naive_log1p(x):
    """fdlibm's log1p (its constants by their bits) of one x in [0, 1], branch by
    branch in Python floats (float64, no fused multiply-add): the numbers the
    loss's vector log1p must give, bit for bit, on every CPU."""
    ln2_hi, ln2_lo = _hex("3fe62e42fee00000"), _hex("3dea39ef35793c76")
    lp = [_hex(h) for h in ("3fe5555555555593", "3fd999999997fa04", "3fd2492494229359",
                            "3fcc71c51d8e78af", "3fc7466496cb03de", "3fc39a09d078c69f",
                            "3fc2f112df3e5244")]
    if x < 2.0**-54:
        return x
    if x < 2.0**-29:
        return x - x * x * 0.5
    k, c = 0, 0.0
    f = x
    if x >= _hex("3fda827a00000000"):  # 1 + x in [sqrt(2), 2]: log(2 * (u / 2))
        u = 1.0 + x
        if u == 2.0:
            c = (1.0 - (u - x)) / u
            return ln2_hi + (c + ln2_lo)
        k, c = 1, (x - (u - 1.0)) / u
        f = u / 2.0 - 1.0
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    z2 = z * z
    z4 = z2 * z2
    z6 = z4 * z2
    r = z * lp[0] + z2 * (lp[1] + z * lp[2]) + z4 * (lp[3] + z * lp[4]) + z6 * (lp[5] + z * lp[6])
    if k == 0:
        return f - (hfsq - s * (hfsq + r))
    return ln2_hi - ((hfsq - (s * (hfsq + r) + (ln2_lo + c))) - f)


def _log1p_arguments(n, seed=5):
    """x in [0, 1] as the fit meets them (e^-|F|), uniform, near 1, every binade, and
    each bound of the method's cases with its neighbours."""
    rng = np.random.default_rng(seed)
    parts = [np.exp(-np.abs(rng.normal(scale=4.0, size=n))), rng.uniform(size=n),
             1.0 - rng.uniform(size=n) * 1e-12,
             2.0 ** rng.uniform(-1075, 0, size=n) * rng.uniform(1, 2, size=n)]
    edges = [0.0, 5e-324, 2.0**-54, 2.0**-29, _hex("3fda827a00000000"), 0.5, 1.0]
    for e in edges:
        parts.append(np.array([e, np.nextafter(e, 0.0), np.nextafter(e, 2.0)]))
    x = np.concatenate(parts)
    return x[(x >= 0.0) & (x <= 1.0)]


@pytest.mark.parametrize("wide", [False, True])
def test_loss_log1p_is_fdlibms_method_bit_for_bit(wide):
    """The training loss's log(1 + e) (``_log1p.h``: every case computed on vector
    lanes, each lane's picked) equals fdlibm's log1p evaluated branch by branch,
    bit for bit, on two or four lanes and for the scalar rows past the last full
    vector; and C's log1p to within one unit in the last place."""
    if wide and not _leaves.log1p_wide():
        pytest.skip("this CPU has no AVX2: the four-lane kernel is not taken")
    x = _log1p_arguments(20000)
    out = np.empty_like(x)
    _leaves.log1p_units(x, out, wide)
    expected = np.array([_naive_log1p(v) for v in x.tolist()])
    assert_bits = np.testing.assert_array_equal
    assert_bits(out.view(np.int64), expected.view(np.int64))
    libm = np.array([math.log1p(v) for v in x.tolist()])
    assert np.all(np.abs(out - libm) <= np.spacing(libm))
    for n in range(9):  # every tail of a vector
        part = np.empty(n)
        _leaves.log1p_units(x[:n].copy(), part, wide)
        assert_bits(part.view(np.int64), expected[:n].view(np.int64))
    with pytest.raises(ValueError, match="out holds 3 values; expected 4"):
        _leaves.log1p_units(x[:4].copy(), np.empty(3))


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_binomial_update_loss_is_the_row_order_sum_per_chunk(n_threads):
    """The in-bag loss of the fused binomial update (its logarithms taken a block
    of rows at a time) is, bit for bit, each 8192-row chunk's terms w L added in
    row order, then the chunks in order, for any number of threads; L = max(F, 0) +
    log(1 + e^-|F|) - y F with the loss's log1p."""
    rng = np.random.default_rng(11)
    n = 8192 * 3 + 777  # three full chunks and a short one; blocks with tails
    y = rng.integers(0, 2, size=n).astype(np.int32)
    w = rng.uniform(0.5, 2, size=n)
    raw = rng.normal(size=n) * rng.choice([1e-9, 1.0, 40.0], size=n)
    mask = (rng.uniform(size=n) < 0.7).astype(np.uint8)
    prob, residual = np.empty(n), np.empty(n)
    rs = np.empty(n, dtype=ROW_STAT_DTYPE)
    _leaves.init_state(y, w, raw, prob, residual, rs)
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [0, -1, -1]
    leaf = rng.integers(1, 3, size=n).astype(np.int32)
    loss, _ = _leaves.boosting_update(nodes, leaf, mask, y, w, 0.1, raw, prob, residual,
                                      rs, n_threads)
    e = np.empty(n)
    _leaves.exp_each(-np.abs(raw), e)  # the kernels' exp (``_exp.h``), one at a time
    log1p_e = np.empty(n)
    _leaves.log1p_units(e, log1p_e)
    term = w * (np.where(raw > 0, raw + log1p_e, log1p_e) - y * raw)
    total = weight = 0.0
    for start in range(0, n, 8192):
        inb = mask[start:start + 8192].astype(bool)
        chunk, chunk_w = 0.0, 0.0
        for t, ww in zip(term[start:start + 8192][inb].tolist(),
                         w[start:start + 8192][inb].tolist()):
            chunk += t
            chunk_w += ww
        total += chunk
        weight += chunk_w
    assert prob.tolist() == np.where(raw >= 0, 1 / (1 + e), e / (1 + e)).tolist()
    assert loss == total / weight


@pytest.mark.parametrize("weighted", [False, True])
def test_held_out_log_loss_reads_the_mask_in_place(weighted):
    """The mean log-loss of the rows of a mask (the out-of-bag and validation
    losses, without copies) is that of the selected rows, bit for bit: the terms
    max(F, 0) + log(1 + e^-|F|) - y F in row order, more rows than a block of
    logarithms and a block's tail."""
    rng = np.random.default_rng(12)
    n = 1000
    y = rng.integers(0, 2, size=n).astype(np.int32)
    raw = rng.normal(size=n) * rng.choice([1e-9, 1.0, 40.0], size=n)
    w = rng.uniform(0.5, 2, size=n) if weighted else None
    rows = rng.uniform(size=n) < 0.6
    got = _leaves.weighted_log_loss(y, raw, w, rows.view(np.uint8))
    assert got == _leaves.weighted_log_loss(y[rows], raw[rows], None if w is None else w[rows])
    e = np.empty(n)
    _leaves.exp_each(-np.abs(raw), e)  # the kernels' exp (``_exp.h``), one at a time
    total = weight = 0.0
    for i in np.flatnonzero(rows).tolist():
        f, wi = float(raw[i]), 1.0 if w is None else float(w[i])
        log1p_e = _naive_log1p(e[i])
        total += wi * ((f + log1p_e if f > 0 else log1p_e) - y[i] * f)
        weight += wi
    assert got == total / weight
    assert _leaves.weighted_log_loss(y, raw, w, np.zeros(n, dtype=np.uint8)) == 0.0
    with pytest.raises(ValueError, match="must have 1000 rows"):
        _leaves.weighted_log_loss(y, raw, w, rows[:10].view(np.uint8))


def _naive_leaf_blocks(n, n_nodes):
    """The row blocks of the leaf sums, written out: one below 200,000 rows or
    beyond 4,096 leaf ids, else one per 8,192 rows, at most 128."""
    if n < 200_000 or not 1 <= n_nodes <= 4096:
        return 1
    return min(128, n // 8192)


def _leaf_sums_naive(n_nodes, leaf, mask, w, terms):
    """Each leaf's sum of ``terms`` over the in-bag rows as the kernels form it,
    naively: in each row block (block b of K: rows n b // K to n (b + 1) // K - 1)
    the leaf's rows added left to right (``np.cumsum``), then the blocks' sums
    left to right."""
    n = len(leaf)
    n_blocks = _naive_leaf_blocks(n, n_nodes)
    block_sums = np.zeros((n_blocks, n_nodes))
    for b in range(n_blocks):
        lo, hi = n * b // n_blocks, n * (b + 1) // n_blocks
        for j in range(n_nodes):
            m = mask[lo:hi] & (leaf[lo:hi] == j)
            if m.any():
                block_sums[b, j] = np.cumsum((w[lo:hi] * terms[lo:hi])[m])[-1]
    return np.cumsum(block_sums, axis=0)[-1]


def _row_block_leaf_values(nodes_shape, leaf, mask, w, r, p, factor=1.0):
    """Eq. 1 per leaf, each sum formed as the kernels form it
    (``_leaf_sums_naive``; ``p`` None: the exponential loss's Hessian |r|)."""
    num = _leaf_sums_naive(nodes_shape, leaf, mask, w, r)
    if p is None:
        den = _leaf_sums_naive(nodes_shape, leaf, mask, w, np.abs(r))
    else:
        den = _leaf_sums_naive(nodes_shape, leaf, mask, w * p, 1.0 - p)
    values = np.zeros(nodes_shape)
    for j in np.unique(leaf[mask]):
        values[j] = factor * num[j] / den[j]
    return values


def test_exponential_update_matches_numpy():
    """The exponential loss's step (``exponential``, no probabilities): r = y e^-F -
    (1 - y) e^F, gamma = sum w r / sum w |r| over in-bag rows, F += eta gamma, the
    in-bag mean of y e^-F + (1 - y) e^F."""
    rng = np.random.default_rng(3)
    n = 30000
    y = (rng.uniform(size=n) < 0.4).astype(float)
    w = rng.uniform(0.5, 2, size=n)
    raw = rng.normal(size=n)
    residual = np.empty(n)
    rs = np.empty(n, dtype=ROW_STAT_DTYPE)
    assert _leaves.init_state(y, w, raw, None, residual, rs, True) == 0
    np.testing.assert_allclose(residual, y * np.exp(-raw) - (1 - y) * np.exp(raw), rtol=1e-14)
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [0, -1, -1]
    leaf = rng.integers(1, 3, size=n).astype(np.int32)
    mask = (rng.uniform(size=n) < 0.7).astype(np.uint8)
    raw0, r0, inb = raw.copy(), residual.copy(), mask.astype(bool)
    loss, n_overflow = _leaves.boosting_update(nodes, leaf, mask, y, w, 0.1, raw, None,
                                               residual, rs, 1, None, True)
    assert n_overflow == 0
    for j in (1, 2):
        m = (leaf == j) & inb
        g = (w[m] * r0[m]).sum() / (w[m] * np.abs(r0[m])).sum()
        assert nodes["value"][j] == pytest.approx(g, rel=1e-10)
    expected_raw = raw0 + 0.1 * nodes["value"][leaf]
    np.testing.assert_allclose(raw, expected_raw, rtol=1e-14)
    expected_r = y * np.exp(-expected_raw) - (1 - y) * np.exp(expected_raw)
    np.testing.assert_allclose(residual, expected_r, rtol=1e-14)
    np.testing.assert_allclose(rs["wr"], w * residual, rtol=1e-14)
    assert loss == pytest.approx(np.average(np.abs(expected_r)[inb], weights=w[inb]),
                                 rel=1e-12)
    # A raw score beyond e^709 on the wrong side: counted, not hidden.
    raw[0] = 800.0 if y[0] == 0 else -800.0
    assert _leaves.init_state(y, w, raw, None, residual, rs, True) == 1


def test_leaf_sum_blocks_are_fixed_by_the_rows_and_leaves():
    """The row blocks of the leaf sums follow from the rows and the leaf ids alone,
    as written out in ``_naive_leaf_blocks``."""
    for n in (0, 1000, 199_999, 200_000, 260_000, 1_000_000, 1_048_576, 10**7):
        for n_nodes in (0, 1, 15, 4096, 4097):
            assert _leaves.leaf_sum_blocks(n, n_nodes) == _naive_leaf_blocks(n, n_nodes)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_leaf_sums_in_row_blocks_on_any_threads(weighted, masked):
    # From 200,000 rows on, the leaf sums of eq. 1 are formed in fixed row blocks,
    # each block's in row order, the blocks' added in block order: the naive twin's
    # numbers on 1 and 4 threads, for every kernel that forms them (residuals of
    # mixed magnitudes, so that another order changes the last bits: the sums of
    # one pass in row order differ, and the check can fail).
    rng = np.random.default_rng(7)
    n = 212_345
    y = (rng.uniform(size=n) < 0.4).astype(float)
    w = rng.uniform(0.5, 2, size=n) if weighted else None
    ww = np.ones(n) if w is None else w
    raw = rng.normal(size=n) * rng.choice([1e-3, 1.0, 30.0], size=n)
    nodes = np.zeros(9, dtype=NODE_DTYPE)
    nodes["feature"] = [0, 0, 0, 0, -1, -1, -1, -1, -1]
    leaf = rng.choice([4, 5, 6, 7, 8], p=[0.5, 0.3, 0.1, 0.07, 0.03], size=n).astype(np.int32)
    mask = (rng.uniform(size=n) < 0.7).astype(np.uint8) if masked else None
    inb = np.ones(n, dtype=bool) if mask is None else mask.astype(bool)
    assert _leaves.leaf_sum_blocks(n, len(nodes)) == 25
    results = []
    for n_threads in (1, 4):
        prob, residual = np.empty(n), np.empty(n)
        rs = None if w is None else np.empty(n, dtype=ROW_STAT_DTYPE)
        raw_k = raw.copy()
        _leaves.init_state(y, w, raw_k, prob, residual, rs)
        p0, r0 = prob.copy(), residual.copy()
        tree = nodes.copy()
        loss, _ = _leaves.boosting_update(tree, leaf, mask, y, w, 0.1, raw_k, prob,
                                          residual, rs, n_threads)
        expected = _row_block_leaf_values(len(nodes), leaf, inb, ww, r0, p0)
        assert tree["value"].tolist() == expected.tolist()
        # (One pass in row order, the sums of one block: other numbers.)
        num_one = [np.cumsum((ww * r0)[inb & (leaf == j)])[-1] for j in range(4, 9)]
        den_one = [np.cumsum((ww * p0 * (1.0 - p0))[inb & (leaf == j)])[-1]
                   for j in range(4, 9)]
        assert [a / b for a, b in zip(num_one, den_one)] != expected[4:].tolist()
        results.append((tree["value"].tolist(), raw_k.tolist(), loss))
        # The NumPy sums of the slow paths (monotonic constraints, custom losses,
        # distributed multinomial fits) are the kernels': the log-loss's (w p)(1 - p).
        sums = _loss_state.node_sums(leaf, len(nodes), mask, w, r0, (p0, 1.0 - p0))
        assert sums[:, 0].tolist() == _leaf_sums_naive(len(nodes), leaf, inb, ww,
                                                       r0).tolist()
        assert sums[:, 1].tolist() == _leaf_sums_naive(len(nodes), leaf, inb, ww * p0,
                                                       1.0 - p0).tolist()
        # The multinomial kernel (factor (K - 1)/K) forms the same sums.
        tree = nodes.copy()
        raw_k = raw.copy()
        _leaves.multinomial_tree_update(tree, leaf, mask, r0, p0, w, 0.75, 0.1, raw_k,
                                        n_threads=n_threads)
        expected = _row_block_leaf_values(len(nodes), leaf, inb, ww, r0, p0, 0.75)
        assert tree["value"].tolist() == expected.tolist()
        assert raw_k.tolist() == (raw + 0.1 * expected[leaf]).tolist()
        # Without residuals, r = [label = k] - p made from the class codes: the sums
        # of those residuals given, bit for bit.
        labels = y.astype(np.int32)
        r_codes = np.where(labels == 1, 1.0, 0.0) - p0
        expected = _row_block_leaf_values(len(nodes), leaf, inb, ww, r_codes, p0, 0.75)
        for residual_given in (r_codes, None):
            tree, raw_k = nodes.copy(), raw.copy()
            _leaves.multinomial_tree_update(
                tree, leaf, mask, residual_given, p0, w, 0.75, 0.1, raw_k, k=1,
                n_threads=n_threads, labels=labels)
            assert tree["value"].tolist() == expected.tolist()
            assert raw_k.tolist() == (raw + 0.1 * expected[leaf]).tolist()
        # The exponential loss's (no probabilities: the Hessian |r|) likewise.
        tree, raw_k, residual = nodes.copy(), raw.copy(), np.empty(n)
        _leaves.init_state(y, w, raw_k, None, residual, rs, True)
        r0 = residual.copy()
        _leaves.boosting_update(tree, leaf, mask, y, w, 0.1, raw_k, None, residual, rs,
                                n_threads, None, True)
        expected = _row_block_leaf_values(len(nodes), leaf, inb, ww, r0, None)
        assert tree["value"].tolist() == expected.tolist()
        # The NumPy sums of the exponential loss's slow paths likewise.
        sums = _loss_state.node_sums(leaf, len(nodes), mask, w, r0, np.abs(r0))
        expected_num = _leaf_sums_naive(len(nodes), leaf, inb, ww, r0)
        expected_den = _leaf_sums_naive(len(nodes), leaf, inb, ww, np.abs(r0))
        assert sums[:, 0].tolist() == expected_num.tolist()
        assert sums[:, 1].tolist() == expected_den.tolist()
    assert results[0] == results[1]


@pytest.mark.parametrize("path", ["hist", "exact"])
@pytest.mark.parametrize("n_threads", [1, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_last_class_update_in_the_softmax_pass(n_threads, weighted, path):
    """``multinomial_tree_update`` with ``steps`` sets the same leaf values, leaves
    F_k as it is and writes each node's step eta * gamma; ``multinomial_state``
    given those steps adds them to F_k (a NumPy twin: F_k + steps[leaf]) in its
    pass: the scores, probabilities and loss of the update and the softmax one
    after the other, bit for bit (rows on either side of the parallel threshold,
    in-bag rows masked), on the histogram fit's path (labels) and the exact one's (class codes and log-odds: the exact leaf
    solve). Bad steps are refused."""
    rng = np.random.default_rng(29)
    nodes = np.zeros(9, dtype=NODE_DTYPE)
    nodes["feature"] = [0, 0, 0, 0, -1, -1, -1, -1, -1]
    for n in (1000, 204_321):
        n_classes, k = 4, 3
        raw = rng.normal(size=(n_classes, n)) * rng.choice([1e-3, 1.0, 20.0], size=n)
        y = rng.integers(0, n_classes, size=n).astype(np.int32)
        w = rng.uniform(0.5, 2, size=n) if weighted else None
        mask = (rng.uniform(size=n) < 0.8).astype(np.uint8)
        leaf = rng.choice([4, 5, 6, 7, 8], size=n).astype(np.int32)
        prob = np.empty((n_classes, n))
        _leaves.multinomial_state(raw, y, w, None, prob, None, 1)
        log_odds = np.empty((n_classes, n))
        _leaves.class_log_odds(raw, log_odds)

        def tree_update(raw_now, steps=None):
            tree = nodes.copy()
            if path == "exact":
                _leaves.multinomial_tree_update(
                    tree, leaf, mask, None, prob[k], w, 0.75, 0.1, raw_now[k], y, k,
                    log_odds[k], n_threads, steps=steps)
            else:
                _leaves.multinomial_tree_update(
                    tree, leaf, mask, None, prob[k], w, 0.75, 0.1, raw_now[k], k=k,
                    n_threads=n_threads, labels=y, steps=steps)
            return tree

        raw_one, prob_one = raw.copy(), np.empty((n_classes, n))
        tree_one = tree_update(raw_one)
        loss_one = _leaves.multinomial_state(raw_one, y, w, mask, prob_one, None,
                                             n_threads)
        raw_fused, prob_fused = raw.copy(), np.empty((n_classes, n))
        steps = np.full(nodes.shape[0], np.nan)
        tree_fused = tree_update(raw_fused, steps)
        assert raw_fused.tobytes() == raw.tobytes()
        assert tree_fused.tolist() == tree_one.tolist()
        assert steps.tolist() == (0.1 * tree_one["value"]).tolist()
        loss_fused = _leaves.multinomial_state(raw_fused, y, w, mask, prob_fused, None,
                                               n_threads, k, steps, leaf)
        twin = raw.copy()
        twin[k] = twin[k] + steps[leaf]
        assert raw_fused.tobytes() == twin.tobytes() == raw_one.tobytes()
        assert prob_fused.tobytes() == prob_one.tobytes()
        assert loss_fused == loss_one
    with pytest.raises(ValueError, match="steps need the leaf"):
        _leaves.multinomial_state(raw.copy(), y, w, None, prob, None, 1, k, steps,
                                  leaf[:10])
    with pytest.raises(ValueError, match="step_class must be"):
        _leaves.multinomial_state(raw.copy(), y, w, None, prob, None, 1, n_classes,
                                  steps, leaf)
    with pytest.raises(ValueError, match="given without steps"):
        _leaves.multinomial_state(raw.copy(), y, w, None, prob, None, 1, k, None, leaf)
    with pytest.raises(ValueError, match="steps holds 3 values"):
        tree_update(raw.copy(), np.empty(3))


@pytest.mark.parametrize("weighted", [False, True])
def test_softmax_pass_in_parts_is_the_whole_pass(weighted):
    """``multinomial_state_part`` over ranges of the row chunks that cover them
    (as the class growers' lanes share the pass out: uneven ranges, an empty one,
    each on its own thread count), then ``multinomial_parts_loss``, gives the
    scores, probabilities, residuals and loss of ``multinomial_state`` in one
    pass, bit for bit, with the last class's steps and without; and the loss is
    the weighted mean of -log p_y in NumPy. Bad ranges are refused."""
    rng = np.random.default_rng(41)
    for n in (50_000, 204_321):   # 7 chunks on one thread; 25 on the threads
        n_classes, k = 5, 4
        raw = rng.normal(size=(n_classes, n)) * rng.choice([1e-3, 1.0, 20.0], size=n)
        y = rng.integers(0, n_classes, size=n).astype(np.int32)
        w = rng.uniform(0.5, 2, size=n) if weighted else None
        mask = (rng.uniform(size=n) < 0.8).astype(np.uint8)
        leaf = rng.choice([1, 2, 3], size=n).astype(np.int32)
        steps = np.array([np.nan, 0.3, -0.2, 0.05])
        n_chunks = _leaves.multinomial_chunk_count(n)
        assert n_chunks == -(-n // 8192)
        for step_args in ((), (k, steps, leaf)):
            raw_one, prob_one = raw.copy(), np.empty((n_classes, n))
            residual_one = np.empty((n_classes, n))
            loss_one = _leaves.multinomial_state(raw_one, y, w, mask, prob_one,
                                                 residual_one, 2, *step_args)
            raw_parts, prob_parts = raw.copy(), np.full((n_classes, n), np.nan)
            residual_parts = np.full((n_classes, n), np.nan)
            partial = np.full(2 * n_chunks, np.nan)
            cuts = [0, 1, n_chunks // 3, n_chunks - 1, n_chunks]   # uneven ranges
            for j, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:])):
                _leaves.multinomial_state_part(raw_parts, y, w, mask, prob_parts,
                                               residual_parts, 1 + j % 3, lo, hi, partial,
                                               *step_args)
            _leaves.multinomial_state_part(raw_parts, y, w, mask, prob_parts,
                                           residual_parts, 2, 1, 1, partial, *step_args)
            assert raw_parts.tobytes() == raw_one.tobytes()
            assert prob_parts.tobytes() == prob_one.tobytes()
            assert residual_parts.tobytes() == residual_one.tobytes()
            assert _leaves.multinomial_parts_loss(partial) == loss_one
            # The loss of the pass: the in-bag rows' weighted mean of -log p_y.
            p_y = prob_one[y, np.arange(n)]
            weight = (np.ones(n) if w is None else w) * mask
            np.testing.assert_allclose(loss_one, np.sum(-np.log(p_y) * weight)
                                       / weight.sum(), rtol=1e-10)
    with pytest.raises(ValueError, match="not a range of the"):
        _leaves.multinomial_state_part(raw.copy(), y, w, None, prob_one, None, 1, 2, 1,
                                       partial)
    with pytest.raises(ValueError, match="not a range of the"):
        _leaves.multinomial_state_part(raw.copy(), y, w, None, prob_one, None, 1, 0,
                                       n_chunks + 1, partial)
    with pytest.raises(ValueError, match="partial must hold"):
        _leaves.multinomial_state_part(raw.copy(), y, w, None, prob_one, None, 1, 0, 1,
                                       partial[:-2])
    with pytest.raises(ValueError, match="given without steps"):
        _leaves.multinomial_state_part(raw.copy(), y, w, None, prob_one, None, 1, 0, 1,
                                       partial, k, None, leaf)
    with pytest.raises(ValueError, match="2 sums per chunk"):
        _leaves.multinomial_parts_loss(partial[:-1])


def test_class_log_odds_in_parts_on_any_threads_are_numpys():
    """``class_log_odds`` (the exact leaf solve's log-odds of each class against the
    others) over the whole rows on 1 and 3 threads, and over uneven ranges of the
    row chunks each on its own thread count (as the class growers' lanes take
    them), gives the same numbers bit for bit, those of NumPy's stable
    F_k - (m + log sum_{j != k} e^(F_j - m)) to rounding; bad ranges and shapes are
    refused."""
    rng = np.random.default_rng(43)
    n_classes, n = 5, 204_321
    raw = rng.normal(size=(n_classes, n)) * rng.choice([1e-3, 1.0, 20.0, 700.0], size=n)
    whole = np.full((n_classes, n), np.nan)
    _leaves.class_log_odds(raw, whole, 1)
    for k in range(n_classes):
        others = np.delete(raw, k, axis=0)
        top = others.max(axis=0)
        expected = raw[k] - (top + np.log(np.exp(others - top).sum(axis=0)))
        np.testing.assert_allclose(whole[k], expected, rtol=1e-13, atol=1e-13)
    threaded = np.full((n_classes, n), np.nan)
    _leaves.class_log_odds(raw, threaded, 3)
    assert threaded.tobytes() == whole.tobytes()
    n_chunks = _leaves.multinomial_chunk_count(n)
    parts = np.full((n_classes, n), np.nan)
    cuts = [0, 1, 1, n_chunks // 3, n_chunks - 1, n_chunks]   # uneven, one empty
    for j, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:])):
        _leaves.class_log_odds(raw, parts, 1 + j % 3, lo, hi)
    assert parts.tobytes() == whole.tobytes()
    with pytest.raises(ValueError, match="not a range of the"):
        _leaves.class_log_odds(raw, parts, 1, 2, 1)
    with pytest.raises(ValueError, match="not a range of the"):
        _leaves.class_log_odds(raw, parts, 1, 0, n_chunks + 1)
    with pytest.raises(ValueError, match="out must have raw's shape"):
        _leaves.class_log_odds(raw, parts[:, :-1].copy(), 1)


def test_last_class_leaf_buffer_grown_again_is_refused():
    """The last class's update waits for ``finish_iteration`` with its grower's leaf
    of each row: an update of another class from that same buffer (a tree grown
    on that grower after it, which overwrote it) is refused; from another
    grower's buffer it is not, and ``finish_iteration`` applies the wait."""
    from gbc_core._loss_state import MultinomialFit
    rng = np.random.default_rng(5)
    n, n_classes = 500, 3
    y = rng.integers(0, n_classes, size=n).astype(np.int32)
    state = MultinomialFit(n_classes, y, None, np.zeros((n, n_classes)), 1)
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [0, -1, -1]
    last_leaf = rng.choice([1, 2], size=n).astype(np.int32)
    other_leaf = last_leaf.copy()
    state.update(n_classes - 1, nodes.copy(), last_leaf, None, 0.1, 1)
    state.update(0, nodes.copy(), other_leaf, None, 0.1, 1)
    with pytest.raises(RuntimeError, match="grown on the grower of the last"):
        state.update(1, nodes.copy(), last_leaf, None, 0.1, 1)
    raw_before = state.raw[n_classes - 1].copy()
    state.finish_iteration(None)
    assert not np.array_equal(state.raw[n_classes - 1], raw_before)
    state.update(1, nodes.copy(), last_leaf, None, 0.1, 1)


@pytest.mark.parametrize("n_threads", [1, 3])
def test_class_residual_is_the_multinomial_state_residual(n_threads):
    """``class_residual`` makes r_k = [y = k] - p_k of one class from p_k: the
    residuals ``multinomial_state`` writes for every class, bit for bit (rows on
    either side of the parallel threshold); without a residual array the state
    writes the same probabilities and loss."""
    rng = np.random.default_rng(3)
    for n in (1000, 200_017):
        n_classes = 4
        raw = rng.normal(size=(n_classes, n)) * rng.choice([1e-3, 1.0, 20.0], size=n)
        y = rng.integers(0, n_classes, size=n).astype(np.int32)
        prob, residual = np.empty((n_classes, n)), np.empty((n_classes, n))
        loss = _leaves.multinomial_state(raw, y, None, None, prob, residual, n_threads)
        prob_alone = np.empty((n_classes, n))
        assert _leaves.multinomial_state(raw, y, None, None, prob_alone, None,
                                         n_threads) == loss
        assert prob_alone.tobytes() == prob.tobytes()
        for k in range(n_classes):
            out = np.full(n, np.nan)
            _leaves.class_residual(prob[k], y, k, out, n_threads)
            assert out.tobytes() == residual[k].tobytes()
            assert out.tobytes() == (np.where(y == k, 1.0, 0.0) - prob[k]).tobytes()
            # With the grid maxima: the same residuals, and their largest abs(r).
            again, maxima = np.full(n, np.nan), np.full(2, np.nan)
            _leaves.class_residual(prob[k], y, k, again, n_threads, maxima)
            assert again.tobytes() == out.tobytes()
            assert maxima.tolist() == [np.abs(out).max(), 0.0]
    with pytest.raises(ValueError, match="one length"):
        _leaves.class_residual(prob[0], y[:10], 0, out, 1)
    with pytest.raises(ValueError, match="maxima must have 2 values"):
        _leaves.class_residual(prob[0], y, 0, out, 1, np.zeros(1))


def _naive_predict(trees, lr, X, init=0.0):
    out = np.full(X.shape[0], init)
    for tree in trees:
        for i in range(X.shape[0]):
            j = 0
            while tree["feature"][j] >= 0:
                x = X[i, tree["feature"][j]]
                if np.isnan(x):
                    left = bool(tree["missing_go_left"][j])
                else:
                    left = float(x) <= tree["threshold"][j]
                j = tree["left"][j] if left else tree["right"][j]
            out[i] += lr * tree["value"][j]
    return out


@pytest.mark.parametrize("max_depth", [1, 3, 12])
def test_predictor_matches_naive_traversal(max_depth, prediction_kernel):
    rng = np.random.default_rng(max_depth)
    n, d = 3000, 5
    X = rng.normal(size=(n, d))
    y = ((X[:, 0] + np.sin(3 * X[:, 1]) + rng.normal(scale=0.5, size=n)) > 0).astype(int)
    X[rng.uniform(size=(n, d)) < 0.05] = np.nan
    model = GradientBoostingClassifier(n_estimators=15, max_depth=max_depth,
                                       min_samples_leaf=3).fit(X, y)
    X_test = rng.normal(size=(500, d))
    X_test[rng.uniform(size=X_test.shape) < 0.1] = np.nan
    X_test[:5] = X[:5]
    X32 = X_test.astype(np.float32)
    expected = _naive_predict(model.trees(), 0.1, X32, model.init_raw_)
    np.testing.assert_allclose(model.decision_function(X_test), expected, rtol=1e-12, atol=1e-12)
    if max_depth == 12:
        assert max(t["depth"].max() for t in model.trees()) > 10  # generic traversal used


def _cpu_has_avx2():
    try:
        with open("/proc/cpuinfo") as fh:
            return any(line.startswith("flags") and " avx2" in line for line in fh)
    except OSError:
        return False


@pytest.fixture(params=["avx2", "portable"])
def prediction_kernel(request):
    """Run a prediction test with the AVX2 kernel, then with the portable path."""
    previous = _predictor._set_simd(request.param == "avx2")
    try:
        if _predictor.simd_kernel() != request.param:
            pytest.skip("no AVX2 kernel on this CPU or platform (the portable path is tested)")
        yield request.param
    finally:
        _predictor._set_simd(previous)


def test_avx2_kernel_is_used_where_the_cpu_has_it():
    """Linux on an x86-64 CPU with AVX2 (as in CI) must take the AVX2 kernel: a build
    that silently lost it would still pass the equality tests."""
    if not (sys.platform.startswith("linux") and platform.machine() == "x86_64"
            and _cpu_has_avx2()):
        pytest.skip("not an x86-64 Linux machine with AVX2")
    assert _predictor.simd_kernel() == "avx2"


@pytest.mark.parametrize("max_depth", [1, 2, 3])
def test_column_wise_prediction_matches_naive_traversal_bit_for_bit(max_depth, prediction_kernel):
    """NaN-free blocks of shallow trees take the column-wise kernel (every split tested
    for a whole block of rows): same leaves, same sums in the same order as walking
    each tree, also next to blocks with missing values and for a last partial block."""
    rng = np.random.default_rng(10 + max_depth)
    n, d = 4000, 6
    X = rng.normal(size=(n, d))
    y = ((X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.5, size=n)) > 0).astype(int)
    X[rng.uniform(size=(n, d)) < 0.02] = np.nan
    model = GradientBoostingClassifier(n_estimators=25, max_depth=max_depth,
                                       min_samples_leaf=150).fit(X, y)
    depths = [int(t["depth"].max()) for t in model.trees()]
    assert max(depths) == max_depth
    X_test = rng.normal(size=(1000, d))        # 7 full blocks of 128 rows + 104 rows
    X_test[3, 1] = np.nan                      # block 0 holds a missing value
    X_test[300, :] = [np.inf, -np.inf, 0.0, 1e30, -1e30, 0.5]  # infinite, not missing
    X32 = X_test.astype(np.float32)
    expected = _naive_predict(model.trees(), 0.1, X32, model.init_raw_)
    np.testing.assert_array_equal(model.decision_function(X_test), expected)
    # The whole ensemble at once and tree by tree give the same sums.
    staged = list(model.staged_decision_function(X_test))[-1]
    np.testing.assert_array_equal(staged, expected)


def test_column_wise_prediction_with_shallower_and_single_leaf_trees(prediction_kernel):
    """Trees of depth 0 (one leaf), 1, 2 and 3 in one model, through both paths."""
    rng = np.random.default_rng(5)
    n, d = 3000, 4
    X = rng.normal(size=(n, d))
    y = (X[:, 0] > 0).astype(int)
    model = GradientBoostingClassifier(n_estimators=3, max_depth=3).fit(X, y)
    trees = model.trees()
    # The model's trees with a lone leaf and a depth-1 tree in front.
    leaf = np.zeros(1, dtype=NODE_DTYPE)
    leaf["feature"], leaf["left"], leaf["right"], leaf["value"] = -1, -1, -1, 0.7
    stump = np.zeros(3, dtype=NODE_DTYPE)
    stump["feature"] = [2, -1, -1]
    stump["left"] = [1, -1, -1]
    stump["right"] = [2, -1, -1]
    stump["threshold"] = [0.25, 0, 0]
    stump["threshold32"] = [np.float32(0.25), 0, 0]
    stump["value"] = [0, -1.5, 2.5]
    stump["depth"] = [0, 1, 1]
    all_trees = [leaf, stump] + list(trees)
    offsets = np.concatenate([[0], np.cumsum([t.shape[0] for t in all_trees])]).astype(np.int64)
    nodes = np.empty(offsets[-1], dtype=NODE_DTYPE)  # (concatenate drops the C padding)
    for t, tree in enumerate(all_trees):
        nodes[offsets[t]:offsets[t + 1]] = tree
    pred = Predictor(nodes, offsets, 0.1, d)
    X_test = rng.normal(size=(700, d)).astype(np.float32)
    out = np.zeros((700, 1))
    pred.predict_raw(X_test, out, 0, -1, 2)
    np.testing.assert_array_equal(out[:, 0], _naive_predict(all_trees, 0.1, X_test))


def test_shallow_prediction_on_wide_data_matches_naive_traversal(prediction_kernel):
    """Splits on features far apart in a wide block (the kernel reads each feature's
    column of the transposed block), thresholds of both signs, infinities, a model of
    more trees than a cache line of tables holds, and a tree range that starts and
    stops inside the ensemble."""
    rng = np.random.default_rng(21)
    n, d = 2000, 300
    X = rng.normal(size=(n, d))
    y = ((X[:, 7] - X[:, 290] + X[:, 150] * X[:, 3]) > 0).astype(int)
    model = GradientBoostingClassifier(n_estimators=40, max_depth=3, learning_rate=0.3,
                                       max_features=0.5, random_state=0).fit(X, y)
    used = {int(f) for t in model.trees() for f in t["feature"] if f >= 0}
    assert max(used) > 200 and min(used) < 50
    X_test = rng.normal(size=(640, d)).astype(np.float32)
    X_test[5, list(used)] = np.inf
    X_test[6, list(used)] = -np.inf
    trees = model.trees()
    ensemble = model.booster_.ensemble
    np.testing.assert_array_equal(ensemble.predict_raw(X_test, n_jobs=2)[:, 0],
                                  _naive_predict(trees, 0.3, X_test, model.init_raw_))
    out = np.zeros((640, 1))
    ensemble.add_raw(X_test, out, 9, 31, 2)
    np.testing.assert_array_equal(out[:, 0], _naive_predict(trees[9:31], 0.3, X_test))


@pytest.mark.parametrize("weighted", [False, True])
def test_narrow_levels_sum_the_rows_of_the_one_thread_partition(weighted):
    """The first levels of a tree (at most NARROW_CHILDREN children) are finished in
    tasks of blocks and chunks of rows on several threads: each node's sums over its
    own rows (read back as its impurity) are those of the one-thread partition, bit
    for bit, level after level (depth 5: levels of 2, 4, 8 and 16 children)."""
    from gbc_core._split_methods import make_split_finder

    rng = np.random.default_rng(8)
    n, d = 230000, 3
    X = rng.normal(size=(n, d)).astype(np.float32)
    r = rng.normal(size=n) * rng.choice([1e-3, 1.0, 40.0], size=n)
    w = rng.uniform(0.5, 2.0, size=n) if weighted else np.ones(n)
    stats = _row_stats(r, w) if weighted else None
    found = []
    for n_threads in (1, 4):
        Xf = np.asfortranarray(X)
        for method in ("exact", "hist"):
            # Level-wise to depth 5, and best first (every split a level of two).
            for depth, leaves in ((5, 0), (-1, 12)):
                finder = make_split_finder(Xf, {"split_method": method, "max_bins": 255,
                                                "n_threads": n_threads})
                grower = TreeGrower(Xf, finder, depth, 2, 1, 0.0, d, n_threads,
                                    ccp_alpha=1e-300, max_leaf_nodes=leaves)
                grower.grow(stats, r, None, 0)
                found.append((grower.nodes_array().tobytes(),
                              grower.node_impurities().tobytes()))
    assert found[:4] == found[4:]
    # More nodes than a tree of depth 4 holds: the level of 16 children was split.
    assert len(found[0][1]) // 8 > 31 and len(found[2][1]) // 8 > 31
    assert len(found[1][1]) // 8 > 15  # best first: most of its 12 leaves kept


def test_threads_give_bit_identical_trees_and_updates():
    """Sizes above the thresholds where the kernels use several threads."""
    rng = np.random.default_rng(7)
    n, d = 40000, 30  # 1.2M values per level: the scan runs in parallel
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[rng.uniform(size=(n, d)) < 0.02] = np.nan
    r = rng.normal(size=n)
    trees = []
    for n_threads in (1, 2):
        Xf, order, nnm = _presort(X, n_threads)
        grower = TreeGrower(Xf, ExactSplitFinder(Xf, n_threads, lean_scans=False), 4, 2, 1,
                            0.0, d, n_threads)
        grower.grow(_row_stats(r, np.ones(n)), r, None, 0)
        trees.append(grower.nodes_array().tobytes())
    assert trees[0] == trees[1]

    n = 210000  # the fused update and the partition run in parallel
    y = (rng.uniform(size=n) < 0.5).astype(float)
    leaf = rng.integers(1, 3, size=n).astype(np.int32)
    results = []
    for n_threads in (1, 2):
        raw = np.linspace(-3, 3, n)
        prob, residual = np.empty(n), np.empty(n)
        rs = np.empty(n, dtype=ROW_STAT_DTYPE)
        _leaves.init_state(y, None, raw, prob, residual, rs)
        nodes = np.zeros(3, dtype=NODE_DTYPE)
        nodes["feature"] = [0, -1, -1]
        loss, _ = _leaves.boosting_update(nodes, leaf, None, y, None, 0.1, raw, prob,
                                          residual, rs, n_threads)
        results.append((loss, raw.tobytes(), nodes.tobytes()))
    assert results[0] == results[1]


@pytest.mark.parametrize("max_depth", [2, 3, 12])
def test_multiclass_prediction_matches_naive_traversal(max_depth, prediction_kernel):
    """K outputs: each output adds its own trees (tree m * K + k), in iteration
    order; blocks with and without missing values, shallow (column-wise and AVX2)
    and deep trees, and ranges of iterations."""
    rng = np.random.default_rng(max_depth)
    n, d, k_classes = 2000, 6, 4
    X = rng.normal(size=(n, d))
    y = np.argmax(X[:, :k_classes] + rng.normal(scale=0.5, size=(n, k_classes)), axis=1)
    X[rng.uniform(size=(n, d)) < 0.03] = np.nan
    model = GradientBoostingClassifier(n_estimators=7, max_depth=max_depth, init="prior",
                                       min_samples_leaf=2, learning_rate=0.3).fit(X, y)
    ensemble = model.booster_.ensemble
    X_test = rng.normal(size=(700, d)).astype(np.float32)
    X_test[:128] = rng.normal(size=(128, d))           # a NaN-free first block
    X_test[200:260, 1] = np.nan                         # blocks with missing values
    trees = model.trees()
    expected = np.stack([_naive_predict(trees[k::k_classes], 0.3, X_test, ensemble.init_raw[k])
                         for k in range(k_classes)], axis=1)
    np.testing.assert_array_equal(ensemble.predict_raw(X_test, n_jobs=2), expected)
    out = np.zeros((700, k_classes))
    ensemble.add_raw(X_test, out, 2, 5, 2)
    part = np.stack([_naive_predict(trees[k::k_classes][2:5], 0.3, X_test)
                     for k in range(k_classes)], axis=1)
    np.testing.assert_array_equal(out, part)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_newton_node_sums_and_binomial_apply_are_boosting_update(weighted, masked,
                                                                  n_threads):
    """The fused binomial update in the two halves of a data-parallel fit
    (``newton_node_sums``, then ``binomial_apply`` on the sums): its leaf sums are
    eq. 1's in row blocks (the naive twin's), and with them the two halves give
    ``boosting_update``'s leaf values, F, p, r, row statistics and loss, bit for
    bit, on any threads."""
    rng = np.random.default_rng(23)
    n = 200_777
    y = (rng.uniform(size=n) < 0.4).astype(np.int32)
    w = rng.uniform(0.5, 2, size=n) if weighted else None
    ww = np.ones(n) if w is None else w
    raw = rng.normal(size=n) * rng.choice([1e-3, 1.0, 30.0], size=n)
    nodes = np.zeros(9, dtype=NODE_DTYPE)
    nodes["feature"] = [0, 0, 0, 0, -1, -1, -1, -1, -1]
    leaf = rng.choice([4, 5, 6, 7, 8], p=[0.5, 0.3, 0.1, 0.07, 0.03], size=n).astype(np.int32)
    mask = (rng.uniform(size=n) < 0.7).astype(np.uint8) if masked else None
    inb = np.ones(n, dtype=bool) if mask is None else mask.astype(bool)
    prob, residual = np.empty(n), np.empty(n)
    rs0 = np.empty(n, dtype=ROW_STAT_DTYPE)
    _leaves.init_state(y, w, raw.copy(), prob, residual, rs0)

    def state():
        return raw.copy(), prob.copy(), residual.copy(), rs0.copy()

    sums = _leaves.newton_node_sums(leaf, len(nodes), mask, w, residual, prob, n_threads)
    assert sums.shape == (len(nodes), 2)
    assert sums[:, 0].tolist() == _leaf_sums_naive(len(nodes), leaf, inb, ww,
                                                   residual).tolist()
    assert sums[:, 1].tolist() == _leaf_sums_naive(len(nodes), leaf, inb, ww * prob,
                                                   1.0 - prob).tolist()
    fused, split = nodes.copy(), nodes.copy()
    a, b = state(), state()
    fused_maxima, split_maxima = np.full(2, np.nan), np.full(2, np.nan)
    loss, _ = _leaves.boosting_update(fused, leaf, mask, y, w, 0.1, *a, n_threads, None,
                                      False, fused_maxima)
    total, weight = _leaves.binomial_apply(split, sums, leaf, mask, y, w, 0.1, *b,
                                           n_threads, split_maxima)
    for field in NODE_DTYPE.names:
        assert fused[field].tobytes() == split[field].tobytes()
    for x, z in zip(a, b):
        assert x.tobytes() == z.tobytes()
    assert total / weight == loss
    assert weight == pytest.approx(ww[inb].sum(), rel=1e-12)
    # The next tree's grid maxima, as the fused kernel's and NumPy's of what it wrote.
    assert split_maxima.tobytes() == fused_maxima.tobytes()
    rs = b[3]
    assert tuple(split_maxima) == (np.abs(rs["wr"]).max(), rs["w"].max())
    b = state()
    _leaves.binomial_apply(split, sums, leaf, mask, y, w, 0.1, b[0], b[1], b[2], None,
                           n_threads, split_maxima)
    assert tuple(split_maxima) == (np.abs(b[2]).max(), 0.0)
    with pytest.raises(ValueError, match="grid_maxima must have 2 values"):
        _leaves.binomial_apply(split, sums, leaf, mask, y, w, 0.1, *state(), 1,
                               np.empty(3))
    with pytest.raises(ValueError, match="sums must have shape"):
        _leaves.binomial_apply(split, sums[:3], leaf, mask, y, w, 0.1, *state(), 1)


@pytest.mark.parametrize("n", [5_003, 200_777])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_binomial_leaf_sums_make_r_from_the_codes(n, weighted, masked, n_threads):
    """With ``residual_codes`` the binomial update's leaf sums make each row's r from
    its class code and p (r = code - p) and do not read the residual buffer, which
    the grower has put on the grid in place by then: leaf values, F, p, the next
    residuals, the loss and the grid maxima are those of the sums of the residuals
    themselves, bit for bit, with one row block (5,003 rows) and in row blocks
    (the fused region), on any threads; so are ``newton_node_sums``' (a
    data-parallel fit's first half). The buffer here holds the residuals on a
    coarse grid, so a kernel that read it would give other leaf values."""
    rng = np.random.default_rng(29)
    y = (rng.uniform(size=n) < 0.4).astype(np.int32)
    w = rng.uniform(0.5, 2, size=n) if weighted else None
    raw = rng.normal(size=n) * rng.choice([1e-3, 1.0, 30.0], size=n)
    nodes = np.zeros(9, dtype=NODE_DTYPE)
    nodes["feature"] = [0, 0, 0, 0, -1, -1, -1, -1, -1]
    leaf = rng.choice([4, 5, 6, 7, 8], p=[0.5, 0.3, 0.1, 0.07, 0.03], size=n).astype(np.int32)
    mask = (rng.uniform(size=n) < 0.7).astype(np.uint8) if masked else None
    prob, residual = np.empty(n), np.empty(n)
    rs0 = None if w is None else np.empty(n, dtype=ROW_STAT_DTYPE)
    _leaves.init_state(y, w, raw.copy(), prob, residual, rs0)
    on_grid = np.rint(residual * 8.0) / 8.0
    assert not np.array_equal(on_grid, residual)
    runs = []
    for buffer, codes in ((residual, None), (on_grid, y)):
        tree = nodes.copy()
        state = [raw.copy(), prob.copy(), buffer.copy(),
                 None if rs0 is None else rs0.copy()]
        maxima = np.full(2, np.nan)
        loss, _ = _leaves.boosting_update(tree, leaf, mask, y, w, 0.1, *state, n_threads,
                                          None, False, maxima, codes)
        runs.append(([tree[f].tobytes() for f in NODE_DTYPE.names],
                     [a.tobytes() for a in state if a is not None], loss, maxima.tobytes()))
    assert runs[0] == runs[1]
    from_residual = _leaves.newton_node_sums(leaf, len(nodes), mask, w, residual, prob,
                                             n_threads)
    for buffer in (None, on_grid):
        from_codes = _leaves.newton_node_sums(leaf, len(nodes), mask, w, buffer, prob,
                                              n_threads, y)
        assert from_codes.tobytes() == from_residual.tobytes()
    # Read from the grid's buffer, the sums are other numbers (the check can fail).
    assert (_leaves.newton_node_sums(leaf, len(nodes), mask, w, on_grid, prob, n_threads)
            .tobytes() != from_residual.tobytes())


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("reduced", [False, True])
def test_binomial_state_keeps_no_residuals_beside_the_growers(weighted, monotonic,
                                                              reduced):
    """The binomial state borrows the grower's residual buffer: it has no residual
    array before its first ``tree_target``, which makes r = y - p in the buffer
    lent (init_state's numbers: those of a state that makes its own), and its
    update writes the next tree's residuals there. The grower puts them on the
    grid in place between: the state's leaf values, F, p, r, loss and next grid
    maxima stay those of a state whose residuals nothing touched, bit for bit (the
    fused kernel; NumPy's sums with monotonic constraints; with a ``reduce``, a
    data-parallel fit's two halves or NumPy's sums). A second target before the
    next update makes the residuals again (the first tree may have put them on
    the grid)."""
    rng = np.random.default_rng(31)
    n = 4001
    y = (rng.uniform(size=n) < 0.4).astype(np.int32)
    w = rng.uniform(0.5, 2, size=n) if weighted else None
    raw = rng.normal(size=(n, 1)) * 3.0
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [0, -1, -1]
    nodes["left"], nodes["right"] = [1, -1, -1], [2, -1, -1]
    leaf = np.where(rng.uniform(size=n) < 0.3, 1, 2).astype(np.int32)
    loss = loss_for(2)
    reduce = (lambda values, n_summed: values) if reduced else None
    lent, own = (loss.start(y, w, raw, 1, reduce=reduce),
                 loss.start(y, w, raw, 1, reduce=reduce))
    assert lent.borrows == ("residual",)
    assert lent.residual is None
    if monotonic:
        lent.monotonic = own.monotonic = np.array([1], dtype=np.int8)
    buffer = np.full(n, np.nan)
    for _ in range(3):
        stats_lent, r_lent = lent.tree_target(0, buffer, 2)
        stats_own, r_own = own.tree_target(0)
        assert r_lent is buffer and lent.residual is buffer and r_own is not buffer
        assert r_lent.tobytes() == r_own.tobytes()
        assert (stats_lent is None) == (stats_own is None) == (not weighted)
        if weighted:
            assert stats_lent.tobytes() == stats_own.tobytes()
        buffer[:] = np.rint(buffer * 4.0) / 4.0  # the grower's grid pass, in place
        a, b = nodes.copy(), nodes.copy()
        lent.update(0, a, leaf, None, 0.1, 2)
        own.update(0, b, leaf, None, 0.1, 2)
        for field in NODE_DTYPE.names:
            assert a[field].tobytes() == b[field].tobytes()
        assert lent.raw.tobytes() == own.raw.tobytes()
        assert lent.prob.tobytes() == own.prob.tobytes()
        assert lent.take_grid_maxima() == own.take_grid_maxima()
        assert lent.finish_iteration(None) == own.finish_iteration(None)
    assert buffer.tobytes() == own.residual.tobytes()
    lent.tree_target(0, buffer, 2)
    buffer[:] = np.rint(buffer * 4.0) / 4.0
    assert lent.tree_target(0, buffer, 2)[1].tobytes() == own.residual.tobytes()


def test_residual_codes_are_refused_where_they_cannot_stand_for_r():
    """Codes for r where there is no p, or of another length, are refused; so are
    row arrays the kernels would index unchecked (None, or of another length)."""
    n = 10
    y = np.array([0, 1] * 5, dtype=np.int32)
    raw, prob, residual = np.zeros(n), np.full(n, 0.5), np.zeros(n)
    leaf = np.ones(n, dtype=np.int32)
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [0, -1, -1]
    with pytest.raises(ValueError, match="the log-loss's"):
        _leaves.boosting_update(nodes, leaf, None, y.astype(float), None, 0.1, raw, None,
                                residual, None, 1, None, True, None, y)
    with pytest.raises(ValueError, match="residual_codes must have 10 rows, got 9"):
        _leaves.boosting_update(nodes, leaf, None, y, None, 0.1, raw, prob, residual,
                                None, 1, None, False, None, y[:9])
    with pytest.raises(ValueError, match="residual is needed without residual_codes"):
        _leaves.newton_node_sums(leaf, 3, None, None, None, prob, 1)
    with pytest.raises(ValueError, match="the log-loss's"):
        _leaves.newton_node_sums(leaf, 3, None, None, residual, None, 1, y)
    # The exponential loss keeps its residuals (|r| is its Hessian).
    with pytest.raises(ValueError, match="the exponential loss keeps its residuals"):
        _leaves.init_state(y.astype(float), None, raw, None, None, None, True)
    with pytest.raises(ValueError, match="residual is needed"):
        _leaves.boosting_update(nodes, leaf, None, y, None, 0.1, raw, prob, None, None, 1,
                                None, False, None, y)
    with pytest.raises(ValueError, match="residual must have 10 rows, got 3"):
        _leaves.boosting_update(nodes, leaf, None, y, None, 0.1, raw, prob, residual[:3],
                                None, 1)
    with pytest.raises(ValueError, match="prob is needed"):
        _leaves.init_state(y, None, raw, None, residual, None)
    with pytest.raises(ValueError, match="raw must have 10 rows, got 9"):
        _leaves.init_state(y, None, raw[:9], prob, residual, None)
