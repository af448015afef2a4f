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

#endif /* GBC_CRITERION_H */
