"""Early stopping on any metric (``scoring``), several named evaluation sets and
the metrics recorded per iteration (``eval_metric``, ``evals_result_``).

Every value is checked against a naive recomputation: scikit-learn's metric
functions on the staged predictions of a model fitted without early stopping (the
same trees: early stopping only ends the loop), and the stopping point against the
rule applied by hand to those values.
"""

import io
import pickle
from contextlib import redirect_stdout

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.metrics import accuracy_score, get_scorer, log_loss, make_scorer, roc_auc_score

import gbc_core
from gbc_core import GradientBoostingClassifier
from gbc_core._distributed import check_supported
from gbc_core._params import EVAL_METRICS
from gbc_core._scoring import METRICS

from conftest import make_continuous

ALL_METRICS = list(EVAL_METRICS)


def _binary(seed=0, n=900):
    X, y = make_continuous(n_samples=n, n_features=6, seed=seed)
    return X[:500], y[:500], X[500:], y[500:]


def _multiclass(seed=0, n=900):
    X, y = make_continuous(n_samples=n, n_features=6, seed=seed)
    y = y + (X[:, 1] > 0.4) + (X[:, 2] > 0.8)
    return X[:500], y[:500], X[500:], y[500:]


def _naive_best(scores, patience, tol):
    """(iterations run, best iteration) of the early-stopping rule on a score
    (higher is better): stop once no score beat the best by more than tol for
    ``patience`` iterations."""
    best, best_i, since = -np.inf, 0, 0
    for i, s in enumerate(scores):
        if s > best + tol:
            best, best_i, since = s, i + 1, 0
        else:
            since += 1
        if since >= patience:
            return i + 1, best_i
    return len(scores), best_i


def _naive(model, X, y, w, metric):
    """Each iteration's ``metric`` of the fitted ``model`` on (X, y, w), by
    scikit-learn's functions on its staged predictions."""
    classes = model.classes_
    codes = np.searchsorted(classes, y)
    out = []
    for raw, proba in zip(model.staged_decision_function(X), model.staged_predict_proba(X)):
        pred = classes[np.argmax(proba, axis=1)] if classes.size > 2 else \
            classes[(raw >= 0).astype(int)]
        if metric == "log_loss":
            out.append(log_loss(codes, proba, sample_weight=w, labels=range(classes.size)))
        elif metric == "roc_auc":
            out.append(roc_auc_score(codes, raw, sample_weight=w) if classes.size == 2 else
                       roc_auc_score(codes, proba, sample_weight=w, multi_class="ovr"))
        elif metric == "accuracy":
            out.append(accuracy_score(y, pred, sample_weight=w))
        elif metric == "error":
            out.append(1.0 - accuracy_score(y, pred, sample_weight=w))
        elif metric == "loss":  # the binomial deviance / multinomial log-loss
            factor = 2.0 if classes.size == 2 else 1.0
            out.append(factor * log_loss(codes, proba, sample_weight=w,
                                         labels=range(classes.size)))
    return np.array(out)


def test_metric_table_matches_the_parameter_rule():
    assert tuple(METRICS) == EVAL_METRICS
    assert GradientBoostingClassifier().get_params()["scoring"] == "loss"
    assert GradientBoostingClassifier().get_params()["eval_metric"] is None


# ------------------------------------------------------- early stopping on a score
@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_roc_auc_early_stopping_stops_where_the_naive_rule_says(split_method):
    X, y, Xv, yv = _binary(seed=1)
    params = dict(n_estimators=300, learning_rate=0.6, max_depth=3, random_state=0,
                  split_method=split_method)
    model = GradientBoostingClassifier(n_iter_no_change=4, tol=1e-4, scoring="roc_auc",
                                       **params).fit(X, y, eval_set=(Xv, yv))
    scores = model.evals_result_["valid_0"]["roc_auc"]
    assert list(model.evals_result_) == ["valid_0"]
    # The same trees without early stopping, scored naively.
    full = GradientBoostingClassifier(**params).fit(X, y)
    naive = [roc_auc_score(yv, f) for f in full.staged_decision_function(Xv)]
    run, best = _naive_best(naive, 4, 1e-4)
    assert run < 300  # it stopped
    assert len(scores) == run and model.best_iteration_ == best == model.n_estimators_
    assert_allclose(scores, naive[:run], rtol=1e-13)  # (the fast path's sums)
    assert len(model.validation_score_) == run  # the loss of every iteration run
    # The model kept is the full fit's first `best` iterations.
    staged = list(full.staged_predict_proba(Xv))[best - 1]
    assert np.array_equal(model.predict_proba(Xv), staged)


def test_hold_out_early_stopping_on_a_scorer_name():
    X, y, _, _ = _binary(seed=2, n=1200)
    model = GradientBoostingClassifier(n_estimators=300, learning_rate=0.7, random_state=3,
                                       n_iter_no_change=3, scoring="neg_log_loss",
                                       validation_fraction=0.25).fit(X, y)
    assert list(model.evals_result_) == ["validation"]
    scores = model.evals_result_["validation"]["neg_log_loss"]
    losses = model.evals_result_["validation"]["loss"]
    # On the hold-out, the scorer is minus the mean log-loss: half the deviance.
    assert_allclose(np.array(scores), -0.5 * np.array(losses), rtol=1e-12)
    run, best = _naive_best(scores, 3, 1e-4)
    assert len(scores) == run and model.best_iteration_ == best


def test_scoring_none_is_accuracy_and_callable_scorers_work():
    X, y, Xv, yv = _binary(seed=4)
    params = dict(n_estimators=200, learning_rate=0.8, random_state=0, n_iter_no_change=3)
    acc = GradientBoostingClassifier(scoring=None, **params).fit(X, y, eval_set=(Xv, yv))
    calls = []

    def scorer(estimator, X_, y_):
        calls.append(X_ is not None)
        return accuracy_score(y_, estimator.predict(X_))

    own = GradientBoostingClassifier(scoring=scorer, **params).fit(X, y, eval_set=(Xv, yv))
    assert acc.evals_result_["valid_0"]["accuracy"] == own.evals_result_["valid_0"]["score"]
    assert len(calls) == len(own.evals_result_["valid_0"]["score"])
    assert own.best_iteration_ == acc.best_iteration_
    # A scorer made by make_scorer on probabilities: the same as by name.
    made = make_scorer(log_loss, greater_is_better=False, response_method="predict_proba")
    by_made = GradientBoostingClassifier(scoring=made, **params).fit(X, y, eval_set=(Xv, yv))
    by_name = GradientBoostingClassifier(scoring="neg_log_loss", **params).fit(
        X, y, eval_set=(Xv, yv))
    assert_allclose(by_made.evals_result_["valid_0"]["score"],
                    by_name.evals_result_["valid_0"]["neg_log_loss"], rtol=1e-13)
    assert by_made.best_iteration_ == by_name.best_iteration_


def test_a_scorer_reading_the_model_sees_the_iterations_so_far():
    """A scorer that predicts other rows or reads the model gets the model of the
    iterations fitted so far (built on demand)."""
    X, y, Xv, yv = _binary(seed=5)
    seen = []

    def scorer(estimator, X_, y_):
        seen.append(estimator.n_estimators_)
        other = estimator.predict_proba(np.asarray(X_, dtype=np.float64))  # not the same array
        return roc_auc_score(y_, other[:, 1])

    model = GradientBoostingClassifier(n_estimators=12, learning_rate=0.5, random_state=0,
                                       n_iter_no_change=50, scoring=scorer)
    model.fit(X, y, eval_set=(Xv, yv))
    assert seen == list(range(1, 13))
    # (The model keeps its best iterations: the values of those.)
    naive = [roc_auc_score(yv, p[:, 1]) for p in model.staged_predict_proba(Xv)]
    assert_allclose(model.evals_result_["valid_0"]["score"][:len(naive)], naive, rtol=1e-12)


def test_weighted_eval_set_scores_with_weights():
    X, y, Xv, yv = _binary(seed=6)
    wv = np.random.default_rng(0).uniform(0.1, 3.0, size=yv.size)
    model = GradientBoostingClassifier(n_estimators=15, random_state=0, n_iter_no_change=100,
                                       scoring="roc_auc").fit(X, y, eval_set=(Xv, yv, wv))
    naive = [roc_auc_score(yv, f, sample_weight=wv)
             for f in model.staged_decision_function(Xv)]
    assert_allclose(model.evals_result_["valid_0"]["roc_auc"][:model.n_estimators_], naive,
                    rtol=1e-13)


# -------------------------------------------------------------- evals_result_
@pytest.mark.parametrize("data", [_binary, _multiclass])
def test_evals_result_equals_the_naive_metrics_of_every_set(data):
    X, y, Xv, yv = data(seed=7)
    wv = np.random.default_rng(1).uniform(0.5, 2.0, size=yv.size)
    half = slice(0, 200)
    sets = [(X, y), (Xv[half], yv[half]), (Xv, yv, wv)]
    model = GradientBoostingClassifier(n_estimators=20, learning_rate=0.3, max_depth=2,
                                       random_state=0, eval_metric=ALL_METRICS)
    model.fit(X, y, eval_set=sets)
    result = model.evals_result_
    assert list(result) == ["training", "valid_1", "valid_2"]
    for (name, metrics), s in zip(result.items(), sets):
        assert list(metrics) == ALL_METRICS
        w = s[2] if len(s) == 3 else None
        for metric in ALL_METRICS:
            values = metrics[metric]
            assert isinstance(values, list) and len(values) == 20
            assert_allclose(values, _naive(model, s[0], s[1], w, metric), rtol=1e-10,
                            atol=1e-15, err_msg=f"{name} {metric}")
    # The loss of the watched (last) set is validation_score_.
    assert result["valid_2"]["loss"] == model.validation_score_.tolist()


def test_eval_names_order_and_the_watched_set():
    X, y, Xv, yv = _binary(seed=8)
    other = (Xv[:150], yv[:150])
    params = dict(n_estimators=200, learning_rate=0.8, random_state=0, n_iter_no_change=3,
                  scoring="roc_auc")
    # The watched set is the last one that is not the training data.
    model = GradientBoostingClassifier(**params).fit(
        X, y, eval_set=[other, (Xv, yv), (X, y)], eval_names=["small", "big", "train"])
    assert list(model.evals_result_) == ["small", "big", "train"]
    assert "roc_auc" in model.evals_result_["big"]
    assert "roc_auc" not in model.evals_result_["small"]
    alone = GradientBoostingClassifier(**params).fit(X, y, eval_set=(Xv, yv))
    assert model.best_iteration_ == alone.best_iteration_
    assert model.evals_result_["big"]["roc_auc"] == alone.evals_result_["valid_0"]["roc_auc"]
    assert model.validation_score_.tolist() == alone.validation_score_.tolist()
    # The training data named by identity (LightGBM's "training").
    named = GradientBoostingClassifier(n_estimators=3).fit(X, y, eval_set=[(X, y), (Xv, yv)])
    assert list(named.evals_result_) == ["training", "valid_1"]
    # The training data alone is watched, as eval_set=(X, y) was before sets had names.
    params["scoring"] = "loss"
    on_train = GradientBoostingClassifier(**params).fit(X, y, eval_set=(X, y))
    assert list(on_train.evals_result_) == ["training"]
    same = GradientBoostingClassifier(**params).fit(X, y, eval_set=(X.copy(), y.copy()))
    assert on_train.to_bytes() == same.to_bytes()
    assert on_train.validation_score_.tolist() == same.validation_score_.tolist()


def test_eval_set_list_form_keeps_the_single_tuple_model():
    """A list of one tuple, a tuple and a list (X, y) (the form taken before) give the
    same model; several sets do not change the trees or the stopping point."""
    X, y, Xv, yv = _binary(seed=9)
    params = dict(n_estimators=200, learning_rate=0.8, random_state=0, n_iter_no_change=3)
    a = GradientBoostingClassifier(**params).fit(X, y, eval_set=(Xv, yv))
    b = GradientBoostingClassifier(**params).fit(X, y, eval_set=[(Xv, yv)])
    c = GradientBoostingClassifier(**params).fit(X, y, eval_set=[Xv, yv])
    d = GradientBoostingClassifier(**params).fit(X, y, eval_set=[(X, y), (Xv, yv)])
    for other in (b, c, d):
        assert other.to_bytes() == a.to_bytes()
        assert other.validation_score_.tolist() == a.validation_score_.tolist()


def test_default_scoring_gives_the_same_model_whatever_is_recorded():
    """scoring='loss' (the default) stops on the loss as before: recording metrics
    or naming sets changes no tree, no score and no stopping point."""
    X, y, Xv, yv = _multiclass(seed=10)
    params = dict(n_estimators=150, learning_rate=0.8, random_state=0, n_iter_no_change=3,
                  subsample=0.8)
    plain = GradientBoostingClassifier(**params).fit(X, y, eval_set=(Xv, yv))
    recorded = GradientBoostingClassifier(eval_metric=ALL_METRICS, **params).fit(
        X, y, eval_set=[(X, y), (Xv, yv)], eval_names=["tr", "va"])
    assert plain.best_iteration_ < 150
    assert recorded.best_iteration_ == plain.best_iteration_
    assert recorded.booster_.to_bytes() != b""
    a, b = plain.booster_, recorded.booster_
    assert np.array_equal(a.ensemble.nodes, b.ensemble.nodes)
    for name in ("train_score_", "validation_score_", "oob_scores_"):
        assert getattr(a, name).tolist() == getattr(b, name).tolist()


def test_a_tuple_of_sets_and_an_init_estimator():
    """A tuple of sets reads as a list; an init estimator's scores start every set's
    raw scores (the loss of each set as the staged predictions give it)."""
    from sklearn.linear_model import LogisticRegression

    X, y, Xv, yv = _binary(seed=18)
    model = GradientBoostingClassifier(n_estimators=8, random_state=0, init=LogisticRegression(),
                                       eval_metric=["loss", "log_loss"])
    model.fit(X, y, eval_set=((Xv[:200], yv[:200]), (Xv, yv)))
    assert list(model.evals_result_) == ["valid_0", "valid_1"]
    for name, rows in (("valid_0", slice(0, 200)), ("valid_1", slice(None))):
        naive = _naive(model, Xv[rows], yv[rows], None, "log_loss")
        assert_allclose(model.evals_result_[name]["log_loss"], naive, rtol=1e-10)
    assert model.evals_result_["valid_1"]["loss"] == model.validation_score_.tolist()


def test_warm_start_replays_the_evaluation():
    X, y, Xv, yv = _binary(seed=11)
    params = dict(learning_rate=0.3, random_state=0, eval_metric=["roc_auc", "loss"])
    once = GradientBoostingClassifier(n_estimators=12, **params).fit(X, y, eval_set=(Xv, yv))
    warm = GradientBoostingClassifier(n_estimators=5, warm_start=True, **params)
    warm.fit(X, y, eval_set=(Xv, yv))
    warm.set_params(n_estimators=12).fit(X, y, eval_set=(Xv, yv))
    assert warm.evals_result_ == once.evals_result_
    # A fit without evaluation data leaves no stale result.
    warm.set_params(warm_start=False, n_estimators=3).fit(X, y)
    assert not hasattr(warm, "evals_result_")


def test_verbose_report_shows_the_watched_score():
    X, y, Xv, yv = _binary(seed=12)
    out = io.StringIO()
    with redirect_stdout(out):
        GradientBoostingClassifier(n_estimators=4, verbose=2, n_iter_no_change=10,
                                   scoring="roc_auc").fit(X, y, eval_set=(Xv, yv))
    header = out.getvalue().splitlines()[0].split()
    assert header[:3] == ["Iter", "Train", "Loss"] and "roc_auc" in header


def test_evals_result_pickles_but_is_not_in_the_model_file(tmp_path):
    X, y, Xv, yv = _binary(seed=13)
    model = GradientBoostingClassifier(n_estimators=4, scoring="roc_auc",
                                       eval_metric=["roc_auc"], n_iter_no_change=5)
    model.fit(X, y, eval_set=(Xv, yv))
    assert pickle.loads(pickle.dumps(model)).evals_result_ == model.evals_result_
    path = tmp_path / "m.gbc"
    model.save(path)
    loaded = GradientBoostingClassifier.load(path)
    assert loaded.get_params()["scoring"] == "roc_auc"
    assert loaded.get_params()["eval_metric"] == ["roc_auc"]
    assert loaded.validation_score_.tolist() == model.validation_score_.tolist()
    assert not hasattr(loaded, "evals_result_")  # a fit-time record (documented)
    assert gbc_core.load(path).best_iteration_ == model.best_iteration_


def test_no_evaluation_data_no_evals_result():
    X, y, _, _ = _binary(seed=14)
    model = GradientBoostingClassifier(n_estimators=3, eval_metric="roc_auc").fit(X, y)
    assert not hasattr(model, "evals_result_")


# -------------------------------------------------------------------- errors
@pytest.mark.parametrize("scoring, match", [
    ("auc", "scoring='auc' is not a scikit-learn scorer name"),
    ("", "scoring must be"),
    (3, "scoring must be"),
])
def test_bad_scoring_is_refused(scoring, match):
    X, y, Xv, yv = _binary()
    with pytest.raises(ValueError, match=match):
        GradientBoostingClassifier(n_estimators=2, scoring=scoring, n_iter_no_change=2).fit(
            X, y, eval_set=(Xv, yv))


@pytest.mark.parametrize("eval_metric", ["auc", ["roc_auc", "roc_auc"], [], 3, ["loss", None]])
def test_bad_eval_metric_is_refused(eval_metric):
    X, y, _, _ = _binary()
    with pytest.raises(ValueError, match="eval_metric must be"):
        GradientBoostingClassifier(n_estimators=2, eval_metric=eval_metric).fit(X, y)


def test_bad_eval_set_forms_are_refused():
    X, y, Xv, yv = _binary()
    model = GradientBoostingClassifier(n_estimators=2)
    with pytest.raises(ValueError, match="got an empty list"):
        model.fit(X, y, eval_set=[])
    with pytest.raises(ValueError, match="a list of 4 items, not all of them such tuples"):
        model.fit(X, y, eval_set=[(Xv, yv), (Xv, yv), Xv, yv])
    with pytest.raises(ValueError, match="got dict"):
        model.fit(X, y, eval_set={"a": (Xv, yv)})
    with pytest.raises(ValueError, match="a tuple of 4 items"):
        model.fit(X, y, eval_set=(Xv, yv, None, None))
    with pytest.raises(ValueError, match="eval_names was given without eval_set"):
        model.fit(X, y, eval_names=["a"])
    with pytest.raises(ValueError, match="name each of the 2 evaluation set"):
        model.fit(X, y, eval_set=[(Xv, yv), (Xv, yv)], eval_names=["a"])
    with pytest.raises(ValueError, match="names must differ"):
        model.fit(X, y, eval_set=[(Xv, yv), (Xv, yv)], eval_names=["a", "a"])
    with pytest.raises(ValueError, match="eval_names must be a list"):
        model.fit(X, y, eval_set=(Xv, yv), eval_names="a")
    # A set's own error names the set.
    with pytest.raises(ValueError, match="eval_set 'valid_1': eval_set X has 5 features"):
        model.fit(X, y, eval_set=[(Xv, yv), (Xv[:, :5], yv)])



def test_the_distributed_fit_refuses_what_it_does_not_train():
    with pytest.raises(ValueError, match="scoring='roc_auc' is not supported"):
        check_supported({"scoring": "roc_auc"})
    with pytest.raises(ValueError, match="eval_metric=.* is not supported"):
        check_supported({"eval_metric": ["roc_auc"]})
    check_supported({"scoring": "loss", "eval_metric": None})
    pytest.importorskip("dask")
    from gbc_core.dask import _eval_collections

    X, y, Xv, yv = _binary()
    with pytest.raises(ValueError, match="takes one evaluation set"):
        _eval_collections([(Xv, yv), (Xv, yv)], None)


@pytest.mark.parametrize("data, name", [(_binary, "roc_auc"), (_binary, "accuracy"),
                                        (_binary, "neg_log_loss"),
                                        (_multiclass, "roc_auc_ovr"),
                                        (_multiclass, "neg_log_loss"),
                                        (_multiclass, "accuracy")])
def test_fast_scorers_equal_scikit_learns_scorer(data, name):
    """A known scorer name is computed from the raw scores without the scorer: the
    values of scikit-learn's scorer called on the model (the callable form, which
    goes through the scorer), to rounding, and the same stopping point."""
    X, y, Xv, yv = data(seed=16)
    wv = np.random.default_rng(2).uniform(0.5, 2.0, size=yv.size)
    params = dict(n_estimators=150, learning_rate=0.7, random_state=0, n_iter_no_change=3)
    fast = GradientBoostingClassifier(scoring=name, **params).fit(X, y,
                                                                  eval_set=(Xv, yv, wv))
    slow = GradientBoostingClassifier(scoring=get_scorer(name), **params).fit(
        X, y, eval_set=(Xv, yv, wv))
    assert_allclose(fast.evals_result_["valid_0"][name], slow.evals_result_["valid_0"]["score"],
                    rtol=1e-12)
    assert fast.best_iteration_ == slow.best_iteration_


def test_an_undefined_score_is_an_error():
    X, y, Xv, yv = _binary(seed=17)
    one_class = yv == yv[0]
    with pytest.raises(ValueError, match="scoring='roc_auc' is nan on the validation data"):
        GradientBoostingClassifier(n_estimators=5, n_iter_no_change=2, scoring="roc_auc").fit(
            X, y, eval_set=(Xv[one_class], yv[one_class]))


def test_scorer_of_a_known_name_is_scikit_learns():
    """The value recorded for a scorer's name is that scorer's on the model."""
    X, y, Xv, yv = _multiclass(seed=15)
    model = GradientBoostingClassifier(n_estimators=6, random_state=0, n_iter_no_change=99,
                                       scoring="balanced_accuracy")
    model.fit(X, y, eval_set=(Xv, yv))
    scorer = get_scorer("balanced_accuracy")
    kept = model.evals_result_["valid_0"]["balanced_accuracy"][model.best_iteration_ - 1]
    assert kept == scorer(model, Xv, yv)
