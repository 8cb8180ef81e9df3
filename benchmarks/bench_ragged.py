"""sparsegrad.ragged.range (sparsegrad.bench.segment).

A thin entry point: it runs
``sparsegrad bench --filter segment/ragged_range_``
(the cases live in the installed package).  Options pass through, e.g.
``--quick``, ``--json FILE``, ``--python tensorflow=/path/to/python`` (or
``--tf-python /path/to/python``);
a ``--filter`` of your own replaces the default one.

Run: ``python benchmarks/bench_ragged.py``.
"""

import sys

from sparsegrad.bench.cli import main

if __name__ == "__main__":
    sys.exit(main(filters=["segment/ragged_range_"]))
