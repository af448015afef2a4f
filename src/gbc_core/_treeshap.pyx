"""Exact path-dependent TreeSHAP (Lundberg, Erion and Lee 2018, "Consistent
individualized feature attribution for tree ensembles", Algorithm 2), GIL released.

For one row and one tree, the contribution phi_f of feature f is its Shapley value
in the game v(S) = E[T(x) | x_S], where the conditional expectation follows the
row's path on the features of S and, at a split on any other feature, averages both
children weighted by their covers (the in-bag sample weight a node saw in the fit,
``weighted_n``). The recursion below keeps, along the path from the root, the
"unique path" of the features split on so far with the fractions of the covers
that flow down it (``zero_fraction``: the cover fraction, for the feature left out
of S; ``one_fraction``: 1 where the row goes, 0 elsewhere, for the feature in S)
and the weights of every subset size (``pweight``), extending it at each node and
unwinding it at each leaf, in O(depth^2) per leaf.

A model with categorical splits routes a row at a node on a categorical feature by
the node's category set (``_rows.pxd``'s ``code_in_set``, the rule of
``_predictor.categorical_leaves``): ``_recurse`` is compiled twice, once per kind of
model (the fused type ``sets_t``), so the numeric models' recursion has no
categorical test in it.

Rows are processed by OpenMP threads (each row by one thread, trees in iteration
order), so the result does not depend on the number of threads; every thread owns
one path buffer, allocated once per call.
"""
cimport cython
from cython.parallel cimport prange, threadid
from libc.stdlib cimport calloc, malloc, free

import numpy as np

from ._common cimport (
    CACHE_LINE, float32_t, float64_t, int32_t, int64_t, intp_t, node_t, uint8_t, uint32_t,
    line_aligned, per_thread_stride)
from ._categorical cimport CAT_WORDS
from ._rows cimport code_in_set


ctypedef struct path_t:
    int32_t feature         # the feature split on (-1: the root's placeholder)
    float64_t zero_fraction  # cover fraction flowing down this path, feature left out
    float64_t one_fraction   # 1 if the row follows this path, 0 otherwise, feature in
    float64_t pweight        # weight of the subsets of each size


ctypedef struct category_sets_t:
    # A model with categorical splits: a node on a feature f with categorical[f] != 0
    # sends left the codes of its set, row <intp_t>threshold of ``bitsets``
    # (CAT_WORDS words each).
    const uint8_t* categorical
    const uint32_t* bitsets


ctypedef struct no_category_sets_t:
    # A numeric model (the same fields, never read: every split is on a threshold).
    const uint8_t* categorical
    const uint32_t* bitsets


ctypedef fused sets_t:
    # The kind of model ``_recurse`` is compiled for.
    no_category_sets_t
    category_sets_t


cdef enum:
    # Fewer rows than this run on one thread (the result is the same either way).
    MIN_PARALLEL_ROWS = 64


cdef inline void _extend(path_t* path, intp_t depth, float64_t zero_fraction,
                         float64_t one_fraction, int32_t feature) noexcept nogil:
    """Add a feature to the path of length ``depth`` (EXTEND of Algorithm 2)."""
    cdef intp_t i
    path[depth].feature = feature
    path[depth].zero_fraction = zero_fraction
    path[depth].one_fraction = one_fraction
    path[depth].pweight = 1.0 if depth == 0 else 0.0
    i = depth - 1
    while i >= 0:
        path[i + 1].pweight += one_fraction * path[i].pweight * (i + 1) / <float64_t>(depth + 1)
        path[i].pweight = zero_fraction * path[i].pweight * (depth - i) / <float64_t>(depth + 1)
        i -= 1


cdef inline void _unwind(path_t* path, intp_t depth, intp_t index) noexcept nogil:
    """Remove element ``index`` from the path of length ``depth`` + 1 (UNWIND)."""
    cdef float64_t one_fraction = path[index].one_fraction
    cdef float64_t zero_fraction = path[index].zero_fraction
    cdef float64_t next_one_portion = path[depth].pweight, tmp
    cdef intp_t i = depth - 1
    while i >= 0:
        if one_fraction != 0:
            tmp = path[i].pweight
            path[i].pweight = next_one_portion * (depth + 1) / ((i + 1) * one_fraction)
            next_one_portion = tmp - path[i].pweight * zero_fraction * (depth - i) / <float64_t>(depth + 1)
        else:
            path[i].pweight = path[i].pweight * (depth + 1) / (zero_fraction * (depth - i))
        i -= 1
    for i in range(index, depth):
        path[i].feature = path[i + 1].feature
        path[i].zero_fraction = path[i + 1].zero_fraction
        path[i].one_fraction = path[i + 1].one_fraction


cdef inline float64_t _unwound_sum(const path_t* path, intp_t depth,
                                   intp_t index) noexcept nogil:
    """The total weight of the path with element ``index`` unwound (without
    changing the path)."""
    cdef float64_t one_fraction = path[index].one_fraction
    cdef float64_t zero_fraction = path[index].zero_fraction
    cdef float64_t next_one_portion = path[depth].pweight, tmp, total = 0.0
    cdef intp_t i = depth - 1
    while i >= 0:
        if one_fraction != 0:
            tmp = next_one_portion * (depth + 1) / ((i + 1) * one_fraction)
            total += tmp
            next_one_portion = path[i].pweight - tmp * zero_fraction * (
                (depth - i) / <float64_t>(depth + 1))
        elif zero_fraction != 0:
            total += (path[i].pweight / zero_fraction) / ((depth - i) / <float64_t>(depth + 1))
        i -= 1
    return total


cdef void _recurse(const sets_t* sets, const node_t* tree, const float64_t* value,
                   const float32_t* row, float64_t* phi, intp_t node, intp_t depth,
                   path_t* parent_path, float64_t parent_zero, float64_t parent_one,
                   int32_t parent_feature) noexcept nogil:
    """Add the contributions of the subtree at ``node`` to ``phi`` (RECURSE); ``sets``:
    the category sets of a model with categorical splits (``category_sets_t``), or
    none (``no_category_sets_t``: every split on a threshold)."""
    cdef path_t* path = parent_path + depth + 1
    cdef intp_t i, hot, cold, index
    cdef float64_t w, scale, incoming_zero = 1.0, incoming_one = 1.0
    cdef float32_t x
    cdef int32_t feature
    cdef bint go_right
    for i in range(depth):
        path[i] = parent_path[i]
    _extend(path, depth, parent_zero, parent_one, parent_feature)
    feature = tree[node].feature
    if feature < 0:
        for i in range(1, depth + 1):
            w = _unwound_sum(path, depth, i)
            phi[path[i].feature] += (w * (path[i].one_fraction - path[i].zero_fraction)
                                     * value[node])
        return
    x = row[feature]
    if sets_t is category_sets_t:
        if sets.categorical[feature]:
            go_right = not code_in_set(
                x, sets.bitsets + CAT_WORDS * <intp_t>tree[node].threshold,
                tree[node].missing_go_left)
        elif x != x:
            go_right = not tree[node].missing_go_left
        else:
            go_right = x > tree[node].threshold32
    else:
        if x != x:
            go_right = not tree[node].missing_go_left
        else:
            go_right = x > tree[node].threshold32
    if go_right:
        hot, cold = tree[node].right, tree[node].left
    else:
        hot, cold = tree[node].left, tree[node].right
    # A feature split on higher up: undo that split, its fractions carry on below.
    index = 0
    while index <= depth:
        if path[index].feature == feature:
            break
        index += 1
    if index != depth + 1:
        incoming_zero = path[index].zero_fraction
        incoming_one = path[index].one_fraction
        _unwind(path, depth, index)
        depth -= 1
    w = tree[node].weighted_n
    _recurse(sets, tree, value, row, phi, hot, depth + 1, path,
             tree[hot].weighted_n / w * incoming_zero, incoming_one, feature)
    scale = tree[cold].weighted_n / w * incoming_zero
    if scale != 0:
        # (A child of zero cover adds exactly nothing where the row does not go.)
        _recurse(sets, tree, value, row, phi, cold, depth + 1, path, scale, 0.0, feature)


cdef float64_t _expected(const node_t* tree, const float64_t* value,
                         intp_t node) noexcept nogil:
    """The cover-weighted mean of the leaf values below ``node``."""
    cdef float64_t w
    if tree[node].feature < 0:
        return value[node]
    w = tree[node].weighted_n
    return (tree[tree[node].left].weighted_n / w * _expected(tree, value, tree[node].left)
            + tree[tree[node].right].weighted_n / w
            * _expected(tree, value, tree[node].right))


@cython.final
cdef class TreeShap:
    """The trees of an ensemble, ready for TreeSHAP.

    Parameters
    ----------
    nodes : NODE_DTYPE array
        Every tree's nodes, concatenated (validated by the caller; every inner node
        has ``weighted_n > 0``).
    tree_offsets : int64 array of shape (n_trees + 1,)
    scaled_value : float64 array of shape (n_nodes,)
        ``learning_rate * value``: what each leaf adds to its output's raw score.
    n_features, n_outputs : int
        Tree t adds to output ``t % n_outputs``.
    categorical : bool array of shape (n_features,), default=None
        The categorical features of a model with categorical splits (None: a numeric
        model). A node on a categorical feature sends left the rows whose category
        code is in the node's set, row ``int(threshold)`` of ``category_sets``; NaN,
        and a value outside [0, 256), go where missing values go
        (``missing_go_left``); a value inside is the code of its whole part (codes
        are whole numbers): the rule of ``_rows.pxd``'s ``code_in_set`` and
        ``_predictor.categorical_leaves``. Given with ``category_sets`` or not at
        all; a mask without a categorical feature is a numeric model.
    category_sets : uint32 array of shape (n_sets, 8), default=None
        The category sets of the model's categorical nodes: code c is in row s when
        bit ``c % 32`` of ``category_sets[s, c // 32]`` is set.

    Raises
    ------
    ValueError
        If only one of ``categorical`` and ``category_sets`` is given, either has the
        wrong shape, a node splits on a feature beyond ``n_features``, or a
        categorical node's ``threshold`` is not a row of ``category_sets``.
    """
    cdef:
        readonly intp_t n_trees
        readonly intp_t n_features
        readonly intp_t n_outputs
        readonly intp_t max_depth
        # Whether the mask has a categorical feature (the other recursion).
        readonly bint has_category_sets
        const node_t[::1] nodes
        const int64_t[::1] tree_offsets
        const float64_t[::1] value
        # The categorical features and the sets (at least one row: a placeholder
        # when the table is empty), when has_category_sets.
        const uint8_t[::1] categorical
        const uint32_t[:, ::1] category_sets

    def __init__(self, nodes, tree_offsets, scaled_value, intp_t n_features,
                 intp_t n_outputs, categorical=None, category_sets=None):
        self.nodes = np.ascontiguousarray(nodes)
        self.tree_offsets = np.ascontiguousarray(tree_offsets, dtype=np.int64)
        self.value = np.ascontiguousarray(scaled_value, dtype=np.float64)
        self.n_trees = self.tree_offsets.shape[0] - 1
        self.n_features = n_features
        self.n_outputs = n_outputs
        self.has_category_sets = False
        if categorical is not None or category_sets is not None:
            self._set_categories(categorical, category_sets)
        # The true depth (the nodes' depth field saturates at 255); children come
        # after their parents.
        cdef intp_t t, j, first, size
        cdef const node_t* tree
        depth = np.zeros(self.nodes.shape[0] + 1, dtype=np.int64)
        cdef int64_t[::1] d = depth
        self.max_depth = 0
        for t in range(self.n_trees):
            first = self.tree_offsets[t]
            size = self.tree_offsets[t + 1] - first
            tree = &self.nodes[first]
            for j in range(size):
                if tree[j].feature >= 0:
                    d[first + tree[j].left] = d[first + j] + 1
                    d[first + tree[j].right] = d[first + j] + 1
                elif d[first + j] > self.max_depth:
                    self.max_depth = d[first + j]

    def _set_categories(self, categorical, category_sets):
        """Check and keep the categorical features and the category sets."""
        if categorical is None or category_sets is None:
            raise ValueError("categorical and category_sets go together: give both "
                             "(a model with categorical splits) or neither")
        mask = np.asarray(categorical)
        if mask.shape != (self.n_features,) or not (
                mask.dtype == np.bool_ or np.isin(mask, (0, 1)).all()):
            raise ValueError(f"categorical must hold {self.n_features} booleans "
                             f"(one per feature), got shape {mask.shape}")
        mask = mask.astype(bool)
        table = np.asarray(category_sets)
        if (table.ndim != 2 or table.shape[1] != CAT_WORDS
                or not (table.dtype.kind in "ui" or table.size == 0)
                or (table.size and (table.min() < 0 or table.max() > 0xFFFFFFFF))):
            raise ValueError(f"category_sets must be a table of uint32 words of shape "
                             f"(n_sets, {CAT_WORDS}), got {table.dtype} of shape "
                             f"{table.shape}")
        nodes = np.asarray(self.nodes)
        feature = nodes["feature"].astype(np.int64)
        if feature.max(initial=-1) >= self.n_features:
            raise ValueError(f"a node splits on feature {feature.max()}, the model has "
                             f"{self.n_features} features")
        split_cat = (feature >= 0) & mask[np.maximum(feature, 0)]
        rows = nodes["threshold"][split_cat]
        if rows.size and not (np.all(rows == np.floor(rows)) and rows.min() >= 0
                              and rows.max() < table.shape[0]):
            bad = np.flatnonzero(split_cat)[
                ~((rows == np.floor(rows)) & (rows >= 0) & (rows < table.shape[0]))][0]
            offsets = np.asarray(self.tree_offsets)
            t = int(np.searchsorted(offsets, bad, side="right")) - 1
            raise ValueError(
                f"tree {t}, node {bad - int(offsets[t])}: a categorical node's "
                f"threshold {nodes['threshold'][bad]!r} is not a row of the "
                f"{table.shape[0]} category sets")
        if not mask.any():
            return  # no categorical feature: a numeric model
        self.categorical = mask.astype(np.uint8)
        self.category_sets = (np.ascontiguousarray(table, dtype=np.uint32) if table.shape[0]
                              else np.zeros((1, CAT_WORDS), dtype=np.uint32))
        self.has_category_sets = True

    def expected_values(self, init_raw):
        """Per output, F0 plus each tree's cover-weighted mean leaf contribution, added
        in iteration order: the raw score with no feature known."""
        out = np.array(init_raw, dtype=np.float64)
        cdef float64_t[::1] e = out
        cdef intp_t t
        for t in range(self.n_trees):
            e[t % self.n_outputs] += _expected(&self.nodes[self.tree_offsets[t]],
                                               &self.value[self.tree_offsets[t]], 0)
        return out

    cdef void _category_sets(self, no_category_sets_t* no_sets,
                             category_sets_t* sets) noexcept:
        """Fill the two kinds of sets ``_recurse`` takes (the numeric one unread)."""
        no_sets.categorical = NULL
        no_sets.bitsets = NULL
        sets.categorical = NULL
        sets.bitsets = NULL
        if self.has_category_sets:
            sets.categorical = &self.categorical[0]
            sets.bitsets = &self.category_sets[0, 0]

    def contributions(self, const float32_t[:, ::1] X, float64_t[:, :, ::1] out,
                      int n_threads=1):
        """Add every tree's feature contributions of each row to ``out``.

        Parameters
        ----------
        X : float32 array of shape (n_samples, n_features), C order
        out : float64 array of shape (n_samples, n_outputs, n_features + 1), C order
            ``out[i, k, f]`` gains phi_f of row i for output k (the last column,
            the expected value, is left as it is).
        n_threads : int
        """
        if X.shape[1] != self.n_features:
            raise ValueError(
                f"X has {X.shape[1]} features, but the model expects {self.n_features}")
        if (out.shape[0] != X.shape[0] or out.shape[1] != self.n_outputs
                or out.shape[2] != self.n_features + 1):
            raise ValueError(f"out must have shape ({X.shape[0]}, {self.n_outputs}, "
                             f"{self.n_features + 1})")
        cdef intp_t n = X.shape[0], i, t
        # The unique paths of every recursion level: level d starts d (d + 1) / 2
        # elements after the root's, d <= max_depth + 1.
        cdef intp_t path_size = (self.max_depth + 2) * (self.max_depth + 3) // 2
        if n < MIN_PARALLEL_ROWS:
            n_threads = 1
        n_threads = max(1, n_threads)
        # Each thread's paths on cache lines of its own (``per_thread_stride``).
        cdef size_t path_stride = per_thread_stride(path_size, sizeof(path_t))
        cdef void* path_block = malloc(n_threads * path_stride * sizeof(path_t) + CACHE_LINE)
        if path_block == NULL:
            raise MemoryError(f"cannot allocate {n_threads} TreeSHAP paths of "
                              f"{path_size} elements")
        cdef path_t* paths = <path_t*>line_aligned(path_block)
        cdef path_t* path
        cdef no_category_sets_t no_sets
        cdef category_sets_t sets
        self._category_sets(&no_sets, &sets)
        cdef bint with_sets = self.has_category_sets
        try:
            with nogil:
                for i in prange(n, schedule="dynamic", num_threads=n_threads):
                    path = paths + threadid() * path_stride
                    for t in range(self.n_trees):
                        if with_sets:
                            _recurse(&sets, &self.nodes[self.tree_offsets[t]],
                                     &self.value[self.tree_offsets[t]], &X[i, 0],
                                     &out[i, t % self.n_outputs, 0], 0, 0, path, 1.0, 1.0,
                                     -1)
                        else:
                            _recurse(&no_sets, &self.nodes[self.tree_offsets[t]],
                                     &self.value[self.tree_offsets[t]], &X[i, 0],
                                     &out[i, t % self.n_outputs, 0], 0, 0, path, 1.0, 1.0,
                                     -1)
        finally:
            free(path_block)

    def contributions_csr(self, const float32_t[::1] data, const int32_t[::1] indices,
                          const int64_t[::1] indptr, float64_t[:, :, ::1] out,
                          int n_threads=1):
        """``contributions`` of rows given as CSR (compressed sparse rows): row i
        holds ``data[indptr[i]:indptr[i + 1]]`` at the columns
        ``indices[indptr[i]:indptr[i + 1]]`` (distinct, in [0, n_features): the
        caller checks) and 0.0 elsewhere. Each thread scatters one row at a time
        into a zeroed row of ``n_features`` floats, cleared after: the same
        contributions as the dense rows, bit for bit."""
        cdef intp_t n = indptr.shape[0] - 1, i, t
        cdef int64_t p
        if (out.shape[0] != n or out.shape[1] != self.n_outputs
                or out.shape[2] != self.n_features + 1):
            raise ValueError(f"out must have shape ({n}, {self.n_outputs}, "
                             f"{self.n_features + 1})")
        if indices.shape[0] != data.shape[0] or (n >= 0 and indptr[n] > data.shape[0]):
            raise ValueError("data, indices and indptr do not describe CSR rows")
        cdef intp_t path_size = (self.max_depth + 2) * (self.max_depth + 3) // 2
        if n < MIN_PARALLEL_ROWS:
            n_threads = 1
        n_threads = max(1, n_threads)
        # Each thread's paths and zeroed row on cache lines of their own.
        cdef size_t path_stride = per_thread_stride(path_size, sizeof(path_t))
        cdef size_t row_stride = per_thread_stride(self.n_features, sizeof(float32_t))
        cdef void* path_block = malloc(n_threads * path_stride * sizeof(path_t) + CACHE_LINE)
        cdef void* row_block = calloc(n_threads * row_stride * sizeof(float32_t) + CACHE_LINE,
                                      1)
        if path_block == NULL or row_block == NULL:
            free(path_block)
            free(row_block)
            raise MemoryError(f"cannot allocate {n_threads} TreeSHAP paths and rows")
        cdef path_t* paths = <path_t*>line_aligned(path_block)
        cdef float32_t* rows = <float32_t*>line_aligned(row_block)
        cdef path_t* path
        cdef float32_t* row
        cdef no_category_sets_t no_sets
        cdef category_sets_t sets
        self._category_sets(&no_sets, &sets)
        cdef bint with_sets = self.has_category_sets
        try:
            with nogil:
                for i in prange(n, schedule="dynamic", num_threads=n_threads):
                    path = paths + threadid() * path_stride
                    row = rows + threadid() * row_stride
                    for p in range(indptr[i], indptr[i + 1]):
                        row[indices[p]] = data[p]
                    for t in range(self.n_trees):
                        if with_sets:
                            _recurse(&sets, &self.nodes[self.tree_offsets[t]],
                                     &self.value[self.tree_offsets[t]], row,
                                     &out[i, t % self.n_outputs, 0], 0, 0, path, 1.0, 1.0,
                                     -1)
                        else:
                            _recurse(&no_sets, &self.nodes[self.tree_offsets[t]],
                                     &self.value[self.tree_offsets[t]], row,
                                     &out[i, t % self.n_outputs, 0], 0, 0, path, 1.0, 1.0,
                                     -1)
                    for p in range(indptr[i], indptr[i + 1]):
                        row[indices[p]] = 0
        finally:
            free(path_block)
            free(row_block)
