"""Ops with a ``scipy.sparse`` operand.

:func:`sparse_dense_matmul` multiplies a ``scipy.sparse`` matrix by a dense
Tensor; the gradient w.r.t. the dense operand is an
:class:`~sparsegrad.IndexedSlices` over the rows the matrix touches.
:func:`segment_sum`, :func:`segment_mean` and :func:`segment_sqrt_n` reduce
rows gathered by index (TensorFlow's ``tf.sparse.segment_*``), with an
IndexedSlices gradient over the distinct indices.
"""

from .ops.sparse_ops import sparse_dense_matmul
from .ops.sparse_segment_ops import sparse_segment_mean as segment_mean
from .ops.sparse_segment_ops import sparse_segment_sqrt_n as segment_sqrt_n
from .ops.sparse_segment_ops import sparse_segment_sum as segment_sum

__all__ = ["sparse_dense_matmul", "segment_sum", "segment_mean", "segment_sqrt_n"]
