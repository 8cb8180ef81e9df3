"""What a benchmark case is: :class:`Case`.

Each area module of :mod:`sparsegrad.bench` (``slices``, ``training_ops``,
``clip``, ``segment``, ``autodiff``, ``end_to_end``) has a module-level list
``CASES`` of :class:`Case`.  The harness runs every (case, library) pair in a
process of its own, so no two libraries (nor their OpenMP runtimes) share one.

A case with ``steps`` is a steady-state case (a training step, say): each of
its processes times ``steps`` consecutive calls after the warm-up instead of
``--repeat``, and the harness reports the medians of its blocks of ``block``
consecutive calls, so that a step that gets slower (or faster) as a run goes
on shows in the table.

Every worker also measures how much its process's resident memory grew
from before the setup to the end of the warm-up
(:mod:`~sparsegrad.bench.memory`); a case with ``memory`` shows sparsegrad's
figure in the table, and one with ``memory_baseline`` is compared with
another case's.  A setup whose library cannot run the case at all (no
kernel for the dtype, say) raises :class:`Unsupported`, and the table says
why in a footnote.
"""

from dataclasses import dataclass, field
from typing import Callable, Optional

# The libraries a case may be timed with, in the order the table shows them.
LIBRARIES = ("sparsegrad", "tensorflow", "torch", "fbgemm", "numpy")


class Unsupported(Exception):
    """Raised by a case's setup when its library cannot run the case (it has
    no kernel for the case's dtype, say); the message, one line that names
    the library, is the reason the table's footnote gives, and the library
    is reported missing.

    Examples
    --------
    >>> str(Unsupported("fbgemm 1.8.0 has no CPU kernel for bfloat16 weights"))
    'fbgemm 1.8.0 has no CPU kernel for bfloat16 weights'
    """


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
    floor_flops : callable, optional
        ``floor_flops(quick) -> int``: the floating-point operations of the
        operation's matrix products; the harness divides them by the
        measured float32 matrix-product rate and adds the result to the
        floor.  None where the operation has no matrix product.
    threads : int, optional
        Threads every library gets for this case, whatever ``--threads``
        says (a case about what surrounds a kernel runs on one).  None (the
        default) for the run's.
    steps : int, optional
        Timed calls per process for a steady-state case (each process makes
        them one after the other, after the warm-up), instead of the
        ``--repeat`` of the run.  None (the default) for an ordinary case.
    block : int, optional
        Consecutive calls per block of a steady-state case (default 10): the
        harness takes the median of each block, and the table shows the
        slowest block median over the fastest.  Ignored without `steps`.
    memory : bool, optional
        Show sparsegrad's resident-memory growth (from before the setup to
        after the warm-up, measured in its worker process) in the table.
        Every worker measures it; the JSON output has it for every case.
    memory_baseline : str, optional
        The name of another case to compare this one's memory growth with
        (a bfloat16 table's case with its float32 one): a line under the
        table gives the ratio when both run.  Implies `memory`.

    Raises
    ------
    ValueError
        If `steps` or `block` is given and below 1.
    """

    name: str
    description: str
    setups: dict[str, Callable] = field(default_factory=dict)
    floor_bytes: Optional[Callable] = None
    floor_flops: Optional[Callable] = None
    threads: Optional[int] = None
    steps: Optional[int] = None
    block: int = 10
    memory: bool = False
    memory_baseline: Optional[str] = None

    def __post_init__(self):
        if self.steps is not None and self.steps < 1:
            raise ValueError(f"case {self.name!r}: steps must be at least 1, "
                             f"got {self.steps!r}")
        if self.block < 1:
            raise ValueError(f"case {self.name!r}: block must be at least 1, "
                             f"got {self.block!r}")
        if self.memory_baseline is not None:
            object.__setattr__(self, "memory", True)
