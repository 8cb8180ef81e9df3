// Shared by every sparsegrad .cu module: index type, the block size, and
// (sg_base.h, shared with the Cython kernels) the elementary functions.
#pragma once
#include "sg_base.h"

typedef long long i64;

#ifndef SPARSEGRAD_BLOCK
#define SPARSEGRAD_BLOCK 256
#endif

// A grid-stride loop over [0, n).
#define SG_GRID_LOOP(i, n)                                                    \
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n);          \
         i += (i64)blockDim.x * gridDim.x)
