"""Level-wise growth of one regression tree, with any ``SplitFinder``.

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
"""
cimport cython
from cpython.exc cimport PyErr_CheckSignals
from cython.parallel cimport prange
from libc.math cimport INFINITY, nextafterf
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

import numpy as np

from ._common cimport (
    float32_t, float64_t, int32_t, int64_t, uint8_t, intp_t, node_t, row_stat_t,
    IMPURITY_EPSILON, grow_buffer,
)
from ._common import NODE_DTYPE
from ._split_finder cimport (
    SplitFinder, side_t, level_node_t, level_t, split_t, plan_statistics,
    STATS_NONE, STATS_COLLECT,
)
from ._choice cimport missing_left

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


ctypedef unsigned long long uint64_t_t


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


cdef inline void _sums_add(node_sums_t* a, const node_sums_t* b) noexcept nogil:
    """Add the sums of a chunk ``b`` to ``a`` (in chunk order: deterministic)."""
    a.w = a.w + b.w
    a.wr = a.wr + b.wr
    a.wr2 = a.wr2 + b.wr2
    if b.r_min < a.r_min:
        a.r_min = b.r_min
    if b.r_max > a.r_max:
        a.r_max = b.r_max


cdef inline float32_t _float32_at_most(float64_t t) noexcept nogil:
    """Largest float32 <= t, so that float32 ``x <= t32`` iff ``x <= t``."""
    cdef float32_t t32 = <float32_t>t
    if <float64_t>t32 > t:
        t32 = nextafterf(t32, -INFINITY)
    return t32


cdef inline uint64_t_t _splitmix64(uint64_t_t* state) noexcept nogil:
    cdef uint64_t_t z
    state[0] += 0x9E3779B97F4A7C15ULL
    z = state[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


@cython.final
cdef class TreeGrower:
    """Grow regression trees level by level, reusing its buffers across trees.

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

    Attributes
    ----------
    reducer : callable or None
        The distributed hook for the grower's own sums (None in one process; the
        finder's histograms have their own, ``HistogramSplitFinder.reducer``):
        called with the GIL as ``reducer(values, n_summed)`` with the root's totals
        and sums at the start of a tree, then before each later level with the sums
        of the splittable test of the level's nodes; it must leave in ``values``
        the element-wise sums over every process of the first ``n_summed`` columns
        (in a fixed process order), the minimum of the next column and the maximum
        of the last.
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
        int n_threads
        int max_depth
        int64_t min_samples_split
        int64_t min_samples_leaf
        float64_t min_weight_leaf
        intp_t max_features
        readonly int32_t[::1] node_of_row
        int32_t* partition             # in-bag rows, node by node
        int32_t* scratch               # partition buffer: per block, its left rows
                                       # from the block's start, its right rows
                                       # backwards from the block's end
        node_t* nodes
        uint8_t* node_bin              # bin threshold of each split (on_bins)
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
        public object reducer

    def __cinit__(self):
        self.nodes = NULL
        self.node_bin = NULL
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
        self.reducer = None
        self.node_capacity = 0
        self.level_capacity = 0

    def __init__(self, const float32_t[::1, :] X, SplitFinder finder, int max_depth,
                 int64_t min_samples_split, int64_t min_samples_leaf,
                 float64_t min_weight_leaf, intp_t max_features, int n_threads,
                 columns=None):
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
        # A first guess; the buffers grow (per level, never per node) when needed.
        cdef intp_t width = 1 << min(max_depth if max_depth > 0 else 10, 10)
        self._reserve_level(min(width, max(self.n_samples, 1)))
        self._reserve_nodes(min(2 * width + 1, 2 * max(self.n_samples, 1) + 1))

    def __dealloc__(self):
        free(self.nodes)
        free(self.node_bin)
        free(self.level_nodes)
        free(self.level_sums)
        free(self.best)
        free(self.allowed)
        free(self.perm)
        free(self.partition)
        free(self.scratch)
        free(self.blocks)
        free(self.block_first)

    cdef int _reserve_nodes(self, intp_t capacity) except -1:
        if capacity > self.node_capacity:
            self.nodes = <node_t*>grow_buffer(self.nodes, capacity, sizeof(node_t), "tree nodes")
            self.node_bin = <uint8_t*>grow_buffer(self.node_bin, capacity, sizeof(uint8_t),
                                                  "tree nodes")
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
        cdef bint last_level
        cdef level_t level
        if (row_stats is not None and row_stats.shape[0] != n) or residual.shape[0] != n or (
                sample_mask is not None and sample_mask.shape[0] != n):
            raise ValueError(f"row_stats, residual and sample_mask must have {n} rows")
        if sample_mask is not None and not self.has_X:
            raise ValueError("a sample mask needs X (its out-of-bag rows are routed on "
                             "their raw values)")
        root.n = 0
        root.w = 0.0
        root.s = 0.0
        _sums_zero(&root_sums)
        cdef int32_t* partition = self.partition
        cdef const row_stat_t* rs = &row_stats[0] if row_stats is not None and n > 0 else NULL
        cdef const float64_t* res = &residual[0] if n > 0 else NULL
        cdef float64_t w
        with nogil:
            for i in range(n):
                if sample_mask is None or sample_mask[i]:
                    partition[n_inbag] = <int32_t>i
                    n_inbag += 1
                    root.n += 1
                    if rs != NULL:
                        w = rs[i].w
                        root.w += w
                        root.s += rs[i].wr
                    else:
                        # Unit weights: w * r is r (1 * r exactly).
                        w = 1.0
                        root.w += 1.0
                        root.s += residual[i]
                    root_sums.wr2 += w * residual[i] * residual[i]
                    _sums_range(&root_sums, w, residual[i])
        if self.reducer is not None:
            root, root_sums = self._reduce_root(root, root_sums)
        root_sums.w = root.w
        root_sums.wr = root.s
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
        while n_slots > 0 and (self.max_depth < 0 or depth < self.max_depth):
            if depth > 0 and self.reducer is not None:
                self._reduce_sums(n_slots)
            if not self._mark_splittable(n_slots):
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
                n_split = self._apply_splits(n_slots, depth)
                self._partition(n_slots, n_split, rs, res, not last_level)
            n_slots = 2 * n_split
            # Ctrl-C (or any pending signal) stops a fit between two levels.
            PyErr_CheckSignals()
            depth += 1
        with nogil:
            for s in range(n_slots):
                self._set_leaf(&self.level_nodes[s])
            if sample_mask is not None:
                self._route_out_of_bag(sample_mask)
        return self.n_nodes

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

    cdef bint _mark_splittable(self, intp_t n_slots):
        """Which nodes of the level may split, and the statistics the finder must
        compute for them."""
        cdef intp_t s
        cdef bint any_ = False
        cdef level_node_t* nd
        cdef node_sums_t* sums
        for s in range(n_slots):
            nd = &self.level_nodes[s]
            sums = &self.level_sums[s]
            nd.splittable = (
                nd.total.n >= self.min_samples_split
                and nd.total.n >= 2 * self.min_samples_leaf
                and nd.total.w >= 2 * self.min_weight_leaf
                and sums.r_max > sums.r_min
                and impurity_of(sums.w, sums.wr, sums.wr2) > IMPURITY_EPSILON
            )
            any_ = any_ or nd.splittable
        if n_slots == 1:
            self.level_nodes[0].stats = STATS_COLLECT if self.level_nodes[0].splittable else STATS_NONE
        else:
            for s in range(0, n_slots, 2):
                plan_statistics(&self.level_nodes[s], &self.level_nodes[s + 1],
                                self.finder.subtracts)
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
            nd.improvement = improvement_of(b.proxy, self.level_nodes[s].total.w)
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
        if x != x:
            return nd.missing_go_left
        return x <= nd.threshold32

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
        order)."""
        cdef intp_t i, n_left = 0, n_right = 0
        cdef int32_t row
        cdef const level_node_t* parent = &self.level_nodes[blk.slot]
        cdef const node_t* nd = &self.nodes[parent.node]
        cdef uint8_t bin = self.node_bin[parent.node]
        cdef uint8_t miss = nd.missing_go_left
        cdef int32_t* part = self.partition
        cdef int32_t* left = self.scratch + blk.start
        cdef int32_t* right = self.scratch + blk.stop - 1     # written downwards
        cdef const uint8_t* col_b
        cdef const float32_t* col_x
        cdef uint8_t b
        cdef float32_t x, t32 = nd.threshold32
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
                b = col_b[row]
                if b == missing_bin:
                    go_left = miss
                else:
                    go_left = b <= bin
                if go_left:
                    left[n_left] = row
                    n_left += 1
                else:
                    right[-n_right] = row
                    n_right += 1
        else:
            for i in range(blk.start, blk.stop):
                row = part[i]
                x = col_x[row]
                if x != x:
                    go_left = miss
                else:
                    go_left = x <= t32
                if go_left:
                    left[n_left] = row
                    n_left += 1
                else:
                    right[-n_right] = row
                    n_right += 1
        blk.n_left = n_left

    cdef void _partition(self, intp_t n_slots, intp_t n_split,
                         const row_stat_t* row_stats, const float64_t* residual,
                         bint with_sums) noexcept nogil:
        """Move the rows of every node split at this level to its children (a stable
        partition of the node's range: each child's rows stay in increasing order),
        give the rows of the nodes that were not split their leaf, sum w, w * r and
        w * r^2 per child (for the impurity test of the next level) and make the
        children the level's nodes."""
        cdef intp_t s, j, c, n_blocks = 0, n_rows = 0, start, stop, left_total
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
            while True:
                stop = min(start + BLOCK, nd.stop)
                blk = &self.blocks[n_blocks]
                blk.start = start
                blk.stop = stop
                blk.slot = next_level[2 * j].parent
                n_blocks += 1
                start = stop
                if start >= nd.stop:
                    break
            n_rows += nd.stop - nd.start
        n_threads = self.n_threads if n_rows >= MIN_PARALLEL_ROWS else 1
        for c in prange(n_blocks, schedule="dynamic", num_threads=n_threads):
            self._split_block(&self.blocks[c])
        # The children's ranges: a node's left rows first, block by block.
        c = 0
        for j in range(n_split):
            nd = &self.level_nodes[next_level[2 * j].parent]
            left_total = 0
            self.block_first[j] = c
            while c < n_blocks and self.blocks[c].slot == next_level[2 * j].parent:
                left_total = left_total + self.blocks[c].n_left
                c += 1
            next_level[2 * j].start = nd.start
            next_level[2 * j].stop = nd.start + left_total
            next_level[2 * j + 1].start = nd.start + left_total
            next_level[2 * j + 1].stop = nd.stop
        self.block_first[n_split] = n_blocks
        # Each child's rows copied back block by block, the finder told, and summed
        # while they are in cache.
        for c in prange(2 * n_split, schedule="dynamic", num_threads=n_threads):
            self._finish_child(c, &next_level[c], &self.level_sums[c], row_stats, residual,
                               with_sums)
        # The children become the nodes of the next level.
        for s in range(2 * n_split):
            self.level_nodes[s] = next_level[s]

    cdef void _finish_child(self, intp_t c, const level_node_t* nd, node_sums_t* sums,
                            const row_stat_t* row_stats, const float64_t* residual,
                            bint with_sums) noexcept nogil:
        """Copy the rows of child ``c`` (the left or right rows of its parent's blocks,
        in block order: increasing row order) to its range of the partition, tell
        the finder, and sum w, w * r, w * r^2 and the residual range of its rows,
        added per block of 2^CHUNK_SHIFT row indices (in increasing order) then block
        by block, so the sums do not depend on the number of threads."""
        cdef intp_t b, i, n, pos = nd.start, chunk = -1
        cdef const block_t* blk
        cdef int32_t* seg
        cdef int32_t row
        cdef float64_t w, r
        cdef node_sums_t part
        _sums_zero(sums)
        _sums_zero(&part)
        for b in range(self.block_first[c // 2], self.block_first[c // 2 + 1]):
            blk = &self.blocks[b]
            seg = self.partition + pos
            if c % 2 == 0:
                n = blk.n_left
                memcpy(seg, self.scratch + blk.start, n * sizeof(int32_t))
            else:
                n = blk.stop - blk.start - blk.n_left
                for i in range(n):
                    seg[i] = self.scratch[blk.stop - 1 - i]
            self.finder.rows_moved(self.partition, pos, pos + n, <int32_t>c)
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
                r = residual[row]
                if row_stats != NULL:
                    w = row_stats[row].w
                    part.w += w
                    part.wr += row_stats[row].wr
                else:
                    # Unit weights: w * r is r.
                    w = 1.0
                    part.w += 1.0
                    part.wr += r
                part.wr2 += w * r * r
                _sums_range(&part, w, r)
        if chunk >= 0:
            _sums_add(sums, &part)
