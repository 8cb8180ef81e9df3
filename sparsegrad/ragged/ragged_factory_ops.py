"""Building RaggedTensors from Python lists, and functions of their values."""

import numpy as np

from ..errors import InvalidArgumentError
from ..framework.tensor import wrap
from .ragged_range import splits_dtype
from .ragged_tensor import RaggedTensor
from .row_partition import check_fits

__all__ = ["constant", "map_flat_values", "is_ragged"]


def _python_dtype(array):
    """TensorFlow's dtype of a Python value: ints int32, floats float32."""
    if array.dtype.kind == "f":
        return np.dtype(np.float32)
    if array.dtype.kind in "iu":
        info = np.iinfo(np.int32)
        if array.size == 0 or (array.min() >= info.min and array.max() <= info.max):
            return np.dtype(np.int32)
        return np.dtype(np.int64)
    return array.dtype


def _depth(x):
    depth = 0
    while isinstance(x, (list, tuple)):
        if not x:
            return depth + 1
        x = x[0]
        depth += 1
    return depth


def constant(pylist, dtype=None, ragged_rank=None, row_splits_dtype=np.int64):
    """A RaggedTensor of ragged_rank 1 from a list of rows.

    Parameters
    ----------
    pylist : list of lists (or of NumPy arrays)
        The rows; each row is a list of scalars, or of equal-length lists
        (a uniform inner dimension).
    dtype : dtype, optional
        The values' dtype; by default TensorFlow's: Python ints int32, floats
        float32 (float32 too for no values at all).
    ragged_rank : {None, 1}, optional
        Only 1 is supported.
    row_splits_dtype : dtype, default=np.int64
        int32 or int64.

    Returns
    -------
    RaggedTensor

    Raises
    ------
    ValueError
        If `pylist` is not a list of lists, the rows nest raggedly below the
        first level (only ragged_rank 1 is supported) or their inner shapes
        differ.
    InvalidArgumentError
        If `row_splits_dtype` is not int32 or int64 (attr 'row_splits_dtype'),
        or the rows hold more values than it can count.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.ragged.constant([[1, 2], [], [3]])
    <RaggedTensor [[1, 2], [], [3]]>
    >>> sg.ragged.constant([[[1, 2]], [[3, 4], [5, 6]]]).values.shape
    (3, 2)
    """
    if ragged_rank not in (None, 1):
        raise ValueError(
            f"sparsegrad supports RaggedTensors of ragged_rank 1 only, got "
            f"ragged_rank={ragged_rank}"
        )
    tsplits = splits_dtype(row_splits_dtype, "row_splits_dtype")
    if not isinstance(pylist, (list, tuple)) or not all(
        isinstance(row, (list, tuple, np.ndarray)) for row in pylist
    ):
        raise ValueError(
            "ragged.constant needs a list of rows (lists), got "
            f"{type(pylist).__name__} {pylist!r:.60}"
        )
    lengths = [len(row) for row in pylist]
    flat = [item for row in pylist for item in row]
    depths = {_depth(item) for item in flat}
    if len(depths) > 1:
        raise ValueError(
            "ragged.constant: the rows' items have different nesting depths "
            f"{sorted(depths)}"
        )
    try:
        values = np.array(flat, dtype=dtype) if flat else None
    except ValueError:
        raise ValueError(
            "sparsegrad supports RaggedTensors of ragged_rank 1 only: the items "
            "of the rows must be scalars or lists of one shape (uniform inner "
            "dimensions), got ragged inner lists"
        ) from None
    if values is None:
        values = np.zeros(0, dtype if dtype is not None else np.float32)
    elif values.dtype == object:
        raise ValueError(
            "sparsegrad supports RaggedTensors of ragged_rank 1 only: the items "
            "of the rows must be scalars or lists of one shape"
        )
    elif dtype is None:
        values = values.astype(_python_dtype(values), copy=False)
    check_fits(len(flat), tsplits, "ragged.constant: the number of values")
    splits = np.zeros(len(lengths) + 1, tsplits)
    np.cumsum(lengths, out=splits[1:])
    splits.setflags(write=False)
    return RaggedTensor.from_row_splits(wrap(values), splits, validate=False)


def map_flat_values(op, *args, **kwargs):
    """Apply `op` to the values of the RaggedTensors among the arguments.

    Every RaggedTensor argument is replaced by its values (they must share
    their row splits); the result is a RaggedTensor with those rows and
    `op`'s result as values.  Tapes record what `op` does, so the result is
    differentiable w.r.t. the values.

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
            return x._used_values()
        return x

    new_args = [swap(a) for a in args]
    new_kwargs = {k: swap(v) for k, v in kwargs.items()}
    if not found:
        raise ValueError("map_flat_values: no argument is a RaggedTensor")
    first = found[0]
    for other in found[1:]:
        if not first._same_rows(other):
            raise InvalidArgumentError(
                "map_flat_values: the RaggedTensors have different row splits "
                f"(shapes {first.shape} and {other.shape})"
            )
    out = op(*new_args, **new_kwargs)
    return first.with_values(out)


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
