"""Batch traversal of all trees (paper Algorithm 2), GIL released.

Trees of depth <= MAX_COMPLETE_DEPTH are stored padded to complete binary trees so
that a row descends by index arithmetic (``j = 2 j + 1 + go_right``) with no
data-dependent branch; deeper trees use the plain node arrays. Rows are processed in
blocks, all trees per block, so a block of X is read from memory once. A block
without missing values is also transposed once, and trees of depth <= 3 are then
evaluated column-wise: every split of the tree is tested for all rows of the block in
branch-free loops that the compiler vectorises, and each row's leaf is selected from
the test bits (``_leaves_by_columns``). When every tree of the range has depth <= 3
and the CPU has AVX2, such a block goes instead to the kernel in ``_simd.h``
(selected at run time; the wheels target the baseline instruction set), which looks
up the leaf values with vector permutes and gives the same sums.

Decisions use float32 thresholds (the largest float32 not above the float64 split
threshold) on float32 inputs, which gives exactly the decisions of ``x <= threshold``
in float64, and leaf contributions are added in tree order, as in training, so
predictions on the training rows are bit-identical to the training scores.
"""
cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY
from libc.stdlib cimport calloc, malloc, free

import numpy as np

from ._common cimport (
    CACHE_LINE, float32_t, float64_t, int32_t, int64_t, uint8_t, uint32_t, intp_t, node_t,
    line_aligned, per_thread_stride)
from ._trace cimport *

cdef extern from "_simd.h" nogil:
    # Rows per block (shared with the AVX2 kernel, whose columns have this stride).
    const int BLOCK "GBC_BLOCK"
    # Entries per tree in the depth-3 tables of the AVX2 kernel.
    const int TREE_STRIDE "GBC_TREE_STRIDE"
    int avx2_available "gbc_avx2_available"()
    void add_depth3_trees_avx2 "gbc_add_depth3_trees_avx2"(
        const float32_t* columns, const int32_t* column_offset,
        const float32_t* threshold, const uint32_t* leaf_low, const uint32_t* leaf_high,
        intp_t n_trees, float64_t* out)
    void split_double "gbc_split_double"(float64_t value, uint32_t* low, uint32_t* high)

cdef enum:
    MAX_DEPTH_COMPLETE = 10
    LANES = 8
    # Trees this shallow are evaluated column-wise on NaN-free blocks: every split
    # of the tree is tested for the whole block (branch-free loops the compiler
    # vectorises), then each row's leaf is picked from the bits.
    MAX_DEPTH_COLUMNS = 3
    # Largest transposed block, in floats per thread (features x BLOCK); wider data
    # keeps the row-wise path.
    MAX_COLUMN_FLOATS = 1 << 18
    # Fewer (row, tree) pairs than this run on one thread: about a millisecond of
    # work, what a parallel region can cost on a busy machine (a waiting thread may
    # need a scheduler time slice); 500 rows x 100 trees took 8 ms on two threads of
    # a loaded 2-core machine against 0.08 ms on one.
    MIN_PARALLEL_WORK = 1 << 20
MAX_COMPLETE_DEPTH = MAX_DEPTH_COMPLETE

# Whether predict_raw uses the AVX2 kernel for runs of trees of depth <= 3 on NaN-free
# blocks: on when the CPU supports AVX2 (checked once, at import).
cdef bint _simd_enabled = avx2_available() != 0


def simd_kernel():
    """Name of the vectorised prediction kernel in use: ``"avx2"`` or ``"portable"``."""
    return "avx2" if _simd_enabled else "portable"


def _set_simd(bint enabled):
    """Turn the AVX2 kernel on or off (tests compare both paths); returns the previous
    setting. It stays off on a CPU or platform without it."""
    global _simd_enabled
    previous = bool(_simd_enabled)
    _simd_enabled = enabled and avx2_available() != 0
    return previous


def tree_depths(const node_t[::1] nodes, const int64_t[::1] tree_offsets):
    """Depth of each tree (a lone leaf has depth 0)."""
    cdef intp_t t, j, n_trees = tree_offsets.shape[0] - 1
    depths = np.zeros(n_trees, dtype=np.int32)
    cdef int32_t[::1] d = depths
    for t in range(n_trees):
        for j in range(tree_offsets[t], tree_offsets[t + 1]):
            if nodes[j].depth > d[t]:
                d[t] = nodes[j].depth
    return depths


cdef void _fill_complete(
    const node_t* tree, int32_t node, intp_t pos, int level, int depth,
    int32_t* feature, float32_t* threshold, uint8_t* missing_left,
    float64_t* leaf_value, const float64_t* scaled_value,
) noexcept nogil:
    """Copy the subtree at ``node`` into heap position ``pos`` of a complete tree."""
    cdef intp_t n_inner = (<intp_t>1 << depth) - 1
    cdef intp_t first, count, k
    if level == depth:
        leaf_value[pos - n_inner] = scaled_value[node]
        return
    if tree[node].feature < 0:
        # A leaf above the last level: pad with splits that always go left, and give
        # every leaf below it the leaf's value.
        feature[pos] = 0
        threshold[pos] = INFINITY
        missing_left[pos] = 1
        _fill_complete(tree, node, 2 * pos + 1, level + 1, depth,
                       feature, threshold, missing_left, leaf_value, scaled_value)
        _fill_complete(tree, node, 2 * pos + 2, level + 1, depth,
                       feature, threshold, missing_left, leaf_value, scaled_value)
        return
    feature[pos] = tree[node].feature
    threshold[pos] = tree[node].threshold32
    missing_left[pos] = tree[node].missing_go_left
    _fill_complete(tree, tree[node].left, 2 * pos + 1, level + 1, depth,
                   feature, threshold, missing_left, leaf_value, scaled_value)
    _fill_complete(tree, tree[node].right, 2 * pos + 2, level + 1, depth,
                   feature, threshold, missing_left, leaf_value, scaled_value)


cdef inline intp_t _leaf_of(const node_t* tree, const float32_t* row) noexcept nogil:
    """Node index of the leaf a row reaches in a tree stored as plain nodes."""
    cdef intp_t j = 0
    cdef float32_t x
    cdef bint go_right
    while tree[j].feature >= 0:
        x = row[tree[j].feature]
        if x != x:
            go_right = not tree[j].missing_go_left
        else:
            go_right = x > tree[j].threshold32
        j = tree[j].right if go_right else tree[j].left
    return j


cdef inline void _leaves_by_columns(
    const float32_t* columns,
    const int32_t* feature,
    const float32_t* threshold,
    int depth,
    int32_t* leaf_index,
) noexcept nogil:
    """Leaf (0 .. 2**depth - 1) of each of the BLOCK rows of a NaN-free block, for a
    complete tree of depth <= 3 (heap layout: node j has children 2j+1 and 2j+2).

    ``columns[f * BLOCK + i]`` is feature f of row i. Every split of the tree is
    tested for every row, ``go_right = x > threshold`` as in the row-wise path, and
    each level's bit is selected from its level's tests by the bits above it, with
    bitwise operations only, so that each loop has no branch and vectorises. The
    tests are kept as masks (-1 for "go right", 0 for "go left").
    """
    cdef intp_t i
    cdef int32_t b0, b1, c1, c2, c3, c4, c5, c6, lo, hi
    cdef const float32_t* x0
    cdef const float32_t* x1
    cdef const float32_t* x2
    cdef const float32_t* x3
    cdef const float32_t* x4
    cdef const float32_t* x5
    cdef const float32_t* x6
    cdef float32_t t0, t1, t2, t3, t4, t5, t6
    if depth == 0:
        for i in range(BLOCK):
            leaf_index[i] = 0
        return
    x0 = columns + feature[0] * BLOCK
    t0 = threshold[0]
    if depth == 1:
        for i in range(BLOCK):
            leaf_index[i] = (-(x0[i] > t0)) & 1
        return
    x1 = columns + feature[1] * BLOCK
    x2 = columns + feature[2] * BLOCK
    t1 = threshold[1]
    t2 = threshold[2]
    if depth == 2:
        for i in range(BLOCK):
            b0 = -(x0[i] > t0)
            c1 = -(x1[i] > t1)
            c2 = -(x2[i] > t2)
            # b1 = c2 if b0 else c1
            b1 = c1 ^ ((c1 ^ c2) & b0)
            leaf_index[i] = (b0 & 2) | (b1 & 1)
        return
    x3 = columns + feature[3] * BLOCK
    x4 = columns + feature[4] * BLOCK
    x5 = columns + feature[5] * BLOCK
    x6 = columns + feature[6] * BLOCK
    t3 = threshold[3]
    t4 = threshold[4]
    t5 = threshold[5]
    t6 = threshold[6]
    for i in range(BLOCK):
        b0 = -(x0[i] > t0)
        c1 = -(x1[i] > t1)
        c2 = -(x2[i] > t2)
        c3 = -(x3[i] > t3)
        c4 = -(x4[i] > t4)
        c5 = -(x5[i] > t5)
        c6 = -(x6[i] > t6)
        b1 = c1 ^ ((c1 ^ c2) & b0)
        lo = c3 ^ ((c3 ^ c4) & b1)       # node 3 or 4 (left subtree of the root)
        hi = c5 ^ ((c5 ^ c6) & b1)       # node 5 or 6 (right subtree)
        leaf_index[i] = (b0 & 4) | (b1 & 2) | ((lo ^ ((lo ^ hi) & b0)) & 1)


@cython.final
cdef class Predictor:
    """Flat, read-only form of an ensemble for fast batch prediction.

    Trees come in iteration order, ``n_outputs`` per iteration: tree ``m *
    n_outputs + k`` adds to raw score k. Internally the trees of each output are
    stored together (output k's trees in iteration order), so that a block of rows
    adds up the trees of one output after another into that output's scores.

    Parameters
    ----------
    nodes : NODE_DTYPE array
        The nodes of all trees, concatenated (validated by the caller).
    tree_offsets : int64 array of shape (n_trees + 1,)
    learning_rate : float
        eta; leaf contributions are ``learning_rate * nodes['value']``.
    n_features : int
    n_outputs : int, default=1
        Raw scores per row (n_trees must be a multiple of it).
    """
    cdef:
        readonly intp_t n_trees
        readonly intp_t n_features
        readonly intp_t n_outputs
        readonly intp_t n_iterations
        const node_t[::1] nodes
        const int64_t[::1] tree_offsets
        float64_t[::1] scaled_value
        # Per tree, in output-major order (position u = k * n_iterations + m):
        int64_t[::1] tree_of        # the tree's index in iteration order
        int32_t[::1] depth
        int64_t[::1] inner_offset
        int64_t[::1] leaf_offset
        int32_t[::1] c_feature
        float32_t[::1] c_threshold
        uint8_t[::1] c_missing_left
        float64_t[::1] c_leaf
        # Every tree of depth <= 3 padded to depth 3, for the AVX2 kernel (_simd.h).
        int32_t[::1] d3_column_offset
        float32_t[::1] d3_threshold
        uint32_t[::1] d3_leaf_low
        uint32_t[::1] d3_leaf_high

    def __init__(self, nodes, tree_offsets, double learning_rate, intp_t n_features,
                 intp_t n_outputs=1):
        self.nodes = np.ascontiguousarray(nodes)
        self.tree_offsets = np.ascontiguousarray(tree_offsets, dtype=np.int64)
        self.n_trees = self.tree_offsets.shape[0] - 1
        self.n_features = n_features
        if n_outputs < 1 or self.n_trees % n_outputs != 0:
            raise ValueError(f"{self.n_trees} trees are not whole iterations of "
                             f"{n_outputs} outputs")
        self.n_outputs = n_outputs
        self.n_iterations = self.n_trees // n_outputs
        values = np.asarray(nodes)["value"]
        # eta * gamma_j computed once, the same float64 product as in training.
        self.scaled_value = np.ascontiguousarray(learning_rate * values, dtype=np.float64)
        tree_of = np.arange(self.n_trees, dtype=np.int64).reshape(
            self.n_iterations, n_outputs).T.ravel()
        self.tree_of = tree_of
        depths = tree_depths(self.nodes, self.tree_offsets)[tree_of]
        self.depth = depths
        complete = depths <= MAX_COMPLETE_DEPTH
        n_inner = np.where(complete, (1 << np.minimum(depths, MAX_COMPLETE_DEPTH)) - 1, 0)
        n_leaf = np.where(complete, n_inner + 1, 0)
        self.inner_offset = np.concatenate([[0], np.cumsum(n_inner)]).astype(np.int64)
        self.leaf_offset = np.concatenate([[0], np.cumsum(n_leaf)]).astype(np.int64)
        # One spare entry: a trailing tree with no inner node (or no complete layout)
        # takes &c_*[total], which must be a valid index for the bounds-checked build.
        self.c_feature = np.zeros(self.inner_offset[self.n_trees] + 1, dtype=np.int32)
        self.c_threshold = np.zeros(self.inner_offset[self.n_trees] + 1, dtype=np.float32)
        self.c_missing_left = np.zeros(self.inner_offset[self.n_trees] + 1, dtype=np.uint8)
        self.c_leaf = np.zeros(self.leaf_offset[self.n_trees] + 1, dtype=np.float64)
        self.d3_column_offset = np.zeros(self.n_trees * TREE_STRIDE + 1, dtype=np.int32)
        self.d3_threshold = np.zeros(self.n_trees * TREE_STRIDE + 1, dtype=np.float32)
        self.d3_leaf_low = np.zeros(self.n_trees * TREE_STRIDE + 1, dtype=np.uint32)
        self.d3_leaf_high = np.zeros(self.n_trees * TREE_STRIDE + 1, dtype=np.uint32)
        cdef uint8_t[::1] unused_missing = np.zeros(TREE_STRIDE, dtype=np.uint8)
        cdef float64_t[::1] leaf8 = np.zeros(TREE_STRIDE, dtype=np.float64)
        cdef intp_t u, k
        cdef int64_t first
        # Only data narrow enough for a transposed block uses these tables (and
        # only then do the column offsets fit in int32).
        cdef bint columns_possible = n_features * BLOCK <= MAX_COLUMN_FLOATS
        for u in range(self.n_trees):
            first = self.tree_offsets[self.tree_of[u]]
            if columns_possible and self.depth[u] <= MAX_DEPTH_COLUMNS:
                _fill_complete(
                    &self.nodes[first], 0, 0, 0, MAX_DEPTH_COLUMNS,
                    &self.d3_column_offset[u * TREE_STRIDE],
                    &self.d3_threshold[u * TREE_STRIDE],
                    &unused_missing[0], &leaf8[0], &self.scaled_value[first],
                )
                for k in range(TREE_STRIDE):
                    # Where the node's feature starts in a transposed block.
                    self.d3_column_offset[u * TREE_STRIDE + k] *= BLOCK
                    split_double(leaf8[k], &self.d3_leaf_low[u * TREE_STRIDE + k],
                                 &self.d3_leaf_high[u * TREE_STRIDE + k])
            if self.depth[u] <= MAX_COMPLETE_DEPTH:
                _fill_complete(
                    &self.nodes[first], 0, 0, 0, self.depth[u],
                    &self.c_feature[self.inner_offset[u]],
                    &self.c_threshold[self.inner_offset[u]],
                    &self.c_missing_left[self.inner_offset[u]],
                    &self.c_leaf[self.leaf_offset[u]], &self.scaled_value[first],
                )

    def predict_raw(self, const float32_t[:, ::1] X, float64_t[:, ::1] out,
                    intp_t iteration_start=0, intp_t iteration_stop=-1, int n_threads=1):
        """Add the trees of iterations ``iteration_start .. iteration_stop-1`` to ``out``.

        Parameters
        ----------
        X : float32 array of shape (n_samples, n_features), C order
        out : float64 array of shape (n_samples, n_outputs), C order
            Raw scores, updated in place (start from F0). Each output's trees are
            added in iteration order, as in training.
        iteration_start, iteration_stop : int
            Range of iterations (``iteration_stop=-1``: up to the last one).
        n_threads : int
        """
        if iteration_stop < 0 or iteration_stop > self.n_iterations:
            iteration_stop = self.n_iterations
        iteration_start = min(max(iteration_start, 0), iteration_stop)
        if X.shape[1] != self.n_features:
            raise ValueError(
                f"X has {X.shape[1]} features, but the model expects {self.n_features}")
        if out.shape[0] != X.shape[0] or out.shape[1] != self.n_outputs:
            raise ValueError(f"out must have shape ({X.shape[0]}, {self.n_outputs})")
        cdef intp_t n = X.shape[0]
        cdef intp_t n_blocks = (n + BLOCK - 1) // BLOCK
        cdef intp_t b, u, k
        cdef intp_t column_floats = self.n_features * BLOCK
        cdef bint any_shallow = False
        cdef void* column_block = NULL
        cdef void* score_block = NULL
        cdef float32_t* columns = NULL
        cdef float64_t* scores = NULL
        # Per output: every tree of the range has depth <= 3 (the AVX2 kernel).
        cdef uint8_t[::1] simd_ok = np.zeros(self.n_outputs, dtype=np.uint8)
        for k in range(self.n_outputs):
            simd_ok[k] = _simd_enabled
            for u in range(k * self.n_iterations + iteration_start,
                           k * self.n_iterations + iteration_stop):
                any_shallow = any_shallow or self.depth[u] <= MAX_DEPTH_COLUMNS
                simd_ok[k] = simd_ok[k] and self.depth[u] <= MAX_DEPTH_COLUMNS
        if n * (iteration_stop - iteration_start) * self.n_outputs < MIN_PARALLEL_WORK:
            n_threads = 1
        n_threads = max(1, n_threads)
        if any_shallow and n >= BLOCK and column_floats <= MAX_COLUMN_FLOATS:
            # One transposed block per thread, allocated once per call (a failed
            # allocation only means the row-wise path). Each thread's part of either
            # buffer is whole cache lines (BLOCK = 128 values per feature).
            column_block = malloc(n_threads * column_floats * sizeof(float32_t)
                                  + CACHE_LINE)
            columns = <float32_t*>line_aligned(column_block)
        if self.n_outputs > 1:
            # One block of one output's scores per thread.
            score_block = malloc(n_threads * BLOCK * sizeof(float64_t) + CACHE_LINE)
            if score_block == NULL:
                free(column_block)
                raise MemoryError()
            scores = <float64_t*>line_aligned(score_block)
        try:
            with nogil:
                GBC_TRACE_REGION_BEGIN(GBC_TR_PREDICT, n)
                for b in prange(n_blocks, schedule="static", num_threads=n_threads):
                    GBC_TRACE_TASK_BEGIN(GBC_TR_PREDICT, b)
                    self._predict_block(
                        X, out, b * BLOCK, min((b + 1) * BLOCK, n),
                        iteration_start, iteration_stop,
                        columns + threadid() * column_floats if columns != NULL else NULL,
                        scores + threadid() * BLOCK if scores != NULL else NULL,
                        &simd_ok[0])
                    GBC_TRACE_TASK_END(GBC_TR_PREDICT, b)
                GBC_TRACE_REGION_END(GBC_TR_PREDICT, n)
        finally:
            free(column_block)
            free(score_block)

    cdef void _predict_block(self, const float32_t[:, ::1] X, float64_t[:, ::1] out,
                             intp_t row_start, intp_t row_stop,
                             intp_t iteration_start, intp_t iteration_stop,
                             float32_t* columns, float64_t* scores,
                             const uint8_t* simd_ok) noexcept nogil:
        """Rows ``row_start .. row_stop-1``: check the block for missing values and
        transpose it once, then add each output's trees to its scores."""
        cdef intp_t i, f, k, base
        cdef intp_t m = row_stop - row_start
        cdef intp_t n_features = X.shape[1]
        cdef intp_t n_values = m * n_features, n_missing = 0
        cdef const float32_t* block_values = NULL
        cdef const float32_t* row_values
        cdef float64_t* out_block
        # Most blocks hold no missing value: they take a path with one comparison
        # per level. The block's rows are contiguous in X (C order): one flat count
        # that the compiler vectorises.
        if n_values > 0:
            block_values = &X[row_start, 0]
            for i in range(n_values):
                n_missing += block_values[i] != block_values[i]
        if n_missing > 0 or m < BLOCK or n_values == 0:
            columns = NULL
        if columns != NULL:
            for i in range(m):
                row_values = block_values + i * n_features
                for f in range(n_features):
                    columns[f * BLOCK + i] = row_values[f]
        for k in range(self.n_outputs):
            base = k * self.n_iterations
            if scores == NULL:
                out_block = &out[row_start, 0]  # one output: the scores are contiguous
            else:
                out_block = scores
                for i in range(m):
                    out_block[i] = out[row_start + i, k]
            self._add_trees(X, out_block, row_start, row_stop, base + iteration_start,
                            base + iteration_stop, columns, n_missing > 0,
                            simd_ok[k] != 0)
            if scores != NULL:
                for i in range(m):
                    out[row_start + i, k] = out_block[i]

    cdef void _add_trees(self, const float32_t[:, ::1] X, float64_t* out_block,
                         intp_t row_start, intp_t row_stop, intp_t tree_start,
                         intp_t tree_stop, const float32_t* columns, bint block_has_nan,
                         bint use_simd) noexcept nogil:
        """Add trees ``tree_start .. tree_stop-1`` (output-major positions) to the
        scores ``out_block[0 .. row_stop - row_start)`` of the block's rows.
        ``columns`` is the transposed block (NULL: row-wise paths only)."""
        cdef intp_t t, i, j, level, depth, base
        cdef const int32_t* feature
        cdef const float32_t* threshold
        cdef const uint8_t* missing_left
        cdef const float64_t* leaf
        cdef const node_t* tree
        cdef float32_t x
        cdef bint go_right
        cdef intp_t u
        cdef intp_t lane[8]
        cdef const float32_t* row_ptr[8]
        cdef int32_t leaf_index[BLOCK]
        cdef int32_t leaf_index_next[BLOCK]
        cdef const float64_t* leaf_next
        cdef int64_t first
        if columns != NULL and use_simd:
            # Every tree has depth <= 3: the AVX2 kernel (_simd.h).
            add_depth3_trees_avx2(
                columns, &self.d3_column_offset[tree_start * TREE_STRIDE],
                &self.d3_threshold[tree_start * TREE_STRIDE],
                &self.d3_leaf_low[tree_start * TREE_STRIDE],
                &self.d3_leaf_high[tree_start * TREE_STRIDE],
                tree_stop - tree_start, out_block)
            return
        t = tree_start
        while t < tree_stop:
            depth = self.depth[t]
            if columns != NULL and depth <= MAX_DEPTH_COLUMNS:
                base = self.inner_offset[t]
                _leaves_by_columns(columns, &self.c_feature[base], &self.c_threshold[base],
                                   <int>depth, leaf_index)
                leaf = &self.c_leaf[self.leaf_offset[t]]
                if t + 1 < tree_stop and self.depth[t + 1] <= MAX_DEPTH_COLUMNS:
                    # Two trees per pass over the block: the same two additions, in
                    # tree order, with one load and store of each score.
                    base = self.inner_offset[t + 1]
                    _leaves_by_columns(columns, &self.c_feature[base],
                                       &self.c_threshold[base], <int>self.depth[t + 1],
                                       leaf_index_next)
                    leaf_next = &self.c_leaf[self.leaf_offset[t + 1]]
                    for i in range(BLOCK):
                        out_block[i] = (out_block[i] + leaf[leaf_index[i]]
                                        + leaf_next[leaf_index_next[i]])
                    t += 2
                    continue
                for i in range(BLOCK):
                    out_block[i] += leaf[leaf_index[i]]
            elif depth <= MAX_DEPTH_COMPLETE:
                feature = &self.c_feature[self.inner_offset[t]]
                threshold = &self.c_threshold[self.inner_offset[t]]
                missing_left = &self.c_missing_left[self.inner_offset[t]]
                leaf = &self.c_leaf[self.leaf_offset[t]]
                base = (<intp_t>1 << depth) - 1
                i = row_start
                # Eight rows descend side by side: eight independent chains of loads
                # keep the core busy while each waits for its feature value.
                while not block_has_nan and i + LANES <= row_stop:
                    for u in range(LANES):
                        lane[u] = 0
                        row_ptr[u] = &X[i + u, 0]
                    for level in range(depth):
                        for u in range(LANES):
                            j = lane[u]
                            lane[u] = 2 * j + 1 + (row_ptr[u][feature[j]] > threshold[j])
                    for u in range(LANES):
                        out_block[i - row_start + u] += leaf[lane[u] - base]
                    i += LANES
                while i + LANES <= row_stop:
                    for u in range(LANES):
                        lane[u] = 0
                    for level in range(depth):
                        for u in range(LANES):
                            j = lane[u]
                            x = X[i + u, feature[j]]
                            go_right = (x > threshold[j]) | ((x != x) & (not missing_left[j]))
                            lane[u] = 2 * j + 1 + go_right
                    for u in range(LANES):
                        out_block[i - row_start + u] += leaf[lane[u] - base]
                    i += LANES
                while i < row_stop:
                    j = 0
                    for level in range(depth):
                        x = X[i, feature[j]]
                        go_right = (x > threshold[j]) | ((x != x) & (not missing_left[j]))
                        j = 2 * j + 1 + go_right
                    out_block[i - row_start] += leaf[j - base]
                    i += 1
            else:
                first = self.tree_offsets[self.tree_of[t]]
                tree = &self.nodes[first]
                for i in range(row_start, row_stop):
                    j = _leaf_of(tree, &X[i, 0])
                    out_block[i - row_start] += self.scaled_value[first + j]
            t += 1

    def apply(self, const float32_t[:, ::1] X):
        """Leaf (tree-relative node id) of every row in every tree, shape
        (n_samples, n_iterations, n_outputs)."""
        cdef intp_t n = X.shape[0], t, i
        leaves = np.zeros((n, self.n_trees), dtype=np.int32)
        cdef int32_t[:, ::1] out = leaves
        if X.shape[1] != self.n_features:
            raise ValueError(
                f"X has {X.shape[1]} features, but the model expects {self.n_features}")
        with nogil:
            for t in range(self.n_trees):
                for i in range(n):
                    out[i, t] = <int32_t>_leaf_of(&self.nodes[self.tree_offsets[t]], &X[i, 0])
        return leaves.reshape(n, self.n_iterations, self.n_outputs)

    def predict_raw_csr(self, const float32_t[::1] data, const int32_t[::1] indices,
                        const int64_t[::1] indptr, float64_t[:, ::1] out,
                        intp_t iteration_start=0, intp_t iteration_stop=-1,
                        int n_threads=1):
        """``predict_raw`` of rows given as CSR (compressed sparse rows).

        Row i holds ``data[indptr[i]:indptr[i + 1]]`` at the columns
        ``indices[indptr[i]:indptr[i + 1]]`` (distinct, each in [0, n_features):
        the caller checks) and 0.0 at every other column; NaN in ``data`` is a
        missing value. Each thread scatters one row at a time into a zeroed row of
        ``n_features`` floats (and clears it after): no block of X is ever dense.
        The leaves are those of the dense rows and each output's trees are added in
        iteration order, so the scores equal ``predict_raw`` of the dense rows bit
        for bit.
        """
        if iteration_stop < 0 or iteration_stop > self.n_iterations:
            iteration_stop = self.n_iterations
        iteration_start = min(max(iteration_start, 0), iteration_stop)
        cdef intp_t n = indptr.shape[0] - 1
        if out.shape[0] != n or out.shape[1] != self.n_outputs:
            raise ValueError(f"out must have shape ({n}, {self.n_outputs})")
        if indices.shape[0] != data.shape[0] or (n >= 0 and indptr[n] > data.shape[0]):
            raise ValueError("data, indices and indptr do not describe CSR rows")
        if n * (iteration_stop - iteration_start) * self.n_outputs < MIN_PARALLEL_WORK:
            n_threads = 1
        n_threads = max(1, n_threads)
        # One zeroed row per thread, each on cache lines of its own.
        cdef size_t stride = per_thread_stride(self.n_features, sizeof(float32_t))
        cdef void* row_block = calloc(n_threads * stride * sizeof(float32_t) + CACHE_LINE, 1)
        if row_block == NULL:
            raise MemoryError(f"cannot allocate {n_threads} rows of {self.n_features} "
                              "features")
        cdef float32_t* rows = <float32_t*>line_aligned(row_block)
        cdef intp_t i, k, m
        cdef int64_t p, first
        cdef float32_t* row
        cdef float64_t s
        try:
            with nogil:
                GBC_TRACE_REGION_BEGIN(GBC_TR_PREDICT, n)
                for i in prange(n, schedule="static", num_threads=n_threads):
                    row = rows + threadid() * stride
                    for p in range(indptr[i], indptr[i + 1]):
                        row[indices[p]] = data[p]
                    for k in range(self.n_outputs):
                        s = out[i, k]
                        for m in range(iteration_start, iteration_stop):
                            first = self.tree_offsets[m * self.n_outputs + k]
                            s = s + self.scaled_value[first + _leaf_of(&self.nodes[first],
                                                                       row)]
                        out[i, k] = s
                    for p in range(indptr[i], indptr[i + 1]):
                        row[indices[p]] = 0
                GBC_TRACE_REGION_END(GBC_TR_PREDICT, n)
        finally:
            free(row_block)

    def apply_csr(self, const float32_t[::1] data, const int32_t[::1] indices,
                  const int64_t[::1] indptr):
        """``apply`` of rows given as CSR (see ``predict_raw_csr``)."""
        cdef intp_t n = indptr.shape[0] - 1, t, i
        cdef int64_t p
        if indices.shape[0] != data.shape[0] or (n >= 0 and indptr[n] > data.shape[0]):
            raise ValueError("data, indices and indptr do not describe CSR rows")
        leaves = np.zeros((n, self.n_trees), dtype=np.int32)
        cdef int32_t[:, ::1] out = leaves
        cdef float32_t* row = <float32_t*>calloc(max(self.n_features, 1), sizeof(float32_t))
        if row == NULL:
            raise MemoryError(f"cannot allocate a row of {self.n_features} features")
        try:
            with nogil:
                for i in range(n):
                    for p in range(indptr[i], indptr[i + 1]):
                        row[indices[p]] = data[p]
                    for t in range(self.n_trees):
                        out[i, t] = <int32_t>_leaf_of(&self.nodes[self.tree_offsets[t]], row)
                    for p in range(indptr[i], indptr[i + 1]):
                        row[indices[p]] = 0
        finally:
            free(row)
        return leaves.reshape(n, self.n_iterations, self.n_outputs)


cdef inline intp_t _leaf_of_categorical(const node_t* tree, const float32_t* row,
                                        const uint8_t* categorical,
                                        const uint32_t* bitsets) noexcept nogil:
    """``_leaf_of`` for a tree with categorical splits: a node on a ``categorical``
    feature sends a row left when its code is in the node's set (row
    <intp_t>threshold of ``bitsets``, 8 words each); NaN, and a value that is no
    code (negative, or 256 and above), follow ``missing_go_left``."""
    cdef intp_t j = 0, code
    cdef float32_t x
    cdef bint go_left
    cdef const uint32_t* bits
    while tree[j].feature >= 0:
        x = row[tree[j].feature]
        if categorical[tree[j].feature]:
            if x >= 0 and x < 256:
                code = <intp_t>x
                bits = bitsets + 8 * <intp_t>tree[j].threshold
                go_left = (bits[code >> 5] >> (code & 31)) & 1
            else:
                go_left = tree[j].missing_go_left
        elif x != x:
            go_left = tree[j].missing_go_left
        else:
            go_left = x <= tree[j].threshold32
        j = tree[j].left if go_left else tree[j].right
    return j


def categorical_leaves(nodes, tree_offsets, bitsets, categorical, X, int n_threads=1):
    """The leaf of every row in every tree of a model with categorical splits (the
    numeric models' kernel, ``Predictor``, is not this one: it stays as it is).

    Parameters
    ----------
    nodes : NODE_DTYPE array
        The trees' nodes, concatenated (children tree-relative), valid trees
        (``_ensemble.validate_trees``).
    tree_offsets : int64 array of shape (n_trees + 1,)
    bitsets : uint32 array of shape (n_sets, 8)
        The category sets: a node on a categorical feature sends left the codes of
        row ``threshold`` (a whole number) of this table.
    categorical : bool array of shape (n_features,)
    X : float32 array of shape (n_samples, n_features)
        Category codes in the categorical columns (NaN missing; a value that is no
        code in [0, 256) goes where missing values go).
    n_threads : int, default=1

    Returns
    -------
    int32 array of shape (n_samples, n_trees)
        Tree-relative node indices, as ``apply`` gives them.
    """
    from ._common import NODE_DTYPE

    nodes = np.ascontiguousarray(nodes).astype(NODE_DTYPE, copy=False)
    cdef const node_t[::1] nd = nodes
    cdef const int64_t[::1] off = np.ascontiguousarray(tree_offsets, dtype=np.int64)
    bits_array = np.ascontiguousarray(bitsets, dtype=np.uint32).reshape(-1, 8)
    cat_array = np.ascontiguousarray(categorical, dtype=bool).astype(np.uint8)
    X_array = np.ascontiguousarray(X, dtype=np.float32)
    cdef intp_t n = X_array.shape[0], d = X_array.shape[1], t, i
    cdef intp_t n_trees = off.shape[0] - 1
    if cat_array.shape != (d,):
        raise ValueError(f"categorical must hold {d} booleans")
    feature = np.asarray(nodes["feature"])
    if feature.max(initial=-1) >= d:
        raise ValueError(f"a node splits on feature {feature.max()}, X has {d}")
    split_cat = (feature >= 0) & cat_array.astype(bool)[np.maximum(feature, 0)]
    rows = np.asarray(nodes["threshold"])[split_cat]
    if rows.size and not (np.all(rows == np.floor(rows)) and rows.min() >= 0
                          and rows.max() < bits_array.shape[0]):
        raise ValueError(f"a categorical node's set is not a row of the {bits_array.shape[0]} "
                         "category sets")
    out_array = np.zeros((n, max(n_trees, 0)), dtype=np.int32)
    if n == 0 or n_trees <= 0:
        return out_array
    cdef int32_t[:, ::1] out = out_array
    cdef const float32_t[:, ::1] x = X_array
    cdef const uint8_t[::1] cat = cat_array
    cdef const uint32_t[:, ::1] b = bits_array if bits_array.shape[0] else np.zeros((1, 8), np.uint32)
    GBC_TRACE_REGION_BEGIN(GBC_TR_PREDICT, n)
    for i in prange(n, schedule="static", num_threads=max(1, n_threads), nogil=True):
        for t in range(n_trees):
            out[i, t] = <int32_t>_leaf_of_categorical(&nd[off[t]], &x[i, 0], &cat[0], &b[0, 0])
    GBC_TRACE_REGION_END(GBC_TR_PREDICT, n)
    return out_array
