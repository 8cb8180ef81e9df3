"""``sparsegrad.ragged.range``: TensorFlow's ``tf.ragged.range``."""

import numpy as np

from ..framework import backend
from ..framework.tensor import Tensor, wrap
from ..framework.variable import Variable
from .ragged_range import ragged_range, range_dtype, splits_dtype
from .ragged_tensor import RaggedTensor

__all__ = ["range"]

# The promotion order of tf.ragged.range when no dtype is given.
_ORDER = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32),
          np.dtype(np.float64))
_INT32 = np.iinfo(np.int32)


def _convert(x, dtype, name):
    """`x` as an ndarray, by TensorFlow's ``convert_to_tensor`` rules: Python
    ints give int32 (int64 when they do not fit), Python floats float32;
    arrays and Tensors keep their dtype unless `dtype` is given."""
    if isinstance(x, (Variable, Tensor)):
        x = x._value.copy()
    if isinstance(x, (np.ndarray, np.generic)) or backend.is_cupy_array(x):
        array = x if backend.is_cupy_array(x) else np.asarray(x)
        if array.dtype.kind not in "iuf" or array.dtype == np.bool_:
            raise TypeError(
                f"ragged.range: {name} has dtype {array.dtype}; expected int32, "
                "int64, float32 or float64"
            )
        return array if dtype is None else array.astype(dtype)
    array = np.asarray(x)
    kind = array.dtype.kind
    if kind not in "iuf" or array.dtype == np.bool_:
        raise TypeError(
            f"ragged.range: cannot convert {name}={x!r} to a number tensor"
        )
    if dtype is not None:
        if kind == "f" and dtype.kind != "f":
            raise TypeError(f"Cannot convert {x!r} to EagerTensor of dtype {dtype}")
        return array.astype(dtype)
    if kind == "f":
        return array.astype(np.float32)
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
    ``0.70000005, 0.8000001, 0.9000001``).

    Parameters
    ----------
    starts : scalar, list, ndarray or Tensor, rank 0 or 1
        The first value of each row (the limits when `limits` is None).
    limits : scalar, list, ndarray or Tensor, rank 0 or 1, optional
        The exclusive end of each row.
    deltas : scalar, list, ndarray or Tensor, rank 0 or 1, default=1
        The step of each row; never 0.
    dtype : dtype, optional
        The values' dtype (int32, int64, float32 or float64).  By default
        Python ints are int32 (int64 when they do not fit), Python floats
        float32, and the three are cast to the largest of their dtypes in
        the order int32 < int64 < float32 < float64.
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
        For a dtype outside the four (TensorFlow raises AssertionError), or
        a Python float converted to an integer `dtype`.
    InvalidArgumentError
        With the messages of :func:`ragged_range` (rank, lengths, zero
        delta, sizes, total).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.ragged.range([3, 5, 2])
    <RaggedTensor [[0, 1, 2], [0, 1, 2, 3, 4], [0, 1]]>
    >>> sg.ragged.range([0, 3, 5], limits=0, deltas=-1)
    <RaggedTensor [[], [3, 2, 1], [5, 4, 3, 2, 1]]>
    >>> sg.ragged.range(1.0, 0.0, -0.3).values.numpy()
    array([1.        , 0.7       , 0.39999998, 0.09999996], dtype=float32)
    """
    del name
    tsplits = splits_dtype(row_splits_dtype, "Tsplits")
    if limits is None:
        starts, limits = 0, starts
    if dtype is not None:
        dtype = range_dtype(dtype)
    args = [_convert(x, dtype, n) for x, n in
            ((starts, "starts"), (limits, "limits"), (deltas, "deltas"))]
    if dtype is None:
        for a in args:
            if a.dtype not in _ORDER:
                raise TypeError(
                    f"ragged.range: unsupported dtype {a.dtype}; expected int32, "
                    "int64, float32 or float64"
                )
        dtype = max((a.dtype for a in args), key=_ORDER.index)
        args = [a.astype(dtype, copy=False) for a in args]
    splits, values = ragged_range(*args, Tsplits=tsplits)
    if isinstance(splits, np.ndarray):
        splits.setflags(write=False)
    # The kernel's splits are valid by construction: no check, no copy.
    return RaggedTensor(wrap(values), splits, internal=True)
