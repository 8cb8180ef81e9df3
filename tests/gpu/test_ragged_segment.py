"""Segment ops over RaggedTensors on the device (``ragged_segment_rows``'
CUDA twin and the generic path) against the host: the same bits, the same
row splits."""

import numpy as np
import pytest

import sparsegrad as sg


def _inputs(rng, dtype, inner):
    lengths = np.concatenate([np.arange(50), rng.integers(0, 30, 300)])
    lengths[rng.random(lengths.size) < 0.15] = 0
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(splits[-1])
    values = rng.standard_normal((n,) + inner) * 10.0 ** rng.integers(
        -3, 4, (n,) + inner)
    flat = values.reshape(-1)
    flat[rng.integers(0, flat.size, 20)] = -0.0
    flat[rng.integers(0, flat.size, 5)] = np.nan
    return values.astype(dtype), splits


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("inner", [(), (3,)])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod", "mean", "sqrt_n"])
def test_ragged_segments_on_device(device, dtype, inner, kind):
    rng = np.random.default_rng(21)
    values, splits = _inputs(rng, dtype, inner)
    if kind == "prod":
        values = (1 + values / 1e4).astype(dtype)
    n_rows = splits.shape[0] - 1
    op = getattr(sg.math, f"unsorted_segment_{kind}")
    for ids in (np.sort(rng.integers(0, 60, n_rows)),     # the kernel path
                rng.integers(0, 60, n_rows)):             # the generic path
        cpu = sg.RaggedTensor.from_row_splits(values, splits)
        dev = sg.RaggedTensor.from_row_splits(device.asarray(values),
                                              device.asarray(splits))
        want = op(cpu, ids, 64)
        got = op(dev, device.asarray(ids), 64)
        assert isinstance(got.flat_values._value, device.xp.ndarray)
        np.testing.assert_array_equal(device.asnumpy(got.row_splits), want.row_splits)
        g, w = got.flat_values.numpy(), want.flat_values.numpy()
        g[np.isnan(g)] = np.nan  # (the sign of a NaN from two NaNs is the machine's)
        w[np.isnan(w)] = np.nan
        assert g.tobytes() == w.tobytes()
