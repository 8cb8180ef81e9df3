"""Ops with a ``scipy.sparse`` operand.

:func:`sparse_dense_matmul` multiplies a ``scipy.sparse`` matrix by a dense
Tensor; the gradient w.r.t. the dense operand is an
:class:`~sparsegrad.IndexedSlices` over the rows the matrix touches.
"""

from .ops.sparse_ops import sparse_dense_matmul

__all__ = ["sparse_dense_matmul"]
