"""Host or device arrays in the training ops' validation: the checks and
conversions of :mod:`.core` that look at array data, for numpy arrays (the
framework's helpers) and cupy arrays alike.

On the device a check that needs the data (an index range) runs one
reduction and reads back one scalar, before any kernel writes; nothing is
ever copied between host and device.
"""

import numpy as np

from ...errors import InvalidArgumentError
from ...framework import backend, sparse_rows

__all__ = ["may_share_memory", "as_array", "device_index_array",
           "first_out_of_range", "check_in_range", "kernel_arrays"]

_INT64 = np.dtype(np.int64)


def may_share_memory(a, b):
    """``np.may_share_memory`` for numpy or cupy arrays (arrays on different
    devices share nothing; two cupy arrays are compared by the bounds of
    their buffers)."""
    on_device = backend.is_cupy_array(a), backend.is_cupy_array(b)
    if on_device == (False, False):
        return np.may_share_memory(a, b)
    if on_device != (True, True):
        return False
    if a.size == 0 or b.size == 0:
        return False
    # The bounds of the two buffers (both C-contiguous or views of them:
    # overlapping bounds is what np.may_share_memory tests too).
    a0, b0 = a.data.ptr, b.data.ptr
    return a0 < b0 + b.nbytes and b0 < a0 + a.nbytes


def as_array(value):
    """`value` as an array: a cupy array as it is (never copied to the host),
    anything else through np.asarray."""
    return value if backend.is_cupy_array(value) else np.asarray(value)


def device_index_array(array, name):
    """sparse_rows.index_array for a cupy array (the same checks and
    messages; the uint64 check reads back one scalar)."""
    if array.dtype.kind not in "iu" or array.dtype == np.bool_:
        raise InvalidArgumentError(
            f"{name} must be int32 or int64, got dtype {array.dtype}"
        )
    if array.dtype == np.uint64 and array.size:
        largest = int(array.max())
        if largest > sparse_rows.INT64_MAX:
            raise InvalidArgumentError(
                f"{name} holds {largest}, which does not fit in int64"
            )
    return array.astype(np.int64)


def first_out_of_range(indices, n_rows):
    """sparse_rows.first_out_of_range for numpy or cupy indices: on the
    device, one reduction and one boolean read back (the position is looked
    for only when something is out of range)."""
    if not backend.is_cupy_array(indices):
        return sparse_rows.first_out_of_range(indices, n_rows)
    if indices.size == 0:
        return None
    outside = (indices < 0) | (indices >= n_rows)
    if not bool(outside.any()):
        return None
    return int(outside.argmax())


def check_in_range(indices, n_rows, name="indices"):
    """:func:`sparsegrad.framework.sparse_rows.check_in_range` for 1-D numpy
    or cupy indices (on the device: one reduction and one boolean read
    back); the same error and message."""
    if not backend.is_cupy_array(indices):
        sparse_rows.check_in_range(indices, n_rows, name)
        return
    bad = first_out_of_range(indices, n_rows)
    if bad is not None:
        raise InvalidArgumentError(
            f"{name}[{bad}] = {int(indices[bad])} is not in [0, {n_rows})"
        )


def kernel_arrays(grad, indices, dtype, var=None):
    """`grad` C-contiguous in `dtype` and `indices` (None for a dense op)
    C-contiguous int64, as the kernels take them; copies only when needed.
    numpy arrays for a numpy `var`, cupy arrays for a cupy one: a mix raises
    ValueError (nothing is copied between host and device)."""
    xp = np if var is None else backend.get_array_module(var, grad, indices)
    if grad.dtype != dtype or not grad.flags.c_contiguous:
        if xp is np:
            # np.asarray, not np.ascontiguousarray: that makes a 0-d array 1-D.
            grad = np.asarray(grad, dtype=dtype, order="C")
        else:
            grad = grad.astype(dtype, order="C")
    if indices is not None and (indices.dtype != _INT64
                                or not indices.flags.c_contiguous):
        indices = xp.ascontiguousarray(indices.astype(_INT64, copy=False))
    return grad, indices
