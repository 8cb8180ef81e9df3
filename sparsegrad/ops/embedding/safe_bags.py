"""safe_embedding_lookup_sparse: embedding bags that skip invalid ids and keep
every row."""

import operator

import numpy as np

from ...errors import InvalidArgumentError
from ...framework.backend import backend_of
from ...framework.dtypes import is_floating
from ...framework.tensor import Tensor, wrap
from ...framework.variable import Variable
from .. import array_ops, math_ops
from .._helpers import as_tensor
from ..sparse_segment_ops import check_combiner
from ..sparse_segment_ops.checks import output_dtype
from .bags import bag_ids, combine, output_buffers, table_backend, table_dtype
from .clipping import check_max_norm

__all__ = ["safe_embedding_lookup_sparse"]

_OP = "safe_embedding_lookup_sparse"


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None,
                                 combiner="mean", default_id=None, max_norm=None,
                                 name=None, *, dtype=None):
    """:func:`embedding_lookup_sparse` that skips invalid ids and keeps every row.

    Entries with a negative id are dropped; unless `combiner` is "sum",
    entries whose weight is not positive are dropped too.  A row left
    without entries gets one entry `default_id` of weight 1, and its output
    row is ``params[default_id]`` (combined), or zeros when `default_id` is
    None.  The output has one row per row of `sparse_ids`, empty rows
    included.

    Parameters
    ----------
    embedding_weights : Variable, Tensor or array_like, or a list of them
        The table, of shape (n_rows, ...), or its shards as
        :func:`embedding_lookup` accepts.
    sparse_ids : scipy.sparse matrix or array, or RaggedTensor
        As in :func:`embedding_lookup_sparse`, 2-D: for a ``scipy.sparse``
        matrix (any format) the columns are the ids and the values their
        weights, entries repeated at one place summed into one (SciPy's
        rule; a matrix's columns are never negative, so only the weights
        prune its entries).  A RaggedTensor's negative ids are skipped; the
        other ids must lie in ``[0, n_rows)``.  At ragged_rank 2 (TensorFlow's
        3-D ids) each inner row is a bag.
    sparse_weights : RaggedTensor or array_like of shape (nnz,), optional
        Only with ragged ids, as in :func:`embedding_lookup_sparse`.  As in
        TensorFlow, the table takes the dtype of weights that have one (a
        RaggedTensor, Tensor or array): a Variable or Tensor table of another
        dtype is an error, an array (or list) table is read in their dtype
        (its looked-up rows are cast, the cost of the rows).  Weights given
        as a Python list, and the values of a ``scipy.sparse``
        `sparse_ids`, are instead cast to the table's dtype (a matrix's dtype
        is a storage choice, float64 by default).
    combiner : {"mean", "sqrtn", "sum"} or None, default="mean"
    default_id : int, optional
        The id of the rows that have no valid entry; by default they give
        zeros.  It must lie in ``[0, n_rows)`` when a row needs it.
    max_norm : float, optional
        As in :func:`embedding_lookup_sparse` (TensorFlow's formula: a
        negative `max_norm` acts as 0, an infinite one makes every looked-up
        row NaN); rows without entries and no `default_id` stay zeros.
    name : str, optional
        Ignored.
    dtype : dtype, optional
        As in :func:`embedding_lookup_sparse`: None (the table's dtype, or
        the weights' as above), that dtype, or float32 when it is float16 or
        bfloat16 (the bags are summed in float32 either way).

    Returns
    -------
    Tensor of shape ``(n_out,) + params.shape[1:]``
        ``n_out`` is the number of rows of `sparse_ids` (``shape[0]`` of a
        matrix, ``nrows()`` of a RaggedTensor).  Its dtype is the table's
        (the weights' for an array table given `sparse_weights`), or
        `dtype`.  For ids
        of ragged_rank 2 the shape is ``(d0, d1) + params.shape[1:]``: d0
        outer rows, d1 the length of the longest one (the bounding shape,
        as TensorFlow's 3-D ids); a place past the end of a shorter outer
        row is an empty bag (``params[default_id]`` or zeros).

    Raises
    ------
    ValueError
        ``Missing embedding_weights [].`` for an empty list of shards; a
        Variable or Tensor table whose dtype is not that of `sparse_weights`
        (``safe_embedding_lookup_sparse: embedding_weights is a Variable of
        dtype float64 but sparse_weights has dtype float32``), and as
        :func:`embedding_lookup_sparse`.
    TypeError
        As :func:`embedding_lookup_sparse`.
    InvalidArgumentError
        For an id at least ``n_rows``, a `default_id` that is not an int or
        not in ``[0, n_rows)`` when a row needs it (``default_id = 9 is not
        in [0, 4)``), a `dtype` other than those above, and as
        :func:`embedding_lookup_sparse`.

    Notes
    -----
    TensorFlow also accepts ids of rank above 2 (reshaped to 2-D and back);
    a ``scipy.sparse`` matrix is 2-D, and RaggedTensor ids of ragged_rank 2
    give the rank-3 case without padding the ids (the work is O(nnz + d0 *
    d1), the size of the output's rows).  Ragged_rank 3 or more is refused
    (TypeError).

    Examples
    --------
    >>> params = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])

    >>> ids = sg.RaggedTensor.from_row_splits([1, 3, -1, 2], [0, 2, 3, 3, 4])
    >>> sg.nn.safe_embedding_lookup_sparse(params, ids).numpy()
    array([[5., 6.],
           [0., 0.],
           [0., 0.],
           [5., 6.]])
    >>> sg.nn.safe_embedding_lookup_sparse(params, ids, default_id=0).numpy()
    array([[5., 6.],
           [1., 2.],
           [1., 2.],
           [5., 6.]])

    Ids of ragged_rank 2 give one bag per inner row, on a (d0, d1) grid:

    >>> ids2 = sg.ragged.constant([[[1, 3], [2]], [[-1]]])
    >>> sg.nn.safe_embedding_lookup_sparse(params, ids2, combiner="sum").numpy()
    array([[[10., 12.],
            [ 5.,  6.]],
    <BLANKLINE>
           [[ 0.,  0.],
            [ 0.,  0.]]])
    """
    del name
    if isinstance(embedding_weights, (list, tuple)) and not embedding_weights:
        raise ValueError(f"Missing embedding_weights {list(embedding_weights)}.")
    combiner = check_combiner(combiner)
    max_norm = check_max_norm(max_norm, _OP)
    if default_id is not None:
        try:
            if isinstance(default_id, (bool, np.bool_)):
                raise TypeError
            default_id = operator.index(default_id)
        except TypeError:
            raise InvalidArgumentError(
                f"{_OP}: default_id must be an int, got {default_id!r}"
            ) from None
    be = table_backend(embedding_weights)
    if dtype is not None:
        dtype = output_dtype(dtype, table_dtype(embedding_weights), _OP)
    ids, splits, weights, lead = bag_ids(
        sparse_ids, sparse_weights, _OP, ("sparse_ids", "sparse_weights"),
        every_row=True, buffers=lambda n: _buffers(embedding_weights, n, be, dtype))
    cast_to = None
    source = getattr(sparse_weights, "values", sparse_weights)
    if sparse_weights is not None and not isinstance(source, (list, tuple)):
        # weights of a dtype of their own (a Python list has none: it is
        # cast to the table's, as the values of a matrix are)
        embedding_weights, cast_to = _table_in_dtype_of(embedding_weights,
                                                        weights.dtype)
        if cast_to is not None and dtype is not None:  # the table read as cast_to
            dtype = output_dtype(dtype, cast_to, _OP)
    n_out = splits.shape[0] - 1
    row_of = np.repeat(np.arange(n_out, dtype=np.int64), np.diff(splits))
    keep = ids >= 0
    if combiner != "sum" and weights is not None:
        keep &= weights > 0
    ids, row_of = ids[keep], row_of[keep]
    counts = np.bincount(row_of, minlength=n_out)
    empty = counts == 0
    if default_id is not None and empty.any():
        _check_default_id(default_id, embedding_weights)
    # Every empty row gets one entry (default_id, or 0 masked out below).
    new_splits = np.zeros(n_out + 1, dtype=np.int64)
    np.cumsum(counts + empty, out=new_splits[1:])
    kept_starts = np.cumsum(counts) - counts
    rank = np.arange(row_of.shape[0]) - kept_starts[row_of]  # place in its row
    positions = new_splits[row_of] + rank
    filled = new_splits[:-1][empty]
    new_ids = np.empty(int(new_splits[-1]), dtype=np.int64)
    new_ids[positions] = ids
    new_ids[filled] = 0 if default_id is None else default_id
    new_weights = None
    if weights is not None:
        new_weights = np.empty(new_ids.shape[0], dtype=weights.dtype)
        new_weights[positions] = weights[keep]
        new_weights[filled] = 1
    out = combine(embedding_weights, new_ids, new_splits, new_weights, combiner,
                  max_norm, cast_to, be=be, dtype=dtype)
    if default_id is None and empty.any():
        # Chosen, not multiplied: a NaN row (max_norm=inf) still gives zeros.
        xp = be.xp
        filled_rows = (~empty).reshape((n_out,) + (1,) * (out.ndim - 1))
        out = math_ops.where(wrap(xp.asarray(filled_rows)), out,
                             wrap(xp.zeros((), out.dtype)))
    if len(lead) > 1:   # ids of ragged_rank 2: one row per inner row's place
        out = array_ops.reshape(out, lead + tuple(out.shape[1:]))
    return out


def _buffers(params, n_out, be, dtype):
    """The output and the row arrays of n_out + 1 entries this op allocates
    (`be`: the table's backend, `dtype`: the output's, None for the
    table's)."""
    what = f"{_OP}: the {n_out} rows of sparse_ids"
    return (output_buffers(params, n_out, _OP, be, dtype)
            + [((n_out + 1,), np.int64, what)] * 4)


def _table_in_dtype_of(params, dtype):
    """TensorFlow's rule: the table is converted to the dtype of the
    weights.  ``(params, dtype to cast looked-up rows to or None)``."""
    shards = list(params) if isinstance(params, (list, tuple)) else [params]
    cast_to = None
    for k, p in enumerate(shards):
        label = f"embedding_weights[{k}]" if isinstance(params, (list, tuple)) \
            else "embedding_weights"
        if isinstance(p, (Variable, Tensor)):
            if p.dtype != dtype:
                raise ValueError(
                    f"{_OP}: {label} is a {type(p).__name__} of dtype {p.dtype} "
                    f"but sparse_weights has dtype {dtype}; they must match, as "
                    f"in TensorFlow (cast one of them)"
                )
        elif isinstance(p, np.ndarray) or backend_of(p).on_gpu:
            if p.dtype != dtype:
                cast_to = dtype
        else:  # a Python list: converted to the weights' dtype, as TensorFlow does
            shards[k] = as_tensor(p, dtype=dtype, name=label)
    if cast_to is not None and not is_floating(dtype):
        raise ValueError(
            f"{_OP}: sparse_weights has dtype {dtype}; an embedding table can "
            f"only be read in a floating dtype"
        )
    return (shards if isinstance(params, (list, tuple)) else shards[0]), cast_to


def _check_default_id(default_id, params):
    """`default_id` is looked up: it must be a row of the table."""
    shards = params if isinstance(params, (list, tuple)) else [params]
    shapes = [p.shape if hasattr(p, "shape") else np.shape(p) for p in shards]
    if any(len(s) == 0 for s in shapes):
        return  # a scalar table: the lookup reports it
    n_rows = sum(int(s[0]) for s in shapes)
    if not 0 <= default_id < n_rows:
        raise InvalidArgumentError(
            f"{_OP}: default_id = {default_id} is not in [0, {n_rows})"
        )
