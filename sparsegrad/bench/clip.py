"""clip_by_global_norm and global_norm.

The gradients of a model with ten dense 1024 x 1024 float32 weights and the
embedding table of :mod:`sparsegrad.bench.inputs`, whose gradient is an
IndexedSlices of 16,384 Zipf(1.1) ids, clipped to a global norm of 1.0 (the
norm is about 3,400, so everything is scaled).

* ``clip/clip_by_global_norm`` and ``clip/global_norm``: the dense gradients
  and the IndexedSlices, against ``tf.clip_by_global_norm`` and
  ``tf.linalg.global_norm`` on eager tensors and a ``tf.IndexedSlices``.  The
  semantics differ on repeated ids: TensorFlow squares the raw rows,
  sparsegrad takes the norm of the tensor they represent (repeated rows
  summed first).  PyTorch's ``clip_grad_norm_`` rejects a sparse COO
  gradient, so it has no part in these two.
* ``clip/clip_by_global_norm_dense``: the ten dense gradients alone, against
  TensorFlow, ``torch.nn.utils.clip_grad_norm_`` (which scales the ``.grad``
  in place, where the others make new arrays) and NumPy (``np.vdot`` for the
  norm, ``v * scale`` into new arrays).

The floor: every value read once for the norm, then read and written once to
scale it (the global norm alone reads them once).
"""

from . import inputs
from .case import Case
from .sizes import CLIP_SIDE

CLIP_NORM = 1.0
N_DENSE = 10


def _dense(quick):
    import numpy as np

    side = CLIP_SIDE.pick(quick)
    shape = (side, side)
    rng = np.random.default_rng(3)
    return [rng.standard_normal(shape, dtype=np.float32) for _ in range(N_DENSE)]


def _value_bytes(quick, sparse=True):
    side = CLIP_SIDE.pick(quick)
    n = N_DENSE * side * side * 4
    if sparse:
        _, width, n_ids = inputs.embedding_sizes(quick)
        n += n_ids * width * 4
    return n


def _sg_list(quick, sparse=True):
    import sparsegrad as sg

    t_list = [sg.constant(d) for d in _dense(quick)]
    if sparse:
        ids, values, shape = inputs.sparse_gradient(quick)
        t_list.append(sg.IndexedSlices(values, ids, dense_shape=shape))
    return t_list


def _tf_list(quick, sparse=True):
    import tensorflow as tf

    t_list = [tf.constant(d) for d in _dense(quick)]
    if sparse:
        ids, values, shape = inputs.sparse_gradient(quick)
        t_list.append(tf.IndexedSlices(tf.constant(values), tf.constant(ids),
                                       tf.constant(shape, tf.int64)))
    return t_list


def _clip_sparsegrad(sparse):
    def setup(quick):
        import sparsegrad as sg

        t_list = _sg_list(quick, sparse)
        return lambda: sg.clip_by_global_norm(t_list, CLIP_NORM)

    return setup


def _clip_tensorflow(sparse):
    def setup(quick):
        import tensorflow as tf

        t_list = _tf_list(quick, sparse)
        return lambda: tf.clip_by_global_norm(t_list, CLIP_NORM)

    return setup


def _norm_sparsegrad(quick):
    import sparsegrad as sg

    t_list = _sg_list(quick)
    return lambda: sg.global_norm(t_list)


def _norm_tensorflow(quick):
    import tensorflow as tf

    t_list = _tf_list(quick)
    return lambda: tf.linalg.global_norm(t_list)


def _clip_torch(quick):
    import torch

    params = []
    for d in _dense(quick):
        p = torch.nn.Parameter(torch.zeros(d.shape))
        p.grad = torch.from_numpy(d)
        params.append(p)
    return lambda: torch.nn.utils.clip_grad_norm_(params, CLIP_NORM)


def _clip_numpy(quick):
    import numpy as np

    arrays = [d.ravel() for d in _dense(quick)]

    def run():
        norm = np.sqrt(sum(float(np.vdot(a, a)) for a in arrays))
        scale = np.float32(CLIP_NORM / max(norm, CLIP_NORM))
        return [a * scale for a in arrays], norm

    return run


CASES = [
    Case(
        "clip/clip_by_global_norm",
        "ten dense 1024 x 1024 float32 gradients + a 16,384 x 64 IndexedSlices "
        "(Zipf(1.1) ids), clipped to norm 1.0",
        {"sparsegrad": _clip_sparsegrad(True), "tensorflow": _clip_tensorflow(True)},
        lambda quick: 3 * _value_bytes(quick),
    ),
    Case(
        "clip/global_norm",
        "the global norm of the same gradients",
        {"sparsegrad": _norm_sparsegrad, "tensorflow": _norm_tensorflow},
        _value_bytes,
    ),
    Case(
        "clip/clip_by_global_norm_dense",
        "the ten dense gradients alone (torch: clip_grad_norm_ in place; "
        "NumPy: vdot norms, v * scale)",
        {"sparsegrad": _clip_sparsegrad(False), "tensorflow": _clip_tensorflow(False),
         "torch": _clip_torch, "numpy": _clip_numpy},
        lambda quick: 3 * _value_bytes(quick, sparse=False),
    ),
]
