"""The one validation layer of the raw training ops: specs, checks, dispatch.

Every raw op (``apply_<name>`` and ``sparse_apply_<name>``) is a :class:`Spec`:
the names of its state slots in TensorFlow's input order, its checks as a tuple
of *steps* in TensorFlow's order (each raising
:class:`~sparsegrad.errors.InvalidArgumentError` with TensorFlow's text), the
names of the hyper-parameters its kernel reads, and the kernel.  The public
functions in the family modules keep explicit signatures and docstrings and
hand their arguments to :meth:`Spec.call`, which

1. resolves var and the slots (Variables or writeable C-contiguous float
   arrays of one dtype, pairwise disjoint),
2. runs the steps in order on the arguments as given (nothing converted or
   copied yet: a mis-shaped ``np.broadcast_to`` gradient is rejected at once),
3. converts what the kernel needs (the gradient to var's dtype, C-contiguous;
   the indices to int64) and returns a :class:`Prepared` call,

and :meth:`Prepared.run` then runs the kernel and bumps the Variables'
versions.  The optimizers use :meth:`Spec.prepare_trusted`, which takes arrays
the optimizer has already checked and runs only the hyper-parameter steps: an
``apply_gradients`` prepares every (gradient, variable) pair, hyper-parameters
in each variable's dtype included, before it runs any.  It can also scale the
gradient (``grad_scale``, e.g. the factor of clipping by global norm): the
kernels multiply each gradient element as they read it, so that no scaled copy
of the gradient is made.  cupy arrays (var, slots, gradient and indices all
on the device) run the CUDA twins of the kernels, validated by the same steps
(:mod:`.arrays` holds the device-aware helpers).
"""

import math
import re
import threading
import weakref

import numpy as np

from ..._cuda import training as cuda_kernels
from ..._kernels import training as baseline_kernels
from ...errors import InvalidArgumentError
from ...framework import backend, sparse_rows
from ...framework.backend import kernels_for_cpu
from ...framework.dtypes import FLOAT_DTYPES, INDEX_DTYPES
from ...framework.threads import get_num_threads
from ...framework.variable import Variable
from . import arrays

__all__ = [
    "Spec",
    "Prepared",
    "kernels",
    "use_kernels",
    "shape_str",
    "round_to",
    "documented",
    "GRAD_SHAPE",
    "grad_shape",
    "grad",
    "VAR_RANK",
    "INDICES",
    "GRAD",
    "SPARSE_GRAD",
    "INNER_POSITIVE",
    "IN_RANGE",
    "same_shape",
    "scalar",
    "checked_scalar",
    "global_step",
    "flag",
    "constant",
    "step",
    "positive",
    "non_negative",
    "non_positive",
]


_KERNELS = [kernels_for_cpu(baseline_kernels, "training_avx2")]


def kernels():
    """The kernel module in use: ``sparsegrad._kernels.training`` or its AVX2
    build (the same bits; :func:`use_kernels` swaps it for a test)."""
    return _KERNELS[0]


class use_kernels:
    """Context manager: run the training ops on kernel module `module`.

    For tests that compare the AVX2 and the baseline builds, e.g.
    ``with use_kernels(sparsegrad._kernels.training): ...``.
    """

    def __init__(self, module):
        self._module = module
        self._previous = None

    def __enter__(self):
        self._previous = _KERNELS[0]
        _KERNELS[0] = self._module
        return self._module

    def __exit__(self, *exc):
        _KERNELS[0] = self._previous


# ---------------------------------------------------------------------------
# Locks for use_locking=True: one per underlying buffer, held weakly.

# id(root array) -> Lock; an entry goes when its array is collected (ndarrays
# are not hashable, so a WeakKeyDictionary cannot hold them).
_LOCKS = {}
_LOCKS_GUARD = threading.Lock()


def _root(array):
    """The ndarray (numpy or cupy) that owns the memory `array` views."""
    kind = type(array) if backend.is_cupy_array(array) else np.ndarray
    while isinstance(array.base, kind):
        array = array.base
    return array


def _lock_of(array):
    root = _root(array)
    if backend.is_cupy_array(root):
        # A device buffer, by its address (cupy arrays take no weak
        # references): a lock per address, kept; a reused address reuses it.
        key = ("device", root.data.ptr)
        with _LOCKS_GUARD:
            return _LOCKS.setdefault(key, threading.Lock())
    key = id(root)
    with _LOCKS_GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = threading.Lock()
            weakref.finalize(root, _forget_lock, key)
        return lock


def _forget_lock(key):
    with _LOCKS_GUARD:
        _LOCKS.pop(key, None)


class _Held:
    """Hold the locks of several arrays, each once, in a fixed order."""

    def __init__(self, arrays):
        locks = {id(lock): lock for lock in map(_lock_of, arrays)}
        self._locks = [locks[key] for key in sorted(locks)]

    def __enter__(self):
        for lock in self._locks:
            lock.acquire()

    def __exit__(self, *exc):
        for lock in reversed(self._locks):
            lock.release()


# ---------------------------------------------------------------------------
# Small helpers.


def shape_str(shape):
    """A shape as TensorFlow prints it: ``[3,2]``."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def positive(x):
    return x > 0


def non_negative(x):
    return x >= 0


def non_positive(x):
    return x <= 0


_INT64 = np.dtype(np.int64)
_FLOAT64 = np.dtype(np.float64)


def _inner_dim(var):
    return math.prod(var.shape[1:]) if var.ndim >= 1 else 1


def _state_array(value, name, variables):
    """The buffer a state argument names, checked; a Variable is remembered in
    `variables` so that its version is bumped after the update."""
    if isinstance(value, Variable):
        variables.append(value)
        array = value._value
    elif isinstance(value, np.ndarray) or backend.is_cupy_array(value):
        array = value
    else:
        raise InvalidArgumentError(
            f"{name} must be a numpy array or a Variable to update in place, "
            f"got {type(value).__name__}"
        )
    if array.dtype not in FLOAT_DTYPES:
        raise InvalidArgumentError(
            f"{name} has dtype {array.dtype}; training ops update float32 or "
            "float64 arrays"
        )
    # (cupy arrays are always writeable and have no such flag)
    if not getattr(array.flags, "writeable", True):
        raise InvalidArgumentError(
            f"{name} is read-only; training ops update it in place, so pass a "
            "writeable array"
        )
    if not array.flags.c_contiguous:
        raise InvalidArgumentError(
            f"{name} is not C-contiguous; training ops update it in place and "
            "never copy it, so pass np.ascontiguousarray(...) of it and keep "
            "that array"
        )
    return array


def _check_disjoint(array, name, named):
    """Raise if `array` may share memory with one of the (name, array) pairs.

    The kernels write var and the slots while they read the others (grad,
    indices) on several threads: overlapping buffers would make the result
    depend on the thread count, and indices that change while the kernel runs
    could send it outside var.  var and the slots are C-contiguous, so
    overlapping bounds are overlapping elements.
    """
    for other_name, other in named:
        if arrays.may_share_memory(array, other):
            raise InvalidArgumentError(
                f"{name} shares memory with {other_name}; training ops update "
                "var and the slots in place, so every argument must be a "
                f"separate array (pass a copy of {name})"
            )


def _scalar_array(value, name):
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        got = repr(value) if array.dtype.kind == "O" else f"dtype {array.dtype}"
        raise InvalidArgumentError(f"{name} must be a real number, got {got}")
    return array


# Python floats rounded to float32, for the hyper-parameters an optimizer
# passes at every step.  Kept small: the values that change at every step
# (Adam's beta powers, a schedule's learning rate) miss it and would fill a
# large one before it is cleared; 64 entries hold the constant ones.
_FLOAT32_ROUNDED = {}
_FLOAT32_ROUNDED_SIZE = 64


def round_to(value, dtype):
    """The Python float `value` rounded to float `dtype`, as a Python float."""
    if dtype is _FLOAT64:
        return value
    rounded = _FLOAT32_ROUNDED.get(value)
    if rounded is None:
        rounded = float(dtype.type(value))
        if dtype == np.float32:
            if len(_FLOAT32_ROUNDED) >= _FLOAT32_ROUNDED_SIZE:
                _FLOAT32_ROUNDED.clear()
            _FLOAT32_ROUNDED[value] = rounded
    return rounded


# ---------------------------------------------------------------------------
# Docstrings: the sections every op shares are written once, here, and a
# line ``%(name)s`` in an op's docstring stands for one of them.

_DOC_BLOCKS = {
    "accum_update": """\
accum_update : ndarray or Variable
    Slot of var's shape and dtype: running average of squared updates. Updated
    in place.""",
    "beta": """\
beta : float
    Decay rate of `m`. A scalar, rounded to var's dtype.""",
    "beta1": """\
beta1 : float
    Decay rate of the first moment. A scalar, rounded to var's dtype.""",
    "beta1_power": """\
beta1_power : float
    ``beta1 ** t`` at step t. A scalar, rounded to var's dtype.""",
    "beta2": """\
beta2 : float
    Decay rate of the second moment. A scalar, rounded to var's dtype.""",
    "beta2_power": """\
beta2_power : float
    ``beta2 ** t`` at step t. A scalar, rounded to var's dtype.""",
    "delta": """\
delta : array_like of var's shape
    The gradient; an array must have var's dtype.""",
    "epsilon": """\
epsilon : float
    Small constant for numerical stability. A scalar, rounded to var's dtype.""",
    "global_step": """\
global_step : int
    The training step number (an integer scalar).""",
    "gradient_accumulator": """\
gradient_accumulator : ndarray or Variable
    Slot of var's shape and dtype: sum of the gradients. Updated in place.""",
    "gradient_squared_accumulator": """\
gradient_squared_accumulator : ndarray or Variable
    Slot of var's shape and dtype: sum of the squared gradients. Updated in
    place.""",
    "l1": """\
l1 : float
    L1 regularisation strength. A scalar, rounded to var's dtype.""",
    "l2": """\
l2 : float
    L2 regularisation strength. A scalar, rounded to var's dtype.""",
    "l2_shrinkage": """\
l2_shrinkage : float
    L2 shrinkage regularisation strength (FTRL-V2). A scalar, rounded to var's
    dtype.""",
    "linear": """\
linear : ndarray or Variable
    Slot of var's shape and dtype: FTRL's linear term. Updated in place.""",
    "lr": """\
lr : float
    Learning rate. A scalar, rounded to var's dtype.""",
    "lr_power": """\
lr_power : float
    Power of the accumulator in the learning rate (<= 0). A scalar, rounded to
    var's dtype.""",
    "m": """\
m : ndarray or Variable
    First-moment slot of var's shape and dtype. Updated in place.""",
    "mg": """\
mg : ndarray or Variable
    Slot of var's shape and dtype: mean of the gradients. Updated in place.""",
    "mom": """\
mom : ndarray or Variable
    Slot of var's shape and dtype: the momentum of the update. Updated in place.""",
    "momentum": """\
momentum : float
    Momentum. A scalar, rounded to var's dtype.""",
    "ms": """\
ms : ndarray or Variable
    Slot of var's shape and dtype: mean square of the gradients. Updated in
    place.""",
    "multiply_linear_by_lr": """\
multiply_linear_by_lr : bool, default=False
    Keep `linear` multiplied by `lr` (TensorFlow's variant of the update).""",
    "rho": """\
rho : float
    Decay rate. A scalar, rounded to var's dtype.""",
    "sign_decay": """\
sign_decay : float
    Decay of the sign term. A scalar, rounded to var's dtype.""",
    "update_slots": """\
update_slots : bool, default=True
    When False, `accum` is left as it is.""",
    "use_nesterov": """\
use_nesterov : bool, default=False
    Use Nesterov momentum.""",
    "v": """\
v : ndarray or Variable
    Second-moment slot of var's shape and dtype. Updated in place.""",
    "var_sparse": """\
var : ndarray or Variable of shape (n_rows, ...), float32 or float64
    Updated in place.""",
    "var_dense": """\
var : ndarray or Variable, float32 or float64
    Updated in place.""",
    "grad_sparse": """\
grad : array_like of shape (len(indices),) + var.shape[1:]
    Gradient rows, one per index; an array must have var's dtype.""",
    "grad_dense": """\
grad : array_like of var's shape
    The gradient; an array must have var's dtype.""",
    "indices": """\
indices : array_like of shape (n,), int32 or int64
    Rows of var, each in ``[0, var.shape[0])``; repeats allowed.""",
    "use_locking": """\
use_locking : bool, default=False
    Hold a lock on var and the slots for the update, so that concurrent calls
    on the same arrays from several Python threads run one after another.""",
    "coalesce_duplicates": """\
coalesce_duplicates : bool, default=False
    Sum the rows of each repeated index first (in their original order) and
    update once per distinct index, as Keras' optimizers do; otherwise every
    occurrence gets the full update, in order, as in TensorFlow.""",
    "returns_sparse": """\
Returns
-------
None
    var and the slots are updated in place (a Variable's version is bumped).

Raises
------
InvalidArgumentError
    On a bad argument (shape, dtype, rank, a non-scalar hyper-parameter, an
    index out of range), checked in TensorFlow's order and with its message,
    before anything is written: var and the slots are then bit-for-bit
    unchanged.""",
    "returns_dense": """\
Returns
-------
None
    var and the slots are updated in place (a Variable's version is bumped).

Raises
------
InvalidArgumentError
    On a bad argument (shape, dtype, rank, a non-scalar hyper-parameter),
    checked in TensorFlow's order and with its message, before anything is
    written: var and the slots are then bit-for-bit unchanged.""",
}


def documented(function):
    """Expand the shared docstring sections (``%(name)s`` lines, indented as
    the line) of a public training op."""

    def expand(match):
        indent, name = match.groups()
        return "\n".join(indent + line if line else ""
                         for line in _DOC_BLOCKS[name].split("\n"))

    function.__doc__ = re.sub(r"^([ \t]*)%\((\w+)\)s$", expand, function.__doc__,
                              flags=re.M)
    return function


# ---------------------------------------------------------------------------
# The state of one call while its steps run.


class _Call:
    """The arguments of one call: state arrays resolved, the others as given.

    Steps read ``args`` (the raw arguments by name) and fill ``hyper`` (the
    kernel's hyper-parameters by name), ``grad`` and ``indices`` (checked, not
    yet converted).
    """

    __slots__ = ("args", "var", "dtype", "slots", "named", "variables", "hyper",
                 "grad", "indices")

    def __init__(self, args, var, slot_names):
        self.args = args
        self.variables = []
        self.var = _state_array(var, "var", self.variables)
        self.dtype = self.var.dtype
        self.slots = {}
        self.named = [("var", self.var)]
        for name in slot_names:
            array = _state_array(args[name], name, self.variables)
            if array.dtype != self.dtype:
                raise InvalidArgumentError(
                    f"{name} dtype {array.dtype} does not match var dtype "
                    f"{self.dtype}; every slot must have var's dtype"
                )
            _check_disjoint(array, name, self.named)
            self.slots[name] = array
            self.named.append((name, array))
        self.hyper = {}
        self.grad = None
        self.indices = None

    def rounded(self, value, name, label=None, sep=": "):
        """`value` rounded to the dtype of var, as a Python float."""
        if type(value) is float:                # the common case, made cheap
            return round_to(value, self.dtype)
        array = _scalar_array(value, name)
        if array.ndim != 0:
            raise InvalidArgumentError(
                f"{label or name} is not a scalar{sep}{shape_str(array.shape)}"
            )
        return float(array.astype(self.dtype))


# ---------------------------------------------------------------------------
# Steps.  Each is a function of the call; the factories below make the ones
# that take parameters.  A spec lists them in TensorFlow's order.


def same_shape(name, shown=None):
    """var and slot `name` must have identical shapes."""

    def check(call):
        other = call.slots[name]
        if other.shape != call.var.shape:
            raise InvalidArgumentError(
                f"var and {shown or name} do not have the same shape"
                f"{shape_str(call.var.shape)} {shape_str(other.shape)}"
            )

    return check


def grad_shape(name="grad"):
    """A dense op's gradient (argument `name`) must have var's shape."""

    def check(call):
        if call.grad.shape != call.var.shape:
            raise InvalidArgumentError(
                f"var and {name} do not have the same shape"
                f"{shape_str(call.var.shape)} {shape_str(call.grad.shape)}"
            )

    return check


GRAD_SHAPE = grad_shape()


def VAR_RANK(call):
    if call.var.ndim < 1:
        raise InvalidArgumentError(
            "var must be at least 1 dimensional: var has shape "
            f"{shape_str(call.var.shape)}"
        )


def INNER_POSITIVE(call):
    if _inner_dim(call.var) == 0:
        raise InvalidArgumentError(
            "Inner dimension should be greater than zero.: var has shape "
            f"{shape_str(call.var.shape)}"
        )


def _grad_step(name):
    def check(call):
        value = call.args[name]
        typed = isinstance(value, np.ndarray) or hasattr(value, "dtype")
        array = arrays.as_array(value)
        if array.dtype.kind not in "biuf":
            raise InvalidArgumentError(
                f"{name} must be real, got dtype {array.dtype}"
            )
        if array.dtype != call.dtype:
            if typed and array.dtype.kind == "f":
                raise InvalidArgumentError(
                    f"{name} dtype {array.dtype} does not match var dtype "
                    f"{call.dtype}"
                )
        elif array.flags.c_contiguous:
            # Used as it is by the kernel: it must not overlap the state.
            _check_disjoint(array, name, call.named)
        call.grad = array

    return check


def grad(name="grad"):
    """The gradient argument `name`: real, var's dtype if it has a float one;
    converted only after every check."""
    return _grad_step(name)


GRAD = grad()


def INDICES(call):
    array = arrays.as_array(call.args["indices"])
    if array.ndim != 1:
        raise InvalidArgumentError(
            "indices must be one-dimensional: indices has shape "
            f"{shape_str(array.shape)}"
        )
    if array.dtype not in INDEX_DTYPES:
        array = sparse_rows.index_array(array, "indices")
    elif array.flags.c_contiguous:
        # Read as they are while the kernel writes: no overlap with the state.
        _check_disjoint(array, "indices", call.named)
    call.indices = array


def SPARSE_GRAD(call):
    """TensorFlow's sparse-kernel shape checks, rank check included."""
    var, grad, indices = call.var, call.grad, call.indices
    if grad.ndim != var.ndim:
        raise InvalidArgumentError(
            "grad must have the same number of dimensions as var: grad has "
            f"shape {shape_str(grad.shape)} and var {shape_str(var.shape)}"
        )
    for d in range(1, var.ndim):
        if grad.shape[d] != var.shape[d]:
            raise InvalidArgumentError(
                f"var and grad must match in dimension {d}: var has shape "
                f"{shape_str(var.shape)} and grad {shape_str(grad.shape)}"
            )
    if grad.shape[0] != indices.shape[0]:
        raise InvalidArgumentError(
            "grad must be the same size as indices in the first dimension.: "
            f"grad has {grad.shape[0]} rows and indices {indices.shape[0]} "
            "entries"
        )


def _in_range_step(keras):
    def check(call):
        indices, n_rows = call.indices, call.var.shape[0]
        if keras:       # Keras' kernel raises the gather/scatter message
            sparse_rows.check_in_range(indices, n_rows)
            return
        bad = sparse_rows.first_out_of_range(indices, n_rows)
        if bad is None:
            return
        raise InvalidArgumentError(
            f"Index {int(indices[bad])} at offset {bad} in indices is out of range: "
            f"var has {n_rows} rows"
        )

    return check


IN_RANGE = _in_range_step(False)
IN_RANGE.keras = _in_range_step(True)


def scalar(name, label=None, sep=": "):
    """Hyper-parameter `name`: a real scalar, rounded to var's dtype."""

    def check(call):
        call.hyper[name] = call.rounded(call.args[name], name, label, sep)

    check.hyper = name
    return check


def checked_scalar(name, label, test, what):
    """A scalar hyper-parameter that must pass `test` (after rounding to var's
    dtype); TensorFlow's message prints the shape, not the value."""

    def check(call):
        array = _scalar_array(call.args[name], name)
        result = float(array.astype(call.dtype)) if array.ndim == 0 else None
        if result is None or not test(result):
            shown = f" (got {result!r})" if result is not None else ""
            raise InvalidArgumentError(
                f"{label} is not {what}: {shape_str(array.shape)}{shown}"
            )
        call.hyper[name] = result

    check.hyper = name
    return check


def global_step(name="global_step"):
    """An integer scalar, passed to the kernel as a float."""

    def check(call):
        array = np.asarray(call.args[name])
        if array.ndim != 0:
            raise InvalidArgumentError(
                f"global_step is not a scalar: {shape_str(array.shape)}"
            )
        if array.dtype.kind not in "iu":
            raise InvalidArgumentError(
                f"global_step must be an integer (int64), got dtype {array.dtype}"
            )
        call.hyper[name] = float(int(array))

    check.hyper = name
    return check


def flag(name):
    """A boolean argument, passed to the kernel as 0 or 1."""

    def check(call):
        call.hyper[name] = float(bool(call.args[name]))

    check.hyper = name
    return check


def constant(name, value):
    """A hyper-parameter fixed by the op (e.g. FTRL's ``v2`` switch)."""

    def check(call):
        call.hyper[name] = float(value)

    check.hyper = name
    return check


def step(function, hyper=None):
    """A step of the op's own (a function of the call); `hyper`, the name of
    the hyper-parameter it sets, marks one that only reads and writes
    hyper-parameters, which the optimizers run."""
    function.hyper = hyper
    return function


# ---------------------------------------------------------------------------
# Specs and prepared calls.


class Spec:
    """One raw training op: its slots, its checks in TensorFlow's order, and
    its kernel.

    The kernel's hyper-parameters are named by the kernel module
    (``sparsegrad._kernels.training.HYPERPARAMETERS[kernel]``, in the order
    the kernel reads them); the steps must set each of them by that name, and
    :class:`Prepared` passes them in that order.

    Parameters
    ----------
    kernel : str
        The kernel's name without prefix: ``"adagrad_v2"`` runs
        ``dense_adagrad_v2`` or ``sparse_adagrad_v2``.
    slots : tuple of str
        The state arguments after var, in TensorFlow's order.
    steps : tuple of callables
        The checks, in TensorFlow's order (see the step factories).
    sparse : bool
        A ``sparse_apply_*`` op (indices, rows) or a dense one.
    rowwise : bool
        One accumulator per row of var (the row-wise Adagrad ops).
    """

    __slots__ = ("kernel", "slots", "steps", "hyper", "sparse", "rowwise",
                 "hyper_steps", "driver", "by_row_driver", "_hp_cache")

    def __init__(self, kernel, slots, steps, *, sparse, rowwise=False):
        self.kernel = kernel
        self.slots = tuple(slots)
        self.steps = tuple(steps)
        self.hyper = baseline_kernels.HYPERPARAMETERS[kernel]
        self.sparse = sparse
        self.rowwise = rowwise
        self.hyper_steps = tuple(s for s in self.steps
                                 if getattr(s, "hyper", None))
        #: The kernel function's name in the kernel module.
        self.driver = ("sparse_" if sparse else "dense_") + kernel
        self.by_row_driver = self.driver + "_by_row"
        self._hp_cache = {}
        missing = set(self.hyper) - {s.hyper for s in self.hyper_steps}
        if missing:
            raise AssertionError(f"{self.driver}: no step sets {sorted(missing)}")

    def call(self, args):
        """Check the arguments of a public call (its ``locals()``), then run."""
        self.prepare(args).run(args.get("use_locking", False),
                               args.get("coalesce_duplicates", False))

    def prepare(self, args):
        """Run every check on `args`; return the :class:`Prepared` call."""
        call = _Call(args, args["var"], self.slots)
        for check in self.steps:
            check(call)
        grad, indices = arrays.kernel_arrays(call.grad, call.indices, call.dtype,
                                             call.var, self.driver)
        return Prepared(self, call.var, list(call.slots.values()),
                        call.variables, grad, indices, self.kernel_hyper(call.hyper))

    def prepare_trusted(self, var, slots, grad, indices, args, *, grad_scale=1.0,
                        groups=None):
        """Prepare a call from an optimizer, on arrays it has checked.

        Only the hyper-parameter steps run, on `args`; nothing else is
        checked.

        Parameters
        ----------
        var : Variable
            The variable to update, owned by the optimizer.
        slots : sequence of Variable
            Its slots, in the spec's order.
        grad : ndarray
            The gradient, C-contiguous in var's dtype, sharing no memory with
            var or the slots.
        indices : ndarray or None
            Sparse ops: 1-D int32 or int64 rows of var, in range.  None for a
            dense op.
        args : dict
            The hyper-parameters' values, by the names the steps read.
        grad_scale : float, default=1.0
            A factor of the gradient: the update is bit for bit the one of
            ``grad * np.asarray(grad_scale, var.dtype)``, computed without
            that copy (the kernels scale each gradient row as they read it;
            coalescing sums the scaled rows).  A Python float that the caller
            has already rounded to var's dtype (e.g.
            ``float(np.float32(s))``); not checked.
        groups : tuple of ndarray, optional
            Sparse ops: ``(unique, order, starts)``, what
            :func:`sparsegrad.framework.sparse_rows.group_rows` gave for
            `indices` (the caller grouped them already, e.g. for a global
            norm): a coalesced update then runs on these groups, row by
            ascending row, instead of grouping the indices again.  The same
            bits either way.  Not checked.

        Returns
        -------
        Prepared
            The call, ready to run.
        """
        array = var._value
        dtype = array.dtype
        # An optimizer passes the same hyper-parameters step after step:
        # their checked kernel array is kept (a small cache per spec).  Not
        # for zeros (0.0 and -0.0 are equal keys, but not the same bits) nor
        # unhashable values.
        key = hp = None
        try:
            if 0 not in args.values():
                key = (dtype, *args.items())
                hp = self._hp_cache.get(key)
        except (TypeError, ValueError):         # arrays among the values
            key = None
        if hp is None:
            call = _Call.__new__(_Call)
            call.args = args
            call.var = array
            call.dtype = dtype
            call.hyper = {}
            for check in self.hyper_steps:
                check(call)
            hp = self.kernel_hyper(call.hyper)
            if key is not None:
                if len(self._hp_cache) >= 64:
                    self._hp_cache.clear()
                self._hp_cache[key] = hp
        grad, indices = arrays.kernel_arrays(grad, indices, dtype, array,
                                             self.driver)
        return Prepared(self, array, [s._value for s in slots], [var, *slots], grad,
                        indices, hp, grad_scale, groups)

    def kernel_hyper(self, hyper):
        """The kernel's ``hp`` array: the hyper-parameters `hyper` (by name)
        in the order the kernel reads them, read-only."""
        hp = np.array([hyper[name] for name in self.hyper], dtype=np.float64)
        hp.flags.writeable = False
        return hp


class Prepared:
    """A checked call of a raw op, ready to run: nothing is left to fail.

    Parameters
    ----------
    spec : Spec
        The op.
    var : ndarray
        var's buffer, updated in place.
    slots : list of ndarray
        The slots' buffers, in the spec's order.
    variables : list of Variable
        The Variables among them, whose versions :meth:`run` bumps.
    grad : ndarray
        The gradient, C-contiguous in var's dtype.
    indices : ndarray or None
        Sparse ops: the rows, C-contiguous int64.  None for a dense op.
    hp : ndarray
        The kernel's hyper-parameters (:meth:`Spec.kernel_hyper`).
    grad_scale : float, default=1.0
        The factor the kernels apply to each gradient element as they read
        it, exactly representable in var's dtype (see
        :meth:`Spec.prepare_trusted`).
    groups : tuple of ndarray, optional
        Sparse ops: the groups of `indices` (see :meth:`Spec.prepare_trusted`).
    """

    __slots__ = ("spec", "var", "slots", "variables", "grad", "indices", "hp",
                 "grad_scale", "groups")

    def __init__(self, spec, var, slots, variables, grad, indices, hp,
                 grad_scale=1.0, groups=None):
        self.spec = spec
        self.var = var
        self.slots = slots
        self.variables = variables
        self.grad = grad
        self.indices = indices
        self.hp = hp
        self.grad_scale = grad_scale
        self.groups = groups

    def _call(self, use_locking, kernel, *args):
        """Run `kernel`, holding the locks of var and the slots if asked."""
        if use_locking:
            with _Held([self.var, *self.slots]):
                kernel(*args)
        else:
            kernel(*args)

    def run(self, use_locking=False, coalesce=True):
        """Run the kernel, then bump the versions of the Variables.

        cupy arrays run the kernels of :mod:`sparsegrad._cuda.training`
        (the same names and signatures); there every sparse update groups
        the indices on the device and runs one kernel (see :meth:`_sparse`).
        """
        spec, var = self.spec, self.var
        k = cuda_kernels if backend.is_cupy_array(var) else _KERNELS[0]
        driver = getattr(k, spec.driver)
        n_threads = get_num_threads()
        if not spec.sparse:
            if var.size:
                if spec.rowwise:
                    n_rows = var.shape[0]
                    self._call(use_locking, driver, var.reshape(n_rows, -1),
                               self.slots[0].reshape(n_rows, 1),
                               self.grad.reshape(n_rows, -1), self.hp,
                               self.grad_scale, n_threads)
                else:
                    flat = [var.reshape(-1)] + [s.reshape(-1) for s in self.slots]
                    flat += [flat[0]] * (4 - len(flat))
                    self._call(use_locking, driver, *flat, self.grad.reshape(-1),
                               self.hp, self.grad_scale, n_threads)
        elif self.indices.shape[0] and var.size:
            n_rows = var.shape[0]
            if spec.rowwise:
                rows = [var.reshape(n_rows, -1)]
                rows += [self.slots[0].reshape(n_rows, 1)] * 3
            elif var.ndim == 2:
                rows = [var, *self.slots]
                rows += [var] * (4 - len(rows))
            else:
                rows = [var.reshape(n_rows, -1)]
                rows += [s.reshape(n_rows, -1) for s in self.slots]
                rows += [rows[0]] * (4 - len(rows))
            self._sparse(k, driver, rows, coalesce, use_locking, n_threads)
        for variable in self.variables:
            variable._bump()

    def _sparse(self, k, driver, rows, coalesce, use_locking, n_threads):
        """Run ``sparse_<op>`` (each thread scans the indices for its own
        rows), or ``sparse_<op>_by_row``, which groups the occurrences by row
        first: to coalesce, and for narrow rows on several threads, where the
        scans would cost as much as the updates; ``_grouped`` on the groups
        made by the caller (or here, row-wise).  On the GPU: ``_grouped`` on
        the caller's groups, else ``_by_row`` (see the comment below)."""
        indices = self.indices
        n = indices.shape[0]
        grad = self.grad
        scale = self.grad_scale
        if grad.ndim != 2:
            grad = grad.reshape(n, -1)
        width = grad.shape[1]
        if (coalesce and self.groups is None and self.spec.rowwise
                and k is not cuda_kernels):  # grouped: four rows' squares at once
            self.groups = sparse_rows.group_rows(indices, rows[0].shape[0] - 1)
        if k is cuda_kernels and not (coalesce and self.groups is not None):
            # The GPU's by-row driver groups the indices on the device (a
            # stable sort) and needs no scratch; on the device it is the one
            # sparse driver, with or without coalescing, for every n.
            self._call(use_locking, getattr(k, self.spec.by_row_driver), *rows,
                       grad, indices, self.hp, scale, bool(coalesce), n_threads,
                       None)
        elif coalesce and self.groups is not None:
            # Grouped by the caller: one update per distinct row, the rows in
            # ascending order (memory in order: narrow rows share cache lines
            # and pages with their neighbours).
            unique, order, starts = self.groups
            if unique.dtype != _INT64:
                unique = unique.astype(_INT64)
            self._call(use_locking, getattr(k, self.spec.driver + "_grouped"), *rows,
                       grad, unique, order, starts, self.hp, scale, n_threads)
        elif n >= _BY_ROW_MAX_N:
            # Beyond the by-row kernels' int32 links: sum the duplicates first
            # (in order, from zero: the same bits), then one update per row.
            # The sums must be those of the scaled rows: scaled, the
            # gradient is copied times the factor first (the only copy made
            # for a scale, on this path alone).
            if coalesce:
                if scale != 1.0:
                    grad = grad * np.asarray(scale, grad.dtype)
                    scale = 1.0
                indices, grad = sparse_rows.deduplicate(
                    indices, grad, rows[0].shape[0] - 1)
            self._call(use_locking, driver, *rows, grad, indices, self.hp,
                       scale, n_threads)
        elif coalesce or (n_threads > 1 and width < _NARROW_ROW):
            scratch = _scratch(k.by_row_scratch_size(n, width, n_threads))
            self._call(use_locking, getattr(k, self.spec.by_row_driver), *rows,
                       grad, indices, self.hp, scale, bool(coalesce), n_threads,
                       scratch)
        else:
            self._call(use_locking, driver, *rows, grad, indices, self.hp,
                       scale, n_threads)


# The by-row kernels link occurrences with int32 offsets.
_BY_ROW_MAX_N = baseline_kernels.BY_ROW_MAX_N
# Rows narrower than this take the by-row sparse kernel on several threads.
_NARROW_ROW = 16
_scratch_cache = threading.local()


def _scratch(words):
    """An int32 work area of at least `words` entries for the by-row kernels,
    kept per Python thread (the kernels release the GIL) and grown on demand:
    fresh large buffers would cost page faults on every call."""
    buffer = getattr(_scratch_cache, "buffer", None)
    if buffer is None or buffer.shape[0] < words:
        buffer = np.empty(max(words, 1024), dtype=np.int32)
        _scratch_cache.buffer = buffer
    return buffer
