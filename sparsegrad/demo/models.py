"""The two click-through-rate models of the demo.

:class:`FtrlLogistic`
    Logistic regression on the hashed one-hot features: one weight per
    bucket, ``logit = X @ w + b``, through
    :func:`sparsegrad.sparse.sparse_dense_matmul` (the gradient of `w` is an
    :class:`~sparsegrad.IndexedSlices` over the buckets of the batch), trained
    with :class:`sparsegrad.optimizers.Ftrl` (FTRL-Proximal).

:class:`EmbeddingMLP`
    An embedding table shared by all fields, a small MLP on the embeddings,
    and a linear ("wide") term over the same buckets, trained with lazy Adam
    (:class:`sparsegrad.optimizers.Adam` with ``lazy=True``: only the rows of
    the batch are updated) and :func:`sparsegrad.clip_by_global_norm`.

Both expose ``variables``, ``optimizer``, ``clip_norm``, ``xp`` (the array
module of their weights: ``numpy``, or ``cupy`` when built with
``device="gpu"``) and ``logits(batch)``; :func:`loss` and :func:`train_step`
work on either.

Built with an MPI communicator (``comm=``, the demo under ``mpiexec``), each
rank holds a copy of the weights except the embedding table, which is a
:class:`sparsegrad.distributed.ShardedEmbedding` (each rank owns every
``size``-th row), and the optimizer is a
:class:`sparsegrad.distributed.DistributedOptimizer` that sums the ranks'
gradients before the update; :mod:`sparsegrad.demo.distributed` runs the
steps.
"""

from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

import sparsegrad as sg
from sparsegrad.distributed import uniform_rows

__all__ = ["Batch", "FtrlLogistic", "EmbeddingMLP", "array_module", "loss",
           "train_step", "EMBEDDING_DIM"]

#: The default width of the embeddings of :class:`EmbeddingMLP`.
EMBEDDING_DIM = 8


def array_module(device):
    """``numpy`` for ``device="cpu"``, ``cupy`` for ``"gpu"``.

    Parameters
    ----------
    device : {"cpu", "gpu"}
        Where a model's weights live.

    Returns
    -------
    module
        ``numpy`` or ``cupy`` (imported here: CuPy must be installed for
        ``"gpu"``).

    Raises
    ------
    ValueError
        If `device` is neither.

    Examples
    --------
    >>> from sparsegrad.demo.models import array_module
    >>> array_module("cpu").__name__
    'numpy'
    """
    if device == "cpu":
        return np
    if device != "gpu":
        raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}")
    import cupy

    return cupy


def _variable(array, name, xp):
    """A Variable holding host `array`, on the device of array module `xp`."""
    return sg.Variable(array if xp is np else xp.asarray(array), name=name)


class Batch(NamedTuple):
    """A batch of examples."""

    #: scipy.sparse.csr_matrix of shape (n, n_buckets), float32: the features.
    X: sp.csr_matrix
    #: ndarray of shape (n, n_fields), int64: the bucket of each field (None
    #: for data without fields); a cupy array for a model on the GPU.
    ids: Optional[np.ndarray]
    #: ndarray of shape (n, 1), float32: the labels, 0 or 1 (cupy on the GPU).
    y: np.ndarray


class FtrlLogistic:
    """Logistic regression over hashed one-hot features, trained with FTRL-Proximal.

    Parameters
    ----------
    n_buckets : int
        Number of feature columns.
    learning_rate : float, default=1.0
    l1 : float, default=1e-5
        FTRL's L1 strength (drives the weights of rare buckets to exactly 0).
    l2 : float, default=1e-5
        FTRL's L2 strength.
    device : {"cpu", "gpu"}, default="cpu"
        Where the weights live (``"gpu"``: CuPy arrays; the batches' features
        stay ``scipy.sparse`` on the host and are multiplied on the GPU).
    comm : mpi4py.MPI.Intracomm, optional
        Train with the ranks of `comm`: every rank holds `w` and `b`, and
        the optimizer is ``DistributedOptimizer(Ftrl(...), comm,
        reduction="sum")``, which sums the gradients of all ranks (the
        sparse rows of `w` gathered from every rank) before each update.
        CPU only.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from sparsegrad.demo.models import Batch, FtrlLogistic, train_step
    >>> model = FtrlLogistic(8)
    >>> X = sp.csr_matrix(np.eye(4, 8, dtype=np.float32))
    >>> batch = Batch(X, None, np.array([[1], [0], [1], [0]], np.float32))
    >>> first = train_step(model, batch)
    >>> round(first, 4)     # log(2): every weight starts at 0
    0.6931
    >>> train_step(model, batch) < first
    True
    """

    name = "ftrl"
    title = "FTRL logistic regression"
    clip_norm = None

    def __init__(self, n_buckets, *, learning_rate=1.0, l1=1e-5, l2=1e-5,
                 device="cpu", comm=None):
        self.xp = xp = array_module(device)
        _check_comm(comm, device)
        self.w = _variable(np.zeros((n_buckets, 1), np.float32), "w", xp)
        self.b = _variable(np.zeros((1,), np.float32), "b", xp)
        self.variables = [self.w, self.b]
        self.optimizer = sg.optimizers.Ftrl(
            learning_rate=learning_rate, l1_regularization_strength=l1,
            l2_regularization_strength=l2)
        if comm is not None:
            from sparsegrad.distributed import DistributedOptimizer

            self.optimizer = DistributedOptimizer(self.optimizer, comm,
                                                  reduction="sum")

    def logits(self, batch):
        """The logits of `batch`, a Tensor of shape (n, 1)."""
        return sg.sparse.sparse_dense_matmul(batch.X, self.w) + self.b


class EmbeddingMLP:
    """Embeddings of the buckets, a small MLP over them, and a linear term.

    With fields (the synthetic data), each of the ``n_fields`` buckets of a
    row is looked up in one shared table of shape ``(n_buckets, dim)`` with
    :func:`sparsegrad.nn.embedding_lookup` and the ``n_fields * dim`` values
    are concatenated.  Without fields (an svmlight file), the row's features
    are one weighted bag: :func:`sparsegrad.nn.embedding_lookup_sparse` with
    ``combiner="sum"`` adds up ``value * table[column]`` over the stored
    entries of the row, a vector of ``dim`` values.  Either goes through the
    hidden ReLU layers to one output, to which the linear term ``X @ w`` is
    added.

    Parameters
    ----------
    n_buckets : int
        Number of feature columns (rows of the table).
    n_fields : int or None
        Number of fields of the ids, or None for the bag of features.
    dim : int, default=EMBEDDING_DIM (8)
        Width of the embeddings.
    hidden : tuple of int, default=(64, 32)
        Widths of the hidden layers.
    learning_rate : float, default=0.002
        Learning rate of lazy Adam.
    clip_norm : float, default=5.0
        The gradients are clipped to this global norm.
    seed : int, default=0
        Seed of the initial weights: the table's rows are
        ``sparsegrad.distributed.uniform_rows(rows, dim, seed=seed)``
        (uniform in ``[-0.05, 0.05)``, a function of the seed, the row and
        the column only: the same bits on any CPU, thread count and number
        of MPI ranks); the MLP's kernels are Glorot-normal draws of
        ``numpy.random.default_rng(seed)``; the linear term and the biases
        start at zero.
    device : {"cpu", "gpu"}, default="cpu"
        Where the weights live (``"gpu"``: CuPy arrays).
    table_dtype : {"float32", "bfloat16", "float16"}, default="float32"
        The storage type of the table.  A half type holds the initial rows
        rounded to it (to nearest), is looked up as float32
        (``embedding_lookup(..., dtype=float32)``, so the MLP computes in
        float32 and the table's gradient is float32), and trains in mixed
        precision: lazy Adam with ``slot_dtype=table_dtype`` and stochastic
        rounding seeded with `seed`.  Host and one process only.
    comm : mpi4py.MPI.Intracomm, optional
        Train with the ranks of `comm`: the table is a
        ``ShardedEmbedding(n_buckets, dim, comm, seed=seed)`` (``table`` is
        this rank's shard and ``embedding`` the ShardedEmbedding; its rows
        start as those of the table without `comm`), the linear term and
        the MLP are held by every rank (with the same initial weights as
        without `comm`), and the optimizer is
        ``DistributedOptimizer(Adam(lazy=True, global_clipnorm=clip_norm),
        comm, reduction="sum")``: it sums the gradients of all ranks and
        clips them to the global norm over all ranks, so ``clip_norm`` is
        None (the step does not clip again).  CPU only.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from sparsegrad.demo.models import Batch, EmbeddingMLP
    >>> model = EmbeddingMLP(100, n_fields=3, dim=4, hidden=(8,))
    >>> ids = np.array([[1, 50, 99], [2, 50, 98]])
    >>> X = sp.csr_matrix((np.ones(6, np.float32), ids.ravel(), [0, 3, 6]),
    ...                   shape=(2, 100))
    >>> model.logits(Batch(X, ids, None)).shape
    (2, 1)
    >>> [v.name for v in model.variables]
    ['embeddings', 'linear', 'dense_0/kernel', 'dense_0/bias', 'out/kernel', 'out/bias']
    """

    name = "embedding"
    title = "embedding + MLP"

    def __init__(self, n_buckets, n_fields=None, *, dim=EMBEDDING_DIM, hidden=(64, 32),
                 learning_rate=0.002, clip_norm=5.0, seed=0, device="cpu",
                 comm=None, table_dtype="float32"):
        self.xp = xp = array_module(device)
        _check_comm(comm, device)
        self.table_dtype = np.dtype(table_dtype)
        half = self.table_dtype != np.float32
        if half and (device != "cpu" or comm is not None):
            raise ValueError(f"a {self.table_dtype} table trains on the CPU in one "
                             "process (no device='gpu', no comm)")
        rng = np.random.default_rng(seed)
        self.n_fields = n_fields
        self.dim = dim
        self.clip_norm = clip_norm
        if comm is None:
            # the rows a ShardedEmbedding of this seed starts from, on any
            # number of ranks: the two runs begin with the same table
            self.embedding = None
            table = uniform_rows(np.arange(n_buckets, dtype=np.int64), dim, seed=seed)
            self.table = _variable(table.astype(self.table_dtype, copy=False),
                                   "embeddings", xp)
            del table
        else:
            from sparsegrad.distributed import ShardedEmbedding

            self.embedding = ShardedEmbedding(n_buckets, dim, comm, seed=seed)
            self.table = self.embedding.shard
        self.linear = _variable(np.zeros((n_buckets, 1), np.float32), "linear", xp)
        self.variables = [self.table, self.linear]
        self.layers = []
        width = dim * (n_fields or 1)
        for k, units in enumerate((*hidden, 1)):
            prefix = "out" if k == len(hidden) else f"dense_{k}"
            scale = np.sqrt(2.0 / (width + units))         # Glorot normal
            kernel = (rng.standard_normal((width, units)) * scale).astype(np.float32)
            layer = (_variable(kernel, f"{prefix}/kernel", xp),
                     _variable(np.zeros((units,), np.float32), f"{prefix}/bias", xp))
            self.layers.append(layer)
            self.variables.extend(layer)
            width = units
        if comm is None:
            mixed = ({"slot_dtype": self.table_dtype, "stochastic_rounding": True,
                      "seed": seed} if half else {})
            self.optimizer = sg.optimizers.Adam(learning_rate=learning_rate,
                                                lazy=True, **mixed)
            return
        from sparsegrad.distributed import DistributedOptimizer

        self.optimizer = DistributedOptimizer(
            sg.optimizers.Adam(learning_rate=learning_rate, lazy=True,
                               global_clipnorm=clip_norm), comm, reduction="sum")
        self.clip_norm = None

    def logits(self, batch):
        """The logits of `batch`, a Tensor of shape (n, 1).

        With `comm`, a collective call: every rank calls it the same number
        of times (with its own batch, which may be empty).
        """
        if self.n_fields:
            if self.embedding is None:
                x = sg.nn.embedding_lookup(self.table, batch.ids, dtype=np.float32)
            else:
                x = self.embedding(batch.ids)                  # (n, n_fields, dim)
            x = sg.reshape(x, (-1, self.n_fields * self.dim))
        elif self.embedding is None:
            x = sg.nn.embedding_lookup_sparse(self.table, batch.X, combiner="sum",
                                              dtype=np.float32)
        else:
            x = _weighted_bags(self.embedding, batch.X)
        *hidden, (kernel, bias) = self.layers
        for w, b in hidden:
            x = sg.nn.relu(sg.matmul(x, w) + b)
        return sg.matmul(x, kernel) + bias + sg.sparse.sparse_dense_matmul(
            batch.X, self.linear)


    def table_memory(self):
        """``(bytes, dtype name)`` of the embedding table (this rank's
        shard) and its optimizer slots, once they exist."""
        table = self.table
        state = self.optimizer.get_state(table) if self.embedding is None else None
        arrays = [table] + [s for s in (state or ()) if s is not None]
        return (sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in arrays),
                str(table.dtype))


def _weighted_bags(embedding, X):
    """``embedding_lookup_sparse(table, X, combiner="sum")`` over a sharded
    table: the rows of the stored columns, times the stored values, summed
    per row of `X`."""
    rows = embedding(X.indices.astype(np.int64))                # (nnz, dim)
    weights = X.data.astype(np.float32).reshape(-1, 1)
    owners = np.repeat(np.arange(X.shape[0], dtype=np.int64), np.diff(X.indptr))
    return sg.math.unsorted_segment_sum(rows * weights, owners, X.shape[0])


def _check_comm(comm, device):
    if comm is not None and device != "cpu":
        raise ValueError(f"a model with comm runs on the CPU only, got "
                         f"device={device!r}")


def loss(model, batch, rows=None):
    """Log-loss of `model` on `batch`: the mean, or the sum over `rows`.

    Parameters
    ----------
    model : FtrlLogistic or EmbeddingMLP
    batch : Batch
    rows : int, optional
        Divide the sum of the batch's losses by this number instead of by
        the batch's own size: with the batch one rank's share of a global
        batch of `rows` examples, the ranks' losses add up to the mean over
        the global batch.

    Returns
    -------
    Tensor
        A scalar: ``mean(sigmoid_cross_entropy_with_logits(batch.y,
        model.logits(batch)))``, or ``sum(...) / rows``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from sparsegrad.demo.models import Batch, FtrlLogistic, loss
    >>> X = sp.csr_matrix(np.eye(2, 4, dtype=np.float32))
    >>> batch = Batch(X, None, np.array([[1], [0]], np.float32))
    >>> round(float(loss(FtrlLogistic(4), batch)), 4)     # log(2) per example
    0.6931
    >>> round(float(loss(FtrlLogistic(4), batch, rows=8)), 4)   # 2 log(2) / 8
    0.1733
    """
    losses = sg.nn.sigmoid_cross_entropy_with_logits(
        labels=batch.y, logits=model.logits(batch))
    if rows is None:
        return sg.reduce_mean(losses)
    return sg.reduce_sum(losses) / np.float32(rows)


def train_step(model, batch):
    """One step of training: gradient of the loss, clipping, optimizer update.

    Parameters
    ----------
    model : FtrlLogistic or EmbeddingMLP
        The model; its variables are updated in place.
    batch : Batch
        The ids and labels of one step.

    Returns
    -------
    float
        The loss of the batch before the update.
    """
    with sg.GradientTape() as tape:
        value = loss(model, batch)
    grads = tape.gradient(value, model.variables)   # IndexedSlices for the tables
    if model.clip_norm is not None:
        grads, _ = sg.clip_by_global_norm(grads, model.clip_norm)
    model.optimizer.apply_gradients(zip(grads, model.variables))
    return float(value.numpy())
