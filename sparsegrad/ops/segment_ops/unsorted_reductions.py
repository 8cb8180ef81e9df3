"""Unsorted segment reductions (``unsorted_segment_*``): ids in any order
(negative ones dropped), ``num_segments`` rows; their gradients are in
:mod:`.gradients`."""

import numpy as np

from ...errors import InvalidArgumentError
from ...framework import buffers, dispatch
from ...framework.buffers import check_allocation
from ...framework.dtypes import is_floating, is_half, is_kernel_float
from ...framework.tensor import wrap
from ...framework.threads import get_num_threads
from .. import array_ops
from .._device import unsorted_segment_reduce
from .._helpers import backend_of_arguments
from ..math_ops.arithmetic import real_divide
from ..segment_shared import with_sections
from .common import (
    MAX,
    MIN,
    PROD,
    SUM,
    UFUNC,
    check_below,
    checked_num_segments,
    data_tensor,
    fill_value,
    half_buffers,
    ids_array,
    record_reduction,
    rows_2d,
    segment_counts,
)

__all__ = [
    "unsorted_segment_sum", "unsorted_segment_max", "unsorted_segment_min",
    "unsorted_segment_prod", "unsorted_segment_mean", "unsorted_segment_sqrt_n",
    "unsorted_forward", "UNSORTED_TYPES", "unsorted_segment_reduce_rows",
]

UNSORTED_TYPES = {
    SUM: "UnsortedSegmentSum", MAX: "UnsortedSegmentMax",
    MIN: "UnsortedSegmentMin", PROD: "UnsortedSegmentProd",
}

_PARAMETERS = """\
Parameters
----------
data : array_like, Tensor or Variable
    A real dtype.  float16 and bfloat16 data are reduced in float32 and
    the result rounded once to their dtype (host arrays; float16 CuPy data
    is refused).
segment_ids : array_like or Tensor, int16, int32 or int64
    Any shape that is a prefix of ``data.shape``; ids below
    `num_segments` (negative ids are dropped).
num_segments : int or 0-d integer array_like
    Non-negative.
name : str, optional
    Ignored (TensorFlow compatibility).
"""

_RESULT = """\
Returns
-------
Tensor of shape ``(num_segments,) + data.shape[segment_ids.ndim:]`` and
the dtype of `data`.

Raises
------
InvalidArgumentError
    With TensorFlow's messages: the shapes do not match ("data.shape =
    [3,4] does not start with segment_ids.shape = [2]"), an id is too
    large ("segment_ids[1] = 5 is out of range [0, 2)"), `num_segments`
    is negative ("Input num_segments == -1 must not be negative.") or not
    an integer scalar, or asks for more memory than the process may
    allocate (checked before allocating).
"""


def _unsorted_args(data, segment_ids, n_segments, what):
    """(data Tensor, ids array, n_segments, backend) after every check."""
    be = backend_of_arguments(data, segment_ids)  # (no mixing of host and device)
    d = data_tensor(data, what, be)
    ids = ids_array(segment_ids, what, be)
    n_segments = checked_num_segments(n_segments, what)
    if d.shape[: ids.ndim] != ids.shape:
        raise InvalidArgumentError(
            f"data.shape = {_shape_text(d.shape)} does not start with "
            f"segment_ids.shape = {_shape_text(ids.shape)}"
        )
    return d, ids, n_segments, be


def _shape_text(shape):
    return "[" + ",".join(str(int(k)) for k in shape) + "]"


def _unsorted_reduce(data, segment_ids, num_segments, op, what):
    d, ids, n_segments, be = _unsorted_args(data, segment_ids, num_segments, what)
    check_allocation(*_unsorted_buffers(d, ids, n_segments, op, what))
    return _reduce_checked(be, d, ids, n_segments, op)


def _reduce_checked(be, d, ids, n_segments, op):
    """The recorded reduction of checked arguments (their buffers checked
    too) on backend `be`; half host data is reduced in float32 (a recorded
    cast) and the result rounded once (cast back)."""
    if is_half(d.dtype) and not be.on_gpu:
        reduced = _reduce_recorded(be, array_ops.cast(d, np.float32), ids,
                                   n_segments, op, fill_dtype=d.dtype)
        return array_ops.cast(reduced, d.dtype)
    return _reduce_recorded(be, d, ids, n_segments, op)


def _reduce_recorded(be, d, ids, n_segments, op, fill_dtype=None):
    """_reduce_checked of data `d` of the dtype it is reduced in; the empty
    segments of max and min get the bounds of `fill_dtype` (default: d's)."""
    row_shape = d.shape[ids.ndim:]
    flat_ids = be.xp.ascontiguousarray(ids.reshape(-1))
    if ids.ndim != 1:
        if not be.on_gpu:  # (the device path checks with its one read back)
            check_below(ids, n_segments)  # reports the multi-dimensional position
        d = array_ops.reshape(d, (flat_ids.shape[0],) + row_shape)
    out = unsorted_forward(be, d._value, flat_ids, n_segments, op, shaped_ids=ids,
                           fill_dtype=fill_dtype)
    return record_reduction(UNSORTED_TYPES[op], d, flat_ids,
                            out.reshape((n_segments,) + row_shape),
                            {"num_segments": n_segments})


def unsorted_segment_reduce_rows(data, row_splits, row_ids, kind):
    """``unsorted_segment_<kind>(data, row_ids, len(row_splits) - 1)`` where
    `row_ids` are the row ids of `row_splits`, valid splits of ``len(data)``
    rows (a RaggedTensor's, checked at its construction).

    Float32 and float64 data are reduced from the splits, one pass over the
    data and the splits (``segment_reduce_splits``, on the host or the GPU:
    the bits of the reduction by the ids); other dtypes by the ids.
    Recorded as the unsorted op, whose gradient reads `row_ids`.

    Parameters
    ----------
    data : Tensor or array_like
        ``(len(row_ids), ...)``, a real dtype.
    row_splits : ndarray of int32 or int64
        Non-decreasing from 0 to ``len(row_ids)``.
    row_ids : ndarray of int32 or int64
        The row of each row of `data`.
    kind : {"sum", "max", "min", "prod"}

    Returns
    -------
    Tensor of shape ``(len(row_splits) - 1,) + data.shape[1:]``

    Examples
    --------
    >>> from sparsegrad.ops.segment_ops.unsorted_reductions import (
    ...     unsorted_segment_reduce_rows)
    >>> unsorted_segment_reduce_rows(
    ...     np.array([1.0, 2.0, 4.0]), np.array([0, 2, 2, 3]),
    ...     np.array([0, 0, 2]), "sum").numpy()
    array([3., 0., 4.])
    """
    what = f"unsorted_segment_{kind}"
    op = {"sum": SUM, "max": MAX, "min": MIN, "prod": PROD}[kind]
    n_segments = row_splits.shape[0] - 1
    d, ids, n_segments, be = _unsorted_args(data, row_ids, n_segments, what)
    check_allocation(*_unsorted_buffers(d, ids, n_segments, op, what))
    if not is_kernel_float(d.dtype) or ids.ndim != 1:
        return _reduce_checked(be, d, ids, n_segments, op)
    x = rows_2d(be, d._value, ids.shape[0])
    out = be.xp.empty((n_segments, x.shape[1]), dtype=x.dtype)
    be.kernels("segment").segment_reduce_splits(
        x, row_splits, op, fill_value(op, x.dtype, unsorted=True), True, out,
        get_num_threads())
    return record_reduction(UNSORTED_TYPES[op], d, ids,
                            out.reshape((n_segments,) + d.shape[1:]),
                            {"num_segments": n_segments})


def _unsorted_buffers(d, ids, n_segments, op, what):
    """What an unsorted reduction allocates, for ``check_allocation``: the
    result, the NaN counts of the NumPy path's max and min, and contiguous
    copies of broadcast (or other strided) arguments."""
    shape = (n_segments,) + d.shape[ids.ndim:]
    sized = f"{what}: num_segments"
    if is_half(d.dtype):  # reduced in float32 by the kernels
        return [(shape, d.dtype, sized),
                buffers.copy_of(ids, f"{what}: segment_ids"),
                *half_buffers(d, shape, sized)]
    nan_counts = (op in (MAX, MIN) and d.dtype.kind == "f"
                  and not is_kernel_float(d.dtype))
    return [(shape, d.dtype, sized),
            (shape, np.int64, sized) if nan_counts else None,
            buffers.copy_of(ids, f"{what}: segment_ids"),
            buffers.copy_of(d._value, f"{what}: data")]


def unsorted_forward(be, data, ids, n_segments, op, shaped_ids=None,
                     fill_dtype=None):
    """The unsorted reduction of `data` (n, ...) by 1-D `ids` as an
    (n_segments, width) array; raises for an id >= n_segments before writing
    anything the caller sees (`shaped_ids`: the ids as the caller shaped
    them, for the position in the message).  Empty segments of max and min
    get the bounds of `fill_dtype` (default: data's dtype; float32 data
    reduced for half data gets the half type's, which float32 holds)."""
    fill = fill_value(op, np.dtype(fill_dtype or data.dtype), unsorted=True)
    if be.on_gpu:
        return unsorted_segment_reduce(
            be, data, ids, n_segments, op, fill, check_below, shaped_ids)
    n = ids.shape[0]
    x = rows_2d(be, data, n)
    out = np.empty((n_segments, x.shape[1]), dtype=x.dtype)
    if n == 0 or x.shape[1] == 0 or n_segments == 0:
        check_below(ids, n_segments)
        out.fill(fill)
        return out
    threads = get_num_threads()
    kernels = be.kernels("segment")
    kernel = is_kernel_float(x.dtype)
    # Sorted ids (what ragged rows give) are reduced in one pass, checks
    # included; otherwise that pass stops early, and each thread scatters the
    # rows of its own range of segments (all in the rows' order).
    if kernel and not kernels.segment_reduce_ids(x, ids, op, fill, True, out,
                                                  threads):
        if ids[-1] < 0:
            out.fill(fill)
        return out
    out.fill(fill)
    if kernel:
        if kernels.scatter_reduce(x, ids, op, out, threads):
            check_below(ids, n_segments)
        return out
    check_below(ids, n_segments)
    keep = ids >= 0
    UFUNC[op].at(out, ids[keep], x[keep])
    if op in (MAX, MIN) and x.dtype.kind == "f":
        nan_rows = np.isnan(x[keep])
        if nan_rows.any():
            has_nan = np.zeros(out.shape, dtype=np.int64)
            np.add.at(has_nan, ids[keep], nan_rows)
            out[has_nan > 0] = np.nan
    return out


@dispatch.api
@with_sections(parameters=_PARAMETERS, result=_RESULT)
def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sum the entries of `data` that share a segment id, ids in any order.

    ``output[s] = sum(data[p] for positions p with segment_ids[p] == s)``,
    in the order of the positions, in the dtype of `data` (in float32 for
    float16 and bfloat16 data, then rounded once); negative ids are
    dropped (their data is ignored).  Sorted ids are reduced in one pass;
    otherwise the ids are grouped first (a stable O(n) radix sort).

    {parameters}

    {result}

    Notes
    -----
    The gradient w.r.t. `data` is ``gather(upstream, segment_ids)`` with
    zeros for the negative ids; an IndexedSlices upstream is not densified.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> c = [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [4.0, 3.0, 2.0, 1.0]]
    >>> sg.math.unsorted_segment_sum(c, [0, 1, 0], num_segments=2).numpy()
    array([[5., 5., 5., 5.],
           [5., 6., 7., 8.]])
    >>> sg.math.unsorted_segment_sum([1.0, 2.0, 3.0], [2, -1, 2], 3).numpy()
    array([0., 0., 4.])
    """
    del name
    return _unsorted_reduce(data, segment_ids, num_segments, SUM,
                            "unsorted_segment_sum")


@dispatch.api
@with_sections(parameters=_PARAMETERS, result=_RESULT)
def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """The elementwise maximum of the entries of `data` that share a segment id.

    Negative ids are dropped; NaN propagates; segments without entries give
    the lowest finite value of the dtype (float32 ``-3.4028235e38``).

    {parameters}

    {result}

    Notes
    -----
    The gradient is shared equally among the elements equal to their
    segment's maximum.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> import numpy as np
    >>> x = np.array([1.0, 5.0, 3.0], dtype=np.float32)
    >>> sg.math.unsorted_segment_max(x, [0, 0, 2], 3).numpy()
    array([ 5.0000000e+00, -3.4028235e+38,  3.0000000e+00], dtype=float32)
    """
    del name
    return _unsorted_reduce(data, segment_ids, num_segments, MAX,
                            "unsorted_segment_max")


@dispatch.api
@with_sections(parameters=_PARAMETERS, result=_RESULT)
def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """The elementwise minimum of the entries of `data` that share a segment id.

    Negative ids are dropped; NaN propagates; segments without entries give
    the highest finite value of the dtype (int32 ``2147483647``).

    {parameters}

    {result}

    Examples
    --------
    >>> import sparsegrad as sg
    >>> import numpy as np
    >>> x = np.array([4, 2, 7], dtype=np.int32)
    >>> sg.math.unsorted_segment_min(x, [1, 1, -1], 3).numpy()
    array([2147483647,          2, 2147483647], dtype=int32)
    """
    del name
    return _unsorted_reduce(data, segment_ids, num_segments, MIN,
                            "unsorted_segment_min")


@dispatch.api
@with_sections(parameters=_PARAMETERS, result=_RESULT)
def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """The elementwise product of the entries of `data` that share a segment id.

    Negative ids are dropped; segments without entries give 1.

    {parameters}

    {result}

    Notes
    -----
    The gradient of an entry is the upstream gradient times the product of
    the other entries of its segment (0 for a negative id).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.math.unsorted_segment_prod([2.0, 3.0, 4.0], [1, -1, 1], 3).numpy()
    array([1., 8., 1.])
    """
    del name
    return _unsorted_reduce(data, segment_ids, num_segments, PROD,
                            "unsorted_segment_prod")


def _unsorted_normalized(data, segment_ids, num_segments, what, root):
    d, ids, n_segments, be = _unsorted_args(data, segment_ids, num_segments, what)
    if root and not is_floating(d.dtype):
        raise InvalidArgumentError(
            f"{what}: data of dtype {d.dtype} is not supported (the square root "
            "of the counts needs a floating dtype)"
        )
    if is_half(d.dtype) and not be.on_gpu:
        # the sum and the quotient in float32, rounded once
        shape = (n_segments,) + d.shape[ids.ndim:]
        check_allocation((shape, d.dtype, f"{what}: num_segments"),
                         *half_buffers(d, shape, f"{what}: num_segments"))
        d32 = array_ops.cast(d, np.float32)
        return array_ops.cast(_normalized(be, d32, ids, n_segments, what, root),
                              d.dtype)
    return _normalized(be, d, ids, n_segments, what, root)


def _normalized(be, d, ids, n_segments, what, root):
    """The sum of checked arguments divided by the counts (or their roots)."""
    dtype = d.dtype if is_floating(d.dtype) else np.dtype(np.float64)
    # the sum, its cast, the counts and the quotient, all of num_segments rows
    shape, sized = (n_segments,) + d.shape[ids.ndim:], f"{what}: num_segments"
    check_allocation(*_unsorted_buffers(d, ids, n_segments, SUM, what),
                     None if dtype == d.dtype else (shape, dtype, sized),
                     ((n_segments,), np.int64, sized), ((n_segments,), dtype, sized),
                     (shape, dtype, sized))
    total = _reduce_checked(be, d, ids, n_segments, SUM)
    counts = segment_counts(be, ids, n_segments, d.ndim - ids.ndim, dtype)
    if root:
        counts = be.xp.sqrt(counts)
    if total.dtype != dtype:
        total = array_ops.cast(total, dtype)
    return real_divide(total, wrap(counts), be)


@dispatch.api
@with_sections(parameters=_PARAMETERS)
def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """Average the entries of `data` that share a segment id.

    :func:`unsorted_segment_sum` divided by ``max(count, 1)`` (TensorFlow's
    composition): integer data gives float64; segments without entries are 0.

    {parameters}

    Returns
    -------
    Tensor of shape ``(num_segments,) + data.shape[segment_ids.ndim:]``, of
    the dtype of floating `data`, float64 for integer `data`.

    Raises
    ------
    InvalidArgumentError
        As :func:`unsorted_segment_sum`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.math.unsorted_segment_mean([1, 3, 3, 2], [0, 0, -1, 1], 3).numpy()
    array([2., 2., 0.])
    """
    del name
    return _unsorted_normalized(data, segment_ids, num_segments,
                                "unsorted_segment_mean", root=False)


@dispatch.api
@with_sections(parameters=_PARAMETERS)
def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """Sum the entries of `data` that share a segment id, divided by the
    square root of their count.

    :func:`unsorted_segment_sum` divided by ``sqrt(max(count, 1))``, in the
    dtype of `data` (TensorFlow's composition); segments without entries are 0.

    {parameters}

    Returns
    -------
    Tensor of shape ``(num_segments,) + data.shape[segment_ids.ndim:]`` and
    the dtype of `data`.

    Raises
    ------
    InvalidArgumentError
        If `data` is of an integer dtype, or as :func:`unsorted_segment_sum`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.math.unsorted_segment_sqrt_n([1.0, 3.0, 3.0, 2.0], [0, 0, -1, 1], 3).numpy()
    array([2.82842712, 2.        , 0.        ])
    """
    del name
    return _unsorted_normalized(data, segment_ids, num_segments,
                                "unsorted_segment_sqrt_n", root=True)
