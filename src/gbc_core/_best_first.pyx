"""Best-first growth of a tree (``max_leaf_nodes``), as scikit-learn's
``BestFirstTreeBuilder`` grows it: each node's best split is found when the node is
created (a "level" of the root alone, then of the two children of each split, the
smaller collected and the larger derived from its parent's statistics, which the
finder keeps meanwhile), the nodes wait in a frontier ordered by the improvement of
their split (nodes that cannot split wait with 0), and the node with the largest
improvement splits next until the tree has ``max_leaf_nodes`` leaves;
``max_depth`` still bounds the depth. The frontier is a binary max-heap operated
exactly as the C++ standard library's ``push_heap`` and ``pop_heap`` (libstdc++)
operate scikit-learn's, so equal improvements are taken in the same order. Nodes
are numbered as they are created, as there.

With a finder whose scan costs the same for any number of nodes (the exact
finder), several of the best waiting nodes are split ahead, in one scan
(``_split_ahead``): the same tree, bit for bit.

The steps (the nodes that may split, their splits, the children, the rows' moves)
are the grower's (``_grower.pxd``); this module owns the frontier.
"""
cimport cython
from cpython.exc cimport PyErr_CheckSignals
from libc.stdlib cimport free
from libc.string cimport memset

from ._common cimport float64_t, int32_t, intp_t, node_t, row_stat_t, grow_buffer
from ._split_finder cimport side_t, level_node_t, level_t, split_t
from ._grower cimport TreeGrower

cdef extern from "_criterion.h" nogil:
    float64_t impurity_of "gbc_impurity"(float64_t sum_w, float64_t sum_wr,
                                          float64_t sum_wr2)

cdef enum:
    # frontier_t.pending of a node that may be split ahead (while choosing them).
    CANDIDATE = -2


ctypedef struct frontier_t:
    # A node waiting in the frontier of best-first growth.
    level_node_t node        # its rows, totals and index in the tree
    split_t split            # its best split (when it may split)
    float64_t improvement    # the frontier's priority (0: it cannot split)
    intp_t stored            # index of the statistics the finder keeps (-1: none)
    intp_t pending           # index of its children, found ahead (-1: none)
    float64_t impurity       # its impurity (ccp_alpha), until it has a number
    int depth
    bint is_leaf


cdef inline void _heap_sift_up(frontier_t* heap, intp_t hole, intp_t top,
                               frontier_t* value) noexcept nogil:
    """libstdc++'s ``__push_heap``: move ``value`` up from ``hole``."""
    cdef intp_t parent = (hole - 1) // 2
    while hole > top and heap[parent].improvement < value.improvement:
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = value[0]


cdef inline void _heap_push(frontier_t* heap, intp_t* size,
                            const frontier_t* rec) noexcept nogil:
    """``frontier.push_back(rec); std::push_heap(...)`` (max-heap on improvement)."""
    cdef frontier_t value = rec[0]
    heap[size[0]] = value
    size[0] += 1
    _heap_sift_up(heap, size[0] - 1, 0, &value)


cdef inline void _heap_pop(frontier_t* heap, intp_t* size, frontier_t* out) noexcept nogil:
    """``std::pop_heap(...); out = frontier.back(); frontier.pop_back()`` as in
    libstdc++ (``__pop_heap`` then ``__adjust_heap``)."""
    cdef intp_t n = size[0], length, hole, child
    cdef frontier_t value
    if n > 1:
        value = heap[n - 1]
        heap[n - 1] = heap[0]
        length = n - 1
        hole = 0
        child = 0
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if heap[child].improvement < heap[child - 1].improvement:
                child -= 1
            heap[hole] = heap[child]
            hole = child
        if (length & 1) == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            heap[hole] = heap[child - 1]
            hole = child - 1
        _heap_sift_up(heap, hole, 0, &value)
    out[0] = heap[n - 1]
    size[0] = n - 1


@cython.final
cdef class BestFirstGrowth:
    """Grow a grower's trees best first, reusing the frontier across trees.

    Parameters
    ----------
    grower : TreeGrower
        Whose steps grow the trees (its buffers sized for ``max_leaf_nodes``); its
        finder keeps the statistics of the waiting nodes.
    max_leaf_nodes : int
        The leaves of a tree (at least 2).
    """
    cdef TreeGrower g              # the grower, while it grows a tree (else None)
    cdef intp_t max_leaf_nodes
    cdef frontier_t* frontier      # the heap of waiting nodes
    cdef intp_t size               # nodes in it
    cdef intp_t* free_stored       # indices of the finder's stored statistics
    cdef intp_t n_free_stored      # that are free
    cdef intp_t n_stored           # how many the finder keeps
    cdef frontier_t* pending       # children found ahead, two per frontier node
    cdef intp_t* free_pending      # free pairs of ``pending``
    cdef intp_t n_free_pending
    cdef intp_t* chosen            # frontier positions split ahead
    cdef level_t level

    def __cinit__(self):
        self.frontier = NULL
        self.free_stored = NULL
        self.pending = NULL
        self.free_pending = NULL
        self.chosen = NULL

    def __init__(self, TreeGrower grower, intp_t max_leaf_nodes):
        self.max_leaf_nodes = max_leaf_nodes
        # The frontier holds at most max_leaf_nodes nodes, and each may keep
        # statistics.
        self.frontier = <frontier_t*>grow_buffer(NULL, max_leaf_nodes + 1,
                                                 sizeof(frontier_t), "frontier")
        self.n_stored = grower.finder.reserve_stored(max_leaf_nodes)
        self.free_stored = <intp_t*>grow_buffer(NULL, self.n_stored, sizeof(intp_t),
                                                "frontier")
        self.pending = <frontier_t*>grow_buffer(NULL, 2 * max_leaf_nodes,
                                                sizeof(frontier_t), "frontier")
        self.free_pending = <intp_t*>grow_buffer(NULL, max_leaf_nodes, sizeof(intp_t),
                                                 "frontier")
        self.chosen = <intp_t*>grow_buffer(NULL, max_leaf_nodes, sizeof(intp_t),
                                           "frontier")

    def __dealloc__(self):
        free(self.frontier)
        free(self.free_stored)
        free(self.pending)
        free(self.free_pending)
        free(self.chosen)

    def grow(self, TreeGrower g, const row_stat_t[::1] row_stats,
             const float64_t[::1] residual, unsigned long long seed):
        """Grow the tree from the root the grower planted (``level_nodes[0]``, its
        sums in ``level_sums[0]``), on its rows on the grid."""
        cdef intp_t n = g.n_samples
        cdef const row_stat_t* rs = &row_stats[0] if row_stats is not None and n > 0 else NULL
        cdef const float64_t* res = &residual[0] if n > 0 else NULL
        self.level.side_task = NULL
        self.level.side_context = NULL
        self.level.partition = g.rows.rows
        self.level.min_samples_leaf = g.min_samples_leaf
        self.level.min_weight_leaf = g.min_weight_leaf
        self.level.criterion = g.criterion
        self.level.grid = g.grid
        self.level.monotonic = g.monotonic
        self.level.categorical = g.categorical
        self.level.min_samples_category = g.min_samples_category
        self.g = g
        self._grow(rs, res, seed)
        self.g = None

    cdef int _grow(self, const row_stat_t* row_stats, const float64_t* residual,
                   unsigned long long seed) except -1:
        """Pop the node of largest improvement; a node that cannot split, or any
        node once the tree has ``max_leaf_nodes`` leaves, becomes a leaf; else split
        it and find its children's splits.

        A finder whose scan costs the same for any number of nodes (one that does
        not subtract: the exact finder's pass over every sorted feature) looks
        ahead: with the popped node it splits the best other frontier nodes (as many
        as splits remain) and finds all their children's splits in one scan. A
        node's children and their splits depend on its rows only, so the tree is
        the one of one node at a time: a node split ahead gets its children (and
        their numbers) only when it is popped, and becomes a leaf unchanged if the
        leaves run out first."""
        cdef TreeGrower g = self.g
        cdef intp_t i, budget = self.max_leaf_nodes - 1   # splits left
        cdef frontier_t rec
        cdef bint children_split
        cdef bint ahead = (g.look_ahead and not g.finder.subtracts
                           and g.reducer is None and g.max_features >= g.n_features
                           and not g.interactions)
        self.size = 0
        self.n_free_stored = self.n_stored
        for i in range(self.n_stored):
            self.free_stored[i] = self.n_stored - 1 - i
        self.n_free_pending = self.max_leaf_nodes
        for i in range(self.max_leaf_nodes):
            self.free_pending[i] = self.max_leaf_nodes - 1 - i
        self._evaluate(1, 0, -1, budget, seed, row_stats, residual)
        while self.size > 0:
            _heap_pop(self.frontier, &self.size, &rec)
            if rec.is_leaf or budget <= 0:
                with nogil:
                    self._make_leaf(&rec)
                continue
            budget -= 1
            # Whether the children may split (else their sums are not needed).
            children_split = budget > 0 and (g.max_depth < 0
                                             or rec.depth + 1 < g.max_depth)
            if rec.pending >= 0:
                with nogil:
                    self._adopt(&rec, budget)
                continue
            if ahead and children_split:
                self._split_ahead(&rec, budget, row_stats, residual)
            else:
                g.level_nodes[0] = rec.node
                g.level_nodes[0].splittable = 1
                g.best[0] = rec.split
                with nogil:
                    g._apply_splits(1, rec.depth)
                    # (The sums of leaves-to-be only for their impurity.)
                    g._split_rows(1, 1, row_stats, residual,
                                  children_split or g.node_impurity != NULL)
                self._evaluate(2, rec.depth + 1, rec.stored, budget, seed, row_stats,
                               residual)
            # Ctrl-C (or any pending signal) stops a fit between two splits.
            PyErr_CheckSignals()
        return 0

    cdef void _make_leaf(self, frontier_t* rec) noexcept nogil:
        """A popped node that does not split becomes a leaf (one split ahead, never
        popped in time, as it was made)."""
        if rec.pending >= 0:
            self.g._init_node(rec.node.node, &rec.node.total, rec.depth)
            self.free_pending[self.n_free_pending] = rec.pending
            self.n_free_pending += 1
        self.g.rows.set_leaf(&rec.node)
        self._release(rec.stored)

    cdef intp_t _choose_ahead(self, intp_t budget) noexcept nogil:
        """The frontier nodes to split with the popped one (``chosen[1 ..)``): the
        best whose children may split (at most ``budget`` in all, none split ahead
        yet), best first (frontier position order among equal ones); return how
        many nodes split, the popped one included."""
        cdef intp_t i, n = 1, best_i
        cdef frontier_t* r
        cdef int max_depth = self.g.max_depth
        for i in range(self.size):
            r = &self.frontier[i]
            if not r.is_leaf and r.pending < 0 and (
                    max_depth < 0 or r.depth + 1 < max_depth):
                r.pending = CANDIDATE
        while n <= budget:
            best_i = -1
            for i in range(self.size):
                if self.frontier[i].pending == CANDIDATE and (
                        best_i < 0 or self.frontier[i].improvement
                        > self.frontier[best_i].improvement):
                    best_i = i
            if best_i < 0:
                break
            self.frontier[best_i].pending = -1
            self.chosen[n] = best_i
            n += 1
        for i in range(self.size):
            if self.frontier[i].pending == CANDIDATE:
                self.frontier[i].pending = -1
        return n

    cdef int _split_ahead(self, frontier_t* popped, intp_t budget,
                          const row_stat_t* row_stats,
                          const float64_t* residual) except -1:
        """Split ``popped`` and the best frontier nodes whose children may split
        (``_choose_ahead``), find every child's split in one scan, keep the
        children of each as its ``pending`` pair and give ``popped`` its
        children."""
        cdef TreeGrower g = self.g
        cdef intp_t j, k, n = self._choose_ahead(budget)
        cdef frontier_t* r
        cdef level_node_t* next_level = g.level_nodes + g.level_capacity
        cdef side_t right
        g.rows.reserve(n)
        with nogil:
            # Each chosen node's split, as _apply_splits makes it, its children
            # unnumbered (the rows move by the node's feature and threshold).
            for j in range(n):
                r = popped if j == 0 else &self.frontier[self.chosen[j]]
                g.level_nodes[j] = r.node
                g.level_nodes[j].splittable = 1
                g.best[j] = r.split
                g._split_node(&g.nodes[r.node.node], r.node.node, &r.node.total,
                              &r.split, &right)
                next_level[2 * j].total = r.split.left
                next_level[2 * j + 1].total = right
                for k in range(2):
                    next_level[2 * j + k].node = -1
                    next_level[2 * j + k].parent = <int32_t>j
                    next_level[2 * j + k].sibling = <int32_t>(2 * j + 1 - k)
            g._split_rows(n, n, row_stats, residual, True)
        g._mark_splittable(2 * n, False)
        g.finder.start_level(2 * n)
        g._find_splits(&self.level, 2 * n, 0, row_stats, residual, False)
        with nogil:
            for j in range(n):
                r = popped if j == 0 else &self.frontier[self.chosen[j]]
                self.n_free_pending -= 1
                r.pending = self.free_pending[self.n_free_pending]
                for k in range(2):
                    self._keep_child(&self.pending[2 * r.pending + k], 2 * j + k,
                                     r.depth + 1)
            self._adopt(popped, budget)
        return 0

    cdef void _keep_child(self, frontier_t* ch, intp_t s, int depth) noexcept nogil:
        """Keep node ``s`` of the level (a child found ahead) with its split, as it
        will enter the frontier; its rows leave the level."""
        memset(ch, 0, sizeof(frontier_t))
        ch.node = self.g.level_nodes[s]
        ch.depth = depth
        ch.stored = -1
        ch.pending = -1
        ch.is_leaf = not (ch.node.splittable and self.g.best[s].feature >= 0)
        if self.g.node_impurity != NULL:
            ch.impurity = impurity_of(self.g.level_sums[s].w, self.g.level_sums[s].wr,
                                      self.g.level_sums[s].wr2)
        if not ch.is_leaf:
            ch.split = self.g.best[s]
            ch.improvement = self.g._improvement(&ch.node.total, &ch.split)
        self.g.finder.rows_moved(self.g.rows.rows, ch.node.start, ch.node.stop, -1)

    cdef void _adopt(self, frontier_t* rec, intp_t budget) noexcept nogil:
        """Number the children of ``rec`` (split ahead) and put them in the
        frontier, as ``_apply_splits`` and ``_evaluate`` would have: leaves if no
        split remains."""
        cdef node_t* nd = &self.g.nodes[rec.node.node]
        cdef intp_t left_id = self.g.n_nodes, k
        cdef frontier_t* ch
        cdef side_t right
        self.g._split_node(nd, rec.node.node, &rec.node.total, &rec.split, &right)
        nd.left = <int32_t>left_id
        nd.right = <int32_t>(left_id + 1)
        self.g._init_node(left_id, &rec.split.left, rec.depth + 1)
        self.g._init_node(left_id + 1, &right, rec.depth + 1)
        self.g.n_nodes += 2
        for k in range(2):
            ch = &self.pending[2 * rec.pending + k]
            ch.node.node = <int32_t>(left_id + k)
            if self.g.node_impurity != NULL:
                self.g.node_impurity[left_id + k] = ch.impurity
            if budget <= 0:
                ch.is_leaf = True
            if ch.is_leaf:
                memset(&ch.split, 0, sizeof(split_t))
                ch.improvement = 0.0
            _heap_push(self.frontier, &self.size, ch)
        self.free_pending[self.n_free_pending] = rec.pending
        self.n_free_pending += 1

    cdef inline void _release(self, intp_t stored) noexcept nogil:
        """The finder's stored statistics ``stored`` (-1: none) are free again."""
        if stored >= 0:
            self.free_stored[self.n_free_stored] = stored
            self.n_free_stored += 1

    cdef int _evaluate(self, intp_t n_slots, int depth, intp_t parent_stored,
                       intp_t budget, unsigned long long seed,
                       const row_stat_t* row_stats,
                       const float64_t* residual) except -1:
        """Find the best split of the nodes ``level_nodes[0 .. n_slots)`` (the root,
        or the two children of the node just split, whose statistics the finder
        keeps as ``parent_stored``), and put them in the frontier."""
        cdef TreeGrower g = self.g
        cdef intp_t s
        cdef bint any_ = False
        cdef bint may_split = budget > 0 and (g.max_depth < 0 or depth < g.max_depth)
        cdef bint subtract = g.finder.subtracts and parent_stored >= 0
        if g.carry_sums:
            # The sums of the splittable test travel with the statistics
            # (``_find_splits``: one round trip per split); alone only where no
            # statistics are collected and something reads them (the root's
            # totals, the impurities of ccp_alpha).
            if may_split and g._mark_tentative(n_slots, subtract):
                any_ = True
            elif g.root_pending or g.node_impurity != NULL:
                g._settle_sums(n_slots)
        else:
            # (The children's sums, formed where they may split or for their
            # impurity.)
            if depth > 0 and g.reducer is not None and (may_split
                                                        or g.node_impurity != NULL):
                g._reduce_sums(n_slots)
            if may_split:
                any_ = g._mark_splittable(n_slots, subtract)
        if any_:
            g.finder.start_level(n_slots)
            if parent_stored >= 0:
                g.finder.recall(parent_stored)
            any_ = g._find_splits(&self.level, n_slots, seed, row_stats, residual,
                                  subtract)
        self._release(parent_stored)
        with nogil:
            for s in range(n_slots):
                self._wait(s, depth, any_, budget)
        return 0

    cdef void _wait(self, intp_t s, int depth, bint any_, intp_t budget) noexcept nogil:
        """Node ``s`` of the level, its split found (``any_``: the level was
        searched), enters the frontier; its rows leave the level (a finder that
        follows rows by slot, as the exact one does, then sees only the next
        level's)."""
        cdef level_node_t* nd = &self.g.level_nodes[s]
        cdef frontier_t rec
        memset(&rec, 0, sizeof(frontier_t))
        rec.node = nd[0]
        rec.depth = depth
        rec.stored = -1
        rec.pending = -1
        rec.is_leaf = not (any_ and nd.splittable and self.g.best[s].feature >= 0)
        if self.g.node_impurity != NULL:
            self.g._record_impurity(s)
        if not rec.is_leaf:
            rec.split = self.g.best[s]
            rec.improvement = self.g._improvement(&nd.total, &self.g.best[s])
            # Its statistics, for its children, if they may split in turn.
            if (self.n_free_stored > 0 and budget > 1
                    and (self.g.max_depth < 0 or depth + 1 < self.g.max_depth)):
                self.n_free_stored -= 1
                rec.stored = self.free_stored[self.n_free_stored]
                self.g.finder.store(s, rec.stored)
        _heap_push(self.frontier, &self.size, &rec)
        self.g.finder.rows_moved(self.g.rows.rows, nd.start, nd.stop, -1)
