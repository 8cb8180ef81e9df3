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
    documented,
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


@documented
def apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, use_locking=False):
    r"""Adadelta, TensorFlow's ``ResourceApplyAdadelta``.

    .. math::

        accum &\leftarrow \rho\,accum + (1-\rho)\,g^2 \\
        u &= \sqrt{accum\_update + \epsilon}\,/\sqrt{accum + \epsilon}\;g \\
        var &\leftarrow var - lr\,u \\
        accum\_update &\leftarrow \rho\,accum\_update + (1-\rho)\,u^2

    Parameters
    ----------
    %(var_dense)s
    accum : ndarray or Variable
        Accumulator slot of var's shape and dtype. Updated in place.
    %(accum_update)s
    %(lr)s
    %(rho)s
    %(epsilon)s
    %(grad_dense)s
    %(use_locking)s

    %(returns_dense)s

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, update = np.ones(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_adadelta(var, accum, update, 1.0, 0.5, 1e-6, [1.0, 1.0])
    >>> accum
    array([0.5, 0.5])
    """
    APPLY_ADADELTA.call(locals())


@documented
def sparse_apply_adadelta(
    var,
    accum,
    accum_update,
    lr,
    rho,
    epsilon,
    grad,
    indices,
    use_locking=False,
    *,
    coalesce_duplicates=False,
):
    """Sparse :func:`apply_adadelta` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyAdadelta`` (same formula per row).

    Parameters
    ----------
    %(var_sparse)s
    accum : ndarray or Variable
        Accumulator slot of var's shape and dtype. Updated in place.
    %(accum_update)s
    %(lr)s
    %(rho)s
    %(epsilon)s
    %(grad_sparse)s
    %(indices)s
    %(use_locking)s
    %(coalesce_duplicates)s

    %(returns_sparse)s

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, update = np.ones((3, 1)), np.zeros((3, 1)), np.zeros((3, 1))
    >>> training_ops.sparse_apply_adadelta(
    ...     var, accum, update, 1.0, 0.5, 1e-6, [[1.0]], [2])
    >>> accum.ravel()
    array([0. , 0. , 0.5])
    """
    SPARSE_APPLY_ADADELTA.call(locals())
