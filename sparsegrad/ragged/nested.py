"""RaggedTensor's nested structure: several ragged dimensions.

A RaggedTensor of ragged_rank ``k >= 2`` holds a RaggedTensor of ragged_rank
``k - 1`` as its values; the innermost values (``flat_values``) are a dense
Tensor.  :class:`RaggedNested` is a base class of
:class:`~sparsegrad.RaggedTensor` with the factories and conversions that
build or read such nests level by level: ``from_nested_row_splits /
row_lengths / value_rowids``, ``from_tensor``, ``merge_dims``, the padded
dense form of a nest and the row gather of any level.  It is not used on its
own.

Every level is checked when it is built (by the one-level factories, in
``row_partition``), so each level's splits start at 0, never decrease and end
at most at the number of rows of the level below: nothing here can read
outside the values.
"""

import math
import numbers
from contextlib import contextmanager

import numpy as np

from ..errors import InvalidArgumentError
from ..framework.backend import backend_of
from ..ops import array_ops, embedding_ops
from ..ops._helpers import as_tensor
from .ragged_range import row_ranges, splits_dtype
from .row_partition import as_values, check_fits, freeze, python_values_dtype

__all__ = ["RaggedNested", "nrows_of", "positive_axis"]


@contextmanager
def _level(argument, k):
    """Prefix the argument's level to an error of a one-level factory."""
    try:
        yield
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{argument}[{k}]: {e}") from None


def _check_sequence(value, argument):
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            f"Argument `{argument}` must be a list of Tensors. Received {value!r:.80}."
        )


def positive_axis(axis, ndim, argument):
    """TensorFlow's ``get_positive_axis``: `axis` in ``[0, ndim)``.

    Parameters
    ----------
    axis : int
        In ``[-ndim, ndim)``.
    ndim : int
    argument : str
        The argument's name in messages.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If `axis` is not an int.
    ValueError
        If `axis` is out of bounds.

    Examples
    --------
    >>> positive_axis(-1, 3, "axis")
    2
    """
    if not isinstance(axis, numbers.Integral) or isinstance(axis, bool):
        raise TypeError(f"{argument} must be an int; got {type(axis).__name__}")
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"{argument}={axis} out of bounds: expected {-ndim}<={argument}<{ndim}"
        )
    return axis + ndim if axis < 0 else axis


def _uniform_splits(nrows, width, dtype, be):
    """Splits of `nrows` rows of `width` values each."""
    check_fits(nrows * width, dtype, "from_tensor: the number of values")
    return freeze(be.xp.arange(nrows + 1, dtype=np.int64).astype(dtype) * width)


def _uniform(cls, values, nrows, width, dtype, be):
    """A RaggedTensor of `nrows` rows of `width` values each (its
    ``uniform_row_length`` set, so its shape says `width`)."""
    rt = cls(values, _uniform_splits(nrows, width, dtype, be), internal=True)
    rt._uniform_row_length = width
    return rt


def nrows_of(values):
    """The number of rows of a values argument (a Tensor or a RaggedTensor).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> nrows_of(sg.ragged.constant([[1], [], [2]])), nrows_of(sg.constant([1, 2]))
    (3, 2)
    """
    return values.nrows() if isinstance(values, RaggedNested) else values.shape[0]


class RaggedNested:
    """The nested structure of :class:`~sparsegrad.RaggedTensor` (its base
    class): factories and conversions of any ragged_rank."""

    __slots__ = ()

    # -- factories -------------------------------------------------------

    @classmethod
    def from_nested_row_splits(cls, flat_values, nested_row_splits, name=None,
                               validate=True):
        """A RaggedTensor from its flat values and the splits of every level.

        Equivalent to ``from_row_splits(from_row_splits(flat_values,
        nested_row_splits[-1]), ...)``, innermost level first.

        Parameters
        ----------
        flat_values : Tensor, Variable or array_like, rank >= 1
            The innermost values.
        nested_row_splits : list or tuple of 1-D int32/int64 array_like
            The row splits of each ragged dimension, outermost first; each
            level's last split is the number of rows of the level below.
        name : str, optional
            Ignored.
        validate : bool, default=True
            As for :meth:`from_row_splits`.

        Returns
        -------
        RaggedTensor
            Of ragged_rank ``len(nested_row_splits)`` (`flat_values` as a
            Tensor when the list is empty).

        Raises
        ------
        TypeError
            If `nested_row_splits` is not a list or tuple.
        InvalidArgumentError
            The errors of :meth:`from_row_splits`, prefixed with the level
            (``nested_row_splits[1]: Arguments to from_row_splits do not form
            a valid RaggedTensor:zero ...``).

        Examples
        --------
        >>> import sparsegrad as sg
        >>> rt = sg.RaggedTensor.from_nested_row_splits(
        ...     [1, 2, 3, 4, 5], ([0, 2, 3], [0, 2, 2, 5]))
        >>> rt.to_list()
        [[[1, 2], []], [[3, 4, 5]]]
        >>> rt.ragged_rank, rt.shape
        (2, (2, None, None))
        """
        del name
        _check_sequence(nested_row_splits, "nested_row_splits")
        result = as_values(flat_values, "flat_values")
        for k in reversed(range(len(nested_row_splits))):
            with _level("nested_row_splits", k):
                result = cls.from_row_splits(result, nested_row_splits[k],
                                             validate=validate)
        return result

    @classmethod
    def _from_trusted_splits(cls, flat_values, nested_row_splits, dtype):
        """`flat_values` (a Tensor) nested under splits that are a valid
        RaggedTensor's own or were derived from them (a reduction's result):
        no copy and no check; each level becomes `dtype` (the source's splits
        dtype) and read-only."""
        result = flat_values
        for splits in reversed(nested_row_splits):
            result = cls(result, freeze(splits.astype(dtype, copy=False)),
                         internal=True)
        return result

    @classmethod
    def from_nested_row_lengths(cls, flat_values, nested_row_lengths, name=None,
                                validate=True):
        """A RaggedTensor from its flat values and the row lengths of every level.

        Parameters
        ----------
        flat_values : Tensor, Variable or array_like, rank >= 1
            The innermost values.
        nested_row_lengths : list or tuple of 1-D int32/int64 array_like
            The row lengths of each ragged dimension, outermost first; each
            level's lengths sum to the number of rows of the level below.
        name : str, optional
            Ignored.
        validate : bool, default=True
            Ignored: the checks always run.

        Returns
        -------
        RaggedTensor
            Of ragged_rank ``len(nested_row_lengths)``.

        Raises
        ------
        TypeError
            If `nested_row_lengths` is not a list or tuple.
        InvalidArgumentError
            The errors of :meth:`from_row_lengths`, prefixed with the level.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.RaggedTensor.from_nested_row_lengths(
        ...     [1, 2, 3, 4, 5], ([2, 1], [2, 0, 3])).to_list()
        [[[1, 2], []], [[3, 4, 5]]]
        """
        del name, validate
        _check_sequence(nested_row_lengths, "nested_row_lengths")
        result = as_values(flat_values, "flat_values")
        for k in reversed(range(len(nested_row_lengths))):
            with _level("nested_row_lengths", k):
                result = cls.from_row_lengths(result, nested_row_lengths[k])
        return result

    @classmethod
    def from_nested_value_rowids(cls, flat_values, nested_value_rowids,
                                 nested_nrows=None, name=None, validate=True):
        """A RaggedTensor from its flat values and the row ids of every level.

        Parameters
        ----------
        flat_values : Tensor, Variable or array_like, rank >= 1
            The innermost values.
        nested_value_rowids : list or tuple of 1-D int32/int64 array_like
            The sorted row ids of each ragged dimension, outermost first;
            level ``k`` has one id per row of level ``k + 1``.
        nested_nrows : list or tuple of int, optional
            The number of rows of each level (None entries: the last id + 1).
        name : str, optional
            Ignored.
        validate : bool, default=True
            Ignored: the checks always run.

        Returns
        -------
        RaggedTensor
            Of ragged_rank ``len(nested_value_rowids)``.

        Raises
        ------
        TypeError
            If `nested_value_rowids` or `nested_nrows` is not a list or tuple.
        ValueError
            If `nested_nrows` and `nested_value_rowids` differ in length, and
            the ValueErrors of :meth:`from_value_rowids`.
        InvalidArgumentError
            The errors of :meth:`from_value_rowids`, prefixed with the level.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.RaggedTensor.from_nested_value_rowids(
        ...     [1, 2, 3, 4, 5], ([0, 0, 1], [0, 0, 2, 2, 2]),
        ...     nested_nrows=(3, 3)).to_list()
        [[[1, 2], []], [[3, 4, 5]], []]
        """
        del name, validate
        _check_sequence(nested_value_rowids, "nested_value_rowids")
        if nested_nrows is None:
            nested_nrows = [None] * len(nested_value_rowids)
        else:
            _check_sequence(nested_nrows, "nested_nrows")
            if len(nested_nrows) != len(nested_value_rowids):
                raise ValueError(
                    "Argument `nested_nrows` must have the same length as "
                    "argument `nested_value_rowids`. len(nested_nrows) = "
                    f"{len(nested_nrows)} vs. len(nested_values_rowids) = "
                    f"{len(nested_value_rowids)}."
                )
        result = as_values(flat_values, "flat_values")
        for k in reversed(range(len(nested_value_rowids))):
            with _level("nested_value_rowids", k):
                result = cls.from_value_rowids(result, nested_value_rowids[k],
                                               nested_nrows[k])
        return result

    @classmethod
    def from_tensor(cls, tensor, lengths=None, padding=None, ragged_rank=1,
                    name=None, row_splits_dtype="int64"):
        """The rows of a dense Tensor as a RaggedTensor, maybe shortened.

        Parameters
        ----------
        tensor : Tensor, Variable or array_like, rank >= ragged_rank + 1
        lengths : 1-D array_like of ints, or a list or tuple of them, optional
            Row ``i`` keeps ``tensor[i, :lengths[i]]`` (lengths clamped to
            ``[0, ncols]``).  With ``ragged_rank > 1`` the rows are those of
            the tensor's first ``ragged_rank`` dimensions flattened.  A list
            or tuple of vectors gives the row lengths of every ragged
            dimension, outermost first (as :meth:`from_nested_row_lengths`
            takes them; ``ragged_rank`` is their number): level ``k`` keeps
            the first ``lengths[k][j]`` entries of dimension ``k + 1``.
        padding : scalar or array_like, optional
            Of shape ``tensor.shape[ragged_rank + 1:]``: trailing items of
            each row equal to it are dropped.
        ragged_rank : int, default=1
            The number of ragged dimensions (the outer ones of a
            ``ragged_rank > 1`` result have uniform lengths).
        name : str, optional
            Ignored.
        row_splits_dtype : {"int64", "int32"}, default="int64"

        Returns
        -------
        RaggedTensor
            Differentiable w.r.t. `tensor` (a reshape and a gather).

        Raises
        ------
        ValueError
            "Specify argument `lengths` or `padding`, but not both.",
            "Argument `ragged_rank` must be greater than 0. Received 0.", a
            tensor of rank below 2 or ``ragged_rank + 1``, a padding of the
            wrong shape ("Shapes (1,) and () are incompatible").
        TypeError
            If `ragged_rank` is not an int, or `lengths` not integers.
        InvalidArgumentError
            If `lengths` is not a vector with one entry per row; per-level
            lengths that are negative, longer than the tensor's dimension
            or do not sum to the next level's number of rows (the errors of
            :meth:`from_nested_row_lengths`).

        Examples
        --------
        >>> import sparsegrad as sg
        >>> dt = [[5, 7, 0], [0, 3, 0], [6, 0, 0]]
        >>> sg.RaggedTensor.from_tensor(dt).to_list()
        [[5, 7, 0], [0, 3, 0], [6, 0, 0]]
        >>> sg.RaggedTensor.from_tensor(dt, lengths=[1, 0, 3]).to_list()
        [[5], [], [6, 0, 0]]
        >>> sg.RaggedTensor.from_tensor(dt, padding=0).to_list()
        [[5, 7], [0, 3], [6]]
        >>> dt3 = [[[5, 0], [7, 0], [0, 0]], [[0, 0], [3, 0], [0, 0]],
        ...        [[6, 0], [0, 0], [0, 0]]]
        >>> sg.RaggedTensor.from_tensor(
        ...     dt3, lengths=([2, 0, 3], [1, 1, 2, 0, 1])).to_list()
        [[[5], [7]], [], [[6, 0], [], [0]]]
        """
        del name
        if lengths is not None and padding is not None:
            raise ValueError("Specify argument `lengths` or `padding`, but not both.")
        if not isinstance(ragged_rank, int) or isinstance(ragged_rank, bool):
            raise TypeError(
                f"Argument `ragged_rank` must be an int. Received {ragged_rank}."
            )
        if ragged_rank <= 0:
            raise ValueError(
                "Argument `ragged_rank` must be greater than 0. "
                f"Received {ragged_rank}."
            )
        nested = (isinstance(lengths, (list, tuple)) and len(lengths) > 0
                  and np.ndim(lengths[0]) != 0)
        if nested and ragged_rank not in (1, len(lengths)):
            raise ValueError(
                "If Argument `lengths` is a tuple of row_lengths, argument "
                f"`ragged_rank` must be len(lengths): {len(lengths)}. Received "
                f"ragged_rank: {ragged_rank}."
            )
        tsplits = splits_dtype(row_splits_dtype, "row_splits_dtype")
        if isinstance(tensor, (list, tuple)):
            tensor = np.asarray(tensor)
            tensor = tensor.astype(python_values_dtype(tensor), copy=False)
        t = as_tensor(tensor, name="tensor")
        shape = tuple(t.shape)
        if len(shape) < 2:
            raise ValueError(
                "The rank of a RaggedTensor must be greater than 1, i.e., a list "
                "of scalars won't have ragged dimensions. Received argument "
                f"`tensor` with rank {len(shape)}."
            )
        if len(shape) < ragged_rank + 1:
            raise ValueError(f"Shape {shape} must have rank at least {ragged_rank + 1}")
        be = backend_of(t._value)
        if nested:
            return _from_nested_lengths(cls, t, lengths, tsplits, be)
        if ragged_rank > 1:
            outer = math.prod(shape[:ragged_rank])
            flat = array_ops.reshape(t, (outer,) + shape[ragged_rank:])
            result = cls.from_tensor(flat, lengths, padding,
                                     row_splits_dtype=tsplits)
            for axis in range(ragged_rank - 1, 0, -1):
                nrows = math.prod(shape[:axis])
                result = _uniform(cls, result, nrows, shape[axis], tsplits, be)
            return result
        nrows, ncols = shape[:2]
        inner = shape[2:]
        flat = array_ops.reshape(t, (nrows * ncols,) + inner)
        if padding is not None:
            lengths = _lengths_before_padding(t, padding, be)
        if lengths is None:
            return _uniform(cls, flat, nrows, ncols, tsplits, be)
        lengths = _clamped_lengths(lengths, nrows, ncols, be)
        check_fits(nrows * ncols, tsplits, "from_tensor: the number of values")
        splits = be.xp.zeros(nrows + 1, tsplits)
        be.xp.cumsum(lengths, out=splits[1:])
        starts = be.xp.arange(nrows, dtype=np.int64) * ncols
        positions = row_ranges(starts, starts + lengths, be)
        values = embedding_ops.gather(flat, positions)
        return cls(values, freeze(splits), internal=True)

    # -- structure -------------------------------------------------------

    def nested_row_lengths(self):
        """The row lengths of every ragged dimension, outermost first.

        Returns
        -------
        tuple of ndarray
            ``ragged_rank`` vectors of the splits' dtype.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> sg.ragged.constant([[[1, 2], []], [[3]]]).nested_row_lengths()
        (array([2, 1]), array([2, 0, 1]))
        """
        if self.ragged_rank == 1:
            return (self.row_lengths(),)
        return (self.row_lengths(),) + self._values.nested_row_lengths()

    def _same_nested_rows(self, other):
        """True when `other` has the same ragged_rank and splits at every level."""
        if not self._same_rows(other):
            return False
        return self.ragged_rank == 1 or self._values._same_nested_rows(other._values)

    def _used_flat_values(self):
        """The innermost values that the rows of every level cover."""
        used = self._used_values()
        return used if self.ragged_rank == 1 else used._used_flat_values()

    def _gather_rows(self, index, be):
        """A RaggedTensor of the rows `index` (int64, valid row numbers)."""
        splits = self._row_splits.astype(np.int64)
        starts, limits = splits[index], splits[index + 1]
        positions = row_ranges(starts, limits, be)
        new_splits = be.xp.zeros(index.shape[0] + 1, self._row_splits.dtype)
        be.xp.cumsum(limits - starts, out=new_splits[1:])
        if self.ragged_rank == 1:
            values = embedding_ops.gather(self._values, positions)
        else:
            values = self._values._gather_rows(positions, be)
        return type(self)(values, freeze(new_splits), internal=True)

    # -- conversions -----------------------------------------------------

    def _nested_to_tensor(self, default_value, shape):
        """:meth:`to_tensor` of ragged_rank >= 2: the values padded first, then
        the rows of those padded values (two recorded ``RaggedToDense``)."""
        inner_shape = None
        if shape is not None:
            shape = tuple(shape)
            if len(shape) != self.ndim:
                raise InvalidArgumentError(
                    f"to_tensor: shape {shape} must have rank {self.ndim}"
                )
            inner_shape = (None,) + shape[2:]
        dense = self._used_values().to_tensor(default_value, shape=inner_shape)
        rows = type(self)(dense, self._row_splits, internal=True)
        outer_shape = None
        if shape is not None:
            outer_shape = shape[:2] + (None,) * (dense.ndim - 1)
        return rows.to_tensor(default_value, shape=outer_shape)

    def merge_dims(self, outer_axis, inner_axis):
        """Merge the dimensions from `outer_axis` to `inner_axis` into one.

        Parameters
        ----------
        outer_axis, inner_axis : int
            In ``[-ndim, ndim)``, ``outer_axis <= inner_axis`` once made
            non-negative.

        Returns
        -------
        RaggedTensor or Tensor
            A Tensor when every ragged dimension is merged into the first
            (``merge_dims(0, -1)`` gives the flat values, as a vector).

        Raises
        ------
        ValueError
            "outer_axis=3 out of bounds: expected -3<=outer_axis<3", or
            "Expected outer_axis (2) to be less than or equal to inner_axis
            (1)".
        TypeError
            If an axis is not an int.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> rt = sg.ragged.constant([[[1, 2], [3]], [[4, 5, 6]]])
        >>> rt.merge_dims(0, 1).to_list()
        [[1, 2], [3], [4, 5, 6]]
        >>> rt.merge_dims(1, 2).to_list()
        [[1, 2, 3], [4, 5, 6]]
        >>> rt.merge_dims(0, 2).numpy()
        array([1, 2, 3, 4, 5, 6], dtype=int32)
        """
        ndim = self.ndim
        outer_axis = positive_axis(outer_axis, ndim, "outer_axis")
        inner_axis = positive_axis(inner_axis, ndim, "inner_axis")
        if outer_axis > inner_axis:
            raise ValueError(
                f"Expected outer_axis ({outer_axis}) to be less than or equal to "
                f"inner_axis ({inner_axis})."
            )
        return _merge_dims(self, outer_axis, inner_axis)


def _merge_dims(value, outer_axis, inner_axis):
    """TensorFlow's ``ragged.merge_dims`` on a valid pair of axes."""
    if outer_axis == inner_axis:
        return value
    while outer_axis == 0 and isinstance(value, RaggedNested):
        value = value._used_values()
        inner_axis -= 1
        if inner_axis == 0:
            return value
    if not isinstance(value, RaggedNested):
        old = tuple(value.shape)
        merged = math.prod(old[outer_axis:inner_axis + 1])
        new_shape = old[:outer_axis] + (merged,) + old[inner_axis + 1:]
        return array_ops.reshape(value, new_shape)
    if outer_axis > 1:
        return value.with_values(
            _merge_dims(value._used_values(), outer_axis - 1, inner_axis - 1))
    new_values = value._used_values()
    new_splits = value.row_splits
    for axis in range(outer_axis, inner_axis):
        if isinstance(new_values, RaggedNested):
            new_splits = new_values.row_splits[new_splits]
            new_values = new_values._used_values()
        else:
            split = inner_axis - axis + 1
            old = tuple(new_values.shape)
            size = math.prod(old[1:split])
            new_values = array_ops.reshape(new_values, (old[0] * size,) + old[split:])
            check_fits(int(new_splits[-1]) * size, new_splits.dtype,
                       "merge_dims: the number of values")
            new_splits = new_splits * size
            break
    return type(value)(new_values, freeze(new_splits), internal=True)


def _from_nested_lengths(cls, t, lengths, tsplits, be):
    """:meth:`from_tensor` with the row lengths of every ragged dimension:
    the items of `t` that a ragged mask of those lengths covers."""
    shape = tuple(t.shape)
    depth = len(lengths)
    if len(shape) < depth + 1:
        raise ValueError(f"Shape {shape} must have rank at least {depth + 1}")
    levels = []
    for k, level in enumerate(lengths):
        array = level._value if hasattr(level, "_value") else be.xp.asarray(level)
        if array.size == 0:
            array = array.astype(np.int64)
        if array.dtype.kind not in "iu":
            raise TypeError(
                f"from_tensor: lengths[{k}] must be of type integer, got dtype "
                f"{array.dtype}"
            )
        if array.ndim != 1:
            raise InvalidArgumentError(
                f"Shape {tuple(array.shape)} must have rank 1 (from_tensor: "
                f"lengths[{k}])"
            )
        if array.size and int(array.max()) > shape[k + 1]:
            raise InvalidArgumentError(
                f"from_tensor: lengths[{k}] holds {int(array.max())}, more than "
                f"dimension {k + 1} of the tensor ({shape[k + 1]})"
            )
        levels.append(array.astype(tsplits))
    if levels[0].shape[0] != shape[0]:
        raise InvalidArgumentError(
            f"from_tensor: lengths[0] must have one entry per row ({shape[0]}), "
            f"got {levels[0].shape[0]}"
        )
    slots = math.prod(shape[:depth + 1])
    tokens = int(levels[-1].astype(np.int64).sum())
    if tokens > slots:   # before the mask is allocated; the levels check the rest
        raise InvalidArgumentError(
            f"from_tensor: lengths[{depth - 1}] sum to {tokens}, more than the "
            f"tensor's {slots} items"
        )
    mask = cls.from_nested_row_lengths(be.xp.ones(tokens, np.bool_), levels)
    dense = mask.to_tensor(default_value=False, shape=shape[:depth + 1])
    positions = be.xp.flatnonzero(dense._value.reshape(-1))
    flat = array_ops.reshape(t, (slots,) + shape[depth + 1:])
    return mask.with_flat_values(embedding_ops.gather(flat, positions))


def _lengths_before_padding(t, padding, be):
    """The length of each row of the dense `t` without its trailing `padding`."""
    xp = be.xp
    pad = xp.asarray(padding, dtype=t.dtype)
    inner = tuple(t.shape[2:])
    if pad.shape != inner:
        raise ValueError(f"Shapes {tuple(pad.shape)} and {inner} are incompatible")
    equal = t._value == pad
    if equal.ndim > 2:
        equal = equal.reshape(equal.shape[:2] + (-1,)).all(axis=2)
    ncols = t.shape[1]
    ends = (~equal) * xp.arange(1, ncols + 1, dtype=np.int64)
    return ends.max(axis=1) if ncols else xp.zeros(t.shape[0], np.int64)


def _clamped_lengths(lengths, nrows, ncols, be):
    """`lengths` as int64 in ``[0, ncols]``, one per row."""
    array = lengths._value if hasattr(lengths, "_value") else be.xp.asarray(lengths)
    if array.size == 0:
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise TypeError(
            f"from_tensor: lengths must be of type integer, got dtype {array.dtype}"
        )
    if array.ndim != 1:
        raise InvalidArgumentError(
            f"Shape {tuple(array.shape)} must have rank 1 (from_tensor: lengths)"
        )
    if array.shape[0] != nrows:
        raise InvalidArgumentError(
            f"from_tensor: lengths must have one entry per row ({nrows}), got "
            f"{array.shape[0]}"
        )
    return be.xp.clip(array.astype(np.int64), 0, ncols)
