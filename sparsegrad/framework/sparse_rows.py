"""Validated front end of the row kernels in ``_kernels/slices.pyx``.

Each function checks and converts its arguments, allocates what the kernel writes,
and calls the kernel with the current thread count.  float32 and float64 values
go to the compiled kernels; other real dtypes (integers, float16) take a NumPy
path with the same results.  Index ranges are always checked here, before
anything is written.

CuPy arrays go to the CUDA twins of the same kernels (``sparsegrad._cuda``),
through the same checks: a range check is one pass on the device and one
flag read back; everything else stays on the device.  Arrays of the two
kinds never mix (``ValueError``).
"""

import operator

import numpy as np

from ..errors import InvalidArgumentError
from . import buffers
from .backend import CPU, array_backend_of, backend_of
from .buffers import check_allocation
from .dtypes import INDEX_DTYPES, can_cast_same_kind, is_kernel_float
from .threads import get_num_threads

__all__ = [
    "index_array",
    "as_index_array",
    "check_in_range",
    "scatter_add",
    "scatter_update",
    "gather_rows",
    "deduplicate",
    "group_rows",
    "group_sum",
    "sorted_segment_splits",
    "first_decrease",
    "device_id_summary",
    "unaliased",
    "module_of",
    "as_array_of",
    "array_backend_of",
    "int_tuple",
    "INT64_MAX",
]


def index_array(indices, name="indices", be=None):
    """`indices` (array_like of any shape) as an int32 or int64 NumPy array.

    The one conversion of index arguments: int32 and int64 arrays are returned
    as they are (no copy); other integer dtypes become int64; an empty
    float64 array (what ``np.asarray([])`` gives) becomes an empty int64 one.

    Parameters
    ----------
    indices : array_like
        The indices, of any shape.
    name : str, default="indices"
        The argument's name in error messages.
    be : Backend, optional
        The backend of `indices`, where the caller has it.

    Returns
    -------
    ndarray
        int32 or int64, the shape of `indices` (a CuPy array stays one).

    Raises
    ------
    InvalidArgumentError
        If `indices` is a ragged nested sequence (``indices must be a
        rectangular array of ints, got the ragged [[0, 1], [2]]``), the dtype
        is not an integer one (the message shows the value), or a uint64
        value does not fit in int64.

    Examples
    --------
    >>> index_array(np.array([1, 2], dtype=np.uint8)).dtype
    dtype('int64')
    """
    if be is None:
        be = backend_of(indices)
    if be.on_gpu:
        array = indices
    else:
        try:
            array = np.asarray(indices)
        except ValueError:   # NumPy's "inhomogeneous shape"
            raise InvalidArgumentError(
                f"{name} must be a rectangular array of ints, got the ragged "
                f"{_shown(indices)}"
            ) from None
    if array.dtype in INDEX_DTYPES:
        return array
    if array.dtype.kind not in "iu" or array.dtype == np.bool_:
        if array.size == 0 and array.dtype.kind == "f":
            return array.astype(np.int64)
        shown = "" if be.on_gpu else f" ({_shown(indices)})"
        raise InvalidArgumentError(
            f"{name} must be int32 or int64, got dtype {array.dtype}{shown}"
        )
    if array.dtype == np.uint64 and array.size and int(array.max()) > INT64_MAX:
        raise InvalidArgumentError(
            f"{name} holds {int(array.max())}, which does not fit in int64"
        )
    # a broadcast view of narrow ints costs nothing; its int64 copy may
    check_allocation((array.shape, np.int64, name))
    return array.astype(np.int64)


def int_tuple(entries):
    """`entries` as a tuple of Python ints (each through ``operator.index``:
    ints, NumPy integers, 0-d integer arrays), or None when one is not an
    integer.

    Examples
    --------
    >>> int_tuple([2, np.int64(3)]), int_tuple((2, 1.5))
    ((2, 3), None)
    """
    try:
        return tuple(operator.index(d) for d in entries)
    except TypeError:
        return None


def _shown(value, limit=60):
    """`value` for a message: its repr, cut to `limit` characters."""
    text = repr(value)
    if isinstance(value, np.ndarray):
        text = np.array2string(value, threshold=8, separator=", ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def as_index_array(indices, name="indices", be=None):
    """`indices` as a 1-D C-contiguous int32 or int64 NumPy array
    (:func:`index_array`, then a rank check).

    Raises
    ------
    InvalidArgumentError
        If `indices` is not 1-D, or not of an integer dtype.

    A CuPy array stays on the device (a CuPy array comes back); `be`, where
    the caller has it, is its backend.
    """
    if be is None:
        be = backend_of(indices)
    array = indices if be.on_gpu else np.asarray(indices)
    if array.dtype not in INDEX_DTYPES:
        array = index_array(array, name, be)
    if array.ndim != 1:
        raise InvalidArgumentError(
            f"{name} must be 1-D, got shape {tuple(array.shape)}"
        )
    if array.flags.c_contiguous:
        return array
    check_allocation(buffers.copy_of(array, name))   # e.g. a broadcast view
    return be.xp.ascontiguousarray(array)


def module_of(*arrays):
    """``numpy`` or ``cupy``: the module of the arrays among `arrays` (lists,
    scalars and None do not count; they are converted to that module):
    ``array_backend_of(*arrays).xp``.

    Raises
    ------
    ValueError
        If NumPy and CuPy arrays are mixed.
    """
    return array_backend_of(*arrays).xp


def as_array_of(xp, value):
    """`value` as an array of module `xp` (no copy when it already is one)."""
    if xp is np or type(value) is not xp.ndarray:
        return xp.asarray(value)
    return value   # (a CuPy array of another device stays there)


def check_in_range(indices, n_rows, name="indices", be=None):
    """Raise unless every index lies in ``[0, n_rows)``.

    The one range check of index arguments, in TensorFlow's gather and
    scatter message: the first offending position and its value,
    ``indices[3] = 7 is not in [0, 5)`` (``indices[1,2] = ...`` for 2-D
    indices, ``indices = ...`` for a scalar).  (The raw training ops raise
    TensorFlow's own text for them instead: ``Index 7 at offset 3 in indices
    is out of range``.)

    Parameters
    ----------
    indices : ndarray of an integer dtype
        Any shape.
    n_rows : int
        The exclusive upper bound.
    name : str, default="indices"
        The argument's name in the message.
    be : Backend, optional
        The backend of `indices`, where the caller has it.

    Raises
    ------
    InvalidArgumentError
        If an index is negative or at least `n_rows`.
    """
    # (a view: a strided or broadcast array is scanned as it is, not copied)
    bad = first_out_of_range(
        indices.reshape(-1) if indices.flags.c_contiguous else indices, n_rows, be)
    if bad is None:
        return
    position = np.unravel_index(bad, indices.shape)
    value = int(indices[position])  # (of a CuPy array: read back, an error)
    where = "[" + ",".join(str(int(i)) for i in position) + "]" if indices.ndim else ""
    raise InvalidArgumentError(f"{name}{where} = {value} is not in [0, {n_rows})")


#: The largest int64, as a Python int.
INT64_MAX = int(np.iinfo(np.int64).max)


def first_out_of_range(indices, n_rows, be=None):
    """The position of the first index outside ``[0, n_rows)``, or None.

    One compiled pass for int32/int64 arrays (the common, valid case); the
    position is searched only when something is out of range.  For a CuPy
    array the pass runs on the device and one flag comes back; the position
    of a bad index is searched on a host copy.  `be`, where the caller has
    it, is the backend of `indices`.
    """
    if indices.size == 0:
        return None
    if be is None:
        be = backend_of(indices)
    if any(step == 0 and n > 1 for step, n in zip(indices.strides, indices.shape)):
        return _first_out_of_range_broadcast(indices, n_rows, be)
    if be.on_gpu:
        kernel_ok = (indices.dtype in INDEX_DTYPES and indices.ndim == 1
                     and 0 <= n_rows <= INT64_MAX)
        if kernel_ok and be.kernels("slices").all_in_range(
                be.xp.ascontiguousarray(indices), n_rows):
            return None
        indices = indices.get()
    if (
        indices.dtype in INDEX_DTYPES
        and indices.ndim == 1
        and indices.flags.c_contiguous
        and 0 <= n_rows <= INT64_MAX
    ):
        if CPU.kernels("slices").all_in_range(indices, n_rows, get_num_threads()):
            return None
    elif indices.min() >= 0 and indices.max() < n_rows:
        return None
    return int(np.flatnonzero((indices < 0) | (indices >= n_rows))[0])


def _first_out_of_range_broadcast(indices, n_rows, be):
    """:func:`first_out_of_range` of a view broadcast along some axes (zero
    strides): the values along such an axis are all the same, so the first
    bad one has position 0 there; only the distinct values are scanned, and
    a broadcast view is never copied."""
    distinct = indices[tuple(slice(0, 1) if step == 0 else slice(None)
                             for step in indices.strides)]   # a view
    bad = first_out_of_range(distinct, n_rows, be)
    if bad is None:
        return None
    return int(np.ravel_multi_index(np.unravel_index(bad, distinct.shape),
                                    indices.shape))


def _rows_2d(array, n, be):
    """View `array` of shape (n, ...) as C-contiguous (n, row_width)."""
    return be.xp.ascontiguousarray(array).reshape(n, -1)


def _check_rows(out, indices, values, what):
    if out.ndim == 0:
        raise InvalidArgumentError(f"{what}: the target must be at least 1-D")
    if values.shape != indices.shape + out.shape[1:]:
        raise InvalidArgumentError(
            f"{what}: values of shape {tuple(values.shape)} do not match indices "
            f"of shape {tuple(indices.shape)} and rows of shape "
            f"{tuple(out.shape[1:])}; expected {indices.shape + out.shape[1:]}"
        )
    if not can_cast_same_kind(values.dtype, out.dtype):
        raise InvalidArgumentError(
            f"{what}: values of dtype {values.dtype} cannot be cast to the "
            f"target's dtype {out.dtype}"
        )


def unaliased(array, *written, be=None):
    """`array`, or a copy of it where it may share memory with one of the
    `written` arrays (`be`, where the caller has it: their backend).

    Kernels write those on several threads while they read `array`: reading
    rows another thread is writing would make the result depend on the thread
    count (``v.scatter_add(IndexedSlices(v.value()[:2], ...))``), and indices
    changing under a kernel could send it outside its target.  NumPy's
    ``np.add.at`` copies an overlapping operand the same way.  (On the GPU
    the blocks of a launch read and write concurrently just the same.)
    """
    shares = (be or backend_of(array)).xp.may_share_memory
    for buffer in written:
        if shares(array, buffer):
            return array.copy()
    return array


def _scatter(out, indices, values, name, be, what):
    """:func:`scatter_add` (`what` ``"scatter_add"``) or :func:`scatter_update`:
    every check before anything is written."""
    if be is None:
        be = array_backend_of(out, indices, values)
    if not isinstance(out, be.xp.ndarray):
        raise TypeError(f"{what}: the target must be a numpy array")
    # CuPy arrays have no read-only flag
    if not out.flags.c_contiguous or not getattr(out.flags, "writeable", True):
        raise InvalidArgumentError(
            f"{what}: the target must be a writeable C-contiguous array"
        )
    indices = as_index_array(as_array_of(be.xp, indices), name, be)
    values = as_array_of(be.xp, values)
    _check_rows(out, indices, values, what)
    indices = unaliased(indices, out, be=be)
    values = unaliased(values, out, be=be)
    check_in_range(indices, out.shape[0], name, be)
    values = values.astype(out.dtype, copy=False)
    if indices.size == 0:
        return out
    if is_kernel_float(out.dtype):
        getattr(be.kernels("slices"), what)(
            _rows_2d(values, indices.shape[0], be), indices,
            out.reshape(out.shape[0], -1), get_num_threads())
    elif what == "scatter_update":
        # Keep the last occurrence of each index, then one plain assignment.
        reversed_unique, position = be.xp.unique(indices[::-1], return_index=True)
        out[reversed_unique] = values[::-1][position]
    elif not be.on_gpu:
        np.add.at(out, indices, values)
    else:
        # integers on the device: exact in any order
        _add_at(be.xp, out, indices, values)
    return out


def scatter_add(out, indices, values, name="indices", be=None):
    """``out[indices[k]] += values[k]`` in place, duplicates accumulating.

    `out` is a writeable C-contiguous array of shape ``(n_rows, ...)``; `values`
    has shape ``(len(indices),) + out.shape[1:]`` and is cast to ``out.dtype``.
    Nothing is written when any check fails.  `be`, where the caller has it,
    is the backend of the arrays.
    """
    return _scatter(out, indices, values, name, be, "scatter_add")


def scatter_update(out, indices, values, name="indices", be=None):
    """``out[indices[k]] = values[k]`` in place, k in order: the last duplicate
    wins.  Checks as :func:`scatter_add`."""
    return _scatter(out, indices, values, name, be, "scatter_update")


def _add_at(xp, out, indices, values):
    """``out[indices] += values`` on the device, duplicates accumulating (for
    integer values: exact in any order)."""
    if hasattr(xp.add, "at"):
        xp.add.at(out, indices, values)
    else:  # CuPy before ufunc.at
        import cupyx  # only ever asked for with CuPy arrays at hand

        cupyx.scatter_add(out, indices, values)


# Below this many gathered bytes, NumPy's take (one thread) is as fast.
_GATHER_MIN_BYTES = 1 << 18


def gather_rows(table, indices, be=None):
    """``table[indices]`` along axis 0, for a C-contiguous `table` of any dtype.

    Large gathers (the rows of an embedding table) copy the rows on the
    kernel threads, asking for later rows early; small ones take
    ``np.take``.  The indices must be in ``[0, len(table))`` (checked by the
    caller).

    Parameters
    ----------
    table : ndarray of shape (n_rows, ...), C-contiguous
    indices : ndarray of int32 or int64, any shape
    be : Backend, optional
        The backend of `table` and `indices`, where the caller has it.

    Returns
    -------
    ndarray of shape ``indices.shape + table.shape[1:]``, the dtype of `table`

    Raises
    ------
    InvalidArgumentError
        If that result needs more memory than the process may allocate.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import sparse_rows
    >>> sparse_rows.gather_rows(np.arange(6.0).reshape(3, 2), np.array([2, 0]))
    array([[4., 5.],
           [0., 1.]])
    """
    row_bytes = table.dtype.itemsize
    for n in table.shape[1:]:
        row_bytes *= n
    # one row per index, whatever the table's size: (many ids) x (wide rows)
    check_allocation((indices.shape + table.shape[1:], table.dtype, "gather: indices"))
    if be is None:
        be = backend_of(table)
    if be.on_gpu:
        return _gather_rows_device(table, indices, row_bytes, be)
    if indices.size * row_bytes < _GATHER_MIN_BYTES or table.dtype.hasobject:
        return np.take(table, indices, axis=0)
    out = buffers.empty(indices.shape + table.shape[1:], table.dtype)
    flat = indices.reshape(-1)
    if not flat.flags.c_contiguous:
        flat = np.ascontiguousarray(flat)
    be.kernels("slices").gather_rows(
        table.reshape(table.shape[0], -1).view(np.uint8), flat,
        out.reshape(flat.shape[0], -1).view(np.uint8), get_num_threads())
    return out


def _gather_rows_device(table, indices, row_bytes, be):
    """gather_rows for CuPy arrays: the CUDA kernel, whatever the size."""
    xp = be.xp
    shape = indices.shape + table.shape[1:]
    if indices.size == 0 or row_bytes == 0:
        return xp.zeros(shape, table.dtype)
    out = xp.empty(shape, table.dtype)
    flat = xp.ascontiguousarray(indices.reshape(-1))
    table = xp.ascontiguousarray(table)
    be.kernels("slices").gather_rows(
        table.reshape(table.shape[0], -1).view(np.uint8), flat,
        out.reshape(flat.shape[0], -1).view(np.uint8), 1)
    return out


def group_rows(indices, max_index, be=None):
    """Group equal indices stably.

    Returns ``(unique, order, starts)``: the sorted distinct indices, a
    permutation of ``range(len(indices))`` that lists the positions of each
    distinct index in their original order, and the bounds of each group in
    ``order`` (``len(unique) + 1`` entries).  Indices must be non-negative and at
    most `max_index` (checked by the caller).  Cost O(n), for the optimizers that
    coalesce duplicate rows too.  CuPy indices are grouped on the device
    (`max_index` unused there).  `be`, where the caller has it, is the
    backend of `indices`.
    """
    if be is None:
        be = backend_of(indices)
    if be.on_gpu:
        return be.kernels("sort").group_rows(indices)
    n = indices.shape[0]
    # recycled blocks: fresh ones would cost a page fault per 4 KiB, which on
    # a virtual machine is more than the sort itself
    order = buffers.empty((n,), np.int64)
    unique = buffers.empty((n,), indices.dtype)
    starts = buffers.empty((n + 1,), np.int64)
    scratch = buffers.empty((4, n), np.int64)
    n_unique = be.kernels("slices").group_stable(
        indices, int(max_index), scratch, order, unique, starts
    )
    del scratch
    return unique[:n_unique], order, starts[: n_unique + 1]


def deduplicate(indices, values, max_index=None, be=None):
    """Sum the rows of `values` that share an index.

    Parameters
    ----------
    indices : ndarray of shape (n,), int32 or int64, non-negative
    values : ndarray of shape (n, ...)
    max_index : int, optional
        An upper bound of the indices (speeds up the sort); computed if absent.
    be : Backend, optional
        The backend of the arrays, where the caller has it.

    Returns
    -------
    unique : ndarray of shape (n_unique,), the dtype of `indices`
        The distinct indices, sorted.
    summed : ndarray of shape (n_unique, ...), the dtype of `values`
        ``summed[u]`` is the sum, in the original order, of the rows of
        `values` whose index is ``unique[u]``.
    """
    if be is None:
        be = array_backend_of(indices, values)
    indices = as_index_array(as_array_of(be.xp, indices), be=be)
    values = as_array_of(be.xp, values)
    n = indices.shape[0]
    if values.shape[:1] != (n,):
        raise InvalidArgumentError(
            f"deduplicate: values of shape {tuple(values.shape)} do not have one "
            f"row per index ({n} indices)"
        )
    if n == 0:
        return indices.copy(), values.copy()
    if bool(indices.min() < 0):
        check_in_range(indices, np.iinfo(indices.dtype).max, be=be)
    if max_index is None and not be.on_gpu:
        max_index = int(indices.max())
    unique, order, starts = group_rows(indices, max_index, be)
    return unique, group_sum(values, order, starts, be)


def group_sum(values, order, starts, be=None):
    """The sums of groups of rows of `values`, each from zero in group order.

    Parameters
    ----------
    values : ndarray of shape (n, ...)
    order, starts : ndarray of int64
        As :func:`group_rows` gives them: group ``g`` is the rows
        ``values[order[starts[g]:starts[g + 1]]]``.
    be : Backend, optional
        The backend of the arrays, where the caller has it.

    Returns
    -------
    ndarray of shape (len(starts) - 1, ...), the dtype of `values`
        ``out[g] = ((0 + values[order[starts[g]]]) + ...)``, added in that
        order (the bits of ``np.add.at`` into zeros), for CuPy arguments
        too (a CuPy array then: float32/64 by the kernel, float16 one row of
        each group per pass, integers in any order, which is exact).

    Examples
    --------
    >>> group_sum(np.array([1.0, 2.0, 4.0]), np.array([0, 2, 1]), np.array([0, 2, 3]))
    array([5., 2.])
    """
    if be is None:
        be = array_backend_of(values, order, starts)
    xp = be.xp
    n, n_groups = values.shape[0], starts.shape[0] - 1
    summed = xp.zeros((n_groups,) + values.shape[1:], dtype=values.dtype)
    if n == 0 or n_groups == 0:
        return summed
    if is_kernel_float(values.dtype):
        be.kernels("slices").gather_group_sum(
            _rows_2d(values, n, be), order, starts,
            summed.reshape(n_groups, -1), get_num_threads(),
        )
    elif not be.on_gpu:
        group_of = np.repeat(np.arange(n_groups), np.diff(starts))
        np.add.at(summed, group_of, values[order])
    elif values.dtype.kind in "iub":
        # integers on the device: exact in any order
        group_of = xp.searchsorted(starts[1:], xp.arange(n), side="right")
        _add_at(xp, summed, group_of, values[order])
    else:
        # float16 on the device: no atomics (their order is the scheduler's);
        # the k-th row of every group is added in round k, the CPU's roundings
        sizes = starts[1:] - starts[:-1]
        for k in range(int(sizes.max())):
            live = xp.flatnonzero(sizes > k)
            summed[live] = summed[live] + values[order[starts[live] + k]]
    return summed


def device_id_summary(ids, be=None):
    """``(min, max, first decrease or n, first, last)`` of 1-D CuPy ids, as
    Python ints: one pass on the device, one small array read back.

    For an empty array: the int64 extremes, then ``0, 0, 0``.  Callers that
    need the ids' last value before :func:`sorted_segment_splits` read this
    once and pass it on (``summary=``).  `be`, where the caller has it, is
    the backend of `ids` (the GPU one).
    """
    kernels = (be or backend_of(ids)).kernels("segment")
    return kernels.read_summaries(kernels.summarize(ids))[0]


def sorted_segment_splits(segment_ids, num_segments=None, summary=None, also=None,
                          what="segment_ids", be=None):
    """Row splits of sorted segment ids, with TensorFlow's checks.

    The one conversion of sorted segment ids: segment ``s`` holds the rows
    ``[splits[s], splits[s + 1])``.  Cost O(n + n_segments), one parallel
    pass.  CuPy ids are checked on the device (one summary read back) and
    their splits come back on the device; when a check fails, the checks
    below run on a host copy and raise the same error as for NumPy ids.

    Parameters
    ----------
    segment_ids : ndarray of shape (n,), int32 or int64, C-contiguous
        Non-decreasing and non-negative (the caller converted it with
        :func:`as_index_array`).  A NumPy or a CuPy array.
    num_segments : int, optional
        The number of segments; by default ``segment_ids[-1] + 1`` (0 when
        there are no ids).
    summary : tuple of int, optional
        For CuPy ids, their :func:`device_id_summary` when the caller has
        read it already (it is read here otherwise); ignored for NumPy ids.
    also : callable, optional
        ``also(n_segments)``: the buffers the caller will allocate for that
        many segments (a list of ``(shape, dtype, what)`` or None, as
        :func:`~sparsegrad.framework.buffers.check_allocation` takes them),
        checked together with the splits before they are allocated.
    what : str, default="segment_ids"
        The op and the argument that set the number of segments, for the
        message of that check.
    be : Backend, optional
        The backend of `segment_ids`, where the caller has it.

    Returns
    -------
    ndarray of shape (n_segments + 1,), int64
        Of the ids' module.

    Raises
    ------
    InvalidArgumentError
        With TensorFlow's messages and in its order: a negative last id or
        `num_segments` ("segment ids must be >= 0"), an id at least
        `num_segments` ("segment ids must be < num_segments"), then, scanning
        runs of equal ids from
        the left, a decrease ("segment ids are not increasing") or an id out of
        range ("Segment id -1 out of range [0, 2), possibly because
        'segment_ids' input is not sorted.").  Before those, if the splits and
        the buffers of `also` need more memory than the process may allocate
        (the message names `what` and the size).

    Examples
    --------
    >>> sorted_segment_splits(np.array([0, 0, 2, 2, 2]))
    array([0, 2, 2, 5])
    >>> sorted_segment_splits(np.array([1, 1]), num_segments=3)
    array([0, 0, 2, 2])
    """
    if be is None:
        be = backend_of(segment_ids)
    if be.on_gpu:
        return _sorted_segment_splits_device(segment_ids, num_segments, summary,
                                             also, what, be)
    n = segment_ids.shape[0]
    last_plus_one = int(segment_ids[-1]) + 1 if n else 0
    if last_plus_one <= 0 < n:
        raise InvalidArgumentError("segment ids must be >= 0")
    if num_segments is None:
        n_segments = last_plus_one
    else:
        n_segments = int(num_segments)
        if n_segments < 0:
            raise InvalidArgumentError("segment ids must be >= 0")
        if n_segments < last_plus_one:
            raise InvalidArgumentError("segment ids must be < num_segments")
    _check_splits_allocation(n_segments, also, what)
    splits = np.empty(n_segments + 1, dtype=np.int64)
    decrease = be.kernels("segment").sorted_splits(segment_ids, splits,
                                                   get_num_threads())
    # TensorFlow scans runs of equal ids: at the end of each run it first
    # checks that the next id is larger, then that the run's id is in range.
    # The ids before a decrease are sorted, so the runs it checks before
    # reaching the decrease are found by binary search.
    head = segment_ids if decrease < 0 else segment_ids[:decrease]
    if decrease >= 0:
        # The run that holds position decrease - 1 ends at the decrease; the
        # runs before it are checked for range first.
        head = head[: np.searchsorted(head, head[-1], side="left")]
    if head.shape[0]:
        if head[0] < 0:
            bad = int(head[0])
        elif head[-1] >= n_segments:
            bad = int(head[np.searchsorted(head, n_segments, side="left")])
        else:
            bad = None
        if bad is not None:
            raise InvalidArgumentError(
                f"Segment id {bad} out of range [0, {n_segments}), possibly "
                f"because 'segment_ids' input is not sorted."
            )
    if decrease >= 0:
        raise InvalidArgumentError("segment ids are not increasing")
    return splits


def _check_splits_allocation(n_segments, also, what):
    """check_allocation of the splits of `n_segments` segments and of the
    caller's buffers for them, all together."""
    check_allocation(((n_segments + 1,), np.int64, what),
                     *(also(n_segments) if also is not None else ()))


def _sorted_segment_splits_device(segment_ids, num_segments, summary, also, what,
                                  be):
    """sorted_segment_splits of CuPy ids: decided on their summary; a bad
    argument raises through the host checks (one set of messages)."""
    if summary is None:
        summary = device_id_summary(segment_ids, be)
    n = segment_ids.shape[0]
    _, _, decrease, first, last = summary
    last_plus_one = last + 1 if n else 0
    n_segments = last_plus_one if num_segments is None else int(num_segments)
    unsorted = n and (first < 0 or last < 0 or decrease < n)
    if unsorted or n_segments < max(last_plus_one, 0):
        sorted_segment_splits(segment_ids.get(), num_segments)
        raise AssertionError("segment ids failed a check that found no error")
    _check_splits_allocation(n_segments, also, what)
    return be.kernels("segment").splits_of_sorted(segment_ids, n_segments)


def first_decrease(a):
    """The first position where a 1-D array (NumPy or CuPy) decreases, or None.

    Neighbours are compared, never subtracted, so int64 extremes cannot wrap
    into an order.  The check of row splits, ``indptr`` and sorted row ids.

    Parameters
    ----------
    a : ndarray, 1-D

    Returns
    -------
    int or None
        The smallest ``k`` with ``a[k + 1] < a[k]``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework import sparse_rows
    >>> sparse_rows.first_decrease(np.array([0, 2**63 - 1, -2, 8]))
    1
    >>> sparse_rows.first_decrease(np.array([0, 3, 3])) is None
    True
    """
    if a.shape[0] < 2:
        return None
    falls = a[1:] < a[:-1]
    return int(falls.argmax()) if bool(falls.any()) else None
