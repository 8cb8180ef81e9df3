"""The gradient of an embedding lookup costs the rows it touches.

Setting (issue 3): ``loss = reduce_sum(gather(W, ids))`` for a Variable ``W`` of
1,000,000 x 64 float32 and 16,384 Zipf(1.1) ids.  Each case has a forward pass
(recorded on a tape) and a backward pass; the table shows the medians of both
together and of the backward alone.

* ``sparse``: ``tape.gradient(loss, W)`` returns an IndexedSlices of 16,384
  rows (cost O(ids x 64)).
* ``dense, tape`` (the baseline of the ratio): the dense-gradient path of the
  same loss, written as ``reduce_sum(W * counts)`` with ``counts[i]`` the
  number of times row ``i`` occurs in ``ids`` (same value, same gradient), so
  the tape returns a dense 1,000,000 x 64 gradient.
* ``densify``: the sparse gradient followed by ``g.to_dense()``.  Its
  ``np.zeros`` is lazily zeroed by the OS, so this row does not pay for
  zeroing the untouched pages; whoever then reads the whole dense gradient
  does.
* ``numpy np.add.at``: ``np.zeros`` + ``np.add.at`` of the rows (no tape).
* PyTorch, when installed: ``torch.nn.functional.embedding(ids, W,
  sparse=True)`` + ``sum().backward()`` (a sparse COO gradient), and the same
  with ``sparse=False`` (a dense gradient), with the same thread count.

Two OpenMP runtimes (sparsegrad's libgomp and PyTorch's) live in this one
process; with the default active wait policy their idle threads spin against
each other and the PyTorch rows become several times slower and erratic on a
small machine.  The script therefore sets ``OMP_WAIT_POLICY=PASSIVE`` unless
the environment already sets it (it prints the policy it ran with).

Run: ``python benchmarks/bench_sparse_grad.py [--repeat 9] [--threads N]``.
The ``time_*`` functions are collectable by asv.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before any OpenMP starts

import argparse
import platform
import statistics
import time

import numpy as np

import sparsegrad as sg

N_ROWS, WIDTH, N_IDS = 1_000_000, 64, 16_384


def make_inputs(seed=0):
    rng = np.random.default_rng(seed)
    ids = ((rng.zipf(1.1, size=N_IDS) - 1) % N_ROWS).astype(np.int64)
    table = rng.standard_normal((N_ROWS, WIDTH), dtype=np.float32)
    return ids, table


_IDS, _TABLE = make_inputs()
_W = sg.Variable(_TABLE)
_COUNTS = np.bincount(_IDS, minlength=N_ROWS).astype(np.float32)[:, None]


# Each case: forward() -> state, backward(state) -> gradient.


def _sparse_forward():
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(sg.gather(_W, _IDS))
    return tape, loss


def _sparse_backward(state):
    tape, loss = state
    return tape.gradient(loss, _W)


def _densify_backward(state):
    return _sparse_backward(state).to_dense()


def _dense_forward():
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(_W * _COUNTS)
    return tape, loss


def _numpy_forward():
    return np.take(_TABLE, _IDS, axis=0).sum()


def _numpy_backward(state):
    dense = np.zeros((N_ROWS, WIDTH), np.float32)
    np.add.at(dense, _IDS, np.ones((N_IDS, WIDTH), np.float32))
    return dense


def time_sparse_gradient():
    g = _sparse_backward(_sparse_forward())
    assert isinstance(g, sg.IndexedSlices)


def time_dense_gradient_tape():
    _sparse_backward(_dense_forward())


def time_dense_gradient_densify():
    _densify_backward(_sparse_forward())


def time_dense_gradient_numpy():
    _numpy_backward(_numpy_forward())


def _torch_cases(n_threads):
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(n_threads)
    weight = torch.from_numpy(_TABLE.copy()).requires_grad_(True)
    ids = torch.from_numpy(_IDS)

    def forward(sparse):
        weight.grad = None
        return torch.nn.functional.embedding(ids, weight, sparse=sparse).sum()

    def backward(loss):
        loss.backward()
        return weight.grad

    return (
        torch.__version__,
        (lambda: forward(True)),
        (lambda: forward(False)),
        backward,
    )


def _timed_case(forward, backward):
    t0 = time.perf_counter()
    state = forward()
    t1 = time.perf_counter()
    backward(state)
    t2 = time.perf_counter()
    return t2 - t0, t2 - t1


def median_times(forward, backward, repeat):
    """Medians of (forward + backward, backward alone)."""
    _timed_case(forward, backward)  # warm up
    runs = [_timed_case(forward, backward) for _ in range(repeat)]
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
    )


def _check_equal():
    """The sparse gradient, densified, equals both dense gradients."""
    got = _densify_backward(_sparse_forward()).numpy()
    dense_tape = _sparse_backward(_dense_forward()).numpy()
    if not (
        np.array_equal(got, _numpy_backward(None)) and np.array_equal(got, dense_tape)
    ):
        raise AssertionError("sparse and dense gradients differ")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        sg.set_num_threads(args.threads)
    _check_equal()

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"numpy {np.__version__}"
    )
    policy = os.environ["OMP_WAIT_POLICY"]
    print(
        f"sparsegrad {sg.__version__}, OpenMP {sg.openmp_enabled()}, "
        f"threads {sg.get_num_threads()}, OMP_WAIT_POLICY={policy}"
    )
    print(
        f"W {N_ROWS} x {WIDTH} float32 Variable, {N_IDS} Zipf(1.1) ids "
        f"({np.unique(_IDS).size} distinct); loss = reduce_sum(gather(W, ids)); "
        f"medians of {args.repeat} runs\n"
    )

    cases = [
        ("sparsegrad sparse (IndexedSlices)", _sparse_forward, _sparse_backward),
        ("sparsegrad dense, tape (W * counts)", _dense_forward, _sparse_backward),
        ("sparsegrad sparse + to_dense()", _sparse_forward, _densify_backward),
        ("numpy zeros + np.add.at", _numpy_forward, _numpy_backward),
    ]
    torch_cases = _torch_cases(sg.get_num_threads())
    if torch_cases is None:
        print("PyTorch not installed: skipped\n")
    else:
        version, fwd_sparse, fwd_dense, bwd = torch_cases
        cases += [
            (f"torch {version} embedding(sparse=True)", fwd_sparse, bwd),
            (f"torch {version} embedding(sparse=False)", fwd_dense, bwd),
        ]
    header = f"{'case':<42}{'fwd+bwd':>10}{'ratio':>8}{'bwd only':>11}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    results = [median_times(fwd, bwd, args.repeat) for _, fwd, bwd in cases]
    base_total, base_bwd = results[0]
    for (name, _, _), (total, bwd) in zip(cases, results):
        print(
            f"{name:<42}{total * 1e3:>8.2f}ms{total / base_total:>7.1f}x"
            f"{bwd * 1e3:>9.2f}ms{bwd / base_bwd:>7.1f}x"
        )
    total_ratio = results[1][0] / base_total
    bwd_ratio = results[1][1] / base_bwd
    print(
        f"\nsparse vs dense-gradient path of the same loss: {total_ratio:.1f}x "
        f"(forward + backward), {bwd_ratio:.1f}x (backward alone); target >= 50x: "
        f"{'met' if min(total_ratio, bwd_ratio) >= 50 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
