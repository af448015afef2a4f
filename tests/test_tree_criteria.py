"""criterion, min_impurity_decrease and ccp_alpha, against scikit-learn.

scikit-learn's GradientBoostingClassifier(init="zero") grows each tree with its
DecisionTreeRegressor: the squared-error proxy ranks the splits (``criterion``; since
scikit-learn 1.9 the parameter is deprecated and the MSE proxy is always used),
``min_impurity_decrease`` makes a node a leaf when its best split's weighted
impurity decrease plus machine epsilon is below the bound, and ``ccp_alpha`` prunes
the grown tree (weakest link first) before the loss sets its leaf values. The data
here has few distinct values per feature (so ``split_method="hist"`` is the exact
search too) and continuous weights, so no two splits tie: the trees must be
scikit-learn's node for node and the probabilities equal to rounding.
"""

import numpy as np
import pytest

from gbc_core import GradientBoostingClassifier, load
from gbc_core._common import ROW_STAT_DTYPE
from gbc_core._exact_splitter import ExactSplitFinder
from gbc_core._histogram_splitter import HistogramSplitFinder, bin_value_ranges
from gbc_core._binning import BinMapper

from conftest import require

sklearn = require("sklearn")
sklearn_ensemble = require("sklearn.ensemble")

N_ESTIMATORS = 15
SKLEARN_HAS_CRITERION = tuple(int(v) for v in sklearn.__version__.split(".")[:2]) < (1, 9)


def _data(n_classes, n=700, n_features=5, seed=0):
    """Features with 200 distinct values each (<= max_bins), labels from a noisy
    linear score, positive continuous weights."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 200, size=(n, n_features)).astype(np.float32) / 8
    score = X @ rng.normal(size=n_features) + rng.normal(scale=2.0, size=n)
    edges = np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1])
    y = np.searchsorted(edges, score)
    w = rng.uniform(0.3, 2.0, size=n)
    return X, y, w


DATA = {k: _data(k) for k in (2, 3)}


def _sklearn_fit(X, y, w, **params):
    params = dict(params)
    if not SKLEARN_HAS_CRITERION:
        params.pop("criterion", None)  # no effect since 1.9: always the MSE proxy
    est = sklearn_ensemble.GradientBoostingClassifier(init="zero", random_state=0,
                                                      n_estimators=N_ESTIMATORS, **params)
    return est.fit(X, y, sample_weight=w)


def _ours_fit(X, y, w, **params):
    est = GradientBoostingClassifier(init="zero", random_state=0,
                                     n_estimators=N_ESTIMATORS, **params)
    return est.fit(X, y, sample_weight=w)


def _same_tree(ours, theirs, i=0, j=0):
    """Our tree ``ours`` (gbc_core.Tree) is scikit-learn's ``theirs`` (tree_): the
    same splits in the same places and the same leaf values (to rounding)."""
    if ours.feature[i] < 0:
        assert theirs.children_left[j] == -1
        np.testing.assert_allclose(ours.value[i], theirs.value[j, 0, 0], rtol=1e-9,
                                   atol=1e-12)
        return 1
    assert theirs.children_left[j] != -1, "a split where scikit-learn has a leaf"
    assert ours.feature[i] == theirs.feature[j]
    assert ours.threshold[i] == theirs.threshold[j]
    np.testing.assert_allclose(ours.weighted_n_node_samples[i],
                               theirs.weighted_n_node_samples[j], rtol=1e-12)
    return 1 + (_same_tree(ours, theirs, ours.children_left[i], theirs.children_left[j])
                + _same_tree(ours, theirs, ours.children_right[i], theirs.children_right[j]))


def _check_same_model(ours, theirs, X):
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X),
                               rtol=0, atol=1e-12)
    assert ours.estimators_.shape == theirs.estimators_.shape
    np.testing.assert_allclose(ours.feature_importances_, theirs.feature_importances_,
                               rtol=0, atol=1e-12)
    n_nodes = 0
    for a, b in zip(ours.estimators_.ravel(), theirs.estimators_.ravel()):
        assert a.node_count == b.tree_.node_count
        n_nodes += _same_tree(a, b.tree_)
    return n_nodes


CASES = [
    ("criterion", "friedman_mse"),
    ("criterion", "squared_error"),
    ("min_impurity_decrease", 0.0005),
    ("min_impurity_decrease", 0.003),
    ("min_impurity_decrease", 0.02),
    ("ccp_alpha", 0.0002),
    ("ccp_alpha", 0.001),
    ("ccp_alpha", 0.01),
]


@pytest.mark.parametrize("name,value", CASES)
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_same_model_as_sklearn(name, value, n_classes, split_method):
    X, y, w = DATA[n_classes]
    params = {name: value, "max_depth": 4, "min_samples_leaf": 5}
    ours = _ours_fit(X, y, w, split_method=split_method, **params)
    theirs = _sklearn_fit(X, y, w, **params)
    _check_same_model(ours, theirs, X)


@pytest.mark.parametrize("name,value", [("min_impurity_decrease", 0.003),
                                        ("ccp_alpha", 0.001),
                                        ("criterion", "squared_error")])
def test_same_model_as_sklearn_exponential(name, value):
    X, y, w = DATA[2]
    params = {name: value, "max_depth": 3, "loss": "exponential"}
    _check_same_model(_ours_fit(X, y, w, **params), _sklearn_fit(X, y, w, **params), X)


@pytest.mark.parametrize("name,value", [("min_impurity_decrease", 0.003),
                                        ("ccp_alpha", 0.001)])
def test_parameters_change_the_trees(name, value):
    """The cases above are not the default model in disguise: each bound removes
    nodes (and scikit-learn's model with it is the one we match)."""
    X, y, w = DATA[3]
    plain = _ours_fit(X, y, w, max_depth=4)
    bounded = _ours_fit(X, y, w, max_depth=4, **{name: value})
    n_plain = sum(t.node_count for t in plain.estimators_.ravel())
    n_bounded = sum(t.node_count for t in bounded.estimators_.ravel())
    assert n_bounded < n_plain


def test_pruning_keeps_level_order_and_leaf_rows():
    """A pruned tree is stored as a grown one: children after their parent, side by
    side, depths consistent; apply() gives every training row a leaf, and a leaf's
    value is the loss's Newton step over the rows in it (two classes:
    sum w r / sum w p (1 - p) at F = 0, so p = 1/2)."""
    X, y, w = DATA[2]
    est = GradientBoostingClassifier(init="zero", n_estimators=1, max_depth=5,
                                     ccp_alpha=0.002).fit(X, y, sample_weight=w)
    tree = est.estimators_[0, 0]
    left, right = tree.children_left, tree.children_right
    inner = np.flatnonzero(tree.feature >= 0)
    assert inner.size > 0 and np.all(left[inner] > inner)
    assert np.all(right[inner] == left[inner] + 1)
    depth = tree.nodes["depth"]
    assert np.all(depth[left[inner]] == depth[inner] + 1)
    leaves = est.apply(X)[:, 0, 0].astype(int)
    assert np.all(tree.feature[leaves] == -1)
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        r = y[rows] - 0.5
        expected = np.sum(w[rows] * r) / np.sum(w[rows] * 0.25)
        np.testing.assert_allclose(tree.value[leaf], expected, rtol=1e-12)


@pytest.mark.parametrize("params", [dict(criterion="squared_error"),
                                    dict(min_impurity_decrease=0.003),
                                    dict(ccp_alpha=0.001),
                                    dict(min_impurity_decrease=0.001, ccp_alpha=0.0005)])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_hist_equals_exact(params, n_classes):
    X, y, w = DATA[n_classes]
    """Where every feature has at most max_bins distinct values the hist fit is the
    exact fit: the same splits, thresholds and node counts; sums (leaf values,
    weights, improvements) to rounding, as the histograms add rows in another
    order."""
    exact = _ours_fit(X, y, w, max_depth=5, min_samples_leaf=5, **params)
    hist = _ours_fit(X, y, w, max_depth=5, min_samples_leaf=5, split_method="hist",
                     **params)
    for a, b in zip(exact.estimators_.ravel(), hist.estimators_.ravel()):
        for field in ("feature", "threshold", "left", "right", "n_samples",
                      "missing_go_left", "depth"):
            np.testing.assert_array_equal(a.nodes[field], b.nodes[field])
        for field in ("value", "weighted_n", "improvement"):
            np.testing.assert_allclose(a.nodes[field], b.nodes[field], rtol=1e-10,
                                       atol=1e-14)
    np.testing.assert_allclose(exact.predict_proba(X), hist.predict_proba(X), rtol=0,
                               atol=1e-12)


@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_threads_do_not_change_the_model(split_method):
    """n_jobs=1 and 2 give the same trees bit for bit, on enough rows for the
    grower's parallel passes (the partition and the left sums of
    min_impurity_decrease)."""
    rng = np.random.default_rng(5)
    n = 210_000
    X = rng.integers(0, 60, size=(n, 3)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=15, size=n) > 45).astype(int)
    w = rng.uniform(0.5, 1.5, size=n)
    params = dict(n_estimators=2, max_depth=4, split_method=split_method,
                  criterion="squared_error", min_impurity_decrease=2e-4, ccp_alpha=3e-4)
    one = GradientBoostingClassifier(n_jobs=1, **params).fit(X, y, sample_weight=w)
    two = GradientBoostingClassifier(n_jobs=2, **params).fit(X, y, sample_weight=w)
    a, b = one.booster_.ensemble, two.booster_.ensemble
    assert a.nodes.tobytes() == b.nodes.tobytes()
    np.testing.assert_array_equal(a.tree_offsets, b.tree_offsets)
    n_pruned = sum(t.node_count < 31 for t in one.estimators_.ravel())
    assert n_pruned > 0  # the bounds acted


def test_save_and_load(tmp_path):
    X, y, w = DATA[3]
    params = dict(criterion="squared_error", min_impurity_decrease=0.001, ccp_alpha=0.0005)
    est = _ours_fit(X, y, w, max_depth=4, **params)
    path = tmp_path / "model.gbc"
    est.save(path)
    for name, value in params.items():
        assert load(path).params[name] == value
    again = GradientBoostingClassifier.load(path)
    for name, value in params.items():
        assert again.get_params()[name] == value
    np.testing.assert_array_equal(again.predict_proba(X), est.predict_proba(X))
    # The loaded estimator refits to the same model.
    refit = again.fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(refit.predict_proba(X), est.predict_proba(X))


@pytest.mark.parametrize("params,message", [
    (dict(criterion="gini"), "criterion must be 'friedman_mse' or 'squared_error'"),
    (dict(criterion=None), "criterion must be"),
    (dict(min_impurity_decrease=-0.1), "min_impurity_decrease must be a number >= 0"),
    (dict(min_impurity_decrease=float("nan")), "min_impurity_decrease must be"),
    (dict(ccp_alpha=-1e-9), "ccp_alpha must be a number >= 0"),
    (dict(ccp_alpha=float("inf")), "ccp_alpha must be"),
    (dict(ccp_alpha="0.1"), "ccp_alpha must be"),
])
def test_bad_values_are_refused(params, message):
    X, y, w = DATA[2]
    with pytest.raises(ValueError, match=message):
        GradientBoostingClassifier(n_estimators=1, **params).fit(X, y)


def _finders(X):
    Xf = np.asfortranarray(X, dtype=np.float32)
    mapper = BinMapper(max_bins=255).fit(Xf, 1)
    bins = mapper.transform(Xf, 1)
    lo, hi = bin_value_ranges(Xf, bins, mapper.missing_bin, 1)
    return {
        "exact": ExactSplitFinder(Xf, 1),
        "hist": HistogramSplitFinder(bins, np.asarray(mapper.n_bins_non_missing,
                                                      dtype=np.int32),
                                     lo, hi, mapper.missing_bin, 1),
    }


@pytest.mark.parametrize("finder_name", ["exact", "hist"])
def test_squared_error_proxy_is_sklearns(finder_name):
    """With criterion="squared_error" the chosen split maximises scikit-learn's MSE
    proxy s_l^2 / w_l + s_r^2 / w_r, and the proxy reported is that value computed
    as scikit-learn computes it (a NumPy twin of every candidate of the node)."""
    rng = np.random.default_rng(3)
    n, d = 300, 4
    X = rng.integers(0, 30, size=(n, d)).astype(np.float32)
    stats = np.zeros(n, dtype=ROW_STAT_DTYPE)
    w = rng.uniform(0.5, 2.0, size=n)
    r = rng.normal(size=n) + 0.1 * X[:, 2]
    stats["w"] = w
    stats["wr"] = w * r
    finder = _finders(X)[finder_name]
    got = finder.level_splits(stats, np.zeros(n, dtype=np.int32),
                              criterion="squared_error")[0]
    S, W = float(np.sum(stats["wr"])), float(np.sum(w))
    best, best_split = -np.inf, None
    for f in range(d):
        order = np.argsort(X[:, f], kind="stable")
        values = X[order, f]
        s_left = w_left = 0.0
        for k in range(n - 1):
            s_left += stats["wr"][order[k]]
            w_left += w[order[k]]
            if values[k + 1] <= values[k]:
                continue
            s_right = S - s_left
            proxy = s_left * s_left / w_left + s_right * s_right / (W - w_left)
            if proxy > best:
                best, best_split = proxy, (f, (float(values[k]) + float(values[k + 1])) / 2)
    assert (got["feature"], got["threshold"]) == best_split
    np.testing.assert_allclose(got["proxy"], best, rtol=1e-13)
    friedman = finder.level_splits(stats, np.zeros(n, dtype=np.int32))[0]
    # The two proxies are different numbers for the same split here.
    assert (friedman["feature"], friedman["threshold"]) == best_split
    assert friedman["proxy"] != got["proxy"]


# The bounds at their edges: one tree on a few rows whose impurities are exact (or
# nearly) in float64, compared with scikit-learn's tree node for node on each side
# of the edge. A rule that is off by one comparison or by one term moves the edge and
# makes one of the two bounds disagree with scikit-learn.

EPS = np.finfo(np.float64).eps


def _first_trees(X, y, split_method="exact", **params):
    """The first tree of our model and of scikit-learn's GBC(init="zero")."""
    ours = GradientBoostingClassifier(init="zero", n_estimators=1, split_method=split_method,
                                      **params).fit(X, y)
    theirs = sklearn_ensemble.GradientBoostingClassifier(init="zero", n_estimators=1,
                                                         **params).fit(X, y)
    return ours.estimators_[0, 0], theirs.estimators_[0, 0].tree_


def _assert_same_first_tree(X, y, **params):
    """Our first tree is scikit-learn's; returns its node count."""
    ours, theirs = _first_trees(X, y, **params)
    assert ours.node_count == theirs.node_count, params
    _same_tree(ours, theirs)
    return ours.node_count


@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_min_impurity_decrease_adds_epsilon_to_the_decrease(split_method):
    """Labels 0 0 0 1 at F = 0: residuals -1/2 -1/2 -1/2 1/2, root impurity 3/16 and
    the split x <= 2.5 leaves pure children, so its weighted decrease is 0.1875
    exactly. scikit-learn keeps a split unless ``decrease + EPSILON < bound``: the
    bound one ulp above 0.1875 still splits (EPSILON covers it), 0.1875 + 1e-15 does
    not."""
    X = np.arange(4, dtype=np.float64).reshape(-1, 1)
    y = np.array([0, 0, 0, 1])
    split = _assert_same_first_tree(X, y, split_method=split_method, max_depth=1,
                                    min_impurity_decrease=np.nextafter(0.1875, 1.0))
    leaf = _assert_same_first_tree(X, y, split_method=split_method, max_depth=1,
                                   min_impurity_decrease=0.1875 + 1e-15)
    assert (split, leaf) == (3, 1)


@pytest.mark.parametrize("labels", [[1, 0, 0, 0, 0], [0, 0, 0, 0, 1]])
@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_min_impurity_decrease_uses_the_left_rows_sums(labels, split_method):
    """The decrease of the split that isolates the lone 1 is the root impurity 0.16
    in exact arithmetic, whichever child's sum of w r^2 is formed from its rows and
    whichever by subtraction from the node's; in float64 the choice moves it by an
    ulp. scikit-learn sums the left child's rows: with the bound 0.16 + EPSILON the
    split is kept, one ulp above it the node is a leaf, and so for us."""
    X = np.arange(5, dtype=np.float64).reshape(-1, 1)
    y = np.array(labels)
    bound = 0.16 + EPS
    kept = _assert_same_first_tree(X, y, split_method=split_method, max_depth=1,
                                   min_impurity_decrease=bound)
    dropped = _assert_same_first_tree(X, y, split_method=split_method, max_depth=1,
                                      min_impurity_decrease=np.nextafter(bound, 1.0))
    assert (kept, dropped) == (3, 1)


@pytest.mark.parametrize("max_leaf_nodes", [None, 4])
@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_ccp_alpha_equal_to_the_weakest_link_prunes_it(max_leaf_nodes, split_method):
    """Every effective alpha of scikit-learn's pruning path of the first tree (its
    DecisionTreeRegressor on the residuals y - 1/2, dyadic here, so exact): with
    ``ccp_alpha`` equal to it the weakest link is pruned, one ulp below it is kept,
    level-wise and best first, as in scikit-learn's GBC."""
    X = np.arange(8, dtype=np.float64).reshape(-1, 1)
    y = np.array([0, 1, 0, 0, 1, 1, 0, 1])
    params = dict(max_depth=3, max_leaf_nodes=max_leaf_nodes)
    tree_module = require("sklearn.tree")
    path = tree_module.DecisionTreeRegressor(**params).cost_complexity_pruning_path(
        X, y - 0.5)
    alphas = np.unique(path.ccp_alphas[path.ccp_alphas > 0])
    assert alphas.size >= 2
    for alpha in alphas:
        pruned = _assert_same_first_tree(X, y, split_method=split_method, ccp_alpha=alpha,
                                         **params)
        kept = _assert_same_first_tree(X, y, split_method=split_method,
                                       ccp_alpha=np.nextafter(alpha, 0.0), **params)
        assert pruned < kept, alpha
