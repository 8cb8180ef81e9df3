"""The device (cupy) side of the segment, sparse segment and lookup ops.

Arguments: ``sparse_rows`` checks the ids on the device itself (sorted
segment ids: ``sorted_segment_splits``, on their ``device_id_summary``: the
ids reduced on the device and ONE small array read back, before any kernel
writes; only when a check fails are the ids copied to the host, to raise the
CPU's error with the CPU's own code: one validation layer, one set of
messages).  The ops here read a summary once and hand it on.

Reductions: the segment reductions' device paths, the twins of the NumPy
paths of :mod:`sparsegrad.ops.segment_ops` (which records the ops and owns
the gradients).  Each output element of float32/float64 data is reduced by
one device thread in the CPU's order, so the results are the CPU's bits.
Integer data takes CuPy operations in a fixed order (a segmented scan): sums
and products wrap modulo 2**bits in any order, and maxima and minima do not
depend on it, so those are the CPU's results too.  float16 is not supported
(the CPU reduces it in float16 with NumPy; cast to float32).
"""

import numpy as np

from .._kernels import segment as _segment
from ..errors import InvalidArgumentError
from ..framework import buffers, sparse_rows
from ..framework.buffers import check_allocation
from ..framework.dtypes import is_kernel_float

__all__ = [
    "check_device_dtype",
    "sorted_segment_reduce", "unsorted_segment_reduce", "segment_prod_others",
]


# -- arguments -------------------------------------------------------------------


def check_device_dtype(dtype, what, half=False, integers=False):
    """The GPU kernels take float32 and float64 values (and float16 where
    `half`: an op that computes it in float32, as on the CPU; integers
    where `integers`: the segment reductions' CuPy path).

    Examples
    --------
    >>> check_device_dtype(np.float32, "op")
    """
    dtype = np.dtype(dtype)
    if is_kernel_float(dtype) or (half and dtype == np.float16):
        return
    if integers and dtype.kind in "iu":
        return
    supported = "float32, float64 and integers are" if integers else (
        "float32 and float64 are")
    if dtype == np.float16 and not half:
        supported += "; cast float16 to float32"
    raise InvalidArgumentError(
        f"{what}: values of dtype {dtype} are not supported on the GPU "
        f"({supported})"
    )


# -- segment reductions ----------------------------------------------------------


def _rows_2d(xp, array, n):
    width = int(np.prod(array.shape[1:], dtype=np.int64))
    return xp.ascontiguousarray(array).reshape(n, width)


def sorted_segment_reduce(be, data, ids, op, fill, what):
    """The sorted reduction `op` of cupy `data` (n, ...) by 1-D `ids`:
    ``(out of shape (n_segments,) + data.shape[1:], contiguous ids)``.

    The ids are summarized on the device and read back once (their last id
    sets the output's size; a bad id raises TensorFlow's error), then turned
    into row splits and reduced, one thread per output element (`be`: the
    GPU backend of the call).
    """
    xp = be.xp
    check_allocation(buffers.copy_of(ids, f"{what}: segment_ids"))
    ids = xp.ascontiguousarray(ids)
    n = ids.shape[0]
    summary = sparse_rows.device_id_summary(ids)
    _, _, decrease, first, last = summary
    if n and (first < 0 or last < 0 or decrease < n):
        sparse_rows.sorted_segment_splits(ids, summary=summary)  # raises
        raise AssertionError("segment ids failed a check that found no error")
    n_segments = last + 1 if n else 0
    shape = (n_segments,) + data.shape[1:]
    # the result, its splits and a contiguous copy of strided data, together
    check_allocation((shape, data.dtype, f"{what}: segment_ids"),
                     ((n_segments + 1,), np.int64, f"{what}: segment_ids"),
                     buffers.copy_of(data, f"{what}: data"))
    check_device_dtype(data.dtype, what, integers=True)
    x = _rows_2d(xp, data, n)
    out = xp.empty((n_segments, x.shape[1]), dtype=data.dtype)
    if out.size:
        splits = sparse_rows.sorted_segment_splits(ids, n_segments, summary=summary)
        if data.dtype.kind in "iu":
            out.fill(fill)
            present = xp.flatnonzero(splits[1:] > splits[:-1])
            _integer_reduce(xp, x, ids, splits[:-1][present], splits[1:][present],
                            present, op, out)
        else:
            be.kernels("segment").reduce_sorted(x, splits, op, fill, False, out)
    return out.reshape(shape), ids


def unsorted_segment_reduce(be, data, ids, n_segments, op, fill, check_below,
                            shaped_ids=None):
    """The unsorted reduction `op` of cupy `data` (n, ...) by 1-D `ids` as an
    (n_segments, width) array, on the CPU's two paths: sorted ids (what
    ragged rows give) are reduced as segments from `fill`; others are grouped
    stably (a radix sort) and each segment walks its rows in their original
    order from `fill`.  An id at least `n_segments` raises through
    ``check_below(host ids, n_segments)`` (`shaped_ids`: the ids as the
    caller shaped them, for the position in the message) before any write.
    """
    xp = be.xp
    kernels = be.kernels("segment")
    ids = xp.ascontiguousarray(ids)
    n = ids.shape[0]
    x = _rows_2d(xp, data, n)
    summary = None
    if n:
        summary = sparse_rows.device_id_summary(ids)
        if summary[1] >= n_segments:
            check_below(be.host(ids if shaped_ids is None else shaped_ids),
                        n_segments)
            raise AssertionError("segment ids failed a check that found no error")
    out = xp.empty((n_segments, x.shape[1]), dtype=x.dtype)
    if n == 0 or x.shape[1] == 0 or n_segments == 0:
        out.fill(fill)
        return out
    check_device_dtype(x.dtype, "unsorted segment reduction", integers=True)
    if x.dtype.kind in "iu":
        out.fill(fill)
        # fill is the op's identity here (0, 1, the dtype's min or max), so
        # each segment's reduction is the CPU's op.at into the fill
        unique, order, starts = be.kernels("sort").group_rows(ids)
        keep = xp.flatnonzero(unique >= 0)  # negative ids are dropped
        _integer_reduce(xp, x[order], ids[order], starts[:-1][keep], starts[1:][keep],
                        unique[keep], op, out)
        return out
    _, _, decrease, _, last = summary
    if decrease >= n:  # sorted
        if last < 0:
            out.fill(fill)
        else:
            # not sorted_segment_splits: these ids may start with negative
            # ones, which unsorted reductions drop (skipped at the head)
            splits = kernels.splits_of_sorted(ids, n_segments)
            kernels.reduce_sorted(x, splits, op, fill, True, out)
        return out
    out.fill(fill)
    # one stable sort, no further read back (negative ids fall outside the
    # splits of [0, n_segments) and are dropped)
    order, splits = kernels.sort_ids(ids, n_segments)
    kernels.reduce_ordered(x, order, splits, op, out)
    return out


_UFUNCS = {_segment.SUM: "add", _segment.MEAN: "add", _segment.MAX: "maximum",
           _segment.MIN: "minimum", _segment.PROD: "multiply"}


def _integer_reduce(xp, x, labels, starts, ends, segments, op, out):
    """``out[segments[k]] = op(x[starts[k]:ends[k]])`` for integer rows `x`
    (n, width) whose runs of equal `labels` are the segments (``starts[k] <
    ends[k]``: non-empty ones only); MEAN truncates the sum's quotient
    toward zero.

    The reduction is the CPU's ``ufunc.reduceat``: in its accumulator dtype
    (int64 for smaller signed integers, uint64 for unsigned ones), cast back
    to x's dtype, which matters only for the mean (a sum that would wrap in
    int32 does not in int64).
    """
    if segments.shape[0] == 0 or x.shape[1] == 0:
        return
    acc = np.add.reduceat(np.zeros(1, x.dtype), [0]).dtype
    ufunc = getattr(xp, _UFUNCS[op])
    rows = x.astype(acc, copy=False)
    n = rows.shape[0]
    # Hillis-Steele segmented scan: after the pass of stride d, row k holds
    # op over its run's rows in (k - 2d, k]; log2(n) passes in a fixed order
    d = 1
    while d < n:
        same = (labels[d:] == labels[:-d]).reshape(-1, 1)
        rows = xp.concatenate(
            [rows[:d], xp.where(same, ufunc(rows[:-d], rows[d:]), rows[d:])])
        d *= 2
    reduced = rows[ends - 1]
    if op == _segment.MEAN:
        counts = (ends - starts).astype(acc).reshape(-1, 1)
        reduced = xp.sign(reduced) * (xp.abs(reduced) // counts)
    out[segments] = reduced.astype(out.dtype, copy=False)


def segment_prod_others(be, x, ids, n_segments, is_sorted):
    """The "product of the other rows" factor of the segment product's
    gradient, of the shape of `x`: sorted ids as their row splits, others
    grouped stably (the rows of negative ids get 0, as on the CPU)."""
    xp = be.xp
    kernels = be.kernels("segment")
    check_device_dtype(x.dtype, "segment product gradient")
    n = ids.shape[0]
    rows = _rows_2d(xp, x, n)
    others = xp.zeros_like(rows)
    if n:
        if is_sorted:
            order = xp.arange(n, dtype=np.int64)
            starts = kernels.splits_of_sorted(ids, n_segments)
        else:
            _, order, starts = be.kernels("sort").group_rows(
                xp.ascontiguousarray(ids))
        kernels.prod_others(rows, order, starts, others, 0)
        if not is_sorted:
            others = xp.where((ids < 0).reshape(-1, 1),
                              xp.zeros((), dtype=x.dtype), others)
    return others.reshape(x.shape)
