"""``sparse_segment_sum``, ``sparse_segment_mean`` and ``sparse_segment_sqrt_n``:
bags named by sorted segment ids, on the bag primitive, and their gradients
(IndexedSlices over the sorted distinct indices)."""

import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import register_gradient
from ...errors import InvalidArgumentError
from ...framework import sparse_rows
from ...framework.backend import backend_of
from ...framework.tensor import wrap
from .. import array_ops
from .._device import check_device_dtype
from .._helpers import backend_of_arguments
from ..segment_shared import raw_value, with_sections
from .checks import check_float, index_input, output_dtype, table_tensor, work_dtype
from .primitive import bag_buffers, bag_grad, coefficients, reduce_bags

__all__ = ["sparse_segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n"]

_OP_TYPES = {
    "sum": "SparseSegmentSum",
    "mean": "SparseSegmentMean",
    "sqrtn": "SparseSegmentSqrtN",
}

_DTYPE_PARAMETER = """\
dtype : dtype, optional
    The result's dtype: None (the default) or the dtype of `data`, as
    TensorFlow gives; float32 for float16 or bfloat16 `data` (the same
    float32 sums, not rounded to half).  Any other dtype is refused.
"""

_FLOAT_PARAMETERS = """\
Parameters
----------
data : Variable, Tensor or array_like of shape (n_rows, ...), floating
    float32, float64, float16 or bfloat16.  An ndarray is read in place.
indices : array_like of shape (nnz,), int32 or int64
    Rows of `data`, in ``[0, n_rows)``.
segment_ids : array_like of shape (nnz,), int32 or int64
    Sorted, non-negative.
num_segments : int, optional
    The number of output rows (default ``segment_ids[-1] + 1``).
name : str, optional
    Ignored.
""" + _DTYPE_PARAMETER

_HALF_NOTE = """\
float16 and bfloat16 `data` (TensorFlow's result: the dtype of `data`) is
reduced in float32: the gathered rows are converted, summed (and divided) by
the float32 kernel and rounded once, so the result is the float32 one of
``data.astype(float32)`` rounded to the half type; the gradient likewise
(float32 with ``dtype=float32``).
"""


def _num_segments(num_segments, what):
    if num_segments is None:
        return None
    num_segments = raw_value(num_segments)
    value = np.asarray(num_segments)
    if value.ndim != 0 or value.dtype.kind not in "iu":
        raise InvalidArgumentError(
            f"{what}: num_segments must be an integer scalar, got {num_segments!r}"
        )
    value = int(value)
    if value < 0:
        raise InvalidArgumentError(
            f"{what}: Cannot specify a negative value for num_segments "
            f"(got {value})"
        )
    return value


def _sparse_segment(combiner, data, indices, segment_ids, num_segments, dtype):
    what = f"sparse_segment_{'sqrt_n' if combiner == 'sqrtn' else combiner}"
    # the one choice (no mixing of host and device)
    be = backend_of_arguments(data, indices, segment_ids)
    t = table_tensor(data, what, be=be)
    check_float(t, what, combiner)
    out_dtype = output_dtype(dtype, t.dtype, what)
    idx = index_input(indices, "indices", be)
    seg = index_input(segment_ids, "segment_ids", be)
    if idx.shape[0] != seg.shape[0]:
        raise InvalidArgumentError(
            f"{what}: segment_ids and indices should have same size. (indices "
            f"has {idx.shape[0]} entries, segment_ids {seg.shape[0]})"
        )
    n = _num_segments(num_segments, what)
    n_rows = t.shape[0]
    if be.on_gpu:
        # the kernels' dtype: float32 for half data (its rows converted there)
        check_device_dtype(work_dtype(t.dtype), what)
    # the output (and, off the kernel, the gathered rows) with the splits
    sized_by = f"{what}: {'segment_ids' if n is None else 'num_segments'}"
    splits = sparse_rows.sorted_segment_splits(
        seg, n, what=sized_by,
        also=lambda n_segments: bag_buffers(t._value, idx.shape[0], n_segments,
                                             sized_by, f"{what}: indices",
                                             out_dtype), be=be)
    bad = sparse_rows.first_out_of_range(idx, n_rows, be)
    if bad is not None:
        raise InvalidArgumentError(
            f"{what}: Bad: indices[{bad}] == {int(idx[bad])} out of range "
            f"[0, {n_rows})"
        )
    # Private copies: the recorded op must not see later edits of the caller's
    # arrays (they are small next to the output).
    idx_t = wrap(idx.copy())
    seg_t = wrap(seg.copy())
    out = wrap(reduce_bags(be, t._value, idx_t._value, None, splits, combiner,
                           out_dtype))
    record_operation(_OP_TYPES[combiner], (t, idx_t, seg_t), (out,),
                     {"splits": splits})
    return out


def _sparse_segment_grad(op, grad, combiner):
    data, indices, segment_ids = op.inputs
    splits = op.get_attr("splits")
    seg = segment_ids._value
    grad = array_ops.densify(grad)
    be = backend_of(grad._value, indices._value, seg)
    coef = coefficients(be, splits, None, combiner, work_dtype(data.dtype), seg)
    return (
        bag_grad(be, grad, data.shape, indices._value, seg, coef, splits),
        None,
        None,
    )


# -- public ops ----------------------------------------------------------------------


@with_sections(dtype=_DTYPE_PARAMETER, half=_HALF_NOTE)
def sparse_segment_sum(data, indices, segment_ids, num_segments=None, name=None,
                       *, dtype=None):
    """Sum rows of `data` selected by `indices`, grouped by `segment_ids`.

    ``output[s] = sum(data[indices[k]] for k with segment_ids[k] == s)``:
    :func:`sparsegrad.math.segment_sum` of ``gather(data, indices)``, without
    the gathered copy.

    Parameters
    ----------
    data : Variable, Tensor or array_like of shape (n_rows, ...)
        float32, float64, float16, bfloat16 or an integer dtype.  An ndarray
        is read in place, not copied.
    indices : array_like of shape (nnz,), int32 or int64
        Rows of `data`, in ``[0, n_rows)``; repeats count each time.
    segment_ids : array_like of shape (nnz,), int32 or int64
        Sorted, non-negative bag of each entry.
    num_segments : int, optional
        The number of output rows; every id must be below it.  By default
        ``segment_ids[-1] + 1`` (0 when empty).
    name : str, optional
        Ignored.
    {dtype}

    Returns
    -------
    Tensor of shape ``(n_segments,) + data.shape[1:]`` and the dtype of `data`
        (or `dtype`).  Segments without entries are zeros.  float32 is
        accumulated in float32 (float16 and bfloat16 in float32, rounded
        once), in input order.

    Raises
    ------
    InvalidArgumentError
        ``Bad: indices[1] == 7 out of range [0, 3)`` for a bad index;
        ``segment_ids and indices should have same size.``; the sorted
        segment ids' errors (``segment ids are not increasing``, ``segment
        ids must be >= 0``, ``Segment id -1 out of range [0, 2), ...``;
        with `num_segments`, ``segment ids must be < num_segments``);
        ``Shape must be at least rank 1`` for scalar `data`; a negative
        `num_segments`; non-integer indices; a `dtype` other than those
        above (``dtype must be None, the table's dtype (float32) or float32
        for a float16 or bfloat16 table, got float16``); a result (sized by
        the last segment id or `num_segments`) that needs more memory than
        the process may allocate, before anything is allocated.

    Notes
    -----
    The gradient w.r.t. `data` is an :class:`~sparsegrad.IndexedSlices` of
    the shape of `data` over the sorted distinct indices (TensorFlow's
    ``sparse_gradient=True`` form; its default is dense), one row per index
    summed in input order: cost O(nnz x row width).  `indices` and
    `segment_ids` get None.

    {half}

    Examples
    --------
    >>> import sparsegrad as sg
    >>> c = np.array([[1.0, 2, 3, 4], [-1, -2, -3, -4], [5, 6, 7, 8]])
    >>> sg.sparse.segment_sum(c, [0, 1, 2], [0, 0, 1]).numpy()
    array([[0., 0., 0., 0.],
           [5., 6., 7., 8.]])
    >>> sg.sparse.segment_sum(c, [2, 2], [0, 2], num_segments=4).numpy()
    array([[5., 6., 7., 8.],
           [0., 0., 0., 0.],
           [5., 6., 7., 8.],
           [0., 0., 0., 0.]])
    >>> v = sg.Variable(c)
    >>> with sg.GradientTape() as tape:
    ...     y = sg.sparse.segment_sum(v, [2, 0, 2], [0, 0, 1])
    >>> g = tape.gradient(y, v)
    >>> g.indices.numpy(), g.values.numpy()
    (array([0, 2]), array([[1., 1., 1., 1.],
           [2., 2., 2., 2.]]))
    """
    del name
    return _sparse_segment("sum", data, indices, segment_ids, num_segments, dtype)


@with_sections(parameters=_FLOAT_PARAMETERS, half=_HALF_NOTE)
def sparse_segment_mean(data, indices, segment_ids, num_segments=None, name=None,
                        *, dtype=None):
    """Mean of rows of `data` selected by `indices`, grouped by `segment_ids`.

    ``output[s]`` is the sum of :func:`sparse_segment_sum` divided by the
    number of entries of segment ``s`` (repeated indices count each time).

    {parameters}

    Returns
    -------
    Tensor of shape ``(n_segments,) + data.shape[1:]`` and the dtype of `data`
        (or `dtype`).  Empty segments are zeros.  The sum is accumulated in
        the dtype of `data` (float32 for a half type), then divided by the
        count in that dtype.

    Raises
    ------
    InvalidArgumentError
        For integer `data`, and as :func:`sparse_segment_sum`.

    Notes
    -----
    The gradient w.r.t. `data` is an :class:`~sparsegrad.IndexedSlices` over
    the sorted distinct indices: ``upstream[s] / count[s]`` summed per index.

    {half}

    Examples
    --------
    >>> import sparsegrad as sg
    >>> c = np.array([[1.0, 2, 3, 4], [-1, -2, -3, -4], [5, 6, 7, 8]])
    >>> sg.sparse.segment_mean(c, [0, 2, 2], [0, 0, 0]).numpy()
    array([[3.66666667, 4.66666667, 5.66666667, 6.66666667]])
    """
    del name
    return _sparse_segment("mean", data, indices, segment_ids, num_segments,
                           dtype)


@with_sections(parameters=_FLOAT_PARAMETERS, half=_HALF_NOTE)
def sparse_segment_sqrt_n(data, indices, segment_ids, num_segments=None,
                          name=None, *, dtype=None):
    """Sum of rows of `data` selected by `indices`, over the square root of
    each segment's size.

    {parameters}

    Returns
    -------
    Tensor of shape ``(n_segments,) + data.shape[1:]`` and the dtype of `data`
        (or `dtype`).  Empty segments are zeros.  The square root of the
        count is taken in float64 and rounded to the dtype of `data` (float32
        for a half type), as TensorFlow does.

    Raises
    ------
    InvalidArgumentError
        For integer `data`, and as :func:`sparse_segment_sum`.

    Notes
    -----
    The gradient w.r.t. `data` is an :class:`~sparsegrad.IndexedSlices` over
    the sorted distinct indices: ``upstream[s] / sqrt(count[s])`` summed per
    index.

    {half}

    Examples
    --------
    >>> import sparsegrad as sg
    >>> c = np.array([[1.0, 2, 3, 4], [-1, -2, -3, -4], [5, 6, 7, 8]])
    >>> sg.sparse.segment_sqrt_n(c, [2, 2], [0, 0]).numpy()
    array([[ 7.07106781,  8.48528137,  9.89949494, 11.3137085 ]])
    """
    del name
    return _sparse_segment("sqrtn", data, indices, segment_ids, num_segments,
                           dtype)


@register_gradient("SparseSegmentSum")
def _sparse_segment_sum_grad(op, grad):
    return _sparse_segment_grad(op, grad, "sum")


@register_gradient("SparseSegmentMean")
def _sparse_segment_mean_grad(op, grad):
    return _sparse_segment_grad(op, grad, "mean")


@register_gradient("SparseSegmentSqrtN")
def _sparse_segment_sqrt_n_grad(op, grad):
    return _sparse_segment_grad(op, grad, "sqrtn")
