"""Generate tests/ops/data/math_golden.npz from TensorFlow (run once, by hand).

    /tmp/tfenv/bin/python tests/ops/generate_math_fixtures.py

For every case: the inputs, TensorFlow's forward value, and the gradients of
``sum(upstream * f(inputs))`` under tf.GradientTape for a fixed random
upstream (and, for the ``*_second`` cases, the gradient of that gradient).
tests/ops/test_math_fixtures.py replays the same cases with sparsegrad; the
case names are the contract between the two files.  CI never installs TF.
"""

import os

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(2026)
f32 = np.float32


def r(*shape):
    return rng.standard_normal(shape).astype(f32)


def pos(*shape):
    return rng.uniform(0.5, 2.0, shape).astype(f32)


CASES = {
    # name: (function of tf tensors, inputs)
    "add_broadcast": (lambda x, y: x + y, [r(3, 1), r(1, 4)]),
    "sub_scalar": (lambda x, y: x - y, [r(2, 3), r()]),
    "mul_broadcast": (lambda x, y: x * y, [r(2, 3, 4), r(4)]),
    "div_broadcast": (lambda x, y: x / y, [r(2, 3), pos(2, 1)]),
    "pow_edges": (
        tf.pow,
        [
            np.array([0.0, 2.0, -2.0, 0.5, 3.0], f32),
            np.array([2.0, 3.0, 2.0, 1.5, 0.0], f32),
        ],
    ),
    "maximum_ties": (
        tf.maximum,
        [np.array([1.0, 2.0, 3.0, -1.0], f32), np.array([1.0, 3.0, 2.0, -1.0], f32)],
    ),
    "minimum_ties": (
        tf.minimum,
        [np.array([1.0, 2.0, 3.0, -1.0], f32), np.array([1.0, 3.0, 2.0, -1.0], f32)],
    ),
    "maximum_broadcast": (tf.maximum, [r(3, 4), r(4)]),
    "negative": (tf.negative, [r(3, 2)]),
    "square": (tf.square, [r(3, 2)]),
    "sqrt": (tf.sqrt, [pos(3, 2)]),
    "rsqrt": (tf.math.rsqrt, [pos(3, 2)]),
    "exp": (tf.exp, [r(3, 2)]),
    "log": (tf.math.log, [pos(3, 2)]),
    "log1p": (tf.math.log1p, [pos(3, 2)]),
    "abs_at_zero": (tf.abs, [np.array([-1.5, 0.0, 2.0], f32)]),
    "sign": (tf.sign, [np.array([-1.5, 0.0, 2.0], f32)]),
    "tanh": (tf.tanh, [r(3, 2)]),
    "sigmoid": (tf.sigmoid, [np.array([-20.0, -1.0, 0.0, 1.0, 20.0], f32)]),
    "where_broadcast": (
        lambda x, y: tf.where(np.array([[True], [False], [True]]), x, y),
        [r(3, 4), r(4)],
    ),
    "reduce_sum_axis1": (lambda x: tf.reduce_sum(x, axis=1), [r(2, 3, 4)]),
    "reduce_sum_keepdims": (
        lambda x: tf.reduce_sum(x, axis=[0, 2], keepdims=True),
        [r(2, 3, 4)],
    ),
    "reduce_mean_all": (tf.reduce_mean, [r(2, 3, 4)]),
    "reduce_mean_neg_axis": (lambda x: tf.reduce_mean(x, axis=-1), [r(2, 3, 4)]),
    "reduce_max_ties": (
        lambda x: tf.reduce_max(x, axis=1),
        [np.array([[2.0, 2.0, 1.0], [0.0, 5.0, 5.0], [1.0, 1.0, 1.0]], f32)],
    ),
    "reduce_min_ties_keepdims": (
        lambda x: tf.reduce_min(x, axis=0, keepdims=True),
        [np.array([[2.0, 2.0, 1.0], [2.0, 5.0, 1.0]], f32)],
    ),
    "matmul": (tf.matmul, [r(3, 4), r(4, 2)]),
    "matmul_transpose_a": (
        lambda a, b: tf.matmul(a, b, transpose_a=True),
        [r(4, 3), r(4, 2)],
    ),
    "matmul_transpose_b": (
        lambda a, b: tf.matmul(a, b, transpose_b=True),
        [r(3, 4), r(2, 4)],
    ),
    "matmul_batched_broadcast": (tf.matmul, [r(2, 3, 4), r(4, 5)]),
    "reshape": (lambda x: tf.reshape(x, (4, -1)) * tf.reshape(x, (4, -1)), [r(2, 6)]),
    "transpose": (lambda x: tf.transpose(x, (2, 0, 1)), [r(2, 3, 4)]),
    "expand_dims": (lambda x: tf.expand_dims(x, -1), [r(2, 3)]),
    "squeeze": (lambda x: tf.squeeze(x, axis=0), [r(1, 3, 1)]),
    "concat_axis1": (lambda a, b: tf.concat([a, b], axis=1), [r(2, 3), r(2, 1)]),
    "stack_axis1": (lambda a, b: tf.stack([a, b], axis=1), [r(2, 3), r(2, 3)]),
    "slice_step": (lambda x: x[1:, ::2], [r(3, 5)]),
    "slice_int_ellipsis": (lambda x: x[..., 1], [r(2, 3, 4)]),
    "slice_reverse_newaxis": (lambda x: x[::-1, None, 1:3], [r(3, 4)]),
    "cast_f64": (lambda x: tf.cast(x, tf.float64) * 2.0, [r(3)]),
    "stop_gradient": (lambda x: tf.stop_gradient(x * x) * x, [r(3)]),
    "chain": (
        lambda x, w: tf.reduce_mean(
            tf.sigmoid(tf.tanh(x @ w) * 2.0 + 0.5) ** 2, axis=0
        ),
        [r(4, 3), r(3, 2)],
    ),
}

SECOND_ORDER = [
    "mul_broadcast",
    "div_broadcast",
    "pow_edges",
    "sqrt",
    "rsqrt",
    "exp",
    "log",
    "log1p",
    "tanh",
    "sigmoid",
    "reduce_max_ties",
    "matmul",
    "slice_step",
    "chain",
]


def run_case(fn, inputs, upstream):
    xs = [tf.constant(x) for x in inputs]
    with tf.GradientTape() as outer:
        outer.watch(xs)
        with tf.GradientTape() as inner:
            inner.watch(xs)
            out = fn(*xs)
        grads = inner.gradient(out, xs, output_gradients=tf.constant(upstream))
        total = tf.add_n(
            [tf.reduce_sum(tf.cast(g, tf.float64) ** 2) for g in grads if g is not None]
        )
    second = outer.gradient(total, xs)
    return out, grads, second


def main():
    data = {}
    for name, (fn, inputs) in CASES.items():
        out_shape = fn(*[tf.constant(x) for x in inputs]).shape
        upstream = rng.standard_normal(out_shape).astype(
            fn(*[tf.constant(x) for x in inputs]).dtype.as_numpy_dtype
        )
        out, grads, second = run_case(fn, inputs, upstream)
        for i, x in enumerate(inputs):
            data[f"{name}/in{i}"] = x
        data[f"{name}/upstream"] = upstream
        data[f"{name}/out"] = out.numpy()
        for i, g in enumerate(grads):
            data[f"{name}/grad{i}"] = (
                np.zeros(0) if g is None else tf.convert_to_tensor(g).numpy()
            )
            data[f"{name}/grad{i}_is_none"] = np.array(g is None)
        if name in SECOND_ORDER:
            for i, g in enumerate(second):
                data[f"{name}/second{i}"] = (
                    np.zeros(0) if g is None else tf.convert_to_tensor(g).numpy()
                )
    path = os.path.join(os.path.dirname(__file__), "data", "math_golden.npz")
    np.savez_compressed(path, **data)
    print(f"wrote {len(CASES)} cases to {path} (TensorFlow {tf.__version__})")


if __name__ == "__main__":
    main()
