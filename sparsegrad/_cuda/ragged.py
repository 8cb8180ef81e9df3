"""Launchers of ``ragged.cu``: the GPU twins of ``sparsegrad._kernels.ragged``
(same names, same Python-side signatures, ``n_threads`` ignored).

Arrays are C-contiguous cupy arrays of the dtypes the Cython kernels take;
the Python layer (``sparsegrad.ragged``) validates and allocates as for the
CPU.
"""

import numpy as np

from . import blocks_for, cupy, launch

__all__ = ["SIZE_ZERO_DELTA", "SIZE_TOO_LARGE", "range_sizes", "range_splits",
           "range_fill", "row_splits_to_rowids"]

#: Codes written by :func:`range_sizes` in place of a size (as on the CPU).
SIZE_ZERO_DELTA = -1
SIZE_TOO_LARGE = -2

_SUFFIX = {"int32": "i32", "int64": "i64", "float32": "f32", "float64": "f64"}
_MAX_TOTAL = {"int32": 2147483647, "int64": 9223372036854775807}


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
    cp = cupy()
    result = cp.empty((2,), dtype=np.int64)
    kind = str(splits_out.dtype)
    launch("ragged", "range_splits_" + _SUFFIX[kind], 1,
           (sizes, splits_out, result, np.int64(sizes.shape[0]),
            np.int64(_MAX_TOTAL[kind])))
    bad, cause = (int(v) for v in result.get())
    return bad, cause


def range_fill(starts, deltas, splits, values_out, n_threads):
    """Twin of ``_kernels.ragged.range_fill``.

    Integer values run one thread per value (``start + j * delta`` in
    unsigned arithmetic equals the CPU's repeated addition); float values
    one thread per row, adding as the CPU does, so a long row is a long
    serial chain there too.
    """
    total = values_out.shape[0]
    n_rows = splits.shape[0] - 1
    if total == 0 or n_rows <= 0:
        return
    vs = _SUFFIX[str(values_out.dtype)]
    n = total if vs in ("i32", "i64") else n_rows
    launch("ragged", f"range_fill_{vs}_{_SUFFIX[str(splits.dtype)]}",
           blocks_for(n),
           (starts, deltas, _stride(starts), _stride(deltas), splits,
            values_out, np.int64(n_rows), np.int64(total)))


def row_splits_to_rowids(splits, rowids_out, n_threads):
    """Twin of ``_kernels.ragged.row_splits_to_rowids``."""
    total = rowids_out.shape[0]
    n_rows = splits.shape[0] - 1
    if total == 0 or n_rows <= 0:
        return
    launch("ragged", "row_splits_to_rowids_" + _SUFFIX[str(splits.dtype)],
           blocks_for(total),
           (splits, rowids_out, np.int64(n_rows), np.int64(total)))

