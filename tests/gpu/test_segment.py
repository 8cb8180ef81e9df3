"""Segment reductions on the device against the CPU: sorted and unsorted,
forward and gradient, and the launchers of ``_cuda.segment`` against the
Cython kernels they mirror.

Every device thread walks its segment's rows in the CPU's order (a 1-D sorted
sum with the same eight interleaved partial sums), so every comparison is
bit-exact (``assert_array_equal``; NaN compares equal to NaN there).
"""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad import _cuda
from sparsegrad._cuda import segment as cuda_segment
from sparsegrad._kernels import segment as cpu_segment
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework.tensor import wrap
from sparsegrad.ops.segment_ops import common as segment_common

DTYPES = [np.float32, np.float64]
SORTED = {
    "sum": sg.math.segment_sum, "mean": sg.math.segment_mean,
    "max": sg.math.segment_max, "min": sg.math.segment_min,
    "prod": sg.math.segment_prod,
}
UNSORTED = {
    "sum": sg.math.unsorted_segment_sum, "max": sg.math.unsorted_segment_max,
    "min": sg.math.unsorted_segment_min, "prod": sg.math.unsorted_segment_prod,
    "mean": sg.math.unsorted_segment_mean,
    "sqrt_n": sg.math.unsorted_segment_sqrt_n,
}


def _host(device, t):
    return device.asnumpy(t._value if hasattr(t, "_value") else t)


def _data(rng, n, row_shape, dtype, nan=False):
    x = rng.standard_normal((n,) + row_shape).astype(dtype)
    x.reshape(n, -1)[::5] *= -1.0
    if nan and n > 3:
        x.reshape(n, -1)[3, 0] = np.nan
    return x


def _sorted_ids(rng, n):
    # Empty segments (gaps, and none before the first id), a long segment
    # (the 1-D sum's eight partial sums plus a tail), duplicates everywhere.
    long_run = min(n, 21)
    ids = np.concatenate([np.full(long_run, 2),
                          np.sort(rng.integers(3, 9, n - long_run)) + 1])
    return ids.astype(np.int64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("row_shape", [(), (3,), (2, 2)])
@pytest.mark.parametrize("op", sorted(SORTED))
def test_sorted_bits(device, dtype, row_shape, op):
    rng = np.random.default_rng(1)
    x = _data(rng, 40, row_shape, dtype, nan=op in ("max", "min"))
    ids = _sorted_ids(rng, 40)
    for id_dtype in (np.int32, np.int64):
        want = SORTED[op](x, ids.astype(id_dtype)).numpy()
        got = SORTED[op](device.asarray(x), device.asarray(ids.astype(id_dtype)))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(_host(device, got), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sorted_single_row_and_empty(device, dtype):
    x = np.array([[1.5, -0.0]], dtype=dtype)
    for op, f in SORTED.items():
        np.testing.assert_array_equal(
            _host(device, f(device.asarray(x), device.asarray(np.array([3])))),
            f(x, [3]).numpy(), err_msg=op)
        empty = f(device.asarray(x[:0]), device.asarray(np.zeros(0, np.int64)))
        assert empty.shape == (0, 2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("row_shape", [(), (3,)])
@pytest.mark.parametrize("op", sorted(UNSORTED))
@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_unsorted_bits(device, dtype, row_shape, op, order):
    rng = np.random.default_rng(2)
    n = 37
    x = _data(rng, n, row_shape, dtype, nan=op in ("max", "min"))
    if order == "sorted":  # the CPU's one-pass path, negative ids at the head
        # (segment 3 long enough for the 1-D sum's eight partial sums)
        ids = np.sort(np.concatenate([rng.integers(-2, 6, n - 12), np.full(12, 3)]))
    else:  # grouped; negative ids dropped, duplicates, empty segments
        ids = rng.integers(-1, 6, n)
    want = UNSORTED[op](x, ids, 8).numpy()
    got = UNSORTED[op](device.asarray(x), device.asarray(ids), 8)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(_host(device, got), want)


def test_unsorted_nd_ids_and_no_rows(device):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 2))
    ids = rng.integers(-1, 5, (4, 3))
    for op in ("sum", "max", "prod"):
        want = UNSORTED[op](x, ids, 6).numpy()
        got = UNSORTED[op](device.asarray(x), device.asarray(ids), 6)
        np.testing.assert_array_equal(_host(device, got), want, err_msg=op)
    # only negative ids, and no segments: the fill / an empty result
    neg = np.full(4, -1)
    np.testing.assert_array_equal(
        _host(device, sg.math.unsorted_segment_max(
            device.asarray(x[:, 0]), device.asarray(neg), 3)),
        sg.math.unsorted_segment_max(x[:, 0], neg, 3).numpy())
    assert sg.math.unsorted_segment_sum(
        device.asarray(x[:, 0]), device.asarray(neg), 0).shape == (0, 2)


def _unchanged(device, arrays, copies):
    for a, c in zip(arrays, copies):
        np.testing.assert_array_equal(device.asnumpy(a), c)


@pytest.mark.parametrize("ids, message", [
    ([0, 2, 1, 3], "segment ids are not increasing"),
    ([0, 1, -1], "segment ids must be >= 0"),
    ([-1, 0, 1], r"Segment id -1 out of range \[0, 2\)"),
])
def test_sorted_errors(device, ids, message):
    x = np.arange(len(ids), dtype=np.float32)
    ids = np.array(ids)
    with pytest.raises(InvalidArgumentError, match=message):
        sg.math.segment_sum(x, ids)
    dx, dids = device.asarray(x), device.asarray(ids)
    with pytest.raises(InvalidArgumentError, match=message):
        sg.math.segment_sum(dx, dids)
    _unchanged(device, (dx, dids), (x, ids))


def test_unsorted_errors(device):
    x = np.arange(6.0).reshape(3, 2)
    ids = np.array([[0, 1, 5]]).reshape(3)
    message = r"segment_ids\[2\] = 5 is out of range \[0, 3\)"
    dx, dids = device.asarray(x), device.asarray(ids)
    for op in ("sum", "max", "mean"):
        with pytest.raises(InvalidArgumentError, match=message):
            UNSORTED[op](dx, dids, 3)
    nd = np.array([[0, 1], [7, 0]])
    with pytest.raises(InvalidArgumentError, match=r"segment_ids\[1,0\] = 7"):
        sg.math.unsorted_segment_sum(device.asarray(np.ones((2, 2))),
                                     device.asarray(nd), 3)
    _unchanged(device, (dx, dids), (x, ids))
    with pytest.raises(ValueError, match="mix numpy"):
        sg.math.segment_sum(dx, ids)


# -- gradients ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("kind", ["sorted", "unsorted"])
def test_gradients(device, dtype, op, kind, recorded_gradient):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((17, 3)).astype(dtype)
    x[4, 1] = 0.0  # a zero in a product
    x[9] = x[8]  # ties in a max / min
    if kind == "sorted":
        ids = np.sort(rng.integers(0, 5, 17))
        f, args = SORTED[op], (ids,)
        n_out = ids[-1] + 1
    else:
        if op == "mean":
            pytest.skip("unsorted mean is a composition (sum, divide)")
        ids = rng.integers(-1, 5, 17)
        f, args = UNSORTED[op], (ids, 6)
        n_out = 6
    upstream = rng.standard_normal((n_out, 3)).astype(dtype)
    want = recorded_gradient(segment_common, f, (x,) + args,
                             wrap(upstream))
    d_args = tuple(device.asarray(a) if isinstance(a, np.ndarray) else a
                   for a in (x,) + args)
    got = recorded_gradient(segment_common, f, d_args,
                            wrap(device.asarray(upstream)))
    np.testing.assert_array_equal(_host(device, got), want.numpy())


# -- the launchers against the Cython kernels --------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_launchers_mirror_cython(device, dtype):
    rng = np.random.default_rng(5)
    ids = np.sort(rng.integers(0, 6, 30)).astype(np.int32)
    splits = np.empty(8, np.int64)
    assert cpu_segment.sorted_splits(ids, splits, 1) == -1
    d_splits = device.xp.empty((8,), dtype=np.int64)
    assert cuda_segment.sorted_splits(device.asarray(ids), d_splits, 1) == -1
    np.testing.assert_array_equal(device.asnumpy(d_splits), splits)
    bad = ids.copy()
    bad[11] = 0
    assert cuda_segment.sorted_splits(device.asarray(bad), d_splits, 1) == \
        cpu_segment.sorted_splits(bad, splits, 1)

    x = rng.standard_normal((30, 2)).astype(dtype)
    for op in range(5):
        out = np.empty((7, 2), dtype)
        assert cpu_segment.segment_reduce_ids(x, ids, op, 0.5, True, out, 1) == 0
        d_out = device.xp.empty((7, 2), dtype=dtype)
        assert cuda_segment.segment_reduce_ids(
            device.asarray(x), device.asarray(ids), op, 0.5, True, d_out, 1) == 0
        np.testing.assert_array_equal(device.asnumpy(d_out), out)
    assert cuda_segment.segment_reduce_ids(
        device.asarray(x), device.asarray(bad), 0, 0.0, False, d_out, 1) == 1

    shuffled = rng.permutation(ids).astype(np.int64)
    shuffled[3] = 9  # at least n_segments: skipped and reported
    for op in (0, 2, 3, 4):
        out = np.full((7, 2), 0.25, dtype)
        d_out = device.asarray(out)
        assert cpu_segment.scatter_reduce(x, shuffled, op, out, 1) == 1
        assert cuda_segment.scatter_reduce(
            device.asarray(x), device.asarray(shuffled), op, d_out, 1) == 1
        np.testing.assert_array_equal(device.asnumpy(d_out), out)

    order = rng.permutation(30).astype(np.int64)
    starts = np.array([0, 4, 4, 13, 30], np.int64)
    x[5, 0] = 0.0
    out = np.zeros((30, 2), dtype)
    cpu_segment.prod_others(x, order, starts, out, 1)
    d_out = device.xp.zeros((30, 2), dtype=dtype)
    cuda_segment.prod_others(device.asarray(x), device.asarray(order),
                             device.asarray(starts), d_out, 1)
    np.testing.assert_array_equal(device.asnumpy(d_out), out)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [1, 5])
def test_scatter_reduce_sorts_once(device, dtype, width):
    # ids in any order: negative ones skipped, long groups (the four-row
    # loads), NaN for max/min, every id in range (0) and one above (1)
    rng = np.random.default_rng(width)
    ids = rng.integers(-2, 6, 60).astype(np.int64)
    x = rng.standard_normal((60, width)).astype(dtype)
    x[7, 0] = np.nan
    for high in (None, 8):
        if high is not None:
            ids[20] = high
        for op in (0, 2, 3, 4):
            out = np.full((6, width), 0.5, dtype)
            d_out = device.asarray(out)
            want = cpu_segment.scatter_reduce(x, ids, op, out, 1)
            got = cuda_segment.scatter_reduce(device.asarray(x), device.asarray(ids),
                                              op, d_out, 1)
            assert got == want == (0 if high is None else 1)
            np.testing.assert_array_equal(device.asnumpy(d_out), out)


def test_sorted_splits_empty_and_decreasing(device):
    splits = np.full(4, 9, np.int64)
    assert cpu_segment.sorted_splits(np.zeros(0, np.int64), splits, 1) == -1
    d_splits = device.xp.full((4,), 9, dtype=np.int64)
    assert cuda_segment.sorted_splits(device.asarray(np.zeros(0, np.int64)),
                                      d_splits, 1) == -1
    np.testing.assert_array_equal(device.asnumpy(d_splits), splits)
    # decreasing ids: the position is reported and nothing written
    assert cuda_segment.sorted_splits(device.asarray(np.array([0, 2, 1])),
                                      d_splits, 1) == 2
    np.testing.assert_array_equal(device.asnumpy(d_splits), splits)


def test_summary_many_blocks(device):
    # More ids than one block's share: the partials of several blocks fold in.
    ids = np.arange(3 * _cuda.BLOCK + 5, dtype=np.int64)
    ids[600] = -7
    ((lo, hi, dec, first, last),) = cuda_segment.read_summaries(
        cuda_segment.summarize(device.asarray(ids)))
    assert (lo, hi, dec, first, last) == (-7, ids[-1], 600, 0, ids[-1])


def test_gradient_of_sparse_upstream(device, recorded_gradient):
    # An IndexedSlices upstream (densified on the device; the result is
    # dense either way), with a repeated row.
    from sparsegrad.framework.indexed_slices import IndexedSlices

    x = np.arange(12.0).reshape(6, 2)
    ids = np.array([0, 0, 1, 3, 3, 3])
    values, rows = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), np.array([3, 0, 3])
    for f in (sg.math.segment_sum, sg.math.segment_mean, sg.math.segment_max):
        want = recorded_gradient(segment_common, f, (x, ids),
                                 IndexedSlices(wrap(values), wrap(rows), (4, 2)))
        got = recorded_gradient(
            segment_common, f, (device.asarray(x), device.asarray(ids)),
            IndexedSlices(wrap(device.asarray(values)), wrap(device.asarray(rows)),
                          (4, 2)))
        np.testing.assert_array_equal(_host(device, got), want.numpy())
