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
    ("lr", "rho", "epsilon"), sparse=False)

SPARSE_APPLY_ADADELTA = Spec(
    "adadelta", ("accum", "accum_update"),
    (same_shape("accum", "accum_grad"), same_shape("accum_update"), VAR_RANK,
     scalar("lr"), scalar("rho"), scalar("epsilon"), INDICES, GRAD, SPARSE_GRAD,
     IN_RANGE),
    ("lr", "rho", "epsilon"), sparse=True)


def apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, use_locking=False):
    r"""Adadelta, TensorFlow's ``ResourceApplyAdadelta``.

    .. math::

        accum &\leftarrow \rho\,accum + (1-\rho)\,g^2 \\
        u &= \sqrt{accum\_update + \epsilon}\,/\sqrt{accum + \epsilon}\;g \\
        var &\leftarrow var - lr\,u \\
        accum\_update &\leftarrow \rho\,accum\_update + (1-\rho)\,u^2

    Parameters
    ----------
    var : ndarray or Variable, float32 or float64
        Updated in place.
    accum : ndarray or Variable
        Accumulator slot of var's shape and dtype. Updated in place.
    accum_update : ndarray or Variable
        Slot of var's shape and dtype: running average of squared updates. Updated
        in place.
    lr : float
        Learning rate. A scalar, rounded to var's dtype.
    rho : float
        Decay rate. A scalar, rounded to var's dtype.
    epsilon : float
        Small constant for numerical stability. A scalar, rounded to var's dtype.
    grad : array_like of var's shape
        The gradient; an array must have var's dtype.
    use_locking : bool, default=False
        Hold a lock on var and the slots for the update, so that concurrent calls on
        the same arrays from several Python threads run one after another.

    Returns
    -------
    None
        var and the slots are updated in place (a Variable's version is bumped).

    Raises
    ------
    InvalidArgumentError
        On a bad argument (shape, dtype, rank, a non-scalar hyper-parameter),
        checked in TensorFlow's order and with its message, before anything
        is written: var and the slots are then bit-for-bit unchanged.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, update = np.ones(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_adadelta(var, accum, update, 1.0, 0.5, 1e-6, [1.0, 1.0])
    >>> accum
    array([0.5, 0.5])
    """
    APPLY_ADADELTA.call(locals())


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
    var : ndarray or Variable of shape (n_rows, ...), float32 or float64
        Updated in place.
    accum : ndarray or Variable
        Accumulator slot of var's shape and dtype. Updated in place.
    accum_update : ndarray or Variable
        Slot of var's shape and dtype: running average of squared updates. Updated
        in place.
    lr : float
        Learning rate. A scalar, rounded to var's dtype.
    rho : float
        Decay rate. A scalar, rounded to var's dtype.
    epsilon : float
        Small constant for numerical stability. A scalar, rounded to var's dtype.
    grad : array_like of shape (len(indices),) + var.shape[1:]
        Gradient rows, one per index; an array must have var's dtype.
    indices : array_like of shape (n,), int32 or int64
        Rows of var, each in ``[0, var.shape[0])``; repeats allowed.
    use_locking : bool, default=False
        Hold a lock on var and the slots for the update, so that concurrent calls on
        the same arrays from several Python threads run one after another.
    coalesce_duplicates : bool, default=False
        Sum the rows of each repeated index first (in their original order) and
        update once per distinct index, as Keras' optimizers do; otherwise every
        occurrence gets the full update, in order, as in TensorFlow.

    Returns
    -------
    None
        var and the slots are updated in place (a Variable's version is bumped).

    Raises
    ------
    InvalidArgumentError
        On a bad argument (shape, dtype, rank, a non-scalar hyper-parameter,
        an index out of range),
        checked in TensorFlow's order and with its message, before anything
        is written: var and the slots are then bit-for-bit unchanged.

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
