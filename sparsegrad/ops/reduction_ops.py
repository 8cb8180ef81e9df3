"""Reductions (mean, max, min, prod, variance, std, any, all over axes), each
with its gradient below it (prod, variance and std are compositions of
differentiable ops; any and all are not differentiable).

The Sum op and :func:`unbroadcast` live in the array layer
(:mod:`sparsegrad.ops.array_ops.shapes`, where broadcast_to's gradient needs
them); they are re-exported here, the reductions' public home.
"""

import numpy as np

from ..autodiff.recording import record_operation
from ..autodiff.registry import register_gradient
from ..framework import dispatch
from ..framework.dtypes import half_not_computed, is_floating
from ..framework.tensor import wrap
from . import array_ops, math_ops, unary_ops
from ._helpers import as_tensor, backend_for, normalize_axis
from .array_ops.shapes import (
    kept_shape,
    reduce_over,
    reduce_sum,
    restore_reduced,
    unbroadcast,
)

__all__ = [
    "reduce_all",
    "reduce_any",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_std",
    "reduce_sum",
    "reduce_variance",
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
    return dispatch.api(reduction)


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




def _prod(input_tensor, axis=None, keepdims=False, name=None):
    x = as_tensor(input_tensor, name="input_tensor")
    axes = normalize_axis(axis, x._value.ndim, "reduce_prod")
    xp = backend_for(x._value).xp
    z = wrap(xp.asarray(xp.prod(x._value, axis=axes, keepdims=bool(keepdims),
                                dtype=x._value.dtype)))
    record_operation("Prod", (x,), (z,), {"axis": axes, "keepdims": bool(keepdims)})
    return z


@register_gradient("Prod")
def _prod_grad(op, grad):
    """The product of every other reduced value (exclusive cumulative
    products from both ends, so that zeros need no division), times `grad`."""
    x = op.inputs[0]._value
    axes = op.attrs["axis"]
    xp = backend_for(x).xp
    rest = [a for a in range(x.ndim) if a not in axes]
    order = list(axes) + rest
    moved = xp.transpose(x, order).reshape((-1,) + tuple(x.shape[a] for a in rest))
    ones = xp.ones((1,) + moved.shape[1:], x.dtype)
    left = xp.cumprod(xp.concatenate([ones, moved[:-1]]), axis=0)
    right = xp.cumprod(xp.concatenate([ones, moved[::-1][:-1]]), axis=0)[::-1]
    others = (left * right).reshape(tuple(x.shape[a] for a in order))
    others = wrap(xp.transpose(others, list(np.argsort(order))))
    return math_ops.multiply(others, restore_reduced(op, grad))


def _moment(kind):
    def moment(input_tensor, axis=None, keepdims=False, name=None):
        x = as_tensor(input_tensor, name="input_tensor")
        if x.dtype.kind != "f":
            if is_floating(x.dtype):       # bfloat16
                raise half_not_computed(f"reduce_{kind}", "input_tensor", x.dtype)
            raise TypeError(
                f"reduce_{kind}: input must be floating-point, got dtype {x.dtype}")
        deviation = math_ops.subtract(x, reduce_mean(x, axis, keepdims=True))
        var = reduce_mean(math_ops.multiply(deviation, deviation), axis, keepdims)
        return unary_ops.sqrt(var) if kind == "std" else var
    return moment


def _logical(kind):
    def logical(input_tensor, axis=None, keepdims=False, name=None):
        x = as_tensor(input_tensor, name="input_tensor")
        if x.dtype != np.bool_:
            raise TypeError(f"reduce_{kind}: input must be bool, got dtype {x.dtype}")
        axes = normalize_axis(axis, x._value.ndim, f"reduce_{kind}")
        xp = backend_for(x._value).xp
        return wrap(xp.asarray(getattr(xp, kind)(
            x._value, axis=axes, keepdims=bool(keepdims))))
    return logical


def _documented(fn, op_name, summary, example, result, raises=""):
    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = _DOC.format(summary=summary, name=op_name, example=example,
                             result=result).replace(
        "    Examples\n", (raises + "\n    Examples\n") if raises else "    Examples\n")
    return dispatch.api(fn)


reduce_prod = _documented(
    _prod, "reduce_prod",
    "Product over `axis` (all axes by default); an empty axis gives 1.\n\n"
    "    Its gradient is the product of the other values (exact with zeros);\n"
    "    it is first-order only: the tape does not differentiate it again.",
    "[[1.0, 2.0], [3.0, 4.0]], axis=1", "array([ 2., 12.])")
reduce_variance = _documented(
    _moment("variance"), "reduce_variance",
    "Variance over `axis`: the mean squared deviation from the mean.",
    "[[1.0, 2.0], [3.0, 5.0]], axis=1", "array([0.25, 1.  ])",
    """    Raises
    ------
    TypeError
        If the input is not floating-point (a RaggedTensor of integers
        goes to :func:`sparsegrad.ragged.reduce_variance`, which takes them).
""")
reduce_std = _documented(
    _moment("std"), "reduce_std",
    "Standard deviation over `axis`: the square root of the variance.",
    "[[1.0, 2.0], [3.0, 5.0]], axis=1", "array([0.5, 1. ])",
    """    Raises
    ------
    TypeError
        If the input is not floating-point.
""")
reduce_any = _documented(
    _logical("any"), "reduce_any",
    "Logical or over `axis`; an empty axis gives False.  Not differentiable.",
    "[[True, False], [False, False]], axis=1", "array([ True, False])",
    """    Raises
    ------
    TypeError
        If the input is not bool.
""")
reduce_all = _documented(
    _logical("all"), "reduce_all",
    "Logical and over `axis`; an empty axis gives True.  Not differentiable.",
    "[[True, False], [True, True]], axis=1", "array([False,  True])",
    """    Raises
    ------
    TypeError
        If the input is not bool.
""")


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
