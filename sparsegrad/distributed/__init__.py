"""Data-parallel and row-sharded training over MPI (mpi4py).

Run a training script under ``mpiexec -n N``; every rank runs the same
script on its share of the data.

- :func:`allreduce_gradients` combines the ranks' gradients; sparse ones
  stay sparse (gathered distinct rows), dense ones are summed.
- :class:`DistributedOptimizer` wraps an optimizer so that a training loop
  changes by one line.
- ``sparsegrad.clip_by_global_norm(..., comm=comm)`` clips by the norm of
  every rank's gradients.
- :class:`ShardedEmbedding` splits a table by rows across the ranks; its
  optimizer slots never move.
- :func:`save_checkpoint` / :func:`load_checkpoint` write and read one set
  of files per rank.

Every exchange is deterministic (sums in rank order, computed by sparsegrad,
not by MPI) and gives the same bits on every rank.  Bad input on any rank
raises on every rank instead of hanging the job.  Needs mpi4py and an MPI
library: ``pip install "sparsegrad[mpi]"``; nothing else in sparsegrad
imports them.
"""

from .checkpoint import load_checkpoint, save_checkpoint
from .comm import bytes_sent, reset_bytes_sent
from .embedding import ShardedEmbedding, uniform_rows
from .gradients import allreduce_gradients
from .optimizer import DistributedOptimizer
from .registry import is_sharded

__all__ = [
    "allreduce_gradients",
    "DistributedOptimizer",
    "ShardedEmbedding",
    "uniform_rows",
    "save_checkpoint",
    "load_checkpoint",
    "is_sharded",
    "bytes_sent",
    "reset_bytes_sent",
]
