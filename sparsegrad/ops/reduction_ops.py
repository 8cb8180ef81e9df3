"""Reductions (sum, mean, max, min over axes), each with its gradient below it.

Also :func:`unbroadcast`, the sum that brings the gradient of a broadcast
result back to an input's shape, which every binary op's gradient uses.
"""

import numpy as np

from ..autodiff.recording import record_operation
from ..autodiff.registry import register_gradient
from ..errors import InvalidArgumentError
from ..framework import backend
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import wrap
from . import array_ops, math_ops
from ._helpers import as_tensor, normalize_axis

__all__ = [
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_sum",
    "unbroadcast",
]


def unbroadcast(grad, shape):
    """Sum a gradient of a broadcast result back to an input's shape.

    The leading axes that broadcasting added, and the axes where `shape` has
    size 1, are summed (with :func:`reduce_sum`, so the sum is recorded); an
    IndexedSlices of the right dense shape is returned as it is.

    Parameters
    ----------
    grad : Tensor or IndexedSlices
        The gradient of the broadcast result.
    shape : tuple of int
        The shape of the input it belongs to.

    Returns
    -------
    Tensor or IndexedSlices
        Of shape `shape`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.ops.reduction_ops import unbroadcast
    >>> unbroadcast(sg.constant([[1.0, 2.0], [3.0, 4.0]]), (2,)).numpy()
    array([4., 6.])
    """
    if type(grad) is IndexedSlices:
        if grad.dense_shape == shape:
            return grad
        grad = array_ops.densify(grad)
    gshape = grad._value.shape
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    axes = list(range(lead))
    for i, n in enumerate(shape):
        if n == 1 and gshape[lead + i] != 1:
            axes.append(lead + i)
    if axes:
        grad = reduce_sum(grad, axes)
    if grad._value.shape != shape:
        grad = array_ops.reshape(grad, shape)
    return grad


# -- reductions ------------------------------------------------------------------------


#: ``type -> {op_name: function(x, axis, keepdims)}``: reductions of types
#: defined above this layer (RaggedTensor registers its own), as TensorFlow
#: dispatches ``tf.reduce_sum`` on a RaggedTensor.
DISPATCH = {}


def _reduce(np_fn, x, axis, keepdims, op_type, op_name):
    handlers = DISPATCH.get(type(x))
    if handlers is not None:
        return handlers[op_name](x, axis, keepdims)
    x = as_tensor(x, name="input_tensor")
    axes = normalize_axis(axis, x._value.ndim, op_name)
    value = x._value
    if op_type in ("Max", "Min") and any(value.shape[a] == 0 for a in axes):
        raise InvalidArgumentError(
            f"{op_name}: cannot reduce an empty axis of shape {x.shape}"
        )
    # a GPU value reduces with CuPy (its own summation order: sums and means
    # may differ from the CPU's in the last bits; max and min do not)
    xp = backend.get_array_module(value)
    if op_type == "Sum":
        out = xp.sum(value, axis=axes, keepdims=bool(keepdims), dtype=value.dtype)
    elif op_type == "Mean":
        if value.dtype.kind in "iu":
            out = xp.mean(value, axis=axes, keepdims=bool(keepdims)).astype(value.dtype)
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                out = xp.mean(
                    value, axis=axes, keepdims=bool(keepdims), dtype=value.dtype
                )
    else:
        out = getattr(xp, np_fn.__name__)(value, axis=axes, keepdims=bool(keepdims))
    z = wrap(xp.asarray(out))
    record_operation(op_type, (x,), (z,), {"axis": axes, "keepdims": bool(keepdims)})
    return z


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over `axis` (all axes by default).

    Parameters
    ----------
    input_tensor : Tensor, Variable or array_like
    axis : int, sequence of int or None, default=None
        Negative axes count from the end.
    keepdims : bool, default=False
        Keep the reduced axes with size 1.
    name : str, optional
        Accepted for TensorFlow compatibility; not used.

    Returns
    -------
    Tensor of the input's dtype.

    Raises
    ------
    InvalidArgumentError
        If an axis is out of range or repeated.

    Notes
    -----
    A :class:`~sparsegrad.RaggedTensor` goes to
    :func:`sparsegrad.ragged.reduce_sum` (with this function's default, all
    axes), as ``tf.reduce_sum`` does; so do the other reductions.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.reduce_sum([[1.0, 2.0], [3.0, 4.0]], axis=0).numpy()
    array([4., 6.])
    >>> rt = sg.ragged.constant([[1.0, 2.0], [], [3.0]])
    >>> sg.reduce_sum(rt, axis=1).numpy()
    array([3., 0., 3.], dtype=float32)
    """
    return _reduce(np.sum, input_tensor, axis, keepdims, "Sum", "reduce_sum")


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over `axis` (all axes by default); integer input stays integer.

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
    >>> sg.reduce_mean([[1.0, 2.0], [3.0, 4.0]], axis=1).numpy()
    array([1.5, 3.5])
    """
    return _reduce(np.mean, input_tensor, axis, keepdims, "Mean", "reduce_mean")


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """Maximum over `axis`; tied maxima share the gradient equally.

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
    >>> sg.reduce_max([[1.0, 5.0], [3.0, 4.0]], axis=0).numpy()
    array([3., 5.])
    """
    return _reduce(np.max, input_tensor, axis, keepdims, "Max", "reduce_max")


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """Minimum over `axis`; tied minima share the gradient equally.

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
    >>> sg.reduce_min([[1.0, 5.0], [3.0, 4.0]], axis=0).numpy()
    array([1., 4.])
    """
    return _reduce(np.min, input_tensor, axis, keepdims, "Min", "reduce_min")


def _kept_shape(op):
    shape = op.inputs[0]._value.shape
    axes = op.attrs["axis"]
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _restore(op, grad):
    """`grad` of the reduced output, reshaped so it broadcasts to the input."""
    kept = _kept_shape(op)
    grad = array_ops.densify(grad)
    if grad._value.shape != kept:
        grad = array_ops.reshape(grad, kept)
    return grad


@register_gradient("Sum")
def _sum_grad(op, grad):
    return array_ops.broadcast_to(_restore(op, grad), op.inputs[0]._value.shape)


@register_gradient("Mean")
def _mean_grad(op, grad):
    x = op.inputs[0]
    count = 1
    for a in op.attrs["axis"]:
        count *= x._value.shape[a]
    scaled = math_ops.divide(_restore(op, grad), max(count, 1) * 1.0)
    return array_ops.broadcast_to(scaled, x._value.shape)


def _min_max_reduce_grad(op, grad):
    x = op.inputs[0]
    y = op.outputs[0]
    kept = _kept_shape(op)
    y_kept = y if y._value.shape == kept else array_ops.reshape(y, kept)
    indicators = array_ops.cast(math_ops.equal(y_kept, x), x.dtype)
    n_selected = reduce_sum(indicators, op.attrs["axis"], keepdims=True)
    return math_ops.multiply(
        math_ops.divide(indicators, n_selected), _restore(op, grad)
    )


register_gradient("Max")(_min_max_reduce_grad)
register_gradient("Min")(_min_max_reduce_grad)
