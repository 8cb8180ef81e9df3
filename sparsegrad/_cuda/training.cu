// The CUDA training kernels on float32 and float64 (the twins of
// sparsegrad/_kernels/training.pyx): the drivers of training.cuh around the
// element functions of sg_training.h, instantiated for float and double
// (kernel names end in _f32, _f64).  The ops' SG_ROW, SG_DENSE and SG_SPARSE
// lines follow this file (sparsegrad._cuda.training.generated_source).
#include "training.cuh"

#define SG_DENSE(op, Row)                                                     \
    SG_DENSE_T(op, Row, float, float, f32)                                    \
    SG_DENSE_T(op, Row, double, double, f64)

#define SG_SPARSE(op, Row, Scalar)                                            \
    SG_SPARSE_T(op, Row, Scalar, float, float, f32)                           \
    SG_SPARSE_T(op, Row, Scalar, double, double, f64)

SG_ROWWISE_T(float, float, f32)
SG_ROWWISE_T(double, double, f64)

SG_LAMB_T(float, float, f32)
SG_LAMB_T(double, double, f64)
