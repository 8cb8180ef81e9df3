"""Elementwise ops of RaggedTensors: the handlers that the public
elementwise ops (``sg.add``, ``sg.math.*``, ``sg.where``, ``sg.cast``,
``sg.add_n``...) run for a RaggedTensor argument, and that the
RaggedTensor's operators reach through those ops.

Semantics are TensorFlow's ragged dispatch:

* a one-operand op maps the flat values and keeps the partition;
* two operands broadcast as TensorFlow's ``DynamicRaggedShape`` does: the
  shapes are aligned on the right (the lower-rank operand gains leading
  dimensions of size 1), then, from the outermost dimension in, a uniform
  dimension of size 1 stretches to the other operand's size or row lengths;
  other sizes must agree (ragged rows with ragged rows of the same lengths,
  a uniform size ``k`` with rows all of length ``k``); a dense operand of
  lower rank than the flat values broadcasts against them directly, as in
  NumPy;
* RaggedTensors with the same row partitions pair their flat values at once.

The cost is one pass over the flat values: nothing is padded.  An operand
whose values must be repeated (a dense ``(nrows, 1)`` column against ragged
rows, a ragged rank-1 operand against ragged rank 2) is gathered by the row
ids of the result, a differentiable gather whose gradient sums back into
the operand.  Where an operand already has the result's rows, it is used
as it is.
"""

import inspect

import numpy as np

from ..errors import InvalidArgumentError
from ..framework import dispatch
from ..framework.backend import backend_of
from ..framework.buffers import check_allocation
from ..framework.tensor import Tensor
from ..ops import array_ops, embedding_ops, math_ops, unary_ops
from ..ops._helpers import as_tensor, binary_operands, convert_like
from .ragged_tensor import RaggedTensor
from .row_partition import check_fits, freeze, rowids_from_splits

__all__ = ["broadcast_flat_values"]


# -- the shapes of the operands ------------------------------------------------


def _check_splits_dtypes(operands):
    """TensorFlow's match_row_splits_dtypes: RaggedTensors of one op share
    the splits' dtype (ValueError otherwise); that dtype."""
    dtypes = {o.row_splits_dtype for o in operands if isinstance(o, RaggedTensor)}
    if len(dtypes) > 1:
        raise ValueError(
            "Input RaggedTensors have mismatched row_splits dtypes; use "
            "RaggedTensor.with_row_splits_dtype() to convert them to compatible "
            f"dtypes. ({' vs. '.join(sorted(str(d) for d in dtypes))})"
        )
    return dtypes.pop()


class _Shape:
    """An operand's dimensions as seen from the result: `offset` leading
    dimensions of size 1, then its own; the first ``ragged_rank`` after
    dimension 0 are described by splits, the others are uniform."""

    __slots__ = ("value", "offset", "ragged_rank", "splits", "dims")

    def __init__(self, value, rank):
        self.value = value
        if isinstance(value, RaggedTensor):
            self.ragged_rank = value.ragged_rank
            self.splits = [s.astype(np.int64, copy=False)
                           for s in value.nested_row_splits]
            flat = value._used_flat_values()
            self.dims = (value.nrows(),) + (None,) * self.ragged_rank + tuple(
                flat.shape[1:])
        else:
            self.ragged_rank = 0
            self.splits = []
            self.dims = tuple(value.shape)
        self.offset = rank - len(self.dims)

    def level(self, k):
        """Dimension `k` of the result: an int (uniform) or a splits array."""
        j = k - self.offset
        if j < 0:
            return 1
        if 1 <= j <= self.ragged_rank:
            return self.splits[j - 1]
        return self.dims[j]

    def values_at(self, k):
        """The operand's values as rows of its elements at result level `k`
        (a Tensor of ``(elements, *inner)``)."""
        j = k - self.offset
        if isinstance(self.value, RaggedTensor):
            flat = self.value._used_flat_values()
            merged = j - self.ragged_rank       # uniform dims merged into rows
        else:
            flat = as_tensor(self.value)
            merged = j
        if merged == 0:
            return flat
        shape = flat.shape
        rows = int(np.prod(shape[:merged + 1], dtype=np.int64))
        return array_ops.reshape(flat, (rows,) + tuple(shape[merged + 1:]))


def _broadcast_error(shapes):
    return InvalidArgumentError(
        "Ragged elementwise op: different row splits, the shapes "
        + " and ".join(str(_shape_text(s.value)) for s in shapes)
        + " do not broadcast (ragged rows must have equal lengths; only a "
        "uniform dimension of size 1 stretches)"
    )


def _shape_text(value):
    return tuple(value.shape)


def broadcast_flat_values(operands):
    """Broadcast RaggedTensors and dense Tensors to one ragged shape.

    Parameters
    ----------
    operands : list of RaggedTensor or Tensor
        At least one RaggedTensor; the RaggedTensors share the splits' dtype.

    Returns
    -------
    values : list of Tensor
        Each operand's values, paired element by element with the result's
        flat values (gathered where rows repeat); an operand that lies
        within the flat values' inner dimensions is returned as it is, for
        NumPy broadcasting.
    build : callable
        ``build(flat)``: the result's RaggedTensor around flat values of the
        result's element count.

    Raises
    ------
    InvalidArgumentError
        If the shapes do not broadcast.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.ragged.elementwise import broadcast_flat_values
    >>> rt = sg.ragged.constant([[1, 2], [3]])
    >>> values, build = broadcast_flat_values([rt, sg.constant([[10], [20]])])
    >>> [v.numpy().tolist() for v in values]
    [[1, 2, 3], [10, 10, 20]]
    """
    splits_dtype = _check_splits_dtypes(operands)
    rank = max(len(o.shape) for o in operands)
    shapes = [_Shape(o, rank) for o in operands]
    depth = max(s.offset + s.ragged_rank for s in shapes)   # the result's ragged_rank
    first = next(o for o in operands if isinstance(o, RaggedTensor))
    xp = backend_of(first._used_flat_values()._value).xp
    take = [s for s in shapes if s.offset <= depth]
    # index of each result element (at the current level) among each
    # operand's elements; None where they coincide
    sizes = [s.level(0) for s in take]
    n = _common(sizes, shapes)
    index = [None if size == n else xp.zeros(n, np.int64) for size in sizes]
    levels = []     # the result's (splits, uniform length or None) per level
    for k in range(1, depth + 1):
        lengths, starts = [], []
        for s, idx in zip(take, index):
            dim = s.level(k)
            if isinstance(dim, (int, np.integer)):
                lengths.append(int(dim))
                starts.append(None)
            else:
                ln, st = dim[1:] - dim[:-1], dim[:-1]
                lengths.append(ln if idx is None else ln[idx])
                starts.append(st if idx is None else st[idx])
        target = _common([v for v in lengths if isinstance(v, int)], shapes)
        ragged = [v for v in lengths if not isinstance(v, int)]
        if ragged:
            # ragged rows never stretch (TensorFlow): they equal each other,
            # and a uniform size other than 1
            uniform_size, target = target, ragged[0]
            if (uniform_size != 1 and bool(xp.any(target != uniform_size))) or any(
                    bool(xp.any(v != target)) for v in ragged[1:]):
                raise _broadcast_error(shapes)
            splits = xp.zeros(n + 1, np.int64)
            xp.cumsum(target, out=splits[1:])
            width = None
        else:
            check_allocation(((n + 1,), np.int64, "ragged broadcast: the rows"))
            splits = xp.arange(n + 1, dtype=np.int64) * target
            width = target
        total = int(splits[-1])
        check_fits(total, splits_dtype, "ragged broadcast: the number of values")
        levels.append((splits, width))
        rowids = col = None
        for i, (ln, st, idx) in enumerate(zip(lengths, starts, index)):
            if idx is None and bool(xp.all(ln == target)):
                continue                       # the same rows: still the same
            if rowids is None:
                check_allocation(((total,), np.int64, "ragged broadcast: row ids"),
                                 ((total,), np.int64, "ragged broadcast: columns"))
                rowids = rowids_from_splits(splits, backend_of(splits))
                col = xp.arange(total, dtype=np.int64) - splits[rowids]
            if st is None:                     # uniform rows of the operand
                st = (xp.arange(n, dtype=np.int64) if idx is None else idx) * ln
            # an operand's row of length 1 repeats its value; the others have
            # the result's length
            if isinstance(ln, int):
                index[i] = st[rowids] + (col if ln != 1 else 0)
            else:
                index[i] = st[rowids] + col * (ln != 1)[rowids]
        n = total
    values = []
    for s in shapes:
        if s.offset > depth:
            values.append(s.value)
            continue
        v = s.values_at(depth)
        idx = index[take.index(s)]
        values.append(v if idx is None else embedding_ops.gather(v, idx))

    def build(flat):
        result = flat
        for splits, width in reversed(levels):
            result = RaggedTensor(result, freeze(splits.astype(splits_dtype)),
                                  internal=True)
            result._uniform_row_length = width
        return result

    return values, build


def _common(sizes, shapes):
    """The size that `sizes` (ints) broadcast to (1 for none)."""
    found = {size for size in sizes if size != 1}
    if len(found) > 1:
        raise _broadcast_error(shapes)
    return found.pop() if found else 1


# -- the handlers ---------------------------------------------------------------


def _dense_operand(value, like, op_name, arg):
    """A non-ragged operand as a Tensor; Python values and arrays adopt the
    dtype of the flat values `like` (TensorFlow's preferred dtype)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float, list, tuple, np.ndarray, np.generic)):
        try:
            return convert_like(value, like, op_name, arg)
        except (TypeError, ValueError):
            pass
    return as_tensor(value, name=arg)


def _same_partitions(operands):
    """True when the RaggedTensors among `operands` have identical nested
    splits and every dense one lies within their flat values' inner
    dimensions (it broadcasts against the flat values directly)."""
    ragged = [o for o in operands if isinstance(o, RaggedTensor)]
    first = ragged[0]
    for o in ragged[1:]:
        if o.ndim != first.ndim or not first._same_nested_rows(o):
            return False
    flat_rank = first.ndim - first.ragged_rank
    return all(isinstance(o, RaggedTensor) or len(o.shape) < flat_rank
               for o in operands)


def _elementwise(op, operands, op_name, names):
    """`op` of the flat values of `operands` (RaggedTensors, other values),
    broadcast; a RaggedTensor."""
    ragged = [o for o in operands if isinstance(o, RaggedTensor)]
    like = ragged[0]._used_flat_values()
    operands = [o if isinstance(o, RaggedTensor)
                else _dense_operand(o, like, op_name, name)
                for o, name in zip(operands, names)]
    if _same_partitions(operands):
        _check_splits_dtypes(operands)
        values = [o._used_flat_values() if isinstance(o, RaggedTensor) else o
                  for o in operands]
        return ragged[0].with_flat_values(op(*values))
    values, build = broadcast_flat_values(operands)
    return build(op(*values))


def _binary_handler(op):
    """The RaggedTensor handler of binary op `op` (``op(x, y, name=None)``)."""
    op_name = op.__name__

    def handler(x, y, name=None):
        return _elementwise(op, [x, y], op_name, ("x", "y"))

    handler.__name__ = f"ragged_{op_name}"
    return handler


def _unary_handler(op):
    """The RaggedTensor handler of one-operand op `op`: its first argument
    mapped through the flat values, the others passed on."""
    first = next(iter(inspect.signature(op).parameters))
    op_name = op.__name__

    def handler(*args, **kwargs):
        if args:
            x, args = args[0], args[1:]
        else:
            x = kwargs.pop(first)
        if not isinstance(x, RaggedTensor):
            raise TypeError(
                f"{op_name}: only the argument {first!r} may be a RaggedTensor")
        return x.with_flat_values(op(x._used_flat_values(), *args, **kwargs))

    handler.__name__ = f"ragged_{op_name}"
    return handler


def _where(condition, x=None, y=None, name=None):
    """``sg.where`` of a RaggedTensor argument (TensorFlow's ragged where_v2)."""
    if (x is None) != (y is None):
        raise ValueError("x and y must be either both None or both non-None")
    if x is None:
        return _coordinates(condition)
    if not isinstance(condition, RaggedTensor):
        condition = as_tensor(condition, name="condition")
    # x and y take each other's dtype (a RaggedTensor's flat values first)
    if isinstance(x, RaggedTensor):
        if not isinstance(y, RaggedTensor):
            y = _dense_operand(y, x._used_flat_values(), "where", "y")
    elif isinstance(y, RaggedTensor):
        x = _dense_operand(x, y._used_flat_values(), "where", "x")
    else:
        x, y = binary_operands(x, y, "where")
    return _elementwise(math_ops.where, [condition, x, y], "where",
                        ("condition", "x", "y"))


def _coordinates(condition):
    """The coordinates of the true values of a RaggedTensor `condition`: an
    int64 Tensor of shape ``(n_true, rank)``."""
    if not isinstance(condition, RaggedTensor):
        return math_ops.where(condition)
    inner = _coordinates(condition._used_values())
    coords = inner.numpy()
    splits = condition.row_splits.astype(np.int64)
    first = coords[:, 0]
    rows = condition.value_rowids().astype(np.int64)[first]
    cols = first - splits[rows]
    return Tensor(np.concatenate([rows[:, None], cols[:, None], coords[:, 1:]],
                                 axis=1).astype(np.int64))


def _add_n(inputs, name=None):
    """``sg.add_n`` of a list holding RaggedTensors: their flat values added
    (TensorFlow's map_flat_values: the RaggedTensors share their splits)."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("add_n: inputs must be a list of tensors, got a "
                        "RaggedTensor")
    ragged = [t for t in inputs if isinstance(t, RaggedTensor)]
    first = ragged[0]
    for other in ragged[1:]:
        if other.ndim != first.ndim or not first._same_nested_rows(other):
            raise InvalidArgumentError(
                "add_n: the RaggedTensors have different row splits (shapes "
                f"{first.shape} and {other.shape})")
    _check_splits_dtypes(ragged)
    flat = [t._used_flat_values() if isinstance(t, RaggedTensor) else t
            for t in inputs]
    return first.with_flat_values(math_ops.add_n(flat))


def _register():
    for name in math_ops.__all__:
        if name not in ("where", "matmul", "add_n", "logical_not"):
            op = getattr(math_ops, name)
            dispatch.register(op, RaggedTensor, _binary_handler(op))
    for name in unary_ops.__all__:
        op = getattr(unary_ops, name)
        dispatch.register(op, RaggedTensor, _unary_handler(op))
    for op in (math_ops.logical_not, array_ops.cast, array_ops.identity,
               array_ops.stop_gradient, array_ops.zeros_like, array_ops.ones_like):
        dispatch.register(op, RaggedTensor, _unary_handler(op))
    dispatch.register(math_ops.where, RaggedTensor, _where)
    dispatch.register(math_ops.add_n, RaggedTensor, _add_n)


_register()
