// CUDA twins of sparsegrad/_kernels/slices.pyx: scatter into a dense array,
// sums of grouped rows, gathers, and the index range check.
//
// Duplicate indices are never resolved by atomics: the launcher sorts the
// indices stably first, then each distinct row is written by the threads of
// one block (narrow rows share one), one thread a column, walking the row's
// duplicates in their original order; each output element is therefore
// accumulated by one thread, in the order of the CPU kernel, and has its
// bits.
//
// The arithmetic (the index range test, the addition of one contribution to
// an output element) lives in sg_slices.h, shared with the Cython kernels;
// this file keeps the threads, blocks, grouping and the loads and stores.
#include "common.cuh"
#include "sg_slices.h"

// ---- index range ------------------------------------------------------------

// bad[0] = 1 when an index lies outside [0, n_rows).  Every thread that sees
// one stores the same value, so the result does not depend on which did.
// U: the unsigned type of the index width (sg_slices.h's test).
#define SG_RANGE_FLAG(NAME, IDX, U)                                           \
    extern "C" __global__ void NAME(const IDX* __restrict__ indices, i64 n,    \
                                    i64 n_rows, int* __restrict__ bad) {       \
        U last;                                                                \
        sg_index_last(&last, n_rows);                                          \
        SG_GRID_LOOP(k, n) {                                                   \
            U bits = sg_index_bits(indices[k], last);                          \
            if (!sg_index_bits_ok(bits)) bad[0] = 1;                           \
        }                                                                      \
    }
SG_RANGE_FLAG(range_flag_i32, int, sg_u32)
SG_RANGE_FLAG(range_flag_i64, i64, sg_u64)

// ---- rows of a block ----------------------------------------------------------
// Rows of `width` elements: rows narrower than a block share one, BLOCK /
// width rows at a time (its threads take the columns of each); a wider row
// takes a block whose threads stride its columns.  Neighbouring threads take
// neighbouring columns (coalesced), and no thread of a narrow row idles
// while a block's other threads work.  No barrier: a thread may leave early.
#define SG_ROWS_LOOP(g, j, n, width, ...)                                      \
    {                                                                          \
        const bool narrow = (width) < SPARSEGRAD_BLOCK;                        \
        const i64 per = narrow ? SPARSEGRAD_BLOCK / (width) : 1;               \
        const i64 sub = narrow ? (i64)threadIdx.x / (width) : 0;               \
        const i64 j0 = (i64)threadIdx.x - sub * (narrow ? (width) : 0);        \
        if (sub < per) {                                                       \
            for (i64 g = (i64)blockIdx.x * per + sub; g < (n);                 \
                 g += (i64)gridDim.x * per) {                                  \
                for (i64 j = j0; j < (width); j += SPARSEGRAD_BLOCK) {         \
                    __VA_ARGS__                                                \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }

// ---- grouped row kernels ----------------------------------------------------

// The scatters take the indices sorted stably (`sorted` = indices[order]) and
// run over the sorted positions: the first position of each distinct row
// (its head) walks the row's duplicates in their original order; the other
// positions have nothing to do.  No list of distinct rows is built, so no
// count of them has to come back to the host.

// out[row, j] += values[order[k], j] for the positions k of row, in order
// (scatter_add: the CPU adds the duplicates of a row in index order).
template <typename T>
__device__ void scatter_add_sorted(const T* __restrict__ values,
                                   const i64* __restrict__ sorted,
                                   const i64* __restrict__ order, i64 n, i64 width,
                                   T* __restrict__ out) {
    SG_ROWS_LOOP(p, j, n, width, {
        const i64 row = sorted[p];
        if (p == 0 || sorted[p - 1] != row) {
            T* dst = out + row * width;
            T acc = dst[j];
            for (i64 k = p; k < n && sorted[k] == row; ++k)
                acc = sg_slices_acc(acc, values[order[k] * width + j]);
            dst[j] = acc;
        }
    })
}

// out[row] = values[order[last position of row]]: the last duplicate wins.
template <typename T>
__device__ void scatter_update_sorted(const T* __restrict__ values,
                                      const i64* __restrict__ sorted,
                                      const i64* __restrict__ order, i64 n, i64 width,
                                      T* __restrict__ out) {
    SG_ROWS_LOOP(p, j, n, width, {
        const i64 row = sorted[p];
        if (p + 1 == n || sorted[p + 1] != row)   // the row's last position
            out[row * width + j] = values[order[p] * width + j];
    })
}

// out[g] += sum of values[order[starts[g]:starts[g + 1]]], in that order
// (out is zero-filled by the caller: deduplicate sums from zero).
template <typename T>
__device__ void gather_group_sum(const T* __restrict__ values,
                                 const i64* __restrict__ order,
                                 const i64* __restrict__ starts, i64 n_groups,
                                 i64 width, T* __restrict__ out) {
    SG_ROWS_LOOP(g, j, n_groups, width, {
        const i64 lo = starts[g], hi = starts[g + 1];
        T acc = out[g * width + j];
        for (i64 k = lo; k < hi; ++k)
            acc = sg_slices_acc(acc, values[order[k] * width + j]);
        out[g * width + j] = acc;
    })
}

#define SG_GROUPED(T, SUF)                                                    \
    extern "C" __global__ void scatter_add_sorted_##SUF(                       \
        const T* values, const i64* sorted, const i64* order, i64 n,            \
        i64 width, T* out) {                                                   \
        scatter_add_sorted<T>(values, sorted, order, n, width, out);           \
    }                                                                          \
    extern "C" __global__ void scatter_update_sorted_##SUF(                    \
        const T* values, const i64* sorted, const i64* order, i64 n,            \
        i64 width, T* out) {                                                   \
        scatter_update_sorted<T>(values, sorted, order, n, width, out);        \
    }                                                                          \
    extern "C" __global__ void gather_group_sum_##SUF(                         \
        const T* values, const i64* order, const i64* starts, i64 n_groups,     \
        i64 width, T* out) {                                                   \
        gather_group_sum<T>(values, order, starts, n_groups, width, out);       \
    }
SG_GROUPED(float, f32)
SG_GROUPED(double, f64)

// ---- gather -----------------------------------------------------------------

// out[k] = table[indices[k]], rows of `width` words W (the launcher picks the
// widest of 8, 4 or 1 bytes that divides the row and the alignment), rows
// mapped to blocks as SG_ROWS_LOOP does.
#define SG_GATHER(NAME, IDX, W)                                               \
    extern "C" __global__ void NAME(const W* __restrict__ table,               \
                                    const IDX* __restrict__ indices, i64 n,     \
                                    i64 width, W* __restrict__ out) {          \
        SG_ROWS_LOOP(k, j, n, width, {                                         \
            out[k * width + j] = table[(i64)indices[k] * width + j];           \
        })                                                                     \
    }
SG_GATHER(gather_rows_w1_i32, int, unsigned char)
SG_GATHER(gather_rows_w1_i64, i64, unsigned char)
SG_GATHER(gather_rows_w4_i32, int, int)
SG_GATHER(gather_rows_w4_i64, i64, int)
SG_GATHER(gather_rows_w8_i32, int, i64)
SG_GATHER(gather_rows_w8_i64, i64, i64)
