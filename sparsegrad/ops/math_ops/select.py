"""maximum, minimum and where: the ops that pick one operand per element,
each with its gradient below it."""

import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import register_gradient
from ...errors import InvalidArgumentError
from ...framework import dispatch
from ...framework.backend import backend_of
from ...framework.buffers import check_allocation, copy_of
from ...framework.tensor import wrap
from .._helpers import as_tensor, binary_operands
from ..array_ops import densify, zeros_like
from .broadcasting import binary_doc, binary_op, check_result, unbroadcast_pair
from .compare import greater_equal, less_equal

__all__ = ["maximum", "minimum", "where"]


def _extremum(ufunc, op_type, op_name, which, args, result):
    summary = (f"Elementwise {which} with NumPy broadcasting (NaN propagates).\n\n"
               "Where ``x == y`` the gradient goes to `x`.")
    return binary_op(ufunc, op_type, op_name,
                     binary_doc(op_name, summary, args, result))


maximum = _extremum(np.maximum, "Maximum", "maximum", "maximum", "[1.0, 5.0], 3.0",
                    "array([3., 5.])")
minimum = _extremum(np.minimum, "Minimum", "minimum", "minimum", "[1.0, 5.0], 3.0",
                    "array([1., 3.])")


def _pick_grad(op, grad, select_x, first):
    """The gradients of the operands ``op.inputs[first]`` and the next: `grad`
    where `select_x` holds, and where it does not."""
    grad = densify(grad)
    zeros = zeros_like(grad)
    return unbroadcast_pair(op, lambda: where(select_x, grad, zeros),
                            lambda: where(select_x, zeros, grad), first)


@register_gradient("Maximum")
def _maximum_grad(op, grad):
    x, y = op.inputs
    return _pick_grad(op, grad, greater_equal(x, y), 0)


@register_gradient("Minimum")
def _minimum_grad(op, grad):
    x, y = op.inputs
    return _pick_grad(op, grad, less_equal(x, y), 0)


@dispatch.api
def where(condition, x=None, y=None, name=None):
    """Pick from `x` where `condition` is true and from `y` elsewhere.

    The three arguments broadcast together (NumPy rules).  With `x` and `y`
    both None, return the coordinates of the true elements instead: an int64
    Tensor of shape ``(n_true, condition.ndim)``.

    Parameters
    ----------
    condition : Tensor or array_like
        bool (numbers are converted: nonzero is true).
    x, y : Tensor, Variable or array_like, optional
        The values to pick from; give both or neither.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the broadcast shape of the three arguments; with `x` and `y`
        None, the int64 coordinates of the true elements.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.where([True, False], [1.0, 2.0], [10.0, 20.0]).numpy()
    array([ 1., 20.])
    >>> sg.where([[True, False], [False, True]]).numpy()
    array([[0, 0],
           [1, 1]])
    """
    cond = as_tensor(condition, name="condition")
    if cond.dtype != np.bool_:
        if cond.dtype.kind not in "iuf":
            raise InvalidArgumentError(
                f"where: condition must be bool, got dtype {cond.dtype}"
            )
        # a broadcast view's bool copy
        check_allocation(copy_of(cond._value, "where: condition", np.bool_))
        cond = wrap(cond._value.astype(bool))
    if x is None and y is None:
        xp = backend_of(cond._value).xp
        return wrap(xp.argwhere(cond._value).astype(np.int64))
    if x is None or y is None:
        raise InvalidArgumentError("where: give both x and y, or neither")
    x, y = binary_operands(x, y, "where")
    check_result("where", ("condition", "x", "y"), (cond, x, y), x._value.dtype)
    try:
        xp = backend_of(cond._value, x._value, y._value).xp
        z = wrap(xp.where(cond._value, x._value, y._value))
    except ValueError:
        raise InvalidArgumentError(
            f"where: shapes {cond.shape}, {x.shape} and {y.shape} do not broadcast"
        ) from None
    record_operation("SelectV2", (cond, x, y), (z,))
    return z



@register_gradient("SelectV2")
def _select_grad(op, grad):
    return (None,) + _pick_grad(op, grad, op.inputs[0], 1)
