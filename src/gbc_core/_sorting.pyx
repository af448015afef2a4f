"""Sort every feature once per fit (stable LSD radix sort on float32 keys), and
encode class labels without sorting them (`encode_labels`)."""
cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport signbit
from libc.string cimport memset
from ._trace cimport *

import numpy as np

from ._common cimport (
    float32_t, int32_t, int64_t, uint32_t, intp_t, check_row_count, sort_key,
)


cdef enum:
    # Columns sorted at once (one per thread): each takes 12 bytes per row of
    # temporaries, so the presort holds at most 48 bytes per row besides the order,
    # less than the per-row state of the fit that follows, whatever the number of
    # threads (docs/reliability.md, "Memory of an exact fit").
    MAX_COLUMNS_AT_ONCE = 4


cdef intp_t _sort_column(
    const float32_t* column,
    intp_t n,
    int32_t* order_out,
    uint32_t* keys_a,
    uint32_t* keys_b,
    int32_t* idx_tmp,
) noexcept nogil:
    """Stable LSD radix sort of one column (n >= 1) into ``order_out``, 8-bit digits;
    returns the number of non-NaN values.

    The first pass over the column makes the keys and counts all four digits; a
    digit that is the same for every key takes no pass. The positions alternate
    between ``idx_tmp`` and ``order_out`` so that the last pass writes
    ``order_out``, and the keys between ``keys_a`` and ``keys_b`` (the last pass
    moves none): 12 bytes per row of temporaries.
    """
    cdef intp_t i, pos, total, dst, n_missing = 0
    cdef intp_t counts[4][256]
    cdef int[4] shifts
    cdef int d, digit, shift, p, n_passes = 0
    cdef uint32_t key, first
    cdef uint32_t* keys_in = keys_a
    cdef uint32_t* keys_out
    cdef const int32_t* idx_in = NULL
    cdef int32_t* idx_out
    memset(counts, 0, sizeof(counts))
    for i in range(n):
        key = sort_key(column[i])
        keys_a[i] = key
        counts[0][key & 0xFF] += 1
        counts[1][(key >> 8) & 0xFF] += 1
        counts[2][(key >> 16) & 0xFF] += 1
        counts[3][key >> 24] += 1
        n_missing += column[i] != column[i]
    first = keys_a[0]
    for d in range(4):
        if counts[d][(first >> (8 * d)) & 0xFF] != n:
            shifts[n_passes] = 8 * d
            n_passes += 1
    if n_passes == 0:
        for i in range(n):
            order_out[i] = <int32_t>i
        return n - n_missing
    for p in range(n_passes):
        shift = shifts[p]
        d = shift // 8
        pos = 0
        for digit in range(256):
            total = counts[d][digit]
            counts[d][digit] = pos
            pos += total
        idx_out = order_out if (n_passes - 1 - p) % 2 == 0 else idx_tmp
        keys_out = NULL if p == n_passes - 1 else (keys_b if keys_in == keys_a else keys_a)
        for i in range(n):
            key = keys_in[i]
            digit = (key >> shift) & 0xFF
            dst = counts[d][digit]
            counts[d][digit] = dst + 1
            if keys_out != NULL:
                keys_out[dst] = key
            idx_out[dst] = <int32_t>i if idx_in == NULL else idx_in[i]
        keys_in = keys_out
        idx_in = idx_out
    return n - n_missing


@cython.boundscheck(False)
def presort_features(
    const float32_t[::1, :] X,
    int32_t[:, ::1] order,
    int64_t[::1] n_nonmissing,
    int n_threads,
):
    """Sort each column of ``X`` (Fortran order) once.

    The scans read a feature's values through ``order`` from ``X`` itself (no
    sorted copy). Each thread sorts columns of its own, at most
    ``MAX_COLUMNS_AT_ONCE`` (4) at once, with 12 bytes per row of temporaries
    (NumPy arrays, so traced by ``tracemalloc``).

    Parameters
    ----------
    X : float32 array of shape (n_samples, n_features), Fortran order
    order : int32 array of shape (n_features, n_samples), output
        Row indices of each feature in ascending order of value (ties keep row
        order, -0.0 equals 0.0, NaN last).
    n_nonmissing : int64 array of shape (n_features,), output
        Number of non-NaN values of each feature.
    n_threads : int
        OpenMP threads (at most ``MAX_COLUMNS_AT_ONCE`` are used).
    """
    cdef intp_t n = X.shape[0]
    cdef intp_t d = X.shape[1]
    cdef intp_t f
    cdef int tid, n_sorting
    if n == 0 or d == 0:
        return
    check_row_count(n)
    if order.shape[0] != d or order.shape[1] != n or n_nonmissing.shape[0] != d:
        raise ValueError(f"order must have shape ({d}, {n}) and n_nonmissing ({d},)")
    n_sorting = <int>min(<intp_t>max(1, n_threads), d, <intp_t>MAX_COLUMNS_AT_ONCE)
    keys_arr = np.empty((n_sorting, 2, n), dtype=np.uint32)
    idx_arr = np.empty((n_sorting, n), dtype=np.int32)
    cdef uint32_t[:, :, ::1] keys = keys_arr
    cdef int32_t[:, ::1] idx = idx_arr
    with nogil:
        GBC_TRACE_REGION_BEGIN(GBC_TR_SORTING, n * d)
        for f in prange(d, schedule="static", num_threads=n_sorting):
            GBC_TRACE_TASK_BEGIN(GBC_TR_SORTING, f)
            tid = threadid()
            n_nonmissing[f] = _sort_column(&X[0, f], n, &order[f, 0], &keys[tid, 0, 0],
                                           &keys[tid, 1, 0], &idx[tid, 0])
            GBC_TRACE_TASK_END(GBC_TR_SORTING, f)
        GBC_TRACE_REGION_END(GBC_TR_SORTING, n * d)


ctypedef fused label_value_t:
    signed char
    short
    int
    long long
    unsigned char
    unsigned short
    unsigned int
    unsigned long long
    float
    double


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline intp_t _lower_bound(label_value_t[::1] classes, intp_t k,
                                label_value_t v) noexcept nogil:
    """The first position of ``classes[:k]`` (sorted) whose value is not below ``v``."""
    cdef intp_t lo = 0, hi = k, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if classes[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@cython.boundscheck(False)
@cython.wraparound(False)
def encode_labels(const label_value_t[::1] y, label_value_t[::1] classes,
                  int32_t[::1] codes):
    """The distinct labels of ``y`` in increasing order and the code of every row,
    without sorting ``y`` (a classifier has few classes): ``classes`` (room for at
    most ``classes.shape[0]`` of them) is kept sorted while ``y`` is read once, then
    each row's code is found by a binary search in it. No buffer of ``y``'s size is
    allocated besides ``codes`` (int32, one per row).

    Floats must be finite (no NaN). Returns the number of distinct labels, or -1 when
    there are more than ``classes`` holds, or when both -0.0 and 0.0 occur (equal
    labels whose kept sign is a choice of the sort: the caller uses ``np.unique``).
    """
    cdef intp_t i, n = y.shape[0], k = 0, room = classes.shape[0], lo, j
    cdef label_value_t v
    cdef bint signed_zero = False, unsigned_zero = False, fits = True
    with nogil:
        for i in range(n):
            v = y[i]
            lo = _lower_bound(classes, k, v)
            if label_value_t is float or label_value_t is double:
                if v == 0:
                    if signbit(v):
                        signed_zero = True
                    else:
                        unsigned_zero = True
            if lo < k and classes[lo] == v:
                continue
            if k == room:
                fits = False
                break
            j = k
            while j > lo:
                classes[j] = classes[j - 1]
                j -= 1
            classes[lo] = v
            k += 1
        if fits and not (signed_zero and unsigned_zero):
            for i in range(n):
                v = y[i]
                lo = _lower_bound(classes, k, v)
                codes[i] = <int32_t>lo
    if not fits or (signed_zero and unsigned_zero):
        return -1
    return k
