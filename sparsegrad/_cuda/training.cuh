// The CUDA drivers of the training ops (the twins of sparsegrad/_kernels/
// training.pyx, from _training.pxi.tp and _training_rows.pxi, and of
// training_half.pyx), templates on the value type: training.cu instantiates
// them for float and double, training_half.cu for the half storage types
// (sg_sf16, sg_sbf16 of sg_half.h).  The arithmetic is not here: each
// optimizer's update of one element is an element function of
// sparsegrad/_kernels/include/sg_training.h, which the Cython kernels compile
// too; this file keeps threads, blocks, grouping and loads.
//
// Value types: T is what the arrays hold, SG_MT(T) what the arithmetic is
// done in (T itself for float and double; for a half type, sg_half.h's
// rounding math type).  A gradient value is read into SG_MT(T) (scaled
// there), sums of gradients are taken in it, and var and the slots stay in
// T, in registers or in memory, as the element functions take them.  The
// kernels' C signatures name C types only (P: float, double, or unsigned
// short for the half types' bits), cast to T inside.
//
// a) An element function is wrapped by SG_ROW(fn, slots): a struct whose
//    static `f` applies sg_<fn> to one element of var and of up to three
//    slots (s1..s3, TensorFlow's input order) held in registers.  Unused
//    slots alias var (as on the CPU): a function touches only the slots its
//    formula names.  The SG_ROW, SG_DENSE and SG_SPARSE lines of the ops are
//    generated from the table of the ops (sparsegrad/_kernels/training_table.py,
//    by sparsegrad._cuda.training.generated_source) and appended to the
//    module that includes this file when it is compiled.
// b) dense_<op>: a grid-stride loop over the elements.
// c) sparse_<op>: the occurrences are grouped by row beforehand
//    (sparsegrad._cuda.sort.group_rows: distinct rows, the positions of each
//    row's occurrences in their original order); each distinct row goes to
//    one block (several narrow rows to one block), its threads to its
//    columns, and each thread applies the row's occurrences in their original
//    order (TensorFlow's semantics for duplicates), or, with `coalesce`, sums
//    them in that order from zero and applies the sum once: the bits of the
//    CPU's sparse_<op>, sparse_<op>_by_row and sparse_<op>_grouped (for
//    the half types: of the CPU's sparse_<op> on the duplicates summed
//    beforehand, in order from zero, each sum rounded).  The
//    thread loads SG_UNROLL occurrences' gradients at a time (independent
//    loads in flight for a hot row) and keeps its element of var and the
//    slots in registers until the row is done.
// d) Ops whose CPU kernel has a separate R == 1 function use it when R == 1.
// e) `scaled`: each gradient element is multiplied by s = T(grad_scale) as it
//    is read, in the math type (the CPU's copy times s); unscaled, grad is
//    read as it is.
// f) Row-wise Adagrad (one accumulator per row) needs the sum of the row's
//    squared gradients in double, in column order: the block's threads load
//    the columns (coalesced) and square them into shared memory, thread 0
//    adds the squares sequentially (the CPU's order, hence its bits), the
//    block then updates the columns.
// g) Lamb needs two sums of squares over a segment (a row, or for the dense
//    op a chunk of SG_LAMB_CHUNK values) before the segment moves: the block
//    squares its columns into shared memory, thread t < SG_LAMB_LANES adds
//    lane t's squares in order, and thread 0 adds the lanes pairwise (the
//    order of sg_training.h, the CPU's bits).  The dense op adds the chunks'
//    sums in a kernel of its own and steps in a third.
#pragma once
#include "common.cuh"
#include "sg_training.h"

// The hyper-parameters arrive as SG_N_HP (eight) double scalars, the most
// an op has, and are loaded once per thread into the struct that the
// element functions read (hp, of type sg_hp_<sfx>).
#define SG_HP_PARAMS double h0, double h1, double h2, double h3, double h4,    \
                     double h5, double h6, double h7
#define SG_HP_LOAD(sfx)                                                       \
    const double hp_given[SG_N_HP] = {h0, h1, h2, h3, h4, h5, h6, h7};        \
    sg_hp_##sfx hp_loaded;                                                    \
    sg_hp_load(&hp_loaded, hp_given, SG_N_HP);                                \
    const sg_hp_##sfx* hp = &hp_loaded
// The hyper-parameter struct of value type T.
#define SG_HP(T) typename sg_hp_of<T>::type

// sg_math<T>: the math type of storage type T, and value(p), a kernel's
// scalar parameter p (T itself, or a half type's bits) as a value of it.
template <typename T> struct sg_math {
    typedef T type;
    static __device__ __forceinline__ T value(T p) { return p; }
};
#define SG_HALF_MATH(S, M)                                                    \
    template <> struct sg_math<S> {                                           \
        typedef M type;                                                       \
        static __device__ __forceinline__ M value(unsigned short p) {         \
            S x;                                                              \
            x.bits = p;                                                       \
            return x;                                                         \
        }                                                                     \
    };
SG_HALF_MATH(sg_sf16, sg_mf16)
SG_HALF_MATH(sg_sbf16, sg_mbf16)
#undef SG_HALF_MATH
#define SG_MT(T) typename sg_math<T>::type

// A zero of storage type T (for the registers of unused slots).
template <typename T> __device__ __forceinline__ T sg_zero() {
    T z;
    z = (SG_MT(T))0;
    return z;
}

// ---------------------------------------------------------------------------
// The element function sg_<fn> of sg_training.h as a row type of the
// drivers: `slots` says which of s1..s3 it reads and writes.
#define SG_ROW(fn, n_slots)                                                   \
    struct fn {                                                               \
        static const int slots = n_slots;                                     \
        template <typename T>                                                 \
        __device__ static __forceinline__ void f(T* v, T* s1, T* s2, T* s3,   \
                                                 SG_MT(T) g,                  \
                                                 const SG_HP(T)* hp) {        \
            sg_##fn(hp, v, s1, s2, s3, g);                                    \
        }                                                                     \
    };

// ---------------------------------------------------------------------------
// Drivers.

// The gradient element as the CPU's row function reads it (the half
// kernels of the CPU take a gradient scaled beforehand, each product rounded
// once: the bits of this product).
template <typename T>
__device__ __forceinline__ SG_MT(T) sg_grad(const T* grad, i64 e, SG_MT(T) s,
                                            int scaled) {
    const SG_MT(T) g = grad[e];
    return scaled ? g * s : g;
}

template <typename T, typename Row>
__device__ void sg_dense(T* var, T* s1, T* s2, T* s3, const T* grad, i64 size,
                         const SG_HP(T)* hp, SG_MT(T) s, int scaled) {
    SG_GRID_LOOP(i, size) {
        Row::f(var + i, s1 + i, s2 + i, s3 + i, sg_grad(grad, i, s, scaled), hp);
    }
}

// Occurrences whose gradient values a thread loads at once, before it uses
// them in order: the loads are independent, so a hot row (Zipf ids: ~1e5
// occurrences of one row) keeps SG_UNROLL loads per thread in flight instead
// of waiting for each in turn.  Only the loads run ahead; the additions and
// updates stay in the order of the occurrences.
#define SG_UNROLL 8

// g[u] = the gradient of column j of occurrence q + u (0 past q1).
template <typename T>
__device__ __forceinline__ void sg_load_grads(SG_MT(T) (&g)[SG_UNROLL],
                                              const T* grad, const i64* order,
                                              i64 q, i64 q1, i64 R, i64 j,
                                              SG_MT(T) s, int scaled) {
    i64 k[SG_UNROLL];
#pragma unroll
    for (int u = 0; u < SG_UNROLL; ++u) k[u] = q + u < q1 ? order[q + u] : 0;
#pragma unroll
    for (int u = 0; u < SG_UNROLL; ++u)
        g[u] = q + u < q1 ? sg_grad(grad, k[u] * R + j, s, scaled) : (SG_MT(T))0;
}

// The gradients of column j of rows order[q0..q1) summed in that order from
// zero (the CPU's coalesced row).
template <typename T>
__device__ SG_MT(T) sg_ordered_sum(const T* grad, const i64* order, i64 q0, i64 q1,
                                   i64 R, i64 j, SG_MT(T) s, int scaled) {
    SG_MT(T) sum = (SG_MT(T))0;
    for (i64 q = q0; q < q1; q += SG_UNROLL) {
        SG_MT(T) g[SG_UNROLL];
        sg_load_grads(g, grad, order, q, q1, R, j, s, scaled);
#pragma unroll
        for (int u = 0; u < SG_UNROLL; ++u)
            if (q + u < q1) sum = sum + g[u];
    }
    return sum;
}

// Distinct rows are handed to blocks (grid-stride over the n_groups groups),
// one thread per column: a block takes blockDim.x / R rows at a time when
// rows are narrower than the block (R == 1: one row per thread), else one row,
// its threads striding over the columns.  Each (row, column) element is
// updated by one thread, in the order of the row's occurrences: the bits do
// not depend on the launch shape.  The thread holds var and the slots of its
// element in registers while it applies the occurrences (Row::slots: the
// slots the formula uses; the others alias var and are neither read nor
// written), and stores them once.  No barrier: threads may leave early.
template <typename T, typename Row>
__device__ void sg_sparse(T* var, T* s1, T* s2, T* s3, const T* grad,
                          const i64* unique, const i64* order, const i64* starts,
                          i64 n_groups, i64 R, const SG_HP(T)* hp, SG_MT(T) s,
                          int scaled, int coalesce, i64 heavy_min) {
    const i64 block = blockDim.x;
    const i64 per_block = R < block ? block / R : 1;
    const i64 lane = per_block > 1 ? threadIdx.x / R : 0;
    const i64 j0 = per_block > 1 ? threadIdx.x % R : threadIdx.x;
    const i64 j_step = per_block > 1 ? R : block;
    if (lane >= per_block) return;          // the threads past per_block * R
    for (i64 first = (i64)blockIdx.x * per_block; first < n_groups;
         first += (i64)gridDim.x * per_block) {
        const i64 grp = first + lane;
        if (grp >= n_groups) break;
        const i64 row = unique[grp], q0 = starts[grp], q1 = starts[grp + 1];
        if (q1 - q0 >= heavy_min) continue;     // sg_sparse_heavy's
        for (i64 j = j0; j < R; j += j_step) {
            const i64 e = row * R + j;
            T v = var[e];
            T a = Row::slots > 0 ? s1[e] : sg_zero<T>();
            T b = Row::slots > 1 ? s2[e] : sg_zero<T>();
            T c = Row::slots > 2 ? s3[e] : sg_zero<T>();
            if (coalesce) {
                Row::f(&v, &a, &b, &c,
                       sg_ordered_sum(grad, order, q0, q1, R, j, s, scaled), hp);
            } else {
                for (i64 q = q0; q < q1; q += SG_UNROLL) {
                    SG_MT(T) g[SG_UNROLL];
                    sg_load_grads(g, grad, order, q, q1, R, j, s, scaled);
#pragma unroll
                    for (int u = 0; u < SG_UNROLL; ++u)
                        if (q + u < q1) Row::f(&v, &a, &b, &c, g[u], hp);
                }
            }
            if (Row::slots > 2) s3[e] = c;
            if (Row::slots > 1) s2[e] = b;
            if (Row::slots > 0) s1[e] = a;
            var[e] = v;
        }
    }
}

// Heavy groups (at least heavy_min occurrences; Zipf ids give one row ~1e5):
// SG_UNROLL loads per thread are far too few to stream such a row's
// gradients through one chain per column.  Here a block takes one column
// chunk (16 columns, 64 or 128 bytes of each gradient row, or all R when
// narrower; several chunks: several SMs on one hot row) of one heavy group
// at a time,
// all its threads load tiles of the chunk's gradients (occurrences in order)
// into shared memory, and thread t < width keeps column t's chain: it applies
// (or sums) the tile's values in order, from shared memory, while the loads
// of the next tile are in flight (two tiles, alternating).  The chain is the
// light kernel's, so the bits are too.  `heavy` lists the heavy groups
// (n_heavy[0] of them, in any order: each group's elements are its own).
// The tiles hold the gradients as read, in the math type (at least 4 bytes:
// a half type's values are held as floats).
#define SG_CHUNK_COLS 16
#define SG_TILE_BYTES 16384
#define SG_TILE_LOADS (SG_TILE_BYTES / 4 / SPARSEGRAD_BLOCK)  // per thread, float
#define SG_TILE_DOUBLES (SG_TILE_BYTES / 8)
// The two tiles are declared in the kernel, not in the templates: a static
// __shared__ array in a function template exists once per instantiation, and
// a kernel that instantiates two (Row and Scalar) would need twice the
// shared memory (64 KiB: more than a block may have; PTX is still emitted,
// only ptxas or the driver's JIT refuses it).  double storage keeps them
// 8-byte aligned for either T.
#define SG_TILES __shared__ double tiles[2 * SG_TILE_DOUBLES]
// The heavy kernels ask for at most 128 registers a thread, so that two
// blocks fit on an SM (one loads while the other waits at its barrier);
// ptxas reports no spill but 4 bytes in FTRL float64.

// Occurrences of a tile that starts at q (none past q1).
__device__ __forceinline__ int sg_tile_count(i64 q, i64 q1, int per_tile) {
    return (int)(q >= q1 ? 0 : (q1 - q < per_tile ? q1 - q : per_tile));
}

// k[l] = the row of grad of this thread's l-th element of the tile at q (of
// values of type G).
template <typename G>
__device__ __forceinline__ void sg_tile_rows(i64 (&k)[SG_TILE_LOADS],
                                             const i64* order, i64 q, int m, int w) {
    const int per_thread = SG_TILE_BYTES / (int)sizeof(G) / SPARSEGRAD_BLOCK;
#pragma unroll
    for (int l = 0; l < SG_TILE_LOADS; ++l) {
        const int x = (int)threadIdx.x + SPARSEGRAD_BLOCK * l;
        if (l < per_thread && x < m * w) k[l] = order[q + x / w];
    }
}

// r[l] = the gradient of this thread's l-th element of a tile of m
// occurrences whose rows are k.
template <typename T>
__device__ __forceinline__ void sg_tile_load(SG_MT(T) (&r)[SG_TILE_LOADS],
                                             const i64 (&k)[SG_TILE_LOADS],
                                             const T* grad, int m, int w, i64 R,
                                             i64 c0, SG_MT(T) s, int scaled) {
    const int per_thread = SG_TILE_BYTES / (int)sizeof(r[0]) / SPARSEGRAD_BLOCK;
#pragma unroll
    for (int l = 0; l < SG_TILE_LOADS; ++l) {
        const int x = (int)threadIdx.x + SPARSEGRAD_BLOCK * l;
        if (l < per_thread && x < m * w)
            r[l] = sg_grad(grad, k[l] * R + c0 + x % w, s, scaled);
    }
}

template <typename G>
__device__ __forceinline__ void sg_tile_store(const G (&r)[SG_TILE_LOADS], G* tile,
                                              int m, int w) {
    const int per_thread = SG_TILE_BYTES / (int)sizeof(G) / SPARSEGRAD_BLOCK;
#pragma unroll
    for (int l = 0; l < SG_TILE_LOADS; ++l) {
        const int x = (int)threadIdx.x + SPARSEGRAD_BLOCK * l;
        if (l < per_thread && x < m * w) tile[x] = r[l];
    }
}

// Streams columns [c0, c0 + w) of the gradient rows order[q0..q1) through
// the two shared tiles: the whole block loads the next tile (its rows one
// tile further ahead, so a tile's loads wait for one round trip, not two in
// a row) while take(tile, m) is called on threads t < w with this tile's m
// occurrences, in order (element p * w + t is occurrence p, column c0 + t).
// Every thread of the block must call it (barriers); it starts with a
// barrier, so the caller's earlier reads of the tiles are over.
template <typename T, typename Take>
__device__ void sg_stream_tiles(const T* grad, const i64* order, i64 q0, i64 q1,
                                i64 R, i64 c0, int w, SG_MT(T) s, int scaled,
                                double* tiles, Take take) {
    typedef SG_MT(T) G;
    const int per_tile = SG_TILE_BYTES / (int)sizeof(G) / w;  // occurrences
    G r[SG_TILE_LOADS];
    i64 k[SG_TILE_LOADS];
    int m = sg_tile_count(q0, q1, per_tile);
    sg_tile_rows<G>(k, order, q0, m, w);
    sg_tile_load(r, k, grad, m, w, R, c0, s, scaled);
    sg_tile_rows<G>(k, order, q0 + per_tile,
                    sg_tile_count(q0 + per_tile, q1, per_tile), w);
    __syncthreads();
    sg_tile_store(r, (G*)tiles, m, w);
    __syncthreads();
    int cur = 0;
    for (i64 q = q0; q < q1; q += per_tile) {
        // the next tile's loads go out first (k holds its rows; then the
        // rows of the tile after it) ...
        const int mn = sg_tile_count(q + per_tile, q1, per_tile);
        sg_tile_load(r, k, grad, mn, w, R, c0, s, scaled);
        const i64 qnn = q + 2 * (i64)per_tile;
        sg_tile_rows<G>(k, order, qnn, sg_tile_count(qnn, q1, per_tile), w);
        // ... while the chains take this tile, in order
        if ((int)threadIdx.x < w) take((const G*)(tiles + cur * SG_TILE_DOUBLES), m);
        // tiles[cur ^ 1] was last read before the previous barrier
        sg_tile_store(r, (G*)(tiles + (cur ^ 1) * SG_TILE_DOUBLES), mn, w);
        __syncthreads();
        cur ^= 1;
        m = mn;
    }
}

template <typename T, typename Row>
__device__ void sg_sparse_heavy(T* var, T* s1, T* s2, T* s3, const T* grad,
                                const i64* unique, const i64* order,
                                const i64* starts, const i64* heavy,
                                const i64* n_heavy, i64 R, const SG_HP(T)* hp,
                                SG_MT(T) s, int scaled, int coalesce,
                                double* tiles) {
    typedef SG_MT(T) G;
    const int t = threadIdx.x;
    const i64 cols = R < SG_CHUNK_COLS ? R : SG_CHUNK_COLS;
    const i64 n_chunks = (R + cols - 1) / cols;
    const i64 n_items = n_heavy[0] * n_chunks;
    for (i64 item = blockIdx.x; item < n_items; item += gridDim.x) {
        const i64 grp = heavy[item / n_chunks];
        const i64 c0 = (item % n_chunks) * cols;
        const int w = (int)(R - c0 < cols ? R - c0 : cols);
        const i64 row = unique[grp], q0 = starts[grp], q1 = starts[grp + 1];
        const i64 e = row * R + c0 + t;
        T v = sg_zero<T>(), a = v, b = v, c = v;
        G sum = (G)0;
        if (t < w) {
            v = var[e];
            if (Row::slots > 0) a = s1[e];
            if (Row::slots > 1) b = s2[e];
            if (Row::slots > 2) c = s3[e];
        }
        sg_stream_tiles<T>(grad, order, q0, q1, R, c0, w, s, scaled, tiles,
                           [&](const G* tile, int m) {
            if (coalesce)
                for (int p = 0; p < m; ++p) sum = sum + tile[p * w + t];
            else
                for (int p = 0; p < m; ++p) Row::f(&v, &a, &b, &c, tile[p * w + t], hp);
        });
        if (t < w) {
            if (coalesce) Row::f(&v, &a, &b, &c, sum, hp);
            if (Row::slots > 2) s3[e] = c;
            if (Row::slots > 1) s2[e] = b;
            if (Row::slots > 0) s1[e] = a;
            var[e] = v;
        }
    }
}

// heavy[0..n_heavy[0]) = the groups with at least heavy_min occurrences, in
// any order (an integer atomic counter; n_heavy[0] starts at 0).
extern "C" __global__ void heavy_groups(const i64* starts, i64 n_groups, i64 heavy_min,
                                        i64* heavy, i64* n_heavy) {
    SG_GRID_LOOP(g, n_groups) {
        if (starts[g + 1] - starts[g] >= heavy_min) {
            const unsigned long long k =
                atomicAdd((unsigned long long*)n_heavy, 1ULL);
            heavy[k] = g;
        }
    }
}

// The kernels of one op on storage type T, named with suffix sfx.  Their C
// signatures name P for T (T itself, or unsigned short, the bits of a half
// type: a kernel's parameters are C types), the arrays cast to T inside and
// the scalar s (the gradients' scale, applied when `scaled`) read by
// sg_math<T>::value.  The module that includes this file defines SG_DENSE
// and SG_SPARSE from these for its types.
#define SG_PTRS(T) (T*)var, (T*)s1, (T*)s2, (T*)s3, (const T*)grad
#define SG_DENSE_T(op, Row, P, T, sfx)                                        \
    extern "C" __global__ void dense_##op##_##sfx(                            \
        P* var, P* s1, P* s2, P* s3, const P* grad, i64 size, SG_HP_PARAMS,    \
        P s, int scaled) {                                                    \
        SG_HP_LOAD(sfx);                                                      \
        sg_dense<T, Row>(SG_PTRS(T), size, hp, sg_math<T>::value(s), scaled); \
    }

#define SG_SPARSE_T(op, Row, Scalar, P, T, sfx)                               \
    extern "C" __global__ void sparse_##op##_##sfx(                           \
        P* var, P* s1, P* s2, P* s3, const P* grad, const i64* unique,        \
        const i64* order, const i64* starts, i64 n_groups, i64 R,             \
        SG_HP_PARAMS, P s, int scaled, int coalesce, i64 heavy_min) {         \
        SG_HP_LOAD(sfx);                                                      \
        if (R == 1)                                                           \
            sg_sparse<T, Scalar>(SG_PTRS(T), unique, order, starts, n_groups, \
                                 R, hp, sg_math<T>::value(s), scaled,         \
                                 coalesce, heavy_min);                        \
        else                                                                  \
            sg_sparse<T, Row>(SG_PTRS(T), unique, order, starts, n_groups, R, \
                              hp, sg_math<T>::value(s), scaled, coalesce,     \
                              heavy_min);                                     \
    }                                                                         \
    extern "C" __global__ void __launch_bounds__(SPARSEGRAD_BLOCK, 2)         \
    sparse_heavy_##op##_##sfx(                                                \
        P* var, P* s1, P* s2, P* s3, const P* grad, const i64* unique,        \
        const i64* order, const i64* starts, const i64* heavy,                \
        const i64* n_heavy, i64 R, SG_HP_PARAMS, P s, int scaled,             \
        int coalesce) {                                                       \
        SG_HP_LOAD(sfx);                                                      \
        SG_TILES;                                                             \
        if (R == 1)                                                           \
            sg_sparse_heavy<T, Scalar>(SG_PTRS(T), unique, order, starts,     \
                                       heavy, n_heavy, R, hp,                 \
                                       sg_math<T>::value(s), scaled,          \
                                       coalesce, tiles);                      \
        else                                                                  \
            sg_sparse_heavy<T, Row>(SG_PTRS(T), unique, order, starts, heavy, \
                                    n_heavy, R, hp, sg_math<T>::value(s),     \
                                    scaled, coalesce, tiles);                 \
    }

// The ops' SG_ROW, SG_DENSE and SG_SPARSE lines follow the including module
// (generated from the table of the ops, training_table.py: generated_source).

// ---------------------------------------------------------------------------
// Row-wise Adagrad: one accumulator per row of R elements (hp: lr, epsilon).
//   accum += T(sum_j g_j**2 (in double, in column order) / R)
//   var_j -= (lr / (sqrt(accum) + epsilon)) * g_j

// The gradient of column j of one application: occurrence q's row (scaled as
// read), or, coalesced, the sum from zero of the rows order[q0..q1) in order;
// dense (order NULL): row q of grad.
template <typename T>
__device__ __forceinline__ SG_MT(T) sg_rowwise_grad(const T* grad, const i64* order,
                                                   i64 q, i64 q0, i64 q1, i64 R,
                                                   i64 j, SG_MT(T) s, int scaled,
                                                   int coalesce) {
    if (!order) return sg_grad(grad, q * R + j, s, scaled);
    if (!coalesce) return sg_grad(grad, order[q] * R + j, s, scaled);
    return sg_ordered_sum(grad, order, q0, q1, R, j, s, scaled);
}

// Coalesced row-wise groups: the sum, in order from zero, of columns
// [c0, c0 + w) of the rows order[q0..q1), column c0 + t returned to thread
// t < w.  The whole block streams the rows through the shared tiles
// (sg_stream_tiles: the next tile's loads in flight while the chains take
// this one), so a hot row streams with 256 threads' loads, not w threads'
// SG_UNROLL each.  Every thread of the block must call it (barriers).
// Groups of fewer rows sum per thread (SG_UNROLL loads ahead): fewer barriers.
#define SG_ROWWISE_TILED_MIN 32

template <typename T>
__device__ SG_MT(T) sg_block_column_sum(const T* grad, const i64* order, i64 q0,
                                        i64 q1, i64 R, i64 c0, int w, SG_MT(T) s,
                                        int scaled, double* tiles) {
    typedef SG_MT(T) G;
    const int t = threadIdx.x;
    G sum = (G)0;
    sg_stream_tiles<T>(grad, order, q0, q1, R, c0, w, s, scaled, tiles,
                       [&](const G* tile, int m) {
        for (int p = 0; p < m; ++p) sum = sum + tile[p * w + t];
    });
    return sum;
}

// Applies, for each group of one block's grid-stride share, each occurrence
// (or the coalesced sum once).  Dense: the groups are the rows themselves
// (order, unique and starts NULL).  The threads read the row's gradient
// (coalesced loads; each thread its columns, a coalesced sum in order) and
// put the squares in shared memory, BLOCK columns at a time; thread 0 adds
// them in column order (the CPU's order, hence its bits), updates the
// accumulator and shares the multiplier.  Every loop bound below depends on
// the block and the group only, so all threads reach every barrier.
template <typename T>
__device__ void sg_rowwise(T* var, T* accum, const T* grad, const i64* unique,
                           const i64* order, const i64* starts, i64 n_groups, i64 R,
                           const SG_HP(T)* hp, SG_MT(T) s, int scaled, int coalesce,
                           double* tiles) {
    typedef SG_MT(T) G;
    __shared__ double sq[SPARSEGRAD_BLOCK];
    __shared__ double mult_shared;
    const i64 t = threadIdx.x, block = blockDim.x;
    for (i64 grp = blockIdx.x; grp < n_groups; grp += gridDim.x) {
        const i64 row = unique ? unique[grp] : grp;
        const i64 q0 = starts ? starts[grp] : grp;
        const i64 q1 = starts ? starts[grp + 1] : grp + 1;
        const i64 n_apply = coalesce ? 1 : q1 - q0;
        for (i64 a = 0; a < n_apply; ++a) {
            const i64 q = q0 + a;
            double total = 0;               // thread 0's
            G g_first = (G)0;               // column t's gradient, kept
            // coalesced, many rows: the block streams them together
            const bool tiled = order && coalesce && q1 - q0 >= SG_ROWWISE_TILED_MIN;
            for (i64 c0 = 0; c0 < R; c0 += block) {
                const i64 j = c0 + t;
                const G g_sum =
                    tiled ? sg_block_column_sum(grad, order, q0, q1, R, c0,
                                                (int)(R - c0 < block ? R - c0 : block),
                                                s, scaled, tiles)
                          : (G)0;
                if (j < R) {
                    const G gj = tiled
                                     ? g_sum
                                     : sg_rowwise_grad(grad, order, q, q0, q1, R, j,
                                                       s, scaled, coalesce);
                    if (c0 == 0) g_first = gj;
                    sq[t] = sg_rowwise_square(gj);
                }
                __syncthreads();
                if (t == 0) {
                    const i64 m = R - c0 < block ? R - c0 : block;
                    for (i64 k = 0; k < m; ++k) total = total + sq[k];
                }
                __syncthreads();            // sq is written again next round
            }
            if (t == 0) {
                const G mult = sg_rowwise_adagrad_mult(hp, accum + row, total, R);
                mult_shared = (double)mult;     // exact: G fits in double
            }
            __syncthreads();
            const G mult = (G)mult_shared;
            for (i64 j = t; j < R; j += block) {
                const G gj = j == t ? g_first
                                    : sg_rowwise_grad(grad, order, q, q0, q1, R, j,
                                                      s, scaled, coalesce);
                sg_rowwise_adagrad_step(var + row * R + j, mult, gj);
            }
            // mult_shared is written again by the next application.
            __syncthreads();
        }
    }
}

// Its kernels on storage type T (P, sfx: as SG_DENSE_T's).
#define SG_ROWWISE_T(P, T, sfx)                                               \
    extern "C" __global__ void dense_rowwise_adagrad_##sfx(                   \
        P* var, P* accum, const P* grad, i64 n_rows, i64 R, SG_HP_PARAMS, P s, \
        int scaled) {                                                         \
        SG_HP_LOAD(sfx);                                                      \
        sg_rowwise<T>((T*)var, (T*)accum, (const T*)grad, (const i64*)0,      \
                      (const i64*)0, (const i64*)0, n_rows, R, hp,            \
                      sg_math<T>::value(s), scaled, 0, (double*)0);           \
    }                                                                         \
    extern "C" __global__ void sparse_rowwise_adagrad_##sfx(                  \
        P* var, P* accum, const P* grad, const i64* unique, const i64* order, \
        const i64* starts, i64 n_groups, i64 R, SG_HP_PARAMS, P s, int scaled, \
        int coalesce) {                                                       \
        SG_HP_LOAD(sfx);                                                      \
        SG_TILES;                                                             \
        sg_rowwise<T>((T*)var, (T*)accum, (const T*)grad, unique, order,      \
                      starts, n_groups, R, hp, sg_math<T>::value(s), scaled,  \
                      coalesce, tiles);                                       \
    }

// ---------------------------------------------------------------------------
// Lamb (hp: lr, beta1, beta2, epsilon, beta1_power, beta2_power; m, v).

#if SPARSEGRAD_BLOCK % SG_LAMB_LANES != 0
#error "a block's columns must fill whole lanes"
#endif

// The first pass over the n values of one segment (var, m, v at its first
// value; the gradient of value j from grad_of(j)): m and v updated, and the
// segment's two sums of squares.  The block takes BLOCK columns at a time:
// each thread updates its column and puts the two squares in shared memory,
// threads t < SG_LAMB_LANES add the squares of lane t in column order
// (lane l's columns are l, l + LANES, ...: the CPU's order), and at the end
// thread 0 adds the lanes pairwise (sg_lamb_total).  Returns lr * ratio to every thread, or,
// when sums_out is given, writes the two sums there.  Every thread of the
// block must call it.
template <typename T, typename GradOf>
__device__ SG_MT(T) sg_lamb_first_pass(T* var, T* m, T* v, i64 n,
                                       const SG_HP(T)* hp, GradOf grad_of,
                                       double* sums_out) {
    typedef SG_MT(T) G;
    __shared__ double sq_w[SPARSEGRAD_BLOCK];
    __shared__ double sq_u[SPARSEGRAD_BLOCK];
    __shared__ double scale_shared;
    const i64 t = threadIdx.x;
    double lane_w = 0, lane_u = 0;      // thread t < SG_LAMB_LANES: lane t
    for (i64 c0 = 0; c0 < n; c0 += SPARSEGRAD_BLOCK) {
        const i64 j = c0 + t;
        if (j < n) {
            const G u = sg_lamb_moments(hp, m + j, v + j, grad_of(j));
            sq_w[t] = sg_rowwise_square(var[j]);
            sq_u[t] = sg_rowwise_square(u);
        }
        __syncthreads();
        if (t < SG_LAMB_LANES) {
            const i64 width = n - c0 < SPARSEGRAD_BLOCK ? n - c0 : SPARSEGRAD_BLOCK;
            for (i64 k = t; k < width; k += SG_LAMB_LANES) {
                lane_w = lane_w + sq_w[k];
                lane_u = lane_u + sq_u[k];
            }
        }
        __syncthreads();                // sq_* are written again next round
    }
    if (t < SG_LAMB_LANES) {
        sq_w[t] = lane_w;
        sq_u[t] = lane_u;
    }
    __syncthreads();
    if (t == 0) {
        const double w = sg_lamb_total(sq_w), u = sg_lamb_total(sq_u);
        if (sums_out) {
            sums_out[0] = w;
            sums_out[1] = u;
        } else {
            scale_shared = (double)sg_lamb_scale(hp, w, u);  // exact: G in double
        }
    }
    __syncthreads();
    const G scale = (G)scale_shared;
    __syncthreads();            // the shared values are written again next call
    return scale;
}

template <typename T>
__device__ __forceinline__ void sg_lamb_second_pass(T* var, const T* m, const T* v,
                                                    i64 n, const SG_HP(T)* hp,
                                                    SG_MT(T) scale) {
    for (i64 j = threadIdx.x; j < n; j += SPARSEGRAD_BLOCK)
        sg_lamb_step(var + j, scale, sg_lamb_direction(hp, m + j, v + j));
}

// Each group of one block's grid-stride share: each occurrence in order (or
// the coalesced sum once) is one segment, the row.
template <typename T>
__device__ void sg_lamb_rows(T* var, T* m, T* v, const T* grad, const i64* unique,
                             const i64* order, const i64* starts, i64 n_groups, i64 R,
                             const SG_HP(T)* hp, SG_MT(T) s, int scaled,
                             int coalesce) {
    for (i64 grp = blockIdx.x; grp < n_groups; grp += gridDim.x) {
        const i64 row = unique[grp], q0 = starts[grp], q1 = starts[grp + 1];
        const i64 n_apply = coalesce ? 1 : q1 - q0;
        T* vr = var + row * R;
        T* mr = m + row * R;
        T* nr = v + row * R;
        for (i64 a = 0; a < n_apply; ++a) {
            const i64 q = q0 + a;
            const SG_MT(T) scale = sg_lamb_first_pass<T>(
                vr, mr, nr, R, hp,
                [&](i64 j) {
                    return sg_rowwise_grad(grad, order, q, q0, q1, R, j, s, scaled,
                                           coalesce);
                },
                (double*)0);
            sg_lamb_second_pass<T>(vr, mr, nr, R, hp, scale);
            __syncthreads();    // the row is read again by the next occurrence
        }
    }
}

// Its kernels on storage type T (P, sfx: as SG_DENSE_T's).
#define SG_LAMB_T(P, T, sfx)                                                  \
    extern "C" __global__ void sparse_lamb_##sfx(                             \
        P* var, P* m, P* v, const P* grad, const i64* unique, const i64* order, \
        const i64* starts, i64 n_groups, i64 R, SG_HP_PARAMS, P s, int scaled, \
        int coalesce) {                                                       \
        SG_HP_LOAD(sfx);                                                      \
        sg_lamb_rows<T>((T*)var, (T*)m, (T*)v, (const T*)grad, unique, order, \
                        starts, n_groups, R, hp, sg_math<T>::value(s),        \
                        scaled, coalesce);                                    \
    }                                                                         \
    /* Dense, first kernel: the sums of squares of each chunk (sums[2c],    */ \
    /* sums[2c + 1]), m and v updated.                                       */ \
    extern "C" __global__ void dense_lamb_sums_##sfx(                         \
        P* var, P* m, P* v, const P* grad, i64 size, SG_HP_PARAMS, P s,       \
        int scaled, double* sums) {                                           \
        SG_HP_LOAD(sfx);                                                      \
        const auto sv = sg_math<T>::value(s);                                 \
        const i64 n_chunks = (size + SG_LAMB_CHUNK - 1) / SG_LAMB_CHUNK;      \
        for (i64 c = blockIdx.x; c < n_chunks; c += gridDim.x) {              \
            const i64 start = c * SG_LAMB_CHUNK;                              \
            const i64 n = size - start < SG_LAMB_CHUNK ? size - start         \
                                                       : SG_LAMB_CHUNK;       \
            const T* g = (const T*)grad + start;                              \
            sg_lamb_first_pass<T>(                                            \
                (T*)var + start, (T*)m + start, (T*)v + start, n, hp,         \
                [&](i64 j) { return sg_grad(g, j, sv, scaled); }, sums + 2 * c); \
        }                                                                     \
    }                                                                         \
    /* Second: the chunks' sums in order, by one thread; lr * ratio.        */ \
    extern "C" __global__ void dense_lamb_scale_##sfx(                        \
        const double* sums, i64 n_chunks, SG_HP_PARAMS, P* scale) {           \
        SG_HP_LOAD(sfx);                                                      \
        if (blockIdx.x != 0 || threadIdx.x != 0) return;                      \
        double w = 0, u = 0;                                                  \
        for (i64 c = 0; c < n_chunks; ++c) {                                  \
            w = w + sums[2 * c];                                              \
            u = u + sums[2 * c + 1];                                          \
        }                                                                     \
        ((T*)scale)[0] = sg_lamb_scale(hp, w, u);                             \
    }                                                                         \
    /* Third: every value steps.                                             */ \
    extern "C" __global__ void dense_lamb_step_##sfx(                         \
        P* var, const P* m, const P* v, i64 size, SG_HP_PARAMS,               \
        const P* scale) {                                                     \
        SG_HP_LOAD(sfx);                                                      \
        const auto sc = sg_math<T>::value(scale[0]);                          \
        for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < size;    \
             i += (i64)gridDim.x * blockDim.x)                                \
            sg_lamb_step((T*)var + i, sc,                                     \
                         sg_lamb_direction(hp, (const T*)m + i, (const T*)v + i)); \
    }
