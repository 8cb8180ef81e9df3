"""Building RaggedTensors from Python lists, and functions of their values."""

import numpy as np

from ..errors import InvalidArgumentError
from ..framework.dtypes import is_floating
from ..framework.tensor import wrap
from .ragged_range import splits_dtype
from .ragged_tensor import RaggedTensor
from .row_partition import check_fits, python_values_dtype

__all__ = ["constant", "map_flat_values", "is_ragged"]


def _first_scalar(values):
    """The first scalar of the nested `values` (None when there is none)."""
    for item in values:
        if not _is_list(item):
            return item
        first = _first_scalar(item)
        if first is not None:
            return first
    return None


def _python_dtype(array, values):
    """TensorFlow's dtype of the Python `values` (`array`: NumPy's reading of
    them): :func:`~.row_partition.python_values_dtype`, except that a first
    scalar that is a NumPy float gives its own dtype."""
    if is_floating(array.dtype):
        first = _first_scalar(values) if _is_list(values) else values
        if isinstance(first, np.generic) and is_floating(first.dtype):
            return first.dtype
    return python_values_dtype(array)


def _is_list(x):
    """A nesting level of a Python list (a NumPy array of rank >= 1 counts)."""
    return isinstance(x, (list, tuple)) or np.ndim(x) != 0


def _scalar_and_max_depth(pylist):
    """``(depth of the scalars or None when there are none, deepest list)``."""
    if not _is_list(pylist):
        return 0, 0
    scalar_depth, max_depth = None, 1
    for child in pylist:
        child_scalar, child_max = _scalar_and_max_depth(child)
        if child_scalar is not None:
            if scalar_depth is None:
                scalar_depth = child_scalar + 1
            elif scalar_depth != child_scalar + 1:
                raise ValueError("all scalar values must have the same nesting depth")
        max_depth = max(max_depth, child_max + 1)
    return scalar_depth, max_depth


def _default_inner_shape(pylist, ragged_rank):
    """The uniform shape of the items below `ragged_rank` ragged levels, read
    from the first items and checked on all of them."""
    flat = pylist
    for dim in range(ragged_rank):
        if not all(_is_list(v) for v in flat):
            raise ValueError(
                f"pylist has scalar values depth {dim + 1}, but ragged_rank="
                f"{ragged_rank} requires scalar value depth greater than "
                f"{ragged_rank}"
            )
        flat = [item for v in flat for item in v]

    def shape_of(item):
        if not _is_list(item):
            return ()
        return (len(item),) + shape_of(item[0]) if len(item) else (0,)

    def check(item, shape):
        nested = _is_list(item)
        if nested != bool(shape) or (nested and shape[0] != len(item)):
            raise ValueError("inner values have inconsistent shape")
        if nested:
            for child in item:
                check(child, shape[1:])

    shape = shape_of(flat)
    check(flat, shape)
    return shape[1:]


def _dense(values, dtype, shape):
    """A Tensor of the Python `values` (TensorFlow's dtypes by default),
    reshaped to `shape` when one is given.  As ``tf.constant``: floats do not
    become integers nor integers bools (TypeError), and an integer past int64
    is a ValueError; an integer that `dtype` cannot hold raises
    InvalidArgumentError (TensorFlow wraps it)."""
    try:
        array = np.array(values)
    except ValueError:
        raise ValueError("inner values have inconsistent shape") from None
    if array.dtype == object:
        if any(isinstance(v, int) and not isinstance(v, bool)
               for v in np.ravel(array)):
            raise ValueError(
                "Can't convert Python sequence with out-of-range integer to Tensor.")
        raise ValueError("inner values have inconsistent shape")
    if array.dtype == np.uint64 and array.size and array.max() > np.iinfo(np.int64).max:
        raise ValueError(
            "Can't convert Python sequence with out-of-range integer to Tensor.")
    target = _python_dtype(array, values) if dtype is None else np.dtype(dtype)
    if array.size and ((is_floating(array.dtype) and target.kind in "iub") or (
            array.dtype.kind in "iu" and target.kind == "b")):   # ([] is float64)
        raise TypeError(
            f"ragged.constant: cannot convert {array.dtype.name} values to "
            f"dtype {target.name}"
        )
    if array.size and array.dtype.kind in "iu" and target.kind in "iu":
        info = np.iinfo(target)
        low, high = int(array.min()), int(array.max())
        if low < info.min or high > info.max:
            raise InvalidArgumentError(
                f"ragged.constant: value {low if low < info.min else high} does "
                f"not fit in dtype {target.name} ([{info.min}, {info.max}])"
            )
    with np.errstate(over="ignore"):    # floats: inf, as TensorFlow's
        array = array.astype(target, copy=False)
    if shape is not None and array.shape != tuple(shape):
        if array.size != int(np.prod(shape)):
            raise TypeError(
                f"ragged.constant: {array.size} values cannot have shape "
                f"{tuple(shape)}"
            )
        array = array.reshape(shape)
    return wrap(array)


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None,
             row_splits_dtype=np.int64, name=None):
    """A RaggedTensor (or a Tensor) from a nested Python list.

    TensorFlow's ``tf.ragged.constant``: the lists above ``ragged_rank``
    levels may have any lengths; the items below form uniform inner
    dimensions ``inner_shape``.

    Parameters
    ----------
    pylist : nested list, tuple or ndarray
        Every scalar at one nesting depth.
    dtype : dtype, optional
        The values' dtype; by default TensorFlow's: integers (Python's or
        NumPy's) int32 (int64 past int32), floats float32 (float32 too for
        no values at all), or the dtype of the first scalar when it is a
        NumPy float.  An integer `dtype` must hold every value (TensorFlow
        wraps them).
    ragged_rank : int, optional
        The number of ragged dimensions, ``>= 0`` (0 gives a dense Tensor).
        By default ``max(1, scalar depth - 1 - len(inner_shape))`` (``max(1,
        max depth - 1)`` for a list without scalars).
    inner_shape : tuple of int, optional
        The shape of the innermost items; by default ``()``, or with
        `ragged_rank` given, what the list's items below it have.
    row_splits_dtype : dtype, default=np.int64
        int32 or int64.
    name : str, optional
        Ignored.

    Returns
    -------
    RaggedTensor or Tensor
        A Tensor when `ragged_rank` is 0 or the list is less than 2 deep.

    Raises
    ------
    TypeError
        If `pylist` is a RaggedTensor, `dtype` is an integer or bool dtype
        for float values (or bool for integers), or the values do not fill
        `inner_shape`, as ``tf.constant``.
    ValueError
        An integer past int64, or TensorFlow's messages: "all scalar
        values must have the same nesting depth", "Invalid pylist=...:
        empty list nesting is greater than
        scalar value nesting", "Invalid pylist=..., max depth smaller than
        ragged_rank=3", "Invalid ragged_rank=-1: must be nonnegative",
        "Invalid pylist=...: incompatible with ragged_rank=1 and
        dim(inner_shape)=2", "inner values have inconsistent shape", "pylist
        has scalar values depth 2, but ragged_rank=2 requires scalar value
        depth greater than 2".
    InvalidArgumentError
        If `row_splits_dtype` is not int32 or int64 (attr 'row_splits_dtype'),
        a level holds more values than it can count, or an integer does not
        fit in `dtype`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.ragged.constant([[1, 2], [], [3]])
    <RaggedTensor [[1, 2], [], [3]]>
    >>> rt = sg.ragged.constant([[[1, 2], [3]], [], [[4]]])
    >>> rt.ragged_rank, rt.shape
    (2, (3, None, None))
    >>> sg.ragged.constant([[[1, 2]], [[3, 4], [5, 6]]], ragged_rank=1).shape
    (2, None, 2)
    """
    del name
    if isinstance(pylist, RaggedTensor):
        raise TypeError("pylist may not be a RaggedTensor or RaggedTensorValue.")
    tsplits = splits_dtype(row_splits_dtype, "row_splits_dtype")
    if not _is_list(pylist):
        if ragged_rank is not None and ragged_rank != 0:
            raise ValueError(
                f"Invalid pylist={pylist!r}: incompatible with "
                f"ragged_rank={ragged_rank}"
            )
        if inner_shape:
            raise ValueError(
                f"Invalid pylist={pylist!r}: incompatible with dim(inner_shape)="
                f"{len(inner_shape)}"
            )
        return _dense(pylist, dtype, ())
    if ragged_rank is not None and ragged_rank < 0:
        raise ValueError(f"Invalid ragged_rank={ragged_rank!r}: must be nonnegative")
    scalar_depth, max_depth = _scalar_and_max_depth(pylist)
    if scalar_depth is not None:
        if max_depth > scalar_depth:
            raise ValueError(
                f"Invalid pylist={pylist!r:.80}: empty list nesting is greater "
                "than scalar value nesting"
            )
        if ragged_rank is not None and max_depth < ragged_rank:
            raise ValueError(
                f"Invalid pylist={pylist!r:.80}, max depth smaller than "
                f"ragged_rank={ragged_rank}"
            )
    if inner_shape is not None:
        inner_shape = tuple(int(d) for d in inner_shape)
    if inner_shape is not None and ragged_rank is not None:
        expected = ragged_rank + len(inner_shape) + 1
        if ((scalar_depth is not None and expected != scalar_depth)
                or (scalar_depth is None and expected < max_depth)):
            raise ValueError(
                f"Invalid pylist={pylist!r:.80}: incompatible with ragged_rank="
                f"{ragged_rank} and dim(inner_shape)={len(inner_shape)}"
            )
    if ragged_rank == 0 or (ragged_rank is None and (
            max_depth < 2
            or (inner_shape is not None and max_depth - len(inner_shape) < 2))):
        return _dense(pylist, dtype, inner_shape)
    if inner_shape is None:
        inner_shape = () if ragged_rank is None else _default_inner_shape(
            pylist, ragged_rank)
    if ragged_rank is None:
        depth = max_depth if scalar_depth is None else scalar_depth - len(inner_shape)
        ragged_rank = max(1, depth - 1)
    nested_splits = []
    values = pylist
    for _ in range(ragged_rank):
        lengths = [len(row) for row in values]
        check_fits(sum(lengths), tsplits, "ragged.constant: the number of values")
        splits = np.zeros(len(lengths) + 1, tsplits)
        np.cumsum(lengths, out=splits[1:])
        splits.setflags(write=False)
        nested_splits.append(splits)
        values = [item for row in values for item in row]
    result = _dense(values, dtype, (len(values),) + inner_shape)
    for splits in reversed(nested_splits):
        result = RaggedTensor.from_row_splits(result, splits, validate=False)
    return result


def map_flat_values(op, *args, **kwargs):
    """Apply `op` to the flat values of the RaggedTensors among the arguments.

    Every RaggedTensor argument is replaced by its flat values (they must
    share their row splits at every level); the result is a RaggedTensor
    with those rows and `op`'s result as flat values.  Tapes record what
    `op` does, so the result is differentiable w.r.t. the flat values.

    Parameters
    ----------
    op : callable
        Maps values Tensors to a Tensor of the same number of rows.
    *args, **kwargs
        Arguments of `op`; at least one is a RaggedTensor.

    Returns
    -------
    RaggedTensor
        The rows of the (first) RaggedTensor argument over `op`'s result.

    Raises
    ------
    ValueError
        If no argument is a RaggedTensor.
    InvalidArgumentError
        If the RaggedTensors have different row splits, or `op` changes the
        number of values.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> rt = sg.ragged.constant([[1.0, 2.0], [3.0]])
    >>> sg.ragged.map_flat_values(sg.square, rt)
    <RaggedTensor [[1.0, 4.0], [9.0]]>
    """
    found = []

    def swap(x):
        if isinstance(x, RaggedTensor):
            found.append(x)
            return x._used_flat_values()
        return x

    new_args = [swap(a) for a in args]
    new_kwargs = {k: swap(v) for k, v in kwargs.items()}
    if not found:
        raise ValueError("map_flat_values: no argument is a RaggedTensor")
    first = found[0]
    for other in found[1:]:
        if not first._same_nested_rows(other):
            raise InvalidArgumentError(
                "map_flat_values: the RaggedTensors have different row splits "
                f"(shapes {first.shape} and {other.shape})"
            )
    out = op(*new_args, **new_kwargs)
    return first.with_flat_values(out)


def is_ragged(value):
    """True for a :class:`RaggedTensor`.

    Parameters
    ----------
    value : object
        Anything.

    Returns
    -------
    bool
        Whether `value` is a RaggedTensor (a dense Tensor is not).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.ragged.is_ragged(sg.ragged.constant([[1], []])), sg.ragged.is_ragged([1])
    (True, False)
    """
    return isinstance(value, RaggedTensor)
