"""The tape: its overhead, and the sparse gradient of a lookup (issue 3).

* ``autodiff/tape_chain``: record a chain of 100 elementwise ops on a 4 x 4
  float32 tensor (25 rounds of ``tanh(y * w + b)`` then ``sigmoid``) on a
  tape and differentiate ``sum(y)`` with respect to the input, against
  PyTorch eager autograd and a TensorFlow ``GradientTape``: the Python
  overhead per op.
* ``autodiff/gather_sum_gradient``: forward and backward of ``loss =
  reduce_sum(gather(W, ids))`` for a 1,000,000 x 64 float32 ``W`` and the
  16,384 Zipf(1.1) ids of :mod:`sparsegrad.bench.inputs`; the gradient is an
  IndexedSlices (PyTorch: ``embedding(ids, W, sparse=True)``, a sparse COO
  gradient; TensorFlow: ``tf.gather`` on a Variable, a ``tf.IndexedSlices``).
* ``autodiff/gather_sum_gradient_dense``: the same loss through a dense
  gradient: sparsegrad ``reduce_sum(W * counts)`` (``counts[i]`` is how often
  row ``i`` occurs, so value and gradient are the same), PyTorch
  ``embedding(..., sparse=False)``, NumPy ``np.zeros`` + ``np.add.at``; the
  cost a sparse gradient avoids.

The floor of the sparse gradient: the looked-up rows and the ids read once
(the gradient of a sum, a row of ones per id, need not be written out); of
the dense one, the whole table's gradient written once as well.
"""

from . import inputs
from .case import Case

N_OPS = 100


def _chain_inputs():
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 4)).astype(np.float32)
    w = (0.5 + 0.5 * rng.random((4, 4))).astype(np.float32)
    b = (0.1 * rng.standard_normal((4, 4))).astype(np.float32)
    return x, w, b


def _chain_on(api):
    """The chain case on a TensorFlow-style API (`api`: the module of
    sparsegrad or of TensorFlow; both have these names)."""
    x, w, b = (api.constant(a) for a in _chain_inputs())

    def run():
        with api.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in range(N_OPS // 4):
                y = api.sigmoid(api.tanh(y * w + b))
        return tape.gradient(y, x)

    return run


def _chain_sparsegrad(quick):
    import sparsegrad as sg

    return _chain_on(sg)


def _chain_torch(quick):
    import torch

    x0, w0, b0 = _chain_inputs()
    x = torch.tensor(x0, requires_grad=True)
    w, b = torch.tensor(w0), torch.tensor(b0)

    def run():
        y = x
        for _ in range(N_OPS // 4):
            y = torch.sigmoid(torch.tanh(y * w + b))
        return torch.autograd.grad(y.sum(), x)

    return run


def _chain_tensorflow(quick):
    import tensorflow as tf

    return _chain_on(tf)


def _gather_on(api, quick, ids_of=None):
    """The gather case on a TensorFlow-style API (as :func:`_chain_on`);
    `ids_of` converts the ids (None: NumPy ids as they are)."""
    ids, _, _ = inputs.sparse_gradient(quick)
    var = api.Variable(inputs.table(quick))
    if ids_of is not None:
        ids = ids_of(ids)

    def run():
        with api.GradientTape() as tape:
            loss = api.reduce_sum(api.gather(var, ids))
        return tape.gradient(loss, var)

    return run


def _gather_sparsegrad(quick):
    import sparsegrad as sg

    return _gather_on(sg, quick)


def _gather_torch(sparse):
    def setup(quick):
        import torch

        ids, _, _ = inputs.sparse_gradient(quick)
        weight = torch.from_numpy(inputs.table(quick)).requires_grad_(True)
        t_ids = torch.from_numpy(ids)

        def run():
            weight.grad = None
            torch.nn.functional.embedding(t_ids, weight, sparse=sparse).sum().backward()
            return weight.grad

        return run

    return setup


def _gather_tensorflow(quick):
    import tensorflow as tf

    return _gather_on(tf, quick, tf.constant)


def _dense_sparsegrad(quick):
    import numpy as np

    import sparsegrad as sg

    ids, _, (n_rows, _) = inputs.sparse_gradient(quick)
    var = sg.Variable(inputs.table(quick))
    counts = np.bincount(ids, minlength=n_rows).astype(np.float32)[:, None]

    def run():
        with sg.GradientTape() as tape:
            loss = sg.reduce_sum(var * counts)
        return tape.gradient(loss, var)

    return run


def _dense_numpy(quick):
    import numpy as np

    ids, _, shape = inputs.sparse_gradient(quick)
    table = inputs.table(quick)
    ones = np.ones((ids.size, shape[1]), np.float32)

    def run():
        loss = np.take(table, ids, axis=0).sum()
        grad = np.zeros(shape, np.float32)
        np.add.at(grad, ids, ones)
        return loss, grad

    return run


def _sparse_bytes(quick):
    # the looked-up rows and the ids read once; the gradient of a sum is a
    # row of ones per id, which need not be written out
    ids, values, _ = inputs.sparse_gradient(quick)
    return values.nbytes + ids.nbytes


def _dense_bytes(quick):
    n_rows, width, _ = inputs.embedding_sizes(quick)
    return n_rows * width * 4 + _sparse_bytes(quick)


CASES = [
    Case(
        "autodiff/tape_chain",
        "record 100 elementwise ops on a 4 x 4 float32 tensor and take the "
        "gradient (overhead per op)",
        {"sparsegrad": _chain_sparsegrad, "tensorflow": _chain_tensorflow,
         "torch": _chain_torch},
        None,
    ),
    Case(
        "autodiff/gather_sum_gradient",
        "forward + backward of reduce_sum(gather(W, ids)), W 1,000,000 x 64 "
        "float32, 16,384 Zipf(1.1) ids: a sparse gradient",
        {"sparsegrad": _gather_sparsegrad, "tensorflow": _gather_tensorflow,
         "torch": _gather_torch(True)},
        _sparse_bytes,
    ),
    Case(
        "autodiff/gather_sum_gradient_dense",
        "the same loss with a dense 1,000,000 x 64 gradient (sparsegrad: "
        "reduce_sum(W * counts); NumPy: zeros + add.at)",
        {"sparsegrad": _dense_sparsegrad, "torch": _gather_torch(False),
         "numpy": _dense_numpy},
        _dense_bytes,
    ),
]
