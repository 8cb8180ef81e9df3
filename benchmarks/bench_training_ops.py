"""The raw training kernels: sparse_apply_adagrad_v2, sparse_apply_ftrl and dense
apply_adam (sparsegrad.bench.training_ops).

A thin entry point: it runs
``sparsegrad bench --filter training_ops/sparse_apply_,training_ops/apply_adam``
(the cases live in the installed package).  Options pass through, e.g.
``--quick``, ``--json FILE``, ``--python tensorflow=/path/to/python`` (or
``--tf-python /path/to/python``);
a ``--filter`` of your own replaces the default one.

Run: ``python benchmarks/bench_training_ops.py``.
"""

import sys

from sparsegrad.bench.cli import main

if __name__ == "__main__":
    sys.exit(main(filters=["training_ops/sparse_apply_", "training_ops/apply_adam"]))
