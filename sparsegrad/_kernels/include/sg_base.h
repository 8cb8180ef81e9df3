/* sparsegrad's shared kernel sources: the base every family header includes.
 *
 * Each kernel body of sparsegrad (an optimizer's update of one element, the
 * arithmetic of the clip, segment, ragged and slices kernels) is written once,
 * in a header of this folder, and compiled twice: by the C compiler for the
 * Cython kernels of sparsegrad._kernels (`cdef extern from "sg_<family>.h"`)
 * and by NVRTC for the CUDA kernels of sparsegrad._cuda (`#include`, through
 * the -I option every module compiles with).  The drivers on each side keep
 * only threads, blocks, grouping and loads.
 *
 * Templates, in C and in C++
 * --------------------------
 * A header's templated section is written once in terms of
 *   SG_S  the storage type (what arrays hold),
 *   SG_M  the math type (what the arithmetic is done in),
 * and instantiated once per type pair by including the section again after
 * sg_f32.h, sg_f64.h (or sg_i32.h, sg_i64.h for integer kernels), ... (see
 * the end of this file: a header includes itself
 * with SG_S defined).  A function of a templated section is named SG_F(name):
 * `name_f32`, `name_f64` in C (which has no overloading), plain `name`,
 * overloaded on its argument types, in C++ (NVRTC; the CUDA drivers are
 * templates).  So every such function takes an argument of type SG_S, SG_M or
 * SG_T(...) (a type name, suffixed in both languages).
 *
 * Arithmetic rules
 * ----------------
 * Both compilers round every operation on its own: the C kernels compile
 * with -ffp-contract=off, the CUDA ones with --fmad=false, IEEE division and
 * square root.  Each expression keeps the reference's parenthesisation;
 * rsqrt(x) is 1 / sqrt(x).  pow and exp are called out of line on the GPU
 * (libdevice's own FMA stays in its body).  Add, multiply, divide and sqrt
 * then give the same bits on both; exp, log and pow (libdevice against
 * glibc) may differ in the last bits.
 *
 * Nothing here includes a system header on the GPU: NVRTC has none.
 */
#ifdef SG_S
/* ---- templated section: elementary functions of the math type ---------- */

SG_FN SG_M SG_F(sg_sqrt)(SG_M x) { return SG_LIBM(sqrt)(x); }
/* 1 / sqrt(x), each rounded: never a hardware estimate. */
SG_FN SG_M SG_F(sg_rsqrt)(SG_M x) { return (SG_M)1 / SG_LIBM(sqrt)(x); }
SG_FN SG_M SG_F(sg_abs)(SG_M x) { return SG_LIBM(fabs)(x); }
SG_FN_OUTLINE SG_M SG_F(sg_pow)(SG_M x, SG_M y) { return SG_LIBM(pow)(x, y); }
SG_FN_OUTLINE SG_M SG_F(sg_exp)(SG_M x) { return SG_LIBM(exp)(x); }
SG_FN_OUTLINE SG_M SG_F(sg_log)(SG_M x) { return SG_LIBM(log)(x); }
/* Eight partial sums combined in a fixed pattern (pairs, then pairs of
 * pairs): the end of every eight-way interleaved sum (the clip ops' sums of
 * squares, the segment sums). */
SG_FN SG_M SG_F(sg_combine8)(SG_M a0, SG_M a1, SG_M a2, SG_M a3, SG_M a4, SG_M a5,
                            SG_M a6, SG_M a7) {
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}
#ifndef __cplusplus
/* C's versions of the C++ templates below. */
SG_FN SG_M SG_F(sg_sign)(SG_M x) {
    SG_M s = (SG_M)(x > 0) - (SG_M)(x < 0);
    return x == x ? s : x;
}
SG_FN SG_M SG_F(sg_max)(SG_M a, SG_M b) { return a < b ? b : a; }
SG_FN SG_M SG_F(sg_min)(SG_M a, SG_M b) { return b < a ? b : a; }
SG_FN SG_M SG_F(sg_clamp)(SG_M x, SG_M lo, SG_M hi) {
    return SG_F(sg_max)(SG_F(sg_min)(x, hi), lo);
}
#endif

#else
#ifndef SG_BASE_H
#define SG_BASE_H

#if defined(__CUDACC__)
#define SG_FN static __device__ __forceinline__
#define SG_FN_OUTLINE static __device__ __noinline__
#elif defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
/* C++ on the host (the half training kernels): every function inlined into
 * the loop that calls it, whose flags, literal there, then leave it
 * branch-free, so that it vectorises (their rounding code makes the element
 * functions too large for GCC to inline them of its own accord). */
#include <math.h>
#define SG_FN static inline __attribute__((always_inline))
#define SG_FN_OUTLINE static inline
#else
#include <math.h>
#define SG_FN static inline
#define SG_FN_OUTLINE static inline
#endif

#define SG_CAT_(a, b) a##_##b
#define SG_CAT(a, b) SG_CAT_(a, b)
/* A type of a templated section: suffixed in both languages. */
#define SG_T(name) SG_CAT(name, SG_SFX)
#ifdef __cplusplus
#define SG_F(name) name
#else
#define SG_F(name) SG_CAT(name, SG_SFX)
#endif

/* The index type: int64_t of the Cython kernels, long long of the CUDA ones
 * (C++: NVRTC, which has no system header, and the emulator); and unsigned
 * 32- and 64-bit integers (wrapping arithmetic of the integer kernels). */
#ifdef __cplusplus
typedef long long sg_i64;
typedef unsigned int sg_u32;
typedef unsigned long long sg_u64;
#else
#include <stdint.h>
typedef int64_t sg_i64;
typedef uint32_t sg_u32;
typedef uint64_t sg_u64;
#endif

#ifdef __cplusplus
/* -1, 0 or +1; NaN stays NaN.  Branch-free, so that CPU loops vectorise. */
template <typename T> SG_FN T sg_sign(T x) {
    T s = (T)(x > 0) - (T)(x < 0);
    return x == x ? s : x;
}
/* max and min as the reference writes them: NaN handling follows the
 * comparison (a NaN `a` gives b from max, a NaN `b` gives a). */
template <typename T> SG_FN T sg_max(T a, T b) { return a < b ? b : a; }
template <typename T> SG_FN T sg_min(T a, T b) { return b < a ? b : a; }
/* max(min(x, hi), lo). */
template <typename T> SG_FN T sg_clamp(T x, T lo, T hi) { return sg_max(sg_min(x, hi), lo); }
#endif

#include "sg_f32.h"
#include "sg_base.h"
#include "sg_f64.h"
#include "sg_base.h"
#include "sg_type_end.h"

#ifndef __cplusplus
/* Type-generic names in C, as the C++ overloads: the first argument's type
 * picks the instance. */
#define SG_GENERIC(name, x) _Generic((x), float: name##_f32, double: name##_f64)
#define sg_sqrt(x) SG_GENERIC(sg_sqrt, x)(x)
#define sg_rsqrt(x) SG_GENERIC(sg_rsqrt, x)(x)
#define sg_abs(x) SG_GENERIC(sg_abs, x)(x)
#define sg_pow(x, y) SG_GENERIC(sg_pow, x)(x, y)
#define sg_exp(x) SG_GENERIC(sg_exp, x)(x)
#define sg_log(x) SG_GENERIC(sg_log, x)(x)
#define sg_sign(x) SG_GENERIC(sg_sign, x)(x)
#define sg_max(a, b) SG_GENERIC(sg_max, a)(a, b)
#define sg_min(a, b) SG_GENERIC(sg_min, a)(a, b)
#define sg_clamp(x, lo, hi) SG_GENERIC(sg_clamp, x)(x, lo, hi)
#define sg_combine8(a0, a1, a2, a3, a4, a5, a6, a7) \
    SG_GENERIC(sg_combine8, a0)(a0, a1, a2, a3, a4, a5, a6, a7)
#endif

#endif /* SG_BASE_H */
#endif /* SG_S */
