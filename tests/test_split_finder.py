"""The exact split finder, through the split-finder interface, against brute force.

``SplitFinder.level_splits`` runs one level of the search on rows assigned to nodes,
as the grower asks for it. The brute force below enumerates every candidate split of
every node in plain NumPy: thresholds between consecutive distinct float32 values of
the node (the previous sample's value + 1e-7 in float32, as scikit-learn's exact
splitter), missing values sent right then left (or, in a node without any, to the
larger child), the split "every value left, missing values right", minimum leaf size
and weight, per-node feature masks (max_features) and rows in no node (subsampling).
It adds the statistics in the same order as the scans (rows of a node in sorted
order, node totals in row order), so the proxies are the same numbers and the
documented tie-break (lowest feature, then lowest threshold, then missing values
right) decides among exact ties: the finder's answer must be the brute force's, bit
for bit, on every scan path. A histogram finder will be held to the same reference.
"""

import numpy as np
import pytest

from gbc_core._common import ROW_STAT_DTYPE
from gbc_core._exact_splitter import ExactSplitFinder

from conftest import traced_peak

F32_TOLERANCE = np.float32(1e-7)
MISSING_RIGHT, MISSING_LEFT, MISSING_TO_LARGER = 0, 1, 2


def _sequential_sum(values):
    """Sum in the given order (np.cumsum adds one value at a time; np.sum does not)."""
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


def _midpoint(lo, hi):
    lo, hi = float(lo), float(hi)
    if lo == -np.inf:
        return -np.finfo(np.float64).max
    t = lo / 2.0 + hi / 2.0
    if t == hi or np.isinf(t):
        t = lo
    return t


def brute_force(X32, wr, w, row_slot, allowed=None, min_samples_leaf=1, min_weight_leaf=0.0):
    """The best split of every node: (feature, threshold, missing_go_left, proxy,
    left_n, left_w, left_s), or None."""
    n_nodes = int(row_slot.max()) + 1
    out = []
    for s in range(n_nodes):
        rows = np.flatnonzero(row_slot == s)
        total_n, total_w, total_s = rows.size, _sequential_sum(w[rows]), _sequential_sum(wr[rows])
        best = None

        def consider(feature, threshold, direction, n_left, w_left, s_left):
            nonlocal best
            w_right = total_w - w_left
            if (n_left < min_samples_leaf or total_n - n_left < min_samples_leaf
                    or w_left <= 0 or w_right <= 0
                    or w_left < min_weight_leaf or w_right < min_weight_leaf):
                return
            diff = (total_s - s_left) * w_left - s_left * (total_w - w_left)
            den = w_left * (total_w - w_left)
            proxy = diff * diff / den
            if best is None or proxy > best[3]:
                best = (feature, threshold, direction, proxy, n_left, w_left, s_left)

        if total_n >= 2 * min_samples_leaf:
            for f in range(X32.shape[1]):
                if allowed is not None and not allowed[s, f]:
                    continue
                x = X32[rows, f]
                order = np.argsort(x, kind="stable")  # NaN last, ties in row order
                xs, r = x[order], rows[order]
                valid = ~np.isnan(xs)
                n_valid = int(valid.sum())
                cum_w, cum_s = np.cumsum(w[r[:n_valid]]), np.cumsum(wr[r[:n_valid]])
                missing = r[n_valid:]
                miss_n = missing.size
                miss_w, miss_s = _sequential_sum(w[missing]), _sequential_sum(wr[missing])
                for k in range(1, n_valid):
                    if not xs[k] > np.float32(xs[k - 1] + F32_TOLERANCE):
                        continue
                    t = _midpoint(xs[k - 1], xs[k])
                    if miss_n == 0:
                        consider(f, t, MISSING_TO_LARGER, k, cum_w[k - 1], cum_s[k - 1])
                    else:
                        consider(f, t, MISSING_RIGHT, k, cum_w[k - 1], cum_s[k - 1])
                        consider(f, t, MISSING_LEFT, k + miss_n, cum_w[k - 1] + miss_w,
                                 cum_s[k - 1] + miss_s)
                if miss_n and n_valid:
                    consider(f, np.inf, MISSING_RIGHT, n_valid, cum_w[-1], cum_s[-1])
        out.append(best)
    return out


def _check(X, wr, w, row_slot, allowed=None, min_samples_leaf=1, min_weight_leaf=0.0,
           n_threads=1, lean_scans=True, unit_weights=False):
    """The finder's splits equal the brute force's; returns how many nodes split.
    ``unit_weights``: the tree is started from the residuals alone, as a fit without
    sample weights starts it."""
    X32 = np.asfortranarray(X, dtype=np.float32)
    stats = np.empty(X32.shape[0], dtype=ROW_STAT_DTYPE)
    stats["wr"], stats["w"] = wr, w
    finder = ExactSplitFinder(X32, n_threads, lean_scans=lean_scans)
    got = finder.level_splits(stats, row_slot, allowed, min_samples_leaf, min_weight_leaf,
                              unit_weights=unit_weights)
    expected = brute_force(X32, wr, w, row_slot, allowed, min_samples_leaf, min_weight_leaf)
    assert got.shape[0] == len(expected)
    n_split = 0
    for s, (g, e) in enumerate(zip(got, expected)):
        if e is None:
            assert g["feature"] == -1, f"node {s}: found {g}, brute force found none"
            continue
        n_split += 1
        found = (int(g["feature"]), float(g["threshold"]), int(g["missing_go_left"]),
                 float(g["proxy"]), int(g["left_n"]), float(g["left_w"]), float(g["left_s"]))
        assert found == tuple(e), f"node {s}: finder {found} != brute force {tuple(e)}"
        # The rows the threshold sends left are the left child the statistics describe.
        rows = np.flatnonzero(row_slot == s)
        x = X32[rows, found[0]].astype(np.float64)  # (NumPy would round t to float32)
        go_left = x <= found[1]
        if found[2] == MISSING_LEFT:
            go_left |= np.isnan(x)
        assert int(go_left.sum()) == found[4], f"node {s}: threshold and left count disagree"
    return n_split


def _data(seed, n, d, kind):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if kind in ("ties", "nan"):
        X[:, ::2] = np.round(X[:, ::2] * 2)          # many equal values
    if kind == "nan":
        X[rng.random((n, d)) < 0.15] = np.nan
        X[rng.random(n) < 0.5, d - 1] = np.nan       # a feature mostly missing
    if kind == "special":
        base = np.float32(1000.0)
        adjacent = [base, np.nextafter(base, np.float32(np.inf)),
                    np.nextafter(np.nextafter(base, np.float32(np.inf)), np.float32(np.inf))]
        X[:, 0] = rng.choice(np.array(adjacent, dtype=np.float64), size=n)  # adjacent float32
        X[:, 1] = rng.choice([-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf], size=n)
        X[:, 2] = rng.choice([1.0, 1.0 + 5e-8, 1.0 + 1e-7, 1.0 + 2e-7, 1.0 + 3e-7], size=n)
        X[:, 3] = X[:, 0]                             # a copy: equal gains, lowest index wins
    y = (X[:, 0] * 0 + rng.random(n) < 0.5).astype(float) if kind == "special" else (
        (np.nan_to_num(X[:, 0]) + rng.normal(size=n) > 0).astype(float))
    return X, y - 0.5  # the residuals of the first tree (F0 = 0)


def _weights(kind, n, seed):
    rng = np.random.default_rng(seed)
    if kind in ("unit", "residuals"):   # "residuals": a fit without sample weights
        return np.ones(n)
    if kind == "float32":   # positive, exact in float32: the lean weighted scans
        return rng.uniform(0.2, 3.0, size=n).astype(np.float32).astype(np.float64)
    if kind == "float64":   # not exact in float32: the general scan
        return rng.uniform(0.2, 3.0, size=n) + 1e-12
    w = rng.uniform(0.2, 3.0, size=n)   # zeros: the general scan
    w[rng.random(n) < 0.2] = 0.0
    return w


DATA_KINDS = ["continuous", "ties", "nan", "special"]
WEIGHT_KINDS = ["residuals", "unit", "float32", "float64", "zeros"]


@pytest.mark.parametrize("data_kind", DATA_KINDS)
@pytest.mark.parametrize("weight_kind", WEIGHT_KINDS)
@pytest.mark.parametrize("lean_scans", [True, False])
def test_root_of_every_row(data_kind, weight_kind, lean_scans):
    """The root scans (two positions per step with unit weights)."""
    X, r = _data(1, 300, 5, data_kind)
    w = _weights(weight_kind, 300, 2)
    row_slot = np.zeros(300, dtype=np.int32)
    for msl in (1, 3, 40):
        assert _check(X, w * r, w, row_slot, min_samples_leaf=msl, lean_scans=lean_scans,
                      unit_weights=weight_kind == "residuals") == 1


@pytest.mark.parametrize("data_kind", DATA_KINDS)
@pytest.mark.parametrize("weight_kind", WEIGHT_KINDS)
@pytest.mark.parametrize("n_nodes", [2, 7, 254, 300])
def test_levels_of_every_width(data_kind, weight_kind, n_nodes):
    """Deeper levels: fewer nodes than a byte holds (the byte-sized unit-weight scan)
    and more (the 16-byte records, made for the level without sample weights), with
    rows in no node (subsampling)."""
    rng = np.random.default_rng(n_nodes)
    n = 24 * n_nodes
    X, r = _data(3, n, 4, data_kind)
    w = _weights(weight_kind, n, 4)
    row_slot = rng.integers(0, n_nodes, size=n).astype(np.int32)
    row_slot[rng.random(n) < 0.1] = -1
    n_split = _check(X, w * r, w, row_slot, min_samples_leaf=2,
                     unit_weights=weight_kind == "residuals")
    assert n_split > 0.8 * n_nodes


@pytest.mark.parametrize("data_kind", DATA_KINDS)
def test_minimum_leaf_weight(data_kind):
    X, r = _data(5, 400, 4, data_kind)
    w = _weights("float64", 400, 6)
    row_slot = np.random.default_rng(7).integers(0, 3, size=400).astype(np.int32)
    total = w.sum()
    for fraction in (0.01, 0.1, 0.3):
        _check(X, w * r, w, row_slot, min_weight_leaf=fraction * total / 3)


def test_feature_masks_and_subsample_masks():
    """max_features: each node only splits on its drawn features; rows of no node
    (out of bag) take no part in any statistic."""
    rng = np.random.default_rng(8)
    X, r = _data(8, 900, 6, "nan")
    w = np.ones(900)
    row_slot = rng.integers(0, 5, size=900).astype(np.int32)
    row_slot[rng.random(900) < 0.3] = -1
    allowed = (rng.random((5, 6)) < 0.5).astype(np.uint8)
    allowed[:, 0] = 0   # the informative feature is never allowed
    assert _check(X, w * r, w, row_slot, allowed=allowed) == 5
    allowed[:] = 0
    assert _check(X, w * r, w, row_slot, allowed=allowed) == 0


def test_tie_break_lowest_feature_then_lowest_threshold():
    """Equal proxies: the lowest feature (a copied column), then the lowest threshold
    (residuals symmetric about the middle: the two outer splits gain the same)."""
    X = np.array([[1, 1, 5], [2, 2, 6], [3, 3, 7], [4, 4, 8]], dtype=float)
    r = np.array([0.5, -0.5, -0.5, 0.5])
    w = np.ones(4)
    row_slot = np.zeros(4, dtype=np.int32)
    # Splits after row 1 and after row 3 have the same proxy on every feature.
    best = brute_force(X.astype(np.float32), r, w, row_slot)[0]
    assert best[0] == 0 and best[1] == 1.5
    _check(X, r, w, row_slot)
    # Missing values right before left on a tie: a node whose missing rows add
    # nothing (zero residual) gains the same either way.
    X2 = np.array([[1.0], [2.0], [np.nan], [3.0], [4.0]])
    r2 = np.array([1.0, 1.0, 0.0, -1.0, -1.0])
    best = brute_force(X2.astype(np.float32), r2, np.ones(5), np.zeros(5, dtype=np.int32))[0]
    assert best[2] == MISSING_RIGHT
    _check(X2, r2, np.ones(5), np.zeros(5, dtype=np.int32))


def test_threads_find_the_same_splits():
    """A level long enough for several threads: the same answer as the brute force
    (and so as one thread)."""
    X, r = _data(9, 40000, 26, "nan")
    w = np.ones(40000)
    row_slot = np.random.default_rng(9).integers(0, 4, size=40000).astype(np.int32)
    _check(X, w * r, w, row_slot, n_threads=2)


@pytest.mark.parametrize("unit_weights", [False, True])
def test_threads_sharing_a_bound_keep_the_lowest_of_equal_features(unit_weights):
    """The threads of a level's scan start their cheap test from the best proxy any
    thread has published for the node (and compare exactly against their own best):
    with six copies of the best column (equal proxies, scanned by different threads
    at once) every node's split is the brute force's, the lowest copy, on 2 and 8
    threads, at the root and on levels of several nodes."""
    rng = np.random.default_rng(21)
    n, d = 12000, 12
    X = rng.normal(size=(n, d))
    X[:, 3:9] = X[:, [3]]
    r = np.tanh(2 * X[:, 3]) + 0.1 * rng.normal(size=n)
    w = np.ones(n)
    for n_threads in (2, 8):
        for n_nodes in (1, 3):
            for _ in range(2):
                row_slot = rng.integers(0, n_nodes, size=n).astype(np.int32)
                assert _check(X, r, w, row_slot, n_threads=n_threads,
                              unit_weights=unit_weights) == n_nodes


def test_more_rows_than_int32_indices_are_refused():
    """The sorted orders index rows as int32: a finder over 2**31 rows is refused
    before its sorted order (8 GiB here) is allocated (X below is 8 GiB of untouched
    virtual memory), with the histogram finder's message."""
    X = np.empty((2**31, 1), dtype=np.float32, order="F")
    with pytest.raises(ValueError, match=r"at most 2\*\*31 - 1 samples are supported, got 2147483648"):
        ExactSplitFinder(X, 1)


def test_the_lowest_of_equal_features_wins_whatever_order_threads_scan_them():
    """Which thread scans which feature, and in what order, is the OpenMP runtime's
    choice: LLVM's libomp (the macOS wheels' runtime) lets an idle thread steal
    features from the end of another's share, so a thread may scan feature 7, then
    feature 5. Columns 5 and 7 are equal (equal proxies), features 0 to 4 are slow
    (missing values: the general scan) and 6 to 11 fast, so the thread holding the
    upper features is idle first and steals 5 after it scanned 7: feature 5 must
    still win, on every thread count (above the machine's cores too), at the root and
    on levels of several nodes, weighted and not. (Before the fix, 8 of 40 such
    scans chose feature 7 on a clang and libomp build; none does on GCC's runtime,
    which hands features out in order: CI runs this test on both builds.)"""
    rng = np.random.default_rng(5)
    n, d = 20000, 12
    X = rng.normal(size=(n, d))
    X[:, :5][rng.random((n, 5)) < 0.05] = np.nan
    X[:, 7] = X[:, 5]
    r = np.tanh(2 * X[:, 5]) + 0.1 * rng.normal(size=n)
    w = np.ones(n)
    X32 = np.asfortranarray(X, dtype=np.float32)
    stats = np.empty(n, dtype=ROW_STAT_DTYPE)
    stats["wr"], stats["w"] = r, w
    for n_nodes in (1, 3):
        row_slot = rng.integers(0, n_nodes, size=n).astype(np.int32)
        expected = [e[0] for e in brute_force(X32, r, w, row_slot)]
        assert expected == [5] * n_nodes
        for n_threads in (2, 3, 4, 8, 16):
            finder = ExactSplitFinder(X32, n_threads)
            for repeat in range(10):
                got = finder.level_splits(stats, row_slot, None, 1, 0.0,
                                          unit_weights=bool(repeat % 2))
                assert got["feature"].tolist() == expected, (n_nodes, n_threads, repeat)


@pytest.mark.parametrize("segments", [False, True])
def test_exact_fit_allocates_at_most_its_state(segments, monkeypatch):
    """What an exact fit of unit weights allocates (NumPy's arrays and the finder's
    row buffers, all traced) is the sorted order of every feature (int32, 4 bytes
    per value) and per row: the finder's w * r (8, which its general scan reads
    too, with w = 1), node slot (4) and its byte (1), the class codes (4), the raw
    scores, probabilities and residuals (8 each), the residuals on the tree's grid
    (8: the grower's, exact sums) and the leaf of each row (4), 53 bytes in all;
    with node segments (the default up to 2^25 values) also the segments (4 bytes
    per value), one scratch row buffer per thread of a scan (4
    bytes per row, at most one per feature) and one bit per row (the side of its
    node in the segments' split). No sorted copy of the values (they are
    read from X through the order), no 16-byte row records (the weighted scans'),
    and the presort's temporaries (12 bytes per row and column sorted at once, at
    most 4 at once, beside the class codes: 52 bytes per row on 4 threads or more,
    then the traced peak), with any number of threads; where the root may be
    scanned in blocks (``root_block_plan``: here on 8 threads, not on 1), 1 byte
    per value more, naming each value's block of sorted positions."""
    from gbc_core import GradientBoostingClassifier, _exact_splitter
    from gbc_core._exact_splitter import ExactSplitFinder, root_block_plan

    # (The "exact" entry of _split_methods builds the finder of this module.)
    monkeypatch.setattr(_exact_splitter, "ExactSplitFinder",
                        lambda X, n_threads: ExactSplitFinder(X, n_threads, segments=segments))
    n, d = 100_000, 14
    rng = np.random.default_rng(6)
    X = np.asfortranarray(rng.normal(size=(n, d)).astype(np.float32))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(np.int64)
    for n_jobs in (1, 8):
        model = GradientBoostingClassifier(n_estimators=2, max_depth=3, n_jobs=n_jobs)
        _, peak = traced_peak(lambda: model.fit(X, y))
        # The presort's temporaries beside the class codes: 12 bytes per row and
        # column sorted at once (at most 4) + 4, above the 53 on 4 threads or more.
        per_value, per_row = 4, max(53, 4 + 12 * min(n_jobs, 4, d))
        if segments:
            per_value, per_row = 8, 53 + 4 * min(n_jobs, d) + 1 / 8
        blocked = root_block_plan(n, d, n_jobs)[0] > 0
        assert blocked == (n_jobs == 8)
        per_value += blocked
        assert peak < n * (per_value * d + per_row) + 256 * 1024, (
            n_jobs, peak / n - per_value * d, per_row)
