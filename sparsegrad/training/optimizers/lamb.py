"""Lamb (Keras 3's)."""

from typing import NamedTuple

from ...framework.variable import Variable
from ..training_ops import adam as adam_ops
from .adam import moment_hyperparameters
from .base import Optimizer
from .checks import flag, real

__all__ = ["Lamb", "LambState"]

#: A moment's decay rate.
_BETA = real(0.0, 1.0, high_open=True)


class LambState(NamedTuple):
    """Slots of one variable under :class:`Lamb`."""

    #: [var.shape, var.dtype] First moment (Keras's "momentum").
    m: Variable
    #: [var.shape, var.dtype] Second moment (Keras's "velocity").
    v: Variable


class Lamb(Optimizer):
    r"""Lamb (You et al., 2019): Adam's direction, scaled per variable by a
    trust ratio, as Keras 3 computes it.

    With :math:`t` the step number (1 on the first step),

    .. math::

        m &\leftarrow m + (g - m)(1-\beta_1), \quad
        v \leftarrow v + (g^2 - v)(1-\beta_2) \\
        u &= \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon},
        \quad r = \frac{\lVert\theta\rVert}{\lVert u\rVert}, \quad
        \theta \leftarrow \theta - (r\,\eta)\, u

    with the norms over the whole variable and :math:`r = 1` unless both are
    > 0 (``training_ops.apply_lamb``), in Keras's operation order and
    roundings.  The sums of squares of the norms are accumulated in float64
    in a fixed order (the same bits for any thread count and on the GPU),
    so they can differ from Keras's float32 sums in the last bits.

    Sparse gradients (repeated indices are summed first):

    * ``lazy=False`` (default) is Keras 3's semantics: the result is that of
      the dense gradient with zeros on the rows not in it, so every row's
      moments decay and the ratio is the whole variable's (O(table size) per
      step).
    * ``lazy=True`` touches only the rows in the gradient
      (``training_ops.sparse_apply_lamb``), and takes the trust ratio **per
      touched row**: the norm of the row's weights over the norm of its
      direction.  This differs from Keras on purpose: the whole variable's
      norms would cost the table's size on every step.  Other rows keep their
      moments and do not move; the bias correction uses the global step.
      Cost O(nnz * row width).  Dense gradients are unaffected.

    Examples
    --------
    >>> w = sg.Variable([3.0, 4.0])
    >>> opt = sg.optimizers.Lamb(learning_rate=0.01)
    >>> _ = opt.apply_gradients([(np.array([1.0, -1.0]), w)])
    >>> np.round(w.numpy(), 5)
    array([2.96464, 4.03536])

    The lazy form moves each touched row by its own ratio:

    >>> table = sg.Variable([[3.0, 4.0], [0.3, 0.4], [1.0, 1.0]])
    >>> lazy = sg.optimizers.Lamb(learning_rate=0.01, lazy=True)
    >>> grad = sg.IndexedSlices(np.array([[1.0, -1.0], [1.0, -1.0]]),
    ...                         np.array([0, 1]), dense_shape=(3, 2))
    >>> _ = lazy.apply_gradients([(grad, table)])
    >>> np.round(table.numpy(), 5)
    array([[2.96464, 4.03536],
           [0.29646, 0.40354],
           [1.     , 1.     ]])
    """

    State = LambState
    _slot_aliases = {"momentum": "m", "momentums": "m", "velocity": "v",
                     "velocities": "v"}
    _hyperparameters = {
        "beta_1": _BETA,
        "beta_2": _BETA,
        "epsilon": real(0.0, note="Added to the bias-corrected square root of "
                                  "``v``."),
        "lazy": flag("Update only the rows of a sparse gradient, with a trust "
                     "ratio per row."),
    }

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Lamb", clipnorm=None, clipvalue=None, global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0,
                 lazy=False):
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
                         beta_1=beta_1, beta_2=beta_2, epsilon=epsilon, lazy=lazy)

    def _prepare_dense(self, grad, var, state, lr, stage):
        return [self._op(stage, adam_ops.APPLY_LAMB, var, state, grad,
                         **moment_hyperparameters(self, lr, self._math_dtype(var)))]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        if not self.lazy:   # Keras's semantics: every row's moments decay
            return self._prepare_densified(values, indices, var, state, lr, stage)
        hypers = moment_hyperparameters(self, lr, self._math_dtype(var))
        return [self._op(stage, adam_ops.SPARSE_APPLY_LAMB, var, state, values,
                         indices, **hypers)]
