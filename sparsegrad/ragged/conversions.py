"""RaggedTensor's conversions: from a SciPy matrix, to a padded dense Tensor
(differentiable: the ``RaggedToDense`` gradient), to lists, NumPy and SciPy.

:class:`RaggedConversions` is a base class of
:class:`~sparsegrad.RaggedTensor` that holds these methods; it is not used on
its own.
"""

import numpy as np
import scipy.sparse

from ..autodiff.recording import record_operation
from ..autodiff.registry import register_gradient
from ..errors import InvalidArgumentError
from ..framework import scipy_input
from ..framework.backend import CPU, backend_of
from ..framework.buffers import check_allocation
from ..framework.tensor import wrap
from ..ops import array_ops, embedding_ops
from .row_partition import as_index, as_partition, require_ragged_rank_1

__all__ = ["RaggedConversions"]


class RaggedConversions:
    """The conversions of :class:`~sparsegrad.RaggedTensor` (its base class)."""

    __slots__ = ()

    # -- from and to SciPy, dense Tensors, lists and NumPy ---------------

    @classmethod
    def from_scipy(cls, matrix, values="data"):
        """The rows of a ``scipy.sparse`` matrix as a RaggedTensor.

        Row ``r`` holds the stored entries of row ``r`` of the matrix, one
        value per entry: the CSR ``indptr`` becomes the row splits.  Every
        stored entry counts once, in any format: entries repeated at one
        place are kept (not summed), explicit zeros too; a CSR or COO row
        keeps its stored order (no sorting), a CSC one comes by column.

        Parameters
        ----------
        matrix : scipy.sparse matrix or array
            2-D, any format (CSR, CSC, COO, BSR, DOK, LIL, DIA); its
            structure is checked before any use.
        values : {"data", "indices"}, default="data"
            ``"data"``: each row's stored values; ``"indices"``: each row's
            column indices (a bag of ids per row).

        Returns
        -------
        RaggedTensor
            Values copied from the matrix; splits of the CSR ``indptr``'s
            dtype (for another format, int32 when the matrix fits it, else
            int64, as SciPy's ``tocsr`` picks).

        Raises
        ------
        TypeError
            If `matrix` is not a scipy.sparse matrix.
        InvalidArgumentError
            If `values` is neither ``"data"`` nor ``"indices"``, the matrix
            is not 2-D, holds complex values or is malformed (an ``indptr``
            of the wrong length, not from 0 or decreasing, index and value
            arrays of different lengths, an index outside the shape:
            ``RaggedTensor.from_scipy: matrix.indptr must be non-decreasing,
            got indptr[2] = 1 < indptr[1] = 3``).

        Examples
        --------
        >>> import scipy.sparse
        >>> import sparsegrad as sg
        >>> m = scipy.sparse.csr_matrix([[0, 7, 0], [0, 0, 0], [5, 0, 6]])
        >>> sg.RaggedTensor.from_scipy(m)
        <RaggedTensor [[7], [], [5, 6]]>
        >>> sg.RaggedTensor.from_scipy(m, values="indices")
        <RaggedTensor [[1], [], [0, 2]]>
        """
        if not scipy_input.is_scipy_sparse(matrix):
            raise TypeError(
                f"from_scipy needs a scipy.sparse matrix, got {type(matrix).__name__}"
            )
        if values not in ("data", "indices"):
            raise InvalidArgumentError(
                f"from_scipy: values must be 'data' or 'indices', got {values!r}"
            )
        csr = scipy_input.check(matrix, "matrix", "RaggedTensor.from_scipy").to_csr()
        splits = as_partition(csr.indptr, "indptr", CPU)   # scipy: host memory
        data = csr.data if values == "data" else csr.indices
        # entries past indptr[-1] belong to no row (scipy ignores them too)
        v = wrap(np.array(data[: int(splits[-1])], copy=True))
        return cls(v, splits, internal=True)

    def _padded_positions(self, be, n_rows, width):
        """Flat positions (row * width + column) of the values that fit in an
        (n_rows, width) grid, and the mask of those values (None: all fit);
        `be` is the backend of the splits."""
        rowids = self._rowids(be).astype(np.int64, copy=False)
        columns = be.xp.arange(rowids.shape[0], dtype=np.int64)
        columns -= self._row_splits[:-1].astype(np.int64)[rowids]
        keep = None
        if n_rows < self.nrows() or width < self._max_row_length(be):
            keep = (rowids < n_rows) & (columns < width)
            rowids, columns = rowids[keep], columns[keep]
        return rowids * width + columns, keep

    def _max_row_length(self, be):
        lengths = self._lengths(be)
        return int(lengths.max()) if lengths.size else 0

    def to_tensor(self, default_value=None, name=None, shape=None):
        """The rows padded with `default_value` into a dense Tensor.

        At ragged_rank 2 and above every ragged dimension is padded to its
        longest row (over the whole RaggedTensor).

        Parameters
        ----------
        default_value : scalar, optional
            The padding, converted to the values' dtype; None means 0.
        name : str, optional
            Ignored.
        shape : sequence of int or None, optional
            ``(nrows, width, ...) + inner`` of the result, of rank
            :attr:`ndim`; None entries (or no shape) mean the natural size
            (``nrows`` and the longest row of each ragged dimension).
            Smaller sizes truncate rows or values, larger ones pad, as
            TensorFlow does.

        Returns
        -------
        Tensor of shape ``(nrows, max_row_length, ...) + flat_values.shape[1:]``
            Differentiable w.r.t. the values: their gradient is the padded
            gradient gathered at the values' positions (dropped values get 0).

        Raises
        ------
        InvalidArgumentError
            If `shape` has the wrong rank or inner dimensions, or a negative
            size; if the result would need more memory than the process has
            (checked before anything is allocated).
        TypeError
            If an entry of `shape` is neither None nor an int.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.ragged.constant([[1, 2], [], [3]]).to_tensor(default_value=-1).numpy()
        array([[ 1,  2],
               [-1, -1],
               [ 3, -1]], dtype=int32)
        >>> sg.ragged.constant([[[1, 2], []], [[3]]]).to_tensor(shape=[2, 3, 1]).numpy()
        array([[[1],
                [0],
                [0]],
        <BLANKLINE>
               [[3],
                [0],
                [0]]], dtype=int32)
        """
        del name
        if default_value is None:
            default_value = 0
        if self.ragged_rank > 1:
            return self._nested_to_tensor(default_value, shape)
        inner = tuple(self._values.shape[1:])
        values = self._used_values()
        be = backend_of(values._value, self._row_splits)
        n_rows, width = self.nrows(), self._max_row_length(be)
        if shape is not None:
            shape = tuple(None if d is None else as_index(d, "to_tensor: shape")
                          for d in shape)
            if len(shape) != 2 + len(inner):
                raise InvalidArgumentError(
                    f"to_tensor: shape {shape} must have rank {2 + len(inner)}"
                )
            for k, want in enumerate(shape[2:]):
                if want is not None and want != inner[k]:
                    raise InvalidArgumentError(
                        f"to_tensor: shape {shape} does not match the values' "
                        f"inner shape {inner}"
                    )
            if any(d is not None and d < 0 for d in shape[:2]):
                raise InvalidArgumentError(f"to_tensor: negative size in shape {shape}")
            n_rows = n_rows if shape[0] is None else shape[0]
            width = width if shape[1] is None else shape[1]
        # a GPU array fill on the GPU; any other fill is a host value
        fill_on_gpu = be.on_gpu and isinstance(default_value, be.xp.ndarray)
        fill = default_value if fill_on_gpu else np.asarray(default_value)
        if fill.ndim != 0:
            raise InvalidArgumentError(
                f"to_tensor: default_value must be a scalar, got shape {fill.shape}"
            )
        # the result, and the row and column of each value (int64)
        check_allocation(
            ((n_rows, width) + inner, values.dtype, "to_tensor: shape"),
            ((2, values.shape[0]), np.int64, "to_tensor: the values' positions"),
        )
        positions, keep = self._padded_positions(be, n_rows, width)
        if be.on_gpu and not fill_on_gpu:
            fill = fill.item()   # a host scalar fills a GPU array
        out = be.xp.full((n_rows * width,) + inner, fill, dtype=values.dtype)
        kept = values._value if keep is None else values._value[keep]
        out[positions] = kept
        dense = wrap(out.reshape((n_rows, width) + inner))
        record_operation(
            "RaggedToDense", (values,), (dense,),
            {"positions": positions, "keep": keep},
        )
        return dense

    def to_list(self):
        """The rows as nested Python lists.

        Returns
        -------
        list of list
            Nested ``ragged_rank + 1`` deep (and more for inner dimensions).

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.ragged.constant([[1, 2], [], [3]]).to_list()
        [[1, 2], [], [3]]
        >>> sg.ragged.constant([[[1, 2], []], [[3]]]).to_list()
        [[[1, 2], []], [[3]]]
        """
        if self.ragged_rank > 1:
            values = self._values.to_list()
        else:
            values = self._values.numpy().tolist()
        splits = backend_of(self._row_splits).host(self._row_splits).tolist()
        return [values[a:b] for a, b in zip(splits[:-1], splits[1:])]

    def numpy(self):
        """The rows as NumPy arrays (TensorFlow's ``rt.numpy()``).

        Returns
        -------
        ndarray
            Rows of different lengths: a 1-D object array of per-row arrays
            (views of the values); rows all of one length: one array of the
            values' dtype with that dimension; no rows: an empty array of
            shape ``(0, 0) + inner``.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.ragged.constant([[1, 2], [3]]).numpy()
        array([array([1, 2], dtype=int32), array([3], dtype=int32)], dtype=object)
        >>> sg.ragged.constant([[1, 2], [3, 4]]).numpy()
        array([[1, 2],
               [3, 4]], dtype=int32)
        """
        values = self._values.numpy()
        splits = backend_of(self._row_splits).host(self._row_splits).tolist()
        rows = [values[a:b] for a, b in zip(splits[:-1], splits[1:])]
        if not rows:
            return np.zeros((0, 0) + values.shape[1:], dtype=values.dtype)
        if any(len(row) != len(rows[0]) for row in rows):
            out = np.empty(len(rows), dtype=object)
            for i, row in enumerate(rows):
                out[i] = row
            return out
        return np.array(rows)

    def to_scipy(self, shape=None):
        """The rows as a CSR matrix: row ``i``'s values at columns
        ``0 .. len_i - 1`` (the inverse of :meth:`from_scipy` for a
        "ragged-right" matrix).

        Parameters
        ----------
        shape : (int, int), optional
            By default ``(nrows, longest row)``; the columns may be more.

        Returns
        -------
        scipy.sparse.csr_matrix
            With the values' dtype and the splits as ``indptr`` (explicit
            zeros are kept).

        Raises
        ------
        InvalidArgumentError
            If the values are not 1-D, or `shape` is too small.
        TypeError
            At ragged_rank 2 and above (not supported yet).

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.ragged.constant([[7], [], [5, 6]]).to_scipy().toarray()
        array([[7, 0],
               [0, 0],
               [5, 6]], dtype=int32)
        """
        require_ragged_rank_1(self, "to_scipy")
        if self._values.ndim != 1:
            raise InvalidArgumentError(
                "to_scipy needs 1-D values, got values of shape "
                f"{tuple(self._values.shape)}"
            )
        be = backend_of(self._row_splits)
        natural = (self.nrows(), self._max_row_length(be))
        if shape is None:
            shape = natural
        shape = (int(shape[0]), int(shape[1]))
        if shape[0] != natural[0] or shape[1] < natural[1]:
            raise InvalidArgumentError(
                f"to_scipy: shape {shape} cannot hold the rows; needs "
                f"({natural[0]}, >= {natural[1]})"
            )
        # scipy.sparse is host memory: a GPU RaggedTensor is copied over
        values = self._used_values().numpy()
        rowids = be.host(self._rowids(be))
        splits = be.host(self._row_splits)
        columns = np.arange(rowids.shape[0], dtype=splits.dtype)
        columns -= splits[:-1][rowids]
        return scipy.sparse.csr_matrix(
            (values.copy(), columns, splits.copy()), shape=shape
        )


@register_gradient("RaggedToDense")
def _ragged_to_dense_grad(op, grad):
    """Gradient of :meth:`RaggedTensor.to_tensor` w.r.t. the values: the padded
    gradient gathered at the values' positions (0 for dropped values)."""
    values = op.inputs[0]
    positions = op.get_attr("positions")
    keep = op.get_attr("keep")
    g = array_ops.densify(grad)
    flat = array_ops.reshape(g, (-1,) + tuple(values.shape[1:]))
    if keep is None:
        return embedding_ops.gather(flat, positions)
    xp = backend_of(g._value).xp
    zero = wrap(xp.zeros((1,) + tuple(values.shape[1:]), g.dtype))
    source = xp.full(values.shape[0], flat.shape[0], np.int64)
    source[keep] = positions
    return embedding_ops.gather(array_ops.concat([flat, zero], 0), source)

