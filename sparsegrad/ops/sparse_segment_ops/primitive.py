"""The bag primitive of the sparse segment ops: rows of a table gathered by
index and reduced per bag (forward), the table's gradient as IndexedSlices
over the sorted distinct indices, and that gradient's own gradient (a
weighted bag again).  Every function takes the call's backend `be`: the host
runs the bag kernels of ``_kernels.segment`` (the AVX2 build where the CPU
has it), a GPU the CUDA twins of ``_cuda.segment``, with the same bits.

Half tables (float16, bfloat16): the host's bag kernel reads the bags' half
rows as float32 as it sums them (``sparse_segment_reduce_half``; on the GPU
the gathered rows are converted first), never the whole table; the bags
(and the gradient's sums) accumulate in float32 and are rounded once to the
output's dtype (the table's, or float32 when asked).  The bits are those of
the float32 path on the upcast table, rounded once."""

import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import register_gradient
from ...framework import buffers, sparse_rows
from ...framework.backend import backend_of
from ...framework.dtypes import BFLOAT16, is_half, is_kernel_float
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import wrap
from ...framework.threads import get_num_threads
from .. import array_ops
from .._device import check_device_dtype
from .checks import COMBINERS, work_dtype

__all__ = ["reduce_bags", "bag_buffers", "coefficients", "bag_grad",
           "run_bag"]


_EMPTY = {np.dtype(np.float32): np.zeros(0, np.float32),
          np.dtype(np.float64): np.zeros(0, np.float64)}


# -- the shared primitive ------------------------------------------------------------


def reduce_bags(be, table, indices, weights, splits, combiner, out_dtype=None):
    """The bags of a validated `table` (ndarray of rank >= 1): an ndarray of
    shape ``(len(splits) - 1,) + table.shape[1:]`` and dtype `out_dtype`
    (None: the table's; float32 for a half table, checked by the caller).

    float32/float64 go to the kernel (a non-contiguous table has its rows
    gathered first, O(nnz)); a C-contiguous float16 or bfloat16 table goes
    to the half kernel (float32 sums, rounded once to `out_dtype`); other
    half tables have their rows gathered and converted to float32 first;
    integers (sum only) take a NumPy path.
    """
    n_bags = splits.shape[0] - 1
    row_shape = table.shape[1:]
    dtype = table.dtype
    out_dtype = dtype if out_dtype is None else np.dtype(out_dtype)
    if be.on_gpu:
        return _reduce_device(be, table, indices, weights, splits, combiner,
                              out_dtype)
    if is_half(dtype) and table.flags.c_contiguous and table.ndim >= 1:
        return _reduce_half(be, table, indices, weights, splits, combiner,
                            out_dtype)
    if not is_kernel_float(dtype) or not table.flags.c_contiguous:
        rows = table[indices]  # O(nnz x width), never a copy of the table
        if dtype.kind in "iub":  # sum of integers, unweighted (checked)
            out = np.zeros((n_bags,) + row_shape, dtype=dtype)
            np.add.at(out, segment_of(be, splits, indices.shape[0]), rows)
            return out
        work = work_dtype(dtype)
        rows = np.ascontiguousarray(rows, dtype=work)
        local = np.arange(indices.shape[0], dtype=np.int64)
        w = None if weights is None else weights.astype(work, copy=False)
        return reduce_bags(be, rows, local, w, splits, combiner).astype(
            out_dtype, copy=False)
    width = int(np.prod(row_shape, dtype=np.int64))
    if n_bags == 0 or width == 0:
        return np.zeros((n_bags,) + row_shape, dtype=dtype)
    # A recycled block: a fresh multi-MiB result would pay a page fault per
    # 4 KiB on every call (the kernel writes every element).
    out = buffers.empty((n_bags,) + row_shape, dtype)
    be.kernels("bags").sparse_segment_reduce(
        table.reshape(table.shape[0], width), indices,
        _EMPTY[dtype] if weights is None else weights, splits,
        COMBINERS[combiner], out.reshape(n_bags, width), get_num_threads(),
    )
    return out


# "No rounded rows" for the half kernel.
_NO_HALF_ROWS = np.zeros(0, np.uint16)


def _reduce_half(be, table, indices, weights, splits, combiner, out_dtype):
    """:func:`reduce_bags` of a C-contiguous half host table: the half bag
    kernel (float32 sums of the rows it reads), rounded once to
    `out_dtype`."""
    n_bags = splits.shape[0] - 1
    row_shape = table.shape[1:]
    width = int(np.prod(row_shape, dtype=np.int64))
    if n_bags == 0 or width == 0:
        return np.zeros((n_bags,) + row_shape, dtype=out_dtype)
    f32 = np.dtype(np.float32)
    out = buffers.empty((n_bags,) + row_shape, f32)
    rounded = (_NO_HALF_ROWS if out_dtype == f32
               else buffers.empty((n_bags,) + row_shape, out_dtype))
    be.kernels("bags").sparse_segment_reduce_half(
        table.reshape(table.shape[0], width).view(np.uint16), indices,
        _EMPTY[f32] if weights is None else weights.astype(f32, copy=False),
        splits, COMBINERS[combiner], out.reshape(n_bags, width),
        rounded.reshape(-1, width).view(np.uint16), table.dtype == BFLOAT16,
        get_num_threads())
    return out if out_dtype == f32 else rounded


def _reduce_device(be, table, indices, weights, splits, combiner, out_dtype):
    """:func:`reduce_bags` of a device `table` (indices, weights and splits on
    the device too): the bag kernel of ``_cuda.segment``."""
    xp = be.xp
    n_bags = splits.shape[0] - 1
    row_shape = table.shape[1:]
    dtype = table.dtype
    if is_half(dtype):  # the gathered rows in float32, rounded once (as on the CPU)
        rows = xp.ascontiguousarray(table[indices]).astype(np.float32)
        local = xp.arange(indices.shape[0], dtype=np.int64)
        w = None if weights is None else weights.astype(np.float32)
        return _reduce_device(be, rows, local, w, splits, combiner,
                              rows.dtype).astype(out_dtype, copy=False)
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
    be.kernels("bags").sparse_segment_reduce(
        table.reshape(table.shape[0], width), xp.ascontiguousarray(indices), w,
        splits, COMBINERS[combiner], out.reshape(n_bags, width), 0)
    return out


def bag_buffers(table, nnz, n_bags, what, what_rows, out_dtype=None):
    """What :func:`reduce_bags` allocates for `n_bags` bags of `nnz` rows of
    `table`, for ``check_allocation``: the output (of `out_dtype`, None for
    the table's), and off the kernels (other dtypes, a non-contiguous table)
    the gathered rows, and for a half table their float32 copy and the
    float32 bags before their rounding."""
    row_shape = tuple(table.shape[1:])
    out_dtype = table.dtype if out_dtype is None else out_dtype
    out = [((n_bags,) + row_shape, out_dtype, what)]
    if is_half(table.dtype) and table.flags.c_contiguous:
        # the half kernel's float32 bags, before their rounding
        if out_dtype != np.float32:
            out.append(((n_bags,) + row_shape, np.float32, what))
        return out
    if not is_kernel_float(table.dtype) or not table.flags.c_contiguous:
        out.append(((nnz,) + row_shape, table.dtype, what_rows))
        if is_half(table.dtype):
            out.append(((nnz,) + row_shape, np.float32, what_rows))
            if out_dtype != np.float32:
                out.append(((n_bags,) + row_shape, np.float32, what))
    return out


def segment_of(be, splits, nnz):
    """The bag of each of the `nnz` entries of `splits` (from 0 to `nnz`):
    int64, O(nnz)."""
    if be.on_gpu:
        return be.kernels("segment").segment_of_splits(splits, nnz)
    counts = np.diff(splits)
    return np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)


def coefficients(be, splits, weights, combiner, dtype, segment_of):
    """The factor of each entry in the gradient, or None for ones."""
    if be.on_gpu:
        return _coefficients_device(be, splits, weights, combiner, dtype,
                                    segment_of)
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


def _coefficients_device(be, splits, weights, combiner, dtype, segment_of):
    """:func:`coefficients` on the device, with the CPU's bits: the per-bag
    sums of the weights (float64, in entry order from zero, as
    ``np.bincount``) are bags of the weights themselves."""
    xp = be.xp
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
    be.kernels("bags").sparse_segment_reduce(
        terms, xp.arange(terms.shape[0], dtype=np.int64),
        xp.zeros((0,), dtype=np.float64), splits, COMBINERS["sum"], denom, 0)
    denom = denom.reshape(-1)
    if combiner == "sqrtn":
        denom = xp.sqrt(denom)
    denom = denom.astype(dtype)
    safe = xp.where(denom == 0, one, denom)
    per_bag = xp.where(denom == 0, xp.zeros((1,), dtype=dtype), one / safe)
    return xp.ascontiguousarray(weights * per_bag[segment_of])


def _table_rows(be, indices, n_rows):
    """:func:`~sparsegrad.framework.sparse_rows.group_rows` of the bags' table
    rows (on their device), with the empty grouping for no indices."""
    xp = be.xp
    if indices.shape[0]:
        if be.on_gpu:
            indices = xp.ascontiguousarray(indices)
        return sparse_rows.group_rows(indices, max(n_rows - 1, 0))
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


def _bag_grad_device(be, grad, table_shape, indices, segment_of, coef, splits):
    """:func:`bag_grad` of a device upstream gradient."""
    xp = be.xp
    g = xp.ascontiguousarray(grad._value)
    dtype = g.dtype
    work_coef = coef
    if is_half(dtype):  # in float32, rounded once (as on the CPU)
        g = g.astype(np.float32)
        work_coef = None if coef is None else coef.astype(np.float32)
    check_device_dtype(g.dtype, "the bag gradient")
    row_shape = tuple(table_shape[1:])
    width = int(np.prod(row_shape, dtype=np.int64))
    unique, order, starts = _table_rows(be, indices, table_shape[0])
    shape = (unique.shape[0],) + row_shape
    if unique.shape[0] * width:
        values = xp.empty(shape, dtype=g.dtype)
        c = xp.zeros((0,), dtype=g.dtype) if work_coef is None else (
            xp.ascontiguousarray(work_coef.astype(g.dtype, copy=False)))
        be.kernels("bags").sparse_segment_reduce_grad(
            g.reshape(g.shape[0], width), order, starts,
            xp.ascontiguousarray(segment_of), c,
            values.reshape(unique.shape[0], width), 0)
        values = values.astype(dtype, copy=False)
    else:
        values = xp.zeros(shape, dtype=dtype)
    return _recorded_bag_grad(grad, values, unique, order, starts, coef, splits,
                              table_shape)


def bag_grad(be, grad, table_shape, indices, segment_of, coef, splits):
    """The gradient w.r.t. the table of a dense upstream `grad` (a Tensor):
    IndexedSlices over the sorted distinct indices; recorded as
    "SparseSegmentReduceGrad" (differentiable again)."""
    if be.on_gpu:
        return _bag_grad_device(be, grad, table_shape, indices, segment_of, coef,
                                splits)
    g = np.ascontiguousarray(grad._value)
    dtype = g.dtype
    work = work_dtype(dtype)
    if work != dtype:  # a half upstream: the float32 kernel, rounded once
        g = g.astype(work)
    n_rows = table_shape[0]
    row_shape = tuple(table_shape[1:])
    width = int(np.prod(row_shape, dtype=np.int64))
    unique, order, starts = _table_rows(be, indices, n_rows)
    shape = (unique.shape[0],) + row_shape
    if is_kernel_float(work) and unique.shape[0] * width:
        values = buffers.empty(shape, work)  # the kernel writes every row
        c = _EMPTY[work] if coef is None else coef.astype(work, copy=False)
        be.kernels("bags").sparse_segment_reduce_grad(
            g.reshape(g.shape[0], width), order, starts, segment_of, c,
            values.reshape(unique.shape[0], width), get_num_threads(),
        )
        values = values.astype(dtype, copy=False)
    else:
        values = np.zeros(shape, dtype=dtype)
    return _recorded_bag_grad(grad, values, unique, order, starts, coef, splits,
                              table_shape)


@register_gradient("SparseSegmentReduceGrad")
def _bag_grad_grad(op, grad):
    # values[u] = sum_{k in group u} coef[k] * g[segment_of[k]] is linear in
    # g; its transpose is the weighted bag dg[s] = sum_{k in bag s} coef[k] *
    # dvalues[u(k)], where u(k) is the group of entry k.
    order, starts = op.get_attr("order"), op.get_attr("starts")
    splits, coef = op.get_attr("splits"), op.get_attr("coef")
    grad = array_ops.densify(grad)
    be = backend_of(grad._value, order)
    if be.on_gpu:
        group_of = be.xp.empty((order.shape[0],), dtype=np.int64)
        group_of[order] = segment_of(be, starts, order.shape[0])
    else:
        group_of = np.empty(order.shape[0], np.int64)
        group_of[order] = np.repeat(
            np.arange(op.get_attr("n_unique"), dtype=np.int64), np.diff(starts))
    return (run_bag(be, grad, group_of, splits, coef, "sum"),)


def run_bag(be, table, ids, splits, weights, combiner, out_dtype=None):
    """Run and record a validated bag: `table` a Tensor, the rest arrays of
    its device; `out_dtype` as :func:`reduce_bags` takes it."""
    out = wrap(reduce_bags(be, table._value, ids, weights, splits, combiner,
                           out_dtype))
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
    grad = array_ops.densify(grad)
    be = backend_of(grad._value, ids, splits)
    bags = segment_of(be, splits, ids.shape[0])
    coef = coefficients(be, splits, weights, combiner, work_dtype(table.dtype),
                        bags)
    return (bag_grad(be, grad, table.shape, ids, bags, coef, splits),)


# -- argument checks -----------------------------------------------------------------
