"""concat and stack, each with its gradient below it."""

import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import register_gradient
from ...errors import InvalidArgumentError
from ...framework.backend import backend_of
from ...framework.buffers import check_allocation
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import Tensor, wrap
from ...framework.variable import Variable
from .._helpers import as_tensor, normalize_axis, same_device
from .dense import densify
from .slicing import strided_slice

__all__ = ["concat", "stack"]


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
            v = v if backend_of(v).on_gpu else np.asarray(v)
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
    z = wrap(backend_of(*values).xp.concatenate(values, axis=axis))
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
    z = wrap(backend_of(*values).xp.stack(values, axis=axis))
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


