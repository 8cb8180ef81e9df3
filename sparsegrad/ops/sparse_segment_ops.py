"""Sparse segment reductions: reductions of rows gathered by index ("bags").

``sparse_segment_sum(data, indices, segment_ids)`` is
``segment_sum(gather(data, indices), segment_ids)`` without the gathered
copy: each output row (a bag) is accumulated straight from the rows of
`data` it names, by one thread, in input order
(``sparsegrad._kernels.segment``).  :func:`embedding_bag` is the same
primitive over row splits, with optional per-entry weights; it is what
:func:`sparsegrad.nn.embedding_lookup_sparse` runs.

The gradient w.r.t. the table is an :class:`~sparsegrad.IndexedSlices` with
one row per distinct index (sorted), like TensorFlow's
``SparseSegment*GradV2`` (``sparse_gradient=True``): cost O(nnz x row
width), never O(table rows).  One row per distinct index rather than per
occurrence because the optimizer that consumes it sums repeated rows anyway:
summing them here, while the upstream rows are hot in cache, writes and
reads fewer rows (see ``benchmarks/bench_embedding_bag.py``).  The gradient
is itself differentiable (its transpose is a weighted bag again).

CuPy arrays (float32 / float64) run the CUDA twins of the bag kernels
(``_cuda/segment.cu``), forward and gradient, with the CPU's bits; indices
and segment ids are checked with one device reduction and one read back.
"""

import numpy as np

from .._cuda import segment as _cuda_segment
from .._kernels import segment as _segment
from ..autodiff.recording import is_recording, record_operation
from ..autodiff.registry import register_gradient
from ..errors import InvalidArgumentError
from ..framework import buffers, sparse_rows
from ..framework.backend import get_array_module, is_cupy_array, kernels_for_cpu
from ..framework.dtypes import is_kernel_float
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, wrap
from ..framework.threads import get_num_threads
from ..framework.variable import Variable
from . import array_ops
from ._device import (
    check_device_dtype,
    host_copy,
)
from ._helpers import as_borrowed_tensor, as_tensor

__all__ = [
    "sparse_segment_sum",
    "sparse_segment_mean",
    "sparse_segment_sqrt_n",
    "embedding_bag",
]

#: The bag kernels in use: the AVX2 build where the CPU has AVX2 (the same
#: bits: no FMA, no sum across vector lanes), else the baseline one.
_bags = kernels_for_cpu(_segment, "segment_avx2")

# The kernel's combiner codes (COMBINER_* in _kernels/_sparse_segment.pxi).
_COMBINERS = {"sum": 0, "mean": 1, "sqrtn": 2}
_OP_TYPES = {
    "sum": "SparseSegmentSum",
    "mean": "SparseSegmentMean",
    "sqrtn": "SparseSegmentSqrtN",
}
_EMPTY = {np.dtype(np.float32): np.zeros(0, np.float32),
          np.dtype(np.float64): np.zeros(0, np.float64)}


# -- the shared primitive ------------------------------------------------------------


def _reduce(table, indices, weights, splits, combiner):
    """The bags of a validated `table` (ndarray of rank >= 1): an ndarray of
    shape ``(len(splits) - 1,) + table.shape[1:]``.

    float32/float64 go to the kernel (a non-contiguous table has its rows
    gathered first, O(nnz)); float16 is computed in float32 and rounded once;
    integers (sum only) take a NumPy path.
    """
    n_bags = splits.shape[0] - 1
    row_shape = table.shape[1:]
    dtype = table.dtype
    if is_cupy_array(table):
        return _reduce_device(table, indices, weights, splits, combiner)
    if not is_kernel_float(dtype) or not table.flags.c_contiguous:
        rows = table[indices]  # O(nnz x width), never a copy of the table
        if dtype.kind in "iub":  # sum of integers, unweighted (checked)
            out = np.zeros((n_bags,) + row_shape, dtype=dtype)
            np.add.at(out, _segment_of(splits, indices.shape[0]), rows)
            return out
        work = np.float32 if dtype == np.float16 else dtype
        rows = np.ascontiguousarray(rows, dtype=work)
        local = np.arange(indices.shape[0], dtype=np.int64)
        w = None if weights is None else weights.astype(work)
        return _reduce(rows, local, w, splits, combiner).astype(dtype, copy=False)
    width = int(np.prod(row_shape, dtype=np.int64))
    if n_bags == 0 or width == 0:
        return np.zeros((n_bags,) + row_shape, dtype=dtype)
    # A recycled block: a fresh multi-MiB result would pay a page fault per
    # 4 KiB on every call (the kernel writes every element).
    out = buffers.empty((n_bags,) + row_shape, dtype)
    _bags.sparse_segment_reduce(
        table.reshape(table.shape[0], width), indices,
        _EMPTY[dtype] if weights is None else weights, splits,
        _COMBINERS[combiner], out.reshape(n_bags, width), get_num_threads(),
    )
    return out


def _reduce_device(table, indices, weights, splits, combiner):
    """:func:`_reduce` of a cupy `table` (indices, weights and splits on the
    device too): the bag kernel of ``_cuda.segment``."""
    xp = get_array_module(table, indices, splits, weights)
    n_bags = splits.shape[0] - 1
    row_shape = table.shape[1:]
    dtype = table.dtype
    if dtype == np.float16:  # in float32, rounded once (as on the CPU)
        rows = xp.ascontiguousarray(table[indices]).astype(np.float32)
        local = xp.arange(indices.shape[0], dtype=np.int64)
        w = None if weights is None else weights.astype(np.float32)
        return _reduce_device(rows, local, w, splits, combiner).astype(dtype)
    check_device_dtype(dtype, "the bags")
    if not table.flags.c_contiguous:  # its rows, O(nnz x width)
        table = xp.ascontiguousarray(table[indices])
        indices = xp.arange(indices.shape[0], dtype=np.int64)
    width = int(np.prod(row_shape, dtype=np.int64))
    if n_bags == 0 or width == 0:
        return xp.zeros((n_bags,) + row_shape, dtype=dtype)
    out = xp.empty((n_bags,) + row_shape, dtype=dtype)
    if weights is None:  # the kernel's "unweighted"
        w = xp.zeros((0,), dtype=dtype)
    else:
        w = xp.ascontiguousarray(weights.astype(dtype, copy=False))
    _cuda_segment.sparse_segment_reduce(
        table.reshape(table.shape[0], width), xp.ascontiguousarray(indices), w,
        splits, _COMBINERS[combiner], out.reshape(n_bags, width), 0)
    return out


def _bag_buffers(table, nnz, n_bags, what, what_rows):
    """What :func:`_reduce` allocates for `n_bags` bags of `nnz` rows of
    `table`, for ``check_allocation``: the output, and off the kernels (other
    dtypes, a non-contiguous table) the gathered rows and their float32
    copy."""
    row_shape = tuple(table.shape[1:])
    out = [((n_bags,) + row_shape, table.dtype, what)]
    if not is_kernel_float(table.dtype) or not table.flags.c_contiguous:
        out.append(((nnz,) + row_shape, table.dtype, what_rows))
        if table.dtype == np.float16:
            out.append(((nnz,) + row_shape, np.float32, what_rows))
    return out


def _segment_of(splits, nnz):
    """The bag of each of the `nnz` entries of `splits` (from 0 to `nnz`):
    int64, O(nnz)."""
    if is_cupy_array(splits):
        return _cuda_segment.segment_of_splits(splits, nnz)
    counts = np.diff(splits)
    return np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)


def _coefficients(splits, weights, combiner, dtype, segment_of):
    """The factor of each entry in the gradient, or None for ones."""
    if is_cupy_array(splits):
        return _coefficients_device(splits, weights, combiner, dtype, segment_of)
    counts = np.diff(splits)
    if weights is None:
        if combiner == "sum":
            return None
        with np.errstate(divide="ignore"):
            if combiner == "mean":
                per_bag = np.ones(1, dtype) / counts.astype(dtype)
            else:
                per_bag = np.ones(1, dtype) / np.sqrt(counts).astype(dtype)
        return np.ascontiguousarray(per_bag[segment_of])
    if combiner == "sum":
        return weights
    n_bags = counts.shape[0]
    if combiner == "mean":
        denom = np.bincount(segment_of, weights=weights, minlength=n_bags)
    else:
        denom = np.sqrt(np.bincount(segment_of, weights=weights * weights,
                                    minlength=n_bags))
    denom = denom.astype(dtype)
    safe = np.where(denom == 0, np.ones(1, dtype), denom)
    per_bag = np.where(denom == 0, np.zeros(1, dtype), np.ones(1, dtype) / safe)
    return np.ascontiguousarray(weights * per_bag[segment_of])


def _coefficients_device(splits, weights, combiner, dtype, segment_of):
    """:func:`_coefficients` on the device, with the CPU's bits: the per-bag
    sums of the weights (float64, in entry order from zero, as
    ``np.bincount``) are bags of the weights themselves."""
    xp = get_array_module(splits, weights, segment_of)
    dtype = np.dtype(dtype)
    counts = splits[1:] - splits[:-1]
    one = xp.ones((1,), dtype=dtype)
    if weights is None:
        if combiner == "sum":
            return None
        with np.errstate(divide="ignore"):  # empty bags (never looked up)
            if combiner == "mean":
                per_bag = one / counts.astype(dtype)
            else:
                per_bag = one / xp.sqrt(counts.astype(np.float64)).astype(dtype)
        return xp.ascontiguousarray(per_bag[segment_of])
    if combiner == "sum":
        return weights
    n_bags = counts.shape[0]
    terms = weights if combiner == "mean" else weights * weights
    terms = xp.ascontiguousarray(terms.astype(np.float64)).reshape(-1, 1)
    denom = xp.empty((n_bags, 1), dtype=np.float64)
    _cuda_segment.sparse_segment_reduce(
        terms, xp.arange(terms.shape[0], dtype=np.int64),
        xp.zeros((0,), dtype=np.float64), splits, _COMBINERS["sum"], denom, 0)
    denom = denom.reshape(-1)
    if combiner == "sqrtn":
        denom = xp.sqrt(denom)
    denom = denom.astype(dtype)
    safe = xp.where(denom == 0, one, denom)
    per_bag = xp.where(denom == 0, xp.zeros((1,), dtype=dtype), one / safe)
    return xp.ascontiguousarray(weights * per_bag[segment_of])


def _table_rows(indices, n_rows):
    """:func:`~sparsegrad.framework.sparse_rows.group_rows` of the bags' table
    rows (on their device), with the empty grouping for no indices."""
    if indices.shape[0]:
        if is_cupy_array(indices):
            indices = get_array_module(indices).ascontiguousarray(indices)
        return sparse_rows.group_rows(indices, max(n_rows - 1, 0))
    xp = get_array_module(indices)
    return (indices[:0].copy(), xp.zeros((0,), dtype=np.int64),
            xp.zeros((1,), dtype=np.int64))


def _recorded_bag_grad(grad, values, unique, order, starts, coef, splits,
                       table_shape):
    """The table's gradient (`values` of the rows `unique`), recorded as
    "SparseSegmentReduceGrad" so that it is differentiable again."""
    out = wrap(values)
    record_operation(
        "SparseSegmentReduceGrad", (grad,), (out,),
        {"order": order, "starts": starts, "coef": coef, "splits": splits,
         "n_unique": unique.shape[0]},
    )
    return IndexedSlices._from_trusted(out, wrap(unique), tuple(table_shape))


def _bag_grad_device(grad, table_shape, indices, segment_of, coef, splits):
    """:func:`_bag_grad` of a cupy upstream gradient."""
    xp = get_array_module(grad._value, indices, segment_of)
    g = xp.ascontiguousarray(grad._value)
    dtype = g.dtype
    work_coef = coef
    if dtype == np.float16:  # in float32, rounded once (as on the CPU)
        g = g.astype(np.float32)
        work_coef = None if coef is None else coef.astype(np.float32)
    check_device_dtype(g.dtype, "the bag gradient")
    row_shape = tuple(table_shape[1:])
    width = int(np.prod(row_shape, dtype=np.int64))
    unique, order, starts = _table_rows(indices, table_shape[0])
    shape = (unique.shape[0],) + row_shape
    if unique.shape[0] * width:
        values = xp.empty(shape, dtype=g.dtype)
        c = xp.zeros((0,), dtype=g.dtype) if work_coef is None else (
            xp.ascontiguousarray(work_coef.astype(g.dtype, copy=False)))
        _cuda_segment.sparse_segment_reduce_grad(
            g.reshape(g.shape[0], width), order, starts,
            xp.ascontiguousarray(segment_of), c,
            values.reshape(unique.shape[0], width), 0)
        values = values.astype(dtype, copy=False)
    else:
        values = xp.zeros(shape, dtype=dtype)
    return _recorded_bag_grad(grad, values, unique, order, starts, coef, splits,
                              table_shape)


def _bag_grad(grad, table_shape, indices, segment_of, coef, splits):
    """The gradient w.r.t. the table: IndexedSlices over the sorted distinct
    indices; recorded as "SparseSegmentReduceGrad" (differentiable again)."""
    grad = array_ops.densify(grad)
    if is_cupy_array(grad._value) or is_cupy_array(indices):
        return _bag_grad_device(grad, table_shape, indices, segment_of, coef, splits)
    g = np.ascontiguousarray(grad._value)
    dtype = g.dtype
    n_rows = table_shape[0]
    row_shape = tuple(table_shape[1:])
    width = int(np.prod(row_shape, dtype=np.int64))
    unique, order, starts = _table_rows(indices, n_rows)
    shape = (unique.shape[0],) + row_shape
    if is_kernel_float(dtype) and unique.shape[0] * width:
        values = buffers.empty(shape, dtype)  # the kernel writes every row
        c = _EMPTY[dtype] if coef is None else coef.astype(dtype, copy=False)
        _bags.sparse_segment_reduce_grad(
            g.reshape(g.shape[0], width), order, starts, segment_of, c,
            values.reshape(unique.shape[0], width), get_num_threads(),
        )
    else:
        values = np.zeros(shape, dtype=dtype)
    if not is_kernel_float(dtype) and values.size:  # float16: in float32
        rows = g.astype(np.float32).reshape(g.shape[0], width)[segment_of]
        if coef is not None:
            rows *= coef.astype(np.float32)[:, None]
        group = np.repeat(np.arange(unique.shape[0]), np.diff(starts))
        acc = np.zeros((unique.shape[0], width), np.float32)
        np.add.at(acc, group, rows[order])
        values[...] = acc.reshape(values.shape)
    return _recorded_bag_grad(grad, values, unique, order, starts, coef, splits,
                              table_shape)


@register_gradient("SparseSegmentReduceGrad")
def _bag_grad_grad(op, grad):
    # values[u] = sum_{k in group u} coef[k] * g[segment_of[k]] is linear in
    # g; its transpose is the weighted bag dg[s] = sum_{k in bag s} coef[k] *
    # dvalues[u(k)], where u(k) is the group of entry k.
    order, starts = op.get_attr("order"), op.get_attr("starts")
    splits, coef = op.get_attr("splits"), op.get_attr("coef")
    if is_cupy_array(order):
        group_of = _cuda_segment.cupy().empty((order.shape[0],), dtype=np.int64)
        group_of[order] = _cuda_segment.segment_of_splits(starts, order.shape[0])
    else:
        group_of = np.empty(order.shape[0], np.int64)
        group_of[order] = np.repeat(
            np.arange(op.get_attr("n_unique"), dtype=np.int64), np.diff(starts))
    return (_bag(array_ops.densify(grad), group_of, splits, coef, "sum"),)


def _bag(table, ids, splits, weights, combiner):
    """Run and record a validated bag: `table` a Tensor, the rest ndarrays."""
    out = wrap(_reduce(table._value, ids, weights, splits, combiner))
    record_operation(
        "EmbeddingBag", (table,), (out,),
        {"ids": ids, "splits": splits, "weights": weights, "combiner": combiner},
    )
    return out


@register_gradient("EmbeddingBag")
def _embedding_bag_grad(op, grad):
    (table,) = op.inputs
    ids, splits = op.get_attr("ids"), op.get_attr("splits")
    weights, combiner = op.get_attr("weights"), op.get_attr("combiner")
    segment_of = _segment_of(splits, ids.shape[0])
    coef = _coefficients(splits, weights, combiner, table.dtype, segment_of)
    return (_bag_grad(grad, table.shape, ids, segment_of, coef, splits),)


# -- argument checks -----------------------------------------------------------------


def _table(data, what, name="data"):
    t = as_borrowed_tensor(data, name)  # an ndarray (or cupy) table is not copied
    if t.ndim == 0:
        raise InvalidArgumentError(
            f"{what}: Shape must be at least rank 1 but is rank 0 ({name} is a "
            f"scalar)"
        )
    return t


def _check_float(t, what, combiner, name="data"):
    if t.dtype.kind != "f" and combiner != "sum":
        raise InvalidArgumentError(
            f"{what}: {name} must be a floating-point tensor for combiner "
            f"{combiner!r}, got dtype {t.dtype}"
        )
    if t.dtype.kind not in "iuf":
        raise InvalidArgumentError(
            f"{what}: {name} must be a real numeric tensor, got dtype {t.dtype}"
        )


def _num_segments(num_segments, what):
    if num_segments is None:
        return None
    if isinstance(num_segments, Variable):
        num_segments = num_segments.numpy()
    if isinstance(num_segments, Tensor):
        num_segments = num_segments._value
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


def _index_input(x, name):
    if isinstance(x, Variable):
        x = x.value()
    if isinstance(x, Tensor):
        x = x._value
    return sparse_rows.as_index_array(x, name)


def _sparse_segment(combiner, data, indices, segment_ids, num_segments):
    what = f"sparse_segment_{'sqrt_n' if combiner == 'sqrtn' else combiner}"
    t = _table(data, what)
    _check_float(t, what, combiner)
    idx = _index_input(indices, "indices")
    seg = _index_input(segment_ids, "segment_ids")
    if idx.shape[0] != seg.shape[0]:
        raise InvalidArgumentError(
            f"{what}: segment_ids and indices should have same size. (indices "
            f"has {idx.shape[0]} entries, segment_ids {seg.shape[0]})"
        )
    n = _num_segments(num_segments, what)
    n_rows = t.shape[0]
    if is_cupy_array(t._value) or is_cupy_array(idx) or is_cupy_array(seg):
        get_array_module(t._value, idx, seg)  # no mixing of host and device
        check_device_dtype(t.dtype, what, half=True)
    # the output (and, off the kernel, the gathered rows) with the splits
    sized_by = f"{what}: {'segment_ids' if n is None else 'num_segments'}"
    splits = sparse_rows.sorted_segment_splits(
        seg, n, what=sized_by,
        also=lambda n_segments: _bag_buffers(t._value, idx.shape[0], n_segments,
                                             sized_by, f"{what}: indices"))
    bad = sparse_rows.first_out_of_range(idx, n_rows)
    if bad is not None:
        raise InvalidArgumentError(
            f"{what}: Bad: indices[{bad}] == {int(idx[bad])} out of range "
            f"[0, {n_rows})"
        )
    # Private copies: the recorded op must not see later edits of the caller's
    # arrays (they are small next to the output).
    idx_t = wrap(idx.copy())
    seg_t = wrap(seg.copy())
    out = wrap(_reduce(t._value, idx_t._value, None, splits, combiner))
    record_operation(_OP_TYPES[combiner], (t, idx_t, seg_t), (out,),
                     {"splits": splits})
    return out


def _sparse_segment_grad(op, grad, combiner):
    data, indices, segment_ids = op.inputs
    splits = op.get_attr("splits")
    seg = segment_ids._value
    coef = _coefficients(splits, None, combiner, data.dtype, seg)
    return (
        _bag_grad(grad, data.shape, indices._value, seg, coef, splits),
        None,
        None,
    )


# -- public ops ----------------------------------------------------------------------


def sparse_segment_sum(data, indices, segment_ids, num_segments=None, name=None):
    """Sum rows of `data` selected by `indices`, grouped by `segment_ids`.

    ``output[s] = sum(data[indices[k]] for k with segment_ids[k] == s)``:
    :func:`sparsegrad.math.segment_sum` of ``gather(data, indices)``, without
    the gathered copy.

    Parameters
    ----------
    data : Variable, Tensor or array_like of shape (n_rows, ...)
        float32, float64, float16 or an integer dtype.  An ndarray is read in
        place, not copied.
    indices : array_like of shape (nnz,), int32 or int64
        Rows of `data`, in ``[0, n_rows)``; repeats count each time.
    segment_ids : array_like of shape (nnz,), int32 or int64
        Sorted, non-negative bag of each entry.
    num_segments : int, optional
        The number of output rows; every id must be below it.  By default
        ``segment_ids[-1] + 1`` (0 when empty).
    name : str, optional
        Ignored.

    Returns
    -------
    Tensor of shape ``(n_segments,) + data.shape[1:]`` and the dtype of `data`
        Segments without entries are zeros.  float32 is accumulated in
        float32 (float16 in float32, rounded once), in input order.

    Raises
    ------
    InvalidArgumentError
        ``Bad: indices[1] == 7 out of range [0, 3)`` for a bad index;
        ``segment_ids and indices should have same size.``; the sorted
        segment ids' errors (``segment ids are not increasing``, ``segment
        ids must be >= 0``, ``Segment id -1 out of range [0, 2), ...``;
        with `num_segments`, ``segment ids must be < num_segments``);
        ``Shape must be at least rank 1`` for scalar `data`; a negative
        `num_segments`; non-integer indices; a result (sized by the last
        segment id or `num_segments`) that needs more memory than the
        process may allocate, before anything is allocated.

    Notes
    -----
    The gradient w.r.t. `data` is an :class:`~sparsegrad.IndexedSlices` of
    the shape of `data` over the sorted distinct indices (TensorFlow's
    ``sparse_gradient=True`` form; its default is dense), one row per index
    summed in input order: cost O(nnz x row width).  `indices` and
    `segment_ids` get None.

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
    return _sparse_segment("sum", data, indices, segment_ids, num_segments)


def sparse_segment_mean(data, indices, segment_ids, num_segments=None, name=None):
    """Mean of rows of `data` selected by `indices`, grouped by `segment_ids`.

    ``output[s]`` is the sum of :func:`sparse_segment_sum` divided by the
    number of entries of segment ``s`` (repeated indices count each time).

    Parameters
    ----------
    data : Variable, Tensor or array_like of shape (n_rows, ...), floating
        float32, float64 or float16.  An ndarray is read in place.
    indices : array_like of shape (nnz,), int32 or int64
        Rows of `data`, in ``[0, n_rows)``.
    segment_ids : array_like of shape (nnz,), int32 or int64
        Sorted, non-negative.
    num_segments : int, optional
        The number of output rows (default ``segment_ids[-1] + 1``).
    name : str, optional
        Ignored.

    Returns
    -------
    Tensor of shape ``(n_segments,) + data.shape[1:]`` and the dtype of `data`
        Empty segments are zeros.  The sum is accumulated in the dtype of
        `data`, then divided by the count in that dtype.

    Raises
    ------
    InvalidArgumentError
        For integer `data`, and as :func:`sparse_segment_sum`.

    Notes
    -----
    The gradient w.r.t. `data` is an :class:`~sparsegrad.IndexedSlices` over
    the sorted distinct indices: ``upstream[s] / count[s]`` summed per index.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> c = np.array([[1.0, 2, 3, 4], [-1, -2, -3, -4], [5, 6, 7, 8]])
    >>> sg.sparse.segment_mean(c, [0, 2, 2], [0, 0, 0]).numpy()
    array([[3.66666667, 4.66666667, 5.66666667, 6.66666667]])
    """
    del name
    return _sparse_segment("mean", data, indices, segment_ids, num_segments)


def sparse_segment_sqrt_n(data, indices, segment_ids, num_segments=None,
                          name=None):
    """Sum of rows of `data` selected by `indices`, over the square root of
    each segment's size.

    Parameters
    ----------
    data : Variable, Tensor or array_like of shape (n_rows, ...), floating
        float32, float64 or float16.  An ndarray is read in place.
    indices : array_like of shape (nnz,), int32 or int64
        Rows of `data`, in ``[0, n_rows)``.
    segment_ids : array_like of shape (nnz,), int32 or int64
        Sorted, non-negative.
    num_segments : int, optional
        The number of output rows (default ``segment_ids[-1] + 1``).
    name : str, optional
        Ignored.

    Returns
    -------
    Tensor of shape ``(n_segments,) + data.shape[1:]`` and the dtype of `data`
        Empty segments are zeros.  The square root of the count is taken in
        float64 and rounded to the dtype of `data`, as TensorFlow does.

    Raises
    ------
    InvalidArgumentError
        For integer `data`, and as :func:`sparse_segment_sum`.

    Notes
    -----
    The gradient w.r.t. `data` is an :class:`~sparsegrad.IndexedSlices` over
    the sorted distinct indices: ``upstream[s] / sqrt(count[s])`` summed per
    index.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> c = np.array([[1.0, 2, 3, 4], [-1, -2, -3, -4], [5, 6, 7, 8]])
    >>> sg.sparse.segment_sqrt_n(c, [2, 2], [0, 0]).numpy()
    array([[ 7.07106781,  8.48528137,  9.89949494, 11.3137085 ]])
    """
    del name
    return _sparse_segment("sqrtn", data, indices, segment_ids, num_segments)


@register_gradient("SparseSegmentSum")
def _sparse_segment_sum_grad(op, grad):
    return _sparse_segment_grad(op, grad, "sum")


@register_gradient("SparseSegmentMean")
def _sparse_segment_mean_grad(op, grad):
    return _sparse_segment_grad(op, grad, "mean")


@register_gradient("SparseSegmentSqrtN")
def _sparse_segment_sqrt_n_grad(op, grad):
    return _sparse_segment_grad(op, grad, "sqrtn")


# -- embedding bags over row splits -------------------------------------------------


def embedding_bag(params, ids, splits, weights=None, combiner="sum", name=None,
                  ids_below=None):
    """Combine the rows of a table named by each bag of ids.

    Bag ``s`` holds the entries ``k`` in ``[splits[s], splits[s + 1])``;
    ``output[s] = combine(weights[k] * params[ids[k]])`` with the combiners
    of :func:`sparsegrad.nn.embedding_lookup_sparse` (which validates its
    ``scipy.sparse`` or ragged ids and calls this).

    Parameters
    ----------
    params : Variable, Tensor or array_like of shape (n_rows, ...)
        float32, float64 or float16 (integers with ``combiner="sum"`` and no
        weights).  An ndarray is read in place, not copied.
    ids : array_like of shape (nnz,), int32 or int64
        Rows of `params`, in ``[0, n_rows)``.
    splits : array_like of shape (n_bags + 1,), int32 or int64
        Non-decreasing, from 0 to ``nnz``.
    weights : array_like of shape (nnz,), optional
        Real weights, cast to the dtype of `params` (a constant: no
        gradient).  None means ones.
    combiner : {"sum", "mean", "sqrtn"}, default="sum"
        mean divides by the sum of the weights (the count when unweighted),
        sqrtn by the square root of the sum of their squares; a zero
        denominator gives zeros (``div_no_nan``).
    name : str, optional
        Ignored.
    ids_below : int, optional
        A bound the caller has already checked every id against (the
        number of columns of a ``scipy.sparse`` matrix whose structure it
        checked); when it is at most ``n_rows``, the ids are not scanned
        again.

    Returns
    -------
    Tensor of shape ``(n_bags,) + params.shape[1:]`` and the dtype of `params`
        Accumulated in that dtype, in entry order (float16 in float32).

    Raises
    ------
    InvalidArgumentError
        ``ids[3] = 9 is not in [0, 4)`` for an id out of range, bad splits
        (not 1-D, empty, not from 0 to ``nnz``, decreasing), weights of
        another length, scalar `params`, integer `params` with weights or
        another combiner, or bags that need more memory than the process may
        allocate.
    ValueError
        For an unknown combiner.

    Notes
    -----
    The gradient w.r.t. `params` is an :class:`~sparsegrad.IndexedSlices`
    over the sorted distinct ids; forward and gradient cost O(nnz x row
    width).

    Examples
    --------
    >>> from sparsegrad.ops.sparse_segment_ops import embedding_bag
    >>> table = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> embedding_bag(table, [0, 2, 1], [0, 2, 2, 3]).numpy()
    array([[6., 8.],
           [0., 0.],
           [3., 4.]])
    >>> embedding_bag(table, [0, 2, 1], [0, 2, 3], weights=[1.0, 3.0, 2.0],
    ...               combiner="mean").numpy()
    array([[4., 5.],
           [3., 4.]])
    """
    del name
    what = "embedding_bag"
    combiner = check_combiner(combiner)
    t = _table(params, what, "params")
    idx = _index_input(ids, "ids")
    spl = _index_input(splits, "splits")
    nnz = idx.shape[0]
    device = is_cupy_array(t._value) or is_cupy_array(idx) or is_cupy_array(spl)
    if device:
        get_array_module(t._value, idx, spl)  # no mixing of host and device
        (spl_summary,) = _cuda_segment.read_summaries(_cuda_segment.summarize(spl))
        if (spl.shape[0] == 0 or spl_summary[3] != 0 or spl_summary[4] != nnz
                or spl_summary[2] < spl.shape[0]):
            check_bag_splits(host_copy(spl), nnz, what)
            raise AssertionError("splits failed a check that found no error")
    else:
        check_bag_splits(spl, nnz, what)
    w = None
    if weights is not None:
        w = as_tensor(weights, name="weights")._value
        if not is_cupy_array(w):
            w = np.asarray(w)
        if w.shape != (nnz,):
            raise InvalidArgumentError(
                f"{what}: weights must have one entry per id, shape ({nnz},), got "
                f"shape {w.shape}"
            )
        if w.dtype.kind not in "iuf":
            raise InvalidArgumentError(
                f"{what}: weights must be real numbers, got dtype {w.dtype}"
            )
    if t.dtype.kind != "f" and (combiner != "sum" or w is not None):
        raise InvalidArgumentError(
            f"{what}: params must be floating-point for weights or combiner "
            f"{combiner!r}, got dtype {t.dtype}"
        )
    _check_float(t, what, "sum", "params")
    # the bags' rows: one per split, whatever the size of the table
    buffers.check_allocation(*_bag_buffers(t._value, nnz, spl.shape[0] - 1,
                                           f"{what}: splits", f"{what}: ids"))
    if device:
        get_array_module(t._value, w)
        check_device_dtype(t.dtype, what, half=True)
        sparse_rows.check_in_range(idx, t.shape[0], "ids")
        # As below: private copies while a tape records.
        copy = is_recording()
        return _bag(t, idx.copy() if copy else idx,
                    spl.astype(np.int64, copy=copy),
                    None if w is None else w.astype(t.dtype, copy=copy), combiner)
    if ids_below is None or ids_below > t.shape[0]:
        sparse_rows.check_in_range(idx, t.shape[0], "ids")
    # A recorded op keeps its ids, splits and weights for the gradient: its
    # own copies then, so that the caller may reuse their arrays.
    keep = buffers.copy if is_recording() else np.asarray
    ids_kept = keep(idx)
    splits64 = keep(spl, dtype=np.int64)
    if w is not None:
        w = keep(w, dtype=t.dtype)
    return _bag(t, ids_kept, splits64, w, combiner)


def check_bag_splits(spl, nnz, what, name="splits"):
    """The row splits of bags of `nnz` ids: from 0 to `nnz`, non-decreasing.

    Parameters
    ----------
    spl : ndarray of int32 or int64 (on the host)
    nnz : int
        The number of ids.
    what : str
        The op, which starts the message.
    name : str, optional
        The argument, as the message names it (``"sp_ids.row_splits"``).

    Returns
    -------
    None

    Raises
    ------
    InvalidArgumentError
        If `spl` is empty, does not run from 0 to `nnz`, or decreases.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.errors import InvalidArgumentError
    >>> try:
    ...     check_bag_splits(np.array([0, 2, 1, 3]), 3, "op")
    ... except InvalidArgumentError as error:
    ...     print(error)
    op: splits must be non-decreasing, but splits[2] = 1 < splits[1] = 2
    """
    if spl.shape[0] == 0:
        raise InvalidArgumentError(f"{what}: {name} is empty")
    if spl[0] != 0 or spl[-1] != nnz:
        raise InvalidArgumentError(
            f"{what}: {name} must run from 0 to the number of ids ({nnz}), got "
            f"{int(spl[0])} ... {int(spl[-1])}"
        )
    k = sparse_rows.first_decrease(spl)   # (a difference of extremes wraps)
    if k is not None:
        label = name.rsplit(".", 1)[-1]
        raise InvalidArgumentError(
            f"{what}: {name} must be non-decreasing, but {label}[{k + 1}] = "
            f"{int(spl[k + 1])} < {label}[{k}] = {int(spl[k])}"
        )


def check_combiner(combiner):
    """`combiner` as one of "sum", "mean", "sqrtn" (None means "mean").

    Parameters
    ----------
    combiner : str or None

    Returns
    -------
    str

    Raises
    ------
    ValueError
        TensorFlow's ``combiner must be one of 'mean', 'sqrtn' or 'sum', got
        max``.

    Examples
    --------
    >>> from sparsegrad.ops.sparse_segment_ops import check_combiner
    >>> check_combiner(None)
    'mean'
    """
    if combiner is None:
        return "mean"
    if not isinstance(combiner, str) or combiner not in _COMBINERS:
        raise ValueError(
            f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}"
        )
    return combiner

