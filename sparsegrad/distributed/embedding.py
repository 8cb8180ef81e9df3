"""An embedding table split by rows over the ranks of an MPI communicator.

Row ``i`` of a :class:`ShardedEmbedding` lives on rank ``i % p`` (``p``
ranks), at row ``i // p`` of that rank's ``shard`` Variable: no rank ever
holds, or allocates, the whole table, so a table larger than one process's
memory trains as well as a small one.

A lookup is a collective: each rank sends the distinct ids it needs to their
owners (one ``Alltoallv``), the owners answer with the rows (a second one),
and each rank expands the rows to the shape of its ids.  The backward pass
mirrors it: each rank sums its gradient rows per distinct id (in a fixed
order) and sends the sums to the owners, whose ``shard`` gradient is then the
sum over the ranks of every rank's gradient: the same result, up to the order
of the float additions, as one process computing the gradient of the sum of
the ranks' losses over the whole table.

The default initializer, :func:`uniform_rows`, is a function of the global
row and column only (an integer hash), so a table is the same whatever the
number of ranks, the CPU, or the order the rows were made in.
"""

import operator

import numpy as np

from ..autodiff.recording import record_operation
from ..errors import InvalidArgumentError
from ..framework import sparse_rows
from ..framework.backend import backend_of
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, wrap
from ..framework.variable import Variable
from . import registry
from .comm import (
    alltoallv,
    checked_allgather,
    exchange_counts,
    resolve,
    to_host,
)

__all__ = ["ShardedEmbedding", "uniform_rows"]

_MASK64 = (1 << 64) - 1
# splitmix64's increment and finalizer multipliers
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
# About this many table entries are hashed at once by uniform_rows (bounds
# its uint64 temporaries, whatever the number of rows asked for).
_BLOCK_ENTRIES = 1 << 16


def _int_argument(value, name, low, where):
    """`value` as a Python int >= `low` (bool refused); InvalidArgumentError
    naming `name` otherwise."""
    if isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{where}: {name} must be an int, got {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(
            f"{where}: {name} must be an int, got {value!r}"
        ) from None
    if value < low:
        raise InvalidArgumentError(f"{where}: {name} must be >= {low}, got {value}")
    return value


def _float_dtype(dtype, where):
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise InvalidArgumentError(
            f"{where}: dtype must be a floating-point dtype, got {dtype!r}"
        ) from None
    if dtype.kind != "f":
        raise InvalidArgumentError(
            f"{where}: dtype must be a floating-point dtype (float32, float64), "
            f"got {dtype}"
        )
    return dtype


def _seed_argument(seed, where):
    seed = _int_argument(seed, "seed", 0, where)
    if seed > _MASK64:
        raise InvalidArgumentError(f"{where}: seed must be < 2**64, got {seed}")
    return seed


def _mix_int(z):
    """splitmix64's finalizer on one Python int (mod 2**64)."""
    z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
    z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
    return z ^ (z >> 31)


def _mix_array(z):
    """splitmix64's finalizer on a uint64 array, in place (products wrap)."""
    z ^= z >> np.uint64(30)
    z *= np.uint64(_MIX1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(_MIX2)
    z ^= z >> np.uint64(31)
    return z


def uniform_rows(rows, dim, *, seed=0, scale=0.05, dtype="float32"):
    """Rows of the default embedding table: uniform in ``[-scale, scale)``.

    Entry ``(i, j)`` of the table (global row ``i``, column ``j``) depends on
    ``(seed, i * dim + j)`` only, through integer arithmetic, so it is the
    same on every CPU, for any number of ranks, and whichever rows are asked
    for together.  With ``k = i * dim + j`` and splitmix64's finalizer
    ``mix``, all modulo ``2**64``::

        h = mix(mix(seed) + (k + 1) * 0x9E3779B97F4A7C15)
        u = (h >> 11) * 2**-53                  # in [0, 1), exact in float64
        value = u * (2 * scale) - scale         # float64, then rounded to dtype

    Parameters
    ----------
    rows : array_like of int, 1-D
        Global row ids, each >= 0 (repeats allowed).
    dim : int
        Columns of the table, >= 1.
    seed : int, default=0
        In ``[0, 2**64)``.
    scale : float, default=0.05
        Half the width of the interval, > 0 and finite.
    dtype : str or numpy.dtype, default="float32"
        A floating-point dtype.

    Returns
    -------
    ndarray of shape (len(rows), dim)
        Values in ``[-scale, scale)`` before the rounding to `dtype` (which
        may round the largest ones up to ``scale``).

    Raises
    ------
    InvalidArgumentError
        If `rows` is not 1-D of an integer dtype or holds a negative id, or
        `dim`, `seed`, `scale` or `dtype` is not as described.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.distributed import uniform_rows
    >>> table = uniform_rows(np.arange(5), 3, seed=7)
    >>> table.shape, table.dtype
    ((5, 3), dtype('float32'))
    >>> bool((np.abs(table) <= np.float32(0.05)).all())
    True
    >>> np.array_equal(uniform_rows([4, 1], 3, seed=7), table[[4, 1]])
    True
    """
    where = "uniform_rows"
    try:
        rows = to_host(sparse_rows.index_array(rows, "rows"))
        rows = sparse_rows.as_index_array(rows, "rows")
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"{where}: {exc}") from None
    if rows.size and int(rows.min()) < 0:
        raise InvalidArgumentError(
            f"{where}: rows must be >= 0, got {int(rows.min())}"
        )
    dim = _int_argument(dim, "dim", 1, where)
    seed = _seed_argument(seed, where)
    dtype = _float_dtype(dtype, where)
    try:
        scale = float(scale)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"{where}: scale must be a positive finite number, got {scale!r}"
        ) from None
    if not (np.isfinite(scale) and scale > 0):
        raise InvalidArgumentError(
            f"{where}: scale must be a positive finite number, got {scale!r}"
        )
    base = np.uint64(_mix_int(seed))
    columns = np.arange(dim, dtype=np.uint64) + np.uint64(1)
    out = np.empty((rows.shape[0], dim), dtype)
    step = max(1, _BLOCK_ENTRIES // dim)
    for start in range(0, rows.shape[0], step):
        block = rows[start:start + step].astype(np.uint64)
        # (k + 1) * golden + mix(seed), with k = i * dim + j; wraps mod 2**64
        z = block[:, None] * np.uint64(dim) + columns
        z *= np.uint64(_GOLDEN)
        z += base
        _mix_array(z)
        u = (z >> np.uint64(11)).astype(np.float64)
        u *= 2.0 ** -53
        u *= 2.0 * scale
        u -= scale
        out[start:start + step] = u
    return out


class ShardedEmbedding:
    """An embedding table whose rows are spread over the ranks of `comm`.

    Row ``i`` is owned by rank ``i % size`` and stored at row ``i // size``
    of :attr:`shard`, a Variable of shape ``(len(range(rank, num_rows,
    size)), dim)``: nothing of the size of the whole table is ever allocated.
    The shard is registered with
    :func:`~sparsegrad.distributed.registry.register_sharded`, so
    :func:`~sparsegrad.distributed.allreduce_gradients` does not exchange its
    gradient again (the lookup's backward already sent each row's gradient
    to its owner).

    Construction is collective: every rank of `comm` must create the table,
    with the same `num_rows`, `dim`, `dtype` and `seed`.

    Parameters
    ----------
    num_rows : int
        Rows of the whole table, >= 1.
    dim : int
        Columns, >= 1.
    comm : mpi4py.MPI.Intracomm, optional
        Defaults to ``MPI.COMM_WORLD``.
    dtype : str or numpy.dtype, default="float32"
        A floating-point dtype.
    initializer : callable, optional
        ``initializer(rows)`` gets the global ids of this rank's rows (a 1-D
        int64 array) and returns their values, shape ``(len(rows), dim)``.
        By default, ``uniform_rows(rows, dim, seed=seed, dtype=dtype)``: the
        table does not depend on the number of ranks.
    seed : int, default=0
        The seed of the default initializer, in ``[0, 2**64)``.
    name : str, default="embeddings"
        Shown in messages; the shard is named ``"<name>/shard-<rank>-of-<size>"``.

    Attributes
    ----------
    num_rows, dim : int
    dtype : numpy.dtype
    comm : mpi4py.MPI.Intracomm
    rank, size : int
        This process's rank in `comm`, and the number of ranks.
    shard : Variable
        This rank's rows, trainable, in host memory.
    name : str

    Raises
    ------
    InvalidArgumentError
        On every rank, if any rank passed a bad argument, if the ranks
        disagree on `num_rows`, `dim`, `dtype` or `seed` (the message names
        the argument and each rank's value), or if `initializer` returned
        an array of another shape on any rank.
    TypeError
        On every rank, if `initializer` is not callable or `name` is not a
        str on any rank; on the calling rank, before any exchange, if
        `comm` is not an mpi4py intracommunicator.
    Exception
        Whatever `initializer` raised on a rank, on every rank (of its
        class, see :func:`~sparsegrad.framework.collective.checked_allgather`).

    Notes
    -----
    The shard lives in host memory: a CuPy array returned by `initializer`
    is refused (the MPI exchanges stage through the host).

    Examples
    --------
    With one process the shard is the whole table:

    >>> import numpy as np
    >>> import sparsegrad as sg
    >>> from sparsegrad.distributed import ShardedEmbedding, uniform_rows
    >>> emb = ShardedEmbedding(10, 4, seed=3)
    >>> emb.shard.shape, emb.owned_rows()
    ((10, 4), array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]))
    >>> ids = np.array([[1, 7], [7, 7]])
    >>> with sg.GradientTape() as tape:
    ...     loss = sg.reduce_sum(emb(ids))
    >>> np.array_equal(emb(ids).numpy(), uniform_rows(np.arange(10), 4, seed=3)[ids])
    True
    >>> grad = tape.gradient(loss, emb.shard)
    >>> grad.deduplicate().indices.numpy()
    array([1, 7])
    >>> grad.to_dense().numpy()[7]
    array([3., 3., 3., 3.], dtype=float32)
    """

    def __init__(self, num_rows, dim, comm=None, *, dtype="float32",
                 initializer=None, seed=0, name="embeddings"):
        self.comm = resolve(comm)
        where = f"ShardedEmbedding {name!r}"

        def check():
            if not isinstance(name, str):
                raise TypeError(f"ShardedEmbedding: name must be a str, got {name!r}")
            if initializer is not None and not callable(initializer):
                raise TypeError(
                    f"{where}: initializer must be callable or None, got "
                    f"{initializer!r}"
                )
            return (_int_argument(num_rows, "num_rows", 1, where),
                    _int_argument(dim, "dim", 1, where),
                    _float_dtype(dtype, where).name,
                    _seed_argument(seed, where))

        gathered = checked_allgather(self.comm, check)
        for position, argument in enumerate(("num_rows", "dim", "dtype", "seed")):
            values = [g[position] for g in gathered]
            if any(v != values[0] for v in values):
                raise InvalidArgumentError(
                    f"{where}: every rank must pass the same {argument}; the ranks "
                    f"passed {argument} = {values} (in rank order)"
                )
        self.num_rows, self.dim, dtype_name, self._seed = gathered[0]
        self.dtype = np.dtype(dtype_name)
        self.name = name
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        n_local = len(range(self.rank, self.num_rows, self.size))
        # zeros from a broadcast view: the copy Variable makes is the only
        # buffer of the shard's size
        zero = np.zeros((), self.dtype)
        self.shard = Variable(np.broadcast_to(zero, (n_local, self.dim)),
                              name=f"{name}/shard-{self.rank}-of-{self.size}")
        checked_allgather(self.comm, lambda: self._fill(initializer, where))
        registry.register_sharded(self.shard)

    def _fill(self, initializer, where):
        """Write the initial rows into the shard, a block of rows at a time
        for the default initializer."""
        rows = self.owned_rows()
        if initializer is None:
            step = max(1, _BLOCK_ENTRIES // self.dim)
            for start in range(0, rows.shape[0], step):
                block = rows[start:start + step]
                values = uniform_rows(block, self.dim, seed=self._seed,
                                      dtype=self.dtype)
                local = np.arange(start, start + block.shape[0], dtype=np.int64)
                self.shard.scatter_update(IndexedSlices(values, local))
            return None
        values = initializer(rows)
        if isinstance(values, Variable):
            values = values.numpy()
        if isinstance(values, Tensor):
            values = values.numpy()
        if backend_of(values).on_gpu:
            raise InvalidArgumentError(
                f"{where}: initializer returned a CuPy array; the shard lives in "
                "host memory (return a NumPy array)"
            )
        try:
            values = np.asarray(values)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"{where}: initializer returned something that is not an array: "
                f"{exc}"
            ) from None
        expected = (rows.shape[0], self.dim)
        if values.shape != expected or values.dtype.kind not in "biuf":
            raise InvalidArgumentError(
                f"{where}: initializer(rows) must return a numeric array of shape "
                f"{expected} for the {rows.shape[0]} rows of rank {self.rank}, got "
                f"shape {values.shape} and dtype {values.dtype}"
            )
        self.shard.assign(values.astype(self.dtype))
        return None

    def owned_rows(self):
        """The global ids of this rank's rows, in the order of :attr:`shard`.

        Returns
        -------
        ndarray of int64
            ``np.arange(rank, num_rows, size)``.
        """
        return np.arange(self.rank, self.num_rows, self.size, dtype=np.int64)

    def __repr__(self):
        return (f"<ShardedEmbedding {self.name!r}: {self.num_rows} x {self.dim} "
                f"{self.dtype}, rank {self.rank} of {self.size} holds "
                f"{self.shard.shape[0]} rows>")

    def __call__(self, ids):
        """``self.lookup(ids)``."""
        return self.lookup(ids)

    def _ids(self, ids):
        """`ids` as a host int array of its own shape, range-checked."""
        if isinstance(ids, (Tensor, Variable)):
            ids = ids.numpy()
        try:
            array = to_host(sparse_rows.index_array(ids, "ids"))
            sparse_rows.check_in_range(array, self.num_rows, "ids")
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"ShardedEmbedding {self.name!r} lookup: {exc}"
            ) from None
        return array

    def lookup(self, ids):
        """The rows of `ids`, fetched from their owners; a collective.

        Every rank of :attr:`comm` must call it, the same number of times
        (with ids of any shape and length, empty ones included); under a
        GradientTape the backward pass is a collective too, so every rank
        must differentiate through the lookup as well.

        Parameters
        ----------
        ids : array_like or Tensor of int, any shape
            Global row ids in ``[0, num_rows)``.

        Returns
        -------
        Tensor of shape ``ids.shape + (dim,)``
            The rows; recorded on the active tapes, so that
            ``tape.gradient(loss, shard)`` is an
            :class:`~sparsegrad.IndexedSlices` over :attr:`shard` holding,
            for each owned row, the sum over the ranks of the gradient of
            each rank's `loss` w.r.t. it (no averaging over the ranks).

        Raises
        ------
        InvalidArgumentError
            On every rank, if the ids of any rank are not integers or lie
            outside ``[0, num_rows)`` (the message names the rank and the
            first bad id); nothing is exchanged then.

        Notes
        -----
        Only distinct ids travel: a rank sends each id it needs once (8
        bytes) to its owner and gets its row back once, whatever its count
        in `ids`; the backward pass sends one summed row per distinct id.
        """
        comm = self.comm
        try:
            array, failure = self._ids(ids), None
        except InvalidArgumentError as exc:
            array, failure = None, exc
        if failure is not None:
            exchange_counts(comm, None, failure=failure)  # raises on every rank
        shape = array.shape
        plan = _Plan(array.reshape(-1), self.size)
        recv_counts = exchange_counts(comm, plan.send_counts)
        # ids that other ranks need from this one, rank 0's first
        wanted = alltoallv(comm, plan.send_ids, plan.send_counts, recv_counts)
        local = wanted // self.size
        value = self.shard.value()          # the read the tape maps back to shard
        rows = sparse_rows.gather_rows(np.asarray(value), local)
        answered = alltoallv(comm, rows, recv_counts, plan.send_counts)
        out = wrap(plan.expand(answered).reshape(shape + (self.dim,)))
        plan.keep_backward_only()
        dense_shape = self.shard.shape
        dtype = self.dtype

        def backward(upstream):
            if isinstance(upstream, IndexedSlices):
                upstream = upstream.to_dense()
            grad = np.asarray(upstream, dtype=dtype).reshape(-1, self.dim)
            summed = plan.sum_per_id(grad)
            received = alltoallv(comm, summed, plan.send_counts, recv_counts)
            return IndexedSlices(received, local, dense_shape=dense_shape)

        record_operation("ShardedEmbeddingLookup", (value,), (out,),
                         grad_fn=backward)
        return out


class _Plan:
    """Where the ids of one lookup go: their distinct values, grouped by owner.

    ``send_ids`` holds the distinct ids sorted by owner rank, then by id;
    ``send_counts[r]`` of them go to rank r.  What comes back, one row per
    entry of ``send_ids``, is expanded to one row per id by :meth:`expand`;
    the backward pass sums the gradient rows per distinct id
    (:meth:`sum_per_id`, in the ids' order) into the same layout.
    """

    __slots__ = ("by_owner", "inverse", "n_unique", "order", "send_counts",
                 "send_ids", "starts")

    def __init__(self, flat_ids, size):
        flat = np.ascontiguousarray(flat_ids, dtype=np.int64)
        n = flat.shape[0]
        if n:
            unique, order, starts = sparse_rows.group_rows(flat, int(flat.max()))
        else:
            unique = np.empty(0, np.int64)
            order = np.empty(0, np.int64)
            starts = np.zeros(1, np.int64)
        self.order, self.starts = order, starts
        self.n_unique = unique.shape[0]
        # inverse[k]: the group (distinct id) of flat[k]
        self.inverse = np.empty(n, np.int64)
        self.inverse[order] = np.repeat(np.arange(self.n_unique, dtype=np.int64),
                                        np.diff(starts))
        owner = unique % size
        self.by_owner = np.argsort(owner, kind="stable")
        self.send_ids = np.ascontiguousarray(unique[self.by_owner])
        self.send_counts = np.bincount(owner, minlength=size).astype(np.int64)

    def expand(self, answered):
        """One row per id from the rows of ``send_ids``."""
        per_unique = np.empty_like(answered)
        per_unique[self.by_owner] = answered
        return per_unique[self.inverse]

    def keep_backward_only(self):
        """Drop what only the forward pass needed (the backward keeps the
        grouping and the send layout)."""
        self.inverse = self.send_ids = None

    def sum_per_id(self, grad):
        """The rows of `grad` (one per id) summed per distinct id, laid out as
        ``send_ids``; each sum is taken in the order of the ids."""
        summed = sparse_rows.group_sum(np.ascontiguousarray(grad), self.order,
                                       self.starts)
        return np.ascontiguousarray(summed[self.by_owner])
