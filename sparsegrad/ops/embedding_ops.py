"""Row lookups and embedding bags: the public names of :mod:`.embedding`.

The ops live in the subpackage :mod:`sparsegrad.ops.embedding`, one module
per part (lookups, clipping, bags, safe bags); this module keeps the names
at their old import path.
"""

from .embedding.bags import embedding_lookup_sparse
from .embedding.lookups import embedding_lookup, gather, gather_nd
from .embedding.safe_bags import safe_embedding_lookup_sparse

__all__ = [
    "gather",
    "gather_nd",
    "embedding_lookup",
    "embedding_lookup_sparse",
    "safe_embedding_lookup_sparse",
]
