"""Neural-network ops: activations, losses and embedding lookups.

Everything here is differentiable; :func:`embedding_lookup` and
:func:`embedding_lookup_sparse` give an
:class:`~sparsegrad.IndexedSlices` gradient for their table.
"""

from .ops.embedding_ops import (
    embedding_lookup,
    embedding_lookup_sparse,
    safe_embedding_lookup_sparse,
)
from .ops.nn_ops import (
    l2_loss,
    log_softmax,
    relu,
    sigmoid_cross_entropy_with_logits,
    softmax,
    softmax_cross_entropy_with_logits,
    softplus,
    sparse_softmax_cross_entropy_with_logits,
)

__all__ = [
    "embedding_lookup",
    "embedding_lookup_sparse",
    "safe_embedding_lookup_sparse",
    "relu",
    "softplus",
    "softmax",
    "log_softmax",
    "l2_loss",
    "sigmoid_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits",
]
