/* exp(x) and log(x) of gbc-core's fit and prediction: the same bits on every CPU.
 *
 * C's exp and log differ between machines: GNU libc picks an FMA variant where
 * the CPU has FMA (the last place of some results differs), and macOS's, Windows'
 * and musl's are other algorithms. The probabilities, residuals, leaf values and
 * losses of a fit therefore take these instead: fdlibm's methods in plain float64
 * operations, compiled without fused multiply-add (setup.py's -ffp-contract=off),
 * so that every CPU and compiler gives the same bits. exp has a block form that
 * runs on the lanes of the vector registers (two on the x86-64 baseline, four
 * where the CPU has AVX2, asked at run time): every case computed on every lane,
 * each lane's case picked by selects on the bits (no branch on the data), each
 * value the same bits as the scalar definition gbc_exp.
 *
 * The methods are fdlibm's e_exp.c and e_log.c (Sun Microsystems, 1993:
 * "Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved. Developed
 * at SunSoft, a Sun Microsystems, Inc. business. Permission to use, copy,
 * modify, and distribute this software is freely granted, provided that this
 * notice is preserved.").
 *
 * exp(x) (__ieee754_exp), error below 1 unit in the last place:
 *   |x| >= 709.78, x > o_threshold      +inf; x < u_threshold: 0; NaN: x + x
 *   |x| > ln2/2 (high word > 0x3fd62e42) k = (int)(x/ln2 + copysign(0.5, x)),
 *                                        hi = x - k ln2_hi (exact), lo = k ln2_lo,
 *                                        r = hi - lo
 *   |x| < 2^-28                          1 + x
 *   otherwise                            k = 0, r = x (hi = x, lo = 0)
 *   t = r^2, c = r - t (P1 + t (P2 + t (P3 + t (P4 + t P5)))),
 *   y = 1 - ((lo - r c / (2 - c)) - hi), scaled by 2^k in its exponent bits
 *   (k < -1021, a subnormal result: by 2^(k + 1000), then times 2^-1000).
 * (fdlibm writes k = 0 as 1 - ((r c)/(c - 2) - r), the same number, and takes
 * k = +-1 apart for ln2/2 < |x| < 1.5 ln2, the same k, hi and lo.)
 *
 * log(x) (__ieee754_log), error below 1 unit in the last place: x = 2^k (1 + f)
 * with sqrt(2)/2 < 1 + f < sqrt(2), s = f / (2 + f), R(s^2) the polynomial below,
 *   |f| < 2^-20   log(x) = k ln2_hi - ((f^2 (1/2 - f/3) - k ln2_lo) - f)
 *   otherwise     log(x) = k ln2_hi - ((hfsq - (s (hfsq + R) + k ln2_lo)) - f),
 *                 hfsq = f^2/2, where the high word of 1 + f (or 2 + 2f) lies in
 *                 [0x6147a, 0x6b851]; else k ln2_hi - ((s (f - R) - k ln2_lo) - f)
 * and log(0) = -inf, log(negative) = NaN, log(+inf) = +inf, log(NaN) = NaN.
 * (fdlibm writes k = 0 and f = 0 apart, the same numbers.) log has a block form on
 * vector lanes too: the three formulas on every lane, each lane's picked by
 * selects, the special values last; each value the same bits as gbc_log.
 */
#ifndef GBC_EXP_H
#define GBC_EXP_H

#include <math.h> /* HUGE_VAL (+inf) alone: no function of the C library */
#include <stdint.h>
#include <string.h>

#define GBC_EXP_O_THRESHOLD 7.09782712893383973096e+02  /* 40862e42 fefa39ef */
#define GBC_EXP_U_THRESHOLD -7.45133219101941108420e+02 /* c0874910 d52d3051 */
#define GBC_EXP_LN2_HI 6.93147180369123816490e-01       /* 3fe62e42 fee00000 */
#define GBC_EXP_LN2_LO 1.90821492927058770002e-10       /* 3dea39ef 35793c76 */
#define GBC_EXP_INVLN2 1.44269504088896338700e+00       /* 3ff71547 652b82fe */
#define GBC_EXP_P1 1.66666666666666019037e-01           /* 3fc55555 5555553e */
#define GBC_EXP_P2 -2.77777777770155933842e-03          /* bf66c16c 16bebd93 */
#define GBC_EXP_P3 6.61375632143793436117e-05           /* 3f11566a af25de2c */
#define GBC_EXP_P4 -1.65339022054652515390e-06          /* bebbbd41 c5d26bf1 */
#define GBC_EXP_P5 4.13813679705723846039e-08           /* 3e663769 72bea4d0 */
#define GBC_EXP_TWOM1000 9.33263618503218878990e-302    /* 2^-1000 */
/* The bounds of the cases as float64: |x| >= 0x3fd62e43 00000000 (the high word
   above 0x3fd62e42), |x| < 2^-28 (the high word below 0x3e300000). */
#define GBC_EXP_REDUCE 0.3465735912322998
#define GBC_EXP_TINY 3.725290298461914e-09
/* 1.5 * 2^52: s + SHIFT - SHIFT rounds s to an integer, which the low bits of
   s + SHIFT hold (|s| < 2^51). */
#define GBC_EXP_SHIFT 6755399441055744.0
#define GBC_EXP_SHIFT_BITS 0x4338000000000000ULL
#define GBC_EXP_HALF_BITS 0x3fe0000000000000ULL
#define GBC_EXP_SIGN_BITS 0x8000000000000000ULL

#define GBC_LOG_LG1 6.666666666666735130e-01 /* 3fe55555 55555593 */
#define GBC_LOG_LG2 3.999999999940941908e-01 /* 3fd99999 9997fa04 */
#define GBC_LOG_LG3 2.857142874366239149e-01 /* 3fd24924 94229359 */
#define GBC_LOG_LG4 2.222219843214978396e-01 /* 3fcc71c5 1d8e78af */
#define GBC_LOG_LG5 1.818357216161805012e-01 /* 3fc74664 96cb03de */
#define GBC_LOG_LG6 1.531383769920937332e-01 /* 3fc39a09 d078c69f */
#define GBC_LOG_LG7 1.479819860511658591e-01 /* 3fc2f112 df3e5244 */
#define GBC_LOG_TWO54 1.80143985094819840000e+16 /* 43500000 00000000 */

static inline uint64_t gbc_exp_bits_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline double gbc_exp_double_of(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* exp(x) of one x: the definition (fdlibm's branches; the vector form below
   computes the same operations lane by lane). */
static inline double gbc_exp(double x)
{
    uint64_t bits = gbc_exp_bits_of(x);
    uint32_t hx = (uint32_t)(bits >> 32) & 0x7fffffffu;
    int negative = (int)(bits >> 63);
    int k = 0;
    double hi = x, lo = 0.0, t, c, y;
    if (hx >= 0x40862e42u) {
        if (hx >= 0x7ff00000u) {
            if (x != x)
                return x + x;
            return negative ? 0.0 : x;
        }
        /* fdlibm: huge * huge and twom1000 * twom1000 (constants, which MSVC
           refuses to fold into an overflow) */
        if (x > GBC_EXP_O_THRESHOLD)
            return HUGE_VAL;
        if (x < GBC_EXP_U_THRESHOLD)
            return 0.0;
    }
    if (hx > 0x3fd62e42u) {
        k = (int)(GBC_EXP_INVLN2 * x + (negative ? -0.5 : 0.5));
        t = (double)k;
        hi = x - t * GBC_EXP_LN2_HI;
        lo = t * GBC_EXP_LN2_LO;
        x = hi - lo;
    } else if (hx < 0x3e300000u) {
        return 1.0 + x;
    }
    t = x * x;
    c = x - t * (GBC_EXP_P1 + t * (GBC_EXP_P2 + t * (GBC_EXP_P3 + t * (GBC_EXP_P4
                                                                        + t * GBC_EXP_P5))));
    if (k == 0)
        return 1.0 - ((x * c) / (c - 2.0) - x);
    y = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi);
    if (k >= -1021)
        return gbc_exp_double_of(gbc_exp_bits_of(y) + ((uint64_t)(int64_t)k << 52));
    y = gbc_exp_double_of(gbc_exp_bits_of(y) + ((uint64_t)(int64_t)(k + 1000) << 52));
    return y * GBC_EXP_TWOM1000;
}

/* log(x) of one x (fdlibm's branches). */
static inline double gbc_log(double x)
{
    uint64_t bits = gbc_exp_bits_of(x);
    int32_t hx = (int32_t)(bits >> 32), i, j;
    uint32_t lx = (uint32_t)bits;
    int k = 0;
    double f, s, z, w, t1, t2, r, hfsq, dk;
    if (hx < 0x00100000) { /* x < 2^-1022 */
        if (((hx & 0x7fffffff) | lx) == 0)
            return -HUGE_VAL; /* log(+-0) = -inf (fdlibm: -two54 / 0) */
        if (hx < 0)
            return (x - x) / (x - x); /* log(negative) = NaN (fdlibm: (x - x) / 0) */
        k -= 54;
        x *= GBC_LOG_TWO54; /* a subnormal x, scaled up */
        hx = (int32_t)(gbc_exp_bits_of(x) >> 32);
    }
    if (hx >= 0x7ff00000)
        return x + x;
    k += (hx >> 20) - 1023;
    hx &= 0x000fffff;
    i = (hx + 0x95f64) & 0x100000;
    /* x or x/2 normalised into [sqrt(2)/2, sqrt(2)) */
    x = gbc_exp_double_of((gbc_exp_bits_of(x) & 0x000fffffffffffffULL)
                          | ((uint64_t)(uint32_t)(i ^ 0x3ff00000) << 32));
    k += i >> 20;
    f = x - 1.0;
    dk = (double)k;
    if ((0x000fffff & (2 + hx)) < 3) { /* |f| < 2^-20 */
        r = f * f * (0.5 - 0.33333333333333333 * f);
        return dk * GBC_EXP_LN2_HI - ((r - dk * GBC_EXP_LN2_LO) - f);
    }
    s = f / (2.0 + f);
    z = s * s;
    i = hx - 0x6147a;
    w = z * z;
    j = 0x6b851 - hx;
    t1 = w * (GBC_LOG_LG2 + w * (GBC_LOG_LG4 + w * GBC_LOG_LG6));
    t2 = z * (GBC_LOG_LG1 + w * (GBC_LOG_LG3 + w * (GBC_LOG_LG5 + w * GBC_LOG_LG7)));
    i |= j;
    r = t2 + t1;
    if (i > 0) {
        hfsq = 0.5 * f * f;
        return dk * GBC_EXP_LN2_HI - ((hfsq - (s * (hfsq + r) + dk * GBC_EXP_LN2_LO)) - f);
    }
    return dk * GBC_EXP_LN2_HI - ((s * (f - r) - dk * GBC_EXP_LN2_LO) - f);
}

#if defined(__GNUC__) || defined(__clang__)
#define GBC_EXP_VECTORS 1
/* The lanes of a mask M (all ones or zeros) pick A, the others B. */
#define GBC_EXP_SELECT(VD, VU, M, A, B) \
    ((VD)(((VU)(A) & (VU)(M)) | ((VU)(B) & ~(VU)(M))))
/* gbc_exp of every lane of a vector of float64 (type VD; VU: unsigned 64-bit
   lanes). k = (int)s, s = x/ln2 + copysign(0.5, x), is s rounded to an integer
   (in the low bits of s + SHIFT), then one towards zero where the rounding went
   away from it. A scalar operand of a vector operation stands for that value in
   every lane. */
#define GBC_EXP_LANES(NAME, VD, VU, ATTRIBUTES)                                     \
    ATTRIBUTES static inline VD NAME(VD x)                                          \
    {                                                                               \
        VU sign = (VU)x & GBC_EXP_SIGN_BITS;                                        \
        VD ax = (VD)((VU)x ^ sign), zero = (VD)(sign & 0u);                         \
        VD s = x * GBC_EXP_INVLN2 + (VD)(sign | GBC_EXP_HALF_BITS);                 \
        VD z = s + GBC_EXP_SHIFT;                                                   \
        VD near = z - GBC_EXP_SHIFT;                                                \
        VU down = (VU)(near > s) & (VU)(x > 0.0);                                  \
        VU up = (VU)(near < s) & (VU)(x < 0.0);                                      \
        VU big = (VU)(ax >= GBC_EXP_REDUCE);                                        \
        VU k = (((VU)z - GBC_EXP_SHIFT_BITS) + down - up) & big;                    \
        VD kd = (VD)(k + GBC_EXP_SHIFT_BITS) - GBC_EXP_SHIFT;                       \
        VD hi = x - kd * GBC_EXP_LN2_HI;                                            \
        VD lo = kd * GBC_EXP_LN2_LO;                                                \
        VD r = hi - lo;                                                             \
        VD t = r * r;                                                               \
        VD c = r - t * (GBC_EXP_P1 + t * (GBC_EXP_P2 + t * (GBC_EXP_P3              \
                                          + t * (GBC_EXP_P4 + t * GBC_EXP_P5))));   \
        VD y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);                             \
        VU low = (VU)(kd < -1021.0);                                                \
        VD out = (VD)((VU)y + ((k + (low & 1000u)) << 52));                         \
        out = GBC_EXP_SELECT(VD, VU, low, out * GBC_EXP_TWOM1000, out);             \
        out = GBC_EXP_SELECT(VD, VU, ax < GBC_EXP_TINY, 1.0 + x, out);              \
        out = GBC_EXP_SELECT(VD, VU, x > GBC_EXP_O_THRESHOLD,                       \
                             zero + HUGE_VAL, out);                                 \
        out = GBC_EXP_SELECT(VD, VU, x < GBC_EXP_U_THRESHOLD, zero, out);           \
        return GBC_EXP_SELECT(VD, VU, x != x, x + x, out);                          \
    }

/* gbc_log of every lane of a vector of float64 (VI: signed 64-bit lanes). The
   high word is taken with a logical shift (its sign apart: `negative`), so every
   integer operation has a non-negative operand on the lanes whose value is kept;
   a positive subnormal x is scaled by 2^54 first (k 54 less). dk = (double)k by
   the bits of SHIFT + k (|k| < 2^51). */
#define GBC_LOG_LANES(NAME, VD, VU, VI, ATTRIBUTES)                                 \
    ATTRIBUTES static inline VD NAME(VD x)                                          \
    {                                                                               \
        VU bits = (VU)x;                                                            \
        VU negative = (VU)((VI)bits < 0);                                           \
        VU hx0 = bits >> 32 & 0x7fffffffu;                                          \
        VU tiny = negative | (VU)((VI)hx0 < 0x00100000);                            \
        VU sub = tiny & (VU)(x > 0.0);                                              \
        VD xn = GBC_EXP_SELECT(VD, VU, sub, x * GBC_LOG_TWO54, x);                  \
        VU hx = (VU)xn >> 32 & 0x7fffffffu;                                         \
        VU k = (hx >> 20) - 1023u - (sub & 54u);                                    \
        VU i;                                                                       \
        VD f, dk, r, s, z, w, t1, t2, hfsq, out;                                    \
        hx &= 0x000fffffu;                                                          \
        i = (hx + 0x95f64u) & 0x100000u;                                            \
        xn = (VD)(((VU)xn & 0x000fffffffffffffULL) | ((i ^ 0x3ff00000u) << 32));    \
        k += i >> 20;                                                               \
        f = xn - 1.0;                                                               \
        dk = (VD)(k + GBC_EXP_SHIFT_BITS) - GBC_EXP_SHIFT;                          \
        s = f / (2.0 + f);                                                          \
        z = s * s;                                                                  \
        w = z * z;                                                                  \
        t1 = w * (GBC_LOG_LG2 + w * (GBC_LOG_LG4 + w * GBC_LOG_LG6));               \
        t2 = z * (GBC_LOG_LG1 + w * (GBC_LOG_LG3 + w * (GBC_LOG_LG5                 \
                                                        + w * GBC_LOG_LG7)));       \
        r = t2 + t1;                                                                \
        hfsq = 0.5 * f * f;                                                         \
        out = GBC_EXP_SELECT(VD, VU,                                                \
                             (VI)((hx - 0x6147au) | (0x6b851u - hx)) > 0,           \
                             dk * GBC_EXP_LN2_HI - ((hfsq - (s * (hfsq + r)         \
                                                     + dk * GBC_EXP_LN2_LO)) - f),  \
                             dk * GBC_EXP_LN2_HI - ((s * (f - r)                    \
                                                     - dk * GBC_EXP_LN2_LO) - f));  \
        r = f * f * (0.5 - 0.33333333333333333 * f);                                \
        out = GBC_EXP_SELECT(VD, VU, (VI)((2u + hx) & 0x000fffffu) < 3,             \
                             dk * GBC_EXP_LN2_HI - ((r - dk * GBC_EXP_LN2_LO) - f), \
                             out);                                                  \
        out = GBC_EXP_SELECT(VD, VU, ~negative & (VU)((VI)hx0 >= 0x7ff00000),       \
                             x + x, out);                                           \
        out = GBC_EXP_SELECT(VD, VU, negative, (x - x) / (x - x), out);             \
        return GBC_EXP_SELECT(VD, VU, (bits << 1) == 0u,                            \
                              (VD)(bits & 0u) - HUGE_VAL, out);                     \
    }

/* Two lanes: SSE2 on x86-64, NEON on ARM64 (plain scalar code on a target
   without vectors). */
typedef double gbc_exp_v2d __attribute__((vector_size(16)));
typedef unsigned long long gbc_exp_v2u __attribute__((vector_size(16)));
typedef long long gbc_exp_v2i __attribute__((vector_size(16)));
GBC_EXP_LANES(gbc_exp_v2, gbc_exp_v2d, gbc_exp_v2u, )
GBC_LOG_LANES(gbc_log_v2, gbc_exp_v2d, gbc_exp_v2u, gbc_exp_v2i, )

#if defined(__x86_64__) || defined(__i386__)
/* Four lanes where the CPU has AVX2 (compiled for it alone, used only when the
   CPU reports it; no FMA: the same operations). */
typedef double gbc_exp_v4d __attribute__((vector_size(32)));
typedef unsigned long long gbc_exp_v4u __attribute__((vector_size(32)));
typedef long long gbc_exp_v4i __attribute__((vector_size(32)));
GBC_EXP_LANES(gbc_exp_v4, gbc_exp_v4d, gbc_exp_v4u, __attribute__((target("avx2"))))
GBC_LOG_LANES(gbc_log_v4, gbc_exp_v4d, gbc_exp_v4u, gbc_exp_v4i,
              __attribute__((target("avx2"))))

__attribute__((target("avx2")))
static void gbc_exp_block_avx2(const double *x, double *out, intptr_t n)
{
    intptr_t i = 0;
    gbc_exp_v4d v;
    for (; i + 4 <= n; i += 4) {
        memcpy(&v, x + i, sizeof v);
        v = gbc_exp_v4(v);
        memcpy(out + i, &v, sizeof v);
    }
    for (; i < n; i++)
        out[i] = gbc_exp(x[i]);
}

__attribute__((target("avx2")))
static void gbc_log_block_avx2(const double *x, double *out, intptr_t n)
{
    intptr_t i = 0;
    gbc_exp_v4d v;
    for (; i + 4 <= n; i += 4) {
        memcpy(&v, x + i, sizeof v);
        v = gbc_log_v4(v);
        memcpy(out + i, &v, sizeof v);
    }
    for (; i < n; i++)
        out[i] = gbc_log(x[i]);
}
#endif
#endif

/* Whether gbc_exp_block may take the four-lane kernel (asked once, before any
   thread runs it). */
static int gbc_exp_wide(void)
{
#if defined(GBC_EXP_VECTORS) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    return 0;
#endif
}

/* out[i] = gbc_exp(x[i]) for i < n; out may be x. `wide`: gbc_exp_wide()'s
   answer. The same numbers either way. */
static void gbc_exp_block(const double *x, double *out, intptr_t n, int wide)
{
    intptr_t i = 0;
#ifdef GBC_EXP_VECTORS
    gbc_exp_v2d v;
#if defined(__x86_64__) || defined(__i386__)
    if (wide) {
        gbc_exp_block_avx2(x, out, n);
        return;
    }
#endif
    for (; i + 2 <= n; i += 2) {
        memcpy(&v, x + i, sizeof v);
        v = gbc_exp_v2(v);
        memcpy(out + i, &v, sizeof v);
    }
#endif
    (void)wide;
    for (; i < n; i++)
        out[i] = gbc_exp(x[i]);
}

/* out[i] = gbc_log(x[i]) for i < n; out may be x. `wide`: gbc_exp_wide()'s
   answer. The same numbers either way. */
static void gbc_log_block(const double *x, double *out, intptr_t n, int wide)
{
    intptr_t i = 0;
#ifdef GBC_EXP_VECTORS
    gbc_exp_v2d v;
#if defined(__x86_64__) || defined(__i386__)
    if (wide) {
        gbc_log_block_avx2(x, out, n);
        return;
    }
#endif
    for (; i + 2 <= n; i += 2) {
        memcpy(&v, x + i, sizeof v);
        v = gbc_log_v2(v);
        memcpy(out + i, &v, sizeof v);
    }
#endif
    (void)wide;
    for (; i < n; i++)
        out[i] = gbc_log(x[i]);
}

#endif /* GBC_EXP_H */
