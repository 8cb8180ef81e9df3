"""Sparse segment reductions: reductions of rows gathered by index ("bags").

``sparse_segment_sum(data, indices, segment_ids)`` is
``segment_sum(gather(data, indices), segment_ids)`` without the gathered
copy: each output row (a bag) is accumulated straight from the rows of
`data` it names, by one thread, in input order
(``sparsegrad._kernels.segment``).  :func:`embedding_bag` is the same
primitive over row splits, with optional per-entry weights; it is what
:func:`sparsegrad.nn.embedding_lookup_sparse` runs.

The gradient w.r.t. the table is an :class:`~sparsegrad.IndexedSlices` with
one row per distinct index (sorted), like TensorFlow's
``SparseSegment*GradV2`` (``sparse_gradient=True``): cost O(nnz x row
width), never O(table rows).  One row per distinct index rather than per
occurrence because the optimizer that consumes it sums repeated rows anyway:
summing them here, while the upstream rows are hot in cache, writes and
reads fewer rows (see ``benchmarks/bench_embedding_bag.py``).  The gradient
is itself differentiable (its transpose is a weighted bag again).

CuPy arrays (float32 / float64) run the CUDA twins of the bag kernels
(``_cuda/segment.cu``), forward and gradient, with the CPU's bits; indices
and segment ids are checked with one device reduction and one read back.

float16 and bfloat16 tables (on either device) are reduced in float32: the
gathered rows are converted, the float32 kernels sum them, and the result is
rounded once to the table's dtype, or kept in float32 with ``dtype=float32``
(:func:`~.checks.output_dtype` says which dtypes an op may give).

* :mod:`.primitive`: the bag kernels' forward, the table's gradient and its
  gradient.
* :mod:`.checks`: the argument checks (``check_bag_splits``,
  ``check_combiner``).
* :mod:`.segments`: ``sparse_segment_sum`` / ``_mean`` / ``_sqrt_n``.
* :mod:`.split_bags`: ``embedding_bag`` over row splits (``bags_on``: on a
  backend the caller chose).
"""

from . import primitive  # noqa: F401  (registers the bag gradients)
from .checks import check_bag_splits, check_combiner  # noqa: F401
from .segments import sparse_segment_mean, sparse_segment_sqrt_n, sparse_segment_sum
from .split_bags import bags_on, embedding_bag  # noqa: F401

__all__ = [
    "sparse_segment_sum",
    "sparse_segment_mean",
    "sparse_segment_sqrt_n",
    "embedding_bag",
]
