"""GradientTape: records what the ops do and runs it backwards.

The ops record themselves through :mod:`.recording` (the layer below them);
this module sits above the ops and holds the tape's user API (watching,
:meth:`GradientTape.gradient` and the Jacobians); the backward pass and
gradient aggregation it runs live in :mod:`.backward`.
"""

import enum
import warnings

import numpy as np

from ..errors import FailedPreconditionError, InvalidArgumentError
from ..framework import dispatch
from ..framework.dtypes import is_floating
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, convert_to_tensor, wrap
from ..framework.variable import Variable
from ..ops import array_ops
from . import recording as recording_module
from .backward import aggregate_gradients, run_backward, tensor_key, xp_of, zeros_on
from .nest import expand_composites, flatten, pack_as, rebuild_composites
from .recording import (
    WATCHED,
    Operation,
    TapeRecord,
    record_operation,
    record_variable_read,
    stop_recording,
)

__all__ = [
    "GradientTape",
    "Operation",
    "TapeStateError",
    "UnconnectedGradients",
    "aggregate_gradients",
    "record_operation",
    "record_variable_read",
    "stop_recording",
]



class UnconnectedGradients(enum.Enum):
    """What :meth:`GradientTape.gradient` returns for a source with no path.

    ``NONE`` gives None, ``ZERO`` gives zeros shaped like the source.  The
    strings ``"none"`` and ``"zero"`` are accepted wherever the enum is.

    Parameters
    ----------
    value : {"none", "zero"}
        Look a member up by value: ``UnconnectedGradients("zero")``.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> w = sg.Variable(2.0, dtype="float64")
    >>> with sg.GradientTape() as tape:
    ...     y = sg.constant(3.0) * 1.0      # does not read w
    >>> tape.gradient(y, w, unconnected_gradients=sg.UnconnectedGradients.ZERO)
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
        message = (f"The dtype of the watched tensor must be floating (e.g. "
                   f"float32), got {dtype}; it gets no gradient")
        warnings.warn(message, UserWarning, stacklevel=3)


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
    Variables are watched when read:

    >>> import sparsegrad as sg
    >>> w = sg.Variable([1.0, 2.0])
    >>> with sg.GradientTape() as tape:
    ...     loss = sg.reduce_sum(w * w)
    >>> tape.gradient(loss, w).numpy()
    array([2., 4.])

    A Tensor is recorded once watched; a persistent tape gives several
    gradients:

    >>> x = sg.constant(3.0)
    >>> with sg.GradientTape(persistent=True) as tape:
    ...     tape.watch(x)
    ...     y = x * x
    ...     z = y * x
    >>> float(tape.gradient(y, x)), float(tape.gradient(z, x))
    (6.0, 27.0)
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
            self._tape = TapeRecord(self._persistent, self._watch_accessed_variables)
        self._push()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self._recording:
            self._pop()
        return False

    def _push(self):
        recording_module.push_tape(self._tape)
        self._recording = True

    def _pop(self):
        recording_module.pop_tape(self._tape)
        self._recording = False

    # -- watching -----------------------------------------------------------------

    def watch(self, tensor):
        """Watch a Tensor, a Variable, a RaggedTensor, or a nest of them.

        A floating-point Tensor is recorded from now on; an integer or bool
        one gets no gradient (a warning says so).  When no tape at all is
        recording on this thread, the call has no effect (as in TensorFlow).

        Parameters
        ----------
        tensor : Tensor, Variable, IndexedSlices, RaggedTensor, or a nest of them
            An IndexedSlices is watched through its values, a RaggedTensor
            through its flat values (its row partition gets no gradient).

        Raises
        ------
        ValueError
            If a leaf is not a Tensor, Variable, IndexedSlices or RaggedTensor
            (NumPy arrays and Python numbers included: convert them first).
        RuntimeError
            If the tape was never entered.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> rt = sg.ragged.constant([[1.0, 2.0], [3.0]])
        >>> with sg.GradientTape() as tape:
        ...     tape.watch(rt)
        ...     y = sg.reduce_sum(rt * rt)
        >>> tape.gradient(y, rt).to_list()
        [[2.0, 4.0], [6.0]]
        """
        if self._tape is None:
            raise TapeStateError(
                "watch() needs a tape that has been entered: use "
                "`with sg.GradientTape() as tape: tape.watch(x)`"
            )
        leaves = expand_composites(flatten(tensor))
        for leaf in leaves:
            if not isinstance(leaf, (Tensor, Variable, IndexedSlices)):
                raise ValueError(
                    f"Passed in object {leaf!r} of type '{type(leaf).__name__}', not "
                    "sparsegrad.Tensor, sparsegrad.Variable or "
                    "sparsegrad.RaggedTensor; convert it with "
                    "sg.convert_to_tensor first"
                )
        if not recording_module.is_recording():
            return
        for leaf in leaves:
            if isinstance(leaf, IndexedSlices):
                leaf = leaf.values
            if not is_floating(leaf.dtype):    # bfloat16 is recorded too
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

        Returns
        -------
        context manager
            Pauses this tape on entry and resumes it on exit.

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
        self._tape = TapeRecord(self._persistent, self._watch_accessed_variables)
        self._push()

    def watched_variables(self):
        """The Variables this tape watches, in creation order (a tuple).

        Returns
        -------
        tuple of Variable
        """
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
        target : Tensor, Variable, RaggedTensor, or nest of them
            Several targets are summed; a non-scalar target is summed over its
            elements (the seed is ones).  A RaggedTensor target is its flat
            values.
        sources : Tensor, Variable, RaggedTensor, or nest (list/tuple/dict) of them
        output_gradients : list of Tensor, RaggedTensor or None, optional
            One seed per flattened target (None entries mean ones); a
            RaggedTensor seed (or a Tensor of its flat values' shape) seeds a
            RaggedTensor target through its flat values.
        unconnected_gradients : UnconnectedGradients or {"none", "zero"}
            What a source with no path to the target gets.

        Returns
        -------
        The structure of `sources` holding a Tensor, an IndexedSlices (for a
        source reached only through sparse ops such as gather) or None.  The
        gradient of a RaggedTensor source is a RaggedTensor with its row
        partition (flat values reached through a gather made dense), or
        None when unconnected ("zero": the partition around zeros, where
        TensorFlow 2.21 raises a shape error).

        Examples
        --------
        >>> import sparsegrad as sg
        >>> rt = sg.ragged.constant([[1.0, 2.0], [], [3.0]])
        >>> with sg.GradientTape() as tape:
        ...     tape.watch(rt)
        ...     y = rt * 3.0
        >>> tape.gradient(y, rt).to_list()
        [[3.0, 3.0], [], [3.0]]

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
        targets = [_as_target(t) for t in expand_composites(flatten(target))]
        flat_sources = flatten(sources)
        parts = expand_composites(flat_sources)
        source_keys = [_source_key(s) for s in parts]
        seeds = _seeds(output_gradients, targets)
        tape = self._tape
        try:
            result = run_backward(
                tape,
                [tensor_key(t) for t in targets],
                targets,
                seeds,
                source_keys,
                release=not self._persistent,
            )
        finally:
            self._release()
        result = rebuild_composites(flat_sources, result, missing=_zeros_like)
        result = [_unconnected(g, s, unconnected) for g, s in zip(result, flat_sources)]
        if not isinstance(sources, (list, tuple, dict)):
            return result[0]
        return pack_as(sources, result)

    def _need_persistent(self, use_pfor, what):
        if not use_pfor and not self._persistent:
            raise RuntimeError(
                "GradientTape must be created with persistent=True to compute the "
                f"{what} with eager execution enabled and  with "
                "experimental_use_pfor set to False."
            )

    def _run_per_seed_column(self, target, source_keys, b, r):
        """One backward run for each column j of a ``(b, r)`` seed that is one
        in column j and zero elsewhere (reshaped to the target's shape): the
        list of each run's gradients of `source_keys`.  Releases the tape."""
        runs = []
        try:
            for j in range(r):
                seed = xp_of(target).zeros((b, r), target.dtype)
                seed[:, j] = 1
                runs.append(run_backward(
                    self._tape, [tensor_key(target)], [target],
                    [wrap(seed.reshape(target.shape))], source_keys, False,
                ))
        finally:
            self._release()
        return runs

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

        Raises
        ------
        ValueError
            For a RaggedTensor target or source (TensorFlow 2.21 fails on them
            too): a Jacobian has dense shapes; use the flat values instead.

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
        _refuse_composites("jacobian", target, sources)
        self._need_persistent(experimental_use_pfor, "jacobian")
        self._check_usable()
        unconnected = _parse_unconnected(unconnected_gradients)
        target = _as_target(target)
        flat_sources = flatten(sources)
        source_keys = [_source_key(s) for s in flat_sources]
        t_shape = target.shape
        n = int(np.prod(t_shape, dtype=np.int64))
        runs = self._run_per_seed_column(target, source_keys, 1, n)
        result = []
        for j, s in enumerate(flat_sources):
            s_shape = tuple(s.shape)
            rows = [grads[j] for grads in runs]
            if all(g is None for g in rows):
                result.append(
                    zeros_on(t_shape + s_shape, s.dtype, s)
                    if unconnected is UnconnectedGradients.ZERO
                    else None
                )
                continue
            dense = _densified(rows, s, "GradientTape.jacobian")
            if n == 0:
                result.append(zeros_on(t_shape + s_shape, s.dtype, s))
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

        Parameters
        ----------
        target : Tensor
            Of shape ``(batch, ...)``, at least 2-D.
        source : Tensor or Variable
            Of shape ``(batch, ...)``, at least 2-D.
        unconnected_gradients : UnconnectedGradients or {"none", "zero"}
            Accepted for TensorFlow compatibility: an unconnected source always
            gives zeros.
        parallel_iterations, experimental_use_pfor
            Accepted for TensorFlow compatibility; rows are computed one by one
            (``experimental_use_pfor=False`` needs a persistent tape).

        Returns
        -------
        Tensor of shape ``target.shape + source.shape[1:]``; zeros (not None)
        when unconnected, as in TensorFlow.

        Raises
        ------
        ValueError
            If either rank is below 2 or the first dimensions differ, or for
            a RaggedTensor target or source (as :meth:`jacobian`).

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
        _refuse_composites("batch_jacobian", target, source)
        self._need_persistent(experimental_use_pfor, "batch_jacobian")
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
        rows = [g for (g,) in self._run_per_seed_column(target, [key], b, r)]
        out_shape = t_shape + s_shape[1:]
        if all(g is None for g in rows) or r == 0:
            return zeros_on(out_shape, target.dtype, target)
        dense = _densified(rows, source, "GradientTape.batch_jacobian")
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


def _as_target(t):
    if isinstance(t, (Tensor, Variable)):
        return t
    if isinstance(t, IndexedSlices):
        return t.values
    return convert_to_tensor(t, name="target")


def _source_key(s):
    if isinstance(s, (Tensor, Variable)):
        return tensor_key(s)
    raise TypeError(
        f"sources: got a {type(s).__name__}; every source must be a Tensor, a "
        "Variable or a RaggedTensor (or a nest of them)"
    )


def _refuse_composites(what, target, sources):
    for value in (target, *flatten(sources)):
        if dispatch.is_composite(value):
            raise ValueError(
                f"GradientTape.{what}: got a {type(value).__name__}; a Jacobian "
                "has dense shapes: take it with respect to (or of) its flat "
                "values, e.g. tape.jacobian(y, rt.flat_values)"
            )


def _zeros_like(component):
    """The gradient of a component of a composite source that got none."""
    return zeros_on(tuple(component.shape), component.dtype, component)


def _seeds(output_gradients, targets):
    if output_gradients is None:
        return [None] * len(targets)
    flat = expand_composites(flatten(output_gradients))
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


def _densified(grads, source, what):
    """`grads` (each None, a Tensor or IndexedSlices) as dense Tensors shaped
    like `source` (None: zeros)."""
    return [
        zeros_on(tuple(source.shape), source.dtype, source) if g is None
        else array_ops.densify(g, what)
        for g in grads
    ]


def _unconnected(g, source, unconnected):
    if g is None and unconnected is UnconnectedGradients.ZERO:
        if dispatch.is_composite(source):
            parts = [_zeros_like(c) for c in dispatch.components(source)]
            return dispatch.rebuild(source, parts)
        return zeros_on(tuple(source.shape), source.dtype, source)
    return g
