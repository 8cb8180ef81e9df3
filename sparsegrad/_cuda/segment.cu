// CUDA drivers of the segment family, as sparsegrad/_kernels/segment.pyx and
// _sparse_segment.pxi: segment reductions (sorted and unsorted), the product
// of the other rows of a segment, and the sparse segment (embedding-bag)
// reductions and their gradient.
//
// The arithmetic (NaN rules of max and min, products, the eight interleaved
// partial sums of a sorted 1-D sum, means, the combination with the fill,
// the bags' weighted terms, denominators and division) lives in
// sparsegrad/_kernels/include/sg_segment.h, which the Cython kernels include
// too.  Every output element (a segment or bag, one column) is computed by
// one thread that walks its rows in the order the Cython kernel walks them,
// in the value type, so the bits are the CPU's.  Neighbouring threads take
// neighbouring columns of one segment, so the row reads coalesce.  Index
// arrays are int64 (the launchers convert int32 ids); kernels never check:
// the launchers validate first.
#include "common.cuh"
#include "sg_segment.h"

#define SG_INT64_MIN (-9223372036854775807LL - 1LL)

// -- id summaries --------------------------------------------------------------
//
// summary_partial: each block reduces its grid-stride share of ids to (min,
// max, first position p with ids[p] < ids[p - 1], or n); summary_final folds
// the partials of all blocks in block order (one block).  Integer min/max are
// exact, so the answer does not depend on the launch shape.

// The block's (min of lo, max of hi, min of dec) by a tree over shared
// memory, given back in every thread's lo, hi and dec.  Every thread of the
// block must call it (barriers).
__device__ void sg_block_summary(i64 &lo, i64 &hi, i64 &dec) {
    __shared__ i64 s_min[SPARSEGRAD_BLOCK];
    __shared__ i64 s_max[SPARSEGRAD_BLOCK];
    __shared__ i64 s_dec[SPARSEGRAD_BLOCK];
    const int t = threadIdx.x;
    s_min[t] = lo;
    s_max[t] = hi;
    s_dec[t] = dec;
    __syncthreads();
    for (int stride = SPARSEGRAD_BLOCK / 2; stride > 0; stride /= 2) {
        if (t < stride) {
            s_min[t] = s_min[t + stride] < s_min[t] ? s_min[t + stride] : s_min[t];
            s_max[t] = s_max[t + stride] > s_max[t] ? s_max[t + stride] : s_max[t];
            s_dec[t] = s_dec[t + stride] < s_dec[t] ? s_dec[t + stride] : s_dec[t];
        }
        __syncthreads();
    }
    lo = s_min[0];
    hi = s_max[0];
    dec = s_dec[0];
}

extern "C" __global__ void summary_partial(const i64 *ids, i64 n, i64 *partial) {
    i64 lo = 9223372036854775807LL, hi = SG_INT64_MIN, dec = n;
    SG_GRID_LOOP(i, n) {
        i64 v = ids[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        if (i > 0 && v < ids[i - 1] && i < dec) dec = i;
    }
    sg_block_summary(lo, hi, dec);
    if (threadIdx.x == 0) {
        partial[3 * (i64)blockIdx.x] = lo;
        partial[3 * (i64)blockIdx.x + 1] = hi;
        partial[3 * (i64)blockIdx.x + 2] = dec;
    }
}

// out[0..5) = (min, max, first decrease or n, ids[0], ids[n - 1]); for n == 0
// (min, max) = (INT64_MAX, INT64_MIN) and the ends are 0.
extern "C" __global__ void summary_final(const i64 *ids, i64 n, const i64 *partial,
                                         i64 n_parts, i64 *out) {
    i64 lo = 9223372036854775807LL, hi = SG_INT64_MIN, dec = n;
    int t = threadIdx.x;
    for (i64 b = t; b < n_parts; b += SPARSEGRAD_BLOCK) {
        lo = partial[3 * b] < lo ? partial[3 * b] : lo;
        hi = partial[3 * b + 1] > hi ? partial[3 * b + 1] : hi;
        dec = partial[3 * b + 2] < dec ? partial[3 * b + 2] : dec;
    }
    sg_block_summary(lo, hi, dec);
    if (t == 0) {
        out[0] = lo;
        out[1] = hi;
        out[2] = dec;
        out[3] = n > 0 ? ids[0] : 0;
        out[4] = n > 0 ? ids[n - 1] : 0;
    }
}

// -- sorted_splits -------------------------------------------------------------
//
// splits[s] = the first position whose id is at least s (a binary search of
// the sorted ids per entry, which never leaves [0, n]): what the Cython loop
// writes at the boundaries of sorted ids, negative ids at the head skipped.
// One thread per entry, so a wide gap between two ids costs no single thread
// more than a search.

extern "C" __global__ void sorted_splits(const i64 *ids, i64 n, i64 n_segments,
                                         i64 *splits) {
    SG_GRID_LOOP(s, n_segments + 1) {
        i64 lo = 0, hi = n;   // the answer lies in [lo, hi]
        while (lo < hi) {
            i64 mid = lo + (hi - lo) / 2;
            if (ids[mid] < s)
                lo = mid + 1;
            else
                hi = mid;
        }
        splits[s] = lo;
    }
}

// -- segment reductions ----------------------------------------------------------

// e = s * width + j for s, j >= 0, in 32-bit arithmetic where it fits (a
// 64-bit division is a long software sequence on the GPU).
__device__ __forceinline__ void sg_split(i64 e, i64 width, i64 *s, i64 *j) {
    if (((e | width) >> 32) == 0) {
        unsigned int q = (unsigned int)e / (unsigned int)width;
        *s = (i64)q;
        *j = e - (i64)q * width;
    } else {
        *s = e / width;
        *j = e - *s * width;
    }
}

// acc = op(acc, col[row * width]) for the rows k in [lo, hi) (order[k] when
// order is given), in that order.  Four rows are loaded before they are
// combined: the chain of combinations keeps its order, but four loads are
// in flight per thread instead of one (a thread's loads would otherwise
// wait on each other's latency).
template <int OP, typename T>
__device__ __forceinline__ T sg_walk(T acc, const T *col, i64 width, const i64 *order,
                                     i64 lo, i64 hi) {
    i64 k = lo;
    for (; k + 4 <= hi; k += 4) {
        i64 r0 = order ? order[k] : k, r1 = order ? order[k + 1] : k + 1;
        i64 r2 = order ? order[k + 2] : k + 2, r3 = order ? order[k + 3] : k + 3;
        T v0 = col[r0 * width], v1 = col[r1 * width];
        T v2 = col[r2 * width], v3 = col[r3 * width];
        acc = sg_seg_apply(OP, acc, v0);
        acc = sg_seg_apply(OP, acc, v1);
        acc = sg_seg_apply(OP, acc, v2);
        acc = sg_seg_apply(OP, acc, v3);
    }
    for (; k < hi; ++k)
        acc = sg_seg_apply(OP, acc, col[(order ? order[k] : k) * width]);
    return acc;
}

template <typename T>
__device__ __forceinline__ T sg_walk_op(int op, T acc, const T *col, i64 width,
                                        const i64 *order, i64 lo, i64 hi) {
    switch (op) {
    case SG_SEG_SUM:
    case SG_SEG_MEAN: return sg_walk<SG_SEG_SUM, T>(acc, col, width, order, lo, hi);
    case SG_SEG_MAX: return sg_walk<SG_SEG_MAX, T>(acc, col, width, order, lo, hi);
    case SG_SEG_MIN: return sg_walk<SG_SEG_MIN, T>(acc, col, width, order, lo, hi);
    default: return sg_walk<SG_SEG_PROD, T>(acc, col, width, order, lo, hi);
    }
}

// out[s, j] for sorted segments given by splits (segment_reduce_ids): rows
// splits[s] .. splits[s + 1] - 1 in order, from the first row.  Neighbouring
// threads take neighbouring columns: each row read is coalesced.
template <typename T>
__device__ void segment_reduce_sorted(const T *data, i64 width, const i64 *splits,
                                      i64 n_segments, int op, T fill, int from_fill,
                                      T *out) {
    SG_GRID_LOOP(e, n_segments * width) {
        i64 s, j;
        sg_split(e, width, &s, &j);
        i64 lo = splits[s], hi = splits[s + 1];
        if (hi == lo) {
            out[e] = fill;
            continue;
        }
        T acc;
        if (width == 1 && (op == SG_SEG_SUM || op == SG_SEG_MEAN)) {
            acc = sg_seg_sum_contiguous(data + lo, hi - lo);
        } else {
            const T *col = data + j;
            acc = sg_walk_op(op, col[lo * width], col, width, (const i64 *)0, lo + 1, hi);
        }
        if (op == SG_SEG_MEAN) acc = sg_seg_mean(acc, hi - lo);
        if (from_fill) acc = sg_seg_with_fill(op, acc, fill);
        out[e] = acc;
    }
}

// out[s, j] = op(out[s, j], rows order[splits[s]] .. order[splits[s + 1] - 1])
// for ids in any order, grouped by a stable sort: `order` sorts the ids and
// `splits` are the row splits of the sorted ids, so each segment walks its
// rows in their original order from the value already in out (the fill);
// rows of negative ids or ids of n_segments or more lie outside the splits.
template <typename T>
__device__ void segment_reduce_ordered(const T *data, i64 width, const i64 *order,
                                       const i64 *splits, i64 n_segments, int op,
                                       T *out) {
    SG_GRID_LOOP(e, n_segments * width) {
        i64 s, j;
        sg_split(e, width, &s, &j);
        i64 lo = splits[s], hi = splits[s + 1];
        if (lo == hi) continue;
        out[e] = sg_walk_op(op, out[e], data + j, width, order, lo, hi);
    }
}

// prod_others: out[r, j] = product of the rows before r in its group times the
// product of those after it (prefix and suffix passes, as _others).
template <typename T>
__device__ void prod_others(const T *data, i64 width, const i64 *order,
                            const i64 *starts, i64 n_groups, T *out) {
    SG_GRID_LOOP(e, n_groups * width) {
        i64 g, j;
        sg_split(e, width, &g, &j);
        i64 lo = starts[g], hi = starts[g + 1];
        T acc = (T)1;
        for (i64 k = lo; k < hi; ++k) {
            i64 row = order[k];
            out[row * width + j] = acc;
            acc = sg_seg_prod(acc, data[row * width + j]);
        }
        acc = (T)1;
        for (i64 k = hi - 1; k >= lo; --k) {
            i64 row = order[k];
            out[row * width + j] = sg_seg_prod(out[row * width + j], acc);
            acc = sg_seg_prod(acc, data[row * width + j]);
        }
    }
}

// -- sparse segment reductions (embedding bags) ---------------------------------

// out[s, j] = combine(w_k * data[indices[k], j] for k in bag s), as _bag: the
// sum from zero in entry order, then the combiner's denominator.
template <typename T>
__device__ void sparse_segment_reduce(const T *data, i64 width, const i64 *indices,
                                      const T *weights, int weighted,
                                      const i64 *splits, i64 n_segments,
                                      int combiner, T *out) {
    SG_GRID_LOOP(e, n_segments * width) {
        i64 s, j;
        sg_split(e, width, &s, &j);
        i64 lo = splits[s], hi = splits[s + 1];
        const T *col = data + j;
        T acc = (T)0;
        // four table rows loaded before they are added (in entry order)
        i64 k = lo;
        for (; k + 4 <= hi; k += 4) {
            T v0 = col[indices[k] * width], v1 = col[indices[k + 1] * width];
            T v2 = col[indices[k + 2] * width], v3 = col[indices[k + 3] * width];
            if (weighted) {
                acc = sg_bag_add(acc, weights[k], v0);
                acc = sg_bag_add(acc, weights[k + 1], v1);
                acc = sg_bag_add(acc, weights[k + 2], v2);
                acc = sg_bag_add(acc, weights[k + 3], v3);
            } else {
                acc += v0;
                acc += v1;
                acc += v2;
                acc += v3;
            }
        }
        for (; k < hi; ++k) {
            T v = col[indices[k] * width];
            if (weighted)
                acc = sg_bag_add(acc, weights[k], v);
            else
                acc += v;
        }
        if (combiner == SG_BAG_SUM || hi == lo) {
            out[e] = acc;
            continue;
        }
        T denom = (T)0;
        if (weighted)
            for (i64 k = lo; k < hi; ++k)
                denom = sg_bag_denom_add(combiner, denom, weights[k]);
        denom = sg_bag_denom(combiner, weighted, denom, hi - lo);
        out[e] = sg_bag_scale(acc, denom);
    }
}

// out[u, j] = sum(coef[k] * grad[segment_of[k], j] for k in group u), in the
// order of `order` (sparse_segment_reduce_grad).
template <typename T>
__device__ void sparse_segment_reduce_grad(const T *grad, i64 width, const i64 *order,
                                           const i64 *starts, const i64 *segment_of,
                                           const T *coef, int scaled, i64 n_unique,
                                           T *out) {
    SG_GRID_LOOP(e, n_unique * width) {
        i64 u, j;
        sg_split(e, width, &u, &j);
        const T *col = grad + j;
        T acc = (T)0;
        // four upstream rows loaded before they are added (in group order)
        i64 p = starts[u];
        const i64 hi = starts[u + 1];
        for (; p + 4 <= hi; p += 4) {
            i64 k0 = order[p], k1 = order[p + 1], k2 = order[p + 2], k3 = order[p + 3];
            T v0 = col[segment_of[k0] * width], v1 = col[segment_of[k1] * width];
            T v2 = col[segment_of[k2] * width], v3 = col[segment_of[k3] * width];
            if (scaled) {
                acc = sg_bag_add(acc, coef[k0], v0);
                acc = sg_bag_add(acc, coef[k1], v1);
                acc = sg_bag_add(acc, coef[k2], v2);
                acc = sg_bag_add(acc, coef[k3], v3);
            } else {
                acc += v0;
                acc += v1;
                acc += v2;
                acc += v3;
            }
        }
        for (; p < hi; ++p) {
            i64 k = order[p];
            T v = col[segment_of[k] * width];
            if (scaled)
                acc = sg_bag_add(acc, coef[k], v);
            else
                acc += v;
        }
        out[e] = acc;
    }
}

// -- segments of ragged rows (the ragged segment ops) ---------------------------

// out_lengths[s]: the longest row of segment s (rows seg_splits[s] ..
// seg_splits[s + 1] - 1 of the row splits), one thread per segment;
// disordered[s]: 1 when a non-empty row of more than one value is followed
// by another non-empty row (the values' output positions go back).
extern "C" __global__ void ragged_segment_lengths(const i64 *splits,
                                                  const i64 *seg_splits,
                                                  i64 n_segments, i64 *out_lengths,
                                                  i64 *disordered) {
    SG_GRID_LOOP(s, n_segments) {
        i64 longest = 0, back = 0;
        int previous_long = 0;
        for (i64 r = seg_splits[s]; r < seg_splits[s + 1]; ++r) {
            i64 length = splits[r + 1] - splits[r];
            if (length > 0) {
                back |= previous_long;
                previous_long = length > 1;
            }
            longest = length > longest ? length : longest;
        }
        out_lengths[s] = longest;
        disordered[s] = back;
    }
}

// out[q, j] of output row s = out_rowids[q], position p = q - out_splits[s]:
// fill, then the value at position p of each row of segment s that has one,
// in the rows' order (the host's ragged_segment_rows, value by value).
template <typename T>
__device__ void ragged_segment_rows(const T *data, i64 width, const i64 *splits,
                                    const i64 *seg_splits, const i64 *out_splits,
                                    const i64 *out_rowids, i64 n_out, int op, T fill,
                                    T *out) {
    SG_GRID_LOOP(e, n_out * width) {
        i64 q, j;
        sg_split(e, width, &q, &j);
        const i64 s = out_rowids[q];
        const i64 p = q - out_splits[s];
        T acc = fill;
        for (i64 r = seg_splits[s]; r < seg_splits[s + 1]; ++r) {
            const i64 lo = splits[r];
            if (splits[r + 1] - lo > p) acc = sg_seg_apply(op, acc, data[(lo + p) * width + j]);
        }
        out[e] = acc;
    }
}

// -- the extern "C" entry points, one per value type ----------------------------

#define SG_SEGMENT_KERNELS(T, SUF)                                                   \
    extern "C" __global__ void segment_reduce_sorted_##SUF(                         \
        const T *data, i64 width, const i64 *splits, i64 n_segments, int op,        \
        T fill, int from_fill, T *out) {                                             \
        segment_reduce_sorted<T>(data, width, splits, n_segments, op, fill,          \
                                 from_fill, out);                                    \
    }                                                                                \
    extern "C" __global__ void segment_reduce_ordered_##SUF(                        \
        const T *data, i64 width, const i64 *order, const i64 *splits,              \
        i64 n_segments, int op, T *out) {                                            \
        segment_reduce_ordered<T>(data, width, order, splits, n_segments, op, out);  \
    }                                                                                \
    extern "C" __global__ void prod_others_##SUF(const T *data, i64 width,          \
                                                 const i64 *order, const i64 *starts,\
                                                 i64 n_groups, T *out) {             \
        prod_others<T>(data, width, order, starts, n_groups, out);                   \
    }                                                                                \
    extern "C" __global__ void sparse_segment_reduce_##SUF(                         \
        const T *data, i64 width, const i64 *indices, const T *weights,             \
        int weighted, const i64 *splits, i64 n_segments, int combiner, T *out) {    \
        sparse_segment_reduce<T>(data, width, indices, weights, weighted, splits,    \
                                 n_segments, combiner, out);                         \
    }                                                                                \
    extern "C" __global__ void sparse_segment_reduce_grad_##SUF(                    \
        const T *grad, i64 width, const i64 *order, const i64 *starts,              \
        const i64 *segment_of, const T *coef, int scaled, i64 n_unique, T *out) {   \
        sparse_segment_reduce_grad<T>(grad, width, order, starts, segment_of, coef,  \
                                      scaled, n_unique, out);                        \
    }                                                                                \
    extern "C" __global__ void ragged_segment_rows_##SUF(                           \
        const T *data, i64 width, const i64 *splits, const i64 *seg_splits,         \
        const i64 *out_splits, const i64 *out_rowids, i64 n_out, int op, T fill,    \
        T *out) {                                                                    \
        ragged_segment_rows<T>(data, width, splits, seg_splits, out_splits,          \
                               out_rowids, n_out, op, fill, out);                    \
    }

SG_SEGMENT_KERNELS(float, f32)
SG_SEGMENT_KERNELS(double, f64)
