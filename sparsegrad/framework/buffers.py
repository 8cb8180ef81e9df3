"""Recycled memory for large op results, and the storage of Variables.

A new NumPy array of several MiB is mapped fresh from the system, and glibc
hands it back when it is freed, so an op that returns such arrays on every
training step pays a page fault per 4 KiB of output on every call: on a
virtual machine that costs more than computing the result (40 MiB of clipped
gradients: about 14 ms of faults for 2 ms of arithmetic).  Whether glibc maps
a block afresh depends on its dynamic thresholds (they move with the sizes
freed before), so the cost came and went from one step to the next.
TensorFlow and PyTorch keep freed blocks in a caching allocator for the
same reason.

:func:`empty` keeps the blocks of large results in a small pool and hands a
block out again once nothing references it any more: every array that views
a block holds a reference to it (NumPy collapses view chains onto the
owner), so a block whose only references are the pool's is free.  Blocks
come in size classes (eight per doubling), so results whose size changes
from batch to batch (the distinct rows of an ``IndexedSlices``) reuse the
same blocks.  The pool holds at most :data:`MAX_POOLED_BYTES`; blocks beyond
that are plain allocations.

:func:`aligned_empty` is the storage of Variables and optimizer slots: NumPy
memory (which NumPy already advises the kernel to back with huge pages),
started at a cache line.  A mapping of its own aligned to a huge page and
collapsed into huge pages at creation (``MADV_COLLAPSE``) was tried for the
tables and measured slower: see ``benchmarks/README.md``.
"""

import functools
import os
import sys
import threading

try:
    import resource
except ImportError:  # not a POSIX system
    resource = None

import numpy as np

from ..errors import InvalidArgumentError

__all__ = [
    "MAX_POOLED_BYTES",
    "MIN_POOLED_BYTES",
    "CACHE_LINE",
    "aligned_empty",
    "UNCHECKED_BYTES",
    "check_allocation",
    "copy_of",
    "empty",
    "memory_limit",
    "nbytes",
]

#: Results smaller than this are plain ``np.empty`` arrays (glibc's heap serves
#: them without mapping fresh pages once its threshold has adapted).
MIN_POOLED_BYTES = 1 << 18
#: The most memory the pool keeps, in use or free.
MAX_POOLED_BYTES = 1 << 29

#: Calls asking for fewer bytes in all skip the memory limits' lookup.
UNCHECKED_BYTES = 1 << 26

#: Bytes of a cache line: the alignment of :func:`aligned_empty`.
CACHE_LINE = 64

_LOCK = threading.Lock()
_POOL = {}  # nbytes -> list of 1-D uint8 blocks
_HELD = [0]  # bytes in the pool
# sys.getrefcount of a free block while a loop variable holds it: the pool's
# list, the loop variable and getrefcount's own argument.
_FREE_REFCOUNT = 3


def size_class(nbytes):
    """The bytes of the pooled block that serves a request of `nbytes`.

    `nbytes` (an int, at least 1) rounded up to a multiple of an eighth of
    the largest power of two not above it: eight classes per doubling, at
    most 12.5 % unused.

    Examples
    --------
    >>> from sparsegrad.framework.buffers import size_class
    >>> size_class(1 << 20), size_class((1 << 20) + 1), size_class(3_000_000)
    (1048576, 1179648, 3145728)
    """
    step = 1 << max(int(nbytes).bit_length() - 4, 0)
    return -(-nbytes // step) * step


def _dtype_and_nbytes(shape, dtype):
    """``np.dtype(dtype)`` and the bytes of an array of `shape` of it."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    return dtype, nbytes


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
        (of :func:`size_class` bytes) that nothing else references.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import buffers
    >>> a = buffers.empty((512, 1024), np.float32)
    >>> a.shape, a.dtype, a.flags.c_contiguous
    ((512, 1024), dtype('float32'), True)
    """
    dtype, nbytes = _dtype_and_nbytes(shape, dtype)
    if nbytes < MIN_POOLED_BYTES:
        return np.empty(shape, dtype)
    size = size_class(nbytes)
    with _LOCK:
        bucket = _POOL.setdefault(size, [])
        for block in bucket:
            if sys.getrefcount(block) == _FREE_REFCOUNT:
                return block[:nbytes].view(dtype).reshape(shape)
        block = np.empty(size, np.uint8)
        if _HELD[0] + size <= MAX_POOLED_BYTES:
            bucket.append(block)
            _HELD[0] += size
    return block[:nbytes].view(dtype).reshape(shape)


def empty_like(array, dtype=None):
    """:func:`empty` of the shape of ndarray `array`, of `dtype` (by default
    the dtype of `array`).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import buffers
    >>> buffers.empty_like(np.zeros((2, 3)), np.int32).shape
    (2, 3)
    """
    return empty(array.shape, array.dtype if dtype is None else dtype)


def copy(array, dtype=None):
    """A C-contiguous copy of ndarray `array` in :func:`empty` memory.

    The caller has checked the allocation (:func:`copy_of`).

    Parameters
    ----------
    array : ndarray
    dtype : dtype, optional
        The copy's dtype (a cast as ``casting="unsafe"``); default `array`'s.

    Returns
    -------
    ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import buffers
    >>> buffers.copy(np.arange(4)[::2], np.float32)
    array([0., 2.], dtype=float32)
    """
    out = empty_like(array, dtype)
    np.copyto(out, array, casting="unsafe")
    return out


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        return 1 << 46


def _read_int(path):
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None   # "max": no limit


def _ancestors(path):
    """`path` (a cgroup's path, "/a/b") and the paths above it, "/" included."""
    parts = [p for p in path.split("/") if p]
    return ["/" + "/".join(parts[:k]) for k in range(len(parts), -1, -1)]


def _cgroup_memory_limit():
    """The smallest memory limit of the process's cgroup and of the cgroups
    above it (v1 or v2), or None."""
    candidates = ["/sys/fs/cgroup/memory.max",
                  "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if controllers == "":
            candidates += [f"/sys/fs/cgroup{p}/memory.max" for p in _ancestors(path)]
        elif "memory" in controllers.split(","):
            candidates += [f"/sys/fs/cgroup/memory{p}/memory.limit_in_bytes"
                           for p in _ancestors(path)]
    limits = [v for v in map(_read_int, candidates) if v is not None]
    return min(limits) if limits else None


@functools.lru_cache(maxsize=1)
def _static_limit():
    """(bytes, what): the smaller of physical memory and the cgroup's limit."""
    limit, what = _physical_memory(), "this machine's memory"
    cgroup = _cgroup_memory_limit()
    if cgroup is not None and cgroup < limit:
        limit, what = cgroup, "the memory limit of this process's cgroup"
    return limit, what


# The rlimits on the memory one process maps, and the field of
# /proc/self/statm (in pages) that each is compared with: the whole address
# space, and the private writable mappings (data and heap, with the stack).
_RLIMITS = (("RLIMIT_AS", 0), ("RLIMIT_DATA", 5))


def _address_space_left():
    """``(bytes, name)``: the fewest bytes the process may still map under
    RLIMIT_AS or RLIMIT_DATA, and that limit's name; None where neither is
    set."""
    if resource is None:
        return None
    limits = [(name, field, resource.getrlimit(getattr(resource, name))[0])
              for name, field in _RLIMITS]
    limits = [item for item in limits if item[2] != resource.RLIM_INFINITY]
    if not limits:   # (the usual case: no file to read)
        return None
    try:
        with open("/proc/self/statm") as f:
            pages = [int(n) for n in f.read().split()]
        page = os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        pages, page = [], 0
    left = None
    for name, field, soft in limits:
        used = pages[field] * page if field < len(pages) else 0
        room = max(soft - used, 0)
        if left is None or room < left[0]:
            left = (room, name)
    return left


def memory_limit():
    """The most bytes one call may ask for, and what sets that bound.

    Returns
    -------
    (int, str)
        The smallest of the machine's physical memory, the memory limit of
        the process's cgroup (or of a cgroup above it) and the address space
        left under the process's ``RLIMIT_AS`` / ``RLIMIT_DATA``, and a
        phrase naming it.

    Examples
    --------
    >>> from sparsegrad.framework import buffers
    >>> n, what = buffers.memory_limit()
    >>> n > 0 and isinstance(what, str)
    True
    """
    limit, what = _static_limit()
    left = _address_space_left()
    if left is not None and left[0] < limit:
        limit, what = left[0], f"the memory this process may still map ({left[1]})"
    return limit, what


def nbytes(shape, dtype):
    """Bytes of an array of `shape` and `dtype`, in Python ints (no overflow);
    a negative length counts as 0.

    Parameters
    ----------
    shape : tuple of int
    dtype : dtype

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import buffers
    >>> buffers.nbytes((2**40, 64), np.float32)
    281474976710656
    """
    total = np.dtype(dtype).itemsize
    for n in shape:
        total *= max(int(n), 0)   # a negative length allocates nothing
    return total


def check_allocation(*buffers):
    """Raise before allocating buffers larger than the memory the process has.

    A call whose buffers take a size from the data (the largest segment id,
    a range's total length, a file's header) passes all of them here, before
    it allocates any: NumPy would raise a MemoryError, or the system would
    grant the pages lazily and end the process when they are written.

    Parameters
    ----------
    *buffers : tuple of (shape, dtype, what), or None
        Every buffer the call will allocate from the data: its shape (Python
        ints; may be huge), its dtype, and ``what`` naming the op and the
        argument that sets its size, for the message.  None stands for a
        buffer the call does not need (see :func:`copy_of`).

    Raises
    ------
    InvalidArgumentError
        If the buffers together take more bytes than :func:`memory_limit`
        allows; the message names the largest buffer's ``what``, its shape,
        dtype and size, and the total.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import buffers
    >>> buffers.check_allocation(
    ...     ((2**62,), np.int64, "segment_sum: segment_ids"))
    Traceback (most recent call last):
    ...
    sparsegrad.errors.InvalidArgumentError: segment_sum: segment_ids asks for \
a result of shape (4611686018427387904,) and dtype int64 (36893488147419103232 \
bytes), more than ...
    """
    buffers = [b for b in buffers if b is not None]
    sizes = [nbytes(shape, dtype) for shape, dtype, _ in buffers]
    total = sum(sizes)
    if total < UNCHECKED_BYTES:
        return
    limit, bound = memory_limit()
    if total <= limit:
        return
    k = max(range(len(sizes)), key=sizes.__getitem__)
    shape, dtype, what = buffers[k]
    others = (f"; with the call's other buffers, {total} bytes"
              if len(buffers) > 1 and total != sizes[k] else "")
    raise InvalidArgumentError(
        f"{what} asks for a result of shape {tuple(int(n) for n in shape)} and "
        f"dtype {np.dtype(dtype)} ({sizes[k]} bytes){others}, more than "
        f"{bound} ({limit} bytes)"
    )


def copy_of(array, what, dtype=None):
    """The buffer a C-contiguous copy of `array` (in `dtype`, by default its
    own) takes, for :func:`check_allocation`; None when `array` is
    C-contiguous already.

    A broadcast view (``np.broadcast_to(0, (2**31,))``) costs nothing,
    while its contiguous copy takes the whole shape: a call that makes one
    checks it first.

    Parameters
    ----------
    array : ndarray or cupy array
    what : str
        The op and the argument, for the message.
    dtype : dtype, optional
        The copy's dtype, when it converts.

    Returns
    -------
    tuple of (shape, dtype, what), or None

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import buffers
    >>> buffers.copy_of(np.broadcast_to(0, (2**31,)), "op: indices")
    ((2147483648,), dtype('int64'), 'op: indices')
    >>> buffers.copy_of(np.zeros(3), "op: x") is None
    True
    """
    if array.flags.c_contiguous:
        return None
    return (tuple(array.shape), array.dtype if dtype is None else dtype, what)


def aligned_empty(shape, dtype):
    """An uninitialised C-contiguous array whose first byte starts a cache line.

    NumPy's large arrays start 16 bytes into a 64-byte line, so a 256-byte
    table row spans five lines instead of four, and a kernel that reads
    scattered rows (an embedding lookup, a sparse optimizer update) moves a
    quarter more memory.  Variables and optimizer slots keep their values in
    such arrays.  Takes `shape` and `dtype` as :func:`empty` does; the
    array is writable, its data at a multiple of :data:`CACHE_LINE` bytes.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import buffers
    >>> a = buffers.aligned_empty((1000, 64), np.float32)
    >>> a.ctypes.data % buffers.CACHE_LINE, a.shape, a.flags.c_contiguous
    (0, (1000, 64), True)
    """
    dtype, nbytes = _dtype_and_nbytes(shape, dtype)
    block = np.empty(nbytes + CACHE_LINE, np.uint8)
    offset = (-block.ctypes.data) % CACHE_LINE
    return block[offset : offset + nbytes].view(dtype).reshape(shape)

