"""Shape ops (reshape, broadcast_to, transpose, expand_dims, squeeze) and
the Sum op, each with its gradient below it.

The Sum op (:func:`reduce_sum`) and :func:`unbroadcast` live at this level
because broadcast_to's gradient is a sum over the broadcast axes and the sum's
gradient is a broadcast: the two are each other's transpose.  Every
broadcasting op's gradient sums back to its input's shape through
:func:`unbroadcast`.
"""

import warnings

import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import register_gradient
from ...errors import InvalidArgumentError
from ...framework import dispatch
from ...framework.buffers import check_allocation
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import Tensor, wrap
from .._helpers import as_tensor, backend_for, normalize_axis
from .dense import densify

__all__ = [
    "broadcast_to",
    "expand_dims",
    "reduce_sum",
    "reshape",
    "squeeze",
    "transpose",
    "unbroadcast",
]


def shape_argument(shape, op_name):
    """`shape` (a Tensor, an int or a sequence of ints) as a tuple of ints."""
    if isinstance(shape, Tensor):
        shape = shape._value.tolist()
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(int(n) for n in shape)
    except TypeError:
        raise InvalidArgumentError(
            f"{op_name}: shape must be a sequence of ints, got {shape!r}"
        ) from None
    return shape


# -- reshape / broadcast_to ---------------------------------------------------------


def reshape(tensor, shape, name=None):
    """Give `tensor` a new shape with the same number of elements (no copy).

    Parameters
    ----------
    tensor : Tensor, Variable or array_like
    shape : sequence of int
        One entry may be -1: it is inferred.
    name : str, optional
        Accepted for TensorFlow compatibility; not used.

    Returns
    -------
    Tensor
        Of shape `shape`, viewing the value of `tensor` (no copy).

    Raises
    ------
    InvalidArgumentError
        If the sizes do not match.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.reshape([1.0, 2.0, 3.0, 4.0], (2, -1)).numpy()
    array([[1., 2.],
           [3., 4.]])
    """
    x = as_tensor(tensor, name="tensor")
    shape = shape_argument(shape, "reshape")
    try:
        out = _reshaped(x._value, shape)
    except InvalidArgumentError:    # (a ValueError) the copy is too large
        raise
    except ValueError:
        raise InvalidArgumentError(
            f"reshape: cannot reshape a tensor of shape {x.shape} "
            f"({x.size} elements) to shape {shape}"
        ) from None
    z = wrap(out)
    record_operation("Reshape", (x,), (z,))
    return z


def _reshaped(value, shape):
    """``value.reshape(shape)``; where the strides force a copy (a broadcast
    view), its size is checked first."""
    if not value.flags.c_contiguous:
        # sizes that differ raise here (a view of nothing, its strides all 0)
        np.broadcast_to(np.empty((), np.bool_), value.shape).reshape(shape)
        try:
            return value.reshape(shape, copy=False)    # NumPy >= 2.1: a view
        except (TypeError, ValueError):                 # a copy, or older NumPy
            check_allocation(((value.size,), value.dtype, "reshape: tensor"))
    return value.reshape(shape)


@register_gradient("Reshape")
def _reshape_grad(op, grad):
    return reshape(densify(grad), op.inputs[0]._value.shape)


def broadcast_to(input, shape, name=None):
    """Broadcast `input` to `shape` (NumPy rules).

    Parameters
    ----------
    input : Tensor, Variable or array_like
    shape : sequence of int
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of shape `shape`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.broadcast_to([1.0, 2.0], (2, 2)).numpy()
    array([[1., 2.],
           [1., 2.]])
    """
    x = as_tensor(input, name="input")
    shape = shape_argument(shape, "broadcast_to")
    try:
        out = backend_for(x._value).xp.broadcast_to(x._value, shape)
    except ValueError:
        raise InvalidArgumentError(
            f"broadcast_to: cannot broadcast shape {x.shape} to {shape}"
        ) from None
    z = wrap(out)
    record_operation("BroadcastTo", (x,), (z,))
    return z


@register_gradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    return unbroadcast(densify(grad), op.inputs[0]._value.shape)


# -- transpose / expand_dims / squeeze ------------------------------------------------


def transpose(a, perm=None, name=None):
    """Permute the axes of `a` (reverse them by default).

    Parameters
    ----------
    a : Tensor, Variable or array_like
    perm : sequence of int, optional
        A permutation of the axes (negative entries count from the end).
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        With axis ``i`` of the result being axis ``perm[i]`` of `a`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.transpose([[1.0, 2.0]]).numpy()
    array([[1.],
           [2.]])
    """
    x = as_tensor(a, name="a")
    ndim = x._value.ndim
    if perm is None:
        perm = tuple(range(ndim - 1, -1, -1))
    else:
        perm = shape_argument(perm, "transpose")
        if sorted(p % ndim if ndim else p for p in perm) != list(range(ndim)) or any(
            not -ndim <= p < ndim for p in perm
        ):
            raise InvalidArgumentError(
                f"transpose: perm {perm} is not a permutation of the {ndim} axes"
            )
        perm = tuple(p % ndim for p in perm)
    z = wrap(backend_for(x._value).xp.transpose(x._value, perm))
    record_operation("Transpose", (x,), (z,), {"perm": perm})
    return z


@register_gradient("Transpose")
def _transpose_grad(op, grad):
    inverse = tuple(int(i) for i in np.argsort(op.attrs["perm"]))
    return transpose(densify(grad), inverse)


def expand_dims(input, axis, name=None):
    """Insert an axis of size 1 at `axis` (``-1`` appends).

    Parameters
    ----------
    input : Tensor, Variable or array_like
    axis : int
        In ``[-rank - 1, rank]``.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of rank one more than `input`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.expand_dims([1.0, 2.0], 0).shape
    (1, 2)
    """
    x = as_tensor(input, name="input")
    ndim = x._value.ndim
    if isinstance(axis, Tensor):
        axis = int(axis)
    if not isinstance(axis, (int, np.integer)) or not -ndim - 1 <= axis <= ndim:
        raise InvalidArgumentError(
            f"expand_dims: axis {axis!r} is out of range [{-ndim - 1}, {ndim}]"
        )
    z = wrap(backend_for(x._value).xp.expand_dims(x._value, int(axis) % (ndim + 1)))
    record_operation("ExpandDims", (x,), (z,))
    return z


@register_gradient("ExpandDims")
def _expand_dims_grad(op, grad):
    return reshape(densify(grad), op.inputs[0]._value.shape)


def squeeze(input, axis=None, name=None):
    """Remove axes of size 1 (all of them, or those in `axis`).

    Parameters
    ----------
    input : Tensor, Variable or array_like
    axis : int, sequence of int or None, default=None
        The axes to remove; by default every axis of size 1.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor

    Raises
    ------
    InvalidArgumentError
        If an axis in `axis` does not have size 1.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.squeeze([[1.0], [2.0]]).shape
    (2,)
    """
    x = as_tensor(input, name="input")
    shape = x._value.shape
    if axis is None:
        axes = tuple(i for i, n in enumerate(shape) if n == 1)
    else:
        axes = normalize_axis(axis, len(shape), "squeeze")
        for a in axes:
            if shape[a] != 1:
                raise InvalidArgumentError(
                    f"squeeze: cannot squeeze axis {a} of shape {shape}: its size "
                    f"is {shape[a]}, not 1"
                )
    z = wrap(backend_for(x._value).xp.squeeze(x._value, axis=axes))
    record_operation("Squeeze", (x,), (z,))
    return z


@register_gradient("Squeeze")
def _squeeze_grad(op, grad):
    return reshape(densify(grad), op.inputs[0]._value.shape)


# -- the Sum op and unbroadcast --------------------------------------------------


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
        grad = densify(grad)
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
        grad = reshape(grad, shape)
    return grad



def reduce_over(np_fn, x, axis, keepdims, op_type, op_name):
    """Reduce `x` over `axis` with `np_fn` (np.sum, np.mean, np.max or
    np.min; CuPy's of that name for a GPU value) and record op `op_type`."""
    x = as_tensor(x, name="input_tensor")
    axes = normalize_axis(axis, x._value.ndim, op_name)
    value = x._value
    if op_type in ("Max", "Min") and any(value.shape[a] == 0 for a in axes):
        raise InvalidArgumentError(
            f"{op_name}: cannot reduce an empty axis of shape {x.shape}"
        )
    # a GPU value reduces with CuPy (its own summation order: sums and means
    # may differ from the CPU's in the last bits; max and min do not)
    xp = backend_for(value).xp
    if op_type == "Sum":
        out = xp.sum(value, axis=axes, keepdims=bool(keepdims), dtype=value.dtype)
    elif op_type == "Mean":
        if value.dtype.kind in "iu":
            out = xp.mean(value, axis=axes, keepdims=bool(keepdims)).astype(value.dtype)
        else:   # (an empty axis: NaN, silently, as TensorFlow's)
            with np.errstate(invalid="ignore", divide="ignore"), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                out = xp.mean(
                    value, axis=axes, keepdims=bool(keepdims), dtype=value.dtype
                )
    else:
        out = getattr(xp, np_fn.__name__)(value, axis=axes, keepdims=bool(keepdims))
    z = wrap(xp.asarray(out))
    record_operation(op_type, (x,), (z,), {"axis": axes, "keepdims": bool(keepdims)})
    return z


@dispatch.api
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
    return reduce_over(np.sum, input_tensor, axis, keepdims, "Sum", "reduce_sum")


def kept_shape(op):
    """The input shape of reduction `op` with its reduced axes of size 1."""
    shape = op.inputs[0]._value.shape
    axes = op.attrs["axis"]
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def restore_reduced(op, grad):
    """`grad` of the reduced output, reshaped so it broadcasts to the input."""
    kept = kept_shape(op)
    grad = densify(grad)
    if grad._value.shape != kept:
        grad = reshape(grad, kept)
    return grad


@register_gradient("Sum")
def _sum_grad(op, grad):
    return broadcast_to(restore_reduced(op, grad), op.inputs[0]._value.shape)

