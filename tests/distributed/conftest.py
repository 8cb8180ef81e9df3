"""Real MPI jobs for the tests of sparsegrad.distributed.

``mpirun(n, worker, *args)`` starts ``mpiexec -n n python worker.py args`` (a
script of ``tests/distributed/workers``) and returns its completed process;
the workers write what they computed under a directory the test gives them,
and the test compares it with a single-process run.  Every test here skips,
saying why, when mpi4py or mpiexec is missing (``pip install ".[mpi]"``
brings both).
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sparsegrad.distributed.launcher import launcher_options, mpiexec

WORKERS = Path(__file__).resolve().parent / "workers"
ROOT = Path(__file__).resolve().parents[2]
# A job that has not ended by then hangs: it is killed and the test fails.
TIMEOUT = 240


def _missing():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return 'mpi4py is not installed (pip install ".[mpi]")'
    if mpiexec() is None:
        return 'no mpiexec on PATH (pip install ".[mpi]" brings MPICH\'s)'
    return None


MISSING = _missing()
OPTIONS, ENVIRONMENT = launcher_options() if MISSING is None else ([], {})


def pytest_collection_modifyitems(config, items):
    if MISSING is None:
        return
    skip = pytest.mark.skip(reason=f"MPI tests need mpi4py and mpiexec: {MISSING}")
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)


def run_job(n, worker, *args, timeout=TIMEOUT, env=None):
    """Run ``mpiexec -n n python workers/<worker> args``; the CompletedProcess.

    Kills the whole job (its process group) if it outlives `timeout`.
    """
    command = [mpiexec(), *OPTIONS, "-n", str(n), sys.executable, str(WORKERS / worker),
               *map(str, args)]
    environment = {**os.environ, **ENVIRONMENT}
    # one kernel thread per rank: the ranks share the machine's cores
    environment.setdefault("SPARSEGRAD_NUM_THREADS", "1")
    environment.setdefault("OMP_NUM_THREADS", "1")
    # the workers import the sparsegrad this test process imported (a
    # worktree's build, or the installed one)
    import sparsegrad

    package_root = str(Path(sparsegrad.__file__).resolve().parents[1])
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, environment.get("PYTHONPATH")) if p)
    if env:
        environment.update(env)
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               env=environment, start_new_session=True)
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        pytest.fail(f"mpiexec -n {n} {worker} hung (killed after {timeout} s):\n{out}")
    return subprocess.CompletedProcess(command, process.returncode, out, None)


@pytest.fixture(scope="session")
def mpirun():
    """``mpirun(n, worker, *args, check=True)``: run an MPI job, fail on a
    non-zero exit with its output."""

    def run(n, worker, *args, check=True, **kwargs):
        done = run_job(n, worker, *args, **kwargs)
        if check and done.returncode != 0:
            pytest.fail(f"mpiexec -n {n} {worker} exited {done.returncode}:\n"
                        f"{done.stdout}")
        return done

    return run
