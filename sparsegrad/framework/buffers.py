"""Recycled memory for large op results.

A new NumPy array of several MiB is mapped fresh from the system, and glibc
hands it back when it is freed, so an op that returns such arrays on every
training step pays a page fault per 4 KiB of output on every call: on a
virtual machine that costs more than computing the result (40 MiB of clipped
gradients: about 14 ms of faults for 2 ms of arithmetic).  TensorFlow and
PyTorch keep freed blocks in a caching allocator for the same reason.

:func:`empty` keeps the blocks of large results in a small pool and hands a
block out again once nothing references it any more: every array that views
a block holds a reference to it (NumPy collapses view chains onto the
owner), so a block whose only references are the pool's is free.  The pool
holds at most :data:`MAX_POOLED_BYTES`; blocks beyond that are plain
allocations.
"""

import sys
import threading

import numpy as np

__all__ = ["MAX_POOLED_BYTES", "MIN_POOLED_BYTES", "empty"]

#: Results smaller than this are plain ``np.empty`` arrays.
MIN_POOLED_BYTES = 1 << 20
#: The most memory the pool keeps, in use or free.
MAX_POOLED_BYTES = 1 << 29

_LOCK = threading.Lock()
_POOL = {}  # nbytes -> list of 1-D uint8 blocks
_HELD = [0]  # bytes in the pool
# sys.getrefcount of a free block while a loop variable holds it: the pool's
# list, the loop variable and getrefcount's own argument.
_FREE_REFCOUNT = 3


def empty(shape, dtype):
    """An uninitialised C-contiguous array, its memory recycled when large.

    Parameters
    ----------
    shape : tuple of int
    dtype : dtype

    Returns
    -------
    ndarray
        Writable; for ``MIN_POOLED_BYTES`` or more, a view of a pooled block
        that nothing else references.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import buffers
    >>> a = buffers.empty((512, 1024), np.float32)
    >>> a.shape, a.dtype, a.flags.c_contiguous
    ((512, 1024), dtype('float32'), True)
    """
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    if nbytes < MIN_POOLED_BYTES:
        return np.empty(shape, dtype)
    with _LOCK:
        bucket = _POOL.setdefault(nbytes, [])
        for block in bucket:
            if sys.getrefcount(block) == _FREE_REFCOUNT:
                return block.view(dtype).reshape(shape)
        block = np.empty(nbytes, np.uint8)
        if _HELD[0] + nbytes <= MAX_POOLED_BYTES:
            bucket.append(block)
            _HELD[0] += nbytes
    return block.view(dtype).reshape(shape)
