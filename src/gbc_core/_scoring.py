"""Evaluation during a fit: the evaluation sets of ``fit(eval_set=...)``, the
metrics of ``eval_metric`` recorded per iteration (``evals_result_``), and the
``scoring`` early stopping watches.

The boosting loop keeps the raw scores of every evaluation set's rows up to date
(one iteration's trees added per iteration, as it does for the validation loss);
:class:`Evaluation` computes each metric from them (NumPy, the values of
scikit-learn's metric functions without their input checks, which would cost more
than the metric on small sets), and a scorer of ``scoring`` through
:class:`_StagedEstimator`, an
estimator whose predictions on the evaluation rows are those running raw scores
(scikit-learn's HistGradientBoostingClassifier patches its raw predictions the same
way). Nothing is refitted or re-predicted from the first tree on: the cost per
iteration is that of the metric on the set's rows.

Estimator layer: scikit-learn is imported here (by ``_classifier`` only).
"""

import numbers

import numpy as np

from ._params import EVAL_METRICS


#: The name of the rows that ``eval_set`` gives as the training data itself (the
#: very X and y objects given to ``fit``: LightGBM's rule and name).
TRAINING = "training"
#: The name of the early-stopping hold-out of ``validation_fraction``.
HOLD_OUT = "validation"


# ----------------------------------------------------------------- eval_set
def _is_matrix(value):
    """Whether ``value`` looks like a 2-D X (array, DataFrame, sparse matrix, rows)."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return len(shape) == 2
    if isinstance(value, (list, tuple)):
        try:
            return np.ndim(np.asarray(value, dtype=object)) == 2
        except ValueError:
            return False
    return False


def _is_one_set(value):
    return isinstance(value, (tuple, list)) and len(value) in (2, 3) and _is_matrix(value[0])


def split_eval_sets(eval_set, eval_names, X, y):
    """The evaluation sets of ``fit``'s ``eval_set`` and ``eval_names``.

    ``eval_set`` is one set, a tuple ``(X_val, y_val)`` or ``(X_val, y_val,
    w_val)`` (a list of two or three items reads the same, as before several sets
    were taken), or a list (or tuple) whose every item is such a set (a tuple or
    list of 2 or 3 items whose first is 2-D). Names:
    ``eval_names`` if given, else ``"training"`` for a set whose X and y are the
    very objects ``X`` and ``y`` given to ``fit`` and ``"valid_<i>"`` for the set
    at position i (LightGBM's names).

    Returns
    -------
    list of (name, tuple)
        In the order given; None for ``eval_set=None``.

    Raises
    ------
    ValueError
        Another form, names that do not match the sets one to one or repeat.
    """
    if eval_set is None:
        if eval_names is not None:
            raise ValueError("eval_names was given without eval_set")
        return None
    form = ("eval_set must be a tuple (X_val, y_val) or (X_val, y_val, w_val), or a "
            "list of such tuples")
    if isinstance(eval_set, (tuple, list)) and eval_set and all(
            _is_one_set(s) for s in eval_set):
        sets = [tuple(s) for s in eval_set]
    elif isinstance(eval_set, (tuple, list)) and len(eval_set) in (2, 3):
        sets = [tuple(eval_set)]
    elif isinstance(eval_set, (tuple, list)):
        what = (f"an empty {type(eval_set).__name__}" if not eval_set else
                f"a {type(eval_set).__name__} of {len(eval_set)} items, not all of them "
                "such tuples")
        raise ValueError(f"{form}; got {what}")
    else:
        raise ValueError(f"{form}; got {type(eval_set).__name__}")
    if eval_names is None:
        names = [TRAINING if s[0] is X and s[1] is y else f"valid_{i}"
                 for i, s in enumerate(sets)]
    else:
        if isinstance(eval_names, str) or not isinstance(eval_names, (list, tuple)):
            raise ValueError(f"eval_names must be a list of strings, one per evaluation "
                             f"set, got {eval_names!r}")
        names = list(eval_names)
        if len(names) != len(sets) or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"eval_names must name each of the {len(sets)} evaluation "
                             f"set(s) with a non-empty string, got {eval_names!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"the evaluation sets' names must differ, got {names!r}")
    return list(zip(names, sets))


def watched_position(names, is_training):
    """The position of the evaluation set that early stopping watches and
    ``validation_score_`` holds the loss of: the last set that is not the training
    data (XGBoost's rule, the last; LightGBM's, not the training data), or the last
    set where every set is the training data (as a single ``eval_set=(X, y)`` was
    watched before sets had names)."""
    for i in range(len(names) - 1, -1, -1):
        if not is_training[i]:
            return i
    return len(names) - 1


def checked_eval_sets(eval_set, eval_names, X, y, check):
    """(names, checked sets, the names in the order given) of ``fit``'s ``eval_set``
    and ``eval_names`` (None, None, None without a set), the set early stopping
    watches (:func:`watched_position`) moved last, each set checked by
    ``check(tuple)`` (an error of one of several sets names it).

    Raises
    ------
    ValueError
        As :func:`split_eval_sets`, or naming the set ``check`` refused.
    """
    named = split_eval_sets(eval_set, eval_names, X, y)
    if named is None:
        return None, None, None
    given_order = [n for n, _ in named]
    watched = watched_position(given_order, [s[0] is X and s[1] is y for _, s in named])
    named = named[:watched] + named[watched + 1:] + [named[watched]]
    checked = []
    for name, s in named:
        try:
            checked.append(check(s))
        except ValueError as exc:
            if len(named) == 1:
                raise
            raise ValueError(f"eval_set {name!r}: {exc}") from None
    return [n for n, _ in named], checked, given_order


# ------------------------------------------------------------------ metrics
def _metric_loss(ev, codes, raw, w):
    return ev.loss.score_factor * ev.loss.loss(codes, raw, w)


def _metric_log_loss(ev, codes, raw, w):
    # scikit-learn's log_loss: the probabilities clipped to [eps, 1 - eps], the
    # (weighted) mean of -log p of each row's class; without its input checks.
    # (the kernel's log, rows in order: that of gbc_core.metrics.log_loss, y = 1.)
    from . import _leaves

    p = np.ascontiguousarray(ev.proba(raw)[np.arange(codes.shape[0]), codes])
    total, weight = _leaves.proba_log_loss(np.ones(p.shape[0]), p,
                                           None if w is None else np.ascontiguousarray(w),
                                           np.finfo(np.float64).eps)
    return total / weight


def _metric_roc_auc(ev, codes, raw, w):
    from .metrics import roc_auc, roc_auc_ovr

    present = np.unique(codes)
    if present.size < ev.K:
        return np.nan  # (scikit-learn's roc_auc_score refuses it)
    if ev.K == 2:
        return roc_auc(codes, raw[:, 0], w)
    return roc_auc_ovr(codes, ev.proba(raw), w)


def _metric_accuracy(ev, codes, raw, w):
    return float(np.average(ev.loss.decision(raw) == codes, weights=w))


def _metric_error(ev, codes, raw, w):
    return 1.0 - _metric_accuracy(ev, codes, raw, w)


#: Each metric of ``eval_metric`` (``_params.EVAL_METRICS``), computed from the raw
#: scores of a set's rows (n_rows, n_outputs), their class codes and weights.
METRICS = {
    "loss": _metric_loss,            # the fit's loss, in validation_score_'s units
    "log_loss": _metric_log_loss,    # as sklearn.metrics.log_loss of the probabilities
    "roc_auc": _metric_roc_auc,      # binary: of F; more classes: macro one-vs-rest
    "accuracy": _metric_accuracy,
    "error": _metric_error,          # 1 - accuracy
}
assert tuple(METRICS) == EVAL_METRICS


def metric_names(eval_metric):
    """The metric names of an ``eval_metric`` value, in order (None: the loss)."""
    if eval_metric is None:
        return ["loss"]
    return [eval_metric] if isinstance(eval_metric, str) else list(eval_metric)


def _fast_roc_auc(ev, codes, raw, w):
    return _metric_roc_auc(ev, codes, raw, w) if ev.K == 2 else None


def _fast_roc_auc_ovr(ev, codes, raw, w):
    return _metric_roc_auc(ev, codes, raw, w) if ev.K > 2 else None


def _fast_neg_log_loss(ev, codes, raw, w):
    return -_metric_log_loss(ev, codes, raw, w)


#: The scorers computed from the raw scores without scikit-learn's scorer (whose
#: checks cost more than the metric on a small set): the value scikit-learn's
#: scorer gives on the model (to rounding), or None where it is left to the scorer
#: (``roc_auc`` of more than two classes: its error; ``roc_auc_ovr`` of two: AUC of
#: the probabilities, whose rounding to 1 ties rows the raw scores do not).
FAST_SCORERS = {
    "roc_auc": _fast_roc_auc,        # the decision function's AUC
    "roc_auc_ovr": _fast_roc_auc_ovr,
    "accuracy": _metric_accuracy,
    "neg_log_loss": _fast_neg_log_loss,
}


def scorer_of(scoring):
    """(name in ``evals_result_``, scikit-learn scorer, fast metric or None) of
    ``scoring``, or None for ``"loss"``. None is the estimator's default score,
    accuracy (scikit-learn's rule); a callable is named ``"score"``. The fast
    metric (:data:`FAST_SCORERS`) computes the scorer's value from the raw scores
    of the rows (None: call the scorer).

    Raises
    ------
    ValueError
        A string that is not a scikit-learn scorer's name.
    """
    if isinstance(scoring, str) and scoring == "loss":
        return None
    from sklearn.metrics import get_scorer, get_scorer_names

    if scoring is None:
        return "accuracy", get_scorer("accuracy"), FAST_SCORERS["accuracy"]
    if isinstance(scoring, str):
        if scoring not in get_scorer_names():
            raise ValueError(
                f"scoring={scoring!r} is not a scikit-learn scorer name: use 'loss' (the "
                "default), None (accuracy), a callable scorer(estimator, X, y) or one of "
                "sklearn.metrics.get_scorer_names(), such as 'roc_auc', 'accuracy', "
                "'neg_log_loss', 'balanced_accuracy', 'roc_auc_ovr'")
        return scoring, get_scorer(scoring), FAST_SCORERS.get(scoring)
    if not callable(scoring):
        raise ValueError(f"scoring must be 'loss', None, a scorer's name or a callable, "
                         f"got {scoring!r}")
    return "score", scoring, None


# -------------------------------------------------------------- the estimator
class _StagedEstimator:
    """The estimator of the iterations fitted so far, as a scorer sees it.

    Its predictions on the watched set's rows (the very array given to the scorer)
    are the running raw scores of the fit: no tree is walked. On any other rows it
    builds the model of the iterations so far once (the estimator at this
    iteration) and predicts with it; so does any other attribute (``booster_``,
    ``estimators_``, ...): a scorer that uses them costs a copy of the trees so far
    per iteration.
    """

    _estimator_type = "classifier"

    def __init__(self, evaluation, raw, current):
        self._evaluation = evaluation
        self._raw_scores = raw
        self._current = current
        self._model = None
        self.classes_ = evaluation.classes

    def __sklearn_tags__(self):
        return self._evaluation.tags

    def _fitted(self):
        if self._model is None:
            self._model = self._evaluation.estimator_of(self._current())
        return self._model

    def _raw(self, X):
        if X is self._evaluation.scored_X:
            return self._raw_scores.copy()
        return self._fitted().booster_.predict_raw(X)

    def decision_function(self, X):
        raw = self._raw(X)
        return raw[:, 0] if raw.shape[1] == 1 else raw

    def predict_proba(self, X):
        return self._evaluation.proba(self._raw(X))

    def predict_log_proba(self, X):
        return self._evaluation.loss.log_proba(self._raw(X))

    def predict(self, X):
        return self.classes_[self._evaluation.loss.decision(self._raw(X))]

    def score(self, X, y, sample_weight=None):
        from sklearn.metrics import accuracy_score

        return accuracy_score(y, self.predict(X), sample_weight=sample_weight)

    def __getattr__(self, name):
        if name.startswith("__") or name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._fitted(), name)


class Evaluation:
    """The ``evaluate`` hook of ``_boosting.boost``: after each iteration, the
    metrics of every evaluation set, in a fixed order (the sets in their order,
    the metrics in ``eval_metric``'s), and the ``scoring`` of the watched set.

    Parameters
    ----------
    names : list of str
        The sets' names, in the order of the raw scores ``boost`` keeps.
    sets : list of tuple (X, codes, weights or None)
        The sets as the fit checked them (X float32 C order or CSR).
    metrics : list of str
        Names of :data:`METRICS`.
    scorer : tuple (name, scorer, fast metric or None) or None
        What ``scoring`` watches (:func:`scorer_of`), on the set ``watched``.
    watched : int or None
        Position of the set that early stopping watches.
    loss : LossFunction
        The fit's loss (its link gives the probabilities and labels).
    classes : ndarray
        The labels (the scorer is given labels, as scikit-learn's HGB does).
    estimator_of : callable
        ``estimator_of(ensemble)``: a fitted estimator of an Ensemble (for a scorer
        that predicts other rows or reads the model).
    tags : object
        The estimator's ``__sklearn_tags__()`` (a classifier's).
    n_threads : int
    """

    def __init__(self, names, sets, metrics, scorer, watched, loss, classes,
                 estimator_of, tags, n_threads):
        self.names = names
        self.sets = sets
        self.metrics = metrics
        self.scorer = scorer
        self.watched = watched
        self.loss = loss
        self.K = classes.size
        self.classes = classes
        self.estimator_of = estimator_of
        self.tags = tags
        self.n_threads = n_threads
        self.scored_X = None if watched is None else sets[watched][0]
        self._labels_of_watched = None if watched is None else classes[sets[watched][1]]

    def proba(self, raw):
        return self.loss.proba(raw, self.n_threads)

    def __call__(self, record, raws, current):
        evals = record.evals
        for i, (name, (X, codes, w), raw) in enumerate(zip(self.names, self.sets, raws)):
            out = evals.setdefault(name, {})
            for metric in self.metrics:
                if metric == "loss" and i == self.watched:
                    value = record.validation_score[-1]  # the same sum
                elif X.shape[0] == 0 and metric != "loss":
                    value = np.nan
                else:
                    value = METRICS[metric](self, codes, raw, w)
                out.setdefault(metric, []).append(float(value))
            if self.scorer is not None and i == self.watched:
                key, scorer, fast = self.scorer
                value = None if fast is None else fast(self, codes, raw, w)
                if value is None:
                    view = _StagedEstimator(self, raw, current)
                    y = self._labels_of_watched
                    value = (scorer(view, X, y) if w is None
                             else scorer(view, X, y, sample_weight=w))
                if not isinstance(value, numbers.Real):
                    raise TypeError(f"scoring: the scorer returned {value!r}, expected a "
                                    "number")
                if not np.isfinite(value):
                    raise ValueError(
                        f"scoring={key!r} is {value} on the validation data "
                        f"{self.names[i]!r} after {len(record.validation_score)} "
                        "iteration(s): early stopping cannot rank iterations by it (a "
                        "ROC AUC needs both classes in the validation rows, every "
                        "class for one-vs-rest); use other validation data or another "
                        "scoring")
                scores = out.setdefault(key, [])
                if key in self.metrics:
                    scores[-1] = float(value)  # one value per iteration
                else:
                    scores.append(float(value))


def evals_result(record, order=None):
    """``evals_result_`` of a fit's record: name -> metric -> list of floats, the
    sets in ``order`` (their names as given: the fit evaluates the watched set
    last)."""
    evals = record.evals or {}
    names = order if order is not None and set(order) == set(evals) else list(evals)
    return {name: {metric: list(values) for metric, values in evals[name].items()}
            for name in names}

