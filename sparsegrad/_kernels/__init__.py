"""Compiled kernels (private).

Hot loops only.  Every function here trusts its inputs: shapes, dtypes,
contiguity and index ranges are checked by the Python layer that calls it.
"""

import os as _os

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
