"""segment_sum and unsorted_segment_sum (sparsegrad.bench.segment).

A thin entry point: it runs
``sparsegrad bench --filter segment/segment_sum_,segment/unsorted_segment_sum_``
(the cases live in the installed package).  Options pass through, e.g.
``--quick``, ``--json FILE``, ``--python tensorflow=/path/to/python`` (or
``--tf-python /path/to/python``);
a ``--filter`` of your own replaces the default one.

Run: ``python benchmarks/bench_segment.py``.
"""

import sys

from sparsegrad.bench.cli import main

if __name__ == "__main__":
    sys.exit(main(filters=["segment/segment_sum_", "segment/unsorted_segment_sum_"]))
