# One place for the dtypes and the node struct shared by all kernels.
from libc.float cimport DBL_MAX
from libc.math cimport isinf
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport realloc
from libc.string cimport memcpy

ctypedef float float32_t
ctypedef double float64_t
ctypedef Py_ssize_t intp_t

# Compile-time constants (C macros, so the hot loops see literals, not the address
# of another module's variable).
cdef extern from *:
    """
    #define GBC_FEATURE_THRESHOLD 1e-7f
    #define GBC_IMPURITY_EPSILON 2.220446049250313e-16
    #define GBC_HESSIAN_EPSILON 1e-150
    """
    # Two float32 feature values closer than this are treated as equal by the split
    # search (the same tolerance as scikit-learn's exact splitter, in float32
    # arithmetic).
    const float32_t FEATURE_THRESHOLD "GBC_FEATURE_THRESHOLD"
    # Nodes whose weighted residual variance is at or below this are not split
    # (scikit-learn's EPSILON = np.finfo(np.float64).eps).
    const float64_t IMPURITY_EPSILON "GBC_IMPURITY_EPSILON"
    # A Newton step denominator below this makes the leaf value 0 (paper eq. 1 with a
    # zero denominator; the same guard as scikit-learn's ``_safe_divide``).
    const float64_t HESSIAN_EPSILON "GBC_HESSIAN_EPSILON"

# An explicit barrier between two loops of one ``with parallel()`` region that depend
# on each other: Cython writes each ``prange`` of such a region as ``omp for
# nowait``, so without it a thread may start the second loop while another still
# runs the first (GCC's and clang's runtimes happen to wait there today, because of
# the loops' lastprivate variables; nothing in OpenMP says they must). Every thread
# of the region must reach it. Without OpenMP it does nothing.
cdef extern from *:
    """
    #if defined(_OPENMP)
    #  if defined(_MSC_VER) && !defined(__clang__)
    #    define GBC_BARRIER() __pragma(omp barrier) (void)0
    #  else
    #    define GBC_BARRIER() _Pragma("omp barrier") (void)0
    #  endif
    #else
    #  define GBC_BARRIER() ((void)0)
    #endif
    """
    void omp_barrier "GBC_BARRIER"() noexcept nogil

ctypedef struct node_t:
    # One node of a regression tree, stored flat; children are indices relative
    # to the first node of the same tree. A leaf has feature == -1.
    float64_t value            # leaf: gamma_j of paper eq. (1); inner node: 0
    float64_t threshold        # go left when x <= threshold (float64 midpoint)
    float64_t improvement      # weighted squared-error decrease of the split
    float64_t weighted_n       # sum of sample weights of in-bag samples in the node
    int64_t n_samples          # number of in-bag samples in the node
    int32_t feature            # split feature, -1 for a leaf
    int32_t left               # left child index (tree-relative), -1 for a leaf
    int32_t right              # right child index (tree-relative), -1 for a leaf
    float32_t threshold32      # largest float32 <= threshold: same decisions on float32 x
    uint8_t missing_go_left    # 1 if NaN goes left at this split
    uint8_t depth              # depth of the node (root = 0)

cdef inline int check_row_count(Py_ssize_t n_samples) except -1:
    """Refuse more rows than int32 can index: the sorted orders, the grower's
    partition and the finders' gathered rows hold row indices as int32. Every split
    finder calls it before it allocates anything per row."""
    if n_samples > 2147483647:
        raise ValueError(f"at most 2**31 - 1 samples are supported, got {n_samples}")
    return 0


cdef inline float64_t midpoint(float32_t lo, float32_t hi) noexcept nogil:
    """Threshold between two consecutive distinct values lo < hi, as scikit-learn
    computes it: lo/2 + hi/2 in float64, or lo where that rounds to hi or overflows.

    With lo = -inf (an ordinary value here) the threshold is -DBL_MAX: only -inf goes
    left, and the threshold stays finite. The one definition of a split threshold,
    shared by the exact split finder and the binning layer (whose bin edges are the
    thresholds the exact search would choose).
    """
    cdef float64_t t
    if isinf(lo):
        return -DBL_MAX
    t = lo / 2.0 + hi / 2.0
    if t == hi or isinf(t):
        t = lo
    return t


ctypedef struct row_stat_t:
    # Per-row statistics gathered by the split scan, refreshed after every tree.
    float64_t wr               # sample weight x residual (paper: r = y - p)
    float64_t w                # sample weight


cdef inline void* grow_buffer(void* buffer, Py_ssize_t count, size_t item_size,
                              str what) except NULL:
    """realloc ``buffer`` to ``count`` items (at least one), or raise MemoryError
    naming ``what``. The kernels' buffers grow with this, per fit or per level."""
    cdef void* p = realloc(buffer, max(count, 1) * item_size)
    if p == NULL:
        raise MemoryError(f"cannot allocate {count} {what} ({count * item_size} bytes)")
    return p


cdef enum:
    # Buffers that several threads write, one part each, give each part whole cache
    # lines of its own (``per_thread_stride``, ``line_aligned``): a line shared by two
    # threads' parts goes back and forth between their cores at every write.
    CACHE_LINE = 64


cdef inline size_t per_thread_stride(size_t count, size_t item_size) noexcept nogil:
    """Items between the starts of two threads' parts of a per-thread buffer:
    ``count`` rounded up so that each part spans whole cache lines (``item_size``
    divides CACHE_LINE). Allocate ``n_threads * stride * item_size + CACHE_LINE``
    bytes and start the parts at ``line_aligned`` of the block."""
    cdef size_t per_line = CACHE_LINE // item_size
    return (max(count, <size_t>1) + per_line - 1) // per_line * per_line


cdef inline char* line_aligned(void* block) noexcept nogil:
    """The first cache-line boundary at or after ``block`` (NULL stays NULL); free the
    block, not this."""
    if block == NULL:
        return NULL
    return <char*>block + (CACHE_LINE - <size_t>block % CACHE_LINE) % CACHE_LINE


cdef inline uint32_t sort_key(float32_t v) noexcept nogil:
    """A uint32 whose unsigned order is the numeric order of float32 values: NaN maps
    to the largest key (missing values sort last) and -0.0 to the key of +0.0. The
    radix sorts of the exact finder's presort and of the binning layer sort these."""
    cdef uint32_t bits
    if v != v:
        return 0xFFFFFFFFu
    if v == 0:
        v = 0
    memcpy(&bits, &v, 4)
    if bits & 0x80000000u:
        return ~bits
    return bits | 0x80000000u


cdef inline float32_t key_value(uint32_t key) noexcept nogil:
    """The float32 of a non-NaN ``sort_key`` (its inverse)."""
    cdef uint32_t bits
    cdef float32_t v
    if key & 0x80000000u:
        bits = key & 0x7FFFFFFFu
    else:
        bits = ~key
    memcpy(&v, &bits, 4)
    return v
