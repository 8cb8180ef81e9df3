"""Row partitions: the one conversion and check of row splits, row lengths and
value row ids.

Every factory of :class:`~sparsegrad.RaggedTensor` turns its partition
argument into row splits here, and every check that keeps the ragged kernels
in bounds runs here, before anything sized by the data is allocated:

* a partition is a 1-D int32 or int64 array (Python lists give int64, an
  empty list too); any other dtype or rank is refused;
* row splits start at 0, never decrease (compared, not subtracted, so that
  int64 extremes cannot wrap a difference into a positive one) and end at
  most at the number of values;
* row lengths are non-negative and their running sum fits in the splits'
  dtype: a sum that wraps past int64 (or goes past int32 for int32
  lengths) is an error, not splits that wrap;
* value row ids are sorted and within ``[0, nrows)``, ``nrows`` fits in
  the ids' dtype, and so does the number of values.

Errors start with TensorFlow's message and add the argument and the value
that broke the rule.
"""

import numpy as np

from ..errors import InvalidArgumentError
from ..framework import sparse_rows
from ..framework.backend import backend_of
from ..framework.buffers import check_allocation
from ..framework.tensor import Tensor
from ..framework.threads import get_num_threads
from ..ops._helpers import as_tensor

__all__ = [
    "PARTITION_DTYPES",
    "partition_backend",
    "as_partition",
    "check_row_splits",
    "splits_from_row_lengths",
    "splits_from_value_rowids",
    "rowids_from_splits",
    "check_fits",
    "freeze",
    "as_index",
    "require_ragged_rank_1",
    "python_values_dtype",
    "as_values",
]

#: The dtypes of row splits, row lengths and value row ids.
PARTITION_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def freeze(array):
    """Mark a NumPy array read-only (CuPy arrays have no such flag).

    Parameters
    ----------
    array : ndarray or cupy.ndarray

    Returns
    -------
    The same array.

    Examples
    --------
    >>> freeze(np.arange(3)).flags.writeable
    False
    """
    if isinstance(array, np.ndarray):
        array.setflags(write=False)
    return array


def python_values_dtype(array):
    """TensorFlow's dtype for values given as a Python list: ints int32
    (int64 past int32), floats float32 (an empty list too); others kept.

    Parameters
    ----------
    array : ndarray
        ``np.asarray`` of the Python value.

    Returns
    -------
    numpy.dtype

    Examples
    --------
    >>> python_values_dtype(np.asarray([1, 2]))
    dtype('int32')
    >>> python_values_dtype(np.asarray([]))
    dtype('float32')
    """
    if array.dtype.kind == "f":
        return np.dtype(np.float32)
    if array.dtype.kind in "iu":
        info = np.iinfo(np.int32)
        if array.size == 0 or (array.min() >= info.min and array.max() <= info.max):
            return np.dtype(np.int32)
        return np.dtype(np.int64)
    return array.dtype


def as_values(values, name="values"):
    """A dense values argument of a RaggedTensor factory as a Tensor of rank
    >= 1; a Python list or scalar takes TensorFlow's dtype
    (:func:`python_values_dtype`), an array or Tensor keeps its own.

    Parameters
    ----------
    values : Tensor, Variable, ndarray or Python list
    name : str, default="values"
        The argument's name in messages.

    Returns
    -------
    Tensor

    Raises
    ------
    InvalidArgumentError
        If `values` is a scalar.

    Examples
    --------
    >>> as_values([1, 2]).dtype
    dtype('int32')
    """
    if isinstance(values, (list, tuple, int, float)):
        array = np.asarray(values)
        values = array.astype(python_values_dtype(array), copy=False)
    v = as_tensor(values, name=name)
    if v.ndim == 0:
        raise InvalidArgumentError(f"{name} must have rank at least 1, got a scalar")
    return v


def as_index(value, name):
    """`value` as a Python int (anything with ``__index__``).

    Parameters
    ----------
    value : int-like
    name : str
        The argument's name in the message.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If `value` is not an integer (a float, a bool array, None...).

    Examples
    --------
    >>> as_index(np.int32(3), "nrows")
    3
    """
    try:
        return int(value.__index__())
    except (AttributeError, TypeError):
        raise TypeError(f"{name} must be an int, got {value!r}") from None


def require_ragged_rank_1(rt, op):
    """Refuse a RaggedTensor of ragged_rank >= 2 in an op that handles one
    ragged dimension only.

    Parameters
    ----------
    rt : RaggedTensor
    op : str
        The op's name, for the message.

    Raises
    ------
    TypeError
        If ``rt.ragged_rank`` is not 1.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> require_ragged_rank_1(sg.ragged.constant([[[1]]]), "reduce_sum")
    Traceback (most recent call last):
    ...
    TypeError: reduce_sum: RaggedTensors of ragged_rank >= 2 are not supported \
by reduce_sum yet (got ragged_rank 2)
    """
    rank = rt.ragged_rank
    if rank != 1:
        raise TypeError(
            f"{op}: RaggedTensors of ragged_rank >= 2 are not supported by {op} "
            f"yet (got ragged_rank {rank})"
        )


def partition_backend(values, *partitions):
    """The one backend choice of a factory call (and its host/GPU mix
    check, a ValueError): ``backend_of`` of the values (a Tensor) and the
    partition arguments, Tensors unwrapped, Python lists counting as host
    values.

    Examples
    --------
    >>> from sparsegrad.framework.tensor import wrap
    >>> partition_backend(wrap(np.zeros(3)), [0, 3]).name
    'cpu'
    """
    return backend_of(values._value, *(
        p._value if isinstance(p, Tensor) else p for p in partitions))


def as_partition(x, name, be):
    """A row-partition argument as a private, read-only 1-D int32/int64 array.

    Parameters
    ----------
    x : array_like, Tensor or cupy array
        Python lists give int64 (as in TensorFlow), an empty list too; an
        array or Tensor keeps its dtype, which must be int32 or int64.  A
        cupy array (or a GPU Tensor) stays on the GPU.
    name : str
        The argument's name in messages.
    be : Backend
        The call's backend (:func:`partition_backend`): `x` is a GPU array
        when it is the GPU one.

    Returns
    -------
    ndarray of int32 or int64, 1-D
        A copy: later changes to `x` do not reach it.

    Raises
    ------
    InvalidArgumentError
        "row_splits must have dtype int32 or int64" (with the dtype it has;
        also for Python ints that do not fit in int64) or "Shape (1, 2)
        must have rank 1".

    Examples
    --------
    >>> from sparsegrad.framework.backend import CPU
    >>> as_partition([0, 2, 3], "row_splits", CPU)
    array([0, 2, 3])
    """
    if isinstance(x, Tensor):
        x = x._value
    on_gpu = be.on_gpu
    python = not (on_gpu or isinstance(x, (np.ndarray, np.generic)))
    if not python:
        array = x if on_gpu else np.asarray(x)
    else:
        try:
            array = np.asarray(x)
        except OverflowError:
            array = np.asarray(x, dtype=object)
    if array.dtype not in PARTITION_DTYPES:
        if array.size == 0 and array.dtype.kind == "f":   # an empty list
            array = array.astype(np.int64)
        else:
            raise InvalidArgumentError(
                f"{name} must have dtype int32 or int64, got {array.dtype}"
                + (_past_int64(x, name) if python else "")
            )
    if array.ndim != 1:
        raise InvalidArgumentError(
            f"Shape {tuple(array.shape)} must have rank 1 ({name} must be a vector)"
        )
    return freeze(array.copy())


def _past_int64(x, name):
    """For Python ints past int64 (NumPy made uint64, float64 or object of
    them), the part of the message that names the value."""
    try:
        items = np.asarray(x, dtype=object).reshape(-1).tolist()
    except ValueError:   # ragged nesting
        return ""
    if items and all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        value = max(items, key=abs)
        if value > np.iinfo(np.int64).max or value < np.iinfo(np.int64).min:
            return f": {name} holds {value}, past int64"
    return ""


def check_fits(value, dtype, what):
    """Raise unless the non-negative int `value` fits in the integer `dtype`.

    Parameters
    ----------
    value : int
    dtype : int32 or int64
    what : str
        The start of the message: what `value` is, naming the argument.

    Raises
    ------
    InvalidArgumentError
        If `value` is above the dtype's maximum.

    Examples
    --------
    >>> check_fits(2**31, np.int32, "nrows")
    Traceback (most recent call last):
    ...
    sparsegrad.errors.InvalidArgumentError: nrows = 2147483648 does not fit in \
int32 (at most 2147483647)
    """
    top = int(np.iinfo(dtype).max)
    if value > top:
        raise InvalidArgumentError(
            f"{what} = {value} does not fit in {np.dtype(dtype)} (at most {top})"
        )


def _first(mask):
    """The position of the first True of a non-empty 1-D bool array."""
    return int(mask.argmax())


def check_row_splits(splits, nvals, factory, check_last=True):
    """Check row splits against ``nvals`` values, in TensorFlow's order.

    Parameters
    ----------
    splits : ndarray of int32 or int64, 1-D (from :func:`as_partition`)
    nvals : int
        The number of values.
    factory : str
        The public factory, for TensorFlow's message.
    check_last : bool, default=True
        False accepts a last split below `nvals` (``validate=False``: the
        rows then leave the last values out).  A last split above `nvals`
        is always an error.

    Raises
    ------
    InvalidArgumentError
        "row_splits tensor may not be empty.", "Arguments to <factory> do
        not form a valid RaggedTensor:zero" / ":monotonic", "Arguments to
        _from_row_partition do not form a valid RaggedTensor", each with the
        split that broke the rule.

    Examples
    --------
    >>> check_row_splits(np.array([0, 2, 1]), 1, "from_row_splits")
    Traceback (most recent call last):
    ...
    sparsegrad.errors.InvalidArgumentError: Arguments to from_row_splits do not \
form a valid RaggedTensor:monotonic (row_splits[2] = 1 < row_splits[1] = 2)
    """
    n = splits.shape[0]
    if n == 0:
        raise InvalidArgumentError("row_splits tensor may not be empty.")
    first = int(splits[0])
    if first != 0:
        raise InvalidArgumentError(
            f"Arguments to {factory} do not form a valid RaggedTensor:zero "
            f"(row_splits[0] = {first}, not 0)"
        )
    k = sparse_rows.first_decrease(splits)
    if k is not None:
        raise InvalidArgumentError(
            f"Arguments to {factory} do not form a valid RaggedTensor:"
            f"monotonic (row_splits[{k + 1}] = {int(splits[k + 1])} < "
            f"row_splits[{k}] = {int(splits[k])})"
        )
    last = int(splits[-1])
    if last != nvals and (check_last or last > nvals):
        raise InvalidArgumentError(
            "Arguments to _from_row_partition do not form a valid RaggedTensor "
            f"(row_splits[-1] = {last}, but values has {nvals} rows)"
        )


def splits_from_row_lengths(lengths, nvals, be):
    """Row splits ``[0, cumsum(lengths)]`` of `lengths`' dtype, checked.

    Parameters
    ----------
    lengths : ndarray of int32 or int64, 1-D (from :func:`as_partition`)
    nvals : int
        The number of values; the lengths must sum to it.
    be : Backend
        The backend of `lengths`.

    Returns
    -------
    ndarray of `lengths`' dtype, shape (nrows + 1,), read-only
        On `lengths`' device.

    Raises
    ------
    InvalidArgumentError
        "Arguments to from_row_lengths do not form a valid RowPartition"
        for a negative length, or running sums past the dtype's maximum
        (int64 sums would wrap); "Arguments to _from_row_partition do not
        form a valid RaggedTensor" when the sum is not `nvals`.  Each names
        the row and the value.

    Examples
    --------
    >>> from sparsegrad.framework.backend import CPU
    >>> splits_from_row_lengths(np.array([2, 0, 1]), 3, CPU)
    array([0, 2, 2, 3])
    """
    xp = be.xp
    n = lengths.shape[0]
    message = "Arguments to from_row_lengths do not form a valid RowPartition"
    total = 0
    if n:
        negative = lengths < 0
        if bool(negative.any()):
            k = _first(negative)
            raise InvalidArgumentError(
                f"{message} (row_lengths[{k}] = {int(lengths[k])} is negative)"
            )
        # Non-negative int64 terms: the first running sum past 2**63 - 1
        # wraps to a negative one, so a negative sum marks the overflow.
        sums = xp.cumsum(lengths, dtype=np.int64)
        wrapped = sums < 0
        if bool(wrapped.any()):
            k = _first(wrapped)
            raise InvalidArgumentError(
                f"{message} (the sum of row_lengths[:{k + 1}] is more than "
                f"{np.iinfo(np.int64).max}: row_lengths[{k}] = {int(lengths[k])})"
            )
        total = int(sums[-1])
        top = int(np.iinfo(lengths.dtype).max)
        if total > top:
            raise InvalidArgumentError(
                f"{message} (row_lengths sum to {total}, more than "
                f"{lengths.dtype} row splits hold: {top})"
            )
    if total != nvals:
        raise InvalidArgumentError(
            "Arguments to _from_row_partition do not form a valid RaggedTensor "
            f"(row_lengths sum to {total}, but values has {nvals} rows)"
        )
    splits = xp.empty(n + 1, lengths.dtype)
    splits[0] = 0
    if n:
        splits[1:] = sums
    return freeze(splits)


def rowids_from_splits(splits, be):
    """The row of each value of valid `splits` (``value_rowids``), a new
    array of the splits' dtype on backend `be` (the row-id kernel), its size
    checked before it is allocated.

    Examples
    --------
    >>> from sparsegrad.framework.backend import CPU
    >>> rowids_from_splits(np.array([0, 2, 2, 3]), CPU)
    array([0, 0, 2])
    """
    n_values = int(splits[-1])
    check_allocation(((n_values,), splits.dtype, "value_rowids: row_splits"))
    rowids = be.xp.empty(n_values, splits.dtype)
    if rowids.size:
        be.kernels("ragged").row_splits_to_rowids(splits, rowids, get_num_threads())
    return rowids


def splits_from_value_rowids(ids, nrows, nvals, be):
    """Row splits of sorted value row ids, of the ids' dtype, checked.

    Parameters
    ----------
    ids : ndarray of int32 or int64, 1-D (from :func:`as_partition`)
        A NumPy or a CuPy array (checked on the device, one summary read
        back).
    nrows : int-like or None
        The number of rows; None: ``ids[-1] + 1`` (0 without ids).
    nvals : int
        The number of values: ``len(ids)`` must equal it.
    be : Backend
        The backend of `ids`.

    Returns
    -------
    ndarray of `ids`' dtype, shape (nrows + 1,), read-only

    Raises
    ------
    TypeError
        If `nrows` is not an int.
    ValueError
        TensorFlow's: "Expected nrows >= 0; got -1", "Expected nrows >=
        value_rowids[-1] + 1; got nrows=3, value_rowids[-1]=3", "Shapes (8,)
        and (3,) are incompatible".
    InvalidArgumentError
        "Arguments to from_value_rowids do not form a valid RowPartition"
        for negative, decreasing or too large ids (with the check that
        failed); `nrows` or `nvals` beyond the ids' dtype; splits larger
        than the memory the process has.

    Examples
    --------
    >>> from sparsegrad.framework.backend import CPU
    >>> splits_from_value_rowids(np.array([0, 0, 2]), 4, 3, CPU)
    array([0, 2, 2, 3, 3])
    """
    summary = None
    if be.on_gpu:
        # one read back: the last id here, every check in the splits
        summary = sparse_rows.device_id_summary(ids, be)
        last = summary[4] if ids.size else -1
    else:
        last = int(ids[-1]) if ids.size else -1
    if nrows is None:
        n_rows = max(last + 1, 0)
    else:
        if isinstance(nrows, Tensor):
            nrows = nrows._value
        if np.ndim(nrows) != 0:
            raise ValueError(f"Shape {np.shape(nrows)} must have rank 0 (nrows)")
        n_rows = as_index(nrows, "nrows")
        if n_rows < 0:
            raise ValueError(f"Expected nrows >= 0; got {n_rows}")
        if n_rows < last + 1:
            raise ValueError(
                "Expected nrows >= value_rowids[-1] + 1; got "
                f"nrows={n_rows}, value_rowids[-1]={last}"
            )
    if ids.shape[0] != nvals:
        raise ValueError(f"Shapes ({nvals},) and ({ids.shape[0]},) are incompatible")
    check_fits(n_rows, ids.dtype, "from_value_rowids: nrows")
    check_fits(nvals, ids.dtype, "from_value_rowids: the number of values")
    check_allocation(
        ((n_rows + 1,), np.int64, "from_value_rowids: nrows"),
        ((n_rows + 1,), ids.dtype, "from_value_rowids: nrows"),
    )
    try:
        splits = sparse_rows.sorted_segment_splits(ids, n_rows, summary=summary,
                                                   be=be)
    except InvalidArgumentError:
        raise InvalidArgumentError(
            "Arguments to from_value_rowids do not form a valid RowPartition "
            f"({_bad_rowid(be.host(ids), n_rows)})"
        ) from None
    return freeze(splits.astype(ids.dtype, copy=False))


def _bad_rowid(ids, n_rows):
    """Which rule the ids break, naming the id (only on the error path)."""
    k = sparse_rows.first_decrease(ids)
    if ids[0] < 0:
        return f"value_rowids[0] = {int(ids[0])} is negative"
    if k is not None:
        return (f"value_rowids[{k + 1}] = {int(ids[k + 1])} < "
                f"value_rowids[{k}] = {int(ids[k])}: not sorted")
    return f"value_rowids[-1] = {int(ids[-1])} is not below nrows = {n_rows}"
