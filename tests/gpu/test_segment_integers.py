"""Segment reductions of integer data on the device against the CPU.

Integer data takes CuPy operations in a fixed order (a segmented scan).
Sums and products wrap modulo 2**bits whatever the order, maxima and minima
do not depend on it, and the mean divides the sum in the CPU's accumulator
dtype: every result is compared bit for bit, on values spread over the
whole range of the dtype (so sums and products wrap).  float16 stays
unsupported on the GPU, with an error that says so.
"""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError

INTS = (np.int32, np.int64)
SORTED = ("segment_sum", "segment_mean", "segment_max", "segment_min",
          "segment_prod")
UNSORTED = ("unsorted_segment_sum", "unsorted_segment_max",
            "unsorted_segment_min", "unsorted_segment_prod",
            "unsorted_segment_mean")


def _data(dtype, shape, seed):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    x = rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)
    x.reshape(-1)[:4] = [info.min, info.max, -1, 0]
    return x


def _same(device, got, want):
    assert isinstance(got._value, device.xp.ndarray)
    got = device.asnumpy(got._value)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("width", [(), (3,)])
def test_sorted_integer_reductions(device, dtype, width):
    rng = np.random.default_rng(1)
    x = _data(dtype, (70,) + width, 2)
    ids = np.sort(rng.integers(0, 15, 70))
    ids[-1] = 16  # segments without rows before the last one
    ids[:20] = 0  # a long segment: several passes of the scan
    for name in SORTED:
        fn = getattr(sg.math, name)
        _same(device, fn(device.asarray(x), device.asarray(ids)),
              fn(x, ids).numpy())


@pytest.mark.parametrize("dtype", INTS)
def test_unsorted_integer_reductions(device, dtype):
    rng = np.random.default_rng(3)
    x = _data(dtype, (60, 2), 4)
    ids = rng.integers(-2, 9, 60)  # negative ids are dropped
    ids[:10] = 5
    for ids_ in (ids, np.sort(ids)):
        for name in UNSORTED:
            fn = getattr(sg.math, name)
            _same(device, fn(device.asarray(x), device.asarray(ids_), 11),
                  fn(x, ids_, 11).numpy())


def test_integer_mean_sums_in_int64(device):
    # int32 rows whose sum wraps in int32 but not in int64 (the CPU's
    # accumulator): the mean is that of the true sum
    x = np.full((4, 1), 2**30 + 7, np.int32)
    ids = np.array([0, 0, 0, 1])
    want = sg.math.segment_mean(x, ids).numpy()
    assert want[0, 0] == 2**30 + 7
    _same(device, sg.math.segment_mean(device.asarray(x), device.asarray(ids)), want)


def test_integer_edges(device):
    for fn, args in ((sg.math.segment_sum, ()), (sg.math.unsorted_segment_prod, (3,))):
        empty = fn(device.xp.zeros((0, 2), np.int32),
                   device.xp.zeros((0,), np.int64), *args)
        want = fn(np.zeros((0, 2), np.int32), np.zeros((0,), np.int64), *args)
        _same(device, empty, want.numpy())
    one = np.array([[5, -7]], np.int64)
    for name in SORTED:
        fn = getattr(sg.math, name)
        _same(device, fn(device.asarray(one), device.asarray(np.array([2]))),
              fn(one, np.array([2])).numpy())


def test_bad_ids_with_integer_data_raise_the_cpu_error(device):
    x = np.arange(8, dtype=np.int32).reshape(4, 2)
    for fn, ids, args in ((sg.math.segment_max, np.array([0, 2, 1, 3]), ()),
                          (sg.math.unsorted_segment_sum, np.array([0, 5, 1, 3]), (4,))):
        with pytest.raises(InvalidArgumentError) as cpu_error:
            fn(x, ids, *args)
        dx, dids = device.asarray(x), device.asarray(ids)
        with pytest.raises(InvalidArgumentError) as error:
            fn(dx, dids, *args)
        assert str(error.value) == str(cpu_error.value)
        np.testing.assert_array_equal(device.asnumpy(dx), x)
        np.testing.assert_array_equal(device.asnumpy(dids), ids)


def test_float16_is_not_supported_on_the_gpu(device):
    x = device.asarray(np.ones((3, 2), np.float16))
    ids = device.asarray(np.array([0, 0, 1]))
    for call in (lambda: sg.math.segment_sum(x, ids),
                 lambda: sg.math.unsorted_segment_max(x, ids, 2)):
        with pytest.raises(InvalidArgumentError,
                           match=r"float16 are not supported on the GPU.*cast "
                                 r"float16 to float32"):
            call()
