"""Histogram split search on binned features (the ``SplitFinder`` of ``split_method="hist"``).

The features are binned once per fit (``_binning.BinMapper``: uint8 bins, Fortran
order, missing values in bin ``missing_bin``). Per level, the histogram of a node
holds, for every feature and bin, the number of its rows, their weight and their
sum of w * r (``side_t``). The grower asks for the histogram of the smaller child of
each pair (``collect``: its rows' statistics gathered once into a contiguous buffer,
then one pass per group of up to four features, (node, feature group) tasks in
parallel) and of the larger one as its parent's minus its sibling's (``choose``, each
(node, feature) task deriving the histogram it scans).
Where a level has few such tasks for the threads, a node of many rows is also cut
into fixed row blocks (``node_row_blocks``: by its row count alone), each block's
histograms built into a buffer of its own and then added up in block order
(LightGBM's row-wise build with per-thread buffers, but blocks fixed by the data).
The grower puts every row's w * r and w on a grid (``_choice.pxd``), so every sum
is exact, the same in any order: the row blocks are taken only on such a grid, and
the histograms, and the trees, are the same for any number of threads.

``choose`` scans each feature's bins in increasing order with the rule of
``_choice.pxd``: between two bins that hold rows of the node, missing values right,
then left (or to the larger child in a node without missing values), and last
"every non-missing value left, missing values right" (no split between two bins
whose values are closer than the exact search's tolerance). The threshold of a split
between bins b and c (the next bin holding rows of the node) is the exact search's
midpoint between the largest training value of bin b and the smallest of bin c
(``bin_value_ranges``): where every feature has at most ``max_bins`` distinct values
(one bin per value), the thresholds are the exact search's, bit for bit; with c = b +
1 it is bin b's edge. Every in-bag row of the node is on the same side of it as its
bin, so the model is an ordinary tree whose thresholds route the training rows as
the partition on the bins did.
"""
cimport cython
from cython.parallel cimport parallel, prange
from libc.math cimport INFINITY
from libc.stdint cimport uintptr_t
from libc.stdlib cimport free
from libc.string cimport memcpy, memset

import threading

import numpy as np

from ._common cimport (
    float32_t, float64_t, int32_t, int64_t, uint8_t, uint32_t, intp_t, row_stat_t,
    FEATURE_THRESHOLD, grow_buffer,
)
from ._split_finder cimport (
    SplitFinder, side_t, grid_t, level_node_t, level_t, split_t, STATS_COLLECT, STATS_DERIVE,
    MISSING_RIGHT, MISSING_LEFT, MISSING_TO_LARGER,
)
from ._trace cimport *
from ._choice cimport consider, consider_ordered, wins
from ._categorical cimport categorical_scan, CAT_WORDS
from ._common cimport check_row_count, midpoint, omp_barrier

cdef extern from "Python.h":
    # tracemalloc's record of a block allocated outside Python's allocators.
    int PyTraceMalloc_Track(unsigned int domain, uintptr_t ptr, size_t size)
    int PyTraceMalloc_Untrack(unsigned int domain, uintptr_t ptr)

#: The fields of a histogram bin, as ``HistogramSplitFinder.reducer`` sees them.
BIN_DTYPE = np.dtype([("n", np.int64), ("w", np.float64), ("s", np.float64)])

cdef enum:
    # Below this many (row, feature) values a level's histograms are built on one
    # thread.
    MIN_PARALLEL_VALUES = 1000000
    # Below this many bins of (node, feature) histograms a level's derived
    # histograms and split scans (``choose``, about 20 ns a bin) run on one thread:
    # from 4096 bins (a node of 16 features of 256 bins) a level's loop is at least
    # about 80 us of work, several times what a hand-over to the threads costs on
    # a quiet machine (about 12 us on two threads).
    MIN_PARALLEL_BINS = 4096
    # Positions of the gathered row statistics per task.
    GATHER_CHUNK = 16384
    # From this many rows the weights of a tree are checked on every thread.
    MIN_PARALLEL_WEIGHT_ROWS = 200000
    # Row blocks (``collect``): a node of n rows is cut into min(MAX_NODE_BLOCKS,
    # n // ROW_BLOCK) blocks of consecutive positions (block k: positions n k / K to
    # n (k + 1) / K - 1), so blocks exist from 2 ROW_BLOCK rows and grow beyond
    # MAX_NODE_BLOCKS ROW_BLOCK rows. Block 0 is built in the node's histograms, the
    # others in a pool of at most MAX_BLOCK_BUFFERS buffers of n_features x
    # (missing_bin + 1) bins and MAX_BLOCK_BYTES bytes (5.5 MB for 28 features and
    # 256 bins), allocated once per finder; a node that finds no room left in the
    # pool is built without blocks.
    ROW_BLOCK = 65536
    MAX_NODE_BLOCKS = 16
    MAX_BLOCK_BUFFERS = 32
    MAX_BLOCK_BYTES = 16 << 20

#: Rows per row block (``collect``).
ROW_BLOCK_ROWS = ROW_BLOCK

# The row block size, and whether every level with room takes row blocks whatever its
# tasks and threads: ``_set_row_blocks`` (tests) changes them.
cdef intp_t _row_block = ROW_BLOCK
cdef bint _force_row_blocks = False


def _set_row_blocks(intp_t block_rows=ROW_BLOCK, bint force=False):
    """Set the row block size and whether row blocks are taken wherever the grid
    allows (tests: the row-block path on small data, on any number of threads);
    returns the previous ``(block_rows, force)``. The defaults are the fit's."""
    global _row_block, _force_row_blocks
    if block_rows < 1:
        raise ValueError(f"block_rows must be at least 1, got {block_rows}")
    previous = (_row_block, _force_row_blocks)
    _row_block = block_rows
    _force_row_blocks = force
    return previous


ctypedef struct candidate_t:
    # The best split of one node on one feature.
    float64_t proxy
    side_t left
    int32_t feature          # -1: none
    uint8_t bin              # bins <= bin go left
    uint8_t next_bin         # the first bin to the right holding rows of the node
    uint8_t missing_go_left
    uint8_t all_left         # every non-missing value left (threshold +inf)
    uint8_t categorical      # a categorical split: the bins (codes) of cat_bits left
    uint32_t cat_bits[8]


cdef enum:
    # Features whose histograms one pass over a node's rows builds together.
    GROUP = 4


cdef inline intp_t _feature_groups(intp_t n_features, int n_threads) noexcept nogil:
    """Feature groups per node without row blocks: groups of at most GROUP, as many
    as make every thread's share of a node alike (28 features on 2 threads: 8
    groups of 3 or 4; on 16 threads: 16 groups of 1 or 2)."""
    return min(n_features, n_threads * (
        (n_features + GROUP * n_threads - 1) // (GROUP * n_threads)))


cdef inline intp_t _node_blocks(intp_t n_rows) noexcept nogil:
    """The row blocks of a node of ``n_rows`` rows (1: none): fixed by its row
    count."""
    return max(1, min(<intp_t>MAX_NODE_BLOCKS, n_rows // _row_block))


cdef inline intp_t _pool_buffers(intp_t n_samples, intp_t n_features, intp_t stride,
                                 int n_threads) noexcept nogil:
    """The block buffers a finder keeps (0: it never takes row blocks): none on one
    thread, nor where a level of one node already has two (node, feature group)
    tasks per thread (``_plan_blocks``: 28 features on 2 threads); else as many as
    its rows can use (the blocks past each node's first, fewer than ``n_samples //
    _row_block``), at most MAX_BLOCK_BUFFERS and MAX_BLOCK_BYTES."""
    if not _force_row_blocks and (
            n_threads <= 1 or _feature_groups(n_features, n_threads) >= 2 * n_threads):
        return 0
    return max(0, min(min(<intp_t>MAX_BLOCK_BUFFERS, n_samples // _row_block - 1),
                      <intp_t>MAX_BLOCK_BYTES // max(1, n_features * stride
                                                     * <intp_t>sizeof(side_t))))


cdef intp_t _plan_blocks(const intp_t* node_rows, intp_t n_nodes, intp_t n_groups,
                         int n_threads, intp_t pool, bint exact,
                         intp_t* blocks) noexcept nogil:
    """The row blocks of each node of a level (``blocks[s]``: 0 for a node not
    built from its rows, ``node_rows[s] < 0``; 1 for a node built without blocks),
    given its nodes' rows, the feature groups per node without blocks and the
    threads of the level; returns the pool buffers taken.

    Row blocks are taken only where every sum is exact (``exact``: the level's sums
    on a grid), so that they change no bit, and, unless forced (tests), where the
    (node, feature group) tasks are fewer than two per thread: on one or two threads
    with many features (28 features on 2 threads: 8 groups per node) a level never
    takes them, and the 1 and 2-thread fits run as before; on 16 threads the root of
    a 28-feature fit has 16 one- or two-feature tasks, each a pass over its rows,
    and takes them. Which path a level takes depends on the threads, its sums do
    not. Nodes take blocks in slot order while the pool has room."""
    cdef intp_t s, k, n_collected = 0, used = 0
    for s in range(n_nodes):
        blocks[s] = 0 if node_rows[s] < 0 else 1
        n_collected += node_rows[s] >= 0
    if not (exact and pool > 0 and (_force_row_blocks or (
            n_threads > 1 and n_collected * n_groups < 2 * n_threads))):
        return 0
    for s in range(n_nodes):
        if node_rows[s] < 0:
            continue
        k = _node_blocks(node_rows[s])
        if k >= 2 and used + k - 1 <= pool:
            blocks[s] = k
            used += k - 1
    return used


def row_block_plan(node_rows, intp_t n_features, int n_threads, intp_t n_samples,
                   int missing_bin=255):
    """The row blocks ``HistogramSplitFinder.collect`` builds a level in, for a tree
    whose sums are on a grid (the fit's): what a traced fit on one thread does not
    show of a fit on ``n_threads``.

    Parameters
    ----------
    node_rows : sequence of int
        Per node of the level, the rows it is built from (-1: a node not built from
        its rows: derived from its parent, or not split).
    n_features : int
    n_threads : int
        The finder's threads.
    n_samples : int
        The finder's rows (its block buffers follow from them).
    missing_bin : int, default=255

    Returns
    -------
    blocks : int64 array of shape (n_nodes,)
        Per node: 0 (not built from its rows), 1 (one pass per feature group over
        its rows, ``_feature_groups`` groups) or the number of row blocks K (K x
        ceil(n_features / 4) tasks, then n_features tasks adding the blocks).
    """
    rows = np.ascontiguousarray(node_rows, dtype=np.intp)
    blocks = np.zeros(rows.shape[0], dtype=np.intp)
    cdef intp_t[::1] rows_view = rows
    cdef intp_t[::1] blocks_view = blocks
    cdef intp_t total = int(rows[rows > 0].sum())
    cdef int threads = max(1, n_threads) if total * n_features >= MIN_PARALLEL_VALUES else 1
    if rows.shape[0] > 0:
        _plan_blocks(&rows_view[0], rows.shape[0], _feature_groups(n_features, threads),
                     threads, _pool_buffers(n_samples, n_features, missing_bin + 1,
                                            max(1, n_threads)),
                     True, &blocks_view[0])
    return blocks.astype(np.int64)


cdef inline void _pass_unit(side_t** h, const uint8_t** col, intp_t g,
                            const int32_t* rows, const float64_t* wr, intp_t step,
                            intp_t n_rows) noexcept nogil:
    """Add ``n_rows`` rows of unit weight (w * r: ``wr[i * step]``; their indices
    ``rows[i]``, or i where ``rows`` is NULL) to the histograms ``h[:g]`` of the
    bin columns ``col[:g]``: counts and sums of w * r (the weights are the counts)."""
    cdef intp_t i, j, row
    cdef float64_t v
    cdef uint8_t b
    for i in range(n_rows):
        row = i if rows == NULL else rows[i]
        v = wr[i * step]
        for j in range(g):
            b = col[j][row]
            h[j][b].n += 1
            h[j][b].s += v


cdef inline void _pass_unit_sums(side_t** h, const uint8_t** col, intp_t g,
                                 const float64_t* wr, intp_t step,
                                 intp_t n_rows) noexcept nogil:
    """``_pass_unit`` over rows ``0 .. n_rows - 1`` of ``col`` (every row, in order)
    without the counts: the sums of w * r alone (the counts of every row are the
    columns' own, ``_BinCounts``)."""
    cdef intp_t i, j
    cdef float64_t v
    for i in range(n_rows):
        v = wr[i * step]
        for j in range(g):
            h[j][col[j][i]].s += v


cdef inline void _pass(side_t** h, const uint8_t** col, intp_t g, const int32_t* rows,
                       const row_stat_t* rs, intp_t n_rows) noexcept nogil:
    """``_pass_unit`` of rows of any weight: counts, sums of w and of w * r
    (``rs[i]``)."""
    cdef intp_t i, j, row
    cdef float64_t w, v
    cdef uint8_t b
    for i in range(n_rows):
        row = i if rows == NULL else rows[i]
        w = rs[i].w
        v = rs[i].wr
        for j in range(g):
            b = col[j][row]
            h[j][b].n += 1
            h[j][b].w += w
            h[j][b].s += v


cdef inline void _side_add(side_t* a, const side_t* b) noexcept nogil:
    a.n += b.n
    a.w += b.w
    a.s += b.s


cdef inline void _keep(candidate_t* c, const side_t* left, uint8_t b, uint8_t next_bin,
                       uint8_t missing_go_left) noexcept nogil:
    c.left = left[0]
    c.bin = b
    c.next_bin = next_bin
    c.missing_go_left = missing_go_left


cdef inline void _offer(candidate_t* c, const side_t* total, const side_t* acc,
                        const side_t* miss, uint8_t b, uint8_t next_bin,
                        int64_t min_samples_leaf, float64_t min_weight_leaf,
                        uint8_t criterion, const grid_t* grid) noexcept nogil:
    """The split "bins <= b left" (the next bin with rows: ``next_bin``), missing
    values right then left (or to the larger child without missing values), each
    kept if it beats the feature's best so far ``c`` (``consider`` of _choice.pxd; a
    later threshold never wins a tie)."""
    cdef side_t with_missing
    if miss.n == 0:
        if consider(&c.proxy, &c.left, False, total, acc, min_samples_leaf,
                    min_weight_leaf, criterion, grid):
            _keep(c, acc, b, next_bin, MISSING_TO_LARGER)
        return
    if consider(&c.proxy, &c.left, False, total, acc, min_samples_leaf, min_weight_leaf,
                criterion, grid):
        _keep(c, acc, b, next_bin, MISSING_RIGHT)
    with_missing.n = acc.n + miss.n
    with_missing.w = acc.w + miss.w
    with_missing.s = acc.s + miss.s
    if consider(&c.proxy, &c.left, False, total, &with_missing, min_samples_leaf,
                min_weight_leaf, criterion, grid):
        _keep(c, &with_missing, b, next_bin, MISSING_LEFT)


cdef void _offer_ordered(candidate_t* c, const side_t* total, const side_t* acc,
                         const side_t* miss, uint8_t b, uint8_t next_bin,
                         int64_t min_samples_leaf, float64_t min_weight_leaf,
                         uint8_t criterion, const grid_t* grid,
                         signed char monotonic) noexcept nogil:
    """``_offer`` on a feature with a monotonic constraint (``monotonic``, -1 or
    +1): ``consider_ordered`` of _choice.pxd, which keeps only splits whose children
    are in the constraint's order."""
    cdef side_t with_missing
    if miss.n == 0:
        if consider_ordered(&c.proxy, &c.left, False, total, acc, min_samples_leaf,
                            min_weight_leaf, criterion, grid, monotonic):
            _keep(c, acc, b, next_bin, MISSING_TO_LARGER)
        return
    if consider_ordered(&c.proxy, &c.left, False, total, acc, min_samples_leaf,
                        min_weight_leaf, criterion, grid, monotonic):
        _keep(c, acc, b, next_bin, MISSING_RIGHT)
    with_missing.n = acc.n + miss.n
    with_missing.w = acc.w + miss.w
    with_missing.s = acc.s + miss.s
    if consider_ordered(&c.proxy, &c.left, False, total, &with_missing, min_samples_leaf,
                        min_weight_leaf, criterion, grid, monotonic):
        _keep(c, &with_missing, b, next_bin, MISSING_LEFT)


cdef enum:
    # ``bin_value_ranges`` of C-order X: blocks of at least this many rows, each
    # with its own ranges (tasks fixed by the row count, not by the threads), at
    # most RANGE_MAX_BYTES of them together; within a block, chunks of
    # RANGE_CHUNK rows read feature by feature (a chunk's rows stay in cache
    # while each feature's bins are read in a run).
    RANGE_BLOCK_ROWS = 65536
    RANGE_MAX_BYTES = 1 << 24
    RANGE_CHUNK = 256


def bin_value_ranges(const float32_t[:, :] X, const uint8_t[::1, :] bins,
                     int missing_bin, int n_threads=1):
    """The smallest and the largest value of every bin of every feature.

    Parameters
    ----------
    X : float32 array of shape (n_samples, n_features), Fortran or C order
    bins : uint8 array of the same shape, Fortran order (X binned)
    missing_bin : int
    n_threads : int

    Returns
    -------
    lo, hi : float32 arrays of shape (n_features, missing_bin)
        +inf and -inf for a bin without rows. Data spread over processes: the
        element-wise minimum of the partitions' ``lo`` and maximum of their ``hi``.
        Of values that compare equal (-0.0 and 0.0) the first in row order is kept,
        whatever the layout and the number of threads.
    """
    cdef intp_t n = X.shape[0], d = X.shape[1], f, i, t, b_, c, stop
    cdef intp_t n_parts, first, last
    cdef intp_t row_stride = X.strides[0] // sizeof(float32_t)
    cdef uint8_t b
    cdef float32_t x
    cdef const float32_t* col
    cdef const uint8_t* col_bins
    cdef float32_t* part_lo_f
    cdef float32_t* part_hi_f
    if bins.shape[0] != n or bins.shape[1] != d:
        raise ValueError("X and bins must have the same shape")
    lo_arr = np.full((d, missing_bin), np.inf, dtype=np.float32)
    hi_arr = np.full((d, missing_bin), -np.inf, dtype=np.float32)
    cdef float32_t[:, ::1] lo = lo_arr
    cdef float32_t[:, ::1] hi = hi_arr
    cdef float32_t[:, :, ::1] part_lo
    cdef float32_t[:, :, ::1] part_hi
    if n == 0 or d == 0 or missing_bin <= 0:
        return lo_arr, hi_arr
    if row_stride == 1:
        # Columns: one feature per task.
        with nogil:
            GBC_TRACE_REGION_BEGIN(GBC_TR_BINNING, n * d)
            for f in prange(d, schedule="dynamic", num_threads=max(1, n_threads)):
                GBC_TRACE_TASK_BEGIN(GBC_TR_BIN_RANGES, f)
                for i in range(n):
                    b = bins[i, f]
                    if b >= missing_bin:
                        continue
                    x = X[i, f]
                    if x < lo[f, b]:
                        lo[f, b] = x
                    if x > hi[f, b]:
                        hi[f, b] = x
                GBC_TRACE_TASK_END(GBC_TR_BIN_RANGES, f)
            GBC_TRACE_REGION_END(GBC_TR_BINNING, n * d)
        return lo_arr, hi_arr
    # Rows (C order): blocks of consecutive rows, each with its own ranges, merged
    # in row order below (so the first of equal values is kept, as above: the
    # result does not depend on where the blocks are cut).
    n_parts = max(1, min(n // RANGE_BLOCK_ROWS,
                         RANGE_MAX_BYTES // (2 * d * missing_bin * sizeof(float32_t))))
    part_lo = np.full((n_parts, d, missing_bin), np.inf, dtype=np.float32)
    part_hi = np.full((n_parts, d, missing_bin), -np.inf, dtype=np.float32)
    with nogil:
        GBC_TRACE_REGION_BEGIN(GBC_TR_BINNING, n * d)
        for t in prange(n_parts, schedule="dynamic", num_threads=max(1, n_threads)):
            GBC_TRACE_TASK_BEGIN(GBC_TR_BIN_RANGES, t)
            first = n * t // n_parts
            last = n * (t + 1) // n_parts
            c = first
            while c < last:
                stop = min(c + RANGE_CHUNK, last)
                for f in range(d):
                    col = &X[0, f]
                    col_bins = &bins[0, f]
                    part_lo_f = &part_lo[t, f, 0]
                    part_hi_f = &part_hi[t, f, 0]
                    for i in range(c, stop):
                        b = col_bins[i]
                        if b >= missing_bin:
                            continue
                        x = col[i * row_stride]
                        if x < part_lo_f[b]:
                            part_lo_f[b] = x
                        if x > part_hi_f[b]:
                            part_hi_f[b] = x
                c = stop
            GBC_TRACE_TASK_END(GBC_TR_BIN_RANGES, t)
        for t in range(n_parts):
            for f in range(d):
                for b_ in range(missing_bin):
                    if part_lo[t, f, b_] < lo[f, b_]:
                        lo[f, b_] = part_lo[t, f, b_]
                    if part_hi[t, f, b_] > hi[f, b_]:
                        hi[f, b_] = part_hi[t, f, b_]
        GBC_TRACE_REGION_END(GBC_TR_BINNING, n * d)
    return lo_arr, hi_arr


def bin_value_ranges_csc(const float32_t[::1] data, const int32_t[::1] indices,
                         const int64_t[::1] indptr, const uint8_t[::1, :] bins,
                         const uint8_t[::1] zero_bin, int missing_bin, int n_threads=1):
    """``bin_value_ranges`` of sparse columns (CSC: float32 ``data``, int32 row
    ``indices`` ascending and distinct within a column, int64 ``indptr``; a row
    without an entry holds 0.0, of bin ``zero_bin[f]``), visiting the values in row
    order as the dense version does: the same ``lo`` and ``hi``, signed zeros
    included."""
    cdef intp_t n = bins.shape[0], d = bins.shape[1], f
    cdef int64_t p, start, stop, previous
    cdef uint8_t b
    cdef float32_t x
    if indptr.shape[0] != d + 1 or zero_bin.shape[0] != d:
        raise ValueError("indptr, zero_bin and bins describe different features")
    lo_arr = np.full((d, missing_bin), np.inf, dtype=np.float32)
    hi_arr = np.full((d, missing_bin), -np.inf, dtype=np.float32)
    cdef float32_t[:, ::1] lo = lo_arr
    cdef float32_t[:, ::1] hi = hi_arr
    for f in prange(d, schedule="dynamic", nogil=True, num_threads=max(1, n_threads)):
        start = indptr[f]
        stop = indptr[f + 1]
        previous = -1
        for p in range(start, stop + 1):
            if (indices[p] if p < stop else n) > previous + 1 and zero_bin[f] < missing_bin:
                # Implicit zeros before this entry (or after the last one).
                b = zero_bin[f]
                if 0 < lo[f, b]:
                    lo[f, b] = 0
                if 0 > hi[f, b]:
                    hi[f, b] = 0
            if p == stop:
                break
            previous = indices[p]
            b = bins[previous, f]
            if b >= missing_bin:
                continue
            x = data[p]
            if x < lo[f, b]:
                lo[f, b] = x
            if x > hi[f, b]:
                hi[f, b] = x
    return lo_arr, hi_arr


cdef int _check_bins(const int64_t[:, ::1] counts, const float64_t[:, ::1] values,
                     const intp_t[::1] collected, intp_t n_packed) except -1:
    """Refuse views of another shape, a width not of whole bins, a packed array
    of another size than ``collected``'s bins, or a node out of range."""
    cdef intp_t k
    if (counts.shape[0] != values.shape[0] or counts.shape[1] != values.shape[1]
            or values.shape[1] % 3 != 0):
        raise ValueError("counts and values must view the same histograms, 3 values a bin")
    if n_packed != collected.shape[0] * values.shape[1]:
        raise ValueError(f"the packed bins hold {n_packed} values, not "
                         f"{collected.shape[0] * values.shape[1]}")
    for k in range(collected.shape[0]):
        if not 0 <= collected[k] < values.shape[0]:
            raise ValueError(f"node {collected[k]} is not one of {values.shape[0]}")
    return 0


def pack_bins(const int64_t[:, ::1] counts, const float64_t[:, ::1] values,
              const intp_t[::1] collected, float64_t[::1] out):
    """The bins of the nodes ``collected``, one node after the other, as float64
    triples (n, w, s) into ``out``: what a distributed fit's histogram step sends.

    Parameters
    ----------
    counts, values : int64 and float64 arrays of shape (n_nodes, 3 * n_bins)
        The same histograms (``HistogramSplitFinder.level_statistics``, each node's
        ``BIN_DTYPE`` bins one row) viewed as int64 (a bin's n, the first of its
        three values) and as float64 (its w and s, the other two).
    collected : intp array of shape (k,)
        The nodes to pack, in order.
    out : float64 array of shape (k * 3 * n_bins,), output
        Node ``collected[i]``'s bins at ``out[i * 3 * n_bins:]``, n converted to
        float64 (exact below 2**53 rows).
    """
    cdef intp_t k, j, node, width = values.shape[1]
    cdef float64_t* at
    _check_bins(counts, values, collected, out.shape[0])
    with nogil:
        for k in range(collected.shape[0]):
            node = collected[k]
            at = &out[k * width] if width > 0 else NULL
            for j in range(0, width, 3):
                at[j] = <float64_t>counts[node, j]
                at[j + 1] = values[node, j + 1]
                at[j + 2] = values[node, j + 2]


def unpack_bins(const float64_t[::1] packed, const intp_t[::1] collected,
                int64_t[:, ::1] counts, float64_t[:, ::1] values):
    """:func:`pack_bins` undone: the float64 triples (n, w, s) of ``packed`` (the
    histogram step's sums) written back as the bins of the nodes ``collected``.

    Parameters
    ----------
    packed : float64 array of shape (k * 3 * n_bins,)
        Node ``collected[i]``'s bins at ``packed[i * 3 * n_bins:]``, as
        :func:`pack_bins` writes them.
    collected : intp array of shape (k,)
        The nodes to write back, in order.
    counts, values : int64 and float64 arrays of shape (n_nodes, 3 * n_bins), output
        The histograms viewed as in :func:`pack_bins`: each n converted back to
        int64 into ``counts``, w and s into ``values``; the other nodes untouched.
    """
    cdef intp_t k, j, node, width = values.shape[1]
    cdef const float64_t* at
    _check_bins(counts, values, collected, packed.shape[0])
    with nogil:
        for k in range(collected.shape[0]):
            node = collected[k]
            at = &packed[k * width] if width > 0 else NULL
            for j in range(0, width, 3):
                counts[node, j] = <int64_t>at[j]
                values[node, j + 1] = at[j + 1]
                values[node, j + 2] = at[j + 2]


@cython.final
cdef class _BinCounts:
    """The rows of each (feature, bin) over every row of a finder's bins: a node that
    holds every row (the root of a tree without subsampling) has these counts, so
    its histograms add only w * r (``HistogramSplitFinder._build``). Counted once,
    when a tree of unit weights first needs them (``fill``), and shared by the
    finders on the same bins (``HistogramSplitFinder.with_threads``), which only
    read them after. A count is the same whatever the threads.

    Parameters
    ----------
    bins : uint8 array of shape (n_samples, n_features), Fortran order
        The finder's bins (kept: the counts are of these).
    stride : int
        Bins per feature (``missing_bin + 1``).
    """
    cdef const uint8_t[::1, :] bins
    cdef intp_t stride
    cdef int64_t* counts     # n_features x stride, feature after feature
    cdef readonly bint ready
    cdef object lock

    def __cinit__(self, const uint8_t[::1, :] bins, intp_t stride):
        self.bins = bins
        self.stride = stride
        self.counts = <int64_t*>grow_buffer(NULL, bins.shape[1] * stride, sizeof(int64_t),
                                            "bin counts")
        self.ready = False
        self.lock = threading.Lock()

    def __dealloc__(self):
        free(self.counts)

    cdef bint counts_of(self, const uint8_t[::1, :] bins, intp_t stride):
        """Whether these are the counts of ``bins`` (the same memory and shape) with
        ``stride`` bins per feature."""
        return (bins.shape[0] == self.bins.shape[0] and bins.shape[1] == self.bins.shape[1]
                and stride == self.stride and (bins.shape[0] * bins.shape[1] == 0
                                               or &bins[0, 0] == &self.bins[0, 0]))

    cdef int fill(self, int n_threads) except -1:
        """Count the rows of every (feature, bin) of the bins unless done: one task per
        feature. The lock makes the finders that share the counts (trees grown side
        by side, from threads of their own) count them once."""
        cdef const uint8_t[::1, :] bins = self.bins
        cdef intp_t f, i, n = bins.shape[0], d = bins.shape[1], stride = self.stride
        cdef int64_t* c
        if self.ready:
            return 0
        with self.lock:
            if self.ready:
                return 0
            with nogil:
                memset(self.counts, 0, d * stride * sizeof(int64_t))
                GBC_TRACE_REGION_BEGIN(GBC_TR_BINNING, n * d)
                for f in prange(d, schedule="static", num_threads=n_threads):
                    GBC_TRACE_TASK_BEGIN(GBC_TR_BIN_COUNTS, f)
                    c = self.counts + f * stride
                    for i in range(n):
                        c[bins[i, f]] += 1
                    GBC_TRACE_TASK_END(GBC_TR_BIN_COUNTS, f)
                GBC_TRACE_REGION_END(GBC_TR_BINNING, n * d)
            self.ready = True
        return 0


@cython.final
cdef class _GatherBuffer:
    """The buffer a finder gathers its collected nodes' row statistics into: 16
    bytes per row (``row_stat_t``; w * r alone, with unit weights, in its first
    half), allocated once, shared by finders that never collect at the same time
    (``HistogramSplitFinder.with_threads(shares_rows=True)``). malloc's memory (its
    pages resident only once written: with unit weights at most half the rows'
    8 bytes), recorded for tracemalloc as NumPy's arrays are."""
    cdef row_stat_t* data
    cdef readonly intp_t n_rows

    def __cinit__(self, intp_t n_rows):
        self.data = <row_stat_t*>grow_buffer(NULL, n_rows, sizeof(row_stat_t),
                                             "row statistics")
        self.n_rows = n_rows
        PyTraceMalloc_Track(0, <uintptr_t>self.data, max(n_rows, 1) * sizeof(row_stat_t))

    def __dealloc__(self):
        if self.data != NULL:
            PyTraceMalloc_Untrack(0, <uintptr_t>self.data)
            free(self.data)


@cython.final
cdef class HistogramSplitFinder(SplitFinder):
    """Histogram split search: the candidate thresholds are the bin edges.

    Parameters
    ----------
    bins : uint8 array of shape (n_samples, n_features), Fortran order
        The binned features (``BinMapper.transform``).
    n_bins_non_missing : int32 array of shape (n_features,)
        Bins of non-missing values of each feature (at most ``missing_bin``).
    bin_lo, bin_hi : float32 arrays of shape (n_features, missing_bin)
        The smallest and the largest training value of each bin
        (``bin_value_ranges``): a split is placed between them.
    missing_bin : int
        The bin of missing values (``max_bins``), at most 255.
    n_threads : int
    gathered : object or None, default=None
        Where ``collect`` gathers the rows' statistics: the buffer of another finder
        of as many rows, which never collects at the same time as this one
        (``with_threads(shares_rows=True)``), or None for one of its own.
    counts : object or None, default=None
        The counts of every row's bins, shared with the finders on the same bins
        (``with_threads``), or None for counts of its own.

    Attributes
    ----------
    row_block_nodes : int
        The nodes built in row blocks since the finder was made (``collect``).
    row_block_buffers : int
        The row blocks' buffers of the finder's trees (``n_features x (missing_bin +
        1)`` bins of 24 bytes each; allocated when a tree starts, kept).
    stored_bytes : int
        Most bytes of histograms kept for best-first growth, read when a grower is
        built (default 1 GiB): the histograms of the nodes waiting to be split,
        from which their larger child is derived. A node that finds no room has
        both its children built from their rows.
    reducer : callable or None
        The distributed hook (None in one process): called once per level with the
        GIL, after the histograms of the level's STATS_COLLECT nodes are built and
        before the others are derived, with ``(histograms, collected)``:
        ``histograms`` an array of ``BIN_DTYPE`` of shape (n_nodes, n_features,
        missing_bin + 1) viewing this finder's buffer, ``collected`` the slots of the
        nodes built from rows. It must leave in ``histograms[collected]`` their sums
        over every process, added in a fixed (worker) order.
    """
    cdef:
        const uint8_t[::1, :] bins
        const int32_t[::1] n_bins
        const float32_t[:, ::1] bin_lo
        const float32_t[:, ::1] bin_hi
        int stride               # bins per feature in a histogram (missing_bin + 1)
        int missing
        intp_t capacity          # nodes per level the buffers hold
        side_t* hist             # the level's histograms
        side_t* parent_hist      # the previous level's (the parents)
        const side_t* parents    # the parents choose derives from: parent_hist, or a
                                 # stored node (best-first growth, ``recall``)
        side_t* stored           # the histograms of nodes kept between levels
        intp_t n_stored
        public intp_t stored_bytes
        candidate_t* cand        # per node and feature
        row_stat_t* ordered      # row statistics of the collected nodes, gathered
        float64_t* ordered_wr    # w * r alone, gathered (unit weights): the same
                                 # memory as ``ordered`` (a tree uses one of them)
        _GatherBuffer gather_buf # the buffer that holds them (16 bytes per row;
                                 # shared by ``with_threads(shares_rows=True)``)
        intp_t* gathered_at      # where each collected node's rows are gathered
        side_t* block_hist       # the row blocks' histograms (past each node's first)
        readonly intp_t row_block_buffers  # buffers of n_features x stride bins in
                                           # block_hist
        intp_t pool_capacity     # ... allocated
        intp_t* node_blocks      # per slot: row blocks (0: not collected, 1: none)
        intp_t* block_at         # per slot: its first buffer in block_hist
        intp_t* task_at          # per slot (and one more): its first build task
        intp_t* blocked          # the slots built in row blocks
        readonly intp_t row_block_nodes
        bint unit_weights        # every weight of the tree is 1: w of a bin is n
        _BinCounts shared_counts  # the counts of every row (shared by with_threads)
        const int64_t* root_counts  # ... where this tree's nodes of every row take
                                    # them (unit weights, every row in the bag), or NULL
        const row_stat_t* row_stats
        const float64_t* unit_wr # unit weights: w * r of row i is unit_wr[i * wr_step]
        intp_t wr_step
        object _row_stats_ref
        public object reducer

    def __cinit__(self):
        self.hist = NULL
        self.parent_hist = NULL
        self.parents = NULL
        self.stored = NULL
        self.n_stored = 0
        self.stored_bytes = 1 << 30
        self.cand = NULL
        self.ordered = NULL
        self.ordered_wr = NULL
        self.gathered_at = NULL
        self.block_hist = NULL
        self.row_block_buffers = 0
        self.pool_capacity = 0
        self.node_blocks = NULL
        self.block_at = NULL
        self.task_at = NULL
        self.blocked = NULL
        self.capacity = 0
        self.row_block_nodes = 0
        self.root_counts = NULL

    def __init__(self, const uint8_t[::1, :] bins, const int32_t[::1] n_bins_non_missing,
                 const float32_t[:, ::1] bin_lo, const float32_t[:, ::1] bin_hi,
                 int missing_bin, int n_threads=1, gathered=None, counts=None):
        cdef intp_t f
        check_row_count(bins.shape[0])
        if not 1 <= missing_bin <= 255:
            raise ValueError(f"missing_bin must be in [1, 255], got {missing_bin}")
        if (n_bins_non_missing.shape[0] != bins.shape[1]
                or bin_lo.shape[0] != bins.shape[1] or bin_lo.shape[1] != missing_bin
                or bin_hi.shape[0] != bins.shape[1] or bin_hi.shape[1] != missing_bin):
            raise ValueError("bins, n_bins_non_missing and the bin ranges disagree on "
                             "the number of features or bins")
        for f in range(bins.shape[1]):
            if not 1 <= n_bins_non_missing[f] <= missing_bin:
                raise ValueError(f"feature {f}: {n_bins_non_missing[f]} bins, expected "
                                 f"1 to {missing_bin}")
        self.bins = bins
        self.n_bins = n_bins_non_missing
        self.bin_lo = bin_lo
        self.bin_hi = bin_hi
        self.missing = missing_bin
        self.stride = missing_bin + 1
        self.n_samples = bins.shape[0]
        self.n_features = bins.shape[1]
        self.n_threads = max(1, n_threads)
        self.subtracts = True
        self.side_tasks = True
        self.reducer = None
        self.row_block_buffers = _pool_buffers(self.n_samples, self.n_features,
                                               self.stride, self.n_threads)
        if gathered is None:
            gathered = _GatherBuffer(self.n_samples)
        elif (not isinstance(gathered, _GatherBuffer)
              or (<_GatherBuffer>gathered).n_rows != self.n_samples):
            raise ValueError(f"gathered must be the gather buffer of a finder of "
                             f"{self.n_samples} rows")
        # ``ordered`` (w * r and w) and ``ordered_wr`` (w * r alone, unit weights)
        # over the same memory: a tree uses one or the other.
        self.gather_buf = gathered
        self.ordered = self.gather_buf.data
        self.ordered_wr = <float64_t*>self.gather_buf.data
        if counts is None:
            counts = _BinCounts(bins, self.stride)
        elif (not isinstance(counts, _BinCounts)
              or not (<_BinCounts>counts).counts_of(bins, self.stride)):
            raise ValueError("counts must be the bin counts of a finder on the same bins "
                             "and bins per feature")
        self.shared_counts = counts

    def with_threads(self, int n_threads, bint shares_rows=False):
        """A finder on the same bins (shared, not copied) with buffers of its own
        and ``n_threads`` threads: trees grown at the same time each need one.

        Parameters
        ----------
        n_threads : int
        shares_rows : bool, default=False
            Gather the rows' statistics (``collect``; 16 bytes per row) into this
            finder's buffer instead of one of its own: for a finder that never
            collects while this one does (the side-by-side grower whose trees
            alternate with those of the fit's grower of every thread).

        Returns
        -------
        HistogramSplitFinder
        """
        return HistogramSplitFinder(self.bins, self.n_bins, self.bin_lo, self.bin_hi,
                                    self.missing, n_threads,
                                    self.gather_buf if shares_rows else None,
                                    self.shared_counts)

    def bin_counts(self):
        """The counts of every row's bins that the nodes of every row take
        (``_BinCounts``), shared with the finders of ``with_threads``; None until a
        tree of unit weights with every row in the bag has counted them.

        Returns
        -------
        int64 array of shape (n_features, missing_bin + 1) or None
            A copy.
        """
        if not self.shared_counts.ready:
            return None
        if self.n_features == 0:
            return np.zeros((0, self.stride), dtype=np.int64)
        return np.asarray(<int64_t[:self.n_features * self.stride]>self.shared_counts.counts
                          ).reshape(self.n_features, self.stride).copy()

    def gather_buffer(self):
        """The memory the finder gathers the collected nodes' row statistics into
        (``with_threads(shares_rows=True)`` shares it), as a float64 array of 2
        values per row. It views the finder's memory: valid while the finder lives.

        Returns
        -------
        float64 array of shape (2 * n_samples,)
        """
        cdef float64_t* data = <float64_t*>self.gather_buf.data
        return np.asarray(<float64_t[:2 * max(self.n_samples, 1)]>data)

    def __dealloc__(self):
        free(self.hist)
        free(self.parent_hist)
        free(self.stored)
        free(self.cand)
        free(self.gathered_at)
        free(self.block_hist)
        free(self.node_blocks)
        free(self.block_at)
        free(self.task_at)
        free(self.blocked)

    cdef object partition_bins(self):
        return self.bins

    cdef int missing_bin(self):
        return self.missing

    cdef int start_tree(self, const row_stat_t[::1] row_stats,
                        const float64_t[::1] residual,
                        const uint8_t[::1] in_bag) except -1:
        cdef intp_t i, n_other = 0
        cdef int n_threads = (self.n_threads if self.n_samples >= MIN_PARALLEL_WEIGHT_ROWS
                              else 1)
        if ((row_stats is None and residual is None)
                or (row_stats is not None and row_stats.shape[0] != self.n_samples)
                or (residual is not None and residual.shape[0] != self.n_samples)):
            raise ValueError(f"row_stats or residual must have {self.n_samples} rows")
        # The row blocks' buffers: grown once (their number follows from the rows,
        # the features and the threads), kept across trees.
        self.row_block_buffers = _pool_buffers(self.n_samples, self.n_features, self.stride,
                                  self.n_threads)
        if self.row_block_buffers > self.pool_capacity:
            self.block_hist = <side_t*>grow_buffer(
                self.block_hist, self.row_block_buffers * self.n_features * self.stride,
                sizeof(side_t), "histograms")
            self.pool_capacity = self.row_block_buffers
        self.root_counts = NULL
        if row_stats is None:
            # Unit weights: w * r is the residual itself.
            self._row_stats_ref = residual
            self.row_stats = NULL
            self.unit_wr = &residual[0] if self.n_samples > 0 else NULL
            self.wr_step = 1
            self.unit_weights = True
            self._take_counts(in_bag, n_threads)
            return 0
        self._row_stats_ref = row_stats
        self.row_stats = &row_stats[0] if self.n_samples > 0 else NULL
        self.unit_wr = &row_stats[0].wr if self.n_samples > 0 else NULL
        self.wr_step = sizeof(row_stat_t) // sizeof(float64_t)
        # The rows whose weight is not 1, counted on every thread (a count: the
        # same whatever the threads).
        with nogil:
            GBC_TRACE_REGION_BEGIN(GBC_TR_HIST_OTHER, self.n_samples)
            for i in prange(self.n_samples, schedule="static", num_threads=n_threads):
                if row_stats[i].w != 1.0:
                    n_other += 1
            GBC_TRACE_REGION_END(GBC_TR_HIST_OTHER, self.n_samples)
        self.unit_weights = n_other == 0
        if self.unit_weights:
            self._take_counts(in_bag, n_threads)
        return 0

    cdef int _take_counts(self, const uint8_t[::1] in_bag, int n_threads) except -1:
        """A tree of unit weights with every row in the bag: its nodes of every row
        (the root) take their counts from ``shared_counts`` (counted by the first such
        tree) instead of counting them."""
        if in_bag is not None or self.n_samples == 0:
            return 0
        self.shared_counts.fill(n_threads)
        self.root_counts = self.shared_counts.counts
        return 0

    cdef int start_level(self, intp_t n_nodes) except -1:
        cdef side_t* tmp = self.parent_hist
        cdef intp_t per_node = self.n_features * self.stride
        # This level's histograms become the parents' of the next one.
        self.parent_hist = self.hist
        self.hist = tmp
        if n_nodes > self.capacity:
            self.hist = <side_t*>grow_buffer(self.hist, n_nodes * per_node, sizeof(side_t),
                                             "histograms")
            self.parent_hist = <side_t*>grow_buffer(self.parent_hist, n_nodes * per_node,
                                                    sizeof(side_t), "histograms")
            self.cand = <candidate_t*>grow_buffer(self.cand, n_nodes * self.n_features,
                                                  sizeof(candidate_t), "split buffers")
            self.gathered_at = <intp_t*>grow_buffer(self.gathered_at, n_nodes,
                                                    sizeof(intp_t), "split buffers")
            self.node_blocks = <intp_t*>grow_buffer(self.node_blocks, n_nodes,
                                                    sizeof(intp_t), "split buffers")
            self.block_at = <intp_t*>grow_buffer(self.block_at, n_nodes,
                                                 sizeof(intp_t), "split buffers")
            self.task_at = <intp_t*>grow_buffer(self.task_at, n_nodes + 1,
                                                sizeof(intp_t), "split buffers")
            self.blocked = <intp_t*>grow_buffer(self.blocked, n_nodes,
                                                sizeof(intp_t), "split buffers")
            self.capacity = n_nodes
        self.parents = self.parent_hist
        return 0

    cdef intp_t reserve_stored(self, intp_t n_stored) except -1:
        # At most ``stored_bytes`` of kept histograms: beyond, the children of a
        # node that found no room are both built from their rows.
        cdef intp_t per_node = self.n_features * self.stride * sizeof(side_t)
        n_stored = max(0, min(n_stored, self.stored_bytes // max(per_node, 1)))
        if n_stored > self.n_stored:
            self.stored = <side_t*>grow_buffer(
                self.stored, n_stored * self.n_features * self.stride, sizeof(side_t),
                "histograms")
            self.n_stored = n_stored
        return n_stored

    cdef void store(self, intp_t slot, intp_t index) noexcept nogil:
        cdef intp_t per_node = self.n_features * self.stride
        memcpy(self.stored + index * per_node, self.hist + slot * per_node,
               per_node * sizeof(side_t))

    cdef void recall(self, intp_t index) noexcept nogil:
        self.parents = self.stored + index * self.n_features * self.stride

    cdef int _threads_for(self, intp_t n_values) noexcept nogil:
        return self.n_threads if n_values >= MIN_PARALLEL_VALUES else 1

    cdef void _build(self, const level_node_t* nd, intp_t slot, intp_t f0, intp_t g,
                     const int32_t* partition, intp_t lo, intp_t hi,
                     side_t* dest) noexcept nogil:
        """The histograms of features ``f0 .. f0 + g - 1`` (g <= GROUP) of positions
        ``lo .. hi - 1`` of the rows of the node ``nd`` (slot ``slot``: all of them,
        or one row block), in one pass: each row's statistics (and its index) are
        read once for the g features. They are written to ``dest`` (the node's
        n_features histograms, or a row block's buffer). Every bin still adds its
        rows in partition order, so the sums do not depend on ``g``.

        A node of every row with ``root_counts`` (unit weights, every row in the
        bag) adds only w * r: its counts, and weights, are the columns' own, taken
        here (a row block's, left 0, are taken by ``_merge_blocks``)."""
        cdef side_t* h[GROUP]
        cdef const uint8_t* col[GROUP]
        cdef intp_t i, j, n_rows = hi - lo, first = 0
        cdef const int32_t* rows = partition + nd.start + lo
        cdef const float64_t* wr
        cdef const row_stat_t* rs
        cdef intp_t step = self.wr_step
        if nd.stop - nd.start == self.n_samples:
            # Every row: the partition is the identity, read in place (from row lo).
            rows = NULL
            first = lo
        for j in range(g):
            h[j] = dest + (f0 + j) * self.stride
            # (No rows, as a process of a distributed fit may have: no element 0.)
            col[j] = &self.bins[first, f0 + j] if n_rows > 0 else NULL
            memset(h[j], 0, self.stride * sizeof(side_t))
        if self.unit_weights:
            if rows == NULL:
                wr = self.unit_wr + first * step
            else:
                wr = self.ordered_wr + self.gathered_at[slot] + lo
                step = 1
            if rows == NULL and self.root_counts != NULL:
                if g == 4:
                    _pass_unit_sums(h, col, 4, wr, step, n_rows)
                elif g == 3:
                    _pass_unit_sums(h, col, 3, wr, step, n_rows)
                else:
                    for j in range(g):
                        _pass_unit_sums(&h[j], &col[j], 1, wr, step, n_rows)
                if lo == 0 and hi == nd.stop - nd.start:   # the whole node, no block
                    for j in range(g):
                        self._take_node_counts(h[j], f0 + j)
                return
            # (Constant group sizes: the compiler unrolls the pass over the features.)
            if g == 4:
                _pass_unit(h, col, 4, rows, wr, step, n_rows)
            elif g == 3:
                _pass_unit(h, col, 3, rows, wr, step, n_rows)
            else:
                for j in range(g):
                    _pass_unit(&h[j], &col[j], 1, rows, wr, step, n_rows)
            # The weight of a bin is its count (a sum of ones, exact in float64).
            for j in range(g):
                for i in range(self.stride):
                    h[j][i].w = <float64_t>h[j][i].n
            return
        rs = (self.row_stats + first if rows == NULL
              else self.ordered + self.gathered_at[slot] + lo)
        if g == 4:
            _pass(h, col, 4, rows, rs, n_rows)
        elif g == 3:
            _pass(h, col, 3, rows, rs, n_rows)
        else:
            for j in range(g):
                _pass(&h[j], &col[j], 1, rows, rs, n_rows)

    cdef inline bint _gathered(self, const level_node_t* nd) noexcept nogil:
        """Whether ``collect`` gathers the statistics of the rows of ``nd``."""
        return nd.plan == STATS_COLLECT and nd.stop - nd.start < self.n_samples

    cdef void _gather(self, const level_t* level, intp_t lo, intp_t hi) noexcept nogil:
        """Gather positions ``lo .. hi - 1`` of the collected nodes' rows (the nodes'
        rows one after the other, as ``gathered_at`` places them): the statistics of
        each row, in partition order."""
        cdef intp_t s = 0, p = lo, i, end
        cdef const level_node_t* nd
        while p < hi:
            nd = &level.nodes[s]
            if not self._gathered(nd) or self.gathered_at[s] + nd.stop - nd.start <= p:
                s += 1
                continue
            end = min(hi, self.gathered_at[s] + nd.stop - nd.start)
            # Rows nd.start + (p - gathered_at[s]) onwards of the partition.
            i = nd.start + p - self.gathered_at[s]
            if self.unit_weights:
                while p < end:
                    self.ordered_wr[p] = self.unit_wr[level.partition[i] * self.wr_step]
                    p += 1
                    i += 1
            else:
                while p < end:
                    self.ordered[p] = self.row_stats[level.partition[i]]
                    p += 1
                    i += 1
            s += 1

    cdef void collect(self, const level_t* level) noexcept nogil:
        cdef intp_t s, t, u, f, c, k, g, n_groups, n_tasks, n_chunks, n_merge, n_rows = 0
        cdef intp_t d = self.n_features, per_node = self.n_features * self.stride
        cdef intp_t n_blocked = 0, g4 = (self.n_features + GROUP - 1) // GROUP
        cdef intp_t lo, hi, b, span, side = 1 if level.side_task != NULL else 0
        cdef const level_node_t* nd
        cdef side_t* dest
        cdef int n_threads, phase
        for s in range(level.n_nodes):
            if level.nodes[s].plan == STATS_COLLECT:
                n_rows += level.nodes[s].stop - level.nodes[s].start
        n_threads = self._threads_for(n_rows * self.n_features)
        # The collected nodes' rows, one after the other in the gather buffers (at
        # most the level's in-bag rows; below the root, the smaller child of each
        # pair: at most half of them, so only those pages of the buffers are used).
        n_rows = 0
        for s in range(level.n_nodes):
            self.gathered_at[s] = n_rows
            if self._gathered(&level.nodes[s]):
                n_rows += level.nodes[s].stop - level.nodes[s].start
        n_chunks = (n_rows + GATHER_CHUNK - 1) // GATHER_CHUNK
        # Tasks of one node's features in groups of at most GROUP (one pass over the
        # rows per group), as many groups as make every thread's share of a node
        # alike. A feature's sums are the same whatever its group.
        n_groups = _feature_groups(self.n_features, n_threads)
        # Where the level has few such tasks for the threads, its nodes of many rows
        # in row blocks (``_plan_blocks``): K blocks x ceil(d / GROUP) full groups,
        # each block's histograms in a buffer of its own (block 0 in the node's),
        # then one task per (node, feature) adding blocks 1 .. K - 1 to block 0 in
        # block order. The sums are on the grid, exact: the same bits as without
        # blocks, whatever the threads.
        for s in range(level.n_nodes):
            nd = &level.nodes[s]
            self.block_at[s] = nd.stop - nd.start if nd.plan == STATS_COLLECT else -1
        _plan_blocks(self.block_at, level.n_nodes, n_groups, n_threads, self.row_block_buffers,
                     level.grid.unit_s > 0.0 and (self.unit_weights or level.grid.unit_w > 0.0),
                     self.node_blocks)
        n_tasks = 0
        k = 0
        for s in range(level.n_nodes):
            self.task_at[s] = n_tasks
            self.block_at[s] = k
            if self.node_blocks[s] > 1:
                self.blocked[n_blocked] = s
                n_blocked += 1
                k += self.node_blocks[s] - 1
                n_tasks += self.node_blocks[s] * g4
            elif self.node_blocks[s] == 1:
                n_tasks += n_groups
        self.task_at[level.n_nodes] = n_tasks
        n_merge = n_blocked * d
        self.row_block_nodes += n_blocked
        # One parallel region per level (each costs a hand-over between threads: on
        # a machine busy with other work, a wait for the scheduler).
        GBC_TRACE_REGION_BEGIN(GBC_TR_HIST_BUILD, 0)
        with parallel(num_threads=n_threads):
            # The rows' statistics in partition order, in chunks of positions.
            for c in prange(n_chunks, schedule="dynamic"):
                GBC_TRACE_TASK_BEGIN(GBC_TR_HIST_GATHER, c)
                self._gather(level, c * GATHER_CHUNK, min(n_rows, (c + 1) * GATHER_CHUNK))
                GBC_TRACE_TASK_END(GBC_TR_HIST_GATHER, c)
            omp_barrier()  # every row gathered before any histogram reads them
            # (Task 0 with a side task: the grower's, handed out first.)
            for t in prange(n_tasks + side, schedule="dynamic"):
                if t < side:
                    GBC_TRACE_TASK_BEGIN(GBC_TR_ROOT_WR2, t)
                    level.side_task(level.side_context)
                    GBC_TRACE_TASK_END(GBC_TR_ROOT_WR2, t)
                else:
                    u = t - side
                    s = self._task_node(u, level.n_nodes)
                    nd = &level.nodes[s]
                    k = u - self.task_at[s]
                    span = nd.stop - nd.start
                    if self.node_blocks[s] > 1:
                        # Row block k // g4 (its rows' positions lo .. hi - 1), feature
                        # group k % g4 (the threads at one time share a block's rows).
                        phase = GBC_TR_HIST_BLOCK
                        GBC_TRACE_TASK_BEGIN(phase, u)
                        b = k // g4
                        lo = span * b // self.node_blocks[s]
                        hi = span * (b + 1) // self.node_blocks[s]
                        f = (k % g4) * d // g4
                        g = (k % g4 + 1) * d // g4 - f
                        dest = (self.hist + s * per_node if b == 0
                                else self.block_hist + (self.block_at[s] + b - 1) * per_node)
                    else:
                        phase = GBC_TR_HIST_BUILD
                        GBC_TRACE_TASK_BEGIN(phase, u)
                        lo = 0
                        hi = span
                        # The d mod n_groups groups of one feature more first, so that
                        # the dynamic schedule hands the longest tasks out first (28
                        # features on 2 threads: 4 groups of 4, then 4 of 3; in turns
                        # of 3 and 4, one thread ended a node's build a 4-feature
                        # task's time after the other). A feature's sums are the same
                        # whatever its group.
                        f = k * (d // n_groups) + min(k, d % n_groups)
                        g = d // n_groups + (k < d % n_groups)
                        dest = self.hist + s * per_node
                    self._build(nd, s, f, g, level.partition, lo, hi, dest)
                    GBC_TRACE_TASK_END(phase, u)
            if n_merge > 0:
                omp_barrier()  # every block built before any is added
                for t in prange(n_merge, schedule="static"):
                    GBC_TRACE_TASK_BEGIN(GBC_TR_HIST_MERGE, t)
                    s = self.blocked[t // d]
                    self._merge_blocks(s, t % d, self.root_counts == NULL or (
                        level.nodes[s].stop - level.nodes[s].start < self.n_samples))
                    GBC_TRACE_TASK_END(GBC_TR_HIST_MERGE, t)
        GBC_TRACE_REGION_END(GBC_TR_HIST_BUILD, self.n_features * (
            n_rows if n_rows else level.nodes[0].stop - level.nodes[0].start))

    cdef inline intp_t _task_node(self, intp_t t, intp_t n_nodes) noexcept nogil:
        """The slot whose build tasks include task ``t``: the last s with
        ``task_at[s] <= t`` (nodes without tasks have ``task_at[s] == task_at[s +
        1]``)."""
        cdef intp_t lo = 0, hi = n_nodes, mid
        # Invariant: task_at[lo] <= t < task_at[hi].
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.task_at[mid] <= t:
                lo = mid
            else:
                hi = mid
        return lo

    cdef inline void _take_node_counts(self, side_t* h, intp_t f) noexcept nogil:
        """Feature ``f``'s histogram ``h`` of a node of every row: its counts and
        weights from ``root_counts`` (the counts a pass over its rows would add up;
        weights 1: the weight of a bin is its count)."""
        cdef intp_t b
        cdef const int64_t* c = self.root_counts + f * self.stride
        for b in range(self.stride):
            h[b].n = c[b]
            h[b].w = <float64_t>c[b]

    cdef void _merge_blocks(self, intp_t s, intp_t f, bint counted) noexcept nogil:
        """Feature ``f`` of the row blocks 1 .. K - 1 of node ``s`` added to block 0's
        (the node's histogram), in block order; where the blocks were built without
        counts (``counted`` False: a node of every row, ``_build``), only their sums
        are added, the counts and weights then taken from ``root_counts``."""
        cdef side_t* h = self.hist + (s * self.n_features + f) * self.stride
        cdef const side_t* x
        cdef intp_t k, b
        for k in range(1, self.node_blocks[s]):
            x = self.block_hist + ((self.block_at[s] + k - 1) * self.n_features
                                   + f) * self.stride
            if counted:
                for b in range(self.stride):
                    h[b].n += x[b].n
                    h[b].w += x[b].w
                    h[b].s += x[b].s
            else:
                for b in range(self.stride):
                    h[b].s += x[b].s
        if not counted:
            self._take_node_counts(h, f)

    cdef inline void _derive(self, const level_t* level, intp_t s,
                             intp_t f) noexcept nogil:
        """Feature ``f``'s histogram of node ``s``, marked STATS_DERIVE: its
        parent's less its sibling's, bin by bin (exact: every sum is on the tree's
        grid)."""
        cdef const level_node_t* nd = &level.nodes[s]
        cdef side_t* h = self.hist + (s * self.n_features + f) * self.stride
        cdef const side_t* p = self.parents + (nd.parent * self.n_features + f) * self.stride
        cdef const side_t* sib = self.hist + (nd.sibling * self.n_features + f) * self.stride
        cdef intp_t b
        for b in range(self.stride):
            h[b].n = p[b].n - sib[b].n
            h[b].w = p[b].w - sib[b].w
            h[b].s = p[b].s - sib[b].s

    def level_statistics(self, intp_t n_nodes):
        """The histograms of the current level's first ``n_nodes`` nodes, as an
        array of BIN_DTYPE of shape (n_nodes, n_features, missing_bin + 1) that
        views this finder's buffer (valid until the next level starts)."""
        if not 0 < n_nodes <= self.capacity:
            raise ValueError(f"n_nodes must be in [1, {self.capacity}], got {n_nodes}")
        # Bytes viewed as BIN_DTYPE (side_t's layout): NumPy reads a plain byte
        # buffer at once, where a struct's buffer format is parsed on every call.
        cdef unsigned char[::1] view = <unsigned char[:n_nodes * self.n_features
                                                    * self.stride * sizeof(side_t)]> (
            <unsigned char*> self.hist)
        return np.asarray(view).view(BIN_DTYPE).reshape(n_nodes, self.n_features, self.stride)

    cdef int reduce(self, const level_t* level) except -1:
        cdef intp_t s
        if self.reducer is None:
            return 0
        collected = [s for s in range(level.n_nodes)
                     if level.nodes[s].plan == STATS_COLLECT]
        self.reducer(self.level_statistics(level.n_nodes), np.asarray(collected, dtype=np.intp))
        return 0

    cdef void _scan(self, const level_t* level, intp_t s, intp_t f,
                    candidate_t* c) noexcept nogil:
        """The best split of node ``s`` on feature ``f``, bins in increasing order.
        A categorical feature (``_scan_categorical``) and a feature with a monotonic
        constraint (``_scan_ordered``) are scanned by methods of their own, so that
        this loop, every unconstrained numeric feature's, compiles as it did before
        them."""
        cdef const side_t* h = self.hist + (s * self.n_features + f) * self.stride
        cdef const side_t* total = &level.nodes[s].total
        cdef const side_t* miss = &h[self.missing]
        cdef side_t acc
        cdef intp_t b, nb = self.n_bins[f]
        cdef int last = -1
        cdef int64_t msl = level.min_samples_leaf
        cdef float64_t mwl = level.min_weight_leaf
        cdef uint8_t criterion = level.criterion
        cdef const grid_t* grid = &level.grid
        c.proxy = -INFINITY
        c.all_left = 0
        c.categorical = 0
        if level.categorical != NULL and level.categorical[f]:
            self._scan_categorical(level, s, f, c)
            return
        if level.monotonic != NULL and level.monotonic[f] != 0:
            self._scan_ordered(level, s, f, c, level.monotonic[f])
            return
        acc.n = 0
        acc.w = 0.0
        acc.s = 0.0
        for b in range(nb):
            if h[b].n == 0:
                continue
            # As the exact search: no split between values closer than
            # FEATURE_THRESHOLD (float32 arithmetic).
            if acc.n > 0 and self.bin_lo[f, b] > self.bin_hi[f, last] + FEATURE_THRESHOLD:
                _offer(c, total, &acc, miss, <uint8_t>last, <uint8_t>b, msl, mwl,
                       criterion, grid)
            _side_add(&acc, &h[b])
            last = <int>b
        if miss.n > 0 and acc.n > 0:
            # Every non-missing value left, every missing value right.
            if consider(&c.proxy, &c.left, False, total, &acc, msl, mwl, criterion, grid):
                c.left = acc
                c.bin = <uint8_t>(nb - 1)
                c.missing_go_left = MISSING_RIGHT
                c.all_left = 1
        c.feature = <int32_t>f if c.proxy > -INFINITY else -1

    cdef void _scan_categorical(self, const level_t* level, intp_t s, intp_t f,
                                candidate_t* c) noexcept nogil:
        """``_scan`` of a categorical feature: bin b holds category code b
        (``categorical_scan`` of _categorical.pxd)."""
        cdef const side_t* h = self.hist + (s * self.n_features + f) * self.stride
        if categorical_scan(h, self.n_bins[f], &h[self.missing], &level.nodes[s].total,
                            &c.proxy, &c.left, False, level.min_samples_leaf,
                            level.min_weight_leaf, level.criterion, &level.grid,
                            level.min_samples_category, c.cat_bits,
                            &c.missing_go_left):
            c.categorical = 1
            c.bin = 0
        c.feature = <int32_t>f if c.proxy > -INFINITY else -1

    cdef void _scan_ordered(self, const level_t* level, intp_t s, intp_t f,
                            candidate_t* c, signed char monotonic) noexcept nogil:
        """``_scan`` of a feature with a monotonic constraint (``monotonic``, -1 or
        +1): the same candidates, each kept only if its children are in the
        constraint's order (``_offer_ordered``, ``consider_ordered``)."""
        cdef const side_t* h = self.hist + (s * self.n_features + f) * self.stride
        cdef const side_t* total = &level.nodes[s].total
        cdef const side_t* miss = &h[self.missing]
        cdef side_t acc
        cdef intp_t b, nb = self.n_bins[f]
        cdef int last = -1
        cdef int64_t msl = level.min_samples_leaf
        cdef float64_t mwl = level.min_weight_leaf
        cdef uint8_t criterion = level.criterion
        cdef const grid_t* grid = &level.grid
        acc.n = 0
        acc.w = 0.0
        acc.s = 0.0
        for b in range(nb):
            if h[b].n == 0:
                continue
            if acc.n > 0 and self.bin_lo[f, b] > self.bin_hi[f, last] + FEATURE_THRESHOLD:
                _offer_ordered(c, total, &acc, miss, <uint8_t>last, <uint8_t>b, msl,
                               mwl, criterion, grid, monotonic)
            _side_add(&acc, &h[b])
            last = <int>b
        if miss.n > 0 and acc.n > 0:
            # Every non-missing value left, every missing value right.
            if consider_ordered(&c.proxy, &c.left, False, total, &acc, msl, mwl, criterion,
                                grid, monotonic):
                c.left = acc
                c.bin = <uint8_t>(nb - 1)
                c.missing_go_left = MISSING_RIGHT
                c.all_left = 1
        c.feature = <int32_t>f if c.proxy > -INFINITY else -1

    cdef void choose(self, const level_t* level, split_t* best) noexcept nogil:
        """The histograms of the nodes marked STATS_DERIVE (``_derive``) and the best
        split of every splittable node, in one loop of (node, feature) tasks: a
        derived histogram is scanned by the task that wrote it, and its sibling, the
        only other histogram it reads, was collected before the loop. On the threads
        from ``MIN_PARALLEL_BINS`` bins; each task's candidate its own, the best of a
        node taken in feature order after the loop: the same splits on any threads."""
        cdef intp_t t, s, f, d = self.n_features
        cdef intp_t n_tasks = level.n_nodes * d
        cdef candidate_t* c
        cdef candidate_t* top
        cdef int n_threads = (self.n_threads if n_tasks * self.stride >= MIN_PARALLEL_BINS
                              else 1)
        GBC_TRACE_REGION_BEGIN(GBC_TR_HIST_SCAN, n_tasks * self.stride)
        # (Dynamic: a derived node's tasks take about twice a collected one's, and
        # static runs would give a thread whole nodes.)
        for t in prange(n_tasks, schedule="dynamic", num_threads=n_threads):
            GBC_TRACE_TASK_BEGIN(GBC_TR_HIST_SCAN, t)
            s = t // d
            f = t % d
            if level.nodes[s].plan == STATS_DERIVE:
                self._derive(level, s, f)
            c = &self.cand[t]
            c.feature = -1
            c.proxy = -INFINITY
            if level.nodes[s].splittable and (
                    level.allowed == NULL or level.allowed[t]):
                self._scan(level, s, f, c)
            GBC_TRACE_TASK_END(GBC_TR_HIST_SCAN, t)
        GBC_TRACE_REGION_END(GBC_TR_HIST_SCAN, n_tasks * self.stride)
        for s in range(level.n_nodes):
            top = NULL
            for f in range(d):
                c = &self.cand[s * d + f]
                if top == NULL and c.feature >= 0:
                    top = c
                elif top != NULL and wins(c.proxy, c.feature, &c.left, top.proxy,
                                          top.feature, &top.left, &level.nodes[s].total,
                                          &level.grid):
                    top = c
            best[s].feature = -1
            best[s].proxy = -INFINITY
            if top == NULL:
                continue
            best[s].feature = top.feature
            best[s].proxy = top.proxy
            best[s].left = top.left
            best[s].bin = top.bin
            best[s].missing_go_left = top.missing_go_left
            best[s].categorical = top.categorical
            if top.categorical:
                memcpy(best[s].cat_bits, top.cat_bits, CAT_WORDS * sizeof(uint32_t))
                best[s].threshold = 0.0
                continue
            best[s].threshold = (
                INFINITY if top.all_left
                else midpoint(self.bin_hi[top.feature, top.bin],
                              self.bin_lo[top.feature, top.next_bin]))
