"""Ragged reductions: the reference's golden cases (section 5.3), empty-row
values, axes, keepdims, gradients, and NumPy loops."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.testing import check_gradients

R = sg.ragged
KINDS = ["sum", "prod", "min", "max", "mean"]


def _fn(kind):
    return getattr(R, f"reduce_{kind}")


GOLDEN_1 = {  # rt = [[3,1,4],[1,5],[9],[2,6]]
    "sum": ([15, 12, 4], [8, 6, 9, 8]),
    "prod": ([54, 30, 4], [12, 5, 9, 12]),
    "min": ([1, 1, 4], [1, 1, 9, 2]),
    "max": ([9, 6, 4], [4, 5, 9, 6]),
    "mean": ([3.75, 4, 4], [8 / 3, 3, 9, 4]),
}
GOLDEN_2 = {  # rt = [[0,1,2,3],[4],[],[5,6],[7],[8,9]]
    "sum": (45, [24, 16, 2, 3], [6, 4, 0, 11, 7, 17]),
    "prod": (0, [0, 54, 2, 3], [0, 4, 1, 30, 7, 72]),
    "min": (0, [0, 1, 2, 3], [0, 4, 2147483647, 5, 7, 8]),
    "max": (9, [8, 9, 2, 3], [3, 4, -2147483648, 6, 7, 9]),
    "mean": (4.5, [4.8, 16 / 3, 2, 3], [1.5, 4, np.nan, 5.5, 7, 8.5]),
}


@pytest.mark.parametrize("kind", KINDS)
def test_golden_first(kind):
    rt = R.constant([[3, 1, 4], [1, 5], [9], [2, 6]])
    axis0, axis1 = GOLDEN_1[kind]
    f = _fn(kind)
    for a in (0, -2):
        np.testing.assert_allclose(f(rt, axis=a).numpy(), axis0, rtol=1e-15)
    for a in (1, -1):
        np.testing.assert_allclose(f(rt, axis=a).numpy(), axis1, rtol=1e-15)
    np.testing.assert_allclose(f(rt).numpy(), axis1, rtol=1e-15)  # default axis 1
    np.testing.assert_allclose(f(rt, axis=0, keepdims=True).numpy(), [axis0])
    np.testing.assert_allclose(f(rt, axis=1, keepdims=True).numpy(),
                               np.array(axis1)[:, None])
    expected_dtype = np.float64 if kind == "mean" else np.int32
    assert f(rt).dtype == expected_dtype


@pytest.mark.parametrize("kind", KINDS)
def test_golden_second_with_an_empty_row(kind):
    rt = R.constant([[0, 1, 2, 3], [4], [], [5, 6], [7], [8, 9]])
    total, axis0, axis1 = GOLDEN_2[kind]
    f = _fn(kind)
    np.testing.assert_allclose(f(rt, axis=None).numpy(), total)
    np.testing.assert_allclose(f(rt, axis=[0, 1]).numpy(), total)
    np.testing.assert_allclose(f(rt, axis=0).numpy(), axis0, rtol=1e-15)
    np.testing.assert_allclose(f(rt, axis=1).numpy(), axis1, rtol=1e-15)
    assert f(rt, axis=None, keepdims=True).shape == (1, 1)


def test_empty_rows_float32_max_and_int_mean():
    rt = R.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []], dtype=np.float32)
    lowest = np.finfo(np.float32).min
    np.testing.assert_array_equal(R.reduce_max(rt).numpy(),
                                  np.array([4, lowest, 9, 6, lowest], np.float32))
    np.testing.assert_array_equal(R.reduce_min(rt).numpy()[[1, 4]],
                                  [np.finfo(np.float32).max] * 2)
    ints = R.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
    mean = R.reduce_mean(ints).numpy()
    assert mean.dtype == np.float64
    np.testing.assert_allclose(mean, [2.25, np.nan, 16 / 3, 6, np.nan])


def test_gradients_golden():
    v = sg.Variable([1.0, 2.0, 3.0, 4.0])
    upstream = np.array([1.0, 10.0, 100.0])
    for kind, expected in (("max", [0, 1, 0, 100]), ("mean", [0.5, 0.5, 50, 50]),
                           ("sum", [1, 1, 100, 100]), ("prod", [2, 1, 400, 300])):
        with sg.GradientTape() as tape:
            rt = R.RaggedTensor.from_row_splits(v, [0, 2, 2, 4])
            out = _fn(kind)(rt)
        g = tape.gradient(out, v, output_gradients=upstream)
        np.testing.assert_allclose(g.numpy(), expected)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("axis", [0, 1, None, 2, [1, 2], [0, 2]])
def test_finite_differences(rng, kind, axis):
    values = rng.uniform(0.5, 2.0, size=(9, 2))
    # An empty row's mean is NaN and its min / max the dtype's extreme, which
    # swamps a finite difference; test_gradients_golden covers empty rows.
    splits = [0, 3, 3, 4, 9] if kind in ("sum", "prod") else [0, 3, 4, 9]

    def f(x):
        out = _fn(kind)(R.RaggedTensor.from_row_splits(x, splits), axis=axis)
        return out.values if isinstance(out, R.RaggedTensor) else out

    check_gradients(f, [values])


def _numpy_rows(values, splits, kind):
    fn = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max,
          "mean": np.mean}[kind]
    empty = {"sum": 0, "prod": 1, "min": np.finfo(values.dtype).max,
             "max": np.finfo(values.dtype).min, "mean": np.nan}[kind]
    rows = []
    for i in range(len(splits) - 1):
        r = values[splits[i] : splits[i + 1]]
        rows.append(fn(r, axis=0) if len(r) else np.full(values.shape[1:], empty))
    return np.array(rows).reshape((len(splits) - 1,) + values.shape[1:])


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(0, 6), max_size=12), kind=st.sampled_from(KINDS),
       width=st.integers(1, 3), seed=st.integers(0, 2**31))
def test_against_numpy_rows(lengths, kind, width, seed):
    rng = np.random.default_rng(seed)
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = rng.uniform(-2, 2, size=(int(splits[-1]), width))
    rt = R.RaggedTensor.from_row_splits(values, splits)
    got = _fn(kind)(rt).numpy()
    np.testing.assert_allclose(got, _numpy_rows(values, splits, kind), rtol=1e-12)
    if lengths and max(lengths):
        # axis 0: entry j reduces the j-th value of every row that has one
        longest = max(lengths)
        cols = [np.array([values[splits[i] + j] for i in range(len(lengths))
                          if lengths[i] > j]) for j in range(longest)]
        fn = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max,
              "mean": np.mean}[kind]
        np.testing.assert_allclose(_fn(kind)(rt, axis=0).numpy(),
                                   np.array([fn(c, axis=0) for c in cols]),
                                   rtol=1e-12)


def test_inner_axis_keeps_the_rows():
    rt = R.RaggedTensor.from_row_splits(np.arange(8.0).reshape(4, 2), [0, 1, 1, 4])
    out = R.reduce_sum(rt, axis=2)
    assert isinstance(out, R.RaggedTensor)
    assert out.to_list() == [[1.0], [], [5.0, 9.0, 13.0]]
    assert R.reduce_sum(rt, axis=[]) is rt


def test_errors():
    rt = R.constant([[1, 2], [3]])
    with pytest.raises(InvalidArgumentError, match="axis 2 is out of range"):
        R.reduce_sum(rt, axis=2)
    with pytest.raises(TypeError, match="axis must be an int; got str"):
        R.reduce_sum(rt, axis="1")
    with pytest.raises(InvalidArgumentError,
                       match="axis 2 is out of range for a dense tensor of rank 2"):
        R.reduce_max(np.ones((2, 2)), axis=2)


def test_top_level_reductions_dispatch_like_tensorflow():
    rt = R.constant([[0, 1, 2, 3], [4], [], [5, 6], [7], [8, 9]])
    # tf.reduce_sum(rt) reduces every axis by default; axis=1 each row
    assert sg.reduce_sum(rt).numpy() == 45
    np.testing.assert_array_equal(sg.reduce_sum(rt, axis=1).numpy(),
                                  [6, 4, 0, 11, 7, 17])
    np.testing.assert_array_equal(sg.reduce_max(rt, axis=1).numpy(),
                                  GOLDEN_2["max"][2])
    np.testing.assert_array_equal(sg.reduce_min(rt, axis=0).numpy(),
                                  GOLDEN_2["min"][1])
    np.testing.assert_allclose(sg.reduce_mean(rt, axis=1, keepdims=True).numpy(),
                               np.array(GOLDEN_2["mean"][2])[:, None])
    v = sg.Variable([1.0, 2.0, 3.0])
    with sg.GradientTape() as tape:
        out = sg.reduce_max(R.RaggedTensor.from_row_splits(v, [0, 2, 2, 3]), axis=1)
    g = tape.gradient(out, v, output_gradients=np.array([1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(g.numpy(), [0, 1, 100])


# -- variance, std, any, all ----------------------------------------------------


def test_any_all_golden():
    rt = R.constant([[True, True], [True, True, False, True], [False, True]])
    np.testing.assert_array_equal(R.reduce_any(rt, axis=0).numpy(),
                                  [True, True, False, True])
    np.testing.assert_array_equal(R.reduce_any(rt, axis=1).numpy(), [True] * 3)
    np.testing.assert_array_equal(R.reduce_all(rt, axis=0).numpy(),
                                  [False, True, False, True])
    np.testing.assert_array_equal(R.reduce_all(rt, axis=1).numpy(),
                                  [True, False, False])
    empty = R.constant([[True], [], [False]])
    np.testing.assert_array_equal(R.reduce_any(empty).numpy(), [True, False, False])
    np.testing.assert_array_equal(R.reduce_all(empty).numpy(), [True, True, False])
    assert R.reduce_any(empty, axis=None).numpy() == np.True_
    assert R.reduce_all(empty, axis=None, keepdims=True).shape == (1, 1)


def test_variance_std_golden():
    var = R.reduce_variance(R.constant([[3, 1, 4], [1, 1], [9], [2, 1]],
                                       dtype=np.float64), axis=0)
    np.testing.assert_allclose(var.numpy(), [9.6875, 0, 0])
    std = R.reduce_std(R.constant([[3, 1, 4], [3, 1], [2], [2, 1]],
                                  dtype=np.float64), axis=0)
    np.testing.assert_allclose(std.numpy(), [0.5, 0, 0])
    # equal float32 values: mean(x**2) - mean(x)**2 clipped to exactly 0
    same = R.constant([[0.214441] * 7])
    assert R.reduce_variance(same).numpy()[0] == 0
    assert R.reduce_std(same).numpy()[0] == 0
    rows = R.constant([[1.0, 2.0], [], [5.0]])
    got = R.reduce_variance(rows).numpy()
    assert got[0] == 0.25 and np.isnan(got[1]) and got[2] == 0
    assert R.reduce_std(rows, keepdims=True).shape == (3, 1)


@settings(max_examples=40, deadline=None)
@given(lengths=st.lists(st.integers(1, 6), min_size=1, max_size=10),
       seed=st.integers(0, 2**31))
def test_variance_against_numpy(lengths, seed):
    rng = np.random.default_rng(seed)
    splits = np.concatenate([[0], np.cumsum(lengths)])
    values = rng.uniform(-3, 3, int(splits[-1]))
    rt = R.RaggedTensor.from_row_splits(values, splits)
    rows = [values[splits[i]:splits[i + 1]] for i in range(len(lengths))]
    np.testing.assert_allclose(R.reduce_variance(rt).numpy(),
                               [np.var(r) for r in rows], atol=1e-12)
    np.testing.assert_allclose(R.reduce_std(rt).numpy(),
                               [np.std(r) for r in rows], atol=1e-6)


def test_variance_gradient(rng):
    values = rng.uniform(0.5, 2.0, size=9)
    check_gradients(
        lambda x: R.reduce_variance(R.RaggedTensor.from_row_splits(x, [0, 3, 4, 9])),
        [values])


def test_variance_any_errors():
    # as TensorFlow: bools have no square (InvalidArgumentError); a ragged
    # any / all casts any values to int32 (0.5 counts as 0), a dense one
    # takes bools only
    with pytest.raises(InvalidArgumentError, match="integers or floating-point"):
        R.reduce_variance(R.constant([[True, False]]))
    np.testing.assert_array_equal(
        R.reduce_any(R.constant([[1.0, 0.5], [0.5]])).numpy(), [True, False])
    with pytest.raises(InvalidArgumentError, match="integers or floating-point"):
        R.reduce_std(np.ones(3, bool), axis=0)
    with pytest.raises(TypeError, match="bool"):
        R.reduce_all(np.ones(3), axis=0)


def _with_nan_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert ((got == want) | (np.isnan(got) & np.isnan(want))).all(), (got, want)


def _tf_variance(*values):
    # TensorFlow's test helper: mean of squares minus square of mean
    if not values:
        return np.nan
    return np.mean(np.square(values)) - np.mean(values) ** 2


def test_integer_variance_and_std_are_float_as_in_tensorflow():
    # TensorFlow's ragged_reduce_op_test, testVarianceNan and testStdNan
    rows = [[0, 1, 2, 3], [4], [], [5, 6], [7], [8, 9]]
    var = R.reduce_variance(R.constant(rows), axis=1)
    assert var.dtype == np.float64
    _with_nan_equal(var.numpy(), [_tf_variance(*r) for r in rows])
    rows = [[0, 1, 1, 0], [4], [], [5, 6], [7], [8, 9]]
    std = R.reduce_std(R.constant(rows), axis=1)
    _with_nan_equal(std.numpy(), [np.sqrt(_tf_variance(*r)) for r in rows])
    # every axis, and axis 0
    rt = R.constant([[1, 2], [3]])
    assert R.reduce_variance(rt, axis=None).numpy() == pytest.approx(2 / 3, abs=1e-15)
    np.testing.assert_array_equal(R.reduce_variance(rt, axis=0).numpy(), [1.0, 0.0])
    # TensorFlow's truediv dtype: 8- and 16-bit integers give float32
    for dtype, want in ((np.int8, np.float32), (np.uint16, np.float32),
                        (np.int32, np.float64), (np.int64, np.float64)):
        rt = R.RaggedTensor.from_row_splits(np.array([1, 2, 3], dtype), [0, 2, 3])
        for reduce in (R.reduce_mean, R.reduce_variance, R.reduce_std):
            out = reduce(rt)
            assert out.dtype == want, (dtype, reduce.__name__)
        np.testing.assert_array_equal(R.reduce_variance(rt).numpy(), [0.25, 0.0])


def test_dense_inputs_reduce_as_dense_tensors():
    # TensorFlow's ragged_reduce_op_test: testMeanWithTensorInputs,
    # testVarianceWithTensorInputs, testStdWithTensorInputs
    out = R.reduce_mean([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]], axis=1)
    np.testing.assert_array_equal(out.numpy(), [2.0, 20.0])
    out = R.reduce_variance([[6.0, 9.0, 6.0], [60.0, 90.0, 60.0]], axis=1)
    np.testing.assert_array_equal(out.numpy(), [2.0, 200.0])
    out = R.reduce_std([[1.0, 2.0, 2.0, 1.0], [10.0, 20.0, 20.0, 10.0]], axis=1)
    np.testing.assert_array_equal(out.numpy(), [0.5, 5.0])
    # the other reductions, keepdims, every axis, an integer mean
    x = np.array([[1, 5, 2], [4, 3, 6]])
    np.testing.assert_array_equal(R.reduce_sum(x, axis=0).numpy(), [5, 8, 8])
    np.testing.assert_array_equal(R.reduce_prod(x, axis=1).numpy(), [10, 72])
    np.testing.assert_array_equal(R.reduce_max(x, axis=1, keepdims=True).numpy(),
                                  [[5], [6]])
    assert R.reduce_min(x, axis=None).numpy() == 1
    mean = R.reduce_mean(x, axis=1)
    assert mean.dtype == np.float64
    np.testing.assert_allclose(mean.numpy(), [8 / 3, 13 / 3], rtol=1e-15)
    flags = np.array([[True, False], [True, True]])
    np.testing.assert_array_equal(R.reduce_any(flags, axis=1).numpy(), [True, True])
    np.testing.assert_array_equal(R.reduce_all(flags, axis=1).numpy(), [False, True])
    # differentiable as the dense ops are
    check_gradients(lambda v: R.reduce_variance(v, axis=1),
                    [np.array([[1.0, 2.0, 4.0], [3.0, -1.0, 0.5]])])
