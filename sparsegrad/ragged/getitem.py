"""RaggedTensor indexing: ``rt[key]`` with TensorFlow's ``ragged_getitem``
rules.

:class:`RaggedIndexing` is a base class of :class:`~sparsegrad.RaggedTensor`
holding ``__getitem__``; it is not used on its own.  A key is an int, a
slice, ``Ellipsis``, ``None`` (a new axis of length 1), or a tuple of them,
one per dimension, outermost first:

* the outer dimension takes any of them (an int gives the row: a Tensor at
  ragged_rank 1, else a RaggedTensor; a slice gives a RaggedTensor of rows);
* a ragged inner dimension takes slices (each row sliced, steps included,
  negative ones too) but not an int: "Cannot index into an inner ragged
  dimension." (a ValueError), as every row would need that column;
* a uniform inner dimension (:meth:`from_uniform_row_length`,
  :meth:`from_tensor`) and the dense inner dimensions take ints as well.

Every position is computed from the row splits, which the factories
checked, so no key reads outside the values: an int past the rows is an
error (an IndexError, so iteration stops; also an InvalidArgumentError, the
class TensorFlow gives a negative one).
"""

import numbers

import numpy as np

from ..errors import InvalidArgumentError
from ..framework.backend import backend_of
from ..framework.tensor import Tensor
from ..ops import embedding_ops
from .nested import RaggedNested
from .row_partition import freeze

__all__ = ["RaggedIndexing"]


class _RowIndexError(InvalidArgumentError, IndexError):
    """A row number out of bounds (an IndexError, so iteration stops)."""


def _int_key(key):
    """`key` as an int when it is one (a 0-d integer array or Tensor counts),
    else None."""
    if isinstance(key, bool):
        return None
    if isinstance(key, numbers.Integral):
        return int(key)
    if isinstance(key, (Tensor, np.ndarray)) and key.ndim == 0:
        array = key._value if isinstance(key, Tensor) else key
        if array.dtype.kind in "iu":
            return int(array)
    return None


def _check_key_type(key):
    if not (key is None or key is Ellipsis or isinstance(key, slice)
            or _int_key(key) is not None):
        raise TypeError(
            "Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) "
            f"and scalar tf.int32/tf.int64 tensors are valid indices, got {key!r}"
        )


def _expand_ellipsis(keys, ndim):
    """TensorFlow's ``_expand_ellipsis``: `keys` starts with Ellipsis."""
    n_indices = sum(1 for k in keys if k is not None)
    if n_indices > ndim + 1:
        raise IndexError("Too many indices for RaggedTensor")
    if n_indices == ndim + 1:
        return keys[1:]
    return [slice(None)] + keys


def _slice_bound(value, what):
    if value is None:
        return None
    k = _int_key(value)
    if k is None:
        raise TypeError(f"slice {what} must be integers or None")
    return k


def _value_ranges(starts, limits, step):
    """Per row ``range(starts[i], limits[i], step)``: the positions (int64)
    and the number of them in each row."""
    if step > 0:
        counts = np.maximum(0, (limits - starts + step - 1) // step)
    else:
        counts = np.maximum(0, (starts - limits - step - 1) // -step)
    offsets = np.zeros(counts.shape[0] + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    first = np.repeat(starts - offsets[:-1] * step, counts)
    return first + step * np.arange(offsets[-1], dtype=np.int64), counts


def _gather(values, positions):
    """The rows `positions` (int64, valid) of a Tensor or RaggedTensor."""
    if isinstance(values, RaggedNested):
        return values._gather_rows(positions, backend_of(positions))
    return embedding_ops.gather(values, positions)


class RaggedIndexing:
    """``__getitem__`` of :class:`~sparsegrad.RaggedTensor` (its base class)."""

    __slots__ = ()

    def __getitem__(self, key):
        """``rt[key]``: rows, slices of rows, and slices of inner dimensions.

        Parameters
        ----------
        key : int, slice, Ellipsis, None, or a tuple or list of them

        Returns
        -------
        Tensor or RaggedTensor
            A RaggedTensor while a ragged dimension remains.

        Raises
        ------
        IndexError
            A row past the last ("Row key 5 out of bounds"; also an
            InvalidArgumentError), or too many indices.
        ValueError
            An int on an inner ragged dimension ("Cannot index into an inner
            ragged dimension.").
        TypeError
            A key of another type (a float, a string, a list of ints), or
            slice bounds that are not ints.

        Examples
        --------
        >>> import sparsegrad as sg
        >>> rt = sg.ragged.constant([[1, 2, 3], [], [4, 5]])
        >>> rt[0].numpy()
        array([1, 2, 3], dtype=int32)
        >>> rt[1:].to_list()
        [[], [4, 5]]
        >>> rt[:, :2].to_list()
        [[1, 2], [], [4, 5]]
        >>> rt[:, ::-1].to_list()
        [[3, 2, 1], [], [5, 4]]
        >>> rt[2, -1].numpy()
        array(5, dtype=int32)
        """
        keys = list(key) if isinstance(key, (list, tuple)) else [key]
        return self._getitem(keys)

    def _getitem(self, keys):
        """TensorFlow's ``_ragged_getitem``: keys[0] applies to the rows."""
        if not keys:
            return self
        row_key, inner = keys[0], keys[1:]
        _check_key_type(row_key)
        if row_key is Ellipsis:
            return self._getitem(_expand_ellipsis(keys, self.ndim))
        if row_key is None:
            inner_rt = self._getitem(inner)
            nrows = inner_rt.shape[0]
            return type(self).from_uniform_row_length(inner_rt, nrows, nrows=1)
        if isinstance(row_key, slice):
            return self._slice_rows(row_key)._getitem_inner(inner)
        i = _int_key(row_key)
        n = self.nrows()
        if not -n <= i < n:
            raise _RowIndexError(f"Row key {i} out of bounds (nrows = {n})")
        i %= n
        row = self._values[int(self._row_splits[i]):int(self._row_splits[i + 1])]
        return row[tuple(inner)] if inner else row

    def _slice_rows(self, key):
        """The rows of the slice `key` (TensorFlow's
        ``_slice_ragged_row_dimension``); a uniform row length is kept."""
        start = _slice_bound(key.start, "indices")
        stop = _slice_bound(key.stop, "indices")
        step = _slice_bound(key.step, "indices")
        if step == 0:
            raise InvalidArgumentError("slice step cannot be zero")
        rows = range(self.nrows())[slice(start, stop, step)]
        splits = self._row_splits
        if rows.step == 1:
            a = rows.start
            b = max(a, rows.stop)
            lo, hi = int(splits[a]), int(splits[b])
            new_splits = (splits[a:b + 1].astype(np.int64) - lo).astype(splits.dtype)
            result = type(self)(self._values[lo:hi], freeze(new_splits), internal=True)
        else:
            index = np.arange(rows.start, rows.stop, rows.step, dtype=np.int64)
            result = self._gather_rows(backend_of(splits).xp.asarray(index),
                                       backend_of(splits))
        result._uniform_row_length = self._uniform_row_length
        return result

    def _getitem_inner(self, keys):
        """TensorFlow's ``_ragged_getitem_inner_dimensions``: the rows stay,
        keys[0] applies to the dimension inside them."""
        if not keys:
            return self
        key, rest = keys[0], keys[1:]
        _check_key_type(key)
        if key is Ellipsis:
            return self._getitem_inner(_expand_ellipsis(keys, self._values.ndim))
        if key is None:
            inner_rt = self._getitem_inner(rest)
            return type(self).from_uniform_row_length(inner_rt, 1,
                                                      nrows=inner_rt.nrows())
        if isinstance(key, slice):
            if key.start is None and key.stop is None and key.step is None:
                return self.with_values(_inner(self._used_values(), rest))
            return self._slice_columns(key)._with_inner(rest)
        if self._uniform_row_length is None:
            raise ValueError("Cannot index into an inner ragged dimension.")
        width = self._uniform_row_length
        column = _int_key(key)
        if not -width <= column < width:
            raise InvalidArgumentError(
                f"Index out of bounds when indexing into a ragged tensor: column "
                f"{column} of rows of length {width}"
            )
        offset = column % width
        columns = self._values[offset::width] if width else self._values[:0]
        return _inner(columns, rest)

    def _with_inner(self, keys):
        """The same rows over ``values[:, keys...]``."""
        if not keys:
            return self
        result = self.with_values(_inner(self._values, keys))
        return result

    def _slice_columns(self, key):
        """Each row sliced by `key` (not the trivial slice)."""
        start = _slice_bound(key.start, "offsets")
        stop = _slice_bound(key.stop, "offsets")
        if key.step is not None and _int_key(key.step) is None:
            raise TypeError("slice strides must be integers or None")
        step = 1 if key.step is None else _int_key(key.step)
        if step == 0:
            raise InvalidArgumentError("slice step cannot be zero")
        be = backend_of(self._row_splits)
        splits = be.host(self._row_splits).astype(np.int64)
        starts, limits = splits[:-1], splits[1:]
        lower = starts if step > 0 else starts - 1
        upper = limits if step > 0 else limits - 1
        # No row is longer than all the values: offsets and steps past that
        # select as they would at that length (and keep int64 from overflowing).
        span = int(splits[-1]) + 1
        step = max(min(step, span), -span)

        def bound(offset, default):
            if offset is None:
                return default
            offset = max(min(offset, span), -span)
            if offset >= 0:
                return np.minimum(starts + offset, upper)
            return np.maximum(limits + offset, lower)

        first = bound(start, starts if step > 0 else limits - 1)
        last = bound(stop, limits if step > 0 else starts - 1)
        positions, counts = _value_ranges(first, last, step)
        new_splits = np.zeros(counts.shape[0] + 1, self._row_splits.dtype)
        np.cumsum(counts, out=new_splits[1:])
        values = _gather(self._values, be.xp.asarray(positions))
        result = type(self)(values, freeze(be.xp.asarray(new_splits)), internal=True)
        if self._uniform_row_length is not None:
            result._uniform_row_length = len(range(self._uniform_row_length)[
                slice(start, stop, step)])
        return result


def _inner(values, keys):
    """``values[:, keys...]`` of a Tensor or RaggedTensor (the rows stay)."""
    if not keys:
        return values
    if isinstance(values, RaggedNested):
        return values._getitem_inner(list(keys))
    return values[(slice(None),) + tuple(keys)]
