"""RaggedRange with bfloat16 values against a NumPy model of TensorFlow's
kernel in Eigen's bfloat16 arithmetic.

TensorFlow declares bfloat16 for RaggedRange but registers no kernel for it,
so there is no golden output to compare with; the model is its float
algorithm (tensorflow/core/kernels/ragged_range_op.cc) written with
``ml_dtypes.bfloat16`` scalars, which compute each operation in float32 and
round the result to bfloat16 at once, as ``Eigen::bfloat16`` does:

    size = ceil(|(limit - start) / delta|)     each of -, /, ceil rounded
    values: v = start; emit v; v = v + delta   each sum rounded
"""

import tracemalloc

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError

BF16 = np.dtype(ml_dtypes.bfloat16)
R = sg.ragged.range
ZERO_DELTA = "Requires delta != 0"
OVERFLOW = ("The total range size overflowed. Consider using int64 instead of "
            "int32 for row_splits_dtype.")


def too_large(tsplits):
    return f"Requires ((limit - start) / delta) <= {np.iinfo(tsplits).max}"


def model_size(start, limit, delta, tsplits):
    """A row's size in bfloat16 arithmetic, or the error message."""
    if delta == 0:
        return ZERO_DELTA
    with np.errstate(invalid="ignore"):             # NaN compares False
        if (delta > 0 and limit < start) or (delta < 0 and limit > start):
            return 0
    with np.errstate(all="ignore"):
        span = np.subtract(limit, start)            # rounded to bfloat16
        ratio = np.divide(span, delta)              # rounded to bfloat16
        size = np.ceil(np.abs(ratio))               # rounded (exact anyway)
    assert type(size) is ml_dtypes.bfloat16
    size = float(size)
    # Python compares a float with an int exactly (NaN fails)
    if not size <= np.iinfo(tsplits).max:
        return too_large(tsplits)
    return int(size)


def model(starts, limits, deltas, tsplits=np.int64):
    """(splits, values) of RaggedRange in bfloat16 arithmetic, or the error
    message of the first failing row."""
    arrays = [np.asarray(a, BF16).reshape(-1) for a in (starts, limits, deltas)]
    n = max(a.shape[0] for a in arrays) if all(a.shape[0] for a in arrays) else 0
    rows = [[a[i if a.shape[0] > 1 else 0] for a in arrays] for i in range(n)]
    splits, values = [0], []
    for start, limit, delta in rows:
        size = model_size(start, limit, delta, tsplits)
        if isinstance(size, str):
            return size
        if size > np.iinfo(tsplits).max - splits[-1]:
            return OVERFLOW
        splits.append(splits[-1] + size)
        v = start
        for _ in range(size):
            values.append(v)
            v = np.add(v, delta)                    # rounded to bfloat16
    return np.array(splits, tsplits), np.array(values, BF16)


def run(starts, limits, deltas, tsplits=np.int64):
    """The raw op on bfloat16 arrays, or its error message."""
    args = [np.asarray(a, BF16) for a in (starts, limits, deltas)]
    try:
        return sg.ragged.ragged_range(*args, Tsplits=tsplits)
    except InvalidArgumentError as exc:
        return str(exc)


def assert_same(got, want):
    if isinstance(want, str):
        assert got == want
        return
    assert not isinstance(got, str), got
    (gs, gv), (ws, wv) = got, want
    assert gs.dtype == ws.dtype and gv.dtype == BF16
    np.testing.assert_array_equal(gs, ws)
    assert gv.view(np.uint16).tolist() == wv.view(np.uint16).tolist()


def bits(values):
    return np.asarray(values, BF16).view(np.uint16).tolist()


def random_rows(rng, n):
    """Rows of every kind: steps that drift (0.1, 1/3...), negative steps,
    steps too small to move their start, empty rows."""
    starts = rng.uniform(-100, 100, n)
    limits = rng.uniform(-100, 100, n)
    steps = np.array([0.1, 0.3, 1 / 3, 0.7, 1.1, 2.5, 0.01, 0.0625, 7.0])
    deltas = rng.choice(steps, n) * rng.choice([-1, 1], n)
    # a start far above its step: v + delta rounds back to v (the chain stalls)
    starts[:4] = [300.0, -300.0, 1000.0, 256.0]
    limits[:4] = [305.0, -310.0, 1010.0, 260.0]
    deltas[:4] = [0.7, -1.1, 2.5, 0.5]
    return [np.asarray(a, BF16) for a in (starts, limits, deltas)]


@pytest.mark.parametrize("tsplits", [np.int32, np.int64])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rows_match_the_model(tsplits, seed):
    starts, limits, deltas = random_rows(np.random.default_rng(seed), 300)
    want = model(starts, limits, deltas, tsplits)
    assert_same(run(starts, limits, deltas, tsplits), want)
    sizes = np.diff(want[0])
    assert (sizes == 0).any() and (deltas < 0).any()
    # the bfloat16 sizes are not float32's: every step of the formula rounds
    with np.errstate(all="ignore"):
        s32, l32, d32 = (a.astype(np.float32) for a in (starts, limits, deltas))
        f32 = np.ceil(np.abs((l32 - s32) / d32))
    f32[((d32 > 0) & (l32 < s32)) | ((d32 < 0) & (l32 > s32))] = 0
    assert (f32 != sizes).any()


def test_the_size_rounds_after_each_operation():
    # (limit - start) rounds to bfloat16, then the quotient does: the sizes
    # differ from float32's ceil(|(limit - start) / delta|) of the same values
    cases = [
        # start, limit, delta, bfloat16 size, float32 size
        (-4.96875, 29.625, 0.203125, 170, 171),     # the quotient rounds down
        (-9.375, 41.0, 0.1767578125, 286, 285),     # the quotient rounds up
        (21.875, -48.5, -1.5625, 45, 46),           # negative delta
    ]
    for start, limit, delta, size, size32 in cases:
        assert model_size(*(ml_dtypes.bfloat16(x) for x in (start, limit, delta)),
                          np.int64) == size
        splits, _ = run(start, limit, delta)
        assert splits.tolist() == [0, size]
        s32, _ = sg.ragged.ragged_range(np.float32(start), np.float32(limit),
                                        np.float32(delta))
        assert s32.tolist() == [0, size32]


# Sizes from TensorFlow 2.21's Range op with bfloat16 tensors
# (tf.range(start, limit, delta) on bfloat16 constants, CPU): Range has a
# bfloat16 kernel and RaggedRange's size is "copied from RangeOp::Compute()",
# the same expression in Eigen's bfloat16 arithmetic.  (Range's values are
# not RaggedRange's: it does not accumulate.)  Each size differs from the
# float32 rule on the same values.
TF_RANGE_SIZES = [
    (13.6875, -0.458984375, -0.0245361328125, 576),
    (-956.0, -0.41015625, 0.9296875, 1032),
    (1720.0, 0.44140625, -0.0361328125, 47616),
    (428.0, -4864.0, -29.5, 179),
    (11.4375, 0.02197265625, -0.0228271484375, 502),
    (127.5, -4352.0, -2.46875, 1816),
    (-0.2578125, -2736.0, -0.009033203125, 303104),
    (860.0, 31.0, -0.90234375, 916),
]


def test_sizes_agree_with_tensorflows_bfloat16_range():
    starts, limits, deltas, sizes = (np.array(c) for c in zip(*TF_RANGE_SIZES))
    splits, _ = run(starts, limits, deltas)
    assert np.diff(splits).tolist() == sizes.tolist()
    s32, l32, d32 = (a.astype(np.float32) for a in (starts, limits, deltas))
    assert (np.ceil(np.abs((l32 - s32) / d32)) != sizes).all()


def test_values_are_a_chain_of_roundings():
    # 0.1 steps: each sum rounds to bfloat16, drifting from k * 0.1
    splits, values = run(0.0, 1.0, 0.1)
    assert splits.tolist() == [0, 10]
    assert bits(values) == bits([0, 0.100098, 0.200195, 0.300781, 0.400391, 0.5,
                                 0.601562, 0.703125, 0.804688, 0.90625])
    assert values[7] != np.asarray(7 * 0.1, BF16)
    # 256 + 0.5 rounds back to 256 (bfloat16 has 8 bits): the chain stalls,
    # the size is still ceil((260 - 256) / 0.5)
    splits, values = run(256.0, 260.0, 0.5)
    assert splits.tolist() == [0, 8] and values.astype(np.float32).tolist() == [256] * 8
    # a negative step; the row's values pass the limit only by rounding
    splits, values = run(1.0, 0.0, -0.3)
    assert bits(values) == bits([1, 0.699219, 0.398438, 0.0976562])
    assert_same((splits, values), model(1.0, 0.0, -0.3))


def test_denormals_are_kept():
    tiny = float(np.uint16(1).view(BF16))           # 2**-133, the least denormal
    assert tiny == 2.0 ** -133
    splits, values = run(0.0, 5 * tiny, tiny)
    assert splits.tolist() == [0, 5]
    assert values.view(np.uint16).tolist() == [0, 1, 2, 3, 4]
    splits, values = run(-3 * tiny, 3 * tiny, 2 * tiny)
    assert values.view(np.uint16).tolist() == [0x8003, 0x8001, 0x0001]
    # a normal start and a denormal step: the sum rounds back to the start
    assert_same(run(2.0 ** -120, 2.0 ** -120 + 2.0 ** -126, tiny),
                model(2.0 ** -120, 2.0 ** -120 + 2.0 ** -126, tiny))
    # 2**133 values: too many
    assert run(0.0, 1.0, tiny) == too_large(np.int64)


SPECIALS = [
    (np.nan, 1.0, 1.0), (0.0, np.nan, 1.0), (0.0, 1.0, np.nan),
    (0.0, np.inf, 1.0), (0.0, -np.inf, -1.0), (-np.inf, 0.0, 1.0),
    (0.0, 1.0, np.inf), (0.0, -1.0, -np.inf), (np.inf, np.inf, 1.0),
    (0.0, np.inf, np.inf), (1.0, 0.0, np.inf), (0.0, 1.0, -np.inf),
]


@pytest.mark.parametrize("tsplits", [np.int32, np.int64])
@pytest.mark.parametrize("start, limit, delta", SPECIALS)
def test_nan_and_inf_behave_as_float32(start, limit, delta, tsplits):
    got = run(start, limit, delta, tsplits)
    assert_same(got, model(start, limit, delta, tsplits))
    try:
        f32 = sg.ragged.ragged_range(np.float32(start), np.float32(limit),
                                     np.float32(delta), Tsplits=tsplits)
    except InvalidArgumentError as exc:
        assert got == str(exc) == too_large(tsplits)
    else:
        assert got[0].tolist() == f32[0].tolist()
        assert got[1].astype(np.float32).tobytes() == f32[1].tobytes()


def test_a_span_that_overflows_bfloat16_only():
    # 1.7e38 - (-1.7e38) is finite in float32 but rounds to inf in bfloat16;
    # inf / inf is NaN: too large, where float32 gives an empty row
    start, limit = -1.7e38, 1.7e38
    assert np.isfinite(np.float32(limit) - np.float32(start))
    assert run(start, limit, np.inf) == too_large(np.int64) == model(
        start, limit, np.inf)
    splits, _ = sg.ragged.ragged_range(np.float32(start), np.float32(limit),
                                       np.float32(np.inf))
    assert splits.tolist() == [0, 0]


def test_zero_delta_and_row_order():
    assert run(0.0, 1.0, 0.0) == ZERO_DELTA
    assert run(0.0, 1.0, -0.0) == ZERO_DELTA
    assert run([0.0, 0.0], [1.0, 1.0], [1.0, 0.0]) == ZERO_DELTA
    # the first failing row decides
    assert run([0.0, 0.0], [2.0 ** 50, 1.0], [2.0 ** -20, 0.0]) == too_large(np.int64)
    assert run([0.0, 0.0], [1.0, 2.0 ** 50], [0.0, 2.0 ** -20]) == ZERO_DELTA


def test_too_large_sizes_and_totals_allocate_nothing():
    starts = np.zeros(2, BF16)
    tracemalloc.start()
    # 2**31 is a bfloat16: one past the int32 splits' maximum
    assert run(0.0, 2.0 ** 31, 1.0, np.int32) == too_large(np.int32)
    assert run(0.0, 2.0 ** 63, 1.0, np.int64) == too_large(np.int64)
    # two rows of 2**30: a total past the int32 maximum
    assert run(starts, [2.0 ** 30, 2.0 ** 30], 1.0, np.int32) == OVERFLOW
    with pytest.raises(InvalidArgumentError, match="more than this machine's memory"):
        sg.ragged.ragged_range(np.asarray(0.0, BF16), np.asarray(2.0 ** 62, BF16),
                               np.asarray(1.0, BF16))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1 << 20
    assert starts.view(np.uint16).tolist() == [0, 0]   # inputs unchanged


def test_splits_dtypes_give_the_same_values():
    starts, limits, deltas = random_rows(np.random.default_rng(7), 50)
    s32, v32 = run(starts, limits, deltas, np.int32)
    s64, v64 = run(starts, limits, deltas, np.int64)
    assert s32.dtype == np.int32 and s64.dtype == np.int64
    assert s32.tolist() == s64.tolist() and v32.tobytes() == v64.tobytes()


@pytest.mark.parametrize("tsplits", [np.int32, np.int64])
def test_same_bits_for_any_thread_count(tsplits):
    rng = np.random.default_rng(5)
    n = 20_000
    starts = (rng.integers(-50, 50, n) + rng.uniform(0, 1, n)).astype(BF16)
    deltas = (rng.uniform(0.05, 1, n) * rng.choice([-1, 1], n)).astype(BF16)
    limits = (starts.astype(np.float32)
              + deltas.astype(np.float32) * rng.integers(0, 40, n)).astype(BF16)
    results = []
    old = sg.get_num_threads()
    try:
        for k in (1, 2, 3):
            sg.set_num_threads(k)
            splits, values = sg.ragged.ragged_range(starts, limits, deltas,
                                                    Tsplits=tsplits)
            results.append((splits.tobytes(), values.tobytes()))
    finally:
        sg.set_num_threads(old)
    assert all(r == results[0] for r in results)
    assert len(results[0][1]) > (1 << 15) * 2   # the parallel path
    # and the model's bits, on the first rows
    want = model(starts[:300], limits[:300], deltas[:300], tsplits)
    assert values[: len(want[1])].tobytes() == want[1].tobytes()


# -- sparsegrad.ragged.range: conversions and dtype rules ----------------------


def test_range_returns_bfloat16_values():
    rt = R(np.array([3, 4], BF16))
    assert rt.dtype == BF16 and rt.values.dtype == BF16
    assert isinstance(rt.values.numpy(), np.ndarray)
    assert rt.values.numpy().dtype == BF16
    assert rt.to_list() == [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0, 3.0]]
    assert rt.row_splits.dtype == np.int64
    rt = R(0.0, 1.0, 0.1, dtype=ml_dtypes.bfloat16, row_splits_dtype="int32")
    assert rt.row_splits.dtype == np.int32
    assert rt.values.numpy().tobytes() == run(0.0, 1.0, 0.1)[1].tobytes()
    assert R(3, dtype="bfloat16").values.dtype == BF16


def test_dtype_inference_puts_bfloat16_between_ints_and_float32():
    b = np.array([3.0, 5.0], BF16)
    assert R(b).dtype == BF16                           # starts 0, deltas 1: int32
    assert R(b, np.int64(9)).dtype == BF16
    assert R(np.array([1, 2], np.int64), b).dtype == BF16
    assert R(b, 9.0).dtype == np.float32                # a Python float is float32
    assert R(b, np.array([9.0, 9.0])).dtype == np.float64
    assert R(b, 9.0).to_list() == [[3, 4, 5, 6, 7, 8], [5, 6, 7, 8]]
    # the raw op takes one dtype
    with pytest.raises(InvalidArgumentError, match="must have one dtype"):
        sg.ragged.ragged_range(b, np.float32(9), np.float32(1))


def test_conversions_to_and_from_bfloat16_are_checked():
    limits = np.array([2.5, 3.0], BF16)
    before = limits.tobytes()
    with pytest.raises(InvalidArgumentError,
                       match=r"limits = 2\.5 is not an integer; dtype int32"):
        R(limits, dtype=np.int32)
    with pytest.raises(InvalidArgumentError, match="limits = nan is not an integer"):
        R(np.array([np.nan], BF16), dtype=np.int64)
    # float32's maximum rounds to inf in bfloat16; 1e39 overflows float32 too
    with pytest.raises(InvalidArgumentError,
                       match=r"limits = 3\.4028.* is out of range for bfloat16"):
        R(np.array([np.finfo(np.float32).max]), dtype=ml_dtypes.bfloat16)
    with pytest.raises(InvalidArgumentError, match=r"deltas = 1e\+39 is out of range"):
        R(0, 1, 1e39, dtype=ml_dtypes.bfloat16)
    assert limits.tobytes() == before
    # exact conversions work both ways; ints round to the nearest bfloat16
    assert R(np.array([3.0], BF16), dtype=np.int32).to_list() == [[0, 1, 2]]
    # 257 rounds to 256 (ties to even), and so does every 256 + 1 after it
    rt = R(257, 260, dtype=ml_dtypes.bfloat16)
    assert rt.row_lengths().tolist() == [4]
    assert rt.values.numpy().astype(np.float32).tolist() == [256.0] * 4
    # float16 is not a RaggedRange type
    with pytest.raises(TypeError, match="unsupported dtype float16"):
        R(np.array([3.0], np.float16))
    with pytest.raises(InvalidArgumentError,
                       match="Value for attr 'T' of half is not in the list of "
                             "allowed values: bfloat16, float, double, int32, "
                             "int64"):
        R(3, dtype=np.float16)


def test_errors_through_range_match_the_raw_op():
    with pytest.raises(InvalidArgumentError, match="delta != 0"):
        R(np.array([1.0], BF16), deltas=np.array([0.0], BF16))
    with pytest.raises(InvalidArgumentError, match=r"<= 2147483647"):
        R(np.array([2.0 ** 31], BF16), row_splits_dtype=np.int32)
