"""The GPU backend: chosen by a cupy argument, with that cupy's module."""

import sys

import numpy as np
import pytest

from sparsegrad import _cuda
from sparsegrad._cuda import segment as cuda_segment
from sparsegrad.framework.backend import CPU, backend_of


def test_a_device_array_runs_on_the_gpu_backend(device):
    x = device.asarray(np.arange(4.0))
    be = backend_of(x, None)
    assert be is not CPU and be.on_gpu and be.name == "gpu"
    # the array module of the cupy in use now (the tests swap the emulator
    # and the real CuPy in and out: each gets its own backend)
    assert be.xp is sys.modules["cupy"]
    assert be.kernels("segment") is cuda_segment
    assert be.kernels("bags") is cuda_segment
    assert be.kernels("sort") is _cuda.sort
    np.testing.assert_array_equal(be.host(x), np.arange(4.0))
    assert backend_of(be.asarray([1, 2])) is be
    with pytest.raises(ValueError, match="mix numpy"):
        backend_of(x, np.zeros(1))
