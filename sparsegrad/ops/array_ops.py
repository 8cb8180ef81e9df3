"""Shape ops, slicing, casting, identity-like ops and the scatter-add of rows,
each with its gradient below it.

Also :func:`densify`, the one way a gradient that may be an IndexedSlices
becomes a dense Tensor (recorded while a tape records, so that the dense form
can be differentiated again).
"""

import numpy as np

from ..autodiff.recording import (
    current_gradient_op,
    is_recording,
    record_operation,
)
from ..autodiff.registry import no_gradient, register_gradient
from ..errors import InvalidArgumentError
from ..framework import backend, buffers, sparse_rows
from ..framework.buffers import check_allocation
from ..framework.densify_warning import warn_densify
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, wrap
from ..framework.variable import Variable
from . import embedding_ops, reduction_ops
from ._helpers import as_tensor, normalize_axis, same_device

__all__ = [
    "broadcast_to",
    "cast",
    "concat",
    "densify",
    "expand_dims",
    "identity",
    "one_hot",
    "ones_like",
    "reshape",
    "squeeze",
    "stack",
    "stop_gradient",
    "strided_slice",
    "tensor_scatter_add",
    "transpose",
    "zeros_like",
]


def _shape_arg(shape, op_name):
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
    shape = _shape_arg(shape, "reshape")
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
    shape = _shape_arg(shape, "broadcast_to")
    try:
        out = _xp(x._value).broadcast_to(x._value, shape)
    except ValueError:
        raise InvalidArgumentError(
            f"broadcast_to: cannot broadcast shape {x.shape} to {shape}"
        ) from None
    z = wrap(out)
    record_operation("BroadcastTo", (x,), (z,))
    return z


@register_gradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    return reduction_ops.unbroadcast(densify(grad), op.inputs[0]._value.shape)


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
        perm = _shape_arg(perm, "transpose")
        if sorted(p % ndim if ndim else p for p in perm) != list(range(ndim)) or any(
            not -ndim <= p < ndim for p in perm
        ):
            raise InvalidArgumentError(
                f"transpose: perm {perm} is not a permutation of the {ndim} axes"
            )
        perm = tuple(p % ndim for p in perm)
    z = wrap(_xp(x._value).transpose(x._value, perm))
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
    z = wrap(_xp(x._value).expand_dims(x._value, int(axis) % (ndim + 1)))
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
    z = wrap(_xp(x._value).squeeze(x._value, axis=axes))
    record_operation("Squeeze", (x,), (z,))
    return z


@register_gradient("Squeeze")
def _squeeze_grad(op, grad):
    return reshape(densify(grad), op.inputs[0]._value.shape)


# -- concat / stack ------------------------------------------------------------------


def _xp(*arrays):
    """The array module of `arrays` (numpy, or cupy for GPU arrays)."""
    return backend.get_array_module(*arrays)


def _tensor_list(values, op_name):
    if isinstance(values, (Tensor, np.ndarray)) or not isinstance(
        values, (list, tuple)
    ):
        raise TypeError(f"{op_name}: values must be a list of tensors")
    if not values:
        raise InvalidArgumentError(f"{op_name}: values must not be empty")
    tensors = []
    first = None
    for k, v in enumerate(values):
        if first is not None and not isinstance(
            v, (Tensor, IndexedSlices, Variable)
        ):
            v = v if backend.is_cupy_array(v) else np.asarray(v)
            v = as_tensor(same_device(v, first._value).astype(first.dtype,
                                                              copy=False))
        t = as_tensor(v, name=f"values[{k}]")
        if first is None:
            first = t
        elif t.dtype != first.dtype:
            raise InvalidArgumentError(
                f"{op_name}: values[{k}] has dtype {t.dtype}, values[0] has "
                f"{first.dtype}"
            )
        tensors.append(t)
    return tensors


def concat(values, axis, name=None):
    """Join tensors along an existing axis.

    Parameters
    ----------
    values : list of Tensor or array_like
        One dtype; equal shapes except along `axis`.
    axis : int
    name : str, optional
        Accepted for TensorFlow compatibility; not used.

    Returns
    -------
    Tensor
        Of the dtype of `values`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.concat([[[1.0]], [[2.0]]], axis=0).numpy()
    array([[1.],
           [2.]])
    """
    tensors = _tensor_list(values, "concat")
    ndim = tensors[0]._value.ndim
    if ndim == 0:
        raise InvalidArgumentError("concat: cannot concatenate scalars (use stack)")
    (axis,) = normalize_axis(axis, ndim, "concat")
    for k, t in enumerate(tensors):
        s0, s = tensors[0].shape, t.shape
        if len(s) != ndim or s[:axis] + s[axis + 1 :] != s0[:axis] + s0[axis + 1 :]:
            raise InvalidArgumentError(
                f"concat: values[{k}] has shape {s}, values[0] has {s0}; they must "
                f"match except along axis {axis}"
            )
    values = [t._value for t in tensors]
    check_allocation((s0[:axis] + (sum(v.shape[axis] for v in values),)
                      + s0[axis + 1:], tensors[0].dtype, "concat: values"))
    z = wrap(_xp(*values).concatenate(values, axis=axis))
    record_operation("ConcatV2", tuple(tensors), (z,), {"axis": axis})
    return z


@register_gradient("ConcatV2")
def _concat_grad(op, grad):
    grad = densify(grad)
    axis = op.attrs["axis"]
    lead = (slice(None),) * axis
    grads = []
    start = 0
    skip = op.skip_input_indices
    for i, t in enumerate(op.inputs):
        n = t._value.shape[axis]
        grads.append(
            None
            if i in skip
            else strided_slice(grad, lead + (slice(start, start + n),))
        )
        start += n
    return grads


def stack(values, axis=0, name=None):
    """Join tensors of one shape along a new axis.

    Parameters
    ----------
    values : list of Tensor or array_like
        One shape and dtype.
    axis : int, default=0
        Where the new axis goes, in ``[-rank - 1, rank]``.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of rank one more than the values.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.stack([[1.0, 2.0], [3.0, 4.0]], axis=1).numpy()
    array([[1., 3.],
           [2., 4.]])
    """
    tensors = _tensor_list(values, "stack")
    shape = tensors[0].shape
    for k, t in enumerate(tensors):
        if t.shape != shape:
            raise InvalidArgumentError(
                f"stack: values[{k}] has shape {t.shape}, values[0] has {shape}"
            )
    ndim = len(shape) + 1
    if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise InvalidArgumentError(
            f"stack: axis {axis!r} is out of range [{-ndim}, {ndim})"
        )
    axis = int(axis) % ndim
    values = [t._value for t in tensors]
    check_allocation((shape[:axis] + (len(values),) + shape[axis:],
                      tensors[0].dtype, "stack: values"))
    z = wrap(_xp(*values).stack(values, axis=axis))
    record_operation("Pack", tuple(tensors), (z,), {"axis": axis})
    return z


@register_gradient("Pack")
def _pack_grad(op, grad):
    grad = densify(grad)
    lead = (slice(None),) * op.attrs["axis"]
    skip = op.skip_input_indices
    return [
        None if i in skip else strided_slice(grad, lead + (i,))
        for i in range(len(op.inputs))
    ]


# -- slicing ---------------------------------------------------------------------------


class _SliceIndexError(InvalidArgumentError, IndexError):
    """An integer index out of bounds (an IndexError, so iteration stops)."""


def _normalize_key(key, shape):
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    n_consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_consumed > len(shape):
        raise _SliceIndexError(
            f"too many indices for a tensor of shape {shape}: {len(key)} given"
        )
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise InvalidArgumentError("an index can only have a single ellipsis ('...')")
    dim = 0
    for k in key:
        if k is None:
            out.append(None)
        elif k is Ellipsis:
            span = len(shape) - n_consumed
            out.extend([slice(None)] * span)
            dim += span
        elif isinstance(k, slice):
            for part in (k.start, k.stop, k.step):
                if part is not None and not isinstance(part, (int, np.integer)):
                    raise TypeError(
                        f"slice bounds must be ints or None, got {k!r}; use sg.gather "
                        "to index with a tensor"
                    )
            if k.step == 0:
                raise InvalidArgumentError("slice step cannot be zero")
            out.append(k)
            dim += 1
        elif (
            (isinstance(k, (int, np.integer))
            and not isinstance(k, bool))
            or (isinstance(k, Tensor) and k.ndim == 0 and k.dtype.kind in "iu")
        ):
            i = int(k)
            n = shape[dim]
            if not -n <= i < n:
                raise _SliceIndexError(
                    f"slice index {i} of dimension {dim} out of bounds (size {n})"
                )
            out.append(i % n)
            dim += 1
        else:
            raise TypeError(
                f"only ints, slices, Ellipsis and None are valid indices, got "
                f"{type(k).__name__}; use sg.gather to index with a tensor"
            )
    return tuple(out)


def strided_slice(input_, key):
    """``input_[key]`` for a key of ints, slices, ``...`` and ``None``.

    This is what ``Tensor.__getitem__`` calls.  Tensor indices are not
    supported here: use :func:`~sparsegrad.gather`.

    Parameters
    ----------
    input_ : Tensor, Variable or array_like
    key : int, slice, Ellipsis, None or tuple of them

    Returns
    -------
    Tensor

    Raises
    ------
    IndexError
        (also an :class:`~sparsegrad.errors.InvalidArgumentError`) for an
        integer index out of bounds.
    TypeError
        For an index of another type.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> t = sg.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> t[1, ::2].numpy()
    array([4., 6.])
    """
    x = as_tensor(input_, name="input")
    key = _normalize_key(key, x._value.shape)
    z = wrap(x._value[key])
    record_operation("StridedSlice", (x,), (z,), {"key": key})
    return z


@register_gradient("StridedSlice")
def _strided_slice_grad(op, grad):
    return _strided_slice_grad_op(
        densify(grad), op.inputs[0]._value.shape, op.attrs["key"]
    )


def _strided_slice_grad_op(grad, shape, key):
    """Zeros of `shape` with `grad` written at `key` (op StridedSliceGrad)."""
    check_allocation((shape, grad.dtype, "StridedSliceGrad: shape"))
    out = _xp(grad._value).zeros(shape, grad._value.dtype)
    out[key] = grad._value
    z = wrap(out)
    record_operation("StridedSliceGrad", (grad,), (z,), {"key": key})
    return z


@register_gradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    return strided_slice(densify(grad), op.attrs["key"])


# -- cast / identity / stop_gradient --------------------------------------------------


def cast(x, dtype, name=None):
    """Convert `x` to `dtype` (float to int truncates toward zero).

    The gradient flows only between floating dtypes.

    Parameters
    ----------
    x : Tensor, Variable or array_like
    dtype : str or numpy.dtype
        Any real or bool dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the shape of `x` and dtype `dtype`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.cast([1.7, -1.7], "int32").numpy()
    array([ 1, -1], dtype=int32)
    """
    x = as_tensor(x, name="x")
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        raise InvalidArgumentError(f"cast: complex dtype {dtype} is not supported")
    if x._value.dtype == dtype:
        z = wrap(x._value.view())
    else:
        check_allocation((x.shape, dtype, "cast: x"))
        with np.errstate(invalid="ignore", over="ignore"):
            z = wrap(x._value.astype(dtype))
    record_operation("Cast", (x,), (z,))
    return z


@register_gradient("Cast")
def _cast_grad(op, grad):
    x = op.inputs[0]
    if x._value.dtype.kind != "f" or op.outputs[0]._value.dtype.kind != "f":
        return None
    if type(grad) is IndexedSlices:
        return IndexedSlices._from_trusted(
            cast(grad.values, x.dtype), grad.indices, grad.dense_shape
        )
    return cast(grad, x._value.dtype)


def identity(input, name=None):
    """A new Tensor with the same value; gradients pass through unchanged.

    Parameters
    ----------
    input : Tensor, Variable or array_like
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        A new Tensor with the value of `input`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.identity([1.0, 2.0]).numpy()
    array([1., 2.])
    """
    x = as_tensor(input, name="input")
    z = wrap(x._value.view())
    record_operation("Identity", (x,), (z,))
    return z


@register_gradient("Identity")
def _identity_grad(op, grad):
    return grad


def stop_gradient(input, name=None):
    """The value of `input`, through which no gradient flows.

    Parameters
    ----------
    input : Tensor, Variable or array_like
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        A new Tensor with the value of `input`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> x = sg.constant(3.0)
    >>> with sg.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = sg.stop_gradient(x * x) * x
    >>> tape.gradient(y, x)
    <sparsegrad.Tensor: shape=(), dtype=float64, numpy=9.0>
    """
    x = as_tensor(input, name="input")
    z = wrap(x._value.view())
    record_operation("StopGradient", (x,), (z,))
    return z


no_gradient("StopGradient")


# -- constructors (never recorded: their outputs do not depend on values) -----------


def zeros_like(input, dtype=None, name=None):
    """Zeros of the shape (and dtype, unless given) of `input`.

    Parameters
    ----------
    input : Tensor, Variable or array_like
    dtype : str or numpy.dtype, optional
        The dtype of the result; by default that of `input`.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Zeros of the shape of `input`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.zeros_like([1.0, 2.0]).numpy()
    array([0., 0.])
    """
    x = as_tensor(input, name="input")
    dtype = x._value.dtype if dtype is None else dtype
    check_allocation((x.shape, dtype, "zeros_like: input"))   # (a view's shape)
    return wrap(_xp(x._value).zeros(x._value.shape, dtype))


def ones_like(input, dtype=None, name=None):
    """Ones of the shape (and dtype, unless given) of `input`.

    Parameters
    ----------
    input : Tensor, Variable or array_like
    dtype : str or numpy.dtype, optional
        The dtype of the result; by default that of `input`.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Ones of the shape of `input`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.ones_like([[1, 2]]).numpy()
    array([[1, 1]])
    """
    x = as_tensor(input, name="input")
    dtype = x._value.dtype if dtype is None else dtype
    check_allocation((x.shape, dtype, "ones_like: input"))
    return wrap(_xp(x._value).ones(x._value.shape, dtype))


def one_hot(
    indices, depth, on_value=None, off_value=None, axis=-1, dtype=None, name=None
):
    """One-hot encode integer `indices` along a new axis of size `depth`.

    Indices outside ``[0, depth)`` give a row of `off_value` (as in
    TensorFlow).  The result is float32 unless `dtype` or the on/off values
    say otherwise.  Not differentiable.

    Parameters
    ----------
    indices : Tensor or array_like
        Of an integer dtype.
    depth : int
        The size of the new axis (at least 0).
    on_value, off_value : scalar, optional
        The values of the hot and the other entries (1 and 0 by default).
    axis : int, default=-1
        Where the new axis goes.
    dtype : str or numpy.dtype, optional
        The dtype of the result.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of shape ``indices.shape`` with an axis of size `depth` inserted at
        `axis`.

    Raises
    ------
    InvalidArgumentError
        For non-integer indices, a bad `depth` or `axis`, or a result that
        needs more memory than the process may allocate.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.one_hot([0, 2, 5], 3).numpy()
    array([[1., 0., 0.],
           [0., 0., 1.],
           [0., 0., 0.]], dtype=float32)
    """
    idx = as_tensor(indices, name="indices")
    if idx.dtype.kind not in "iu":
        raise InvalidArgumentError(
            f"one_hot: indices must be integers, got dtype {idx.dtype}"
        )
    if not isinstance(depth, (int, np.integer)) or depth < 0:
        raise InvalidArgumentError(f"one_hot: depth must be an int >= 0, got {depth!r}")
    if dtype is None:
        for v in (on_value, off_value):
            if v is not None and hasattr(v, "dtype"):
                dtype = v.dtype
                break
        else:
            dtype = np.float32
    dtype = np.dtype(dtype)
    on, off = (v.astype(dtype) if backend.is_cupy_array(v) else np.asarray(v, dtype)
               for v in (1 if on_value is None else on_value,
                         0 if off_value is None else off_value))
    ndim = idx._value.ndim + 1
    if not -ndim <= axis < ndim:
        raise InvalidArgumentError(
            f"one_hot: axis {axis} is out of range for rank {ndim}"
        )
    # the comparison, the result and, moved to another axis, its copy
    shape, moved = idx.shape + (int(depth),), axis % ndim != ndim - 1
    result = (shape, dtype, "one_hot: depth")
    check_allocation((shape, np.bool_, "one_hot: depth"), result,
                     result if moved else None)
    xp = _xp(idx._value)
    hot = idx._value[..., None] == xp.arange(depth)
    out = xp.where(hot, same_device(on, idx._value),
                   same_device(off, idx._value)).astype(dtype, copy=False)
    if axis % ndim != ndim - 1:
        out = xp.moveaxis(out, -1, axis % ndim)
    return wrap(xp.ascontiguousarray(out))


# -- scatter (used to aggregate sparse + dense gradients differentiably) -------------


def tensor_scatter_add(tensor, indices, updates, name=None):
    """A copy of `tensor` with the rows ``updates[k]`` added at ``indices[k]``.

    Repeated indices accumulate.  This is how a sparse gradient meets a dense
    one while a tape records the gradient computation; cost O(size of
    `tensor`) for the copy.

    Parameters
    ----------
    tensor : Tensor of shape (n_rows, ...)
    indices : array_like of shape (nnz,), int32 or int64, in ``[0, n_rows)``
    updates : Tensor of shape (nnz, ...), the dtype of `tensor`
    name : str, optional
        Accepted for TensorFlow compatibility; not used.

    Returns
    -------
    Tensor
        Of the shape and dtype of `tensor`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.tensor_scatter_add([[0.0], [0.0]], [1, 1], [[1.0], [2.0]]).numpy()
    array([[0.],
           [3.]])
    """
    x = as_tensor(tensor, name="tensor")
    idx = as_tensor(indices, name="indices")
    values = as_tensor(updates, name="updates")
    if values.dtype != x.dtype:
        if isinstance(updates, (Tensor, IndexedSlices)):
            raise InvalidArgumentError(
                f"tensor_scatter_add: updates has dtype {values.dtype}, tensor has "
                f"{x.dtype}"
            )
        values = wrap(values._value.astype(x.dtype))
    if x._value.ndim == 0:
        raise InvalidArgumentError("tensor_scatter_add: tensor must have rank >= 1")
    index_array = sparse_rows.as_index_array(idx._value, "indices")
    sparse_rows.check_in_range(index_array, x._value.shape[0], "indices")
    if values._value.shape != index_array.shape + x._value.shape[1:]:
        raise InvalidArgumentError(
            f"tensor_scatter_add: updates has shape {values.shape}, expected "
            f"{index_array.shape + x.shape[1:]}"
        )
    xp = _xp(x._value, values._value)
    check_allocation((x.shape, x.dtype, "tensor_scatter_add: tensor"),
                     buffers.copy_of(values._value, "tensor_scatter_add: updates"))
    out = x._value.copy()
    sparse_rows.scatter_add(out, index_array, xp.ascontiguousarray(values._value))
    z = wrap(out)
    record_operation("TensorScatterAdd", (x, idx, values), (z,))
    return z


@register_gradient("TensorScatterAdd")
def _tensor_scatter_add_grad(op, grad):
    _, idx, _ = op.inputs
    skip = op.skip_input_indices
    gu = None if 2 in skip else embedding_ops.gather(grad, idx)
    return grad, None, gu


def densify(grad, op_name=None):
    """A gradient as a dense Tensor: an IndexedSlices is densified.

    Rows of repeated indices are summed.  While a tape records (a gradient
    being differentiated again) the dense form is built with
    :func:`tensor_scatter_add`, so the outer tape sees how it depends on the
    rows; otherwise with :meth:`IndexedSlices.to_dense
    <sparsegrad.IndexedSlices.to_dense>`.  The two give the same bits.  Cost
    O(dense size) for an IndexedSlices; a Tensor is returned as it is.  A
    large IndexedSlices (see :func:`~sparsegrad.set_densify_warning_threshold`)
    gets a :class:`~sparsegrad.errors.DensifyWarning` naming the op, once per
    op type.

    Parameters
    ----------
    grad : Tensor, IndexedSlices or array_like
    op_name : str, optional
        What needs the dense value, for the warning; by default the gradient
        of the op whose gradient function runs now.

    Returns
    -------
    Tensor

    Raises
    ------
    ValueError
        If `grad` is an IndexedSlices without a dense_shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> g = sg.IndexedSlices([[1.0], [2.0]], [1, 1], dense_shape=(3, 1))
    >>> from sparsegrad.ops.array_ops import densify
    >>> densify(g).numpy()
    array([[0.],
           [3.],
           [0.]])
    """
    if type(grad) is Tensor:
        return grad
    if isinstance(grad, IndexedSlices):
        shape = grad.dense_shape
        if shape is None:
            raise ValueError(
                f"densifying needs the dense_shape of the IndexedSlices, which is "
                f"None: {grad!r}"
            )
        if op_name is None:
            op_type = current_gradient_op()
            op_name = "densify" if op_type is None else f"gradient of {op_type}"
        warn_densify(shape, op_name)
        if is_recording():
            dense = (shape, grad.dtype, f"{op_name}: dense_shape")
            check_allocation(dense, dense)       # zeros, and their updated copy
            zeros = wrap(_xp(grad.values._value).zeros(shape, grad.dtype))
            return tensor_scatter_add(zeros, grad.indices, grad.values)
        return grad.to_dense()
    return as_tensor(grad)
