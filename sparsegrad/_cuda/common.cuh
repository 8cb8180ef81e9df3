// Shared by every sparsegrad .cu module: index type, the block size, and the
// elementary functions rounded as the Cython kernels round them.
#pragma once

typedef long long i64;

#ifndef SPARSEGRAD_BLOCK
#define SPARSEGRAD_BLOCK 256
#endif

// A grid-stride loop over [0, n).
#define SG_GRID_LOOP(i, n)                                                    \
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n);          \
         i += (i64)blockDim.x * gridDim.x)

// 1 / sqrt(x), each rounded: never the hardware estimate rsqrtf.
__device__ __forceinline__ float sg_rsqrt(float x) { return 1.0f / sqrtf(x); }
__device__ __forceinline__ double sg_rsqrt(double x) { return 1.0 / sqrt(x); }
__device__ __forceinline__ float sg_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double sg_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float sg_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double sg_abs(double x) { return fabs(x); }
__device__ __forceinline__ float sg_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double sg_pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float sg_exp(float x) { return expf(x); }
__device__ __forceinline__ double sg_exp(double x) { return exp(x); }
__device__ __forceinline__ float sg_log(float x) { return logf(x); }
__device__ __forceinline__ double sg_log(double x) { return log(x); }

// -1, 0 or +1; NaN stays NaN (as _sign in _training_rows.pxi).
template <typename T> __device__ __forceinline__ T sg_sign(T x) {
    T s = (T)(x > 0) - (T)(x < 0);
    return x == x ? s : x;
}
// max/min as the Cython kernels write them: NaN handling follows the compare.
template <typename T> __device__ __forceinline__ T sg_max(T a, T b) { return a < b ? b : a; }
template <typename T> __device__ __forceinline__ T sg_min(T a, T b) { return b < a ? b : a; }
