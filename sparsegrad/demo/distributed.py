"""The demo on the ranks of an MPI job: ``mpiexec -n P python -m sparsegrad demo``.

Launched by an MPI launcher (:func:`launched_by_mpi`), the command trains
with every rank of ``MPI.COMM_WORLD``, even a world of one, so that runs on
1, 2 or 4 ranks compute the same thing:

- every rank builds the same data set (deterministic from the seed);
- step k takes the rows ``[k B, (k + 1) B)`` of the train split (``B`` is
  ``--batch-size``, the global batch); rank r trains on its
  ``numpy.array_split`` share of them (:func:`share`; empty when the batch
  has fewer rows than there are ranks), its loss is the sum over its rows
  divided by the rows of the global batch, and the optimizer
  (:class:`sparsegrad.distributed.DistributedOptimizer`) sums the gradients
  of all ranks: a step is the single-process step on the global batch, up
  to float rounding;
- the test split is cut the same way; every rank predicts its share in the
  same number of batches (the lookups of a sharded table are collective)
  and rank 0 gathers the predictions and computes the log-loss and AUC;
- checkpoints are one set of files per rank
  (:func:`sparsegrad.distributed.save_checkpoint`) plus rank 0's
  ``checkpoint.json``, which records the number of ranks: a run resumes
  on as many ranks as saved it.

:class:`DistributedRunner` holds all of this for
:func:`sparsegrad.demo.train.fit` and the command line; only rank 0 prints.
"""

import os

import numpy as np

from ..framework.archives import read_npz
from ..framework.collective import checked_allgather
from . import train
from .metrics import log_loss, roc_auc
from .models import Batch, loss

__all__ = [
    "LAUNCHER_VARIABLES", "launched_by_mpi", "world", "threads_per_rank", "share",
    "agree", "DistributedRunner",
]

#: Environment variables an MPI launcher sets in the processes it starts:
#: MPICH's Hydra (and Intel MPI) ``PMI_RANK``/``PMI_SIZE``, Open MPI's
#: ``OMPI_COMM_WORLD_SIZE``, PMIx launchers' ``PMIX_RANK``.
LAUNCHER_VARIABLES = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")

_INSTALL = 'pip install "sparsegrad[mpi]"'


def launched_by_mpi(environ=None):
    """Whether this process was started by an MPI launcher (``mpiexec``).

    Parameters
    ----------
    environ : mapping, optional
        The environment to look at (default ``os.environ``).

    Returns
    -------
    bool
        True if any of :data:`LAUNCHER_VARIABLES` is set.

    Examples
    --------
    >>> from sparsegrad.demo.distributed import launched_by_mpi
    >>> launched_by_mpi({"PMI_RANK": "0", "PMI_SIZE": "2"})
    True
    >>> launched_by_mpi({"HOME": "/root"})
    False
    """
    environ = os.environ if environ is None else environ
    return any(name in environ for name in LAUNCHER_VARIABLES)


def world():
    """``MPI.COMM_WORLD`` of mpi4py.

    Returns
    -------
    mpi4py.MPI.Intracomm

    Raises
    ------
    ImportError
        If mpi4py cannot be imported; the message names the launcher
        variable that was found and the command that installs mpi4py.
    """
    try:
        from mpi4py import MPI
    except ImportError as exc:
        found = next((name for name in LAUNCHER_VARIABLES if name in os.environ),
                     "an MPI launcher")
        raise ImportError(f"started by mpiexec ({found} is set) but mpi4py cannot "
                          f"be imported ({exc}); install it with {_INSTALL}, "
                          "or run without mpiexec") from None
    return MPI.COMM_WORLD


def threads_per_rank(comm):
    """Kernel threads for each rank: this machine's cores over its ranks.

    A collective (it asks which ranks share the machine).

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm

    Returns
    -------
    int
        ``max(1, cores // ranks on this machine)``, where the cores are those
        this process may run on.

    Examples
    --------
    >>> import os
    >>> from mpi4py import MPI
    >>> from sparsegrad.demo.distributed import threads_per_rank
    >>> threads_per_rank(MPI.COMM_WORLD) == len(os.sched_getaffinity(0))
    True
    """
    from mpi4py import MPI

    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        ranks_here = local.Get_size()
    finally:
        local.Free()
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    else:
        cores = os.cpu_count() or 1
    return max(1, cores // ranks_here)


def share(start, stop, rank, size):
    """Rank `rank`'s share of the rows ``[start, stop)`` among `size` ranks.

    The shares are those of ``numpy.array_split(range(start, stop), size)``:
    contiguous, in rank order, the first ``(stop - start) % size`` of them one
    row longer.

    Parameters
    ----------
    start, stop : int
        The rows to share, ``start <= stop``.
    rank, size : int
        This rank and the number of ranks.

    Returns
    -------
    tuple of int
        ``(first, end)``: the rows ``[first, end)``, empty when there are
        fewer rows than ranks and `rank` comes after them.

    Examples
    --------
    >>> from sparsegrad.demo.distributed import share
    >>> [share(10, 15, r, 2) for r in range(2)]
    [(10, 13), (13, 15)]
    >>> [share(0, 1, r, 3) for r in range(3)]
    [(0, 1), (1, 1), (1, 1)]
    """
    quotient, remainder = divmod(stop - start, size)
    first = start + rank * quotient + min(rank, remainder)
    return first, first + quotient + (1 if rank < remainder else 0)


def agree(comm, check):
    """Run ``check()`` on every rank; if it raised on any, raise on all.

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
        Every rank calls :func:`agree` with it.
    check : callable
        Called without arguments.

    Returns
    -------
    object
        What ``check()`` returned on this rank.

    Raises
    ------
    Exception
        On a rank where ``check`` raised, its own error; on the others, the
        error of the lowest rank where it raised, of its class, the message
        prefixed with ``on rank k:``.  (The demo's checks read the same
        options and files on every rank, so they usually all fail alike and
        print the same line.)

    Examples
    --------
    >>> from mpi4py import MPI
    >>> from sparsegrad.demo.distributed import agree
    >>> agree(MPI.COMM_WORLD, lambda: 42)
    42
    """
    return checked_allgather(comm, check)[comm.Get_rank()]


class DistributedRunner:
    """How :func:`sparsegrad.demo.train.fit` and the command line train on
    the ranks of `comm`: the counterpart of
    :class:`sparsegrad.demo.train.LocalRunner`.

    :meth:`step`, :meth:`predict`, :meth:`evaluate`, :meth:`peak_memory`,
    :meth:`save` and :meth:`load` are collective: every rank calls them, in
    the same order.

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
        The ranks that train together.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from mpi4py import MPI
    >>> from sparsegrad.demo.data import CTRSplit
    >>> from sparsegrad.demo.distributed import DistributedRunner
    >>> split = CTRSplit(sp.csr_matrix(np.eye(5, dtype=np.float32)), None,
    ...                  np.zeros(5, np.float32))
    >>> runner = DistributedRunner(MPI.COMM_WORLD)      # a world of one rank
    >>> [(batch.y.shape[0], rows) for batch, rows in runner.batches(split, 2)]
    [(2, 2), (2, 2), (1, 1)]
    """

    def __init__(self, comm):
        self.comm = comm
        #: int: this rank.
        self.rank = comm.Get_rank()
        #: int: the number of ranks.
        self.size = comm.Get_size()
        #: bool: whether this is rank 0, which prints and writes checkpoint.json.
        self.main = self.rank == 0

    def batches(self, split, batch_size, xp=np):
        """``(batch, rows)`` for each step: this rank's share of the global
        batch (possibly no rows) and the number of rows of the global batch.

        Parameters
        ----------
        split : CTRSplit
        batch_size : int
            Rows of a global batch.
        xp : module, default=numpy
            Must be numpy (the MPI demo runs on the CPU).

        Yields
        ------
        tuple
            ``(Batch, int)``; the same number of them on every rank.
        """
        if xp is not np:
            raise ValueError("the MPI demo runs on the CPU: xp must be numpy")
        n = split.y.shape[0]
        for start in range(0, n, batch_size):
            stop = min(start + batch_size, n)
            first, end = share(start, stop, self.rank, self.size)
            yield _rows(split, first, end, labels=True), stop - start

    def step(self, model, batch, rows):
        """One step on the global batch of which `batch` is this rank's share.

        Parameters
        ----------
        model : FtrlLogistic or EmbeddingMLP
            Built with ``comm``: its optimizer sums the gradients of all ranks.
        batch : Batch
            This rank's rows (maybe none).
        rows : int
            Rows of the global batch.

        Returns
        -------
        float
            The mean loss of the global batch before the update (the ranks'
            shares added in rank order: the same on every rank).
        """
        import sparsegrad as sg

        with sg.GradientTape() as tape:
            value = loss(model, batch, rows)
        grads = tape.gradient(value, model.variables)
        model.optimizer.apply_gradients(zip(grads, model.variables))
        shares = np.empty(self.size, np.float64)
        self.comm.Allgather(np.array([float(value.numpy())]), shares)
        total = 0.0
        for part in shares:
            total += part
        return total

    def predict(self, model, split, batch_size=8192):
        """Click probabilities for `split`, gathered on rank 0.

        Each rank predicts its :func:`share` of the rows in the same number
        of batches of at most `batch_size` rows (the last ones may be empty).

        Parameters
        ----------
        model : FtrlLogistic or EmbeddingMLP
            Built with ``comm``.
        split : CTRSplit
            The same on every rank.
        batch_size : int, default=8192
            Rows of a rank's batch.

        Returns
        -------
        ndarray of shape (n,), float64, or None
            Every row's probability on rank 0, in the order of `split`;
            None on the other ranks.
        """
        n = split.y.shape[0]
        first, end = share(0, n, self.rank, self.size)
        longest = -(-n // self.size)
        logits = [np.empty(0, np.float32)]
        for k in range(-(-longest // batch_size)):
            start = min(first + k * batch_size, end)
            stop = min(start + batch_size, end)
            batch = _rows(split, start, stop, labels=False)
            logits.append(model.logits(batch).numpy().reshape(-1))
        mine = 1.0 / (1.0 + np.exp(-np.concatenate(logits).astype(np.float64)))
        counts = np.array([stop - start for start, stop in
                           (share(0, n, r, self.size) for r in range(self.size))],
                          np.int64)
        if not self.main:
            self.comm.Gatherv(mine, None, root=0)
            return None
        out = np.empty(n, np.float64)
        offsets = np.concatenate([[0], np.cumsum(counts[:-1])])
        self.comm.Gatherv(mine, [out, (counts, offsets)], root=0)
        return out

    def evaluate(self, model, split):
        """Log-loss and ROC AUC of `model` on `split`.

        Parameters
        ----------
        model : FtrlLogistic or EmbeddingMLP
        split : CTRSplit

        Returns
        -------
        dict
            ``{"log_loss": float, "auc": float}``, computed on rank 0 from
            every rank's predictions (:meth:`predict`) and sent to all.
        """
        p = self.predict(model, split)
        metrics = None
        if self.main:
            metrics = {"log_loss": log_loss(split.y, p), "auc": roc_auc(split.y, p)}
        return self.comm.bcast(metrics, root=0)

    def peak_memory(self):
        """The largest peak resident memory of the ranks, in bytes."""
        return max(self.comm.allgather(train.peak_memory()))

    def missing(self, directory, name):
        """The parts of model `name` that a checkpoint in `directory` lacks:
        ``["files"]`` without the ``index.json`` of its folder of per-rank
        files (whether each rank's files are there and fit is checked when
        they are loaded)."""
        index = os.path.join(directory, name, "index.json")
        return [] if os.path.exists(index) else ["files"]

    def check(self, directory, name):
        """Read this rank's files of model `name` in `directory` once, before
        any training, so that a damaged one is reported first (the files of
        ``directory/<name>``, as
        :func:`sparsegrad.distributed.save_checkpoint` lays them out).

        Raises
        ------
        ValueError
            If one cannot be read (:func:`~sparsegrad.framework.archives.read_npz`).
        """
        stem = os.path.join(directory, name, f"rank-{self.rank}-of-{self.size}")
        for suffix, part in ((".npz", "weights"), (".optimizer.npz", "optimizer")):
            read_npz(stem + suffix,
                     f"cannot read the saved {part} of the {name} model from")

    def save(self, directory, model, state):
        """Save `model` and the run's `state` to `directory`.

        Parameters
        ----------
        directory : str
            The same on every rank (one file system).  Each rank writes its
            weights and optimizer state under ``directory/<model.name>``
            (:func:`sparsegrad.distributed.save_checkpoint`); rank
            0 then writes `state` plus ``"ranks"`` (the number of ranks) as
            ``checkpoint.json``.
        model : FtrlLogistic or EmbeddingMLP
            Built with ``comm``.
        state : dict
            ``{"settings": ..., "models": ...}`` as
            :func:`sparsegrad.demo.train.save_checkpoint` takes it.

        Raises
        ------
        OSError
            On every rank, if a rank could not write its files.
        """
        from sparsegrad.distributed import save_checkpoint

        save_checkpoint(os.path.join(directory, model.name), model.variables,
                        model.optimizer, self.comm)
        if self.main:
            train.write_index(directory, {**state, "ranks": self.size})
        self.comm.Barrier()

    def load(self, directory, model):
        """Restore `model`'s weights and optimizer state from what :meth:`save`
        wrote in `directory`.

        Raises
        ------
        InvalidArgumentError
            On every rank, with nothing changed, if a rank's files are
            missing or do not fit (another model, data set or number of
            ranks); see :func:`sparsegrad.distributed.load_checkpoint`.
        """
        from sparsegrad.distributed import load_checkpoint

        load_checkpoint(os.path.join(directory, model.name), model.variables,
                        model.optimizer, self.comm)


def _rows(split, start, stop, *, labels):
    """A Batch of the rows ``[start, stop)`` of `split` (labels optional)."""
    rows = slice(start, stop)
    ids = None if split.ids is None else split.ids[rows]
    y = split.y[rows].reshape(-1, 1) if labels else None
    return Batch(split.X[rows], ids, y)
