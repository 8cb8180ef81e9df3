"""Row lookups: gather, gather_nd and embedding_lookup, whose gradients are
IndexedSlices.

The gradient of a lookup along axis 0 touches only the rows that were looked
up, so it is returned as an :class:`~sparsegrad.IndexedSlices` of
``len(ids)`` rows: the cost of the forward pass and of the gradient is
O(ids x row width), never O(table rows).  A Variable is read through
:func:`~sparsegrad.ops._helpers.read_variable`, so ``tape.gradient(loss, var)``
returns that IndexedSlices.

A float16 or bfloat16 table gives rows of its own dtype (TensorFlow's rule),
or float32 rows with ``dtype=float32``: the gathered rows are converted
(exactly), never the table, and the gradient flows back in the rows' dtype
(float32 IndexedSlices for a half table read as float32: no rounding).
"""

import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import register_gradient
from ...errors import InvalidArgumentError
from ...framework import sparse_rows
from ...framework.backend import backend_of
from ...framework.dtypes import FLOAT_DTYPES, is_half
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import wrap
from .. import array_ops
from .._helpers import as_borrowed_tensor, as_tensor, backend_of_arguments
from ..array_ops.rows import gather_checked, index_tensor, take
from ..sparse_segment_ops.checks import output_dtype
from .clipping import check_max_norm, clip_rows

__all__ = ["gather", "gather_nd", "embedding_lookup"]

_FLOAT32 = FLOAT_DTYPES[0]


# -- argument checks -------------------------------------------------------------


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


def gather(params, indices, axis=None, name=None, *, batch_dims=0, dtype=None):
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
    dtype : dtype, optional
        The result's dtype: None (the default) or the dtype of `params`, as
        TensorFlow gives (a float16 or bfloat16 table gives half rows);
        float32 for a float16 or bfloat16 `params`, whose gathered values
        (never the table) are converted, exactly.  Any other is refused.

    Returns
    -------
    Tensor of shape ``params.shape[:axis] + indices.shape[batch_dims:] +
    params.shape[axis + 1:]`` and the dtype of `params` (or `dtype`).

    Raises
    ------
    InvalidArgumentError
        If an index is out of range (``indices[1] = 7 is not in [0, 4)``,
        checked before any work), `indices` is not of an integer dtype,
        `params` is a scalar, `axis` or `batch_dims` is out of range, the
        batch dimensions differ, or `dtype` is another than those above
        (``gather: dtype must be None, the table's dtype (float64) or float32
        for a float16 or bfloat16 table, got float32``).

    Notes
    -----
    For ``axis=0`` the gradient w.r.t. `params` is an
    :class:`~sparsegrad.IndexedSlices` with one row per index (repeats are
    kept, not summed): cost O(indices x row width).  For another axis, or
    with batch dimensions, it is a dense Tensor of the shape of `params`
    (cost O(params.size)), as in TensorFlow.  An incoming IndexedSlices
    gradient is densified first, as TensorFlow does.  The gradient has the
    dtype of the result: a half table read with ``dtype=float32`` gets
    float32 IndexedSlices (not rounded to half).

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

    A float16 table, and its rows read as float32:

    >>> half = sg.Variable(np.array([[0.5, 1.5], [2.5, 3.5]], "float16"))
    >>> sg.gather(half, [1]).dtype, sg.gather(half, [1], dtype="float32").dtype
    (dtype('float16'), dtype('float32'))
    """
    del name
    p = as_borrowed_tensor(params, "params")  # an ndarray (or cupy) table is not copied
    if p.ndim == 0:
        raise InvalidArgumentError("gather: params must be at least 1-D, got a scalar")
    be = backend_of_arguments(p, indices)  # no mixing of host and device
    idx = index_tensor(indices, be=be)
    batch_dims = _check_batch_dims(batch_dims, idx.ndim)
    axis = _check_gather_axis(batch_dims if axis is None else axis, p.ndim)
    dtype = output_dtype(dtype, p.dtype, "gather")
    sparse_rows.check_in_range(idx._value, p.shape[axis], be=be)
    if batch_dims:
        return _batched_gather(p, idx, axis, batch_dims, dtype)
    return _gather_as(p, idx, axis, be, dtype)


def _gather_as(p, idx, axis, be, dtype):
    """The checked gather of Tensor `p` at `idx`, its values in `dtype` (that
    of `p`, or float32 for a half `p`: the gathered values are converted,
    exactly), recorded as GatherV2, whose gradient keeps the result's
    dtype."""
    if dtype == p.dtype:
        return gather_checked(p, idx, axis, be)
    out = wrap(take(p._value, idx._value, axis, be).astype(dtype))
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


def _batched_gather(p, idx, axis, b, dtype):
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
    rows = gather(x, wrap(local + offsets), axis=0, dtype=dtype)
    # rows: (n_batch, *i, *before, *after) -> (n_batch, *before, *i, *after)
    m = local.ndim - 1
    perm = ((0,) + tuple(range(m + 1, m + 1 + k)) + tuple(range(1, m + 1))
            + tuple(range(m + 1 + k, rows.ndim)))
    rows = array_ops.transpose(rows, perm)
    return array_ops.reshape(rows, p.shape[:axis] + idx.shape[b:] + after)


@register_gradient("GatherV2")
def _gather_grad(op, grad):
    params, indices = op.inputs
    axis = op.get_attr("axis")
    if axis == 0 and isinstance(grad, IndexedSlices):
        return _compose_slices(grad, indices, params.shape), None
    grad = array_ops.densify(grad)
    if axis == 0:
        values = array_ops.reshape(grad, (indices.size,) + params.shape[1:])
        flat = wrap(indices._value.reshape(-1))
        return IndexedSlices._from_trusted(values, flat, params.shape), None
    return _scatter_to_dense(grad, indices, params.shape, axis), None


def _compose_slices(grad, indices, params_shape):
    """The gradient of an axis-0 gather whose own upstream is sparse.

    `grad` holds rows of the gather's output (rows of ``indices.shape[0]``),
    each of them ``indices.shape[1:]`` rows of `params`: the result holds the
    same values as rows of `params`, at ``indices[grad.indices]``.  No dense
    intermediate; cost O(grad rows x row width).  (TensorFlow densifies the
    upstream first, at the cost of the gather's whole output.)
    """
    outer = grad.indices._value
    if grad.dense_shape is not None and grad.dense_shape[0] != indices.shape[0]:
        raise InvalidArgumentError(
            f"gather gradient: an IndexedSlices of dense shape {grad.dense_shape} "
            f"does not match the gather output of {indices.shape[0]} rows"
        )
    sparse_rows.check_in_range(outer, indices.shape[0], "upstream gradient indices")
    rows = indices._value[outer].reshape(-1)
    values = array_ops.reshape(grad.values, (rows.size,) + tuple(params_shape[1:]))
    return IndexedSlices._from_trusted(values, wrap(rows), tuple(params_shape))


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


# -- gather_nd ---------------------------------------------------------------------


def gather_nd(params, indices, batch_dims=0, name=None):
    """Gather slices of `params` addressed by index tuples.

    The last dimension of `indices` holds tuples of ``m`` coordinates into the
    first ``m`` dimensions of `params` (after `batch_dims` batch dimensions):
    ``output[i...] = params[indices[i..., 0], ..., indices[i..., m - 1]]``, a
    slice of shape ``params.shape[m:]``.

    Parameters
    ----------
    params : array_like, Tensor or Variable
    indices : array_like or Tensor of shape (..., m), int32 or int64
        At least 1-D; ``m <= params.ndim - batch_dims``.
    batch_dims : int, default=0
        The number of leading dimensions that `params` and `indices` share
        and gather one entry at a time; less than ``indices.ndim``.
    name : str, optional
        Ignored.

    Returns
    -------
    Tensor of shape ``indices.shape[:-1] + params.shape[batch_dims + m:]``.

    Raises
    ------
    InvalidArgumentError
        If `indices` is a scalar or not of an integer dtype, ``m`` exceeds the
        rank of `params` ("index innermost dimension length must be <= params
        rank; saw: 3 vs. 2"), `batch_dims` is out of range or the batch
        dimensions differ, or a tuple is out of range ("indices[1] = [2, 0]
        does not index into param shape [2,3]"), all checked before any work.

    Notes
    -----
    When the tuples address whole rows (``m == 1`` and no batch dimensions)
    the gradient w.r.t. `params` is an :class:`~sparsegrad.IndexedSlices`,
    one row per tuple, as TensorFlow's: cost O(tuples x row width).
    Otherwise it is dense, of the shape of `params` (cost O(params.size)).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> p = sg.Variable([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    >>> sg.gather_nd(p, [[1, 2], [0, 0]]).numpy()
    array([5., 0.])
    >>> with sg.GradientTape() as tape:
    ...     loss = sg.reduce_sum(sg.gather_nd(p, [[1], [1]]))
    >>> g = tape.gradient(loss, p)
    >>> type(g).__name__, g.indices.numpy()
    ('IndexedSlices', array([1, 1]))
    """
    del name
    p = as_borrowed_tensor(params, name="params")
    idx = index_tensor(indices)
    if idx.ndim == 0:
        raise InvalidArgumentError("gather_nd: indices must be at least a vector")
    b = _int_argument(batch_dims, "batch_dims")
    if not 0 <= b < idx.ndim or b > p.ndim:
        raise InvalidArgumentError(
            f"gather_nd: batch_dims must be in [0, {min(idx.ndim - 1, p.ndim)}] "
            f"for indices of rank {idx.ndim} and params of rank {p.ndim}, got {b}"
        )
    if p.shape[:b] != idx.shape[:b]:
        raise InvalidArgumentError(
            f"gather_nd: params.shape[:{b}] = {p.shape[:b]} and indices.shape[:{b}]"
            f" = {idx.shape[:b]} must be equal (batch_dims={b})"
        )
    m = idx.shape[-1]
    if m > p.ndim - b:
        raise InvalidArgumentError(
            f"index innermost dimension length must be <= params rank; saw: {m} "
            f"vs. {p.ndim - b}"
        )
    dims = p.shape[b : b + m]
    n_tuples = int(np.prod(idx.shape[:-1], dtype=np.int64))
    tuples = idx._value.reshape(n_tuples, m)
    bad = (tuples < 0) | (tuples >= np.array(dims, dtype=np.int64))
    if bad.any():
        k = int(np.flatnonzero(bad.any(axis=1))[0])
        where = ",".join(str(int(i)) for i in np.unravel_index(k, idx.shape[:-1]))
        raise InvalidArgumentError(
            f"indices[{where}] = [{', '.join(str(int(v)) for v in tuples[k])}] does "
            f"not index into param shape [{','.join(str(d) for d in p.shape)}]"
        )
    n_cells = int(np.prod(dims, dtype=np.int64))
    if m:
        rows = np.ravel_multi_index(tuple(tuples.T.astype(np.int64)), dims)
    else:
        rows = np.zeros(tuples.shape[0], dtype=np.int64)
    n_batch = int(np.prod(p.shape[:b], dtype=np.int64))
    if b:  # entry k of the batch starts at row k * n_cells
        rows = rows + np.repeat(
            np.arange(n_batch, dtype=np.int64) * n_cells, n_tuples // max(n_batch, 1)
        )
    inner = p.shape[b + m :]
    table = p._value.reshape((n_batch * n_cells,) + inner)
    out = wrap(take(table, rows, 0, backend_of(table)).reshape(idx.shape[:-1] + inner))
    attrs = {"rows": rows, "table_rows": n_batch * n_cells,
             "whole_rows": b == 0 and m == 1}
    record_operation("GatherNd", (p, idx), (out,), attrs)
    return out


@register_gradient("GatherNd")
def _gather_nd_grad(op, grad):
    params, indices = op.inputs
    rows = op.get_attr("rows")
    shape = params.shape
    if op.get_attr("whole_rows"):
        if isinstance(grad, IndexedSlices) and indices.ndim >= 2:
            per_row = wrap(rows.reshape(indices.shape[:-1]))
            return _compose_slices(grad, per_row, shape), None
        values = array_ops.reshape(
            array_ops.densify(grad), (rows.size,) + tuple(shape[1:])
        )
        return IndexedSlices._from_trusted(values, wrap(rows), shape), None
    # the table as gather_nd viewed it: (batch x addressed cells, *slice)
    inner = tuple(op.outputs[0].shape[indices.ndim - 1 :])
    flat = array_ops.reshape(array_ops.densify(grad), (rows.size,) + inner)
    table = (op.get_attr("table_rows"),) + inner
    dense = _scatter_to_dense(flat, wrap(rows), table, 0)
    return array_ops.reshape(dense, shape), None


# -- embedding_lookup --------------------------------------------------------------


def embedding_lookup(params, ids, max_norm=None, name=None, *,
                     partition_strategy="div", dtype=None):
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
        If given, each looked-up row is clipped to L2 norm `max_norm` with
        TensorFlow's formula, ``row * max_norm / maximum(norm, max_norm)``
        (the table itself is not changed): a row whose norm exceeds
        `max_norm` is scaled down to it, the others keep their values up to
        one rounding.  A negative `max_norm` acts as 0 (every row becomes
        zeros), and an infinite one makes every row NaN (``inf / inf``), as
        in TensorFlow.  A zero row stays zeros.  Rows of a float16 or
        bfloat16 table are clipped in float32, then rounded once to the
        result's dtype.
    name : str, optional
        Ignored.
    partition_strategy : {"div", "mod"}, default="div"
        How the rows of a sharded table are spread over its shards.  "div"
        (TensorFlow 2's only layout): each shard holds consecutive ids, the
        first shard ids ``0 .. n // p + (0 < n % p) - 1``.  "mod" (TensorFlow
        1's default): id ``i`` is row ``i // p`` of shard ``i % p``.  Ignored
        for a single table.
    dtype : dtype, optional
        The result's dtype: None (the default) or the table's dtype, as
        TensorFlow gives; float32 for a float16 or bfloat16 table (the
        looked-up rows are converted, exactly, never the table).  Any other
        is refused.

    Returns
    -------
    Tensor of shape ``ids.shape + params.shape[1:]`` and the table's dtype (or `dtype`).

    Raises
    ------
    InvalidArgumentError
        If an id is out of range (``indices[3] = 9 is not in [0, 4)``; for
        shards ``ids[3] = 9 is not in [0, 4)``) or not an integer, or `params`
        is a scalar, or the shards disagree in dtype or row shape, or their
        sizes do not split the table as above, or `partition_strategy` is
        neither "div" nor "mod", or `max_norm` is not a scalar, or `dtype`
        is another than those above (``embedding_lookup: dtype must be None,
        the table's dtype (float32) or float32 for a float16 or bfloat16
        table, got float16``).
    TypeError
        If `max_norm` is not a real number (``embedding_lookup: max_norm must
        be a real number, got 'a'``).

    Notes
    -----
    The gradient w.r.t. `params` (w.r.t. each shard) is an
    :class:`~sparsegrad.IndexedSlices` with one row per id (per id of that
    shard) and the dense shape of the table (shard); forward and gradient cost
    O(ids x row width).  Its values have the result's dtype: a half table
    read with ``dtype=float32`` gets a float32 gradient (not rounded to
    half), as the float32 lookup of the upcast table would.

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
    max_norm = check_max_norm(max_norm, "embedding_lookup")
    if isinstance(params, (list, tuple)):
        if not params:
            raise InvalidArgumentError("embedding_lookup: params is an empty list")
        if len(params) == 1:
            params = params[0]
        else:
            rows = _sharded_lookup(params, ids, partition_strategy, dtype)
            return _clipped(rows, max_norm, _table_rank(params[0]))
    if dtype is not None:   # the message names this op
        p = as_borrowed_tensor(params, "params")
        if p.ndim:
            dtype = output_dtype(dtype, p.dtype, "embedding_lookup")
        params = p
    rows = gather(params, ids, axis=0, dtype=dtype)
    return _clipped(rows, max_norm, _table_rank(params))


def _clipped(rows, max_norm, table_rank):
    """The looked-up `rows` clipped to `max_norm` (None: unchanged): half
    rows in float32, rounded once back to their dtype."""
    if max_norm is None:
        return rows
    ids_rank = rows.ndim - table_rank + 1
    if not is_half(rows.dtype):
        return clip_rows(rows, max_norm, ids_rank)
    wide = array_ops.cast(rows, _FLOAT32)
    return array_ops.cast(clip_rows(wide, max_norm, ids_rank), rows.dtype)


def _sharded_lookup(shards, ids, strategy, dtype):
    """Lookup in a table split by rows ("div" or "mod" layout): one gather per
    shard (its rows in `dtype`, checked here), then the rows are put back in
    the order of `ids`.  Cost O(ids x width)."""
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
    dtype = output_dtype(dtype, first.dtype, "embedding_lookup")
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
    xp = backend_of(*(t._value for t in tensors)).xp
    idx = index_tensor(ids, "ids")
    # host ids beside device shards go to the device, as for one table
    flat = sparse_rows.as_array_of(xp, idx._value)
    sparse_rows.check_in_range(flat, n_rows, "ids")
    flat = flat.reshape(-1)
    # "div": shard s holds ids [start_s, start_s + size_s), and the first
    # `extras` shards have per_shard + 1 rows.  "mod": id i is row i // p of
    # shard i % p.
    big = extras * (per_shard + 1)
    if strategy == "mod":
        shard_of = (flat % n_shards).astype(np.int64)
        local = flat // n_shards
    elif per_shard == 0:
        shard_of = flat.astype(np.int64)
        local = xp.zeros_like(flat)
    else:
        in_big = flat < big
        shard_of = xp.where(
            in_big, flat // (per_shard + 1), extras + (flat - big) // per_shard
        ).astype(np.int64)
        local = xp.where(in_big, flat % (per_shard + 1), (flat - big) % per_shard)
    # stable: each shard's ids keep their order (CuPy's sort is always stable)
    order = (np.argsort(shard_of, kind="stable") if xp is np
             else xp.argsort(shard_of))
    bounds = xp.searchsorted(shard_of[order], xp.arange(n_shards + 1))
    if xp is not np:
        bounds = bounds.get()  # the shard sizes: the gathers' shapes (one copy)
    pieces = []
    for s, t in enumerate(tensors):
        positions = order[int(bounds[s]) : int(bounds[s + 1])]
        pieces.append(gather(t, local[positions].astype(flat.dtype, copy=False),
                             dtype=dtype))
    stacked = array_ops.concat(pieces, axis=0)
    inverse = xp.empty_like(order)
    inverse[order] = xp.arange(order.size, dtype=order.dtype)
    rows = gather(stacked, inverse)
    return array_ops.reshape(rows, idx.shape + first.shape[1:])


def _table_rank(params):
    return params.ndim if hasattr(params, "ndim") else np.ndim(params)
