"""Ragged tensors: rows of different lengths (TensorFlow's ``tf.ragged``).

:class:`~sparsegrad.RaggedTensor` (any ragged_rank), :func:`range` (the
``RaggedRange`` op behind ``tf.ragged.range``), :func:`constant`,
:func:`map_flat_values`, :func:`is_ragged`, and the reductions
:func:`reduce_sum`, :func:`reduce_prod`, :func:`reduce_min`,
:func:`reduce_max` and :func:`reduce_mean` (over each row by default).
"""

from ..framework.public import publish
from . import elementwise, reductions, segment_ops  # noqa: F401 (registers handlers)
from .ragged_factory_ops import constant, is_ragged, map_flat_values
from .ragged_math_ops import range
from .ragged_range import ragged_range
from .ragged_tensor import RaggedTensor
from .reductions import (  # noqa: F401 (listed through reductions.__all__)
    reduce_all,
    reduce_any,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_std,
    reduce_sum,
    reduce_variance,
)

__all__ = [
    "RaggedTensor",
    "range",
    "ragged_range",
    "constant",
    "map_flat_values",
    "is_ragged",
    *reductions.__all__,
]
publish(__name__, globals(), __all__)
