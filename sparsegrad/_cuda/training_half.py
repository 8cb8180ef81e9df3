"""Launchers of ``training_half.cu``: the twin of
``sparsegrad._kernels.training_half``.

float16 and bfloat16 arrays on the device, updated as TensorFlow's half
kernels do (every operation in float32, rounded back to the storage type at
once): the element functions of ``sg_training.h`` instantiated for the half
types of ``sg_half.h``, as on the host, in the drivers of ``training.cuh``
(those of the float32 and float64 kernels, :mod:`sparsegrad._cuda.training`).
The arrays arrive as ``uint16`` cupy arrays, the bits of the half values (a
float16 cupy array viewed as ``uint16``; a bfloat16 one likewise, where CuPy
holds bfloat16: CuPy 14 with ``ml_dtypes``), with the flag ``bf16``.

The host module's functions, names and positional arguments:

``dense_<op>(var, s1, s2, s3, grad, hp, bf16, n_threads, grad_scale=1.0)``
    Flat arrays, one thread per element (grid-stride).
``sparse_<op>(var, s1, s2, s3, grad, indices, hp, bf16, n_threads,
grad_scale=1.0, coalesce=False)``
    Rows of var, (n_rows, R) (row-wise Adagrad's slots (n_rows, 1)).  The
    occurrences are grouped by row on the device (a stable sort, as the
    float kernels' are); each row's occurrences are applied one after
    another in their original order.
``dense_rowwise_adagrad(var, accum, grad, hp, bf16, n_threads, grad_scale=1.0)``
``dense_lamb(var, s1, s2, s3, grad, hp, bf16, n_threads, sums=None,
grad_scale=1.0)``
    ``sums``: a device float64 array of :func:`lamb_sums_size` values for
    the chunks' sums, or None (made here).
``round_bits``, ``widen_bits``, ``round_bits_f64``
    The conversions of ``sg_half.h`` on the device.
``mixed_load_rows(src, rows, out, bf16, n_threads)``,
``mixed_store_rows(src, rows, out, mode, stream, n_threads)``
    Mixed precision (:mod:`sparsegrad.training.training_ops.mixed`): half
    rows as float32, and float32 rows stored back rounded once, to nearest
    or stochastically (``sg_mixed.h``; `mode` is the host's uint32 array).

The keywords are the device's own.  The host module takes a gradient scaled
beforehand (each product rounded once) and duplicates summed beforehand (in
the storage type, in their original order, from zero), both done by NumPy;
here ``grad_scale`` (already rounded to the storage type) scales each
gradient value as it is read and ``coalesce`` sums a row's occurrences in
order from zero and applies the sum once: the same roundings, so the same
bits, with no copy and none of CuPy's own half arithmetic.  ``n_threads`` is
ignored.
"""

import ml_dtypes
import numpy as np

from .._kernels.training_table import HYPERPARAMETERS, KERNELS
from . import blocks_for, launch
from . import training as drivers
from .sort import group_rows

__all__ = ["HYPERPARAMETERS", "generated_source", "dense_rowwise_adagrad",
           "dense_lamb", "lamb_sums_size", "round_bits", "widen_bits",
           "round_bits_f64", "mixed_load_rows", "mixed_store_rows"]

_FAMILY = "training_half"
_UINT16 = np.dtype(np.uint16)
_DTYPES = {False: np.dtype(np.float16), True: np.dtype(ml_dtypes.bfloat16)}

# The module's kernels are the table's, as training.cu's: the same SG_ROW,
# SG_DENSE and SG_SPARSE lines, which training_half.cu instantiates for the
# half types.
generated_source = drivers.generated_source
lamb_sums_size = drivers.lamb_sums_size

_DENSE = tuple(op[0] for op in KERNELS if op[1])
_SPARSE = tuple(op[0] for op in KERNELS if op[2]) + ("rowwise_adagrad", "lamb")


def _sfx(bf16):
    return "bf16" if bf16 else "f16"


def _scale_args(grad_scale, bf16):
    """(s, scaled): the scale's bits in the storage type, and whether to
    apply it."""
    s = np.asarray(grad_scale, dtype=_DTYPES[bool(bf16)]).view(_UINT16)[()]
    return s, np.int32(grad_scale != 1.0)


def _dense_launcher(name):
    def dense(var, s1, s2, s3, grad, hp, bf16, n_threads, grad_scale=1.0):
        if var.shape[0] == 0:
            return
        drivers.run_dense(_FAMILY, name, _sfx(bf16), (var, s1, s2, s3, grad), hp,
                          _scale_args(grad_scale, bf16))

    dense.__name__ = dense.__qualname__ = f"dense_{name}"
    dense.__doc__ = (f"Mirrors ``dense_{name}`` of the half kernels: flat uint16 "
                     "arrays, one thread per element (grid-stride).")
    return dense


def _sparse_launcher(name):
    def sparse(var, s1, s2, s3, grad, indices, hp, bf16, n_threads, grad_scale=1.0,
               coalesce=False):
        if indices.shape[0] == 0 or var.size == 0:
            return
        unique, order, starts = group_rows(indices)
        drivers.run_sparse(_FAMILY, name, _sfx(bf16), (var, s1, s2, s3), grad,
                           unique, order, starts, hp, _scale_args(grad_scale, bf16),
                           coalesce)

    sparse.__name__ = sparse.__qualname__ = f"sparse_{name}"
    sparse.__doc__ = (f"Mirrors ``sparse_{name}`` of the half kernels: each "
                      "occurrence of a row in order, or (coalesce) the row's "
                      "gradients summed in order from zero, applied once.")
    return sparse


def dense_rowwise_adagrad(var, accum, grad, hp, bf16, n_threads, grad_scale=1.0):
    """Mirrors ``dense_rowwise_adagrad`` of the half kernels: every row of var
    (n_rows, R), one block a row."""
    if var.size == 0:
        return
    drivers.run_dense_rowwise(_FAMILY, _sfx(bf16), var, accum, grad, hp,
                              _scale_args(grad_scale, bf16))


def dense_lamb(var, s1, s2, s3, grad, hp, bf16, n_threads, sums=None,
               grad_scale=1.0):
    """Mirrors ``dense_lamb`` of the half kernels: the whole variable's norms
    (chunks of ``SG_LAMB_CHUNK`` values, their sums added in chunk order),
    then the steps."""
    if var.shape[0] == 0:
        return
    drivers.run_dense_lamb(_FAMILY, _sfx(bf16), var, s1, s2, grad, hp,
                           _scale_args(grad_scale, bf16), sums)


def _convert(kernel, x, out, bf16):
    n = x.shape[0]
    if n:
        launch(_FAMILY, kernel, blocks_for(n), (x, out, np.int64(n), np.int32(bf16)))


def round_bits(x, out, bf16):
    """The half bits of each float32 of the device array `x` (round to
    nearest even), written to `out` (uint16)."""
    _convert("round_bits", x, out, bf16)


def widen_bits(h, out, bf16):
    """Each half value of the bits `h` as a float32, written to `out`."""
    _convert("widen_bits", h, out, bf16)


def round_bits_f64(x, out, bf16):
    """The half bits of each float64 of `x`, rounded once."""
    _convert("round_bits_f64", x, out, bf16)


def mixed_load_rows(src, rows, out, bf16, n_threads):
    """``out[k] = src[rows[k]]`` as float32, from the half bits `src`
    (n_rows, R); `out` is (len(rows), R) float32."""
    n, R = rows.shape[0], src.shape[1]
    if n and R:
        launch(_FAMILY, "mixed_load_rows", blocks_for(n * R),
               (src, rows, out, np.int64(n), np.int64(R), np.int32(bool(bf16))))


def mixed_store_rows(src, rows, out, mode, stream, n_threads):
    """``out[rows[k]] = src[k]`` rounded as the host ``mode`` array says, with
    the words of stream `stream` (rows distinct)."""
    n, R = rows.shape[0], out.shape[1]
    if n and R:
        mode = np.asarray(mode, dtype=np.uint32)
        launch(_FAMILY, "mixed_store_rows", blocks_for(n * R),
               (src, rows, out, np.int64(n), np.int64(R), np.int32(mode[0]),
                np.int32(mode[1]), np.uint32(mode[2 + stream]),
                np.uint32(mode[6 + stream])))


for _name in _DENSE:
    globals()[f"dense_{_name}"] = _dense_launcher(_name)
    __all__.append(f"dense_{_name}")
for _name in _SPARSE:
    globals()[f"sparse_{_name}"] = _sparse_launcher(_name)
    __all__.append(f"sparse_{_name}")
del _name
