"""Starting MPI jobs from Python: which ``mpiexec``, with which options.

For the tools that launch jobs themselves (the MPI tests, the MPI
benchmark); a training script is started by the user's own ``mpiexec``.
"""

import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["mpiexec", "launcher_options"]


def mpiexec():
    """The ``mpiexec`` next to the running Python (a virtual environment's
    MPI wheel), else the one on PATH; None when there is none."""
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def launcher_options():
    """``(extra mpiexec arguments, extra environment)`` for the installed MPI.

    Open MPI refuses more ranks than cores, and any job as root, unless told
    otherwise; MPICH needs nothing.  Nothing extra when there is no mpiexec
    or it does not answer ``--version``.
    """
    command = mpiexec()
    if command is None:
        return [], {}
    try:
        version = subprocess.run([command, "--version"], capture_output=True,
                                 text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return [], {}
    if "Open MPI" not in version and "OpenRTE" not in version:
        return [], {}
    return ["--oversubscribe"], {"OMPI_ALLOW_RUN_AS_ROOT": "1",
                                 "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
