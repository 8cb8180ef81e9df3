"""dtype rules shared by every layer.

sparsegrad uses NumPy dtypes directly (``np.float32`` and friends), and
``ml_dtypes.bfloat16`` (NumPy's extension type that JAX and TensorFlow use)
for bfloat16.  Kernels are compiled for float32 and float64 values and int32
and int64 indices; the training kernels also for the half storage types,
float16 and bfloat16.
"""

import ml_dtypes
import numpy as np

from ..errors import InvalidArgumentError

#: Value dtypes with compiled kernels.
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
#: Index dtypes with compiled kernels.
INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
#: bfloat16 (``ml_dtypes.bfloat16``): NumPy knows it as kind ``"V"``.
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
FLOAT16 = np.dtype(np.float16)
#: The half-precision storage types.
HALF_DTYPES = (FLOAT16, BFLOAT16)
#: dtypes a tape differentiates (TensorFlow's trainable real dtypes).
TRAINABLE_DTYPES = HALF_DTYPES + FLOAT_DTYPES


def is_half(dtype):
    """True for the half-precision storage types, float16 and bfloat16."""
    if isinstance(dtype, np.dtype):     # the common call: a dtype, and fast
        return dtype.itemsize == 2 and dtype in HALF_DTYPES
    return np.dtype(dtype) in HALF_DTYPES


def is_floating(dtype):
    """True for every floating dtype, bfloat16 included (which NumPy's
    ``kind`` calls ``"V"``)."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype == BFLOAT16


def is_real(dtype):
    """True for the dtypes sparsegrad computes with: bool, integers and every
    floating dtype, bfloat16 included (not complex, object or strings)."""
    dtype = np.dtype(dtype)
    return dtype.kind in "biuf" or dtype == BFLOAT16


def can_cast_same_kind(from_dtype, to_dtype):
    """NumPy's ``np.can_cast(from_dtype, to_dtype, casting="same_kind")``
    with bfloat16 counted a floating dtype: every floating dtype casts to
    every other (rounding: float64 or float16 to bfloat16, bfloat16 to
    float16), integers and bools to any float; a float never to an integer.

    Parameters
    ----------
    from_dtype, to_dtype : dtype

    Returns
    -------
    bool

    Examples
    --------
    >>> from sparsegrad.framework.dtypes import BFLOAT16, can_cast_same_kind
    >>> can_cast_same_kind(BFLOAT16, np.float16), can_cast_same_kind(BFLOAT16, np.int32)
    (True, False)
    """
    from_dtype, to_dtype = np.dtype(from_dtype), np.dtype(to_dtype)
    if is_floating(from_dtype) and is_floating(to_dtype):
        return True
    return bool(np.can_cast(from_dtype, to_dtype, casting="same_kind"))


def half_not_computed(op, arg, dtype):
    """The InvalidArgumentError of an op that has no half-precision
    computation yet, given `arg` of half `dtype`.

    Parameters
    ----------
    op : str
        The op's name.
    arg : str
        The argument's name.
    dtype : dtype
        float16 or bfloat16.

    Returns
    -------
    InvalidArgumentError
        ``"{op}: {arg} has dtype {dtype}, which {op} does not compute in;
        cast it to float32 first (sg.cast)"``.
    """
    return InvalidArgumentError(
        f"{op}: {arg} has dtype {np.dtype(dtype)}, which {op} does not compute "
        "in; cast it to float32 first (sg.cast)"
    )


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
    if is_floating(dtype):
        return dtype
    return _FLOAT32 if dtype.itemsize <= 2 else _FLOAT64


_FLOAT32, _FLOAT64 = FLOAT_DTYPES


def check_numeric(dtype, name):
    """Reject dtypes no sparsegrad op computes with (complex, object, strings).

    Booleans and integers are allowed as values of Tensors (comparisons, ids);
    complex dtypes are rejected as DESIGN.md decides.
    """
    dtype = np.dtype(dtype)
    if is_real(dtype):
        return dtype
    if dtype.kind == "c":
        raise InvalidArgumentError(
            f"{name}: complex dtype {dtype} is not supported; "
            "use float32 or float64"
        )
    raise InvalidArgumentError(
        f"{name}: dtype {dtype} is not numeric; expected a bool, integer or "
        "floating dtype (bfloat16 is ml_dtypes.bfloat16)"
    )
