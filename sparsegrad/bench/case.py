"""What a benchmark case is: :class:`Case`.

Each area module of :mod:`sparsegrad.bench` (``slices``, ``training_ops``,
``clip``, ``segment``, ``autodiff``, ``end_to_end``) has a module-level list
``CASES`` of :class:`Case`.  The harness runs every (case, library) pair in a
process of its own, so no two libraries (nor their OpenMP runtimes) share one.
"""

from dataclasses import dataclass, field
from typing import Callable, Optional

# The libraries a case may be timed with, in the order the table shows them.
LIBRARIES = ("sparsegrad", "tensorflow", "torch", "numpy")


@dataclass(frozen=True)
class Case:
    """One benchmark case.

    Parameters
    ----------
    name : str
        ``"area/what"``, unique across the suite; ``--filter`` matches it.
    description : str
        One line for the table and the docs: shapes, dtypes, distribution.
    setups : dict
        Library name (one of :data:`LIBRARIES`) -> ``setup(quick)``.  ``setup``
        imports its library itself, builds the inputs (deterministic, from a
        fixed seed) and returns a zero-argument callable: one timed run of the
        operation, which must finish its work before it returns.  ``quick`` is
        True for a reduced size (used by the tests and ``--quick``).
    floor_bytes : callable, optional
        ``floor_bytes(quick) -> int``: the bytes the operation must move at
        least (read plus written); the harness divides them by the measured
        bandwidth to give the floor.  None where no floor makes sense.
    """

    name: str
    description: str
    setups: dict[str, Callable] = field(default_factory=dict)
    floor_bytes: Optional[Callable] = None
