"""Adam, Adam with AMSGrad, AdaMax, Nadam and Lamb."""

import numpy as np

from . import core as c

__all__ = [
    "apply_adam",
    "sparse_apply_adam",
    "apply_adam_with_amsgrad",
    "apply_ada_max",
    "sparse_apply_ada_max",
    "apply_nadam",
    "sparse_apply_nadam",
    "apply_lamb",
    "sparse_apply_lamb",
]


def _step_size(call, with_beta2):
    """TensorFlow's step size, computed once in var's dtype with one rounding
    per operation: ``lr * sqrt(1 - beta2_power) / (1 - beta1_power)``, or
    ``lr / (1 - beta1_power)`` for AdaMax."""
    t = call.dtype.type
    hyper = call.hyper
    lr, b1p = t(hyper["lr"]), t(hyper["beta1_power"])
    b2p = t(hyper["beta2_power"]) if with_beta2 else None
    if b1p == 1 or (b2p is not None and not b2p <= 1):
        with np.errstate(all="ignore"):         # inf or nan, as TF gets
            hyper["alpha"] = _formula(t, lr, b1p, b2p)
    else:
        hyper["alpha"] = _formula(t, lr, b1p, b2p)


def _formula(t, lr, b1p, b2p):
    if b2p is None:
        return float(lr / (t(1) - b1p))
    return float((lr * np.sqrt(t(1) - b2p)) / (t(1) - b1p))


_ADAM_STEP = c.step(lambda call: _step_size(call, True), hyper="alpha")
_ADA_MAX_STEP = c.step(lambda call: _step_size(call, False), hyper="alpha")


_POWERS = (c.scalar("beta1_power"), c.scalar("beta2_power"))
_HYPER = (c.scalar("lr", sep=" : "), c.scalar("beta1"), c.scalar("beta2"),
          c.scalar("epsilon"))
_MV = (c.same_shape("m"), c.same_shape("v"))
_SPARSE_GRAD = (c.INDICES, c.GRAD, c.SPARSE_GRAD, c.IN_RANGE)

APPLY_ADAM = c.Spec(
    "adam", ("m", "v"),
    (*_POWERS, *_HYPER, _ADAM_STEP, *_MV, c.GRAD, c.GRAD_SHAPE,
     c.flag("use_nesterov")),
    sparse=False)

SPARSE_APPLY_ADAM = c.Spec(
    "adam", ("m", "v"),
    (*_MV, c.VAR_RANK, *_POWERS, *_HYPER, _ADAM_STEP, *_SPARSE_GRAD,
     c.flag("use_nesterov")),
    sparse=True)

APPLY_ADAM_WITH_AMSGRAD = c.Spec(
    "adam_with_amsgrad", ("m", "v", "vhat"),
    (*_POWERS, *_HYPER, _ADAM_STEP, *_MV, c.GRAD, c.GRAD_SHAPE,
     c.same_shape("vhat")),
    sparse=False)

# AdaMax reads no beta2_power; its learning rate comes after beta1_power.
APPLY_ADA_MAX = c.Spec(
    "ada_max", ("m", "v"),
    (_POWERS[0], *_HYPER, _ADA_MAX_STEP, *_MV, c.GRAD, c.GRAD_SHAPE),
    sparse=False)

SPARSE_APPLY_ADA_MAX = c.Spec(
    "ada_max", ("m", "v"),
    (*_MV, c.VAR_RANK, _POWERS[0], *_HYPER, _ADA_MAX_STEP, *_SPARSE_GRAD),
    sparse=True)


apply_adam = c.define(
    "apply_adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, "
    "grad, use_locking=False, use_nesterov=False)",
    APPLY_ADAM,
    r"""Adam, TensorFlow's ``ResourceApplyAdam``.

    The caller passes ``beta1_power = beta1**t`` and ``beta2_power = beta2**t``;
    bias correction goes into the step size:

    .. math::

        \alpha &= lr\,\sqrt{1 - \beta_2^t} / (1 - \beta_1^t) \\
        m &\leftarrow m + (g - m)(1 - \beta_1), \quad
        v \leftarrow v + (g^2 - v)(1 - \beta_2) \\
        var &\leftarrow var - \alpha\, m / (\sqrt{v} + \epsilon)

    With ``use_nesterov=True`` the numerator is
    ``g * (1 - beta1) + beta1 * m``.

    .. warning::
        Epsilon is added outside the square root of the *uncorrected* ``v``
        ("epsilon hat"), as in TensorFlow; the paper and PyTorch add it after
        bias-correcting ``v``.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v = np.ones(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_adam(
    ...     var, m, v, 0.9, 0.999, 0.001, 0.9, 0.999, 1e-7, [1.0, -1.0])
    >>> var.round(6)
    array([0.999, 1.001])
    """)


sparse_apply_adam = c.define(
    "sparse_apply_adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, "
    "epsilon, grad, indices, use_locking=False, use_nesterov=False)",
    SPARSE_APPLY_ADAM,
    """Lazy Adam on the rows ``indices`` (not a TensorFlow kernel).

    Each indexed row gets exactly :func:`apply_adam`'s update (same
    arithmetic, so indexing every row once equals the dense op bit for bit);
    rows not indexed keep their `m` and `v` and do not move.  This is TF
    Addons' ``LazyAdam`` (reference section 4.3) when duplicates are coalesced
    first (``coalesce_duplicates=True``); by default a repeated index gets one
    full update per occurrence, like TensorFlow's sparse kernels.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v = np.ones((3, 1)), np.zeros((3, 1)), np.zeros((3, 1))
    >>> training_ops.sparse_apply_adam(
    ...     var, m, v, 0.9, 0.999, 0.001, 0.9, 0.999, 1e-7, [[1.0]], [2])
    >>> var.ravel().round(6)
    array([1.   , 1.   , 0.999])
    """)


apply_adam_with_amsgrad = c.define(
    "apply_adam_with_amsgrad(var, m, v, vhat, beta1_power, beta2_power, lr, beta1, "
    "beta2, epsilon, grad, use_locking=False)",
    APPLY_ADAM_WITH_AMSGRAD,
    """AMSGrad, TensorFlow's ``ResourceApplyAdamWithAmsgrad``.

    As :func:`apply_adam`, then ``vhat = max(vhat, v)`` and
    ``var -= alpha * m / (sqrt(vhat) + epsilon)``.  Unlike TensorFlow, the
    shape of `vhat` is checked.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v, vhat = np.ones(1), np.zeros(1), np.zeros(1), np.ones(1)
    >>> training_ops.apply_adam_with_amsgrad(
    ...     var, m, v, vhat, 0.9, 0.999, 0.001, 0.9, 0.999, 1e-7, [1.0])
    >>> vhat
    array([1.])
    """)


apply_ada_max = c.define(
    "apply_ada_max(var, m, v, beta1_power, lr, beta1, beta2, epsilon, grad, "
    "use_locking=False)",
    APPLY_ADA_MAX,
    r"""AdaMax, TensorFlow's ``ResourceApplyAdaMax``.

    .. math::

        m &\leftarrow m + (g - m)(1 - \beta_1), \quad
        v \leftarrow \max(\beta_2 v, |g|) \\
        var &\leftarrow var - \frac{lr}{1 - \beta_1^t}\,\frac{m}{v + \epsilon}

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v = np.ones(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_ada_max(var, m, v, 0.9, 0.001, 0.9, 0.999, 1e-7, [2.0, -2.0])
    >>> var.round(6)
    array([0.999, 1.001])
    """)


sparse_apply_ada_max = c.define(
    "sparse_apply_ada_max(var, m, v, beta1_power, lr, beta1, beta2, epsilon, grad, "
    "indices, use_locking=False)",
    SPARSE_APPLY_ADA_MAX,
    """Lazy AdaMax on the rows ``indices`` (not a TensorFlow kernel).

    Each indexed row gets :func:`apply_ada_max`'s update; rows not indexed keep
    their `m` and `v` and do not move (what Keras' Adamax does for sparse
    gradients, after coalescing duplicates).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v = np.ones((2, 1)), np.zeros((2, 1)), np.zeros((2, 1))
    >>> training_ops.sparse_apply_ada_max(
    ...     var, m, v, 0.9, 0.001, 0.9, 0.999, 1e-7, [[2.0]], [1])
    >>> var.ravel().round(6)
    array([1.   , 0.999])
    """)


# Nadam: the step-dependent scalars come first, as Adam's beta powers do.
_NADAM_SCALARS = (c.scalar("u_t"), c.scalar("u_t_1"), c.scalar("u_product"),
                  _POWERS[1], *_HYPER)

APPLY_NADAM = c.Spec(
    "nadam", ("m", "v"),
    (*_NADAM_SCALARS, *_MV, c.GRAD, c.GRAD_SHAPE),
    sparse=False)

SPARSE_APPLY_NADAM = c.Spec(
    "nadam", ("m", "v"),
    (*_MV, c.VAR_RANK, *_NADAM_SCALARS, *_SPARSE_GRAD),
    sparse=True)


apply_nadam = c.define(
    "apply_nadam(var, m, v, u_t, u_t_1, u_product, beta2_power, lr, beta1, beta2, "
    "epsilon, grad, use_locking=False)",
    APPLY_NADAM,
    r"""Nadam, Keras 3's ``Nadam.update_step`` (TensorFlow has no raw op).

    The caller passes the step-dependent scalars of step t (1 on the first
    step), computed in var's dtype as Keras does:

    * ``u_t = beta1 * (1 - 0.5 * 0.96 ** t)`` and
      ``u_t_1 = beta1 * (1 - 0.5 * 0.96 ** (t + 1))``, the momentum schedule;
    * ``u_product = u_1 * u_2 * ... * u_t``, the running product that Keras
      keeps as optimizer state (``u_product`` of
      :class:`sparsegrad.optimizers.Nadam`), already multiplied by ``u_t``;
    * ``beta2_power = beta2 ** t``.

    Then, per element, in Keras's operation order:

    .. math::

        m &\leftarrow m + (g - m)(1 - \beta_1), \quad
        v \leftarrow v + (g^2 - v)(1 - \beta_2) \\
        \hat m &= \frac{u_{t+1}\, m}{1 - u_{prod}\, u_{t+1}}
                 + \frac{(1 - u_t)\, g}{1 - u_{prod}}, \quad
        \hat v = \frac{v}{1 - \beta_2^t} \\
        var &\leftarrow var - \frac{\hat m\, lr}{\sqrt{\hat v} + \epsilon}

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v = np.ones(2), np.zeros(2), np.zeros(2)
    >>> u_1, u_2 = 0.9 * (1 - 0.5 * 0.96), 0.9 * (1 - 0.5 * 0.96 ** 2)
    >>> training_ops.apply_nadam(
    ...     var, m, v, u_1, u_2, u_1, 0.999, 0.001, 0.9, 0.999, 1e-7, [1.0, -1.0])
    >>> var.round(6)
    array([0.998937, 1.001063])
    """)


sparse_apply_nadam = c.define(
    "sparse_apply_nadam(var, m, v, u_t, u_t_1, u_product, beta2_power, lr, beta1, "
    "beta2, epsilon, grad, indices, use_locking=False)",
    SPARSE_APPLY_NADAM,
    """Lazy Nadam on the rows ``indices`` (not a TensorFlow or Keras kernel).

    Each indexed row gets exactly :func:`apply_nadam`'s update (same
    arithmetic, so indexing every row once equals the dense op bit for bit);
    rows not indexed keep their `m` and `v` and do not move.  A repeated index
    gets one full update per occurrence, in order, unless
    ``coalesce_duplicates=True`` sums its rows first.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v = np.ones((3, 1)), np.zeros((3, 1)), np.zeros((3, 1))
    >>> u_1, u_2 = 0.9 * (1 - 0.5 * 0.96), 0.9 * (1 - 0.5 * 0.96 ** 2)
    >>> training_ops.sparse_apply_nadam(
    ...     var, m, v, u_1, u_2, u_1, 0.999, 0.001, 0.9, 0.999, 1e-7, [[1.0]], [2])
    >>> var.ravel().round(6)
    array([1.      , 1.      , 0.998937])
    """)


# Lamb: Adam's argument pattern; its kernel takes the beta powers themselves.
_LAMB_PARAMETERS = {
    f"beta{i}": f"""\
beta{i} : float
    Decay rate of the {which} moment. A scalar; ``1 - beta{i}`` is computed in
    float64 and rounded once to var's dtype."""
    for i, which in ((1, "first"), (2, "second"))}
# beta1 and beta2 as given: the kernel rounds 1 - beta once, as Keras does.
_LAMB_HYPER = (c.scalar("lr", sep=" : "), c.given_scalar("beta1"),
               c.given_scalar("beta2"), c.scalar("epsilon"))

APPLY_LAMB = c.Spec(
    "lamb", ("m", "v"),
    (*_POWERS, *_LAMB_HYPER, *_MV, c.GRAD, c.GRAD_SHAPE),
    sparse=False)

SPARSE_APPLY_LAMB = c.Spec(
    "lamb", ("m", "v"),
    (*_MV, c.VAR_RANK, *_POWERS, *_LAMB_HYPER, *_SPARSE_GRAD),
    sparse=True)


apply_lamb = c.define(
    "apply_lamb(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, "
    "grad, use_locking=False)",
    APPLY_LAMB,
    r"""Lamb, Keras 3's ``Lamb.update_step`` (TensorFlow has no raw op).

    The caller passes ``beta1_power = beta1**t`` and ``beta2_power =
    beta2**t`` (t is 1 on the first step), as to :func:`apply_adam`.  In
    Keras's operation order:

    .. math::

        m &\leftarrow m + (g - m)(1 - \beta_1), \quad
        v \leftarrow v + (g^2 - v)(1 - \beta_2) \\
        u &= \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon},
        \quad r = \frac{\lVert var \rVert}{\lVert u \rVert} \\
        var &\leftarrow var - (r\, lr)\, u

    where the norms are over the whole variable (its values before the
    step) and ``r = 1`` unless both norms are > 0: the trust ratio scales
    the step to the variable's size.  ``1 - beta1`` and ``1 - beta2`` are
    computed in float64 and rounded once to var's dtype (Keras subtracts
    the Python floats); ``1 - beta_power`` in var's dtype.  Each norm's sum
    of squares is accumulated in float64 in a fixed order (the same bits for
    any thread count and on the GPU) and rounded once to var's dtype;
    Keras's float32 sums differ from it in the last bits.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v = np.array([3.0, 4.0]), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_lamb(
    ...     var, m, v, 0.9, 0.999, 0.001, 0.9, 0.999, 1e-7, [1.0, -1.0])
    >>> var.round(6)
    array([2.996464, 4.003536])
    """,
    params=_LAMB_PARAMETERS)


sparse_apply_lamb = c.define(
    "sparse_apply_lamb(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, "
    "epsilon, grad, indices, use_locking=False)",
    SPARSE_APPLY_LAMB,
    """Lazy Lamb on the rows ``indices``, with a trust ratio per row (not a
    TensorFlow or Keras kernel).

    Each indexed row gets :func:`apply_lamb`'s update with the norms taken
    over that row alone (its weights before the step, and its direction),
    so the cost follows the touched rows; a whole-variable norm would cost
    the table's size on every step.  With a single row this is
    :func:`apply_lamb` (a rank-1 `var` has rows of one element).  Rows not
    indexed keep their `m` and `v` and do not move.  A repeated index gets
    one full update per occurrence, in order, unless
    ``coalesce_duplicates=True`` sums its rows first.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var = np.array([[3.0, 4.0], [3.0, 4.0], [0.3, 0.4]])
    >>> m, v = np.zeros((3, 2)), np.zeros((3, 2))
    >>> training_ops.sparse_apply_lamb(
    ...     var, m, v, 0.9, 0.999, 0.001, 0.9, 0.999, 1e-7,
    ...     [[1.0, -1.0], [1.0, -1.0]], [0, 2])
    >>> var.round(6)
    array([[2.996464, 4.003536],
           [3.      , 4.      ],
           [0.299646, 0.400354]])
    """,
    params=_LAMB_PARAMETERS)
