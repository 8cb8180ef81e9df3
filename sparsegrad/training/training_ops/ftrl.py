"""FTRL-Proximal (FTRL and FTRL-V2 with L2 shrinkage).

The public functions check their arguments through the specs below (see
:mod:`.core`); the arithmetic is in ``sparsegrad._kernels.training``.
"""

from .core import (
    GRAD,
    GRAD_SHAPE,
    IN_RANGE,
    INDICES,
    INNER_POSITIVE,
    SPARSE_GRAD,
    VAR_RANK,
    Spec,
    checked_scalar,
    constant,
    flag,
    non_negative,
    non_positive,
    positive,
    same_shape,
    scalar,
    step,
)

__all__ = [
    "apply_ftrl",
    "apply_ftrl_v2",
    "sparse_apply_ftrl",
    "sparse_apply_ftrl_v2",
]


_FTRL_HYPER = ("lr", "l1", "l2", "l2_shrinkage", "lr_power", "multiply_linear_by_lr",
               "v2")

_LR_WHAT = "a positive scalar (or zero if multiply_linear_by_lr is set)"
_LR_POSITIVE = checked_scalar("lr", "lr", positive, _LR_WHAT)
_LR_NON_NEGATIVE = checked_scalar("lr", "lr", non_negative, _LR_WHAT)


def _ftrl_lr(call):
    """The sparse kernels take ``lr == 0`` only with multiply_linear_by_lr."""
    if call.args["multiply_linear_by_lr"]:
        _LR_NON_NEGATIVE(call)
    else:
        _LR_POSITIVE(call)


_FTRL_LR = step(_ftrl_lr, hyper="lr")


APPLY_FTRL = Spec(
    "ftrl", ("accum", "linear"),
    (same_shape("accum"), same_shape("linear"), GRAD, GRAD_SHAPE, scalar("lr"),
     scalar("l1", "l1 regularization strength"),
     scalar("l2", "l2 regularization strength"), scalar("lr_power", sep=""),
     constant("l2_shrinkage", 0.0), flag("multiply_linear_by_lr"),
     constant("v2", False)),
    _FTRL_HYPER, sparse=False)

APPLY_FTRL_V2 = Spec(
    "ftrl", ("accum", "linear"),
    (same_shape("accum"), same_shape("linear"), GRAD, GRAD_SHAPE, scalar("lr"),
     scalar("l1", "l1 regularization strength"),
     scalar("l2", "l2 regularization strength"), scalar("lr_power", sep=""),
     scalar("l2_shrinkage", "l2 shrinkage regularization strength"),
     flag("multiply_linear_by_lr"), constant("v2", True)),
    _FTRL_HYPER, sparse=False)

SPARSE_APPLY_FTRL = Spec(
    "ftrl", ("accum", "linear"),
    (same_shape("accum"), same_shape("linear"), VAR_RANK, INDICES, _FTRL_LR,
     checked_scalar("l1", "l1 regularization strength", non_negative,
                    "a non-negative scalar"),
     checked_scalar("l2", "l2 regularization strength", non_negative,
                    "a non-negative scalar"),
     checked_scalar("lr_power", "lr_power", non_positive, "a non-positive scalar"),
     GRAD, SPARSE_GRAD, INNER_POSITIVE,
     constant("l2_shrinkage", 0.0),
     IN_RANGE, flag("multiply_linear_by_lr"), constant("v2", False)),
    _FTRL_HYPER, sparse=True)

SPARSE_APPLY_FTRL_V2 = Spec(
    "ftrl", ("accum", "linear"),
    (same_shape("accum"), same_shape("linear"), VAR_RANK, INDICES, _FTRL_LR,
     checked_scalar("l1", "l1 regularization strength", non_negative,
                    "a non-negative scalar"),
     checked_scalar("l2", "l2 regularization strength", non_negative,
                    "a non-negative scalar"),
     checked_scalar("lr_power", "lr_power", non_positive, "a non-positive scalar"),
     GRAD, SPARSE_GRAD, INNER_POSITIVE,
     checked_scalar("l2_shrinkage", "l2 shrinkage regularization strength",
                    non_negative, "a non-negative scalar"),
     IN_RANGE, flag("multiply_linear_by_lr"), constant("v2", True)),
    _FTRL_HYPER, sparse=True)


def apply_ftrl(
    var,
    accum,
    linear,
    grad,
    lr,
    l1,
    l2,
    lr_power,
    use_locking=False,
    multiply_linear_by_lr=False,
):
    r"""FTRL-Proximal, TensorFlow's ``ResourceApplyFtrl``.

    With :math:`P(x) = x^{-p}` for ``p = lr_power`` (a square root when
    ``p == -0.5``):

    .. math::

        n' &= accum + g^2, \quad
        \sigma = (P(n') - P(accum)) / lr \\
        linear &\leftarrow linear + g - \sigma\,var \\
        var &\leftarrow \begin{cases}
            \dfrac{l_1 \operatorname{sign}(linear) - linear}{P(n')/lr + 2 l_2}
            & |linear| > l_1 \\ 0 & \text{otherwise}\end{cases}, \quad
        accum \leftarrow n'

    With ``multiply_linear_by_lr=True`` `linear` holds ``lr`` times the usual
    value and the formula is rearranged accordingly.  No value checks (a zero
    `lr` divides by zero), as in TensorFlow's dense kernel.

    Parameters
    ----------
    var : ndarray or Variable, float32 or float64
        Updated in place.
    accum : ndarray or Variable
        Accumulator slot of var's shape and dtype. Updated in place.
    linear : ndarray or Variable
        Slot of var's shape and dtype: FTRL's linear term. Updated in place.
    grad : array_like of var's shape
        The gradient; an array must have var's dtype.
    lr : float
        Learning rate. A scalar, rounded to var's dtype.
    l1 : float
        L1 regularisation strength. A scalar, rounded to var's dtype.
    l2 : float
        L2 regularisation strength. A scalar, rounded to var's dtype.
    lr_power : float
        Power of the accumulator in the learning rate (<= 0). A scalar, rounded to
        var's dtype.
    use_locking : bool, default=False
        Hold a lock on var and the slots for the update, so that concurrent calls on
        the same arrays from several Python threads run one after another.
    multiply_linear_by_lr : bool, default=False
        Keep `linear` multiplied by `lr` (TensorFlow's variant of the update).

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
    >>> var, accum, linear = np.zeros(2), np.full(2, 0.1), np.zeros(2)
    >>> training_ops.apply_ftrl(var, accum, linear, [1.0, 0.05], 0.1, 0.1, 0.0, -0.5)
    >>> linear
    array([1.  , 0.05])
    >>> var.round(6)
    array([-0.085812,  0.      ])
    """
    APPLY_FTRL.call(locals())


def apply_ftrl_v2(
    var,
    accum,
    linear,
    grad,
    lr,
    l1,
    l2,
    l2_shrinkage,
    lr_power,
    use_locking=False,
    multiply_linear_by_lr=False,
):
    """FTRL with L2 shrinkage, TensorFlow's ``ResourceApplyFtrlV2``.

    As :func:`apply_ftrl`, with ``g + 2 * l2_shrinkage * var`` in place of ``g``
    in the `linear` update (`accum` still accumulates ``g**2``).  Note that
    `l2_shrinkage` comes before `lr_power`.

    Parameters
    ----------
    var : ndarray or Variable, float32 or float64
        Updated in place.
    accum : ndarray or Variable
        Accumulator slot of var's shape and dtype. Updated in place.
    linear : ndarray or Variable
        Slot of var's shape and dtype: FTRL's linear term. Updated in place.
    grad : array_like of var's shape
        The gradient; an array must have var's dtype.
    lr : float
        Learning rate. A scalar, rounded to var's dtype.
    l1 : float
        L1 regularisation strength. A scalar, rounded to var's dtype.
    l2 : float
        L2 regularisation strength. A scalar, rounded to var's dtype.
    l2_shrinkage : float
        L2 shrinkage regularisation strength (FTRL-V2). A scalar, rounded to var's
        dtype.
    lr_power : float
        Power of the accumulator in the learning rate (<= 0). A scalar, rounded to
        var's dtype.
    use_locking : bool, default=False
        Hold a lock on var and the slots for the update, so that concurrent calls on
        the same arrays from several Python threads run one after another.
    multiply_linear_by_lr : bool, default=False
        Keep `linear` multiplied by `lr` (TensorFlow's variant of the update).

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
    >>> var, accum, linear = np.ones(2), np.full(2, 0.1), np.zeros(2)
    >>> training_ops.apply_ftrl_v2(
    ...     var, accum, linear, [0.0, 0.0], 0.1, 0.0, 0.0, 0.5, -0.5)
    >>> linear
    array([1., 1.])
    """
    APPLY_FTRL_V2.call(locals())


def sparse_apply_ftrl(
    var,
    accum,
    linear,
    grad,
    indices,
    lr,
    l1,
    l2,
    lr_power,
    use_locking=False,
    multiply_linear_by_lr=False,
    *,
    coalesce_duplicates=False,
):
    """Sparse :func:`apply_ftrl` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyFtrl``, including the ``R == 1`` path
    and its value checks: ``lr > 0`` (``>= 0`` with `multiply_linear_by_lr`),
    ``l1 >= 0``, ``l2 >= 0``, ``lr_power <= 0``.

    Parameters
    ----------
    var : ndarray or Variable of shape (n_rows, ...), float32 or float64
        Updated in place.
    accum : ndarray or Variable
        Accumulator slot of var's shape and dtype. Updated in place.
    linear : ndarray or Variable
        Slot of var's shape and dtype: FTRL's linear term. Updated in place.
    grad : array_like of shape (len(indices),) + var.shape[1:]
        Gradient rows, one per index; an array must have var's dtype.
    indices : array_like of shape (n,), int32 or int64
        Rows of var, each in ``[0, var.shape[0])``; repeats allowed.
    lr : float
        Learning rate. A scalar, rounded to var's dtype.
    l1 : float
        L1 regularisation strength. A scalar, rounded to var's dtype.
    l2 : float
        L2 regularisation strength. A scalar, rounded to var's dtype.
    lr_power : float
        Power of the accumulator in the learning rate (<= 0). A scalar, rounded to
        var's dtype.
    use_locking : bool, default=False
        Hold a lock on var and the slots for the update, so that concurrent calls on
        the same arrays from several Python threads run one after another.
    multiply_linear_by_lr : bool, default=False
        Keep `linear` multiplied by `lr` (TensorFlow's variant of the update).
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
    >>> var, accum, linear = np.zeros((2, 2)), np.full((2, 2), 0.1), np.zeros((2, 2))
    >>> training_ops.sparse_apply_ftrl(
    ...     var, accum, linear, [[1.0, 0.05]], [1], 0.1, 0.1, 0.0, -0.5)
    >>> var.round(6)
    array([[ 0.      ,  0.      ],
           [-0.085812,  0.      ]])
    """
    SPARSE_APPLY_FTRL.call(locals())


def sparse_apply_ftrl_v2(
    var,
    accum,
    linear,
    grad,
    indices,
    lr,
    l1,
    l2,
    l2_shrinkage,
    lr_power,
    use_locking=False,
    multiply_linear_by_lr=False,
    *,
    coalesce_duplicates=False,
):
    """Sparse :func:`apply_ftrl_v2` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyFtrlV2``; each occurrence of a repeated
    index recomputes the shrinkage term from the current `var`.

    Parameters
    ----------
    var : ndarray or Variable of shape (n_rows, ...), float32 or float64
        Updated in place.
    accum : ndarray or Variable
        Accumulator slot of var's shape and dtype. Updated in place.
    linear : ndarray or Variable
        Slot of var's shape and dtype: FTRL's linear term. Updated in place.
    grad : array_like of shape (len(indices),) + var.shape[1:]
        Gradient rows, one per index; an array must have var's dtype.
    indices : array_like of shape (n,), int32 or int64
        Rows of var, each in ``[0, var.shape[0])``; repeats allowed.
    lr : float
        Learning rate. A scalar, rounded to var's dtype.
    l1 : float
        L1 regularisation strength. A scalar, rounded to var's dtype.
    l2 : float
        L2 regularisation strength. A scalar, rounded to var's dtype.
    l2_shrinkage : float
        L2 shrinkage regularisation strength (FTRL-V2). A scalar, rounded to var's
        dtype.
    lr_power : float
        Power of the accumulator in the learning rate (<= 0). A scalar, rounded to
        var's dtype.
    use_locking : bool, default=False
        Hold a lock on var and the slots for the update, so that concurrent calls on
        the same arrays from several Python threads run one after another.
    multiply_linear_by_lr : bool, default=False
        Keep `linear` multiplied by `lr` (TensorFlow's variant of the update).
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
    >>> var, accum, linear = np.ones((2, 1)), np.full((2, 1), 0.1), np.zeros((2, 1))
    >>> training_ops.sparse_apply_ftrl_v2(
    ...     var, accum, linear, [[0.0]], [0], 0.1, 0.0, 0.0, 0.5, -0.5)
    >>> linear.ravel()
    array([1., 0.])
    """
    SPARSE_APPLY_FTRL_V2.call(locals())
