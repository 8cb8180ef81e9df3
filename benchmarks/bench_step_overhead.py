"""Python overhead of a small sparse optimizer step.

Setting (issue 9): ``Adagrad.apply_gradients`` with a 64 x 16 float32
``IndexedSlices`` gradient (64 distinct random rows) of a 100,000 x 16 table,
on one kernel thread, so that the step is dominated by what happens around the
kernel.  Printed, each the median of ``--repeat`` timed loops of ``--number``
steps (after a warm-up):

* ``Adagrad.apply_gradients``: the whole optimizer step (gradient checks,
  hyper-parameters in the variable's dtype, the kernel, the step counter);
* ``training_ops.sparse_apply_adagrad_v2``: the raw op on plain arrays (every
  argument checked, then the kernel);
* ``kernel only``: the compiled ``sparse_adagrad_v2_by_row`` driver called
  directly on prepared arrays, the floor for the two above.

Run: ``python benchmarks/bench_step_overhead.py [--repeat 15] [--number 2000]``.
The ``time_*`` functions are collectable by asv.
"""

import argparse
import os
import platform
import statistics
import timeit

import numpy as np

import sparsegrad as sg
from sparsegrad import training_ops
from sparsegrad.training.training_ops import core

N_ROWS, WIDTH, N_IDS = 100_000, 16, 64


def make_inputs(seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.choice(N_ROWS, size=N_IDS, replace=False).astype(np.int64)
    values = (rng.standard_normal((N_IDS, WIDTH)) * 1e-2).astype(np.float32)
    table = (rng.standard_normal((N_ROWS, WIDTH)) * 1e-2).astype(np.float32)
    return ids, values, table


_IDS, _VALUES, _TABLE = make_inputs()
_VAR = sg.Variable(_TABLE.copy())
_OPT = sg.optimizers.Adagrad(learning_rate=0.01)
_GRAD = sg.IndexedSlices(_VALUES, _IDS, dense_shape=(N_ROWS, WIDTH))
_RAW_VAR = _TABLE.copy()
_RAW_ACC = np.full_like(_TABLE, 0.1)


def time_optimizer_step():
    _OPT.apply_gradients([(_GRAD, _VAR)])


def time_raw_op():
    training_ops.sparse_apply_adagrad_v2(
        _RAW_VAR, _RAW_ACC, 0.01, 1e-7, _VALUES, _IDS, coalesce_duplicates=True
    )


def _kernel_call():
    """The compiled driver alone, arguments prepared once."""
    kernels = core.kernels()
    hp = np.array([0.01, 1e-7, 1.0])
    scratch = np.empty(kernels.by_row_scratch_size(N_IDS, WIDTH, 1), np.int32)
    driver = kernels.sparse_adagrad_v2_by_row
    var, acc = _RAW_VAR, _RAW_ACC

    def run():
        driver(var, acc, acc, acc, _VALUES, _IDS, hp, 1.0, True, 1, scratch)

    return run


def _median_us(fn, number, repeat):
    fn()
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6, min(times) / number * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    sg.set_num_threads(1)
    print(f"machine: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs; sparsegrad {sg.__version__}, 1 thread")
    print(f"Adagrad step: {N_IDS} x {WIDTH} float32 IndexedSlices, "
          f"{N_ROWS:,} x {WIDTH} table")
    cases = [
        ("Adagrad.apply_gradients", time_optimizer_step),
        ("training_ops.sparse_apply_adagrad_v2", time_raw_op),
        ("kernel only", _kernel_call()),
    ]
    print(f"{'case':40s} {'median us':>10s} {'min us':>8s}")
    for name, fn in cases:
        median, best = _median_us(fn, args.number, args.repeat)
        print(f"{name:40s} {median:10.2f} {best:8.2f}")


if __name__ == "__main__":
    main()
