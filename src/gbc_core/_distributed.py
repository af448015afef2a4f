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
the same numbers, chooses the same splits and grows the same trees. The sums of a
level's splittable test (the root's totals with them) travel in the same step as
the level's histograms (``_Reducer.carry``): one all-reduce per level, best first
one per split; the log-loss's training loss carries the next tree's grid maxima
(``_loss_state.OneScoreFit.take_grid_maxima``). The in-bag rows
of ``subsample`` and the early-stopping hold-out are drawn by the rows' positions in
the concatenated data, as one process draws them (``_boosting.Part``,
``_boosting.holdout_draw``).

``comm`` is any object with ``allreduce(values, n_summed)`` (see
:class:`PartTrainer`); ``_socket_allreduce.SocketComm`` is one (rank to rank 0 over
TCP, as ``gbc_core.dask`` uses it), ``gbc_core.dask`` also has one on a Dask actor. NumPy and the
kernels only: no Dask, no scikit-learn.
"""

import numpy as np

from ._boosting import (EarlyStopping, Part, boost, holdout_draw, holdout_sizes,  # noqa: F401
                        warm_start_from)  # (the client side of a fit uses these)
from ._histogram_splitter import (HistogramSplitFinder, bin_value_ranges, pack_bins,
                                  unpack_bins)
from ._loss import loss_for
from ._loss_state import reduced_mean, weight_of
from ._split_methods import check_distributed

#: The parameters a distributed fit trains with any of their values; every other
#: parameter of ``_params.PARAMS`` must keep its default there (a new parameter is
#: refused until the distributed trainer is taught it and named here).
SUPPORTED_PARAMS = frozenset((
    "loss", "learning_rate", "n_estimators", "subsample", "min_samples_split",
    "min_samples_leaf", "min_weight_fraction_leaf", "max_depth", "init", "random_state",
    "max_features", "verbose", "warm_start", "validation_fraction", "n_iter_no_change",
    "tol", "n_jobs", "split_method", "max_bins", "class_weight", "leaf_solver", "criterion",
    "max_leaf_nodes", "min_impurity_decrease", "ccp_alpha", "monotonic_cst",
    "interaction_cst", "categorical_features", "min_samples_category",
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
    """The grower's and the finder's ``reducer`` hooks on ``comm``.

    Called as the grower's ``reducer``, a step of its own; ``carry`` keeps the
    grower's sums of a level (its splittable test, the root's totals) for the
    finder's next step, which all-reduces them with the level's histograms in one
    array: one round trip per level (best first, per split) instead of two."""

    def __init__(self, comm):
        self.comm = comm
        self.carried = None
        # The array a histogram step sends (grown to the largest step's, per fit).
        self._packed = np.empty(0, dtype=np.float64)

    def __call__(self, values, n_summed):
        values[...] = self.comm.allreduce(values, n_summed)

    def carry(self, values, n_summed):
        """Keep ``values`` (columns as the grower's: ``n_summed`` sums, a minimum,
        maxima) to be reduced by the next :meth:`finder` step, which writes their
        sums into them."""
        if self.carried is not None:
            raise RuntimeError("the grower's sums were carried twice without a "
                               "histogram step between them")
        self.carried = (values, n_summed)

    def finder(self, histograms, collected):
        """All-reduce the ``collected`` nodes' histograms (BIN_DTYPE: int64 n,
        float64 w and s, packed; written back in place), with the carried sums."""
        carried, self.carried = self.carried, None
        if collected.size == 0 and carried is None:
            return
        # One row: the collected histograms as float64 triples (n, w, s), the counts
        # converted (``pack_bins``); then the carried sums, one minimum (unused: 0)
        # and the maxima, the carried minima among them negated (min(a, b) =
        # -max(-a, -b), exactly).
        if not histograms.flags.c_contiguous:
            # (A reshape would copy it, and the sums be written into the copy.)
            raise ValueError("the level's histograms must be C-contiguous")
        values = histograms.reshape(histograms.shape[0], -1).view(np.float64)
        counts = values.view(np.int64)
        n_hist = collected.size * values.shape[1]
        if carried is None:
            size = n_hist
        else:
            carried_values, n_summed = carried
            sums, low, high = (carried_values[:, :n_summed], carried_values[:, n_summed],
                               carried_values[:, n_summed + 1:])
            size = n_hist + sums.size + 1 + low.size + high.size
        if self._packed.size < size:
            self._packed = np.empty(size, dtype=np.float64)
        packed = self._packed[:size]
        pack_bins(counts, values, collected, packed[:n_hist])
        if carried is None:
            total = self.comm.allreduce(
                packed.reshape((collected.size,) + histograms.shape[1:] + (3,)), 3).reshape(-1)
        else:
            at = n_hist + sums.size
            packed[n_hist:at] = sums.ravel()
            packed[at] = 0.0
            np.negative(low, out=packed[at + 1:at + 1 + low.size])
            packed[at + 1 + low.size:] = high.ravel()
            total = self.comm.allreduce(packed[None, :], n_hist + sums.size)[0]
            sums[...] = total[n_hist:at].reshape(sums.shape)
            low[...] = -total[at + 1:at + 1 + low.size]
            high[...] = total[at + 1 + low.size:].reshape(high.shape)
        # (``total`` is read, never written: on the actor path it is the result
        # every rank shares.)
        unpack_bins(np.ascontiguousarray(total[:n_hist]), collected, counts, values)


def allreduce_local(arrays, n_summed):
    """The all-reduce of ``arrays`` (one per process, in process order): the
    element-wise sums of the first ``n_summed`` columns of the last axis, added in
    process order, then the minimum of one column and the maximum of the next,
    where there are such columns (:func:`add_rank`, one process after another)."""
    out = np.array(arrays[0], dtype=np.float64, copy=True)
    for a in arrays[1:]:
        a = np.asarray(a, dtype=np.float64)
        if a.shape != out.shape:
            raise ValueError(f"the processes sent arrays of shapes {out.shape} and "
                             f"{a.shape} for the same step")
        add_rank(out, a, n_summed)
    return out


def add_rank(total, part, n_summed):
    """Add the next process's array ``part`` into ``total`` (float64, the same
    shape), in place, as :func:`allreduce_local` does: the first ``n_summed``
    columns of the last axis summed, the minimum of the next column and the
    maximum of the rest."""
    total[..., :n_summed] += part[..., :n_summed]
    if total.shape[-1] > n_summed:
        np.minimum(total[..., n_summed], part[..., n_summed], out=total[..., n_summed])
    if total.shape[-1] > n_summed + 1:
        np.maximum(total[..., n_summed + 1:], part[..., n_summed + 1:],
                   out=total[..., n_summed + 1:])


def bin_parts(parts, mapper, n_threads):
    """The bins of a part's partitions, each binned apart (``parts``: float32 arrays
    in C or Fortran order, converted one at a time by the caller's iterator; binned
    in their own order, not copied), and the bins' value ranges.

    Returns
    -------
    bins : uint8 array of shape (n_rows, n_features), Fortran order
    lo, hi : float32 arrays: the smallest and largest value of each bin in these
        rows (to be reduced over the parts by element-wise min / max)
    """
    missing = int(mapper.missing_bin)
    blocks, lo, hi = [], None, None
    for X in parts:
        b = mapper.transform(X, n_threads)
        p_lo, p_hi = bin_value_ranges(X, b, missing, n_threads)
        lo = p_lo if lo is None else np.minimum(lo, p_lo)
        hi = p_hi if hi is None else np.maximum(hi, p_hi)
        blocks.append(b)
        del X
    bins = np.asfortranarray(np.concatenate(blocks, axis=0))
    return bins, lo, hi


class ReducedLoss:
    """A loss (``_loss``) whose sums over rows are all-reduced through ``comm``: the
    loss of :func:`_boosting.boost` in a process of a data-parallel fit.

    It offers what the loop uses (``n_outputs``, ``score_factor``, ``initial_raw``,
    ``start`` and its state, ``loss``). The state is the loss's own
    (``loss.start(..., reduce=comm.allreduce)``, ``_loss_state``): its per-node sums
    (one Newton step per leaf, eq. 1, or every iteration of the exact solve with
    ``leaf_solver="exact"``; a custom loss's sums of its gradients and Hessians) are
    taken on this process's in-bag rows in row order, then summed over the processes
    in rank order, and applied alike on every process; the losses alike, as
    (sum w l, sum w). Every loss has that state: no loss reaches this fit without it.
    """

    def __init__(self, loss, comm):
        self.base = loss
        self.comm = comm
        self.name = loss.name
        self.link = loss.link
        self.n_outputs = loss.n_outputs
        self.score_factor = loss.score_factor

    def initial_raw(self, y, sample_weight, init):
        """F0: 0, or the loss's prior of the class weights summed over every process."""
        return self.base.initial_raw(y, sample_weight, init, reduce=self.comm.allreduce)

    def start(self, y, sample_weight, raw, n_threads):
        return self.base.start(y, sample_weight, raw, n_threads, reduce=self.comm.allreduce)

    def loss(self, y, raw, sample_weight=None):
        """The weighted mean loss of every process's rows (validation rows)."""
        if y.shape[0]:
            mean = self.base.loss(y, raw, sample_weight)
            weight = weight_of(sample_weight, y.shape[0])
        else:
            mean = weight = 0.0
        return reduced_mean(self.comm.allreduce, mean, weight)


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
        part = Part(finder, red, self.n_samples, self.rows, self.previous_raw)
        callbacks = []
        if params["n_iter_no_change"] is not None and self.eval_part is not None:
            callbacks.append(EarlyStopping(params["n_iter_no_change"], params["tol"]))
        return boost(self.X, self.codes, self.w, loss, params, seed,
                     eval_set=self.eval_part, previous=previous, callbacks=callbacks,
                     part=part)
