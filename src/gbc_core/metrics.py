"""Evaluation metrics (NumPy and the loss kernels).

Logarithms and exponentials are C's (in ``_leaves.pyx``), never NumPy's: NumPy
picks its ``log``/``exp`` implementation by CPU at run time, and their last bits
differ between processors. Sums of weights are NumPy's ``add`` reductions (pairwise
summation, in an order fixed by the array's length, the same on every CPU).
"""

import numpy as np

from . import _leaves


def log_loss(y_true, proba, sample_weight=None, eps=None):
    """Weighted mean log-loss of probabilities ``proba`` of the positive class.

    Parameters
    ----------
    y_true : array-like of {0, 1}, shape (n_samples,)
        The labels.
    proba : array-like of shape (n_samples,)
        Probabilities of the positive class, in [0, 1].
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the rows (None: all 1).
    eps : float, default=None
        Clip probabilities to ``[eps, 1 - eps]`` (default: float64 machine epsilon).

    Returns
    -------
    float
        The weighted mean of -(y log p + (1 - y) log(1 - p)).

    Examples
    --------
    >>> from gbc_core.metrics import log_loss
    >>> round(log_loss([1, 0], [0.8, 0.4]), 4)
    0.367
    """
    y = np.ascontiguousarray(y_true, dtype=np.float64).reshape(-1)
    p = np.ascontiguousarray(proba, dtype=np.float64).reshape(-1)
    if p.shape != y.shape:
        raise ValueError(f"y_true and proba must have the same length, got {y.shape[0]} "
                         f"and {p.shape[0]}")
    w = None
    if sample_weight is not None:
        w = np.ascontiguousarray(sample_weight, dtype=np.float64).reshape(-1)
        if w.shape != y.shape:
            raise ValueError(f"sample_weight must have length {y.shape[0]}, got {w.shape[0]}")
    eps = np.finfo(np.float64).eps if eps is None else float(eps)
    total, weight = _leaves.proba_log_loss(y, p, w, eps)
    if weight == 0:
        raise ZeroDivisionError("the weights sum to zero: the mean log-loss is undefined")
    return total / weight


def log_loss_from_raw(y_true, raw, sample_weight=None):
    """Weighted mean log-loss computed stably from raw scores (no clipping needed).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        {0, 1} for raw scores of shape (n_samples,) (F of the positive class); class
        codes 0 .. K - 1 for raw scores of shape (n_samples, K), K >= 3 (softmax).
    raw : array-like of shape (n_samples,) or (n_samples, K)
        Raw scores F (``decision_function``).
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the rows (None: all 1).

    Returns
    -------
    float
        The weighted mean log-loss of sigma(F) (softmax(F) for K classes).

    Examples
    --------
    >>> from gbc_core.metrics import log_loss_from_raw
    >>> round(log_loss_from_raw([1, 0], [0.0, 0.0]), 4)   # p = 0.5: log 2
    0.6931
    """
    f = np.asarray(raw, dtype=np.float64)
    w = None if sample_weight is None else np.ascontiguousarray(sample_weight, dtype=np.float64)
    if f.ndim == 2 and f.shape[1] > 1:
        codes = np.ascontiguousarray(y_true, dtype=np.int32)
        return float(_leaves.multinomial_log_loss(codes, np.ascontiguousarray(f), w))
    y = np.ascontiguousarray(y_true, dtype=np.float64)
    return float(_leaves.weighted_log_loss(y, np.ascontiguousarray(f.reshape(-1)), w))


def roc_auc(y_true, score, sample_weight=None):
    """Area under the ROC curve (ties get half credit), optionally weighted.

    Parameters
    ----------
    y_true : array-like of {0, 1}, shape (n_samples,)
        The labels.
    score : array-like of shape (n_samples,)
        Scores ranking the rows (probabilities or raw scores of the positive class).
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the rows (None: all 1).

    Returns
    -------
    float
        The probability that a random positive row scores above a random negative
        one (weighted; a tie counts one half).

    Examples
    --------
    >>> from gbc_core.metrics import roc_auc
    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    y = np.asarray(y_true).astype(bool)
    s = np.asarray(score, dtype=np.float64)
    w = np.ones(y.shape[0]) if sample_weight is None else np.asarray(sample_weight, float)
    if y.all() or not y.any():
        raise ValueError("roc_auc needs both classes in y_true")
    order = np.argsort(s, kind="mergesort")
    s, y, w = s[order], y[order], w[order]
    # Group tied scores.
    bounds = np.flatnonzero(np.diff(s)) + 1
    starts = np.concatenate([[0], bounds])
    pos = np.add.reduceat(np.where(y, w, 0.0), starts)
    neg = np.add.reduceat(np.where(~y, w, 0.0), starts)
    if not (pos.sum() > 0 and neg.sum() > 0):
        raise ValueError("roc_auc needs both classes in y_true with a positive total weight")
    neg_below = np.concatenate([[0.0], np.cumsum(neg)[:-1]])
    auc = np.sum(pos * (neg_below + 0.5 * neg))
    return float(auc / (pos.sum() * neg.sum()))


def roc_auc_ovr(codes, proba, sample_weight=None, *, return_per_class=False):
    """Macro average of the one-vs-rest ROC AUCs of the classes.

    Class k's AUC ranks the rows by ``proba[:, k]`` against "is class k"; classes
    that do not occur in ``codes``, or are all of it, have no AUC and are left out
    of the average (scikit-learn's ``roc_auc_score(multi_class="ovr")`` needs every
    class present).

    Parameters
    ----------
    codes : array-like of shape (n_samples,)
        Class codes 0 .. K - 1.
    proba : array-like of shape (n_samples, K)
        Class probabilities (or any scores ranking the rows for each class).
    sample_weight : array-like of shape (n_samples,), default=None
    return_per_class : bool, default=False
        Also return the AUC of each class.

    Returns
    -------
    auc : float or None
        The macro average; None when no class has an AUC.
    per_class : ndarray of shape (K,)
        Only with ``return_per_class``: each class's AUC, NaN for a class without one.

    Examples
    --------
    >>> from gbc_core.metrics import roc_auc_ovr
    >>> proba = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]]
    >>> roc_auc_ovr([0, 1, 2, 1], proba)
    1.0
    """
    codes = np.asarray(codes)
    proba = np.asarray(proba, dtype=np.float64)
    per_class = np.full(proba.shape[1], np.nan)
    for k in range(proba.shape[1]):
        is_k = codes == k
        if is_k.any() and not is_k.all():
            per_class[k] = roc_auc(is_k, proba[:, k], sample_weight)
    defined = per_class[~np.isnan(per_class)]
    auc = float(np.mean(defined)) if defined.size else None
    return (auc, per_class) if return_per_class else auc


def accuracy(y_true, y_pred, sample_weight=None):
    """Weighted fraction of correct predictions.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        The labels.
    y_pred : array-like of shape (n_samples,)
        The predicted labels.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the rows (None: all 1).

    Returns
    -------
    float

    Examples
    --------
    >>> from gbc_core.metrics import accuracy
    >>> accuracy(["a", "b", "b"], ["a", "b", "a"], sample_weight=[1, 1, 2])
    0.5
    """
    return float(np.average(np.asarray(y_true) == np.asarray(y_pred), weights=sample_weight))


def confusion_matrix(y_true, y_pred, labels):
    """Counts ``C[i, j]`` of samples of class ``labels[i]`` predicted as ``labels[j]``
    (samples whose true or predicted label is not in ``labels`` are not counted).

    One pass over the samples whatever the number of labels: each label becomes its
    index in ``labels``, then the pairs are counted (``confusion_from_codes``).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        The labels.
    y_pred : array-like of shape (n_samples,)
        The predicted labels.
    labels : array-like of shape (n_classes,)
        The classes, in the order of the rows and columns.

    Returns
    -------
    ndarray of int64, shape (n_classes, n_classes)
        Rows: true class; columns: predicted class.

    Examples
    --------
    >>> from gbc_core.metrics import confusion_matrix
    >>> confusion_matrix(["a", "b", "b"], ["a", "b", "a"], labels=["a", "b"]).tolist()
    [[1, 0], [1, 1]]
    """
    labels = np.asarray(labels)
    return confusion_from_codes(_label_indices(y_true, labels), _label_indices(y_pred, labels),
                                labels.shape[0])


def _label_indices(values, labels):
    """The index in ``labels`` of each of ``values`` (matched by ``==``, as a dict
    matches keys), -1 for a value that is not a label."""
    values = np.asarray(values).reshape(-1)
    index = {}
    for k, label in enumerate(labels.tolist()):
        index.setdefault(label, k)
    try:
        distinct, inverse = np.unique(values, return_inverse=True)
    except TypeError:  # objects that do not sort: one lookup per value
        return np.fromiter((index.get(v, -1) for v in values.tolist()), dtype=np.intp,
                           count=values.shape[0])
    codes = np.array([index.get(v, -1) for v in distinct.tolist()], dtype=np.intp)
    return codes[inverse.reshape(-1)]


def confusion_from_codes(true_codes, pred_codes, n_classes):
    """The confusion matrix of class codes.

    One ``np.bincount`` of the pairs, linear in the samples; the matrix itself holds
    n_classes**2 counts.

    Parameters
    ----------
    true_codes : array-like of int, shape (n_samples,)
        True class codes in [0, n_classes); a negative code is not counted.
    pred_codes : array-like of int, shape (n_samples,)
        Predicted class codes, likewise.
    n_classes : int
        The number of classes.

    Returns
    -------
    ndarray of int64, shape (n_classes, n_classes)

    Examples
    --------
    >>> from gbc_core.metrics import confusion_from_codes
    >>> confusion_from_codes([0, 1, 1, -1], [0, 1, 0, 0], 2).tolist()
    [[1, 0], [1, 1]]
    """
    true_codes = np.asarray(true_codes, dtype=np.int64).reshape(-1)
    pred_codes = np.asarray(pred_codes, dtype=np.int64).reshape(-1)
    keep = (true_codes >= 0) & (pred_codes >= 0)
    if not keep.all():
        true_codes, pred_codes = true_codes[keep], pred_codes[keep]
    pairs = true_codes * n_classes + pred_codes
    counts = np.bincount(pairs, minlength=n_classes * n_classes)
    return counts.astype(np.int64).reshape(n_classes, n_classes)
