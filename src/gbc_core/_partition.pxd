# The partition of a tree's in-bag rows among the nodes of the level being split
# (_partition.pyx).
from ._common cimport (
    float32_t, float64_t, int32_t, uint8_t, uint32_t, intp_t, node_t, row_stat_t,
)
from ._rows cimport node_sums_t
from ._split_finder cimport SplitFinder, level_node_t, split_t


ctypedef struct block_t:
    # A task of the partition: rows[start:stop] of the split node ``slot``.
    intp_t start
    intp_t stop
    intp_t n_left            # its first n_left rows go left
    intp_t slot
    intp_t pair              # the index of its split node's pair of children
    intp_t left_pos          # where its left and right rows go in the partition
    intp_t right_pos


ctypedef struct level_split_t:
    # A level as the grower hands it to the partition (its buffers).
    level_node_t* nodes      # the level's nodes; then (unless leaves) its children
    level_node_t* children   # the children of the split nodes, in pairs, as the
                             # grower made them (totals, parent, sibling, tree index)
    node_sums_t* sums        # out: each child's sums over its own rows
    const split_t* best      # each node's split (feature < 0 or not splittable: none)
    const node_t* tree       # the tree's nodes (feature, threshold32, missing side)
    const uint8_t* node_bin  # each tree node's bin threshold (on bins)
    const uint8_t* categorical   # per feature, 1: categorical (NULL: none)
    const uint32_t* cat_bits     # the tree's category sets, CAT_WORDS words each: a
                                 # categorical node's is at row <intp_t>threshold
    intp_t n_nodes
    intp_t n_split           # the nodes split, as many pairs of children


cdef class RowPartition:
    cdef int32_t* rows       # in-bag rows, node by node, increasing within a node
    cdef int32_t* scratch    # per block, its left rows from the block's start, its
                             # right rows backwards from the block's end
    cdef block_t* blocks
    cdef intp_t* block_first # first block of each split node (and the end)
    cdef intp_t capacity     # split nodes the block buffers hold
    cdef intp_t narrow_children    # children the narrow levels' buffers hold
    cdef node_sums_t* chunk_sums   # _split_narrow: per child and chunk of row
    cdef uint8_t* chunk_present    # indices, the sums of its rows there (NULL: on
    cdef intp_t n_chunks           # one thread; n_chunks per child)
    cdef intp_t n_samples
    cdef int n_threads
    cdef SplitFinder finder
    cdef bint on_bins              # route on the finder's bins, else on raw X
    cdef const uint8_t[::1, :] bins
    cdef int missing_bin
    cdef const float32_t[::1, :] X
    cdef int32_t[::1] node_of_row
    cdef RowPartition owner        # the partition whose rows and scratch these are
                                   # (None: this one's own)
    cdef bint owns_rows            # rows and scratch are freed with this partition

    cdef int reserve(self, intp_t n_split) except -1
    cdef intp_t start_tree(self, const uint8_t[::1] sample_mask,
                           const row_stat_t* row_stats, const float64_t* residual,
                           node_sums_t* sums) noexcept nogil
    cdef void fill_rows(self, intp_t start, intp_t stop) noexcept nogil
    cdef intp_t every_row_filled(self) noexcept nogil
    cdef void split(self, const level_split_t* lv, const row_stat_t* row_stats,
                    const float64_t* residual, bint with_sums,
                    bint leaves) noexcept nogil
    cdef void set_leaf(self, const level_node_t* nd) noexcept nogil
    cdef float64_t left_wr2(self, const level_node_t* nd, const split_t* b,
                            const row_stat_t* row_stats,
                            const float64_t* residual) noexcept nogil
    cdef void _every_row(self, node_sums_t* sums, const row_stat_t* row_stats,
                         const float64_t* residual) noexcept nogil
    cdef intp_t _cut_blocks(self, const level_split_t* lv) noexcept nogil
    cdef void _split_wide(self, const level_split_t* lv, intp_t n_blocks,
                          const row_stat_t* row_stats, const float64_t* residual,
                          bint with_sums, int n_threads) noexcept nogil
    cdef void _split_narrow(self, const level_split_t* lv, intp_t n_blocks,
                            const row_stat_t* row_stats, const float64_t* residual,
                            bint with_sums, int n_threads) noexcept nogil
    cdef void _split_block(self, const level_split_t* lv, block_t* blk) noexcept nogil
    cdef void _place_rows(self, const block_t* blk, intp_t side) noexcept nogil
    cdef void _tell_finder(self, const block_t* blk) noexcept nogil
    cdef void _sum_chunks(self, const level_node_t* nd, intp_t c, intp_t task,
                          const row_stat_t* row_stats,
                          const float64_t* residual) noexcept nogil
    cdef void _label_block(self, const level_split_t* lv, const block_t* blk) noexcept nogil
    cdef void _child_range(self, const level_split_t* lv, intp_t c,
                           level_node_t* child) noexcept nogil
    cdef void _finish_pair(self, const level_split_t* lv, intp_t j,
                           const row_stat_t* row_stats, const float64_t* residual,
                           bint with_sums) noexcept nogil
