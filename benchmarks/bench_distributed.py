"""sparsegrad.distributed over MPI: bytes sent per step and weak scaling.

Two parts, each run by every rank of an MPI job (``mpiexec -n P``):

``bytes``
    One sparse gradient of a 1,000,000 x 64 float32 table: 16,384 ids per
    rank drawn from Zipf(1.1) (``numpy`` ``zipf``, taken modulo the rows, a
    seed per rank) with random rows.  It is combined with
    ``allreduce_gradients(..., reduction="sum")`` twice: by the sparse path
    (``sparse_as_dense_threshold=inf``: each rank's distinct rows, coalesced,
    gathered by every rank) and by the dense path (threshold 0: the table
    summed densely, then the touched rows kept).  Printed: the distinct rows
    (per rank, and of all ranks together), the payload bytes each rank sends
    (``sparsegrad.distributed.bytes_sent``) next to the analytic count, and
    the median time of ``--repeat`` calls (each call's time is the slowest
    rank's).  Analytic: the sparse path sends its ``d`` distinct rows (64
    float32 and an int64 index each) to the ``P - 1`` others,
    ``(P - 1) d (256 + 8)`` bytes; the dense path's rank-order sum sends
    ``2 (P - 1) / P`` of the 256 MB table, and the union of the touched rows
    ``2 (P - 1) / P`` of a byte per row.

    PyTorch's peer (``bench_distributed_torch.py``, its own MPI job with the
    same ids, rows and rank count; sparsegrad is never imported there):
    ``torch.distributed.all_reduce`` with the gloo backend of the sparse COO
    gradient ``nn.Embedding(sparse=True)`` produces for these ids, and of
    the dense table.  gloo coalesces the sparse tensor, then all-gathers its
    indices and rows in a ring; its bytes are analytic (torch counts none)
    next to what each process wrote during one call (``/proc/self/io``).
    ``--all`` runs it when torch is importable (``--no-torch``: not at all)
    and checks that its combined gradient matches sparsegrad's to float32
    summation order.

``scaling``
    Weak scaling of the demo's embedding model in MPI mode
    (``sparsegrad.demo.models.EmbeddingMLP(comm=...)``: a sharded
    2**20 x 8 table, the MLP and the linear term on every rank, lazy Adam
    through ``DistributedOptimizer`` with the global-norm clip) on the
    synthetic click data: ``--per-rank`` examples per rank and step (the
    global batch grows with P), ``--warmup`` steps, then the median of
    ``--steps`` step times (each step's time is the slowest rank's), and the
    examples per second of the whole job.

Run a part under mpiexec, or let ``--all`` launch the jobs (``bytes`` on 2
and 4 ranks, ``scaling`` on 1, 2 and 4) and print one table::

    mpiexec -n 2 python benchmarks/bench_distributed.py bytes
    mpiexec -n 4 python benchmarks/bench_distributed.py scaling --per-rank 512
    mpiexec -n 2 python benchmarks/bench_distributed_torch.py   # torch's peer
    python benchmarks/bench_distributed.py --all [--ranks 1 2 4]

Every rank runs one kernel thread (the driver sets
``SPARSEGRAD_NUM_THREADS=1`` and ``OMP_NUM_THREADS=1``).  With more ranks
than cores the ranks share cores and MPI's busy polling competes with the
work: such rows say "oversubscribed" and measure the scheduler as much as
sparsegrad.  Needs ``pip install "sparsegrad[mpi]"``.
"""

import argparse
import importlib.util
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROWS, WIDTH, IDS_PER_RANK, ZIPF_A = 1_000_000, 64, 16_384, 1.1
INDEX_BYTES = 8            # the sparse path sends int64 indices


# -- part 1: bytes per step ----------------------------------------------------


def zipf_ids(rank, seed=0):
    """The ids of `rank`: Zipf(ZIPF_A) draws modulo ROWS, int64."""
    rng = np.random.default_rng(seed + rank)
    return (rng.zipf(ZIPF_A, IDS_PER_RANK) - 1) % ROWS


def rank_rows(rank):
    """The gradient rows of `rank`, one per id: standard normal float32."""
    return np.random.default_rng(100 + rank).standard_normal(
        (IDS_PER_RANK, WIDTH), dtype=np.float32)


def close(values, reference):
    """Whether two combined gradients' rows agree to float32 summation order:
    within 1e-5 of the largest row value (a hot row sums thousands)."""
    values, reference = np.asarray(values), np.asarray(reference)
    scale = float(np.abs(reference).max()) if reference.size else 0.0
    return values.shape == reference.shape and bool(
        np.allclose(values, reference, rtol=1e-5, atol=1e-5 * scale))


def analytic_bytes(size, distinct):
    """Bytes a rank with `distinct` rows sends: ``(sparse, dense)``."""
    sparse = (size - 1) * distinct * (WIDTH * 4 + INDEX_BYTES)
    chunk = -(-ROWS * WIDTH // size)
    dense = 2 * (size - 1) * chunk * 4 + 2 * ROWS * (size - 1) // size
    return sparse, dense


def _slowest(comm, seconds):
    return comm.allreduce(seconds, op=_mpi().MAX)


def _mpi():
    from mpi4py import MPI

    return MPI


def run_bytes(comm, repeat, result_path=None):
    """Part ``bytes`` on every rank of `comm`; the result dict (on rank 0)."""
    import sparsegrad as sg
    from sparsegrad.distributed import allreduce_gradients, bytes_sent, reset_bytes_sent

    rank, size = comm.Get_rank(), comm.Get_size()
    ids = zipf_ids(rank)
    values = rank_rows(rank)
    grad = sg.IndexedSlices(values, ids, dense_shape=(ROWS, WIDTH))
    distinct = int(np.unique(ids).size)
    union = np.unique(np.concatenate(comm.allgather(np.unique(ids)))).size
    result = {"ranks": size, "distinct_per_rank": comm.gather(distinct),
              "distinct_all": int(union), "paths": {}}
    outputs = {}
    for path, threshold in (("sparse", float("inf")), ("dense", 0.0)):
        def call(threshold=threshold):
            return allreduce_gradients([grad], comm, reduction="sum",
                                       sparse_as_dense_threshold=threshold)[0]

        comm.Barrier()
        reset_bytes_sent()
        outputs[path] = call()
        sent = bytes_sent()
        times = []
        for _ in range(repeat):
            comm.Barrier()
            start = time.perf_counter()
            call()
            times.append(_slowest(comm, time.perf_counter() - start))
        result["paths"][path] = {"bytes_sent": comm.gather(sent),
                                 "seconds": times}
    sparse, dense = outputs["sparse"], outputs["dense"]
    same = (np.array_equal(sparse.indices.numpy(), dense.indices.numpy())
            and np.array_equal(sparse.values.numpy(), dense.values.numpy()))
    result["same_result"] = all(comm.allgather(bool(same)))
    if rank == 0 and result_path:
        np.savez(result_path, indices=sparse.indices.numpy(),
                 values=sparse.values.numpy())
    return result if rank == 0 else None


def torch_analytic_bytes(size, distinct):
    """Bytes each rank sends in torch's gloo allreduce: ``(sparse, dense)``
    lists, one entry per rank (see bench_distributed_torch.py).  Sparse:
    the ring all-gathers of 9 int64 of metadata and of the coalesced
    indices (int64) and rows; rank r forwards every block but rank r + 1's.
    Dense: the ring allreduce, 2 (P - 1) / P of the table (on average)."""
    metadata = (size - 1) * 9 * 8
    row = WIDTH * 4 + 8
    sparse = [metadata + row * (sum(distinct) - distinct[(r + 1) % size])
              for r in range(size)]
    dense = [2 * (size - 1) * ROWS * WIDTH * 4 / size] * size
    return sparse, dense


def floor_seconds(sent_per_rank, bandwidth):
    """The memory-bandwidth floor of an exchange on one machine: every byte
    a rank sends is read once from its buffer and written once into the
    receiver's (2 x the bytes all ranks send), at `bandwidth` bytes read
    plus written per second (the harness's copy bandwidth)."""
    return 2 * float(sum(sent_per_rank)) / bandwidth


def bytes_rows(result, bandwidth):
    """Table rows of a ``bytes`` result of sparsegrad or torch."""
    size = result["ranks"]
    distinct = result["distinct_per_rank"]
    torch = result.get("library") == "torch"
    rows = []
    for path, index in (("sparse", 0), ("dense", 1)):
        if torch:
            analytic = torch_analytic_bytes(size, distinct)[index]
            written = result["paths"][path]["bytes_written"]
            sent = (f"{np.mean(written) / 2**20:,.2f} (wchar)"
                    if min(written) >= 0 else "-")
            same = {True: "yes (tol)", False: "NO", None: "-"}[
                result.get("matches_sparsegrad")]
            same = same if result["same_result"] else "NO"
        else:
            analytic = [analytic_bytes(size, d)[index] for d in distinct]
            sent = f"{np.mean(result['paths'][path]['bytes_sent']) / 2**20:,.2f}"
            same = "yes (bits)" if result["same_result"] else "NO"
        median = statistics.median(result["paths"][path]["seconds"])
        floor = floor_seconds(analytic, bandwidth)
        rows.append((
            "torch (gloo)" if torch else "sparsegrad", str(size), path,
            f"{int(np.mean(distinct)):,}", f"{result['distinct_all']:,}",
            sent, f"{np.mean(analytic) / 2**20:,.2f}", f"{median * 1e3:,.1f}",
            f"{floor * 1e3:,.1f}", f"{median / floor:,.1f}", same))
    return rows


BYTES_HEAD = ("library", "ranks", "path", "distinct rows/rank",
              "distinct rows (all)", "MiB sent/rank", "analytic MiB",
              "ms (median)", "floor ms", "x floor", "same result")


# -- part 2: weak scaling --------------------------------------------------------


def run_scaling(comm, per_rank, warmup, steps):
    """Part ``scaling`` on every rank of `comm`; the result dict (on rank 0)."""
    from sparsegrad.demo.data import make_ctr_dataset
    from sparsegrad.demo.distributed import DistributedRunner
    from sparsegrad.demo.models import EmbeddingMLP

    size = comm.Get_size()
    batch = per_rank * size
    # the train split is 80% of the examples: enough for every step
    data = make_ctr_dataset(-(-(warmup + steps) * batch * 5 // 4) + 10, seed=0)
    model = EmbeddingMLP(data.n_buckets, data.n_fields, seed=0, comm=comm)
    runner = DistributedRunner(comm)
    times, losses = [], []
    for k, (part, rows) in enumerate(runner.batches(data.train, batch)):
        if k == warmup + steps:
            break
        comm.Barrier()
        start = time.perf_counter()
        losses.append(runner.step(model, part, rows))
        seconds = _slowest(comm, time.perf_counter() - start)
        if k >= warmup:
            times.append(seconds)
    if comm.Get_rank() != 0:
        return None
    return {"ranks": size, "per_rank": per_rank, "global_batch": batch,
            "seconds": times, "first_loss": losses[0], "last_loss": losses[-1]}


def scaling_rows(results):
    """Table rows of ``scaling`` results (one per rank count)."""
    cores = os.cpu_count() or 1
    base = None
    rows = []
    for result in sorted(results, key=lambda r: r["ranks"]):
        median = statistics.median(result["seconds"])
        base = median if result["ranks"] == 1 else base
        efficiency = "-" if base is None else f"{base / median:.2f}"
        note = "oversubscribed" if result["ranks"] > cores else ""
        rows.append((str(result["ranks"]), f"{result['global_batch']:,}",
                     f"{median * 1e3:,.1f}", f"{min(result['seconds']) * 1e3:,.1f}",
                     f"{result['global_batch'] / median:,.0f}", efficiency, note))
    return rows


SCALING_HEAD = ("ranks", "global batch", "ms/step (median)", "ms/step (best)",
                "examples/s", "efficiency", "note")


# -- output and driver -----------------------------------------------------------


def format_table(head, rows):
    widths = [max(len(r[k]) for r in (head, *rows)) for k in range(len(head))]

    def fmt(cells):
        return "  ".join(c.ljust(w) if k == 0 else c.rjust(w)
                         for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([fmt(head), "  ".join("-" * w for w in widths)]
                     + [fmt(r) for r in rows])


def machine_line(threads):
    import sparsegrad as sg

    return (f"machine: {platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} CPUs; sparsegrad {sg.__version__}, "
            f"{threads} kernel thread(s) per rank")


def print_bytes(results, bandwidth):
    print(f"memory-bandwidth floor: {bandwidth / 1e9:.2f} GB/s (the better of a "
          "one-thread np.copyto and a copy on all cores, bytes read + written); "
          "floor ms = 2 x the bytes all ranks send / that bandwidth")
    print(f"Bytes per step: a sparse gradient of a {ROWS:,} x {WIDTH} float32 "
          f"table, {IDS_PER_RANK:,} Zipf({ZIPF_A}) ids per rank, "
          "allreduce_gradients(reduction='sum')")
    results = sorted(results, key=lambda r: (r["ranks"], r.get("library") == "torch"))
    print(format_table(BYTES_HEAD, [row for r in results
                                     for row in bytes_rows(r, bandwidth)]))
    if any(r.get("library") == "torch" for r in results):
        print(textwrap.fill(
            "torch (gloo): torch.distributed.all_reduce of the uncoalesced "
            "sparse COO gradient (nn.Embedding(sparse=True)'s) and of the "
            "dense table, its own MPI job; torch counts no bytes: MiB "
            "sent/rank (wchar) is what the process wrote by system calls "
            "during one call (gloo's TCP payload and headers), analytic "
            "from gloo's algorithms. same result: sparsegrad's sparse and "
            "dense paths give the same bits; torch's sparse and dense "
            "results agree and match sparsegrad's within float32 "
            "summation order (tol).", width=79))


def print_scaling(results):
    first = results[0]
    print(f"Weak scaling: the demo's embedding model under MPI, "
          f"{first['per_rank']} examples per rank per step, median of "
          f"{len(first['seconds'])} steps; efficiency = time on 1 rank / time "
          f"on P ranks ({os.cpu_count()} cores: more ranks are oversubscribed)")
    print(format_table(SCALING_HEAD, scaling_rows(results)))


def free_port():
    """A TCP port of 127.0.0.1 free at the time of asking."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TORCH_SCRIPT = Path(__file__).resolve().parent / "bench_distributed_torch.py"


def launch(part, ranks, options, directory):
    """Run ``mpiexec -n ranks`` this script's `part` (or, for part
    ``bytes-torch``, bench_distributed_torch.py); its result dict."""
    import sparsegrad
    from sparsegrad.distributed.launcher import launcher_options, mpiexec

    out = Path(directory) / f"{part}-{ranks}.json"
    extra, extra_env = launcher_options()
    if part == "bytes-torch":
        script = [str(TORCH_SCRIPT)]
        extra_env = dict(extra_env, MASTER_ADDR="127.0.0.1",
                         MASTER_PORT=str(free_port()))
    else:
        script = [os.path.abspath(__file__), part]
    command = [mpiexec(), *extra, "-n", str(ranks), sys.executable, *script,
               "--json", str(out), *options]
    env = dict(os.environ, SPARSEGRAD_NUM_THREADS="1", OMP_NUM_THREADS="1",
               **extra_env)
    root = str(Path(sparsegrad.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n"
                         f"{done.stdout}{done.stderr}")
    return json.loads(out.read_text())


def drive(args):
    from sparsegrad.distributed.launcher import mpiexec

    if mpiexec() is None:
        raise SystemExit('no mpiexec on PATH: pip install "sparsegrad[mpi]"')
    print(machine_line(1))
    common = ["--repeat", str(args.repeat)]
    scaling = ["--per-rank", str(args.per_rank), "--warmup", str(args.warmup),
               "--steps", str(args.steps)]
    have_torch = importlib.util.find_spec("torch") is not None
    with tempfile.TemporaryDirectory() as directory:
        byte_results = []
        for p in args.ranks:
            if p < 2 or args.skip_bytes:
                continue
            ours = Path(directory) / f"sparsegrad-{p}.npz"
            byte_results.append(launch(
                "bytes", p, [*common, "--result", str(ours)], directory))
            if not have_torch or args.no_torch:
                continue
            theirs = Path(directory) / f"torch-{p}.npz"
            result = launch("bytes-torch", p, [*common, "--result", str(theirs)],
                            directory)
            with np.load(ours) as a, np.load(theirs) as b:
                result["matches_sparsegrad"] = bool(
                    np.array_equal(a["indices"], b["indices"])
                    and close(b["values"], a["values"]))
            byte_results.append(result)
        scaling_results = [launch("scaling", p, scaling, directory)
                           for p in args.ranks if not args.skip_scaling]
    if not have_torch:
        print("note: torch is not importable: no PyTorch rows")
    print()
    if byte_results:
        from sparsegrad.bench.harness import measure_bandwidth

        print_bytes(byte_results, measure_bandwidth()["bandwidth"])
        print()
    if scaling_results:
        print_scaling(scaling_results)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Run a part under mpiexec, or --all to launch every job.")
    parser.add_argument("part", nargs="?", choices=("bytes", "scaling"),
                        help="the part this MPI job runs")
    parser.add_argument("--all", action="store_true",
                        help="launch the jobs with mpiexec and print one table")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4],
                        help="rank counts of --all (default 1 2 4; bytes "
                             "skips 1)")
    parser.add_argument("--repeat", type=int, default=7,
                        help="timed calls of each path of part bytes")
    parser.add_argument("--per-rank", type=int, default=512,
                        help="examples per rank and step of part scaling")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20,
                        help="timed steps of part scaling")
    parser.add_argument("--json", metavar="FILE",
                        help="rank 0 writes the result of the part here")
    parser.add_argument("--result", metavar="FILE.npz",
                        help="part bytes: rank 0 writes the sparse path's "
                             "combined gradient here")
    parser.add_argument("--no-torch", action="store_true",
                        help="--all: leave out the PyTorch peer of part bytes")
    parser.add_argument("--skip-bytes", action="store_true",
                        help="--all: leave out part bytes")
    parser.add_argument("--skip-scaling", action="store_true",
                        help="--all: leave out part scaling")
    args = parser.parse_args(argv)
    if args.all == (args.part is not None):
        parser.error("give a part (under mpiexec) or --all")
    if args.all:
        return drive(args)
    comm = _mpi().COMM_WORLD
    if args.part == "bytes":
        result = run_bytes(comm, args.repeat, args.result)
    else:
        result = run_scaling(comm, args.per_rank, args.warmup, args.steps)
    if result is None:
        return 0
    if args.json:
        Path(args.json).write_text(json.dumps(result))
    else:
        import sparsegrad as sg

        print(machine_line(sg.get_num_threads()))
        if args.part == "bytes":   # the other ranks have finished
            from sparsegrad.bench.harness import measure_bandwidth

            print_bytes([result], measure_bandwidth()["bandwidth"])
        else:
            print_scaling([result])
    return 0


if __name__ == "__main__":
    sys.exit(main())
