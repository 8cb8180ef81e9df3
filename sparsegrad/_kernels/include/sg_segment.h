/* The arithmetic of the segment family, shared by the Cython kernels
 * (sparsegrad/_kernels/segment.pyx, _sparse_segment.pxi) and the CUDA ones
 * (sparsegrad/_cuda/segment.cu).  See sg_base.h for the templates and the
 * arithmetic rules.
 *
 * The drivers keep the threads, the order of each reduction (which row is
 * combined with which, and when), the loads and stores; every value they
 * compute beyond a plain running sum `acc + x` comes from here:
 *
 *   segment reductions   sg_seg_max, sg_seg_min (NaN wins), sg_seg_prod,
 *                        sg_seg_apply (one of them by op code),
 *                        sg_seg_sum_contiguous (eight interleaved partial
 *                        sums), sg_seg_mean, sg_seg_with_fill;
 *   embedding bags       sg_bag_add (a weighted term), sg_bag_denom_add,
 *                        sg_bag_denom (the combiner's denominator),
 *                        sg_bag_scale (the division, zero over zero);
 *                        the gradient of a bag is a sum of sg_bag_add terms.
 *
 * The op and combiner codes below are the numbers of the Python layer
 * (sparsegrad.ops.segment_ops, sparse_segment_ops).  Integer segment ops
 * have no kernel here: they take NumPy (CPU) and CuPy (GPU) operations.
 */
#ifdef SG_S
/* ---- templated section ------------------------------------------------- */

/* The larger of acc and v; a NaN v replaces acc, and a NaN acc stays (no
 * value compares greater than it). */
SG_FN SG_M SG_F(sg_seg_max)(SG_M acc, SG_M v) {
    return (v > acc || v != v) ? v : acc;
}

/* The smaller, NaN as in sg_seg_max. */
SG_FN SG_M SG_F(sg_seg_min)(SG_M acc, SG_M v) {
    return (v < acc || v != v) ? v : acc;
}

/* A running product, operands in this order. */
SG_FN SG_M SG_F(sg_seg_prod)(SG_M acc, SG_M v) { return acc * v; }

/* acc combined with the next row's v by op (a mean sums; its division comes
 * at the end, sg_seg_mean).  The drivers pass op as a constant. */
SG_FN SG_M SG_F(sg_seg_apply)(int op, SG_M acc, SG_M v) {
    if (op == SG_SEG_SUM || op == SG_SEG_MEAN) return acc + v;
    if (op == SG_SEG_MAX) return SG_F(sg_seg_max)(acc, v);
    if (op == SG_SEG_MIN) return SG_F(sg_seg_min)(acc, v);
    return SG_F(sg_seg_prod)(acc, v);
}

/* The sum of x[0..n), n >= 1, of a sorted 1-D segment: eight interleaved
 * partial sums (deterministic, and not bound by the latency of one chain of
 * additions) combined pairwise, then the tail in order; fewer than eight
 * values are one chain. */
SG_FN SG_M SG_F(sg_seg_sum_contiguous)(const SG_S* x, sg_i64 n) {
    SG_M a0, a1, a2, a3, a4, a5, a6, a7, acc;
    sg_i64 k = 8;
    if (n < 8) {
        acc = x[0];
        for (k = 1; k < n; ++k) acc = acc + x[k];
        return acc;
    }
    a0 = x[0];
    a1 = x[1];
    a2 = x[2];
    a3 = x[3];
    a4 = x[4];
    a5 = x[5];
    a6 = x[6];
    a7 = x[7];
    while (k + 8 <= n) {
        a0 = a0 + x[k];
        a1 = a1 + x[k + 1];
        a2 = a2 + x[k + 2];
        a3 = a3 + x[k + 3];
        a4 = a4 + x[k + 4];
        a5 = a5 + x[k + 5];
        a6 = a6 + x[k + 6];
        a7 = a7 + x[k + 7];
        k = k + 8;
    }
    acc = SG_F(sg_combine8)(a0, a1, a2, a3, a4, a5, a6, a7);
    for (; k < n; ++k) acc = acc + x[k];
    return acc;
}

/* The mean of a segment of count rows from their sum: the count is rounded
 * to the value type. */
SG_FN SG_M SG_F(sg_seg_mean)(SG_M sum, sg_i64 count) { return sum / (SG_M)count; }

/* A reduced value v combined with the fill, as the unsorted ops start from
 * it: a sum adds it (-0.0 becomes 0.0), max and min compare with it (NaN
 * kept), a product (fill 1) and a mean leave v as it is. */
SG_FN SG_M SG_F(sg_seg_with_fill)(int op, SG_M v, SG_M fill) {
    if (op == SG_SEG_SUM) return fill + v;
    if (op == SG_SEG_MAX && v < fill) return fill;
    if (op == SG_SEG_MIN && v > fill) return fill;
    return v;
}

/* acc plus one weighted term w * v (a bag's entry, or a gradient's). */
SG_FN SG_M SG_F(sg_bag_add)(SG_M acc, SG_M w, SG_M v) { return acc + w * v; }

/* The running denominator of a weighted bag: the sum of the weights (mean)
 * or of their squares (sqrtn). */
SG_FN SG_M SG_F(sg_bag_denom_add)(int combiner, SG_M denom, SG_M w) {
    return combiner == SG_BAG_MEAN ? denom + w : denom + w * w;
}

/* The denominator of a bag of count >= 1 entries under combiner MEAN or
 * SQRTN: unweighted, the count (TensorFlow's SparseSegmentMean / SqrtN: its
 * square root taken in double) in the value type; weighted, wsum (from
 * sg_bag_denom_add), its square root taken in double for SQRTN. */
SG_FN SG_M SG_F(sg_bag_denom)(int combiner, int weighted, SG_M wsum, sg_i64 count) {
    if (!weighted)
        return combiner == SG_BAG_MEAN ? (SG_M)count : (SG_M)sg_sqrt((double)count);
    return combiner == SG_BAG_SQRTN ? (SG_M)sg_sqrt((double)wsum) : wsum;
}

/* x / denom, or zero where denom is zero (div_no_nan: a bag whose weights
 * sum to zero gives zeros). */
SG_FN SG_M SG_F(sg_bag_scale)(SG_M x, SG_M denom) {
    return denom == 0 ? (SG_M)0 : x / denom;
}

#else
#ifndef SG_SEGMENT_H
#define SG_SEGMENT_H
#include "sg_base.h"

/* Reduction codes (SUM, MEAN, ... of sparsegrad._kernels.segment). */
#define SG_SEG_SUM 0
#define SG_SEG_MEAN 1
#define SG_SEG_MAX 2
#define SG_SEG_MIN 3
#define SG_SEG_PROD 4

/* Combiners of the bags (sparsegrad.ops.sparse_segment_ops). */
#define SG_BAG_SUM 0
#define SG_BAG_MEAN 1
#define SG_BAG_SQRTN 2

#include "sg_f32.h"
#include "sg_segment.h"
#include "sg_f64.h"
#include "sg_segment.h"
#include "sg_type_end.h"

#endif /* SG_SEGMENT_H */
#endif /* SG_S */
