# The interface between the tree grower (_grower.pyx) and a split finder.
#
# The grower owns the tree: its levels, which node each row is in, the partition of
# the rows after each level, the feature draws of max_features and every buffer
# that lives as long as the fit. A split finder owns what it needs to rank the
# splits of one level: ExactSplitFinder (_exact_splitter.pyx) scans pre-sorted
# features; a histogram finder would bin the features once and scan bins. Both rank
# splits with the one criterion of _criterion.h.
#
# Per tree, the grower calls ``start_tree`` once (with the GIL), then per level
# ``reserve`` (with the GIL: buffers grow per level, never per node),
# ``find_splits`` (without the GIL) and, while it moves the rows of the split nodes
# to their children, ``rows_moved`` for each block of rows it has moved (without
# the GIL, possibly from several threads on disjoint blocks).
from ._common cimport float32_t, float64_t, int32_t, int64_t, uint8_t, intp_t, row_stat_t

ctypedef struct side_t:
    # Sufficient statistics of a set of samples.
    int64_t n
    float64_t w              # sum of sample weights
    float64_t s              # sum of w * r (r = y - p, the residual the tree fits)

ctypedef struct level_node_t:
    # A node of the level being split, as the grower describes it.
    side_t total
    int32_t node             # index of the node in the tree being grown
    uint8_t splittable       # 0: the finder must not split it

ctypedef struct level_t:
    # The level being split. Rows whose ``row_slot`` is s >= 0 are in ``nodes[s]``.
    const level_node_t* nodes
    intp_t n_nodes
    # n_nodes x n_features: 1 where a node may split on a feature (max_features
    # draws); NULL: every feature.
    const uint8_t* allowed
    const int32_t* row_slot
    int64_t min_samples_leaf
    float64_t min_weight_leaf

cdef enum:
    # How a split sends missing values (split_t.missing_go_left).
    MISSING_RIGHT = 0
    MISSING_LEFT = 1
    # The node had no missing value: they follow the child with more samples.
    MISSING_TO_LARGER = 2

ctypedef struct split_t:
    # The best split a finder found for one node.
    float64_t proxy          # the criterion's proxy (_criterion.h); -inf: none
    side_t left              # statistics of the left child
    float64_t threshold      # x <= threshold goes left (+inf: every value left)
    int32_t feature          # -1: no valid split
    uint8_t missing_go_left  # MISSING_RIGHT, MISSING_LEFT or MISSING_TO_LARGER


cdef class SplitFinder:
    cdef readonly intp_t n_samples
    cdef readonly intp_t n_features
    cdef int n_threads

    cdef int start_tree(self, const row_stat_t[::1] row_stats,
                        const int32_t[::1] row_slot) except -1
    cdef int reserve(self, intp_t n_nodes) except -1
    cdef void find_splits(self, const level_t* level, split_t* best) noexcept nogil
    cdef void rows_moved(self, const int32_t* row_slot, intp_t start,
                         intp_t stop) noexcept nogil
