"""The global norm of gradients spread over the ranks of an MPI job.

:func:`sparsegrad.clip_by_global_norm` with ``comm=`` clips by the norm of
every rank's gradients together: each rank sums the squares of its tensors,
and one small exchange adds them up.  A *sharded* tensor (a rank's rows of a
table split across ranks, such as the gradient of a
:class:`sparsegrad.distributed.ShardedEmbedding`) is a different part of
the whole on every rank, so its squares are summed over the ranks; any
other tensor is *replicated* (every rank holds the same copy, as after
:func:`sparsegrad.distributed.allreduce_gradients`) and counts once.

The communicator is duck-typed (mpi4py's lowercase ``allgather``); this
module never imports MPI.
"""

import math

import numpy as np

from ..errors import InvalidArgumentError
from ..framework.collective import checked_allgather

__all__ = ["check_sharded", "norm_across_ranks"]


def check_sharded(sharded, n, op_name="clip_by_global_norm"):
    """`sharded` as a list of `n` bools (None: no tensor is sharded)."""
    if sharded is None:
        return [False] * n
    if isinstance(sharded, (str, bytes)):
        raise TypeError(f"{op_name}: sharded must be a sequence of bools, got "
                        f"{sharded!r}")
    try:
        mask = list(sharded)
    except TypeError:
        raise TypeError(f"{op_name}: sharded must be a sequence of bools, got "
                        f"{sharded!r}") from None
    if len(mask) != n:
        raise InvalidArgumentError(
            f"{op_name}: sharded has {len(mask)} entries, t_list has {n}")
    for k, flag in enumerate(mask):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{op_name}: sharded[{k}] must be a bool, got {flag!r}")
    return [bool(flag) for flag in mask]


def norm_across_ranks(comm, local_squares, op_name="clip_by_global_norm"):
    """The global norm over the ranks of `comm`, the same bits on every rank.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        Every rank makes the same call.
    local_squares : callable
        Checks this rank's tensors and returns ``(dtype name, sum of squares
        of the sharded tensors, sum of squares of the replicated ones)``
        (float64 sums).  If it raises on any rank, every rank raises.

    Returns
    -------
    0-d ndarray
        ``sqrt(sum over ranks of the sharded sums + rank 0's replicated
        sum)``, in the tensors' dtype; the sums are added in rank order.

    Raises
    ------
    InvalidArgumentError
        If the ranks' tensors are of different dtypes (on every rank).
    """
    gathered = checked_allgather(comm, local_squares)
    dtypes = [g[0] for g in gathered]
    if len(set(dtypes)) > 1:
        raise InvalidArgumentError(
            f"{op_name}: the tensors of the ranks have different dtypes "
            f"({', '.join(f'rank {r}: {d}' for r, d in enumerate(dtypes))})")
    total = 0.0
    for _, sharded_squares, _ in gathered:
        total += sharded_squares
    total += gathered[0][2]
    return np.asarray(math.sqrt(total), dtypes[0])
