/* The arithmetic of the ragged kernels, shared by the Cython kernels
 * (sparsegrad/_kernels/ragged.pyx) and the CUDA ones (sparsegrad/_cuda/
 * ragged.cu).  See sg_base.h for the templates and the arithmetic rules.
 *
 * RaggedRange
 * -----------
 * sg_range_size(start, limit, delta, max_size): a row's size, or a negative
 *   code (SG_RANGE_ZERO_DELTA for delta == 0, SG_RANGE_TOO_LARGE for a size
 *   above max_size, NaN included).  Integer sizes are exact:
 *   ceil(|limit - start| / |delta|) in unsigned 64-bit arithmetic (no
 *   overflow, even for delta = -2**63).  Float sizes are
 *   ceil(|(limit - start) / delta|) in the values' precision, as TensorFlow
 *   computes them, then compared with max_size in double.
 *   bfloat16 sizes (sg_range_size_bf16, values as their bits) follow the
 *   same formula in Eigen's bfloat16 arithmetic: each of limit - start,
 *   / delta and ceil computed in float and rounded to bfloat16 at once
 *   (fabs is exact), then compared as the float sizes are.
 * sg_range_next(v, d): the next value of a row, v + d.  Integer rows run in
 *   the unsigned type of the values' width (SG_RANGE_U), so the addition
 *   after a row's last value wraps instead of overflowing; float rows are a
 *   chain of roundings in the values' type (bfloat16: sg_range_next_bf16,
 *   the sum in float rounded to bfloat16, as Eigen's bfloat16 += does).
 * sg_range_at(start, delta, j): value j of an integer row as the chain of
 *   sg_range_next from start gives it, start + j * delta modulo 2**width
 *   (the GPU enters a row at any value; the CPU at j = 0).
 *
 * Row splits
 * ----------
 * sg_range_total_overflows(total, size, max_total): whether a row of `size`
 *   (>= 0) takes the running total (0 <= total <= max_total) of the splits
 *   above max_total, the splits dtype's maximum.
 * sg_range_sat_add(a, b, max_total): a + b of two partial totals, where -1
 *   stands for "above max_total" and absorbs: associative, so any grouping
 *   of the rows gives the same answer (the GPU's tiled scan).
 *
 * bfloat16
 * --------
 * C has no bfloat16 type: sg_range_size_bf16 and sg_range_next_bf16 take
 * and give the 16 bits (sg_u16, sg_half.h's conversions), in C and C++
 * alike.  C++ (the CUDA kernels) also has the overloads sg_range_size and
 * sg_range_next on sg_sbf16 (sg_half.h's storage type), so that the
 * drivers' templates take bfloat16 as they take float.
 */
#ifdef SG_S
/* ---- templated section: SG_S the values' type ------------------------- */

#ifdef SG_RANGE_U
/* -- integer values: SG_RANGE_U is the unsigned type of their width -- */

SG_FN sg_i64 SG_F(sg_range_size)(SG_S start, SG_S limit, SG_S delta, sg_u64 max_size) {
    sg_u64 span, step, size;
    if (delta == 0) return SG_RANGE_ZERO_DELTA;
    if ((delta > 0 && limit < start) || (delta < 0 && limit > start)) return 0;
    /* |limit - start| and |delta| exactly, in unsigned 64-bit arithmetic */
    if (limit >= start)
        span = (sg_u64)(sg_i64)limit - (sg_u64)(sg_i64)start;
    else
        span = (sg_u64)(sg_i64)start - (sg_u64)(sg_i64)limit;
    if (delta > 0)
        step = (sg_u64)(sg_i64)delta;
    else
        step = (sg_u64)0 - (sg_u64)(sg_i64)delta;
    size = span / step;
    if (span % step != 0) size = size + 1;
    if (size > max_size) return SG_RANGE_TOO_LARGE;
    return (sg_i64)size;
}

SG_FN SG_RANGE_U SG_F(sg_range_next)(SG_RANGE_U v, SG_RANGE_U d) { return v + d; }

SG_FN SG_RANGE_U SG_F(sg_range_at)(SG_S start, SG_S delta, sg_i64 j) {
    return (SG_RANGE_U)start + (SG_RANGE_U)j * (SG_RANGE_U)delta;
}

#else
/* -- float values -- */

SG_FN sg_i64 SG_F(sg_range_size)(SG_S start, SG_S limit, SG_S delta, sg_u64 max_size) {
    SG_M size;
    if (delta == 0) return SG_RANGE_ZERO_DELTA;
    if ((delta > 0 && limit < start) || (delta < 0 && limit > start)) return 0;
    size = SG_LIBM(ceil)(SG_LIBM(fabs)((limit - start) / delta));
    return sg_range_checked_size((double)size, max_size);
}

SG_FN SG_S SG_F(sg_range_next)(SG_S v, SG_S d) { return v + d; }

#endif

#else
#ifndef SG_RAGGED_H
#define SG_RAGGED_H
#include "sg_base.h"
#include "sg_half.h"

/* Codes of sg_range_size in place of a size. */
#define SG_RANGE_ZERO_DELTA ((sg_i64)-1)
#define SG_RANGE_TOO_LARGE ((sg_i64)-2)
/* 2**63: the smallest float size that does not fit in sg_i64. */
#define SG_RANGE_TWO_63 9.223372036854775808e18

SG_FN int sg_range_total_overflows(sg_i64 total, sg_i64 size, sg_i64 max_total) {
    return size > max_total - total;
}

SG_FN sg_i64 sg_range_sat_add(sg_i64 a, sg_i64 b, sg_i64 max_total) {
    return (a < 0 || b < 0 || sg_range_total_overflows(a, b, max_total)) ? -1 : a + b;
}

/* A float row's size (a whole number, an infinity or NaN) as sg_range_size
 * returns it.  Compared in double: 2**31 - 1 is exact there, so a size of
 * 2**31 fails (TensorFlow compares in float, where the bound rounds to
 * 2**31, lets it pass and then overflows the cast); 2**63 - 1 rounds to
 * 2**63, hence the second test. */
SG_FN sg_i64 sg_range_checked_size(double size, sg_u64 max_size) {
    if (!(size <= (double)max_size) || size >= SG_RANGE_TWO_63)
        return SG_RANGE_TOO_LARGE;
    return (sg_i64)size;
}

/* ---- bfloat16 values, as their bits ------------------------------------ */

/* One operation of Eigen's bfloat16 arithmetic: its float result rounded to
 * bfloat16 (nearest, ties to even), held as a float. */
SG_FN float sg_range_bf16_round(float x) { return sg_bf16_to_f32(sg_f32_to_bf16(x)); }

/* TensorFlow's float size, ceil(|(limit - start) / delta|), with T =
 * bfloat16: the difference, the quotient and the ceiling each rounded to
 * bfloat16 (the ceiling of a bfloat16 value is one again: a no-op, kept as
 * Eigen writes it); fabs only clears the sign. */
SG_FN sg_i64 sg_range_size_bf16(sg_u16 start_bits, sg_u16 limit_bits,
                                sg_u16 delta_bits, sg_u64 max_size) {
    float start = sg_bf16_to_f32(start_bits);
    float limit = sg_bf16_to_f32(limit_bits);
    float delta = sg_bf16_to_f32(delta_bits);
    float span, ratio, size;
    if (delta == 0) return SG_RANGE_ZERO_DELTA;
    if ((delta > 0 && limit < start) || (delta < 0 && limit > start)) return 0;
    span = sg_range_bf16_round(limit - start);
    ratio = sg_range_bf16_round(span / delta);
    size = sg_range_bf16_round(ceilf(fabsf(ratio)));
    return sg_range_checked_size((double)size, max_size);
}

/* The next value of a bfloat16 row: v + d in float, rounded to bfloat16. */
SG_FN sg_u16 sg_range_next_bf16(sg_u16 v, sg_u16 d) {
    return sg_f32_to_bf16(sg_bf16_to_f32(v) + sg_bf16_to_f32(d));
}

#ifdef __cplusplus
/* The overloads of the drivers' templates (sg_half.h's storage type). */
SG_FN sg_i64 sg_range_size(sg_sbf16 start, sg_sbf16 limit, sg_sbf16 delta,
                           sg_u64 max_size) {
    return sg_range_size_bf16(start.bits, limit.bits, delta.bits, max_size);
}

SG_FN sg_sbf16 sg_range_next(sg_sbf16 v, sg_sbf16 d) {
    sg_sbf16 r;
    r.bits = sg_range_next_bf16(v.bits, d.bits);
    return r;
}
#endif

#include "sg_i32.h"
#define SG_RANGE_U sg_u32
#include "sg_ragged.h"
#undef SG_RANGE_U
#include "sg_i64.h"
#define SG_RANGE_U sg_u64
#include "sg_ragged.h"
#undef SG_RANGE_U
#include "sg_f32.h"
#include "sg_ragged.h"
#include "sg_f64.h"
#include "sg_ragged.h"
#include "sg_type_end.h"

#endif /* SG_RAGGED_H */
#endif /* SG_S */
