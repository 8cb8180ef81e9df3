"""Host or device arrays in the training ops' validation: the conversions of
the kernels' arguments, for numpy and cupy arrays alike (the index checks are
:mod:`sparsegrad.framework.sparse_rows`', which take both), on the backend
the call chose at its entry.  Nothing is ever copied between host and device.
"""

import numpy as np

from ..._kernels import training as baseline_kernels
from ...framework.buffers import UNCHECKED_BYTES, check_allocation

__all__ = ["as_array", "kernel_arrays"]

_INT64 = np.dtype(np.int64)
# int32 words of the by-row kernels' scratch per index (_buffers counts them).
_SCRATCH_WORDS_PER_INDEX = 8


def as_array(value, be):
    """`value` as an array of backend `be`: a device array as it is (never
    copied to the host), anything else through np.asarray."""
    if be.on_gpu and isinstance(value, be.xp.ndarray):
        return value
    return np.asarray(value)


def kernel_arrays(grad, indices, dtype, be, driver=None, *, trusted=False):
    """`grad` C-contiguous in `dtype` and `indices` (None for a dense op)
    C-contiguous int64, as the kernels take them, on backend `be`; copies
    only when needed.

    The copies and the sparse update's scratch are checked together first
    (``check_allocation``; `driver`, the kernel's name, names the op): a
    broadcast view of 2**31 indices costs nothing, its copy 16 GiB.  A
    `trusted` gradient (an optimizer's) is already C-contiguous in `dtype`."""
    if trusted and indices is None:
        return grad, indices
    if (trusted and indices.dtype == _INT64 and indices.flags.c_contiguous
            and 4 * _SCRATCH_WORDS_PER_INDEX * indices.shape[0] < UNCHECKED_BYTES):
        # nothing to copy, and a scratch below what check_allocation
        # checks: the common optimizer step, which pays for every call
        return grad, indices
    check_allocation(*_buffers(grad, indices, dtype, _public_name(driver)))
    if not trusted and (grad.dtype != dtype or not grad.flags.c_contiguous):
        if be.on_gpu:
            grad = grad.astype(dtype, order="C")
        else:
            # np.asarray, not np.ascontiguousarray: that makes a 0-d array 1-D.
            grad = np.asarray(grad, dtype=dtype, order="C")
    if indices is not None and (indices.dtype != _INT64
                                or not indices.flags.c_contiguous):
        indices = be.xp.ascontiguousarray(indices.astype(_INT64, copy=False))
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
    out.append(((n, _SCRATCH_WORDS_PER_INDEX), np.int32, f"{what}: indices"))
    if n >= baseline_kernels.BY_ROW_MAX_N:
        out += [((n, 7), np.int64, f"{what}: indices"),
                (grad.shape, dtype, f"{what}: grad")]
    return out
