"""Kernels of the segment reductions (``sparsegrad.ops.segment_ops``) and of
sorted segment ids to row splits (``sparse_rows.sorted_segment_splits``).

Design
------
Data is viewed as a 2-D ``(n, width)`` C-contiguous array (1-D data has width
1); the Python layer checks shapes, dtypes and id ranges, converts the ids and
allocates the outputs.  Nothing here raises on data.

* ``sorted_splits`` fills ``splits_out[s]`` with the first position whose id
  is at least ``s``, for ``s`` in ``[0, n_segments]``: at each position where
  the id changes (and at both ends) it writes the segments that start there.
  With sorted ids in ``[0, n_segments)`` every entry is written exactly once,
  by one thread.  The positions are cut into as many contiguous parts as
  threads; each part reports its first decrease, and the smallest of those is
  returned, so the answer does not depend on the thread count.
* ``segment_reduce_ids`` reduces rows whose ids are sorted, straight from the
  ids (no row_splits pass): the rows are cut into blocks of a fixed size
  (not depending on the thread count), handed out dynamically; a block owns
  every segment that *starts* in it (its thread walks past the block's end
  to finish the last one) and skips the rows at its head that continue the
  previous block's segment.  The owner of a
  segment also fills the empty segments just before it (and, for the last
  segment, those after it).  While it walks the ids it checks that they never
  decrease and stay below ``n_segments``; if they do not, it stops writing and
  the call returns 1, and the caller raises (``sorted_segment_splits`` gives
  TensorFlow's message) or takes the unsorted path.  Negative ids at the head
  are skipped (the unsorted ops drop them).  This is the only check in the
  module: it keeps every write inside ``out`` whatever the ids are.
* ``scatter_reduce`` reduces ids in any order: the segments are cut into
  one contiguous range per thread, and each thread walks all ids and
  reduces the rows of its own segments, in the rows' order, starting from
  the fill value (as TensorFlow's unsorted kernels do).  Cheaper than
  grouping the ids first (a radix sort and a random gather of the rows).
* ``prod_others`` writes, for each row of a group (``sparse_rows.group_rows``
  or sorted row splits), the product of the other rows of its group
  (exclusive prefix times suffix products, exact with zeros): the partial
  derivative of a segment product.

Determinism: every segment is reduced by one thread, in the order of its
rows, in the dtype of the data, so the bits never depend on the thread count.
(A sorted 1-D segment sum adds its rows in eight interleaved partial sums, a
fixed pattern.)  Max and min propagate NaN.

The arithmetic (the NaN rules of max and min, products, the eight partial
sums, means, the combination with the fill, and the bags' weighted terms and
denominators) lives in ``include/sg_segment.h``, which the CUDA kernels
(``sparsegrad/_cuda/segment.cu``) include too: these loops only walk the
rows, in the same order on both sides.

The reductions are in ``_segment.pxi`` and the sparse-segment
(embedding-bag) kernels in ``_sparse_segment.pxi``; this module and its AVX2
build ``segment_avx2`` include both.
"""

include "_segment.pxi"
include "_sparse_segment.pxi"
