"""Host or device arrays in the training ops' validation: the overlap test
and the conversions of :mod:`.core`, for numpy and cupy arrays alike (the
index checks are :mod:`sparsegrad.framework.sparse_rows`', which take both).
Nothing is ever copied between host and device.
"""

import numpy as np

from ..._kernels import training as baseline_kernels
from ...framework import backend
from ...framework.buffers import check_allocation

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


def kernel_arrays(grad, indices, dtype, var=None, driver=None):
    """`grad` C-contiguous in `dtype` and `indices` (None for a dense op)
    C-contiguous int64, as the kernels take them; copies only when needed.
    numpy arrays for a numpy `var`, cupy arrays for a cupy one: a mix raises
    ValueError (nothing is copied between host and device).

    The copies and the sparse update's scratch are checked together first
    (``check_allocation``; `driver`, the kernel's name, names the op): a
    broadcast view of 2**31 indices costs nothing, its copy 16 GiB."""
    xp = np if var is None else backend.get_array_module(var, grad, indices)
    check_allocation(*_buffers(grad, indices, dtype, _public_name(driver)))
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


def _public_name(driver):
    """``sparse_apply_adagrad`` for the kernel driver ``sparse_adagrad``."""
    if driver is None:
        return "training op"
    kind, _, kernel = driver.partition("_")
    return f"sparse_apply_{kernel}" if kind == "sparse" else f"apply_{kernel}"


def _buffers(grad, indices, dtype, what):
    """What :func:`kernel_arrays` and the sparse kernels will allocate from
    the arguments' sizes: the copies of `grad` and `indices`, and the
    by-row kernels' scratch (8 int32 words per index) or, past their int32
    links, the grouping of the indices and the summed rows."""
    out = [None if grad.dtype == dtype and grad.flags.c_contiguous
           else (grad.shape, dtype, f"{what}: grad")]
    if indices is None:
        return out
    n = indices.shape[0]
    if indices.dtype != _INT64 or not indices.flags.c_contiguous:
        out.append((indices.shape, _INT64, f"{what}: indices"))
    out.append(((n, 8), np.int32, f"{what}: indices"))
    if n >= baseline_kernels.BY_ROW_MAX_N:
        out += [((n, 7), np.int64, f"{what}: indices"),
                (grad.shape, dtype, f"{what}: grad")]
    return out
