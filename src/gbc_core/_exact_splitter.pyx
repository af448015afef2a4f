"""Exact split search on pre-sorted features (the ``SplitFinder`` of exact mode).

Every feature is sorted once per fit (``_sorting.presort_features``). For a level of
a tree, one pass over each feature's sorted order accumulates the left-hand
statistics of every node of the level at once, so a level costs
O(n_samples x n_features) whatever the number of nodes. Where the lean scans apply
(a feature without missing values, positive float32 weights, no minimum leaf weight,
Friedman's proxy) and up to ``SEGMENT_MAX_VALUES`` values, each node's rows are
instead kept contiguous per feature (its *segment*, at the node's range of the
grower's partition, split stably into the children's at every level: 4 bytes per
value, and one bit per row for the split) and each node is scanned
alone as the root is, with its running sums in registers: the same sums in the same
order, so the same splits bit for bit. The scan is a list of tasks run in
parallel (OpenMP ``prange``): a feature for every node of the level; on a level with
segments and several pairs of siblings, a feature for one pair; and at a root
holding every row, where a modelled schedule of the root's tasks says the threads
finish sooner (``root_block_plan``), a fixed block of a feature's sorted positions,
started from the exact sum of the positions before it (a first pass sums the blocks
in row order, from one byte per row naming its block, in fixed chunks of rows, each
over every blocked feature); and on the root's children,
for the same features, the same blocks carried down: a block of the root's sorted
order split into the two children's segments at the children's counts before it
(a first pass, in the same chunks, counts and sums each block's rows of the smaller
child in row order, the other's from the block's size and the root's block sums), each child's part
scanned from its exact sum. Each thread keeps its own
per-node state, and the best split of a node is the maximum over its candidates
under a total order (proxy, then lowest feature index, then lowest threshold, which
between blocks of a feature is the lowest sorted position), so the result does not
depend on the number of threads nor on how the work is cut. The threads share only
the best proxy found so far per node, where a task's cheap test starts
(``collect``).

Splits are ranked by the squared-error criterion of ``_criterion.h`` (paper,
Algorithm 1, line 7: "train a regression tree to fit r"); the lean scans evaluate
Friedman's proxy (the default criterion), the general scan either proxy. Thresholds are midpoints
of two consecutive distinct float32 values of the node, as in scikit-learn.
"""
cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

import numpy as np

from ._common cimport (
    float32_t, float64_t, int32_t, int64_t, uint8_t, uint32_t, intp_t, row_stat_t,
    FEATURE_THRESHOLD,
)
from ._common cimport CACHE_LINE, check_row_count, line_aligned, midpoint
from ._split_finder cimport (
    SplitFinder, side_t, grid_t, level_node_t, level_t, split_t,
    MISSING_RIGHT, MISSING_LEFT, MISSING_TO_LARGER, CRITERION_FRIEDMAN_MSE,
)
from ._choice cimport (
    beats, consider, consider_ordered, wins, split_diff, split_den, split_proxy, may_beat, BOUND_FACTOR,
)
from ._categorical cimport categorical_scan, MAX_CATEGORIES, CAT_WORDS
from ._sorting import presort_features
from ._trace cimport *

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define GBC_PREFETCH(p) __builtin_prefetch((const void*)(p), 0, 3)
    #elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
    #include <xmmintrin.h>
    #define GBC_PREFETCH(p) _mm_prefetch((const char*)(p), _MM_HINT_T0)
    #else
    #define GBC_PREFETCH(p) ((void)0)
    #endif
    """
    void GBC_PREFETCH(const void* p) noexcept nogil

cdef extern from *:
    """
    /* The index of the lowest set bit of a non-zero 64-bit word. */
    #if defined(__GNUC__) || defined(__clang__)
    #define GBC_CTZ64(x) __builtin_ctzll(x)
    #elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
    #include <intrin.h>
    static __inline int GBC_CTZ64(unsigned __int64 x) {
        unsigned long i;
        _BitScanForward64(&i, x);
        return (int)i;
    }
    #else
    static int GBC_CTZ64(unsigned long long x) {
        int i = 0;
        while (!(x & 1)) { x >>= 1; i++; }
        return i;
    }
    #endif
    """
    int GBC_CTZ64(unsigned long long x) noexcept nogil

cdef extern from *:
    """
    /* The innermost loops of the blocked features' passes over the rows
       (``_chunk_block_sums``, ``_chunk_child_counts``), kept out of line: inlined
       into the OpenMP region that runs them, GCC spilled the loop's registers to
       the stack, which took 1.6x the time of the pass. */
    #if defined(__GNUC__) || defined(__clang__)
    #define GBC_NOINLINE __attribute__((noinline))
    #elif defined(_MSC_VER)
    #define GBC_NOINLINE __declspec(noinline)
    #else
    #define GBC_NOINLINE
    #endif
    /* sums[block[i]] += values[i] for i in [lo, hi), in row order. */
    static GBC_NOINLINE void gbc_add_by_block(double* sums, const uint8_t* block,
                                              const double* values, Py_ssize_t lo,
                                              Py_ssize_t hi) {
        Py_ssize_t i;
        for (i = lo; i < hi; i++) sums[block[i]] += values[i];
    }
    /* The same over the rows of [lo, hi) (lo a multiple of 64) whose bit is set
       (clear where ``invert``), counting them too: counts[block[i]] += 1,
       sums[block[i]] += values[i], in row order. */
    static GBC_NOINLINE void gbc_add_by_block_bits(
            int64_t* counts, double* sums, const uint8_t* block,
            const double* values, const unsigned long long* bits, Py_ssize_t lo,
            Py_ssize_t hi, int invert) {
        Py_ssize_t w, i;
        unsigned long long word;
        for (w = lo; w < hi; w += 64) {
            word = bits[w >> 6];
            if (invert) word = ~word;
            if (hi - w < 64) word &= (1ULL << (hi - w)) - 1;
            while (word != 0) {
                i = w + GBC_CTZ64(word);
                word &= word - 1;
                counts[block[i]] += 1;
                sums[block[i]] += values[i];
            }
        }
    }
    """
    void add_by_block "gbc_add_by_block"(
        float64_t* sums, const uint8_t* block, const float64_t* values, intp_t lo,
        intp_t hi) noexcept nogil
    void add_by_block_bits "gbc_add_by_block_bits"(
        int64_t* counts, float64_t* sums, const uint8_t* block, const float64_t* values,
        const unsigned long long* bits, intp_t lo, intp_t hi,
        bint invert) noexcept nogil

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
    static void* gbc_alloc_untraced(size_t size) {
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
    /* The finder's per-row buffers are reported to tracemalloc (as NumPy reports
       its arrays), so that a traced fit shows everything it holds per row. */
    #define GBC_TRACE_DOMAIN 0x67626301u
    static void* gbc_alloc_random_access(size_t size) {
        void* p = gbc_alloc_untraced(size);
        if (p != NULL) PyTraceMalloc_Track(GBC_TRACE_DOMAIN, (uintptr_t)p, size ? size : 1);
        return p;
    }
    static void gbc_free_traced(void* p) {
        if (p == NULL) return;
        PyTraceMalloc_Untrack(GBC_TRACE_DOMAIN, (uintptr_t)p);
        free(p);
    }
    """
    void* gbc_alloc_random_access(size_t size) noexcept nogil
    void gbc_free_traced(void* p) noexcept nogil

cdef extern from *:
    """
    /* The best proxy found so far for a node, shared by the threads of a level's
       scan: read and written whole, without ordering (each value a thread reads is
       one some thread wrote). */
    #if defined(_MSC_VER) && !defined(__clang__)
    static double gbc_load_shared(const double* p) { return *(const volatile double*)p; }
    static void gbc_store_shared(double* p, double v) { *(volatile double*)p = v; }
    #else
    static double gbc_load_shared(const double* p) {
        double v;
        __atomic_load(p, &v, __ATOMIC_RELAXED);
        return v;
    }
    static void gbc_store_shared(double* p, double v) {
        __atomic_store(p, &v, __ATOMIC_RELAXED);
    }
    #endif
    """
    float64_t gbc_load_shared(const float64_t* p) noexcept nogil
    void gbc_store_shared(float64_t* p, float64_t v) noexcept nogil

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
    # How many sorted positions ahead the scan prefetches the rows it will gather:
    # far enough ahead to cover a gather from main memory. Against 48, 96 took
    # 0.83x the time of a 10M x 28 fit on two threads (64: 0.84x, 128: 0.85x, 256:
    # 0.94x), 0.94x at 1M, 0.98x at 200,000 rows, 0.99x at 30,000 (benchmarks/README.md).
    PREFETCH_DISTANCE = 96
    # The scans of a node alone (the root, a node's segment: ``_scan_root_unit``)
    # step through a position faster, so they prefetch further ahead where the
    # gathered w * r outgrow a core's L2: from FAR_PREFETCH_ROWS rows (4 MiB of w *
    # r), FAR_PREFETCH_DISTANCE. Against 96 it took 0.98x the time of a 1M x 28 fit
    # on one thread and 0.96x on two, about 0.97x for 15 trees at 10M on two; at
    # 200,000 rows 1.01x and at 30,000 1.02x, which keep 96 (benchmarks/README.md).
    FAR_PREFETCH_ROWS = 1 << 19
    FAR_PREFETCH_DISTANCE = 160
    # Below this many values (rows x features) a level is scanned on one thread.
    MIN_PARALLEL_SCAN = 100000
    # Below this many rows a tree's start (a pass over the rows) runs on one thread.
    MIN_PARALLEL_ROWS = 200000
    # Up to this many values (rows x features), the rows of each node are kept in
    # segments (4 bytes per value more): 128 MiB, e.g. 1.2M rows x 28 features. At
    # 1M x 28 they take 0.89x the fit time on one thread and 0.73x on two; at 10M x
    # 28, 0.95-0.99x on two, for 1.1 GiB more (benchmarks/README.md).
    SEGMENT_MAX_VALUES = 1 << 25
    # Values between the segments and their scratch buffers (2 KiB).
    SCRATCH_OFFSET = 512
    # A level's segments are split on one bit per row (``_split_segment_bits``) when
    # the nodes split hold at least 1/FIRST_BITS_SHARE of the rows (the bits cost a
    # pass over every row; smaller levels of best-first growth read the node byte).
    FIRST_BITS_SHARE = 8
    # The per-thread states of a level (``start_level``) start on a cache line and
    # hold a multiple of NODE_GROUP nodes: every struct holds float64 fields (its
    # size a multiple of 8 bytes), so each thread's block spans whole lines, and no
    # two threads write one line (a line shared at the boundary went back and forth
    # between cores at every sample the level scan added to those nodes).
    NODE_GROUP = 8
    # The root's features may be scanned in blocks of sorted positions, each block a
    # task of its own (``collect``): BLOCK_ROWS positions, or for more than
    # BLOCK_ROWS x MAX_BLOCKS rows (8,388,608) the least power of two times BLOCK_ROWS
    # that keeps MAX_BLOCKS blocks or fewer; boundaries fixed by the row count and
    # these constants, never by the thread count (``root_block_plan``).
    BLOCK_ROWS = 1 << 15
    MAX_BLOCKS = 256
    # Each block's sum of w * r comes from one byte per (feature, row) naming the
    # block the row falls in for the feature (written once per fit, after the sort):
    # one sequential pass over the rows per blocked feature (``_sum_blocks``), about
    # BLOCK_PASS_NUM / BLOCK_PASS_DEN of a whole feature's scan (the pass alone, on
    # one thread, at 200,000 and 1M rows: benchmarks/README.md). The root blocks the
    # last k lean features, k the least that minimises the root's modelled time on
    # the threads (``_root_blocked_features``), from MIN_BLOCK_THREADS threads on:
    # one and two threads do exactly the work they did without blocks, and hold no
    # bytes.
    MIN_BLOCK_THREADS = 4
    BLOCK_PASS_NUM = 1
    BLOCK_PASS_DEN = 5
    # Those passes over the rows (the root's block sums, ``_sum_blocks``; its
    # children's counts, ``_sum_child_blocks``) are tasks of SUM_CHUNK_ROWS rows
    # each (for more than SUM_CHUNK_ROWS x MAX_SUM_CHUNKS rows, the least multiple of
    # 64 rows that keeps MAX_SUM_CHUNKS chunks or fewer), each over every blocked
    # feature, SUM_SUB_ROWS rows at a time (their w * r read once from memory for
    # all the features), its sums per (feature, block) added up in chunk order: as
    # many tasks as chunks whatever the number of features blocked, boundaries
    # fixed by the row count and these constants.
    SUM_CHUNK_ROWS = 1 << 14
    MAX_SUM_CHUNKS = 64
    SUM_SUB_ROWS = 2048
    # At most this many pairs of siblings on a level scanned in (feature, pair)
    # tasks (a level has fewer than GBC_NO_NODE = 255 slots: 127 pairs).
    MAX_PAIRS = 128

cdef enum:
    # Where a finder with segments finds the rows of the level's parents.
    SEGMENTS_NONE = 0        # nowhere (no segments this tree, or a level without)
    SEGMENTS_IN_ORDER = 1    # the root held every row: its sorted order
    SEGMENTS_IN_ROWS = 2     # segment_rows


ctypedef unsigned long long uint64_t_t

# Tests: > 0 scans every eligible root feature in blocks of this many positions and
# splits segment levels into (feature, pair) tasks, whatever the thread count
# (``_force_blocks``).
cdef intp_t _forced_block_rows = 0


def _force_blocks(block_rows):
    """Test hook: finders made from now on scan every root feature that may be
    blocked in blocks of ``block_rows`` sorted positions (and, where they hold the
    block bytes, carry those blocks to the root's children), and every other level
    with segments in (feature, pair of siblings) tasks, on any number of threads
    (0: the default rule of ``ExactSplitFinder.collect``). Returns the previous
    value."""
    global _forced_block_rows
    previous = _forced_block_rows
    if block_rows < 0:
        raise ValueError(f"block_rows must be >= 0, got {block_rows}")
    _forced_block_rows = block_rows
    return previous


# Tests: 1 hands each level's scan tasks out in reverse order, 2 in a fixed shuffled
# order, and either fills the threads' split scratch (and, on the root's children's
# blocks, the children's segments) with -1 before the scan: a task that reads what
# another task writes, or scratch it has not written, then finds other splits
# (``_scramble_tasks``).
cdef int _scrambled_tasks = 0


def _scramble_tasks(mode):
    """Test hook: from now on, every finder's level scans hand their tasks out in
    reverse order (``mode`` 1) or in a fixed shuffled order (2), after filling the
    split scratch of every thread, and on a level of the root's children in blocks
    the segments, with -1 (0: the planned order, nothing filled). Nothing may
    change: no task reads what another writes. Returns the previous mode."""
    global _scrambled_tasks
    previous = _scrambled_tasks
    if mode not in (0, 1, 2):
        raise ValueError(f"mode must be 0, 1 or 2, got {mode}")
    _scrambled_tasks = mode
    return previous


cdef inline void _largest_first(int32_t* items, intp_t* rows, intp_t n) noexcept nogil:
    """Order ``items`` (and their ``rows``) by decreasing rows, equal rows in the
    order given (a stable insertion sort: at most MAX_PAIRS items)."""
    cdef intp_t i, j, r
    cdef int32_t item
    for i in range(1, n):
        item, r = items[i], rows[i]
        j = i
        while j > 0 and rows[j - 1] < r:
            items[j], rows[j] = items[j - 1], rows[j - 1]
            j -= 1
        items[j], rows[j] = item, r


def _pairs_largest_first(rows):
    """Test hook: the order ``_plan_tasks`` hands out pairs whose rows are ``rows``
    (in slot order): their indexes, most rows first, then lowest index."""
    cdef intp_t n = len(rows), i
    if n > MAX_PAIRS:
        raise ValueError(f"at most {MAX_PAIRS} pairs, got {n}")
    cdef int32_t items[MAX_PAIRS]
    cdef intp_t counts[MAX_PAIRS]
    for i in range(n):
        items[i] = <int32_t>i
        counts[i] = rows[i]
    _largest_first(items, counts, n)
    return [items[i] for i in range(n)]


cdef inline intp_t _block_rows_for(intp_t n_rows) noexcept nogil:
    """Sorted positions per block of a root's feature: BLOCK_ROWS, doubled until
    ``n_rows`` fits in MAX_BLOCKS blocks (the row count alone decides)."""
    cdef intp_t block_rows = BLOCK_ROWS
    while n_rows > block_rows * MAX_BLOCKS:
        block_rows *= 2
    return block_rows


cdef inline intp_t _sum_chunk_rows_for(intp_t n_rows, intp_t block_rows,
                                      bint forced) noexcept nogil:
    """Rows per task of the blocked features' passes over the rows: SUM_CHUNK_ROWS,
    or the least multiple of 64 that keeps ``n_rows`` in MAX_SUM_CHUNKS chunks; under
    ``_force_blocks``, ``block_rows`` rounded up to a multiple of 64 (many chunks
    on the tests' few rows). A multiple of 64: a chunk starts on a word of the
    children's bits."""
    cdef intp_t chunk_rows
    if forced:
        return max(<intp_t>64, (block_rows + 63) // 64 * 64)
    chunk_rows = (n_rows + MAX_SUM_CHUNKS - 1) // MAX_SUM_CHUNKS
    return max(<intp_t>SUM_CHUNK_ROWS, (chunk_rows + 63) // 64 * 64)


cdef inline intp_t _sum_chunks_for(intp_t n_rows) noexcept nogil:
    """The row chunks of the blocked features' passes at ``n_rows`` rows
    (``_sum_chunk_rows_for`` outside ``_force_blocks``): the rule's view."""
    cdef intp_t chunk_rows = _sum_chunk_rows_for(n_rows, _block_rows_for(n_rows), False)
    return (n_rows + chunk_rows - 1) // chunk_rows


cdef inline int64_t _root_time(intp_t k, intp_t n_features, intp_t n_threads,
                               intp_t n_blocks, intp_t n_chunks) noexcept nogil:
    """The root's modelled time with its last ``k`` features blocked, in units of
    1 / (n_blocks x BLOCK_PASS_DEN) of a feature's scan: the block sums
    (BLOCK_PASS_NUM / BLOCK_PASS_DEN of a scan per blocked feature, in ``n_chunks``
    equal row chunks over every blocked feature, in waves of ``n_threads``), then
    the scan as ``collect`` hands it out (the whole features first, each 1, then
    the k x n_blocks blocks, each 1 / n_blocks, to the first free thread), every
    feature taken to cost the same."""
    cdef int64_t unit = n_blocks * BLOCK_PASS_DEN
    cdef intp_t whole = n_features - k, q = whole // n_threads, s = whole % n_threads
    cdef intp_t tasks = k * n_blocks, free_threads, ahead
    cdef int64_t t = 0
    if k > 0:
        t = (((n_chunks + n_threads - 1) // n_threads)
             * ((k * n_blocks * BLOCK_PASS_NUM + n_chunks - 1) // n_chunks))
    if s == 0:
        # Every thread free at q: the blocks shared out over all of them.
        return t + q * unit + ((tasks + n_threads - 1) // n_threads) * BLOCK_PASS_DEN
    # At q, s threads still scan a whole feature (until q + 1); the others take
    # blocks, n_blocks each before q + 1, then every thread the rest.
    free_threads = n_threads - s
    if tasks <= free_threads * n_blocks:
        ahead = (tasks + free_threads - 1) // free_threads
        return t + q * unit + max(n_blocks, ahead) * BLOCK_PASS_DEN
    tasks -= free_threads * n_blocks
    return t + (q + 1) * unit + ((tasks + n_threads - 1) // n_threads) * BLOCK_PASS_DEN


cdef intp_t _root_blocked_features(intp_t n_features, intp_t n_lean, intp_t n_threads,
                                   intp_t n_blocks, intp_t n_chunks) noexcept nogil:
    """How many of the root's lean features (the last ones) to scan in blocks on
    ``n_threads`` threads: the least k in 0 .. ``n_lean`` of the least modelled time
    (``_root_time``); 0 below MIN_BLOCK_THREADS threads or with one block. A
    function of the row count (through ``n_blocks`` and ``n_chunks``), the feature
    counts and the thread count; the result of the scan does not depend on it (the
    sums are exact, ties between blocks ranked by position)."""
    cdef intp_t k, best_k = 0
    cdef int64_t t, best_t
    if n_threads < MIN_BLOCK_THREADS or n_blocks <= 1 or n_lean <= 0:
        return 0
    best_t = _root_time(0, n_features, n_threads, n_blocks, n_chunks)
    for k in range(1, n_lean + 1):
        t = _root_time(k, n_features, n_threads, n_blocks, n_chunks)
        if t < best_t:
            best_t, best_k = t, k
    return best_k


def copy_keeps_segments(n_rows, n_features, n_threads, of_threads):
    """Whether a copy of a finder with node segments, on ``n_threads`` of its
    ``of_threads`` threads (``ExactSplitFinder.with_threads``), keeps segments:
    while ``n_rows x n_features <= SEGMENT_MAX_VALUES x n_threads / of_threads``,
    so that copies sharing out a finder's threads hold at most
    ``SEGMENT_MAX_VALUES`` values (128 MiB) of segments together."""
    return (<double>n_rows * <double>n_features * max(1, of_threads)
            <= <double>SEGMENT_MAX_VALUES * max(1, n_threads))


def root_block_plan(n_rows, n_features, n_threads, n_lean=None):
    """The root's blocks on ``n_threads`` threads, as ``ExactSplitFinder`` plans
    them for ``n_rows`` rows, ``n_features`` features of which ``n_lean`` (default:
    all) may be blocked (the scaling model's and the tests' view of the rule).

    Returns
    -------
    blocked : int
        The number of features blocked (the last lean ones).
    block_rows : int
        Sorted positions per block.
    n_blocks : int
        Blocks per feature.
    pass_cost : float
        The modelled cost of a blocked feature's block sums, as a share of its scan.
    """
    cdef intp_t block_rows = _block_rows_for(n_rows)
    cdef intp_t n_blocks = max(1, (n_rows + block_rows - 1) // block_rows)
    if n_lean is None:
        n_lean = n_features
    return (int(_root_blocked_features(n_features, n_lean, max(1, n_threads), n_blocks,
                                       _sum_chunks_for(n_rows))),
            int(block_rows), int(n_blocks), <double>BLOCK_PASS_NUM / BLOCK_PASS_DEN)


def sum_chunk_plan(n_rows):
    """The tasks of the blocked features' passes over the rows (the root's block
    sums, its children's counts), as ``ExactSplitFinder`` cuts them for ``n_rows``
    rows (the scaling model's and the tests' view of the rule).

    Returns
    -------
    chunk_rows : int
        Rows per task (the last task: the rest).
    n_chunks : int
        Tasks, each over every blocked feature.
    """
    cdef intp_t n = max(0, n_rows)
    cdef intp_t block_rows = _block_rows_for(n)
    cdef intp_t chunk_rows = _sum_chunk_rows_for(n, block_rows, False)
    return int(chunk_rows), int((n + chunk_rows - 1) // chunk_rows)


cdef inline intp_t _child_blocked_features(intp_t root_blocked, intp_t n_features,
                                           intp_t n_lean, intp_t n_threads,
                                           intp_t n_blocks,
                                           intp_t n_chunks) noexcept nogil:
    """How many of the root's children's lean features (the last ones) to scan in
    the root's blocks, the root having blocked its last ``root_blocked``: the
    root's rule (``_root_blocked_features``) on the threads of the children's
    scan (``n_threads``: at most one per feature, as the segments' splits; the
    counts' pass before it, on every thread, is modelled on those), and no more
    than the root blocked (the children's counts read the root's block sums of
    the same features)."""
    return min(root_blocked,
               _root_blocked_features(n_features, n_lean, n_threads, n_blocks,
                                      n_chunks))


def child_block_plan(n_rows, n_features, n_threads, n_lean=None):
    """The root's blocks carried to the root's children on ``n_threads`` threads,
    as an ``ExactSplitFinder`` of the defaults (lean scans, segments) plans them
    for a tree of unit weights holding every row, with ``n_rows`` rows and
    ``n_features`` features of which ``n_lean`` (default: all) may be blocked (the
    scaling model's and the tests' view of the rule): none without node segments
    (more than ``SEGMENT_MAX_VALUES`` values), without the block bytes, or where
    the root blocks none; else ``_child_blocked_features`` on min(``n_threads``,
    ``n_features``) threads.

    Returns
    -------
    blocked : int
        The number of features scanned in blocks on the root's children (the last
        lean ones).
    block_rows : int
        Sorted positions per block.
    n_blocks : int
        Blocks per feature.
    """
    cdef intp_t block_rows = _block_rows_for(n_rows)
    cdef intp_t n_blocks = max(1, (n_rows + block_rows - 1) // block_rows)
    cdef intp_t threads = max(1, n_threads), root_blocked
    if n_lean is None:
        n_lean = n_features
    if (n_rows * n_features > SEGMENT_MAX_VALUES or n_rows * n_features < MIN_PARALLEL_SCAN
            or n_blocks > MAX_BLOCKS):
        return 0, int(block_rows), int(n_blocks)
    # The block bytes are held where the root's rule blocks a feature
    # (``_make_block_bytes``), the rule the root's level then follows.
    cdef intp_t n_chunks = _sum_chunks_for(n_rows)
    root_blocked = _root_blocked_features(n_features, n_lean, threads, n_blocks, n_chunks)
    return (int(_child_blocked_features(root_blocked, n_features, n_lean,
                                        min(threads, <intp_t>n_features), n_blocks,
                                        n_chunks)),
            int(block_rows), int(n_blocks))


ctypedef struct candidate_t:
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
    uint8_t categorical      # 1: a categorical split, the codes of cat_bits left
    uint32_t cat_bits[8]
    intp_t pos               # lean scans: the sorted position of the first sample
                             # going right (0 elsewhere): ranks exact ties between
                             # the blocks of one feature (``_wins_at``)


ctypedef struct scan_t:
    # State of one node while one feature is scanned.
    side_t acc               # non-missing samples seen so far (they go left)
    side_t miss              # samples whose value is missing for this feature
    candidate_t best
    int64_t total_n          # node totals, copied here for the hot loop; total_n = 0
    float64_t total_w        # marks a node that must not be split on this feature
    float64_t total_s
    uint64_t_t n_span        # total_n - 2 min_samples_leaf + 1 (0: no split allowed)
    float64_t best_bound     # the cheap test's bound: max(best.proxy, the best any
                             # thread has published for the node) x BOUND_FACTOR
    intp_t last_pos          # fast scan: sorted position of the node's previous sample
    float32_t last_value     # other scans: the node's previous value
    const grid_t* grid       # the grid of the tree's sums (exact ties)
    uint8_t ties_win         # a split that ties ``best`` replaces it (the scan's
                             # feature is below best's and nothing was kept yet)
    uint8_t found            # a split of the scan's feature was kept
    signed char monotonic    # the scan's feature's monotonic constraint (-1, 0, +1)


ctypedef struct packed_row_t:
    # What the scan gathers for a row, in one 16-byte record (a quarter of a cache
    # line, aligned: one line read per row, never two).
    float64_t wr             # w * r
    int32_t slot             # node of the level being split (-1: none)
    float32_t w              # the sample weight (exact in float32 on the fast path)


cdef inline uint8_t _node_byte(int32_t slot) noexcept nogil:
    """The slot as a byte, NO_NODE for -1 (no node) and for slots a byte cannot hold:
    the unsigned minimum, with no branch."""
    cdef uint32_t u = <uint32_t>slot
    return <uint8_t>(u if u < NO_NODE else NO_NODE)


cdef inline void _side_add_row(side_t* a, const row_stat_t* row_stats,
                               const float64_t* row_wr, intp_t row) noexcept nogil:
    """Add row ``row`` to ``a``: its statistics, or for a tree given residuals alone
    (``row_stats`` NULL: unit weights) its (w * r, w) = (``row_wr[row]``, 1.0)."""
    a.n += 1
    if row_stats == NULL:
        a.w += 1.0
        a.s += row_wr[row]
    else:
        a.w += row_stats[row].w
        a.s += row_stats[row].wr


cdef inline void _side_zero(side_t* a) noexcept nogil:
    a.n = 0
    a.w = 0.0
    a.s = 0.0


cdef bint _try_ordered_split(
    scan_t* st,
    const side_t* total,
    const side_t* left,
    float32_t lo,
    float32_t hi,
    uint8_t missing_go_left,
    int64_t min_samples_leaf,
    float64_t min_weight_leaf,
    uint8_t criterion,
) noexcept nogil:
    """``_try_split`` on a feature with a monotonic constraint (``st.monotonic``):
    ``consider_ordered`` of _choice.pxd."""
    if not consider_ordered(&st.best.proxy, &st.best.left, st.ties_win, total, left,
                            min_samples_leaf, min_weight_leaf, criterion, st.grid,
                            st.monotonic):
        return False
    st.best.lo = lo
    st.best.hi = hi
    st.best.all_left = 0
    st.best.left = left[0]
    st.best.missing_go_left = missing_go_left
    st.best.pos = 0
    st.found = 1
    st.ties_win = 0
    return True


cdef inline bint _try_split(
    scan_t* st,
    const side_t* total,
    const side_t* left,
    float32_t lo,
    float32_t hi,
    uint8_t missing_go_left,
    int64_t min_samples_leaf,
    float64_t min_weight_leaf,
    uint8_t criterion,
) noexcept nogil:
    """Keep the split if it is valid and beats ``st.best`` (the rule of
    ``_choice.pxd``); returns True if it was kept. A feature with a monotonic
    constraint goes to ``_try_ordered_split`` (out of line: this one stays as
    small as without constraints)."""
    if st.monotonic != 0:
        return _try_ordered_split(st, total, left, lo, hi, missing_go_left,
                                  min_samples_leaf, min_weight_leaf, criterion)
    if not consider(&st.best.proxy, &st.best.left, st.ties_win, total, left,
                    min_samples_leaf, min_weight_leaf, criterion, st.grid):
        return False
    st.best.lo = lo
    st.best.hi = hi
    st.best.all_left = 0
    st.best.left = left[0]
    st.best.missing_go_left = missing_go_left
    st.best.pos = 0
    st.found = 1
    st.ties_win = 0
    return True


cdef inline void _consider(
    scan_t* st,
    const side_t* total,
    float32_t lo,
    float32_t hi,
    int64_t min_samples_leaf,
    float64_t min_weight_leaf,
    uint8_t criterion,
) noexcept nogil:
    """Evaluate "x <= (lo + hi) / 2 goes left", missing values sent right, then left."""
    cdef side_t with_missing
    if st.miss.n == 0:
        _try_split(st, total, &st.acc, lo, hi, MISSING_TO_LARGER,
                   min_samples_leaf, min_weight_leaf, criterion)
        return
    _try_split(st, total, &st.acc, lo, hi, MISSING_RIGHT, min_samples_leaf,
               min_weight_leaf, criterion)
    with_missing.n = st.acc.n + st.miss.n
    with_missing.w = st.acc.w + st.miss.w
    with_missing.s = st.acc.s + st.miss.s
    _try_split(st, total, &with_missing, lo, hi, MISSING_LEFT, min_samples_leaf,
               min_weight_leaf, criterion)


cdef inline bint _keep_if_better(
    scan_t* st,
    float64_t proxy,
    float32_t lo,
    float32_t hi,
    int64_t n_left,
    float64_t w_left,
    float64_t s_left,
    intp_t k,
) noexcept nogil:
    """Keep a split of the fast scans (no missing value in the feature), before
    sorted position ``k``, if it beats ``st.best`` (``beats`` of _choice.pxd);
    returns True if it was kept."""
    cdef side_t left, total
    left.n = n_left
    left.w = w_left
    left.s = s_left
    total.n = st.total_n
    total.w = st.total_w
    total.s = st.total_s
    if not beats(proxy, &left, st.best.proxy, &st.best.left, st.ties_win, &total,
                 st.grid):
        return False
    st.best.proxy = proxy
    st.best.lo = lo
    st.best.hi = hi
    st.best.left = left
    st.best.missing_go_left = MISSING_TO_LARGER
    st.best.all_left = 0
    st.best.pos = k
    st.best_bound = max(st.best_bound, proxy * BOUND_FACTOR)
    st.found = 1
    st.ties_win = 0
    return True


cdef inline bint _decide(
    scan_t* st,
    int64_t n_left,
    float64_t w_left,
    float64_t s_left,
    const float32_t* column_f,
    const int32_t* order_f,
    intp_t k,
    intp_t last_pos,
    int64_t min_samples_leaf,
) noexcept nogil:
    """The decision of the scans at sorted position ``k`` for the node ``st``, whose
    samples before ``k`` number ``n_left`` (weight ``w_left``, sum of w * r
    ``s_left``), the last of them at ``last_pos``: ``_decide_at`` with the rows
    ``order_f`` puts at ``k`` and ``last_pos``."""
    return _decide_at(st, n_left, w_left, s_left, column_f, order_f + k,
                      order_f + last_pos, k, min_samples_leaf)


cdef inline bint _decide_at(
    scan_t* st,
    int64_t n_left,
    float64_t w_left,
    float64_t s_left,
    const float32_t* column_f,
    const int32_t* row_k,
    const int32_t* row_last,
    intp_t k,
    int64_t min_samples_leaf,
) noexcept nogil:
    """The decision of the scans at sorted position ``k`` for the node ``st``, whose
    samples before ``k`` number ``n_left`` (weight ``w_left``, sum of w * r
    ``s_left``), the row at ``k`` being ``row_k[0]`` and the last row before it
    ``row_last[0]``: keep the split before ``k`` if it is valid and beats the best
    so far. Returns True if it was kept.

    The cheap bound test comes first since it rejects almost every position; then
    n_left in [min_samples_leaf, total_n - min_samples_leaf] as one unsigned
    comparison (n_span is 0 for a node that is not split on this feature; with
    n_left = 0 or n_right = 0, den = 0 and one of the two tests fails, the bound test
    being NaN for -inf), and only then, at the rare positions that pass both, a new
    distinct value: the values are read there (from the feature's column
    ``column_f``, in row order, at the two rows, read through their pointers only
    there), not streamed.
    """
    cdef float64_t diff = split_diff(st.total_s, st.total_w, s_left, w_left)
    cdef float64_t den = split_den(st.total_w, w_left)
    cdef float64_t proxy
    cdef float32_t v, last
    if (may_beat(diff, den, st.best_bound)
            and <uint64_t_t>(n_left - min_samples_leaf) < st.n_span):
        v = column_f[row_k[0]]
        last = column_f[row_last[0]]  # n_left >= 1: the node has a previous sample
        proxy = split_proxy(diff, den)
        if v > last + FEATURE_THRESHOLD:
            return _keep_if_better(st, proxy, last, v, n_left, w_left, s_left, k)
    return False


cdef inline void _scan_fast(
    scan_t* states,
    const int32_t* order_f,
    const float32_t* column_f,
    intp_t n_valid,
    const packed_row_t* rows,
    int64_t min_samples_leaf,
) noexcept nogil:
    """The scan of one feature without missing values, zero or non-float32 weights
    or a minimum leaf weight: the common case, with few instructions and a single
    gathered 16-byte record per sample (with unit weights, ``_scan_level_unit``
    does the same on 9 bytes per sample).

    For each sample in increasing order of the feature, the split between the node's
    previous value and this one is evaluated (strict ">" so the lowest threshold wins
    ties), then the sample joins the node's left statistics.
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
        _decide(st, n_left, w_left, s_left, column_f, order_f, k, st.last_pos,
                min_samples_leaf)
        st.acc.n = n_left + 1
        st.acc.w = w_left + rs.w
        st.acc.s = s_left + rs.wr
        st.last_pos = k


cdef inline void _scan_root(
    scan_t* st,
    const int32_t* order_f,
    const float32_t* column_f,
    intp_t n_valid,
    const packed_row_t* rows,
    int64_t min_samples_leaf,
) noexcept nogil:
    """``_scan_fast`` for a root that holds every row, or for a node's segment (as
    in ``_scan_root_unit``): no node lookup per sample and the running sums stay in
    registers (weighted rows; ``_scan_root_unit`` for unit weights)."""
    cdef intp_t k, row, stop = n_valid - PREFETCH_DISTANCE
    cdef float32_t v, last
    cdef int64_t n_left = 0, total_n = st.total_n
    cdef float64_t w_left = 0.0, s_left = 0.0, diff, den, proxy
    cdef float64_t total_w = st.total_w, total_s = st.total_s
    cdef float64_t best_bound = st.best_bound
    for k in range(n_valid):
        if k < stop:
            GBC_PREFETCH(&rows[order_f[k + PREFETCH_DISTANCE]])
        row = order_f[k]
        # The same tests as in ``_scan_fast``, in the same order; here n_left = k.
        diff = split_diff(total_s, total_w, s_left, w_left)
        den = split_den(total_w, w_left)
        if (may_beat(diff, den, best_bound)
                and n_left >= min_samples_leaf and total_n - n_left >= min_samples_leaf):
            v = column_f[row]
            last = column_f[order_f[k - 1]]
            proxy = split_proxy(diff, den)
            if (v > last + FEATURE_THRESHOLD
                    and _keep_if_better(st, proxy, last, v, n_left, w_left, s_left, k)):
                best_bound = st.best_bound
        n_left += 1
        w_left += rows[row].w
        s_left += rows[row].wr
    st.acc.n = n_left
    st.acc.w = w_left
    st.acc.s = s_left


cdef inline void _scan_root_unit(
    scan_t* st,
    const int32_t* order_f,
    const float32_t* column_f,
    intp_t n_valid,
    const float64_t* row_wr,
    int64_t min_samples_leaf,
    intp_t distance,
) noexcept nogil:
    """``_scan_root`` with unit weights: the running sum and the cheap test run in
    ``_scan.h`` (two positions per step) up to each position that passes the test,
    where ``_decide`` makes the exact decision, matching ``_scan_root`` split for
    split. Only positions with n_left in [min_samples_leaf, total_n -
    min_samples_leaf] are tested (the others cannot hold a split).

    ``order_f`` holds the node's rows in increasing order of the feature: the root's
    sorted order, or a node's segment (the same scan). ``distance``: how many
    positions ahead the rows' w * r are prefetched. ``_scan_root_block`` over every
    position."""
    _scan_root_block(st, order_f, column_f, n_valid, row_wr, min_samples_leaf,
                     distance, 0, n_valid, 0.0)


cdef inline void _scan_root_block(
    scan_t* st,
    const int32_t* order_f,
    const float32_t* column_f,
    intp_t n_valid,
    const float64_t* row_wr,
    int64_t min_samples_leaf,
    intp_t distance,
    intp_t lo,
    intp_t hi,
    float64_t s_lo,
) noexcept nogil:
    """``_scan_root_unit``'s decisions at the sorted positions ``lo`` .. ``hi - 1``
    alone (the splits between position k - 1 and k, for k in the block), the w * r
    of the positions before ``lo`` adding up to ``s_lo``: a block of a root's
    feature (``ExactSplitFinder.collect``). The running sums are exact (on the
    tree's grid), so ``s_lo`` + the block's prefix is the whole scan's prefix bit for
    bit, and every decision is the whole scan's at the same position; the previous
    value, at position k - 1, is read from the whole order, across the block's
    start. Leaves in ``st.acc`` the sums of the positions before ``hi``."""
    cdef intp_t k, first, stop, begin, end, prefetch_stop = n_valid - distance - 1
    cdef float64_t s_left = s_lo
    first = min(<intp_t>min_samples_leaf, n_valid)
    stop = max(first, min(<intp_t>(st.total_n - min_samples_leaf + 1), n_valid))
    begin = min(max(lo, first), hi)
    end = max(begin, min(hi, stop))
    for k in range(lo, begin):
        s_left += row_wr[order_f[k]]
    k = begin
    while True:
        k = root_scan_to_candidate(order_f, row_wr, k, end, &s_left, st.total_w,
                                   st.total_s, st.best_bound, prefetch_stop, distance)
        if k >= end:
            break
        # The decision of the scans at this position (n_left = w_left = k).
        _decide(st, k, <float64_t>k, s_left, column_f, order_f, k, k - 1,
                min_samples_leaf)
        s_left += row_wr[order_f[k]]
        k += 1
    for k in range(end, hi):
        s_left += row_wr[order_f[k]]
    st.acc.n = hi
    st.acc.w = <float64_t>hi
    st.acc.s = s_left


cdef inline void _scan_child_part(
    scan_t* st,
    const int32_t* seg,
    const float32_t* column_f,
    const float64_t* row_wr,
    int64_t min_samples_leaf,
    intp_t distance,
    intp_t lo,
    intp_t hi,
    float64_t s_lo,
    int32_t prev_row,
) noexcept nogil:
    """``_scan_root_block``'s decisions at the positions ``lo`` .. ``hi - 1`` of a
    child's segment ``seg`` (a block of the root's children, ``_child_block_task``),
    the w * r of the positions before ``lo`` adding up to ``s_lo``, where another
    task writes the segment before ``lo``: nothing of ``seg`` outside [lo, hi) is
    read. The decision at ``lo`` reads the previous value at ``prev_row`` (the
    child's last row before the block, the row at ``lo - 1``), the others read the
    part itself; ``hi`` is the scan's end (every bound the scan takes from it is
    clamped to ``hi`` anyway, so no decision changes)."""
    cdef float64_t s_left = s_lo
    if lo >= hi:
        return
    if lo > 0:
        # A split before the segment's first row leaves nothing left: no decision.
        _decide_at(st, lo, <float64_t>lo, s_left, column_f, seg + lo, &prev_row, lo,
                   min_samples_leaf)
    s_left += row_wr[seg[lo]]
    _scan_root_block(st, seg, column_f, hi, row_wr, min_samples_leaf, distance,
                     lo + 1, hi, s_left)


cdef inline bint _first_bit(const uint64_t_t* first_bits, intp_t row) noexcept nogil:
    """Bit ``row`` of ``first_bits``: the row is in the first child of its pair."""
    return <bint>((first_bits[row >> 6] >> (row & 63)) & 1)


cdef inline void _chunk_child_counts(const uint8_t* block_of, intp_t n,
                                     const float64_t* row_wr,
                                     const uint64_t_t* first_bits, bint count_second,
                                     const int32_t* features, intp_t stride,
                                     intp_t n_blocked, intp_t n_blocks, intp_t lo,
                                     intp_t hi, int64_t* counts,
                                     float64_t* sums) noexcept nogil:
    """For the rows ``lo`` .. ``hi - 1`` (a chunk, ``lo`` a multiple of 64) of the
    root's children (every row in one of the two, its ``first_bits`` bit set for
    the first): ``counts[j n_blocks + b]`` the counted child's rows in block b of
    feature ``features[j stride]``'s sorted order and ``sums[j n_blocks + b]``
    their w * r, for j < ``n_blocked``. The counted child is the first, or the
    second where ``count_second`` (the smaller child: the caller's choice): word by
    word of the bits, each set bit's row (lowest first: row order) counted and its
    w * r added into its block's, ``SUM_SUB_ROWS`` rows at a time for every
    feature (their w * r read from memory once)."""
    cdef intp_t j, sub, end
    for j in range(n_blocked * n_blocks):
        counts[j] = 0
        sums[j] = 0.0
    sub = lo
    while sub < hi:
        end = min(sub + SUM_SUB_ROWS, hi)
        for j in range(n_blocked):
            add_by_block_bits(counts + j * n_blocks, sums + j * n_blocks,
                              block_of + <intp_t>features[j * stride] * n, row_wr,
                              first_bits, sub, end, count_second)
        sub = end


cdef inline void _child_block_prefixes(int64_t* pos, float64_t* sums,
                                       const float64_t* root_before, intp_t block_rows,
                                       intp_t n, bint count_second,
                                       intp_t n_blocks) noexcept nogil:
    """One feature's rows and w * r of each child before each block, from the counted
    child's rows and w * r in each block (``pos[2 b + c]``, ``sums[2 b + c]``, c
    = 1 where ``count_second``, else 0): ``pos[2 b + c']`` the rows of child c' (0:
    the first, 1: the second) at the sorted positions before block b, for b in 0
    .. ``n_blocks`` (the last: the child's rows), and ``sums[2 b + c']`` their w *
    r, b < ``n_blocks``: the counted child's prefixes in block order; the other
    child's the block's positions before it less the counted child's, and the
    root's sum before the block (``root_before[b]``, ``_sum_blocks``) less the
    counted child's. Every sum is exact on the tree's grid (the bits of the sums a
    child's scan adds in its sorted order up to that block), so the difference of
    two is exact: the bits of the other child's own sum (the zeros +0.0 either
    way: a sum from +0.0 is never -0.0)."""
    cdef intp_t b, c = 1 if count_second else 0
    cdef int64_t a = 0, t
    cdef float64_t s = 0.0, u
    for b in range(n_blocks):
        t, u = pos[2 * b + c], sums[2 * b + c]
        pos[2 * b + c], pos[2 * b + 1 - c] = a, b * block_rows - a
        sums[2 * b + c], sums[2 * b + 1 - c] = s, root_before[b] - s
        a += t
        s = s + u
    pos[2 * n_blocks + c], pos[2 * n_blocks + 1 - c] = a, n - a


cdef inline intp_t _split_block_bits(const int32_t* src, intp_t m,
                                     const uint64_t_t* first_bits,
                                     int32_t* scratch) noexcept nogil:
    """Split of ``m`` rows of the root's sorted order (a block) into its children:
    the first child's (bit set) to ``scratch[0 : n_a]`` in order, the second's from
    ``scratch[m - 1]`` down, in order from the end (``_copy_reversed`` reads them
    back); returns ``n_a``. Every row is written to both sides and only its own
    side's count advances (no branch on the side, which is random): at row k the
    two writes go to ``n_a <= m - 1 - (k - n_a)``, never into the other side's rows
    so far, and nothing is written outside the scratch (``m`` values), so never
    into a segment that another task writes."""
    cdef intp_t k, n_a = 0
    cdef int32_t row
    for k in range(m):
        row = src[k]
        scratch[n_a] = row
        scratch[m - 1 - k + n_a] = row
        n_a += <intp_t>_first_bit(first_bits, row)
    return n_a


cdef inline void _copy_reversed(int32_t* dst, const int32_t* src_end,
                                intp_t count) noexcept nogil:
    """``dst[j] = src_end[-j]`` for j < ``count``: the second child's rows of
    ``_split_block_bits`` back in order."""
    cdef intp_t j
    for j in range(count):
        dst[j] = src_end[-j]


cdef inline float64_t _block_sum(const int32_t* order_f, const float64_t* row_wr,
                                 intp_t lo, intp_t hi) noexcept nogil:
    """The sum of w * r over the sorted positions ``lo`` .. ``hi - 1`` (a block of a
    root's feature, before its scan): four running sums, exact on the tree's grid,
    so the same bits as the scan's one sum."""
    cdef intp_t k = lo, ahead = hi - PREFETCH_DISTANCE - 4
    cdef float64_t a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0
    while k + 4 <= hi:
        if k < ahead:
            GBC_PREFETCH(&row_wr[order_f[k + PREFETCH_DISTANCE]])
            GBC_PREFETCH(&row_wr[order_f[k + PREFETCH_DISTANCE + 1]])
            GBC_PREFETCH(&row_wr[order_f[k + PREFETCH_DISTANCE + 2]])
            GBC_PREFETCH(&row_wr[order_f[k + PREFETCH_DISTANCE + 3]])
        a0 += row_wr[order_f[k]]
        a1 += row_wr[order_f[k + 1]]
        a2 += row_wr[order_f[k + 2]]
        a3 += row_wr[order_f[k + 3]]
        k += 4
    while k < hi:
        a0 += row_wr[order_f[k]]
        k += 1
    return (a0 + a1) + (a2 + a3)


cdef inline void _chunk_block_sums(const uint8_t* block_of, intp_t n,
                                   const float64_t* row_wr, const int32_t* features,
                                   intp_t stride, intp_t n_blocked, intp_t n_blocks,
                                   intp_t lo, intp_t hi, float64_t* sums) noexcept nogil:
    """For the rows ``lo`` .. ``hi - 1`` (a chunk): ``sums[j n_blocks + b]`` the w *
    r of the rows in block b of feature ``features[j stride]``'s sorted order, for j
    < ``n_blocked``: each row's w * r added to the sum of the block its byte names,
    in row order, ``SUM_SUB_ROWS`` rows at a time for every feature (their w * r
    read from memory once). Exact on the tree's grid, so the bits of the sorted
    order's sums."""
    cdef intp_t j, sub, end
    for j in range(n_blocked * n_blocks):
        sums[j] = 0.0
    sub = lo
    while sub < hi:
        end = min(sub + SUM_SUB_ROWS, hi)
        for j in range(n_blocked):
            add_by_block(sums + j * n_blocks, block_of + <intp_t>features[j * stride] * n,
                         row_wr, sub, end)
        sub = end


cdef inline void _scan_level_unit(
    scan_t* states,
    node_scan_t* node_scan,
    intp_t n_slots,
    const int32_t* order_f,
    const float32_t* column_f,
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
        if _decide(st, <int64_t>w_left, w_left, s_left, column_f, order_f, k, ns.last_pos,
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


cdef inline void _scan_node(
    scan_t* st,
    const int32_t* rows_in_order,
    const float32_t* column_f,
    intp_t n_rows,
    bint unit_weights,
    const float64_t* row_wr,
    const packed_row_t* records,
    int64_t min_samples_leaf,
    intp_t n_samples,
) noexcept nogil:
    """The scan of one node whose rows, all of them, are ``rows_in_order`` (the root's
    sorted order, or a node's segment): ``_scan_root_unit`` with unit weights (its
    prefetch distance by the fit's ``n_samples``, each a constant of its own inlined
    copy: a distance passed as a variable cost 5% at 30,000 rows), else
    ``_scan_root``."""
    if unit_weights and n_samples >= FAR_PREFETCH_ROWS:
        _scan_root_unit(st, rows_in_order, column_f, n_rows, row_wr, min_samples_leaf,
                        FAR_PREFETCH_DISTANCE)
    elif unit_weights:
        _scan_root_unit(st, rows_in_order, column_f, n_rows, row_wr, min_samples_leaf,
                        PREFETCH_DISTANCE)
    else:
        _scan_root(st, rows_in_order, column_f, n_rows, records, min_samples_leaf)


cdef inline void _split_segment(
    const int32_t* src,
    int32_t* dst,
    intp_t n_src,
    intp_t n_first,
    const uint8_t* row_node,
    uint8_t first,
    uint8_t second,
    int32_t* scratch,
) noexcept nogil:
    """Stable partition of a node's rows in one feature's increasing order (``src``,
    ``n_src`` rows) into its two children: ``dst[0:n_first]`` the rows whose node byte
    is ``first``, then those of ``second`` (every row is in one of them), each in the
    same order. ``dst`` may be ``src`` (in place: a row is written at or before the
    position it was read from).

    Every row is written to both sides, and only the count of its own side advances
    (no branch on the side, which is random): a row written past its side's end is
    overwritten by the copy of the second side (``n_first`` is the first child's
    size, as the grower counted it).
    """
    cdef intp_t k, n_a = 0, n_b = 0
    cdef int32_t row
    cdef uint8_t byte
    for k in range(n_src):
        row = src[k]
        byte = row_node[row]
        dst[n_a] = row
        scratch[n_b] = row
        n_a += byte == first
        n_b += byte == second
    memcpy(dst + n_first, scratch, n_b * sizeof(int32_t))


cdef inline void _split_segment_bits(
    const int32_t* src,
    int32_t* dst,
    intp_t n_src,
    intp_t n_first,
    const uint64_t_t* first_bits,
    int32_t* scratch,
) noexcept nogil:
    """``_split_segment`` on one bit per row (bit ``row`` of ``first_bits``: the row
    is in the first child), which for a level's every row fits in a core's first
    cache where the node bytes do not: the gather of the side costs less (0.71-0.77
    against 0.90-1.03 ns per value on 200,000 rows, measured on the loop alone).
    A row of the first child goes to ``dst``, one of the second to ``scratch`` at
    the count of the second child's rows so far (``k - n_a``), a single count."""
    cdef intp_t k, n_a = 0
    cdef int32_t row
    for k in range(n_src):
        row = src[k]
        dst[n_a] = row
        scratch[k - n_a] = row
        n_a += <intp_t>((first_bits[row >> 6] >> (row & 63)) & 1)
    memcpy(dst + n_first, scratch, (n_src - n_first) * sizeof(int32_t))


cdef inline intp_t _keep_in_bag(
    const int32_t* order_f,
    int32_t* dst,
    intp_t n,
    const uint8_t* row_node,
) noexcept nogil:
    """The in-bag rows of ``order_f`` (node byte not NO_NODE), in the same order, into
    ``dst``; returns how many."""
    cdef intp_t k, m = 0
    cdef int32_t row
    for k in range(n):
        row = order_f[k]
        dst[m] = row
        m += row_node[row] != NO_NODE
    return m


cdef inline bint _wins_at(const candidate_t* a, const candidate_t* best,
                          const side_t* total, const grid_t* grid) noexcept nogil:
    """``wins`` of _choice.pxd for two threads' bests of one node, an exact tie
    between two blocks of one feature going to the lower sorted position (the
    whole scan keeps the first of equal proxies)."""
    if a.feature >= 0 and a.feature == best.feature:
        return beats(a.proxy, &a.left, best.proxy, &best.left, a.pos < best.pos,
                     total, grid)
    return wins(a.proxy, a.feature, &a.left, best.proxy, best.feature, &best.left,
                total, grid)


@cython.final
cdef class ExactSplitFinder(SplitFinder):
    """Exact split search: every distinct value of every feature is a candidate.

    Parameters
    ----------
    X : float32 array of shape (n_samples, n_features), Fortran order
        Sorted once here, per feature (NaN last); the finder keeps it and reads the
        values through the sorted order (no sorted copy).
    n_threads : int
        Threads of the sort and of the scans.
    lean_scans : bool, default=True
        Use the lean scans where they apply (features without missing values,
        positive float32 weights, no minimum leaf weight, criterion "friedman_mse"); False runs the general
        scan everywhere (the tests compare the two: they find the same splits).
    segments : bool, default=True
        Where the lean scans apply, with at most ``SEGMENT_MAX_VALUES`` values, keep each node's
        rows of each feature contiguous (split at every level, in the same order) and
        scan a node's segment alone, as the root is scanned; False scans a level's
        nodes together in one pass of each feature (the tests compare the two).

    Notes
    -----
    What it holds besides X: the sorted order (int32, 4 bytes per value) and per row
    ``row_wr`` (8 bytes), ``row_slot`` (4) and ``row_node`` (1) (a tree given
    residuals alone, unit weights, needs nothing more: every scan reads its w * r in
    ``row_wr``); with segments, 4 bytes per value, 4 per row per thread of a scan and
    one bit per row; the 16-byte row records of the weighted scans only for trees given row
    statistics (weights), or with unit weights once a level has more nodes than a
    byte holds; where a root may be blocked (``root_block_plan``: from 4 threads
    on, and only where the rule blocks a feature of this fit's shape), 1 byte per
    value naming its block of sorted positions (and per feature, block and child
    of the root the children's counts and sums: not per row). These per-row
    buffers are reported to ``tracemalloc``.
    """
    cdef:
        int32_t* segment_rows    # per feature: the rows of each node of the level,
                                 # at the node's range of the grower's partition
        int32_t* segment_scratch # per thread of a scan: n_samples rows (a second child's)
        uint64_t_t* first_bits   # per row one bit: its node is the first of its pair
        bint segments            # segments allowed (constructor)
        int segment_state        # SEGMENTS_NONE, SEGMENTS_IN_ORDER, SEGMENTS_IN_ROWS
        const int32_t[:, ::1] order          # rows of each feature in sorted order
        const float32_t[::1, :] X            # the values, read through order or segments
        const int64_t[::1] n_nonmissing
        bint positive_weights    # every weight > 0 and exactly a float32: lean scans
        bint unit_weights        # every sample weight is 1
        bint all_rows_in_root    # the tree's root holds every row (no subsample)
        bint lean_scans          # False: the general scan only (tests)
        const row_stat_t* row_stats  # of the current tree (start_tree); NULL for a
                                     # tree given residuals alone (unit weights):
                                     # the general scan reads row_wr and w = 1
        packed_row_t* rows       # the weighted scans' records; NULL until needed
        float64_t* row_wr        # w * r of each row: what the unweighted scans gather
        int32_t* row_slot        # node slot of each row (-1: none)
        uint8_t* row_node        # row_slot as a byte (NO_NODE: none or too many)
        intp_t capacity          # nodes per level the buffers below hold
        void* thread_states      # the block holding the four buffers below
        scan_t* scan             # per thread and node: state of the feature scan
        candidate_t* thread_best # per thread and node: best split so far
        node_scan_t* node_scan   # per thread and node: hot state of the unit-weight scan
        float64_t* shared_best   # per node: the best proxy any thread has found so far
                                 # this level (the lean scans' bound; collect)
        int level_threads        # threads whose candidates the last collect left
        intp_t block_rows        # sorted positions per block of a root's feature
        intp_t n_blocks          # blocks per feature (ceil(n_samples / block_rows))
        bint forced_blocks       # _force_blocks: blocks and pair tasks everywhere
        float64_t* block_offset  # per feature and block: w * r before the block
        uint8_t* block_of        # per feature, per row: the block of sorted positions
                                 # the row falls in (NULL where no root is blocked)
        int64_t* child_pos       # per feature, block (and one past) and child of the
                                 # root: the child's rows before the block
                                 # (``_child_block_pass``; NULL without block_of)
        float64_t* child_sums    # per feature, block and child of the root: their
                                 # w * r
        intp_t sum_chunk_rows    # rows per task of the blocked features' passes
        intp_t n_sum_chunks      # those tasks: ceil(n_samples / sum_chunk_rows)
        float64_t* chunk_sums    # per chunk, blocked feature and block: its rows'
                                 # w * r (NULL without block_of)
        int64_t* chunk_counts    # per chunk, blocked feature and block: its rows
                                 # of the counted child of the root
        intp_t* thread_errors    # per thread of a scan: the root's children's blocks
                                 # whose split disagreed with the counts
        intp_t root_blocked      # features the tree's root scanned in blocks (their
                                 # block sums in block_offset), 0 at another root
        int32_t* task_feature    # per task of a level's scan: its feature
        int32_t* task_part       # -1: every node, else its block (root) or the
                                 # first slot of its pair of siblings
        intp_t task_capacity     # tasks the two buffers above hold
        object _row_stats_ref    # keeps row_stats alive while row_stats points into it
        bint owns_block_of       # False: block_of is the finder's it was copied from
        object _sorted_by        # that finder (``with_threads``): kept alive while
                                 # this one reads its block bytes
    # Levels scanned with root blocks, with (feature, pair) tasks, with the root's
    # blocks carried to its children (the tests' check that a path ran).
    cdef readonly intp_t blocked_levels
    cdef readonly intp_t pair_levels
    cdef readonly intp_t child_block_levels
    # Blocks of the root's children whose split disagreed with the counts (never
    # written: their segments left as they were; a test's check).
    cdef readonly intp_t child_count_errors

    def __cinit__(self):
        self.rows = NULL
        self.row_wr = NULL
        self.row_slot = NULL
        self.row_node = NULL
        self.thread_states = NULL
        self.shared_best = NULL
        self.scan = NULL
        self.thread_best = NULL
        self.node_scan = NULL
        self.segment_rows = NULL
        self.segment_scratch = NULL
        self.first_bits = NULL
        self.capacity = 0
        self.block_offset = NULL
        self.block_of = NULL
        self.child_pos = NULL
        self.child_sums = NULL
        self.chunk_sums = NULL
        self.chunk_counts = NULL
        self.thread_errors = NULL
        self.task_feature = NULL
        self.task_part = NULL
        self.task_capacity = 0

    def __init__(self, const float32_t[::1, :] X, int n_threads=1, bint lean_scans=True,
                 bint segments=True, ExactSplitFinder sorted_by=None):
        # ``sorted_by``: a finder on this X whose sorted order (and block bytes) this
        # one reads instead of sorting (``with_threads``).
        check_row_count(X.shape[0])
        self.lean_scans = lean_scans
        self.segments = (lean_scans and segments
                         and X.shape[0] * X.shape[1] <= SEGMENT_MAX_VALUES)
        self.segment_state = SEGMENTS_NONE
        self.n_samples = X.shape[0]
        self.n_features = X.shape[1]
        self.n_threads = max(1, n_threads)
        # The grower's root w * r^2 runs as a task of the root's scan (``collect``).
        self.side_tasks = True
        self.owns_block_of = True
        self._sorted_by = sorted_by
        if sorted_by is None:
            order = np.empty((self.n_features, self.n_samples), dtype=np.int32)
            n_nonmissing = np.empty(self.n_features, dtype=np.int64)
            presort_features(X, order, n_nonmissing, self.n_threads)
            self.order = order
            self.n_nonmissing = n_nonmissing
        else:
            if (sorted_by.n_samples != self.n_samples
                    or sorted_by.n_features != self.n_features
                    or (self.n_samples > 0 and self.n_features > 0
                        and &sorted_by.X[0, 0] != &X[0, 0])
                    or sorted_by.X.strides[0] != X.strides[0]
                    or sorted_by.X.strides[1] != X.strides[1]):
                raise ValueError(f"sorted_by must be a finder of this X ({self.n_samples} "
                                 f"rows x {self.n_features} features, the same memory)")
            self.order = sorted_by.order
            self.n_nonmissing = sorted_by.n_nonmissing
        self.X = X
        self.row_wr = <float64_t*>gbc_alloc_random_access(
            max(1, self.n_samples) * sizeof(float64_t))
        self.row_slot = <int32_t*>gbc_alloc_random_access(
            max(1, self.n_samples) * sizeof(int32_t))
        self.row_node = <uint8_t*>gbc_alloc_random_access(
            max(1, self.n_samples) * sizeof(uint8_t))
        if self.row_wr == NULL or self.row_slot == NULL or self.row_node == NULL:
            raise MemoryError(f"cannot allocate row buffers for {self.n_samples} samples")
        if sorted_by is None:
            self.forced_blocks = _forced_block_rows > 0
            self.block_rows = (_forced_block_rows if self.forced_blocks
                               else _block_rows_for(self.n_samples))
        else:
            self.forced_blocks = sorted_by.forced_blocks
            self.block_rows = sorted_by.block_rows
        self.n_blocks = max(1, (self.n_samples + self.block_rows - 1) // self.block_rows)
        self.block_offset = <float64_t*>malloc(
            max(1, self.n_features * self.n_blocks) * sizeof(float64_t))
        if self.block_offset == NULL:
            raise MemoryError(f"cannot allocate block sums for {self.n_blocks} blocks")
        self._reserve_tasks(self.n_features * (self.n_blocks + 1))
        if sorted_by is not None and sorted_by.block_of != NULL:
            # The block bytes depend on the sorted order alone: read, never written.
            self.block_of = sorted_by.block_of
            self.owns_block_of = False
        else:
            self._make_block_bytes()
        self.sum_chunk_rows = _sum_chunk_rows_for(self.n_samples, self.block_rows,
                                                  self.forced_blocks)
        self.n_sum_chunks = (self.n_samples + self.sum_chunk_rows - 1) // self.sum_chunk_rows
        if self.block_of != NULL:
            self.child_pos = <int64_t*>malloc(
                max(1, self.n_features * 2 * (self.n_blocks + 1)) * sizeof(int64_t))
            self.child_sums = <float64_t*>malloc(
                max(1, self.n_features * 2 * self.n_blocks) * sizeof(float64_t))
            self.chunk_sums = <float64_t*>malloc(
                max(1, self.n_sum_chunks * self.n_features * self.n_blocks)
                * sizeof(float64_t))
            self.chunk_counts = <int64_t*>malloc(
                max(1, self.n_sum_chunks * self.n_features * self.n_blocks)
                * sizeof(int64_t))
            self.thread_errors = <intp_t*>malloc(self.n_threads * sizeof(intp_t))
            if (self.child_pos == NULL or self.child_sums == NULL
                    or self.chunk_sums == NULL or self.chunk_counts == NULL
                    or self.thread_errors == NULL):
                raise MemoryError(f"cannot allocate the children's block sums for "
                                  f"{self.n_blocks} blocks")

    def with_threads(self, int n_threads, bint shares_rows=False):
        """A finder on the same X and sorted order (shared, not copied) with buffers
        of its own for what a tree writes, and ``n_threads`` threads: trees grown at
        the same time each need one (the K trees of an iteration grown side by
        side, ``_boosting._growers``). Its trees are this finder's, bit for bit.

        Shared (read only, written once per fit): X, the sorted order of every
        feature and its counts of non-missing values, and the block bytes where
        this finder has them (a copy whose threads block a root that this finder's
        do not makes its own: 1 byte per value). Its own, per extra grower: per row
        ``row_wr`` (8 bytes), ``row_slot`` (4) and ``row_node`` (1), 13 bytes; the
        16-byte row records where a tree needs them (weights, or a level of 255
        nodes or more); its per-thread node states and block sums (per node and
        per block, not per row), and where it holds block bytes, the chunks' sums
        and counts of the blocked passes (16 bytes per row chunk, feature and
        block: at most 64 chunks, not per row). The node segments (4 bytes per value, 4 bytes per
        row per thread of a scan, one bit per row) where this finder has them and
        the copy's share of the threads allows them (``copy_keeps_segments``): the
        copies keep segments while ``n_samples x n_features <= SEGMENT_MAX_VALUES x
        n_threads / self.n_threads`` (growers sharing out this finder's threads then hold at
        most ``SEGMENT_MAX_VALUES`` values of segments together, 128 MiB, as one
        finder at most does; where trees are left over, K mod threads of them, this
        finder grows them with segments of its own: twice that at most); above it a
        copy scans without segments, which finds the same splits from the same sums.

        Parameters
        ----------
        n_threads : int
        shares_rows : bool, default=False
            Accepted for the interface of ``HistogramSplitFinder.with_threads``; an
            exact finder's copies share no buffer that a tree writes.

        Returns
        -------
        ExactSplitFinder
        """
        n_threads = max(1, n_threads)
        return ExactSplitFinder(
            self.X, n_threads, self.lean_scans,
            self.segments and copy_keeps_segments(self.n_samples, self.n_features,
                                                  n_threads, self.n_threads),
            sorted_by=self)

    @property
    def reads_block_bytes_of_original(self):
        """Whether the finder reads the block bytes of the finder it was copied from
        (``with_threads``) instead of holding its own."""
        return self.block_of != NULL and not self.owns_block_of

    @property
    def has_segments(self):
        """Whether the finder may keep node segments (its constructor's rule and,
        for a copy, ``with_threads``'s)."""
        return bool(self.segments)

    cdef int _make_block_bytes(self) except -1:
        """The byte of each (feature, row) naming its block of sorted positions, where
        a root may ever be blocked: on MIN_BLOCK_THREADS threads or more, when the
        rule (``_root_blocked_features``, with every feature without missing values
        lean: no level has more) blocks a feature (or under ``_force_blocks``, up to
        MAX_BLOCKS blocks: more read the blocks' rows through the sorted order).
        1 byte per value; none on one or two threads."""
        cdef intp_t f, k, n = self.n_samples, n_blocks = self.n_blocks
        cdef intp_t block_rows = self.block_rows, n_lean = 0
        cdef int n_threads = self.n_threads
        cdef uint8_t* out
        for f in range(self.n_features):
            n_lean += self.n_nonmissing[f] == n
        if n_blocks > MAX_BLOCKS or n_blocks <= 1:
            return 0
        if not self.forced_blocks and (
                n * self.n_features < MIN_PARALLEL_SCAN
                or _root_blocked_features(self.n_features, n_lean, n_threads,
                                          n_blocks, _sum_chunks_for(n)) == 0):
            return 0
        self.block_of = <uint8_t*>gbc_alloc_random_access(
            <size_t>(self.n_features * n) * sizeof(uint8_t))
        if self.block_of == NULL:
            raise MemoryError(f"cannot allocate the block bytes of {n} rows x "
                              f"{self.n_features} features")
        with nogil:
            for f in prange(self.n_features, schedule="dynamic", chunksize=1,
                            num_threads=n_threads):
                out = self.block_of + f * n
                for k in range(n):
                    out[self.order[f, k]] = <uint8_t>(k // block_rows)
        return 0

    cdef int _make_records(self, bint fill) except -1:
        """The 16-byte records of the weighted scans (kept up to date from then on);
        ``fill``: written now from ``row_wr`` and ``row_slot`` (a tree of unit
        weights, whose start did not write them)."""
        cdef intp_t i
        if self.rows != NULL:
            return 0
        self.rows = <packed_row_t*>gbc_alloc_random_access(
            max(1, self.n_samples) * sizeof(packed_row_t))
        if self.rows == NULL:
            raise MemoryError(f"cannot allocate row records for {self.n_samples} samples")
        if fill:
            with nogil:
                for i in range(self.n_samples):
                    self.rows[i].wr = self.row_wr[i]
                    self.rows[i].w = 1.0
                    self.rows[i].slot = self.row_slot[i]
        return 0

    cdef int _reserve_tasks(self, intp_t n_tasks) except -1:
        """Room for ``n_tasks`` tasks of a level's scan."""
        cdef int32_t* feature
        cdef int32_t* part
        if n_tasks <= self.task_capacity:
            return 0
        feature = <int32_t*>malloc(n_tasks * sizeof(int32_t))
        part = <int32_t*>malloc(n_tasks * sizeof(int32_t))
        if feature == NULL or part == NULL:
            free(feature)
            free(part)
            raise MemoryError(f"cannot allocate {n_tasks} scan tasks")
        free(self.task_feature)
        free(self.task_part)
        self.task_feature = feature
        self.task_part = part
        self.task_capacity = n_tasks
        return 0

    def __dealloc__(self):
        free(self.block_offset)
        free(self.child_pos)
        free(self.child_sums)
        free(self.chunk_sums)
        free(self.chunk_counts)
        free(self.thread_errors)
        if self.owns_block_of:
            gbc_free_traced(self.block_of)
        free(self.task_feature)
        free(self.task_part)
        gbc_free_traced(self.rows)
        gbc_free_traced(self.row_wr)
        gbc_free_traced(self.row_slot)
        gbc_free_traced(self.row_node)
        free(self.thread_states)
        gbc_free_traced(self.segment_rows)   # (segment_scratch lies in the same block)
        gbc_free_traced(self.first_bits)

    cdef int reduce(self, const level_t* level) except -1:
        """One process holds every row: nothing to sum. Refuses, before the level's
        splits are chosen, a level of the root's children in blocks where a block's
        rows split otherwise than its counts say (``child_count_errors``; the counts
        and the split read the same bits, so never by construction): its segments
        and scans would be incomplete."""
        if self.child_count_errors:
            raise RuntimeError(
                f"exact split finder: {self.child_count_errors} block(s) of the root's "
                "children split otherwise than their counts (an internal error; "
                "please report it)")
        return 0

    cdef int start_tree(self, const row_stat_t[::1] row_stats,
                        const float64_t[::1] residual,
                        const uint8_t[::1] in_bag) except -1:
        cdef intp_t i, n = self.n_samples
        cdef float64_t w, wr
        cdef int32_t slot
        cdef packed_row_t* rows
        cdef float64_t* row_wr = self.row_wr
        cdef int32_t* row_slot = self.row_slot
        cdef uint8_t* row_node = self.row_node
        cdef const row_stat_t* stats = NULL
        cdef const float64_t* r = NULL
        cdef const uint8_t* mask = NULL
        cdef intp_t n_not_unit = 0, n_not_positive = 0, n_not_in_root = 0
        cdef int n_threads
        if ((row_stats is None and residual is None)
                or (row_stats is not None and row_stats.shape[0] != n)
                or (residual is not None and residual.shape[0] != n)
                or (in_bag is not None and in_bag.shape[0] != n)):
            raise ValueError(f"row_stats or residual, and in_bag, must have {n} rows")
        if row_stats is None:
            self._row_stats_ref = None
            self.row_stats = NULL
        else:
            self._row_stats_ref = row_stats
            self.row_stats = &row_stats[0] if n > 0 else NULL
            self._make_records(False)
        if n > 0:
            if row_stats is not None:
                stats = &row_stats[0]
            else:
                r = &residual[0]
            if in_bag is not None:
                mask = &in_bag[0]
            rows = self.rows
            n_threads = self.n_threads if n >= MIN_PARALLEL_ROWS else 1
            with nogil:
                # One pass, in parallel (every row on its own; the counts are
                # integers): the records the scans gather, and what decides their
                # paths.
                GBC_TRACE_REGION_BEGIN(GBC_TR_EXACT_ROWS, n)
                for i in prange(n, schedule="static", num_threads=n_threads):
                    if stats != NULL:
                        w = stats[i].w
                        wr = stats[i].wr
                    else:
                        w = 1.0
                        wr = r[i]
                    slot = 0 if mask == NULL or mask[i] else -1
                    if rows != NULL:
                        rows[i].wr = wr
                        rows[i].w = <float32_t>w
                        rows[i].slot = slot
                    row_wr[i] = wr
                    row_slot[i] = slot
                    row_node[i] = _node_byte(slot)
                    n_not_unit += w != 1.0
                    n_not_positive += not ((w > 0.0) & (<float64_t>(<float32_t>w) == w))
                    n_not_in_root += slot != 0
                GBC_TRACE_REGION_END(GBC_TR_EXACT_ROWS, n)
        self.unit_weights = n_not_unit == 0
        self.positive_weights = self.lean_scans and n_not_positive == 0
        self.all_rows_in_root = n_not_in_root == 0
        self.segment_state = SEGMENTS_NONE
        if self.segments and self.positive_weights and n > 0 and self.segment_rows == NULL:
            # One block: the segments, then (SCRATCH_OFFSET values on, so that the
            # scratch's stores and the segments' loads do not share their addresses'
            # low 12 bits, which stalls loads: measured 10% of a 30,000-row fit) one
            # scratch buffer per thread of a scan (at most one per feature).
            self.segment_rows = <int32_t*>gbc_alloc_random_access(
                (n * (self.n_features + min(<intp_t>self.n_threads, self.n_features))
                 + SCRATCH_OFFSET) * sizeof(int32_t))
            if self.segment_rows == NULL:
                raise MemoryError(f"cannot allocate node segments for {n} samples")
            self.segment_scratch = self.segment_rows + n * self.n_features + SCRATCH_OFFSET
            self.first_bits = <uint64_t_t*>gbc_alloc_random_access(
                ((n + 63) // 64) * sizeof(uint64_t_t))
            if self.first_bits == NULL:
                gbc_free_traced(self.segment_rows)
                self.segment_rows = NULL
                raise MemoryError(f"cannot allocate node segments for {n} samples")
        return 0

    cdef int start_level(self, intp_t n_nodes) except -1:
        cdef intp_t capacity
        cdef size_t n_states, scan_bytes, best_bytes, node_scan_bytes, total
        cdef char* block
        if n_nodes >= NO_NODE:
            # Too many nodes for row_node: the unweighted scan runs on the records.
            self._make_records(True)
        # One task per feature and pair of siblings at most (or per block: __init__).
        self._reserve_tasks(self.n_features * (n_nodes // 2 + 1))
        if n_nodes <= self.capacity:
            return 0
        capacity = (n_nodes + NODE_GROUP - 1) // NODE_GROUP * NODE_GROUP
        n_states = <size_t>(self.n_threads * capacity)
        scan_bytes = n_states * sizeof(scan_t)
        best_bytes = n_states * sizeof(candidate_t)
        node_scan_bytes = n_states * sizeof(node_scan_t)
        total = scan_bytes + best_bytes + node_scan_bytes + capacity * sizeof(float64_t)
        block = <char*>malloc(total + CACHE_LINE)
        if block == NULL:
            raise MemoryError(f"cannot allocate split buffers ({total} bytes)")
        free(self.thread_states)
        self.thread_states = block
        block = line_aligned(block)
        self.scan = <scan_t*>block
        self.thread_best = <candidate_t*>(block + scan_bytes)
        self.node_scan = <node_scan_t*>(block + scan_bytes + best_bytes)
        self.shared_best = <float64_t*>(block + scan_bytes + best_bytes + node_scan_bytes)
        self.capacity = capacity
        return 0

    cdef void rows_moved(self, const int32_t* moved, intp_t start, intp_t stop,
                         int32_t slot) noexcept nogil:
        cdef intp_t i
        cdef int32_t row
        cdef packed_row_t* records = self.rows
        cdef int32_t* row_slot = self.row_slot
        cdef uint8_t* row_node = self.row_node
        cdef uint8_t byte = _node_byte(slot)
        if records != NULL:
            for i in range(start, stop):
                row = moved[i]
                records[row].slot = slot
                row_slot[row] = slot
                row_node[row] = byte
        else:
            for i in range(start, stop):
                row = moved[i]
                row_slot[row] = slot
                row_node[row] = byte

    cdef void collect(self, const level_t* level) noexcept nogil:
        """The fused scan: the candidates of every splittable node, per thread (the
        scan cannot keep the statistics of every threshold); ``choose`` merges
        them.

        The scan is a list of tasks (``_plan_tasks``), handed out one at a time
        (their costs differ: a feature whose gains keep improving takes the exact
        path more often), in an order that the OpenMP runtime decides (LLVM's libomp
        steals work: a thread may scan feature 7 before feature 5). A task is a
        feature for every node of the level; or, where the lean scans apply, a
        feature for one pair of siblings of a level with segments, one block of
        sorted positions of a root's feature (after a first pass sums the blocks),
        or such a block on the root's children (after a first pass counts and
        sums each block's rows of each child: ``_child_block_task``).
        Nothing depends on the order or on how the work is cut: each thread's best
        is, for every node, the first of its candidates under the total order of
        ``_choice.pxd`` (largest proxy, then lowest feature, then, between blocks
        of a feature, lowest sorted position, as the whole scan keeps the first of
        equal proxies), and ``choose`` merges the threads' bests under the same
        order. Per task: the scan states (``_start_node``), a lean scan where one
        applies (``_scan_lean``, ``_scan_root_block``, ``_child_block_task``,
        ``_scan_pair``), else the
        general scan (``_scan_general``), then the thread's bests (``_end_node``).
        A side task of the grower's (``level_t.side_task``: the root's w * r^2 of
        a one-process level-wise tree, ``side_tasks``) is one more task of the
        loop, run once, after the whole features' tasks and before any block or
        pair task; it writes only its own context.
        """
        cdef intp_t f, s, t, i, n_tasks, n_blocked = 0, n_slots = level.n_nodes
        cdef intp_t part, sib, lo, n = self.n_samples
        cdef intp_t side = 1 if level.side_task != NULL else 0, side_at = -1
        cdef intp_t n_blocks = self.n_blocks, block_rows = self.block_rows
        cdef int tid
        cdef int all_threads = self.n_threads
        cdef int n_threads
        cdef scan_t* states
        cdef candidate_t* tb
        cdef float64_t min_weight_leaf = level.min_weight_leaf
        cdef uint8_t criterion = level.criterion
        cdef bint is_root = n_slots == 1 and level.nodes[0].parent < 0
        # Segments: the rows of each node of this level, in each feature's order, at
        # the node's range [start, stop) of the grower's partition: from the root's
        # sorted order, then split at every level (stable: the same order as a scan
        # of the parent's rows, so the same sums in the same order, bit for bit).
        cdef bint segment_level = (
            self.segments and self.positive_weights and min_weight_leaf <= 0
            and criterion == CRITERION_FRIEDMAN_MSE and n_slots < NO_NODE
            and (is_root or self.segment_state != SEGMENTS_NONE))
        cdef int parents_in = self.segment_state
        cdef bint use_bits = False
        # A level's scan must be long enough (about 0.1 ms: 100,000 values at about a
        # nanosecond each) to pay for the start-up and the closing barrier of a
        # parallel region (microseconds on an idle machine; on a machine busier than
        # its cores, a scheduler time slice, for every library's threads alike).
        if self.n_samples * self.n_features < MIN_PARALLEL_SCAN:
            all_threads = 1
        # At most one thread per feature where a level may split segments (one
        # scratch buffer per thread of a scan: ``start_tree``).
        n_threads = <int>min(<intp_t>all_threads, self.n_features)
        if segment_level and not is_root:
            use_bits = self._mark_first_children(level, n_threads)
        n_tasks = self._plan_tasks(level, all_threads, is_root, segment_level,
                                   parents_in, use_bits, &n_blocked)
        if is_root:
            self.root_blocked = n_blocked
        if side:
            # The grower's task (``level_t.side_task``: the root's w * r^2, a pass in
            # row order, shorter than a whole feature's scan and longer than a block
            # of one: at 1M rows on one thread 1.4 ms, a feature 4.6 ms, a block
            # 0.15 ms, benchmarks/README.md) after the whole features' tasks and
            # before any block or pair task, where a longest-first order puts it:
            # the small tasks after it fill the threads' ends.
            side_at = 0
            while side_at < n_tasks and self.task_part[side_at] < 0:
                side_at += 1
        if n_blocked > 0 and is_root:
            # Blocks need no segment scratch: up to one thread per task.
            self.blocked_levels += 1
            n_threads = <int>min(<intp_t>all_threads, n_tasks)
        elif n_blocked > 0:
            # The children's blocks split into the thread's scratch: one thread
            # per feature at most, as the segments' splits.
            self.child_block_levels += 1
        elif n_tasks > self.n_features:
            self.pair_levels += 1
        for t in range(n_threads):
            for s in range(n_slots):
                self.thread_best[t * self.capacity + s].proxy = -INFINITY
                self.thread_best[t * self.capacity + s].feature = -1
                self.thread_best[t * self.capacity + s].pos = 0
        for s in range(n_slots):
            self.shared_best[s] = -INFINITY
        if n_blocked > 0 and is_root:
            self._sum_blocks(n_blocked, n_threads)
        elif n_blocked > 0:
            # The counts' pass writes no scratch: every thread of the level.
            self._sum_child_blocks(level, n_blocked, all_threads)
            for t in range(n_threads):
                self.thread_errors[t] = 0
        if _scrambled_tasks:
            self._scramble(n_tasks, n_threads, n_blocked > 0 and not is_root)
        GBC_TRACE_REGION_BEGIN(GBC_TR_EXACT_SCAN, self.n_samples * self.n_features)
        for i in prange(n_tasks + side, schedule="dynamic", chunksize=1,
                        num_threads=n_threads):
            if i == side_at:
                GBC_TRACE_TASK_BEGIN(GBC_TR_ROOT_WR2, i)
                level.side_task(level.side_context)
                GBC_TRACE_TASK_END(GBC_TR_ROOT_WR2, i)
            else:
                t = i - 1 if side and i > side_at else i
                GBC_TRACE_TASK_BEGIN(GBC_TR_EXACT_SCAN, t)
                tid = threadid()
                states = self.scan + tid * self.capacity
                tb = self.thread_best + tid * self.capacity
                f = self.task_feature[t]
                part = self.task_part[t]
                if part < 0:
                    for s in range(n_slots):
                        self._start_node(states, tb, level, f, s, 0)
                    if level.categorical != NULL and level.categorical[f]:
                        self._scan_categorical(states, level, f)
                    elif not self._scan_lean(states, level, f, tid, segment_level,
                                             is_root, parents_in, use_bits):
                        self._scan_general(states, level, f)
                    for s in range(n_slots):
                        self._end_node(states, tb, level, f, s)
                elif is_root:
                    # Block ``part`` of the root's feature f (unit weights, every row).
                    lo = part * block_rows
                    self._start_node(states, tb, level, f, 0, lo)
                    if n >= FAR_PREFETCH_ROWS:
                        _scan_root_block(states, &self.order[f, 0], &self.X[0, f], n,
                                         self.row_wr, level.min_samples_leaf,
                                         FAR_PREFETCH_DISTANCE, lo,
                                         min(lo + block_rows, n),
                                         self.block_offset[f * n_blocks + part])
                    else:
                        _scan_root_block(states, &self.order[f, 0], &self.X[0, f], n,
                                         self.row_wr, level.min_samples_leaf,
                                         PREFETCH_DISTANCE, lo, min(lo + block_rows, n),
                                         self.block_offset[f * n_blocks + part])
                    self._end_node(states, tb, level, f, 0)
                elif n_blocked > 0:
                    # Block ``part`` of the root's order of feature f, on its children.
                    self._child_block_task(states, tb, level, f, part, tid)
                else:
                    # Feature f for the pair of siblings whose first slot is ``part``.
                    sib = level.nodes[part].sibling
                    self._start_node(states, tb, level, f, part, 0)
                    self._start_node(states, tb, level, f, sib, 0)
                    self._scan_pair(states, level, f, tid, parents_in, use_bits, part)
                    self._end_node(states, tb, level, f, part)
                    self._end_node(states, tb, level, f, sib)
                GBC_TRACE_TASK_END(GBC_TR_EXACT_SCAN, t)
        GBC_TRACE_REGION_END(GBC_TR_EXACT_SCAN, self.n_samples * self.n_features)
        if n_blocked > 0 and not is_root:
            for t in range(n_threads):
                self.child_count_errors += self.thread_errors[t]
        self.level_threads = n_threads
        if not segment_level:
            self.segment_state = SEGMENTS_NONE
        elif is_root and self.all_rows_in_root:
            self.segment_state = SEGMENTS_IN_ORDER
        else:
            self.segment_state = SEGMENTS_IN_ROWS

    cdef void _scramble(self, intp_t n_tasks, int n_threads,
                        bint child_blocks) noexcept nogil:
        """``_scramble_tasks``: the level's tasks reversed (mode 1) or shuffled
        (mode 2: a fixed xorshift sequence, Fisher-Yates), the threads' split
        scratch filled with -1, and on a level of the root's children in blocks
        (whose parents' rows are the root's sorted order, not the segments) the
        segments too."""
        cdef intp_t i, j, n = self.n_samples
        cdef int32_t f, part
        cdef uint64_t_t x = 88172645463325252ULL
        for i in range(n_tasks - 1, 0, -1):
            if _scrambled_tasks == 1:
                j = n_tasks - 1 - i
                if j >= i:
                    break
            else:
                x ^= x << 13
                x ^= x >> 7
                x ^= x << 17
                j = <intp_t>(x % <uint64_t_t>(i + 1))
            f, part = self.task_feature[i], self.task_part[i]
            self.task_feature[i], self.task_part[i] = self.task_feature[j], self.task_part[j]
            self.task_feature[j], self.task_part[j] = f, part
        if self.segment_scratch != NULL:
            memset(self.segment_scratch, 0xFF,
                   n * min(<intp_t>n_threads, self.n_features) * sizeof(int32_t))
            if child_blocks:
                memset(self.segment_rows, 0xFF, n * self.n_features * sizeof(int32_t))

    cdef inline bint _lean_applies(self, const level_t* level, intp_t f) noexcept nogil:
        """Whether the lean scans apply to feature ``f`` on this level: no missing
        value in the feature, positive weights, no monotonic constraint, no weight
        bound, the Friedman criterion (a categorical feature is tested first)."""
        return (self.n_nonmissing[f] == self.n_samples and self.positive_weights
                and (level.monotonic == NULL or level.monotonic[f] == 0)
                and level.min_weight_leaf <= 0
                and level.criterion == CRITERION_FRIEDMAN_MSE)

    cdef inline bint _lean_ordered(self, const level_t* level, intp_t f) noexcept nogil:
        """``_lean_applies`` to a feature that is not categorical."""
        return (not (level.categorical != NULL and level.categorical[f])
                and self._lean_applies(level, f))

    cdef inline bint _is_pair_head(self, const level_t* level, intp_t s) noexcept nogil:
        """Slot ``s`` is the first of a pair of siblings one of which is split."""
        cdef intp_t sib = level.nodes[s].sibling
        return sib > s and (level.nodes[s].splittable or level.nodes[sib].splittable)

    cdef inline intp_t _pair_rows(self, const level_t* level, intp_t s) noexcept nogil:
        """The rows of the pair of siblings whose first slot is ``s``."""
        cdef const level_node_t* nodes = level.nodes
        cdef intp_t sib = nodes[s].sibling
        return nodes[s].stop - nodes[s].start + nodes[sib].stop - nodes[sib].start

    cdef intp_t _plan_tasks(self, const level_t* level, int n_threads, bint is_root,
                            bint segment_level, int parents_in, bint use_bits,
                            intp_t* n_blocked) noexcept nogil:
        """The level's scan tasks in ``task_feature`` and ``task_part``; returns how
        many, and sets ``n_blocked[0]`` to the number of features scanned in blocks
        at the root or at its children (they come last, each block a task, block
        order; their features in ``task_feature[n_tasks - n_blocked * n_blocks
        ...]``, one per block).

        - The root, where every row is in it, of unit weights (``_scan_root_block``
          then gives every decision of the whole scan), where the finder holds the
          block bytes: the last k lean features are blocked, k from the root's
          modelled time on the threads (``_root_blocked_features``; which ones does
          not matter for the result). The rule reads the thread count, the result
          does not: the sums are exact and ties between blocks are ranked by
          position.
        - The root's children, where the root held every row in its sorted order
          (its segments), of unit weights, with the block bytes and the level's
          first-child bits: the same features by the same rule on the threads of
          this scan, at most one per feature (``_child_blocked_features``; a
          child's task, a split and two scans, costs more than a root's scan
          against the same pass over the rows, so the root's model of the pass
          overstates it), at most those the root blocked (their block sums): the
          root's blocks carried down: a pass in row order counts and sums each
          block's smaller child (``_sum_child_blocks``), then each block of the root's
          sorted order is a task that splits it into the two children's segments
          at those counts' prefixes and scans each child's part of it
          (``_child_block_task``).
        - A level with segments below the root with two pairs of siblings or more:
          a lean feature is one task per pair (split of the pair's segment, then
          the scans of its two nodes: the work of the feature's task, cut by pair,
          so also on one thread, where a trace then shows the tasks that more
          threads share out). The pair tasks come after the whole features, pair
          by pair in decreasing order of the pair's rows (then slot), each pair for
          every lean feature in order: the largest tasks are handed out first and
          the small ones fill the threads' ends (where one pair holds most rows,
          feature order left a last wave of large tasks on few threads). The
          order is the data's; the result does not depend on it.
        - Otherwise (and for every feature the lean scans do not take), one task
          per feature. ``_force_blocks`` takes the first three paths wherever they
          may apply."""
        cdef intp_t f, s, b, i, t = 0, n_pairs = 0, n_lean = 0, r, n_block = 0
        cdef intp_t f_cut
        cdef intp_t n_slots = level.n_nodes, n_blocks = self.n_blocks
        cdef bint blocks = False, pairs = False
        # The level's pairs by their first slot, and their rows (a segment level has
        # n_slots < NO_NODE = 255 slots, so at most MAX_PAIRS pairs; checked below).
        cdef int32_t heads[MAX_PAIRS]
        cdef intp_t head_rows[MAX_PAIRS]
        n_blocked[0] = 0
        for f in range(self.n_features):
            n_lean += self._lean_ordered(level, f)
        if (is_root and self.all_rows_in_root and self.unit_weights and n_lean > 0
                and n_blocks > 1 and level.nodes[0].splittable
                and level.grid.unit_s > 0.0):
            if self.forced_blocks:
                n_block = n_lean
            elif self.block_of != NULL:
                n_block = _root_blocked_features(self.n_features, n_lean, n_threads,
                                                 n_blocks, _sum_chunks_for(self.n_samples))
            blocks = n_block > 0
        elif segment_level and not is_root:
            if (parents_in == SEGMENTS_IN_ORDER and use_bits and self.unit_weights
                    and self.block_of != NULL and n_lean > 0 and n_blocks > 1
                    and level.grid.unit_s > 0.0 and n_slots == 2
                    and self._is_pair_head(level, 0)):
                if self.forced_blocks:
                    n_block = min(n_lean, self.root_blocked)
                else:
                    n_block = _child_blocked_features(
                        self.root_blocked, self.n_features, n_lean,
                        min(<intp_t>n_threads, self.n_features), n_blocks,
                        _sum_chunks_for(self.n_samples))
                blocks = n_block > 0
            if not blocks:
                for s in range(n_slots):
                    n_pairs += self._is_pair_head(level, s)
                pairs = ((n_pairs >= 2 or (self.forced_blocks and n_pairs >= 1))
                         and n_pairs <= MAX_PAIRS)
        if blocks:
            # The last n_block lean features (the highest indexes): f_cut on.
            f_cut = self.n_features
            r = n_block
            while r > 0:
                f_cut -= 1
                r -= self._lean_ordered(level, f_cut)
            for f in range(self.n_features):
                if f < f_cut or not self._lean_ordered(level, f):
                    self.task_feature[t] = <int32_t>f
                    self.task_part[t] = -1
                    t += 1
            for f in range(f_cut, self.n_features):
                if self._lean_ordered(level, f):
                    for b in range(n_blocks):
                        self.task_feature[t] = <int32_t>f
                        self.task_part[t] = <int32_t>b
                        t += 1
            n_blocked[0] = n_block
            return t
        for f in range(self.n_features):
            if not (pairs and self._lean_ordered(level, f)):
                self.task_feature[t] = <int32_t>f
                self.task_part[t] = -1
                t += 1
        if not pairs:
            return t
        # The pairs, most rows first, then lowest slot.
        n_pairs = 0
        for s in range(n_slots):
            if self._is_pair_head(level, s):
                heads[n_pairs] = <int32_t>s
                head_rows[n_pairs] = self._pair_rows(level, s)
                n_pairs += 1
        _largest_first(heads, head_rows, n_pairs)
        for i in range(n_pairs):
            for f in range(self.n_features):
                if self._lean_ordered(level, f):
                    self.task_feature[t] = <int32_t>f
                    self.task_part[t] = heads[i]
                    t += 1
        return t

    cdef void _sum_blocks(self, intp_t n_blocked, int n_threads) noexcept nogil:
        """The w * r before each block of the blocked features (the last
        ``n_blocked * n_blocks`` tasks). With the block bytes, a pass over the
        rows in row chunks (``_block_pass``); without (``_force_blocks`` beyond
        MAX_BLOCKS blocks), one task per block but the last, gathering its
        positions' w * r through the sorted order. Then per feature the sums
        before each block, in block order. Every sum is exact on the tree's grid:
        the same bits in any order."""
        cdef intp_t i, j, f, b, n = self.n_samples
        cdef intp_t n_blocks = self.n_blocks, block_rows = self.block_rows
        cdef intp_t first = n_blocked * n_blocks
        # The blocks' tasks come after the n_features - n_blocked whole features'
        # (_plan_tasks), n_blocks per blocked feature.
        cdef const int32_t* blocked_feature = self.task_feature + (
            self.n_features - n_blocked)
        cdef float64_t acc, t
        GBC_TRACE_REGION_BEGIN(GBC_TR_EXACT_BLOCK_SUMS, n_blocked * n)
        if self.block_of != NULL:
            self._block_pass(self.row_wr, blocked_feature, n_blocks, n_blocked,
                             self.block_offset, n_threads)
        else:
            for i in prange(first, schedule="dynamic", chunksize=1,
                            num_threads=n_threads):
                GBC_TRACE_TASK_BEGIN(GBC_TR_EXACT_BLOCK_SUMS, i)
                f = blocked_feature[i]
                b = i % n_blocks
                # The last block's sum is never read (no block after it).
                self.block_offset[f * n_blocks + b] = 0.0 if b + 1 == n_blocks else (
                    _block_sum(&self.order[f, 0], self.row_wr, b * block_rows,
                               min((b + 1) * block_rows, n)))
                GBC_TRACE_TASK_END(GBC_TR_EXACT_BLOCK_SUMS, i)
        GBC_TRACE_REGION_END(GBC_TR_EXACT_BLOCK_SUMS, n_blocked * n)
        # Each block's sum replaced by the sum of the blocks before it, in block
        # order (one loop for both sources).
        for j in range(n_blocked):
            f = blocked_feature[j * n_blocks]
            acc = 0.0
            for b in range(n_blocks):
                t = self.block_offset[f * n_blocks + b]
                self.block_offset[f * n_blocks + b] = acc
                acc = acc + t

    cdef void _block_pass(self, const float64_t* row_wr, const int32_t* features,
                          intp_t stride, intp_t n_blocked, float64_t* out,
                          int n_threads) noexcept nogil:
        """Each block's w * r, ``out[f n_blocks + b]``, for the features f =
        ``features[j stride]``, j < ``n_blocked``, from the block bytes: one task
        per chunk of rows (``_chunk_block_sums``, every feature's sums of the
        chunk), then each (feature, block)'s sums of the chunks added in chunk
        order, whatever the thread that made them."""
        cdef intp_t c, i, j, f, n = self.n_samples, n_blocks = self.n_blocks
        cdef intp_t chunk_rows = self.sum_chunk_rows, n_chunks = self.n_sum_chunks
        cdef intp_t per_chunk = n_blocked * n_blocks
        cdef float64_t* total = self.chunk_sums
        for c in prange(n_chunks, schedule="dynamic", chunksize=1,
                        num_threads=n_threads):
            GBC_TRACE_TASK_BEGIN(GBC_TR_EXACT_BLOCK_SUMS, c)
            _chunk_block_sums(self.block_of, n, row_wr, features, stride, n_blocked,
                              n_blocks, c * chunk_rows, min((c + 1) * chunk_rows, n),
                              self.chunk_sums + c * per_chunk)
            GBC_TRACE_TASK_END(GBC_TR_EXACT_BLOCK_SUMS, c)
        # The chunks' sums added into the first chunk's, chunk after chunk.
        for c in range(1, n_chunks):
            for i in range(per_chunk):
                total[i] = total[i] + self.chunk_sums[c * per_chunk + i]
        for j in range(n_blocked):
            f = features[j * stride]
            memcpy(out + f * n_blocks, total + j * n_blocks, n_blocks * sizeof(float64_t))

    cdef void _sum_child_blocks(self, const level_t* level, intp_t n_blocked,
                                int n_threads) noexcept nogil:
        """For the root's children's blocked features (the last ``n_blocked *
        n_blocks`` tasks, blocked at the root too: their sums before each block in
        ``block_offset``): each (block, child)'s rows and w * r before it
        (``_child_block_pass``: a pass over the rows in row chunks, reading the
        block bytes and the first-child bits, and the root's sums; the smaller
        child's rows visited). Every sum is exact on the tree's grid: the same bits
        in any order."""
        cdef const int32_t* blocked_feature = self.task_feature + (
            self.n_features - n_blocked)
        cdef const level_node_t* nodes = level.nodes
        cdef intp_t first = 1 if nodes[1].start < nodes[0].start else 0
        cdef bint count_second = (nodes[1 - first].stop - nodes[1 - first].start
                                  < nodes[first].stop - nodes[first].start)
        GBC_TRACE_REGION_BEGIN(GBC_TR_EXACT_CHILD_COUNTS, n_blocked * self.n_samples)
        self._child_block_pass(self.row_wr, self.first_bits, count_second,
                               blocked_feature, self.n_blocks, n_blocked,
                               self.block_offset, self.child_pos, self.child_sums,
                               n_threads)
        GBC_TRACE_REGION_END(GBC_TR_EXACT_CHILD_COUNTS, n_blocked * self.n_samples)

    cdef void _child_block_pass(self, const float64_t* row_wr,
                                const uint64_t_t* first_bits, bint count_second,
                                const int32_t* features, intp_t stride,
                                intp_t n_blocked, const float64_t* root_before,
                                int64_t* pos, float64_t* sums,
                                int n_threads) noexcept nogil:
        """For the features f = ``features[j stride]``, j < ``n_blocked``: each
        child's rows and w * r before each block (``_child_block_prefixes``, at
        ``pos + f 2 (n_blocks + 1)`` and ``sums + f 2 n_blocks``), from the root's
        sums before each block (``root_before + f n_blocks``) and the counted
        child's rows and w * r in each block: one task per chunk of rows
        (``_chunk_child_counts``), then each (feature, block)'s counts and sums of
        the chunks added in chunk order, whatever the thread that made them."""
        cdef intp_t c, i, j, b, f, n = self.n_samples, n_blocks = self.n_blocks
        cdef intp_t chunk_rows = self.sum_chunk_rows, n_chunks = self.n_sum_chunks
        cdef intp_t per_chunk = n_blocked * n_blocks, side = 1 if count_second else 0
        cdef int64_t* total_n = self.chunk_counts
        cdef float64_t* total_s = self.chunk_sums
        cdef int64_t* pos_f
        cdef float64_t* sums_f
        for c in prange(n_chunks, schedule="dynamic", chunksize=1,
                        num_threads=n_threads):
            GBC_TRACE_TASK_BEGIN(GBC_TR_EXACT_CHILD_COUNTS, c)
            _chunk_child_counts(self.block_of, n, row_wr, first_bits, count_second,
                                features, stride, n_blocked, n_blocks, c * chunk_rows,
                                min((c + 1) * chunk_rows, n),
                                self.chunk_counts + c * per_chunk,
                                self.chunk_sums + c * per_chunk)
            GBC_TRACE_TASK_END(GBC_TR_EXACT_CHILD_COUNTS, c)
        # The chunks' counts and sums added into the first chunk's, chunk after chunk.
        for c in range(1, n_chunks):
            for i in range(per_chunk):
                total_n[i] += self.chunk_counts[c * per_chunk + i]
                total_s[i] = total_s[i] + self.chunk_sums[c * per_chunk + i]
        for j in range(n_blocked):
            f = features[j * stride]
            pos_f = pos + f * 2 * (n_blocks + 1)
            sums_f = sums + f * 2 * n_blocks
            for b in range(n_blocks):
                pos_f[2 * b + side] = total_n[j * n_blocks + b]
                sums_f[2 * b + side] = total_s[j * n_blocks + b]
            _child_block_prefixes(pos_f, sums_f, root_before + f * n_blocks,
                                  self.block_rows, n, count_second, n_blocks)

    cdef inline void _child_block_task(self, scan_t* states, candidate_t* tb,
                                       const level_t* level, intp_t f, intp_t b,
                                       int tid) noexcept nogil:
        """Block ``b`` of the root's sorted order of feature ``f`` on the root's
        children (slots 0 and 1): its rows split stably into the two children's
        segments at the counts of their rows before the block (so each child's
        segment is, block after block, what ``_split_pair`` writes), then each
        child's part scanned from the exact sum of the child's rows before it
        (``_scan_child_part``), the child's previous row before the block found
        in the root's sorted order: the last row whose bit names the child in the
        last block before this one that holds the child's rows (from the counts;
        there is one where the child has rows before the block), read back from
        that block's end, so never more than one block's positions. The part's
        candidates rank by their positions in the child's segment
        (``_start_node``, ``_wins_at``), as the whole scan's. A split whose count
        of first-child rows is not the counts' (``thread_errors``) writes nothing
        and scans nothing, and ``reduce`` refuses the level."""
        cdef intp_t n = self.n_samples, n_blocks = self.n_blocks
        cdef intp_t lo = b * self.block_rows, m, n_a, c, node, j, k, first = 0, second = 1
        cdef const level_node_t* nodes = level.nodes
        cdef const int32_t* order_f = &self.order[f, 0]
        cdef const float32_t* column_f = &self.X[0, f]
        cdef const int64_t* pos = self.child_pos + f * 2 * (n_blocks + 1) + 2 * b
        cdef const float64_t* sums = self.child_sums + f * 2 * n_blocks + 2 * b
        cdef int32_t* rows_f = self.segment_rows + f * n
        cdef int32_t* scratch = self.segment_scratch + tid * n
        cdef int32_t* seg
        cdef int32_t prev
        m = min(lo + self.block_rows, n) - lo
        if nodes[1].start < nodes[0].start:
            first, second = 1, 0
        n_a = _split_block_bits(order_f + lo, m, self.first_bits, scratch)
        if (n_a != pos[2] - pos[0] or pos[2] > nodes[first].stop - nodes[first].start
                or pos[3] > nodes[second].stop - nodes[second].start):
            self.thread_errors[tid] += 1
            return
        memcpy(rows_f + nodes[first].start + pos[0], scratch, n_a * sizeof(int32_t))
        _copy_reversed(rows_f + nodes[second].start + pos[1], scratch + m - 1, m - n_a)
        for c in range(2):
            node = first if c == 0 else second
            self._start_node(states, tb, level, f, node, pos[c])
            if states[node].total_n > 0 and pos[c + 2] > pos[c]:
                prev = -1
                if pos[c] > 0:
                    # The last block before b with rows of the child, then its
                    # last such row.
                    k = b - 1
                    while pos[c - 2 * (b - k) + 2] == pos[c - 2 * (b - k)]:
                        k -= 1
                    j = (k + 1) * self.block_rows - 1
                    while _first_bit(self.first_bits, order_f[j]) != (c == 0):
                        j -= 1
                    prev = order_f[j]
                seg = rows_f + nodes[node].start
                if n >= FAR_PREFETCH_ROWS:
                    _scan_child_part(&states[node], seg, column_f, self.row_wr,
                                     level.min_samples_leaf, FAR_PREFETCH_DISTANCE,
                                     pos[c], pos[c + 2], sums[c], prev)
                else:
                    _scan_child_part(&states[node], seg, column_f, self.row_wr,
                                     level.min_samples_leaf, PREFETCH_DISTANCE,
                                     pos[c], pos[c + 2], sums[c], prev)
            self._end_node(states, tb, level, f, node)

    def _child_block_sums(self, const float64_t[::1] row_wr, const uint8_t[::1] first,
                          int n_threads=1):
        """Test hook: ``_child_block_pass`` for every feature on ``n_threads``
        threads, the rows' w * r ``row_wr`` and their children ``first`` (1: the
        first child, 0: the second), from the root's sums before each block
        (``_block_pass``, then their prefixes in block order, as ``_sum_blocks``),
        the smaller child's rows visited (the second's where it has fewer rows).
        Returns (rows before each block and child, shape (n_features, n_blocks +
        1, 2); their w * r, shape (n_features, n_blocks, 2))."""
        cdef intp_t f, i, b, n = self.n_samples, n_blocks = self.n_blocks
        cdef float64_t acc, t
        if self.block_of == NULL:
            raise ValueError("this finder holds no block bytes")
        if row_wr.shape[0] != n or first.shape[0] != n:
            raise ValueError(f"row_wr and first must have {n} rows")
        bits = np.zeros((n + 63) // 64, dtype=np.uint64)
        cdef uint64_t_t[::1] bits_view = bits
        for i in range(n):
            if first[i]:
                bits_view[i >> 6] |= (<uint64_t_t>1) << (i & 63)
        pos = np.empty((self.n_features, n_blocks + 1, 2), dtype=np.int64)
        sums = np.empty((self.n_features, n_blocks, 2), dtype=np.float64)
        cdef int64_t[:, :, ::1] pos_view = pos
        cdef float64_t[:, :, ::1] sums_view = sums
        root = self._block_sums_from_bytes(row_wr, n_threads)
        cdef float64_t[:, ::1] root_view = root
        cdef int32_t[::1] features = np.arange(self.n_features, dtype=np.int32)
        cdef bint count_second = 2 * int(np.count_nonzero(first)) > n
        if n > 0:
            with nogil:
                for f in range(self.n_features):
                    acc = 0.0
                    for b in range(n_blocks):
                        t = root_view[f, b]
                        root_view[f, b] = acc
                        acc = acc + t
                self._child_block_pass(&row_wr[0], &bits_view[0], count_second,
                                       &features[0], 1, self.n_features,
                                       &root_view[0, 0], &pos_view[0, 0, 0],
                                       &sums_view[0, 0, 0], max(1, n_threads))
        return pos, sums

    def _block_bytes(self):
        """Test hook: a copy of the block bytes, shape (n_features, n_samples), or
        None where the finder holds none."""
        if self.block_of == NULL:
            return None
        return np.asarray(<uint8_t[:self.n_features * self.n_samples]>self.block_of
                          ).reshape(self.n_features, self.n_samples).copy()

    def _block_sums_from_bytes(self, const float64_t[::1] row_wr, int n_threads=1):
        """Test hook: each feature's per-block sums of ``row_wr`` from the block
        bytes (``_block_pass``, the pass of ``_sum_blocks``, on ``n_threads``
        threads), shape (n_features, n_blocks)."""
        if self.block_of == NULL:
            raise ValueError("this finder holds no block bytes")
        if row_wr.shape[0] != self.n_samples:
            raise ValueError(f"row_wr must have {self.n_samples} rows, got "
                             f"{row_wr.shape[0]}")
        out = np.empty((self.n_features, self.n_blocks), dtype=np.float64)
        cdef float64_t[:, ::1] view = out
        cdef int32_t[::1] features = np.arange(self.n_features, dtype=np.int32)
        if self.n_samples > 0:
            with nogil:
                self._block_pass(&row_wr[0], &features[0], 1, self.n_features,
                                 &view[0, 0], max(1, n_threads))
        return out

    cdef inline void _start_node(self, scan_t* states, const candidate_t* tb,
                                 const level_t* level, intp_t f, intp_t s,
                                 intp_t lo) noexcept nogil:
        """The scan state of node ``s`` for feature ``f`` (from sorted position
        ``lo``: a block of the root's feature), on a thread whose bests so far are
        ``tb``."""
        cdef const level_node_t* nodes = level.nodes
        cdef const uint8_t* allowed = level.allowed
        cdef int64_t min_samples_leaf = level.min_samples_leaf
        states[s].monotonic = 0 if level.monotonic == NULL else level.monotonic[f]
        states[s].best.categorical = 0
        _side_zero(&states[s].acc)
        _side_zero(&states[s].miss)
        # Only a split that beats this thread's best so far under the total
        # order can change the result: starting from that best keeps the
        # result and skips most exact evaluations. A split that ties it wins
        # only on a lower feature, or on the same feature at a lower position (a
        # block before the best's), and then only the first such split.
        states[s].best.proxy = tb[s].proxy
        states[s].best.left = tb[s].left
        states[s].ties_win = tb[s].feature >= 0 and (
            f < tb[s].feature or (f == tb[s].feature and lo < tb[s].pos))
        states[s].found = 0
        states[s].grid = &level.grid
        states[s].last_value = 0
        states[s].last_pos = -1
        states[s].total_w = nodes[s].total.w
        states[s].total_s = nodes[s].total.s
        if nodes[s].splittable and (
                allowed == NULL or allowed[s * self.n_features + f]):
            states[s].total_n = nodes[s].total.n
        else:
            states[s].total_n = 0
        states[s].n_span = <uint64_t_t>max(
            states[s].total_n - 2 * min_samples_leaf + 1, 0)
        # The cheap test may start from the best that any thread has found
        # for the node (a split that exists): a feature whose best is below
        # it cannot win, and one whose best is at or above it is found at the
        # same position as from its own bound, so the result does not depend
        # on who published what when. The exact test stays against this
        # thread's own best (the tie rule: the lowest feature wins).
        states[s].best_bound = max(
            tb[s].proxy, gbc_load_shared(&self.shared_best[s])) * BOUND_FACTOR

    cdef inline bint _scan_lean(self, scan_t* states, const level_t* level, intp_t f,
                                int tid, bint segment_level, bint is_root,
                                int parents_in, bint use_bits) noexcept nogil:
        """Scan feature ``f`` by the lean scan that fits the level (segments, the
        root's every row, unit weights, or the fast scan), if one applies
        (``_lean_applies``). Returns whether it scanned (else ``_scan_general``
        must)."""
        cdef intp_t s, n = self.n_samples, m, n_slots = level.n_nodes
        cdef const int32_t* order_f = &self.order[f, 0]
        cdef const float32_t* column_f = &self.X[0, f]
        cdef int64_t min_samples_leaf = level.min_samples_leaf
        cdef int32_t* rows_f
        if not self._lean_applies(level, f):
            return False
        if segment_level and not (is_root and self.all_rows_in_root):
            rows_f = self.segment_rows + f * n
            if is_root:
                m = _keep_in_bag(order_f, rows_f, n, self.row_node)
                _scan_node(states, rows_f, column_f, m, self.unit_weights,
                           self.row_wr, self.rows, min_samples_leaf, n)
            else:
                self._split_segments(level, order_f, rows_f, tid, parents_in, use_bits)
                for s in range(n_slots):
                    if states[s].total_n > 0:
                        _scan_node(&states[s], rows_f + level.nodes[s].start, column_f,
                                   level.nodes[s].stop - level.nodes[s].start,
                                   self.unit_weights, self.row_wr, self.rows,
                                   min_samples_leaf, n)
        elif n_slots == 1 and self.all_rows_in_root:
            _scan_node(states, order_f, column_f, n, self.unit_weights,
                       self.row_wr, self.rows, min_samples_leaf, n)
        elif self.unit_weights and n_slots < NO_NODE:
            _scan_level_unit(states, self.node_scan + tid * self.capacity,
                             n_slots, order_f, column_f, n, self.row_wr,
                             self.row_node, min_samples_leaf)
        else:
            _scan_fast(states, order_f, column_f, n, self.rows, min_samples_leaf)
        return True

    cdef inline void _scan_pair(self, scan_t* states, const level_t* level, intp_t f,
                                int tid, int parents_in, bint use_bits,
                                intp_t s) noexcept nogil:
        """The lean scan of feature ``f`` (a level with segments, below the root)
        for the pair of siblings whose first slot is ``s``: the pair's segment
        split, then each of its two nodes scanned, as ``_scan_lean`` does for
        every pair."""
        cdef intp_t n = self.n_samples, node, i
        cdef const float32_t* column_f = &self.X[0, f]
        cdef int32_t* rows_f = self.segment_rows + f * n
        self._split_pair(level, &self.order[f, 0], rows_f, tid, parents_in, use_bits, s)
        for i in range(2):
            node = s if i == 0 else level.nodes[s].sibling
            if states[node].total_n > 0:
                _scan_node(&states[node], rows_f + level.nodes[node].start, column_f,
                           level.nodes[node].stop - level.nodes[node].start,
                           self.unit_weights, self.row_wr, self.rows,
                           level.min_samples_leaf, n)

    cdef inline void _split_segments(self, const level_t* level, const int32_t* order_f,
                                     int32_t* rows_f, int tid, int parents_in,
                                     bint use_bits) noexcept nogil:
        """Split the segment of every pair of siblings of the level (below the root)
        for one feature (``_split_pair``)."""
        cdef intp_t s
        for s in range(level.n_nodes):
            if self._is_pair_head(level, s):
                self._split_pair(level, order_f, rows_f, tid, parents_in, use_bits, s)

    cdef inline void _split_pair(self, const level_t* level, const int32_t* order_f,
                                 int32_t* rows_f, int tid, int parents_in,
                                 bint use_bits, intp_t s) noexcept nogil:
        """Split the segment of the pair of siblings whose first slot is ``s`` for one
        feature: the rows of its parent's segment (or, for the root's children, the
        feature's sorted order) to the first child's range (the one that starts
        first), then the second's, each in sorted order."""
        cdef intp_t sib, first, second, m, n = self.n_samples
        cdef const level_node_t* nodes = level.nodes
        cdef const int32_t* src
        sib = nodes[s].sibling
        first = s
        second = sib
        if nodes[sib].start < nodes[s].start:
            first = sib
            second = s
        if parents_in == SEGMENTS_IN_ORDER:
            src = order_f   # the root's children: every row
            m = n
        else:
            src = rows_f + nodes[first].start
            m = nodes[second].stop - nodes[first].start
        if use_bits:
            _split_segment_bits(
                src, rows_f + nodes[first].start, m,
                nodes[first].stop - nodes[first].start,
                self.first_bits, self.segment_scratch + tid * n)
        else:
            _split_segment(
                src, rows_f + nodes[first].start, m,
                nodes[first].stop - nodes[first].start,
                self.row_node, <uint8_t>first, <uint8_t>second,
                self.segment_scratch + tid * n)

    cdef inline void _scan_general(self, scan_t* states, const level_t* level,
                                   intp_t f) noexcept nogil:
        """The general scan of feature ``f``: any weights, missing values, weight
        bounds and criterion; every node's rows in one pass of the sorted order."""
        cdef intp_t k, row, n_valid = self.n_nonmissing[f]
        cdef const int32_t* order_f = &self.order[f, 0]
        cdef const float32_t* column_f = &self.X[0, f]
        cdef const uint8_t* allowed = level.allowed
        cdef const level_node_t* nodes = level.nodes
        cdef const row_stat_t* row_stats = self.row_stats
        cdef const int32_t* row_slot = self.row_slot
        cdef int64_t min_samples_leaf = level.min_samples_leaf
        cdef float64_t min_weight_leaf = level.min_weight_leaf
        cdef uint8_t criterion = level.criterion
        cdef int32_t slot
        cdef scan_t* st
        cdef float32_t v
        # Missing values (sorted last) first: their totals are needed to send them
        # to either side of every candidate threshold.
        for k in range(n_valid, self.n_samples):
            row = order_f[k]
            slot = row_slot[row]
            if slot >= 0:
                _side_add_row(&states[slot].miss, row_stats, self.row_wr, row)
        for k in range(n_valid):
            if k + PREFETCH_DISTANCE < n_valid:
                row = order_f[k + PREFETCH_DISTANCE]
                GBC_PREFETCH(&row_slot[row])
                GBC_PREFETCH(&column_f[row])
                if row_stats == NULL:
                    GBC_PREFETCH(&self.row_wr[row])
                else:
                    GBC_PREFETCH(&row_stats[row])
            row = order_f[k]
            slot = row_slot[row]
            if slot < 0:
                continue
            st = &states[slot]
            v = column_f[row]
            if st.acc.n > 0 and v > st.last_value + FEATURE_THRESHOLD:
                if nodes[slot].splittable and (
                        allowed == NULL or allowed[slot * self.n_features + f]):
                    _consider(st, &nodes[slot].total, st.last_value, v,
                              min_samples_leaf, min_weight_leaf, criterion)
            _side_add_row(&st.acc, row_stats, self.row_wr, row)
            st.last_value = v

    cdef inline void _scan_categorical(self, scan_t* states, const level_t* level,
                                       intp_t f) noexcept nogil:
        """The categorical scan of feature ``f`` (its values category codes,
        _categorical.pxd): each splittable node's sums per category from its rows
        (in partition order), then ``categorical_scan``. Leaves the scan states'
        ``acc`` and ``miss`` empty (``_end_node`` adds no split)."""
        cdef side_t groups[MAX_CATEGORIES]
        cdef side_t miss
        cdef intp_t s, i, row, code, n_codes
        cdef const float32_t* column_f = &self.X[0, f]
        cdef const int32_t* partition = level.partition
        cdef const level_node_t* nd
        cdef scan_t* st
        cdef float32_t v
        for s in range(level.n_nodes):
            st = &states[s]
            nd = &level.nodes[s]
            if st.total_n == 0:
                continue
            memset(groups, 0, sizeof(groups))
            _side_zero(&miss)
            n_codes = 0
            for i in range(nd.start, nd.stop):
                row = partition[i]
                v = column_f[row]
                if v != v:
                    _side_add_row(&miss, self.row_stats, self.row_wr, row)
                    continue
                # A code is a whole number in [0, MAX_CATEGORIES) (checked by the
                # caller); anything else would be clamped, never read out of bounds.
                code = <intp_t>v if v >= 0 else 0
                if code >= MAX_CATEGORIES:
                    code = MAX_CATEGORIES - 1
                _side_add_row(&groups[code], self.row_stats, self.row_wr, row)
                if code >= n_codes:
                    n_codes = code + 1
            if categorical_scan(groups, n_codes, &miss, &nd.total, &st.best.proxy,
                                &st.best.left, st.ties_win, level.min_samples_leaf,
                                level.min_weight_leaf, level.criterion, st.grid,
                                level.min_samples_category, st.best.cat_bits,
                                &st.best.missing_go_left):
                st.best.categorical = 1
                st.best.all_left = 0
                st.best.pos = 0
                st.best.lo = 0
                st.best.hi = 0
                st.found = 1
                st.ties_win = 0

    cdef inline void _end_node(self, scan_t* states, candidate_t* tb,
                               const level_t* level, intp_t f, intp_t s) noexcept nogil:
        """After feature ``f``'s scan of node ``s`` (or of a block of it): the split
        sending every missing value right, and the node's split of ``f`` kept as the
        thread's best (and published as the lean scans' bound) where the scan kept
        one."""
        cdef scan_t* st = &states[s]
        cdef const level_node_t* nodes = level.nodes
        cdef const uint8_t* allowed = level.allowed
        if not nodes[s].splittable or (
                allowed != NULL and not allowed[s * self.n_features + f]):
            return
        if st.miss.n > 0 and st.acc.n > 0:
            # Every non-missing value left, every missing value right.
            if _try_split(st, &nodes[s].total, &st.acc, 0, 0, MISSING_RIGHT,
                          level.min_samples_leaf, level.min_weight_leaf,
                          level.criterion):
                st.best.all_left = 1
        # The scan kept a split only if it beats the thread's best under the total
        # order, whatever the order in which this thread was handed its tasks.
        if st.found:
            tb[s] = st.best
            tb[s].feature = <int32_t>f
            if tb[s].proxy > gbc_load_shared(&self.shared_best[s]):
                gbc_store_shared(&self.shared_best[s], tb[s].proxy)

    cdef bint _mark_first_children(self, const level_t* level, int n_threads) noexcept nogil:
        """Set ``first_bits`` for the segments of a level below the root: bit ``row``
        is 1 when the row's node is the first of a pair of siblings split this level
        (the one whose range starts first), 0 otherwise. Returns False, setting
        nothing, when the pairs split hold fewer than 1/FIRST_BITS_SHARE of the rows
        (a pass over every row would cost more than the node bytes save)."""
        cdef uint8_t is_first[256]
        cdef intp_t s, sib, first, w, b, row, n_rows = 0, n = self.n_samples
        cdef intp_t n_words = (n + 63) // 64
        cdef const level_node_t* nodes = level.nodes
        cdef const uint8_t* row_node = self.row_node
        cdef uint64_t_t word
        memset(is_first, 0, sizeof(is_first))
        for s in range(level.n_nodes):
            sib = nodes[s].sibling
            if sib < s or not (nodes[s].splittable or nodes[sib].splittable):
                continue
            first = sib if nodes[sib].start < nodes[s].start else s
            is_first[first] = 1
            n_rows += max(nodes[s].stop, nodes[sib].stop) - nodes[first].start
        if n_rows * FIRST_BITS_SHARE < n:
            return False
        GBC_TRACE_REGION_BEGIN(GBC_TR_EXACT_ROWS, n)
        for w in prange(n_words, schedule="static", num_threads=n_threads):
            word = 0
            for b in range(min(<intp_t>64, n - w * 64)):
                row = w * 64 + b
                word = word | (<uint64_t_t>is_first[row_node[row]] << b)
            self.first_bits[w] = word
        GBC_TRACE_REGION_END(GBC_TR_EXACT_ROWS, n)
        return True

    cdef void choose(self, const level_t* level, split_t* best) noexcept nogil:
        cdef intp_t s
        cdef int t
        cdef candidate_t* b
        # Deterministic reduction over threads: largest gain, then lowest feature,
        # then (blocks of one feature) lowest position.
        for t in range(1, self.level_threads):
            for s in range(level.n_nodes):
                b = &self.thread_best[t * self.capacity + s]
                if _wins_at(b, &self.thread_best[s], &level.nodes[s].total,
                            &level.grid):
                    self.thread_best[s] = b[0]
        for s in range(level.n_nodes):
            b = &self.thread_best[s]
            best[s].proxy = b.proxy
            best[s].left = b.left
            best[s].feature = b.feature
            best[s].threshold = INFINITY if b.all_left else midpoint(b.lo, b.hi)
            best[s].missing_go_left = b.missing_go_left
            best[s].bin = 0
            best[s].categorical = b.categorical if b.feature >= 0 else 0
            if best[s].categorical:
                memcpy(best[s].cat_bits, b.cat_bits, CAT_WORDS * sizeof(uint32_t))
                best[s].threshold = 0.0
