"""Converting op arguments: the one place an op turns its inputs into Tensors.

Also the small shared pieces of every op module: wrapping a result array,
dtype checks for two operands, axis normalisation and the reduction of a
broadcast gradient back to an input's shape.
"""

import math

import numpy as np

from ..autodiff.tape import _STATE, record_variable_read
from ..errors import InvalidArgumentError
from ..framework import tensor as _tensor_module
from ..framework.dtypes import check_numeric
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, convert_to_tensor
from ..framework.variable import Variable

__all__ = ["as_tensor", "as_borrowed_tensor", "read_variable"]

_ndarray = np.ndarray
_new_tensor = Tensor.__new__
_next_id = _tensor_module._next_id
_STRONG = (Tensor, Variable, IndexedSlices)

# Python scalar operands converted to 0-d Tensors, by (type, value, dtype).
# They are constants nobody can watch (the caller never sees them), so one
# Tensor serves every op that uses the same scalar.
_SCALARS = {}


def read_variable(var):
    """The current value of `var` as a Tensor, recorded as a read.

    Active tapes map gradients of the returned Tensor back to `var` (and watch
    it if it is trainable and they watch accessed variables); the read
    remembers the variable's version so a later in-place change is detected.
    """
    t = wrap(var._value.view())
    state = _STATE
    if state.tapes or state.watchers:
        record_variable_read(var, t)
    return t


def as_tensor(x, dtype=None, name=None):
    """Convert an op argument to a Tensor.

    A Variable is read through :func:`read_variable`; anything else goes
    through :func:`~sparsegrad.convert_to_tensor` (an IndexedSlices is
    densified).
    """
    if type(x) is Tensor and dtype is None:
        return x
    if isinstance(x, Variable):
        t = read_variable(x)
        if dtype is not None:
            return convert_to_tensor(t, dtype=dtype, name=name)
        return t
    return convert_to_tensor(x, dtype=dtype, name=name)


def as_borrowed_tensor(x, name=None):
    """:func:`as_tensor`, but a caller's ndarray is viewed, never copied.

    For ops that read a few rows of a possibly huge table (gather, a sparse @
    dense product) and return a new array: wrapping a copy of the table would
    cost O(table) per call.  The Tensor is a read-only view of the caller's
    array, so it must not outlive the op (it is no constant: the caller may
    write the array later).  It cannot be on a tape (it is new), so no op
    records it.
    """
    if type(x) is _ndarray:
        check_numeric(x.dtype, name or "value")
        return wrap(x.view())
    return as_tensor(x, name=name)


def dense_gradient(grad):
    """`grad` as a dense Tensor; an IndexedSlices is densified.

    While a tape records (a gradient being differentiated again), the dense
    form is built with the differentiable ``tensor_scatter_add``, so the outer
    tape still sees how it depends on the rows.
    """
    if type(grad) is Tensor:
        return grad
    if isinstance(grad, IndexedSlices) and _STATE.tapes:
        from .array_ops import tensor_scatter_add

        zeros = np.zeros(grad._require_dense_shape("densifying a gradient"), grad.dtype)
        return tensor_scatter_add(wrap(zeros), grad.indices, grad.values)
    return as_tensor(grad)


def wrap(array):
    """A Tensor owning `array` (a fresh result nobody else holds; no copy)."""
    if type(array) is not _ndarray:
        array = np.asarray(array)
    array.setflags(write=False)
    t = _new_tensor(Tensor)
    t._value = array
    t._id = _next_id()
    return t


def _dtype_mismatch(op_name, x, y):
    raise InvalidArgumentError(
        f"{op_name}: x has dtype {x.dtype} but y has dtype {y.dtype}; the "
        "operands of a binary op must have one dtype (use sg.cast)"
    )


def convert_like(value, like, op_name, arg):
    """Convert a Python scalar / list / array operand to the dtype of `like`.

    This is NumPy 2's "weak scalar" rule extended to array_likes: a value that
    is not a Tensor adopts the dtype of the Tensor operand.  A float value for
    an integer Tensor is an error (it would truncate).
    """
    dtype = like._value.dtype
    if isinstance(value, Variable):
        t = read_variable(value)
        if t._value.dtype != dtype:
            _dtype_mismatch(op_name, like, t) if arg == "y" else _dtype_mismatch(
                op_name, t, like
            )
        return t
    if isinstance(value, IndexedSlices):
        value = value.to_dense()
        if value.dtype != dtype:
            raise InvalidArgumentError(
                f"{op_name}: {arg} is IndexedSlices of dtype {value.dtype}, the "
                f"other operand has dtype {dtype}"
            )
        return value
    vt = type(value)
    if vt is float or vt is int or vt is bool:
        key = (vt, value, dtype)
        cached = _SCALARS.get(key)
        if cached is not None:
            return cached
        if vt is float and dtype.kind in "iub":
            raise InvalidArgumentError(
                f"{op_name}: {arg}={value!r} is a float but the other operand is a "
                f"{dtype} Tensor; cast the Tensor to a float dtype first"
            )
        try:
            t = wrap(np.array(value, dtype))
        except OverflowError:
            raise InvalidArgumentError(
                f"{op_name}: {arg}={value!r} does not fit in {dtype}"
            ) from None
        if vt is not float or (not math.isnan(value) and value != 0.0):  # no +-0.0
            if len(_SCALARS) >= 1024:
                _SCALARS.clear()
            _SCALARS[key] = t
        return t
    if value is None:
        raise TypeError(f"{op_name}: {arg} is None; expected a Tensor or array_like")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{op_name}: cannot convert {arg} to a Tensor: {exc}") from None
    check_numeric(array.dtype, arg)
    if array.dtype.kind == "f" and dtype.kind in "iub":
        raise InvalidArgumentError(
            f"{op_name}: {arg} has dtype {array.dtype} but the other operand is a "
            f"{dtype} Tensor; cast the Tensor to a float dtype first"
        )
    return wrap(np.array(array, dtype=dtype, copy=True))


def binary_operands(x, y, op_name):
    """Two operands as Tensors of one dtype."""
    if type(x) is Tensor:
        if type(y) is Tensor:
            if (
                x._value.dtype is not y._value.dtype
                and x._value.dtype != y._value.dtype
            ):
                _dtype_mismatch(op_name, x, y)
            return x, y
        if isinstance(y, _STRONG) and not isinstance(y, Variable):
            y = as_tensor(y)
            if y.dtype != x.dtype:
                _dtype_mismatch(op_name, x, y)
            return x, y
        return x, convert_like(y, x, op_name, "y")
    if type(y) is Tensor:
        if isinstance(x, _STRONG) and not isinstance(x, Variable):
            x = as_tensor(x)
            if y.dtype != x.dtype:
                _dtype_mismatch(op_name, x, y)
            return x, y
        return convert_like(x, y, op_name, "x"), y
    if isinstance(x, _STRONG):
        x = as_tensor(x)
        return x, convert_like(y, x, op_name, "y")
    if isinstance(y, _STRONG):
        y = as_tensor(y)
        return convert_like(x, y, op_name, "x"), y
    x = convert_to_tensor(x, name="x")
    y = convert_to_tensor(y, name="y")
    if x.dtype != y.dtype:
        dtype = np.result_type(x._value, y._value)
        x = wrap(x._value.astype(dtype))
        y = wrap(y._value.astype(dtype))
    return x, y


def normalize_axis(axis, ndim, op_name):
    """`axis` (None, int or sequence) as a sorted tuple of non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, Tensor):
        axis = axis._value.tolist()
    if isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    out = []
    for a in axis:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise InvalidArgumentError(f"{op_name}: axis must be ints, got {axis!r}")
        a = int(a)
        if not -ndim <= a < ndim:
            raise InvalidArgumentError(
                f"{op_name}: axis {a} is out of range for a tensor of rank {ndim} "
                f"(expected [-{ndim}, {ndim}))"
            )
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise InvalidArgumentError(f"{op_name}: repeated axis in {axis!r}")
    return tuple(sorted(out))
