"""Training-op kernels against TensorFlow, PyTorch and the memory-bandwidth floor.

Cases (issue 4), all threads of the machine, medians of ``--repeat`` runs:

* ``sparse_apply_adagrad_v2`` and ``sparse_apply_ftrl`` on a 1,000,000 x 64
  float32 table with 16,384 Zipf(1.1) row ids (about 8,000 distinct rows),
  against TensorFlow's ``ResourceSparseApplyAdagradV2`` / ``ResourceSparseApplyFtrl``
  called eagerly on the same data.
* dense ``apply_adam`` on 10,000,000 float32 parameters against
  ``torch.optim.Adam(foreach=True).step()``.

The bandwidth floor of an update is the bytes it must read and write (each
touched row of var and of every slot read and written once, the gradient and
the indices read once) divided by the bandwidth of a large ``np.copyto``
(2 x its size per run), both measured in this run.

TensorFlow runs in a subprocess, so that this script runs under any Python:
``--tf-python /tmp/tfenv/bin/python`` runs this same file there with
``--tf-worker`` (which imports only NumPy and TensorFlow and prints JSON
timings).  Without ``--tf-python``, TensorFlow is used in-process when it can
be imported and skipped (with a note) otherwise.  PyTorch is skipped, with a
note, when it is not installed.

Run: ``python benchmarks/bench_training_ops.py --tf-python /tmp/tfenv/bin/python``.
The ``time_*`` functions are collectable by asv.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import time

import numpy as np

N_ROWS, WIDTH, N_IDS, ZIPF_A = 1_000_000, 64, 16_384, 1.1
N_DENSE = 10_000_000


def make_sparse_inputs(seed=0):
    rng = np.random.default_rng(seed)
    ids = ((rng.zipf(ZIPF_A, size=N_IDS) - 1) % N_ROWS).astype(np.int64)
    grad = rng.standard_normal((N_IDS, WIDTH), dtype=np.float32)
    var = rng.standard_normal((N_ROWS, WIDTH), dtype=np.float32)
    return ids, grad, var


def _median_time(fn, repeat, warmup=1):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# ---------------------------------------------------------------------------
# TensorFlow half (runs in the TF interpreter; no sparsegrad import).


def tf_worker(repeat):
    import tensorflow as tf

    n_threads = os.cpu_count()
    tf.config.threading.set_intra_op_parallelism_threads(n_threads)
    tf.config.threading.set_inter_op_parallelism_threads(n_threads)
    ids, grad, var = make_sparse_inputs()
    ids_t, grad_t = tf.constant(ids), tf.constant(grad)
    out = {"tf_version": tf.__version__}

    v = tf.Variable(var)
    accum = tf.Variable(np.full_like(var, 0.1))
    lr, eps = tf.constant(0.01, tf.float32), tf.constant(1e-7, tf.float32)

    def adagrad():
        tf.raw_ops.ResourceSparseApplyAdagradV2(
            var=v.handle,
            accum=accum.handle,
            lr=lr,
            epsilon=eps,
            grad=grad_t,
            indices=ids_t,
        )

    out["sparse_apply_adagrad_v2"] = _median_time(adagrad, repeat)
    del accum

    linear = tf.Variable(np.zeros_like(var))
    accum = tf.Variable(np.full_like(var, 0.1))
    l1, l2 = tf.constant(0.01, tf.float32), tf.constant(0.01, tf.float32)
    p = tf.constant(-0.5, tf.float32)

    def ftrl():
        tf.raw_ops.ResourceSparseApplyFtrl(
            var=v.handle,
            accum=accum.handle,
            linear=linear.handle,
            grad=grad_t,
            indices=ids_t,
            lr=lr,
            l1=l1,
            l2=l2,
            lr_power=p,
        )

    out["sparse_apply_ftrl"] = _median_time(ftrl, repeat)
    print(json.dumps(out))


def run_tf(tf_python, repeat):
    """TF timings as a dict, or (None, reason)."""
    if tf_python:
        proc = subprocess.run(
            [
                tf_python,
                os.path.abspath(__file__),
                "--tf-worker",
                "--repeat",
                str(repeat),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            return None, f"TensorFlow worker failed: {proc.stderr.strip()[-300:]}"
        return json.loads(proc.stdout.strip().splitlines()[-1]), None
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        return None, (
            "TensorFlow is not installed here; pass --tf-python "
            "/path/to/python-with-tensorflow"
        )
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        tf_worker(repeat)
    return json.loads(buf.getvalue().strip().splitlines()[-1]), None


# ---------------------------------------------------------------------------
# sparsegrad half.

_STATE = {}


def _sparse_state():
    if not _STATE:
        ids, grad, var = make_sparse_inputs()
        _STATE.update(
            ids=ids,
            grad=grad,
            var=var,
            accum=np.full_like(var, 0.1),
            linear=np.zeros_like(var),
        )
    return _STATE


def time_sparse_apply_adagrad_v2():
    from sparsegrad import training_ops

    s = _sparse_state()
    training_ops.sparse_apply_adagrad_v2(
        s["var"], s["accum"], 0.01, 1e-7, s["grad"], s["ids"]
    )


def time_sparse_apply_ftrl():
    from sparsegrad import training_ops

    s = _sparse_state()
    training_ops.sparse_apply_ftrl(
        s["var"], s["accum"], s["linear"], s["grad"], s["ids"], 0.01, 0.01, 0.01, -0.5
    )


_DENSE = {}


def _dense_state():
    if not _DENSE:
        rng = np.random.default_rng(1)
        _DENSE.update(
            var=rng.standard_normal(N_DENSE, dtype=np.float32),
            m=np.zeros(N_DENSE, np.float32),
            v=np.zeros(N_DENSE, np.float32),
            grad=rng.standard_normal(N_DENSE, dtype=np.float32),
            step=0,
        )
    return _DENSE


def time_apply_adam():
    from sparsegrad import training_ops

    s = _dense_state()
    s["step"] += 1
    t = s["step"]
    training_ops.apply_adam(
        s["var"], s["m"], s["v"], 0.9**t, 0.999**t, 1e-3, 0.9, 0.999, 1e-7, s["grad"]
    )


def copy_bandwidth(repeat, n_bytes=512 << 20):
    """Bytes per second of a large np.copyto (read + write counted)."""
    src = np.ones(n_bytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    t = _median_time(lambda: np.copyto(dst, src), repeat)
    return 2 * n_bytes / t


def torch_adam(repeat):
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed; skipped"
    torch.set_num_threads(os.cpu_count())
    rng = np.random.default_rng(1)
    p = torch.nn.Parameter(
        torch.from_numpy(rng.standard_normal(N_DENSE, dtype=np.float32))
    )
    p.grad = torch.from_numpy(rng.standard_normal(N_DENSE, dtype=np.float32))
    opt = torch.optim.Adam([p], lr=1e-3, eps=1e-7, foreach=True)
    return _median_time(opt.step, repeat), f"torch {torch.__version__}"


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument(
        "--tf-python",
        default=None,
        help="interpreter with TensorFlow (runs the TF half)",
    )
    parser.add_argument("--tf-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tf_worker:
        tf_worker(args.repeat)
        return

    import sparsegrad as sg
    from sparsegrad.training import training_ops as impl

    n_threads = os.cpu_count()
    sg.set_num_threads(n_threads)
    print(
        f"machine: {platform.machine()} {_cpu_model()}, "
        f"{n_threads} threads (sparsegrad uses {sg.get_num_threads()}), "
        f"Python {platform.python_version()}, NumPy {np.__version__}, "
        f"kernels: {impl.core.kernels().__name__}"
    )
    bandwidth = copy_bandwidth(args.repeat)
    print(f"np.copyto bandwidth: {bandwidth / 1e9:.2f} GB/s")

    tf_times, tf_note = run_tf(args.tf_python, args.repeat)
    if tf_note:
        print(f"TensorFlow: {tf_note}")
    else:
        print(f"TensorFlow {tf_times['tf_version']} (eager raw ops)")

    s = _sparse_state()
    n_unique = len(np.unique(s["ids"]))
    row_bytes = WIDTH * 4
    grad_bytes = s["grad"].nbytes + s["ids"].nbytes
    print(
        f"table {N_ROWS} x {WIDTH} float32, {N_IDS} Zipf({ZIPF_A}) ids, "
        f"{n_unique} distinct rows; dense Adam on {N_DENSE} float32\n"
    )

    rows = []
    for name, fn, n_state in (
        ("sparse_apply_adagrad_v2", time_sparse_apply_adagrad_v2, 2),
        ("sparse_apply_ftrl", time_sparse_apply_ftrl, 3),
    ):
        t = _median_time(fn, args.repeat)
        floor = (2 * n_state * n_unique * row_bytes + grad_bytes) / bandwidth
        peer = tf_times.get(name) if tf_times else None
        rows.append((name, t, floor, "TF " + name, peer))

    t = _median_time(time_apply_adam, args.repeat)
    floor = (2 * 3 * N_DENSE * 4 + N_DENSE * 4) / bandwidth
    torch_t, torch_note = torch_adam(args.repeat)
    if torch_t is None:
        print(f"PyTorch: {torch_note}")
    rows.append(("apply_adam (10M)", t, floor, "torch Adam foreach", torch_t))

    header = (
        f"{'op':<26}{'sparsegrad ms':>14}{'floor ms':>10}{'x floor':>9}"
        f"   {'peer':<26}{'peer ms':>9}{'speedup':>9}"
    )
    print(header)
    print("-" * len(header))
    for name, t, floor, peer_name, peer in rows:
        peer_ms = f"{peer * 1e3:9.2f}" if peer else f"{'skipped':>9}"
        speed = f"{peer / t:8.2f}x" if peer else f"{'-':>9}"
        print(
            f"{name:<26}{t * 1e3:14.2f}{floor * 1e3:10.2f}{t / floor:9.2f}"
            f"   {peer_name:<26}{peer_ms}{speed}"
        )


if __name__ == "__main__":
    main()
