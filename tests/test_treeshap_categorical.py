"""TreeSHAP of models with categorical splits (``TreeShap(categorical=,
category_sets=)``), against naive twins.

The models are real fits of the grower (``TreeGrower(categorical=)``, both split
finders) in a small least-squares boosting loop, their trees concatenated with one
table of category sets (each categorical node's ``threshold`` shifted by its tree's
first row of the table), as a model with categorical splits stores them. A node on
a categorical feature sends left the rows whose code is in its set; NaN and a value
that is no code in [0, 256) go where missing values go (the rule of
``_predictor.categorical_leaves``). The references: the raw scores of
``categorical_leaves`` and of a naive traversal (the contributions and the expected
value add up to them), and the exact Shapley values of the path-dependent game
(``test_treeshap.py``'s brute force over every subset of the other features, with
the categorical rule).
"""

import itertools
import math

import numpy as np
import pytest

from gbc_core._common import NODE_DTYPE, ROW_STAT_DTYPE
from gbc_core._exact_splitter import ExactSplitFinder
from gbc_core._grower import TreeGrower
from gbc_core._histogram_splitter import HistogramSplitFinder
from gbc_core._predictor import categorical_leaves
from gbc_core._treeshap import TreeShap

from conftest import assert_arrays_equal, concatenate_trees

MAX_BINS = 32
LEARNING_RATE = 0.3


def _finder(X, categorical, split_method):
    """The exact finder on X, or the histogram finder on bins: a categorical
    feature's bin is its code; a numeric feature's bins end at (at most) 16 of its
    values, evenly spaced in its sorted distinct values."""
    X32 = np.asfortranarray(X, dtype=np.float32)
    if split_method == "exact":
        return ExactSplitFinder(X32, 1)
    n, d = X32.shape
    bins = np.full((n, d), MAX_BINS, dtype=np.uint8)
    n_bins = np.zeros(d, dtype=np.int32)
    lo = np.full((d, MAX_BINS), np.inf, dtype=np.float32)
    hi = np.full((d, MAX_BINS), -np.inf, dtype=np.float32)
    for f in range(d):
        col = X32[:, f]
        seen = ~np.isnan(col)
        if categorical is not None and categorical[f]:
            b = col[seen].astype(np.int64)
        else:
            distinct = np.unique(col[seen])
            edges = np.unique(distinct[np.linspace(0, distinct.size - 1, 16).astype(int)])
            b = np.searchsorted(edges, col[seen], side="left")
        bins[seen, f] = b
        n_bins[f] = int(b.max()) + 1
        for k in range(n_bins[f]):
            values = col[seen][b == k]
            if values.size:
                lo[f, k], hi[f, k] = values.min(), values.max()
    return HistogramSplitFinder(np.asfortranarray(bins), n_bins, lo, hi, MAX_BINS, 1)


def _data(seed, n=1500, n_numeric=2, nan_share=0.08, n_outputs=1):
    """Two categorical features (5 and 12 codes, with an effect per category) and
    ``n_numeric`` numeric ones; NaN in every column; ``n_outputs`` targets."""
    rng = np.random.default_rng(seed)
    cat = np.column_stack([rng.integers(0, 5, n), rng.integers(0, 12, n)]).astype(float)
    num = np.round(rng.normal(size=(n, n_numeric)), 2)
    X = np.column_stack([cat, num])
    X[rng.random(X.shape) < nan_share] = np.nan
    targets = []
    for k in range(n_outputs):
        e0, e1 = rng.normal(size=5), rng.normal(size=12)
        y = (e0[np.nan_to_num(X[:, 0], nan=2).astype(int)]
             + e1[np.nan_to_num(X[:, 1], nan=7).astype(int)]
             + np.nan_to_num(X[:, 2:]).sum(axis=1) * (0.5 + k)
             + rng.normal(scale=0.3, size=n))
        targets.append(y)
    return X, np.array(targets)


def _stats(wr, w):
    stats = np.zeros(wr.shape[0], dtype=ROW_STAT_DTYPE)
    stats["wr"] = wr
    stats["w"] = w
    return stats


def fit_model(X, targets, categorical, n_iterations=4, split_method="exact",
              max_depth=4, weighted=False, subsample=None, seed=0, **options):
    """Least-squares boosting with the grower: per iteration, one tree per output
    (tree t fits output t % n_outputs), leaves scaled by LEARNING_RATE. Returns the
    model as a dict: nodes, tree_offsets, category_sets, categorical, init_raw,
    n_outputs, and the trees and tables one by one."""
    rng = np.random.default_rng(seed)
    n, d = X.shape
    K = targets.shape[0]
    w = rng.integers(1, 4, n).astype(np.float64) if weighted else np.ones(n)
    init_raw = np.array([np.average(t, weights=w) for t in targets])
    residual = targets - init_raw[:, None]
    grower = TreeGrower(np.asfortranarray(X, dtype=np.float32), _finder(X, categorical, split_method),
                        max_depth, 2, 1, 0.0, d, 1, categorical=categorical, **options)
    trees, tables = [], []
    for m in range(n_iterations):
        mask = None if subsample is None else (rng.random(n) < subsample).astype(np.uint8)
        for k in range(K):
            r = residual[k].copy()
            grower.grow(_stats(r * w, w), r, mask, 5)
            nodes, bits = grower.nodes_array(), grower.cat_bitsets()
            residual[k] -= LEARNING_RATE * nodes["value"][np.asarray(grower.node_of_row)]
            trees.append(nodes)
            tables.append(bits)
    nodes, offsets, table, trees = concatenate_trees(trees, tables, categorical)
    # (np.concatenate packs a structured dtype: NODE_DTYPE keeps its padding.)
    return dict(nodes=nodes.astype(NODE_DTYPE), tree_offsets=offsets,
                trees=trees, category_sets=table,
                categorical=None if categorical is None else np.asarray(categorical, bool),
                init_raw=init_raw, n_outputs=K, n_features=d)


def tree_shap(model, with_sets=True):
    args = (model["nodes"], model["tree_offsets"], LEARNING_RATE * model["nodes"]["value"],
            model["n_features"], model["n_outputs"])
    if not with_sets:
        return TreeShap(*args)
    return TreeShap(*args, categorical=model["categorical"],
                    category_sets=model["category_sets"])


def contributions(shap, model, X, n_threads=1):
    """(n, n_outputs, n_features + 1): every feature's contribution, then the
    expected value."""
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    out = np.zeros((X.shape[0], model["n_outputs"], model["n_features"] + 1))
    shap.contributions(X32, out, n_threads)
    out[:, :, -1] = shap.expected_values(model["init_raw"])
    return out


# ------------------------------------------------------------------ naive twins
def _goes_left(node, model, x):
    """The side a row goes at ``node``: a categorical node by its set (NaN and
    values that are no code by ``missing_go_left``), a numeric one by
    ``x <= threshold32``."""
    f = int(node["feature"])
    xv = np.float32(x[f])
    miss = bool(node["missing_go_left"])
    if model["categorical"] is not None and model["categorical"][f]:
        if np.isnan(xv) or not 0 <= xv < 256:
            return miss
        c = int(xv)  # (a value in range by its whole part, as categorical_leaves)
        bits = model["category_sets"][int(node["threshold"])]
        return bool((int(bits[c // 32]) >> (c % 32)) & 1)
    return miss if np.isnan(xv) else bool(xv <= node["threshold32"])


def naive_raw(model, X):
    """(n, n_outputs): the raw scores by a naive traversal of every tree."""
    raw = np.tile(model["init_raw"], (X.shape[0], 1))
    for t, tree in enumerate(model["trees"]):
        for i in range(X.shape[0]):
            j = 0
            while tree[j]["feature"] >= 0:
                j = tree[j]["left"] if _goes_left(tree[j], model, X[i]) else tree[j]["right"]
            raw[i, t % model["n_outputs"]] += LEARNING_RATE * tree[j]["value"]
    return raw


def kernel_raw(model, X):
    """(n, n_outputs): the raw scores from ``categorical_leaves``'s leaves (numeric
    models: an all-false mask), leaves added in tree order."""
    categorical = model["categorical"]
    if categorical is None:
        categorical = np.zeros(model["n_features"], bool)
    leaves = categorical_leaves(model["nodes"], model["tree_offsets"],
                                model["category_sets"], categorical, X.astype(np.float32))
    raw = np.tile(model["init_raw"], (X.shape[0], 1))
    for t, tree in enumerate(model["trees"]):
        raw[:, t % model["n_outputs"]] += LEARNING_RATE * tree["value"][leaves[:, t]]
    return raw


def _v(tree, model, x, S, j=0):
    """E[T(x) | x_S]: the row's path on the features of S, both children weighted by
    their covers elsewhere."""
    node = tree[j]
    if node["feature"] < 0:
        return float(node["value"])
    left, right = int(node["left"]), int(node["right"])
    if int(node["feature"]) in S:
        return _v(tree, model, x, S, left if _goes_left(node, model, x) else right)
    return (tree[left]["weighted_n"] * _v(tree, model, x, S, left)
            + tree[right]["weighted_n"] * _v(tree, model, x, S, right)) / node["weighted_n"]


def naive_contributions(model, x):
    """(n_outputs, n_features + 1): the exact Shapley values of row ``x`` by
    enumerating the subsets of the other features, and the expected value."""
    M, K = model["n_features"], model["n_outputs"]
    phi = np.zeros((K, M + 1))
    phi[:, M] = model["init_raw"]
    for t, tree in enumerate(model["trees"]):
        k = t % K
        for f in range(M):
            others = [g for g in range(M) if g != f]
            for size in range(M):
                weight = math.factorial(size) * math.factorial(M - size - 1) / math.factorial(M)
                for S in itertools.combinations(others, size):
                    S = set(S)
                    phi[k, f] += weight * LEARNING_RATE * (
                        _v(tree, model, x, S | {f}) - _v(tree, model, x, S))
        phi[k, M] += LEARNING_RATE * _v(tree, model, x, set())
    return phi


# ------------------------------------------------------------------ models
CASES = {
    "exact": dict(),
    "hist": dict(split_method="hist"),
    "weighted-subsample": dict(weighted=True, subsample=0.7),
    "best-first": dict(max_leaf_nodes=10, max_depth=-1),
    "two-outputs": dict(data=dict(n_outputs=2)),
    "six-features-deep": dict(data=dict(n_numeric=4), max_depth=6, n_iterations=2),
    "pruned": dict(ccp_alpha=0.02),
}


def _case(name, seed=0):
    spec = dict(CASES[name])
    X, targets = _data(seed, **spec.pop("data", {}))
    categorical = np.zeros(X.shape[1], bool)
    categorical[:2] = True
    return X, fit_model(X, targets, categorical, seed=seed, **spec)


def _new_rows(X, rng, n=40):
    """Rows of X with NaN, codes no tree has seen (in range and beyond), negative
    values, infinities and fractions in the categorical columns."""
    rows = X[rng.choice(X.shape[0], n, replace=False)].copy()
    rows[0::10, 0] = np.nan
    rows[1::10, 1] = np.nan
    rows[2::10, 0] = 7            # a code never seen (in range)
    rows[3::10, 1] = 255          # the last code, never seen
    rows[4::10, 1] = 300          # beyond any code: the missing side
    rows[5::10, 0] = -1           # negative: the missing side
    rows[6::10, 0] = np.inf
    rows[7::10, 1] = -np.inf
    rows[8::10, 1] = 2.5          # no whole code: as categorical_leaves routes it
    rows[9::10, 0] = -0.5
    return rows


def _has_categorical_splits(model):
    nodes = model["nodes"]
    split = nodes["feature"] >= 0
    on_cat = split & model["categorical"][np.maximum(nodes["feature"], 0)]
    return on_cat.sum(), (split & ~on_cat).sum()


@pytest.mark.parametrize("case", sorted(CASES))
def test_contributions_add_up_to_the_raw_score(case):
    X, model = _case(case)
    n_cat, n_num = _has_categorical_splits(model)
    assert n_cat >= 4 and n_num >= 1
    rows = np.concatenate([X[:300], _new_rows(X, np.random.default_rng(1))])
    raw = kernel_raw(model, rows)
    # The kernel's raw scores are the naive traversal's (the twins agree).
    assert_arrays_equal(naive_raw(model, rows[::7]), raw[::7], "naive raw scores",
                        atol=1e-12)
    got = contributions(tree_shap(model), model, rows)
    assert_arrays_equal(got.sum(axis=-1), raw, "sum of contributions", atol=1e-10)
    # The expected value is the same for every row.
    assert (got[:, :, -1] == got[:1, :, -1]).all()


@pytest.mark.parametrize("case", sorted(CASES))
def test_equals_exact_shapley_values(case):
    X, model = _case(case)
    rng = np.random.default_rng(2)
    rows = np.concatenate([X[:6], _new_rows(X, rng, n=8)])
    got = contributions(tree_shap(model), model, rows)
    expected = np.array([naive_contributions(model, x) for x in rows])
    assert_arrays_equal(got, expected, "contributions", atol=1e-12, rtol=1e-10)


def test_missing_values_and_non_codes_follow_the_learned_direction():
    """Categorical nodes send missing values both ways in this model; rows with NaN,
    codes no tree has seen and values that are no code are explained as the naive
    twin explains them, and a value that is no code exactly as NaN."""
    X, model = _case("exact", seed=3)
    nodes = model["nodes"]
    on_cat = (nodes["feature"] >= 0) & model["categorical"][np.maximum(nodes["feature"], 0)]
    assert set(nodes["missing_go_left"][on_cat]) == {0, 1}
    rows = _new_rows(X, np.random.default_rng(4), n=16)
    shap = tree_shap(model)
    got = contributions(shap, model, rows)
    expected = np.array([naive_contributions(model, x) for x in rows])
    assert_arrays_equal(got, expected, "contributions of new rows", atol=1e-12, rtol=1e-10)
    as_nan = rows.copy()
    cat_cols = as_nan[:, :2]
    cat_cols[~((cat_cols >= 0) & (cat_cols < 256))] = np.nan  # (-0.5 too)
    as_nan[:, :2] = cat_cols
    assert np.isnan(as_nan).sum() > np.isnan(rows).sum()
    assert contributions(shap, model, as_nan).tobytes() == got.tobytes()
    # The other direction of missing values at categorical nodes is another answer:
    # the test can tell them apart.
    flipped = dict(model, nodes=nodes.copy())
    flipped["nodes"]["missing_go_left"][on_cat] ^= 1
    other = contributions(tree_shap(flipped), flipped, rows)
    assert np.abs(other - got).max() > 1e-6


def test_the_sets_are_read():
    """The complement of every set (all 256 codes) is another model: other
    contributions, still the exact Shapley values of the naive twin's routing."""
    X, model = _case("hist", seed=5)
    rows = np.concatenate([X[:5], _new_rows(X, np.random.default_rng(6), n=8)])
    got = contributions(tree_shap(model), model, rows)
    other_model = dict(model, category_sets=~model["category_sets"])
    other = contributions(tree_shap(other_model), other_model, rows)
    assert np.abs(other - got).max() > 1e-6
    expected = np.array([naive_contributions(other_model, x) for x in rows])
    assert_arrays_equal(other, expected, "contributions with complemented sets",
                        atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("case", ["exact", "two-outputs"])
def test_threads_and_sparse_rows_give_the_same_bits(case):
    X, model = _case(case)
    rows = np.concatenate([X, _new_rows(X, np.random.default_rng(7))])
    rows[np.random.default_rng(8).random(rows.shape) < 0.3] = 0.0  # code 0 and 0.0
    shap = tree_shap(model)
    one = contributions(shap, model, rows, n_threads=1)
    assert contributions(shap, model, rows, n_threads=2).tobytes() == one.tobytes()
    # CSR rows (the zeros left out) are the dense rows, bit for bit.
    sp = pytest.importorskip("scipy.sparse")
    csr = sp.csr_matrix(rows.astype(np.float32))
    assert csr.nnz < rows.size
    out = np.zeros_like(one)
    shap.contributions_csr(csr.data.astype(np.float32), csr.indices.astype(np.int32),
                           csr.indptr.astype(np.int64), out, 2)
    out[:, :, -1] = shap.expected_values(model["init_raw"])
    assert out.tobytes() == one.tobytes()


def test_numeric_models_are_unchanged():
    """A numeric model gives the same contributions, bit for bit, with no sets, an
    all-false mask, and a mask whose categorical feature no node splits on (the
    categorical recursion, every split on a threshold)."""
    X, targets = _data(9, n_numeric=3)
    X = np.column_stack([X, np.full(X.shape[0], 3.0)])  # a constant: never split on
    model = fit_model(X, targets, None, n_iterations=5, weighted=True)
    assert model["category_sets"].shape == (0, 8)
    rows = np.concatenate([X[:200], _new_rows(X, np.random.default_rng(10))])
    plain = contributions(tree_shap(model, with_sets=False), model, rows)
    assert_arrays_equal(plain.sum(axis=-1), kernel_raw(model, rows), "sum", atol=1e-10)
    for mask, table in [(np.zeros(X.shape[1], bool), np.zeros((0, 8), np.uint32)),
                        (np.arange(X.shape[1]) == X.shape[1] - 1, np.zeros((0, 8), np.uint32)),
                        (np.arange(X.shape[1]) == X.shape[1] - 1,
                         np.full((3, 8), 0xFFFFFFFF, np.uint32))]:
        shap = tree_shap(dict(model, categorical=mask, category_sets=table))
        assert shap.has_category_sets == bool(mask.any())
        got = contributions(shap, model, rows)
        assert got.tobytes() == plain.tobytes()
    # A feature split on thresholds cannot be marked categorical: its thresholds
    # are no rows of the table.
    used = int(model["nodes"]["feature"][0])
    mask = np.arange(X.shape[1]) == used
    with pytest.raises(ValueError, match="not a row of the 0 category sets"):
        tree_shap(dict(model, categorical=mask, category_sets=np.zeros((0, 8), np.uint32)))


def test_bad_arguments_are_refused():
    X, model = _case("exact")
    nodes = model["nodes"]
    args = (nodes, model["tree_offsets"], nodes["value"], model["n_features"], 1)
    table, mask = model["category_sets"], model["categorical"]
    with pytest.raises(ValueError, match="go together"):
        TreeShap(*args, categorical=mask)
    with pytest.raises(ValueError, match="go together"):
        TreeShap(*args, category_sets=table)
    with pytest.raises(ValueError, match="categorical must hold 4 booleans"):
        TreeShap(*args, categorical=mask[:3], category_sets=table)
    with pytest.raises(ValueError, match="categorical must hold 4 booleans"):
        TreeShap(*args, categorical=[0, 2, 0, 0], category_sets=table)
    with pytest.raises(ValueError, match=r"category_sets must be .* \(n_sets, 8\)"):
        TreeShap(*args, categorical=mask, category_sets=table[:, :4])
    with pytest.raises(ValueError, match=r"category_sets must be"):
        TreeShap(*args, categorical=mask, category_sets=table.astype(np.float64))
    with pytest.raises(ValueError, match=r"tree \d+, node \d+: a categorical node's "
                                         r"threshold .* not a row of the 1 category sets"):
        TreeShap(*args, categorical=mask, category_sets=table[:1])
    half = nodes.copy()
    on_cat = (half["feature"] >= 0) & mask[np.maximum(half["feature"], 0)]
    half["threshold"][np.flatnonzero(on_cat)[-1]] += 0.5
    with pytest.raises(ValueError, match="not a row of the"):
        TreeShap(half, *args[1:], categorical=mask, category_sets=table)
    top = int(nodes["feature"].max())
    with pytest.raises(ValueError, match=f"splits on feature {top}, the model has {top} "):
        TreeShap(nodes, model["tree_offsets"], nodes["value"], top, 1,
                 categorical=mask[:top], category_sets=table)


def test_contributions_release_the_gil():
    """The categorical recursion runs without the GIL, as the numeric one
    (test_treeshap.py's check, on a model with categorical splits)."""
    import time

    from conftest import other_thread_progress

    X, model = _case("exact")
    shap = tree_shap(model)
    t0 = time.perf_counter()
    contributions(shap, model, X, n_threads=1)
    reps = max(1, int(np.ceil(0.5 / max(time.perf_counter() - t0, 1e-3))))
    X_big = np.tile(X, (reps, 1))  # a call of about 0.5 s
    count, elapsed, gap = other_thread_progress(
        lambda: contributions(shap, model, X_big, n_threads=1))
    assert count >= 20000 and gap < 0.5 * elapsed, (count, elapsed, gap)
