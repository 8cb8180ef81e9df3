"""Linear-algebra helpers in TensorFlow's ``tf.linalg`` place.

:func:`global_norm` is the same function as :func:`sparsegrad.global_norm`.
"""

from .ops.clip_ops import global_norm

__all__ = ["global_norm"]
