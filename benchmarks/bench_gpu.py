"""GPU benchmark: sparsegrad's CUDA kernels against PyTorch and the HBM floor.

Cases (issue 13), float32, on the first GPU:

* ``adagrad_v2``: ``sparse_apply_adagrad_v2(..., coalesce_duplicates=True)``
  on a 10,000,000 x 128 table with 1,000,000 Zipf(1.1) row ids (the hottest
  row occurs about 95,000 times); PyTorch: ``torch.optim.Adagrad`` stepping a
  sparse (COO) gradient, which also sums the duplicates first.
* ``adagrad_v2_in_order``: the same op with TensorFlow's default, each
  duplicate applied in turn (one serial chain of updates per row: the hot row
  bounds it); no peer does this.
* ``lazy_adam``: ``optimizers.Adam(lazy=True)`` on the same table and
  gradient (an IndexedSlices); PyTorch: ``torch.optim.SparseAdam``.
* ``ragged_range``: ``ragged.range`` of 1,000,000 rows, 100 elements each on
  average (int64).
* ``segment_sum``: ``math.segment_sum`` of 4,000,000 x 128 rows into sorted
  segments of 16 rows on average.

Each (case, library) pair runs in a process of its own (``--worker``), in
rounds that alternate the libraries; each process times ``--repeat`` steps
with CUDA events after two warm-up steps and reports the median.  The table
gives the median over rounds, and the floor: the bytes a case must move
(read and write, each once) over the device-to-device copy bandwidth measured
in the same run (``cupy.copyto`` of 1 GiB, best of 10; a copy reads and
writes, so bandwidth = 2 x size / time).

Run: ``python benchmarks/bench_gpu.py [--rounds 3] [--repeat 10] [--quick]
[--json out.json]``.  Needs CuPy and a GPU; the PyTorch column needs torch
with CUDA.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

CASES = ("adagrad_v2", "adagrad_v2_in_order", "lazy_adam", "ragged_range",
         "segment_sum")
PEERS = {"adagrad_v2": "torch", "lazy_adam": "torch"}
ZIPF_A = 1.1


def sizes(quick):
    if quick:
        return dict(rows=100_000, width=128, ids=10_000, ranges=10_000,
                    seg_rows=40_000)
    return dict(rows=10_000_000, width=128, ids=1_000_000, ranges=1_000_000,
                seg_rows=4_000_000)


def zipf_ids(n, n_rows, seed=0):
    rng = np.random.default_rng(seed)
    return ((rng.zipf(ZIPF_A, size=n) - 1) % n_rows).astype(np.int64)


def host_inputs(case, s):
    """The host arrays of a case, the same for every library."""
    rng = np.random.default_rng(1)
    if case in ("adagrad_v2", "adagrad_v2_in_order", "lazy_adam"):
        ids = zipf_ids(s["ids"], s["rows"])
        grad = rng.standard_normal((s["ids"], s["width"]), dtype=np.float32)
        return dict(ids=ids, grad=grad)
    if case == "ragged_range":
        limits = rng.integers(0, 201, size=s["ranges"]).astype(np.int64)
        return dict(starts=np.zeros_like(limits), limits=limits,
                    deltas=np.ones_like(limits))
    if case == "segment_sum":
        lengths = rng.integers(1, 32, size=s["seg_rows"] // 16)
        ids = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
        ids = ids[: s["seg_rows"]]
        data = rng.standard_normal((ids.size, s["width"]), dtype=np.float32)
        return dict(ids=ids, data=data)
    raise ValueError(case)


def floor_bytes(case, s, inputs):
    """Bytes a case must move at least: every touched byte read or written once."""
    w4 = s["width"] * 4
    if case in ("adagrad_v2", "adagrad_v2_in_order", "lazy_adam"):
        unique = np.unique(inputs["ids"]).size
        n_state = 3 if case == "lazy_adam" else 2           # var + slots
        return (inputs["grad"].nbytes + inputs["ids"].nbytes
                + 2 * n_state * unique * w4)
    if case == "ragged_range":
        total = int(np.sum(inputs["limits"]))
        return 3 * inputs["limits"].nbytes + 8 * total + 8 * (inputs["limits"].size + 1)
    if case == "segment_sum":
        n_seg = int(inputs["ids"][-1]) + 1
        return inputs["data"].nbytes + inputs["ids"].nbytes + n_seg * w4
    raise ValueError(case)


# ---------------------------------------------------------------------------
# Workers: one (case, library) per process.


def _cupy_timer(step, repeat):
    import cupy

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(2):
        step()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return statistics.median(times)


def _torch_timer(step, repeat):
    import torch

    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def worker_sparsegrad(case, s, inputs, repeat):
    import cupy

    import sparsegrad as sg

    if case in ("adagrad_v2", "adagrad_v2_in_order"):
        var = cupy.zeros((s["rows"], s["width"]), cupy.float32)
        accum = cupy.full((s["rows"], s["width"]), 0.1, cupy.float32)
        grad, ids = cupy.asarray(inputs["grad"]), cupy.asarray(inputs["ids"])
        coalesce = case == "adagrad_v2"

        def step():
            sg.training_ops.sparse_apply_adagrad_v2(
                var, accum, 0.01, 1e-7, grad, ids, coalesce_duplicates=coalesce)
        return _cupy_timer(step, repeat)
    if case == "lazy_adam":
        var = sg.Variable(cupy.zeros((s["rows"], s["width"]), cupy.float32))
        grad = sg.IndexedSlices(cupy.asarray(inputs["grad"]),
                                cupy.asarray(inputs["ids"]),
                                (s["rows"], s["width"]))
        opt = sg.optimizers.Adam(0.001, lazy=True)

        def step():
            opt.apply_gradients([(grad, var)])
        return _cupy_timer(step, repeat)
    if case == "ragged_range":
        starts, limits, deltas = (cupy.asarray(inputs[k])
                                  for k in ("starts", "limits", "deltas"))

        def step():
            sg.ragged.range(starts, limits, deltas)
        return _cupy_timer(step, repeat)
    if case == "segment_sum":
        data, ids = cupy.asarray(inputs["data"]), cupy.asarray(inputs["ids"])

        def step():
            sg.math.segment_sum(data, ids)
        return _cupy_timer(step, repeat)
    raise ValueError(case)


def worker_torch(case, s, inputs, repeat):
    import torch

    dev = torch.device("cuda")
    ids = torch.from_numpy(inputs["ids"]).to(dev)
    grad = torch.from_numpy(inputs["grad"]).to(dev)
    param = torch.nn.Parameter(torch.zeros((s["rows"], s["width"]), device=dev))
    sparse = torch.sparse_coo_tensor(ids[None, :], grad, param.shape)
    if case == "adagrad_v2":
        opt = torch.optim.Adagrad([param], lr=0.01, initial_accumulator_value=0.1,
                                  eps=1e-7)
    elif case == "lazy_adam":
        opt = torch.optim.SparseAdam([param], lr=0.001)
    else:
        raise ValueError(case)

    def step():
        param.grad = sparse
        opt.step()
    return _torch_timer(step, repeat)


def copy_bandwidth():
    """Device-to-device copy bandwidth in bytes/s (reads + writes)."""
    import cupy

    n = 1 << 28                                   # 1 GiB of float32
    src = cupy.ones((n,), cupy.float32)
    dst = cupy.empty_like(src)
    return 2 * src.nbytes / _cupy_timer(lambda: cupy.copyto(dst, src), 10)


def run_worker(args):
    s = sizes(args.quick)
    if args.worker == "bandwidth":
        print(json.dumps({"bandwidth": copy_bandwidth()}))
        return
    lib, case = args.worker.split(":")
    inputs = host_inputs(case, s)
    fn = worker_sparsegrad if lib == "sparsegrad" else worker_torch
    seconds = fn(case, s, inputs, args.repeat)
    print(json.dumps({"seconds": seconds, "floor_bytes": floor_bytes(case, s, inputs)}))


def _spawn(spec, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", spec,
           "--repeat", str(args.repeat)] + (["--quick"] if args.quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        return None, proc.stderr.strip().splitlines()[-1:] or ["failed"]
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return run_worker(args)
    try:
        import cupy

        name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else name
    except Exception as exc:
        print(f"bench_gpu: needs CuPy and a GPU ({exc})")
        return 1
    cases = [c for c in args.cases.split(",") if c]
    results = {c: {} for c in cases}
    errors = {}
    bandwidths = []
    for r in range(args.rounds):
        out, _ = _spawn("bandwidth", args)
        if out:
            bandwidths.append(out["bandwidth"])
        for case in cases:
            libs = ["sparsegrad"] + ([PEERS[case]] if case in PEERS else [])
            if r % 2:
                libs.reverse()
            for lib in libs:
                out, err = _spawn(f"{lib}:{case}", args)
                if out is None:
                    errors[(case, lib)] = err
                    continue
                results[case].setdefault(lib, []).append(out["seconds"])
                results[case]["floor_bytes"] = out["floor_bytes"]
    bw = max(bandwidths) if bandwidths else float("nan")
    print(f"device: {name}; copy bandwidth {bw / 1e9:.0f} GB/s; "
          f"{args.rounds} rounds x {args.repeat} steps, medians")
    print("| case | sparsegrad ms | torch ms | torch / sparsegrad | floor ms "
          "| sparsegrad / floor |")
    print("| --- | --- | --- | --- | --- | --- |")
    table = {}
    for case in cases:
        row = results[case]
        sg_s = statistics.median(row["sparsegrad"]) if "sparsegrad" in row else None
        th_s = statistics.median(row["torch"]) if "torch" in row else None
        floor = row.get("floor_bytes", float("nan")) / bw
        table[case] = dict(sparsegrad=sg_s, torch=th_s, floor=floor)

        def ms(x):
            return "—" if x is None else f"{x * 1e3:.2f}"

        ratio = "—" if sg_s is None or th_s is None else f"{th_s / sg_s:.2f}x"
        over = "—" if sg_s is None else f"{sg_s / floor:.2f}x"
        print(f"| {case} | {ms(sg_s)} | {ms(th_s)} | {ratio} | {ms(floor)} | {over} |")
    for (case, lib), err in errors.items():
        print(f"note: {lib} on {case} failed: {' '.join(err)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=name, bandwidth=bw, table=table), f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
