"""Segment and unsorted-segment reductions (``tf.math.segment_*`` and
``tf.math.unsorted_segment_*``).

Sorted reductions take non-decreasing ids and give ``segment_ids[-1] + 1``
rows; unsorted ones take ids in any order (negative ids dropped) and
``num_segments`` rows.  Gradients w.r.t. `data` are dense Tensors.
"""

from .framework.public import publish
from .ops import segment_ops as implementation

globals().update(
    (name, getattr(implementation, name)) for name in implementation.__all__)
__all__ = publish(__name__, globals(), implementation.__all__)
