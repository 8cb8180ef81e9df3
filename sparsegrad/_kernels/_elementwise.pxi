"""Elementwise transcendental functions with the same bits on every CPU.

Design
------
NumPy's exp, log, power... take CPU-specific SIMD paths (AVX2, AVX-512) whose
results differ in the last bit from one x86-64 machine to another.  The
functions here have one fixed sequence of IEEE operations per element, so they
give the same bits everywhere:

* float32 ``exp``, ``log``, ``log1p``, ``tanh``: our own branch-free float
  code (below, in C), vectorised by the compiler.  Cody-Waite range reduction
  and Cephes' minimax polynomials (Moshier), never fused (-ffp-contract=off),
  so the baseline (SSE2) and the AVX2 build (``elementwise_avx2``, the same
  source with -mavx2) compute the same bits, 4 or 8 lanes at a time.  Over
  all 2**32 inputs, against the exact value: exp within 0.99 ulp, log 0.83,
  log1p 2.5, tanh 1.33.  Every NaN result is the input NaN or the canonical
  quiet NaN, whatever the lane order.
* float32 ``expm1`` and ``pow``: the C library's double function, rounded
  once to float32 (correctly rounded except in astronomically rare cases).
* float64: the C library's double function, element by element.  glibc picks
  FMA or SSE2 variants of exp, log, pow... by CPU, so float64 bits agree
  between CPUs that take the same variant (every CPU with FMA).

One loop per arity walks the elements; a ``prange`` over fixed chunks (or the
calling thread, for small arrays) runs it, each element written by one thread,
so any thread count gives the same bits.  The Python layer
(``sparsegrad.framework.elementwise``) checks dtypes, makes the inputs
contiguous and allocates ``out``; nothing here checks or raises.
"""

from cython cimport floating
from cython.parallel cimport prange
from libc cimport math as libm

from ._openmp cimport threads_for

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>

    static inline float sg_i2f(int32_t b) { float f; memcpy(&f, &b, 4); return f; }
    static inline int32_t sg_f2i(float f) { int32_t b; memcpy(&b, &f, 4); return b; }
    /* 2**k for -126 <= k <= 127 */
    static inline float sg_pow2i(int32_t k) { return sg_i2f((k + 127) << 23); }

    /* A NaN input gives itself; a NaN made by arithmetic becomes the
       canonical quiet NaN (its sign and payload depend on operand order,
       which the compiler may swap in vector code). */
    static inline float sg_nan_fix(float x, float res) {
        float qnan = sg_i2f(0x7fc00000);
        return x != x ? x : (res != res ? qnan : res);
    }

    static inline float sg_expf(float x) {
        const float shift = 12582912.0f;                  /* 1.5 * 2**23 */
        float xc = x > 89.0f ? 89.0f : x;                 /* NaN stays NaN */
        xc = xc < -104.0f ? -104.0f : xc;
        float t = xc * 1.44269504088896341f + shift;      /* k = round(x / ln 2) */
        int32_t k = sg_f2i(t) - sg_f2i(shift);
        float kf = t - shift;
        float r = xc - kf * 0.693359375f;                 /* ln 2, high part */
        r = r - kf * -2.12194440e-4f;                     /* ln 2, low part */
        float p = 1.9875691500e-4f;
        p = p * r + 1.3981999507e-3f;
        p = p * r + 8.3334519073e-3f;
        p = p * r + 4.1665795894e-2f;
        p = p * r + 1.6666665459e-1f;
        p = p * r + 5.0000001201e-1f;
        float e = (p * (r * r) + r) + 1.0f;
        int32_t k1 = k / 2;               /* two steps: subnormal and inf results */
        float y = (e * sg_pow2i(k1)) * sg_pow2i(k - k1);
        return sg_nan_fix(x, y);
    }

    static inline float sg_logf(float x) {
        /* x = m 2**e with m in [sqrt(1/2), sqrt(2)); a subnormal x is scaled
           by 2**23 first.  (Every select is on floats: GCC vectorises that.) */
        int sub = x < 1.17549435e-38f;
        float xs = sub ? x * 8388608.0f : x;
        float e_adj = sub ? -23.0f : 0.0f;
        int32_t ix = sg_f2i(xs);
        float ef = (float)(((ix >> 23) & 0xff) - 126) + e_adj;
        float m = sg_i2f((ix & 0x007fffff) | 0x3f000000);  /* in [0.5, 1) */
        int small = m < 0.707106781186547524f;
        ef = small ? ef - 1.0f : ef;
        m = small ? m + m : m;
        float f = m - 1.0f;
        float z = f * f;
        float p = 7.0376836292e-2f;
        p = p * f - 1.1514610310e-1f;
        p = p * f + 1.1676998740e-1f;
        p = p * f - 1.2420140846e-1f;
        p = p * f + 1.4249322787e-1f;
        p = p * f - 1.6668057665e-1f;
        p = p * f + 2.0000714765e-1f;
        p = p * f - 2.4999993993e-1f;
        p = p * f + 3.3333331174e-1f;
        float y = (p * f) * z;
        y = y + ef * -2.12194440e-4f;
        y = y - 0.5f * z;
        float res = (f + y) + ef * 0.693359375f;
        res = x == 0.0f ? -__builtin_inff() : res;
        res = x < 0.0f ? __builtin_nanf("") : res;
        res = x == __builtin_inff() ? x : res;
        return sg_nan_fix(x, res);
    }

    static inline float sg_log1pf(float x) {
        /* log(u) * x / (u - 1) with u = 1 + x rounded: the rounding error of
           u cancels (Goldberg). */
        float u = 1.0f + x;
        float d = u - 1.0f;
        float res = d == 0.0f ? x : sg_logf(u) * (x / d);
        res = x == __builtin_inff() ? x : res;
        return sg_nan_fix(x, res);
    }

    static inline float sg_tanhf(float x) {
        float ax = x < 0.0f ? -x : x;
        float z = x * x;
        float p = -5.70498872745e-3f;
        p = p * z + 2.06390887954e-2f;
        p = p * z - 5.37397155531e-2f;
        p = p * z + 1.33314422036e-1f;
        p = p * z - 3.33332819422e-1f;
        float near0 = (p * z) * x + x;
        float axc = ax > 10.0f ? 10.0f : ax;              /* tanh(10) is 1.0f */
        float far = 1.0f - 2.0f / (sg_expf(axc + axc) + 1.0f);
        far = x < 0.0f ? -far : far;
        float res = ax < 0.625f ? near0 : far;
        return sg_nan_fix(x, x == 0.0f ? x : res);        /* tanh(-0) = -0 */
    }

    #define SG_F32_LOOP(name, f)                                              \\
        static void name(const float *x, float *out, Py_ssize_t n) {          \\
            const float *restrict xr = x;                                     \\
            float *restrict outr = out;                                       \\
            for (Py_ssize_t k = 0; k < n; k++) outr[k] = f(xr[k]);           \\
        }
    SG_F32_LOOP(sg_expf_n, sg_expf)
    SG_F32_LOOP(sg_logf_n, sg_logf)
    SG_F32_LOOP(sg_log1pf_n, sg_log1pf)
    SG_F32_LOOP(sg_tanhf_n, sg_tanhf)
    """
    void sg_expf_n(const float *x, float *out, Py_ssize_t n) noexcept nogil
    void sg_logf_n(const float *x, float *out, Py_ssize_t n) noexcept nogil
    void sg_log1pf_n(const float *x, float *out, Py_ssize_t n) noexcept nogil
    void sg_tanhf_n(const float *x, float *out, Py_ssize_t n) noexcept nogil

# Below this many elements a call runs on the calling thread, outside any
# OpenMP region (small arrays: the call overhead is what counts).
cdef Py_ssize_t PARALLEL_MIN_SIZE = 1 << 12
# Elements per prange iteration of the float32 loops.
cdef Py_ssize_t CHUNK = 1 << 12

ctypedef double (*unary_fn)(double) noexcept nogil
ctypedef double (*binary_fn)(double, double) noexcept nogil
ctypedef void (*f32_loop)(const float *, float *, Py_ssize_t) noexcept nogil


# One loop per arity; the entry points pick the specialisation themselves
# (``_map1[double]``): a fused-type def function would cost a microsecond of
# dispatch per call, which small tensors feel.

cdef void _map1(
    unary_fn f,
    const floating[::1] x,              # IN  (n,)
    floating[::1] out,                  # OUT (n,)
    int n_threads,
) noexcept nogil:
    cdef Py_ssize_t k, n = out.shape[0]
    if threads_for(n, n_threads, PARALLEL_MIN_SIZE) == 1:
        for k in range(n):
            out[k] = <floating> f(<double> x[k])
        return
    for k in prange(n, schedule="static", num_threads=n_threads):
        out[k] = <floating> f(<double> x[k])


cdef void _map2(
    binary_fn f,
    const floating[::1] x,              # IN  (n,) or (1,): broadcast
    const floating[::1] y,              # IN  (n,) or (1,): broadcast
    floating[::1] out,                  # OUT (n,)
    int n_threads,
) noexcept nogil:
    cdef Py_ssize_t k, n = out.shape[0]
    cdef Py_ssize_t step_x = x.shape[0] == n, step_y = y.shape[0] == n
    if threads_for(n, n_threads, PARALLEL_MIN_SIZE) == 1:
        for k in range(n):
            out[k] = <floating> f(<double> x[k * step_x], <double> y[k * step_y])
        return
    for k in prange(n, schedule="static", num_threads=n_threads):
        out[k] = <floating> f(<double> x[k * step_x], <double> y[k * step_y])


cdef void _map_f32(
    f32_loop loop,
    const float[::1] x,                 # IN  (n,)
    float[::1] out,                     # OUT (n,)
    int n_threads,
) noexcept nogil:
    cdef Py_ssize_t c, start, n = out.shape[0]
    cdef Py_ssize_t n_chunks = (n + CHUNK - 1) // CHUNK
    if n == 0:
        return
    if threads_for(n, n_threads, PARALLEL_MIN_SIZE) == 1:
        loop(&x[0], &out[0], n)
        return
    for c in prange(n_chunks, schedule="static", num_threads=n_threads):
        start = c * CHUNK
        loop(&x[start], &out[start], min(CHUNK, n - start))


cdef _unary(f32_loop loop, unary_fn f, x, out, int n_threads):
    """float32 through `loop` (or `f` in double when `loop` is NULL),
    float64 through `f`."""
    if out.dtype.itemsize == 8:
        _map1[double](f, x, out, n_threads)
    elif loop != NULL:
        _map_f32(loop, x, out, n_threads)
    else:
        _map1[float](f, x, out, n_threads)


def exp(x, out, int n_threads):
    """``out = exp(x)``; `x` and `out` 1-D C-contiguous, both float32 or both
    float64 (checked by the caller)."""
    _unary(sg_expf_n, libm.exp, x, out, n_threads)


def log(x, out, int n_threads):
    """``out = log(x)``, as :func:`exp`."""
    _unary(sg_logf_n, libm.log, x, out, n_threads)


def log1p(x, out, int n_threads):
    """``out = log(1 + x)``, as :func:`exp`."""
    _unary(sg_log1pf_n, libm.log1p, x, out, n_threads)


def expm1(x, out, int n_threads):
    """``out = exp(x) - 1``, as :func:`exp` (float32 in double)."""
    _unary(NULL, libm.expm1, x, out, n_threads)


def tanh(x, out, int n_threads):
    """``out = tanh(x)``, as :func:`exp`."""
    _unary(sg_tanhf_n, libm.tanh, x, out, n_threads)


def pow(x, y, out, int n_threads):
    """``out = x ** y``; an input of length 1 is broadcast.  As :func:`exp`
    (float32 in double)."""
    if out.dtype.itemsize == 4:
        _map2[float](libm.pow, x, y, out, n_threads)
    else:
        _map2[double](libm.pow, x, y, out, n_threads)
