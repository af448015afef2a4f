"""The losses: how raw scores become probabilities, and what each tree fits.

A loss object knows its number of classes and of raw scores per row
(``n_outputs``), the initial raw scores, the loss value, the probabilities and the
predicted class of raw scores, and starts the per-fit state that the boosting loop
drives (``start``): the residuals each tree is grown on, the leaf values of a grown
tree and the update of the raw scores. The numbers are computed by the kernels of
``_leaves.pyx``.

- :class:`BinomialLoss`: two classes, the paper's model: one raw score F,
  p = sigma(F), trees fitted to r = y - p, leaf values gamma_j = sum w r /
  sum w p (1 - p) (eq. 1), F += eta * gamma.
- :class:`MultinomialLoss`: K >= 3 classes, K raw scores, p = softmax(F), one tree
  per class and iteration fitted to r_k = [y = k] - p_k (all K from the
  probabilities at the start of the iteration), leaf values (K - 1)/K sum w r_k /
  sum w p_k (1 - p_k), F_k += eta * gamma: scikit-learn's multinomial
  GradientBoostingClassifier.

The state ``start`` returns holds the training rows' raw scores ``raw``,
probabilities ``prob`` and residuals ``residual`` (per output) and offers
``tree_target(k)`` (the row statistics and residuals tree k is grown on),
``update(k, nodes, leaf_of_row, sample_mask, learning_rate)`` (sets the leaf values of
a grown tree and adds it to the raw scores), ``finish_iteration(sample_mask)`` (the
in-bag loss after an iteration) and ``held_out_loss(mask)``.

A new loss is a class with the same methods (see ``docs/architecture.md``).
"""

import numpy as np

from . import _leaves
from ._common import ROW_STAT_DTYPE

_EPS = np.finfo(np.float64).eps


def loss_for(n_classes):
    """The loss of a classifier with ``n_classes`` classes (2: binomial, more:
    multinomial)."""
    if n_classes == 2:
        return BinomialLoss()
    if n_classes >= 3:
        return MultinomialLoss(n_classes)
    raise ValueError(f"a classifier needs at least 2 classes, got {n_classes}")


def _weights(sample_weight):
    return None if sample_weight is None else np.ascontiguousarray(sample_weight,
                                                                   dtype=np.float64)


def _prior(y, sample_weight, n_classes, n_outputs):
    """The initial raw scores of ``init="prior"`` (shape (n_outputs,)): the class
    weights summed in row order and their logarithms taken by the kernel (C's
    ``log``), so that F0 does not depend on the CPU."""
    codes = np.ascontiguousarray(y, dtype=np.int32)
    if codes.size and not (0 <= codes.min() and codes.max() < n_classes):
        raise ValueError(f"class codes must lie in 0 .. {n_classes - 1}")
    sums, total = _leaves.class_weight_sums(codes, _weights(sample_weight), n_classes)
    out = np.empty(n_outputs, dtype=np.float64)
    _leaves.prior_raw(sums, total, _EPS, out)
    return out


class BinomialLoss:
    """The log-loss of two classes with one raw score per row (the paper's model)."""

    n_classes = 2
    n_outputs = 1

    def initial_raw(self, y, sample_weight, init):
        """F0: 0 (``init="zero"``, the paper's) or the log-odds of the weighted class
        frequencies (``"prior"``; 0 when a class has no weight). Shape (1,)."""
        if init == "zero":
            return np.zeros(1)
        return _prior(y, sample_weight, 2, 1)

    def start(self, y, sample_weight, raw, n_threads):
        """The state of a fit on class codes ``y`` from raw scores ``raw`` (n, 1)."""
        return _BinomialFit(y, _weights(sample_weight), raw, n_threads)

    def loss(self, y, raw, sample_weight=None):
        """Weighted mean log-loss of raw scores ``raw`` (n, 1) for class codes ``y``."""
        return float(_leaves.weighted_log_loss(
            np.ascontiguousarray(y, dtype=np.float64),
            np.ascontiguousarray(raw[:, 0], dtype=np.float64), _weights(sample_weight)))

    def proba(self, raw, n_threads=1):
        """Class probabilities (n, 2): column 1 is p = sigma(F) (paper eq. 3)."""
        out = np.empty((raw.shape[0], 2), dtype=np.float64)
        _leaves.proba_from_raw(np.ascontiguousarray(raw[:, 0], dtype=np.float64), out,
                               n_threads)
        return out

    def log_proba(self, raw):
        """log of :meth:`proba`, computed from F without overflow or log(0)."""
        out = np.empty((raw.shape[0], 2), dtype=np.float64)
        _leaves.binomial_log_proba(np.ascontiguousarray(raw[:, 0], dtype=np.float64), out)
        return out

    def decision(self, raw):
        """Class codes of raw scores: 1 where F >= 0 (p >= 0.5), as scikit-learn."""
        return (raw[:, 0] >= 0).astype(np.intp)


class _BinomialFit:
    """Raw scores, probabilities and residuals of the training rows during a fit."""

    def __init__(self, y, sample_weight, raw, n_threads):
        n = y.shape[0]
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.sample_weight = sample_weight
        self.n_threads = n_threads
        self.raw = np.ascontiguousarray(raw[:, 0], dtype=np.float64).copy()
        self.prob = np.empty(n, dtype=np.float64)
        self.residual = np.empty(n, dtype=np.float64)
        self.row_stats = np.empty(n, dtype=ROW_STAT_DTYPE)
        self.last_loss = 0.0
        # p = sigma(F0), r = y - p and the row statistics (Algorithm 1, lines 1-3, 6).
        _leaves.init_state(self.y, sample_weight, self.raw, self.prob, self.residual,
                           self.row_stats)

    def tree_target(self, k):
        """(row statistics w * r and w, residuals r) the tree of output k fits."""
        return self.row_stats, self.residual

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate):
        """Leaf values of the grown tree (``nodes``, updated in place) and the
        update of F, p and r that follows, in one fused pass."""
        self.last_loss = _leaves.boosting_update(
            nodes, leaf_of_row, sample_mask, self.y, self.sample_weight, learning_rate,
            self.raw, self.prob, self.residual, self.row_stats, self.n_threads)

    def finish_iteration(self, sample_mask):
        """The weighted log-loss of the in-bag rows after the iteration."""
        return self.last_loss

    def held_out_loss(self, held_out):
        """Weighted log-loss of the rows where ``held_out`` is True."""
        w = None if self.sample_weight is None else self.sample_weight[held_out]
        return float(_leaves.weighted_log_loss(self.y[held_out], self.raw[held_out], w))


class MultinomialLoss:
    """The log-loss of K >= 3 classes with one raw score per class (softmax)."""

    def __init__(self, n_classes):
        if n_classes < 3:
            raise ValueError(f"the multinomial loss needs 3 or more classes, got {n_classes}")
        self.n_classes = n_classes
        self.n_outputs = n_classes

    def initial_raw(self, y, sample_weight, init):
        """F0: zeros (``init="zero"``) or ``"prior"``: log p_k - mean_j log p_j with p
        the weighted class frequencies clipped to [eps, 1 - eps] (scikit-learn's
        prior). Shape (K,)."""
        if init == "zero":
            return np.zeros(self.n_classes)
        return _prior(y, sample_weight, self.n_classes, self.n_classes)

    def start(self, y, sample_weight, raw, n_threads):
        """The state of a fit on class codes ``y`` from raw scores ``raw`` (n, K)."""
        return _MultinomialFit(self.n_classes, y, _weights(sample_weight), raw, n_threads)

    def loss(self, y, raw, sample_weight=None):
        """Weighted mean of -log p_y for raw scores ``raw`` (n, K)."""
        return float(_leaves.multinomial_log_loss(
            np.ascontiguousarray(y, dtype=np.int32), np.ascontiguousarray(raw, dtype=np.float64),
            _weights(sample_weight)))

    def proba(self, raw, n_threads=1):
        """Class probabilities (n, K): softmax of the raw scores."""
        out = np.empty(raw.shape, dtype=np.float64)
        _leaves.softmax(np.ascontiguousarray(raw, dtype=np.float64), out, n_threads)
        return out

    def log_proba(self, raw):
        """log of :meth:`proba`: F_k - log sum_j exp(F_j), without log(0)."""
        out = np.empty(raw.shape, dtype=np.float64)
        _leaves.multinomial_log_proba(np.ascontiguousarray(raw, dtype=np.float64), out)
        return out

    def decision(self, raw):
        """Class codes of raw scores: the largest score (the first on ties)."""
        return np.argmax(raw, axis=1)


class _MultinomialFit:
    """Per-class raw scores, probabilities and residuals of the training rows
    (arrays of shape (K, n_samples): one contiguous row per class)."""

    def __init__(self, n_classes, y, sample_weight, raw, n_threads):
        n = y.shape[0]
        self.y = np.ascontiguousarray(y, dtype=np.int32)
        self.sample_weight = sample_weight
        self.n_threads = n_threads
        self.factor = (n_classes - 1) / n_classes
        self.raw = np.ascontiguousarray(np.asarray(raw, dtype=np.float64).T)
        self.prob = np.empty((n_classes, n), dtype=np.float64)
        self.residual = np.empty((n_classes, n), dtype=np.float64)
        self.row_stats = np.empty(n, dtype=ROW_STAT_DTYPE)
        _leaves.multinomial_state(self.raw, self.y, sample_weight, None, self.prob,
                                  self.residual, n_threads)

    def tree_target(self, k):
        _leaves.row_stats_of(self.residual[k], self.sample_weight, self.row_stats)
        return self.row_stats, self.residual[k]

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate):
        _leaves.multinomial_tree_update(
            nodes, leaf_of_row, sample_mask, self.residual[k], self.prob[k],
            self.sample_weight, self.factor, learning_rate, self.raw[k])

    def finish_iteration(self, sample_mask):
        """Probabilities and residuals of the next iteration; returns the weighted
        log-loss of the in-bag rows."""
        return _leaves.multinomial_state(self.raw, self.y, self.sample_weight,
                                         sample_mask, self.prob, self.residual,
                                         self.n_threads)

    def held_out_loss(self, held_out):
        w = None if self.sample_weight is None else self.sample_weight[held_out]
        return float(_leaves.multinomial_log_loss(
            self.y[held_out], np.ascontiguousarray(self.raw[:, held_out].T), w))
