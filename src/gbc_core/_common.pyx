"""Python-visible views of the shared C structs.

``NODE_DTYPE`` is derived from the C struct ``node_t`` in ``_common.pxd`` so that the
struct stays the single source of truth for the node layout.
"""
import numpy as np

cdef node_t _dummy_node
NODE_DTYPE = np.asarray(<node_t[:1]>(&_dummy_node)).dtype

# A struct of two doubles would be read back as complex128, so this one is spelled
# out, and checked against the C struct's size.
ROW_STAT_DTYPE = np.dtype([("wr", np.float64), ("w", np.float64)])
assert ROW_STAT_DTYPE.itemsize == sizeof(row_stat_t)
