"""A loss the package does not have, defined here through the public loss protocol
(``gbc_core.Loss``, a link, ``register_loss``) without touching the package: it
trains, predicts, explains, saves and loads (registered), is refused where it
cannot load, and trains on Dask. A loss that reimplements the built-in binomial
(and multinomial) log-loss through the protocol gives the built-in model, which
shows that the protocol is the one the fit runs."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gbc_core
from gbc_core import (GradientBoostingClassifier, LogitLink, Loss, ModelFormatError,
                      SoftmaxLink, register_loss)


def _sigmoid(f):
    return 0.5 * (1.0 + np.tanh(0.5 * f))


class SmoothedLogLoss(Loss):
    """The log-loss against label-smoothed targets t = y (1 - eps) + eps / 2:
    L = log(1 + e^F) - t F, gradient p - t, Hessian p (1 - p), p = sigma(F)."""

    name = "test_smoothed_log_loss"
    link = LogitLink()

    def __init__(self, epsilon=0.2):
        self.epsilon = epsilon

    def _target(self, y):
        return y * (1.0 - self.epsilon) + 0.5 * self.epsilon

    def gradient_hessian(self, y, raw):
        p = _sigmoid(raw[:, 0])
        return p - self._target(y), p * (1.0 - p)

    def pointwise_loss(self, y, raw):
        f = raw[:, 0]
        return np.logaddexp(0.0, f) - self._target(y) * f


class Logistic(Loss):
    """The binomial log-loss again, through the protocol (the built-in's formulas:
    p = sigma(F) as the kernel computes it, r = y - p, h = p (1 - p))."""

    name = "test_logistic"
    link = LogitLink()
    score_factor = 2.0

    def gradient_hessian(self, y, raw):
        f = raw[:, 0]
        e = np.exp(-np.abs(f))
        p = np.where(f >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
        return p - y, p * (1.0 - p)

    def pointwise_loss(self, y, raw):
        f = raw[:, 0]
        return np.logaddexp(0.0, f) - y * f


class Softmax(Loss):
    """The multinomial log-loss again, with its leaf value rule (K - 1)/K * -G / H."""

    name = "test_softmax"
    link = SoftmaxLink()

    def gradient_hessian(self, y, raw):
        top = raw.max(axis=1, keepdims=True)
        e = np.exp(raw - top)
        p = e / e.sum(axis=1, keepdims=True)
        onehot = np.eye(raw.shape[1])[y]
        return p - onehot, p * (1.0 - p)

    def pointwise_loss(self, y, raw):
        top = raw.max(axis=1)
        lse = top + np.log(np.exp(raw - top[:, None]).sum(axis=1))
        return lse - raw[np.arange(y.shape[0]), y]

    def leaf_value(self, gradient_sum, hessian_sum):
        factor = (self.n_classes - 1) / self.n_classes
        out = np.zeros_like(gradient_sum)
        ok = np.abs(hessian_sum) >= 1e-150
        out[ok] = (factor * -gradient_sum[ok]) / hessian_sum[ok]
        return out


def _data(n=300, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 4)), 2)
    score = X[:, 0] + 0.7 * X[:, 1] - 0.4 * X[:, 2] + 0.5 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    w = rng.uniform(0.5, 2.0, n)
    return X, y, w


PARAMS = dict(n_estimators=8, max_depth=3, learning_rate=0.3, random_state=0)


def _same_model(ours, ref, tol):
    assert ours.n_estimators_ == ref.n_estimators_
    for a, b in zip(ours.booster_.trees(), ref.booster_.trees()):
        np.testing.assert_array_equal(a["feature"], b["feature"])
        np.testing.assert_array_equal(a["threshold"], b["threshold"])
        np.testing.assert_allclose(a["value"], b["value"], rtol=tol, atol=tol)
    np.testing.assert_allclose(ours.init_raw_, ref.init_raw_, rtol=0, atol=0)


@pytest.mark.parametrize("split_method", ["exact", "hist"])
@pytest.mark.parametrize("weighted", [False, True])
def test_a_reimplemented_log_loss_is_the_builtin_model(split_method, weighted):
    X, y, w = _data()
    w = w if weighted else None
    ref = GradientBoostingClassifier(split_method=split_method, subsample=0.8, **PARAMS)
    ref.fit(X, y, sample_weight=w)
    ours = GradientBoostingClassifier(split_method=split_method, subsample=0.8,
                                      loss=Logistic(), **PARAMS).fit(X, y, sample_weight=w)
    _same_model(ours, ref, 1e-12)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), rtol=1e-12)
    np.testing.assert_allclose(ours.train_score_, ref.train_score_, rtol=1e-12)
    np.testing.assert_allclose(ours.oob_scores_, ref.oob_scores_, rtol=1e-12)
    assert ours.booster_.loss == "test_logistic"


def test_a_reimplemented_multinomial_loss_with_its_leaf_rule_is_the_builtin_model():
    X, y, w = _data(n_classes=3, seed=1)
    ref = GradientBoostingClassifier(split_method="hist", **PARAMS).fit(X, y, sample_weight=w)
    ours = GradientBoostingClassifier(split_method="hist", loss=Softmax(), **PARAMS)
    ours.fit(X, y, sample_weight=w)
    _same_model(ours, ref, 1e-12)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), rtol=1e-12)
    np.testing.assert_allclose(ours.train_score_, ref.train_score_, rtol=1e-12)


def test_a_new_loss_trains_predicts_and_explains():
    X, y, _ = _data()
    loss = SmoothedLogLoss(0.2)
    model = GradientBoostingClassifier(loss=loss, n_estimators=30, max_depth=3).fit(X, y)
    plain = GradientBoostingClassifier(n_estimators=30, max_depth=3).fit(X, y)
    assert model.get_params()["loss"] is loss  # the estimator's parameter is left as given
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(proba[:, 1], _sigmoid(model.decision_function(X)), rtol=1e-12)
    # Smoothed targets: no row is pushed beyond the smoothed target's log-odds.
    limit = np.log(0.9 / 0.1)
    assert np.abs(model.decision_function(X)).max() < limit
    assert np.abs(plain.decision_function(X)).max() > limit
    assert (model.predict(X) == y).mean() > 0.8
    # train_score_ is the smoothed loss (score_factor 1), decreasing.
    raw = model.decision_function(X)
    final = np.mean(np.logaddexp(0.0, raw) - (y * 0.8 + 0.1) * raw)
    assert model.train_score_[-1] == pytest.approx(final, rel=1e-12)
    assert np.all(np.diff(model.train_score_) < 0)
    contributions = model.predict_contributions(X)
    np.testing.assert_allclose(contributions.sum(axis=-1), model.decision_function(X),
                               rtol=1e-9, atol=1e-9)


def test_saves_and_loads_registered_and_refuses_unregistered(tmp_path):
    X, y, _ = _data()

    class Unregistered(SmoothedLogLoss):
        name = "test_never_registered"

    model = GradientBoostingClassifier(loss=Unregistered(), n_estimators=3).fit(X, y)
    with pytest.raises(ValueError, match="cannot save the model: .*'test_never_registered'"
                                         ".*register_loss"):
        model.save(tmp_path / "refused.gbc")

    register_loss(SmoothedLogLoss)
    model = GradientBoostingClassifier(loss=SmoothedLogLoss(), n_estimators=5).fit(X, y)
    path = tmp_path / "smoothed.gbc"
    model.save(path)
    assert gbc_core.read_model_header(path)["loss"] == "test_smoothed_log_loss"
    loaded = gbc_core.load(path)
    assert isinstance(loaded.loss_function, SmoothedLogLoss)
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    estimator = GradientBoostingClassifier.load(path)
    assert estimator.get_params()["loss"] == "test_smoothed_log_loss"
    np.testing.assert_array_equal(estimator.predict(X), model.predict(X))
    # A registered name selects the loss as a string too.
    by_name = GradientBoostingClassifier(loss="test_smoothed_log_loss", n_estimators=5)
    np.testing.assert_array_equal(by_name.fit(X, y).predict_proba(X), model.predict_proba(X))

    # Another process, where nothing registered the loss, refuses the file by name.
    code = textwrap.dedent(f"""
        import gbc_core
        try:
            gbc_core.load({str(path)!r})
        except gbc_core.ModelFormatError as exc:
            print(exc)
        else:
            print("loaded")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "'test_smoothed_log_loss'" in out and "register_loss" in out, out


def test_bad_losses_are_refused_by_name():
    X, y, _ = _data(n=40)

    class NoGradient(Loss):
        name = "test_no_gradient"

        def pointwise_loss(self, y, raw):
            return np.zeros(len(y))

    with pytest.raises(TypeError, match="NoGradient.*has no gradient_hessian method"):
        GradientBoostingClassifier(loss=NoGradient(), n_estimators=2).fit(X, y)

    class Nameless(SmoothedLogLoss):
        name = None

    with pytest.raises(TypeError, match="Nameless needs a name"):
        GradientBoostingClassifier(loss=Nameless(), n_estimators=2).fit(X, y)

    class Impostor(SmoothedLogLoss):
        name = "log_loss"

    with pytest.raises(ValueError, match="Impostor is named 'log_loss', the name of a "
                                         "built-in loss"):
        GradientBoostingClassifier(loss=Impostor(), n_estimators=2).fit(X, y)
    with pytest.raises(ValueError, match="register_loss: 'exponential' is the name"):
        register_loss(type("Exp", (SmoothedLogLoss,), {"name": "exponential"}))

    class WrongShape(SmoothedLogLoss):
        name = "test_wrong_shape"

        def gradient_hessian(self, y, raw):
            return np.zeros(len(y) + 1), np.ones(len(y))

    with pytest.raises(ValueError, match="'test_wrong_shape': the gradient must be of shape"):
        GradientBoostingClassifier(loss=WrongShape(), n_estimators=2).fit(X, y)
    with pytest.raises(ValueError, match="leaf_solver='exact' is not offered by the loss"):
        GradientBoostingClassifier(loss=SmoothedLogLoss(), leaf_solver="exact").fit(X, y)
    X3, y3, _ = _data(n=60, n_classes=3)
    with pytest.raises(ValueError, match="the logit link is a link of two classes"):
        GradientBoostingClassifier(loss=SmoothedLogLoss(), n_estimators=2).fit(X3, y3)
    with pytest.raises(ValueError, match="loss must be .* or a gbc_core.Loss instance, got <object"):
        GradientBoostingClassifier(loss=object()).fit(X, y)
    with pytest.raises(ValueError, match="loss must be .*registered loss's name.*'test_unknown_name'"):
        GradientBoostingClassifier(loss="test_unknown_name").fit(X, y)


def test_trains_on_dask_as_in_one_process():
    from conftest import require

    require("dask")
    require("distributed")
    import cloudpickle
    import dask.array as da
    from distributed import Client, LocalCluster

    from gbc_core.dask import DaskGradientBoostingClassifier

    # The workers unpickle the loss by value: this test module is not on their path.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    X, y, w = _data(n=400)
    params = dict(split_method="hist", n_estimators=5, max_depth=3, learning_rate=0.3,
                  random_state=0)
    ref = GradientBoostingClassifier(loss=SmoothedLogLoss(), **params).fit(X, y, sample_weight=w)
    Xd = da.from_array(X, chunks=150)
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        model = DaskGradientBoostingClassifier(
            loss=SmoothedLogLoss(), **{k: v for k, v in params.items() if k != "split_method"})
        # The workers need no registration to train: the loss object travels with
        # the parameters.
        model.fit(Xd, da.from_array(y, chunks=150), sample_weight=da.from_array(w, chunks=150))
        assert model.booster_.loss == "test_smoothed_log_loss"
        # The fitted model travels as model-format bytes (data, not code): its loss
        # is found by name where it is rebuilt, in the client and on the workers.
        register_loss(SmoothedLogLoss)
        client.run(register_loss, SmoothedLogLoss)
        np.testing.assert_allclose(model.train_score_, ref.train_score_, rtol=1e-9)
        np.testing.assert_allclose(model.predict_proba(X), ref.predict_proba(X), rtol=1e-9)
        np.testing.assert_allclose(model.predict_proba(Xd).compute(), ref.predict_proba(X),
                                   rtol=1e-9)
