"""``sparsegrad.ragged.range``: TensorFlow's ``tf.ragged.range``."""

import numpy as np

from ..errors import InvalidArgumentError
from ..framework.dtypes import BFLOAT16, is_floating
from ..framework.tensor import Tensor, wrap
from ..framework.variable import Variable
from .ragged_range import (
    is_host_scalar,
    range_backend,
    range_dtype,
    range_rows,
    splits_dtype,
)
from .ragged_tensor import RaggedTensor

__all__ = ["range"]

# The promotion order of tf.ragged.range when no dtype is given, bfloat16
# put where TensorFlow's own promotion puts it: above the integers, below
# float32 (TensorFlow's list lacks it and fails an assert).
_ORDER = (np.dtype(np.int32), np.dtype(np.int64), BFLOAT16, np.dtype(np.float32),
          np.dtype(np.float64))
_EXPECTED = "int32, int64, bfloat16, float32 or float64"
_INT32 = np.iinfo(np.int32)


def _first_value(array, mask):
    """The first entry of `array` where `mask` holds, as a Python number."""
    return array.reshape(-1)[int(mask.reshape(-1).argmax())].item()


def _cast(array, dtype, name, xp):
    """`array` as `dtype`, refusing a value the dtype cannot hold (out of
    range, a fraction, NaN or infinity for an integer dtype; a finite value
    that overflows to infinity for a float dtype) instead of wrapping it.
    Floats round to the nearest value of a float dtype; `xp` is the array
    module of `array`."""
    if array.dtype == dtype:
        return array
    if array.size and dtype.kind in "iu" and is_floating(array.dtype):
        bad = ~xp.isfinite(array) | (array != xp.trunc(array))
        if bool(bad.any()):
            raise InvalidArgumentError(
                f"ragged.range: {name} = {_first_value(array, bad)!r} is not an "
                f"integer; dtype {dtype} cannot hold it"
            )
        half = 2.0 ** (8 * dtype.itemsize - 1)   # exact in every float dtype
        out = (array < -half) | (array >= half)
        if bool(out.any()):
            raise InvalidArgumentError(
                f"ragged.range: {name} = {_first_value(array, out)!r} does not "
                f"fit in {dtype}"
            )
    elif array.size and dtype.kind in "iu":
        info = np.iinfo(dtype)
        low, high = int(array.min()), int(array.max())
        if low < info.min or high > info.max:
            value = low if low < info.min else high
            raise InvalidArgumentError(
                f"ragged.range: {name} = {value} does not fit in {dtype} "
                f"([{info.min}, {info.max}])"
            )
    with np.errstate(over="ignore", invalid="ignore"):   # checked below
        converted = array.astype(dtype)
    if array.size and is_floating(dtype) and is_floating(array.dtype):
        overflow = xp.isinf(converted) & xp.isfinite(array)
        if bool(overflow.any()):
            raise InvalidArgumentError(
                f"ragged.range: {name} = {_first_value(array, overflow)!r} is out "
                f"of range for {dtype}"
            )
    return converted


def _python_array(x, dtype, name):
    """A Python number or list as an ndarray (ints past int64 refused)."""
    try:
        array = np.asarray(x)
    except OverflowError:
        array = np.asarray(x, dtype=object)
    if array.dtype.kind in "uO":   # Python ints past int64 (or other objects)
        items = array.reshape(-1).tolist()
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
            raise TypeError(
                f"ragged.range: cannot convert {name}={x!r:.60} to a number tensor"
            )
        if dtype is not None and is_floating(dtype):
            return np.asarray([float(v) for v in items]).reshape(array.shape)
        value = max(items, key=abs)
        raise InvalidArgumentError(
            f"ragged.range: {name} = {value} does not fit in "
            f"{'int64' if dtype is None else dtype}"
        )
    return array


def _convert(x, dtype, name, be):
    """`x` as an ndarray, by TensorFlow's ``convert_to_tensor`` rules: Python
    ints give int32 (int64 when they do not fit), Python floats float32;
    arrays keep their dtype unless `dtype` is given.  A value that `dtype`
    cannot hold raises instead of wrapping.  `be` is the call's backend
    (:func:`range_backend`): host scalars stay host values beside GPU
    arrays."""
    on_gpu = be.on_gpu and not is_host_scalar(x)
    xp = be.xp if on_gpu else np
    if isinstance(x, (np.ndarray, np.generic)) or on_gpu:
        array = x if on_gpu else np.asarray(x)
        if not (array.dtype.kind in "iu" or is_floating(array.dtype)):
            raise TypeError(
                f"ragged.range: {name} has dtype {array.dtype}; expected {_EXPECTED}"
            )
        return array if dtype is None else _cast(array, dtype, name, xp)
    array = _python_array(x, dtype, name)
    kind = array.dtype.kind
    if kind not in "iuf" or array.dtype == np.bool_:
        raise TypeError(
            f"ragged.range: cannot convert {name}={x!r} to a number tensor"
        )
    if dtype is not None:
        if kind == "f" and not is_floating(dtype):
            raise TypeError(f"Cannot convert {x!r} to EagerTensor of dtype {dtype}")
        return _cast(array, dtype, name, xp)
    if kind == "f":
        return _cast(array, np.dtype(np.float32), name, xp)
    if array.size == 0 or (array.min() >= _INT32.min and array.max() <= _INT32.max):
        return array.astype(np.int32)
    return array.astype(np.int64)


def range(starts, limits=None, deltas=1, dtype=None, name=None,
          row_splits_dtype=np.int64):
    """The rows ``range(starts[i], limits[i], deltas[i])`` as a RaggedTensor.

    As ``tf.ragged.range``: one argument means the limits (``range(n)``
    style); scalars broadcast to every row; row ``i`` holds ``start,
    start + delta, ...`` up to (excluding) its limit, accumulated by repeated
    addition in the values' dtype (float32 ``range(0, 1, 0.1)`` ends with
    ``0.70000005, 0.8000001, 0.9000001``).  bfloat16 (``ml_dtypes.bfloat16``,
    which TensorFlow declares but has no kernel for) rounds every step of
    the size and every sum to bfloat16 (see :func:`ragged_range`).

    Parameters
    ----------
    starts : scalar, list, ndarray or Tensor, rank 0 or 1
        The first value of each row (the limits when `limits` is None).
    limits : scalar, list, ndarray or Tensor, rank 0 or 1, optional
        The exclusive end of each row.
    deltas : scalar, list, ndarray or Tensor, rank 0 or 1, default=1
        The step of each row; never 0.
    dtype : dtype, optional
        The values' dtype (int32, int64, bfloat16, float32 or float64).  By
        default Python ints are int32 (int64 when they do not fit), Python
        floats float32, and the three are cast to the largest of their dtypes
        in the order int32 < int64 < bfloat16 < float32 < float64
        (TensorFlow's order has no bfloat16 and raises AssertionError for
        it).  The arguments are converted to it exactly: integer values must
        be whole numbers in its range; float values round to the nearest
        value of a float dtype (a float64 through float32 to bfloat16, as
        ``ml_dtypes`` and TensorFlow's casts do).
    name : str, optional
        Ignored.
    row_splits_dtype : dtype, default=np.int64
        int32 or int64.

    Returns
    -------
    RaggedTensor
        Shape ``(nrows, None)``.  Not differentiable w.r.t. the arguments
        (TensorFlow registers no gradient; a tape gives None).

    Raises
    ------
    TypeError
        When `dtype` is None and an argument's dtype is outside the five
        (int16, float16...; TensorFlow raises AssertionError), for a Python
        float converted to an integer `dtype` (as TensorFlow), a bool
        `dtype` (as TensorFlow), or an argument that is not a number.
    InvalidArgumentError
        For a `dtype` outside the five ("Value for attr 'T' of int8 is not
        in the list of allowed values", as TensorFlow), a `row_splits_dtype`
        other than int32 and int64 (attr 'Tsplits'); for a start, limit or
        delta the values' dtype cannot hold (``2**40`` as int32, ``3.5`` or
        NaN as an integer, ``1e300`` as float32, ``3.4e38`` as bfloat16, a
        Python int past int64),
        naming the argument and the value, where TensorFlow would wrap it
        silently; with the messages of :func:`ragged_range` (rank, lengths,
        zero delta, sizes, total, memory).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.ragged.range([3, 5, 2])
    <RaggedTensor [[0, 1, 2], [0, 1, 2, 3, 4], [0, 1]]>
    >>> sg.ragged.range([0, 3, 5], limits=0, deltas=-1)
    <RaggedTensor [[], [3, 2, 1], [5, 4, 3, 2, 1]]>
    >>> sg.ragged.range(1.0, 0.0, -0.3).values.numpy()
    array([1.        , 0.7       , 0.39999998, 0.09999996], dtype=float32)
    >>> import ml_dtypes
    >>> sg.ragged.range(1.0, 0.0, -0.3, dtype=ml_dtypes.bfloat16).values.numpy()
    array([1, 0.699219, 0.398438, 0.0976562], dtype=bfloat16)
    """
    del name
    tsplits = splits_dtype(row_splits_dtype, "Tsplits")
    if limits is None:
        starts, limits = 0, starts
    if dtype is not None and np.dtype(dtype) == np.bool_:
        raise TypeError("ragged.range: cannot convert the arguments to dtype bool")
    if dtype is not None:
        dtype = range_dtype(dtype)
    raw = [x._value.copy() if isinstance(x, (Variable, Tensor)) else x
           for x in (starts, limits, deltas)]
    be = range_backend(*raw)   # the one choice; a host vector beside a GPU one raises
    args = [_convert(x, dtype, n, be) for x, n in
            zip(raw, ("starts", "limits", "deltas"))]
    if dtype is None:
        for a in args:
            if a.dtype not in _ORDER:
                raise TypeError(
                    f"ragged.range: unsupported dtype {a.dtype}; expected {_EXPECTED}"
                )
        dtype = max((a.dtype for a in args), key=_ORDER.index)
        args = [a.astype(dtype, copy=False) for a in args]
    splits, values = range_rows(*args, tsplits, be)
    if isinstance(splits, np.ndarray):
        splits.setflags(write=False)
    # The kernel's splits are valid by construction: no check, no copy.
    return RaggedTensor(wrap(values), splits, internal=True)
