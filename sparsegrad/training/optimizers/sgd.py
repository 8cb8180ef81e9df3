"""Stochastic gradient descent, with optional (Nesterov) momentum."""

from typing import NamedTuple, Optional

from ...framework.variable import Variable
from ..training_ops import gradient_descent as gd_ops
from ..training_ops import momentum as momentum_ops
from .base import Optimizer
from .checks import flag, real

__all__ = ["SGD", "SGDState"]


class SGDState(NamedTuple):
    """Slots of one variable under :class:`SGD`."""

    #: [var.shape, var.dtype] The velocity (learning rate folded in); None
    #: without momentum.
    momentum: Optional[Variable]


class SGD(Optimizer):
    r"""Gradient descent with optional momentum (Keras' formulation).

    Without momentum, ``var -= lr * g`` (``training_ops.apply_gradient_descent``).
    With momentum, the velocity holds the learning rate already
    (``training_ops.apply_keras_momentum``):

    .. math::

        m \leftarrow \mu m - \eta g, \qquad
        \theta \leftarrow \theta + m
        \quad\text{or, Nesterov,}\quad \theta \leftarrow \theta + (\mu m - \eta g)

    Keras 3 and the raw kernels use the same formulas and the same operation
    order.  A sparse gradient updates only its rows: with momentum, rows not
    in the gradient keep their velocity and do not move (TensorFlow's lazy
    ``SparseApplyKerasMomentum``; Keras 3 would keep moving them).

    Examples
    --------
    >>> w = sg.Variable([1.0, 2.0])
    >>> opt = sg.optimizers.SGD(learning_rate=0.5, momentum=0.5)
    >>> _ = opt.apply_gradients([(np.array([1.0, -1.0]), w)])
    >>> _ = opt.apply_gradients([(np.array([1.0, -1.0]), w)])
    >>> w.numpy(), opt.get_slot(w, "momentum").numpy()
    (array([-0.25,  3.25]), array([-0.75,  0.75]))
    """

    State = SGDState
    _hyperparameters = {"momentum": real(0.0, 1.0), "nesterov": flag()}

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD",
                 clipnorm=None, clipvalue=None, global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0):
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
                         momentum=momentum, nesterov=nesterov)

    def _create_slots(self, var):
        if self.momentum == 0:
            return SGDState(momentum=None)
        return SGDState(momentum=self._slot_variable(var, "momentum"))

    def _prepare_dense(self, grad, var, state, lr, stage):
        if state.momentum is None:
            return [self._op(stage, gd_ops.APPLY_GRADIENT_DESCENT, var, (), grad,
                             alpha=lr)]
        return [self._op(stage, momentum_ops.APPLY_KERAS_MOMENTUM, var, state, grad,
                         lr=lr, momentum=self.momentum, use_nesterov=self.nesterov)]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        if state.momentum is None:
            return [self._op(stage, gd_ops.SPARSE_APPLY_GRADIENT_DESCENT, var, (),
                             values, indices, alpha=lr)]
        return [self._op(stage, momentum_ops.SPARSE_APPLY_KERAS_MOMENTUM, var, state,
                         values, indices, lr=lr, momentum=self.momentum,
                         use_nesterov=self.nesterov)]
