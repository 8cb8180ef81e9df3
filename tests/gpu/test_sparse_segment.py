"""Sparse segment reductions (embedding bags) and embedding lookups on the
device against the CPU, forward and gradient.

Each bag's row is accumulated by one device thread per column in entry order
from zero and divided as the CPU divides; each distinct index's gradient row
is summed in the entries' original order: every comparison is bit-exact.
"""

import numpy as np
import pytest
import scipy.sparse

import sparsegrad as sg
from sparsegrad._cuda import segment as cuda_segment
from sparsegrad._kernels import segment as cpu_segment
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework.indexed_slices import IndexedSlices
from sparsegrad.framework.tensor import wrap
from sparsegrad.ops.array_ops import rows
from sparsegrad.ops.embedding import lookups
from sparsegrad.ops.sparse_segment_ops import embedding_bag, primitive, segments

DTYPES = [np.float32, np.float64]
SPARSE = {
    "sum": sg.sparse.segment_sum, "mean": sg.sparse.segment_mean,
    "sqrt_n": sg.sparse.segment_sqrt_n,
}


def _host(device, x):
    return device.asnumpy(x._value if hasattr(x, "_value") else x)


def _assert_slices_equal(device, got, want):
    assert isinstance(got, IndexedSlices) and isinstance(want, IndexedSlices)
    assert got.dense_shape == want.dense_shape
    np.testing.assert_array_equal(_host(device, got.indices), want.indices.numpy())
    assert got.values.dtype == want.values.dtype
    np.testing.assert_array_equal(_host(device, got.values), want.values.numpy())


def _bags(rng, n_rows, nnz, n_segments):
    """Indices with duplicates, sorted segment ids with empty segments
    (including the first and, through num_segments, the last)."""
    indices = rng.integers(0, n_rows, nnz)
    indices[3] = indices[7] = indices[8]
    segment_ids = np.sort(rng.integers(1, n_segments - 2, nnz))
    return indices, segment_ids


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("row_shape", [(1,), (5,), (2, 3)])
@pytest.mark.parametrize("op", sorted(SPARSE))
def test_sparse_segment_forward_and_gradient(device, dtype, row_shape,
                                             op, recorded_gradient):
    rng = np.random.default_rng(10)
    table = rng.standard_normal((12,) + row_shape).astype(dtype)
    indices, segment_ids = _bags(rng, 12, 30, 9)
    for id_dtype in (np.int32, np.int64):
        idx, seg = indices.astype(id_dtype), segment_ids.astype(id_dtype)
        want = SPARSE[op](table, idx, seg, num_segments=9).numpy()
        got = SPARSE[op](device.asarray(table), device.asarray(idx),
                         device.asarray(seg), num_segments=9)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(_host(device, got), want)
    upstream = rng.standard_normal(want.shape).astype(dtype)
    g_want = recorded_gradient(segments, SPARSE[op],
                               (table, indices, segment_ids, 9), wrap(upstream))
    g_got = recorded_gradient(
        segments, SPARSE[op],
        (device.asarray(table), device.asarray(indices),
         device.asarray(segment_ids), 9),
        wrap(device.asarray(upstream)))
    _assert_slices_equal(device, g_got, g_want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_embedding_bag(device, dtype, combiner, weighted, recorded_gradient):
    rng = np.random.default_rng(11)
    table = rng.standard_normal((10, 4)).astype(dtype)
    ids = rng.integers(0, 10, 25)
    ids[2] = ids[3] = ids[20]
    splits = np.array([0, 0, 4, 9, 9, 13, 15, 25])  # empty bags, one of 10
    weights = None
    if weighted:
        weights = rng.uniform(-1.0, 2.0, 25).astype(dtype)
        weights[13:15] = [0.5, -0.5]  # a bag whose weights sum to zero
    args = (table, ids, splits, weights, combiner)
    want = embedding_bag(*args).numpy()
    d_args = tuple(device.asarray(a) if isinstance(a, np.ndarray) else a
                   for a in args)
    got = embedding_bag(*d_args)
    np.testing.assert_array_equal(_host(device, got), want)
    upstream = rng.standard_normal(want.shape).astype(dtype)
    g_want = recorded_gradient(primitive, embedding_bag,
                               args, wrap(upstream))
    g_got = recorded_gradient(primitive, embedding_bag,
                              d_args, wrap(device.asarray(upstream)))
    _assert_slices_equal(device, g_got, g_want)


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_float16_bags_in_float32(device, combiner, recorded_gradient):
    # float16 is reduced in float32 and rounded once, forward and gradient.
    rng = np.random.default_rng(15)
    table = rng.standard_normal((6, 3)).astype(np.float16)
    ids = np.array([0, 5, 5, 2, 1, 0, 3])
    splits = np.array([0, 3, 3, 7])
    weights = rng.uniform(0.5, 1.5, 7).astype(np.float16)
    args = (table, ids, splits, weights, combiner)
    d_args = tuple(device.asarray(a) if isinstance(a, np.ndarray) else a
                   for a in args)
    want = embedding_bag(*args).numpy()
    got = embedding_bag(*d_args)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(_host(device, got), want)
    upstream = rng.standard_normal(want.shape).astype(np.float16)
    g_want = recorded_gradient(primitive, embedding_bag,
                               args, wrap(upstream))
    g_got = recorded_gradient(primitive, embedding_bag,
                              d_args, wrap(device.asarray(upstream)))
    _assert_slices_equal(device, g_got, g_want)
    seg = np.array([0, 0, 1, 1, 1, 3, 3])
    f = {"sum": sg.sparse.segment_sum, "mean": sg.sparse.segment_mean,
         "sqrtn": sg.sparse.segment_sqrt_n}[combiner]
    np.testing.assert_array_equal(
        _host(device, f(device.asarray(table), device.asarray(ids),
                        device.asarray(seg))),
        f(table, ids, seg).numpy())


def test_empty_and_single_entry(device):
    table = np.arange(6.0).reshape(3, 2)
    for op, f in SPARSE.items():
        got = f(device.asarray(table), device.asarray(np.zeros(0, np.int64)),
                device.asarray(np.zeros(0, np.int64)), num_segments=2)
        np.testing.assert_array_equal(_host(device, got), np.zeros((2, 2)))
        got = f(device.asarray(table), device.asarray(np.array([2])),
                device.asarray(np.array([1])))
        np.testing.assert_array_equal(
            _host(device, got), f(table, [2], [1]).numpy(), err_msg=op)


def test_launchers_mirror_cython(device):
    rng = np.random.default_rng(12)
    table = rng.standard_normal((8, 3))
    indices = rng.integers(0, 8, 20).astype(np.int32)
    weights = rng.standard_normal(20)
    splits = np.array([0, 5, 5, 12, 20], np.int64)
    for combiner in range(3):
        out = np.empty((4, 3))
        cpu_segment.sparse_segment_reduce(table, indices, weights, splits,
                                          combiner, out, 1)
        d_out = device.xp.empty((4, 3), dtype=np.float64)
        cuda_segment.sparse_segment_reduce(
            device.asarray(table), device.asarray(indices),
            device.asarray(weights), device.asarray(splits), combiner, d_out, 1)
        np.testing.assert_array_equal(device.asnumpy(d_out), out)
    order = np.argsort(indices, kind="stable").astype(np.int64)
    unique, first = np.unique(indices[order], return_index=True)
    starts = np.append(first, 20).astype(np.int64)
    segment_of = np.repeat(np.arange(4), np.diff(splits)).astype(np.int32)
    grad = rng.standard_normal((4, 3))
    out = np.empty((unique.shape[0], 3))
    cpu_segment.sparse_segment_reduce_grad(grad, order, starts, segment_of,
                                           weights, out, 1)
    d_out = device.xp.empty(out.shape, dtype=np.float64)
    cuda_segment.sparse_segment_reduce_grad(
        device.asarray(grad), device.asarray(order), device.asarray(starts),
        device.asarray(segment_of), device.asarray(weights), d_out, 1)
    np.testing.assert_array_equal(device.asnumpy(d_out), out)


def _unchanged(device, arrays, copies):
    for a, c in zip(arrays, copies):
        np.testing.assert_array_equal(device.asnumpy(a), c)


@pytest.mark.parametrize("indices, segment_ids, num_segments, message", [
    ([0, 5, 1], [0, 0, 1], None, r"Bad: indices\[1\] == 5 out of range \[0, 4\)"),
    ([0, -1, 1], [0, 0, 1], None, r"Bad: indices\[1\] == -1 out of range"),
    ([0, 1, 1], [0, 1, 0], None, "segment ids are not increasing"),
    ([0, 1, 1], [-1, 0, 0], None, r"Segment id -1 out of range \[0, 1\)"),
    ([0, 1, 1], [0, 1, 2], 2, "segment ids must be < num_segments"),
])
def test_sparse_segment_errors(device, indices, segment_ids, num_segments, message):
    table = np.arange(8.0).reshape(4, 2)
    idx, seg = np.array(indices), np.array(segment_ids)
    with pytest.raises(InvalidArgumentError, match=message):
        sg.sparse.segment_mean(table, idx, seg, num_segments=num_segments)
    arrays = tuple(device.asarray(a) for a in (table, idx, seg))
    with pytest.raises(InvalidArgumentError, match=message):
        sg.sparse.segment_mean(*arrays, num_segments=num_segments)
    _unchanged(device, arrays, (table, idx, seg))


@pytest.mark.parametrize("ids, splits, message", [
    ([0, 4, 1], [0, 1, 3], r"ids\[1\] = 4 is not in \[0, 4\)"),
    ([0, 1, 1], [0, 2, 1, 3], r"splits\[2\] = 1 < splits\[1\] = 2"),
    ([0, 1, 1], [0, 2], r"splits must run from 0 to the number of ids \(3\)"),
])
def test_embedding_bag_errors(device, ids, splits, message):
    table = np.arange(8.0).reshape(4, 2)
    arrays = tuple(device.asarray(np.array(a)) for a in (table, ids, splits))
    with pytest.raises(InvalidArgumentError, match=message):
        embedding_bag(table, np.array(ids), np.array(splits))
    with pytest.raises(InvalidArgumentError, match=message):
        embedding_bag(*arrays)
    _unchanged(device, arrays, (table, np.array(ids), np.array(splits)))


# -- embedding_lookup and embedding_lookup_sparse --------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_lookup(device, dtype, recorded_gradient):
    rng = np.random.default_rng(13)
    table = rng.standard_normal((9, 3)).astype(dtype)
    ids = rng.integers(0, 9, (4, 2))
    want = sg.nn.embedding_lookup(table, ids).numpy()
    got = sg.nn.embedding_lookup(device.asarray(table), device.asarray(ids))
    np.testing.assert_array_equal(_host(device, got), want)
    upstream = rng.standard_normal(want.shape).astype(dtype)
    g_want = recorded_gradient(rows, lookups.gather, (table, ids),
                               wrap(upstream))
    g_got = recorded_gradient(rows, lookups.gather,
                              (device.asarray(table), device.asarray(ids)),
                              wrap(device.asarray(upstream)))
    _assert_slices_equal(device, g_got, g_want)
    d_table, d_bad = device.asarray(table), device.asarray(np.array([1, 9]))
    with pytest.raises(InvalidArgumentError, match=r"indices\[1\] = 9 is not in"):
        sg.nn.embedding_lookup(d_table, d_bad)
    _unchanged(device, (d_table, d_bad), (table, np.array([1, 9])))


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_embedding_lookup_sparse_scipy_ids(device, combiner):
    rng = np.random.default_rng(14)
    table = rng.standard_normal((7, 4)).astype(np.float32)
    weights = rng.uniform(0.1, 2.0, 9)
    ids = scipy.sparse.csr_array(
        (weights, rng.integers(0, 7, 9), [0, 3, 3, 7, 9]), shape=(4, 7))
    want = sg.nn.embedding_lookup_sparse(table, ids, combiner=combiner).numpy()
    got = sg.nn.embedding_lookup_sparse(device.asarray(table), ids,
                                        combiner=combiner)
    np.testing.assert_array_equal(_host(device, got), want)


def test_safe_embedding_lookup_sparse(device):
    table = np.arange(8.0).reshape(4, 2)
    ids = scipy.sparse.csr_array((np.array([1.0, 2.0, 1.0]), [1, 3, 2], [0, 2, 2, 3]),
                                 shape=(3, 4))
    for default_id in (None, 0):
        want = sg.nn.safe_embedding_lookup_sparse(table, ids,
                                                  default_id=default_id).numpy()
        got = sg.nn.safe_embedding_lookup_sparse(device.asarray(table), ids,
                                                 default_id=default_id)
        np.testing.assert_array_equal(_host(device, got), want)


def test_segment_of_splits(device):
    # empty bags at both ends and between, a long bag; no bag at all
    splits = np.array([0, 0, 3, 3, 40, 41, 41], np.int64)
    got = cuda_segment.segment_of_splits(device.asarray(splits), 41)
    want = np.repeat(np.arange(6), np.diff(splits))
    np.testing.assert_array_equal(device.asnumpy(got), want)
    assert cuda_segment.segment_of_splits(
        device.asarray(np.zeros(3, np.int64)), 0).shape == (0,)
