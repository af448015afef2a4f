"""The split-finder interface (see ``_split_finder.pxd``) and its Python hook.

``SplitFinder`` is the base class of every split finder. Besides the C-level methods
the grower calls, it offers :meth:`SplitFinder.level_splits`, which runs one level of
the search on rows the caller assigns to nodes: the tests hold every finder to a
brute-force search through it, with the same inputs the grower would give.
"""
from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc

import numpy as np

from ._common cimport float64_t, int32_t, int64_t, uint8_t, intp_t, row_stat_t
from ._common import ROW_STAT_DTYPE

#: What :meth:`SplitFinder.level_splits` returns for each node.
SPLIT_DTYPE = np.dtype([
    ("feature", np.int32), ("threshold", np.float64), ("missing_go_left", np.uint8),
    ("proxy", np.float64), ("left_n", np.int64), ("left_w", np.float64),
    ("left_s", np.float64),
])


cdef class SplitFinder:
    """Base class of the split finders: find the best split of every node of a level.

    Subclasses implement the C-level methods; this class only defines the interface
    and :meth:`level_splits`.
    """

    cdef int start_tree(self, const row_stat_t[::1] row_stats,
                        const int32_t[::1] row_slot) except -1:
        """Take the row statistics of a new tree (w * r and w of each row) and the
        rows of its root (``row_slot[i]`` is 0 for an in-bag row, else -1)."""
        raise NotImplementedError

    cdef int reserve(self, intp_t n_nodes) except -1:
        """Make room for a level of ``n_nodes`` nodes."""
        raise NotImplementedError

    cdef void find_splits(self, const level_t* level, split_t* best) noexcept nogil:
        """Write the best split of each node of ``level`` to ``best[0 .. n_nodes)``.

        A split is valid if both children have at least ``min_samples_leaf`` samples
        and ``min_weight_leaf`` weight (positive); among valid splits of equal proxy
        the lowest feature wins, then the lowest threshold, then missing values to
        the right. ``feature = -1`` where a node has no valid split or is not
        splittable.
        """
        cdef intp_t s
        for s in range(level.n_nodes):
            best[s].feature = -1
            best[s].proxy = -INFINITY

    cdef void rows_moved(self, const int32_t* row_slot, intp_t start,
                         intp_t stop) noexcept nogil:
        """Rows ``start .. stop-1`` moved to the nodes of the next level
        (``row_slot``, -1 for a row in no node of it)."""
        pass

    def level_splits(self, row_stats, row_slot, allowed=None, int64_t min_samples_leaf=1,
                     float64_t min_weight_leaf=0.0):
        """Best split of every node of one level, as the grower would ask for it.

        Parameters
        ----------
        row_stats : ROW_STAT_DTYPE array of shape (n_samples,)
            w * r and w of each row.
        row_slot : int32 array of shape (n_samples,)
            Node of each row (0 .. n_nodes - 1), or -1 for a row in no node.
        allowed : uint8 array of shape (n_nodes, n_features), optional
            1 where a node may split on a feature (default: every feature).
        min_samples_leaf : int
        min_weight_leaf : float

        Returns
        -------
        ndarray of SPLIT_DTYPE, one per node
            Nodes are splittable unless they hold fewer than ``2 min_samples_leaf``
            samples; ``feature = -1`` where no valid split exists.
        """
        cdef row_stat_t[::1] stats = np.ascontiguousarray(row_stats, dtype=ROW_STAT_DTYPE)
        cdef int32_t[::1] slot_of = np.ascontiguousarray(row_slot, dtype=np.int32)
        if stats.shape[0] != self.n_samples or slot_of.shape[0] != self.n_samples:
            raise ValueError(f"row_stats and row_slot must have {self.n_samples} rows")
        cdef intp_t n_nodes = int(np.max(row_slot)) + 1 if self.n_samples else 0
        n_nodes = max(n_nodes, 1)
        cdef uint8_t[:, ::1] allowed_view
        if allowed is not None:
            allowed_view = np.ascontiguousarray(allowed, dtype=np.uint8).reshape(
                n_nodes, self.n_features)
        cdef level_node_t* nodes = <level_node_t*>malloc(n_nodes * sizeof(level_node_t))
        cdef split_t* best = <split_t*>malloc(n_nodes * sizeof(split_t))
        cdef intp_t i, s
        cdef level_t level
        # The root's rows are every row with a slot: start the tree with them.
        root_slot = np.where(np.asarray(slot_of) >= 0, 0, -1).astype(np.int32)
        try:
            if nodes == NULL or best == NULL:
                raise MemoryError()
            for s in range(n_nodes):
                nodes[s].total.n = 0
                nodes[s].total.w = 0.0
                nodes[s].total.s = 0.0
                nodes[s].node = <int32_t>s
            for i in range(self.n_samples):
                s = slot_of[i]
                if s >= 0:
                    nodes[s].total.n += 1
                    nodes[s].total.w += stats[i].w
                    nodes[s].total.s += stats[i].wr
            for s in range(n_nodes):
                nodes[s].splittable = nodes[s].total.n >= 2 * min_samples_leaf
            self.start_tree(stats, root_slot)
            self.reserve(n_nodes)
            with nogil:
                self.rows_moved(&slot_of[0], 0, self.n_samples)
            level.nodes = nodes
            level.n_nodes = n_nodes
            level.allowed = &allowed_view[0, 0] if allowed is not None else NULL
            level.row_slot = &slot_of[0]
            level.min_samples_leaf = max(min_samples_leaf, 1)
            level.min_weight_leaf = min_weight_leaf
            with nogil:
                self.find_splits(&level, best)
            out = np.zeros(n_nodes, dtype=SPLIT_DTYPE)
            for s in range(n_nodes):
                out[s] = (best[s].feature, best[s].threshold, best[s].missing_go_left,
                          best[s].proxy, best[s].left.n, best[s].left.w, best[s].left.s)
            return out
        finally:
            free(nodes)
            free(best)
