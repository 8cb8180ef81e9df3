"""Launchers of ``ragged.cu``: the GPU twins of ``sparsegrad._kernels.ragged``
(same names, same Python-side signatures, ``n_threads`` ignored).

Arrays are C-contiguous cupy arrays of the dtypes the Cython kernels take
(bfloat16 values as their ``uint16`` bits); the Python layer
(``sparsegrad.ragged``) validates and allocates as for the CPU.
"""

import numpy as np

from . import BLOCK, blocks_for, cupy, launch

__all__ = ["SIZE_ZERO_DELTA", "SIZE_TOO_LARGE", "range_sizes", "range_splits",
           "range_splits_total", "range_fill", "row_splits_to_rowids"]

#: Codes written by :func:`range_sizes` in place of a size (as on the CPU).
SIZE_ZERO_DELTA = -1
SIZE_TOO_LARGE = -2

_SUFFIX = {"int32": "i32", "int64": "i64", "float32": "f32", "float64": "f64",
           "uint16": "bf16"}   # bfloat16 values come as their bits
_MAX_TOTAL = {"int32": 2147483647, "int64": 9223372036854775807}
# Rows per thread of a range_splits tile, and values per thread of a chunk of
# the integer fill and of the row ids (module globals: tests shrink them to
# cover several tiles and chunks with few rows).
_SPLITS_ITEMS = 16
_FILL_ITEMS = 16   # at most SG_FILL_MAX_ITEMS (ragged.cu)


def _stride(a):
    # a length-1 operand is broadcast to every row
    return np.int64(1 if a.shape[0] > 1 else 0)


def range_sizes(starts, limits, deltas, sizes_out, max_size, n_threads):
    """Twin of ``_kernels.ragged.range_sizes``."""
    n_rows = sizes_out.shape[0]
    if n_rows == 0:
        return
    launch("ragged", "range_sizes_" + _SUFFIX[str(starts.dtype)],
           blocks_for(n_rows),
           (starts, limits, deltas, _stride(starts), _stride(limits),
            _stride(deltas), sizes_out, np.int64(n_rows), np.int64(max_size)))


def range_splits(sizes, splits_out):
    """Twin of ``_kernels.ragged.range_splits``: returns ``(bad, cause)``
    (one small read back from the device: the caller's error decision)."""
    bad, cause, _ = range_splits_total(sizes, splits_out)
    return bad, cause


def range_splits_total(sizes, splits_out):
    """:func:`range_splits` and the total of the sizes (``splits_out[-1]``
    when no row fails), from the same single read back.

    Three launches over tiles of rows (see ``ragged.cu``); the first failing
    row is the CPU's: the earlier of the first negative code and the first
    row whose running total overflows.
    """
    cp = cupy()
    n_rows = sizes.shape[0]
    if n_rows == 0:
        splits_out[0] = 0
        return -1, 0, 0
    kind = str(splits_out.dtype)
    max_total = np.int64(_MAX_TOTAL[kind])
    items = _SPLITS_ITEMS
    n_tiles = -(-n_rows // (items * BLOCK))
    tile_sum = cp.empty((n_tiles,), dtype=np.int64)
    tile_neg = cp.empty((n_tiles,), dtype=np.int64)
    tile_prefix = cp.empty((n_tiles,), dtype=np.int64)
    result = cp.empty((4,), dtype=np.int64)
    grid = blocks_for(n_tiles, 1)
    launch("ragged", "range_splits_tiles", grid,
           (sizes, np.int64(n_rows), max_total, np.int32(items), tile_sum, tile_neg))
    launch("ragged", "range_splits_prefix", 1,
           (sizes, tile_sum, tile_neg, np.int64(n_tiles), np.int64(n_rows),
            max_total, tile_prefix, result))
    launch("ragged", "range_splits_write_" + _SUFFIX[kind], grid,
           (sizes, tile_prefix, np.int64(n_rows), max_total, np.int32(items),
            splits_out, result))
    neg, cause, over, total = (int(v) for v in result.get())
    if neg >= 0 and (over < 0 or neg < over):
        return neg, cause, 0
    if over >= 0:
        return over, 0, 0
    return -1, 0, total


def _first_rows(splits, n_rows, total, items):
    """The row of each chunk's first value (``chunk_rows`` in ragged.cu)."""
    cp = cupy()
    chunk = items * BLOCK
    n_chunks = -(-total // chunk)
    first_row = cp.empty((n_chunks + 1,), dtype=np.int64)
    launch("ragged", "chunk_rows_" + _SUFFIX[str(splits.dtype)],
           blocks_for(n_chunks + 1),
           (splits, np.int64(n_rows), np.int64(total), np.int64(chunk),
            np.int64(n_chunks), first_row))
    return first_row, blocks_for(n_chunks, 1)


def range_fill(starts, deltas, splits, values_out, n_threads):
    """Twin of ``_kernels.ragged.range_fill``.

    Integer values run one thread per value (``start + j * delta`` in
    unsigned arithmetic equals the CPU's repeated addition), its row found
    among the rows of its chunk of values; float values one thread per row,
    adding as the CPU does, so a long row is a long serial chain there too.
    """
    total = values_out.shape[0]
    n_rows = splits.shape[0] - 1
    if total == 0 or n_rows <= 0:
        return
    vs = _SUFFIX[str(values_out.dtype)]
    name = f"range_fill_{vs}_{_SUFFIX[str(splits.dtype)]}"
    if vs in ("i32", "i64"):
        items = _FILL_ITEMS
        first_row, grid = _first_rows(splits, n_rows, total, items)
        launch("ragged", name, grid,
               (starts, deltas, _stride(starts), _stride(deltas), splits, first_row,
                values_out, np.int64(total), np.int32(items)))
    else:
        launch("ragged", name, blocks_for(n_rows),
               (starts, deltas, _stride(starts), _stride(deltas), splits,
                values_out, np.int64(n_rows)))


def row_splits_to_rowids(splits, rowids_out, n_threads):
    """Twin of ``_kernels.ragged.row_splits_to_rowids`` (one thread per
    value, as the integer :func:`range_fill`)."""
    total = rowids_out.shape[0]
    n_rows = splits.shape[0] - 1
    if total == 0 or n_rows <= 0:
        return
    items = _FILL_ITEMS
    first_row, grid = _first_rows(splits, n_rows, total, items)
    launch("ragged", "row_splits_to_rowids_" + _SUFFIX[str(splits.dtype)], grid,
           (splits, first_row, rowids_out, np.int64(total), np.int32(items)))
