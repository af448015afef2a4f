"""Three or more classes: the multinomial model, against scikit-learn and NumPy.

scikit-learn's GradientBoostingClassifier trains the same multinomial model (one
tree per class and iteration on r_k = [y = k] - softmax(F)_k, leaf values
(K - 1)/K sum w r / sum w p (1 - p)). With continuous sample weights, two splits have
equal gains only when they cut a node's rows the same way (on different features):
any of them gives the same model on the training rows, and scikit-learn's random
feature order picks one. So the two models must agree to rounding on the training
rows; and with leaves of 10 rows or more, where two features cutting a node's rows
the same way does not happen on these continuous data, on new rows too.
"""

import numpy as np
import pytest

import gbc_core
from gbc_core import GradientBoostingClassifier as GBC
from gbc_core._classifier import _stratified_split

from conftest import assert_arrays_equal, assert_nodes_equal, other_thread_progress, require

sklearn_ensemble = require("sklearn.ensemble")
sklearn_metrics = require("sklearn.metrics")


def _data(n_classes, n=600, d=8, seed=0, labels=None):
    """Rows whose class depends on a few features, and continuous weights."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32).astype(np.float64)
    logits = np.stack([X[:, k % d] - 0.7 * X[:, (k + 1) % d] * (X[:, (k + 2) % d] > 0)
                       for k in range(n_classes)])
    codes = np.argmax(logits + rng.gumbel(size=logits.shape), axis=0)
    w = rng.uniform(0.3, 3.0, size=n)
    y = codes if labels is None else np.asarray(labels)[codes]
    return X, y, w


def _softmax(raw):
    e = np.exp(raw - raw.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _log_loss(codes, raw, w=None):
    p = _softmax(raw)[np.arange(codes.shape[0]), codes]
    return float(np.average(-np.log(p), weights=w))


# ------------------------------------------------------ the same model as sklearn
@pytest.mark.parametrize("n_classes", [3, 5, 10])
@pytest.mark.parametrize("max_depth", [1, 2, 3, 4])
@pytest.mark.parametrize("init", ["zero", "prior"])
def test_same_model_as_sklearn(n_classes, max_depth, init):
    labels = [f"class-{k}" for k in range(n_classes)] if n_classes == 5 else None
    X, y, w = _data(n_classes, seed=n_classes + max_depth, labels=labels)
    X_new = np.random.default_rng(1).normal(size=(300, X.shape[1]))
    for min_samples_leaf in (1, 10):
        params = dict(n_estimators=12, max_depth=max_depth, learning_rate=0.3,
                      min_samples_leaf=min_samples_leaf)
        ours = GBC(init=init, **params).fit(X, y, sample_weight=w)
        # scikit-learn's default init is the (weighted) prior.
        ref = sklearn_ensemble.GradientBoostingClassifier(
            init="zero" if init == "zero" else None, random_state=0, **params)
        ref.fit(X, y, sample_weight=w)
        assert ours.classes_.tolist() == ref.classes_.tolist()
        assert ours.n_trees_per_iteration_ == ref.n_trees_per_iteration_ == n_classes
        # The multinomial train_score_ is the log-loss in both (no factor 2).
        np.testing.assert_allclose(ours.train_score_, ref.train_score_, rtol=1e-9)
        for Z in ((X, X_new) if min_samples_leaf == 10 else (X,)):
            assert np.abs(ours.predict_proba(Z) - ref.predict_proba(Z)).max() < 1e-9
            np.testing.assert_allclose(ours.decision_function(Z), ref.decision_function(Z),
                                       rtol=0, atol=1e-9)
            assert ours.predict(Z).tolist() == ref.predict(Z).tolist()
    np.testing.assert_allclose(ours.feature_importances_, ref.feature_importances_,
                               rtol=1e-7, atol=1e-12)
    if init == "prior":
        p = np.bincount(np.searchsorted(ours.classes_, y), weights=w) / w.sum()
        np.testing.assert_allclose(ours.init_raw_, np.log(p) - np.log(p).mean(), rtol=1e-12)


def test_leaf_values_and_updates_against_numpy():
    """Every tree of a 4-class fit: leaf values (K - 1)/K sum w r / sum w p (1 - p)
    from the probabilities at the start of the iteration, F_k += eta gamma."""
    X, y, w = _data(4, n=400, seed=3)
    model = GBC(n_estimators=5, max_depth=2, learning_rate=0.5).fit(X, y, sample_weight=w)
    leaves = model.apply(X)
    raw = np.zeros((400, 4))
    Y = np.eye(4)[y]
    for m in range(5):
        p = _softmax(raw)
        for k in range(4):
            tree = model.booster_.ensemble.tree_nodes(m, k)
            r = Y[:, k] - p[:, k]
            for j in np.flatnonzero(tree["feature"] < 0):
                rows = leaves[:, m, k] == j
                expected = 0.75 * np.sum(w[rows] * r[rows]) / np.sum(
                    w[rows] * p[rows, k] * (1 - p[rows, k]))
                assert tree["value"][j] == pytest.approx(expected, rel=1e-10, abs=1e-14)
            raw[:, k] += 0.5 * tree["value"][leaves[:, m, k]]
        assert model.train_score_[m] == pytest.approx(_log_loss(y, raw, w), rel=1e-12)
    np.testing.assert_allclose(model.decision_function(X), raw, rtol=0, atol=1e-12)


# -------------------------------------------------------- every feature for K
def test_class_weight_balanced_equals_explicit_weights():
    X, y, _ = _data(3, n=500, seed=4)
    counts = np.bincount(y)
    balanced = GBC(n_estimators=5, class_weight="balanced").fit(X, y)
    explicit = GBC(n_estimators=5).fit(X, y, sample_weight=500 / (3 * counts[y]))
    np.testing.assert_array_equal(balanced.booster_.ensemble.nodes["value"],
                                  explicit.booster_.ensemble.nodes["value"])
    as_dict = GBC(n_estimators=5, class_weight={0: 2.0, 2: 0.5}).fit(X, y)
    times = GBC(n_estimators=5).fit(X, y, sample_weight=np.array([2.0, 1.0, 0.5])[y])
    np.testing.assert_array_equal(as_dict.decision_function(X), times.decision_function(X))


def test_missing_values_learn_their_direction():
    """Rows missing x0 are mostly class 2: their probability of class 2 is high, and
    the training rows' predictions reproduce the training loss (the learned
    directions are used at predict time)."""
    rng = np.random.default_rng(5)
    X, y, w = _data(3, n=900, seed=5)
    miss = rng.random(900) < 0.3
    y = np.where(miss & (rng.random(900) < 0.9), 2, y)
    X[miss, 0] = np.nan
    X[rng.random(X.shape) < 0.05] = np.nan
    model = GBC(n_estimators=20, max_depth=3).fit(X, y, sample_weight=w)
    raw = model.decision_function(X)
    assert model.train_score_[-1] == pytest.approx(_log_loss(y, raw, w), rel=1e-12)
    proba = model.predict_proba(X)
    assert proba[miss, 2].mean() > 0.75 > proba[~miss, 2].mean()
    nodes = model.booster_.ensemble.nodes
    inner = nodes["feature"] >= 0
    assert set(nodes["missing_go_left"][inner & (nodes["feature"] == 0)].tolist()) == {0, 1}


def test_early_stopping_on_eval_set_and_hold_out():
    X, y, w = _data(4, n=1200, seed=6)
    X_val, y_val, w_val = _data(4, n=400, seed=7)
    model = GBC(n_estimators=200, learning_rate=0.8, max_depth=3, n_iter_no_change=4)
    model.fit(X, y, sample_weight=w, eval_set=(X_val, y_val, w_val))
    full = GBC(n_estimators=len(model.validation_score_), learning_rate=0.8, max_depth=3)
    full.fit(X, y, sample_weight=w)
    # validation_score_: the weighted log-loss of the validation rows after each
    # iteration run (recomputed from the full model's staged probabilities).
    staged = [sklearn_metrics.log_loss(y_val, p, sample_weight=w_val, labels=[0, 1, 2, 3])
              for p in full.staged_predict_proba(X_val)]
    np.testing.assert_allclose(model.validation_score_, staged, rtol=1e-9)
    best = model.best_iteration_
    assert best == 1 + int(np.argmin(staged)) or staged[best - 1] - min(staged) <= 1e-4
    assert len(staged) - best == 4 and model.n_estimators_ == best < 200
    np.testing.assert_array_equal(model.predict_proba(X), list(full.staged_predict_proba(X))[
        best - 1])
    # Without eval_set: a stratified hold-out of validation_fraction of each class.
    held = GBC(n_estimators=200, learning_rate=0.8, n_iter_no_change=4, random_state=0)
    held.fit(X, y)
    assert held.best_iteration_ is not None and held.n_estimators_ < 200


def test_stratified_hold_out_of_each_class():
    y = np.repeat(np.arange(5), [200, 50, 20, 7, 2])
    train, val = _stratified_split(y, np.arange(5), 0.2, np.random.default_rng(0))
    assert np.bincount(y[val], minlength=5).tolist() == [40, 10, 4, 1, 1]
    assert sorted(np.concatenate([train, val]).tolist()) == list(range(y.shape[0]))
    with pytest.raises(ValueError, match=r"least populated classes in y have only 1 member"
                                         r".* Classes with too few members are: \[5\.0\] "
                                         r"\(class codes; the labels \[5\]\)"):
        _stratified_split(np.r_[y, 5], np.arange(6), 0.2, np.random.default_rng(0))
    X = np.random.default_rng(0).normal(size=(y.shape[0] + 1, 3))
    with pytest.raises(ValueError, match="least populated classes"):
        GBC(n_estimators=3, n_iter_no_change=2).fit(X, np.r_[y, 5])


@pytest.mark.parametrize("random_state", [0, None])
def test_warm_start_is_bit_identical_to_one_fit(random_state):
    X, y, w = _data(3, n=500, seed=8)
    params = dict(max_depth=3, subsample=0.7, max_features=3, random_state=random_state)
    model = GBC(n_estimators=6, warm_start=True, **params).fit(X, y, sample_weight=w)
    model.set_params(n_estimators=14).fit(X, y, sample_weight=w)
    # An unseeded model draws its seed once and goes on with it; an integer
    # random_state is the seed itself.
    seed = model._seed if random_state is None else random_state
    once = GBC(n_estimators=14, **dict(params, random_state=seed)).fit(X, y, sample_weight=w)
    assert_nodes_equal(model.booster_.ensemble.nodes, once.booster_.ensemble.nodes,
                       "warm-started trees vs one fit")
    np.testing.assert_array_equal(model.train_score_, once.train_score_)
    np.testing.assert_array_equal(model.oob_scores_, once.oob_scores_)


def test_subsample_out_of_bag_scores_against_numpy():
    """oob_scores_[m]: the weighted log-loss of the rows left out of iteration m,
    after it; oob_improvement_[m]: its decrease over the iteration (scikit-learn's
    definitions, on the log-loss scale of train_score_)."""
    X, y, w = _data(3, n=600, seed=9)
    model = GBC(n_estimators=8, subsample=0.6, random_state=3).fit(X, y, sample_weight=w)
    staged = [np.zeros((600, 3))] + list(model.staged_decision_function(X))
    for m in range(8):
        inbag = np.zeros(600, dtype=bool)
        inbag[np.random.default_rng([3, m]).choice(600, 360, replace=False)] = True
        out = ~inbag
        after = _log_loss(y[out], staged[m + 1][out], w[out])
        before = _log_loss(y[out], staged[m][out], w[out])
        assert model.oob_scores_[m] == pytest.approx(after, rel=1e-12)
        previous = before if m == 0 else model.oob_scores_[m - 1]
        assert model.oob_improvement_[m] == pytest.approx(previous - after, rel=1e-9, abs=1e-15)
        assert model.train_score_[m] == pytest.approx(
            _log_loss(y[inbag], staged[m + 1][inbag], w[inbag]), rel=1e-12)
    assert model.oob_score_ == model.oob_scores_[-1]
    assert not hasattr(GBC(n_estimators=2).fit(X, y), "oob_scores_")


def test_max_features_draws_per_tree():
    X, y, _ = _data(3, n=400, d=9, seed=10)
    model = GBC(n_estimators=4, max_features="sqrt", random_state=0).fit(X, y)
    assert model.max_features_ == 3
    other = GBC(n_estimators=4, max_features="sqrt", random_state=1).fit(X, y)
    assert not np.array_equal(model.decision_function(X), other.decision_function(X))
    again = GBC(n_estimators=4, max_features="sqrt", random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.decision_function(X), again.decision_function(X))


def test_staged_predictions_apply_and_estimators():
    X, y, _ = _data(4, n=300, seed=11, labels=["a", "b", "c", "d"])
    model = GBC(n_estimators=5, max_depth=2).fit(X, y)
    stages = list(model.staged_decision_function(X))
    assert len(stages) == 5 and stages[-1].shape == (300, 4)
    np.testing.assert_array_equal(stages[-1], model.decision_function(X))
    for raw, proba, labels in zip(stages, model.staged_predict_proba(X),
                                  model.staged_predict(X)):
        np.testing.assert_allclose(proba, _softmax(raw), rtol=1e-12)
        assert labels.tolist() == model.classes_[np.argmax(raw, axis=1)].tolist()
    np.testing.assert_array_equal(model.predict(X), labels)
    log_proba = model.predict_log_proba(X)
    np.testing.assert_allclose(np.exp(log_proba), model.predict_proba(X), rtol=1e-12)
    leaves = model.apply(X)
    assert leaves.shape == (300, 5, 4)
    assert model.estimators_.shape == (5, 4)
    raw = np.tile(model.init_raw_, (300, 1))
    for m in range(5):
        for k in range(4):
            tree = model.estimators_[m, k]
            assert isinstance(tree, gbc_core.Tree) and tree.max_depth <= 2
            raw[:, k] += 0.1 * tree.value[leaves[:, m, k]]
    np.testing.assert_allclose(raw, model.decision_function(X), rtol=0, atol=1e-12)


def test_results_do_not_depend_on_n_jobs():
    """Large enough for the parallel scan (rows x features >= 1e6) and update."""
    X, y, _ = _data(3, n=40000, d=26, seed=12)
    fits = [GBC(n_estimators=2, max_depth=3, n_jobs=j).fit(X, y) for j in (1, 2)]
    assert_nodes_equal(fits[0].booster_.ensemble.nodes, fits[1].booster_.ensemble.nodes,
                       "trees, n_jobs=1 vs 2")
    big = np.tile(X, (6, 1))
    assert_arrays_equal(fits[0].predict_proba(big), fits[1].predict_proba(big),
                        "predict_proba, n_jobs=1 vs 2")


def test_predict_releases_the_gil_and_is_thread_safe():
    X, y, _ = _data(5, n=2000, seed=13)
    model = GBC(n_estimators=60, max_depth=3).fit(X, y)
    # 1.2M rows: a call of about half a second, so that a busy machine's scheduling
    # gaps stay far below half of it (a call holding the GIL stops the counter for
    # all of it).
    big = np.tile(X, (600, 1))
    expected = model.predict_proba(big)
    count, seconds, gap = other_thread_progress(lambda: model.predict_proba(big))
    assert count > 0 and gap < 0.5 * seconds
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: model.predict_proba(big[:20000]), range(8)))
    for r in results:
        np.testing.assert_array_equal(r, expected[:20000])


# ------------------------------------------------------------ scikit-learn's rules
def test_a_class_with_zero_weight_only_is_trimmed_as_in_sklearn():
    X, y, _ = _data(3, n=300, seed=14)
    w = np.where(y == 0, 0.0, 1.0)
    GBC(n_estimators=3).fit(X, y, sample_weight=w)  # two classes keep weight: fits
    w = np.where(y == 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="y contains 1 class after sample_weight trimmed "
                                         "classes with zero weights"):
        GBC(n_estimators=3).fit(X, y, sample_weight=w)
    with pytest.raises(ValueError, match="y contains 1 class after sample_weight trimmed"):
        sklearn_ensemble.GradientBoostingClassifier(n_estimators=3).fit(X, y, sample_weight=w)


def test_predict_at_a_raw_score_of_zero_is_the_positive_class_as_in_sklearn():
    """Leaves whose residuals cancel: gamma = 0, F = 0, p = 0.5 exactly."""
    X = np.array([[0.0], [0.0], [1.0], [1.0]])
    y = np.array([0, 1, 0, 1])
    ours = GBC(n_estimators=2, max_depth=1).fit(X, y)
    ref = sklearn_ensemble.GradientBoostingClassifier(n_estimators=2, max_depth=1,
                                                      init="zero").fit(X, y)
    np.testing.assert_array_equal(ours.decision_function(X), 0.0)
    np.testing.assert_array_equal(ref.decision_function(X), 0.0)
    assert ours.predict(X).tolist() == ref.predict(X).tolist() == [1, 1, 1, 1]
    assert [s.tolist() for s in ours.staged_predict(X)] == [
        s.tolist() for s in ref.staged_predict(X)]


def test_staged_predict_matches_sklearn_binary_and_multiclass():
    for n_classes in (2, 4):
        X, y, w = _data(n_classes, n=400, seed=15)
        params = dict(n_estimators=6, max_depth=2)
        ours = GBC(**params).fit(X, y, sample_weight=w)
        ref = sklearn_ensemble.GradientBoostingClassifier(init="zero", random_state=0,
                                                          **params).fit(X, y, sample_weight=w)
        for a, b in zip(ours.staged_predict(X), ref.staged_predict(X)):
            assert a.tolist() == b.tolist()
        for a, b in zip(ours.staged_predict_proba(X), ref.staged_predict_proba(X)):
            assert np.abs(a - b).max() < 1e-9
