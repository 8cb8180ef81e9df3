"""Adagrad and its row-wise variant."""

from typing import NamedTuple

from ...errors import InvalidArgumentError
from ...framework.variable import Variable
from ..training_ops import adagrad as adagrad_ops
from .base import Optimizer
from .checks import real

__all__ = ["Adagrad", "AdagradState", "RowwiseAdagrad", "RowwiseAdagradState"]

#: The hyper-parameters of both Adagrads.
_ADAGRAD_HYPERPARAMETERS = {"initial_accumulator_value": real(0.0),
                            "epsilon": real(0.0)}


class AdagradState(NamedTuple):
    """Slots of one variable under :class:`Adagrad`."""

    #: [var.shape, var.dtype] Running sum of squared gradients.
    accumulator: Variable


class Adagrad(Optimizer):
    r"""Adagrad: per-coordinate learning rates from the sum of squared gradients.

    .. math::

        a \leftarrow a + g^2, \qquad
        \theta \leftarrow \theta - \frac{\eta\, g}{\sqrt{a} + \epsilon}

    (``training_ops.apply_adagrad_v2``).  A sparse gradient updates only its
    rows, after summing repeated indices (as Keras 2 did).

    .. warning::
        Keras 3 puts epsilon *inside* the square root,
        ``eta * g / sqrt(a + eps)``; this class follows TensorFlow's
        ``ApplyAdagradV2`` kernel (epsilon outside), as Keras 2 did.  With
        ``epsilon=0`` both agree; otherwise they differ by O(epsilon).

    Examples
    --------
    >>> w = sg.Variable([1.0, 1.0])
    >>> opt = sg.optimizers.Adagrad(learning_rate=1.0, initial_accumulator_value=0.0,
    ...                             epsilon=0.0)
    >>> _ = opt.apply_gradients([(np.array([3.0, -4.0]), w)])
    >>> w.numpy(), opt.get_slot(w, "accumulator").numpy()
    (array([0., 2.]), array([ 9., 16.]))
    """

    State = AdagradState
    _slot_aliases = {"accumulators": "accumulator"}
    _hyperparameters = _ADAGRAD_HYPERPARAMETERS
    _initial_slot_values = {"accumulator": "initial_accumulator_value"}

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1,
                 epsilon=1e-7, name="Adagrad", clipnorm=None, clipvalue=None,
                 global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0):
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
                         initial_accumulator_value=initial_accumulator_value,
                         epsilon=epsilon)

    def _prepare_dense(self, grad, var, state, lr, stage):
        return [self._op(stage, adagrad_ops.APPLY_ADAGRAD_V2, var, state, grad, lr=lr,
                         epsilon=self.epsilon, update_slots=True)]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        return [self._op(stage, adagrad_ops.SPARSE_APPLY_ADAGRAD_V2, var, state, values,
                         indices, lr=lr, epsilon=self.epsilon, update_slots=True)]


class RowwiseAdagradState(NamedTuple):
    """Slots of one variable under :class:`RowwiseAdagrad`."""

    #: [(var.shape[0],), var.dtype] One accumulator per row.
    accumulator: Variable


class RowwiseAdagrad(Optimizer):
    r"""Adagrad with one accumulator per row (for embedding tables).

    For each row :math:`i` with gradient row :math:`g_i` of width :math:`R`:

    .. math::

        a_i \leftarrow a_i + \tfrac{1}{R}\textstyle\sum_j g_{ij}^2, \qquad
        \theta_i \leftarrow \theta_i - \frac{\eta}{\sqrt{a_i} + \epsilon}\, g_i

    The accumulator costs one number per row instead of one per element
    (``training_ops.apply_rowwise_adagrad``).  A sparse gradient updates only
    its rows, after summing repeated indices.  Keras and TensorFlow have no
    such optimizer; the tests check it against a NumPy reference.

    Examples
    --------
    >>> w = sg.Variable([[1.0, 1.0], [2.0, 2.0]])
    >>> opt = sg.optimizers.RowwiseAdagrad(learning_rate=5.0,
    ...                                    initial_accumulator_value=0.0, epsilon=0.0)
    >>> g = sg.IndexedSlices(np.array([[1.0, 7.0]]), np.array([1]))
    >>> _ = opt.apply_gradients([(g, w)])
    >>> w.numpy(), opt.get_slot(w, "accumulator").numpy()
    (array([[ 1.,  1.],
           [ 1., -5.]]), array([ 0., 25.]))
    """

    State = RowwiseAdagradState
    _hyperparameters = _ADAGRAD_HYPERPARAMETERS

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1,
                 epsilon=1e-7, name="RowwiseAdagrad", clipnorm=None, clipvalue=None,
                 global_clipnorm=None,
                 slot_dtype=None, stochastic_rounding=False, seed=0):
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm,
                         slot_dtype=slot_dtype, stochastic_rounding=stochastic_rounding,
                         seed=seed,
                         initial_accumulator_value=initial_accumulator_value,
                         epsilon=epsilon)

    def _create_slots(self, var):
        if var.ndim == 0 or var.size == 0:
            raise InvalidArgumentError(
                f"RowwiseAdagrad needs variables with rows of at least one element; "
                f"{var.name!r} has shape {var.shape}"
            )
        return RowwiseAdagradState(accumulator=self._slot_variable(
            var, "accumulator", self.initial_accumulator_value, shape=var.shape[:1]))

    def _prepare_dense(self, grad, var, state, lr, stage):
        return [self._op(stage, adagrad_ops.APPLY_ROWWISE_ADAGRAD, var, state, grad,
                         lr=lr, epsilon=self.epsilon)]

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        return [self._op(stage, adagrad_ops.SPARSE_APPLY_ROWWISE_ADAGRAD, var, state,
                         values, indices, lr=lr, epsilon=self.epsilon)]
