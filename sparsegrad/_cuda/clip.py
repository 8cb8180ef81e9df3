"""Launchers of ``clip.cu``: the twins of ``sparsegrad._kernels.clip``, and
the scalar steps of the clip ops on the device.

The sum of squares follows the CPU's block table exactly (same blocks, same
accumulator pattern, partials added in table order), so it has the CPU's
bits.  It comes back as a 0-d float64 cupy array, not a Python float: a norm
stays on the device, and the scale kernels read their factors from device
memory (:func:`scale_dev`).
"""

import numpy as np

from . import BLOCK, blocks_for, cupy, launch, suffix

__all__ = ["sum_of_squares_list", "scale", "clip_values", "norm_of_list",
           "global_scale", "norm_divisor", "scale_dev", "CHUNK"]

#: Elements per block of a sum of squares (the Cython kernel's CHUNK).
CHUNK = 1 << 12
# CPU blocks of a dense entry per GPU block: one per eight threads.
_DENSE_PER_BLOCK = BLOCK // 8


def _partials(entries):
    """The float64 block partials of `entries`, in the CPU's table order."""
    cp = cupy()
    counts = []
    for entry in entries:
        values = entry[0]
        if values.size == 0:
            counts.append(0)
        elif len(entry) == 1:
            counts.append(-(-values.size // CHUNK))
        else:
            per = max(1, CHUNK // values.shape[1])
            counts.append(-(-(entry[2].shape[0] - 1) // per))
    partials = cp.empty((max(1, sum(counts)),), dtype=np.float64)
    offset = 0
    for entry, count in zip(entries, counts):
        if count == 0:
            continue
        values = entry[0]
        sfx = suffix(values.dtype)
        if len(entry) == 1:
            launch("clip", "squares_dense_" + sfx,
                   blocks_for(count, _DENSE_PER_BLOCK),
                   (values, np.int64(values.size), partials, np.int64(offset)))
        else:
            _, order, starts = entry
            width = values.shape[1]
            launch("clip", "squares_grouped_" + sfx, blocks_for(count, 1),
                   (values, order, starts, np.int64(starts.shape[0] - 1),
                    np.int64(width), np.int64(max(1, CHUNK // width)), partials,
                    np.int64(offset)))
        offset += count
    return partials, offset


def norm_of_list(entries, dtype):
    """``(norm, total)``: the sum of squares of `entries` (as
    :func:`sum_of_squares_list`), a 0-d float64 array, and its square root
    rounded once to `dtype` (float32 or float64), a 0-d array; both on the
    device."""
    cp = cupy()
    partials, n = _partials(entries)
    if n == 0:
        return cp.zeros((), dtype=dtype), cp.zeros((), dtype=np.float64)
    total = cp.empty((), dtype=np.float64)
    norm = cp.empty((), dtype=dtype)
    launch("clip", "finish_norm_" + suffix(dtype), 1,
           (partials, np.int64(n), total, norm))
    return norm, total


def sum_of_squares_list(entries, n_threads):
    """Twin of ``clip.sum_of_squares_list``: the float64 sum of squares of a
    list of ``(values,)`` / ``(values, order, starts)`` entries, as a 0-d
    cupy array (the CPU's bits)."""
    return norm_of_list(entries, np.dtype(np.float64))[1]


def scale(x, c, d, out, n_threads):
    """Twin of ``clip.scale``: ``out = (x * c) / d`` (``x * c`` when d is 1),
    host scalars c and d exact in x's dtype."""
    n = x.shape[0]
    if n == 0:
        return
    t = x.dtype.type
    launch("clip", "scale_" + suffix(x.dtype), blocks_for(n),
           (x, np.int64(n), t(c), t(d), out))


def scale_dev(x, cd, out):
    """``out = (x * cd[0]) / cd[1]`` (``x * cd[0]`` when ``cd[1]`` is 1), the
    factors a (2,) device array of x's dtype."""
    n = x.shape[0]
    if n == 0:
        return
    launch("clip", "scale_dev_" + suffix(x.dtype), blocks_for(n),
           (x, np.int64(n), cd, out))


def global_scale(norm, c):
    """TensorFlow's clip-by-global-norm factor as a (2,) device array
    ``(c * minimum(1 / norm, 1 / c) + (norm - norm), 1)``, `norm` a 0-d
    device array, `c` a host scalar of its dtype."""
    cd = cupy().empty((2,), dtype=norm.dtype)
    launch("clip", "global_scale_" + suffix(norm.dtype), 1,
           (norm, norm.dtype.type(c), cd))
    return cd


def norm_divisor(norm, c):
    """clip_by_norm's factors as a (2,) device array ``(c, maximum(norm, c))``
    (1 in place of a zero divisor), `c` >= 0 a host scalar of norm's dtype."""
    cd = cupy().empty((2,), dtype=norm.dtype)
    launch("clip", "norm_divisor_" + suffix(norm.dtype), 1,
           (norm, norm.dtype.type(c), cd))
    return cd


def clip_values(x, lo, hi, out, n_threads):
    """Twin of ``clip.clip_values``: ``out = maximum(minimum(x, hi), lo)``,
    bounds of length 1 or of x's length."""
    n = x.shape[0]
    if n == 0:
        return
    launch("clip", "clip_values_" + suffix(x.dtype), blocks_for(n),
           (x, np.int64(n), lo, np.int64(1 if lo.shape[0] == n else 0),
            hi, np.int64(1 if hi.shape[0] == n else 0), out))
