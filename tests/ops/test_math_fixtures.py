"""sparsegrad against TensorFlow 2.21 golden values (tests/ops/data/math_golden.npz,
made by generate_math_fixtures.py): forward values, gradients for a fixed
upstream, and the gradient of the squared gradient norm (second order)."""

import os

import numpy as np
import pytest

import sparsegrad as sg

DATA = np.load(os.path.join(os.path.dirname(__file__), "data", "math_golden.npz"))

CASES = {
    "add_broadcast": lambda x, y: x + y,
    "sub_scalar": lambda x, y: x - y,
    "mul_broadcast": lambda x, y: x * y,
    "div_broadcast": lambda x, y: x / y,
    "pow_edges": sg.pow,
    "maximum_ties": sg.maximum,
    "minimum_ties": sg.minimum,
    "maximum_broadcast": sg.maximum,
    "negative": sg.negative,
    "square": sg.square,
    "sqrt": sg.sqrt,
    "rsqrt": sg.rsqrt,
    "exp": sg.exp,
    "log": sg.log,
    "log1p": sg.log1p,
    "abs_at_zero": sg.abs,
    "sign": sg.sign,
    "tanh": sg.tanh,
    "sigmoid": sg.sigmoid,
    "where_broadcast": lambda x, y: sg.where(np.array([[True], [False], [True]]), x, y),
    "reduce_sum_axis1": lambda x: sg.reduce_sum(x, axis=1),
    "reduce_sum_keepdims": lambda x: sg.reduce_sum(x, axis=[0, 2], keepdims=True),
    "reduce_mean_all": sg.reduce_mean,
    "reduce_mean_neg_axis": lambda x: sg.reduce_mean(x, axis=-1),
    "reduce_max_ties": lambda x: sg.reduce_max(x, axis=1),
    "reduce_min_ties_keepdims": lambda x: sg.reduce_min(x, axis=0, keepdims=True),
    "matmul": sg.matmul,
    "matmul_transpose_a": lambda a, b: sg.matmul(a, b, transpose_a=True),
    "matmul_transpose_b": lambda a, b: sg.matmul(a, b, transpose_b=True),
    "matmul_batched_broadcast": sg.matmul,
    "reshape": lambda x: sg.reshape(x, (4, -1)) * sg.reshape(x, (4, -1)),
    "transpose": lambda x: sg.transpose(x, (2, 0, 1)),
    "expand_dims": lambda x: sg.expand_dims(x, -1),
    "squeeze": lambda x: sg.squeeze(x, axis=0),
    "concat_axis1": lambda a, b: sg.concat([a, b], axis=1),
    "stack_axis1": lambda a, b: sg.stack([a, b], axis=1),
    "slice_step": lambda x: x[1:, ::2],
    "slice_int_ellipsis": lambda x: x[..., 1],
    "slice_reverse_newaxis": lambda x: x[::-1, None, 1:3],
    "cast_f64": lambda x: sg.cast(x, "float64") * 2.0,
    "stop_gradient": lambda x: sg.stop_gradient(x * x) * x,
    "chain": lambda x, w: sg.reduce_mean(
        sg.sigmoid(sg.tanh(x @ w) * 2.0 + 0.5) ** 2, axis=0
    ),
}


def _inputs(name):
    i = 0
    out = []
    while f"{name}/in{i}" in DATA:
        out.append(DATA[f"{name}/in{i}"])
        i += 1
    return out


def test_every_fixture_case_is_replayed():
    names = {key.split("/")[0] for key in DATA.files}
    assert names == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    fn = CASES[name]
    xs = [sg.constant(x) for x in _inputs(name)]
    upstream = sg.constant(DATA[f"{name}/upstream"])
    with sg.GradientTape() as outer:
        outer.watch(xs)
        with sg.GradientTape() as inner:
            inner.watch(xs)
            out = fn(*xs)
        grads = inner.gradient(out, xs, output_gradients=[upstream])
        squares = [
            sg.reduce_sum(sg.cast(g, "float64") ** 2) for g in grads if g is not None
        ]
        total = sg.add_n(squares) if squares else None
    expected_out = DATA[f"{name}/out"]
    assert out.dtype == expected_out.dtype
    np.testing.assert_allclose(out.numpy(), expected_out, rtol=2e-6, atol=1e-7)
    for i, g in enumerate(grads):
        if bool(DATA[f"{name}/grad{i}_is_none"]):
            assert g is None, f"input {i}: TensorFlow gives None"
            continue
        assert g is not None, f"input {i}: TensorFlow gives a gradient"
        assert g.dtype == DATA[f"{name}/grad{i}"].dtype
        np.testing.assert_allclose(
            np.asarray(g),
            DATA[f"{name}/grad{i}"],
            rtol=2e-5,
            atol=1e-6,
            err_msg=f"gradient of input {i}",
        )
    if f"{name}/second0" in DATA:
        second = outer.gradient(total, xs)
        for i, g in enumerate(second):
            expected = DATA[f"{name}/second{i}"]
            if expected.size == 0 and g is None:
                continue
            np.testing.assert_allclose(
                np.asarray(g),
                expected,
                rtol=5e-5,
                atol=1e-5,
                err_msg=f"second-order gradient of input {i}",
            )
