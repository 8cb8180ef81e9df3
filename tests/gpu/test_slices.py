"""The CUDA twins of the IndexedSlices kernels (``sparsegrad._cuda.slices``)
and the routing of ``sparse_rows`` / ``IndexedSlices`` for CuPy arrays,
against the CPU.  Every result here is a copy or a sum in a fixed order, so
the device must give the CPU's bits (assert_array_equal)."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad._cuda import slices as cuda_slices
from sparsegrad._kernels import slices as cpu_slices
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework import backend, sparse_rows

FLOATS = (np.float32, np.float64)


def _data(dtype, n=40, n_rows=9, row_shape=(3,), index_dtype=np.int64, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((n,) + row_shape).astype(dtype)
    indices = rng.integers(0, n_rows, n).astype(index_dtype)
    indices[:4] = indices[4]  # duplicates for sure
    target = rng.standard_normal((n_rows,) + row_shape).astype(dtype)
    return values, indices, target


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("row_shape", [(), (3,), (2, 5)])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_scatter_add_and_update_match_cpu(device, dtype, row_shape, index_dtype):
    values, indices, target = _data(dtype, row_shape=row_shape,
                                    index_dtype=index_dtype)
    for op in (sparse_rows.scatter_add, sparse_rows.scatter_update):
        cpu = op(target.copy(), indices, values)
        out = device.asarray(target)
        got = op(out, device.asarray(indices), device.asarray(values))
        assert got is out and backend.is_cupy_array(got)
        np.testing.assert_array_equal(device.asnumpy(got), cpu)


def test_scatter_add_values_aliasing_the_target(device):
    # values that are rows of the target: read as they were before the call
    _, indices, target = _data(np.float32, n=6)
    cpu = target.copy()
    sparse_rows.scatter_add(cpu, indices, cpu[:6])
    out = device.asarray(target)
    sparse_rows.scatter_add(out, device.asarray(indices), out[:6])
    np.testing.assert_array_equal(device.asnumpy(out), cpu)


def test_scatter_add_integer_values(device):
    _, indices, _ = _data(np.float32)
    values = np.arange(40, dtype=np.int32).reshape(40, 1)
    cpu = sparse_rows.scatter_add(np.zeros((9, 1), np.int32), indices, values)
    got = sparse_rows.scatter_add(device.xp.zeros((9, 1), np.int32),
                                  device.asarray(indices), device.asarray(values))
    np.testing.assert_array_equal(device.asnumpy(got), cpu)


@pytest.mark.parametrize("op", [sparse_rows.scatter_add, sparse_rows.scatter_update])
def test_scatter_bad_index_raises_as_cpu_and_writes_nothing(device, op):
    values, indices, target = _data(np.float64)
    indices[7] = 9
    with pytest.raises(InvalidArgumentError) as cpu_error:
        op(target.copy(), indices, values)
    out = device.asarray(target)
    with pytest.raises(InvalidArgumentError) as error:
        op(out, device.asarray(indices), device.asarray(values))
    assert str(error.value) == str(cpu_error.value) == "indices[7] = 9 is not in [0, 9)"
    np.testing.assert_array_equal(device.asnumpy(out), target)
    # a negative index, a shape mismatch: the same messages too
    indices[7] = -1
    with pytest.raises(InvalidArgumentError, match=r"indices\[7\] = -1 is not"):
        op(out, device.asarray(indices), device.asarray(values))
    with pytest.raises(InvalidArgumentError) as cpu_error:
        op(target.copy(), indices[:3], values)
    with pytest.raises(InvalidArgumentError) as error:
        op(out, device.asarray(indices[:3]), device.asarray(values))
    assert str(error.value) == str(cpu_error.value)
    np.testing.assert_array_equal(device.asnumpy(out), target)


def test_scatter_mixing_host_and_device_raises(device):
    values, indices, target = _data(np.float32)
    out = device.asarray(target)
    with pytest.raises(ValueError, match="mix numpy"):
        sparse_rows.scatter_add(out, indices, device.asarray(values))
    np.testing.assert_array_equal(device.asnumpy(out), target)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("row_shape", [(), (4,)])
def test_deduplicate_matches_cpu(device, dtype, row_shape):
    values, indices, _ = _data(dtype, row_shape=row_shape)
    unique, summed = sparse_rows.deduplicate(indices, values)
    d_unique, d_summed = sparse_rows.deduplicate(device.asarray(indices),
                                                 device.asarray(values))
    assert backend.is_cupy_array(d_unique) and backend.is_cupy_array(d_summed)
    np.testing.assert_array_equal(device.asnumpy(d_unique), unique)
    assert d_unique.dtype == unique.dtype
    np.testing.assert_array_equal(device.asnumpy(d_summed), summed)


def test_deduplicate_empty_and_integer_and_negative(device):
    u, s = sparse_rows.deduplicate(device.xp.zeros((0,), np.int64),
                                   device.xp.zeros((0, 2), np.float32))
    assert u.shape == (0,) and s.shape == (0, 2) and backend.is_cupy_array(s)
    values, indices, _ = _data(np.float32)
    ints = (values * 10).astype(np.int64)
    cpu = sparse_rows.deduplicate(indices, ints)
    got = sparse_rows.deduplicate(device.asarray(indices), device.asarray(ints))
    np.testing.assert_array_equal(device.asnumpy(got[1]), cpu[1])
    indices[3] = -2
    with pytest.raises(InvalidArgumentError) as cpu_error:
        sparse_rows.deduplicate(indices, values)
    with pytest.raises(InvalidArgumentError) as error:
        sparse_rows.deduplicate(device.asarray(indices), device.asarray(values))
    assert str(error.value) == str(cpu_error.value)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
def test_gather_rows_matches_cpu(device, dtype):
    table = np.arange(33, dtype=dtype).reshape(11, 3)
    indices = np.array([[3, 10], [0, 3]], dtype=np.int32)
    got = sparse_rows.gather_rows(device.asarray(table), device.asarray(indices))
    assert backend.is_cupy_array(got)
    np.testing.assert_array_equal(device.asnumpy(got), table[indices])
    empty = sparse_rows.gather_rows(device.asarray(table),
                                    device.xp.zeros((0,), np.int64))
    assert empty.shape == (0, 3)


def test_kernel_twins_match_cython(device):
    """The launchers' own signatures: all_in_range, group_stable,
    gather_group_sum and gather_rows as the Cython functions."""
    xp = device.xp
    _, indices, _ = _data(np.float32, n=30, n_rows=7)
    for bound in (7, 6, 0):
        for index_dtype in (np.int32, np.int64):
            idx = indices.astype(index_dtype)
            assert cuda_slices.all_in_range(device.asarray(idx), bound) == \
                cpu_slices.all_in_range(idx, bound)
    n = indices.shape[0]
    outs = [np.zeros(n, np.int64), np.zeros(n, indices.dtype),
            np.zeros(n + 1, np.int64)]
    k = cpu_slices.group_stable(indices, 6, np.zeros((4, n), np.int64), *outs)
    d_outs = [xp.zeros(n, np.int64), xp.zeros(n, indices.dtype),
              xp.zeros(n + 1, np.int64)]
    assert cuda_slices.group_stable(device.asarray(indices), 6, None, *d_outs) == k
    for cpu, dev in zip(outs, d_outs):
        np.testing.assert_array_equal(device.asnumpy(dev)[:k + 1], cpu[:k + 1])
    values = np.random.default_rng(1).standard_normal((n, 5))
    out = np.zeros((k, 5))
    cpu_slices.gather_group_sum(values, outs[0], outs[2][:k + 1], out, 1)
    d_out = xp.zeros((k, 5))
    cuda_slices.gather_group_sum(device.asarray(values), d_outs[0],
                                 xp.ascontiguousarray(d_outs[2][:k + 1]), d_out, 1)
    np.testing.assert_array_equal(device.asnumpy(d_out), out)
    table = values.view(np.uint8)
    rows = np.array([4, 0, 4], np.int64)
    d_rows = xp.zeros((3, table.shape[1]), np.uint8)
    cuda_slices.gather_rows(device.asarray(table), device.asarray(rows), d_rows, 1)
    np.testing.assert_array_equal(device.asnumpy(d_rows), table[rows])


@pytest.mark.parametrize("dtype", FLOATS)
def test_indexed_slices_on_the_device(device, dtype):
    values, indices, _ = _data(dtype)
    host = sg.IndexedSlices(values, indices, dense_shape=(9, 3))
    dev = sg.IndexedSlices(device.asarray(values), device.asarray(indices),
                           dense_shape=(9, 3))
    assert backend.is_cupy_array(dev.values._value)
    assert backend.is_cupy_array(dev.indices._value)
    dense = dev.to_dense()
    assert backend.is_cupy_array(dense._value)
    np.testing.assert_array_equal(dense.numpy(), host.to_dense().numpy())
    np.testing.assert_array_equal(np.asarray(dev), np.asarray(host))
    d, h = dev.deduplicate(), host.deduplicate()
    assert backend.is_cupy_array(d.values._value)
    np.testing.assert_array_equal(d.indices.numpy(), h.indices.numpy())
    np.testing.assert_array_equal(d.values.numpy(), h.values.numpy())
    for got, want in [(-dev, -host), (dev * 3.5, host * 3.5), (dev / 3, host / 3),
                      (dev * sg.constant(device.xp.asarray(dtype(2))), host * 2)]:
        assert backend.is_cupy_array(got.values._value)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    both = sg.IndexedSlices.concat([dev, dev])
    want = sg.IndexedSlices.concat([host, host]).to_dense().numpy()
    np.testing.assert_array_equal(both.to_dense().numpy(), want)
    # list indices follow the values to the device; .numpy() copies to the host
    listed = sg.IndexedSlices(device.asarray(values), indices.tolist())
    assert backend.is_cupy_array(listed.indices._value)
    copy = listed.values.numpy()
    copy[0] = 99
    np.testing.assert_array_equal(listed.values.numpy(), values)


def test_indexed_slices_empty_and_single_row(device):
    xp = device.xp
    empty = sg.IndexedSlices(xp.zeros((0, 2), np.float32), xp.zeros((0,), np.int32),
                             dense_shape=(4, 2))
    np.testing.assert_array_equal(empty.to_dense().numpy(),
                                  np.zeros((4, 2), np.float32))
    assert empty.deduplicate().values.shape == (0, 2)
    one = sg.IndexedSlices(xp.asarray(np.array([[1.5, 2.0]])),
                           xp.asarray(np.array([3])), dense_shape=(4, 2))
    np.testing.assert_array_equal(one.to_dense().numpy()[3], [1.5, 2.0])


def test_indexed_slices_errors_as_on_the_cpu(device):
    values, indices, _ = _data(np.float32)
    indices[5] = 12
    with pytest.raises(InvalidArgumentError) as cpu_error:
        sg.IndexedSlices(values, indices, dense_shape=(9, 3))
    d_values, d_indices = device.asarray(values), device.asarray(indices)
    with pytest.raises(InvalidArgumentError) as error:
        sg.IndexedSlices(d_values, d_indices, dense_shape=(9, 3))
    assert str(error.value) == str(cpu_error.value)
    indices[5] = -3
    with pytest.raises(InvalidArgumentError) as cpu_error:
        sg.IndexedSlices(values, indices)
    with pytest.raises(InvalidArgumentError) as error:
        sg.IndexedSlices(d_values, device.asarray(indices))
    assert str(error.value) == str(cpu_error.value)
    with pytest.raises(ValueError, match="mix numpy"):
        sg.IndexedSlices(d_values, indices)
    np.testing.assert_array_equal(device.asnumpy(d_values), values)


@pytest.mark.parametrize("width", [1, 3, 255, 256, 300])
def test_row_kernels_many_rows_and_widths(device, width):
    """Narrow rows share a block (BLOCK // width of them), a row of BLOCK or
    more columns takes one: many rows over several blocks, a partial last
    block, and a row wider than a block, for every row kernel."""
    xp = device.xp
    rng = np.random.default_rng(width)
    n_rows = 700 if width < 10 else 7
    n = 2 * n_rows + 3
    values = rng.standard_normal((n, width)).astype(np.float32)
    indices = rng.integers(0, n_rows, n).astype(np.int64)
    target = rng.standard_normal((n_rows, width)).astype(np.float32)
    for name in ("scatter_add", "scatter_update"):
        cpu = target.copy()
        getattr(cpu_slices, name)(values, indices, cpu, 1)
        dev = device.asarray(target)
        getattr(cuda_slices, name)(device.asarray(values), device.asarray(indices),
                                   dev, 1)
        np.testing.assert_array_equal(device.asnumpy(dev), cpu)
    order = np.argsort(indices, kind="stable").astype(np.int64)
    starts = np.searchsorted(indices[order], np.arange(n_rows + 1)).astype(np.int64)
    cpu = np.zeros((n_rows, width), np.float32)
    cpu_slices.gather_group_sum(values, order, starts, cpu, 1)
    dev = xp.zeros((n_rows, width), np.float32)
    cuda_slices.gather_group_sum(device.asarray(values), device.asarray(order),
                                 device.asarray(starts), dev, 1)
    np.testing.assert_array_equal(device.asnumpy(dev), cpu)
    table = values.view(np.uint8)
    d_rows = xp.zeros((n, table.shape[1]), np.uint8)
    cuda_slices.gather_rows(device.asarray(table), device.asarray(indices), d_rows, 1)
    np.testing.assert_array_equal(device.asnumpy(d_rows), table[indices])
    # rows of odd byte counts: one-byte words
    odd = table[:, :width * 4 - 1].copy() if width > 1 else table[:, :3].copy()
    d_odd = xp.zeros((n, odd.shape[1]), np.uint8)
    cuda_slices.gather_rows(device.asarray(odd), device.asarray(indices), d_odd, 1)
    np.testing.assert_array_equal(device.asnumpy(d_odd), odd[indices])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_all_in_range_at_the_edges_matches_cpu(device, dtype):
    # sg_slices.h's range test, per index on the device and OR-ed on the CPU:
    # negative indices, the type's extremes, bounds beyond the type's maximum
    info = np.iinfo(dtype)
    for n_rows in (0, 1, 5, 2**31 - 1, 2**31, 2**31 + 5, 2**62, 2**63 - 1):
        for x in (info.min, -1, 0, 1, 4, 5, 2**31 - 2, 2**31 - 1, info.max):
            if not info.min <= x <= info.max:
                continue
            indices = np.array([0, x, 0], dtype)
            want = 0 <= x < n_rows
            assert cpu_slices.all_in_range(indices, n_rows) == want, (x, n_rows)
            got = cuda_slices.all_in_range(device.asarray(indices), n_rows)
            assert got == want, (x, n_rows)
