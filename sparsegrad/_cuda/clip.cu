// CUDA drivers of the clip kernels of sparsegrad/_kernels/clip.pyx: the sum
// of squares of a list of tensors, scaling, clipping by value; plus the few
// scalar steps of the clip ops (norm, scale factor, divisor) so that a norm
// never leaves the GPU.  Their arithmetic (each square and accumulator step,
// the combine of eight accumulators, the scale, NumPy's clip, the norm and
// the factors) lives in sparsegrad/_kernels/include/sg_clip.h, shared with
// the Cython kernels; here are the threads, blocks, loads and the order of
// every sum.
//
// The sum of squares reproduces the CPU's order exactly, so its bits are the
// CPU's: the CPU cuts each tensor into blocks that depend only on the sizes
// (CHUNK elements of a dense tensor; groups of rows totalling about CHUNK
// values of an IndexedSlices with repeated indices), sums each block with a
// fixed pattern of eight float64 accumulators (or, for a group of repeated
// rows, column sums squared in column order), then adds the block partials
// in table order.  Here each accumulator chain is one thread (the eight
// chains of a block side by side; grouped blocks: 32 groups side by side,
// a repeated group's columns side by side), the partials go to one array in
// table order and one block adds them in that order.
#include "common.cuh"
#include "sg_clip.h"

#define SG_CHUNK 4096
#define SG_LANES 8
// CPU blocks per GPU block in squares_dense: one per eight threads.
#define SG_DENSE_PER_BLOCK (SPARSEGRAD_BLOCK / SG_LANES)

// The CPU's _squares combine of the eight accumulators a[0..8).
__device__ __forceinline__ double sg_combine_lanes(const double* a) {
    return sg_combine8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
}

// Accumulator `lane` of _squares over x[0:n]: elements lane, lane + 8, ...
// below the last full octet; lane 0 also takes the tail, after them.
template <typename T>
__device__ double sg_lane_squares(const T* __restrict__ x, i64 n, int lane) {
    double a = 0;
    const i64 full = n - n % SG_LANES;
    // Unrolled: the loads of eight steps go out together (a is still added
    // to in order; one chain per thread, as the CPU's accumulator).
#pragma unroll 8
    for (i64 k = lane; k < full; k += SG_LANES) a = sg_square_add(a, x[k]);
    if (lane == 0)
        for (i64 k = full; k < n; ++k) a = sg_square_add(a, x[k]);
    return a;
}

// partials[offset + b] = _squares of CPU block b of the dense x (n elements).
template <typename T>
__device__ void squares_dense(const T* __restrict__ x, i64 n,
                              double* __restrict__ partials, i64 offset) {
    __shared__ double acc[SPARSEGRAD_BLOCK];
    const i64 n_cpu_blocks = (n + SG_CHUNK - 1) / SG_CHUNK;
    const int lane = threadIdx.x % SG_LANES;
    for (i64 base = (i64)blockIdx.x * SG_DENSE_PER_BLOCK; base < n_cpu_blocks;
         base += (i64)gridDim.x * SG_DENSE_PER_BLOCK) {
        const i64 b = base + threadIdx.x / SG_LANES;
        double a = 0;
        if (b < n_cpu_blocks) {
            const i64 lo = b * SG_CHUNK;
            const i64 cnt = n - lo < SG_CHUNK ? n - lo : SG_CHUNK;
            a = sg_lane_squares<T>(x + lo, cnt, lane);
        }
        acc[threadIdx.x] = a;
        __syncthreads();
        if (lane == 0 && b < n_cpu_blocks)
            partials[offset + b] = sg_combine_lanes(acc + threadIdx.x);
        __syncthreads();
    }
}

// Rows whose values a thread loads at once before it adds them in order (a
// hot index: ~1e5 rows in one group): independent loads in flight, the sum
// still in the CPU's order.
#define SG_UNROLL 8

// Column j of the rows values[order[first..stop)], summed in that order from
// zero in T (the CPU's coalesced column).
template <typename T>
__device__ T sg_column_sum(const T* __restrict__ values, const i64* __restrict__ order,
                           i64 first, i64 stop, i64 width, i64 j) {
    T s = 0;
    for (i64 k = first; k < stop; k += SG_UNROLL) {
        T x[SG_UNROLL];
#pragma unroll
        for (int u = 0; u < SG_UNROLL; ++u)
            x[u] = k + u < stop ? values[order[k + u] * width + j] : (T)0;
#pragma unroll
        for (int u = 0; u < SG_UNROLL; ++u)
            if (k + u < stop) s = s + x[u];
    }
    return s;
}

// A repeated group of many rows (a hot index): its columns [j0, j0 + w)
// summed by the whole block, which loads tiles of the rows into shared memory
// (the next tile's loads in flight while threads t < w add this one, in row
// order); column j0 + t returned to thread t < w.  Every thread of the block
// calls it (barriers).  Groups of fewer rows sum per thread.
#define SG_TILED_MIN 32
#define SG_TILE_BYTES 16384
#define SG_TILE_DOUBLES (SG_TILE_BYTES / 8)
#define SG_TILE_LOADS (SG_TILE_BYTES / 4 / SPARSEGRAD_BLOCK)

__device__ __forceinline__ int sg_tile_count(i64 k, i64 stop, int per_tile) {
    return (int)(k >= stop ? 0 : (stop - k < per_tile ? stop - k : per_tile));
}

template <typename T>
__device__ T sg_tiled_column_sum(const T* __restrict__ values,
                                 const i64* __restrict__ order, i64 first, i64 stop,
                                 i64 width, i64 j0, int w, double* tiles) {
    const int t = threadIdx.x;
    const int per_thread = SG_TILE_BYTES / (int)sizeof(T) / SPARSEGRAD_BLOCK;
    const int per_tile = SG_TILE_BYTES / (int)sizeof(T) / w;
    T sum = 0;
    T r[SG_TILE_LOADS];
    int m = sg_tile_count(first, stop, per_tile);
#pragma unroll
    for (int l = 0; l < SG_TILE_LOADS; ++l) {
        const int x = t + SPARSEGRAD_BLOCK * l;
        if (l < per_thread && x < m * w)
            r[l] = values[order[first + x / w] * width + j0 + x % w];
    }
    __syncthreads();                        // the last reads of the tiles
#pragma unroll
    for (int l = 0; l < SG_TILE_LOADS; ++l) {
        const int x = t + SPARSEGRAD_BLOCK * l;
        if (l < per_thread && x < m * w) ((T*)tiles)[x] = r[l];
    }
    __syncthreads();
    int cur = 0;
    for (i64 k = first; k < stop; k += per_tile) {
        const i64 kn = k + per_tile;
        const int mn = sg_tile_count(kn, stop, per_tile);
#pragma unroll
        for (int l = 0; l < SG_TILE_LOADS; ++l) {
            const int x = t + SPARSEGRAD_BLOCK * l;
            if (l < per_thread && x < mn * w)
                r[l] = values[order[kn + x / w] * width + j0 + x % w];
        }
        if (t < w) {
            const T* tile = (const T*)(tiles + cur * SG_TILE_DOUBLES);
            for (int p = 0; p < m; ++p) sum = sum + tile[p * w + t];
        }
        T* next = (T*)(tiles + (cur ^ 1) * SG_TILE_DOUBLES);
#pragma unroll
        for (int l = 0; l < SG_TILE_LOADS; ++l) {
            const int x = t + SPARSEGRAD_BLOCK * l;
            if (l < per_thread && x < mn * w) next[x] = r[l];
        }
        __syncthreads();
        cur ^= 1;
        m = mn;
    }
    return sum;
}

// Groups of one CPU block handled side by side: one per eight threads.
#define SG_GROUPS_AT_ONCE (SPARSEGRAD_BLOCK / SG_LANES)

// partials[offset + b] = the CPU's _block_squares of grouped block b: groups
// [b * per, min((b + 1) * per, n_groups)) of the rows values[order[...]].
// The groups go SG_GROUPS_AT_ONCE at a time: each single-row group to eight
// threads (its eight accumulators), then each repeated group to the whole
// block (a thread per column, the squares added in column order by thread
// 0); thread 0 then adds the groups' values in group order (the CPU's).
// Every loop bound and branch around a barrier depends on the block and the
// group only.
template <typename T>
__device__ void squares_grouped(const T* __restrict__ values,
                                const i64* __restrict__ order,
                                const i64* __restrict__ starts, i64 n_groups,
                                i64 width, i64 per, double* __restrict__ partials,
                                i64 offset) {
    __shared__ double sq[SPARSEGRAD_BLOCK];
    __shared__ double gval[SG_GROUPS_AT_ONCE];
    __shared__ double tiles[2 * SG_TILE_DOUBLES];
    const int t = threadIdx.x;
    const i64 n_cpu_blocks = (n_groups + per - 1) / per;
    for (i64 b = blockIdx.x; b < n_cpu_blocks; b += gridDim.x) {
        const i64 g_end = (b + 1) * per < n_groups ? (b + 1) * per : n_groups;
        double block_total = 0;  // thread 0's
        for (i64 g0 = b * per; g0 < g_end; g0 += SG_GROUPS_AT_ONCE) {
            const int nb = (int)(g_end - g0 < SG_GROUPS_AT_ONCE ? g_end - g0
                                                                : SG_GROUPS_AT_ONCE);
            // single rows: _squares of the row, eight accumulators each
            const int team = t / SG_LANES;
            if (team < nb) {
                const i64 first = starts[g0 + team];
                if (starts[g0 + team + 1] - first == 1)
                    sq[t] = sg_lane_squares<T>(values + order[first] * width, width,
                                               t % SG_LANES);
            }
            __syncthreads();
            if (t < nb && starts[g0 + t + 1] - starts[g0 + t] == 1)
                gval[t] = sg_combine_lanes(sq + t * SG_LANES);
            __syncthreads();                // sq is reused below
            // repeated rows: each column summed in order from zero in T, its
            // square added to the group's total in column order
            for (int k = 0; k < nb; ++k) {
                const i64 first = starts[g0 + k], stop = starts[g0 + k + 1];
                if (stop - first == 1) continue;
                double group_total = 0;  // thread 0's
                const bool tiled = stop - first >= SG_TILED_MIN;
                for (i64 j0 = 0; j0 < width; j0 += SPARSEGRAD_BLOCK) {
                    const i64 j = j0 + t;
                    const int w = (int)(width - j0 < SPARSEGRAD_BLOCK
                                            ? width - j0 : SPARSEGRAD_BLOCK);
                    const T ts = tiled ? sg_tiled_column_sum<T>(values, order, first,
                                                                stop, width, j0, w,
                                                                tiles)
                                       : (T)0;
                    if (j < width) {
                        const T s = tiled ? ts
                                          : sg_column_sum<T>(values, order, first,
                                                             stop, width, j);
                        sq[t] = sg_square(s);
                    }
                    __syncthreads();
                    if (t == 0) {
                        const i64 m = width - j0 < SPARSEGRAD_BLOCK ? width - j0
                                                                    : SPARSEGRAD_BLOCK;
                        for (i64 q = 0; q < m; ++q) group_total += sq[q];
                    }
                    __syncthreads();
                }
                if (t == 0) gval[k] = group_total;
            }
            if (t == 0)
                for (int k = 0; k < nb; ++k) block_total += gval[k];
            __syncthreads();                // gval and sq: the next groups'
        }
        if (t == 0) partials[offset + b] = block_total;
    }
}

// One block: total[0] = partials[0] + partials[1] + ... in order (from
// zero, as the CPU), and norm[0] = sqrt(total) rounded once to T.  The sum
// is one chain (thread 0's); the other threads stage the partials in shared
// memory, the next BLOCK of them loading while thread 0 adds the current
// ones (two buffers, alternating).
template <typename T>
__device__ void finish_norm(const double* __restrict__ partials, i64 n,
                            double* __restrict__ total, T* __restrict__ norm) {
    __shared__ double buf[2][SPARSEGRAD_BLOCK];
    const int t = threadIdx.x;
    double sum = 0;  // thread 0's
    buf[0][t] = t < n ? partials[t] : 0.0;
    __syncthreads();
    int cur = 0;
    for (i64 base = 0; base < n; base += SPARSEGRAD_BLOCK) {
        const i64 k = base + SPARSEGRAD_BLOCK + t;
        const double next = k < n ? partials[k] : 0.0;
        if (t == 0) {
            const i64 m = n - base < SPARSEGRAD_BLOCK ? n - base : SPARSEGRAD_BLOCK;
            for (i64 q = 0; q < m; ++q) sum += buf[cur][q];
        }
        buf[cur ^ 1][t] = next;  // last read before the previous barrier
        __syncthreads();
        cur ^= 1;
    }
    if (t == 0) {
        total[0] = sum;
        sg_norm(norm, sum);
    }
}

// clip_by_global_norm: cd = (sg_global_scale(norm, c), 1).
template <typename T>
__device__ void global_scale(const T* __restrict__ norm, T c, T* __restrict__ cd) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        cd[0] = sg_global_scale(norm[0], c);
        cd[1] = (T)1;
    }
}

// clip_by_norm: cd = (c, sg_norm_divisor(norm, c)), c >= 0.
template <typename T>
__device__ void norm_divisor(const T* __restrict__ norm, T c, T* __restrict__ cd) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        cd[0] = c;
        cd[1] = sg_norm_divisor(norm[0], c);
    }
}

#define SG_CLIP_KERNELS(T, SUF)                                               \
    extern "C" __global__ void squares_dense_##SUF(                            \
        const T* x, i64 n, double* partials, i64 offset) {                     \
        squares_dense<T>(x, n, partials, offset);                              \
    }                                                                          \
    extern "C" __global__ void squares_grouped_##SUF(                          \
        const T* values, const i64* order, const i64* starts, i64 n_groups,     \
        i64 width, i64 per, double* partials, i64 offset) {                    \
        squares_grouped<T>(values, order, starts, n_groups, width, per,         \
                           partials, offset);                                  \
    }                                                                          \
    extern "C" __global__ void finish_norm_##SUF(                              \
        const double* partials, i64 n, double* total, T* norm) {               \
        finish_norm<T>(partials, n, total, norm);                              \
    }                                                                          \
    extern "C" __global__ void global_scale_##SUF(const T* norm, T c, T* cd) { \
        global_scale<T>(norm, c, cd);                                          \
    }                                                                          \
    extern "C" __global__ void norm_divisor_##SUF(const T* norm, T c, T* cd) { \
        norm_divisor<T>(norm, c, cd);                                          \
    }                                                                          \
    extern "C" __global__ void scale_##SUF(const T* x, i64 n, T c, T d,        \
                                           T* out) {                           \
        const int divide = sg_scale_divides(d);                                \
        SG_GRID_LOOP(k, n) out[k] = sg_scale(x[k], c, d, divide);              \
    }                                                                          \
    /* c and d read on the device (cd[0], cd[1]): no host round trip */        \
    extern "C" __global__ void scale_dev_##SUF(const T* x, i64 n, const T* cd, \
                                               T* out) {                       \
        const T c = cd[0], d = cd[1];                                          \
        const int divide = sg_scale_divides(d);                                \
        SG_GRID_LOOP(k, n) out[k] = sg_scale(x[k], c, d, divide);              \
    }                                                                          \
    /* maximum(minimum(x, hi), lo), NumPy's NaN rule (Cython clip_values) */   \
    extern "C" __global__ void clip_values_##SUF(                              \
        const T* x, i64 n, const T* lo, i64 lo_step, const T* hi, i64 hi_step,  \
        T* out) {                                                              \
        SG_GRID_LOOP(k, n)                                                     \
            out[k] = sg_np_clip(x[k], lo[k * lo_step], hi[k * hi_step]);       \
    }
SG_CLIP_KERNELS(float, f32)
SG_CLIP_KERNELS(double, f64)
