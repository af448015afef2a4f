"""Best-first growth (``max_leaf_nodes``) against scikit-learn and the level-wise path.

scikit-learn's GradientBoostingClassifier grows its trees with
``BestFirstTreeBuilder`` when ``max_leaf_nodes`` is set: every node's best split is
found when the node is created, the node whose split has the largest improvement
splits next, ``max_depth`` still bounds the depth, and growth stops at
``max_leaf_nodes`` leaves. gbc-core must give the same trees (node numbering
included) and probabilities. Two splits that send the same training rows left tie
(scikit-learn then takes the first of its randomly permuted features, gbc-core the
lowest feature): such a node may differ in feature and threshold only, never in the
rows of its children.
"""

import numpy as np
import pytest

import gbc_core
from gbc_core import GradientBoostingClassifier
from gbc_core._split_methods import make_split_finder
from gbc_core._common import ROW_STAT_DTYPE
from gbc_core._grower import TreeGrower

from conftest import require, run_main
from test_histogram import _grid_data


def _continuous(n, d, n_classes, seed):
    datasets = require("sklearn.datasets")
    X, y = datasets.make_classification(n, d, n_informative=min(d, 5), n_redundant=0,
                                        n_classes=n_classes, n_clusters_per_class=2,
                                        random_state=seed)
    return X.astype(np.float32), y


def _leaves(tree):
    return int(np.count_nonzero(tree["left"] < 0))


def _assert_same_trees(ours, sk, X):
    """Node for node, the same trees: the same rows (counts and weights) in every
    node, nodes numbered in the same creation order, each split on the same feature
    and threshold or on a tied one that parts the node's rows alike (possibly with
    its sides swapped: then so are the ids of its two children). Returns the number
    of split nodes and of tied ones."""
    n_splits = n_ties = 0
    estimators = sk.estimators_.ravel()
    trees = ours.booster_.trees()
    assert len(trees) == len(estimators)
    for a, est in zip(trees, estimators):
        b = est.tree_
        assert len(a) == b.node_count
        path = b.decision_path(X).toarray().astype(bool)
        to_sk = np.arange(len(a))  # our node -> scikit-learn's node with its rows
        for i in range(len(a)):   # (a parent is numbered before its children)
            j = to_sk[i]
            assert a["n_samples"][i] == b.n_node_samples[j]
            np.testing.assert_allclose(a["weighted_n"][i], b.weighted_n_node_samples[j],
                                       rtol=1e-12)
            assert (a["left"][i] < 0) == (b.children_left[j] < 0)
            if a["left"][i] < 0:
                continue
            assert ({a["left"][i], a["right"][i]}
                    == {b.children_left[j], b.children_right[j]})
            n_splits += 1
            rows = path[:, j]
            ours_left = X[rows, a["feature"][i]] <= a["threshold32"][i]
            sk_left = X[rows, b.feature[j]] <= b.threshold[j]
            same = a["feature"][i] == b.feature[j] and a["threshold"][i] == b.threshold[j]
            if same or np.array_equal(ours_left, sk_left):
                to_sk[a["left"][i]], to_sk[a["right"][i]] = (b.children_left[j],
                                                            b.children_right[j])
            else:
                np.testing.assert_array_equal(ours_left, ~sk_left)
                to_sk[a["left"][i]], to_sk[a["right"][i]] = (b.children_right[j],
                                                            b.children_left[j])
            n_ties += not same
    return n_splits, n_ties


# Unit weights with F0 = 0 give the first trees residuals of two values (y - 1/2):
# splits of different rows then tie often, and scikit-learn breaks such ties by its
# random feature order. Continuous weights make ties between different partitions
# vanishingly rare; unit weights are tested where the trees are small.
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("max_leaf_nodes, max_depth, min_samples_leaf, weighted", [
    (2, 3, 1, False), (5, None, 1, False), (8, 3, 3, False), (8, 4, 5, False),
    (2, 3, 1, True), (5, None, 1, True), (8, 3, 3, True), (8, 4, 5, True),
    (16, None, 10, True), (31, None, 5, True), (31, 6, 20, True), (63, None, 3, True),
])
def test_same_trees_as_scikit_learn(n_classes, max_leaf_nodes, max_depth,
                                    min_samples_leaf, weighted):
    ensemble = require("sklearn.ensemble")
    X, y = _continuous(1500, 8, n_classes, seed=max_leaf_nodes)
    w = (np.random.default_rng(0).uniform(0.5, 2.0, size=len(y)) if weighted else None)
    kw = dict(n_estimators=15, learning_rate=0.2, max_leaf_nodes=max_leaf_nodes,
              max_depth=max_depth, min_samples_leaf=min_samples_leaf)
    ours = GradientBoostingClassifier(**kw).fit(X, y, sample_weight=w)
    sk = ensemble.GradientBoostingClassifier(init="zero", random_state=0, **kw).fit(
        X, y, sample_weight=w)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), rtol=0,
                               atol=1e-12)
    n_splits, n_ties = _assert_same_trees(ours, sk, X)
    assert n_ties <= 0.05 * n_splits, (n_splits, n_ties)
    # The leaf budget binds: the trees have max_leaf_nodes leaves or fewer.
    assert max(_leaves(t) for t in ours.booster_.trees()) <= max_leaf_nodes


def test_leaf_budget_and_depth_bound():
    X, y = _continuous(2000, 6, 2, seed=3)
    model = GradientBoostingClassifier(n_estimators=5, max_leaf_nodes=10,
                                       max_depth=None).fit(X, y)
    assert all(_leaves(t) == 10 for t in model.booster_.trees())
    model = GradientBoostingClassifier(n_estimators=5, max_leaf_nodes=10, max_depth=2).fit(X, y)
    for t in model.booster_.trees():
        assert _leaves(t) == 4 and t["depth"].max() == 2


@pytest.mark.parametrize("split_method", ["exact", "hist"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_unbinding_budget_gives_the_level_wise_model(split_method, n_classes):
    """With max_leaf_nodes >= 2^max_depth the budget never binds: the trees split the
    same nodes on the same features, thresholds and missing directions (numbered
    in another order), so the model is the level-wise one bit for bit, missing
    values included."""
    X, logit, rng = _grid_data(3000, 6, 11)
    if n_classes == 2:
        y = (logit + rng.logistic(size=3000) > 2).astype(int)
    else:
        y = np.digitize(logit + rng.logistic(size=3000), [1, 4])
    w = rng.uniform(0.5, 2.0, size=3000)
    kw = dict(n_estimators=10, max_depth=4, split_method=split_method, max_bins=40)
    level = GradientBoostingClassifier(**kw).fit(X, y, sample_weight=w)
    best = GradientBoostingClassifier(max_leaf_nodes=16, **kw).fit(X, y, sample_weight=w)
    X_test, _, _ = _grid_data(1000, 6, 12)
    assert level.predict_proba(X_test).tobytes() == best.predict_proba(X_test).tobytes()
    for a, b in zip(level.booster_.trees(), best.booster_.trees()):
        assert len(a) == len(b)
        splits = lambda t: sorted(zip(t["depth"][t["left"] >= 0], t["n_samples"][t["left"] >= 0],
                                      t["feature"][t["left"] >= 0],
                                      t["threshold"][t["left"] >= 0],
                                      t["missing_go_left"][t["left"] >= 0]))
        assert splits(a) == splits(b)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("options", [
    {"max_leaf_nodes": 5},
    {"max_leaf_nodes": 16, "max_depth": None, "min_samples_leaf": 7},
    {"max_leaf_nodes": 31, "max_depth": 6, "min_samples_leaf": 7},
    {"max_leaf_nodes": 12, "max_depth": None, "min_samples_leaf": 7, "subsample": 0.7,
     "random_state": 3},
    {"max_leaf_nodes": 12, "max_depth": None, "min_samples_leaf": 7, "max_features": 3,
     "random_state": 3},
])
def test_hist_equals_exact_where_binning_is_exact(n_classes, options):
    X, logit, rng = _grid_data(3000, 6, 5)
    if n_classes == 2:
        y = (logit + rng.logistic(size=3000) > 2).astype(int)
    else:
        y = np.digitize(logit + rng.logistic(size=3000), [1, 4])
    w = rng.uniform(0.5, 2.0, size=3000)
    kw = dict(n_estimators=25, learning_rate=0.3, **options)
    exact = GradientBoostingClassifier(**kw).fit(X, y, sample_weight=w)
    hist = GradientBoostingClassifier(split_method="hist", max_bins=40, **kw).fit(
        X, y, sample_weight=w)
    np.testing.assert_allclose(hist.predict_proba(X), exact.predict_proba(X), rtol=0, atol=1e-9)
    for a, b in zip(exact.booster_.trees(), hist.booster_.trees()):
        for field in ("left", "n_samples", "feature", "threshold", "missing_go_left"):
            np.testing.assert_array_equal(a[field], b[field])


@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_n_jobs_gives_the_same_model(split_method):
    """Large enough for the parallel scans, histograms, partition and routing."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(260000, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.02] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2
         + rng.normal(size=260000) > 1).astype(int)
    models = [GradientBoostingClassifier(split_method=split_method, n_estimators=3,
                                         max_leaf_nodes=12, max_depth=None, n_jobs=j,
                                         subsample=0.9, random_state=0).fit(X, y)
              for j in (1, 2)]
    trees = [np.concatenate(m.booster_.trees()).tobytes() for m in models]
    assert trees[0] == trees[1]
    assert max(_leaves(t) for t in models[0].booster_.trees()) == 12
    assert models[0].train_score_.tobytes() == models[1].train_score_.tobytes()


def test_hist_without_room_to_keep_histograms():
    """A node whose histograms found no room (``stored_bytes``) has both children
    built from their rows: the same splits where binning is exact, and the same
    leaves as the exact finder's."""
    X, logit, rng = _grid_data(3000, 5, 8)
    r = logit - logit.mean() + rng.normal(size=3000)
    stats = np.empty(3000, dtype=ROW_STAT_DTYPE)
    stats["w"] = rng.uniform(0.5, 2.0, size=3000)
    stats["wr"] = stats["w"] * r
    X = np.asfortranarray(X)
    trees = {}
    for name, method, room in [("exact", "exact", None), ("kept", "hist", None),
                               ("none", "hist", 0), ("some", "hist", 5)]:
        finder = make_split_finder(X, dict(split_method=method, max_bins=40, n_threads=1))
        if room is not None:
            # Room for ``room`` nodes' histograms.
            finder.stored_bytes = room * 5 * 41 * ROW_STAT_DTYPE.itemsize * 3 // 2
        grower = TreeGrower(X, finder, -1, 2, 7, 0.0, 5, 1, max_leaf_nodes=40)
        grower.grow(stats, r, None, 0)
        trees[name] = (grower.nodes_array(), np.asarray(grower.node_of_row).copy())
    ref_nodes, ref_rows = trees["exact"]
    assert np.count_nonzero(ref_nodes["left"] < 0) == 40
    for name in ("kept", "none", "some"):
        nodes, rows = trees[name]
        for field in ("left", "n_samples", "feature", "threshold", "missing_go_left"):
            np.testing.assert_array_equal(nodes[field], ref_nodes[field])
        np.testing.assert_array_equal(rows, ref_rows)


def test_model_file_round_trip(tmp_path):
    X, y = _continuous(800, 5, 3, seed=4)
    model = GradientBoostingClassifier(n_estimators=5, max_leaf_nodes=6,
                                       max_depth=None).fit(X, y)
    model.save(tmp_path / "m.gbc")
    back = GradientBoostingClassifier.load(tmp_path / "m.gbc")
    assert back.max_leaf_nodes == 6 and back.booster_.params["max_leaf_nodes"] == 6
    assert back.predict_proba(X).tobytes() == model.predict_proba(X).tobytes()
    # A refit of the loaded estimator grows the same trees.
    refit = back.fit(X, y)
    assert refit.predict_proba(X).tobytes() == model.predict_proba(X).tobytes()


@pytest.mark.parametrize("value", [0, 1, -3, 2.5, True, "8"])
def test_invalid_max_leaf_nodes_is_refused(value):
    X, y = _continuous(100, 3, 2, seed=0)
    with pytest.raises(ValueError, match="max_leaf_nodes must be None or an integer >= 2"):
        GradientBoostingClassifier(max_leaf_nodes=value, n_estimators=2).fit(X, y)


def test_cli_max_leaf_nodes(tmp_path, capsys, monkeypatch):
    pd = require("pandas")
    X, y = _continuous(600, 4, 2, seed=5)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(4)])
    df["target"] = y
    df.to_csv(tmp_path / "train.csv", index=False)
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t", "target",
                          "-o", "model.gbc", "--max-leaf-nodes", "7", "--max-depth", "none",
                          "--n-estimators", "10")
    assert rc == 0, err
    model = gbc_core.load(tmp_path / "model.gbc")
    assert model.params["max_leaf_nodes"] == 7
    back = pd.read_csv(tmp_path / "train.csv")
    features = back[[f"x{j}" for j in range(4)]]
    ref = GradientBoostingClassifier(max_leaf_nodes=7, max_depth=None, n_estimators=10)
    ref.fit(features, back["target"])
    np.testing.assert_array_equal(model.predict_proba(features), ref.predict_proba(features))
    assert max(_leaves(t) for t in model.ensemble.trees()) == 7
    with pytest.raises(SystemExit):
        run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t", "target",
                 "-o", "m2.gbc", "--max-leaf-nodes", "1")
    assert "max_leaf_nodes must be None or an integer >= 2" in capsys.readouterr().err


@pytest.mark.parametrize("max_leaf_nodes, max_depth", [(8, None), (31, None), (40, 5), (300, None)])
def test_exact_look_ahead_grows_the_one_node_at_a_time_tree(max_leaf_nodes, max_depth):
    """The exact finder splits several frontier nodes per scan (their children's
    splits depend on their rows only): the tree, its numbering and every row's leaf
    are those of splitting one node at a time, bit for bit, with missing values,
    weights and a sample mask."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(4000, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    r = np.nan_to_num(X[:, 0]) * np.nan_to_num(X[:, 1]) + rng.normal(size=4000)
    X = np.asfortranarray(X)
    for weights, mask in [(np.ones(4000), None),
                          (rng.uniform(0.5, 2.0, size=4000),
                           (rng.random(4000) < 0.8).astype(np.uint8))]:
        stats = np.empty(4000, dtype=ROW_STAT_DTYPE)
        stats["w"] = weights
        stats["wr"] = weights * r
        out = []
        for ahead in (True, False):
            finder = make_split_finder(X, dict(split_method="exact", n_threads=1))
            grower = TreeGrower(X, finder, -1 if max_depth is None else max_depth, 2, 3,
                                0.0, 5, 1, max_leaf_nodes=max_leaf_nodes)
            grower.look_ahead = ahead
            grower.grow(stats, r, mask, 0)
            out.append((grower.nodes_array().tobytes(),
                        np.asarray(grower.node_of_row).tobytes()))
        assert out[0] == out[1]


@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_equal_improvements_leave_the_frontier_in_scikit_learns_order(split_method):
    """Two mirrored halves (labels flipped: residuals negated, the same gains bit for
    bit in the first tree) put pairs of nodes of equal improvement in the frontier;
    which of them splits first decides the numbering and, once the leaves run out,
    the tree. The frontier is operated as scikit-learn's (libstdc++'s push_heap and
    pop_heap), so the trees are scikit-learn's for every leaf budget."""
    ensemble = require("sklearn.ensemble")
    rng = np.random.default_rng(0)
    m = 60
    pattern = (rng.random(m) < np.linspace(0.1, 0.9, m)).astype(int)
    values = np.arange(m, dtype=np.float32)
    X = np.concatenate([np.c_[np.zeros(m), values], np.c_[np.ones(m), values]]).astype(np.float32)
    y = np.concatenate([pattern, 1 - pattern])
    for k in range(2, 16):
        kw = dict(n_estimators=1, max_leaf_nodes=k, max_depth=None)
        ours = GradientBoostingClassifier(split_method=split_method, **kw).fit(
            X, y).booster_.trees()[0]
        theirs = ensemble.GradientBoostingClassifier(init="zero", random_state=0, **kw).fit(
            X, y).estimators_[0, 0].tree_
        np.testing.assert_array_equal(ours["left"], np.where(theirs.children_left < 0, -1,
                                                             theirs.children_left))
        np.testing.assert_array_equal(ours["feature"], np.where(theirs.feature < 0, -1,
                                                                theirs.feature))
        split = ours["feature"] >= 0
        np.testing.assert_array_equal(ours["threshold"][split], theirs.threshold[split])
        np.testing.assert_array_equal(ours["n_samples"], theirs.n_node_samples)
    # (The halves' nodes do tie: their gains are equal.)
    tree = GradientBoostingClassifier(n_estimators=1, max_leaf_nodes=15,
                                      max_depth=None).fit(X, y).booster_.trees()[0]
    assert tree["improvement"][1] == tree["improvement"][2]


# --------------------------------------------------- with the tree rules and sparse X
# Best-first growth honours criterion, min_impurity_decrease and ccp_alpha as
# scikit-learn's BestFirstTreeBuilder does: a node whose best split decreases the
# weighted impurity by less than the bound waits in the frontier as a leaf (its
# improvement 0), the proxy of ``criterion`` ranks a node's splits, and the grown tree
# is pruned by cost complexity before its leaf values. scikit-learn renumbers a
# pruned tree depth first (gbc-core keeps the order of creation), so pruned trees are
# compared recursively; the others node for node with their numbering.
from test_tree_criteria import DATA as _RULES_DATA  # noqa: E402
from test_tree_criteria import _check_same_model, _ours_fit, _sklearn_fit  # noqa: E402


@pytest.mark.parametrize("split_method", ["exact", "hist"])
@pytest.mark.parametrize("n_classes, max_leaf_nodes, max_depth", [
    (2, 6, None), (2, 12, 5), (3, 12, 5), (3, 30, None),
])
@pytest.mark.parametrize("rules", [
    dict(min_impurity_decrease=0.003),
    dict(min_impurity_decrease=0.0005),
    dict(ccp_alpha=0.001),
    dict(ccp_alpha=0.0002),
    dict(criterion="squared_error"),
    dict(criterion="squared_error", min_impurity_decrease=0.001, ccp_alpha=0.0005),
])
def test_tree_rules_with_best_first_as_scikit_learn(split_method, n_classes,
                                                    max_leaf_nodes, max_depth, rules):
    X, y, w = _RULES_DATA[n_classes]
    params = dict(max_leaf_nodes=max_leaf_nodes, max_depth=max_depth, min_samples_leaf=5,
                  **rules)
    ours = _ours_fit(X, y, w, split_method=split_method, **params)
    theirs = _sklearn_fit(X, y, w, **params)
    _check_same_model(ours, theirs, X)  # probabilities to 1e-12, trees recursively
    if "ccp_alpha" not in rules:
        n_splits, n_ties = _assert_same_trees(ours, theirs, X)  # numbering too
        assert n_ties == 0, (n_splits, n_ties)
    # The budget binds or the rules act: not the level-wise model in disguise.
    assert max(_leaves(t) for t in ours.booster_.trees()) <= max_leaf_nodes


@pytest.mark.parametrize("rules", [dict(min_impurity_decrease=0.003), dict(ccp_alpha=0.001)])
def test_tree_rules_change_best_first_trees(rules):
    """Each rule removes nodes from the best-first trees (so the cases above test the
    rule, not the plain best-first model)."""
    X, y, w = _RULES_DATA[3]
    params = dict(max_leaf_nodes=30, max_depth=None, min_samples_leaf=5)
    plain = _ours_fit(X, y, w, **params)
    ruled = _ours_fit(X, y, w, **params, **rules)
    count = lambda m: sum(t.node_count for t in m.estimators_.ravel())  # noqa: E731
    assert count(ruled) < count(plain)


def test_pruned_best_first_tree_keeps_its_order_and_leaf_rows():
    """A pruned best-first tree keeps the order of creation of its kept nodes
    (children after their parent, side by side), and the rows of a pruned branch
    fall in its new leaf, before the leaf values: each leaf's value is the Newton
    step over the rows ``apply`` puts in it (first tree, F0 = 0, p = 1/2)."""
    X, y, w = _RULES_DATA[2]
    plain = GradientBoostingClassifier(n_estimators=1, max_leaf_nodes=30, max_depth=None,
                                       min_samples_leaf=3).fit(X, y, sample_weight=w)
    est = GradientBoostingClassifier(n_estimators=1, max_leaf_nodes=30, max_depth=None,
                                     min_samples_leaf=3, ccp_alpha=0.002).fit(
        X, y, sample_weight=w)
    full, tree = plain.estimators_[0, 0], est.estimators_[0, 0]
    assert 1 < tree.node_count < full.node_count
    left, right = tree.children_left, tree.children_right
    inner = np.flatnonzero(tree.feature >= 0)
    assert np.all(left[inner] > inner) and np.all(right[inner] == left[inner] + 1)
    # The kept nodes are the unpruned tree's in its order: walking both trees from the
    # root, a kept node's position among the kept is its rank in the full tree.
    kept = []

    def walk(i, j):
        kept.append(j)
        if tree.feature[i] >= 0:
            assert (tree.feature[i], tree.threshold[i]) == (full.feature[j], full.threshold[j])
            walk(left[i], full.children_left[j])
            walk(right[i], full.children_right[j])
    walk(0, 0)
    order = np.empty(len(kept), dtype=int)
    order[np.argsort(kept)] = np.arange(len(kept))
    node_ids = np.empty(len(kept), dtype=int)  # our node -> its rank among the kept

    def ids(i, out):
        out.append(i)
        if tree.feature[i] >= 0:
            ids(left[i], out)
            ids(right[i], out)
    ours = []
    ids(0, ours)
    node_ids[:] = ours
    np.testing.assert_array_equal(node_ids, order)
    leaves = est.apply(X)[:, 0, 0].astype(int)
    assert np.all(tree.feature[leaves] == -1)
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        expected = np.sum(w[rows] * (y[rows] - 0.5)) / np.sum(w[rows] * 0.25)
        np.testing.assert_allclose(tree.value[leaf], expected, rtol=1e-12)


@pytest.mark.parametrize("container", ["csr", "csc"])
@pytest.mark.parametrize("options", [
    dict(),
    dict(subsample=0.7, random_state=2),
    dict(subsample=0.7, random_state=2, min_impurity_decrease=1e-3, ccp_alpha=5e-4,
         criterion="squared_error"),
])
def test_best_first_on_sparse_input_equals_dense_bit_for_bit(container, options):
    """The hist fit bins sparse columns and routes out-of-bag rows on them: best
    first, the same model as on the dense data, byte for byte."""
    sparse = require("scipy.sparse")
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2500, 8)).astype(np.float32)
    X[rng.random(X.shape) < 0.6] = 0.0
    X[rng.random(X.shape) < 0.03] = np.nan
    y = np.digitize(np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 3])
                    + rng.normal(scale=0.7, size=2500), [-0.5, 0.5])
    w = rng.uniform(0.5, 2.0, size=2500)
    kw = dict(split_method="hist", n_estimators=8, max_leaf_nodes=14, max_depth=None,
              min_samples_leaf=4, **options)
    dense = GradientBoostingClassifier(**kw).fit(X, y, sample_weight=w)
    Xs = getattr(sparse, f"{container}_matrix")(X)
    sp_model = GradientBoostingClassifier(**kw).fit(Xs, y, sample_weight=w)
    assert (dense.booster_.ensemble.nodes.tobytes()
            == sp_model.booster_.ensemble.nodes.tobytes())
    assert dense.predict_proba(X).tobytes() == sp_model.predict_proba(Xs).tobytes()
    assert dense.train_score_.tobytes() == sp_model.train_score_.tobytes()
    assert max(_leaves(t) for t in dense.booster_.trees()) == 14
