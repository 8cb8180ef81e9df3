"""What the sorted and unsorted segment reductions share: the reduction
codes, the checks of their arguments and the recording of a reduction."""

import ml_dtypes
import numpy as np

from ..._kernels import segment as _segment
from ...autodiff.recording import is_recording, record_operation
from ...errors import InvalidArgumentError
from ...framework import sparse_rows
from ...framework.dtypes import check_numeric, is_floating
from ...framework.tensor import wrap
from ...framework.variable import Variable
from .._helpers import as_borrowed_tensor
from ..segment_shared import raw_value

__all__ = [
    "SUM", "MEAN", "MAX", "MIN", "PROD", "UFUNC",
    "data_tensor", "ids_array", "rows_2d", "fill_value", "checked_num_segments",
    "record_reduction", "check_below", "operand", "segment_counts",
    "half_buffers",
]

SUM, MEAN, MAX, MIN, PROD = (
    _segment.SUM, _segment.MEAN, _segment.MAX, _segment.MIN, _segment.PROD,
)
UFUNC = {SUM: np.add, MAX: np.maximum, MIN: np.minimum, PROD: np.multiply}


# -- arguments ---------------------------------------------------------------------


def data_tensor(data, what, be):
    """`data` as a Tensor of a real dtype (an ndarray is viewed, not copied:
    the result is a new array, and a new Tensor is on no tape); `be`: the
    call's backend."""
    t = as_borrowed_tensor(data, f"{what}: data", be)
    dtype = check_numeric(t.dtype, f"{what}: data")
    if dtype == np.bool_:
        raise InvalidArgumentError(
            f"{what}: data of dtype bool is not supported; expected an integer "
            "or floating dtype"
        )
    return t


def ids_array(segment_ids, what, be):
    """The segment ids as a checked index array (of their device, the one of
    the call's backend `be`)."""
    return sparse_rows.index_array(raw_value(segment_ids), f"{what}: segment_ids",
                                   be)


def rows_2d(be, array, n):
    """`array` of shape (n, ...) as a C-contiguous (n, width) array."""
    width = int(np.prod(array.shape[1:], dtype=np.int64))
    return be.xp.ascontiguousarray(array).reshape(n, width)


def fill_value(op, dtype, unsorted):
    """The value of a segment without rows."""
    if op == PROD:
        return 1
    if not unsorted or op in (SUM, MEAN):
        return 0
    info = ml_dtypes.finfo(dtype) if is_floating(dtype) else np.iinfo(dtype)
    return info.min if op == MAX else info.max


def half_buffers(d, out_shape, what):
    """What computing half data `d` in float32 adds for ``check_allocation``:
    the float32 copy of the data and the float32 result (`out_shape`, sized
    by the argument `what` names)."""
    return [(d.shape, np.float32, f"{what.split(':')[0]}: data"),
            (out_shape, np.float32, what)]


def checked_num_segments(value, what):
    """``num_segments`` as a non-negative int (TensorFlow's messages)."""
    if isinstance(value, Variable):
        value = value.value()
    value = np.asarray(value)
    if value.ndim != 0:
        raise InvalidArgumentError(
            f"{what}: num_segments should be a scalar, not shape "
            f"{list(value.shape)}"
        )
    if value.dtype.kind not in "iu":
        raise InvalidArgumentError(
            f"{what}: num_segments must be an int32 or int64 scalar, got dtype "
            f"{value.dtype}"
        )
    n = int(value)
    if n < 0:
        raise InvalidArgumentError(f"Input num_segments == {n} must not be negative.")
    return n


def check_below(ids, n_segments):
    """TensorFlow's error for the first id at least `n_segments` (host ids)."""
    flat = ids.reshape(-1)
    if flat.size == 0 or flat.max() < n_segments:
        return
    bad = int(np.flatnonzero(flat >= n_segments)[0])
    position = np.unravel_index(bad, ids.shape) if ids.ndim else ()
    where = "[" + ",".join(str(int(i)) for i in position) + "]" if ids.ndim else ""
    raise InvalidArgumentError(
        f"segment_ids{where} = {flat[bad]} is out of range [0, {n_segments})"
    )


# -- results -----------------------------------------------------------------------


def record_reduction(op_type, d, ids, out, attrs=None):
    """Wrap the reduction `out` and record it with its data Tensor `d` and its
    1-D `ids`: a copy of them while a tape records (the caller's array may
    change before the gradient is taken)."""
    result = wrap(out)
    ids_t = wrap(ids.copy() if is_recording() else ids)
    record_operation(op_type, (d, ids_t), (result,), attrs)
    return result


def operand(be, array):
    """An operand of a sparsegrad op: a device array as a Tensor (the ops
    convert only host values themselves), a host one as it is."""
    return wrap(array) if be.on_gpu else array


def segment_counts(be, ids, n_segments, row_rank, dtype):
    """``max(count of each segment, 1)`` as an (n_segments, 1, ...) array of
    `dtype` (negative ids not counted)."""
    xp = be.xp
    flat = ids.reshape(-1)
    if be.on_gpu:
        # Negative ids are counted in an extra bin (no data-sized mask).
        flat = xp.where(flat < 0, n_segments, flat)
    elif flat.size and flat.min() < 0:
        flat = flat[flat >= 0]
    counts = xp.bincount(flat, minlength=n_segments)[:n_segments]
    counts = xp.maximum(counts, 1).astype(dtype)
    return counts.reshape((n_segments,) + (1,) * row_rank)
