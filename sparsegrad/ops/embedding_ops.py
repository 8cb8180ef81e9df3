"""Row lookups: gather and embedding_lookup, whose gradients are IndexedSlices.

The gradient of a lookup along axis 0 touches only the rows that were looked
up, so it is returned as an :class:`~sparsegrad.IndexedSlices` of
``len(ids)`` rows: the cost of the forward pass and of the gradient is
O(ids x row width), never O(table rows).  A Variable is read through
:func:`~sparsegrad.ops._helpers.read_variable`, so ``tape.gradient(loss, var)``
returns that IndexedSlices.
"""

import numpy as np

from ..autodiff.recording import record_operation
from ..autodiff.registry import register_gradient
from ..errors import InvalidArgumentError
from ..framework import sparse_rows
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, wrap
from ..framework.variable import Variable
from . import array_ops, math_ops, reduction_ops, unary_ops
from ._helpers import as_borrowed_tensor, as_tensor

__all__ = ["gather", "embedding_lookup"]


# -- argument checks -------------------------------------------------------------


def _index_tensor(indices, name="indices"):
    """`indices` as an int32 or int64 Tensor of any rank.

    The conversion is :func:`sparsegrad.framework.sparse_rows.index_array`;
    an int32 or int64 Tensor is returned as it is, anything else becomes a
    new Tensor (a caller's array is copied, never frozen).
    """
    if isinstance(indices, Variable):
        indices = indices.value()
    if isinstance(indices, Tensor):
        array = sparse_rows.index_array(indices._value, name)
        return indices if array is indices._value else wrap(array)
    array = sparse_rows.index_array(indices, name)
    return wrap(np.array(array, copy=True))


def _int_argument(value, name):
    try:
        return int(value.__index__())
    except (AttributeError, TypeError):
        raise InvalidArgumentError(
            f"gather: {name} must be an int, got {value!r}"
        ) from None


def _check_gather_axis(axis, ndim):
    axis = _int_argument(axis, "axis")
    if not -ndim <= axis < ndim:
        raise InvalidArgumentError(
            f"gather: axis {axis} is out of range for params of rank {ndim} "
            f"(expected {-ndim} <= axis < {ndim})"
        )
    return axis % ndim


# -- gather ------------------------------------------------------------------------


def gather(params, indices, axis=None, name=None, *, batch_dims=0):
    """Gather slices of `params` along `axis` at `indices`.

    ``output[p..., i..., q...] = params[p..., indices[i...], q...]``, where
    ``p`` runs over the dimensions before `axis` and ``q`` over those after.
    With ``batch_dims=b`` the first ``b`` dimensions of `params` and
    `indices` are batch dimensions, gathered one batch entry at a time:
    ``output[b..., p..., i..., q...] = params[b..., p..., indices[b..., i...],
    q...]``.

    Parameters
    ----------
    params : array_like, Tensor or Variable, at least 1-D
    indices : array_like or Tensor of any shape, int32 or int64
        Positions in ``[0, params.shape[axis])``.
    axis : int, optional
        In ``[-params.ndim, params.ndim)``; by default `batch_dims` (0).
    name : str, optional
        Ignored.
    batch_dims : int, default=0
        In ``[-indices.ndim, indices.ndim]`` (negative counts from the end of
        the indices' dimensions) and at most `axis`; ``params.shape[:b]`` must
        equal ``indices.shape[:b]``.

    Returns
    -------
    Tensor of shape ``params.shape[:axis] + indices.shape[batch_dims:] +
    params.shape[axis + 1:]`` and the dtype of `params`.

    Raises
    ------
    InvalidArgumentError
        If an index is out of range (``indices[1] = 7 is not in [0, 4)``,
        checked before any work), `indices` is not of an integer dtype,
        `params` is a scalar, `axis` or `batch_dims` is out of range, or the
        batch dimensions differ.

    Notes
    -----
    For ``axis=0`` the gradient w.r.t. `params` is an
    :class:`~sparsegrad.IndexedSlices` with one row per index (repeats are
    kept, not summed): cost O(indices x row width).  For another axis, or
    with batch dimensions, it is a dense Tensor of the shape of `params`
    (cost O(params.size)), as in TensorFlow.  An incoming IndexedSlices
    gradient is densified first, as TensorFlow does.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> v = sg.Variable([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    >>> sg.gather(v, [2, 0]).numpy()
    array([[4., 5.],
           [0., 1.]])
    >>> with sg.GradientTape() as tape:
    ...     loss = sg.reduce_sum(sg.gather(v, [2, 0, 2]))
    >>> g = tape.gradient(loss, v)
    >>> g.indices.numpy(), g.dense_shape
    (array([2, 0, 2]), (3, 2))
    >>> g.to_dense().numpy()
    array([[1., 1.],
           [0., 0.],
           [2., 2.]])

    One row of indices per row of `params` (``batch_dims=1``):

    >>> sg.gather([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[2, 0], [1, 1]],
    ...           batch_dims=1).numpy()
    array([[3., 1.],
           [5., 5.]])
    """
    del name
    p = as_borrowed_tensor(params, name="params")  # an ndarray table is not copied
    if p.ndim == 0:
        raise InvalidArgumentError("gather: params must be at least 1-D, got a scalar")
    idx = _index_tensor(indices)
    batch_dims = _check_batch_dims(batch_dims, idx.ndim)
    axis = _check_gather_axis(batch_dims if axis is None else axis, p.ndim)
    sparse_rows.check_in_range(idx._value, p.shape[axis])
    if batch_dims:
        return _batched_gather(p, idx, axis, batch_dims)
    out = wrap(_take(p._value, idx._value, axis))
    record_operation("GatherV2", (p, idx), (out,), {"axis": axis})
    return out


def _check_batch_dims(batch_dims, indices_ndim):
    batch_dims = _int_argument(batch_dims, "batch_dims")
    if not -indices_ndim <= batch_dims <= indices_ndim:
        raise InvalidArgumentError(
            f"gather: batch_dims {batch_dims} is out of range for indices of rank "
            f"{indices_ndim} (expected {-indices_ndim} <= batch_dims <= "
            f"{indices_ndim})"
        )
    return batch_dims % indices_ndim if batch_dims < 0 else batch_dims


def _batched_gather(p, idx, axis, b):
    """gather with `b` batch dimensions, built from differentiable ops: the
    axis is moved next to the (flattened) batch, each batch entry's indices
    are offset into its own block of rows, one axis-0 gather, then the
    dimensions are put back in order."""
    if b > axis:
        raise InvalidArgumentError(
            f"gather: batch_dims ({b}) must be less than or equal to axis ({axis})"
        )
    if p.shape[:b] != idx.shape[:b]:
        raise InvalidArgumentError(
            f"gather: params.shape[:{b}] = {p.shape[:b]} and indices.shape[:{b}] = "
            f"{idx.shape[:b]} must be equal (batch_dims={b})"
        )
    n_batch = int(np.prod(p.shape[:b], dtype=np.int64))
    n = p.shape[axis]
    before = p.shape[b:axis]                    # dims between batch and axis
    after = p.shape[axis + 1 :]
    # params -> (n_batch * n, *before, *after): the gathered axis right after
    # the batch, both flattened into rows.
    x = array_ops.reshape(p, (n_batch,) + p.shape[b:])
    k = len(before)
    x = array_ops.transpose(x, (0, k + 1) + tuple(range(1, k + 1))
                            + tuple(range(k + 2, x.ndim)))
    x = array_ops.reshape(x, (n_batch * n,) + before + after)
    local = idx._value.reshape((n_batch,) + idx.shape[b:])
    offsets = (np.arange(n_batch, dtype=np.int64) * n).reshape(
        (n_batch,) + (1,) * (local.ndim - 1))
    rows = gather(x, wrap(local + offsets), axis=0)
    # rows: (n_batch, *i, *before, *after) -> (n_batch, *before, *i, *after)
    m = local.ndim - 1
    perm = ((0,) + tuple(range(m + 1, m + 1 + k)) + tuple(range(1, m + 1))
            + tuple(range(m + 1 + k, rows.ndim)))
    rows = array_ops.transpose(rows, perm)
    return array_ops.reshape(rows, p.shape[:axis] + idx.shape[b:] + after)


def _take(array, indices, axis):
    """``np.take`` without its copy of a non-contiguous `array` (which would
    cost O(array) for a strided or broadcast table)."""
    if array.flags.c_contiguous:
        return np.take(array, indices, axis=axis)
    return np.asarray(array[(slice(None),) * axis + (indices,)])


@register_gradient("GatherV2")
def _gather_grad(op, grad):
    params, indices = op.inputs
    axis = op.get_attr("axis")
    grad = array_ops.densify(grad)
    if axis == 0:
        values = array_ops.reshape(grad, (indices.size,) + params.shape[1:])
        flat = wrap(indices._value.reshape(-1))
        return IndexedSlices._from_trusted(values, flat, params.shape), None
    return _scatter_to_dense(grad, indices, params.shape, axis), None


def _scatter_to_dense(grad, indices, params_shape, axis):
    """Dense gradient of a gather along `axis`: sum `grad`'s slices into zeros.

    Recorded as a "GatherV2Grad" op, whose own gradient is a gather again.
    """
    grad = as_tensor(grad, name="grad")
    g = grad._value
    idx = indices._value.reshape(-1)
    n_outer = int(np.prod(params_shape[:axis], dtype=np.int64))
    n_inner = int(np.prod(params_shape[axis + 1 :], dtype=np.int64))
    n = params_shape[axis]
    expected = (
        tuple(params_shape[:axis]) + indices.shape + tuple(params_shape[axis + 1 :])
    )
    if g.shape != expected:
        raise InvalidArgumentError(
            f"gather gradient: grad of shape {g.shape} does not match the gather "
            f"output shape {expected}"
        )
    # (n_outer, n_idx, n_inner) -> rows indexed by idx: (n_idx, n_outer * n_inner)
    rows = g.reshape(n_outer, idx.size, n_inner).transpose(1, 0, 2)
    rows = np.ascontiguousarray(rows).reshape(idx.size, n_outer * n_inner)
    acc = np.zeros((n, n_outer * n_inner), dtype=g.dtype)
    sparse_rows.scatter_add(acc, idx, rows)
    if axis == 0:
        dense = acc.reshape(params_shape)
    else:
        dense = np.ascontiguousarray(
            acc.reshape(n, n_outer, n_inner).transpose(1, 0, 2)
        ).reshape(params_shape)
    out = wrap(dense)
    record_operation(
        "GatherV2Grad",
        (grad, indices),
        (out,),
        {"axis": axis, "shape": tuple(params_shape)},
    )
    return out


@register_gradient("GatherV2Grad")
def _scatter_to_dense_grad(op, grad):
    # The scatter is linear in its first input, the transpose of a gather.
    return gather(grad, op.inputs[1], axis=op.get_attr("axis")), None


# -- embedding_lookup --------------------------------------------------------------


def embedding_lookup(params, ids, max_norm=None, name=None, *,
                     partition_strategy="div"):
    """Look up the rows of an embedding table: ``gather(params, ids)``.

    Parameters
    ----------
    params : Variable, Tensor or array_like of shape (n_rows, ...), or a list of them
        The table, or the shards of a table split by rows.  With ``n`` rows in
        ``p`` shards, shard ``s`` holds ``n // p + (s < n % p)`` rows, laid out
        by `partition_strategy`.
    ids : array_like or Tensor of any shape, int32 or int64
        Row ids in ``[0, n_rows)``.
    max_norm : float, optional
        If given, each looked-up row whose L2 norm exceeds `max_norm` is
        scaled down to norm `max_norm` (the table itself is not changed).
    name : str, optional
        Ignored.
    partition_strategy : {"div", "mod"}, default="div"
        How the rows of a sharded table are spread over its shards.  "div"
        (TensorFlow 2's only layout): each shard holds consecutive ids, the
        first shard ids ``0 .. n // p + (0 < n % p) - 1``.  "mod" (TensorFlow
        1's default): id ``i`` is row ``i // p`` of shard ``i % p``.  Ignored
        for a single table.

    Returns
    -------
    Tensor of shape ``ids.shape + params.shape[1:]``.

    Raises
    ------
    InvalidArgumentError
        If an id is out of range (``indices[3] = 9 is not in [0, 4)``; for
        shards ``ids[3] = 9 is not in [0, 4)``) or not an integer, or `params`
        is a scalar, or the shards disagree in dtype or row shape, or their
        sizes do not split the table as above, or `partition_strategy` is
        neither "div" nor "mod".

    Notes
    -----
    The gradient w.r.t. `params` (w.r.t. each shard) is an
    :class:`~sparsegrad.IndexedSlices` with one row per id (per id of that
    shard) and the dense shape of the table (shard); forward and gradient cost
    O(ids x row width).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> table = sg.Variable([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
    >>> with sg.GradientTape() as tape:
    ...     rows = sg.nn.embedding_lookup(table, [2, 2, 0])
    ...     loss = sg.reduce_sum(rows)
    >>> rows.numpy()
    array([[4., 5.],
           [4., 5.],
           [0., 1.]])
    >>> g = tape.gradient(loss, table)
    >>> g.indices.numpy(), g.values.numpy()
    (array([2, 2, 0]), array([[1., 1.],
           [1., 1.],
           [1., 1.]]))

    Two shards of a 5-row table hold rows 0-2 and 3-4:

    >>> shards = [sg.Variable([[0.0], [1.0], [2.0]]), sg.Variable([[3.0], [4.0]])]
    >>> sg.nn.embedding_lookup(shards, [4, 0]).numpy()
    array([[4.],
           [0.]])

    With ``partition_strategy="mod"`` the same shards hold rows 0, 2, 4 and
    1, 3:

    >>> sg.nn.embedding_lookup(shards, [4, 1], partition_strategy="mod").numpy()
    array([[2.],
           [3.]])
    """
    del name
    if partition_strategy not in ("div", "mod"):
        raise InvalidArgumentError(
            f"embedding_lookup: partition_strategy must be 'div' or 'mod', got "
            f"{partition_strategy!r}"
        )
    if isinstance(params, (list, tuple)):
        if not params:
            raise InvalidArgumentError("embedding_lookup: params is an empty list")
        if len(params) == 1:
            params = params[0]
        else:
            rows = _sharded_lookup(params, ids, partition_strategy)
            row_rank = np.ndim(params[0]) - 1
            if max_norm is None:
                return rows
            return _clip_rows(rows, max_norm, rows.ndim - row_rank)
    rows = gather(params, ids, axis=0)
    if max_norm is None:
        return rows
    return _clip_rows(rows, max_norm, rows.ndim - (_table_rank(params) - 1))


def _sharded_lookup(shards, ids, strategy):
    """Lookup in a table split by rows ("div" or "mod" layout): one gather per
    shard, then the rows are put back in the order of `ids`.  Cost O(ids x
    width)."""
    tensors = [
        as_borrowed_tensor(p, name=f"params[{k}]") for k, p in enumerate(shards)
    ]
    first = tensors[0]
    for k, t in enumerate(tensors):
        if t.ndim == 0:
            raise InvalidArgumentError(
                f"embedding_lookup: params[{k}] must be at least 1-D, got a scalar"
            )
        if t.dtype != first.dtype or t.shape[1:] != first.shape[1:]:
            raise InvalidArgumentError(
                f"embedding_lookup: the shards must share dtype and row shape; "
                f"params[{k}] has {t.dtype} rows of shape {t.shape[1:]}, "
                f"params[0] has {first.dtype} rows of shape {first.shape[1:]}"
            )
    n_shards = len(tensors)
    sizes = [t.shape[0] for t in tensors]
    n_rows = sum(sizes)
    per_shard, extras = divmod(n_rows, n_shards)
    expected = [per_shard + (s < extras) for s in range(n_shards)]
    if sizes != expected:
        raise InvalidArgumentError(
            f"embedding_lookup: shards of {sizes} rows do not split {n_rows} rows "
            f"the {strategy!r} way, which gives shard sizes {expected}"
        )
    idx = _index_tensor(ids, "ids")
    sparse_rows.check_in_range(idx._value, n_rows, "ids")
    flat = idx._value.reshape(-1)
    # "div": shard s holds ids [start_s, start_s + size_s), and the first
    # `extras` shards have per_shard + 1 rows.  "mod": id i is row i // p of
    # shard i % p.
    big = extras * (per_shard + 1)
    if strategy == "mod":
        shard_of = (flat % n_shards).astype(np.int64)
        local = flat // n_shards
    elif per_shard == 0:
        shard_of = flat.astype(np.int64)
        local = np.zeros_like(flat)
    else:
        in_big = flat < big
        shard_of = np.where(
            in_big, flat // (per_shard + 1), extras + (flat - big) // per_shard
        ).astype(np.int64)
        local = np.where(in_big, flat % (per_shard + 1), (flat - big) % per_shard)
    order = np.argsort(shard_of, kind="stable")
    bounds = np.searchsorted(shard_of[order], np.arange(n_shards + 1))
    pieces = []
    for s, t in enumerate(tensors):
        positions = order[bounds[s] : bounds[s + 1]]
        pieces.append(gather(t, local[positions].astype(flat.dtype, copy=False)))
    stacked = array_ops.concat(pieces, axis=0)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    rows = gather(stacked, inverse)
    return array_ops.reshape(rows, idx.shape + first.shape[1:])


def _table_rank(params):
    return params.ndim if hasattr(params, "ndim") else np.ndim(params)


def _clip_rows(rows, max_norm, ids_rank):
    """Scale each embedding (the dims after `ids_rank`) to norm <= max_norm.

    TensorFlow's clip_by_norm formula, ``rows * max_norm / maximum(norm,
    max_norm)``, built from differentiable ops (a zero row stays zero).
    """
    max_norm = float(max_norm)
    axes = tuple(range(ids_rank, rows.ndim))
    if not axes:  # scalar embeddings: the norm is the absolute value
        norm = unary_ops.abs(rows)
    else:
        sq = reduction_ops.reduce_sum(rows * rows, axis=axes, keepdims=True)
        positive = sq._value > 0
        safe = math_ops.where(positive, sq, np.ones_like(sq._value))
        norm = math_ops.where(positive, unary_ops.sqrt(safe), sq)
    return rows * max_norm / math_ops.maximum(norm, max_norm)
