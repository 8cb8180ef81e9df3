"""AddSign and PowerSign.

The public functions check their arguments through the specs below (see
:mod:`.core`); the arithmetic is in ``sparsegrad._kernels.training``.
"""

from .core import (
    GRAD,
    GRAD_SHAPE,
    Spec,
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
    ("lr", "alpha", "sign_decay", "beta"), sparse=False)

APPLY_POWER_SIGN = Spec(
    "power_sign", ("m",),
    (scalar("lr"), scalar("logbase"), scalar("sign_decay"), scalar("beta"),
     same_shape("m"), GRAD, GRAD_SHAPE),
    ("lr", "logbase", "sign_decay", "beta"), sparse=False)


def apply_add_sign(var, m, lr, alpha, sign_decay, beta, grad, use_locking=False):
    r"""AddSign, TensorFlow's ``ResourceApplyAddSign``.

    .. math::

        m &\leftarrow \beta m + (1 - \beta) g \\
        var &\leftarrow var - lr\,(\alpha + d\,\operatorname{sign}(g)
              \operatorname{sign}(m))\,g

    with ``d = sign_decay``.  A non-scalar `sign_decay` is an error (TensorFlow
    checks `alpha` twice instead).

    Parameters
    ----------
    var : ndarray or Variable, float32 or float64
        Updated in place.
    m : ndarray or Variable
        First-moment slot of var's shape and dtype. Updated in place.
    lr : float
        Learning rate. A scalar, rounded to var's dtype.
    alpha : float
        Weight of the sign agreement term. A scalar, rounded to var's dtype.
    sign_decay : float
        Decay of the sign term. A scalar, rounded to var's dtype.
    beta : float
        Decay rate of `m`. A scalar, rounded to var's dtype.
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
    >>> var, m = np.ones(2), np.zeros(2)
    >>> training_ops.apply_add_sign(var, m, 0.1, 1.0, 1.0, 0.9, [1.0, -1.0])
    >>> var
    array([0.8, 1.2])
    """
    APPLY_ADD_SIGN.call(locals())


def apply_power_sign(var, m, lr, logbase, sign_decay, beta, grad, use_locking=False):
    r"""PowerSign, TensorFlow's ``ResourceApplyPowerSign``.

    .. math::

        m &\leftarrow \beta m + (1 - \beta) g \\
        var &\leftarrow var - lr\,\exp(\log b \cdot d\,\operatorname{sign}(g)
              \operatorname{sign}(m))\,g

    with ``log b = logbase`` and ``d = sign_decay``.

    Parameters
    ----------
    var : ndarray or Variable, float32 or float64
        Updated in place.
    m : ndarray or Variable
        First-moment slot of var's shape and dtype. Updated in place.
    lr : float
        Learning rate. A scalar, rounded to var's dtype.
    logbase : float
        Base of the logarithm of the sign term. A scalar, rounded to var's dtype.
    sign_decay : float
        Decay of the sign term. A scalar, rounded to var's dtype.
    beta : float
        Decay rate of `m`. A scalar, rounded to var's dtype.
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
    >>> var, m = np.ones(2), np.zeros(2)
    >>> training_ops.apply_power_sign(var, m, 0.1, 0.0, 1.0, 0.9, [1.0, -1.0])
    >>> var
    array([0.9, 1.1])
    """
    APPLY_POWER_SIGN.call(locals())
