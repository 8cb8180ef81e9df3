"""Segment reductions of RaggedTensors: ``sg.math.unsorted_segment_*`` and
``sg.math.segment_*`` (sum, prod, min, max, mean, sqrt_n) with a RaggedTensor
`data`, and ragged `segment_ids` where TensorFlow takes them.

TensorFlow's ``_ragged_segment_aggregate``: output row ``s`` merges the rows
of `data` whose id is ``s`` position by position.  Its length is the longest
of those rows (0 without rows), and value ``p`` of a row is combined into
value ``p`` of its output row (recursively at ragged rank 2 and above:
:func:`.nested_reductions.merge_segments`), by the unsorted segment op of
the flat values by their output positions.  Ragged `segment_ids` need ragged
`data` with the same row splits; their flat values then segment the values
of `data` one level down.  A mean (a square root of n) is the sum divided by
the count (its square root) of the values combined into each output value,
as TensorFlow composes it: an output value of ragged ids that no value
reaches is 0 / 0.

The sorted ops (``segment_*``, which TensorFlow does not extend to ragged
data) check the ids as they do for dense data and reduce as the unsorted
op with ``num_segments = segment_ids[-1] + 1``.

Cost: float32 and float64 data of ragged rank 1 with sorted ids (ragged ids
included) take one pass over the values and the splits
(``ragged_segment_rows`` of ``_kernels/segment.pyx``, or its CUDA twin): each
output row is filled with the unsorted op's start value, then its rows are
combined in order, by one thread, so the bits are those of the unsorted op
by output positions whatever the thread count.  Other inputs build the
output positions first.  Differentiable w.r.t. the flat values (the
recorded segment op's gradient; under a tape the kernel path records the
output positions it did not need to build).
"""

import numpy as np

from ..autodiff.recording import is_recording
from ..errors import InvalidArgumentError
from ..framework import dispatch, sparse_rows
from ..framework.backend import backend_of
from ..framework.buffers import check_allocation
from ..framework.dtypes import is_kernel_float, true_division_dtype
from ..framework.tensor import wrap
from ..framework.threads import get_num_threads
from ..ops import array_ops, math_ops, segment_ops
from ..ops.segment_ops import common
from ..ops.segment_ops.unsorted_reductions import UNSORTED_TYPES
from ..ops.segment_shared import raw_value
from . import nested_reductions
from .ragged_tensor import RaggedTensor

__all__ = ["segment_aggregate"]

_CODES = {"sum": common.SUM, "prod": common.PROD, "min": common.MIN,
          "max": common.MAX}
_DENSE = {"sum": segment_ops.unsorted_segment_sum,
          "prod": segment_ops.unsorted_segment_prod,
          "min": segment_ops.unsorted_segment_min,
          "max": segment_ops.unsorted_segment_max}
_NOT_PREFIX = ("segment_ids.shape must be a prefix of data.shape, but "
               "segment_ids is ragged and data is not.")


def segment_aggregate(kind, data, segment_ids, num_segments, what):
    """``unsorted_segment_<kind>(data, segment_ids, num_segments)`` where
    `data` or `segment_ids` is a RaggedTensor (see the module docstring).

    Parameters
    ----------
    kind : {"sum", "prod", "min", "max", "mean", "sqrt_n"}
    data : RaggedTensor, Tensor or array_like
    segment_ids : RaggedTensor or array_like, int32 or int64
    num_segments : int or 0-d integer array_like, or None
        None: the sorted op's ``segment_ids[-1] + 1``, the ids checked as
        the sorted ops check them.
    what : str
        The public op's name, for messages.

    Returns
    -------
    RaggedTensor, or a Tensor when ragged ids leave dense values

    Examples
    --------
    >>> import sparsegrad as sg
    >>> rt = sg.ragged.constant([[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]])
    >>> segment_aggregate("sum", rt, [1, 0, 1], 2, "unsorted_segment_sum").to_list()
    [[3.0], [5.0, 7.0, 6.0]]
    """
    if kind in ("mean", "sqrt_n"):
        return _normalized(kind, data, segment_ids, num_segments, what)
    result, _ = _aggregate(kind, data, segment_ids, num_segments, what, False)
    return result


def _normalized(kind, data, segment_ids, num_segments, what):
    """TensorFlow's ragged mean and sqrt_n: the sum over the counts (their
    square root), in the truediv dtype of integer data for a mean."""
    if isinstance(segment_ids, RaggedTensor) and not isinstance(data, RaggedTensor):
        raise ValueError(_NOT_PREFIX)
    dtype = np.dtype(data.dtype)
    if kind == "sqrt_n" and dtype.kind != "f":
        raise InvalidArgumentError(
            f"{what}: data of dtype {dtype} is not supported (the square root "
            "of the counts needs a floating dtype)")
    total, counts = _aggregate("sum", data, segment_ids, num_segments, what, True)
    values = total.flat_values if isinstance(total, RaggedTensor) else total
    if dtype.kind != "f":
        dtype = np.dtype(true_division_dtype(dtype))
        values = array_ops.cast(values, dtype)
    xp = backend_of(counts).xp
    counts = counts.astype(dtype).reshape((-1,) + (1,) * (values.ndim - 1))
    if kind == "sqrt_n":
        counts = xp.sqrt(counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = math_ops.divide(values, wrap(counts))
    if isinstance(total, RaggedTensor):
        return total.with_flat_values(values)
    return values


def _aggregate(kind, data, segment_ids, num_segments, what, counts):
    """(the result, the count of each of its flat values' rows when
    `counts`, else None): TensorFlow's recursion over ragged ids."""
    if isinstance(segment_ids, RaggedTensor):
        if not isinstance(data, RaggedTensor):
            raise ValueError(_NOT_PREFIX)
        _check_ids_dtype(segment_ids.dtype)
        _check_same_splits(data, segment_ids)
        return _aggregate(kind, data.values, segment_ids.values, num_segments,
                          what, counts)
    be = backend_of(data.row_splits) if isinstance(data, RaggedTensor) else None
    ids = _ids(segment_ids, be, what)
    if num_segments is None:
        n_segments = _sorted_count(ids, what)
    else:
        n_segments = common.checked_num_segments(num_segments, what)
    if not isinstance(data, RaggedTensor):
        result = _DENSE[kind](data, ids, n_segments)
        if not counts:
            return result, None
        xp = backend_of(result._value).xp
        flat = ids.reshape(-1)
        return result, xp.bincount(flat[flat >= 0], minlength=n_segments)
    return _ragged_rows(kind, data, ids, n_segments, what, counts, be)


def _check_ids_dtype(dtype):
    if np.dtype(dtype) not in (np.int32, np.int64):
        raise ValueError("segment_ids must have dtype int32 or int64.")


def _check_same_splits(data, segment_ids):
    """TensorFlow's checks of ragged ids: the same row splits dtype
    (ValueError), then the same row splits (InvalidArgumentError)."""
    a, b = data.row_splits, segment_ids.row_splits
    if a.dtype != b.dtype:
        raise ValueError(
            "Input RaggedTensors have mismatched row_splits dtypes; use "
            "RaggedTensor.with_row_splits_dtype() to convert them to compatible "
            "dtypes.")
    if a.shape != b.shape:
        raise InvalidArgumentError(
            f"segment_ids.shape must be a prefix of data.shape: Incompatible "
            f"shapes: [{a.shape[0]}] vs. [{b.shape[0]}]")
    xp = backend_of(a).xp
    if not bool(xp.array_equal(a, b)):
        raise InvalidArgumentError(
            "segment_ids.shape must be a prefix of data.shape: the row splits "
            "of segment_ids and data differ")


def _ids(segment_ids, be, what):
    """The ids as an index array of the splits' device (`be`, or the ids'
    own when the data is dense); ValueError for a dtype other than int32
    and int64, as TensorFlow's ragged segment ops."""
    raw = raw_value(segment_ids)
    if not hasattr(raw, "dtype"):
        raw = np.asarray(raw)
    _check_ids_dtype(raw.dtype)
    return common.ids_array(raw, what, be or backend_of(raw))


def _sorted_count(ids, what):
    """``segment_ids[-1] + 1`` after the sorted ops' checks of the ids."""
    if ids.ndim != 1:
        raise InvalidArgumentError("segment_ids should be a vector.")
    xp = backend_of(ids).xp
    splits = sparse_rows.sorted_segment_splits(xp.ascontiguousarray(ids),
                                               what=f"{what}: segment_ids")
    return splits.shape[0] - 1


def _check_rows(rt, ids, n_segments, be):
    """The checks TensorFlow's construction makes (the unsorted max of the
    row lengths, then the gather of the output splits), same messages."""
    nrows = rt.row_splits.shape[0] - 1
    if ids.shape != (nrows,):
        shape = ",".join(str(int(k)) for k in ids.shape)
        raise InvalidArgumentError(
            f"data.shape = [{nrows}] does not start with segment_ids.shape = "
            f"[{shape}]")
    if not nrows:
        return
    host = be.host(ids)
    common.check_below(host, n_segments)
    low = int(host.min())
    if low < 0:
        k = int(np.flatnonzero(host < 0)[0])
        raise InvalidArgumentError(
            f"segment_ids[{k}] = {low if host[k] == low else int(host[k])} is "
            f"not in [0, {n_segments}) (a row of a RaggedTensor needs an "
            "output row)")


def _ragged_rows(kind, rt, ids, n_segments, what, counts, be):
    """The merge of the rows of `rt` by 1-D `ids` (checked here)."""
    _check_rows(rt, ids, n_segments, be)
    # the per-segment bookkeeping (row counts, longest rows, both splits)
    # is sized by num_segments: refused before any of it is allocated
    sized = f"{what}: num_segments"
    check_allocation(*[((n_segments + 1,), np.int64, sized)] * 4)
    dtype = rt.row_splits.dtype
    splits = list(rt.nested_row_splits)
    values = rt.flat_values
    n_used = int(splits[-1][-1])
    if values.shape[0] != n_used:
        values = values[:n_used]
    fast = _fast_plan(kind, rt, values, ids, n_segments, be)
    if fast is not None:
        out, out_splits, n_out = _rows_kernel(kind, values, rt.row_splits, ids,
                                              fast, be, what)
        counts_out = _kernel_counts(rt.row_splits, ids, fast[0], out_splits,
                                    n_out, be) if counts else None
        return (RaggedTensor._from_trusted_splits(out, [out_splits], dtype),
                counts_out)
    index, n_out, new = nested_reductions.merge_segments(splits, ids, n_segments,
                                                         be)
    check_allocation(((n_out,) + tuple(values.shape[1:]), values.dtype,
                      f"{what}: the rows of data"))
    out = _DENSE[kind](values, index, n_out)
    counts_out = be.xp.bincount(index, minlength=n_out) if counts else None
    return RaggedTensor._from_trusted_splits(out, new, dtype), counts_out


def _fast_plan(kind, rt, values, ids, n_segments, be):
    """(the rows of each segment, the result's splits) when the kernel path
    serves this call: ragged rank 1, float32/float64 values of non-zero
    width, sorted ids, and not a 1-D sum whose output positions happen to be
    sorted (the unsorted op then sums runs of values in eight partial sums,
    which the kernel does not); else None."""
    if (isinstance(rt.values, RaggedTensor) or not is_kernel_float(values.dtype)
            or 0 in values.shape[1:]):
        return None
    xp = be.xp
    ids = xp.ascontiguousarray(ids)
    if be.on_gpu:
        if ids.shape[0] > 1 and not bool(xp.all(ids[1:] >= ids[:-1])):
            return None
        seg_splits = sparse_rows.sorted_segment_splits(ids, n_segments, be=be)
        lengths = xp.empty(n_segments, np.int64)
        positions_sorted = be.kernels("segment").ragged_segment_lengths(
            rt.row_splits, seg_splits, lengths, get_num_threads())
    else:   # one pass over the rows (their ids checked in [0, n_segments))
        counts = np.zeros(n_segments, np.int64)
        lengths = np.zeros(n_segments, np.int64)
        first, positions_sorted = be.kernels("segment").ragged_segment_plan(
            rt.row_splits, ids.astype(np.int64, copy=False), counts, lengths)
        if first >= 0:
            return None
        seg_splits = np.zeros(n_segments + 1, np.int64)
        np.cumsum(counts, out=seg_splits[1:])
    if kind == "sum" and values.ndim == 1 and positions_sorted:
        return None
    out_splits = xp.zeros(n_segments + 1, np.int64)
    xp.cumsum(lengths, out=out_splits[1:])
    return seg_splits, out_splits


def _rows_kernel(kind, values, row_splits, ids, fast, be, what):
    """``ragged_segment_rows``: (the recorded output values, the output
    splits, their count)."""
    seg_splits, out_splits = fast
    xp = be.xp
    n_segments = seg_splits.shape[0] - 1
    d = common.data_tensor(values, what, be)
    n_out = int(out_splits[-1])
    row_shape = tuple(d.shape[1:])
    check_allocation(((n_out,) + row_shape, d.dtype, f"{what}: the rows of data"))
    x = common.rows_2d(be, d._value, d.shape[0])
    op = _CODES[kind]
    out = xp.empty((n_out, x.shape[1]), dtype=x.dtype)
    be.kernels("segment").ragged_segment_rows(
        x, row_splits, seg_splits, out_splits, op,
        common.fill_value(op, x.dtype, unsorted=True), out, get_num_threads())
    out = out.reshape((n_out,) + row_shape)
    if not is_recording():
        return wrap(out), out_splits, n_out
    # the gradient reads every value's output position
    index, _, _ = nested_reductions.merge_segments([row_splits], ids, n_segments,
                                                   be)
    return (common.record_reduction(UNSORTED_TYPES[op], d, index, out,
                                    {"num_segments": n_out}),
            out_splits, n_out)


def _kernel_counts(row_splits, ids, seg_splits, out_splits, n_out, be):
    """How many rows reach each output value: each row adds 1 from its
    output row's start to its own length (a difference array)."""
    xp = be.xp
    splits = row_splits.astype(np.int64, copy=False)
    start = out_splits[ids]
    stop = start + xp.diff(splits)
    marks = (xp.bincount(start, minlength=n_out + 1)[:n_out + 1]
             - xp.bincount(stop, minlength=n_out + 1)[:n_out + 1])
    return xp.cumsum(marks)[:n_out]


# -- the handlers -------------------------------------------------------------------


def _unsorted(kind):
    what = f"unsorted_segment_{kind}"

    def handler(data, segment_ids, num_segments, name=None):
        return segment_aggregate(kind, data, segment_ids, num_segments, what)

    return handler


def _sorted(kind):
    what = f"segment_{kind}"

    def handler(data, segment_ids, name=None):
        return segment_aggregate(kind, data, segment_ids, None, what)

    return handler


# sg.math.(unsorted_)segment_<kind> of a RaggedTensor comes here
# (framework/dispatch.py).
for _kind in ("sum", "prod", "min", "max", "mean", "sqrt_n"):
    dispatch.register(getattr(segment_ops, f"unsorted_segment_{_kind}"),
                      RaggedTensor, _unsorted(_kind))
    dispatch.register(getattr(segment_ops, f"segment_{_kind}"), RaggedTensor,
                      _sorted(_kind))
