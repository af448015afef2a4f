/* log(1 + x) for 0 <= x <= 1, many values at once: the training loss of a fit.
 *
 * The log-loss of a row is max(F, 0) - y F + log(1 + e) with e = exp(-|F|) in
 * [0, 1], the e that also gives the row's probability. C's log1p is a scalar call
 * with data-dependent branches, and it cost a fifth of a histogram fit; this is
 * the same method, written without branches so that the compiler runs it on every
 * lane of the vector registers the target has (two on the x86-64 baseline).
 *
 * The method is fdlibm's log1p (Sun Microsystems, 1993: "Permission to use, copy,
 * modify, and distribute this software is freely granted, provided that this
 * notice is preserved"), as GNU libc's generic log1p evaluates it (the polynomial
 * in z = s^2 grouped in pairs), restricted to 0 <= x <= 1:
 *   x < 2^-54             log1p(x) = x
 *   x < 2^-29             log1p(x) = x - x*x*0.5
 *   x < 0.41421365...     f = x, s = f / (2 + f), R(s^2) the polynomial below,
 *                         log1p(x) = f - (hfsq - s (hfsq + R)), hfsq = f*f/2
 *   1 + x < 2             u = 1 + x, c = (x - (u - 1)) / u (the rounding of u),
 *                         f = u/2 - 1, log1p(x) = ln2_hi - ((hfsq - (s (hfsq + R)
 *                         + (ln2_lo + c))) - f)
 *   1 + x rounds to 2     c = (1 - (2 - x)) / 2, log1p(x) = ln2_hi + (c + ln2_lo)
 * Every lane computes every operation of its case in that order, in float64 with
 * no fused multiply-add (setup.py's -ffp-contract=off), and the selects pick the
 * case: each value is the same bits as the scalar formula, whatever the vector
 * width, on every CPU (GNU libc's generic log1p gives the same bits; its FMA
 * variants and other C libraries' log1p may differ in the last place). Error below
 * one unit in the last place (fdlibm's analysis).
 */
#ifndef GBC_LOG1P_H
#define GBC_LOG1P_H

#include <stdint.h>
#include <string.h>

#define GBC_LOG1P_LN2_HI 6.93147180369123816490e-01 /* 3fe62e42 fee00000 */
#define GBC_LOG1P_LN2_LO 1.90821492927058770002e-10 /* 3dea39ef 35793c76 */
#define GBC_LOG1P_LP1 6.666666666666735130e-01      /* 3fe55555 55555593 */
#define GBC_LOG1P_LP2 3.999999999940941908e-01      /* 3fd99999 9997fa04 */
#define GBC_LOG1P_LP3 2.857142874366239149e-01      /* 3fd24924 94229359 */
#define GBC_LOG1P_LP4 2.222219843214978396e-01      /* 3fcc71c5 1d8e78af */
#define GBC_LOG1P_LP5 1.818357216161805012e-01      /* 3fc74664 96cb03de */
#define GBC_LOG1P_LP6 1.531383769920937332e-01      /* 3fc39a09 d078c69f */
#define GBC_LOG1P_LP7 1.479819860511658591e-01      /* 3fc2f112 df3e5244 */
/* The bounds of the cases: 2^-54, 2^-29, and the float64 whose high word is
   0x3fda827a and low word 0 (the first x taken as 1 + x). */
#define GBC_LOG1P_TINY 5.5511151231257827e-17
#define GBC_LOG1P_SMALL 1.862645149230957e-09
#define GBC_LOG1P_MID 0.4142136573791504

/* log1p(x) of one x in [0, 1] (NaN or values outside: unspecified). The
   definition: the vector version below computes the same operations lane by
   lane. (1 - (u - x)) / u of the last case is its product by 0.5: u is 2 there,
   so the two are the same number.) */
static inline double gbc_log1p_unit(double x)
{
    double u = 1.0 + x, f, c, hfsq, s, z, z2, z4, z6, r;
    if (x < GBC_LOG1P_TINY)
        return x;
    if (x < GBC_LOG1P_SMALL)
        return x - x * x * 0.5;
    if (u == 2.0)
        return GBC_LOG1P_LN2_HI + ((1.0 - (u - x)) * 0.5 + GBC_LOG1P_LN2_LO);
    f = x >= GBC_LOG1P_MID ? u * 0.5 - 1.0 : x;
    c = (x - (u - 1.0)) / u;
    hfsq = 0.5 * f * f;
    s = f / (2.0 + f);
    z = s * s;
    z2 = z * z;
    z4 = z2 * z2;
    z6 = z4 * z2;
    r = z * GBC_LOG1P_LP1 + z2 * (GBC_LOG1P_LP2 + z * GBC_LOG1P_LP3)
        + z4 * (GBC_LOG1P_LP4 + z * GBC_LOG1P_LP5) + z6 * (GBC_LOG1P_LP6 + z * GBC_LOG1P_LP7);
    if (x >= GBC_LOG1P_MID)
        return GBC_LOG1P_LN2_HI - ((hfsq - (s * (hfsq + r) + (GBC_LOG1P_LN2_LO + c))) - f);
    return f - (hfsq - s * (hfsq + r));
}

#if defined(__GNUC__) || defined(__clang__)
#define GBC_LOG1P_VECTORS 1
/* gbc_log1p_unit of every lane of a vector of float64 (type VD, masks VI):
   every case computed, each lane's case picked on the bits. A scalar operand of
   a vector operation stands for that value in every lane. */
#define GBC_LOG1P_LANES(NAME, VD, VI, ATTRIBUTES)                                   \
    ATTRIBUTES static inline VD NAME(VD x)                                          \
    {                                                                               \
        VD u = 1.0 + x;                                                             \
        VI big = x >= GBC_LOG1P_MID;                                                \
        VD f = (VD)(((VI)(u * 0.5 - 1.0) & big) | ((VI)x & ~big));                  \
        VD c = (x - (u - 1.0)) / u;                                                 \
        VD hfsq = 0.5 * f * f;                                                      \
        VD s = f / (2.0 + f);                                                       \
        VD z = s * s, z2 = z * z, z4 = z2 * z2, z6 = z4 * z2;                       \
        VD r = z * GBC_LOG1P_LP1 + z2 * (GBC_LOG1P_LP2 + z * GBC_LOG1P_LP3)         \
               + z4 * (GBC_LOG1P_LP4 + z * GBC_LOG1P_LP5)                           \
               + z6 * (GBC_LOG1P_LP6 + z * GBC_LOG1P_LP7);                          \
        VD low = f - (hfsq - s * (hfsq + r));                                       \
        VD high = GBC_LOG1P_LN2_HI                                                  \
                  - ((hfsq - (s * (hfsq + r) + (GBC_LOG1P_LN2_LO + c))) - f);       \
        VD top = GBC_LOG1P_LN2_HI + ((1.0 - (u - x)) * 0.5 + GBC_LOG1P_LN2_LO);     \
        VI two = u == 2.0, small = x < GBC_LOG1P_SMALL, tiny = x < GBC_LOG1P_TINY;  \
        VI out = ((((VI)top & two) | ((VI)high & ~two)) & big) | ((VI)low & ~big);  \
        out = ((VI)(x - x * x * 0.5) & small) | (out & ~small);                     \
        return (VD)(((VI)x & tiny) | (out & ~tiny));                                \
    }

/* Two lanes: SSE2 on x86-64, NEON on ARM64 (plain scalar code on a target
   without vectors). */
typedef double gbc_v2d __attribute__((vector_size(16)));
typedef long long gbc_v2i __attribute__((vector_size(16)));
GBC_LOG1P_LANES(gbc_log1p_v2, gbc_v2d, gbc_v2i, )

#if defined(__x86_64__) || defined(__i386__)
/* Four lanes where the CPU has AVX2 (compiled for it alone, used only when the
   CPU reports it; no FMA: the same operations). */
typedef double gbc_v4d __attribute__((vector_size(32)));
typedef long long gbc_v4i __attribute__((vector_size(32)));
GBC_LOG1P_LANES(gbc_log1p_v4, gbc_v4d, gbc_v4i, __attribute__((target("avx2"))))

__attribute__((target("avx2")))
static void gbc_log1p_units_avx2(const double *x, double *out, intptr_t n)
{
    intptr_t i = 0;
    gbc_v4d v;
    for (; i + 4 <= n; i += 4) {
        memcpy(&v, x + i, sizeof v);
        v = gbc_log1p_v4(v);
        memcpy(out + i, &v, sizeof v);
    }
    for (; i < n; i++)
        out[i] = gbc_log1p_unit(x[i]);
}
#endif
#endif

/* Whether gbc_log1p_units may take the four-lane kernel (asked once, before any
   thread runs it). */
static int gbc_log1p_wide(void)
{
#if defined(GBC_LOG1P_VECTORS) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    return 0;
#endif
}

/* out[i] = log1p(x[i]) for i < n, each x[i] in [0, 1] (gbc_log1p_unit); out may
   be x. `wide`: gbc_log1p_wide()'s answer. The same numbers either way. */
static void gbc_log1p_units(const double *x, double *out, intptr_t n, int wide)
{
    intptr_t i = 0;
#ifdef GBC_LOG1P_VECTORS
    gbc_v2d v;
#if defined(__x86_64__) || defined(__i386__)
    if (wide) {
        gbc_log1p_units_avx2(x, out, n);
        return;
    }
#endif
    for (; i + 2 <= n; i += 2) {
        memcpy(&v, x + i, sizeof v);
        v = gbc_log1p_v2(v);
        memcpy(out + i, &v, sizeof v);
    }
#endif
    (void)wide;
    for (; i < n; i++)
        out[i] = gbc_log1p_unit(x[i]);
}

#endif /* GBC_LOG1P_H */
