"""Level-wise growth of one regression tree, with any ``SplitFinder``.

The grower owns the tree being grown and what lives as long as the fit: the node
buffer, the nodes of the level being split, which node each row is in
(``node_of_row``, and ``row_slot``: the row's node among the level's nodes), the
feature draws of ``max_features`` and the partition of the rows. It asks its split
finder for the best split of every node of a level at once, applies the splits, and
moves the rows of the split nodes to their children, telling the finder which rows
moved. It never looks at how the finder ranks splits (``_split_finder.pxd``).

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
from libc.string cimport memset

import numpy as np

from ._common cimport (
    float32_t, float64_t, int32_t, int64_t, uint8_t, intp_t, node_t, row_stat_t,
    IMPURITY_EPSILON, grow_buffer,
)
from ._common import NODE_DTYPE
from ._split_finder cimport (
    SplitFinder, side_t, level_node_t, level_t, split_t, MISSING_TO_LARGER,
)

cdef extern from "_criterion.h" nogil:
    float64_t improvement_of "gbc_improvement"(float64_t proxy, float64_t total_w)
    float64_t impurity_of "gbc_impurity"(float64_t sum_w, float64_t sum_wr,
                                          float64_t sum_wr2)

cdef enum:
    # Rows per chunk of the partition pass; fixed, so that the per-child sums are
    # added in the same order for any number of threads.
    CHUNK = 8192
    # Below this many rows the partition runs on one thread.
    MIN_PARALLEL_ROWS = 200000
    # Values per child kept by the partition pass (the fields of node_sums_t).
    N_SUMS = 5


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
    X : float32 array of shape (n_samples, n_features), Fortran order
        The features (read to move rows to the children of a split).
    finder : SplitFinder
        Finds the best split of the nodes of each level (built on the same X).
    max_depth : int
        Maximum depth; -1 for no limit.
    min_samples_split, min_samples_leaf : int
    min_weight_leaf : float
    max_features : int
        Features drawn at random for each node (``n_features`` for all).
    n_threads : int
    """
    cdef:
        const float32_t[::1, :] X
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
        int32_t[::1] row_slot          # node of the row among the level's, -1: none
        node_t* nodes
        intp_t node_capacity
        readonly intp_t n_nodes
        level_node_t* level_nodes      # the level being split, then the next one
        node_sums_t* level_sums        # their sums over their own rows
        split_t* best                  # the finder's answer for each node
        intp_t level_capacity
        uint8_t* allowed
        int32_t* perm
        float64_t* partial
        intp_t partial_capacity

    def __cinit__(self):
        self.nodes = NULL
        self.level_nodes = NULL
        self.level_sums = NULL
        self.best = NULL
        self.allowed = NULL
        self.perm = NULL
        self.partial = NULL
        self.partial_capacity = 0
        self.node_capacity = 0
        self.level_capacity = 0

    def __init__(self, const float32_t[::1, :] X, SplitFinder finder, int max_depth,
                 int64_t min_samples_split, int64_t min_samples_leaf,
                 float64_t min_weight_leaf, intp_t max_features, int n_threads):
        if finder.n_samples != X.shape[0] or finder.n_features != X.shape[1]:
            raise ValueError("the split finder was built for data of another shape")
        self.X = X
        self.finder = finder
        self.n_samples = X.shape[0]
        self.n_features = X.shape[1]
        self.max_depth = max_depth
        self.min_samples_split = max(min_samples_split, 2)
        self.min_samples_leaf = max(min_samples_leaf, 1)
        self.min_weight_leaf = min_weight_leaf
        self.max_features = max(1, min(max_features, self.n_features))
        self.n_threads = max(1, n_threads)
        self.node_of_row = np.zeros(self.n_samples, dtype=np.int32)
        self.row_slot = np.zeros(self.n_samples, dtype=np.int32)
        self.perm = <int32_t*>malloc(max(1, self.n_features) * sizeof(int32_t))
        if self.perm == NULL:
            raise MemoryError()
        # A first guess; both buffers grow (per level, never per node) when needed.
        cdef intp_t width = 1 << min(max_depth if max_depth > 0 else 10, 10)
        self._reserve_level(min(width, max(self.n_samples, 1)))
        self._reserve_nodes(min(2 * width + 1, 2 * max(self.n_samples, 1) + 1))

    def __dealloc__(self):
        free(self.nodes)
        free(self.level_nodes)
        free(self.level_sums)
        free(self.best)
        free(self.allowed)
        free(self.perm)
        free(self.partial)

    cdef int _reserve_partial(self, intp_t capacity) except -1:
        if capacity > self.partial_capacity:
            self.partial = <float64_t*>grow_buffer(self.partial, capacity, sizeof(float64_t),
                                             "partial sums")
            self.partial_capacity = capacity
        return 0

    cdef int _reserve_nodes(self, intp_t capacity) except -1:
        if capacity > self.node_capacity:
            self.nodes = <node_t*>grow_buffer(self.nodes, capacity, sizeof(node_t), "tree nodes")
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
            self.level_capacity = capacity
        self.finder.reserve(capacity)
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

    def grow(self, const row_stat_t[::1] row_stats, const float64_t[::1] residual,
             const uint8_t[::1] sample_mask, unsigned long long seed=0):
        """Grow one tree on the current row statistics.

        Parameters
        ----------
        row_stats : ROW_STAT_DTYPE array of shape (n_samples,)
            w*r and w of each row (r the residual the tree fits).
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
        cdef intp_t i, n = self.n_samples
        cdef side_t root
        cdef node_sums_t root_sums
        cdef int depth = 0
        cdef intp_t n_slots, n_split, level_first_child, n_chunks
        cdef bint chunked
        cdef level_t level
        if row_stats.shape[0] != n or residual.shape[0] != n or (
                sample_mask is not None and sample_mask.shape[0] != n):
            raise ValueError(f"row_stats, residual and sample_mask must have {n} rows")
        root.n = 0
        root.w = 0.0
        root.s = 0.0
        _sums_zero(&root_sums)
        cdef int32_t* node_of_row = &self.node_of_row[0] if n > 0 else NULL
        cdef int32_t* row_slot = &self.row_slot[0] if n > 0 else NULL
        cdef bint in_bag
        with nogil:
            for i in range(n):
                node_of_row[i] = 0
                in_bag = sample_mask is None or sample_mask[i]
                row_slot[i] = 0 if in_bag else -1
                if in_bag:
                    root.n += 1
                    root.w += row_stats[i].w
                    root.s += row_stats[i].wr
                    root_sums.wr2 += row_stats[i].w * residual[i] * residual[i]
                    _sums_range(&root_sums, row_stats[i].w, residual[i])
        root_sums.w = root.w
        root_sums.wr = root.s
        self.finder.start_tree(row_stats, self.row_slot)
        self._init_node(0, &root, 0)
        self.n_nodes = 1
        self.level_nodes[0].total = root
        self.level_nodes[0].node = 0
        self.level_sums[0] = root_sums
        n_slots = 1
        level.nodes = self.level_nodes
        level.row_slot = &self.row_slot[0] if n > 0 else NULL
        level.min_samples_leaf = self.min_samples_leaf
        level.min_weight_leaf = self.min_weight_leaf
        while n_slots > 0 and (self.max_depth < 0 or depth < self.max_depth):
            if not self._mark_splittable(n_slots):
                break
            self._reserve_nodes(self.n_nodes + 2 * n_slots)
            self._reserve_level(n_slots)
            level.nodes = self.level_nodes
            level.n_nodes = n_slots
            level.allowed = NULL
            if self.max_features < self.n_features:
                self._draw_features(n_slots, seed)
                level.allowed = self.allowed
            n_chunks = (n + CHUNK - 1) // CHUNK
            chunked = n_chunks * N_SUMS * 2 * n_slots <= (1 << 22)
            self._reserve_partial(N_SUMS * 2 * n_slots * (n_chunks if chunked else 1))
            with nogil:
                self.finder.find_splits(&level, self.best)
                level_first_child = self.n_nodes
                n_split = self._apply_splits(n_slots, depth)
                if n_split > 0:
                    self._partition(level_first_child, 2 * n_split, row_stats, residual,
                                    chunked)
            n_slots = 2 * n_split
            # Ctrl-C (or any pending signal) stops a fit between two levels.
            PyErr_CheckSignals()
            depth += 1
        return self.n_nodes

    cdef bint _mark_splittable(self, intp_t n_slots):
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
        """Turn the best split of each node into two children; return how many split."""
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
            if b.missing_go_left == MISSING_TO_LARGER:
                nd.missing_go_left = b.left.n >= self.level_nodes[s].total.n - b.left.n
            else:
                nd.missing_go_left = b.missing_go_left
            nd.improvement = improvement_of(b.proxy, self.level_nodes[s].total.w)
            nd.left = <int32_t>left_id
            nd.right = <int32_t>(left_id + 1)
            right.n = self.level_nodes[s].total.n - b.left.n
            right.w = self.level_nodes[s].total.w - b.left.w
            right.s = self.level_nodes[s].total.s - b.left.s
            self._init_node(left_id, &b.left, depth + 1)
            self._init_node(left_id + 1, &right, depth + 1)
            next_level[2 * n_split].total = b.left
            next_level[2 * n_split].node = <int32_t>left_id
            next_level[2 * n_split + 1].total = right
            next_level[2 * n_split + 1].node = <int32_t>(left_id + 1)
            self.n_nodes += 2
            n_split += 1
        # The children become the nodes of the next level.
        for s in range(2 * n_split):
            self.level_nodes[s] = next_level[s]
        return n_split

    cdef void _partition(self, intp_t level_first_child, intp_t n_next,
                         const row_stat_t[::1] row_stats, const float64_t[::1] residual,
                         bint chunked) noexcept nogil:
        """Move every row of a node split at this level to its child, and sum w,
        w * r and w * r^2 per child (for the impurity test of the next level).

        Rows are taken in fixed chunks whose partial sums are added in chunk order,
        so the sums do not depend on the number of threads.
        """
        cdef intp_t c, s, n = self.n_samples
        cdef intp_t n_chunks = (n + CHUNK - 1) // CHUNK
        cdef int n_threads = self.n_threads if n >= MIN_PARALLEL_ROWS else 1
        cdef node_sums_t* partial = <node_sums_t*>self.partial
        for s in range(n_next):
            _sums_zero(&self.level_sums[s])
        if chunked:
            for c in prange(n_chunks, schedule="static", num_threads=n_threads):
                self._partition_chunk(c, level_first_child, n_next, row_stats, residual,
                                      partial + c * n_next)
            for c in range(n_chunks):
                for s in range(n_next):
                    _sums_add(&self.level_sums[s], &partial[c * n_next + s])
        else:
            for c in range(n_chunks):
                self._partition_chunk(c, level_first_child, n_next, row_stats, residual,
                                      partial)
                for s in range(n_next):
                    _sums_add(&self.level_sums[s], &partial[s])

    cdef void _partition_chunk(self, intp_t c, intp_t level_first_child, intp_t n_next,
                               const row_stat_t[::1] row_stats,
                               const float64_t[::1] residual,
                               node_sums_t* sums) noexcept nogil:
        cdef intp_t i, s
        cdef intp_t start = c * CHUNK, stop = min((c + 1) * CHUNK, self.n_samples)
        cdef int32_t node, child, slot
        cdef node_t* nd
        cdef float32_t x
        cdef bint go_left
        cdef float64_t w, r
        cdef int32_t* node_of_row = &self.node_of_row[0]
        cdef int32_t* row_slot = &self.row_slot[0]
        cdef const node_t* nodes = self.nodes
        for s in range(n_next):
            _sums_zero(&sums[s])
        for i in range(start, stop):
            node = node_of_row[i]
            nd = &nodes[node]
            if nd.feature < 0:
                row_slot[i] = -1
                continue
            x = self.X[i, nd.feature]
            if x != x:
                go_left = nd.missing_go_left
            else:
                go_left = x <= nd.threshold32
            child = nd.left if go_left else nd.right
            node_of_row[i] = child
            if row_slot[i] >= 0:
                slot = <int32_t>(child - level_first_child)
                row_slot[i] = slot
                w = row_stats[i].w
                r = residual[i]
                sums[slot].w += w
                sums[slot].wr += row_stats[i].wr
                sums[slot].wr2 += w * r * r
                _sums_range(&sums[slot], w, r)
        self.finder.rows_moved(row_slot, start, stop)
