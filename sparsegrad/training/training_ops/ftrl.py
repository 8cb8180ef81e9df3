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
    define,
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
     constant("is_v2", False)),
    sparse=False)

APPLY_FTRL_V2 = Spec(
    "ftrl", ("accum", "linear"),
    (same_shape("accum"), same_shape("linear"), GRAD, GRAD_SHAPE, scalar("lr"),
     scalar("l1", "l1 regularization strength"),
     scalar("l2", "l2 regularization strength"), scalar("lr_power", sep=""),
     scalar("l2_shrinkage", "l2 shrinkage regularization strength"),
     flag("multiply_linear_by_lr"), constant("is_v2", True)),
    sparse=False)

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
     IN_RANGE, flag("multiply_linear_by_lr"), constant("is_v2", False)),
    sparse=True)

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
     IN_RANGE, flag("multiply_linear_by_lr"), constant("is_v2", True)),
    sparse=True)


apply_ftrl = define(
    "apply_ftrl(var, accum, linear, grad, lr, l1, l2, lr_power, use_locking=False, "
    "multiply_linear_by_lr=False)",
    APPLY_FTRL,
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

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, linear = np.zeros(2), np.full(2, 0.1), np.zeros(2)
    >>> training_ops.apply_ftrl(var, accum, linear, [1.0, 0.05], 0.1, 0.1, 0.0, -0.5)
    >>> linear
    array([1.  , 0.05])
    >>> var.round(6)
    array([-0.085812,  0.      ])
    """)


apply_ftrl_v2 = define(
    "apply_ftrl_v2(var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power, "
    "use_locking=False, multiply_linear_by_lr=False)",
    APPLY_FTRL_V2,
    """FTRL with L2 shrinkage, TensorFlow's ``ResourceApplyFtrlV2``.

    As :func:`apply_ftrl`, with ``g + 2 * l2_shrinkage * var`` in place of ``g``
    in the `linear` update (`accum` still accumulates ``g**2``).  Note that
    `l2_shrinkage` comes before `lr_power`.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, linear = np.ones(2), np.full(2, 0.1), np.zeros(2)
    >>> training_ops.apply_ftrl_v2(
    ...     var, accum, linear, [0.0, 0.0], 0.1, 0.0, 0.0, 0.5, -0.5)
    >>> linear
    array([1., 1.])
    """)


sparse_apply_ftrl = define(
    "sparse_apply_ftrl(var, accum, linear, grad, indices, lr, l1, l2, lr_power, "
    "use_locking=False, multiply_linear_by_lr=False)",
    SPARSE_APPLY_FTRL,
    """Sparse :func:`apply_ftrl` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyFtrl``, including the ``R == 1`` path
    and its value checks: ``lr > 0`` (``>= 0`` with `multiply_linear_by_lr`),
    ``l1 >= 0``, ``l2 >= 0``, ``lr_power <= 0``.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, linear = np.zeros((2, 2)), np.full((2, 2), 0.1), np.zeros((2, 2))
    >>> training_ops.sparse_apply_ftrl(
    ...     var, accum, linear, [[1.0, 0.05]], [1], 0.1, 0.1, 0.0, -0.5)
    >>> var.round(6)
    array([[ 0.      ,  0.      ],
           [-0.085812,  0.      ]])
    """)


sparse_apply_ftrl_v2 = define(
    "sparse_apply_ftrl_v2(var, accum, linear, grad, indices, lr, l1, l2, "
    "l2_shrinkage, lr_power, use_locking=False, multiply_linear_by_lr=False)",
    SPARSE_APPLY_FTRL_V2,
    """Sparse :func:`apply_ftrl_v2` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyFtrlV2``; each occurrence of a repeated
    index recomputes the shrinkage term from the current `var`.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, linear = np.ones((2, 1)), np.full((2, 1), 0.1), np.zeros((2, 1))
    >>> training_ops.sparse_apply_ftrl_v2(
    ...     var, accum, linear, [[0.0]], [0], 0.1, 0.0, 0.0, 0.5, -0.5)
    >>> linear.ravel()
    array([1., 0.])
    """)
