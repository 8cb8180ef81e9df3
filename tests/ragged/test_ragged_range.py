"""sparsegrad.ragged.range and the raw op ragged_range: a pure-Python
reference for random integer inputs (exact), NumPy for float sizes, the dtype
rules of tf.ragged.range, thread-count bit identity, errors, and refusal of
absurd totals before any allocation."""

import math
import time
import tracemalloc

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError

R = sg.ragged.range


def _python_range(starts, limits, deltas, bits):
    """RaggedRange in Python ints: sizes exact, values start + k * delta
    (repeated integer addition gives the same, and never wraps for an
    emitted value)."""
    rows = []
    for s, lim, d in zip(starts, limits, deltas):
        if (d > 0 and lim < s) or (d < 0 and lim > s):
            size = 0
        else:
            size = -(-abs(lim - s) // abs(d))
        row = [s + k * d for k in range(size)]
        assert all(-(2 ** (bits - 1)) <= v < 2 ** (bits - 1) for v in row)
        rows.append(row)
    return rows


def _int_rows(bits):
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    value = st.one_of(st.integers(-60, 60), st.integers(lo, hi))
    delta = st.one_of(st.integers(-9, 9), st.integers(lo, hi)).filter(lambda d: d != 0)

    def small_size(row):
        s, lim, d = row
        return abs(lim - s) // abs(d) < 200

    return st.lists(st.tuples(value, value, delta).filter(small_size), max_size=12)


@pytest.mark.parametrize("dtype, bits", [(np.int32, 32), (np.int64, 64)])
@pytest.mark.parametrize("tsplits", [np.int32, np.int64])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_int_ranges_match_python(dtype, bits, tsplits, data):
    rows = data.draw(_int_rows(bits))
    starts, limits, deltas = (np.array([r[j] for r in rows], dtype) for j in range(3))
    splits, values = sg.ragged.ragged_range(starts, limits, deltas, Tsplits=tsplits)
    want = _python_range(*(list(map(int, a)) for a in (starts, limits, deltas)), bits)
    assert splits.dtype == tsplits and values.dtype == dtype
    assert splits.tolist() == [0] + np.cumsum([len(r) for r in want]).tolist()
    assert values.tolist() == [v for r in want for v in r]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_float_ranges_accumulate(dtype, data):
    n = data.draw(st.integers(0, 8))
    finite = st.floats(-100, 100, width=32)
    starts = np.array(data.draw(st.lists(finite, min_size=n, max_size=n)), dtype)
    limits = np.array(data.draw(st.lists(finite, min_size=n, max_size=n)), dtype)
    step = st.floats(0.0625, 10, width=32) | st.floats(-10, -0.0625, width=32)
    deltas = np.array(data.draw(st.lists(step, min_size=n, max_size=n)), dtype)
    rt = R(starts, limits, deltas)
    assert rt.dtype == dtype
    # sizes: NumPy's ceil(|(limit - start) / delta|) in the dtype's precision
    with np.errstate(all="ignore"):
        size = np.ceil(np.abs((limits - starts) / deltas))
    size[((deltas > 0) & (limits < starts)) | ((deltas < 0) & (limits > starts))] = 0
    np.testing.assert_array_equal(rt.row_lengths(), size.astype(np.int64))
    # values: repeated addition in the dtype
    for i, row in enumerate(rt.numpy()):
        v = starts[i]
        for x in row:
            assert x == v
            v = dtype(v + deltas[i])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("tsplits", [np.int32, np.int64])
def test_same_bits_for_any_thread_count(dtype, tsplits):
    rng = np.random.default_rng(5)
    n = 20_000
    starts = rng.integers(-50, 50, n).astype(dtype)
    if np.dtype(dtype).kind == "f":
        starts = starts + rng.uniform(0, 1, n).astype(dtype)
        deltas = (rng.uniform(0.05, 1, n) * rng.choice([-1, 1], n)).astype(dtype)
    else:
        deltas = (rng.integers(1, 4, n) * rng.choice([-1, 1], n)).astype(dtype)
    limits = (starts + deltas * rng.integers(0, 40, n)).astype(dtype)
    results = []
    old = sg.get_num_threads()
    try:
        for k in (1, 2, 3, 8):
            sg.set_num_threads(k)
            rt = R(starts, limits, deltas, row_splits_dtype=tsplits)
            results.append(
                (
                    rt.row_splits.tobytes(),
                    rt.values.numpy().tobytes(),
                    rt.value_rowids().tobytes(),
                )
            )
    finally:
        sg.set_num_threads(old)
    assert all(r == results[0] for r in results)
    assert len(results[0][1]) > (1 << 15) * np.dtype(dtype).itemsize  # parallel path


def test_python_number_dtypes():
    assert R(3).dtype == np.int32
    assert R(2**40, 2**40 + 2).dtype == np.int64
    assert R(3.0).dtype == np.float32
    assert R(np.array([3], np.int64)).dtype == np.int64
    assert R(np.array([3], np.int64), 5.0).dtype == np.float32
    assert R(np.array([1.0]), 3).dtype == np.float64
    assert R([3], dtype=np.float64).values.dtype == np.float64
    assert R(np.array([3.0]), dtype=np.int32).to_list() == [[0, 1, 2]]
    assert R(3, row_splits_dtype="int32").row_splits.dtype == np.int32
    assert R(sg.constant(np.array([2, 1], np.int32))).to_list() == [[0, 1], [0]]


@pytest.mark.parametrize(
    "call, cls, text",
    [
        (lambda: R(np.array([3], np.int16)), TypeError, "unsupported dtype int16"),
        (lambda: R(np.array([3], np.float16)), TypeError, "unsupported dtype float16"),
        (lambda: R(True), TypeError, "cannot convert"),
        (
            lambda: R([3.5], dtype=np.int32),
            TypeError,
            "Cannot convert [3.5] to EagerTensor",
        ),
        (
            lambda: R(3, dtype=np.int16),
            InvalidArgumentError,
            "Value for attr 'T' of int16 is not in the list of allowed values",
        ),
        (
            lambda: R(3, row_splits_dtype=np.int16),
            InvalidArgumentError,
            "Value for attr 'Tsplits' of int16 is not in the list of allowed values: "
            "int32, int64",
        ),
        (
            lambda: sg.ragged.ragged_range(np.int32(0), np.int64(3), np.int32(1)),
            InvalidArgumentError,
            "must have one dtype",
        ),
        (
            lambda: sg.ragged.ragged_range(np.int16(0), np.int16(3), np.int16(1)),
            InvalidArgumentError,
            "Value for attr 'T' of int16",
        ),
    ],
)
def test_argument_errors(call, cls, text):
    with pytest.raises(cls, match=None) as info:
        call()
    assert text in str(info.value)


def test_errors_come_in_row_order():
    # row 0 overflows the int32 total before row 1's zero delta is seen
    with pytest.raises(InvalidArgumentError, match="overflowed"):
        sg.ragged.ragged_range(
            np.array([0, 0, 0], np.int32),
            np.array([2**31 - 1, 1, 1], np.int32),
            np.array([1, 1, 0], np.int32),
            Tsplits=np.int32,
        )
    with pytest.raises(InvalidArgumentError, match="delta != 0"):
        R([0, 0, 0], [1, 5, 2**30], [1, 0, 0.0001])


def test_empty_and_scalar_shapes():
    splits, values = sg.ragged.ragged_range(
        np.zeros(0, np.int32), np.int32(3), np.int32(1)
    )
    assert splits.tolist() == [0] and values.shape == (0,) and values.dtype == np.int32
    splits, values = sg.ragged.ragged_range(np.int64(2), np.int64(5), np.int64(1))
    assert splits.tolist() == [0, 3] and values.tolist() == [2, 3, 4]


def test_huge_totals_raise_quickly_without_allocating():
    big = np.full(3, 2**62, np.int64)
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(InvalidArgumentError, match="overflowed"):
        sg.ragged.ragged_range(np.zeros(3, np.int64), big, np.ones(3, np.int64))
    # legal in TF (it would try to allocate 2**62 values): refused here
    with pytest.raises(InvalidArgumentError, match="more than this machine's memory"):
        sg.ragged.ragged_range(np.int64(0), np.int64(2**62), np.int64(1))
    with pytest.raises(InvalidArgumentError, match="more than this machine's memory"):
        R(0.0, 1e12, 1.0, dtype=np.float64)
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 1.0
    assert peak < 1 << 20


def test_no_gradient_for_starts_limits_deltas():
    s = sg.constant([0.0, 1.0])
    lim = sg.constant([3.0, 4.0])
    with sg.GradientTape() as tape:
        tape.watch([s, lim])
        rt = R(s, lim, 1.0)
        y = sg.reduce_sum(rt.values)
    assert tape.gradient(y, [s, lim]) == [None, None]


def test_int_extremes_do_not_wrap():
    # delta = -2**63: |delta| computed in unsigned 64-bit arithmetic
    rt = R(np.int64(5), np.int64(-(2**63)), np.int64(-(2**63)))
    assert rt.to_list() == [[5, 5 - 2**63]]
    rt = R(np.int64(2**63 - 1), np.int64(-(2**63)), np.int64(-(2**63)))
    assert rt.to_list() == [[2**63 - 1, -1]]
    rt = R(np.int32(2**31 - 3), np.int32(2**31 - 1), np.int32(1))
    assert rt.to_list() == [[2**31 - 3, 2**31 - 2]]
    assert math.prod(rt.values.shape) == 2
