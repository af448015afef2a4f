"""The histogram split finder (``split_method="hist"``).

``HistogramSplitFinder`` is held, through ``SplitFinder.level_splits`` (one level,
or one level below a parent level so that the larger child of each pair is derived
from its parent), to a brute force in NumPy: the histograms of every node (per bin,
the rows' counts, weights and w * r added in row order; a derived node's as its
parent's minus its sibling's), then every split between two bins that hold rows of
the node (and whose values are more than the exact search's 1e-7 apart, float32)
with missing values right then left (or to the larger child without any),
then "every value left, missing values right", under the minimum leaf size and
weight and the per-node feature masks, the first strictly better candidate kept:
the finder's answer must be the brute force's, bit for bit. Then the fitted models:
routing by the stored thresholds equals the binned partition, the hist fit equals
the exact fit where binning is exact, it is as accurate on continuous data, and it
works with every option of the estimator and the command line.
"""

import numpy as np
import pytest

import gbc_core
from gbc_core import GradientBoostingClassifier
from gbc_core._binning import BinMapper
from gbc_core._split_methods import make_split_finder
from gbc_core._common import ROW_STAT_DTYPE
from gbc_core._grower import TreeGrower
from gbc_core._histogram_splitter import HistogramSplitFinder, bin_value_ranges

from conftest import require, run_main, traced_peak
from test_split_finder import F32_TOLERANCE, _data, _midpoint, _sequential_sum, _weights

MISSING_RIGHT, MISSING_LEFT, MISSING_TO_LARGER = 0, 1, 2


def _binned(X, max_bins):
    X32 = np.asfortranarray(X, dtype=np.float32)
    mapper = BinMapper(max_bins=max_bins).fit(X32, 1)
    bins = mapper.transform(X32, 1)
    nb = np.asarray(mapper.n_bins_non_missing, dtype=np.int32)
    # The smallest and largest value of each bin, by NumPy.
    lo = np.full((X32.shape[1], max_bins), np.inf, dtype=np.float32)
    hi = np.full((X32.shape[1], max_bins), -np.inf, dtype=np.float32)
    for f in range(X32.shape[1]):
        for b in np.unique(bins[:, f]):
            if b < max_bins:
                lo[f, b] = X32[bins[:, f] == b, f].min()
                hi[f, b] = X32[bins[:, f] == b, f].max()
    got = bin_value_ranges(X32, bins, max_bins, 1)
    np.testing.assert_array_equal(got[0], lo)
    np.testing.assert_array_equal(got[1], hi)
    return X32, bins, nb, (lo, hi), mapper.missing_bin


def _histograms(bins, stride, wr, w, rows):
    """(n, w, s) per feature and bin of the rows ``rows`` (row order)."""
    h = np.zeros((bins.shape[1], stride, 3))
    for f in range(bins.shape[1]):
        b = bins[rows, f]
        for v in np.unique(b):
            sel = rows[b == v]
            h[f, v] = (sel.size, _sequential_sum(w[sel]), _sequential_sum(wr[sel]))
    return h


def brute_force_hist(bins, nb, ranges, missing_bin, wr, w, row_slot, allowed=None,
                     min_samples_leaf=1, min_weight_leaf=0.0, parent_slot=None):
    """The best split of every node: (feature, threshold, missing_go_left, proxy,
    left_n, left_w, left_s, bin), or None."""
    stride = missing_bin + 1
    n_nodes = int(row_slot.max()) + 1
    if parent_slot is not None:
        n_nodes += n_nodes % 2
    nodes = [np.flatnonzero(row_slot == s) for s in range(n_nodes)]
    totals = [(r.size, _sequential_sum(w[r]), _sequential_sum(wr[r])) for r in nodes]
    splittable = [t[0] >= 2 * min_samples_leaf for t in totals]
    hists = [_histograms(bins, stride, wr, w, r) for r in nodes]
    if parent_slot is not None:
        # The larger child of a pair (the right on a tie) is its parent minus its sibling.
        for s in range(0, n_nodes, 2):
            large = s if totals[s][0] > totals[s + 1][0] else s + 1
            if splittable[large]:
                parent = _histograms(bins, stride, wr, w, np.flatnonzero(parent_slot == s // 2))
                hists[large] = parent - hists[large ^ 1]
    out = []
    for s in range(n_nodes):
        total_n, total_w, total_s = totals[s]
        best = None

        def consider(feature, threshold, direction, left, b):
            nonlocal best
            n_left, w_left, s_left = left
            w_right = total_w - w_left
            if (n_left < min_samples_leaf or total_n - n_left < min_samples_leaf
                    or w_left <= 0 or w_right <= 0
                    or w_left < min_weight_leaf or w_right < min_weight_leaf):
                return
            diff = (total_s - s_left) * w_left - s_left * (total_w - w_left)
            den = w_left * (total_w - w_left)
            proxy = diff * diff / den
            if best is None or proxy > best[3]:
                best = (feature, threshold, direction, proxy, int(n_left), w_left, s_left, b)

        if splittable[s]:
            for f in range(bins.shape[1]):
                if allowed is not None and not allowed[s, f]:
                    continue
                h = hists[s][f]
                miss = h[missing_bin]
                acc, last = None, -1
                for b in range(nb[f]):
                    if h[b, 0] == 0:
                        continue
                    if acc is not None and ranges[0][f, b] > np.float32(
                            ranges[1][f, last] + F32_TOLERANCE):
                        # Between the largest value of the last bin with rows and
                        # the smallest of this one (the exact search's midpoint).
                        t = _midpoint(ranges[1][f, last], ranges[0][f, b])
                        if miss[0] == 0:
                            consider(f, t, MISSING_TO_LARGER, acc, last)
                        else:
                            consider(f, t, MISSING_RIGHT, acc, last)
                            consider(f, t, MISSING_LEFT, (acc[0] + miss[0], acc[1] + miss[1],
                                                          acc[2] + miss[2]), last)
                    if acc is not None:
                        acc = (acc[0] + h[b, 0], acc[1] + h[b, 1], acc[2] + h[b, 2])
                    else:
                        acc = (0 + h[b, 0], 0.0 + h[b, 1], 0.0 + h[b, 2])
                    last = b
                if miss[0] > 0 and acc is not None:
                    consider(f, np.inf, MISSING_RIGHT, acc, nb[f] - 1)
        out.append(best)
    return out


def _check(X, wr, w, row_slot, max_bins=16, allowed=None, min_samples_leaf=1,
           min_weight_leaf=0.0, n_threads=1, parent_slot=None, grid=None,
           unit_weights=False, finders=None, bag_mask=False):
    """The finder's splits equal the brute force's; returns how many nodes split
    (and appends the finder to ``finders`` if given). ``bag_mask``: the tree starts
    with a mask of in-bag rows even where every row has a slot (a root of every row
    then counts its rows, as a subsample that kept every row)."""
    X32, bins, nb, ranges, missing_bin = _binned(X, max_bins)
    stats = np.empty(X32.shape[0], dtype=ROW_STAT_DTYPE)
    stats["wr"], stats["w"] = wr, w
    finder = HistogramSplitFinder(bins, nb, *ranges, missing_bin, n_threads)
    got = finder.level_splits(stats, row_slot, allowed, min_samples_leaf, min_weight_leaf,
                              parent_slot=parent_slot, grid=grid,
                              unit_weights=unit_weights, bag_mask=bag_mask)
    if finders is not None:
        finders.append(finder)
    expected = brute_force_hist(bins, nb, ranges, missing_bin, wr, w, row_slot, allowed,
                                min_samples_leaf, min_weight_leaf, parent_slot)
    assert got.shape[0] == len(expected)
    n_split = 0
    for s, (g, e) in enumerate(zip(got, expected)):
        if e is None:
            assert g["feature"] == -1, f"node {s}: found {g}, brute force found none"
            continue
        n_split += 1
        found = (int(g["feature"]), float(g["threshold"]), int(g["missing_go_left"]),
                 float(g["proxy"]), int(g["left_n"]), float(g["left_w"]), float(g["left_s"]),
                 int(g["bin"]))
        assert found == tuple(e), f"node {s}: finder {found} != brute force {tuple(e)}"
        # The threshold on the raw values and the bin on the bins send the same rows
        # left, and they are the left child the statistics describe.
        rows = np.flatnonzero(row_slot == s)
        x = X32[rows, found[0]].astype(np.float64)
        go_left = x <= found[1]
        on_bins = bins[rows, found[0]] <= found[7]
        missing = np.isnan(x)
        go_left[missing] = on_bins[missing] = found[2] == MISSING_LEFT
        np.testing.assert_array_equal(go_left, on_bins)
        assert int(go_left.sum()) == found[4], f"node {s}: threshold and left count disagree"
    return n_split


DATA_KINDS = ["continuous", "ties", "nan", "special"]
WEIGHT_KINDS = ["unit", "float64", "zeros"]


@pytest.mark.parametrize("data_kind", DATA_KINDS)
@pytest.mark.parametrize("weight_kind", WEIGHT_KINDS)
@pytest.mark.parametrize("max_bins", [2, 7, 255])
def test_root_against_brute_force(data_kind, weight_kind, max_bins):
    X, r = _data(1, 300, 5, data_kind)
    w = _weights(weight_kind, 300, 2)
    row_slot = np.zeros(300, dtype=np.int32)
    for msl in (1, 3, 40):
        _check(X, w * r, w, row_slot, max_bins=max_bins, min_samples_leaf=msl)


@pytest.mark.parametrize("data_kind", DATA_KINDS)
@pytest.mark.parametrize("weight_kind", WEIGHT_KINDS)
@pytest.mark.parametrize("n_nodes", [2, 7, 40])
def test_levels_against_brute_force(data_kind, weight_kind, n_nodes):
    """Several nodes, rows in no node (subsample masks)."""
    rng = np.random.default_rng(n_nodes)
    n = 24 * n_nodes
    X, r = _data(3, n, 4, data_kind)
    w = _weights(weight_kind, n, 4)
    row_slot = rng.integers(0, n_nodes, size=n).astype(np.int32)
    row_slot[rng.random(n) < 0.1] = -1
    assert _check(X, w * r, w, row_slot, max_bins=32, min_samples_leaf=2) > 0.8 * n_nodes


@pytest.mark.parametrize("data_kind", DATA_KINDS)
@pytest.mark.parametrize("weight_kind", WEIGHT_KINDS)
def test_derived_siblings_against_brute_force(data_kind, weight_kind):
    """Below a parent level: the smaller child of each pair from its rows, the larger
    from its parent's histogram minus its sibling's (equal sizes: the left built)."""
    rng = np.random.default_rng(11)
    n = 600
    X, r = _data(4, n, 4, data_kind)
    w = _weights(weight_kind, n, 5)
    parent = rng.integers(0, 5, size=n).astype(np.int32)
    parent[rng.random(n) < 0.1] = -1
    child = np.where(parent >= 0, 2 * parent + (rng.random(n) < 0.3 + 0.1 * parent), -1)
    # One pair of equal sizes.
    rows = np.flatnonzero(parent == 0)
    child[rows] = np.where(np.arange(rows.size) < rows.size // 2, 0, 1)
    if rows.size % 2:
        child[rows[-1]] = -1
        parent[rows[-1]] = -1
    child = child.astype(np.int32)
    for msl in (1, 5):
        assert _check(X, w * r, w, child, max_bins=24, min_samples_leaf=msl,
                      parent_slot=parent) > 5


@pytest.mark.parametrize("weight_kind", WEIGHT_KINDS)
@pytest.mark.parametrize("n_threads", [2, 3])
def test_derived_siblings_on_threads_against_brute_force(weight_kind, n_threads):
    """A level of ten nodes of six features of 256 bins (15,360 bins: from
    ``MIN_PARALLEL_BINS`` on, its derived histograms and scans run on the threads,
    each (node, feature) task deriving the histogram it scans): the brute force's
    splits, with a feature mask."""
    rng = np.random.default_rng(12)
    n = 6000
    X, r = _data(6, n, 6, "nan")
    w = _weights(weight_kind, n, 7)
    parent = rng.integers(0, 5, size=n).astype(np.int32)
    parent[rng.random(n) < 0.05] = -1
    child = np.where(parent >= 0, 2 * parent + (rng.random(n) < 0.3 + 0.1 * parent),
                     -1).astype(np.int32)
    allowed = (rng.random((10, 6)) < 0.7).astype(np.uint8)
    for mask in (None, allowed):
        assert _check(X, w * r, w, child, max_bins=255, parent_slot=parent,
                      allowed=mask, n_threads=n_threads) > 5


@pytest.mark.parametrize("data_kind", DATA_KINDS)
def test_minimum_leaf_weight_and_feature_masks(data_kind):
    X, r = _data(5, 400, 4, data_kind)
    w = _weights("float64", 400, 6)
    rng = np.random.default_rng(7)
    row_slot = rng.integers(0, 3, size=400).astype(np.int32)
    total = w.sum()
    for fraction in (0.01, 0.1, 0.3):
        _check(X, w * r, w, row_slot, max_bins=20, min_weight_leaf=fraction * total / 3)
    allowed = (rng.random((3, 4)) < 0.5).astype(np.uint8)
    allowed[:, 0] = 0
    _check(X, w * r, w, row_slot, max_bins=20, allowed=allowed)
    assert _check(X, w * r, w, row_slot, allowed=np.zeros((3, 4), np.uint8)) == 0


def test_tie_break_lowest_feature_then_lowest_threshold_then_missing_right():
    X = np.array([[1, 1, 5], [2, 2, 6], [3, 3, 7], [4, 4, 8]], dtype=float)
    r = np.array([0.5, -0.5, -0.5, 0.5])
    w = np.ones(4)
    row_slot = np.zeros(4, dtype=np.int32)
    _, bins, nb, ranges, mb = _binned(X, 255)
    best = brute_force_hist(bins, nb, ranges, mb, r, w, row_slot)[0]
    assert best[0] == 0 and best[1] == 1.5
    _check(X, r, w, row_slot, max_bins=255)
    X2 = np.array([[1.0], [2.0], [np.nan], [3.0], [4.0]])
    r2 = np.array([1.0, 1.0, 0.0, -1.0, -1.0])
    _, bins, nb, ranges, mb = _binned(X2, 255)
    best = brute_force_hist(bins, nb, ranges, mb, r2, np.ones(5),
                            np.zeros(5, dtype=np.int32))[0]
    assert best[2] == MISSING_RIGHT
    _check(X2, r2, np.ones(5), np.zeros(5, dtype=np.int32), max_bins=255)


def test_more_rows_than_int32_indices_are_refused():
    """The histogram path indexes rows as int32 (the grower's partition, the gathered
    rows), as the exact path does: a finder over 2**31 rows is refused with the
    exact path's message before anything per row is allocated (the bins below are
    2 GiB of untouched virtual memory)."""
    n = 2**31
    bins = np.empty((n, 1), dtype=np.uint8, order="F")
    ranges = (np.zeros((1, 4), dtype=np.float32), np.zeros((1, 4), dtype=np.float32))
    with pytest.raises(ValueError, match=r"at most 2\*\*31 - 1 samples are supported, got 2147483648"):
        HistogramSplitFinder(bins, np.ones(1, dtype=np.int32), *ranges, 4, 1)


def test_threads_build_the_same_histograms():
    """A level long enough for several threads: the brute force's answer."""
    X, r = _data(9, 60000, 20, "nan")
    w = _weights("float64", 60000, 9)
    row_slot = np.random.default_rng(9).integers(0, 4, size=60000).astype(np.int32)
    _check(X, w * r, w, row_slot, max_bins=255, n_threads=2)


@pytest.mark.parametrize("weight_kind", ["unit", "float64"])
@pytest.mark.parametrize("d, n, n_threads", [
    (1, 400, 1), (2, 400, 1), (3, 400, 1), (5, 400, 1), (8, 400, 1),
    (11, 100000, 3),   # 1.1M values: three threads, groups of 4, 4 and 3 features
])
def test_feature_groups_against_brute_force(weight_kind, d, n, n_threads):
    """The histograms of up to four features built in one pass over a node's rows
    (group sizes 1 to 4, every row in the root, its counts taken or counted, or
    rows gathered per node): the brute force's splits."""
    X, r = _data(11, n, d, "nan")
    w = _weights(weight_kind, n, 11)
    for bag_mask in (False, True):
        _check(X, w * r, w, np.zeros(n, dtype=np.int32), max_bins=255,
               n_threads=n_threads, bag_mask=bag_mask)
    row_slot = np.random.default_rng(d).integers(-1, 3, size=n).astype(np.int32)
    _check(X, w * r, w, row_slot, max_bins=255, n_threads=n_threads)


@pytest.fixture
def row_blocks():
    """Row blocks of ``rows`` rows wherever the grid allows (``_set_row_blocks``),
    the fit's settings restored afterwards."""
    from gbc_core import _histogram_splitter

    def force(rows):
        _histogram_splitter._set_row_blocks(rows, True)

    default = _histogram_splitter._set_row_blocks()
    assert default == (_histogram_splitter.ROW_BLOCK_ROWS, False)
    yield force
    _histogram_splitter._set_row_blocks(*default)


def test_row_block_plan():
    """The row blocks of a node follow from its row count alone (one block per
    65,536 rows, at most 16, none below two); a level takes them where its (node,
    feature group) tasks are fewer than two per thread, never on one thread nor on
    two with 28 features, and within the finder's buffers (at most 32 blocks past
    each node's first, and 16 MiB)."""
    from gbc_core._histogram_splitter import ROW_BLOCK_ROWS as R, row_block_plan

    assert R == 65536
    n = 10_000_000
    for rows, blocks in [(2 * R - 1, 1), (2 * R, 2), (3 * R + 5, 3), (16 * R, 16),
                         (40 * R, 16), (n, 16)]:
        # On 16 threads with 28 features, the root: 16 tasks of 1 or 2 features.
        assert row_block_plan([rows], 28, 16, n).tolist() == [blocks]
        # The same blocks with 8 features on 4 threads (4 tasks of 2 features).
        assert row_block_plan([rows], 8, 4, n).tolist() == [blocks]
        assert row_block_plan([rows], 28, 1, n).tolist() == [1]
        assert row_block_plan([rows], 28, 2, n).tolist() == [1]
    # Nodes not built from their rows have none; two nodes of 28 features on 16
    # threads make 32 tasks: no blocks.
    assert row_block_plan([R * 4, -1], 28, 16, n).tolist() == [4, 0]
    assert row_block_plan([R * 4, -1, R * 4, -1], 28, 16, n).tolist() == [1, 0, 1, 0]
    # The buffers: past each node's first block, at most 32 (nodes take them in
    # order while there is room).
    assert row_block_plan([n // 4] * 3, 3, 16, n).tolist() == [16, 16, 1]
    assert row_block_plan([n // 4, 3 * R, n // 4], 3, 16, n).tolist() == [16, 3, 16]
    # 16 MiB: 4 buffers of 680 features x 256 bins x 24 bytes (4.2 MB each).
    assert (16 << 20) // (680 * 256 * 24) == 4
    assert row_block_plan([16 * R], 680, 256, n).tolist() == [1]   # 15 buffers: no room
    assert row_block_plan([5 * R], 680, 256, n).tolist() == [5]
    # A finder's buffers (6,144 bytes per feature with 255 bins): none where it
    # never takes blocks (one thread; 28 features on 2 or 4 threads: 8 groups), 14
    # at 1M rows (2.4 MB with 28 features), at most 32 (5.5 MB).
    ranges = np.zeros((28, 255), dtype=np.float32)
    for rows, n_threads, buffers in [(1_000_000, 1, 0), (1_000_000, 2, 0),
                                     (1_000_000, 4, 0), (1_000_000, 8, 14),
                                     (1_000_000, 16, 14),
                                     (100_000, 16, 0), (3_000_000, 16, 32)]:
        bins = np.zeros((rows, 28), dtype=np.uint8, order="F")
        finder = HistogramSplitFinder(bins, np.ones(28, dtype=np.int32), ranges, ranges,
                                      255, n_threads)
        assert finder.row_block_buffers == buffers, (rows, n_threads)


@pytest.mark.parametrize("weight_kind", ["unit", "float64", "zeros"])
@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_row_blocks_against_brute_force(row_blocks, weight_kind, n_threads):
    """Nodes built in row blocks (forced, blocks of 97 rows: every root and level
    here; the buffers hold 32, so the third of three large nodes is built without)
    on the grid the grower puts the rows on: the brute force's splits, bit for bit,
    for every row in the root (read in place), rows gathered per node, and larger
    children derived from their parents."""
    from gbc_core._histogram_splitter import row_block_plan

    row_blocks(97)
    n, d = 6000, 7
    X, r = _data(17, n, d, "nan")
    w = _weights(weight_kind, n, 17)
    # On the grid: w * r whole numbers of 2^-20, w of 2^-8.
    unit_s, unit_w = 2.0 ** -20, 2.0 ** -8
    w = np.round(w / unit_w) * unit_w if weight_kind != "unit" else w
    wr = np.round(w * r / unit_s) * unit_s
    unit = weight_kind == "unit"
    finders = []
    kw = dict(max_bins=255, n_threads=n_threads, grid=(unit_s, unit_w),
              unit_weights=unit, finders=finders)
    _check(X, wr, w, np.zeros(n, dtype=np.int32), **kw)
    rng = np.random.default_rng(5)
    row_slot = rng.integers(-1, 3, size=n).astype(np.int32)
    assert _check(X, wr, w, row_slot, min_samples_leaf=3, **kw) == 3
    sizes = [int(np.sum(row_slot == s)) for s in range(3)]
    assert row_block_plan(sizes, d, n_threads, n).tolist() == [
        min(16, sizes[0] // 97), min(16, sizes[1] // 97), 1]
    parent = rng.integers(0, 3, size=n).astype(np.int32)
    child = (2 * parent + (rng.random(n) < 0.35)).astype(np.int32)
    assert _check(X, wr, w, child, parent_slot=parent, min_samples_leaf=3, **kw) >= 5
    # Built in blocks: the root, two of the three nodes, then the parents' level
    # (three nodes of 2,000 rows: two) and the smaller child of each pair.
    assert [f.row_block_nodes for f in finders] == [1, 2, 2 + 3]
    # Without a grid (sums that depend on their order) no level takes them.
    finders.clear()
    _check(X, w * r, w, row_slot, max_bins=255, n_threads=n_threads, finders=finders)
    assert finders[0].row_block_nodes == 0


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("tail_weight", [1.0, 0.5])
def test_weight_check_on_threads_sees_every_row(tail_weight, n_threads):
    """From 200,000 rows the finder tells unit weights from others on every thread:
    weights of 1 but in the last rows (the last thread's block) are weights, not
    counts, whatever the number of threads; all ones take the counts."""
    n = 210000
    X, r = _data(13, n, 2, "nan")
    w = np.ones(n)
    w[-1000:] = tail_weight
    _check(X, w * r, w, np.zeros(n, dtype=np.int32), max_bins=64, n_threads=n_threads)


def test_reduce_hook_sees_and_replaces_the_collected_histograms():
    """``reducer`` gets the collected nodes' histograms (the brute force's), and what
    it leaves there is what the split is chosen from."""
    X, r = _data(12, 500, 3, "nan")
    w = _weights("float64", 500, 12)
    X32, bins, nb, ranges, mb = _binned(X, 32)
    stats = np.empty(500, dtype=ROW_STAT_DTYPE)
    stats["wr"], stats["w"] = w * r, w
    row_slot = np.random.default_rng(1).integers(0, 2, size=500).astype(np.int32)
    seen = []

    def record(histograms, collected):
        seen.append((histograms.copy(), collected.copy()))

    finder = HistogramSplitFinder(bins, nb, *ranges, mb, 1)
    finder.reducer = record
    finder.level_splits(stats, row_slot)
    (h, collected), = seen
    np.testing.assert_array_equal(collected, [0, 1])
    for s in (0, 1):
        expected = _histograms(bins, mb + 1, w * r, w, np.flatnonzero(row_slot == s))
        np.testing.assert_array_equal(h["n"][s], expected[..., 0])
        np.testing.assert_array_equal(h["w"][s], expected[..., 1])
        np.testing.assert_array_equal(h["s"][s], expected[..., 2])

    def erase(histograms, collected):
        histograms[collected] = 0

    finder.reducer = erase
    assert (finder.level_splits(stats, row_slot)["feature"] == -1).all()


@pytest.mark.parametrize("blocks", [None, 97])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_root_of_every_row_takes_its_columns_counts(row_blocks, blocks, n_threads):
    """A root of every row with unit weights adds only w * r and takes its counts
    (and weights) from the columns' counts, counted once per bins: its histograms
    are the brute force's, bit for bit, built in one pass or in row blocks (on the
    grid); the finders of ``with_threads`` share the counts; a tree with rows out of
    the bag, or with weights, counts its rows as before and leaves them uncounted."""
    if blocks:
        row_blocks(blocks)
    n, d = 6000, 7
    X, r = _data(21, n, d, "nan")
    unit_s = 2.0 ** -20
    wr = np.round(r / unit_s) * unit_s
    w = np.ones(n)
    X32, bins, nb, ranges, mb = _binned(X, 255)
    stats = np.empty(n, dtype=ROW_STAT_DTYPE)
    stats["wr"], stats["w"] = wr, w
    seen = []

    def record(histograms, collected):
        seen.append(histograms[collected].copy())

    finder = HistogramSplitFinder(bins, nb, *ranges, mb, n_threads)
    assert finder.bin_counts() is None
    side = finder.with_threads(2)
    finder.reducer = side.reducer = record
    root = np.zeros(n, dtype=np.int32)
    finder.level_splits(stats, root, unit_weights=True, grid=(unit_s, 1.0))
    expected = _histograms(bins, mb + 1, wr, w, np.arange(n))
    counts = np.stack([np.bincount(bins[:, f], minlength=mb + 1) for f in range(d)])
    np.testing.assert_array_equal(finder.bin_counts(), counts)
    np.testing.assert_array_equal(side.bin_counts(), counts)   # shared, not recounted
    side.level_splits(stats, root, unit_weights=True, grid=(unit_s, 1.0))
    assert finder.row_block_nodes == side.row_block_nodes == (1 if blocks else 0)
    for h in seen:
        np.testing.assert_array_equal(h["n"][0], expected[..., 0])
        np.testing.assert_array_equal(h["w"][0], expected[..., 1])
        np.testing.assert_array_equal(h["s"][0], expected[..., 2])
    # Rows out of the bag, a mask of every row, or weights: counted from the rows,
    # the columns' counts not taken (nor counted).
    inside = np.flatnonzero(np.arange(n) % 5 != 0)
    some = np.where(np.arange(n) % 5 != 0, 0, -1).astype(np.int32)
    weighted = stats.copy()
    weighted["w"][::7] = 2.0
    weighted["wr"][::7] *= 2.0
    for row_slot, st, unit, rows, mask in [(some, stats, True, inside, False),
                                           (root, stats, True, np.arange(n), True),
                                           (root, weighted, False, np.arange(n), False)]:
        fresh = HistogramSplitFinder(bins, nb, *ranges, mb, n_threads)
        fresh.reducer = record
        seen.clear()
        fresh.level_splits(st, row_slot, unit_weights=unit, grid=(unit_s, 1.0),
                           bag_mask=mask)
        assert fresh.bin_counts() is None
        expected = _histograms(bins, mb + 1, st["wr"], st["w"], rows)
        np.testing.assert_array_equal(seen[0]["n"][0], expected[..., 0])
        np.testing.assert_array_equal(seen[0]["w"][0], expected[..., 1])
        np.testing.assert_array_equal(seen[0]["s"][0], expected[..., 2])


def test_column_counts_are_counted_once_and_only_for_their_bins():
    """Finders that share the columns' counts (``with_threads``), their first trees
    started at once from threads of their own (as side-by-side class trees are),
    take the same counts (the first to start counts them, under a lock) and find
    the splits of a tree that counts its rows; counts of other bins, or of another
    stride, are refused."""
    from concurrent.futures import ThreadPoolExecutor
    from gbc_core._histogram_splitter import _BinCounts

    n, d = 250000, 3   # from 200,000 rows the counts are taken on every thread
    X, r = _data(23, n, d, "nan")
    X32, bins, nb, ranges, mb = _binned(X, 64)
    stats = np.empty(n, dtype=ROW_STAT_DTYPE)
    stats["wr"], stats["w"] = r, 1.0
    finder = HistogramSplitFinder(bins, nb, *ranges, mb, 2)
    copies = [finder.with_threads(1) for _ in range(4)]
    root = np.zeros(n, dtype=np.int32)
    with ThreadPoolExecutor(max_workers=4) as pool:
        splits = list(pool.map(lambda f: f.level_splits(stats, root, unit_weights=True),
                               copies))
    counts = np.stack([np.bincount(bins[:, f], minlength=mb + 1) for f in range(d)])
    for f in [finder] + copies:
        np.testing.assert_array_equal(f.bin_counts(), counts)
    expected = finder.level_splits(stats, root, unit_weights=True, bag_mask=True)
    for got in splits:
        np.testing.assert_array_equal(got, expected)
    other = np.asfortranarray(bins.copy())
    with pytest.raises(ValueError, match="counts must be the bin counts of a finder on "
                                         "the same bins"):
        HistogramSplitFinder(other, nb, *ranges, mb, 1, None, _BinCounts(bins, mb + 1))
    with pytest.raises(ValueError, match="counts must be the bin counts"):
        HistogramSplitFinder(bins, nb, *ranges, mb, 1, None, _BinCounts(bins, mb))


# ------------------------------------------------------------------ fitted trees
def _special_values(n, seed):
    """Columns with values on and next to bin edges, -0.0, +-inf and NaN."""
    rng = np.random.default_rng(seed)
    base = rng.choice(np.linspace(-2, 2, 9).astype(np.float32), size=n)
    X = np.empty((n, 5), dtype=np.float32)
    X[:, 0] = base
    X[:, 1] = rng.choice(np.array([-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan],
                                  dtype=np.float32), size=n)
    X[:, 2] = rng.normal(size=n).astype(np.float32)
    X[:, 3] = rng.normal(size=n).astype(np.float32)
    X[rng.random(n) < 0.1, 3] = np.nan
    X[:, 4] = rng.choice(np.float32([1.0, 1.0 + 2**-23, 1.0 + 2**-22, 1.5, 3.0]), size=n)
    return X


def test_routing_by_stored_thresholds_matches_the_binned_partition():
    """Every training row (in bag or out of bag) ends in the leaf the partition on
    the bins put it in when routed by the stored threshold on its raw value."""
    n = 6000
    X = _special_values(n, 0)
    # Rows whose values are the continuous features' edges and their float32
    # neighbours (the edges are float64; x <= edge is tested on float32 x).
    mapper = BinMapper(max_bins=8).fit(np.asfortranarray(X), 1)
    for f in (2, 3):
        edges = np.asarray(mapper.thresholds[f])
        for k, e in enumerate(edges):
            e32 = np.float32(e)
            vals = [e32, np.nextafter(e32, np.float32(-np.inf)),
                    np.nextafter(e32, np.float32(np.inf))]
            X[30 * k + 3 * f: 30 * k + 3 * f + 3, f] = vals
    X = np.asfortranarray(X)
    rng = np.random.default_rng(1)
    y = (rng.random(n) < 0.5).astype(float)
    params = dict(split_method="hist", max_bins=8, n_threads=1)
    for subsample in (None, 0.7):
        finder = make_split_finder(X, params)
        grower = TreeGrower(X, finder, 6, 2, 1, 0.0, 5, 1)
        stats = np.empty(n, dtype=ROW_STAT_DTYPE)
        r = y - 0.5 + rng.normal(scale=0.1, size=n)
        stats["wr"], stats["w"] = r, 1.0
        mask = None if subsample is None else (rng.random(n) < subsample).astype(np.uint8)
        grower.grow(stats, r, mask, 7)
        nodes = grower.nodes_array()
        assert (nodes["feature"] >= 0).sum() > 20
        leaves = _route(nodes, X)
        np.testing.assert_array_equal(leaves, np.asarray(grower.node_of_row))


def _route(nodes, X):
    """The leaf of every row by the thresholds (float32 x <= threshold32, NaN by
    missing_go_left): the predictor's rule."""
    out = np.empty(X.shape[0], dtype=np.int64)
    for i in range(X.shape[0]):
        k = 0
        while nodes[k]["feature"] >= 0:
            x = X[i, nodes[k]["feature"]]
            left = bool(nodes[k]["missing_go_left"]) if np.isnan(x) else (
                float(x) <= float(nodes[k]["threshold"]))
            assert left == (bool(nodes[k]["missing_go_left"]) if np.isnan(x)
                            else x <= nodes[k]["threshold32"])
            k = nodes[k]["left"] if left else nodes[k]["right"]
        out[i] = k
    return out


def test_model_apply_matches_training_leaves():
    """The fitted model's apply (raw values, stored thresholds) on the training rows
    gives the leaves whose values the fit computed: the training loss of the last
    iteration equals the loss of predict_proba."""
    X = _special_values(3000, 2)
    y = (np.nan_to_num(X[:, 2]) + np.random.default_rng(3).normal(size=3000) > 0).astype(int)
    model = GradientBoostingClassifier(split_method="hist", max_bins=6, n_estimators=15,
                                       max_depth=4, random_state=0).fit(X, y)
    p = model.predict_proba(X)[:, 1]
    loss = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    # train_score_ is in scikit-learn's units: twice the mean log-loss for two classes.
    np.testing.assert_allclose(model.train_score_[-1], 2 * loss, rtol=1e-12)


def _grid_data(n, d, seed, n_values=40, nan=True):
    """Features with at most ``n_values`` distinct values (binning is exact)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_values, size=(n, d)).astype(np.float32) * np.float32(0.37)
    if nan:
        X[rng.random((n, d)) < 0.05] = np.nan
    logit = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) * (np.nan_to_num(X[:, 2]) > 5)
    return X, logit, rng


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("options", [
    {}, {"subsample": 0.7, "random_state": 3}, {"max_features": 3, "random_state": 4},
    {"min_samples_leaf": 7, "max_depth": 4}, {"min_weight_fraction_leaf": 0.05},
])
def test_hist_equals_exact_where_binning_is_exact(n_classes, options):
    X, logit, rng = _grid_data(3000, 6, 5)
    if n_classes == 2:
        y = (logit + rng.logistic(size=3000) > 2).astype(int)
    else:
        y = np.digitize(logit + rng.logistic(size=3000), [1, 4])
    w = rng.uniform(0.5, 2.0, size=3000)  # continuous weights: no tie between splits
    kw = dict(n_estimators=25, learning_rate=0.3, **options)
    exact = GradientBoostingClassifier(**kw).fit(X, y, sample_weight=w)
    hist = GradientBoostingClassifier(split_method="hist", max_bins=40, **kw).fit(
        X, y, sample_weight=w)
    np.testing.assert_allclose(hist.predict_proba(X), exact.predict_proba(X), rtol=0, atol=1e-9)
    for a, b in zip(exact.booster_.trees(), hist.booster_.trees()):
        np.testing.assert_array_equal(a["feature"], b["feature"])
        # The exact search's thresholds, bit for bit.
        np.testing.assert_array_equal(a["threshold"], b["threshold"])
        np.testing.assert_array_equal(a["missing_go_left"], b["missing_go_left"])


def test_hist_equals_exact_with_class_weights_and_early_stopping():
    X, logit, rng = _grid_data(4000, 5, 6)
    y = (logit + rng.logistic(size=4000) > 2).astype(int)
    w = rng.uniform(0.5, 2.0, size=4000)
    X_val, logit_val, _ = _grid_data(1000, 5, 7)
    y_val = (logit_val + rng.logistic(size=1000) > 2).astype(int)
    for kw, fit_kw in [
        (dict(class_weight={0: 1.0, 1: 2.5}), {}),
        (dict(n_iter_no_change=3, validation_fraction=0.2, random_state=1), {}),
        (dict(n_iter_no_change=3), {"eval_set": (X_val, y_val)}),
    ]:
        kw = dict(n_estimators=200, learning_rate=0.5, **kw)
        exact = GradientBoostingClassifier(**kw).fit(X, y, sample_weight=w, **fit_kw)
        hist = GradientBoostingClassifier(split_method="hist", max_bins=40, **kw).fit(
            X, y, sample_weight=w, **fit_kw)
        assert hist.n_estimators_ == exact.n_estimators_
        np.testing.assert_allclose(hist.predict_proba(X_val), exact.predict_proba(X_val),
                                   rtol=0, atol=1e-9)
        if "n_iter_no_change" in kw:
            assert hist.n_estimators_ < 200


def test_hist_auc_close_to_exact_on_continuous_data():
    metrics = require("sklearn.metrics")
    datasets = require("sklearn.datasets")
    X, y = datasets.make_classification(30000, 20, n_informative=10, random_state=0)
    X = X.astype(np.float32)
    Xtr, ytr, Xte, yte = X[:20000], y[:20000], X[20000:], y[20000:]
    auc = {}
    for method in ("exact", "hist"):
        model = GradientBoostingClassifier(split_method=method, n_estimators=100,
                                           random_state=0).fit(Xtr, ytr)
        auc[method] = metrics.roc_auc_score(yte, model.predict_proba(Xte)[:, 1])
    assert abs(auc["hist"] - auc["exact"]) <= 0.003, auc


def test_n_jobs_gives_the_same_model():
    """Large enough for the parallel histograms, partition and routing."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(260000, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.02] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=260000) > 0).astype(int)
    models = [GradientBoostingClassifier(split_method="hist", n_estimators=4, n_jobs=j,
                                         subsample=0.9, random_state=0).fit(X, y)
              for j in (1, 2)]
    # (The model files differ in the stored n_jobs only.)
    trees = [np.concatenate(m.booster_.trees()).tobytes() for m in models]
    assert trees[0] == trees[1]
    assert models[0].train_score_.tobytes() == models[1].train_score_.tobytes()


@pytest.mark.parametrize("options", [
    {},
    {"sample_weight": True, "subsample": 0.7},
    {"max_leaf_nodes": 9, "max_depth": None, "max_features": 4},
    {"n_classes": 3},
    {"sample_weight": True, "monotonic_cst": [1, 0, 0, -1, 0, 0],
     "categorical_features": [5]},
])
def test_row_blocks_give_the_same_model(row_blocks, monkeypatch, options):
    """A fit whose large nodes are built in row blocks (forced, blocks of 500 rows)
    is the fit without them, bit for bit, on 1, 2 and 3 threads: every sum is on
    the grid, exact in any order."""
    from gbc_core._split_methods import SplitMethod

    options = dict(options)
    n_classes = options.pop("n_classes", 2)
    weighted = options.pop("sample_weight", False)
    rng = np.random.default_rng(n_classes)
    n = 12000
    X = rng.normal(size=(n, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 5] = np.round(X[:, 5])
    y = np.digitize(np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1])
                    + rng.normal(size=n), np.linspace(-1, 1, n_classes - 1))
    w = rng.uniform(0.5, 2.0, size=n) if weighted else None
    kw = {"split_method": "hist", "n_estimators": 5, "max_depth": 4, "random_state": 0,
          **options}
    finders = []
    make_finder = SplitMethod.make_finder

    def recorded(self, X, params):
        finders.append(make_finder(self, X, params))
        return finders[-1]

    monkeypatch.setattr(SplitMethod, "make_finder", recorded)

    def fit(n_jobs):
        model = GradientBoostingClassifier(n_jobs=n_jobs, **kw).fit(X, y, sample_weight=w)
        return (np.concatenate(model.booster_.trees()).tobytes(),
                model.train_score_.tobytes(), model.predict_proba(X).tobytes())

    without = fit(1)
    assert finders[-1].row_block_nodes == 0
    row_blocks(500)
    for n_jobs in (1, 2, 3):
        assert fit(n_jobs) == without, n_jobs
        if n_classes == 2:   # (side by side, the classes' trees use copies of it)
            assert finders[-1].row_block_nodes > 0


@pytest.mark.parametrize("n_classes, n_jobs", [(3, 2), (5, 2), (3, 4), (4, 2), (3, 7), (4, 6)])
@pytest.mark.parametrize("options", [
    {},
    {"subsample": 0.7, "max_features": 3},
    {"max_leaf_nodes": 5, "max_depth": None, "leaf_solver": "exact"},
    {"n_iter_no_change": 2, "validation_fraction": 0.2, "n_estimators": 30},
])
def test_classes_grown_side_by_side_give_the_one_thread_model(n_classes, n_jobs, options):
    """K classes on several threads: the trees of an iteration grown side by side
    (on min(n_jobs, K) growers sharing the threads out, and those left over, K mod
    n_jobs, on every thread) are the trees of a one-thread fit, bit for bit."""
    rng = np.random.default_rng(n_classes)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.digitize(np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1])
                    + rng.normal(size=3000), np.linspace(-1.5, 1.5, n_classes - 1))
    kw = {"split_method": "hist", "n_estimators": 6, "random_state": 3, **options}
    one, side = (GradientBoostingClassifier(n_jobs=j, **kw).fit(X, y) for j in (1, n_jobs))
    assert one.n_estimators_ == side.n_estimators_
    # (The model files differ in the stored n_jobs only.)
    assert (np.concatenate(one.booster_.trees()).tobytes()
            == np.concatenate(side.booster_.trees()).tobytes())
    assert one.train_score_.tobytes() == side.train_score_.tobytes()
    assert one.predict_proba(X).tobytes() == side.predict_proba(X).tobytes()


@pytest.mark.parametrize("split_method, leaf_solver", [
    ("hist", "newton"), ("exact", "newton"), ("hist", "exact")])
def test_lanes_are_kept_for_the_fit_and_share_the_softmax_pass(split_method, leaf_solver,
                                                               monkeypatch):
    """The class growers' lanes are the same threads for the whole fit, each
    iteration's trees and its softmax pass run on them (two hand-overs an
    iteration; the pass not after a tree left over to every thread), and their
    threads end with the fit, also when it fails. With
    enough rows for the pass's parallel loop (200,000) on lanes of two threads,
    the model is the one-thread fit's, bit for bit; so with the exact leaf solve,
    whose log-odds of each class the lanes make after their share of the pass."""
    import threading

    from gbc_core import _boosting

    rng = np.random.default_rng(8)
    n = 200_003
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n), [-1.0, 0.0, 1.0])
    kw = dict(split_method=split_method, leaf_solver=leaf_solver, n_estimators=2,
              max_depth=2, random_state=1)
    runs = []
    real_run = _boosting._Lanes.run

    def spy(self, functions, stop=None):
        runs.append((tuple(t for t in self.threads),
                     tuple(worker.ident for worker in self._workers)))
        return real_run(self, functions, stop)

    monkeypatch.setattr(_boosting._Lanes, "run", spy)
    one = GradientBoostingClassifier(n_jobs=1, **kw).fit(X, y)
    assert runs == []
    side = GradientBoostingClassifier(n_jobs=8, **kw).fit(X, y)
    assert len(runs) == 2 * 2 and len(set(runs)) == 1 and runs[0][0] == (2, 2, 2, 2)
    assert (np.concatenate(one.booster_.trees()).tobytes()
            == np.concatenate(side.booster_.trees()).tobytes())
    assert one.train_score_.tobytes() == side.train_score_.tobytes()
    # A tree left over (4 classes, 3 lanes) is grown on every thread, and the pass
    # after it on those threads: one hand-over to the lanes an iteration.
    runs.clear()
    left_over = GradientBoostingClassifier(n_jobs=3, **kw).fit(X, y)
    assert len(runs) == 2 and runs[0][0] == (1, 1, 1)
    assert (np.concatenate(left_over.booster_.trees()).tobytes()
            == np.concatenate(one.booster_.trees()).tobytes())
    assert left_over.train_score_.tobytes() == one.train_score_.tobytes()
    assert not any(t.name.startswith("gbc-core-lane") for t in threading.enumerate())

    real_iteration = _boosting._iteration

    def fails_second(m, *args, **kwargs):
        if m == 1:
            raise RuntimeError("the second iteration failed")
        return real_iteration(m, *args, **kwargs)

    monkeypatch.setattr(_boosting, "_iteration", fails_second)
    with pytest.raises(RuntimeError, match="second iteration failed"):
        GradientBoostingClassifier(n_jobs=8, **kw).fit(X, y)
    assert not any(t.name.startswith("gbc-core-lane") for t in threading.enumerate())


@pytest.mark.parametrize("options, n_jobs", [
    (dict(), 3), (dict(n_classes=4), 2), (dict(subsample=0.7, n_classes=3), 3),
    (dict(weighted=True), 2), (dict(max_leaf_nodes=6, max_depth=None), 3),
    (dict(ccp_alpha=1e-4, n_classes=3), 2), (dict(split_method="exact", max_depth=4), 3),
    (dict(split_method="exact", n_classes=5), 3), (dict(n_classes=5), 10),
    (dict(loss="exponential"), 3), (dict(monotonic_cst=[1, 0, 0]), 2)])
def test_many_rows_on_threads_give_the_one_thread_model(options, n_jobs):
    """From 200,000 rows on, the leaf sums are formed in row blocks
    (``_leaves.leaf_sum_blocks``), on the threads of the grower that grew the tree
    (10 threads, 5 classes: growers of 2 side by side): the one-thread model bit
    for bit, binary and multiclass, with subsampling, weights, best first,
    pruning, the exact finder, the exponential loss and monotonic constraints
    (whose sums NumPy forms in the same blocks)."""
    from gbc_core import _leaves

    options = dict(options)
    n_classes = options.pop("n_classes", 2)
    weighted = options.pop("weighted", False)
    n = 202_500
    assert _leaves.leaf_sum_blocks(n, 7) > 1
    rng = np.random.default_rng(23)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    score = X[:, 0] + 0.5 * X[:, 1] * (X[:, 2] > 0) + rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    w = rng.uniform(0.5, 2.0, size=n) if weighted else None
    kw = dict(n_estimators=3, max_depth=3, random_state=0, max_bins=64)
    kw.update(options)
    one, side = (GradientBoostingClassifier(n_jobs=j, **kw).fit(X, y, sample_weight=w)
                 for j in (1, n_jobs))
    assert (np.concatenate(one.booster_.trees()).tobytes()
            == np.concatenate(side.booster_.trees()).tobytes())
    assert one.train_score_.tobytes() == side.train_score_.tobytes()


@pytest.mark.parametrize("n_threads, n_classes", [(2, 5), (16, 5), (16, 3), (6, 4), (7, 7),
                                                   (3, 20), (32, 5)])
def test_side_by_side_growers_share_every_thread(n_threads, n_classes):
    """The growers of an iteration's trees use every thread of the fit, as evenly as
    they divide (16 threads, 5 classes: 4, 3, 3, 3, 3), and the fit's growers are
    built with those thread counts."""
    from gbc_core._boosting import _growers, side_by_side_threads
    from gbc_core._split_methods import method_named

    n_growers = min(n_threads, n_classes)
    shares = side_by_side_threads(n_threads, n_growers)
    # The naive rule: deal the threads out one at a time, grower after grower.
    naive = [0] * n_growers
    for t in range(n_threads):
        naive[t % n_growers] += 1
    assert shares == naive
    assert sum(shares) == n_threads and max(shares) - min(shares) <= 1

    method = method_named("hist")
    X = np.random.default_rng(0).normal(size=(50, 3)).astype(np.float32)
    params = {"n_threads": n_threads, "max_depth": 2, "min_samples_split": 2,
              "min_samples_leaf": 1, "min_weight_leaf": 0.0, "max_features": 3,
              "criterion": "friedman_mse", "min_impurity_decrease": 0.0,
              "ccp_alpha": 0.0, "max_leaf_nodes": None, "max_bins": 255}
    data = method.fit_data(X, 1.0)

    class Part:
        finder, reducer, distributed = method.make_finder(data.X, params), None, False

    grower, side = _growers(data, Part, method, params, n_classes, True)
    assert grower.n_threads == n_threads
    assert [g.n_threads for g in side] == shares
    # The grower of every thread (the trees left over) never grows beside the
    # others: its per-row buffers, and its finder's, are the first class grower's;
    # theirs are their own.
    assert grower.finder is Part.finder
    assert np.shares_memory(grower.node_of_row, side[0].node_of_row)
    assert np.shares_memory(grower.residual_buffer(), side[0].residual_buffer())
    assert np.shares_memory(grower.finder.gather_buffer(), side[0].finder.gather_buffer())
    for a, b in zip(side, side[1:]):
        assert not np.shares_memory(a.node_of_row, b.node_of_row)
        assert not np.shares_memory(a.residual_buffer(), b.residual_buffer())
        assert not np.shares_memory(a.finder.gather_buffer(), b.finder.gather_buffer())


@pytest.mark.parametrize("n_classes, n_jobs", [(5, 2), (3, 2), (7, 3)])
def test_leftover_trees_sharing_the_finder_buffers_give_the_unshared_model(
        monkeypatch, n_classes, n_jobs):
    """The trees left over (K mod n_jobs, grown on every thread) gather their rows'
    statistics in the first side-by-side finder's buffer: the model of a fit whose
    side-by-side growers have buffers of their own (none shared with the grower of
    every thread), bit for bit. (Unit weights: with weights the multinomial state
    shares its row statistics between the classes, and the trees are grown one
    after another.)"""
    from gbc_core import _boosting

    rng = np.random.default_rng(n_classes + n_jobs)
    n = 4000
    X = rng.normal(size=(n, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.digitize(np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 2])
                    + rng.normal(size=n), np.linspace(-1.5, 1.5, n_classes - 1))
    kw = {"split_method": "hist", "n_estimators": 4, "max_depth": 4, "random_state": 1,
          "n_jobs": n_jobs}
    shared = []
    original = _boosting._growers

    def recorded(data, part, *args):
        grower, side = original(data, part, *args)
        shared.append(np.shares_memory(grower.finder.gather_buffer(),
                                       side[0].finder.gather_buffer()))
        return grower, side

    def unshared(data, part, *args):
        grower, _ = original(data, part, *args)

        class Other:     # the class growers' finders copied from another finder
            finder = part.finder.with_threads(args[1]["n_threads"])
            reducer, distributed = part.reducer, part.distributed

        _, side = original(data, Other, *args)
        shared.append(any(np.shares_memory(grower.finder.gather_buffer(),
                                           g.finder.gather_buffer())
                          or np.shares_memory(grower.node_of_row, g.node_of_row)
                          for g in side))
        return grower, side

    def fit(growers):
        monkeypatch.setattr(_boosting, "_growers", growers)
        model = GradientBoostingClassifier(**kw).fit(X, y)
        return (np.concatenate(model.booster_.trees()).tobytes(),
                model.train_score_.tobytes(), model.predict_proba(X).tobytes())

    assert fit(recorded) == fit(unshared)
    assert shared == [True, False]


def test_grow_side_by_side_shares_the_trees_out():
    """Trees 0 .. n - 1 (n the largest multiple of the one-thread growers) go to
    those growers, each on its lane's thread (the same thread every iteration); the
    rest to the grower of every thread, in order; an error in a tree reaches the
    caller."""
    import threading

    from gbc_core._boosting import _grow_side_by_side, _Lanes

    seen = {}
    # Trees 0 and 1 can only pass this barrier if they are grown at the same time.
    together = threading.Barrier(2)

    def grow(k, grower):
        seen[k] = (grower, threading.get_ident())
        if k < 2:
            together.wait(timeout=30)
        return f"tree {k}"

    lanes = _Lanes([1, 1])
    try:
        assert (_grow_side_by_side(grow, 5, ["a", "b"], "all", lanes)
                == [f"tree {k}" for k in range(5)])
        assert [seen[k][0] for k in range(5)] == ["a", "b", "a", "b", "all"]
        assert seen[0][1] == seen[2][1] != seen[1][1] == seen[3][1]
        assert seen[4][1] == threading.get_ident() != seen[0][1]    # the caller's thread
        first = dict(seen)
        seen.clear()
        together.reset()
        _grow_side_by_side(grow, 5, ["a", "b"], "all", lanes)
        # The next iteration's trees of grower j on the same thread as before.
        assert [seen[k][1] for k in range(4)] == [first[k][1] for k in range(4)]
    finally:
        lanes.close()

    import time

    grown = []
    started = threading.Event()

    def fails(k, grower):
        if k == 0:
            started.wait(timeout=30)   # tree 1 is being grown when tree 0 fails
            raise ValueError("tree 0 failed")
        if k == 1:
            started.set()
            time.sleep(1.0)   # still growing when the error is seen
        grown.append(k)
        return k

    lanes = _Lanes([1, 1, 1])
    try:
        with pytest.raises(ValueError, match="tree 0 failed"):
            _grow_side_by_side(fails, 7, ["a", "b", "c"], "all", lanes)
        # Grower "b" finishes the tree it was growing (1) and starts no other (4);
        # the tree left to the caller (6) is never grown.
        assert 1 in grown and 4 not in grown and 6 not in grown
        # The lanes still work after an error; one function per lane.
        assert lanes.run([lambda: 1, lambda: 2, lambda: 3]) == [1, 2, 3]
        with pytest.raises(ValueError, match="2 functions for 3 lanes"):
            lanes.run([lambda: 1, lambda: 2])
    finally:
        lanes.close()
    assert not any(t.name.startswith("gbc-core-lane") for t in threading.enumerate())


def test_warm_start_is_a_single_fit():
    X, logit, rng = _grid_data(2000, 5, 8)
    X[:, 4] = rng.normal(size=2000)  # a continuous feature: quantile edges
    y = np.digitize(logit + rng.logistic(size=2000), [1, 4])
    kw = dict(split_method="hist", max_bins=16, subsample=0.8, max_features=3,
              random_state=2)
    once = GradientBoostingClassifier(n_estimators=20, **kw).fit(X, y)
    warm = GradientBoostingClassifier(n_estimators=8, warm_start=True, **kw).fit(X, y)
    warm.set_params(n_estimators=20).fit(X, y)
    # (The model files differ in the stored parameters only.)
    assert (np.concatenate(warm.booster_.trees()).tobytes()
            == np.concatenate(once.booster_.trees()).tobytes())
    np.testing.assert_array_equal(warm.oob_scores_, once.oob_scores_)


def test_parameters_are_checked():
    X, y = np.zeros((10, 2), np.float32), np.arange(10) % 2
    for bad in [dict(max_bins=1), dict(max_bins=256), dict(max_bins=2.5),
                dict(max_bins="8"), dict(split_method="histogram"),
                dict(split_method=None)]:
        name = next(iter(bad))
        with pytest.raises(ValueError, match=name):
            GradientBoostingClassifier(**bad).fit(X, y)


def test_cli_train_hist_round_trip(tmp_path, capsys, monkeypatch):
    pd = require("pandas")
    X, logit, rng = _grid_data(800, 4, 9, nan=False)
    X[:, 3] = rng.normal(size=800)
    y = (logit + rng.logistic(size=800) > 2).astype(int)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(4)])
    df["target"] = y
    df.to_csv(tmp_path / "train.csv", index=False)
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t", "target",
                          "-o", "model.gbc", "--split-method", "hist", "--max-bins", "63",
                          "--n-estimators", "20")
    assert rc == 0, err
    model = gbc_core.load(tmp_path / "model.gbc")
    assert model.params["split_method"] == "hist" and model.params["max_bins"] == 63
    back = pd.read_csv(tmp_path / "train.csv")
    ref = GradientBoostingClassifier(split_method="hist", max_bins=63, n_estimators=20)
    ref.fit(back[[f"x{j}" for j in range(4)]], back["target"])
    np.testing.assert_array_equal(model.predict_proba(back[[f"x{j}" for j in range(4)]]),
                                  ref.predict_proba(back[[f"x{j}" for j in range(4)]]))
    with pytest.raises(SystemExit):
        run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t", "target",
                 "-o", "m2.gbc", "--max-bins", "300")
    assert "max_bins must be an integer in [2, 255]" in capsys.readouterr().err


@pytest.mark.parametrize("n_threads", [1, 2])
def test_bin_value_ranges_of_rows_equal_those_of_columns(n_threads):
    """C-order X (binned as given, no copy) gives the ranges of its Fortran copy and
    of NumPy, with -0.0 and 0.0 in one bin (the first in row order is kept) and
    enough rows for several row ranges."""
    rng = np.random.default_rng(3)
    X = rng.integers(-3, 4, size=(140000, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[rng.random(X.shape) < 0.2] *= -1  # -0.0 where the value is 0
    X[:, 4] = rng.normal(size=140000)
    XC, XF = np.ascontiguousarray(X), np.asfortranarray(X)
    mapper = BinMapper(max_bins=16).fit(XF, 1)
    bins = mapper.transform(XF, 1)
    got_c = bin_value_ranges(XC, bins, mapper.missing_bin, n_threads)
    got_f = bin_value_ranges(XF, bins, mapper.missing_bin, 1)
    for c, f in zip(got_c, got_f):
        assert c.tobytes() == f.tobytes()  # bit for bit: the sign of zero too
    for f in range(X.shape[1]):
        for b in range(mapper.missing_bin):
            rows = np.flatnonzero(bins[:, f] == b)
            if rows.size:
                assert got_c[0][f, b] == X[rows, f].min()
                assert got_c[1][f, b] == X[rows, f].max()
                zero = rows[X[rows, f] == 0]
                if zero.size and X[rows, f].min() == 0:
                    # the first zero in row order, with its sign
                    assert (np.signbit(got_c[0][f, b])
                            == np.signbit(X[zero[0], f]))


def _naive_value_ranges(X, bins, missing_bin):
    """Each bin's smallest and largest value by NumPy, the first of equal values
    (-0.0 and 0.0) in row order kept."""
    d = X.shape[1]
    lo = np.full((d, missing_bin), np.inf, dtype=np.float32)
    hi = np.full((d, missing_bin), -np.inf, dtype=np.float32)
    for f in range(d):
        for b in range(missing_bin):
            v = X[bins[:, f] == b, f]
            if v.size:
                lo[f, b] = v[np.flatnonzero(v == v.min())[0]]
                hi[f, b] = v[np.flatnonzero(v == v.max())[0]]
    return lo, hi


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_bin_value_ranges_of_any_layout_are_numpys(n_threads):
    """Strided and reversed views of X, in blocks of rows (C order: fixed blocks of
    65,536 rows and more, several here, and their chunks of 256 rows cut
    anywhere) or by column: NumPy's ranges bit for bit, signs of zero included,
    on any number of threads."""
    rng = np.random.default_rng(5)
    X = rng.integers(-2, 3, size=(3 * 70001, 12)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[rng.random(X.shape) < 0.5] *= -1  # -0.0 where the value is 0
    X[:, 11] = rng.normal(size=X.shape[0])
    XC = np.ascontiguousarray(X)
    for view in (XC, XC[::2], XC[:, ::-1], np.asfortranarray(X)[::3]):
        XF = np.asfortranarray(view)
        mapper = BinMapper(max_bins=9).fit(XF, 1)
        bins = mapper.transform(XF, 1)
        want = _naive_value_ranges(XF, bins, mapper.missing_bin)
        got = bin_value_ranges(view, bins, mapper.missing_bin, n_threads)
        for g, w in zip(got, want):
            assert g.tobytes() == w.tobytes()


@pytest.mark.parametrize("options", [{}, {"subsample": 0.7, "random_state": 1}])
def test_hist_fits_c_order_like_fortran_order(options):
    """The hist fit bins a C-order float32 X as it is: the model is the one of the
    Fortran-order array, bit for bit (also with out-of-bag rows, routed on X)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.03] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=3000) > 0).astype(int)
    models = [GradientBoostingClassifier(split_method="hist", n_estimators=10,
                                         max_bins=32, **options).fit(A, y)
              for A in (np.ascontiguousarray(X), np.asfortranarray(X),
                        X.astype(np.float64))]
    trees = [np.concatenate(m.booster_.trees()).tobytes() for m in models]
    assert trees[0] == trees[1] == trees[2]
    assert models[0].train_score_.tobytes() == models[1].train_score_.tobytes()


def test_hist_fit_does_not_copy_float32_X():
    """A C-order float32 X is binned where it is: the fit's allocations (NumPy's,
    traced) stay far below a float32 copy of X (a wide X: 800 bytes per row, the
    fit's own state about 100 and the bins 200)."""
    rng = np.random.default_rng(5)
    X = rng.integers(0, 10, size=(20000, 200)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=20000) > 4.5).astype(int)
    model = GradientBoostingClassifier(split_method="hist", n_estimators=2, max_depth=2)
    _, peak = traced_peak(lambda: model.fit(X, y))
    assert peak < 0.5 * X.nbytes, (peak, X.nbytes)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_multiclass_hist_fit_keeps_no_residuals_of_every_class(n_jobs):
    """What a 5-class hist fit of unit weights allocates with NumPy (traced): the
    bins (one byte per value), the class codes (4 bytes per row), the raw scores
    and probabilities of every class (16 K bytes per row: the trees of an
    iteration fit the probabilities of its start), and for each grower at work at
    once (min(n_jobs, K)) the residuals of its tree, put on the grid in place (8),
    the leaf of each row (4) and its finder's buffer of gathered row statistics
    (16). Before, the fit also kept the residuals of every class (8 K bytes per
    row), and a grower of every thread for the trees left over with buffers of its
    own beside the side-by-side growers (12 more), and its finder's (16 more)."""
    n, d, k = 50_000, 10, 5
    rng = np.random.default_rng(7)
    X = rng.integers(0, 10, size=(n, d)).astype(np.float32, order="F")
    y = np.digitize(X[:, 0] + rng.normal(size=n), [2.5, 4.5, 6.5, 8.5]).astype(np.int64)
    model = GradientBoostingClassifier(split_method="hist", n_estimators=2, max_depth=3,
                                       n_jobs=n_jobs)
    _, peak = traced_peak(lambda: model.fit(X, y))
    per_row = d + 4 + 16 * k + (12 + 16) * min(n_jobs, k)
    assert peak < n * per_row + 256 * 1024, (peak / n, per_row)


def test_hist_fit_allocates_at_most_its_state():
    """What a hist fit of unit weights allocates with NumPy (traced) is the bins
    (one byte per value), the class codes (4 bytes per row), the raw scores and
    probabilities (8 bytes each), the residuals (8: the grower's buffer, put on the
    tree's grid in place; the state borrows it and keeps none of its own, not even
    for the first tree), the leaf of each row (4) and the finder's buffer of
    gathered row statistics (16; with unit weights only its first half is
    written): 48 bytes per row beside the bins, and no row statistics per row
    (w * r and w, 16 bytes per row: with unit weights the residuals are w * r), no
    copy of the raw scores and no sorted copy of the labels (np.unique's, about 40
    bytes per row)."""
    n, d = 50_000, 10
    rng = np.random.default_rng(6)
    X = rng.integers(0, 10, size=(n, d)).astype(np.float32, order="F")
    y = (X[:, 0] + rng.normal(size=n) > 4.5).astype(np.int64)
    model = GradientBoostingClassifier(split_method="hist", n_estimators=2, max_depth=3)
    _, peak = traced_peak(lambda: model.fit(X, y))
    assert peak < n * (d + 48) + 256 * 1024, (peak / n, d + 48)


@pytest.mark.parametrize("weighted, in_place, n_threads", [
    (False, False, 2), (False, True, 2), (True, False, 2), (False, False, 1),
    (True, False, 1)])
@pytest.mark.parametrize("given", [False, True])
def test_grid_pass_that_fills_the_root_gives_the_masked_path(weighted, in_place,
                                                             n_threads, given):
    """Every row in bag, one process: the grid pass also fills the root's rows and
    takes their sums in its parallel region (``TreeGrower._grid_and_root``). The
    tree, the leaf of every row, the node impurities (the root's from those sums)
    and the rows on the grid are the masked path's (a mask of ones: the grid pass,
    then ``RowPartition.start_tree``) bit for bit, with the residuals read in place
    (the grower's ``residual_buffer()``) or not, and with the grid maxima given
    (``grid_maxima``, as the loss state takes them: neither path takes them
    again) or not; the rows on the grid are those of
    a NumPy twin (round half to even to 2^-51 of the least power of two at or above
    n max |r|) and the root's impurity the variance of its rows. 250,000 rows: on
    two threads the region runs in parallel."""
    n, d = 250_000, 3
    rng = np.random.default_rng(7)
    X = np.asfortranarray(rng.normal(size=(n, d)).astype(np.float32))
    r = np.tanh(X[:, 0].astype(np.float64)) - 0.3 * X[:, 1] + 0.5 * rng.normal(size=n)
    w = rng.uniform(0.5, 2.0, size=n)
    stats = None
    if weighted:
        stats = np.empty(n, dtype=ROW_STAT_DTYPE)
        stats["w"] = w
        stats["wr"] = w * r
    grown = []
    for mask in (None, np.ones(n, dtype=np.uint8)):
        finder = make_split_finder(X, dict(split_method="hist", max_bins=64,
                                           n_threads=n_threads))
        grower = TreeGrower(X, finder, 3, 2, 1, 0.0, d, n_threads,
                            min_impurity_decrease=1e-12, ccp_alpha=1e-12)
        residual = r
        if in_place:
            residual = grower.residual_buffer()
            residual[:] = r
        if given:
            grower.grid_maxima = ((float(n), np.abs(w * r).max(), w.max()) if weighted
                                  else (float(n), np.abs(r).max(), 0.0))
        grower.grow(stats, residual, mask, 0)
        assert grower.grid_maxima is None   # taken by this tree only
        assert grower.n_nodes == 15
        grown.append((grower.nodes_array().tobytes(), grower.node_of_row.copy(),
                      grower.node_impurities(), grower.residual_buffer().copy()))
    (nodes, leaves, impurities, rows), (nodes_m, leaves_m, impurities_m, rows_m) = grown
    assert nodes == nodes_m
    np.testing.assert_array_equal(leaves, leaves_m)
    np.testing.assert_array_equal(impurities, impurities_m)
    if weighted:
        np.testing.assert_allclose(impurities[0], np.cov(r, aweights=w, ddof=0),
                                   rtol=1e-6)
        return
    np.testing.assert_array_equal(rows, rows_m)
    _, exponent = np.frexp(n * np.abs(r).max())
    unit = np.ldexp(1.0, int(exponent) - 51)
    np.testing.assert_array_equal(rows, np.rint(r / unit) * unit)
    np.testing.assert_allclose(impurities[0], rows.var(), rtol=1e-9)


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("scaled", ["maximum", "rows"])
def test_grid_pass_reads_the_given_maxima(masked, scaled):
    """A tree given its grid maxima (``TreeGrower.grid_maxima``) puts its rows on the
    grid they make and takes none of its own: maxima four times the rows' own, or
    a row count four times this tree's (a data-parallel fit's every process's
    rows), give the grid of a NumPy twin at a unit four times as large, in the grid
    pass that fills the root (no mask) and in the masked one alike."""
    n, d = 250_000, 3
    rng = np.random.default_rng(8)
    X = np.asfortranarray(rng.normal(size=(n, d)).astype(np.float32))
    r = np.tanh(X[:, 0].astype(np.float64)) + 0.5 * rng.normal(size=n)
    finder = make_split_finder(X, dict(split_method="hist", max_bins=64, n_threads=2))
    grower = TreeGrower(X, finder, 2, 2, 1, 0.0, d, 2)
    grower.grid_maxima = ((float(n), 4 * np.abs(r).max(), 0.0) if scaled == "maximum"
                          else (4.0 * n, np.abs(r).max(), 0.0))
    grower.grow(None, r, np.ones(n, dtype=np.uint8) if masked else None, 0)
    _, exponent = np.frexp(n * 4 * np.abs(r).max())
    unit = np.ldexp(1.0, int(exponent) - 51)
    np.testing.assert_array_equal(grower.residual_buffer(), np.rint(r / unit) * unit)
    assert not np.array_equal(grower.residual_buffer(),
                              np.rint(r / (unit / 4)) * (unit / 4))


def test_split_children_sums_are_their_numpy_twins():
    """A split's two children are placed and summed in one task, block by block
    (``RowPartition._finish_pair``, the one-thread path): every inner node's
    impurity (from its sums over its own rows) is the variance of its rows on the
    grid in NumPy, and the leaf of every row is the tree's routing of it; 250,000
    rows, so that a node's rows span many blocks and chunks."""
    n, d = 250_000, 4
    rng = np.random.default_rng(13)
    X = np.asfortranarray(rng.normal(size=(n, d)).astype(np.float32))
    r = np.tanh(X[:, 0].astype(np.float64)) - 0.4 * X[:, 1] * (X[:, 2] > 0) \
        + 0.3 * rng.normal(size=n)
    finder = make_split_finder(X, dict(split_method="hist", max_bins=64, n_threads=1))
    grower = TreeGrower(X, finder, 3, 2, 1, 0.0, d, 1, min_impurity_decrease=1e-12,
                        ccp_alpha=1e-12)
    grower.grow(None, r, None, 0)
    nodes, leaf = grower.nodes_array(), np.asarray(grower.node_of_row)
    impurities, rows = grower.node_impurities(), grower.residual_buffer()
    assert grower.n_nodes == 15

    def leaves_under(j):
        if nodes["feature"][j] < 0:
            return [j]
        return leaves_under(nodes["left"][j]) + leaves_under(nodes["right"][j])

    for j in range(1, 7):   # the children of the root's and of its children's splits
        mine = np.isin(leaf, leaves_under(j))
        assert mine.sum() == nodes["n_samples"][j]
        np.testing.assert_allclose(impurities[j], rows[mine].var(), rtol=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
def test_split_children_sums_on_threads_are_the_one_thread_sums(weighted):
    """Every path of a level's moves gives the one-thread numbers, bit for bit: one
    task per split (``_finish_pair``: one thread, and 2 threads on the levels of
    more than 8 children), the narrow levels (``_split_narrow``: at most 8
    children on 2 threads; fewer splits than threads on 10); depth 5 (levels of
    2 to 16 children), 250,000 rows, unit weights and weights, with out-of-bag
    rows: tree bytes, impurities (from the sums of w * r^2, whose last bits a
    change of order would move) and the leaf of every row."""
    n, d = 250_000, 4
    rng = np.random.default_rng(17)
    X = np.asfortranarray(rng.normal(size=(n, d)).astype(np.float32))
    r = np.tanh(X[:, 0].astype(np.float64)) - 0.4 * X[:, 1] * (X[:, 2] > 0) \
        + 0.3 * rng.normal(size=n)
    stats = None
    if weighted:
        stats = np.zeros(n, dtype=ROW_STAT_DTYPE)
        stats["w"] = rng.uniform(0.5, 2.0, size=n)
        stats["wr"] = stats["w"] * r
    in_bag = (rng.random(n) < 0.8).astype(np.uint8)
    grown = []
    for n_threads in (1, 2, 10):
        finder = make_split_finder(X, dict(split_method="hist", max_bins=64,
                                           n_threads=n_threads))
        grower = TreeGrower(X, finder, 5, 2, 1, 0.0, d, n_threads,
                            min_impurity_decrease=1e-12, ccp_alpha=1e-12)
        grower.grow(stats, r, in_bag, 0)
        grown.append((grower.nodes_array().tobytes(),
                      np.asarray(grower.node_impurities()).tobytes(),
                      np.asarray(grower.node_of_row).tobytes()))
    assert grown[1] == grown[0]
    assert grown[2] == grown[0]


def test_pack_and_unpack_bins_are_their_numpy_twins():
    """``pack_bins`` writes the collected nodes' bins as float64 triples (n, w, s),
    node after node, as NumPy's fancy index and cast do; ``unpack_bins`` writes
    them back (n cast to int64), leaving the other nodes as they were; a view of
    another shape, a packed array of another size and a node out of range are
    refused."""
    from gbc_core._histogram_splitter import BIN_DTYPE, pack_bins, unpack_bins

    rng = np.random.default_rng(11)
    hist = np.zeros((5, 3, 9), dtype=BIN_DTYPE)
    hist["n"] = rng.integers(0, 2**50, size=hist.shape)
    hist["w"] = rng.normal(size=hist.shape)
    hist["s"] = rng.normal(size=hist.shape)
    values = hist.reshape(5, -1).view(np.float64)
    counts = values.view(np.int64)
    for collected in ([], [3], [4, 0, 2], [1, 1]):
        nodes = np.asarray(collected, dtype=np.intp)
        twin = np.stack([hist["n"][nodes].astype(np.float64), hist["w"][nodes],
                         hist["s"][nodes]], axis=-1).ravel()
        out = np.full(twin.size, np.nan)
        pack_bins(counts, values, nodes, out)
        assert out.tobytes() == twin.tobytes()
        sums = rng.normal(size=twin.shape) * 1e3
        sums[0::3] = rng.integers(0, 2**50, size=sums[0::3].shape)
        expected = hist.copy()
        part = expected[nodes]
        part["n"] = sums[0::3].reshape(part.shape)
        part["w"] = sums[1::3].reshape(part.shape)
        part["s"] = sums[2::3].reshape(part.shape)
        expected[nodes] = part
        unpack_bins(sums, nodes, counts, values)
        assert hist.tobytes() == expected.tobytes()
    one = np.array([0], dtype=np.intp)
    with pytest.raises(ValueError, match="same histograms"):
        pack_bins(np.zeros((5, 6), dtype=np.int64), values, one, np.empty(values.shape[1]))
    with pytest.raises(ValueError, match="packed bins hold"):
        pack_bins(counts, values, one, np.empty(values.shape[1] + 1))
    with pytest.raises(ValueError, match="not one of"):
        unpack_bins(np.zeros(values.shape[1]), np.array([5], dtype=np.intp), counts, values)
