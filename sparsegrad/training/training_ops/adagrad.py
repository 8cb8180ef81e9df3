"""Adagrad and its variants: V2 (epsilon), proximal, dual averaging, row-wise.

The public functions check their arguments through the specs below (see
:mod:`.core`); the arithmetic is in ``sparsegrad._kernels.training``.
"""

from ...errors import InvalidArgumentError
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
    define,
    flag,
    global_step,
    non_negative,
    positive,
    same_shape,
    scalar,
    shape_str,
    step,
)

__all__ = [
    "apply_adagrad",
    "sparse_apply_adagrad",
    "apply_adagrad_v2",
    "sparse_apply_adagrad_v2",
    "apply_proximal_adagrad",
    "sparse_apply_proximal_adagrad",
    "apply_adagrad_da",
    "sparse_apply_adagrad_da",
    "apply_rowwise_adagrad",
    "sparse_apply_rowwise_adagrad",
]


def _rowwise_accum(call):
    accum = call.slots["accum"]
    if accum.shape != call.var.shape[:1]:
        raise InvalidArgumentError(
            "accum must have shape [var.shape[0]] (one accumulator per row of var): "
            f"var has shape {shape_str(call.var.shape)} and accum "
            f"{shape_str(accum.shape)}"
        )


_ROWWISE_ACCUM = step(_rowwise_accum)
_ROWWISE_PARAMETERS = {"accum": """\
accum : ndarray or Variable of shape (var.shape[0],)
    One accumulator per row of var, var's dtype; updated in place."""}


APPLY_ADAGRAD = Spec(
    "adagrad", ("accum",),
    (scalar("lr"), same_shape("accum"), GRAD, GRAD_SHAPE, flag("update_slots")),
    sparse=False)

SPARSE_APPLY_ADAGRAD = Spec(
    "adagrad", ("accum",),
    (same_shape("accum"), VAR_RANK, scalar("lr"), INDICES, GRAD, SPARSE_GRAD,
     INNER_POSITIVE, IN_RANGE, flag("update_slots")),
    sparse=True)

APPLY_ADAGRAD_V2 = Spec(
    "adagrad_v2", ("accum",),
    (scalar("lr"), scalar("epsilon"), same_shape("accum"), GRAD, GRAD_SHAPE,
     flag("update_slots")),
    sparse=False)

SPARSE_APPLY_ADAGRAD_V2 = Spec(
    "adagrad_v2", ("accum",),
    (same_shape("accum"), VAR_RANK, scalar("lr"), scalar("epsilon"), INDICES, GRAD,
     SPARSE_GRAD, INNER_POSITIVE, IN_RANGE, flag("update_slots")),
    sparse=True)

APPLY_PROXIMAL_ADAGRAD = Spec(
    "proximal_adagrad", ("accum",),
    (same_shape("accum"), checked_scalar("lr", "lr", positive, "a positive scalar"),
     checked_scalar("l1", "l1 regularization strength", non_negative,
                    "a non-negative scalar"),
     checked_scalar("l2", "l2 regularization strength", non_negative,
                    "a non-negative scalar"),
     GRAD, GRAD_SHAPE),
    sparse=False)

SPARSE_APPLY_PROXIMAL_ADAGRAD = Spec(
    "proximal_adagrad", ("accum",),
    (same_shape("accum"), VAR_RANK,
     checked_scalar("lr", "lr", positive, "a positive scalar"),
     checked_scalar("l1", "l1 regularization strength", non_negative,
                    "a non-negative scalar"),
     checked_scalar("l2", "l2 regularization strength", non_negative,
                    "a non-negative scalar"),
     INDICES, GRAD, SPARSE_GRAD, INNER_POSITIVE, IN_RANGE),
    sparse=True)

APPLY_ADAGRAD_DA = Spec(
    "adagrad_da", ("gradient_accumulator", "gradient_squared_accumulator"),
    (same_shape("gradient_accumulator", "accum"),
     same_shape("gradient_squared_accumulator", "accum"), GRAD, GRAD_SHAPE,
     scalar("lr"), scalar("l1", "l1 regularization strength"),
     scalar("l2", "l2 regularization strength"), global_step()),
    sparse=False)

SPARSE_APPLY_ADAGRAD_DA = Spec(
    "adagrad_da", ("gradient_accumulator", "gradient_squared_accumulator"),
    (same_shape("gradient_accumulator", "accum"),
     same_shape("gradient_squared_accumulator", "accum"), VAR_RANK, INDICES,
     scalar("lr"), scalar("l1", "l1 regularization strength"),
     scalar("l2", "l2 regularization strength"), global_step(), GRAD,
     SPARSE_GRAD, INNER_POSITIVE, IN_RANGE),
    sparse=True)

APPLY_ROWWISE_ADAGRAD = Spec(
    "rowwise_adagrad", ("accum",),
    (VAR_RANK, _ROWWISE_ACCUM, scalar("lr"), scalar("epsilon"), GRAD, GRAD_SHAPE,
     INNER_POSITIVE),
    sparse=False, rowwise=True)

SPARSE_APPLY_ROWWISE_ADAGRAD = Spec(
    "rowwise_adagrad", ("accum",),
    (VAR_RANK, _ROWWISE_ACCUM, scalar("lr"), scalar("epsilon"), INDICES, GRAD,
     SPARSE_GRAD, INNER_POSITIVE, IN_RANGE),
    sparse=True, rowwise=True)


apply_adagrad = define(
    "apply_adagrad(var, accum, lr, grad, use_locking=False, update_slots=True)",
    APPLY_ADAGRAD,
    r"""Adagrad without epsilon, TensorFlow's ``ResourceApplyAdagrad``.

    .. math::

        accum \leftarrow accum + g^2, \qquad
        var \leftarrow var - lr\,g / \sqrt{accum}

    ``1/sqrt`` is computed exactly (TensorFlow's float32 kernels use a
    hardware estimate, up to 4 ulp off).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones(2), np.zeros(2)
    >>> training_ops.apply_adagrad(var, accum, 0.1, [2.0, -1.0])
    >>> var
    array([0.9, 1.1])
    """)


sparse_apply_adagrad = define(
    "sparse_apply_adagrad(var, accum, lr, grad, indices, use_locking=False, "
    "update_slots=True)",
    SPARSE_APPLY_ADAGRAD,
    """Sparse :func:`apply_adagrad` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyAdagrad``.  With ``R == 1`` TensorFlow
    divides by ``sqrt(accum)`` instead of multiplying by its reciprocal, and so
    does this op.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((3, 1)), np.zeros((3, 1))
    >>> training_ops.sparse_apply_adagrad(var, accum, 0.1, [[2.0]], [0])
    >>> var.ravel()
    array([0.9, 1. , 1. ])
    """)


apply_adagrad_v2 = define(
    "apply_adagrad_v2(var, accum, lr, epsilon, grad, use_locking=False, "
    "update_slots=True)",
    APPLY_ADAGRAD_V2,
    r"""Adagrad with epsilon outside the root, TensorFlow's ``ResourceApplyAdagradV2``.

    .. math::

        accum \leftarrow accum + g^2, \qquad
        var \leftarrow var - \frac{lr\,g}{\sqrt{accum} + \epsilon}

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones(2), np.zeros(2)
    >>> training_ops.apply_adagrad_v2(var, accum, 0.1, 0.0, [2.0, -1.0])
    >>> var
    array([0.9, 1.1])
    """)


sparse_apply_adagrad_v2 = define(
    "sparse_apply_adagrad_v2(var, accum, lr, epsilon, grad, indices, "
    "use_locking=False, update_slots=True)",
    SPARSE_APPLY_ADAGRAD_V2,
    """Sparse :func:`apply_adagrad_v2` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyAdagradV2`` (what Keras' ``Adagrad``
    calls for sparse gradients).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((3, 2)), np.full((3, 2), 0.1)
    >>> training_ops.sparse_apply_adagrad_v2(
    ...     var, accum, 0.5, 1e-7, [[0.3, 0.4]], [1])
    >>> accum[1]
    array([0.19, 0.26])
    """)


apply_proximal_adagrad = define(
    "apply_proximal_adagrad(var, accum, lr, l1, l2, grad, use_locking=False)",
    APPLY_PROXIMAL_ADAGRAD,
    r"""Proximal Adagrad, TensorFlow's ``ResourceApplyProximalAdagrad``.

    .. math::

        accum &\leftarrow accum + g^2, \quad \eta = lr/\sqrt{accum}, \quad
        p = var - \eta\,g \\
        var &\leftarrow \frac{\operatorname{sign}(p)\max(|p| - \eta l_1, 0)}
        {1 + \eta l_2}

    `lr` must be positive, `l1` and `l2` non-negative.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones(2), np.zeros(2)
    >>> training_ops.apply_proximal_adagrad(var, accum, 0.5, 0.0, 0.0, [1.0, 2.0])
    >>> var
    array([0.5, 0.5])
    """)


sparse_apply_proximal_adagrad = define(
    "sparse_apply_proximal_adagrad(var, accum, lr, l1, l2, grad, indices, "
    "use_locking=False)",
    SPARSE_APPLY_PROXIMAL_ADAGRAD,
    """Sparse :func:`apply_proximal_adagrad` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyProximalAdagrad``, including its ``R == 1``
    path (exact division, final division in float64).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((2, 2)), np.zeros((2, 2))
    >>> training_ops.sparse_apply_proximal_adagrad(
    ...     var, accum, 0.5, 0.0, 0.0, [[1.0, 2.0]], [1])
    >>> var
    array([[1. , 1. ],
           [0.5, 0.5]])
    """)


apply_adagrad_da = define(
    "apply_adagrad_da(var, gradient_accumulator, gradient_squared_accumulator, grad, "
    "lr, l1, l2, global_step, use_locking=False)",
    APPLY_ADAGRAD_DA,
    r"""Adagrad dual averaging, TensorFlow's ``ResourceApplyAdagradDA``.

    .. math::

        a &\leftarrow a + g, \quad s \leftarrow s + g^2 \\
        var &\leftarrow \frac{-lr\,\operatorname{sign}(a)\max(|a| - t\,l_1, 0)}
        {l_2\,t\,lr + \sqrt{s}}

    where ``t`` is `global_step` rounded to float32 (as TensorFlow does, for
    float64 variables too).  The new `var` does not depend on the old one.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, acc, sq = np.zeros(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_adagrad_da(var, acc, sq, [1.0, -2.0], 0.5, 0.0, 0.0, 1)
    >>> var
    array([-0.5,  0.5])
    """)


sparse_apply_adagrad_da = define(
    "sparse_apply_adagrad_da(var, gradient_accumulator, "
    "gradient_squared_accumulator, grad, indices, lr, l1, l2, global_step, "
    "use_locking=False)",
    SPARSE_APPLY_ADAGRAD_DA,
    """Sparse :func:`apply_adagrad_da` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyAdagradDA``: note that `grad` and
    `indices` come before `lr`.  ``global_step == 0`` gives NaN or inf, as in
    TensorFlow.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, acc, sq = np.zeros((2, 2)), np.zeros((2, 2)), np.zeros((2, 2))
    >>> training_ops.sparse_apply_adagrad_da(
    ...     var, acc, sq, [[1.0, -2.0]], [0], 0.5, 0.0, 0.0, 1)
    >>> var
    array([[-0.5,  0.5],
           [ 0. ,  0. ]])
    """)


apply_rowwise_adagrad = define(
    "apply_rowwise_adagrad(var, accum, lr, epsilon, grad, use_locking=False)",
    APPLY_ROWWISE_ADAGRAD,
    r"""Row-wise Adagrad: one accumulator per row of `var` (dense gradient).

    For each row ``i`` with gradient row ``g_i`` of ``R`` elements:

    .. math::

        accum_i &\leftarrow accum_i + \frac{1}{R}\sum_j g_{ij}^2 \\
        var_i &\leftarrow var_i - \frac{lr}{\sqrt{accum_i} + \epsilon}\, g_i

    as FBGEMM's and TorchRec's ``rowwise_adagrad`` do (epsilon outside the
    root).  The mean is accumulated in float64, in order, and rounded to the
    dtype of `var` once; the multiplier ``lr / (sqrt(accum_i) + epsilon)`` is
    computed in that dtype.  It keeps ``1/R`` of Adagrad's slot memory, which
    matters for embedding tables.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((2, 2)), np.zeros(2)
    >>> grad = [[1.0, 1.0], [3.0, 4.0]]
    >>> training_ops.apply_rowwise_adagrad(var, accum, 0.5, 0.0, grad)
    >>> accum
    array([ 1. , 12.5])
    >>> var[0]
    array([0.5, 0.5])
    """,
    params=_ROWWISE_PARAMETERS)


sparse_apply_rowwise_adagrad = define(
    "sparse_apply_rowwise_adagrad(var, accum, lr, epsilon, grad, indices, "
    "use_locking=False)",
    SPARSE_APPLY_ROWWISE_ADAGRAD,
    """Row-wise Adagrad on the rows ``indices`` (see :func:`apply_rowwise_adagrad`).

    A repeated index gets one full update per occurrence, in order (or one
    update with the summed rows when ``coalesce_duplicates=True``, as FBGEMM
    does).  Rows not indexed are untouched.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((3, 2)), np.zeros(3)
    >>> training_ops.sparse_apply_rowwise_adagrad(
    ...     var, accum, 0.5, 0.0, [[3.0, 4.0]], [2])
    >>> accum
    array([ 0. ,  0. , 12.5])
    """,
    params=_ROWWISE_PARAMETERS)
