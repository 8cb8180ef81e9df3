"""The gradients of the sorted and unsorted segment reductions (registered
here, for both kinds: the rules are the same).

Gradients w.r.t. `data` are dense Tensors written with sparsegrad ops
(gather, divide, where, multiply), so they can be differentiated again; the
product's "product of the other rows" factor is computed by a kernel and
treated as a constant.  Each gradient takes its backend from the op's
recorded arrays, once.
"""

import numpy as np

from ...autodiff.registry import register_gradient
from ...framework import sparse_rows
from ...framework.backend import backend_of
from ...framework.dtypes import is_kernel_float
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import wrap
from ...framework.threads import get_num_threads
from .. import array_ops, math_ops
from .._device import segment_prod_others
from ..embedding_ops import gather
from .common import SUM, operand, rows_2d, segment_counts
from .sorted_reductions import SORTED_TYPES
from .unsorted_reductions import UNSORTED_TYPES, unsorted_forward, unsorted_segment_sum

__all__ = []


def _gather_upstream(be, grad, ids):
    """``grad[ids]`` (zero rows for negative ids) as a Tensor of shape
    ``(len(ids),) + row_shape``, with sparsegrad ops.

    An IndexedSlices `grad` is not densified on the host: its repeated rows
    are summed (an unsorted segment sum of its values) and each id looks its
    row up.  On the device it is densified (the result is dense anyway), and
    the rows of negative ids are masked without reading the ids back.
    """
    ids_array = ids._value
    if be.on_gpu:
        grad = array_ops.densify(grad)
        gathered = gather(grad, be.xp.where(ids_array < 0, 0, ids_array))
        return _mask_rows(be, gathered, ids_array >= 0)
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
        return _mask_rows(be, gathered, found)
    gathered = gather(grad, safe)
    if negative:
        return _mask_rows(be, gathered, ids_array >= 0)
    return gathered


def _mask_rows(be, rows, keep):
    """`rows` with the rows where `keep` is false set to zero."""
    mask = keep.reshape(keep.shape + (1,) * (rows.ndim - 1))
    return math_ops.where(operand(be, mask), rows,
                          operand(be, be.xp.zeros((), dtype=rows.dtype)))


def _sum_grad(op, grad):
    ids = op.inputs[1]
    return _gather_upstream(backend_of(ids._value), grad, ids), None


def _mean_grad(op, grad):
    data, ids = op.inputs
    be = backend_of(ids._value)
    n_segments = op.outputs[0].shape[0]
    counts = segment_counts(be, ids._value, n_segments, data.ndim - 1, data.dtype)
    if isinstance(grad, IndexedSlices) and be.on_gpu:
        grad = array_ops.densify(grad)
    if isinstance(grad, IndexedSlices):  # scale its rows; it stays sparse
        rows = counts[np.asarray(grad.indices._value).reshape(-1)]
        grad = IndexedSlices._from_trusted(
            math_ops.divide(grad.values, rows), grad.indices, grad.dense_shape)
    else:
        grad = math_ops.divide(grad, operand(be, counts))
    return _gather_upstream(be, grad, ids), None


def _extreme_grad(op, grad):
    """Max / min: the upstream gradient of a segment shared equally among its
    elements equal to the extreme (TensorFlow's rule; the NaN elements when
    the extreme is NaN)."""
    data, ids = op.inputs
    out = op.outputs[0]._value
    n_segments = out.shape[0]
    ids_array = ids._value
    x = data._value
    be = backend_of(x, ids_array)
    xp = be.xp
    safe = xp.where(ids_array < 0, 0, ids_array)
    extreme = out[safe]
    selected = (x == extreme) | (xp.isnan(x) & xp.isnan(extreme))
    # (on the device the mask is applied without reading the ids back)
    if be.on_gpu or (ids_array.size and ids_array.min() < 0):
        selected &= (ids_array >= 0).reshape((-1,) + (1,) * (x.ndim - 1))
    counts = unsorted_forward(be, selected.astype(x.dtype), ids_array, n_segments,
                              SUM).reshape(out.shape)
    counts = xp.maximum(counts, 1)
    weighted = math_ops.divide(array_ops.densify(grad), operand(be, counts))
    gathered = _gather_upstream(be, weighted, ids)
    return math_ops.where(operand(be, selected), gathered,
                          operand(be, xp.zeros((), dtype=x.dtype))), None


def _prod_grad(op, grad):
    data, ids = op.inputs
    n_segments = op.outputs[0].shape[0]
    ids_array = ids._value
    x = data._value
    be = backend_of(x, ids_array)
    is_sorted = op.type == "SegmentProd"
    if be.on_gpu:
        others = segment_prod_others(be, x, ids_array, n_segments, is_sorted)
        return math_ops.multiply(_gather_upstream(be, grad, ids), wrap(others)), None
    n = ids_array.shape[0]
    work = x if is_kernel_float(x.dtype) else x.astype(np.float64)
    rows = rows_2d(be, work, n)
    others = np.zeros_like(rows)
    keep = np.flatnonzero(ids_array >= 0)
    if keep.size:
        if is_sorted:
            order = np.arange(n, dtype=np.int64)
            starts = sparse_rows.sorted_segment_splits(ids_array, n_segments)
        else:
            _, order, starts = sparse_rows.group_rows(
                np.ascontiguousarray(ids_array[keep]), n_segments - 1)
            order = keep[order]
        be.kernels("segment").prod_others(rows, order, starts, others,
                                          get_num_threads())
    others = others.astype(x.dtype, copy=False).reshape(x.shape)
    gathered = _gather_upstream(be, grad, ids)
    return math_ops.multiply(gathered, others), None


# one rule for the sorted and the unsorted kind of each reduction (the
# unsorted mean and square root of n are compositions of recorded ops)
_RULES = {"Sum": _sum_grad, "Mean": _mean_grad, "Max": _extreme_grad,
          "Min": _extreme_grad, "Prod": _prod_grad}
for _op_type in (*SORTED_TYPES.values(), *UNSORTED_TYPES.values()):
    register_gradient(_op_type)(_RULES[_op_type.rsplit("Segment", 1)[1]])
