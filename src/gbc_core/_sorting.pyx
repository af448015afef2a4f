"""Sort every feature once per fit (stable LSD radix sort on float32 keys), and
encode class labels without sorting them (`encode_labels`)."""
cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport signbit
from libc.string cimport memset

import numpy as np

from ._common cimport float32_t, int32_t, int64_t, uint32_t, intp_t, sort_key


# From this many rows on, a multi-threaded presort sorts one feature at a time with
# every thread, which share its temporaries (12 bytes per row); below it, each thread
# sorts features of its own with temporaries of its own (the parallel regions of a
# shared sort would cost more than the sort of a short column).
# Per chunk of a column (CHUNK_COUNTS): the counts of its four 8-bit digits, then its
# NaN count (padded to a cache line).
cdef enum:
    COOPERATIVE_SORT_ROWS = 65536
    CHUNK_COUNTS = 4 * 256 + 8


cdef inline intp_t _chunk_start(intp_t n, int n_chunks, int t) noexcept nogil:
    return <intp_t>((<long long>n * t) // n_chunks)


cdef void _keys_and_counts(const float32_t* column, intp_t lo, intp_t hi,
                           uint32_t* keys, intp_t* counts) noexcept nogil:
    """The sort keys of rows lo .. hi-1, the counts of each of their four digits
    (``counts[256 * d + digit]`` for the digit of bits 8d .. 8d+7) and their NaN
    count (``counts[1024]``)."""
    cdef intp_t i, missing = 0
    cdef uint32_t key
    memset(counts, 0, CHUNK_COUNTS * sizeof(intp_t))
    for i in range(lo, hi):
        key = sort_key(column[i])
        keys[i] = key
        counts[key & 0xFF] += 1
        counts[256 + ((key >> 8) & 0xFF)] += 1
        counts[512 + ((key >> 16) & 0xFF)] += 1
        counts[768 + (key >> 24)] += 1
        missing += column[i] != column[i]
    counts[1024] = missing


cdef void _count_digit(const uint32_t* keys, intp_t lo, intp_t hi, int shift,
                       intp_t* counts) noexcept nogil:
    """``counts[digit]``: how many of the keys lo .. hi-1 have this digit."""
    cdef intp_t i
    memset(counts, 0, 256 * sizeof(intp_t))
    for i in range(lo, hi):
        counts[(keys[i] >> shift) & 0xFF] += 1


cdef void _scatter(const uint32_t* keys_in, const int32_t* idx_in, intp_t lo, intp_t hi,
                   int shift, intp_t* offsets, uint32_t* keys_out,
                   int32_t* idx_out) noexcept nogil:
    """Move positions lo .. hi-1, in order, each to ``offsets[its digit]`` (then
    incremented): one chunk of a stable counting-sort pass. ``idx_in`` NULL: the
    identity; ``keys_out`` NULL: the keys are not needed any more."""
    cdef intp_t i, dst
    cdef uint32_t key
    cdef int digit
    for i in range(lo, hi):
        key = keys_in[i]
        digit = (key >> shift) & 0xFF
        dst = offsets[digit]
        offsets[digit] = dst + 1
        if keys_out != NULL:
            keys_out[dst] = key
        idx_out[dst] = <int32_t>i if idx_in == NULL else idx_in[i]


cdef intp_t _sort_column(
    const float32_t* column,
    intp_t n,
    int32_t* order_out,
    uint32_t* keys_a,
    uint32_t* keys_b,
    int32_t* idx_tmp,
    intp_t* counts,
    int n_chunks,
) noexcept nogil:
    """Stable LSD radix sort of one column (n >= 1) into ``order_out`` (8-bit
    digits; a pass whose digit is the same for every key is skipped); returns the
    number of non-NaN values.

    The column is cut into ``n_chunks`` consecutive chunks, each counted and moved
    by a thread of its own (1: by the calling thread alone). A digit's positions are
    handed to the chunks in chunk order, so the result is the stable order whatever
    the number of chunks. Temporaries: ``keys_a``, ``keys_b`` and ``idx_tmp`` (n
    each) and ``counts`` (``n_chunks`` x ``CHUNK_COUNTS``).
    """
    cdef intp_t i, pos, n_missing = 0, total
    cdef int[4] shifts
    cdef int t, d, digit, shift, p, n_passes = 0
    cdef uint32_t* keys_in = keys_a
    cdef uint32_t* keys_out
    cdef const int32_t* idx_in = NULL
    cdef int32_t* idx_out
    cdef uint32_t first
    if n_chunks == 1:
        _keys_and_counts(column, 0, n, keys_a, counts)
    else:
        for t in prange(n_chunks, schedule="static", num_threads=n_chunks):
            _keys_and_counts(column, _chunk_start(n, n_chunks, t),
                             _chunk_start(n, n_chunks, t + 1), keys_a,
                             counts + t * CHUNK_COUNTS)
    first = keys_a[0]
    for d in range(4):
        total = 0
        for t in range(n_chunks):
            total += counts[t * CHUNK_COUNTS + 256 * d + ((first >> (8 * d)) & 0xFF)]
        if total != n:
            shifts[n_passes] = 8 * d
            n_passes += 1
    for t in range(n_chunks):
        n_missing += counts[t * CHUNK_COUNTS + 1024]
    if n_passes == 0:
        for i in range(n):
            order_out[i] = <int32_t>i
        return n - n_missing
    for p in range(n_passes):
        shift = shifts[p]
        if p > 0:
            # (The first pass's counts are those of the keys' own order, above.)
            if n_chunks == 1:
                _count_digit(keys_in, 0, n, shift, counts + 256 * (shift // 8))
            else:
                for t in prange(n_chunks, schedule="static", num_threads=n_chunks):
                    _count_digit(keys_in, _chunk_start(n, n_chunks, t),
                                 _chunk_start(n, n_chunks, t + 1), shift,
                                 counts + t * CHUNK_COUNTS + 256 * (shift // 8))
        # Offsets: digit by digit, chunk by chunk within a digit (stable).
        pos = 0
        for digit in range(256):
            for t in range(n_chunks):
                i = t * CHUNK_COUNTS + 256 * (shift // 8) + digit
                total = counts[i]
                counts[i] = pos
                pos += total
        # The last pass writes order_out; the ones before alternate with idx_tmp.
        idx_out = order_out if (n_passes - 1 - p) % 2 == 0 else idx_tmp
        keys_out = NULL if p == n_passes - 1 else (keys_b if keys_in == keys_a else keys_a)
        if n_chunks == 1:
            _scatter(keys_in, idx_in, 0, n, shift, counts + 256 * (shift // 8), keys_out,
                     idx_out)
        else:
            for t in prange(n_chunks, schedule="static", num_threads=n_chunks):
                _scatter(keys_in, idx_in, _chunk_start(n, n_chunks, t),
                         _chunk_start(n, n_chunks, t + 1), shift,
                         counts + t * CHUNK_COUNTS + 256 * (shift // 8), keys_out,
                         idx_out)
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
    sorted copy). Temporaries: 12 bytes per row for each column being sorted at
    once, NumPy arrays (so traced by ``tracemalloc``). From ``COOPERATIVE_SORT_ROWS``
    rows on, every thread works on one column at a time (12 bytes per row in all,
    whatever the number of threads); below it, each thread sorts columns of its own.
    The order is the same either way.

    Parameters
    ----------
    X : float32 array of shape (n_samples, n_features), Fortran order
    order : int32 array of shape (n_features, n_samples), output
        Row indices of each feature in ascending order of value (ties keep row
        order, -0.0 equals 0.0, NaN last).
    n_nonmissing : int64 array of shape (n_features,), output
        Number of non-NaN values of each feature.
    n_threads : int
        OpenMP threads.
    """
    cdef intp_t n = X.shape[0]
    cdef intp_t d = X.shape[1]
    cdef intp_t f
    cdef int tid, n_sorting, n_chunks
    if n == 0 or d == 0:
        return
    if n > 2147483647:
        raise ValueError("at most 2**31 - 1 samples are supported")
    if order.shape[0] != d or order.shape[1] != n or n_nonmissing.shape[0] != d:
        raise ValueError(f"order must have shape ({d}, {n}) and n_nonmissing ({d},)")
    n_threads = max(1, n_threads)
    if n >= COOPERATIVE_SORT_ROWS:
        n_sorting = 1               # columns sorted at once
        n_chunks = <int>min(<intp_t>n_threads, n // 4096)  # threads per column
    else:
        n_sorting = <int>min(<intp_t>n_threads, d)
        n_chunks = 1
    keys_arr = np.empty((n_sorting, 2, n), dtype=np.uint32)
    idx_arr = np.empty((n_sorting, n), dtype=np.int32)
    counts_arr = np.empty((n_sorting, n_chunks * CHUNK_COUNTS), dtype=np.intp)
    cdef uint32_t[:, :, ::1] keys = keys_arr
    cdef int32_t[:, ::1] idx = idx_arr
    cdef intp_t[:, ::1] counts = counts_arr
    with nogil:
        if n_sorting == 1:
            for f in range(d):
                n_nonmissing[f] = _sort_column(&X[0, f], n, &order[f, 0], &keys[0, 0, 0],
                                               &keys[0, 1, 0], &idx[0, 0], &counts[0, 0],
                                               n_chunks)
        else:
            for f in prange(d, schedule="static", num_threads=n_sorting):
                tid = threadid()
                n_nonmissing[f] = _sort_column(&X[0, f], n, &order[f, 0],
                                               &keys[tid, 0, 0], &keys[tid, 1, 0],
                                               &idx[tid, 0], &counts[tid, 0], 1)


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
    cdef intp_t i, n = y.shape[0], k = 0, room = classes.shape[0], lo, hi, mid, j
    cdef label_value_t v
    cdef bint signed_zero = False, unsigned_zero = False, fits = True
    with nogil:
        for i in range(n):
            v = y[i]
            lo = 0
            hi = k
            while lo < hi:
                mid = (lo + hi) >> 1
                if classes[mid] < v:
                    lo = mid + 1
                else:
                    hi = mid
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
                lo = 0
                hi = k
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if classes[mid] < v:
                        lo = mid + 1
                    else:
                        hi = mid
                codes[i] = <int32_t>lo
    if not fits or (signed_zero and unsigned_zero):
        return -1
    return k
