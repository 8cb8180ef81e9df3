"""Converting op arguments: the one place an op turns its inputs into Tensors.

Also the small shared pieces of every op module: dtype checks for two
operands and axis normalisation.  Results are wrapped with
:func:`sparsegrad.framework.tensor.wrap`.
"""

import math

import numpy as np

from ..autodiff.recording import record_variable_read
from ..errors import InvalidArgumentError
from ..framework.backend import CPU, backend_of
from ..framework.buffers import UNCHECKED_BYTES, check_allocation
from ..framework.dtypes import check_numeric, half_not_computed, is_floating
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, convert_to_tensor, wrap
from ..framework.variable import Variable

__all__ = [
    "as_borrowed_tensor",
    "as_tensor",
    "backend_for",
    "binary_operands",
    "check_float",
    "same_device",
    "convert_like",
    "normalize_axis",
    "read_variable",
    "unary_operand",
]

_ndarray = np.ndarray
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

    Parameters
    ----------
    var : Variable

    Returns
    -------
    Tensor
        A read-only view of the variable's buffer (no copy).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.ops._helpers import read_variable
    >>> read_variable(sg.Variable([1.0, 2.0])).numpy()
    array([1., 2.])
    """
    t = wrap(var._value.view())
    record_variable_read(var, t)
    return t


def as_tensor(x, dtype=None, name=None):
    """Convert an op argument to a Tensor.

    A Variable is read through :func:`read_variable`; anything else goes
    through :func:`~sparsegrad.convert_to_tensor` (an IndexedSlices is
    densified, without recording).

    Parameters
    ----------
    x : Tensor, Variable, IndexedSlices or array_like
    dtype : dtype, optional
        The dtype the result must have (Python values are converted to it).
    name : str, optional
        The argument's name in error messages.

    Returns
    -------
    Tensor

    Examples
    --------
    >>> from sparsegrad.ops._helpers import as_tensor
    >>> as_tensor([1, 2]).dtype
    dtype('int64')
    """
    if type(x) is Tensor and dtype is None:
        return x
    if isinstance(x, Variable):
        t = read_variable(x)
        if dtype is not None:
            return convert_to_tensor(t, dtype=dtype, name=name)
        return t
    return convert_to_tensor(x, dtype=dtype, name=name)


def as_borrowed_tensor(x, name=None, be=None):
    """:func:`as_tensor`, but a caller's ndarray is viewed, never copied.

    For ops that read a few rows of a possibly huge table (gather, a sparse @
    dense product) and return a new array: wrapping a copy of the table would
    cost O(table) per call.  The Tensor is a read-only view of the caller's
    array, so it must not outlive the op (it is no constant: the caller may
    write the array later).  It cannot be on a tape (it is new), so no op
    records it.

    Parameters
    ----------
    x : ndarray, cupy.ndarray, Tensor, Variable or array_like
    name : str, optional
        The argument's name in error messages.
    be : Backend, optional
        The backend the caller chose with `x` among its arguments (then a
        non-NumPy `x` is a device array exactly when `be` is the GPU one).

    Returns
    -------
    Tensor
    """
    if isinstance(x, (Tensor, Variable)):
        return as_tensor(x, name=name)
    if type(x) is _ndarray or (be or backend_of(x)).on_gpu:
        check_numeric(x.dtype, name or "value")
        return wrap(x.view())
    return as_tensor(x, name=name)


def _dtype_mismatch(op_name, x, y):
    raise InvalidArgumentError(
        f"{op_name}: x has dtype {x.dtype} but y has dtype {y.dtype}; the "
        "operands of a binary op must have one dtype (use sg.cast)"
    )


def convert_like(value, like, op_name, arg, be=None):
    """Convert a Python scalar / list / array operand to the dtype of `like`.

    This is NumPy 2's "weak scalar" rule extended to array_likes: a value that
    is not a Tensor adopts the dtype of the Tensor operand.  A float value for
    an integer Tensor is an error (it would truncate).

    Parameters
    ----------
    value : Variable, IndexedSlices, Python scalar or array_like
        The operand to convert.
    like : Tensor
        The other operand, whose dtype `value` adopts.
    op_name : str
        The op's name in error messages.
    arg : {"x", "y"}
        Which operand `value` is.
    be : Backend, optional
        The backend of `like`, where the caller has chosen it.

    Returns
    -------
    Tensor
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
    if be is None:
        be = backend_for(like._value)
    on_gpu = be.on_gpu
    vt = type(value)
    if vt is float or vt is int or vt is bool:
        # a cached scalar lives on one device: the GPU's number is in the key
        key = (vt, value, dtype, _device_key(like._value) if on_gpu else None)
        cached = _SCALARS.get(key)
        if cached is not None:
            return cached
        if vt is float and dtype.kind in "iub":
            raise InvalidArgumentError(
                f"{op_name}: {arg}={value!r} is a float but the other operand is a "
                f"{dtype} Tensor; cast the Tensor to a float dtype first"
            )
        try:
            array = np.array(value, dtype)
            t = wrap(be.asarray(array) if on_gpu else array)
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
    if backend_for(value).on_gpu:
        array = value
    else:
        try:
            array = np.asarray(value)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{op_name}: cannot convert {arg} to a Tensor: {exc}") from None
    check_numeric(array.dtype, arg)
    if is_floating(array.dtype) and dtype.kind in "iub":
        raise InvalidArgumentError(
            f"{op_name}: {arg} has dtype {array.dtype} but the other operand is a "
            f"{dtype} Tensor; cast the Tensor to a float dtype first"
        )
    array = same_device(array, like._value, be)
    return wrap(array.astype(dtype, copy=True))


def _device_key(array):
    """The array type and the number of the GPU a cupy array is on (the type
    too: two array modules, CuPy and the tests' emulator, both call their
    device 0)."""
    return type(array), getattr(getattr(array, "device", None), "id", 0)


def backend_of_arguments(*args):
    """``backend_of`` an op's arguments as given, a Tensor or a Variable by
    its array (no read is recorded), so that an entry chooses before it
    converts anything; ValueError on a host/GPU mix.

    >>> backend_of_arguments(wrap(np.zeros(2)), [1, 2]).name
    'cpu'
    """
    return backend_of(*(a._value if isinstance(a, (Tensor, Variable)) else a
                        for a in args))


def backend_for(array):
    """The backend of one array: :data:`~sparsegrad.framework.backend.CPU`
    for a NumPy array without asking further, else ``backend_of(array)``.

    Parameters
    ----------
    array : ndarray, cupy.ndarray or host value

    Returns
    -------
    Backend
    """
    return CPU if type(array) is _ndarray else backend_of(array)


def same_device(array, like, be=None):
    """`array` on the device of array `like`.

    A host value (a number, list or ndarray given as an op argument) beside
    a cupy `like` is copied to the GPU, as the op's other argument adopts the
    Tensor operand's dtype (:func:`convert_like`); a cupy `array` beside a
    host `like` raises ValueError: results never leave the GPU implicitly.

    Parameters
    ----------
    array, like : ndarray or cupy.ndarray
    be : Backend, optional
        The backend of `like`, where the caller has chosen it.

    Returns
    -------
    ndarray or cupy.ndarray
    """
    if be is None:
        be = backend_for(like)
    if backend_for(array).on_gpu == be.on_gpu:
        return array
    if be.on_gpu:
        return be.asarray(array)
    backend_of(array, like)   # raises: a GPU value, a host Tensor
    return array


def binary_operands(x, y, op_name):
    """Two operands as Tensors of one dtype.

    Parameters
    ----------
    x, y : Tensor, Variable, IndexedSlices or array_like
    op_name : str
        The op's name in error messages.

    Returns
    -------
    tuple of Tensor
        ``(x, y)`` converted; a non-Tensor operand adopts the Tensor one's
        dtype (see :func:`convert_like`).

    Raises
    ------
    InvalidArgumentError
        If two Tensors have different dtypes.
    """
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
    x_be, y_be = backend_for(x._value), backend_for(y._value)
    if x_be.on_gpu != y_be.on_gpu:
        x = wrap(same_device(x._value, y._value, y_be))
        y = wrap(same_device(y._value, x._value, x_be))
    if x.dtype != y.dtype:
        dtype = np.result_type(x._value.dtype, y._value.dtype)
        x = wrap(x._value.astype(dtype))
        y = wrap(y._value.astype(dtype))
    return x, y


def normalize_axis(axis, ndim, op_name):
    """`axis` (None, int or sequence) as a sorted tuple of non-negative ints.

    Parameters
    ----------
    axis : None, int, sequence of int or Tensor
        None means every axis; negative axes count from the end.
    ndim : int
        The rank of the tensor reduced.
    op_name : str
        The op's name in error messages.

    Returns
    -------
    tuple of int

    Raises
    ------
    InvalidArgumentError
        If an axis is not an int, out of range or repeated.

    Examples
    --------
    >>> from sparsegrad.ops._helpers import normalize_axis
    >>> normalize_axis(-1, 3, "reduce_sum")
    (2,)
    """
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


def unary_operand(x, op_name):
    """The operand of a one-operand elementwise op as a Tensor.

    A large strided operand (a broadcast view costs nothing) is checked for
    the result and the contiguous copy the compiled functions read, both of
    its whole shape.

    Parameters
    ----------
    x : Tensor, Variable or array_like
    op_name : str
        The op's name in error messages.

    Returns
    -------
    Tensor
    """
    if type(x) is not Tensor:
        x = as_tensor(x, name="x")
    if x._value.size * 16 >= UNCHECKED_BYTES and not x._value.flags.c_contiguous:
        buffer = (x.shape, x.dtype, f"{op_name}: x")
        check_allocation(buffer, buffer)
    return x


def check_float(x, op_name):
    """Raise InvalidArgumentError unless Tensor `x` has a floating dtype.

    Parameters
    ----------
    x : Tensor
    op_name : str
        The op's name in the message.
    """
    if x._value.dtype.kind != "f":
        if is_floating(x._value.dtype):    # bfloat16
            raise half_not_computed(op_name, "x", x._value.dtype)
        raise InvalidArgumentError(
            f"{op_name}: x has dtype {x.dtype}; {op_name} needs a floating dtype "
            "(use sg.cast)"
        )
