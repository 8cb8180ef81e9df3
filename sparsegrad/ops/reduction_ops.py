"""Reductions (mean, max, min over axes), each with its gradient below it.

The Sum op and :func:`unbroadcast` live in the array layer
(:mod:`sparsegrad.ops.array_ops.shapes`, where broadcast_to's gradient needs
them); they are re-exported here, the reductions' public home.
"""

import numpy as np

from ..autodiff.registry import register_gradient
from . import array_ops, math_ops
from .array_ops.shapes import (
    DISPATCH,
    kept_shape,
    reduce_over,
    reduce_sum,
    restore_reduced,
    unbroadcast,
)

__all__ = [
    "DISPATCH",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_sum",
    "unbroadcast",
]

_DOC = """{summary}

    Parameters
    ----------
    input_tensor : Tensor, Variable or array_like
    axis : int, sequence of int or None, default=None
        The axes to reduce (all by default); negative axes count from the end.
    keepdims : bool, default=False
        Keep the reduced axes with size 1.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the input's dtype.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.{name}({example}).numpy()
    {result}
    """


def _reduction(np_fn, op_type, op_name, summary, example, result):
    """The public reduction `op_name`: :func:`reduce_over` with `np_fn`,
    recorded as `op_type`, its docstring made from the shared text."""

    def reduction(input_tensor, axis=None, keepdims=False, name=None):
        return reduce_over(np_fn, input_tensor, axis, keepdims, op_type, op_name)

    reduction.__name__ = reduction.__qualname__ = op_name
    reduction.__doc__ = _DOC.format(summary=summary, name=op_name,
                                    example=example, result=result)
    return reduction


reduce_mean = _reduction(
    np.mean, "Mean", "reduce_mean",
    "Mean over `axis` (all axes by default); integer input stays integer.",
    "[[1.0, 2.0], [3.0, 4.0]], axis=1", "array([1.5, 3.5])")
reduce_max = _reduction(
    np.max, "Max", "reduce_max",
    "Maximum over `axis`; tied maxima share the gradient equally.",
    "[[1.0, 5.0], [3.0, 4.0]], axis=0", "array([3., 5.])")
reduce_min = _reduction(
    np.min, "Min", "reduce_min",
    "Minimum over `axis`; tied minima share the gradient equally.",
    "[[1.0, 5.0], [3.0, 4.0]], axis=0", "array([1., 4.])")


@register_gradient("Mean")
def _mean_grad(op, grad):
    x = op.inputs[0]
    count = 1
    for a in op.attrs["axis"]:
        count *= x._value.shape[a]
    scaled = math_ops.divide(restore_reduced(op, grad), max(count, 1) * 1.0)
    return array_ops.broadcast_to(scaled, x._value.shape)


def _min_max_reduce_grad(op, grad):
    x = op.inputs[0]
    y = op.outputs[0]
    kept = kept_shape(op)
    y_kept = y if y._value.shape == kept else array_ops.reshape(y, kept)
    indicators = array_ops.cast(math_ops.equal(y_kept, x), x.dtype)
    n_selected = reduce_sum(indicators, op.attrs["axis"], keepdims=True)
    return math_ops.multiply(
        math_ops.divide(indicators, n_selected), restore_reduced(op, grad)
    )


register_gradient("Max")(_min_max_reduce_grad)
register_gradient("Min")(_min_max_reduce_grad)
