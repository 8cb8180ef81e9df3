"""Segment and unsorted-segment reductions (sparsegrad.math): TensorFlow's
values and gradients replayed from segment_golden.npz, every error message,
NumPy reference loops (hypothesis), finite-difference gradients, NaN
propagation and bit identity across thread counts."""

import functools
import json
import os
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.testing import check_gradients

# Registered op types whose gradients are checked here (finite differences
# and TensorFlow's gradients below).
CHECKED_OPS = (
    "SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd",
    "UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin",
    "UnsortedSegmentProd",
)

SORTED = ["segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod"]
UNSORTED = [
    "unsorted_segment_sum", "unsorted_segment_mean", "unsorted_segment_max",
    "unsorted_segment_min", "unsorted_segment_prod", "unsorted_segment_sqrt_n",
]
GOLDEN = os.path.join(os.path.dirname(__file__), "data", "segment_golden.npz")


def call(fn, data, ids, num_segments=None):
    f = getattr(sg.math, fn)
    if num_segments is None:
        return f(data, ids)
    return f(data, ids, num_segments)


# -- TensorFlow's values and gradients ------------------------------------------------


def _golden_cases():
    with np.load(GOLDEN) as z:
        meta = json.loads(str(z["__meta__"]))
        arrays = {k: z[k] for k in z.files if k != "__meta__"}
    return [(name, m, {k.split("/")[1]: v for k, v in arrays.items()
                       if k.split("/")[0] == name}) for name, m in meta.items()]


GOLDEN_CASES = _golden_cases()


@pytest.mark.parametrize("name,meta,case", GOLDEN_CASES,
                         ids=[c[0] for c in GOLDEN_CASES])
def test_tensorflow_golden(name, meta, case):
    data, ids = case["data"], case["ids"]
    x = sg.Variable(data) if data.dtype.kind == "f" else data
    with sg.GradientTape() as tape:
        out = call(meta["fn"], x, ids, meta["num_segments"])
    expected = case["out"]
    assert out.dtype == expected.dtype, name
    assert out.shape == expected.shape, name
    exact = data.dtype.kind != "f" or meta["fn"].endswith(("_max", "_min"))
    if exact:
        np.testing.assert_array_equal(out.numpy(), expected, err_msg=name)
    else:
        rtol = 2e-6 if data.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(out.numpy(), expected, rtol=rtol, atol=rtol,
                                   err_msg=name)
    if "grad" in case:
        grad = tape.gradient(out, x, output_gradients=sg.constant(case["up"]))
        grad = np.zeros_like(data) if grad is None else np.asarray(grad)
        rtol = 2e-6 if data.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(grad, case["grad"], rtol=rtol, atol=rtol,
                                   err_msg=name)


def test_golden_covers_every_op():
    fns = {m["fn"] for _, m, _ in GOLDEN_CASES}
    assert fns == set(SORTED) | set(UNSORTED)


# -- reference values named in the reference -----------------------------------------


def test_reference_values():
    x = np.arange(1, 17, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(sg.math.segment_sum(x, [0, 0, 0, 1]).numpy(),
                                  [[15, 18, 21, 24], [13, 14, 15, 16]])
    c = np.array([[1, 2, 3, 4], [4, 3, 2, 1], [5, 6, 7, 8]], np.float32)
    np.testing.assert_array_equal(sg.math.segment_max(c, [2, 2, 3]).numpy(),
                                  [[0] * 4, [0] * 4, [4, 3, 3, 4], [5, 6, 7, 8]])
    # TensorFlow's float32 sqrt is Eigen's fast one (an ulp off); ours is
    # IEEE's, as for rsqrt in DESIGN.md.
    np.testing.assert_allclose(
        sg.math.unsorted_segment_sqrt_n(c, [0, 1, 0], 2).numpy(),
        np.array([[4.2426405, 5.656854, 7.071068, 8.485282], [4, 3, 2, 1]],
                 np.float32), rtol=3e-7)


def test_unsorted_empty_fill_values():
    for dtype, lo, hi in ((np.float32, -3.4028235e38, 3.4028235e38),
                          (np.float64, -1.7976931348623157e308,
                           1.7976931348623157e308),
                          (np.int32, -2147483648, 2147483647)):
        x = np.array([1, 2], dtype)
        mx = sg.math.unsorted_segment_max(x, [0, 0], 2).numpy()
        mn = sg.math.unsorted_segment_min(x, [0, 0], 2).numpy()
        assert mx.dtype == dtype and mx[1] == dtype(lo) and mx[0] == 2
        assert mn.dtype == dtype and mn[1] == dtype(hi) and mn[0] == 1
    assert sg.math.unsorted_segment_prod([2.0], [-1], 2).numpy().tolist() == [1, 1]
    assert sg.math.unsorted_segment_sum([2.0], [-1], 2).numpy().tolist() == [0, 0]


@pytest.mark.parametrize("ids", [[0, 0, 1], [1, 0, 0]])  # one-pass and scatter
def test_unsorted_reduce_from_the_fill_value(ids):
    """As TensorFlow: -inf entries give the lowest finite value, a sum of
    -0.0 gives 0.0 (the sorted ops start from the first row instead)."""
    ids = np.array(ids)
    x = np.where(ids == 0, -np.inf, 5.0).astype(np.float32)
    assert sg.math.unsorted_segment_max(x, ids, 2).numpy()[0] == np.finfo(
        np.float32).min
    assert sg.math.unsorted_segment_min(-x, ids, 2).numpy()[0] == np.finfo(
        np.float32).max
    z = np.where(ids == 0, -0.0, 5.0).astype(np.float32)
    total = sg.math.unsorted_segment_sum(z, ids, 2).numpy()
    assert total[0] == 0 and not np.signbit(total[0])
    minus_inf = np.full(2, -np.inf, np.float32)
    assert sg.math.segment_max(minus_inf, [0, 0]).numpy()[0] == -np.inf
    assert np.signbit(sg.math.segment_sum(np.float32([-0.0]), [0]).numpy()[0])


def test_dtype_rules():
    ints = np.array([[1, 2, 3, 4], [4, 3, 2, 1]], np.int32)
    mean = sg.math.segment_mean(ints, [0, 0])
    assert mean.dtype == np.int32 and mean.numpy().tolist() == [[2, 2, 2, 2]]
    # integer division truncates toward zero, as C does
    assert sg.math.segment_mean(np.array([-3, -4], np.int64), [0, 0]).numpy()[0] == -3
    umean = sg.math.unsorted_segment_mean(ints, [0, 0], 2)
    assert umean.dtype == np.float64
    np.testing.assert_array_equal(umean.numpy(), [[2.5] * 4, [0] * 4])
    with pytest.raises(InvalidArgumentError, match="int32"):
        sg.math.unsorted_segment_sqrt_n(ints, [0, 0], 2)
    with pytest.raises(InvalidArgumentError, match="complex"):
        sg.math.segment_sum(np.ones(2, np.complex64), [0, 0])
    with pytest.raises(InvalidArgumentError, match="bool"):
        sg.math.unsorted_segment_max(np.ones(2, bool), [0, 0], 1)
    f16 = sg.math.segment_sum(np.array([1, 2, 3], np.float16), [0, 0, 1])
    assert f16.dtype == np.float16 and f16.numpy().tolist() == [3, 3]


# -- errors ------------------------------------------------------------------------


SORTED_ERRORS = [
    (np.float32(1.0), [0], "input must be at least rank 1"),
    (np.ones(4), [[0, 0], [0, 0]], "segment_ids should be a vector."),
    (np.ones(4), [0, 0, 0], "segment_ids should be the same size as dimension 0 "
     "of input."),
    (np.ones(4), [0, 0, 0, -1], "segment ids must be >= 0"),
    (np.ones(4), [0, 0, 0, -2], "segment ids must be >= 0"),
    (np.ones(4), [0, 1, 0, 1], "segment ids are not increasing"),
    (np.ones(3), [1, 0, 1], "segment ids are not increasing"),
    (np.ones(4), [-1, -1, 0, 0], "Segment id -1 out of range [0, 1), possibly "
     "because 'segment_ids' input is not sorted."),
    (np.ones(4), [0, 1, 2, 0], "Segment id 1 out of range [0, 1), possibly "
     "because 'segment_ids' input is not sorted."),
    (np.ones(3), [-1, 0, 1], "Segment id -1 out of range [0, 2), possibly "
     "because 'segment_ids' input is not sorted."),
    (np.ones(2), [0.5, 1.0], "segment_ids must be int32 or int64"),
]


@pytest.mark.parametrize("fn", SORTED)
@pytest.mark.parametrize("data,ids,message", SORTED_ERRORS)
def test_sorted_errors(fn, data, ids, message):
    for dtype in (np.float32, np.int32):
        with pytest.raises(InvalidArgumentError) as info:
            call(fn, np.asarray(data, dtype), ids)
        assert message in str(info.value)


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("position", [1_001, 50_001, 99_001])
def test_errors_found_in_any_part(threads, position):
    """Each thread checks its own part of the ids: a bad id in any part is
    reported, whatever the thread count."""
    sg.set_num_threads(threads)
    data = np.ones((100_000, 2), np.float32)
    ids = np.repeat(np.arange(50_000, dtype=np.int32), 2)
    ids[position] = 3
    with pytest.raises(InvalidArgumentError, match="not increasing"):
        sg.math.segment_sum(data, ids)
    ids = np.repeat(np.arange(50_000, dtype=np.int32), 2)
    ids[position] = 50_000
    message = rf"segment_ids\[{position}\] = 50000 is out of range \[0, 50000\)"
    with pytest.raises(InvalidArgumentError, match=message):
        sg.math.unsorted_segment_sum(data, ids, 50_000)  # sorted: one pass
    message = message.replace(str(position), str(ids.size - 1 - position))
    with pytest.raises(InvalidArgumentError, match=message):
        sg.math.unsorted_segment_max(data, ids[::-1].copy(), 50_000)  # scatter


def test_huge_segment_id():
    with pytest.raises(InvalidArgumentError, match="memory"):
        sg.math.segment_sum([1.0], np.array([1676240524292489355]))


def _refused(fragment, call, *args):
    with pytest.raises(InvalidArgumentError, match=re.escape(fragment)) as info:
        call(*args)
    assert "more than " in str(info.value)


SORTED_OPS = [sg.math.segment_sum, sg.math.segment_mean, sg.math.segment_max,
              sg.math.segment_min, sg.math.segment_prod]


@pytest.mark.parametrize("op", SORTED_OPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_sorted_reductions_check_their_result_before_allocating(op, dtype):
    data = np.ones((2, 64), dtype)
    ids = np.array([0, 2**31 - 1], np.int32)
    # float16 data is reduced into a float32 result first, the largest buffer
    largest = np.float32 if dtype == np.float16 else dtype
    _refused(f"{op.__name__}: segment_ids asks for a result of shape (2147483648, "
             f"64) and dtype {np.dtype(largest)}", op, data, ids)
    np.testing.assert_array_equal(data, 1)
    np.testing.assert_array_equal(ids, [0, 2**31 - 1])


def test_sorted_reductions_check_copies_of_broadcast_arguments():
    # views of 8 TiB and 32 TiB cost nothing; their contiguous copies would
    data = np.broadcast_to(np.float32(1), (2**40, 8))
    ids = np.broadcast_to(np.int64(0), (2**40,))
    _refused("segment_sum: data asks for a result of shape (1099511627776, 8) "
             "and dtype float32 (35184372088832 bytes); with the call's other "
             "buffers,", sg.math.segment_sum, data, ids)


UNSORTED_OPS = [sg.math.unsorted_segment_sum, sg.math.unsorted_segment_max,
                sg.math.unsorted_segment_min, sg.math.unsorted_segment_prod,
                sg.math.unsorted_segment_mean, sg.math.unsorted_segment_sqrt_n]


@pytest.mark.parametrize("op", UNSORTED_OPS, ids=lambda f: f.__name__)
def test_unsorted_reductions_check_num_segments_before_allocating(op):
    data = np.ones((2, 64), np.float32)
    _refused(f"{op.__name__}: num_segments asks for a result of shape "
             "(1099511627776, 64) and dtype float32", op, data, [0, 1], 2**40)
    # 2-D ids broadcast to 2**40 entries: their flat copy is checked too
    ids = np.broadcast_to(np.int32(0), (2**20, 2**20))
    _refused(f"{op.__name__}: segment_ids asks for a result of shape (1048576, "
             "1048576) and dtype int32",
             op, np.broadcast_to(np.float32(1), (2**20, 2**20)), ids, 2)


def test_unsorted_float16_extremes_check_their_float32_result():
    # float16 data is reduced in float32: that result is the largest buffer
    data = np.ones((2, 2**20), np.float16)
    _refused("unsorted_segment_max: num_segments asks for a result of shape "
             "(1048576, 1048576) and dtype float32", sg.math.unsorted_segment_max,
             data, [0, 1], 2**20)


UNSORTED_ERRORS = [
    (np.ones((3, 4)), [0, 1], 2, "data.shape = [3,4] does not start with "
     "segment_ids.shape = [2]"),
    (np.ones(2), [0, 5], 2, "segment_ids[1] = 5 is out of range [0, 2)"),
    (np.array([[17.0]]), [[2]], 2, "segment_ids[0,0] = 2 is out of range [0, 2)"),
    (np.ones(2), [0, 1], -1, "Input num_segments == -1 must not be negative."),
    (np.ones(2), [0, 1], [2], "num_segments should be a scalar"),
    (np.ones(2), [0, 1], 2.0, "num_segments must be an int32 or int64 scalar"),
]


@pytest.mark.parametrize("fn", UNSORTED)
@pytest.mark.parametrize("data,ids,num,message", UNSORTED_ERRORS)
def test_unsorted_errors(fn, data, ids, num, message):
    with pytest.raises(InvalidArgumentError) as info:
        call(fn, np.asarray(data, np.float32), ids, num)
    assert message in str(info.value)


@pytest.mark.parametrize("fn", UNSORTED)
def test_unsorted_out_of_range_large(fn):
    ids = np.arange(100_000, dtype=np.int64) % 7
    ids[60_000] = 7
    with pytest.raises(InvalidArgumentError,
                       match=r"segment_ids\[60000\] = 7 is out of range \[0, 7\)"):
        call(fn, np.ones(ids.size, np.float32), ids, 7)
    ids.sort()  # sorted ids take the one-pass kernel
    with pytest.raises(InvalidArgumentError, match=r"= 7 is out of range \[0, 7\)"):
        call(fn, np.ones(ids.size, np.float32), ids, 7)


def test_zero_segments_and_empty():
    assert sg.math.unsorted_segment_sum(np.zeros((0, 3)), [], 0).shape == (0, 3)
    assert sg.math.unsorted_segment_sum(np.ones((2, 3)), [-1, -1], 0).shape == (0, 3)
    assert sg.math.segment_sum(np.zeros((0, 3)), []).shape == (0, 3)
    assert sg.math.segment_prod(np.zeros((3, 0)), [0, 0, 4]).shape == (5, 0)
    with pytest.raises(InvalidArgumentError, match="not increasing"):
        sg.math.segment_prod(np.zeros((3, 0)), [0, 5, 4])


# -- NumPy reference loops ------------------------------------------------------------


def numpy_reference(fn, data, ids, num_segments=None):
    """A plain loop over segments, rows reduced in their original order."""
    data = np.asarray(data)
    ids = np.asarray(ids)
    unsorted = num_segments is not None
    flat_ids = ids.reshape(-1)
    rows = data.reshape((flat_ids.size,) + data.shape[ids.ndim:])
    n_segments = num_segments if unsorted else (int(ids[-1]) + 1 if ids.size else 0)
    op = fn.split("_")[-1]
    op = "sqrt_n" if fn.endswith("sqrt_n") else op
    out_dtype = data.dtype
    if unsorted and op == "mean" and data.dtype.kind != "f":
        out_dtype = np.dtype(np.float64)
    out = np.zeros((n_segments,) + rows.shape[1:], out_dtype)
    for s in range(n_segments):
        members = rows[flat_ids == s]
        if len(members) == 0:
            if op == "prod":
                out[s] = 1
            elif unsorted and op in ("max", "min"):
                info = np.finfo if data.dtype.kind == "f" else np.iinfo
                out[s] = info(data.dtype).min if op == "max" else info(data.dtype).max
            continue
        if op in ("sum", "mean", "sqrt_n"):
            total = functools.reduce(lambda a, b: a + b, members)
            count = len(members)
            if op == "sum":
                out[s] = total
            elif op == "sqrt_n":
                out[s] = total / np.sqrt(data.dtype.type(count))
            elif data.dtype.kind == "f":
                out[s] = total / data.dtype.type(count)
            elif unsorted:
                out[s] = total / count
            else:
                out[s] = np.sign(total) * (np.abs(total) // count)
        elif op == "prod":
            out[s] = functools.reduce(lambda a, b: a * b, members)
        else:
            pick = np.fmax if op == "max" else np.fmin
            value = functools.reduce(pick, members)
            if data.dtype.kind == "f":
                value = np.where(np.isnan(members).any(axis=0), np.nan, value)
            out[s] = value
    return out


def assert_matches(fn, got, expected, dtype):
    if np.dtype(dtype).kind == "f" and fn.split("_")[-1] in ("sum", "mean", "n"):
        tol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-12
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, expected)


@st.composite
def sorted_case(draw):
    n = draw(st.integers(0, 30))
    width = draw(st.sampled_from([(), (1,), (3,), (2, 2)]))
    steps = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    ids = np.cumsum(steps).astype(draw(st.sampled_from([np.int32, np.int64])))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32]))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    data = rng.integers(-5, 6, size=(n,) + width).astype(dtype)
    if dtype != np.int32:
        data = data + rng.uniform(-0.5, 0.5, size=data.shape).astype(dtype)
    return data, ids


@settings(max_examples=60, deadline=None)
@given(case=sorted_case(), fn=st.sampled_from(SORTED))
def test_sorted_against_numpy_loop(case, fn):
    data, ids = case
    got = call(fn, data, ids).numpy()
    expected = numpy_reference(fn, data, ids)
    assert got.dtype == data.dtype
    assert_matches(fn, got, expected, data.dtype)


@st.composite
def unsorted_case(draw):
    ids_shape = draw(st.sampled_from([(0,), (7,), (25,), (3, 4), (2, 3, 2)]))
    row = draw(st.sampled_from([(), (2,), (2, 1)]))
    num = draw(st.integers(0, 8))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    ids = rng.integers(-2, max(num, 1), size=ids_shape)
    if num == 0:
        ids = np.minimum(ids, -1)
    if draw(st.booleans()):
        ids = np.sort(ids.reshape(-1)).reshape(ids_shape)
    ids = ids.astype(draw(st.sampled_from([np.int16, np.int32, np.int64])))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32]))
    data = rng.integers(-5, 6, size=ids_shape + row).astype(dtype)
    if dtype != np.int32:
        data = data + rng.uniform(-0.5, 0.5, size=data.shape).astype(dtype)
    return data, ids, num


@settings(max_examples=80, deadline=None)
@given(case=unsorted_case(), fn=st.sampled_from(UNSORTED))
def test_unsorted_against_numpy_loop(case, fn):
    data, ids, num = case
    if fn.endswith("sqrt_n") and data.dtype.kind != "f":
        return
    got = call(fn, data, ids, num).numpy()
    expected = numpy_reference(fn, data, ids, num)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert_matches(fn, got, expected, data.dtype)


def test_inputs_tensor_variable_readonly(rng):
    data = rng.standard_normal((6, 2))
    ids = np.array([0, 0, 1, 3, 3, 3])
    expected = numpy_reference("segment_sum", data, ids)
    frozen = data.copy()
    frozen.setflags(write=False)
    frozen_ids = ids.copy()
    frozen_ids.setflags(write=False)
    for d, i in ((sg.constant(data), sg.constant(ids)), (sg.Variable(data), ids),
                 (frozen, frozen_ids), (data.tolist(), ids.tolist()),
                 (data.T.copy().T, ids.astype(np.int32))):
        np.testing.assert_allclose(sg.math.segment_sum(d, i).numpy(), expected,
                                   rtol=1e-15)


# -- NaN ----------------------------------------------------------------------------


@pytest.mark.parametrize("values", [[1.0, np.nan, 3.0], [3.0, np.nan, 1.0],
                                    [np.nan, 2.0], [2.0, np.nan]])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_propagates_in_min_and_max(values, dtype):
    x = np.array(values, dtype)
    ids = np.zeros(len(values), np.int32)
    for fn in ("segment_max", "segment_min"):
        assert np.isnan(call(fn, x, ids).numpy()[0])
        assert np.isnan(call("unsorted_" + fn, x, ids, 1).numpy()[0])
        assert np.isnan(call("unsorted_" + fn, x[::-1].copy(), ids, 1).numpy()[0])
    wide = np.tile(x[:, None], (1, 3))
    wide[:, 1] = np.arange(len(values))
    out = sg.math.segment_max(wide, ids).numpy()
    assert np.isnan(out[0, 0]) and out[0, 1] == len(values) - 1


def test_nan_gradient_goes_to_the_nan_elements():
    v = sg.Variable([1.0, np.nan, 3.0, 2.0])
    with sg.GradientTape() as tape:
        y = sg.math.segment_max(v, [0, 0, 0, 1])
    g = tape.gradient(y, v, output_gradients=sg.constant([5.0, 7.0]))
    np.testing.assert_array_equal(g.numpy(), [0.0, 5.0, 0.0, 7.0])


# -- gradients ----------------------------------------------------------------------


SORTED_IDS = np.array([0, 0, 2, 2, 2, 3, 6])
UNSORTED_IDS = np.array([3, -1, 0, 3, 1, 2, -2])


@pytest.mark.parametrize("fn", SORTED)
def test_sorted_gradients_finite_differences(fn, rng):
    data = rng.permutation(21).reshape(7, 3) / 5.0 + 0.3  # no ties
    order = 2 if fn in ("segment_sum", "segment_mean") else 1
    check_gradients(lambda x: call(fn, x, SORTED_IDS), [data], order=order)


@pytest.mark.parametrize("fn", UNSORTED)
def test_unsorted_gradients_finite_differences(fn, rng):
    data = rng.permutation(21).reshape(7, 3) / 5.0 + 0.3
    order = 2 if fn in ("unsorted_segment_sum", "unsorted_segment_mean",
                        "unsorted_segment_sqrt_n") else 1
    # max / min fill empty segments with the dtype's extremes, which finite
    # differences cannot cross: every segment gets an entry there.
    num = 4 if fn.endswith(("_max", "_min")) else 5
    check_gradients(lambda x: call(fn, x, UNSORTED_IDS, num), [data], order=order)
    ids2 = UNSORTED_IDS[:6].reshape(2, 3)
    check_gradients(lambda x: call(fn, x, ids2, num), [data[:6].reshape(2, 3, 3)])


@pytest.mark.parametrize("fn", ["segment_prod", "unsorted_segment_prod"])
def test_prod_gradient_with_zeros(fn):
    data = np.array([[0.0, 2.0], [3.0, 0.0], [2.0, 0.0], [0.0, 5.0], [0.0, 4.0]])
    ids = np.array([0, 0, 0, 1, 1])
    check_gradients(lambda x: call(fn, x, ids, *([2] if "unsorted" in fn else [])),
                    [data])
    v = sg.Variable(data)
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(call(fn, v, ids, *([2] if "unsorted" in fn else [])))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(),
                                  [[6, 0], [0, 0], [0, 0], [0, 4], [0, 5]])


def test_max_ties_share_the_gradient():
    v = sg.Variable([1.0, 3.0, 3.0, 2.0])
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(sg.math.segment_max(v, [0, 0, 0, 1]))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [0, 0.5, 0.5, 1])


@pytest.mark.parametrize("fn", ["unsorted_segment_sum", "segment_sum", "segment_mean",
                                "unsorted_segment_prod", "unsorted_segment_max"])
def test_indexed_slices_upstream(fn, rng):
    """The upstream of the reduction is an IndexedSlices (a gather of it)."""
    data = rng.permutation(24).reshape(8, 3) / 7.0 + 0.2
    ids = np.array([0, 0, 1, 1, 1, 4, 4, 6])
    extra = [7] if "unsorted" in fn else []
    pick = np.array([4, 1, 4, 6])
    weights = rng.standard_normal((4, 3))

    def f(x):
        out = call(fn, x, ids, *extra)
        return sg.reduce_sum(sg.gather(out, pick) * weights)

    v = sg.Variable(data)
    with sg.GradientTape() as tape:
        y = f(v)
    got = tape.gradient(y, v).numpy()
    check_gradients(f, [data])
    with sg.GradientTape() as tape:
        out = call(fn, v, ids, *extra)
    up = np.zeros(out.shape)
    np.add.at(up, pick, weights)
    expected = tape.gradient(out, v, output_gradients=sg.constant(up)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-15)


# -- threads --------------------------------------------------------------------------


def _all_ops(data, ids, shuffled_ids, n_segments):
    outs = []
    for fn in SORTED:
        outs.append(call(fn, data, ids).numpy())
    for fn in UNSORTED:
        for i in (ids, shuffled_ids):
            outs.append(call(fn, data, i, n_segments).numpy())
    for fn, i, extra in (("segment_prod", ids, []), ("unsorted_segment_prod",
                                                       shuffled_ids, [n_segments]),
                         ("segment_max", ids, []), ("unsorted_segment_sum",
                                                    shuffled_ids, [n_segments])):
        v = sg.Variable(data)
        with sg.GradientTape() as tape:
            y = call(fn, v, i, *extra)
        outs.append(tape.gradient(y, v).numpy())
    return outs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [(), (5,)])
def test_bits_do_not_depend_on_thread_count(dtype, width, rng):
    n = 120_000
    ids = np.sort(rng.integers(0, 3_000, n)).astype(np.int32)
    ids[:50] = 0
    shuffled = rng.permutation(ids)
    shuffled[::17] = -1
    data = rng.uniform(0.9, 1.1, size=(n,) + width).astype(dtype)
    results = []
    for threads in (1, 2, 3, 4):  # the unsorted scatter runs parallel from 4
        sg.set_num_threads(threads)
        results.append(_all_ops(data, ids, shuffled, 3_100))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert a.tobytes() == b.tobytes()
    # and they are right: sum against float64
    ref = np.zeros((ids[-1] + 1,) + width)
    np.add.at(ref, ids, data.astype(np.float64))
    np.testing.assert_allclose(results[0][0], ref, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("width", [1, 3])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_reduce_rows_from_splits_has_the_bits_of_the_ids(dtype, kind, width,
                                                          n_threads):
    # segment_reduce_splits (a RaggedTensor's rows): the same bits as the
    # unsorted reduction by the row ids, empty rows, -0.0 and NaN included
    from sparsegrad.ops.segment_ops.unsorted_reductions import (
        unsorted_segment_reduce_rows,
    )

    rng = np.random.default_rng(width)
    lengths = rng.integers(0, 40, 3000)
    lengths[::7] = 0
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = np.repeat(np.arange(lengths.size), lengths)
    data = rng.standard_normal((ids.size, width)).astype(dtype)
    data[5] = -0.0
    data[100, 0] = np.nan
    if kind == "prod":
        data = (1 + data / 50).astype(dtype)
    sg.set_num_threads(n_threads)
    try:
        got = unsorted_segment_reduce_rows(data, splits, ids, kind)
        want = getattr(sg.math, f"unsorted_segment_{kind}")(data, ids, lengths.size)
    finally:
        sg.set_num_threads(None)
    assert got.numpy().tobytes() == want.numpy().tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("build", ["segment", "segment_avx2"])
def test_row_sums_from_splits_follow_the_contiguous_sum(dtype, build,
                                                        contiguous_sum):
    # segment_reduce_splits' sums of 1-D rows (sg_segment_rows.h: masked
    # blocks and tails, a loop past 40 values, the loops for the last rows)
    # against a model of sg_seg_sum_contiguous, value by value: every length
    # from 0 to 90, rows of -0.0, NaN and inf, the sorted (-0.0 kept, fill
    # for an empty row) and the unsorted (fill added) forms, any thread count
    import importlib

    from sparsegrad._kernels import parallel

    if build.endswith("avx2") and not parallel.cpu_has_avx2():
        pytest.skip("no AVX2 on this CPU")
    kernels = importlib.import_module(f"sparsegrad._kernels.{build}")
    rng = np.random.default_rng(5)
    lengths = np.concatenate([np.arange(91), rng.integers(0, 60, 400), np.arange(12)])
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    x = (rng.standard_normal(splits[-1]) * 10.0 ** rng.integers(-3, 4, splits[-1]))
    x = x.astype(dtype)
    x[splits[3]:splits[4]] = -0.0              # a row of three -0.0
    x[splits[50] + 17] = np.nan
    x[splits[95] + 2] = np.inf
    x[splits[95] + 5] = -np.inf
    rows = [x[a:b] for a, b in zip(splits[:-1], splits[1:])]
    with np.errstate(invalid="ignore"):     # inf + -inf in row 95
        want = np.array([contiguous_sum(r) for r in rows], dtype=dtype)
    empty = lengths == 0
    for n_threads in (1, 2, 3):
        for from_fill in (False, True):
            out = np.full((lengths.size, 1), 7, dtype=dtype)
            kernels.segment_reduce_splits(x.reshape(-1, 1), splits, kernels.SUM,
                                          0.0, from_fill, out, n_threads)
            expect = want + dtype(0) if from_fill else np.where(empty, dtype(0), want)
            assert out[:, 0].tobytes() == expect.astype(dtype).tobytes()
    assert np.signbit(out[3, 0]) == 0 and np.signbit(want[3])   # -0.0 + fill
