"""embedding_lookup_sparse against torch.nn.EmbeddingBag, TensorFlow and the
memory-bandwidth floor.

Case (issue 11): ``embedding_lookup_sparse(table, ids, combiner="sum")`` for
16,384 bags of 20 Zipf(1.1) ids on a 1,000,000 x 64 float32 table, the ids
a ``scipy.sparse`` CSR matrix of ones (16,384 x 1,000,000).  Medians of
``--repeat`` runs after a warm-up run, all threads of the machine.

* (a) forward: sparsegrad's ``sg.nn.embedding_lookup_sparse`` on a
  ``Variable`` table; ``torch.nn.EmbeddingBag(mode="sum")`` on the same ids
  (``offsets = indptr[:-1]``) under ``torch.no_grad()``;
  ``tf.nn.embedding_lookup_sparse`` on a ``tf.SparseTensor`` (eager).
* (b) a training step: forward, the gradient w.r.t. the table for a fixed
  random upstream gradient (16,384 x 64), and a sparse Adagrad step
  (learning rate 0.1).  sparsegrad: ``GradientTape`` +
  ``sg.optimizers.Adagrad`` (the gradient is an IndexedSlices over the
  distinct ids); torch: ``EmbeddingBag(sparse=True)`` + ``torch.optim.Adagrad``
  (``zero_grad``, ``out.backward(upstream)``, ``step``); TensorFlow: the step
  in a ``tf.function`` with ``tf.compat.v1.train.AdagradOptimizer`` (its
  ``ResourceSparseApplyAdagrad`` kernel).

The floor is the bytes a step must move divided by the better of a
single-threaded ``np.copyto`` and a copy split over all cores, measured in
this run: the forward reads every looked-up row once (nnz x 256 B) and writes
the output; the step adds reading the upstream gradient and reading and
writing the table and accumulator rows of every distinct id once.  Random
row reads are bound by memory latency more than bandwidth, so the floor is
optimistic.

Every library runs in its own fresh process (this file with
``--sparsegrad-worker``, ``--torch-worker`` or ``--tf-worker``), so no
library's idle OpenMP threads compete with another's, and the three take
turns for ``--rounds`` rounds (the machine's memory bandwidth drifts with its
neighbours' load); each figure is the median over the rounds;
``--tf-python /tmp/tfenv/bin/python`` picks the interpreter with TensorFlow.
A peer that is not installed is skipped with a note.

Run: ``python benchmarks/bench_embedding_bag.py --tf-python /tmp/tfenv/bin/python``.
The ``time_*`` functions are collectable by asv.
"""

import json
import os
import sys
import warnings

import numpy as np
from bench_clip import (
    benchmark_arguments,
    machine_and_bandwidth,
    run_worker,
    sparsegrad_worker,
)
from bench_training_ops import _median_time

N_ROWS, WIDTH, N_BAGS, BAG, ZIPF_A = 1_000_000, 64, 16_384, 20, 1.1
LEARNING_RATE = 0.1


def make_inputs(seed=0):
    """The table, the ids (flat), the CSR row pointer and the upstream gradient."""
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((N_ROWS, WIDTH), dtype=np.float32) * 0.01
    ids = ((rng.zipf(ZIPF_A, size=N_BAGS * BAG) - 1) % N_ROWS).astype(np.int64)
    indptr = np.arange(0, N_BAGS * BAG + 1, BAG, dtype=np.int64)
    upstream = rng.standard_normal((N_BAGS, WIDTH), dtype=np.float32)
    return table, ids, indptr, upstream


# ---------------------------------------------------------------------------
# Peer workers (each in its own process; no sparsegrad import).


def torch_worker(repeat):
    import torch

    torch.set_num_threads(os.cpu_count())
    table, ids, indptr, upstream = make_inputs()
    inputs = torch.from_numpy(ids)
    offsets = torch.from_numpy(indptr[:-1].copy())
    up = torch.from_numpy(upstream)
    bag = torch.nn.EmbeddingBag(N_ROWS, WIDTH, mode="sum", sparse=True)
    with torch.no_grad():
        bag.weight.copy_(torch.from_numpy(table))
    opt = torch.optim.Adagrad(bag.parameters(), lr=LEARNING_RATE)

    def forward():
        with torch.no_grad():
            return bag(inputs, offsets)

    def step():
        opt.zero_grad(set_to_none=True)
        out = bag(inputs, offsets)
        out.backward(up)
        opt.step()

    warnings.filterwarnings("ignore", message="Sparse invariant checks")
    out = {
        "version": torch.__version__,
        "forward": _median_time(forward, repeat),
        "step": _median_time(step, repeat),
        "checksum": float(forward()[:4].sum()),
    }
    print(json.dumps(out))


def tf_worker(repeat):
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(os.cpu_count())
    tf.config.threading.set_inter_op_parallelism_threads(os.cpu_count())
    table, ids, _, upstream = make_inputs()
    rows = np.repeat(np.arange(N_BAGS), BAG)
    cols = np.tile(np.arange(BAG), N_BAGS)
    sp_ids = tf.SparseTensor(np.stack([rows, cols], 1), ids, (N_BAGS, BAG))
    var = tf.Variable(table)
    up = tf.constant(upstream)
    opt = tf.compat.v1.train.AdagradOptimizer(LEARNING_RATE)

    def forward():
        return tf.nn.embedding_lookup_sparse(var, sp_ids, None, combiner="sum")

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            out = tf.nn.embedding_lookup_sparse(var, sp_ids, None, combiner="sum")
        grad = tape.gradient(out, var, output_gradients=up)
        opt.apply_gradients([(grad, var)])

    out = {
        "version": tf.__version__,
        "forward": _median_time(lambda: forward().numpy(), repeat),
        "step": _median_time(step, repeat),
    }
    print(json.dumps(out))


# ---------------------------------------------------------------------------
# sparsegrad half.

_STATE = {}


def _setup():
    if not _STATE:
        import scipy.sparse

        import sparsegrad as sg

        table, ids, indptr, upstream = make_inputs()
        _STATE["table"] = sg.Variable(table)
        _STATE["csr"] = scipy.sparse.csr_array(
            (np.ones(ids.size, np.float32), ids.astype(np.int32), indptr),
            shape=(N_BAGS, N_ROWS),
        )
        _STATE["upstream"] = upstream
        _STATE["opt"] = sg.optimizers.Adagrad(LEARNING_RATE)
    return _STATE


def time_forward():
    import sparsegrad as sg

    s = _setup()
    sg.nn.embedding_lookup_sparse(s["table"], s["csr"], combiner="sum")


def time_step():
    import sparsegrad as sg

    s = _setup()
    with sg.GradientTape() as tape:
        out = sg.nn.embedding_lookup_sparse(s["table"], s["csr"], combiner="sum")
    grad = tape.gradient(out, s["table"], output_gradients=s["upstream"])
    s["opt"].apply_gradients([(grad, s["table"])])


def _median_of_rounds(outs):
    """A worker's figures, each the median over the rounds (None if skipped)."""
    outs = [o for o in outs if o]
    if not outs:
        return None
    merged = dict(outs[0])
    for key in ("forward", "step"):
        merged[key] = float(np.median([o[key] for o in outs]))
    return merged


def main():
    args = benchmark_arguments(__doc__, ("tf", "torch", "sparsegrad"), rounds=True)
    if args.tf_worker:
        tf_worker(args.repeat)
        return
    if args.torch_worker:
        torch_worker(args.repeat)
        return
    if args.sparsegrad_worker:
        sparsegrad_worker({"forward": time_forward, "step": time_step}, args.repeat)
        return

    bandwidth = machine_and_bandwidth(args.repeat)
    s = _setup()
    ids = s["csr"].indices
    n_unique = np.unique(ids).size
    row = WIDTH * 4
    forward_bytes = ids.size * row + N_BAGS * row
    step_bytes = forward_bytes + N_BAGS * row + 4 * n_unique * row
    print(
        f"{N_BAGS} bags of {BAG} Zipf({ZIPF_A}) ids ({n_unique} distinct) on a "
        f"{N_ROWS} x {WIDTH} float32 table; combiner 'sum'; Adagrad lr "
        f"{LEARNING_RATE}; medians of {args.repeat} runs, median of "
        f"{args.rounds} rounds taken in turn"
    )

    # The machine's memory bandwidth drifts with its neighbours' load over
    # minutes: the libraries take turns, round after round, and each figure
    # is the median over the rounds of the per-round medians.
    ours = {"forward": [], "step": []}
    peers = {"torch": [], "tf": []}
    torch_note = tf_note = None
    for _ in range(args.rounds):
        # sparsegrad also runs in a fresh process, as the peers do
        out, note = run_worker(sys.executable, "--sparsegrad-worker", args.repeat,
                               script=__file__)
        if out is None:
            raise RuntimeError(note)
        ours["forward"].append(out["forward"])
        ours["step"].append(out["step"])
        out, torch_note = run_worker(sys.executable, "--torch-worker",
                                     args.repeat, script=__file__)
        peers["torch"].append(out)
        out, tf_note = run_worker(args.tf_python, "--tf-worker", args.repeat,
                                  script=__file__)
        peers["tf"].append(out)
    forward_t = float(np.median(ours["forward"]))
    step_t = float(np.median(ours["step"]))
    torch_out, tf_out = (_median_of_rounds(peers[k]) for k in ("torch", "tf"))
    print(f"PyTorch: {torch_note or torch_out['version']}")
    print(f"TensorFlow: {tf_note or tf_out['version']} (forward eager, step in "
          f"a tf.function)")
    print()

    header = (
        f"{'case':<26}{'sparsegrad ms':>14}{'floor ms':>10}{'x floor':>9}"
        f"{'torch ms':>10}{'speed-up':>10}{'TF ms':>9}{'speed-up':>10}"
    )
    print(header)
    print("-" * len(header))
    cases = [
        ("(a) forward", forward_t, forward_bytes, "forward"),
        ("(b) fwd + bwd + Adagrad", step_t, step_bytes, "step"),
    ]
    for name, t, n_bytes, key in cases:
        floor = n_bytes / bandwidth
        line = f"{name:<26}{t * 1e3:14.2f}{floor * 1e3:10.2f}{t / floor:9.2f}"
        for peer in (torch_out, tf_out):
            if peer:
                line += f"{peer[key] * 1e3:10.2f}{peer[key] / t:9.2f}x"
            else:
                line += f"{'skipped':>10}{'-':>10}"
        print(line)


if __name__ == "__main__":
    main()
