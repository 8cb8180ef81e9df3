"""AddSign, PowerSign and Lion: the sign-based updates."""

from . import core as c

__all__ = [
    "apply_add_sign",
    "apply_power_sign",
    "apply_lion",
    "sparse_apply_lion",
]


def _spec(kernel, name):
    """The spec of a sign kernel whose second hyper-parameter is `name`."""
    return c.Spec(
        kernel, ("m",),
        (c.scalar("lr"), c.scalar(name), c.scalar("sign_decay"), c.scalar("beta"),
         c.same_shape("m"), c.GRAD, c.GRAD_SHAPE),
        sparse=False)


APPLY_ADD_SIGN = _spec("add_sign", "alpha")
APPLY_POWER_SIGN = _spec("power_sign", "logbase")


apply_add_sign = c.define(
    "apply_add_sign(var, m, lr, alpha, sign_decay, beta, grad, use_locking=False)",
    APPLY_ADD_SIGN,
    r"""AddSign, TensorFlow's ``ResourceApplyAddSign``.

    .. math::

        m &\leftarrow \beta m + (1 - \beta) g \\
        var &\leftarrow var - lr\,(\alpha + d\,\operatorname{sign}(g)
              \operatorname{sign}(m))\,g

    with ``d = sign_decay``.  A non-scalar `sign_decay` is an error (TensorFlow
    checks `alpha` twice instead).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m = np.ones(2), np.zeros(2)
    >>> training_ops.apply_add_sign(var, m, 0.1, 1.0, 1.0, 0.9, [1.0, -1.0])
    >>> var
    array([0.8, 1.2])
    """,
    params={"alpha": """\
alpha : float
    Weight of the sign agreement term. A scalar, rounded to var's dtype."""})


apply_power_sign = c.define(
    "apply_power_sign(var, m, lr, logbase, sign_decay, beta, grad, use_locking=False)",
    APPLY_POWER_SIGN,
    r"""PowerSign, TensorFlow's ``ResourceApplyPowerSign``.

    .. math::

        m &\leftarrow \beta m + (1 - \beta) g \\
        var &\leftarrow var - lr\,\exp(\log b \cdot d\,\operatorname{sign}(g)
              \operatorname{sign}(m))\,g

    with ``log b = logbase`` and ``d = sign_decay``.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m = np.ones(2), np.zeros(2)
    >>> training_ops.apply_power_sign(var, m, 0.1, 0.0, 1.0, 0.9, [1.0, -1.0])
    >>> var
    array([0.9, 1.1])
    """)


# Lion (Keras 3; TensorFlow has no kernel): the sign of an interpolation of m
# and g, with TensorFlow's argument pattern and the checks of its sparse ops.
_LION_BETAS = (c.scalar("beta1"), c.scalar("beta2"))

APPLY_LION = c.Spec(
    "lion", ("m",),
    (c.scalar("lr"), *_LION_BETAS, c.same_shape("m"), c.GRAD, c.GRAD_SHAPE),
    sparse=False)

SPARSE_APPLY_LION = c.Spec(
    "lion", ("m",),
    (c.same_shape("m"), c.VAR_RANK, c.scalar("lr", sep=" : "), *_LION_BETAS,
     c.INDICES, c.GRAD, c.SPARSE_GRAD, c.IN_RANGE),
    sparse=True)

_LION_PARAMS = {
    "m": """\
m : ndarray or Variable
    Momentum slot of var's shape and dtype. Updated in place.""",
    "beta1": """\
beta1 : float
    Weight of `m` in the interpolation whose sign is the step. A scalar,
    rounded to var's dtype.""",
    "beta2": """\
beta2 : float
    Decay rate of `m`. A scalar, rounded to var's dtype.""",
}


apply_lion = c.define(
    "apply_lion(var, m, lr, beta1, beta2, grad, use_locking=False)",
    APPLY_LION,
    r"""Lion (Chen et al., 2023), Keras 3's ``Lion`` update (not a TensorFlow kernel).

    .. math::

        var &\leftarrow var - lr\,\operatorname{sign}(m \beta_1 + g (1 - \beta_1)) \\
        m &\leftarrow m \beta_2 + g (1 - \beta_2)

    in Keras 3's operation order, with ``1 - beta1`` and ``1 - beta2``
    rounded to var's dtype; ``sign(0) = 0`` and a NaN stays NaN.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m = np.ones(3), np.zeros(3)
    >>> training_ops.apply_lion(var, m, 0.1, 0.9, 0.99, [2.0, -0.5, 0.0])
    >>> var
    array([0.9, 1.1, 1. ])
    >>> m.round(3)
    array([ 0.02 , -0.005,  0.   ])
    """,
    params=_LION_PARAMS)


sparse_apply_lion = c.define(
    "sparse_apply_lion(var, m, lr, beta1, beta2, grad, indices, use_locking=False)",
    SPARSE_APPLY_LION,
    """Lazy Lion on the rows ``indices`` (not a TensorFlow kernel).

    Each indexed row gets exactly :func:`apply_lion`'s update (same
    arithmetic, so indexing every row once equals the dense op bit for bit);
    rows not indexed keep their `m` and do not move.  By default a repeated
    index gets one full update per occurrence, in order, like TensorFlow's
    sparse kernels; ``coalesce_duplicates=True`` sums its rows first.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m = np.ones((3, 1)), np.zeros((3, 1))
    >>> training_ops.sparse_apply_lion(var, m, 0.1, 0.9, 0.99, [[-1.0]], [2])
    >>> var.ravel()
    array([1. , 1. , 1.1])
    """,
    params=_LION_PARAMS)
