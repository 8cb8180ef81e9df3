"""Gradient descent and proximal gradient descent (FOBOS)."""

from . import core as c

__all__ = [
    "apply_gradient_descent",
    "sparse_apply_gradient_descent",
    "apply_proximal_gradient_descent",
    "sparse_apply_proximal_gradient_descent",
]


APPLY_GRADIENT_DESCENT = c.Spec(
    "gradient_descent", (),
    (c.scalar("alpha"), c.grad("delta"), c.grad_shape("delta")), sparse=False)

SPARSE_APPLY_GRADIENT_DESCENT = c.Spec(
    "gradient_descent", (),
    (c.VAR_RANK, c.scalar("alpha"), c.INDICES, c.GRAD, c.SPARSE_GRAD, c.IN_RANGE),
    sparse=True)

APPLY_PROXIMAL_GRADIENT_DESCENT = c.Spec(
    "proximal_gradient_descent", (),
    (c.scalar("alpha"), c.L1, c.L2, c.grad("delta"), c.grad_shape("delta")),
    sparse=False)

SPARSE_APPLY_PROXIMAL_GRADIENT_DESCENT = c.Spec(
    "proximal_gradient_descent", (),
    (c.VAR_RANK, c.scalar("alpha", "lr"), c.L1, c.L2, c.INDICES, c.GRAD,
     c.SPARSE_GRAD, c.INNER_POSITIVE, c.IN_RANGE),
    sparse=True)


apply_gradient_descent = c.define(
    "apply_gradient_descent(var, alpha, delta, use_locking=False)",
    APPLY_GRADIENT_DESCENT,
    """Plain gradient descent: ``var -= delta * alpha``.

    TensorFlow's ``ResourceApplyGradientDescent``.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var = np.array([1.0, 2.0])
    >>> training_ops.apply_gradient_descent(var, 0.5, [2.0, -2.0])
    >>> var
    array([0., 3.])
    """)


sparse_apply_gradient_descent = c.define(
    "sparse_apply_gradient_descent(var, alpha, grad, indices, use_locking=False)",
    SPARSE_APPLY_GRADIENT_DESCENT,
    """Gradient descent on rows: ``var[indices[k]] -= grad[k] * alpha``.

    Not a TensorFlow kernel (TensorFlow scatter-adds ``-alpha * grad``); the
    result is the same: duplicates accumulate one after another.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var = np.zeros((3, 2))
    >>> training_ops.sparse_apply_gradient_descent(
    ...     var, 0.5, [[1.0, 2.0], [3.0, 4.0]], [2, 2])
    >>> var
    array([[ 0.,  0.],
           [ 0.,  0.],
           [-2., -3.]])
    """)


apply_proximal_gradient_descent = c.define(
    "apply_proximal_gradient_descent(var, alpha, l1, l2, delta, use_locking=False)",
    APPLY_PROXIMAL_GRADIENT_DESCENT,
    r"""Proximal gradient descent (FOBOS) with L1 and L2 regularisation.

    TensorFlow's ``ResourceApplyProximalGradientDescent``:

    .. math::

        p = var - \delta\,\alpha, \qquad
        var \leftarrow \frac{\operatorname{sign}(p)\max(|p| - \alpha l_1, 0)}
        {1 + l_2\alpha}

    (with ``l1 <= 0``, ``var = p / (1 + l2 * alpha)``).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var = np.array([1.0, -1.0])
    >>> training_ops.apply_proximal_gradient_descent(var, 0.5, 0.2, 0.0, [1.0, 0.0])
    >>> var
    array([ 0.4, -0.9])
    """)


sparse_apply_proximal_gradient_descent = c.define(
    "sparse_apply_proximal_gradient_descent(var, alpha, l1, l2, grad, indices, "
    "use_locking=False)",
    SPARSE_APPLY_PROXIMAL_GRADIENT_DESCENT,
    """Sparse :func:`apply_proximal_gradient_descent` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyProximalGradientDescent``; when a row
    has one element (``R == 1``) the final division is done in float64, as
    TensorFlow's scalar path does.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var = np.ones((3, 2))
    >>> training_ops.sparse_apply_proximal_gradient_descent(
    ...     var, 0.5, 0.0, 1.0, [[1.0, 1.0]], [1])
    >>> var
    array([[1.        , 1.        ],
           [0.33333333, 0.33333333],
           [1.        , 1.        ]])
    """)
