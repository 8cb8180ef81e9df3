"""MPI worker of tests/distributed/test_demo.py: ``sparsegrad demo`` runs in one job.

Usage: mpiexec -n N python demo_job.py OUTDIR TAG ARG... [+ TAG ARG...]...

Runs ``sparsegrad.__main__.main(["demo", ARG...])`` once per group (groups
are separated by ``+``), one after the other in the same processes (an
mpiexec launch costs more than a small run).  Every rank writes what each run
printed to ``OUTDIR/TAG.rank<r>.out`` and ``.err`` and its exit status to
``OUTDIR/TAG.rank<r>.status``.
"""

import contextlib
import sys
from pathlib import Path

from mpi4py import MPI

from sparsegrad.__main__ import main


def groups(argv):
    group = []
    for arg in argv:
        if arg == "+":
            yield group
            group = []
        else:
            group.append(arg)
    yield group


def run(outdir, tag, args):
    rank = MPI.COMM_WORLD.Get_rank()
    stem = outdir / f"{tag}.rank{rank}"
    with open(f"{stem}.out", "w") as out, open(f"{stem}.err", "w") as err, \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(["demo", *args])
        except SystemExit as exc:       # argparse rejected an option
            status = exc.code
    Path(f"{stem}.status").write_text(str(status))
    MPI.COMM_WORLD.Barrier()


if __name__ == "__main__":
    outdir = Path(sys.argv[1])
    for tag, *args in groups(sys.argv[2:]):
        run(outdir, tag, args)
