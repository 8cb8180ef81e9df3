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
 * sg_range_next(v, d): the next value of a row, v + d.  Integer rows run in
 *   the unsigned type of the values' width (SG_RANGE_U), so the addition
 *   after a row's last value wraps instead of overflowing; float rows are a
 *   chain of roundings in the values' type.
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
    double size_d;
    if (delta == 0) return SG_RANGE_ZERO_DELTA;
    if ((delta > 0 && limit < start) || (delta < 0 && limit > start)) return 0;
    size = SG_LIBM(ceil)(SG_LIBM(fabs)((limit - start) / delta));
    /* Compared in double: 2**31 - 1 is exact there, so a float32 size of
     * 2**31 fails (TensorFlow compares in float32, where the bound rounds to
     * 2**31, lets it pass and then overflows the cast); 2**63 - 1 rounds to
     * 2**63, hence the second test. */
    size_d = (double)size;
    if (!(size_d <= (double)max_size) || size_d >= SG_RANGE_TWO_63)
        return SG_RANGE_TOO_LARGE;
    return (sg_i64)size;
}

SG_FN SG_S SG_F(sg_range_next)(SG_S v, SG_S d) { return v + d; }

#endif

#else
#ifndef SG_RAGGED_H
#define SG_RAGGED_H
#include "sg_base.h"

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
