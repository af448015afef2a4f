"""The leaf of every out-of-bag row of a grown tree (stochastic boosting), routed on
raw values by the stored thresholds, as the model predicts: a bin empty in a node's
in-bag rows may straddle a threshold placed between the values of its rows, so the
rows are not routed on bins here.
"""
cimport cython
from cython.parallel cimport prange

from ._common cimport float32_t, int32_t, int64_t, uint8_t, uint32_t, intp_t, node_t
from ._rows cimport value_goes_left, code_in_set
from ._categorical cimport CAT_WORDS
from ._trace cimport *

cdef enum:
    # Below this many rows the routing runs on one thread.
    MIN_PARALLEL_ROWS = 200000


@cython.final
cdef class OutOfBagRouter:
    """Route the out-of-bag rows of grown trees to their leaves.

    Parameters
    ----------
    X : float32 array of shape (n_samples, n_features), Fortran order, or None
        The dense features; None with ``columns``.
    columns : tuple (data, indices, indptr) or None
        The features as sparse columns (CSC: float32 ``data``, int32 row
        ``indices`` ascending within each column, int64 ``indptr`` of n_features +
        1; a row absent from a column holds 0.0), checked by the caller.
    n_samples : int
    n_threads : int
    """

    def __init__(self, const float32_t[::1, :] X, columns, intp_t n_samples,
                 int n_threads):
        self.sparse = columns is not None
        if self.sparse:
            self.col_data, self.col_rows, self.col_start = columns
        else:
            self.X = X
        self.n_samples = n_samples
        self.n_threads = n_threads

    cdef bint _goes_left(self, intp_t row, const node_t* nd, const uint8_t* categorical,
                         const uint32_t* cat_bits) noexcept nogil:
        """Where the split ``nd`` sends ``row``, by its threshold on raw values (a
        split of a ``categorical`` feature: by its set, row <intp_t>threshold of
        ``cat_bits``)."""
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
        if categorical != NULL and categorical[nd.feature]:
            return code_in_set(x, cat_bits + CAT_WORDS * <intp_t>nd.threshold,
                               nd.missing_go_left != 0)
        return value_goes_left(x, nd.threshold32, nd.missing_go_left != 0)

    cdef void route(self, const node_t* nodes, const uint8_t[::1] sample_mask,
                    int32_t* node_of_row, const uint8_t* categorical,
                    const uint32_t* cat_bits) noexcept nogil:
        """Set ``node_of_row`` of every row out of the bag (``sample_mask`` 0): the
        leaf of the tree ``nodes`` it falls in."""
        cdef intp_t i
        cdef int32_t node
        cdef int n_threads = self.n_threads if self.n_samples >= MIN_PARALLEL_ROWS else 1
        GBC_TRACE_REGION_BEGIN(GBC_TR_OUT_OF_BAG, self.n_samples)
        for i in prange(self.n_samples, schedule="static", num_threads=n_threads):
            if sample_mask[i]:
                continue
            node = 0
            while nodes[node].feature >= 0:
                if self._goes_left(i, &nodes[node], categorical, cat_bits):
                    node = nodes[node].left
                else:
                    node = nodes[node].right
            node_of_row[i] = node
        GBC_TRACE_REGION_END(GBC_TR_OUT_OF_BAG, self.n_samples)
