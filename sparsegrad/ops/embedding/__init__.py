"""Embedding lookups, one module per part, each forward next to its gradient.

* :mod:`.lookups`: ``gather``, ``gather_nd``, ``embedding_lookup`` (and the
  lookup in a sharded table);
* :mod:`.clipping`: ``max_norm``, the clipping of looked-up rows;
* :mod:`.bags`: ``embedding_lookup_sparse`` over ``scipy.sparse`` or ragged
  ids;
* :mod:`.safe_bags`: ``safe_embedding_lookup_sparse``.

``sparsegrad.ops.embedding_ops`` gathers their public names.  The package
is a family above the base layers: it imports :mod:`sparsegrad.ops.array_ops`,
:mod:`~sparsegrad.ops.math_ops`, :mod:`~sparsegrad.ops.reduction_ops`,
:mod:`~sparsegrad.ops.unary_ops` and the bag kernels of
:mod:`~sparsegrad.ops.sparse_segment_ops`; no op module below imports it
(the segment gradients reach ``gather`` through ``embedding_ops``, a family
beside it).
"""

from . import bags, clipping, lookups, safe_bags

__all__ = ["bags", "clipping", "lookups", "safe_bags"]
