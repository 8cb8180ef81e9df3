"""Sparse segment (embedding-bag) kernels, AVX2 build (see _sparse_segment.pxi).

The same source as the bag kernels of ``segment``, compiled with -mavx2 by
setup.py on x86: no FMA (-mavx2 does not enable it; -ffp-contract=off), and
each output element is its own chain of adds, so the same bits with twice the
vector width.
"""

include "_sparse_segment.pxi"
