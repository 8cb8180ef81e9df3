"""Adadelta."""

from typing import NamedTuple

from ...framework.variable import Variable
from ..training_ops import adadelta as adadelta_ops
from .base import Optimizer
from .checks import real

__all__ = ["Adadelta", "AdadeltaState"]


class AdadeltaState(NamedTuple):
    """Slots of one variable under :class:`Adadelta`."""

    #: [var.shape, var.dtype] Decaying average of squared gradients.
    accum_grad: Variable
    #: [var.shape, var.dtype] Decaying average of squared updates.
    accum_var: Variable


class Adadelta(Optimizer):
    r"""Adadelta: step sizes from running averages of gradients and updates.

    .. math::

        a \leftarrow \rho a + (1-\rho) g^2, \quad
        u = \frac{\sqrt{d + \epsilon}}{\sqrt{a + \epsilon}}\, g, \quad
        \theta \leftarrow \theta - \eta u, \quad
        d \leftarrow \rho d + (1-\rho) u^2

    (``training_ops.apply_adadelta``).  Keras 3 computes the same formula
    with a different operation order (it divides by ``sqrt(a + eps)`` where
    the kernel multiplies by its reciprocal), so results agree to rounding.
    A sparse gradient updates only its rows (lazy, as Keras 2), after summing
    repeated indices.

    Examples
    --------
    >>> w = sg.Variable([1.0])
    >>> opt = sg.optimizers.Adadelta(learning_rate=1.0, rho=0.5, epsilon=1.0)
    >>> _ = opt.apply_gradients([(np.array([4.0]), w)])
    >>> np.round(w.numpy(), 6), opt.get_slot(w, "accum_grad").numpy()
    (array([-0.333333]), array([8.]))
    """

    State = AdadeltaState
    _slot_aliases = {"accumulated_grad": "accum_grad",
                     "accumulated_delta_var": "accum_var"}
    _hyperparameters = {"rho": real(0.0, 1.0), "epsilon": real(0.0)}

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="Adadelta",
                 clipnorm=None, clipvalue=None, global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0):
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
                         rho=rho, epsilon=epsilon)

    def _prepare_dense(self, grad, var, state, lr, stage):
        return [self._op(stage, adadelta_ops.APPLY_ADADELTA, var, state, grad, lr=lr,
                         rho=self.rho, epsilon=self.epsilon)]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        return [self._op(stage, adadelta_ops.SPARSE_APPLY_ADADELTA, var, state, values,
                         indices, lr=lr, rho=self.rho, epsilon=self.epsilon)]
