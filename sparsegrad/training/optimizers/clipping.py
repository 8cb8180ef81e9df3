"""Gradient clipping for the optimizers (clip ops are a separate issue).

Gradients reach these helpers already validated and converted: a dense
gradient is an ndarray of the variable's dtype, a sparse one an
``IndexedSlices`` whose values are an ndarray of the variable's dtype.  Sparse
gradients stay sparse.  Norms are those of the tensor an ``IndexedSlices``
*represents* (repeated indices summed first, DESIGN.md); when a sparse
gradient has to be measured or clipped elementwise it is deduplicated first,
which costs O(nnz) and keeps it sparse.  Sums of squares are accumulated in
float64 in a fixed order (``sparse_rows.sum_of_squares``), so the result does
not depend on the thread count.
"""

import math

import numpy as np

from ...framework import sparse_rows
from ...framework.indexed_slices import IndexedSlices


def _coalesced(grad):
    """`grad` with distinct indices (a no-op copy-free path for dense grads)."""
    if isinstance(grad, IndexedSlices):
        return grad.deduplicate()
    return grad


def _sum_of_squares(grad):
    values = grad.values._value if isinstance(grad, IndexedSlices) else grad
    return sparse_rows.sum_of_squares(values)


def _scaled(grad, scale):
    """`grad` times a scalar held in the gradient's dtype."""
    if isinstance(grad, IndexedSlices):
        values = grad.values._value
        return IndexedSlices._from_trusted(
            values * np.asarray(scale, values.dtype), grad.indices, grad.dense_shape
        )
    return grad * np.asarray(scale, grad.dtype)


def clip_by_value(grad, clip_value):
    """Clip every element of the represented tensor to ``[-v, v]``.

    ``min`` with the upper bound first, then ``max`` with the lower one, as
    ``tf.clip_by_value`` does (NaN stays NaN).
    """
    grad = _coalesced(grad)
    if isinstance(grad, IndexedSlices):
        values = grad.values._value
        v = np.asarray(clip_value, values.dtype)
        clipped = np.maximum(np.minimum(values, v), -v)
        return IndexedSlices._from_trusted(clipped, grad.indices, grad.dense_shape)
    v = np.asarray(clip_value, grad.dtype)
    return np.maximum(np.minimum(grad, v), -v)


def clip_by_norm(grad, clip_norm):
    """Scale `grad` so that its L2 norm is at most `clip_norm` (> 0).

    ``(t * c) / max(norm, c)``: unchanged when the norm is at most `c`.
    """
    grad = _coalesced(grad)
    norm = math.sqrt(_sum_of_squares(grad))
    if isinstance(grad, IndexedSlices):
        values = grad.values._value
        dtype = values.dtype
        c = np.asarray(clip_norm, dtype)
        out = (values * c) / np.asarray(max(norm, clip_norm), dtype)
        return IndexedSlices._from_trusted(out, grad.indices, grad.dense_shape)
    dtype = grad.dtype
    c = np.asarray(clip_norm, dtype)
    return (grad * c) / np.asarray(max(norm, clip_norm), dtype)


def global_norm(grads):
    """L2 norm of all gradients together (None entries skipped), float64."""
    total = 0.0
    for grad in grads:
        if grad is not None:
            total += _sum_of_squares(_coalesced(grad))
    return math.sqrt(total)


def clip_by_global_norm(grads, clip_norm):
    """Scale every gradient by ``c * min(1 / global_norm, 1 / c)``.

    The formula is TensorFlow's: an infinite or NaN global norm makes every
    output NaN, a zero norm leaves the gradients unchanged.  Returns a list
    with None entries kept in place.
    """
    grads = [None if g is None else _coalesced(g) for g in grads]
    norm = global_norm(grads)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = clip_norm * min(np.float64(1.0) / np.float64(norm), 1.0 / clip_norm)
        scale = scale + (np.float64(norm) - np.float64(norm))
    return [None if g is None else _scaled(g, scale) for g in grads]
