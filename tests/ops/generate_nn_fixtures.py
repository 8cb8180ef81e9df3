"""Generate ``data/nn_golden.npz``: TensorFlow's values and gradients of the nn ops.

Run once, by hand, in an environment that has TensorFlow (CI never does)::

    python tests/ops/generate_nn_fixtures.py

The tests load the ``.npz`` and never import TensorFlow.  Every case stores its
inputs, the forward result and the gradient of ``sum(output * w)`` for a fixed
random weight ``w`` (so the upstream gradient is not just ones).
"""

import os

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))


def _grads(fn, inputs, w):
    variables = [tf.Variable(x) for x in inputs]
    with tf.GradientTape() as tape:
        out = fn(*variables)
        loss = tf.reduce_sum(out * w)
    grads = tape.gradient(loss, variables)
    return out.numpy(), [g.numpy() for g in grads]


def main():
    rng = np.random.default_rng(2021)
    cases = {}

    def add(name, fn, inputs, out_shape, dtype):
        inputs = [np.asarray(x, dtype=dtype) for x in inputs]
        w = rng.standard_normal(out_shape).astype(dtype)
        out, grads = _grads(fn, inputs, w)
        cases[f"{name}/w"] = w
        cases[f"{name}/out"] = out
        for k, (x, g) in enumerate(zip(inputs, grads)):
            cases[f"{name}/x{k}"] = x
            cases[f"{name}/g{k}"] = g

    for dtype in ("float32", "float64"):
        x = rng.standard_normal((4, 5)) * 3
        x[0, :3] = [0.0, 80.0, -80.0]
        add(f"relu_{dtype}", tf.nn.relu, [x], (4, 5), dtype)
        add(f"softplus_{dtype}", tf.nn.softplus, [x], (4, 5), dtype)
        add(f"softmax_{dtype}", tf.nn.softmax, [x], (4, 5), dtype)
        add(
            f"softmax_axis0_{dtype}",
            lambda t: tf.nn.softmax(t, axis=0),
            [x],
            (4, 5),
            dtype,
        )
        add(f"log_softmax_{dtype}", tf.nn.log_softmax, [x], (4, 5), dtype)
        add(
            f"log_softmax_axis0_{dtype}",
            lambda t: tf.nn.log_softmax(t, axis=0),
            [x],
            (4, 5),
            dtype,
        )
        add(f"l2_loss_{dtype}", tf.nn.l2_loss, [x], (), dtype)

        logits = rng.standard_normal((6, 4)) * 4
        logits[0] = [1000.0, -1000.0, 0.0, 3.0]
        logits[1] = [-500.0, -400.0, -1000.0, -450.0]
        z = rng.uniform(size=(6, 4))
        z[0] = [0.0, 1.0, 0.5, 1.0]
        add(
            f"sigmoid_ce_{dtype}",
            lambda a, b: tf.nn.sigmoid_cross_entropy_with_logits(labels=a, logits=b),
            [z, logits],
            (6, 4),
            dtype,
        )

        p = rng.uniform(size=(6, 4))
        p /= p.sum(axis=1, keepdims=True)
        p[0] = [0.0, 1.0, 0.0, 0.0]
        add(
            f"softmax_ce_{dtype}",
            lambda a, b: tf.nn.softmax_cross_entropy_with_logits(labels=a, logits=b),
            [p, logits],
            (6,),
            dtype,
        )
        add(
            f"softmax_ce_axis0_{dtype}",
            lambda a, b: tf.nn.softmax_cross_entropy_with_logits(
                labels=a, logits=b, axis=0
            ),
            [p.T, logits.T],
            (6,),
            dtype,
        )
        logits3 = rng.standard_normal((2, 3, 4)) * 2
        p3 = rng.uniform(size=(2, 3, 4))
        add(
            f"softmax_ce_rank3_{dtype}",
            lambda a, b: tf.nn.softmax_cross_entropy_with_logits(labels=a, logits=b),
            [p3, logits3],
            (2, 3),
            dtype,
        )

        labels = np.array([1, 0, 3, 2, 2, 0])
        lv = tf.Variable(logits.astype(dtype))
        w = rng.standard_normal(6).astype(dtype)
        with tf.GradientTape() as tape:
            out = tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=lv
            )
            loss = tf.reduce_sum(out * w)
        name = f"sparse_softmax_ce_{dtype}"
        cases[f"{name}/w"] = w
        cases[f"{name}/labels"] = labels
        cases[f"{name}/x0"] = logits.astype(dtype)
        cases[f"{name}/out"] = out.numpy()
        cases[f"{name}/g0"] = tape.gradient(loss, lv).numpy()

    np.savez_compressed(os.path.join(HERE, "data", "nn_golden.npz"), **cases)
    print(f"wrote {len(cases)} arrays, TensorFlow {tf.__version__}")


if __name__ == "__main__":
    main()
