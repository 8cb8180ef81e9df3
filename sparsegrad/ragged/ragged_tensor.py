"""RaggedTensor: rows of different lengths, as values plus row splits.

A :class:`RaggedTensor` holds ``values`` of ``nvals`` rows and an int32 or
int64 ndarray ``row_splits`` of length ``nrows + 1``: row ``i`` is
``values[row_splits[i]:row_splits[i + 1]]``.  At ragged_rank 1 the values
are a :class:`~sparsegrad.Tensor` of shape ``(nvals, ...)``; at ragged_rank
``k >= 2`` they are a RaggedTensor of ragged_rank ``k - 1`` (with splits of
the same dtype), down to the dense ``flat_values``.  The flat values are an
ordinary Tensor, so a tape watches and differentiates them through every
operation here (arithmetic, :meth:`RaggedTensor.to_tensor`, row selection).
"""

from operator import attrgetter

import numpy as np

from ..errors import InvalidArgumentError
from ..framework.backend import backend_of
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import DEFERRING_TYPES
from ..ops import array_ops, math_ops, unary_ops
from .conversions import RaggedConversions
from .getitem import RaggedIndexing
from .nested import RaggedNested, nrows_of
from .partitions import RaggedPartitions
from .ragged_range import splits_dtype
from .row_partition import (
    as_partition,
    as_values,
    check_fits,
    check_row_splits,
    freeze,
    partition_backend,
    rowids_from_splits,
    splits_from_row_lengths,
    splits_from_value_rowids,
)

__all__ = ["RaggedTensor"]

_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


# -- argument checks -------------------------------------------------------------


def _values_tensor(values):
    """The values argument of a factory: a RaggedTensor as it is, anything
    else as a Tensor of rank >= 1 (Python lists take TensorFlow's dtype)."""
    if isinstance(values, RaggedTensor):
        return values
    return as_values(values)


def _dense_part(values):
    """The Tensor whose device a factory's partition must share."""
    return values.flat_values if isinstance(values, RaggedTensor) else values


def _partition(values, x, argument, be):
    """`x` as a checked partition array whose dtype is that of the splits of
    a RaggedTensor `values` (a Python list takes it, as TensorFlow's dtype
    hint does; an array of the other dtype is refused)."""
    part = as_partition(x, argument, be)
    if not isinstance(values, RaggedTensor) or part.dtype == values.row_splits_dtype:
        return part
    if isinstance(x, (list, tuple)):
        check_fits(int(abs(part).max()) if part.size else 0,
                   values.row_splits_dtype, argument)
        return freeze(part.astype(values.row_splits_dtype))
    raise ValueError(
        f"Argument `row_partition` of RaggedTensor with name: {argument} must "
        f"have same dtype as Argument `values`. ({part.dtype} vs. "
        f"{values.row_splits_dtype}). Use with_row_splits_dtype to convert one."
    )


def _binary_operator(fn, op_name, reverse=False):
    """A RaggedTensor operator calling the public op `fn`, whose RaggedTensor
    handler (:mod:`sparsegrad.ragged.elementwise`) does the work."""

    if reverse:
        def operator(self, other):
            return fn(other, self)
    else:
        def operator(self, other):
            return fn(self, other)

    operator.__name__ = f"__{'r' if reverse else ''}{op_name}__"
    return operator


_ROW_VECTOR_DOC = """{summary}

Returns
-------
ndarray of the splits' dtype, shape ({length},){note}

Examples
--------
>>> import sparsegrad as sg
>>> sg.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []]).{name}()
{result}
"""


def _row_vector_doc(summary, result, length="nrows", note=""):
    """The docstring of a method giving one vector of the row partition."""

    def document(method):
        method.__doc__ = _ROW_VECTOR_DOC.format(
            summary=summary, length=length, name=method.__name__, result=result,
            note=f"\n    {note}" if note else "")
        return method

    return document


# -- the class -------------------------------------------------------------------


class RaggedTensor(RaggedIndexing, RaggedPartitions, RaggedNested, RaggedConversions):
    """Rows of different lengths: a values Tensor and its row splits.

    Build one with a factory (:meth:`from_row_splits`,
    :meth:`from_row_lengths`, :meth:`from_value_rowids`, their nested
    forms such as :meth:`from_nested_row_splits`, :meth:`from_tensor`,
    :meth:`from_scipy`), :func:`sparsegrad.ragged.constant` or
    :func:`sparsegrad.ragged.range`; the constructor itself is internal, as
    in TensorFlow.

    At ragged_rank 1 the values are a dense Tensor of shape ``(nvals, ...)``
    (uniform inner dimensions allowed); at ragged_rank 2 and above they are
    a RaggedTensor.  A RaggedTensor is immutable; its flat values are a
    Tensor that tapes can watch.  ``len(rt)`` is
    the number of rows, as for a list of rows (TensorFlow defines no
    ``len``).

    Parameters
    ----------
    values : Tensor or RaggedTensor
        The concatenated rows, rank >= 1.
    row_splits : ndarray of int32 or int64
        Valid splits (``[0, ..., nvals]``, non-decreasing), read-only.
    internal : bool, default=False
        Must be True (the factories pass it); anything else raises.  The
        constructor checks nothing: the factories do.  (Even so, splits that
        no factory accepts cannot make the row-id kernel write outside its
        output.)

    Raises
    ------
    ValueError
        If `internal` is not True.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> rt = sg.RaggedTensor.from_row_splits([3, 1, 4, 1, 5], [0, 2, 2, 5])
    >>> rt
    <RaggedTensor [[3, 1], [], [4, 1, 5]]>
    >>> rt.row_lengths()
    array([2, 0, 3])
    >>> (rt * 2).to_list()
    [[6, 2], [], [8, 2, 10]]
    """

    __slots__ = ("_values", "_row_splits", "_row_lengths", "_value_rowids",
                 "_uniform_row_length")
    __array_priority__ = 100

    def __init__(self, values, row_splits, internal=False):
        if internal is not True:
            raise ValueError(
                "RaggedTensor constructor is private; please use one of the "
                "factory methods instead (e.g., RaggedTensor.from_row_splits())"
            )
        self._values = values
        self._row_splits = row_splits
        self._row_lengths = None
        self._value_rowids = None
        self._uniform_row_length = None

    # -- factories -----------------------------------------------------------

    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        """A RaggedTensor whose row ``i`` is ``values[row_splits[i]:row_splits[i+1]]``.

        Parameters
        ----------
        values : Tensor, Variable, array_like (rank >= 1) or RaggedTensor
            A RaggedTensor gives a result of ragged_rank one more.
        row_splits : array_like of int32 or int64, 1-D
            ``row_splits[0] == 0``, non-decreasing, ``row_splits[-1] ==
            len(values)`` (``values.nrows()`` for a RaggedTensor).  Its dtype
            is kept (Python lists give int64, or the dtype of the splits of
            a RaggedTensor `values`).
        name : str, optional
            Ignored.
        validate : bool, default=True
            False skips only the check that the last split equals
            ``len(values)`` (a smaller one truncates, as in TensorFlow); the
            other checks (first split 0, no decrease, last split at most
            ``len(values)``) keep every later operation in bounds and always
            run (cost O(nrows)).

        Returns
        -------
        RaggedTensor

        Raises
        ------
        InvalidArgumentError
            "row_splits tensor may not be empty.", "row_splits must have
            dtype int32 or int64" (int16, uint8... are refused), "Shape (1,
            2) must have rank 1", and "Arguments to from_row_splits do not
            form a valid RaggedTensor:zero" / ":monotonic", "Arguments to
            _from_row_partition do not form a valid RaggedTensor" (last
            split), each followed by the split that breaks the rule.
        ValueError
            If `values` is a RaggedTensor whose splits have another dtype
            than the array `row_splits` ("Argument `row_partition` of
            RaggedTensor with name: row_splits must have same dtype as
            Argument `values`. (int64 vs. int32)").

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.RaggedTensor.from_row_splits([3, 1, 4, 1, 5, 9, 2, 6],
        ...                                 [0, 4, 4, 7, 8, 8]).to_list()
        [[3, 1, 4, 1], [], [5, 9, 2], [6], []]
        """
        del name
        return cls._from_splits_argument(values, row_splits, "row_splits",
                                         "from_row_splits", validate)

    @classmethod
    def _from_splits_argument(cls, values, row_splits, argument, factory,
                              validate=True):
        """:meth:`from_row_splits`, its errors naming `argument` and the
        public `factory` (from_row_starts and from_row_limits build splits)."""
        v = _values_tensor(values)
        be = partition_backend(_dense_part(v), row_splits)   # one device for both
        splits = _partition(v, row_splits, argument, be)
        check_row_splits(splits, nrows_of(v), factory, check_last=validate)
        return cls(v, splits, internal=True)

    _values_argument = staticmethod(_values_tensor)

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        """A RaggedTensor whose row ``i`` has ``row_lengths[i]`` values.

        Parameters
        ----------
        values : Tensor, Variable, array_like (rank >= 1) or RaggedTensor
        row_lengths : array_like of int32 or int64, 1-D
            Non-negative, summing to ``len(values)``; the splits get its
            dtype (Python lists give int64).
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
            "row_lengths must have dtype int32 or int64", "Shape (1, 2) must
            have rank 1"; "Arguments to from_row_lengths do not form a valid
            RowPartition" for a negative length or running sums past the
            dtype's maximum (where int64 sums would wrap); "Arguments to
            _from_row_partition do not form a valid RaggedTensor" when the
            sum is not ``len(values)``; each naming the length and row.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.RaggedTensor.from_row_lengths([3, 1, 4, 1, 5, 9, 2, 6],
        ...                                  [4, 0, 3, 1, 0]).to_list()
        [[3, 1, 4, 1], [], [5, 9, 2], [6], []]
        """
        del name, validate
        v = _values_tensor(values)
        be = partition_backend(_dense_part(v), row_lengths)   # one device for both
        lengths = _partition(v, row_lengths, "row_lengths", be)
        return cls(v, splits_from_row_lengths(lengths, nrows_of(v), be),
                   internal=True)

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None,
                          validate=True):
        """A RaggedTensor whose value ``k`` lies in row ``value_rowids[k]``.

        Parameters
        ----------
        values : Tensor, Variable, array_like (rank >= 1) or RaggedTensor
        value_rowids : array_like of int32 or int64, 1-D
            Sorted row ids, one per value; the splits get its dtype (Python
            lists give int64).  CuPy ids (with CuPy values) are checked on
            the GPU, one summary read back, and give splits on the GPU.
        nrows : int, optional
            The number of rows; by default ``value_rowids[-1] + 1`` (0 when
            empty), so trailing empty rows need it.  At most the maximum of
            the ids' dtype.
        name : str, optional
            Ignored.
        validate : bool, default=True
            Ignored: the checks always run (cost O(nvals + nrows)).

        Returns
        -------
        RaggedTensor

        Raises
        ------
        TypeError
            If `nrows` is not an int.
        ValueError
            "Expected nrows >= 0; got -1", "Expected nrows >= value_rowids[-1]
            + 1; got nrows=3, value_rowids[-1]=3", "Shapes (8,) and (3,) are
            incompatible" (values and ids of different lengths).
        InvalidArgumentError
            "value_rowids must have dtype int32 or int64", "Shape (1, 2)
            must have rank 1"; "Arguments to from_value_rowids do not form a
            valid RowPartition" for negative, decreasing or too large ids
            (naming the id); `nrows` or the number of values beyond the ids'
            dtype; `nrows` whose splits need more memory than the process
            has.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.RaggedTensor.from_value_rowids([3, 1, 4, 1, 5, 9, 2, 6],
        ...     [0, 0, 0, 0, 2, 2, 2, 3], nrows=5).to_list()
        [[3, 1, 4, 1], [], [5, 9, 2], [6], []]
        """
        del name, validate
        v = _values_tensor(values)
        be = partition_backend(_dense_part(v), value_rowids)   # one device for both
        ids = _partition(v, value_rowids, "value_rowids", be)
        splits = splits_from_value_rowids(ids, nrows, nrows_of(v), be)
        rt = cls(v, splits, internal=True)
        rt._value_rowids = ids
        return rt

    # -- structure -----------------------------------------------------------

    values = property(attrgetter("_values"), doc=(
        "The concatenated rows: a Tensor of shape ``(nvals, ...)`` at "
        "ragged_rank 1, else a RaggedTensor of ragged_rank one less."))

    @property
    def flat_values(self):
        """The innermost dense values (:attr:`values` at ragged_rank 1)."""
        if isinstance(self._values, RaggedTensor):
            return self._values.flat_values
        return self._values

    row_splits = property(attrgetter("_row_splits"), doc=(
        "The row splits, a read-only int32/int64 ndarray of length ``nrows + 1`` "
        "(a cupy array when the RaggedTensor lives on the GPU)."))

    @property
    def dtype(self):
        """The dtype of the flat values."""
        return self.flat_values.dtype

    row_splits_dtype = property(attrgetter("_row_splits.dtype"), doc=(
        "The row splits' dtype (int32 or int64)."))

    @property
    def nested_row_splits(self):
        """The splits of every ragged dimension, outermost first (a tuple)."""
        if isinstance(self._values, RaggedTensor):
            return (self._row_splits,) + self._values.nested_row_splits
        return (self._row_splits,)

    @property
    def shape(self):
        """``(nrows, None, ..., None) + flat_values.shape[1:]``, one None per
        ragged dimension (the row length instead of None for a dimension of
        uniform rows, :attr:`uniform_row_length`)."""
        return (self.nrows(), self._uniform_row_length) + tuple(self._values.shape[1:])

    @property
    def ragged_rank(self):
        """The number of ragged dimensions (1 + that of ragged values)."""
        if isinstance(self._values, RaggedTensor):
            return 1 + self._values.ragged_rank
        return 1

    @property
    def ndim(self):
        """The rank: ``values.ndim + 1``."""
        return self._values.ndim + 1

    def nrows(self):
        """The number of rows.

        Returns
        -------
        int

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.ragged.constant([[1], [], [2, 3]]).nrows()
        3
        """
        return self._row_splits.shape[0] - 1

    def __len__(self):
        return self.nrows()

    def row_lengths(self, axis=1, name=None):
        """The length of each row (``diff(row_splits)``), or of the rows of
        dimension `axis`.

        Parameters
        ----------
        axis : int, default=1
            1: the lengths of the rows (a vector); 0: the number of rows (a
            scalar array); ``k >= 2`` (or negative, counted from the end): the
            length of each row of dimension ``k``, a RaggedTensor of shape
            ``shape[:k]`` (ragged where ``shape[:k]`` is).
        name : str, optional
            Ignored.

        Returns
        -------
        ndarray or RaggedTensor of the splits' dtype

        Raises
        ------
        ValueError
            If `axis` is outside ``[-ndim, ndim)``.
        TypeError
            If `axis` is not an int.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> rt = sg.ragged.constant([[[3, 1, 4], [1]], [], [[5, 9], [2]]])
        >>> rt.row_lengths()
        array([2, 0, 2])
        >>> rt.row_lengths(axis=2)
        <RaggedTensor [[3, 1], [], [2, 1]]>
        """
        del name
        if axis != 1 or isinstance(axis, bool):
            return self._row_lengths_of_axis(axis)
        if self._row_lengths is None:
            return self._lengths(backend_of(self._row_splits))
        return self._row_lengths

    def _lengths(self, be):
        """:meth:`row_lengths`, `be` being the backend of the splits."""
        if self._row_lengths is None:
            self._row_lengths = freeze(be.xp.diff(self._row_splits))
        return self._row_lengths

    @_row_vector_doc(
        "The first value position of each row, ``row_splits[:-1]``.",
        "array([0, 4, 4, 7, 8])")
    def row_starts(self):
        return self._row_splits[:-1]

    @_row_vector_doc(
        "The end (exclusive) of each row, ``row_splits[1:]``.",
        "array([4, 4, 7, 8, 8])")
    def row_limits(self):
        return self._row_splits[1:]

    @_row_vector_doc(
        "The row of each value.",
        "array([0, 0, 0, 0, 2, 2, 2, 3])",
        length="row_splits[-1]",
        note="Computed once (one parallel pass over the rows) and cached.")
    def value_rowids(self):
        if self._value_rowids is None:
            return self._rowids(backend_of(self._row_splits))
        return self._value_rowids

    def _rowids(self, be):
        """:meth:`value_rowids`, `be` being the backend of the splits."""
        if self._value_rowids is None:
            self._value_rowids = freeze(rowids_from_splits(self._row_splits, be))
        return self._value_rowids

    def _used_values(self):
        """The values rows cover (all of them unless validate=False truncated)."""
        n = int(self._row_splits[-1])
        if n == self._values.shape[0]:
            return self._values
        return self._values[:n]

    # -- new RaggedTensors with the same rows ---------------------------------

    def with_values(self, new_values):
        """The same rows over `new_values`.

        Parameters
        ----------
        new_values : Tensor, Variable, array_like or RaggedTensor
            Of ``row_splits[-1]`` rows (any inner shape); a RaggedTensor's
            splits must have the dtype of :attr:`row_splits`.

        Returns
        -------
        RaggedTensor

        Raises
        ------
        InvalidArgumentError
            If the length differs.
        ValueError
            If `new_values` is a RaggedTensor with splits of another dtype
            ("self and new_values have mismatched row_splits dtypes").

        Examples
        --------
        >>> import sparsegrad as sg
        >>> rt = sg.ragged.constant([[1, 2], [3]])
        >>> rt.with_values([10.0, 20.0, 30.0])
        <RaggedTensor [[10.0, 20.0], [30.0]]>
        """
        v = _values_tensor(new_values)
        n = int(self._row_splits[-1])
        if nrows_of(v) != n:
            raise InvalidArgumentError(
                f"with_values: new_values must have {n} rows (the last row "
                f"split), got shape {tuple(v.shape)}"
            )
        if isinstance(v, RaggedTensor) and v.row_splits_dtype != self.row_splits_dtype:
            raise ValueError(
                "self and new_values have mismatched row_splits dtypes; use "
                "RaggedTensor.with_row_splits_dtype() to convert them to "
                f"compatible dtypes. ({self.row_splits_dtype} vs. "
                f"{v.row_splits_dtype})"
            )
        rt = RaggedTensor(v, self._row_splits, internal=True)
        rt._row_lengths = self._row_lengths
        rt._value_rowids = self._value_rowids
        rt._uniform_row_length = self._uniform_row_length
        return rt

    # -- the composite-value protocol (framework/dispatch.py) -------------

    def __sg_components__(self):
        """The differentiable part: the flat values."""
        return (self.flat_values,)

    def __sg_rebuild__(self, parts):
        """This partition around new flat values (an IndexedSlices, a
        gradient reached through a gather, is made dense)."""
        (values,) = parts
        if isinstance(values, IndexedSlices):
            values = array_ops.densify(values)
        return self.with_flat_values(values)

    def with_flat_values(self, new_values):
        """The same nested rows over new flat values.

        Parameters
        ----------
        new_values : Tensor, Variable or array_like
            As many rows as the flat values the rows cover (any inner shape).

        Returns
        -------
        RaggedTensor

        Raises
        ------
        InvalidArgumentError
            If the number of rows differs.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.ragged.constant([[1], [2, 3]]).with_flat_values([4, 5, 6]).to_list()
        [[4], [5, 6]]
        >>> sg.ragged.constant([[[1], []], [[2, 3]]]).with_flat_values(
        ...     [4.0, 5.0, 6.0]).to_list()
        [[[4.0], []], [[5.0, 6.0]]]
        """
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._used_values().with_flat_values(new_values))
        return self.with_values(new_values)

    def with_row_splits_dtype(self, dtype):
        """The same RaggedTensor with row splits of `dtype`.

        Parameters
        ----------
        dtype : {np.int32, np.int64, "int32", "int64"}

        Returns
        -------
        RaggedTensor
            `self` when the dtype is already `dtype`.

        Raises
        ------
        InvalidArgumentError
            For another dtype, or splits that do not fit in int32.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.ragged.constant([[1], [2, 3]]).with_row_splits_dtype("int32").row_splits
        array([0, 1, 3], dtype=int32)
        """
        d = splits_dtype(dtype, "row_splits_dtype")
        if d == self._row_splits.dtype:
            return self
        if d == np.int32 and int(self._row_splits[-1]) > np.iinfo(np.int32).max:
            raise InvalidArgumentError(
                f"with_row_splits_dtype: row splits up to {int(self._row_splits[-1])} "
                "do not fit in int32"
            )
        values = self._values
        if isinstance(values, RaggedTensor):
            values = values.with_row_splits_dtype(d)
        rt = RaggedTensor(values, freeze(self._row_splits.astype(d)), internal=True)
        rt._uniform_row_length = self._uniform_row_length
        return rt

    # -- rows ----------------------------------------------------------------

    def __iter__(self):
        for i in range(self.nrows()):
            yield self[i]

    def __repr__(self):
        return f"<RaggedTensor {self.to_list()!r}>"

    def __str__(self):
        return f"<RaggedTensor {self.to_list()!r}>"

    # -- operators: the public ops, served by sparsegrad.ragged.elementwise ----

    def _same_rows(self, other):
        """True when the RaggedTensor `other` has the same row splits."""
        if other.ragged_rank != self.ragged_rank:
            return False
        return other._row_splits is self._row_splits or (
            other._row_splits.shape == self._row_splits.shape
            and bool((other._row_splits == self._row_splits).all())
        )

    __add__ = _binary_operator(math_ops.add, "add")
    __radd__ = _binary_operator(math_ops.add, "add", reverse=True)
    __sub__ = _binary_operator(math_ops.subtract, "sub")
    __rsub__ = _binary_operator(math_ops.subtract, "sub", reverse=True)
    __mul__ = _binary_operator(math_ops.multiply, "mul")
    __rmul__ = _binary_operator(math_ops.multiply, "mul", reverse=True)
    __truediv__ = _binary_operator(math_ops.divide, "truediv")
    __rtruediv__ = _binary_operator(math_ops.divide, "truediv", reverse=True)
    __floordiv__ = _binary_operator(math_ops.floordiv, "floordiv")
    __rfloordiv__ = _binary_operator(math_ops.floordiv, "floordiv", reverse=True)
    __mod__ = _binary_operator(math_ops.floormod, "mod")
    __rmod__ = _binary_operator(math_ops.floormod, "mod", reverse=True)
    __pow__ = _binary_operator(math_ops.pow, "pow")
    __rpow__ = _binary_operator(math_ops.pow, "pow", reverse=True)
    __and__ = _binary_operator(math_ops.logical_and, "and")
    __rand__ = _binary_operator(math_ops.logical_and, "and", reverse=True)
    __or__ = _binary_operator(math_ops.logical_or, "or")
    __ror__ = _binary_operator(math_ops.logical_or, "or", reverse=True)
    __xor__ = _binary_operator(math_ops.logical_xor, "xor")
    __rxor__ = _binary_operator(math_ops.logical_xor, "xor", reverse=True)
    # Comparisons give a bool RaggedTensor; == and != keep identity semantics,
    # as for Tensor (use sparsegrad.equal / sparsegrad.not_equal).
    __lt__ = _binary_operator(math_ops.less, "lt")
    __le__ = _binary_operator(math_ops.less_equal, "le")
    __gt__ = _binary_operator(math_ops.greater, "gt")
    __ge__ = _binary_operator(math_ops.greater_equal, "ge")

    def __neg__(self):
        return unary_ops.negative(self)

    def __abs__(self):
        return unary_ops.abs(self)

    def __invert__(self):
        return math_ops.logical_not(self)

    def __bool__(self):
        raise TypeError("RaggedTensor may not be used as a boolean.")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "a RaggedTensor has no dense NumPy form; use to_tensor(), numpy() "
            "or to_list()"
        )



# A Tensor on the left of an operator defers to RaggedTensor's reflected one.
DEFERRING_TYPES.add(RaggedTensor)
