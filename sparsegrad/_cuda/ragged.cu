// CUDA twins of sparsegrad/_kernels/ragged.pyx: RaggedRange (sizes, splits,
// fill) and row splits to value row ids.  Launchers: ragged.py.
//
// Kernel names carry the value type (i32/i64/f32/f64) and, where splits are
// an argument, the splits type after it (range_fill_f32_i64).  Every output
// element is computed from its own row's inputs, in the CPU kernel's
// arithmetic, so the bits do not depend on the launch shape.
#include "common.cuh"

typedef unsigned long long u64;
typedef unsigned int u32;

#define SG_ZERO_DELTA (-1LL)
#define SG_TOO_LARGE (-2LL)
// 2**63: the smallest float size that does not fit in i64.
#define SG_TWO_63 9.223372036854775808e18

// -- range_sizes -------------------------------------------------------------

template <typename T>
__device__ __forceinline__ i64 sg_int_row_size(T start, T limit, T delta, u64 max_size) {
    // |limit - start| and |delta| exactly, in unsigned 64-bit arithmetic.
    u64 span, step, size;
    if (limit >= start)
        span = (u64)(i64)limit - (u64)(i64)start;
    else
        span = (u64)(i64)start - (u64)(i64)limit;
    if (delta > 0)
        step = (u64)(i64)delta;
    else
        step = (u64)0 - (u64)(i64)delta;
    size = span / step;
    if (span % step != 0) size = size + 1;
    if (size > max_size) return SG_TOO_LARGE;
    return (i64)size;
}

__device__ __forceinline__ i64 sg_row_size(int start, int limit, int delta, u64 max_size) {
    return sg_int_row_size<int>(start, limit, delta, max_size);
}
__device__ __forceinline__ i64 sg_row_size(i64 start, i64 limit, i64 delta, u64 max_size) {
    return sg_int_row_size<i64>(start, limit, delta, max_size);
}
__device__ __forceinline__ i64 sg_row_size(float start, float limit, float delta, u64 max_size) {
    float size_f = ceilf(fabsf((limit - start) / delta));
    // compared in double, as on the CPU (see ragged.pyx)
    double size_d = (double)size_f;
    if (!(size_d <= (double)max_size) || size_d >= SG_TWO_63) return SG_TOO_LARGE;
    return (i64)size_f;
}
__device__ __forceinline__ i64 sg_row_size(double start, double limit, double delta, u64 max_size) {
    double size_d = ceil(fabs((limit - start) / delta));
    if (!(size_d <= (double)max_size) || size_d >= SG_TWO_63) return SG_TOO_LARGE;
    return (i64)size_d;
}

template <typename T>
__device__ __forceinline__ void range_sizes_body(
    const T *starts, const T *limits, const T *deltas, i64 ss, i64 ls, i64 ds,
    i64 *sizes_out, i64 n_rows, i64 max_size) {
    u64 max_u = (u64)max_size;
    SG_GRID_LOOP(i, n_rows) {
        T start = starts[i * ss], limit = limits[i * ls], delta = deltas[i * ds];
        i64 size;
        if (delta == 0)
            size = SG_ZERO_DELTA;
        else if ((delta > 0 && limit < start) || (delta < 0 && limit > start))
            size = 0;
        else
            size = sg_row_size(start, limit, delta, max_u);
        sizes_out[i] = size;
    }
}

#define SG_RANGE_SIZES(SUF, T)                                                  \
    extern "C" __global__ void range_sizes_##SUF(                               \
        const T *starts, const T *limits, const T *deltas, i64 ss, i64 ls,      \
        i64 ds, i64 *sizes_out, i64 n_rows, i64 max_size) {                     \
        range_sizes_body<T>(starts, limits, deltas, ss, ls, ds, sizes_out,      \
                            n_rows, max_size);                                  \
    }
SG_RANGE_SIZES(i32, int)
SG_RANGE_SIZES(i64, i64)
SG_RANGE_SIZES(f32, float)
SG_RANGE_SIZES(f64, double)

// -- range_splits ------------------------------------------------------------
// One block.  Thread t owns a contiguous chunk of rows.  The CPU scans row by
// row and stops at the first row that has a negative code or overflows the
// running total; here each chunk sums its rows (negative codes counting as
// 0), thread 0 takes the exclusive prefix of the chunk sums ("over" once it
// exceeds max_total: totals only grow, so the first overflowing row lies in
// the first chunk whose prefix plus sum exceeds it), and each chunk then
// rescans its rows from its prefix.  result[0] = the
// first failing row or -1, result[1] = its cause (the code, or 0).

template <typename S>
__device__ __forceinline__ void range_splits_body(
    const i64 *sizes, S *splits_out, i64 *result, i64 n_rows, i64 max_total) {
    __shared__ i64 part[SPARSEGRAD_BLOCK];
    __shared__ i64 first_neg[SPARSEGRAD_BLOCK];
    __shared__ i64 first_over[SPARSEGRAD_BLOCK];
    int t = threadIdx.x;
    i64 per = (n_rows + SPARSEGRAD_BLOCK - 1) / SPARSEGRAD_BLOCK;
    i64 lo = (i64)t * per, hi = lo + per;
    if (lo > n_rows) lo = n_rows;
    if (hi > n_rows) hi = n_rows;
    // pass 1: the chunk's sum (or "over" once it exceeds max_total) and its
    // first negative code
    i64 sum = 0, neg = -1;
    bool over = false;
    for (i64 i = lo; i < hi; i++) {
        i64 s = sizes[i];
        if (s < 0) {
            if (neg < 0) neg = i;
            continue;
        }
        if (!over && s > max_total - sum) over = true;
        if (!over) sum = sum + s;
    }
    part[t] = over ? -1 : sum;   // -1: this chunk alone exceeds max_total
    first_neg[t] = neg;
    __syncthreads();
    if (t == 0) {
        // exclusive prefix of the chunk sums; -1 once the total is exceeded
        i64 run = 0;
        for (int k = 0; k < SPARSEGRAD_BLOCK; k++) {
            i64 p = part[k];
            part[k] = run;
            if (run >= 0) run = (p < 0 || p > max_total - run) ? -1 : run + p;
        }
    }
    __syncthreads();
    // pass 2: each chunk walks its rows from its prefix and writes the
    // splits; the first row whose total exceeds max_total is noted
    i64 run = part[t];
    i64 over_row = -1;
    if (run >= 0) {   // else an earlier chunk holds the overflowing row
        for (i64 i = lo; i < hi; i++) {
            i64 s = sizes[i];
            if (s < 0) continue;
            if (s > max_total - run) {
                over_row = i;
                break;
            }
            run = run + s;
            splits_out[i + 1] = (S)run;
        }
    }
    first_over[t] = over_row;
    __syncthreads();
    if (t == 0) {
        i64 bad = -1, cause = 0;
        for (int k = 0; k < SPARSEGRAD_BLOCK; k++) {
            i64 n = first_neg[k], o = first_over[k];
            // chunks are in row order: the first chunk with either decides
            if (n >= 0 && (o < 0 || n < o)) {
                bad = n;
                cause = sizes[n];
                break;
            }
            if (o >= 0) {
                bad = o;
                cause = 0;
                break;
            }
        }
        splits_out[0] = (S)0;
        result[0] = bad;
        result[1] = cause;
    }
}

#define SG_RANGE_SPLITS(SUF, S)                                                 \
    extern "C" __global__ void range_splits_##SUF(                              \
        const i64 *sizes, S *splits_out, i64 *result, i64 n_rows,               \
        i64 max_total) {                                                        \
        range_splits_body<S>(sizes, splits_out, result, n_rows, max_total);     \
    }
SG_RANGE_SPLITS(i32, int)
SG_RANGE_SPLITS(i64, i64)

// -- range_fill --------------------------------------------------------------

// The row of value k: the last r with splits[r] <= k (empty rows share their
// split with the next row, so the last one is the row that holds k).
template <typename S>
__device__ __forceinline__ i64 sg_row_of(const S *splits, i64 n_rows, i64 k) {
    i64 lo = 0, hi = n_rows;   // answer in [lo, hi)
    while (hi - lo > 1) {
        i64 mid = lo + (hi - lo) / 2;
        if ((i64)splits[mid] <= k)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// Integers: the CPU adds delta repeatedly in unsigned arithmetic of the
// values' width, which equals start + j * delta modulo 2**width: one thread
// per value.
template <typename T, typename U, typename S>
__device__ __forceinline__ void range_fill_int_body(
    const T *starts, const T *deltas, i64 ss, i64 ds, const S *splits,
    T *values_out, i64 n_rows, i64 total) {
    SG_GRID_LOOP(k, total) {
        i64 r = sg_row_of<S>(splits, n_rows, k);
        U j = (U)(k - (i64)splits[r]);
        U v = (U)starts[r * ss] + j * (U)deltas[r * ds];
        values_out[k] = (T)v;
    }
}

// Floats: the CPU's values are a chain of roundings (v = v + delta), which
// only the same chain reproduces: one thread per row.
template <typename T, typename S>
__device__ __forceinline__ void range_fill_float_body(
    const T *starts, const T *deltas, i64 ss, i64 ds, const S *splits,
    T *values_out, i64 n_rows, i64 total) {
    (void)total;
    SG_GRID_LOOP(r, n_rows) {
        i64 lo = (i64)splits[r], hi = (i64)splits[r + 1];
        T v = starts[r * ss], d = deltas[r * ds];
        for (i64 k = lo; k < hi; k++) {
            values_out[k] = v;
            v = v + d;
        }
    }
}

#define SG_RANGE_FILL_INT(SUF, SSUF, T, U, S)                                   \
    extern "C" __global__ void range_fill_##SUF##_##SSUF(                       \
        const T *starts, const T *deltas, i64 ss, i64 ds, const S *splits,      \
        T *values_out, i64 n_rows, i64 total) {                                 \
        range_fill_int_body<T, U, S>(starts, deltas, ss, ds, splits,            \
                                     values_out, n_rows, total);                \
    }
#define SG_RANGE_FILL_FLOAT(SUF, SSUF, T, S)                                    \
    extern "C" __global__ void range_fill_##SUF##_##SSUF(                       \
        const T *starts, const T *deltas, i64 ss, i64 ds, const S *splits,      \
        T *values_out, i64 n_rows, i64 total) {                                 \
        range_fill_float_body<T, S>(starts, deltas, ss, ds, splits,             \
                                    values_out, n_rows, total);                 \
    }
SG_RANGE_FILL_INT(i32, i32, int, u32, int)
SG_RANGE_FILL_INT(i32, i64, int, u32, i64)
SG_RANGE_FILL_INT(i64, i32, i64, u64, int)
SG_RANGE_FILL_INT(i64, i64, i64, u64, i64)
SG_RANGE_FILL_FLOAT(f32, i32, float, int)
SG_RANGE_FILL_FLOAT(f32, i64, float, i64)
SG_RANGE_FILL_FLOAT(f64, i32, double, int)
SG_RANGE_FILL_FLOAT(f64, i64, double, i64)

// -- row_splits_to_rowids ----------------------------------------------------

template <typename S>
__device__ __forceinline__ void rowids_body(const S *splits, S *rowids_out,
                                            i64 n_rows, i64 total) {
    SG_GRID_LOOP(k, total) {
        rowids_out[k] = (S)sg_row_of<S>(splits, n_rows, k);
    }
}

#define SG_ROWIDS(SUF, S)                                                       \
    extern "C" __global__ void row_splits_to_rowids_##SUF(                      \
        const S *splits, S *rowids_out, i64 n_rows, i64 total) {                \
        rowids_body<S>(splits, rowids_out, n_rows, total);                      \
    }
SG_ROWIDS(i32, int)
SG_ROWIDS(i64, i64)
