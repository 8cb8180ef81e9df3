"""Momentum (TensorFlow's) and Keras' momentum."""

from . import core as c

__all__ = [
    "apply_momentum",
    "sparse_apply_momentum",
    "apply_keras_momentum",
    "sparse_apply_keras_momentum",
]


def _specs(kernel, in_range):
    """The dense and the sparse spec of a momentum kernel (the two ops check
    alike; Keras' sparse op has its own out-of-range message)."""
    dense = c.Spec(
        kernel, ("accum",),
        (c.scalar("lr"), c.same_shape("accum"), c.GRAD, c.GRAD_SHAPE,
         c.scalar("momentum"), c.flag("use_nesterov")),
        sparse=False)
    sparse = c.Spec(
        kernel, ("accum",),
        (c.same_shape("accum"), c.VAR_RANK, c.scalar("lr", sep=" : "), c.INDICES,
         c.GRAD, c.SPARSE_GRAD, c.scalar("momentum"), in_range,
         c.flag("use_nesterov")),
        sparse=True)
    return dense, sparse


APPLY_MOMENTUM, SPARSE_APPLY_MOMENTUM = _specs("momentum", c.IN_RANGE)
APPLY_KERAS_MOMENTUM, SPARSE_APPLY_KERAS_MOMENTUM = _specs(
    "keras_momentum", c.IN_RANGE.keras)


apply_momentum = c.define(
    "apply_momentum(var, accum, lr, grad, momentum, use_locking=False, "
    "use_nesterov=False)",
    APPLY_MOMENTUM,
    r"""Momentum, TensorFlow's ``ResourceApplyMomentum``.

    .. math::

        accum \leftarrow accum\cdot momentum + g, \qquad
        var \leftarrow var - lr\cdot accum

    With ``use_nesterov=True``:
    ``var -= g * lr + accum * momentum * lr``.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones(2), np.ones(2)
    >>> training_ops.apply_momentum(var, accum, 0.1, [1.0, 0.0], 0.5)
    >>> var
    array([0.85, 0.95])
    """)


sparse_apply_momentum = c.define(
    "sparse_apply_momentum(var, accum, lr, grad, indices, momentum, "
    "use_locking=False, use_nesterov=False)",
    SPARSE_APPLY_MOMENTUM,
    """Sparse :func:`apply_momentum` on the rows ``indices`` (lazy).

    TensorFlow's ``ResourceSparseApplyMomentum``; `momentum` comes after
    `indices`.  Rows not indexed keep their `accum` and do not move.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((2, 1)), np.ones((2, 1))
    >>> training_ops.sparse_apply_momentum(var, accum, 0.1, [[1.0]], [0], 0.5)
    >>> var.ravel()
    array([0.85, 1.  ])
    """)


apply_keras_momentum = c.define(
    "apply_keras_momentum(var, accum, lr, grad, momentum, use_locking=False, "
    "use_nesterov=False)",
    APPLY_KERAS_MOMENTUM,
    r"""Keras-style momentum, TensorFlow's ``ResourceApplyKerasMomentum``.

    `accum` holds the velocity, with the learning rate folded in:

    .. math::

        accum \leftarrow accum\cdot momentum - lr\cdot g, \qquad
        var \leftarrow var + accum

    With ``use_nesterov=True``: ``var += accum * momentum - g * lr``.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones(2), np.zeros(2)
    >>> training_ops.apply_keras_momentum(var, accum, 0.5, [1.0, -1.0], 0.9)
    >>> var
    array([0.5, 1.5])
    """)


sparse_apply_keras_momentum = c.define(
    "sparse_apply_keras_momentum(var, accum, lr, grad, indices, momentum, "
    "use_locking=False, use_nesterov=False)",
    SPARSE_APPLY_KERAS_MOMENTUM,
    """Sparse :func:`apply_keras_momentum` on the rows ``indices`` (lazy).

    TensorFlow's ``ResourceSparseApplyKerasMomentum``; its out-of-range message
    reads ``indices[i] = idx is not in [0, n_rows)``.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((2, 1)), np.zeros((2, 1))
    >>> training_ops.sparse_apply_keras_momentum(var, accum, 0.5, [[1.0]], [1], 0.9)
    >>> var.ravel()
    array([1. , 0.5])
    """)
