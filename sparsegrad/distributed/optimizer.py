"""An optimizer wrapper that makes a training loop data-parallel."""

from ..errors import InvalidArgumentError
from ..ops.clip_ops import clip_by_global_norm
from ..training.optimizers.base import Optimizer
from ..training.optimizers.checks import gradient_pairs
from . import comm as mpi
from .gradients import exchange
from .registry import sharded_mask

__all__ = ["DistributedOptimizer"]


class DistributedOptimizer:
    """Combine the gradients of every rank, then apply `optimizer` on each.

    Wrapping the optimizer is the one change a single-process training loop
    needs: :meth:`apply_gradients` first calls
    :func:`~sparsegrad.distributed.allreduce_gradients` (sparse gradients
    stay sparse; the gradients of a
    :class:`~sparsegrad.distributed.ShardedEmbedding` stay with their
    owner), then clips by the optimizer's ``global_clipnorm`` using the norm
    over all ranks, then lets the wrapped optimizer update the variables.
    Every rank then holds the same replicated variables and its own shard.

    Parameters
    ----------
    optimizer : sparsegrad.optimizers.Optimizer
        The optimizer of each rank.  Its slots stay where its variables are:
        the slots of a shard never move.
    comm : mpi4py.MPI.Intracomm, optional
        Default ``MPI.COMM_WORLD``.
    reduction : {"mean", "sum"}, default "mean"
        How the ranks' gradients combine (:func:`allreduce_gradients`).
    sparse_as_dense_threshold : float, optional
        See :func:`allreduce_gradients`.

    Raises
    ------
    TypeError
        If `optimizer` is not a sparsegrad optimizer, or `comm` not an
        mpi4py intracommunicator.
    InvalidArgumentError
        If `reduction` or `sparse_as_dense_threshold` is bad.

    Notes
    -----
    Attributes and methods other than :meth:`apply_gradients` and
    :meth:`minimize` are the wrapped optimizer's (:attr:`iterations`,
    ``get_slot``, ``save_state``, ``load_state``, ...).  Per-tensor
    ``clipnorm`` is refused for a sharded variable (its norm spans ranks);
    ``clipvalue`` and ``global_clipnorm`` work.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsegrad as sg
    >>> from sparsegrad.distributed import DistributedOptimizer
    >>> w = sg.Variable(np.ones((4, 2), np.float32))
    >>> opt = DistributedOptimizer(sg.optimizers.SGD(learning_rate=0.5))
    >>> g = sg.IndexedSlices(np.ones((1, 2), np.float32), [3], dense_shape=(4, 2))
    >>> _ = opt.apply_gradients([(g, w)])     # one rank: the mean is g itself
    >>> w.numpy()[:, 0], opt.iterations_count
    (array([1. , 1. , 1. , 0.5], dtype=float32), 1)
    """

    def __init__(self, optimizer, comm=None, *, reduction="mean",
                 sparse_as_dense_threshold=None):
        if not isinstance(optimizer, Optimizer):
            raise TypeError("DistributedOptimizer: optimizer must be a sparsegrad "
                            f"optimizer, got {type(optimizer).__name__}")
        if reduction not in ("mean", "sum"):
            raise InvalidArgumentError("DistributedOptimizer: reduction must be "
                                       f"'mean' or 'sum', got {reduction!r}")
        self.optimizer = optimizer
        self.comm = mpi.resolve(comm)
        self.reduction = reduction
        self.sparse_as_dense_threshold = sparse_as_dense_threshold

    def __getattr__(self, name):
        if name == "optimizer":  # not set yet (during unpickling)
            raise AttributeError(name)
        return getattr(self.optimizer, name)

    def __repr__(self):
        return (f"DistributedOptimizer({self.optimizer.__class__.__name__}, "
                f"rank {self.comm.Get_rank()} of {self.comm.Get_size()})")

    def apply_gradients(self, grads_and_vars):
        """Combine the gradients over the ranks and apply them (collective).

        Parameters
        ----------
        grads_and_vars : iterable of (gradient, Variable)
            This rank's gradients, for the same variables on every rank (a
            shard: this rank's shard).

        Returns
        -------
        Variable
            The wrapped optimizer's :attr:`iterations`.

        Raises
        ------
        InvalidArgumentError
            On every rank, if a gradient is bad on any rank or the ranks
            disagree (see :func:`allreduce_gradients`); nothing is updated
            anywhere then.
        """
        inner = self.optimizer

        def parse():
            grads, variables = [], []
            for _, grad, var in gradient_pairs(grads_and_vars):
                grads.append(grad)
                variables.append(var)
            if inner.clipnorm is not None and any(sharded_mask(variables)):
                raise InvalidArgumentError(
                    "DistributedOptimizer: clipnorm clips each tensor by its own "
                    "norm, which for a sharded variable spans ranks; use "
                    "global_clipnorm")
            return grads, variables

        grads, variables, mask = exchange(self.comm, parse, self.reduction,
                                          self.sparse_as_dense_threshold)
        limit = inner.global_clipnorm
        if limit is None:
            return inner.apply_gradients(zip(grads, variables))
        present = [k for k, g in enumerate(grads) if g is not None]
        clipped, _ = clip_by_global_norm(
            [grads[k] for k in present], limit, comm=self.comm,
            sharded=[mask[k] for k in present])
        for k, g in zip(present, clipped):
            grads[k] = g
        # the wrapped optimizer must not clip again by its own, local norm
        inner.global_clipnorm = None
        try:
            return inner.apply_gradients(zip(grads, variables))
        finally:
            inner.global_clipnorm = limit

    # the base class's: the gradient under a tape, then apply_gradients above
    minimize = Optimizer.minimize
