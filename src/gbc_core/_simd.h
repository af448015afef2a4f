/* AVX2 kernel of the batch predictor, selected at run time.
 *
 * The wheels target each platform's baseline instruction set (SSE2 on x86-64), so
 * this kernel is compiled for AVX2 on its own (a `target` attribute, GCC and Clang
 * on x86) and used only when the CPU reports AVX2 support; everywhere else
 * `gbc_avx2_available()` is 0 and the portable Cython path runs.
 *
 * What it computes is exactly what the portable path computes (paper Algorithm 2):
 * for each row, out[i] + eta*T_start(x_i) + ... + eta*T_stop-1(x_i), the additions
 * in tree order in float64, every decision `x > threshold` in float32 (go right).
 * Trees are complete binary trees of depth 3 in heap order (node j has children
 * 2j+1 and 2j+2); shallower trees are padded with splits that always go left.
 *
 * Layout of a tree (GBC_TREE_STRIDE = 8 entries per array):
 *   column_offset[8 t + k]                 node k's feature times GBC_BLOCK, k = 0..6
 *   threshold[8 t + k]                     node k's float32 threshold (entry 7 unused)
 *   leaf_low[8 t + l], leaf_high[8 t + l]  low and high 32-bit halves of the
 *                                         float64 leaf value eta*gamma_l, l = 0..7
 * Rows come as columns: feature f of row i of the block is columns[f * GBC_BLOCK + i].
 *
 * A tree is applied to the whole block eight rows per step: the seven tests are
 * vector compares against thresholds held in registers, the leaf index is built
 * with blends, and the eight float64 leaf values are looked up with two 32-bit
 * permutes (one for the low halves, one for the high halves): no gather.
 */
#ifndef GBC_SIMD_H
#define GBC_SIMD_H

#include <stdint.h>
#include <string.h>

/* Rows per block of the predictor (also the column stride of a transposed block). */
#define GBC_BLOCK 128
/* Entries per tree in the depth-3 tables. */
#define GBC_TREE_STRIDE 8

#if GBC_BLOCK % 8 != 0
#error "GBC_BLOCK must be a multiple of 8 (the AVX2 kernel's vector width)"
#endif

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>

static int gbc_avx2_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 1 : 0;
}

/* Leaf (0..7) of eight rows: `x[k]` points at the rows' values of node k's feature,
 * `t[k]` holds node k's threshold in every lane. */
__attribute__((target("avx2")))
static inline __m256i gbc_leaf_of_eight(const float *const x[7], const __m256 t[7])
{
    /* Test masks, all ones where the row goes right (x > threshold). */
    __m256 c0 = _mm256_cmp_ps(_mm256_loadu_ps(x[0]), t[0], _CMP_GT_OQ);
    __m256 c1 = _mm256_cmp_ps(_mm256_loadu_ps(x[1]), t[1], _CMP_GT_OQ);
    __m256 c2 = _mm256_cmp_ps(_mm256_loadu_ps(x[2]), t[2], _CMP_GT_OQ);
    __m256 c3 = _mm256_cmp_ps(_mm256_loadu_ps(x[3]), t[3], _CMP_GT_OQ);
    __m256 c4 = _mm256_cmp_ps(_mm256_loadu_ps(x[4]), t[4], _CMP_GT_OQ);
    __m256 c5 = _mm256_cmp_ps(_mm256_loadu_ps(x[5]), t[5], _CMP_GT_OQ);
    __m256 c6 = _mm256_cmp_ps(_mm256_loadu_ps(x[6]), t[6], _CMP_GT_OQ);
    /* Level 1: node 2 if the root sent the row right, else node 1. */
    __m256 b1 = _mm256_blendv_ps(c1, c2, c0);
    /* Level 2: node 3 or 4 under node 1, node 5 or 6 under node 2. */
    __m256 b2 = _mm256_blendv_ps(_mm256_blendv_ps(c3, c4, b1), _mm256_blendv_ps(c5, c6, b1), c0);
    /* Leaf l = 4 b0 + 2 b1 + b2 (the path's bits, root first). */
    __m256i leaf = _mm256_and_si256(_mm256_castps_si256(c0), _mm256_set1_epi32(4));
    leaf = _mm256_or_si256(leaf, _mm256_and_si256(_mm256_castps_si256(b1), _mm256_set1_epi32(2)));
    return _mm256_or_si256(leaf, _mm256_and_si256(_mm256_castps_si256(b2), _mm256_set1_epi32(1)));
}

/* Add the trees' contributions to out[0 .. GBC_BLOCK) for a full NaN-free block
 * given as columns. `column_offset[8 t + k]` is (feature of node k) * GBC_BLOCK. */
__attribute__((target("avx2")))
static void gbc_add_depth3_trees_avx2(const float *columns,
                                      const int32_t *column_offset, const float *threshold,
                                      const uint32_t *leaf_low, const uint32_t *leaf_high,
                                      intptr_t n_trees, double *out)
{
    /* The block's scores, each eight rows kept as rows (0, 1, 4, 5) then (2, 3, 6, 7):
     * the order in which unpacking the looked-up 32-bit halves yields them. */
    __m256d score[GBC_BLOCK / 4];
    intptr_t row, t;
    int k;
    for (row = 0; row < GBC_BLOCK; row += 8) {
        __m256d first = _mm256_loadu_pd(out + row);       /* rows 0..3 */
        __m256d second = _mm256_loadu_pd(out + row + 4);  /* rows 4..7 */
        score[row / 4] = _mm256_permute2f128_pd(first, second, 0x20);      /* 0 1 4 5 */
        score[row / 4 + 1] = _mm256_permute2f128_pd(first, second, 0x31);  /* 2 3 6 7 */
    }
    /* One tree at a time over the whole block: its tests and leaf tables stay in
     * registers, and each score is loaded and stored once per tree (the block's
     * scores fit in the L1 cache). */
    for (t = 0; t < n_trees; t++) {
        const intptr_t base = t * GBC_TREE_STRIDE;
        const float *x[7];
        __m256 thr[7];
        for (k = 0; k < 7; k++) {
            x[k] = columns + column_offset[base + k];
            thr[k] = _mm256_broadcast_ss(threshold + base + k);
        }
        const __m256i table_low = _mm256_loadu_si256((const __m256i *)(leaf_low + base));
        const __m256i table_high = _mm256_loadu_si256((const __m256i *)(leaf_high + base));
        for (row = 0; row < GBC_BLOCK; row += 8) {
            const float *x_row[7];
            for (k = 0; k < 7; k++)
                x_row[k] = x[k] + row;
            __m256i leaf = gbc_leaf_of_eight(x_row, thr);
            __m256i low = _mm256_permutevar8x32_epi32(table_low, leaf);
            __m256i high = _mm256_permutevar8x32_epi32(table_high, leaf);
            /* Per 128-bit lane, unpacklo gives rows (0, 1 | 4, 5) and unpackhi rows
             * (2, 3 | 6, 7) as whole float64 values (low half first). */
            score[row / 4] = _mm256_add_pd(
                score[row / 4], _mm256_castsi256_pd(_mm256_unpacklo_epi32(low, high)));
            score[row / 4 + 1] = _mm256_add_pd(
                score[row / 4 + 1], _mm256_castsi256_pd(_mm256_unpackhi_epi32(low, high)));
        }
    }
    for (row = 0; row < GBC_BLOCK; row += 8) {
        _mm256_storeu_pd(out + row,
                         _mm256_permute2f128_pd(score[row / 4], score[row / 4 + 1], 0x20));
        _mm256_storeu_pd(out + row + 4,
                         _mm256_permute2f128_pd(score[row / 4], score[row / 4 + 1], 0x31));
    }
}

#else

static int gbc_avx2_available(void) { return 0; }

static void gbc_add_depth3_trees_avx2(const float *columns,
                                      const int32_t *column_offset, const float *threshold,
                                      const uint32_t *leaf_low, const uint32_t *leaf_high,
                                      intptr_t n_trees, double *out)
{
    /* Never called: gbc_avx2_available() is 0 on this platform. */
    (void)columns; (void)column_offset; (void)threshold;
    (void)leaf_low; (void)leaf_high; (void)n_trees; (void)out;
}
#endif

/* Split a float64 into its low and high 32-bit halves (the lookup tables' form). */
static void gbc_split_double(double value, uint32_t *low, uint32_t *high)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    *low = (uint32_t)(bits & 0xffffffffu);
    *high = (uint32_t)(bits >> 32);
}

#endif /* GBC_SIMD_H */
