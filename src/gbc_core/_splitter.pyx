"""Exact (sorted-feature) split search and level-wise growth of one regression tree.

Every feature is sorted once per fit (``_sorting.presort_features``). A tree is then
grown level by level: for each level, one pass over each feature's sorted order
accumulates the left-hand statistics of every node of the level at once, so a level
costs O(n_samples x n_features) whatever the number of nodes. Features are scanned in
parallel (OpenMP ``prange``); each thread keeps its own per-node state, and the best
split of a node is the maximum over features under a total order (gain, then lowest
feature index, then lowest threshold), so the result does not depend on the number
of threads.

The criterion is the squared error of the residuals r = y - p (paper, Algorithm 1,
line 7: "train a regression tree to fit r"), written in the Friedman form used by
scikit-learn:

    proxy = (S_R W_L - S_L W_R)^2 / (W_L W_R)

with S the weighted residual sums and W the weight sums of the two children; it is
W times the decrease of the weighted squared error, so it ranks splits identically.
"""
cimport cython
from cpython.exc cimport PyErr_CheckSignals
from cython.parallel cimport prange, threadid
from libc.float cimport DBL_MAX
from libc.math cimport INFINITY, isinf, nextafterf
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset


import numpy as np

from ._common cimport (
    float32_t, float64_t, int32_t, int64_t, uint8_t, uint32_t, intp_t,
    node_t, row_stat_t, FEATURE_THRESHOLD, IMPURITY_EPSILON,
)
from ._common import NODE_DTYPE

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define GBC_PREFETCH(p) __builtin_prefetch((const void*)(p), 0, 3)
    #elif defined(_MSC_VER)
    #include <xmmintrin.h>
    #define GBC_PREFETCH(p) _mm_prefetch((const char*)(p), _MM_HINT_T0)
    #else
    #define GBC_PREFETCH(p) ((void)0)
    #endif
    """
    void GBC_PREFETCH(const void* p) noexcept nogil

cdef extern from *:
    """
    #include <stdlib.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    /* Buffers that the scan reads at random: on Linux, from 4 MiB on (most of the
       second-level TLB's reach with 4 KiB pages, about 6 MiB, which the streamed
       arrays share), 2 MiB aligned and marked for transparent huge pages, which
       spares most TLB misses of the gather (a hint: without huge pages it is
       ordinary memory). Smaller buffers gain nothing (measured at 200k rows). */
    static void* gbc_alloc_random_access(size_t size) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        const size_t align = (size_t)2 << 20;
        void* p = NULL;
        if (size >= 2 * align) {
            size_t rounded = (size + align - 1) / align * align;
            if (posix_memalign(&p, align, rounded) != 0) return NULL;
            madvise(p, rounded, MADV_HUGEPAGE);
            return p;
        }
    #endif
        return malloc(size ? size : 1);
    }
    """
    void* gbc_alloc_random_access(size_t size) noexcept nogil

cdef extern from "_scan.h" nogil:
    intp_t root_scan_to_candidate "gbc_root_scan_to_candidate"(
        const int32_t* order, const float64_t* row_wr, intp_t start, intp_t stop,
        float64_t* s_left, float64_t total_w, float64_t total_s, float64_t bound,
        intp_t prefetch_stop, intp_t distance)
    ctypedef struct node_scan_t "gbc_node_scan_t":
        float64_t s_left
        float64_t total_w
        float64_t w_left
        float64_t total_s
        float64_t bound
        intp_t last_pos
    # ``row_node`` of a row outside the nodes being split (so at most NO_NODE nodes
    # per level take the byte-sized path).
    const uint8_t NO_NODE "GBC_NO_NODE"
    intp_t level_scan_to_candidate "gbc_level_scan_to_candidate"(
        const int32_t* order, const float64_t* row_wr, const uint8_t* row_node,
        node_scan_t* nodes, intp_t start, intp_t stop, intp_t prefetch_stop,
        intp_t distance)

cdef enum:
    # How many sorted positions ahead the scan prefetches the rows it will gather.
    PREFETCH_DISTANCE = 48
    # Rows per chunk of the partition pass; fixed, so that the per-child sums of
    # squares are added in the same order for any number of threads.
    CHUNK = 8192
    # Below these sizes a level runs on one thread (see _find_splits).
    MIN_PARALLEL_SCAN = 1000000
    MIN_PARALLEL_ROWS = 200000


ctypedef unsigned long long uint64_t_t


ctypedef struct side_t:
    # Sufficient statistics of a set of samples.
    int64_t n
    float64_t w
    float64_t s      # sum of w * r
    float64_t s2     # sum of w * r^2


ctypedef struct split_t:
    # Best split found so far for one node. The threshold is derived from the two
    # values around it only once the node's best split is known.
    float64_t proxy
    side_t left              # statistics of the left child (missing values included
                             # when they go left)
    float32_t lo             # largest value going left
    float32_t hi             # smallest non-missing value going right
    int32_t feature          # -1: nothing found
    uint8_t missing_go_left  # MISSING_RIGHT, MISSING_LEFT or MISSING_TO_LARGER
    uint8_t all_left         # 1: every non-missing value goes left (threshold +inf)


ctypedef struct scan_t:
    # State of one node while one feature is scanned.
    side_t acc               # non-missing samples seen so far (they go left)
    side_t miss              # samples whose value is missing for this feature
    split_t best
    int64_t total_n          # node totals, copied here for the hot loop; total_n = 0
    float64_t total_w        # marks a node that must not be split on this feature
    float64_t total_s
    uint64_t_t n_span        # total_n - 2 min_samples_leaf + 1 (0: no split allowed)
    float64_t best_bound     # best.proxy (1 - 1e-12): the cheap test's bound
    intp_t last_pos          # fast scan: sorted position of the node's previous sample
    float32_t last_value     # other scans: the node's previous value


ctypedef struct packed_row_t:
    # What the scan gathers for a row, in one 16-byte record (one cache line).
    float64_t wr             # w * r
    int32_t slot             # node of the level being split (-1: none)
    float32_t w              # the sample weight (exact in float32 on the fast path)


ctypedef struct slot_t:
    # A node of the level being split.
    side_t total
    int32_t node             # index of the node in the tree buffer
    uint8_t splittable


cdef inline void _side_add(side_t* a, const row_stat_t* r) noexcept nogil:
    # s2 is not accumulated by the scan: the partition pass computes it per child.
    a.n += 1
    a.w += r.w
    a.s += r.wr


cdef inline void _side_zero(side_t* a) noexcept nogil:
    a.n = 0
    a.w = 0.0
    a.s = 0.0
    a.s2 = 0.0


cdef inline float64_t _impurity(const side_t* a) noexcept nogil:
    """Weighted variance of the residuals (scikit-learn's MSE node impurity)."""
    cdef float64_t mean
    if a.w <= 0.0:
        return 0.0
    mean = a.s / a.w
    return a.s2 / a.w - mean * mean


cdef enum:
    MISSING_RIGHT = 0
    MISSING_LEFT = 1
    MISSING_TO_LARGER = 2    # no missing value in the node: NaN follows the larger child


cdef inline void _try_split(
    split_t* best,
    const side_t* total,
    const side_t* left,
    float32_t lo,
    float32_t hi,
    uint8_t missing_go_left,
    int64_t min_samples_leaf,
    float64_t min_weight_leaf,
) noexcept nogil:
    """Keep the split if it is valid and strictly better than ``best``."""
    cdef float64_t w_right, s_right, diff, den, proxy
    cdef int64_t n_right = total.n - left.n
    if left.n < min_samples_leaf or n_right < min_samples_leaf:
        return
    w_right = total.w - left.w
    if left.w <= 0.0 or w_right <= 0.0 or left.w < min_weight_leaf or w_right < min_weight_leaf:
        return
    s_right = total.s - left.s
    diff = s_right * left.w - left.s * w_right
    den = left.w * w_right
    # Cheap conservative test first: it only skips splits that cannot be better, so
    # the decision is that of the exact comparison below.
    if diff * diff < best.proxy * den * (1.0 - 1e-12):
        return
    proxy = diff * diff / den
    if proxy > best.proxy:
        best.proxy = proxy
        best.lo = lo
        best.hi = hi
        best.all_left = 0
        best.left = left[0]
        best.missing_go_left = missing_go_left


cdef inline bint _try_split_improves(
    split_t* best,
    const side_t* total,
    const side_t* left,
    int64_t min_samples_leaf,
    float64_t min_weight_leaf,
) noexcept nogil:
    """The split "every non-missing value left, every missing value right"."""
    cdef float64_t before = best.proxy
    _try_split(best, total, left, 0, 0, MISSING_RIGHT, min_samples_leaf, min_weight_leaf)
    return best.proxy != before


cdef inline void _consider(
    scan_t* st,
    const side_t* total,
    float32_t lo,
    float32_t hi,
    int64_t min_samples_leaf,
    float64_t min_weight_leaf,
) noexcept nogil:
    """Evaluate "x <= (lo + hi) / 2 goes left", missing values sent right, then left."""
    cdef side_t with_missing
    if st.miss.n == 0:
        _try_split(&st.best, total, &st.acc, lo, hi, MISSING_TO_LARGER,
                   min_samples_leaf, min_weight_leaf)
        return
    _try_split(&st.best, total, &st.acc, lo, hi, MISSING_RIGHT, min_samples_leaf,
               min_weight_leaf)
    with_missing.n = st.acc.n + st.miss.n
    with_missing.w = st.acc.w + st.miss.w
    with_missing.s = st.acc.s + st.miss.s
    _try_split(&st.best, total, &with_missing, lo, hi, MISSING_LEFT, min_samples_leaf,
               min_weight_leaf)


cdef inline float64_t _midpoint(float32_t lo, float32_t hi) noexcept nogil:
    """Threshold between two consecutive distinct values, as scikit-learn computes it.

    With lo = -inf (an ordinary value here) the threshold is -DBL_MAX: only -inf goes
    left, and the threshold stays finite.
    """
    cdef float64_t t
    if isinf(lo):
        return -DBL_MAX
    t = lo / 2.0 + hi / 2.0
    if t == hi or isinf(t):
        t = lo
    return t


cdef inline float32_t _float32_at_most(float64_t t) noexcept nogil:
    """Largest float32 <= t, so that float32 ``x <= t32`` iff ``x <= t``."""
    cdef float32_t t32 = <float32_t>t
    if <float64_t>t32 > t:
        t32 = nextafterf(t32, -INFINITY)
    return t32


cdef inline uint64_t_t _splitmix64(uint64_t_t* state) noexcept nogil:
    cdef uint64_t_t z
    state[0] += 0x9E3779B97F4A7C15ULL
    z = state[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)



cdef inline void _keep_split(
    split_t* best,
    float64_t proxy,
    float32_t lo,
    float32_t hi,
    int64_t n_left,
    float64_t w_left,
    float64_t s_left,
) noexcept nogil:
    """Record a new best split of the fast scans (no missing value in the feature)."""
    best.proxy = proxy
    best.lo = lo
    best.hi = hi
    best.left.n = n_left
    best.left.w = w_left
    best.left.s = s_left
    best.left.s2 = 0.0
    best.missing_go_left = MISSING_TO_LARGER
    best.all_left = 0


cdef inline bint _decide(
    scan_t* st,
    int64_t n_left,
    float64_t w_left,
    float64_t s_left,
    const float32_t* values_f,
    intp_t k,
    intp_t last_pos,
    int64_t min_samples_leaf,
) noexcept nogil:
    """The decision of the scans at sorted position ``k`` for the node ``st``, whose
    samples before ``k`` number ``n_left`` (weight ``w_left``, sum of w * r
    ``s_left``), the last of them at ``last_pos``: keep the split before ``k`` if it
    is valid and strictly better. Returns True if it was kept.

    Paper Algorithm 1, line 7: the squared-error proxy of the split. The cheap bound
    test comes first since it rejects almost every position; then n_left in
    [min_samples_leaf, total_n - min_samples_leaf] as one unsigned comparison (n_span
    is 0 for a node that is not split on this feature; with n_left = 0 or n_right = 0,
    den = 0 and one of the two tests fails, the bound test being NaN for -inf), and
    only then, at the rare positions that pass both, a new distinct value: the values
    are read there and not streamed.
    """
    cdef float64_t w_right = st.total_w - w_left
    cdef float64_t diff = (st.total_s - s_left) * w_left - s_left * w_right
    cdef float64_t den = w_left * w_right
    cdef float64_t proxy
    cdef float32_t v, last
    if (diff * diff >= st.best_bound * den
            and <uint64_t_t>(n_left - min_samples_leaf) < st.n_span):
        v = values_f[k]
        last = values_f[last_pos]  # n_left >= 1: the node has a previous sample
        proxy = diff * diff / den
        if v > last + FEATURE_THRESHOLD and proxy > st.best.proxy:
            _keep_split(&st.best, proxy, last, v, n_left, w_left, s_left)
            st.best_bound = proxy * (1.0 - 1e-12)
            return True
    return False


cdef inline void _scan_fast(
    scan_t* states,
    const int32_t* order_f,
    const float32_t* values_f,
    intp_t n_valid,
    const packed_row_t* rows,
    int64_t min_samples_leaf,
) noexcept nogil:
    """The scan of one feature without missing values, zero or non-float32 weights
    or a minimum leaf weight: the common case, with few instructions and a single
    gathered 16-byte record per sample (with unit weights, ``_scan_level_unit``
    does the same on 9 bytes per sample).

    For each sample in increasing order of the feature, the split between the node's
    previous value and this one is evaluated (squared-error proxy, strict ">" so the
    lowest threshold wins ties), then the sample joins the node's left statistics.
    """
    cdef intp_t k, stop
    cdef int32_t slot
    cdef scan_t* st
    cdef int64_t n_left
    cdef float64_t w_left, s_left
    cdef const packed_row_t* rs
    cdef intp_t row
    stop = n_valid - PREFETCH_DISTANCE
    for k in range(n_valid):
        if k < stop:
            GBC_PREFETCH(&rows[order_f[k + PREFETCH_DISTANCE]])
        row = order_f[k]
        rs = &rows[row]
        slot = rs.slot
        if slot < 0:
            continue
        st = &states[slot]
        n_left = st.acc.n
        s_left = st.acc.s
        w_left = st.acc.w
        _decide(st, n_left, w_left, s_left, values_f, k, st.last_pos, min_samples_leaf)
        st.acc.n = n_left + 1
        st.acc.w = w_left + rs.w
        st.acc.s = s_left + rs.wr
        st.last_pos = k


cdef inline void _scan_root(
    scan_t* st,
    const int32_t* order_f,
    const float32_t* values_f,
    intp_t n_valid,
    const packed_row_t* rows,
    int64_t min_samples_leaf,
) noexcept nogil:
    """``_scan_fast`` for a root that holds every row: no node lookup per sample and
    the running sums stay in registers (weighted rows; ``_scan_root_unit`` for unit
    weights)."""
    cdef intp_t k, row, stop = n_valid - PREFETCH_DISTANCE
    cdef float32_t v, last
    cdef int64_t n_left = 0, total_n = st.total_n
    cdef float64_t w_left = 0.0, s_left = 0.0, w_right, diff, den, proxy
    cdef float64_t total_w = st.total_w, total_s = st.total_s, best = st.best.proxy
    cdef float64_t best_bound = best * (1.0 - 1e-12)
    for k in range(n_valid):
        if k < stop:
            GBC_PREFETCH(&rows[order_f[k + PREFETCH_DISTANCE]])
        row = order_f[k]
        # The same tests as in ``_scan_fast``, in the same order; here n_left = k.
        w_right = total_w - w_left
        diff = (total_s - s_left) * w_left - s_left * w_right
        den = w_left * w_right
        if (diff * diff >= best_bound * den
                and n_left >= min_samples_leaf and total_n - n_left >= min_samples_leaf):
            v = values_f[k]
            last = values_f[k - 1]
            proxy = diff * diff / den
            if v > last + FEATURE_THRESHOLD and proxy > best:
                best = proxy
                best_bound = proxy * (1.0 - 1e-12)
                _keep_split(&st.best, proxy, last, v, n_left, w_left, s_left)
        n_left += 1
        w_left += rows[row].w
        s_left += rows[row].wr
    st.acc.n = n_left
    st.acc.w = w_left
    st.acc.s = s_left


cdef inline void _scan_root_unit(
    scan_t* st,
    const int32_t* order_f,
    const float32_t* values_f,
    intp_t n_valid,
    const float64_t* row_wr,
    int64_t min_samples_leaf,
) noexcept nogil:
    """``_scan_root`` with unit weights: the running sum and the cheap test run in
    ``_scan.h`` (two positions per step) up to each position that passes the test,
    where ``_decide`` makes the exact decision, matching ``_scan_root`` split for
    split. Only positions with n_left in [min_samples_leaf, total_n -
    min_samples_leaf] are tested (the others cannot hold a split)."""
    cdef intp_t k, first, stop, prefetch_stop = n_valid - PREFETCH_DISTANCE - 1
    cdef float64_t s_left = 0.0
    first = min(<intp_t>min_samples_leaf, n_valid)
    stop = max(first, min(<intp_t>(st.total_n - min_samples_leaf + 1), n_valid))
    for k in range(first):
        s_left += row_wr[order_f[k]]
    k = first
    while True:
        k = root_scan_to_candidate(order_f, row_wr, k, stop, &s_left, st.total_w,
                                   st.total_s, st.best_bound, prefetch_stop,
                                   PREFETCH_DISTANCE)
        if k >= stop:
            break
        # The decision of the scans at this position (n_left = w_left = k).
        _decide(st, k, <float64_t>k, s_left, values_f, k, k - 1, min_samples_leaf)
        s_left += row_wr[order_f[k]]
        k += 1
    for k in range(stop, n_valid):
        s_left += row_wr[order_f[k]]
    st.acc.n = n_valid
    st.acc.w = <float64_t>n_valid
    st.acc.s = s_left


cdef inline void _scan_level_unit(
    scan_t* states,
    node_scan_t* node_scan,
    intp_t n_slots,
    const int32_t* order_f,
    const float32_t* values_f,
    intp_t n_valid,
    const float64_t* row_wr,
    const uint8_t* row_node,
    int64_t min_samples_leaf,
) noexcept nogil:
    """``_scan_fast`` with unit weights (fewer than NO_NODE nodes): the running sums
    and the cheap test run in ``_scan.h`` on one cache line of state per node, up to
    each position that passes the test, where the exact decision is made as in
    ``_scan_fast``, which it matches split for split."""
    cdef intp_t k = 0, s, row, prefetch_stop = n_valid - PREFETCH_DISTANCE
    cdef int32_t slot
    cdef scan_t* st
    cdef node_scan_t* ns
    cdef float64_t w_left, s_left
    for s in range(n_slots):
        ns = &node_scan[s]
        ns.s_left = 0.0
        ns.w_left = 0.0
        ns.total_w = states[s].total_w
        ns.total_s = states[s].total_s
        # A node not split on this feature never passes the test.
        ns.bound = states[s].best_bound if states[s].n_span > 0 else INFINITY
        ns.last_pos = -1
    while True:
        k = level_scan_to_candidate(order_f, row_wr, row_node, node_scan, k, n_valid,
                                    prefetch_stop, PREFETCH_DISTANCE)
        if k >= n_valid:
            break
        # The decision of _scan_fast at this position.
        row = order_f[k]
        slot = row_node[row]
        st = &states[slot]
        ns = &node_scan[slot]
        w_left = ns.w_left
        s_left = ns.s_left
        if _decide(st, <int64_t>w_left, w_left, s_left, values_f, k, ns.last_pos,
                   min_samples_leaf):
            ns.bound = st.best_bound
        ns.s_left = s_left + row_wr[row]
        ns.w_left = w_left + 1.0
        ns.last_pos = k
        k += 1
    for s in range(n_slots):
        states[s].acc.n = <int64_t>node_scan[s].w_left
        states[s].acc.w = node_scan[s].w_left
        states[s].acc.s = node_scan[s].s_left
        states[s].last_pos = node_scan[s].last_pos


cdef void* _grow(void* buffer, intp_t count, size_t item_size, str what) except NULL:
    """realloc ``buffer`` to ``count`` items, or raise MemoryError naming ``what``."""
    cdef void* p = realloc(buffer, max(count, 1) * item_size)
    if p == NULL:
        raise MemoryError(f"cannot allocate {count} {what} ({count * item_size} bytes)")
    return p


@cython.final
cdef class TreeGrower:
    """Grow regression trees on pre-sorted features, reusing its buffers across trees.

    Parameters
    ----------
    X : float32 array of shape (n_samples, n_features), Fortran order
    order, sorted_values, n_nonmissing : arrays from ``presort_features``
    max_depth : int
        Maximum depth; -1 for no limit.
    min_samples_split, min_samples_leaf : int
    min_weight_leaf : float
    max_features : int
        Features drawn at random for each node (``n_features`` for all).
    n_threads : int
    positive_weights : bool
        True if every sample weight is > 0 and exactly representable in float32
        (always true without weights); enables the lean scan.
    """
    cdef:
        const float32_t[::1, :] X
        const int32_t[:, ::1] order
        const float32_t[:, ::1] sorted_values
        const int64_t[::1] n_nonmissing
        intp_t n_samples
        intp_t n_features
        int n_threads
        int max_depth
        int64_t min_samples_split
        int64_t min_samples_leaf
        float64_t min_weight_leaf
        bint positive_weights    # every weight > 0 and exactly a float32
        bint all_rows_in_root
        intp_t max_features
        readonly int32_t[::1] node_of_row
        packed_row_t* rows
        float64_t* row_wr        # rows[i].wr alone: what the unweighted scans gather
        uint8_t* row_node        # rows[i].slot as a byte (NO_NODE: none or too many)
        bint unit_weights        # every sample weight is 1
        node_t* nodes
        intp_t node_capacity
        readonly intp_t n_nodes
        slot_t* slots
        intp_t slot_capacity
        scan_t* scan
        split_t* thread_best
        node_scan_t* node_scan   # per thread and node: hot state of the unit-weight scan
        uint8_t* allowed
        int32_t* perm
        float64_t* partial
        intp_t partial_capacity

    def __cinit__(self):
        self.nodes = NULL
        self.slots = NULL
        self.scan = NULL
        self.thread_best = NULL
        self.node_scan = NULL
        self.allowed = NULL
        self.perm = NULL
        self.rows = NULL
        self.row_wr = NULL
        self.row_node = NULL
        self.partial = NULL
        self.partial_capacity = 0
        self.node_capacity = 0
        self.slot_capacity = 0

    def __init__(self, const float32_t[::1, :] X, const int32_t[:, ::1] order,
                 const float32_t[:, ::1] sorted_values, const int64_t[::1] n_nonmissing,
                 int max_depth, int64_t min_samples_split, int64_t min_samples_leaf,
                 float64_t min_weight_leaf, intp_t max_features, int n_threads,
                 bint positive_weights=False):
        self.X = X
        self.order = order
        self.sorted_values = sorted_values
        self.n_nonmissing = n_nonmissing
        self.n_samples = X.shape[0]
        self.n_features = X.shape[1]
        self.max_depth = max_depth
        self.min_samples_split = max(min_samples_split, 2)
        self.min_samples_leaf = max(min_samples_leaf, 1)
        self.min_weight_leaf = min_weight_leaf
        self.positive_weights = positive_weights
        self.max_features = max(1, min(max_features, self.n_features))
        self.n_threads = max(1, n_threads)
        self.node_of_row = np.zeros(self.n_samples, dtype=np.int32)
        self.rows = <packed_row_t*>gbc_alloc_random_access(
            max(1, self.n_samples) * sizeof(packed_row_t))
        if self.rows == NULL:
            raise MemoryError(f"cannot allocate row records for {self.n_samples} samples")
        self.row_wr = <float64_t*>gbc_alloc_random_access(
            max(1, self.n_samples) * sizeof(float64_t))
        if self.row_wr == NULL:
            raise MemoryError(f"cannot allocate row sums for {self.n_samples} samples")
        self.row_node = <uint8_t*>_grow(NULL, self.n_samples, sizeof(uint8_t), "row nodes")
        self.perm = <int32_t*>malloc(max(1, self.n_features) * sizeof(int32_t))
        if self.perm == NULL:
            raise MemoryError()
        # A first guess; both buffers grow (per level, never per node) when needed.
        cdef intp_t slots = 1 << min(max_depth if max_depth > 0 else 10, 10)
        self._reserve_slots(min(slots, max(self.n_samples, 1)))
        self._reserve_nodes(min(2 * slots + 1, 2 * max(self.n_samples, 1) + 1))

    def __dealloc__(self):
        free(self.nodes)
        free(self.slots)
        free(self.scan)
        free(self.thread_best)
        free(self.node_scan)
        free(self.allowed)
        free(self.perm)
        free(self.rows)
        free(self.row_wr)
        free(self.row_node)
        free(self.partial)

    cdef int _reserve_partial(self, intp_t capacity) except -1:
        if capacity > self.partial_capacity:
            self.partial = <float64_t*>_grow(self.partial, capacity, sizeof(float64_t),
                                             "partial sums")
            self.partial_capacity = capacity
        return 0

    cdef int _reserve_nodes(self, intp_t capacity) except -1:
        if capacity > self.node_capacity:
            self.nodes = <node_t*>_grow(self.nodes, capacity, sizeof(node_t), "tree nodes")
            self.node_capacity = capacity
        return 0

    cdef int _reserve_slots(self, intp_t capacity) except -1:
        if capacity <= self.slot_capacity:
            return 0
        self.slots = <slot_t*>_grow(self.slots, 2 * capacity, sizeof(slot_t), "split buffers")
        self.scan = <scan_t*>_grow(self.scan, self.n_threads * capacity, sizeof(scan_t),
                                   "split buffers")
        self.thread_best = <split_t*>_grow(self.thread_best, self.n_threads * capacity,
                                           sizeof(split_t), "split buffers")
        self.node_scan = <node_scan_t*>_grow(self.node_scan, self.n_threads * capacity,
                                             sizeof(node_scan_t), "split buffers")
        if self.max_features < self.n_features:
            self.allowed = <uint8_t*>_grow(self.allowed, capacity * self.n_features,
                                           sizeof(uint8_t), "feature draws")
        self.slot_capacity = capacity
        return 0

    def nodes_array(self):
        """Copy of the nodes of the last grown tree as a structured array (NODE_DTYPE)."""
        out = np.empty(self.n_nodes, dtype=NODE_DTYPE)
        cdef node_t[::1] view = out
        cdef intp_t i
        for i in range(self.n_nodes):
            view[i] = self.nodes[i]
        return out

    def set_leaf_values(self, const float64_t[::1] values):
        """Overwrite the ``value`` of every node of the last grown tree."""
        cdef intp_t i
        if values.shape[0] != self.n_nodes:
            raise ValueError("values must have one entry per node")
        for i in range(self.n_nodes):
            self.nodes[i].value = values[i]

    cdef void _init_node(self, intp_t i, const side_t* stats, int depth) noexcept nogil:
        cdef node_t* nd = &self.nodes[i]
        memset(nd, 0, sizeof(node_t))  # padding bytes too: a node's bytes are deterministic
        nd.value = stats.s / stats.w if stats.w > 0 else 0.0
        nd.threshold = 0.0
        nd.threshold32 = 0.0
        nd.improvement = 0.0
        nd.weighted_n = stats.w
        nd.n_samples = stats.n
        nd.feature = -1
        nd.left = -1
        nd.right = -1
        nd.missing_go_left = 0
        nd.depth = <uint8_t>min(depth, 255)

    def grow(self, const row_stat_t[::1] row_stats, const float64_t[::1] residual,
             const uint8_t[::1] sample_mask, unsigned long long seed=0):
        """Grow one tree on the current row statistics.

        Parameters
        ----------
        row_stats : ROW_STAT_DTYPE array of shape (n_samples,)
            w*r and w of each row (r the residual of paper Algorithm 1, line 5).
        residual : float64 array of shape (n_samples,)
            r itself (for the sums of w*r^2 of the impurity test).
        sample_mask : uint8 array of shape (n_samples,) or None
            1 for in-bag rows (stochastic boosting); None uses every row.
        seed : int
            Seed of the per-node feature draws when ``max_features < n_features``.

        Returns
        -------
        n_nodes : int
            Number of nodes; ``node_of_row`` then holds the leaf of every row.
        """
        cdef intp_t i, n = self.n_samples
        cdef side_t root
        cdef int depth = 0
        cdef intp_t n_slots, n_split, level_first_child, n_chunks
        cdef bint chunked
        _side_zero(&root)
        self.all_rows_in_root = sample_mask is None
        self.unit_weights = True
        for i in range(n):
            self.node_of_row[i] = 0
            self.rows[i].wr = row_stats[i].wr
            self.row_wr[i] = row_stats[i].wr
            self.unit_weights = self.unit_weights and row_stats[i].w == 1.0
            self.rows[i].w = <float32_t>row_stats[i].w
            if sample_mask is None or sample_mask[i]:
                self.rows[i].slot = 0
                self.row_node[i] = 0
                _side_add(&root, &row_stats[i])
                root.s2 += row_stats[i].w * residual[i] * residual[i]
            else:
                self.rows[i].slot = -1
                self.row_node[i] = NO_NODE
        self._init_node(0, &root, 0)
        self.n_nodes = 1
        self.slots[0].total = root
        self.slots[0].node = 0
        n_slots = 1
        while n_slots > 0 and (self.max_depth < 0 or depth < self.max_depth):
            if not self._mark_splittable(n_slots):
                break
            self._reserve_nodes(self.n_nodes + 2 * n_slots)
            self._reserve_slots(2 * n_slots)
            if self.max_features < self.n_features:
                self._draw_features(n_slots, seed, depth)
            n_chunks = (n + CHUNK - 1) // CHUNK
            chunked = n_chunks * 2 * n_slots <= (1 << 22)
            self._reserve_partial(n_chunks * 2 * n_slots if chunked else 2 * n_slots)
            with nogil:
                self._find_splits(row_stats, n_slots)
                level_first_child = self.n_nodes
                n_split = self._apply_splits(n_slots, depth)
                if n_split > 0:
                    self._partition(level_first_child, 2 * n_split, row_stats, residual,
                                    chunked)
            n_slots = 2 * n_split
            # Ctrl-C (or any pending signal) stops a fit between two levels.
            PyErr_CheckSignals()
            depth += 1
        return self.n_nodes

    cdef bint _mark_splittable(self, intp_t n_slots):
        cdef intp_t s
        cdef bint any_ = False
        cdef slot_t* sl
        for s in range(n_slots):
            sl = &self.slots[s]
            sl.splittable = (
                sl.total.n >= self.min_samples_split
                and sl.total.n >= 2 * self.min_samples_leaf
                and sl.total.w >= 2 * self.min_weight_leaf
                and _impurity(&sl.total) > IMPURITY_EPSILON
            )
            any_ = any_ or sl.splittable
        return any_

    cdef void _draw_features(self, intp_t n_slots, unsigned long long seed, int depth):
        """Draw ``max_features`` features for every node of the level (seeded by node)."""
        cdef intp_t s, j, k, d = self.n_features
        cdef int32_t tmp
        cdef uint64_t_t state
        for s in range(n_slots):
            state = seed ^ (<uint64_t_t>(self.slots[s].node + 1) * 0x632BE59BD9B4E019ULL)
            for j in range(d):
                self.perm[j] = <int32_t>j
                self.allowed[s * d + j] = 0
            for j in range(self.max_features):
                k = j + <intp_t>(_splitmix64(&state) % <uint64_t_t>(d - j))
                tmp = self.perm[j]; self.perm[j] = self.perm[k]; self.perm[k] = tmp
                self.allowed[s * d + self.perm[j]] = 1

    cdef void _find_splits(self, const row_stat_t[::1] row_stats, intp_t n_slots) noexcept nogil:
        cdef intp_t f, k, s, n_valid, row
        cdef int tid, t
        cdef int n_threads = <int>min(<intp_t>self.n_threads, self.n_features)
        cdef scan_t* states
        cdef scan_t* st
        cdef split_t* tb
        cdef split_t* b
        cdef float32_t v
        cdef const int32_t* order_f
        cdef const float32_t* values_f
        cdef bint restrict = self.max_features < self.n_features
        cdef int32_t slot
        # A level's scan must be long enough (about a millisecond per thread) to pay
        # for the start-up and the closing barrier of a parallel region, which on a
        # busy machine can cost a scheduler time slice.
        if self.n_samples * self.n_features < MIN_PARALLEL_SCAN:
            n_threads = 1
        for t in range(n_threads):
            for s in range(n_slots):
                self.thread_best[t * self.slot_capacity + s].proxy = -INFINITY
                self.thread_best[t * self.slot_capacity + s].feature = -1
        # Features are handed out one at a time (their costs differ: a feature whose
        # gains keep improving takes the exact path more often). Each thread still
        # sees its features in increasing order, which the tie rule below relies on,
        # and the reduction over threads does not depend on who scanned what.
        for f in prange(self.n_features, schedule="dynamic", chunksize=1,
                        num_threads=n_threads):
            tid = threadid()
            states = self.scan + tid * self.slot_capacity
            tb = self.thread_best + tid * self.slot_capacity
            for s in range(n_slots):
                _side_zero(&states[s].acc)
                _side_zero(&states[s].miss)
                # Only a split strictly better than the best of the features this
                # thread has already scanned can change the result: starting from
                # that gain keeps the result and skips most exact evaluations.
                states[s].best.proxy = tb[s].proxy
                states[s].best.feature = -1
                states[s].last_value = 0
                states[s].last_pos = -1
                states[s].total_w = self.slots[s].total.w
                states[s].total_s = self.slots[s].total.s
                if self.slots[s].splittable and (
                        not restrict or self.allowed[s * self.n_features + f]):
                    states[s].total_n = self.slots[s].total.n
                else:
                    states[s].total_n = 0
                states[s].n_span = <uint64_t_t>max(
                    states[s].total_n - 2 * self.min_samples_leaf + 1, 0)
                states[s].best_bound = states[s].best.proxy * (1.0 - 1e-12)
            order_f = &self.order[f, 0]
            values_f = &self.sorted_values[f, 0]
            n_valid = self.n_nonmissing[f]
            if n_valid == self.n_samples and self.positive_weights and self.min_weight_leaf <= 0:
                if n_slots == 1 and self.all_rows_in_root:
                    if self.unit_weights:
                        _scan_root_unit(states, order_f, values_f, n_valid, self.row_wr,
                                        self.min_samples_leaf)
                    else:
                        _scan_root(states, order_f, values_f, n_valid, self.rows,
                                   self.min_samples_leaf)
                elif self.unit_weights and n_slots < NO_NODE:
                    _scan_level_unit(states, self.node_scan + tid * self.slot_capacity,
                                     n_slots, order_f, values_f, n_valid, self.row_wr,
                                     self.row_node, self.min_samples_leaf)
                else:
                    _scan_fast(states, order_f, values_f, n_valid, self.rows,
                               self.min_samples_leaf)
                n_valid = -1  # done
            # Missing values (sorted last) first: their totals are needed to send
            # them to either side of every candidate threshold.
            for k in range(max(n_valid, 0), self.n_samples if n_valid >= 0 else 0):
                row = order_f[k]
                slot = self.rows[row].slot
                if slot >= 0:
                    _side_add(&states[slot].miss, &row_stats[row])
            for k in range(max(n_valid, 0)):
                if k + PREFETCH_DISTANCE < n_valid:
                    row = order_f[k + PREFETCH_DISTANCE]
                    GBC_PREFETCH(&self.rows[row])
                    GBC_PREFETCH(&row_stats[row])
                row = order_f[k]
                slot = self.rows[row].slot
                if slot < 0:
                    continue
                st = &states[slot]
                v = values_f[k]
                if st.acc.n > 0 and v > st.last_value + FEATURE_THRESHOLD:
                    if self.slots[slot].splittable and (
                            not restrict or self.allowed[slot * self.n_features + f]):
                        _consider(st, &self.slots[slot].total, st.last_value, v,
                                  self.min_samples_leaf, self.min_weight_leaf)
                _side_add(&st.acc, &row_stats[row])
                st.last_value = v
            for s in range(n_slots):
                st = &states[s]
                if not self.slots[s].splittable or (
                        restrict and not self.allowed[s * self.n_features + f]):
                    continue
                if st.miss.n > 0 and st.acc.n > 0:
                    # Every non-missing value left, every missing value right.
                    if _try_split_improves(&st.best, &self.slots[s].total, &st.acc,
                                           self.min_samples_leaf, self.min_weight_leaf):
                        st.best.all_left = 1
                # Features are visited in increasing order by each thread, so strict
                # ">" keeps the lowest feature index among equal gains.
                if st.best.proxy > tb[s].proxy:
                    tb[s] = st.best
                    tb[s].feature = <int32_t>f
        # Deterministic reduction over threads: largest gain, then lowest feature.
        for t in range(1, n_threads):
            for s in range(n_slots):
                b = &self.thread_best[t * self.slot_capacity + s]
                if b.feature < 0:
                    continue
                if (b.proxy > self.thread_best[s].proxy or (
                        b.proxy == self.thread_best[s].proxy
                        and b.feature < self.thread_best[s].feature)):
                    self.thread_best[s] = b[0]

    cdef intp_t _apply_splits(self, intp_t n_slots, int depth) noexcept nogil:
        """Turn the best split of each node into two children; return how many split."""
        cdef intp_t s, n_split = 0
        cdef split_t* b
        cdef node_t* nd
        cdef side_t right
        cdef slot_t* next_slots = self.slots + self.slot_capacity
        cdef intp_t left_id
        for s in range(n_slots):
            b = &self.thread_best[s]
            if not self.slots[s].splittable or b.feature < 0:
                continue
            nd = &self.nodes[self.slots[s].node]
            left_id = self.n_nodes
            nd.feature = b.feature
            nd.threshold = INFINITY if b.all_left else _midpoint(b.lo, b.hi)
            nd.threshold32 = _float32_at_most(nd.threshold)
            if b.missing_go_left == MISSING_TO_LARGER:
                nd.missing_go_left = b.left.n >= self.slots[s].total.n - b.left.n
            else:
                nd.missing_go_left = b.missing_go_left
            nd.improvement = b.proxy / self.slots[s].total.w
            nd.left = <int32_t>left_id
            nd.right = <int32_t>(left_id + 1)
            right.n = self.slots[s].total.n - b.left.n
            right.w = self.slots[s].total.w - b.left.w
            right.s = self.slots[s].total.s - b.left.s
            right.s2 = 0.0  # set by the partition pass
            self._init_node(left_id, &b.left, depth + 1)
            self._init_node(left_id + 1, &right, depth + 1)
            next_slots[2 * n_split].total = b.left
            next_slots[2 * n_split].node = <int32_t>left_id
            next_slots[2 * n_split + 1].total = right
            next_slots[2 * n_split + 1].node = <int32_t>(left_id + 1)
            self.n_nodes += 2
            n_split += 1
        # The children become the slots of the next level.
        for s in range(2 * n_split):
            self.slots[s] = next_slots[s]
        return n_split

    cdef void _partition(self, intp_t level_first_child, intp_t n_next,
                         const row_stat_t[::1] row_stats, const float64_t[::1] residual,
                         bint chunked) noexcept nogil:
        """Move every row of a node split at this level to its child, and sum
        w * r^2 per child (for the impurity test of the next level).

        Rows are taken in fixed chunks whose partial sums are added in chunk order,
        so the sums do not depend on the number of threads.
        """
        cdef intp_t c, i, s, n = self.n_samples
        cdef intp_t n_chunks = (n + CHUNK - 1) // CHUNK
        cdef int n_threads = self.n_threads if n >= MIN_PARALLEL_ROWS else 1
        cdef float64_t total
        if chunked:
            for c in prange(n_chunks, schedule="static", num_threads=n_threads):
                self._partition_chunk(c, level_first_child, n_next, row_stats, residual,
                                      self.partial + c * n_next)
            for s in range(n_next):
                total = 0.0
                for c in range(n_chunks):
                    total = total + self.partial[c * n_next + s]
                self.slots[s].total.s2 = total
        else:
            for s in range(n_next):
                self.slots[s].total.s2 = 0.0
            for c in range(n_chunks):
                self._partition_chunk(c, level_first_child, n_next, row_stats, residual,
                                      self.partial)
                for s in range(n_next):
                    self.slots[s].total.s2 = self.slots[s].total.s2 + self.partial[s]

    cdef void _partition_chunk(self, intp_t c, intp_t level_first_child, intp_t n_next,
                               const row_stat_t[::1] row_stats,
                               const float64_t[::1] residual,
                               float64_t* partial) noexcept nogil:
        cdef intp_t i, s
        cdef int32_t node, child, slot
        cdef node_t* nd
        cdef float32_t x
        cdef bint go_left
        for s in range(n_next):
            partial[s] = 0.0
        for i in range(c * CHUNK, min((c + 1) * CHUNK, self.n_samples)):
            node = self.node_of_row[i]
            nd = &self.nodes[node]
            if nd.feature < 0:
                self.rows[i].slot = -1
                self.row_node[i] = NO_NODE
                continue
            x = self.X[i, nd.feature]
            if x != x:
                go_left = nd.missing_go_left
            else:
                go_left = x <= nd.threshold32
            child = nd.left if go_left else nd.right
            self.node_of_row[i] = child
            if self.rows[i].slot >= 0:
                slot = <int32_t>(child - level_first_child)
                self.rows[i].slot = slot
                self.row_node[i] = <uint8_t>slot if slot < NO_NODE else NO_NODE
                partial[slot] += row_stats[i].w * residual[i] * residual[i]
