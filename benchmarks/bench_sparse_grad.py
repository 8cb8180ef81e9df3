"""The gradient of reduce_sum(gather(W, ids)), sparse and dense
(sparsegrad.bench.autodiff).

A thin entry point: it runs
``sparsegrad bench --filter autodiff/gather_sum_gradient``
(the cases live in the installed package).  Options pass through, e.g.
``--quick``, ``--json FILE``, ``--python tensorflow=/path/to/python`` (or
``--tf-python /path/to/python``);
a ``--filter`` of your own replaces the default one.

Run: ``python benchmarks/bench_sparse_grad.py``.
"""

import sys

from sparsegrad.bench.cli import main

if __name__ == "__main__":
    sys.exit(main(filters=["autodiff/gather_sum_gradient"]))
