"""AddSign and PowerSign.

The public functions check their arguments through the specs below (see
:mod:`.core`); the arithmetic is in ``sparsegrad._kernels.training``.
"""

from .core import (
    GRAD,
    GRAD_SHAPE,
    Spec,
    define,
    same_shape,
    scalar,
)

__all__ = [
    "apply_add_sign",
    "apply_power_sign",
]


APPLY_ADD_SIGN = Spec(
    "add_sign", ("m",),
    (scalar("lr"), scalar("alpha"), scalar("sign_decay"), scalar("beta"),
     same_shape("m"), GRAD, GRAD_SHAPE),
    sparse=False)

APPLY_POWER_SIGN = Spec(
    "power_sign", ("m",),
    (scalar("lr"), scalar("logbase"), scalar("sign_decay"), scalar("beta"),
     same_shape("m"), GRAD, GRAD_SHAPE),
    sparse=False)


apply_add_sign = define(
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


apply_power_sign = define(
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
