"""The argument checks of the sparse segment ops and the embedding bags
(TensorFlow's messages), and the dtype rule of every lookup and bag."""

import numpy as np

from ...errors import InvalidArgumentError
from ...framework import sparse_rows
from ...framework.dtypes import FLOAT_DTYPES, is_floating, is_half, is_real
from .._helpers import as_borrowed_tensor
from ..segment_shared import raw_value

__all__ = ["COMBINERS", "table_tensor", "check_float", "index_input",
           "check_bag_splits", "check_combiner", "output_dtype", "work_dtype"]

# The kernel's combiner codes (COMBINER_* in _kernels/_sparse_segment.pxi).
COMBINERS = {"sum": 0, "mean": 1, "sqrtn": 2}


def table_tensor(data, what, name="data", be=None):
    """The table of an op as a Tensor of rank >= 1 (an ndarray or device
    table is not copied); `be`: the call's backend."""
    t = as_borrowed_tensor(data, name, be)
    if t.ndim == 0:
        raise InvalidArgumentError(
            f"{what}: Shape must be at least rank 1 but is rank 0 ({name} is a "
            f"scalar)"
        )
    return t


def check_float(t, what, combiner, name="data"):
    """A real table (bfloat16 included), floating unless `combiner` is
    "sum"."""
    if not is_floating(t.dtype) and combiner != "sum":
        raise InvalidArgumentError(
            f"{what}: {name} must be a floating-point tensor for combiner "
            f"{combiner!r}, got dtype {t.dtype}"
        )
    if not is_real(t.dtype) or t.dtype.kind == "b":
        raise InvalidArgumentError(
            f"{what}: {name} must be a real numeric tensor, got dtype {t.dtype}"
        )


def index_input(x, name, be=None):
    """An index argument as a checked 1-D index array (of its device, that of
    the call's backend `be`)."""
    return sparse_rows.as_index_array(raw_value(x), name, be)


def check_bag_splits(spl, nnz, what, name="splits"):
    """The row splits of bags of `nnz` ids: from 0 to `nnz`, non-decreasing.

    Parameters
    ----------
    spl : ndarray of int32 or int64 (on the host)
    nnz : int
        The number of ids.
    what : str
        The op, which starts the message.
    name : str, optional
        The argument, as the message names it (``"sp_ids.row_splits"``).

    Raises
    ------
    InvalidArgumentError
        If `spl` is empty, does not run from 0 to `nnz`, or decreases.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.errors import InvalidArgumentError
    >>> try:
    ...     check_bag_splits(np.array([0, 2, 1, 3]), 3, "op")
    ... except InvalidArgumentError as error:
    ...     print(error)
    op: splits must be non-decreasing, but splits[2] = 1 < splits[1] = 2
    """
    if spl.shape[0] == 0:
        raise InvalidArgumentError(f"{what}: {name} is empty")
    if spl[0] != 0 or spl[-1] != nnz:
        raise InvalidArgumentError(
            f"{what}: {name} must run from 0 to the number of ids ({nnz}), got "
            f"{int(spl[0])} ... {int(spl[-1])}"
        )
    k = sparse_rows.first_decrease(spl)   # (a difference of extremes wraps)
    if k is not None:
        label = name.rsplit(".", 1)[-1]
        raise InvalidArgumentError(
            f"{what}: {name} must be non-decreasing, but {label}[{k + 1}] = "
            f"{int(spl[k + 1])} < {label}[{k}] = {int(spl[k])}"
        )


def check_combiner(combiner):
    """`combiner` as one of "sum", "mean", "sqrtn" (None means "mean").

    Parameters
    ----------
    combiner : str or None

    Returns
    -------
    str

    Raises
    ------
    ValueError
        TensorFlow's ``combiner must be one of 'mean', 'sqrtn' or 'sum', got
        max``.

    Examples
    --------
    >>> from sparsegrad.ops.sparse_segment_ops import check_combiner
    >>> check_combiner(None)
    'mean'
    """
    if combiner is None:
        return "mean"
    if not isinstance(combiner, str) or combiner not in COMBINERS:
        raise ValueError(
            f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}"
        )
    return combiner


_FLOAT32 = FLOAT_DTYPES[0]


def output_dtype(dtype, table_dtype, what):
    """The dtype of a lookup or bag on a table of `table_dtype`, asked for
    with `dtype`: None or `table_dtype` give the table's dtype (TensorFlow's
    rule); a float16 or bfloat16 table may also be read as float32 (its rows
    converted exactly, once gathered).  Any other request would round the
    rows (float64 to float32, float16 to bfloat16) or widen them past the
    float32 the bags accumulate in, and is refused.

    Parameters
    ----------
    dtype : dtype, str or None
        The caller's ``dtype=`` argument.
    table_dtype : dtype
        The dtype of the table (of its shards).
    what : str
        The op, which starts the message.

    Returns
    -------
    numpy.dtype

    Raises
    ------
    InvalidArgumentError
        For a `dtype` that is not a dtype, or another dtype than those
        above (``embedding_lookup: dtype must be None, the table's dtype
        (float32) or float32 for a float16 or bfloat16 table, got
        float64``).

    Examples
    --------
    >>> import ml_dtypes
    >>> output_dtype("float32", ml_dtypes.bfloat16, "gather")
    dtype('float32')
    >>> output_dtype(None, np.float16, "gather")
    dtype('float16')
    """
    table_dtype = np.dtype(table_dtype)
    if dtype is None:
        return table_dtype
    try:
        wanted = np.dtype(dtype)
    except (TypeError, ValueError):
        wanted = None
    if wanted == table_dtype or (wanted == _FLOAT32 and is_half(table_dtype)):
        return wanted
    shown = repr(dtype) if wanted is None else wanted.name
    raise InvalidArgumentError(
        f"{what}: dtype must be None, the table's dtype ({table_dtype}) or "
        f"float32 for a float16 or bfloat16 table, got {shown}"
    )


def work_dtype(dtype):
    """The dtype the bags of a table of `dtype` compute in: float32 for the
    half types (their rows converted once gathered), else `dtype`.

    Parameters
    ----------
    dtype : dtype

    Returns
    -------
    numpy.dtype

    Examples
    --------
    >>> work_dtype(np.float16), work_dtype(np.float64)
    (dtype('float32'), dtype('float64'))
    """
    dtype = np.dtype(dtype)
    return _FLOAT32 if is_half(dtype) else dtype
