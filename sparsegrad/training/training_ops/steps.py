"""The checks of the raw training ops: the state of one call and its steps.

A :class:`Call` resolves var and the slots of a public call (Variables or
writeable C-contiguous float arrays of one dtype, pairwise disjoint) and
chooses the call's backend once (:func:`~sparsegrad.framework.backend.
backend_of` on var, the slots, the gradient and the indices: a host/GPU mix
raises there).  The *steps* are functions of the call, run in TensorFlow's
order, each raising :class:`~sparsegrad.errors.InvalidArgumentError` with
TensorFlow's text; the factories below make the ones that take parameters.
A step that sets a kernel hyper-parameter carries its name (``.hyper``).
"""

import math

import numpy as np

from ...errors import InvalidArgumentError
from ...framework import sparse_rows
from ...framework.backend import backend_of
from ...framework.dtypes import (
    FLOAT_DTYPES,
    HALF_DTYPES,
    INDEX_DTYPES,
    is_floating,
    is_real,
)
from ...framework.variable import Variable
from . import arrays

__all__ = [
    "Call",
    "shape_str",
    "round_to",
    "GRAD_SHAPE",
    "grad_shape",
    "grad",
    "VAR_RANK",
    "INDICES",
    "GRAD",
    "SPARSE_GRAD",
    "INNER_POSITIVE",
    "IN_RANGE",
    "given_scalar",
    "L1",
    "L2",
    "L1_NON_NEGATIVE",
    "L2_NON_NEGATIVE",
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


def shape_str(shape):
    """A shape as TensorFlow prints it: ``[3,2]``."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def positive(x):
    return x > 0


def non_negative(x):
    return x >= 0


def non_positive(x):
    return x <= 0


_FLOAT64 = np.dtype(np.float64)
_FLOAT32 = np.dtype(np.float32)
# What var and the slots may hold.
_STATE_DTYPES = FLOAT_DTYPES + HALF_DTYPES


def _inner_dim(var):
    return math.prod(var.shape[1:]) if var.ndim >= 1 else 1


def _state_array(array, name, be):
    """The buffer `array` of state argument `name` (a Variable's already
    unwrapped), checked."""
    if not be.on_gpu and not isinstance(array, np.ndarray):
        raise InvalidArgumentError(
            f"{name} must be a numpy array or a Variable to update in place, "
            f"got {type(array).__name__}"
        )
    if array.dtype not in _STATE_DTYPES:
        raise InvalidArgumentError(
            f"{name} has dtype {array.dtype}; training ops update float16, "
            "bfloat16, float32 or float64 arrays"
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


def _check_disjoint(array, name, named, be):
    """Raise if `array` may share memory with one of the (name, array) pairs.

    The kernels write var and the slots while they read the others (grad,
    indices) on several threads: overlapping buffers would make the result
    depend on the thread count, and indices that change while the kernel runs
    could send it outside var.  var and the slots are C-contiguous, so
    overlapping bounds are overlapping elements.
    """
    for other_name, other in named:
        if be.xp.may_share_memory(array, other):
            raise InvalidArgumentError(
                f"{name} shares memory with {other_name}; training ops update "
                "var and the slots in place, so every argument must be a "
                f"separate array (pass a copy of {name})"
            )


def _scalar_array(value, name):
    array = np.asarray(value)
    if not is_real(array.dtype):
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
    if dtype != _FLOAT32:               # the half types: not cached
        return float(dtype.type(value))
    rounded = _FLOAT32_ROUNDED.get(value)
    if rounded is None:
        rounded = float(dtype.type(value))
        if len(_FLOAT32_ROUNDED) >= _FLOAT32_ROUNDED_SIZE:
            _FLOAT32_ROUNDED.clear()
        _FLOAT32_ROUNDED[value] = rounded
    return rounded


class Call:
    """The arguments of one call: state arrays resolved, the others as given.

    Steps read ``args`` (the raw arguments by name) and fill ``hyper`` (the
    kernel's hyper-parameters by name), ``grad`` and ``indices`` (checked, not
    yet converted); ``be`` is the call's backend, chosen here once.
    """

    __slots__ = ("args", "be", "var", "dtype", "slots", "named", "variables",
                 "hyper", "grad", "indices")

    def __init__(self, args, slot_names):
        self.args = args
        self.variables = variables = []
        buffers = []
        for value in (args["var"], *(args[name] for name in slot_names)):
            if isinstance(value, Variable):
                variables.append(value)
                value = value._value
            buffers.append(value)
        self.be = be = backend_of(*buffers, args.get("grad"), args.get("delta"),
                                  args.get("indices"))
        self.var = _state_array(buffers[0], "var", be)
        self.dtype = self.var.dtype
        self.slots = {}
        self.named = [("var", self.var)]
        for name, value in zip(slot_names, buffers[1:]):
            array = _state_array(value, name, be)
            if array.dtype != self.dtype:
                raise InvalidArgumentError(
                    f"{name} dtype {array.dtype} does not match var dtype "
                    f"{self.dtype}; every slot must have var's dtype"
                )
            _check_disjoint(array, name, self.named, be)
            self.slots[name] = array
            self.named.append((name, array))
        self.hyper = {}
        self.grad = None
        self.indices = None

    @classmethod
    def trusted(cls, args, var, be, dtype=None):
        """A call of the hyper-parameter steps alone, on an optimizer's
        checked array `var`; the hyper-parameters are rounded to `dtype`
        (default var's: float32 for a mixed-precision update)."""
        call = cls.__new__(cls)
        call.args = args
        call.be = be
        call.var = var
        call.dtype = var.dtype if dtype is None else dtype
        call.hyper = {}
        return call

    def rounded(self, value, name, label=None, sep=": ", dtype=None):
        """`value` rounded to the dtype of var (or to `dtype`), as a Python
        float."""
        dtype = self.dtype if dtype is None else dtype
        if type(value) is float:                # the common case, made cheap
            return round_to(value, dtype)
        array = _scalar_array(value, name)
        if array.ndim != 0:
            raise InvalidArgumentError(
                f"{label or name} is not a scalar{sep}{shape_str(array.shape)}"
            )
        return float(array.astype(dtype))


# ---------------------------------------------------------------------------
# Steps, in the order the specs list them most often.


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
        array = arrays.as_array(value, call.be)
        if not is_real(array.dtype):
            raise InvalidArgumentError(
                f"{name} must be real, got dtype {array.dtype}"
            )
        if array.dtype != call.dtype:
            if typed and is_floating(array.dtype):
                raise InvalidArgumentError(
                    f"{name} dtype {array.dtype} does not match var dtype "
                    f"{call.dtype}"
                )
        elif array.flags.c_contiguous:
            # Used as it is by the kernel: it must not overlap the state.
            _check_disjoint(array, name, call.named, call.be)
        call.grad = array

    return check


def grad(name="grad"):
    """The gradient argument `name`: real, var's dtype if it has a float one;
    converted only after every check."""
    return _grad_step(name)


GRAD = grad()


def INDICES(call):
    array = arrays.as_array(call.args["indices"], call.be)
    if array.ndim != 1:
        raise InvalidArgumentError(
            "indices must be one-dimensional: indices has shape "
            f"{shape_str(array.shape)}"
        )
    if array.dtype not in INDEX_DTYPES:
        array = sparse_rows.index_array(array, "indices", call.be)
    elif array.flags.c_contiguous:
        # Read as they are while the kernel writes: no overlap with the state.
        _check_disjoint(array, "indices", call.named, call.be)
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
            sparse_rows.check_in_range(indices, n_rows, be=call.be)
            return
        bad = sparse_rows.first_out_of_range(indices, n_rows, call.be)
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


def given_scalar(name):
    """Hyper-parameter `name`: a real scalar kept in float64 as given, for a
    kernel that derives a value from it in float64 and rounds that once."""

    def check(call):
        call.hyper[name] = call.rounded(call.args[name], name, dtype=_FLOAT64)

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



# The regularisation strengths, as most ops check them.
L1 = scalar("l1", "l1 regularization strength")
L2 = scalar("l2", "l2 regularization strength")
L1_NON_NEGATIVE = checked_scalar("l1", "l1 regularization strength", non_negative,
                                 "a non-negative scalar")
L2_NON_NEGATIVE = checked_scalar("l2", "l2 regularization strength", non_negative,
                                 "a non-negative scalar")
