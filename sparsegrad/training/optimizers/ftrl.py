"""FTRL-Proximal."""

from typing import NamedTuple

from ...framework.variable import Variable
from ..training_ops import ftrl as ftrl_ops
from .base import Optimizer
from .checks import real

__all__ = ["Ftrl", "FtrlState"]


class FtrlState(NamedTuple):
    """Slots of one variable under :class:`Ftrl`."""

    #: [var.shape, var.dtype] Sum of squared gradients ("n").
    accumulator: Variable
    #: [var.shape, var.dtype] The linear term ("z").
    linear: Variable


class Ftrl(Optimizer):
    r"""FTRL-Proximal (McMahan et al., 2013), for wide sparse linear models.

    With :math:`p` = `learning_rate_power`, :math:`n` the accumulator and
    :math:`z` the linear term, :math:`g_s = g + 2\lambda_s\theta` (l2
    shrinkage) and :math:`\lambda_2' = \lambda_2 + \beta / (2\eta)`:

    .. math::

        n' = n + g^2, \quad
        z \leftarrow z + g_s - \frac{n'^{-p} - n^{-p}}{\eta}\,\theta, \quad
        \theta \leftarrow \frac{\mathrm{clip}(z, -\lambda_1, \lambda_1) - z}
                               {n'^{-p}/\eta + 2\lambda_2'}, \quad n \leftarrow n'

    (``training_ops.apply_ftrl``, or ``apply_ftrl_v2`` when
    `l2_shrinkage_regularization_strength` > 0).  The kernels take
    :math:`\sqrt{\cdot}` for :math:`p=-1/2` where Keras 3 calls ``pow``; the
    formulas agree, the rounding may differ in the last bits.  A sparse
    gradient updates only its rows (lazy, as Keras 2), after summing repeated
    indices.

    Examples
    --------
    >>> w = sg.Variable([0.0, 0.0])
    >>> opt = sg.optimizers.Ftrl(learning_rate=1.0, initial_accumulator_value=0.0,
    ...                          l1_regularization_strength=1.0)
    >>> _ = opt.apply_gradients([(np.array([0.5, -4.0]), w)])
    >>> w.numpy(), opt.get_slot(w, "linear").numpy()
    (array([0.  , 0.75]), array([ 0.5, -4. ]))
    """

    State = FtrlState
    _slot_aliases = {"accumulators": "accumulator", "linears": "linear"}
    _hyperparameters = {
        "learning_rate_power": real(high=0.0),
        "initial_accumulator_value": real(0.0),
        "l1_regularization_strength": real(0.0),
        "l2_regularization_strength": real(0.0),
        "l2_shrinkage_regularization_strength": real(0.0),
        "beta": real(0.0),
    }
    _learning_rate_note = "Must be > 0 at every step."
    _initial_slot_values = {"accumulator": "initial_accumulator_value"}
    _validate_learning_rate = Optimizer._positive_learning_rate

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0,
                 l2_shrinkage_regularization_strength=0.0, beta=0.0, name="Ftrl",
                 clipnorm=None, clipvalue=None, global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0):
        super().__init__(
            learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
            learning_rate_power=learning_rate_power,
            initial_accumulator_value=initial_accumulator_value,
            l1_regularization_strength=l1_regularization_strength,
            l2_regularization_strength=l2_regularization_strength,
            l2_shrinkage_regularization_strength=l2_shrinkage_regularization_strength,
            beta=beta)


    def _hypers(self, lr):
        hypers = {
            "lr": lr,
            "l1": self.l1_regularization_strength,
            "l2": self.l2_regularization_strength + self.beta / (2.0 * lr),
            "lr_power": self.learning_rate_power,
            "multiply_linear_by_lr": False,
        }
        if self.l2_shrinkage_regularization_strength > 0:
            hypers["l2_shrinkage"] = self.l2_shrinkage_regularization_strength
        return hypers

    def _prepare_dense(self, grad, var, state, lr, stage):
        spec = (ftrl_ops.APPLY_FTRL_V2 if self.l2_shrinkage_regularization_strength > 0
                else ftrl_ops.APPLY_FTRL)
        return [self._op(stage, spec, var, state, grad, **self._hypers(lr))]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        spec = (ftrl_ops.SPARSE_APPLY_FTRL_V2
                if self.l2_shrinkage_regularization_strength > 0
                else ftrl_ops.SPARSE_APPLY_FTRL)
        return [self._op(stage, spec, var, state, values, indices, **self._hypers(lr))]
