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
from ...framework.tensor import Tensor
from ...framework.variable import Variable
from .. import array_ops
from .._helpers import backend_for, backend_of_arguments
from ..sparse_segment_ops import bags_on, check_bag_splits, check_combiner
from .clipping import check_max_norm, clip_rows
from .lookups import embedding_lookup

__all__ = ["embedding_lookup_sparse", "table_backend"]


def embedding_lookup_sparse(params, sp_ids, sp_weights=None, combiner="mean",
                            max_norm=None, name=None):
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
        The table (float32, float64 or float16), or its shards split by rows
        as :func:`embedding_lookup` accepts ("div" layout).  An ndarray is
        read in place, not copied.
    sp_ids : scipy.sparse matrix or array, or RaggedTensor
        A 2-D ``scipy.sparse`` matrix of any format (CSR, CSC, COO, BSR, DOK,
        LIL, DIA; matrix or array): the column of each stored entry is an id
        and its value the id's weight (a matrix of ones gives the unweighted
        result).  Every stored entry counts once: entries repeated at one
        ``(row, column)`` are one id repeated in the bag, each with its own
        weight (as TensorFlow counts an id repeated in a ``SparseTensor``
        row; not summed first, which would change "sqrtn"), and an explicit
        zero is an id of weight 0.  Every format holding the same entries
        gives the same result.  Or a rank-2
        :class:`~sparsegrad.RaggedTensor` of int32/int64 ids.  Ids lie in
        ``[0, n_rows)``.
    sp_weights : RaggedTensor or array_like of shape (nnz,), optional
        Only with ragged ids: a RaggedTensor with the row splits of `sp_ids`,
        or one weight per id.  None means ones.  Weights are constants: they
        get no gradient.
    combiner : {"mean", "sqrtn", "sum"} or None, default="mean"
        None means "mean".
    max_norm : float, optional
        Each looked-up embedding is clipped to norm `max_norm` before it is
        combined, as :func:`embedding_lookup` does (TensorFlow's formula: a
        negative `max_norm` acts as 0, an infinite one gives NaN).
    name : str, optional
        Ignored.

    Returns
    -------
    Tensor of shape ``(n_out,) + params.shape[1:]`` and the dtype of `params`
        For a ``scipy.sparse`` `sp_ids`, ``n_out = sp_ids.shape[0]``: every
        row of the matrix has its output row, empty rows give zeros.  This
        differs from TensorFlow's SparseTensor path, which drops the empty
        rows after the last row holding an id.  For a RaggedTensor `sp_ids`,
        ``n_out`` is the last row holding an id plus one, as in TensorFlow
        (leading and interior empty rows give zeros).  Bags are accumulated
        in the dtype of `params`, in the order of the ids (a matrix's
        values are cast to that dtype; a CSR or COO row is read in its
        stored order, a CSC one by column).

    Raises
    ------
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
        not split a table, or an output larger than the memory the process
        has.

    Notes
    -----
    The gradient w.r.t. `params` is an :class:`~sparsegrad.IndexedSlices`
    over the sorted distinct ids (with `max_norm` or shards, one row per id
    occurrence): forward and gradient cost O(nnz x row width), never
    O(table rows).  A matrix of another format than CSR is read into CSR
    arrays first, O(nnz + n_out) (a sort of its entries by row when they
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
    """
    del name
    op = "embedding_lookup_sparse"
    combiner = check_combiner(combiner)
    max_norm = check_max_norm(max_norm, op)
    be = table_backend(params)
    ids, splits, weights = bag_ids(
        sp_ids, sp_weights, op, ("sp_ids", "sp_weights"),
        buffers=lambda n_out: output_buffers(params, n_out, op, be))
    # the structure check put a matrix's ids below its number of columns
    ids_below = sp_ids.shape[1] if scipy_input.is_scipy_sparse(sp_ids) else None
    return combine(params, ids, splits, weights, combiner, max_norm,
                   ids_below=ids_below, be=be)


def _first_table(params):
    """The table, or the first of its shards, as an array (or array_like)."""
    first = params[0] if isinstance(params, (list, tuple)) and params else params
    return first._value if isinstance(first, (Variable, Tensor)) else first


def table_backend(params):
    """The one choice of a bag op: the backend of its table (of its first
    shard); the ids go to that device."""
    return backend_of_arguments(_first_table(params))


def output_buffers(params, n_out, op, be):
    """The ``(shape, dtype, what)`` of a bag op's output of `n_out` rows, for
    :func:`~sparsegrad.framework.buffers.check_allocation` (none for a table
    on the GPU, or one the op will reject); `be`: the table's backend."""
    table = _first_table(params)
    if be.on_gpu or not hasattr(table, "shape") or len(table.shape) < 1:
        return []
    return [((n_out,) + tuple(table.shape[1:]), table.dtype,
             f"{op}: the output of {n_out} bags")]


def combine(params, ids, splits, weights, combiner, max_norm, cast_to=None,
            ids_below=None, *, be):
    """The bags of checked ids, splits and weights (ndarrays): through
    embedding_bag, or for shards, `max_norm` or `cast_to` (a dtype the rows
    are cast to first) over the looked-up rows.  `ids_below`: a bound the
    ids are already known to respect (see embedding_bag); `be`: the table's
    backend (:func:`table_backend`), where the ids go."""
    first = params[0] if isinstance(params, (list, tuple)) and params else params
    ids, splits, weights = _ids_to_device_of(be, ids, splits, weights)
    sharded = isinstance(params, (list, tuple)) and len(params) != 1
    if max_norm is None and cast_to is None and not sharded:
        return bags_on(be, first, ids, splits, weights, combiner, ids_below)
    # The rows go through embedding_lookup (its shard layout), the cast and
    # the clipping, then one bag per row over those rows.
    rows = embedding_lookup(params, ids)
    if cast_to is not None:
        rows = array_ops.cast(rows, cast_to)
    if max_norm is not None:
        rows = clip_rows(rows, max_norm, 1)
    positions = be.xp.arange(ids.shape[0], dtype=np.int64)
    return bags_on(be, rows, positions, splits, weights, combiner)


def _ids_to_device_of(be, ids, splits, weights):
    """The ids of a ``scipy.sparse`` matrix (always on the host) copied to the
    GPU when the table lives there (`be`, its backend): the one upload of
    this op, O(nnz)."""
    if not be.on_gpu or backend_for(ids).on_gpu:
        return ids, splits, weights
    return (be.asarray(ids), be.asarray(splits),
            None if weights is None else be.asarray(weights))


def bag_ids(sp_ids, sp_weights, op, names, every_row=False, buffers=None):
    """``(ids, splits, weights or None)`` of a bag op's ids and weights.

    `sp_ids` is a ``scipy.sparse`` matrix (every row kept; its stored entries
    as :func:`~sparsegrad.framework.scipy_input.check` reads them) or a
    RaggedTensor (trailing empty rows dropped unless
    `every_row`).  `names` are the two arguments' names for the messages;
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
        return csr.indices, csr.indptr, weights
    # A RaggedTensor, duck-typed: sparsegrad.ops may not import
    # sparsegrad.ragged (tests/test_layering.py).
    if not (hasattr(sp_ids, "row_splits") and hasattr(sp_ids, "values")):
        raise TypeError(
            f"{ids_name} must be SparseTensor (a scipy.sparse matrix) or "
            f"RaggedTensor, got {type(sp_ids).__name__}"
        )
    if getattr(sp_ids, "ragged_rank", 1) != 1:
        raise TypeError(
            f"{op}: RaggedTensors of ragged_rank >= 2 are not supported by {op} "
            f"yet (got {ids_name} of ragged_rank {sp_ids.ragged_rank})"
        )
    splits = sparse_rows.as_index_array(sp_ids.row_splits,
                                        f"{ids_name}.row_splits")
    ids = _ragged_values(sp_ids.values, f"{ids_name}.values")
    ids = sparse_rows.as_index_array(ids, f"{ids_name}.values")
    check_bag_splits(splits, ids.shape[0], op, f"{ids_name}.row_splits")
    weights = None
    if sp_weights is not None:
        weights = _ragged_weights(sp_weights, splits, ids.shape[0], op, names)
    if not every_row:
        # TensorFlow's rows: up to the last row that holds an id.
        filled = np.flatnonzero(np.diff(splits))
        n_out = int(filled[-1]) + 1 if filled.size else 0
        splits = splits[: n_out + 1]
    check_allocation(*buffers(splits.shape[0] - 1))
    return ids, splits, weights


def _ragged_weights(sp_weights, splits, nnz, op, names):
    ids_name, weights_name = names
    if scipy_input.is_scipy_sparse(sp_weights):
        raise InvalidArgumentError(
            f"{op}: {weights_name} must be a RaggedTensor or one weight per id "
            f"when {ids_name} is a RaggedTensor, got a scipy.sparse matrix"
        )
    if hasattr(sp_weights, "row_splits") and hasattr(sp_weights, "values"):
        if getattr(sp_weights, "ragged_rank", 1) != 1:
            raise TypeError(
                f"{op}: RaggedTensors of ragged_rank >= 2 are not supported by "
                f"{op} yet (got {weights_name} of ragged_rank "
                f"{sp_weights.ragged_rank})"
            )
        w_splits = sparse_rows.as_array_of(backend_for(splits).xp,
                                           sp_weights.row_splits)
        if w_splits.shape != splits.shape or not bool((w_splits == splits).all()):
            raise InvalidArgumentError(
                f"{op}: {weights_name} must have the row splits of {ids_name}"
            )
        sp_weights = sp_weights.values
    weights = _ragged_values(sp_weights, weights_name)
    if weights.shape != (nnz,):
        raise InvalidArgumentError(
            f"{op}: {weights_name} must hold one weight per id ({nnz}), got "
            f"shape {weights.shape}"
        )
    if weights.dtype.kind not in "iuf":
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
