"""RMSProp, plain and centered.

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
    "apply_rms_prop",
    "sparse_apply_rms_prop",
    "apply_centered_rms_prop",
    "sparse_apply_centered_rms_prop",
]


APPLY_RMS_PROP = Spec(
    "rms_prop", ("ms", "mom"),
    (scalar("lr", sep=" : "), scalar("rho"), scalar("momentum"), scalar("epsilon"),
     same_shape("ms"), same_shape("mom"), GRAD, GRAD_SHAPE),
    ("lr", "rho", "momentum", "epsilon"), sparse=False)

SPARSE_APPLY_RMS_PROP = Spec(
    "rms_prop", ("ms", "mom"),
    (scalar("lr", sep=": "), scalar("rho"), scalar("momentum"), scalar("epsilon"),
     same_shape("ms"), same_shape("mom"), VAR_RANK,
     INDICES, GRAD, SPARSE_GRAD, IN_RANGE),
    ("lr", "rho", "momentum", "epsilon"), sparse=True)

APPLY_CENTERED_RMS_PROP = Spec(
    "centered_rms_prop", ("mg", "ms", "mom"),
    (scalar("lr", sep=" : "), scalar("rho"), scalar("momentum"), scalar("epsilon"),
     same_shape("mg"), same_shape("ms"), same_shape("mom"), GRAD, GRAD_SHAPE),
    ("lr", "rho", "momentum", "epsilon"), sparse=False)

SPARSE_APPLY_CENTERED_RMS_PROP = Spec(
    "centered_rms_prop", ("mg", "ms", "mom"),
    (scalar("lr", sep=": "), scalar("rho"), scalar("momentum"), scalar("epsilon"),
     same_shape("mg"), same_shape("ms"), same_shape("mom"), VAR_RANK,
     INDICES, GRAD, SPARSE_GRAD, IN_RANGE),
    ("lr", "rho", "momentum", "epsilon"), sparse=True)


def apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False):
    r"""RMSProp with momentum, TensorFlow's ``ResourceApplyRMSProp``.

    .. math::

        ms &\leftarrow ms + (g^2 - ms)(1 - \rho) \\
        mom &\leftarrow momentum\cdot mom + lr\,g / \sqrt{ms + \epsilon} \\
        var &\leftarrow var - mom

    Epsilon is inside the square root.

    Parameters
    ----------
    var : ndarray or Variable, float32 or float64
        Updated in place.
    ms : ndarray or Variable
        Slot of var's shape and dtype: mean square of the gradients. Updated in
        place.
    mom : ndarray or Variable
        Slot of var's shape and dtype: the momentum of the update. Updated in place.
    lr : float
        Learning rate. A scalar, rounded to var's dtype.
    rho : float
        Decay rate. A scalar, rounded to var's dtype.
    momentum : float
        Momentum. A scalar, rounded to var's dtype.
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
    >>> var, ms, mom = np.ones(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_rms_prop(var, ms, mom, 0.1, 0.75, 0.0, 0.0, [2.0, -2.0])
    >>> var
    array([0.8, 1.2])
    """
    APPLY_RMS_PROP.call(locals())


def sparse_apply_rms_prop(
    var,
    ms,
    mom,
    lr,
    rho,
    momentum,
    epsilon,
    grad,
    indices,
    use_locking=False,
    *,
    coalesce_duplicates=False,
):
    """Sparse :func:`apply_rms_prop` on the rows ``indices`` (lazy).

    TensorFlow's ``ResourceSparseApplyRMSProp``, whose per-row arithmetic is
    arranged differently from the dense kernel's
    (``ms * rho + g**2 * (1 - rho)``), so results may differ in the last bit.

    Parameters
    ----------
    var : ndarray or Variable of shape (n_rows, ...), float32 or float64
        Updated in place.
    ms : ndarray or Variable
        Slot of var's shape and dtype: mean square of the gradients. Updated in
        place.
    mom : ndarray or Variable
        Slot of var's shape and dtype: the momentum of the update. Updated in place.
    lr : float
        Learning rate. A scalar, rounded to var's dtype.
    rho : float
        Decay rate. A scalar, rounded to var's dtype.
    momentum : float
        Momentum. A scalar, rounded to var's dtype.
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
    >>> var, ms, mom = np.ones((2, 1)), np.zeros((2, 1)), np.zeros((2, 1))
    >>> training_ops.sparse_apply_rms_prop(
    ...     var, ms, mom, 0.1, 0.75, 0.0, 0.0, [[2.0]], [0])
    >>> var.ravel()
    array([0.8, 1. ])
    """
    SPARSE_APPLY_RMS_PROP.call(locals())


def apply_centered_rms_prop(
    var, mg, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False
):
    r"""Centered RMSProp, TensorFlow's ``ResourceApplyCenteredRMSProp``.

    .. math::

        ms &\leftarrow ms + (g^2 - ms)(1 - \rho), \quad
        mg \leftarrow mg + (g - mg)(1 - \rho) \\
        mom &\leftarrow momentum\cdot mom
              + lr\,g / \sqrt{ms - mg^2 + \epsilon} \\
        var &\leftarrow var - mom

    Note that `mg` comes before `ms`.

    Parameters
    ----------
    var : ndarray or Variable, float32 or float64
        Updated in place.
    mg : ndarray or Variable
        Slot of var's shape and dtype: mean of the gradients. Updated in place.
    ms : ndarray or Variable
        Slot of var's shape and dtype: mean square of the gradients. Updated in
        place.
    mom : ndarray or Variable
        Slot of var's shape and dtype: the momentum of the update. Updated in place.
    lr : float
        Learning rate. A scalar, rounded to var's dtype.
    rho : float
        Decay rate. A scalar, rounded to var's dtype.
    momentum : float
        Momentum. A scalar, rounded to var's dtype.
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
    >>> var, mg, ms, mom = np.ones(1), np.zeros(1), np.zeros(1), np.zeros(1)
    >>> training_ops.apply_centered_rms_prop(
    ...     var, mg, ms, mom, 0.1, 0.5, 0.0, 0.0, [2.0])
    >>> mg, ms
    (array([1.]), array([2.]))
    """
    APPLY_CENTERED_RMS_PROP.call(locals())


def sparse_apply_centered_rms_prop(
    var,
    mg,
    ms,
    mom,
    lr,
    rho,
    momentum,
    epsilon,
    grad,
    indices,
    use_locking=False,
    *,
    coalesce_duplicates=False,
):
    """Sparse :func:`apply_centered_rms_prop` on the rows ``indices`` (lazy).

    TensorFlow's ``ResourceSparseApplyCenteredRMSProp`` (per-row arithmetic
    arranged as in :func:`sparse_apply_rms_prop`).

    Parameters
    ----------
    var : ndarray or Variable of shape (n_rows, ...), float32 or float64
        Updated in place.
    mg : ndarray or Variable
        Slot of var's shape and dtype: mean of the gradients. Updated in place.
    ms : ndarray or Variable
        Slot of var's shape and dtype: mean square of the gradients. Updated in
        place.
    mom : ndarray or Variable
        Slot of var's shape and dtype: the momentum of the update. Updated in place.
    lr : float
        Learning rate. A scalar, rounded to var's dtype.
    rho : float
        Decay rate. A scalar, rounded to var's dtype.
    momentum : float
        Momentum. A scalar, rounded to var's dtype.
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
    >>> var, mg, ms, mom = (np.zeros((2, 1)) for _ in range(4))
    >>> training_ops.sparse_apply_centered_rms_prop(
    ...     var, mg, ms, mom, 0.1, 0.5, 0.0, 0.0, [[2.0]], [1])
    >>> mg.ravel(), ms.ravel()
    (array([0., 1.]), array([0., 2.]))
    """
    SPARSE_APPLY_CENTERED_RMS_PROP.call(locals())
