"""Python-visible view of the shared node struct.

``NODE_DTYPE`` is derived from the C struct ``node_t`` in ``_common.pxd`` so that the
struct stays the single source of truth for the node layout.
"""
import numpy as np

cdef node_t _dummy_node
NODE_DTYPE = np.asarray(<node_t[:1]>(&_dummy_node)).dtype

cdef row_stat_t _dummy_row
ROW_STAT_DTYPE = np.asarray(<row_stat_t[:1]>(&_dummy_row)).dtype
