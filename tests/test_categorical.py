"""Categorical splits of the split finders (``_categorical.pxd``), against a brute
force over every partition of a node's categories.

A categorical feature's values are category codes 0, 1, ... (NaN missing); in the
histogram finder, bin b is code b. The sums are whole numbers (the grid of
``_choice.pxd`` with unit 1), so the brute force ranks partitions exactly, in
fractions: the finders' split must reach the largest proxy over all 2^(k-1) - 1
partitions of the node's k categories, with missing values on either side; among
equal proxies it must be the one the documented order offers first (a naive twin of
that order). The finders are reached through ``level_splits``; the grower does not
grow categorical trees yet.
"""
import itertools
from fractions import Fraction

import numpy as np
import pytest

from gbc_core._common import ROW_STAT_DTYPE
from gbc_core._exact_splitter import ExactSplitFinder
from gbc_core._histogram_splitter import HistogramSplitFinder

from conftest import concatenate_trees

MISSING_RIGHT, MISSING_LEFT, MISSING_TO_LARGER = 0, 1, 2
MAX_BINS = 32


def _finders(X):
    """The exact finder on X and the histogram finder on its codes as bins."""
    X32 = np.asfortranarray(X, dtype=np.float32)
    n, d = X32.shape
    bins = np.where(np.isnan(X32), MAX_BINS, np.nan_to_num(X32)).astype(np.uint8)
    bins = np.asfortranarray(bins)
    n_bins = np.array([max(int(np.nanmax(X32[:, f], initial=0)) + 1, 1) for f in range(d)],
                      dtype=np.int32)
    lo = np.full((d, MAX_BINS), np.inf, dtype=np.float32)
    hi = np.full((d, MAX_BINS), -np.inf, dtype=np.float32)
    for f in range(d):
        lo[f, :n_bins[f]] = np.arange(n_bins[f])
        hi[f, :n_bins[f]] = np.arange(n_bins[f])
    return (ExactSplitFinder(X32, 1),
            HistogramSplitFinder(bins, n_bins, lo, hi, MAX_BINS, 1))


def _same_splits(a, b):
    """The finders' splits, field by field (``bin`` is the histogram finder's
    alone)."""
    for name in a.dtype.names:
        if name != "bin":
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def _stats(wr, w):
    stats = np.zeros(wr.shape[0], dtype=ROW_STAT_DTYPE)
    stats["wr"] = wr
    stats["w"] = w
    return stats


def _proxy(total, left):
    """Friedman's proxy in fractions: (s_r w_l - s_l w_r)^2 / (w_l w_r)."""
    tn, tw, ts = total
    ln, lw, ls = left
    diff = (ts - ls) * lw - ls * (tw - lw)
    return Fraction(diff * diff, lw * (tw - lw))


def _valid(total, left, min_samples_leaf):
    return (left[0] >= min_samples_leaf and total[0] - left[0] >= min_samples_leaf
            and left[1] > 0 and total[1] - left[1] > 0)


def _groups(x, wr, w):
    """(n, w, s) of each category present (code -> sums) and of the missing rows,
    as Python integers."""
    groups = {}
    for c in np.unique(x[~np.isnan(x)]).astype(int):
        sel = x == c
        groups[int(c)] = (int(sel.sum()), int(w[sel].sum()), int(wr[sel].sum()))
    sel = np.isnan(x)
    miss = (int(sel.sum()), int(w[sel].sum()), int(wr[sel].sum()))
    return groups, miss


def _add(a, b):
    return tuple(p + q for p, q in zip(a, b))


def brute_force_best(x, wr, w, min_samples_leaf=1, min_samples_category=1):
    """The largest proxy over every set of categories sent left (none of fewer than
    ``min_samples_category`` rows: they stay right), missing values on either side,
    and the (set, missing left) pairs that reach it; None: no valid split."""
    groups, miss = _groups(x, wr, w)
    total = miss
    for c in groups:
        total = _add(total, groups[c])
    codes = sorted(c for c in groups if groups[c][0] >= min_samples_category)
    best, arg = None, []
    for r in range(len(codes) + 1):
        for subset in itertools.combinations(codes, r):
            base = (0, 0, 0)
            for c in subset:
                base = _add(base, groups[c])
            for miss_left in ((False, True) if miss[0] else (False,)):
                left = _add(base, miss) if miss_left else base
                if not _valid(total, left, min_samples_leaf):
                    continue
                p = _proxy(total, left)
                if best is None or p > best:
                    best, arg = p, []
                if p == best:
                    arg.append((frozenset(subset), miss_left))
    return best, arg


def twin_choice(x, wr, w, min_samples_leaf=1, min_samples_category=1):
    """The split the documented order keeps: categories of at least
    ``min_samples_category`` rows sorted by mean (s / w as a float64), ties by code
    (the others stay right); prefixes in turn, missing right then left (without
    missing values: one candidate), then every sorted category left with missing
    values right; where rows of categories were set apart, then the suffixes in turn
    (the last category, the last two, ... all), missing right then left, and the
    missing values alone; the first of the largest proxy wins. Returns (set, missing
    side, proxy)."""
    groups, miss = _groups(x, wr, w)
    total = miss
    for c in groups:
        total = _add(total, groups[c])
    sorted_codes = [c for c in groups if groups[c][0] >= min_samples_category]
    order = sorted(sorted_codes, key=lambda c: (
        groups[c][2] / groups[c][1] if groups[c][1] > 0 else 0.0, c))
    best = None
    acc = (0, 0, 0)

    def offer(left, chosen, side):
        nonlocal best
        if _valid(total, left, min_samples_leaf):
            p = _proxy(total, left)
            if best is None or p > best[2]:
                best = (frozenset(chosen), side, p)

    for j, c in enumerate(order[:-1]):
        acc = _add(acc, groups[c])
        if miss[0] == 0:
            offer(acc, order[:j + 1], MISSING_TO_LARGER)
        else:
            offer(acc, order[:j + 1], MISSING_RIGHT)
            offer(_add(acc, miss), order[:j + 1], MISSING_LEFT)
    if miss[0] and order:
        offer(_add(acc, groups[order[-1]]), order, MISSING_RIGHT)
    if any(0 < groups[c][0] < min_samples_category for c in groups):
        acc = (0, 0, 0)
        for j in range(len(order) - 1, -1, -1):
            acc = _add(acc, groups[order[j]])
            if miss[0] == 0:
                offer(acc, order[j:], MISSING_TO_LARGER)
            else:
                offer(acc, order[j:], MISSING_RIGHT)
                offer(_add(acc, miss), order[j:], MISSING_LEFT)
        if miss[0]:
            offer(miss, [], MISSING_LEFT)
    return best


def _codes_left(bits):
    return frozenset(c for c in range(256) if (int(bits[c // 32]) >> (c % 32)) & 1)


def _random_node(rng, n, k, nan_share, weighted, spread=20):
    x = rng.integers(0, k, n).astype(np.float64)
    x[rng.random(n) < nan_share] = np.nan
    wr = rng.integers(-spread, spread + 1, n).astype(np.float64)
    w = rng.integers(1, 5, n).astype(np.float64) if weighted else np.ones(n)
    return x, wr * w if weighted else wr, w


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("nan_share", [0.0, 0.15])
@pytest.mark.parametrize("weighted", [False, True])
def test_root_split_is_the_best_partition(k, nan_share, weighted):
    rng = np.random.default_rng(100 * k + int(100 * nan_share) + weighted)
    for trial in range(15):
        n = int(rng.integers(2 * k, 12 * k))
        x, wr, w = _random_node(rng, n, k, nan_share, weighted)
        best, arg = brute_force_best(x, wr, w)
        twin = twin_choice(x, wr, w)
        for finder in _finders(x[:, None]):
            out = finder.level_splits(_stats(wr, w), np.zeros(n, np.int32),
                                      grid=(1.0, 1.0), categorical=[True])[0]
            if best is None:
                assert out["feature"] == -1
                continue
            assert out["feature"] == 0 and out["categorical"] == 1
            left = _codes_left(out["cat_bits"])
            miss_left = out["missing_go_left"] == MISSING_LEFT
            # The finder's split reaches the brute force's best proxy, exactly.
            assert (left, miss_left) in arg or (
                out["missing_go_left"] == MISSING_TO_LARGER and (left, False) in arg)
            assert out["proxy"] == pytest.approx(float(best), rel=1e-12)
            # ... and it is the one the documented order offers first.
            assert (left, int(out["missing_go_left"])) == twin[:2]
            sel = np.isin(x, list(left)) | (np.isnan(x) & miss_left)
            assert (out["left_n"], out["left_w"], out["left_s"]) == (
                sel.sum(), w[sel].sum(), wr[sel].sum())


@pytest.mark.parametrize("min_samples_leaf", [1, 3])
def test_ties_and_minimum_leaf_size(min_samples_leaf):
    """Few distinct residuals: many partitions tie; the first offered wins."""
    rng = np.random.default_rng(7 + min_samples_leaf)
    for trial in range(40):
        k = int(rng.integers(2, 7))
        n = int(rng.integers(2 * k, 6 * k))
        x, wr, w = _random_node(rng, n, k, 0.2 * (trial % 2), trial % 3 == 0, spread=1)
        best, arg = brute_force_best(x, wr, w, min_samples_leaf)
        twin = twin_choice(x, wr, w, min_samples_leaf)
        for finder in _finders(x[:, None]):
            out = finder.level_splits(_stats(wr, w), np.zeros(n, np.int32),
                                      min_samples_leaf=min_samples_leaf, grid=(1.0, 1.0),
                                      categorical=[True])[0]
            if best is None or twin is None:
                assert best is None and twin is None and out["feature"] == -1
                continue
            assert twin[2] == best
            assert (_codes_left(out["cat_bits"]), int(out["missing_go_left"])) == twin[:2]


@pytest.mark.parametrize("min_samples_category", [1, 3, 10])
@pytest.mark.parametrize("nan_share", [0.0, 0.15])
def test_rare_categories_stay_right(min_samples_category, nan_share):
    """Categories of fewer than ``min_samples_category`` rows of the node are never
    sent left; the finders keep the documented order's choice (the twin's), which is
    the brute force's best over the partitions keeping the rare ones right."""
    m = min_samples_category
    rng = np.random.default_rng(31 * m + int(100 * nan_share))
    n_rare_nodes = 0
    for trial in range(40):
        k = int(rng.integers(2, 7))
        n = int(rng.integers(2 * k, 8 * k))
        # Skewed category shares: some categories have few rows.
        p = rng.dirichlet(np.full(k, 0.6))
        x = rng.choice(k, size=n, p=p).astype(np.float64)
        x[rng.random(n) < nan_share] = np.nan
        weighted = trial % 3 == 0
        w = rng.integers(1, 5, n).astype(np.float64) if weighted else np.ones(n)
        wr = rng.integers(-20, 21, n).astype(np.float64) * w
        groups, _ = _groups(x, wr, w)
        rare = {c for c in groups if groups[c][0] < m}
        n_rare_nodes += bool(rare)
        best, arg = brute_force_best(x, wr, w, min_samples_category=m)
        twin = twin_choice(x, wr, w, min_samples_category=m)
        for finder in _finders(x[:, None]):
            out = finder.level_splits(_stats(wr, w), np.zeros(n, np.int32), grid=(1.0, 1.0),
                                      categorical=[True], min_samples_category=m)[0]
            if twin is None:
                assert best is None and out["feature"] == -1
                continue
            assert out["feature"] == 0 and out["categorical"] == 1
            left = _codes_left(out["cat_bits"])
            assert not left & rare
            assert (left, int(out["missing_go_left"])) == twin[:2]
            assert out["proxy"] == pytest.approx(float(twin[2]), rel=1e-12)
            assert twin[2] == best
            miss_left = out["missing_go_left"] == MISSING_LEFT
            sel = np.isin(x, list(left)) | (np.isnan(x) & miss_left)
            assert (out["left_n"], out["left_w"], out["left_s"]) == (
                sel.sum(), w[sel].sum(), wr[sel].sum())
    # The draws hold nodes with rare categories (for m > 1), so the rule is tested.
    assert n_rare_nodes >= (10 if m > 1 else 0)


def test_min_samples_category_1_is_the_default_bit_for_bit():
    X, wr, w, slot = _level_data(3, 300, 4, 4)
    categorical = [True, False, True, True]
    for finder in _finders(X):
        a = finder.level_splits(_stats(wr, w), slot, grid=(1.0, 1.0), categorical=categorical)
        b = finder.level_splits(_stats(wr, w), slot, grid=(1.0, 1.0), categorical=categorical,
                                min_samples_category=1)
        assert a.tobytes() == b.tobytes()


def _level_data(seed, n, d, n_nodes):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, rng.integers(2, 9), n) for _ in range(d)]
                        ).astype(np.float64)
    X[rng.random(X.shape) < 0.1] = np.nan
    w = rng.integers(1, 4, n).astype(np.float64)
    wr = rng.integers(-9, 10, n).astype(np.float64) * w
    slot = rng.integers(-1, n_nodes, n).astype(np.int32)
    return X, wr, w, slot


@pytest.mark.parametrize("seed", range(6))
def test_levels_hist_equals_exact_and_brute_force(seed):
    """Several nodes and features, some categorical, some numeric: both finders
    choose the same splits, and each categorical one is the brute force's best over
    its node and the categorical features when it wins."""
    X, wr, w, slot = _level_data(seed, 300, 4, 4)
    categorical = np.array([True, False, True, seed % 2 == 0])
    exact, hist = _finders(X)
    a = exact.level_splits(_stats(wr, w), slot, grid=(1.0, 1.0), categorical=categorical)
    b = hist.level_splits(_stats(wr, w), slot, grid=(1.0, 1.0), categorical=categorical)
    _same_splits(a, b)
    # Derived siblings (parent minus sibling) in the histogram finder.
    parent = np.where(slot >= 0, slot // 2, -1).astype(np.int32)
    c = hist.level_splits(_stats(wr, w), slot, grid=(1.0, 1.0), categorical=categorical,
                          parent_slot=parent)
    d = exact.level_splits(_stats(wr, w), slot, grid=(1.0, 1.0), categorical=categorical,
                           parent_slot=parent)
    _same_splits(c, d)
    for s in range(4):
        rows = slot == s
        best_cat = max((brute_force_best(X[rows, f], wr[rows], w[rows])[0] or 0, f)
                       for f in np.flatnonzero(categorical))
        if a[s]["feature"] >= 0 and categorical[a[s]["feature"]]:
            assert a[s]["proxy"] == pytest.approx(float(best_cat[0]), rel=1e-12)
        else:
            assert best_cat[0] <= a[s]["proxy"] * (1 + 1e-12)


def test_no_categorical_feature_is_unchanged():
    """A mask without a categorical feature (or none) gives the numeric splits bit
    for bit."""
    X, wr, w, slot = _level_data(11, 400, 3, 2)
    for finder in _finders(X):
        a = finder.level_splits(_stats(wr, w), slot, grid=(1.0, 1.0))
        b = finder.level_splits(_stats(wr, w), slot, grid=(1.0, 1.0),
                                categorical=[False] * 3)
        assert a.tobytes() == b.tobytes()
        assert not a["categorical"].any()


def test_unit_weights_and_threads():
    """Unit weights (residuals alone) and one or two threads (enough values for the
    exact finder's parallel scan, and several nodes): the same splits, the best
    partition of each node."""
    rng = np.random.default_rng(3)
    n = 40000
    X = rng.integers(0, 6, (n, 4)).astype(np.float64)
    X[rng.random(X.shape) < 0.05] = np.nan
    wr = rng.integers(-5, 6, n).astype(np.float64)
    w = np.ones(n)
    slot = rng.integers(0, 3, n).astype(np.int32)
    exact, hist = _finders(X)
    X32 = np.asfortranarray(X, dtype=np.float32)
    ref = None
    for finder in (exact, ExactSplitFinder(X32, 2), hist, hist.with_threads(2)):
        out = finder.level_splits(_stats(wr, w), slot, grid=(1.0, 1.0), unit_weights=True,
                                  categorical=[True] * 4)
        ref = out if ref is None else ref
        _same_splits(out, ref)
    for s in range(3):
        rows = slot == s
        best = max(brute_force_best(X[rows, f], wr[rows], w[rows])[0] for f in range(4))
        assert ref[s]["proxy"] == pytest.approx(float(best), rel=1e-12)


def test_the_categorical_mask_is_checked():
    exact, hist = _finders(np.zeros((4, 2)))
    for finder in (exact, hist):
        with pytest.raises(ValueError, match="categorical must have 2 values"):
            finder.level_splits(_stats(np.ones(4), np.ones(4)), np.zeros(4, np.int32),
                                categorical=[True])


# ------------------------------------------------------------------ grown trees
from gbc_core._grower import TreeGrower  # noqa: E402


def _tree_data(seed, n=3000):
    """Two categorical features (5 and 12 categories, NaN among them) with an effect
    per category, and a numeric one."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 5, n), rng.integers(0, 12, n),
                         rng.integers(0, 20, n)]).astype(np.float64)
    X[rng.random(X.shape) < 0.08] = np.nan
    effect = rng.normal(size=12)
    r = (effect[np.nan_to_num(X[:, 1], nan=3).astype(int)] + 0.3 * np.nan_to_num(X[:, 0])
         + 0.05 * np.nan_to_num(X[:, 2]) + rng.normal(scale=0.5, size=n))
    w = rng.integers(1, 4, n).astype(np.float64)
    return X, r, w


def naive_leaves(nodes, bitsets, categorical, X):
    """The leaf of every row: a categorical node sends a row left when its code is in
    the node's set (row ``threshold`` of ``bitsets``; NaN and codes out of range by
    missing_go_left), a numeric node when x <= threshold32."""
    out = np.empty(X.shape[0], dtype=np.int64)
    for i in range(X.shape[0]):
        k = 0
        while nodes[k]["feature"] >= 0:
            f = nodes[k]["feature"]
            x = np.float32(X[i, f])
            miss = bool(nodes[k]["missing_go_left"])
            if categorical[f]:
                bits = bitsets[int(nodes[k]["threshold"])]
                if np.isnan(x) or not 0 <= x < 256:
                    left = miss
                else:
                    c = int(x)
                    left = bool((int(bits[c // 32]) >> (c % 32)) & 1)
            else:
                left = miss if np.isnan(x) else bool(x <= nodes[k]["threshold32"])
            k = nodes[k]["left"] if left else nodes[k]["right"]
        out[i] = k
    return out


def _grow(finder, X, r, w, mask, categorical, **options):
    X32 = np.asfortranarray(X, dtype=np.float32)
    grower = TreeGrower(X32, finder, options.pop("max_depth", 5), 2, 1, 0.0, X.shape[1], 1,
                        categorical=categorical, **options)
    grower.grow(_stats(r * w, w), r, mask, 5)
    return grower.nodes_array(), grower.cat_bitsets(), np.asarray(grower.node_of_row)


@pytest.mark.parametrize("subsample", [None, 0.7])
@pytest.mark.parametrize("options", [{}, {"max_leaf_nodes": 9, "max_depth": -1},
                                     {"ccp_alpha": 0.05},
                                     {"min_impurity_decrease": 1e-3}])
def test_grown_trees_route_rows_by_their_sets(subsample, options):
    """Every row (in the bag or out of it) ends in the leaf a naive traversal by the
    stored sets gives; the histogram finder's tree is the exact one's, node for node
    and set for set."""
    X, r, w = _tree_data(1)
    categorical = np.array([True, True, False])
    rng = np.random.default_rng(2)
    mask = None if subsample is None else (rng.random(X.shape[0]) < subsample).astype(np.uint8)
    grown = [_grow(finder, X, r, w, mask, categorical, **dict(options))
             for finder in _finders(X)]
    for nodes, bitsets, node_of_row in grown:
        split = nodes["feature"] >= 0
        assert categorical[nodes["feature"][split]].sum() >= 3
        np.testing.assert_array_equal(naive_leaves(nodes, bitsets, categorical, X),
                                      node_of_row)
    (a, bits_a, rows_a), (b, bits_b, rows_b) = grown
    assert a.tobytes() == b.tobytes()
    cat_rows = a["threshold"][(a["feature"] >= 0) & categorical[np.maximum(a["feature"], 0)]]
    np.testing.assert_array_equal(bits_a[cat_rows.astype(int)], bits_b[cat_rows.astype(int)])
    np.testing.assert_array_equal(rows_a, rows_b)


@pytest.mark.parametrize("options", [{}, {"max_leaf_nodes": 9, "max_depth": -1}])
def test_grown_trees_never_send_a_rare_category_left(options):
    """With ``min_samples_category`` = 60, no categorical node of a grown tree sends
    left a category holding fewer than 60 of the node's rows; hist == exact; and 1
    gives the trees of the default, bit for bit."""
    X, r, w = _tree_data(12, n=1500)
    categorical = np.array([True, True, False])
    m = 60
    grown = []
    for finder in _finders(X):
        nodes, bits, node_of_row = _grow(finder, X, r, w, None, categorical,
                                         min_samples_category=m, **dict(options))
        grown.append((nodes, bits, node_of_row))
        # Each node's rows: those whose path from the root passes through it.
        rows_of = {0: np.arange(X.shape[0])}
        n_checked = 0
        for k in range(nodes.shape[0]):
            f = nodes[k]["feature"]
            if f < 0:
                continue
            rows = rows_of[k]
            x = X[rows, f]
            if categorical[f]:
                table = bits[int(nodes[k]["threshold"])]
                left_codes = _codes_left(table)
                counts = np.bincount(x[~np.isnan(x)].astype(int), minlength=256)
                assert all(counts[c] >= m for c in left_codes), (k, left_codes)
                go_left = np.isin(x, list(left_codes))
                n_checked += 1
            else:
                go_left = np.float32(x) <= nodes[k]["threshold32"]
            go_left = np.where(np.isnan(x), bool(nodes[k]["missing_go_left"]), go_left)
            rows_of[int(nodes[k]["left"])] = rows[go_left]
            rows_of[int(nodes[k]["right"])] = rows[~go_left]
        assert n_checked >= 2
        # A rule that changes the trees: 1 does not give these.
        default = _grow(finder, X, r, w, None, categorical, **dict(options))
        ones = _grow(finder, X, r, w, None, categorical, min_samples_category=1,
                     **dict(options))
        assert default[0].tobytes() == ones[0].tobytes()
        used = _set_rows(default[0], categorical)
        np.testing.assert_array_equal(default[1][used], ones[1][used])
        assert default[0].tobytes() != nodes.tobytes()
    (a, bits_a, rows_a), (b, bits_b, rows_b) = grown
    assert a.tobytes() == b.tobytes()
    used = _set_rows(a, categorical)
    np.testing.assert_array_equal(bits_a[used], bits_b[used])
    np.testing.assert_array_equal(rows_a, rows_b)


def _set_rows(nodes, categorical):
    """The rows of the grower's table of sets that the categorical nodes use."""
    cat = (nodes["feature"] >= 0) & categorical[np.maximum(nodes["feature"], 0)]
    return nodes["threshold"][cat].astype(int)


def test_root_of_a_grown_tree_is_the_best_partition():
    X, r, w = _tree_data(4, n=600)
    X = X[:, :2]
    for finder in _finders(X):
        nodes, bitsets, _ = _grow(finder, X, r, w, None, [True, True], max_depth=1)
        out = finder.level_splits(_stats(r * w, w), np.zeros(X.shape[0], np.int32),
                                  categorical=[True, True])[0]
        assert nodes[0]["feature"] == out["feature"]
        np.testing.assert_array_equal(bitsets[int(nodes[0]["threshold"])], out["cat_bits"])


def test_without_categorical_features_the_tree_is_unchanged():
    X, r, w = _tree_data(5)
    for finder in _finders(X):
        a = _grow(finder, X, r, w, None, None)
        b = _grow(finder, X, r, w, None, [False, False, False])
        assert a[0].tobytes() == b[0].tobytes() and a[1].shape == (0, 8)
        np.testing.assert_array_equal(a[2], b[2])


def test_grower_refusals():
    X, r, w = _tree_data(6, n=50)
    X32 = np.asfortranarray(X, dtype=np.float32)
    finder = _finders(X)[0]
    with pytest.raises(ValueError, match="categorical must hold 3 booleans"):
        TreeGrower(X32, finder, 3, 2, 1, 0.0, 3, 1, categorical=[True])
    with pytest.raises(ValueError, match="categorical feature cannot have a monotonic"):
        TreeGrower(X32, finder, 3, 2, 1, 0.0, 3, 1, categorical=[True, False, False],
                   monotonic_cst=[1, 0, 0])
    with pytest.raises(ValueError, match="min_samples_category must be at least 1, got 0"):
        TreeGrower(X32, finder, 3, 2, 1, 0.0, 3, 1, min_samples_category=0)


def test_prediction_kernel_against_naive_traversal():
    """Trees grown by both finders, concatenated with one table of sets (each tree's
    rows shifted): the kernel's leaves are the naive traversal's, for the training
    rows, rows with codes never seen (out of range: the missing side) and NaN."""
    from gbc_core._predictor import categorical_leaves

    X, r, w = _tree_data(8)
    categorical = np.array([True, True, False])
    grown = [_grow(finder, X, r, w, None, categorical, max_depth=depth)[:2]
             for finder in _finders(X) for depth in (3, 6)]
    nodes, offsets, table, trees = concatenate_trees(*zip(*grown), categorical)
    X_new = X.copy()
    X_new[:50, 0] = 7      # a code no tree has seen
    X_new[50:100, 1] = 300  # beyond any code
    X_new[100:150, 1] = -1
    for threads in (1, 2):
        got = categorical_leaves(nodes, offsets, table, categorical, X_new, threads)
        for t, tree in enumerate(trees):
            np.testing.assert_array_equal(got[:, t], naive_leaves(tree, table, categorical,
                                                                  X_new))
    # Values that are no code go where missing values go.
    as_nan = X_new.copy()
    as_nan[50:150, 1] = np.nan
    np.testing.assert_array_equal(categorical_leaves(nodes, offsets, table, categorical, X_new),
                                  categorical_leaves(nodes, offsets, table, categorical, as_nan))
    with pytest.raises(ValueError, match="not a row of the"):
        categorical_leaves(nodes, offsets, table[:1], categorical, X)
    with pytest.raises(ValueError, match="categorical must hold 3 booleans"):
        categorical_leaves(nodes, offsets, table, [True], X)


def _categorical_ensemble(n_outputs=1):
    """Trees grown by both finders on categorical data, their sets in one table,
    as an Ensemble of 4 trees (n_outputs 1 or 2), with the rows and the trees."""
    from gbc_core import Ensemble

    X, r, w = _tree_data(9)
    categorical = np.array([True, True, False])
    grown = [_grow(finder, X, r, w, None, categorical, max_depth=depth)[:2]
             for finder in _finders(X) for depth in (3, 5)]
    _, _, table, trees = concatenate_trees(*zip(*grown), categorical)
    ensemble = Ensemble.from_trees(trees, n_outputs=n_outputs, init_raw=[0.25] * n_outputs,
                                   learning_rate=0.3, n_features=3, categorical=categorical,
                                   category_sets=table)
    return ensemble, X, trees, table, categorical


@pytest.mark.parametrize("n_outputs", [1, 2])
def test_ensemble_scores_by_the_sets(n_outputs):
    """Ensemble.predict_raw, staged_predict_raw and apply of a model with categorical
    splits against the naive traversal: the leaves' eta * gamma added in tree order."""
    ensemble, X, trees, table, categorical = _categorical_ensemble(n_outputs)
    X = X.copy()
    X[:40, 1] = 57        # a code never seen: the missing side
    leaves = np.column_stack([naive_leaves(t, table, categorical, X) for t in trees])
    want = np.full((X.shape[0], n_outputs), 0.25)
    staged = []
    for t, tree in enumerate(trees):
        want[:, t % n_outputs] += 0.3 * tree["value"][leaves[:, t]]
        if t % n_outputs == n_outputs - 1:
            staged.append(want.copy())
    for n_jobs in (1, 2):
        got = ensemble.predict_raw(X, n_jobs=n_jobs)
        assert got.tobytes() == want.tobytes()
    for a, b in zip(ensemble.staged_predict_raw(X), staged, strict=True):
        assert a.tobytes() == b.tobytes()
    np.testing.assert_array_equal(ensemble.apply(X).reshape(X.shape[0], -1), leaves)
    first = ensemble.predict_raw(X, iterations=1)
    np.testing.assert_array_equal(first, staged[0])
    assert ensemble.categorical.tolist() == [True, True, False]
    assert ensemble.category_sets.shape == table.shape
    import pickle

    again = pickle.loads(pickle.dumps(ensemble))
    assert again.predict_raw(X).tobytes() == want.tobytes()
    assert ensemble.tree(0).feature.shape == trees[0]["feature"].shape
    with pytest.raises(ValueError, match="scikit-learn's tree_ cannot express"):
        ensemble.tree(0).tree_


def test_ensemble_refuses_bad_categorical_tables():
    from gbc_core import Ensemble

    ensemble, X, trees, table, categorical = _categorical_ensemble()
    args = dict(n_outputs=1, init_raw=[0.0], learning_rate=0.3, n_features=3)
    with pytest.raises(ValueError, match="must name a row of the 1 category sets"):
        Ensemble.from_trees(trees, **args, categorical=categorical, category_sets=table[:1])
    with pytest.raises(ValueError, match="one boolean per feature"):
        Ensemble.from_trees(trees, **args, categorical=[True], category_sets=table)
    with pytest.raises(ValueError, match="without categorical features"):
        Ensemble.from_trees(trees, **args, category_sets=table)
    with pytest.raises(ValueError, match=r"uint32 array of shape \(n_sets, 8\)"):
        Ensemble.from_trees(trees, **args, categorical=categorical,
                            category_sets=table.astype(np.float64))
    import scipy.sparse

    with pytest.raises(ValueError, match="dense X only"):
        ensemble.predict_raw(scipy.sparse.csr_matrix(np.nan_to_num(X)))
