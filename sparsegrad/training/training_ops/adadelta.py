"""Adadelta.

The public functions check their arguments through the specs below (see
:mod:`.core`); the arithmetic is in ``sparsegrad._kernels.training``.
"""

from .core import (
    GRAD,
    GRAD_SHAPE,
    IN_RANGE,
    INDICES,
    SPARSE_GRAD,
    VAR_RANK,
    Spec,
    define,
    same_shape,
    scalar,
)

__all__ = [
    "apply_adadelta",
    "sparse_apply_adadelta",
]


APPLY_ADADELTA = Spec(
    "adadelta", ("accum", "accum_update"),
    (scalar("lr"), scalar("rho"), scalar("epsilon"), same_shape("accum"), GRAD,
     GRAD_SHAPE, same_shape("accum_update")),
    sparse=False)

SPARSE_APPLY_ADADELTA = Spec(
    "adadelta", ("accum", "accum_update"),
    (same_shape("accum", "accum_grad"), same_shape("accum_update"), VAR_RANK,
     scalar("lr"), scalar("rho"), scalar("epsilon"), INDICES, GRAD, SPARSE_GRAD,
     IN_RANGE),
    sparse=True)


apply_adadelta = define(
    "apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, "
    "use_locking=False)",
    APPLY_ADADELTA,
    r"""Adadelta, TensorFlow's ``ResourceApplyAdadelta``.

    .. math::

        accum &\leftarrow \rho\,accum + (1-\rho)\,g^2 \\
        u &= \sqrt{accum\_update + \epsilon}\,/\sqrt{accum + \epsilon}\;g \\
        var &\leftarrow var - lr\,u \\
        accum\_update &\leftarrow \rho\,accum\_update + (1-\rho)\,u^2

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, update = np.ones(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_adadelta(var, accum, update, 1.0, 0.5, 1e-6, [1.0, 1.0])
    >>> accum
    array([0.5, 0.5])
    """)


sparse_apply_adadelta = define(
    "sparse_apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, "
    "indices, use_locking=False)",
    SPARSE_APPLY_ADADELTA,
    """Sparse :func:`apply_adadelta` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyAdadelta`` (same formula per row).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, update = np.ones((3, 1)), np.zeros((3, 1)), np.zeros((3, 1))
    >>> training_ops.sparse_apply_adadelta(
    ...     var, accum, update, 1.0, 0.5, 1e-6, [[1.0]], [2])
    >>> accum.ravel()
    array([0. , 0. , 0.5])
    """)
