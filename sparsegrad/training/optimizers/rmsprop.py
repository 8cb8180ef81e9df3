"""RMSprop, plain and centered."""

from typing import NamedTuple, Optional

from ...framework.variable import Variable
from ..training_ops import rms_prop as rms_ops
from .base import Optimizer
from .checks import flag, real

__all__ = ["RMSprop", "RMSpropState"]


class RMSpropState(NamedTuple):
    """Slots of one variable under :class:`RMSprop`."""

    #: [var.shape, var.dtype] Decaying mean of squared gradients.
    rms: Variable
    #: [var.shape, var.dtype] The momentum buffer (the last update when
    #: momentum is 0).
    momentum: Variable
    #: [var.shape, var.dtype] Decaying mean of gradients; None unless centered.
    mg: Optional[Variable]


class RMSprop(Optimizer):
    r"""RMSprop, optionally centered and with momentum.

    .. math::

        r \leftarrow r + (g^2 - r)(1-\rho), \quad
        [\,\bar g \leftarrow \bar g + (g - \bar g)(1-\rho)\,], \quad
        m \leftarrow \mu m + \frac{\eta\, g}{\sqrt{r\ [-\ \bar g^2] + \epsilon}}, \quad
        \theta \leftarrow \theta - m

    (``training_ops.apply_rms_prop`` / ``apply_centered_rms_prop``; epsilon
    inside the square root, as in Keras 3.)  Keras 3 writes the decay as
    ``rho * r + (1 - rho) * g**2``, so results agree to rounding.  The kernel
    keeps a momentum buffer even for ``momentum=0`` (it then holds the last
    update), so this class always creates the ``"momentum"`` slot.

    A sparse gradient updates only its rows, after summing repeated indices:
    rows not in the gradient keep their ``rms``/``mg``/``momentum`` (lazy, as
    TensorFlow's sparse kernels; Keras 2 decayed ``rms`` of every row when
    momentum was 0).

    Examples
    --------
    >>> w = sg.Variable([1.0])
    >>> opt = sg.optimizers.RMSprop(learning_rate=0.5, rho=0.75, epsilon=0.0)
    >>> _ = opt.apply_gradients([(np.array([2.0]), w)])
    >>> w.numpy(), opt.get_slot(w, "rms").numpy()
    (array([0.]), array([1.]))
    """

    State = RMSpropState
    _slot_aliases = {"velocity": "rms", "average_gradient": "mg"}
    _hyperparameters = {"rho": real(0.0, 1.0), "momentum": real(0.0, 1.0),
                        "epsilon": real(0.0), "centered": flag()}

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, name="RMSprop", clipnorm=None, clipvalue=None,
                 global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0):
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
                         rho=rho, momentum=momentum, epsilon=epsilon,
                         centered=centered)

    def _create_slots(self, var):
        return RMSpropState(
            rms=self._slot_variable(var, "rms"),
            momentum=self._slot_variable(var, "momentum"),
            mg=self._slot_variable(var, "mg") if self.centered else None,
        )

    def _hypers(self, lr):
        return {"lr": lr, "rho": self.rho, "momentum": self.momentum,
                "epsilon": self.epsilon}

    def _prepare_dense(self, grad, var, state, lr, stage):
        if self.centered:
            return [self._op(stage, rms_ops.APPLY_CENTERED_RMS_PROP, var,
                             (state.mg, state.rms, state.momentum), grad,
                             **self._hypers(lr))]
        return [self._op(stage, rms_ops.APPLY_RMS_PROP, var, (state.rms,
                         state.momentum),
                         grad, **self._hypers(lr))]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        if self.centered:
            return [self._op(stage, rms_ops.SPARSE_APPLY_CENTERED_RMS_PROP, var,
                             (state.mg, state.rms, state.momentum), values, indices,
                             **self._hypers(lr))]
        return [self._op(stage, rms_ops.SPARSE_APPLY_RMS_PROP, var,
                         (state.rms, state.momentum), values, indices,
                         **self._hypers(lr))]
