"""Elementwise functions of one operand, each with its gradient below it.

negative, square, sqrt, rsqrt, exp, log, log1p, abs, sign, tanh and sigmoid.
The ops whose gradient is written in terms of their output (sqrt, rsqrt,
tanh, sigmoid) record that gradient as an op of its own (``SqrtGrad``, ...),
so that it can be differentiated again.

The transcendental functions of floats (exp, log, log1p, tanh, sigmoid) come
from :mod:`sparsegrad.framework.elementwise` (the same bits on every CPU), not
from NumPy's ufuncs, whose SIMD paths give different bits on different CPUs.
"""

import numpy as np

from ..autodiff.recording import record_operation
from ..autodiff.registry import register_gradient
from ..framework import elementwise as _elementwise
from ..framework.backend import backend_of
from ..framework.tensor import wrap
from . import array_ops, math_ops
from ._helpers import check_float, unary_operand
from .math_ops.arithmetic import log, negative

__all__ = [
    "abs",
    "exp",
    "log",
    "log1p",
    "negative",
    "rsqrt",
    "sigmoid",
    "sign",
    "sqrt",
    "square",
    "tanh",
]


# -- unary ---------------------------------------------------------------------------


def square(x, name=None):
    """Elementwise ``x * x``.

    Parameters
    ----------
    x : Tensor, Variable or array_like
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the shape and dtype of `x`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.square([2.0, -3.0]).numpy()
    array([4., 9.])
    """
    x = unary_operand(x, "square")
    z = wrap(backend_of(x._value).xp.square(x._value))
    record_operation("Square", (x,), (z,))
    return z


@register_gradient("Square")
def _square_grad(op, grad):
    (x,) = op.inputs
    return math_ops.multiply(array_ops.densify(grad), math_ops.multiply(x, 2))


def sqrt(x, name=None):
    """Elementwise square root (NaN for negative input).

    Parameters
    ----------
    x : Tensor, Variable or array_like
        Of a floating dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the shape and dtype of `x`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.sqrt([4.0, 9.0]).numpy()
    array([2., 3.])
    """
    x = unary_operand(x, "sqrt")
    check_float(x, "sqrt")
    with np.errstate(invalid="ignore"):
        z = wrap(backend_of(x._value).xp.sqrt(x._value))
    record_operation("Sqrt", (x,), (z,))
    return z


@register_gradient("Sqrt")
def _sqrt_grad(op, grad):
    return _sqrt_grad_op(op.outputs[0], array_ops.densify(grad))


def _sqrt_grad_op(y, g):
    """``g * 0.5 / y``, the gradient of sqrt given its output `y` (op SqrtGrad)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = wrap(g._value * (0.5 / y._value))
    record_operation("SqrtGrad", (y, g), (z,))
    return z


@register_gradient("SqrtGrad")
def _sqrt_grad_grad(op, grad):
    y = op.inputs[0]
    (z,) = op.outputs
    grad = array_ops.densify(grad)
    gy = negative(math_ops.multiply(grad, math_ops.divide(z, y)))
    gg = _sqrt_grad_op(y, grad)
    return gy, gg


def rsqrt(x, name=None):
    """Elementwise ``1 / sqrt(x)`` (computed exactly, not TF's float32 estimate).

    Parameters
    ----------
    x : Tensor, Variable or array_like
        Of a floating dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the shape and dtype of `x`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.rsqrt([4.0, 16.0]).numpy()
    array([0.5 , 0.25])
    """
    x = unary_operand(x, "rsqrt")
    check_float(x, "rsqrt")
    with np.errstate(divide="ignore", invalid="ignore"):
        z = wrap(1 / backend_of(x._value).xp.sqrt(x._value))
    record_operation("Rsqrt", (x,), (z,))
    return z


@register_gradient("Rsqrt")
def _rsqrt_grad(op, grad):
    return _rsqrt_grad_op(op.outputs[0], array_ops.densify(grad))


def _rsqrt_grad_op(y, g):
    """``-0.5 * g * y**3``, the gradient of rsqrt given its output (RsqrtGrad)."""
    y_value = y._value
    z = wrap((g._value * y_value * y_value * y_value) * y_value.dtype.type(-0.5))
    record_operation("RsqrtGrad", (y, g), (z,))
    return z


@register_gradient("RsqrtGrad")
def _rsqrt_grad_grad(op, grad):
    y, g = op.inputs
    grad = array_ops.densify(grad)
    gy = math_ops.multiply(
        math_ops.multiply(grad, g), math_ops.multiply(square(y), -1.5)
    )
    gg = _rsqrt_grad_op(y, grad)
    return gy, gg


def exp(x, name=None):
    """Elementwise ``e ** x``.

    Computed by :func:`sparsegrad.framework.elementwise.exp`, not NumPy's
    SIMD loop: the same bits on every CPU (float32 within 0.99 ulp).

    Parameters
    ----------
    x : Tensor, Variable or array_like
        Of a floating dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the shape and dtype of `x`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.exp([0.0]).numpy()
    array([1.])
    """
    x = unary_operand(x, "exp")
    check_float(x, "exp")
    z = wrap(_elementwise.exp(x._value))
    record_operation("Exp", (x,), (z,))
    return z


@register_gradient("Exp")
def _exp_grad(op, grad):
    return math_ops.multiply(array_ops.densify(grad), op.outputs[0])


def log1p(x, name=None):
    """Elementwise ``log(1 + x)``, accurate for small `x`.

    Computed by :func:`sparsegrad.framework.elementwise.log1p`, as :func:`exp`.

    Parameters
    ----------
    x : Tensor, Variable or array_like
        Of a floating dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the shape and dtype of `x`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.log1p([0.0]).numpy()
    array([0.])
    """
    x = unary_operand(x, "log1p")
    check_float(x, "log1p")
    z = wrap(_elementwise.log1p(x._value))
    record_operation("Log1p", (x,), (z,))
    return z


@register_gradient("Log1p")
def _log1p_grad(op, grad):
    return math_ops.divide(array_ops.densify(grad), math_ops.add(op.inputs[0], 1))


def abs(x, name=None):
    """Elementwise absolute value; the gradient at 0 is 0.

    Parameters
    ----------
    x : Tensor, Variable or array_like
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the shape and dtype of `x`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.abs([-1.5, 2.0]).numpy()
    array([1.5, 2. ])
    """
    x = unary_operand(x, "abs")
    z = wrap(backend_of(x._value).xp.abs(x._value))
    record_operation("Abs", (x,), (z,))
    return z


@register_gradient("Abs")
def _abs_grad(op, grad):
    return math_ops.multiply(array_ops.densify(grad), sign(op.inputs[0]))


def sign(x, name=None):
    """Elementwise sign (-1, 0 or 1; NaN stays NaN).

    Its gradient is zero everywhere (TensorFlow registers zeros, not None).

    Parameters
    ----------
    x : Tensor, Variable or array_like
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the shape and dtype of `x`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.sign([-2.0, 0.0, 3.0]).numpy()
    array([-1.,  0.,  1.])
    """
    x = unary_operand(x, "sign")
    z = wrap(backend_of(x._value).xp.sign(x._value))
    record_operation("Sign", (x,), (z,))
    return z


@register_gradient("Sign")
def _sign_grad(op, grad):
    return array_ops.zeros_like(op.inputs[0])


def tanh(x, name=None):
    """Elementwise hyperbolic tangent.

    Computed by :func:`sparsegrad.framework.elementwise.tanh`, as :func:`exp`.

    Parameters
    ----------
    x : Tensor, Variable or array_like
        Of a floating dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the shape and dtype of `x`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.tanh([0.0]).numpy()
    array([0.])
    """
    x = unary_operand(x, "tanh")
    check_float(x, "tanh")
    z = wrap(_elementwise.tanh(x._value))
    record_operation("Tanh", (x,), (z,))
    return z


@register_gradient("Tanh")
def _tanh_grad(op, grad):
    return _tanh_grad_op(op.outputs[0], array_ops.densify(grad))


def _tanh_grad_op(y, g):
    """``g * (1 - y**2)`` for the output `y` of tanh (op TanhGrad)."""
    y_value = y._value
    z = wrap(g._value * (1 - y_value * y_value))
    record_operation("TanhGrad", (y, g), (z,))
    return z


@register_gradient("TanhGrad")
def _tanh_grad_grad(op, grad):
    y, g = op.inputs
    grad = array_ops.densify(grad)
    gy = math_ops.multiply(math_ops.multiply(grad, g), math_ops.multiply(y, -2))
    gg = _tanh_grad_op(y, grad)
    return gy, gg


def sigmoid(x, name=None):
    """Elementwise logistic function ``1 / (1 + exp(-x))``, without overflow.

    ``exp`` is :func:`sparsegrad.framework.elementwise.exp` (as in :func:`exp`);
    float16 input is computed in float32 and rounded once.

    Parameters
    ----------
    x : Tensor, Variable or array_like
        Of a floating dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the shape and dtype of `x`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.sigmoid([0.0]).numpy()
    array([0.5])
    """
    x = unary_operand(x, "sigmoid")
    check_float(x, "sigmoid")
    # 1 / (1 + exp(-x)), full relative precision for very negative x.  -x is
    # capped where exp would overflow: below the cap the result is already
    # smaller than the dtype's smallest normal number.
    v = x._value
    half = v.dtype.char == "e"
    if half:  # float16's range is too small for the cap: compute in float32
        v = v.astype(np.float32)
    xp = backend_of(v).xp
    e = _elementwise.exp(xp.minimum(xp.negative(v), _EXP_CAP[v.dtype.char]))
    e += 1
    out = xp.reciprocal(e, out=e)
    z = wrap(out.astype(np.float16) if half else out)
    record_operation("Sigmoid", (x,), (z,))
    return z


# largest argument whose exp is finite, per dtype character
_EXP_CAP = {
    "f": np.float32(88.0),
    "d": np.float64(709.0),
    "g": np.longdouble(11356.0),
}


@register_gradient("Sigmoid")
def _sigmoid_grad(op, grad):
    return _sigmoid_grad_op(op.outputs[0], array_ops.densify(grad))


def _sigmoid_grad_op(y, g):
    """``g * y * (1 - y)`` for the output `y` of sigmoid (op SigmoidGrad)."""
    y_value = y._value
    z = wrap(g._value * (y_value * (1 - y_value)))
    record_operation("SigmoidGrad", (y, g), (z,))
    return z


@register_gradient("SigmoidGrad")
def _sigmoid_grad_grad(op, grad):
    y, g = op.inputs
    grad = array_ops.densify(grad)
    gy = math_ops.multiply(
        math_ops.multiply(grad, g), math_ops.subtract(1, math_ops.multiply(y, 2))
    )
    gg = _sigmoid_grad_op(y, grad)
    return gy, gg
