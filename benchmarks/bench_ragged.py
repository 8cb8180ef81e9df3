"""sparsegrad.ragged.range against tf.ragged.range and the memory-bandwidth floor.

Case (issue): 200,000 rows whose lengths are uniform in 0..99 (about 10
million values): starts uniform in [-1000, 1000), deltas uniform in
{-3, ..., 3} without 0, limits ``starts + length * deltas``; int32 values
with int64 row splits, and the same rows as float32 (starts shifted by a
random fraction, deltas scaled by 0.25).  All threads of the machine,
medians of ``--repeat`` runs after a warm-up run.

* sparsegrad: ``sg.ragged.range(starts, limits, deltas)`` (a RaggedTensor:
  the values Tensor and the int64 splits).
* TensorFlow: ``tf.ragged.range`` on the same inputs as eager tensors, and
  the same call inside a ``tf.function``.
* NumPy, for context: the same values built with ``np.repeat`` and
  ``np.cumsum`` (int32: ``start + k * delta``, the values TF's repeated
  addition gives for integers).

The floor is the bytes the call must move (the three inputs read, the
splits and the values written) divided by the better of a single-threaded
``np.copyto`` and a copy split over all cores, both measured in this run.
sparsegrad and TensorFlow run in fresh processes of their own (this file
with ``--sparsegrad-worker`` / ``--tf-worker``), taking turns for
``--rounds`` rounds; each figure is the median over the rounds;
``--tf-python /tmp/tfenv/bin/python`` picks the interpreter with TensorFlow.

Run: ``python benchmarks/bench_ragged.py --tf-python /tmp/tfenv/bin/python``.
The ``time_*`` functions are collectable by asv.
"""

import json
import os
import sys

import numpy as np
from bench_clip import (
    benchmark_arguments,
    machine_and_bandwidth,
    run_worker,
    sparsegrad_worker,
)
from bench_training_ops import _median_time

N_ROWS = 200_000
MAX_LENGTH = 100


def make_inputs(dtype, seed=0):
    """starts, limits, deltas of the benchmark rows, in `dtype`."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, MAX_LENGTH, N_ROWS)
    starts = rng.integers(-1000, 1000, N_ROWS)
    deltas = rng.integers(1, 4, N_ROWS) * rng.choice([-1, 1], N_ROWS)
    if np.dtype(dtype).kind == "f":
        starts = starts + rng.uniform(0, 1, N_ROWS)
        deltas = deltas * 0.25
        # limits half a step before the end: float sizes are not borderline
        limits = starts + (lengths - 0.5) * deltas
        limits = np.where(lengths == 0, starts, limits)
    else:
        limits = starts + lengths * deltas
    return (starts.astype(dtype), limits.astype(dtype), deltas.astype(dtype))


# ---------------------------------------------------------------------------
# TensorFlow worker (its own process; no sparsegrad import).


def tf_worker(repeat):
    import tensorflow as tf

    n_threads = os.cpu_count()
    tf.config.threading.set_intra_op_parallelism_threads(n_threads)
    tf.config.threading.set_inter_op_parallelism_threads(n_threads)
    out = {"version": tf.__version__}
    graph_range = tf.function(
        lambda s, lim, d: tf.ragged.range(s, lim, d, row_splits_dtype=tf.int64)
    )
    for dtype in ("int32", "float32"):
        s, lim, d = (tf.constant(a) for a in make_inputs(dtype))
        rt = tf.ragged.range(s, lim, d, row_splits_dtype=tf.int64)
        out[f"{dtype}_nvals"] = int(rt.values.shape[0])
        out[f"{dtype}_checksum"] = float(
            np.asarray(rt.values[-1000:], np.float64).sum()
        )
        del rt  # timed calls start with no earlier result alive
        out[dtype] = _median_time(
            lambda s=s, lim=lim, d=d: tf.ragged.range(
                s, lim, d, row_splits_dtype=tf.int64
            ),
            repeat,
        )
        out[f"{dtype}_function"] = _median_time(
            lambda s=s, lim=lim, d=d: graph_range(s, lim, d), repeat
        )
    print(json.dumps(out))


# ---------------------------------------------------------------------------
# sparsegrad half.

_INPUTS = {}


def _inputs(dtype):
    if dtype not in _INPUTS:
        _INPUTS[dtype] = make_inputs(dtype)
    return _INPUTS[dtype]


def time_range_int32():
    import sparsegrad as sg

    sg.ragged.range(*_inputs("int32"))


def time_range_float32():
    import sparsegrad as sg

    sg.ragged.range(*_inputs("float32"))


def numpy_range(starts, limits, deltas):
    """The int32 values with NumPy: ``start + k * delta`` per row."""
    lengths = np.maximum(-(-(limits - starts) // deltas), 0).astype(np.int64)
    splits = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=splits[1:])
    rows = np.repeat(np.arange(len(lengths)), lengths)
    k = np.arange(splits[-1]) - splits[rows]
    return splits, (starts[rows] + k * deltas[rows]).astype(starts.dtype)


def main():
    args = benchmark_arguments(__doc__, ("tf", "sparsegrad"), rounds=True)
    if args.tf_worker:
        tf_worker(args.repeat)
        return
    if args.sparsegrad_worker:
        sparsegrad_worker({"int32": time_range_int32, "float32": time_range_float32},
                          args.repeat)
        return

    import sparsegrad as sg

    bandwidth = machine_and_bandwidth(args.repeat)
    tf_out, tf_note = run_worker(
        args.tf_python, "--tf-worker", args.repeat, script=__file__
    )
    print(f"TensorFlow: {tf_note or tf_out['version'] + ', eager unless noted'}")

    # sparsegrad and TensorFlow take turns, each in a fresh process, for
    # --rounds rounds (the machine's bandwidth drifts with its neighbours'
    # load); each figure is the median over the rounds.
    ours_rounds, tf_rounds = [], [tf_out] if tf_out else []
    for r in range(args.rounds):
        out, note = run_worker(sys.executable, "--sparsegrad-worker", args.repeat,
                               script=__file__)
        if out is None:
            raise RuntimeError(note)
        ours_rounds.append(out)
        if tf_out and r:
            more, _ = run_worker(args.tf_python, "--tf-worker", args.repeat,
                                 script=__file__)
            if more:
                tf_rounds.append(more)
    if tf_out:
        for key in ("int32", "int32_function", "float32", "float32_function"):
            tf_out[key] = float(np.median([o[key] for o in tf_rounds]))

    rows = []
    for dtype in ("int32", "float32"):
        starts, limits, deltas = _inputs(dtype)
        rt = sg.ragged.range(starts, limits, deltas)
        nvals = rt.values.shape[0]
        moved = 3 * starts.nbytes + rt.row_splits.nbytes + rt.values.numpy().nbytes
        if tf_out:
            assert tf_out[f"{dtype}_nvals"] == nvals, "TF made other rows"
            ours = float(rt.values.numpy()[-1000:].astype(np.float64).sum())
            assert ours == tf_out[f"{dtype}_checksum"], "TF made other values"
        del rt
        print(
            f"{dtype}: {N_ROWS} rows, {nvals} values, int64 splits, "
            f"{moved / 2**20:.1f} MiB moved; medians of {args.repeat} runs, "
            f"median of {args.rounds} rounds taken in turn"
        )
        t = float(np.median([o[dtype] for o in ours_rounds]))
        rows.append(
            (
                f"range {dtype}",
                t,
                moved / bandwidth,
                "tf.ragged.range",
                tf_out and tf_out[dtype],
            )
        )
        rows.append(
            (
                "",
                None,
                None,
                "  same in tf.function",
                tf_out and tf_out[f"{dtype}_function"],
            )
        )
        if dtype == "int32":
            np_t = _median_time(
                lambda a=(starts, limits, deltas): numpy_range(*a), args.repeat
            )
            rows.append(("", None, None, "NumPy repeat + cumsum", np_t))
    print()
    header = (
        f"{'op':<16}{'sparsegrad ms':>14}{'floor ms':>10}{'x floor':>9}"
        f"   {'peer':<24}{'peer ms':>9}{'speed-up':>10}"
    )
    print(header)
    print("-" * len(header))
    last = None
    for name, t, floor, peer_name, peer in rows:
        last = t or last
        ours = f"{t * 1e3:14.2f}{floor * 1e3:10.2f}{t / floor:9.2f}" if t else " " * 33
        peer_ms = f"{peer * 1e3:9.2f}" if peer else f"{'skipped':>9}"
        speed = f"{peer / last:9.2f}x" if peer else f"{'-':>10}"
        print(f"{name:<16}{ours}   {peer_name:<24}{peer_ms}{speed}")


if __name__ == "__main__":
    main()
