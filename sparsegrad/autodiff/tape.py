"""GradientTape: records ops on the fly and runs them backwards.

Design (autograd's tracer, micrograd's mental model, TensorFlow's rules):

* Every active tape of this thread sits on a stack (``_STATE.tapes``).  An op
  calls :func:`record_operation` once after its forward pass; when no tape is
  active that is one list check.  A tape records the op when one of its inputs
  is on the tape (watched, or produced by an op the tape recorded); only
  floating-point tensors ever enter a tape, so that check is also TensorFlow's
  "trainable dtype" rule.
* A tape is one dict, ``tensor id -> Operation`` (or ``WATCHED`` for a watched
  source).  Operations get increasing ids, so a consumer always has a larger id
  than its producers: sorting the reachable ops by id, largest first, is a
  valid reverse topological order.
* A Variable read (:func:`record_variable_read`) is a ``ReadVariableOp`` whose
  input is the Variable itself (key ``-uid``); it remembers the version it saw,
  which is how a gradient through a value changed in place is detected.
* Gradients meeting at one tensor aggregate through :func:`aggregate_gradients`
  (dense + dense adds, sparse + sparse concatenates, sparse + dense
  scatter-adds into a copy of the dense one).
"""

import enum
import threading
import warnings
from itertools import count
from operator import attrgetter

import numpy as np

from ..errors import FailedPreconditionError, InternalError, InvalidArgumentError
from ..framework import sparse_rows
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, convert_to_tensor
from ..framework.variable import Variable
from . import registry

__all__ = [
    "GradientTape",
    "Operation",
    "UnconnectedGradients",
    "aggregate_gradients",
    "record_operation",
    "record_variable_read",
    "stop_recording",
]


class _State(threading.local):
    def __init__(self):
        self.tapes = []  # recording _Tape objects, innermost last
        self.watchers = []  # _VariableWatcher objects (custom_gradient)


_STATE = _State()
_next_op_id = count(1).__next__

#: tensor_tape marker of a watched source
WATCHED = object()

# Ops whose missing output gradients stay None instead of being zero-filled.
_NONE_OK = {
    "SoftmaxCrossEntropyWithLogits": (1,),
    "SparseSoftmaxCrossEntropyWithLogits": (1,),
    "FusedBatchNorm": (1, 2, 3, 4),
}

_op_id_key = attrgetter("_id")


class UnconnectedGradients(enum.Enum):
    """What :meth:`GradientTape.gradient` returns for a source with no path.

    ``NONE`` gives None, ``ZERO`` gives zeros shaped like the source.  The
    strings ``"none"`` and ``"zero"`` are accepted wherever the enum is.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> x = sg.constant(2.0)
    >>> with sg.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = sg.constant(3.0) * 1.0
    >>> tape.gradient(y, x, unconnected_gradients=sg.UnconnectedGradients.ZERO)
    <sparsegrad.Tensor: shape=(), dtype=float64, numpy=0.0>
    """

    NONE = "none"
    ZERO = "zero"


def _parse_unconnected(value):
    if isinstance(value, UnconnectedGradients):
        return value
    try:
        return UnconnectedGradients(value)
    except (ValueError, TypeError):
        raise ValueError(
            f"Unknown value for unconnected_gradients: {value!r}"
        ) from None


class Operation:
    """A recorded op, as a gradient function sees it.

    Attributes
    ----------
    type : str
        The op type, the key of the gradient registry.
    inputs : tuple of Tensor
        The inputs as the op saw them.
    outputs : tuple of Tensor
    attrs : dict
        Attributes the op recorded (axis, keepdims, ...).
    skip_input_indices : tuple of int
        Set by the backward pass: inputs whose gradient nobody needs.
    """

    __slots__ = (
        "_grad_fn",
        "_id",
        "_input_ids",
        "_version",
        "attrs",
        "inputs",
        "outputs",
        "skip_input_indices",
        "type",
    )

    def __init__(self, op_type, inputs, outputs, attrs=None, grad_fn=None):
        self.type = op_type
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.skip_input_indices = ()
        self._id = _next_op_id()
        self._grad_fn = grad_fn
        self._input_ids = None
        self._version = None

    def get_attr(self, name):
        """The attribute `name` the op recorded (KeyError if there is none)."""
        if self.attrs is None or name not in self.attrs:
            raise KeyError(f"op {self.type!r} has no attribute {name!r}")
        return self.attrs[name]

    def __repr__(self):
        return f"<Operation {self.type} #{self._id}>"


def _input_ids(op):
    ids = op._input_ids
    if ids is None:
        ids = op._input_ids = tuple([t._id for t in op.inputs])
    return ids


def record_operation(op_type, inputs, outputs, attrs=None):
    """Record one executed op on every active tape that should record it.

    Parameters
    ----------
    op_type : str
        Registered with :func:`~sparsegrad.register_gradient`.
    inputs : tuple of Tensor
        The converted inputs the forward pass used.
    outputs : tuple of Tensor
        The outputs it produced.
    attrs : dict, optional
        Anything the gradient function needs (``op.get_attr``).

    Returns
    -------
    Operation or None
        The record, or None when no tape recorded the op.
    """
    tapes = _STATE.tapes
    if not tapes:
        return None
    return _record(op_type, inputs, outputs, attrs, None, tapes)


def _record(op_type, inputs, outputs, attrs, grad_fn, tapes):
    op = None
    for tape in tapes:
        tt = tape.tensor_tape
        for t in inputs:
            if t._id in tt:
                break
        else:
            continue
        if op is None:
            op = Operation(op_type, tuple(inputs), tuple(outputs), attrs, grad_fn)
        for t in outputs:
            if t._value.dtype.kind == "f":
                tt[t._id] = op
    return op


def record_variable_read(var, tensor):
    """Record that `tensor` is the value of `var` read now.

    Tapes that watch `var` (or auto-watch it: trainable, floating, tape with
    ``watch_accessed_variables``) map gradients of `tensor` back to `var`;
    variable watchers (custom_gradient) learn that `var` was read.
    """
    state = _STATE
    for watcher in state.watchers:
        watcher.accessed(var)
    tapes = state.tapes
    if not tapes or var._value.dtype.kind != "f":
        return
    key = -var._uid
    op = None
    for tape in tapes:
        tt = tape.tensor_tape
        if key not in tt:
            if not (tape.watch_accessed_variables and var._trainable):
                continue
            tape.watch_variable(var)
        if op is None:
            op = Operation("ReadVariableOp", (var,), (tensor,))
            op._input_ids = (key,)
            op._version = var._version
        tt[tensor._id] = op


def _read_variable_grad(op, grad):
    return grad  # sparse stays sparse


registry.register_gradient("ReadVariableOp")(_read_variable_grad)


class _Tape:
    """The recording state a GradientTape owns (created on first entry)."""

    __slots__ = ("persistent", "tensor_tape", "variables", "watch_accessed_variables")

    def __init__(self, persistent, watch_accessed_variables):
        self.tensor_tape = {}
        self.variables = {}
        self.persistent = persistent
        self.watch_accessed_variables = watch_accessed_variables

    def watch_variable(self, var):
        self.tensor_tape.setdefault(-var._uid, WATCHED)
        self.variables[var._uid] = var


# -- nests ---------------------------------------------------------------------


def _flatten(structure, out):
    if isinstance(structure, (list, tuple)):
        for item in structure:
            _flatten(item, out)
    elif isinstance(structure, dict):
        for k in sorted(structure):
            _flatten(structure[k], out)
    else:
        out.append(structure)
    return out


def flatten(structure):
    """The leaves of a nest of lists, tuples and dicts (dict keys sorted)."""
    return _flatten(structure, [])


def pack_as(structure, flat):
    """Rebuild `structure` with the leaves taken in order from `flat`."""
    it = iter(flat)

    def build(s):
        if isinstance(s, (list, tuple)):
            items = [build(x) for x in s]
            if isinstance(s, list):
                return items
            if hasattr(s, "_fields"):  # namedtuple
                return type(s)(*items)
            return type(s)(items)
        if isinstance(s, dict):
            built = {k: build(s[k]) for k in sorted(s)}
            return (
                type(s)((k, built[k]) for k in s)
                if type(s) is not dict
                else {k: built[k] for k in s}
            )
        return next(it)

    return build(structure)


# -- aggregation ---------------------------------------------------------------

_ops_cache = []


def _ops():
    """The op modules (imported on first use: they sit above this layer)."""
    if not _ops_cache:
        from ..ops import array_ops, math_ops

        _ops_cache.append((math_ops, array_ops))
    return _ops_cache[0]


def aggregate_gradients(grads):
    """Sum the gradients that reach one tensor (DESIGN invariant 1).

    Dense + dense adds; IndexedSlices + IndexedSlices concatenates (no
    densifying, no deduplication); dense + IndexedSlices scatter-adds the rows
    into a copy of the dense sum.  While a tape is recording (higher order),
    the sum is built from differentiable ops.
    """
    grads = [g for g in grads if g is not None]
    if not grads:
        return None
    if len(grads) == 1:
        return grads[0]
    dense = []
    sparse = []
    for g in grads:
        (sparse if isinstance(g, IndexedSlices) else dense).append(g)
    recording = bool(_STATE.tapes)
    if recording:
        math_ops, array_ops = _ops()
    if not sparse:
        if recording:
            return math_ops.add_n(dense)
        out = np.add(dense[0]._value, dense[1]._value)
        if type(out) is not np.ndarray:
            out = np.asarray(out)
        for g in dense[2:]:
            np.add(out, g._value, out=out)
        return Tensor._wrap(np.asarray(out))
    merged = _concat_slices(sparse, recording)
    if not dense:
        return merged
    if recording:
        total = dense[0] if len(dense) == 1 else math_ops.add_n(dense)
        return array_ops.tensor_scatter_add(total, merged.indices, merged.values)
    out = np.array(dense[0]._value, copy=True)
    for g in dense[1:]:
        np.add(out, g._value, out=out)
    sparse_rows.scatter_add(
        out, merged.indices._value, np.asarray(merged.values._value)
    )
    return Tensor._wrap(out)


def _concat_slices(sparse, recording):
    if len(sparse) == 1:
        return sparse[0]
    if not recording:
        return IndexedSlices.concat(sparse)
    _, array_ops = _ops()
    index_dtypes = {s.indices.dtype for s in sparse}
    index_dtype = np.int64 if len(index_dtypes) > 1 else sparse[0].indices.dtype
    indices = np.concatenate([s.indices._value for s in sparse]).astype(
        index_dtype, copy=False
    )
    values = array_ops.concat([s.values for s in sparse], axis=0)
    shapes = [s.dense_shape for s in sparse if s.dense_shape is not None]
    return IndexedSlices._from_trusted(values, indices, shapes[0] if shapes else None)


# -- the backward pass ---------------------------------------------------------


def _zeros(shape, dtype):
    return Tensor._wrap(np.zeros(shape, dtype))


def _ones(shape, dtype):
    return Tensor._wrap(np.ones(shape, dtype))


def _key(x):
    if isinstance(x, Variable):
        return -x._uid
    return x._id


def _backward(tape, target_keys, target_objs, seeds, source_keys, release):
    """Gradients of the targets w.r.t. each source key (None where unconnected).

    `seeds[i]` is the output gradient of target i (None: ones).  With
    `release`, the recorded ops are dropped as soon as they are used.
    """
    tt = tape.tensor_tape
    tt_get = tt.get
    sources = {k for k in source_keys if k in tt}

    # 1. the ops reachable from the targets (op -> its input keys)
    reachable = {}
    stack = list(target_keys)
    pop = stack.pop
    push = stack.append
    while stack:
        op = tt_get(pop())
        if op is None or op is WATCHED or op in reachable:
            continue
        ids = op._input_ids
        if ids is None:
            ids = op._input_ids = tuple([t._id for t in op.inputs])
        reachable[op] = ids
        for k in ids:
            if k in tt:
                push(k)

    # 2. of those, in recording order, the ops with a path to a source, and
    #    for each the inputs whose gradient nobody needs
    useful = set()
    plan = []
    for op in sorted(reachable, key=_op_id_key):
        ids = reachable[op]
        if len(ids) == 1:
            k = ids[0]
            if k not in sources and tt_get(k) not in useful:
                continue
            skip = ()
        else:
            skip = [
                i
                for i, k in enumerate(ids)
                if k not in sources and tt_get(k) not in useful
            ]
            if len(skip) == len(ids):
                continue
            skip = tuple(skip) if skip else ()
        useful.add(op)
        plan.append((op, ids, skip))
        if op._version is not None and op._version != op.inputs[0]._version:
            var = op.inputs[0]
            raise FailedPreconditionError(
                f"variable '{var.name}' was modified in place after the tape "
                f"recorded a read of it (version {op._version}, now "
                f"{var._version}); the gradient would use the new value. "
                "Compute gradients before updating the variable."
            )
    del reachable, useful

    # 3. seeds
    grads = {}
    for i, k in enumerate(target_keys):
        seed = seeds[i]
        if seed is None:
            producer = tt_get(k)
            if (producer is not None and producer is not WATCHED) or k in source_keys:
                t = target_objs[i]
                seed = _ones(t.shape, t.dtype)
            else:
                continue
        if k in grads:
            grads[k].append(seed)
        else:
            grads[k] = [seed]
    if release:
        tt.clear()

    # 4. reverse recording order
    get_gradient_function = registry._GRADIENTS.get
    grads_get = grads.get
    grads_pop = grads.pop
    for n in range(len(plan) - 1, -1, -1):
        op, ids, skip = plan[n]
        if release:
            plan[n] = None
        outputs = op.outputs
        if len(outputs) == 1:
            k = outputs[0]._id
            g = grads_get(k) if k in sources else grads_pop(k, None)
            if g is None:
                continue
            if len(g) > 1:
                g[:] = [aggregate_gradients(g)]
            out_grads = (g[0],)
        else:
            out_grads = _output_gradients(op, grads, sources)
            if out_grads is None:
                continue
        fn = op._grad_fn
        if fn is not None:
            in_grads = fn(*out_grads)
        else:
            fn = get_gradient_function(op.type, _MISSING)
            if fn is None:  # not differentiable
                continue
            if fn is _MISSING:
                registry.get_gradient_function(op.type)  # raises LookupError
            op.skip_input_indices = skip
            in_grads = fn(op, *out_grads)
        if type(in_grads) is not tuple and type(in_grads) is not list:
            in_grads = (in_grads,)
        if len(in_grads) != len(ids):
            raise InternalError(
                f"Recorded operation '{op.type}' returned too "
                f"{'few' if len(in_grads) < len(ids) else 'many'} gradients. "
                f"Expected {len(ids)} but received {len(in_grads)}"
            )
        for i, k in enumerate(ids):
            g = in_grads[i]
            if g is None or (skip and i in skip):
                continue
            if type(g) is not Tensor and not isinstance(g, IndexedSlices):
                g = convert_to_tensor(g)
            pending = grads_get(k)
            if pending is None:
                grads[k] = [g]
            else:
                pending.append(g)

    result = []
    for k in source_keys:
        g = grads.get(k)
        if g is None:
            result.append(None)
        else:
            if len(g) > 1:
                g[:] = [aggregate_gradients(g)]
            result.append(g[0])
    return result


_MISSING = object()


def _output_gradients(op, grads, sources):
    """The output gradients of a multi-output op (None if it has none)."""
    out_grads = []
    any_grad = False
    for t in op.outputs:
        k = t._id
        g = grads.get(k) if k in sources else grads.pop(k, None)
        if g is None:
            out_grads.append(None)
            continue
        any_grad = True
        if len(g) > 1:
            g[:] = [aggregate_gradients(g)]
        out_grads.append(g[0])
    if not any_grad:
        return None
    none_ok = _NONE_OK.get(op.type, ())
    for j, t in enumerate(op.outputs):
        if out_grads[j] is None and j not in none_ok:
            out_grads[j] = _zeros(t.shape, t.dtype)
    return out_grads


# -- GradientTape ----------------------------------------------------------------


class TapeStateError(FailedPreconditionError, ValueError):
    """A tape was used in a state that does not allow it (e.g. entered twice).

    Both a RuntimeError (what sparsegrad documents) and a ValueError (what
    TensorFlow raises).
    """


_NON_PERSISTENT_MSG = (
    "A non-persistent GradientTape can only be used to compute one set of "
    "gradients (or jacobians)"
)
_warned = {"int_watch": 0, "persistent": False}


def _warn_int_watch(dtype):
    if _warned["int_watch"] < 5:
        _warned["int_watch"] += 1
        warnings.warn(
            f"The dtype of the watched tensor must be floating (e.g. float32), "
            f"got {dtype}; it gets no gradient",
            UserWarning,
            stacklevel=3,
        )


class GradientTape:
    """Record operations to compute gradients by reverse-mode differentiation.

    Ops that run inside the ``with`` block and use a watched tensor (or a
    value computed from one) are recorded; :meth:`gradient` then runs them
    backwards.  Trainable Variables read inside the block are watched
    automatically.  Tapes nest: every active tape records, so an outer tape
    records the inner tape's gradient computation (higher-order derivatives).

    Gradients that reach a tensor along several paths are summed; sparse
    gradients (:class:`~sparsegrad.IndexedSlices`) stay sparse: two of them
    concatenate, and one meeting a dense gradient is scatter-added into it.

    Parameters
    ----------
    persistent : bool, default=False
        Allow more than one :meth:`gradient` / :meth:`jacobian` call.  A
        non-persistent tape frees what it recorded during its first call.
    watch_accessed_variables : bool, default=True
        Watch every trainable Variable read while the tape records.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> x = sg.constant(3.0)
    >>> with sg.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    >>> tape.gradient(y, x)
    <sparsegrad.Tensor: shape=(), dtype=float64, numpy=6.0>

    Variables are watched when read:

    >>> w = sg.Variable([1.0, 2.0])
    >>> with sg.GradientTape() as tape:
    ...     loss = sg.reduce_sum(w * w)
    >>> tape.gradient(loss, w).numpy()
    array([2., 4.])
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._tape = None
        self._recording = False
        self._watched_variables = ()

    # -- context ------------------------------------------------------------------

    def __enter__(self):
        if self._recording:
            raise TapeStateError(
                "Tape is still recording, This can happen if you try to re-enter "
                "an already-active tape."
            )
        if self._tape is None:
            self._tape = _Tape(self._persistent, self._watch_accessed_variables)
        self._push()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self._recording:
            self._pop()
        return False

    def _push(self):
        _STATE.tapes.append(self._tape)
        self._recording = True

    def _pop(self):
        tapes = _STATE.tapes
        for i in range(len(tapes) - 1, -1, -1):
            if tapes[i] is self._tape:
                del tapes[i]
                break
        self._recording = False

    # -- watching -----------------------------------------------------------------

    def watch(self, tensor):
        """Watch a Tensor, a Variable, or a nest (list/tuple/dict) of them.

        A floating-point Tensor is recorded from now on; an integer or bool
        one gets no gradient (a warning says so).  When no tape at all is
        recording on this thread, the call has no effect (as in TensorFlow).

        Raises
        ------
        ValueError
            If a leaf is not a Tensor, Variable or IndexedSlices (NumPy
            arrays and Python numbers included: convert them first).
        RuntimeError
            If the tape was never entered.
        """
        if self._tape is None:
            raise TapeStateError(
                "watch() needs a tape that has been entered: use "
                "`with sg.GradientTape() as tape: tape.watch(x)`"
            )
        leaves = flatten(tensor)
        for leaf in leaves:
            if not isinstance(leaf, (Tensor, Variable, IndexedSlices)):
                raise ValueError(
                    f"Passed in object {leaf!r} of type '{type(leaf).__name__}', not "
                    "sparsegrad.Tensor or sparsegrad.Variable; convert it with "
                    "sg.convert_to_tensor first"
                )
        if not _STATE.tapes:
            return
        for leaf in leaves:
            if isinstance(leaf, IndexedSlices):
                leaf = leaf.values
            if leaf.dtype.kind != "f":
                _warn_int_watch(leaf.dtype)
                if isinstance(leaf, Variable):
                    self._tape.variables[leaf._uid] = leaf
                continue
            if isinstance(leaf, Variable):
                self._tape.watch_variable(leaf)
            else:
                self._tape.tensor_tape.setdefault(leaf._id, WATCHED)

    def stop_recording(self):
        """A context manager in which this tape records nothing.

        Other active tapes keep recording.

        Raises
        ------
        RuntimeError
            If the tape was never entered.
        ValueError
            If it is not recording now.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> x = sg.constant(3.0)
        >>> with sg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     with tape.stop_recording():
        ...         y = x * x
        >>> tape.gradient(y, x) is None
        True
        """
        if self._tape is None:
            raise RuntimeError(
                "Trying to stop recording a tape which is not recording."
            )
        if not self._recording:
            raise TapeStateError("Tape is not recording.")
        return _StopRecording(self)

    def reset(self):
        """Forget everything recorded and watched; keep recording.

        Raises
        ------
        ValueError
            If the tape is not recording.
        """
        if not self._recording:
            raise TapeStateError("Tape is not recording.")
        self._pop()
        self._tape = _Tape(self._persistent, self._watch_accessed_variables)
        self._push()

    def watched_variables(self):
        """The Variables this tape watches, in creation order (a tuple)."""
        if self._tape is None:
            return self._watched_variables
        return tuple(v for _, v in sorted(self._tape.variables.items()))

    # -- gradients ----------------------------------------------------------------

    def _check_usable(self):
        if self._tape is None:
            raise RuntimeError(_NON_PERSISTENT_MSG)
        if self._recording:
            if not self._persistent:
                self._pop()
            elif not _warned["persistent"]:
                _warned["persistent"] = True
                warnings.warn(
                    "Calling GradientTape.gradient on a persistent tape inside its "
                    "context is significantly less efficient than calling it "
                    "outside the context (it causes the gradient ops to be "
                    "recorded on the tape, leading to increased CPU and memory "
                    "usage). Only call GradientTape.gradient inside the context if "
                    "you actually want to trace the gradient in order to compute "
                    "higher order derivatives.",
                    UserWarning,
                    stacklevel=3,
                )

    def _release(self):
        if not self._persistent:
            self._watched_variables = self.watched_variables()
            self._tape = None

    def gradient(
        self,
        target,
        sources,
        output_gradients=None,
        unconnected_gradients=UnconnectedGradients.NONE,
    ):
        """The gradient of `target` with respect to `sources`.

        Parameters
        ----------
        target : Tensor, Variable, or nest of them
            Several targets are summed; a non-scalar target is summed over its
            elements (the seed is ones).
        sources : Tensor, Variable, or nest (list/tuple/dict) of them
        output_gradients : list of Tensor or None, optional
            One seed per flattened target (None entries mean ones).
        unconnected_gradients : UnconnectedGradients or {"none", "zero"}
            What a source with no path to the target gets.

        Returns
        -------
        The structure of `sources` holding a Tensor, an IndexedSlices (for a
        source reached only through sparse ops such as gather) or None.

        Raises
        ------
        RuntimeError
            On a second call to a non-persistent tape.
        LookupError
            If a recorded op has no registered gradient.
        FailedPreconditionError
            If a Variable whose recorded value the gradient needs was changed
            in place since it was read.
        ValueError
            For a bad `unconnected_gradients` or `output_gradients` length.
        InvalidArgumentError
            If an `output_gradients` entry does not have its target's shape
            and dtype (a ``ValueError``).
        """
        self._check_usable()
        unconnected = _parse_unconnected(unconnected_gradients)
        if target is None:
            raise TypeError(
                "Argument `target` should be a list or nested structure of "
                "Tensors, Variables or CompositeTensors to be differentiated, but "
                "received None."
            )
        targets = [_as_target(t) for t in flatten(target)]
        flat_sources = flatten(sources)
        source_keys = [_source_key(s) for s in flat_sources]
        seeds = _seeds(output_gradients, targets)
        tape = self._tape
        try:
            result = _backward(
                tape,
                [_key(t) for t in targets],
                targets,
                seeds,
                source_keys,
                release=not self._persistent,
            )
        finally:
            self._release()
        result = [_unconnected(g, s, unconnected) for g, s in zip(result, flat_sources)]
        if not isinstance(sources, (list, tuple, dict)):
            return result[0]
        return pack_as(sources, result)

    def jacobian(
        self,
        target,
        sources,
        unconnected_gradients=UnconnectedGradients.NONE,
        parallel_iterations=None,
        experimental_use_pfor=True,
    ):
        """The Jacobian of `target` with respect to each source.

        Parameters
        ----------
        target : Tensor
        sources : Tensor, Variable, or nest of them
        unconnected_gradients : UnconnectedGradients or {"none", "zero"}
        parallel_iterations, experimental_use_pfor
            Accepted for TensorFlow compatibility; rows are computed one by one.

        Returns
        -------
        For each source a dense Tensor of shape ``target.shape + source.shape``
        (IndexedSlices rows are densified), or None if unconnected.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> x = sg.constant([1.0, 2.0])
        >>> with sg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        >>> tape.jacobian(y, x).numpy()
        array([[2., 0.],
               [0., 4.]])
        """
        del parallel_iterations
        if not experimental_use_pfor and not self._persistent:
            raise RuntimeError(
                "GradientTape must be created with persistent=True to compute the "
                "jacobian with eager execution enabled and  with "
                "experimental_use_pfor set to False."
            )
        self._check_usable()
        unconnected = _parse_unconnected(unconnected_gradients)
        target = _as_target(target)
        flat_sources = flatten(sources)
        source_keys = [_source_key(s) for s in flat_sources]
        t_shape, t_dtype = target.shape, target.dtype
        n = int(np.prod(t_shape, dtype=np.int64))
        rows = [[] for _ in flat_sources]
        connected = [False] * len(flat_sources)
        try:
            for i in range(n):
                seed = np.zeros(n, t_dtype)
                seed[i] = 1
                seed = Tensor._wrap(seed.reshape(t_shape))
                grads = _backward(
                    self._tape, [_key(target)], [target], [seed], source_keys, False
                )
                for j, g in enumerate(grads):
                    rows[j].append(g)
                    connected[j] = connected[j] or g is not None
        finally:
            self._release()
        _, array_ops = _ops()
        result = []
        for j, s in enumerate(flat_sources):
            s_shape = tuple(s.shape)
            if not connected[j]:
                result.append(
                    _zeros(t_shape + s_shape, s.dtype)
                    if unconnected is UnconnectedGradients.ZERO
                    else None
                )
                continue
            dense = [
                _zeros(s_shape, s.dtype) if g is None else _densify(g) for g in rows[j]
            ]
            if n == 0:
                result.append(_zeros(t_shape + s_shape, s.dtype))
            else:
                result.append(
                    array_ops.reshape(array_ops.stack(dense), t_shape + s_shape)
                )
        if not isinstance(sources, (list, tuple, dict)):
            return result[0]
        return pack_as(sources, result)

    def batch_jacobian(
        self,
        target,
        source,
        unconnected_gradients=UnconnectedGradients.NONE,
        parallel_iterations=None,
        experimental_use_pfor=True,
    ):
        """Per-example Jacobians: ``d target[i, ...] / d source[i, ...]``.

        Exactly, ``out[i, k..., l...] = d(sum_b target[b, k...]) /
        d source[i, l...]``, the per-example Jacobian when row i of the target
        depends only on row i of the source.

        Returns
        -------
        Tensor of shape ``target.shape + source.shape[1:]``; zeros (not None)
        when unconnected, as in TensorFlow.

        Raises
        ------
        ValueError
            If either rank is below 2 or the first dimensions differ.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> x = sg.constant([[1.0, 2.0], [3.0, 4.0]])
        >>> with sg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        >>> tape.batch_jacobian(y, x).numpy()
        array([[[2., 0.],
                [0., 4.]],
        <BLANKLINE>
               [[6., 0.],
                [0., 8.]]])
        """
        del parallel_iterations, unconnected_gradients
        if not experimental_use_pfor and not self._persistent:
            raise RuntimeError(
                "GradientTape must be created with persistent=True to compute the "
                "batch_jacobian with eager execution enabled and  with "
                "experimental_use_pfor set to False."
            )
        target = _as_target(target)
        t_shape = target.shape
        s_shape = tuple(source.shape)
        for shape in (t_shape, s_shape):
            if len(shape) < 2:
                raise ValueError(f"Shape {shape} must have rank at least 2")
        if t_shape[0] != s_shape[0]:
            raise ValueError(
                f"Need first dimension of target shape ({t_shape}) and source "
                f"shape ({s_shape}) to match."
            )
        self._check_usable()
        key = _source_key(source)
        b = t_shape[0]
        r = int(np.prod(t_shape[1:], dtype=np.int64))
        rows = []
        try:
            for j in range(r):
                seed = np.zeros((b, r), target.dtype)
                seed[:, j] = 1
                seed = Tensor._wrap(seed.reshape(t_shape))
                (g,) = _backward(
                    self._tape, [_key(target)], [target], [seed], [key], False
                )
                rows.append(g)
        finally:
            self._release()
        out_shape = t_shape + s_shape[1:]
        if all(g is None for g in rows) or r == 0:
            return _zeros(out_shape, target.dtype)
        _, array_ops = _ops()
        dense = [
            _zeros(s_shape, source.dtype) if g is None else _densify(g) for g in rows
        ]
        stacked = array_ops.reshape(array_ops.stack(dense), (r, b, -1))
        return array_ops.reshape(array_ops.transpose(stacked, (1, 0, 2)), out_shape)


class _StopRecording:
    __slots__ = ("_tape",)

    def __init__(self, tape):
        self._tape = tape

    def __enter__(self):
        self._tape._pop()
        return self

    def __exit__(self, *exc):
        self._tape._push()
        return False


class stop_recording:
    """Stop every active tape of this thread from recording inside the block.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.autodiff.tape import stop_recording
    >>> x = sg.constant(2.0)
    >>> with sg.GradientTape() as tape:
    ...     tape.watch(x)
    ...     with stop_recording():
    ...         y = x * x
    >>> tape.gradient(y, x) is None
    True
    """

    __slots__ = ("_saved",)

    def __enter__(self):
        self._saved = _STATE.tapes
        _STATE.tapes = []
        return self

    def __exit__(self, *exc):
        _STATE.tapes = self._saved
        return False


def _as_target(t):
    if isinstance(t, (Tensor, Variable)):
        return t
    if isinstance(t, IndexedSlices):
        return t.values
    return convert_to_tensor(t, name="target")


def _source_key(s):
    if isinstance(s, (Tensor, Variable)):
        return _key(s)
    raise TypeError(
        f"sources: got a {type(s).__name__}; every source must be a Tensor or a "
        "Variable (or a nest of them)"
    )


def _seeds(output_gradients, targets):
    if output_gradients is None:
        return [None] * len(targets)
    flat = flatten(output_gradients)
    if len(flat) != len(targets):
        raise ValueError(
            f"output_gradients has {len(flat)} entries but target has "
            f"{len(targets)} tensors; give one output gradient (or None) per target"
        )
    seeds = []
    for k, (g, t) in enumerate(zip(flat, targets)):
        if g is None:
            seeds.append(g)
            continue
        name = f"output_gradients[{k}]"
        if not isinstance(g, (Tensor, IndexedSlices)):
            g = convert_to_tensor(g, dtype=t.dtype, name=name)
        if isinstance(g, IndexedSlices):
            shape = g.dense_shape
            if shape is None:       # unknown dense shape: the rows must fit
                shape = (t.shape[:1] if t.ndim else (None,)) + g.values.shape[1:]
        else:
            shape = g.shape
        if g.dtype != t.dtype or tuple(shape) != t.shape:
            raise InvalidArgumentError(
                f"{name} has shape {shape} and dtype {g.dtype}, but target {k} has "
                f"shape {t.shape} and dtype {t.dtype}; an output gradient must "
                "have its target's shape and dtype"
            )
        seeds.append(g)
    return seeds


def _unconnected(g, source, unconnected):
    if g is None and unconnected is UnconnectedGradients.ZERO:
        return _zeros(tuple(source.shape), source.dtype)
    return g


def _densify(g):
    if isinstance(g, IndexedSlices):
        _, array_ops = _ops()
        if _STATE.tapes:
            zeros = _zeros(g.dense_shape, g.dtype)
            return array_ops.tensor_scatter_add(zeros, g.indices, g.values)
        return g.to_dense()
    return g


class _VariableWatcher:
    """Collects the Variables read while it is active (custom_gradient)."""

    __slots__ = ("variables",)

    def __init__(self):
        self.variables = {}

    def accessed(self, var):
        self.variables[var._uid] = var

    def __enter__(self):
        _STATE.watchers.append(self)
        return self

    def __exit__(self, *exc):
        _STATE.watchers.remove(self)
        return False

    def watched(self):
        return [v for _, v in sorted(self.variables.items())]
