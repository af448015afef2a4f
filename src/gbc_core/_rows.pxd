# The rows of a node of the tree being grown: the side a split sends each of them
# to (on bins or on raw values; the one rule of every routing of the grower, its
# partition and its out-of-bag rows) and the sums over a node's own rows (for the
# test of whether it may split, and its impurity).
from libc.math cimport INFINITY, nextafterf

from ._common cimport float32_t, float64_t, uint8_t, uint32_t, intp_t, row_stat_t
from ._categorical cimport category_in, MAX_CATEGORIES


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


cdef inline void sums_zero(node_sums_t* a) noexcept nogil:
    a.w = 0.0
    a.wr = 0.0
    a.wr2 = 0.0
    a.r_min = INFINITY
    a.r_max = -INFINITY


cdef inline void sums_widen(node_sums_t* a, float64_t w, float64_t r) noexcept nogil:
    """Widen the residual range of ``a`` by a row of weight ``w`` and residual ``r``
    (rows of zero weight do not count)."""
    if w > 0.0:
        if r < a.r_min:
            a.r_min = r
        if r > a.r_max:
            a.r_max = r


cdef inline void sums_add_row(node_sums_t* a, const row_stat_t* row_stats,
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
    sums_widen(a, w, r)


cdef inline void sums_add(node_sums_t* a, const node_sums_t* b) noexcept nogil:
    """Add the sums of a chunk ``b`` to ``a`` (in chunk order: deterministic)."""
    a.w = a.w + b.w
    a.wr = a.wr + b.wr
    a.wr2 = a.wr2 + b.wr2
    if b.r_min < a.r_min:
        a.r_min = b.r_min
    if b.r_max > a.r_max:
        a.r_max = b.r_max


cdef inline bint bin_goes_left(uint8_t b, int bin, int missing_bin, bint miss) noexcept nogil:
    """The side of a row whose bin is ``b`` at a split on bins: left up to the split's
    bin ``bin``; the missing-value bin goes with ``miss``."""
    return miss if b == missing_bin else b <= bin


cdef inline bint value_goes_left(float32_t x, float32_t t32, bint miss) noexcept nogil:
    """The side of a row whose value is ``x`` at a split on raw values: left up to the
    float32 threshold ``t32``; NaN goes with ``miss`` (also how the stored trees
    route out-of-bag rows)."""
    return miss if x != x else x <= t32


cdef inline bint bin_in_set(uint8_t b, const uint32_t* bits, int missing_bin,
                            bint miss) noexcept nogil:
    """The side of a row whose bin is ``b`` at a categorical split on bins (bin b is
    category code b): left if its category is in the split's set ``bits``; the
    missing-value bin goes with ``miss``."""
    return miss if b == missing_bin else category_in(bits, b)


cdef inline bint code_in_set(float32_t x, const uint32_t* bits, bint miss) noexcept nogil:
    """The side of a row whose value is ``x`` at a categorical split on raw values
    (category codes): left if its category is in the set ``bits``; NaN, and a value
    that is no code (negative, or MAX_CATEGORIES and above), go with ``miss``."""
    if not (x >= 0 and x < MAX_CATEGORIES):
        return miss
    return category_in(bits, <intp_t>x)


cdef inline float32_t float32_at_most(float64_t t) noexcept nogil:
    """Largest float32 <= t, so that float32 ``x <= t32`` iff ``x <= t``."""
    cdef float32_t t32 = <float32_t>t
    if <float64_t>t32 > t:
        t32 = nextafterf(t32, -INFINITY)
    return t32
