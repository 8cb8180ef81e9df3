"""Generate tests/ops/data/half_reduce_golden.npz from TensorFlow (by hand).

    /work/peers/tfenv/bin/python tests/ops/generate_half_reduce_fixtures.py

TensorFlow 2.21's results for float16 and bfloat16 inputs of
``global_norm``, ``clip_by_global_norm``, ``clip_by_norm`` and the segment
reductions, read by tests/ops/test_half_clip.py and
tests/ops/test_half_segment.py (CI never installs TensorFlow).

The cases are chosen where TensorFlow's half arithmetic and sparsegrad's wide
accumulation must agree bit for bit: integer-valued inputs whose sums of
squares (and segment sums) are exact in the half type, so TensorFlow's half
sum is the exact sum and its norm the exact norm rounded once; and
``clip_by_global_norm`` with a given ``use_norm`` on random data, where only
TensorFlow's scale formula and its ``t * cast(scale, t.dtype)`` are at work.

Every member is a float32 array (half values are exact in float32) named
``<dtype>/<case>/<what>``: ``in<k>`` the inputs, ``out<k>`` the outputs;
integer ids and scalars are fixed below and repeated in the tests.
"""

import os

import numpy as np
import tensorflow as tf

OUT = os.path.join(os.path.dirname(__file__), "data", "half_reduce_golden.npz")

A = [[1.0, 2.0], [3.0, -4.0]]
B = [2.0, 0.0, -1.0]
ROWS = [[1.0, 2.0], [3.0, 4.0], [5.0, -6.0], [0.0, 2.0], [-7.0, 1.0]]
SORTED_IDS = [0, 0, 1, 3, 3]
UNSORTED_IDS = [2, 0, 2, -1, 2]
NUM_SEGMENTS = 4
SORTED_OPS = ("segment_sum", "segment_mean", "segment_max", "segment_min",
              "segment_prod")
UNSORTED_OPS = ("unsorted_segment_sum", "unsorted_segment_mean",
                "unsorted_segment_max", "unsorted_segment_min",
                "unsorted_segment_prod", "unsorted_segment_sqrt_n")


def f32(t):
    return np.asarray(tf.cast(t, tf.float32).numpy(), np.float32)


def main():
    rng = np.random.default_rng(31)
    members = {}
    for dt in (tf.float16, tf.bfloat16):
        def put(case, what, value, dt=dt):
            members[f"{dt.name}/{case}/{what}"] = f32(value)

        a, b = tf.constant(A, dt), tf.constant(B, dt)
        put("global_norm", "out0", tf.linalg.global_norm([a, b]))
        (ca, cb), norm = tf.clip_by_global_norm([a, b], 3.0)
        put("clip_by_global_norm", "out0", ca)
        put("clip_by_global_norm", "out1", cb)
        put("clip_by_global_norm", "out2", norm)
        put("clip_by_norm", "out0", tf.clip_by_norm(a, 2.0))
        put("clip_by_norm_axes", "out0", tf.clip_by_norm(a, 2.0, axes=[1]))
        slices = tf.IndexedSlices(tf.constant(ROWS[:3], dt), tf.constant([4, 0, 2]),
                                  tf.constant([5, 2]))
        put("clip_by_norm_slices", "out0", tf.clip_by_norm(slices, 3.0).values)

        x = tf.constant(rng.standard_normal((3, 5)) * 3, dt)
        y = tf.constant(rng.standard_normal(7), dt)
        use = tf.constant(7.3, dt)
        put("use_norm", "in0", x)
        put("use_norm", "in1", y)
        (cx, cy), _ = tf.clip_by_global_norm([x, y], 2.0, use_norm=use)
        put("use_norm", "out0", cx)
        put("use_norm", "out1", cy)
        # mixed dtypes with a float32 use_norm: the scale cast to each
        z = tf.constant(rng.standard_normal(4), tf.float32)
        put("use_norm_mixed", "in1", z)
        (mx, mz), _ = tf.clip_by_global_norm([x, z], 2.0,
                                             use_norm=tf.constant(7.3, tf.float32))
        put("use_norm_mixed", "out0", mx)
        put("use_norm_mixed", "out1", mz)

        rows = tf.constant(ROWS, dt)
        for op in SORTED_OPS:
            put(op, "out0", getattr(tf.math, op)(rows, SORTED_IDS))
        for op in UNSORTED_OPS:
            put(op, "out0", getattr(tf.math, op)(rows, UNSORTED_IDS, NUM_SEGMENTS))
    np.savez_compressed(OUT, **members)


if __name__ == "__main__":
    main()
