"""Dynamic loss scaling around another optimizer: Keras 3's
``LossScaleOptimizer``.

The wrapper holds two values of its own, the loss scale (a float32 scalar
Variable) and the number of finite steps since the scale last changed (an
int64 scalar Variable).  Everything else, the slots, the step count and the
learning rate, is the inner optimizer's: this class reads them through the
properties ``_slots``, ``_iterations`` and ``_learning_rate``, so that
:mod:`.state`'s ``save_state`` / ``load_state`` write and restore the inner
optimizer's state with the wrapper's two values beside it.
"""

import numbers

import numpy as np

from ...errors import InvalidArgumentError
from ...framework import sparse_rows
from ...framework.backend import backend_of
from ...framework.dtypes import is_real
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import Tensor, convert_to_tensor
from ...framework.variable import Variable
from ...ops import array_ops, math_ops
from . import registry
from .base import Optimizer
from .checks import check_number, gradient_pairs

__all__ = ["LossScaleOptimizer"]

# Keras 3 accepts the base optimizer's arguments only at their defaults (old
# configs list them); any other value belongs on the inner optimizer.
_BASE_DEFAULTS = {
    "weight_decay": None,
    "clipnorm": None,
    "global_clipnorm": None,
    "clipvalue": None,
    "use_ema": False,
    "ema_momentum": 0.99,
    "ema_overwrite_frequency": None,
    "loss_scale_factor": None,
    "gradient_accumulation_steps": None,
}

# Names of the wrapper's own arrays in a state file (beside the inner
# optimizer's own state, which keeps its names under "inner/").
_SCALE, _COUNTER, _INNER_CLASS = ("loss_scale/dynamic_scale",
                                  "loss_scale/step_counter",
                                  "loss_scale/inner_class")
_INNER = "inner/"

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _check_growth_steps(value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgumentError(
            f"dynamic_growth_steps must be an int, got {value!r}")
    if not 1 <= value <= sparse_rows.INT64_MAX:
        raise InvalidArgumentError(
            f"dynamic_growth_steps must be in [1, 2**63 - 1], got {value!r}")
    return int(value)


def _check_initial_scale(value):
    value = check_number(value, "initial_scale", low=0.0, low_open=True)
    as_f32 = np.float32(value) if value < 2.0**128 else np.float32(np.inf)
    if not (np.isfinite(as_f32) and as_f32 > 0):
        raise InvalidArgumentError(
            f"initial_scale must be a positive float32 number (the scale is "
            f"kept in float32), got {value!r}, which is {float(as_f32)!r} in "
            "float32")
    return value


def _gradient_values(grad, var):
    """The array of `grad` whose elements the finiteness check reads (an
    IndexedSlices' values, a Tensor's value, or `grad` as an array), checked
    to be real and shaped for `var` first: the check and the unscaling
    allocate its size."""
    if isinstance(grad, IndexedSlices):
        array = grad._values._value
        shape, want = array.shape[1:], var.shape[1:]
    else:
        if isinstance(grad, (Tensor, Variable)):
            array = grad._value
        else:
            try:
                array = grad if backend_of(grad).on_gpu else np.asarray(grad)
            except (TypeError, ValueError) as exc:
                raise InvalidArgumentError(
                    f"the gradient of {var.name!r} is not convertible to an "
                    f"array: {exc}") from None
        shape, want = array.shape, var.shape
    if not is_real(array.dtype):
        raise InvalidArgumentError(
            f"the gradient of {var.name!r} has dtype {array.dtype}; expected a "
            "real floating dtype")
    if shape != want:
        rows = "rows of shape " if isinstance(grad, IndexedSlices) else "shape "
        raise InvalidArgumentError(
            f"var and grad do not have the same shape: the gradient of "
            f"{var.name!r} has {rows}{shape}, the variable {var.shape}")
    return array


def _all_finite(values):
    if values.dtype.kind in "biu":
        return True
    return bool(backend_of(values).xp.isfinite(values).all())


def _unscaled(grad, values, scale):
    """`grad` divided by the float32 `scale` as Keras 3 divides it: in
    float64 for a float64 gradient, else in float32 (a half gradient is
    widened first, exactly); an IndexedSlices keeps its indices."""
    dtype = _F64 if values.dtype == _F64 else _F32
    out = values.astype(dtype, copy=True)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out /= dtype.type(scale)
    if isinstance(grad, IndexedSlices):
        return IndexedSlices._from_trusted(out, grad._indices, grad._dense_shape,
                                           grad._groups)
    return out


class LossScaleOptimizer(Optimizer):
    """An optimizer that scales the loss dynamically (Keras 3's).

    Half-precision gradients underflow to zero where float32 ones would
    not.  Multiplying the loss by a large *loss scale*
    (:meth:`scale_loss`) scales every gradient by it too; this optimizer
    divides the gradients by the scale again before the inner optimizer
    applies them, and adjusts the scale as Keras 3 does:

    - a step whose gradients are all finite is applied (``g / scale``, with
      the inner optimizer); if it is the ``dynamic_growth_steps``-th such
      step in a row, the scale doubles and the count starts again;
    - a step with an inf or NaN in any gradient (an IndexedSlices' values
      included) is skipped whole: no variable, slot or step count of the
      inner optimizer changes; the scale halves and the count restarts.

    Parameters
    ----------
    inner_optimizer : Optimizer
        The optimizer that applies the unscaled gradients; its learning
        rate, slots and step count are this optimizer's.
    initial_scale : float, default=2.0**15
        The first loss scale, > 0; kept in float32 (as Keras does), so it
        must be finite and nonzero there too.
    dynamic_growth_steps : int, default=2000
        The number of consecutive finite steps after which the scale
        doubles, >= 1.
    name : str, optional
        Default ``"loss_scale_optimizer"``.
    **kwargs
        Keras 3's compatibility arguments: ``dynamic=True``, and the base
        optimizer's arguments (``clipnorm``, ``weight_decay``, ...) at
        their defaults only, as old configs list them.

    Raises
    ------
    TypeError
        If `inner_optimizer` is not a sparsegrad optimizer, or is itself a
        LossScaleOptimizer.
    InvalidArgumentError
        If `initial_scale` or `dynamic_growth_steps` is out of range or not
        a number (an int), ``dynamic=False`` is given, or a keyword
        argument is unknown or set away from its default (set ``clipnorm``
        and the like on the inner optimizer).

    Notes
    -----
    Like Keras 3, the scale has no bounds: doubling may reach inf (every
    step is then skipped and the scale stays inf) and halving may reach 0
    (``0 / 0`` gives NaN gradients, which are applied).  The division
    happens in float64 for a float64 gradient and in float32 for the others,
    so a float16 or bfloat16 gradient comes out float32 (as Keras's
    ``ops.divide`` promotes it), for the inner optimizer to apply.

    Differences from Keras 3: a step whose gradients are all None changes
    nothing (Keras raises); the inner optimizer is checked and bad
    gradients (shape, indices, the same variable twice) raise on a skipped
    step too; and :meth:`scale_loss` multiplies by the float32 scale also
    before the first step (Keras uses the Python ``initial_scale`` until it
    builds; they agree whenever float32 holds `initial_scale`, e.g. powers
    of two).

    Examples
    --------
    >>> w = sg.Variable(np.array([1.0, 2.0], np.float32))
    >>> opt = sg.optimizers.LossScaleOptimizer(
    ...     sg.optimizers.SGD(learning_rate=0.5), initial_scale=4.0,
    ...     dynamic_growth_steps=2)
    >>> with sg.GradientTape() as tape:
    ...     loss = sg.reduce_sum(w * w)
    ...     scaled = opt.scale_loss(loss)
    >>> grad = tape.gradient(scaled, w)
    >>> grad.numpy()                 # 4 * 2w
    array([ 8., 16.], dtype=float32)
    >>> _ = opt.apply_gradients([(grad, w)])
    >>> w.numpy(), opt.dynamic_scale, opt.iterations_count
    (array([0., 0.], dtype=float32), 4.0, 1)
    >>> _ = opt.apply_gradients([(np.array([np.inf, 1.0], np.float32), w)])
    >>> w.numpy(), opt.dynamic_scale, opt.iterations_count   # skipped
    (array([0., 0.], dtype=float32), 2.0, 1)
    """

    # Optimizer classes by name, for from_config to rebuild the inner
    # optimizer from its {"class_name", "config"} dict; the package's
    # __init__, which knows them all, fills it.
    _known_classes = {}

    def __init__(self, inner_optimizer, initial_scale=2.0**15,
                 dynamic_growth_steps=2000, name=None, **kwargs):
        # Optimizer.__init__ is not called: the learning rate, the step
        # count and the slots are the inner optimizer's (see the properties
        # below).
        if not kwargs.pop("dynamic", True):
            raise InvalidArgumentError(
                "LossScaleOptimizer no longer supports `dynamic=False`. Instead, "
                "simply set `loss_scale_factor` directly on the `inner_optimizer`."
            )
        for key, default in _BASE_DEFAULTS.items():
            if key in kwargs and kwargs.pop(key) != default:
                raise InvalidArgumentError(
                    f"LossScaleOptimizer does not support `{key}`. Instead, set "
                    f"`{key}` on the `inner_optimizer`."
                )
        if kwargs:
            raise InvalidArgumentError(
                "LossScaleOptimizer does not support arguments: "
                f"`{'`, `'.join(kwargs)}`."
            )
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise TypeError(
                "LossScaleOptimizer cannot wrap another LossScaleOptimizer, but "
                f"got inner_optimizer={inner_optimizer!r}"
            )
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(
                "inner_optimizer must be a sparsegrad optimizer "
                f"(sparsegrad.optimizers.Optimizer), got {inner_optimizer!r}"
            )
        initial_scale = _check_initial_scale(initial_scale)
        dynamic_growth_steps = _check_growth_steps(dynamic_growth_steps)
        name = "loss_scale_optimizer" if name is None else name
        if not isinstance(name, str):
            raise InvalidArgumentError(f"name must be a str, got {name!r}")
        self.inner_optimizer = inner_optimizer
        self.initial_scale = initial_scale
        self.dynamic_growth_steps = dynamic_growth_steps
        self.name = name
        self.clipnorm = self.clipvalue = self.global_clipnorm = None
        self._step_counter = Variable(np.int64(0), trainable=False,
                                      name="step_counter")
        self._scale = Variable(np.float32(initial_scale), trainable=False,
                               name="dynamic_scale")

    def __repr__(self):
        return (f"<LossScaleOptimizer {self.name!r} of "
                f"{type(self.inner_optimizer).__name__}, scale "
                f"{self.dynamic_scale!r}>")

    # -- the inner optimizer's state, seen as this optimizer's -----------------

    @property
    def _slots(self):
        return self.inner_optimizer._slots

    @_slots.setter
    def _slots(self, value):
        self.inner_optimizer._slots = value

    @property
    def _iterations(self):
        return self.inner_optimizer._iterations

    @property
    def _learning_rate(self):
        return self.inner_optimizer._learning_rate

    @_learning_rate.setter
    def _learning_rate(self, value):
        self.inner_optimizer._learning_rate = value

    @property
    def learning_rate(self):
        """The inner optimizer's learning rate (setting it sets that)."""
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self.inner_optimizer.learning_rate = value

    def current_learning_rate(self):
        """The learning rate the inner optimizer's next step will use."""
        return self.inner_optimizer.current_learning_rate()

    @property
    def iterations(self):
        """The inner optimizer's step count (skipped steps do not count)."""
        return self.inner_optimizer.iterations

    @property
    def iterations_count(self):
        """The inner optimizer's step count as a Python int."""
        return self.inner_optimizer.iterations_count

    @property
    def dynamic_scale(self):
        """The current loss scale, a Python float (a float32 value)."""
        return float(self._scale._value)

    @property
    def step_counter(self):
        """The finite steps since the scale last changed: a scalar int64
        :class:`~sparsegrad.Variable`, as Keras 3's."""
        return self._step_counter

    def build(self, var_list):
        """Create the inner optimizer's slots of `var_list` now (optional).

        Parameters
        ----------
        var_list : list of Variable
        """
        self.inner_optimizer.build(var_list)

    def get_slot_names(self):
        """The inner optimizer's slot names."""
        return self.inner_optimizer.get_slot_names()

    def get_slot(self, var, slot_name):
        """The inner optimizer's slot `slot_name` of `var`.

        Parameters
        ----------
        var : Variable
        slot_name : str

        Returns
        -------
        Variable
        """
        return self.inner_optimizer.get_slot(var, slot_name)

    def get_state(self, var):
        """The inner optimizer's State of `var`, or None."""
        return self.inner_optimizer.get_state(var)

    def tracked_variables(self):
        """The model variables with slots in the inner optimizer."""
        return self.inner_optimizer.tracked_variables()

    def variables(self):
        """The step counter and the scale, then the inner optimizer's
        variables (Keras 3's order)."""
        return [self._step_counter, self._scale, *self.inner_optimizer.variables()]

    def _check_variable(self, var, what):
        self.inner_optimizer._check_variable(var, what)

    def _create_slots(self, var):
        return self.inner_optimizer._create_slots(var)

    def _validate_learning_rate(self, lr):
        self.inner_optimizer._validate_learning_rate(lr)

    # -- scaling ---------------------------------------------------------------

    def scale_loss(self, loss):
        """`loss` times the current scale, recorded by any active tape.

        As Keras 3's ``ops.multiply(loss, dynamic_scale)``: a float64 loss
        stays float64; any other (a float16 or bfloat16 loss included, cast
        to float32 first, so that the product does not overflow) gives
        float32.

        Parameters
        ----------
        loss : Tensor or array_like
            A number converts as :func:`sparsegrad.convert_to_tensor`
            converts it (a Python float: float64).

        Returns
        -------
        Tensor

        Examples
        --------
        >>> opt = sg.optimizers.LossScaleOptimizer(sg.optimizers.SGD())
        >>> opt.scale_loss(sg.constant(np.float16(3.0)))
        <sparsegrad.Tensor: shape=(), dtype=float32, numpy=98304.0>
        """
        loss = convert_to_tensor(loss, name="loss")
        dtype = _F64 if loss.dtype == _F64 else _F32
        if loss.dtype != dtype:
            loss = array_ops.cast(loss, dtype)
        return math_ops.multiply(loss, dtype.type(self._scale._value))

    # -- one step --------------------------------------------------------------

    def apply_gradients(self, grads_and_vars):
        """Unscale the gradients and apply them, or skip the step.

        Parameters
        ----------
        grads_and_vars : iterable of (gradient, Variable)
            Scaled gradients (see :meth:`scale_loss`), as the inner
            optimizer takes them: arrays, Tensors, IndexedSlices or None.

        Returns
        -------
        Variable
            The inner optimizer's :attr:`iterations`.

        Raises
        ------
        InvalidArgumentError
            As the inner optimizer's ``apply_gradients`` (a gradient that
            does not match its variable, the same variable twice, ...),
            whether the step would be applied or skipped.  Nothing changes
            then, the scale and the step counter included.
        TypeError
            If a variable is not a sparsegrad Variable.
        """
        inner = self.inner_optimizer
        pairs, seen = [], set()
        for k, grad, var in gradient_pairs(grads_and_vars):
            self._check_variable(var, f"grads_and_vars[{k}][1]")
            if grad is None:
                continue
            if var._uid in seen:
                raise InvalidArgumentError(
                    f"variable {var.name!r} appears twice in grads_and_vars; sum "
                    "its gradients first"
                )
            seen.add(var._uid)
            pairs.append((grad, var, _gradient_values(grad, var)))
        if not pairs:
            return self.iterations
        scale = self._scale._value
        counter = self._step_counter._value
        finite = all(_all_finite(values) for _, _, values in pairs)
        unscaled = [(_unscaled(grad, values, scale), var)
                    for grad, var, values in pairs]
        if finite:
            inner.apply_gradients(unscaled)
            # Keras 3's order: the step first, then the count and the scale.
            if int(counter) == self.dynamic_growth_steps - 1:
                counter[()] = 0
                factor = np.float32(2.0)
            else:
                counter[()] = int(counter) + 1
                factor = np.float32(1.0)
        else:
            # Checked as the inner optimizer would check the step it skips.
            for grad, var in unscaled:
                inner._as_gradient(grad, var)
            counter[()] = 0
            factor = np.float32(0.5)
        with np.errstate(over="ignore", under="ignore"):
            scale[()] = scale * factor
        self._step_counter._bump()
        self._scale._bump()
        return self.iterations

    def minimize(self, loss, var_list, tape=None):
        """Scale `loss`, differentiate it and apply the gradients.

        The gradients are those of :meth:`scale_loss` of `loss` (the tape is
        seeded with the scale, which is what the recorded product would
        give); :meth:`apply_gradients` unscales them.

        Parameters
        ----------
        loss : callable or Tensor
            A function of no arguments returning the (unscaled) loss, or a
            Tensor computed under `tape`.
        var_list : list of Variable, or a callable returning one
        tape : GradientTape, optional
            Required when `loss` is a Tensor.

        Returns
        -------
        Variable
            The inner optimizer's :attr:`iterations`.

        Examples
        --------
        >>> w = sg.Variable(np.array([1.0, -1.0]))
        >>> opt = sg.optimizers.LossScaleOptimizer(
        ...     sg.optimizers.SGD(learning_rate=0.25))
        >>> _ = opt.minimize(lambda: sg.reduce_sum(w * w), [w])
        >>> w.numpy()
        array([ 0.5, -0.5])
        """
        loss, var_list, tape = self._loss_and_variables(loss, var_list, tape)
        loss = convert_to_tensor(loss, name="loss")
        xp = backend_of(loss._value).xp
        with np.errstate(over="ignore"):
            seed = xp.full(loss.shape, float(self._scale._value), dtype=loss.dtype)
        grads = tape.gradient(loss, var_list, output_gradients=seed)
        return self.apply_gradients(zip(grads, var_list))

    # -- config ----------------------------------------------------------------

    def get_config(self):
        """Keras 3's four keys; the inner optimizer as its
        ``{"class_name": ..., "config": ...}`` dict.

        Returns
        -------
        dict
        """
        return {
            "name": self.name,
            "inner_optimizer": registry.to_config(
                self.inner_optimizer, Optimizer, "a sparsegrad optimizer"),
            "initial_scale": self.initial_scale,
            "dynamic_growth_steps": self.dynamic_growth_steps,
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A LossScaleOptimizer from :meth:`get_config`'s dict (no state).

        Parameters
        ----------
        config : dict
            Its ``"inner_optimizer"`` is a ``{"class_name", "config"}`` dict
            (an optimizer instance is taken as it is).
        custom_objects : dict, optional
            Further optimizer and schedule classes by name.

        Returns
        -------
        LossScaleOptimizer
        """
        config = dict(config)
        if "inner_optimizer" not in config:
            raise InvalidArgumentError(
                f"a LossScaleOptimizer config needs 'inner_optimizer', got "
                f"{sorted(config)}"
            )
        inner = config.pop("inner_optimizer")
        if isinstance(inner, dict):
            inner = registry.from_config(inner, cls._known_classes, custom_objects,
                                         "an optimizer",
                                         custom_objects=custom_objects)
        return cls(inner, **config)

    # -- state -----------------------------------------------------------------

    def _state_arrays(self):
        own = {f"{_INNER}{key}": value
               for key, value in self.inner_optimizer._state_arrays().items()}
        own[_SCALE] = np.array(self._scale._value, _F32)
        own[_COUNTER] = np.array(self._step_counter._value, np.int64)
        own[_INNER_CLASS] = np.asarray(type(self.inner_optimizer).__name__)
        return own

    def _set_state_arrays(self, values, path):
        inner_class = str(values[_INNER_CLASS])
        if inner_class != type(self.inner_optimizer).__name__:
            raise self._bad_state(
                path, f"it was saved with inner optimizer {inner_class}, not "
                f"{type(self.inner_optimizer).__name__}")
        scale = np.float32(values[_SCALE])
        if not scale >= 0:
            raise self._bad_state(
                path, f"{_SCALE!r} must be >= 0 (inf included), got {scale!r}")
        counter = int(values[_COUNTER])
        if not 0 <= counter < self.dynamic_growth_steps:
            raise self._bad_state(
                path, f"{_COUNTER!r} must be in [0, dynamic_growth_steps = "
                f"{self.dynamic_growth_steps}), got {counter}")
        self.inner_optimizer._set_state_arrays(
            {key[len(_INNER):]: value for key, value in values.items()
             if key.startswith(_INNER)}, path)
        self._scale._value[()] = scale
        self._step_counter._value[()] = counter
        self._scale._bump()
        self._step_counter._bump()

    @staticmethod
    def _bad_state(path, what):
        return InvalidArgumentError(
            f"load_state: the state in {path!r} is invalid: {what}")
