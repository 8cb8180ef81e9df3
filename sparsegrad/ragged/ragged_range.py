"""The raw ``RaggedRange`` op: validated front end of ``_kernels/ragged.pyx``.

Every check (ranks, lengths, dtypes, zero deltas, sizes and the total) runs
before the values are allocated, so an absurd request raises
:class:`~sparsegrad.errors.InvalidArgumentError` instead of exhausting memory.
"""

import numbers

import numpy as np

from ..errors import InvalidArgumentError
from ..framework import buffers
from ..framework.backend import backend_of
from ..framework.buffers import check_allocation
from ..framework.dtypes import BFLOAT16, is_floating
from ..framework.threads import get_num_threads

__all__ = ["ragged_range", "range_dtype", "splits_dtype", "row_ranges",
           "is_host_scalar", "range_backend", "range_rows"]

#: dtypes RaggedRange computes in: the op's list (TensorFlow registers CPU
#: kernels for the last four only; bfloat16 follows their algorithm, in
#: bfloat16 arithmetic).
RANGE_DTYPES = (
    BFLOAT16,
    np.dtype(np.int32),
    np.dtype(np.int64),
    np.dtype(np.float32),
    np.dtype(np.float64),
)
_SPLITS_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
_TF_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _tf_name(dtype):
    return _TF_NAMES.get(dtype.name, dtype.name)


def splits_dtype(dtype, attr="Tsplits"):
    """The row-splits dtype `dtype` (int32 or int64; a NumPy dtype or name).

    Parameters
    ----------
    dtype : dtype or str
        ``np.int32``, ``np.int64``, ``"int32"`` or ``"int64"``.
    attr : str, default="Tsplits"
        The argument's name in the message.

    Returns
    -------
    numpy.dtype
        ``int32`` or ``int64``.

    Raises
    ------
    InvalidArgumentError
        For any other dtype, in TensorFlow's words.

    Examples
    --------
    >>> splits_dtype("int32")
    dtype('int32')
    """
    try:
        d = np.dtype(dtype)
    except TypeError:
        d = None
    if d not in _SPLITS_DTYPES:
        shown = _tf_name(d) if d is not None else repr(dtype)
        raise InvalidArgumentError(
            f"Value for attr '{attr}' of {shown} is not in the list of allowed "
            "values: int32, int64"
        )
    return d


def range_dtype(dtype):
    """`dtype` as a RaggedRange value dtype (bfloat16, int32, int64, float32
    or float64).

    Parameters
    ----------
    dtype : dtype or str

    Returns
    -------
    numpy.dtype
        One of :data:`RANGE_DTYPES`.

    Raises
    ------
    InvalidArgumentError
        For any other dtype, in TensorFlow's words (attr ``T``).

    Examples
    --------
    >>> range_dtype(np.float32)
    dtype('float32')
    """
    d = np.dtype(dtype)
    if d not in RANGE_DTYPES:
        raise InvalidArgumentError(
            f"Value for attr 'T' of {_tf_name(d)} is not in the list of allowed "
            "values: bfloat16, float, double, int32, int64"
        )
    return d


def is_host_scalar(x):
    """True for a value that goes along with GPU operands of a range: a
    Python or NumPy scalar, a 0-d NumPy array, or None (refused later, by
    dtype).

    Examples
    --------
    >>> is_host_scalar(3), is_host_scalar(np.float32(1)), is_host_scalar([3])
    (True, True, False)
    """
    return x is None or isinstance(x, (numbers.Number, np.generic)) or (
        isinstance(x, np.ndarray) and x.ndim == 0)


def range_backend(*operands):
    """The one backend choice of a range call: the GPU one when an operand is
    a cupy array, host scalars (:func:`is_host_scalar`) going along with it;
    a host vector (a list or a NumPy array of rank >= 1) beside a GPU array
    raises ValueError (``backend_of``'s mix check).

    Examples
    --------
    >>> range_backend(0, np.array([3, 4]), 1).name
    'cpu'
    """
    return backend_of(*(x for x in operands if not is_host_scalar(x)))


def _operand(x, name, be):
    """One of starts/limits/deltas as a 0-d or 1-d array (a cupy array stays
    one); `be` is the call's backend (:func:`range_backend`)."""
    array = x if be.on_gpu and not is_host_scalar(x) else np.asarray(x)
    if not (array.dtype.kind in "iu" or is_floating(array.dtype)):
        raise InvalidArgumentError(
            f"RaggedRange: {name} must be a number or a vector of numbers, got "
            f"dtype {array.dtype}"
        )
    if array.ndim > 1:
        raise InvalidArgumentError(f"{name} must be a scalar or vector")
    return array


def _bits(array):
    """`array` as the kernels take it: a bfloat16 array as its uint16 bits
    (a view), any other unchanged."""
    return array.view(np.uint16) if array.dtype == BFLOAT16 else array


def ragged_range(starts, limits, deltas, Tsplits=np.int64):
    """The raw ``RaggedRange`` op: the rows ``range(starts[i], limits[i],
    deltas[i])`` as row splits and concatenated values.

    Scalars are broadcast to every row (all three scalars make one row);
    vectors must have one length.  Row ``i`` has ``ceil(|limit - start| /
    |delta|)`` values (0 when the delta points away from the limit),
    computed exactly for integers and in the values' precision for floats;
    the values are ``start, start + delta, (start + delta) + delta, ...``,
    accumulated by repeated addition in the values' dtype as TensorFlow
    does (float32 ``0.1`` steps give ``0.70000005``, not ``0.7``).

    bfloat16 (``ml_dtypes.bfloat16``; TensorFlow declares it but registers
    no kernel) follows the float algorithm in Eigen's bfloat16 arithmetic:
    ``limit - start``, ``/ delta`` and ``ceil`` are each computed in
    float32 and rounded to bfloat16 straight away, and each value is the
    previous one plus delta rounded to bfloat16, so the chain drifts sooner
    than float32's (``range(0, 1, 0.1)`` ends with ``0.601562, 0.703125,
    0.804688, 0.90625``).

    Parameters
    ----------
    starts, limits, deltas : ndarray or scalar
        Rank 0 or 1, one dtype for the three: int32, int64, bfloat16,
        float32 or float64 (use :func:`sparsegrad.ragged.range` for Python
        numbers and dtype promotion).
    Tsplits : dtype, default=np.int64
        int32 or int64, the dtype of the row splits.

    Returns
    -------
    rt_nested_splits : ndarray of Tsplits, shape (nrows + 1,)
    rt_dense_values : ndarray of the inputs' dtype, shape (rt_nested_splits[-1],)
        Both cupy arrays when an input is one (the kernels of
        ``sparsegrad._cuda.ragged`` run, with the same bits and errors; a
        host scalar goes along with a device vector).

    Raises
    ------
    InvalidArgumentError
        "starts must be a scalar or vector" (likewise limits, deltas);
        "starts, limits, and deltas must have the same shape";
        "Requires delta != 0";
        "Requires ((limit - start) / delta) <= 9223372036854775807" (the
        Tsplits maximum; NaN and infinite sizes too);
        "The total range size overflowed. Consider using int64 instead of
        int32 for row_splits_dtype."; a total larger than the machine's
        memory (refused before allocating the values);
        unsupported or mixed dtypes.  Errors of rows come in row order.

    Notes
    -----
    Cost: one parallel pass over the rows for the sizes, a sequential prefix
    sum, and one parallel pass writing the values (one thread per row; the
    same bits for any thread count).  Not differentiable (TensorFlow
    registers no gradient): nothing is recorded on a tape.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsegrad as sg
    >>> splits, values = sg.ragged.ragged_range(
    ...     np.array([0, 3], np.int32), np.array([2, 6], np.int32), np.int32(1))
    >>> splits, values
    (array([0, 2, 5]), array([0, 1, 3, 4, 5], dtype=int32))
    """
    return range_rows(starts, limits, deltas, splits_dtype(Tsplits),
                      range_backend(starts, limits, deltas))


def range_rows(starts, limits, deltas, tsplits, be):
    """:func:`ragged_range` on the call's backend `be` (its
    :func:`range_backend`), splits of the checked dtype `tsplits`.

    Examples
    --------
    >>> from sparsegrad.framework.backend import CPU
    >>> range_rows(np.int64(0), np.array([2, 1]), np.int64(1), np.int64, CPU)
    (array([0, 2, 3]), array([0, 1, 0]))
    """
    operands = [
        _operand(starts, "starts", be),
        _operand(limits, "limits", be),
        _operand(deltas, "deltas", be),
    ]
    sizes = {a.shape[0] for a in operands if a.ndim == 1}
    if len(sizes) > 1:
        raise InvalidArgumentError(
            "starts, limits, and deltas must have the same shape"
        )
    dtypes = {a.dtype for a in operands}
    if len(dtypes) > 1:
        shown = ", ".join(str(a.dtype) for a in operands)
        raise InvalidArgumentError(
            "RaggedRange: starts, limits and deltas must have one dtype, got "
            f"{shown} (sparsegrad.ragged.range promotes them)"
        )
    dtype = range_dtype(operands[0].dtype)
    n_rows = sizes.pop() if sizes else 1
    # Any GPU operand put the op on the GPU; a host scalar (0-d) goes along
    # with it, a host vector beside a GPU one raised (in range_backend).
    xp, kernels = be.xp, be.kernels("ragged")
    # recycled host memory: fresh buffers cost a page fault per 4 KiB
    empty = xp.empty if be.on_gpu else buffers.empty
    s, lim, d = (_bits(xp.ascontiguousarray(xp.asarray(a).reshape(-1)))
                 for a in operands)
    splits = empty((n_rows + 1,), tsplits)
    if any(a.shape[0] == 0 for a in (s, lim, d)):   # nrows 0
        splits[0] = 0
        return splits, xp.empty(0, dtype)
    n_threads = get_num_threads()
    row_sizes = empty((n_rows,), np.int64)
    max_size = int(np.iinfo(tsplits).max)
    kernels.range_sizes(s, lim, d, row_sizes, max_size, n_threads)
    if not be.on_gpu:
        bad, cause = kernels.range_splits(row_sizes, splits)
        total = int(splits[-1]) if bad < 0 else 0
    else:   # the verdict and the total in one read back from the device
        bad, cause, total = kernels.range_splits_total(row_sizes, splits)
    if bad >= 0:
        if cause == kernels.SIZE_ZERO_DELTA:
            raise InvalidArgumentError("Requires delta != 0")
        if cause == kernels.SIZE_TOO_LARGE:
            raise InvalidArgumentError(
                f"Requires ((limit - start) / delta) <= {max_size}"
            )
        raise InvalidArgumentError(
            "The total range size overflowed. Consider using int64 instead of "
            "int32 for row_splits_dtype."
        )
    check_allocation(((total,), dtype, "RaggedRange: starts, limits and deltas"))
    values = empty((total,), dtype)
    kernels.range_fill(s, d, splits, _bits(values), n_threads)
    return splits, values


def row_ranges(starts, limits, be):
    """``concat([range(starts[i], limits[i]) for i])`` as int64, for ranges
    already known to be valid (``0 <= starts[i] <= limits[i]``, a small
    total): the positions of the values of some rows.

    Parameters
    ----------
    starts, limits : ndarray of int64, 1-D, one length
    be : Backend
        Their backend.

    Returns
    -------
    ndarray of int64

    Examples
    --------
    >>> from sparsegrad.framework.backend import CPU
    >>> row_ranges(np.array([0, 5]), np.array([2, 7]), CPU)
    array([0, 1, 5, 6])
    """
    xp = be.xp
    starts = xp.ascontiguousarray(starts, np.int64)
    limits = xp.ascontiguousarray(limits, np.int64)
    n_rows = starts.shape[0]
    splits = xp.empty(n_rows + 1, np.int64)
    splits[0] = 0
    xp.cumsum(limits - starts, out=splits[1:])
    total = int(splits[-1])
    check_allocation(((total,), np.int64, "row positions: starts and limits"))
    values = xp.empty(total, np.int64)
    if n_rows:
        be.kernels("ragged").range_fill(starts, xp.ones(1, np.int64), splits, values,
                           get_num_threads())
    return values
