"""strided_slice (what ``Tensor.__getitem__`` calls) and its gradient, the
op StridedSliceGrad."""

import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import register_gradient
from ...errors import InvalidArgumentError
from ...framework.backend import backend_of
from ...framework.buffers import check_allocation
from ...framework.tensor import Tensor, wrap
from .._helpers import as_tensor
from .dense import densify

__all__ = ["strided_slice"]


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
    out = backend_of(grad._value).xp.zeros(shape, grad._value.dtype)
    out[key] = grad._value
    z = wrap(out)
    record_operation("StridedSliceGrad", (grad,), (z,), {"key": key})
    return z


@register_gradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    return strided_slice(densify(grad), op.attrs["key"])


