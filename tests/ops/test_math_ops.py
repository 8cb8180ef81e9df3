"""Elementwise math, reductions and matmul: values against NumPy, gradients
against finite differences (first and second order), broadcasting, dtypes and
errors."""

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hynp

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.testing import check_gradients

# Op types whose gradients this module checks (read by tests/autodiff/test_registry.py).
CHECKED_OPS = (
    "AddV2",
    "Prod",
    "Sub",
    "Mul",
    "RealDiv",
    "Pow",
    "Maximum",
    "Minimum",
    "Neg",
    "Square",
    "Sqrt",
    "SqrtGrad",
    "Rsqrt",
    "RsqrtGrad",
    "Exp",
    "Log",
    "Log1p",
    "Abs",
    "Sign",
    "Tanh",
    "TanhGrad",
    "Sigmoid",
    "SigmoidGrad",
    "SelectV2",
    "AddN",
    "Sum",
    "Mean",
    "Max",
    "Min",
    "MatMul",
    "BatchMatMulV2",
)


def _positive(rng, shape):
    return rng.uniform(0.5, 2.0, size=shape)


def _away_from_zero(rng, shape):
    return rng.uniform(0.3, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)


# -- binary ops ------------------------------------------------------------------------

BINARY = [
    (sg.add, np.add, "any"),
    (sg.subtract, np.subtract, "any"),
    (sg.multiply, np.multiply, "any"),
    (sg.divide, np.divide, "y_nonzero"),
    (sg.pow, np.power, "x_positive"),
    (sg.maximum, np.maximum, "distinct"),
    (sg.minimum, np.minimum, "distinct"),
]

SHAPES = [
    ((3, 4), (3, 4)),
    ((3, 4), ()),
    ((), (2, 3)),
    ((3, 1), (1, 4)),
    ((2, 3, 4), (4,)),
    ((1, 3), (2, 1, 3)),
]


def _binary_inputs(rng, kind, sx, sy):
    if kind == "y_nonzero":
        return rng.standard_normal(sx), _away_from_zero(rng, sy)
    if kind == "x_positive":
        return _positive(rng, sx), rng.standard_normal(sy)
    if kind == "distinct":
        # values apart by at least 0.1, so no ties and no kink inside +-delta
        x = rng.permutation(np.arange(-30, 30))[: int(np.prod(sx))].reshape(sx) * 0.1
        y = (
            rng.permutation(np.arange(-30, 30))[: int(np.prod(sy))].reshape(sy) * 0.1
            + 0.05
        )
        return x, y
    return rng.standard_normal(sx), rng.standard_normal(sy)


@pytest.mark.parametrize("op, ref, kind", BINARY, ids=[b[0].__name__ for b in BINARY])
@pytest.mark.parametrize("sx, sy", SHAPES)
def test_binary_value_and_gradients(op, ref, kind, sx, sy, rng):
    x, y = _binary_inputs(rng, kind, sx, sy)
    np.testing.assert_allclose(op(x, y).numpy(), ref(x, y), rtol=1e-12)
    check_gradients(op, [x, y], order=2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op, ref, kind", BINARY, ids=[b[0].__name__ for b in BINARY])
def test_binary_float32_stays_float32(op, ref, kind, rng):
    x, y = _binary_inputs(rng, kind, (2, 3), (2, 3))
    out = op(x.astype(np.float32), y.astype(np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), ref(x, y).astype(np.float32), rtol=1e-5)


def test_python_scalar_adopts_tensor_dtype():
    x = sg.constant([1.0, 2.0], dtype="float32")
    assert (x * 2.0).dtype == np.float32
    assert (2.0 * x).dtype == np.float32
    assert (x + 1).dtype == np.float32
    assert (1 - x).dtype == np.float32
    np.testing.assert_array_equal((1 - x).numpy(), [0.0, -1.0])
    np.testing.assert_array_equal((2.0 / x).numpy(), [2.0, 1.0])
    assert (x**2).dtype == np.float32
    assert (x * np.array([1.0, 2.0])).dtype == np.float32  # array_like adopts too
    i = sg.constant([1, 2], dtype="int32")
    assert (i + 1).dtype == np.int32


def test_binary_dtype_mismatch_is_an_error():
    x = sg.constant([1.0], dtype="float32")
    y = sg.constant([1.0], dtype="float64")
    with pytest.raises(InvalidArgumentError, match=r"float32.*float64"):
        sg.add(x, y)
    with pytest.raises(InvalidArgumentError, match="float"):
        sg.constant([1, 2], dtype="int32") * 2.5


def test_binary_shape_mismatch_is_an_error():
    with pytest.raises(InvalidArgumentError, match=r"\(2,\).*\(3,\)"):
        sg.add([1.0, 2.0], [1.0, 2.0, 3.0])


def test_divide_integers_gives_float64():
    out = sg.divide(sg.constant([1, 3]), 2)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.numpy(), [0.5, 1.5])
    # tf.math.truediv's table: 8- and 16-bit integers give float32
    for dtype, want in ((np.int8, np.float32), (np.uint8, np.float32),
                        (np.int16, np.float32), (np.uint16, np.float32),
                        (np.int32, np.float64), (np.uint32, np.float64),
                        (np.int64, np.float64)):
        out = sg.divide(np.array([1, 3], dtype), np.array([2, 4], dtype))
        assert out.dtype == want, dtype
        np.testing.assert_array_equal(out.numpy(), [0.5, 0.75])


def test_maximum_tie_gradient_goes_to_x():
    x = sg.constant([1.0, 2.0])
    y = sg.constant([1.0, 3.0])
    with sg.GradientTape() as tape:
        tape.watch([x, y])
        z = sg.maximum(x, y)
    gx, gy = tape.gradient(z, [x, y])
    np.testing.assert_array_equal(gx.numpy(), [1.0, 0.0])
    np.testing.assert_array_equal(gy.numpy(), [0.0, 1.0])
    with sg.GradientTape() as tape:
        tape.watch([x, y])
        z = sg.minimum(x, y)
    gx, gy = tape.gradient(z, [x, y])
    np.testing.assert_array_equal(gx.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(gy.numpy(), [0.0, 0.0])


def test_pow_gradient_wrt_exponent_is_zero_for_nonpositive_base():
    x = sg.constant([0.0, -2.0, 2.0])
    y = sg.constant([2.0, 2.0, 3.0])
    with sg.GradientTape() as tape:
        tape.watch(y)
        z = sg.pow(x, y)
    g = tape.gradient(z, y).numpy()
    np.testing.assert_allclose(g, [0.0, 0.0, 8.0 * np.log(2.0)])


def test_add_n_value_gradient_and_errors(rng):
    a, b, c = rng.standard_normal((3, 2, 3))
    np.testing.assert_allclose(sg.add_n([a, b, c]).numpy(), a + b + c)
    check_gradients(lambda x, y, z: sg.add_n([x, y, z]) * x, [a, b, c], order=2)
    with pytest.raises(InvalidArgumentError, match="inputs\\[1\\]"):
        sg.add_n([a, np.ones(3)])
    with pytest.raises(InvalidArgumentError, match="empty"):
        sg.add_n([])


# -- unary ops -------------------------------------------------------------------------

UNARY = [
    (sg.negative, np.negative, "any"),
    (sg.square, np.square, "any"),
    (sg.sqrt, np.sqrt, "positive"),
    (sg.rsqrt, lambda v: 1 / np.sqrt(v), "positive"),
    (sg.exp, np.exp, "any"),
    (sg.log, np.log, "positive"),
    (sg.log1p, np.log1p, "positive"),
    (sg.abs, np.abs, "nonzero"),
    (sg.tanh, np.tanh, "any"),
    (sg.sigmoid, lambda v: 1 / (1 + np.exp(-v)), "any"),
    (sg.sign, np.sign, "nonzero"),
]


@pytest.mark.parametrize("op, ref, kind", UNARY, ids=[u[0].__name__ for u in UNARY])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_unary_value_and_gradients(op, ref, kind, shape, rng):
    if kind == "positive":
        x = _positive(rng, shape)
    elif kind == "nonzero":
        x = _away_from_zero(rng, shape)
    else:
        x = rng.standard_normal(shape)
    np.testing.assert_allclose(op(x).numpy(), ref(x), rtol=1e-12)
    check_gradients(op, [x], order=2)


@pytest.mark.parametrize("op, ref, kind", UNARY, ids=[u[0].__name__ for u in UNARY])
def test_unary_float32(op, ref, kind, rng):
    x = _positive(rng, (4,)).astype(np.float32)
    out = op(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), ref(x.astype(np.float64)), rtol=2e-6)


def test_sign_gradient_is_zero_not_none():
    x = sg.constant([-2.0, 3.0])
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.sign(x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 0.0])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_sigmoid_does_not_overflow_and_keeps_tiny_values(dtype):
    import warnings

    x = np.array([-1e4, -15.0, 0.0, 15.0, 1e4], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = sg.sigmoid(x).numpy()
    assert out.dtype == np.dtype(dtype)
    tiny = np.finfo(dtype).tiny  # smallest normal number
    assert 0.0 <= out[0] <= tiny
    np.testing.assert_allclose(
        out[1:4],
        [1 / (1 + np.exp(15.0)), 0.5, 1 / (1 + np.exp(-15.0))],
        rtol=1e-3 if dtype == "float16" else 1e-6,
        atol=1e-7 if dtype == "float16" else 0,
    )  # float16 subnormals
    assert out[4] == 1.0


def test_float_ops_reject_integer_input():
    with pytest.raises(InvalidArgumentError, match="floating"):
        sg.exp(sg.constant([1, 2]))


def test_gradients_of_tanh_and_sigmoid_golden():
    x = sg.constant([0.0, 1.0])
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        t = sg.tanh(x)
        s = sg.sigmoid(x)
    np.testing.assert_allclose(
        tape.gradient(t, x).numpy(), [1.0, 1 - np.tanh(1.0) ** 2]
    )
    sig1 = 1 / (1 + np.exp(-1.0))
    np.testing.assert_allclose(tape.gradient(s, x).numpy(), [0.25, sig1 * (1 - sig1)])


# -- where -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sc, sx, sy", [((3, 4), (3, 4), (3, 4)), ((3, 1), (3, 4), ()), ((4,), (), (3, 4))]
)
def test_where_value_and_gradients(sc, sx, sy, rng):
    cond = rng.random(sc) > 0.5
    x = rng.standard_normal(sx)
    y = rng.standard_normal(sy)
    np.testing.assert_array_equal(sg.where(cond, x, y).numpy(), np.where(cond, x, y))
    check_gradients(lambda a, b: sg.where(cond, a, b), [x, y], order=2)


def test_where_condition_gets_no_gradient_and_coordinates_form():
    cond = sg.constant([True, False])
    x = sg.constant([1.0, 2.0])
    with sg.GradientTape() as tape:
        tape.watch(x)
        with pytest.warns(UserWarning, match="must be floating"):
            tape.watch(cond)
        z = sg.where(cond, x, 0.0)
    assert tape.gradient(z, cond) is None
    np.testing.assert_array_equal(
        sg.where([[False, True], [True, True]]).numpy(), [[0, 1], [1, 0], [1, 1]]
    )
    with pytest.raises(InvalidArgumentError, match="both"):
        sg.where(cond, x)


# -- comparisons -----------------------------------------------------------------------


def test_comparisons_are_boolean_and_not_differentiable():
    a = sg.constant([1.0, 2.0, 3.0])
    with sg.GradientTape() as tape:
        tape.watch(a)
        results = {
            "lt": a < 2.0,
            "le": a <= 2.0,
            "gt": a > 2.0,
            "ge": a >= 2.0,
            "eq": sg.equal(a, 2.0),
            "ne": sg.not_equal(a, 2.0),
        }
    expected = {
        "lt": [True, False, False],
        "le": [True, True, False],
        "gt": [False, False, True],
        "ge": [False, True, True],
        "eq": [False, True, False],
        "ne": [True, False, True],
    }
    for key, value in results.items():
        assert value.dtype == np.bool_
        np.testing.assert_array_equal(value.numpy(), expected[key])
        assert not tape._tape.tensor_tape.get(value._id)  # never recorded
    # 2.0 < a uses the reflected operator
    np.testing.assert_array_equal((a > 2.0).numpy(), [False, False, True])


# -- reductions ------------------------------------------------------------------------

REDUCTIONS = [
    (sg.reduce_sum, np.sum),
    (sg.reduce_mean, np.mean),
    (sg.reduce_max, np.max),
    (sg.reduce_min, np.min),
    (sg.reduce_prod, np.prod),
    (sg.reduce_variance, np.var),
    (sg.reduce_std, np.std),
]


@pytest.mark.parametrize("op, ref", REDUCTIONS, ids=[r[0].__name__ for r in REDUCTIONS])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), [2, 0, 1]])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_value_and_gradients(op, ref, axis, keepdims, rng):
    x = (
        rng.permutation(24).reshape(2, 3, 4) * 0.1
        + rng.standard_normal((2, 3, 4)) * 0.01
    )
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    np.testing.assert_allclose(
        op(x, axis=axis, keepdims=keepdims).numpy(),
        ref(x, axis=np_axis, keepdims=keepdims),
    )
    # (a product's gradient is first-order: the others' product is a
    # constant of the backward pass, as in the segment products)
    check_gradients(lambda t: op(t, axis=axis, keepdims=keepdims), [x],
                    order=1 if op is sg.reduce_prod else 2)


@pytest.mark.parametrize(
    "zeros", [[], [(0, 1)], [(0, 1), (1, 2)], [(0, 0), (0, 1), (0, 2)]])
def test_reduce_prod_gradient_with_zeros(zeros):
    # d prod / d x_i is the product of the others, with no division: one
    # zero in a row leaves only its own partial nonzero, two none
    x = np.array([[2.0, 3.0, 5.0], [7.0, 11.0, 13.0]])
    for r, c in zeros:
        x[r, c] = 0.0
    x = sg.constant(x)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.reduce_prod(x, axis=1)
    want = np.array([[np.prod(np.delete(row, j)) for j in range(3)]
                     for row in x.numpy()])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), want)
    check_gradients(lambda t: sg.reduce_prod(t, axis=1), [x.numpy()])


def test_dense_moments_and_logicals_refuse_other_dtypes():
    # TensorFlow: variance and std of integers, any and all of non-bools
    with pytest.raises(TypeError, match="reduce_variance"):
        sg.reduce_variance(np.array([1, 2, 3]))
    with pytest.raises(TypeError, match="reduce_std"):
        sg.reduce_std(np.array([1, 2, 3]))
    with pytest.raises(TypeError, match="reduce_any"):
        sg.reduce_any(np.array([1.0, 0.0]))
    np.testing.assert_array_equal(
        sg.reduce_all(np.array([[True, False], [True, True]]), axis=1).numpy(),
        [False, True])
    assert sg.reduce_any(np.array([[False, False]])).numpy() == np.False_


@pytest.mark.parametrize("op", [sg.reduce_max, sg.reduce_min])
def test_reduce_max_min_split_gradient_between_ties(op):
    x = sg.constant([[2.0, 2.0, 1.0], [0.0, 5.0, 5.0]])
    if op is sg.reduce_min:
        x = sg.negative(x)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = op(x, axis=1)
    np.testing.assert_allclose(
        tape.gradient(y, x).numpy(), [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]
    )


def test_reductions_keep_dtype_and_validate_axis():
    x32 = sg.constant([[1.0, 2.0]], dtype="float32")
    assert sg.reduce_sum(x32).dtype == np.float32
    assert sg.reduce_mean(x32, axis=1).dtype == np.float32
    assert sg.reduce_sum(sg.constant([1, 2], dtype="int32")).dtype == np.int32
    np.testing.assert_array_equal(sg.reduce_mean(sg.constant([1, 2])).numpy(), 1)
    with pytest.raises(InvalidArgumentError, match="axis 2 is out of range"):
        sg.reduce_sum(x32, axis=2)
    with pytest.raises(InvalidArgumentError, match="repeated"):
        sg.reduce_sum(x32, axis=[1, -1])
    with pytest.raises(InvalidArgumentError, match="empty"):
        sg.reduce_max(np.zeros((0, 2)), axis=0)


@settings(max_examples=30, deadline=None)
@given(
    hynp.arrays(
        np.float64,
        hynp.array_shapes(min_dims=1, max_dims=3, max_side=4),
        elements=st.floats(-10, 10),
    ),
    st.data(),
)
def test_reduce_sum_matches_numpy_property(x, data):
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    keepdims = data.draw(st.booleans())
    np.testing.assert_allclose(
        sg.reduce_sum(x, axis=axis, keepdims=keepdims).numpy(),
        np.sum(x, axis=axis, keepdims=keepdims),
        atol=1e-12,
    )


# -- matmul ----------------------------------------------------------------------------


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_2d_value_and_gradients(ta, tb, rng):
    a = rng.standard_normal((3, 4) if not ta else (4, 3))
    b = rng.standard_normal((4, 2) if not tb else (2, 4))
    ref = (a.T if ta else a) @ (b.T if tb else b)
    np.testing.assert_allclose(
        sg.matmul(a, b, transpose_a=ta, transpose_b=tb).numpy(), ref, rtol=1e-12
    )
    check_gradients(
        lambda x, y: sg.matmul(x, y, transpose_a=ta, transpose_b=tb), [a, b], order=2
    )


@pytest.mark.parametrize(
    "sa, sb", [((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 1, 4, 2))]
)
def test_matmul_batched_value_and_gradients(sa, sb, rng):
    a = rng.standard_normal(sa)
    b = rng.standard_normal(sb)
    np.testing.assert_allclose(sg.matmul(a, b).numpy(), np.matmul(a, b), rtol=1e-12)
    check_gradients(sg.matmul, [a, b], order=2)
    at = np.swapaxes(a, -1, -2)
    bt = np.swapaxes(b, -1, -2)
    check_gradients(
        lambda x, y: sg.matmul(x, y, transpose_a=True, transpose_b=True), [at, bt]
    )


def test_matmul_operator_and_errors():
    a = sg.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal((a @ a).numpy(), [[7.0, 10.0], [15.0, 22.0]])
    np.testing.assert_array_equal(([[1.0, 0.0]] @ a).numpy(), [[1.0, 2.0]])
    with pytest.raises(InvalidArgumentError, match="inner dimensions"):
        sg.matmul(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(InvalidArgumentError, match="rank >= 2"):
        sg.matmul(np.ones(3), np.ones((3, 1)))


# -- operators on Tensor and Variable --------------------------------------------------


def test_tensor_and_variable_operators_match_numpy():
    a_np = np.array([[1.0, -2.0], [3.0, 4.0]])
    for a in (sg.constant(a_np), sg.Variable(a_np)):
        np.testing.assert_array_equal((a + 1).numpy(), a_np + 1)
        np.testing.assert_array_equal((1 + a).numpy(), 1 + a_np)
        np.testing.assert_array_equal((a - 1).numpy(), a_np - 1)
        np.testing.assert_array_equal((1 - a).numpy(), 1 - a_np)
        np.testing.assert_array_equal((a * 3).numpy(), a_np * 3)
        np.testing.assert_array_equal((a / 2).numpy(), a_np / 2)
        np.testing.assert_array_equal((2 / a).numpy(), 2 / a_np)
        np.testing.assert_array_equal((a**2).numpy(), a_np**2)
        np.testing.assert_array_equal((2**a).numpy(), 2**a_np)
        np.testing.assert_array_equal((-a).numpy(), -a_np)
        np.testing.assert_array_equal(abs(a).numpy(), np.abs(a_np))
        np.testing.assert_array_equal((a @ a).numpy(), a_np @ a_np)
        np.testing.assert_array_equal(a[1].numpy(), a_np[1])
        np.testing.assert_array_equal((a > 0).numpy(), a_np > 0)
    # an ndarray on the left defers to the Tensor's reflected operator
    out = np.ones(2) + sg.constant([1.0, 2.0])
    assert isinstance(out, sg.Tensor)


def test_operators_record_gradients():
    x = sg.constant([1.0, 2.0])
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.reduce_sum((x * x + 1 - x / 2) ** 2)
    # d/dx (x^2 + 1 - x/2)^2 = 2 (x^2 + 1 - x/2)(2x - 1/2)
    xv = np.array([1.0, 2.0])
    np.testing.assert_allclose(
        tape.gradient(y, x).numpy(), 2 * (xv**2 + 1 - xv / 2) * (2 * xv - 0.5)
    )


@settings(max_examples=25, deadline=None)
@given(
    hynp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=3, max_side=3
    ),
    st.sampled_from(["add", "subtract", "multiply", "maximum"]),
    st.integers(0, 2**16),
)
def test_broadcast_gradients_sum_back_to_input_shapes(shapes, op_name, seed):
    rng = np.random.default_rng(seed)
    sx, sy = shapes.input_shapes
    x = rng.standard_normal(sx)
    y = rng.standard_normal(sy) + 0.05  # ties in maximum are measure-zero
    op = getattr(sg, op_name)
    xt, yt = sg.constant(x), sg.constant(y)
    with sg.GradientTape() as tape:
        tape.watch([xt, yt])
        z = op(xt, yt)
    gx, gy = tape.gradient(z, [xt, yt])
    assert gx.shape == sx and gy.shape == sy
    ones = np.ones(shapes.result_shape)
    expected = {
        "add": (ones, ones),
        "subtract": (ones, -ones),
        "multiply": (
            np.broadcast_to(y, shapes.result_shape),
            np.broadcast_to(x, shapes.result_shape),
        ),
        "maximum": (
            (np.broadcast_to(x, shapes.result_shape) >= y) * 1.0,
            (np.broadcast_to(x, shapes.result_shape) < y) * 1.0,
        ),
    }[op_name]

    def summed(full, shape):
        lead = full.ndim - len(shape)
        full = full.sum(axis=tuple(range(lead)))
        axes = tuple(i for i, n in enumerate(shape) if n == 1)
        return full.sum(axis=axes, keepdims=True).reshape(shape)

    np.testing.assert_allclose(gx.numpy(), summed(expected[0] * ones, sx), atol=1e-12)
    np.testing.assert_allclose(gy.numpy(), summed(expected[1] * ones, sy), atol=1e-12)


# -- results sized by broadcasting are checked before they are allocated -------

HUGE = 2**40     # a broadcast view of HUGE elements costs nothing; a result, TiB


def _view(n=HUGE, dtype=np.float32):
    return sg.broadcast_to(dtype(1), (n,))


BROADCASTING = [
    ("add", lambda: sg.add(_view(), 1.0), "(1099511627776,) and dtype float32"),
    ("add", lambda: sg.add(np.ones((2**20, 1), np.float32),
                           np.ones((1, 2**20), np.float32)),
     "(1048576, 1048576) and dtype float32"),
    ("subtract", lambda: sg.subtract(1.0, _view()), "(1099511627776,)"),
    ("multiply", lambda: _view() * _view(), "(1099511627776,)"),
    ("maximum", lambda: sg.maximum(_view(), 0.0), "(1099511627776,)"),
    ("less", lambda: sg.less(_view(), 0.5), "(1099511627776,) and dtype bool"),
    ("divide", lambda: sg.divide(_view(dtype=np.int32), 2),
     "(1099511627776,) and dtype float64 (8796093022208 bytes); with the call's "
     "other buffers, 26388279066624 bytes"),
    ("pow", lambda: sg.pow(_view(), 2.0),
     "(1099511627776,) and dtype float32 (4398046511104 bytes); with the call's "
     "other buffers, 8796093022208 bytes"),
]


@pytest.mark.parametrize("op,call,fragment", BROADCASTING,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(BROADCASTING)])
def test_broadcast_results_are_checked_before_allocating(op, call, fragment):
    with pytest.raises(InvalidArgumentError, match=re.escape(
            f"{op}: x and y asks for a result of shape {fragment}")):
        call()


def test_where_add_n_and_matmul_check_their_results():
    cond = sg.broadcast_to(True, (HUGE,))
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "where: condition and x and y asks for a result of shape "
            "(1099511627776,) and dtype float64")):
        sg.where(cond, 1.0, 2.0)
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "add_n: inputs asks for a result of shape (1099511627776,)")):
        sg.add_n([_view(), _view()])
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "matmul: a and b asks for a result of shape (1048576, 1048576) and "
            "dtype float32")):
        sg.matmul(np.ones((2**20, 1), np.float32), np.ones((1, 2**20), np.float32))


def test_small_broadcasts_still_compute():
    np.testing.assert_array_equal(
        sg.add(sg.broadcast_to(np.float32(1), (3,)), [1.0, 2.0, 3.0]).numpy(),
        [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(
        sg.divide(sg.broadcast_to(np.int32(3), (2, 2)), 2).numpy(), np.full((2, 2),
                                                                           1.5))
    np.testing.assert_array_equal(sg.matmul(np.ones((2, 1)), np.ones((1, 3))).numpy(),
                                  np.ones((2, 3)))


@pytest.mark.parametrize("op", [sg.exp, sg.negative, sg.sigmoid, sg.abs, sg.sqrt,
                                sg.square, sg.tanh])
def test_unary_ops_of_a_broadcast_view_check_their_result(op):
    with pytest.raises(InvalidArgumentError, match=re.escape(
            f"{op.__name__}: x asks for a result of shape (1099511627776,) and dtype "
            "float32")):
        op(_view())
    np.testing.assert_array_equal(op(sg.broadcast_to(np.float32(1), (3,))).numpy(),
                                  op(np.ones(3, np.float32)).numpy())


# ---------------------------------------------------------------------------
# Large binary ops run in bands of rows on several threads (NumPy's loops are
# single-threaded): the bits of one thread for every count and broadcast.


@pytest.mark.parametrize("shapes", [
    ((1 << 21, 2), (1 << 21, 2)),     # same shape
    ((1 << 20, 4), (1 << 20, 1)),     # a column broadcast along the rows
    ((1 << 20, 4), (4,)),             # a row broadcast over every row
    ((1, 1 << 22), (3, 1)),           # the first operand broadcast along axis 0
    ((), (1 << 22,)),                 # a scalar
])
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum"])
def test_large_binary_ops_give_one_threads_bits(shapes, op):
    from sparsegrad.ops.math_ops import broadcasting

    rng = np.random.default_rng(5)
    x, y = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    want = getattr(np, op)(x, y)
    assert want.nbytes >= broadcasting.PARALLEL_BYTES
    before = sg.get_num_threads()
    for n in (1, 2, 3, 7):
        sg.set_num_threads(n)
        try:
            got = getattr(sg, op)(sg.constant(x), sg.constant(y)).numpy()
        finally:
            sg.set_num_threads(before)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_large_binary_op_bands_keep_the_callers_error_state():
    # every band runs under the calling thread's np.errstate: "raise" raises
    # (from whichever band hit it), "ignore" stays silent
    x = np.ones((1 << 21, 2), np.float32)
    y = np.ones((1 << 21, 2), np.float32)
    x[-1, -1], y[-1, -1] = 3e38, 10.0     # overflows, in the last band
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        sg.multiply(sg.constant(x), sg.constant(y))
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        z = sg.multiply(sg.constant(x), sg.constant(y)).numpy()
    assert np.isinf(z[-1, -1]) and (z.reshape(-1)[:-1] == 1).all()
