"""Launchers of ``slices.cu``: the twins of ``sparsegrad._kernels.slices``.

Same names and Python-side signatures as the Cython functions, for cupy
arrays (``n_threads`` is accepted and ignored).  Duplicate indices are
sorted stably first and each distinct row is then written by one thread a
column, which walks its duplicates in their original order: the CPU's bits,
no float atomics.
"""

import numpy as np

from . import BLOCK, blocks_for, cupy, launch, suffix
from .sort import group_rows

__all__ = ["all_in_range", "scatter_add", "scatter_update", "group_stable",
           "gather_group_sum", "gather_rows"]

_INDEX_SUFFIX = {"int32": "i32", "int64": "i64"}


def _row_blocks(n_rows, width):
    """Blocks for `n_rows` rows of `width` elements (SG_ROWS_LOOP in
    slices.cu: rows narrower than a block share one)."""
    return blocks_for(n_rows, BLOCK // width if width < BLOCK else 1)


def _index_suffix(indices):
    return _INDEX_SUFFIX[str(indices.dtype)]


def all_in_range(indices, n_rows, n_threads=1):
    """Twin of ``slices.all_in_range``: True when every index lies in
    ``[0, n_rows)``.  One kernel pass and one scalar read back."""
    cp = cupy()
    n = indices.shape[0]
    if n == 0:
        return True
    bad = cp.zeros((1,), dtype=np.int32)
    launch("slices", "range_flag_" + _index_suffix(indices), blocks_for(n),
           (indices, np.int64(n), np.int64(n_rows), bad))
    return int(bad.get()[0]) == 0


def _sorted(indices):
    """``(sorted, order)``: the indices sorted stably, as int64, and the
    sorting permutation (no host transfer)."""
    cp = cupy()
    indices = cp.ascontiguousarray(indices).astype(np.int64, copy=False)
    order = cp.argsort(indices).astype(np.int64, copy=False)
    return indices[order], order


def scatter_add(values, indices, out, n_threads):
    """Twin of ``slices.scatter_add``: ``out[indices[k]] += values[k]`` for k
    in order, `values` (n, width) and `out` (n_rows, width) C-contiguous.
    One stable sort; the first sorted position of each row adds its
    duplicates in order (no host transfer)."""
    n, width = values.shape
    if n == 0 or width == 0:
        return
    rows, order = _sorted(indices)
    launch("slices", "scatter_add_sorted_" + suffix(out.dtype), _row_blocks(n, width),
           (values, rows, order, np.int64(n), np.int64(width), out))


def scatter_update(values, indices, out, n_threads):
    """Twin of ``slices.scatter_update``: ``out[indices[k]] = values[k]`` for
    k in order (the last duplicate wins; no host transfer)."""
    n, width = values.shape
    if n == 0 or width == 0:
        return
    rows, order = _sorted(indices)
    launch("slices", "scatter_update_sorted_" + suffix(out.dtype),
           _row_blocks(n, width),
           (values, rows, order, np.int64(n), np.int64(width), out))


def group_stable(keys, max_key, scratch, order_out, unique_out, starts_out):
    """Twin of ``slices.group_stable``: fills `order_out`, `unique_out` and
    `starts_out` and returns the number of distinct keys (`max_key` and
    `scratch` are not needed by the GPU sort)."""
    n = keys.shape[0]
    if n == 0:
        starts_out[0] = 0
        return 0
    unique, order, starts = group_rows(keys)
    n_unique = unique.shape[0]
    order_out[...] = order
    unique_out[:n_unique] = unique
    starts_out[: n_unique + 1] = starts
    return n_unique


def gather_group_sum(values, order, starts, out, n_threads):
    """Twin of ``slices.gather_group_sum``: ``out[g] += sum(values[order[
    starts[g]:starts[g + 1]]])`` in that order (`out` zero-filled)."""
    n_groups, width = out.shape
    if n_groups == 0 or width == 0:
        return
    launch("slices", "gather_group_sum_" + suffix(out.dtype),
           _row_blocks(n_groups, width),
           (values, order, starts, np.int64(n_groups), np.int64(width), out))


def gather_rows(table, indices, out, n_threads):
    """Twin of ``slices.gather_rows``: ``out[k] = table[indices[k]]``, rows
    as uint8 (n_rows, row_bytes) arrays.  The rows are copied in 8- or 4-byte
    words where the row size and the alignment of both arrays allow."""
    n, row_bytes = indices.shape[0], table.shape[1]
    if n == 0 or row_bytes == 0:
        return
    word = next(w for w in (8, 4, 1) if row_bytes % w == 0
                and table.data.ptr % w == 0 and out.data.ptr % w == 0)
    if word > 1:
        words = np.int64 if word == 8 else np.int32
        table, out = table.view(words), out.view(words)
    launch("slices", f"gather_rows_w{word}_" + _index_suffix(indices),
           _row_blocks(n, row_bytes // word),
           (table, indices, np.int64(n), np.int64(row_bytes // word), out))
