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
- :class:`ExponentialLoss`: two classes, AdaBoost's loss y e^-F + (1 - y) e^F, one
  raw score F, p = sigma(2F), trees fitted to r = y e^-F - (1 - y) e^F, leaf values
  sum w r / sum w abs(r), F += eta * gamma: scikit-learn's
  ``GradientBoostingClassifier(loss="exponential")``.

Each loss takes the fit's ``leaf_solver``: ``"newton"`` (the leaf values above:
one Newton step, the paper's eq. 1) or ``"exact"`` (each leaf's gamma minimises the
leaf's loss of F + gamma exactly, the learning rate still scaling it; pure leaves
capped; see ``_leaves.pyx`` and ``docs/leaf_solver.md``).

Each loss has a ``name``, the value of the ``loss`` parameter that selects it and
the name a model file stores (``"log_loss"`` for the binomial and the multinomial
log-loss: the number of classes tells them apart; ``"exponential"``).

The state ``start`` returns holds the training rows' raw scores ``raw``,
probabilities ``prob`` and residuals ``residual`` (per output) and offers
``tree_target(k)`` (the row statistics and residuals tree k is grown on; the row
statistics are None for unit weights: the residuals are then w * r),
``update(k, nodes, leaf_of_row, sample_mask, learning_rate)`` (sets the leaf values of
a grown tree and adds it to the raw scores), ``finish_iteration(sample_mask)`` (the
in-bag loss after an iteration) and ``held_out_loss(mask)``.

A fit records its losses in scikit-learn's units (``train_score_``, the out-of-bag
and validation scores): the loss times ``score_factor``, 2 for the binomial
log-loss (scikit-learn reports the deviance, twice the mean log-loss), 1 otherwise.

A new loss is a class with the same methods (see ``docs/architecture.md``).
"""

import numpy as np

from . import _leaves
from ._common import ROW_STAT_DTYPE

_EPS = np.finfo(np.float64).eps


#: The names of the losses (the ``loss`` parameter's values, a model file's ``loss``).
LOSS_NAMES = ("log_loss", "exponential")
#: The leaf solvers (the ``leaf_solver`` parameter's values).
LEAF_SOLVERS = ("newton", "exact")


def _check_solver(leaf_solver):
    if leaf_solver not in LEAF_SOLVERS:
        raise ValueError(f"unknown leaf_solver {leaf_solver!r}; the leaf solvers are "
                         + ", ".join(repr(n) for n in LEAF_SOLVERS))
    return leaf_solver


def loss_for(n_classes, name="log_loss", leaf_solver="newton"):
    """The loss ``name`` of a classifier with ``n_classes`` classes.

    ``"log_loss"``: binomial for 2 classes, multinomial for more;
    ``"exponential"``: 2 classes only (scikit-learn's error otherwise).
    ``leaf_solver``: ``"newton"`` or ``"exact"`` (the leaf values of its fits).

    Raises
    ------
    ValueError
        For an unknown name or leaf solver, fewer than 2 classes, or the
        exponential loss with more than 2 classes.
    """
    _check_solver(leaf_solver)
    if name not in LOSS_NAMES:
        raise ValueError(f"unknown loss {name!r}; the losses are "
                         + ", ".join(repr(n) for n in LOSS_NAMES))
    if n_classes < 2:
        raise ValueError(f"a classifier needs at least 2 classes, got {n_classes}")
    if name == "exponential":
        if n_classes > 2:
            raise ValueError(
                f"loss='{name}' is only suitable for a binary classification problem, "
                f"you have n_classes={n_classes}. Please use loss='log_loss' instead.")
        return ExponentialLoss(leaf_solver)
    if n_classes == 2:
        return BinomialLoss(leaf_solver)
    return MultinomialLoss(n_classes, leaf_solver)


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
    return prior_from_class_weights(sums, n_outputs, total)


def prior_from_class_weights(class_weight, n_outputs, total=None):
    """The initial raw scores of ``init="prior"`` (shape (n_outputs,)) from the
    weight of each class (a distributed fit reduces these sums over its processes);
    ``total`` defaults to their sum in class order. The logarithms are C's (the
    kernel's), so that F0 does not depend on the CPU."""
    class_weight = np.ascontiguousarray(class_weight, dtype=np.float64)
    if total is None:
        total = _leaves.weight_total(class_weight)
    out = np.empty(n_outputs, dtype=np.float64)
    _leaves.prior_raw(class_weight, total, _EPS, out)
    return out


def _row_stats_for(sample_weight, n):
    """The buffer of the row statistics (w * r, w) a tree is grown on, or None for
    unit weights: the grower and the split finders then read the residuals
    themselves as w * r (1 * r is r), and the fit holds 16 bytes per row less."""
    return None if sample_weight is None else np.empty(n, dtype=ROW_STAT_DTYPE)


def _leaf_sums_scratch(n, n_threads):
    """The scratch of the leaf sums on several threads (one int32 per row), or None
    where they run on one thread (``_leaves.set_leaf_values``)."""
    if n_threads > 1 and n >= _leaves.PARALLEL_LEAF_SUMS_MIN_ROWS:
        return np.empty(n, dtype=np.int32)
    return None


def _raw_from_proba(proba, n_outputs, scale):
    """Initial raw scores (n, n_outputs) of an ``init`` estimator's probabilities."""
    p = np.ascontiguousarray(proba, dtype=np.float64)
    out = np.empty((p.shape[0], n_outputs), dtype=np.float64)
    _leaves.raw_from_proba(p, scale, _EPS, out)
    return out


class BinomialLoss:
    """The log-loss of two classes with one raw score per row (the paper's model).

    Parameters
    ----------
    leaf_solver : {"newton", "exact"}, default="newton"
        Leaf values: one Newton step (eq. 1) or the exact minimiser of each leaf's loss.

    Examples
    --------
    >>> from gbc_core import BinomialLoss, GradientBoostingClassifier
    >>> model = GradientBoostingClassifier(n_estimators=2).fit([[0.0], [1.0]], [0, 1])
    >>> isinstance(model.booster_.loss_function, BinomialLoss)
    True
    """

    name = "log_loss"
    n_classes = 2
    n_outputs = 1
    #: scikit-learn's ``train_score_`` (and OOB and validation scores) of two classes
    #: is the binomial deviance: twice the mean log-loss.
    score_factor = 2.0
    #: p = sigma(link_scale * F): the log-odds of the probabilities are link_scale * F
    #: (what an exporter writes as the link).
    link_scale = 1.0

    def __init__(self, leaf_solver="newton"):
        self.leaf_solver = _check_solver(leaf_solver)

    def initial_raw(self, y, sample_weight, init):
        """F0: 0 (``init="zero"``, the paper's) or the log-odds of the weighted class
        frequencies (``"prior"``; 0 when a class has no weight). Shape (1,).

        Parameters
        ----------
        y : ndarray of int, shape (n_samples,)
            Class codes 0 .. n_classes - 1.
        sample_weight : ndarray of shape (n_samples,), optional
            Weights of the rows (None: all 1).
        init : {"zero", "prior"} or None
            ``init`` of the estimator (None: "prior").

        Returns
        -------
        ndarray of shape (n_outputs,)
            F0 of each output.

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import BinomialLoss
        >>> loss = BinomialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> loss.initial_raw(y, None, "zero").shape[0] == loss.n_outputs
        True
        """
        if init == "zero":
            return np.zeros(1)
        return _prior(y, sample_weight, 2, 1)

    def start(self, y, sample_weight, raw, n_threads):
        """The state of a fit on class codes ``y`` from raw scores ``raw`` (n, 1).

        Parameters
        ----------
        y : ndarray of int, shape (n_samples,)
            Class codes 0 .. n_classes - 1.
        sample_weight : ndarray of shape (n_samples,), optional
            Weights of the rows (None: all 1).
        raw : ndarray of shape (n_samples, n_outputs)
            The initial raw scores F0 per row (one column for two classes, K for K classes).
        n_threads : int
            Threads of the fit.

        Returns
        -------
        object
            The fit's state: ``raw``, ``prob`` and ``residual`` of the training rows,
            ``tree_target(k)``, ``update(...)``, ``finish_iteration(mask)`` and
            ``held_out_loss(mask)``.

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import BinomialLoss
        >>> loss = BinomialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> state = loss.start(y, None, np.zeros((3, 1)), n_threads=1)
        >>> callable(state.tree_target) and callable(state.update)
        True
        """
        return _BinomialFit(y, _weights(sample_weight), raw, n_threads,
                            self.leaf_solver == "exact")

    def loss(self, y, raw, sample_weight=None):
        """Weighted mean log-loss of raw scores ``raw`` (n, 1) for class codes ``y``.

        Parameters
        ----------
        y : ndarray of int, shape (n_samples,)
            Class codes 0 .. n_classes - 1.
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).
        sample_weight : ndarray of shape (n_samples,), optional
            Weights of the rows (None: all 1).

        Returns
        -------
        float
            The weighted mean loss (``train_score_`` is it times ``score_factor``).

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import BinomialLoss
        >>> loss = BinomialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> round(loss.loss(y, raw), 4)
        0.3778
        """
        return float(_leaves.weighted_log_loss(
            np.ascontiguousarray(y, dtype=np.float64),
            np.ascontiguousarray(raw[:, 0], dtype=np.float64), _weights(sample_weight)))

    def proba(self, raw, n_threads=1):
        """Class probabilities (n, 2): column 1 is p = sigma(F) (paper eq. 3).

        Parameters
        ----------
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).
        n_threads : int, default=1
            Threads.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import BinomialLoss
        >>> loss = BinomialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> loss.proba(raw).round(3).tolist()
        [[0.731, 0.269], [0.5, 0.5], [0.119, 0.881]]
        """
        out = np.empty((raw.shape[0], 2), dtype=np.float64)
        _leaves.proba_from_raw(np.ascontiguousarray(raw[:, 0], dtype=np.float64), out,
                               n_threads)
        return out

    def log_proba(self, raw):
        """log of :meth:`proba`, computed from F without overflow or log(0).

        Parameters
        ----------
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import BinomialLoss
        >>> loss = BinomialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> bool(np.allclose(np.exp(loss.log_proba(raw)), loss.proba(raw)))
        True
        """
        out = np.empty((raw.shape[0], 2), dtype=np.float64)
        _leaves.binomial_log_proba(np.ascontiguousarray(raw[:, 0], dtype=np.float64), out)
        return out

    def decision(self, raw):
        """Class codes of raw scores: 1 where F >= 0 (p >= 0.5), as scikit-learn.

        Parameters
        ----------
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).

        Returns
        -------
        ndarray of intp, shape (n_samples,)
            Class codes.

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import BinomialLoss
        >>> loss = BinomialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> loss.decision(raw).tolist()
        [0, 1, 1]
        """
        return (raw[:, 0] >= 0).astype(np.intp)

    def raw_from_proba(self, proba):
        """Raw scores (n, 1) of class probabilities (n, 2) (an ``init``
        estimator's): log(p / (1 - p)) of p = proba[:, 1] clipped to [eps, 1 - eps],
        scikit-learn's ``_init_raw_predictions``.

        Parameters
        ----------
        proba : array-like of shape (n_samples, n_classes)
            Class probabilities.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import BinomialLoss
        >>> loss = BinomialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> bool(np.allclose(loss.proba(loss.raw_from_proba(loss.proba(raw))), loss.proba(raw)))
        True
        """
        return _raw_from_proba(proba, 1, 1.0)

    def log_odds(self, raw):
        """The log-odds log(p / (1 - p)) of the probabilities of raw scores (n, 1):
        the raw scores themselves.

        Parameters
        ----------
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)
            What an exporter writes before the sigmoid or softmax: ``link_scale * raw``.

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import BinomialLoss
        >>> loss = BinomialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> loss.log_odds(raw).ravel().tolist() == (loss.link_scale * raw).ravel().tolist()
        True
        """
        return raw


class _BinomialFit:
    """Raw scores, probabilities and residuals of the training rows during a fit."""

    def __init__(self, y, sample_weight, raw, n_threads, exact=False):
        n = y.shape[0]
        # The class codes 0/1 (int32: no copy of the fit's codes; the kernels read
        # them as float64 labels), also those of the exact leaf solve (None: eq. 1's
        # Newton step).
        self.y = np.ascontiguousarray(y, dtype=np.int32)
        self.codes = self.y if exact else None
        self.sample_weight = sample_weight
        self.raw = np.array(raw[:, 0], dtype=np.float64, order="C")  # a copy
        self.prob = np.empty(n, dtype=np.float64)
        self.residual = np.empty(n, dtype=np.float64)
        self.row_stats = _row_stats_for(sample_weight, n)
        self.rows_by_leaf = _leaf_sums_scratch(n, n_threads)
        self.last_loss = 0.0
        # p = sigma(F0), r = y - p and the row statistics (Algorithm 1, lines 1-3, 6).
        _leaves.init_state(self.y, sample_weight, self.raw, self.prob, self.residual,
                           self.row_stats)

    def tree_target(self, k):
        """(row statistics w * r and w, or None for unit weights; residuals r) the
        tree of output k fits."""
        return self.row_stats, self.residual

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        """Leaf values of the grown tree (``nodes``, updated in place) and the
        update of F, p and r that follows, in one fused pass, on ``n_threads``
        threads (the leaf sums' scratch only for more than one)."""
        self.last_loss = _leaves.boosting_update(
            nodes, leaf_of_row, sample_mask, self.y, self.sample_weight, learning_rate,
            self.raw, self.prob, self.residual, self.row_stats, n_threads, self.codes,
            self.rows_by_leaf if n_threads > 1 else None)

    def finish_iteration(self, sample_mask):
        """The weighted log-loss of the in-bag rows after the iteration."""
        return self.last_loss

    def held_out_loss(self, held_out):
        """Weighted log-loss of the rows where ``held_out`` is True."""
        w = None if self.sample_weight is None else self.sample_weight[held_out]
        return float(_leaves.weighted_log_loss(self.y[held_out], self.raw[held_out], w))


class MultinomialLoss:
    """The log-loss of K >= 3 classes with one raw score per class (softmax).

    Parameters
    ----------
    n_classes : int
        K >= 3.
    leaf_solver : {"newton", "exact"}, default="newton"
        Leaf values: one Newton step (eq. 1) or the exact minimiser of each leaf's loss.

    Examples
    --------
    >>> from gbc_core import GradientBoostingClassifier, MultinomialLoss
    >>> model = GradientBoostingClassifier(n_estimators=2).fit([[0.0], [1.0], [2.0]], [0, 1, 2])
    >>> isinstance(model.booster_.loss_function, MultinomialLoss)
    True
    """

    name = "log_loss"
    #: scikit-learn's scores of K >= 3 classes are the mean log-loss itself.
    score_factor = 1.0
    #: p = softmax(link_scale * F).
    link_scale = 1.0

    def __init__(self, n_classes, leaf_solver="newton"):
        if n_classes < 3:
            raise ValueError(f"the multinomial loss needs 3 or more classes, got {n_classes}")
        self.n_classes = n_classes
        self.n_outputs = n_classes
        self.leaf_solver = _check_solver(leaf_solver)

    def initial_raw(self, y, sample_weight, init):
        """F0: zeros (``init="zero"``) or ``"prior"``: log p_k - mean_j log p_j with p
        the weighted class frequencies clipped to [eps, 1 - eps] (scikit-learn's
        prior). Shape (K,).

        Parameters
        ----------
        y : ndarray of int, shape (n_samples,)
            Class codes 0 .. n_classes - 1.
        sample_weight : ndarray of shape (n_samples,), optional
            Weights of the rows (None: all 1).
        init : {"zero", "prior"} or None
            ``init`` of the estimator (None: "prior").

        Returns
        -------
        ndarray of shape (n_outputs,)
            F0 of each output.

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import MultinomialLoss
        >>> loss = MultinomialLoss(3)
        >>> raw = np.array([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 2.0]])
        >>> y = np.array([0, 1, 2])
        >>> loss.initial_raw(y, None, "zero").shape[0] == loss.n_outputs
        True
        """
        if init == "zero":
            return np.zeros(self.n_classes)
        return _prior(y, sample_weight, self.n_classes, self.n_classes)

    def start(self, y, sample_weight, raw, n_threads):
        """The state of a fit on class codes ``y`` from raw scores ``raw`` (n, K).

        Parameters
        ----------
        y : ndarray of int, shape (n_samples,)
            Class codes 0 .. n_classes - 1.
        sample_weight : ndarray of shape (n_samples,), optional
            Weights of the rows (None: all 1).
        raw : ndarray of shape (n_samples, n_outputs)
            The initial raw scores F0 per row (one column for two classes, K for K classes).
        n_threads : int
            Threads of the fit.

        Returns
        -------
        object
            The fit's state: ``raw``, ``prob`` and ``residual`` of the training rows,
            ``tree_target(k)``, ``update(...)``, ``finish_iteration(mask)`` and
            ``held_out_loss(mask)``.

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import MultinomialLoss
        >>> loss = MultinomialLoss(3)
        >>> raw = np.array([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 2.0]])
        >>> y = np.array([0, 1, 2])
        >>> state = loss.start(y, None, np.zeros((3, 3)), n_threads=1)
        >>> callable(state.tree_target) and callable(state.update)
        True
        """
        return _MultinomialFit(self.n_classes, y, _weights(sample_weight), raw, n_threads,
                               self.leaf_solver == "exact")

    def loss(self, y, raw, sample_weight=None):
        """Weighted mean of -log p_y for raw scores ``raw`` (n, K).

        Parameters
        ----------
        y : ndarray of int, shape (n_samples,)
            Class codes 0 .. n_classes - 1.
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).
        sample_weight : ndarray of shape (n_samples,), optional
            Weights of the rows (None: all 1).

        Returns
        -------
        float
            The weighted mean loss (``train_score_`` is it times ``score_factor``).

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import MultinomialLoss
        >>> loss = MultinomialLoss(3)
        >>> raw = np.array([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 2.0]])
        >>> y = np.array([0, 1, 2])
        >>> round(loss.loss(y, raw), 4)
        0.5497
        """
        return float(_leaves.multinomial_log_loss(
            np.ascontiguousarray(y, dtype=np.int32), np.ascontiguousarray(raw, dtype=np.float64),
            _weights(sample_weight)))

    def proba(self, raw, n_threads=1):
        """Class probabilities (n, K): softmax of the raw scores.

        Parameters
        ----------
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).
        n_threads : int, default=1
            Threads.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import MultinomialLoss
        >>> loss = MultinomialLoss(3)
        >>> raw = np.array([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 2.0]])
        >>> y = np.array([0, 1, 2])
        >>> loss.proba(raw).round(3).tolist()
        [[0.665, 0.245, 0.09], [0.333, 0.333, 0.333], [0.016, 0.117, 0.867]]
        """
        out = np.empty(raw.shape, dtype=np.float64)
        _leaves.softmax(np.ascontiguousarray(raw, dtype=np.float64), out, n_threads)
        return out

    def log_proba(self, raw):
        """log of :meth:`proba`: F_k - log sum_j exp(F_j), without log(0).

        Parameters
        ----------
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import MultinomialLoss
        >>> loss = MultinomialLoss(3)
        >>> raw = np.array([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 2.0]])
        >>> y = np.array([0, 1, 2])
        >>> bool(np.allclose(np.exp(loss.log_proba(raw)), loss.proba(raw)))
        True
        """
        out = np.empty(raw.shape, dtype=np.float64)
        _leaves.multinomial_log_proba(np.ascontiguousarray(raw, dtype=np.float64), out)
        return out

    def decision(self, raw):
        """Class codes of raw scores: the largest score (the first on ties).

        Parameters
        ----------
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).

        Returns
        -------
        ndarray of intp, shape (n_samples,)
            Class codes.

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import MultinomialLoss
        >>> loss = MultinomialLoss(3)
        >>> raw = np.array([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 2.0]])
        >>> y = np.array([0, 1, 2])
        >>> loss.decision(raw).tolist()
        [0, 0, 2]
        """
        return np.argmax(raw, axis=1)

    def raw_from_proba(self, proba):
        """Raw scores (n, K) of class probabilities (n, K) (an ``init``
        estimator's): log p_k - mean_j log p_j with p clipped to [eps, 1 - eps],
        scikit-learn's ``_init_raw_predictions``.

        Parameters
        ----------
        proba : array-like of shape (n_samples, n_classes)
            Class probabilities.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import MultinomialLoss
        >>> loss = MultinomialLoss(3)
        >>> raw = np.array([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 2.0]])
        >>> y = np.array([0, 1, 2])
        >>> bool(np.allclose(loss.proba(loss.raw_from_proba(loss.proba(raw))), loss.proba(raw)))
        True
        """
        return _raw_from_proba(proba, self.n_classes, 1.0)

    def log_odds(self, raw):
        """Raw scores whose softmax is the probabilities: the raw scores.

        Parameters
        ----------
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)
            What an exporter writes before the sigmoid or softmax: ``link_scale * raw``.

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import MultinomialLoss
        >>> loss = MultinomialLoss(3)
        >>> raw = np.array([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 2.0]])
        >>> y = np.array([0, 1, 2])
        >>> loss.log_odds(raw).ravel().tolist() == (loss.link_scale * raw).ravel().tolist()
        True
        """
        return raw


class _MultinomialFit:
    """Per-class raw scores, probabilities and residuals of the training rows
    (arrays of shape (K, n_samples): one contiguous row per class)."""

    def __init__(self, n_classes, y, sample_weight, raw, n_threads, exact=False):
        n = y.shape[0]
        self.y = np.ascontiguousarray(y, dtype=np.int32)
        self.exact = exact
        # The exact leaf solve: each class's log-odds against the others at the
        # start of the iteration (the other classes fixed there, as the residuals).
        self.log_odds = np.empty((n_classes, n), dtype=np.float64) if exact else None
        self.sample_weight = sample_weight
        self.n_threads = n_threads
        self.factor = (n_classes - 1) / n_classes
        self.raw = np.array(np.asarray(raw, dtype=np.float64).T, order="C")  # a copy
        self.prob = np.empty((n_classes, n), dtype=np.float64)
        self.residual = np.empty((n_classes, n), dtype=np.float64)
        self.row_stats = _row_stats_for(sample_weight, n)
        self.rows_by_leaf = _leaf_sums_scratch(n, n_threads)
        _leaves.multinomial_state(self.raw, self.y, sample_weight, None, self.prob,
                                  self.residual, n_threads)
        if exact:
            _leaves.class_log_odds(self.raw, self.log_odds)

    def tree_target(self, k):
        if self.row_stats is not None:
            _leaves.row_stats_of(self.residual[k], self.sample_weight, self.row_stats)
        return self.row_stats, self.residual[k]

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        """Leaf values of class k's tree and F_k += eta * gamma on ``n_threads``
        threads: one for the trees of classes grown side by side, which are updated
        at once and so must not share the leaf sums' scratch."""
        rows_by_leaf = self.rows_by_leaf if n_threads > 1 else None
        if self.exact:
            _leaves.multinomial_tree_update(
                nodes, leaf_of_row, sample_mask, self.residual[k], self.prob[k],
                self.sample_weight, self.factor, learning_rate, self.raw[k], self.y, k,
                self.log_odds[k], n_threads)
        else:
            _leaves.multinomial_tree_update(
                nodes, leaf_of_row, sample_mask, self.residual[k], self.prob[k],
                self.sample_weight, self.factor, learning_rate, self.raw[k],
                n_threads=n_threads, rows_by_leaf=rows_by_leaf)

    def finish_iteration(self, sample_mask):
        """Probabilities and residuals of the next iteration; returns the weighted
        log-loss of the in-bag rows."""
        loss = _leaves.multinomial_state(self.raw, self.y, self.sample_weight,
                                         sample_mask, self.prob, self.residual,
                                         self.n_threads)
        if self.exact:
            _leaves.class_log_odds(self.raw, self.log_odds)
        return loss

    def held_out_loss(self, held_out):
        w = None if self.sample_weight is None else self.sample_weight[held_out]
        return float(_leaves.multinomial_log_loss(
            self.y[held_out], np.ascontiguousarray(self.raw[:, held_out].T), w))


class ExponentialLoss:
    """AdaBoost's exponential loss of two classes, one raw score per row
    (scikit-learn's ``GradientBoostingClassifier(loss="exponential")``).

    L(y, F) = y e^-F + (1 - y) e^F for class codes y in {0, 1}; p = sigma(2F) (the
    probability that minimises the expected loss); a row is predicted class 1 where
    F >= 0. Trees fit r = y e^-F - (1 - y) e^F; leaf values are scikit-learn's
    Newton step sum w r / sum w abs(r) (abs(r) is the Hessian), always in [-1, 1].

    Parameters
    ----------
    leaf_solver : {"newton", "exact"}, default="newton"
        Leaf values: one Newton step (eq. 1) or the exact minimiser of each leaf's loss.

    Examples
    --------
    >>> from gbc_core import ExponentialLoss, GradientBoostingClassifier
    >>> model = GradientBoostingClassifier(n_estimators=2, loss="exponential")
    >>> model = model.fit([[0.0], [1.0]], [0, 1])
    >>> isinstance(model.booster_.loss_function, ExponentialLoss)
    True
    """

    name = "exponential"
    n_classes = 2
    n_outputs = 1
    #: scikit-learn's scores of the exponential loss are its mean value itself.
    score_factor = 1.0
    #: p = sigma(2F): scikit-learn's probabilities of the exponential loss.
    link_scale = 2.0

    def __init__(self, leaf_solver="newton"):
        self.leaf_solver = _check_solver(leaf_solver)

    def initial_raw(self, y, sample_weight, init):
        """F0: 0 (``init="zero"``) or half the log-odds of the weighted class
        frequencies (``"prior"``, scikit-learn's 0.5 logit(p); 0 when a class has
        no weight). Shape (1,).

        Parameters
        ----------
        y : ndarray of int, shape (n_samples,)
            Class codes 0 .. n_classes - 1.
        sample_weight : ndarray of shape (n_samples,), optional
            Weights of the rows (None: all 1).
        init : {"zero", "prior"} or None
            ``init`` of the estimator (None: "prior").

        Returns
        -------
        ndarray of shape (n_outputs,)
            F0 of each output.

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import ExponentialLoss
        >>> loss = ExponentialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> loss.initial_raw(y, None, "zero").shape[0] == loss.n_outputs
        True
        """
        if init == "zero":
            return np.zeros(1)
        return 0.5 * _prior(y, sample_weight, 2, 1)

    def start(self, y, sample_weight, raw, n_threads):
        """The state of a fit on class codes ``y`` from raw scores ``raw`` (n, 1).

        Parameters
        ----------
        y : ndarray of int, shape (n_samples,)
            Class codes 0 .. n_classes - 1.
        sample_weight : ndarray of shape (n_samples,), optional
            Weights of the rows (None: all 1).
        raw : ndarray of shape (n_samples, n_outputs)
            The initial raw scores F0 per row (one column for two classes, K for K classes).
        n_threads : int
            Threads of the fit.

        Returns
        -------
        object
            The fit's state: ``raw``, ``prob`` and ``residual`` of the training rows,
            ``tree_target(k)``, ``update(...)``, ``finish_iteration(mask)`` and
            ``held_out_loss(mask)``.

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import ExponentialLoss
        >>> loss = ExponentialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> state = loss.start(y, None, np.zeros((3, 1)), n_threads=1)
        >>> callable(state.tree_target) and callable(state.update)
        True
        """
        return _ExponentialFit(y, _weights(sample_weight), raw,
                               self.leaf_solver == "exact")

    def loss(self, y, raw, sample_weight=None):
        """Weighted mean exponential loss of raw scores ``raw`` (n, 1) (scikit-learn's
        ``train_score_`` scale: the loss itself, no factor).

        Parameters
        ----------
        y : ndarray of int, shape (n_samples,)
            Class codes 0 .. n_classes - 1.
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).
        sample_weight : ndarray of shape (n_samples,), optional
            Weights of the rows (None: all 1).

        Returns
        -------
        float
            The weighted mean loss (``train_score_`` is it times ``score_factor``).

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import ExponentialLoss
        >>> loss = ExponentialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> round(loss.loss(y, raw), 4)
        0.5011
        """
        return float(_leaves.exponential_loss(
            np.ascontiguousarray(y, dtype=np.float64),
            np.ascontiguousarray(raw[:, 0], dtype=np.float64), _weights(sample_weight)))

    def log_odds(self, raw):
        """The log-odds of the probabilities of raw scores (n, 1): 2F (exact).

        Parameters
        ----------
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)
            What an exporter writes before the sigmoid or softmax: ``link_scale * raw``.

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import ExponentialLoss
        >>> loss = ExponentialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> loss.log_odds(raw).ravel().tolist() == (loss.link_scale * raw).ravel().tolist()
        True
        """
        return np.multiply(raw, self.link_scale)

    def proba(self, raw, n_threads=1):
        """Class probabilities (n, 2): column 1 is sigma(2F).

        Parameters
        ----------
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).
        n_threads : int, default=1
            Threads.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import ExponentialLoss
        >>> loss = ExponentialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> loss.proba(raw).round(3).tolist()
        [[0.881, 0.119], [0.5, 0.5], [0.018, 0.982]]
        """
        return BinomialLoss().proba(self.log_odds(raw), n_threads)

    def log_proba(self, raw):
        """log of :meth:`proba`, computed from 2F without overflow or log(0).

        Parameters
        ----------
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import ExponentialLoss
        >>> loss = ExponentialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> bool(np.allclose(np.exp(loss.log_proba(raw)), loss.proba(raw)))
        True
        """
        return BinomialLoss().log_proba(self.log_odds(raw))

    def decision(self, raw):
        """Class codes of raw scores: 1 where F >= 0, as scikit-learn.

        Parameters
        ----------
        raw : ndarray of shape (n_samples, n_outputs)
            Raw scores F (one column for two classes, K for K classes).

        Returns
        -------
        ndarray of intp, shape (n_samples,)
            Class codes.

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import ExponentialLoss
        >>> loss = ExponentialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> loss.decision(raw).tolist()
        [0, 1, 1]
        """
        return (raw[:, 0] >= 0).astype(np.intp)

    def raw_from_proba(self, proba):
        """Raw scores (n, 1) of class probabilities (n, 2): 0.5 log(p / (1 - p)) of p
        = proba[:, 1] clipped to [eps, 1 - eps] (scikit-learn's half-logit link).

        Parameters
        ----------
        proba : array-like of shape (n_samples, n_classes)
            Class probabilities.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)

        Examples
        --------
        >>> import numpy as np
        >>> from gbc_core import ExponentialLoss
        >>> loss = ExponentialLoss()
        >>> raw = np.array([[-1.0], [0.0], [2.0]])
        >>> y = np.array([0, 1, 1])
        >>> bool(np.allclose(loss.proba(loss.raw_from_proba(loss.proba(raw))), loss.proba(raw)))
        True
        """
        return _raw_from_proba(proba, 1, 0.5)


def exponential_overflow_error(n_rows):
    return ValueError(
        f"the exponential loss overflows: e^(-(2y - 1) F(x)) is beyond float64 for "
        f"{n_rows} training row(s) (raw scores beyond 709 on the wrong side), so their "
        "residuals are infinite; use a smaller "
        "learning_rate or fewer iterations (n_estimators, or early stopping with "
        "n_iter_no_change)")


class _ExponentialFit:
    """Raw scores and residuals of the training rows during a fit."""

    def __init__(self, y, sample_weight, raw, exact=False):
        n = y.shape[0]
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.codes = np.ascontiguousarray(y, dtype=np.int32) if exact else None
        self.sample_weight = sample_weight
        self.raw = np.array(raw[:, 0], dtype=np.float64, order="C")  # a copy
        self.residual = np.empty(n, dtype=np.float64)
        self.row_stats = _row_stats_for(sample_weight, n)
        self.last_loss = 0.0
        n_overflow = _leaves.exponential_state(self.y, sample_weight, self.raw,
                                               self.residual, self.row_stats)
        if n_overflow:
            raise exponential_overflow_error(n_overflow)

    def tree_target(self, k):
        """(row statistics w * r and w, or None for unit weights; residuals r) the
        tree fits."""
        return self.row_stats, self.residual

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        """Leaf values of the grown tree (``nodes``, updated in place), then F and r
        (one thread: ``n_threads`` is not used)."""
        self.last_loss, n_overflow = _leaves.exponential_update(
            nodes, leaf_of_row, sample_mask, self.y, self.sample_weight, learning_rate,
            self.raw, self.residual, self.row_stats, self.codes)
        if n_overflow:
            raise exponential_overflow_error(n_overflow)

    def finish_iteration(self, sample_mask):
        """The weighted exponential loss of the in-bag rows after the iteration."""
        return self.last_loss

    def held_out_loss(self, held_out):
        """Weighted exponential loss of the rows where ``held_out`` is True."""
        w = None if self.sample_weight is None else self.sample_weight[held_out]
        return float(_leaves.exponential_loss(self.y[held_out], self.raw[held_out], w))
