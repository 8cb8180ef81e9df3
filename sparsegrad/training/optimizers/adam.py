"""Adam, AdamW and Adamax."""

import math
from typing import NamedTuple, Optional

import numpy as np

from ...errors import InvalidArgumentError
from ...framework import sparse_rows
from ...framework.variable import Variable
from ..training_ops import adam as adam_ops
from ..training_ops import mixed
from .base import Optimizer
from .checks import flag, real

__all__ = ["Adam", "AdamState", "AdamW", "Adamax", "AdamaxState"]

#: A moment's decay rate.
_BETA = real(0.0, 1.0, high_open=True)


class AdamState(NamedTuple):
    """Slots of one variable under :class:`Adam` and :class:`AdamW`."""

    #: [var.shape, var.dtype] First moment (decaying mean of gradients).
    m: Variable
    #: [var.shape, var.dtype] Second moment (decaying mean of squared gradients).
    v: Variable
    #: [var.shape, var.dtype] Running maximum of ``v``; None unless amsgrad.
    vhat: Optional[Variable]


def beta_power(beta, step, dtype):
    """``beta ** step`` for a variable of `dtype`, correctly rounded.

    `beta` is first rounded to `dtype` (Keras casts it to the variable's
    dtype), the power is taken in float64 by the C library and the training
    op rounds it once more to `dtype`: what TensorFlow's scalar ``pow``
    gives, and the same bits on every CPU.  (NumPy's float32 ``power`` takes
    CPU-specific SIMD code that is not correctly rounded.)
    """
    return math.pow(float(np.dtype(dtype).type(beta)), step)


def moment_hyperparameters(opt, lr, dtype):
    """The raw-op arguments of Adam-like optimizer `opt`'s coming step, for a
    variable of `dtype`: the beta powers of the step (:func:`beta_power`),
    the learning rate `lr`, the betas and epsilon (Adam's and Lamb's)."""
    step = opt.iterations_count + 1
    return {"beta1_power": beta_power(opt.beta_1, step, dtype),
            "beta2_power": beta_power(opt.beta_2, step, dtype),
            "lr": lr, "beta1": opt.beta_1, "beta2": opt.beta_2,
            "epsilon": opt.epsilon}


class Adam(Optimizer):
    r"""Adam, with optional AMSGrad and a lazy mode for sparse gradients.

    With :math:`t` the step number (1 on the first step),

    .. math::

        \alpha = \eta \sqrt{1-\beta_2^t} / (1-\beta_1^t), \quad
        m \leftarrow m + (g - m)(1-\beta_1), \quad
        v \leftarrow v + (g^2 - v)(1-\beta_2), \quad
        \theta \leftarrow \theta - \frac{\alpha\, m}{\sqrt{v} + \hat\epsilon}

    (``training_ops.apply_adam``; with ``amsgrad=True``,
    ``apply_adam_with_amsgrad``, which divides by the running maximum of
    ``v``).  Keras 3 computes the same formula in the same order.

    Sparse gradients (repeated indices are summed first):

    * ``lazy=False`` (default) is TensorFlow's semantics: the result is that
      of the dense gradient with zeros on the rows not in it, so every row's
      moments decay and every row moves.  This costs O(table size) per step:
      the summed gradient is scattered into a dense buffer.
    * ``lazy=True`` touches only the rows in the gradient
      (``training_ops.sparse_apply_adam``; TF-Addons' LazyAdam): other rows
      keep their moments and do not move, and the bias correction uses the
      global step.  Cost O(nnz * row width).  Dense gradients are unaffected.

    Examples
    --------
    >>> w = sg.Variable([1.0, -1.0])
    >>> opt = sg.optimizers.Adam(learning_rate=0.1)
    >>> _ = opt.apply_gradients([(np.array([0.5, -2.0]), w)])
    >>> np.round(w.numpy(), 4)
    array([ 0.9, -0.9])
    >>> opt.iterations.numpy()
    array(1)
    """

    State = AdamState
    _slot_aliases = {"momentum": "m", "velocity": "v", "velocity_hat": "vhat"}
    _hyperparameters = {
        "beta_1": _BETA,
        "beta_2": _BETA,
        "epsilon": real(0.0, note='The "epsilon hat" of the paper, added outside '
                                  "the square root."),
        "amsgrad": flag(),
        "lazy": flag("Cannot be combined with `amsgrad` (as TF-Addons' LazyAdam)."),
    }

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, lazy=False, name="Adam", clipnorm=None,
                 clipvalue=None, global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0):
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
                         beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                         amsgrad=amsgrad, lazy=lazy)
        if self.amsgrad and self.lazy:
            raise InvalidArgumentError(
                "amsgrad=True cannot be combined with lazy=True: the running "
                "maximum of v is not defined for rows a step does not touch"
            )

    def _create_slots(self, var):
        return AdamState(
            m=self._slot_variable(var, "m"),
            v=self._slot_variable(var, "v"),
            vhat=self._slot_variable(var, "vhat") if self.amsgrad else None,
        )

    def _hypers(self, lr, dtype):
        return {**moment_hyperparameters(self, lr, dtype), "use_nesterov": False}

    def _prepare_dense(self, grad, var, state, lr, stage):
        return self._adam_dense(grad, var, state, lr, stage)

    def _adam_dense(self, grad, var, state, lr, stage):
        hypers = self._hypers(lr, self._math_dtype(var))
        if self.amsgrad:
            return [self._op(stage, adam_ops.APPLY_ADAM_WITH_AMSGRAD, var, state, grad,
                             **hypers)]
        return [self._op(stage, adam_ops.APPLY_ADAM, var, (state.m, state.v), grad,
                         **hypers)]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        if not self.lazy:   # TensorFlow's semantics: every row's moments decay
            return self._prepare_densified(values, indices, var, state, lr, stage,
                                           self._adam_dense)
        return [self._op(stage, adam_ops.SPARSE_APPLY_ADAM, var, (state.m, state.v),
                         values, indices, **self._hypers(lr, self._math_dtype(var)))]


class AdamW(Adam):
    r"""Adam with decoupled weight decay (Loshchilov and Hutter).

    Before the Adam update, each variable with a gradient decays:
    ``var <- var - (var * weight_decay) * lr`` (Keras 3's order).  On a
    sparse gradient **only the rows in the gradient decay** (each distinct
    row once), in both lazy and non-lazy mode; the Adam part then follows
    `lazy` as in :class:`Adam`.

    Examples
    --------
    >>> w = sg.Variable([2.0])
    >>> opt = sg.optimizers.AdamW(learning_rate=0.5, weight_decay=0.5)
    >>> _ = opt.apply_gradients([(np.zeros(1), w)])
    >>> w.numpy()
    array([1.5])
    """

    _hyperparameters = {"weight_decay": real(0.0), **Adam._hyperparameters}

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9,
                 beta_2=0.999, epsilon=1e-7, amsgrad=False, lazy=False, name="AdamW",
                 clipnorm=None, clipvalue=None, global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, lazy, name,
                         clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed)
        self._store_hyperparameters({"weight_decay": weight_decay})

    def _prepare_dense(self, grad, var, state, lr, stage):
        adam = super()._prepare_dense(grad, var, state, lr, stage)
        return [lambda: self._decay_dense(var, lr, stage), *adam]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        adam = super()._prepare_sparse(values, indices, var, state, lr, stage)
        return [lambda: self._decay_rows(var, indices, lr, stage), *adam]

    def _decay_half(self, var, rows, lr, stage):
        """The decay of a half variable's rows (None: all): in float32,
        each new value rounded once as the step's update rounds (a stream of
        its own)."""
        wd, lr = np.float32(self.weight_decay), np.float32(lr)
        mixed.update_rows(var._value, rows, lambda f: f - (f * wd) * lr,
                          stage.rounding, salt=1)
        var._bump()

    def _decay_dense(self, var, lr, stage):
        if self.weight_decay == 0:
            return
        if stage.rounding is not None:
            self._decay_half(var, None, lr, stage)
            return
        buf = var._value
        decay = buf * self._hyper(self.weight_decay, var.dtype)
        decay *= self._hyper(lr, var.dtype)
        buf -= decay
        var._bump()

    def _decay_rows(self, var, indices, lr, stage):
        if self.weight_decay == 0 or indices.shape[0] == 0:
            return
        # each distinct row once: the stage's grouping when it has one
        grouped = stage.groups_of(indices)
        if grouped is None:
            grouped = sparse_rows.group_rows(indices, var.shape[0] - 1)
        rows = grouped[0]
        if stage.rounding is not None:
            self._decay_half(var, rows, lr, stage)
            return
        buf = var._value
        old = buf[rows]
        decay = old * self._hyper(self.weight_decay, var.dtype)
        decay *= self._hyper(lr, var.dtype)
        buf[rows] = old - decay
        var._bump()


class AdamaxState(NamedTuple):
    """Slots of one variable under :class:`Adamax`."""

    #: [var.shape, var.dtype] First moment.
    m: Variable
    #: [var.shape, var.dtype] Exponentially weighted infinity norm.
    v: Variable


class Adamax(Optimizer):
    r"""Adamax: Adam with the infinity norm.

    .. math::

        m \leftarrow m + (g - m)(1-\beta_1), \quad
        v \leftarrow \max(\beta_2 v, |g|), \quad
        \theta \leftarrow \theta - \frac{\eta}{1-\beta_1^t}\cdot\frac{m}{v + \epsilon}

    (``training_ops.apply_ada_max``).  Keras 3 computes the same formula as
    ``(eta * m) / ((1 - beta_1^t) * (v + eps))``, a different operation order,
    so results agree to rounding.  A sparse gradient updates only its rows
    (lazy, as Keras 2), after summing repeated indices; the bias correction
    uses the global step.

    Examples
    --------
    >>> w = sg.Variable([1.0])
    >>> opt = sg.optimizers.Adamax(learning_rate=0.5, epsilon=0.0)
    >>> _ = opt.apply_gradients([(np.array([4.0]), w)])
    >>> np.round(w.numpy(), 6)
    array([0.5])
    """

    State = AdamaxState
    _slot_aliases = {"momentum": "m", "norm": "v", "u": "v"}
    _hyperparameters = {"beta_1": _BETA, "beta_2": real(0.0, 1.0),
                        "epsilon": real(0.0)}

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Adamax", clipnorm=None, clipvalue=None, global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0):
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
                         beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)

    def _hypers(self, lr, dtype):
        return {"beta1_power": beta_power(self.beta_1, self.iterations_count + 1,
                                          dtype),
                "lr": lr, "beta1": self.beta_1, "beta2": self.beta_2,
                "epsilon": self.epsilon}

    def _prepare_dense(self, grad, var, state, lr, stage):
        return [self._op(stage, adam_ops.APPLY_ADA_MAX, var, state, grad,
                         **self._hypers(lr, self._math_dtype(var)))]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        return [self._op(stage, adam_ops.SPARSE_APPLY_ADA_MAX, var, state, values,
                         indices, **self._hypers(lr, self._math_dtype(var)))]
