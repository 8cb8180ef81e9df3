"""IndexedSlices: a set of rows of a larger dense tensor, the sparse gradient."""

import numbers
import operator

import numpy as np

from ..errors import InvalidArgumentError
from . import scipy_input, sparse_rows
from .backend import backend_of
from .buffers import check_allocation
from .densify_warning import warn_densify
from .dtypes import can_cast_same_kind, check_numeric
from .tensor import Tensor, convert_to_tensor, wrap

__all__ = ["IndexedSlices", "concat"]


def _check_dense_shape(dense_shape):
    entries = dense_shape
    if isinstance(entries, Tensor):
        entries = entries._value
    if isinstance(entries, np.ndarray):
        entries = entries.tolist()
    if not isinstance(entries, (list, tuple)):
        entries = [entries]
    shape = sparse_rows.int_tuple(entries)
    if shape is None:
        raise InvalidArgumentError(
            f"dense_shape must be a sequence of non-negative ints, got {dense_shape!r}"
        )
    if any(d < 0 for d in shape) or not shape:
        raise InvalidArgumentError(
            f"dense_shape must be a non-empty sequence of non-negative ints, got "
            f"{dense_shape!r}"
        )
    limit = sparse_rows.INT64_MAX
    big = [d for d in shape if d > limit]
    if big:
        raise InvalidArgumentError(
            f"dense_shape entries must fit in int64 (at most {limit}), got "
            f"{big[0]} in {dense_shape!r}"
        )
    return shape


class IndexedSlices:
    """Rows of a dense tensor: ``dense[indices[k]] += values[k]``.

    This is how sparsegrad represents the gradient of a gather, an embedding
    lookup or a ``scipy.sparse`` @ dense product: only the touched rows are
    stored, and the representation stays sparse through aggregation and
    clipping into the optimizer.  Indices may repeat; a repeated index stands
    for the sum of its rows.

    Values and indices may be CuPy arrays (both, or CuPy values with indices
    given as a list): the IndexedSlices then lives on the GPU, and every
    operation on it (densifying, deduplicating, scaling, clipping) runs
    there.  NumPy and CuPy arrays do not mix.

    Parameters
    ----------
    values : array_like of shape (n, d1, ..., dk)
        The rows.
    indices : array_like of shape (n,), int32 or int64
        Row of the dense tensor that each row of `values` belongs to.  Other
        integer dtypes are converted to int64.
    dense_shape : sequence of int, optional
        Shape ``(n_rows, d1, ..., dk)`` of the dense tensor.  When given, every
        index must lie in ``[0, n_rows)``.

    Raises
    ------
    InvalidArgumentError
        If `indices` is not 1-D of an integer dtype, ``len(values) !=
        len(indices)``, the row shape differs from ``dense_shape[1:]``, or an
        index lies outside ``[0, dense_shape[0])``.

    See Also
    --------
    IndexedSlices.to_dense, IndexedSlices.deduplicate

    Examples
    --------
    >>> import numpy as np
    >>> import sparsegrad as sg
    >>> s = sg.IndexedSlices([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [0, 2, 0],
    ...                      dense_shape=(3, 2))
    >>> s.to_dense().numpy()
    array([[6., 8.],
           [0., 0.],
           [3., 4.]])
    >>> d = s.deduplicate()
    >>> d.indices.numpy(), d.values.numpy()
    (array([0, 2]), array([[6., 8.],
           [3., 4.]]))
    >>> np.asarray(-s)[0]
    array([-6., -8.])
    """

    # _groups: the grouping of the indices once someone computed it
    # (_row_groups); the value is immutable, so it never goes stale.
    __slots__ = ("_values", "_indices", "_dense_shape", "_groups")

    # ndarray (op) IndexedSlices defers to our reflected operators.
    __array_priority__ = 100

    def __init__(self, values, indices, dense_shape=None):
        raw = indices._value if isinstance(indices, Tensor) else indices
        # Arrays are copied (a private value); a broadcast view costs
        # nothing, its copy its whole shape: checked together first.
        arrays = sparse_rows.array_backend_of(values, raw).xp.ndarray
        check_allocation(*(
            (array.shape, array.dtype if k == 0 else np.int64,
             f"IndexedSlices: {name}") for k, (array, name) in
            enumerate(((values, "values"), (raw, "indices")))
            if isinstance(array, arrays)))
        values = convert_to_tensor(values, name="values")
        be = sparse_rows.array_backend_of(values._value, raw)
        indices_array = sparse_rows.as_index_array(
            sparse_rows.as_array_of(be.xp, raw), "indices", be
        )
        if values.ndim == 0:
            raise InvalidArgumentError(
                "values must be at least 1-D (one row per index), got a scalar"
            )
        if values.shape[0] != indices_array.shape[0]:
            raise InvalidArgumentError(
                f"values.shape[0] must equal len(indices): got values of shape "
                f"{values.shape} and {indices_array.shape[0]} indices"
            )
        if dense_shape is not None:
            dense_shape = _check_dense_shape(dense_shape)
            if dense_shape[1:] != values.shape[1:]:
                raise InvalidArgumentError(
                    f"the row shape of values {values.shape[1:]} must equal "
                    f"dense_shape[1:] {dense_shape[1:]} (dense_shape={dense_shape})"
                )
            sparse_rows.check_in_range(indices_array, dense_shape[0], "indices", be)
        elif indices_array.size and bool(indices_array.min() < 0):
            sparse_rows.check_in_range(
                indices_array, np.iinfo(indices_array.dtype).max, "indices", be)
        self._values = values
        self._indices = convert_to_tensor(indices_array)
        self._dense_shape = dense_shape
        self._groups = None

    @classmethod
    def _from_trusted(cls, values, indices, dense_shape, groups=None):
        """Build without checks from a producer that already validated;
        `groups`, the :meth:`_row_groups` of `indices` when the producer has
        them (new values on the same indices keep their grouping)."""
        s = cls.__new__(cls)
        s._values = values if isinstance(values, Tensor) else wrap(values)
        s._indices = indices if isinstance(indices, Tensor) else wrap(indices)
        s._dense_shape = None if dense_shape is None else tuple(dense_shape)
        s._groups = groups
        return s

    def _row_groups(self, max_index=None, be=None):
        """``(unique, order, starts)`` of the indices
        (:func:`sparsegrad.framework.sparse_rows.group_rows`), computed on the
        first call and kept: a clip op and the optimizer's update kernel that
        follow it group the rows once.  `max_index` is a bound of the indices
        the caller knows (the variable's last row); without it, the dense
        shape's, or the largest index.  `be` is the indices' backend where
        the caller has it."""
        if self._groups is None:
            indices = self._indices._value
            be = be or backend_of(indices)
            if self._dense_shape is not None:
                max_index = max(self._dense_shape[0] - 1, 0)
            elif max_index is None and not be.on_gpu:
                max_index = int(indices.max()) if indices.shape[0] else 0
            self._groups = sparse_rows.group_rows(indices, max_index, be)
        return self._groups

    # -- structure -------------------------------------------------------------

    values = property(operator.attrgetter("_values"),
                      doc="The rows, a Tensor of shape ``(n,) + row_shape``.")
    indices = property(operator.attrgetter("_indices"),
                       doc="The row indices, a 1-D int32 or int64 Tensor.")
    dense_shape = property(
        operator.attrgetter("_dense_shape"),
        doc="Shape of the dense tensor, a tuple of ints, or None if unknown.")
    shape = property(operator.attrgetter("_dense_shape"),
                     doc="Same as :attr:`dense_shape`.")
    dtype = property(operator.attrgetter("_values.dtype"),
                     doc="dtype of the values.")

    def __len__(self):
        return self._indices.shape[0]

    def __repr__(self):
        shape = (
            "" if self._dense_shape is None else f", dense_shape={self._dense_shape}"
        )
        return (
            f"IndexedSlices(indices={self._indices.numpy()!r}, "
            f"values={self._values.numpy()!r}{shape})"
        )

    # -- conversions -----------------------------------------------------------

    def _require_dense_shape(self, what):
        if self._dense_shape is None:
            raise ValueError(
                f"{what} needs the dense_shape of the IndexedSlices, which is None: "
                f"{self!r}"
            )
        return self._dense_shape

    def to_dense(self):
        """The dense tensor: rows of repeated indices summed, missing rows zero.

        Cost O(prod(dense_shape)): this is the one operation on IndexedSlices
        whose cost is the size of the table, not of the touched rows.

        Returns
        -------
        Tensor of shape `dense_shape` and the dtype of the values.

        Raises
        ------
        ValueError
            If `dense_shape` is None.
        InvalidArgumentError
            If the dense tensor needs more memory than the process may
            allocate (:func:`~sparsegrad.framework.buffers.check_allocation`).
        """
        shape = self._require_dense_shape("to_dense")
        values = self._values._value
        be = backend_of(values)
        check_allocation((shape, values.dtype, "IndexedSlices.to_dense: dense_shape"))
        out = be.xp.zeros(shape, dtype=values.dtype)
        sparse_rows.scatter_add(out, self._indices._value, values, be=be)
        return wrap(out)

    def _as_tensor(self):
        # An op was given this IndexedSlices where it needs a dense value.
        warn_densify(
            self._require_dense_shape("densifying"),
            "an op given an IndexedSlices argument",
        )
        return self.to_dense()

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("densifying IndexedSlices always makes a new array")
        dense = self.to_dense()._value
        dense = backend_of(dense).host(dense)  # of GPU slices: a host copy
        return dense if dtype is None else dense.astype(dtype)

    def deduplicate(self):
        """Sum the rows that share an index.

        Returns
        -------
        IndexedSlices
            With sorted, distinct indices; each row is the sum, in the original
            order, of the rows that had that index.  Cost O(n) in the number of
            rows (a radix sort), independent of the dense size.
        """
        # on the grouping of the indices, kept (_row_groups): the sums of
        # sparse_rows.deduplicate, without grouping them again
        unique, order, starts = self._row_groups()
        summed = sparse_rows.group_sum(self._values._value, order, starts)
        return IndexedSlices._from_trusted(summed, unique, self._dense_shape)

    # -- arithmetic ------------------------------------------------------------

    def __neg__(self):
        return IndexedSlices._from_trusted(
            -self._values._value, self._indices, self._dense_shape, self._groups
        )

    def _scalar(self, factor, op):
        """`factor` as a 0-d array of the values' dtype, or None when it is not
        a number (the operator then returns NotImplemented).  A CuPy factor
        stays a 0-d CuPy array; a host one becomes a NumPy scalar (what both
        kinds of values multiply with).

        A complex factor, or a float one for integer values, is an error: the
        cast would drop its imaginary or fractional part.
        """
        if isinstance(factor, Tensor):
            factor = factor._value
        factor_be = backend_of(factor)   # the host one for numbers
        if factor_be.on_gpu or isinstance(factor, (np.ndarray, np.generic)):
            array = factor_be.xp.asarray(factor)
            if array.ndim != 0:
                raise TypeError(
                    f"IndexedSlices {op} needs a scalar, got an array of shape "
                    f"{array.shape}; densify with to_dense() for elementwise math"
                )
        elif isinstance(factor, numbers.Number):
            array = np.asarray(factor)
        else:
            return None
        what = f"IndexedSlices {op} {factor!r}"
        check_numeric(array.dtype, what)
        if not can_cast_same_kind(array.dtype, self.dtype):
            raise InvalidArgumentError(
                f"{what}: a factor of dtype {array.dtype} cannot scale values of "
                f"dtype {self.dtype} without losing its fractional part; cast the "
                "values to a float dtype first"
            )
        if array.dtype.kind in "iu" and self.dtype.kind in "iu":
            info = np.iinfo(self.dtype)
            if not info.min <= int(array) <= info.max:
                raise InvalidArgumentError(
                    f"{what} does not fit in the values' dtype {self.dtype}"
                )
        sparse_rows.module_of(self._values._value, factor)  # arrays do not mix
        array = array.astype(self.dtype)
        return array if factor_be.on_gpu else array[()]

    def __mul__(self, factor):
        scale = self._scalar(factor, "*")
        if scale is None:
            return NotImplemented
        return IndexedSlices._from_trusted(
            self._values._value * scale, self._indices, self._dense_shape,
            self._groups,
        )

    __rmul__ = __mul__

    def __truediv__(self, divisor):
        scale = self._scalar(divisor, "/")
        if scale is None:
            return NotImplemented
        return IndexedSlices._from_trusted(
            self._values._value / scale, self._indices, self._dense_shape,
            self._groups,
        )

    # -- scipy.sparse ----------------------------------------------------------

    @classmethod
    def from_scipy(cls, matrix):
        """Rows of a 2-D ``scipy.sparse`` matrix that hold a stored entry.

        The result has one row (dense, of length ``n_cols``) per row of
        `matrix` with at least one stored entry, indices sorted.  Entries
        repeated at one place are summed (the matrix ``toarray()`` shows);
        a row whose only entries are explicit zeros is kept, as zeros.
        Cost O(nnz + stored rows x n_cols).

        Parameters
        ----------
        matrix : scipy.sparse matrix or array, 2-D
            Any format (CSR, CSC, COO, BSR, DOK, LIL, DIA) and real dtype;
            its structure is checked before any use.

        Returns
        -------
        IndexedSlices with ``dense_shape == matrix.shape``.

        Raises
        ------
        TypeError
            If `matrix` is not a ``scipy.sparse`` matrix.
        InvalidArgumentError
            If it is not 2-D, holds complex values or is malformed (an
            ``indptr`` of the wrong length, not from 0 or decreasing, index
            and value arrays of different lengths, an index outside the
            shape: ``IndexedSlices.from_scipy: matrix.indptr must start at 0,
            got indptr[0] = 1``), or the rows take more memory than the
            process has.

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> import sparsegrad as sg
        >>> m = sp.csr_array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
        >>> s = sg.IndexedSlices.from_scipy(m)
        >>> s.indices.numpy(), s.values.numpy()
        (array([1, 2], dtype=int32), array([[1., 0.],
               [0., 2.]]))
        """
        op = "IndexedSlices.from_scipy"
        if not scipy_input.is_scipy_sparse(matrix):
            raise TypeError(
                f"from_scipy expects a scipy.sparse matrix, got {type(matrix).__name__}"
            )
        checked = scipy_input.check(matrix, "matrix", op)
        n_rows, n_cols = checked.shape
        # the dense rows: at most one per stored entry and one per row
        n_stored = min(n_rows, checked.nnz)
        indptr, indices, data, shape = checked.to_csr(
            ((n_stored, n_cols), checked.dtype, f"{op}: the rows of matrix of "
             f"shape {checked.shape}"))
        lengths = np.diff(indptr)
        rows = np.flatnonzero(lengths).astype(indptr.dtype)
        values = np.zeros((rows.shape[0], n_cols), dtype=checked.dtype)
        slot = np.repeat(np.arange(rows.shape[0]), lengths[rows])
        np.add.at(values, (slot, indices), data)
        return cls._from_trusted(values, rows, shape)

    def to_scipy(self):
        """A ``scipy.sparse.csr_array`` of the dense tensor (2-D only).

        Repeated indices are summed; zeros in the values are not stored.
        """
        import scipy.sparse

        shape = self._require_dense_shape("to_scipy")
        if len(shape) != 2:
            raise InvalidArgumentError(
                f"to_scipy needs a 2-D dense_shape, got {shape}"
            )
        dedup = self.deduplicate()
        rows = dedup._indices.numpy()
        values = dedup._values.numpy()
        coo = scipy.sparse.coo_array(
            (
                values.reshape(-1),
                (np.repeat(rows, shape[1]), np.tile(np.arange(shape[1]), rows.size)),
            ),
            shape=shape,
        )
        csr = coo.tocsr()
        csr.eliminate_zeros()
        return csr

    @staticmethod
    def concat(slices):
        """Concatenate several IndexedSlices of one dense tensor (no dedupe)."""
        return concat(slices)


def concat(slices, join_values=None):
    """Concatenate IndexedSlices that describe the same dense tensor.

    This is how sparse gradients aggregate: the rows are stacked, nothing is
    summed or densified (cost O(total rows)).  Mixed int32 and int64 indices
    give int64 indices.

    Parameters
    ----------
    slices : sequence of IndexedSlices
        Same dtype and row shape; the dense shapes that are known must agree.
    join_values : callable, optional
        Joins the list of value Tensors along their first axis.  By default
        ``np.concatenate`` (nothing recorded); the backward pass passes the
        differentiable ``sparsegrad.concat`` while a tape records, so that a
        higher-order tape sees how the rows depend on their parts.

    Returns
    -------
    IndexedSlices

    Examples
    --------
    >>> import sparsegrad as sg
    >>> a = sg.IndexedSlices([[1.0]], [0], dense_shape=(2, 1))
    >>> b = sg.IndexedSlices([[2.0]], [0], dense_shape=(2, 1))
    >>> sg.IndexedSlices.concat([a, b]).to_dense().numpy()
    array([[3.],
           [0.]])
    """
    slices = list(slices)
    if not slices:
        raise ValueError("concat needs at least one IndexedSlices")
    for k, s in enumerate(slices):
        if not isinstance(s, IndexedSlices):
            raise TypeError(
                f"concat: element {k} is a {type(s).__name__}, not IndexedSlices"
            )
    first = slices[0]
    shapes = {s.dense_shape for s in slices if s.dense_shape is not None}
    if len(shapes) > 1:
        raise InvalidArgumentError(
            f"concat: the slices describe different dense shapes {sorted(shapes)}"
        )
    for k, s in enumerate(slices[1:], 1):
        if s.dtype != first.dtype or s.values.shape[1:] != first.values.shape[1:]:
            raise InvalidArgumentError(
                f"concat: element {k} has rows of shape {s.values.shape[1:]} and "
                f"dtype {s.dtype}, element 0 has {first.values.shape[1:]} and "
                f"{first.dtype}"
            )
    index_dtypes = {s.indices.dtype for s in slices}
    index_dtype = np.int64 if len(index_dtypes) > 1 else first.indices.dtype
    xp = sparse_rows.module_of(*(t._value for s in slices for t in (s.values,
                                                                   s.indices)))
    indices = xp.concatenate([s.indices._value for s in slices]).astype(
        index_dtype, copy=False
    )
    if join_values is None:
        values = xp.concatenate([s.values._value for s in slices])
    else:
        values = join_values([s.values for s in slices])
    return IndexedSlices._from_trusted(
        values, indices, shapes.pop() if shapes else None
    )
