"""The optimizer base class: validation, clipping, slots, step count, state.

``apply_gradients`` runs three stages, each testable alone (STYLE.md §9):

1. **validate and clip** every (gradient, variable) pair (``clipnorm`` and
   ``clipvalue`` with :mod:`sparsegrad.ops.clip_ops`; ``global_clipnorm`` as
   one scale per gradient, which the update kernels apply as they read each
   gradient row, so no scaled copy is written).  The clipping stage's result
   for each gradient is a :class:`GradientStage` (its scale, and the
   grouping of a sparse gradient's indices when one was computed: by the
   global norm, or by a clip op before the step), passed explicitly; the
   optimizer keeps no per-call state.  Then **prepare** the update of
   every pair: the subclass's ``_prepare_dense`` / ``_prepare_sparse``
   hand the checked arrays, the stage and the hyper-parameters to a
   raw op's spec (:meth:`~sparsegrad.training.training_ops.core.Spec.prepare_trusted`),
   which rounds and checks the hyper-parameters in the variable's dtype.
   Nothing has been written yet, and slots of new variables are not yet
   registered: on any error every variable and slot is unchanged (DESIGN
   invariant 3), whichever pair failed;
2. **update**: the prepared kernels run, one per pair; sparse gradients run
   with ``coalesce_duplicates=True``, so repeated indices are summed and
   applied once per distinct row inside the kernel;
3. **count**: ``iterations`` goes up by one.

A subclass declares its per-variable slots as a ``NamedTuple`` (``State``)
whose fields are TensorFlow's slot names; the default ``_create_slots``
makes each a slot of the variable's shape (filled with 0, or with the
attribute ``_initial_slot_values`` names), and a subclass whose slots are
optional or shaped otherwise overrides it.

A Variable that holds a cupy array trains on the GPU: its slots are made on
the device, its gradients (cupy arrays, or IndexedSlices of them) stay there
and the raw ops run the kernels of :mod:`sparsegrad._cuda.training`, with the
CPU's bits; hyper-parameters and schedules stay on the host.  The backend is
chosen once per (gradient, variable) pair, where the gradient is checked, and
travels in its :class:`GradientStage`.  A gradient on the other device than
its variable raises ValueError (nothing is copied).

The parts: :mod:`.stages` (the clipping stage and :class:`GradientStage`),
:mod:`.state` (``save_state`` / ``load_state``) and :mod:`.checks` (the
hyper-parameter checks, :func:`check_number`).
"""

import inspect
import math

import numpy as np

from ...autodiff.tape import GradientTape
from ...errors import InvalidArgumentError, NotFoundError
from ...framework import sparse_rows
from ...framework.backend import backend_of
from ...framework.dtypes import FLOAT_DTYPES, HALF_DTYPES, is_half
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import Tensor
from ...framework.variable import Variable
from ..training_ops import core, mixed
from . import schedules as _schedules
from . import state as saved_state
from .checks import (
    check_clip,
    check_learning_rate,
    check_number,
    check_slot_dtype,
    gradient_pairs,
    parameters_section,
)
from .stages import UNIT_STAGE, GradientStage, clip_gradients, global_clip_scales

__all__ = ["GradientStage", "Optimizer", "check_number"]


class Optimizer:
    """Base class of the Keras-style optimizers.

    Subclasses set ``State`` (a NamedTuple of slot Variables; see
    ``_create_slots`` and ``_initial_slot_values``), and implement
    ``_prepare_dense(grad, var, state, lr, stage)``
    and ``_prepare_sparse(values, indices, var, state, lr, stage)`` (`stage`:
    a :class:`GradientStage`), which check
    everything and return the list of zero-argument callables that perform
    the update (see :meth:`_op`); constructor hyper-parameters are stored as
    attributes and listed in ``_config_keys``.

    Parameters
    ----------
    learning_rate : float, LearningRateSchedule or callable
        A non-negative float, or a function of the step count (the number of
        completed :meth:`apply_gradients` calls) returning one.
    name : str
    clipnorm : float, optional
        Clip each gradient to this L2 norm.
    clipvalue : float, optional
        Clip each gradient element to ``[-clipvalue, clipvalue]``.
    global_clipnorm : float, optional
        Clip all gradients together to this global L2 norm
        (:func:`sparsegrad.clip_by_global_norm`, in the variables' dtype, or
        float64 when they differ), fused into the update kernels.  At most
        one of the three clipping arguments may be set.
    slot_dtype : {None, "float32", "float16", "bfloat16"}, optional
        The slots of a float16 or bfloat16 variable: float32 (None, the
        default) or the variable's own half type.  Slots of float32 and
        float64 variables always have the variable's dtype.
    stochastic_rounding : bool, default=False
        How a half variable's new values (and half slots) are stored:
        rounded to nearest (ties to even), or stochastically.
    seed : int, default=0
        The seed of stochastic rounding, in [0, 2**64).

    Notes
    -----
    **Half-precision variables.**  A float16 or bfloat16 variable trains in
    *mixed precision*: each update reads the variable (and half slots) as
    float32, computes in float32 with hyper-parameters rounded to float32,
    and stores each result rounded once.  So the step is the float32
    optimizer's on upcast arrays, then one rounding per stored value.  Its
    gradient may be float32 or the variable's type (dense or IndexedSlices;
    any other dtype is converted to float32).  Stochastic rounding stores a
    value as its upper neighbour with probability proportional to its
    distance from the lower one (16 random bits for bfloat16, 13 for
    float16), so that updates smaller than half a unit in the last place are
    kept on average instead of lost; its random words are a hash of the
    seed, the step count, the variable's index among the optimizer's
    variables (:meth:`tracked_variables`), the array (the variable or one of
    its slots) and the element's position, so the bits are the same for any
    thread count, CPU or GPU (see the user guide's "Half-precision tables").
    AdamW's decay of a half variable is a store of its own, as Keras's
    decoupled decay is an assignment of its own.

    For an ``IndexedSlices`` gradient, clipping acts on the tensor it
    represents (repeated indices summed first; DESIGN.md), and the gradient
    stays sparse.

    State: the slots of each variable (a ``<Name>State`` NamedTuple of slot
    Variables, :meth:`get_state`; one slot by TensorFlow's name,
    :meth:`get_slot`) and the step count :attr:`iterations`, which goes up
    once per :meth:`apply_gradients`.  :meth:`save_state` writes them to an
    ``.npz`` file and :meth:`load_state` restores them, after which training
    continues bit for bit as if it had not been interrupted.

    Examples
    --------
    >>> w = sg.Variable(np.ones((3, 2)))
    >>> opt = sg.optimizers.Adam(learning_rate=0.1, lazy=True)
    >>> grad = sg.IndexedSlices(np.ones((2, 2)), [2, 2])   # row 2, twice
    >>> _ = opt.apply_gradients([(grad, w)])
    >>> opt.get_slot(w, "m").numpy()[:, 0]    # one update with the summed row
    array([0. , 0. , 0.2])
    >>> import io
    >>> buf = io.BytesIO()
    >>> opt.save_state(buf)
    >>> _ = buf.seek(0)
    >>> again = sg.optimizers.Adam.from_config(opt.get_config())
    >>> again.load_state(buf, [w])
    >>> again.iterations_count, again.get_config()["lazy"]
    (1, True)
    """

    #: NamedTuple of the slots of one variable; subclasses override.
    State = None
    #: Keras 3 slot names accepted by :meth:`get_slot` as aliases.
    _slot_aliases = {}
    #: Constructor hyper-parameters beyond the common ones: name -> Hyper.
    _hyperparameters = {}
    #: Constructor arguments beyond the common ones, for get_config (the keys
    #: of ``_hyperparameters``, unless a subclass sets it itself).
    _config_keys = ()
    #: Slot name -> the attribute holding its initial value (default 0).
    _initial_slot_values = {}
    #: Further text on the learning rate for the generated docstring.
    _learning_rate_note = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_hyperparameters" not in cls.__dict__:
            return
        cls._config_keys = tuple(cls._hyperparameters)
        doc = inspect.cleandoc(cls.__doc__ or "")
        if "\nParameters\n---" not in doc:
            head, examples, tail = doc.partition("\nExamples\n--------\n")
            section = parameters_section(cls, cls._learning_rate_note)
            cls.__doc__ = f"{head.rstrip()}\n\n{section}{examples}{tail}"

    def __init__(self, learning_rate, name, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, slot_dtype=None, stochastic_rounding=False,
                 seed=0, **hyperparameters):
        if not isinstance(name, str):
            raise InvalidArgumentError(f"name must be a str, got {name!r}")
        self._learning_rate = check_learning_rate(learning_rate)
        self.name = name
        self.clipnorm = check_clip(clipnorm, "clipnorm")
        self.clipvalue = check_clip(clipvalue, "clipvalue")
        self.global_clipnorm = check_clip(global_clipnorm, "global_clipnorm")
        given = [k for k in ("clipnorm", "clipvalue", "global_clipnorm")
                 if getattr(self, k) is not None]
        if len(given) > 1:
            raise InvalidArgumentError(
                f"only one of clipnorm, clipvalue and global_clipnorm can be set; "
                f"got {', '.join(f'{k}={getattr(self, k)!r}' for k in given)}"
            )
        if not callable(self._learning_rate):
            self._validate_learning_rate(self._learning_rate)
        self.slot_dtype = check_slot_dtype(slot_dtype)
        self.stochastic_rounding = bool(stochastic_rounding)
        self.seed = mixed.check_seed(seed)
        self._store_hyperparameters(hyperparameters)
        self._iterations = Variable(np.int64(0), trainable=False, name="iterations")
        # uid -> (variable, State); dicts keep the order variables were first seen.
        self._slots = {}

    # -- hyper-parameters ------------------------------------------------------

    def _store_hyperparameters(self, values):
        """Check each of `values` (name -> value) by its declaration in
        ``_hyperparameters`` and store it as an attribute."""
        for key, value in values.items():
            setattr(self, key, self._hyperparameters[key].check(value, key))

    @property
    def learning_rate(self):
        """The learning rate: a float, a schedule or a callable of the step."""
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        value = check_learning_rate(value)
        if not callable(value):
            self._validate_learning_rate(value)
        self._learning_rate = value

    def current_learning_rate(self):
        """The learning rate the next step will use, as a Python float."""
        lr = self._learning_rate
        if callable(lr):
            value = lr(self.iterations_count)
            try:
                value = float(np.asarray(value))
            except (TypeError, ValueError):
                raise InvalidArgumentError(
                    f"the learning-rate callable returned {value!r} at step "
                    f"{self.iterations_count}; expected a number"
                ) from None
            if not (value >= 0 and math.isfinite(value)):
                raise InvalidArgumentError(
                    f"the learning-rate callable returned {value!r} at step "
                    f"{self.iterations_count}; expected a finite number >= 0"
                )
            return value
        return lr

    @staticmethod
    def _hyper(value, dtype):
        """A hyper-parameter as a NumPy scalar of the variable's dtype (which
        numpy and cupy arrays both take as an operand)."""
        return np.dtype(dtype).type(value)

    # -- slots and variables ---------------------------------------------------

    @property
    def iterations(self):
        """The step count: a scalar int64 :class:`~sparsegrad.Variable`."""
        return self._iterations

    @property
    def iterations_count(self):
        """The step count as a Python int."""
        return int(self._iterations._value)

    def _slot_dtype(self, var):
        """The dtype of `var`'s slots: var's own, or for a half variable
        float32 or (``slot_dtype``) var's half type."""
        if not is_half(var.dtype):
            return var.dtype
        if self.slot_dtype is None or self.slot_dtype == mixed.MATH_DTYPE:
            return mixed.MATH_DTYPE
        if self.slot_dtype != var.dtype:
            raise InvalidArgumentError(
                f"slot_dtype {self.slot_dtype} does not match variable {var.name!r} "
                f"of dtype {var.dtype}; half slots have the variable's type "
                "(or leave slot_dtype=None for float32 slots)")
        return var.dtype

    @staticmethod
    def _math_dtype(var):
        """The dtype `var`'s updates compute in: float32 for a half variable
        (mixed precision), else var's."""
        return mixed.MATH_DTYPE if is_half(var.dtype) else var.dtype

    def _slot_variable(self, var, slot_name, fill=0.0, shape=None):
        """A slot Variable of :meth:`_slot_dtype` filled with `fill` (rounded
        to it once)."""
        shape = var.shape if shape is None else shape
        xp = backend_of(var._value).xp
        return Variable(xp.full(shape, fill, dtype=self._slot_dtype(var)),
                        trainable=False, name=f"{var.name}/{slot_name}")

    def _create_slots(self, var):
        """The State of a new variable `var`: by default every field of
        ``State`` is a slot of var's shape, filled with the attribute that
        ``_initial_slot_values`` names for it, or with 0."""
        fills = {field: getattr(self, attribute)
                 for field, attribute in self._initial_slot_values.items()}
        return self.State(*(self._slot_variable(var, field, fills.get(field, 0.0))
                            for field in self.State._fields))

    def _state(self, var):
        """The State of `var`, creating its slots on first use."""
        entry = self._slots.get(var._uid)
        if entry is None:
            entry = (var, self._create_slots(var))
            self._slots[var._uid] = entry
        return entry[1]

    def build(self, var_list):
        """Create the slots of every variable in `var_list` now (optional).

        Slots are otherwise created lazily by the first gradient of each
        variable; building first fixes the order used by :meth:`save_state`.
        """
        for var in var_list:
            self._check_variable(var, "var_list entry")
            self._state(var)

    def get_slot_names(self):
        """The slot names this optimizer creates (TensorFlow's names)."""
        return list(self.State._fields)

    def get_slot(self, var, slot_name):
        """The slot Variable `slot_name` of `var`.

        Slot names follow TensorFlow (``"m"``, ``"v"``, ``"accumulator"``,
        ...); Keras 3's names are accepted as aliases.

        Raises
        ------
        NotFoundError
            If `var` has no slots yet (no gradient applied) or the optimizer
            has no slot of that name for it.
        """
        entry = self._slots.get(getattr(var, "_uid", None))
        if entry is None:
            raise NotFoundError(
                f"{type(self).__name__} has no slots for variable "
                f"{getattr(var, 'name', var)!r}; slots are created by the first "
                "apply_gradients (or build) that includes it"
            )
        field = self._slot_aliases.get(slot_name, slot_name)
        slot = getattr(entry[1], field, None) if field in entry[1]._fields else None
        if slot is None:
            available = [
                f for f in entry[1]._fields if getattr(entry[1], f) is not None
            ]
            raise NotFoundError(
                f"{type(self).__name__} has no slot {slot_name!r} for variable "
                f"{entry[0].name!r}; its slots are {available}"
            )
        return slot

    def get_state(self, var):
        """The ``State`` NamedTuple (slot Variables) of `var`, or None."""
        entry = self._slots.get(getattr(var, "_uid", None))
        return None if entry is None else entry[1]

    def tracked_variables(self):
        """The model variables with slots, in the order they were first seen."""
        return [var for var, _ in self._slots.values()]

    def variables(self):
        """The optimizer's own variables: ``iterations``, then every slot."""
        out = [self._iterations]
        for _, state in self._slots.values():
            out.extend(slot for slot in state if slot is not None)
        return out

    # -- validation ------------------------------------------------------------

    @staticmethod
    def _check_variable(var, what):
        if not isinstance(var, Variable):
            raise TypeError(
                f"{what} must be a sparsegrad.Variable, got {type(var).__name__}"
            )
        if var._value.dtype not in FLOAT_DTYPES + HALF_DTYPES:
            raise InvalidArgumentError(
                f"variable {var.name!r} has dtype {var.dtype}; optimizers update "
                "float16, bfloat16, float32 and float64 variables"
            )

    def _as_gradient(self, grad, var):
        """Check `grad` against `var`, then convert it: an ndarray of var's
        dtype, or for an IndexedSlices a ``(values, indices, slices)`` triple
        (values C-contiguous in var's dtype, indices in range, and the
        IndexedSlices of those indices, which keeps their grouping:
        :meth:`IndexedSlices._row_groups`), with the backend of var and the
        gradient, chosen here once (a host gradient of a device variable, or
        the reverse, raises ValueError: nothing is copied between host and
        device).  Everything is checked before anything is converted or
        copied."""
        if isinstance(grad, IndexedSlices):
            values = grad._values._value
            target = var._value
            shape = target.shape
            if not shape:
                raise InvalidArgumentError(
                    f"variable {var.name!r} is a scalar and cannot take an "
                    "IndexedSlices gradient"
                )
            if values.shape[1:] != shape[1:]:
                raise InvalidArgumentError(
                    f"var and grad do not have the same shape: the IndexedSlices "
                    f"gradient of {var.name!r} has rows of shape {values.shape[1:]}, "
                    f"the variable {shape}"
                )
            dense_shape = grad._dense_shape
            indices = grad._indices._value
            be = backend_of(target, values, indices)
            if dense_shape is None:
                sparse_rows.check_in_range(indices, shape[0], "indices", be)
            elif dense_shape != shape:
                raise InvalidArgumentError(
                    f"var and grad do not have the same shape: IndexedSlices "
                    f"dense_shape {dense_shape} vs variable "
                    f"{var.name!r} of shape {shape}"
                )
            # else: an IndexedSlices with a dense_shape holds indices in
            # [0, dense_shape[0]) (checked when it was made).
            dtype = _gradient_dtype(values.dtype, target.dtype)
            if values.dtype != dtype or not values.flags.c_contiguous:
                values = be.xp.ascontiguousarray(values.astype(dtype, copy=False))
            return (self._unaliased(values, var, be), indices, grad), be
        if isinstance(grad, (Variable, Tensor)):
            grad = grad._value
        be = backend_of(var._value, grad)
        try:
            array = grad if be.on_gpu else np.asarray(grad)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"the gradient of {var.name!r} is not convertible to an array: {exc}"
            ) from None
        if array.dtype.kind not in "fiub" and not is_half(array.dtype):
            raise InvalidArgumentError(
                f"the gradient of {var.name!r} has dtype {array.dtype}; expected a "
                "real floating dtype"
            )
        if array.shape != var.shape:
            raise InvalidArgumentError(
                f"var and grad do not have the same shape: variable {var.name!r} "
                f"has shape {var.shape}, its gradient {array.shape}"
            )
        dtype = _gradient_dtype(array.dtype, var.dtype)
        if not be.on_gpu:
            # np.asarray, not np.ascontiguousarray: the latter makes a 0-d
            # array 1-D.
            array = np.asarray(array, dtype=dtype, order="C")
        elif array.dtype != dtype or not array.flags.c_contiguous:
            array = array.astype(dtype, order="C")
        return self._unaliased(array, var, be), be

    def _unaliased(self, array, var, be):
        """`array`, copied where it may share memory with `var` or one of its
        slots (e.g. ``var.value()``), which the update kernel writes."""
        entry = self._slots.get(var._uid)
        written = [var._value]
        if entry is not None:
            written += [s._value for s in entry[1] if s is not None]
        for buffer in written:
            if be.xp.may_share_memory(array, buffer):
                return array.copy()
        return array

    # -- the three stages ------------------------------------------------------

    def apply_gradients(self, grads_and_vars):
        """Apply one step of the optimizer.

        Parameters
        ----------
        grads_and_vars : iterable of (gradient, Variable)
            A gradient is array_like or a Tensor of the variable's shape, an
            :class:`~sparsegrad.IndexedSlices` of rows of it, or None (that
            variable is skipped).  Sparse gradients are summed per row and
            applied once per distinct row, inside the update kernel.

        Returns
        -------
        Variable
            :attr:`iterations`, incremented by one unless every gradient was
            None.

        Raises
        ------
        InvalidArgumentError
            If a gradient does not match its variable (shape, row shape,
            index range, dtype) or the same variable appears twice.  Nothing
            is updated then.
        """
        pairs = []
        seen = set()
        for k, grad, var in gradient_pairs(grads_and_vars):
            self._check_variable(var, f"grads_and_vars[{k}][1]")
            if grad is None:
                continue
            if var._uid in seen:
                raise InvalidArgumentError(
                    f"variable {var.name!r} appears twice in grads_and_vars; sum its "
                    "gradients first"
                )
            seen.add(var._uid)
            pairs.append((*self._as_gradient(grad, var), var))
        if not pairs:
            return self._iterations
        lr = self.current_learning_rate()
        self._validate_learning_rate(lr)
        for dtype in {self._math_dtype(var) for _, _, var in pairs}:
            self._validate_learning_rate_in(lr, dtype)
        grads = [g for g, _, _ in pairs]
        variables = [var for _, _, var in pairs]
        scales = [1.0] * len(pairs)
        if self.global_clipnorm is not None:
            # The indices of each sparse gradient are grouped once (or not
            # at all, when a clip op has grouped them already): for the norm
            # of the tensor it represents, and for the update kernel, which
            # coalesces on these groups.
            groups = [g[2]._row_groups(var.shape[0] - 1, be)
                      if isinstance(g, tuple) else None for g, be, var in pairs]
            scales = global_clip_scales(grads, variables, groups,
                                        self.global_clipnorm,
                                        [self._math_dtype(v) for v in variables])
        elif self.clipnorm is not None or self.clipvalue is not None:
            grads = clip_gradients(grads, [var.shape for var in variables],
                                   self.clipnorm, self.clipvalue)
        # Prepare every update before running any: slots of new variables are
        # registered, and kernels run, only when every pair has passed.
        new_slots = {}
        updates = []
        indices = None      # the variables' numbers, for half ones alone
        for grad, scale, (_, be, var) in zip(grads, scales, pairs):
            entry = self._slots.get(var._uid)
            if entry is None:
                entry = new_slots[var._uid] = (var, self._create_slots(var))
            rounding = None
            if is_half(var.dtype):
                if indices is None or var._uid not in indices:
                    indices = {uid: k for k, uid in enumerate(
                        [*self._slots, *new_slots])}
                rounding = self._rounding(var, indices[var._uid])
            if isinstance(grad, tuple):
                # The update kernel coalesces on the groups the gradient
                # carries (the global norm, or a clip op before this step,
                # made them); without any, it groups the rows itself as it
                # applies them (the by-row kernels).
                stage = GradientStage(scale, grad[1], grad[2]._groups, be, rounding)
                updates += self._prepare_sparse(grad[0], grad[1], var, entry[1],
                                                lr, stage)
            else:
                stage = (UNIT_STAGE if scale == 1.0 and not be.on_gpu
                         and rounding is None
                         else GradientStage(scale, backend=be, rounding=rounding))
                updates += self._prepare_dense(grad, var, entry[1], lr, stage)
        self._slots.update(new_slots)
        for update in updates:
            update()
        self._finish_step()
        count = self._iterations._value
        count[()] = int(count) + 1
        self._iterations._bump()
        return self._iterations

    def _rounding(self, var, index):
        """How the update of `var` (the optimizer's variable number `index`)
        stores: None for a float32 or float64 variable, else a
        :class:`~sparsegrad.training.training_ops.mixed.Rounding`."""
        if not is_half(var.dtype):
            return None
        if not self.stochastic_rounding:
            return mixed.NEAREST
        return mixed.Rounding(True, self.seed, self.iterations_count, index)

    def _finish_step(self):
        """Hook: advance the optimizer's own state (not a slot) once per step
        that updated something, after the updates and before the count goes
        up (Nadam's ``u_product``)."""

    def _state_arrays(self):
        """Hook: the optimizer's own state beyond the slots and the count,
        name -> NumPy array, for :meth:`save_state` and :meth:`load_state`."""
        return {}

    def _set_state_arrays(self, values, path):
        """Hook: check `values` (arrays of :meth:`_state_arrays`' names,
        shapes and dtypes, read by :meth:`load_state` from `path`) and only
        then replace the state with them; raise InvalidArgumentError on a bad
        value, changing nothing."""
        del values, path

    def _validate_learning_rate(self, lr):
        """Hook: reject a learning rate the update kernels cannot take."""
        del lr

    def _positive_learning_rate(self, lr):
        """A :meth:`_validate_learning_rate` for the optimizers whose kernels
        need a learning rate > 0 (a subclass assigns it to that name)."""
        if not lr > 0:
            raise self._lr_error(lr, "> 0")

    def _validate_learning_rate_in(self, lr, dtype):
        """The learning rate as the kernels of `dtype` see it (rounded to it)
        must pass :meth:`_validate_learning_rate` too: 1e-50 is positive, but
        0 in float32."""
        rounded = core.round_to(float(lr), dtype)
        if rounded == lr:
            return
        try:
            self._validate_learning_rate(rounded)
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(
                f"{exc} (the learning rate {lr!r} is {rounded!r} in {dtype}, the "
                "dtype of a variable)"
            ) from None

    def _lr_error(self, lr, expected):
        where = ""
        if hasattr(self, "_iterations"):
            where = f" at step {self.iterations_count}"
        return InvalidArgumentError(
            f"{type(self).__name__} needs learning_rate {expected}, got {lr!r}{where}"
        )

    def _prepare_dense(self, grad, var, state, lr, stage):
        """The update of `var` by the dense `grad`, checked: a list of
        zero-argument callables that run it.  `stage` (a
        :class:`GradientStage`) goes to :meth:`_op` with the gradient."""
        raise NotImplementedError

    def _prepare_sparse(self, values, indices, var, state, lr, stage):
        """The update of the rows `indices` of `var` by `values`, checked (see
        :meth:`_prepare_dense`)."""
        raise NotImplementedError

    def _prepare_densified(self, values, indices, var, state, lr, stage,
                           prepare_dense=None):
        """The update of a sparse gradient under the dense semantics (the
        non-lazy form of Adam, Nadam, Lion: every row's moments decay): its
        rows summed into a dense gradient on the stage's backend, then
        `prepare_dense` (default :meth:`_prepare_dense`).  Costs O(table
        size), as the optimizers' docstrings say."""
        dtype = self._math_dtype(var)
        dense = stage.backend.xp.zeros(var.shape, dtype)
        sparse_rows.scatter_add(dense, indices, stage.scaled(values.astype(dtype)),
                                be=stage.backend)
        return (prepare_dense or self._prepare_dense)(dense, var, state, lr,
                                                      stage.unscaled())

    def _op(self, stage, spec, var, slots, grad, indices=None, **hyper):
        """Prepare raw op `spec` on arrays the optimizer has checked: only its
        hyper-parameter checks run, in var's dtype.  Returns the callable
        that runs the kernel (sparse ops coalesce repeated indices); the
        kernel multiplies the gradient by ``stage.scale`` as it reads it, and
        coalesces on the stage's groups of `indices` where there are some,
        on the stage's backend."""
        return spec.prepare_trusted(var, slots, grad, indices, hyper,
                                    grad_scale=stage.scale,
                                    groups=stage.groups_of(indices),
                                    be=stage.backend, rounding=stage.rounding).run

    def minimize(self, loss, var_list, tape=None):
        """Compute the gradient of `loss` and apply it.

        Parameters
        ----------
        loss : callable or Tensor
            A function of no arguments returning the loss (evaluated under a
            tape), or a Tensor computed under `tape`.
        var_list : list of Variable, or a callable returning one
        tape : GradientTape, optional
            Required when `loss` is a Tensor.

        Returns
        -------
        Variable
            :attr:`iterations`.
        """
        loss, var_list, tape = self._loss_and_variables(loss, var_list, tape)
        grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))

    @staticmethod
    def _loss_and_variables(loss, var_list, tape):
        """:meth:`minimize`'s arguments resolved: the loss (a callable
        evaluated under the tape, which watches `var_list`), the variables
        as a list, and the tape (a new one unless given)."""
        if not callable(loss) and tape is None:
            raise InvalidArgumentError(
                "minimize: a tape is required when loss is a Tensor; pass "
                "tape=... or make loss a callable"
            )
        tape = tape if tape is not None else GradientTape()
        if callable(loss):
            with tape:
                if not callable(var_list):
                    tape.watch(var_list)
                loss = loss()
                if callable(var_list):
                    var_list = var_list()
        elif callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        return loss, var_list, tape

    # -- config ----------------------------------------------------------------

    def get_config(self):
        """The constructor arguments as a dict (schedules serialized)."""
        lr = self._learning_rate
        if isinstance(lr, _schedules.LearningRateSchedule):
            lr = _schedules.serialize(lr)
        config = {
            "name": self.name,
            "learning_rate": lr,
            "clipnorm": self.clipnorm,
            "clipvalue": self.clipvalue,
            "global_clipnorm": self.global_clipnorm,
            "slot_dtype": None if self.slot_dtype is None else self.slot_dtype.name,
            "stochastic_rounding": self.stochastic_rounding,
            "seed": self.seed,
        }
        for key in self._config_keys:
            config[key] = getattr(self, key)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Build an optimizer from :meth:`get_config`'s dict (no state)."""
        config = dict(config)
        lr = config.get("learning_rate")
        if isinstance(lr, dict):
            config["learning_rate"] = _schedules.deserialize(lr, custom_objects)
        return cls(**config)

    # -- state -----------------------------------------------------------------

    save_state = saved_state.save_state
    load_state = saved_state.load_state


def _gradient_dtype(given, var_dtype):
    """The dtype a gradient of dtype `given` is applied in to a variable of
    `var_dtype`: var's; for a half variable, `given` when it is var's type
    or float32, else float32 (mixed precision)."""
    if not is_half(var_dtype):
        return var_dtype
    return given if given in (var_dtype, mixed.MATH_DTYPE) else mixed.MATH_DTYPE
