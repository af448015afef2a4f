"""Growth of one regression tree, level by level or best first, with any
``SplitFinder``.

The grower owns the tree being grown and what lives as long as the fit: the node
buffer, the nodes of the level being split (each with its parent, its sibling and
its in-bag rows as the range ``[start, stop)`` of the partition array, in increasing
row order, as scikit-learn's histogram-gradient-boosting splitter keeps them), the
feature draws of ``max_features`` and, once a tree is grown, the leaf of every row
(``node_of_row``). Per level it tells its split finder which statistics to compute
(every splittable node's, or with a finder that subtracts, the smaller child of each
pair from its rows and the larger from its parent), lets it collect, reduce and
choose (``_split_finder.pxd``), applies the splits and partitions the rows of the
split nodes: on the finder's bins when it has bins, else on raw X. It never looks
at how the finder ranks splits.

A node is split if it holds at least ``min_samples_split`` samples, ``2 x
min_samples_leaf`` samples and ``2 x min_weight_leaf`` weight, and if its residuals
are not all equal: the residuals of its weighted rows are not one value, and its
impurity (the weighted variance of the residuals, from sums over its own rows) is
above machine epsilon, the rule of scikit-learn's trees. The first test is exact: a
node whose rows all have the same residual cannot be improved, whatever rounding
noise its sums carry (sums of many equal residuals do not give a variance of exactly
zero, and splits of such a node "gain" only that noise).

With ``max_leaf_nodes`` the tree grows best first (``BestFirstGrowth``,
_best_first.pyx, driving the same steps node by node).

Two rules of scikit-learn's trees act on a split once it is chosen, or on the grown
tree, in both growths. ``min_impurity_decrease``: a node's best split is dropped (the
node becomes a leaf; best first, a leaf waiting in the frontier with improvement 0,
as scikit-learn's ``_add_split_node`` makes it when the node is created) when its
weighted impurity decrease (``_choice.decrease_allowed``, from the sums of w r^2 of
the node's rows going left, summed in row order) plus machine epsilon is below the
bound. ``ccp_alpha``: once the tree is grown, minimal cost-complexity pruning
(``CostComplexityPruner``, _pruning.pyx) turns the root of every pruned branch
into a leaf and moves its rows to it (``node_of_row``), all before the loss sets
the leaf values, as scikit-learn prunes before its leaves are updated.
"""
cimport cython
from cpython.exc cimport PyErr_CheckSignals
from cython.parallel cimport parallel, prange
from libc.math cimport INFINITY, fabs
from libc.stdlib cimport free
from libc.string cimport memcpy, memset

import numpy as np

from ._common cimport (
    float32_t, float64_t, int32_t, int64_t, uint8_t, uint32_t, intp_t, node_t, row_stat_t,
    IMPURITY_EPSILON, grow_buffer, omp_barrier,
)
from ._common import NODE_DTYPE, ROW_STAT_DTYPE
from ._rows cimport (
    node_sums_t, float32_at_most, sums_add, sums_add_row, sums_widen, sums_zero,
)
from ._categorical cimport CAT_WORDS
from ._trace cimport *
from ._split_finder cimport (
    SplitFinder, side_t, grid_t, level_node_t, level_t, split_t, plan_statistics,
    STATS_NONE, STATS_COLLECT, CRITERION_FRIEDMAN_MSE,
)
from ._split_finder import CRITERIA
from ._partition cimport RowPartition, level_split_t
from ._out_of_bag cimport OutOfBagRouter
from ._pruning cimport CostComplexityPruner
from ._choice cimport (
    missing_left, friedman_proxy, decrease_allowed, grid_unit, on_grid, weight_on_grid,
)

cdef extern from "_criterion.h" nogil:
    float64_t improvement_of "gbc_improvement"(float64_t proxy, float64_t total_w)
    float64_t impurity_of "gbc_impurity"(float64_t sum_w, float64_t sum_wr,
                                          float64_t sum_wr2)

cdef enum:
    # Below this many rows the sums of min_impurity_decrease and the grid's pass
    # run on one thread.
    MIN_PARALLEL_ROWS = 200000
    # The grid's pass takes its maxima in blocks of this many rows.
    GRID_BLOCK = 16384


ctypedef unsigned long long uint64_t_t


cdef inline uint64_t_t _splitmix64(uint64_t_t* state) noexcept nogil:
    cdef uint64_t_t z
    state[0] += 0x9E3779B97F4A7C15ULL
    z = state[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


@cython.final
cdef inline void _block_maxima(const row_stat_t[::1] row_stats,
                               const float64_t[::1] residual, bint weighted,
                               intp_t start, intp_t stop, float64_t* out) noexcept nogil:
    """The largest |w * r| (``out[0]``) and w (``out[1]``) of rows start .. stop - 1
    (w * r: ``residual`` itself without ``weighted`` row statistics)."""
    cdef intp_t i
    cdef float64_t max_wr = 0.0, max_w = 0.0
    if weighted:
        for i in range(start, stop):
            max_wr = max(max_wr, fabs(row_stats[i].wr))
            max_w = max(max_w, row_stats[i].w)
    else:
        for i in range(start, stop):
            max_wr = max(max_wr, fabs(residual[i]))
    out[0] = max_wr
    out[1] = max_w


ctypedef struct grid_scale_t:
    # A tree's grid as the rows are put on it: the units and their reciprocals.
    float64_t unit_s         # of w * r (0: no grid)
    float64_t inverse_s      # 1 / unit_s (0: no grid)
    float64_t unit_w         # of w (1 with unit weights)
    float64_t inverse_w


cdef inline grid_scale_t _grid_scale(float64_t n_rows, float64_t max_wr, float64_t max_w,
                                     bint weighted) noexcept nogil:
    """The grid of ``n_rows`` rows whose largest abs(w * r) is ``max_wr`` and
    largest w ``max_w`` (``grid_unit``; w on a grid only where ``weighted``)."""
    cdef grid_scale_t grid
    grid.unit_s = grid_unit(n_rows, max_wr)
    grid.inverse_s = 1.0 / grid.unit_s if grid.unit_s > 0.0 else 0.0
    grid.unit_w = 1.0
    grid.inverse_w = 1.0
    if weighted:
        grid.unit_w = grid_unit(n_rows, max_w)
        grid.inverse_w = 1.0 / grid.unit_w if grid.unit_w > 0.0 else 0.0
    return grid


cdef inline grid_scale_t _grid_from_maxima(const float64_t* block_max, intp_t n_blocks,
                                           float64_t n_rows,
                                           bint weighted) noexcept nogil:
    """The grid of ``n_rows`` rows from their blocks' maxima (``block_max``: |w * r|
    and w of each block, two values a block), as ``TreeGrower._put_on_grid`` makes
    it."""
    cdef intp_t b
    cdef float64_t max_wr = 0.0, max_w = 0.0
    for b in range(n_blocks):
        max_wr = max(max_wr, block_max[2 * b])
        max_w = max(max_w, block_max[2 * b + 1])
    return _grid_scale(n_rows, max_wr, max_w, weighted)


cdef inline void _grid_rows(const row_stat_t* row_stats, const float64_t* residual,
                            row_stat_t* out_stats, float64_t* out_residual,
                            grid_scale_t grid, intp_t start,
                            intp_t stop) noexcept nogil:
    """Rows ``start .. stop - 1`` onto the grid ``grid`` (``_grid_from_maxima``):
    w * r and w of ``row_stats`` into ``out_stats``, or (``row_stats`` NULL, unit
    weights) the residuals into ``out_residual``."""
    cdef intp_t i
    if row_stats != NULL:
        for i in range(start, stop):
            out_stats[i].wr = on_grid(row_stats[i].wr, grid.unit_s, grid.inverse_s)
            out_stats[i].w = weight_on_grid(row_stats[i].w, grid.unit_w, grid.inverse_w)
    else:
        for i in range(start, stop):
            out_residual[i] = on_grid(residual[i], grid.unit_s, grid.inverse_s)


cdef inline void _grid_sums(const row_stat_t* row_stats, const float64_t* residual,
                            grid_scale_t grid, intp_t n,
                            node_sums_t* sums) noexcept nogil:
    """The sums of rows ``0 .. n - 1`` on the grid, in row order (``sums_add_row``
    of each row's values as ``_grid_rows`` writes them, formed here from the
    inputs, so that they need not be written first): the root's sums that
    ``RowPartition.start_tree`` takes of the rows on the grid, bit for bit."""
    cdef intp_t i
    cdef row_stat_t st
    cdef float64_t r
    cdef node_sums_t local
    sums_zero(&local)
    if row_stats != NULL:
        for i in range(n):
            st.wr = on_grid(row_stats[i].wr, grid.unit_s, grid.inverse_s)
            st.w = weight_on_grid(row_stats[i].w, grid.unit_w, grid.inverse_w)
            sums_add_row(&local, &st, &residual[i], 0)
    else:
        for i in range(n):
            r = on_grid(residual[i], grid.unit_s, grid.inverse_s)
            sums_add_row(&local, NULL, &r, 0)
    sums[0] = local


cdef inline void _row_sums(const float64_t* residual, intp_t n,
                           node_sums_t* sums) noexcept nogil:
    """The sums of rows ``0 .. n - 1`` of unit weight in row order (the residuals
    already on the grid), as ``RowPartition.start_tree`` takes them."""
    cdef intp_t i
    cdef node_sums_t local
    sums_zero(&local)
    for i in range(n):
        sums_add_row(&local, NULL, residual, i)
    sums[0] = local


cdef inline void _widen(float64_t* lo, float64_t* hi, float64_t w,
                        float64_t r) noexcept nogil:
    """``sums_widen``'s rule on a range (``lo``, ``hi``) of its own."""
    if w > 0.0:
        if r < lo[0]:
            lo[0] = r
        if r > hi[0]:
            hi[0] = r


cdef inline void _block_sums(const row_stat_t* row_stats, const float64_t* residual,
                             intp_t start, intp_t stop, node_sums_t* out) noexcept nogil:
    """The sums of rows ``start .. stop - 1`` on the grid but their w * r^2 (left 0):
    w, w * r and the residual range of the rows of positive weight, as
    ``sums_add_row`` adds them (``row_stats`` NULL: unit weights, ``residual`` on the
    grid). On the grid (a unit above 0: the caller's condition), w and w * r are
    exact in any order, and a range is the same in any order, so the rows go to
    four accumulators in turn (four chains of
    additions side by side instead of one), added at the end."""
    cdef intp_t i = start, k
    cdef float64_t w[4]
    cdef float64_t s[4]
    cdef float64_t lo[4]
    cdef float64_t hi[4]
    for k in range(4):
        w[k] = 0.0
        s[k] = 0.0
        lo[k] = INFINITY
        hi[k] = -INFINITY
    if row_stats != NULL:
        while i + 4 <= stop:
            for k in range(4):
                w[k] += row_stats[i + k].w
                s[k] += row_stats[i + k].wr
                _widen(&lo[k], &hi[k], row_stats[i + k].w, residual[i + k])
            i += 4
        while i < stop:
            w[0] += row_stats[i].w
            s[0] += row_stats[i].wr
            _widen(&lo[0], &hi[0], row_stats[i].w, residual[i])
            i += 1
    else:
        while i + 4 <= stop:
            for k in range(4):
                s[k] += residual[i + k]
                _widen(&lo[k], &hi[k], 1.0, residual[i + k])
            i += 4
        while i < stop:
            s[0] += residual[i]
            _widen(&lo[0], &hi[0], 1.0, residual[i])
            i += 1
        w[0] = <float64_t>(stop - start)
    out.w = (w[0] + w[1]) + (w[2] + w[3])
    out.wr = (s[0] + s[1]) + (s[2] + s[3])
    out.wr2 = 0.0
    out.r_min = min(min(lo[0], lo[1]), min(lo[2], lo[3]))
    out.r_max = max(max(hi[0], hi[1]), max(hi[2], hi[3]))


cdef void _root_wr2(void* context) noexcept nogil:
    """The root's sum of w * r^2 (``root_wr2_t``: rows ``0 .. n - 1`` in row order,
    as ``sums_add_row`` adds it; w of the rows on the grid, 1 with unit weights),
    then ``done``: the side task of the root's first collect (``level_t.side_task``)
    or, where no finder ran it, the grower's own step."""
    cdef root_wr2_t* task = <root_wr2_t*>context
    cdef intp_t i
    cdef float64_t w = 1.0, r, wr2 = 0.0
    if task.row_stats != NULL:
        for i in range(task.n):
            w = task.row_stats[i].w
            r = task.residual[i]
            wr2 += w * r * r
    else:
        for i in range(task.n):
            r = task.residual[i]
            wr2 += w * r * r
    task.wr2 = wr2
    task.done = True

cdef class TreeGrower:
    """Grow regression trees level by level or best first, reusing its buffers
    across trees.

    The grower is the orchestrator: it owns the tree and the level being split and
    runs the steps of a growth as calls: the rows' partition (``RowPartition``,
    _partition.pyx), the finder's statistics and choice (``_split_finder.pxd``),
    best-first growth (``BestFirstGrowth``, _best_first.pyx), the out-of-bag rows
    (``OutOfBagRouter``, _out_of_bag.pyx) and the pruning
    (``CostComplexityPruner``, _pruning.pyx).

    Parameters
    ----------
    X : float32 array of shape (n_samples, n_features), Fortran order, or None
        The features (read to move rows to the children of a split, unless the
        finder has bins, and to route out-of-bag rows). None: a finder with bins
        and no sample mask only (the grower then never reads raw values).
    finder : SplitFinder
        Computes the statistics of the nodes of each level and chooses their splits
        (built on the same X).
    max_depth : int
        Maximum depth; -1 for no limit.
    min_samples_split, min_samples_leaf : int
    min_weight_leaf : float
    max_features : int
        Features drawn at random for each node (``n_features`` for all).
    n_threads : int
    columns : tuple (data, indices, indptr) or None, default=None
        With ``X`` None and a finder with bins: the features as sparse columns
        (CSC: float32 ``data``, int32 row ``indices`` ascending within each column,
        int64 ``indptr`` of n_features + 1), read only to route out-of-bag rows
        (a row absent from a column holds 0.0). The caller checks the structure.
    criterion : {"friedman_mse", "squared_error"}, default="friedman_mse"
        The proxy splits are ranked by (``_choice.pxd``).
    min_impurity_decrease : float, default=0.0
        A chosen split is kept only if its weighted impurity decrease plus machine
        epsilon is at least this (0: every split).
    ccp_alpha : float, default=0.0
        Minimal cost-complexity pruning of each grown tree (0: none).
    max_leaf_nodes : int, default=0
        Grow best first up to this many leaves (at least 2); 0 grows level by level.
    monotonic_cst : int8 array of shape (n_features,) or None, default=None
        The monotonic constraint of each feature (-1, 0 or +1; None: none): a split
        on a constrained feature must order its children's mean residuals
        (``consider`` of _choice.pxd). The leaf values' bounds are the loss
        state's (``_loss_state.bounded_values``).
    interaction_cst : list of sequences of int, or None, default=None
        Groups of features allowed to interact (None: no constraint), every
        feature in at least one group (``_params.resolve`` adds scikit-learn's
        group of the features not listed): a node may split on the features of
        the groups holding every feature split on along its path from the root.
        With ``max_features``, the draws are taken among those features.
    categorical : bool array of shape (n_features,) or None, default=None
        The categorical features (their values category codes; _categorical.pxd).
    min_samples_category : int, default=1
        In a node, a category of a categorical feature with fewer rows than this
        is never sent left alone: it goes right with the categories of no row
        (``categorical_scan`` of _categorical.pxd); 1: none is set apart.
    shares_rows_with : TreeGrower or None, default=None
        A grower of as many rows that never grows a tree while this one grows or
        while its tree's leaves are read (``node_of_row``): the per-row buffers
        (the leaf of each row, the row partition and its scratch, the residuals on
        the grid) are that grower's, not new ones. The grower of
        the trees grown one after another beside those grown side by side shares
        them with one of those.

    Attributes
    ----------
    reducer : callable or None
        The distributed hook for the grower's own sums (None in one process; the
        finder's histograms have their own, ``HistogramSplitFinder.reducer``):
        called with the GIL as ``reducer(values, n_summed)`` with the root's totals
        and sums at the start of a tree, then before each later level (best first:
        each pair of children) with the sums of the splittable test of the level's
        nodes (also those of the last level's leaves with ``ccp_alpha > 0``: their
        impurities), and with ``min_impurity_decrease > 0`` after each ``choose``
        with the sums of w r^2 of the rows each chosen split sends left (one column);
        it must leave in ``values`` the element-wise sums over every process of the
        first ``n_summed`` columns (in a fixed process order), the minimum of the
        next column and the maximum of the last. Every process makes the same calls
        in the same order. A reducer with a ``carry(values, n_summed)`` method
        saves those steps where the finder collects statistics: the sums of a
        level's splittable test (the root's totals with them) are handed to
        ``carry`` instead, and the finder's next ``reduce`` (its own hook) must
        all-reduce them in the same step as the level's statistics, leaving their
        sums in ``values`` as ``reducer`` would; the statistics are then collected
        before the test is known, for every node whose totals allow a split (the
        root always), and the test is taken once they are reduced (one round trip
        per level, best first per split; ``_find_splits``).
    grid_maxima : tuple or None
        The next tree's grid maxima, (rows, largest abs(w r), largest w) of the row
        statistics it is grown on (unit weights: largest abs(r), and 0), taken as
        the loss state updated those rows (``_loss_state``), over every process
        with a ``reducer`` (reduced in the state's last step of the tree before:
        ``_loss_state.OneScoreFit``); or None: the tree then takes them itself in
        its grid pass (and, with a ``reducer``, reduces them in a step of its own:
        ``reducer(values, 1)``). Taken by the next ``grow`` only.
    look_ahead : bool
        Best first, with a finder whose scan costs the same for any number of
        nodes: split several frontier nodes per scan (the same tree).
    """

    def __cinit__(self):
        self.nodes = NULL
        self.node_bin = NULL
        self.node_impurity = NULL
        self.left_wr2 = NULL
        self.level_nodes = NULL
        self.level_sums = NULL
        self.best = NULL
        self.allowed = NULL
        self.perm = NULL
        self.monotonic = NULL
        self.group_count = NULL
        self.path_features = NULL
        self.on_path = NULL
        self.node_parent = NULL
        self.categorical = NULL
        self.cat_bits = NULL
        self.n_cat_rows = 0
        self.reducer = None
        self.grid_maxima = None
        self.carry_sums = False
        self.root_pending = False
        self.wr2_pending = False
        self.block_sums = None
        self.node_capacity = 0
        self.level_capacity = 0
        self.max_leaf_nodes = 0

    def __init__(self, const float32_t[::1, :] X, SplitFinder finder, int max_depth,
                 int64_t min_samples_split, int64_t min_samples_leaf,
                 float64_t min_weight_leaf, intp_t max_features, int n_threads,
                 columns=None, criterion="friedman_mse",
                 float64_t min_impurity_decrease=0.0, float64_t ccp_alpha=0.0,
                 intp_t max_leaf_nodes=0, monotonic_cst=None, interaction_cst=None,
                 categorical=None, int64_t min_samples_category=1,
                 TreeGrower shares_rows_with=None):
        self._check_options(X, finder, columns, criterion, min_impurity_decrease,
                            ccp_alpha, max_leaf_nodes)
        self.criterion = CRITERIA[criterion]
        self.min_impurity_decrease = min_impurity_decrease
        self.ccp_alpha = ccp_alpha
        self.has_X = X is not None or columns is not None
        self.finder = finder
        self.n_samples = finder.n_samples
        self.n_features = finder.n_features
        self.max_depth = max_depth
        self.min_samples_split = max(min_samples_split, 2)
        self.min_samples_leaf = max(min_samples_leaf, 1)
        self.min_weight_leaf = min_weight_leaf
        if min_samples_category < 1:
            raise ValueError(f"min_samples_category must be at least 1, got "
                             f"{min_samples_category}")
        self.min_samples_category = min_samples_category
        self.max_features = max(1, min(max_features, self.n_features))
        self.n_threads = max(1, n_threads)
        if shares_rows_with is not None:
            if shares_rows_with.n_samples != self.n_samples:
                raise ValueError(f"a grower of {self.n_samples} rows cannot share the "
                                 f"buffers of one of {shares_rows_with.n_samples}")
            self.node_of_row = shares_rows_with.node_of_row
            self.grid_residual = shares_rows_with.residual_buffer()
        else:
            self.node_of_row = np.zeros(self.n_samples, dtype=np.int32)
        self.perm = <int32_t*>grow_buffer(NULL, self.n_features, sizeof(int32_t),
                                          "feature draws")
        self.rows = RowPartition(finder, X, self.node_of_row, self.n_threads,
                                 None if shares_rows_with is None else shares_rows_with.rows)
        self.out_of_bag = (OutOfBagRouter(X, columns, self.n_samples, self.n_threads)
                           if self.has_X else None)
        self.pruner = CostComplexityPruner(ccp_alpha) if ccp_alpha > 0.0 else None
        self._set_constraints(monotonic_cst, interaction_cst)
        self._set_categorical(categorical, columns)
        # A first guess; the buffers grow (per level, never per node) when needed.
        cdef intp_t width = 1 << min(max_depth if max_depth > 0 else 10, 10)
        self._reserve_level(min(width, max(self.n_samples, 1)))
        self._reserve_nodes(min(2 * width + 1, 2 * max(self.n_samples, 1) + 1))
        self.max_leaf_nodes = max_leaf_nodes
        if max_leaf_nodes > 0:
            # Best first: every buffer sized once for max_leaf_nodes leaves (a tree
            # has at most 2 max_leaf_nodes - 1 nodes, the frontier at most
            # max_leaf_nodes of them).
            from ._best_first import BestFirstGrowth
            self._reserve_nodes(2 * max_leaf_nodes - 1)
            self._reserve_level(2 * max_leaf_nodes)
            self.rows.reserve(max_leaf_nodes)
            self.best_first = BestFirstGrowth(self, max_leaf_nodes)
            self.look_ahead = True

    def _set_constraints(self, monotonic_cst, interaction_cst):
        """The monotonic constraints (an int8 array, NULL where none is set) and the
        interaction groups as two index tables (members of each group, groups of
        each feature) with their scratch."""
        cdef intp_t d = self.n_features, g, f
        cdef const signed char[::1] mono
        cdef const int32_t[::1] gs, gm, fs, fg
        if monotonic_cst is not None:
            array = np.ascontiguousarray(monotonic_cst, dtype=np.int8)
            if array.shape != (d,) or not np.isin(array, (-1, 0, 1)).all():
                raise ValueError(f"monotonic_cst must hold {d} values in -1, 0, 1")
            if array.any():
                self.monotonic_array = array
                mono = array
                self.monotonic = &mono[0]
        if interaction_cst is None:
            return
        groups = [np.unique(np.asarray(list(group), dtype=np.int64)) for group in interaction_cst]
        if any(group.size and (group.min() < 0 or group.max() >= d) for group in groups):
            raise ValueError(f"interaction_cst: feature indices must be in [0, {d - 1}]")
        listed = np.zeros(d, dtype=bool)
        for group in groups:
            listed[group] = True
        if not listed.all():
            raise ValueError("interaction_cst: every feature must be in a group")
        group_start = np.zeros(len(groups) + 1, dtype=np.int32)
        group_start[1:] = np.cumsum([group.size for group in groups])
        members = (np.concatenate(groups) if groups else np.zeros(0)).astype(np.int32)
        owner = np.repeat(np.arange(len(groups), dtype=np.int32),
                          np.diff(group_start)).astype(np.int32)
        order = np.argsort(members, kind="stable")
        feature_groups = np.ascontiguousarray(owner[order], dtype=np.int32)
        feature_start = np.zeros(d + 1, dtype=np.int32)
        feature_start[1:] = np.cumsum(np.bincount(members, minlength=d))
        self.interaction_arrays = (group_start, members, feature_start, feature_groups)
        gs, gm, fs, fg = self.interaction_arrays
        self.group_start = &gs[0]
        self.group_members = &gm[0] if gm.shape[0] else NULL
        self.feature_start = &fs[0]
        self.feature_groups = &fg[0] if fg.shape[0] else NULL
        self.interactions = True
        self.group_count = <int32_t*>grow_buffer(NULL, max(len(groups), 1), sizeof(int32_t),
                                                 "interaction constraints")
        memset(self.group_count, 0, max(len(groups), 1) * sizeof(int32_t))
        self.path_features = <int32_t*>grow_buffer(NULL, d, sizeof(int32_t),
                                                   "interaction constraints")
        self.on_path = <uint8_t*>grow_buffer(NULL, d, sizeof(uint8_t),
                                             "interaction constraints")
        memset(self.on_path, 0, d * sizeof(uint8_t))

    def _set_categorical(self, categorical, columns):
        """The categorical features (a uint8 array, NULL where none is): their
        values are category codes (in a finder with bins, bin b is code b), their
        splits send a set of categories left (_categorical.pxd)."""
        cdef const uint8_t[::1] view
        if categorical is None:
            return
        array = np.ascontiguousarray(categorical, dtype=bool).astype(np.uint8)
        if array.shape != (self.n_features,):
            raise ValueError(f"categorical must hold {self.n_features} booleans")
        if not array.any():
            return
        if columns is not None:
            raise ValueError("categorical features need dense X (not sparse columns)")
        if self.monotonic != NULL:
            mono = np.asarray(self.monotonic_array)
            if (mono[array.astype(bool)] != 0).any():
                raise ValueError("a categorical feature cannot have a monotonic constraint")
        self.categorical_array = array
        view = array
        self.categorical = &view[0]

    def residual_buffer(self):
        """The grower's own float64 array of ``n_samples`` rows, into which a caller
        may write the residuals of the next tree and hand them to ``grow``: with
        unit weights ``grow`` then puts them on the grid in place (the buffer it
        uses for that anyway), with weights it reads them as they are. A fit then
        keeps no residual array of its own per tree grown at once. After ``grow``
        it holds the grower's rows (the residuals on the grid, for unit weights).

        Returns
        -------
        float64 array of shape (n_samples,)
        """
        if self.grid_residual is None or len(self.grid_residual) != self.n_samples:
            self.grid_residual = np.empty(self.n_samples, dtype=np.float64)
        return self.grid_residual

    def cat_bitsets(self):
        """The category sets of the last grown tree: a uint32 array of shape
        (n_rows, 8), row i the codes a categorical node split as node i sends left
        (bit c of word c // 32); such a node's ``threshold`` is its row. Empty
        without categorical features."""
        if self.cat_bits == NULL or self.n_cat_rows == 0:
            return np.zeros((0, 8), dtype=np.uint32)
        return np.asarray(<uint32_t[:self.n_cat_rows * 8]>self.cat_bits).reshape(
            self.n_cat_rows, 8).copy()

    @staticmethod
    def _check_options(X, SplitFinder finder, columns, criterion,
                       float64_t min_impurity_decrease, float64_t ccp_alpha,
                       intp_t max_leaf_nodes):
        """Refuse options that do not go together (ValueError)."""
        cdef const float32_t[::1] col_data
        cdef const int32_t[::1] col_rows
        cdef const int64_t[::1] col_start
        if criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {sorted(CRITERIA)}, got {criterion!r}")
        if not min_impurity_decrease >= 0.0 or not ccp_alpha >= 0.0:
            raise ValueError("min_impurity_decrease and ccp_alpha must be >= 0, got "
                             f"{min_impurity_decrease!r} and {ccp_alpha!r}")
        if max_leaf_nodes != 0 and max_leaf_nodes < 2:
            raise ValueError(f"max_leaf_nodes must be 0 (level-wise) or >= 2, "
                             f"got {max_leaf_nodes}")
        bins = finder.partition_bins()
        if columns is not None:
            if X is not None or bins is None:
                raise ValueError("sparse columns go with a split finder with bins, "
                                 "without X")
            col_data, col_rows, col_start = columns
            if (col_start.shape[0] != finder.n_features + 1
                    or col_data.shape[0] != col_rows.shape[0]
                    or col_start[finder.n_features] != col_data.shape[0]):
                raise ValueError("the sparse columns do not match the split finder")
        if X is None and columns is None and bins is None:
            raise ValueError("X is needed with a split finder without bins")
        if X is not None and (finder.n_samples != X.shape[0]
                              or finder.n_features != X.shape[1]):
            raise ValueError("the split finder was built for data of another shape")

    def __dealloc__(self):
        free(self.nodes)
        free(self.node_bin)
        free(self.node_impurity)
        free(self.left_wr2)
        free(self.level_nodes)
        free(self.level_sums)
        free(self.best)
        free(self.allowed)
        free(self.perm)
        free(self.group_count)
        free(self.path_features)
        free(self.on_path)
        free(self.node_parent)
        free(self.cat_bits)

    cdef int _reserve_nodes(self, intp_t capacity) except -1:
        if capacity > self.node_capacity:
            self.nodes = <node_t*>grow_buffer(self.nodes, capacity, sizeof(node_t), "tree nodes")
            self.node_bin = <uint8_t*>grow_buffer(self.node_bin, capacity, sizeof(uint8_t),
                                                  "tree nodes")
            if self.categorical != NULL:
                self.cat_bits = <uint32_t*>grow_buffer(
                    self.cat_bits, capacity * CAT_WORDS, sizeof(uint32_t), "tree nodes")
            if self.interactions:
                self.node_parent = <int32_t*>grow_buffer(self.node_parent, capacity,
                                                         sizeof(int32_t), "tree nodes")
            if self.pruner is not None:
                self.node_impurity = <float64_t*>grow_buffer(
                    self.node_impurity, capacity, sizeof(float64_t), "tree nodes")
                self.pruner.reserve(capacity)
            self.node_capacity = capacity
        return 0

    cdef int _reserve_level(self, intp_t capacity) except -1:
        """Room for levels of ``capacity`` nodes (and the next level, twice as many)."""
        if capacity > self.level_capacity:
            # The current level at [0, capacity), the next one at [capacity, 3 capacity).
            self.level_nodes = <level_node_t*>grow_buffer(
                self.level_nodes, 3 * capacity, sizeof(level_node_t), "level buffers")
            self.level_sums = <node_sums_t*>grow_buffer(
                self.level_sums, 3 * capacity, sizeof(node_sums_t), "level buffers")
            self.best = <split_t*>grow_buffer(self.best, capacity, sizeof(split_t),
                                        "level buffers")
            if self.min_impurity_decrease > 0.0:
                self.left_wr2 = <float64_t*>grow_buffer(self.left_wr2, capacity,
                                                        sizeof(float64_t), "level buffers")
            if self.max_features < self.n_features or self.interactions:
                self.allowed = <uint8_t*>grow_buffer(self.allowed, capacity * self.n_features,
                                               sizeof(uint8_t), "feature draws")
            self.level_capacity = capacity
        return 0

    def nodes_array(self):
        """Copy of the nodes of the last grown tree as a structured array (NODE_DTYPE)."""
        out = np.empty(self.n_nodes, dtype=NODE_DTYPE)
        cdef node_t[::1] view = out
        cdef intp_t i
        for i in range(self.n_nodes):
            view[i] = self.nodes[i]
        return out

    def node_impurities(self):
        """The impurity of each node of the last grown tree, from the sums over its
        own rows (the weighted variance of its residuals), as the pruning reads
        them; None unless ``ccp_alpha > 0`` (the only growth that keeps them)."""
        if self.node_impurity == NULL:
            return None
        return np.asarray(<float64_t[:self.n_nodes]>self.node_impurity).copy()

    cdef void _init_node(self, intp_t i, const side_t* stats, int depth) noexcept nogil:
        cdef node_t* nd = &self.nodes[i]
        memset(nd, 0, sizeof(node_t))  # padding bytes too: a node's bytes are deterministic
        nd.value = stats.s / stats.w if stats.w > 0 else 0.0
        nd.weighted_n = stats.w
        nd.n_samples = stats.n
        nd.feature = -1
        nd.left = -1
        nd.right = -1
        nd.depth = <uint8_t>min(depth, 255)
        self.node_bin[i] = 0

    def grow(self, const row_stat_t[::1] row_stats, const float64_t[::1] residual,
             const uint8_t[::1] sample_mask, unsigned long long seed=0):
        """Grow one tree on the current row statistics.

        Parameters
        ----------
        row_stats : ROW_STAT_DTYPE array of shape (n_samples,) or None
            w*r and w of each row (r the residual the tree fits); None: every
            weight is 1 (w*r is r: nothing but the residuals is read).
        residual : float64 array of shape (n_samples,)
            r itself (for the sums of w*r^2 of the impurity test).
        sample_mask : uint8 array of shape (n_samples,) or None
            1 for in-bag rows (stochastic boosting); None uses every row.
        seed : int
            Seed of the per-node feature draws when ``max_features < n_features``.

        Returns
        -------
        n_nodes : int
            Number of nodes; ``node_of_row`` then holds the leaf of every row.
        """
        cdef intp_t n = self.n_samples
        cdef level_t level
        cdef node_sums_t root_sums
        cdef node_sums_t* summed = NULL
        if (row_stats is not None and row_stats.shape[0] != n) or residual.shape[0] != n or (
                sample_mask is not None and sample_mask.shape[0] != n):
            raise ValueError(f"row_stats, residual and sample_mask must have {n} rows")
        if sample_mask is not None and not self.has_X:
            raise ValueError("a sample mask needs X (its out-of-bag rows are routed on "
                             "their raw values)")
        # (A tree that raised before its root's w * r^2 was settled leaves nothing
        # pending for the next one.)
        self.wr2_pending = False
        self.carry_sums = (self.reducer is not None
                           and getattr(self.reducer, "carry", None) is not None)
        # From here on the tree sees its rows on the grid (exact sums, exact ties).
        GBC_TRACE_REGION_BEGIN(GBC_TR_TREE, n)
        if sample_mask is None and n > 0 and (self.reducer is None
                                              or self.grid_maxima is not None):
            # Every row in the root, and the grid known without a step of its own
            # (one process; or the maxima of every process, reduced with the last
            # update): the grid pass also fills the root's rows and takes their sums
            # (``_grid_and_root``: one parallel region; a data-parallel fit then
            # reduces those sums as it would ``start_tree``'s). In one process,
            # level by level, with a finder that runs side tasks, the root's
            # w * r^2 (one chain in row order) is left to a task beside the root's
            # collect (``_find_splits``).
            row_stats, residual = self._grid_and_root(
                row_stats, residual, &root_sums,
                self.reducer is None and self.best_first is None
                and self.finder.side_tasks)
            summed = &root_sums
        else:
            row_stats, residual = self._put_on_grid(row_stats, residual)
        cdef const row_stat_t* rs = &row_stats[0] if row_stats is not None and n > 0 else NULL
        cdef const float64_t* res = &residual[0] if n > 0 else NULL
        self._plant(rs, res, row_stats, residual, sample_mask, summed)
        level.side_task = NULL
        level.side_context = NULL
        level.partition = self.rows.rows
        level.min_samples_leaf = self.min_samples_leaf
        level.min_weight_leaf = self.min_weight_leaf
        level.criterion = self.criterion
        level.grid = self.grid
        level.monotonic = self.monotonic
        level.categorical = self.categorical
        level.min_samples_category = self.min_samples_category
        if self.best_first is not None:
            self.best_first.grow(self, row_stats, residual, seed)
        else:
            self._grow_level_wise(rs, res, seed, &level)
        with nogil:
            self._finish_tree(sample_mask)
        GBC_TRACE_REGION_END(GBC_TR_TREE, n)
        return self.n_nodes

    cdef int _plant(self, const row_stat_t* rs, const float64_t* res,
                    const row_stat_t[::1] row_stats, const float64_t[::1] residual,
                    const uint8_t[::1] sample_mask,
                    const node_sums_t* summed=NULL) except -1:
        """The root of a tree: its in-bag rows and their sums (over every process),
        the finder told, the root as the tree's only node and the level's only
        one. ``summed`` (not NULL): every row is in bag, the partition's rows are
        filled and these are their sums (``_grid_and_root``)."""
        cdef side_t root
        cdef node_sums_t root_sums
        cdef intp_t n_inbag
        with nogil:
            if summed != NULL:
                n_inbag = self.rows.every_row_filled()
                root_sums = summed[0]
            else:
                n_inbag = self.rows.start_tree(sample_mask, rs, res, &root_sums)
        root.n = n_inbag
        root.w = root_sums.w
        root.s = root_sums.wr
        # (Carried sums: the root's totals are reduced with its statistics, or
        # alone where none are collected: ``_take_sums``.)
        self.root_pending = self.carry_sums
        if self.reducer is not None and not self.carry_sums:
            root, root_sums = self._reduce_root(root, root_sums)
        root_sums.w = root.w
        root_sums.wr = root.s
        self.tree_weight = root.w
        self.finder.start_tree(row_stats, residual, sample_mask)
        self._init_node(0, &root, 0)
        self.n_nodes = 1
        self.n_cat_rows = 0
        self.level_nodes[0].total = root
        self.level_nodes[0].node = 0
        self.level_nodes[0].start = 0
        self.level_nodes[0].stop = n_inbag
        self.level_nodes[0].parent = -1
        self.level_nodes[0].sibling = -1
        self.level_sums[0] = root_sums
        return 0

    cdef int _grow_level_wise(self, const row_stat_t* rs, const float64_t* res,
                              unsigned long long seed, level_t* level) except -1:
        """Grow the tree level by level from its root (``level_nodes[0]``): per
        level, the nodes that may split, their splits, the children and the rows
        moved to them, until ``max_depth`` or no node splits; then every node left
        is a leaf."""
        cdef intp_t s, n_slots = 1, n_split
        cdef int depth = 0
        cdef bint last_level, leaves = False
        cdef bint sums_reduced = True   # the level's sums are every process's
        while n_slots > 0 and (self.max_depth < 0 or depth < self.max_depth):
            if self.carry_sums:
                # The sums travel with the level's statistics (``_find_splits``);
                # without a node whose totals allow a split, none is collected, and
                # the sums are reduced only where something reads them (below).
                sums_reduced = False
                if not self._mark_tentative(n_slots, self.finder.subtracts):
                    break
            else:
                if depth > 0 and self.reducer is not None:
                    self._reduce_sums(n_slots)
                sums_reduced = True
                if self.wr2_pending and not self._root_may_split():
                    with nogil:
                        self._settle_wr2()
                if self.wr2_pending:
                    # The root's w * r^2 summed beside its collect, the test taken
                    # after it (``_find_splits``): by its totals and range, it may.
                    self.level_nodes[0].splittable = True
                    self._plan(1, self.finder.subtracts)
                elif not self._mark_splittable(n_slots, self.finder.subtracts):
                    break
            self._reserve_nodes(self.n_nodes + 2 * n_slots)
            self._reserve_level(n_slots)
            self.rows.reserve(n_slots)
            self.finder.start_level(n_slots)
            sums_reduced = True
            if not self._find_splits(level, n_slots, seed, rs, res,
                                     self.finder.subtracts):
                break
            # The children of the last level are leaves: their sums are not needed.
            last_level = self.max_depth >= 0 and depth + 1 >= self.max_depth
            with nogil:
                n_split = self._apply_splits(n_slots, depth)
                # (The sums of the last level's leaves only for their impurity; without
                # them, the leaves' rows are only labelled: no finder step follows in
                # this tree.)
                leaves = last_level and self.node_impurity == NULL
                self._split_rows(n_slots, n_split, rs, res,
                                 not last_level or self.node_impurity != NULL, leaves)
            # (Labelled leaves: no nodes left to make leaves below.)
            n_slots = 0 if leaves else 2 * n_split
            sums_reduced = False
            # Ctrl-C (or any pending signal) stops a fit between two levels.
            PyErr_CheckSignals()
            depth += 1
        if self.wr2_pending:
            with nogil:
                self._settle_wr2()   # (a root that no level searched)
        if self.root_pending:
            self._settle_sums(1)   # (a root that no level searched)
        if self.node_impurity != NULL:
            # The last level's leaves (their sums not reduced yet where max_depth
            # ended the growth).
            if not sums_reduced and n_slots > 0 and self.reducer is not None:
                self._settle_sums(n_slots)
            for s in range(n_slots):
                self._record_impurity(s)
        with nogil:
            for s in range(n_slots):
                self.rows.set_leaf(&self.level_nodes[s])
        return 0

    cdef int _find_splits(self, level_t* level, intp_t n_slots, unsigned long long seed,
                          const row_stat_t* row_stats,
                          const float64_t* residual, bint subtract) except -1:
        """The best split of every splittable node ``level_nodes[0 .. n_slots)``
        into ``best`` (after the finder's ``start_level``): the feature draws, the
        finder's collect, reduce and choose, then min_impurity_decrease.

        With carried sums (``carry_sums``) the nodes are marked by their totals
        only (``_mark_tentative``): the level's sums of the splittable test are
        reduced with the statistics, in the finder's ``reduce``, and the test is
        taken then (``subtract``: as ``_mark_splittable``'s); a node it turns down
        had its statistics collected for nothing, and the plan that follows is a
        part of the one collected by (a node's plan depends on the two siblings'
        tests), so the statistics derived and chosen from are those of the test
        taken first. With the root's w * r^2 pending (``wr2_pending``), it is
        summed beside the collect (the finder's side task, or after it), and the
        root's test is taken then. Returns 0 where no node may split (nothing
        chosen), else 1."""
        level.nodes = self.level_nodes
        level.n_nodes = n_slots
        level.allowed = NULL
        if self.max_features < self.n_features or self.interactions:
            self._draw_features(n_slots, seed)
            level.allowed = self.allowed
        if self.wr2_pending:
            # (The root's w * r^2: a task beside the collect's own, or after it.)
            self.root_wr2.done = False
            level.side_task = _root_wr2
            level.side_context = &self.root_wr2
        with nogil:
            self.finder.collect(level)
        level.side_task = NULL
        level.side_context = NULL
        if self.wr2_pending:
            with nogil:
                self._settle_wr2()
            if not self._mark_splittable(n_slots, subtract):
                return 0
        if self.carry_sums:
            values = self._sums_values(n_slots)
            self.reducer.carry(values, 4 if self.root_pending else 3)
            self.finder.reduce(level)
            self._take_sums(values, n_slots)
            if not self._mark_splittable(n_slots, subtract):
                return 0
        else:
            self.finder.reduce(level)
        with nogil:
            self.finder.choose(level, self.best)
        if self.min_impurity_decrease > 0.0:
            # (Best first, scikit-learn's _add_split_node: the node waits as a leaf.)
            self._check_decrease(n_slots, row_stats, residual)
        return 1

    cdef void _split_rows(self, intp_t n_slots, intp_t n_split,
                          const row_stat_t* row_stats, const float64_t* residual,
                          bint with_sums, bint leaves=False) noexcept nogil:
        """The partition's step of a level (``RowPartition.split``): the rows of the
        split nodes to their children (made by ``_apply_splits``, after the level),
        the other nodes' rows to their leaf."""
        cdef level_split_t lv
        lv.nodes = self.level_nodes
        lv.children = self.level_nodes + self.level_capacity
        lv.sums = self.level_sums
        lv.best = self.best
        lv.tree = self.nodes
        lv.node_bin = self.node_bin
        lv.categorical = self.categorical
        lv.cat_bits = self.cat_bits
        lv.n_nodes = n_slots
        lv.n_split = n_split
        self.rows.split(&lv, row_stats, residual, with_sums, leaves)

    cdef void _finish_tree(self, const uint8_t[::1] sample_mask) noexcept nogil:
        """The leaf of every out-of-bag row, then the pruning (ccp_alpha)."""
        if sample_mask is not None:
            self.out_of_bag.route(self.nodes, sample_mask, &self.node_of_row[0],
                                  self.categorical, self.cat_bits)
        if self.pruner is not None:
            if self.n_nodes > 1:
                self.n_nodes = self.pruner.prune(self.nodes, self.n_nodes,
                                                 self.node_impurity, &self.node_of_row[0],
                                                 self.n_samples)

    cdef tuple _put_on_grid(self, const row_stat_t[::1] row_stats,
                            const float64_t[::1] residual):
        """The tree's rows on a grid (``grid_unit``, ``on_grid`` of _choice.pxd): w * r
        to whole numbers of ``grid.unit_s``, w of ``grid.unit_w`` (1 for unit
        weights), so that every sum of them is exact whatever its order. The units
        follow from the rows' largest magnitudes, over every process: the same grid
        everywhere. Returns (row statistics or None, residuals) on the grid, in this
        grower's buffers (the inputs are left as they are); the impurity sums w r^2
        are taken of these."""
        cdef intp_t i, b, n = self.n_samples, n_blocks = (n + GRID_BLOCK - 1) // GRID_BLOCK
        cdef float64_t max_wr = 0.0, max_w = 0.0, n_rows = <float64_t>n
        cdef float64_t[::1] out_residual
        cdef row_stat_t[::1] out_stats
        cdef bint weighted = row_stats is not None
        cdef int n_threads = self.n_threads if n >= MIN_PARALLEL_ROWS else 1
        # The largest magnitudes, block by block (fixed blocks; a maximum does not
        # depend on the order anyway), then over the blocks.
        cdef float64_t[:, ::1] block_max = np.zeros((max(n_blocks, 1), 2))
        cdef bint given = self.grid_maxima is not None
        if given:
            # Taken by the step before this tree (the loss state's, from the same
            # rows, reduced over every process where there are several:
            # ``_loss_state``): no pass, no step of its own.
            n_rows, max_wr, max_w = self.grid_maxima
            n_blocks = 0
        self.grid_maxima = None
        with nogil:
            GBC_TRACE_REGION_BEGIN(GBC_TR_GRID_MAX, n)
            for b in prange(n_blocks, schedule="static", num_threads=n_threads):
                GBC_TRACE_TASK_BEGIN(GBC_TR_GRID_MAX, b)
                _block_maxima(row_stats, residual, weighted, b * GRID_BLOCK,
                              min(n, (b + 1) * GRID_BLOCK), &block_max[b, 0])
                GBC_TRACE_TASK_END(GBC_TR_GRID_MAX, b)
            GBC_TRACE_REGION_END(GBC_TR_GRID_MAX, n)
            for b in range(n_blocks):
                max_wr = max(max_wr, block_max[b, 0])
                max_w = max(max_w, block_max[b, 1])
        if self.reducer is not None and not given:
            values = np.array([[n_rows, 0.0, max_wr, max_w]], dtype=np.float64)
            self.reducer(values, 1)
            n_rows, max_wr, max_w = values[0, 0], values[0, 2], values[0, 3]
        cdef grid_scale_t grid = _grid_scale(n_rows, max_wr, max_w, weighted)
        self.grid.unit_s = grid.unit_s
        self.grid.unit_w = grid.unit_w
        if not weighted:
            if self.grid_residual is None or len(self.grid_residual) != n:
                self.grid_residual = np.empty(n, dtype=np.float64)
            out_residual = self.grid_residual
            with nogil:
                GBC_TRACE_REGION_BEGIN(GBC_TR_GRID_ROWS, n)
                for i in prange(n, schedule="static", num_threads=n_threads):
                    out_residual[i] = on_grid(residual[i], grid.unit_s, grid.inverse_s)
                GBC_TRACE_REGION_END(GBC_TR_GRID_ROWS, n)
            return None, self.grid_residual
        if self.grid_stats is None or len(self.grid_stats) != n:
            self.grid_stats = np.empty(n, dtype=ROW_STAT_DTYPE)
        out_stats = self.grid_stats
        with nogil:
            GBC_TRACE_REGION_BEGIN(GBC_TR_GRID_ROWS, n)
            for i in prange(n, schedule="static", num_threads=n_threads):
                out_stats[i].wr = on_grid(row_stats[i].wr, grid.unit_s, grid.inverse_s)
                out_stats[i].w = weight_on_grid(row_stats[i].w, grid.unit_w, grid.inverse_w)
            GBC_TRACE_REGION_END(GBC_TR_GRID_ROWS, n)
        return self.grid_stats, residual

    cdef tuple _grid_and_root(self, const row_stat_t[::1] row_stats,
                              const float64_t[::1] residual, node_sums_t* sums,
                              bint wr2_later=False):
        """``_put_on_grid`` and the root of a tree given every row, in one parallel
        region (no mask; one process, or ``grid_maxima`` given: no step of the
        reducer): the blocks' maxima, then, as tasks of their own, the grid pass
        and the partition's root rows block by block (``_grid_rows``,
        ``RowPartition.fill_rows``) and the root's ``sums``
        (``_grid_sums``: one task, in row order, from the inputs). Where the grid
        pass writes the residuals in place (the caller's ``residual_buffer()``),
        the sums read them after the pass instead. ``wr2_later``: each block's
        task also takes its rows' sums but w * r^2 (``_block_sums``, added in block
        order after the region: exact on the grid), and w * r^2, the one chain that
        keeps the row order, is left to ``root_wr2`` (``wr2_pending``; its task
        set, summed by ``_settle_wr2``); without a grid (a unit of 0) the sums are
        the one row-order task's after all. With ``grid_maxima`` (taken as
        the loss state updated the rows: ``_loss_state``) the blocks' maxima are
        not taken again (their row count, every process's in a data-parallel fit,
        is the grid's): the region starts at the tasks. The same numbers as
        ``_put_on_grid`` then ``RowPartition.start_tree``, on any number of threads
        (the sums are one task's, or the blocks' exact on the grid added in block
        order with w * r^2 one task's; the rest writes each row's own values).
        Returns what ``_put_on_grid`` returns."""
        cdef intp_t b, k, t, n = self.n_samples, n_blocks = (n + GRID_BLOCK - 1) // GRID_BLOCK
        cdef intp_t n_tasks, first
        cdef float64_t n_rows = <float64_t>n
        cdef grid_scale_t grid, g
        cdef bint weighted = row_stats is not None, in_place
        cdef int n_threads = self.n_threads if n >= MIN_PARALLEL_ROWS else 1
        cdef const row_stat_t* rs_in = &row_stats[0] if weighted else NULL
        cdef const float64_t* res_in = &residual[0]
        cdef row_stat_t* rs_out = NULL
        cdef float64_t* res_out = NULL
        cdef float64_t[::1] out_residual
        cdef row_stat_t[::1] out_stats
        cdef float64_t[:, ::1] block_max = np.zeros((max(n_blocks, 1), 2))
        cdef float64_t* maxima = &block_max[0, 0]
        cdef float64_t[:, ::1] block_view
        cdef node_sums_t* parts = NULL
        cdef const float64_t* range_of = NULL
        # The blocks whose maxima the region takes, then those the grid is read from.
        cdef intp_t n_max_blocks = n_blocks, n_grid_blocks = n_blocks
        if self.grid_maxima is not None:
            n_rows, block_max[0, 0], block_max[0, 1] = self.grid_maxima
            n_max_blocks = 0
            n_grid_blocks = 1
        self.grid_maxima = None
        if weighted:
            if self.grid_stats is None or len(self.grid_stats) != n:
                self.grid_stats = np.empty(n, dtype=ROW_STAT_DTYPE)
            out_stats = self.grid_stats
            rs_out = &out_stats[0]
        else:
            if self.grid_residual is None or len(self.grid_residual) != n:
                self.grid_residual = np.empty(n, dtype=np.float64)
            out_residual = self.grid_residual
            res_out = &out_residual[0]
        in_place = res_out == res_in
        if wr2_later:
            # (w, w * r and the range block by block: the blocks' sums, 5 values each.)
            if self.block_sums is None or len(self.block_sums) != n_blocks:
                self.block_sums = np.empty((n_blocks, 5), dtype=np.float64)
            block_view = self.block_sums
            parts = <node_sums_t*>&block_view[0, 0]
            range_of = res_in if weighted else res_out
        # Task 0: the sums (unless in place or left to the blocks); then one task
        # per block of rows.
        first = 1 if in_place or wr2_later else 0
        n_tasks = n_blocks + 1 - first
        with nogil:
            GBC_TRACE_REGION_BEGIN(GBC_TR_GRID_ROWS, n)
            with parallel(num_threads=n_threads):
                if n_max_blocks > 0:
                    for b in prange(n_max_blocks, schedule="dynamic"):
                        GBC_TRACE_TASK_BEGIN(GBC_TR_GRID_MAX, b)
                        _block_maxima(row_stats, residual, weighted, b * GRID_BLOCK,
                                      min(n, (b + 1) * GRID_BLOCK), &block_max[b, 0])
                        GBC_TRACE_TASK_END(GBC_TR_GRID_MAX, b)
                    omp_barrier()  # every block's maxima before the grid is read from them
                for t in prange(n_tasks, schedule="dynamic"):
                    # (Each task reads the grid from the maxima: a few dozen values.)
                    g = _grid_from_maxima(maxima, n_grid_blocks, n_rows, weighted)
                    if t + first == 0:
                        _grid_sums(rs_in, res_in, g, n, sums)
                    else:
                        k = t + first - 1
                        _grid_rows(rs_in, res_in, rs_out, res_out, g, k * GRID_BLOCK,
                                   min(n, (k + 1) * GRID_BLOCK))
                        self.rows.fill_rows(k * GRID_BLOCK, min(n, (k + 1) * GRID_BLOCK))
                        if wr2_later:
                            _block_sums(rs_out, range_of, k * GRID_BLOCK,
                                        min(n, (k + 1) * GRID_BLOCK), &parts[k])
                if in_place and not wr2_later:
                    omp_barrier()  # every row on the grid before the sums read them
                    for t in prange(1, schedule="static"):
                        _row_sums(res_out, n, sums)
            GBC_TRACE_REGION_END(GBC_TR_GRID_ROWS, n)
            grid = _grid_from_maxima(maxima, n_grid_blocks, n_rows, weighted)
            if wr2_later and not (grid.unit_s > 0.0 and (grid.unit_w > 0.0 or not weighted)):
                # No grid (a unit of 0: the rows' values too large for one, only
                # through the grower's own API): the blocks' sums would depend on
                # their order, so the sums are the one row-order task's, as without
                # ``wr2_later``.
                wr2_later = False
                if in_place:
                    _row_sums(res_out, n, sums)
                else:
                    _grid_sums(rs_in, res_in, grid, n, sums)
            if wr2_later:
                sums_zero(sums)
                for b in range(n_blocks):
                    sums_add(sums, &parts[b])
                self.root_wr2.row_stats = rs_out
                self.root_wr2.residual = range_of
                self.root_wr2.n = n
                self.root_wr2.done = False
                self.wr2_pending = True
        self.grid.unit_s = grid.unit_s
        self.grid.unit_w = grid.unit_w
        if weighted:
            return self.grid_stats, residual
        return None, self.grid_residual

    cdef tuple _reduce_root(self, side_t root, node_sums_t sums):
        """(Data spread over processes) the root's totals and sums over every
        process: ``reducer(values, n_summed)`` must leave in ``values`` (float64, one
        row per node) the sums over processes of its first ``n_summed`` columns, in
        a fixed order, the minimum of the next column and the maximum of the last."""
        values = np.array([[root.n, root.w, root.s, sums.wr2, sums.r_min, sums.r_max]],
                          dtype=np.float64)
        self.reducer(values, 4)
        root.n = <int64_t>values[0, 0]
        root.w = values[0, 1]
        root.s = values[0, 2]
        sums.wr2 = values[0, 3]
        sums.r_min = values[0, 4]
        sums.r_max = values[0, 5]
        return root, sums

    cdef int _reduce_sums(self, intp_t n_slots) except -1:
        """(Data spread over processes) the sums of the splittable test of the
        level's nodes (w, w * r, w * r^2, the residual range) over every process."""
        cdef intp_t s
        cdef float64_t[:, ::1] v
        values = np.empty((n_slots, 5), dtype=np.float64)
        v = values
        for s in range(n_slots):
            v[s, 0] = self.level_sums[s].w
            v[s, 1] = self.level_sums[s].wr
            v[s, 2] = self.level_sums[s].wr2
            v[s, 3] = self.level_sums[s].r_min
            v[s, 4] = self.level_sums[s].r_max
        self.reducer(values, 3)
        for s in range(n_slots):
            self.level_sums[s].w = v[s, 0]
            self.level_sums[s].wr = v[s, 1]
            self.level_sums[s].wr2 = v[s, 2]
            self.level_sums[s].r_min = v[s, 3]
            self.level_sums[s].r_max = v[s, 4]
        return 0

    cdef object _sums_values(self, intp_t n_slots):
        """The level's sums of the splittable test as a reducer's ``values``: one
        row per node, (w, w * r, w * r^2, r_min, r_max) (3 summed columns); with
        the root's pending (``root_pending``), its in-bag count first (4)."""
        cdef intp_t s, c = 1 if self.root_pending else 0
        cdef float64_t[:, ::1] v
        values = np.empty((n_slots, 5 + c), dtype=np.float64)
        v = values
        for s in range(n_slots):
            if c:
                v[s, 0] = <float64_t>self.level_nodes[s].total.n
            v[s, c] = self.level_sums[s].w
            v[s, c + 1] = self.level_sums[s].wr
            v[s, c + 2] = self.level_sums[s].wr2
            v[s, c + 3] = self.level_sums[s].r_min
            v[s, c + 4] = self.level_sums[s].r_max
        return values

    cdef int _take_sums(self, object values, intp_t n_slots) except -1:
        """The level's sums from ``values`` (``_sums_values``'s, reduced); the root's
        totals with them where they were pending (the sums of ``_reduce_root``)."""
        cdef intp_t s, c = 1 if self.root_pending else 0
        cdef float64_t[:, ::1] v = values
        for s in range(n_slots):
            self.level_sums[s].w = v[s, c]
            self.level_sums[s].wr = v[s, c + 1]
            self.level_sums[s].wr2 = v[s, c + 2]
            self.level_sums[s].r_min = v[s, c + 3]
            self.level_sums[s].r_max = v[s, c + 4]
        if c:
            self.root_pending = False
            self.level_nodes[0].total.n = <int64_t>v[0, 0]
            self.level_nodes[0].total.w = v[0, 1]
            self.level_nodes[0].total.s = v[0, 2]
            self.tree_weight = v[0, 1]
            self._init_node(0, &self.level_nodes[0].total, 0)
        return 0

    cdef int _settle_sums(self, intp_t n_slots) except -1:
        """(Carried sums) the level's sums reduced alone, where no statistics are
        collected to carry them: the root's (its totals, always needed) or the
        leaves' impurities."""
        if not self.carry_sums:
            return self._reduce_sums(n_slots)
        values = self._sums_values(n_slots)
        self.reducer(values, 4 if self.root_pending else 3)
        self._take_sums(values, n_slots)
        return 0

    cdef bint _mark_tentative(self, intp_t n_slots, bint subtract):
        """(Carried sums) which nodes may split by their totals alone (every
        process's: a child's are its parent's split's; the root's are not known yet:
        it may), and the statistics the finder collects for them: every node the
        test of ``_mark_splittable`` can pass, so that its plan, made once the sums
        are reduced, asks for no statistics not collected."""
        cdef intp_t s
        cdef bint any_ = False
        cdef level_node_t* nd
        for s in range(n_slots):
            nd = &self.level_nodes[s]
            nd.splittable = self.root_pending or (
                nd.total.n >= self.min_samples_split
                and nd.total.n >= 2 * self.min_samples_leaf
                and nd.total.w >= 2 * self.min_weight_leaf)
            any_ = any_ or nd.splittable
        self._plan(n_slots, subtract)
        return any_

    cdef bint _root_may_split(self):
        """(The root's w * r^2 pending: ``wr2_pending``) whether the test of
        ``_mark_splittable`` can pass the root by what is known of it: its totals
        and its residual range (the impurity taken once its w * r^2 is summed)."""
        cdef const level_node_t* nd = &self.level_nodes[0]
        return (nd.total.n >= self.min_samples_split
                and nd.total.n >= 2 * self.min_samples_leaf
                and nd.total.w >= 2 * self.min_weight_leaf
                and self.level_sums[0].r_max > self.level_sums[0].r_min)

    cdef void _settle_wr2(self) noexcept nogil:
        """The root's w * r^2 into its sums (``level_sums[0]``): the side task's,
        summed here where no finder ran it."""
        if not self.root_wr2.done:
            _root_wr2(&self.root_wr2)
        self.level_sums[0].wr2 = self.root_wr2.wr2
        self.wr2_pending = False

    cdef bint _mark_splittable(self, intp_t n_slots, bint subtract):
        """Which nodes of the level may split, and the statistics the finder must
        compute for them (``subtract``: the larger child of a pair from its
        parent's)."""
        cdef intp_t s
        cdef bint any_ = False
        cdef level_node_t* nd
        cdef node_sums_t* sums
        for s in range(n_slots):
            nd = &self.level_nodes[s]
            sums = &self.level_sums[s]
            if self.node_impurity != NULL and nd.node >= 0:
                self._record_impurity(s)
            nd.splittable = (
                nd.total.n >= self.min_samples_split
                and nd.total.n >= 2 * self.min_samples_leaf
                and nd.total.w >= 2 * self.min_weight_leaf
                and sums.r_max > sums.r_min
                and impurity_of(sums.w, sums.wr, sums.wr2) > IMPURITY_EPSILON
            )
            any_ = any_ or nd.splittable
        self._plan(n_slots, subtract)
        return any_

    cdef void _plan(self, intp_t n_slots, bint subtract) noexcept nogil:
        """The statistics the finder computes for the level's nodes, from their
        ``splittable`` (``plan_statistics``)."""
        cdef intp_t s
        if n_slots == 1:
            self.level_nodes[0].plan = STATS_COLLECT if self.level_nodes[0].splittable else STATS_NONE
        else:
            for s in range(0, n_slots, 2):
                plan_statistics(&self.level_nodes[s], &self.level_nodes[s + 1], subtract)

    cdef void _draw_features(self, intp_t n_slots, unsigned long long seed):
        """The features every node of the level may split on: those its interaction
        constraints allow (``_allowed_by_interactions``; every feature without), of
        which ``max_features`` drawn at random (seeded by node), in increasing
        feature order before the draw (so that with every feature allowed the draws
        are those of a fit without constraints)."""
        cdef intp_t s, j, k, m, d = self.n_features, i
        cdef int32_t tmp
        cdef uint64_t_t state
        cdef int32_t* tree_parent = self.node_parent
        if self.interactions:
            for i in range(self.n_nodes):
                tree_parent[i] = -1
            for i in range(self.n_nodes):
                if self.nodes[i].feature >= 0 and self.nodes[i].left >= 0:
                    tree_parent[self.nodes[i].left] = <int32_t>i
                    tree_parent[self.nodes[i].right] = <int32_t>i
        for s in range(n_slots):
            if self.interactions:
                self._allowed_by_interactions(s)
            else:
                for j in range(d):
                    self.allowed[s * d + j] = 1
            if self.max_features >= d:
                continue
            m = 0
            for j in range(d):
                if self.allowed[s * d + j]:
                    self.perm[m] = <int32_t>j
                    m += 1
                self.allowed[s * d + j] = 0
            state = seed ^ (<uint64_t_t>(self.level_nodes[s].node + 1) * 0x632BE59BD9B4E019ULL)
            for j in range(min(self.max_features, m)):
                k = j + <intp_t>(_splitmix64(&state) % <uint64_t_t>(m - j))
                tmp = self.perm[j]; self.perm[j] = self.perm[k]; self.perm[k] = tmp
                self.allowed[s * d + self.perm[j]] = 1

    cdef void _allowed_by_interactions(self, intp_t s) noexcept nogil:
        """Row ``s`` of ``allowed``: the features of node ``s`` of the level that
        its interaction constraints allow (scikit-learn's rule): every feature at
        the root; below, the union of the groups holding every feature split on
        along the node's path (``node_parent`` must be up to date)."""
        cdef intp_t d = self.n_features, j, q, n_path = 0
        cdef int32_t node = self.level_nodes[s].node, p, f, g
        cdef uint8_t* row = self.allowed + s * d
        p = self.node_parent[node] if node >= 0 else -1
        while p >= 0:
            f = self.nodes[p].feature
            if not self.on_path[f]:
                self.on_path[f] = 1
                self.path_features[n_path] = f
                n_path += 1
            p = self.node_parent[p]
        if n_path == 0:
            for j in range(d):
                row[j] = 1
            return
        for j in range(d):
            row[j] = 0
        for j in range(n_path):
            f = self.path_features[j]
            for q in range(self.feature_start[f], self.feature_start[f + 1]):
                self.group_count[self.feature_groups[q]] += 1
        f = self.path_features[0]
        for q in range(self.feature_start[f], self.feature_start[f + 1]):
            g = self.feature_groups[q]
            if self.group_count[g] == n_path:
                for j in range(self.group_start[g], self.group_start[g + 1]):
                    row[self.group_members[j]] = 1
        for j in range(n_path):
            f = self.path_features[j]
            self.on_path[f] = 0
            for q in range(self.feature_start[f], self.feature_start[f + 1]):
                self.group_count[self.feature_groups[q]] = 0

    cdef intp_t _apply_splits(self, intp_t n_slots, int depth) noexcept nogil:
        """Turn the best split of each node into two children (the nodes of the next
        level, written after the current level's); return how many split."""
        cdef intp_t s, k, n_split = 0
        cdef split_t* b
        cdef node_t* nd
        cdef side_t right
        cdef level_node_t* next_level = self.level_nodes + self.level_capacity
        cdef level_node_t* child
        cdef intp_t left_id
        for s in range(n_slots):
            b = &self.best[s]
            if not self.level_nodes[s].splittable or b.feature < 0:
                continue
            nd = &self.nodes[self.level_nodes[s].node]
            left_id = self.n_nodes
            self._split_node(nd, self.level_nodes[s].node, &self.level_nodes[s].total, b,
                             &right)
            nd.left = <int32_t>left_id
            nd.right = <int32_t>(left_id + 1)
            self._init_node(left_id, &b.left, depth + 1)
            self._init_node(left_id + 1, &right, depth + 1)
            next_level[2 * n_split].total = b.left
            next_level[2 * n_split + 1].total = right
            for k in range(2):
                child = &next_level[2 * n_split + k]
                child.node = <int32_t>(left_id + k)
                child.parent = <int32_t>s
                child.sibling = <int32_t>(2 * n_split + 1 - k)
            self.n_nodes += 2
            n_split += 1
        return n_split

    cdef void _split_node(self, node_t* nd, intp_t index, const side_t* total,
                          const split_t* b, side_t* right) noexcept nogil:
        """Write split ``b`` of node ``nd`` (tree node ``index``, of totals
        ``total``) into the tree, its children not numbered yet; ``right``: the
        right child's totals."""
        nd.feature = b.feature
        nd.missing_go_left = missing_left(b.missing_go_left, b.left.n, total.n)
        nd.improvement = self._improvement(total, b)
        self.node_bin[index] = b.bin
        if b.categorical:
            # Its set in the side table, at its index (kept through the pruning,
            # which moves nodes but not the table): its threshold says where.
            nd.threshold = <float64_t>index
            nd.threshold32 = <float32_t>index
            memcpy(self.cat_bits + CAT_WORDS * index, b.cat_bits,
                   CAT_WORDS * sizeof(uint32_t))
            if index >= self.n_cat_rows:
                self.n_cat_rows = index + 1
        else:
            nd.threshold = b.threshold
            nd.threshold32 = float32_at_most(b.threshold)
        right.n = total.n - b.left.n
        right.w = total.w - b.left.w
        right.s = total.s - b.left.s

    cdef float64_t _improvement(self, const side_t* total,
                                       const split_t* b) noexcept nogil:
        """The improvement of split ``b`` of a node ``total`` (Friedman's, whatever
        proxy ``criterion`` ranked the splits by): what a split node records and
        best-first growth orders its frontier by."""
        if self.criterion == CRITERION_FRIEDMAN_MSE:
            return improvement_of(b.proxy, total.w)
        return improvement_of(friedman_proxy(total, &b.left), total.w)

    cdef void _record_impurity(self, intp_t s) noexcept nogil:
        """The impurity of node ``s`` of the level, from its sums (for ccp_alpha)."""
        cdef const node_sums_t* sums = &self.level_sums[s]
        self.node_impurity[self.level_nodes[s].node] = impurity_of(sums.w, sums.wr, sums.wr2)

    cdef int _check_decrease(self, intp_t n_slots, const row_stat_t* row_stats,
                             const float64_t* residual) except -1:
        """min_impurity_decrease: drop the best split of every node whose weighted
        impurity decrease is too small (``decrease_allowed``). The sum of w r^2 of
        the rows the split sends left is added in row order (the node's rows in
        partition order), each node on one thread; with a ``reducer``, then summed
        over every process, so that every process decides on the same numbers."""
        cdef intp_t s
        cdef float64_t[:, ::1] v
        with nogil:
            self._left_sums(n_slots, row_stats, residual)
        if self.reducer is not None:
            values = np.empty((n_slots, 1), dtype=np.float64)
            v = values
            for s in range(n_slots):
                v[s, 0] = self.left_wr2[s]
            self.reducer(values, 1)
            for s in range(n_slots):
                self.left_wr2[s] = v[s, 0]
        with nogil:
            self._drop_small_decreases(n_slots)
        return 0

    cdef void _left_sums(self, intp_t n_slots, const row_stat_t* row_stats,
                         const float64_t* residual) noexcept nogil:
        """``left_wr2``: per node of the level, the sum of w r^2 of its rows that
        its best split sends left (0 where it does not split), from this process's
        rows."""
        cdef intp_t s, n_rows = 0
        cdef int n_threads
        cdef const level_node_t* nd
        for s in range(n_slots):
            nd = &self.level_nodes[s]
            if nd.splittable and self.best[s].feature >= 0:
                n_rows += nd.stop - nd.start
        n_threads = self.n_threads if n_rows >= MIN_PARALLEL_ROWS else 1
        GBC_TRACE_REGION_BEGIN(GBC_TR_LEFT_WR2, n_rows)
        for s in prange(n_slots, schedule="dynamic", num_threads=n_threads):
            GBC_TRACE_TASK_BEGIN(GBC_TR_LEFT_WR2, s)
            self.left_wr2[s] = self.rows.left_wr2(&self.level_nodes[s], &self.best[s],
                                                  row_stats, residual)
            GBC_TRACE_TASK_END(GBC_TR_LEFT_WR2, s)
        GBC_TRACE_REGION_END(GBC_TR_LEFT_WR2, n_rows)

    cdef void _drop_small_decreases(self, intp_t n_slots) noexcept nogil:
        """Drop the best split of every node whose weighted impurity decrease, from
        the node's sums and ``left_wr2``, is too small (``decrease_allowed``)."""
        cdef intp_t s
        cdef split_t* b
        cdef const node_sums_t* sums
        cdef const level_node_t* nd
        for s in range(n_slots):
            nd = &self.level_nodes[s]
            b = &self.best[s]
            if not nd.splittable or b.feature < 0:
                continue
            sums = &self.level_sums[s]
            if not decrease_allowed(self.min_impurity_decrease, self.tree_weight,
                                    nd.total.w, impurity_of(sums.w, sums.wr, sums.wr2),
                                    nd.total.s, sums.wr2, &b.left, self.left_wr2[s]):
                b.feature = -1

