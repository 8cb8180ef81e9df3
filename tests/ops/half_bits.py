"""Bit-for-bit comparisons of the half-precision op tests (test_half_*.py)."""

import ml_dtypes
import numpy as np

HALF_TYPES = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def half_bits(x):
    """The bits of a half array or Tensor (-0.0 and NaN payloads included)."""
    x = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    assert x.dtype in HALF_TYPES, x.dtype
    return x.view(np.uint16)


def assert_half_bits(actual, expected, dtype):
    """`actual` (an array or Tensor) has half `dtype` and the bits of
    `expected` converted to it."""
    actual = actual.numpy() if hasattr(actual, "numpy") else actual
    assert np.asarray(actual).dtype == dtype
    np.testing.assert_array_equal(half_bits(actual),
                                  half_bits(np.asarray(expected, dtype)))


def _bits(array):
    array = np.asarray(array)
    return array.view(np.uint16) if array.dtype.itemsize == 2 else array


def assert_same_bits(got, want):
    """The same dtype, shape and values: the bits of two-byte arrays, the
    values (NaN where NaN) of others."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(_bits(got), _bits(want))
