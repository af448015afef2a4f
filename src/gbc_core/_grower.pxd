# The tree grower (_grower.pyx): the orchestrator of one tree's growth, and the
# owner of the buffers that live as long as the fit. Best-first growth
# (_best_first.pyx) drives it through the steps declared here.
from ._common cimport (
    float32_t, float64_t, int32_t, int64_t, uint8_t, uint32_t, intp_t, node_t, row_stat_t,
)
from ._rows cimport node_sums_t
from ._split_finder cimport SplitFinder, side_t, grid_t, level_node_t, level_t, split_t
from ._partition cimport RowPartition
from ._out_of_bag cimport OutOfBagRouter
from ._pruning cimport CostComplexityPruner


ctypedef struct root_wr2_t:
    # The root's sum of w * r^2 in row order, taken after its other sums (a side
    # task of the first collect: ``TreeGrower._grid_and_root``).
    const row_stat_t* row_stats   # the rows on the grid (NULL: unit weights)
    const float64_t* residual     # r (unit weights: on the grid)
    intp_t n
    float64_t wr2
    bint done


cdef class TreeGrower:
    cdef bint has_X                      # False: bins only (no out-of-bag rows)
    cdef readonly SplitFinder finder
    cdef RowPartition rows               # the in-bag rows, node by node
    cdef OutOfBagRouter out_of_bag       # None without X
    cdef CostComplexityPruner pruner     # None without ccp_alpha
    cdef object best_first               # a BestFirstGrowth (max_leaf_nodes), or None
    cdef intp_t n_samples
    cdef intp_t n_features
    cdef readonly int n_threads
    cdef int max_depth
    cdef int64_t min_samples_split
    cdef int64_t min_samples_leaf
    cdef float64_t min_weight_leaf
    cdef int64_t min_samples_category     # (level_t.min_samples_category)
    cdef intp_t max_features
    cdef uint8_t criterion
    cdef float64_t min_impurity_decrease
    cdef float64_t ccp_alpha
    cdef float64_t tree_weight           # the in-bag weight of the tree being grown
    cdef readonly int32_t[::1] node_of_row
    cdef node_t* nodes
    cdef uint8_t* node_bin               # bin threshold of each split (on bins)
    cdef float64_t* node_impurity        # ccp_alpha > 0 only (else NULL)
    cdef float64_t* left_wr2             # min_impurity_decrease: per node of the level
    cdef intp_t node_capacity
    cdef readonly intp_t n_nodes
    cdef level_node_t* level_nodes       # the level being split, then the next one
    cdef node_sums_t* level_sums         # their sums over their own rows
    cdef split_t* best                   # the finder's answer for each node
    cdef intp_t level_capacity
    cdef uint8_t* allowed
    cdef int32_t* perm
    cdef public object reducer
    cdef public object grid_maxima       # the next tree's grid maxima, taken already
    cdef bint carry_sums                 # the level's sums travel with its statistics
    cdef bint root_pending               # the root's totals and sums: this process's only
    cdef bint wr2_pending                # the root's w * r^2 not summed yet (``root_wr2``)
    cdef root_wr2_t root_wr2             # its task
    cdef object block_sums               # per grid block: its rows' sums but w * r^2
    cdef grid_t grid                     # the grid of the tree being grown
    cdef object grid_residual            # the tree's rows on it (unit weights): w * r
    cdef object grid_stats               # (weighted rows) w * r and w
    cdef intp_t max_leaf_nodes           # 0: level-wise growth
    cdef public bint look_ahead          # best first: split several nodes per scan
    cdef const signed char* monotonic    # per feature -1/0/+1; NULL: no constraint
    cdef object monotonic_array          # (owns it)
    cdef readonly bint interactions      # interaction constraints (groups)
    cdef object interaction_arrays       # (owns the groups' arrays below)
    cdef const int32_t* group_start      # members of group g: group_members[start[g]:start[g+1]]
    cdef const int32_t* group_members
    cdef const int32_t* feature_start    # groups holding feature f: feature_groups[...]
    cdef const int32_t* feature_groups
    cdef int32_t* group_count            # scratch: per group, path features it holds
    cdef int32_t* path_features          # scratch: the features of a node's path
    cdef uint8_t* on_path                # scratch: per feature, 1 if on the path
    cdef int32_t* node_parent            # per tree node, its parent (-1: the root)
    cdef const uint8_t* categorical      # per feature, 1: categorical; NULL: none
    cdef object categorical_array        # (owns it)
    cdef uint32_t* cat_bits              # categorical: per tree node index at its
                                         # split, the set of codes going left
    cdef readonly intp_t n_cat_rows      # rows of cat_bits the last tree used

    cdef int _reserve_nodes(self, intp_t capacity) except -1
    cdef int _plant(self, const row_stat_t* rs, const float64_t* res,
                    const row_stat_t[::1] row_stats, const float64_t[::1] residual,
                    const uint8_t[::1] sample_mask,
                    const node_sums_t* summed=*) except -1
    cdef int _grow_level_wise(self, const row_stat_t* rs, const float64_t* res,
                              unsigned long long seed, level_t* level) except -1
    cdef tuple _put_on_grid(self, const row_stat_t[::1] row_stats,
                            const float64_t[::1] residual)
    cdef tuple _grid_and_root(self, const row_stat_t[::1] row_stats,
                              const float64_t[::1] residual, node_sums_t* sums,
                              bint wr2_later=*)
    cdef void _settle_wr2(self) noexcept nogil
    cdef bint _root_may_split(self)
    cdef tuple _reduce_root(self, side_t root, node_sums_t sums)
    cdef object _sums_values(self, intp_t n_slots)
    cdef int _take_sums(self, object values, intp_t n_slots) except -1
    cdef int _settle_sums(self, intp_t n_slots) except -1
    cdef bint _mark_tentative(self, intp_t n_slots, bint subtract)
    cdef void _plan(self, intp_t n_slots, bint subtract) noexcept nogil
    cdef void _draw_features(self, intp_t n_slots, unsigned long long seed)
    cdef void _allowed_by_interactions(self, intp_t s) noexcept nogil
    cdef int _check_decrease(self, intp_t n_slots, const row_stat_t* row_stats,
                             const float64_t* residual) except -1
    cdef void _left_sums(self, intp_t n_slots, const row_stat_t* row_stats,
                         const float64_t* residual) noexcept nogil
    cdef void _drop_small_decreases(self, intp_t n_slots) noexcept nogil
    cdef int _reserve_level(self, intp_t capacity) except -1
    cdef void _init_node(self, intp_t i, const side_t* stats, int depth) noexcept nogil
    cdef void _split_node(self, node_t* nd, intp_t index, const side_t* total,
                          const split_t* b, side_t* right) noexcept nogil
    cdef bint _mark_splittable(self, intp_t n_slots, bint subtract)
    cdef int _find_splits(self, level_t* level, intp_t n_slots, unsigned long long seed,
                          const row_stat_t* row_stats,
                          const float64_t* residual, bint subtract) except -1
    cdef intp_t _apply_splits(self, intp_t n_slots, int depth) noexcept nogil
    cdef void _split_rows(self, intp_t n_slots, intp_t n_split,
                          const row_stat_t* row_stats, const float64_t* residual,
                          bint with_sums, bint leaves=*) noexcept nogil
    cdef float64_t _improvement(self, const side_t* total,
                                const split_t* b) noexcept nogil
    cdef void _record_impurity(self, intp_t s) noexcept nogil
    cdef int _reduce_sums(self, intp_t n_slots) except -1
    cdef void _finish_tree(self, const uint8_t[::1] sample_mask) noexcept nogil
