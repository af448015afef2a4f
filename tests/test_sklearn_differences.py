"""The differences from scikit-learn's GradientBoostingClassifier that its own test
file found (``benchmarks/sklearn_gbc_suite.py``) and gbc-core no longer makes, each
checked against scikit-learn itself: the units of ``train_score_`` and of the
out-of-bag and validation scores, the 0 of the out-of-bag arrays after a warm start
switches subsampling on, ``fit(monitor=...)``, the error of an early-stopping split
whose training part lacks a class, and labels shown as given in error messages.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import datasets
from sklearn.ensemble import GradientBoostingClassifier as SklearnGBC

import gbc_core
from gbc_core import GradientBoostingClassifier

LOSS_CASES = [(2, "log_loss"), (3, "log_loss"), (2, "exponential")]


def _data(n_classes, n=400, seed=0):
    """Continuous features (no exactly equal split gains) and positive weights."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    score = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    w = rng.uniform(0.2, 3.0, size=n)
    return X, y, w


def _units(loss, y, raw, w):
    """scikit-learn's train_score_ of raw scores (n, K), naive NumPy: the binomial
    deviance (twice the mean log-loss), the mean multinomial log-loss, the mean
    exponential loss; weighted means."""
    if loss == "exponential":
        values = np.exp(-(2 * y - 1) * raw[:, 0])
    elif raw.shape[1] == 1:
        values = 2 * (np.logaddexp(0.0, raw[:, 0]) - y * raw[:, 0])
    else:
        top = raw.max(axis=1)
        lse = top + np.log(np.exp(raw - top[:, None]).sum(axis=1))
        values = lse - raw[np.arange(y.size), y]
    return float(np.sum(w * values) / np.sum(w))


@pytest.mark.parametrize("n_classes, loss", LOSS_CASES)
def test_train_score_is_sklearns(n_classes, loss):
    """With weights: the same trees as scikit-learn, and the same train_score_."""
    X, y, w = _data(n_classes)
    params = dict(n_estimators=20, max_depth=3, loss=loss, init="zero", random_state=0)
    ours = GradientBoostingClassifier(**params).fit(X, y, sample_weight=w)
    theirs = SklearnGBC(**params).fit(X, y, sample_weight=w)
    assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=0, atol=1e-9)
    assert_allclose(ours.train_score_, theirs.train_score_, rtol=1e-9)


@pytest.mark.parametrize("n_classes, loss", LOSS_CASES)
def test_oob_and_train_scores_with_subsample_are_in_sklearns_units(n_classes, loss):
    """scikit-learn's scores of its own draws (read by a monitor) are ``_units`` of
    its in-bag and out-of-bag rows; gbc-core's are ``_units`` of its draws (each
    iteration's documented stream) on the same definitions: train_score_ of the
    in-bag rows, oob_scores_ of the others after the iteration, oob_improvement_
    the decrease from before it."""
    X, y, w = _data(n_classes, seed=1)
    params = dict(n_estimators=8, max_depth=2, loss=loss, subsample=0.6, random_state=3)
    seen = []
    theirs = SklearnGBC(**params).fit(X, y, sample_weight=w, monitor=lambda i, est, loc: (
        seen.append((loc["sample_mask"].copy(), loc["raw_predictions"].copy())) and False))
    for i, (inbag, raw) in enumerate(seen):
        assert theirs.train_score_[i] == pytest.approx(
            _units(loss, y[inbag], raw[inbag], w[inbag]), rel=1e-9)
        assert theirs.oob_scores_[i] == pytest.approx(
            _units(loss, y[~inbag], raw[~inbag], w[~inbag]), rel=1e-9)

    ours = GradientBoostingClassifier(**params).fit(X, y, sample_weight=w)
    staged = [np.zeros((y.size, ours.n_trees_per_iteration_))]
    staged += [s.reshape(y.size, -1) for s in ours.staged_decision_function(X)]
    n_inbag = int(0.6 * y.size)
    for i in range(params["n_estimators"]):
        inbag = np.zeros(y.size, dtype=bool)
        inbag[np.random.default_rng([3, i]).choice(y.size, n_inbag, replace=False)] = True
        assert ours.train_score_[i] == pytest.approx(
            _units(loss, y[inbag], staged[i + 1][inbag], w[inbag]), rel=1e-9)
        after = _units(loss, y[~inbag], staged[i + 1][~inbag], w[~inbag])
        before = (_units(loss, y[~inbag], staged[0][~inbag], w[~inbag]) if i == 0
                  else ours.oob_scores_[i - 1])
        assert ours.oob_scores_[i] == pytest.approx(after, rel=1e-9)
        assert ours.oob_improvement_[i] == pytest.approx(before - after, rel=1e-7, abs=1e-12)
    assert ours.oob_score_ == ours.oob_scores_[-1]


def test_validation_score_and_tol_are_in_sklearns_units():
    """Binary early stopping: validation_score_ is the deviance of the validation
    rows, and tol compares it as scikit-learn does (a tol between the log-loss
    gain and the deviance gain stops only on the deviance's scale)."""
    X, y, _ = _data(2, seed=2)
    Xv, yv, _ = _data(2, seed=3)
    model = GradientBoostingClassifier(n_estimators=5).fit(X, y, eval_set=(Xv, yv))
    deviance = [_units("log_loss", yv, raw[:, None], np.ones(yv.size))
                for raw in model.staged_decision_function(Xv)]
    assert_allclose(model.validation_score_, deviance, rtol=1e-12)
    # tol between the log-loss's decrease over iteration 2 and the deviance's (twice
    # it): in scikit-learn's units iteration 2 improves by more than tol.
    tol = 0.75 * (deviance[0] - deviance[1])
    model = GradientBoostingClassifier(n_estimators=5, n_iter_no_change=1, tol=tol)
    model.fit(X, y, eval_set=(Xv, yv))
    assert model.validation_score_.size > 2 and model.best_iteration_ >= 2


def test_warm_start_switching_subsample_on_writes_zeros_as_sklearn():
    """scikit-learn's test_warm_start_oob_switch, for both estimators."""
    X, y = datasets.make_hastie_10_2(n_samples=100, random_state=1)
    for cls in (GradientBoostingClassifier, SklearnGBC):
        est = cls(n_estimators=100, max_depth=1, warm_start=True).fit(X, y)
        est.set_params(n_estimators=110, subsample=0.5).fit(X, y)
        assert_array_equal(est.oob_improvement_[:100], np.zeros(100))
        assert_array_equal(est.oob_scores_[:100], np.zeros(100))
        assert (est.oob_improvement_[-10:] != 0).all() and (est.oob_scores_[-10:] != 0).all()
        assert est.oob_scores_[-1] == pytest.approx(est.oob_score_)


def _stop_at(n):
    def monitor(i, est, values):
        return i == n - 1
    return monitor


@pytest.mark.parametrize("warm_start", [False, True])
def test_monitor_stops_and_truncates_as_sklearn(warm_start):
    """scikit-learn's test_monitor_early_stopping on both estimators, and the same
    truncated model (no subsample: the same trees)."""
    X, y = datasets.make_hastie_10_2(n_samples=100, random_state=1)
    for cls, subsample in [(GradientBoostingClassifier, 0.5), (SklearnGBC, 0.5),
                           (GradientBoostingClassifier, 1.0)]:
        est = cls(n_estimators=20, max_depth=1, random_state=1, subsample=subsample,
                  warm_start=warm_start)
        est.fit(X, y, monitor=_stop_at(10))
        assert est.n_estimators == 20 and est.n_estimators_ == 10
        assert est.estimators_.shape[0] == est.train_score_.shape[0] == 10
        if subsample < 1:
            assert est.oob_improvement_.shape[0] == est.oob_scores_.shape[0] == 10
            assert est.oob_scores_[-1] == pytest.approx(est.oob_score_)
        est.set_params(n_estimators=30, warm_start=False).fit(X, y)
        assert est.estimators_.shape[0] == est.train_score_.shape[0] == 30
    ours = GradientBoostingClassifier(n_estimators=20, max_depth=1).fit(
        X, y, monitor=_stop_at(7))
    theirs = SklearnGBC(n_estimators=20, max_depth=1, init="zero").fit(
        X, y, monitor=_stop_at(7))
    assert ours.n_estimators_ == theirs.n_estimators_ == 7
    assert_allclose(ours.train_score_, theirs.train_score_, rtol=1e-9)
    assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=0, atol=1e-9)


def test_monitor_sees_the_model_of_the_iterations_so_far():
    """During the call the estimator exposes iterations 0 .. i (train_score_[i],
    oob_improvement_[i], estimators_, predictions) as scikit-learn's does; a warm
    start counts i from the iterations fitted before."""
    X, y, w = _data(3, seed=4)
    calls = []

    def monitor(i, est, values):
        calls.append(i)
        assert values["i"] == i and values["self"] is est and values["X"].shape == X.shape
        assert est.train_score_.shape == est.oob_improvement_.shape == (i + 1,)
        assert est.estimators_.shape == (i + 1, 3)
        assert est.train_score_[i] == values["record"].train_score[i]
        seen[i] = est.predict_proba(X)
        return False

    seen = {}
    model = GradientBoostingClassifier(n_estimators=4, subsample=0.8, random_state=0,
                                       warm_start=True)
    model.fit(X, y, sample_weight=w, monitor=monitor)
    model.set_params(n_estimators=6).fit(X, y, sample_weight=w, monitor=monitor)
    assert calls == [0, 1, 2, 3, 4, 5]
    for i, proba in enumerate(model.staged_predict_proba(X)):
        assert_array_equal(seen[i], proba)
    once = GradientBoostingClassifier(n_estimators=6, subsample=0.8, random_state=0).fit(
        X, y, sample_weight=w)
    assert_array_equal(model.train_score_, once.train_score_)


def test_a_monitor_that_does_not_look_at_the_model_builds_none(monkeypatch):
    """The model of the iterations so far is built when the monitor uses it: a
    monitor that only counts (the command line's progress) builds no Ensemble per
    iteration (which would cost time in the number of trees so far, each
    iteration); one that reads the model gets the model of iterations 0 .. i."""
    from gbc_core._ensemble import Ensemble

    X, y, _ = _data(2, seed=5)
    built = []
    original = Ensemble.from_trees.__func__

    def counting(cls, *args, **kwargs):
        built.append(1)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(Ensemble, "from_trees", classmethod(counting))
    GradientBoostingClassifier(n_estimators=30).fit(X, y, monitor=lambda i, est, v: False)
    assert len(built) == 1  # the fitted model only
    built.clear()
    sizes = []
    GradientBoostingClassifier(n_estimators=5).fit(
        X, y, monitor=lambda i, est, v: sizes.append(est.n_estimators_))
    assert sizes == [1, 2, 3, 4, 5] and len(built) == 6


def test_a_failing_monitor_leaves_the_model_before_the_fit():
    X, y, _ = _data(2, seed=5)

    def monitor(i, est, values):
        if i in (2, 4):
            raise RuntimeError("stop here")
        return False

    est = GradientBoostingClassifier(n_estimators=5)
    with pytest.raises(RuntimeError, match="stop here"):
        est.fit(X, y, monitor=monitor)
    assert not hasattr(est, "booster_")
    est.set_params(n_estimators=3, warm_start=True).fit(X, y)
    before = est.booster_
    with pytest.raises(RuntimeError, match="stop here"):
        est.set_params(n_estimators=6).fit(X, y, monitor=monitor)
    assert est.booster_ is before and est.n_estimators_ == 3
    with pytest.raises(TypeError, match="monitor must be callable"):
        est.fit(X, y, monitor=3)


def test_early_stopping_split_lacking_a_class_is_sklearns_error():
    """scikit-learn's test_early_stopping_n_classes: the hold-out of
    validation_fraction=0.8 takes both rows of class 0."""
    X = [[1]] * 10
    y = [0, 0] + [1] * 8
    for cls in (GradientBoostingClassifier, SklearnGBC):
        with pytest.raises(ValueError, match="The training data after the early stopping "
                                             "split is missing some classes"):
            cls(n_iter_no_change=5, random_state=0, validation_fraction=0.8).fit(X, y)
    GradientBoostingClassifier(n_iter_no_change=5, random_state=0,
                               validation_fraction=0.4).fit(X, y)


@pytest.mark.parametrize("labels", [np.array([0.0, 1.0]), np.array([0, 1]),
                                    np.array(["a", "b"])])
def test_error_messages_show_labels_as_given(labels):
    X = np.arange(8.0).reshape(-1, 1)
    first = labels[0].item()
    with pytest.raises(ValueError) as info:
        GradientBoostingClassifier().fit(X, np.repeat(labels[:1], 8))
    assert f"({first!r})" in str(info.value) and "np." not in str(info.value)
    y = np.repeat(labels, 4)
    other = np.array([2.0]) if labels.dtype.kind == "f" else (
        np.array([2]) if labels.dtype.kind == "i" else np.array(["c"]))
    with pytest.raises(ValueError) as info:
        GradientBoostingClassifier(n_estimators=2).fit(
            X, y, eval_set=(X[:2], np.r_[labels[:1], other]))
    assert str(info.value).endswith(repr(other.tolist()))


def test_loaded_older_file_record_is_in_sklearns_units():
    """The committed paper model (written before train_score_ took scikit-learn's
    units) loads with its training record doubled, as a fit writes it today."""
    from pathlib import Path

    from gbc_core.paper import paper_example

    fixture = Path(__file__).resolve().parent / "fixtures" / "paper.gbc"
    header = gbc_core.read_model_header(fixture)
    assert "record_units" not in header
    blob = fixture.read_bytes()
    payload = (16 + int.from_bytes(blob[12:16], "little") + 7) // 8 * 8
    d = next(d for d in header["arrays"] if d["name"] == "train_score")
    stored = np.frombuffer(blob, "<f8", d["length"], payload + d["offset"])
    loaded = gbc_core.load(fixture)
    assert_array_equal(loaded.train_score_, 2 * stored)  # the mean log-loss, doubled
    fresh, _ = paper_example()
    assert_allclose(loaded.train_score_, fresh.train_score_, rtol=1e-12)
    again = gbc_core.from_bytes(loaded.to_bytes())
    assert_array_equal(again.train_score_, loaded.train_score_)
