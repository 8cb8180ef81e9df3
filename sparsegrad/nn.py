"""Neural-network ops: activations, losses and embedding lookups.

Everything here is differentiable; :func:`embedding_lookup` gives an
:class:`~sparsegrad.IndexedSlices` gradient for its table.
"""

from .ops.embedding_ops import embedding_lookup
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
    "relu",
    "softplus",
    "softmax",
    "log_softmax",
    "l2_loss",
    "sigmoid_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits",
]
