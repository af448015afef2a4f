"""The exponential loss and ``init`` estimators, against scikit-learn.

scikit-learn's ``GradientBoostingClassifier(loss="exponential")`` and its ``init``
estimators (``LogisticRegression``, ``DummyClassifier``) are the reference: on
continuous data with continuous weights (no tied split gains), the same trees, so
the probabilities of the training rows agree to 1e-9 (thresholds between training
values are placed differently, so unseen rows may fall on another side), as do
``train_score_`` (the exponential loss itself: scikit-learn's scale) and every
staged prediction.
"""

import json
import pickle

import numpy as np
import pytest

import gbc_core
from gbc_core import GradientBoostingClassifier as GBC
from gbc_core import ModelFormatError

from conftest import cli, make_continuous, ok, require, run_main

sklearn_ensemble = require("sklearn.ensemble")
linear_model = require("sklearn.linear_model")
dummy = require("sklearn.dummy")

TOL = 1e-9


def _data(n_classes=2, n=600, seed=3):
    X, y = make_continuous(n_samples=n, n_features=5, seed=seed)
    if n_classes == 3:
        y = y + (X[:, 4] > 0.4)
    w = np.random.default_rng(seed).uniform(0.2, 3.0, size=n)
    return X, y, w


def _sklearn(**params):
    return sklearn_ensemble.GradientBoostingClassifier(random_state=0, **params)


def _assert_same_model(ours, ref, X):
    """Probabilities, raw scores, labels and every stage of the training rows
    ``X``; ``train_score_`` in scikit-learn's scale."""
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), rtol=0, atol=TOL)
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X),
                               rtol=TOL, atol=TOL)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))
    np.testing.assert_allclose(ours.train_score_, ref.train_score_, rtol=TOL)
    stages = list(zip(ours.staged_predict_proba(X), ref.staged_predict_proba(X)))
    assert len(stages) == ref.n_estimators_
    for mine, theirs in stages:
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=TOL)
    for mine, theirs in zip(ours.staged_predict(X), ref.staged_predict(X)):
        np.testing.assert_array_equal(mine, theirs)


# ------------------------------------------------------------ exponential loss
@pytest.mark.parametrize("init", ["zero", "prior"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("max_depth", [1, 3])
def test_exponential_loss_is_sklearns(init, weighted, max_depth):
    X, y, w = _data()
    w = w if weighted else None
    params = dict(loss="exponential", n_estimators=40, max_depth=max_depth,
                  learning_rate=0.3)
    ours = GBC(init=init, **params).fit(X, y, sample_weight=w)
    ref = _sklearn(init=None if init == "prior" else init, **params).fit(X, y, sample_weight=w)
    _assert_same_model(ours, ref, X)
    assert ours.booster_.loss == "exponential"
    # p = sigma(2F), scikit-learn's decision rule F >= 0.
    raw = ours.decision_function(X)
    np.testing.assert_allclose(ours.predict_proba(X)[:, 1], 1 / (1 + np.exp(-2 * raw)),
                               rtol=1e-15)
    np.testing.assert_allclose(ours.predict_log_proba(X), np.log(ours.predict_proba(X)),
                               rtol=1e-12, atol=1e-15)


def test_exponential_prior_is_half_the_log_odds():
    X, y, w = _data()
    ours = GBC(loss="exponential", init="prior", n_estimators=1).fit(X, y, sample_weight=w)
    p = w[y == 1].sum() / w.sum()
    assert ours.init_raw_ == pytest.approx(0.5 * np.log(p / (1 - p)), rel=1e-14)


def test_exponential_scores_are_the_exponential_loss():
    """train_score_, oob_scores_ and validation_score_ are the weighted mean of
    e^{-(2y-1)F} (scikit-learn's units for this loss), against a NumPy twin."""
    X, y, w = _data(n=900)
    Xv, yv, wv = _data(n=300, seed=8)
    model = GBC(loss="exponential", n_estimators=15, subsample=0.7, random_state=2,
                learning_rate=0.5).fit(X, y, sample_weight=w, eval_set=(Xv, yv, wv))

    def twin(y_, raw, w_):
        return np.average(np.exp(-(2 * y_ - 1) * raw), weights=w_)

    for i, raw in enumerate(model.staged_decision_function(Xv)):
        assert model.validation_score_[i] == pytest.approx(twin(yv, raw, wv), rel=1e-12)
    final = model.decision_function(X)
    # The last iteration's in-bag and out-of-bag losses are weighted means of two
    # parts of the training rows: the loss of all rows lies between them.
    assert model.train_score_.shape == model.oob_scores_.shape == (15,)
    total = twin(y, final, w)
    assert min(model.train_score_[-1], model.oob_scores_[-1]) <= total + 1e-12
    assert max(model.train_score_[-1], model.oob_scores_[-1]) >= total - 1e-12
    no_bag = GBC(loss="exponential", n_estimators=15, learning_rate=0.5).fit(
        X, y, sample_weight=w)
    for i, raw in enumerate(no_bag.staged_decision_function(X)):
        assert no_bag.train_score_[i] == pytest.approx(twin(y, raw, w), rel=1e-12)


def test_exponential_loss_with_three_classes_is_sklearns_error():
    X, y, _ = _data(n_classes=3)
    with pytest.raises(ValueError) as ref:
        _sklearn(loss="exponential").fit(X, y)
    with pytest.raises(ValueError) as ours:
        GBC(loss="exponential").fit(X, y)
    assert str(ours.value) == str(ref.value)
    assert "loss='exponential' is only suitable for a binary classification" in str(ours.value)


def test_exponential_loss_overflow_is_a_clear_error():
    """e^|F| beyond float64 (|F| > 709) would give infinite residuals: an error that
    says what to change, never a model of NaN."""
    X, y, _ = _data()  # noisy labels: stumps leave rows on the wrong side
    with pytest.raises(ValueError, match="exponential loss overflows.*learning_rate"):
        GBC(loss="exponential", learning_rate=1000.0, n_estimators=30, max_depth=1).fit(X, y)


def test_exponential_model_round_trips(tmp_path):
    X, y, w = _data()
    model = GBC(loss="exponential", init="prior", n_estimators=20).fit(X, y, sample_weight=w)
    path = tmp_path / "exp.gbc"
    model.save(path)
    assert gbc_core.read_model_header(path)["loss"] == "exponential"
    for loaded in (gbc_core.load(path), GBC.load(path), gbc_core.from_bytes(model.to_bytes()),
                   pickle.loads(pickle.dumps(model))):
        assert loaded.loss == "exponential"
        np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
        np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    # A warm start goes on with the loss of the fitted trees, and refuses another.
    warm = GBC.load(path).set_params(warm_start=True, n_estimators=30).fit(
        X, y, sample_weight=w)
    once = GBC(loss="exponential", init="prior", n_estimators=30).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(warm.predict_proba(X), once.predict_proba(X))
    with pytest.raises(ValueError, match="warm_start: loss='log_loss' differs"):
        warm.set_params(loss="log_loss", n_estimators=40).fit(X, y, sample_weight=w)


def test_cli_trains_predicts_and_evaluates_the_exponential_loss(tmp_path, capsys, monkeypatch):
    pd = require("pandas")
    X, y, _ = _data(n=800)
    names = [f"x{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names).assign(target=y)
    frame.to_csv(tmp_path / "train.csv", index=False)
    ok(cli("train", "train.csv", "--target", "target", "-o", "model.gbc", "--loss",
           "exponential", "--init", "prior", "--n-estimators", "25", cwd=tmp_path))
    model = gbc_core.load(tmp_path / "model.gbc")
    ref = GBC(loss="exponential", init="prior", n_estimators=25).fit(frame[names], y)
    assert model.loss == "exponential" and model.params["loss"] == "exponential"
    np.testing.assert_array_equal(model.predict_proba(frame[names]),
                                  ref.predict_proba(frame[names]))
    ok(cli("predict", "model.gbc", "train.csv", "-o", "scores.csv", cwd=tmp_path))
    scores = pd.read_csv(tmp_path / "scores.csv")
    np.testing.assert_allclose(scores["proba"], ref.predict_proba(frame[names])[:, 1],
                               rtol=1e-15)
    rc, out, _ = run_main(capsys, monkeypatch, tmp_path, "evaluate", "model.gbc",
                          "train.csv", "--target", "target", "--json")
    assert rc == 0
    res = json.loads(out)
    p = ref.predict_proba(frame[names])[:, 1]
    # The log-loss of the model's probabilities sigma(2F), not of sigma(F).
    assert res["log_loss"] == pytest.approx(
        -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)), rel=1e-12)
    assert res["accuracy"] == pytest.approx(np.mean(ref.predict(frame[names]) == y))
    text = ok(cli("inspect", "model.gbc", cwd=tmp_path)).stdout
    assert "loss       exponential (p = sigma(2F))" in text
    bad = cli("train", "train.csv", "--target", "target", "-o", "m2.gbc", "--loss", "hinge",
              cwd=tmp_path)
    assert bad.returncode != 0 and "loss must be 'log_loss' or 'exponential'" in bad.stderr


# ------------------------------------------------------------ init estimators
@pytest.mark.parametrize("n_classes, loss", [(2, "log_loss"), (3, "log_loss"),
                                             (2, "exponential")])
@pytest.mark.parametrize("weighted", [False, True])
def test_logistic_regression_init_is_sklearns(n_classes, weighted, loss):
    X, y, w = _data(n_classes)
    w = w if weighted else None
    init = linear_model.LogisticRegression()
    params = dict(loss=loss, n_estimators=25, max_depth=3, learning_rate=0.3)
    ours = GBC(init=init, **params).fit(X, y, sample_weight=w)
    # The init estimator is a fitted clone, kept with the model; the parameter is
    # left unfitted (scikit-learn fits the parameter's object itself).
    fitted = ours.booster_.init_estimator
    assert fitted is not init and not hasattr(init, "coef_")
    ref = _sklearn(init=init, **params).fit(X, y, sample_weight=w)
    _assert_same_model(ours, ref, X)
    np.testing.assert_array_equal(fitted.coef_, ref.init_.coef_)
    np.testing.assert_array_equal(ours.init_raw_, np.zeros(ours.n_trees_per_iteration_))


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("strategy", ["prior", "uniform", "most_frequent"])
def test_dummy_init_is_a_stored_constant(n_classes, strategy, tmp_path):
    X, y, w = _data(n_classes)
    init = dummy.DummyClassifier(strategy=strategy)
    params = dict(n_estimators=20, max_depth=2)
    ours = GBC(init=init, **params).fit(X, y, sample_weight=w)
    ref = _sklearn(init=init, **params).fit(X, y, sample_weight=w)
    _assert_same_model(ours, ref, X)
    assert ours.booster_.init_estimator is None  # a constant: the model's F0
    first = ref._raw_predict_init(X[:1])[0]
    np.testing.assert_allclose(np.atleast_1d(ours.init_raw_), first, rtol=1e-14, atol=1e-15)
    # It saves (the init parameter itself loads as None, with a warning).
    path = tmp_path / "m.gbc"
    with pytest.warns(UserWarning, match="init=DummyClassifier"):
        ours.save(path)
    loaded = gbc_core.load(path)
    np.testing.assert_array_equal(loaded.predict_proba(X), ours.predict_proba(X))


def test_dummy_prior_init_is_the_prior():
    X, y, w = _data(3)
    a = GBC(init=dummy.DummyClassifier(), n_estimators=5).fit(X, y, sample_weight=w)
    b = GBC(init="prior", n_estimators=5).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(a.init_raw_, b.init_raw_, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0, atol=1e-12)


def test_an_init_whose_scores_vary_by_row_is_not_saved_but_pickles(tmp_path):
    X, y, w = _data()
    model = GBC(init=linear_model.LogisticRegression(), n_estimators=10).fit(
        X, y, sample_weight=w)
    for write in (lambda: model.save(tmp_path / "m.gbc"), model.to_bytes,
                  model.booster_.to_bytes):
        with pytest.raises(ValueError, match="init estimator \\(LogisticRegression\\).*"
                                             "init='prior'"):
            write()
    assert not (tmp_path / "m.gbc").exists()
    with pytest.raises(ValueError, match="predict_contributions: the init estimator "
                                         "\\(LogisticRegression\\)"):
        model.predict_contributions(X[:5])
    estimator = pickle.loads(pickle.dumps(model))
    booster = pickle.loads(pickle.dumps(model.booster_))
    assert estimator.booster_.init_estimator is not None
    assert booster.init_estimator is not None
    for copy in (estimator, booster):
        np.testing.assert_array_equal(copy.predict_proba(X), model.predict_proba(X))


def test_warm_start_with_an_init_estimator():
    """A warm start keeps the fitted init estimator (not refitted, as scikit-learn)
    and gives the model of a single fit."""
    X, y, w = _data(3)
    init = linear_model.LogisticRegression()
    warm = GBC(init=init, n_estimators=8, warm_start=True).fit(X, y, sample_weight=w)
    first = warm.booster_.init_estimator
    warm.set_params(n_estimators=16).fit(X, y, sample_weight=w)
    assert warm.booster_.init_estimator is first
    once = GBC(init=init, n_estimators=16).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(warm.predict_proba(X), once.predict_proba(X))
    ref = _sklearn(init=init, n_estimators=8, warm_start=True).fit(X, y, sample_weight=w)
    ref.set_params(n_estimators=16).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(warm.predict_proba(X), ref.predict_proba(X), rtol=0, atol=TOL)


def test_init_estimator_scores_the_validation_rows():
    """Early stopping starts the validation rows from the init estimator's scores."""
    X, y, w = _data()
    Xv, yv, wv = _data(n=300, seed=9)
    model = GBC(init=linear_model.LogisticRegression(), n_estimators=12).fit(
        X, y, sample_weight=w, eval_set=(Xv, yv, wv))
    for i, raw in enumerate(model.staged_decision_function(Xv)):
        p = 1 / (1 + np.exp(-raw))
        twin = -np.average(yv * np.log(p) + (1 - yv) * np.log(1 - p), weights=wv)
        # scikit-learn's units: the binomial deviance, twice the log-loss.
        assert model.validation_score_[i] == pytest.approx(2 * twin, rel=1e-10)


def test_init_estimator_errors():
    X, y, w = _data()
    neighbors = require("sklearn.neighbors")
    # scikit-learn's message for an estimator that takes no sample weights.
    init = neighbors.KNeighborsClassifier()
    with pytest.raises(ValueError) as ref:
        _sklearn(init=init).fit(X, y, sample_weight=w)
    with pytest.raises(ValueError) as ours:
        GBC(init=init).fit(X, y, sample_weight=w)
    assert str(ours.value) == str(ref.value) == (
        "The initial estimator KNeighborsClassifier does not support sample weights.")
    GBC(init=init, n_estimators=2).fit(X, y)  # without weights it is fitted
    # Not an estimator with fit and predict_proba; an unknown string.
    for bad in ["ones", linear_model.LinearRegression(), 3]:
        with pytest.raises(ValueError, match="The 'init' parameter of GradientBoosting"
                                             "Classifier must be a str among"):
            GBC(init=bad).fit(X, y)

    class OneColumn:
        def fit(self, X, y, sample_weight=None):
            return self

        def predict_proba(self, X):
            return np.full((X.shape[0], 1), 0.5)

    with pytest.raises(ValueError, match="init: OneColumn.predict_proba gave shape "
                                         r"\(600, 1\), expected \(600, 2\)"):
        GBC(init=OneColumn()).fit(X, y)


def test_a_loaded_file_never_holds_an_init_estimator():
    """The format has no place for an estimator: the reader gives a complete model."""
    X, y, w = _data()
    model = GBC(init=dummy.DummyClassifier(), n_estimators=3).fit(X, y)
    with pytest.warns(UserWarning):
        blob = model.to_bytes()
    loaded = gbc_core.from_bytes(blob)
    assert loaded.init_estimator is None and loaded.params["init"] is None
    with pytest.raises(ModelFormatError):
        gbc_core.from_bytes(blob[:-1])


def test_exponential_loss_and_init_scores_use_no_blas_and_no_cpu_dispatched_math(
        monkeypatch):
    """The exponential loss's fit and predictions and the link of an init's
    probabilities run with NumPy's BLAS and CPU-dispatched functions raising (C's
    exp and log in the kernels: the same model on every machine)."""
    from test_reproducibility import forbid_blas_and_dispatched_math

    X, y, w = _data()
    X3, y3, w3 = _data(3)
    forbid_blas_and_dispatched_math(monkeypatch)
    models = [
        GBC(loss="exponential", init="prior", n_estimators=6, subsample=0.8,
            random_state=0).fit(X, y, sample_weight=w),
        GBC(loss="exponential", n_estimators=30, n_iter_no_change=2,
            random_state=1).fit(X, y),
        GBC(loss="exponential", init=dummy.DummyClassifier(), n_estimators=4).fit(X, y),
        GBC(init=dummy.DummyClassifier(strategy="uniform"), n_estimators=4).fit(X3, y3, w3),
    ]
    for model in models:
        model.predict_proba(X[:50])
        model.predict_log_proba(X[:50])
        list(model.staged_predict_proba(X[:50]))
        gbc_core.from_bytes(model.booster_.encode()[0]).predict_proba(X[:50])
    booster = models[0].booster_
    for loss in (booster.loss_function, gbc_core.MultinomialLoss(3)):
        k = loss.n_classes
        loss.raw_from_proba(np.full((5, k), 1.0 / k))
