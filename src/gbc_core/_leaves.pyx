"""Kernels of the losses: leaf values, the updates of F, p and r, loss values.

Binomial (2 classes, the paper's model): leaf values of eq. 1 and the fused
per-tree update of F, p and r. Multinomial (3 or more classes): softmax
probabilities and residuals of every class, the leaf values of one class's tree
and its update. ``_loss.py`` holds the loss objects that call them."""
cimport cython
from cython.parallel cimport prange
from libc.float cimport DBL_MAX
from libc.math cimport exp, log, log1p, fabs
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


cdef void set_leaf_values(
    node_t[::1] nodes,
    const float64_t[::1] residual,
    const float64_t[::1] prob,
    const int32_t[::1] leaf_of_row,
    const float64_t[::1] sample_weight,
    const uint8_t[::1] sample_mask,
    float64_t factor,
    float64_t learning_rate,
    float64_t* sums,
) noexcept nogil:
    """Leaf values of a grown tree from its rows (in-bag only): ``nodes[j].value =
    newton_step(factor * sum w r, sum w p (1 - p))`` for every leaf (paper eq. 1;
    ``factor`` is 1, or (K - 1)/K for the multinomial loss), 0 for inner nodes; then
    ``sums[j] = learning_rate * nodes[j].value``, the step each row of node j takes.

    ``sums`` has room for 2 x n_nodes values.
    """
    cdef intp_t j, n_nodes = nodes.shape[0]
    for j in range(2 * n_nodes):
        sums[j] = 0.0
    newton_sums(residual, prob, leaf_of_row, sample_weight, sample_mask, sums,
                sums + n_nodes)
    for j in range(n_nodes):
        if nodes[j].feature < 0:
            nodes[j].value = newton_step(factor * sums[j], sums[n_nodes + j])
        else:
            nodes[j].value = 0.0
        # The numerator is no longer needed: its slot holds the scaled step.
        sums[j] = learning_rate * nodes[j].value


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
            set_leaf_values(nodes, residual, prob, leaf_of_row, sample_weight, sample_mask,
                            1.0, learning_rate, num)
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


cdef inline float64_t softplus(float64_t f) noexcept nogil:
    """log(1 + e^f) without overflow (NumPy's ``logaddexp(0, f)``, the same formula)."""
    if f > 0:
        return f + log1p(exp(-f))
    return log1p(exp(f))


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
                out[0] = log(class_weight[1] / class_weight[0])
            else:
                out[0] = 0.0
        else:
            for k in range(n_classes):
                p = class_weight[k] / total
                if p < eps:
                    p = eps
                elif p > 1.0 - eps:
                    p = 1.0 - eps
                out[k] = log(p)
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


def multinomial_log_proba(const float64_t[:, ::1] raw, float64_t[:, ::1] out):
    """out[i, k] = raw[i, k] - log sum_j exp(raw[i, j]) (shifted by the row's largest
    score: no overflow, no log(0))."""
    cdef intp_t i, k, n = raw.shape[0], n_classes = raw.shape[1]
    cdef float64_t top, total
    with nogil:
        for i in range(n):
            top = raw[i, 0]
            for k in range(1, n_classes):
                if raw[i, k] > top:
                    top = raw[i, k]
            total = 0.0
            for k in range(n_classes):
                total = total + exp(raw[i, k] - top)
            total = top + log(total)
            for k in range(n_classes):
                out[i, k] = raw[i, k] - total


def proba_log_loss(const float64_t[::1] y, const float64_t[::1] proba,
                   const float64_t[::1] sample_weight, float64_t eps):
    """(sum w l, sum w) of the log-losses l = -(y log p + (1 - y) log(1 - p)), p
    clipped to [eps, 1 - eps], summed in row order (``metrics.log_loss``)."""
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
            total += w * -(y[i] * log(p) + (1.0 - y[i]) * log1p(-p))
            weight += w
    return total, weight


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


# --------------------------------------------------------------- multinomial
# K >= 3 classes: K raw scores per row, p = softmax(F), one tree per class and
# iteration fitted to r_k = [y = k] - p_k, leaf values of the multinomial Newton step
# (K - 1)/K sum w r_k / sum w p_k (1 - p_k) (Friedman's, as scikit-learn's
# GradientBoostingClassifier). Arrays of K rows (one per class, contiguous) hold the
# per-class scores, probabilities and residuals of the training rows.

cdef inline float64_t softmax_row(const float64_t[:, ::1] raw, intp_t i, intp_t n_classes,
                                  float64_t[:, ::1] prob) noexcept nogil:
    """prob[:, i] = softmax(raw[:, i]); returns log(sum_k exp(raw[k, i])) (stable)."""
    cdef intp_t k
    cdef float64_t top = raw[0, i], total = 0.0, e
    for k in range(1, n_classes):
        if raw[k, i] > top:
            top = raw[k, i]
    for k in range(n_classes):
        e = exp(raw[k, i] - top)
        prob[k, i] = e
        total += e
    for k in range(n_classes):
        prob[k, i] = prob[k, i] / total
    return top + log(total)


def multinomial_state(
    const float64_t[:, ::1] raw,
    const int32_t[::1] y,
    const float64_t[::1] sample_weight,
    const uint8_t[::1] sample_mask,
    float64_t[:, ::1] prob,
    float64_t[:, ::1] residual,
    int n_threads,
):
    """p = softmax(F) and r_k = [y = k] - p_k for every row, in one pass.

    Parameters
    ----------
    raw, prob, residual : float64 arrays of shape (n_classes, n_samples)
        The raw scores F (input) and the probabilities and residuals (output).
    y : int32 array of shape (n_samples,)
        Class codes 0 .. n_classes - 1.
    sample_weight : float64 array or None
    sample_mask : uint8 array or None
        In-bag rows of the loss (None: every row).

    Returns
    -------
    loss : float
        Weighted mean multinomial log-loss -log p_y of the in-bag rows.
    """
    cdef intp_t n = y.shape[0], n_classes = raw.shape[0]
    cdef intp_t i, k, c, start, stop
    cdef intp_t n_chunks = (n + CHUNK - 1) // CHUNK
    cdef float64_t w, lse, chunk_loss, chunk_weight, total_loss = 0.0, total_weight = 0.0
    cdef float64_t* partial = <float64_t*>malloc(2 * max(n_chunks, 1) * sizeof(float64_t))
    if partial == NULL:
        raise MemoryError()
    try:
        with nogil:
            if n < 200000:  # too short to pay for a parallel region
                n_threads = 1
            for c in prange(n_chunks, schedule="static", num_threads=n_threads):
                start = c * CHUNK
                stop = min(start + CHUNK, n)
                chunk_loss = 0.0
                chunk_weight = 0.0
                for i in range(start, stop):
                    lse = softmax_row(raw, i, n_classes, prob)
                    for k in range(n_classes):
                        residual[k, i] = (1.0 if y[i] == k else 0.0) - prob[k, i]
                    if sample_mask is None or sample_mask[i]:
                        w = 1.0 if sample_weight is None else sample_weight[i]
                        chunk_loss = chunk_loss + w * (lse - raw[y[i], i])
                        chunk_weight = chunk_weight + w
                partial[2 * c] = chunk_loss
                partial[2 * c + 1] = chunk_weight
            for c in range(n_chunks):
                total_loss += partial[2 * c]
                total_weight += partial[2 * c + 1]
    finally:
        free(partial)
    return total_loss / total_weight if total_weight > 0 else 0.0


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
):
    """Leaf values of the tree of one class, then F_k += eta * gamma for every row.

    Sets ``nodes[j].value = gamma_j = newton_step(factor * sum w r, sum w p (1 - p))``
    over the in-bag rows of leaf j (``factor`` = (K - 1)/K), inner nodes to 0, and
    adds ``learning_rate * gamma`` of its leaf to the raw score of every row.
    """
    cdef intp_t n = residual.shape[0], n_nodes = nodes.shape[0], i
    cdef float64_t* sums = <float64_t*>malloc(2 * max(n_nodes, 1) * sizeof(float64_t))
    if sums == NULL:
        raise MemoryError()
    try:
        with nogil:
            set_leaf_values(nodes, residual, prob, leaf_of_row, sample_weight, sample_mask,
                            factor, learning_rate, sums)
            for i in range(n):
                raw[i] = raw[i] + sums[leaf_of_row[i]]
    finally:
        free(sums)


def softmax(const float64_t[:, ::1] raw, float64_t[:, ::1] out, int n_threads):
    """out[i] = softmax(raw[i]) for raw scores of shape (n_samples, n_classes)."""
    cdef intp_t i, k, n = raw.shape[0], n_classes = raw.shape[1]
    cdef float64_t top, total, e
    with nogil:
        if n < 200000:
            n_threads = 1
        for i in prange(n, schedule="static", num_threads=max(n_threads, 1)):
            top = raw[i, 0]
            for k in range(1, n_classes):
                if raw[i, k] > top:
                    top = raw[i, k]
            total = 0.0
            for k in range(n_classes):
                e = exp(raw[i, k] - top)
                out[i, k] = e
                total = total + e
            for k in range(n_classes):
                out[i, k] = out[i, k] / total


def multinomial_log_loss(const int32_t[::1] y, const float64_t[:, ::1] raw,
                         const float64_t[::1] sample_weight):
    """Weighted mean of -log softmax(raw[i])[y[i]] for raw of shape (n, n_classes)."""
    cdef intp_t i, k, n = raw.shape[0], n_classes = raw.shape[1]
    cdef float64_t top, total, w, loss = 0.0, weight = 0.0
    with nogil:
        for i in range(n):
            top = raw[i, 0]
            for k in range(1, n_classes):
                if raw[i, k] > top:
                    top = raw[i, k]
            total = 0.0
            for k in range(n_classes):
                total = total + exp(raw[i, k] - top)
            w = 1.0 if sample_weight is None else sample_weight[i]
            loss += w * (top + log(total) - raw[i, y[i]])
            weight += w
    return loss / weight if weight > 0 else 0.0


# --------------------------------------------------------------- exponential
# Two classes, AdaBoost's loss L = y e^-F + (1 - y) e^F (y = 0 or 1), scikit-learn's
# ExponentialLoss: trees fitted to r = -dL/dF = y e^-F - (1 - y) e^F, leaf values
# gamma_j = sum w r / sum w h with the Hessian h = y e^-F + (1 - y) e^F = |r|
# (scikit-learn's ``_update_terminal_regions``), F += eta * gamma, p = sigma(2F).
# Each e^F is C's exp(F) once per row, with scikit-learn's own formulas: for y = 1,
# L = 1 / e^F and r = 1 / e^F; for y = 0, L = e^F and r = -e^F.

cdef inline float64_t exponential_residual(float64_t y, float64_t f,
                                           float64_t* loss) noexcept nogil:
    """r = y e^-F - (1 - y) e^F of class code y (0.0 or 1.0); ``loss`` gets L = |r|."""
    cdef float64_t tmp = exp(f)
    if y != 0.0:
        loss[0] = 1.0 / tmp
        return loss[0]
    loss[0] = tmp
    return -tmp


cdef intp_t exponential_rows(
    const float64_t[::1] y,
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
    rows whose e^|F| is beyond float64 (L infinite)."""
    cdef intp_t i, n_overflow = 0
    cdef float64_t w, f, r, loss = 0.0, total = 0.0, weight = 0.0
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
        row_stats[i].wr = w * r
        row_stats[i].w = w
        if sample_mask is None or sample_mask[i]:
            total += w * loss
            weight += w
    loss_and_weight[0] = total
    loss_and_weight[1] = weight
    return n_overflow


def exponential_state(
    const float64_t[::1] y,
    const float64_t[::1] sample_weight,
    float64_t[::1] raw,
    float64_t[::1] residual,
    row_stat_t[::1] row_stats,
):
    """r and the row statistics of raw scores F0 (the start of a fit).

    Returns
    -------
    n_overflow : int
        Rows whose exponential loss is beyond float64.
    """
    cdef float64_t sums[2]
    cdef intp_t n_overflow
    with nogil:
        n_overflow = exponential_rows(y, sample_weight, None, raw, NULL, None, residual,
                                      row_stats, sums)
    return n_overflow


def exponential_update(
    node_t[::1] nodes,
    const int32_t[::1] leaf_of_row,
    const uint8_t[::1] sample_mask,
    const float64_t[::1] y,
    const float64_t[::1] sample_weight,
    float64_t learning_rate,
    float64_t[::1] raw,
    float64_t[::1] residual,
    row_stat_t[::1] row_stats,
):
    """One boosting step of the exponential loss after a tree has been grown.

    Sets ``nodes[j].value = gamma_j = sum w r / sum w |r|`` over the in-bag rows of
    leaf j (0 where the denominator is below 1e-150; inner nodes 0), then for every
    row F += eta * gamma, r and the row statistics of the next tree.

    Returns
    -------
    loss : float
        Weighted mean exponential loss of the in-bag rows after the update.
    n_overflow : int
        Rows whose e^|F| is beyond float64 (their loss and residual are infinite).
    """
    cdef intp_t i, j, n_nodes = nodes.shape[0], n_overflow
    cdef float64_t w, r
    cdef float64_t sums[2]
    cdef float64_t* num = <float64_t*>malloc(2 * max(n_nodes, 1) * sizeof(float64_t))
    if num == NULL:
        raise MemoryError()
    try:
        with nogil:
            for j in range(2 * n_nodes):
                num[j] = 0.0
            for i in range(y.shape[0]):
                if sample_mask is not None and not sample_mask[i]:
                    continue
                w = 1.0 if sample_weight is None else sample_weight[i]
                r = residual[i]
                j = leaf_of_row[i]
                num[j] += w * r
                num[n_nodes + j] += w * fabs(r)
            for j in range(n_nodes):
                if nodes[j].feature < 0:
                    nodes[j].value = newton_step(num[j], num[n_nodes + j])
                else:
                    nodes[j].value = 0.0
                num[j] = learning_rate * nodes[j].value
            n_overflow = exponential_rows(y, sample_weight, sample_mask, raw, num,
                                          leaf_of_row, residual, row_stats, sums)
    finally:
        free(num)
    return (sums[0] / sums[1] if sums[1] > 0 else 0.0), n_overflow


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
                out[i, 0] = scale * log(p / (1.0 - p))
        else:
            for i in range(n):
                mean = 0.0
                for k in range(n_classes):
                    out[i, k] = log(clip(proba[i, k], eps))
                    mean += out[i, k]
                mean = mean / n_classes
                for k in range(n_classes):
                    out[i, k] = out[i, k] - mean
