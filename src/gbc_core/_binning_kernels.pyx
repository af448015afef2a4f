"""Kernels of the binning layer (``_binning.py`` validates and orchestrates), and the
cast of the training X to float32 that comes before it.

``cast_float32`` turns the user's float64 (or C-order float32) X into float32 in the
layout of the fit's split method, with each column's extremes for the check of
values float32 does not represent (``_validation.check_features``). Then three
passes over the raw float32 features, each in parallel over features or over
blocks of rows, each writing only its own feature's or block's output, so that the
results never depend on the number of threads:

- ``scan_distinct``: the sorted distinct non-NaN values of every feature with their
  counts, up to a cap (a feature with more stops early), and the number of non-NaN
  values of every feature;
- ``sorted_sample``: the non-NaN values of some features, all of them or those at
  given ranks (a subsample), sorted (LSD radix sort on the float32 bit patterns);
- ``map_to_bins``: the bin of every value (the number of thresholds below it, NaN
  to the missing bin).

Each pass has a twin for sparse columns (``*_csc``: float32 ``data``, int32 row
``indices`` ascending and distinct within a column, int64 ``indptr``), in which a row
without an entry in a column holds the value 0.0: the twins give what the dense
pass gives on the same data densified, without densifying it (a column's implicit
zeros are counted, not visited).

-0.0 and 0.0 are one value: the first two passes write 0.0 for both. ``midpoints``
computes bin edges with the split threshold of ``_common.pxd`` (``midpoint``), the
one the exact split finder uses.
"""
from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY
from libc.string cimport memmove, memset

from ._common cimport float32_t, float64_t, int32_t, int64_t, uint8_t, uint32_t, intp_t
from ._common cimport midpoint, sort_key, key_value
from ._trace cimport *

import numpy as np

cdef enum:
    # Rows per block of ``map_to_bins`` (a block of 28 float32 features is 450 KB).
    ROW_BLOCK = 4096

#: Rows per block of ``map_to_bins`` and ``cast_float32``.
BLOCK_ROWS = ROW_BLOCK


cdef intp_t _distinct_one(
    const float32_t* col,
    intp_t n,
    intp_t stride,
    intp_t cap,
    float32_t* values,
    int64_t* counts,
    int64_t* n_valid,
) noexcept nogil:
    """Sorted distinct non-NaN values of one column and their counts, at most ``cap``.

    Returns their number, or ``cap + 1`` when the column has more (``values`` and
    ``counts`` then hold no meaning). ``n_valid`` (unless NULL) gets the number of
    non-NaN values; without it, a column with more than ``cap`` values is left at
    the first value past the cap.
    """
    cdef intp_t i = 0, k = 0, lo, hi, mid, last = -1
    cdef int64_t n_nan = 0
    cdef float32_t v
    while i < n:
        v = col[i * stride]
        i += 1
        if v != v:
            n_nan += 1
            continue
        if v == 0:
            v = 0
        if last >= 0 and values[last] == v:
            counts[last] += 1
            continue
        lo = 0
        hi = k
        while lo < hi:
            mid = (lo + hi) >> 1
            if values[mid] < v:
                lo = mid + 1
            else:
                hi = mid
        if lo < k and values[lo] == v:
            counts[lo] += 1
            last = lo
            continue
        if k == cap:
            k = cap + 1
            break
        memmove(values + lo + 1, values + lo, (k - lo) * sizeof(float32_t))
        memmove(counts + lo + 1, counts + lo, (k - lo) * sizeof(int64_t))
        values[lo] = v
        counts[lo] = 1
        k += 1
        last = lo
    if n_valid != NULL:
        while i < n:
            v = col[i * stride]
            i += 1
            if v != v:
                n_nan += 1
        n_valid[0] = n - n_nan
    return k


def scan_distinct(
    const float32_t[:, :] X,
    float32_t[:, ::1] values,
    int64_t[:, ::1] counts,
    int32_t[::1] n_distinct,
    int64_t[::1] n_valid,
    int n_threads,
):
    """Distinct non-NaN values of every feature, up to ``values.shape[1]`` of them.

    Parameters
    ----------
    X : float32 array of shape (n_samples, n_features), any strides
    values : float32 array of shape (n_features, cap), output
        ``values[f, :n_distinct[f]]``: the distinct values of feature ``f`` in
        ascending order (-0.0 written as 0.0), when ``n_distinct[f] <= cap``.
    counts : int64 array of shape (n_features, cap), output
        How many times each of those values occurs.
    n_distinct : int32 array of shape (n_features,), output
        The number of distinct values, or ``cap + 1`` for a feature with more.
    n_valid : int64 array of shape (n_features,), output
        The number of non-NaN values of each feature.
    n_threads : int
        OpenMP threads (features are shared out among them).
    """
    cdef intp_t n = X.shape[0]
    cdef intp_t d = X.shape[1]
    cdef intp_t cap = values.shape[1]
    cdef intp_t f, blk, start, stop, i
    cdef intp_t row_stride, col_stride, n_blocks
    cdef const float32_t* base
    cdef const float32_t* row
    cdef int64_t[:, ::1] n_nan
    cdef int64_t* nan_blk
    cdef bint by_rows
    if d == 0:
        return
    if n == 0:
        for f in range(d):
            n_distinct[f] = 0
            n_valid[f] = 0
        return
    row_stride = X.strides[0] // sizeof(float32_t)
    col_stride = X.strides[1] // sizeof(float32_t)
    base = &X[0, 0]
    # Row-major X: the missing values are counted in one pass over the rows (a
    # column of it is strided), and a column with many distinct values is left
    # after the first few hundred rows.
    by_rows = col_stride == 1 and d > 1
    if by_rows:
        n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
        n_nan = np.zeros((n_blocks, d), dtype=np.int64)
        with nogil:
            GBC_TRACE_REGION_BEGIN(GBC_TR_BINNING, n * d)
            for blk in prange(n_blocks, schedule="static",
                              num_threads=max(1, min(n_threads, n_blocks))):
                start = blk * ROW_BLOCK
                stop = min(start + ROW_BLOCK, n)
                nan_blk = &n_nan[blk, 0]
                for i in range(start, stop):
                    row = base + i * row_stride
                    for f in range(d):
                        nan_blk[f] += row[f] != row[f]
            GBC_TRACE_REGION_END(GBC_TR_BINNING, n * d)
        for f in range(d):
            n_valid[f] = n
            for blk in range(n_blocks):
                n_valid[f] -= n_nan[blk, f]
    n_threads = max(1, min(n_threads, d))
    with nogil:
        GBC_TRACE_REGION_BEGIN(GBC_TR_BINNING, n * d)
        for f in prange(d, schedule="dynamic", num_threads=n_threads):
            GBC_TRACE_TASK_BEGIN(GBC_TR_BIN_DISTINCT, f)
            n_distinct[f] = <int32_t>_distinct_one(
                base + f * col_stride, n, row_stride, cap,
                &values[f, 0], &counts[f, 0], NULL if by_rows else &n_valid[f],
            )
            GBC_TRACE_TASK_END(GBC_TR_BIN_DISTINCT, f)
        GBC_TRACE_REGION_END(GBC_TR_BINNING, n * d)


cdef enum:
    # LSD radix sort of 32-bit keys: three digits of 11, 11 and 10 bits.
    RADIX_BITS = 11
    RADIX_SIZE = 2048
    RADIX_PASSES = 3


cdef uint32_t* _radix_sort(uint32_t* a, uint32_t* b, intp_t n) noexcept nogil:
    """Sort ``a[:n]`` (``b`` is scratch of the same size); returns the sorted buffer.

    LSD radix sort in ``RADIX_PASSES`` passes of ``RADIX_BITS`` bits (the last of
    10), the counts of every digit taken in one read of ``a``; a pass whose digit is
    the same for every key is skipped."""
    cdef intp_t counts[RADIX_PASSES * RADIX_SIZE]
    cdef intp_t i, pos, c
    cdef intp_t* at
    cdef int p, shift, digit
    cdef uint32_t v
    cdef uint32_t* tmp
    if n == 0:
        return a
    memset(counts, 0, sizeof(counts))
    for i in range(n):
        v = a[i]
        counts[v & (RADIX_SIZE - 1)] += 1
        counts[RADIX_SIZE + ((v >> RADIX_BITS) & (RADIX_SIZE - 1))] += 1
        counts[2 * RADIX_SIZE + (v >> (2 * RADIX_BITS))] += 1
    for p in range(RADIX_PASSES):
        shift = p * RADIX_BITS
        at = counts + p * RADIX_SIZE
        if at[(a[0] >> shift) & (RADIX_SIZE - 1)] == n:
            continue
        pos = 0
        for digit in range(RADIX_SIZE):
            c = at[digit]
            at[digit] = pos
            pos += c
        for i in range(n):
            v = a[i]
            digit = (v >> shift) & (RADIX_SIZE - 1)
            b[at[digit]] = v
            at[digit] += 1
        tmp = a
        a = b
        b = tmp
    return a


cdef void _sample_one(
    const float32_t* col,
    intp_t n,
    intp_t stride,
    const int64_t* ranks,
    intp_t n_take,
    bint no_nan,
    uint32_t* keys,
    uint32_t* scratch,
    float32_t* out,
) noexcept nogil:
    """The non-NaN values of one column (all, or those whose rank among them is in
    the sorted ``ranks[:n_take]``), sorted into ``out[:n_take]``. ``no_nan``: the
    column has no NaN, so a rank is a row."""
    cdef intp_t i, k = 0
    cdef int64_t rank = 0
    cdef float32_t v
    cdef uint32_t* sorted_keys
    if ranks == NULL:
        for i in range(n):
            if k == n_take:
                break
            v = col[i * stride]
            if v == v:
                keys[k] = sort_key(v)
                k += 1
    elif no_nan:
        for k in range(n_take):
            keys[k] = sort_key(col[ranks[k] * stride])
        k = n_take
    else:
        for i in range(n):
            if k == n_take:
                break
            v = col[i * stride]
            if v == v:
                if rank == ranks[k]:
                    keys[k] = sort_key(v)
                    k += 1
                rank += 1
    sorted_keys = _radix_sort(keys, scratch, k)
    for i in range(k):
        out[i] = key_value(sorted_keys[i])


def sorted_sample(
    const float32_t[:, :] X,
    const int32_t[::1] features,
    const int64_t[:, ::1] ranks,
    const int32_t[::1] rank_set,
    const int64_t[::1] n_take,
    const int64_t[::1] n_valid,
    float32_t[:, ::1] out,
    uint32_t[::1] keys,
    int n_threads,
):
    """Sorted non-NaN values of some features: all of them, or a subsample.

    Parameters
    ----------
    X : float32 array of shape (n_samples, n_features), any strides
    features : int32 array of shape (q,)
        The features to sample.
    ranks : int64 array of shape (n_sets, m)
        Sets of ranks (ascending, distinct) among a feature's non-NaN values.
    rank_set : int32 array of shape (q,)
        For ``features[i]``: the row of ``ranks`` whose first ``n_take[i]`` ranks
        are taken, or -1 to take every non-NaN value.
    n_take : int64 array of shape (q,)
        How many values of ``features[i]`` are taken (its number of non-NaN values
        when ``rank_set[i]`` is -1).
    n_valid : int64 array of shape (q,)
        The number of non-NaN values of ``features[i]``.
    out : float32 array of shape (q, m), output
        ``out[i, :n_take[i]]``: the values taken, ascending, -0.0 written as 0.0.
    keys : uint32 array of at least 2 x min(n_threads, q) x m values
        Sort buffers (scratch), given by the caller so that it can allocate them
        with ``out``, before the temporaries of the ranks.
    n_threads : int
        OpenMP threads (features are shared out among them).
    """
    cdef intp_t n = X.shape[0]
    cdef intp_t q = features.shape[0]
    cdef intp_t m = out.shape[1]
    cdef intp_t i, tid
    cdef intp_t row_stride, col_stride
    cdef const float32_t* base
    cdef const int64_t* r
    cdef uint32_t* sort_keys
    if q == 0 or n == 0 or m == 0:
        return
    for i in range(q):
        if n_take[i] > m or (rank_set[i] >= 0 and n_take[i] > ranks.shape[1]):
            raise ValueError("n_take exceeds the room of out or of ranks")
    row_stride = X.strides[0] // sizeof(float32_t)
    col_stride = X.strides[1] // sizeof(float32_t)
    base = &X[0, 0]
    n_threads = max(1, min(n_threads, q))
    if keys.shape[0] < 2 * n_threads * m:
        raise ValueError(f"keys must hold {2 * n_threads * m} values")
    sort_keys = &keys[0]
    with nogil:
        GBC_TRACE_REGION_BEGIN(GBC_TR_BINNING, n * q)
        for i in prange(q, schedule="dynamic", num_threads=n_threads):
            GBC_TRACE_TASK_BEGIN(GBC_TR_BIN_SAMPLE, i)
            tid = threadid()
            if rank_set[i] >= 0:
                r = &ranks[rank_set[i], 0]
            else:
                r = NULL
            _sample_one(
                base + features[i] * col_stride, n, row_stride, r, n_take[i],
                n_valid[i] == n, sort_keys + 2 * tid * m, sort_keys + (2 * tid + 1) * m,
                &out[i, 0],
            )
            GBC_TRACE_TASK_END(GBC_TR_BIN_SAMPLE, i)
        GBC_TRACE_REGION_END(GBC_TR_BINNING, n * q)


def midpoints(const float32_t[::1] lo, const float32_t[::1] hi):
    """``midpoint(lo[i], hi[i])`` for every i (float64 array): the split threshold
    between two consecutive distinct values ``lo[i] < hi[i]``."""
    cdef intp_t n = lo.shape[0]
    cdef intp_t i
    if hi.shape[0] != n:
        raise ValueError("lo and hi differ in length")
    out = np.empty(n, dtype=np.float64)
    cdef float64_t[::1] o = out
    for i in range(n):
        o[i] = midpoint(lo[i], hi[i])
    return out


cdef inline void _bins_of(
    const float64_t* t,
    intp_t n_t,
    const float32_t* col,
    intp_t stride,
    intp_t start,
    intp_t stop,
    uint8_t missing_bin,
    uint8_t* out,
) noexcept nogil:
    """``out[i]`` = the number of thresholds ``t[:n_t]`` (ascending, n_t >= 1) below
    ``col[i * stride]`` (``missing_bin`` for NaN), for i in start .. stop-1.

    A branch-free binary search (the compiler turns each step into a conditional
    move), four values at a time so that their searches overlap.
    """
    cdef const float64_t* b0
    cdef const float64_t* b1
    cdef const float64_t* b2
    cdef const float64_t* b3
    cdef float64_t x0, x1, x2, x3
    cdef intp_t i = start, m, half
    while i + 4 <= stop:
        x0 = col[i * stride]
        x1 = col[(i + 1) * stride]
        x2 = col[(i + 2) * stride]
        x3 = col[(i + 3) * stride]
        b0 = t
        b1 = t
        b2 = t
        b3 = t
        m = n_t
        while m > 1:
            half = m >> 1
            b0 = b0 + half if b0[half] < x0 else b0
            b1 = b1 + half if b1[half] < x1 else b1
            b2 = b2 + half if b2[half] < x2 else b2
            b3 = b3 + half if b3[half] < x3 else b3
            m -= half
        out[i] = missing_bin if x0 != x0 else <uint8_t>((b0 - t) + (b0[0] < x0))
        out[i + 1] = missing_bin if x1 != x1 else <uint8_t>((b1 - t) + (b1[0] < x1))
        out[i + 2] = missing_bin if x2 != x2 else <uint8_t>((b2 - t) + (b2[0] < x2))
        out[i + 3] = missing_bin if x3 != x3 else <uint8_t>((b3 - t) + (b3[0] < x3))
        i += 4
    while i < stop:
        x0 = col[i * stride]
        b0 = t
        m = n_t
        while m > 1:
            half = m >> 1
            b0 = b0 + half if b0[half] < x0 else b0
            m -= half
        out[i] = missing_bin if x0 != x0 else <uint8_t>((b0 - t) + (b0[0] < x0))
        i += 1


def map_to_bins(
    const float32_t[:, :] X,
    const float64_t[::1] thresholds,
    const int64_t[::1] offsets,
    uint8_t missing_bin,
    uint8_t[::1, :] out,
    int n_threads,
):
    """The bin of every value: the number of its feature's thresholds below it.

    Parameters
    ----------
    X : float32 array of shape (n_samples, n_features), any strides
    thresholds : float64 array
        The thresholds of every feature, one after the other, each ascending, then
        one element of padding.
    offsets : int64 array of shape (n_features + 1,)
        Feature ``f``'s thresholds are ``thresholds[offsets[f]:offsets[f + 1]]``
        (at most 255 of them).
    missing_bin : uint8
        The bin of NaN.
    out : uint8 array of shape (n_samples, n_features), Fortran order, output
    n_threads : int
        OpenMP threads (blocks of rows are shared out among them).
    """
    cdef intp_t n = X.shape[0]
    cdef intp_t d = X.shape[1]
    cdef intp_t n_blocks, blk, start, stop, f, i, n_t
    cdef intp_t row_stride, col_stride
    cdef const float32_t* base
    cdef const float32_t* col
    cdef const float64_t* t
    cdef uint8_t* o
    cdef float32_t v
    if n == 0 or d == 0:
        return
    if offsets.shape[0] != d + 1 or thresholds.shape[0] < offsets[d] + 1:
        raise ValueError("thresholds and offsets do not describe n_features features")
    row_stride = X.strides[0] // sizeof(float32_t)
    col_stride = X.strides[1] // sizeof(float32_t)
    base = &X[0, 0]
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    n_threads = max(1, min(n_threads, n_blocks))
    with nogil:
        GBC_TRACE_REGION_BEGIN(GBC_TR_BINNING, n * d)
        for blk in prange(n_blocks, schedule="static", num_threads=n_threads):
            GBC_TRACE_TASK_BEGIN(GBC_TR_BIN_MAP, blk)
            start = blk * ROW_BLOCK
            stop = min(start + ROW_BLOCK, n)
            for f in range(d):
                t = &thresholds[offsets[f]]
                n_t = offsets[f + 1] - offsets[f]
                col = base + f * col_stride
                o = &out[0, f]
                if n_t == 0:
                    for i in range(start, stop):
                        v = col[i * row_stride]
                        o[i] = missing_bin if v != v else 0
                else:
                    _bins_of(t, n_t, col, row_stride, start, stop, missing_bin, o)
            GBC_TRACE_TASK_END(GBC_TR_BIN_MAP, blk)
        GBC_TRACE_REGION_END(GBC_TR_BINNING, n * d)


# ------------------------------------------------------------ the cast of X
ctypedef fused given_float_t:
    float32_t
    float64_t


cdef enum:
    # Columns copied at once within a block of rows (16 output streams).
    CAST_COLUMNS = 16


def cast_float32(
    const given_float_t[:, ::1] X,
    float32_t[:, :] out,
    float32_t[:, ::1] block_max,
    float32_t[:, ::1] block_min,
    int n_threads,
):
    """The training X (C order, float32 or float64) as float32 in ``out``'s layout
    (C or Fortran order), with the largest and smallest value of each column in each
    block of rows.

    One pass in parallel over blocks of ``ROW_BLOCK`` rows, each copied in tiles of
    ``CAST_COLUMNS`` columns (NumPy's cast to another order walks one column at a
    time over every row, on one thread). Each value is the C conversion to float32
    NumPy's ``astype`` makes (round to nearest; a finite value beyond float32's range
    becomes +-inf). Each block writes only its rows of ``out`` and its row of
    ``block_max``/``block_min``: the result never depends on the number of threads.

    Parameters
    ----------
    X : float32 or float64 array of shape (n_samples, n_features), C order
    out : float32 array of shape (n_samples, n_features), C or Fortran order, output
    block_max, block_min : float32 arrays of shape (n_blocks, n_features), output
        Per block of ``ROW_BLOCK`` rows (``n_blocks = ceil(n_samples / ROW_BLOCK)``)
        the largest and smallest converted value of each column, NaN ignored
        (-inf and +inf where a column has none); ``np.fmax.reduce(block_max)`` is
        ``np.fmax.reduce(out)`` column by column.
    n_threads : int
        OpenMP threads (blocks of rows are shared out among them).
    """
    cdef intp_t n = X.shape[0]
    cdef intp_t d = X.shape[1]
    cdef intp_t n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    cdef intp_t blk, start, stop, f0, f1, f, i, row_stride, col_stride
    cdef const given_float_t* row
    cdef float32_t* o
    cdef float32_t* hi
    cdef float32_t* lo
    cdef float32_t v
    if out.shape[0] != n or out.shape[1] != d:
        raise ValueError(f"out has shape {(out.shape[0], out.shape[1])}; expected {(n, d)}")
    if (block_max.shape[0] != n_blocks or block_max.shape[1] != d
            or block_min.shape[0] != n_blocks or block_min.shape[1] != d):
        raise ValueError(f"block_max and block_min must have shape {(n_blocks, d)}")
    if n == 0 or d == 0:
        return
    row_stride = out.strides[0] // sizeof(float32_t)
    col_stride = out.strides[1] // sizeof(float32_t)
    n_threads = max(1, min(n_threads, n_blocks))
    with nogil:
        GBC_TRACE_REGION_BEGIN(GBC_TR_CAST, n * d)
        for blk in prange(n_blocks, schedule="static", num_threads=n_threads):
            GBC_TRACE_TASK_BEGIN(GBC_TR_CAST, blk)
            start = blk * ROW_BLOCK
            stop = min(start + ROW_BLOCK, n)
            hi = &block_max[blk, 0]
            lo = &block_min[blk, 0]
            for f in range(d):
                hi[f] = -INFINITY
                lo[f] = INFINITY
            f0 = 0
            while f0 < d:
                f1 = min(f0 + CAST_COLUMNS, d)
                for i in range(start, stop):
                    row = &X[i, 0]
                    o = &out[0, 0] + i * row_stride
                    for f in range(f0, f1):
                        v = <float32_t>row[f]
                        o[f * col_stride] = v
                        if v > hi[f]:
                            hi[f] = v
                        if v < lo[f]:
                            lo[f] = v
                f0 = f1
            GBC_TRACE_TASK_END(GBC_TR_CAST, blk)
        GBC_TRACE_REGION_END(GBC_TR_CAST, n * d)


# ------------------------------------------------------------ sparse columns
cdef intp_t _add_zeros(float32_t* values, int64_t* counts, intp_t k, intp_t cap,
                       int64_t n_zeros) noexcept nogil:
    """Add ``n_zeros`` values 0.0 to the ``k`` sorted distinct values of a column and
    their counts (at most ``cap``); returns the new number, ``cap + 1`` when over."""
    cdef intp_t lo = 0, hi = k, mid
    if n_zeros == 0 or k > cap:
        return k
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < 0:
            lo = mid + 1
        else:
            hi = mid
    if lo < k and values[lo] == 0:
        counts[lo] += n_zeros
        return k
    if k == cap:
        return cap + 1
    memmove(values + lo + 1, values + lo, (k - lo) * sizeof(float32_t))
    memmove(counts + lo + 1, counts + lo, (k - lo) * sizeof(int64_t))
    values[lo] = 0
    counts[lo] = n_zeros
    return k + 1


def scan_distinct_csc(
    const float32_t[::1] data,
    const int32_t[::1] indices,
    const int64_t[::1] indptr,
    intp_t n_rows,
    float32_t[:, ::1] values,
    int64_t[:, ::1] counts,
    int32_t[::1] n_distinct,
    int64_t[::1] n_valid,
    int n_threads,
):
    """``scan_distinct`` of sparse columns of ``n_rows`` rows (see the module
    docstring): the implicit zeros of a column count as the value 0.0."""
    cdef intp_t d = indptr.shape[0] - 1
    cdef intp_t cap = values.shape[1]
    cdef intp_t f, k
    cdef int64_t start, nnz
    if d <= 0:
        return
    n_threads = max(1, min(n_threads, d))
    with nogil:
        GBC_TRACE_REGION_BEGIN(GBC_TR_BINNING, n_rows * d)
        for f in prange(d, schedule="dynamic", num_threads=n_threads):
            GBC_TRACE_TASK_BEGIN(GBC_TR_BIN_DISTINCT, f)
            start = indptr[f]
            nnz = indptr[f + 1] - start
            if nnz > 0:
                k = _distinct_one(&data[start], nnz, 1, cap, &values[f, 0],
                                  &counts[f, 0], &n_valid[f])
            else:
                k = 0
                n_valid[f] = 0
            n_valid[f] += n_rows - nnz
            n_distinct[f] = <int32_t>_add_zeros(&values[f, 0], &counts[f, 0], k, cap,
                                                n_rows - nnz)
            GBC_TRACE_TASK_END(GBC_TR_BIN_DISTINCT, f)
        GBC_TRACE_REGION_END(GBC_TR_BINNING, n_rows * d)


cdef void _sample_one_csc(
    const float32_t* data,
    const int32_t* rows,
    intp_t nnz,
    intp_t n_rows,
    const int64_t* ranks,
    intp_t n_take,
    uint32_t* keys,
    uint32_t* scratch,
    float32_t* out,
) noexcept nogil:
    """``_sample_one`` of a sparse column: the non-NaN values in row order are the
    stored ones with the runs of implicit zeros between them; a rank that falls in
    such a run takes 0.0."""
    cdef intp_t p, k = 0
    cdef int64_t rank = 0, gap, previous = -1
    cdef float32_t v
    cdef uint32_t zero = sort_key(0)
    cdef uint32_t* sorted_keys
    if ranks == NULL:
        for p in range(nnz):
            v = data[p]
            if v == v:
                keys[k] = sort_key(v)
                k += 1
        for p in range(n_take - k):
            keys[k] = zero
            k += 1
    else:
        for p in range(nnz + 1):
            if k == n_take:
                break
            gap = (rows[p] if p < nnz else n_rows) - previous - 1
            while k < n_take and ranks[k] < rank + gap:
                keys[k] = zero
                k += 1
            rank += gap
            if p == nnz:
                break
            previous = rows[p]
            v = data[p]
            if v == v:
                if k < n_take and rank == ranks[k]:
                    keys[k] = sort_key(v)
                    k += 1
                rank += 1
    sorted_keys = _radix_sort(keys, scratch, k)
    for p in range(k):
        out[p] = key_value(sorted_keys[p])


def sorted_sample_csc(
    const float32_t[::1] data,
    const int32_t[::1] indices,
    const int64_t[::1] indptr,
    intp_t n_rows,
    const int32_t[::1] features,
    const int64_t[:, ::1] ranks,
    const int32_t[::1] rank_set,
    const int64_t[::1] n_take,
    float32_t[:, ::1] out,
    uint32_t[::1] keys,
    int n_threads,
):
    """``sorted_sample`` of sparse columns of ``n_rows`` rows (see the module
    docstring)."""
    cdef intp_t q = features.shape[0]
    cdef intp_t m = out.shape[1]
    cdef intp_t i, tid
    cdef int64_t start
    cdef const int64_t* r
    cdef uint32_t* sort_keys
    if q == 0 or n_rows == 0 or m == 0:
        return
    for i in range(q):
        if n_take[i] > m or (rank_set[i] >= 0 and n_take[i] > ranks.shape[1]):
            raise ValueError("n_take exceeds the room of out or of ranks")
    n_threads = max(1, min(n_threads, q))
    if keys.shape[0] < 2 * n_threads * m:
        raise ValueError(f"keys must hold {2 * n_threads * m} values")
    sort_keys = &keys[0]
    with nogil:
        GBC_TRACE_REGION_BEGIN(GBC_TR_BINNING, n_rows * q)
        for i in prange(q, schedule="dynamic", num_threads=n_threads):
            GBC_TRACE_TASK_BEGIN(GBC_TR_BIN_SAMPLE, i)
            tid = threadid()
            if rank_set[i] >= 0:
                r = &ranks[rank_set[i], 0]
            else:
                r = NULL
            start = indptr[features[i]]
            _sample_one_csc(
                &data[start] if indptr[features[i] + 1] > start else NULL,
                &indices[start] if indptr[features[i] + 1] > start else NULL,
                indptr[features[i] + 1] - start, n_rows, r, n_take[i],
                sort_keys + 2 * tid * m, sort_keys + (2 * tid + 1) * m, &out[i, 0],
            )
            GBC_TRACE_TASK_END(GBC_TR_BIN_SAMPLE, i)
        GBC_TRACE_REGION_END(GBC_TR_BINNING, n_rows * q)


def map_to_bins_csc(
    const float32_t[::1] data,
    const int32_t[::1] indices,
    const int64_t[::1] indptr,
    const float64_t[::1] thresholds,
    const int64_t[::1] offsets,
    uint8_t missing_bin,
    uint8_t[::1, :] out,
    int n_threads,
):
    """``map_to_bins`` of sparse columns (see the module docstring): each column of
    ``out`` is filled with the bin of 0.0, then the bins of its stored values are
    written (in parallel over features)."""
    cdef intp_t n = out.shape[0]
    cdef intp_t d = out.shape[1]
    cdef intp_t f, n_t, i
    cdef int64_t start, stop, p
    cdef const float64_t* t
    cdef uint8_t* o
    cdef uint8_t zero_bin, b
    cdef float32_t zero = 0
    if n == 0 or d == 0:
        return
    if (offsets.shape[0] != d + 1 or thresholds.shape[0] < offsets[d] + 1
            or indptr.shape[0] != d + 1):
        raise ValueError("thresholds, offsets and indptr do not describe n_features "
                         "features")
    n_threads = max(1, min(n_threads, d))
    with nogil:
        GBC_TRACE_REGION_BEGIN(GBC_TR_BINNING, n * d)
        for f in prange(d, schedule="dynamic", num_threads=n_threads):
            t = &thresholds[offsets[f]]
            n_t = offsets[f + 1] - offsets[f]
            o = &out[0, f]
            start = indptr[f]
            stop = indptr[f + 1]
            if n_t == 0:
                memset(o, 0, n)
                for p in range(start, stop):
                    if data[p] != data[p]:
                        o[indices[p]] = missing_bin
            else:
                _bins_of(t, n_t, &zero, 0, 0, 1, missing_bin, &zero_bin)
                memset(o, zero_bin, n)
                for p in range(start, stop):
                    _bins_of(t, n_t, &data[p], 0, 0, 1, missing_bin, &b)
                    o[indices[p]] = b
        GBC_TRACE_REGION_END(GBC_TR_BINNING, n * d)
