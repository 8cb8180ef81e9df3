"""The CUDA twins of the clip kernels (``sparsegrad._cuda.clip``) and the clip
ops on CuPy arguments, against the CPU.

The device sum of squares reproduces the CPU kernel's order (same blocks,
same eight-accumulator pattern, partials added in table order), and every
other step is an add, multiply, divide, sqrt or compare in the CPU's order:
all results are compared bit for bit (assert_array_equal)."""

import math

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad._cuda import clip as cuda_clip
from sparsegrad._kernels import clip as cpu_clip
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework import backend, sparse_rows
from sparsegrad.ops.clip_ops import global_norm_scale, sum_of_squares

FLOATS = (np.float32, np.float64)


def _slices(dtype, n=24, n_rows=10, width=3, duplicates=True, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((n, width)).astype(dtype)
    indices = (rng.integers(0, n_rows, n) if duplicates
               else rng.permutation(n_rows)[:n]).astype(np.int64)
    return values, indices


def _pair(device, values, indices, n_rows=10):
    """The same IndexedSlices on the host and on the device."""
    shape = (n_rows,) + values.shape[1:]
    return (sg.IndexedSlices(values, indices, dense_shape=shape),
            sg.IndexedSlices(device.asarray(values), device.asarray(indices),
                             dense_shape=shape))


@pytest.mark.parametrize("dtype", FLOATS)
def test_sum_of_squares_list_has_the_cpu_bits(device, dtype):
    rng = np.random.default_rng(3)
    dense = rng.standard_normal(2 * 4096 + 907).astype(dtype)  # blocks + a tail
    entries = [(dense,), (rng.standard_normal((5,)).astype(dtype),),
               (np.zeros((0, 3), dtype),)]
    for n, width, n_rows in [(40, 3, 9), (30, 300, 6), (5, 4100, 2), (12, 1, 4)]:
        values = rng.standard_normal((n, width)).astype(dtype)
        indices = rng.integers(0, n_rows, n)
        indices[-1] = n_rows  # one row of its own: the singleton path
        _, order, starts = sparse_rows.group_rows(indices, n_rows)
        entries.append((values, order, starts))
    want = cpu_clip.sum_of_squares_list(entries, 2)
    got = cuda_clip.sum_of_squares_list(
        [tuple(device.asarray(a) for a in e) for e in entries], 2)
    assert backend.is_cupy_array(got) and got.shape == ()
    assert float(got) == want
    assert float(cuda_clip.sum_of_squares_list([], 1)) == 0.0


@pytest.mark.parametrize("dtype", FLOATS)
def test_sum_of_squares_many_groups_and_partials(device, dtype):
    # Grouped: ~100 groups in one CPU block (several batches of 32 groups side
    # by side, single and repeated rows mixed, one index 40 times: full and
    # partial batches of loads ahead; one 300 times: its columns summed
    # through shared-memory tiles, 256 (float64) or 512 rows a tile).
    # Dense: 600 CPU blocks, so the final sum stages its partials in three
    # rounds of 256.
    rng = np.random.default_rng(12)
    indices = np.concatenate([rng.permutation(150)[:90], rng.integers(0, 150, 60),
                              np.full(40, 7), np.full(300, 9)])
    indices = indices[rng.permutation(indices.shape[0])]
    values = rng.standard_normal((indices.shape[0], 8)).astype(dtype)
    _, order, starts = sparse_rows.group_rows(indices, 150)
    dense = rng.standard_normal(600 * 4096 - 5).astype(dtype)
    for entries in ([(values, order, starts)], [(dense,), (values, order, starts)]):
        want = cpu_clip.sum_of_squares_list(entries, 2)
        got = cuda_clip.sum_of_squares_list(
            [tuple(device.asarray(a) for a in e) for e in entries], 2)
        assert float(got) == want


@pytest.mark.parametrize("dtype", FLOATS)
def test_scale_and_clip_values_twins(device, dtype):
    x = np.random.default_rng(4).standard_normal(1000).astype(dtype)
    x[:3] = [np.nan, np.inf, -np.inf]
    for c, d in [(0.5, 3.0), (2.0, 1.0)]:
        want = np.empty_like(x)
        cpu_clip.scale(x, c, d, want, 1)
        got = device.xp.empty(x.shape, dtype)
        cuda_clip.scale(device.asarray(x), c, d, got, 1)
        np.testing.assert_array_equal(device.asnumpy(got), want)
    lo, hi = np.array([-0.5], dtype), np.linspace(-1, 1, 1000).astype(dtype)
    want = np.empty_like(x)
    cpu_clip.clip_values(x, lo, hi, want, 1)
    got = device.xp.empty(x.shape, dtype)
    cuda_clip.clip_values(device.asarray(x), device.asarray(lo), device.asarray(hi),
                          got, 1)
    np.testing.assert_array_equal(device.asnumpy(got), want)


@pytest.mark.parametrize("dtype", FLOATS + (np.float16,))
@pytest.mark.parametrize("duplicates", [True, False])
def test_global_norm_matches_cpu(device, dtype, duplicates):
    x = np.random.default_rng(5).standard_normal((30, 7)).astype(dtype)
    values, indices = _slices(dtype, n=8 if not duplicates else 24,
                              duplicates=duplicates)
    host, dev = _pair(device, values, indices)
    want = sg.global_norm([x, None, host])
    got = sg.global_norm([device.asarray(x), None, dev])
    assert backend.is_cupy_array(got._value) and got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("clip_norm", [0.5, 100.0, 0.0, -1.0])
def test_clip_by_global_norm_matches_cpu(device, dtype, clip_norm):
    x = np.random.default_rng(6).standard_normal((16, 5)).astype(dtype)
    values, indices = _slices(dtype)
    host, dev = _pair(device, values, indices)
    (a, s, _), norm = sg.clip_by_global_norm([x, host, None], clip_norm)
    (da, ds, dnone), dnorm = sg.clip_by_global_norm(
        [device.asarray(x), dev, None], clip_norm)
    assert dnone is None and isinstance(ds, sg.IndexedSlices)
    assert backend.is_cupy_array(dnorm._value)
    np.testing.assert_array_equal(dnorm.numpy(), norm.numpy())
    np.testing.assert_array_equal(da.numpy(), a.numpy())
    np.testing.assert_array_equal(ds.values.numpy(), s.values.numpy())
    np.testing.assert_array_equal(ds.indices.numpy(), s.indices.numpy())
    # a given norm (a host number) scales the device values the same way
    (a, _), _ = sg.clip_by_global_norm([x, host], clip_norm, use_norm=3.0)
    (da, _), _ = sg.clip_by_global_norm([device.asarray(x), dev], clip_norm,
                                        use_norm=3.0)
    np.testing.assert_array_equal(da.numpy(), a.numpy())


def test_clip_by_global_norm_non_finite_and_float16(device):
    x = np.array([1.0, np.inf, 2.0], np.float32)
    (a,), _ = sg.clip_by_global_norm([x], 1.0)
    (da,), _ = sg.clip_by_global_norm([device.asarray(x)], 1.0)
    np.testing.assert_array_equal(da.numpy(), a.numpy())  # all NaN
    h = np.random.default_rng(7).standard_normal(50).astype(np.float16)
    (a,), n = sg.clip_by_global_norm([h], 2.0)
    (da,), dn = sg.clip_by_global_norm([device.asarray(h)], 2.0)
    np.testing.assert_array_equal(dn.numpy(), n.numpy())
    np.testing.assert_array_equal(da.numpy(), a.numpy())


def test_norms_stay_on_the_device(device):
    """No host read back on the way of clip_by_global_norm and global_norm
    (IndexedSlices with repeated indices included)."""
    if device.name != "emulated":
        pytest.skip("counts the emulated array's host transfers")
    values, indices = _slices(np.float32)
    _, dev = _pair(device, values, indices)
    x = device.asarray(np.ones((4, 4), np.float32))
    reads = []
    cls = device.xp.ndarray
    saved = {name: getattr(cls, name) for name in
             ("get", "__bool__", "__float__", "__int__", "item", "tolist")}
    try:
        for name, method in saved.items():
            def spy(self, *args, _name=name, _method=method, **kwargs):
                reads.append(_name)
                return _method(self, *args, **kwargs)
            setattr(cls, name, spy)
        sg.clip_by_global_norm([x, dev], 1.0)
        sg.global_norm([x, dev])
        sg.clip_by_norm(dev, 1.0)
    finally:
        for name, method in saved.items():
            setattr(cls, name, method)
    assert reads == []


@pytest.mark.parametrize("dtype", FLOATS + (np.float16,))
@pytest.mark.parametrize("axes", [None, 1, 0])
def test_clip_by_norm_matches_cpu(device, dtype, axes):
    x = np.random.default_rng(8).standard_normal((6, 5)).astype(dtype)
    x[2] = 0
    values, indices = _slices(dtype, n=12)
    host, dev = _pair(device, values, indices)

    def check(got, want):
        if axes is None or device.name == "emulated":
            np.testing.assert_array_equal(got, want)
        else:
            # per-slice norms are NumPy / CuPy sums over the axes: CuPy's
            # reduction order is its own (the emulator's is NumPy's)
            np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps)

    for clip_norm in (0.7, 50.0, 0.0):
        want = sg.clip_by_norm(x, clip_norm, axes=axes)
        got = sg.clip_by_norm(device.asarray(x), clip_norm, axes=axes)
        assert backend.is_cupy_array(got._value)
        check(got.numpy(), want.numpy())
        want = sg.clip_by_norm(host, clip_norm, axes=axes)
        got = sg.clip_by_norm(dev, clip_norm, axes=axes)
        check(got.values.numpy(), want.values.numpy())
    empty = sg.clip_by_norm(device.xp.zeros((0, 3), dtype), 1.0)
    assert empty.shape == (0, 3)


@pytest.mark.parametrize("dtype", FLOATS + (np.int32,))
def test_clip_by_value_matches_cpu(device, dtype):
    x = (np.random.default_rng(9).standard_normal((7, 4)) * 4).astype(dtype)
    if dtype != np.int32:
        x[0, :3] = [np.nan, np.inf, -np.inf]
    hi = np.arange(4, dtype=dtype)
    for lo_, hi_ in [(-1, 2), (-1, hi), (3, 1)]:
        want = sg.clip_by_value(x, lo_, hi_)
        got = sg.clip_by_value(device.asarray(x), lo_, hi_)
        assert backend.is_cupy_array(got._value)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    values, indices = _slices(np.float64)
    host, dev = _pair(device, values, indices)
    np.testing.assert_array_equal(sg.clip_by_value(dev, -0.2, 0.4).values.numpy(),
                                  sg.clip_by_value(host, -0.2, 0.4).values.numpy())


def test_sum_of_squares_for_the_optimizers(device):
    values, indices = _slices(np.float64)
    x = np.random.default_rng(10).standard_normal(9)
    want = sum_of_squares([x, None, (values, indices, 10)])
    got = sum_of_squares([device.asarray(x), None,
                          (device.asarray(values), device.asarray(indices), 10)])
    assert float(got) == want


def test_errors_as_on_the_cpu_and_inputs_unchanged(device):
    x = np.random.default_rng(11).standard_normal((3, 2)).astype(np.float32)
    dx = device.asarray(x)
    for call in (lambda t: sg.clip_by_value(t, np.zeros((3,), np.float32), 1.0),
                 lambda t: sg.clip_by_norm(t, [1.0, 2.0]),
                 lambda t: sg.clip_by_norm(t, 1.0, axes=2)):
        with pytest.raises(InvalidArgumentError) as cpu_error:
            call(x)
        with pytest.raises(InvalidArgumentError) as error:
            call(dx)
        assert str(error.value) == str(cpu_error.value)
    with pytest.raises(InvalidArgumentError) as cpu_error:
        sg.global_norm([x, x.astype(np.float64)])
    with pytest.raises(InvalidArgumentError) as error:
        sg.global_norm([dx, device.asarray(x.astype(np.float64))])
    assert str(error.value) == str(cpu_error.value)
    with pytest.raises(ValueError, match="mix numpy"):
        sg.clip_by_global_norm([dx, x], 1.0)
    np.testing.assert_array_equal(device.asnumpy(dx), x)


def _same_bits(got, want):
    """Equal bits, or NaN on both sides (a GPU's arithmetic gives its own
    NaN's bits; a compare or select passes the bits of its operand)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    u = np.dtype(f"u{got.dtype.itemsize}")
    same = (got.view(u) == want.view(u)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (got, want)


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip_values_twin_on_signed_zeros_and_nan_payloads(device, dtype):
    # no arithmetic: a NaN's payload passes through on both sides
    a, b = (np.array([0x7FC00000 | p], np.uint32).view(np.float32)[0]
            if dtype == np.float32 else
            np.array([0x7FF8000000000000 | p], np.uint64).view(np.float64)[0]
            for p in (1, 2))
    x = np.array([-0.0, 0.0, -0.0, 0.0, 3.0, -3.0, a, 1.0, 1.0, a], dtype)
    lo = np.array([-1.0, -1.0, 0.0, -0.0, 0.0, 0.0, 0.0, 0.0, b, b], dtype)
    hi = np.array([0.0, -0.0, 1.0, 1.0, -0.0, -0.0, 1.0, b, 2.0, b], dtype)
    want = np.empty_like(x)
    cpu_clip.clip_values(x, lo, hi, want, 1)
    got = device.xp.empty(x.shape, dtype)
    cuda_clip.clip_values(device.asarray(x), device.asarray(lo), device.asarray(hi),
                          got, 1)
    assert device.asnumpy(got).tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", FLOATS)
def test_scale_twin_on_signed_zeros_and_subnormals(device, dtype):
    tiny = np.finfo(dtype).tiny
    x = np.array([-0.0, 0.0, tiny, -tiny / 4, 3.0, -np.inf, np.nan], dtype)
    for c, d in [(0.5, 3.0), (-2.0, 1.0), (0.0, 7.0), (1.5, 0.25)]:
        want = np.empty_like(x)
        cpu_clip.scale(x, c, d, want, 1)
        got = device.xp.empty(x.shape, dtype)
        cuda_clip.scale(device.asarray(x), c, d, got, 1)
        _same_bits(device.asnumpy(got), want)
        cd = device.asarray(np.array([c, d], dtype))
        got = device.xp.empty(x.shape, dtype)
        cuda_clip.scale_dev(device.asarray(x), cd, got)
        _same_bits(device.asnumpy(got), want)


@pytest.mark.parametrize("dtype", FLOATS)
def test_device_scalar_steps_match_the_host_formulas(device, dtype):
    # finish_norm's sqrt rounded once, the clip_by_global_norm factor and the
    # clip_by_norm divisor, on the norms where their formulas branch or give NaN
    norms = [0.0, 1e-30, 0.75, 5.0, 1e30, np.inf, np.nan]
    for v in (0.0, 0.1, 3.0, 1e-160, 1e39, 1e200):
        norm, total = cuda_clip.norm_of_list([(device.asarray(np.array([v])),)],
                                             np.dtype(dtype))
        assert float(total) == v * v
        with np.errstate(over="ignore"):
            want = np.asarray(math.sqrt(v * v), dtype)
        _same_bits(device.asnumpy(norm), want)
    for n in norms:
        dn = device.asarray(np.array(n, dtype))
        for c in (0.0, 1.0, 4.0, np.inf):
            want = global_norm_scale(np.asarray(n, dtype), np.asarray(c, dtype))
            cd = device.asnumpy(cuda_clip.global_scale(dn, c))
            _same_bits(cd, np.array([want, 1], dtype))
            divisor = np.maximum(np.asarray(n, dtype), np.asarray(c, dtype))
            if divisor == 0:
                divisor = np.asarray(1, dtype)
            cd = device.asnumpy(cuda_clip.norm_divisor(dn, c))
            _same_bits(cd, np.array([c, divisor], dtype))
