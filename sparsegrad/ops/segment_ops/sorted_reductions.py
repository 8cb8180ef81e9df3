"""Sorted segment reductions (``segment_*``): ids sorted, ``segment_ids[-1] +
1`` rows; their gradients are in :mod:`.gradients`."""

import numpy as np

from ...errors import InvalidArgumentError
from ...framework import buffers, dispatch, sparse_rows
from ...framework.buffers import check_allocation
from ...framework.dtypes import is_floating, is_half, is_kernel_float
from ...framework.tensor import wrap
from ...framework.threads import get_num_threads
from .. import array_ops
from .._device import sorted_segment_reduce
from .._helpers import backend_of_arguments
from ..math_ops.arithmetic import real_divide
from ..segment_shared import with_sections
from .common import (
    MAX,
    MEAN,
    MIN,
    PROD,
    SUM,
    UFUNC,
    data_tensor,
    fill_value,
    half_buffers,
    ids_array,
    record_reduction,
    rows_2d,
    segment_counts,
)

__all__ = [
    "segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod",
    "segment_sqrt_n", "SORTED_TYPES",
]

SORTED_TYPES = {
    SUM: "SegmentSum", MEAN: "SegmentMean", MAX: "SegmentMax",
    MIN: "SegmentMin", PROD: "SegmentProd",
}

_SECTIONS = """\
Parameters
----------
data : array_like, Tensor or Variable of shape (n, ...)
    A real dtype (complex and bool are rejected).  float16 and bfloat16
    data are reduced in float32 and the result rounded once to their dtype
    (host arrays; float16 CuPy data is refused).
segment_ids : array_like or Tensor of shape (n,), int32 or int64
    Sorted and non-negative.
name : str, optional
    Ignored (TensorFlow compatibility).

Returns
-------
Tensor of shape ``(segment_ids[-1] + 1,) + data.shape[1:]`` (0 rows
when `segment_ids` is empty) and the dtype of `data`.

Raises
------
InvalidArgumentError
    With TensorFlow's messages: ``data`` is a scalar ("input must be at
    least rank 1"), `segment_ids` is not 1-D ("segment_ids should be a
    vector.") or not of length n, or the ids are negative ("segment ids
    must be >= 0"), decrease ("segment ids are not increasing") or are out
    of range ("Segment id -1 out of range [0, 2), possibly because
    'segment_ids' input is not sorted."); before allocating, if the
    result needs more memory than the process may allocate.
"""


def _sorted_reduce(data, segment_ids, op, what):
    be = backend_of_arguments(data, segment_ids)  # (no mixing of host and device)
    d = data_tensor(data, what, be)
    if d.ndim == 0:
        raise InvalidArgumentError("input must be at least rank 1")
    ids = ids_array(segment_ids, what, be)
    if ids.ndim != 1:
        raise InvalidArgumentError("segment_ids should be a vector.")
    if ids.shape[0] != d.shape[0]:
        raise InvalidArgumentError(
            "segment_ids should be the same size as dimension 0 of input."
        )
    fill = fill_value(op, d.dtype, unsorted=False)
    if be.on_gpu:
        out, ids = sorted_segment_reduce(be, d._value, ids, op, fill, what)
        return record_reduction(SORTED_TYPES[op], d, ids, out)
    n = ids.shape[0]
    if n and (ids[0] < 0 or ids[-1] < 0):
        sparse_rows.sorted_segment_splits(np.ascontiguousarray(ids), be=be)  # raises
    n_segments = int(ids[-1]) + 1 if n else 0
    shape = (n_segments,) + d.shape[1:]
    half = is_half(d.dtype)  # reduced in float32 (a recorded cast), rounded once
    work = np.dtype(np.float32) if half else d.dtype
    kernel = is_kernel_float(work) and 0 not in d.shape[1:]
    # everything this call allocates: the result, the splits off the kernel,
    # contiguous copies of broadcast (or other strided) arguments, and for
    # half data its float32 copy and the float32 result
    check_allocation(
        (shape, d.dtype, f"{what}: segment_ids"),
        None if kernel else ((n_segments + 1,), np.int64, f"{what}: segment_ids"),
        buffers.copy_of(ids, f"{what}: segment_ids"),
        *(half_buffers(d, shape, f"{what}: segment_ids") if half
          else (buffers.copy_of(d._value, f"{what}: data"),)))
    half_dtype = d.dtype
    if half:
        d = array_ops.cast(d, work)
    ids = np.ascontiguousarray(ids)
    x = rows_2d(be, d._value, n)
    if kernel:
        out = np.empty((n_segments, x.shape[1]), dtype=work)
        if be.kernels("segment").segment_reduce_ids(x, ids, op, fill, False, out,
                                                    get_num_threads()):
            sparse_rows.sorted_segment_splits(ids, be=be)  # raises TensorFlow's error
            raise AssertionError("segment ids failed a check that found no error")
    else:
        splits = sparse_rows.sorted_segment_splits(ids, be=be)
        out = _reduce_splits(x, splits, op, fill)
    result = record_reduction(SORTED_TYPES[op], d, ids, out.reshape(shape))
    return array_ops.cast(result, half_dtype) if half else result


def _reduce_splits(x, splits, op, fill):
    """The NumPy path of the sorted reductions (dtypes without kernels)."""
    n_segments = splits.shape[0] - 1
    out = np.full((n_segments, x.shape[1]), fill, dtype=x.dtype)
    present = splits[1:] > splits[:-1]
    if not present.any():
        return out
    starts = splits[:-1][present]
    ufunc = np.add if op == MEAN else UFUNC[op]
    reduced = ufunc.reduceat(x, starts, axis=0)
    if op in (MAX, MIN) and x.dtype.kind == "f":
        has_nan = np.add.reduceat(np.isnan(x), starts, axis=0) > 0
        reduced[has_nan] = np.nan
    if op == MEAN:
        counts = np.diff(splits)[present].reshape(-1, 1)
        if x.dtype.kind == "f":
            reduced = reduced / counts.astype(x.dtype)
        else:  # integer division, truncated toward zero as in C
            reduced = np.sign(reduced) * (np.abs(reduced) // counts)
    out[present] = reduced.astype(x.dtype, copy=False)
    return out


@dispatch.api
@with_sections(sections=_SECTIONS)
def segment_sum(data, segment_ids, name=None):
    """Sum the rows of `data` that share a segment id.

    ``output[s] = sum(data[i] for i with segment_ids[i] == s)``, in the order
    of the rows, accumulated in the dtype of `data` (float32 stays float32,
    float16 and bfloat16 are summed in float32 and rounded once;
    a long 1-D segment is summed with eight interleaved partial sums).

    {sections}

    Notes
    -----
    The gradient w.r.t. `data` is ``gather(upstream, segment_ids)``, a dense
    Tensor of the shape of `data`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> c = [[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0], [5.0, 6.0, 7.0, 8.0]]
    >>> sg.math.segment_sum(c, [0, 0, 1]).numpy()
    array([[5., 5., 5., 5.],
           [5., 6., 7., 8.]])
    >>> sg.math.segment_sum([1.0, 2.0, 3.0, 4.0], [0, 0, 2, 2]).numpy()
    array([3., 0., 7.])
    """
    del name
    return _sorted_reduce(data, segment_ids, SUM, "segment_sum")


@dispatch.api
@with_sections(sections=_SECTIONS)
def segment_mean(data, segment_ids, name=None):
    """Average the rows of `data` that share a segment id.

    The sum of the segment's rows (as :func:`segment_sum`), divided by their
    count in the dtype of `data` (in float32 for float16 and bfloat16 data,
    then rounded once).  Integer data uses integer division
    (truncated toward zero), as TensorFlow does.

    {sections}

    Notes
    -----
    The gradient w.r.t. `data` is ``gather(upstream / count, segment_ids)``.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> c = [[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0], [5.0, 6.0, 7.0, 8.0]]
    >>> sg.math.segment_mean(c, [0, 0, 1]).numpy()
    array([[2.5, 2.5, 2.5, 2.5],
           [5. , 6. , 7. , 8. ]])
    >>> sg.math.segment_mean([[1, 2, 3, 4], [4, 3, 2, 1]], [0, 0]).numpy()
    array([[2, 2, 2, 2]])
    """
    del name
    return _sorted_reduce(data, segment_ids, MEAN, "segment_mean")


@dispatch.api
@with_sections(sections=_SECTIONS)
def segment_max(data, segment_ids, name=None):
    """The elementwise maximum of the rows of `data` that share a segment id.

    A NaN in a segment gives NaN (TensorFlow 2.21's CPU kernel does not
    propagate NaN and depends on the order; see DESIGN.md).  Segments without
    rows give 0, as in TensorFlow.

    {sections}

    Notes
    -----
    The gradient is shared equally among the elements equal to their
    segment's maximum (the NaN elements of a NaN segment).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> c = [[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0], [5.0, 6.0, 7.0, 8.0]]
    >>> sg.math.segment_max(c, [0, 0, 2]).numpy()
    array([[4., 3., 3., 4.],
           [0., 0., 0., 0.],
           [5., 6., 7., 8.]])
    """
    del name
    return _sorted_reduce(data, segment_ids, MAX, "segment_max")


@dispatch.api
@with_sections(sections=_SECTIONS)
def segment_min(data, segment_ids, name=None):
    """The elementwise minimum of the rows of `data` that share a segment id.

    NaN propagates; segments without rows give 0 (as :func:`segment_max`).

    {sections}

    Examples
    --------
    >>> import sparsegrad as sg
    >>> c = [[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0], [5.0, 6.0, 7.0, 8.0]]
    >>> sg.math.segment_min(c, [0, 0, 1]).numpy()
    array([[1., 2., 2., 1.],
           [5., 6., 7., 8.]])
    """
    del name
    return _sorted_reduce(data, segment_ids, MIN, "segment_min")


@dispatch.api
@with_sections(sections=_SECTIONS)
def segment_prod(data, segment_ids, name=None):
    """The elementwise product of the rows of `data` that share a segment id.

    Multiplied in the order of the rows, in the dtype of `data` (in float32
    for float16 and bfloat16 data, then rounded once); segments
    without rows give 1.

    {sections}

    Notes
    -----
    The gradient of a row is the upstream gradient times the product of the
    other rows of its segment (exact with zeros; computed by a kernel and
    treated as a constant by a second differentiation).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> c = [[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0], [5.0, 6.0, 7.0, 8.0]]
    >>> sg.math.segment_prod(c, [0, 0, 2]).numpy()
    array([[4., 6., 6., 4.],
           [1., 1., 1., 1.],
           [5., 6., 7., 8.]])
    """
    del name
    return _sorted_reduce(data, segment_ids, PROD, "segment_prod")


@dispatch.api
@with_sections(sections=_SECTIONS)
def segment_sqrt_n(data, segment_ids, name=None):
    """Sum the rows of `data` that share a segment id, divided by the square
    root of their count.

    :func:`segment_sum` divided by ``sqrt(max(count, 1))`` in the dtype of
    `data` (the sorted twin of :func:`unsorted_segment_sqrt_n`; TensorFlow
    has no dense ``segment_sqrt_n``): segments without rows give 0.
    Floating data only (an integer dtype raises InvalidArgumentError).

    {sections}

    Notes
    -----
    Differentiable w.r.t. `data` (the recorded sum and division).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.math.segment_sqrt_n([1.0, 3.0, 4.0], [0, 0, 2]).numpy()
    array([2.82842712, 0.        , 4.        ])
    """
    del name
    what = "segment_sqrt_n"
    be = backend_of_arguments(data, segment_ids)
    d = data_tensor(data, what, be)
    if not is_floating(d.dtype):
        raise InvalidArgumentError(
            f"{what}: data of dtype {d.dtype} is not supported (the square root "
            "of the counts needs a floating dtype)"
        )
    if is_half(d.dtype) and not be.on_gpu:
        # the sum and the quotient in float32, rounded once
        d32 = array_ops.cast(d, np.float32)
        return array_ops.cast(_sqrt_n(be, d32, segment_ids, what), d.dtype)
    return _sqrt_n(be, d, segment_ids, what)


def _sqrt_n(be, d, segment_ids, what):
    """segment_sqrt_n of a data Tensor `d` (a floating dtype)."""
    total = _sorted_reduce(d, segment_ids, SUM, what)
    ids = ids_array(segment_ids, what, be)
    counts = segment_counts(be, ids, total.shape[0], total.ndim - 1, d.dtype)
    return real_divide(total, wrap(be.xp.sqrt(counts)), be)
