/* The arithmetic of the clip ops, shared by the Cython kernels
 * (sparsegrad/_kernels/clip.pyx) and the CUDA ones (sparsegrad/_cuda/clip.cu).
 * See sg_base.h for the templates and the arithmetic rules.
 *
 * The drivers keep the blocks, the threads and the order of every sum: a
 * sum of squares is cut into the same blocks on both sides, each block's
 * eight accumulator chains (or a grouped block's column sums) are added in
 * the same sequence, and the partials in table order.  What a driver adds to
 * a running sum comes from here:
 *
 *   sg_square(x)          the square of one value, exact in double;
 *   sg_square_add(a, x)   a + that square (one accumulator's step);
 *   the eight accumulators of a block combine by sg_base.h's sg_combine8;
 *   sg_norm(&n, total)    the norm, sqrt(total) rounded once to the type;
 *   sg_scale(x, c, d, divide), sg_scale_divides(d): (x * c) / d, or x * c;
 *   sg_np_minimum, sg_np_maximum, sg_np_clip: NumPy's NaN rule (a NaN
 *       operand gives NaN; a tie keeps the first operand);
 *   sg_global_scale(n, c), sg_norm_divisor(n, c): the clip ops' factors.
 */
#ifdef SG_S
/* ---- templated section ------------------------------------------------- */

/* x * x in double: exact for float values, TF's float64 sum of squares. */
SG_FN double SG_F(sg_square)(SG_S x) { return (double)x * (double)x; }

/* One step of an accumulator chain of a sum of squares. */
SG_FN double SG_F(sg_square_add)(double a, SG_S x) { return a + SG_F(sg_square)(x); }

/* The norm of a sum of squares: its square root in double, rounded once to
 * the value type. */
SG_FN void SG_F(sg_norm)(SG_M* norm, double total) { *norm = (SG_M)sg_sqrt(total); }

/* (x * c) / d in the value type (TF's clip_by_norm order), or x * c when
 * `divide` is 0 (d == 1: the division would change no bit).  The CPU's loops
 * pass `divide` as a constant, one loop each. */
SG_FN SG_M SG_F(sg_scale)(SG_M x, SG_M c, SG_M d, int divide) {
    return divide ? (x * c) / d : x * c;
}

/* Whether sg_scale must divide by d. */
SG_FN int SG_F(sg_scale_divides)(SG_M d) { return d != (SG_M)1; }

/* NumPy's minimum and maximum: a NaN operand gives NaN (a NaN `a` is kept,
 * a NaN `b` taken), a tie gives `a`. */
SG_FN SG_M SG_F(sg_np_minimum)(SG_M a, SG_M b) { return (a <= b || a != a) ? a : b; }
SG_FN SG_M SG_F(sg_np_maximum)(SG_M a, SG_M b) { return (a >= b || a != a) ? a : b; }

/* maximum(minimum(x, hi), lo) with NumPy's NaN rule (clip_by_value). */
SG_FN SG_M SG_F(sg_np_clip)(SG_M x, SG_M lo, SG_M hi) {
    return SG_F(sg_np_maximum)(SG_F(sg_np_minimum)(x, hi), lo);
}

/* clip_by_global_norm's scale factor from the global norm n and the clip
 * norm c: c * minimum(1 / n, 1 / c) + (n - n), each step rounded to the
 * value type (TF's formula, as NumPy's 0-d arithmetic). */
SG_FN SG_M SG_F(sg_global_scale)(SG_M n, SG_M c) {
    SG_M m = SG_F(sg_np_minimum)((SG_M)1 / n, (SG_M)1 / c);
    SG_M lhs = c * m;
    SG_M rhs = n - n;
    return lhs + rhs;
}

/* clip_by_norm's divisor: maximum(n, c), or 1 where that is 0 (c >= 0). */
SG_FN SG_M SG_F(sg_norm_divisor)(SG_M n, SG_M c) {
    SG_M d = SG_F(sg_np_maximum)(n, c);
    return d == (SG_M)0 ? (SG_M)1 : d;
}

#else
#ifndef SG_CLIP_H
#define SG_CLIP_H

#include "sg_base.h"

#include "sg_f32.h"
#include "sg_clip.h"
#include "sg_f64.h"
#include "sg_clip.h"
#include "sg_type_end.h"

#endif /* SG_CLIP_H */
#endif /* SG_S */
