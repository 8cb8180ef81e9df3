"""Validated front end of the transcendental kernels in ``_kernels/elementwise``.

Why not NumPy's ufuncs: ``np.exp``, ``np.log``, ``np.power``... take
CPU-specific SIMD paths (AVX2, AVX-512) that are not correctly rounded, so the
same float32 or float64 op gives different bits on different x86-64 machines
(DESIGN.md, invariant 4).  These functions compute one fixed sequence of IEEE
operations per element instead:

* float32 exp, log, log1p, tanh: our own vectorised float code (Cephes'
  polynomials, no FMA), built twice (SSE2 and AVX2, the same bits); error
  over all 2**32 inputs within 0.99, 0.83, 2.5 and 1.33 ulp.  About NumPy's
  speed with AVX2.
* float32 expm1 and pow: the C library's double function rounded once to
  float32 (correctly rounded but in astronomically rare cases).
* float16: the float64 result rounded once to float16.
* float64: the C library's function, element by element, whatever NumPy's
  dispatch.  glibc itself picks FMA (with AVX2), FMA4 or SSE2 variants of
  exp, log, pow, expm1... by CPU, and they differ in the last bit for up to
  about one input in a thousand, so float64 bits agree between CPUs that take
  the same variant (all CPUs with FMA), with one glibc.  Several times slower
  than NumPy's SIMD loops.

Special values follow NumPy (``log(0) = -inf``, ``log(-1) = nan``, overflow gives
``inf``, ``-0.0`` is kept where the function is odd), without warnings.  Each
function takes an ndarray of any shape and returns a new C-contiguous array of
the same shape and dtype (a 0-d input gives a 0-d array), computed with
:func:`~sparsegrad.get_num_threads` threads; the bits do not depend on the
count.  long double input (no SIMD path in NumPy) keeps NumPy's loop, and a
CuPy array its CuPy ufunc.
"""

import numpy as np

from ..errors import InvalidArgumentError
from .backend import CPU, backend_of
from .threads import get_num_threads

__all__ = ["exp", "expm1", "log", "log1p", "pow", "tanh"]

_HALF = "e"  # float16: computed by the float64 kernel, rounded once
_LONG = "g"  # long double: NumPy's element-by-element loop


def _float_char(array, name):
    """The dtype character of `array` (native byte order), checked to be a float."""
    char = np.dtype(array.dtype.char).char
    if array.dtype.kind != "f" or char not in "efdg":
        raise InvalidArgumentError(
            f"{name}: x has dtype {array.dtype}; expected float16, float32 or float64"
        )
    return char


def _as_c_array(x, char):
    """`x` as a C-contiguous, native-order array of dtype `char` (0-d stays 0-d)."""
    return np.asarray(x, dtype=char, order="C")


def _finish(out, char):
    """Round a float64 result of a float16 input to float16."""
    if char == _HALF:
        with np.errstate(over="ignore"):
            return out.astype(np.float16)
    return out


_NATIVE = (np.dtype(np.float32), np.dtype(np.float64))
_ndarray = np.ndarray
#: The host kernels of a family (``CPU.kernels``; tests swap them with
#: ``CPU.use_kernels``).
_host_kernels = CPU.kernels


def _unary(name, ufunc, x, be):
    """The kernel `name` of the host backend on `x` (its CuPy ufunc for a GPU
    array; NumPy's `ufunc` for long double).  The common case, a C-contiguous
    float32 or float64 ndarray, is taken before (in :func:`_function`)."""
    if be is None:
        be = backend_of(x)
    if be.on_gpu:
        # CuPy's ufunc (libdevice: may differ from the CPU in the last bits)
        _float_char(x, name)
        return getattr(be.xp, name)(x)
    x = np.asarray(x)
    char = _float_char(x, name)
    if char == _LONG:
        with np.errstate(all="ignore"):
            return np.asarray(ufunc(x))
    work = _as_c_array(x, "d" if char == _HALF else char)
    out = np.empty(work.shape, work.dtype)
    getattr(_host_kernels("elementwise"), name)(
        work.reshape(-1), out.reshape(-1), get_num_threads())
    return _finish(out, char)


def _function(name, ufunc, summary, example):
    """The public function `name`: :func:`_unary` with its docstring."""
    def function(x, be=None):
        if type(x) is _ndarray and x.dtype in _NATIVE and x.flags.c_contiguous:
            out = np.empty_like(x)          # the common case, kept cheap
            getattr(_host_kernels("elementwise"), name)(
                x.reshape(-1), out.reshape(-1), get_num_threads())
            return out
        return _unary(name, ufunc, x, be)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"""{summary}

    Parameters
    ----------
    x : ndarray of float16, float32 or float64, any shape
    be : Backend, optional
        The backend of `x`, where the caller has it (found otherwise).

    Returns
    -------
    ndarray of the shape and dtype of `x`

    Raises
    ------
    InvalidArgumentError
        If `x` is not of a floating dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import elementwise
    {example}
    """
    return function


exp = _function("exp", np.exp, "Elementwise ``e ** x``, the same bits on every "
                "CPU.", """\
>>> elementwise.exp(np.array([0.0, 1.0]))
    array([1.        , 2.71828183])""")
log = _function("log", np.log, "Elementwise natural logarithm (``-inf`` at 0, NaN "
                "below 0).", """\
>>> elementwise.log(np.array([1.0, 0.0, -1.0]))
    array([  0., -inf,  nan])""")
log1p = _function("log1p", np.log1p, "Elementwise ``log(1 + x)``, accurate for small "
                  "`x`.", """\
>>> elementwise.log1p(np.array([0.0, -1.0], dtype=np.float32))
    array([  0., -inf], dtype=float32)""")
expm1 = _function("expm1", np.expm1, "Elementwise ``exp(x) - 1``, accurate for "
                  "small `x`.", """\
>>> elementwise.expm1(np.array(0.0))
    array(0.)""")
tanh = _function("tanh", np.tanh, "Elementwise hyperbolic tangent.", """\
>>> elementwise.tanh(np.array([0.0, np.inf]))
    array([0., 1.])""")


def _operand(array, shape):
    """`array` flattened for the kernel: its single element, or all of `shape`."""
    if array.size == 1:
        return array.reshape(1)
    if array.shape != shape:
        array = np.broadcast_to(array, shape)
    return np.ascontiguousarray(array).reshape(-1)


def pow(x, y, be=None):
    """Elementwise ``x ** y`` with NumPy broadcasting, the same bits on every CPU.

    C99's special cases hold, as in NumPy: ``pow(x, 0) = 1`` and ``pow(1, y) =
    1`` even for NaN, a negative `x` to a non-integer power is NaN, and
    ``pow(0, y)`` is ``inf`` for negative `y`.

    Parameters
    ----------
    x, y : ndarray of one floating dtype (float16, float32 or float64)
        Shapes that broadcast together.
    be : Backend, optional
        The backend of `x` and `y`, where the caller has it (found otherwise).

    Returns
    -------
    ndarray of the broadcast shape and the dtype of `x`

    Raises
    ------
    InvalidArgumentError
        If the dtypes differ or are not floating, or the shapes do not broadcast.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import elementwise
    >>> elementwise.pow(np.array([2.0, 4.0]), np.array(0.5))
    array([1.41421356, 2.        ])
    """
    if be is None:
        be = backend_of(x, y)
    if not be.on_gpu:
        x, y = np.asarray(x), np.asarray(y)
    char = _float_char(x, "pow")
    if y.dtype != x.dtype:
        raise InvalidArgumentError(
            f"pow: x has dtype {x.dtype} and y has dtype {y.dtype}; they must match"
        )
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise InvalidArgumentError(
            f"pow: shapes {x.shape} and {y.shape} do not broadcast"
        ) from None
    if be.on_gpu:
        return be.xp.power(x, y)
    if char == _LONG:
        with np.errstate(all="ignore"):
            return np.asarray(np.power(x, y))
    work = "d" if char == _HALF else char
    out = np.empty(shape, work)
    _host_kernels("elementwise").pow(
        _operand(_as_c_array(x, work), shape),
        _operand(_as_c_array(y, work), shape),
        out.reshape(-1),
        get_num_threads(),
    )
    return _finish(out, char)
