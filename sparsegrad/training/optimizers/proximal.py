"""Proximal gradient descent and proximal Adagrad (FOBOS with l1/l2)."""

from typing import NamedTuple

from ...framework.variable import Variable
from ..training_ops import adagrad as adagrad_ops
from ..training_ops import gradient_descent as gd_ops
from .base import Optimizer
from .checks import real

__all__ = [
    "ProximalGradientDescent",
    "ProximalGradientDescentState",
    "ProximalAdagrad",
    "ProximalAdagradState",
]

#: The proximal step's strengths, of both optimizers.
_L1_L2 = {"l1_regularization_strength": real(0.0),
          "l2_regularization_strength": real(0.0)}


class ProximalGradientDescentState(NamedTuple):
    """:class:`ProximalGradientDescent` keeps no slots."""


class ProximalGradientDescent(Optimizer):
    r"""Gradient descent followed by the l1/l2 proximal step (FOBOS).

    .. math::

        p = \theta - \eta g, \qquad
        \theta \leftarrow \frac{\mathrm{sign}(p)\max(|p| - \eta\lambda_1, 0)}
                               {1 + \eta\lambda_2}

    (``training_ops.apply_proximal_gradient_descent``; TensorFlow's
    ``tf.compat.v1.train.ProximalGradientDescentOptimizer``; Keras has no
    such optimizer.)  A sparse gradient updates only its rows, after summing
    repeated indices.

    Examples
    --------
    >>> w = sg.Variable([1.0, -0.25])
    >>> opt = sg.optimizers.ProximalGradientDescent(
    ...     learning_rate=0.5, l1_regularization_strength=0.5)
    >>> _ = opt.apply_gradients([(np.array([1.0, 0.0]), w)])
    >>> w.numpy()
    array([ 0.25, -0.  ])
    """

    State = ProximalGradientDescentState
    _hyperparameters = _L1_L2

    def __init__(self, learning_rate=0.01, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, name="ProximalGradientDescent",
                 clipnorm=None, clipvalue=None, global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0):
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
                         l1_regularization_strength=l1_regularization_strength,
                         l2_regularization_strength=l2_regularization_strength)

    def _prepare_dense(self, grad, var, state, lr, stage):
        return [self._op(stage, gd_ops.APPLY_PROXIMAL_GRADIENT_DESCENT, var, (), grad,
                         alpha=lr, l1=self.l1_regularization_strength,
                         l2=self.l2_regularization_strength)]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        return [self._op(stage, gd_ops.SPARSE_APPLY_PROXIMAL_GRADIENT_DESCENT, var, (),
                         values, indices, alpha=lr,
                         l1=self.l1_regularization_strength,
                         l2=self.l2_regularization_strength)]


class ProximalAdagradState(NamedTuple):
    """Slots of one variable under :class:`ProximalAdagrad`."""

    #: [var.shape, var.dtype] Running sum of squared gradients.
    accumulator: Variable


class ProximalAdagrad(Optimizer):
    r"""Adagrad step sizes with the l1/l2 proximal step.

    .. math::

        a \leftarrow a + g^2, \quad \eta' = \eta / \sqrt{a}, \quad
        p = \theta - \eta' g, \quad
        \theta \leftarrow \frac{\mathrm{sign}(p)\max(|p| - \eta'\lambda_1, 0)}
                               {1 + \eta'\lambda_2}

    (``training_ops.apply_proximal_adagrad``; TensorFlow's
    ``tf.compat.v1.train.ProximalAdagradOptimizer``; Keras has no such
    optimizer.)  A sparse gradient updates only its rows, after summing
    repeated indices.

    Examples
    --------
    >>> w = sg.Variable([1.0])
    >>> opt = sg.optimizers.ProximalAdagrad(learning_rate=1.0,
    ...                                     initial_accumulator_value=12.0)
    >>> _ = opt.apply_gradients([(np.array([2.0]), w)])
    >>> w.numpy()
    array([0.5])
    """

    State = ProximalAdagradState
    _slot_aliases = {"accumulators": "accumulator"}
    _hyperparameters = {"initial_accumulator_value": real(0.0, low_open=True),
                        **_L1_L2}
    _learning_rate_note = "Must be > 0 at every step (the kernel's requirement)."
    _initial_slot_values = {"accumulator": "initial_accumulator_value"}
    _validate_learning_rate = Optimizer._positive_learning_rate

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 name="ProximalAdagrad", clipnorm=None, clipvalue=None,
                 global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0):
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
                         initial_accumulator_value=initial_accumulator_value,
                         l1_regularization_strength=l1_regularization_strength,
                         l2_regularization_strength=l2_regularization_strength)


    def _prepare_dense(self, grad, var, state, lr, stage):
        return [self._op(stage, adagrad_ops.APPLY_PROXIMAL_ADAGRAD, var, state, grad,
                         lr=lr,
                         l1=self.l1_regularization_strength,
                         l2=self.l2_regularization_strength)]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        return [self._op(stage, adagrad_ops.SPARSE_APPLY_PROXIMAL_ADAGRAD, var, state,
                         values, indices, lr=lr,
                         l1=self.l1_regularization_strength,
                         l2=self.l2_regularization_strength)]
