"""Optimizer steps on a sparse gradient: Adam(lazy=True) and Adagrad against
torch.optim (sparsegrad.bench.training_ops).

A thin entry point: it runs
``sparsegrad bench --filter training_ops/adam_lazy_step,training_ops/adagrad_step``
(the cases live in the installed package).  Options pass through, e.g.
``--quick``, ``--json FILE``, ``--python tensorflow=/path/to/python`` (or
``--tf-python /path/to/python``);
a ``--filter`` of your own replaces the default one.

Run: ``python benchmarks/bench_optimizers.py``.
"""

import sys

from sparsegrad.bench.cli import main

if __name__ == "__main__":
    sys.exit(main(filters=["training_ops/adam_lazy_step", "training_ops/adagrad_step"]))
