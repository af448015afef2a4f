"""One process's part of a data-parallel fit: the boosting loop on its rows.

Data-parallel training (the model of LightGBM's data-parallel tree learner): every
process holds its rows, binned with the same bin edges, and their raw scores,
probabilities and residuals for the whole fit, and runs the loop of
``_boosting.boost`` (the same code as one process) with the same grower and
``HistogramSplitFinder`` on them. Every sum the fit takes over rows is taken per
process and then *all-reduced* through ``comm``: the root's totals, the sums of
the splittable test and those of the tree rules (the grower's ``reducer``: the sums
of w r^2 each chosen split sends left for ``min_impurity_decrease``, every node's
impurity sums for ``ccp_alpha``), the histograms of the collected nodes (the
finder's ``reducer``; best first, those of the children of each split), and,
through :class:`ReducedLoss`, the class weights of
the prior, the numerators and denominators of the leaf values (one Newton step,
paper eq. 1; with ``leaf_solver="exact"`` the sums of every iteration of the
leaves' solve), the training, out-of-bag and validation losses. ``comm.allreduce``
adds the processes' arrays in a fixed order (process rank), so every process sees
the same numbers, chooses the same splits and grows the same trees. The in-bag rows
of ``subsample`` and the early-stopping hold-out are drawn by the rows' positions in
the concatenated data, as one process draws them (``_boosting.Part``,
``_boosting.holdout_draw``).

``comm`` is any object with ``allreduce(values, n_summed)`` (see
:class:`PartTrainer`); ``gbc_core.dask`` provides one on Dask actors. NumPy and the
kernels only: no Dask, no scikit-learn.
"""

import numpy as np

from . import _leaves
from ._boosting import (EarlyStopping, Part, boost, holdout_draw, holdout_sizes,  # noqa: F401
                        warm_start_from)  # (the client side of a fit uses these)
from ._common import ROW_STAT_DTYPE
from ._histogram_splitter import HistogramSplitFinder, bin_value_ranges
from ._loss import (ExponentialLoss, MultinomialLoss, exponential_overflow_error, loss_for,
                    prior_from_class_weights)
from ._split_methods import check_distributed

#: A Newton denominator below this makes the leaf value 0 (``_common.pxd``'s
#: HESSIAN_EPSILON, the guard of the kernels' leaf values).
HESSIAN_EPSILON = 1e-150

#: The parameters a distributed fit trains with any of their values; every other
#: parameter of ``_params.PARAMS`` must keep its default there (a new parameter is
#: refused until the distributed trainer is taught it and named here).
SUPPORTED_PARAMS = frozenset((
    "loss", "learning_rate", "n_estimators", "subsample", "min_samples_split",
    "min_samples_leaf", "min_weight_fraction_leaf", "max_depth", "init", "random_state",
    "max_features", "verbose", "warm_start", "validation_fraction", "n_iter_no_change",
    "tol", "n_jobs", "split_method", "max_bins", "class_weight", "leaf_solver", "criterion",
    "max_leaf_nodes", "min_impurity_decrease", "ccp_alpha",
))

#: The values of supported parameters a distributed fit does not train, and why (its
#: error message).
UNSUPPORTED_VALUES = {
    "init": ("an estimator", "scikit-learn fits an init estimator on the training "
             "rows, which stay on the workers (fitting it on a sample or on one "
             "worker's rows would be another model); use init='zero' or 'prior', or "
             "fit the estimator on the data yourself and train on its residual scores "
             "in memory"),
}


def _is_default(value, default):
    """``value`` is ``default`` (0 for 0.0 too; True is not 1)."""
    if value is default:
        return True
    if isinstance(value, (bool, np.bool_)) != isinstance(default, (bool, np.bool_)):
        return False
    try:
        return bool(value == default)
    except Exception:  # noqa: BLE001 - an array, an estimator: not the default
        return False


def check_supported(params):
    """Refuse, naming the parameter and why, what a distributed fit does not train:
    a parameter not in :data:`SUPPORTED_PARAMS` set away from its default, and the
    values of :data:`UNSUPPORTED_VALUES` and the split methods it does not train
    (``_split_methods``)."""
    from ._params import DEFAULTS

    for name, value in params.items():
        if name not in SUPPORTED_PARAMS and name in DEFAULTS:
            default = DEFAULTS[name]
            if not _is_default(value, default):
                raise ValueError(f"{name}={value!r} is not supported by the distributed "
                                 f"fit (only its default, {default!r})")
    if "split_method" in params:
        check_distributed(params["split_method"])  # the methods' own rule
    init = params.get("init")
    if not (init is None or isinstance(init, str)):
        raise ValueError(f"init={type(init).__name__}(...): an init estimator is not "
                         f"supported by the distributed fit: {UNSUPPORTED_VALUES['init'][1]}")


class _Reducer:
    """The grower's and the finder's ``reducer`` hooks on ``comm``."""

    def __init__(self, comm):
        self.comm = comm

    def grower(self, values, n_summed):
        values[...] = self.comm.allreduce(values, n_summed)

    def finder(self, histograms, collected):
        if collected.size == 0:
            return
        part = histograms[collected]
        flat = np.stack([part["n"].astype(np.float64), part["w"], part["s"]], axis=-1)
        total = self.comm.allreduce(flat, 3)
        part["n"] = total[..., 0].astype(np.int64)
        part["w"] = total[..., 1]
        part["s"] = total[..., 2]
        histograms[collected] = part


def allreduce_local(arrays, n_summed):
    """The all-reduce of ``arrays`` (one per process, in process order): the
    element-wise sums of the first ``n_summed`` columns of the last axis, added in
    process order, then the minimum of one column and the maximum of the next,
    where there are such columns."""
    out = np.array(arrays[0], dtype=np.float64, copy=True)
    for a in arrays[1:]:
        a = np.asarray(a, dtype=np.float64)
        if a.shape != out.shape:
            raise ValueError(f"the processes sent arrays of shapes {out.shape} and "
                             f"{a.shape} for the same step")
        out[..., :n_summed] += a[..., :n_summed]
        if out.shape[-1] > n_summed:
            np.minimum(out[..., n_summed], a[..., n_summed], out=out[..., n_summed])
        if out.shape[-1] > n_summed + 1:
            np.maximum(out[..., n_summed + 1:], a[..., n_summed + 1:],
                       out=out[..., n_summed + 1:])
    return out


def bin_parts(parts, mapper, n_threads):
    """The bins of a part's partitions, each binned apart (``parts``: float32 arrays,
    converted one at a time by the caller's iterator), and the bins' value ranges.

    Returns
    -------
    bins : uint8 array of shape (n_rows, n_features), Fortran order
    lo, hi : float32 arrays: the smallest and largest value of each bin in these
        rows (to be reduced over the parts by element-wise min / max)
    """
    missing = int(mapper.missing_bin)
    blocks, lo, hi = [], None, None
    for X in parts:
        X = np.asfortranarray(X, dtype=np.float32)
        b = mapper.transform(X, n_threads)
        p_lo, p_hi = bin_value_ranges(X, b, missing, n_threads)
        lo = p_lo if lo is None else np.minimum(lo, p_lo)
        hi = p_hi if hi is None else np.maximum(hi, p_hi)
        blocks.append(b)
        del X
    bins = np.asfortranarray(np.concatenate(blocks, axis=0))
    return bins, lo, hi


class ReducedLoss:
    """A loss of ``_loss`` whose sums over rows are all-reduced through ``comm``: the
    loss of :func:`_boosting.boost` in a process of a data-parallel fit.

    It offers what the loop uses (``n_outputs``, ``score_factor``, ``initial_raw``,
    ``start`` and its state, ``loss``) with the loss's leaf solver: one Newton step
    per leaf (eq. 1), or the exact solve (``leaf_solver="exact"``), whose every
    iteration reduces the leaves' sums (:func:`_exact_leaf_values`). The state's
    leaf sums are taken on this process's in-bag rows in row order, then summed over
    the processes in rank order; the losses alike, as (sum w l, sum w).
    """

    def __init__(self, loss, comm):
        self.base = loss
        self.exact = loss.leaf_solver == "exact"
        self.comm = comm
        self.name = loss.name
        self.n_outputs = loss.n_outputs
        self.score_factor = loss.score_factor
        self.link_scale = loss.link_scale

    def initial_raw(self, y, sample_weight, init):
        """F0: 0, or the prior of the class weights summed over every process (the
        loss's link of the weighted class frequencies: the log-odds, or log p_k -
        mean log p, over ``link_scale``)."""
        K = self.n_outputs
        if init == "zero":
            return np.zeros(K)
        n_classes = 2 if K == 1 else K
        w = None if sample_weight is None else np.ascontiguousarray(sample_weight,
                                                                    dtype=np.float64)
        sums, total = _leaves.class_weight_sums(np.ascontiguousarray(y, dtype=np.int32),
                                                w, n_classes)
        reduced = self.comm.allreduce(np.append(np.asarray(sums, dtype=np.float64), total),
                                      n_classes + 1)
        prior = prior_from_class_weights(reduced[:-1], K, reduced[-1])
        return prior if self.link_scale == 1.0 else prior / self.link_scale

    def start(self, y, sample_weight, raw, n_threads):
        if isinstance(self.base, ExponentialLoss):
            return _ExponentialState(self.comm, y, sample_weight, raw, self.exact)
        if isinstance(self.base, MultinomialLoss):
            return _MultinomialState(self.comm, self.base.n_classes, y, sample_weight, raw,
                                     n_threads, self.exact)
        return _BinomialState(self.comm, y, sample_weight, raw, self.exact)

    def loss(self, y, raw, sample_weight=None):
        """The weighted mean loss of every process's rows (validation rows)."""
        if y.shape[0]:
            mean = self.base.loss(y, raw, sample_weight)
            weight = _weight_of(sample_weight, y.shape[0])
        else:
            mean = weight = 0.0
        return _reduced_mean(self.comm, mean, weight)


def _weight_of(w, n):
    return float(n) if w is None else float(_leaves.weight_total(
        np.ascontiguousarray(w, dtype=np.float64)))


def _reduced_mean(comm, mean, weight):
    total = comm.allreduce(np.array([mean * weight, weight], dtype=np.float64), 2)
    return float(total[0] / total[1]) if total[1] > 0 else 0.0


def _select(a, rows):
    """The rows ``rows`` (a mask or indices; None: all) of ``a`` (None: None)."""
    return a if rows is None or a is None else a[rows]


def _leaf_values(comm, nodes, leaf_of_row, in_bag, w, numerator, denominator, factor):
    """``nodes["value"]``: the Newton step factor * sum w numerator / sum w
    denominator of every leaf, over the in-bag rows of every process (0 for inner
    nodes and where the denominator vanishes). Returns the values."""
    m = nodes.shape[0]
    leaf = _select(np.asarray(leaf_of_row), in_bag)
    w = _select(w, in_bag)
    num = _select(numerator, in_bag)
    den = _select(denominator, in_bag)
    sums = np.zeros((m, 2))
    if leaf.shape[0]:
        # Products first, then the sums in row order (the kernels' w * r, w * h).
        sums[:, 0] = np.bincount(leaf, weights=num if w is None else w * num, minlength=m)
        sums[:, 1] = np.bincount(leaf, weights=den if w is None else w * den, minlength=m)
    sums = comm.allreduce(sums, 2)
    value = np.zeros(m)
    ok = (nodes["feature"] < 0) & ~(np.abs(sums[:, 1]) < HESSIAN_EPSILON)
    value[ok] = (factor * sums[ok, 0]) / sums[ok, 1]
    nodes["value"] = value
    return value


def _exact_leaf_values(comm, nodes, leaf_of_row, sample_mask, codes, positive, z, w,
                       exponential):
    """``nodes["value"]``: the exact gamma of every leaf over the in-bag rows of every
    process (``_leaves``' exact leaf solve: the log-loss of log-odds ``z`` with
    targets ``codes == positive``, or the exponential loss of raw scores ``z``). The
    first sums of each leaf are reduced, then every iteration's (g, h) (the
    log-loss: a safeguarded Newton iteration, each step one reduce; every process
    sees the same sums, so all step alike and stop together) or the two shifted
    sums (the exponential loss: its closed form). Returns the values."""
    m = nodes.shape[0]
    leaf = np.ascontiguousarray(leaf_of_row, dtype=np.int32)
    z = np.ascontiguousarray(z, dtype=np.float64)
    bounds = np.empty((m, 4 if exponential else 5))
    _leaves.exact_solve_bounds(codes, positive, z, w, leaf, sample_mask, bounds,
                               int(exponential))
    bounds = np.ascontiguousarray(comm.allreduce(bounds, 2 if exponential else 3))
    state = np.zeros((m, 7))
    active = _leaves.exact_solve_start(bounds, (nodes["feature"] < 0).astype(np.uint8),
                                       state, int(exponential))
    sums = np.empty((m, 2))
    if exponential:
        if active:
            _leaves.exponential_solve_sums(codes, z, w, leaf, sample_mask, bounds, state,
                                           sums)
            _leaves.exponential_solve_finish(
                state, bounds, np.ascontiguousarray(comm.allreduce(sums, 2)))
    else:
        while active:
            _leaves.logistic_solve_sums(codes, positive, z, w, leaf, sample_mask, state,
                                        sums)
            active = _leaves.logistic_solve_step(
                state, np.ascontiguousarray(comm.allreduce(sums, 2)))
    value = state[:, 0].copy()
    nodes["value"] = value
    return value


def _in_bag(mask):
    return None if mask is None else mask.astype(bool)


class _BinomialState:
    """The binomial log-loss state of this process's rows (``_loss``'s, with the
    leaf sums and losses reduced)."""

    def __init__(self, comm, y, w, raw, exact=False):
        self.comm = comm
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.codes = np.ascontiguousarray(y, dtype=np.int32) if exact else None
        self.w = w
        n = self.y.shape[0]
        self.raw = np.ascontiguousarray(raw[:, 0], dtype=np.float64).copy()
        self.prob = np.empty(n)
        self.residual = np.empty(n)
        self.row_stats = np.empty(n, dtype=ROW_STAT_DTYPE)
        _leaves.init_state(self.y, w, self.raw, self.prob, self.residual, self.row_stats)

    def tree_target(self, k):
        return self.row_stats, self.residual

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        p = self.prob
        if self.codes is not None:
            value = _exact_leaf_values(self.comm, nodes, leaf_of_row, sample_mask,
                                       self.codes, 1, self.raw, self.w, False)
        else:
            value = _leaf_values(self.comm, nodes, leaf_of_row, _in_bag(sample_mask),
                                 self.w, self.residual, p * (1.0 - p), 1.0)
        self.raw += (learning_rate * value)[np.asarray(leaf_of_row)]
        _leaves.init_state(self.y, self.w, self.raw, self.prob, self.residual,
                           self.row_stats)

    def _loss(self, rows):
        y, raw, w = _select(self.y, rows), _select(self.raw, rows), _select(self.w, rows)
        mean = float(_leaves.weighted_log_loss(y, raw, w)) if y.shape[0] else 0.0
        return _reduced_mean(self.comm, mean, _weight_of(w, y.shape[0]))

    def finish_iteration(self, sample_mask):
        return self._loss(_in_bag(sample_mask))

    def held_out_loss(self, held_out):
        return self._loss(held_out)


class _MultinomialState:
    """The multinomial log-loss state (K rows of per-class arrays, as ``_loss``'s)."""

    def __init__(self, comm, n_classes, y, w, raw, n_threads, exact=False):
        self.comm = comm
        self.exact = exact
        self.y = np.ascontiguousarray(y, dtype=np.int32)
        self.w = w
        self.n_threads = n_threads
        self.factor = (n_classes - 1) / n_classes
        n = self.y.shape[0]
        self.raw = np.array(np.asarray(raw, dtype=np.float64).T, order="C")  # a copy
        self.prob = np.empty((n_classes, n))
        self.residual = np.empty((n_classes, n))
        self.row_stats = np.empty(n, dtype=ROW_STAT_DTYPE)
        _leaves.multinomial_state(self.raw, self.y, w, None, self.prob, self.residual,
                                  n_threads)
        # The exact leaf solve: each class's log-odds against the others at the start
        # of the iteration (as ``_loss``'s multinomial state).
        self.log_odds = np.empty((n_classes, n)) if exact else None
        if exact:
            _leaves.class_log_odds(self.raw, self.log_odds)

    def tree_target(self, k):
        _leaves.row_stats_of(self.residual[k], self.w, self.row_stats)
        return self.row_stats, self.residual[k]

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        p = self.prob[k]
        if self.exact:
            value = _exact_leaf_values(self.comm, nodes, leaf_of_row, sample_mask, self.y,
                                       k, self.log_odds[k], self.w, False)
        else:
            value = _leaf_values(self.comm, nodes, leaf_of_row, _in_bag(sample_mask),
                                 self.w, self.residual[k], p * (1.0 - p), self.factor)
        self.raw[k] += (learning_rate * value)[np.asarray(leaf_of_row)]

    def finish_iteration(self, sample_mask):
        mean = _leaves.multinomial_state(self.raw, self.y, self.w, sample_mask, self.prob,
                                         self.residual, self.n_threads)
        if self.exact:
            _leaves.class_log_odds(self.raw, self.log_odds)
        rows = _in_bag(sample_mask)
        n = self.y.shape[0] if rows is None else int(np.count_nonzero(rows))
        return _reduced_mean(self.comm, float(mean), _weight_of(_select(self.w, rows), n))

    def held_out_loss(self, held_out):
        y, w = self.y[held_out], _select(self.w, held_out)
        mean = (float(_leaves.multinomial_log_loss(
            y, np.ascontiguousarray(self.raw[:, held_out].T), w)) if y.shape[0] else 0.0)
        return _reduced_mean(self.comm, mean, _weight_of(w, y.shape[0]))


class _ExponentialState:
    """The exponential loss state (``_loss``'s, with the leaf sums and losses
    reduced): leaf values sum w r / sum w |r|."""

    def __init__(self, comm, y, w, raw, exact=False):
        self.comm = comm
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.codes = np.ascontiguousarray(y, dtype=np.int32) if exact else None
        self.w = w
        n = self.y.shape[0]
        self.raw = np.ascontiguousarray(raw[:, 0], dtype=np.float64).copy()
        self.residual = np.empty(n)
        self.row_stats = np.empty(n, dtype=ROW_STAT_DTYPE)
        self._rows()

    def _rows(self):
        n_overflow = _leaves.exponential_state(self.y, self.w, self.raw, self.residual,
                                               self.row_stats)
        if n_overflow:
            raise exponential_overflow_error(n_overflow)

    def tree_target(self, k):
        return self.row_stats, self.residual

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        if self.codes is not None:
            value = _exact_leaf_values(self.comm, nodes, leaf_of_row, sample_mask,
                                       self.codes, 1, self.raw, self.w, True)
        else:
            value = _leaf_values(self.comm, nodes, leaf_of_row, _in_bag(sample_mask),
                                 self.w, self.residual, np.abs(self.residual), 1.0)
        self.raw += (learning_rate * value)[np.asarray(leaf_of_row)]
        self._rows()

    def _loss(self, rows):
        y, raw, w = _select(self.y, rows), _select(self.raw, rows), _select(self.w, rows)
        mean = float(_leaves.exponential_loss(y, raw, w)) if y.shape[0] else 0.0
        return _reduced_mean(self.comm, mean, _weight_of(w, y.shape[0]))

    def finish_iteration(self, sample_mask):
        return self._loss(_in_bag(sample_mask))

    def held_out_loss(self, held_out):
        return self._loss(held_out)


class PartTrainer:
    """One process's part of a data-parallel fit: its binned rows and fit state.

    Parameters
    ----------
    bins : uint8 array of shape (n_rows, n_features), Fortran order
        This part's training rows of positive weight (possibly none), binned with
        the mapper of every part (:func:`bin_parts`).
    n_bins_non_missing : int32 array (n_features,)
    missing_bin : int
        As the ``BinMapper``'s.
    codes : int array of shape (n_rows,)
        Class codes 0 .. n_classes - 1 (the classes of every part together).
    sample_weight : float64 array or None
        Already scaled (the same power of two in every part), all positive.
    rows : int64 array of shape (n_rows,)
        The position of each row among the training rows of every part in their
        concatenated order (zero weights included): ``subsample`` draws by it.
    n_samples : int
        The training rows of every part (zero weights included).
    eval_part : tuple (X_val float32 C order, codes, weights or None) or None
        This part's validation rows (``eval_set`` or the early-stopping hold-out).
    X : float32 array (n_rows, n_features), Fortran order, or None
        The raw values of the rows, kept only where ``subsample < 1`` (out-of-bag
        rows are routed on them, as the model predicts).
    previous_raw : float64 array (n_rows, n_outputs) or None
        With a warm start: the raw scores of the fitted model on these rows.
    """

    def __init__(self, bins, n_bins_non_missing, missing_bin, codes, sample_weight, rows,
                 n_samples, eval_part=None, X=None, previous_raw=None):
        self.bins = bins
        self.n_bins = np.asarray(n_bins_non_missing, dtype=np.int32)
        self.missing_bin = int(missing_bin)
        self.codes = np.ascontiguousarray(codes, dtype=np.int32)
        self.w = sample_weight
        self.rows = np.ascontiguousarray(rows, dtype=np.int64)
        self.n_samples = int(n_samples)
        self.eval_part = eval_part
        self.X = X
        self.previous_raw = previous_raw

    def fit(self, comm, n_classes, params, seed, lo, hi, previous=None):
        """Run :func:`_boosting.boost` with the other parts (each calls this with the
        same arguments but ``comm``'s rank).

        Parameters
        ----------
        comm : object with ``allreduce(values, n_summed)``
        n_classes : int
        params : dict
            Resolved parameters (``_params.resolve`` on the totals of every part).
        seed : int
        lo, hi : float32 arrays
            The bins' value ranges over every part.
        previous : tuple (Ensemble, FitRecord) or None
            The model to continue (warm start; ``previous_raw`` holds its scores).

        Returns
        -------
        ensemble : Ensemble
        record : FitRecord
        """
        loss = ReducedLoss(loss_for(n_classes, params["loss"], params["leaf_solver"]), comm)
        red = _Reducer(comm)
        finder = HistogramSplitFinder(self.bins, self.n_bins, lo, hi, self.missing_bin,
                                      params["n_threads"])
        finder.reducer = red.finder
        part = Part(finder, red.grower, self.n_samples, self.rows, self.previous_raw)
        callbacks = []
        if params["n_iter_no_change"] is not None and self.eval_part is not None:
            callbacks.append(EarlyStopping(params["n_iter_no_change"], params["tol"]))
        return boost(self.X, self.codes, self.w, loss, params, seed,
                     eval_set=self.eval_part, previous=previous, callbacks=callbacks,
                     part=part)
