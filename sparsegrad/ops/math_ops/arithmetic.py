"""Arithmetic: add, subtract, add_n, multiply, divide and pow, and the two
one-operand ops their gradients use (negative, log), each with its gradient
below it.  (:mod:`sparsegrad.ops.unary_ops` is the public home of negative
and log.)

``pow`` of floats and ``log`` come from :mod:`sparsegrad.framework.elementwise`
(the same bits on every CPU), not from NumPy's ufuncs.
"""

import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import register_gradient
from ...errors import InvalidArgumentError
from ...framework import dispatch, elementwise
from ...framework.backend import backend_of
from ...framework.dtypes import is_floating, true_division_dtype
from ...framework.tensor import Tensor, wrap
from .._helpers import as_tensor, binary_operands
from ..array_ops import densify
from .broadcasting import (
    apply_binary,
    binary_doc,
    binary_op,
    check_result,
    unbroadcast_pair,
)
from .compare import greater
from .select import where
from .unary import unary_doc, unary_op

__all__ = [
    "add",
    "add_n",
    "divide",
    "log",
    "multiply",
    "negative",
    "pow",
    "subtract",
]

add = binary_op(np.add, "AddV2", "add", binary_doc(
    "add", "Elementwise ``x + y`` with NumPy broadcasting.", "[1.0, 2.0], 1.0",
    "array([2., 3.])", raises=True))
subtract = binary_op(np.subtract, "Sub", "subtract", binary_doc(
    "subtract", "Elementwise ``x - y`` with NumPy broadcasting.",
    "[3.0, 2.0], 1.0", "array([2., 1.])"))
multiply = binary_op(np.multiply, "Mul", "multiply", binary_doc(
    "multiply", "Elementwise ``x * y`` with NumPy broadcasting.",
    "[1.0, 2.0], 3.0", "array([3., 6.])"))


@register_gradient("AddV2")
def _add_grad(op, grad):
    return unbroadcast_pair(op, lambda: grad, lambda: grad)


@register_gradient("Sub")
def _sub_grad(op, grad):
    return unbroadcast_pair(op, lambda: grad, lambda: negative(grad))


@dispatch.api
def add_n(inputs, name=None):
    """Sum a list of tensors of one shape and dtype.

    Parameters
    ----------
    inputs : list of Tensor, Variable or array_like
        At least one; all of one shape and dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the inputs' shape and dtype.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.add_n([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).numpy()
    array([ 9., 12.])
    """
    if isinstance(inputs, (Tensor,)) or not isinstance(inputs, (list, tuple)):
        raise TypeError("add_n: inputs must be a list of tensors")
    if not inputs:
        raise InvalidArgumentError("add_n: inputs must not be empty")
    tensors = [as_tensor(t) for t in inputs]
    first = tensors[0]
    for k, t in enumerate(tensors[1:], 1):
        if t.dtype != first.dtype or t.shape != first.shape:
            raise InvalidArgumentError(
                f"add_n: inputs[{k}] has shape {t.shape} and dtype {t.dtype}, "
                f"inputs[0] has {first.shape} and {first.dtype}"
            )
    check_result("add_n", ("inputs",), tensors)
    xp = backend_of(*(t._value for t in tensors)).xp
    out = first._value.copy()
    for t in tensors[1:]:
        xp.add(out, t._value, out=out)
    z = wrap(out)
    record_operation("AddN", tuple(tensors), (z,))
    return z


@register_gradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


@register_gradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    grad = densify(grad)
    return unbroadcast_pair(op, lambda: multiply(grad, y), lambda: multiply(grad, x))


@dispatch.api
def divide(x, y, name=None):
    x, y = binary_operands(x, y, "divide")
    if not is_floating(x._value.dtype):   # bfloat16 divides as it is (recorded)
        # floating copies of both operands first (each may be a broadcast
        # view), of TensorFlow's truediv dtype
        out = true_division_dtype(x._value.dtype)
        check_result("divide", ("x", "y"), (x, y), out, copies="all")
        x = wrap(x._value.astype(out))
        y = wrap(y._value.astype(out))
    return real_divide(x, y)


def real_divide(x, y, be=None):
    """``x / y`` of two floating Tensors of one dtype, recorded as
    ``RealDiv`` (what :func:`divide` computes once its operands are
    converted); `be`: their backend, where the caller has chosen it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = wrap(apply_binary(np.divide, x, y, "divide", be))
    record_operation("RealDiv", (x, y), (z,))
    return z


divide.__doc__ = binary_doc(
    "divide", "Elementwise true division ``x / y`` with NumPy broadcasting.\n\n"
    "Integer operands give ``tf.math.truediv``'s dtype: float32 for 8- and "
    "16-bit integers, float64 for wider ones (NumPy gives float64 for all).",
    "[1.0, 3.0], 2.0", "array([0.5, 1.5])",
    returns="Of the broadcast shape; float32 or float64 for integer operands.")


@register_gradient("RealDiv")
def _real_div_grad(op, grad):
    x, y = op.inputs
    grad = densify(grad)
    return unbroadcast_pair(
        op, lambda: divide(grad, y),
        lambda: multiply(grad, divide(divide(negative(x), y), y)))


@dispatch.api
def pow(x, y, name=None):
    x, y = binary_operands(x, y, "pow")
    if x._value.dtype.kind in "iu" and bool((y._value < 0).any()):
        raise InvalidArgumentError(
            "pow: integers to negative integer powers are not allowed"
        )
    if x._value.dtype.kind == "f":
        # the kernel reads both operands broadcast and contiguous
        check_result("pow", ("x", "y"), (x, y), copies="strided")
        z = wrap(elementwise.pow(x._value, y._value))  # checks the shapes
    else:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z = wrap(apply_binary(np.power, x, y, "pow"))
    record_operation("Pow", (x, y), (z,))
    return z


pow.__doc__ = binary_doc(
    "pow", "Elementwise power ``x ** y`` with NumPy broadcasting.\n\n"
    "Floats are computed by :func:`sparsegrad.framework.elementwise.pow` (the C\n"
    "library's ``pow``, not NumPy's SIMD loop; float32 is correctly rounded, the\n"
    "same bits on every CPU), integers by ``np.power``.  The gradient with\n"
    "respect to `y` is ``x**y * log(x)`` where ``x > 0`` and 0 elsewhere (as in\n"
    "TensorFlow).", "[2.0, 3.0], 2.0", "array([4., 9.])")


@register_gradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs
    (z,) = op.outputs
    grad = densify(grad)

    def log_x():
        positive = greater(x, 0)
        safe_x = where(positive, x, 1)
        return where(positive, log(safe_x), 0)

    return unbroadcast_pair(
        op, lambda: multiply(grad, multiply(y, pow(x, subtract(y, 1)))),
        lambda: multiply(grad, multiply(z, log_x())))


# -- the one-operand ops the gradients above use -------------------------------


negative = unary_op(lambda v, be: be.xp.negative(v), "Neg", "negative", unary_doc(
    "negative", "Elementwise ``-x``.  An IndexedSlices gives an IndexedSlices.",
    "[1.0, -2.0]", "array([-1.,  2.])",
    x_type="Tensor, Variable, IndexedSlices or array_like",
    returns="Tensor or IndexedSlices\n    Of the shape and dtype of `x` (an "
    "IndexedSlices for an IndexedSlices)."), slices=True)


@register_gradient("Neg")
def _neg_grad(op, grad):
    return negative(grad)


log = unary_op(lambda v, be: elementwise.log(v), "Log", "log", unary_doc(
    "log", "Elementwise natural logarithm (``-inf`` at 0, NaN below).\n\n"
    "Computed by :func:`sparsegrad.framework.elementwise.log`, as\n"
    ":func:`~sparsegrad.exp`.", "[1.0]", "array([0.])", floating=True),
    floating=True)


@register_gradient("Log")
def _log_grad(op, grad):
    return divide(densify(grad), op.inputs[0])
