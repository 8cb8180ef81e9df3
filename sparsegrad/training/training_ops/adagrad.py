"""Adagrad and its variants: V2 (epsilon), proximal, dual averaging, row-wise."""

from ...errors import InvalidArgumentError
from . import core as c

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
            f"var has shape {c.shape_str(call.var.shape)} and accum "
            f"{c.shape_str(accum.shape)}"
        )


_ROWWISE_ACCUM = c.step(_rowwise_accum)
_ROWWISE_PARAMETERS = {"accum": """\
accum : ndarray or Variable of shape (var.shape[0],)
    One accumulator per row of var, var's dtype; updated in place."""}


def _specs(kernel, slots, dense, sparse, rowwise=False):
    """The dense and the sparse spec of a kernel: `dense` and `sparse` list
    the steps of each op in TensorFlow's order, ``G`` standing for the
    gradient's checks (``GRAD, GRAD_SHAPE`` or ``INDICES, GRAD, SPARSE_GRAD,
    INNER_POSITIVE, IN_RANGE``)."""
    grads = {False: (c.GRAD, c.GRAD_SHAPE),
             True: (c.INDICES, c.GRAD, c.SPARSE_GRAD, c.INNER_POSITIVE, c.IN_RANGE)}
    return tuple(
        c.Spec(kernel, slots,
               [s for step in steps
                for s in (grads[is_sparse] if step == "G" else (step,))],
               sparse=is_sparse, rowwise=rowwise)
        for is_sparse, steps in ((False, dense), (True, sparse)))


_LR, _EPSILON, _UPDATE = c.scalar("lr"), c.scalar("epsilon"), c.flag("update_slots")
_ACCUM = c.same_shape("accum")

APPLY_ADAGRAD, SPARSE_APPLY_ADAGRAD = _specs(
    "adagrad", ("accum",),
    (_LR, _ACCUM, "G", _UPDATE), (_ACCUM, c.VAR_RANK, _LR, "G", _UPDATE))

APPLY_ADAGRAD_V2, SPARSE_APPLY_ADAGRAD_V2 = _specs(
    "adagrad_v2", ("accum",),
    (_LR, _EPSILON, _ACCUM, "G", _UPDATE),
    (_ACCUM, c.VAR_RANK, _LR, _EPSILON, "G", _UPDATE))

_PROXIMAL = (c.checked_scalar("lr", "lr", c.positive, "a positive scalar"),
             c.L1_NON_NEGATIVE, c.L2_NON_NEGATIVE)
APPLY_PROXIMAL_ADAGRAD, SPARSE_APPLY_PROXIMAL_ADAGRAD = _specs(
    "proximal_adagrad", ("accum",),
    (_ACCUM, *_PROXIMAL, "G"), (_ACCUM, c.VAR_RANK, *_PROXIMAL, "G"))

_DA_SLOTS = (c.same_shape("gradient_accumulator", "accum"),
             c.same_shape("gradient_squared_accumulator", "accum"))
_DA_HYPER = (_LR, c.L1, c.L2, c.global_step())
APPLY_ADAGRAD_DA, SPARSE_APPLY_ADAGRAD_DA = _specs(
    "adagrad_da", ("gradient_accumulator", "gradient_squared_accumulator"),
    (*_DA_SLOTS, "G", *_DA_HYPER),
    # (the sparse op checks the indices first, the gradient after the rest)
    (*_DA_SLOTS, c.VAR_RANK, c.INDICES, *_DA_HYPER, c.GRAD, c.SPARSE_GRAD,
     c.INNER_POSITIVE, c.IN_RANGE))

APPLY_ROWWISE_ADAGRAD, SPARSE_APPLY_ROWWISE_ADAGRAD = _specs(
    "rowwise_adagrad", ("accum",),
    (c.VAR_RANK, _ROWWISE_ACCUM, _LR, _EPSILON, "G", c.INNER_POSITIVE),
    (c.VAR_RANK, _ROWWISE_ACCUM, _LR, _EPSILON, "G"), rowwise=True)


apply_adagrad = c.define(
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


sparse_apply_adagrad = c.define(
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


apply_adagrad_v2 = c.define(
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


sparse_apply_adagrad_v2 = c.define(
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


apply_proximal_adagrad = c.define(
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


sparse_apply_proximal_adagrad = c.define(
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


apply_adagrad_da = c.define(
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


sparse_apply_adagrad_da = c.define(
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


apply_rowwise_adagrad = c.define(
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


sparse_apply_rowwise_adagrad = c.define(
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
