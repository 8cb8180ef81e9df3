"""Tape overhead: record and differentiate a chain of 100 elementwise ops.

Plain ``time_*`` functions (asv-collectable) on seeded 4x4 float32 inputs.
Running the file prints a table of medians and, when PyTorch is installed,
the same chain under PyTorch eager autograd with the ratio (target: <= 2x).

    python benchmarks/bench_tape.py
"""

import statistics
import sys
import timeit

import numpy as np

import sparsegrad as sg

N_OPS = 100
_rng = np.random.default_rng(0)
X0 = _rng.standard_normal((4, 4)).astype(np.float32)
W0 = (0.5 + 0.5 * _rng.random((4, 4))).astype(np.float32)
B0 = (0.1 * _rng.standard_normal((4, 4))).astype(np.float32)

_x = sg.constant(X0)
_w = sg.constant(W0)
_b = sg.constant(B0)


def _chain_sg(x, w, b):
    """25 rounds of (mul by tensor, add tensor, tanh, sigmoid): 100 ops."""
    y = x
    for _ in range(N_OPS // 4):
        y = sg.tanh(y * w + b)
        y = sg.sigmoid(y)
    return y


def time_forward_no_tape():
    """The chain with no tape active (op overhead only)."""
    _chain_sg(_x, _w, _b)


def time_record_only():
    """Record the chain on a tape, no backward pass."""
    with sg.GradientTape() as tape:
        tape.watch(_x)
        _chain_sg(_x, _w, _b)


def time_record_and_gradient():
    """Record the chain and differentiate sum(y) w.r.t. x."""
    with sg.GradientTape() as tape:
        tape.watch(_x)
        y = _chain_sg(_x, _w, _b)
    tape.gradient(y, _x)


def time_numpy_forward():
    """The NumPy baseline: the same arithmetic on bare arrays."""
    y = X0
    for _ in range(N_OPS // 4):
        y = np.tanh(y * W0 + B0)
        y = 1 / (1 + np.exp(-y))


def _torch_fn():
    try:
        import torch
    except ImportError:
        return None
    x = torch.tensor(X0, requires_grad=True)
    w = torch.tensor(W0)
    b = torch.tensor(B0)

    def run():
        y = x
        for _ in range(N_OPS // 4):
            y = torch.tanh(y * w + b)
            y = torch.sigmoid(y)
        (g,) = torch.autograd.grad(y.sum(), x)
        return g

    return run


def _median_us(fn, number=50, repeat=15):
    fn()
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def _check_same_gradient(torch_run):
    with sg.GradientTape() as tape:
        tape.watch(_x)
        y = _chain_sg(_x, _w, _b)
    ours = tape.gradient(y, _x).numpy()
    theirs = torch_run().numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)


def main():
    rows = [
        ("numpy forward only", time_numpy_forward),
        ("sparsegrad forward, no tape", time_forward_no_tape),
        ("sparsegrad record only", time_record_only),
        ("sparsegrad record + gradient", time_record_and_gradient),
    ]
    torch_run = _torch_fn()
    if torch_run is not None:
        import torch

        torch.set_num_threads(1)
        _check_same_gradient(torch_run)
        rows.append(("torch eager record + grad", torch_run))
    results = {}
    print(
        f"chain of {N_OPS} elementwise ops on a 4x4 float32 tensor "
        f"(median of 15 runs; microseconds per chain)"
    )
    print(f"{'case':34s} {'us':>10s} {'us/op':>8s}")
    for label, fn in rows:
        us = _median_us(fn)
        results[label] = us
        print(f"{label:34s} {us:10.1f} {us / N_OPS:8.2f}")
    if torch_run is not None:
        ratio = (
            results["sparsegrad record + gradient"]
            / results["torch eager record + grad"]
        )
        print(
            f"ratio sparsegrad / torch (record + gradient): {ratio:.2f} (target <= 2.0)"
        )
    else:
        print("torch is not installed: comparison skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
