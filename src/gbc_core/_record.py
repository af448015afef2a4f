"""What a fit measured (``FitRecord``): part of a fitted model, beside its trees.

The model layer holds it (``Booster`` reads and writes it, the model file stores
it); the fit loop (``_boosting.boost``) fills it. Kept apart from the fit loop so
that a model scores without importing the training code.
"""


class FitRecord:
    """What a fit measured, one entry per iteration.

    Parameters
    ----------
    train_score, validation_score, oob_scores, oob_improvement : sequence of float or None
        The attributes below (copied to lists).
    best_iteration : int or None
        As below.
    evals : dict or None
        As below (kept as given).

    Attributes
    ----------
    train_score : list of float or None
        Weighted loss of the in-bag training rows after each iteration, times the
        loss's ``score_factor`` (scikit-learn's ``train_score_``; None: not
        recorded, e.g. a model read from a file that does not hold it).
    validation_score : list of float or None
        Weighted loss of the validation rows after each iteration, in the same
        units (None: no validation data).
    oob_scores, oob_improvement : list of float or None
        With ``subsample < 1``: the weighted loss of the out-of-bag rows of each
        iteration after it, and its decrease over the iteration, in the same units
        (scikit-learn's ``oob_scores_`` and ``oob_improvement_``; 0 for the
        iterations of an earlier fit without subsampling, as there). None
        otherwise.
    best_iteration : int or None
        Set by early stopping: the number of iterations kept.
    evals : dict or None
        The evaluation metrics of a fit with evaluation sets: set name -> metric
        name -> one value per iteration run (the estimator's ``evals_result_``;
        not part of a model file). None: not recorded.

    Examples
    --------
    >>> from gbc_core import FitRecord
    >>> record = FitRecord([1.2, 1.1], validation_score=[1.25, 1.2])
    >>> record.train_score, record.best_iteration
    ([1.2, 1.1], None)
    """

    def __init__(self, train_score=(), validation_score=None, oob_scores=None,
                 oob_improvement=None, best_iteration=None, evals=None):
        self.train_score = None if train_score is None else list(train_score)
        self.validation_score = None if validation_score is None else list(validation_score)
        self.oob_scores = None if oob_scores is None else list(oob_scores)
        self.oob_improvement = None if oob_improvement is None else list(oob_improvement)
        self.best_iteration = best_iteration
        self.evals = evals
