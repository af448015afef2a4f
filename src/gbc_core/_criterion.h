/* The split criterion, defined once for every split finder (Cython and C alike).
 *
 * Paper Algorithm 1, line 7: each tree is a squared-error regression tree fitted to
 * the residuals r = y - p. For a node with weight W and weighted residual sum S
 * (sums of w and of w * r over its samples), a split whose left child has weight
 * w_left and sum s_left is ranked by Friedman's improvement proxy
 *
 *     proxy = diff^2 / den,   diff = (S - s_left) w_left - s_left (W - w_left),
 *                             den  = w_left (W - w_left),
 *
 * which is W times the decrease of the weighted squared error (scikit-learn's
 * FriedmanMSE proxy), so it ranks splits as the decrease does (criterion
 * "friedman_mse", the default). Criterion "squared_error" ranks them by
 * scikit-learn's MSE proxy
 *
 *     proxy = s_left^2 / w_left + s_right^2 / w_right,
 *
 * (s_right = S - s_left, w_right = W - w_left), which is S^2 / W plus the same
 * decrease: in exact arithmetic both rank the splits of a node alike, and they part
 * only where rounding decides between two near-equal splits. The node's impurity is
 * the weighted variance of its residuals.
 *
 * The two expressions are macros so that scalar code and the two-lane vector code of
 * _scan.h (GCC/Clang vector extensions, the same operators lane by lane) compute
 * them with the same operations in the same order: the same values, bit for bit.
 */
#ifndef GBC_CRITERION_H
#define GBC_CRITERION_H

#include <stdint.h>

#define GBC_SPLIT_DIFF(total_s, total_w, s_left, w_left) \
    (((total_s) - (s_left)) * (w_left) - (s_left) * ((total_w) - (w_left)))
#define GBC_SPLIT_DEN(total_w, w_left) ((w_left) * ((total_w) - (w_left)))
#define GBC_SPLIT_PROXY(diff, den) ((diff) * (diff) / (den))

/* The cheap test of the scans: can the split with this diff and den beat a best
 * proxy whose bound is best * GBC_BOUND_FACTOR? It only rejects splits that cannot be
 * better (the margin is far above rounding), so a split it lets through is decided
 * by the exact comparison proxy > best. */
#define GBC_BOUND_FACTOR (1.0 - 1e-12)
#define GBC_MAY_BEAT(diff, den, bound) ((diff) * (diff) >= (bound) * (den))

static inline double gbc_split_diff(double total_s, double total_w, double s_left,
                                    double w_left)
{
    return GBC_SPLIT_DIFF(total_s, total_w, s_left, w_left);
}

static inline double gbc_split_den(double total_w, double w_left)
{
    return GBC_SPLIT_DEN(total_w, w_left);
}

static inline double gbc_split_proxy(double diff, double den)
{
    return GBC_SPLIT_PROXY(diff, den);
}

static inline int gbc_may_beat(double diff, double den, double bound)
{
    return GBC_MAY_BEAT(diff, den, bound);
}

/* Criterion "squared_error": scikit-learn's MSE proxy, as it computes it. */
static inline double gbc_mse_proxy(double total_s, double total_w, double s_left,
                                   double w_left)
{
    double s_right = total_s - s_left;
    return s_left * s_left / w_left + s_right * s_right / (total_w - w_left);
}

/* The weighted squared-error decrease of a split of a node of weight total_w (what
 * the trees record as a node's improvement and the importances add up). */
static inline double gbc_improvement(double proxy, double total_w)
{
    return proxy / total_w;
}

/* Weighted variance of the residuals of a node: sum w r^2 / W - (S / W)^2. */
static inline double gbc_impurity(double sum_w, double sum_wr, double sum_wr2)
{
    double mean;
    if (sum_w <= 0.0)
        return 0.0;
    mean = sum_wr / sum_w;
    return sum_wr2 / sum_w - mean * mean;
}

/* The impurity of a child from its sums, as scikit-learn's MSE computes it
 * (children_impurity): sum w r^2 / w - (sum w r / w)^2. */
static inline double gbc_child_impurity(double w, double wr, double wr2)
{
    double mean = wr / w;
    return wr2 / w - mean * mean;
}

/* scikit-learn's weighted impurity decrease of a split (impurity_improvement of its
 * MSE criterion, the quantity min_impurity_decrease bounds):
 *     W_t / W * (impurity - w_right / W_t * impurity_right - w_left / W_t * impurity_left)
 * for a node of weight W_t in a tree of weight W. */
static inline double gbc_weighted_decrease(double total_weight, double node_w,
                                           double impurity, double w_left,
                                           double impurity_left, double impurity_right)
{
    double w_right = node_w - w_left;
    return (node_w / total_weight) * (impurity - (w_right / node_w * impurity_right)
                                      - (w_left / node_w * impurity_left));
}

/* ---- The exact comparison of two splits of one node (the tie rule) ----
 *
 * The grower puts every row's w * r and w on a grid before a tree is grown (sums of
 * them are then integer multiples of unit_s and unit_w below 2^53 units, so every
 * sum is exact, in any order, and the same in every finder). Two splits of one node
 * whose proxies are within GBC_TIE_MARGIN of each other are ranked here, exactly,
 * from those integers: Friedman's proxy diff^2 / den with diff = D unit_s unit_w and
 * den = E unit_w^2, where
 *
 *     D = (S - s_left) w_left - s_left (W - w_left),   E = w_left (W - w_left)
 *
 * (S, W the node's totals, all in units), so proxy_a > proxy_b exactly when
 * D_a^2 E_b > D_b^2 E_a: integers of up to 322 bits, multiplied and compared here in
 * 32-bit limbs (portable C, no compiler's 128-bit type). Both criteria rank a node's
 * splits alike in exact arithmetic (the MSE proxy is S^2 / W plus Friedman's over W),
 * so this one comparison decides for either. */
#define GBC_TIE_MARGIN 1e-12
/* 1.5 x 2^52: x + it - it is x rounded to an integer, half to even, for |x| <= 2^51
 * (the grid's rounding, on_grid of _choice.pxd). */
#define GBC_ROUND_TO_INTEGER 6755399441055744.0
#define GBC_BIG_LIMBS 12

typedef struct {
    uint32_t limb[GBC_BIG_LIMBS];   /* little-endian: limb[0] is the lowest */
} gbc_big_t;

static inline void gbc_big_from_u64(gbc_big_t *a, uint64_t v)
{
    int i;
    for (i = 0; i < GBC_BIG_LIMBS; i++)
        a->limb[i] = 0;
    a->limb[0] = (uint32_t)v;
    a->limb[1] = (uint32_t)(v >> 32);
}

/* c = a * b (the callers' products fit in GBC_BIG_LIMBS limbs). */
static inline void gbc_big_mul(gbc_big_t *c, const gbc_big_t *a, const gbc_big_t *b)
{
    int i, j;
    uint64_t carry, t;
    gbc_big_t r;
    for (i = 0; i < GBC_BIG_LIMBS; i++)
        r.limb[i] = 0;
    for (i = 0; i < GBC_BIG_LIMBS; i++) {
        if (a->limb[i] == 0)
            continue;
        carry = 0;
        for (j = 0; i + j < GBC_BIG_LIMBS; j++) {
            t = (uint64_t)a->limb[i] * b->limb[j] + r.limb[i + j] + carry;
            r.limb[i + j] = (uint32_t)t;
            carry = t >> 32;
        }
    }
    *c = r;
}

static inline int gbc_big_cmp(const gbc_big_t *a, const gbc_big_t *b)
{
    int i;
    for (i = GBC_BIG_LIMBS - 1; i >= 0; i--) {
        if (a->limb[i] != b->limb[i])
            return a->limb[i] > b->limb[i] ? 1 : -1;
    }
    return 0;
}

/* c = a + b, or c = a - b for a >= b. */
static inline void gbc_big_add(gbc_big_t *c, const gbc_big_t *a, const gbc_big_t *b)
{
    int i;
    uint64_t t, carry = 0;
    for (i = 0; i < GBC_BIG_LIMBS; i++) {
        t = (uint64_t)a->limb[i] + b->limb[i] + carry;
        c->limb[i] = (uint32_t)t;
        carry = t >> 32;
    }
}

static inline void gbc_big_sub(gbc_big_t *c, const gbc_big_t *a, const gbc_big_t *b)
{
    int i;
    uint64_t borrow = 0, t;
    for (i = 0; i < GBC_BIG_LIMBS; i++) {
        t = (uint64_t)a->limb[i] - b->limb[i] - borrow;
        c->limb[i] = (uint32_t)t;
        borrow = (t >> 32) & 1;
    }
}

static inline uint64_t gbc_abs_i64(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* |D| and E of a split in units (see above). */
static inline void gbc_split_integers(gbc_big_t *abs_d, gbc_big_t *e, int64_t total_s,
                                      int64_t total_w, int64_t s_left, int64_t w_left)
{
    gbc_big_t a, b, p, q;
    int64_t s_right = total_s - s_left, w_right = total_w - w_left;
    int p_negative = s_right < 0, q_negative = s_left < 0;
    gbc_big_from_u64(&a, gbc_abs_i64(s_right));
    gbc_big_from_u64(&b, (uint64_t)w_left);
    gbc_big_mul(&p, &a, &b);                  /* |s_right w_left| */
    gbc_big_from_u64(&a, gbc_abs_i64(s_left));
    gbc_big_from_u64(&b, (uint64_t)w_right);
    gbc_big_mul(&q, &a, &b);                  /* |s_left w_right| */
    if (p_negative != q_negative)
        gbc_big_add(abs_d, &p, &q);
    else if (gbc_big_cmp(&p, &q) >= 0)
        gbc_big_sub(abs_d, &p, &q);
    else
        gbc_big_sub(abs_d, &q, &p);
    gbc_big_from_u64(&a, (uint64_t)w_left);
    gbc_big_from_u64(&b, (uint64_t)w_right);
    gbc_big_mul(e, &a, &b);
}

/* The sign of proxy_a - proxy_b, exactly, for two valid splits (positive weights on
 * both sides) of one node, every sum given as a whole number of units. */
static inline int gbc_exact_compare(int64_t total_s, int64_t total_w, int64_t s_a,
                                    int64_t w_a, int64_t s_b, int64_t w_b)
{
    gbc_big_t d_a, e_a, d_b, e_b, x, y;
    gbc_split_integers(&d_a, &e_a, total_s, total_w, s_a, w_a);
    gbc_split_integers(&d_b, &e_b, total_s, total_w, s_b, w_b);
    gbc_big_mul(&x, &d_a, &d_a);
    gbc_big_mul(&x, &x, &e_b);
    gbc_big_mul(&y, &d_b, &d_b);
    gbc_big_mul(&y, &y, &e_a);
    return gbc_big_cmp(&x, &y);
}


/* ---- Monotonic constraints (the children's order) ----
 *
 * A split on a feature with a monotonic constraint is a candidate only if its
 * children's mean residuals s / w are ordered: for an increasing constraint
 * (direction +1) s_left / w_left <= s_right / w_right, for a decreasing one (-1)
 * s_left / w_left >= s_right / w_right, i.e. the sign of s_left w_right -
 * s_right w_left. Both weights are positive (a valid split). On the grid the sums
 * are whole numbers of units and the products are compared exactly (up to 2^106,
 * in 32-bit limbs), so every finder decides alike from the same sums. */
static inline int gbc_cross_sign(int64_t s_a, int64_t w_b, int64_t s_b, int64_t w_a)
{
    /* The sign of s_a w_b - s_b w_a for w_a, w_b >= 0. */
    gbc_big_t a, b, x, y;
    int neg_x = s_a < 0, neg_y = s_b < 0, c;
    gbc_big_from_u64(&a, gbc_abs_i64(s_a));
    gbc_big_from_u64(&b, (uint64_t)w_b);
    gbc_big_mul(&x, &a, &b);
    gbc_big_from_u64(&a, gbc_abs_i64(s_b));
    gbc_big_from_u64(&b, (uint64_t)w_a);
    gbc_big_mul(&y, &a, &b);
    if (neg_x != neg_y) {
        /* Opposite signs (a zero product counts as non-negative). */
        gbc_big_from_u64(&a, 0);
        if (gbc_big_cmp(&x, &a) == 0 && gbc_big_cmp(&y, &a) == 0)
            return 0;
        return neg_x ? -1 : 1;
    }
    c = gbc_big_cmp(&x, &y);
    return neg_x ? -c : c;
}

/* Whether the children of a split (left: s_left, w_left of a node S, W) are in the
 * order of ``direction`` (+1 or -1). unit_s, unit_w: the grid (unit_s 0: no grid,
 * the products in float64). */
static inline int gbc_children_ordered(int direction, double total_s, double total_w,
                                       double s_left, double w_left, double unit_s,
                                       double unit_w)
{
    int sign;
    double s_right = total_s - s_left, w_right = total_w - w_left;
    if (unit_s == 0.0) {
        double x = s_left * w_right, y = s_right * w_left;
        sign = x > y ? 1 : (x < y ? -1 : 0);
    } else {
        sign = gbc_cross_sign((int64_t)(s_left / unit_s), (int64_t)(w_right / unit_w),
                              (int64_t)(s_right / unit_s), (int64_t)(w_left / unit_w));
    }
    return direction > 0 ? sign <= 0 : sign >= 0;
}

#endif /* GBC_CRITERION_H */
