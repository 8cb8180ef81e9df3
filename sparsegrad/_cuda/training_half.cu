// The CUDA training kernels on float16 and bfloat16 (the twins of
// sparsegrad/_kernels/training_half.pyx): the drivers of training.cuh around
// the element functions of sg_training.h, instantiated for the half storage
// types of sg_half.h, sg_sf16 and sg_sbf16, whose math types compute in float
// and round to the storage type after every operation (TensorFlow's half
// kernels; the same instantiation as the CPU's).  The arrays arrive as their
// 16 bits (unsigned short; CuPy's uint16 views), as does the scale s.  Kernel
// names end in _f16, _bf16.  A module of its own, compiled on the first half
// update only.  The ops' SG_ROW, SG_DENSE and SG_SPARSE lines follow this
// file (sparsegrad._cuda.training_half.generated_source: the table's).
#include "sg_half.h"
#include "training.cuh"

#define SG_DENSE(op, Row)                                                     \
    SG_DENSE_T(op, Row, unsigned short, sg_sf16, f16)                         \
    SG_DENSE_T(op, Row, unsigned short, sg_sbf16, bf16)

#define SG_SPARSE(op, Row, Scalar)                                            \
    SG_SPARSE_T(op, Row, Scalar, unsigned short, sg_sf16, f16)                \
    SG_SPARSE_T(op, Row, Scalar, unsigned short, sg_sbf16, bf16)

SG_ROWWISE_T(unsigned short, sg_sf16, f16)
SG_ROWWISE_T(unsigned short, sg_sbf16, bf16)

SG_LAMB_T(unsigned short, sg_sf16, f16)
SG_LAMB_T(unsigned short, sg_sbf16, bf16)

// The conversions of sg_half.h, one value a thread (the twins of
// training_half.pyx's round_bits, widen_bits and round_bits_f64, which tests
// compare with the host's over every half value).
extern "C" __global__ void round_bits(const float* x, unsigned short* out, i64 n,
                                      int bf16) {
    SG_GRID_LOOP(i, n) out[i] = bf16 ? sg_f32_to_bf16(x[i]) : sg_f32_to_f16(x[i]);
}

extern "C" __global__ void widen_bits(const unsigned short* h, float* out, i64 n,
                                      int bf16) {
    SG_GRID_LOOP(i, n) out[i] = bf16 ? sg_bf16_to_f32(h[i]) : sg_f16_to_f32(h[i]);
}

extern "C" __global__ void round_bits_f64(const double* x, unsigned short* out,
                                          i64 n, int bf16) {
    SG_GRID_LOOP(i, n) out[i] = bf16 ? sg_f64_to_bf16(x[i]) : sg_f64_to_f16(x[i]);
}

// Mixed precision (sparsegrad.training.training_ops.mixed): the half rows
// of an update as float32, and float32 rows stored back rounded once as
// sg_mixed.h rounds them (the twins of training_half.pyx's mixed_load_rows
// and mixed_store_rows: element j of row i is position i * R + j).
#include "sg_mixed.h"

extern "C" __global__ void mixed_load_rows(const unsigned short* src,
                                           const i64* rows, float* out, i64 n,
                                           i64 R, int bf16) {
    SG_GRID_LOOP(t, n * R) {
        i64 k = t / R, j = t - k * R;
        unsigned short h = src[rows[k] * R + j];
        out[t] = bf16 ? sg_bf16_to_f32(h) : sg_f16_to_f32(h);
    }
}

extern "C" __global__ void mixed_store_rows(const float* src, const i64* rows,
                                            unsigned short* out, i64 n, i64 R,
                                            int bf16, int stochastic,
                                            unsigned int k0, unsigned int k1) {
    SG_GRID_LOOP(t, n * R) {
        i64 k = t / R, j = t - k * R;
        sg_u64 pos = (sg_u64)rows[k] * (sg_u64)R + (sg_u64)j;
        sg_u32 r = stochastic ? sg_sr_word(k0, k1, pos) : 0u;
        out[rows[k] * R + j] = sg_mixed_round(src[t], bf16, stochastic, r);
    }
}
