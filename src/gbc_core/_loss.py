"""The losses: what each tree fits, and (through the loss's link) how raw scores
become probabilities.

Every loss is a :class:`Loss`: a ``name`` (the value of the ``loss`` parameter
that selects it, and the name a model file stores), a ``link`` (``_link``: the
probabilities, log-probabilities and predicted classes of raw scores, the raw
scores of probabilities), ``n_classes`` and ``n_outputs`` (raw scores per row, the
link's), ``score_factor`` (``train_score_`` and the other recorded losses are the
loss times it: scikit-learn's units), the initial raw scores and the per-fit state
that the boosting loop drives (``start``, see ``_loss_state``).

The built-in losses have fused Cython kernels (``_leaves.pyx``):

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

Each built-in loss takes the fit's ``leaf_solver``: ``"newton"`` (the leaf values
above: one Newton step, the paper's eq. 1) or ``"exact"`` (each leaf's gamma
minimises the leaf's loss of F + gamma exactly, the learning rate still scaling
it; pure leaves capped; see ``_leaves.pyx`` and ``docs/leaf_solver.md``).

A **custom loss** is a subclass of :class:`Loss` with a ``name``, a ``link`` and
``gradient_hessian`` and ``pointwise_loss`` (and, if it likes, its own
``leaf_value`` rule): the paper's model with its gradients, F0 of the link's
prior (or 0 with ``init="zero"``), trees fitted to r = -gradient, leaf values
gamma_j = -sum w g / sum w h (a Newton step), F += eta * gamma. It runs in NumPy
(the slow path), in one process or on Dask. :func:`register_loss` makes its name
loadable from a model file.

The registry (:func:`register_loss`, :func:`loss_for`) maps a name to its class;
everything else reads the loss object's own attributes.
"""

import copy

import numpy as np

from . import _leaves
from ._docstrings import fill_docs
from ._link import DOC_PIECES, HalfLogitLink, LogitLink, SoftmaxLink, _Link
from ._link import prior_from_class_weights  # noqa: F401 (the distributed prior's)
from ._loss_state import HESSIAN_EPSILON as _HESSIAN_EPSILON
from ._loss_state import (BinomialFit, ExponentialFit, GradientFit, MultinomialFit,
                          exponential_overflow_error)  # noqa: F401

#: Docstring pieces of the losses (the links' and their own; ``_docstrings``).
_DOC_PIECES = dict(
    DOC_PIECES,
    y="y : ndarray of int, shape (n_samples,)\n    Class codes 0 .. n_classes - 1.",
    sample_weight=("sample_weight : ndarray of shape (n_samples,), optional\n"
                   "    Weights of the rows (None: all 1)."),
    of_y_raw="Parameters\n----------\n<<y>>\n<<raw>>",
    of_start=(
        "Parameters\n----------\n<<y>>\n<<sample_weight>>\n"
        "raw : ndarray of shape (n_samples, n_outputs)\n"
        "    The initial raw scores F0 per row.\n"
        "n_threads : int\n    Threads of the fit.\n"
        "reduce : callable, optional\n"
        "    ``reduce(values, n_summed)``: a distributed fit's all-reduce of the\n"
        "    per-node sums and losses (None: one process)."),
    of_loss=(
        "Parameters\n----------\n<<y>>\n<<raw>>\n<<sample_weight>>\n\n"
        "Returns\n-------\nfloat\n"
        "    The weighted mean loss (``train_score_`` is it times ``score_factor``)."),
    leaf_solver=(
        'leaf_solver : {"newton", "exact"}, default="newton"\n'
        "    Leaf values: one Newton step (eq. 1) or the exact minimiser of each leaf's\n"
        "    loss."),
    of_leaf_solver="Parameters\n----------\n<<leaf_solver>>",
)

#: The leaf solvers (the ``leaf_solver`` parameter's values).
LEAF_SOLVERS = ("newton", "exact")


def _check_solver(leaf_solver):
    if leaf_solver not in LEAF_SOLVERS:
        raise ValueError(f"unknown leaf_solver {leaf_solver!r}; the leaf solvers are "
                         + ", ".join(repr(n) for n in LEAF_SOLVERS))
    return leaf_solver


def _weights(sample_weight):
    return None if sample_weight is None else np.ascontiguousarray(sample_weight,
                                                                   dtype=np.float64)


def _class_weight_sums(y, sample_weight, n_classes):
    """The weight of each class and the total weight, summed in row order."""
    codes = np.ascontiguousarray(y, dtype=np.int32)
    if codes.size and not (0 <= codes.min() and codes.max() < n_classes):
        raise ValueError(f"class codes must lie in 0 .. {n_classes - 1}")
    return _leaves.class_weight_sums(codes, _weights(sample_weight), n_classes)


def _as_outputs(name, what, a, n, n_outputs):
    """``a`` (a custom loss's answer) as float64 of shape (n, n_outputs), or a
    ValueError naming the loss, the method and what was expected."""
    a = np.asarray(a, dtype=np.float64)
    if n_outputs == 1 and a.shape == (n,):
        a = a.reshape(n, 1)
    if a.shape != (n, n_outputs):
        raise ValueError(f"the loss {name!r}: {what} must be of shape ({n}, {n_outputs})"
                         + (f" or ({n},)" if n_outputs == 1 else "") + f", got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"the loss {name!r}: {what} holds NaN or infinite values")
    return a


@fill_docs(_DOC_PIECES)
class Loss:
    """A loss of the boosting loop: the base class of the built-in losses and of a
    custom one.

    A custom loss subclasses it and sets ``name`` (what a model file stores) and
    ``link`` (:class:`LogitLink`, :class:`HalfLogitLink` or :class:`SoftmaxLink`),
    and defines :meth:`gradient_hessian` and :meth:`pointwise_loss`; it may also
    set :meth:`leaf_value` (the leaf value rule) and ``score_factor``. The fit is
    the paper's model with its gradients: trees fitted to r = -gradient with the
    squared error, leaf values gamma_j = -sum w g / sum w h, F += eta * gamma. It
    runs in NumPy (slower than the built-in losses' kernels), in one process or on
    Dask (the per-node sums are all-reduced). To load a model file of a custom loss,
    register its class first (:func:`register_loss`).

    <<examples>>
    >>> class Logistic(gbc_core.Loss):
    ...     name = "my_logistic"
    ...     link = gbc_core.LogitLink()
    ...     def gradient_hessian(self, y, raw):
    ...         p = 1.0 / (1.0 + np.exp(-raw[:, 0]))
    ...         return p - y, p * (1.0 - p)
    ...     def pointwise_loss(self, y, raw):
    ...         return np.logaddexp(0.0, raw[:, 0]) - y * raw[:, 0]
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1]
    >>> model = gbc_core.GradientBoostingClassifier(n_estimators=5, loss=Logistic()).fit(X, y)
    >>> model.predict([[0.0], [3.0]]).tolist()
    [0, 1]
    """

    #: The loss's name: the ``loss`` parameter that selects it, a model file's loss.
    name = None
    #: How raw scores become probabilities (``_link``).
    link = LogitLink()
    #: The recorded losses (``train_score_``, ...) are the loss times this.
    score_factor = 1.0
    #: The name of scikit-learn's loss that is this one (None: it has none).
    sklearn_loss = None
    #: The number of classes and of raw scores per row (set by :meth:`for_classes`).
    n_classes = None
    n_outputs = None
    leaf_solver = "newton"

    @property
    def label(self):
        """The loss's name for people (plots, ``gbc-core train``'s summary)."""
        return f"{self.name} loss"

    @property
    def link_scale(self):
        """The link's ``scale`` (two classes: p = sigma(link_scale * F)), which
        exporters read."""
        return self.link.scale

    def for_classes(self, n_classes, leaf_solver="newton"):
        """This loss for a classifier of ``n_classes`` classes (a copy; the object
        passed as ``loss=`` is left as it is), its protocol checked.

        Parameters
        ----------
        n_classes : int
            The number of classes (2 or more).
        leaf_solver : {"newton", "exact"}, default="newton"
            The leaf values of the fit: a custom loss has its leaf value rule
            (:meth:`leaf_value`) and takes ``"newton"`` only.

        Returns
        -------
        Loss
            With ``n_classes``, ``n_outputs`` and ``leaf_solver`` set.

        Raises
        ------
        TypeError
            For a loss without a name, a link the package knows, or one of the
            methods a custom loss defines.
        ValueError
            For a number of classes its link does not take, or a leaf solver it
            does not offer.

        <<examples>>
        >>> gbc_core.BinomialLoss().for_classes(3).n_outputs
        3
        """
        _check_solver(leaf_solver)
        if n_classes < 2:
            raise ValueError(f"a classifier needs at least 2 classes, got {n_classes}")
        self._check_protocol()
        return self._bind(n_classes, leaf_solver)

    def _bind(self, n_classes, leaf_solver):
        if leaf_solver != "newton":
            raise ValueError(f"leaf_solver={leaf_solver!r} is not offered by the loss "
                             f"{self.name!r}: a custom loss sets its leaf values by its "
                             "leaf_value rule (use leaf_solver='newton')")
        try:
            n_outputs = self.link.n_outputs(n_classes)
        except ValueError as exc:
            raise ValueError(f"the loss {self.name!r}: {exc}") from None
        bound = copy.copy(self)
        bound.n_classes, bound.n_outputs, bound.leaf_solver = n_classes, n_outputs, leaf_solver
        return bound

    def _check_protocol(self):
        """A TypeError naming what a custom loss lacks (built-in losses pass)."""
        if type(self) in _BUILTIN_CLASSES:
            return
        cls = type(self).__name__
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"the loss {cls} needs a name, a non-empty string (the class "
                            f"attribute name, which a model file stores), got {self.name!r}")
        if self.name in _BUILTIN:
            raise ValueError(f"the loss {cls} is named {self.name!r}, the name of a "
                             "built-in loss; give it a name of its own")
        if not isinstance(self.link, _Link):
            raise TypeError(f"the loss {cls} ({self.name!r}): link must be LogitLink(), "
                            "HalfLogitLink() or SoftmaxLink() (the links prediction and "
                            f"the exporters know), got {self.link!r}")
        if type(self).start is Loss.start:
            for method in ("gradient_hessian", "pointwise_loss"):
                if getattr(type(self), method, None) is getattr(Loss, method) or not callable(
                        getattr(self, method, None)):
                    raise TypeError(
                        f"the loss {cls} ({self.name!r}) has no {method} method: a custom "
                        "loss defines gradient_hessian(y, raw) -> (gradient, hessian) and "
                        "pointwise_loss(y, raw) -> the loss of each row (see gbc_core.Loss)")
        factor = self.score_factor
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor > 0:
            raise TypeError(f"the loss {cls} ({self.name!r}): score_factor must be a "
                            f"positive number, got {factor!r}")

    def gradient_hessian(self, y, raw):
        """The gradient and the Hessian of each row's loss in its raw scores: what a
        custom loss defines.

        <<of_y_raw>>

        Returns
        -------
        gradient, hessian : ndarrays of shape (n_samples, n_outputs)
            dL/dF and d2L/dF2 of each row (shape (n_samples,) for one output too).
            The trees fit the residuals -gradient.

        <<examples>>
        >>> class Squared(gbc_core.Loss):
        ...     name = "squared"
        ...     def gradient_hessian(self, y, raw):
        ...         return raw[:, 0] - y, np.ones(len(y))
        >>> g, h = Squared().gradient_hessian(np.array([0, 1]), np.zeros((2, 1)))
        >>> g.tolist(), h.tolist()
        ([0.0, -1.0], [1.0, 1.0])
        """
        raise NotImplementedError(f"the loss {type(self).__name__} defines no gradient_hessian")

    def pointwise_loss(self, y, raw):
        """The loss of each row (recorded as ``train_score_``, the out-of-bag and
        validation scores, which early stopping watches): what a custom loss defines.

        <<of_y_raw>>

        Returns
        -------
        ndarray of shape (n_samples,)
            The loss of each row.

        <<examples>>
        >>> class Squared(gbc_core.Loss):
        ...     name = "squared"
        ...     def pointwise_loss(self, y, raw):
        ...         return 0.5 * (raw[:, 0] - y) ** 2
        >>> Squared().pointwise_loss(np.array([0, 1]), np.zeros((2, 1))).tolist()
        [0.0, 0.5]
        """
        raise NotImplementedError(f"the loss {type(self).__name__} defines no pointwise_loss")

    def leaf_value(self, gradient_sum, hessian_sum):
        """The leaf value rule: gamma of each leaf from the sums of its in-bag rows'
        weighted gradients and Hessians (over every process of a distributed fit). By
        default one Newton step, -G / H (paper eq. 1), 0 where ``abs(H) < 1e-150``.

        Parameters
        ----------
        gradient_sum : ndarray of shape (n_leaves,)
            G = sum w g of each leaf.
        hessian_sum : ndarray of shape (n_leaves,)
            H = sum w h of each leaf.

        Returns
        -------
        ndarray of shape (n_leaves,)
            gamma of each leaf (the learning rate scales it: F += eta * gamma).

        <<examples>>
        >>> gbc_core.Loss().leaf_value(np.array([-1.0, 2.0]), np.array([4.0, 0.0])).tolist()
        [0.25, 0.0]
        """
        g = np.asarray(gradient_sum, dtype=np.float64)
        h = np.asarray(hessian_sum, dtype=np.float64)
        out = np.zeros(np.broadcast(g, h).shape)
        ok = ~(np.abs(h) < _HESSIAN_EPSILON)
        out[ok] = -g[ok] / h[ok]
        return out

    def _checked_gradient_hessian(self, y, raw):
        answer = self.gradient_hessian(y, raw)
        if not (isinstance(answer, tuple) and len(answer) == 2):
            raise TypeError(f"the loss {self.name!r}: gradient_hessian must return a pair "
                            f"(gradient, hessian), got {type(answer).__name__}")
        n, k = y.shape[0], self.n_outputs
        return (_as_outputs(self.name, "the gradient", answer[0], n, k),
                _as_outputs(self.name, "the Hessian", answer[1], n, k))

    def _checked_leaf_value(self, gradient_sum, hessian_sum):
        value = np.asarray(self.leaf_value(gradient_sum, hessian_sum), dtype=np.float64)
        if value.shape != gradient_sum.shape or not np.isfinite(value).all():
            raise ValueError(f"the loss {self.name!r}: leaf_value must return a finite "
                             f"value per leaf, shape {gradient_sum.shape}, got shape "
                             f"{value.shape}" + ("" if value.shape != gradient_sum.shape
                                                 else " with NaN or infinite values"))
        return value

    def _checked_pointwise_loss(self, y, raw):
        terms = np.asarray(self.pointwise_loss(y, raw), dtype=np.float64)
        if terms.shape != (y.shape[0],):
            raise ValueError(f"the loss {self.name!r}: pointwise_loss must return one loss "
                             f"per row, shape ({y.shape[0]},), got {terms.shape}")
        return terms

    def initial_raw(self, y, sample_weight, init, reduce=None):
        """F0: 0 (``init="zero"``, the paper's) or the link's prior of the weighted
        class frequencies (``"prior"`` or None: the log-odds, half of them for the
        exponential loss, or log p_k - mean_j log p_j; 0 for two classes where a
        class has no weight).

        Parameters
        ----------
        <<y>>
        <<sample_weight>>
        init : {"zero", "prior"} or None
            ``init`` of the estimator (None: "prior").
        reduce : callable, optional
            A distributed fit's all-reduce of the class weights (None: one process).

        Returns
        -------
        ndarray of shape (n_outputs,)
            F0 of each output.

        <<examples>>
        >>> loss = gbc_core.BinomialLoss()
        >>> loss.initial_raw(np.array([0, 1, 1]), None, "prior").round(4).tolist()
        [0.6931]
        """
        if init == "zero":
            return np.zeros(self.n_outputs)
        sums, total = _class_weight_sums(y, sample_weight, self.n_classes)
        if reduce is not None:
            reduced = reduce(np.append(np.asarray(sums, dtype=np.float64), total),
                             self.n_classes + 1)
            sums, total = reduced[:-1], reduced[-1]
        return self.link.prior(sums, total)

    def start(self, y, sample_weight, raw, n_threads, reduce=None):
        """The state of a fit on class codes ``y`` from raw scores ``raw``: for a
        custom loss, from its gradients and Hessians in NumPy.

        <<of_start>>

        Returns
        -------
        object
            The fit's state: ``raw`` and ``residual`` of the training rows,
            ``tree_target(k)``, ``update(...)``, ``finish_iteration(mask)`` and
            ``held_out_loss(mask)`` (``_loss_state``).

        <<examples>>
        >>> class Squared(gbc_core.Loss):
        ...     name = "squared"
        ...     def gradient_hessian(self, y, raw):
        ...         return raw[:, 0] - y, np.ones(len(y))
        ...     def pointwise_loss(self, y, raw):
        ...         return 0.5 * (raw[:, 0] - y) ** 2
        >>> loss = Squared().for_classes(2)
        >>> loss.start(np.array([1, 1]), None, np.zeros((2, 1)), 1).residual[0].tolist()
        [1.0, 1.0]
        """
        return GradientFit(self, y, _weights(sample_weight), raw, reduce)

    def loss(self, y, raw, sample_weight=None):
        """Weighted mean loss of raw scores ``raw`` for class codes ``y``: for a
        custom loss, of its :meth:`pointwise_loss`.

        <<of_loss>>

        <<examples>>
        >>> class Squared(gbc_core.Loss):
        ...     name = "squared"
        ...     def pointwise_loss(self, y, raw):
        ...         return 0.5 * (raw[:, 0] - y) ** 2
        >>> Squared().loss(np.array([0, 1]), np.zeros((2, 1)))
        0.25
        """
        y = np.ascontiguousarray(y, dtype=np.int32)
        if y.shape[0] == 0:
            return 0.0
        terms = self._checked_pointwise_loss(y, np.asarray(raw, dtype=np.float64))
        w = _weights(sample_weight)
        if w is None:
            return float(np.sum(terms) / y.shape[0])
        total = float(_leaves.weight_total(w))
        return float(np.sum(w * terms) / total) if total > 0 else 0.0

    def proba(self, raw, n_threads=1):
        """Class probabilities of raw scores: the link's inverse.

        <<of_raw_threads>>

        <<to_proba>>

        <<examples>>
        >>> gbc_core.ExponentialLoss().proba(np.array([[1.0]])).round(3).tolist()
        [[0.119, 0.881]]
        """
        return self.link.inverse(raw, n_threads)

    def log_proba(self, raw):
        """log of :meth:`proba`, without overflow or log(0).

        <<of_raw>>

        <<to_log_proba>>

        <<examples>>
        >>> raw, loss = np.array([[-1.0], [2.0]]), gbc_core.BinomialLoss()
        >>> bool(np.allclose(np.exp(loss.log_proba(raw)), loss.proba(raw)))
        True
        """
        return self.link.log_inverse(raw)

    def decision(self, raw):
        """Class codes of raw scores (the link's: F >= 0 for two classes, the
        largest score for more).

        <<of_raw>>

        <<to_codes>>

        <<examples>>
        >>> gbc_core.BinomialLoss().decision(np.array([[-1.0], [0.0], [2.0]])).tolist()
        [0, 1, 1]
        """
        return self.link.decision(raw)

    def raw_from_proba(self, proba):
        """Raw scores of class probabilities (an ``init`` estimator's): the link.

        <<of_proba>>

        <<to_raw>>

        <<examples>>
        >>> gbc_core.ExponentialLoss().raw_from_proba(np.array([[0.5, 0.5]])).tolist()
        [[0.0]]
        """
        return self.link.link(proba)

    def log_odds(self, raw):
        """What an exporter writes before the sigmoid or softmax: the link's
        log-odds of raw scores (``link.scale`` * F).

        <<of_raw>>

        <<to_raw>>

        <<examples>>
        >>> gbc_core.ExponentialLoss().log_odds(np.array([[1.0]])).tolist()
        [[2.0]]
        """
        return self.link.log_odds(raw)


@fill_docs(_DOC_PIECES)
class _FusedLoss(Loss):
    """A built-in loss: its fit runs the fused kernels of ``_leaves.pyx`` with either
    leaf solver. A subclass names its fit state (``_state``, a class of
    ``_loss_state``) and the kernel of its mean loss (``_kernel``, of one raw score
    per row, or its own ``_mean_loss``)."""

    #: Two classes, one raw score per row (the multinomial loss sets its own).
    n_classes = 2
    n_outputs = 1
    #: The fit state's class: called with (y, sample_weight, raw, n_threads, exact, reduce).
    _state = None
    #: The weighted mean loss of float labels and one raw score per row.
    _kernel = None

    def __init__(self, leaf_solver="newton"):
        self.leaf_solver = _check_solver(leaf_solver)

    @property
    def sklearn_loss(self):
        """scikit-learn's name of the loss: a built-in loss is scikit-learn's loss of
        its own name."""
        return self.name

    def start(self, y, sample_weight, raw, n_threads, reduce=None):
        """The state of a fit on class codes ``y`` from raw scores ``raw``: the
        loss's fused kernels.

        <<of_start>>

        Returns
        -------
        object
            The fit's state (``_loss_state``): ``raw`` of the training rows (and
            ``prob`` of a log-loss; the residuals of the next tree from
            ``tree_target(k)``, which the log-losses make in the tree grower's
            buffer where the fit lends one; with K >= 3 classes those of one class
            at a time, ``residual_of(k)``), ``tree_target(k)``,
            ``update(...)``, ``finish_iteration(mask)`` and ``held_out_loss(mask)``;
            for K >= 3 classes and ``leaf_solver="exact"`` also ``log_odds``
            (K, n_samples), each class's log-odds against the others,
            F_k - log sum_{j != k} e^F_j, that the exact leaf solve starts from.

        <<examples>>
        >>> loss = gbc_core.ExponentialLoss()
        >>> state = loss.start(np.array([0, 1, 1]), None, np.zeros((3, 1)), n_threads=1)
        >>> callable(state.tree_target) and callable(state.update)
        True
        """
        return self._state(y, _weights(sample_weight), raw, n_threads,
                           self.leaf_solver == "exact", reduce)

    def loss(self, y, raw, sample_weight=None):
        """Weighted mean loss of raw scores ``raw`` for class codes ``y``: the
        loss's kernel (scikit-learn's units times 1 / ``score_factor``).

        <<of_loss>>

        <<examples>>
        >>> raw, y = np.array([[-1.0], [0.0], [2.0]]), np.array([0, 1, 1])
        >>> round(gbc_core.BinomialLoss().loss(y, raw), 4)
        0.3778
        >>> round(gbc_core.ExponentialLoss().loss(y, raw), 4)
        0.5011
        >>> raw3 = np.array([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 2.0]])
        >>> round(gbc_core.MultinomialLoss(3).loss(np.array([0, 1, 2]), raw3), 4)
        0.5497
        """
        return float(self._mean_loss(y, raw, _weights(sample_weight)))

    def _mean_loss(self, y, raw, w):
        return self._kernel(np.ascontiguousarray(y, dtype=np.float64),
                            np.ascontiguousarray(raw[:, 0], dtype=np.float64), w)


@fill_docs(_DOC_PIECES)
class BinomialLoss(_FusedLoss):
    """The log-loss of two classes with one raw score per row (the paper's model):
    p = sigma(F), trees fitted to r = y - p, leaf values sum w r / sum w p (1 - p).

    <<of_leaf_solver>>

    <<examples>>
    >>> loss = gbc_core.BinomialLoss()
    >>> round(loss.score_factor * loss.loss(np.array([0, 1]), np.zeros((2, 1))), 4)  # deviance
    1.3863
    """

    name = "log_loss"
    label = "log-loss"
    link = LogitLink()
    #: scikit-learn's ``train_score_`` (and OOB and validation scores) of two classes
    #: is the binomial deviance: twice the mean log-loss.
    score_factor = 2.0
    _state = staticmethod(BinomialFit)
    _kernel = staticmethod(_leaves.weighted_log_loss)

    def _bind(self, n_classes, leaf_solver):
        # One name, "log_loss", for two classes and for more: their count decides.
        if n_classes == 2:
            return BinomialLoss(leaf_solver)
        return MultinomialLoss(n_classes, leaf_solver)


@fill_docs(_DOC_PIECES)
class MultinomialLoss(_FusedLoss):
    """The log-loss of K >= 3 classes with one raw score per class: p = softmax(F),
    the mean of -log p_y (the recorded losses are it, as scikit-learn's scores of K >= 3
    classes: ``score_factor`` 1).

    Parameters
    ----------
    n_classes : int
        K >= 3.
    <<leaf_solver>>

    <<examples>>
    >>> X, y = [[0.0], [1.0], [2.0]], [0, 1, 2]
    >>> model = gbc_core.GradientBoostingClassifier(n_estimators=2).fit(X, y)
    >>> type(model.booster_.loss_function).__name__
    'MultinomialLoss'
    """

    name = "log_loss"
    label = "log-loss"
    link = SoftmaxLink()

    def __init__(self, n_classes, leaf_solver="newton"):
        if n_classes < 3:
            raise ValueError(f"the multinomial loss needs 3 or more classes, got {n_classes}")
        super().__init__(leaf_solver)
        self.n_classes = n_classes
        self.n_outputs = n_classes

    def _bind(self, n_classes, leaf_solver):
        return BinomialLoss._bind(self, n_classes, leaf_solver)

    def _state(self, *args):
        return MultinomialFit(self.n_classes, *args)

    def _mean_loss(self, y, raw, w):
        return _leaves.multinomial_log_loss(np.ascontiguousarray(y, dtype=np.int32),
                                            np.ascontiguousarray(raw, dtype=np.float64), w)


@fill_docs(_DOC_PIECES)
class ExponentialLoss(_FusedLoss):
    """AdaBoost's exponential loss of two classes, one raw score per row
    (scikit-learn's ``GradientBoostingClassifier(loss="exponential")``).

    L(y, F) = y e^-F + (1 - y) e^F for class codes y in {0, 1}; p = sigma(2F) (the
    probability that minimises the expected loss); a row is predicted class 1 where
    F >= 0. Trees fit r = y e^-F - (1 - y) e^F; leaf values are scikit-learn's
    Newton step sum w r / sum w abs(r) (abs(r) is the Hessian), always in [-1, 1].
    The recorded losses are the mean loss itself, scikit-learn's scale
    (``score_factor`` 1).

    <<of_leaf_solver>>

    <<examples>>
    >>> model = gbc_core.GradientBoostingClassifier(n_estimators=2, loss="exponential")
    >>> model = model.fit([[0.0], [1.0]], [0, 1])
    >>> isinstance(model.booster_.loss_function, gbc_core.ExponentialLoss)
    True
    """

    name = "exponential"
    #: p = sigma(2F): scikit-learn's probabilities of the exponential loss.
    link = HalfLogitLink()
    _state = staticmethod(ExponentialFit)
    _kernel = staticmethod(_leaves.exponential_loss)

    def _bind(self, n_classes, leaf_solver):
        if n_classes > 2:
            raise ValueError(
                f"loss='{self.name}' is only suitable for a binary classification "
                f"problem, you have n_classes={n_classes}. Please use loss='log_loss' "
                "instead.")
        return ExponentialLoss(leaf_solver)


_BUILTIN_CLASSES = (BinomialLoss, MultinomialLoss, ExponentialLoss)
#: The built-in losses by name ("log_loss": two classes or more, their count decides).
_BUILTIN = {"log_loss": BinomialLoss, "exponential": ExponentialLoss}
#: Every loss a name selects: the built-in ones and those of :func:`register_loss`.
_REGISTRY = dict(_BUILTIN)


def register_loss(loss_class):
    """Register a custom loss class by its ``name``: a model file naming it loads
    (as ``loss_class()``, which must construct without arguments), and ``loss=name`` selects
    it. Usable as a class decorator; registering a name again replaces its class.

    Parameters
    ----------
    loss_class : type
        A subclass of :class:`Loss` with a ``name`` of its own.

    Returns
    -------
    type
        ``loss_class``.

    Raises
    ------
    TypeError
        For what is not a :class:`Loss` subclass, or one the protocol refuses.
    ValueError
        For the name of a built-in loss.

    Examples
    --------
    >>> import numpy as np
    >>> from gbc_core import Loss, register_loss
    >>> @register_loss
    ... class Squared(Loss):
    ...     name = "doc_squared"
    ...     def gradient_hessian(self, y, raw):
    ...         return raw[:, 0] - y, np.ones(len(y))
    ...     def pointwise_loss(self, y, raw):
    ...         return 0.5 * (raw[:, 0] - y) ** 2
    >>> Squared.name
    'doc_squared'
    """
    if not (isinstance(loss_class, type) and issubclass(loss_class, Loss)):
        raise TypeError(f"register_loss takes a subclass of gbc_core.Loss, got {loss_class!r}")
    if loss_class.name in _BUILTIN:
        raise ValueError(f"register_loss: {loss_class.name!r} is the name of a built-in loss; "
                         f"give {loss_class.__name__} a name of its own")
    try:
        instance = loss_class()
    except TypeError as exc:
        raise TypeError(f"register_loss: a model file's loss is rebuilt as "
                        f"{loss_class.__name__}(), which failed ({exc}); give its parameters "
                        "defaults") from None
    instance._check_protocol()
    _REGISTRY[loss_class.name] = loss_class
    return loss_class


def loss_names():
    """The names a ``loss`` parameter or a model file may hold now."""
    return tuple(_REGISTRY)


def lookup_loss(name):
    """The class of the loss ``name``, or a ValueError naming it and how to
    register it."""
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(
            f"unknown loss {name!r}: not a built-in loss ("
            + ", ".join(repr(n) for n in _BUILTIN) + ") and not registered; define its "
            f"class (a subclass of gbc_core.Loss with name = {name!r}) and call "
            "gbc_core.register_loss(ItsClass) first")
    return cls


def loss_name(loss):
    """The name of a ``loss`` parameter's value (a name, or a :class:`Loss`)."""
    return loss.name if isinstance(loss, Loss) else loss


def loss_for(n_classes, loss="log_loss", leaf_solver="newton"):
    """The loss ``loss`` (a name of the registry or a :class:`Loss`) of a classifier
    with ``n_classes`` classes.

    ``"log_loss"``: binomial for 2 classes, multinomial for more;
    ``"exponential"``: 2 classes only (scikit-learn's error otherwise); a custom
    loss: a copy of it for ``n_classes`` classes (:meth:`Loss.for_classes`).
    ``leaf_solver``: ``"newton"`` or ``"exact"`` (the leaf values of its fits).

    Raises
    ------
    ValueError
        For an unknown name or leaf solver, fewer than 2 classes, or a loss that does
        not take ``n_classes`` classes.
    TypeError
        For what is neither a name nor a :class:`Loss`, or a custom loss the
        protocol refuses.
    """
    _check_solver(leaf_solver)
    if isinstance(loss, str):
        loss = lookup_loss(loss)()
    elif not isinstance(loss, Loss):
        raise TypeError("loss must be a loss's name (" + ", ".join(map(repr, _REGISTRY))
                        + ") or an instance of a gbc_core.Loss subclass, got "
                        f"{type(loss).__name__}")
    return loss.for_classes(n_classes, leaf_solver)
