"""float16 and bfloat16 tables on the device: lookups, bags and sparse
segment ops, read in their dtype or (``dtype=float32``) float32, against the
CPU bit for bit.  The gathered rows are converted on the device by the CPU's
code path.  CuPy holds bfloat16 arrays from version 14 (the emulator holds
them too); an older CuPy skips the bfloat16 cases."""

import ml_dtypes
import numpy as np
import pytest
import scipy.sparse

import sparsegrad as sg
from sparsegrad.framework.tensor import wrap
from sparsegrad.ops.array_ops import rows
from sparsegrad.ops.embedding import lookups
from sparsegrad.ops.sparse_segment_ops import embedding_bag, primitive, segments

OUT = pytest.mark.parametrize("dtype", [None, "float32"], ids=["half", "float32"])
HALVES = pytest.mark.parametrize("half", [np.dtype(np.float16),
                                          np.dtype(ml_dtypes.bfloat16)],
                                 ids=["float16", "bfloat16"])


@pytest.fixture
def half_device(device, half):
    """`device`, skipping a half type its CuPy cannot hold."""
    try:
        device.xp.asarray(np.zeros(1, half))
    except Exception:  # CuPy < 14: no bfloat16 array
        pytest.skip(f"this CuPy has no {half} arrays")
    return device


def _host(device, x):
    return device.asnumpy(x._value if hasattr(x, "_value") else x)


def _same(device, got, want):
    got = _host(device, got)
    want = np.asarray(want)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def _table(half, seed=0, shape=(9, 3)):
    return (np.random.default_rng(seed).standard_normal(shape) * 4).astype(half)


@HALVES
@OUT
def test_gather_and_embedding_lookup(half_device, half, dtype, recorded_gradient):
    device = half_device
    table, ids = _table(half), np.array([[4, 0], [8, 4]])
    for f in (lambda t, i: sg.gather(t, i, dtype=dtype),
              lambda t, i: sg.nn.embedding_lookup(t, i, dtype=dtype),
              lambda t, i: sg.nn.embedding_lookup(t, i, max_norm=1.5, dtype=dtype)):
        want = f(table, ids).numpy()
        _same(device, f(device.asarray(table), device.asarray(ids)), want)
    module = rows if dtype is None else lookups     # where GatherV2 is recorded
    upstream = np.linspace(-1, 1, want.size).reshape(want.shape).astype(want.dtype)

    def gather(t, i):
        return sg.gather(t, i, dtype=dtype)

    g_want = recorded_gradient(module, gather, (table, ids), wrap(upstream))
    g_got = recorded_gradient(module, gather,
                              (device.asarray(table), device.asarray(ids)),
                              wrap(device.asarray(upstream)))
    assert g_got.values.dtype == np.dtype(dtype or half)
    _same(device, g_got.values, g_want.values.numpy())


@HALVES
@OUT
@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_bags(half_device, half, dtype, combiner, recorded_gradient):
    device = half_device
    table = _table(half, 1)
    ids, splits = np.array([0, 5, 5, 2, 1, 0, 3]), np.array([0, 3, 3, 7])
    weights = np.random.default_rng(2).uniform(0.5, 1.5, 7)

    def bag(t, i, s, w):
        return embedding_bag(t, i, s, w, combiner, dtype=dtype)

    args = (table, ids, splits, weights)
    d_args = tuple(device.asarray(a) for a in args)
    want = bag(*args).numpy()
    got = bag(*d_args)
    _same(device, got, want)
    upstream = np.linspace(-1, 1, want.size).reshape(want.shape).astype(want.dtype)
    g_want = recorded_gradient(primitive, bag, args, wrap(upstream))
    g_got = recorded_gradient(primitive, bag, d_args, wrap(device.asarray(upstream)))
    _same(device, g_got.values, g_want.values.numpy())
    matrix = scipy.sparse.csr_array((weights, ids, splits), shape=(3, 9))
    _same(device, sg.nn.embedding_lookup_sparse(device.asarray(table), matrix,
                                                combiner=combiner, dtype=dtype),
          sg.nn.embedding_lookup_sparse(table, matrix, combiner=combiner,
                                        dtype=dtype).numpy())


@HALVES
@OUT
@pytest.mark.parametrize("op", [sg.sparse.segment_sum, sg.sparse.segment_mean,
                                sg.sparse.segment_sqrt_n])
def test_sparse_segment(half_device, half, dtype, op, recorded_gradient):
    device = half_device
    table = _table(half, 3)
    indices, segment_ids = np.array([4, 0, 4, 8, 1]), np.array([0, 0, 2, 2, 3])

    def f(t, i, s):
        return op(t, i, s, num_segments=5, dtype=dtype)

    want = f(table, indices, segment_ids).numpy()
    d_args = (device.asarray(table), device.asarray(indices),
              device.asarray(segment_ids))
    _same(device, f(*d_args), want)
    upstream = np.linspace(-1, 1, want.size).reshape(want.shape).astype(want.dtype)
    g_want = recorded_gradient(segments, f, (table, indices, segment_ids),
                               wrap(upstream))
    g_got = recorded_gradient(segments, f, d_args, wrap(device.asarray(upstream)))
    _same(device, g_got.values, g_want.values.numpy())
