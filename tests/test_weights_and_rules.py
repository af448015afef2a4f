"""Rows of zero weight, validation sets without weight, and rules of the training
loop that only a test holds, against scikit-learn or a naive NumPy twin.

scikit-learn's trees leave rows of zero weight out (no threshold is chosen from them,
no sample count counts them): gbc-core's must be the same trees. Comparisons with
scikit-learn use continuous weights and leaves of 10 rows or more, where no two splits
have exactly equal gains (scikit-learn breaks such ties by a random feature order).
"""

import numpy as np
import pytest

from gbc_core import GradientBoostingClassifier as GBC

from conftest import require

sklearn_ensemble = require("sklearn.ensemble")
sklearn_tree = require("sklearn.tree")
sklearn_metrics = require("sklearn.metrics")


def _data(n_classes, n=600, d=8, seed=0):
    """Rows whose class depends on a few features, continuous weights, and every
    third weight 0."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32).astype(np.float64)
    logits = np.stack([X[:, k % d] - 0.7 * X[:, (k + 1) % d] * (X[:, (k + 2) % d] > 0)
                       for k in range(n_classes)])
    y = np.argmax(logits + rng.gumbel(size=logits.shape), axis=0)
    w = rng.uniform(0.3, 3.0, size=n)
    w[::3] = 0.0
    return X, y, w


def _sklearn(**params):
    return sklearn_ensemble.GradientBoostingClassifier(init="zero", random_state=0, **params)


def _walk(tree):
    """The nodes of a tree in depth-first order (left first), as (feature, threshold,
    n_node_samples, weighted_n_node_samples); a leaf has feature None. gbc-core and
    scikit-learn number their nodes differently (level by level / depth first)."""
    out = []

    def visit(i):
        left = int(tree.children_left[i])
        leaf = left < 0
        out.append((None if leaf else int(tree.feature[i]),
                    None if leaf else float(tree.threshold[i]),
                    int(tree.n_node_samples[i]), float(tree.weighted_n_node_samples[i])))
        if not leaf:
            visit(left)
            visit(int(tree.children_right[i]))

    visit(0)
    return out


def _assert_same_tree(ours, theirs):
    a, b = _walk(ours), _walk(theirs)
    assert [n[:3] for n in a] == [n[:3] for n in b]
    np.testing.assert_allclose([n[3] for n in a], [n[3] for n in b], rtol=1e-12)


# ------------------------------------------------------- rows of zero weight
@pytest.mark.parametrize("n_classes", [2, 3])
def test_zero_weight_rows_shape_no_tree_as_in_sklearn(n_classes):
    """Every third weight 0 (issue: probabilities on new rows differed from
    scikit-learn's by 0.18-0.40): the same trees node for node (n_node_samples counts
    the rows of positive weight), importances, training loss and probabilities."""
    X, y, w = _data(n_classes, seed=5)
    X_new = np.random.default_rng(1).normal(size=(400, X.shape[1]))
    params = dict(n_estimators=10, max_depth=3, learning_rate=0.3, min_samples_leaf=10)
    ours = GBC(**params).fit(X, y, sample_weight=w)
    ref = _sklearn(**params).fit(X, y, sample_weight=w)
    assert np.abs(ours.predict_proba(X_new) - ref.predict_proba(X_new)).max() < 1e-9
    for m in range(10):
        for k in range(ours.n_trees_per_iteration_):
            _assert_same_tree(ours.estimators_[m, k], ref.estimators_[m, k].tree_)
    np.testing.assert_allclose(ours.feature_importances_, ref.feature_importances_,
                               rtol=1e-9, atol=1e-12)
    # train_score_ is in scikit-learn's units (for two classes, the deviance).
    np.testing.assert_allclose(ours.train_score_, ref.train_score_, rtol=1e-9)
    # And the rows of zero weight change nothing: the model of the other rows alone.
    keep = w > 0
    alone = GBC(**params).fit(X[keep], y[keep], sample_weight=w[keep])
    assert ours.booster_.ensemble.nodes.tobytes() == alone.booster_.ensemble.nodes.tobytes()


@pytest.mark.parametrize("n_classes", [2, 3])
def test_min_samples_leaf_counts_rows_of_positive_weight(n_classes):
    """Each leaf holds at least min_samples_leaf training rows of positive weight, and
    its n_node_samples is their number (a naive count through ``apply``)."""
    X, y, w = _data(n_classes, n=300, seed=6)
    model = GBC(n_estimators=5, max_depth=4, min_samples_leaf=12).fit(X, y, sample_weight=w)
    leaves = model.apply(X)
    for m in range(5):
        for k in range(model.n_trees_per_iteration_):
            tree = model.estimators_[m, k]
            counts = np.bincount(leaves[w > 0, m, k], minlength=tree.node_count)
            is_leaf = tree.children_left < 0
            np.testing.assert_array_equal(tree.n_node_samples[is_leaf], counts[is_leaf])
            assert counts[is_leaf].min() >= 12


@pytest.mark.parametrize("n_classes", [2, 3])
def test_zero_weight_rows_with_subsample(n_classes):
    """With subsample both libraries draw the in-bag rows among all rows (zero weight
    or not), so dropping the zero-weight rows would change the draw. What holds: the
    rows of zero weight change nothing (any features and labels give the same model
    bit for bit), and the first iteration's trees are scikit-learn's regression trees
    of the residuals weighted by w x in-bag."""
    X, y, w = _data(n_classes, seed=7)
    params = dict(n_estimators=6, max_depth=3, min_samples_leaf=10, subsample=0.7,
                  random_state=3)
    ours = GBC(**params).fit(X, y, sample_weight=w)
    rng = np.random.default_rng(0)
    X2, y2 = X.copy(), y.copy()
    zero = w == 0
    X2[zero] = rng.normal(size=(zero.sum(), X.shape[1])).astype(np.float32)
    y2[zero] = rng.permutation(y[zero])
    other = GBC(**params).fit(X2, y2, sample_weight=w)
    assert ours.booster_.ensemble.nodes.tobytes() == other.booster_.ensemble.nodes.tobytes()
    np.testing.assert_array_equal(ours.train_score_, other.train_score_)
    np.testing.assert_array_equal(ours.oob_scores_, other.oob_scores_)
    # The training and out-of-bag losses are the weighted losses of the in-bag and
    # out-of-bag rows among all rows (zero weights add nothing).
    staged = list(ours.staged_predict_proba(X))
    for m in range(6):
        inbag = np.zeros(y.shape[0], dtype=bool)
        inbag[np.random.default_rng([3, m]).choice(y.shape[0], int(0.7 * y.shape[0]),
                                                   replace=False)] = True
        proba = staged[m]
        for rows, score in [(inbag, ours.train_score_[m]), (~inbag, ours.oob_scores_[m])]:
            expected = sklearn_metrics.log_loss(y[rows], proba[rows], sample_weight=w[rows],
                                                labels=np.arange(max(n_classes, 2)))
            # scikit-learn's units: for two classes the deviance, twice the log-loss.
            factor = 2 if n_classes == 2 else 1
            assert score == pytest.approx(factor * expected, rel=1e-10)
    # A warm start goes on as a single fit would.
    half = GBC(**dict(params, n_estimators=3, warm_start=True)).fit(X, y, sample_weight=w)
    half.set_params(n_estimators=6).fit(X, y, sample_weight=w)
    assert half.booster_.ensemble.nodes.tobytes() == ours.booster_.ensemble.nodes.tobytes()
    # The first iteration (init="zero": p = 1/K, residuals [y = k] - 1/K); the in-bag
    # rows of iteration m are drawn from the stream seeded by (random_state, m).
    n = y.shape[0]
    inbag = np.zeros(n, dtype=bool)
    inbag[np.random.default_rng([3, 0]).choice(n, int(0.7 * n), replace=False)] = True
    onehot = np.eye(max(n_classes, 2))[y]
    for k in range(ours.n_trees_per_iteration_):
        target = onehot[:, 1] - 0.5 if n_classes == 2 else onehot[:, k] - 1 / n_classes
        ref = sklearn_tree.DecisionTreeRegressor(
            criterion="squared_error", max_depth=3, min_samples_leaf=10, random_state=0)
        ref.fit(X.astype(np.float32), target, sample_weight=w * inbag)
        _assert_same_tree(ours.estimators_[0, k], ref.tree_)


def test_zero_class_weight_rows_shape_no_tree():
    """class_weight can give rows zero weight too: the same model as their zero
    sample_weight."""
    X, y, _ = _data(3, n=400, seed=8)
    params = dict(n_estimators=5, max_depth=3)
    by_class = GBC(class_weight={0: 0.0}, **params).fit(X, y)
    by_rows = GBC(**params).fit(X, y, sample_weight=(y != 0).astype(float))
    assert by_class.booster_.ensemble.nodes.tobytes() == by_rows.booster_.ensemble.nodes.tobytes()
    assert by_class.estimators_[0, 0].n_node_samples[0] == np.count_nonzero(y != 0)


# ------------------------------------------------ validation sets without weight
def test_early_stopping_hold_out_always_gets_weight():
    """The issue's scenario: 5% of the rows weighted. The hold-out used to get only
    zero-weight rows for some seeds (a validation loss of 0.0 at every iteration, and
    a 1-iteration model kept); now every class's weighted rows are split too."""
    rng = np.random.default_rng(0)
    n = 400
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    for seed in range(20):
        w = np.zeros(n)
        w[np.random.default_rng(seed).choice(n, n // 20, replace=False)] = 1.0
        model = GBC(n_estimators=30, n_iter_no_change=3, random_state=seed)
        model.fit(X, y, sample_weight=w)
        assert np.all(np.asarray(model.validation_score_) > 0), seed


def test_hold_out_without_any_weight_is_an_error():
    X = np.random.default_rng(0).normal(size=(90, 3))
    y = np.arange(90) % 3
    w = np.zeros(90)
    w[[0, 1]] = 1.0  # one weighted row in each of two classes: none to hold out
    with pytest.raises(ValueError, match="validation rows would have no weight.*eval_set"):
        GBC(n_estimators=3, n_iter_no_change=2).fit(X, y, sample_weight=w)


def test_eval_set_without_weight_is_an_error_naming_eval_set():
    X = np.random.default_rng(0).normal(size=(90, 3))
    y = np.arange(90) % 3
    with pytest.raises(ValueError, match="^eval_set w_val is zero for every sample"):
        GBC(n_estimators=3, n_iter_no_change=2).fit(X, y, eval_set=(X, y, np.zeros(90)))
    with pytest.raises(ValueError, match=r"^eval_set: its weights \(w_val x class_weight\) "
                                         "are zero for every row"):
        GBC(n_estimators=3, class_weight={0: 0.0}).fit(X, y, eval_set=(X[y == 0], y[y == 0]))


# ------------------------------------------------------- class_weight's rule
def test_class_weight_leaving_one_class_is_refused_like_sample_weight():
    X = np.random.default_rng(0).normal(size=(90, 3))
    y = np.arange(90) % 3
    with pytest.raises(ValueError, match=r"y contains 1 class after sample_weight trimmed"):
        GBC(n_estimators=3).fit(X, y, sample_weight=(y == 2).astype(float))
    with pytest.raises(ValueError, match=r"y contains 1 class after class_weight trimmed "
                                         r"classes .*\[0, 1\]"):
        GBC(n_estimators=3, class_weight={0: 0.0, 1: 0.0}).fit(X, y)
    # Each alone leaves two classes, their product one.
    with pytest.raises(ValueError, match=r"y contains 1 class after class_weight trimmed "
                                         r"classes .*\[1, 2\]"):
        GBC(n_estimators=3, class_weight={1: 0.0}).fit(
            X, y, sample_weight=(y != 2).astype(float))


# ------------------------------------------------- softmax and log-softmax shifts
def _separable(n_classes, n=300, seed=0):
    """Classes set by thresholds on feature 0: trees of depth 2 separate them."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 4)).astype(np.float32).astype(np.float64)
    edges = np.linspace(-3, 3, n_classes + 1)[1:-1]
    return X, np.searchsorted(edges, X[:, 0])


def _log_softmax(raw):
    top = raw.max(axis=1, keepdims=True)
    return raw - top - np.log(np.exp(raw - top).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_raw_scores_beyond_800_train_and_predict_finite(n_classes):
    """learning_rate=500: after the first iteration |F| reaches 1000, where exp(F)
    overflows: the softmax of training and prediction and the log-softmax must shift
    by the largest score (scikit-learn's trees and probabilities are the reference;
    its predict_log_proba is log(predict_proba), -inf where p underflows, so the
    log-probabilities are compared with a NumPy twin)."""
    X, y = _separable(n_classes)
    X_new = np.random.default_rng(1).uniform(-3, 3, size=(200, 4))
    params = dict(n_estimators=2, max_depth=2, learning_rate=500.0, min_samples_leaf=5)
    ours = GBC(**params).fit(X, y)
    ref = _sklearn(**params).fit(X, y)
    raw = ours.decision_function(X_new)
    raw = raw[:, None] if raw.ndim == 1 else raw
    assert np.abs(raw).max() >= 1000
    assert np.isfinite(ours.train_score_).all()
    np.testing.assert_allclose(ours.train_score_, ref.train_score_, rtol=1e-12)
    np.testing.assert_allclose(ours.decision_function(X_new), ref.decision_function(X_new),
                               rtol=1e-12)
    proba = ours.predict_proba(X_new)
    np.testing.assert_allclose(proba, ref.predict_proba(X_new), rtol=0, atol=1e-15)
    log_proba = ours.predict_log_proba(X_new)
    assert np.isfinite(log_proba).all()
    full = np.c_[np.zeros(raw.shape[0]), raw] if n_classes == 2 else raw
    np.testing.assert_allclose(log_proba, _log_softmax(full), rtol=1e-15, atol=0)


def test_softmax_of_scores_1000_apart():
    """A row whose raw scores are [1000, 0, -1000, -1000] (the init_raw of a model
    whose trees add exactly 0): probabilities [1, 0, 0, 0], log-probabilities
    [0, -1000, -2000, -2000]."""
    X = np.zeros((8, 1))
    y = np.repeat([0, 1, 2, 3], 2)
    # A constant feature (no split) and classes of equal counts: every leaf value is 0.
    model = GBC(n_estimators=1, max_depth=1).fit(X, y)
    ensemble = model.booster_.ensemble
    shifted = type(ensemble).from_trees(
        ensemble.trees(), n_outputs=4, init_raw=np.array([1000.0, 0.0, -1000.0, -1000.0]),
        learning_rate=ensemble.learning_rate, n_features=1)
    booster = type(model.booster_)(shifted, model.classes_)
    np.testing.assert_array_equal(booster.decision_function(X[:1]),
                                  [[1000.0, 0.0, -1000.0, -1000.0]])
    np.testing.assert_array_equal(booster.predict_proba(X[:1]), [[1.0, 0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(booster.predict_log_proba(X[:1]),
                                  [[0.0, -1000.0, -2000.0, -2000.0]])


# ------------------------------------------------------- ties of raw scores
def test_tied_raw_scores_predict_the_first_class_as_sklearn():
    """A constant feature (no split), init="zero" and 4 classes (p = 1/4, residuals
    3/4 and -1/4: exact sums): each class's score is exactly the same function of its
    count. Counts (3, 3, 3, 3): every score is 0 at every iteration; (2, 4, 4, 2):
    classes "b" and "c" tie above the others. scikit-learn predicts the first of the
    tied classes (argmax), and so must gbc-core."""
    for counts, first, n_estimators in [((3, 3, 3, 3), "a", 3), ((2, 4, 4, 2), "b", 1)]:
        y = np.repeat(["a", "b", "c", "d"], counts)
        X = np.zeros((y.shape[0], 2))
        ours = GBC(n_estimators=n_estimators).fit(X, y)
        ref = _sklearn(n_estimators=n_estimators).fit(X, y)
        raw = ours.decision_function(X)
        top = raw.max(axis=1)
        assert (np.count_nonzero(raw == top[:, None], axis=1) >= 2).all()
        np.testing.assert_array_equal(raw, ref.decision_function(X))
        assert ours.predict(X).tolist() == ref.predict(X).tolist() == [first] * y.shape[0]
        assert [p.tolist() for p in ours.staged_predict(X)] == [
            p.tolist() for p in ref.staged_predict(X)]


# -------------------------------------------------- the prior with a zero class
def test_prior_with_a_class_of_zero_weight_is_sklearns():
    """A class whose rows all have weight 0: its prior is clipped to machine epsilon
    (scikit-learn's), so F0 is finite, and the model is scikit-learn's default
    (prior) model."""
    X, y, w = _data(3, n=600, seed=12)
    w = np.where(y == 2, 0.0, np.where(w > 0, w, 1.0))
    params = dict(n_estimators=5, max_depth=2, min_samples_leaf=10)
    ours = GBC(init="prior", **params).fit(X, y, sample_weight=w)
    ref = sklearn_ensemble.GradientBoostingClassifier(random_state=0, **params)
    ref.fit(X, y, sample_weight=w)
    assert np.isfinite(ours.init_raw_).all()
    eps = np.finfo(np.float64).eps
    prior = np.array([w[y == k].sum() for k in range(3)]) / w.sum()
    log_p = np.log(np.clip(prior, eps, 1 - eps))
    np.testing.assert_allclose(ours.init_raw_, log_p - log_p.mean(), rtol=1e-14)
    X_new = np.random.default_rng(3).normal(size=(300, X.shape[1]))
    np.testing.assert_allclose(ours.decision_function(X_new), ref.decision_function(X_new),
                               rtol=1e-12, atol=1e-12)
    assert np.abs(ours.predict_proba(X_new) - ref.predict_proba(X_new)).max() < 1e-12


# ---------------------------------------- multiclass leaf values with subsample
def test_multiclass_leaf_values_come_from_in_bag_rows():
    """gamma_j = (K - 1)/K sum w r / sum w p (1 - p) over the in-bag rows of leaf j
    only (NumPy twin, iteration by iteration; the in-bag rows of iteration m are drawn
    from the stream seeded by (random_state, m))."""
    n_classes, n = 3, 400
    X, y, w = _data(n_classes, n=n, seed=13)
    w = np.where(w > 0, w, 1.0)
    model = GBC(n_estimators=3, max_depth=2, subsample=0.5, learning_rate=0.5,
                random_state=4).fit(X, y, sample_weight=w)
    leaves = model.apply(X)
    onehot = np.eye(n_classes)[y]
    raw = np.zeros((n, n_classes))
    for m in range(3):
        inbag = np.zeros(n, dtype=bool)
        inbag[np.random.default_rng([4, m]).choice(n, n // 2, replace=False)] = True
        e = np.exp(raw - raw.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        for k in range(n_classes):
            tree = model.estimators_[m, k]
            r = onehot[:, k] - p[:, k]
            for leaf in np.flatnonzero(tree.children_left < 0):
                rows = inbag & (leaves[:, m, k] == leaf)
                num = (n_classes - 1) / n_classes * np.sum(w[rows] * r[rows])
                den = np.sum(w[rows] * p[rows, k] * (1 - p[rows, k]))
                assert tree.value[leaf] == pytest.approx(num / den, rel=1e-10, abs=1e-14)
            raw[:, k] += 0.5 * tree.value[leaves[:, m, k]]
    np.testing.assert_allclose(raw, model.decision_function(X), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------- early stopping
def test_an_equal_validation_loss_is_not_an_improvement():
    """Classes of equal counts on a constant feature: every leaf value is exactly 0
    (residuals +-1/2), so the validation loss is log 2 at every iteration. With
    tol=0 the first iteration is the best; the next n_iter_no_change equal losses do
    not improve on it, and the fit stops there and keeps 1 iteration."""
    X = np.zeros((40, 2))
    y = np.arange(40) % 2
    model = GBC(n_estimators=20, n_iter_no_change=3, tol=0.0)
    model.fit(X, y, eval_set=(X[:10], y[:10]))
    # (The binomial deviance: twice the log-loss, exactly.)
    np.testing.assert_array_equal(model.validation_score_, [2 * np.log(2)] * 4)
    assert model.best_iteration_ == model.n_estimators_ == 1


# ------------------------------------------------------------- max_features
def test_the_trees_of_an_iteration_draw_their_own_features():
    """max_features=1 on continuous features: a tree's root splits on the one
    feature drawn for it. The K trees of an iteration draw their own (not one draw
    for all K): over 12 iterations of 3 trees among 10 features, the three roots
    are not the same feature in every iteration."""
    X, y, _ = _data(3, n=300, d=10, seed=14)
    model = GBC(n_estimators=12, max_depth=1, max_features=1, random_state=5).fit(X, y)
    roots = np.array([[model.estimators_[m, k].feature[0] for k in range(3)]
                      for m in range(12)])
    assert (roots >= 0).all()
    same = (roots == roots[:, :1]).all(axis=1)
    assert same.sum() <= 6, roots


# ----------------------------------------------------- the raw-score overflow bound
def test_the_overflow_bound_holds_for_every_output():
    """Group A (class 2 only) and group B (the three classes alike) apart on one
    feature: the first iteration's trees have leaf values -1 (outputs 0 and 1) and 2
    (output 2) on A, 0 on B. With learning_rate 6e299 only output 2 can exceed
    1e300 (2 x 6e299), and the fit must refuse it after that first iteration."""
    n = 30
    X = np.zeros((4 * n, 1))
    X[n:, 0] = 1.0
    y = np.r_[np.full(n, 2), np.repeat([0, 1, 2], n)]
    safe = GBC(n_estimators=1, max_depth=1, learning_rate=3e299).fit(X, y)
    bound = [3e299 * np.abs(safe.estimators_[0, k].value).max() for k in range(3)]
    assert bound[0] <= 3.01e299 and bound[1] <= 3.01e299 and 5.99e299 <= bound[2] <= 6.01e299
    with pytest.raises(ValueError, match=r"learning_rate=6e\+299 is too large for this "
                                         r"data: after 1 iteration\(s\)"):
        GBC(n_estimators=1, max_depth=1, learning_rate=6e299).fit(X, y)


class _ScriptedLoss:
    """A loss of three outputs whose trees get the leaf values the test chooses
    (``values[m][k]`` for the tree of output k of iteration m)."""

    n_outputs = 3
    score_factor = 1.0

    def __init__(self, values):
        self.values = values

    def initial_raw(self, y, sample_weight, init):
        return np.zeros(3)

    def start(self, y, sample_weight, raw, n_threads):
        return _ScriptedState(self.values, y.shape[0])


class _ScriptedState:
    def __init__(self, values, n):
        from gbc_core._common import ROW_STAT_DTYPE

        self.values, self.iteration = values, 0
        self.residual = np.random.default_rng(0).normal(size=n)
        self.row_stats = np.empty(n, dtype=ROW_STAT_DTYPE)
        self.row_stats["w"] = 1.0
        self.row_stats["wr"] = self.residual

    def tree_target(self, k):
        return self.row_stats, self.residual

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        value = self.values[self.iteration][k]
        nodes["value"] = np.where(nodes["feature"] < 0, value, 0.0)

    def finish_iteration(self, sample_mask):
        self.iteration += 1
        return 1.0


def test_the_overflow_bound_sums_every_tree_of_an_output():
    """|F_k(x)| <= |F0_k| + sum over the trees of output k of eta max |leaf value|:
    with leaf values 0.1, 0.2 and 0.4 for outputs 0, 1 and 2 and eta = 1e300, no
    tree alone comes near 1e300, but output 2's sum passes it at the third iteration
    (a NumPy twin of the bound finds which)."""
    from gbc_core._boosting import boost
    from gbc_core._params import DEFAULTS, resolve

    values = [[0.1, 0.2, 0.4]] * 5
    lr = 1e300
    sums = np.cumsum(lr * np.abs(values), axis=0)
    first = int(np.argmax((sums > 1e300).any(axis=1))) + 1
    assert first == 3
    X = np.asfortranarray(np.random.default_rng(0).normal(size=(50, 2)), dtype=np.float32)
    y = np.arange(50) % 3
    params = resolve(dict(DEFAULTS, n_estimators=5, learning_rate=lr), 50, 2, 50.0)
    with pytest.raises(ValueError, match=rf"after {first} iteration\(s\) the raw scores"):
        boost(X, y, None, _ScriptedLoss(values), params, 0)


# ------------------------------------------------------------- parameter rules
#: Values at the edges of the parameters' ranges (gbc-core's deliberate differences,
#: learning_rate > 0 and max_depth <= 64, are documented and not listed).
EDGES = {
    "min_samples_leaf": [1, 2, 0.5, 1.0, 0.0, 1e-9, 0.999999, 2.0, 0, -1],
    "min_samples_split": [2, 1, 0.5, 1.0, 0.0, 1.5, 3.0, 0],
    "min_weight_fraction_leaf": [0.0, 0.5, 0.5000001, -0.1, 0, 1],
    "subsample": [1.0, 0.5, 0.0, 1.5, 1, 0],
    "validation_fraction": [0.1, 0.0, 1.0, 0.999, 1.5, 0, 1],
    "tol": [0.0, 1e-4, -1e-9, 10, 0],
    "n_iter_no_change": [None, 1, 0, 5, -1],
    "n_estimators": [1, 0, 100, -1],
    "max_features": [None, "sqrt", "log2", 1, 0, 0.5, 1.0, 0.0, 1.5, "auto"],
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_parameter_rules_are_sklearns(name):
    """Each value is refused by gbc-core's parameter table exactly when
    scikit-learn's GradientBoostingClassifier refuses it (min_samples_leaf=1.0 among
    them: a float must lie in (0, 1))."""
    from sklearn.utils._param_validation import InvalidParameterError

    from gbc_core._params import BY_NAME

    X, y = _separable(2, n=20)
    for value in EDGES[name]:
        params = {"n_estimators": 1, name: value}
        try:
            _sklearn(**params).fit(X, y)
            theirs = True
        except InvalidParameterError:
            theirs = False
        assert BY_NAME[name].accepts(value) is theirs, (name, value)
        if not theirs:
            with pytest.raises(ValueError, match=name):
                GBC(**params).fit(X, y)


def test_defaults_are_sklearns():
    """Every parameter both estimators have defaults to scikit-learn's value, but
    init ("zero", the paper's F0 = 0; scikit-learn's None is the prior) and, from
    scikit-learn 1.9 on, criterion (deprecated there, "deprecated" its placeholder
    default; "friedman_mse" before, ours)."""
    from gbc_core._params import DEFAULTS

    ours = GBC().get_params()
    theirs = sklearn_ensemble.GradientBoostingClassifier().get_params()
    assert ours == DEFAULTS
    shared = sorted(set(ours) & set(theirs) - {"init", "criterion"})
    assert {"tol", "validation_fraction", "min_samples_leaf", "n_estimators"} <= set(shared)
    assert {k: ours[k] for k in shared} == {k: theirs[k] for k in shared}
    assert (ours["init"], theirs["init"]) == ("zero", None)
    assert ours["criterion"] == "friedman_mse"
    assert theirs["criterion"] in ("friedman_mse", "deprecated")
    assert {"min_impurity_decrease", "ccp_alpha"} <= set(shared)


# ------------------------------------------- an eval_set that lacks a class
@pytest.mark.parametrize("n_classes", [2, 3])
def test_eval_set_lacking_a_class_is_scored_over_every_class(n_classes):
    """The validation loss of an eval_set that holds some classes only is the
    log-loss over all the model's classes (scikit-learn's log_loss with labels=)."""
    X, y, w = _data(n_classes, n=400, seed=15)
    w = np.where(w > 0, w, 1.0)
    labels = np.array(["lo", "mid", "hi"][:n_classes])
    y = labels[y]
    rows = y != labels[0]
    Xv, yv, wv = X[rows][:100], y[rows][:100], w[rows][:100]
    model = GBC(n_estimators=5, max_depth=2).fit(X, y, eval_set=(Xv, yv, wv))
    assert model.classes_.tolist() == sorted(labels.tolist())
    for m, proba in enumerate(model.staged_predict_proba(Xv)):
        expected = sklearn_metrics.log_loss(yv, proba, labels=model.classes_,
                                            sample_weight=wv)
        factor = 2 if n_classes == 2 else 1  # scikit-learn's units
        assert model.validation_score_[m] == pytest.approx(factor * expected, rel=1e-12)
