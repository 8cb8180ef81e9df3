"""Segment and unsorted-segment reductions (``tf.math.segment_*`` and
``tf.math.unsorted_segment_*``).

Sorted reductions take non-decreasing ids and give ``segment_ids[-1] + 1``
rows; unsorted ones take ids in any order (negative ids dropped) and
``num_segments`` rows.  Gradients w.r.t. `data` are dense Tensors.
"""

from .framework.public import publish
from .ops import segment_ops as implementation
from .ops.segment_ops import (  # noqa: F401
    segment_max,
    segment_mean,
    segment_min,
    segment_prod,
    segment_sum,
    unsorted_segment_max,
    unsorted_segment_mean,
    unsorted_segment_min,
    unsorted_segment_prod,
    unsorted_segment_sqrt_n,
    unsorted_segment_sum,
)

__all__ = publish(__name__, globals(), implementation.__all__)
