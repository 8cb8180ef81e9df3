"""Kernels of the segment reductions.

The sparse-segment (embedding-bag) kernels live in ``_sparse_segment.pxi``.
"""

include "_sparse_segment.pxi"
