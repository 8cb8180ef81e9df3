"""The clip ops on float16 CuPy arguments against the CPU, bit for bit: the
norm of half values converted to float32 in the CPU's pieces
(``clip_ops.rows.HALF_BATCH``, the batches' totals added on the device in the
CPU's order), IndexedSlices rows summed in float32; bfloat16 CuPy arguments
are refused."""

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.ops.clip_ops import rows as clip_rows


def _half(shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 3).astype(np.float16)


@pytest.mark.parametrize("batch", [8192, 1 << 22])
def test_float16_norms_and_clips_match_the_cpu(device, monkeypatch, batch):
    monkeypatch.setattr(clip_rows, "HALF_BATCH", batch)
    a, b = _half((5, 4000), 1), _half(300, 2)  # several pieces with 8192
    values = _half((6, 3), 3)
    indices = np.array([4, 1, 4, 0, 1, 4])
    host = sg.IndexedSlices(values, indices, dense_shape=(5, 3))
    dev = sg.IndexedSlices(device.asarray(values), device.asarray(indices),
                           dense_shape=(5, 3))
    da, db = device.asarray(a), device.asarray(b)
    np.testing.assert_array_equal(sg.global_norm([da, dev, db]).numpy(),
                                  sg.global_norm([a, host, b]).numpy())
    (ca, cs, cb), n = sg.clip_by_global_norm([a, host, b], 2.0)
    (dca, dcs, dcb), dn = sg.clip_by_global_norm([da, dev, db], 2.0)
    assert dn.dtype == np.float16
    np.testing.assert_array_equal(dn.numpy(), n.numpy())
    for d, h in ((dca, ca), (dcs.values, cs.values), (dcb, cb)):
        np.testing.assert_array_equal(d.numpy(), h.numpy())
    for x, dx in ((a, da), (host, dev)):
        h, d = sg.clip_by_norm(x, 3.0), sg.clip_by_norm(dx, 3.0)
        if isinstance(h, sg.IndexedSlices):
            h, d = h.values, d.values
        np.testing.assert_array_equal(d.numpy(), h.numpy())


def test_bfloat16_cupy_arguments_are_refused(device):
    x = np.ones(3, ml_dtypes.bfloat16)
    try:
        dx = device.asarray(x)
    except Exception:  # a CuPy without bfloat16 arrays
        pytest.skip("this CuPy holds no bfloat16 arrays")
    for call in (lambda: sg.global_norm([dx]),
                 lambda: sg.clip_by_global_norm([dx], 1.0),
                 lambda: sg.clip_by_norm(dx, 1.0)):
        with pytest.raises(InvalidArgumentError,
                           match=r"is a bfloat16 CuPy array; the clip ops compute "
                                 r"float16, float32 and float64 on the GPU"):
            call()
    np.testing.assert_array_equal(device.asnumpy(dx).astype(np.float32), 1.0)
