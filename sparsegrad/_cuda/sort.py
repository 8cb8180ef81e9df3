"""Grouping of row indices on the GPU: the twin of
``sparsegrad.framework.sparse_rows.group_rows`` for cupy arrays.

A stable sort (``cupy.argsort`` is stable: CUB's radix sort) lists the
positions of each distinct index in their original order, which is what the
sparse kernels walk to apply duplicates in TensorFlow's order.
"""

import numpy as np

from . import cupy

__all__ = ["group_rows"]


def group_rows(indices):
    """Group equal indices of a 1-D cupy int array stably.

    Returns
    -------
    unique : cupy.ndarray
        The sorted distinct indices, in the dtype of `indices`.
    order : cupy.ndarray of int64
        A permutation of ``range(n)``: the positions of each distinct index,
        in their original order, one group after another.
    starts : cupy.ndarray of int64
        ``len(unique) + 1`` bounds of the groups in `order`.
    """
    cp = cupy()
    n = indices.shape[0]
    order = cp.argsort(indices).astype(np.int64, copy=False)
    ordered = indices[order]
    if n == 0:
        return ordered, order, cp.zeros((1,), dtype=np.int64)
    is_first = cp.empty((n,), dtype=bool)
    is_first[0] = True
    cp.not_equal(ordered[1:], ordered[:-1], out=is_first[1:])
    firsts = cp.flatnonzero(is_first).astype(np.int64, copy=False)
    starts = cp.concatenate([firsts, cp.full((1,), n, dtype=np.int64)])
    return ordered[firsts], order, starts
