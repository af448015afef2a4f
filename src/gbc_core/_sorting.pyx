"""Sort every feature once per fit (stable LSD radix sort on float32 keys), and
encode class labels without sorting them (`encode_labels`)."""
cimport cython
from cython.parallel cimport prange, threadid
from libc.stdlib cimport malloc, free
from libc.math cimport signbit
from libc.string cimport memset

from ._common cimport float32_t, int32_t, int64_t, uint32_t, intp_t, sort_key


cdef int _sort_one_feature(
    const float32_t* column,
    intp_t n,
    int32_t* order_out,
    float32_t* values_out,
    uint32_t* keys_a,
    uint32_t* keys_b,
    int32_t* idx_a,
    int32_t* idx_b,
) noexcept nogil:
    """Stable radix sort of one column; returns the number of non-NaN values."""
    cdef intp_t i, pos
    cdef int shift, digit
    cdef intp_t counts[256]
    cdef uint32_t* ktmp
    cdef int32_t* itmp
    cdef intp_t n_missing = 0
    for i in range(n):
        keys_a[i] = sort_key(column[i])
        idx_a[i] = <int32_t>i
        if column[i] != column[i]:
            n_missing += 1
    for shift in range(0, 32, 8):
        memset(counts, 0, sizeof(counts))
        for i in range(n):
            counts[(keys_a[i] >> shift) & 0xFF] += 1
        # Skip a pass whose digit is the same for every key.
        if counts[(keys_a[0] >> shift) & 0xFF] == n:
            continue
        pos = 0
        for digit in range(256):
            pos += counts[digit]
            counts[digit] = pos - counts[digit]
        for i in range(n):
            digit = (keys_a[i] >> shift) & 0xFF
            keys_b[counts[digit]] = keys_a[i]
            idx_b[counts[digit]] = idx_a[i]
            counts[digit] += 1
        ktmp = keys_a; keys_a = keys_b; keys_b = ktmp
        itmp = idx_a; idx_a = idx_b; idx_b = itmp
    for i in range(n):
        order_out[i] = idx_a[i]
        values_out[i] = column[idx_a[i]]
    return <int>(n - n_missing)


@cython.boundscheck(False)
def presort_features(
    const float32_t[::1, :] X,
    int32_t[:, ::1] order,
    float32_t[:, ::1] sorted_values,
    int64_t[::1] n_nonmissing,
    int n_threads,
):
    """Sort each column of ``X`` (Fortran order) once.

    Parameters
    ----------
    X : float32 array of shape (n_samples, n_features), Fortran order
    order : int32 array of shape (n_features, n_samples), output
        Row indices of each feature in ascending order of value (ties keep row
        order, NaN last).
    sorted_values : float32 array of shape (n_features, n_samples), output
        ``X[order[f], f]``.
    n_nonmissing : int64 array of shape (n_features,), output
        Number of non-NaN values of each feature.
    n_threads : int
        OpenMP threads.
    """
    cdef intp_t n = X.shape[0]
    cdef intp_t d = X.shape[1]
    cdef intp_t f
    cdef int tid
    cdef intp_t stride = n if n > 0 else 1
    if n == 0 or d == 0:
        return
    if n > 2147483647:
        raise ValueError("at most 2**31 - 1 samples are supported")
    n_threads = max(1, min(n_threads, d))
    cdef uint32_t* keys = <uint32_t*>malloc(2 * n_threads * stride * sizeof(uint32_t))
    cdef int32_t* idx = <int32_t*>malloc(2 * n_threads * stride * sizeof(int32_t))
    if keys == NULL or idx == NULL:
        free(keys)
        free(idx)
        raise MemoryError(f"cannot allocate sort buffers for {n} samples")
    try:
        with nogil:
            for f in prange(d, schedule="static", num_threads=n_threads):
                tid = threadid()
                n_nonmissing[f] = _sort_one_feature(
                    &X[0, f], n, &order[f, 0], &sorted_values[f, 0],
                    keys + 2 * tid * stride, keys + (2 * tid + 1) * stride,
                    idx + 2 * tid * stride, idx + (2 * tid + 1) * stride,
                )
    finally:
        free(keys)
        free(idx)


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
