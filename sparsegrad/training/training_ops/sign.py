"""AddSign and PowerSign."""

from . import core as c

__all__ = [
    "apply_add_sign",
    "apply_power_sign",
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
