# The categorical split of a node, written once for every split finder.
#
# A categorical feature's values are category codes 0, 1, ... (at most
# MAX_CATEGORIES of them; missing values apart). A split sends a set of categories
# left (``cat_bits``: bit c of word c // 32 for code c) and the others right; missing
# values go left or right as a numeric split sends them.
#
# For squared error on one target, sorting the node's categories by their mean
# residual (sum w r / sum w) and cutting that order in two finds the best of all
# 2^(k-1) - 1 partitions of k categories (Fisher 1958; Breiman et al. 1984,
# section 9.4). ``categorical_scan`` sorts the categories that hold rows of the node
# by the float64 mean s / w of their sums (a category of zero weight: mean 0), an
# exact tie going to the lower code, and offers the prefixes of that order as the
# left child in turn, with the rule of _choice.pxd (``consider``): each prefix with
# missing values right, then left (or, in a node without missing values, one
# candidate whose missing values follow the larger child), and last "every category
# left, missing values right". Trying missing values on both sides of every prefix
# of the non-missing order covers every prefix of the order with missing values as a
# category of its own: the best partition with missing values anywhere is offered.
#
# Categories that hold no row of the node go right (they are not in the set), and
# so do those holding fewer than ``min_samples_category`` rows of the node (as
# LightGBM below its cat_smooth): they are not sorted. The default, 1, sorts every
# category with a row (as scikit-learn's HistGradientBoostingClassifier:
# ``min_samples_leaf`` and ``min_weight_leaf`` bound the children alone). Where a
# node has rows of such rare categories, the scan then offers the suffixes of the
# order (the last category, the last two, ..., all; missing values right then left)
# and last the missing values alone: with the rare categories as one group on the
# right, the best partition has a prefix or a suffix of the order left (Fisher's
# contiguity, the proxy being the same with the sides swapped), so the best
# partition keeping the rare categories right is offered.
#
# The finders hand in the same sums bit for bit (on the grid of _choice.pxd), so
# they sort alike and choose alike: hist == exact on categorical data.
from libc.string cimport memset

from ._common cimport float64_t, int64_t, intp_t, uint8_t, uint32_t
from ._split_finder cimport (
    side_t, grid_t, MISSING_RIGHT, MISSING_LEFT, MISSING_TO_LARGER,
)
from ._choice cimport consider

cdef enum:
    # Codes of a categorical feature: 0 .. MAX_CATEGORIES - 1 (a bin each in the
    # histogram finder, whose bin 255 at most is the missing values').
    MAX_CATEGORIES = 256
    CAT_WORDS = MAX_CATEGORIES // 32


cdef inline bint category_in(const uint32_t* bits, intp_t code) noexcept nogil:
    """Whether category ``code`` (0 .. MAX_CATEGORIES - 1) is in the set ``bits``."""
    return (bits[code >> 5] >> (code & 31)) & 1


cdef inline void _offer_prefix(const side_t* acc, const side_t* miss, const side_t* total,
                               intp_t lo, intp_t hi, float64_t* best_proxy,
                               side_t* best_left, uint8_t* ties_win,
                               int64_t min_samples_leaf, float64_t min_weight_leaf,
                               uint8_t criterion, const grid_t* grid, intp_t* best_lo,
                               intp_t* best_hi, uint8_t* best_missing) noexcept nogil:
    """The categories order[lo .. hi) (their sums ``acc``) left, missing values right
    then left (or to the larger child without missing values)."""
    cdef side_t with_missing
    if miss.n == 0:
        if consider(best_proxy, best_left, ties_win[0], total, acc, min_samples_leaf,
                    min_weight_leaf, criterion, grid):
            best_left[0] = acc[0]
            best_lo[0] = lo
            best_hi[0] = hi
            best_missing[0] = MISSING_TO_LARGER
            ties_win[0] = 0
        return
    if consider(best_proxy, best_left, ties_win[0], total, acc, min_samples_leaf,
                min_weight_leaf, criterion, grid):
        best_left[0] = acc[0]
        best_lo[0] = lo
        best_hi[0] = hi
        best_missing[0] = MISSING_RIGHT
        ties_win[0] = 0
    with_missing.n = acc.n + miss.n
    with_missing.w = acc.w + miss.w
    with_missing.s = acc.s + miss.s
    if consider(best_proxy, best_left, ties_win[0], total, &with_missing,
                min_samples_leaf, min_weight_leaf, criterion, grid):
        best_left[0] = with_missing
        best_lo[0] = lo
        best_hi[0] = hi
        best_missing[0] = MISSING_LEFT
        ties_win[0] = 0


cdef inline bint categorical_scan(const side_t* groups, intp_t n_codes, const side_t* miss,
                                  const side_t* total, float64_t* best_proxy,
                                  side_t* best_left, bint ties_win,
                                  int64_t min_samples_leaf, float64_t min_weight_leaf,
                                  uint8_t criterion, const grid_t* grid,
                                  int64_t min_samples_category, uint32_t* cat_bits,
                                  uint8_t* missing_go_left) noexcept nogil:
    """The best categorical split of a node (totals ``total``) whose rows of
    category c have the sums ``groups[c]`` (c < ``n_codes`` <= MAX_CATEGORIES) and
    whose missing values have ``miss``, if it beats the best so far
    (``best_proxy[0]``, its left child ``best_left``; ``ties_win``: an exact tie
    replaces it, for the first candidate of this scan only); a category of fewer
    than ``min_samples_category`` rows (and one of none) is never sent left.
    Returns whether one was kept: then ``best_proxy``, ``best_left``, ``cat_bits``
    (CAT_WORDS words: the categories sent left) and ``missing_go_left`` hold it."""
    cdef uint8_t order[MAX_CATEGORIES]
    cdef float64_t key[MAX_CATEGORIES]
    cdef intp_t c, i, j, m = 0, best_lo = 0, best_hi = -1
    cdef int64_t n_rare = 0
    cdef uint8_t best_missing = MISSING_RIGHT, tw = ties_win
    cdef uint8_t code
    cdef side_t acc
    if n_codes > MAX_CATEGORIES:
        n_codes = MAX_CATEGORIES
    for c in range(n_codes):
        if groups[c].n > 0 and groups[c].n < min_samples_category:
            n_rare += groups[c].n
        elif groups[c].n > 0:
            key[c] = groups[c].s / groups[c].w if groups[c].w > 0.0 else 0.0
            # Insertion sort by (mean, code): codes arrive in increasing order, so
            # an equal mean stays after the lower code.
            i = m
            while i > 0 and key[order[i - 1]] > key[c]:
                order[i] = order[i - 1]
                i -= 1
            order[i] = <uint8_t>c
            m += 1
    if m == 0 and (n_rare == 0 or miss.n == 0):
        return False
    acc.n = 0
    acc.w = 0.0
    acc.s = 0.0
    for j in range(m - 1):
        code = order[j]
        acc.n += groups[code].n
        acc.w += groups[code].w
        acc.s += groups[code].s
        _offer_prefix(&acc, miss, total, 0, j + 1, best_proxy, best_left, &tw,
                      min_samples_leaf, min_weight_leaf, criterion, grid, &best_lo,
                      &best_hi, &best_missing)
    if miss.n > 0 and m > 0:
        code = order[m - 1]
        acc.n += groups[code].n
        acc.w += groups[code].w
        acc.s += groups[code].s
        # Every category left, every missing value right.
        if consider(best_proxy, best_left, tw, total, &acc, min_samples_leaf,
                    min_weight_leaf, criterion, grid):
            best_left[0] = acc
            best_lo = 0
            best_hi = m
            best_missing = MISSING_RIGHT
            tw = 0
    if n_rare > 0:
        # The rare categories stay right: the best partition keeping them right has
        # a prefix or a suffix of the order left (Fisher's contiguity with the rare
        # categories as one group), or the missing values alone. The suffixes in
        # turn (the last category, the last two, ...), then the missing values.
        acc.n = 0
        acc.w = 0.0
        acc.s = 0.0
        for j in range(m - 1, -1, -1):
            code = order[j]
            acc.n += groups[code].n
            acc.w += groups[code].w
            acc.s += groups[code].s
            _offer_prefix(&acc, miss, total, j, m, best_proxy, best_left, &tw,
                          min_samples_leaf, min_weight_leaf, criterion, grid, &best_lo,
                          &best_hi, &best_missing)
        if miss.n > 0 and consider(best_proxy, best_left, tw, total, miss,
                                   min_samples_leaf, min_weight_leaf, criterion, grid):
            best_left[0] = miss[0]
            best_lo = 0
            best_hi = 0
            best_missing = MISSING_LEFT
    if best_hi < 0:
        return False
    memset(cat_bits, 0, CAT_WORDS * sizeof(uint32_t))
    for j in range(best_lo, best_hi):
        code = order[j]
        cat_bits[code >> 5] |= (<uint32_t>1) << (code & 31)
    missing_go_left[0] = best_missing
    return True
