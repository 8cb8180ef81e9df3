"""segment_sum and unsorted_segment_sum against NumPy, TensorFlow and the
memory-bandwidth floor.

Case (issue 11): 10,000,000 float32 values (1-D data) in 200,000 sorted
segments (ids uniform in [0, 200,000), sorted; int32 and int64 ids).  All
threads of the machine, medians of ``--repeat`` runs after a warm-up run.

* sparsegrad: ``sg.math.segment_sum(data, ids)`` (the ids are checked and the
  segments reduced in one pass), and ``sg.math.unsorted_segment_sum`` on the
  same ids (the one-pass path that ragged reductions use) and on the same
  data and ids shuffled together (grouping by a stable radix sort first).
* NumPy: ``np.add.reduceat(data, offsets)`` with the segment offsets
  precomputed (no checks, no id pass; empty segments are not filled), and
  ``np.add.at`` for the unsorted case.
* TensorFlow: ``tf.math.segment_sum`` and ``tf.math.unsorted_segment_sum``,
  eager, on the same data.

The floor is the bytes the call must move: the values and the ids read once,
the output written once, divided by the better of a single-threaded
``np.copyto`` and a copy split over all cores, both measured in this run.

Peers run in their own processes (this file with ``--tf-worker``), so no
library's idle OpenMP threads compete with another's: ``--tf-python
/tmp/tfenv/bin/python`` picks the interpreter with TensorFlow (default: this
one); a peer that is not installed is skipped with a note.

Run: ``python benchmarks/bench_segment.py --tf-python /tmp/tfenv/bin/python``.
The ``time_*`` functions are collectable by asv.
"""

import json
import os

import numpy as np
from bench_clip import benchmark_arguments, machine_and_bandwidth, run_worker
from bench_training_ops import _median_time

N_VALUES = 10_000_000
N_SEGMENTS = 200_000


def make_inputs(id_dtype=np.int32, seed=0):
    """Sorted ids, values, and the same pairs shuffled together."""
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.integers(0, N_SEGMENTS, N_VALUES)).astype(id_dtype)
    data = rng.standard_normal(N_VALUES, dtype=np.float32)
    perm = rng.permutation(N_VALUES)
    return ids, data, ids[perm], data[perm]


# ---------------------------------------------------------------------------
# Peer worker (its own process; no sparsegrad import).


def tf_worker(repeat):
    import tensorflow as tf

    n_threads = os.cpu_count()
    tf.config.threading.set_intra_op_parallelism_threads(n_threads)
    tf.config.threading.set_inter_op_parallelism_threads(n_threads)
    out = {"version": tf.__version__}
    for id_dtype in (np.int32, np.int64):
        out.update(_tf_times(tf, id_dtype, repeat))
    print(json.dumps(out))


def _tf_times(tf, id_dtype, repeat):
    name = np.dtype(id_dtype).name
    ids, data, shuffled_ids, shuffled_data = make_inputs(id_dtype)
    t_ids, t_data = tf.constant(ids), tf.constant(data)
    t_sids, t_sdata = tf.constant(shuffled_ids), tf.constant(shuffled_data)
    return {
        f"segment_sum_{name}": _median_time(
            lambda: tf.math.segment_sum(t_data, t_ids).numpy(), repeat),
        f"unsorted_{name}": _median_time(
            lambda: tf.math.unsorted_segment_sum(
                t_sdata, t_sids, N_SEGMENTS).numpy(), repeat),
        f"unsorted_sorted_{name}": _median_time(
            lambda: tf.math.unsorted_segment_sum(
                t_data, t_ids, N_SEGMENTS).numpy(), repeat),
    }


# ---------------------------------------------------------------------------
# sparsegrad half.

_STATE = {}


def _inputs(id_dtype=np.int32):
    key = np.dtype(id_dtype).name
    if key not in _STATE:
        _STATE[key] = make_inputs(id_dtype)
    return _STATE[key]


def time_segment_sum():
    import sparsegrad as sg

    ids, data, _, _ = _inputs()
    sg.math.segment_sum(data, ids)


def time_unsorted_segment_sum():
    import sparsegrad as sg

    _, _, shuffled_ids, shuffled_data = _inputs()
    sg.math.unsorted_segment_sum(shuffled_data, shuffled_ids, N_SEGMENTS)


def _row(name, t, floor, peer_name, peer):
    ours = (f"{t * 1e3:14.2f}{floor * 1e3:10.2f}{t / floor:9.2f}" if name
            else " " * 33)
    peer_ms = f"{peer * 1e3:9.2f}" if peer else f"{'skipped':>9}"
    speed = f"{peer / t:9.2f}x" if peer else f"{'-':>10}"
    print(f"{name:<34}{ours}   {peer_name:<30}{peer_ms}{speed}")


def _sg_rows(sg, id_dtype, bandwidth, tf_out, repeat):
    name = np.dtype(id_dtype).name
    ids, data, shuffled_ids, shuffled_data = _inputs(id_dtype)
    floor = (data.nbytes + ids.nbytes + N_SEGMENTS * 4) / bandwidth
    offsets = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    t = _median_time(lambda: sg.math.segment_sum(data, ids), repeat)
    reduceat = _median_time(lambda: np.add.reduceat(data, offsets), repeat)
    _row(f"segment_sum ({name} ids)", t, floor, "tf.math.segment_sum",
         tf_out and tf_out[f"segment_sum_{name}"])
    _row("", t, floor, "np.add.reduceat (given offsets)", reduceat)
    threads = sg.get_num_threads()
    sg.set_num_threads(1)
    t1 = _median_time(lambda: sg.math.segment_sum(data, ids), repeat)
    sg.set_num_threads(threads)
    _row(f"segment_sum 1 thread ({name})", t1, floor,
         "np.add.reduceat (given offsets)", reduceat)
    t = _median_time(
        lambda: sg.math.unsorted_segment_sum(data, ids, N_SEGMENTS), repeat)
    _row(f"unsorted_segment_sum sorted ({name})", t, floor,
         "tf unsorted_segment_sum", tf_out and tf_out[f"unsorted_sorted_{name}"])
    t = _median_time(lambda: sg.math.unsorted_segment_sum(
        shuffled_data, shuffled_ids, N_SEGMENTS), repeat)
    out = np.zeros(N_SEGMENTS, np.float32)

    def add_at():
        out[:] = 0
        np.add.at(out, shuffled_ids, shuffled_data)

    add_at_t = _median_time(add_at, max(3, repeat // 3))
    _row(f"unsorted_segment_sum shuffled ({name})", t, floor,
         "tf unsorted_segment_sum", tf_out and tf_out[f"unsorted_{name}"])
    _row("", t, floor, "np.add.at", add_at_t)


def main():
    args = benchmark_arguments(__doc__, ("tf",), repeat=11)
    if args.tf_worker:
        tf_worker(args.repeat)
        return

    import sparsegrad as sg

    bandwidth = machine_and_bandwidth(args.repeat)
    print(f"{N_VALUES} float32 values, {N_SEGMENTS} segments; medians of "
          f"{args.repeat} runs")
    tf_out, tf_note = run_worker(args.tf_python, "--tf-worker", args.repeat,
                                 script=__file__)
    print(f"TensorFlow: {tf_note or tf_out['version'] + ', eager'}")
    print()

    header = (f"{'op':<34}{'sparsegrad ms':>14}{'floor ms':>10}{'x floor':>9}"
              f"   {'peer':<30}{'peer ms':>9}{'speed-up':>10}")
    print(header)
    print("-" * len(header))

    for id_dtype in (np.int32, np.int64):
        _sg_rows(sg, id_dtype, bandwidth, tf_out, args.repeat)
    print("\n(speed-up: peer time / sparsegrad time; reduceat gets the offsets "
          "for free and fills no empty segment)")


if __name__ == "__main__":
    main()
