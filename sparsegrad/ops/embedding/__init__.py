"""Embedding lookups, one module per part, each forward next to its gradient.

* :mod:`.lookups`: ``gather``, ``gather_nd``, ``embedding_lookup`` (and the
  lookup in a sharded table);
* :mod:`.clipping`: ``max_norm``, the clipping of looked-up rows;
* :mod:`.bags`: ``embedding_lookup_sparse`` over ``scipy.sparse`` or ragged
  ids;
* :mod:`.safe_bags`: ``safe_embedding_lookup_sparse``.

``sparsegrad.ops.embedding_ops`` gathers their public names.
"""

from . import bags, clipping, lookups, safe_bags

__all__ = ["bags", "clipping", "lookups", "safe_bags"]
