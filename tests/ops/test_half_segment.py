"""The segment reductions on float16 and bfloat16 data.

Half data is reduced in float32 and rounded once: every result is, bit for
bit, the float32 op on the data converted to float32 (exact), rounded to the
half type; the gradients too (float16 on a tape: bfloat16 is not recorded
yet).  TensorFlow's results (tests/ops/data/half_reduce_golden.npz, from
generate_half_reduce_fixtures.py) pin the dtypes and the empty segments.
"""

import os

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.ops.segment_ops.unsorted_reductions import (
    unsorted_segment_reduce_rows,
)

from .half_bits import assert_half_bits as assert_bits
from .half_bits import half_bits as bits

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALVES = [F16, BF16]
GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "data",
                              "half_reduce_golden.npz"))
ROWS = [[1.0, 2.0], [3.0, 4.0], [5.0, -6.0], [0.0, 2.0], [-7.0, 1.0]]
SORTED_IDS = [0, 0, 1, 3, 3]
UNSORTED_IDS = [2, 0, 2, -1, 2]

SORTED = ["segment_sum", "segment_mean", "segment_max", "segment_min",
          "segment_prod", "segment_sqrt_n"]
UNSORTED = ["unsorted_segment_sum", "unsorted_segment_mean",
            "unsorted_segment_max", "unsorted_segment_min",
            "unsorted_segment_prod", "unsorted_segment_sqrt_n"]


def call(name, data, ids, n_segments=None):
    fn = getattr(sg.math, name)
    return fn(data, ids) if n_segments is None else fn(data, ids, n_segments)


def reference(name, data, ids, n_segments=None):
    """The float32 op on the converted data, rounded once (the empty segments
    of the unsorted max and min take the half type's bounds)."""
    dtype = data.dtype
    out = call(name, data.astype(np.float32), ids, n_segments).numpy()
    if name in ("unsorted_segment_max", "unsorted_segment_min"):
        info = ml_dtypes.finfo(dtype)
        f32 = np.finfo(np.float32)
        out = np.where(out == f32.min, info.min, out)
        out = np.where(out == f32.max, info.max, out)
    return out.astype(dtype)


def data_and_ids(rng, dtype, n=40, width=5, n_segments=9):
    data = (rng.standard_normal((n, width)) * 4).astype(dtype)
    data[3, 1] = 0.0
    sorted_ids = np.sort(rng.integers(0, n_segments - 2, n))
    sorted_ids[-1] = n_segments - 1  # (segment n_segments - 2 may be empty)
    unsorted_ids = rng.integers(-1, n_segments - 1, n)
    return data, sorted_ids, unsorted_ids, n_segments


# -- TensorFlow's results ----------------------------------------------------------


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_tensorflow_golden(dtype):
    rows = np.asarray(ROWS, dtype)
    for name in SORTED[:-1]:  # (TensorFlow has no dense segment_sqrt_n)
        expected = GOLDEN[f"{dtype.name}/{name}/out0"].astype(dtype)
        assert_bits(call(name, rows, SORTED_IDS), expected, dtype)
    for name in UNSORTED:
        expected = GOLDEN[f"{dtype.name}/{name}/out0"].astype(dtype)
        got = call(name, rows, UNSORTED_IDS, 4)
        if name == "unsorted_segment_sqrt_n":
            # TensorFlow rounds sqrt(count) to the half type before dividing;
            # here the quotient is rounded once: the same or one unit apart
            diff = bits(got).astype(np.int32) - bits(expected).astype(np.int32)
            assert got.dtype == dtype and np.abs(diff).max() <= 1
        else:
            assert_bits(got, expected, dtype)


# -- forward: the float32 path rounded once ------------------------------------------


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("name", SORTED)
def test_sorted_is_the_float32_reduction_rounded_once(dtype, name, rng):
    data, ids, _, _ = data_and_ids(rng, dtype)
    assert_bits(call(name, data, ids), reference(name, data, ids), dtype)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("name", UNSORTED)
def test_unsorted_is_the_float32_reduction_rounded_once(dtype, name, rng):
    data, _, ids, n = data_and_ids(rng, dtype)
    assert_bits(call(name, data, ids, n), reference(name, data, ids, n), dtype)
    # ids of two dimensions
    data3 = data[:36].reshape(6, 6, 5)
    ids2 = ids[:36].reshape(6, 6)
    assert_bits(call(name, data3, ids2, n), reference(name, data3, ids2, n), dtype)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_float32_accumulation_is_more_accurate_than_half(dtype):
    # 4096 * 0.1: a half running sum stalls far below 409.6
    data = np.full((4096, 1), 0.1, dtype)
    ids = np.zeros(4096, np.int64)
    exact = np.float64(np.asarray(0.1, dtype)) * 4096
    for got in (sg.math.segment_sum(data, ids),
                sg.math.unsorted_segment_sum(data, ids, 1)):
        assert_bits(got, [[exact]], dtype)
    # a mean whose float16 sum would overflow
    big = np.full((2, 1), 60000.0, np.float16)
    assert_bits(sg.math.segment_mean(big, [0, 0]), [[60000.0]], F16)
    assert_bits(sg.math.unsorted_segment_mean(big, [0, 0], 1), [[60000.0]], F16)
    assert np.isposinf(sg.math.segment_sum(big, [0, 0]).numpy()).all()


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_non_finite_values(dtype):
    data = np.array([[np.nan, 1.0], [2.0, np.inf], [3.0, -np.inf]], dtype)
    for name in SORTED:
        assert_bits(call(name, data, [0, 0, 1]), reference(name, data, [0, 0, 1]),
                    dtype)
    for name in UNSORTED:
        assert_bits(call(name, data, [1, 1, 0], 3),
                    reference(name, data, [1, 1, 0], 3), dtype)
    assert np.isnan(sg.math.segment_max(data, [0, 0, 0]).numpy()[0, 0])


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_empty_inputs(dtype):
    empty = np.zeros((0, 3), dtype)
    for name in SORTED:
        out = call(name, empty, np.zeros(0, np.int64))
        assert out.dtype == dtype and out.shape == (0, 3)
    for name in UNSORTED:
        out = call(name, empty, np.zeros(0, np.int64), 2)
        assert_bits(out, reference(name, empty, np.zeros(0, np.int64), 2), dtype)
    narrow = np.zeros((3, 0), dtype)
    assert sg.math.segment_sum(narrow, [0, 1, 1]).shape == (2, 0)
    assert sg.math.unsorted_segment_max(narrow, [0, 1, 1], 4).dtype == dtype


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_ragged_rows_reduce_in_float32(dtype, rng):
    data = (rng.standard_normal((6, 3)) * 4).astype(dtype)
    splits, row_ids = np.array([0, 2, 2, 6]), np.array([0, 0, 2, 2, 2, 2])
    for kind in ("sum", "max", "min", "prod"):
        got = unsorted_segment_reduce_rows(data, splits, row_ids, kind)
        assert_bits(got, reference(f"unsorted_segment_{kind}", data, row_ids, 3),
                    dtype)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_bits_do_not_depend_on_threads(dtype, rng):
    data, sorted_ids, unsorted_ids, n = data_and_ids(rng, dtype, n=20000, width=8,
                                                     n_segments=300)
    results = []
    for n_threads in (1, 2, 3):
        sg.set_num_threads(n_threads)
        results.append([bits(call(name, data, sorted_ids)) for name in SORTED]
                       + [bits(call(name, data, unsorted_ids, n))
                          for name in UNSORTED])
    for other in results[1:]:
        for x, y in zip(results[0], other):
            np.testing.assert_array_equal(x, y)


# -- gradients -----------------------------------------------------------------------


@pytest.mark.parametrize("name", SORTED + UNSORTED)
def test_float16_gradients_are_the_float32_gradients_rounded_once(name, rng):
    data, sorted_ids, unsorted_ids, n = data_and_ids(rng, F16, n=30, width=3)
    data[5] = data[4]  # ties of max and min share their gradient
    args = (sorted_ids,) if name in SORTED else (unsorted_ids, n)
    v = sg.Variable(data)
    v32 = sg.Variable(data.astype(np.float32))
    with sg.GradientTape() as tape:
        y = call(name, v, *args)
    up = (rng.standard_normal(y.shape) * 2).astype(F16)
    g = tape.gradient(y, v, output_gradients=sg.constant(up))
    with sg.GradientTape() as tape:
        y32 = call(name, v32, *args)
    g32 = tape.gradient(y32, v32,
                        output_gradients=sg.constant(up.astype(np.float32)))
    assert_bits(g, g32.numpy().astype(F16), F16)


def test_bfloat16_forward_under_a_tape():
    # tapes do not record bfloat16 yet: the forward is unchanged under one
    data = np.asarray(ROWS, BF16)
    with sg.GradientTape():
        out = sg.math.unsorted_segment_mean(data, UNSORTED_IDS, 4)
    assert_bits(out, reference("unsorted_segment_mean", data, UNSORTED_IDS, 4),
                BF16)


# -- errors ----------------------------------------------------------------------------


ERRORS = [
    (lambda d: sg.math.segment_sum(d, [0, 2, 1]),
     "segment ids are not increasing"),
    (lambda d: sg.math.segment_mean(d, [0, 1]),
     "segment_ids should be the same size as dimension 0 of input."),
    (lambda d: sg.math.segment_sqrt_n(d, [-1, 0, 0]), "Segment id -1 out of range"),
    (lambda d: sg.math.unsorted_segment_sum(d, [0, 5, 1], 2),
     "segment_ids[1] = 5 is out of range [0, 2)"),
    (lambda d: sg.math.unsorted_segment_max(d, [0, 1, 1], -1),
     "Input num_segments == -1 must not be negative."),
    (lambda d: sg.math.unsorted_segment_mean(d, [0, 1], 2),
     "data.shape = [3,2] does not start with segment_ids.shape = [2]"),
    (lambda d: sg.math.unsorted_segment_sqrt_n(d, [[0, 1, 1]], 2),
     "data.shape = [3,2] does not start with segment_ids.shape = [1,3]"),
]


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("fn,message", ERRORS)
def test_errors_are_those_of_float32(dtype, fn, message):
    data = np.asarray(ROWS[:3], dtype)
    with pytest.raises(InvalidArgumentError) as f32_error:
        fn(data.astype(np.float32))
    with pytest.raises(InvalidArgumentError) as half_error:
        fn(data)
    assert message in str(half_error.value)
    assert str(half_error.value) == str(f32_error.value)
    np.testing.assert_array_equal(data.astype(np.float32), ROWS[:3])
