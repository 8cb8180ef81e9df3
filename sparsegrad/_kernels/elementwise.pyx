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
function; the public entry points only pick the function.  The loops are a
``prange`` over elements, each written by one thread, so any thread count gives
the same bits.  ``-ffp-contract=off``: no FMA contraction in the float32
conversions, whatever the compiler targets.  The Python layer
(``sparsegrad.framework.elementwise``) checks dtypes, makes the inputs
contiguous and allocates ``out``; nothing here checks or raises.
"""

from cython cimport floating
from cython.parallel cimport prange
from libc cimport math as libm

# Below this many elements a call runs on the calling thread.
cdef Py_ssize_t PARALLEL_MIN_SIZE = 1 << 12

ctypedef double (*unary_fn)(double) noexcept nogil
ctypedef double (*binary_fn)(double, double) noexcept nogil


cdef inline int _threads(Py_ssize_t n, int n_threads) noexcept nogil:
    return n_threads if n >= PARALLEL_MIN_SIZE else 1


cdef void _map1(
    unary_fn f,
    const floating[::1] x,              # IN  (n,)
    floating[::1] out,                  # OUT (n,)
    int n_threads,
) noexcept:
    cdef Py_ssize_t k, n = out.shape[0]
    for k in prange(n, nogil=True, schedule="static",
                    num_threads=_threads(n, n_threads)):
        out[k] = <floating> f(<double> x[k])


cdef void _map2(
    binary_fn f,
    const floating[::1] x,              # IN  (n,) or (1,): broadcast
    const floating[::1] y,              # IN  (n,) or (1,): broadcast
    floating[::1] out,                  # OUT (n,)
    int n_threads,
) noexcept:
    cdef Py_ssize_t k, n = out.shape[0]
    cdef Py_ssize_t step_x = x.shape[0] == n, step_y = y.shape[0] == n
    for k in prange(n, nogil=True, schedule="static",
                    num_threads=_threads(n, n_threads)):
        out[k] = <floating> f(<double> x[k * step_x], <double> y[k * step_y])


def exp(const floating[::1] x, floating[::1] out, int n_threads):
    """``out = exp(x)``."""
    _map1(libm.exp, x, out, n_threads)


def log(const floating[::1] x, floating[::1] out, int n_threads):
    """``out = log(x)``."""
    _map1(libm.log, x, out, n_threads)


def log1p(const floating[::1] x, floating[::1] out, int n_threads):
    """``out = log(1 + x)``."""
    _map1(libm.log1p, x, out, n_threads)


def expm1(const floating[::1] x, floating[::1] out, int n_threads):
    """``out = exp(x) - 1``."""
    _map1(libm.expm1, x, out, n_threads)


def tanh(const floating[::1] x, floating[::1] out, int n_threads):
    """``out = tanh(x)``."""
    _map1(libm.tanh, x, out, n_threads)


def pow(
    const floating[::1] x,              # IN  (n,) or (1,)
    const floating[::1] y,              # IN  (n,) or (1,)
    floating[::1] out,                  # OUT (n,)
    int n_threads,
):
    """``out = x ** y``; an input of length 1 is broadcast."""
    _map2(libm.pow, x, y, out, n_threads)
