"""Adadelta."""

from . import core as c

__all__ = [
    "apply_adadelta",
    "sparse_apply_adadelta",
]


_HYPER = (c.scalar("lr"), c.scalar("rho"), c.scalar("epsilon"))

APPLY_ADADELTA = c.Spec(
    "adadelta", ("accum", "accum_update"),
    (*_HYPER, c.same_shape("accum"), c.GRAD, c.GRAD_SHAPE,
     c.same_shape("accum_update")),
    sparse=False)

SPARSE_APPLY_ADADELTA = c.Spec(
    "adadelta", ("accum", "accum_update"),
    (c.same_shape("accum", "accum_grad"), c.same_shape("accum_update"), c.VAR_RANK,
     *_HYPER, c.INDICES, c.GRAD, c.SPARSE_GRAD, c.IN_RANGE),
    sparse=True)


apply_adadelta = c.define(
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


sparse_apply_adadelta = c.define(
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
