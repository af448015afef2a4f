"""The split-finder interface (see ``_split_finder.pxd``) and its Python hook.

``SplitFinder`` is the base class of every split finder. Besides the C-level steps
the grower calls, it offers :meth:`SplitFinder.level_splits`, which runs one level
of the search (optionally below a parent level, so that a finder that subtracts
derives the larger child of each pair from its parent) on rows the caller assigns
to nodes: the tests hold every finder to a brute-force search through it, with the
same inputs the grower would give.
"""
from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc

import numpy as np

from ._common cimport float64_t, int32_t, int64_t, uint8_t, intp_t, row_stat_t
from ._common import ROW_STAT_DTYPE
from ._choice cimport exact_compare

#: The values of the ``criterion`` parameter and their codes (level_t.criterion).
CRITERIA = {"friedman_mse": CRITERION_FRIEDMAN_MSE, "squared_error": CRITERION_SQUARED_ERROR}

#: What :meth:`SplitFinder.level_splits` returns for each node.
SPLIT_DTYPE = np.dtype([
    ("feature", np.int32), ("threshold", np.float64), ("missing_go_left", np.uint8),
    ("proxy", np.float64), ("left_n", np.int64), ("left_w", np.float64),
    ("left_s", np.float64), ("bin", np.uint8), ("categorical", np.uint8),
    ("cat_bits", np.uint32, (8,)),
])


def exact_order(total_s, total_w, s_a, w_a, s_b, w_b):
    """The exact ranking of two splits of one node that the finders use at near-ties
    (``beats`` of _choice.pxd): the sign of proxy_a - proxy_b, every sum a whole
    number of grid units (|value| < 2^53; weights positive on both sides).

    Returns
    -------
    int
        1, 0 or -1.
    """
    for name, v in (("total_s", total_s), ("total_w", total_w), ("s_a", s_a),
                    ("w_a", w_a), ("s_b", s_b), ("w_b", w_b)):
        if not -2**53 < int(v) < 2**53:
            raise ValueError(f"{name} must be below 2**53 in magnitude, got {v}")
    if not (0 < int(w_a) < int(total_w) and 0 < int(w_b) < int(total_w)):
        raise ValueError("w_a and w_b must be in (0, total_w)")
    return exact_compare(total_s, total_w, s_a, w_a, s_b, w_b)


cdef class SplitFinder:
    """Base class of the split finders: the statistics of the nodes of a level, and
    the best split of each.

    Subclasses implement the C-level steps; this class defines the interface, the
    in-process ``reduce`` (nothing to sum) and :meth:`level_splits`.
    """

    cdef int start_tree(self, const row_stat_t[::1] row_stats,
                        const float64_t[::1] residual,
                        const uint8_t[::1] in_bag) except -1:
        """Take the row statistics of a new tree (w * r and w of each row; None:
        every weight is 1, and w * r is ``residual``) and the rows of its root
        (``in_bag[i]`` is 1 for an in-bag row; None: every row)."""
        raise NotImplementedError

    cdef int start_level(self, intp_t n_nodes) except -1:
        """Make room for a level of ``n_nodes`` nodes (the level before it, if the
        finder subtracts, becomes the parents' level)."""
        raise NotImplementedError

    cdef void collect(self, const level_t* level) noexcept nogil:
        """Statistics of the nodes marked STATS_COLLECT, from their rows."""
        pass

    cdef int reduce(self, const level_t* level) except -1:
        """Sum the statistics of the level's nodes over the processes that hold a
        part of the rows, in a fixed order. One process holds every row: nothing to
        do. A distributed finder overrides this (with the GIL: it may call Python)."""
        return 0

    cdef void choose(self, const level_t* level, split_t* best) noexcept nogil:
        """The statistics of the nodes marked STATS_DERIVE (parent minus sibling: a
        finder that subtracts), then the best split of each node of ``level`` into
        ``best[0 .. n_nodes)`` with the rule of ``_choice.pxd``; ``feature = -1``
        where a node has no valid split or is not splittable."""
        cdef intp_t s
        for s in range(level.n_nodes):
            best[s].feature = -1
            best[s].proxy = -INFINITY

    cdef void rows_moved(self, const int32_t* rows, intp_t start, intp_t stop,
                         int32_t slot) noexcept nogil:
        """The rows ``rows[start:stop]`` (row indices) are now in the node ``slot``
        of the next level (-1: in no node of it)."""
        pass

    cdef object partition_bins(self):
        """The uint8 bins (n_samples, n_features, Fortran) the grower partitions on,
        or None: the grower partitions on raw X."""
        return None

    cdef int missing_bin(self):
        """The bin of missing values in ``partition_bins`` (-1: no bins)."""
        return -1

    cdef intp_t reserve_stored(self, intp_t n_stored) except -1:
        """Room to keep the statistics of up to ``n_stored`` nodes between levels
        (best-first growth); return how many it keeps (0: a finder that does not
        subtract keeps none)."""
        return 0

    cdef void store(self, intp_t slot, intp_t index) noexcept nogil:
        """Keep the statistics of node ``slot`` of the current level as stored node
        ``index``."""
        pass

    cdef void recall(self, intp_t index) noexcept nogil:
        """Make stored node ``index`` the parent (slot 0) that ``choose`` derives
        from for the current level."""
        pass

    def level_splits(self, row_stats, row_slot, allowed=None, int64_t min_samples_leaf=1,
                     float64_t min_weight_leaf=0.0, parent_slot=None,
                     criterion="friedman_mse", bint unit_weights=False, grid=None,
                     monotonic=None, categorical=None, int64_t min_samples_category=1,
                     bint bag_mask=False):
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
        parent_slot : int32 array of shape (n_samples,), optional
            A level above: node ``s`` is a child of node ``s // 2`` of that level and
            the sibling of ``s ^ 1`` (so every row of ``s`` has parent slot
            ``s // 2``). Its statistics are collected first, and a finder that
            subtracts derives the larger child of each pair from them.
        criterion : {"friedman_mse", "squared_error"}
            The proxy splits are ranked by (``_choice.pxd``).
        unit_weights : bool, default=False
            Start the tree as a fit without sample weights does: from the residuals
            alone (``row_stats["wr"]``, no row statistics); every ``row_stats["w"]``
            must be 1.
        grid : (float, float), optional
            The units of the grid ``row_stats`` ``wr`` and ``w`` are on (each value a
            whole number of them, as the grower puts them: ``grid_units``): splits
            whose proxies are within 1e-12 of each other are then ranked exactly.
            None: compared as floats.
        monotonic : int8 array of shape (n_features,), optional
            The monotonic constraint of each feature (-1, 0 or +1): a split of a
            constrained feature must order its children's mean residuals
            (``consider`` of _choice.pxd). None: no constraint.
        categorical : bool array of shape (n_features,), optional
            The categorical features (their values category codes 0 .. 255, NaN
            missing; in the histogram finder, bin b is code b): their splits send a
            set of categories left (``_categorical.pxd``: ``categorical`` 1 and the
            codes going left in ``cat_bits``). None: none.
        min_samples_category : int, default=1
            A category with fewer rows of a node than this goes right with the
            categories of no row (never sorted, never left; ``categorical_scan``).
        bag_mask : bool, default=False
            Start the tree with a mask of in-bag rows even where every row has a
            slot (a subsample that kept every row); else, there, without one, as the
            grower starts a tree without a subsample.

        Returns
        -------
        ndarray of SPLIT_DTYPE, one per node
            Nodes are splittable unless they hold fewer than ``2 min_samples_leaf``
            samples; ``feature = -1`` where no valid split exists.
        """
        if criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {sorted(CRITERIA)}, got {criterion!r}")
        stats = np.ascontiguousarray(row_stats, dtype=ROW_STAT_DTYPE)
        slot_of = np.ascontiguousarray(row_slot, dtype=np.int32)
        if stats.shape[0] != self.n_samples or slot_of.shape[0] != self.n_samples:
            raise ValueError(f"row_stats and row_slot must have {self.n_samples} rows")
        if unit_weights and not (stats["w"] == 1.0).all():
            raise ValueError("unit_weights=True needs every row_stats['w'] equal to 1")
        unit_s, unit_w = (0.0, 0.0) if grid is None else (float(grid[0]), float(grid[1]))
        if grid is not None and not (
                unit_s > 0 and unit_w > 0
                and np.all(np.mod(stats["wr"], unit_s) == 0)
                and np.all(np.mod(stats["w"], unit_w) == 0)):
            raise ValueError("grid must be two positive units that every row_stats "
                             "'wr' and 'w' is a whole number of")
        n_nodes = max(int(np.max(slot_of)) + 1 if self.n_samples else 0, 1)
        if parent_slot is not None:
            parent_of = np.ascontiguousarray(parent_slot, dtype=np.int32)
            n_nodes += n_nodes % 2
            inside = slot_of >= 0
            if (parent_of.shape[0] != self.n_samples
                    or not np.array_equal(parent_of[inside], slot_of[inside] // 2)):
                raise ValueError("every row of node s must have parent slot s // 2")
        cdef uint8_t[:, ::1] allowed_view
        if categorical is not None:
            categorical = np.ascontiguousarray(categorical, dtype=np.uint8)
            if categorical.shape != (self.n_features,):
                raise ValueError(f"categorical must have {self.n_features} values")
        if monotonic is not None:
            monotonic = np.ascontiguousarray(monotonic, dtype=np.int8)
            if monotonic.shape != (self.n_features,):
                raise ValueError(f"monotonic must have {self.n_features} values")
        if allowed is not None:
            allowed_view = np.ascontiguousarray(allowed, dtype=np.uint8).reshape(
                n_nodes, self.n_features)
        # The root's rows are every row with a slot: start the tree with them (None:
        # every row, as the grower starts a tree without subsampling).
        in_bag = (slot_of >= 0) if parent_slot is None else (parent_of >= 0)
        in_bag = None if in_bag.all() and not bag_mask else in_bag.astype(np.uint8)
        if unit_weights:
            self.start_tree(None, np.ascontiguousarray(stats["wr"]), in_bag)
        else:
            self.start_tree(stats, None, in_bag)
        if parent_slot is not None:
            self._run_level(stats, parent_of, None, (n_nodes + 1) // 2, None,
                            min_samples_leaf, min_weight_leaf, False, CRITERIA[criterion],
                            unit_s, unit_w, None, categorical, min_samples_category)
        return self._run_level(stats, slot_of, allowed_view if allowed is not None else None,
                               n_nodes, parent_slot, min_samples_leaf, min_weight_leaf,
                               parent_slot is not None, CRITERIA[criterion], unit_s, unit_w,
                               monotonic, categorical, min_samples_category)

    def _run_level(self, stats_array, slot_array, allowed, intp_t n_nodes, parent_slot,
                   int64_t min_samples_leaf, float64_t min_weight_leaf, bint below_parent,
                   uint8_t criterion, float64_t unit_s, float64_t unit_w, monotonic=None,
                   categorical=None, int64_t min_samples_category=1):
        cdef const row_stat_t[::1] stats = stats_array
        cdef const int32_t[::1] slot_of = slot_array
        cdef const uint8_t[:, ::1] allowed_view
        cdef const signed char[::1] monotonic_view
        cdef const uint8_t[::1] categorical_view
        # Rows of no node first (they leave), then the rows of each node in order.
        cdef int32_t[::1] part = np.argsort(slot_array, kind="stable").astype(np.int32)
        cdef intp_t n_out = np.count_nonzero(slot_array < 0)
        counts = np.bincount(slot_array[slot_array >= 0], minlength=n_nodes)
        starts = n_out + np.concatenate([[0], np.cumsum(counts)])
        cdef level_node_t* nodes = <level_node_t*>malloc(max(n_nodes, 1) * sizeof(level_node_t))
        cdef split_t* best = <split_t*>malloc(max(n_nodes, 1) * sizeof(split_t))
        cdef intp_t i, s
        cdef level_t level
        try:
            if nodes == NULL or best == NULL:
                raise MemoryError()
            for s in range(n_nodes):
                nodes[s].total.n = 0
                nodes[s].total.w = 0.0
                nodes[s].total.s = 0.0
                nodes[s].node = <int32_t>s
                nodes[s].start = starts[s]
                nodes[s].stop = starts[s + 1]
                nodes[s].parent = <int32_t>(s // 2) if below_parent else -1
                nodes[s].sibling = <int32_t>(s ^ 1) if below_parent else -1
            for i in range(self.n_samples):
                s = slot_of[i]
                if s >= 0:
                    nodes[s].total.n += 1
                    nodes[s].total.w += stats[i].w
                    nodes[s].total.s += stats[i].wr
            for s in range(n_nodes):
                nodes[s].splittable = nodes[s].total.n >= 2 * min_samples_leaf
                nodes[s].plan = STATS_COLLECT
            if below_parent:
                for s in range(0, n_nodes, 2):
                    plan_statistics(&nodes[s], &nodes[s + 1], self.subtracts)
            self.start_level(n_nodes)
            level.nodes = nodes
            level.n_nodes = n_nodes
            level.side_task = NULL
            level.side_context = NULL
            level.allowed = NULL
            if allowed is not None:
                allowed_view = allowed
                level.allowed = &allowed_view[0, 0]
            level.monotonic = NULL
            if monotonic is not None:
                monotonic_view = monotonic
                level.monotonic = &monotonic_view[0]
            level.categorical = NULL
            if categorical is not None:
                categorical_view = categorical
                level.categorical = &categorical_view[0]
            level.partition = &part[0] if part.shape[0] else NULL
            level.min_samples_leaf = max(min_samples_leaf, 1)
            level.min_weight_leaf = min_weight_leaf
            level.min_samples_category = max(min_samples_category, 1)
            level.criterion = criterion
            level.grid.unit_s = unit_s
            level.grid.unit_w = unit_w
            with nogil:
                self.rows_moved(level.partition, 0, n_out, -1)
                for s in range(n_nodes):
                    self.rows_moved(level.partition, nodes[s].start, nodes[s].stop,
                                    <int32_t>s)
                self.collect(&level)
            self.reduce(&level)
            with nogil:
                self.choose(&level, best)
            out = np.zeros(n_nodes, dtype=SPLIT_DTYPE)
            for s in range(n_nodes):
                if not nodes[s].splittable:
                    best[s].feature = -1
                found = best[s].feature >= 0
                cat = found and best[s].categorical
                out[s] = (best[s].feature, best[s].threshold, best[s].missing_go_left,
                          best[s].proxy, best[s].left.n, best[s].left.w, best[s].left.s,
                          best[s].bin if found else 0, 1 if cat else 0,
                          [best[s].cat_bits[i] if cat else 0 for i in range(8)])
            return out
        finally:
            free(nodes)
            free(best)
