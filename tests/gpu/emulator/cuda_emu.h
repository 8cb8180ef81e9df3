// The CUDA execution model on a CPU, for testing sparsegrad's .cu kernels
// without a GPU (tests/gpu/emulator/fake_cupy.py compiles each module with
// g++ against this header).
//
// * Blocks run one after another.  The threads of a block are fibers
//   (ucontext) on one OS thread: each runs until it calls __syncthreads() or
//   returns, then the next one runs; a barrier is passed when every thread of
//   the block has reached it (or returned).  So __shared__ (a static) is
//   shared by the block, and integer atomics are trivially atomic.
// * Floating-point arithmetic is the host's IEEE arithmetic with contraction
//   off (the modules compile with -ffp-contract=off), as on the GPU with
//   --fmad=false; exp/log/pow are glibc's, not libdevice's.
// * Warp intrinsics and dynamic shared memory are deliberately absent: a
//   kernel that uses them does not compile here (sparsegrad's kernels do not).
#pragma once

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef SG_EMU_SCAN
#define __global__
#endif
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __constant__ static
#define __launch_bounds__(...)

struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };

extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

extern "C" void sg_emu_syncthreads(void);
static inline void __syncthreads(void) { sg_emu_syncthreads(); }
static inline void __threadfence(void) {}
static inline void __threadfence_block(void) {}

template <typename T> static inline T min(T a, T b) { return b < a ? b : a; }
template <typename T> static inline T max(T a, T b) { return a < b ? b : a; }
template <typename T> static inline T __ldg(const T* p) { return *p; }

// One OS thread runs a whole block, switching only at barriers: a
// read-modify-write here is atomic.
template <typename T> static inline T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
template <typename T> static inline T atomicSub(T* p, T v) { T o = *p; *p = o - v; return o; }
template <typename T> static inline T atomicMax(T* p, T v) { T o = *p; if (o < v) *p = v; return o; }
template <typename T> static inline T atomicMin(T* p, T v) { T o = *p; if (v < o) *p = v; return o; }
template <typename T> static inline T atomicExch(T* p, T v) { T o = *p; *p = v; return o; }
template <typename T> static inline T atomicOr(T* p, T v) { T o = *p; *p = o | v; return o; }
template <typename T> static inline T atomicAnd(T* p, T v) { T o = *p; *p = o & v; return o; }
template <typename T> static inline T atomicCAS(T* p, T c, T v) { T o = *p; if (o == c) *p = v; return o; }

static inline int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
static inline float __int_as_float(int i) { float x; memcpy(&x, &i, 4); return x; }
static inline long long __double_as_longlong(double x) { long long i; memcpy(&i, &x, 8); return i; }
static inline double __longlong_as_double(long long i) { double x; memcpy(&x, &i, 8); return x; }
