"""RaggedTensor's other row partitions and shape queries.

:class:`RaggedPartitions` is a base class of :class:`~sparsegrad.RaggedTensor`
with the factories from row starts, row limits and a uniform row length,
:attr:`uniform_row_length`, :meth:`bounding_shape`, the row lengths of any
axis and the value row ids of every level.  It is not used on its own.

Every factory here builds row splits and hands them to the one check of
``row_partition`` (through ``from_row_splits``'s path), so the same rules
and messages hold.
"""

import numbers

import numpy as np

from ..errors import InvalidArgumentError
from ..framework.backend import backend_of
from ..framework.buffers import check_allocation
from ..framework.tensor import Tensor, wrap
from .nested import RaggedNested, nrows_of, positive_axis
from .ragged_range import splits_dtype
from .row_partition import PARTITION_DTYPES, as_partition, check_fits, freeze

__all__ = ["RaggedPartitions"]


def _scalar(value, argument):
    """A scalar integer argument as ``(int, dtype or None)``: its dtype when
    it is an int32/int64 array or Tensor, None for a Python int."""
    if isinstance(value, Tensor):
        value = value._value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value), (value.dtype if isinstance(value, np.integer) else None)
    array = np.asarray(value)
    if array.ndim != 0:
        raise ValueError(
            f"Shape {tuple(array.shape)} must have rank 0 ({argument} must be a "
            "scalar)"
        )
    if array.dtype.kind not in "iu":
        raise ValueError(
            f"{argument} must be an integer, got {value!r} ({array.dtype})"
        )
    return int(array), (array.dtype if array.dtype in PARTITION_DTYPES else None)


class RaggedPartitions:
    """Row starts, row limits, uniform rows and shape queries of
    :class:`~sparsegrad.RaggedTensor` (its base class)."""

    __slots__ = ()

    # -- factories -------------------------------------------------------

    @classmethod
    def from_row_starts(cls, values, row_starts, name=None, validate=True):
        """A RaggedTensor whose row ``i`` starts at ``row_starts[i]`` (and
        ends where the next row starts, the last at ``len(values)``).

        Parameters
        ----------
        values : Tensor, Variable, array_like (rank >= 1) or RaggedTensor
        row_starts : array_like of int32 or int64, 1-D
            ``row_starts[0] == 0`` (when there are rows), non-decreasing, at
            most ``len(values)``; the splits get its dtype (Python lists give
            int64, or the dtype of the splits of a RaggedTensor `values`).
        name : str, optional
            Ignored.
        validate : bool, default=True
            Ignored: the checks always run (cost O(nrows)).

        Returns
        -------
        RaggedTensor

        Raises
        ------
        InvalidArgumentError
            The errors of :meth:`from_row_splits` for the splits
            ``row_starts + [len(values)]`` ("Arguments to from_row_starts do
            not form a valid RaggedTensor:monotonic ...").

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.RaggedTensor.from_row_starts([3, 1, 4, 1, 5, 9, 2, 6],
        ...                                 [0, 4, 4, 7, 8]).to_list()
        [[3, 1, 4, 1], [], [5, 9, 2], [6], []]
        """
        del name, validate
        v = cls._values_argument(values)
        starts = as_partition(row_starts, "row_starts", backend_of(row_starts))
        nvals = nrows_of(v)
        splits = np.append(starts, nvals).astype(starts.dtype)
        if isinstance(row_starts, (list, tuple)):
            splits = splits.tolist()   # a Python list: the values' dtype hint
        return cls._from_splits_argument(v, splits, "row_starts", "from_row_starts")

    @classmethod
    def from_row_limits(cls, values, row_limits, name=None, validate=True):
        """A RaggedTensor whose row ``i`` ends (exclusive) at ``row_limits[i]``.

        Parameters
        ----------
        values : Tensor, Variable, array_like (rank >= 1) or RaggedTensor
        row_limits : array_like of int32 or int64, 1-D
            Non-negative, non-decreasing, the last equal to ``len(values)``;
            the splits get its dtype (Python lists give int64, or the dtype
            of the splits of a RaggedTensor `values`).
        name : str, optional
            Ignored.
        validate : bool, default=True
            As for :meth:`from_row_splits`.

        Returns
        -------
        RaggedTensor

        Raises
        ------
        InvalidArgumentError
            The errors of :meth:`from_row_splits` for the splits
            ``[0] + row_limits``.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.RaggedTensor.from_row_limits([3, 1, 4, 1, 5, 9, 2, 6],
        ...                                 [4, 4, 7, 8, 8]).to_list()
        [[3, 1, 4, 1], [], [5, 9, 2], [6], []]
        """
        del name
        limits = as_partition(row_limits, "row_limits", backend_of(row_limits))
        splits = np.append(np.zeros(1, limits.dtype), limits)
        if isinstance(row_limits, (list, tuple)):
            splits = splits.tolist()
        return cls._from_splits_argument(values, splits, "row_limits",
                                         "from_row_limits", validate)

    @classmethod
    def from_uniform_row_length(cls, values, uniform_row_length, nrows=None,
                                validate=True, name=None):
        """A RaggedTensor of rows of ``uniform_row_length`` values each.

        Its shape gives the row length for that dimension (not None), and
        row slices and column indexing keep it.

        Parameters
        ----------
        values : Tensor, Variable, array_like (rank >= 1) or RaggedTensor
        uniform_row_length : int
            Non-negative (a Python int, or a 0-d int32/int64 array or Tensor,
            whose dtype the splits take).
        nrows : int, optional
            By default ``len(values) // uniform_row_length`` (0 for length
            0); ``nrows * uniform_row_length`` must equal ``len(values)``.
        validate : bool, default=True
            Ignored: the checks always run.
        name : str, optional
            Ignored.

        Returns
        -------
        RaggedTensor
            Splits of int64 for a Python `uniform_row_length` (the dtype of
            the splits of a RaggedTensor `values`).

        Raises
        ------
        ValueError
            If `uniform_row_length` or `nrows` is not a scalar integer, the
            length is negative, or the rows do not cover the values exactly.
        InvalidArgumentError
            If `nrows` is negative, or the splits need more memory than the
            process has.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> rt = sg.RaggedTensor.from_uniform_row_length([1, 2, 3, 4, 5, 6], 2)
        >>> rt.to_list(), rt.shape
        ([[1, 2], [3, 4], [5, 6]], (3, 2))
        """
        del validate, name
        v = cls._values_argument(values)
        length, dtype = _scalar(uniform_row_length, "uniform_row_length")
        if length < 0:
            raise ValueError(
                f"uniform_row_length must be non-negative, got {length}"
            )
        nvals = nrows_of(v)
        if nrows is None:
            n = 0 if length == 0 else nvals // length
        else:
            n, _ = _scalar(nrows, "nrows")
            if n < 0:
                raise InvalidArgumentError(f"nrows must be non-negative, got {n}")
        if n * length != nvals:
            raise ValueError(
                f"from_uniform_row_length: {n} rows of {length} values do not "
                f"cover the {nvals} values"
            )
        if isinstance(v, RaggedNested):
            if dtype is not None and dtype != v.row_splits_dtype:
                raise ValueError(
                    "Argument `row_partition` of RaggedTensor with name: "
                    "uniform_row_length must have same dtype as Argument `values`. "
                    f"({dtype} vs. {v.row_splits_dtype})"
                )
            dtype = v.row_splits_dtype
        dtype = splits_dtype(np.int64 if dtype is None else dtype,
                             "uniform_row_length")
        check_fits(n, dtype, "from_uniform_row_length: nrows")
        check_allocation(((n + 1,), np.int64, "from_uniform_row_length: nrows"))
        values_backend = backend_of((v.flat_values if isinstance(v, RaggedNested)
                                     else v)._value)
        splits = values_backend.xp.arange(n + 1, dtype=np.int64) * length
        rt = cls(v, freeze(splits.astype(dtype)), internal=True)
        rt._uniform_row_length = length
        return rt

    # -- queries -----------------------------------------------------------

    @property
    def uniform_row_length(self):
        """The length of every row, a 0-d array of the splits' dtype, when
        the rows were built uniform (:meth:`from_uniform_row_length`,
        :meth:`from_tensor`); None otherwise, even if the lengths happen to
        agree."""
        if self._uniform_row_length is None:
            return None
        return np.asarray(self._uniform_row_length, dtype=self.row_splits_dtype)

    def get_shape(self):
        """The same as :attr:`shape` (TensorFlow's alias).

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.ragged.constant([[1], [2, 3]]).get_shape()
        (2, None)
        """
        return self.shape

    def nested_value_rowids(self, name=None):
        """The row of each value, for every ragged dimension, outermost first.

        Parameters
        ----------
        name : str, optional
            Ignored.

        Returns
        -------
        tuple of ndarray
            ``ragged_rank`` vectors of the splits' dtype.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.ragged.constant([[[1, 2], []], [[3]]]).nested_value_rowids()
        (array([0, 0, 1]), array([0, 0, 2]))
        """
        del name
        out = (self.value_rowids(),)
        if isinstance(self._values, RaggedNested):
            out += self._values.nested_value_rowids()
        return out

    def bounding_shape(self, axis=None, name=None, out_type=None):
        """The smallest dense shape that holds every row: ``nrows``, the
        longest row of each ragged dimension, then the inner dimensions.

        Parameters
        ----------
        axis : int or sequence of int, optional
            The dimensions wanted (a scalar for an int); all by default.
        name : str, optional
            Ignored.
        out_type : {np.int32, np.int64, "int32", "int64"}, optional
            By default the splits' dtype.

        Returns
        -------
        ndarray of `out_type`
            A vector, or a 0-d array for an int `axis`.

        Raises
        ------
        InvalidArgumentError
            If `out_type` is not int32/int64, or an axis is out of range.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> rt = sg.ragged.constant([[1, 2, 3, 4], [5], [], [6, 7, 8, 9], [10]])
        >>> rt.bounding_shape()
        array([5, 4])
        >>> rt.bounding_shape(axis=1)
        array(4)
        """
        del name
        dtype = self.row_splits_dtype if out_type is None else splits_dtype(
            out_type, "out_type")
        sizes = [self.nrows()]
        level = self
        while isinstance(level, RaggedNested):
            lengths = level.row_lengths()
            sizes.append(int(lengths.max()) if lengths.size else 0)
            level = level.values
        sizes += list(self.flat_values.shape[1:])
        box = np.asarray(sizes, dtype=dtype)
        if axis is None:
            return box
        try:
            return np.asarray(box[np.asarray(axis)])
        except IndexError:
            raise InvalidArgumentError(
                f"bounding_shape: axis {axis!r} out of range for rank {box.shape[0]}"
            ) from None

    def _row_lengths_of_axis(self, axis):
        """:meth:`row_lengths` for an axis other than 1."""
        axis = positive_axis(axis, self.ndim, "axis")
        dtype = self.row_splits_dtype
        if axis == 0:
            return np.asarray(self.nrows(), dtype=dtype)
        if axis == 1:
            return self.row_lengths()
        values = self._used_values()
        if isinstance(values, RaggedNested):
            return self.with_values(values.row_lengths(axis - 1))
        shape = tuple(values.shape)
        be = backend_of(values._value)
        lengths = be.xp.full(shape[:axis - 1], shape[axis - 1], dtype=dtype)
        return self.with_values(wrap(lengths))
