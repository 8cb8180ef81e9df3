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

import os
import sys
import threading

import numpy as np

from ..errors import InvalidArgumentError

__all__ = [
    "MAX_POOLED_BYTES",
    "MIN_POOLED_BYTES",
    "CACHE_LINE",
    "aligned_empty",
    "check_allocation",
    "empty",
]

#: Results smaller than this are plain ``np.empty`` arrays.
MIN_POOLED_BYTES = 1 << 20
#: The most memory the pool keeps, in use or free.
MAX_POOLED_BYTES = 1 << 29

#: Bytes of a cache line: the alignment of :func:`aligned_empty`.
CACHE_LINE = 64

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


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        return 1 << 46


def check_allocation(shape, dtype, what):
    """Raise before allocating a result larger than the machine's memory.

    An op whose output size comes from the data (the largest segment id, a
    range's total length) checks it here: NumPy would raise a MemoryError, or
    the system would grant the pages lazily and end the process when they are
    written.

    Parameters
    ----------
    shape : tuple of int
        The result's shape (Python ints; may be huge).
    dtype : dtype
    what : str
        Names the op and the argument that sets the size, for the message.

    Returns
    -------
    None

    Raises
    ------
    InvalidArgumentError
        If the result would take more bytes than the physical memory.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import buffers
    >>> buffers.check_allocation((2**62,), np.int64, "segment_sum: segment_ids")
    Traceback (most recent call last):
    ...
    sparsegrad.errors.InvalidArgumentError: segment_sum: segment_ids asks for a \
result of shape (4611686018427387904,) and dtype int64 (36893488147419103232 \
bytes), more than this machine's memory
    """
    nbytes = np.dtype(dtype).itemsize
    for n in shape:
        nbytes *= int(n)
    if nbytes > _physical_memory():
        raise InvalidArgumentError(
            f"{what} asks for a result of shape {tuple(int(n) for n in shape)} and "
            f"dtype {np.dtype(dtype)} ({nbytes} bytes), more than this machine's "
            f"memory"
        )


def aligned_empty(shape, dtype):
    """An uninitialised C-contiguous array whose first byte starts a cache line.

    NumPy's large arrays start 16 bytes into a 64-byte line, so a 256-byte
    table row spans five lines instead of four, and a kernel that reads
    scattered rows (an embedding lookup, a sparse optimizer update) moves a
    quarter more memory.  Variables keep their values in such arrays.

    Parameters
    ----------
    shape : tuple of int
    dtype : dtype

    Returns
    -------
    ndarray
        Writable, its data at a multiple of :data:`CACHE_LINE` bytes.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import buffers
    >>> a = buffers.aligned_empty((1000, 64), np.float32)
    >>> a.ctypes.data % buffers.CACHE_LINE, a.shape, a.flags.c_contiguous
    (0, (1000, 64), True)
    """
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    block = np.empty(nbytes + CACHE_LINE, np.uint8)
    offset = (-block.ctypes.data) % CACHE_LINE
    return block[offset : offset + nbytes].view(dtype).reshape(shape)
