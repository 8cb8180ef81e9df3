"""dtype rules shared by every layer.

sparsegrad uses NumPy dtypes directly (``np.float32`` and friends).  Kernels are
compiled for float32 and float64 values and int32 and int64 indices.
"""

import numpy as np

from ..errors import InvalidArgumentError

#: Value dtypes with compiled kernels.
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
#: Index dtypes with compiled kernels.
INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
#: dtypes a tape differentiates (TensorFlow's trainable real dtypes).
TRAINABLE_DTYPES = (np.dtype(np.float16),) + FLOAT_DTYPES


def is_trainable(dtype):
    """True for the floating dtypes a tape records and differentiates."""
    return np.dtype(dtype) in TRAINABLE_DTYPES


def is_kernel_float(dtype):
    """True when compiled kernels exist for values of this dtype."""
    return np.dtype(dtype) in FLOAT_DTYPES


def true_division_dtype(dtype):
    """The dtype of ``x / y`` for operands of `dtype`, TensorFlow's
    ``truediv`` table: 8- and 16-bit integers give float32, wider integers
    float64; a floating dtype stays itself.

    Parameters
    ----------
    dtype : dtype
        A bool, integer or floating dtype.

    Returns
    -------
    numpy.dtype

    Examples
    --------
    >>> from sparsegrad.framework.dtypes import true_division_dtype
    >>> true_division_dtype(np.int16), true_division_dtype(np.int64)
    (dtype('float32'), dtype('float64'))
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return dtype
    return _FLOAT32 if dtype.itemsize <= 2 else _FLOAT64


_FLOAT32, _FLOAT64 = FLOAT_DTYPES


def check_numeric(dtype, name):
    """Reject dtypes no sparsegrad op computes with (complex, object, strings).

    Booleans and integers are allowed as values of Tensors (comparisons, ids);
    complex dtypes are rejected as DESIGN.md decides.
    """
    dtype = np.dtype(dtype)
    if dtype.kind in "biuf":
        return dtype
    if dtype.kind == "c":
        raise InvalidArgumentError(
            f"{name}: complex dtype {dtype} is not supported; "
            "use float32 or float64"
        )
    raise InvalidArgumentError(
        f"{name}: dtype {dtype} is not numeric; expected a bool, integer or "
        "floating dtype"
    )
