"""Generate tests/ops/data/segment_golden.npz from TensorFlow (run once, by hand).

    /tmp/tfenv/bin/python tests/ops/generate_segment_fixtures.py

Cases for ``tf.math.segment_{sum,mean,max,min,prod}`` and
``tf.math.unsorted_segment_{sum,mean,max,min,prod,sqrt_n}``: the golden cases
of reference/ragged.md sections 2 and 3 and random cases (float32, float64,
int32; sorted ids with gaps, unsorted ids with negative ids, multi-dimensional
data and multi-dimensional unsorted ids).  For case ``k`` the file stores
``k/data``, ``k/ids``, ``k/out`` (TensorFlow's forward value) and, for
floating data, ``k/up`` (the upstream gradient) and ``k/grad`` (TensorFlow's
gradient w.r.t. data under ``tf.GradientTape``).  ``__meta__`` (JSON) gives
per case the function name and ``num_segments`` (None for the sorted ops).
tests/ops/test_segment_ops.py replays every case; CI never installs
TensorFlow.  Random data has no ties and no NaN (the NaN behaviour of
TensorFlow 2.21 is order-dependent; sparsegrad propagates NaN, tested
separately).
"""

import json
import os

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(2031)
SORTED = ["segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod"]
UNSORTED = [
    "unsorted_segment_sum", "unsorted_segment_mean", "unsorted_segment_max",
    "unsorted_segment_min", "unsorted_segment_prod", "unsorted_segment_sqrt_n",
]
arrays = {}
meta = {}


def add(name, fn, data, ids, num_segments=None):
    data = np.asarray(data)
    ids = np.asarray(ids)
    x = tf.constant(data)
    floating = data.dtype.kind == "f"
    args = (ids,) if num_segments is None else (ids, num_segments)
    f = getattr(tf.math, fn)
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = f(x, *args)
    arrays[f"{name}/data"] = data
    arrays[f"{name}/ids"] = ids
    arrays[f"{name}/out"] = out.numpy()
    if floating:
        up = rng.standard_normal(out.shape).astype(data.dtype)
        grad = tape.gradient(out, x, output_gradients=tf.constant(up))
        arrays[f"{name}/up"] = up
        arrays[f"{name}/grad"] = np.asarray(tf.convert_to_tensor(grad))
    meta[name] = {"fn": fn, "num_segments": num_segments}


def distinct(shape, dtype):
    """Random values without ties (a permutation, scaled), a few zeros kept
    out so that max/min have one winner."""
    n = int(np.prod(shape))
    values = (rng.permutation(n) - n // 2).astype(np.float64) / 7.0 + 0.01
    return values.reshape(shape).astype(dtype)


# -- golden cases of the reference ----------------------------------------------------
x44 = np.arange(1, 17, dtype=np.float32).reshape(4, 4)
add("golden_sum_4x4", "segment_sum", x44, np.array([0, 0, 0, 1], np.int32))
c = np.array([[1, 2, 3, 4], [4, 3, 2, 1], [5, 6, 7, 8]])
for fn in SORTED:
    for ids in ([0, 0, 1], [0, 0, 2], [2, 2, 3]):
        tag = "".join(map(str, ids))
        add(f"doc_{fn}_{tag}_f32", fn, c.astype(np.float32), np.array(ids, np.int32))
        add(f"doc_{fn}_{tag}_i32", fn, c.astype(np.int32), np.array(ids, np.int64))
for fn in UNSORTED:
    add(f"doc_{fn}_f32", fn, c.astype(np.float32), np.array([0, 1, 0], np.int32), 2)
    if fn != "unsorted_segment_sqrt_n":
        add(f"doc_{fn}_i32", fn, c.astype(np.int32), np.array([0, 1, 0], np.int32), 2)
add("int_mean", "segment_mean", np.array([[1, 2, 3, 4], [4, 3, 2, 1]], np.int32),
    np.array([0, 0], np.int32))
add("max_ties", "segment_max", np.array([1, 3, 3, 2], np.float32),
    np.array([0, 0, 0, 1], np.int32))
add("min_ties", "segment_min", np.array([1, 1, 3, 2], np.float64),
    np.array([0, 0, 0, 1], np.int32))
add("prod_zeros", "segment_prod", np.array([0, 3, 2, 0, 0], np.float32),
    np.array([0, 0, 0, 1, 1], np.int32))
prod_values = np.array([0, 0, 1, 0, 2, 2, 3, 3, 3], np.float64)
add("prod_grad", "unsorted_segment_prod", prod_values,
    np.array([0, 0, 0, 1, 1, 1, 2, 2, 2], np.int32), 3)
add("prod_grad_negative", "unsorted_segment_prod", prod_values,
    np.array([-1, 0, 0, -1, 1, 1, -1, 2, 2], np.int32), 3)
for fn in ("unsorted_segment_sqrt_n", "unsorted_segment_mean"):
    add(f"{fn}_negative", fn, np.array([1, 3, 3, 2], np.float32),
        np.array([0, 0, -1, 1], np.int32), 3)
for fn in UNSORTED:
    if fn == "unsorted_segment_sqrt_n":
        continue
    for dtype in (np.float32, np.float64, np.int32):
        add(f"empty_{fn}_{np.dtype(dtype).name}", fn,
            np.array([[1, 2], [3, 4], [5, 6]], dtype), np.array([0, 0, 2], np.int32), 4)
    add(f"all_negative_{fn}", fn, np.array([1.0, 2.0], np.float32),
        np.array([-1, -3], np.int32), 2)
    add(f"zero_segments_{fn}", fn, np.zeros((0, 3), np.float32),
        np.zeros(0, np.int32), 0)

# -- random cases -----------------------------------------------------------------
for dtype in (np.float32, np.float64, np.int32):
    dname = np.dtype(dtype).name
    for fn in SORTED:
        for shape in ((40,), (40, 3), (40, 2, 3)):
            ids = np.sort(rng.choice([0, 2, 3, 4, 7, 8, 9, 12], size=40))
            if dtype == np.int32:
                data = rng.integers(-9, 10, size=shape).astype(dtype)
            elif fn == "segment_prod":
                data = rng.uniform(0.5, 1.5, size=shape).astype(dtype)
                data.reshape(40, -1)[::11] = 0
            else:
                data = distinct(shape, dtype)
            add(f"random_{fn}_{dname}_{len(shape)}d", fn, data, ids.astype(np.int32))
    for fn in UNSORTED:
        if fn == "unsorted_segment_sqrt_n" and dtype == np.int32:
            continue
        for shape, ids_shape in (((40,), (40,)), ((40, 3), (40,)),
                                 ((5, 8, 2), (5, 8)), ((4, 10), (4, 10))):
            ids = rng.integers(-2, 12, size=ids_shape).astype(np.int32)
            if dtype == np.int32:
                data = rng.integers(-9, 10, size=shape).astype(dtype)
            elif fn == "unsorted_segment_prod":
                data = rng.uniform(0.5, 1.5, size=shape).astype(dtype)
                data.reshape(-1)[::13] = 0
            else:
                data = distinct(shape, dtype)
            add(f"random_{fn}_{dname}_{len(shape)}d_{len(ids_shape)}ids", fn, data,
                ids, 12)

path = os.path.join(os.path.dirname(__file__), "data", "segment_golden.npz")
np.savez_compressed(path, __meta__=np.array(json.dumps(meta)), **arrays)
print(f"{len(meta)} cases -> {path}")
