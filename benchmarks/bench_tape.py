"""Tape overhead on a chain of 100 elementwise ops (sparsegrad.bench.autodiff).

A thin entry point: it runs
``sparsegrad bench --filter autodiff/tape_chain``
(the cases live in the installed package).  Options pass through, e.g.
``--quick``, ``--json FILE``, ``--python tensorflow=/path/to/python`` (or
``--tf-python /path/to/python``);
a ``--filter`` of your own replaces the default one.

Run: ``python benchmarks/bench_tape.py``.
"""

import sys

from sparsegrad.bench.cli import main

if __name__ == "__main__":
    sys.exit(main(filters=["autodiff/tape_chain"]))
