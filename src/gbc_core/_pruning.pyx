"""Minimal cost-complexity pruning of a grown tree, scikit-learn's
``_cost_complexity_prune`` with its ``ccp_alpha`` controller: while the weakest link
(the inner node with the smallest (R(t) - R(T_t)) / (|T_t| - 1), R(t) = weight x
impurity / root weight, the first in node order on a tie) has an effective alpha of
at most ``ccp_alpha``, its branch becomes a leaf. Then the kept nodes are renumbered
in their order (level order, or best first the order of creation, as scikit-learn
numbers a best-first tree) and every row of a pruned branch moved to its new leaf.
"""
cimport cython
from libc.float cimport DBL_MAX
from libc.stdlib cimport free

from ._common cimport float64_t, int32_t, uint8_t, intp_t, node_t, grow_buffer

cdef enum:
    # Flags of a node while a tree is pruned.
    LEAF = 1              # a leaf of the current subtree
    CANDIDATE = 2         # an inner node of the current subtree (may be pruned)
    IN_SUBTREE = 4        # in the current subtree


@cython.final
cdef class CostComplexityPruner:
    """Prune grown trees by minimal cost complexity, reusing its per-node buffers.

    Parameters
    ----------
    ccp_alpha : float
        The complexity parameter (> 0).
    """

    def __cinit__(self):
        self.capacity = 0
        self.r_node = NULL
        self.r_branch = NULL
        self.parent = NULL
        self.n_leaves = NULL
        self.new_id = NULL
        self.flags = NULL

    def __init__(self, float64_t ccp_alpha):
        self.ccp_alpha = ccp_alpha

    def __dealloc__(self):
        free(self.r_node)
        free(self.r_branch)
        free(self.parent)
        free(self.n_leaves)
        free(self.new_id)
        free(self.flags)

    cdef int reserve(self, intp_t capacity) except -1:
        """Room for trees of ``capacity`` nodes."""
        if capacity > self.capacity:
            self.r_node = <float64_t*>grow_buffer(self.r_node, capacity,
                                                  sizeof(float64_t), "tree nodes")
            self.r_branch = <float64_t*>grow_buffer(self.r_branch, capacity,
                                                    sizeof(float64_t), "tree nodes")
            self.parent = <int32_t*>grow_buffer(self.parent, capacity, sizeof(int32_t),
                                                "tree nodes")
            self.n_leaves = <int32_t*>grow_buffer(self.n_leaves, capacity,
                                                  sizeof(int32_t), "tree nodes")
            self.new_id = <int32_t*>grow_buffer(self.new_id, capacity, sizeof(int32_t),
                                                "tree nodes")
            self.flags = <uint8_t*>grow_buffer(self.flags, capacity, sizeof(uint8_t),
                                               "tree nodes")
            self.capacity = capacity
        return 0

    cdef intp_t prune(self, node_t* nodes, intp_t n_nodes, const float64_t* impurity,
                      int32_t* node_of_row, intp_t n_samples) noexcept nogil:
        """Prune the tree ``nodes[0 .. n_nodes)`` (``impurity``: each node's, from
        the sums over its own rows) in place, moving the rows of pruned branches
        (``node_of_row``) to their new leaves; return the number of nodes kept."""
        cdef intp_t best_i
        self._link(nodes, n_nodes, impurity)
        while self.flags[0] & CANDIDATE:
            best_i = self._weakest_link(n_nodes)
            if best_i < 0:
                break
            self._cut(nodes, best_i)
        return self._renumber(nodes, n_nodes, node_of_row, n_samples)

    cdef void _link(self, const node_t* nodes, intp_t n, const float64_t* impurity) noexcept nogil:
        """Each node's R(t), parent and flags, and each branch's leaf count and
        R(T_t), the leaves bubbled up in node order."""
        cdef intp_t i, j
        cdef float64_t total = nodes[0].weighted_n, current
        for i in range(n):
            self.r_node[i] = nodes[i].weighted_n * impurity[i] / total
            self.r_branch[i] = 0.0
            self.n_leaves[i] = 0
            self.parent[i] = -1
        for i in range(n):
            if nodes[i].left >= 0:
                self.parent[nodes[i].left] = <int32_t>i
                self.parent[nodes[i].right] = <int32_t>i
                self.flags[i] = CANDIDATE | IN_SUBTREE
            else:
                self.flags[i] = LEAF | IN_SUBTREE
        for i in range(n):
            if not self.flags[i] & LEAF:
                continue
            current = self.r_node[i]
            self.r_branch[i] = current
            j = i
            while j != 0:
                j = self.parent[j]
                self.r_branch[j] += current
                self.n_leaves[j] += 1

    cdef intp_t _weakest_link(self, intp_t n) noexcept nogil:
        """The inner node of smallest effective alpha (the first on a tie), or -1
        when that alpha is above ``ccp_alpha``."""
        cdef intp_t i, best_i = 0
        cdef float64_t effective = DBL_MAX, alpha
        for i in range(n):
            if not self.flags[i] & CANDIDATE:
                continue
            alpha = (self.r_node[i] - self.r_branch[i]) / (self.n_leaves[i] - 1)
            if alpha < effective:
                effective = alpha
                best_i = i
        return -1 if self.ccp_alpha < effective else best_i

    cdef void _cut(self, const node_t* nodes, intp_t best_i) noexcept nogil:
        """The branch below ``best_i`` leaves the tree; ``best_i`` becomes a leaf and
        its ancestors' leaf counts and R(T_t) follow."""
        cdef intp_t top = 1, j
        cdef int32_t* stack = self.new_id
        cdef int32_t n_pruned
        cdef float64_t r_diff
        stack[0] = <int32_t>best_i
        while top > 0:
            top -= 1
            j = stack[top]
            if not self.flags[j] & IN_SUBTREE:
                continue
            self.flags[j] = 0
            if nodes[j].left >= 0:
                stack[top] = nodes[j].left
                stack[top + 1] = nodes[j].right
                top += 2
        self.flags[best_i] = LEAF | IN_SUBTREE
        n_pruned = self.n_leaves[best_i] - 1
        self.n_leaves[best_i] = 0
        r_diff = self.r_node[best_i] - self.r_branch[best_i]
        self.r_branch[best_i] = self.r_node[best_i]
        j = self.parent[best_i]
        while j != -1:
            self.n_leaves[j] -= n_pruned
            self.r_branch[j] += r_diff
            j = self.parent[j]

    cdef intp_t _renumber(self, node_t* nodes, intp_t n, int32_t* node_of_row,
                          intp_t n_samples) noexcept nogil:
        """Renumber: the kept nodes in order (a parent before its children, which
        stay side by side); a pruned node's rows go to its new leaf."""
        cdef intp_t i, row, n_kept = 0
        cdef int32_t* new_id = self.new_id
        for i in range(n):
            if self.flags[i] & IN_SUBTREE:
                new_id[i] = <int32_t>n_kept
                n_kept += 1
            else:
                new_id[i] = new_id[self.parent[i]]
        if n_kept == n:
            return n
        for i in range(n):
            if not self.flags[i] & IN_SUBTREE:
                continue
            nodes[new_id[i]] = nodes[i]
            if self.flags[i] & LEAF:
                _make_leaf(&nodes[new_id[i]])
            else:
                nodes[new_id[i]].left = new_id[nodes[i].left]
                nodes[new_id[i]].right = new_id[nodes[i].right]
        for row in range(n_samples):
            node_of_row[row] = new_id[node_of_row[row]]
        return n_kept


cdef inline void _make_leaf(node_t* nd) noexcept nogil:
    """A pruned branch's root as a node never split."""
    nd.threshold = 0.0
    nd.improvement = 0.0
    nd.feature = -1
    nd.left = -1
    nd.right = -1
    nd.threshold32 = 0.0
    nd.missing_go_left = 0
