"""The per-fit state of a loss: what the boosting loop drives.

A loss's ``start(y, sample_weight, raw, n_threads, reduce=None)`` returns one of
these. Each holds the training rows' raw scores ``raw`` and the residuals of the
next tree (r = -gradient, per output; where it borrows, below, in the grower's
buffer) and offers ``tree_target(k)`` (the row statistics and
residuals tree k is grown on; the row statistics are None for unit weights in one
process: the residuals are then w * r), ``update(k, nodes, leaf_of_row,
sample_mask, learning_rate, n_threads)`` (sets the leaf values of a grown tree and
adds it to the raw scores), ``finish_iteration(sample_mask)`` (the in-bag loss
after an iteration) and ``held_out_loss(mask)``. A state whose ``parallel_outputs``
is true (its trees may be grown side by side) also takes
``finish_iteration(sample_mask, lanes)``: the pass that ends the iteration, on the
class growers' threads (``_boosting._Lanes``).

A state may borrow the tree grower's buffers (its ``borrows``, the boosting loop
lends them): with ``"residual"``, ``tree_target(k, residual_out, n_threads)``
makes the residuals of output k in the grower's ``residual_buffer()`` (which the
grower then puts on the grid in place), so that a state keeps no residuals of its
own beside the grower's (the multinomial state: none of every class; the binomial
state: none at all, its ``residual`` None until its first ``tree_target``, then
the grower's buffer, on the grid from the tree's growth to its update, which
writes the next tree's there). Such a state's leaf sums make r again where they
need it (from the class codes and p: the same numbers).

An update is split into the **per-node sums** of the leaf values (taken over this
process's in-bag rows, in fixed row blocks: ``node_sums``) and their **apply** (leaf values from the
sums, then F += eta * gamma). ``reduce`` is the seam of a data-parallel fit:
``reduce(values, n_summed)`` all-reduces an array of sums over the processes (the
first ``n_summed`` columns of the last axis added in rank order, then a minimum
and a maximum column where there are such; ``_distributed.allreduce_local``). With
``reduce`` None (one process) the built-in losses take the sums and apply them in
one fused kernel (``_leaves``); with a ``reduce``, every sum (the leaf sums, each
step of the exact leaf solve, the losses as (sum w l, sum w)) passes through it,
so every process sees the same numbers (the log-loss's Newton step runs the fused
kernel in two halves around the reduce of its leaf sums, and sends the next tree's
grid maxima with its loss). A custom loss (``_loss.Loss``) always
takes its sums in NumPy (:class:`GradientFit`, the slow path).

Monotonic constraints (a state's ``monotonic``, the int8 constraint of each
feature, set by the boosting loop; one output only): the leaf values are bounded
as scikit-learn's HistGradientBoosting and LightGBM bound them
(:func:`bounded_values`), from the per-node sums (reduced in a distributed fit,
so every process computes the same bounds); the update then takes the sums in
NumPy, not the fused kernels.
"""

import numpy as np

from . import _leaves
from ._common import ROW_STAT_DTYPE

#: A Newton denominator below this makes the leaf value 0 (``_common.pxd``'s
#: HESSIAN_EPSILON, the guard of the kernels' leaf values).
HESSIAN_EPSILON = 1e-150


def row_stats_for(sample_weight, n, reduce=None):
    """The buffer of the row statistics (w * r, w) a tree is grown on, or None for
    unit weights in one process: the grower and the split finders then read the
    residuals themselves as w * r (1 * r is r), and the fit holds 16 bytes per row
    less. A distributed multinomial fit (``reduce`` given) always has them; a
    state of one output passes no ``reduce`` (unit weights need none in a
    distributed fit either)."""
    if sample_weight is None and reduce is None:
        return None
    return np.empty(n, dtype=ROW_STAT_DTYPE)


def _select(a, rows):
    """The rows ``rows`` (a mask or indices; None: all) of ``a`` (None: None)."""
    return a if rows is None or a is None else a[rows]


def in_bag(mask):
    return None if mask is None else mask.astype(bool)


def weight_of(w, n):
    """The total weight of ``n`` rows of weights ``w`` (None: 1 each), in row order."""
    return float(n) if w is None else float(_leaves.weight_total(
        np.ascontiguousarray(w, dtype=np.float64)))


def reduced_mean(reduce, mean, weight):
    """The weighted mean of every process from this one's ``mean`` and ``weight``."""
    total = reduce(np.array([mean * weight, weight], dtype=np.float64), 2)
    return float(total[0] / total[1]) if total[1] > 0 else 0.0


def node_sums(leaf_of_row, n_nodes, sample_mask, w, numerator, denominator):
    """The per-node sums (n_nodes, 2) sum w * numerator and sum w * denominator over
    the in-bag rows, in the kernels' order (``_leaves.newton_sums``): the products
    first, as the kernels form them (``denominator`` an array h: w h; a pair (p, q)
    of the log-loss's p and 1 - p: (w p) q), then each row block's sums in row
    order (``_leaves.leaf_sum_blocks``: one block below 200,000 rows), the blocks'
    sums added in block order."""
    leaf_of_row = np.asarray(leaf_of_row)
    n = leaf_of_row.shape[0]
    n_blocks = _leaves.leaf_sum_blocks(n, n_nodes)
    rows = in_bag(sample_mask)
    sums = np.zeros((n_nodes, 2))
    factors = denominator if isinstance(denominator, tuple) else (denominator,)
    for b in range(n_blocks):
        block = slice(n * b // n_blocks, n * (b + 1) // n_blocks)
        kept = None if rows is None else rows[block]
        leaf = _select(leaf_of_row[block], kept)
        if not leaf.shape[0]:
            continue
        block_w = None if w is None else _select(w[block], kept)
        num = _select(numerator[block], kept)
        den = _select(factors[0][block], kept)
        if block_w is not None:
            num, den = block_w * num, block_w * den
        for factor in factors[1:]:
            den = den * _select(factor[block], kept)
        part = np.empty((n_nodes, 2))
        part[:, 0] = np.bincount(leaf, weights=num, minlength=n_nodes)
        part[:, 1] = np.bincount(leaf, weights=den, minlength=n_nodes)
        sums += part
    return sums


def newton_values(nodes, sums, factor):
    """``nodes["value"]`` from reduced per-node sums: the Newton step factor *
    sums[:, 0] / sums[:, 1] of every leaf (paper eq. 1; 0 for inner nodes and
    where the denominator vanishes). Returns the values."""
    value = np.zeros(nodes.shape[0])
    ok = (nodes["feature"] < 0) & ~(np.abs(sums[:, 1]) < HESSIAN_EPSILON)
    value[ok] = (factor * sums[ok, 0]) / sums[ok, 1]
    nodes["value"] = value
    return value


def _no_reduce(values, n_summed):
    """The ``reduce`` of one process: its sums are every process's."""
    return values


def newton_of(sums, factor):
    """The Newton step factor * sums[:, 0] / sums[:, 1] of every row of ``sums``
    (0 where the denominator vanishes): :func:`newton_values`' rule for any node."""
    value = np.zeros(sums.shape[0])
    ok = ~(np.abs(sums[:, 1]) < HESSIAN_EPSILON)
    value[ok] = (factor * sums[ok, 0]) / sums[ok, 1]
    return value


def bounded_values(nodes, sums, value, monotonic, node_rule):
    """The leaf values ``value`` of a grown tree bounded by the monotonic
    constraints ``monotonic`` (int8 per feature); sets ``nodes["value"]`` and
    returns the values.

    ``sums`` (n_nodes, 2) are the per-node sums of the leaves (over every
    process); each inner node's are its children's (``_leaves.subtree_sums``), and
    ``node_rule(sums)`` gives every node's unbounded value from them (the loss's
    leaf rule: the Newton step). The bounds follow top down
    (``_leaves.monotone_bounds``: a constrained split's children on either side of
    the mid-point of their values clipped to the parent's bounds), and each leaf
    value is clipped to its bounds: for an increasing constraint, every leaf left
    of a split on the feature is at most every leaf right of it, so the tree's
    output never decreases as the feature grows (the other features fixed).
    """
    all_sums = np.array(sums, dtype=np.float64, order="C")
    _leaves.subtree_sums(nodes, all_sums)
    m = nodes.shape[0]
    lower, upper = np.empty(m), np.empty(m)
    _leaves.monotone_bounds(nodes, np.ascontiguousarray(node_rule(all_sums), dtype=np.float64),
                            monotonic, lower, upper)
    leaves = nodes["feature"] < 0
    value = np.array(value, dtype=np.float64)
    value[leaves] = np.minimum(np.maximum(value[leaves], lower[leaves]), upper[leaves])
    nodes["value"] = value
    return value


def exact_values(reduce, nodes, leaf_of_row, sample_mask, codes, positive, z, w,
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
    bounds = np.ascontiguousarray(reduce(bounds, 2 if exponential else 3))
    state = np.zeros((m, 7))
    active = _leaves.exact_solve_start(bounds, (nodes["feature"] < 0).astype(np.uint8),
                                       state, int(exponential))
    sums = np.empty((m, 2))
    if exponential:
        if active:
            _leaves.exponential_solve_sums(codes, z, w, leaf, sample_mask, bounds, state,
                                           sums)
            _leaves.exponential_solve_finish(
                state, bounds, np.ascontiguousarray(reduce(sums, 2)))
    else:
        while active:
            _leaves.logistic_solve_sums(codes, positive, z, w, leaf, sample_mask, state,
                                        sums)
            active = _leaves.logistic_solve_step(
                state, np.ascontiguousarray(reduce(sums, 2)))
    value = state[:, 0].copy()
    nodes["value"] = value
    return value


def grid_maxima_of(n_rows, max_wr, max_w):
    """A tree's grid maxima as the grower takes them (``TreeGrower.grid_maxima``):
    its rows' count, largest abs(w r) and largest w (0 for unit weights)."""
    return (float(n_rows), float(max_wr), float(max_w))


def exponential_overflow_error(n_rows):
    return ValueError(
        f"the exponential loss overflows: e^(-(2y - 1) F(x)) is beyond float64 for "
        f"{n_rows} training row(s) (raw scores beyond 709 on the wrong side), so their "
        "residuals are infinite; use a smaller "
        "learning_rate or fewer iterations (n_estimators, or early stopping with "
        "n_iter_no_change)")


class OneScoreFit:
    """The state of a two-class loss with one raw score per row and a fused kernel
    (the binomial log-loss, the exponential loss): raw scores and residuals of the
    training rows, the update of F, r (and p) after every tree.

    Both run ``_leaves.init_state`` (r and the row statistics of F) and
    ``_leaves.boosting_update`` (the leaf values and the update in one pass, one
    process), ``exponential`` saying which loss. A subclass names ``_labels`` (the
    labels the kernels read), ``_hessian`` (the denominator of each row's Newton
    step, or its factors as ``node_sums`` takes them) and ``_mean_loss``.
    """

    exponential = False
    #: p = sigma(F) of each row: the log-loss's (None: the exponential loss has none).
    prob = None
    #: Whether the trees of an iteration may be grown side by side (one output: no).
    parallel_outputs = False
    #: The monotonic constraint of each feature (int8), or None (none).
    monotonic = None
    #: Whether ``_mean_loss`` takes a mask of the rows (``rows``) and reads them in
    #: place.
    _loss_in_place = False

    #: The grower's buffers the state borrows (the module's docstring; none).
    borrows = ()

    def __init__(self, y, sample_weight, raw, n_threads, exact=False, reduce=None):
        n = y.shape[0]
        self.y = self._labels(y)
        # The class codes of the exact leaf solve (None: eq. 1's Newton step).
        self.codes = np.ascontiguousarray(y, dtype=np.int32) if exact else None
        self.sample_weight = sample_weight
        self.reduce = reduce
        self.raw = np.array(raw[:, 0], dtype=np.float64, order="C")  # a copy
        # The next tree's residuals; a state that borrows the grower's buffer makes
        # them there on its first ``tree_target`` (None until then: no array of
        # its own beside the grower's, not even for the first tree).
        self.residual = (None if "residual" in self.borrows
                         else np.empty(n, dtype=np.float64))
        # (One tree per iteration: with unit weights, a data-parallel fit grows it on
        # the residuals alone too, 16 bytes per row fewer to write and read.)
        self.row_stats = row_stats_for(sample_weight, n)
        self.last_loss = 0.0
        self._grid_maxima = None
        self._refresh()

    def tree_target(self, k):
        """(row statistics w * r and w, or None for unit weights; residuals r) the
        tree fits."""
        return self.row_stats, self.residual

    def _exact_residual(self):
        """The residuals r of the rows as the update wrote them (not on the grid)."""
        return self.residual

    def _residual_codes(self):
        """The class codes the leaf sums make r from (r = [code = 1] - p), or None:
        they read ``residual``."""
        return None

    def _residual_out(self):
        """The array the update writes the next tree's residuals into (the state's
        own where it has none yet)."""
        if self.residual is None:
            self.residual = np.empty(self.y.shape[0], dtype=np.float64)
        return self.residual

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        """Leaf values of the grown tree (``nodes``, updated in place) and the update
        of F and r that follows: in one fused pass in one process, else the per-node
        sums reduced, then applied (and bounded, with monotonic constraints)."""
        if self.reduce is None and self.monotonic is None:
            self.last_loss = self._fused_update(
                nodes, leaf_of_row, sample_mask, learning_rate, n_threads)
            return
        if self._split_fused():
            self.last_loss = self._reduced_update(
                nodes, leaf_of_row, sample_mask, learning_rate, n_threads)
            return
        reduce = _no_reduce if self.reduce is None else self.reduce
        if self.codes is None or self.monotonic is not None:
            sums = reduce(node_sums(leaf_of_row, nodes.shape[0], sample_mask,
                                    self.sample_weight, self._exact_residual(),
                                    self._hessian()), 2)
        if self.codes is not None:
            value = exact_values(reduce, nodes, leaf_of_row, sample_mask, self.codes,
                                 1, self.raw, self.sample_weight, self.exponential)
        else:
            value = newton_values(nodes, sums, 1.0)
        if self.monotonic is not None:
            value = bounded_values(nodes, sums, value, self.monotonic,
                                   lambda s: newton_of(s, 1.0))
        self.raw += (learning_rate * value)[np.asarray(leaf_of_row)]
        self._refresh()

    def _split_fused(self):
        """Whether a data-parallel update runs the fused kernel in two halves (the
        log-loss's Newton step, no monotonic constraint)."""
        return (self.reduce is not None and self.monotonic is None and self.codes is None
                and not self.exponential)

    def _reduced_update(self, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        """``boosting_update`` in a data-parallel fit: this process's per-node sums
        (``_leaves.newton_node_sums``, the kernel's numbers), all-reduced; then the
        leaf values, F, p, r, the row statistics and the in-bag loss sums
        (``_leaves.binomial_apply``), all-reduced with the next tree's grid maxima
        (taken by the grower: ``take_grid_maxima``). Returns the in-bag loss of
        every process's rows. Two steps per tree, as the NumPy sums' three."""
        codes = self._residual_codes()
        sums = _leaves.newton_node_sums(
            np.asarray(leaf_of_row, dtype=np.int32), nodes.shape[0], sample_mask,
            self.sample_weight, self.residual if codes is None else None, self.prob,
            n_threads, codes)
        sums = np.ascontiguousarray(self.reduce(sums, 2), dtype=np.float64)
        # The loss's sums and the next tree's grid maxima (the largest abs(w r) and
        # w of the row statistics it is grown on: ``tree_target``, taken by the
        # kernel as it writes them) in one step.
        local = np.zeros((1, 6), dtype=np.float64)
        local[0, 0], local[0, 1] = _leaves.binomial_apply(
            nodes, sums, leaf_of_row, sample_mask, self.y, self.sample_weight,
            learning_rate, self.raw, self.prob, self._residual_out(), self.row_stats,
            n_threads, local[0, 4:])
        local[0, 2] = float(self.y.shape[0])
        total, weight, n_rows, _, max_wr, max_w = self.reduce(local, 3)[0]
        self._grid_maxima = grid_maxima_of(n_rows, max_wr, max_w)
        return float(total / weight) if weight > 0 else 0.0

    def take_grid_maxima(self, k=0):
        """The next tree's grid maxima (the grower's ``grid_maxima``), once; None
        where none were taken: in one process those the fused update took as it
        wrote the rows (``boosting_update``'s ``grid_maxima``), in a data-parallel
        fit those of every process, reduced with the last update's loss. (``k``:
        the output, 0.)"""
        maxima, self._grid_maxima = self._grid_maxima, None
        return maxima

    def _refresh(self):
        # r = -dL/dF, p of the log-loss and the row statistics (Algorithm 1, lines
        # 1-3, 6).
        n_overflow = _leaves.init_state(self.y, self.sample_weight, self.raw, self.prob,
                                        self.residual, self.row_stats, self.exponential)
        if n_overflow:
            raise exponential_overflow_error(n_overflow)

    def _fused_update(self, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        # (The log-loss's update takes the next tree's grid maxima as it writes the
        # rows: the grower's grid pass need not read them again.)
        maxima = None if self.exponential else np.empty(2, dtype=np.float64)
        loss, n_overflow = _leaves.boosting_update(
            nodes, leaf_of_row, sample_mask, self.y, self.sample_weight, learning_rate,
            self.raw, self.prob, self._residual_out(), self.row_stats, n_threads,
            self.codes, self.exponential, maxima, self._residual_codes())
        if n_overflow:
            raise exponential_overflow_error(n_overflow)
        if maxima is not None:
            self._grid_maxima = grid_maxima_of(self.y.shape[0], maxima[0], maxima[1])
        return loss

    def _loss_of(self, rows):
        if (self.reduce is None and self._loss_in_place
                and (rows is None or rows.dtype == bool)):
            # The kernel reads the rows of the mask where they are (no copies).
            return float(self._mean_loss(
                self.y, self.raw, self.sample_weight,
                None if rows is None else np.ascontiguousarray(rows).view(np.uint8)))
        y, raw = _select(self.y, rows), _select(self.raw, rows)
        w = _select(self.sample_weight, rows)
        if self.reduce is None:
            return float(self._mean_loss(y, raw, w))
        mean = float(self._mean_loss(y, raw, w)) if y.shape[0] else 0.0
        return reduced_mean(self.reduce, mean, weight_of(w, y.shape[0]))

    def finish_iteration(self, sample_mask):
        """The weighted loss of the in-bag rows after the iteration."""
        if (self.reduce is None and self.monotonic is None) or self._split_fused():
            return self.last_loss
        return self._loss_of(in_bag(sample_mask))

    def held_out_loss(self, held_out):
        """Weighted loss of the rows where ``held_out`` is True."""
        return self._loss_of(held_out)


class BinomialFit(OneScoreFit):
    """The binomial log-loss: also the probabilities p = sigma(F) of the rows.

    It borrows the grower's residual buffer (``borrows``): its first
    ``tree_target`` makes the residuals there, the update writes the next tree's
    there, and the grower puts them on the grid in place. The leaf sums make each
    row's r again from its class code (0/1) and p (r = y - p, the numbers the
    update wrote), so with unit weights the fit keeps one residual array (8 bytes
    per row), the grower's, not the state's beside it (with weights the grower puts
    the row statistics on the grid in a buffer of its own, and reads the residuals
    as they are)."""

    _loss_in_place = True
    borrows = ("residual",)

    def __init__(self, y, sample_weight, raw, n_threads, exact=False, reduce=None):
        self.prob = np.empty(y.shape[0], dtype=np.float64)
        # Whether ``residual`` holds y - p of the current p: the update wrote it and
        # no tree has been grown on it since (which may have put it on the grid).
        self._residual_fresh = False
        super().__init__(y, sample_weight, raw, n_threads, exact, reduce)

    def tree_target(self, k, residual_out=None, n_threads=1):
        """(row statistics w * r and w, or None for unit weights; residuals r) the
        tree fits. The residuals are in ``residual_out`` (the grower's buffer;
        None: the state's own, made where it has none yet): made there (r = y - p,
        the update's numbers) unless the update has just written them there, where
        the update writes the next tree's from then on (``n_threads``: the
        borrowing protocol's, unused)."""
        if residual_out is None:
            residual_out = self._residual_out()
        if residual_out is not self.residual or not self._residual_fresh:
            np.subtract(self.y, self.prob, out=residual_out)
            self.residual = residual_out
        # (The tree may put them on the grid: a second target before the next
        # update makes them again.)
        self._residual_fresh = False
        return self.row_stats, self.residual

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        """``OneScoreFit.update``; the residuals it writes are then those of the
        next tree (``tree_target`` hands them on as they are)."""
        super().update(k, nodes, leaf_of_row, sample_mask, learning_rate, n_threads)
        # Every path of the update writes y - p of the new p into ``residual``
        # where the state has one (the fused kernels; else ``_refresh``).
        self._residual_fresh = self.residual is not None

    def _exact_residual(self):
        return self.y - self.prob  # (y - p of the codes 0/1: the kernels' numbers)

    def _residual_codes(self):
        return self.y

    def _labels(self, y):
        # The class codes 0/1 (int32: no copy of the fit's codes; the kernels read
        # them as float64 labels).
        return np.ascontiguousarray(y, dtype=np.int32)

    def _hessian(self):
        return self.prob, 1.0 - self.prob

    def _mean_loss(self, y, raw, w, rows=None):
        return _leaves.weighted_log_loss(y, raw, w, rows)


class ExponentialFit(OneScoreFit):
    """The exponential loss: leaf values sum w r / sum w |r|."""

    exponential = True

    def _labels(self, y):
        return np.ascontiguousarray(y, dtype=np.float64)

    def _hessian(self):
        return np.abs(self.residual)

    def _mean_loss(self, y, raw, w):
        return _leaves.exponential_loss(y, raw, w)


class MultinomialFit:
    """Per-class raw scores and probabilities of the training rows (arrays of shape
    (K, n_samples): one contiguous row per class); the residuals r_k = [y = k] - p_k
    of class k only while its tree is grown and its leaves set.

    The trees of an iteration fit the probabilities of its start, so F and p of
    every class are kept (16 K bytes per row). The residuals of class k are made
    from p_k and the codes when its tree is grown (``tree_target``), into the
    grower's buffer where the boosting loop lends one (``borrows``), and the update
    makes them again from p_k as it sums the leaves (the same numbers): K residual
    arrays (8 K bytes per row) are not kept.

    In one process the last class's tree does not update F itself: its steps wait
    for ``finish_iteration``, whose softmax pass adds them as it reads F (one pass
    over the rows fewer per iteration). The trees of an iteration read p and the
    codes only, and the last class's tree is the last its grower grows in the
    iteration (its leaf of each row stays until then), so the scores are those of
    the update one tree at a time.
    """

    #: The grower's buffers the state borrows (the module's docstring).
    borrows = ("residual",)

    def __init__(self, n_classes, y, sample_weight, raw, n_threads, exact=False,
                 reduce=None):
        n = y.shape[0]
        self.y = np.ascontiguousarray(y, dtype=np.int32)
        self.exact = exact
        self.reduce = reduce
        # The exact leaf solve: each class's log-odds against the others at the
        # start of the iteration (the other classes fixed there, as the residuals).
        self.log_odds = np.empty((n_classes, n), dtype=np.float64) if exact else None
        self.sample_weight = sample_weight
        self.n_threads = n_threads
        self.factor = (n_classes - 1) / n_classes
        self.raw = np.array(np.asarray(raw, dtype=np.float64).T, order="C")  # a copy
        self.prob = np.empty((n_classes, n), dtype=np.float64)
        # The residuals of a tree where no grower lends a buffer (made on first use).
        self._residual = None
        self.row_stats = row_stats_for(sample_weight, n, reduce)
        # Each class's next tree's grid maxima, taken as its residuals are made (one
        # process, unit weights: ``tree_target``; None: none taken).
        self._grid_maxima = [None] * n_classes
        # The last class's tree's steps and leaf of each row, from its ``update``
        # to ``finish_iteration`` (None: none waiting).
        self._pending = None
        # The trees of an iteration are independent (each fits its class's residuals
        # of the start of the iteration and changes only its class's raw scores):
        # they may be grown side by side where no buffer is shared between them.
        self.parallel_outputs = self.row_stats is None
        _leaves.multinomial_state(self.raw, self.y, sample_weight, None, self.prob,
                                  None, n_threads)
        if exact:
            _leaves.class_log_odds(self.raw, self.log_odds, n_threads)

    def residual_of(self, k, out=None, n_threads=1, maxima=None):
        """r_k = [y = k] - p_k of every row (into ``out``, else a new array); with
        ``maxima`` (2 values), the largest abs(r_k) and 0 into it."""
        if out is None:
            out = np.empty(self.y.shape[0], dtype=np.float64)
        _leaves.class_residual(self.prob[k], self.y, k, out, n_threads, maxima)
        return out

    def tree_target(self, k, residual_out=None, n_threads=1):
        """(row statistics w * r and w, or None for unit weights; residuals r_k) of
        class k's tree, the residuals written into ``residual_out`` (the grower's
        buffer; None: the state's own) on ``n_threads`` threads. In one process
        with unit weights, the tree's grid maxima are taken as the residuals are
        made (``take_grid_maxima``)."""
        if residual_out is None:
            if self._residual is None:
                self._residual = np.empty(self.y.shape[0], dtype=np.float64)
            residual_out = self._residual
        taken = self.reduce is None and self.row_stats is None
        maxima = np.empty(2, dtype=np.float64) if taken else None
        residual = self.residual_of(k, residual_out, n_threads, maxima)
        if self.row_stats is not None:
            _leaves.row_stats_of(residual, self.sample_weight, self.row_stats)
        self._grid_maxima[k] = (grid_maxima_of(residual.shape[0], maxima[0], maxima[1])
                                if taken else None)
        return self.row_stats, residual

    def take_grid_maxima(self, k):
        """Class k's next tree's grid maxima (the grower's ``grid_maxima``), taken
        by its ``tree_target``, once; None where none were."""
        maxima, self._grid_maxima[k] = self._grid_maxima[k], None
        return maxima

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        """Leaf values of class k's tree and F_k += eta * gamma on ``n_threads``
        threads (the residuals made again from p_k: the tree's buffer may hold them
        on the grid by now). The last class's F waits for ``finish_iteration``
        (the class docstring)."""
        if self.reduce is not None:
            self._reduced_update(k, nodes, leaf_of_row, sample_mask, learning_rate)
            return
        if self._pending is not None and np.may_share_memory(leaf_of_row,
                                                             self._pending[2]):
            # The last class's leaf of each row is its grower's buffer: a tree grown
            # on that grower after it (in this iteration) has overwritten it.
            raise RuntimeError(f"class {k}'s tree was grown on the grower of the last "
                               "class's tree, whose update waits for finish_iteration")
        steps = np.empty(nodes.shape[0]) if k == self.raw.shape[0] - 1 else None
        if self.exact:
            _leaves.multinomial_tree_update(
                nodes, leaf_of_row, sample_mask, None, self.prob[k],
                self.sample_weight, self.factor, learning_rate, self.raw[k], self.y, k,
                self.log_odds[k], n_threads, steps=steps)
        else:
            _leaves.multinomial_tree_update(
                nodes, leaf_of_row, sample_mask, None, self.prob[k],
                self.sample_weight, self.factor, learning_rate, self.raw[k], k=k,
                n_threads=n_threads, labels=self.y, steps=steps)
        if steps is not None:
            self._pending = (k, steps, leaf_of_row)

    def _reduced_update(self, k, nodes, leaf_of_row, sample_mask, learning_rate):
        if self.exact:
            value = exact_values(self.reduce, nodes, leaf_of_row, sample_mask, self.y, k,
                                 self.log_odds[k], self.sample_weight, False)
        else:
            p = self.prob[k]
            sums = node_sums(leaf_of_row, nodes.shape[0], sample_mask, self.sample_weight,
                             self.residual_of(k), (p, 1.0 - p))
            value = newton_values(nodes, self.reduce(sums, 2), self.factor)
        self.raw[k] += (learning_rate * value)[np.asarray(leaf_of_row)]

    def finish_iteration(self, sample_mask, lanes=None):
        """The last class's update of F (waiting since its ``update``) and the
        probabilities of the next iteration, in one pass; returns the weighted
        log-loss of the in-bag rows. With ``lanes`` (the class growers' threads,
        ``_boosting._Lanes``), lane j makes the pass over its share of the row
        chunks (in proportion to its threads) on its threads: the same numbers."""
        step_class, steps, leaf_of_row = (-1, None, None) if self._pending is None \
            else self._pending
        self._pending = None
        if lanes is None:
            loss = _leaves.multinomial_state(self.raw, self.y, self.sample_weight,
                                             sample_mask, self.prob, None,
                                             self.n_threads, step_class, steps,
                                             leaf_of_row)
            if self.exact:
                _leaves.class_log_odds(self.raw, self.log_odds, self.n_threads)
        else:
            loss = self._pass_on_lanes(lanes, sample_mask, step_class, steps,
                                       leaf_of_row)
        if self.reduce is None:
            return loss
        rows = in_bag(sample_mask)
        n = self.y.shape[0] if rows is None else int(np.count_nonzero(rows))
        return reduced_mean(self.reduce, float(loss),
                            weight_of(_select(self.sample_weight, rows), n))

    def _pass_on_lanes(self, lanes, sample_mask, step_class, steps, leaf_of_row):
        """``multinomial_state``'s pass, lane j over its share of the row chunks (in
        proportion to its threads) on its threads, and for the exact leaf solve the
        log-odds of those rows after it (``class_log_odds``); returns the pass's
        loss."""
        n_chunks = _leaves.multinomial_chunk_count(self.y.shape[0])
        partial = np.empty(2 * n_chunks, dtype=np.float64)
        total = sum(lanes.threads)
        bounds = [n_chunks * sum(lanes.threads[:j]) // total
                  for j in range(len(lanes.threads) + 1)]

        def part(j):
            _leaves.multinomial_state_part(
                self.raw, self.y, self.sample_weight, sample_mask, self.prob, None,
                lanes.threads[j], bounds[j], bounds[j + 1], partial, step_class, steps,
                leaf_of_row)
            if self.exact:
                _leaves.class_log_odds(self.raw, self.log_odds, lanes.threads[j],
                                       bounds[j], bounds[j + 1])

        lanes.run([lambda j=j: part(j) for j in range(len(lanes.threads))])
        return _leaves.multinomial_parts_loss(partial)

    def held_out_loss(self, held_out):
        y, w = self.y[held_out], _select(self.sample_weight, held_out)
        if self.reduce is None:
            return float(_leaves.multinomial_log_loss(
                y, np.ascontiguousarray(self.raw[:, held_out].T), w))
        mean = (float(_leaves.multinomial_log_loss(
            y, np.ascontiguousarray(self.raw[:, held_out].T), w)) if y.shape[0] else 0.0)
        return reduced_mean(self.reduce, mean, weight_of(w, y.shape[0]))


class GradientFit:
    """The state of a custom loss (``_loss.Loss``), in NumPy: the gradients and
    Hessians of the loss at F from its ``gradient_hessian``, trees fitted to the
    residuals r = -gradient, leaf values from its ``leaf_value`` rule of the
    per-node sums (sum w g, sum w h; by default the Newton step -sum w g / sum w h),
    F += eta * gamma. The gradients of every output are taken at the start of an
    iteration (``finish_iteration``), as the multinomial loss's. With monotonic
    constraints (one output), every node's unbounded value is the loss's rule of
    its sums (:func:`bounded_values`)."""

    parallel_outputs = False
    monotonic = None

    def __init__(self, loss, y, sample_weight, raw, reduce=None):
        n = y.shape[0]
        self.loss = loss
        self.y = np.ascontiguousarray(y, dtype=np.int32)
        self.sample_weight = sample_weight
        self.reduce = reduce
        self.n_outputs = loss.n_outputs
        self.raw = np.array(np.asarray(raw, dtype=np.float64).T, order="C")  # (K, n)
        self.residual = np.empty((self.n_outputs, n), dtype=np.float64)
        self.hessian = np.empty((self.n_outputs, n), dtype=np.float64)
        self.row_stats = row_stats_for(sample_weight, n, reduce)
        self._refresh()

    def _refresh(self):
        """r = -gradient and the Hessians of the current raw scores."""
        g, h = self.loss._checked_gradient_hessian(self.y, np.array(self.raw.T))
        np.negative(g.T, out=self.residual)
        self.hessian[...] = h.T

    def tree_target(self, k):
        if self.row_stats is not None:
            _leaves.row_stats_of(self.residual[k], self.sample_weight, self.row_stats)
        return self.row_stats, self.residual[k]

    def update(self, k, nodes, leaf_of_row, sample_mask, learning_rate, n_threads):
        """The per-node sums of the residuals and Hessians (reduced in a distributed
        fit), the loss's leaf values of them, then F_k += eta * gamma."""
        sums = node_sums(leaf_of_row, nodes.shape[0], sample_mask, self.sample_weight,
                         self.residual[k], self.hessian[k])
        if self.reduce is not None:
            sums = self.reduce(sums, 2)
        value = np.zeros(nodes.shape[0])
        leaves = nodes["feature"] < 0
        value[leaves] = self.loss._checked_leaf_value(-sums[leaves, 0], sums[leaves, 1])
        nodes["value"] = value
        if self.monotonic is not None:
            value = bounded_values(nodes, sums, value, self.monotonic,
                                   lambda s: self.loss._checked_leaf_value(-s[:, 0], s[:, 1]))
        self.raw[k] += (learning_rate * value)[np.asarray(leaf_of_row)]

    def _loss_of(self, rows):
        y = _select(self.y, rows)
        w = _select(self.sample_weight, rows)
        total = 0.0
        if y.shape[0]:
            raw = np.ascontiguousarray(self.raw.T if rows is None else self.raw[:, rows].T)
            terms = self.loss._checked_pointwise_loss(y, raw)
            total = float(np.sum(terms if w is None else w * terms))
        weight = weight_of(w, y.shape[0])
        if self.reduce is not None:
            return reduced_mean(self.reduce, total / weight if weight > 0 else 0.0, weight)
        return total / weight if weight > 0 else 0.0

    def finish_iteration(self, sample_mask):
        """The gradients of the next iteration; returns the weighted loss of the
        in-bag rows."""
        self._refresh()
        return self._loss_of(in_bag(sample_mask))

    def held_out_loss(self, held_out):
        return self._loss_of(held_out)
