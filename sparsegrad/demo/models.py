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
"""

from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

import sparsegrad as sg

__all__ = ["Batch", "FtrlLogistic", "EmbeddingMLP", "array_module", "loss",
           "train_step"]


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
                 device="cpu"):
        self.xp = xp = array_module(device)
        self.w = _variable(np.zeros((n_buckets, 1), np.float32), "w", xp)
        self.b = _variable(np.zeros((1,), np.float32), "b", xp)
        self.variables = [self.w, self.b]
        self.optimizer = sg.optimizers.Ftrl(
            learning_rate=learning_rate, l1_regularization_strength=l1,
            l2_regularization_strength=l2)

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
    dim : int, default=8
        Width of the embeddings.
    hidden : tuple of int, default=(64, 32)
        Widths of the hidden layers.
    learning_rate : float, default=0.002
        Learning rate of lazy Adam.
    clip_norm : float, default=5.0
        The gradients are clipped to this global norm.
    seed : int, default=0
        Seed of the initial weights.
    device : {"cpu", "gpu"}, default="cpu"
        Where the weights live (``"gpu"``: CuPy arrays).

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

    def __init__(self, n_buckets, n_fields=None, *, dim=8, hidden=(64, 32),
                 learning_rate=0.002, clip_norm=5.0, seed=0, device="cpu"):
        self.xp = xp = array_module(device)
        rng = np.random.default_rng(seed)
        self.n_fields = n_fields
        self.dim = dim
        self.clip_norm = clip_norm
        table = rng.standard_normal((n_buckets, dim), dtype=np.float32)
        table *= np.float32(0.05)
        self.table = _variable(table, "embeddings", xp)
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
        self.optimizer = sg.optimizers.Adam(learning_rate=learning_rate, lazy=True)

    def logits(self, batch):
        """The logits of `batch`, a Tensor of shape (n, 1)."""
        if self.n_fields:
            x = sg.nn.embedding_lookup(self.table, batch.ids)    # (n, n_fields, dim)
            x = sg.reshape(x, (-1, self.n_fields * self.dim))
        else:
            x = sg.nn.embedding_lookup_sparse(self.table, batch.X, combiner="sum")
        *hidden, (kernel, bias) = self.layers
        for w, b in hidden:
            x = sg.nn.relu(sg.matmul(x, w) + b)
        return sg.matmul(x, kernel) + bias + sg.sparse.sparse_dense_matmul(
            batch.X, self.linear)


def loss(model, batch):
    """Mean log-loss of `model` on `batch` (a scalar Tensor).

    Parameters
    ----------
    model : FtrlLogistic or EmbeddingMLP
    batch : Batch

    Returns
    -------
    Tensor
        ``mean(sigmoid_cross_entropy_with_logits(batch.y, model.logits(batch)))``.
    """
    return sg.reduce_mean(sg.nn.sigmoid_cross_entropy_with_logits(
        labels=batch.y, logits=model.logits(batch)))


def train_step(model, batch):
    """One step of training: gradient of the loss, clipping, optimizer update.

    Parameters
    ----------
    model : FtrlLogistic or EmbeddingMLP
    batch : Batch

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
