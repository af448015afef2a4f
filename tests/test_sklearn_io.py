"""scikit-learn import and export: ``gbc_core.from_sklearn`` and ``to_sklearn``.

The references are scikit-learn's own predictions: a model read from scikit-learn
predicts its probabilities, a model written to scikit-learn predicts ours, both to
1e-12 (the raw scores are the same sums in the same order; only the sigmoid or
softmax is computed by each library), and scikit-learn's tools run on the export.
"""

import re
import warnings

import numpy as np
import pytest

import gbc_core
from gbc_core import Booster, GradientBoostingClassifier

from conftest import assert_arrays_equal, require
from test_treeshap import _v

sklearn_ensemble = require("sklearn.ensemble")
sklearn_dummy = require("sklearn.dummy")


def _data(n_classes, n=600, n_features=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    score = X[:, 0] - X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=n)
    # Unbalanced classes: the prior is not 0.
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1] ** 0.7))
    return X, y


INITS = {
    "zero": lambda: "zero",
    "default-prior": lambda: None,
    "dummy-prior": lambda: sklearn_dummy.DummyClassifier(strategy="prior"),
}


def _sklearn_model(n_classes, init, **params):
    X, y = _data(n_classes)
    labels = np.array(["low", "mid", "high", "top"])[:n_classes]
    est = sklearn_ensemble.GradientBoostingClassifier(
        n_estimators=25, max_depth=3, learning_rate=0.2, subsample=0.8, random_state=0,
        init=INITS[init](), **params)
    return est.fit(X, labels[y]), X


def _close(actual, expected, what):
    assert_arrays_equal(actual, expected, what, atol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("init", sorted(INITS))
def test_from_sklearn_predicts_as_sklearn(n_classes, init):
    est, X = _sklearn_model(n_classes, init)
    model = gbc_core.from_sklearn(est)
    assert isinstance(model, GradientBoostingClassifier)
    assert list(model.classes_) == list(est.classes_)
    assert model.init == ("zero" if init == "zero" else "prior")
    assert model.n_estimators_ == est.n_estimators_
    X_new = np.random.default_rng(9).normal(size=(2000, X.shape[1])) * 1.5
    for rows in (X, X_new):
        _close(model.predict_proba(rows), est.predict_proba(rows), "probabilities")
        _close(model.decision_function(rows), est.decision_function(rows), "raw scores")
        assert (model.predict(rows) == est.predict(rows)).all()
    # Thresholds on float32 values: rows exactly at a threshold go the same way.
    thresholds = np.concatenate([t.tree_.threshold[t.tree_.feature >= 0]
                                 for t in est.estimators_.ravel()])
    at = np.tile(X[:1], (thresholds.size, 1)).astype(np.float32)
    features = np.concatenate([t.tree_.feature[t.tree_.feature >= 0]
                               for t in est.estimators_.ravel()])
    at[np.arange(thresholds.size), features] = thresholds.astype(np.float32)
    _close(model.decision_function(at), est.decision_function(at), "raw scores at thresholds")
    # The imported model saves, loads and explains like any other.
    loaded = Booster.from_bytes(model.to_bytes())
    _close(loaded.predict_proba(X), est.predict_proba(X), "probabilities after loading")
    c = model.predict_contributions(X)
    _close(c.sum(axis=-1), est.decision_function(X), "contributions")


def test_from_sklearn_keeps_feature_names_and_early_stopping():
    pd = require("pandas")
    X, y = _data(2)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d", "e"])
    est = sklearn_ensemble.GradientBoostingClassifier(
        n_estimators=200, n_iter_no_change=3, validation_fraction=0.2, random_state=0
    ).fit(df, y)
    assert est.n_estimators_ < 200
    model = gbc_core.from_sklearn(est)
    assert list(model.feature_names_in_) == ["a", "b", "c", "d", "e"]
    assert model.n_estimators_ == est.n_estimators_
    reordered = df[["e", "d", "c", "b", "a"]]
    _close(model.predict_proba(reordered), est.predict_proba(df), "probabilities")


@pytest.mark.parametrize("init", ["zero", "default-prior", "dummy-prior"])
def test_exponential_loss_from_and_to_sklearn(init):
    """The exponential loss crosses both ways: the loss is named, p = sigma(2F)."""
    est, X = _sklearn_model(2, init, loss="exponential")
    model = gbc_core.from_sklearn(est)
    assert model.booster_.loss == "exponential" and model.loss == "exponential"
    _close(model.predict_proba(X), est.predict_proba(X), "probabilities")
    loaded = Booster.from_bytes(model.to_bytes())
    assert loaded.loss == "exponential"
    back = loaded.to_sklearn()
    assert back.loss == "exponential"
    _close(back.predict_proba(X), est.predict_proba(X), "probabilities after export")


def test_constant_dummy_init_from_sklearn_and_per_row_init_to_sklearn():
    X, y = _data(2)
    est = sklearn_ensemble.GradientBoostingClassifier(
        n_estimators=5, init=sklearn_dummy.DummyClassifier(strategy="uniform")).fit(X, y)
    model = gbc_core.from_sklearn(est)
    _close(model.predict_proba(X), est.predict_proba(X), "probabilities")
    # A gbc-core model with an init estimator whose scores vary by row exports it as
    # scikit-learn's init_.
    ours = GradientBoostingClassifier(
        n_estimators=10, init=require("sklearn.linear_model").LogisticRegression()).fit(X, y)
    back = ours.to_sklearn()
    assert back.init_ is ours.booster_.init_estimator
    _close(back.predict_proba(X), ours.predict_proba(X), "probabilities")


def test_from_sklearn_errors():
    X, y = _data(2)
    init = require("sklearn.linear_model").LogisticRegression()
    est = sklearn_ensemble.GradientBoostingClassifier(n_estimators=3, init=init).fit(X, y)
    with pytest.raises(ValueError, match="LogisticRegression"):
        gbc_core.from_sklearn(est)
    with pytest.raises(ValueError, match="not fitted"):
        gbc_core.from_sklearn(sklearn_ensemble.GradientBoostingClassifier())
    with pytest.raises(TypeError, match="GradientBoostingRegressor"):
        gbc_core.from_sklearn(sklearn_ensemble.GradientBoostingRegressor(n_estimators=2).fit(X, y))


def _gbc_model(n_classes, init, nan=False, **params):
    X, y = _data(n_classes, seed=3)
    if nan:
        X = X.copy()
        X[np.random.default_rng(1).random(X.shape) < 0.1] = np.nan
    defaults = dict(n_estimators=20, max_depth=3, learning_rate=0.3, init=init,
                    subsample=0.8, random_state=1)
    defaults.update(params)
    return GradientBoostingClassifier(**defaults).fit(X, y), X


@pytest.mark.parametrize("names", [None, ["colour", "size", "x"]])
def test_to_sklearn_refuses_categorical_features(names):
    """scikit-learn's GradientBoostingClassifier has no categorical splits: a model with
    categorical features is refused, naming them (even if no tree splits on them)."""
    from gbc_core import Ensemble
    from gbc_core._common import NODE_DTYPE

    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [1, -1, -1]  # a numeric split: no tree splits a category
    nodes["left"], nodes["right"], nodes["depth"] = [1, -1, -1], [2, -1, -1], [0, 1, 1]
    nodes["threshold"], nodes["threshold32"], nodes["value"] = 0.5, 0.5, [0.0, -1.0, 1.0]
    args = dict(n_outputs=1, init_raw=[0.0], learning_rate=0.1, n_features=3)
    numeric = Booster(Ensemble(nodes, [0, 3], **args), [0, 1], feature_names=names)
    assert numeric.to_sklearn().n_estimators == 1
    booster = Booster(Ensemble(nodes, [0, 3], categorical=[True, False, True], **args),
                      [0, 1], feature_names=names)
    shown = re.escape("['colour', 'x']" if names else "[0, 2]")
    with pytest.raises(ValueError, match=f"categorical features {shown}, .*no categorical splits"):
        booster.to_sklearn()


def test_to_sklearn_of_a_model_without_trees_says_so():
    """A model file may hold no trees (it predicts F0); scikit-learn's fitted model
    has at least one iteration: a ValueError naming it (before: an IndexError from
    scikit-learn's init)."""
    from gbc_core._ensemble import Ensemble

    empty = Ensemble.from_trees([], n_outputs=1, init_raw=[0.3], learning_rate=0.1,
                                n_features=3)
    booster = gbc_core.from_bytes(Booster(empty, np.array([0, 1])).to_bytes())
    assert booster.predict_proba(np.zeros((1, 3)))[0, 1] == pytest.approx(
        1 / (1 + np.exp(-0.3)), rel=1e-15)
    with pytest.raises(ValueError, match="no trees"):
        booster.to_sklearn()


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("init", ["zero", "prior"])
def test_to_sklearn_predicts_as_gbc_core(n_classes, init):
    model, X = _gbc_model(n_classes, init)
    est = model.to_sklearn()
    assert isinstance(est, sklearn_ensemble.GradientBoostingClassifier)
    # The init is a prior; F0 = 0 is the uniform one (scikit-learn's init="zero",
    # which shap refuses, predicts the same).
    assert isinstance(est.init_, sklearn_dummy.DummyClassifier) and est.init is None
    if init == "zero":
        assert_arrays_equal(est.init_.class_prior_, np.full(n_classes, 1 / n_classes),
                            "uniform prior", atol=0)
        # Raw scores of the init: 0 (two classes: exactly; else to rounding, the same
        # for every class, so the probabilities are those of F0 = 0).
        init_raw = est._raw_predict_init(X[:5])
        assert (init_raw == init_raw[:, :1]).all() and np.abs(init_raw).max() <= 1e-15
        if n_classes == 2:
            assert (init_raw == 0).all()
    X_new = np.random.default_rng(8).normal(size=(2000, X.shape[1])) * 1.5
    for rows in (X, X_new):
        _close(est.predict_proba(rows), model.predict_proba(rows), "probabilities")
        _close(est.decision_function(rows), model.decision_function(rows), "raw scores")
        assert (est.predict(rows) == model.predict(rows)).all()
    _close(est.feature_importances_, model.feature_importances_, "feature importances")
    # The Booster exports the same model, and the export imports back to it.
    again = gbc_core.from_sklearn(model.booster_.to_sklearn())
    _close(again.predict_proba(X_new), model.predict_proba(X_new), "round trip")
    assert_arrays_equal(again.booster_.ensemble.init_raw, model.booster_.ensemble.init_raw,
                        "F0 after the round trip", atol=1e-15)


def test_missing_value_directions_are_written():
    model, X = _gbc_model(3, "prior", nan=True)
    nodes = model.booster_.ensemble.nodes
    inner = nodes["feature"] >= 0
    # Splits sending NaN each way, and rows with NaN.
    assert (nodes["missing_go_left"][inner] == 1).any()
    assert (nodes["missing_go_left"][inner] == 0).any()
    assert np.isnan(X).any(axis=1).mean() > 0.3
    est = model.to_sklearn()
    # Each tree sends every row, NaN or not, to the leaf gbc-core sends it to, and the
    # raw scores add up alike.
    X32 = X.astype(np.float32)
    leaves = model.apply(X)
    raw = np.tile(model.booster_.ensemble.init_raw, (X.shape[0], 1))
    for m in range(est.n_estimators_):
        for k in range(est.n_trees_per_iteration_):
            tree = est.estimators_[m, k]
            assert (tree.apply(X32) == leaves[:, m, k]).all()
            raw[:, k] += est.learning_rate * tree.predict(X32)
    _close(raw, model.decision_function(X), "raw scores of the trees with NaN")
    # scikit-learn's boosting refuses NaN itself (so no direction is lost).
    with pytest.raises(ValueError, match="NaN"):
        est.predict_proba(X)
    complete = X[~np.isnan(X).any(axis=1)]
    _close(est.predict_proba(complete), model.predict_proba(complete), "probabilities")
    # Read back: the same nodes, directions included.
    again = gbc_core.from_sklearn(est).booster_.ensemble.nodes
    for field in ("feature", "left", "right", "threshold", "threshold32", "missing_go_left",
                  "value", "weighted_n", "n_samples", "depth"):
        assert_arrays_equal(again[field], nodes[field], f"nodes field {field}")
    _close(gbc_core.from_sklearn(est).predict_proba(X), model.predict_proba(X),
           "probabilities with NaN after the round trip")


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("init", ["zero", "prior"])
def test_sklearn_tools_work_on_the_export(n_classes, init):
    matplotlib = require("matplotlib")  # plot_tree draws with matplotlib
    matplotlib.use("Agg")
    from sklearn.inspection import partial_dependence
    from sklearn.tree import plot_tree

    model, X = _gbc_model(n_classes, init, max_depth=2, n_estimators=6)
    est = model.to_sklearn()
    assert len(plot_tree(est.estimators_[0, 0])) > 0
    # The recursion method: the trees' cover-weighted expectation given the feature,
    # without a warning for the default init="zero" (written as a constant prior).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pd_result = partial_dependence(est, X, [0], method="recursion", grid_resolution=7)
    grid = pd_result["grid_values"][0]
    ens = model.booster_.ensemble
    K = ens.n_outputs
    expected = np.zeros((K, grid.size))
    for i, g in enumerate(grid):
        x = np.zeros(X.shape[1])
        x[0] = g
        for t, nodes in enumerate(ens.trees()):
            expected[t % K, i] += ens.learning_rate * _v(nodes, x, {0})
    # (scikit-learn's recursion leaves the init estimator's F0 out.)
    assert_arrays_equal(pd_result["average"], expected, "partial dependence", atol=1e-12)
