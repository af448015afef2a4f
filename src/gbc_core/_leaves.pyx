"""Leaf values (paper eq. 1) and the fused per-iteration update of F, p and r."""
cimport cython
from cython.parallel cimport prange
from libc.math cimport exp, log1p, fabs
from libc.stdlib cimport malloc, free

import numpy as np

from ._common cimport (
    float64_t, int32_t, uint8_t, intp_t, node_t, row_stat_t, HESSIAN_EPSILON,
)

# Rows per chunk of the parallel reductions. Fixed, so that sums are formed in the
# same order whatever the number of threads (bit-identical results for any n_jobs).
cdef enum:
    CHUNK = 8192


cdef inline float64_t expit(float64_t f) noexcept nogil:
    """Logistic function sigma(F) (paper eq. 3), without overflow for any F."""
    cdef float64_t e
    if f >= 0:
        return 1.0 / (1.0 + exp(-f))
    e = exp(f)
    return e / (1.0 + e)


cdef inline float64_t log_loss_term(float64_t y, float64_t f) noexcept nogil:
    """-(y log p + (1 - y) log(1 - p)) with p = sigma(f), computed stably as
    log(1 + e^f) - y f (paper eq. 5)."""
    if f > 0:
        return f + log1p(exp(-f)) - y * f
    return log1p(exp(f)) - y * f


cdef inline float64_t expit_and_loss(float64_t y, float64_t f, float64_t* loss) noexcept nogil:
    """sigma(f) and log_loss_term(y, f) from one exponential (the same values, bit for
    bit, as ``expit`` and ``log_loss_term``: both use e = exp(-|f|))."""
    cdef float64_t e = exp(-fabs(f))
    if f > 0:
        loss[0] = f + log1p(e) - y * f
    else:
        loss[0] = log1p(e) - y * f
    if f >= 0:
        return 1.0 / (1.0 + e)
    return e / (1.0 + e)


cdef int newton_sums(
    const float64_t[::1] residual,
    const float64_t[::1] prob,
    const int32_t[::1] leaf,
    const float64_t[::1] sample_weight,
    const uint8_t[::1] sample_mask,
    float64_t* numerator,
    float64_t* denominator,
) except -1 nogil:
    """Accumulate sum w*r and sum w*p*(1-p) per leaf (paper eq. 1), in row order."""
    cdef intp_t i
    cdef int32_t j
    cdef float64_t w, p
    for i in range(residual.shape[0]):
        if sample_mask is not None and not sample_mask[i]:
            continue
        w = 1.0 if sample_weight is None else sample_weight[i]
        j = leaf[i]
        p = prob[i]
        numerator[j] += w * residual[i]
        denominator[j] += w * p * (1.0 - p)
    return 0


cdef inline float64_t newton_step(float64_t numerator, float64_t denominator) noexcept nogil:
    """gamma_j = sum r / sum p(1-p) (paper eq. 1); 0 where the denominator vanishes."""
    if fabs(denominator) < HESSIAN_EPSILON:
        return 0.0
    return numerator / denominator


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
        newton_sums(residual, prob, leaf, sample_weight, None, &num[0], &den[0])
        for j in range(n_leaves):
            g[j] = newton_step(num[j], den[j])
    return gamma


def boosting_update(
    node_t[::1] nodes,
    const int32_t[::1] leaf_of_row,
    const uint8_t[::1] sample_mask,
    const float64_t[::1] y,
    const float64_t[::1] sample_weight,
    float64_t learning_rate,
    float64_t[::1] raw,
    float64_t[::1] prob,
    float64_t[::1] residual,
    row_stat_t[::1] row_stats,
    int n_threads,
):
    """One boosting step after the tree of iteration m has been grown.

    Sets ``nodes[j].value = gamma_j`` for every leaf (paper eq. 1, on in-bag rows),
    then in one pass over the rows: F += eta * gamma (eq. 2), p = sigma(F) (eq. 3),
    r = y - p (Algorithm 1, line 6) and the row statistics of the next split search.

    Returns
    -------
    loss : float
        Weighted mean log-loss of the in-bag rows after the update.
    """
    cdef intp_t n = y.shape[0], n_nodes = nodes.shape[0]
    cdef intp_t j, i, c, start, stop
    cdef intp_t n_chunks = (n + CHUNK - 1) // CHUNK
    cdef float64_t w, f, p, r, loss, chunk_loss, chunk_weight, total_loss = 0.0, total_weight = 0.0
    cdef float64_t* num = <float64_t*>malloc(2 * n_nodes * sizeof(float64_t))
    cdef float64_t* partial = <float64_t*>malloc(2 * max(n_chunks, 1) * sizeof(float64_t))
    cdef float64_t* step = NULL
    if num == NULL or partial == NULL:
        free(num)
        free(partial)
        raise MemoryError()
    try:
        with nogil:
            for j in range(2 * n_nodes):
                num[j] = 0.0
            newton_sums(residual, prob, leaf_of_row, sample_weight, sample_mask,
                        num, num + n_nodes)
            for j in range(n_nodes):
                if nodes[j].feature < 0:
                    nodes[j].value = newton_step(num[j], num[n_nodes + j])
                else:
                    nodes[j].value = 0.0
                # Re-use the numerator buffer for the scaled step eta * gamma_j.
                num[j] = learning_rate * nodes[j].value
            step = num
            if n < 200000:  # too short to pay for a parallel region
                n_threads = 1
            for c in prange(n_chunks, schedule="static", num_threads=n_threads):
                start = c * CHUNK
                stop = min(start + CHUNK, n)
                chunk_loss = 0.0
                chunk_weight = 0.0
                for i in range(start, stop):
                    w = 1.0 if sample_weight is None else sample_weight[i]
                    f = raw[i] + step[leaf_of_row[i]]
                    raw[i] = f
                    loss = 0.0  # assigned in the loop body: private to each thread
                    p = expit_and_loss(y[i], f, &loss)
                    prob[i] = p
                    r = y[i] - p
                    residual[i] = r
                    row_stats[i].wr = w * r
                    row_stats[i].w = w
                    if sample_mask is None or sample_mask[i]:
                        chunk_loss = chunk_loss + w * loss
                        chunk_weight = chunk_weight + w
                partial[2 * c] = chunk_loss
                partial[2 * c + 1] = chunk_weight
            for c in range(n_chunks):
                total_loss += partial[2 * c]
                total_weight += partial[2 * c + 1]
    finally:
        free(num)
        free(partial)
    return total_loss / total_weight if total_weight > 0 else 0.0


def init_state(
    const float64_t[::1] y,
    const float64_t[::1] sample_weight,
    float64_t[::1] raw,
    float64_t[::1] prob,
    float64_t[::1] residual,
    row_stat_t[::1] row_stats,
):
    """p = sigma(F0), r = y - p and the row statistics (Algorithm 1, lines 1-3 and 6)."""
    cdef intp_t i
    cdef float64_t w, p, r
    with nogil:
        for i in range(y.shape[0]):
            w = 1.0 if sample_weight is None else sample_weight[i]
            p = expit(raw[i])
            prob[i] = p
            r = y[i] - p
            residual[i] = r
            row_stats[i].wr = w * r
            row_stats[i].w = w


def weighted_log_loss(const float64_t[::1] y, const float64_t[::1] raw,
                      const float64_t[::1] sample_weight):
    """Weighted mean log-loss of raw scores ``raw`` (stable for any magnitude)."""
    cdef intp_t i
    cdef float64_t w, total = 0.0, weight = 0.0
    with nogil:
        for i in range(y.shape[0]):
            w = 1.0 if sample_weight is None else sample_weight[i]
            total += w * log_loss_term(y[i], raw[i])
            weight += w
    return total / weight if weight > 0 else 0.0


def proba_from_raw(const float64_t[::1] raw, float64_t[:, ::1] out, int n_threads):
    """out[:, 1] = sigma(raw) and out[:, 0] = 1 - out[:, 1] (paper eq. 3), in one pass."""
    cdef intp_t i, n = raw.shape[0]
    cdef float64_t p
    with nogil:
        if n < 200000 or n_threads <= 1:  # too short to pay for a parallel region
            for i in range(n):
                p = expit(raw[i])
                out[i, 1] = p
                out[i, 0] = 1.0 - p
        else:
            for i in prange(n, schedule="static", num_threads=n_threads):
                p = expit(raw[i])
                out[i, 1] = p
                out[i, 0] = 1.0 - p


def expit_array(const float64_t[::1] raw, float64_t[::1] out):
    """out = sigma(raw), elementwise, without overflow warnings."""
    cdef intp_t i
    with nogil:
        for i in range(raw.shape[0]):
            out[i] = expit(raw[i])
