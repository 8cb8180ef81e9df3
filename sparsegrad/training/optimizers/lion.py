"""Lion (Keras 3)."""

from typing import NamedTuple

from ...framework.variable import Variable
from ..training_ops import sign as sign_ops
from .base import Optimizer
from .checks import flag, real

__all__ = ["Lion", "LionState"]


class LionState(NamedTuple):
    """Slots of one variable under :class:`Lion`."""

    #: [var.shape, var.dtype] The momentum (decaying mean of gradients).
    m: Variable


class Lion(Optimizer):
    r"""Lion (Chen et al., 2023): a step of fixed size along a sign.

    .. math::

        \theta \leftarrow \theta - \eta\,\operatorname{sign}(\beta_1 m +
        (1-\beta_1) g), \qquad
        m \leftarrow \beta_2 m + (1-\beta_2) g

    (``training_ops.apply_lion``), in Keras 3's operation order: ``m *
    beta_1 + g * (1 - beta_1)``, then ``m * beta_2 + g * (1 - beta_2)``, with
    ``1 - beta`` rounded to the variable's dtype; ``sign(0) = 0``.  Every
    element moves by the learning rate or not at all, so a learning rate 3 to
    10 times smaller than Adam's is usual.

    Sparse gradients (repeated indices are summed first):

    * ``lazy=False`` (default) is Keras 3's semantics: the result is that of
      the dense gradient with zeros on the rows not in it, so every row's
      momentum decays and a row whose momentum is not zero moves.  This costs
      O(table size) per step: the summed gradient is scattered into a dense
      buffer.
    * ``lazy=True`` touches only the rows in the gradient
      (``training_ops.sparse_apply_lion``): other rows keep their momentum and
      do not move.  Cost O(nnz * row width).  Dense gradients are unaffected.

    Examples
    --------
    >>> w = sg.Variable([1.0, -1.0, 0.5])
    >>> opt = sg.optimizers.Lion(learning_rate=0.25)
    >>> _ = opt.apply_gradients([(np.array([0.5, -2.0, 0.0]), w)])
    >>> w.numpy()
    array([ 0.75, -0.75,  0.5 ])
    >>> opt.get_slot(w, "m").numpy().round(3)
    array([ 0.005, -0.02 ,  0.   ])
    """

    State = LionState
    _slot_aliases = {"momentum": "m"}
    _hyperparameters = {
        "beta_1": real(0.0, 1.0, low_open=True,
                       note="Weight of the momentum in the interpolation whose "
                            "sign is the step (Keras 3 refuses 0: SignSGD)."),
        "beta_2": real(note="Decay rate of the momentum (Keras 3 does not bound "
                            "it)."),
        "lazy": flag("Update only the rows of a sparse gradient."),
    }

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99, name="Lion",
                 clipnorm=None, clipvalue=None, global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0, lazy=False):
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
                         beta_1=beta_1, beta_2=beta_2, lazy=lazy)

    def _hypers(self, lr):
        return {"lr": lr, "beta1": self.beta_1, "beta2": self.beta_2}

    def _prepare_dense(self, grad, var, state, lr, stage):
        return [self._op(stage, sign_ops.APPLY_LION, var, state, grad,
                         **self._hypers(lr))]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        if not self.lazy:   # Keras 3's semantics: every row's momentum decays
            return self._prepare_densified(values, indices, var, state, lr, stage)
        return [self._op(stage, sign_ops.SPARSE_APPLY_LION, var, state, values,
                         indices, **self._hypers(lr))]
