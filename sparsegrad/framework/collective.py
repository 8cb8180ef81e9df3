"""Checks that every rank of an MPI communicator agrees on, without importing MPI.

A collective call in which one rank raises while the others go on to the
exchange hangs the job.  :func:`checked_allgather` runs a rank's checks and
the small exchange that follows them as one step: every rank learns whether
any rank failed, and then all of them raise, or none.

`comm` is anything with mpi4py's lowercase ``allgather`` (an
``mpi4py.MPI.Comm``); this module never imports mpi4py, so the ops can take a
communicator without depending on it.
"""

__all__ = ["RankError", "checked_allgather", "raise_agreed"]


class RankError(RuntimeError):
    """Another rank failed a collective call; raised where the error class of
    that rank cannot be rebuilt from its message."""


def _portable(exc):
    """What other ranks need to raise `exc` too: its class and message."""
    return (type(exc), str(exc))


def raise_agreed(rank, failures):
    """Raise the first failure of `failures` (a list, one entry per rank, None
    where that rank passed) on this rank, in the same class on every rank.

    The rank that failed first (lowest rank) raises with its own message;
    the others say which rank failed and why.  Returns when no rank failed.
    """
    for source, failure in enumerate(failures):
        if failure is None:
            continue
        cls, message = failure
        if source != rank:
            message = f"on rank {source}: {message}"
        try:
            error = cls(message)
        except Exception:  # an error class with another signature
            error = RankError(f"{cls.__name__} {message}")
        raise error
    return None


def checked_allgather(comm, compute):
    """Run ``compute()`` on this rank and gather its result from every rank.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        Every rank of `comm` must make the same call.
    compute : callable
        Called with no argument; checks this rank's input and returns a small
        picklable payload (shapes, counts, a float).

    Returns
    -------
    list
        The payload of every rank, in rank order.

    Raises
    ------
    Exception
        If ``compute`` raised on any rank: on every rank, the exception of
        the lowest failing rank, of its class (a :class:`RankError` if that
        class cannot be rebuilt from a message).
    """
    try:
        payload, failure = compute(), None
    except Exception as exc:
        payload, failure = None, _portable(exc)
        own = exc
    gathered = comm.allgather((failure, payload))
    failures = [f for f, _ in gathered]
    if failure is not None and all(f is None for f in failures[: comm.Get_rank()]):
        raise own            # this rank failed first: its own traceback
    raise_agreed(comm.Get_rank(), failures)
    return [p for _, p in gathered]
