"""Segment reductions: sorted (``segment_*``) and unsorted (``unsorted_segment_*``).

Row ``s`` of the result reduces the rows of `data` whose segment id is ``s``.
float32 and float64 data run the compiled kernels of ``_kernels/segment.pyx``
(each segment reduced by one thread, in the order of its rows, in the data's
dtype: the bits do not depend on the thread count); other real dtypes
(integers, float16) take a NumPy path.  Sorted ids are checked in the same
pass that reduces them; a problem is reported with TensorFlow's message by
:func:`~sparsegrad.framework.sparse_rows.sorted_segment_splits`.

CuPy arrays (float32 / float64) run the CUDA twins of those kernels
(``_cuda/segment.cu``, through :mod:`sparsegrad.ops._device`): each output
element reduced by one device thread in the CPU's order, so the same bits;
the ids are checked with one device reduction and one read back first.
Integer CuPy data is reduced by CuPy operations in a fixed order, with the
CPU's results (integer sums and products wrap the same in any order);
float16 CuPy data is not supported (cast it to float32).

Gradients w.r.t. `data` are dense Tensors (they cover every row of `data`);
segment ids and ``num_segments`` get None.  They are written with sparsegrad
ops (gather, divide, where, multiply), so they can be differentiated again;
the product's "product of the other rows" factor is computed by a kernel and
treated as a constant.
"""

import numpy as np

from .._kernels import segment as _segment
from ..autodiff.recording import is_recording, record_operation
from ..autodiff.registry import register_gradient
from ..errors import InvalidArgumentError
from ..framework import buffers, sparse_rows
from ..framework.backend import get_array_module, is_cupy_array
from ..framework.buffers import check_allocation
from ..framework.dtypes import check_numeric, is_kernel_float
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, wrap
from ..framework.threads import get_num_threads
from ..framework.variable import Variable
from . import array_ops, math_ops
from ._device import (
    segment_prod_others,
    sorted_segment_reduce,
    unsorted_segment_reduce,
)
from ._helpers import as_borrowed_tensor
from .embedding_ops import gather

__all__ = [
    "segment_sum",
    "segment_mean",
    "segment_max",
    "segment_min",
    "segment_prod",
    "unsorted_segment_sum",
    "unsorted_segment_mean",
    "unsorted_segment_max",
    "unsorted_segment_min",
    "unsorted_segment_prod",
    "unsorted_segment_sqrt_n",
]

_SUM, _MEAN, _MAX, _MIN, _PROD = (
    _segment.SUM, _segment.MEAN, _segment.MAX, _segment.MIN, _segment.PROD,
)
_UFUNC = {_SUM: np.add, _MAX: np.maximum, _MIN: np.minimum, _PROD: np.multiply}


# -- arguments ---------------------------------------------------------------------


def _data_tensor(data, what):
    # An ndarray is viewed, not copied: the result is a new array, and a
    # new Tensor is on no tape.
    t = as_borrowed_tensor(data, f"{what}: data")
    dtype = check_numeric(t.dtype, f"{what}: data")
    if dtype == np.bool_:
        raise InvalidArgumentError(
            f"{what}: data of dtype bool is not supported; expected an integer "
            "or floating dtype"
        )
    return t


def _ids_array(segment_ids, what):
    if isinstance(segment_ids, Variable):
        segment_ids = segment_ids.value()
    if isinstance(segment_ids, Tensor):
        segment_ids = segment_ids._value
    return sparse_rows.index_array(segment_ids, f"{what}: segment_ids")


def _rows_2d(array, n):
    """`array` of shape (n, ...) as a C-contiguous (n, width) array."""
    width = int(np.prod(array.shape[1:], dtype=np.int64))
    return get_array_module(array).ascontiguousarray(array).reshape(n, width)


def _fill_value(op, dtype, unsorted):
    """The value of a segment without rows."""
    if op == _PROD:
        return 1
    if not unsorted or op in (_SUM, _MEAN):
        return 0
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return info.min if op == _MAX else info.max


def _num_segments(num_segments, what):
    if isinstance(num_segments, Variable):
        num_segments = num_segments.value()
    value = np.asarray(num_segments)
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


# -- sorted reductions -------------------------------------------------------------


def _sorted_reduce(data, segment_ids, op, what):
    d = _data_tensor(data, what)
    if d.ndim == 0:
        raise InvalidArgumentError("input must be at least rank 1")
    ids = _ids_array(segment_ids, what)
    if ids.ndim != 1:
        raise InvalidArgumentError("segment_ids should be a vector.")
    if ids.shape[0] != d.shape[0]:
        raise InvalidArgumentError(
            "segment_ids should be the same size as dimension 0 of input."
        )
    if is_cupy_array(d._value) or is_cupy_array(ids):
        get_array_module(d._value, ids)  # no mixing of host and device
        out, ids = sorted_segment_reduce(
            d._value, ids, op, _fill_value(op, d.dtype, unsorted=False), what)
        result = wrap(out)
        record_operation(_SORTED_TYPES[op], (d, _recorded_ids(ids)), (result,))
        return result
    n = ids.shape[0]
    if n and (ids[0] < 0 or ids[-1] < 0):
        sparse_rows.sorted_segment_splits(np.ascontiguousarray(ids))  # raises
    n_segments = int(ids[-1]) + 1 if n else 0
    shape = (n_segments,) + d.shape[1:]
    kernel = is_kernel_float(d.dtype) and 0 not in d.shape[1:]
    # everything this call allocates: the result, the splits off the kernel,
    # and contiguous copies of broadcast (or other strided) arguments
    check_allocation(
        (shape, d.dtype, f"{what}: segment_ids"),
        None if kernel else ((n_segments + 1,), np.int64, f"{what}: segment_ids"),
        buffers.copy_of(ids, f"{what}: segment_ids"),
        buffers.copy_of(d._value, f"{what}: data"))
    ids = np.ascontiguousarray(ids)
    x = _rows_2d(d._value, n)
    fill = _fill_value(op, d.dtype, unsorted=False)
    if kernel:
        out = np.empty((n_segments, x.shape[1]), dtype=d.dtype)
        if _segment.segment_reduce_ids(x, ids, op, fill, False, out,
                                       get_num_threads()):
            sparse_rows.sorted_segment_splits(ids)  # raises TensorFlow's error
            raise AssertionError("segment ids failed a check that found no error")
    else:
        splits = sparse_rows.sorted_segment_splits(ids)
        out = _reduce_splits(x, splits, op, fill)
    result = wrap(out.reshape(shape))
    record_operation(_SORTED_TYPES[op], (d, _recorded_ids(ids)), (result,))
    return result


def _reduce_splits(x, splits, op, fill):
    """The NumPy path of the sorted reductions (dtypes without kernels)."""
    n_segments = splits.shape[0] - 1
    out = np.full((n_segments, x.shape[1]), fill, dtype=x.dtype)
    present = splits[1:] > splits[:-1]
    if not present.any():
        return out
    starts = splits[:-1][present]
    ufunc = np.add if op == _MEAN else _UFUNC[op]
    reduced = ufunc.reduceat(x, starts, axis=0)
    if op in (_MAX, _MIN) and x.dtype.kind == "f":
        has_nan = np.add.reduceat(np.isnan(x), starts, axis=0) > 0
        reduced[has_nan] = np.nan
    if op == _MEAN:
        counts = np.diff(splits)[present].reshape(-1, 1)
        if x.dtype.kind == "f":
            reduced = reduced / counts.astype(x.dtype)
        else:  # integer division, truncated toward zero as in C
            reduced = np.sign(reduced) * (np.abs(reduced) // counts)
    out[present] = reduced.astype(x.dtype, copy=False)
    return out


def segment_sum(data, segment_ids, name=None):
    """Sum the rows of `data` that share a segment id.

    ``output[s] = sum(data[i] for i with segment_ids[i] == s)``, in the order
    of the rows, accumulated in the dtype of `data` (float32 stays float32;
    a long 1-D segment is summed with eight interleaved partial sums).

    Parameters
    ----------
    data : array_like, Tensor or Variable of shape (n, ...)
        A real dtype (complex and bool are rejected).
    segment_ids : array_like or Tensor of shape (n,), int32 or int64
        Sorted and non-negative; ids that never occur give rows of zeros.
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
    return _sorted_reduce(data, segment_ids, _SUM, "segment_sum")


def segment_mean(data, segment_ids, name=None):
    """Average the rows of `data` that share a segment id.

    The sum of the segment's rows (as :func:`segment_sum`), divided by their
    count in the dtype of `data`.  Integer data uses integer division
    (truncated toward zero), as TensorFlow does.

    Parameters
    ----------
    data : array_like, Tensor or Variable of shape (n, ...)
        A real dtype.
    segment_ids : array_like or Tensor of shape (n,), int32 or int64
        Sorted and non-negative; ids that never occur give rows of zeros.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor of shape ``(segment_ids[-1] + 1,) + data.shape[1:]`` and the dtype
    of `data`.

    Raises
    ------
    InvalidArgumentError
        As :func:`segment_sum`.

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
    return _sorted_reduce(data, segment_ids, _MEAN, "segment_mean")


def segment_max(data, segment_ids, name=None):
    """The elementwise maximum of the rows of `data` that share a segment id.

    A NaN in a segment gives NaN (TensorFlow 2.21's CPU kernel does not
    propagate NaN and depends on the order; see DESIGN.md).  Segments without
    rows give 0, as in TensorFlow.

    Parameters
    ----------
    data : array_like, Tensor or Variable of shape (n, ...)
        A real dtype.
    segment_ids : array_like or Tensor of shape (n,), int32 or int64
        Sorted and non-negative.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor of shape ``(segment_ids[-1] + 1,) + data.shape[1:]`` and the dtype
    of `data`.

    Raises
    ------
    InvalidArgumentError
        As :func:`segment_sum`.

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
    return _sorted_reduce(data, segment_ids, _MAX, "segment_max")


def segment_min(data, segment_ids, name=None):
    """The elementwise minimum of the rows of `data` that share a segment id.

    NaN propagates; segments without rows give 0 (as :func:`segment_max`).

    Parameters
    ----------
    data : array_like, Tensor or Variable of shape (n, ...)
        A real dtype.
    segment_ids : array_like or Tensor of shape (n,), int32 or int64
        Sorted and non-negative.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor of shape ``(segment_ids[-1] + 1,) + data.shape[1:]`` and the dtype
    of `data`.

    Raises
    ------
    InvalidArgumentError
        As :func:`segment_sum`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> c = [[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0], [5.0, 6.0, 7.0, 8.0]]
    >>> sg.math.segment_min(c, [0, 0, 1]).numpy()
    array([[1., 2., 2., 1.],
           [5., 6., 7., 8.]])
    """
    del name
    return _sorted_reduce(data, segment_ids, _MIN, "segment_min")


def segment_prod(data, segment_ids, name=None):
    """The elementwise product of the rows of `data` that share a segment id.

    Multiplied in the order of the rows, in the dtype of `data`; segments
    without rows give 1.

    Parameters
    ----------
    data : array_like, Tensor or Variable of shape (n, ...)
        A real dtype.
    segment_ids : array_like or Tensor of shape (n,), int32 or int64
        Sorted and non-negative.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor of shape ``(segment_ids[-1] + 1,) + data.shape[1:]`` and the dtype
    of `data`.

    Raises
    ------
    InvalidArgumentError
        As :func:`segment_sum`.

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
    return _sorted_reduce(data, segment_ids, _PROD, "segment_prod")


# -- unsorted reductions -----------------------------------------------------------


def _unsorted_args(data, segment_ids, num_segments, what):
    """(data Tensor, ids ndarray, n_segments) after every check."""
    d = _data_tensor(data, what)
    ids = _ids_array(segment_ids, what)
    n_segments = _num_segments(num_segments, what)
    if d.shape[: ids.ndim] != ids.shape:
        raise InvalidArgumentError(
            f"data.shape = {_shape_text(d.shape)} does not start with "
            f"segment_ids.shape = {_shape_text(ids.shape)}"
        )
    return d, ids, n_segments


def _recorded_ids(ids):
    """The ids as a Tensor for the tape: a copy while a tape records (the
    caller's array may change before the gradient is taken)."""
    return wrap(ids.copy() if is_recording() else ids)


def _shape_text(shape):
    return "[" + ",".join(str(int(k)) for k in shape) + "]"


def _check_below(ids, n_segments):
    """TensorFlow's error for the first id at least `n_segments`."""
    flat = ids.reshape(-1)
    if flat.size == 0 or flat.max() < n_segments:
        return
    bad = int(np.flatnonzero(flat >= n_segments)[0])
    position = np.unravel_index(bad, ids.shape) if ids.ndim else ()
    where = "[" + ",".join(str(int(i)) for i in position) + "]" if ids.ndim else ""
    raise InvalidArgumentError(
        f"segment_ids{where} = {flat[bad]} is out of range [0, {n_segments})"
    )


def _unsorted_reduce(data, segment_ids, num_segments, op, what):
    d, ids, n_segments = _unsorted_args(data, segment_ids, num_segments, what)
    row_shape = d.shape[ids.ndim:]
    check_allocation(*_unsorted_buffers(d, ids, n_segments, op, what))
    device = is_cupy_array(d._value) or is_cupy_array(ids)
    xp = get_array_module(d._value, ids)
    flat_ids = xp.ascontiguousarray(ids.reshape(-1))
    if ids.ndim != 1:
        if not device:  # (the device path checks with its one read back)
            _check_below(ids, n_segments)  # reports the multi-dimensional position
        d = array_ops.reshape(d, (flat_ids.shape[0],) + row_shape)
    out = _unsorted_forward(d._value, flat_ids, n_segments, op, shaped_ids=ids)
    result = wrap(out.reshape((n_segments,) + row_shape))
    record_operation(
        _UNSORTED_TYPES[op], (d, _recorded_ids(flat_ids)), (result,),
        {"num_segments": n_segments},
    )
    return result


def _unsorted_buffers(d, ids, n_segments, op, what):
    """What an unsorted reduction allocates, for ``check_allocation``: the
    result, the NaN counts of the NumPy path's max and min, and contiguous
    copies of broadcast (or other strided) arguments."""
    shape = (n_segments,) + d.shape[ids.ndim:]
    sized = f"{what}: num_segments"
    nan_counts = (op in (_MAX, _MIN) and d.dtype.kind == "f"
                  and not is_kernel_float(d.dtype))
    return [(shape, d.dtype, sized),
            (shape, np.int64, sized) if nan_counts else None,
            buffers.copy_of(ids, f"{what}: segment_ids"),
            buffers.copy_of(d._value, f"{what}: data")]


def _unsorted_forward(data, ids, n_segments, op, shaped_ids=None):
    """The unsorted reduction of `data` (n, ...) by 1-D `ids` as an
    (n_segments, width) array; raises for an id >= n_segments before writing
    anything the caller sees (`shaped_ids`: the ids as the caller shaped
    them, for the position in the message)."""
    if is_cupy_array(data) or is_cupy_array(ids):
        get_array_module(data, ids)  # no mixing of host and device
        return unsorted_segment_reduce(
            data, ids, n_segments, op,
            _fill_value(op, data.dtype, unsorted=True), _check_below, shaped_ids)
    n = ids.shape[0]
    x = _rows_2d(data, n)
    fill = _fill_value(op, x.dtype, unsorted=True)
    out = np.empty((n_segments, x.shape[1]), dtype=x.dtype)
    if n == 0 or x.shape[1] == 0 or n_segments == 0:
        _check_below(ids, n_segments)
        out.fill(fill)
        return out
    threads = get_num_threads()
    kernel = is_kernel_float(x.dtype)
    # Sorted ids (what ragged rows give) are reduced in one pass, checks
    # included; otherwise that pass stops early, and each thread scatters the
    # rows of its own range of segments (all in the rows' order).
    if kernel and not _segment.segment_reduce_ids(x, ids, op, fill, True, out,
                                                  threads):
        if ids[-1] < 0:
            out.fill(fill)
        return out
    out.fill(fill)
    if kernel:
        if _segment.scatter_reduce(x, ids, op, out, threads):
            _check_below(ids, n_segments)
        return out
    _check_below(ids, n_segments)
    keep = ids >= 0
    _UFUNC[op].at(out, ids[keep], x[keep])
    if op in (_MAX, _MIN) and x.dtype.kind == "f":
        nan_rows = np.isnan(x[keep])
        if nan_rows.any():
            has_nan = np.zeros(out.shape, dtype=np.int64)
            np.add.at(has_nan, ids[keep], nan_rows)
            out[has_nan > 0] = np.nan
    return out


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sum the entries of `data` that share a segment id, ids in any order.

    ``output[s] = sum(data[p] for positions p with segment_ids[p] == s)``,
    in the order of the positions, in the dtype of `data`; negative ids are
    dropped (their data is ignored).  Sorted ids are reduced in one pass;
    otherwise the ids are grouped first (a stable O(n) radix sort).

    Parameters
    ----------
    data : array_like, Tensor or Variable
        A real dtype.
    segment_ids : array_like or Tensor, int16, int32 or int64
        Any shape that is a prefix of ``data.shape``; ids below
        `num_segments`.
    num_segments : int or 0-d integer array_like
        Non-negative.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor of shape ``(num_segments,) + data.shape[segment_ids.ndim:]`` and
    the dtype of `data`; segments without entries are 0.

    Raises
    ------
    InvalidArgumentError
        With TensorFlow's messages: the shapes do not match ("data.shape =
        [3,4] does not start with segment_ids.shape = [2]"), an id is too
        large ("segment_ids[1] = 5 is out of range [0, 2)"), `num_segments`
        is negative ("Input num_segments == -1 must not be negative.") or not
        an integer scalar, or asks for more memory than the process may
        allocate (checked before allocating).

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
    return _unsorted_reduce(data, segment_ids, num_segments, _SUM,
                            "unsorted_segment_sum")


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """The elementwise maximum of the entries of `data` that share a segment id.

    Negative ids are dropped; NaN propagates; segments without entries give
    the lowest finite value of the dtype (float32 ``-3.4028235e38``).

    Parameters
    ----------
    data : array_like, Tensor or Variable
        A real dtype.
    segment_ids : array_like or Tensor, int16, int32 or int64
        Any shape that is a prefix of ``data.shape``.
    num_segments : int or 0-d integer array_like
        Non-negative.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor of shape ``(num_segments,) + data.shape[segment_ids.ndim:]`` and
    the dtype of `data`.

    Raises
    ------
    InvalidArgumentError
        As :func:`unsorted_segment_sum`.

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
    return _unsorted_reduce(data, segment_ids, num_segments, _MAX,
                            "unsorted_segment_max")


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """The elementwise minimum of the entries of `data` that share a segment id.

    Negative ids are dropped; NaN propagates; segments without entries give
    the highest finite value of the dtype (int32 ``2147483647``).

    Parameters
    ----------
    data : array_like, Tensor or Variable
        A real dtype.
    segment_ids : array_like or Tensor, int16, int32 or int64
        Any shape that is a prefix of ``data.shape``.
    num_segments : int or 0-d integer array_like
        Non-negative.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor of shape ``(num_segments,) + data.shape[segment_ids.ndim:]`` and
    the dtype of `data`.

    Raises
    ------
    InvalidArgumentError
        As :func:`unsorted_segment_sum`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> import numpy as np
    >>> x = np.array([4, 2, 7], dtype=np.int32)
    >>> sg.math.unsorted_segment_min(x, [1, 1, -1], 3).numpy()
    array([2147483647,          2, 2147483647], dtype=int32)
    """
    del name
    return _unsorted_reduce(data, segment_ids, num_segments, _MIN,
                            "unsorted_segment_min")


def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """The elementwise product of the entries of `data` that share a segment id.

    Negative ids are dropped; segments without entries give 1.

    Parameters
    ----------
    data : array_like, Tensor or Variable
        A real dtype.
    segment_ids : array_like or Tensor, int16, int32 or int64
        Any shape that is a prefix of ``data.shape``.
    num_segments : int or 0-d integer array_like
        Non-negative.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor of shape ``(num_segments,) + data.shape[segment_ids.ndim:]`` and
    the dtype of `data`.

    Raises
    ------
    InvalidArgumentError
        As :func:`unsorted_segment_sum`.

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
    return _unsorted_reduce(data, segment_ids, num_segments, _PROD,
                            "unsorted_segment_prod")


def _segment_counts(ids, n_segments, row_rank, dtype):
    """``max(count of each segment, 1)`` as an (n_segments, 1, ...) array of
    `dtype` (negative ids not counted)."""
    flat = ids.reshape(-1)
    if is_cupy_array(flat):
        # Negative ids are counted in an extra bin (no data-sized mask).
        xp = get_array_module(flat)
        flat = xp.where(flat < 0, n_segments, flat)
        counts = xp.bincount(flat, minlength=n_segments + 1)[:n_segments]
        counts = xp.maximum(counts, 1).astype(dtype)
        return counts.reshape((n_segments,) + (1,) * row_rank)
    if flat.size and flat.min() < 0:
        flat = flat[flat >= 0]
    counts = np.bincount(flat, minlength=n_segments)[:n_segments]
    counts = np.maximum(counts, 1).astype(dtype)
    return counts.reshape((n_segments,) + (1,) * row_rank)


def _unsorted_normalized(data, segment_ids, num_segments, what, root):
    d, ids, n_segments = _unsorted_args(data, segment_ids, num_segments, what)
    if root and d.dtype.kind != "f":
        raise InvalidArgumentError(
            f"{what}: data of dtype {d.dtype} is not supported (the square root "
            "of the counts needs a floating dtype)"
        )
    dtype = d.dtype if d.dtype.kind == "f" else np.dtype(np.float64)
    # the sum, its cast, the counts and the quotient, all of num_segments rows
    shape, sized = (n_segments,) + d.shape[ids.ndim:], f"{what}: num_segments"
    check_allocation(*_unsorted_buffers(d, ids, n_segments, _SUM, what),
                     None if dtype == d.dtype else (shape, dtype, sized),
                     ((n_segments,), np.int64, sized), ((n_segments,), dtype, sized),
                     (shape, dtype, sized))
    total = unsorted_segment_sum(d, ids, n_segments)
    counts = _segment_counts(ids, n_segments, d.ndim - ids.ndim, dtype)
    if root:
        counts = get_array_module(counts).sqrt(counts)
    if total.dtype != dtype:
        total = array_ops.cast(total, dtype)
    return math_ops.divide(total, _operand(counts))


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """Average the entries of `data` that share a segment id.

    :func:`unsorted_segment_sum` divided by ``max(count, 1)`` (TensorFlow's
    composition): integer data gives float64; segments without entries are 0.

    Parameters
    ----------
    data : array_like, Tensor or Variable
        A real dtype.
    segment_ids : array_like or Tensor, int16, int32 or int64
        Any shape that is a prefix of ``data.shape``; negative ids are dropped.
    num_segments : int or 0-d integer array_like
        Non-negative.
    name : str, optional
        Ignored (TensorFlow compatibility).

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


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """Sum the entries of `data` that share a segment id, divided by the
    square root of their count.

    :func:`unsorted_segment_sum` divided by ``sqrt(max(count, 1))``, in the
    dtype of `data` (TensorFlow's composition); segments without entries are 0.

    Parameters
    ----------
    data : array_like, Tensor or Variable
        A floating dtype.
    segment_ids : array_like or Tensor, int16, int32 or int64
        Any shape that is a prefix of ``data.shape``; negative ids are dropped.
    num_segments : int or 0-d integer array_like
        Non-negative.
    name : str, optional
        Ignored (TensorFlow compatibility).

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


# -- gradients ---------------------------------------------------------------------


def _gather_upstream(grad, ids):
    """``grad[ids]`` (zero rows for negative ids) as a Tensor of shape
    ``(len(ids),) + row_shape``, with sparsegrad ops.

    An IndexedSlices `grad` is not densified: its repeated rows are summed
    (an unsorted segment sum of its values) and each id looks its row up.
    """
    ids_array = ids._value
    if is_cupy_array(ids_array):
        return _gather_upstream_device(grad, ids_array)
    negative = ids_array.size and ids_array.min() < 0
    safe = np.where(ids_array < 0, 0, ids_array) if negative else ids_array
    if isinstance(grad, IndexedSlices):
        indices = np.asarray(grad.indices._value).reshape(-1)
        unique, inverse = np.unique(indices, return_inverse=True)
        rows = unsorted_segment_sum(grad.values, inverse.reshape(-1),
                                    unique.shape[0])
        position = np.searchsorted(unique, safe)
        found = position < unique.shape[0]
        found[found] = unique[position[found]] == safe[found]
        if negative:
            found &= ids_array >= 0
        if not unique.shape[0]:
            return wrap(np.zeros((ids_array.shape[0],) + rows.shape[1:], rows.dtype))
        position = np.where(found, position, 0)
        gathered = gather(rows, position)
        if found.all():
            return gathered
        return _mask_rows(gathered, found)
    gathered = gather(grad, safe)
    if negative:
        return _mask_rows(gathered, ids_array >= 0)
    return gathered


def _gather_upstream_device(grad, ids_array):
    """:func:`_gather_upstream` of cupy ids: an IndexedSlices upstream is
    densified (the result is dense anyway), and the rows of negative ids are
    masked without reading the ids back."""
    xp = get_array_module(ids_array)
    grad = array_ops.densify(grad)
    gathered = gather(grad, xp.where(ids_array < 0, 0, ids_array))
    return _mask_rows(gathered, ids_array >= 0)


def _operand(array):
    """A cupy operand of a sparsegrad op as a Tensor (the ops convert only
    host values themselves); a NumPy one as it is."""
    return wrap(array) if is_cupy_array(array) else array


def _mask_rows(rows, keep):
    """`rows` with the rows where `keep` is false set to zero."""
    mask = keep.reshape(keep.shape + (1,) * (rows.ndim - 1))
    xp = get_array_module(keep)
    return math_ops.where(_operand(mask), rows,
                          _operand(xp.zeros((), dtype=rows.dtype)))


def _sum_grad(op, grad):
    ids = op.inputs[1]
    return _gather_upstream(grad, ids), None


def _mean_grad(op, grad):
    data, ids = op.inputs
    n_segments = op.outputs[0].shape[0]
    counts = _segment_counts(ids._value, n_segments, data.ndim - 1, data.dtype)
    if isinstance(grad, IndexedSlices) and is_cupy_array(counts):
        grad = array_ops.densify(grad)
    if isinstance(grad, IndexedSlices):  # scale its rows; it stays sparse
        rows = counts[np.asarray(grad.indices._value).reshape(-1)]
        grad = IndexedSlices._from_trusted(
            math_ops.divide(grad.values, rows), grad.indices, grad.dense_shape)
    else:
        grad = math_ops.divide(grad, _operand(counts))
    return _gather_upstream(grad, ids), None


def _extreme_grad(op, grad):
    """Max / min: the upstream gradient of a segment shared equally among its
    elements equal to the extreme (TensorFlow's rule; the NaN elements when
    the extreme is NaN)."""
    data, ids = op.inputs
    out = op.outputs[0]._value
    n_segments = out.shape[0]
    ids_array = ids._value
    x = data._value
    xp = get_array_module(x, ids_array)
    safe = xp.where(ids_array < 0, 0, ids_array)
    extreme = out[safe]
    selected = (x == extreme) | (xp.isnan(x) & xp.isnan(extreme))
    # (on the device the mask is applied without reading the ids back)
    if xp is not np or (ids_array.size and ids_array.min() < 0):
        selected &= (ids_array >= 0).reshape((-1,) + (1,) * (x.ndim - 1))
    counts = _unsorted_forward(selected.astype(x.dtype), ids_array, n_segments,
                               _SUM).reshape(out.shape)
    counts = xp.maximum(counts, 1)
    weighted = math_ops.divide(array_ops.densify(grad), _operand(counts))
    gathered = _gather_upstream(weighted, ids)
    return math_ops.where(_operand(selected), gathered,
                          _operand(xp.zeros((), dtype=x.dtype))), None


def _prod_grad(op, grad):
    data, ids = op.inputs
    n_segments = op.outputs[0].shape[0]
    ids_array = ids._value
    x = data._value
    if is_cupy_array(x) or is_cupy_array(ids_array):
        others = segment_prod_others(x, ids_array, n_segments,
                                     op.type == "SegmentProd")
        return math_ops.multiply(_gather_upstream(grad, ids), wrap(others)), None
    n = ids_array.shape[0]
    work = x if is_kernel_float(x.dtype) else x.astype(np.float64)
    rows = _rows_2d(work, n)
    others = np.zeros_like(rows)
    keep = np.flatnonzero(ids_array >= 0)
    if keep.size:
        if op.type == "SegmentProd":
            order = np.arange(n, dtype=np.int64)
            starts = sparse_rows.sorted_segment_splits(ids_array, n_segments)
        else:
            _, order, starts = sparse_rows.group_rows(
                np.ascontiguousarray(ids_array[keep]), n_segments - 1)
            order = keep[order]
        _segment.prod_others(rows, order, starts, others, get_num_threads())
    others = others.astype(x.dtype, copy=False).reshape(x.shape)
    gathered = _gather_upstream(grad, ids)
    return math_ops.multiply(gathered, others), None


_SORTED_TYPES = {
    _SUM: "SegmentSum", _MEAN: "SegmentMean", _MAX: "SegmentMax",
    _MIN: "SegmentMin", _PROD: "SegmentProd",
}
_UNSORTED_TYPES = {
    _SUM: "UnsortedSegmentSum", _MAX: "UnsortedSegmentMax",
    _MIN: "UnsortedSegmentMin", _PROD: "UnsortedSegmentProd",
}

register_gradient("SegmentSum")(_sum_grad)
register_gradient("SegmentMean")(_mean_grad)
register_gradient("SegmentMax")(_extreme_grad)
register_gradient("SegmentMin")(_extreme_grad)
register_gradient("SegmentProd")(_prod_grad)
register_gradient("UnsortedSegmentSum")(_sum_grad)
register_gradient("UnsortedSegmentMax")(_extreme_grad)
register_gradient("UnsortedSegmentMin")(_extreme_grad)
register_gradient("UnsortedSegmentProd")(_prod_grad)
