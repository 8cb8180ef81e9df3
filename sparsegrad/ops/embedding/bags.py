"""Embedding bags: embedding_lookup_sparse over ``scipy.sparse`` or ragged ids.

A ``scipy.sparse`` batch of ids is read once, where it enters, by
:mod:`sparsegrad.framework.scipy_input`: its structure is checked, then its
stored entries are read row by row, each one an id (repeats kept, as in a
TensorFlow ``SparseTensor``), so every format holding the same entries gives
the same bags.
"""

import numpy as np

from ...errors import InvalidArgumentError
from ...framework import scipy_input, sparse_rows
from ...framework.buffers import check_allocation
from ...framework.dtypes import FLOAT_DTYPES, is_floating, is_half
from ...framework.tensor import Tensor, convert_to_tensor
from ...framework.variable import Variable
from .. import array_ops
from .._helpers import backend_for, backend_of_arguments
from ..sparse_segment_ops import bags_on, check_bag_splits, check_combiner
from ..sparse_segment_ops.checks import output_dtype
from .clipping import check_max_norm, clip_rows
from .lookups import embedding_lookup

__all__ = ["embedding_lookup_sparse", "table_backend", "table_dtype"]

_FLOAT32 = FLOAT_DTYPES[0]


def embedding_lookup_sparse(params, sp_ids, sp_weights=None, combiner="mean",
                            max_norm=None, name=None, *, dtype=None):
    """Combine the embeddings of each row of a sparse or ragged batch of ids.

    Row ``r`` of the result combines ``params[id]`` over the ids ``id`` of
    row ``r`` of `sp_ids`, each weighted by its weight ``w``:
    "sum" is ``sum(w * params[id])``, "mean" divides it by ``sum(w)`` and
    "sqrtn" by ``sqrt(sum(w ** 2))``; a zero denominator gives zeros (no
    NaN).  Without weights, ``w = 1``: mean and sqrtn divide by the number
    of ids of the row (repeats count each time) and its square root.

    Parameters
    ----------
    params : Variable, Tensor or array_like of shape (n_rows, ...), or a list of them
        The table (float32, float64, float16 or bfloat16), or its shards
        split by rows as :func:`embedding_lookup` accepts ("div" layout).
        An ndarray is read in place, not copied.
    sp_ids : scipy.sparse matrix or array, or RaggedTensor
        A 2-D ``scipy.sparse`` matrix of any format (CSR, CSC, COO, BSR, DOK,
        LIL, DIA; matrix or array): the column of each stored entry is an id
        and its value the id's weight (a matrix of ones gives the unweighted
        result).  Every stored entry counts once: entries repeated at one
        ``(row, column)`` are one id repeated in the bag, each with its own
        weight (as TensorFlow counts an id repeated in a ``SparseTensor``
        row; not summed first, which would change "sqrtn"), and an explicit
        zero is an id of weight 0.  Every format holding the same entries
        gives the same result.  Or a :class:`~sparsegrad.RaggedTensor` of
        int32/int64 ids of ragged_rank 1 (rank 2: a bag per row) or 2 (rank
        3, TensorFlow's 3-D ``SparseTensor`` ids: a bag per outer row,
        holding every id of its inner rows).  Ids lie in ``[0, n_rows)``.
    sp_weights : RaggedTensor or array_like of shape (nnz,), optional
        Only with ragged ids: a RaggedTensor with the row splits of `sp_ids`
        (every level), or one weight per id.  None means ones.  Weights are
        constants: they get no gradient.
    combiner : {"mean", "sqrtn", "sum"} or None, default="mean"
        None means "mean".
    max_norm : float, optional
        Each looked-up embedding is clipped to norm `max_norm` before it is
        combined, as :func:`embedding_lookup` does (TensorFlow's formula: a
        negative `max_norm` acts as 0, an infinite one gives NaN; half rows
        in float32).
    name : str, optional
        Ignored.
    dtype : dtype, optional
        The result's dtype: None (the default) or the dtype of `params`, as
        TensorFlow gives; float32 for a float16 or bfloat16 table.  Either
        way a half table's bags are summed in float32 (its looked-up rows
        converted, never the table); the half result is that sum rounded
        once.  Any other dtype is refused.

    Returns
    -------
    Tensor of shape ``(n_out,) + params.shape[1:]`` and dtype `dtype`
        (by default the dtype of `params`).
        For a ``scipy.sparse`` `sp_ids`, ``n_out = sp_ids.shape[0]``: every
        row of the matrix has its output row, empty rows give zeros.  This
        differs from TensorFlow's SparseTensor path, which drops the empty
        rows after the last row holding an id.  For a RaggedTensor `sp_ids`,
        ``n_out`` is the last (outer) row holding an id plus one, as in
        TensorFlow (leading and interior empty rows give zeros).  Bags are accumulated
        in the dtype of `params` (float32 for float16 and bfloat16), in the
        order of the ids (a matrix's values are cast to that dtype; a CSR or
        COO row is read in its stored order, a CSC one by column).

    Raises
    ------
    TypeError
        For RaggedTensor ids of ragged_rank 3 or more.
    ValueError
        For an unknown combiner (``combiner must be one of 'mean', 'sqrtn'
        or 'sum', got max``), or weights given next to a ``scipy.sparse``
        `sp_ids` (its stored values are the weights).
    TypeError
        If `sp_ids` is neither a ``scipy.sparse`` matrix nor a RaggedTensor,
        or `max_norm` is not a real number.
    InvalidArgumentError
        For an id out of range (``ids[3] = 9 is not in [0, 4)``), ids of a
        non-integer dtype, a malformed matrix (checked before any use: an
        ``indptr`` of the wrong length, not from 0 or decreasing, index and
        value arrays of different lengths, an index outside the shape, e.g.
        ``embedding_lookup_sparse: sp_ids.indptr must have shape[0] + 1 = 4
        entries, got 3``), a matrix that is not 2-D or holds complex values,
        weights that do not match the ids, scalar `params`, shards that do
        not split a table, a `dtype` other than those above (``dtype must be
        None, the table's dtype (float32) or float32 for a float16 or
        bfloat16 table, got float64``), or an output larger than the
        memory the process has.

    Notes
    -----
    The gradient w.r.t. `params` is an :class:`~sparsegrad.IndexedSlices`
    over the sorted distinct ids (with `max_norm` or shards, one row per id
    occurrence): forward and gradient cost O(nnz x row width), never
    O(table rows).  Its values have the result's dtype: a half table read
    with ``dtype=float32`` gets the float32 gradient of the float32 bags,
    not rounded to half.  A matrix of another format than CSR is read into
    CSR arrays first, O(nnz + n_out) (a sort of its entries by row when they
    are not in row order).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> import sparsegrad as sg
    >>> params = sg.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    >>> ids = sp.csr_array(([1.0, 1.0, 1.0, 1.0], [0, 1, 3, 2], [0, 2, 3, 4, 4]),
    ...                    shape=(4, 5))
    >>> sg.nn.embedding_lookup_sparse(params, ids, combiner="sum").numpy()
    array([[4., 6.],
           [7., 8.],
           [5., 6.],
           [0., 0.]])

    The stored values weight the ids:

    >>> weighted = sp.csr_array(([0.1, 1.0, 0.5, 2.0], [0, 1, 3, 2], [0, 2, 3, 4]))
    >>> sg.nn.embedding_lookup_sparse(params, weighted, combiner="mean").numpy()
    array([[2.81818182, 3.81818182],
           [7.        , 8.        ],
           [5.        , 6.        ]])
    >>> with sg.GradientTape() as tape:
    ...     y = sg.nn.embedding_lookup_sparse(params, weighted, combiner="sum")
    >>> g = tape.gradient(y, params)
    >>> g.indices.numpy().tolist(), g.values.numpy()
    ([0, 1, 2, 3], array([[0.1, 0.1],
           [1. , 1. ],
           [2. , 2. ],
           [0.5, 0.5]]))

    Two entries at one place are the id twice, in every format (``[7, 8] *
    2 / sqrt(2)``; SciPy's ``tocsr()`` would sum them into one entry of
    weight 2 first, and give ``[7, 8]``):

    >>> twice = sp.coo_array(([1.0, 1.0], ([0, 0], [3, 3])), shape=(1, 4))
    >>> sg.nn.embedding_lookup_sparse(params, twice, combiner="sqrtn").numpy()
    array([[ 9.89949494, 11.3137085 ]])
    >>> as_csr = sp.csr_array(([1.0, 1.0], [3, 3], [0, 2]), shape=(1, 4))
    >>> sg.nn.embedding_lookup_sparse(params, as_csr, combiner="sqrtn").numpy()
    array([[ 9.89949494, 11.3137085 ]])

    Ids of ragged_rank 2 combine every id of an outer row:

    >>> ids = sg.ragged.constant([[[0, 1], [3]], [], [[2], []]])
    >>> sg.nn.embedding_lookup_sparse(params, ids, None, combiner="sum").numpy()
    array([[11., 14.],
           [ 0.,  0.],
           [ 5.,  6.]])
    """
    del name
    op = "embedding_lookup_sparse"
    combiner = check_combiner(combiner)
    max_norm = check_max_norm(max_norm, op)
    be = table_backend(params)
    if dtype is not None:
        dtype = output_dtype(dtype, table_dtype(params), op)
    ids, splits, weights, _ = bag_ids(
        sp_ids, sp_weights, op, ("sp_ids", "sp_weights"),
        buffers=lambda n_out: output_buffers(params, n_out, op, be, dtype))
    # the structure check put a matrix's ids below its number of columns
    ids_below = sp_ids.shape[1] if scipy_input.is_scipy_sparse(sp_ids) else None
    return combine(params, ids, splits, weights, combiner, max_norm,
                   ids_below=ids_below, be=be, dtype=dtype)


def _first_table(params):
    """The table, or the first of its shards, as an array (or array_like)."""
    first = params[0] if isinstance(params, (list, tuple)) and params else params
    return first._value if isinstance(first, (Variable, Tensor)) else first


def table_dtype(params):
    """The dtype of a bag op's table (of its first shard), read without
    recording a Variable read."""
    first = _first_table(params)
    if hasattr(first, "dtype"):
        return first.dtype
    return convert_to_tensor(first, name="params").dtype


def table_backend(params):
    """The one choice of a bag op: the backend of its table (of its first
    shard); the ids go to that device."""
    return backend_of_arguments(_first_table(params))


def output_buffers(params, n_out, op, be, dtype=None):
    """The ``(shape, dtype, what)`` of a bag op's output of `n_out` rows (and
    of a half table's float32 sums), for
    :func:`~sparsegrad.framework.buffers.check_allocation` (none for a table
    on the GPU, or one the op will reject); `be`: the table's backend,
    `dtype`: the output's (None: the table's)."""
    table = _first_table(params)
    if be.on_gpu or not hasattr(table, "shape") or len(table.shape) < 1:
        return []
    shape = (n_out,) + tuple(table.shape[1:])
    what = f"{op}: the output of {n_out} bags"
    out = [(shape, table.dtype if dtype is None else dtype, what)]
    if is_half(table.dtype):
        out.append((shape, _FLOAT32, what))
    return out


def combine(params, ids, splits, weights, combiner, max_norm, cast_to=None,
            ids_below=None, *, be, dtype=None):
    """The bags of checked ids, splits and weights (ndarrays): through
    embedding_bag, or for shards, `max_norm` or `cast_to` (a dtype the rows
    are cast to first) over the looked-up rows.  `ids_below`: a bound the
    ids are already known to respect (see embedding_bag); `be`: the table's
    backend (:func:`table_backend`), where the ids go; `dtype`: the output's
    (None: the table's, or `cast_to`), checked by the caller."""
    first = params[0] if isinstance(params, (list, tuple)) and params else params
    ids, splits, weights = _ids_to_device_of(be, ids, splits, weights)
    sharded = isinstance(params, (list, tuple)) and len(params) != 1
    if max_norm is None and cast_to is None and not sharded:
        return bags_on(be, first, ids, splits, weights, combiner, ids_below,
                       dtype=dtype)
    # The rows go through embedding_lookup (its shard layout), the cast and
    # the clipping, then one bag per row over those rows.
    if cast_to is None:
        rows = embedding_lookup(params, ids, dtype=dtype)
    else:
        rows = array_ops.cast(embedding_lookup(params, ids), cast_to)
        if dtype is not None and dtype != rows.dtype:  # float32 from half
            rows = array_ops.cast(rows, dtype)
    out_dtype = rows.dtype
    if max_norm is not None:
        if is_half(rows.dtype):  # clipped and summed in float32, rounded once
            rows = array_ops.cast(rows, _FLOAT32)
        rows = clip_rows(rows, max_norm, 1)
    positions = be.xp.arange(ids.shape[0], dtype=np.int64)
    out = bags_on(be, rows, positions, splits, weights, combiner)
    return out if out.dtype == out_dtype else array_ops.cast(out, out_dtype)


def _ids_to_device_of(be, ids, splits, weights):
    """The ids of a ``scipy.sparse`` matrix (always on the host) copied to the
    GPU when the table lives there (`be`, its backend): the one upload of
    this op, O(nnz)."""
    if not be.on_gpu or backend_for(ids).on_gpu:
        return ids, splits, weights
    return (be.asarray(ids), be.asarray(splits),
            None if weights is None else be.asarray(weights))


def bag_ids(sp_ids, sp_weights, op, names, every_row=False, buffers=None):
    """``(ids, splits, weights or None, lead)`` of a bag op's ids and weights.

    `sp_ids` is a ``scipy.sparse`` matrix (every row kept; its stored entries
    as :func:`~sparsegrad.framework.scipy_input.check` reads them) or a
    RaggedTensor (trailing empty rows dropped unless `every_row`).  At
    ragged_rank 2 the bags are the outer rows (every id of an outer row, as
    TensorFlow combines a 3-D ``SparseTensor``), or with `every_row` the
    inner rows laid on a ``(d0, d1)`` grid (d1 the longest outer row; a
    missing inner row is an empty bag), as ``safe_embedding_lookup_sparse``
    reshapes 3-D ids.  `lead` is the output's leading shape: ``(n_bags,)``
    or ``(d0, d1)``.  `names` are the two arguments' names for the messages;
    ``buffers(n_out)`` lists the caller's output buffers, checked with the
    reading's before anything data-sized is allocated.
    """
    ids_name, weights_name = names
    buffers = buffers or (lambda n_out: [])
    if scipy_input.is_scipy_sparse(sp_ids):
        if sp_weights is not None:
            raise ValueError(
                f"{op}: {weights_name} must be None when {ids_name} is a "
                f"scipy.sparse matrix: its stored values are the weights"
            )
        checked = scipy_input.check(sp_ids, ids_name, op)
        csr = checked.to_csr(*buffers(checked.shape[0]))
        # All ones (the usual "ids only" matrix): the unweighted bags, the
        # same numbers without a multiply per element.
        weights = None if np.all(csr.data == 1) else csr.data
        return csr.indices, csr.indptr, weights, (checked.shape[0],)
    ids, nested = _ragged_ids(sp_ids, op, ids_name)
    weights = None
    if sp_weights is not None:
        weights = _ragged_weights(sp_weights, nested, ids.shape[0], op, names)
    if len(nested) == 1:
        splits = nested[0]
    elif every_row:
        return _grid_bags(ids, nested, weights, buffers)
    else:
        # every id of an outer row: the inner splits at the outer splits
        outer, inner = nested
        splits = inner[outer]
    if not every_row:
        # TensorFlow's rows: up to the last row that holds an id.
        filled = np.flatnonzero(np.diff(splits))
        n_out = int(filled[-1]) + 1 if filled.size else 0
        splits = splits[: n_out + 1]
    check_allocation(*buffers(splits.shape[0] - 1))
    return ids, splits, weights, (splits.shape[0] - 1,)


def _ragged_ids(sp_ids, op, ids_name):
    """The checked flat ids and row splits (outermost first) of RaggedTensor
    ids of ragged_rank 1 or 2."""
    # A RaggedTensor, duck-typed: sparsegrad.ops may not import
    # sparsegrad.ragged (tests/test_layering.py).
    if not (hasattr(sp_ids, "row_splits") and hasattr(sp_ids, "values")):
        raise TypeError(
            f"{ids_name} must be SparseTensor (a scipy.sparse matrix) or "
            f"RaggedTensor, got {type(sp_ids).__name__}"
        )
    rank = getattr(sp_ids, "ragged_rank", 1)
    if rank > 2:
        raise TypeError(
            f"{op}: RaggedTensors of ragged_rank >= 3 are not supported by {op} "
            f"(got {ids_name} of ragged_rank {rank})"
        )
    names = ([f"{ids_name}.row_splits"] if rank == 1 else
             [f"{ids_name}.nested_row_splits[{k}]" for k in range(rank)])
    nested = [sparse_rows.as_index_array(spl, name)
              for spl, name in zip(_nested_splits(sp_ids), names)]
    flat = sp_ids.values if rank == 1 else sp_ids.flat_values
    ids = _ragged_values(flat, f"{ids_name}.values")
    ids = sparse_rows.as_index_array(ids, f"{ids_name}.values")
    # innermost first: each level's splits cover the rows of the next
    n_below = ids.shape[0]
    for spl, name in reversed(list(zip(nested, names))):
        check_bag_splits(spl, n_below, op, name)
        n_below = spl.shape[0] - 1
    return ids, nested


def _nested_splits(rt):
    return tuple(getattr(rt, "nested_row_splits", (rt.row_splits,)))


def _grid_bags(ids, nested, weights, buffers):
    """The inner rows of ids of ragged_rank 2 as bags on a ``(d0, d1)`` grid,
    row-major (d1: the longest outer row); a place with no inner row is an
    empty bag.  The ids keep their order: O(nvals + d0 * d1), no padding."""
    outer, inner = (np.asarray(spl, dtype=np.int64) for spl in nested)
    d0 = outer.shape[0] - 1
    lengths = np.diff(outer)
    d1 = int(lengths.max()) if d0 else 0
    n_out = d0 * d1                     # Python ints: no overflow
    check_allocation(*buffers(n_out))
    row_of = np.repeat(np.arange(d0, dtype=np.int64), lengths)
    slot = row_of * d1 + (np.arange(row_of.shape[0]) - outer[row_of])
    counts = np.zeros(n_out, dtype=np.int64)
    counts[slot] = np.diff(inner)
    splits = np.zeros(n_out + 1, dtype=np.int64)
    np.cumsum(counts, out=splits[1:])
    return ids, splits, weights, (d0, d1)


def _ragged_weights(sp_weights, nested, nnz, op, names):
    ids_name, weights_name = names
    if scipy_input.is_scipy_sparse(sp_weights):
        raise InvalidArgumentError(
            f"{op}: {weights_name} must be a RaggedTensor or one weight per id "
            f"when {ids_name} is a RaggedTensor, got a scipy.sparse matrix"
        )
    if hasattr(sp_weights, "row_splits") and hasattr(sp_weights, "values"):
        w_nested = _nested_splits(sp_weights)
        if len(w_nested) != len(nested):
            raise InvalidArgumentError(
                f"{op}: {weights_name} must have the ragged_rank of {ids_name} "
                f"({len(nested)}), got {len(w_nested)}"
            )
        xp = backend_for(nested[0]).xp
        for w_splits, splits in zip(w_nested, nested):
            w_splits = sparse_rows.as_array_of(xp, w_splits)
            if w_splits.shape != splits.shape or not bool((w_splits == splits).all()):
                raise InvalidArgumentError(
                    f"{op}: {weights_name} must have the row splits of {ids_name}"
                )
        sp_weights = (sp_weights.values if len(w_nested) == 1
                      else sp_weights.flat_values)
    weights = _ragged_values(sp_weights, weights_name)
    if weights.shape != (nnz,):
        raise InvalidArgumentError(
            f"{op}: {weights_name} must hold one weight per id ({nnz}), got "
            f"shape {weights.shape}"
        )
    if weights.dtype.kind not in "iuf" and not is_floating(weights.dtype):
        raise InvalidArgumentError(
            f"{op}: {weights_name} must be real numbers, got dtype {weights.dtype}"
        )
    return weights


def _ragged_values(values, name):
    """The values of a ragged argument as an array (a Tensor unwrapped)."""
    del name
    if isinstance(values, Variable):
        values = values.value()
    if isinstance(values, Tensor):
        return values._value
    return values if backend_for(values).on_gpu else np.asarray(values)
