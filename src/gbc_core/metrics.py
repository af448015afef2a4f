"""Evaluation metrics (NumPy and the loss kernels).

Logarithms and exponentials are the loss kernels' own (``_leaves.pyx``:
``_exp.h``, fdlibm's methods, the same bits on every CPU), never NumPy's: NumPy
picks its ``log``/``exp`` implementation by CPU at run time, and their last bits
differ between processors. (The one exception: ``log_loss``'s log(1 - p) of a row
of class 0 is the C library's ``log1p``, a metric's number that no model depends
on.) Sums of weights are NumPy's ``add`` reductions (pairwise
summation, in an order fixed by the array's length, the same on every CPU).
"""

import numpy as np

from . import _leaves
from ._validation import check_sample_weight as _check_sample_weight

__all__ = [
    "log_loss",
    "log_loss_from_raw",
    "roc_auc",
    "roc_auc_ovr",
    "accuracy",
    "confusion_matrix",
    "confusion_from_codes",
]


def _column(values, name, dtype=None):
    """``values`` as a 1-D array (a column vector of shape (n, 1) too): a clear error
    for any other shape."""
    arr = np.asarray(values, dtype=dtype)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def _same_length(n, **arrays):
    """A clear error unless every array given (None: skipped) has ``n`` rows."""
    for name, arr in arrays.items():
        if arr is not None and arr.shape[0] != n:
            raise ValueError(f"{name} must have {n} rows (one per sample), got "
                             f"{arr.shape[0]}")


def _weights(sample_weight, n):
    """The float64 weights of ``n`` samples (``_check_sample_weight``'s rules), or
    None; weights that are all zero leave the mean undefined (ZeroDivisionError)."""
    if sample_weight is None:
        return None
    w = _column(sample_weight, "sample_weight", np.float64)
    _same_length(n, sample_weight=w)
    if not n:
        return w
    if not w.any():
        raise ZeroDivisionError("the weights sum to zero: the mean is undefined")
    return _check_sample_weight(w, n)


def _binary(y_true):
    """The {0, 1} (or boolean) labels ``y_true`` as float64."""
    y = _column(y_true, "y_true")
    if y.dtype.kind not in "biuf" or not np.isin(y, (0, 1)).all():
        shown = np.unique(y[~np.isin(y, (0, 1))])[:5] if y.dtype.kind in "biuf" else y[:5]
        raise ValueError(f"y_true must hold the labels 0 and 1 (or booleans), got "
                         f"{shown.tolist()!r}")
    return y.astype(np.float64)


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
    y = _binary(y_true)
    p = _column(proba, "proba", np.float64)
    _same_length(y.shape[0], proba=p)
    if not ((p >= 0) & (p <= 1)).all():
        raise ValueError("proba must hold probabilities in [0, 1] (no NaN)")
    w = _weights(sample_weight, y.shape[0])
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
    if f.ndim not in (1, 2) or f.ndim == 2 and f.shape[1] == 2:
        raise ValueError(f"raw must have shape (n_samples,) or (n_samples, K) with K >= 3 "
                         f"(K = 1: one column of F), got {f.shape}")
    if np.isnan(f).any():
        raise ValueError("raw contains NaN")
    w = _weights(sample_weight, f.shape[0])
    if f.ndim == 2 and f.shape[1] > 1:
        codes = _column(y_true, "y_true")
        _same_length(f.shape[0], y_true=codes)
        if codes.dtype.kind not in "iu" or not ((codes >= 0) & (codes < f.shape[1])).all():
            raise ValueError(f"y_true must hold class codes 0 .. {f.shape[1] - 1} for raw "
                             f"scores of {f.shape[1]} classes")
        return float(_leaves.multinomial_log_loss(codes.astype(np.int32),
                                                  np.ascontiguousarray(f), w))
    y = _binary(y_true)
    f = np.ascontiguousarray(f.reshape(-1))
    _same_length(f.shape[0], y_true=y)
    return float(_leaves.weighted_log_loss(y, f, w))


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
    y = _binary(y_true).astype(bool)
    s = _column(score, "score", np.float64)
    _same_length(y.shape[0], score=s)
    if np.isnan(s).any():
        raise ValueError("score contains NaN")
    w = _weights(sample_weight, y.shape[0])
    w = np.ones(y.shape[0]) if w is None else w
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
    codes = _column(codes, "codes")
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2:
        raise ValueError(f"proba must be 2-D (n_samples, K), got shape {proba.shape}")
    _same_length(codes.shape[0], proba=proba)
    if codes.dtype.kind not in "iu":
        raise ValueError(f"codes must be integer class codes 0 .. K - 1, got dtype "
                         f"{codes.dtype}")
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
    y_true = _column(y_true, "y_true")
    y_pred = _column(y_pred, "y_pred")
    _same_length(y_true.shape[0], y_pred=y_pred)
    w = _weights(sample_weight, y_true.shape[0])
    return float(np.average(y_true == y_pred, weights=w))


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
        Predicted class codes, likewise (a code >= n_classes is a ValueError).
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
    true_codes = _column(true_codes, "true_codes", np.int64)
    pred_codes = _column(pred_codes, "pred_codes", np.int64)
    _same_length(true_codes.shape[0], pred_codes=pred_codes)
    if (true_codes >= n_classes).any() or (pred_codes >= n_classes).any():
        raise ValueError(f"class codes must be below n_classes = {n_classes}")
    keep = (true_codes >= 0) & (pred_codes >= 0)
    if not keep.all():
        true_codes, pred_codes = true_codes[keep], pred_codes[keep]
    pairs = true_codes * n_classes + pred_codes
    counts = np.bincount(pairs, minlength=n_classes * n_classes)
    return counts.astype(np.int64).reshape(n_classes, n_classes)
