/* Inner loops of the exact split scan with unit sample weights (paper Algorithm 1,
 * line 7: the squared-error split of the residuals r = y - p).
 *
 * A feature's sorted order is scanned once per level. At position k, a node with
 * n_left = w_left samples seen so far, whose w * r add up to s_left, can only beat
 * the best split found so far if it passes the cheap test of _criterion.h,
 * GBC_MAY_BEAT(diff, den, bound), with the criterion's diff and den. Almost no
 * position passes. These loops add up the sums in sorted order (the same additions,
 * in the same order, as a plain loop) and stop at the first position that passes;
 * the caller (_exact_splitter.pyx) makes the exact decision there and resumes after
 * it. So they decide nothing themselves: they only make the common case cheap.
 */
#ifndef GBC_SCAN_H
#define GBC_SCAN_H

#include <stdint.h>

#include "_criterion.h"

#if defined(__GNUC__) || defined(__clang__)
#define GBC_HAVE_VECTOR_PAIRS 1
typedef double gbc_double2 __attribute__((vector_size(16)));
typedef long long gbc_mask2 __attribute__((vector_size(16)));
#define GBC_SCAN_PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 3)
#else
#define GBC_HAVE_VECTOR_PAIRS 0
#if defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#include <xmmintrin.h>
#define GBC_SCAN_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#else
#define GBC_SCAN_PREFETCH(p) ((void)0)
#endif
#endif

/* The root (every row in one node, n_left = w_left = k at position k): the test is
 * evaluated for two positions at once with two-lane float64 vectors (SSE2 on
 * x86-64, NEON on arm64; IEEE operations lane by lane, the same values as scalar
 * code), which halves the floating-point work per position.
 *
 * Scan sorted positions start .. stop-1 (row order[k] at position k). `*s_left` holds the sum of row_wr over positions before
 * `start`; on return it holds the sum over positions before the returned position,
 * which is the first k whose split passes the cheap test, or `stop`. The row sums
 * of positions up to `prefetch_stop` + `distance` are prefetched `distance` ahead. */
static intptr_t gbc_root_scan_to_candidate(const int32_t *order, const double *row_wr,
                                           intptr_t start, intptr_t stop, double *s_left,
                                           double total_w, double total_s, double bound,
                                           intptr_t prefetch_stop, intptr_t distance)
{
    intptr_t k = start;
    double s = *s_left;
#if GBC_HAVE_VECTOR_PAIRS
    gbc_double2 w_left = {(double)k, (double)(k + 1)};
    const gbc_double2 two = {2.0, 2.0};
    const gbc_double2 tw = {total_w, total_w};
    const gbc_double2 ts = {total_s, total_s};
    const gbc_double2 tb = {bound, bound};
    for (; k + 2 <= stop; k += 2) {
        if (k < prefetch_stop) {
            GBC_SCAN_PREFETCH(&row_wr[order[k + distance]]);
            GBC_SCAN_PREFETCH(&row_wr[order[k + distance + 1]]);
        }
        const double s_next = s + row_wr[order[k]];
        const gbc_double2 sl = {s, s_next};
        const gbc_double2 diff = GBC_SPLIT_DIFF(ts, tw, sl, w_left);
        const gbc_double2 den = GBC_SPLIT_DEN(tw, w_left);
        const gbc_mask2 pass = GBC_MAY_BEAT(diff, den, tb);
        if (pass[0] | pass[1]) {
            if (pass[0]) {
                *s_left = s;
                return k;
            }
            *s_left = s_next;
            return k + 1;
        }
        s = s_next + row_wr[order[k + 1]];
        w_left += two;
    }
#endif
    for (; k < stop; k++) {
        const double w_left1 = (double)k;
        const double diff1 = GBC_SPLIT_DIFF(total_s, total_w, s, w_left1);
        if (GBC_MAY_BEAT(diff1, GBC_SPLIT_DEN(total_w, w_left1), bound)) {
            *s_left = s;
            return k;
        }
        s += row_wr[order[k]];
    }
    *s_left = s;
    return stop;
}

/* The hot state of one node in the scan of a deeper level (unit weights): one
 * cache line, found by a shift from the node's slot. */
typedef struct {
    /* The two running sums are not adjacent: stored side by side, they invite the
     * compiler to pair their updates in one vector, which costs more shuffles than
     * it saves. */
    double s_left;       /* sum of w * r of the node's samples seen so far */
    double total_w;      /* the node's totals */
    double w_left;       /* number of the node's samples seen so far (with unit
                            weights, also their weight) */
    double total_s;
    double bound;        /* best proxy so far x (1 - 1e-12); +inf: not split here */
    intptr_t last_pos;   /* sorted position of the node's previous sample, -1: none */
    double unused[2];
} gbc_node_scan_t;

/* Node byte of a row outside the nodes being split. */
#define GBC_NO_NODE 255

#define GBC_LEVEL_STEP(k)                                                         \
    do {                                                                          \
        const int32_t row_ = order[k];                                            \
        const unsigned slot_ = row_node[row_];                                    \
        if (slot_ != GBC_NO_NODE) {                                               \
            gbc_node_scan_t *const node_ = nodes + slot_;                         \
            const double s_ = node_->s_left, w_ = node_->w_left;                  \
            const double diff_ = GBC_SPLIT_DIFF(node_->total_s, node_->total_w,   \
                                                s_, w_);                          \
            if (GBC_MAY_BEAT(diff_, GBC_SPLIT_DEN(node_->total_w, w_),            \
                             node_->bound))                                       \
                return (k);                                                       \
            node_->s_left = s_ + row_wr[row_];                                    \
            node_->w_left = w_ + 1.0;                                             \
            node_->last_pos = (k);                                                \
        }                                                                         \
    } while (0)

/* The scan of one feature for every node of a deeper level (node of a row in
 * row_node), positions start .. stop-1: each sample's split is tested, then the
 * sample is added to its node. Stops at the first position whose split passes the
 * cheap test, its node's state as before it; returns it, or stop. */
static intptr_t gbc_level_scan_to_candidate(const int32_t *order, const double *row_wr,
                                            const uint8_t *row_node, gbc_node_scan_t *nodes,
                                            intptr_t start, intptr_t stop,
                                            intptr_t prefetch_stop, intptr_t distance)
{
    intptr_t k = start;
    const intptr_t with_prefetch = prefetch_stop < stop ? prefetch_stop : stop;
    for (; k < with_prefetch; k++) {
        const int32_t ahead = order[k + distance];
        GBC_SCAN_PREFETCH(&row_wr[ahead]);
        GBC_SCAN_PREFETCH(&row_node[ahead]);
        GBC_LEVEL_STEP(k);
    }
    for (; k < stop; k++)
        GBC_LEVEL_STEP(k);
    return stop;
}

#endif /* GBC_SCAN_H */
