"""Transcendental ops: the price of the same bits on every CPU.

sparsegrad's ``exp``, ``log1p``, ``tanh``, ``sigmoid`` and ``log_softmax`` give
the same bits on every CPU: float32 by its own vectorised code (SSE2 and AVX2
builds, no FMA), float64 by the C library element by element.  NumPy's ufuncs
take CPU-specific SIMD code whose bits differ between CPUs.  This prints, per
op, size and dtype, the median time of sparsegrad's op, of the NumPy ufunc
formula (in this process) and of PyTorch's op (in a process of its own, when
torch is installed), in microseconds, with ratios.

    python benchmarks/bench_elementwise.py [--threads N]

Module-level ``time_*`` functions are collectable by asv.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import timeit

import numpy as np

SIZES = (1_000, 1_000_000)
DTYPES = ("float32", "float64")
OPS = ("exp", "log1p", "tanh", "sigmoid", "log_softmax")


def _inputs(size, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(size).astype(dtype) * 3
    return x.reshape(-1, 1000) if size >= 1000 else x


def _numpy_ops():
    def sigmoid(x):
        return 1 / (1 + np.exp(-x))

    def log_softmax(x):
        s = x - x.max(axis=-1, keepdims=True)
        return s - np.log(np.sum(np.exp(s), axis=-1, keepdims=True))

    return {"exp": np.exp, "log1p": lambda x: np.log1p(np.abs(x)),
            "tanh": np.tanh, "sigmoid": sigmoid, "log_softmax": log_softmax}


def _sparsegrad_ops():
    import sparsegrad as sg

    return {"exp": sg.exp, "log1p": lambda x: sg.log1p(np.abs(x)), "tanh": sg.tanh,
            "sigmoid": sg.sigmoid, "log_softmax": sg.nn.log_softmax}


def _torch_ops():
    import torch

    return {"exp": torch.exp, "log1p": lambda x: torch.log1p(torch.abs(x)),
            "tanh": torch.tanh, "sigmoid": torch.sigmoid,
            "log_softmax": lambda x: torch.log_softmax(x, dim=-1)}


def _median_us(fn, arg):
    fn(arg)
    size = arg.numel() if hasattr(arg, "numel") else arg.size
    number = max(1, 200_000 // size)
    times = timeit.repeat(lambda: fn(arg), number=number, repeat=9)
    return statistics.median(times) / number * 1e6


def _measure(library, threads):
    """{op/size/dtype: microseconds} for one library, in this process."""
    if library == "torch":
        import torch

        torch.set_num_threads(threads)
        ops = _torch_ops()

        def convert(a):
            return torch.from_numpy(a)
    else:
        ops = _numpy_ops() if library == "numpy" else _sparsegrad_ops()

        def convert(a):
            return a
    out = {}
    for name in OPS:
        for size in SIZES:
            for dtype in DTYPES:
                x = convert(_inputs(size, dtype))
                out[f"{name}/{size}/{dtype}"] = _median_us(ops[name], x)
    return out


def _in_own_process(library, threads):
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import json, sys; sys.path.insert(0, {here!r}); "
            "import bench_elementwise as b; "
            f"print(json.dumps(b._measure({library!r}, {threads})))")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                              text=True, check=True, cwd=os.path.expanduser("~"))
    except subprocess.CalledProcessError as exc:
        print(f"{library}: skipped ({exc.stderr.strip().splitlines()[-1]})")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


_X32 = _inputs(1_000_000, "float32")


def time_exp_float32_1m():
    import sparsegrad as sg

    sg.exp(_X32)


def time_log_softmax_float32_1m():
    import sparsegrad as sg

    sg.nn.log_softmax(_X32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import sparsegrad as sg

    sg.set_num_threads(args.threads)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"sparsegrad {sg.__version__} on {sg.get_num_threads()} threads; "
          f"NumPy {np.__version__} (1 thread, its SIMD); medians of 9 runs, us")
    ours = _measure("sparsegrad", args.threads)
    numpy = _measure("numpy", args.threads)
    torch = _in_own_process("torch", args.threads)
    header = f"{'op':12s} {'size':>9s} {'dtype':8s} {'sparsegrad':>11s} {'numpy':>9s}"
    header += f" {'x numpy':>8s}"
    if torch:
        header += f" {'torch':>9s} {'x torch':>8s}"
    print(header)
    for key, us in ours.items():
        name, size, dtype = key.split("/")
        row = (f"{name:12s} {int(size):9d} {dtype:8s} {us:11.1f} {numpy[key]:9.1f} "
               f"{us / numpy[key]:8.2f}")
        if torch:
            row += f" {torch[key]:9.1f} {us / torch[key]:8.2f}"
        print(row)


if __name__ == "__main__":
    main()
