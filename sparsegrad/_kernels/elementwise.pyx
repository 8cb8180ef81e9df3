# distutils: extra_compile_args = -ffp-contract=off
"""Elementwise transcendental functions by the C library, not NumPy's SIMD loops.

Design
------
NumPy's exp, log, power... take CPU-specific SIMD paths (AVX2, AVX-512) that are
not correctly rounded, so their bits change from one x86-64 machine to another.
Here every element is one call of the C library's double function:

* float64: ``out[k] = f(x[k])``, the C library's bits (glibc still picks FMA
  or SSE2 variants of some functions by CPU, see the Python front end).
* float32: ``out[k] = (float) f((double) x[k])``: computed in double, rounded
  once to float32.  The double result is within about one double ulp of the
  exact value, so the float32 result is correctly rounded except in
  astronomically rare cases, whatever the CPU.  The float functions (expf...)
  are never called.

One generic loop per arity (``_map1``, ``_map2``) takes a pointer to the libm
function; the public entry points only pick the function and the dtype.  The loops are a
``prange`` over elements, each written by one thread, so any thread count gives
the same bits.  ``-ffp-contract=off``: no FMA contraction in the float32
conversions, whatever the compiler targets.  The Python layer
(``sparsegrad.framework.elementwise``) checks dtypes, makes the inputs
contiguous and allocates ``out``; nothing here checks or raises.
"""

from cython cimport floating
from cython.parallel cimport prange
from libc cimport math as libm

# Below this many elements a call runs on the calling thread, outside any
# OpenMP region (small arrays: the call overhead is what counts).
cdef Py_ssize_t PARALLEL_MIN_SIZE = 1 << 12

ctypedef double (*unary_fn)(double) noexcept nogil
ctypedef double (*binary_fn)(double, double) noexcept nogil


# One loop per arity; float32 goes through double.  The entry points pick
# the specialisation themselves (``_map1[float]``): a fused-type def function
# would cost a microsecond of dispatch per call, which small tensors feel.

cdef void _map1(
    unary_fn f,
    const floating[::1] x,              # IN  (n,)
    floating[::1] out,                  # OUT (n,)
    int n_threads,
) noexcept nogil:
    cdef Py_ssize_t k, n = out.shape[0]
    if n < PARALLEL_MIN_SIZE or n_threads <= 1:
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
    if n < PARALLEL_MIN_SIZE or n_threads <= 1:
        for k in range(n):
            out[k] = <floating> f(<double> x[k * step_x], <double> y[k * step_y])
        return
    for k in prange(n, schedule="static", num_threads=n_threads):
        out[k] = <floating> f(<double> x[k * step_x], <double> y[k * step_y])


cdef _unary(unary_fn f, x, out, int n_threads):
    if out.dtype.itemsize == 4:
        _map1[float](f, x, out, n_threads)
    else:
        _map1[double](f, x, out, n_threads)


def exp(x, out, int n_threads):
    """``out = exp(x)``; `x` and `out` 1-D C-contiguous, both float32 or both
    float64 (checked by the caller)."""
    _unary(libm.exp, x, out, n_threads)


def log(x, out, int n_threads):
    """``out = log(x)``, as :func:`exp`."""
    _unary(libm.log, x, out, n_threads)


def log1p(x, out, int n_threads):
    """``out = log(1 + x)``, as :func:`exp`."""
    _unary(libm.log1p, x, out, n_threads)


def expm1(x, out, int n_threads):
    """``out = exp(x) - 1``, as :func:`exp`."""
    _unary(libm.expm1, x, out, n_threads)


def tanh(x, out, int n_threads):
    """``out = tanh(x)``, as :func:`exp`."""
    _unary(libm.tanh, x, out, n_threads)


def pow(x, y, out, int n_threads):
    """``out = x ** y``; an input of length 1 is broadcast.  As :func:`exp`."""
    if out.dtype.itemsize == 4:
        _map2[float](libm.pow, x, y, out, n_threads)
    else:
        _map2[double](libm.pow, x, y, out, n_threads)
