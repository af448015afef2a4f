# The choice of a split, written once for every split finder.
#
# A finder offers the candidate splits of a node feature by feature in increasing
# feature order and, within a feature, in increasing threshold order: for each
# threshold, missing values sent right, then left (or, in a node without missing
# values, one candidate whose missing values follow the larger child); after the
# last threshold, "every non-missing value left, every missing value right"
# (threshold +inf). ``consider`` keeps a candidate if it is valid and ``beats`` the
# best so far: a larger proxy, an exact tie only where the candidate comes first in
# that order (``ties_win``), so among equal proxies the first offered wins: the lowest
# feature, then the lowest threshold, then missing values right. Candidates found on
# several threads (or features scanned apart) are merged with ``wins``, which gives
# the same result whatever the number of threads. The threshold between the largest
# value going left and the smallest going right is ``midpoint`` of _common.pxd
# (shared with the binning layer, whose edges are such thresholds).
#
# "Equal" is meant exactly. The grower puts every row's w * r and w on a grid
# (``grid_for``, ``on_grid``) before a tree is grown, so every sum a finder forms
# is exact, whatever its order (a bin's rows, a prefix, a parent's histogram minus a
# sibling's, a sum over processes): the histogram finder and the exact one see the
# same sums bit for bit and compute the same proxies from them. Two proxies within a
# relative GBC_TIE_MARGIN (1e-12) of each other are then ranked exactly from those
# sums (``gbc_exact_compare`` of _criterion.h, integers of up to 322 bits), so rounding
# decides nothing but splits whose float proxies are more than 1e-12 apart.
#
# ``criterion`` (level_t.criterion) picks the proxy of _criterion.h: Friedman's
# (CRITERION_FRIEDMAN_MSE, the default) or scikit-learn's MSE proxy
# (CRITERION_SQUARED_ERROR); they rank a node's splits alike in exact arithmetic,
# and the exact comparison of near-ties is the same for both.
#
# ``decrease_allowed`` is min_impurity_decrease, scikit-learn's rule: a chosen split
# is kept when its weighted impurity decrease plus machine epsilon is not below the
# bound (scikit-learn's tree builder makes a node a leaf when
# ``improvement + EPSILON < min_impurity_decrease``).
#
# The exact finder's lean scans (_exact_splitter.pyx, _scan.h) evaluate the same
# rule with the tests reordered for speed on features without missing values and
# positive weights; tests/test_split_finder.py holds them to the general path,
# which calls ``consider``.
from ._common cimport float64_t, int32_t, int64_t, uint8_t, IMPURITY_EPSILON
from ._split_finder cimport (
    side_t, grid_t, MISSING_TO_LARGER, CRITERION_FRIEDMAN_MSE, CRITERION_SQUARED_ERROR,
)
from libc.math cimport INFINITY, frexp, ldexp

cdef extern from "_criterion.h" nogil:
    float64_t split_diff "gbc_split_diff"(float64_t total_s, float64_t total_w,
                                          float64_t s_left, float64_t w_left)
    float64_t split_den "gbc_split_den"(float64_t total_w, float64_t w_left)
    float64_t split_proxy "gbc_split_proxy"(float64_t diff, float64_t den)
    bint may_beat "gbc_may_beat"(float64_t diff, float64_t den, float64_t bound)
    const float64_t BOUND_FACTOR "GBC_BOUND_FACTOR"
    const float64_t TIE_MARGIN "GBC_TIE_MARGIN"
    const float64_t ROUND_TO_INTEGER "GBC_ROUND_TO_INTEGER"
    int exact_compare "gbc_exact_compare"(int64_t total_s, int64_t total_w, int64_t s_a,
                                          int64_t w_a, int64_t s_b, int64_t w_b)
    float64_t mse_proxy "gbc_mse_proxy"(float64_t total_s, float64_t total_w,
                                        float64_t s_left, float64_t w_left)
    float64_t child_impurity "gbc_child_impurity"(float64_t w, float64_t wr,
                                                  float64_t wr2)
    float64_t weighted_decrease "gbc_weighted_decrease"(
        float64_t total_weight, float64_t node_w, float64_t impurity,
        float64_t w_left, float64_t impurity_left, float64_t impurity_right)
    bint children_ordered "gbc_children_ordered"(
        int direction, float64_t total_s, float64_t total_w, float64_t s_left,
        float64_t w_left, float64_t unit_s, float64_t unit_w)


cdef inline bint leaves_allowed(const side_t* total, const side_t* left,
                                int64_t min_samples_leaf,
                                float64_t min_weight_leaf) noexcept nogil:
    """Both children hold at least ``min_samples_leaf`` samples and a positive
    weight of at least ``min_weight_leaf``."""
    cdef float64_t w_right = total.w - left.w
    if left.n < min_samples_leaf or total.n - left.n < min_samples_leaf:
        return False
    return not (left.w <= 0.0 or w_right <= 0.0 or left.w < min_weight_leaf
                or w_right < min_weight_leaf)


cdef inline float64_t grid_unit(float64_t n_rows, float64_t max_abs) noexcept nogil:
    """The unit of a grid for ``n_rows`` values of magnitude at most ``max_abs``
    (0: all zero, or not finite: no grid): a power of two, 2^-51 of the least power
    of two at or above their largest possible sum, so that every sum of them, in
    units, stays below 2^53 (exact in float64) and a whole number."""
    cdef int exponent
    cdef float64_t bound = n_rows * max_abs
    if not (bound > 0.0 and bound < INFINITY):
        return 0.0
    frexp(bound, &exponent)       # bound < 2^exponent
    return ldexp(1.0, exponent - 51)


cdef inline float64_t on_grid(float64_t value, float64_t unit,
                              float64_t inverse) noexcept nogil:
    """``value`` to the nearest whole number of ``unit`` (a power of two, ``inverse``
    its reciprocal: the scalings are exact), half to even, the same on every CPU:
    a scaled value below 2^51 in magnitude, plus and minus 1.5 x 2^52, is rounded to
    an integer by the addition (IEEE round-to-nearest, which no compiler option of
    ours lets the compiler fold away). Unit 0: unchanged."""
    if unit == 0.0:
        return value
    return ((value * inverse + ROUND_TO_INTEGER) - ROUND_TO_INTEGER) * unit


cdef inline float64_t weight_on_grid(float64_t weight, float64_t unit,
                                     float64_t inverse) noexcept nogil:
    """``on_grid`` for a weight: a positive weight stays positive (one unit at
    least)."""
    cdef float64_t q = on_grid(weight, unit, inverse)
    if q == 0.0 and weight > 0.0:
        return unit
    return q


cdef inline bint beats(float64_t proxy, const side_t* left, float64_t best_proxy,
                       const side_t* best_left, bint ties_win, const side_t* total,
                       const grid_t* grid) noexcept nogil:
    """Whether the valid split ``left`` (its proxy ``proxy``) of the node ``total``
    replaces the best so far (``best_proxy``, -inf: none; its left child
    ``best_left``): a larger proxy, or, ``ties_win``, an equal one. Proxies within a
    relative TIE_MARGIN are compared exactly from the sums on ``grid``."""
    cdef int order
    if best_proxy == -INFINITY or proxy > best_proxy * (1.0 + TIE_MARGIN):
        return proxy > best_proxy
    if not proxy >= best_proxy * (1.0 - TIE_MARGIN):
        return False
    if grid.unit_s == 0.0:
        return proxy > best_proxy or (ties_win and proxy == best_proxy)
    order = exact_compare(
        <int64_t>(total.s / grid.unit_s), <int64_t>(total.w / grid.unit_w),
        <int64_t>(left.s / grid.unit_s), <int64_t>(left.w / grid.unit_w),
        <int64_t>(best_left.s / grid.unit_s), <int64_t>(best_left.w / grid.unit_w))
    return order > 0 or (order == 0 and ties_win)


cdef inline bint consider(float64_t* best_proxy, const side_t* best_left, bint ties_win,
                          const side_t* total, const side_t* left,
                          int64_t min_samples_leaf, float64_t min_weight_leaf,
                          uint8_t criterion, const grid_t* grid) noexcept nogil:
    """Keep the split (left child ``left`` of a node ``total``) if it is valid and
    ``beats`` the best so far (``best_proxy[0]``, its left child ``best_left``):
    update ``best_proxy[0]`` and return True (the caller keeps ``left``)."""
    cdef float64_t diff, den, proxy
    if not leaves_allowed(total, left, min_samples_leaf, min_weight_leaf):
        return False
    if criterion == CRITERION_SQUARED_ERROR:
        proxy = mse_proxy(total.s, total.w, left.s, left.w)
    else:
        diff = split_diff(total.s, total.w, left.s, left.w)
        den = split_den(total.w, left.w)
        # Cheap conservative test first: it only skips splits that cannot be better
        # nor tied, so the decision is that of the comparison below.
        if not may_beat(diff, den, best_proxy[0] * BOUND_FACTOR):
            return False
        proxy = split_proxy(diff, den)
    if beats(proxy, left, best_proxy[0], best_left, ties_win, total, grid):
        best_proxy[0] = proxy
        return True
    return False


cdef inline bint consider_ordered(float64_t* best_proxy, const side_t* best_left,
                                  bint ties_win, const side_t* total, const side_t* left,
                                  int64_t min_samples_leaf, float64_t min_weight_leaf,
                                  uint8_t criterion, const grid_t* grid,
                                  signed char monotonic) noexcept nogil:
    """``consider`` for a feature with a monotonic constraint (``monotonic``, -1 or
    +1): a split is valid only if its children's mean residuals are in the
    constraint's order (``children_ordered`` of _criterion.h, exact on the grid),
    tested only for a split that beats the best so far. The finders call it, not
    ``consider``, for such a feature alone (a flag read once per feature), so that
    the scans of unconstrained features are unchanged."""
    cdef float64_t before = best_proxy[0]
    if not consider(best_proxy, best_left, ties_win, total, left, min_samples_leaf,
                    min_weight_leaf, criterion, grid):
        return False
    if not children_ordered(monotonic, total.s, total.w, left.s, left.w, grid.unit_s,
                            grid.unit_w):
        best_proxy[0] = before
        return False
    return True


cdef inline float64_t friedman_proxy(const side_t* total, const side_t* left) noexcept nogil:
    """Friedman's proxy of a split (whatever criterion chose it): the node's
    improvement is this over the node's weight."""
    return split_proxy(split_diff(total.s, total.w, left.s, left.w),
                       split_den(total.w, left.w))


cdef inline bint decrease_allowed(float64_t min_impurity_decrease, float64_t total_weight,
                                  float64_t node_w, float64_t node_impurity,
                                  float64_t node_wr, float64_t node_wr2,
                                  const side_t* left, float64_t left_wr2) noexcept nogil:
    """min_impurity_decrease: whether a split of a node (weight ``node_w``,
    impurity ``node_impurity``, sums of w r and w r^2 ``node_wr``, ``node_wr2``) with
    left child ``left`` (its sum of w r^2 ``left_wr2``) decreases the weighted
    impurity enough, in a tree of weight ``total_weight`` (scikit-learn's rule and
    arithmetic: the right child's sums by subtraction)."""
    cdef float64_t w_right = node_w - left.w
    cdef float64_t imp_left = child_impurity(left.w, left.s, left_wr2)
    cdef float64_t imp_right = child_impurity(w_right, node_wr - left.s,
                                              node_wr2 - left_wr2)
    return not (weighted_decrease(total_weight, node_w, node_impurity, left.w, imp_left,
                                  imp_right) + IMPURITY_EPSILON < min_impurity_decrease)


cdef inline bint wins(float64_t proxy, int32_t feature, const side_t* left,
                      float64_t best_proxy, int32_t best_feature, const side_t* best_left,
                      const side_t* total, const grid_t* grid) noexcept nogil:
    """A split found on ``feature`` (-1: none; its left child ``left``) replaces the
    best so far of the same node ``total`` (found on ``best_feature``, -1: none): it
    ``beats`` it, an exact tie going to the lower feature."""
    if feature < 0:
        return False
    return best_feature < 0 or beats(proxy, left, best_proxy, best_left,
                                     feature < best_feature, total, grid)


cdef inline uint8_t missing_left(uint8_t direction, int64_t n_left,
                                 int64_t n_total) noexcept nogil:
    """Whether missing values go left: MISSING_TO_LARGER follows the child with
    more samples, the right one on a tie (scikit-learn's trees: ``n_left > n_right``)."""
    if direction == MISSING_TO_LARGER:
        return n_left > n_total - n_left
    return direction

