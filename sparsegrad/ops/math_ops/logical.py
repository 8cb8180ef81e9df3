"""The logical ops of bool Tensors: logical_and, logical_or, logical_xor
and logical_not (not differentiable, never recorded)."""

import numpy as np

from ...errors import InvalidArgumentError
from ...framework import dispatch
from ...framework.tensor import wrap
from .._helpers import as_tensor, binary_operands
from .broadcasting import apply_binary, binary_doc
from .unary import unary_doc

__all__ = ["logical_and", "logical_not", "logical_or", "logical_xor"]


def _check_bool(t, op_name, argument):
    if t._value.dtype != np.bool_:
        raise InvalidArgumentError(
            f"{op_name}: {argument} must be bool, got dtype {t._value.dtype}")


def _logical(ufunc, op_name, word, result):
    def op(x, y, name=None):
        x, y = binary_operands(x, y, op_name)
        _check_bool(x, op_name, "x")
        _check_bool(y, op_name, "y")
        return wrap(apply_binary(ufunc, x, y, op_name))

    op.__name__ = op.__qualname__ = op_name
    op.__doc__ = binary_doc(
        op_name, f"Elementwise logical {word} of two bool Tensors (not "
        "differentiable).", "[True, False], [True, True]", result,
        returns="bool, of the broadcast shape.", raises=True)
    return dispatch.api(op)


logical_and = _logical(np.logical_and, "logical_and", "and", "array([ True, False])")
logical_or = _logical(np.logical_or, "logical_or", "or", "array([ True,  True])")
logical_xor = _logical(np.logical_xor, "logical_xor", "exclusive or",
                       "array([False,  True])")


@dispatch.api
def logical_not(x, name=None):
    x = as_tensor(x, name="x")
    _check_bool(x, "logical_not", "x")
    return wrap(~x._value)


logical_not.__doc__ = unary_doc(
    "logical_not", "Elementwise logical not of a bool Tensor (not "
    "differentiable).\n\nRaises InvalidArgumentError for another dtype.",
    "[True, False]", "array([False,  True])", x_type="Tensor or array_like of bool",
    returns="Tensor\n    bool, of the shape of `x`.")
