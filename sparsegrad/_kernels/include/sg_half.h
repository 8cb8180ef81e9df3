/* The half-precision storage types of sparsegrad: float16 (IEEE binary16)
 * and bfloat16 (the top half of a float32), held as their 16 bits.
 *
 * Conversions (C and C++, host and device)
 * -----------------------------------------
 *   sg_f16_to_f32(h), sg_bf16_to_f32(h)   exact: every half value is a float
 *   sg_f32_to_f16(x), sg_f32_to_bf16(x)   round to nearest, ties to even
 *   sg_f64_to_f16(d)                      one rounding from double (round to
 *                                         odd into float first, so that the
 *                                         second rounding is the only one),
 *                                         as NumPy's float16 casts round
 *   sg_f64_to_bf16(d)                     through float, rounded twice, as
 *                                         ml_dtypes' and TensorFlow's (Eigen)
 *                                         casts to bfloat16 round
 * Denormals are kept both ways (nothing is flushed to zero), an overflow
 * gives an infinity, and a NaN stays a NaN of the same sign:
 *   float16   the quiet bit set and the top 9 bits of the float's payload
 *             kept; float16 to float32 sets the quiet bit and shifts the
 *             payload back (what F16C's VCVTPS2PH and VCVTPH2PS do);
 *   bfloat16  always 0x7fc0 with the sign (Eigen's and ml_dtypes' rule).
 * This code gives exactly the bits of F16C's instructions (the AVX2 builds,
 * compiled with -mf16c, also have sg_*_f16c, F16C's own conversions, which
 * the tests compare with it over every float16 and many floats).  The
 * kernels run it for single elements on every CPU; eight elements at a time
 * they run F16C's eight-wide conversions where the CPU has AVX2 and F16C
 * (the lane types at the end of this file), which GCC cannot produce from
 * scalar code.  bfloat16 never uses AVX-512 BF16's VCVTNEPS2BF16, which
 * flushes denormals to zero: its rounding here is three integer operations.
 *
 * Rounding arithmetic (C++ only: the training kernels' half instantiation)
 * -------------------------------------------------------------------------
 * TensorFlow's half kernels do every elementary operation in float32 and
 * round the result back to the storage type straight away
 * (reference/training_ops.md section 1.5).  sg_mf16 and sg_mbf16 are that
 * arithmetic: a value of the storage type held as a float; +, -, *, / and
 * the elementary functions compute in float and round once to the storage
 * type.  (Double rounding through float is harmless: float's 24 bits are at
 * least twice the storage type's 11 or 8, plus two.)  rsqrt rounds once,
 * after 1 / sqrt in float, as TensorFlow's half rsqrt does.  Comparisons are
 * the float ones.  sg_sf16 and sg_sbf16 are the storage (16 bits), which
 * converts to its math type exactly and is assigned from it.
 */
#ifndef SG_HALF_H
#define SG_HALF_H
#include "sg_base.h"

#if defined(__F16C__) && !defined(__CUDACC__)
#include <immintrin.h>
#define SG_HAVE_F16C 1
#endif

typedef unsigned short sg_u16;

/* A float's bits and back. */
#if defined(__CUDACC__)
SG_FN sg_u32 sg_f32_bits(float x) { return __float_as_uint(x); }
SG_FN float sg_f32_of_bits(sg_u32 u) { return __uint_as_float(u); }
#else
#include <string.h>
SG_FN sg_u32 sg_f32_bits(float x) {
    sg_u32 u;
    memcpy(&u, &x, sizeof u);
    return u;
}
SG_FN float sg_f32_of_bits(sg_u32 u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
#endif

/* ---- bfloat16 ---------------------------------------------------------- */

SG_FN float sg_bf16_to_f32(sg_u16 h) { return sg_f32_of_bits((sg_u32)h << 16); }

SG_FN sg_u16 sg_f32_to_bf16(float x) {
    sg_u32 u = sg_f32_bits(x);
    sg_u32 nan = (u & 0x7fffffffu) > 0x7f800000u;
    /* ties to even: add 0x7fff plus the bit that becomes the last one */
    sg_u32 r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (sg_u16)(nan ? ((u >> 16) & 0x8000u) | 0x7fc0u : r);
}

/* ---- float16 ----------------------------------------------------------- */

SG_FN float sg_f16_to_f32(sg_u16 h) {
    sg_u32 sign = (sg_u32)(h & 0x8000u) << 16;
    sg_u32 e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu)                     /* inf, or a NaN made quiet */
        return sg_f32_of_bits(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
    if (e == 0) {                       /* zero or denormal: m * 2**-24, exact */
        float mag = (float)m * 5.9604644775390625e-8f;
        return sign ? -mag : mag;
    }
    return sg_f32_of_bits(sign | ((e + 112u) << 23) | (m << 13));
}

SG_FN sg_u16 sg_f32_to_f16(float x) {
    sg_u32 u = sg_f32_bits(x);
    sg_u32 sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)                /* NaN: quiet, top of the payload */
        return (sg_u16)(sign | 0x7e00u | ((a & 0x7fffffu) >> 13));
    if (a >= 0x477ff000u)               /* at least 65520: rounds to inf */
        return (sg_u16)(sign | 0x7c00u);
    if (a < 0x38800000u) {              /* below 2**-14: a denormal or zero */
        /* |x| + 0.5 rounds |x| to a multiple of 2**-24 (float's spacing
         * there), ties to even; what lies above 0.5 is the denormal's
         * mantissa (0x400, the least normal, when it rounds up to it). */
        float y = sg_f32_of_bits(a) + 0.5f;
        return (sg_u16)(sign | (sg_f32_bits(y) - 0x3f000000u));
    }
    /* normal: rebias the exponent, round the 13 dropped bits to even */
    a = a - ((sg_u32)(127 - 15) << 23) + 0xfffu + ((a >> 13) & 1u);
    return (sg_u16)(sign | (a >> 13));
}

/* x rounded to float16 (to nearest, ties to even), as a float: the bits of
 * sg_f16_to_f32(sg_f32_to_f16(x)), in float arithmetic that vectorises.
 * Adding c = 2**(e + 13), e the exponent of |x| (at least 2**-1: float16's
 * denormals lie on the grid 2**-24), leaves 11 significant bits, rounded by
 * the addition itself; subtracting c is exact.  Beyond 65504 (65520 and up
 * round past it) the result is an infinity; a NaN keeps the top ten bits of
 * its payload and becomes quiet. */
SG_FN float sg_round_f16(float x) {
    sg_u32 u = sg_f32_bits(x), a = u & 0x7fffffffu;
    /* (exponents above 2**16, where everything rounds to inf, capped so
     * that c stays finite) */
    sg_u32 e = ((a < 0x47800000u ? a : 0x47800000u) & 0x7f800000u) + (13u << 23);
    float c = sg_f32_of_bits(e > 0x3f000000u ? e : 0x3f000000u);
    float r = (sg_f32_of_bits(a) + c) - c;
    sg_u32 rb = r > 65504.0f ? 0x7f800000u : sg_f32_bits(r);
    sg_u32 nan = (u & 0xffffe000u) | 0x00400000u;
    return sg_f32_of_bits(a > 0x7f800000u ? nan : (rb | (u & 0x80000000u)));
}

SG_FN float sg_round_bf16(float x) { return sg_bf16_to_f32(sg_f32_to_bf16(x)); }

#ifdef SG_HAVE_F16C
/* F16C's instructions, for the tests that hold the code above to them (the
 * kernels use the code above: its loops vectorise, F16C's scalar
 * conversions keep a loop scalar, which measured twice as slow). */
SG_FN float sg_f16_to_f32_f16c(sg_u16 h) { return _cvtsh_ss(h); }
SG_FN sg_u16 sg_f32_to_f16_f16c(float x) { return (sg_u16)_cvtss_sh(x, 0); }
#endif

#ifndef __CUDACC__
/* dst[j] = the float of the half bits src[j], j < n (exact): the host's
 * rows; float16 eight at a time with F16C where the build has AVX2 and F16C
 * (the same values as sg_f16_to_f32). */
static inline void sg_half_row_to_f32(const sg_u16* src, float* dst, sg_i64 n,
                                      int bf16) {
    sg_i64 j = 0;
    if (bf16) {
        for (; j < n; ++j) dst[j] = sg_bf16_to_f32(src[j]);
        return;
    }
#if defined(SG_HAVE_F16C) && defined(__AVX2__)
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(dst + j,
                         _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(src + j))));
#endif
    for (; j < n; ++j) dst[j] = sg_f16_to_f32(src[j]);
}

/* dst[j] = src[j] rounded to the half type (to nearest, ties to even), j <
 * n: sg_f32_to_f16 / sg_f32_to_bf16 of each value, float16 eight at a time
 * with F16C where the build has AVX2 and F16C (the same bits). */
static inline void sg_half_row_from_f32(const float* src, sg_u16* dst, sg_i64 n,
                                        int bf16) {
    sg_i64 j = 0;
    if (bf16) {
        for (; j < n; ++j) dst[j] = sg_f32_to_bf16(src[j]);
        return;
    }
#if defined(SG_HAVE_F16C) && defined(__AVX2__)
    for (; j + 8 <= n; j += 8)
        _mm_storeu_si128((__m128i*)(dst + j), _mm256_cvtps_ph(_mm256_loadu_ps(src + j), 0));
#endif
    for (; j < n; ++j) dst[j] = sg_f32_to_f16(src[j]);
}
#endif

/* ---- from double, one rounding ----------------------------------------- */

/* d in float rounded to odd: toward zero, then the last bit set when
 * anything was dropped.  Rounding that to a type of at most 22 bits of
 * precision is the correct rounding of d itself (float16's 11 here). */
SG_FN float sg_f64_to_f32_odd(double d) {
    float f = (float)d;
    if ((double)f != d && f == f) {
        sg_u32 u = sg_f32_bits(f);
        double af = f < 0 ? -(double)f : (double)f, ad = d < 0 ? -d : d;
        if (af > ad) u = u - 1u;        /* rounded away from zero: step back */
        return sg_f32_of_bits(u | 1u);
    }
    return f;
}

SG_FN sg_u16 sg_f64_to_f16(double d) { return sg_f32_to_f16(sg_f64_to_f32_odd(d)); }
SG_FN sg_u16 sg_f64_to_bf16(double d) { return sg_f32_to_bf16((float)d); }

#ifdef __cplusplus
/* ---- the rounding arithmetic ------------------------------------------- */

#if defined(__CUDACC__)
#define SG_MEMBER __device__ __forceinline__
#elif defined(__GNUC__) || defined(__clang__)
#define SG_MEMBER inline __attribute__((always_inline))
#else
#define SG_MEMBER inline
#endif

/* SG_HALF_TYPES(M, S, TO, FROM, FROM64): math type M, storage type S, with
 * the conversions float -> bits TO, bits -> float FROM and double -> bits
 * FROM64.  The operators are free functions of M (not templates), so that an
 * int, a double or a storage value converts to M on either side. */
#define SG_HALF_TYPES(M, S, ROUND, TO, FROM, FROM64)                           \
    struct M {                                                                 \
        float f; /* a value of the storage type */                            \
        M() = default;                                                         \
        SG_MEMBER M(float x) : f(ROUND(x)) {}                                  \
        SG_MEMBER M(double x) : f(FROM(FROM64(x))) {}                          \
        SG_MEMBER M(int x) : f(FROM(FROM64((double)x))) {}                     \
        SG_MEMBER M(bool x) : f(x ? 1.0f : 0.0f) {}                            \
        static SG_MEMBER M exact(float x) {                                    \
            M r;                                                               \
            r.f = x;                                                           \
            return r;                                                          \
        }                                                                      \
        SG_MEMBER explicit operator float() const { return f; }                \
        SG_MEMBER explicit operator double() const { return (double)f; }       \
    };                                                                         \
    struct S {                                                                 \
        sg_u16 bits;                                                           \
        SG_MEMBER operator M() const { return M::exact(FROM(bits)); }          \
        SG_MEMBER explicit operator float() const { return FROM(bits); }       \
        SG_MEMBER explicit operator double() const { return (double)FROM(bits); } \
        SG_MEMBER S& operator=(M x) {                                          \
            bits = TO(x.f); /* exact: x holds a value of this type */         \
            return *this;                                                      \
        }                                                                      \
    };                                                                         \
    SG_FN M operator+(M a, M b) { return M(a.f + b.f); }                       \
    SG_FN M operator-(M a, M b) { return M(a.f - b.f); }                       \
    SG_FN M operator*(M a, M b) { return M(a.f * b.f); }                       \
    SG_FN M operator/(M a, M b) { return M(a.f / b.f); }                       \
    SG_FN M operator-(M a) { return M::exact(-a.f); }                          \
    SG_FN bool operator<(M a, M b) { return a.f < b.f; }                       \
    SG_FN bool operator>(M a, M b) { return a.f > b.f; }                       \
    SG_FN bool operator<=(M a, M b) { return a.f <= b.f; }                     \
    SG_FN bool operator>=(M a, M b) { return a.f >= b.f; }                     \
    SG_FN bool operator==(M a, M b) { return a.f == b.f; }                     \
    SG_FN bool operator!=(M a, M b) { return a.f != b.f; }                     \
    SG_FN M sg_sqrt(M x) { return M(sqrtf(x.f)); }                             \
    SG_FN M sg_rsqrt(M x) { return M(1.0f / sqrtf(x.f)); }                     \
    SG_FN M sg_abs(M x) { return M::exact(fabsf(x.f)); }                       \
    SG_FN M sg_sign(S x) { return sg_sign((M)x); }                             \
    SG_FN_OUTLINE M sg_pow(M x, M y) { return M(powf(x.f, y.f)); }             \
    SG_FN_OUTLINE M sg_exp(M x) { return M(expf(x.f)); }                       \
    SG_FN_OUTLINE M sg_log(M x) { return M(logf(x.f)); }

SG_HALF_TYPES(sg_mf16, sg_sf16, sg_round_f16, sg_f32_to_f16, sg_f16_to_f32,
              sg_f64_to_f16)
SG_HALF_TYPES(sg_mbf16, sg_sbf16, sg_round_bf16, sg_f32_to_bf16, sg_bf16_to_f32,
              sg_f64_to_bf16)
#undef SG_HALF_TYPES

#ifndef __CUDACC__
/* ---- eight lanes at once (the host) ------------------------------------ *
 * sg_lmf16 / sg_lmbf16 are eight values of the math types above, and
 * sg_lsf16 / sg_lsbf16 eight of the storage types (16 bytes, any alignment):
 * the element functions of sg_training.h instantiated for them update eight
 * contiguous elements in one call, each lane exactly as the scalar instance
 * does (elementwise rounding is the same in every lane).  With AVX2 and F16C
 * the lanes are one register and a rounding is F16C's conversion there and
 * back (float16: the bits of sg_round_f16, which the tests check) or three
 * integer operations (bfloat16): the per-operation rounding vectorises by
 * hand, which GCC does not do with F16C's conversions.  Elsewhere the lanes
 * are eight scalars in a loop.  Comparisons give a lane mask, which has no
 * truth value: a function that branches per element (FTRL, the proximal ops,
 * AdagradDA, PowerSign, Lamb, row-wise Adagrad) does not compile for lanes,
 * and sg_training.h leaves those to the scalar instance (SG_LANE). */
#define SG_LANE_COUNT 8
#if defined(__AVX2__) && defined(__F16C__)
#define SG_LANES_SIMD 1
SG_FN __m256 sg_v_round_f16(__m256 x) { return _mm256_cvtph_ps(_mm256_cvtps_ph(x, 0)); }
SG_FN __m256 sg_v_round_bf16(__m256 x) {
    __m256i u = _mm256_castps_si256(x);
    __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000));
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
    __m256i q = _mm256_or_si256(_mm256_and_si256(u, _mm256_set1_epi32((int)0x80000000u)),
                                _mm256_set1_epi32(0x7fc00000));
    r = _mm256_and_si256(r, _mm256_set1_epi32((int)0xffff0000u));
    return _mm256_castsi256_ps(_mm256_blendv_epi8(r, q, nan));
}
SG_FN __m256 sg_v_load_f16(const sg_u16* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
}
SG_FN void sg_v_store_f16(sg_u16* p, __m256 x) {
    _mm_storeu_si128((__m128i*)p, _mm256_cvtps_ph(x, 0));
}
SG_FN __m256 sg_v_load_bf16(const sg_u16* p) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
SG_FN void sg_v_store_bf16(sg_u16* p, __m256 x) {   /* x holds bfloat16 values */
    __m256i h = _mm256_srli_epi32(_mm256_castps_si256(x), 16);
    _mm_storeu_si128((__m128i*)p, _mm_packus_epi32(_mm256_castsi256_si128(h),
                                                   _mm256_extracti128_si256(h, 1)));
}
struct sg_lmask { __m256 m; };
#define SG_LANE_TYPES(L, LS, M, ROUND, LOAD, STORE)                            \
    struct L {                                                                 \
        __m256 f;                                                              \
        L() = default;                                                         \
        static SG_MEMBER L raw(__m256 x) {                                     \
            L r;                                                               \
            r.f = x;                                                           \
            return r;                                                          \
        }                                                                      \
        SG_MEMBER L(double x) : f(_mm256_set1_ps(M(x).f)) {}                   \
        SG_MEMBER L(float x) : f(_mm256_set1_ps(M(x).f)) {}                    \
        SG_MEMBER L(int x) : f(_mm256_set1_ps(M(x).f)) {}                      \
    };                                                                         \
    struct LS {                                                                \
        sg_u16 bits[SG_LANE_COUNT];                                            \
        SG_MEMBER operator L() const { return L::raw(LOAD(bits)); }            \
        SG_MEMBER LS& operator=(L x) {                                         \
            STORE(bits, x.f);                                                  \
            return *this;                                                      \
        }                                                                      \
    };                                                                         \
    SG_FN L operator+(L a, L b) { return L::raw(ROUND(_mm256_add_ps(a.f, b.f))); } \
    SG_FN L operator-(L a, L b) { return L::raw(ROUND(_mm256_sub_ps(a.f, b.f))); } \
    SG_FN L operator*(L a, L b) { return L::raw(ROUND(_mm256_mul_ps(a.f, b.f))); } \
    SG_FN L operator/(L a, L b) { return L::raw(ROUND(_mm256_div_ps(a.f, b.f))); } \
    SG_FN L operator-(L a) {                                                   \
        return L::raw(_mm256_xor_ps(a.f, _mm256_set1_ps(-0.0f)));              \
    }                                                                          \
    SG_FN sg_lmask operator<(L a, L b) { return {_mm256_cmp_ps(a.f, b.f, _CMP_LT_OQ)}; } \
    SG_FN sg_lmask operator>(L a, L b) { return {_mm256_cmp_ps(a.f, b.f, _CMP_GT_OQ)}; } \
    SG_FN L sg_sqrt(L x) { return L::raw(ROUND(_mm256_sqrt_ps(x.f))); }       \
    SG_FN L sg_rsqrt(L x) {                                                    \
        __m256 one = _mm256_set1_ps(1.0f);                                     \
        return L::raw(ROUND(_mm256_div_ps(one, _mm256_sqrt_ps(x.f))));         \
    }                                                                          \
    SG_FN L sg_abs(L x) { return L::raw(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x.f)); } \
    /* sg_base.h's rules: -1, 0 or +1 (NaN stays NaN); max and min as the   \
     * comparison picks (a NaN a gives b from max, a NaN b gives a). */      \
    SG_FN L sg_sign(L x) {                                                     \
        __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);        \
        __m256 pos = _mm256_and_ps(_mm256_cmp_ps(x.f, zero, _CMP_GT_OQ), one);  \
        __m256 neg = _mm256_and_ps(_mm256_cmp_ps(x.f, zero, _CMP_LT_OQ), one);  \
        __m256 s = _mm256_sub_ps(pos, neg);                                    \
        return L::raw(_mm256_blendv_ps(x.f, s, _mm256_cmp_ps(x.f, x.f, _CMP_EQ_OQ))); \
    }                                                                          \
    SG_FN L sg_sign(LS x) { return sg_sign((L)x); }                            \
    SG_FN L sg_max(L a, L b) {                                                 \
        return L::raw(_mm256_blendv_ps(a.f, b.f, _mm256_cmp_ps(a.f, b.f, _CMP_LT_OQ))); \
    }                                                                          \
    SG_FN L sg_max(LS a, LS b) { return sg_max((L)a, (L)b); }                  \
    SG_FN L sg_min(L a, L b) {                                                 \
        return L::raw(_mm256_blendv_ps(a.f, b.f, _mm256_cmp_ps(b.f, a.f, _CMP_LT_OQ))); \
    }

SG_LANE_TYPES(sg_lmf16, sg_lsf16, sg_mf16, sg_v_round_f16, sg_v_load_f16,
              sg_v_store_f16)
SG_LANE_TYPES(sg_lmbf16, sg_lsbf16, sg_mbf16, sg_v_round_bf16, sg_v_load_bf16,
              sg_v_store_bf16)
#undef SG_LANE_TYPES

#else
/* Portable lanes: eight scalars, each operation a loop over them. */
struct sg_lmask { bool m[SG_LANE_COUNT]; };
#define SG_LANE_TYPES(L, LS, M, S)                                             \
    struct L {                                                                 \
        M e[SG_LANE_COUNT];                                                    \
        L() = default;                                                         \
        SG_MEMBER L(double x) { for (int i = 0; i < SG_LANE_COUNT; ++i) e[i] = M(x); } \
        SG_MEMBER L(float x) { for (int i = 0; i < SG_LANE_COUNT; ++i) e[i] = M(x); } \
        SG_MEMBER L(int x) { for (int i = 0; i < SG_LANE_COUNT; ++i) e[i] = M(x); } \
    };                                                                         \
    struct LS {                                                                \
        S e[SG_LANE_COUNT];                                                    \
        SG_MEMBER operator L() const {                                         \
            L r;                                                               \
            for (int i = 0; i < SG_LANE_COUNT; ++i) r.e[i] = e[i];             \
            return r;                                                          \
        }                                                                      \
        SG_MEMBER LS& operator=(L x) {                                         \
            for (int i = 0; i < SG_LANE_COUNT; ++i) e[i] = x.e[i];             \
            return *this;                                                      \
        }                                                                      \
    };                                                                         \
    SG_LANE_BINARY(L, +) SG_LANE_BINARY(L, -) SG_LANE_BINARY(L, *)            \
    SG_LANE_BINARY(L, /)                                                       \
    SG_FN L operator-(L a) { SG_LANE_MAP(L, -a.e[i]) }                         \
    SG_FN sg_lmask operator<(L a, L b) { SG_LANE_TEST(a.e[i] < b.e[i]) }       \
    SG_FN sg_lmask operator>(L a, L b) { SG_LANE_TEST(a.e[i] > b.e[i]) }       \
    SG_FN L sg_sqrt(L x) { SG_LANE_MAP(L, sg_sqrt(x.e[i])) }                   \
    SG_FN L sg_rsqrt(L x) { SG_LANE_MAP(L, sg_rsqrt(x.e[i])) }                 \
    SG_FN L sg_abs(L x) { SG_LANE_MAP(L, sg_abs(x.e[i])) }                     \
    SG_FN L sg_sign(L x) { SG_LANE_MAP(L, sg_sign(x.e[i])) }                   \
    SG_FN L sg_sign(LS x) { return sg_sign((L)x); }                            \
    SG_FN L sg_max(L a, L b) { SG_LANE_MAP(L, sg_max(a.e[i], b.e[i])) }        \
    SG_FN L sg_max(LS a, LS b) { return sg_max((L)a, (L)b); }                  \
    SG_FN L sg_min(L a, L b) { SG_LANE_MAP(L, sg_min(a.e[i], b.e[i])) }
#define SG_LANE_MAP(L, expr)                                                   \
    L r;                                                                       \
    for (int i = 0; i < SG_LANE_COUNT; ++i) r.e[i] = expr;                     \
    return r;
#define SG_LANE_TEST(expr)                                                     \
    sg_lmask r;                                                                \
    for (int i = 0; i < SG_LANE_COUNT; ++i) r.m[i] = expr;                     \
    return r;
#define SG_LANE_BINARY(L, op)                                                  \
    SG_FN L operator op(L a, L b) { SG_LANE_MAP(L, a.e[i] op b.e[i]) }

SG_LANE_TYPES(sg_lmf16, sg_lsf16, sg_mf16, sg_sf16)
SG_LANE_TYPES(sg_lmbf16, sg_lsbf16, sg_mbf16, sg_sbf16)
#undef SG_LANE_TYPES
#undef SG_LANE_MAP
#undef SG_LANE_TEST
#undef SG_LANE_BINARY
#endif /* SIMD or portable lanes */
#endif /* !__CUDACC__ */

#endif /* __cplusplus */
#endif /* SG_HALF_H */
