"""The arguments of the clip ops: a value or IndexedSlices with its row
grouping (:class:`Rows`), their checks, sums of squares, scaling, and
``sum_of_squares`` for the optimizers."""

import collections.abc

import numpy as np

from ...errors import InvalidArgumentError
from ...framework import buffers, sparse_rows
from ...framework.backend import backend_of
from ...framework.dtypes import BFLOAT16, check_numeric, is_half, is_kernel_float
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import Tensor
from ...framework.threads import get_num_threads
from ...framework.variable import Variable
from .. import array_ops
from .._helpers import as_borrowed_tensor, as_tensor

__all__ = ["FLOATS", "HALF_BATCH", "Rows", "repeated", "squares_batches",
           "sum_batches", "sum_of_squares", "float_values", "as_list",
           "scalar_norm_arg", "rows_batches", "rows_sum_of_squares", "scaled",
           "dense"]


FLOATS = (np.dtype(np.float16), BFLOAT16, np.dtype(np.float32),
          np.dtype(np.float64))

#: Half values (float16, bfloat16) of one sum of squares are converted to
#: float32 at most this many at a time (beyond one IndexedSlices' values): a
#: multiple of the kernel's 4,096-element block, so that cutting a dense
#: tensor into pieces of this size leaves its blocks unchanged.
HALF_BATCH = 1 << 22


# -- arguments ---------------------------------------------------------------------


class Rows:
    """One argument of a clip op: its values as a Tensor and, for an
    IndexedSlices, how its rows group by index (the IndexedSlices' own
    grouping, computed once and kept on it)."""

    __slots__ = ("values", "slices")

    def __init__(self, t, name):
        if isinstance(t, IndexedSlices):
            self.slices = t
            self.values = t.values
        else:
            self.slices = None
            self.values = as_borrowed_tensor(t, name=name)

    def rewrap(self, values):
        """`values` in the form of the argument (an IndexedSlices when it was
        one, keeping the grouping of its indices)."""
        if self.slices is None:
            return values
        return IndexedSlices._from_trusted(
            values, self.slices.indices, self.slices.dense_shape,
            self.slices._groups,
        )

    def groups(self, be=None):
        """``(order, starts)`` of the repeated indices, or None when the rows
        are the tensor's own (dense, or distinct indices)."""
        if self.slices is None or self.slices.indices.shape[0] < 2:
            return None
        return repeated(self.slices._row_groups(be=be))

    def squares_item(self, be):
        """This argument as an item of :func:`squares_batches`."""
        return self.values._value, self.groups(be)

    def represented(self, be):
        """``(rows, row_group)``: the rows of the represented tensor in float64
        and, for repeated indices, the row of each value row (else None).

        The rows of an index are summed in the values' dtype, in their original
        order, from zero (``sparse_rows.group_sum`` on the grouping the
        IndexedSlices keeps), as the norm kernel sums them: half values in
        float32, as the kernel receives them."""
        values = self.values._value
        if self.groups(be) is None:
            return values.astype(np.float64), None
        if is_half(values.dtype):
            values = values.astype(np.float32)  # an IndexedSlices' values only
        indices = self.slices.indices._value
        unique, order, starts = self.slices._row_groups(be=be)
        rows = sparse_rows.group_sum(values, order, starts, be)
        return rows.astype(np.float64), be.xp.searchsorted(unique, indices)


def repeated(grouped):
    """``(order, starts)`` of a :func:`sparse_rows.group_rows` result, or None
    when its indices are distinct (the rows are then the tensor's own)."""
    _, order, starts = grouped
    return (order, starts) if starts.shape[0] - 1 < order.shape[0] else None


def _entry(be, values, groups):
    """An entry of the clip kernels' ``sum_of_squares_list``: float32 or
    float64 `values` (rows grouped by `groups` when not None)."""
    values = be.xp.ascontiguousarray(values)
    if groups is None:
        return (values,)
    return (values.reshape(values.shape[0], -1),) + groups


def squares_batches(be, items):
    """The entries of one sum of squares, cut into the lists (batches) of
    the kernel calls that sum them; the caller adds the calls' totals in
    order.

    float32 and float64 values enter as they are.  Half values are converted
    to float32 (exactly): an IndexedSlices' values at once, a dense tensor
    in pieces of :data:`HALF_BATCH` elements, and a batch is closed before a
    converted piece would bring its converted elements past that count.  So
    no whole float32 copy of a large dense half tensor is made, and when the
    half values hold at most ``HALF_BATCH`` elements together there is one
    call, with the bits of the same call on the values converted beforehand.
    The cuts depend on the shapes only, not on the thread count.

    Parameters
    ----------
    be : Backend
        The backend of every array.
    items : iterable of (values, groups)
        The values of each tensor and, for an IndexedSlices with repeated
        indices, their ``(order, starts)`` (see :func:`repeated`), else None.

    Yields
    ------
    list
        Entries of ``sum_of_squares_list``; at least one list, maybe empty.
    """
    batch, converted = [], 0
    for values, groups in items:
        if not is_half(values.dtype):
            batch.append(_entry(be, values, groups))
            continue
        if groups is None:
            flat = values.reshape(-1)
            pieces = [flat[i:i + HALF_BATCH] for i in range(0, flat.size, HALF_BATCH)]
        else:
            pieces = [values]
        for piece in pieces:
            if converted and converted + piece.size > HALF_BATCH:
                yield batch
                batch, converted = [], 0
            batch.append(_entry(be, piece.astype(np.float32), groups))
            converted += piece.size
    yield batch


def sum_batches(be, batches):
    """The float64 sum of squares of :func:`squares_batches`: each batch's
    total by one kernel call, added in order (a CuPy 0-d array for device
    entries, nothing read back)."""
    kernels, threads = be.kernels("clip"), get_num_threads()
    total = None
    for batch in batches:
        part = kernels.sum_of_squares_list(batch, threads)
        total = part if total is None else total + part
    return total


def sum_of_squares(grads):
    """The float64 sum of squares of a list of gradients, of any float dtypes.

    For the optimizers, whose gradients are already checked: no conversion,
    no copy of float32/float64 values; half values (float16, bfloat16) are
    converted to float32 as :func:`squares_batches` says.  The same bits for
    any thread count.

    Parameters
    ----------
    grads : list
        ndarrays (dense), ``(values, indices, n_rows)`` tuples (rows of a
        variable with `n_rows` rows: they count as the tensor they represent,
        repeated indices summed first) or None (skipped).  A tuple may carry
        a fourth item, the ``(unique, order, starts)`` that
        :func:`sparsegrad.framework.sparse_rows.group_rows` gave for its
        indices, so that a caller who needs those groups again (the lazy
        optimizers' update kernels) groups the indices once.

    Returns
    -------
    float
        For CuPy gradients, a 0-d float64 CuPy array (nothing read back).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.ops.clip_ops import sum_of_squares
    >>> sum_of_squares([np.array([1.0, 2.0]), (np.array([[1.0], [2.0]]),
    ...                 np.array([0, 0]), 3)])
    14.0
    """
    grads = [g for g in grads if g is not None]
    # (NumPy and CuPy arrays must not mix)
    be = backend_of(*(a for g in grads for a in (g[:2] if isinstance(g, tuple)
                                                  else (g,))))
    items = []
    for g in grads:
        if isinstance(g, tuple):
            values, indices, n_rows = g[:3]
            if indices.shape[0] < 2:
                groups = None
            elif len(g) > 3:
                groups = repeated(g[3])
            else:
                groups = repeated(sparse_rows.group_rows(indices, n_rows - 1))
            items.append((values, groups))
        else:
            items.append((g, None))
    return sum_batches(be, squares_batches(be, items))


def float_values(rows, op_name, arg):
    """The dtype of `rows`, which must be float16, bfloat16, float32 or
    float64 (not bfloat16 on the GPU)."""
    values = rows.values._value
    dtype = values.dtype
    check_numeric(dtype, f"{op_name}: {arg}")
    if dtype not in FLOATS:
        raise InvalidArgumentError(
            f"{op_name}: {arg} has dtype {dtype}; norms need float16, bfloat16, "
            "float32 or float64 values (cast integers first)"
        )
    if dtype == BFLOAT16 and backend_of(values).on_gpu:
        raise InvalidArgumentError(
            f"{op_name}: {arg} is a bfloat16 CuPy array; the clip ops compute "
            "float16, float32 and float64 on the GPU: cast it to float32 first "
            "(sg.cast)"
        )
    return dtype


def as_list(t_list, op_name, one_dtype=True):
    """``(entries, dtype, be)``: the entries of `t_list` as Rows (None kept),
    of float dtypes, all one (that of the first) when `one_dtype`, and their
    backend."""
    if isinstance(t_list, (str, bytes)) or not isinstance(
        t_list, collections.abc.Sequence
    ):
        raise TypeError(
            f"{op_name}: `t_list` should be a sequence of tensors. Received "
            f"{type(t_list).__name__}."
        )
    entries, dtype, first = [], None, None
    for i, t in enumerate(t_list):
        if t is None:
            entries.append(None)
            continue
        rows = Rows(t, f"t_list[{i}]")
        this = float_values(rows, op_name, f"t_list[{i}]")
        if dtype is None:
            dtype, first = this, i
        elif this != dtype and one_dtype:
            raise InvalidArgumentError(
                f"{op_name}: t_list[{i}] has dtype {this} but t_list[{first}] has "
                f"dtype {dtype}; every tensor of the list must have one dtype"
            )
        entries.append(rows)
    be = backend_of(*(r.values._value for r in entries if r is not None))
    return entries, dtype, be


def scalar_norm_arg(value, dtype, op_name, arg):
    """A clip_norm / use_norm argument: ``(value as a 0-d array of `dtype`,
    the Tensor to differentiate or None)``.  Python and NumPy numbers adopt
    `dtype`; a Tensor must be a scalar of a float dtype."""
    if isinstance(value, Variable):
        value = as_tensor(value)
    if isinstance(value, Tensor):
        array = value._value
        array = backend_of(array).host(array)  # a scalar argument: read back once
        tensor = value
    else:
        if isinstance(value, (bool, np.bool_)) or value is None:
            raise TypeError(f"{op_name}: {arg} must be a number, got {value!r}")
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):
            raise TypeError(
                f"{op_name}: {arg} must be a number, got {value!r}"
            ) from None
        tensor = None
    check_numeric(array.dtype, f"{op_name}: {arg}")
    if array.dtype.kind == "b":
        raise TypeError(f"{op_name}: {arg} must be a number, got {value!r}")
    if array.size != 1 or (array.ndim and tensor is not None):
        raise InvalidArgumentError(
            f"{op_name}: {arg} must be a scalar, got shape {tuple(array.shape)}"
        )
    return np.asarray(array.reshape(()), dtype=dtype), tensor


def rows_batches(be, entries):
    """The kernel batches (:func:`squares_batches`) of the sum of squares of
    a list of Rows (None skipped)."""
    return squares_batches(
        be, (r.squares_item(be) for r in entries if r is not None))


def rows_sum_of_squares(be, entries):
    """The float64 sum of squares of a list of host Rows (None skipped)."""
    return sum_batches(be, rows_batches(be, entries))


def scaled(be, x, c, d=1.0):
    """``(x * c) / d`` in x's dtype, a new array (c and d are in that dtype)."""
    if x.size and is_kernel_float(x.dtype):
        xp = be.xp
        out = xp.empty(x.shape, x.dtype) if be.on_gpu else buffers.empty(
            x.shape, x.dtype)
        be.kernels("clip").scale(
            xp.ascontiguousarray(x).reshape(-1), float(c), float(d),
            out.reshape(-1), 1 if be.on_gpu else get_num_threads(),
        )
        return out
    c, d = np.asarray(c, x.dtype)[()], np.asarray(d, x.dtype)[()]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return x * c if d == 1 else (x * c) / d


def dense(be, grad, like):
    """An output gradient as an array of `like`'s shape and module (None:
    float64 zeros)."""
    if grad is None:
        return be.xp.zeros(like.shape)
    return array_ops.densify(grad)._value
