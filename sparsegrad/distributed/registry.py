"""Which Variables hold one rank's shard of a larger table.

:class:`~sparsegrad.distributed.ShardedEmbedding` registers its shard here;
:func:`~sparsegrad.distributed.allreduce_gradients`, the distributed global
norm and :class:`~sparsegrad.distributed.DistributedOptimizer` look it up:
the gradient of a shard is already complete on its owner (the lookup's
backward sent it there), so it is not exchanged again, and its squares count
once per rank in the global norm.
"""

import weakref

__all__ = ["register_sharded", "is_sharded", "sharded_mask"]

# id of the Variable -> the Variable, for as long as it lives
_shards = weakref.WeakValueDictionary()


def register_sharded(variable):
    """Mark `variable` as this rank's shard of a sharded table."""
    _shards[id(variable)] = variable


def is_sharded(variable):
    """Whether `variable` is a rank's shard of a sharded table.

    Parameters
    ----------
    variable : object

    Returns
    -------
    bool
        True for the ``shard`` of a
        :class:`~sparsegrad.distributed.ShardedEmbedding`.
    """
    return _shards.get(id(variable)) is variable


def sharded_mask(variables):
    """``[is_sharded(v) for v in variables]``."""
    return [is_sharded(v) for v in variables]
