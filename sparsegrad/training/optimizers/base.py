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
whose fields are TensorFlow's slot names and creates them in
``_create_slots``.

A Variable that holds a cupy array trains on the GPU: its slots are made on
the device, its gradients (cupy arrays, or IndexedSlices of them) stay there
and the raw ops run the kernels of :mod:`sparsegrad._cuda.training`, with the
CPU's bits; hyper-parameters and schedules stay on the host.  A gradient on
the other device than its variable raises ValueError (nothing is copied).
"""

import json
import math
import numbers
import os
from typing import NamedTuple

import numpy as np

from ...autodiff.tape import GradientTape
from ...errors import InvalidArgumentError, NotFoundError
from ...framework import backend, sparse_rows
from ...framework.archives import NpzArchive
from ...framework.dtypes import FLOAT_DTYPES
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import Tensor
from ...framework.variable import Variable
from ...ops import clip_ops
from ..training_ops import arrays, core
from . import schedules as _schedules

__all__ = ["GradientStage", "Optimizer"]


class GradientStage(NamedTuple):
    """What the clipping stage of :meth:`Optimizer.apply_gradients` hands to
    the update of one gradient, explicitly (the optimizer keeps no per-call
    state): the factor the update kernel multiplies the gradient by as it
    reads it (``global_clipnorm``; 1.0 otherwise) and, for a sparse
    gradient, its indices and their grouping
    (:func:`~sparsegrad.framework.sparse_rows.group_rows`), on which the
    kernel coalesces, or None.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.training.optimizers.base import GradientStage
    >>> GradientStage(0.5).scaled(np.array([2.0, 4.0]))
    array([1., 2.])
    """

    scale: float = 1.0
    indices: object = None
    groups: tuple = None

    def scaled(self, values):
        """`values` times :attr:`scale` (each product rounded to their dtype):
        for an update that combines the gradient itself before its kernel
        (non-lazy Adam densifies a sparse one), which then runs with
        :meth:`unscaled`."""
        if self.scale == 1.0:
            return values
        return values * values.dtype.type(self.scale)

    def unscaled(self):
        """This stage with the scale 1.0 (already applied by :meth:`scaled`)
        and no groups."""
        return _UNIT_STAGE

    def groups_of(self, indices):
        """The grouping of `indices` when they are this stage's, else None."""
        return self.groups if indices is self.indices else None


# The stage of a gradient that nothing scales or groups.
_UNIT_STAGE = GradientStage()

_STATE_FORMAT = "sparsegrad.optimizer_state/1"


def _host(array):
    """A numpy copy of a cupy array; a numpy array as it is."""
    return array.get() if backend.is_cupy_array(array) else array


def check_number(value, name, *, low=None, high=None, low_open=False, high_open=False):
    """A finite real hyper-parameter within bounds, as a Python float.

    Raises InvalidArgumentError naming `name` and the value otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise InvalidArgumentError(f"{name} must be finite, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        relation = ">" if low_open else ">="
        raise InvalidArgumentError(f"{name} must be {relation} {low}, got {value!r}")
    if high is not None and (value >= high if high_open else value > high):
        relation = "<" if high_open else "<="
        raise InvalidArgumentError(f"{name} must be {relation} {high}, got {value!r}")
    return value


def _check_learning_rate(learning_rate):
    if isinstance(learning_rate, _schedules.LearningRateSchedule):
        return learning_rate
    if callable(learning_rate):
        return learning_rate
    return check_number(learning_rate, "learning_rate", low=0.0)


def _check_clip(value, name):
    if value is None:
        return None
    return check_number(value, name, low=0.0, low_open=True)


def _bad_state(path, what):
    return InvalidArgumentError(f"load_state: the state in {path!r} is invalid: {what}")


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# Each saved variable's fields: (what they must be, the check).
_SAVED_VARIABLE_FIELDS = {
    "name": ("a string", lambda v: isinstance(v, str)),
    "shape": ("a list of non-negative ints",
              lambda v: isinstance(v, list) and all(map(_is_count, v))),
    "dtype": ("a string", lambda v: isinstance(v, str)),
    "slots": ("a list of strings",
              lambda v: isinstance(v, list)
              and all(isinstance(s, str) for s in v)),
}


def _read_meta(archive, path):
    """The checked ``meta`` dict of a state file (an open NpzArchive); its
    header is checked before its data is read."""
    def not_a_state(what):
        return InvalidArgumentError(
            f"load_state: {path!r} is not a sparsegrad optimizer state file: {what}"
        )

    header = archive.header("meta")
    if header is None:
        raise not_a_state("it has no 'meta' array")
    shape, dtype = header
    if shape != () or dtype.kind != "U":
        raise not_a_state(
            f"'meta' must be a 0-d string array, got shape {shape} dtype {dtype}"
        )
    (meta,) = archive.read("meta")
    try:
        meta = json.loads(meta.item())
    except ValueError as exc:
        raise not_a_state(f"'meta' is not valid JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise not_a_state(f"'meta' is not a JSON object: {meta!r}")
    if meta.get("format") != _STATE_FORMAT:
        raise not_a_state(
            f"meta 'format' is {meta.get('format')!r}, expected {_STATE_FORMAT!r}"
        )
    if not isinstance(meta.get("class"), str):
        raise _bad_state(path, f"meta 'class' is missing or not a string: "
                               f"{meta.get('class')!r}")
    if not isinstance(meta.get("variables"), list):
        raise _bad_state(path, f"meta 'variables' is missing or not a list: "
                               f"{meta.get('variables')!r}")
    for k, info in enumerate(meta["variables"]):
        where = f"meta 'variables'[{k}]"
        if not isinstance(info, dict):
            raise _bad_state(path, f"{where} is not an object: {info!r}")
        for key, (expected, ok) in _SAVED_VARIABLE_FIELDS.items():
            if key not in info:
                raise _bad_state(path, f"{where} has no {key!r}")
            if not ok(info[key]):
                raise _bad_state(
                    path, f"{where} {key!r} must be {expected}, got {info[key]!r}"
                )
    return meta


def _read_iterations(archive, path):
    """The saved step count, checked to be an int64 value >= 0 (its header
    first)."""
    header = archive.header("iterations")
    if header is None:
        raise _bad_state(path, "it has no 'iterations' array")
    shape, dtype = header
    if shape != () or dtype.kind not in "iu":
        raise _bad_state(
            path, f"'iterations' must be a 0-d integer array, got shape "
            f"{shape} dtype {dtype}"
        )
    (iterations,) = archive.read("iterations")
    value = int(iterations)
    if not 0 <= value <= sparse_rows.INT64_MAX:
        raise _bad_state(
            path, f"'iterations' must be in [0, 2**63 - 1] (int64), got {value}"
        )
    return np.int64(value)


class Optimizer:
    """Base class of the Keras-style optimizers.

    Subclasses set ``State`` (a NamedTuple of slot Variables), and implement
    ``_create_slots(var)``, ``_prepare_dense(grad, var, state, lr, stage)``
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

    Notes
    -----
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
    #: Constructor arguments beyond the common ones, for get_config.
    _config_keys = ()
    def __init__(self, learning_rate, name, clipnorm=None, clipvalue=None,
                 global_clipnorm=None):
        if not isinstance(name, str):
            raise InvalidArgumentError(f"name must be a str, got {name!r}")
        self._learning_rate = _check_learning_rate(learning_rate)
        self.name = name
        self.clipnorm = _check_clip(clipnorm, "clipnorm")
        self.clipvalue = _check_clip(clipvalue, "clipvalue")
        self.global_clipnorm = _check_clip(global_clipnorm, "global_clipnorm")
        given = [k for k in ("clipnorm", "clipvalue", "global_clipnorm")
                 if getattr(self, k) is not None]
        if len(given) > 1:
            raise InvalidArgumentError(
                f"only one of clipnorm, clipvalue and global_clipnorm can be set; "
                f"got {', '.join(f'{k}={getattr(self, k)!r}' for k in given)}"
            )
        if not callable(self._learning_rate):
            self._validate_learning_rate(self._learning_rate)
        self._iterations = Variable(np.int64(0), trainable=False, name="iterations")
        # uid -> (variable, State); dicts keep the order variables were first seen.
        self._slots = {}

    # -- hyper-parameters ------------------------------------------------------

    @property
    def learning_rate(self):
        """The learning rate: a float, a schedule or a callable of the step."""
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        value = _check_learning_rate(value)
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

    def _slot_variable(self, var, slot_name, fill=0.0, shape=None):
        """A slot Variable of `var`'s dtype filled with `fill`."""
        shape = var.shape if shape is None else shape
        xp = backend.get_array_module(var._value)
        return Variable(xp.full(shape, fill, dtype=var.dtype), trainable=False,
                        name=f"{var.name}/{slot_name}")

    def _create_slots(self, var):
        raise NotImplementedError

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
        if var._value.dtype not in FLOAT_DTYPES:
            raise InvalidArgumentError(
                f"variable {var.name!r} has dtype {var.dtype}; optimizers update "
                "float32 and float64 variables"
            )

    def _as_gradient(self, grad, var):
        """Check `grad` against `var`, then convert it: an ndarray of var's
        dtype, or for an IndexedSlices a ``(values, indices, slices)`` triple
        (values C-contiguous in var's dtype, indices in range, and the
        IndexedSlices of those indices, which keeps their grouping:
        :meth:`IndexedSlices._row_groups`).  Everything is checked before
        anything is converted or copied."""
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
            # A numpy gradient of a cupy variable, or the reverse: ValueError
            # (nothing is copied between host and device).
            xp = backend.get_array_module(target, values, indices)
            if dense_shape is None:
                sparse_rows.check_in_range(indices, shape[0], "indices")
            elif dense_shape != shape:
                raise InvalidArgumentError(
                    f"var and grad do not have the same shape: IndexedSlices "
                    f"dense_shape {dense_shape} vs variable "
                    f"{var.name!r} of shape {shape}"
                )
            # else: an IndexedSlices with a dense_shape holds indices in
            # [0, dense_shape[0]) (checked when it was made).
            if values.dtype != target.dtype or not values.flags.c_contiguous:
                values = xp.ascontiguousarray(values.astype(target.dtype, copy=False))
            return self._unaliased(values, var), indices, grad
        if isinstance(grad, (Variable, Tensor)):
            grad = grad._value
        try:
            array = grad if backend.is_cupy_array(grad) else np.asarray(grad)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"the gradient of {var.name!r} is not convertible to an array: {exc}"
            ) from None
        if array.dtype.kind not in "fiub":
            raise InvalidArgumentError(
                f"the gradient of {var.name!r} has dtype {array.dtype}; expected a "
                "real floating dtype"
            )
        if array.shape != var.shape:
            raise InvalidArgumentError(
                f"var and grad do not have the same shape: variable {var.name!r} "
                f"has shape {var.shape}, its gradient {array.shape}"
            )
        if backend.get_array_module(var._value, array) is np:
            # np.asarray, not np.ascontiguousarray: the latter makes a 0-d
            # array 1-D.
            array = np.asarray(array, dtype=var.dtype, order="C")
        elif array.dtype != var.dtype or not array.flags.c_contiguous:
            array = array.astype(var.dtype, order="C")
        return self._unaliased(array, var)

    def _unaliased(self, array, var):
        """`array`, copied where it may share memory with `var` or one of its
        slots (e.g. ``var.value()``), which the update kernel writes."""
        entry = self._slots.get(var._uid)
        written = [var._value]
        if entry is not None:
            written += [s._value for s in entry[1] if s is not None]
        for buffer in written:
            if arrays.may_share_memory(array, buffer):
                return array.copy()
        return array

    # -- the three stages ------------------------------------------------------

    def _clip(self, grads, shapes):
        """Stage 1b, clipnorm and clipvalue: new clipped gradients for a list
        of validated ones (dense arrays and ``(values, indices, slices)``
        triples; `shapes` are the variables' shapes).  clipvalue coalesces an
        IndexedSlices first, so it bounds the rows of the represented tensor."""
        out = []
        for g, shape in zip(grads, shapes):
            sparse = isinstance(g, tuple)
            if sparse:
                g = IndexedSlices._from_trusted(g[0], g[1], shape, g[2]._groups)
            if self.clipnorm is not None:
                g = clip_ops.clip_by_norm(g, self.clipnorm)
            else:
                if sparse:
                    g = g.deduplicate()
                g = clip_ops.clip_by_value(g, -self.clipvalue, self.clipvalue)
            out.append((g.values._value, g.indices._value, g) if sparse
                       else g._value)
        return out

    def _global_clip_scales(self, grads, variables, groups):
        """Stage 1b, global_clipnorm: the scale of each gradient,
        TensorFlow's ``clip_by_global_norm`` formula in the variables' dtype
        (float64 when they differ), rounded to each variable's dtype.
        `groups` holds :func:`~sparsegrad.framework.sparse_rows.group_rows`
        of each sparse gradient's indices (None for a dense one)."""
        total = clip_ops.sum_of_squares([
            (g[0], g[1], var.shape[0], grouped) if isinstance(g, tuple) else g
            for g, var, grouped in zip(grads, variables, groups)])
        dtypes = {var.dtype for var in variables}
        dtype = dtypes.pop() if len(dtypes) == 1 else np.dtype(np.float64)
        scale = clip_ops.global_norm_scale(
            np.asarray(math.sqrt(total), dtype),
            np.asarray(self.global_clipnorm, dtype))
        return [float(scale.astype(var.dtype)) for var in variables]

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
        for k, pair in enumerate(grads_and_vars):
            try:
                grad, var = pair
            except (TypeError, ValueError):
                raise InvalidArgumentError(
                    f"grads_and_vars[{k}] must be a (gradient, variable) pair, got "
                    f"{pair!r}"
                ) from None
            self._check_variable(var, f"grads_and_vars[{k}][1]")
            if grad is None:
                continue
            if var._uid in seen:
                raise InvalidArgumentError(
                    f"variable {var.name!r} appears twice in grads_and_vars; sum its "
                    "gradients first"
                )
            seen.add(var._uid)
            pairs.append((self._as_gradient(grad, var), var))
        if not pairs:
            return self._iterations
        lr = self.current_learning_rate()
        self._validate_learning_rate(lr)
        for dtype in {var._value.dtype for _, var in pairs}:
            self._validate_learning_rate_in(lr, dtype)
        grads = [g for g, _ in pairs]
        scales = [1.0] * len(pairs)
        if self.global_clipnorm is not None:
            # The indices of each sparse gradient are grouped once (or not
            # at all, when a clip op has grouped them already): for the norm
            # of the tensor it represents, and for the update kernel, which
            # coalesces on these groups.
            groups = [g[2]._row_groups(var.shape[0] - 1)
                      if isinstance(g, tuple) else None for g, var in pairs]
            scales = self._global_clip_scales(grads, [var for _, var in pairs],
                                              groups)
        elif self.clipnorm is not None or self.clipvalue is not None:
            grads = self._clip(grads, [var.shape for _, var in pairs])
        # Prepare every update before running any: slots of new variables are
        # registered, and kernels run, only when every pair has passed.
        new_slots = {}
        updates = []
        for grad, scale, (_, var) in zip(grads, scales, pairs):
            entry = self._slots.get(var._uid)
            if entry is None:
                entry = new_slots[var._uid] = (var, self._create_slots(var))
            if isinstance(grad, tuple):
                # The update kernel coalesces on the groups the gradient
                # carries (the global norm, or a clip op before this step,
                # made them); without any, it groups the rows itself as it
                # applies them (the by-row kernels).
                stage = GradientStage(scale, grad[1], grad[2]._groups)
                updates += self._prepare_sparse(grad[0], grad[1], var, entry[1],
                                                lr, stage)
            else:
                stage = _UNIT_STAGE if scale == 1.0 else GradientStage(scale)
                updates += self._prepare_dense(grad, var, entry[1], lr, stage)
        self._slots.update(new_slots)
        for update in updates:
            update()
        count = self._iterations._value
        count[()] = int(count) + 1
        self._iterations._bump()
        return self._iterations

    def _validate_learning_rate(self, lr):
        """Hook: reject a learning rate the update kernels cannot take."""
        del lr

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

    def _op(self, stage, spec, var, slots, grad, indices=None, **hyper):
        """Prepare raw op `spec` on arrays the optimizer has checked: only its
        hyper-parameter checks run, in var's dtype.  Returns the callable
        that runs the kernel (sparse ops coalesce repeated indices); the
        kernel multiplies the gradient by ``stage.scale`` as it reads it, and
        coalesces on the stage's groups of `indices` where there are some."""
        return spec.prepare_trusted(var, slots, grad, indices, hyper,
                                    grad_scale=stage.scale,
                                    groups=stage.groups_of(indices)).run

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
        grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))

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

    def save_state(self, path):
        """Write the optimizer state to an ``.npz`` file.

        The file holds the step count, the learning rate (when it is a
        number), the class name, and every slot of every tracked
        variable in the order the optimizer first saw them (see
        :meth:`tracked_variables`).  Model variables are not saved.

        Parameters
        ----------
        path : str or os.PathLike or file-like
        """
        arrays = {"iterations": np.asarray(self._iterations._value, np.int64)}
        variables = []
        for k, (var, state) in enumerate(self._slots.values()):
            slots = []
            for field in state._fields:
                slot = getattr(state, field)
                if slot is not None:
                    arrays[f"slot/{k}/{field}"] = _host(slot._value)
                    slots.append(field)
            variables.append({"name": var.name, "shape": list(var.shape),
                              "dtype": var.dtype.name, "slots": slots})
        lr = self._learning_rate
        meta = {
            "format": _STATE_FORMAT,
            "class": type(self).__name__,
            "learning_rate": lr if isinstance(lr, float) else None,
            "variables": variables,
        }
        arrays["meta"] = np.asarray(json.dumps(meta))
        if isinstance(path, (str, os.PathLike)):
            with open(path, "wb") as f:
                np.savez(f, **arrays)
        else:
            np.savez(path, **arrays)

    def load_state(self, path, var_list=None):
        """Restore what :meth:`save_state` wrote; training then resumes exactly.

        The whole file is read and checked first; only then are the slots,
        the step count and the learning rate replaced, all together.

        Parameters
        ----------
        path : str or os.PathLike or file-like
        var_list : list of Variable, optional
            The model variables, in the order the saving optimizer first saw
            them (its :meth:`tracked_variables`).  Defaults to this
            optimizer's tracked variables, which must then number as many.
            Slots this optimizer held for other variables are dropped.

        Raises
        ------
        InvalidArgumentError
            Nothing is changed then: the slots (and their values), the step
            count and the learning rate stay as they were.  Raised if

            - `path` cannot be read as an ``.npz`` archive: it does not exist,
              is empty or corrupt, holds a single ``.npy`` array, holds
              object (pickled) arrays, or an entry's header declares more
              data than the entry holds (every header is read and checked
              before any data);
            - it is not a state :meth:`save_state` writes: no ``meta``, or
              ``meta`` not a JSON object with this ``format``, a string
              ``class`` and a list ``variables`` of objects with a string
              ``name`` and ``dtype``, a ``shape`` of ints >= 0 and a list of
              string ``slots``;
            - it was saved by another optimizer class, or with other slots
              (e.g. other hyper-parameters);
            - ``iterations`` is missing, not a 0-d integer array, negative or
              beyond int64;
            - a slot array is missing or its shape or dtype is not exactly
              that of the slot (read from its header, before its data);
            - the arrays need more memory than the process may allocate;
            - the saved learning rate is one the constructor would reject;
            - `var_list` differs from the saved variables in number, shape or
              dtype, or holds a variable twice.
        TypeError
            If an entry of `var_list` is not a Variable.
        """
        slots, iterations, learning_rate = self._read_state(path, var_list)
        self._slots = slots
        self._iterations._value[...] = iterations
        self._iterations._bump()
        if learning_rate is not None and not callable(self._learning_rate):
            self._learning_rate = learning_rate

    def _read_state(self, path, var_list):
        """Read and check a state for :meth:`load_state`, changing nothing.

        Returns the new ``_slots`` dict (new slot Variables), the step count
        and the saved learning rate (a float, or None).
        """
        with NpzArchive(
                path, "load_state: cannot read an optimizer state from") as archive:
            return self._read_archive(archive, path, var_list)

    def _read_archive(self, archive, path, var_list):
        """:meth:`_read_state` of an open archive: every header is checked
        against the variables before the slots' data is read."""
        meta = _read_meta(archive, path)
        if meta["class"] != type(self).__name__:
            raise InvalidArgumentError(
                f"load_state: the state in {path!r} was saved by {meta['class']}, "
                f"not {type(self).__name__}"
            )
        iterations = _read_iterations(archive, path)
        learning_rate = meta.get("learning_rate")
        if learning_rate is not None:
            try:
                learning_rate = check_number(learning_rate, "learning_rate", low=0.0)
                self._validate_learning_rate(learning_rate)
            except (InvalidArgumentError, OverflowError) as exc:
                raise _bad_state(path, f"saved learning_rate: {exc}") from None
        saved = meta["variables"]
        var_list = self.tracked_variables() if var_list is None else list(var_list)
        if len(var_list) != len(saved):
            raise InvalidArgumentError(
                f"load_state: the state in {path!r} holds slots for {len(saved)} "
                f"variables, var_list has {len(var_list)}"
            )
        new_slots, targets = {}, []
        for k, (var, info) in enumerate(zip(var_list, saved)):
            self._check_variable(var, f"var_list[{k}]")
            if var._uid in new_slots:
                raise InvalidArgumentError(
                    f"load_state: var_list[{k}] ({var.name!r}) appears twice in "
                    f"var_list, for the state in {path!r}"
                )
            if list(var.shape) != info["shape"] or var.dtype.name != info["dtype"]:
                raise InvalidArgumentError(
                    f"load_state: var_list[{k}] ({var.name!r}, {var.shape}, "
                    f"{var.dtype}) does not match variable {info['name']!r} "
                    f"({tuple(info['shape'])}, {info['dtype']}) saved in {path!r}"
                )
            state = self._create_slots(var)
            present = [f for f in state._fields if getattr(state, f) is not None]
            if present != info["slots"]:
                raise InvalidArgumentError(
                    f"load_state: the slots {info['slots']} of {info['name']!r} "
                    f"in {path!r} differ from this optimizer's {present}; are the "
                    "hyper-parameters the same?"
                )
            for field in present:
                slot, key = getattr(state, field), f"slot/{k}/{field}"
                header = archive.header(key)
                what = f"slot {field!r} of {info['name']!r} ({key!r})"
                if header is None:
                    raise _bad_state(path, f"{what} is missing")
                if header != (slot.shape, slot.dtype):
                    raise _bad_state(
                        path, f"{what} has shape {header[0]} and dtype "
                        f"{header[1]}; expected {slot.shape} and {slot.dtype}"
                    )
                targets.append((slot, key))
            new_slots[var._uid] = (var, state)
        # the headers all agree with the slots: now the data, all at once
        values = archive.read(*(key for _, key in targets))
        for (slot, _), value in zip(targets, values):
            # a new Variable, not yet visible (on var's device)
            slot._value[...] = backend.get_array_module(slot._value).asarray(value)
        return new_slots, iterations, learning_rate
