"""Segment and sparse-segment (embedding-bag) kernels, AVX2 build (see
``segment.pyx``).

The same source as ``segment``, compiled with -mavx2 by setup.py on x86: no
FMA (-mavx2 does not enable it; -ffp-contract=off), each output element is
its own chain of adds, and the row sums of ``sg_segment_rows.h`` take their
AVX2 branch, whose additions are those of the SSE2 one: the same bits with
twice the vector width.
"""

include "_segment.pxi"
include "_sparse_segment.pxi"
