"""The exact finder's tasks below a feature (``ExactSplitFinder.collect``): a root's
feature scanned in blocks of sorted positions (each block from the exact sum of the
positions before it), the root's blocks carried to its children (each block split
into the children's segments and each child's part scanned from its exact prefix),
and a level with node segments scanned in (feature, pair of siblings) tasks. Each
must find the splits of the whole-feature scan bit for bit, on every number of
threads: the test hook ``_force_blocks`` takes the paths wherever they may apply
(small blocks, any thread count), and the trees grown are compared with those of
the default paths, node for node."""

import numpy as np
import pytest

from gbc_core import GradientBoostingClassifier
from gbc_core import _exact_splitter
from gbc_core._common import NODE_DTYPE, ROW_STAT_DTYPE
from gbc_core._exact_splitter import ExactSplitFinder
from gbc_core._grower import TreeGrower

from test_split_finder import brute_force


def _finder(X, n_threads, block_rows, **kwargs):
    previous = _exact_splitter._force_blocks(block_rows)
    try:
        return ExactSplitFinder(X, n_threads, **kwargs)
    finally:
        _exact_splitter._force_blocks(previous)


def _tied_residuals(n):
    """Residuals, in increasing order of a feature, whose best splits tie exactly at
    two positions far apart: +1 on the first quarter, -1 on the middle half, +1 on
    the last quarter (sum 0: the splits after n/4 and after 3n/4 have the same
    proxy). The serial scan keeps the first."""
    q = n // 4
    return np.concatenate([np.ones(q), -np.ones(n - 2 * q), np.ones(q)])


@pytest.mark.parametrize("block_rows", [1, 3, 64, 1000])
@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_root_blocks_find_the_brute_force_split(block_rows, n_threads):
    """At the root (unit weights, every row), blocks of any size find the split of
    the brute force (the first of equal proxies: the lowest feature, then the lowest
    threshold), also where the best splits tie exactly across blocks and across
    features, with values repeated across block boundaries and a leaf minimum."""
    rng = np.random.default_rng(3)
    n = 4000
    x0 = rng.permutation(n).astype(np.float32)
    r = np.empty(n)
    r[np.argsort(x0)] = _tied_residuals(n)
    X = np.column_stack([
        np.round(rng.normal(size=n) * 2),    # many ties: runs across block boundaries
        x0,                                 # the tie across blocks (position n/4 and 3n/4)
        x0,                                 # the same splits again: a tie across features
        np.floor(x0 / 7),                   # runs of 7 equal values
    ]).astype(np.float32)
    grid = (2.0 ** -40, 1.0)
    stats = np.empty(n, dtype=ROW_STAT_DTYPE)
    stats["wr"], stats["w"] = r, 1.0
    row_slot = np.zeros(n, dtype=np.int32)
    for msl in (1, 5, 1100):
        X32 = np.asfortranarray(X)
        finder = _finder(X32, n_threads, block_rows)
        got = finder.level_splits(stats, row_slot, None, msl, 0.0, unit_weights=True,
                                  grid=grid)
        assert finder.blocked_levels == 1
        expected = brute_force(X32, r, np.ones(n), row_slot, None, msl, 0.0)[0]
        assert int(got["feature"][0]) == expected[0]
        assert float(got["threshold"][0]) == expected[1]
        assert int(got["left_n"][0]) == expected[4]
        if msl == 1:
            # The tie of feature 1 (and 2): the first quarter goes left.
            assert expected[0] == 1 and expected[4] == n // 4
        reference = _finder(X32, 1, 0).level_splits(
            stats, row_slot, None, msl, 0.0, unit_weights=True, grid=grid)
        assert got.tobytes() == reference.tobytes()


CASES = ["plain", "ties", "cross_block_ties", "missing", "weighted", "zero_weights",
         "min_leaf", "categorical", "subsample", "max_features", "best_first",
         "monotonic", "deep"]


def _grow_all(X, case, n_threads, block_rows, residuals, w, categorical):
    n, d = X.shape
    finder = _finder(X, n_threads, block_rows)
    depth, msl, max_features, leaves, mono = 4, 1, d, 0, None
    if case == "min_leaf":
        msl = 60
    if case == "max_features":
        max_features = 3
    if case == "deep":
        depth = 9
    if case == "best_first":
        depth, leaves = -1, 24
    if case == "monotonic":
        mono = np.array([1, 0, -1, 0, 0, 0], dtype=np.int8)
    grower = TreeGrower(X, finder, depth, 2, msl, 0.0, max_features, n_threads,
                        max_leaf_nodes=leaves, monotonic_cst=mono,
                        categorical=categorical)
    trees = []
    for t, r in enumerate(residuals):
        mask = None
        if case == "subsample":
            mask = (np.random.default_rng(t).uniform(size=n) < 0.7).astype(np.uint8)
        if w is None:
            grower.grow(None, r, mask, t)
        else:
            stats = np.empty(n, dtype=ROW_STAT_DTYPE)
            stats["wr"], stats["w"] = w * r, w
            grower.grow(stats, r, mask, t)
        trees.append((grower.nodes_array().tobytes(), grower.node_of_row.copy()))
    return trees, finder


def _case_data(case):
    """X (Fortran order), residuals of three trees, weights and categorical flags
    of the whole-tree test's ``case``."""
    rng = np.random.default_rng(8)
    n, d = 20000, 6
    X = rng.normal(size=(n, d)).astype(np.float32)
    categorical = None
    w = None
    residuals = []
    for t in range(3):
        r = np.sin(3 * X[:, 0] + t) + np.cos(2 * X[:, 1] * X[:, 3]) + 0.3 * rng.normal(size=n)
        residuals.append(r)
    if case == "ties":
        X[:, :4] = np.round(X[:, :4] * 2) / 2
    if case == "cross_block_ties":
        x = rng.permutation(n).astype(np.float32)
        X[:, 1] = X[:, 4] = x
        r = np.empty(n)
        r[np.argsort(x)] = _tied_residuals(n)
        residuals = [r, r, residuals[0]]
    if case == "missing":
        X[rng.uniform(size=n) < 0.1, 2] = np.nan
    if case == "weighted":
        w = rng.uniform(0.2, 3.0, size=n).astype(np.float32).astype(np.float64)
    if case == "zero_weights":
        w = np.where(rng.uniform(size=n) < 0.2, 0.0, 1.0)
    if case == "categorical":
        X[:, 5] = rng.integers(0, 9, size=n)
        residuals = [r + 0.5 * np.sin(X[:, 5]) for r in residuals]
        categorical = np.array([0, 0, 0, 0, 0, 1], dtype=bool)
    return np.asfortranarray(X), residuals, w, categorical


@pytest.mark.parametrize("case", CASES)
def test_blocks_and_pair_tasks_grow_the_trees_of_the_whole_feature_scan(case):
    """Trees grown with root blocks (1, 7, 79, 500 and 3,000 positions: the first
    two gathered, more than 256 blocks; the others from the block bytes and carried
    to the root's children) and (feature, pair) tasks on 1, 2 and 3 threads are
    those of the whole-feature scan on one thread and on three, node for node and
    bit for bit: ties (within and across blocks and
    features), missing values (those features stay whole), positive and zero sample
    weights (the lean scans' limits), leaf minimums, categorical features (one task
    each), sample masks, feature draws, monotonic constraints, deep and best-first
    trees. 20,000 x 6 values: the scans run in parallel."""
    Xf, residuals, w, categorical = _case_data(case)
    expected, _ = _grow_all(Xf, case, 1, 0, residuals, w, categorical)
    n_nodes = len(expected[0][0]) // NODE_DTYPE.itemsize
    assert n_nodes >= 5
    runs = [(3, 0)] + [(t, b) for b in (1, 7, 79, 500, 3000) for t in (1, 2, 3)]
    blocked = paired = children = 0
    for n_threads, block_rows in runs:
        got, finder = _grow_all(Xf, case, n_threads, block_rows, residuals, w,
                                categorical)
        blocked += finder.blocked_levels
        paired += finder.pair_levels
        children += finder.child_block_levels
        for t, ((nodes_e, leaf_e), (nodes_g, leaf_g)) in enumerate(zip(expected, got)):
            assert nodes_g == nodes_e, (case, n_threads, block_rows, t)
            np.testing.assert_array_equal(leaf_g, leaf_e)
    # The paths under test ran where they apply: blocks at a root of unit weights
    # holding every row and at its children (a level below it), pair tasks on
    # levels with segments (positive weights).
    if case not in ("weighted", "zero_weights", "subsample"):
        assert blocked > 0
        assert children > 0
    if case not in ("zero_weights", "best_first", "missing"):
        assert paired > 0


@pytest.mark.parametrize("block_rows", [5, 64])
@pytest.mark.parametrize("n_jobs", [1, 2, 3])
def test_a_fit_with_blocks_is_the_fit_without(n_jobs, block_rows):
    """A whole exact fit (binary and three classes) with every root feature in
    blocks and every level in pair tasks is the default fit on one thread, bit for
    bit: blocks of 5 positions (1,200: their sums gathered through the sorted
    order) and of 64 (94: their sums from the block bytes)."""
    rng = np.random.default_rng(2)
    n = 6000
    X = rng.normal(size=(n, 5)).astype(np.float32)
    X[:, 3] = np.round(X[:, 3])
    for y in ((X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n) > 0).astype(int),
              np.digitize(X[:, 0] + X[:, 3] + rng.normal(size=n), [-0.5, 0.5])):
        params = dict(n_estimators=4, max_depth=4, subsample=1.0, random_state=0)
        reference = GradientBoostingClassifier(n_jobs=1, **params).fit(X, y)
        previous = _exact_splitter._force_blocks(block_rows)
        try:
            blocked = GradientBoostingClassifier(n_jobs=n_jobs, **params).fit(X, y)
        finally:
            _exact_splitter._force_blocks(previous)
        assert blocked.decision_function(X).tobytes() == \
            reference.decision_function(X).tobytes()
        for a, b in zip(np.ravel(blocked.estimators_), np.ravel(reference.estimators_)):
            assert a.tree_.threshold.tobytes() == b.tree_.threshold.tobytes()
            assert a.tree_.feature.tobytes() == b.tree_.feature.tobytes()


def test_force_blocks_rejects_a_negative_size():
    with pytest.raises(ValueError, match="block_rows must be >= 0"):
        _exact_splitter._force_blocks(-1)


# ---------------------------------------------------------------- the block bytes
def _twin_root_time(k, n_features, n_threads, n_blocks, num, den, n_chunks):
    """The root's time with its last k features blocked (integer units of 1 /
    (n_blocks x den) of a scan): the block sums, num / den of a scan per blocked
    feature, in n_chunks equal row chunks over every blocked feature (a chunk's
    cost rounded up), list scheduled on the threads, then, list scheduling the
    tasks one by one, the whole features (1 each) and the k x n_blocks blocks (1 /
    n_blocks each), each to the first free thread."""
    import heapq
    unit = n_blocks * den
    free = [0] * n_threads
    for _ in range(n_chunks if k else 0):
        heapq.heappush(free, heapq.heappop(free) + -(-(k * n_blocks * num) // n_chunks))
    sums = max(free)
    free = [0] * n_threads
    for cost in [unit] * (n_features - k) + [den] * (k * n_blocks):
        heapq.heappush(free, heapq.heappop(free) + cost)
    return sums + max(free)


def test_the_root_rule_is_the_list_schedule_of_its_tasks():
    """``root_block_plan`` blocks the least k of the least list-scheduled root time
    (the twin above), never on fewer than 4 threads nor with one block; blocks of
    32,768 positions up to 8,388,608 rows (256 blocks), then doubled from the row
    count alone; the headline case (1M x 28 on 16 threads) blocks the 12 features
    of the last wave, 8 threads 4."""
    num, den = 1, 5
    assert _exact_splitter.root_block_plan(10, 3, 8)[3] == num / den
    for n_rows in (40_000, 200_000, 1_000_000, 10_000_000):
        for n_features in (1, 3, 5, 8, 13, 28, 30):
            for n_threads in (1, 2, 3, 4, 6, 8, 16, 24, 32):
                k, block_rows, n_blocks, _ = _exact_splitter.root_block_plan(
                    n_rows, n_features, n_threads)
                assert n_blocks == -(-n_rows // block_rows) <= 256
                if n_threads < 4:
                    assert k == 0
                    continue
                n_chunks = _exact_splitter.sum_chunk_plan(n_rows)[1]
                times = [_twin_root_time(j, n_features, n_threads, n_blocks, num, den,
                                         n_chunks)
                         for j in range(n_features + 1)]
                assert k == int(np.argmin(times)), (n_rows, n_features, n_threads)
                for n_lean in range(n_features + 1):
                    k_lean = _exact_splitter.root_block_plan(
                        n_rows, n_features, n_threads, n_lean)[0]
                    assert k_lean == int(np.argmin(times[:n_lean + 1]))
    assert _exact_splitter.root_block_plan(1_000_000, 28, 16)[:3] == (12, 32768, 31)
    assert _exact_splitter.root_block_plan(1_000_000, 28, 8)[0] == 4
    assert _exact_splitter.root_block_plan(1_000_000, 28, 2)[0] == 0
    assert _exact_splitter.root_block_plan(8_388_608, 28, 16)[1:3] == (32768, 256)
    assert _exact_splitter.root_block_plan(8_388_609, 28, 16)[1:3] == (65536, 129)
    assert _exact_splitter.root_block_plan(30_000, 28, 16)[:3] == (0, 32768, 1)


def test_the_passes_are_cut_into_chunks_of_the_row_count_alone():
    """The block sums' and counts' tasks (``sum_chunk_plan``): 16,384 rows each up
    to 64 chunks, then the least multiple of 64 rows that keeps 64 chunks; never a
    function of the threads or the features."""
    assert _exact_splitter.sum_chunk_plan(0) == (16384, 0)
    assert _exact_splitter.sum_chunk_plan(40_003) == (16384, 3)
    assert _exact_splitter.sum_chunk_plan(1_000_000) == (16384, 62)
    assert _exact_splitter.sum_chunk_plan(16384 * 64) == (16384, 64)
    assert _exact_splitter.sum_chunk_plan(16384 * 64 + 1) == (16448, 64)
    assert _exact_splitter.sum_chunk_plan(10_000_000) == (156288, 64)
    for n in (1, 999, 65_537, 3_000_001, 25_000_000):
        rows, chunks = _exact_splitter.sum_chunk_plan(n)
        assert rows % 64 == 0 and chunks <= 64 and (chunks - 1) * rows < n <= chunks * rows


def _column_data(n, seed=5):
    rng = np.random.default_rng(seed)
    X = np.column_stack([
        rng.permutation(n),                 # distinct values
        np.round(rng.normal(size=n) * 3),   # many ties
        rng.normal(size=n),
    ]).astype(np.float32)
    return np.asfortranarray(X)


@pytest.mark.parametrize("block_rows", [64, 1000])
def test_block_bytes_and_their_sums_match_a_numpy_twin(block_rows):
    """Each (feature, row) byte names the block of sorted positions the row falls
    in (the twin: argsort; with ties, each block holds its share of rows, values in
    order across blocks), and each block's sum from the bytes (a pass in row order)
    is the sum of the block's positions in sorted order, bit for bit (values on a
    grid), the twin's ``bincount``."""
    n = 4000
    X = _column_data(n)
    finder = _finder(X, 1, block_rows)
    bytes_ = finder._block_bytes()
    n_blocks = -(-n // block_rows)
    assert bytes_.shape == (3, n) and bytes_.dtype == np.uint8
    expected = np.empty(n, dtype=np.uint8)
    expected[np.argsort(X[:, 0], kind="stable")] = np.arange(n) // block_rows
    np.testing.assert_array_equal(bytes_[0], expected)
    for f in range(3):
        counts = np.bincount(bytes_[f], minlength=n_blocks)
        np.testing.assert_array_equal(
            counts, np.diff(np.minimum(np.arange(n_blocks + 1) * block_rows, n)))
        for b in range(n_blocks - 1):
            assert X[bytes_[f] == b, f].max() <= X[bytes_[f] == b + 1, f].min()
    rng = np.random.default_rng(1)
    r = np.round(rng.normal(size=n) * 2 ** 20) / 2 ** 20
    # Chunks of 64 and 1,024 rows (``_force_blocks``): 63 and 4 of them.
    for n_threads in (1, 3):
        got = finder._block_sums_from_bytes(r, n_threads)
        for f in range(3):
            twin = np.bincount(bytes_[f], weights=r, minlength=n_blocks)
            assert got[f].tobytes() == twin.tobytes()
            in_order = r[np.argsort(X[:, f], kind="stable")]
            sorted_sums = np.add.reduceat(in_order, np.arange(0, n, block_rows))
            np.testing.assert_array_equal(got[f], sorted_sums)
    with pytest.raises(ValueError, match="must have 4000 rows"):
        finder._block_sums_from_bytes(r[:10])


def test_only_finders_whose_root_may_be_blocked_hold_the_bytes():
    """One byte per value, allocated where the rule can fire: never on one, two
    or three threads, nor where the rule blocks nothing; on the threads where it
    does. Forced blocks hold them up to 256 blocks (more gather the blocks' sums
    through the sorted order)."""
    n = 40_000
    X = np.asfortranarray(np.random.default_rng(0).normal(size=(n, 3)).astype(np.float32))
    assert _exact_splitter.root_block_plan(n, 3, 6)[0] == 3
    assert _exact_splitter.root_block_plan(n, 3, 4)[0] == 0
    for n_threads in (1, 2, 3, 4):
        assert ExactSplitFinder(X, n_threads)._block_bytes() is None
    held = ExactSplitFinder(X, 6)._block_bytes()
    assert held is not None and held.nbytes == n * 3
    small = np.asfortranarray(X[:4000])
    assert _finder(small, 1, 16)._block_bytes() is not None     # 250 blocks
    assert _finder(small, 1, 15)._block_bytes() is None         # 267 blocks
    with pytest.raises(ValueError, match="no block bytes"):
        ExactSplitFinder(X, 2)._block_sums_from_bytes(np.zeros(n))


def test_the_default_rule_finds_the_splits_of_one_thread():
    """Where the default rule blocks the root (40,000 x 3 on 6 threads: every
    feature), the root's splits (ties across blocks and features included) are
    those of the one-thread scan, bit for bit, with and without a leaf minimum."""
    n = 40_000
    rng = np.random.default_rng(4)
    x = rng.permutation(n).astype(np.float32)
    X = np.asfortranarray(np.column_stack([
        np.round(rng.normal(size=n) * 2), x, x]).astype(np.float32))
    r = np.empty(n)
    r[np.argsort(x)] = _tied_residuals(n)
    stats = np.empty(n, dtype=ROW_STAT_DTYPE)
    stats["wr"], stats["w"] = r, 1.0
    row_slot = np.zeros(n, dtype=np.int32)
    blocked = ExactSplitFinder(X, 6)
    whole = ExactSplitFinder(X, 1)
    for msl in (1, 7, 15_000):
        got = blocked.level_splits(stats, row_slot, None, msl, 0.0, unit_weights=True,
                                   grid=(2.0 ** -40, 1.0))
        expected = whole.level_splits(stats, row_slot, None, msl, 0.0,
                                      unit_weights=True, grid=(2.0 ** -40, 1.0))
        assert got.tobytes() == expected.tobytes()
    assert blocked.blocked_levels == 3 and whole.blocked_levels == 0


@pytest.mark.parametrize("seed", range(4))
def test_pairs_are_handed_out_largest_first_then_lowest_slot(seed):
    """The order of a level's pair tasks (``_plan_tasks``: ``_largest_first``)
    against Python's stable sort by decreasing rows: ties (many equal counts here)
    keep the lowest slot first."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 128))
    rows = rng.integers(0, 6, size=n).tolist()
    expected = sorted(range(n), key=lambda i: (-rows[i], i))
    assert _exact_splitter._pairs_largest_first(rows) == expected
    assert _exact_splitter._pairs_largest_first([]) == []
    with pytest.raises(ValueError, match="at most 128 pairs"):
        _exact_splitter._pairs_largest_first([1] * 129)


# ------------------------------------------------- the root's blocks at its children
def _check_child_counts(column, first, r, block_rows, pos, sums):
    """One feature's children's counts against the twin: the positions of each
    child's rows (``first`` 1: the first child) in the feature's sorted order,
    counted and summed in sorted order up to each block (bit for bit: ``r`` on a
    grid)."""
    n = len(column)
    starts = np.minimum(np.arange(sums.shape[0] + 1) * block_rows, n)
    order = np.argsort(column, kind="stable")
    for c, member in enumerate((first[order] == 1, first[order] == 0)):
        before = np.concatenate([[0], np.cumsum(member)])[starts]
        np.testing.assert_array_equal(pos[:, c], before)
        in_order = np.where(member, r[order], 0.0)
        prefix = np.concatenate([[0.0], np.cumsum(in_order)])[starts[:-1]]
        assert sums[:, c].tobytes() == prefix.tobytes()


@pytest.mark.parametrize("block_rows", [64, 1000])
def test_child_block_counts_match_a_numpy_twin(block_rows):
    """The rows and w * r of each child before each block of the root's sorted
    order (a pass in row order over the block bytes and the smaller child's bits,
    the other child's from the block's positions and the root's block sums) are
    the twin's: the positions of each child's rows in the feature's sorted order,
    counted and summed in sorted order (bit for bit: values on a grid), for even,
    uneven (3% and 97%: either child counted), empty and full children, the last
    bit word part full (4,000 rows)."""
    n = 4000
    X = _column_data(n)
    finder = _finder(X, 1, block_rows)
    n_blocks = -(-n // block_rows)
    rng = np.random.default_rng(2)
    r = np.round(rng.normal(size=n) * 2 ** 20) / 2 ** 20
    for share in (0.5, 0.03, 0.97, 0.0, 1.0):
        first = (rng.uniform(size=n) < share).astype(np.uint8)
        pos, sums = finder._child_block_sums(r, first, n_threads=1 + int(share * 4))
        assert pos.shape == (3, n_blocks + 1, 2) and sums.shape == (3, n_blocks, 2)
        for f in range(3):
            _check_child_counts(X[:, f], first, r, block_rows, pos[f], sums[f])
    with pytest.raises(ValueError, match="must have 4000 rows"):
        finder._child_block_sums(r[:10], first)
    with pytest.raises(ValueError, match="no block bytes"):
        ExactSplitFinder(X, 2)._child_block_sums(r, first)


def test_the_passes_of_a_default_finder_add_its_chunks_in_order():
    """With the default rule's chunks (16,384 rows, each read 2,048 rows at a time
    for every feature: 40,003 rows make three chunks, the last part full), the
    root's block sums and its children's counts (the first child counted, then the
    second) are the twins', and the same bits on 1, 2 and 5 threads (more threads
    than chunks). The values are on a grid whose sums of the chunks are exact, as
    a tree's are."""
    n = 40_003
    rng = np.random.default_rng(8)
    X = np.asfortranarray(np.column_stack([
        rng.permutation(n), np.round(rng.normal(size=n) * 3), rng.normal(size=n),
    ]).astype(np.float32))
    finder = ExactSplitFinder(X, 6)
    bytes_ = finder._block_bytes()
    assert bytes_ is not None
    n_blocks = int(bytes_.max()) + 1
    r = np.round(rng.normal(size=n) * 2 ** 20) / 2 ** 20
    # The first child 30% of the rows (counted), then 70% (the second counted).
    firsts = {share: (rng.uniform(size=n) < share).astype(np.uint8) for share in (0.3, 0.7)}
    results = []
    for share, n_threads in ((0.3, 1), (0.3, 2), (0.3, 5), (0.7, 1), (0.7, 5)):
        first = firsts[share]
        sums = finder._block_sums_from_bytes(r, n_threads)
        pos, child_sums = finder._child_block_sums(r, first, n_threads)
        results.append((sums.tobytes(), pos.tobytes(), child_sums.tobytes()))
        for f in range(3):
            twin = np.bincount(bytes_[f], weights=r, minlength=n_blocks)
            assert sums[f].tobytes() == twin.tobytes()
            _check_child_counts(X[:, f], first, r, 32768, pos[f], child_sums[f])
    assert results[0] == results[1] == results[2] and results[3] == results[4]


def _children_data(n, share, seed=6):
    """A root split on feature 0 (a large step at its ``share`` quantile: the
    first child ``share`` of the rows), then in each child residuals whose best
    splits tie exactly in feature 1 at two positions far apart (``_tied_residuals``
    over the child's rows in the order of feature 1; feature 2 a copy: a tie across
    features), feature 3 runs of 7 equal values of feature 1 and feature 4 many
    ties (runs across block boundaries)."""
    rng = np.random.default_rng(seed)
    x0 = rng.permutation(n).astype(np.float32)
    x1 = rng.permutation(n).astype(np.float32)
    left = x0 < share * n
    r = np.where(left, -1000.0, 1000.0)
    for side in (left, ~left):
        rows = np.flatnonzero(side)
        rows = rows[np.argsort(x1[rows])]
        r[rows] += _tied_residuals(len(rows))
    X = np.column_stack([x0, x1, x1, np.floor(x1 / 7),
                         np.round(rng.normal(size=n) * 2)]).astype(np.float32)
    return np.asfortranarray(X), r


@pytest.mark.parametrize("share", [0.5, 0.93, 0.01])
def test_the_roots_children_in_blocks_grow_the_trees_of_the_whole_scan(share):
    """Trees of depth 2 and 3 whose root's children are scanned in the root's
    blocks (64, 500 and 2,000 positions, 1 to 3 threads) are those of the
    whole-feature scan on one thread, node for node and bit for bit: exact ties
    within a child across blocks and across features, runs of equal values across
    block boundaries, even and uneven children (a child of 1% of the rows: blocks
    where it has no row, and a previous row many positions back), leaf minimums."""
    n = 12000
    X, r = _children_data(n, share)
    for depth, msl in ((2, 1), (3, 1), (2, 40)):
        def grow(n_threads, block_rows):
            finder = _finder(X, n_threads, block_rows)
            grower = TreeGrower(X, finder, depth, 2, msl, 0.0, X.shape[1], n_threads)
            grower.grow(None, r, None, 0)
            return grower.nodes_array().tobytes(), grower.node_of_row.copy(), finder
        nodes_e, leaf_e, _ = grow(1, 0)
        nodes = np.frombuffer(nodes_e, dtype=NODE_DTYPE)
        assert nodes["feature"][0] == 0 and len(nodes) >= 7
        if msl == 1:
            # Each child's tie goes to its first quarter, on feature 1.
            assert list(nodes["feature"][1:3]) == [1, 1]
        for block_rows in (64, 500, 2000):
            for n_threads in (1, 2, 3):
                nodes_g, leaf_g, finder = grow(n_threads, block_rows)
                assert finder.child_block_levels == 1
                assert nodes_g == nodes_e, (share, depth, msl, block_rows, n_threads)
                np.testing.assert_array_equal(leaf_g, leaf_e)


def test_a_copy_for_side_by_side_growers_carries_the_blocks_to_the_children():
    """A finder's copy (``with_threads``, as the trees of an iteration grown side by
    side get: the block bytes shared, the children's counts and sums its own)
    scans the root's children in the root's blocks too, its trees grown in turn
    with the original's those of the whole scan on one thread, bit for bit."""
    n = 12000
    X, r = _children_data(n, 0.2)
    reference = ExactSplitFinder(X, 1)
    grower = TreeGrower(X, reference, 3, 2, 1, 0.0, X.shape[1], 1)
    grower.grow(None, r, None, 0)
    expected = grower.nodes_array().tobytes()
    previous = _exact_splitter._force_blocks(64)
    try:
        original = ExactSplitFinder(X, 3)
        copy = original.with_threads(2)
        for finder, threads in ((original, 3), (copy, 2), (original, 3), (copy, 2)):
            grower = TreeGrower(X, finder, 3, 2, 1, 0.0, X.shape[1], threads)
            grower.grow(None, r, None, 0)
            assert grower.nodes_array().tobytes() == expected
    finally:
        _exact_splitter._force_blocks(previous)
    for finder in (original, copy):
        assert finder.child_block_levels == 2
        assert finder.child_count_errors == 0


def test_the_default_rule_carries_the_blocks_to_the_children():
    """Where the default rule blocks the children (``child_block_plan``: 40,000 x 5
    on 4 threads, the last feature), the root's children are scanned in the
    root's blocks, and the trees are those of one thread, bit for bit; where the
    root is blocked but the children's scan has too few threads for the rule
    (40,000 x 3 on 6 threads: the rule of 3 threads), or the finder keeps no
    node segments, the children's level is the whole features'."""
    n = 40_000
    X5, r = _children_data(n, 0.3)
    X3 = np.asfortranarray(X5[:, :3])
    for X, n_threads, segments, carried in ((X5, 4, True, 1), (X3, 6, True, 0),
                                           (X5, 4, False, 0)):
        d = X.shape[1]
        assert _exact_splitter.child_block_plan(n, d, n_threads)[0] == (
            carried if segments else 1)
        trees = []
        for threads in (1, n_threads):
            finder = ExactSplitFinder(X, threads, segments=segments)
            grower = TreeGrower(X, finder, 3, 2, 1, 0.0, d, threads)
            grower.grow(None, r, None, 0)
            trees.append((grower.nodes_array().tobytes(), finder.child_block_levels))
            assert finder.child_count_errors == 0
        assert trees[0] == (trees[1][0], 0) and trees[1][1] == carried
        assert finder.blocked_levels == 1


def _scrambled(mode):
    """``_scramble_tasks(mode)`` until the block ends."""
    class _Scope:
        def __enter__(self):
            self.previous = _exact_splitter._scramble_tasks(mode)

        def __exit__(self, *exc):
            _exact_splitter._scramble_tasks(self.previous)
    return _Scope()


@pytest.mark.parametrize("mode", [1, 2])
@pytest.mark.parametrize("share", [0.5, 0.01])
def test_tasks_handed_out_in_any_order_grow_the_same_trees(mode, share):
    """With the tasks of every level handed out in reverse or shuffled order and
    the split scratch (and the children's segments on their blocks' level) filled
    with -1 before each scan (``_scramble_tasks``), the trees are those of the
    planned order and of the whole scan on one thread, bit for bit: no task reads a
    row another task writes (libgomp hands the tasks out in order, so a block that
    read the previous block's part of a segment would pass without the hook), and
    none reads scratch it has not written. Blocks at the root and at its children
    (64 and 500 positions, even and 1% children), pair tasks below, 1 and 3
    threads; no split disagrees with its counts."""
    n = 12000
    X, r = _children_data(n, share)

    def grow(n_threads, block_rows):
        finder = _finder(X, n_threads, block_rows)
        grower = TreeGrower(X, finder, 4, 2, 1, 0.0, X.shape[1], n_threads)
        grower.grow(None, r, None, 0)
        return grower.nodes_array().tobytes(), grower.node_of_row.copy(), finder

    nodes_e, leaf_e, _ = grow(1, 0)
    for block_rows in (64, 500):
        for n_threads in (1, 3):
            with _scrambled(mode):
                nodes_g, leaf_g, finder = grow(n_threads, block_rows)
            assert finder.child_block_levels == 1 and finder.blocked_levels == 1
            assert finder.pair_levels >= 1
            assert finder.child_count_errors == 0
            assert nodes_g == nodes_e, (mode, share, block_rows, n_threads)
            np.testing.assert_array_equal(leaf_g, leaf_e)


@pytest.mark.parametrize("case", [c for c in CASES
                                  if c not in ("weighted", "zero_weights", "subsample")])
def test_the_whole_tree_cases_in_scrambled_order(case):
    """The whole-tree test's cases of unit weights and every row
    (``test_blocks_and_pair_tasks_grow_the_trees_of_the_whole_feature_scan``) with
    every level's tasks reversed and shuffled and the scratch filled with -1
    (``_scramble_tasks``), blocks of 79 and 500 positions (at the root and its
    children, pair tasks below) on 1 and 3 threads: the trees of the whole scan
    on one thread, node for node and bit for bit."""
    Xf, residuals, w, categorical = _case_data(case)
    expected, _ = _grow_all(Xf, case, 1, 0, residuals, w, categorical)
    children = 0
    for mode in (1, 2):
        for block_rows in (79, 500):
            for n_threads in (1, 3):
                with _scrambled(mode):
                    got, finder = _grow_all(Xf, case, n_threads, block_rows, residuals,
                                            w, categorical)
                children += finder.child_block_levels
                assert finder.child_count_errors == 0
                for t, (e, g) in enumerate(zip(expected, got)):
                    assert g[0] == e[0], (case, mode, block_rows, n_threads, t)
                    np.testing.assert_array_equal(g[1], e[1])
    assert children > 0


def test_scramble_tasks_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="mode must be 0, 1 or 2"):
        _exact_splitter._scramble_tasks(3)
