# The interface between the tree grower (_grower.pyx) and a split finder.
#
# The grower owns the tree: its levels, the partition of the in-bag rows (each node
# of a level holds the index range [start, stop) of ``partition``, its rows in
# increasing order), each node's parent and sibling, the feature draws of
# max_features and every buffer that lives as long as the fit. A split finder owns
# the statistics it ranks splits with: ExactSplitFinder (_exact_splitter.pyx) scans
# pre-sorted features, HistogramSplitFinder (_histogram_splitter.pyx) builds
# per-node histograms of binned features. Both choose with the one rule of
# _choice.pxd.
#
# Per tree the grower calls ``start_tree`` once (with the GIL). Per level:
#   start_level (GIL)  make room for the level's nodes (buffers grow per level,
#                      never per node); a finder that subtracts keeps the previous
#                      level's statistics: they are the parents of this one;
#   collect (nogil)    statistics of the nodes marked STATS_COLLECT, from their rows;
#                      a finder with ``side_tasks`` also runs the grower's task
#                      ``level.side_task`` (where not NULL) once, on one of its
#                      threads, as a task of its loop over the level's statistics,
#                      where a longest-first order puts it (the hist finder's
#                      first, the exact finder's after its whole features' tasks):
#                      the grower's one-thread sums beside the level's work;
#   reduce (GIL)       the hook where the collected statistics of the same nodes,
#                      held by several processes, are summed in a fixed order (in
#                      one process: nothing to do);
#   choose (nogil)     the statistics of the nodes marked STATS_DERIVE, their
#                      parent's minus their sibling's, both reduced (only a finder
#                      with ``subtracts``), and the best split of every splittable
#                      node, from the reduced statistics;
# then, while the grower partitions the rows of the split nodes, ``rows_moved``
# for each block of rows that moved to a child (without the GIL, possibly from
# several threads on disjoint blocks). A finder that partitions on bins returns its bin matrix from
# ``partition_bins``: the grower then routes rows by ``split_t.bin`` (missing bin
# ``missing_bin``) instead of by the float32 threshold on raw X.
#
# Best-first growth (max_leaf_nodes) runs the same steps on a "level" of one node
# (the root) or two (the children of the node just split, their parent at slot 0).
# Their parent was chosen steps earlier, so a finder that subtracts keeps the
# statistics of the nodes waiting to be split: ``reserve_stored(n)`` (GIL, once per
# fit) makes room for n of them and says how many it keeps, ``store(slot, index)``
# keeps those of a node of the level as stored node ``index``, ``recall(index)``
# (after ``start_level``) makes stored node ``index`` the parent that ``choose``
# derives from at parent slot 0.
from ._common cimport (
    float32_t, float64_t, int32_t, int64_t, uint8_t, uint32_t, intp_t, row_stat_t,
)

ctypedef struct side_t:
    # Sufficient statistics of a set of samples (also one bin of a histogram).
    int64_t n
    float64_t w              # sum of sample weights
    float64_t s              # sum of w * r (r = y - p, the residual the tree fits)

cdef enum:
    # What a finder must compute for a node of a level (level_node_t.plan).
    STATS_NONE = 0           # nothing: not split, and not needed by its sibling
    STATS_COLLECT = 1        # from its rows
    STATS_DERIVE = 2         # its parent's minus its sibling's

ctypedef struct level_node_t:
    # A node of the level being split, as the grower describes it.
    side_t total
    intp_t start             # its in-bag rows: partition[start:stop]
    intp_t stop
    int32_t node             # index of the node in the tree being grown
    int32_t parent           # slot of its parent in the previous level (-1: root)
    int32_t sibling          # slot of its sibling in this level (-1: root)
    uint8_t splittable       # 0: the finder must not split it
    uint8_t plan             # STATS_NONE, STATS_COLLECT or STATS_DERIVE

ctypedef struct grid_t:
    # The grid the grower puts every row's w * r and w on before a tree is grown
    # (``on_grid`` of _choice.pxd): each is a whole number of units, so every sum of
    # them is exact, the same in any order, in every finder and every process.
    float64_t unit_s         # of w * r; 0: the sums are not on a grid
    float64_t unit_w         # of w (1 with unit weights)

cdef enum:
    # The proxy a level's splits are ranked by (level_t.criterion, _choice.pxd).
    CRITERION_FRIEDMAN_MSE = 0
    CRITERION_SQUARED_ERROR = 1

# A task of the grower's run by the finder's collect (level_t.side_task): it reads
# and writes only what ``context`` points to, and the grower reads its result after
# the collect.
ctypedef void (*side_task_t)(void* context) noexcept nogil

ctypedef struct level_t:
    # The level being split: nodes[0 .. n_nodes).
    const level_node_t* nodes
    intp_t n_nodes
    # NULL, or a task the collect of a finder with ``side_tasks`` runs once beside
    # its own (side_task(side_context)); a finder without leaves it to the grower.
    side_task_t side_task
    void* side_context
    # n_nodes x n_features: 1 where a node may split on a feature (max_features
    # draws); NULL: every feature.
    const uint8_t* allowed
    const int32_t* partition
    int64_t min_samples_leaf
    float64_t min_weight_leaf
    uint8_t criterion        # CRITERION_FRIEDMAN_MSE or CRITERION_SQUARED_ERROR
    grid_t grid              # the grid of the tree's sums (near-ties are ranked exactly)
    # n_features: -1, 0 or +1, the monotonic constraint of each feature (a split on a
    # constrained feature must order its children's mean residuals, _choice.pxd);
    # NULL: none.
    const signed char* monotonic
    # n_features: 1 where a feature is categorical (its values are category codes
    # 0, 1, ...; in the histogram finder its bin is its code): its splits send a set
    # of categories left (_categorical.pxd); NULL: none.
    const uint8_t* categorical
    # A category with fewer rows of the node than this is not sorted: it goes right,
    # as a category with no row (_categorical.pxd); 1: every category with a row.
    int64_t min_samples_category

cdef enum:
    # How a split sends missing values (split_t.missing_go_left).
    MISSING_RIGHT = 0
    MISSING_LEFT = 1
    # The node had no missing value: they follow the child with more samples (the
    # right one on a tie).
    MISSING_TO_LARGER = 2

ctypedef struct split_t:
    # The best split a finder found for one node.
    float64_t proxy          # the criterion's proxy (_criterion.h); -inf: none
    side_t left              # statistics of the left child
    float64_t threshold      # x <= threshold goes left (+inf: every value left)
    int32_t feature          # -1: no valid split
    uint8_t missing_go_left  # MISSING_RIGHT, MISSING_LEFT or MISSING_TO_LARGER
    uint8_t bin              # finders that partition on bins: bin <= this goes left
    uint8_t categorical      # 1: a categorical split (threshold and bin unused)
    uint32_t cat_bits[8]     # categorical: the codes going left (_categorical.pxd)


cdef class SplitFinder:
    cdef readonly intp_t n_samples
    cdef readonly intp_t n_features
    cdef readonly bint subtracts   # choose() derives STATS_DERIVE nodes: the grower
                                   # collects only the smaller child of a pair
    cdef readonly bint side_tasks  # collect() runs level_t.side_task
    cdef int n_threads

    cdef int start_tree(self, const row_stat_t[::1] row_stats,
                        const float64_t[::1] residual,
                        const uint8_t[::1] in_bag) except -1
    cdef int start_level(self, intp_t n_nodes) except -1
    cdef void collect(self, const level_t* level) noexcept nogil
    cdef int reduce(self, const level_t* level) except -1
    cdef void choose(self, const level_t* level, split_t* best) noexcept nogil
    cdef void rows_moved(self, const int32_t* rows, intp_t start, intp_t stop,
                         int32_t slot) noexcept nogil
    cdef object partition_bins(self)
    cdef int missing_bin(self)
    cdef intp_t reserve_stored(self, intp_t n_stored) except -1
    cdef void store(self, intp_t slot, intp_t index) noexcept nogil
    cdef void recall(self, intp_t index) noexcept nogil


cdef inline void plan_statistics(level_node_t* left, level_node_t* right,
                                 bint subtracts) noexcept nogil:
    """What the finder computes for two siblings (set in their ``plan``): each
    splittable node's statistics; with a finder that subtracts, those of the one with
    fewer samples (the left on a tie) from its rows and the other's from its parent's
    minus its sibling's (node totals: the same decision in every process)."""
    cdef level_node_t* small = left
    cdef level_node_t* large = right
    if not subtracts:
        left.plan = STATS_COLLECT if left.splittable else STATS_NONE
        right.plan = STATS_COLLECT if right.splittable else STATS_NONE
        return
    if right.total.n < left.total.n:
        small = right
        large = left
    if not large.splittable:
        small.plan = STATS_COLLECT if small.splittable else STATS_NONE
        large.plan = STATS_NONE
    else:
        small.plan = STATS_COLLECT
        large.plan = STATS_DERIVE
