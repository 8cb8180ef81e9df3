"""End-to-end case: one training step of a CTR model.

The model (issue 12): a batch of 4,096 examples, each with 26 categorical
fields whose ids are hashed into one shared 1,000,000 x 16 float32 embedding
table; the 26 looked-up rows are concatenated (416 features) and fed to an MLP
416 -> 64 (ReLU) -> 1, with a sigmoid cross-entropy loss averaged over the
batch.  One step is: forward, backward, clipping of all gradients by their
global norm (1.0), lazy Adam on the table (only the looked-up rows and their
moments change) and Adam on the MLP, learning rate 0.001, epsilon 1e-7.

Ids: in each field, ranks drawn from Zipf(1.15) are hashed (a splitmix-style
mix of rank and field) into the table, so that the 106,496 ids of a batch hit
about 45,000 distinct rows, the skew of click logs.  Eight batches are made
up front and each step takes the next, so no step sees the ids of the one
before it.  Labels are 0/1 with probability 1/4 of a click.

* ``sparsegrad``: ``nn.embedding_lookup`` under a ``GradientTape``; one
  ``optimizers.Adam(lazy=True, global_clipnorm=1.0)`` for all five variables
  (``lazy`` changes only sparse gradients, so the MLP gets plain Adam): the
  global norm is taken over every gradient and the scale applied by the
  update kernels as they read the gradient.
* ``torch``: ``Embedding(sparse=True)``, two ``Linear`` layers,
  ``BCEWithLogitsLoss``; the sparse table gradient is coalesced, the global
  norm taken over it and the dense gradients and all scaled in place
  (``clip_grad_norm_`` rejects sparse gradients); then ``SparseAdam`` on the
  table and ``Adam`` on the MLP.
* ``tensorflow``: eager, ``tf.nn.embedding_lookup`` under a
  ``tf.GradientTape``, ``tf.clip_by_global_norm``; the lazy Adam of the table
  as TF-Addons' ``LazyAdam`` wrote it (``tf.unique`` +
  ``unsorted_segment_sum``, then gather, update and ``scatter_update`` of the
  touched rows of the table, ``m`` and ``v``), ``ResourceApplyAdam`` on the
  MLP.

Every library starts from the same float32 initial values (Glorot-uniform
MLP weights, zero biases, a table uniform in [-0.05, 0.05]).

The case is a steady-state case (``Case.steps``): each process times 100
consecutive steps after the warm-up, and the table compares their blocks of
10 (a step must cost the same from the first step to the last).
"""

import numpy as np

from .case import Case
from .sizes import END_TO_END

__all__ = ["CASES", "make_batches", "initial_values", "floor_bytes", "floor_flops"]

FIELDS, WIDTH, HIDDEN = 26, 16, 64
LEARNING_RATE, EPSILON, CLIP_NORM = 1e-3, 1e-7, 1.0
ZIPF_EXPONENT = 1.15
N_BATCHES = 8


def _sizes(quick):
    """(batch, table rows)."""
    return END_TO_END.pick(quick)


def make_batches(quick, seed=0):
    """The eight batches: a list of ``(ids, labels)``.

    ``ids`` is int64 of shape ``(batch, 26)``, in ``[0, table rows)``;
    ``labels`` is float32 of shape ``(batch,)``, 0 or 1.
    """
    batch, n_rows = _sizes(quick)
    rng = np.random.default_rng(seed)
    field = np.arange(FIELDS, dtype=np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
    out = []
    with np.errstate(over="ignore"):
        for _ in range(N_BATCHES):
            ranks = rng.zipf(ZIPF_EXPONENT, size=(batch, FIELDS)).astype(np.uint64)
            x = ranks * np.uint64(0x9E3779B97F4A7C15) + field
            x ^= x >> np.uint64(31)
            x *= np.uint64(0xBF58476D1CE4E5B9)
            x ^= x >> np.uint64(29)
            ids = (x % np.uint64(n_rows)).astype(np.int64)
            labels = (rng.random(batch) < 0.25).astype(np.float32)
            out.append((ids, labels))
    return out


def initial_values(quick, seed=1):
    """The initial float32 values: table, w1, b1, w2, b2."""
    _, n_rows = _sizes(quick)
    rng = np.random.default_rng(seed)
    n_in = FIELDS * WIDTH

    def glorot(fan_in, fan_out):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32)

    table = rng.uniform(-0.05, 0.05, (n_rows, WIDTH)).astype(np.float32)
    return (table, glorot(n_in, HIDDEN), np.zeros(HIDDEN, np.float32),
            glorot(HIDDEN, 1), np.zeros(1, np.float32))


def floor_bytes(quick):
    """The bytes a step must move at least, averaged over the batches.

    Lookup: ids read, looked-up rows written (the distinct rows read are
    counted in the update).  Table gradient: one row per id written, then
    read.  Lazy Adam: per distinct row, var, m and v read and written; the
    ids read once more.  The MLP (27,000 floats) is negligible.
    """
    row = WIDTH * 4
    total = 0
    batches = make_batches(quick)
    for ids, _ in batches:
        n_ids = ids.size
        distinct = np.unique(ids).size
        total += n_ids * 8 * 2 + n_ids * row * 3 + distinct * row * 6
    return total // len(batches)


def floor_flops(quick):
    """The floating-point operations of a step's matrix products: the
    forward product of each layer, and in the backward pass the product for
    its weights' gradient and the one for its input's gradient (the lookup's
    rows need theirs), ``2 m n k`` each: three 4,096 x 416 x 64 products, and
    three 4,096 x 64 x 1 ones.
    """
    batch, _ = _sizes(quick)
    features = FIELDS * WIDTH
    return 3 * 2 * batch * (features * HIDDEN + HIDDEN * 1)


def _cycle(batches):
    state = {"k": 0}

    def take():
        k = state["k"]
        state["k"] = (k + 1) % len(batches)
        return batches[k]

    return take


def _loss_on(api, variables, ids, labels):
    """The model's loss on a TensorFlow-style API (`api`: the module of
    sparsegrad or of TensorFlow; both have these names), inside a tape."""
    table, w1, b1, w2, b2 = variables
    emb = api.nn.embedding_lookup(table, ids)
    x = api.reshape(emb, (ids.shape[0], FIELDS * WIDTH))
    h = api.nn.relu(api.matmul(x, w1) + b1)
    logits = api.reshape(api.matmul(h, w2) + b2, (-1,))
    return api.reduce_mean(
        api.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))


def setup_sparsegrad(quick):
    import sparsegrad as sg

    batches = _cycle(make_batches(quick))
    variables = [sg.Variable(v) for v in initial_values(quick)]
    opt = sg.optimizers.Adam(learning_rate=LEARNING_RATE, epsilon=EPSILON, lazy=True,
                             global_clipnorm=CLIP_NORM)

    def step():
        ids, labels = batches()
        with sg.GradientTape() as tape:
            loss = _loss_on(sg, variables, ids, labels)
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables))
        return loss

    return step


def setup_torch(quick):
    import torch

    batches = [(torch.from_numpy(ids), torch.from_numpy(labels))
               for ids, labels in make_batches(quick)]
    take = _cycle(batches)
    table, w1, b1, w2, b2 = initial_values(quick)
    emb = torch.nn.Embedding(table.shape[0], WIDTH, sparse=True)
    lin1 = torch.nn.Linear(FIELDS * WIDTH, HIDDEN)
    lin2 = torch.nn.Linear(HIDDEN, 1)
    with torch.no_grad():
        emb.weight.copy_(torch.from_numpy(table))
        lin1.weight.copy_(torch.from_numpy(w1.T.copy()))
        lin1.bias.copy_(torch.from_numpy(b1))
        lin2.weight.copy_(torch.from_numpy(w2.T.copy()))
        lin2.bias.copy_(torch.from_numpy(b2))
    dense = list(lin1.parameters()) + list(lin2.parameters())
    sparse_opt = torch.optim.SparseAdam([emb.weight], lr=LEARNING_RATE, eps=EPSILON)
    dense_opt = torch.optim.Adam(dense, lr=LEARNING_RATE, eps=EPSILON)
    loss_fn = torch.nn.BCEWithLogitsLoss()

    def step():
        ids, labels = take()
        sparse_opt.zero_grad(set_to_none=True)
        dense_opt.zero_grad(set_to_none=True)
        x = emb(ids).reshape(ids.shape[0], FIELDS * WIDTH)
        logits = lin2(torch.relu(lin1(x))).reshape(-1)
        loss = loss_fn(logits, labels)
        loss.backward()
        with torch.no_grad():
            # The norm of the represented table gradient: repeats summed first.
            grad = emb.weight.grad.coalesce()
            emb.weight.grad = grad
            squares = [grad._values().square().sum()]
            squares += [p.grad.square().sum() for p in dense]
            norm = torch.stack(squares).sum().sqrt()
            # TensorFlow's clip_by_global_norm: clip * min(1 / norm, 1 / clip).
            scale = CLIP_NORM * torch.minimum(1.0 / norm,
                                              torch.tensor(1.0 / CLIP_NORM))
            grad._values().mul_(scale)
            torch._foreach_mul_([p.grad for p in dense], scale)
        sparse_opt.step()
        dense_opt.step()
        return loss

    return step


def setup_tensorflow(quick):
    import tensorflow as tf

    batches = _cycle([(tf.constant(ids), tf.constant(labels))
                      for ids, labels in make_batches(quick)])
    values = initial_values(quick)
    variables = [tf.Variable(v) for v in values]
    table = variables[0]
    slots = [(tf.Variable(tf.zeros_like(v)), tf.Variable(tf.zeros_like(v)))
             for v in values]
    beta1, beta2 = 0.9, 0.999
    step_count = {"t": 0}
    lr, eps = tf.constant(LEARNING_RATE), tf.constant(EPSILON)
    b1_t, b2_t = tf.constant(beta1), tf.constant(beta2)

    def lazy_adam(var, m, v, grad, alpha):
        unique, positions = tf.unique(grad.indices)
        summed = tf.math.unsorted_segment_sum(grad.values, positions,
                                              tf.shape(unique)[0])
        rows = tf.expand_dims(unique, 1)
        m_rows = tf.gather(m, unique) * beta1 + summed * (1 - beta1)
        v_rows = tf.gather(v, unique) * beta2 + tf.square(summed) * (1 - beta2)
        m.scatter_nd_update(rows, m_rows)
        v.scatter_nd_update(rows, v_rows)
        var.scatter_nd_sub(rows, alpha * m_rows / (tf.sqrt(v_rows) + eps))

    def step():
        ids, labels = batches()
        with tf.GradientTape() as tape:
            loss = _loss_on(tf, variables, ids, labels)
        grads = tape.gradient(loss, variables)
        grads, _ = tf.clip_by_global_norm(grads, CLIP_NORM)
        step_count["t"] += 1
        t = step_count["t"]
        p1 = tf.constant(beta1 ** t, tf.float32)
        p2 = tf.constant(beta2 ** t, tf.float32)
        alpha = lr * tf.sqrt(1 - p2) / (1 - p1)
        lazy_adam(table, *slots[0], grads[0], alpha)
        for var, (m, v), g in zip(variables[1:], slots[1:], grads[1:]):
            tf.raw_ops.ResourceApplyAdam(
                var=var.handle, m=m.handle, v=v.handle, beta1_power=p1,
                beta2_power=p2, lr=lr, beta1=b1_t, beta2=b2_t, epsilon=eps,
                grad=g)
        return loss

    return step


CASES = [
    Case(
        name="end_to_end/ctr_step",
        description=(
            "one CTR training step: batch 4,096 x 26 Zipf(1.15) hashed ids "
            "(~45,000 distinct rows) into a 1,000,000 x 16 float32 table, MLP "
            "416-64-1, sigmoid cross-entropy, clip by global norm, lazy Adam on "
            "the table and Adam on the MLP"
        ),
        setups={"sparsegrad": setup_sparsegrad, "torch": setup_torch,
                "tensorflow": setup_tensorflow},
        floor_bytes=floor_bytes,
        floor_flops=floor_flops,
        steps=100,
    ),
]
