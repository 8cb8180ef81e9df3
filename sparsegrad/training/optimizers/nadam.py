"""Nadam (Keras 3's)."""

import math
from typing import NamedTuple

import numpy as np

from ...errors import InvalidArgumentError
from ...framework.variable import Variable
from ..training_ops import adam as adam_ops
from .base import Optimizer
from .checks import flag, real

__all__ = ["Nadam", "NadamState", "momentum_coefficient"]

#: The decay of Nadam's momentum schedule (Keras's constant).
_SCHEDULE_DECAY = 0.96

#: A moment's decay rate.
_BETA = real(0.0, 1.0, high_open=True)


def _power(base, step, dtype):
    """``base ** step`` in `dtype`, `base` rounded to `dtype` first: the
    power is taken in float64 by the C library and rounded once (the scalar
    ``pow`` Keras takes, with the same bits on every CPU; see
    :func:`sparsegrad.optimizers.adam.beta_power`)."""
    t = np.dtype(dtype).type
    return t(math.pow(float(t(base)), step))


def momentum_coefficient(beta_1, step, dtype):
    """Nadam's momentum coefficient ``beta_1 * (1 - 0.5 * 0.96 ** step)``.

    Computed in `dtype` with one rounding per operation, as Keras 3 computes
    ``u_t`` (``step = t``) and ``u_t_1`` (``step = t + 1``): the values that
    ``training_ops.apply_nadam`` takes.

    Parameters
    ----------
    beta_1 : float
        Decay rate of the first moment.
    step : int
        The step number, 1 on the first step.
    dtype : dtype
        float32 or float64, the variable's.

    Returns
    -------
    numpy scalar of `dtype`

    Examples
    --------
    >>> from sparsegrad.training.optimizers.nadam import momentum_coefficient
    >>> float(momentum_coefficient(0.9, 1, np.float64))
    0.468
    """
    t = np.dtype(dtype).type
    half_power = t(0.5) * _power(_SCHEDULE_DECAY, step, dtype)
    return t(beta_1) * (t(1) - half_power)


class NadamState(NamedTuple):
    """Slots of one variable under :class:`Nadam`."""

    #: [var.shape, var.dtype] First moment (Keras's "momentum").
    m: Variable
    #: [var.shape, var.dtype] Second moment (Keras's "velocity").
    v: Variable


class Nadam(Optimizer):
    r"""Nadam: Adam with Nesterov momentum, as Keras 3 computes it.

    With :math:`t` the step number (1 on the first step) and the momentum
    schedule :math:`u_t = \beta_1 (1 - 0.5 \cdot 0.96^t)`, the optimizer keeps
    the product :math:`u_{prod} = u_1 \cdots u_t` (:attr:`u_product`, updated
    once per step) and updates each element as

    .. math::

        m &\leftarrow m + (g - m)(1-\beta_1), \quad
        v \leftarrow v + (g^2 - v)(1-\beta_2) \\
        \hat m &= \frac{u_{t+1} m}{1 - u_{prod} u_{t+1}}
                 + \frac{(1 - u_t) g}{1 - u_{prod}}, \quad
        \hat v = \frac{v}{1 - \beta_2^t}, \quad
        \theta \leftarrow \theta - \frac{\hat m\, \eta}{\sqrt{\hat v} + \epsilon}

    (``training_ops.apply_nadam``), in Keras's operation order and float32
    roundings.  :attr:`u_product` is kept in float32, Keras's default dtype
    (Keras keeps it in the dtype of the first variable), and cast to each
    variable's dtype; :meth:`save_state` saves it.

    Sparse gradients (repeated indices are summed first):

    * ``lazy=False`` (default) is Keras's semantics: the result is that of
      the dense gradient with zeros on the rows not in it (O(table size) per
      step).
    * ``lazy=True`` touches only the rows in the gradient
      (``training_ops.sparse_apply_nadam``): other rows keep their moments
      and do not move; the schedule and the bias correction use the global
      step.  Cost O(nnz * row width).  Dense gradients are unaffected.

    Examples
    --------
    >>> w = sg.Variable([1.0, -1.0])
    >>> opt = sg.optimizers.Nadam(learning_rate=0.1)
    >>> _ = opt.apply_gradients([(np.array([0.5, -2.0]), w)])
    >>> np.round(w.numpy(), 4)
    array([ 0.8937, -0.8937])
    >>> round(opt.u_product, 4)
    0.468
    """

    State = NadamState
    _slot_aliases = {"momentum": "m", "momentums": "m", "velocity": "v",
                     "velocities": "v"}
    _hyperparameters = {
        "beta_1": _BETA,
        "beta_2": _BETA,
        "epsilon": real(0.0, note='The "epsilon hat" of the paper, added outside '
                                  "the square root."),
        "lazy": flag("Update only the rows of a sparse gradient."),
    }

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Nadam", clipnorm=None, clipvalue=None, global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0,
                 lazy=False):
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
                         beta_1=beta_1, beta_2=beta_2, epsilon=epsilon, lazy=lazy)
        self._u_product = np.float32(1.0)

    @property
    def u_product(self):
        """The product of the momentum coefficients of the steps taken so far
        (1.0 before the first step), a Python float of a float32 value."""
        return float(self._u_product)

    def _next_u_product(self):
        """:attr:`u_product` after the coming step, as Keras multiplies it:
        ``(u_product * beta_1) * (1 - 0.5 * 0.96 ** t)`` in float32."""
        f = np.float32
        step = self.iterations_count + 1
        factor = f(1) - f(0.5) * _power(_SCHEDULE_DECAY, step, np.float32)
        return (self._u_product * f(self.beta_1)) * factor

    def _finish_step(self):
        self._u_product = self._next_u_product()

    def _state_arrays(self):
        return {"u_product": np.asarray(self._u_product, np.float32)}

    def _set_state_arrays(self, values, path):
        value = values["u_product"][()]
        if not 0 <= value <= 1:
            raise InvalidArgumentError(
                f"load_state: the state in {path!r} is not an optimizer state: "
                f"its u_product is {float(value)!r}; expected a value in [0, 1]"
            )
        self._u_product = np.float32(value)

    def _hypers(self, lr, dtype):
        t = np.dtype(dtype).type
        step = self.iterations_count + 1
        return {"u_t": momentum_coefficient(self.beta_1, step, dtype),
                "u_t_1": momentum_coefficient(self.beta_1, step + 1, dtype),
                "u_product": t(self._next_u_product()),
                "beta2_power": _power(self.beta_2, step, dtype),
                "lr": lr, "beta1": self.beta_1, "beta2": self.beta_2,
                "epsilon": self.epsilon}

    def _prepare_dense(self, grad, var, state, lr, stage):
        return [self._op(stage, adam_ops.APPLY_NADAM, var, state, grad,
                         **self._hypers(lr, self._math_dtype(var)))]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        if not self.lazy:   # Keras's semantics: every row's moments decay
            return self._prepare_densified(values, indices, var, state, lr, stage)
        return [self._op(stage, adam_ops.SPARSE_APPLY_NADAM, var, state, values,
                         indices, **self._hypers(lr, self._math_dtype(var)))]
