"""``embedding_bag``: bags over row splits, with optional per-entry weights
(what :func:`sparsegrad.nn.embedding_lookup_sparse` runs), on the bag
primitive."""

import numpy as np

from ...autodiff.recording import is_recording
from ...errors import InvalidArgumentError
from ...framework import buffers, sparse_rows
from ...framework.dtypes import is_floating
from .._device import check_device_dtype
from .._helpers import as_tensor, backend_of_arguments
from .checks import (
    check_bag_splits,
    check_combiner,
    check_float,
    index_input,
    output_dtype,
    table_tensor,
    work_dtype,
)
from .primitive import bag_buffers, run_bag

__all__ = ["embedding_bag", "bags_on"]


def embedding_bag(params, ids, splits, weights=None, combiner="sum", name=None,
                  ids_below=None, *, dtype=None):
    """Combine the rows of a table named by each bag of ids.

    Bag ``s`` holds the entries ``k`` in ``[splits[s], splits[s + 1])``;
    ``output[s] = combine(weights[k] * params[ids[k]])`` with the combiners
    of :func:`sparsegrad.nn.embedding_lookup_sparse` (which validates its
    ``scipy.sparse`` or ragged ids and calls this).

    Parameters
    ----------
    params : Variable, Tensor or array_like of shape (n_rows, ...)
        float32, float64, float16 or bfloat16 (integers with
        ``combiner="sum"`` and no weights).  An ndarray is read in place,
        not copied.
    ids : array_like of shape (nnz,), int32 or int64
        Rows of `params`, in ``[0, n_rows)``.
    splits : array_like of shape (n_bags + 1,), int32 or int64
        Non-decreasing, from 0 to ``nnz``.
    weights : array_like of shape (nnz,), optional
        Real weights, cast to the dtype of `params` (to float32 for a half
        table; a constant: no gradient).  None means ones.
    combiner : {"sum", "mean", "sqrtn"}, default="sum"
        mean divides by the sum of the weights (the count when unweighted),
        sqrtn by the square root of the sum of their squares; a zero
        denominator gives zeros (``div_no_nan``).
    name : str, optional
        Ignored.
    ids_below : int, optional
        A bound the caller has already checked every id against (the
        number of columns of a ``scipy.sparse`` matrix whose structure it
        checked); when it is at most ``n_rows``, the ids are not scanned
        again.
    dtype : dtype, optional
        The result's dtype: None (the default) or the dtype of `params`;
        float32 for a float16 or bfloat16 table.  Any other is refused.

    Returns
    -------
    Tensor of shape ``(n_bags,) + params.shape[1:]`` and dtype `dtype`
        (by default the dtype of `params`).
        Accumulated in that dtype, in entry order; a float16 or bfloat16
        table in float32 (its gathered rows converted, never the table),
        rounded once to the result's dtype.

    Raises
    ------
    InvalidArgumentError
        ``ids[3] = 9 is not in [0, 4)`` for an id out of range, bad splits
        (not 1-D, empty, not from 0 to ``nnz``, decreasing), weights of
        another length, scalar `params`, integer `params` with weights or
        another combiner, a `dtype` that is neither None, the table's dtype
        nor float32 for a half table, or bags that need more memory than the
        process may allocate.
    ValueError
        For an unknown combiner.

    Notes
    -----
    The gradient w.r.t. `params` is an :class:`~sparsegrad.IndexedSlices`
    over the sorted distinct ids, its values of the result's dtype (summed
    in float32 for a half type); forward and gradient cost O(nnz x row
    width).

    Examples
    --------
    >>> from sparsegrad.ops.sparse_segment_ops import embedding_bag
    >>> table = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> embedding_bag(table, [0, 2, 1], [0, 2, 2, 3]).numpy()
    array([[6., 8.],
           [0., 0.],
           [3., 4.]])
    >>> embedding_bag(table, [0, 2, 1], [0, 2, 3], weights=[1.0, 3.0, 2.0],
    ...               combiner="mean").numpy()
    array([[4., 5.],
           [3., 4.]])
    """
    del name
    combiner = check_combiner(combiner)
    # the one choice (no mixing of host and device)
    be = backend_of_arguments(params, ids, splits, weights)
    return bags_on(be, params, ids, splits, weights, combiner, ids_below,
                   dtype=dtype)


def bags_on(be, params, ids, splits, weights, combiner, ids_below=None, *,
            dtype=None):
    """:func:`embedding_bag` on backend `be`, which the caller chose with
    every argument (or moved them to), `combiner` checked."""
    what = "embedding_bag"
    t = table_tensor(params, what, "params", be)
    out_dtype = output_dtype(dtype, t.dtype, what)
    work = work_dtype(t.dtype)   # the weights' dtype in the kernel
    idx = index_input(ids, "ids", be)
    spl = index_input(splits, "splits", be)
    w = None if weights is None else as_tensor(weights, name="weights")._value
    nnz = idx.shape[0]
    if be.on_gpu:
        kernels = be.kernels("segment")
        (spl_summary,) = kernels.read_summaries(kernels.summarize(spl))
        if (spl.shape[0] == 0 or spl_summary[3] != 0 or spl_summary[4] != nnz
                or spl_summary[2] < spl.shape[0]):
            check_bag_splits(be.host(spl), nnz, what)
            raise AssertionError("splits failed a check that found no error")
    else:
        check_bag_splits(spl, nnz, what)
    if w is not None:
        if not be.on_gpu:
            w = np.asarray(w)
        if w.shape != (nnz,):
            raise InvalidArgumentError(
                f"{what}: weights must have one entry per id, shape ({nnz},), got "
                f"shape {w.shape}"
            )
        if w.dtype.kind not in "iuf" and not is_floating(w.dtype):
            raise InvalidArgumentError(
                f"{what}: weights must be real numbers, got dtype {w.dtype}"
            )
    if not is_floating(t.dtype) and (combiner != "sum" or w is not None):
        raise InvalidArgumentError(
            f"{what}: params must be floating-point for weights or combiner "
            f"{combiner!r}, got dtype {t.dtype}"
        )
    check_float(t, what, "sum", "params")
    # the bags' rows: one per split, whatever the size of the table
    buffers.check_allocation(*bag_buffers(t._value, nnz, spl.shape[0] - 1,
                                           f"{what}: splits", f"{what}: ids",
                                           out_dtype))
    if be.on_gpu:
        # the kernels' dtype: float32 for a half table (its rows converted there)
        check_device_dtype(work, what)
        sparse_rows.check_in_range(idx, t.shape[0], "ids", be)
        # As below: private copies while a tape records.
        copy = is_recording()
        return run_bag(be, t, idx.copy() if copy else idx,
                       spl.astype(np.int64, copy=copy),
                       None if w is None else w.astype(work, copy=copy), combiner,
                       out_dtype)
    if ids_below is None or ids_below > t.shape[0]:
        sparse_rows.check_in_range(idx, t.shape[0], "ids", be)
    # A recorded op keeps its ids, splits and weights for the gradient: its
    # own copies then, so that the caller may reuse their arrays.
    keep = buffers.copy if is_recording() else np.asarray
    ids_kept = keep(idx)
    splits64 = keep(spl, dtype=np.int64)
    if w is not None:
        w = keep(w, dtype=work)
    return run_bag(be, t, ids_kept, splits64, w, combiner, out_dtype)
