"""Kernels of the losses: leaf values, the updates of F, p and r, loss values.

Binomial (2 classes, the paper's model): leaf values of eq. 1 and the fused
per-tree update of F, p and r. Multinomial (3 or more classes): softmax
probabilities and residuals of every class, the leaf values of one class's tree
and its update. The exact leaf solve (``leaf_solver="exact"``): each leaf's gamma
minimises that leaf's loss exactly (see ``exact_leaf_values``). ``_loss.py`` holds
the loss objects and ``_loss_state.py`` their fit states, which call them."""
cimport cython
from cython.parallel cimport parallel, prange
from libc.float cimport DBL_EPSILON, DBL_MAX
from libc.math cimport fabs, INFINITY
from libc.stdlib cimport malloc, free

import numpy as np

from ._common import NODE_DTYPE

from ._common cimport (
    float64_t, int32_t, uint8_t, intp_t, node_t, row_stat_t, HESSIAN_EPSILON,
    omp_barrier, CACHE_LINE, line_aligned, per_thread_stride,
)
from ._trace cimport *

cdef extern from "_log1p.h" nogil:
    # log(1 + x) for 0 <= x <= 1: fdlibm's method without branches, the same bits
    # on every CPU (one value, or many at once on vector lanes).
    float64_t gbc_log1p_unit(float64_t x)
    int gbc_log1p_wide()
    void gbc_log1p_units(const float64_t* x, float64_t* out, intp_t n, int wide)

# Whether the CPU takes the four-lane log1p (asked once, at import).
cdef int LOG1P_WIDE = gbc_log1p_wide()

cdef extern from "_exp.h" nogil:
    # exp and log: fdlibm's methods in plain float64 operations, the same bits on
    # every CPU (C's exp and log differ between C libraries and CPU variants); exp
    # and log of many values at once on vector lanes (the same bits as one at a
    # time).
    float64_t gbc_exp(float64_t x)
    float64_t gbc_log(float64_t x)
    int gbc_exp_wide()
    void gbc_exp_block(const float64_t* x, float64_t* out, intp_t n, int wide)
    void gbc_log_block(const float64_t* x, float64_t* out, intp_t n, int wide)

# Whether the CPU takes the four-lane exp and log (asked once, at import).
cdef int EXP_WIDE = gbc_exp_wide()

# Binary labels 0/1: the class codes (int32, shared with the fit) or floats; the
# kernels read them as float64 (exact either way).
ctypedef fused label_t:
    int32_t
    float64_t


# Rows per chunk of the parallel reductions. Fixed, so that sums are formed in the
# same order whatever the number of threads (bit-identical results for any n_jobs).
cdef enum:
    CHUNK = 8192
    # From this many rows, the per-leaf sums of eq. 1 are formed in row blocks
    # (``newton_sums``) and the updates of F run in parallel.
    MIN_PARALLEL_ROWS = 200000
    # Up to this many leaf ids per tree (each row block keeps sums of every id).
    MAX_PARALLEL_LEAF_NODES = 4096
    # Rows per row block of the leaf sums (at least), and blocks at most.
    LEAF_BLOCK_ROWS = 8192
    MAX_LEAF_BLOCKS = 128
    # Rows whose log-losses are taken at once (``_binomial_rows``).
    LOSS_BLOCK = 256

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* a if take else b, without a branch: the value's bits chosen by a mask (a
       row's sign is as likely either way, which a branch mispredicts half the
       time). */
    static inline double gbc_pick(int take, double a, double b) {
        uint64_t ua, ub, mask = (uint64_t)0 - (uint64_t)(take != 0);
        memcpy(&ua, &a, sizeof ua);
        memcpy(&ub, &b, sizeof ub);
        ua = (ua & mask) | (ub & ~mask);
        memcpy(&a, &ua, sizeof a);
        return a;
    }
    """
    float64_t gbc_pick(bint take, float64_t a, float64_t b) noexcept nogil


cdef inline float64_t expit(float64_t f) noexcept nogil:
    """Logistic function sigma(F) (paper eq. 3), without overflow for any F."""
    cdef float64_t e
    if f >= 0:
        return 1.0 / (1.0 + gbc_exp(-f))
    e = gbc_exp(f)
    return e / (1.0 + e)


cdef inline float64_t loss_of_log1p(float64_t y, float64_t f, float64_t l) noexcept nogil:
    """log_loss_term(y, f) from l = log(1 + exp(-|f|)): (f + l) - y f for f > 0,
    else l - y f; as (max(f, 0) + l) - y f, the same bits (0 + l is l, l >= +0),
    without a branch."""
    return (gbc_pick(f > 0, f, 0.0) + l) - y * f


cdef inline float64_t log_loss_term(float64_t y, float64_t f) noexcept nogil:
    """-(y log p + (1 - y) log(1 - p)) with p = sigma(f), computed stably as
    log(1 + e^f) - y f (paper eq. 5): max(f, 0) + log(1 + e^-|f|) - y f, the
    logarithm by ``gbc_log1p_unit`` (the same bits on every CPU)."""
    return loss_of_log1p(y, f, gbc_log1p_unit(gbc_exp(-fabs(f))))


cdef inline float64_t expit_of_exp(float64_t f, float64_t e) noexcept nogil:
    """sigma(f) from e = exp(-|f|) (``expit``'s value, bit for bit): 1 / (1 + e)
    for f >= 0, else e / (1 + e), the numerator picked without a branch."""
    return gbc_pick(f >= 0, 1.0, e) / (1.0 + e)


cdef inline intp_t _leaf_sum_blocks(intp_t n, intp_t n_nodes) noexcept nogil:
    """The row blocks of the leaf sums of ``n`` rows and ``n_nodes`` leaf ids
    (``newton_sums``): one below MIN_PARALLEL_ROWS rows or beyond
    MAX_PARALLEL_LEAF_NODES ids, else one per LEAF_BLOCK_ROWS rows, at most
    MAX_LEAF_BLOCKS. Fixed by the data alone, never by the threads."""
    if n < MIN_PARALLEL_ROWS or n_nodes < 1 or n_nodes > MAX_PARALLEL_LEAF_NODES:
        return 1
    return min(<intp_t>MAX_LEAF_BLOCKS, n // LEAF_BLOCK_ROWS)


def leaf_sum_blocks(intp_t n, intp_t n_nodes):
    """The row blocks the leaf sums of eq. 1 are formed in (``newton_sums``).

    Parameters
    ----------
    n : int
        The rows, in the bag or not.
    n_nodes : int
        The leaf ids (the tree's nodes).

    Returns
    -------
    int
        K: block b holds the rows ``n * b // K`` to ``n * (b + 1) // K - 1``; 1
        (every leaf's rows in row order) below 200,000 rows or beyond 4,096 ids,
        else ``min(128, n // 8192)``.
    """
    return _leaf_sum_blocks(n, n_nodes)


cdef inline void _row_terms(const float64_t* residual, const float64_t* prob,
                            const float64_t* sample_weight, const int32_t* codes,
                            int32_t positive, intp_t i, float64_t* num,
                            float64_t* den) noexcept nogil:
    """Row i's terms of ``newton_sums``, w r and w p (1 - p) (``prob`` NULL: w |r|;
    ``residual`` NULL: r from ``codes``, [code = positive] picked without a branch:
    a binary fit's codes are as likely either way)."""
    cdef float64_t w = 1.0 if sample_weight == NULL else sample_weight[i]
    cdef float64_t p, r
    if residual == NULL:
        p = prob[i]
        r = gbc_pick(codes[i] == positive, 1.0, 0.0) - p
        num[0] = w * r
        den[0] = w * p * (1.0 - p)
        return
    num[0] = w * residual[i]
    if prob == NULL:
        den[0] = w * fabs(residual[i])
    else:
        p = prob[i]
        den[0] = w * p * (1.0 - p)


cdef struct _LeafSumRows:
    # The row arrays of ``newton_sums`` as pointers (NULL: None).
    const float64_t* residual
    const float64_t* prob
    const int32_t* leaf
    const float64_t* sample_weight
    const uint8_t* sample_mask
    const int32_t* codes
    int32_t positive
    intp_t n_rows
    intp_t n_nodes
    intp_t n_blocks
    intp_t stride    # values between two blocks' sums: whole cache lines each


cdef inline size_t _block_stride(intp_t n_nodes) noexcept nogil:
    """Values between two row blocks' sums (2 n_nodes each: numerators, then
    denominators), whole cache lines per block."""
    return per_thread_stride(2 * n_nodes, sizeof(float64_t))


cdef _LeafSumRows _leaf_sum_rows(
    const float64_t[::1] residual,
    const float64_t[::1] prob,
    const int32_t[::1] leaf,
    const float64_t[::1] sample_weight,
    const uint8_t[::1] sample_mask,
    const int32_t[::1] codes,
    int32_t positive,
    intp_t n_nodes,
) noexcept nogil:
    """The rows of ``newton_sums`` (at least one) and their row blocks
    (``_leaf_sum_blocks``)."""
    cdef _LeafSumRows at
    at.n_rows = leaf.shape[0]
    at.residual = NULL if residual is None else &residual[0]
    at.prob = NULL if prob is None else &prob[0]
    at.leaf = &leaf[0]
    at.sample_weight = NULL if sample_weight is None else &sample_weight[0]
    at.sample_mask = NULL if sample_mask is None else &sample_mask[0]
    at.codes = NULL if codes is None else &codes[0]
    at.positive = positive
    at.n_nodes = n_nodes
    at.n_blocks = _leaf_sum_blocks(at.n_rows, n_nodes)
    at.stride = _block_stride(n_nodes)
    return at


cdef inline size_t _block_sums_bytes(intp_t n, intp_t n_nodes) noexcept nogil:
    """Bytes to allocate for the row blocks' sums of ``newton_sums`` (start them at
    ``line_aligned`` of the allocation)."""
    return (_leaf_sum_blocks(n, n_nodes) * _block_stride(n_nodes) * sizeof(float64_t)
            + CACHE_LINE)


cdef void _rows_sums(const _LeafSumRows* at, intp_t start, intp_t stop,
                     float64_t* numerator, float64_t* denominator) noexcept nogil:
    """The terms of the in-bag rows ``start .. stop - 1`` added to their leaf's sums,
    in row order."""
    cdef intp_t i
    cdef int32_t j
    cdef float64_t a, b
    for i in range(start, stop):
        if at.sample_mask != NULL and not at.sample_mask[i]:
            continue
        _row_terms(at.residual, at.prob, at.sample_weight, at.codes, at.positive, i,
                   &a, &b)
        j = at.leaf[i]
        numerator[j] = numerator[j] + a
        denominator[j] = denominator[j] + b


cdef inline void _block_sums(const _LeafSumRows* at, intp_t b, float64_t* block_sums
                             ) noexcept nogil:
    """Row block ``b``'s leaf sums from +0.0, into ``block_sums[stride b:]`` (the
    numerators, then the denominators; each block on cache lines of its own)."""
    cdef intp_t k, n_nodes = at.n_nodes
    cdef float64_t* mine = block_sums + at.stride * b
    for k in range(2 * n_nodes):
        mine[k] = 0.0
    _rows_sums(at, at.n_rows * b // at.n_blocks, at.n_rows * (b + 1) // at.n_blocks,
               mine, mine + n_nodes)


cdef inline void _merge_block_sums(const _LeafSumRows* at, const float64_t* block_sums,
                                   intp_t j, float64_t* numerator,
                                   float64_t* denominator) noexcept nogil:
    """Leaf ``j``'s block sums added to its sums, in block order."""
    cdef intp_t b, n_nodes = at.n_nodes
    cdef float64_t num = numerator[j], den = denominator[j]
    for b in range(at.n_blocks):
        num = num + block_sums[at.stride * b + j]
        den = den + block_sums[at.stride * b + n_nodes + j]
    numerator[j] = num
    denominator[j] = den


cdef int newton_sums(
    const float64_t[::1] residual,
    const float64_t[::1] prob,
    const int32_t[::1] leaf,
    const float64_t[::1] sample_weight,
    const uint8_t[::1] sample_mask,
    float64_t* numerator,
    float64_t* denominator,
    intp_t n_nodes,
    int n_threads=1,
    const int32_t[::1] codes=None,
    int32_t positive=0,
) except -1 nogil:
    """Accumulate sum w*r and sum w*p*(1-p) per leaf (paper eq. 1) over the in-bag
    rows (``prob`` None: sum w*|r|, the exponential loss's Hessian), leaf ids
    below ``n_nodes``. Each leaf's sums start from its ``numerator`` and
    ``denominator`` (+0.0).

    The rows are cut into the fixed row blocks of ``_leaf_sum_blocks`` (one below
    MIN_PARALLEL_ROWS rows); each block's sums are formed in row order from +0.0
    (one task per block on ``n_threads`` threads), then added to each leaf's sums
    in block order: the same numbers whatever the threads. One block: each leaf's
    rows added in row order.

    ``residual`` None: each row's r is made from its class code in ``codes`` and
    its p, r = [code = ``positive``] - p (``multinomial_state``'s residual, bit for
    bit), so that a multinomial fit need not keep the residuals of every class.
    """
    cdef _LeafSumRows at
    cdef intp_t b, j
    cdef int threads = max(n_threads, 1)
    cdef void* block
    cdef float64_t* block_sums
    if leaf.shape[0] == 0:
        return 0
    at = _leaf_sum_rows(residual, prob, leaf, sample_weight, sample_mask, codes,
                        positive, n_nodes)
    if at.n_blocks == 1:
        _rows_sums(&at, 0, at.n_rows, numerator, denominator)
        return 0
    block = malloc(_block_sums_bytes(at.n_rows, n_nodes))
    if block == NULL:
        with gil:
            raise MemoryError()
    block_sums = <float64_t*>line_aligned(block)
    GBC_TRACE_REGION_BEGIN(GBC_TR_LEAVES, at.n_rows)
    for b in prange(at.n_blocks, schedule="dynamic", num_threads=threads):
        GBC_TRACE_TASK_BEGIN(GBC_TR_LEAF_SUMS, b)
        _block_sums(&at, b, block_sums)
        GBC_TRACE_TASK_END(GBC_TR_LEAF_SUMS, b)
    GBC_TRACE_REGION_END(GBC_TR_LEAVES, at.n_rows)
    for j in range(n_nodes):
        _merge_block_sums(&at, block_sums, j, numerator, denominator)
    free(block)
    return 0


cdef inline float64_t newton_step(float64_t numerator, float64_t denominator) noexcept nogil:
    """gamma_j = sum r / sum p(1-p) (paper eq. 1); 0 where the denominator vanishes."""
    if fabs(denominator) < HESSIAN_EPSILON:
        return 0.0
    return numerator / denominator


# ---------------------------------------------------------- the exact leaf solve
# leaf_solver="exact": each leaf's gamma minimises that leaf's (weighted, in-bag)
# loss of F + gamma exactly, instead of eq. 1's single Newton step from gamma = 0
# (the paper's "Trial 1", eq. 7, solved numerically). The learning rate still
# scales it: F += eta * gamma.
#
# Log-loss (LOGISTIC): rows i of the leaf with target t_i in {0, 1}, log-odds z_i
# and weight w_i; gamma is the root of g(gamma) = sum w (t - sigma(z + gamma)),
# decreasing in gamma. With W1, W0 the weights of t = 1 and t = 0 and z in
# [zmin, zmax], sigma(zmin + gamma) <= the weighted mean of sigma(z + gamma) <=
# sigma(zmax + gamma), so the root lies in [log(W1/W0) - zmax, log(W1/W0) - zmin]:
# a safeguarded Newton (Newton where it stays inside the bracket and shrinks fast
# enough, bisection otherwise: Numerical Recipes' rtsafe) finds it to rounding.
# Binary: z = F. Multinomial, the tree of class k: the loss of the leaf's rows as
# a function of gamma added to F_k alone, the other classes' scores fixed (all at
# the start of the iteration, as the residuals), is
#   sum w [log(e^(F_k + gamma) + S) - F_y - gamma [y = k]],  S = sum_{j != k} e^F_j,
# whose derivative is sum w (sigma(z + gamma) - [y = k]) with z = F_k - log S, the
# log-odds of class k against the rest: the same problem with t = [y = k].
#
# Exponential loss (EXPONENTIAL): sum w e^(-(2t - 1)(F + gamma)) is minimised in
# closed form by gamma = 1/2 log(sum_{t=1} w e^-F / sum_{t=0} w e^F), both sums
# taken in the log domain (shifted by their largest exponent): no overflow.
#
# A pure leaf (every in-bag row of one class, W0 = 0 or W1 = 0) has no minimiser:
# its loss falls towards 0 as gamma goes to +-infinity. Its gamma is capped at the
# smallest |gamma| at which every row's loss term is at most machine epsilon
# (the signed margin (2t - 1)(z + gamma) reaches PURE_MARGIN = -log(DBL_EPSILON),
# where sigma rounds to the label within epsilon), and 0 if every row is already
# there: gamma = max(0, PURE_MARGIN - zmin) for t = 1, min(0, -PURE_MARGIN - zmax)
# for t = 0. So |gamma| <= PURE_MARGIN + max |z| stays finite and the raw-score
# bound of the fit (``RAW_SCORE_LIMIT``) grows by at most eta times that.

cdef enum:
    LOGISTIC = 0
    EXPONENTIAL = 1
    MAX_SOLVE_ITERATIONS = 200

cdef extern from *:
    """
    #define GBC_PURE_MARGIN 36.04365338911715
    """
    # -log(DBL_EPSILON): the margin at which a pure leaf's rows are within machine
    # epsilon of their label (the cap of a pure leaf's exact gamma).
    const float64_t PURE_MARGIN "GBC_PURE_MARGIN"


cdef inline void logistic_terms(float64_t t, float64_t u, float64_t* g,
                                float64_t* h) noexcept nogil:
    """g = t - sigma(u) and h = sigma(u) (1 - sigma(u)), each with full relative
    precision: t - sigma(u) is sigma(-u) for t = 1 and -sigma(u) for t = 0."""
    cdef float64_t e = gbc_exp(-fabs(u))
    cdef float64_t s = 1.0 / (1.0 + e)       # sigma(|u|)
    cdef float64_t c = e / (1.0 + e)         # sigma(-|u|)
    h[0] = s * c
    if t != 0.0:
        g[0] = c if u >= 0 else s
    else:
        g[0] = -(s if u >= 0 else c)


# The safeguarded Newton iteration of one leaf, in steps, so that the sums over the
# leaf's rows can be taken by several processes and reduced between the steps (a
# distributed fit, ``exact_solve_*`` below) with the same rule as one process.
ctypedef struct solve_t:
    float64_t x          # the current gamma (the answer once done)
    float64_t lo, hi     # the bracket of the root
    float64_t dx, dxold  # the last two steps
    float64_t it         # iterations made
    float64_t done       # 1.0: x is final


cdef inline void logistic_start(float64_t w1, float64_t w0, float64_t wz, float64_t zmin,
                                float64_t zmax, solve_t* s) noexcept nogil:
    """The start of a leaf's solve from its sums (weights of t = 1 and t = 0, sum w z)
    and the range of its log-odds: a final gamma (no rows, a pure leaf, an empty
    bracket) or the bracket and the first x."""
    cdef float64_t x
    s.done = 1.0
    s.it = 0.0
    if not w1 + w0 > 0:
        s.x = 0.0
        return
    if w0 == 0.0:
        s.x = max(0.0, PURE_MARGIN - zmin)
        return
    if w1 == 0.0:
        s.x = min(0.0, -PURE_MARGIN - zmax)
        return
    x = gbc_log(w1) - gbc_log(w0)
    s.lo = x - zmax
    s.hi = x - zmin
    # Start at the root of the leaf whose rows all have the mean log-odds (exact
    # when they are equal, as in the first iteration from a constant F0).
    x = x - wz / (w1 + w0)
    if x < s.lo:
        x = s.lo
    elif x > s.hi:
        x = s.hi
    s.x = x
    s.dxold = s.hi - s.lo
    s.dx = s.dxold
    s.done = 0.0 if s.hi > s.lo else 1.0


cdef inline void logistic_step(solve_t* s, float64_t g, float64_t h) noexcept nogil:
    """One iteration from g = sum w (t - sigma(z + x)) and h = sum w sigma' at the
    current x: Newton where it lands inside the bracket and at least halves the step
    of two iterations before, else bisection (rtsafe)."""
    cdef float64_t tol
    if g == 0.0:
        s.done = 1.0
        return
    if g > 0.0:
        s.lo = s.x
    else:
        s.hi = s.x
    if (not h > 0.0 or not (s.lo < s.x + g / h < s.hi)
            or fabs(2.0 * g) > fabs(s.dxold * h)):
        s.dxold = s.dx
        s.dx = 0.5 * (s.hi - s.lo)
        s.x = s.lo + s.dx
    else:
        s.dxold = s.dx
        s.dx = g / h
        s.x = s.x + s.dx
    tol = 4.0 * DBL_EPSILON * (1.0 + fabs(s.x))
    s.it += 1.0
    if fabs(s.dx) <= tol or s.it >= MAX_SOLVE_ITERATIONS or not s.hi > s.lo:
        s.done = 1.0


cdef float64_t logistic_leaf(const intp_t* rows, intp_t n_rows, const int32_t[::1] codes,
                             int32_t positive, const float64_t* z,
                             const float64_t[::1] sample_weight) noexcept nogil:
    """The exact gamma of one leaf of the log-loss (see above); ``rows`` in row order."""
    cdef intp_t a, i
    cdef float64_t w, zi, w1 = 0.0, w0 = 0.0, wz = 0.0, zmin = DBL_MAX, zmax = -DBL_MAX
    cdef float64_t g, h, gi, hterm
    cdef solve_t s
    for a in range(n_rows):
        i = rows[a]
        w = 1.0 if sample_weight is None else sample_weight[i]
        zi = z[i]
        if codes[i] == positive:
            w1 += w
        else:
            w0 += w
        wz += w * zi
        if zi < zmin:
            zmin = zi
        if zi > zmax:
            zmax = zi
    logistic_start(w1, w0, wz, zmin, zmax, &s)
    while s.done == 0.0:
        g = 0.0
        h = 0.0
        for a in range(n_rows):
            i = rows[a]
            w = 1.0 if sample_weight is None else sample_weight[i]
            logistic_terms(gbc_pick(codes[i] == positive, 1.0, 0.0), z[i] + s.x,
                           &gi, &hterm)
            g += w * gi
            h += w * hterm
        logistic_step(&s, g, h)
    return s.x


cdef inline bint exponential_pure(float64_t w1, float64_t w0, float64_t min1,
                                  float64_t max0, float64_t* value) noexcept nogil:
    """The exact gamma of an exponential leaf without rows or of one class only
    (True), from its class weights and the smallest F of class 1, largest of class 0."""
    if not w1 + w0 > 0:
        value[0] = 0.0
        return True
    if w0 == 0.0:
        value[0] = max(0.0, PURE_MARGIN - min1)
        return True
    if w1 == 0.0:
        value[0] = min(0.0, -PURE_MARGIN - max0)
        return True
    return False


cdef inline float64_t exponential_value(float64_t min1, float64_t max0, float64_t s1,
                                        float64_t s0) noexcept nogil:
    """1/2 log(sum_{t=1} w e^-F / sum_{t=0} w e^F) from the shifted sums
    s1 = sum_{t=1} w e^(min1 - F) and s0 = sum_{t=0} w e^(F - max0)."""
    # log sum_{t=1} w e^-F = -min1 + log s1; log sum_{t=0} w e^F = max0 + log s0.
    return 0.5 * ((gbc_log(s1) - min1) - (gbc_log(s0) + max0))


cdef float64_t exponential_leaf(const intp_t* rows, intp_t n_rows,
                                const int32_t[::1] codes, const float64_t* f,
                                const float64_t[::1] sample_weight) noexcept nogil:
    """The exact gamma of one leaf of the exponential loss (see above)."""
    cdef intp_t a, i
    cdef float64_t w, fi, w1 = 0.0, w0 = 0.0, min1 = DBL_MAX, max0 = -DBL_MAX
    cdef float64_t s1 = 0.0, s0 = 0.0, value
    for a in range(n_rows):
        i = rows[a]
        w = 1.0 if sample_weight is None else sample_weight[i]
        fi = f[i]
        if codes[i] != 0:
            w1 += w
            if fi < min1:
                min1 = fi
        else:
            w0 += w
            if fi > max0:
                max0 = fi
    if exponential_pure(w1, w0, min1, max0, &value):
        return value
    for a in range(n_rows):
        i = rows[a]
        w = 1.0 if sample_weight is None else sample_weight[i]
        if codes[i] != 0:
            s1 += w * gbc_exp(min1 - f[i])
        else:
            s0 += w * gbc_exp(f[i] - max0)
    return exponential_value(min1, max0, s1, s0)


cdef int solve_exact(node_t[::1] nodes, const int32_t[::1] leaf_of_row,
                     const uint8_t[::1] sample_mask, const int32_t[::1] codes,
                     int32_t positive, const float64_t[::1] z,
                     const float64_t[::1] sample_weight, int kind) except -1:
    """``nodes[j].value`` = the exact gamma of every leaf j from its in-bag rows (0
    for inner nodes). The rows are grouped by leaf (a counting sort, so each leaf
    sees its rows in row order: the sums do not depend on anything but the data)."""
    cdef intp_t n = leaf_of_row.shape[0], n_nodes = nodes.shape[0], i, j
    cdef intp_t* start = <intp_t*>malloc((n_nodes + 1) * sizeof(intp_t))
    cdef intp_t* order = <intp_t*>malloc(max(n, 1) * sizeof(intp_t))
    if start == NULL or order == NULL:
        free(start)
        free(order)
        raise MemoryError()
    try:
        with nogil:
            for j in range(n_nodes + 1):
                start[j] = 0
            for i in range(n):
                if sample_mask is None or sample_mask[i]:
                    start[leaf_of_row[i] + 1] += 1
            for j in range(n_nodes):
                start[j + 1] += start[j]
            for i in range(n):
                if sample_mask is None or sample_mask[i]:
                    j = leaf_of_row[i]
                    order[start[j]] = i
                    start[j] += 1
            # start[j] is now the end of leaf j's rows, the start of leaf j + 1's.
            for j in range(n_nodes - 1, 0, -1):
                start[j] = start[j - 1]
            start[0] = 0
            for j in range(n_nodes):
                if nodes[j].feature >= 0:
                    nodes[j].value = 0.0
                elif kind == LOGISTIC:
                    nodes[j].value = logistic_leaf(order + start[j], start[j + 1] - start[j],
                                                   codes, positive, &z[0], sample_weight)
                else:
                    nodes[j].value = exponential_leaf(order + start[j],
                                                      start[j + 1] - start[j], codes, &z[0],
                                                      sample_weight)
    finally:
        free(start)
        free(order)
    return 0


def exact_leaf_values_kernel(const int32_t[::1] codes, int32_t positive,
                             const float64_t[::1] z, const int32_t[::1] leaf,
                             const float64_t[::1] sample_weight, intp_t n_leaves,
                             int exponential):
    """The exact gamma of each leaf id in ``0 .. n_leaves - 1`` (inputs validated):
    of the log-loss of log-odds ``z`` with targets ``codes == positive``, or of the
    exponential loss of raw scores ``z`` (class codes 0/1)."""
    nodes = np.zeros(n_leaves, dtype=NODE_DTYPE)
    nodes["feature"] = -1
    cdef node_t[::1] view = nodes
    solve_exact(view, leaf, None, codes, positive, z, sample_weight,
                EXPONENTIAL if exponential else LOGISTIC)
    return nodes["value"].copy()


# ------------------------------------------- the exact leaf solve over processes
# A distributed fit takes the sums of every leaf over its own in-bag rows (in row
# order), all-reduces them (sums added in process order; minima and maxima), and
# steps every leaf's solve with the reduced sums: the rule of ``logistic_leaf`` and
# ``exponential_leaf``, with the sums of every process's rows. ``state`` holds a
# ``solve_t`` per node (its fields in order, as float64).

cdef inline solve_t* _state_of(float64_t[:, ::1] state, intp_t j) noexcept nogil:
    return <solve_t*>&state[j, 0]


def exact_solve_bounds(const int32_t[::1] codes, int32_t positive,
                       const float64_t[::1] z, const float64_t[::1] sample_weight,
                       const int32_t[::1] leaf_of_row, const uint8_t[::1] sample_mask,
                       float64_t[:, ::1] out, int exponential):
    """The first sums of every leaf over these in-bag rows, in row order, into
    ``out`` (n_nodes rows). Log-loss (targets ``codes == positive``, log-odds z):
    (w1, w0, sum w z, min z, max z). Exponential loss (class codes 0/1, raw scores
    z): (w1, w0, min z of class 1, max z of class 0). Reduce: the first 3 (log-loss)
    or 2 columns summed, then a minimum and a maximum."""
    cdef intp_t i, j, n = codes.shape[0], m = out.shape[0]
    cdef float64_t w, zi
    cdef bint pos
    if out.shape[1] != (4 if exponential else 5) or z.shape[0] != n or \
            leaf_of_row.shape[0] != n:
        raise ValueError("exact_solve_bounds: inconsistent shapes")
    with nogil:
        for j in range(m):
            out[j, 0] = 0.0
            out[j, 1] = 0.0
            if exponential:
                out[j, 2] = DBL_MAX
                out[j, 3] = -DBL_MAX
            else:
                out[j, 2] = 0.0
                out[j, 3] = DBL_MAX
                out[j, 4] = -DBL_MAX
        for i in range(n):
            if sample_mask is not None and not sample_mask[i]:
                continue
            j = leaf_of_row[i]
            w = 1.0 if sample_weight is None else sample_weight[i]
            zi = z[i]
            pos = codes[i] == positive
            if pos:
                out[j, 0] += w
            else:
                out[j, 1] += w
            if exponential:
                if pos and zi < out[j, 2]:
                    out[j, 2] = zi
                if not pos and zi > out[j, 3]:
                    out[j, 3] = zi
            else:
                out[j, 2] += w * zi
                if zi < out[j, 3]:
                    out[j, 3] = zi
                if zi > out[j, 4]:
                    out[j, 4] = zi


def exact_solve_start(const float64_t[:, ::1] bounds, const uint8_t[::1] is_leaf,
                      float64_t[:, ::1] state, int exponential):
    """Start every leaf's solve from its reduced ``bounds`` (inner nodes: done, 0);
    returns the number of leaves still to solve. For the exponential loss a leaf is
    either final (no rows, pure) or waits for its two sums (``exponential_solve_sums``,
    then ``exponential_solve_finish``)."""
    cdef intp_t j, m = bounds.shape[0], active = 0
    cdef solve_t* s
    cdef float64_t value
    if state.shape[0] != m or state.shape[1] != sizeof(solve_t) // sizeof(float64_t):
        raise ValueError("exact_solve_start: state must be (n_nodes, 7)")
    with nogil:
        for j in range(m):
            s = _state_of(state, j)
            s.done = 1.0
            s.x = 0.0
            s.it = 0.0
            if not is_leaf[j]:
                continue
            if exponential:
                if not exponential_pure(bounds[j, 0], bounds[j, 1], bounds[j, 2],
                                        bounds[j, 3], &value):
                    s.done = 0.0
                else:
                    s.x = value
            else:
                logistic_start(bounds[j, 0], bounds[j, 1], bounds[j, 2], bounds[j, 3],
                               bounds[j, 4], s)
            if s.done == 0.0:
                active += 1
    return active


def logistic_solve_sums(const int32_t[::1] codes, int32_t positive,
                        const float64_t[::1] z, const float64_t[::1] sample_weight,
                        const int32_t[::1] leaf_of_row, const uint8_t[::1] sample_mask,
                        const float64_t[:, ::1] state, float64_t[:, ::1] out):
    """(g, h) of every leaf still solving at its current x, over these in-bag rows in
    row order (``logistic_leaf``'s sums), into ``out`` (n_nodes, 2)."""
    cdef intp_t i, j, n = codes.shape[0]
    cdef float64_t w, gi, hterm
    cdef const solve_t* s
    with nogil:
        for j in range(out.shape[0]):
            out[j, 0] = 0.0
            out[j, 1] = 0.0
        for i in range(n):
            if sample_mask is not None and not sample_mask[i]:
                continue
            j = leaf_of_row[i]
            s = <const solve_t*>&state[j, 0]
            if s.done != 0.0:
                continue
            w = 1.0 if sample_weight is None else sample_weight[i]
            logistic_terms(gbc_pick(codes[i] == positive, 1.0, 0.0), z[i] + s.x, &gi, &hterm)
            out[j, 0] += w * gi
            out[j, 1] += w * hterm


def logistic_solve_step(float64_t[:, ::1] state, const float64_t[:, ::1] sums):
    """One iteration of every leaf still solving, with its reduced (g, h); returns
    the number of leaves still to solve."""
    cdef intp_t j, active = 0
    cdef solve_t* s
    with nogil:
        for j in range(state.shape[0]):
            s = _state_of(state, j)
            if s.done != 0.0:
                continue
            logistic_step(s, sums[j, 0], sums[j, 1])
            if s.done == 0.0:
                active += 1
    return active


def exponential_solve_sums(const int32_t[::1] codes, const float64_t[::1] f,
                           const float64_t[::1] sample_weight,
                           const int32_t[::1] leaf_of_row, const uint8_t[::1] sample_mask,
                           const float64_t[:, ::1] bounds, const float64_t[:, ::1] state,
                           float64_t[:, ::1] out):
    """(s1, s0) = (sum_{t=1} w e^(min1 - F), sum_{t=0} w e^(F - max0)) of every leaf
    still solving, with the reduced min1 and max0 of ``bounds``, over these in-bag
    rows in row order."""
    cdef intp_t i, j, n = codes.shape[0]
    cdef float64_t w
    with nogil:
        for j in range(out.shape[0]):
            out[j, 0] = 0.0
            out[j, 1] = 0.0
        for i in range(n):
            if sample_mask is not None and not sample_mask[i]:
                continue
            j = leaf_of_row[i]
            if (<const solve_t*>&state[j, 0]).done != 0.0:
                continue
            w = 1.0 if sample_weight is None else sample_weight[i]
            if codes[i] != 0:
                out[j, 0] += w * gbc_exp(bounds[j, 2] - f[i])
            else:
                out[j, 1] += w * gbc_exp(f[i] - bounds[j, 3])


def exponential_solve_finish(float64_t[:, ::1] state, const float64_t[:, ::1] bounds,
                             const float64_t[:, ::1] sums):
    """The exact gamma of every leaf still solving, from its reduced sums."""
    cdef intp_t j
    cdef solve_t* s
    with nogil:
        for j in range(state.shape[0]):
            s = _state_of(state, j)
            if s.done != 0.0:
                continue
            s.x = exponential_value(bounds[j, 2], bounds[j, 3], sums[j, 0], sums[j, 1])
            s.done = 1.0


cdef inline void _class_log_odds_rows(const float64_t[:, ::1] raw, float64_t[:, ::1] out,
                                      intp_t start, intp_t stop) noexcept nogil:
    """``class_log_odds`` of rows ``start .. stop - 1``."""
    cdef intp_t i, k, j, n_classes = raw.shape[0]
    cdef float64_t top, total
    for i in range(start, stop):
        for k in range(n_classes):
            top = -DBL_MAX
            for j in range(n_classes):
                if j != k and raw[j, i] > top:
                    top = raw[j, i]
            total = 0.0
            for j in range(n_classes):
                if j != k:
                    total = total + gbc_exp(raw[j, i] - top)
            out[k, i] = raw[k, i] - (top + gbc_log(total))


def class_log_odds(const float64_t[:, ::1] raw, float64_t[:, ::1] out, int n_threads=1,
                   intp_t first_chunk=0, intp_t stop_chunk=-1):
    """The log-odds of each class against the others, out[k, i] = F_k - log
    sum_{j != k} e^F_j (stable: the largest other F_j taken out of the sum), of the
    rows of a range of the row chunks of ``multinomial_state``'s pass.

    Each row's values are its own: the same numbers on any threads and in any
    parts (the class growers' lanes take ranges of the chunks, as they take
    ``multinomial_state_part``'s).

    Parameters
    ----------
    raw : float64 array of shape (n_classes, n_samples)
        The raw scores F of every class.
    out : float64 array of shape (n_classes, n_samples)
        Receives the log-odds of the rows of the chunks.
    n_threads : int, default=1
        Threads, one task per chunk (one thread for a range of fewer than 4 chunks,
        too short to pay for a parallel region).
    first_chunk, stop_chunk : int, default=0, -1
        The chunks ``first_chunk .. stop_chunk - 1`` (``multinomial_chunk_count``:
        CHUNK rows each); ``stop_chunk`` -1: to the last.

    Raises
    ------
    ValueError
        If ``out`` is not of ``raw``'s shape or the chunks are not a range of them.
    """
    cdef intp_t c, n = raw.shape[1], n_chunks = (raw.shape[1] + CHUNK - 1) // CHUNK
    if out.shape[0] != raw.shape[0] or out.shape[1] != n:
        raise ValueError(f"out must have raw's shape ({raw.shape[0]}, {n}), got "
                         f"({out.shape[0]}, {out.shape[1]})")
    if stop_chunk == -1:
        stop_chunk = n_chunks
    if not 0 <= first_chunk <= stop_chunk <= n_chunks:
        raise ValueError(f"chunks {first_chunk} .. {stop_chunk} are not a range of the "
                         f"{n_chunks} row chunks")
    if stop_chunk - first_chunk < 4:  # too short to pay for a parallel region
        n_threads = 1
    with nogil:
        for c in prange(first_chunk, stop_chunk, schedule="static",
                        num_threads=max(n_threads, 1)):
            _class_log_odds_rows(raw, out, c * CHUNK, min(n, (c + 1) * CHUNK))


def newton_leaf_values_kernel(const float64_t[::1] residual, const float64_t[::1] prob,
                              const int32_t[::1] leaf, const float64_t[::1] sample_weight,
                              intp_t n_leaves):
    """gamma of each leaf id in ``0 .. n_leaves - 1`` (inputs already validated)."""
    numerator = np.zeros(n_leaves, dtype=np.float64)
    denominator = np.zeros(n_leaves, dtype=np.float64)
    gamma = np.zeros(n_leaves, dtype=np.float64)
    cdef float64_t[::1] num = numerator, den = denominator, g = gamma
    cdef intp_t j
    with nogil:
        newton_sums(residual, prob, leaf, sample_weight, None, &num[0], &den[0],
                    n_leaves)
        for j in range(n_leaves):
            g[j] = newton_step(num[j], den[j])
    return gamma


cdef int leaf_steps(
    node_t[::1] nodes,
    float64_t* steps,
    float64_t learning_rate,
    const int32_t[::1] leaf_of_row,
    const uint8_t[::1] sample_mask,
    const float64_t[::1] sample_weight,
    float64_t factor,
    const float64_t[::1] residual,
    const float64_t[::1] prob,
    const int32_t[::1] codes,
    int32_t positive,
    const float64_t[::1] z,
    int kind,
    int n_threads,
    const int32_t[::1] residual_codes=None,
) except -1:
    """The leaf values of a grown tree from its in-bag rows, 0 for inner nodes; then
    ``steps[j] = learning_rate * nodes[j].value``, the step each row of node j takes
    (``steps``: room for 2 x n_nodes values).

    Without the class codes ``codes``: ``nodes[j].value = newton_step(factor * sum w
    r, sum w p (1 - p))`` (paper eq. 1; ``factor`` is 1, or (K - 1)/K for the
    multinomial loss; ``prob`` None: sum w |r|, the exponential loss's), the sums in
    row blocks on ``n_threads`` threads (``newton_sums``). With them: the
    exact minimiser of each leaf's loss of the kind ``kind`` (``solve_exact``:
    targets ``codes == positive``, log-odds or raw scores ``z``). ``residual`` None
    (Newton step): r = [``residual_codes`` = ``positive``] - p (``newton_sums``).
    """
    cdef intp_t j, n_nodes = nodes.shape[0]
    if codes is not None:
        solve_exact(nodes, leaf_of_row, sample_mask, codes, positive, z, sample_weight,
                    kind)
        with nogil:
            for j in range(n_nodes):
                steps[j] = learning_rate * nodes[j].value
        return 0
    with nogil:
        for j in range(2 * n_nodes):
            steps[j] = 0.0
        newton_sums(residual, prob, leaf_of_row, sample_weight, sample_mask, steps,
                    steps + n_nodes, n_nodes, n_threads, residual_codes, positive)
        _newton_steps(&nodes[0], n_nodes, steps, factor, learning_rate)
    return 0


cdef inline void _newton_steps(node_t* nodes, intp_t n_nodes, float64_t* steps,
                               float64_t factor, float64_t learning_rate) noexcept nogil:
    """From the leaf sums ``steps`` (sum w r of node j at ``steps[j]``, its
    denominator at ``steps[n_nodes + j]``): ``nodes[j].value`` the Newton step of
    every leaf (0 for inner nodes), and ``steps[j] = learning_rate *
    nodes[j].value``."""
    cdef intp_t j
    for j in range(n_nodes):
        if nodes[j].feature < 0:
            nodes[j].value = newton_step(factor * steps[j], steps[n_nodes + j])
        else:
            nodes[j].value = 0.0
        # The numerator is no longer needed: its slot holds the scaled step.
        steps[j] = learning_rate * nodes[j].value


cdef inline void chunk_sums(const float64_t* partial, intp_t n_chunks,
                            float64_t* total_loss, float64_t* total_weight) noexcept nogil:
    """The sums formed in chunks: ``partial`` holds each chunk's (sum w L, sum w),
    added in chunk order into ``total_loss`` and ``total_weight``."""
    cdef intp_t c
    total_loss[0] = 0.0
    total_weight[0] = 0.0
    for c in range(n_chunks):
        total_loss[0] += partial[2 * c]
        total_weight[0] += partial[2 * c + 1]


cdef inline void chunk_maxima(const float64_t* chunk_max, intp_t n_chunks,
                               float64_t* out) noexcept nogil:
    """The grid maxima formed in chunks: ``chunk_max`` holds each chunk's (largest
    abs(w r), largest w), their maxima over the chunks into ``out[0]``, ``out[1]``
    (0 without chunks; a maximum does not depend on the order)."""
    cdef intp_t c
    out[0] = 0.0
    out[1] = 0.0
    for c in range(n_chunks):
        out[0] = max(out[0], chunk_max[2 * c])
        out[1] = max(out[1], chunk_max[2 * c + 1])


cdef inline float64_t chunk_mean(const float64_t* partial, intp_t n_chunks) noexcept nogil:
    """The mean loss of sums formed in chunks (``chunk_sums``; 0 where the weight is
    0)."""
    cdef float64_t total_loss, total_weight
    chunk_sums(partial, n_chunks, &total_loss, &total_weight)
    return total_loss / total_weight if total_weight > 0 else 0.0


cdef void _binomial_rows(
    const label_t[::1] y,
    const float64_t[::1] sample_weight,
    const uint8_t[::1] sample_mask,
    float64_t[::1] raw,
    const float64_t* step,
    const int32_t[::1] leaf_of_row,
    float64_t[::1] prob,
    float64_t[::1] residual,
    row_stat_t[::1] row_stats,
    intp_t start,
    intp_t stop,
    float64_t* loss_and_weight,
    float64_t* maxima=NULL,
) noexcept nogil:
    """The binomial update of rows ``start .. stop - 1``: F += step[leaf], p =
    sigma(F), r = y - p and the row statistics, then the in-bag sums (sum w L, sum
    w) of the log-losses L, in row order, into ``loss_and_weight``; and (``maxima``
    not NULL) the next tree's grid maxima of the rows, the largest abs(w * r) and w
    of the row statistics (without them: abs(r) and 0), into ``maxima[0]``,
    ``maxima[1]`` (the grower's ``_block_maxima`` of what it will read).

    LOSS_BLOCK rows at a time: the update of F first, then the exponentials e =
    exp(-|F|) of the block at once on vector lanes (``gbc_exp_block``), p and r of
    each row from its e, then the logarithms log(1 + e) of the block at once
    (``gbc_log1p_units``) and the losses added row by row."""
    cdef float64_t e[LOSS_BLOCK]
    cdef float64_t w, f, p, r, total = 0.0, weight = 0.0, max_wr = 0.0, max_w = 0.0
    cdef intp_t i, b = start, m
    cdef bint with_stats = row_stats is not None
    while b < stop:
        m = min(<intp_t>LOSS_BLOCK, stop - b)
        for i in range(b, b + m):
            f = raw[i] + step[leaf_of_row[i]]
            raw[i] = f
            e[i - b] = -fabs(f)
        gbc_exp_block(e, e, m, EXP_WIDE)
        for i in range(b, b + m):
            p = expit_of_exp(raw[i], e[i - b])
            prob[i] = p
            r = y[i] - p
            residual[i] = r
            if with_stats:
                w = 1.0 if sample_weight is None else sample_weight[i]
                row_stats[i].wr = w * r
                row_stats[i].w = w
                max_wr = max(max_wr, fabs(w * r))
                max_w = max(max_w, w)
            else:
                max_wr = max(max_wr, fabs(r))
        gbc_log1p_units(e, e, m, LOG1P_WIDE)
        for i in range(b, b + m):
            if sample_mask is None or sample_mask[i]:
                w = 1.0 if sample_weight is None else sample_weight[i]
                total = total + w * loss_of_log1p(y[i], raw[i], e[i - b])
                weight = weight + w
        b += m
    loss_and_weight[0] = total
    loss_and_weight[1] = weight
    if maxima != NULL:
        maxima[0] = max_wr
        maxima[1] = max_w


cdef _check_residual_codes(const int32_t[::1] residual_codes, intp_t n, bint no_prob):
    """Refuse class codes for the residuals (r = [code = 1] - p) of other than ``n``
    rows, or where there is no p (the exponential loss)."""
    if residual_codes is None:
        return
    if no_prob:
        raise ValueError("residual_codes make r = [code = 1] - p: the log-loss's (with "
                         "prob) only")
    if residual_codes.shape[0] != n:
        raise ValueError(f"residual_codes must have {n} rows, got "
                         f"{residual_codes.shape[0]}")


cdef _check_rows(intp_t n, dict needed, dict optional):
    """Refuse a row array of ``needed`` that is None, and one of either dict (name:
    array) of other than ``n`` rows: the kernels index them unchecked."""
    cdef str name
    for name, a in needed.items():
        if a is None:
            raise ValueError(f"{name} is needed (an array of {n} rows), got None")
    for arrays in (needed, optional):
        for name, a in arrays.items():
            if a is not None and a.shape[0] != n:
                raise ValueError(f"{name} must have {n} rows, got {a.shape[0]}")


def boosting_update(
    node_t[::1] nodes,
    const int32_t[::1] leaf_of_row,
    const uint8_t[::1] sample_mask,
    const label_t[::1] y,
    const float64_t[::1] sample_weight,
    float64_t learning_rate,
    float64_t[::1] raw,
    float64_t[::1] prob,
    float64_t[::1] residual,
    row_stat_t[::1] row_stats,
    int n_threads,
    const int32_t[::1] codes=None,
    bint exponential=False,
    float64_t[::1] grid_maxima=None,
    const int32_t[::1] residual_codes=None,
):
    """One boosting step of a loss of one raw score per row after the tree of
    iteration m has been grown: the binomial log-loss, or with ``exponential`` the
    exponential loss (``prob`` None).

    Sets ``nodes[j].value = gamma_j`` for every leaf (``leaf_steps``: on in-bag rows,
    paper eq. 1, sum w r / sum w p (1 - p) or sum w r / sum w |r|; or, when the
    class codes ``codes`` (int32 copy of ``y``) are given, the exact minimiser of the
    leaf's loss, ``exact_leaf_values``), then in one pass over the rows F += eta *
    gamma (eq. 2), the residuals r (the log-loss's with p = sigma(F), eq. 3, in
    chunks on ``n_threads`` threads; ``exponential_rows``, in row order) and the row
    statistics of the next split search (``row_stats`` None: unit weights, the tree
    reads the residuals themselves). The leaf sums are formed in row blocks
    (``newton_sums``); with more than one, the log-loss's sums, leaf values and
    update run in one parallel region (``_binomial_fused``). ``grid_maxima``
    (float64, 2 values; the log-loss only) receives the next tree's grid maxima,
    taken as the rows are updated: the largest abs(w * r) and w of ``row_stats``
    (``row_stats`` None: the largest abs(r), and 0), what the grower's grid pass
    would take of them (``TreeGrower.grid_maxima``); the exponential loss leaves
    it as it is. ``residual_codes`` (the log-loss only; the class codes 0/1, as
    ``y``): the leaf sums make each row's r from its code and p, r = [code = 1] - p,
    the numbers the update wrote (``newton_sums``), and do not read ``residual``,
    which may hold them on the grid by now (the grower's buffer, put on the grid in
    place).

    Returns
    -------
    loss : float
        Weighted mean loss of the in-bag rows after the update.
    n_overflow : int
        The exponential loss: rows whose e^|F| is beyond float64 (their loss and
        residual are infinite); 0 for the log-loss.
    """
    cdef intp_t n = y.shape[0], n_nodes = nodes.shape[0], n_overflow = 0
    if grid_maxima is not None and grid_maxima.shape[0] != 2:
        raise ValueError(f"grid_maxima must have 2 values, got {grid_maxima.shape[0]}")
    if leaf_of_row.shape[0] != n:
        raise ValueError(f"leaf_of_row must have {n} rows, got {leaf_of_row.shape[0]}")
    _check_rows(n, {"raw": raw, "residual": residual}
                if exponential else {"raw": raw, "prob": prob, "residual": residual},
                {"sample_weight": sample_weight, "sample_mask": sample_mask,
                 "row_stats": row_stats, "codes": codes})
    _check_residual_codes(residual_codes, n, exponential)
    # The residuals the leaf sums read (None: made from ``residual_codes``).
    cdef const float64_t[::1] summed = residual if residual_codes is None else None
    cdef intp_t n_chunks = (n + CHUNK - 1) // CHUNK
    cdef intp_t n_blocks = _leaf_sum_blocks(n, n_nodes)
    cdef bint fused = codes is None and not exponential and n_blocks > 1
    cdef float64_t loss
    cdef float64_t sums[2]
    cdef float64_t* step = <float64_t*>malloc(2 * max(n_nodes, 1) * sizeof(float64_t))
    # Each chunk's (sum w L, sum w), then (with grid_maxima) its two maxima.
    cdef float64_t* partial = <float64_t*>malloc(4 * max(n_chunks, 1) * sizeof(float64_t))
    # The fused region's leaf sums of each row block (``newton_sums``').
    cdef void* block = NULL
    cdef float64_t* chunk_max = NULL
    if fused:
        block = malloc(_block_sums_bytes(n, n_nodes))
    if step == NULL or partial == NULL or (fused and block == NULL):
        free(step)
        free(partial)
        free(block)
        raise MemoryError()
    try:
        if grid_maxima is not None:
            chunk_max = partial + 2 * n_chunks
        if fused:
            # The leaf sums, the leaf values and the update in one parallel region
            # (the numbers of the steps one after another).
            with nogil:
                _binomial_fused(nodes, step, learning_rate, leaf_of_row, sample_mask, y,
                                sample_weight, raw, prob, residual, row_stats,
                                <float64_t*>line_aligned(block), partial, chunk_max,
                                n_threads, summed, residual_codes)
        else:
            leaf_steps(nodes, step, learning_rate, leaf_of_row, sample_mask,
                       sample_weight, 1.0, summed, prob, codes, 1, raw,
                       EXPONENTIAL if exponential else LOGISTIC, n_threads, residual_codes)
            if exponential:  # in row order, on one thread
                with nogil:
                    n_overflow = exponential_rows(y, sample_weight, sample_mask, raw,
                                                  step, leaf_of_row, residual, row_stats,
                                                  sums)
                return (sums[0] / sums[1] if sums[1] > 0 else 0.0), n_overflow
            with nogil:
                _binomial_chunks(y, sample_weight, sample_mask, raw, step, leaf_of_row,
                                 prob, residual, row_stats, partial, n_threads, chunk_max)
        with nogil:
            loss = chunk_mean(partial, n_chunks)
            if chunk_max != NULL:
                chunk_maxima(chunk_max, n_chunks, &grid_maxima[0])
    finally:
        free(step)
        free(partial)
        free(block)
    return loss, n_overflow


cdef inline void _binomial_chunk(
    intp_t chunk,
    const label_t[::1] y,
    const float64_t[::1] sample_weight,
    const uint8_t[::1] sample_mask,
    float64_t[::1] raw,
    const float64_t* step,
    const int32_t[::1] leaf_of_row,
    float64_t[::1] prob,
    float64_t[::1] residual,
    row_stat_t[::1] row_stats,
    float64_t* partial,
    float64_t* chunk_max,
) noexcept nogil:
    """Task ``chunk`` of a region of binomial updates: ``_binomial_rows`` of rows
    ``chunk * CHUNK ..`` (CHUNK of them at most), its sums into ``partial[2 *
    chunk:]`` and (not NULL) its maxima into ``chunk_max[2 * chunk:]`` (the loop
    times it: ``_trace.h``'s markers stand in the prange body)."""
    cdef intp_t start = chunk * CHUNK
    _binomial_rows(y, sample_weight, sample_mask, raw, step, leaf_of_row, prob,
                   residual, row_stats, start, min(start + CHUNK, y.shape[0]),
                   &partial[2 * chunk], NULL if chunk_max == NULL else &chunk_max[2 * chunk])


cdef void _binomial_chunks(
    const label_t[::1] y,
    const float64_t[::1] sample_weight,
    const uint8_t[::1] sample_mask,
    float64_t[::1] raw,
    const float64_t* step,
    const int32_t[::1] leaf_of_row,
    float64_t[::1] prob,
    float64_t[::1] residual,
    row_stat_t[::1] row_stats,
    float64_t* partial,
    int n_threads,
    float64_t* chunk_max=NULL,
) noexcept nogil:
    """``_binomial_rows`` of every CHUNK of rows (in parallel from 4 chunks), each
    chunk's (sum w L, sum w) into ``partial`` (room for 2 per chunk) and (not NULL)
    its grid maxima into ``chunk_max`` (room for 2 per chunk)."""
    cdef intp_t c, n = y.shape[0]
    cdef intp_t n_chunks = (n + CHUNK - 1) // CHUNK
    if n_chunks < 4:  # too short to pay for a parallel region
        n_threads = 1
    GBC_TRACE_REGION_BEGIN(GBC_TR_LEAVES, n)
    # (Dynamic: on a busy machine a thread the scheduler holds back leaves its
    # chunks to the others; each chunk's sums are its own, whoever runs it.)
    for c in prange(n_chunks, schedule="dynamic", num_threads=n_threads):
        GBC_TRACE_TASK_BEGIN(GBC_TR_LEAF_UPDATE, c)
        _binomial_chunk(c, y, sample_weight, sample_mask, raw, step, leaf_of_row, prob,
                        residual, row_stats, partial, chunk_max)
        GBC_TRACE_TASK_END(GBC_TR_LEAF_UPDATE, c)
    GBC_TRACE_REGION_END(GBC_TR_LEAVES, n)


cdef void _binomial_fused(
    node_t[::1] nodes,
    float64_t* step,
    float64_t learning_rate,
    const int32_t[::1] leaf_of_row,
    const uint8_t[::1] sample_mask,
    const label_t[::1] y,
    const float64_t[::1] sample_weight,
    float64_t[::1] raw,
    float64_t[::1] prob,
    float64_t[::1] residual,
    row_stat_t[::1] row_stats,
    float64_t* block_sums,
    float64_t* partial,
    float64_t* chunk_max,
    int n_threads,
    const float64_t[::1] summed,
    const int32_t[::1] residual_codes,
) noexcept nogil:
    """``leaf_steps`` then ``_binomial_chunks``, in one parallel region on
    ``n_threads`` threads: one task per row block of the leaf sums (``_block_sums``,
    into ``block_sums``: ``_block_sums_bytes``, line-aligned), a barrier, each
    leaf's block sums added in block order (``_merge_block_sums``), a barrier, the
    leaf values and steps as one task (``_newton_steps``), a barrier, then one task
    per CHUNK of rows (``_binomial_rows``). The tasks are those of ``newton_sums``
    and of the two steps (each block's sums, each chunk's update and sums its
    own): the same numbers, whatever the threads. The leaf sums read ``summed``
    (``residual``, or None: r made from ``residual_codes``, ``newton_sums``)."""
    cdef intp_t k, b, j, t, c, n = y.shape[0], n_nodes = nodes.shape[0]
    cdef intp_t n_chunks = (n + CHUNK - 1) // CHUNK
    cdef _LeafSumRows at = _leaf_sum_rows(summed, prob, leaf_of_row, sample_weight,
                                          sample_mask, residual_codes, 1, n_nodes)
    for k in range(2 * n_nodes):
        step[k] = 0.0
    GBC_TRACE_REGION_BEGIN(GBC_TR_LEAVES, n)
    with parallel(num_threads=n_threads):
        for b in prange(at.n_blocks, schedule="dynamic"):
            GBC_TRACE_TASK_BEGIN(GBC_TR_LEAF_SUMS, b)
            _block_sums(&at, b, block_sums)
            GBC_TRACE_TASK_END(GBC_TR_LEAF_SUMS, b)
        omp_barrier()  # every block's sums before a leaf adds them up
        for j in prange(n_nodes, schedule="static"):
            _merge_block_sums(&at, block_sums, j, step, step + n_nodes)
        omp_barrier()  # every leaf's sums before its value
        for t in prange(1, schedule="static"):
            _newton_steps(&nodes[0], n_nodes, step, 1.0, learning_rate)
        omp_barrier()  # every leaf's step before the rows take it
        for c in prange(n_chunks, schedule="dynamic"):
            GBC_TRACE_TASK_BEGIN(GBC_TR_LEAF_UPDATE, c)
            _binomial_chunk(c, y, sample_weight, sample_mask, raw, step, leaf_of_row,
                            prob, residual, row_stats, partial, chunk_max)
            GBC_TRACE_TASK_END(GBC_TR_LEAF_UPDATE, c)
    GBC_TRACE_REGION_END(GBC_TR_LEAVES, n)


def newton_node_sums(
    const int32_t[::1] leaf_of_row,
    intp_t n_nodes,
    const uint8_t[::1] sample_mask,
    const float64_t[::1] sample_weight,
    const float64_t[::1] residual,
    const float64_t[::1] prob,
    int n_threads,
    const int32_t[::1] residual_codes=None,
):
    """The per-node sums of eq. 1 over this process's in-bag rows, shape (n_nodes,
    2): sum w r and sum w p (1 - p) (``prob`` None: sum w |r|), in row blocks
    (``newton_sums``: the numbers ``boosting_update`` forms, whatever the
    threads). The first half of
    ``boosting_update`` for a data-parallel fit, whose sums are all-reduced before
    :func:`binomial_apply` takes them. ``residual_codes`` (with ``prob``; then
    ``residual`` is not read and may be None): r = [code = 1] - p, as
    ``boosting_update``'s."""
    cdef intp_t n = leaf_of_row.shape[0], j
    _check_residual_codes(residual_codes, n, prob is None)
    if residual_codes is not None:
        residual = None
    elif residual is None:
        raise ValueError("residual is needed without residual_codes")
    if (residual is not None and residual.shape[0] != n) or (
            prob is not None and prob.shape[0] != n) or (
            sample_weight is not None and sample_weight.shape[0] != n) or (
            sample_mask is not None and sample_mask.shape[0] != n):
        raise ValueError(f"residual, prob, sample_weight and sample_mask must have {n} "
                         "rows")
    sums = np.zeros((2, max(n_nodes, 1)), dtype=np.float64)
    cdef float64_t[:, ::1] s = sums
    with nogil:
        if n > 0 and n_nodes > 0:
            newton_sums(residual, prob, leaf_of_row, sample_weight, sample_mask, &s[0, 0],
                        &s[1, 0], n_nodes, n_threads, residual_codes, 1)
    return np.ascontiguousarray(sums[:, :n_nodes].T)


def binomial_apply(
    node_t[::1] nodes,
    const float64_t[:, ::1] sums,
    const int32_t[::1] leaf_of_row,
    const uint8_t[::1] sample_mask,
    const label_t[::1] y,
    const float64_t[::1] sample_weight,
    float64_t learning_rate,
    float64_t[::1] raw,
    float64_t[::1] prob,
    float64_t[::1] residual,
    row_stat_t[::1] row_stats,
    int n_threads,
    float64_t[::1] grid_maxima=None,
):
    """The second half of ``boosting_update`` (the binomial log-loss) from per-node
    sums ``sums`` (n_nodes, 2; :func:`newton_node_sums`' of every process, added):
    ``nodes[j].value`` the Newton step of every leaf (0 for inner nodes), then F +=
    eta * gamma, p, r and the row statistics of every row, in the chunks of
    ``boosting_update`` (the same bits). ``grid_maxima`` (float64, 2 values) receives
    this process's maxima of the next tree's grid, taken as the rows are updated, as
    ``boosting_update``'s: the largest abs(w * r) and w of ``row_stats``
    (``row_stats`` None: the largest abs(r), and 0).

    Returns
    -------
    (total, weight) : the in-bag sums (sum w L, sum w) of the log-losses after the
        update, each chunk's in row order, the chunks added in order (their ratio is
        ``boosting_update``'s loss).
    """
    cdef intp_t n = y.shape[0], n_nodes = nodes.shape[0], j
    cdef intp_t n_chunks = (n + CHUNK - 1) // CHUNK
    cdef float64_t total = 0.0, weight = 0.0
    if grid_maxima is not None and grid_maxima.shape[0] != 2:
        raise ValueError(f"grid_maxima must have 2 values, got {grid_maxima.shape[0]}")
    if sums.shape[0] != n_nodes or sums.shape[1] != 2:
        raise ValueError(f"sums must have shape ({n_nodes}, 2); got "
                         f"({sums.shape[0]}, {sums.shape[1]})")
    if leaf_of_row.shape[0] != n or raw.shape[0] != n or prob.shape[0] != n or \
            residual.shape[0] != n or (row_stats is not None and row_stats.shape[0] != n) \
            or (sample_weight is not None and sample_weight.shape[0] != n) or (
            sample_mask is not None and sample_mask.shape[0] != n):
        raise ValueError(f"every row array must have {n} rows")
    cdef float64_t* step = <float64_t*>malloc(max(n_nodes, 1) * sizeof(float64_t))
    # Each chunk's (sum w L, sum w), then (with grid_maxima) its two maxima.
    cdef float64_t* partial = <float64_t*>malloc(4 * max(n_chunks, 1) * sizeof(float64_t))
    cdef float64_t* chunk_max = NULL
    if step == NULL or partial == NULL:
        free(step)
        free(partial)
        raise MemoryError()
    try:
        if grid_maxima is not None:
            chunk_max = partial + 2 * n_chunks
        with nogil:
            for j in range(n_nodes):
                if nodes[j].feature < 0:
                    nodes[j].value = newton_step(sums[j, 0], sums[j, 1])
                else:
                    nodes[j].value = 0.0
                step[j] = learning_rate * nodes[j].value
            if n > 0:
                _binomial_chunks(y, sample_weight, sample_mask, raw, step, leaf_of_row,
                                 prob, residual, row_stats, partial, n_threads, chunk_max)
            chunk_sums(partial, n_chunks, &total, &weight)
            if chunk_max != NULL:
                chunk_maxima(chunk_max, n_chunks, &grid_maxima[0])
    finally:
        free(step)
        free(partial)
    return total, weight


def log1p_units(const float64_t[::1] x, float64_t[::1] out, bint wide=True):
    """out[i] = log(1 + x[i]) for x[i] in [0, 1], the logarithm of the training
    loss (``_log1p.h``: the same bits on every CPU); ``wide``: on four lanes where
    the CPU has them (the same numbers)."""
    if out.shape[0] != x.shape[0]:
        raise ValueError(f"out holds {out.shape[0]} values; expected {x.shape[0]}")
    if x.shape[0] == 0:
        return
    with nogil:
        gbc_log1p_units(&x[0], &out[0], x.shape[0], LOG1P_WIDE if wide else 0)


def log1p_wide():
    """Whether ``log1p_units`` runs on four lanes on this CPU."""
    return bool(LOG1P_WIDE)


def exp_block(const float64_t[::1] x, float64_t[::1] out, bint wide=True):
    """out[i] = exp(x[i]), the exponential of the fit and of prediction (``_exp.h``:
    fdlibm's method, the same bits on every CPU), a block at once on vector lanes;
    ``wide``: on four lanes where the CPU has them (the same numbers)."""
    if out.shape[0] != x.shape[0]:
        raise ValueError(f"out holds {out.shape[0]} values; expected {x.shape[0]}")
    if x.shape[0] == 0:
        return
    with nogil:
        gbc_exp_block(&x[0], &out[0], x.shape[0], EXP_WIDE if wide else 0)


def log_block(const float64_t[::1] x, float64_t[::1] out, bint wide=True):
    """out[i] = log(x[i]) (``gbc_log``'s bits), a block at once on vector lanes
    (``_exp.h``); ``wide``: on four lanes where the CPU has them (the same numbers)."""
    if out.shape[0] != x.shape[0]:
        raise ValueError(f"out holds {out.shape[0]} values; expected {x.shape[0]}")
    if x.shape[0] == 0:
        return
    with nogil:
        gbc_log_block(&x[0], &out[0], x.shape[0], EXP_WIDE if wide else 0)


def exp_wide():
    """Whether ``exp_block`` and ``log_block`` run on four lanes on this CPU."""
    return bool(EXP_WIDE)


def exp_each(const float64_t[::1] x, float64_t[::1] out):
    """out[i] = exp(x[i]) one value at a time (``gbc_exp``, the scalar definition)."""
    cdef intp_t i
    if out.shape[0] != x.shape[0]:
        raise ValueError(f"out holds {out.shape[0]} values; expected {x.shape[0]}")
    with nogil:
        for i in range(x.shape[0]):
            out[i] = gbc_exp(x[i])


def log_each(const float64_t[::1] x, float64_t[::1] out):
    """out[i] = log(x[i]) (``gbc_log``: fdlibm's method, the same bits on every CPU)."""
    cdef intp_t i
    if out.shape[0] != x.shape[0]:
        raise ValueError(f"out holds {out.shape[0]} values; expected {x.shape[0]}")
    with nogil:
        for i in range(x.shape[0]):
            out[i] = gbc_log(x[i])


def init_state(
    const label_t[::1] y,
    const float64_t[::1] sample_weight,
    float64_t[::1] raw,
    float64_t[::1] prob,
    float64_t[::1] residual,
    row_stat_t[::1] row_stats,
    bint exponential=False,
):
    """The residuals r and the row statistics of raw scores F (Algorithm 1, lines 1-3
    and 6; ``row_stats`` None: unit weights, none needed): of the log-loss, p =
    sigma(F) and r = y - p (``residual`` None: r not kept, only the row
    statistics made from it); with ``exponential``, r = y e^-F - (1 - y) e^F
    (``prob`` None).

    Returns
    -------
    n_overflow : int
        The exponential loss: rows whose e^|F| is beyond float64; 0 for the log-loss.
    """
    cdef intp_t i, n_overflow
    cdef float64_t w, p, r
    cdef float64_t sums[2]
    cdef bint with_stats = row_stats is not None, keep = residual is not None
    cdef const uint8_t[::1] every_row = None
    cdef const int32_t[::1] no_leaves = None
    if exponential and not keep:
        raise ValueError("the exponential loss keeps its residuals: residual is needed")
    _check_rows(y.shape[0], {"raw": raw} if exponential else {"raw": raw, "prob": prob},
                {"sample_weight": sample_weight, "residual": residual,
                 "row_stats": row_stats})
    if exponential:
        with nogil:
            n_overflow = exponential_rows(y, sample_weight, every_row, raw, NULL, no_leaves,
                                          residual, row_stats, sums)
        return n_overflow
    with nogil:
        for i in range(y.shape[0]):
            w = 1.0 if sample_weight is None else sample_weight[i]
            p = expit(raw[i])
            prob[i] = p
            r = y[i] - p
            if keep:
                residual[i] = r
            if with_stats:
                row_stats[i].wr = w * r
                row_stats[i].w = w
    return 0


cdef inline float64_t softplus(float64_t f) noexcept nogil:
    """log(1 + e^f) without overflow (NumPy's ``logaddexp(0, f)``'s formula, with
    gbc-core's exp and log1p: e^-|f| is in [0, 1], ``gbc_log1p_unit``'s range)."""
    if f > 0:
        return f + gbc_log1p_unit(gbc_exp(-f))
    return gbc_log1p_unit(gbc_exp(f))


def class_weight_sums(const int32_t[::1] codes, const float64_t[::1] sample_weight,
                      intp_t n_classes):
    """The weight of each class and the total weight, each summed in row order.

    Parameters
    ----------
    codes : int32 array of shape (n_samples,)
        Class codes 0 .. n_classes - 1 (already checked).
    sample_weight : float64 array or None
        None: every row weighs 1.

    Returns
    -------
    sums : ndarray of shape (n_classes,)
    total : float
    """
    sums = np.zeros(n_classes, dtype=np.float64)
    cdef float64_t[::1] s = sums
    cdef intp_t i
    cdef float64_t w, total = 0.0
    with nogil:
        for i in range(codes.shape[0]):
            w = 1.0 if sample_weight is None else sample_weight[i]
            s[codes[i]] += w
            total += w
    return sums, total


def prior_raw(const float64_t[::1] class_weight, float64_t total, float64_t eps,
              float64_t[::1] out):
    """The initial raw scores of ``init="prior"`` from the weight of each class.

    Two classes (``out`` of length 1): F0 = log(w_1 / w_0), 0 when a class has no
    weight. K >= 3 classes: F0_k = log p_k - (1/K) sum_j log p_j, p_k = w_k / total
    clipped to [eps, 1 - eps] (scikit-learn's prior); the mean in class order.
    """
    cdef intp_t k, n_classes = class_weight.shape[0]
    cdef float64_t p, mean = 0.0
    with nogil:
        if out.shape[0] == 1:
            if class_weight[0] > 0 and class_weight[1] > 0:
                out[0] = gbc_log(class_weight[1] / class_weight[0])
            else:
                out[0] = 0.0
        else:
            for k in range(n_classes):
                p = class_weight[k] / total
                if p < eps:
                    p = eps
                elif p > 1.0 - eps:
                    p = 1.0 - eps
                out[k] = gbc_log(p)
                mean += out[k]
            mean = mean / n_classes
            for k in range(n_classes):
                out[k] = out[k] - mean


def weight_total(const float64_t[::1] sample_weight):
    """The sum of the weights, in row order."""
    cdef intp_t i
    cdef float64_t total = 0.0
    with nogil:
        for i in range(sample_weight.shape[0]):
            total += sample_weight[i]
    return total


def binomial_log_proba(const float64_t[::1] raw, float64_t[:, ::1] out):
    """out[:, 1] = log sigma(F) = -log(1 + e^-F), out[:, 0] = log(1 - sigma(F)) =
    -log(1 + e^F): finite where the probability underflows."""
    cdef intp_t i
    cdef float64_t f
    with nogil:
        for i in range(raw.shape[0]):
            f = raw[i]
            out[i, 0] = -softplus(f)
            out[i, 1] = -softplus(-f)


cdef inline float64_t log_sum_exp(const float64_t* scores, intp_t n_classes) noexcept nogil:
    """log sum_k exp(scores[k]) of one row's scores, shifted by the largest (no
    overflow, no log(0)), the exponentials added in class order."""
    cdef intp_t k
    cdef float64_t top = scores[0], total = 0.0
    for k in range(1, n_classes):
        if scores[k] > top:
            top = scores[k]
    for k in range(n_classes):
        total = total + gbc_exp(scores[k] - top)
    return top + gbc_log(total)


def multinomial_log_proba(const float64_t[:, ::1] raw, float64_t[:, ::1] out):
    """out[i, k] = raw[i, k] - log sum_j exp(raw[i, j]) (``log_sum_exp``'s numbers;
    the exponentials of LOSS_BLOCK rows at once on vector lanes)."""
    cdef intp_t c, start, n = raw.shape[0]
    with nogil:
        for c in range((n + LOSS_BLOCK - 1) // LOSS_BLOCK):
            start = c * LOSS_BLOCK
            _shifted_exp_rows(raw, out, start, min(start + LOSS_BLOCK, n), True)


cdef inline float64_t log_one_minus(float64_t p) noexcept nogil:
    """log(1 - p) for p in [0, 1) from the kernels' own logarithms (the same bits on
    every CPU): p <= 1/2 as -log1p(p / (1 - p)) (``gbc_log1p_unit``, its argument
    in [0, 1]; accurate where 1 - p rounds away p's low bits), p > 1/2 as
    log(1 - p) (``gbc_log``; 1 - p exact there, Sterbenz)."""
    if p <= 0.5:
        return -gbc_log1p_unit(p / (1.0 - p))
    return gbc_log(1.0 - p)


def proba_log_loss(const float64_t[::1] y, const float64_t[::1] proba,
                   const float64_t[::1] sample_weight, float64_t eps):
    """(sum w l, sum w) of the log-losses l = -(y log p + (1 - y) log(1 - p)), p
    clipped to [eps, 1 - eps], summed in row order (``metrics.log_loss``), with the
    kernels' own logarithms (``log_one_minus``)."""
    cdef intp_t i
    cdef float64_t w, p, total = 0.0, weight = 0.0
    with nogil:
        for i in range(y.shape[0]):
            w = 1.0 if sample_weight is None else sample_weight[i]
            p = proba[i]
            if p < eps:
                p = eps
            elif p > 1.0 - eps:
                p = 1.0 - eps
            total += w * -(y[i] * gbc_log(p) + (1.0 - y[i]) * log_one_minus(p))
            weight += w
    return total, weight


def weighted_log_loss(const label_t[::1] y, const float64_t[::1] raw,
                      const float64_t[::1] sample_weight, const uint8_t[::1] rows=None):
    """Weighted mean log-loss of raw scores ``raw`` (stable for any magnitude) of the
    rows where ``rows`` (uint8, one per row; None: every row) is nonzero: the sums
    of ``log_loss_term`` in row order, the exponentials and the logarithms taken
    LOSS_BLOCK rows at a time on vector lanes (the same numbers as one at a time)."""
    cdef intp_t i, n = y.shape[0], m = 0, k
    cdef intp_t at[LOSS_BLOCK]
    cdef float64_t e[LOSS_BLOCK]
    cdef float64_t w, total = 0.0, weight = 0.0
    if raw.shape[0] != n or (sample_weight is not None and sample_weight.shape[0] != n) \
            or (rows is not None and rows.shape[0] != n):
        raise ValueError(f"raw, sample_weight and rows must have {n} rows")
    with nogil:
        for i in range(n + 1):
            if i < n and (rows is None or rows[i]):
                at[m] = i
                e[m] = -fabs(raw[i])
                m += 1
            if m == LOSS_BLOCK or (i == n and m > 0):
                gbc_exp_block(e, e, m, EXP_WIDE)
                gbc_log1p_units(e, e, m, LOG1P_WIDE)
                for k in range(m):
                    w = 1.0 if sample_weight is None else sample_weight[at[k]]
                    total += w * loss_of_log1p(y[at[k]], raw[at[k]], e[k])
                    weight += w
                m = 0
    return total / weight if weight > 0 else 0.0


cdef void _expit_rows(const float64_t[::1] raw, float64_t[:, ::1] out, intp_t start,
                      intp_t stop) noexcept nogil:
    """out[i, 1] = sigma(raw[i]) and out[i, 0] = 1 - out[i, 1] for the rows ``start ..
    stop - 1`` (``expit``'s values, bit for bit): the exponentials e^-|F| of
    LOSS_BLOCK rows at once on vector lanes (``gbc_exp_block``)."""
    cdef float64_t e[LOSS_BLOCK]
    cdef float64_t p
    cdef intp_t i, b = start, m
    while b < stop:
        m = min(<intp_t>LOSS_BLOCK, stop - b)
        for i in range(b, b + m):
            e[i - b] = -fabs(raw[i])
        gbc_exp_block(e, e, m, EXP_WIDE)
        for i in range(b, b + m):
            p = expit_of_exp(raw[i], e[i - b])
            out[i, 1] = p
            out[i, 0] = 1.0 - p
        b += m


def proba_from_raw(const float64_t[::1] raw, float64_t[:, ::1] out, int n_threads):
    """out[:, 1] = sigma(raw) and out[:, 0] = 1 - out[:, 1] (paper eq. 3), in one pass
    (in chunks of rows on ``n_threads`` threads: elementwise, the same numbers)."""
    cdef intp_t c, start, n = raw.shape[0]
    cdef intp_t n_chunks = (n + CHUNK - 1) // CHUNK
    with nogil:
        if n < 200000 or n_threads <= 1:  # too short to pay for a parallel region
            _expit_rows(raw, out, 0, n)
        else:
            GBC_TRACE_REGION_BEGIN(GBC_TR_LEAVES, n)
            for c in prange(n_chunks, schedule="static", num_threads=n_threads):
                start = c * CHUNK
                _expit_rows(raw, out, start, min(start + CHUNK, n))
            GBC_TRACE_REGION_END(GBC_TR_LEAVES, n)


# --------------------------------------------------------------- multinomial
# K >= 3 classes: K raw scores per row, p = softmax(F), one tree per class and
# iteration fitted to r_k = [y = k] - p_k, leaf values of the multinomial Newton step
# (K - 1)/K sum w r_k / sum w p_k (1 - p_k) (Friedman's, as scikit-learn's
# GradientBoostingClassifier). Arrays of K rows (one per class, contiguous) hold the
# per-class scores, probabilities and residuals of the training rows.

cdef void _softmax_rows(
    float64_t[:, ::1] raw,
    const int32_t[::1] y,
    const float64_t[::1] sample_weight,
    const uint8_t[::1] sample_mask,
    float64_t[:, ::1] prob,
    float64_t[:, ::1] residual,
    intp_t start,
    intp_t stop,
    float64_t* loss_and_weight,
    intp_t step_class,
    const float64_t* steps,
    const int32_t* leaf_of_row,
) noexcept nogil:
    """prob[:, i] = softmax(raw[:, i]) (each row's scores shifted by their largest,
    the exponentials added in class order), r_k = [y = k] - p_k (``residual`` None:
    none) for the rows ``start .. stop - 1``, and the in-bag sums (sum w (log
    sum_k e^F_k - F_y), sum w), in row order, into ``loss_and_weight``. With
    ``steps`` (not NULL), first F_c += ``steps[leaf_of_row[i]]`` for the class c =
    ``step_class`` (``multinomial_tree_update``'s update of F_c, the same addition).

    LOSS_BLOCK rows at a time: the exponentials of one class's scores of the block
    are taken at once on vector lanes (``gbc_exp_block``: the same numbers as one
    at a time), into that class's row of ``prob``, and the logarithms of the
    block's totals likewise (``gbc_log_block``)."""
    cdef float64_t top[LOSS_BLOCK]
    cdef float64_t total[LOSS_BLOCK]
    cdef float64_t shifted[LOSS_BLOCK]
    cdef intp_t n_classes = raw.shape[0], i, j, k, b = start, m
    cdef float64_t w, loss = 0.0, weight = 0.0
    while b < stop:
        m = min(<intp_t>LOSS_BLOCK, stop - b)
        if steps != NULL:
            for j in range(m):
                raw[step_class, b + j] = raw[step_class, b + j] + steps[leaf_of_row[b + j]]
        for j in range(m):
            top[j] = raw[0, b + j]
            total[j] = 0.0
        for k in range(1, n_classes):
            for j in range(m):
                if raw[k, b + j] > top[j]:
                    top[j] = raw[k, b + j]
        for k in range(n_classes):
            for j in range(m):
                shifted[j] = raw[k, b + j] - top[j]
            gbc_exp_block(shifted, &prob[k, b], m, EXP_WIDE)
            for j in range(m):
                total[j] = total[j] + prob[k, b + j]
        for k in range(n_classes):
            for j in range(m):
                prob[k, b + j] = prob[k, b + j] / total[j]
        gbc_log_block(total, shifted, m, EXP_WIDE)  # log sum_k e^(F_k - top)
        if residual is not None:
            for k in range(n_classes):
                for j in range(m):
                    residual[k, b + j] = gbc_pick(y[b + j] == k, 1.0, 0.0) - prob[k, b + j]
        for j in range(m):
            i = b + j
            if sample_mask is None or sample_mask[i]:
                w = 1.0 if sample_weight is None else sample_weight[i]
                loss = loss + w * ((top[j] + shifted[j]) - raw[y[i], i])
                weight = weight + w
        b += m
    loss_and_weight[0] = loss
    loss_and_weight[1] = weight


cdef int _step_pointers(
    intp_t n_rows, intp_t n_classes, intp_t step_class, const float64_t[::1] steps,
    const int32_t[::1] leaf_of_row, const float64_t** steps_at,
    const int32_t** leaf_at,
) except -1:
    """Check ``multinomial_state``'s step arguments; point ``steps_at`` and
    ``leaf_at`` at the steps and the leaf of each row (NULL without steps)."""
    steps_at[0] = NULL
    leaf_at[0] = NULL
    if steps is None and (leaf_of_row is not None or step_class != -1):
        raise ValueError("step_class and leaf_of_row given without steps")
    if steps is not None:
        if leaf_of_row is None or leaf_of_row.shape[0] != n_rows:
            raise ValueError(f"steps need the leaf of each of the {n_rows} rows")
        if not 0 <= step_class < n_classes:
            raise ValueError(f"step_class must be a class of 0 .. {n_classes - 1}, "
                             f"got {step_class}")
        if n_rows > 0:
            steps_at[0] = &steps[0]
            leaf_at[0] = &leaf_of_row[0]
    return 0


def multinomial_state(raw, y, sample_weight, sample_mask, prob, residual, n_threads,
                      step_class=-1, steps=None, leaf_of_row=None):
    """p = softmax(F) and r_k = [y = k] - p_k for every row, in one pass; with
    ``steps``, first the update of one class's scores by its tree in the same pass.

    Parameters
    ----------
    raw, prob, residual : float64 arrays of shape (n_classes, n_samples)
        The raw scores F (input; written only with ``steps``) and the
        probabilities and residuals (output); ``residual`` None: p alone
        (``class_residual`` makes one class's r from p, the same numbers).
    y : int32 array of shape (n_samples,)
        Class codes 0 .. n_classes - 1.
    sample_weight : float64 array or None
    sample_mask : uint8 array or None
        In-bag rows of the loss (None: every row).
    n_threads : int
        Threads of the pass over fixed row chunks (the numbers do not depend on it).
    step_class : int, default=-1
        With ``steps``: the class c whose scores take its tree's steps.
    steps : float64 array of shape (n_nodes,), optional
        The step of each node of class c's tree (``multinomial_tree_update``'s
        ``steps``): each row's F_c += ``steps[leaf_of_row[i]]`` before its softmax
        (the update that kernel leaves out, the same addition), one pass over the
        rows fewer than the update and the softmax one after the other.
    leaf_of_row : int32 array of shape (n_samples,), optional
        With ``steps``: the leaf of every row in class c's tree (the grower's
        ``node_of_row``, each a node of ``steps``, as ``multinomial_tree_update``
        takes it).

    Returns
    -------
    loss : float
        Weighted mean multinomial log-loss -log p_y of the in-bag rows.
    """
    partial = np.empty(2 * multinomial_chunk_count(len(y)), dtype=np.float64)
    multinomial_state_part(raw, y, sample_weight, sample_mask, prob, residual, n_threads,
                           0, partial.shape[0] // 2, partial, step_class, steps,
                           leaf_of_row)
    return multinomial_parts_loss(partial)


def multinomial_chunk_count(intp_t n_rows):
    """The row chunks of ``multinomial_state``'s pass (CHUNK rows each), of which
    ``multinomial_state_part`` takes ranges.

    Parameters
    ----------
    n_rows : int
        Rows of the pass.

    Returns
    -------
    int
        ceil(n_rows / CHUNK).
    """
    return (n_rows + CHUNK - 1) // CHUNK


def multinomial_state_part(
    float64_t[:, ::1] raw,
    const int32_t[::1] y,
    const float64_t[::1] sample_weight,
    const uint8_t[::1] sample_mask,
    float64_t[:, ::1] prob,
    float64_t[:, ::1] residual,
    int n_threads,
    intp_t chunk_start,
    intp_t chunk_stop,
    float64_t[::1] partial,
    intp_t step_class=-1,
    const float64_t[::1] steps=None,
    const int32_t[::1] leaf_of_row=None,
):
    """``multinomial_state`` over the row chunks ``chunk_start .. chunk_stop - 1``
    only, their loss sums into ``partial``: parts of the pass run by different
    threads (the class growers side by side, each on its own threads), and then
    ``multinomial_parts_loss(partial)`` is ``multinomial_state``'s loss, bit for
    bit (each chunk's numbers are its rows' alone; the chunks are added in chunk
    order).

    Parameters
    ----------
    raw, y, sample_weight, sample_mask, prob, residual, n_threads, step_class, steps, leaf_of_row
        As ``multinomial_state``'s.
    chunk_start, chunk_stop : int
        The chunks of this part, ``0 <= chunk_start <= chunk_stop <=
        multinomial_chunk_count(n_samples)``.
    partial : float64 array of shape (2 * multinomial_chunk_count(n_samples),)
        Chunk c's weighted loss and weight are written into ``partial[2 c]`` and
        ``partial[2 c + 1]`` (the other chunks' entries are left as they are).
    """
    cdef intp_t n = y.shape[0]
    cdef intp_t n_chunks = (n + CHUNK - 1) // CHUNK
    cdef intp_t c, start
    cdef const float64_t* steps_at
    cdef const int32_t* leaf_at
    _step_pointers(n, raw.shape[0], step_class, steps, leaf_of_row, &steps_at, &leaf_at)
    if not 0 <= chunk_start <= chunk_stop <= n_chunks:
        raise ValueError(f"chunks {chunk_start} .. {chunk_stop} are not a range of the "
                         f"{n_chunks} chunks of {n} rows")
    if partial.shape[0] != 2 * n_chunks:
        raise ValueError(f"partial must hold 2 x {n_chunks} sums, got {partial.shape[0]}")
    if chunk_start == chunk_stop:
        return
    with nogil:
        if n < 200000:  # too short (in all) to pay for a parallel region
            n_threads = 1
        GBC_TRACE_REGION_BEGIN(GBC_TR_LEAVES, min(chunk_stop * CHUNK, n) - chunk_start * CHUNK)
        for c in prange(chunk_start, chunk_stop, schedule="dynamic", num_threads=n_threads):
            GBC_TRACE_TASK_BEGIN(GBC_TR_LEAF_SOFTMAX, c)
            start = c * CHUNK
            _softmax_rows(raw, y, sample_weight, sample_mask, prob, residual, start,
                          min(start + CHUNK, n), &partial[2 * c], step_class, steps_at,
                          leaf_at)
            GBC_TRACE_TASK_END(GBC_TR_LEAF_SOFTMAX, c)
        GBC_TRACE_REGION_END(GBC_TR_LEAVES, min(chunk_stop * CHUNK, n) - chunk_start * CHUNK)


def multinomial_parts_loss(const float64_t[::1] partial):
    """The loss of a pass made in parts, from their chunks' sums.

    Parameters
    ----------
    partial : float64 array of shape (2 * n_chunks,)
        Every chunk's weighted loss and weight (``multinomial_state_part``'s).

    Returns
    -------
    float
        The sums added in chunk order, loss over weight (0 where the weight is 0):
        ``multinomial_state``'s loss, bit for bit.
    """
    if partial.shape[0] % 2:
        raise ValueError(f"partial must hold 2 sums per chunk, got {partial.shape[0]}")
    if partial.shape[0] == 0:
        return chunk_mean(NULL, 0)
    return chunk_mean(&partial[0], partial.shape[0] // 2)


def class_residual(const float64_t[::1] prob, const int32_t[::1] y, int32_t k,
                   float64_t[::1] out, int n_threads=1, float64_t[::1] maxima=None):
    """out = r_k = [y = k] - p_k of every row (``multinomial_state``'s residual of
    class k, bit for bit), in chunks of rows on ``n_threads`` threads (one below
    MIN_PARALLEL_ROWS rows); with ``maxima`` (2 values), the largest abs(r_k) into
    ``maxima[0]`` and 0 into ``maxima[1]`` (the grid maxima of a tree grown on r_k
    with unit weights: ``TreeGrower.grid_maxima``).

    Parameters
    ----------
    prob : float64 array of shape (n_samples,)
        p_k of every row.
    y : int32 array of shape (n_samples,)
        Class codes.
    k : int
        The class.
    out : float64 array of shape (n_samples,)
        Where r_k is written.
    n_threads : int, default=1
    maxima : float64 array of shape (2,), optional
        Where the largest abs(r_k) (and 0) is written.
    """
    cdef intp_t i, c, n = prob.shape[0], n_chunks = (n + CHUNK - 1) // CHUNK
    cdef float64_t r, top
    if y.shape[0] != n or out.shape[0] != n:
        raise ValueError(f"prob, y and out must have one length, got {n}, "
                         f"{y.shape[0]} and {out.shape[0]}")
    if maxima is not None and maxima.shape[0] != 2:
        raise ValueError(f"maxima must have 2 values, got {maxima.shape[0]}")
    cdef float64_t[::1] chunk_max = np.zeros(max(n_chunks, 1), dtype=np.float64)
    with nogil:
        if n < MIN_PARALLEL_ROWS:
            n_threads = 1
        GBC_TRACE_REGION_BEGIN(GBC_TR_LEAVES, n)
        for c in prange(n_chunks, schedule="dynamic", num_threads=max(n_threads, 1)):
            top = 0.0
            for i in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
                r = gbc_pick(y[i] == k, 1.0, 0.0) - prob[i]
                out[i] = r
                top = max(top, fabs(r))
            chunk_max[c] = top
        GBC_TRACE_REGION_END(GBC_TR_LEAVES, n)
        if maxima is not None:
            maxima[0] = 0.0
            maxima[1] = 0.0
            for c in range(n_chunks):
                maxima[0] = max(maxima[0], chunk_max[c])


def row_stats_of(const float64_t[::1] residual, const float64_t[::1] sample_weight,
                 row_stat_t[::1] row_stats):
    """w * r and w of each row: what a tree fitted to ``residual`` is grown on."""
    cdef intp_t i
    cdef float64_t w
    with nogil:
        for i in range(residual.shape[0]):
            w = 1.0 if sample_weight is None else sample_weight[i]
            row_stats[i].wr = w * residual[i]
            row_stats[i].w = w


def multinomial_tree_update(
    node_t[::1] nodes,
    const int32_t[::1] leaf_of_row,
    const uint8_t[::1] sample_mask,
    const float64_t[::1] residual,
    const float64_t[::1] prob,
    const float64_t[::1] sample_weight,
    float64_t factor,
    float64_t learning_rate,
    float64_t[::1] raw,
    const int32_t[::1] codes=None,
    int32_t k=0,
    const float64_t[::1] log_odds=None,
    int n_threads=1,
    const int32_t[::1] labels=None,
    float64_t[::1] steps=None,
):
    """Leaf values of the tree of one class, then F_k += eta * gamma for every row
    (or, with ``steps``, eta * gamma of each node into ``steps`` instead).

    Sets ``nodes[j].value = gamma_j = newton_step(factor * sum w r, sum w p (1 - p))``
    over the in-bag rows of leaf j (``factor`` = (K - 1)/K), inner nodes to 0, and
    adds ``learning_rate * gamma`` of its leaf to the raw score of every row. With
    the class codes ``codes``, the class ``k`` of the tree and the log-odds of class
    k against the others at the start of the iteration (``log_odds``,
    ``class_log_odds``), gamma_j is instead the exact minimiser of the leaf's
    multinomial log-loss in F_k (``exact_leaf_values``). On ``n_threads`` threads:
    the leaf sums in row blocks (``newton_sums``), the update of F_k elementwise,
    the same numbers on any number of threads. ``residual`` None: the Newton step
    makes each row's r from its class code in ``labels``, r = [label = k] - p
    (``class_residual``'s, bit for bit; the exact solve reads no residual).
    ``steps`` (room for a value per node): F_k is left as it is and each node's
    step ``learning_rate * gamma`` is written there, for ``multinomial_state`` to
    add as it takes the softmax (its ``steps``: the same addition, in the pass
    over the rows that follows the last tree of an iteration anyway).
    """
    cdef intp_t n = leaf_of_row.shape[0], n_nodes = nodes.shape[0], i
    if residual is None and codes is None and labels is None:
        raise ValueError("multinomial_tree_update needs the residuals or the labels")
    if ((residual is not None and residual.shape[0] != n)
            or (labels is not None and labels.shape[0] != n) or prob.shape[0] != n
            or raw.shape[0] != n):
        raise ValueError(f"residual, labels, prob and raw must have {n} rows")
    if steps is not None and steps.shape[0] < n_nodes:
        raise ValueError(f"steps holds {steps.shape[0]} values; the tree has {n_nodes} "
                         "nodes")
    cdef float64_t* sums = <float64_t*>malloc(2 * max(n_nodes, 1) * sizeof(float64_t))
    if sums == NULL:
        raise MemoryError()
    try:
        leaf_steps(nodes, sums, learning_rate, leaf_of_row, sample_mask, sample_weight,
                   factor, residual, prob, codes, k, log_odds, LOGISTIC, n_threads,
                   labels)
        if steps is not None:
            for i in range(n_nodes):
                steps[i] = sums[i]
            return
        with nogil:
            if n < MIN_PARALLEL_ROWS:
                n_threads = 1
            GBC_TRACE_REGION_BEGIN(GBC_TR_LEAVES, n)
            for i in prange(n, schedule="dynamic", chunksize=CHUNK,
                            num_threads=max(n_threads, 1)):
                raw[i] = raw[i] + sums[leaf_of_row[i]]
            GBC_TRACE_REGION_END(GBC_TR_LEAVES, n)
    finally:
        free(sums)


cdef void _shifted_exp_rows(const float64_t[:, ::1] raw, float64_t[:, ::1] out,
                            intp_t start, intp_t stop, bint log_proba) noexcept nogil:
    """out[i, k] = exp(raw[i, k] - max_k raw[i, k]) for the rows ``start .. stop - 1``
    of scores of shape (n_samples, n_classes), the exponentials of the rows taken at
    once on vector lanes (``gbc_exp_block``); then with ``log_proba`` out[i, k] =
    raw[i, k] - log sum_j exp(raw[i, j]) (``log_sum_exp``'s numbers), else out[i]
    divided by its sum (softmax). Sums in class order; ``out`` is not ``raw``."""
    cdef intp_t i, k, n_classes = raw.shape[1]
    cdef float64_t top, total
    if stop <= start or n_classes == 0:
        return
    for i in range(start, stop):
        top = raw[i, 0]
        for k in range(1, n_classes):
            if raw[i, k] > top:
                top = raw[i, k]
        for k in range(n_classes):
            out[i, k] = raw[i, k] - top
    gbc_exp_block(&out[start, 0], &out[start, 0], (stop - start) * n_classes, EXP_WIDE)
    for i in range(start, stop):
        total = 0.0
        for k in range(n_classes):
            total = total + out[i, k]
        if not log_proba:
            for k in range(n_classes):
                out[i, k] = out[i, k] / total
            continue
        top = raw[i, 0]
        for k in range(1, n_classes):
            if raw[i, k] > top:
                top = raw[i, k]
        total = top + gbc_log(total)
        for k in range(n_classes):
            out[i, k] = raw[i, k] - total


def softmax(const float64_t[:, ::1] raw, float64_t[:, ::1] out, int n_threads):
    """out[i] = softmax(raw[i]) for raw scores of shape (n_samples, n_classes): each
    row's scores shifted by their largest, the exponentials added in class order
    (LOSS_BLOCK rows at a time, their exponentials at once on vector lanes; the
    blocks on ``n_threads`` threads: elementwise, the same numbers)."""
    cdef intp_t c, start, n = raw.shape[0]
    cdef intp_t n_blocks = (n + LOSS_BLOCK - 1) // LOSS_BLOCK
    with nogil:
        if n < 200000:
            n_threads = 1
        GBC_TRACE_REGION_BEGIN(GBC_TR_LEAVES, n)
        for c in prange(n_blocks, schedule="static", num_threads=max(n_threads, 1)):
            start = c * LOSS_BLOCK
            _shifted_exp_rows(raw, out, start, min(start + LOSS_BLOCK, n), False)
        GBC_TRACE_REGION_END(GBC_TR_LEAVES, n)


def multinomial_log_loss(const int32_t[::1] y, const float64_t[:, ::1] raw,
                         const float64_t[::1] sample_weight):
    """Weighted mean of -log softmax(raw[i])[y[i]] for raw of shape (n, n_classes)."""
    cdef intp_t i, n = raw.shape[0], n_classes = raw.shape[1]
    cdef float64_t w, loss = 0.0, weight = 0.0
    with nogil:
        for i in range(n):
            w = 1.0 if sample_weight is None else sample_weight[i]
            loss += w * (log_sum_exp(&raw[i, 0], n_classes) - raw[i, y[i]])
            weight += w
    return loss / weight if weight > 0 else 0.0


# --------------------------------------------------------------- exponential
# Two classes, AdaBoost's loss L = y e^-F + (1 - y) e^F (y = 0 or 1), scikit-learn's
# ExponentialLoss: trees fitted to r = -dL/dF = y e^-F - (1 - y) e^F, leaf values
# gamma_j = sum w r / sum w h with the Hessian h = y e^-F + (1 - y) e^F = |r|
# (scikit-learn's ``_update_terminal_regions``), F += eta * gamma, p = sigma(2F).
# Each e^F is ``gbc_exp(F)`` once per row, with scikit-learn's own formulas: for y = 1,
# L = 1 / e^F and r = 1 / e^F; for y = 0, L = e^F and r = -e^F.

cdef inline float64_t exponential_residual(float64_t y, float64_t f,
                                           float64_t* loss) noexcept nogil:
    """r = y e^-F - (1 - y) e^F of class code y (0.0 or 1.0); ``loss`` gets L = |r|."""
    cdef float64_t tmp = gbc_exp(f)
    if y != 0.0:
        loss[0] = 1.0 / tmp
        return loss[0]
    loss[0] = tmp
    return -tmp


cdef intp_t exponential_rows(
    const label_t[::1] y,
    const float64_t[::1] sample_weight,
    const uint8_t[::1] sample_mask,
    float64_t[::1] raw,
    const float64_t* step,
    const int32_t[::1] leaf_of_row,
    float64_t[::1] residual,
    row_stat_t[::1] row_stats,
    float64_t* loss_and_weight,
) noexcept nogil:
    """F += step[leaf] (when ``step`` is given), then r, the row statistics and the
    in-bag sums (sum w L, sum w) for every row, in row order. Returns the number of
    rows whose e^|F| is beyond float64 (L infinite). ``row_stats`` None: unit
    weights (the tree reads the residuals themselves)."""
    cdef intp_t i, n_overflow = 0
    cdef float64_t w, f, r, loss = 0.0, total = 0.0, weight = 0.0
    cdef bint with_stats = row_stats is not None
    for i in range(y.shape[0]):
        w = 1.0 if sample_weight is None else sample_weight[i]
        f = raw[i]
        if step != NULL:
            f = f + step[leaf_of_row[i]]
            raw[i] = f
        r = exponential_residual(y[i], f, &loss)
        if not loss <= DBL_MAX:
            n_overflow += 1
        residual[i] = r
        if with_stats:
            row_stats[i].wr = w * r
            row_stats[i].w = w
        if sample_mask is None or sample_mask[i]:
            total += w * loss
            weight += w
    loss_and_weight[0] = total
    loss_and_weight[1] = weight
    return n_overflow


def exponential_loss(const float64_t[::1] y, const float64_t[::1] raw,
                     const float64_t[::1] sample_weight):
    """Weighted mean of y e^-F + (1 - y) e^F (inf where e^|F| is beyond float64)."""
    cdef intp_t i
    cdef float64_t w, loss = 0.0, total = 0.0, weight = 0.0
    with nogil:
        for i in range(y.shape[0]):
            w = 1.0 if sample_weight is None else sample_weight[i]
            exponential_residual(y[i], raw[i], &loss)
            total += w * loss
            weight += w
    return total / weight if weight > 0 else 0.0


# ------------------------------------------------------------ links of an init
cdef inline float64_t clip(float64_t p, float64_t eps) noexcept nogil:
    if p < eps:
        return eps
    if p > 1.0 - eps:
        return 1.0 - eps
    return p


def raw_from_proba(const float64_t[:, ::1] proba, float64_t scale, float64_t eps,
                   float64_t[:, ::1] out):
    """Initial raw scores of the class probabilities of an ``init`` estimator
    (scikit-learn's ``_init_raw_predictions``): each probability clipped to
    [eps, 1 - eps], then the loss's link.

    Two classes (``out`` of shape (n, 1)): F = scale * log(p / (1 - p)) of the
    probability p of class 1 (``scale`` 1 for the log-loss, 1/2 for the
    exponential loss). K >= 3 classes (``out`` of shape (n, K)): F_k = log p_k -
    (1/K) sum_j log p_j, the mean in class order.
    """
    cdef intp_t i, k, n = proba.shape[0], n_classes = proba.shape[1]
    cdef float64_t p, mean
    with nogil:
        if out.shape[1] == 1:
            for i in range(n):
                p = clip(proba[i, 1], eps)
                out[i, 0] = scale * gbc_log(p / (1.0 - p))
        else:
            for i in range(n):
                mean = 0.0
                for k in range(n_classes):
                    out[i, k] = gbc_log(clip(proba[i, k], eps))
                    mean += out[i, k]
                mean = mean / n_classes
                for k in range(n_classes):
                    out[i, k] = out[i, k] - mean


cdef intp_t _top_down_order(const node_t[::1] nodes, int32_t* order) noexcept nogil:
    """The nodes reachable from the root, parents before children (breadth
    first); returns how many."""
    cdef intp_t head = 0, n = 1
    cdef int32_t i
    order[0] = 0
    while head < n:
        i = order[head]
        head += 1
        if nodes[i].feature >= 0 and nodes[i].left >= 0:
            order[n] = nodes[i].left
            order[n + 1] = nodes[i].right
            n += 2
    return n


def subtree_sums(const node_t[::1] nodes, float64_t[:, ::1] sums):
    """Every inner node's row of ``sums`` (n_nodes, k) as the sum of its children's,
    bottom up (the leaves' rows as given; children's sums added left then right:
    the same numbers in every process that holds the same leaf sums)."""
    cdef intp_t m = nodes.shape[0], n, q, c, k = sums.shape[1]
    cdef int32_t i
    if sums.shape[0] != m:
        raise ValueError("sums must have one row per node")
    if m == 0:
        return
    order_array = np.empty(m, dtype=np.int32)
    cdef int32_t[::1] order = order_array
    with nogil:
        n = _top_down_order(nodes, &order[0])
        for q in range(n - 1, -1, -1):
            i = order[q]
            if nodes[i].feature >= 0 and nodes[i].left >= 0:
                for c in range(k):
                    sums[i, c] = sums[nodes[i].left, c] + sums[nodes[i].right, c]


cdef inline float64_t _clip(float64_t v, float64_t lo, float64_t hi) noexcept nogil:
    return min(max(v, lo), hi)


def monotone_bounds(const node_t[::1] nodes, const float64_t[::1] node_value,
                    const signed char[::1] monotonic, float64_t[::1] lower,
                    float64_t[::1] upper):
    """The bounds of every node's value under monotonic constraints, top down
    (scikit-learn's HistGradientBoosting and LightGBM's rule): the root's are
    (-inf, inf); the children of a split on an unconstrained feature inherit their
    parent's; for a split on a constrained feature, with v_left and v_right the
    children's values ``node_value`` clipped to the parent's bounds and
    mid = (v_left + v_right) / 2, the child on the constraint's low side (left for
    +1, right for -1) gets (parent's lower, mid) and the other (mid, parent's
    upper). A leaf value clipped to its bounds then keeps every leaf on the low side
    of a constrained split at or below every leaf on its high side."""
    cdef intp_t m = nodes.shape[0], n, q
    cdef int32_t i, lo_child, hi_child
    cdef float64_t v_left, v_right, mid
    cdef signed char c
    if node_value.shape[0] != m or lower.shape[0] != m or upper.shape[0] != m:
        raise ValueError("node_value, lower and upper must have one value per node")
    if m == 0:
        return
    order_array = np.empty(m, dtype=np.int32)
    cdef int32_t[::1] order = order_array
    with nogil:
        n = _top_down_order(nodes, &order[0])
        lower[0] = -INFINITY
        upper[0] = INFINITY
        for q in range(n):
            i = order[q]
            if nodes[i].feature < 0 or nodes[i].left < 0:
                continue
            c = monotonic[nodes[i].feature]
            if c == 0:
                lower[nodes[i].left] = lower[i]
                upper[nodes[i].left] = upper[i]
                lower[nodes[i].right] = lower[i]
                upper[nodes[i].right] = upper[i]
                continue
            v_left = _clip(node_value[nodes[i].left], lower[i], upper[i])
            v_right = _clip(node_value[nodes[i].right], lower[i], upper[i])
            mid = (v_left + v_right) / 2.0
            lo_child = nodes[i].left if c > 0 else nodes[i].right
            hi_child = nodes[i].right if c > 0 else nodes[i].left
            lower[lo_child] = lower[i]
            upper[lo_child] = mid
            lower[hi_child] = mid
            upper[hi_child] = upper[i]
