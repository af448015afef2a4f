"""Production features of the estimator (issue 4): missing values, sample and class
weights, early stopping, warm start, subsampling, max_features, input types, strict
prediction, thread safety, reproducibility, importances and verbose output.

Values are checked against naive NumPy recomputations wherever possible. The
agreement with scikit-learn on NaN-free data is in test_sklearn_agreement.py.
"""

import copy
import pickle
import re
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from gbc_core import GradientBoostingClassifier as GBC
from gbc_core._classifier import _stratified_split

from conftest import make_continuous, other_thread_progress, require


# ----------------------------------------------------------------- helpers
def _log_loss(y, raw, w=None):
    """Weighted mean log-loss of raw scores, naive NumPy."""
    w = np.ones_like(raw) if w is None else w
    return float(np.sum(w * (np.logaddexp(0.0, raw) - y * raw)) / np.sum(w))


def _deviance(y, raw, w=None):
    """The binomial deviance, twice the mean log-loss: scikit-learn's train_score_
    (and validation and out-of-bag scores) of two classes."""
    return 2 * _log_loss(y, raw, w)


def _sigmoid(raw):
    return 1.0 / (1.0 + np.exp(-raw))


def _node_rows(tree, X32):
    """Rows of ``X32`` reaching each node of ``tree`` (children follow parents)."""
    rows = {0: np.arange(X32.shape[0])}
    for j in range(tree.shape[0]):
        if tree["feature"][j] < 0:
            continue
        idx = rows[j]
        x = X32[idx, tree["feature"][j]]
        go_left = np.where(np.isnan(x), tree["missing_go_left"][j].astype(bool),
                           x <= tree["threshold32"][j])
        rows[int(tree["left"][j])] = idx[go_left]
        rows[int(tree["right"][j])] = idx[~go_left]
    return rows


def _proxy(wr_left, w_left, wr_all, w_all):
    """Weighted SSE decrease of a split (sums of w*r and w of the left side)."""
    s_r, w_r = wr_all - wr_left, w_all - w_left
    return wr_left ** 2 / w_left + s_r ** 2 / w_r - wr_all ** 2 / w_all


def _staged_raw(model, X):
    return [model.init_raw_ * np.ones(X.shape[0])] + list(model.staged_decision_function(X))


def _nan_data(n=1500, seed=0):
    """x0 with 25% missing values that carry signal, x1..x3 with scattered NaN."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32).astype(np.float64)
    miss = rng.uniform(size=n) < 0.25
    logit = 1.5 * X[:, 0] + X[:, 1] - 0.5 * X[:, 2]
    logit[miss] = 2.0  # missing x0: mostly the positive class
    y = (rng.uniform(size=n) < _sigmoid(logit)).astype(np.int64)
    X[miss, 0] = np.nan
    X[rng.uniform(size=(n, 4)) < 0.05] = np.nan
    X[X[:, 1] > 1.0, 2] = np.nan  # x2 missing only where x1 is large
    return X, y


# ------------------------------------------------------------ missing values
@pytest.mark.parametrize("positive_when_missing", [True, False])
def test_nan_default_direction_is_the_side_of_larger_gain(positive_when_missing):
    """A stump on x0 (NaN in 30% of rows) against a brute-force search over every
    threshold and both directions for the missing values."""
    rng = np.random.default_rng(1)
    n = 1000
    x0 = rng.normal(size=n).astype(np.float32)
    miss = rng.uniform(size=n) < 0.3
    y = (x0 > 0.3).astype(np.float64)
    y[miss] = (rng.uniform(size=miss.sum()) < (0.9 if positive_when_missing else 0.1))
    x0[miss] = np.nan
    X = np.column_stack([x0, rng.normal(size=n).astype(np.float32)])
    model = GBC(n_estimators=1, max_depth=1, learning_rate=1.0).fit(X, y)
    root = model.trees()[0][0]
    assert root["feature"] == 0
    # NaN goes to the side of the positives (right, x > t) or of the negatives (left).
    assert root["missing_go_left"] == (0 if positive_when_missing else 1)

    # Brute force at F0 = 0: r = y - 0.5, unit weights.
    r = y - 0.5
    best = (-np.inf, None, None)
    for f in range(2):
        x = X[:, f]
        nan = np.isnan(x)
        vals = np.unique(x[~nan])
        for lo, hi in zip(vals[:-1], vals[1:]):
            t = float(lo) / 2 + float(hi) / 2
            left = ~nan & (x <= t)
            for miss_left in ([False, True] if nan.any() else [False]):
                lm = left | (nan & miss_left)
                gain = _proxy(r[lm].sum(), lm.sum(), r.sum(), n)
                if gain > best[0] * (1 + 1e-12):
                    best = (gain, f, miss_left)
    assert best[1] == 0 and best[2] == bool(root["missing_go_left"])
    assert root["improvement"] == pytest.approx(best[0], rel=1e-10)

    # At predict time NaN rows follow the learned direction.
    leaves = model.apply(np.array([[np.nan, 0.0], [-5.0, 0.0], [5.0, 0.0]]))[:, 0, 0]
    expected_leaf = root["left"] if root["missing_go_left"] else root["right"]
    assert leaves[0] == expected_leaf
    assert set(leaves[1:]) == {root["left"], root["right"]}


def test_nan_directions_of_every_node_against_numpy():
    """Every split of a 6-tree model on data with NaN: the training rows of each node
    (recomputed by a naive traversal) match the node counts; where a node's rows have
    NaN in the split feature, the missing values go to the side of larger gain for the
    residuals of that iteration; where they have none, to the child with more samples
    (right on a tie)."""
    X, y = _nan_data()
    w = np.random.default_rng(5).uniform(0.5, 2.0, size=y.shape[0])
    model = GBC(n_estimators=6, max_depth=3, learning_rate=0.5).fit(X, y, sample_weight=w)
    X32 = X.astype(np.float32)
    staged = _staged_raw(model, X)
    n_gain = n_larger = 0
    for m, tree in enumerate(model.trees()):
        r = y - _sigmoid(staged[m])
        rows = _node_rows(tree, X32)
        for j in range(tree.shape[0]):
            assert tree["n_samples"][j] == rows[j].size
            assert tree["weighted_n"][j] == pytest.approx(w[rows[j]].sum(), rel=1e-12)
            f = tree["feature"][j]
            if f < 0:
                continue
            idx = rows[j]
            x = X32[idx, f]
            nan = np.isnan(x)
            n_left = tree["n_samples"][tree["left"][j]]
            n_right = tree["n_samples"][tree["right"][j]]
            if not nan.any():
                assert tree["missing_go_left"][j] == (n_left > n_right), (m, j)
                n_larger += 1
                continue
            left = ~nan & (x <= tree["threshold32"][j])
            wr, ww = w[idx] * r[idx], w[idx]
            gains = [_proxy(wr[left | (nan & ml)].sum(), ww[left | (nan & ml)].sum(),
                            wr.sum(), ww.sum()) for ml in (False, True)]
            chosen = int(tree["missing_go_left"][j])
            assert gains[chosen] >= gains[1 - chosen], (m, j, gains)
            assert tree["improvement"][j] == pytest.approx(gains[chosen], rel=1e-9)
            n_gain += 1
    assert n_gain >= 6 and n_larger >= 3  # both rules were exercised


def test_nan_never_seen_in_training_goes_to_the_larger_child():
    X, y = make_continuous(n_samples=800, n_features=4, seed=2)
    model = GBC(n_estimators=5, max_depth=3).fit(X, y)
    rng = np.random.default_rng(0)
    X_test = X[:200].copy()
    X_test[rng.uniform(size=X_test.shape) < 0.3] = np.nan
    expected = np.full(X_test.shape[0], model.init_raw_)
    for tree in model.trees():
        inner = tree["feature"] >= 0
        larger = tree["n_samples"][tree["left"][inner]] > tree["n_samples"][tree["right"][inner]]
        np.testing.assert_array_equal(tree["missing_go_left"][inner], larger)
        for i in range(X_test.shape[0]):
            j = 0
            while tree["feature"][j] >= 0:
                x = np.float32(X_test[i, tree["feature"][j]])
                if np.isnan(x):
                    nl, nr = tree["n_samples"][tree["left"][j]], tree["n_samples"][tree["right"][j]]
                    j = tree["left"][j] if nl > nr else tree["right"][j]
                else:
                    j = tree["left"][j] if x <= tree["threshold32"][j] else tree["right"][j]
            expected[i] += 0.1 * tree["value"][j]
    np.testing.assert_array_equal(model.decision_function(X_test), expected)


@pytest.mark.parametrize("split_method", ["exact", "hist"])
@pytest.mark.parametrize("max_leaf_nodes", [None, 3])
def test_nan_never_seen_goes_right_on_a_tie_as_in_sklearn(split_method, max_leaf_nodes):
    """A node that saw no missing value sends them to the child with more rows and,
    with as many rows on each side, right: scikit-learn's tree rule
    (``n_left > n_right``). The trees of scikit-learn's GBC(init="zero") on the same
    data have our directions, and their scores of rows with NaN are ours."""
    sklearn_ensemble = require("sklearn.ensemble")
    X = np.arange(8, dtype=np.float64).reshape(-1, 1)
    y = np.array([0, 0, 0, 0, 1, 1, 1, 0])
    params = dict(init="zero", n_estimators=3, max_depth=2, learning_rate=0.5,
                  max_leaf_nodes=max_leaf_nodes)
    ours = GBC(split_method=split_method, **params).fit(X, y)
    theirs = sklearn_ensemble.GradientBoostingClassifier(**params).fit(X, y)
    X_nan = np.array([[np.nan], [0.0], [7.0]])
    n_ties = 0
    raw = np.zeros(X_nan.shape[0])
    for tree, est in zip(ours.estimators_[:, 0], theirs.estimators_[:, 0]):
        inner = tree.feature >= 0
        np.testing.assert_array_equal(tree.children_left, est.tree_.children_left)
        np.testing.assert_array_equal(tree.threshold[inner], est.tree_.threshold[inner])
        np.testing.assert_array_equal(tree.nodes["missing_go_left"][inner],
                                      est.tree_.missing_go_to_left[inner])
        n_left = tree.n_node_samples[tree.children_left[inner]]
        n_right = tree.n_node_samples[tree.children_right[inner]]
        n_ties += int(np.sum(n_left == n_right))
        raw += 0.5 * est.predict(X_nan)
    assert n_ties >= 2  # the tie is exercised
    np.testing.assert_allclose(ours.decision_function(X_nan), raw, rtol=0, atol=1e-12)


def _zeros_and_missing(n, seed):
    """x0 >= 0 with real zeros (mostly negatives) and missing values (mostly positives):
    imputing 0 mixes the two groups, a learned default direction keeps them apart."""
    rng = np.random.default_rng(seed)
    x0 = rng.exponential(size=n)
    x0[rng.uniform(size=n) < 0.3] = 0.0
    x1 = rng.normal(size=n)
    logit = np.where(x0 == 0, -2.0, x0 - 1.0) + 0.5 * x1
    miss = rng.uniform(size=n) < 0.2
    logit[miss] = 2.0
    y = (rng.uniform(size=n) < _sigmoid(logit)).astype(np.int64)
    x0[miss] = np.nan
    return np.c_[x0, x1], y


def test_missing_values_beat_imputation_by_zero():
    X, y = _zeros_and_missing(3000, seed=0)
    X_test, y_test = _zeros_and_missing(3000, seed=1)
    params = dict(n_estimators=40, max_depth=3, learning_rate=0.2)
    with_nan = GBC(**params).fit(X, y)
    zero = GBC(**params).fit(np.nan_to_num(X, nan=0.0), y)
    loss_nan = _log_loss(y_test, with_nan.decision_function(X_test))
    loss_zero = _log_loss(y_test, zero.decision_function(np.nan_to_num(X_test, nan=0.0)))
    assert loss_nan < loss_zero - 0.1, (loss_nan, loss_zero)
    p = with_nan.predict_proba(X_test)[:, 1]
    missing, zeros = np.isnan(X_test[:, 0]), X_test[:, 0] == 0
    assert p[missing].mean() > 0.8 and p[zeros].mean() < 0.25
    # The training scores are those of predict on the training rows (NaN included).
    assert with_nan.train_score_[-1] == pytest.approx(
        _deviance(y, with_nan.decision_function(X)), rel=1e-12)


def test_infinities_are_ordinary_values():
    """+inf is above every finite value and never "missing"."""
    rng = np.random.default_rng(3)
    n = 400
    x = rng.normal(size=n)
    y = (rng.uniform(size=n) < 0.5).astype(int)
    x[y == 1] = np.inf          # the positives are exactly the +inf rows
    x[: n // 10] = 1e30         # a large finite value is still below +inf
    y[: n // 10] = 0
    X = np.column_stack([x, rng.normal(size=n)])
    model = GBC(n_estimators=20, max_depth=1, learning_rate=0.5).fit(X, y)
    root = model.trees()[0][0]
    assert root["feature"] == 0 and root["threshold"] == np.float32(1e30)
    proba = model.predict_proba(np.array([[np.inf, 0.0], [1e30, 0.0], [np.nan, 0.0]]))[:, 1]
    assert proba[0] > 0.9 and proba[1] < 0.1
    # NaN never seen in training follows the larger child (the finite values here).
    assert (proba[2] < 0.5) == (root["missing_go_left"] == 1)
    assert model.train_score_[-1] == pytest.approx(_deviance(y, model.decision_function(X)))


def test_minus_infinity_splits_save_and_load():
    """Known kernel bug, fails until the split search is fixed: a split whose left
    side is only -inf gets the threshold -inf, which the model format rejects ("finite
    or +inf"): to_bytes fails. The threshold should be finite, e.g. -DBL_MAX
    (x <= -DBL_MAX only for -inf)."""
    rng = np.random.default_rng(4)
    n = 300
    x = rng.normal(size=n)
    y = (x > 0).astype(int)
    x[:60] = -np.inf
    y[:60] = 1
    X = np.column_stack([x, rng.normal(size=n)])
    model = GBC(n_estimators=5, max_depth=2).fit(X, y)
    assert (model.booster_.ensemble.nodes["threshold"] > -np.inf).all()
    again = GBC.from_bytes(model.to_bytes())
    np.testing.assert_array_equal(again.decision_function(X), model.decision_function(X))


def test_feature_of_only_minus_and_plus_infinity():
    """Known kernel bug, fails until the split search is fixed: a node whose split
    feature has only the values -inf and +inf gets the midpoint -inf/2 + inf/2 = NaN
    as threshold. Training then
    sends every row right (x <= NaN is false) while the predictor sends every row
    left (x > NaN is false): the split is useless and predictions disagree with the
    training scores."""
    rng = np.random.default_rng(5)
    n = 400
    y = (rng.uniform(size=n) < 0.5).astype(int)
    X = np.column_stack([np.where(y == 1, np.inf, -np.inf), rng.normal(size=n)])
    model = GBC(n_estimators=10, max_depth=1, learning_rate=0.5).fit(X, y)
    assert not np.isnan(model.booster_.ensemble.nodes["threshold"]).any()
    proba = model.predict_proba(X)[:, 1]
    assert (proba[y == 1] > 0.9).all() and (proba[y == 0] < 0.1).all()
    assert model.train_score_[-1] == pytest.approx(_deviance(y, model.decision_function(X)))


# ------------------------------------------------------------------ weights
def test_integer_weights_equal_duplicated_rows():
    """The fit on rows repeated w times: the same partition of the rows into leaves,
    the same leaf values, gains and node weights (depth 3 and min_samples_* at their
    defaults, so that row counts do not matter). The split feature and threshold may
    differ only where two splits make exactly the same partition (equal gains then
    tie-break on rounding noise), so the partitions are compared, not the splits."""
    X, y = _nan_data(n=600, seed=3)
    w = np.random.default_rng(3).integers(1, 4, size=y.shape[0])
    weighted = GBC(n_estimators=8, max_depth=3, learning_rate=0.3).fit(X, y, sample_weight=w)
    dup = GBC(n_estimators=8, max_depth=3, learning_rate=0.3).fit(
        np.repeat(X, w, axis=0), np.repeat(y, w))
    leaves_w, leaves_d = weighted.apply(X)[:, :, 0], dup.apply(X)[:, :, 0]
    n_same = 0
    for m, (a, b) in enumerate(zip(weighted.trees(), dup.trees())):
        # One leaf of one model <-> one leaf of the other (a tie may swap children).
        pairs = np.unique(np.c_[leaves_w[:, m], leaves_d[:, m]], axis=0)
        assert pairs.shape[0] == np.unique(leaves_w[:, m]).size == np.unique(leaves_d[:, m]).size
        np.testing.assert_allclose(a["value"][pairs[:, 0]], b["value"][pairs[:, 1]],
                                   rtol=1e-10, atol=1e-13)
        np.testing.assert_array_equal(a["weighted_n"][pairs[:, 0]], b["n_samples"][pairs[:, 1]])
        np.testing.assert_array_equal(a["weighted_n"][pairs[:, 0]], b["weighted_n"][pairs[:, 1]])
        np.testing.assert_allclose(np.sort(a["improvement"]), np.sort(b["improvement"]),
                                   rtol=1e-9)
        n_same += np.sum((a["feature"] == b["feature"]) & (a["threshold"] == b["threshold"]))
    assert n_same >= 0.95 * weighted.booster_.ensemble.nodes.shape[0]
    np.testing.assert_allclose(weighted.decision_function(X), dup.decision_function(X),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weighted.train_score_, dup.train_score_, rtol=1e-10)


def test_weighted_leaf_values_and_train_score_against_numpy():
    """gamma_j = sum w r / sum w p (1 - p) on each leaf of every tree, and train_score_
    the weighted log-loss of the staged raw scores (subsample=1: every row in-bag)."""
    X, y = _nan_data(n=800, seed=4)
    w = np.random.default_rng(4).uniform(0.0, 3.0, size=y.shape[0])
    w[:50] = 0.0
    model = GBC(n_estimators=10, max_depth=3, learning_rate=0.3, init="prior").fit(
        X, y, sample_weight=w)
    assert model.init_raw_ == pytest.approx(np.log(np.dot(w, y) / np.dot(w, 1 - y)))
    staged = _staged_raw(model, X)
    leaves = model.apply(X)[:, :, 0]
    for m, tree in enumerate(model.trees()):
        p = _sigmoid(staged[m])
        for j in np.flatnonzero(tree["feature"] < 0):
            rows = leaves[:, m] == j
            expected = np.sum(w[rows] * (y[rows] - p[rows])) / np.sum(w[rows] * p[rows] * (1 - p[rows]))
            assert tree["value"][j] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    expected_scores = [_deviance(y, raw, w) for raw in staged[1:]]
    np.testing.assert_allclose(model.train_score_, expected_scores, rtol=1e-12)


def test_class_weight_balanced_equals_explicit_weights():
    X, y = _nan_data(n=700, seed=6)
    n, counts = y.shape[0], np.bincount(y)
    explicit = n / (2.0 * counts[y])
    sw = np.random.default_rng(6).uniform(0.5, 1.5, size=n)
    bal = GBC(n_estimators=6, class_weight="balanced").fit(X, y, sample_weight=sw)
    ref = GBC(n_estimators=6).fit(X, y, sample_weight=sw * explicit)
    np.testing.assert_array_equal(bal.booster_.ensemble.nodes, ref.booster_.ensemble.nodes)
    np.testing.assert_array_equal(bal.train_score_, ref.train_score_)
    # A dict, on string labels, is the same as multiplying the sample weights.
    labels = np.array(["ham", "spam"])[y]
    d = GBC(n_estimators=6, class_weight={"spam": 3.0}).fit(X, labels, sample_weight=sw)
    ref = GBC(n_estimators=6).fit(X, labels, sample_weight=sw * np.where(y == 1, 3.0, 1.0))
    np.testing.assert_array_equal(d.booster_.ensemble.nodes, ref.booster_.ensemble.nodes)


def test_class_weight_applies_to_the_validation_rows():
    X, y = _nan_data(n=800, seed=7)
    Xv, yv = _nan_data(n=300, seed=8)
    wv = np.random.default_rng(8).uniform(0.5, 2.0, size=yv.shape[0])
    model = GBC(n_estimators=8, class_weight={1: 4.0}).fit(X, y, eval_set=(Xv, yv, wv))
    factors = np.where(yv == 1, 4.0, 1.0)
    staged = list(model.staged_decision_function(Xv))
    np.testing.assert_allclose(model.validation_score_,
                               [_deviance(yv, raw, wv * factors) for raw in staged], rtol=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    (dict(sample_weight=np.r_[np.inf, np.ones(199)]), "NaN or infinity"),
    (dict(sample_weight=np.r_[-1e-3, np.ones(199)]), "negative"),
    (dict(sample_weight=np.zeros(200)), "zero for every sample"),
    (dict(eval_set=(np.zeros((5, 4)), np.r_[0, 1, 0, 1, 0], -np.ones(5))), "negative"),
    (dict(eval_set=(np.zeros((5, 4)), np.r_[0, 1, 0, 1, 0], [np.nan] * 5)), "NaN"),
    (dict(eval_set=(np.zeros((5, 3)), np.r_[0, 1, 0, 1, 0])), "3 features"),
    (dict(eval_set=(np.zeros((5, 4)), np.r_[0, 1, 0, 1, 7])), "not seen in y"),
])
def test_bad_weights_and_eval_sets(kwargs, match):
    X, y = make_continuous(n_samples=200, n_features=4, seed=3)
    with pytest.raises(ValueError, match=match):
        GBC(n_estimators=2).fit(X, y, **kwargs)


@pytest.mark.parametrize("class_weight, match", [
    ({2: 1.0}, "not in y"), ({0: -1.0}, ">= 0"), ({1: np.nan}, "finite"),
    ({0: 0.0, 1: 0.0}, "zero for every sample"),
])
def test_bad_class_weights(class_weight, match):
    X, y = make_continuous(n_samples=200, n_features=4, seed=3)
    with pytest.raises(ValueError, match=match):
        GBC(n_estimators=2, class_weight=class_weight).fit(X, y)


# ------------------------------------------------------------ early stopping
def _best_and_stop(scores, tol, patience):
    """The documented rule, in plain Python: (best iteration, iterations run)."""
    best_loss, best, since = np.inf, 0, 0
    for i, v in enumerate(scores):
        if v + tol < best_loss:
            best_loss, best, since = v, i + 1, 0
        else:
            since += 1
        if since >= patience:
            return best, i + 1
    return best, len(scores)


def test_early_stopping_with_eval_set_keeps_the_best_iteration():
    X, y = _nan_data(n=1000, seed=9)
    Xv, yv = _nan_data(n=400, seed=10)
    wv = np.random.default_rng(10).uniform(0.5, 2.0, size=yv.shape[0])
    params = dict(n_estimators=300, learning_rate=0.5, max_depth=4, random_state=0)
    model = GBC(n_iter_no_change=5, tol=1e-3, **params).fit(X, y, eval_set=(Xv, yv, wv))
    scores = model.validation_score_
    best, run = _best_and_stop(scores, 1e-3, 5)
    assert run == scores.shape[0] < 300  # it stopped, where the rule says
    assert model.best_iteration_ == best == model.n_estimators_
    assert model.train_score_.shape == (best,)
    assert scores[best - 1] + 1e-3 < scores[:best - 1].min(initial=np.inf)
    # validation_score_ is the weighted loss of the staged scores ...
    staged = list(model.staged_decision_function(Xv))
    np.testing.assert_allclose(scores[:best], [_deviance(yv, s, wv) for s in staged],
                               rtol=1e-12)
    # ... and the model kept is the model of best_iteration_ trees.
    plain = GBC(**{**params, "n_estimators": best}).fit(X, y)
    np.testing.assert_array_equal(plain.booster_.ensemble.nodes, model.booster_.ensemble.nodes)
    np.testing.assert_array_equal(plain.decision_function(Xv), model.decision_function(Xv))


def test_early_stopping_tol():
    X, y = _nan_data(n=600, seed=11)
    # tol larger than any possible gain: only the first iteration counts as progress.
    model = GBC(n_estimators=50, n_iter_no_change=3, tol=10.0).fit(X, y)
    assert model.best_iteration_ == 1 == model.n_estimators_
    assert model.validation_score_.shape == (4,)
    # tol=0, never stopping: best_iteration_ is the first minimum of validation_score_.
    model = GBC(n_estimators=40, learning_rate=0.8, n_iter_no_change=100, tol=0.0,
                random_state=1).fit(X, y)
    assert model.validation_score_.shape == (40,)
    assert model.best_iteration_ == int(np.argmin(model.validation_score_)) + 1 < 40


def test_validation_fraction_is_a_weighted_stratified_hold_out():
    X, y = _nan_data(n=1000, seed=12)
    w = np.random.default_rng(12).uniform(0.5, 2.0, size=y.shape[0])
    params = dict(n_estimators=60, learning_rate=0.5, random_state=7, class_weight="balanced")
    model = GBC(n_iter_no_change=4, validation_fraction=0.2, **params).fit(
        X, y, sample_weight=w)
    train_idx, val_idx = _stratified_split(y, np.array([0, 1]), 0.2, np.random.default_rng(7))
    for cls in (0, 1):
        assert np.sum(y[val_idx] == cls) == round(0.2 * np.sum(y == cls))
    # Class weights are computed on all rows, then split with the sample weights.
    cw = (y.shape[0] / (2.0 * np.bincount(y)))[y] * w
    ref = GBC(n_iter_no_change=4, **{**params, "class_weight": None}).fit(
        X[train_idx], y[train_idx], sample_weight=cw[train_idx],
        eval_set=(X[val_idx], y[val_idx], cw[val_idx]))
    np.testing.assert_array_equal(ref.booster_.ensemble.nodes, model.booster_.ensemble.nodes)
    np.testing.assert_array_equal(ref.validation_score_, model.validation_score_)
    for tree in model.trees():
        assert tree["n_samples"][0] == train_idx.size


def test_eval_set_without_early_stopping_records_the_validation_loss():
    X, y = _nan_data(n=600, seed=13)
    Xv, yv = _nan_data(n=200, seed=14)
    model = GBC(n_estimators=12).fit(X, y, eval_set=(Xv, yv))
    assert model.n_estimators_ == 12 and model.best_iteration_ is None
    staged = list(model.staged_decision_function(Xv))
    np.testing.assert_allclose(model.validation_score_, [_deviance(yv, s) for s in staged],
                               rtol=1e-12)
    assert not hasattr(GBC(n_estimators=3).fit(X, y), "validation_score_")


def test_eval_set_dataframe_columns_are_matched_by_name():
    pd = require("pandas")
    X, y = _nan_data(n=500, seed=15)
    Xv, yv = _nan_data(n=200, seed=16)
    cols = ["a", "b", "c", "d"]
    df, dfv = pd.DataFrame(X, columns=cols), pd.DataFrame(Xv, columns=cols)
    ref = GBC(n_estimators=6).fit(df, y, eval_set=(dfv, yv))
    shuffled = GBC(n_estimators=6).fit(df, y, eval_set=(dfv[["d", "a", "c", "b"]], yv))
    np.testing.assert_array_equal(ref.validation_score_, shuffled.validation_score_)
    with pytest.raises(ValueError, match="missing feature"):
        GBC(n_estimators=2).fit(df, y, eval_set=(dfv[["a", "b", "c"]].assign(e=0.0), yv))


# -------------------------------------------------------------- warm start
@pytest.mark.parametrize("params", [
    dict(),
    dict(subsample=0.7, max_features=2),
    dict(subsample=0.8, n_iter_no_change=4, learning_rate=0.6, max_depth=4),
], ids=["plain", "subsample-max_features", "early-stopping"])
def test_warm_start_continues_exactly(params):
    X, y = _nan_data(n=800, seed=17)
    w = np.random.default_rng(17).uniform(0.5, 2.0, size=y.shape[0])
    full = GBC(n_estimators=100, random_state=3, warm_start=True, **params)
    full.fit(X, y, sample_weight=w)
    warm = GBC(n_estimators=20, random_state=3, warm_start=True, **params)
    warm.fit(X, y, sample_weight=w)
    for n in (50, 100):
        warm.set_params(n_estimators=n).fit(X, y, sample_weight=w)
    assert warm.to_bytes() == full.to_bytes()
    np.testing.assert_array_equal(warm.decision_function(X), full.decision_function(X))
    if "n_iter_no_change" in params:
        assert full.n_estimators_ < 100
        np.testing.assert_array_equal(warm.validation_score_, full.validation_score_)


def test_warm_start_with_an_unseeded_model_goes_on_with_its_own_seed():
    X, y = _nan_data(n=500, seed=18)
    model = GBC(n_estimators=10, subsample=0.5, max_features=2, warm_start=True).fit(X, y)
    twin = pickle.loads(pickle.dumps(model))
    other = copy.deepcopy(model)
    for m in (model, twin, other):
        m.set_params(n_estimators=30).fit(X, y)
    assert model.to_bytes() == twin.to_bytes() == other.to_bytes()
    # A new fit without warm start draws a new seed.
    fresh = GBC(n_estimators=30, subsample=0.5, max_features=2).fit(X, y)
    assert fresh.to_bytes() != model.to_bytes()


def test_warm_start_rules():
    X, y = _nan_data(n=400, seed=19)
    model = GBC(n_estimators=10, warm_start=True, random_state=0).fit(X, y)
    data = model.to_bytes()
    model.fit(X, y)  # same n_estimators: nothing to add
    assert model.to_bytes() == data
    with pytest.raises(ValueError, match="must be >= the 10 iterations"):
        model.set_params(n_estimators=5).fit(X, y)
    with pytest.raises(ValueError, match="features and classes"):
        model.set_params(n_estimators=20).fit(X[:, :3], y)
    # warm_start=False starts again.
    model.set_params(n_estimators=10, warm_start=False).fit(X, y)
    assert model.to_bytes() == GBC(n_estimators=10, random_state=0).fit(X, y).to_bytes()
    pd = require("pandas")
    model = GBC(n_estimators=3, warm_start=True).fit(pd.DataFrame(X, columns=list("abcd")), y)
    with pytest.raises(ValueError, match="features and classes"):
        model.set_params(n_estimators=6).fit(pd.DataFrame(X, columns=list("abce")), y)


def test_warm_start_adds_early_stopping_to_a_model_fitted_without():
    """validation_score_ always has one entry per iteration of the kept trees."""
    X, y = _nan_data(n=800, seed=20)
    Xv, yv = _nan_data(n=300, seed=21)
    model = GBC(n_estimators=60, learning_rate=0.8, max_depth=4, warm_start=True).fit(X, y)
    model.set_params(n_estimators=200, n_iter_no_change=3).fit(X, y, eval_set=(Xv, yv))
    scores = model.validation_score_
    best, run = _best_and_stop(scores, 1e-4, 3)
    assert model.best_iteration_ == best == model.n_estimators_
    staged = list(model.staged_decision_function(Xv))
    np.testing.assert_allclose(scores[:best], [_deviance(yv, s) for s in staged], rtol=1e-12)


# -------------------------------------------------- subsample, max_features
def test_subsample_draws_in_bag_rows_per_tree():
    X, y = _nan_data(n=1000, seed=22)
    w = np.random.default_rng(22).uniform(0.5, 2.0, size=y.shape[0])
    model = GBC(n_estimators=10, subsample=0.35, random_state=0).fit(X, y, sample_weight=w)
    roots = np.array([t[0] for t in model.trees()])
    assert (roots["n_samples"] == 350).all()
    assert np.unique(roots["weighted_n"]).size == 10  # a new draw for every tree
    again = GBC(n_estimators=10, subsample=0.35, random_state=0).fit(X, y, sample_weight=w)
    assert again.to_bytes() == model.to_bytes()
    other = GBC(n_estimators=10, subsample=0.35, random_state=1).fit(X, y, sample_weight=w)
    assert not np.array_equal(other.booster_.ensemble.nodes, model.booster_.ensemble.nodes)
    # The documented draw: iteration m takes int(subsample * n) rows without replacement
    # from the stream seeded by (random_state, m). Leaf values and train_score_ use the
    # in-bag rows; the out-of-bag rows are updated too (staged scores on every row).
    staged = _staged_raw(model, X)
    leaves = model.apply(X)[:, :, 0]
    for m, tree in enumerate(model.trees()):
        inbag = np.zeros(y.shape[0], dtype=bool)
        inbag[np.random.default_rng([0, m]).choice(y.shape[0], 350, replace=False)] = True
        assert tree["weighted_n"][0] == pytest.approx(w[inbag].sum(), rel=1e-12)
        p = _sigmoid(staged[m])
        for j in np.flatnonzero(tree["feature"] < 0):
            rows = inbag & (leaves[:, m] == j)
            assert tree["n_samples"][j] == rows.sum()
            expected = np.sum(w[rows] * (y[rows] - p[rows])) / np.sum(w[rows] * p[rows] * (1 - p[rows]))
            assert tree["value"][j] == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert model.train_score_[m] == pytest.approx(
            _deviance(y[inbag], staged[m + 1][inbag], w[inbag]), rel=1e-12)


def test_max_features_resolution_and_effect():
    X, y = make_continuous(n_samples=600, n_features=9, seed=23)
    fits = {mf: GBC(n_estimators=8, max_features=mf, random_state=2).fit(X, y)
            for mf in (None, 9, 3, "sqrt", "log2", 0.34, 1)}
    np.testing.assert_array_equal(fits[None].booster_.ensemble.nodes, fits[9].booster_.ensemble.nodes)
    for mf in ("sqrt", "log2", 0.34):  # all mean 3 of 9 features
        np.testing.assert_array_equal(fits[3].booster_.ensemble.nodes, fits[mf].booster_.ensemble.nodes)
    assert not np.array_equal(fits[3].booster_.ensemble.nodes, fits[None].booster_.ensemble.nodes)
    # One random feature per node: the roots do not all use the best feature.
    roots_none = {t[0]["feature"] for t in fits[None].trees()}
    roots_one = {t[0]["feature"] for t in fits[1].trees()}
    assert len(roots_one) > len(roots_none)


# ------------------------------------------------------------------- input
def _int_data(n=300, seed=24):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 40, size=(n, 5)).astype(np.float64)
    y = ((X[:, 0] - 20 + rng.normal(scale=8, size=n) + (X[:, 1] > 25) * 10) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("convert", [
    lambda X: X.astype(np.float32), lambda X: X.astype(np.float16),
    lambda X: X.astype(np.int8), lambda X: X.astype(np.int16), lambda X: X.astype(np.int32),
    lambda X: X.astype(np.int64), lambda X: X.astype(np.uint8), lambda X: X.astype(np.uint64),
    lambda X: np.asfortranarray(X), lambda X: np.repeat(np.repeat(X, 2, axis=0), 3, axis=1)[::2, ::3],
    lambda X: X.tolist(),
], ids=["f32", "f16", "i8", "i16", "i32", "i64", "u8", "u64", "F-order", "strided", "list"])
def test_numpy_dtypes_orders_and_strides_give_the_same_model(convert):
    X, y = _int_data()
    ref = GBC(n_estimators=5, random_state=0).fit(X, y)
    Xc = convert(X)
    if isinstance(Xc, np.ndarray) and Xc.dtype != np.float64:
        assert Xc.dtype != np.float64
    model = GBC(n_estimators=5, random_state=0).fit(Xc, y)
    assert model.to_bytes() == ref.to_bytes()
    np.testing.assert_array_equal(model.predict_proba(Xc), ref.predict_proba(X))


class _ArrayLike:
    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


def test_dataframes_and_array_likes():
    pd = require("pandas")
    pl = require("polars")
    X, y = _int_data()
    X[::7, 2] = np.nan
    cols = ["a", "b", "c", "d", "e"]
    ref = GBC(n_estimators=5).fit(X, y)
    # pandas with mixed dtypes and nullable columns (pd.NA is a missing value).
    pdf = pd.DataFrame(X, columns=cols).astype({"a": "int64", "b": "Int64", "c": "Float64"})
    pdf["b"] = pdf["b"].astype("Int64")
    pdf.loc[::11, "b"] = pd.NA
    Xb = X.copy()
    Xb[::11, 1] = np.nan
    ref_b = GBC(n_estimators=5).fit(Xb, y)
    m = GBC(n_estimators=5).fit(pdf, y)
    assert list(m.feature_names_in_) == cols
    np.testing.assert_array_equal(m.booster_.ensemble.nodes, ref_b.booster_.ensemble.nodes)
    np.testing.assert_array_equal(m.decision_function(pdf), ref_b.decision_function(Xb))
    # polars: nulls are missing values too; integer and float columns.
    pldf = pl.DataFrame({c: X[:, i] for i, c in enumerate(cols)}).with_columns(
        pl.col("a").cast(pl.Int32), pl.col("c").fill_nan(None))
    assert pldf["c"].null_count() > 0
    m = GBC(n_estimators=5).fit(pldf, y)
    assert list(m.feature_names_in_) == cols
    np.testing.assert_array_equal(m.booster_.ensemble.nodes, ref.booster_.ensemble.nodes)
    np.testing.assert_array_equal(m.decision_function(pldf.select(cols[::-1])),
                                  ref.decision_function(X))
    # A String column is categorical by default ("from_dtype"), refused as
    # non-numeric without categorical features.
    with pytest.raises(ValueError, match="non-numeric"):
        GBC(n_estimators=2, categorical_features=None).fit(
            pldf.with_columns(pl.lit("x").alias("s")), y)
    assert GBC(n_estimators=2).fit(pldf.with_columns(pl.lit("x").alias("s")),
                                   y).is_categorical_.tolist() == [False] * 5 + [True]
    # Anything with __array__.
    m = GBC(n_estimators=5).fit(_ArrayLike(X), y)
    assert not hasattr(m, "feature_names_in_")
    np.testing.assert_array_equal(m.booster_.ensemble.nodes, ref.booster_.ensemble.nodes)
    np.testing.assert_array_equal(m.decision_function(_ArrayLike(X)), ref.decision_function(X))


def test_strict_feature_checks_at_predict_time():
    pd = require("pandas")
    pl = require("polars")
    X, y = _int_data()
    cols = ["a", "b", "c", "d", "e"]
    model = GBC(n_estimators=5).fit(pd.DataFrame(X, columns=cols), y)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        expected = model.predict_proba(X)
    np.testing.assert_array_equal(model.predict_proba(pd.DataFrame(X, columns=cols)[cols[::-1]]),
                                  expected)
    np.testing.assert_array_equal(
        model.predict_proba(pl.DataFrame(X, schema=cols).select(["c", "a", "e", "b", "d"])),
        expected)
    with pytest.raises(ValueError, match=r"missing feature\(s\) seen at fit time: \['e'\]"):
        model.predict(pd.DataFrame(X[:, :4], columns=cols[:4]))
    # Other columns are ignored (selection by name, as the batch and Dask scoring);
    # a feature given twice is an error.
    np.testing.assert_array_equal(
        model.predict_proba(pd.DataFrame(np.c_[X[:, ::-1], -X[:, 0]], columns=cols[::-1] + ["id"])),
        expected)
    with pytest.raises(ValueError, match=r"repeated feature column\(s\): \['a'\]"):
        model.predict(pd.DataFrame(np.c_[X, X[:, 0]], columns=cols + ["a"]))
    with pytest.raises(ValueError, match="X has 4 features, but GradientBoostingClassifier "
                                         "is expecting 5"), pytest.warns(UserWarning):
        model.predict(X[:, :4])
    with pytest.raises(ValueError, match="X has 6 features"):
        GBC(n_estimators=2).fit(X, y).predict(pd.DataFrame(np.c_[X, X[:, :1]]))


# ------------------------------------------------------ threads and the GIL
def test_predict_proba_is_thread_safe_on_a_shared_model():
    X, y = make_continuous(n_samples=3000, n_features=6, seed=25)
    model = GBC(n_estimators=40, max_depth=5).fit(X, y)
    rng = np.random.default_rng(25)
    X_test = rng.normal(size=(20000, 6))
    X_test[rng.uniform(size=X_test.shape) < 0.05] = np.nan
    chunks = np.array_split(X_test, 16)
    serial_full = model.predict_proba(X_test)
    serial = [model.predict_proba(c) for c in chunks]
    with ThreadPoolExecutor(max_workers=8) as ex:
        full = list(ex.map(lambda _: model.predict_proba(X_test), range(8)))
        parts = list(ex.map(model.predict_proba, chunks))
    for out in full:
        assert np.array_equal(out, serial_full)
    for out, ref in zip(parts, serial):
        assert np.array_equal(out, ref)


def test_predict_releases_the_gil():
    X, y = make_continuous(n_samples=2000, n_features=8, seed=26)
    model = GBC(n_estimators=100, max_depth=6, n_jobs=1).fit(X, y)
    X_big = np.ascontiguousarray(np.tile(X, (10, 1)), dtype=np.float32)
    t0 = time.perf_counter()
    model.decision_function(X_big)
    reps = max(1, int(np.ceil(0.5 / max(time.perf_counter() - t0, 1e-3))))
    X_big = np.ascontiguousarray(np.tile(X_big, (reps, 1)))  # a predict of ~0.5 s

    progressed, elapsed = _other_thread_progress(lambda: model.predict_proba(X_big))
    assert elapsed > 0.2 and progressed, elapsed


def _other_thread_progress(work):
    """(progressed, seconds): progressed when a second Python thread kept going during
    the whole call (no gap longer than half of it) and counted a lot."""
    count, elapsed, gap = other_thread_progress(work)
    return count >= 20000 and gap < 0.5 * elapsed, elapsed


def test_the_gil_check_detects_a_call_holding_the_gil():
    data = np.random.default_rng(0).uniform(size=300_000).tolist()
    progressed, elapsed = _other_thread_progress(lambda: sorted(data))  # holds the GIL
    assert not progressed, elapsed


# ------------------------------------------------------------ reproducibility
def test_model_file_is_identical_for_any_n_jobs():
    """60 000 rows so that every parallel section uses its threads."""
    rng = np.random.default_rng(27)
    n = 60000
    X = rng.normal(size=(n, 6)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n) > 0).astype(int)
    X[rng.uniform(size=X.shape) < 0.1] = np.nan
    w = rng.uniform(0.2, 2.0, size=n)
    params = dict(n_estimators=6, max_depth=4, subsample=0.7, max_features=4, random_state=11,
                  n_iter_no_change=50)
    blobs = set()
    for n_jobs in (1, 2, None, 1):
        model = GBC(n_jobs=n_jobs, **params).fit(X, y, sample_weight=w)
        model.set_params(n_jobs=None)  # the parameter itself is stored in the file
        blobs.add(model.to_bytes())
        preds = {model.set_params(n_jobs=k).predict_proba(X[:30000]).tobytes()
                 for k in (1, 2, None)}
        assert len(preds) == 1
    assert len(blobs) == 1


# --------------------------------------- importances, n_estimators_, verbose
def test_feature_importances_against_numpy():
    X, y = _nan_data(n=800, seed=28)
    X = np.c_[X, np.ones(X.shape[0])]  # a constant feature is never split on
    w = np.random.default_rng(28).uniform(0.5, 2.0, size=y.shape[0])
    model = GBC(n_estimators=10, max_depth=3).fit(X, y, sample_weight=w)
    assert model.n_estimators_ == 10 and len(model.trees()) == 10
    total = np.zeros(X.shape[1])
    for tree in model.trees():
        inner = tree["feature"] >= 0
        np.add.at(total, tree["feature"][inner], tree["improvement"][inner] / tree["weighted_n"][0])
    np.testing.assert_allclose(model.feature_importances_, total / total.sum(), rtol=1e-12)
    assert model.feature_importances_.sum() == pytest.approx(1.0)
    assert model.feature_importances_[4] == 0.0
    assert np.argmax(model.feature_importances_) == 0
    # improvement is the weighted SSE decrease of the residuals: check the first root.
    root = model.trees()[0][0]
    r = y - 0.5
    x = X[:, root["feature"]].astype(np.float32)
    left = np.where(np.isnan(x), bool(root["missing_go_left"]), x <= root["threshold32"])
    assert root["improvement"] == pytest.approx(
        _proxy(np.sum(w * r * left), np.sum(w * left), np.sum(w * r), w.sum()), rel=1e-10)


def _report(text):
    """(header columns, [(iteration, [values...], remaining time)]) of a verbose
    report."""
    lines = text.strip().splitlines()
    header = re.split(r"\s{2,}", lines[0].strip())
    rows = []
    for line in lines[1:]:
        fields = line.split()
        rows.append((int(fields[0]), [float(v) for v in fields[1:-1]], fields[-1]))
    return header, rows


@pytest.mark.parametrize("verbose, subsample", [(1, 1.0), (1, 0.7), (2, 1.0)])
def test_verbose_reports_scikit_learns_columns_at_its_rate(capsys, verbose, subsample):
    """The report of scikit-learn's GradientBoostingClassifier, same header, same
    iterations (1-10, then every 10th to 100, ... with verbose=1; each with
    verbose=2), same training losses and out-of-bag improvements."""
    SkGBC = require("sklearn.ensemble").GradientBoostingClassifier
    X = make_continuous(n_samples=500, n_features=5, seed=31)[0]
    y = make_continuous(n_samples=500, n_features=5, seed=31)[1]
    params = dict(n_estimators=130, max_depth=2, subsample=subsample, verbose=verbose)
    GBC(**params, random_state=0).fit(X, y)
    ours = _report(capsys.readouterr().out)
    SkGBC(**params, init="zero", random_state=0).fit(X, y)
    theirs = _report(capsys.readouterr().out)
    assert ours[0] == theirs[0]
    assert [r[0] for r in ours[1]] == [r[0] for r in theirs[1]]
    expected = list(range(1, 11)) + list(range(20, 101, 10)) if verbose == 1 else list(
        range(1, 131))
    assert [r[0] for r in ours[1]] == expected
    for (_, mine, left), (_, sk, _) in zip(ours[1], theirs[1]):
        assert re.fullmatch(r"\d+\.\d\d[sm]", left)
        if subsample == 1.0:  # the same trees; subsampled rows are drawn differently
            np.testing.assert_allclose(mine, sk, atol=1.5e-4)
        else:
            assert len(mine) == len(sk) == 2


def test_verbose_validation_column_and_warm_start(capsys):
    X, y = _nan_data(n=400, seed=29)
    Xv, yv = _nan_data(n=200, seed=30)
    model = GBC(n_estimators=7, verbose=2, warm_start=True).fit(X, y, eval_set=(Xv, yv))
    header, rows = _report(capsys.readouterr().out)
    assert header == ["Iter", "Train Loss", "Valid Loss", "Remaining Time"]
    assert [r[0] for r in rows] == list(range(1, 8))
    for i, (_, values, _) in enumerate(rows):
        assert values == [float(f"{model.train_score_[i]:.4f}"),
                          float(f"{model.validation_score_[i]:.4f}")]
    # A warm start reports its new iterations, numbered from the first fit's.
    model.set_params(n_estimators=9)
    model.fit(X, y, eval_set=(Xv, yv))
    assert [r[0] for r in _report(capsys.readouterr().out)[1]] == [8, 9]
    GBC(n_estimators=2).fit(X, y, eval_set=(Xv, yv))
    assert capsys.readouterr().out == ""


# ----------------------------------------------------------- rounding noise
@pytest.mark.parametrize("with_nan", [True, False])
def test_nodes_whose_residuals_are_all_equal_are_not_split(with_nan):
    """Separable data with max_depth=None: once a node's rows all have the same
    residual, no split can lower the loss, and none is made (rounding noise in sums
    obtained by subtraction made the previous engine split such nodes down to single
    rows: trees of tens of thousands of nodes)."""
    rng = np.random.default_rng(0)
    n = 20000
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(int)
    if with_nan:
        X[rng.uniform(size=n) < 0.2, 1] = np.nan
    model = GBC(n_estimators=4, max_depth=None).fit(X, y)
    trees = model.trees()
    assert sum(t.shape[0] for t in trees) < 200
    # Every split node held rows of different residuals (recomputed in NumPy from the
    # staged scores before its tree).
    raw = np.zeros(n)
    leaves = model.apply(X)[:, :, 0]
    for m, tree in enumerate(trees):
        r = y - _sigmoid(raw)
        for j in np.flatnonzero(tree["feature"] >= 0):
            below = _rows_under(tree, j, leaves[:, m])
            assert np.ptp(r[below]) > 0, f"tree {m}, node {j} split rows of equal residuals"
        raw = raw + 0.1 * tree["value"][leaves[:, m]]


def _rows_under(tree, node, leaf_of_row):
    """Rows whose leaf is in the subtree of ``node``."""
    below, stack = set(), [node]
    while stack:
        j = stack.pop()
        if tree["feature"][j] < 0:
            below.add(j)
        else:
            stack += [tree["left"][j], tree["right"][j]]
    return np.isin(leaf_of_row, list(below))
