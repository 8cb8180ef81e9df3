"""Elementwise math under its ``tf.math`` names (``sg.math.add``,
``sg.math.floordiv``, ``sg.math.logical_and``...), segment and
unsorted-segment reductions (``tf.math.segment_*`` and
``tf.math.unsorted_segment_*``), and the reductions over axes under their
``tf.math`` names (``reduce_sum``, ``reduce_prod``, ``reduce_variance``...).
The elementwise ops and the reductions over axes are the functions of the
package's top level.

Sorted reductions take non-decreasing ids and give ``segment_ids[-1] + 1``
rows; unsorted ones take ids in any order (negative ids dropped) and
``num_segments`` rows.  Gradients w.r.t. `data` are dense Tensors.
"""

from .framework.public import publish
from .ops import math_ops, reduction_ops, unary_ops
from .ops import segment_ops as implementation

globals().update(
    (name, getattr(implementation, name)) for name in implementation.__all__)
__all__ = publish(__name__, globals(), implementation.__all__)
# published at the top level (their documented home); sg.math.reduce_* too
_REDUCTIONS = [n for n in reduction_ops.__all__ if n.startswith("reduce_")]
globals().update((name, getattr(reduction_ops, name)) for name in _REDUCTIONS)
__all__ += _REDUCTIONS
# the elementwise ops (their home is the top level; tf.math.add and friends)
_ELEMENTWISE = [n for n in (*math_ops.__all__, *unary_ops.__all__) if n not in (
    "matmul", "where")]
globals().update((name, getattr(math_ops, name, None) or getattr(unary_ops, name))
                 for name in _ELEMENTWISE)
__all__ += _ELEMENTWISE
