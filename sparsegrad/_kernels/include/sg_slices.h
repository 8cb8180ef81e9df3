/* The arithmetic of the IndexedSlices kernels, shared by the Cython kernels
 * (sparsegrad/_kernels/slices.pyx) and the CUDA ones (sparsegrad/_cuda/
 * slices.cu).  See sg_base.h for the templates and the arithmetic rules.
 *
 * Index range (integer instances: SG_S the index type)
 * ----------------------------------------------------
 * An index x lies in [0, n_rows) exactly when neither x nor last - x is
 * negative, last = n_rows - 1: in the unsigned type of the index width
 * (SG_SLICES_U, wrapping: no overflow, no branch), the sign bit of
 * x | (last - x) is clear.  An OR of such bits over many indices answers for
 * all of them (the CPU's loop, which vectorises); the GPU tests each index.
 *   sg_index_last(&last, n_rows): last, for n_rows >= 0; every non-negative
 *     index of the type is below an n_rows above the type's maximum, so the
 *     bound is the maximum then (n_rows == 0 wraps to a last that no index
 *     passes).
 *   sg_index_bits(x, last): x | (last - x).
 *   sg_index_bits_ok(bits): whether the sign bit of bits is clear.
 *
 * Rows (float instances: SG_S the value type)
 * -------------------------------------------
 *   sg_slices_acc(acc, x): acc + x, one contribution added to an output
 *     element (scatter_add, the sums of grouped rows).  The order of the
 *     contributions is the drivers': the original order of the indices.
 */
#ifdef SG_S
/* ---- templated section ------------------------------------------------- */

#ifdef SG_SLICES_U
/* -- integer indices: SG_SLICES_U the unsigned type of their width,
 * SG_SLICES_MAX their largest value -- */

SG_FN void SG_F(sg_index_last)(SG_SLICES_U* last, sg_i64 n_rows) {
    last[0] = (SG_SLICES_U)(n_rows - 1 <= SG_SLICES_MAX ? n_rows - 1 : SG_SLICES_MAX);
}

SG_FN SG_SLICES_U SG_F(sg_index_bits)(SG_S x, SG_SLICES_U last) {
    return (SG_SLICES_U)x | (last - (SG_SLICES_U)x);
}

SG_FN int SG_F(sg_index_bits_ok)(SG_SLICES_U bits) {
    return (bits >> (8 * sizeof(SG_SLICES_U) - 1)) == 0;
}

#else
/* -- float values -- */

SG_FN SG_M SG_F(sg_slices_acc)(SG_M acc, SG_S x) { return acc + x; }

#endif

#else
#ifndef SG_SLICES_H
#define SG_SLICES_H
#include "sg_base.h"

#include "sg_i32.h"
#define SG_SLICES_U sg_u32
#define SG_SLICES_MAX ((sg_i64)2147483647)
#include "sg_slices.h"
#undef SG_SLICES_U
#undef SG_SLICES_MAX
#include "sg_i64.h"
#define SG_SLICES_U sg_u64
#define SG_SLICES_MAX ((sg_i64)9223372036854775807LL)
#include "sg_slices.h"
#undef SG_SLICES_U
#undef SG_SLICES_MAX
#include "sg_f32.h"
#include "sg_slices.h"
#include "sg_f64.h"
#include "sg_slices.h"
#include "sg_type_end.h"

#endif /* SG_SLICES_H */
#endif /* SG_S */
