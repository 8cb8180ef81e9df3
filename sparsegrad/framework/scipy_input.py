"""The one check of a ``scipy.sparse`` argument, where it enters.

Every entry that takes a ``scipy.sparse`` matrix (``sparse_dense_matmul``,
the embedding bags, ``RaggedTensor.from_scipy``, ``IndexedSlices.from_scipy``)
reads it in two steps:

1. :func:`check` looks at its structure, completely, before anything is
   converted: the format is one SciPy defines (CSR, CSC, COO, BSR, DOK, LIL,
   DIA; matrix or array), the shape is 2-D and non-negative, the index arrays
   are integers, ``indptr`` has one entry per row (column, block row) plus
   one, starts at 0 and never decreases, the index and value arrays have one
   length, and every index lies inside the shape.  A malformed matrix raises
   :class:`~sparsegrad.errors.InvalidArgumentError` naming the argument and
   the bad fact, and never reaches SciPy's own conversions, whose compiled
   loops trust the structure.
2. :meth:`CheckedMatrix.to_csr` checks the memory the reading takes
   (:func:`~sparsegrad.framework.buffers.check_allocation`, together with the
   caller's own buffers) and returns the matrix's entries in CSR layout.

**The meaning of a matrix**: each stored entry is one entry, read row by
row.  Entries repeated at one ``(row, column)`` are kept as separate entries
and each one counts (a bag op sees the id twice, as TensorFlow counts an id
repeated in a ``SparseTensor`` row; a linear op such as a product adds them
up, as SciPy does); explicit zeros are entries too (DIA's zeros, padding
included, are not).  A CSR matrix is read as stored, in place (its own
arrays, not copied); any other format is read into new CSR arrays, its
entries ordered by row with the stored order kept within a row (a stable
sort), so every format holding the same entries gives the same result.  The
caller's matrix is never changed.
"""

import itertools
from typing import NamedTuple

import numpy as np
import scipy.sparse

from ..errors import InvalidArgumentError
from . import sparse_rows
from .backend import CPU
from .buffers import check_allocation

__all__ = ["FORMATS", "CSR", "CheckedMatrix", "check", "is_scipy_sparse"]

#: The formats :func:`check` reads.
FORMATS = ("csr", "csc", "coo", "bsr", "dok", "lil", "dia")

_INT32_MAX = 2**31 - 1


class CSR(NamedTuple):
    """The entries of a matrix in CSR layout: row ``r`` holds the entries
    ``indptr[r]:indptr[r + 1]`` of `indices` (their columns) and `data`."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple


def is_scipy_sparse(value):
    """True for a ``scipy.sparse`` matrix or array (`value` may be any object).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from sparsegrad.framework import scipy_input
    >>> scipy_input.is_scipy_sparse(sp.eye(2)), scipy_input.is_scipy_sparse([1])
    (True, False)
    """
    return scipy.sparse.issparse(value)


class CheckedMatrix:
    """A ``scipy.sparse`` matrix whose structure :func:`check` accepted.

    Attributes
    ----------
    shape : (int, int)
    dtype : numpy.dtype
        The dtype of its values.
    nnz : int
        The number of stored entries.
    """

    def __init__(self, where, shape, dtype, layout, arrays):
        self._where = where
        self.shape = shape
        self.dtype = dtype
        self._layout = layout    # "csr", "csc", "coo" or "bsr"
        self._arrays = arrays

    @property
    def index_dtype(self):
        """The dtype of :meth:`to_csr`'s ``indptr`` and ``indices``: a CSR
        matrix's own; otherwise int32 when the shape and the entries fit it,
        else int64 (the dtype SciPy's ``tocsr`` picks)."""
        if self._layout == "csr":
            return self._arrays[0].dtype
        largest = max(self.shape + (self.nnz,))
        return np.dtype(np.int32 if largest <= _INT32_MAX else np.int64)

    @property
    def nnz(self):
        """The number of stored entries (repeats and explicit zeros count)."""
        if self._layout == "csr":
            return int(self._arrays[0][-1])
        return int(self._arrays[-1].size)

    def buffers(self):
        """The ``(shape, dtype, what)`` of the arrays :meth:`to_csr` allocates,
        for :func:`~sparsegrad.framework.buffers.check_allocation`."""
        if self._layout == "csr":
            return []
        n = self.nnz
        what = f"{self._where} of shape {self.shape}"
        # indptr; row, column and order of each entry; the values
        return ([((self.shape[0] + 1,), np.int64, what)]
                + [((n,), np.int64, what)] * 3 + [((n,), self.dtype, what)])

    def to_csr(self, *other_buffers):
        """The matrix's entries in CSR layout.

        Parameters
        ----------
        *other_buffers : tuple of (shape, dtype, what)
            The caller's own buffers sized by this matrix (its output, say):
            checked together with this reading's in one
            :func:`~sparsegrad.framework.buffers.check_allocation`.

        Returns
        -------
        CSR
            ``indptr`` and ``indices`` of :attr:`index_dtype`, ``data`` of
            :attr:`dtype`.  For a CSR matrix, its own arrays (``indices``
            and ``data`` cut to ``indptr[-1]`` entries): read them, never
            write them.

        Raises
        ------
        InvalidArgumentError
            If the buffers take more memory than the process has.
        """
        check_allocation(*self.buffers(), *other_buffers)
        if self._layout == "csr":
            indptr, indices, data = self._arrays
            nnz = int(indptr[-1])
            return CSR(indptr, indices[:nnz], data[:nnz], self.shape)
        row, col, data = self._entries()
        return _from_entries(row, col, data, self.shape, self.index_dtype)

    def _entries(self):
        """``(row, column, value)`` of every stored entry, in stored order."""
        if self._layout == "coo":
            return self._arrays
        indptr, indices, data = self._arrays
        if self._layout == "bsr":
            n_blocks, r, c = data.shape
            block_row = _major_of(indptr, n_blocks)
            rows = block_row[:, None, None] * r + np.arange(r)[None, :, None]
            cols = indices[:, None, None] * c + np.arange(c)[None, None, :]
            shape = (n_blocks, r, c)
            return (np.broadcast_to(rows, shape).reshape(-1),
                    np.broadcast_to(cols, shape).reshape(-1), data.reshape(-1))
        nnz = int(indptr[-1])
        # CSC: the major axis is the column
        return indices[:nnz], _major_of(indptr, nnz), data[:nnz]


def _major_of(indptr, nnz):
    """The row (column, block row) of each of the `nnz` stored entries."""
    n_major = indptr.shape[0] - 1
    return np.repeat(np.arange(n_major, dtype=np.int64),
                     np.diff(indptr).astype(np.int64, copy=False))[:nnz]


def _from_entries(row, col, data, shape, idx):
    """CSR arrays of entries in any order: a stable sort by row (none when
    the rows are already in order), so each row keeps its stored order."""
    row = np.asarray(row, dtype=np.int64)
    if sparse_rows.first_decrease(row) is not None:
        order = np.argsort(row, kind="stable")
        row, col, data = row[order], col[order], data[order]
    indptr = np.zeros(shape[0] + 1, dtype=idx)
    np.cumsum(np.bincount(row, minlength=shape[0]), out=indptr[1:])
    return CSR(indptr, np.asarray(col).astype(idx), np.array(data), shape)


# -- the structure check -----------------------------------------------------------


def check(matrix, name, op, *, kinds="biuf"):
    """Check the structure of a ``scipy.sparse`` argument, before any use.

    Parameters
    ----------
    matrix : scipy.sparse matrix or array
        Any format of :data:`FORMATS`.
    name : str
        The argument's name (``sp_ids``, ``sp_a``, ...), for the messages.
    op : str
        The op's name, for the messages.
    kinds : str, default="biuf"
        The dtype kinds its values may have (``numpy.dtype.kind``).

    Returns
    -------
    CheckedMatrix
        Nothing data-sized is allocated yet (DOK and LIL matrices, which
        keep Python lists, are read into arrays of their entries here).

    Raises
    ------
    TypeError
        If `matrix` is not a ``scipy.sparse`` matrix.
    InvalidArgumentError
        For an unknown format, a shape that is not 2-D or does not fit
        int64, values of a dtype outside `kinds`, or a malformed structure
        (the message names the array and the bad entry).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from sparsegrad.framework import scipy_input
    >>> coo = sp.coo_array(([1.0, 2.0, 5.0], ([1, 1, 0], [2, 2, 0])), shape=(2, 3))
    >>> csr = scipy_input.check(coo, "sp_ids", "my_op").to_csr()
    >>> csr.indptr, csr.indices, csr.data
    (array([0, 1, 3], dtype=int32), array([0, 2, 2], dtype=int32), array([5., 1., 2.]))
    >>> bad = sp.csr_array(([1.0], [0], [0, 1]), shape=(1, 2))
    >>> bad.indptr = bad.indptr[:1]
    >>> scipy_input.check(bad, "sp_ids", "my_op")
    Traceback (most recent call last):
    ...
    sparsegrad.errors.InvalidArgumentError: my_op: sp_ids.indptr must have \
shape[0] + 1 = 2 entries, got 1
    """
    if not scipy.sparse.issparse(matrix):
        raise TypeError(
            f"{op}: {name} must be a scipy.sparse matrix or array, got "
            f"{type(matrix).__name__}"
        )
    where = _Where(op, name)
    fmt = getattr(matrix, "format", None)
    if fmt not in FORMATS:
        raise InvalidArgumentError(
            f"{where} has the unknown scipy.sparse format {fmt!r}; expected one "
            f"of {', '.join(FORMATS)}"
        )
    shape = _check_shape(matrix, where)
    dtype = np.dtype(matrix.dtype)
    if dtype.kind not in kinds:
        raise InvalidArgumentError(
            f"{where} has dtype {dtype}; only real dtypes are supported"
        )
    if fmt in ("csr", "csc"):
        arrays = _check_compressed(matrix, where, shape, dtype, fmt)
        return CheckedMatrix(where, shape, dtype, fmt, arrays)
    if fmt == "bsr":
        return CheckedMatrix(where, shape, dtype, "bsr",
                             _check_bsr(matrix, where, shape, dtype))
    if fmt == "coo":
        coords = getattr(matrix, "coords", None)
        if coords is None:
            coords = (matrix.row, matrix.col)
        arrays = _check_entries(where, shape, tuple(coords), matrix.data, dtype)
        return CheckedMatrix(where, shape, dtype, "coo", arrays)
    if fmt == "lil":
        return CheckedMatrix(where, shape, dtype, "csr",
                             _read_lil(matrix, where, shape, dtype))
    if fmt == "dok":
        return CheckedMatrix(where, shape, dtype, "coo",
                             _read_dok(matrix, where, shape, dtype))
    return CheckedMatrix(where, shape, dtype, "coo",
                         _read_dia(matrix, where, shape, dtype))


class _Where(str):
    """``"op: name"``, the start of a message; ``arg`` is the name alone."""

    def __new__(cls, op, name):
        self = super().__new__(cls, f"{op}: {name}")
        self.arg = name
        return self


def _check_shape(matrix, where):
    shape = getattr(matrix, "shape", None)
    if not isinstance(shape, tuple) or len(shape) != 2:
        raise InvalidArgumentError(f"{where} must be 2-D, got shape {shape}")
    dims = sparse_rows.int_tuple(shape)
    if dims is None:
        raise InvalidArgumentError(
            f"{where} has shape {shape}, which is not a pair of ints"
        )
    if min(dims) < 0 or max(dims) >= sparse_rows.INT64_MAX:
        raise InvalidArgumentError(
            f"{where} has shape {dims}; each dimension must lie in [0, 2**63 - 1)"
        )
    return dims


def _index(array, where, what):
    """A 1-D int32/int64 index array of the matrix (named in the message)."""
    return sparse_rows.as_index_array(array, f"{where}.{what}", CPU)  # host arrays


def _values(array, where, dtype, ndim=1):
    try:
        data = np.asarray(array)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"{where}.data is not an array of numbers"
        ) from None
    if data.ndim != ndim:
        raise InvalidArgumentError(
            f"{where}.data must be {ndim}-D, got shape {data.shape}"
        )
    if data.dtype != dtype:
        raise InvalidArgumentError(
            f"{where}.data has dtype {data.dtype}, not the matrix's {dtype}"
        )
    return data


def _check_pointers(indptr, where, n_major, major_text, n_stored, what="indices"):
    """indptr: ``n_major + 1`` entries, from 0, non-decreasing, its last at
    most the `n_stored` entries of the index and value arrays."""
    if indptr.shape[0] != n_major + 1:
        raise InvalidArgumentError(
            f"{where}.indptr must have {major_text} + 1 = {n_major + 1} entries, "
            f"got {indptr.shape[0]}"
        )
    if indptr[0] != 0:
        raise InvalidArgumentError(
            f"{where}.indptr must start at 0, got indptr[0] = {int(indptr[0])}"
        )
    k = sparse_rows.first_decrease(indptr)
    if k is not None:
        raise InvalidArgumentError(
            f"{where}.indptr must be non-decreasing, got indptr[{k + 1}] = "
            f"{int(indptr[k + 1])} < indptr[{k}] = {int(indptr[k])}"
        )
    if int(indptr[-1]) > n_stored:
        raise InvalidArgumentError(
            f"{where}.indptr ends at {int(indptr[-1])}, past the {n_stored} "
            f"entries of {where.arg}.{what} and {where.arg}.data"
        )


def _check_range(indices, bound, where, what):
    k = sparse_rows.first_out_of_range(indices, bound, CPU)   # one compiled pass
    if k is not None:
        raise InvalidArgumentError(
            f"{where}.{what}[{k}] = {int(indices[k])} is not in [0, {bound})"
        )


def _same_length(where, named):
    """The index and value arrays `named` (``(name, array)`` pairs) have one
    length."""
    lengths = [a.shape[0] for _, a in named]
    if len(set(lengths)) > 1:
        others = ", ".join(f"{where.arg}.{n} {a.shape[0]}" for n, a in named[1:])
        raise InvalidArgumentError(
            f"{where}.{named[0][0]} has {lengths[0]} entries but {others}; the "
            f"index and value arrays must have one length"
        )


def _check_compressed(matrix, where, shape, dtype, fmt):
    """CSR or CSC: ``(indptr, indices, data)``, checked."""
    n_major, n_minor = shape if fmt == "csr" else shape[::-1]
    indptr = _index(matrix.indptr, where, "indptr")
    indices = _index(matrix.indices, where, "indices")
    data = _values(matrix.data, where, dtype)
    _same_length(where, (("indices", indices), ("data", data)))
    major_text = "shape[0]" if fmt == "csr" else "shape[1]"
    _check_pointers(indptr, where, n_major, major_text, indices.shape[0])
    _check_range(indices[: int(indptr[-1])], n_minor, where, "indices")
    return indptr, indices, data


def _check_bsr(matrix, where, shape, dtype):
    data = _values(matrix.data, where, dtype, ndim=3)
    r, c = data.shape[1:]
    if r < 1 or c < 1 or shape[0] % r or shape[1] % c:
        raise InvalidArgumentError(
            f"{where} has blocks of shape {(r, c)}, which do not tile its shape "
            f"{shape}"
        )
    indptr = _index(matrix.indptr, where, "indptr")
    indices = _index(matrix.indices, where, "indices")
    _same_length(where, (("indices", indices), ("data", data)))
    _check_pointers(indptr, where, shape[0] // r, f"shape[0] // {r}",
                    indices.shape[0])
    n_blocks = int(indptr[-1])
    _check_range(indices[:n_blocks], shape[1] // c, where, "indices")
    return indptr, indices[:n_blocks], data[:n_blocks]


def _check_entries(where, shape, coords, data, dtype):
    """COO entries ``(row, col, data)``, checked."""
    if len(coords) != 2:
        raise InvalidArgumentError(
            f"{where} has {len(coords)} coordinate arrays; a 2-D matrix has 2"
        )
    row = _index(coords[0], where, "row")
    col = _index(coords[1], where, "col")
    data = _values(data, where, dtype)
    _same_length(where, (("row", row), ("col", col), ("data", data)))
    _check_range(row, shape[0], where, "row")
    _check_range(col, shape[1], where, "col")
    return row, col, data


def _read_lil(matrix, where, shape, dtype):
    """LIL: its lists of columns and values as CSR arrays, checked."""
    rows, values = matrix.rows, matrix.data
    if len(rows) != shape[0] or len(values) != shape[0]:
        raise InvalidArgumentError(
            f"{where} holds {len(rows)} lists of columns and {len(values)} of "
            f"values for its {shape[0]} rows"
        )
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=shape[0])
    value_lengths = np.fromiter(map(len, values), dtype=np.int64, count=shape[0])
    if not np.array_equal(lengths, value_lengths):
        r = int(np.flatnonzero(lengths != value_lengths)[0])
        raise InvalidArgumentError(
            f"{where}: row {r} holds {lengths[r]} columns and {value_lengths[r]} "
            f"values"
        )
    total = int(lengths.sum())
    try:
        cols = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64,
                           count=total)
        data = np.fromiter(itertools.chain.from_iterable(values), dtype=dtype,
                           count=total)
    except (TypeError, ValueError, OverflowError):
        raise InvalidArgumentError(
            f"{where}.rows must hold int columns and {where.arg}.data numbers"
        ) from None
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    outside = (cols < 0) | (cols >= shape[1])
    if outside.any():
        k = int(np.flatnonzero(outside)[0])
        r = int(np.searchsorted(indptr, k, side="right")) - 1
        raise InvalidArgumentError(
            f"{where}.rows[{r}] holds the column {int(cols[k])}, which is not in "
            f"[0, {shape[1]})"
        )
    return indptr, cols, data


def _read_dok(matrix, where, shape, dtype):
    """DOK: its keys and values as COO entries, checked."""
    keys = list(matrix.keys())
    try:
        pairs = np.array(keys, dtype=np.int64).reshape(len(keys), 2)
        data = np.array(list(matrix.values()), dtype=dtype).reshape(len(keys))
    except (TypeError, ValueError, OverflowError):
        raise InvalidArgumentError(
            f"{where} holds a key that is not a (row, column) pair of ints, or a "
            f"value that is not a number"
        ) from None
    outside = ((pairs < 0) | (pairs >= np.array(shape, dtype=np.int64))).any(axis=1)
    if outside.any():
        key = tuple(int(v) for v in pairs[int(np.flatnonzero(outside)[0])])
        raise InvalidArgumentError(
            f"{where} holds the key {key}, outside its shape {shape}"
        )
    return pairs[:, 0], pairs[:, 1], data


def _read_dia(matrix, where, shape, dtype):
    """DIA: its diagonals as COO entries (SciPy's ``tocoo`` of a new matrix
    built from the checked arrays; zeros, padding included, are no entries)."""
    offsets = _index(matrix.offsets, where, "offsets")
    data = _values(matrix.data, where, dtype, ndim=2)
    if data.shape[0] != offsets.shape[0]:
        raise InvalidArgumentError(
            f"{where}.data holds {data.shape[0]} diagonals but {where.arg}.offsets "
            f"{offsets.shape[0]}"
        )
    if np.unique(offsets).shape[0] != offsets.shape[0]:
        raise InvalidArgumentError(f"{where}.offsets holds a repeated diagonal")
    try:
        coo = scipy.sparse.dia_array((data, offsets), shape=shape).tocoo()
    except ValueError as e:
        raise InvalidArgumentError(f"{where} is not a valid DIA matrix: {e}") from None
    return _check_entries(where, shape, tuple(coo.coords), coo.data, dtype)
