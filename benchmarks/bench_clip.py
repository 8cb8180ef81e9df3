"""clip_by_global_norm against TensorFlow, PyTorch and the memory-bandwidth floor.

Case (issue): the gradients of a model with ten dense 1024 x 1024 float32
weights and one embedding table of 1,000,000 x 64 float32 rows, whose
gradient is an IndexedSlices of 16,384 Zipf(1.1) row ids (about 8,000
distinct rows, many repeated), clipped to a global norm of 1.0 (the norm is
about 3,400, so everything is scaled).  All threads of the machine, medians
of ``--repeat`` runs after a warm-up run.

* sparsegrad: ``sg.clip_by_global_norm(t_list, 1.0)`` on Tensors and the
  IndexedSlices, and ``sg.global_norm(t_list)`` alone.
* TensorFlow: ``tf.clip_by_global_norm`` (and ``tf.linalg.global_norm``) on
  the same data as eager tensors and a ``tf.IndexedSlices``; also the same
  call inside a ``tf.function``.  Note the semantics differ on the repeated
  ids (DESIGN.md): TensorFlow squares the raw rows, sparsegrad takes the norm
  of the represented tensor (repeated rows summed first); both norms are
  printed.
* PyTorch: ``torch.nn.utils.clip_grad_norm_`` on the ten dense gradients
  only (in place, on ``.grad``).  It cannot take the sparse part: with the
  embedding's gradient as a sparse COO tensor it raises (the error is
  printed).
* NumPy, for context: ``[v * s for v in values]`` with a fixed scale, i.e.
  the scaling pass alone into new arrays, as sparsegrad's results are.  New
  arrays cost their first-touch page faults: glibc returns large freed blocks
  to the system, so a loop that drops each result pays them on every call
  (TensorFlow's allocator keeps its memory; torch scales in place).

The floor is the bytes the call must move, all gradient values read once for
the norm, then read and written once to scale them (3 x 44 MiB; the global
norm alone reads them once), divided by the better of a single-threaded
``np.copyto`` (``bench_training_ops.copy_bandwidth``) and a copy split over all
cores, both measured in this run (2 x the copied size per run).

Peers run in their own processes (this file with ``--tf-worker`` or
``--torch-worker``), so no library's idle OpenMP threads compete with
another's: ``--tf-python /tmp/tfenv/bin/python`` picks the interpreter with
TensorFlow (default: this one); PyTorch runs under this interpreter.  A peer
that is not installed is skipped with a note.

Run: ``python benchmarks/bench_clip.py --tf-python /tmp/tfenv/bin/python``.
The ``time_*`` functions are collectable by asv.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from bench_training_ops import (
    N_IDS,
    N_ROWS,
    WIDTH,
    ZIPF_A,
    _cpu_model,
    _median_time,
    copy_bandwidth,
)

N_DENSE, DENSE_SHAPE = 10, (1024, 1024)
CLIP_NORM = 1.0


def make_inputs(seed=0):
    """Ten dense gradients, and the ids and rows of the sparse one."""
    rng = np.random.default_rng(seed)
    dense = [rng.standard_normal(DENSE_SHAPE, dtype=np.float32) for _ in range(N_DENSE)]
    ids = ((rng.zipf(ZIPF_A, size=N_IDS) - 1) % N_ROWS).astype(np.int64)
    values = rng.standard_normal((N_IDS, WIDTH), dtype=np.float32)
    return dense, ids, values


def parallel_copy_bandwidth(repeat, n_bytes=512 << 20, n_threads=None):
    """Bytes per second of a large copy split over `n_threads` threads (each an
    ``np.copyto`` of a contiguous chunk, which runs without the GIL)."""
    n_threads = n_threads or os.cpu_count()
    src = np.ones(n_bytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    edges = np.linspace(0, src.size, n_threads + 1).astype(np.int64)
    chunks = [(dst[a:b], src[a:b]) for a, b in zip(edges[:-1], edges[1:])]
    with ThreadPoolExecutor(n_threads) as pool:

        def copy():
            list(pool.map(lambda c: np.copyto(*c), chunks))

        t = _median_time(copy, repeat)
    return 2 * n_bytes / t


def machine_and_bandwidth(repeat):
    """Give sparsegrad every thread, print the load, the machine and the copy
    bandwidths, and return the bandwidth of the floor (bytes per second: the
    better of a one-thread and an all-core copy)."""
    import sparsegrad as sg

    n_threads = os.cpu_count()
    sg.set_num_threads(n_threads)
    print(
        f"load average before the run: {os.getloadavg()[0]:.2f} (a shared "
        "machine's other work slows the OpenMP loops most)"
    )
    print(
        f"machine: {platform.machine()} {_cpu_model()}, {n_threads} threads "
        f"(sparsegrad {sg.__version__} uses {sg.get_num_threads()}, OpenMP "
        f"{sg.openmp_enabled()}), Python {platform.python_version()}, "
        f"NumPy {np.__version__}"
    )
    one = copy_bandwidth(repeat)
    every = parallel_copy_bandwidth(repeat)
    bandwidth = max(one, every)
    print(
        f"copy bandwidth: np.copyto {one / 1e9:.2f} GB/s, on {n_threads} threads "
        f"{every / 1e9:.2f} GB/s; the floor uses {bandwidth / 1e9:.2f} GB/s"
    )
    return bandwidth


# ---------------------------------------------------------------------------
# Peer workers (each in its own process; no sparsegrad import).


def tf_worker(repeat):
    import tensorflow as tf

    n_threads = os.cpu_count()
    tf.config.threading.set_intra_op_parallelism_threads(n_threads)
    tf.config.threading.set_inter_op_parallelism_threads(n_threads)
    dense, ids, values = make_inputs()
    t_list = [tf.constant(d) for d in dense] + [
        tf.IndexedSlices(
            tf.constant(values),
            tf.constant(ids),
            tf.constant([N_ROWS, WIDTH], tf.int64),
        )
    ]
    graph_clip = tf.function(lambda ts: tf.clip_by_global_norm(ts, CLIP_NORM))
    out = {
        "version": tf.__version__,
        "norm": float(tf.linalg.global_norm(t_list)),
        "clip_by_global_norm": _median_time(
            lambda: tf.clip_by_global_norm(t_list, CLIP_NORM), repeat
        ),
        "global_norm": _median_time(
            lambda: float(tf.linalg.global_norm(t_list)), repeat
        ),
        "clip_by_global_norm_function": _median_time(
            lambda: graph_clip(t_list), repeat
        ),
    }
    print(json.dumps(out))


def torch_worker(repeat):
    import torch

    torch.set_num_threads(os.cpu_count())
    dense, ids, values = make_inputs()
    params = []
    for d in dense:
        p = torch.nn.Parameter(torch.zeros(DENSE_SHAPE))
        p.grad = torch.from_numpy(d.copy())
        params.append(p)
    out = {
        "version": torch.__version__,
        "norm": float(torch.nn.utils.clip_grad_norm_(params, float("inf"))),
        "clip_grad_norm_": _median_time(
            lambda: torch.nn.utils.clip_grad_norm_(params, CLIP_NORM), repeat
        ),
    }
    # The embedding's gradient as torch represents it (nn.Embedding(sparse=True)):
    # a sparse COO tensor; the table's pages are never touched.
    table = torch.nn.Parameter(torch.empty(N_ROWS, WIDTH))
    table.grad = torch.sparse_coo_tensor(
        torch.from_numpy(ids).reshape(1, -1), torch.from_numpy(values), (N_ROWS, WIDTH)
    )
    try:
        torch.nn.utils.clip_grad_norm_(params + [table], CLIP_NORM)
        out["sparse"] = "accepted"
    except Exception as e:  # report whatever torch raises
        out["sparse"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    print(json.dumps(out))


def benchmark_arguments(doc, workers, repeat=15, rounds=False):
    """Parse the command line shared by the benchmarks that time their peers
    in processes of their own: ``--repeat``, ``--tf-python``, optionally
    ``--rounds``, and a hidden ``--<name>-worker`` flag per worker name."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument(
        "--tf-python",
        default=sys.executable,
        help="interpreter with TensorFlow (runs the TF half; default: this one)",
    )
    if rounds:
        parser.add_argument("--rounds", type=int, default=3,
                            help="turns each library takes (medians over rounds)")
    for name in workers:
        parser.add_argument(f"--{name}-worker", action="store_true",
                            help=argparse.SUPPRESS)
    return parser.parse_args()


def sparsegrad_worker(timers, repeat):
    """The ``--sparsegrad-worker`` process: sparsegrad on every thread, the
    median time of each of `timers` (name -> function) printed as JSON."""
    import sparsegrad as sg

    sg.set_num_threads(os.cpu_count())
    print(json.dumps({k: _median_time(f, repeat) for k, f in timers.items()}))


def run_worker(python, flag, repeat, script=__file__):
    """The worker's JSON as a dict, or (None, reason); `script` is the
    benchmark file whose worker runs (this one by default)."""
    proc = subprocess.run(
        [python, os.path.abspath(script), flag, "--repeat", str(repeat)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
        return None, f"{python} {flag} failed: {last[0][:200]}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


# ---------------------------------------------------------------------------
# sparsegrad half.

_STATE = {}


def _t_list():
    if not _STATE:
        import sparsegrad as sg

        dense, ids, values = make_inputs()
        _STATE["t_list"] = [sg.constant(d) for d in dense] + [
            sg.IndexedSlices(values, ids, dense_shape=(N_ROWS, WIDTH))
        ]
    return _STATE["t_list"]


def time_clip_by_global_norm():
    import sparsegrad as sg

    sg.clip_by_global_norm(_t_list(), CLIP_NORM)


def time_global_norm():
    import sparsegrad as sg

    sg.global_norm(_t_list())


def main():
    args = benchmark_arguments(__doc__, ("tf", "torch"))
    if args.tf_worker:
        tf_worker(args.repeat)
        return
    if args.torch_worker:
        torch_worker(args.repeat)
        return

    import sparsegrad as sg

    bandwidth = machine_and_bandwidth(args.repeat)

    t_list = _t_list()
    value_bytes = sum(
        (t.values if isinstance(t, sg.IndexedSlices) else t).numpy().nbytes
        for t in t_list
    )
    n_unique = len(np.unique(t_list[-1].indices.numpy()))
    print(
        f"{N_DENSE} dense {DENSE_SHAPE[0]}x{DENSE_SHAPE[1]} float32 + IndexedSlices "
        f"{N_IDS}x{WIDTH} float32 ({N_IDS} Zipf({ZIPF_A}) ids of {N_ROWS} rows, "
        f"{n_unique} distinct): {value_bytes / 2**20:.0f} MiB of values; "
        f"clip_norm {CLIP_NORM}; medians of {args.repeat} runs"
    )

    clip_t = _median_time(time_clip_by_global_norm, args.repeat)
    norm_t = _median_time(time_global_norm, args.repeat)
    arrays = [(t.values if isinstance(t, sg.IndexedSlices) else t).numpy()
              for t in t_list]
    scale = np.float32(0.5)
    numpy_t = _median_time(lambda: [v * scale for v in arrays], args.repeat)
    sg_norm = float(sg.global_norm(t_list).numpy())

    tf_out, tf_note = run_worker(args.tf_python, "--tf-worker", args.repeat)
    torch_out, torch_note = run_worker(sys.executable, "--torch-worker", args.repeat)
    print(f"TensorFlow: {tf_note or tf_out['version'] + ', eager unless noted'}")
    print(f"PyTorch: {torch_note or torch_out['version']}")
    print(
        f"global norm: sparsegrad {sg_norm:.4f} (repeated ids summed first)"
        + (f", TensorFlow {tf_out['norm']:.4f} (raw rows squared)" if tf_out else "")
        + (f", torch dense part {torch_out['norm']:.4f}" if torch_out else "")
    )
    print()

    rows = [
        ("clip_by_global_norm", clip_t, 3 * value_bytes / bandwidth,
         "tf.clip_by_global_norm", tf_out and tf_out["clip_by_global_norm"]),
        ("", None, None, "  same in tf.function",
         tf_out and tf_out["clip_by_global_norm_function"]),
        ("", None, None, "torch clip_grad_norm_ dense",
         torch_out and torch_out["clip_grad_norm_"]),
        ("", None, None, "NumPy v * s only (new arrays)", numpy_t),
        ("global_norm", norm_t, value_bytes / bandwidth,
         "tf.linalg.global_norm", tf_out and tf_out["global_norm"]),
    ]
    header = (
        f"{'op':<21}{'sparsegrad ms':>14}{'floor ms':>10}{'x floor':>9}"
        f"   {'peer':<29}{'peer ms':>9}{'speed-up':>10}"
    )
    print(header)
    print("-" * len(header))
    for name, t, floor, peer_name, peer in rows:
        ours = (f"{t * 1e3:14.2f}{floor * 1e3:10.2f}{t / floor:9.2f}" if t
                else " " * 33)
        peer_ms = f"{peer * 1e3:9.2f}" if peer else f"{'skipped':>9}"
        speed = f"{peer / (t or clip_t):9.2f}x" if peer else f"{'-':>10}"
        print(f"{name:<21}{ours}   {peer_name:<29}{peer_ms}{speed}")
    print(
        "\n(torch: the dense part only, scaled in place; NumPy: the scaling pass "
        "alone; both speed-ups against sparsegrad's full call)"
    )
    if torch_out:
        print(f"torch clip_grad_norm_ with the sparse COO embedding gradient: "
              f"{torch_out['sparse']}")


if __name__ == "__main__":
    main()
