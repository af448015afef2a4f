# The fit's parallel regions, timed task by task, in a build with GBC_CORE_TRACE=1
# only (``_trace.h``): in a normal build every one of these is an empty statement.
# A parallel region: GBC_TRACE_REGION_BEGIN/END around it (serial code), and
# GBC_TRACE_TASK_BEGIN/END as the first and last statement of each fixed-task
# ``prange`` body. Numbers: ``_trace.h``, and benchmarks/scaling_model.py's table.
cdef extern from "_trace.h" nogil:
    enum:
        GBC_TR_TREE
        GBC_TR_GRID_MAX
        GBC_TR_GRID_ROWS
        GBC_TR_LEFT_WR2
        GBC_TR_HIST_BUILD
        GBC_TR_HIST_SCAN
        GBC_TR_HIST_OTHER
        GBC_TR_EXACT_SCAN
        GBC_TR_EXACT_ROWS
        GBC_TR_PARTITION
        GBC_TR_LEAVES
        GBC_TR_OUT_OF_BAG
        GBC_TR_BINNING
        GBC_TR_SORTING
        GBC_TR_HIST_GATHER
        GBC_TR_PART_LABEL
        GBC_TR_PART_BLOCK
        GBC_TR_PART_CHILD
        GBC_TR_PART_TELL
        GBC_TR_PART_PLACE
        GBC_TR_PART_SUMS
        GBC_TR_LEAF_SUMS
        GBC_TR_LEAF_UPDATE
        GBC_TR_LEAF_SOFTMAX
        GBC_TR_BIN_DISTINCT
        GBC_TR_BIN_MAP
        GBC_TR_EXACT_BLOCK_SUMS
        GBC_TR_HIST_BLOCK
        GBC_TR_HIST_MERGE
        GBC_TR_EXACT_CHILD_COUNTS
        GBC_TR_ROOT_WR2
        GBC_TR_PREDICT
        GBC_TR_BIN_SAMPLE
        GBC_TR_CAST
        GBC_TR_BIN_RANGES
        GBC_TR_BIN_COUNTS
    void GBC_TRACE_REGION_BEGIN(int region, Py_ssize_t items)
    void GBC_TRACE_REGION_END(int region, Py_ssize_t items)
    void GBC_TRACE_TASK_BEGIN(int phase, Py_ssize_t task)
    void GBC_TRACE_TASK_END(int phase, Py_ssize_t task)
