# The leaf of every out-of-bag row of a grown tree, routed on raw values
# (_out_of_bag.pyx).
from ._common cimport float32_t, int32_t, int64_t, uint8_t, uint32_t, intp_t, node_t


cdef class OutOfBagRouter:
    cdef const float32_t[::1, :] X   # dense features (sparse False)
    cdef bint sparse                 # raw values from the CSC columns below
    cdef const float32_t[::1] col_data
    cdef const int32_t[::1] col_rows
    cdef const int64_t[::1] col_start
    cdef intp_t n_samples
    cdef int n_threads

    cdef void route(self, const node_t* nodes, const uint8_t[::1] sample_mask,
                    int32_t* node_of_row, const uint8_t* categorical,
                    const uint32_t* cat_bits) noexcept nogil
    cdef bint _goes_left(self, intp_t row, const node_t* nd, const uint8_t* categorical,
                         const uint32_t* cat_bits) noexcept nogil
