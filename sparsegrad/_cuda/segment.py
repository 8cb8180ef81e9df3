"""Launchers of ``segment.cu``: the twin of ``sparsegrad._kernels.segment``
(segment reductions, sorted ids to row splits, the product of the other rows
of a segment, and the sparse segment / embedding-bag reductions).

The functions below have the Cython module's names, arguments and return
values; they take C-contiguous cupy arrays and return cupy arrays or Python
ints.  Index arrays may be int32 or int64; the kernels read int64 (an int32
array is converted on the device).  Every output element is reduced by one
thread in the Cython kernel's order, so the bits are the CPU's.

Where the Cython kernel reports a problem of the ids by its return value
(``sorted_splits``, ``segment_reduce_ids``, ``scatter_reduce``), the launcher
first reduces the ids on the device (:func:`summarize`) and reads back one
small array: the only host transfer, made before any kernel writes.
"""

import numpy as np

from . import blocks_for, cupy, launch, suffix
from . import ragged as _ragged

__all__ = [
    "SUM", "MEAN", "MAX", "MIN", "PROD",
    "sorted_splits", "segment_reduce_ids", "scatter_reduce", "prod_others",
    "sparse_segment_reduce", "sparse_segment_reduce_grad",
    "summarize", "read_summaries", "splits_of_sorted", "reduce_sorted",
    "sort_ids", "reduce_ordered", "segment_of_splits",
    "ragged_segment_lengths", "ragged_segment_rows",
]

# Reduction codes, the numbers of sparsegrad._kernels.segment.
SUM = 0
MEAN = 1
MAX = 2
MIN = 3
PROD = 4

_FAMILY = "segment"
# Blocks of the first summary pass (each folds a grid-stride share of ids).
_SUMMARY_BLOCKS = 1024


def _i64(ids):
    """`ids` as a C-contiguous int64 cupy array (no copy when it is one)."""
    cp = cupy()
    return cp.ascontiguousarray(ids).astype(np.int64, copy=False)


def _scalar(dtype, value):
    return np.dtype(dtype).type(value)


# -- id summaries -----------------------------------------------------------------


def summarize(ids):
    """A device int64 array ``(min, max, first decrease or n, first, last)`` of
    1-D `ids` (for ``n == 0``: the int64 extremes, ``0``, ``0``, ``0``).

    Several summaries are read back together by :func:`read_summaries`.
    """
    cp = cupy()
    ids = _i64(ids)
    n = ids.shape[0]
    n_parts = blocks_for(n) if n else 1
    n_parts = min(n_parts, _SUMMARY_BLOCKS)
    partial = cp.empty((3 * n_parts,), dtype=np.int64)
    out = cp.empty((5,), dtype=np.int64)
    launch(_FAMILY, "summary_partial", n_parts, (ids, np.int64(n), partial))
    launch(_FAMILY, "summary_final", 1,
           (ids, np.int64(n), partial, np.int64(n_parts), out))
    return out


def read_summaries(*summaries):
    """The summaries as tuples of Python ints, in ONE device-to-host copy."""
    cp = cupy()
    if len(summaries) == 1:
        host = cp.asnumpy(summaries[0])
    else:
        host = cp.asnumpy(cp.concatenate(summaries))
    return [tuple(int(v) for v in host[5 * k: 5 * k + 5])
            for k in range(len(summaries))]


# -- sorted ids ------------------------------------------------------------------


def splits_of_sorted(ids, n_segments):
    """``splits[s]`` = the first position whose id is at least ``s``, for
    ``s`` in ``[0, n_segments]`` (an int64 cupy array); the ids must be
    sorted (checked by the caller).  Ids below 0 are skipped at the head."""
    cp = cupy()
    ids = _i64(ids)
    n = ids.shape[0]
    splits = cp.empty((n_segments + 1,), dtype=np.int64)
    launch(_FAMILY, "sorted_splits", blocks_for(n_segments + 1),
           (ids, np.int64(n), np.int64(n_segments), splits))
    return splits


def segment_of_splits(splits, nnz):
    """The bag of each of `nnz` entries, ``s`` for ``k`` in ``[splits[s],
    splits[s + 1])`` (int64; `splits` non-decreasing from 0 to `nnz`): the
    row ids of the splits (``ragged.row_splits_to_rowids``: one thread per
    entry, so a long bag is not one thread's loop)."""
    cp = cupy()
    out = cp.empty((nnz,), dtype=np.int64)
    if nnz and splits.shape[0] > 1:
        _ragged.row_splits_to_rowids(_i64(splits), out, 0)
    return out


def sorted_splits(ids, splits_out, n_threads):
    """Mirrors ``_kernels.segment.sorted_splits``: fills `splits_out` and
    returns -1, or the first position where the ids decrease (then, unlike
    the CPU, nothing is written: the splits would hold no meaning)."""
    del n_threads
    ids = _i64(ids)
    n = ids.shape[0]
    if n == 0:
        splits_out.fill(0)
        return -1
    ((_, _, decrease, _, _),) = read_summaries(summarize(ids))
    if decrease < n:
        return decrease
    launch(_FAMILY, "sorted_splits", blocks_for(splits_out.shape[0]),
           (ids, np.int64(n), np.int64(splits_out.shape[0] - 1), splits_out))
    return -1


def reduce_sorted(data, splits, op, fill, from_fill, out):
    """``out[s] = op(rows splits[s] .. splits[s + 1] - 1 of data)`` (`fill`
    for an empty segment; combined with `fill` when `from_fill`)."""
    n_segments, width = out.shape
    if n_segments * width == 0:
        return
    launch(_FAMILY, "segment_reduce_sorted_" + suffix(data.dtype),
           blocks_for(n_segments * width),
           (data, np.int64(width), splits, np.int64(n_segments), np.int32(op),
            _scalar(data.dtype, fill), np.int32(bool(from_fill)), out))


def segment_reduce_splits(data, splits, op, fill, from_fill, out, n_threads):
    """Mirrors ``_kernels.segment.segment_reduce_splits``: the rows
    ``splits[s]:splits[s + 1]`` of `data` reduced into ``out[s]`` (checked
    splits), one thread per output value, each segment's rows in order with
    the CPU's arithmetic (``sg_seg_sum_contiguous`` for 1-D sums)."""
    del n_threads
    reduce_sorted(data, _i64(splits), op, fill, from_fill, out)


def segment_reduce_ids(data, ids, op, fill, from_fill, out, n_threads):
    """Mirrors ``_kernels.segment.segment_reduce_ids``: returns 0, or 1 when
    the ids decrease or one is at least ``n_segments`` (then nothing is
    written: unlike the CPU, the check runs before the reduction)."""
    del n_threads
    n, width = ids.shape[0], data.shape[1]
    n_segments = out.shape[0]
    if n == 0 or width == 0:
        return 0
    ids = _i64(ids)
    ((_, _, decrease, _, last),) = read_summaries(summarize(ids))
    if decrease < n or last >= n_segments:
        return 1
    if last < 0:  # no row of a non-negative id: the caller fills
        return 0
    reduce_sorted(data, splits_of_sorted(ids, n_segments), op, fill, from_fill, out)
    return 0


# -- ids in any order -------------------------------------------------------------


def sort_ids(ids, n_segments):
    """``(order, splits)`` of 1-D ids in any order: the stable argsort of the
    ids and the row splits of the sorted ids over ``[0, n_segments)`` (ids
    outside it fall outside the splits).  No host transfer."""
    cp = cupy()
    ids = _i64(ids)
    order = cp.argsort(ids).astype(np.int64, copy=False)
    return order, splits_of_sorted(ids[order], n_segments)


def reduce_ordered(data, order, splits, op, out):
    """``out[s] = op(out[s], rows order[splits[s]] .. order[splits[s + 1] - 1]
    in that order)`` (:func:`sort_ids`); empty segments keep their value."""
    n_segments, width = out.shape
    if n_segments * width == 0:
        return
    launch(_FAMILY, "segment_reduce_ordered_" + suffix(data.dtype),
           blocks_for(n_segments * width),
           (data, np.int64(width), order, splits, np.int64(n_segments),
            np.int32(op), out))


def scatter_reduce(data, ids, op, out, n_threads):
    """Mirrors ``_kernels.segment.scatter_reduce``: ``out[ids[k]] =
    op(out[ids[k]], data[k])`` for k in order (negative ids skipped); returns
    0, or 1 if an id is at least ``n_segments`` (its rows are skipped).
    One stable sort, and the largest id (the last sorted one) read back."""
    del n_threads
    n, width = ids.shape[0], data.shape[1]
    if n == 0 or width == 0:
        return 0
    ids = _i64(ids)
    order, splits = sort_ids(ids, out.shape[0])
    high = int(ids[order[n - 1]])
    reduce_ordered(data, order, splits, op, out)
    return 1 if high >= out.shape[0] else 0


def prod_others(data, order, starts, out, n_threads):
    """Mirrors ``_kernels.segment.prod_others``: ``out[r]`` = the product of
    the other rows of r's group (prefix times suffix products)."""
    del n_threads
    n_groups, width = starts.shape[0] - 1, data.shape[1]
    if n_groups <= 0 or width == 0:
        return
    launch(_FAMILY, "prod_others_" + suffix(data.dtype), blocks_for(n_groups * width),
           (data, np.int64(width), _i64(order), _i64(starts), np.int64(n_groups), out))


# -- sparse segment reductions (embedding bags) -----------------------------------


def sparse_segment_reduce(data, indices, weights, splits, combiner, out, n_threads):
    """Mirrors ``_kernels.segment.sparse_segment_reduce``: ``out[s] =
    combine(w_k * data[indices[k]] for k in bag s)``; `weights` of length 0
    means unweighted."""
    del n_threads
    n_segments, width = out.shape
    if n_segments * width == 0:
        return
    weighted = weights.shape[0] > 0
    if not weighted:  # never read: any array of the value type
        weights = out
    launch(_FAMILY, "sparse_segment_reduce_" + suffix(data.dtype),
           blocks_for(n_segments * width),
           (data, np.int64(width), _i64(indices), weights, np.int32(weighted),
            _i64(splits), np.int64(n_segments), np.int32(combiner), out))


def sparse_segment_reduce_grad(grad, order, starts, segment_of, coef, out, n_threads):
    """Mirrors ``_kernels.segment.sparse_segment_reduce_grad``: ``out[u] =
    sum(coef[k] * grad[segment_of[k]] for k in group u)`` in the order of
    `order`; `coef` of length 0 means ones."""
    del n_threads
    n_unique, width = out.shape
    if n_unique * width == 0:
        return
    scaled = coef.shape[0] > 0
    if not scaled:
        coef = out
    launch(_FAMILY, "sparse_segment_reduce_grad_" + suffix(grad.dtype),
           blocks_for(n_unique * width),
           (grad, np.int64(width), _i64(order), _i64(starts), _i64(segment_of), coef,
            np.int32(scaled), np.int64(n_unique), out))


# -- segments of ragged rows ------------------------------------------------------


def ragged_segment_lengths(splits, seg_splits, out_lengths, n_threads):
    """Mirrors ``_kernels.segment.ragged_segment_lengths``: the longest row
    of each segment (one thread per segment), and whether the values' output
    positions are sorted (one flag per segment, reduced and read back)."""
    del n_threads
    cp = cupy()
    n_segments = out_lengths.shape[0]
    if not n_segments:
        return True
    disordered = cp.empty(n_segments, dtype=np.int64)
    launch(_FAMILY, "ragged_segment_lengths", blocks_for(n_segments),
           (_i64(splits), _i64(seg_splits), np.int64(n_segments), out_lengths,
            disordered))
    return not bool(disordered.any())


def ragged_segment_rows(data, splits, seg_splits, out_splits, op, fill, out,
                        n_threads):
    """Mirrors ``_kernels.segment.ragged_segment_rows``: one thread per
    output value, which starts at `fill` and combines the value at its
    position of each row of its segment, in the rows' order (the host's
    bits)."""
    del n_threads
    n_out, width = out.shape
    if n_out * width == 0:
        return
    out_splits = _i64(out_splits)
    out_rowids = segment_of_splits(out_splits, n_out)
    launch(_FAMILY, "ragged_segment_rows_" + suffix(data.dtype),
           blocks_for(n_out * width),
           (data, np.int64(width), _i64(splits), _i64(seg_splits), out_splits,
            out_rowids, np.int64(n_out), np.int32(op), _scalar(data.dtype, fill), out))
