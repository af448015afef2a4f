"""The links of the losses: how raw scores F become class probabilities.

As scikit-learn's ``sklearn/_loss/link.py`` pairs each loss with a link, every
loss of ``_loss`` has a ``link`` object, and everything that only maps raw scores
to probabilities (prediction, the ONNX export, ``to_sklearn``, the ``inspect``
command, the initial raw scores of ``init="prior"`` or of an init estimator) reads
the link, never the loss's name:

- :class:`LogitLink`: two classes, one raw score, p = sigma(F) (the paper's eq. 3);
- :class:`HalfLogitLink`: two classes, p = sigma(2F) (scikit-learn's exponential
  loss: F is half the log-odds);
- :class:`SoftmaxLink`: K >= 3 classes, K raw scores, p = softmax(F).

A link's ``name`` is what an exporter dispatches on (a new link needs its ONNX
nodes in ``onnx.py``). The numbers are the kernels' of ``_leaves.pyx``.
"""

import numpy as np

from . import _leaves
from ._docstrings import fill_docs

_EPS = np.finfo(np.float64).eps


def prior_from_class_weights(class_weight, n_outputs, total=None):
    """The log-odds (two classes) or centred log-probabilities (K classes) of the
    weighted class frequencies (shape (n_outputs,)) from the weight of each class (a
    distributed fit reduces these sums over its processes); ``total`` defaults to
    their sum in class order. The logarithms are the kernel's own (``_exp.h``:
    fdlibm's log, the same bits on every CPU), so that F0 does not depend on the CPU
    or the C library."""
    class_weight = np.ascontiguousarray(class_weight, dtype=np.float64)
    if total is None:
        total = _leaves.weight_total(class_weight)
    out = np.empty(n_outputs, dtype=np.float64)
    _leaves.prior_raw(class_weight, total, _EPS, out)
    return out


def _raw_from_proba(proba, n_outputs, scale):
    """Raw scores (n, n_outputs) of class probabilities (an init estimator's)."""
    p = np.ascontiguousarray(proba, dtype=np.float64)
    out = np.empty((p.shape[0], n_outputs), dtype=np.float64)
    _leaves.raw_from_proba(p, scale, _EPS, out)
    return out


#: Docstring pieces of the links and of the losses (``_docstrings.fill_docs``): a
#: docstring line ``<<name>>`` stands for the piece ``name``.
DOC_PIECES = {
    "raw": "raw : ndarray of shape (n_samples, n_outputs)\n    Raw scores F.",
    "n_threads": "n_threads : int, default=1\n    Threads.",
    "of_raw": "Parameters\n----------\n<<raw>>",
    "of_raw_threads": "Parameters\n----------\n<<raw>>\n<<n_threads>>",
    "of_proba": ("Parameters\n----------\nproba : array-like of shape (n_samples, n_classes)\n"
                 "    Class probabilities."),
    "of_class_weight": (
        "Parameters\n----------\nclass_weight : array-like of shape (n_classes,)\n"
        "    The weight of each class.\ntotal : float, optional\n"
        "    Their sum (None: summed here)."),
    "of_n_classes": "Parameters\n----------\nn_classes : int\n    The number of classes.",
    "to_proba": ("Returns\n-------\nndarray of shape (n_samples, n_classes)\n"
                 "    Class probabilities."),
    "to_log_proba": ("Returns\n-------\nndarray of shape (n_samples, n_classes)\n"
                     "    The logarithms of the class probabilities."),
    "to_raw": "Returns\n-------\nndarray of shape (n_samples, n_outputs)\n    Raw scores.",
    "to_codes": "Returns\n-------\nndarray of intp, shape (n_samples,)\n    Class codes.",
    "examples": "Examples\n--------\n>>> import numpy as np\n>>> import gbc_core",
}


class _Link:
    """What every link has, which the losses, prediction and the exporters use: the
    attributes and methods below (each link's class defines and documents them)."""

    #: What exporters dispatch on.
    name = None
    #: Two classes: p = sigma(scale * F), the log-odds are scale * F (1 for softmax).
    scale = 1.0
    #: The formula, for people (``gbc-core inspect``).
    formula = None
    #: The classes it takes, for people (a model file's error).
    classes = None

    def n_outputs(self, n_classes):  # raw scores per row, or a ValueError
        raise NotImplementedError

    def log_odds(self, raw):  # what an exporter writes before the sigmoid or softmax
        raise NotImplementedError

    def inverse(self, raw, n_threads=1):  # class probabilities
        raise NotImplementedError

    def log_inverse(self, raw):  # their logarithms
        raise NotImplementedError

    def decision(self, raw):  # class codes
        raise NotImplementedError

    def link(self, proba):  # raw scores of class probabilities
        raise NotImplementedError

    def prior(self, class_weight, total=None):  # F0 of init="prior"
        raise NotImplementedError


@fill_docs(DOC_PIECES)
class LogitLink(_Link):
    """Two classes, one raw score per row: p = sigma(``scale`` * F) is the
    probability of class 1 (the paper's eq. 3 for ``scale`` 1).

    <<examples>>
    >>> gbc_core.LogitLink().inverse(np.array([[0.0], [2.0]])).round(3).tolist()
    [[0.5, 0.5], [0.119, 0.881]]
    """

    name = "logit"
    formula = "p = sigma(F)"
    classes = "two classes (n_outputs 1)"

    def n_outputs(self, n_classes):
        """Raw scores per row of a classifier of ``n_classes`` classes: 1.

        <<of_n_classes>>

        Returns
        -------
        int
            1.

        Raises
        ------
        ValueError
            For any number of classes but 2.

        <<examples>>
        >>> gbc_core.LogitLink().n_outputs(2)
        1
        """
        if n_classes != 2:
            raise ValueError(f"the {self.name} link is a link of two classes, got "
                             f"{n_classes} classes (the softmax link has one raw score "
                             "per class)")
        return 1

    def log_odds(self, raw):
        """The log-odds of the probabilities of raw scores (n, 1): ``scale`` * F,
        what an exporter writes before the sigmoid.

        <<of_raw>>

        <<to_raw>>

        <<examples>>
        >>> gbc_core.HalfLogitLink().log_odds(np.array([[1.5]])).tolist()
        [[3.0]]
        """
        return raw if self.scale == 1.0 else np.multiply(raw, self.scale)

    def inverse(self, raw, n_threads=1):
        """Class probabilities (n, 2) of raw scores: column 1 is sigma(``scale`` * F).

        <<of_raw_threads>>

        <<to_proba>>

        <<examples>>
        >>> gbc_core.LogitLink().inverse(np.array([[-1.0]])).round(3).tolist()
        [[0.731, 0.269]]
        """
        out = np.empty((raw.shape[0], 2), dtype=np.float64)
        _leaves.proba_from_raw(
            np.ascontiguousarray(self.log_odds(raw)[:, 0], dtype=np.float64), out, n_threads)
        return out

    def log_inverse(self, raw):
        """log of :meth:`inverse`, computed from the log-odds without overflow or
        log(0).

        <<of_raw>>

        <<to_log_proba>>

        <<examples>>
        >>> bool(np.isfinite(gbc_core.LogitLink().log_inverse(np.array([[-800.0]]))).all())
        True
        """
        out = np.empty((raw.shape[0], 2), dtype=np.float64)
        _leaves.binomial_log_proba(
            np.ascontiguousarray(self.log_odds(raw)[:, 0], dtype=np.float64), out)
        return out

    def decision(self, raw):
        """Class codes of raw scores: 1 where F >= 0 (p >= 0.5), as scikit-learn.

        <<of_raw>>

        <<to_codes>>

        <<examples>>
        >>> gbc_core.LogitLink().decision(np.array([[-1.0], [0.0]])).tolist()
        [0, 1]
        """
        return (raw[:, 0] >= 0).astype(np.intp)

    def link(self, proba):
        """Raw scores (n, 1) of class probabilities (n, 2): log(p / (1 - p)) /
        ``scale`` of p = proba[:, 1] clipped to [eps, 1 - eps] (an init estimator's
        probabilities, as scikit-learn's ``_init_raw_predictions``).

        <<of_proba>>

        <<to_raw>>

        <<examples>>
        >>> gbc_core.LogitLink().link(np.array([[0.5, 0.5]])).tolist()
        [[0.0]]
        """
        return _raw_from_proba(proba, 1, 1.0 / self.scale)

    def prior(self, class_weight, total=None):
        """F0 of ``init="prior"`` from the weight of each class: the log-odds of the
        weighted class frequencies over ``scale`` (0 when a class has no weight).

        <<of_class_weight>>

        Returns
        -------
        ndarray of shape (1,)

        <<examples>>
        >>> gbc_core.LogitLink().prior([1.0, 1.0]).tolist()
        [0.0]
        """
        prior = prior_from_class_weights(class_weight, 1, total)
        return prior if self.scale == 1.0 else prior / self.scale


@fill_docs(DOC_PIECES)
class HalfLogitLink(LogitLink):
    """Two classes, p = sigma(2F): F is half the log-odds (scikit-learn's link of
    the exponential loss).

    <<examples>>
    >>> gbc_core.HalfLogitLink().inverse(np.array([[1.0]])).round(3).tolist()
    [[0.119, 0.881]]
    """

    name = "half_logit"
    scale = 2.0
    formula = "p = sigma(2F)"


@fill_docs(DOC_PIECES)
class SoftmaxLink(_Link):
    """K >= 3 classes, one raw score per class: p = softmax(F).

    <<examples>>
    >>> gbc_core.SoftmaxLink().inverse(np.zeros((1, 3))).round(3).tolist()
    [[0.333, 0.333, 0.333]]
    """

    name = "softmax"
    formula = "p = softmax(F)"
    classes = "3 or more classes (n_outputs the number of classes)"

    def n_outputs(self, n_classes):
        """One raw score per class: ``n_classes`` raw scores per row, for 3 classes or
        more.

        <<of_n_classes>>

        Returns
        -------
        int
            ``n_classes``.

        Raises
        ------
        ValueError
            For fewer than 3 classes.

        <<examples>>
        >>> gbc_core.SoftmaxLink().n_outputs(4)
        4
        """
        if n_classes < 3:
            raise ValueError(f"the softmax link needs 3 or more classes, got {n_classes} "
                             "(two classes have one raw score: the logit link)")
        return n_classes

    def log_odds(self, raw):
        """The raw scores themselves (their softmax is the probabilities).

        <<of_raw>>

        <<to_raw>>

        <<examples>>
        >>> gbc_core.SoftmaxLink().log_odds(np.ones((1, 3))).tolist()
        [[1.0, 1.0, 1.0]]
        """
        return raw

    def inverse(self, raw, n_threads=1):
        """Class probabilities (n, K): softmax of the raw scores.

        <<of_raw_threads>>

        <<to_proba>>

        <<examples>>
        >>> gbc_core.SoftmaxLink().inverse(np.array([[1.0, 0.0, -1.0]])).round(3).tolist()
        [[0.665, 0.245, 0.09]]
        """
        out = np.empty(raw.shape, dtype=np.float64)
        _leaves.softmax(np.ascontiguousarray(raw, dtype=np.float64), out, n_threads)
        return out

    def log_inverse(self, raw):
        """log of :meth:`inverse`: F_k - log sum_j exp(F_j), without log(0).

        <<of_raw>>

        <<to_log_proba>>

        <<examples>>
        >>> raw = np.array([[900.0, 0.0, -900.0]])
        >>> bool(np.isfinite(gbc_core.SoftmaxLink().log_inverse(raw)).all())
        True
        """
        out = np.empty(raw.shape, dtype=np.float64)
        _leaves.multinomial_log_proba(np.ascontiguousarray(raw, dtype=np.float64), out)
        return out

    def decision(self, raw):
        """Class codes of raw scores: the largest score (the first on ties).

        <<of_raw>>

        <<to_codes>>

        <<examples>>
        >>> gbc_core.SoftmaxLink().decision(np.array([[0.0, 2.0, 1.0]])).tolist()
        [1]
        """
        return np.argmax(raw, axis=1)

    def link(self, proba):
        """Raw scores (n, K) of class probabilities (n, K): log p_k - mean_j log p_j
        with p clipped to [eps, 1 - eps] (scikit-learn's ``_init_raw_predictions``).

        <<of_proba>>

        <<to_raw>>

        <<examples>>
        >>> gbc_core.SoftmaxLink().link(np.full((1, 3), 1 / 3)).round(12).tolist()
        [[0.0, 0.0, 0.0]]
        """
        proba = np.asarray(proba)
        return _raw_from_proba(proba, proba.shape[1], 1.0)

    def prior(self, class_weight, total=None):
        """F0 of ``init="prior"``: log p_k - mean_j log p_j with p the weighted
        class frequencies clipped to [eps, 1 - eps] (scikit-learn's prior).

        <<of_class_weight>>

        Returns
        -------
        ndarray of shape (n_classes,)

        <<examples>>
        >>> gbc_core.SoftmaxLink().prior([1.0, 1.0, 1.0]).round(12).tolist()
        [0.0, 0.0, 0.0]
        """
        class_weight = np.asarray(class_weight, dtype=np.float64)
        return prior_from_class_weights(class_weight, class_weight.shape[0], total)
