"""The partition of a tree's in-bag rows: each node of the level being split holds
the range ``[start, stop)`` of ``rows``, its rows in increasing order (as
scikit-learn's histogram-gradient-boosting splitter keeps them). Splitting a level
moves the rows of every split node to its two children (a stable partition, block
by block, on the finder's bins when it has bins, else on raw X), tells the finder
where they went, gives the rows of the nodes not split their leaf and sums w, w * r
and w * r^2 of each child's own rows (for its test of whether it may split, and its
impurity).

Every sum is taken in row order, per chunk of 2^CHUNK_SHIFT consecutive row indices
then chunk by chunk, so it does not depend on the number of threads; the partition
is stable, so the result does not depend on how the rows are cut into blocks.
"""
cimport cython
from cython.parallel cimport parallel, prange
from libc.stdlib cimport free
from libc.string cimport memcpy, memset

from ._common cimport (
    float32_t, float64_t, int32_t, uint8_t, uint32_t, intp_t, node_t, row_stat_t, grow_buffer,
    omp_barrier,
)
from ._rows cimport (
    node_sums_t, sums_zero, sums_add_row, sums_add, bin_goes_left, value_goes_left,
    bin_in_set, code_in_set,
    float32_at_most,
)
from ._split_finder cimport SplitFinder, level_node_t, split_t
from ._choice cimport missing_left
from ._categorical cimport CAT_WORDS
from ._trace cimport *

cdef enum:
    # The sums of a child's rows are added per block of CHUNK consecutive row
    # indices, then the blocks in order.
    CHUNK_SHIFT = 13
    # Rows per task of the partition.
    BLOCK = 16384
    # Below this many rows a level is partitioned on one thread.
    MIN_PARALLEL_ROWS = 200000
    # Levels of at most this many children (a tree's first levels, every split of
    # best-first growth), and of fewer splits than threads, are finished block by
    # block (``_split_narrow``): one task per split would leave threads idle.
    NARROW_CHILDREN = 8
    # Chunks of row indices summed per task there.
    CHUNKS_PER_TASK = 2


cdef inline intp_t _first_at_least(const int32_t* rows, intp_t lo, intp_t hi,
                                   intp_t value) noexcept nogil:
    """The first position in ``rows[lo:hi]`` (increasing) holding at least ``value``
    (``hi`` if none)."""
    cdef intp_t mid
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if rows[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline void _sum_placed(const int32_t* seg, intp_t n, intp_t* chunk,
                             node_sums_t* part, node_sums_t* sums,
                             const row_stat_t* row_stats,
                             const float64_t* residual) noexcept nogil:
    """Add the rows ``seg[0 .. n - 1]`` of a child (in increasing order, after those
    already summed) to its sums: ``part`` the sums of its current chunk of
    2^CHUNK_SHIFT row indices (``chunk``), added to ``sums`` as a row of the next
    chunk comes (``RowPartition._finish_pair``)."""
    cdef intp_t i, current = chunk[0]
    cdef int32_t row
    cdef node_sums_t local = part[0]
    for i in range(n):
        row = seg[i]
        if (row >> CHUNK_SHIFT) != current:
            if current >= 0:
                sums_add(sums, &local)
                sums_zero(&local)
            current = row >> CHUNK_SHIFT
        sums_add_row(&local, row_stats, residual, row)
    chunk[0] = current
    part[0] = local


@cython.final
cdef class RowPartition:
    """The in-bag rows of the tree being grown, node by node.

    Parameters
    ----------
    finder : SplitFinder
        Told where the rows of every node went (``rows_moved``); its bins, if it
        partitions on bins, route the rows.
    X : float32 array of shape (n_samples, n_features), Fortran order, or None
        The raw values the rows are routed on when the finder has no bins.
    node_of_row : int32 array of shape (n_samples,)
        Where the leaf of every row is written.
    n_threads : int
    share : RowPartition or None, default=None
        A partition of as many rows that never works at the same time as this
        one (the grower of trees grown one after another beside those grown side
        by side): its row and scratch buffers are used instead of new ones.
    """

    def __cinit__(self):
        self.rows = NULL
        self.scratch = NULL
        self.owns_rows = True
        self.blocks = NULL
        self.block_first = NULL
        self.capacity = -1
        self.chunk_sums = NULL
        self.chunk_present = NULL
        self.n_chunks = 0

    def __init__(self, SplitFinder finder, const float32_t[::1, :] X,
                 int32_t[::1] node_of_row, int n_threads, RowPartition share=None):
        bins = finder.partition_bins()
        self.finder = finder
        self.n_samples = finder.n_samples
        self.n_threads = n_threads
        self.node_of_row = node_of_row
        self.on_bins = bins is not None
        if self.on_bins:
            self.bins = bins
            self.missing_bin = finder.missing_bin()
        else:
            self.X = X
        if share is not None:
            if share.n_samples != self.n_samples:
                raise ValueError(f"a partition of {self.n_samples} rows cannot share the "
                                 f"buffers of one of {share.n_samples}")
            while share.owner is not None:
                share = share.owner
            self.owner = share
            self.owns_rows = False
            self.rows = share.rows
            self.scratch = share.scratch
        else:
            self.rows = <int32_t*>grow_buffer(NULL, self.n_samples, sizeof(int32_t),
                                              "row partition")
            self.scratch = <int32_t*>grow_buffer(NULL, self.n_samples, sizeof(int32_t),
                                                 "row partition")
        if self.n_threads > 1 and self.n_samples >= MIN_PARALLEL_ROWS:
            self.n_chunks = (self.n_samples >> CHUNK_SHIFT) + 1
            # Room for the children of the narrow levels (``_is_narrow``).
            self.narrow_children = max(NARROW_CHILDREN, 2 * self.n_threads)
            self.chunk_sums = <node_sums_t*>grow_buffer(
                NULL, self.narrow_children * self.n_chunks, sizeof(node_sums_t),
                "partition tasks")
            self.chunk_present = <uint8_t*>grow_buffer(
                NULL, self.narrow_children * self.n_chunks, sizeof(uint8_t),
                "partition tasks")

    def __dealloc__(self):
        if self.owns_rows:
            free(self.rows)
            free(self.scratch)
        free(self.blocks)
        free(self.block_first)
        free(self.chunk_sums)
        free(self.chunk_present)

    cdef int reserve(self, intp_t n_split) except -1:
        """Room for the blocks of a level of ``n_split`` split nodes."""
        if n_split > self.capacity:
            self.blocks = <block_t*>grow_buffer(
                self.blocks, self.n_samples // BLOCK + n_split + 1, sizeof(block_t),
                "partition tasks")
            self.block_first = <intp_t*>grow_buffer(self.block_first, n_split + 1,
                                                    sizeof(intp_t), "partition tasks")
            self.capacity = n_split
        return 0

    cdef intp_t start_tree(self, const uint8_t[::1] sample_mask,
                           const row_stat_t* row_stats, const float64_t* residual,
                           node_sums_t* sums) noexcept nogil:
        """The root's rows, every in-bag row in increasing order, and their sums;
        return their number."""
        cdef intp_t i, n_inbag = 0
        sums_zero(sums)
        if sample_mask is None:
            self._every_row(sums, row_stats, residual)
            return self.n_samples
        for i in range(self.n_samples):
            if sample_mask[i]:
                self.rows[n_inbag] = <int32_t>i
                n_inbag += 1
                sums_add_row(sums, row_stats, residual, i)
        return n_inbag

    cdef void fill_rows(self, intp_t start, intp_t stop) noexcept nogil:
        """Positions ``start .. stop - 1`` of the root's rows, every row in increasing
        order: ``rows[i] = i``. A caller's parallel region fills 0 .. n - 1 this way,
        part by part, then calls ``every_row_filled`` (``start_tree`` without a
        mask, its sums taken by the caller: ``TreeGrower``'s grid pass)."""
        cdef intp_t i
        cdef int32_t* rows = self.rows
        for i in range(start, stop):
            rows[i] = <int32_t>i

    cdef intp_t every_row_filled(self) noexcept nogil:
        """The tree's root holds every row (``fill_rows`` has filled all of them):
        the state ``start_tree`` leaves without a mask; returns the number of rows."""
        return self.n_samples

    cdef void _every_row(self, node_sums_t* sums, const row_stat_t* row_stats,
                         const float64_t* residual) noexcept nogil:
        """The root of a tree given every row: the rows ``0 .. n - 1`` (in
        parallel), then ``sums`` of all rows in row order by ``sums_add_row``, on a
        local copy: no store into the partition in the loop, so the sums stay in
        registers (independent chains of additions) instead of memory."""
        cdef intp_t i, n = self.n_samples
        cdef int n_threads = self.n_threads if n >= MIN_PARALLEL_ROWS else 1
        cdef int32_t* rows = self.rows
        cdef node_sums_t local
        GBC_TRACE_REGION_BEGIN(GBC_TR_PARTITION, n)
        for i in prange(n, schedule="static", num_threads=n_threads):
            rows[i] = <int32_t>i
        GBC_TRACE_REGION_END(GBC_TR_PARTITION, n)
        sums_zero(&local)
        for i in range(n):
            sums_add_row(&local, row_stats, residual, i)
        sums[0] = local

    cdef void set_leaf(self, const level_node_t* nd) noexcept nogil:
        """Every row of ``nd`` gets its node as its leaf."""
        cdef intp_t i
        cdef int32_t node = nd.node
        cdef int32_t* node_of_row
        if nd.stop <= nd.start:
            return  # (no rows: a process of a distributed fit may have none)
        node_of_row = &self.node_of_row[0]
        for i in range(nd.start, nd.stop):
            node_of_row[self.rows[i]] = node

    cdef void split(self, const level_split_t* lv, const row_stat_t* row_stats,
                    const float64_t* residual, bint with_sums,
                    bint leaves) noexcept nogil:
        """Move the rows of every node split at this level to its children (a stable
        partition of the node's range: each child's rows stay in increasing order),
        give the rows of the nodes that were not split their leaf, sum w, w * r and
        w * r^2 per child (``with_sums``, for the next level) and make the children
        the level's nodes.

        With ``leaves`` (the children are leaves of the tree and nothing needs their
        sums) the rows are not moved and the finder is not told: each row of a split
        node gets its child, its leaf, in ``node_of_row``, and the level's nodes stay
        as they are."""
        cdef intp_t s, c, n_blocks, n_rows = 0
        cdef level_node_t* nd
        cdef int n_threads
        for s in range(lv.n_nodes):
            nd = &lv.nodes[s]
            if not nd.splittable or lv.best[s].feature < 0:
                self.set_leaf(nd)
                self.finder.rows_moved(self.rows, nd.start, nd.stop, -1)
            else:
                n_rows += nd.stop - nd.start
        if lv.n_split == 0:
            return
        n_blocks = self._cut_blocks(lv)
        n_threads = self.n_threads if n_rows >= MIN_PARALLEL_ROWS else 1
        if leaves:
            GBC_TRACE_REGION_BEGIN(GBC_TR_PARTITION, n_rows)
            for c in prange(n_blocks, schedule="dynamic", num_threads=n_threads):
                GBC_TRACE_TASK_BEGIN(GBC_TR_PART_LABEL, c)
                self._label_block(lv, &self.blocks[c])
                GBC_TRACE_TASK_END(GBC_TR_PART_LABEL, c)
            GBC_TRACE_REGION_END(GBC_TR_PARTITION, n_rows)
            return
        if (n_threads > 1 and self.chunk_sums != NULL
                and (2 * lv.n_split <= NARROW_CHILDREN or lv.n_split < n_threads)):
            # (A level of fewer splits than threads too: one task per split would
            # leave threads idle. Either way the same numbers.)
            self._split_narrow(lv, n_blocks, row_stats, residual, with_sums, n_threads)
        else:
            self._split_wide(lv, n_blocks, row_stats, residual, with_sums, n_threads)
        # The children become the nodes of the next level.
        for s in range(2 * lv.n_split):
            lv.nodes[s] = lv.children[s]

    cdef intp_t _cut_blocks(self, const level_split_t* lv) noexcept nogil:
        """Cut the split nodes' ranges into blocks of BLOCK rows; return how many."""
        cdef intp_t j, start, stop, n_blocks = 0
        cdef const level_node_t* nd
        cdef block_t* blk
        for j in range(lv.n_split):
            nd = &lv.nodes[lv.children[2 * j].parent]
            start = nd.start
            self.block_first[j] = n_blocks
            while True:
                stop = min(start + BLOCK, nd.stop)
                blk = &self.blocks[n_blocks]
                blk.start = start
                blk.stop = stop
                blk.slot = lv.children[2 * j].parent
                blk.pair = j
                n_blocks += 1
                start = stop
                if start >= nd.stop:
                    break
        self.block_first[lv.n_split] = n_blocks
        return n_blocks

    cdef void _split_wide(self, const level_split_t* lv, intp_t n_blocks,
                          const row_stat_t* row_stats, const float64_t* residual,
                          bint with_sums, int n_threads) noexcept nogil:
        """``split``'s moves for a level of many children: the blocks split, then one
        task per split (its children's rows copied back block by block, and summed
        while they are in cache: ``_finish_pair``), then the finder told, in one
        parallel region (each costs a
        hand-over between threads: on a machine busy with other work, a wait for
        the scheduler)."""
        cdef intp_t c
        GBC_TRACE_REGION_BEGIN(GBC_TR_PARTITION, n_blocks * BLOCK)
        with parallel(num_threads=n_threads):
            for c in prange(n_blocks, schedule="dynamic"):
                GBC_TRACE_TASK_BEGIN(GBC_TR_PART_BLOCK, c)
                self._split_block(lv, &self.blocks[c])
                GBC_TRACE_TASK_END(GBC_TR_PART_BLOCK, c)
            omp_barrier()  # every block split before the children's ranges
            for c in prange(lv.n_split, schedule="dynamic"):
                GBC_TRACE_TASK_BEGIN(GBC_TR_PART_CHILD, c)
                self._child_range(lv, 2 * c, &lv.children[2 * c])
                self._child_range(lv, 2 * c + 1, &lv.children[2 * c + 1])
                self._finish_pair(lv, c, row_stats, residual, with_sums)
                GBC_TRACE_TASK_END(GBC_TR_PART_CHILD, c)
            omp_barrier()  # every row in place before the finder reads them
            for c in prange(n_blocks, schedule="dynamic"):
                GBC_TRACE_TASK_BEGIN(GBC_TR_PART_TELL, c)
                self._tell_finder(&self.blocks[c])
                GBC_TRACE_TASK_END(GBC_TR_PART_TELL, c)
        GBC_TRACE_REGION_END(GBC_TR_PARTITION, n_blocks * BLOCK)

    cdef void _split_narrow(self, const level_split_t* lv, intp_t n_blocks,
                            const row_stat_t* row_stats, const float64_t* residual,
                            bint with_sums, int n_threads) noexcept nogil:
        """``split``'s moves for a level of at most NARROW_CHILDREN children, where
        one task per split (as ``_finish_pair``) would leave threads idle: each
        block's left and right rows are placed as tasks of their own, then the
        children's rows are summed in tasks of CHUNKS_PER_TASK chunks of row
        indices, each chunk's sums kept apart and added in chunk order per child:
        the numbers of ``_finish_pair``, bit for bit."""
        cdef intp_t j, b, c, k, t, left_pos, right_pos, n_split = lv.n_split
        cdef intp_t n_chunks = self.n_chunks
        cdef intp_t n_tasks = (n_chunks + CHUNKS_PER_TASK - 1) // CHUNKS_PER_TASK
        cdef block_t* blk
        GBC_TRACE_REGION_BEGIN(GBC_TR_PARTITION, n_blocks * BLOCK)
        with parallel(num_threads=n_threads):
            for b in prange(n_blocks, schedule="dynamic"):
                GBC_TRACE_TASK_BEGIN(GBC_TR_PART_BLOCK, b)
                self._split_block(lv, &self.blocks[b])
                GBC_TRACE_TASK_END(GBC_TR_PART_BLOCK, b)
        GBC_TRACE_REGION_END(GBC_TR_PARTITION, n_blocks * BLOCK)
        for c in range(2 * n_split):
            self._child_range(lv, c, &lv.children[c])
        for j in range(n_split):
            left_pos = lv.children[2 * j].start
            right_pos = lv.children[2 * j + 1].start
            for b in range(self.block_first[j], self.block_first[j + 1]):
                blk = &self.blocks[b]
                blk.left_pos = left_pos
                blk.right_pos = right_pos
                left_pos += blk.n_left
                right_pos += blk.stop - blk.start - blk.n_left
        if with_sums:
            memset(self.chunk_present, 0, 2 * n_split * n_chunks * sizeof(uint8_t))
        GBC_TRACE_REGION_BEGIN(GBC_TR_PARTITION, n_blocks * BLOCK)
        with parallel(num_threads=n_threads):
            for t in prange(2 * n_blocks, schedule="dynamic"):
                GBC_TRACE_TASK_BEGIN(GBC_TR_PART_PLACE, t)
                self._place_rows(&self.blocks[t // 2], t % 2)
                GBC_TRACE_TASK_END(GBC_TR_PART_PLACE, t)
            omp_barrier()  # every row in place before the finder and the sums read them
            for b in prange(n_blocks, schedule="dynamic"):
                GBC_TRACE_TASK_BEGIN(GBC_TR_PART_TELL, b)
                self._tell_finder(&self.blocks[b])
                GBC_TRACE_TASK_END(GBC_TR_PART_TELL, b)
            if with_sums:
                for t in prange(2 * n_split * n_tasks, schedule="dynamic"):
                    GBC_TRACE_TASK_BEGIN(GBC_TR_PART_SUMS, t)
                    self._sum_chunks(&lv.children[t // n_tasks], t // n_tasks,
                                     t % n_tasks, row_stats, residual)
                    GBC_TRACE_TASK_END(GBC_TR_PART_SUMS, t)
        GBC_TRACE_REGION_END(GBC_TR_PARTITION, n_blocks * BLOCK)
        for c in range(2 * n_split):
            sums_zero(&lv.sums[c])
            if not with_sums:
                continue
            for k in range(n_chunks):
                if self.chunk_present[c * n_chunks + k]:
                    sums_add(&lv.sums[c], &self.chunk_sums[c * n_chunks + k])

    cdef void _split_block(self, const level_split_t* lv, block_t* blk) noexcept nogil:
        """Stable split of one block of a node's rows into its range of the scratch
        buffer: the left rows in order from the block's start, the right rows in
        reverse order from the block's end (``_place_rows`` reads them back in
        order). Each row is written to both ends and only its side's count advances
        (no branch on the side): the two write positions meet only at the last row,
        so no row is overwritten."""
        cdef intp_t i, n_left = 0, n_right = 0
        cdef int32_t row
        cdef const level_node_t* parent = &lv.nodes[blk.slot]
        cdef const node_t* nd = &lv.tree[parent.node]
        cdef uint8_t bin = lv.node_bin[parent.node]
        cdef bint miss = nd.missing_go_left != 0
        cdef int32_t* part = self.rows
        cdef int32_t* left = self.scratch + blk.start
        cdef int32_t* right = self.scratch + blk.stop - 1     # written downwards
        cdef const uint8_t* col_b
        cdef const float32_t* col_x
        cdef float32_t t32 = nd.threshold32
        cdef int missing_bin = self.missing_bin
        cdef bint go_left
        cdef const uint32_t* bits = NULL
        if lv.categorical != NULL and lv.categorical[nd.feature]:
            bits = lv.cat_bits + CAT_WORDS * <intp_t>nd.threshold
        if blk.stop <= blk.start:
            # An empty block (a process of a distributed fit without rows): its
            # columns have no element 0 to point at.
            col_b = NULL
            col_x = NULL
        elif self.on_bins:
            col_b = &self.bins[0, nd.feature]
        else:
            col_x = &self.X[0, nd.feature]
        if bits != NULL:
            # A categorical split (rarer: its own loop, the numeric ones unchanged).
            for i in range(blk.start, blk.stop):
                row = part[i]
                if self.on_bins:
                    go_left = bin_in_set(col_b[row], bits, missing_bin, miss)
                else:
                    go_left = code_in_set(col_x[row], bits, miss)
                left[n_left] = row
                right[-n_right] = row
                n_left += go_left
                n_right += not go_left
        elif self.on_bins:
            for i in range(blk.start, blk.stop):
                row = part[i]
                go_left = bin_goes_left(col_b[row], bin, missing_bin, miss)
                left[n_left] = row
                right[-n_right] = row
                n_left += go_left
                n_right += not go_left
        else:
            for i in range(blk.start, blk.stop):
                row = part[i]
                go_left = value_goes_left(col_x[row], t32, miss)
                left[n_left] = row
                right[-n_right] = row
                n_left += go_left
                n_right += not go_left
        blk.n_left = n_left

    cdef void _place_rows(self, const block_t* blk, intp_t side) noexcept nogil:
        """Copy a block's left (``side`` 0) or right (1) rows from the scratch buffer
        to their place in the partition, in order."""
        cdef intp_t i, n
        cdef int32_t* seg
        if side == 0:
            memcpy(self.rows + blk.left_pos, self.scratch + blk.start,
                   blk.n_left * sizeof(int32_t))
        else:
            n = blk.stop - blk.start - blk.n_left
            seg = self.rows + blk.right_pos
            for i in range(n):
                seg[i] = self.scratch[blk.stop - 1 - i]

    cdef void _tell_finder(self, const block_t* blk) noexcept nogil:
        """Tell the finder where a block's rows, placed in the partition, now are:
        its left rows, then its right rows. Both sides in one task: they interleave
        in one range of row indices, so the finder's per-row state of those rows is
        written by one thread (one task per side would share its cache lines between
        threads)."""
        cdef intp_t n_right = blk.stop - blk.start - blk.n_left
        self.finder.rows_moved(self.rows, blk.left_pos, blk.left_pos + blk.n_left,
                               <int32_t>(2 * blk.pair))
        self.finder.rows_moved(self.rows, blk.right_pos, blk.right_pos + n_right,
                               <int32_t>(2 * blk.pair + 1))

    cdef void _sum_chunks(self, const level_node_t* nd, intp_t c, intp_t task,
                          const row_stat_t* row_stats,
                          const float64_t* residual) noexcept nogil:
        """The sums of child ``c``'s rows (``nd``) in chunks ``task *
        CHUNKS_PER_TASK`` on (of 2^CHUNK_SHIFT row indices each), one chunk at a
        time, into ``chunk_sums``. The child's rows are in increasing order: its
        rows of these chunks are one range of its positions, found by bisection."""
        cdef intp_t first_row = (task * CHUNKS_PER_TASK) << CHUNK_SHIFT
        cdef intp_t end_row = ((task + 1) * CHUNKS_PER_TASK) << CHUNK_SHIFT
        cdef intp_t lo = _first_at_least(self.rows, nd.start, nd.stop, first_row)
        cdef intp_t hi = _first_at_least(self.rows, lo, nd.stop, end_row)
        cdef intp_t i, chunk = -1, base = c * self.n_chunks
        cdef int32_t row
        cdef node_sums_t part
        for i in range(lo, hi):
            row = self.rows[i]
            if (row >> CHUNK_SHIFT) != chunk:
                if chunk >= 0:
                    self.chunk_sums[base + chunk] = part
                    self.chunk_present[base + chunk] = 1
                sums_zero(&part)
                chunk = row >> CHUNK_SHIFT
            sums_add_row(&part, row_stats, residual, row)
        if chunk >= 0:
            self.chunk_sums[base + chunk] = part
            self.chunk_present[base + chunk] = 1

    cdef void _label_block(self, const level_split_t* lv, const block_t* blk) noexcept nogil:
        """Each row of one block of a split node gets the child it goes to as its
        leaf in ``node_of_row`` (routed as ``_split_block`` routes it)."""
        cdef intp_t i
        cdef int32_t row
        cdef const node_t* nd = &lv.tree[lv.nodes[blk.slot].node]
        cdef int32_t left_id = nd.left, right_id = nd.right
        cdef uint8_t bin = lv.node_bin[lv.nodes[blk.slot].node]
        cdef bint miss = nd.missing_go_left != 0
        cdef const int32_t* part = self.rows
        cdef int32_t* node_of_row
        cdef const uint8_t* col_b
        cdef const float32_t* col_x
        cdef float32_t t32 = nd.threshold32
        cdef int missing_bin = self.missing_bin
        cdef bint go_left
        cdef const uint32_t* bits = NULL
        if blk.stop <= blk.start:
            return  # (no rows: a process of a distributed fit may have none)
        node_of_row = &self.node_of_row[0]
        if lv.categorical != NULL and lv.categorical[nd.feature]:
            bits = lv.cat_bits + CAT_WORDS * <intp_t>nd.threshold
            for i in range(blk.start, blk.stop):
                row = part[i]
                if self.on_bins:
                    go_left = bin_in_set(self.bins[row, nd.feature], bits, missing_bin, miss)
                else:
                    go_left = code_in_set(self.X[row, nd.feature], bits, miss)
                node_of_row[row] = left_id if go_left else right_id
        elif self.on_bins:
            col_b = &self.bins[0, nd.feature]
            for i in range(blk.start, blk.stop):
                row = part[i]
                go_left = bin_goes_left(col_b[row], bin, missing_bin, miss)
                node_of_row[row] = left_id if go_left else right_id
        else:
            col_x = &self.X[0, nd.feature]
            for i in range(blk.start, blk.stop):
                row = part[i]
                go_left = value_goes_left(col_x[row], t32, miss)
                node_of_row[row] = left_id if go_left else right_id

    cdef void _child_range(self, const level_split_t* lv, intp_t c,
                           level_node_t* child) noexcept nogil:
        """The range of the partition of child ``c`` of the level: its parent's
        range, its left rows (the blocks' ``n_left``) first."""
        cdef const level_node_t* parent = &lv.nodes[child.parent]
        cdef intp_t b, left_total = 0
        for b in range(self.block_first[c // 2], self.block_first[c // 2 + 1]):
            left_total += self.blocks[b].n_left
        if c % 2 == 0:
            child.start = parent.start
            child.stop = parent.start + left_total
        else:
            child.start = parent.start + left_total
            child.stop = parent.stop

    cdef void _finish_pair(self, const level_split_t* lv, intp_t j,
                           const row_stat_t* row_stats, const float64_t* residual,
                           bint with_sums) noexcept nogil:
        """Copy the rows of split ``j``'s two children (the left and the right rows of
        their parent's blocks, in block order: increasing row order) to their ranges
        of the partition, setting each block's ``left_pos`` and ``right_pos``
        (``_tell_finder`` reads them), and sum w, w * r, w * r^2 and the residual
        range of each child's rows, added per block of 2^CHUNK_SHIFT row indices (in
        increasing order) then block by block, so the sums do not depend on the
        number of threads. Block by block, a block's left rows then its right rows
        (each child's rows summed in its own order: interleaving the two children
        changes no sum), so that the right rows' residuals are read from the cache
        the left rows' brought them into: one pass over the parent's rows' residuals
        instead of one per child."""
        cdef intp_t b, n, side, c
        cdef intp_t pos[2]
        cdef intp_t chunk[2]
        cdef node_sums_t part[2]
        cdef block_t* blk
        for side in range(2):
            c = 2 * j + side
            pos[side] = lv.children[c].start
            chunk[side] = -1
            sums_zero(&lv.sums[c])
            sums_zero(&part[side])
        for b in range(self.block_first[j], self.block_first[j + 1]):
            blk = &self.blocks[b]
            for side in range(2):
                if side == 0:
                    n = blk.n_left
                    blk.left_pos = pos[0]
                else:
                    n = blk.stop - blk.start - blk.n_left
                    blk.right_pos = pos[1]
                self._place_rows(blk, side)
                if with_sums:
                    _sum_placed(self.rows + pos[side], n, &chunk[side], &part[side],
                                &lv.sums[2 * j + side], row_stats, residual)
                pos[side] += n
        for side in range(2):
            if chunk[side] >= 0:
                sums_add(&lv.sums[2 * j + side], &part[side])

    cdef float64_t left_wr2(self, const level_node_t* nd, const split_t* b,
                            const row_stat_t* row_stats,
                            const float64_t* residual) noexcept nogil:
        """Sum of w r^2 over the rows of ``nd`` that its split ``b`` sends left
        (routed as ``_split_block`` will route them), in row order; 0 where it does
        not split."""
        cdef intp_t i
        cdef int32_t row
        cdef float64_t acc = 0.0, r
        cdef uint8_t miss
        cdef float32_t t32
        cdef bint go_left
        if not nd.splittable or b.feature < 0 or nd.stop <= nd.start:
            return 0.0
        miss = missing_left(b.missing_go_left, b.left.n, nd.total.n)
        t32 = float32_at_most(b.threshold)
        for i in range(nd.start, nd.stop):
            row = self.rows[i]
            if b.categorical:
                if self.on_bins:
                    go_left = bin_in_set(self.bins[row, b.feature], b.cat_bits,
                                         self.missing_bin, miss)
                else:
                    go_left = code_in_set(self.X[row, b.feature], b.cat_bits, miss)
            elif self.on_bins:
                go_left = bin_goes_left(self.bins[row, b.feature], b.bin,
                                        self.missing_bin, miss)
            else:
                go_left = value_goes_left(self.X[row, b.feature], t32, miss)
            if go_left:
                r = residual[row]
                # (No row statistics: every weight is 1.)
                acc += (row_stats[row].w * r * r) if row_stats != NULL else r * r
        return acc
