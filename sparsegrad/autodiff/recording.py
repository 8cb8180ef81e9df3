"""Recording: the tape stack of each thread, and the one way an op records.

This module sits below the ops: every op calls :func:`record_operation` once
after its forward pass, and reads of a Variable call
:func:`record_variable_read`.  The backward pass (:mod:`.tape`) sits above the
ops and reads what was recorded here.

* Every active tape of this thread sits on a stack.  When no tape is active,
  :func:`record_operation` costs one list check.  A tape records an op when
  one of its inputs is on the tape (watched, or produced by an op the tape
  recorded); only floating-point outputs (bfloat16 included) ever enter a
  tape, which is also TensorFlow's "trainable dtype" rule.
* What a tape recorded (:class:`TapeRecord`) is one dict, ``tensor id ->
  Operation`` (or :data:`WATCHED` for a watched source).  Operations get
  increasing ids, so a consumer always has a larger id than its producers:
  sorting the reachable ops by id, largest first, is a valid reverse
  topological order.
* A Variable read is a ``ReadVariableOp`` whose input is the Variable itself
  (key ``-uid``); it remembers the version it saw, which is how a gradient
  through a value changed in place is detected.
"""

import threading
from itertools import count

from ..framework.dtypes import BFLOAT16
from . import registry

__all__ = [
    "Operation",
    "TapeRecord",
    "VariableWatcher",
    "WATCHED",
    "current_gradient_op",
    "is_recording",
    "set_current_gradient_op",
    "pop_tape",
    "push_tape",
    "record_operation",
    "record_variable_read",
    "stop_recording",
]


class _State(threading.local):
    def __init__(self):
        self.tapes = []  # TapeRecord objects that record now, innermost last
        self.watchers = []  # VariableWatcher objects (custom_gradient)
        self.gradient_op = None  # the op type whose gradient runs now


_STATE = _State()
_next_op_id = count(1).__next__

#: The tensor-to-op map's marker of a watched source.
WATCHED = object()


class Operation:
    """A recorded op, as a gradient function sees it.

    Parameters
    ----------
    op_type : str
        The op type, the key of the gradient registry.
    inputs : tuple of Tensor
        The inputs as the op saw them.
    outputs : tuple of Tensor
        The outputs it produced.
    attrs : dict, optional
        Attributes the op recorded (axis, keepdims, ...).
    grad_fn : callable, optional
        A backward function for this one record, ``grad_fn(*output_grads)``,
        used instead of the registry's (custom_gradient).

    Attributes
    ----------
    type : str
    inputs : tuple of Tensor
    outputs : tuple of Tensor
    attrs : dict or None
    skip_input_indices : tuple of int
        Set by the backward pass: inputs whose gradient nobody needs.
    """

    __slots__ = (
        "attrs",
        "grad_fn",
        "id",
        "input_ids",
        "inputs",
        "outputs",
        "skip_input_indices",
        "type",
        "version",
    )

    def __init__(self, op_type, inputs, outputs, attrs=None, grad_fn=None):
        self.type = op_type
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.skip_input_indices = ()
        self.id = _next_op_id()
        self.grad_fn = grad_fn
        self.input_ids = None  # tape keys of the inputs, filled in lazily
        self.version = None  # the Variable version a ReadVariableOp saw

    def get_attr(self, name):
        """The attribute `name` the op recorded.

        Parameters
        ----------
        name : str

        Returns
        -------
        object
            What the op stored under `name`.

        Raises
        ------
        KeyError
            If the op recorded no such attribute.
        """
        if self.attrs is None or name not in self.attrs:
            raise KeyError(f"op {self.type!r} has no attribute {name!r}")
        return self.attrs[name]

    def __repr__(self):
        return f"<Operation {self.type} #{self.id}>"


class TapeRecord:
    """What one GradientTape recorded: the tensor-to-op map and its Variables.

    Parameters
    ----------
    persistent : bool
        Whether the owning tape may be differentiated more than once.
    watch_accessed_variables : bool
        Whether trainable Variables read while recording are watched.
    """

    __slots__ = ("persistent", "tensor_tape", "variables", "watch_accessed_variables")

    def __init__(self, persistent, watch_accessed_variables):
        self.tensor_tape = {}
        self.variables = {}
        self.persistent = persistent
        self.watch_accessed_variables = watch_accessed_variables

    def watch_variable(self, var):
        """Watch `var`: gradients reaching its reads are gradients of `var`.

        Parameters
        ----------
        var : Variable
        """
        self.tensor_tape.setdefault(-var._uid, WATCHED)
        self.variables[var._uid] = var


def record_operation(op_type, inputs, outputs, attrs=None, grad_fn=None):
    """Record one executed op on every active tape that should record it.

    Parameters
    ----------
    op_type : str
        Registered with :func:`~sparsegrad.register_gradient` (unless
        `grad_fn` is given).
    inputs : tuple of Tensor
        The converted inputs the forward pass used.
    outputs : tuple of Tensor
        The outputs it produced.
    attrs : dict, optional
        Anything the gradient function needs (``op.get_attr``).
    grad_fn : callable, optional
        The backward function of this one record, ``grad_fn(*output_grads)``
        returning one gradient per input; the registry is not consulted.

    Returns
    -------
    Operation or None
        The record, or None when no tape recorded the op.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.autodiff.recording import record_operation
    >>> record_operation("AddV2", (sg.constant(1.0),), (sg.constant(2.0),)) is None
    True
    """
    tapes = _STATE.tapes
    if not tapes:
        return None
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
            dtype = t._value.dtype
            if dtype.kind == "f" or dtype == BFLOAT16:
                tt[t._id] = op
    return op


def record_variable_read(var, tensor):
    """Record that `tensor` is the value of `var` read now.

    Tapes that watch `var` (or auto-watch it: trainable, floating, tape with
    ``watch_accessed_variables``) map gradients of `tensor` back to `var`;
    variable watchers (custom_gradient) learn that `var` was read.

    Parameters
    ----------
    var : Variable
    tensor : Tensor
        The Tensor the read returned.
    """
    state = _STATE
    for watcher in state.watchers:
        watcher.accessed(var)
    tapes = state.tapes
    if not tapes:
        return
    dtype = var._value.dtype
    if dtype.kind != "f" and dtype != BFLOAT16:
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
            op.input_ids = (key,)
            op.version = var._version
        tt[tensor._id] = op


@registry.register_gradient("ReadVariableOp")
def _read_variable_grad(op, grad):
    return grad  # sparse stays sparse


def is_recording():
    """Whether any tape records on this thread now.

    Returns
    -------
    bool
    """
    return bool(_STATE.tapes)


def push_tape(record):
    """Make `record` record on this thread (innermost).

    Parameters
    ----------
    record : TapeRecord
    """
    _STATE.tapes.append(record)


def pop_tape(record):
    """Stop `record` from recording on this thread (wherever it sits).

    Parameters
    ----------
    record : TapeRecord
    """
    tapes = _STATE.tapes
    for i in range(len(tapes) - 1, -1, -1):
        if tapes[i] is record:
            del tapes[i]
            break


class stop_recording:
    """Stop every active tape of this thread from recording inside the block.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.autodiff.recording import stop_recording
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


class VariableWatcher:
    """Collects the Variables read while it is active (custom_gradient).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.autodiff.recording import VariableWatcher
    >>> v = sg.Variable([1.0], name="v")
    >>> with VariableWatcher() as watcher:
    ...     _ = v * 2.0
    >>> [w.name for w in watcher.watched()]
    ['v']
    """

    __slots__ = ("variables",)

    def __init__(self):
        self.variables = {}

    def accessed(self, var):
        """Note that `var` was read.

        Parameters
        ----------
        var : Variable
        """
        self.variables[var._uid] = var

    def __enter__(self):
        _STATE.watchers.append(self)
        return self

    def __exit__(self, *exc):
        _STATE.watchers.remove(self)
        return False

    def watched(self):
        """The Variables read so far, in creation order.

        Returns
        -------
        list of Variable
        """
        return [v for _, v in sorted(self.variables.items())]


def set_current_gradient_op(op_type):
    """Note the op type whose gradient function the backward pass calls now
    (None once it is done), for messages such as the densify warning.

    Parameters
    ----------
    op_type : str or None

    Returns
    -------
    None
    """
    _STATE.gradient_op = op_type


def current_gradient_op():
    """The op type whose gradient function runs now on this thread, or None.

    Returns
    -------
    str or None
    """
    return _STATE.gradient_op
