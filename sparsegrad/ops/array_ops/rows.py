"""The recorded GatherV2 of checked arguments, and the index conversion.

The bottom of the row ops: :func:`tensor_scatter_add`'s gradient gathers
rows, and :func:`sparsegrad.gather` (in :mod:`sparsegrad.ops.embedding`)
checks its arguments and then comes here.  GatherV2's gradient is registered
beside :func:`~sparsegrad.gather`.
"""

import numpy as np

from ...autodiff.recording import record_operation
from ...framework import buffers, sparse_rows
from ...framework.backend import backend_of
from ...framework.tensor import Tensor, wrap
from ...framework.variable import Variable

__all__ = ["gather_checked", "index_tensor", "take"]


def index_tensor(indices, name="indices", be=None):
    """`indices` as an int32 or int64 Tensor of any rank.

    The conversion is :func:`sparsegrad.framework.sparse_rows.index_array`;
    an int32 or int64 Tensor is returned as it is, anything else becomes a
    new Tensor (a caller's array is copied, never frozen).

    Parameters
    ----------
    indices : Tensor, Variable or array_like of an integer dtype
    name : str, default="indices"
        The argument's name in error messages.
    be : Backend, optional
        The call's backend, where its entry has chosen it.

    Returns
    -------
    Tensor
    """
    if isinstance(indices, Variable):
        indices = indices.value()
    if isinstance(indices, Tensor):
        array = sparse_rows.index_array(indices._value, name, be)
        return indices if array is indices._value else wrap(array)
    array = sparse_rows.index_array(indices, name, be)
    if (be or backend_of(array)).on_gpu:
        return wrap(array.copy())
    return wrap(buffers.copy(array))


def take(array, indices, axis, be):
    """``np.take`` without its copy of a non-contiguous `array` (which would
    cost O(array) for a strided or broadcast table); rows of a contiguous
    table on the kernel threads.  `be` is the backend of both arrays."""
    if be.on_gpu and not (axis == 0 and array.flags.c_contiguous):
        return array[(slice(None),) * axis + (indices,)]
    if array.flags.c_contiguous:
        if axis == 0:
            return sparse_rows.gather_rows(array, indices, be)
        return np.take(array, indices, axis=axis)
    return np.asarray(array[(slice(None),) * axis + (indices,)])


def gather_checked(params, indices, axis, be):
    """``gather(params, indices, axis)`` of arguments already checked: a
    Tensor `params` of rank >= 1, an int32/int64 Tensor `indices` in range,
    `axis` a non-negative int, `be` their backend; recorded as GatherV2."""
    out = wrap(take(params._value, indices._value, axis, be))
    record_operation("GatherV2", (params, indices), (out,), {"axis": axis})
    return out
