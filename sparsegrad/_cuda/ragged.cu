// CUDA twins of sparsegrad/_kernels/ragged.pyx: RaggedRange (sizes, splits,
// fill) and row splits to value row ids.  Launchers: ragged.py.  The
// arithmetic (a row's size and its codes, the next value of a row, value j
// of an integer row, the splits' overflow test and saturating sum) lives in
// sg_ragged.h, shared with the Cython kernels; this file keeps the threads,
// blocks, tiles and chunks, and the loads and stores.
//
// Kernel names carry the value type (i32/i64/f32/f64/bf16) and, where splits
// are an argument, the splits type after it (range_fill_f32_i64).  Every
// output element is computed from its own row's inputs, in the CPU kernel's
// arithmetic, so the bits do not depend on the launch shape.
//
// bfloat16 values come as their bits (sg_u16 arrays, as the Cython kernels
// take them); the kernels hand them to the templates as sg_half.h's storage
// type sg_sbf16, for which sg_ragged.h overloads sg_range_size and
// sg_range_next (Eigen's bfloat16 arithmetic, as on the CPU).
#include "common.cuh"
#include "sg_ragged.h"

typedef sg_u64 u64;
typedef sg_u32 u32;

// -- range_sizes -------------------------------------------------------------

template <typename T>
__device__ __forceinline__ void range_sizes_body(
    const T *starts, const T *limits, const T *deltas, i64 ss, i64 ls, i64 ds,
    i64 *sizes_out, i64 n_rows, i64 max_size) {
    u64 max_u = (u64)max_size;
    SG_GRID_LOOP(i, n_rows) {
        sizes_out[i] =
            sg_range_size(starts[i * ss], limits[i * ls], deltas[i * ds], max_u);
    }
}

// P: the arrays' element type in the signature; T: the templates' (they
// differ for bfloat16 only: bits in, sg_sbf16 inside).
#define SG_RANGE_SIZES(SUF, P, T)                                               \
    extern "C" __global__ void range_sizes_##SUF(                               \
        const P *starts, const P *limits, const P *deltas, i64 ss, i64 ls,      \
        i64 ds, i64 *sizes_out, i64 n_rows, i64 max_size) {                     \
        range_sizes_body<T>((const T *)starts, (const T *)limits,               \
                            (const T *)deltas, ss, ls, ds, sizes_out, n_rows,   \
                            max_size);                                          \
    }
SG_RANGE_SIZES(i32, int, int)
SG_RANGE_SIZES(i64, i64, i64)
SG_RANGE_SIZES(f32, float, float)
SG_RANGE_SIZES(f64, double, double)
SG_RANGE_SIZES(bf16, sg_u16, sg_sbf16)

// -- range_splits ------------------------------------------------------------
// The CPU scans row by row and stops at the first row that has a negative
// code or overflows the running total.  Here three launches run over tiles of
// `items` * BLOCK rows (a launch boundary is the only barrier between blocks):
//   range_splits_tiles:  each tile's sum (negative codes counting as 0) and
//                        its first negative row;
//   range_splits_prefix: one block: the exclusive prefix of the tile sums and
//                        the first negative row of all;
//   range_splits_write:  each tile rescans its rows from its prefix, writes
//                        the splits and notes the row where the total first
//                        exceeds max_total.
// Sums saturate: -1 stands for "above max_total" and absorbs (associative, so
// any grouping of the rows gives the same answer).  Before the first negative
// row the running totals are the CPU's exactly, so the first failing row is
// the smaller of the first negative row and the first overflowing one; the
// launcher reads result = (first negative row or -1, its code, first
// overflowing row or -1, total) back and decides.

// Inclusive scan of v over the block's threads with sg_range_sat_add (Hillis-Steele).
// Every thread of the block must call it; sh is the block's scratch array,
// free again when it returns.
__device__ __forceinline__ i64 sg_block_sat_scan(i64 v, i64 max_total, i64 *sh) {
    int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int off = 1; off < SPARSEGRAD_BLOCK; off *= 2) {
        i64 left = t >= off ? sh[t - off] : 0;
        __syncthreads();   // every read of this round before any write
        if (t >= off) sh[t] = sg_range_sat_add(left, sh[t], max_total);
        __syncthreads();
    }
    i64 r = sh[t];
    __syncthreads();
    return r;
}

// The block's last thread's value, to every thread (every thread must call).
__device__ __forceinline__ i64 sg_block_last(i64 v, i64 *sh) {
    if (threadIdx.x == SPARSEGRAD_BLOCK - 1) sh[0] = v;
    __syncthreads();
    i64 r = sh[0];
    __syncthreads();
    return r;
}

// The previous thread's inclusive scan value (0 for thread 0): the
// exclusive scan (every thread must call).
__device__ __forceinline__ i64 sg_block_exclusive(i64 incl, i64 *sh) {
    sh[threadIdx.x] = incl;
    __syncthreads();
    i64 r = threadIdx.x > 0 ? sh[threadIdx.x - 1] : 0;
    __syncthreads();
    return r;
}

// Block-wide minimum of v, to every thread (every thread must call).
__device__ __forceinline__ i64 sg_block_min(i64 v, i64 *sh) {
    int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int stride = SPARSEGRAD_BLOCK / 2; stride > 0; stride /= 2) {
        if (t < stride && sh[t + stride] < sh[t]) sh[t] = sh[t + stride];
        __syncthreads();
    }
    i64 r = sh[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void range_splits_tiles(const i64 *sizes, i64 n_rows,
                                              i64 max_total, int items,
                                              i64 *tile_sum, i64 *tile_neg) {
    __shared__ i64 sh[SPARSEGRAD_BLOCK];
    const i64 tile = (i64)items * SPARSEGRAD_BLOCK;
    const i64 n_tiles = (n_rows + tile - 1) / tile;
    for (i64 b = blockIdx.x; b < n_tiles; b += gridDim.x) {   // uniform per block
        i64 sum = 0, neg = n_rows;
        for (int m = 0; m < items; m++) {   // neighbouring threads, neighbouring rows
            i64 i = b * tile + (i64)m * SPARSEGRAD_BLOCK + threadIdx.x;
            if (i >= n_rows) break;
            i64 s = sizes[i];
            if (s < 0) {
                if (i < neg) neg = i;
            } else {
                sum = sg_range_sat_add(sum, s, max_total);
            }
        }
        i64 total = sg_block_last(sg_block_sat_scan(sum, max_total, sh), sh);
        i64 first_neg = sg_block_min(neg, sh);
        if (threadIdx.x == 0) {
            tile_sum[b] = total;
            tile_neg[b] = first_neg;
        }
    }
}

// One block.  tile_prefix[b] = the saturated sum of tiles 0 .. b - 1;
// result[0] = the first negative row or -1, result[1] = its code,
// result[2] = -1 (range_splits_write stores the first overflowing row),
// result[3] = the saturated total of all rows.
extern "C" __global__ void range_splits_prefix(const i64 *sizes, const i64 *tile_sum,
                                               const i64 *tile_neg, i64 n_tiles,
                                               i64 n_rows, i64 max_total,
                                               i64 *tile_prefix, i64 *result) {
    __shared__ i64 sh[SPARSEGRAD_BLOCK];
    int t = threadIdx.x;
    i64 carry = 0, neg = n_rows;
    for (i64 base = 0; base < n_tiles; base += SPARSEGRAD_BLOCK) {   // uniform
        i64 b = base + t;
        i64 v = b < n_tiles ? tile_sum[b] : 0;
        if (b < n_tiles && tile_neg[b] < neg) neg = tile_neg[b];
        i64 incl = sg_block_sat_scan(v, max_total, sh);
        i64 excl = sg_block_exclusive(incl, sh);
        if (b < n_tiles) tile_prefix[b] = sg_range_sat_add(carry, excl, max_total);
        carry = sg_range_sat_add(carry, sg_block_last(incl, sh), max_total);
    }
    i64 first_neg = sg_block_min(neg, sh);
    if (t == 0) {
        bool has = first_neg < n_rows;
        result[0] = has ? first_neg : -1;
        result[1] = has ? sizes[first_neg] : 0;
        result[2] = -1;
        result[3] = carry;   // the total of all rows when none fails
    }
}

// Tile b: thread t walks rows t * items .. t * items + items - 1 of the tile
// from the tile's prefix plus the sum of the threads before it.  Exactly one
// row of all (if any) takes a non-saturated total above max_total: its
// thread stores it in result[2].
template <typename S>
__device__ __forceinline__ void range_splits_write_body(
    const i64 *sizes, const i64 *tile_prefix, i64 n_rows, i64 max_total,
    int items, S *splits_out, i64 *result) {
    __shared__ i64 sh[SPARSEGRAD_BLOCK];
    const i64 tile = (i64)items * SPARSEGRAD_BLOCK;
    const i64 n_tiles = (n_rows + tile - 1) / tile;
    if (blockIdx.x == 0 && threadIdx.x == 0) splits_out[0] = (S)0;
    for (i64 b = blockIdx.x; b < n_tiles; b += gridDim.x) {   // uniform per block
        i64 lo = b * tile + (i64)threadIdx.x * items;
        i64 hi = lo + items < n_rows ? lo + items : n_rows;
        i64 sum = 0;
        for (i64 i = lo; i < hi; i++) {
            i64 s = sizes[i];
            if (s >= 0) sum = sg_range_sat_add(sum, s, max_total);
        }
        i64 excl = sg_block_exclusive(sg_block_sat_scan(sum, max_total, sh), sh);
        i64 run = sg_range_sat_add(tile_prefix[b], excl, max_total);
        if (run < 0) continue;   // an earlier row overflowed (no barrier follows)
        for (i64 i = lo; i < hi; i++) {
            i64 s = sizes[i];
            if (s < 0) continue;   // an error row: the launcher reports it
            if (sg_range_total_overflows(run, s, max_total)) {
                result[2] = i;
                break;
            }
            run = run + s;
            splits_out[i + 1] = (S)run;
        }
    }
}

#define SG_RANGE_SPLITS(SUF, S)                                                 \
    extern "C" __global__ void range_splits_write_##SUF(                        \
        const i64 *sizes, const i64 *tile_prefix, i64 n_rows, i64 max_total,    \
        int items, S *splits_out, i64 *result) {                                \
        range_splits_write_body<S>(sizes, tile_prefix, n_rows, max_total,       \
                                   items, splits_out, result);                  \
    }
SG_RANGE_SPLITS(i32, int)
SG_RANGE_SPLITS(i64, i64)

// -- range_fill --------------------------------------------------------------
//
// The integer fill and row ids cut the values into chunks of `items` * BLOCK;
// chunk_rows first stores the row of each chunk's first value, so that a
// thread's search only spans the rows of its own chunk, not all of them.

// The row of value k: the last r in [lo, hi) with splits[r] <= k (empty rows
// share their split with the next row, so the last one is the row that holds
// k).  Needs splits[lo] <= k and the answer below hi.
template <typename S>
__device__ __forceinline__ i64 sg_row_of(const S *splits, i64 lo, i64 hi, i64 k) {
    while (hi - lo > 1) {
        i64 mid = lo + (hi - lo) / 2;
        if ((i64)splits[mid] <= k)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// first_row[c] = the row of value min(c * chunk, total - 1), c in [0, n_chunks].
template <typename S>
__device__ __forceinline__ void chunk_rows_body(const S *splits, i64 n_rows, i64 total,
                                                i64 chunk, i64 n_chunks,
                                                i64 *first_row) {
    SG_GRID_LOOP(c, n_chunks + 1) {
        i64 k = c * chunk < total ? c * chunk : total - 1;
        first_row[c] = sg_row_of<S>(splits, 0, n_rows, k);
    }
}

// Chunk c of items * BLOCK values (items <= SG_FILL_MAX_ITEMS) lies in rows
// first_row[c] .. first_row[c + 1].  Thread t computes the chunk's values
// t * items .. t * items + items - 1: one search for the first, then it walks
// the rows forward (a step, or a search when it skips empty rows), and
// stages them in shared memory; the block then writes the chunk with
// neighbouring threads on neighbouring values (coalesced).  The staging array
// is padded by one element in 16, so that the threads' runs of 16 fall in
// different banks.
//
// Integers: the CPU adds delta repeatedly in unsigned arithmetic of the
// values' width, which equals start + j * delta modulo 2**width (computed
// once per row a thread enters, then by the CPU's additions).  Row ids
// (ROWIDS): the row itself.
#define SG_FILL_MAX_ITEMS 16
#define SG_FILL_PAD(i) ((i) + ((i) >> 4))

template <typename V, typename U, typename S, bool ROWIDS>
__device__ __forceinline__ void chunked_fill_body(
    const V *starts, const V *deltas, i64 ss, i64 ds, const S *splits,
    const i64 *first_row, V *out, i64 total, int items) {
    __shared__ V staged[SG_FILL_PAD(SG_FILL_MAX_ITEMS * SPARSEGRAD_BLOCK)];
    const i64 chunk = (i64)items * SPARSEGRAD_BLOCK;
    const i64 n_chunks = (total + chunk - 1) / chunk;
    for (i64 c = blockIdx.x; c < n_chunks; c += gridDim.x) {   // uniform per block
        const i64 base = c * chunk;
        const i64 r_end = first_row[c + 1] + 1;
        i64 k = base + (i64)threadIdx.x * items;
        if (k < total) {
            i64 r = sg_row_of(splits, first_row[c], r_end, k);
            U v = 0, d = 0;
            if (!ROWIDS) {
                d = (U)deltas[r * ds];
                v = sg_range_at(starts[r * ss], deltas[r * ds], k - (i64)splits[r]);
            }
            for (int m = 0; m < items && k < total; m++, k++) {
                if ((i64)splits[r + 1] <= k) {   // k starts a later row
                    r = r + 1;
                    if ((i64)splits[r + 1] <= k) r = sg_row_of(splits, r + 1, r_end, k);
                    if (!ROWIDS) {
                        d = (U)deltas[r * ds];
                        v = sg_range_at(starts[r * ss], deltas[r * ds],
                                        k - (i64)splits[r]);
                    }
                }
                const i64 i = k - base;
                staged[SG_FILL_PAD(i)] = ROWIDS ? (V)r : (V)v;
                v = sg_range_next(v, d);
            }
        }
        __syncthreads();
        for (int m = 0; m < items; m++) {
            const i64 i = (i64)m * SPARSEGRAD_BLOCK + threadIdx.x;
            if (base + i < total) out[base + i] = staged[SG_FILL_PAD(i)];
        }
        __syncthreads();   // staged is refilled by the next chunk
    }
}

template <typename T, typename U, typename S>
__device__ __forceinline__ void range_fill_int_body(
    const T *starts, const T *deltas, i64 ss, i64 ds, const S *splits,
    const i64 *first_row, T *values_out, i64 total, int items) {
    chunked_fill_body<T, U, S, false>(starts, deltas, ss, ds, splits, first_row,
                                      values_out, total, items);
}

// Floats (bfloat16 too): the CPU's values are a chain of roundings
// (v = v + delta), which only the same chain reproduces: one thread per row.
template <typename T, typename S>
__device__ __forceinline__ void range_fill_float_body(
    const T *starts, const T *deltas, i64 ss, i64 ds, const S *splits,
    T *values_out, i64 n_rows) {
    SG_GRID_LOOP(r, n_rows) {
        i64 lo = (i64)splits[r], hi = (i64)splits[r + 1];
        T v = starts[r * ss], d = deltas[r * ds];
        for (i64 k = lo; k < hi; k++) {
            values_out[k] = v;
            v = sg_range_next(v, d);
        }
    }
}

#define SG_CHUNK_ROWS(SSUF, S)                                                  \
    extern "C" __global__ void chunk_rows_##SSUF(const S *splits, i64 n_rows,   \
                                                 i64 total, i64 chunk,          \
                                                 i64 n_chunks, i64 *first_row) {\
        chunk_rows_body<S>(splits, n_rows, total, chunk, n_chunks, first_row);  \
    }
SG_CHUNK_ROWS(i32, int)
SG_CHUNK_ROWS(i64, i64)

#define SG_RANGE_FILL_INT(SUF, SSUF, T, U, S)                                   \
    extern "C" __global__ void range_fill_##SUF##_##SSUF(                       \
        const T *starts, const T *deltas, i64 ss, i64 ds, const S *splits,      \
        const i64 *first_row, T *values_out, i64 total, int items) {            \
        range_fill_int_body<T, U, S>(starts, deltas, ss, ds, splits, first_row, \
                                     values_out, total, items);                 \
    }
#define SG_RANGE_FILL_FLOAT(SUF, SSUF, P, T, S)                                 \
    extern "C" __global__ void range_fill_##SUF##_##SSUF(                       \
        const P *starts, const P *deltas, i64 ss, i64 ds, const S *splits,      \
        P *values_out, i64 n_rows) {                                            \
        range_fill_float_body<T, S>((const T *)starts, (const T *)deltas, ss,   \
                                    ds, splits, (T *)values_out, n_rows);       \
    }
SG_RANGE_FILL_INT(i32, i32, int, u32, int)
SG_RANGE_FILL_INT(i32, i64, int, u32, i64)
SG_RANGE_FILL_INT(i64, i32, i64, u64, int)
SG_RANGE_FILL_INT(i64, i64, i64, u64, i64)
SG_RANGE_FILL_FLOAT(f32, i32, float, float, int)
SG_RANGE_FILL_FLOAT(f32, i64, float, float, i64)
SG_RANGE_FILL_FLOAT(f64, i32, double, double, int)
SG_RANGE_FILL_FLOAT(f64, i64, double, double, i64)
SG_RANGE_FILL_FLOAT(bf16, i32, sg_u16, sg_sbf16, int)
SG_RANGE_FILL_FLOAT(bf16, i64, sg_u16, sg_sbf16, i64)

// -- row_splits_to_rowids ----------------------------------------------------

// U: the unsigned type of S's width (the values, which row ids never use).
template <typename S, typename U>
__device__ __forceinline__ void rowids_body(const S *splits, const i64 *first_row,
                                            S *rowids_out, i64 total, int items) {
    chunked_fill_body<S, U, S, true>((const S *)0, (const S *)0, 0, 0, splits,
                                     first_row, rowids_out, total, items);
}

#define SG_ROWIDS(SUF, S, U)                                                    \
    extern "C" __global__ void row_splits_to_rowids_##SUF(                      \
        const S *splits, const i64 *first_row, S *rowids_out, i64 total,        \
        int items) {                                                            \
        rowids_body<S, U>(splits, first_row, rowids_out, total, items);         \
    }
SG_ROWIDS(i32, int, u32)
SG_ROWIDS(i64, i64, u64)
