"""Ragged tensors: rows of different lengths (TensorFlow's ``tf.ragged``).

:class:`~sparsegrad.RaggedTensor` (ragged_rank 1), :func:`range` (the
``RaggedRange`` op behind ``tf.ragged.range``), :func:`constant`,
:func:`map_flat_values` and :func:`is_ragged`.
"""

from ..framework.public import publish
from .ragged_factory_ops import constant, is_ragged, map_flat_values
from .ragged_math_ops import range
from .ragged_range import ragged_range
from .ragged_tensor import RaggedTensor

__all__ = [
    "RaggedTensor",
    "range",
    "ragged_range",
    "constant",
    "map_flat_values",
    "is_ragged",
]
publish(__name__, globals(), __all__)
