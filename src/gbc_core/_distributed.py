"""The boosting loop of one process holding a part of the training rows.

Data-parallel training (the model of LightGBM's data-parallel tree learner): every
process holds its rows, binned with the same bin edges, and their raw scores,
probabilities and residuals for the whole fit, and runs the same grower and
``HistogramSplitFinder`` on them. Every sum the fit takes over rows is taken per
process and then *all-reduced* through ``comm``: the root's totals and the sums of
the splittable test (the grower's ``reducer``), the histograms of the collected nodes
(the finder's ``reducer``), the numerators and denominators of the leaf values
(paper eq. 1; (K - 1)/K for the multinomial loss), the class weights of the prior,
the training loss and the validation loss. ``comm.allreduce`` adds the processes'
arrays in a fixed order (process rank), so every process sees the same numbers,
chooses the same splits and grows the same trees.

``comm`` is any object with ``allreduce(values, n_summed)`` (see
:class:`PartTrainer`); ``gbc_core.dask`` provides one on Dask actors. NumPy and the
kernels only: no Dask, no scikit-learn.
"""

import numpy as np

from . import _leaves
from ._boosting import EarlyStopping, FitRecord, iteration_predictor
from ._common import ROW_STAT_DTYPE
from ._ensemble import RAW_SCORE_LIMIT
from ._loss import BinomialLoss, MultinomialLoss, prior_from_class_weights
from ._grower import TreeGrower
from ._histogram_splitter import HistogramSplitFinder, bin_value_ranges

#: A Newton denominator below this makes the leaf value 0 (``_common.pxd``'s
#: HESSIAN_EPSILON, the guard of the kernels' leaf values).
HESSIAN_EPSILON = 1e-150

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


class PartTrainer:
    """One process's part of a data-parallel fit: its binned rows and fit state.

    Parameters
    ----------
    bins : uint8 array of shape (n_rows, n_features), Fortran order
        This part's rows (possibly none), binned with the mapper of every part
        (:func:`bin_parts`); raw values are not kept.
    n_bins_non_missing : int32 array (n_features,)
    missing_bin : int
        As the ``BinMapper``'s.
    codes : int array of shape (n_rows,)
        Class codes 0 .. n_classes - 1 (the classes of every part together).
    sample_weight : float64 array or None
        Already scaled (the same power of two in every part).
    eval_part : tuple (X_val float32 C order, codes, weights or None) or None
        This part's validation rows.
    """

    def __init__(self, bins, n_bins_non_missing, missing_bin, codes, sample_weight,
                 eval_part=None):
        self.bins = bins
        self.n_bins = np.asarray(n_bins_non_missing, dtype=np.int32)
        self.missing_bin = int(missing_bin)
        self.codes = np.ascontiguousarray(codes, dtype=np.int32)
        self.w = sample_weight
        self.eval_part = eval_part

    # ------------------------------------------------------------ the fit
    def fit(self, comm, n_classes, params, seed, lo, hi):
        """Run the boosting loop with the other parts (each calls this with the same
        arguments but ``comm``'s rank).

        Parameters
        ----------
        comm : object with ``allreduce(values, n_summed)``
        n_classes : int
        params : dict
            Resolved parameters (``_params.resolve`` on the totals of every part).
        seed : int
        lo, hi : float32 arrays
            The bins' value ranges over every part.

        Returns
        -------
        trees : list of node arrays
        init_raw : float64 array (K,)
        record : FitRecord
        """
        n, n_features = self.bins.shape
        K = 1 if n_classes == 2 else n_classes
        lr = params["learning_rate"]
        n_threads = params["n_threads"]
        red = _Reducer(comm)
        finder = HistogramSplitFinder(self.bins, self.n_bins, lo, hi, self.missing_bin,
                                      n_threads)
        finder.reducer = red.finder
        grower = TreeGrower(None, finder,
                            -1 if params["max_depth"] is None else params["max_depth"],
                            params["min_samples_split"], params["min_samples_leaf"],
                            params["min_weight_leaf"], params["max_features"], n_threads)
        grower.reducer = red.grower
        w = self.w
        w1 = np.ones(n) if w is None else w

        # F0 from the classes' weights over every part (prior), or 0.
        class_w = comm.allreduce(np.bincount(self.codes, weights=w1, minlength=n_classes)
                                 .astype(np.float64), n_classes)
        init_raw = _initial_raw(class_w, n_classes, params["init"])
        raw = np.empty((K, n))
        raw[:] = init_raw[:, None]
        prob = np.empty((K, n))
        residual = np.empty((K, n))
        # (Unit weights: no row statistics, the residuals are w * r.)
        row_stats = None if w is None else np.empty(n, dtype=ROW_STAT_DTYPE)
        y = self.codes.astype(np.float64)
        if K == 1:
            _leaves.init_state(y, w, raw[0], prob[0], residual[0], row_stats)
        else:
            _leaves.multinomial_state(raw, self.codes, w, None, prob, residual, n_threads)
        factor = 1.0 if K == 1 else (K - 1) / K

        record = FitRecord()
        stopper = None
        raw_val = None
        if self.eval_part is not None:
            X_val = self.eval_part[0]
            raw_val = np.empty((X_val.shape[0], K))
            raw_val[:] = init_raw
            record.validation_score = []
            if params["n_iter_no_change"] is not None:
                stopper = EarlyStopping(params["n_iter_no_change"], params["tol"])
                stopper.start(record)
        trees = []
        bound = np.abs(init_raw)
        score_factor = (BinomialLoss if K == 1 else MultinomialLoss).score_factor
        for m in range(params["n_estimators"]):
            rng = np.random.default_rng([seed, m])
            tree_seeds = [int(rng.integers(0, 2**63 - 1))
                          if params["max_features"] < n_features else 0 for _ in range(K)]
            new_trees = []
            for k in range(K):
                if K > 1 and row_stats is not None:
                    _leaves.row_stats_of(residual[k], w, row_stats)
                grower.grow(row_stats, residual[k], None, tree_seeds[k])
                nodes = grower.nodes_array()
                leaf = np.asarray(grower.node_of_row)
                m_nodes = nodes.shape[0]
                sums = np.zeros((m_nodes, 2))
                if n:
                    p = prob[k]
                    sums[:, 0] = np.bincount(leaf, weights=w1 * residual[k], minlength=m_nodes)
                    sums[:, 1] = np.bincount(leaf, weights=w1 * p * (1.0 - p),
                                             minlength=m_nodes)
                sums = comm.allreduce(sums, 2)
                num = factor * sums[:, 0]
                den = sums[:, 1]
                value = np.zeros(m_nodes)
                ok = (nodes["feature"] < 0) & ~(np.abs(den) < HESSIAN_EPSILON)
                value[ok] = num[ok] / den[ok]
                nodes["value"] = value
                step = lr * value
                raw[k] = raw[k] + step[leaf]
                if K == 1:
                    _leaves.init_state(y, w, raw[0], prob[0], residual[0], row_stats)
                bound[k] += lr * float(np.abs(value).max())
                if not bound[k] <= RAW_SCORE_LIMIT:
                    raise ValueError(
                        f"learning_rate={lr!r} is too large for this data: after {m + 1} "
                        f"iteration(s) the raw scores F(x) could exceed "
                        f"{RAW_SCORE_LIMIT:.0e} and overflow; use a smaller learning_rate")
                new_trees.append(nodes)
            trees.extend(new_trees)
            if K == 1:
                mean = _leaves.weighted_log_loss(y, raw[0], w)
            else:
                mean = _leaves.multinomial_state(raw, self.codes, w, None, prob, residual,
                                                 n_threads)
            losses = [mean * w1.sum(), w1.sum()]
            if raw_val is not None:
                X_val, y_val, w_val = self.eval_part
                if X_val.shape[0]:
                    iteration_predictor(new_trees, n_features, lr, K).predict_raw(
                        X_val, raw_val, 0, 1, n_threads)
                    wv = np.ones(X_val.shape[0]) if w_val is None else w_val
                    losses += [_loss_mean(y_val, raw_val, w_val, K) * wv.sum(), wv.sum()]
                else:
                    losses += [0.0, 0.0]
            total = comm.allreduce(np.asarray(losses, dtype=np.float64), len(losses))
            # Scores in scikit-learn's units, as the in-memory fit records them.
            record.train_score.append(score_factor * total[0] / total[1] if total[1] > 0 else 0.0)
            if raw_val is not None:
                record.validation_score.append(
                    score_factor * total[2] / total[3] if total[3] > 0 else 0.0)
                if stopper is not None and stopper.after_iteration(m, record, None):
                    break
        if stopper is not None:
            stopper.finish(record)
        n_kept = len(trees) // K
        if record.best_iteration is not None:
            n_kept = record.best_iteration
        record.train_score = record.train_score[:n_kept]
        return trees[: n_kept * K], init_raw, record


def _loss_mean(y, raw, w, K):
    if K == 1:
        return float(_leaves.weighted_log_loss(np.ascontiguousarray(y, dtype=np.float64),
                                               np.ascontiguousarray(raw[:, 0]), w))
    return float(_leaves.multinomial_log_loss(np.ascontiguousarray(y, dtype=np.int32),
                                              np.ascontiguousarray(raw), w))


def _initial_raw(class_w, n_classes, init):
    """F0 from the weights of the classes (summed over every part): the prior of the
    losses (``_loss.prior_from_class_weights``) on the reduced sums, or 0."""
    K = 1 if n_classes == 2 else n_classes
    if init == "zero":
        return np.zeros(K)
    return prior_from_class_weights(class_w, K)
