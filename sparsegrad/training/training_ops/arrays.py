"""Host or device arrays in the training ops' validation: the overlap test
and the conversions of :mod:`.core`, for numpy and cupy arrays alike (the
index checks are :mod:`sparsegrad.framework.sparse_rows`', which take both).
Nothing is ever copied between host and device.
"""

import numpy as np

from ...framework import backend

__all__ = ["may_share_memory", "as_array", "kernel_arrays"]

_INT64 = np.dtype(np.int64)


def may_share_memory(a, b):
    """``may_share_memory`` of the arrays' module (NumPy's, or CuPy's, which
    compares the bounds of the buffers); arrays on different devices share
    nothing."""
    if backend.is_cupy_array(a) != backend.is_cupy_array(b):
        return False
    return backend.get_array_module(a, b).may_share_memory(a, b)


def as_array(value):
    """`value` as an array: a cupy array as it is (never copied to the host),
    anything else through np.asarray."""
    return value if backend.is_cupy_array(value) else np.asarray(value)


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
