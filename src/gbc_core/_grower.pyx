"""Growth of one regression tree, level by level or best first, with any
``SplitFinder``.

The grower owns the tree being grown and what lives as long as the fit: the node
buffer, the nodes of the level being split (each with its parent, its sibling and
its in-bag rows as the range ``[start, stop)`` of the partition array, in increasing
row order, as scikit-learn's histogram-gradient-boosting splitter keeps them), the
feature draws of ``max_features`` and, once a tree is grown, the leaf of every row
(``node_of_row``). Per level it tells its split finder which statistics to compute
(every splittable node's, or with a finder that subtracts, the smaller child of each
pair from its rows and the larger from its parent), lets it collect, derive, reduce
and choose (``_split_finder.pxd``), applies the splits and partitions the rows of
the split nodes: on the finder's bins when it has bins, else on raw X. It never
looks at how the finder ranks splits.

A node is split if it holds at least ``min_samples_split`` samples, ``2 x
min_samples_leaf`` samples and ``2 x min_weight_leaf`` weight, and if its residuals
are not all equal: the residuals of its weighted rows are not one value, and its
impurity (the weighted variance of the residuals, from sums over its own rows) is
above machine epsilon, the rule of scikit-learn's trees. The first test is exact: a
node whose rows all have the same residual cannot be improved, whatever rounding
noise its sums carry (sums of many equal residuals do not give a variance of exactly
zero, and splits of such a node "gain" only that noise).

With ``max_leaf_nodes`` the tree grows best first, as scikit-learn's
``BestFirstTreeBuilder`` grows it: each node's best split is found when the node is
created (a "level" of the root alone, then of the two children of each split, the
smaller collected and the larger derived from its parent's statistics, which the
finder keeps meanwhile), the nodes wait in a frontier ordered by the improvement of
their split (the weighted squared-error decrease; nodes that cannot split wait with
0), and the node with the largest improvement splits next until the tree has
``max_leaf_nodes`` leaves; ``max_depth`` still bounds the depth. The frontier is a
binary max-heap operated exactly as the C++ standard library's ``push_heap`` and
``pop_heap`` (libstdc++) operate scikit-learn's, so equal improvements are taken in
the same order. Nodes are numbered as they are created, as there. With a finder
whose scan costs the same for any number of nodes (the exact finder), the grower
splits the best waiting nodes ahead, several per scan (``_split_ahead``): the same
tree, bit for bit.

Two rules of scikit-learn's trees act on a split once it is chosen, or on the grown
tree, in both growths. ``min_impurity_decrease``: a node's best split is dropped (the
node becomes a leaf; best first, a leaf waiting in the frontier with improvement 0,
as scikit-learn's ``_add_split_node`` makes it when the node is created) when its
weighted impurity decrease (``_choice.decrease_allowed``, from the sums of w r^2 of
the node's rows going left, summed in row order) plus machine epsilon is below the
bound. ``ccp_alpha``: once the tree is grown, minimal cost-complexity pruning
(scikit-learn's ``_cost_complexity_prune``, weakest link first, on each node's
weight and impurity) turns the root of every pruned branch into a leaf; the kept
nodes keep their order (level order, or best first the order of creation),
renumbered, and the rows of a pruned branch fall in its new leaf (``node_of_row``),
all before the loss sets the leaf values, as scikit-learn prunes before its leaves
are updated.
"""
cimport cython
from cpython.exc cimport PyErr_CheckSignals
from cython.parallel cimport parallel, prange
from libc.math cimport INFINITY, nextafterf
from libc.float cimport DBL_MAX
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

import numpy as np

from ._common cimport (
    float32_t, float64_t, int32_t, int64_t, uint8_t, intp_t, node_t, row_stat_t,
    IMPURITY_EPSILON, grow_buffer, omp_barrier,
)
from ._common import NODE_DTYPE, ROW_STAT_DTYPE
from ._split_finder cimport (
    SplitFinder, side_t, grid_t, level_node_t, level_t, split_t, plan_statistics,
    STATS_NONE, STATS_COLLECT, CRITERION_FRIEDMAN_MSE,
)
from ._split_finder import CRITERIA
from ._choice cimport missing_left, friedman_proxy, decrease_allowed, grid_unit, on_grid

cdef extern from "_criterion.h" nogil:
    float64_t improvement_of "gbc_improvement"(float64_t proxy, float64_t total_w)
    float64_t impurity_of "gbc_impurity"(float64_t sum_w, float64_t sum_wr,
                                          float64_t sum_wr2)

cdef enum:
    # The sums of a child's rows (for its impurity test) are added per block of
    # CHUNK consecutive row indices, then the blocks in order: the same numbers as
    # a pass over the rows in chunks of CHUNK rows would give.
    CHUNK_SHIFT = 13
    # Rows per task of the partition; the partition is stable, so the result does
    # not depend on how the rows are cut.
    BLOCK = 16384
    # Below this many rows a level is partitioned on one thread.
    MIN_PARALLEL_ROWS = 200000
    # Levels of at most this many children (a tree's first levels, every split of
    # best-first growth) are finished block by block (``_partition_narrow``): one
    # task per child would leave threads idle.
    NARROW_CHILDREN = 8
    # Chunks of row indices summed per task there.
    CHUNKS_PER_TASK = 2
    # frontier_t.pending of a node that may be split ahead (while choosing them).
    CANDIDATE = -2


ctypedef unsigned long long uint64_t_t

cdef enum:
    # Flags of a node while a tree is pruned (TreeGrower._prune).
    _LEAF = 1              # a leaf of the current subtree
    _CANDIDATE = 2         # an inner node of the current subtree (may be pruned)
    _IN_SUBTREE = 4        # in the current subtree


ctypedef struct frontier_t:
    # A node waiting in the frontier of best-first growth.
    level_node_t node        # its rows, totals and index in the tree
    split_t split            # its best split (when it may split)
    float64_t improvement    # the frontier's priority (0: it cannot split)
    intp_t stored            # index of the statistics the finder keeps (-1: none)
    intp_t pending           # index of its children, found ahead (-1: none)
    float64_t impurity       # its impurity (ccp_alpha), until it has a number
    int depth
    bint is_leaf


cdef inline void _heap_sift_up(frontier_t* heap, intp_t hole, intp_t top,
                               frontier_t* value) noexcept nogil:
    """libstdc++'s ``__push_heap``: move ``value`` up from ``hole``."""
    cdef intp_t parent = (hole - 1) // 2
    while hole > top and heap[parent].improvement < value.improvement:
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = value[0]


cdef inline void _heap_push(frontier_t* heap, intp_t* size,
                            const frontier_t* rec) noexcept nogil:
    """``frontier.push_back(rec); std::push_heap(...)`` (max-heap on improvement)."""
    cdef frontier_t value = rec[0]
    heap[size[0]] = value
    size[0] += 1
    _heap_sift_up(heap, size[0] - 1, 0, &value)


cdef inline void _heap_pop(frontier_t* heap, intp_t* size, frontier_t* out) noexcept nogil:
    """``std::pop_heap(...); out = frontier.back(); frontier.pop_back()`` as in
    libstdc++ (``__pop_heap`` then ``__adjust_heap``)."""
    cdef intp_t n = size[0], length, hole, child
    cdef frontier_t value
    if n > 1:
        value = heap[n - 1]
        heap[n - 1] = heap[0]
        length = n - 1
        hole = 0
        child = 0
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if heap[child].improvement < heap[child - 1].improvement:
                child -= 1
            heap[hole] = heap[child]
            hole = child
        if (length & 1) == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            heap[hole] = heap[child - 1]
            hole = child - 1
        _heap_sift_up(heap, hole, 0, &value)
    out[0] = heap[n - 1]
    size[0] = n - 1


ctypedef struct node_sums_t:
    # Sums over a node's own rows, for its impurity (unlike the statistics the
    # finder reports for a child, the right child's by subtraction from its
    # parent's, they carry no rounding error inherited from the ancestors), and the
    # range of the residuals of its rows of positive weight.
    float64_t w
    float64_t wr
    float64_t wr2
    float64_t r_min
    float64_t r_max


ctypedef struct block_t:
    # A task of the partition: rows partition[start:stop] of the split node ``slot``.
    intp_t start
    intp_t stop
    intp_t n_left            # its first n_left rows go left
    intp_t slot
    intp_t pair              # the index of its split node's pair of children
    intp_t left_pos          # where its left and right rows go in the partition
    intp_t right_pos


cdef inline void _sums_zero(node_sums_t* a) noexcept nogil:
    a.w = 0.0
    a.wr = 0.0
    a.wr2 = 0.0
    a.r_min = INFINITY
    a.r_max = -INFINITY


cdef inline void _sums_range(node_sums_t* a, float64_t w, float64_t r) noexcept nogil:
    """Widen the residual range of ``a`` by a row of weight ``w`` and residual ``r``
    (rows of zero weight do not count)."""
    if w > 0.0:
        if r < a.r_min:
            a.r_min = r
        if r > a.r_max:
            a.r_max = r


cdef inline void _sums_add_row(node_sums_t* a, const row_stat_t* row_stats,
                               const float64_t* residual, intp_t row) noexcept nogil:
    """Add one row to ``a``: w, w * r, w * r^2 and the residual range, w and w * r
    from ``row_stats`` (NULL: unit weights, w * r is r, 1 * r exactly)."""
    cdef float64_t w, r = residual[row]
    if row_stats != NULL:
        w = row_stats[row].w
        a.w += w
        a.wr += row_stats[row].wr
    else:
        w = 1.0
        a.w += 1.0
        a.wr += r
    a.wr2 += w * r * r
    _sums_range(a, w, r)


cdef inline void _sums_add(node_sums_t* a, const node_sums_t* b) noexcept nogil:
    """Add the sums of a chunk ``b`` to ``a`` (in chunk order: deterministic)."""
    a.w = a.w + b.w
    a.wr = a.wr + b.wr
    a.wr2 = a.wr2 + b.wr2
    if b.r_min < a.r_min:
        a.r_min = b.r_min
    if b.r_max > a.r_max:
        a.r_max = b.r_max


cdef inline bint _bin_goes_left(uint8_t b, int bin, int missing_bin, bint miss) noexcept nogil:
    """The side of a row whose bin is ``b`` at a split on bins: left up to the split's
    bin ``bin``; the missing-value bin goes with ``miss``. The rule of every routing
    on bins (``_split_block``, ``_label_block``, ``_left_wr2``)."""
    return miss if b == missing_bin else b <= bin


cdef inline bint _value_goes_left(float32_t x, float32_t t32, bint miss) noexcept nogil:
    """The side of a row whose value is ``x`` at a split on raw values: left up to the
    float32 threshold ``t32``; NaN goes with ``miss``. The rule of every routing on
    raw values (``_split_block``, ``_label_block``, ``_left_wr2``, and ``_goes_left_raw``
    for the stored trees)."""
    return miss if x != x else x <= t32


cdef inline float32_t _float32_at_most(float64_t t) noexcept nogil:
    """Largest float32 <= t, so that float32 ``x <= t32`` iff ``x <= t``."""
    cdef float32_t t32 = <float32_t>t
    if <float64_t>t32 > t:
        t32 = nextafterf(t32, -INFINITY)
    return t32


cdef inline intp_t _first_at_least(const int32_t* rows, intp_t lo, intp_t hi,
                                   intp_t value) noexcept nogil:
    """The first position in ``rows[lo:hi]`` (increasing) holding at least ``value``
    (``hi`` if none)."""
    cdef intp_t mid
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if rows[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline uint64_t_t _splitmix64(uint64_t_t* state) noexcept nogil:
    cdef uint64_t_t z
    state[0] += 0x9E3779B97F4A7C15ULL
    z = state[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


@cython.final
cdef class TreeGrower:
    """Grow regression trees level by level or best first, reusing its buffers
    across trees.

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
        in the same order.
    """
    cdef:
        const float32_t[::1, :] X
        const uint8_t[::1, :] bins     # the finder's bins, if it partitions on bins
        bint on_bins
        bint has_X                     # False: bins only (no out-of-bag rows)
        bint sparse                    # raw values from the CSC columns below
        const float32_t[::1] col_data
        const int32_t[::1] col_rows
        const int64_t[::1] col_start
        int missing_bin
        SplitFinder finder
        intp_t n_samples
        intp_t n_features
        readonly int n_threads
        int max_depth
        int64_t min_samples_split
        int64_t min_samples_leaf
        float64_t min_weight_leaf
        intp_t max_features
        uint8_t criterion
        float64_t min_impurity_decrease
        float64_t ccp_alpha
        float64_t tree_weight          # the in-bag weight of the tree being grown
        readonly int32_t[::1] node_of_row
        int32_t* partition             # in-bag rows, node by node
        int32_t* scratch               # partition buffer: per block, its left rows
                                       # from the block's start, its right rows
                                       # backwards from the block's end
        node_t* nodes
        uint8_t* node_bin              # bin threshold of each split (on_bins)
        # ccp_alpha > 0 only (else NULL): each node's impurity, and the pruning's
        # per-node buffers (r_node and r_branch; parent, leaf count and new index;
        # flags).
        float64_t* node_impurity
        float64_t* prune_r
        int32_t* prune_i
        uint8_t* prune_flags
        float64_t* left_wr2            # min_impurity_decrease: per node of the level
        intp_t node_capacity
        readonly intp_t n_nodes
        level_node_t* level_nodes      # the level being split, then the next one
        node_sums_t* level_sums        # their sums over their own rows
        split_t* best                  # the finder's answer for each node
        intp_t level_capacity
        uint8_t* allowed
        int32_t* perm
        block_t* blocks
        intp_t block_capacity
        intp_t* block_first            # first block of each split node (and the end)
        node_sums_t* chunk_sums        # _partition_narrow: per child and chunk of row
        uint8_t* chunk_present         # indices, the sums of its rows there (NULL:
        intp_t n_chunks                # on one thread; n_chunks per child)
        public object reducer
        grid_t grid                    # the grid of the tree being grown
        object grid_residual           # the tree's rows on it (unit weights): w * r
        object grid_stats              # (weighted rows) w * r and w
        intp_t max_leaf_nodes          # 0: level-wise growth
        frontier_t* frontier           # best-first growth: the heap of waiting nodes
        intp_t* free_stored            # indices of the finder's stored statistics
        intp_t n_free_stored           # that are free
        intp_t n_stored                # how many the finder keeps
        public bint look_ahead         # split several frontier nodes per scan
        frontier_t* pending            # children found ahead, two per frontier node
        intp_t* free_pending           # free pairs of ``pending``
        intp_t n_free_pending
        intp_t* chosen                 # frontier positions split ahead

    def __cinit__(self):
        self.nodes = NULL
        self.node_bin = NULL
        self.node_impurity = NULL
        self.prune_r = NULL
        self.prune_i = NULL
        self.prune_flags = NULL
        self.left_wr2 = NULL
        self.level_nodes = NULL
        self.level_sums = NULL
        self.best = NULL
        self.allowed = NULL
        self.perm = NULL
        self.partition = NULL
        self.scratch = NULL
        self.blocks = NULL
        self.block_first = NULL
        self.block_capacity = 0
        self.chunk_sums = NULL
        self.chunk_present = NULL
        self.n_chunks = 0
        self.reducer = None
        self.node_capacity = 0
        self.level_capacity = 0
        self.frontier = NULL
        self.free_stored = NULL
        self.pending = NULL
        self.free_pending = NULL
        self.chosen = NULL
        self.max_leaf_nodes = 0

    def __init__(self, const float32_t[::1, :] X, SplitFinder finder, int max_depth,
                 int64_t min_samples_split, int64_t min_samples_leaf,
                 float64_t min_weight_leaf, intp_t max_features, int n_threads,
                 columns=None, criterion="friedman_mse",
                 float64_t min_impurity_decrease=0.0, float64_t ccp_alpha=0.0,
                 intp_t max_leaf_nodes=0):
        if criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {sorted(CRITERIA)}, got {criterion!r}")
        if not min_impurity_decrease >= 0.0 or not ccp_alpha >= 0.0:
            raise ValueError("min_impurity_decrease and ccp_alpha must be >= 0, got "
                             f"{min_impurity_decrease!r} and {ccp_alpha!r}")
        self.criterion = CRITERIA[criterion]
        self.min_impurity_decrease = min_impurity_decrease
        self.ccp_alpha = ccp_alpha
        if max_leaf_nodes != 0 and max_leaf_nodes < 2:
            raise ValueError(f"max_leaf_nodes must be 0 (level-wise) or >= 2, "
                             f"got {max_leaf_nodes}")
        bins = finder.partition_bins()
        self.sparse = columns is not None
        if self.sparse:
            if X is not None or bins is None:
                raise ValueError("sparse columns go with a split finder with bins, "
                                 "without X")
            self.col_data, self.col_rows, self.col_start = columns
            if (self.col_start.shape[0] != finder.n_features + 1
                    or self.col_data.shape[0] != self.col_rows.shape[0]
                    or self.col_start[finder.n_features] != self.col_data.shape[0]):
                raise ValueError("the sparse columns do not match the split finder")
        self.has_X = X is not None or self.sparse
        if not self.has_X and bins is None:
            raise ValueError("X is needed with a split finder without bins")
        if X is not None and (finder.n_samples != X.shape[0]
                              or finder.n_features != X.shape[1]):
            raise ValueError("the split finder was built for data of another shape")
        if X is not None:
            self.X = X
        self.finder = finder
        self.on_bins = bins is not None
        if self.on_bins:
            self.bins = bins
            self.missing_bin = finder.missing_bin()
        self.n_samples = finder.n_samples
        self.n_features = finder.n_features
        self.max_depth = max_depth
        self.min_samples_split = max(min_samples_split, 2)
        self.min_samples_leaf = max(min_samples_leaf, 1)
        self.min_weight_leaf = min_weight_leaf
        self.max_features = max(1, min(max_features, self.n_features))
        self.n_threads = max(1, n_threads)
        self.node_of_row = np.zeros(self.n_samples, dtype=np.int32)
        self.perm = <int32_t*>grow_buffer(NULL, self.n_features, sizeof(int32_t),
                                          "feature draws")
        self.partition = <int32_t*>grow_buffer(NULL, self.n_samples, sizeof(int32_t),
                                               "row partition")
        self.scratch = <int32_t*>grow_buffer(NULL, self.n_samples, sizeof(int32_t),
                                             "row partition")
        if self.n_threads > 1 and self.n_samples >= MIN_PARALLEL_ROWS:
            self.n_chunks = (self.n_samples >> CHUNK_SHIFT) + 1
            self.chunk_sums = <node_sums_t*>grow_buffer(
                NULL, NARROW_CHILDREN * self.n_chunks, sizeof(node_sums_t),
                "partition tasks")
            self.chunk_present = <uint8_t*>grow_buffer(
                NULL, NARROW_CHILDREN * self.n_chunks, sizeof(uint8_t), "partition tasks")
        # A first guess; the buffers grow (per level, never per node) when needed.
        cdef intp_t width = 1 << min(max_depth if max_depth > 0 else 10, 10)
        self._reserve_level(min(width, max(self.n_samples, 1)))
        self._reserve_nodes(min(2 * width + 1, 2 * max(self.n_samples, 1) + 1))
        self.max_leaf_nodes = max_leaf_nodes
        if max_leaf_nodes > 0:
            # Best first: every buffer sized once for max_leaf_nodes leaves (a tree
            # has at most 2 max_leaf_nodes - 1 nodes, the frontier at most
            # max_leaf_nodes of them, and each of those may keep statistics).
            self._reserve_nodes(2 * max_leaf_nodes - 1)
            self._reserve_level(2 * max_leaf_nodes)
            self._reserve_blocks(self.n_samples // BLOCK + max_leaf_nodes + 1)
            self.frontier = <frontier_t*>grow_buffer(NULL, max_leaf_nodes + 1,
                                                     sizeof(frontier_t), "frontier")
            self.n_stored = finder.reserve_stored(max_leaf_nodes)
            self.free_stored = <intp_t*>grow_buffer(NULL, self.n_stored, sizeof(intp_t),
                                                    "frontier")
            self.pending = <frontier_t*>grow_buffer(NULL, 2 * max_leaf_nodes,
                                                    sizeof(frontier_t), "frontier")
            self.free_pending = <intp_t*>grow_buffer(NULL, max_leaf_nodes, sizeof(intp_t),
                                                     "frontier")
            self.chosen = <intp_t*>grow_buffer(NULL, max_leaf_nodes, sizeof(intp_t),
                                               "frontier")
            self.look_ahead = True

    def __dealloc__(self):
        free(self.nodes)
        free(self.node_bin)
        free(self.node_impurity)
        free(self.prune_r)
        free(self.prune_i)
        free(self.prune_flags)
        free(self.left_wr2)
        free(self.level_nodes)
        free(self.level_sums)
        free(self.best)
        free(self.allowed)
        free(self.perm)
        free(self.partition)
        free(self.scratch)
        free(self.blocks)
        free(self.block_first)
        free(self.chunk_sums)
        free(self.chunk_present)
        free(self.frontier)
        free(self.free_stored)
        free(self.pending)
        free(self.free_pending)
        free(self.chosen)

    cdef int _reserve_nodes(self, intp_t capacity) except -1:
        if capacity > self.node_capacity:
            self.nodes = <node_t*>grow_buffer(self.nodes, capacity, sizeof(node_t), "tree nodes")
            self.node_bin = <uint8_t*>grow_buffer(self.node_bin, capacity, sizeof(uint8_t),
                                                  "tree nodes")
            if self.ccp_alpha > 0.0:
                self.node_impurity = <float64_t*>grow_buffer(
                    self.node_impurity, capacity, sizeof(float64_t), "tree nodes")
                self.prune_r = <float64_t*>grow_buffer(
                    self.prune_r, 2 * capacity, sizeof(float64_t), "tree nodes")
                self.prune_i = <int32_t*>grow_buffer(
                    self.prune_i, 3 * capacity, sizeof(int32_t), "tree nodes")
                self.prune_flags = <uint8_t*>grow_buffer(
                    self.prune_flags, capacity, sizeof(uint8_t), "tree nodes")
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
            if self.max_features < self.n_features:
                self.allowed = <uint8_t*>grow_buffer(self.allowed, capacity * self.n_features,
                                               sizeof(uint8_t), "feature draws")
            self.block_first = <intp_t*>grow_buffer(self.block_first, capacity + 1,
                                                    sizeof(intp_t), "partition tasks")
            self.level_capacity = capacity
        return 0

    cdef int _reserve_blocks(self, intp_t count) except -1:
        if count > self.block_capacity:
            self.blocks = <block_t*>grow_buffer(self.blocks, count, sizeof(block_t),
                                                "partition tasks")
            self.block_capacity = count
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
        cdef intp_t i, s, n = self.n_samples, n_inbag = 0
        cdef side_t root
        cdef node_sums_t root_sums
        cdef int depth = 0
        cdef intp_t n_slots, n_split
        cdef bint last_level, leaves
        cdef bint sums_reduced = True   # the level's sums are every process's
        cdef level_t level
        if (row_stats is not None and row_stats.shape[0] != n) or residual.shape[0] != n or (
                sample_mask is not None and sample_mask.shape[0] != n):
            raise ValueError(f"row_stats, residual and sample_mask must have {n} rows")
        if sample_mask is not None and not self.has_X:
            raise ValueError("a sample mask needs X (its out-of-bag rows are routed on "
                             "their raw values)")
        _sums_zero(&root_sums)
        cdef int32_t* partition = self.partition
        # From here on the tree sees its rows on the grid (exact sums, exact ties).
        row_stats, residual = self._put_on_grid(row_stats, residual)
        cdef const row_stat_t* rs = &row_stats[0] if row_stats is not None and n > 0 else NULL
        cdef const float64_t* res = &residual[0] if n > 0 else NULL
        with nogil:
            if sample_mask is None:
                n_inbag = n
                self._sums_of_every_row(&root_sums, rs, res)
            else:
                for i in range(n):
                    if sample_mask[i]:
                        partition[n_inbag] = <int32_t>i
                        n_inbag += 1
                        _sums_add_row(&root_sums, rs, res, i)
        root.n = n_inbag
        root.w = root_sums.w
        root.s = root_sums.wr
        if self.reducer is not None:
            root, root_sums = self._reduce_root(root, root_sums)
        root_sums.w = root.w
        root_sums.wr = root.s
        self.tree_weight = root.w
        self.finder.start_tree(row_stats, residual, sample_mask)
        self._init_node(0, &root, 0)
        self.n_nodes = 1
        self.level_nodes[0].total = root
        self.level_nodes[0].node = 0
        self.level_nodes[0].start = 0
        self.level_nodes[0].stop = n_inbag
        self.level_nodes[0].parent = -1
        self.level_nodes[0].sibling = -1
        self.level_sums[0] = root_sums
        n_slots = 1
        level.partition = partition
        level.min_samples_leaf = self.min_samples_leaf
        level.min_weight_leaf = self.min_weight_leaf
        level.criterion = self.criterion
        level.grid = self.grid
        if self.max_leaf_nodes > 0:
            self._grow_best_first(rs, res, sample_mask, seed, &level)
            return self.n_nodes
        while n_slots > 0 and (self.max_depth < 0 or depth < self.max_depth):
            if depth > 0 and self.reducer is not None:
                self._reduce_sums(n_slots)
            sums_reduced = True
            if not self._mark_splittable(n_slots, self.finder.subtracts):
                break
            self._reserve_nodes(self.n_nodes + 2 * n_slots)
            self._reserve_level(n_slots)
            self._reserve_blocks(n // BLOCK + n_slots + 1)
            self.finder.start_level(n_slots)
            level.nodes = self.level_nodes
            level.n_nodes = n_slots
            level.allowed = NULL
            if self.max_features < self.n_features:
                self._draw_features(n_slots, seed)
                level.allowed = self.allowed
            # The children of the last level are leaves: their sums are not needed.
            last_level = self.max_depth >= 0 and depth + 1 >= self.max_depth
            with nogil:
                self.finder.collect(&level)
            self.finder.reduce(&level)
            with nogil:
                if self.finder.subtracts:
                    self.finder.derive(&level)
                self.finder.choose(&level, self.best)
            if self.min_impurity_decrease > 0.0:
                self._check_decrease(n_slots, rs, res)
            with nogil:
                n_split = self._apply_splits(n_slots, depth)
                # (The sums of the last level's leaves only for their impurity; without
                # them, the leaves' rows are only labelled: no finder step follows in
                # this tree.)
                leaves = last_level and self.node_impurity == NULL
                self._partition(n_slots, n_split, rs, res,
                                not last_level or self.node_impurity != NULL, leaves)
            # (Labelled leaves: no nodes left to make leaves below.)
            n_slots = 0 if leaves else 2 * n_split
            sums_reduced = False
            # Ctrl-C (or any pending signal) stops a fit between two levels.
            PyErr_CheckSignals()
            depth += 1
        if self.node_impurity != NULL:
            # The last level's leaves (their sums not reduced yet where max_depth
            # ended the growth).
            if not sums_reduced and n_slots > 0 and self.reducer is not None:
                self._reduce_sums(n_slots)
            for s in range(n_slots):
                self._record_impurity(s)
        with nogil:
            for s in range(n_slots):
                self._set_leaf(&self.level_nodes[s])
            if sample_mask is not None:
                self._route_out_of_bag(sample_mask)
            if self.ccp_alpha > 0.0 and self.n_nodes > 1:
                self._prune()
        return self.n_nodes

    cdef tuple _put_on_grid(self, const row_stat_t[::1] row_stats,
                            const float64_t[::1] residual):
        """The tree's rows on a grid (``grid_unit``, ``on_grid`` of _choice.pxd): w * r
        to whole numbers of ``grid.unit_s``, w of ``grid.unit_w`` (1 for unit
        weights), so that every sum of them is exact whatever its order. The units
        follow from the rows' largest magnitudes, over every process: the same grid
        everywhere. Returns (row statistics or None, residuals) on the grid, in this
        grower's buffers (the inputs are left as they are); the impurity sums w r^2
        are taken of these."""
        cdef intp_t i, n = self.n_samples
        cdef float64_t max_wr = 0.0, max_w = 0.0, n_rows = <float64_t>n
        cdef float64_t unit_s, unit_w = 1.0
        cdef float64_t[::1] out_residual
        cdef row_stat_t[::1] out_stats
        cdef bint weighted = row_stats is not None
        with nogil:
            if weighted:
                for i in range(n):
                    max_wr = max(max_wr, abs(row_stats[i].wr))
                    max_w = max(max_w, row_stats[i].w)
            else:
                for i in range(n):
                    max_wr = max(max_wr, abs(residual[i]))
        if self.reducer is not None:
            values = np.array([[n_rows, 0.0, max_wr, max_w]], dtype=np.float64)
            self.reducer(values, 1)
            n_rows, max_wr, max_w = values[0, 0], values[0, 2], values[0, 3]
        unit_s = grid_unit(n_rows, max_wr)
        if weighted:
            unit_w = grid_unit(n_rows, max_w)
        self.grid.unit_s = unit_s
        self.grid.unit_w = unit_w
        if not weighted:
            if self.grid_residual is None or len(self.grid_residual) != n:
                self.grid_residual = np.empty(n, dtype=np.float64)
            out_residual = self.grid_residual
            with nogil:
                for i in range(n):
                    out_residual[i] = on_grid(residual[i], unit_s)
            return None, self.grid_residual
        if self.grid_stats is None or len(self.grid_stats) != n:
            self.grid_stats = np.empty(n, dtype=ROW_STAT_DTYPE)
        out_stats = self.grid_stats
        with nogil:
            for i in range(n):
                out_stats[i].wr = on_grid(row_stats[i].wr, unit_s)
                out_stats[i].w = on_grid(row_stats[i].w, unit_w)
        return self.grid_stats, residual

    cdef void _sums_of_every_row(self, node_sums_t* sums, const row_stat_t* row_stats,
                                 const float64_t* residual) noexcept nogil:
        """The root of a tree given every row: the partition ``0 .. n - 1`` (in
        parallel), then ``sums`` of all rows in row order by ``_sums_add_row``, on a
        local copy: no store into the partition in the loop, so the sums stay in
        registers (independent chains of additions) instead of memory."""
        cdef intp_t i, n = self.n_samples
        cdef int n_threads = self.n_threads if n >= MIN_PARALLEL_ROWS else 1
        cdef int32_t* partition = self.partition
        cdef node_sums_t local
        for i in prange(n, schedule="static", num_threads=n_threads):
            partition[i] = <int32_t>i
        _sums_zero(&local)
        for i in range(n):
            _sums_add_row(&local, row_stats, residual, i)
        sums[0] = local

    cdef int _grow_best_first(self, const row_stat_t* row_stats,
                              const float64_t* residual,
                              const uint8_t[::1] sample_mask, unsigned long long seed,
                              level_t* level) except -1:
        """Grow the tree best first from its root (``level_nodes[0]``, its sums in
        ``level_sums[0]``), as scikit-learn's ``BestFirstTreeBuilder``: pop the node
        of largest improvement; a node that cannot split, or any node once the tree
        has ``max_leaf_nodes`` leaves, becomes a leaf; else split it and find its
        children's splits.

        A finder whose scan costs the same for any number of nodes (one that does
        not subtract: the exact finder's pass over every sorted feature) looks
        ahead: with the popped node it splits the best other frontier nodes (as many
        as splits remain) and finds all their children's splits in one scan. A
        node's children and their splits depend on its rows only, so the tree is
        the one of one node at a time: a node split ahead gets its children (and
        their numbers) only when it is popped, and becomes a leaf unchanged if the
        leaves run out first."""
        cdef intp_t i, size = 0
        cdef intp_t budget = self.max_leaf_nodes - 1   # splits left
        cdef frontier_t rec
        cdef bint children_split
        cdef bint ahead = (self.look_ahead and not self.finder.subtracts
                           and self.reducer is None
                           and self.max_features >= self.n_features)
        self.n_free_stored = self.n_stored
        for i in range(self.n_stored):
            self.free_stored[i] = self.n_stored - 1 - i
        self.n_free_pending = self.max_leaf_nodes
        for i in range(self.max_leaf_nodes):
            self.free_pending[i] = self.max_leaf_nodes - 1 - i
        self._evaluate(1, 0, -1, budget, seed, row_stats, residual, level, &size)
        while size > 0:
            _heap_pop(self.frontier, &size, &rec)
            if rec.is_leaf or budget <= 0:
                with nogil:
                    if rec.pending >= 0:
                        # Split ahead, never popped in time: a leaf as it was made.
                        self._init_node(rec.node.node, &rec.node.total, rec.depth)
                        self.free_pending[self.n_free_pending] = rec.pending
                        self.n_free_pending += 1
                    self._set_leaf(&rec.node)
                self._release(rec.stored)
                continue
            budget -= 1
            # Whether the children may split (else their sums are not needed).
            children_split = budget > 0 and (self.max_depth < 0
                                             or rec.depth + 1 < self.max_depth)
            if rec.pending >= 0:
                with nogil:
                    self._adopt(&rec, budget, &size)
                continue
            if ahead and children_split:
                self._split_ahead(&rec, budget, row_stats, residual, level, &size)
            else:
                self.level_nodes[0] = rec.node
                self.level_nodes[0].splittable = 1
                self.best[0] = rec.split
                with nogil:
                    self._apply_splits(1, rec.depth)
                    # (The sums of leaves-to-be only for their impurity.)
                    self._partition(1, 1, row_stats, residual,
                                    children_split or self.node_impurity != NULL)
                self._evaluate(2, rec.depth + 1, rec.stored, budget, seed, row_stats,
                               residual, level, &size)
            # Ctrl-C (or any pending signal) stops a fit between two splits.
            PyErr_CheckSignals()
        with nogil:
            if sample_mask is not None:
                self._route_out_of_bag(sample_mask)
            if self.ccp_alpha > 0.0 and self.n_nodes > 1:
                self._prune()
        return 0

    cdef int _split_ahead(self, frontier_t* popped, intp_t budget,
                          const row_stat_t* row_stats, const float64_t* residual,
                          level_t* level, intp_t* size) except -1:
        """Split ``popped`` and the best frontier nodes whose children may split
        (at most ``budget`` of them, none split ahead yet), find every child's split
        in one scan, keep the children of each as its ``pending`` pair and give
        ``popped`` its children."""
        cdef intp_t i, j, k, n = 1, best_i
        cdef frontier_t* r
        cdef frontier_t* ch
        cdef level_node_t* next_level = self.level_nodes + self.level_capacity
        cdef node_t* nd
        cdef split_t* b
        cdef side_t right
        # The candidates (marked pending = CANDIDATE), best first (frontier position
        # order among equal ones).
        for i in range(size[0]):
            r = &self.frontier[i]
            if not r.is_leaf and r.pending < 0 and (
                    self.max_depth < 0 or r.depth + 1 < self.max_depth):
                r.pending = CANDIDATE
        while n <= budget:
            best_i = -1
            for i in range(size[0]):
                if self.frontier[i].pending == CANDIDATE and (
                        best_i < 0 or self.frontier[i].improvement
                        > self.frontier[best_i].improvement):
                    best_i = i
            if best_i < 0:
                break
            self.frontier[best_i].pending = -1
            self.chosen[n] = best_i
            n += 1
        for i in range(size[0]):
            if self.frontier[i].pending == CANDIDATE:
                self.frontier[i].pending = -1
        self._reserve_blocks(self.n_samples // BLOCK + n + 1)
        with nogil:
            # Each chosen node's split, as _apply_splits makes it, its children
            # unnumbered (the rows move by the node's feature and threshold).
            for j in range(n):
                r = popped if j == 0 else &self.frontier[self.chosen[j]]
                b = &r.split
                self.level_nodes[j] = r.node
                self.level_nodes[j].splittable = 1
                self.best[j] = b[0]
                nd = &self.nodes[r.node.node]
                nd.feature = b.feature
                nd.threshold = b.threshold
                nd.threshold32 = _float32_at_most(b.threshold)
                nd.missing_go_left = missing_left(b.missing_go_left, b.left.n, r.node.total.n)
                self.node_bin[r.node.node] = b.bin
                right.n = r.node.total.n - b.left.n
                right.w = r.node.total.w - b.left.w
                right.s = r.node.total.s - b.left.s
                next_level[2 * j].total = b.left
                next_level[2 * j + 1].total = right
                for k in range(2):
                    next_level[2 * j + k].node = -1
                    next_level[2 * j + k].parent = <int32_t>j
                    next_level[2 * j + k].sibling = <int32_t>(2 * j + 1 - k)
            self._partition(n, n, row_stats, residual, True)
        self._mark_splittable(2 * n, False)
        self.finder.start_level(2 * n)
        level.nodes = self.level_nodes
        level.n_nodes = 2 * n
        level.allowed = NULL
        with nogil:
            self.finder.collect(level)
        self.finder.reduce(level)
        with nogil:
            self.finder.choose(level, self.best)
        if self.min_impurity_decrease > 0.0:
            self._check_decrease(2 * n, row_stats, residual)
        with nogil:
            for j in range(n):
                r = popped if j == 0 else &self.frontier[self.chosen[j]]
                self.n_free_pending -= 1
                r.pending = self.free_pending[self.n_free_pending]
                for k in range(2):
                    ch = &self.pending[2 * r.pending + k]
                    memset(ch, 0, sizeof(frontier_t))
                    ch.node = self.level_nodes[2 * j + k]
                    ch.depth = r.depth + 1
                    ch.stored = -1
                    ch.pending = -1
                    ch.is_leaf = not (ch.node.splittable and self.best[2 * j + k].feature >= 0)
                    if self.node_impurity != NULL:
                        ch.impurity = impurity_of(self.level_sums[2 * j + k].w,
                                                  self.level_sums[2 * j + k].wr,
                                                  self.level_sums[2 * j + k].wr2)
                    if not ch.is_leaf:
                        ch.split = self.best[2 * j + k]
                        ch.improvement = self._improvement(&ch.node.total, &ch.split)
                    self.finder.rows_moved(self.partition, ch.node.start, ch.node.stop, -1)
            self._adopt(popped, budget, size)
        return 0

    cdef void _adopt(self, frontier_t* rec, intp_t budget, intp_t* size) noexcept nogil:
        """Number the children of ``rec`` (split ahead) and put them in the
        frontier, as ``_apply_splits`` and ``_evaluate`` would have: leaves if no
        split remains."""
        cdef node_t* nd = &self.nodes[rec.node.node]
        cdef split_t* b = &rec.split
        cdef intp_t left_id = self.n_nodes, k
        cdef frontier_t* ch
        cdef side_t right
        nd.feature = b.feature
        nd.threshold = b.threshold
        nd.threshold32 = _float32_at_most(b.threshold)
        nd.missing_go_left = missing_left(b.missing_go_left, b.left.n, rec.node.total.n)
        nd.improvement = self._improvement(&rec.node.total, b)
        nd.left = <int32_t>left_id
        nd.right = <int32_t>(left_id + 1)
        self.node_bin[rec.node.node] = b.bin
        right.n = rec.node.total.n - b.left.n
        right.w = rec.node.total.w - b.left.w
        right.s = rec.node.total.s - b.left.s
        self._init_node(left_id, &b.left, rec.depth + 1)
        self._init_node(left_id + 1, &right, rec.depth + 1)
        self.n_nodes += 2
        for k in range(2):
            ch = &self.pending[2 * rec.pending + k]
            ch.node.node = <int32_t>(left_id + k)
            if self.node_impurity != NULL:
                self.node_impurity[left_id + k] = ch.impurity
            if budget <= 0:
                ch.is_leaf = True
            if ch.is_leaf:
                memset(&ch.split, 0, sizeof(split_t))
                ch.improvement = 0.0
            _heap_push(self.frontier, size, ch)
        self.free_pending[self.n_free_pending] = rec.pending
        self.n_free_pending += 1

    cdef inline void _release(self, intp_t stored) noexcept nogil:
        """The finder's stored statistics ``stored`` (-1: none) are free again."""
        if stored >= 0:
            self.free_stored[self.n_free_stored] = stored
            self.n_free_stored += 1

    cdef int _evaluate(self, intp_t n_slots, int depth, intp_t parent_stored,
                       intp_t budget, unsigned long long seed,
                       const row_stat_t* row_stats, const float64_t* residual,
                       level_t* level, intp_t* size) except -1:
        """Find the best split of the nodes ``level_nodes[0 .. n_slots)`` (the root,
        or the two children of the node just split, whose statistics the finder
        keeps as ``parent_stored``), and put them in the frontier."""
        cdef intp_t s
        cdef bint any_ = False
        cdef bint may_split = budget > 0 and (self.max_depth < 0 or depth < self.max_depth)
        cdef frontier_t rec
        cdef level_node_t* nd
        # (The children's sums, formed where they may split or for their impurity.)
        if depth > 0 and self.reducer is not None and (may_split
                                                       or self.node_impurity != NULL):
            self._reduce_sums(n_slots)
        if may_split:
            any_ = self._mark_splittable(
                n_slots, self.finder.subtracts and parent_stored >= 0)
        if any_:
            self.finder.start_level(n_slots)
            if parent_stored >= 0:
                self.finder.recall(parent_stored)
            level.nodes = self.level_nodes
            level.n_nodes = n_slots
            level.allowed = NULL
            if self.max_features < self.n_features:
                self._draw_features(n_slots, seed)
                level.allowed = self.allowed
            with nogil:
                self.finder.collect(level)
            self.finder.reduce(level)
            with nogil:
                if self.finder.subtracts:
                    self.finder.derive(level)
                self.finder.choose(level, self.best)
            if self.min_impurity_decrease > 0.0:
                # (scikit-learn's _add_split_node: the node waits as a leaf.)
                self._check_decrease(n_slots, row_stats, residual)
        self._release(parent_stored)
        with nogil:
            for s in range(n_slots):
                nd = &self.level_nodes[s]
                memset(&rec, 0, sizeof(frontier_t))
                rec.node = nd[0]
                rec.depth = depth
                rec.stored = -1
                rec.pending = -1
                rec.is_leaf = not (any_ and nd.splittable and self.best[s].feature >= 0)
                if self.node_impurity != NULL:
                    self._record_impurity(s)
                if not rec.is_leaf:
                    rec.split = self.best[s]
                    rec.improvement = self._improvement(&nd.total, &self.best[s])
                    # Its statistics, for its children, if they may split in turn.
                    if (self.n_free_stored > 0 and budget > 1
                            and (self.max_depth < 0 or depth + 1 < self.max_depth)):
                        self.n_free_stored -= 1
                        rec.stored = self.free_stored[self.n_free_stored]
                        self.finder.store(s, rec.stored)
                _heap_push(self.frontier, size, &rec)
                # The node's rows leave the level (a finder that follows rows by
                # slot, as the exact one does, then sees only the next level's).
                self.finder.rows_moved(self.partition, nd.start, nd.stop, -1)
        return 0

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
        if n_slots == 1:
            self.level_nodes[0].plan = STATS_COLLECT if self.level_nodes[0].splittable else STATS_NONE
        else:
            for s in range(0, n_slots, 2):
                plan_statistics(&self.level_nodes[s], &self.level_nodes[s + 1], subtract)
        return any_

    cdef void _draw_features(self, intp_t n_slots, unsigned long long seed):
        """Draw ``max_features`` features for every node of the level (seeded by node)."""
        cdef intp_t s, j, k, d = self.n_features
        cdef int32_t tmp
        cdef uint64_t_t state
        for s in range(n_slots):
            state = seed ^ (<uint64_t_t>(self.level_nodes[s].node + 1) * 0x632BE59BD9B4E019ULL)
            for j in range(d):
                self.perm[j] = <int32_t>j
                self.allowed[s * d + j] = 0
            for j in range(self.max_features):
                k = j + <intp_t>(_splitmix64(&state) % <uint64_t_t>(d - j))
                tmp = self.perm[j]; self.perm[j] = self.perm[k]; self.perm[k] = tmp
                self.allowed[s * d + self.perm[j]] = 1

    cdef intp_t _apply_splits(self, intp_t n_slots, int depth) noexcept nogil:
        """Turn the best split of each node into two children (the nodes of the next
        level, written after the current level's); return how many split."""
        cdef intp_t s, n_split = 0
        cdef split_t* b
        cdef node_t* nd
        cdef side_t right
        cdef level_node_t* next_level = self.level_nodes + self.level_capacity
        cdef intp_t left_id
        for s in range(n_slots):
            b = &self.best[s]
            if not self.level_nodes[s].splittable or b.feature < 0:
                continue
            nd = &self.nodes[self.level_nodes[s].node]
            left_id = self.n_nodes
            nd.feature = b.feature
            nd.threshold = b.threshold
            nd.threshold32 = _float32_at_most(b.threshold)
            nd.missing_go_left = missing_left(b.missing_go_left, b.left.n,
                                              self.level_nodes[s].total.n)
            nd.improvement = self._improvement(&self.level_nodes[s].total, b)
            nd.left = <int32_t>left_id
            nd.right = <int32_t>(left_id + 1)
            self.node_bin[self.level_nodes[s].node] = b.bin
            right.n = self.level_nodes[s].total.n - b.left.n
            right.w = self.level_nodes[s].total.w - b.left.w
            right.s = self.level_nodes[s].total.s - b.left.s
            self._init_node(left_id, &b.left, depth + 1)
            self._init_node(left_id + 1, &right, depth + 1)
            next_level[2 * n_split].total = b.left
            next_level[2 * n_split].node = <int32_t>left_id
            next_level[2 * n_split].parent = <int32_t>s
            next_level[2 * n_split].sibling = <int32_t>(2 * n_split + 1)
            next_level[2 * n_split + 1].total = right
            next_level[2 * n_split + 1].node = <int32_t>(left_id + 1)
            next_level[2 * n_split + 1].parent = <int32_t>s
            next_level[2 * n_split + 1].sibling = <int32_t>(2 * n_split)
            self.n_nodes += 2
            n_split += 1
        return n_split

    cdef inline float64_t _improvement(self, const side_t* total,
                                       const split_t* b) noexcept nogil:
        """The improvement of split ``b`` of a node ``total`` (Friedman's, whatever
        proxy ``criterion`` ranked the splits by): what a split node records and
        best-first growth orders its frontier by."""
        if self.criterion == CRITERION_FRIEDMAN_MSE:
            return improvement_of(b.proxy, total.w)
        return improvement_of(friedman_proxy(total, &b.left), total.w)

    cdef inline void _record_impurity(self, intp_t s) noexcept nogil:
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
        for s in prange(n_slots, schedule="dynamic", num_threads=n_threads):
            self.left_wr2[s] = self._left_wr2(s, row_stats, residual)

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

    cdef float64_t _left_wr2(self, intp_t s, const row_stat_t* row_stats,
                             const float64_t* residual) noexcept nogil:
        """Sum of w r^2 over the rows of node ``s`` that its best split sends left
        (routed as ``_split_block`` will route them), in row order."""
        cdef const level_node_t* nd = &self.level_nodes[s]
        cdef const split_t* b = &self.best[s]
        cdef intp_t i
        cdef int32_t row
        cdef float64_t acc = 0.0, r
        cdef uint8_t miss
        cdef float32_t t32
        cdef bint go_left
        if not nd.splittable or b.feature < 0 or nd.stop <= nd.start:
            return 0.0
        miss = missing_left(b.missing_go_left, b.left.n, nd.total.n)
        t32 = _float32_at_most(b.threshold)
        for i in range(nd.start, nd.stop):
            row = self.partition[i]
            if self.on_bins:
                go_left = _bin_goes_left(self.bins[row, b.feature], b.bin, self.missing_bin,
                                         miss)
            else:
                go_left = _value_goes_left(self.X[row, b.feature], t32, miss)
            if go_left:
                r = residual[row]
                # (No row statistics: every weight is 1.)
                acc += (row_stats[row].w * r * r) if row_stats != NULL else r * r
        return acc

    cdef void _prune(self) noexcept nogil:
        """Minimal cost-complexity pruning of the grown tree (scikit-learn's
        ``_cost_complexity_prune`` with its ``ccp_alpha`` controller): while the
        weakest link (the inner node with the smallest (R(t) - R(T_t)) / (|T_t| - 1),
        R(t) = weight x impurity / root weight, the first in node order on a tie) has
        an effective alpha of at most ``ccp_alpha``, its branch becomes a leaf. Then
        the kept nodes are renumbered in their order (level order, or best first the
        order of creation, as scikit-learn numbers a best-first tree) and every row
        of a pruned branch moved to its new leaf."""
        cdef intp_t n = self.n_nodes, i, j, top, best_i = 0, n_kept, row
        cdef node_t* nodes = self.nodes
        cdef float64_t* r_node = self.prune_r
        cdef float64_t* r_branch = self.prune_r + n
        cdef int32_t* parent = self.prune_i
        cdef int32_t* n_leaves = self.prune_i + n
        cdef int32_t* new_id = self.prune_i + 2 * n   # also the stack of a branch
        cdef uint8_t* flags = self.prune_flags         # LEAF | CANDIDATE | IN_SUBTREE
        cdef float64_t total = nodes[0].weighted_n, current, alpha, effective, r_diff
        cdef int32_t n_pruned
        cdef int32_t* node_of_row
        for i in range(n):
            r_node[i] = nodes[i].weighted_n * self.node_impurity[i] / total
            r_branch[i] = 0.0
            n_leaves[i] = 0
            parent[i] = -1
        for i in range(n):
            if nodes[i].left >= 0:
                parent[nodes[i].left] = <int32_t>i
                parent[nodes[i].right] = <int32_t>i
                flags[i] = _CANDIDATE | _IN_SUBTREE
            else:
                flags[i] = _LEAF | _IN_SUBTREE
        # Each branch's leaf count and R(T_t), the leaves bubbled up in node order.
        for i in range(n):
            if not flags[i] & _LEAF:
                continue
            current = r_node[i]
            r_branch[i] = current
            j = i
            while j != 0:
                j = parent[j]
                r_branch[j] += current
                n_leaves[j] += 1
        while flags[0] & _CANDIDATE:
            effective = DBL_MAX
            for i in range(n):
                if not flags[i] & _CANDIDATE:
                    continue
                alpha = (r_node[i] - r_branch[i]) / (n_leaves[i] - 1)
                if alpha < effective:
                    effective = alpha
                    best_i = i
            if self.ccp_alpha < effective:
                break
            # The branch below best_i leaves the tree; best_i becomes a leaf.
            top = 0
            new_id[top] = <int32_t>best_i
            top = 1
            while top > 0:
                top -= 1
                j = new_id[top]
                if not flags[j] & _IN_SUBTREE:
                    continue
                flags[j] = 0
                if nodes[j].left >= 0:
                    new_id[top] = nodes[j].left
                    new_id[top + 1] = nodes[j].right
                    top += 2
            flags[best_i] = _LEAF | _IN_SUBTREE
            n_pruned = n_leaves[best_i] - 1
            n_leaves[best_i] = 0
            r_diff = r_node[best_i] - r_branch[best_i]
            r_branch[best_i] = r_node[best_i]
            j = parent[best_i]
            while j != -1:
                n_leaves[j] -= n_pruned
                r_branch[j] += r_diff
                j = parent[j]
        # Renumber: the kept nodes in order (a parent before its children, which stay
        # side by side); new_id of a pruned node is its new leaf's.
        n_kept = 0
        for i in range(n):
            if flags[i] & _IN_SUBTREE:
                new_id[i] = <int32_t>n_kept
                n_kept += 1
            else:
                new_id[i] = new_id[parent[i]]
        if n_kept == n:
            return
        for i in range(n):
            if not flags[i] & _IN_SUBTREE:
                continue
            nodes[new_id[i]] = nodes[i]
            if flags[i] & _LEAF:
                self._make_leaf(&nodes[new_id[i]])
            else:
                nodes[new_id[i]].left = new_id[nodes[i].left]
                nodes[new_id[i]].right = new_id[nodes[i].right]
        self.n_nodes = n_kept
        node_of_row = &self.node_of_row[0]
        for row in range(self.n_samples):
            node_of_row[row] = new_id[node_of_row[row]]

    cdef inline void _make_leaf(self, node_t* nd) noexcept nogil:
        """A pruned branch's root as ``_init_node`` leaves a node never split."""
        nd.threshold = 0.0
        nd.improvement = 0.0
        nd.feature = -1
        nd.left = -1
        nd.right = -1
        nd.threshold32 = 0.0
        nd.missing_go_left = 0

    cdef void _set_leaf(self, const level_node_t* nd) noexcept nogil:
        cdef intp_t i
        cdef int32_t node = nd.node
        cdef int32_t* node_of_row
        if nd.stop <= nd.start:
            return  # (no rows: a process of a distributed fit may have none)
        node_of_row = &self.node_of_row[0]
        for i in range(nd.start, nd.stop):
            node_of_row[self.partition[i]] = node

    cdef inline bint _goes_left_raw(self, intp_t row, const node_t* nd) noexcept nogil:
        """Where the split ``nd`` sends ``row``, by its threshold on raw X."""
        cdef float32_t x
        cdef int64_t lo, hi, mid
        if self.sparse:
            # The row's value in the feature's column: a binary search of its rows,
            # 0.0 where the column holds no entry for it.
            x = 0
            lo = self.col_start[nd.feature]
            hi = self.col_start[nd.feature + 1]
            while lo < hi:
                mid = (lo + hi) >> 1
                if self.col_rows[mid] < row:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < self.col_start[nd.feature + 1] and self.col_rows[lo] == row:
                x = self.col_data[lo]
        else:
            x = self.X[row, nd.feature]
        return _value_goes_left(x, nd.threshold32, nd.missing_go_left != 0)

    cdef void _route_out_of_bag(self, const uint8_t[::1] sample_mask) noexcept nogil:
        """The leaf of every out-of-bag row, routed on raw X by the stored thresholds
        (as the model predicts: a bin empty in a node's in-bag rows may straddle a
        threshold placed between the values of its rows)."""
        cdef intp_t i
        cdef int32_t node
        cdef int32_t* node_of_row = &self.node_of_row[0]
        cdef int n_threads = self.n_threads if self.n_samples >= MIN_PARALLEL_ROWS else 1
        for i in prange(self.n_samples, schedule="static", num_threads=n_threads):
            if sample_mask[i]:
                continue
            node = 0
            while self.nodes[node].feature >= 0:
                if self._goes_left_raw(i, &self.nodes[node]):
                    node = self.nodes[node].left
                else:
                    node = self.nodes[node].right
            node_of_row[i] = node

    cdef void _split_block(self, block_t* blk) noexcept nogil:
        """Stable split of one block of a node's rows into its range of the scratch
        buffer: the left rows in order from the block's start, the right rows in
        reverse order from the block's end (``_finish_child`` reads them back in
        order). Each row is written to both ends and only its side's count advances
        (no branch on the side): the two write positions meet only at the last row,
        so no row is overwritten."""
        cdef intp_t i, n_left = 0, n_right = 0
        cdef int32_t row
        cdef const level_node_t* parent = &self.level_nodes[blk.slot]
        cdef const node_t* nd = &self.nodes[parent.node]
        cdef uint8_t bin = self.node_bin[parent.node]
        cdef bint miss = nd.missing_go_left != 0
        cdef int32_t* part = self.partition
        cdef int32_t* left = self.scratch + blk.start
        cdef int32_t* right = self.scratch + blk.stop - 1     # written downwards
        cdef const uint8_t* col_b
        cdef const float32_t* col_x
        cdef float32_t t32 = nd.threshold32
        cdef int missing_bin = self.missing_bin
        cdef bint go_left
        if blk.stop <= blk.start:
            # An empty block (a process of a distributed fit without rows): its
            # columns have no element 0 to point at.
            col_b = NULL
            col_x = NULL
        elif self.on_bins:
            col_b = &self.bins[0, nd.feature]
        else:
            col_x = &self.X[0, nd.feature]
        if self.on_bins:
            for i in range(blk.start, blk.stop):
                row = part[i]
                go_left = _bin_goes_left(col_b[row], bin, missing_bin, miss)
                left[n_left] = row
                right[-n_right] = row
                n_left += go_left
                n_right += not go_left
        else:
            for i in range(blk.start, blk.stop):
                row = part[i]
                go_left = _value_goes_left(col_x[row], t32, miss)
                left[n_left] = row
                right[-n_right] = row
                n_left += go_left
                n_right += not go_left
        blk.n_left = n_left

    cdef void _partition(self, intp_t n_slots, intp_t n_split,
                         const row_stat_t* row_stats, const float64_t* residual,
                         bint with_sums, bint leaves=False) noexcept nogil:
        """Move the rows of every node split at this level to its children (a stable
        partition of the node's range: each child's rows stay in increasing order),
        give the rows of the nodes that were not split their leaf, sum w, w * r and
        w * r^2 per child (for the impurity test of the next level) and make the
        children the level's nodes.

        With ``leaves`` (the children are leaves of the tree and nothing needs their
        sums) the rows are not moved and the finder is not told: each row of a split
        node gets its child, its leaf, in ``node_of_row``, and the level's nodes stay
        as they are."""
        cdef intp_t s, j, c, n_blocks = 0, n_rows = 0, start, stop
        cdef level_node_t* next_level = self.level_nodes + self.level_capacity
        cdef level_node_t* nd
        cdef block_t* blk
        cdef int n_threads
        for s in range(n_slots):
            nd = &self.level_nodes[s]
            if not nd.splittable or self.best[s].feature < 0:
                self._set_leaf(nd)
                self.finder.rows_moved(self.partition, nd.start, nd.stop, -1)
        if n_split == 0:
            return
        # Cut the split nodes' ranges into blocks of BLOCK rows.
        for j in range(n_split):
            nd = &self.level_nodes[next_level[2 * j].parent]
            start = nd.start
            self.block_first[j] = n_blocks
            while True:
                stop = min(start + BLOCK, nd.stop)
                blk = &self.blocks[n_blocks]
                blk.start = start
                blk.stop = stop
                blk.slot = next_level[2 * j].parent
                blk.pair = j
                n_blocks += 1
                start = stop
                if start >= nd.stop:
                    break
            n_rows += nd.stop - nd.start
        self.block_first[n_split] = n_blocks
        n_threads = self.n_threads if n_rows >= MIN_PARALLEL_ROWS else 1
        if leaves:
            for c in prange(n_blocks, schedule="dynamic", num_threads=n_threads):
                self._label_block(&self.blocks[c])
            return
        if n_threads > 1 and 2 * n_split <= NARROW_CHILDREN and self.chunk_sums != NULL:
            self._partition_narrow(n_split, n_blocks, row_stats, residual, with_sums,
                                   n_threads)
        else:
            # One parallel region (each costs a hand-over between threads: on a
            # machine busy with other work, a wait for the scheduler).
            with parallel(num_threads=n_threads):
                for c in prange(n_blocks, schedule="dynamic"):
                    self._split_block(&self.blocks[c])
                omp_barrier()  # every block split before the children's ranges
                # Each child's range (a node's left rows first, block by block), its
                # rows copied back block by block, the finder told, and summed while
                # they are in cache.
                for c in prange(2 * n_split, schedule="dynamic"):
                    self._child_range(c, &next_level[c])
                    self._finish_child(c, &next_level[c], &self.level_sums[c],
                                       row_stats, residual, with_sums)
                omp_barrier()  # every row in place before the finder reads them
                for c in prange(n_blocks, schedule="dynamic"):
                    self._tell_finder(&self.blocks[c])
        # The children become the nodes of the next level.
        for s in range(2 * n_split):
            self.level_nodes[s] = next_level[s]

    cdef void _partition_narrow(self, intp_t n_split, intp_t n_blocks,
                                const row_stat_t* row_stats, const float64_t* residual,
                                bint with_sums, int n_threads) noexcept nogil:
        """``_partition``'s split of the blocks and finish of the children for a level
        of at most NARROW_CHILDREN children, where one task per child (as
        ``_finish_child``) would leave threads idle: each block's left and right
        rows are placed in the partition as tasks of their own, then the children's
        rows are summed in tasks of CHUNKS_PER_TASK chunks of row indices, each
        chunk's sums kept apart and added in chunk order per child: the numbers of
        ``_finish_child``, bit for bit."""
        cdef level_node_t* next_level = self.level_nodes + self.level_capacity
        cdef intp_t j, b, c, k, t, left_pos, right_pos
        cdef intp_t n_chunks = self.n_chunks
        cdef intp_t n_tasks = (n_chunks + CHUNKS_PER_TASK - 1) // CHUNKS_PER_TASK
        cdef block_t* blk
        with parallel(num_threads=n_threads):
            for b in prange(n_blocks, schedule="dynamic"):
                self._split_block(&self.blocks[b])
        for c in range(2 * n_split):
            self._child_range(c, &next_level[c])
        for j in range(n_split):
            left_pos = next_level[2 * j].start
            right_pos = next_level[2 * j + 1].start
            for b in range(self.block_first[j], self.block_first[j + 1]):
                blk = &self.blocks[b]
                blk.left_pos = left_pos
                blk.right_pos = right_pos
                left_pos += blk.n_left
                right_pos += blk.stop - blk.start - blk.n_left
        if with_sums:
            memset(self.chunk_present, 0, 2 * n_split * n_chunks * sizeof(uint8_t))
        with parallel(num_threads=n_threads):
            for t in prange(2 * n_blocks, schedule="dynamic"):
                self._place_rows(&self.blocks[t // 2], t % 2)
            omp_barrier()  # every row in place before the finder and the sums read them
            for b in prange(n_blocks, schedule="dynamic"):
                self._tell_finder(&self.blocks[b])
            if with_sums:
                for t in prange(2 * n_split * n_tasks, schedule="dynamic"):
                    self._sum_chunks(t // n_tasks, t % n_tasks, row_stats, residual)
        for c in range(2 * n_split):
            _sums_zero(&self.level_sums[c])
            if not with_sums:
                continue
            for k in range(n_chunks):
                if self.chunk_present[c * n_chunks + k]:
                    _sums_add(&self.level_sums[c], &self.chunk_sums[c * n_chunks + k])

    cdef void _place_rows(self, const block_t* blk, intp_t side) noexcept nogil:
        """Copy a block's left (``side`` 0) or right (1) rows from the scratch buffer
        to their place in the partition, in order."""
        cdef intp_t i, n
        cdef int32_t* seg
        if side == 0:
            memcpy(self.partition + blk.left_pos, self.scratch + blk.start,
                   blk.n_left * sizeof(int32_t))
        else:
            n = blk.stop - blk.start - blk.n_left
            seg = self.partition + blk.right_pos
            for i in range(n):
                seg[i] = self.scratch[blk.stop - 1 - i]

    cdef void _tell_finder(self, const block_t* blk) noexcept nogil:
        """Tell the finder where a block's rows, placed in the partition, now are:
        its left rows, then its right rows. Both sides in one task: they interleave
        in one range of row indices, so the finder's per-row state of those rows is
        written by one thread (one task per side would share its cache lines between
        threads)."""
        cdef intp_t n_right = blk.stop - blk.start - blk.n_left
        self.finder.rows_moved(self.partition, blk.left_pos, blk.left_pos + blk.n_left,
                               <int32_t>(2 * blk.pair))
        self.finder.rows_moved(self.partition, blk.right_pos, blk.right_pos + n_right,
                               <int32_t>(2 * blk.pair + 1))

    cdef void _sum_chunks(self, intp_t c, intp_t task, const row_stat_t* row_stats,
                          const float64_t* residual) noexcept nogil:
        """The sums of child ``c``'s rows in chunks ``task * CHUNKS_PER_TASK`` on (of
        2^CHUNK_SHIFT row indices each), one chunk at a time, into ``chunk_sums``.
        The child's rows are in increasing order: its rows of these chunks are one
        range of its positions, found by bisection."""
        cdef const level_node_t* nd = self.level_nodes + self.level_capacity + c
        cdef intp_t first_row = (task * CHUNKS_PER_TASK) << CHUNK_SHIFT
        cdef intp_t end_row = ((task + 1) * CHUNKS_PER_TASK) << CHUNK_SHIFT
        cdef intp_t lo = _first_at_least(self.partition, nd.start, nd.stop, first_row)
        cdef intp_t hi = _first_at_least(self.partition, lo, nd.stop, end_row)
        cdef intp_t i, chunk = -1, base = c * self.n_chunks
        cdef int32_t row
        cdef node_sums_t part
        for i in range(lo, hi):
            row = self.partition[i]
            if (row >> CHUNK_SHIFT) != chunk:
                if chunk >= 0:
                    self.chunk_sums[base + chunk] = part
                    self.chunk_present[base + chunk] = 1
                _sums_zero(&part)
                chunk = row >> CHUNK_SHIFT
            _sums_add_row(&part, row_stats, residual, row)
        if chunk >= 0:
            self.chunk_sums[base + chunk] = part
            self.chunk_present[base + chunk] = 1

    cdef void _label_block(self, const block_t* blk) noexcept nogil:
        """Each row of one block of a split node gets the child it goes to as its
        leaf in ``node_of_row`` (routed as ``_split_block`` routes it)."""
        cdef intp_t i
        cdef int32_t row
        cdef const node_t* nd = &self.nodes[self.level_nodes[blk.slot].node]
        cdef int32_t left_id = nd.left, right_id = nd.right
        cdef uint8_t bin = self.node_bin[self.level_nodes[blk.slot].node]
        cdef bint miss = nd.missing_go_left != 0
        cdef const int32_t* part = self.partition
        cdef int32_t* node_of_row
        cdef const uint8_t* col_b
        cdef const float32_t* col_x
        cdef float32_t t32 = nd.threshold32
        cdef int missing_bin = self.missing_bin
        cdef bint go_left
        if blk.stop <= blk.start:
            return  # (no rows: a process of a distributed fit may have none)
        node_of_row = &self.node_of_row[0]
        if self.on_bins:
            col_b = &self.bins[0, nd.feature]
            for i in range(blk.start, blk.stop):
                row = part[i]
                go_left = _bin_goes_left(col_b[row], bin, missing_bin, miss)
                node_of_row[row] = left_id if go_left else right_id
        else:
            col_x = &self.X[0, nd.feature]
            for i in range(blk.start, blk.stop):
                row = part[i]
                go_left = _value_goes_left(col_x[row], t32, miss)
                node_of_row[row] = left_id if go_left else right_id

    cdef void _child_range(self, intp_t c, level_node_t* child) noexcept nogil:
        """The range of the partition of child ``c`` of the level: its parent's
        range, its left rows (the blocks' ``n_left``) first."""
        cdef const level_node_t* parent = &self.level_nodes[child.parent]
        cdef intp_t b, left_total = 0
        for b in range(self.block_first[c // 2], self.block_first[c // 2 + 1]):
            left_total += self.blocks[b].n_left
        if c % 2 == 0:
            child.start = parent.start
            child.stop = parent.start + left_total
        else:
            child.start = parent.start + left_total
            child.stop = parent.stop

    cdef void _finish_child(self, intp_t c, const level_node_t* nd, node_sums_t* sums,
                            const row_stat_t* row_stats, const float64_t* residual,
                            bint with_sums) noexcept nogil:
        """Copy the rows of child ``c`` (the left or right rows of its parent's blocks,
        in block order: increasing row order) to its range of the partition, setting
        each block's ``left_pos`` or ``right_pos`` (``_tell_finder`` reads them), and
        sum w, w * r, w * r^2 and the residual range of its rows, added per block of
        2^CHUNK_SHIFT row indices (in increasing order) then block by block, so the
        sums do not depend on the number of threads."""
        cdef intp_t b, i, n, pos = nd.start, chunk = -1
        cdef block_t* blk
        cdef int32_t* seg
        cdef int32_t row
        cdef node_sums_t part
        _sums_zero(sums)
        _sums_zero(&part)
        for b in range(self.block_first[c // 2], self.block_first[c // 2 + 1]):
            blk = &self.blocks[b]
            seg = self.partition + pos
            if c % 2 == 0:
                n = blk.n_left
                blk.left_pos = pos
            else:
                n = blk.stop - blk.start - blk.n_left
                blk.right_pos = pos
            self._place_rows(blk, c % 2)
            pos += n
            if not with_sums:
                continue
            for i in range(n):
                row = seg[i]
                if (row >> CHUNK_SHIFT) != chunk:
                    if chunk >= 0:
                        _sums_add(sums, &part)
                        _sums_zero(&part)
                    chunk = row >> CHUNK_SHIFT
                _sums_add_row(&part, row_stats, residual, row)
        if chunk >= 0:
            _sums_add(sums, &part)
