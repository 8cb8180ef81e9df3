"""The other divisions and differences: floordiv, floormod, truncatediv,
truncatemod, divide_no_nan, squared_difference (and truediv, TensorFlow's
other name of divide), each with its gradient below it.

Integer operands divided by zero raise (TensorFlow's "Integer division by
zero"), where NumPy would warn and give 0.
"""

import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import no_gradient, register_gradient
from ...errors import InvalidArgumentError
from ...framework import dispatch
from ...framework.backend import backend_of
from ...framework.tensor import wrap
from .._helpers import binary_operands
from ..array_ops import densify
from .arithmetic import divide, multiply, negative, subtract
from .broadcasting import apply_binary, binary_doc, unbroadcast_pair

__all__ = [
    "divide_no_nan",
    "floordiv",
    "floormod",
    "squared_difference",
    "truediv",
    "truncatediv",
    "truncatemod",
]

truediv = divide


def _integer_divisor(x, y, op_name):
    """Raise for an integer divisor `y` (a Tensor) that holds a zero."""
    if x._value.dtype.kind in "iu" and bool((y._value == 0).any()):
        raise InvalidArgumentError(f"{op_name}: Integer division by zero in y")
    if x._value.dtype.kind not in "iuf":
        raise InvalidArgumentError(
            f"{op_name}: x and y must be integers or floats, got dtype "
            f"{x._value.dtype}"
        )


def _division_op(compute, op_type, op_name, doc):
    """The public op `op_name`: ``compute(x, y, be)`` of the converted,
    checked operands (values), recorded as `op_type` (None: not recorded)."""

    def op(x, y, name=None):
        x, y = binary_operands(x, y, op_name)
        _integer_divisor(x, y, op_name)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z = wrap(compute(x, y, op_name))
        if op_type is not None:
            record_operation(op_type, (x, y), (z,))
        return z

    op.__name__ = op.__qualname__ = op_name
    op.__doc__ = doc
    return dispatch.api(op)


def _floordiv(x, y, op_name):
    if x._value.dtype.kind == "f":    # TensorFlow: floor(x / y)
        q = apply_binary(np.divide, x, y, op_name)
        return backend_of(x._value, y._value).xp.floor(q)
    return apply_binary(np.floor_divide, x, y, op_name)


def _truncatediv(x, y, op_name):
    if x._value.dtype.kind == "f":
        q = apply_binary(np.divide, x, y, op_name)
        return backend_of(x._value, y._value).xp.trunc(q)
    # floor and truncation differ where the remainder is nonzero and x / y
    # is negative
    q = apply_binary(np.floor_divide, x, y, op_name)
    r = apply_binary(np.remainder, x, y, op_name)
    negative_quotient = (x._value < 0) != (y._value < 0)
    return q + ((r != 0) & negative_quotient).astype(q.dtype)


floordiv = _division_op(_floordiv, None, "floordiv", binary_doc(
    "floordiv", "Elementwise ``x // y``, rounded toward negative infinity.\n\n"
    "Floats give ``floor(x / y)`` (as TensorFlow's ``FloorDiv``).  No gradient\n"
    "(TensorFlow defines none).", "[7.0, -7.0], 2.0", "array([ 3., -4.])",
    raises=True))
floormod = _division_op(
    lambda x, y, n: apply_binary(np.remainder, x, y, n), "FloorMod", "floormod",
    binary_doc(
        "floormod", "Elementwise remainder of :func:`floordiv`: it has the sign "
        "of `y` (Python's ``%``).", "[7.0, -7.0], 3.0", "array([1., 2.])",
        raises=True))
truncatediv = _division_op(_truncatediv, None, "truncatediv", binary_doc(
    "truncatediv", "Elementwise ``x / y`` rounded toward zero (C's integer "
    "division).  No gradient.", "[7, -7], 2", "array([ 3, -3])", raises=True))
truncatemod = _division_op(
    lambda x, y, n: apply_binary(np.fmod, x, y, n), None, "truncatemod",
    binary_doc(
        "truncatemod", "Elementwise remainder of :func:`truncatediv`: it has "
        "the sign of `x` (C's ``fmod``).  No gradient.", "[7, -7], 3",
        "array([ 1, -1])", raises=True))
no_gradient("FloorDiv")


@register_gradient("FloorMod")
def _floormod_grad(op, grad):
    x, y = op.inputs
    grad = densify(grad)
    return unbroadcast_pair(
        op, lambda: grad, lambda: multiply(grad, negative(floordiv(x, y))))


def _div_no_nan(x, y, op_name):
    if x._value.dtype.kind != "f":
        raise InvalidArgumentError(
            f"{op_name}: x and y must be floats, got dtype {x._value.dtype}")
    q = apply_binary(np.divide, x, y, op_name)
    xp = backend_of(x._value, y._value).xp
    return xp.where(xp.broadcast_to(y._value, q.shape) == 0, q.dtype.type(0), q)


divide_no_nan = _division_op(_div_no_nan, "DivNoNan", "divide_no_nan", binary_doc(
    "divide_no_nan", "Elementwise ``x / y``, and 0 where ``y == 0`` (even for "
    "``x`` 0 or NaN).", "[1.0, 3.0], [2.0, 0.0]", "array([0.5, 0. ])",
    raises=True))


@register_gradient("DivNoNan")
def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    grad = densify(grad)
    return unbroadcast_pair(
        op, lambda: divide_no_nan(grad, y),
        lambda: multiply(grad, divide_no_nan(divide_no_nan(negative(x), y), y)))


def _squared_difference(x, y, op_name):
    d = apply_binary(np.subtract, x, y, op_name)
    return np.multiply(d, d, out=d) if isinstance(d, np.ndarray) else d * d


squared_difference = _division_op(
    _squared_difference, "SquaredDifference", "squared_difference", binary_doc(
        "squared_difference", "Elementwise ``(x - y) ** 2``.",
        "[1.0, 5.0], 2.0", "array([1., 9.])", raises=True))


@register_gradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    twice = multiply(densify(grad), multiply(subtract(x, y), 2))
    return unbroadcast_pair(op, lambda: twice, lambda: negative(twice))

