"""FTRL-Proximal (FTRL and FTRL-V2 with L2 shrinkage)."""

from . import core as c

__all__ = [
    "apply_ftrl",
    "apply_ftrl_v2",
    "sparse_apply_ftrl",
    "sparse_apply_ftrl_v2",
]


_LR_WHAT = "a positive scalar (or zero if multiply_linear_by_lr is set)"
_LR_POSITIVE = c.checked_scalar("lr", "lr", c.positive, _LR_WHAT)
_LR_NON_NEGATIVE = c.checked_scalar("lr", "lr", c.non_negative, _LR_WHAT)


def _ftrl_lr(call):
    """The sparse kernels take ``lr == 0`` only with multiply_linear_by_lr."""
    if call.args["multiply_linear_by_lr"]:
        _LR_NON_NEGATIVE(call)
    else:
        _LR_POSITIVE(call)


_FTRL_LR = c.step(_ftrl_lr, hyper="lr")


def _specs(v2):
    """The dense and the sparse spec of FTRL (`v2`: FTRL-V2, whose
    ``l2_shrinkage`` is an argument; 0 for FTRL)."""
    slots = (c.same_shape("accum"), c.same_shape("linear"))
    dense_shrinkage = sparse_shrinkage = c.constant("l2_shrinkage", 0.0)
    if v2:
        label = "l2 shrinkage regularization strength"
        dense_shrinkage = c.scalar("l2_shrinkage", label)
        sparse_shrinkage = c.checked_scalar("l2_shrinkage", label, c.non_negative,
                                            "a non-negative scalar")
    tail = (c.flag("multiply_linear_by_lr"), c.constant("is_v2", v2))
    dense = c.Spec(
        "ftrl", ("accum", "linear"),
        (*slots, c.GRAD, c.GRAD_SHAPE, c.scalar("lr"), c.L1, c.L2,
         c.scalar("lr_power", sep=""), dense_shrinkage, *tail),
        sparse=False)
    sparse = c.Spec(
        "ftrl", ("accum", "linear"),
        (*slots, c.VAR_RANK, c.INDICES, _FTRL_LR, c.L1_NON_NEGATIVE,
         c.L2_NON_NEGATIVE,
         c.checked_scalar("lr_power", "lr_power", c.non_positive,
                          "a non-positive scalar"),
         c.GRAD, c.SPARSE_GRAD, c.INNER_POSITIVE, sparse_shrinkage, c.IN_RANGE,
         *tail),
        sparse=True)
    return dense, sparse


APPLY_FTRL, SPARSE_APPLY_FTRL = _specs(False)
APPLY_FTRL_V2, SPARSE_APPLY_FTRL_V2 = _specs(True)


apply_ftrl = c.define(
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


apply_ftrl_v2 = c.define(
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


sparse_apply_ftrl = c.define(
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


sparse_apply_ftrl_v2 = c.define(
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
