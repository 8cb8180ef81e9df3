"""Compiled kernels (private).

Hot loops only.  Every function here trusts its inputs: shapes, dtypes,
contiguity and index ranges are checked by the Python layer that calls it.
"""

import os as _os

# The kernels' OpenMP threads sleep between parallel regions instead of
# spinning, unless the user has chosen a policy.  In a training step the
# kernels alternate with BLAS calls whose own thread pool (OpenBLAS's) needs
# the same cores: spinning OpenMP threads took them and made a 2-core CTR step
# about 1.5x slower.  libgomp reads the variable once, when it is loaded, which
# is when the first kernel module below is imported.
# OMP_WAIT_POLICY_DEFAULTED says whether the value is sparsegrad's choice
# (the benchmark harness takes it back out of its peers' processes).
OMP_WAIT_POLICY_DEFAULTED = "OMP_WAIT_POLICY" not in _os.environ
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:
    from . import parallel as _parallel  # noqa: F401  (probe: are we built?)
except ImportError as _exc:  # pragma: no cover - depends on how it is run
    _here = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    raise ImportError(
        f"sparsegrad's compiled kernels are missing in {_here}. This happens when "
        "Python imports the source tree (for example 'python -m ...' run from the "
        "repository root) instead of the installed package. Run from another "
        "directory, use the 'sparsegrad' command, or build in place with "
        "'pip install -e .'."
    ) from _exc
