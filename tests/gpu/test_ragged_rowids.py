"""``RaggedTensor.from_value_rowids`` and ``sparse_rows.sorted_segment_splits``
on device arrays: the CPU's splits (integers: bit-exact), on the device, and
the CPU's errors (class and message) for every bad argument, the device ids
unchanged."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework import sparse_rows


def _on_device(device, x):
    return isinstance(x, device.xp.ndarray)


@pytest.mark.parametrize("id_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("nrows", [None, 9])
def test_from_value_rowids_matches_cpu(device, id_dtype, nrows):
    rng = np.random.default_rng(0)
    ids = np.sort(rng.integers(0, 7, 300)).astype(id_dtype)  # > one block of ids
    ids[:5] = 0
    values = rng.standard_normal((300, 2)).astype(np.float32)
    cpu = sg.RaggedTensor.from_value_rowids(values, ids, nrows=nrows)
    dev = sg.RaggedTensor.from_value_rowids(device.asarray(values),
                                            device.asarray(ids), nrows=nrows)
    splits = dev.row_splits
    splits = splits._value if isinstance(splits, sg.Tensor) else splits
    want = cpu.row_splits
    want = want._value if isinstance(want, sg.Tensor) else want
    assert _on_device(device, splits) and splits.dtype == want.dtype
    np.testing.assert_array_equal(device.asnumpy(splits), want)
    rowids = dev.value_rowids()
    assert _on_device(device, rowids)
    np.testing.assert_array_equal(device.asnumpy(rowids), ids)
    np.testing.assert_array_equal(device.asnumpy(dev.flat_values._value),
                                  cpu.flat_values.numpy())
    assert dev.nrows() == cpu.nrows()


def test_from_value_rowids_empty(device):
    for nrows in (None, 3):
        cpu = sg.RaggedTensor.from_value_rowids(np.zeros((0,)), np.zeros(0, np.int64),
                                                nrows=nrows)
        dev = sg.RaggedTensor.from_value_rowids(
            device.xp.zeros((0,)), device.xp.zeros((0,), np.int64), nrows=nrows)
        np.testing.assert_array_equal(device.asnumpy(dev.row_splits), cpu.row_splits)


@pytest.mark.parametrize("ids, nrows, n_values", [
    ([0, 2, 1, 3], None, 4),       # decreasing
    ([-1, 0, 0], None, 3),         # negative first
    ([-3, -2], None, 2),           # all negative
    ([0, 1, 4], 3, 3),             # nrows too small (a ValueError)
    ([0, 1], -1, 2),               # negative nrows (a ValueError)
    ([0, 0, 1], None, 4),          # values of another length (a ValueError)
])
def test_from_value_rowids_errors_match_cpu(device, ids, nrows, n_values):
    ids = np.array(ids, np.int64)
    values = np.arange(float(n_values))
    with pytest.raises((InvalidArgumentError, ValueError)) as cpu_error:
        sg.RaggedTensor.from_value_rowids(values, ids, nrows=nrows)
    dev_ids = device.asarray(ids)
    with pytest.raises(type(cpu_error.value)) as error:
        sg.RaggedTensor.from_value_rowids(device.asarray(values), dev_ids, nrows=nrows)
    assert str(error.value) == str(cpu_error.value)
    np.testing.assert_array_equal(device.asnumpy(dev_ids), ids)


def test_from_value_rowids_does_not_mix_devices(device):
    with pytest.raises(ValueError, match="mix numpy"):
        sg.RaggedTensor.from_value_rowids(np.arange(2.0),
                                          device.asarray(np.array([0, 0])))


@pytest.mark.parametrize("ids, num_segments", [
    ([0, 0, 2, 2, 2], None), ([1, 1], 3), ([], None), ([], 2),
    ([5, 3, 4], None), ([0, 3, 1, 2], None), ([-1, 0], None), ([-2, -1], None),
    ([0, 4], 2), ([0, 1], -1), ([], -1), ([0, 2, 9, 1], 4),
])
def test_sorted_segment_splits_one_layer(device, ids, num_segments):
    # the same function for both array types: the same splits, the same errors
    ids = np.array(ids, np.int64)
    try:
        want = sparse_rows.sorted_segment_splits(ids, num_segments)
    except InvalidArgumentError as e:
        with pytest.raises(InvalidArgumentError) as error:
            sparse_rows.sorted_segment_splits(device.asarray(ids), num_segments)
        assert str(error.value) == str(e)
        return
    got = sparse_rows.sorted_segment_splits(device.asarray(ids), num_segments)
    assert _on_device(device, got) and got.dtype == np.int64
    np.testing.assert_array_equal(device.asnumpy(got), want)
