# Minimal cost-complexity pruning of a grown tree (ccp_alpha), over buffers grown
# once per fit (_pruning.pyx).
from ._common cimport float64_t, int32_t, uint8_t, intp_t, node_t


cdef class CostComplexityPruner:
    cdef float64_t ccp_alpha
    cdef intp_t capacity
    cdef float64_t* r_node       # per node: R(t), its weight x impurity / root weight
    cdef float64_t* r_branch     # per node: R(T_t), summed over its branch's leaves
    cdef int32_t* parent
    cdef int32_t* n_leaves       # per node: the leaves of its branch
    cdef int32_t* new_id         # per node: its index once pruned (also a stack)
    cdef uint8_t* flags          # per node: LEAF | CANDIDATE | IN_SUBTREE

    cdef int reserve(self, intp_t capacity) except -1
    cdef intp_t prune(self, node_t* nodes, intp_t n_nodes, const float64_t* impurity,
                      int32_t* node_of_row, intp_t n_samples) noexcept nogil
    cdef void _link(self, const node_t* nodes, intp_t n, const float64_t* impurity) noexcept nogil
    cdef intp_t _weakest_link(self, intp_t n) noexcept nogil
    cdef void _cut(self, const node_t* nodes, intp_t best_i) noexcept nogil
    cdef intp_t _renumber(self, node_t* nodes, intp_t n, int32_t* node_of_row,
                          intp_t n_samples) noexcept nogil
