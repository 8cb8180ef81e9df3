"""Generate tests/ops/data/bag_golden.npz from TensorFlow (run once, by hand).

    /tmp/tfenv/bin/python tests/ops/generate_bag_fixtures.py

Random cases for ``tf.sparse.segment_{sum,mean,sqrt_n}`` (with and without
``num_segments``; gradients w.r.t. ``data``, TensorFlow's dense default) and
for ``tf.nn.embedding_lookup_sparse`` with SparseTensor and RaggedTensor ids,
weighted and not, the three combiners, with and without ``max_norm``
(gradients w.r.t. a ``tf.Variable`` table, densified).  Every gradient is
taken under ``tf.GradientTape`` with a fixed random upstream.

Each case ``c`` stores its arrays as members ``c__<name>``; ``__cases__``
lists the cases, one ``kind|name|combiner|num_segments|max_norm|weighted``
line each (``-`` for none).  tests/ops/test_bag_golden.py replays them; CI
never installs TensorFlow.
"""

import os

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(2028)
arrays = {}
cases = []


def add(kind, name, combiner, num_segments, max_norm, weighted, **members):
    cases.append("|".join(str(x) for x in (kind, name, combiner, num_segments,
                                           max_norm, weighted)))
    for key, value in members.items():
        arrays[f"{name}__{key}"] = np.asarray(value)


def dense(g):
    return tf.convert_to_tensor(g).numpy()


# -- sparse segment reductions ------------------------------------------------------

SS_OPS = {"sum": tf.sparse.segment_sum, "mean": tf.sparse.segment_mean,
          "sqrtn": tf.sparse.segment_sqrt_n}
k = 0
for dtype in (np.float32, np.float64):
    for combiner, fn in SS_OPS.items():
        for num_segments in (None, 9):
            n_rows, nnz = 12, 17
            data = rng.standard_normal((n_rows, 3)).astype(dtype)
            indices = rng.integers(0, n_rows, nnz).astype(np.int32)
            segment_ids = np.sort(rng.choice([0, 0, 1, 3, 3, 3, 4, 6, 6], nnz))
            segment_ids = segment_ids.astype(np.int64)
            x = tf.constant(data)
            with tf.GradientTape() as tape:
                tape.watch(x)
                out = fn(x, indices, segment_ids, num_segments=num_segments)
            up = rng.standard_normal(out.shape).astype(dtype)
            grad = tape.gradient(out, x, output_gradients=tf.constant(up))
            add("segment", f"ss{k}", combiner, num_segments or "-", "-", 0,
                data=data, indices=indices, segment_ids=segment_ids,
                out=out.numpy(), up=up, grad=dense(grad))
            k += 1

# -- embedding_lookup_sparse --------------------------------------------------------


def random_rows(n_rows, vocab, trailing_empty):
    lengths = rng.integers(0, 5, n_rows)
    lengths[1] = 0                      # an interior empty row
    lengths[0] = max(lengths[0], 2)
    if trailing_empty:
        lengths[-1] = 0
    else:
        lengths[-1] = max(lengths[-1], 1)
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = rng.integers(0, vocab, splits[-1]).astype(np.int64)
    ids[1] = ids[0]                     # a repeated id in one row
    weights = rng.uniform(-0.5, 2.0, splits[-1])
    return ids, splits, weights


k = 0
for dtype in (np.float32, np.float64):
    for source in ("sparse", "ragged"):
        for trailing_empty in (False, True):
            for weighted in (0, 1):
                for combiner in ("sum", "mean", "sqrtn"):
                    for max_norm in (None, 1.5):
                        vocab = 10
                        table = rng.standard_normal((vocab, 3)).astype(dtype)
                        ids, splits, weights = random_rows(6, vocab, trailing_empty)
                        weights = weights.astype(dtype)
                        if source == "sparse":
                            rows = np.repeat(np.arange(6), np.diff(splits))
                            cols = np.arange(ids.size) - splits[rows]
                            shape = (6, max(int(cols.max()) + 1, 1))
                            idx = np.stack([rows, cols], 1)
                            sp_ids = tf.SparseTensor(idx, ids, shape)
                            sp_w = (tf.SparseTensor(idx, weights, shape)
                                    if weighted else None)
                        else:
                            sp_ids = tf.RaggedTensor.from_row_splits(ids, splits)
                            sp_w = (tf.RaggedTensor.from_row_splits(weights, splits)
                                    if weighted else None)
                        v = tf.Variable(table)
                        with tf.GradientTape() as tape:
                            out = tf.nn.embedding_lookup_sparse(
                                v, sp_ids, sp_w, combiner=combiner,
                                max_norm=max_norm)
                        up = rng.standard_normal(out.shape).astype(dtype)
                        grad = tape.gradient(out, v, output_gradients=tf.constant(up))
                        add(source, f"els{k}", combiner, "-", max_norm or "-",
                            weighted, table=table, ids=ids, splits=splits,
                            weights=weights, out=out.numpy(), up=up,
                            grad=dense(grad))
                        k += 1

arrays["__cases__"] = np.array("\n".join(cases))
path = os.path.join(os.path.dirname(__file__), "data", "bag_golden.npz")
np.savez_compressed(path, **arrays)
print(f"wrote {len(cases)} cases to {path}")
