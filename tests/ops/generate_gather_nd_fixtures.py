"""Generate tests/ops/data/gather_nd_golden.npz from TensorFlow (run once, with
TensorFlow installed: ``python tests/ops/generate_gather_nd_fixtures.py``).

Random params and index tuples of every depth, with and without batch
dimensions; for each case the forward result and the gradient w.r.t. params
of ``sum(out * w)`` (densified), from ``tf.gather_nd`` and
``tf.GradientTape``.
"""

import pathlib

import numpy as np
import tensorflow as tf

OUT = pathlib.Path(__file__).parent / "data" / "gather_nd_golden.npz"


def main():
    rng = np.random.default_rng(2026)
    arrays = {}
    cases = [
        # (params shape, indices leading shape, depth, batch_dims, index dtype)
        ((6, 4), (5,), 1, 0, np.int32),
        ((6, 4), (5,), 2, 0, np.int64),
        ((6, 4, 3), (2, 3), 1, 0, np.int64),
        ((6, 4, 3), (7,), 2, 0, np.int32),
        ((6, 4, 3), (4,), 3, 0, np.int64),
        # depth 0 is left out: TensorFlow 2.21 fails in its gradient (ScatterNd
        # "Indices and updates specified for empty output shape")
        ((3, 5, 4), (3, 2), 1, 1, np.int64),
        ((3, 5, 4), (3, 6), 2, 1, np.int32),
        ((2, 3, 5, 4), (2, 3, 4), 1, 2, np.int64),
    ]
    for k, (shape, lead, depth, b, dtype) in enumerate(cases):
        params = rng.standard_normal(shape)
        dims = shape[b : b + depth]
        idx = np.stack([rng.integers(0, d, size=lead) for d in dims], axis=-1) \
            if depth else np.zeros(lead + (0,), dtype=np.int64)
        idx = idx.astype(dtype)
        v = tf.Variable(params)
        with tf.GradientTape() as tape:
            out = tf.gather_nd(v, idx, batch_dims=b)
            w = rng.standard_normal(out.shape)
            loss = tf.reduce_sum(out * w)
        grad = tf.convert_to_tensor(tape.gradient(loss, v))
        arrays[f"case{k}_params"] = params
        arrays[f"case{k}_indices"] = idx
        arrays[f"case{k}_batch_dims"] = np.array(b)
        arrays[f"case{k}_weights"] = w
        arrays[f"case{k}_out"] = out.numpy()
        arrays[f"case{k}_grad"] = grad.numpy()
    arrays["n_cases"] = np.array(len(cases))
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({len(cases)} cases, TensorFlow {tf.__version__})")


if __name__ == "__main__":
    main()
