"""RaggedRange and row ids on the device against the Cython kernels: the same
bits (every value is computed in the CPU kernel's arithmetic), the same
errors, raised before anything is written."""

import sys

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad._cuda import ragged as cuda_ragged
from sparsegrad._kernels import ragged as cpu_ragged
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework.backend import CPU, backend_of
from sparsegrad.ragged.ragged_range import row_ranges


def _both(device, fn, *host_args, **kwargs):
    """fn on the host arrays and on device copies; the device result on the
    host, after checking it stayed on the device."""
    cpu = fn(*host_args, **kwargs)
    dev = fn(*(device.asarray(a) if isinstance(a, np.ndarray) else a
               for a in host_args), **kwargs)
    out = []
    for c, d in zip(cpu, dev):
        assert isinstance(d, device.xp.ndarray)
        assert d.dtype == c.dtype and d.shape == c.shape
        out.append(device.asnumpy(d))
    return cpu, out


def _int_rows(rng, dtype, n):
    info = np.iinfo(dtype)
    starts = rng.integers(-50, 50, n).astype(dtype)
    limits = rng.integers(-50, 50, n).astype(dtype)
    deltas = rng.choice([-7, -3, -1, 1, 2, 5], n).astype(dtype)
    # extremes: a wrap after the last value, and |delta| = 2**(w-1)
    starts[:2] = [info.max - 2, 5]
    limits[:2] = [info.max, info.min]
    deltas[:2] = [1, info.min]
    return starts, limits, deltas


@pytest.fixture(params=["default", "small", "odd"])
def tiles(request, monkeypatch):
    """The launchers' tile and chunk sizes: as shipped, shrunk to one row or
    value per thread (so that a few hundred rows span several blocks), and
    a few per thread (runs of values that cross rows and chunks)."""
    items = {"default": None, "small": (1, 1), "odd": (2, 3)}[request.param]
    if items:
        monkeypatch.setattr(cuda_ragged, "_SPLITS_ITEMS", items[0])
        monkeypatch.setattr(cuda_ragged, "_FILL_ITEMS", items[1])
    return request.param


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("tsplits", [np.int32, np.int64])
def test_int_ranges_bit_exact(device, dtype, tsplits, tiles):
    rng = np.random.default_rng(1)
    s, lim, d = _int_rows(rng, dtype, 300)   # > 256 rows: several scan chunks
    (cs, cv), (ds, dv) = _both(device, sg.ragged.ragged_range, s, lim, d,
                               Tsplits=tsplits)
    assert (np.diff(cs) == 0).any() and (d < 0).any()   # empty rows, negative deltas
    np.testing.assert_array_equal(ds, cs)
    np.testing.assert_array_equal(dv, cv)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("tsplits", [np.int32, np.int64])
def test_float_ranges_bit_exact(device, dtype, tsplits):
    # values accumulate by repeated addition: each chain must round as on the CPU
    rng = np.random.default_rng(2)
    n = 40
    s = rng.uniform(-5, 5, n).astype(dtype)
    lim = rng.uniform(-5, 5, n).astype(dtype)
    d = (rng.choice([-1, 1], n) * rng.uniform(0.03, 0.7, n)).astype(dtype)
    (cs, cv), (ds, dv) = _both(device, sg.ragged.ragged_range, s, lim, d,
                               Tsplits=tsplits)
    assert (np.diff(cs) == 0).any()
    np.testing.assert_array_equal(ds, cs)
    assert dv.tobytes() == cv.tobytes()


BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("tsplits", [np.int32, np.int64])
def test_bfloat16_ranges_bit_exact(device, tsplits):
    # bfloat16 chains round every sum (and the sizes every operation) as on
    # the CPU: steps that drift, negative steps, stalls, denormal steps
    rng = np.random.default_rng(4)
    n = 60
    s = rng.uniform(-50, 50, n)
    lim = rng.uniform(-50, 50, n)
    d = rng.choice([-1, 1], n) * rng.choice([0.1, 0.3, 1 / 3, 0.7, 2.5], n)
    tiny = 2.0 ** -133                    # the least bfloat16 denormal
    s[:3] = [256.0, 0.0, -(2.0 ** -130)]
    lim[:3] = [260.0, 2.0 ** -131, 2.0 ** -131]
    d[:3] = [0.5, tiny, tiny]
    s, lim, d = (a.astype(BF16) for a in (s, lim, d))
    (cs, cv), (ds, dv) = _both(device, sg.ragged.ragged_range, s, lim, d,
                               Tsplits=tsplits)
    assert cv.dtype == BF16 and (np.diff(cs) == 0).any() and cs[-1] > 300
    np.testing.assert_array_equal(ds, cs)
    assert dv.view(np.uint16).tobytes() == cv.view(np.uint16).tobytes()
    # a scalar start and delta on the host beside device limits
    cpu = sg.ragged.range(np.asarray(0.5, BF16), lim[:10], np.asarray(0.3, BF16))
    dev = sg.ragged.range(np.asarray(0.5, BF16), device.asarray(lim[:10]),
                          np.asarray(0.3, BF16))
    assert dev.values.dtype == BF16
    assert device.asnumpy(dev.values._value).tobytes() == cpu.values.numpy().tobytes()


def test_bfloat16_sizes_at_the_bounds_match_cpu(device):
    # NaN, infinities, a zero delta, sizes at and beyond the splits' maximum,
    # a span that rounds to inf in bfloat16 only (inf / inf: too large)
    limits = np.array([2.0**31, 2.0**31 - 2.0**23, 2.0**63, np.inf, np.nan, 7, -7,
                       3, 1.7e38, 3], BF16)
    starts = np.zeros_like(limits)
    starts[8] = -1.7e38
    deltas = np.array([1, 1, 1, 1, 1, 0, 2, -1, np.inf, np.nan], BF16)
    too_large, zero = cpu_ragged.SIZE_TOO_LARGE, cpu_ragged.SIZE_ZERO_DELTA
    for max_size in (2**31 - 1, 2**63 - 1):
        cpu = np.empty(limits.shape, np.int64)
        cpu_ragged.range_sizes(starts.view(np.uint16), limits.view(np.uint16),
                               deltas.view(np.uint16), cpu, max_size, 1)
        dev = device.xp.empty(limits.shape, np.int64)
        cuda_ragged.range_sizes(*(device.asarray(a.view(np.uint16))
                                  for a in (starts, limits, deltas)),
                                dev, max_size, 1)
        np.testing.assert_array_equal(device.asnumpy(dev), cpu)
        assert cpu[2:].tolist() == [too_large] * 3 + [zero, 0, 0, too_large,
                                                      too_large]
        assert cpu[0] == (2**31 if max_size > 2**31 else too_large)
        assert cpu[1] == 2**31 - 2**23


def test_broadcast_scalars_and_empty(device):
    # a host scalar goes along with a device vector
    cpu = sg.ragged.ragged_range(np.array([0.0, 1.0], np.float32), np.float32(1.0),
                                 np.float32(0.1))
    dev = sg.ragged.ragged_range(device.asarray(np.array([0.0, 1.0], np.float32)),
                                 np.float32(1.0), np.float32(0.1))
    for c, d in zip(cpu, dev):
        np.testing.assert_array_equal(device.asnumpy(d), c)
    splits, values = sg.ragged.ragged_range(
        device.asarray(np.zeros(0, np.int32)), np.int32(3), np.int32(1))
    assert isinstance(values, device.xp.ndarray)
    assert device.asnumpy(splits).tolist() == [0] and values.shape == (0,)
    # all-empty rows: no values, splits all zero
    _, (ds, dv) = _both(device, sg.ragged.ragged_range,
                        np.array([3, 3], np.int64), np.array([1, 3], np.int64),
                        np.array([1, 2], np.int64))
    assert ds.tolist() == [0, 0, 0] and dv.shape == (0,)


def test_host_vector_beside_device_vector_raises(device):
    with pytest.raises(ValueError, match="mix numpy"):
        sg.ragged.ragged_range(device.asarray(np.zeros(2, np.int32)),
                               np.array([3, 4], np.int32), np.int32(1))


@pytest.mark.parametrize(
    "args, tsplits, text",
    [
        (([0, 0, 0], [1, 5, 9], [1, 0, 1], np.int64), np.int64, "delta != 0"),
        (([0.0], [np.nan], [1.0], np.float32), np.int64,
         "Requires ((limit - start) / delta) <= 9223372036854775807"),
        (([0], [2**31], [1], np.int64), np.int32,
         "Requires ((limit - start) / delta) <= 2147483647"),
        # row 0 overflows the int32 total before row 2's zero delta is seen
        (([0, 0, 0], [2**31 - 1, 1, 1], [1, 1, 0], np.int32), np.int32, "overflowed"),
    ],
)
def test_errors_match_cpu_and_write_nothing(device, args, tsplits, text):
    *host, dtype = args
    host = [np.array(a, dtype) for a in host]
    with pytest.raises(InvalidArgumentError) as cpu_info:
        sg.ragged.ragged_range(*host, Tsplits=tsplits)
    dev = [device.asarray(a) for a in host]
    with pytest.raises(InvalidArgumentError) as dev_info:
        sg.ragged.ragged_range(*dev, Tsplits=tsplits)
    assert str(dev_info.value) == str(cpu_info.value)
    assert text in str(dev_info.value)
    for h, d in zip(host, dev):
        assert device.asnumpy(d).tobytes() == h.tobytes()


@pytest.mark.parametrize("tsplits", [np.int32, np.int64])
def test_range_splits_first_failure_across_chunks(device, tsplits, tiles):
    # the scan runs in 256 chunks: the first failing row must be found
    # wherever it lies, as the CPU's row-by-row scan finds it
    big = int(np.iinfo(tsplits).max) // 3
    base = np.ones(1000, np.int64)

    def with_rows(**rows):
        c = base.copy()
        for k, v in rows.items():
            c[int(k[1:])] = v
        return c

    cases = [
        base.copy(),
        with_rows(r700=-1, r900=-2),
        with_rows(r10=big, r500=big, r990=big, r995=-1),
        with_rows(r10=big, r11=big, r12=big, r13=big),
        with_rows(r600=big, r601=big, r602=-2, r603=big),
        with_rows(r0=-1),
        # around the 256-row tile bounds of the shrunk tiles
        with_rows(r255=big, r256=big, r511=big, r512=-1),
        with_rows(r255=big, r256=big, r257=-1, r511=big),
        with_rows(r767=-2, r768=big, r769=big, r770=big),
        with_rows(r999=-1),
    ]
    cases.append(np.full(5, big, np.int64))
    cases.append(np.zeros(0, np.int64))
    for sizes in cases:
        cpu_out = np.zeros(sizes.shape[0] + 1, tsplits)
        expect = cpu_ragged.range_splits(sizes, cpu_out)
        dev_out = device.xp.zeros(sizes.shape[0] + 1, tsplits)
        got = cuda_ragged.range_splits(device.asarray(sizes), dev_out)
        assert got == expect
        if expect[0] < 0:
            np.testing.assert_array_equal(device.asnumpy(dev_out), cpu_out)
            _, _, total = cuda_ragged.range_splits_total(device.asarray(sizes),
                                                         dev_out)
            assert total == int(cpu_out[-1])


def _check_rowids(device, splits):
    """row_splits_to_rowids of `splits` on the device gives the CPU's."""
    cpu = np.empty(int(splits[-1]), splits.dtype)
    cpu_ragged.row_splits_to_rowids(splits, cpu, 1)
    dev = device.xp.empty(int(splits[-1]), splits.dtype)
    cuda_ragged.row_splits_to_rowids(device.asarray(splits), dev, 1)
    np.testing.assert_array_equal(device.asnumpy(dev), cpu)


@pytest.mark.parametrize("tsplits", [np.int32, np.int64])
def test_row_splits_to_rowids(device, tsplits, tiles):
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 4, 50)
    lengths[:3] = 0
    lengths[-2:] = 0
    splits = np.zeros(51, tsplits)
    np.cumsum(lengths, out=splits[1:])
    _check_rowids(device, splits)


@pytest.mark.parametrize("tsplits", [np.int32, np.int64])
def test_fill_and_rowids_long_and_empty_rows_across_chunks(device, tsplits, tiles):
    # a row longer than a chunk, and runs of empty rows longer than a chunk:
    # each value's search must stay within its chunk's rows and find the row
    lengths = np.zeros(1200, np.int64)
    lengths[3] = 700
    lengths[600] = 5
    lengths[1100:1110] = 30
    splits = np.zeros(1201, tsplits)
    np.cumsum(lengths, out=splits[1:])
    _check_rowids(device, splits)
    starts = np.arange(1200, dtype=np.int64) * 3 - 1000
    deltas = np.full(1200, -7, np.int64)
    vals = np.empty(int(splits[-1]), np.int64)
    cpu_ragged.range_fill(starts, deltas, splits, vals, 1)
    dvals = device.xp.empty(int(splits[-1]), np.int64)
    cuda_ragged.range_fill(device.asarray(starts), device.asarray(deltas),
                           device.asarray(splits), dvals, 1)
    np.testing.assert_array_equal(device.asnumpy(dvals), vals)


def test_row_ranges(device):
    starts = np.array([0, 5, 5, 9], np.int64)
    limits = np.array([2, 7, 5, 12], np.int64)
    dev_starts = device.asarray(starts)
    got = row_ranges(dev_starts, device.asarray(limits), backend_of(dev_starts))
    assert isinstance(got, device.xp.ndarray)
    np.testing.assert_array_equal(device.asnumpy(got), row_ranges(starts, limits, CPU))



# -- RaggedTensor holding device arrays ----------------------------------------


def test_ragged_range_tensor_on_device(device):
    cpu = sg.ragged.range(np.array([2, 0, 3]), 5, row_splits_dtype="int32")
    dev = sg.ragged.range(device.asarray(np.array([2, 0, 3])), 5,
                          row_splits_dtype="int32")
    assert isinstance(dev.values._value, device.xp.ndarray)
    assert isinstance(dev.row_splits, device.xp.ndarray)
    assert dev.to_list() == cpu.to_list()
    assert dev.row_splits.dtype == cpu.row_splits.dtype


@pytest.mark.parametrize("tsplits", [np.int32, np.int64])
def test_ragged_tensor_on_device(device, tsplits):
    values = np.arange(8, dtype=np.float32) * 1.5
    splits = np.array([0, 4, 4, 7, 8, 8], tsplits)
    cpu = sg.RaggedTensor.from_row_splits(values, splits)
    dev = sg.RaggedTensor.from_row_splits(device.asarray(values),
                                          device.asarray(splits))
    assert dev.to_list() == cpu.to_list()
    for name in ("value_rowids", "row_lengths"):
        got = getattr(dev, name)()
        assert isinstance(got, device.xp.ndarray) and got.dtype == tsplits
        np.testing.assert_array_equal(device.asnumpy(got), getattr(cpu, name)())
    lengths = sg.RaggedTensor.from_row_lengths(
        device.asarray(values), device.asarray(np.array([4, 0, 3, 1, 0], tsplits)))
    np.testing.assert_array_equal(device.asnumpy(lengths.row_splits), splits)
    dense = dev.to_tensor(default_value=-1.0)
    assert isinstance(dense._value, device.xp.ndarray)
    np.testing.assert_array_equal(dense.numpy(), cpu.to_tensor(-1.0).numpy())
    scaled = dev * 2.0 + 1.0
    assert isinstance(scaled.values._value, device.xp.ndarray)
    assert scaled.to_list() == (cpu * 2.0 + 1.0).to_list()
    assert dev[1:4].to_list() == cpu[1:4].to_list()
    np.testing.assert_array_equal(dev[2].numpy(), cpu[2].numpy())
    assert (dev + dev).to_list() == (cpu + cpu).to_list()


def test_ragged_tensor_bad_splits_on_device(device):
    values = device.asarray(np.arange(4.0))
    for splits, text in (([1, 2, 4], "valid RaggedTensor:zero"),
                         ([0, 3, 2, 4], "valid RaggedTensor:monotonic"),
                         ([0, 2, 3], "_from_row_partition")):
        with pytest.raises(InvalidArgumentError, match=text):
            sg.RaggedTensor.from_row_splits(np.arange(4.0), np.array(splits))
        with pytest.raises(InvalidArgumentError, match=text):
            sg.RaggedTensor.from_row_splits(values, device.asarray(np.array(splits)))
    with pytest.raises(ValueError, match="mix numpy"):
        sg.RaggedTensor.from_row_splits(values, np.array([0, 4]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_sizes_at_the_bounds_match_cpu(device, dtype):
    # sg_ragged.h's float sizes and codes: NaN, infinities, a zero delta, sizes
    # at and beyond the splits' maximum (compared in double) and at 2**63
    limits = np.array([2**31, 2**31 - 256, 2**63, 2.0**64, np.inf, np.nan, 7, -7,
                       3], dtype)
    starts = np.zeros_like(limits)
    deltas = np.array([1, 1, 1, 1, 1, 1, 0, 2, -1], dtype)
    for max_size in (2**31 - 1, 2**63 - 1):
        cpu = np.empty(limits.shape, np.int64)
        cpu_ragged.range_sizes(starts, limits, deltas, cpu, max_size, 1)
        dev = device.xp.empty(limits.shape, np.int64)
        cuda_ragged.range_sizes(device.asarray(starts), device.asarray(limits),
                                device.asarray(deltas), dev, max_size, 1)
        np.testing.assert_array_equal(device.asnumpy(dev), cpu)
        too_large, zero = cpu_ragged.SIZE_TOO_LARGE, cpu_ragged.SIZE_ZERO_DELTA
        assert cpu[2:].tolist() == [too_large] * 4 + [zero, 0, 0]
        assert cpu[0] == (2**31 if max_size > 2**31 else too_large)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_int_sizes_and_values_at_the_extremes_match_cpu(device, dtype, tiles):
    # exact unsigned sizes at the type's extremes, and rows the device enters
    # in the middle (value j = start + j * delta modulo 2**width)
    info = np.iinfo(dtype)
    big = int(info.max) // 500
    starts = np.array([info.min, info.max, 0, info.max, -1, 5], dtype)
    limits = np.array([info.max, info.min, info.max, info.min, info.max, 5], dtype)
    deltas = np.array([1, info.min, 3, -big, 2 * big, -1], dtype)
    for max_size in (2**31 - 1, 2**63 - 1):
        cpu = np.empty(6, np.int64)
        cpu_ragged.range_sizes(starts, limits, deltas, cpu, max_size, 1)
        dev = device.xp.empty(6, np.int64)
        cuda_ragged.range_sizes(device.asarray(starts), device.asarray(limits),
                                device.asarray(deltas), dev, max_size, 1)
        np.testing.assert_array_equal(device.asnumpy(dev), cpu)
    want = -(-(int(info.max) - int(info.min)) // big)
    assert cpu[3] == want and cpu[1] == 2 and cpu[5] == 0
    rows = [1, 3, 4]
    (cs, cv), (ds, dv) = _both(device, sg.ragged.ragged_range, starts[rows],
                               limits[rows], deltas[rows], Tsplits=np.int64)
    np.testing.assert_array_equal(ds, cs)
    np.testing.assert_array_equal(dv, cv)
    k = np.arange(want, dtype=object)
    expect = (int(info.max) - k * big - int(info.min)) % 2**info.bits + int(info.min)
    np.testing.assert_array_equal(cv[2:2 + want], expect.astype(dtype))


# -- one backend choice per call -----------------------------------------------


def _ragged_backend_choices(fn):
    """Run `fn`; the functions of sparsegrad.ragged that called backend_of."""
    code = backend_of.__code__
    callers = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            caller = frame.f_back
            if caller.f_globals.get("__name__", "").startswith("sparsegrad.ragged"):
                callers.append(caller.f_code.co_name)

    sys.setprofile(profile)
    try:
        result = fn()
    finally:
        sys.setprofile(None)
    return result, callers


def test_a_host_scalar_goes_along_with_device_operands_in_range(device):
    # a Python or NumPy scalar beside a device vector: the range runs on the
    # device, asked once in the ragged layer
    limits = np.array([3, 7, 4])
    cpu = sg.ragged.range(2, limits, np.int64(2))
    dev, callers = _ragged_backend_choices(
        lambda: sg.ragged.range(2, device.asarray(limits), np.int64(2)))
    assert callers == ["range_backend"]
    assert isinstance(dev.values._value, device.xp.ndarray)
    assert isinstance(dev.row_splits, device.xp.ndarray)
    assert dev.values.dtype == cpu.values.dtype == np.int64
    assert dev.to_list() == cpu.to_list() == [[2], [2, 4, 6], [2]]
    (splits, values), callers = _ragged_backend_choices(
        lambda: sg.ragged.ragged_range(np.int64(0), device.asarray(limits),
                                       np.int64(3)))
    assert callers == ["range_backend"]
    assert device.asnumpy(splits).tolist() == [0, 1, 4, 6]
    assert device.asnumpy(values).tolist() == [0, 0, 3, 6, 0, 3]


def test_a_host_list_beside_a_device_vector_raises_in_range(device):
    limits = device.asarray(np.array([3, 4]))
    for starts in ([0, 1], np.array([0, 1])):
        with pytest.raises(ValueError, match="mix numpy"):
            sg.ragged.range(starts, limits)
    with pytest.raises(ValueError, match="mix numpy"):
        sg.ragged.range(device.asarray(np.array([0, 1])), [3, 4], 1)


@pytest.mark.parametrize("factory, partition", [
    (sg.RaggedTensor.from_row_splits, [0, 1, 3]),
    (sg.RaggedTensor.from_row_lengths, [1, 2]),
    (sg.RaggedTensor.from_value_rowids, [0, 1, 1]),
])
def test_factories_choose_once_and_refuse_a_mix(device, factory, partition):
    values = np.arange(3.0)
    cpu = factory(values, np.array(partition))
    dev, callers = _ragged_backend_choices(
        lambda: factory(device.asarray(values), device.asarray(np.array(partition))))
    assert callers == ["partition_backend"]
    assert isinstance(dev.row_splits, device.xp.ndarray)
    assert dev.to_list() == cpu.to_list()
    for host_partition in (partition, np.array(partition)):
        with pytest.raises(ValueError, match="mix numpy"):
            factory(device.asarray(values), host_partition)
    with pytest.raises(ValueError, match="mix numpy"):
        factory(values, device.asarray(np.array(partition)))


def test_to_tensor_on_device_asks_once(device):
    host = sg.RaggedTensor.from_row_splits(np.arange(6.0), np.array([0, 2, 2, 6]))
    dev = sg.RaggedTensor.from_row_splits(device.asarray(np.arange(6.0)),
                                          device.asarray(np.array([0, 2, 2, 6])))
    for default in (-1.0, np.float64(-1.0), device.asarray(np.array(-1.0))):
        dense, callers = _ragged_backend_choices(
            lambda fill=default: dev.with_row_splits_dtype(np.int32).to_tensor(
                fill, shape=(3, 3)))
        assert callers == ["to_tensor"]
        assert isinstance(dense._value, device.xp.ndarray)
        np.testing.assert_array_equal(
            dense.numpy(), host.to_tensor(-1.0, shape=(3, 3)).numpy())
    with pytest.raises(InvalidArgumentError, match="default_value must be a scalar"):
        dev.to_tensor(device.asarray(np.array([1.0])))
    scaled, callers = _ragged_backend_choices(lambda: dev * 2.0)
    assert callers == [] and scaled.to_list() == (host * 2.0).to_list()


@pytest.mark.parametrize("axis", [0, 1, 2, [1, 2], None])
def test_nested_reductions_on_device(device, axis):
    # ragged rank 2 on the device: the same values as on the host, and the
    # result stays on the device
    rows = [[[1.0, 2.0], [], [3.0, 4.0, 5.0]], [[6.0, 7.0], [], [8.0]], [], [[9.0]]]
    cpu = sg.ragged.constant(rows)
    splits = [device.asarray(s) for s in cpu.nested_row_splits]
    dev = sg.RaggedTensor.from_nested_row_splits(
        device.asarray(cpu.flat_values.numpy()), splits)
    for reduce in (sg.ragged.reduce_sum, sg.ragged.reduce_max, sg.ragged.reduce_mean):
        got, want = reduce(dev, axis=axis), reduce(cpu, axis=axis)
        if isinstance(want, sg.RaggedTensor):
            assert isinstance(got.flat_values._value, device.xp.ndarray)
            np.testing.assert_array_equal(got.flat_values.numpy(),
                                          want.flat_values.numpy())  # NaN == NaN
            for g, w in zip(got.nested_row_splits, want.nested_row_splits):
                np.testing.assert_array_equal(device.asnumpy(g), w)
        else:
            assert isinstance(got._value, device.xp.ndarray)
            np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
def test_row_reductions_from_splits_on_device(device, dtype, kind):
    # the rows of a RaggedTensor reduced from its splits on the device
    # (segment_reduce_splits' twin): the host's bits, rows of every length
    # from 0 to 90 (the host's masked sums, its loops, its last rows)
    rng = np.random.default_rng(9)
    lengths = np.concatenate([np.arange(91), rng.integers(0, 60, 200)])
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    scale = 10.0 ** rng.integers(-3, 4, splits[-1])
    values = rng.standard_normal(splits[-1]) * scale
    if kind == "prod":
        values = 1 + values / 1e4
    values = values.astype(dtype)
    cpu = sg.RaggedTensor.from_row_splits(values, splits)
    dev = sg.RaggedTensor.from_row_splits(device.asarray(values),
                                          device.asarray(splits))
    reduce = getattr(sg.ragged, f"reduce_{kind}")
    got, want = reduce(dev, axis=1), reduce(cpu, axis=1)
    assert isinstance(got._value, device.xp.ndarray)
    assert got.numpy().tobytes() == want.numpy().tobytes()
