"""Elementwise functions of one operand, each with its gradient below it.

negative, square, sqrt, rsqrt, exp, expm1, log, log1p, abs, sign, tanh,
sigmoid, reciprocal, and the roundings floor, ceil, rint and round, made by
:func:`~sparsegrad.ops.math_ops.unary.unary_op`; is_nan, is_inf and
is_finite (bool, not recorded).  The ops whose gradient is written in terms
of their output (sqrt, rsqrt, tanh, sigmoid) record that gradient as an op
of its own (``SqrtGrad``, ...), so that it can be differentiated again
(:func:`~sparsegrad.ops.math_ops.unary.output_gradient`).

The transcendental functions of floats (exp, expm1, log, log1p, tanh,
sigmoid) come from :mod:`sparsegrad.framework.elementwise` (the same bits on
every CPU), not from NumPy's ufuncs, whose SIMD paths give different bits on
different CPUs.  Every op here dispatches
(:func:`sparsegrad.framework.dispatch.api`).
"""

import numpy as np

from ..autodiff.registry import no_gradient, register_gradient
from ..framework import dispatch
from ..framework import elementwise as _elementwise
from ..framework.backend import backend_of
from ..framework.tensor import wrap
from . import array_ops, math_ops
from ._helpers import check_float, unary_operand
from .math_ops.arithmetic import log, negative
from .math_ops.unary import output_gradient, unary_doc, unary_op

__all__ = [
    "abs",
    "ceil",
    "exp",
    "expm1",
    "floor",
    "is_finite",
    "is_inf",
    "is_nan",
    "log",
    "log1p",
    "negative",
    "reciprocal",
    "rint",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sqrt",
    "square",
    "tanh",
]

_multiply = math_ops.multiply
_SAME_BITS = "Computed by :func:`sparsegrad.framework.elementwise.{}`, as :func:`exp`."


# -- square, abs, sign --------------------------------------------------------------

square = unary_op(lambda v, be: be.xp.square(v), "Square", "square", unary_doc(
    "square", "Elementwise ``x * x``.", "[2.0, -3.0]", "array([4., 9.])"))


@register_gradient("Square")
def _square_grad(op, grad):
    (x,) = op.inputs
    return _multiply(array_ops.densify(grad), _multiply(x, 2))


abs = unary_op(lambda v, be: be.xp.abs(v), "Abs", "abs", unary_doc(
    "abs", "Elementwise absolute value; the gradient at 0 is 0.", "[-1.5, 2.0]",
    "array([1.5, 2. ])"))


@register_gradient("Abs")
def _abs_grad(op, grad):
    return _multiply(array_ops.densify(grad), sign(op.inputs[0]))


sign = unary_op(lambda v, be: be.xp.sign(v), "Sign", "sign", unary_doc(
    "sign", "Elementwise sign (-1, 0 or 1; NaN stays NaN).\n\nIts gradient is "
    "zero everywhere (TensorFlow registers zeros, not None).", "[-2.0, 0.0, 3.0]",
    "array([-1.,  0.,  1.])"))


@register_gradient("Sign")
def _sign_grad(op, grad):
    return array_ops.zeros_like(op.inputs[0])


# -- sqrt, rsqrt --------------------------------------------------------------------


def _sqrt(v, be):
    with np.errstate(invalid="ignore"):
        return be.xp.sqrt(v)


def _rsqrt(v, be):
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1 / be.xp.sqrt(v)


sqrt = unary_op(_sqrt, "Sqrt", "sqrt", unary_doc(
    "sqrt", "Elementwise square root (NaN for negative input).", "[4.0, 9.0]",
    "array([2., 3.])", floating=True), floating=True)
rsqrt = unary_op(_rsqrt, "Rsqrt", "rsqrt", unary_doc(
    "rsqrt", "Elementwise ``1 / sqrt(x)`` (computed exactly, not TF's float32 "
    "estimate).", "[4.0, 16.0]", "array([0.5 , 0.25])", floating=True),
    floating=True)


def _sqrt_grad_value(y, g):
    """``g * 0.5 / y``, the gradient of sqrt given its output `y`."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return g * (0.5 / y)


_sqrt_grad_op = output_gradient(
    "Sqrt", "SqrtGrad", _sqrt_grad_value,
    lambda y, g, z, grad: negative(_multiply(grad, math_ops.divide(z, y))))

# ``-0.5 * g * y**3``, the gradient of rsqrt given its output `y`
_rsqrt_grad_op = output_gradient(
    "Rsqrt", "RsqrtGrad", lambda y, g: (g * y * y * y) * y.dtype.type(-0.5),
    lambda y, g, z, grad: _multiply(_multiply(grad, g),
                                    _multiply(square(y), -1.5)))


# -- exp, log1p, tanh (log is in math_ops.arithmetic) -------------------------------

exp = unary_op(lambda v, be: _elementwise.exp(v), "Exp", "exp", unary_doc(
    "exp", "Elementwise ``e ** x``.\n\nComputed by "
    ":func:`sparsegrad.framework.elementwise.exp`, not NumPy's\nSIMD loop: the "
    "same bits on every CPU (float32 within 0.99 ulp).", "[0.0]", "array([1.])",
    floating=True), floating=True)


@register_gradient("Exp")
def _exp_grad(op, grad):
    return _multiply(array_ops.densify(grad), op.outputs[0])


log1p = unary_op(lambda v, be: _elementwise.log1p(v), "Log1p", "log1p", unary_doc(
    "log1p", "Elementwise ``log(1 + x)``, accurate for small `x`.\n\n"
    + _SAME_BITS.format("log1p"), "[0.0]", "array([0.])", floating=True),
    floating=True)


@register_gradient("Log1p")
def _log1p_grad(op, grad):
    return math_ops.divide(array_ops.densify(grad), math_ops.add(op.inputs[0], 1))


tanh = unary_op(lambda v, be: _elementwise.tanh(v), "Tanh", "tanh", unary_doc(
    "tanh", "Elementwise hyperbolic tangent.\n\n" + _SAME_BITS.format("tanh"),
    "[0.0]", "array([0.])", floating=True), floating=True)

# ``g * (1 - y**2)`` for the output `y` of tanh
_tanh_grad_op = output_gradient(
    "Tanh", "TanhGrad", lambda y, g: g * (1 - y * y),
    lambda y, g, z, grad: _multiply(_multiply(grad, g), _multiply(y, -2)))


# -- sigmoid ------------------------------------------------------------------------

# largest argument whose exp is finite, per dtype character
_EXP_CAP = {
    "f": np.float32(88.0),
    "d": np.float64(709.0),
    "g": np.longdouble(11356.0),
}


def _sigmoid(v, be):
    # 1 / (1 + exp(-x)), full relative precision for very negative x.  -x is
    # capped where exp would overflow: below the cap the result is already
    # smaller than the dtype's smallest normal number.
    half = v.dtype.char == "e"
    if half:  # float16's range is too small for the cap: compute in float32
        v = v.astype(np.float32)
    xp = be.xp
    e = _elementwise.exp(xp.minimum(xp.negative(v), _EXP_CAP[v.dtype.char]))
    e += 1
    out = xp.reciprocal(e, out=e)
    return out.astype(np.float16) if half else out


sigmoid = unary_op(_sigmoid, "Sigmoid", "sigmoid", unary_doc(
    "sigmoid", "Elementwise logistic function ``1 / (1 + exp(-x))``, without "
    "overflow.\n\n``exp`` is :func:`sparsegrad.framework.elementwise.exp` (as in "
    ":func:`exp`);\nfloat16 input is computed in float32 and rounded once.",
    "[0.0]", "array([0.5])", floating=True), floating=True)

# ``g * y * (1 - y)`` for the output `y` of sigmoid
_sigmoid_grad_op = output_gradient(
    "Sigmoid", "SigmoidGrad", lambda y, g: g * (y * (1 - y)),
    lambda y, g, z, grad: _multiply(
        _multiply(grad, g), math_ops.subtract(1, _multiply(y, 2))))


# -- expm1, reciprocal ---------------------------------------------------------------

expm1 = unary_op(lambda v, be: _elementwise.expm1(v), "Expm1", "expm1", unary_doc(
    "expm1", "Elementwise ``exp(x) - 1``, accurate for small `x`.\n\n"
    + _SAME_BITS.format("expm1"), "[0.0]", "array([0.])", floating=True),
    floating=True)


@register_gradient("Expm1")
def _expm1_grad(op, grad):
    return _multiply(array_ops.densify(grad), math_ops.add(op.outputs[0], 1))


def _reciprocal(v, be):
    with np.errstate(divide="ignore"):
        return be.xp.reciprocal(v)


reciprocal = unary_op(_reciprocal, "Reciprocal", "reciprocal", unary_doc(
    "reciprocal", "Elementwise ``1 / x`` (``inf`` at 0).", "[2.0, -4.0]",
    "array([ 0.5 , -0.25])", floating=True), floating=True)


@register_gradient("Reciprocal")
def _reciprocal_grad(op, grad):
    y = op.outputs[0]
    return _multiply(array_ops.densify(grad), negative(square(y)))


# -- roundings (no gradient, as in TensorFlow) ---------------------------------------

floor = unary_op(lambda v, be: be.xp.floor(v), "Floor", "floor", unary_doc(
    "floor", "Elementwise largest integer not above `x`.  No gradient.",
    "[1.5, -1.5]", "array([ 1., -2.])", floating=True), floating=True)
ceil = unary_op(lambda v, be: be.xp.ceil(v), "Ceil", "ceil", unary_doc(
    "ceil", "Elementwise smallest integer not below `x`.  No gradient.",
    "[1.5, -1.5]", "array([ 2., -1.])", floating=True), floating=True)
rint = unary_op(lambda v, be: be.xp.rint(v), "Rint", "rint", unary_doc(
    "rint", "Elementwise nearest integer, halves to even.  No gradient.",
    "[0.5, 1.5, -2.5]", "array([ 0.,  2., -2.])", floating=True), floating=True)
round = unary_op(lambda v, be: be.xp.round(v), "Round", "round", unary_doc(
    "round", "Elementwise nearest integer, halves to even (banker's "
    "rounding); integers are\nreturned unchanged.  No gradient.",
    "[0.5, 1.5, 2.7]", "array([0., 2., 3.])"))
for _op_type in ("Floor", "Ceil", "Rint", "Round"):
    no_gradient(_op_type)


# -- is_nan, is_inf, is_finite (bool results, not recorded) -------------------------


def _float_test(test, op_name, summary, args, result):
    def op(x, name=None):
        x = unary_operand(x, op_name)
        check_float(x, op_name)
        return wrap(getattr(backend_of(x._value).xp, test)(x._value))

    op.__name__ = op.__qualname__ = op_name
    op.__doc__ = unary_doc(op_name, summary + "  Not differentiable.", args, result,
                           floating=True, returns="Tensor\n    bool, of the "
                           "shape of `x`.")
    return dispatch.api(op)


is_nan = _float_test("isnan", "is_nan", "Elementwise: whether `x` is NaN.",
                     "[1.0, float('nan')]", "array([False,  True])")
is_inf = _float_test("isinf", "is_inf", "Elementwise: whether `x` is infinite.",
                     "[1.0, float('inf')]", "array([False,  True])")
is_finite = _float_test(
    "isfinite", "is_finite", "Elementwise: whether `x` is neither infinite nor "
    "NaN.", "[1.0, float('inf')]", "array([ True, False])")
