"""Training ops and optimizer steps (issue 4).

The embedding gradient of :mod:`sparsegrad.bench.inputs` (16,384 Zipf(1.1)
ids into a 1,000,000 x 64 float32 table):

* ``training_ops/sparse_apply_adagrad_v2`` and ``training_ops/sparse_apply_ftrl``:
  the raw sparse kernels against TensorFlow's ``ResourceSparseApplyAdagradV2``
  and ``ResourceSparseApplyFtrl`` called eagerly on the same data; their
  ``_float16`` and ``_bfloat16`` variants on the same data in those types
  (TensorFlow's half kernels against sparsegrad's), with floors from their
  own byte counts.
* ``training_ops/adam_lazy_step``: ``optimizers.Adam(lazy=True).apply_gradients``
  (only the touched rows of the table, ``m`` and ``v``) against
  ``torch.optim.SparseAdam`` with the gradient as a sparse COO tensor.
* ``training_ops/adagrad_step``: ``optimizers.Adagrad`` against
  ``torch.optim.Adagrad`` on the same sparse gradient.
* ``training_ops/small_adagrad_step``: ``optimizers.Adagrad`` on a 64 x 16
  gradient of a 100,000 x 16 table, on one thread (the time around the
  kernel), against ``torch.optim.Adagrad`` and TensorFlow's raw op; a
  steady-state case of 1,000 steps per process.
* ``training_ops/lion_lazy_step``: ``optimizers.Lion(lazy=True).apply_gradients``
  (only the touched rows of the table and ``m``), against its floor alone.
* ``training_ops/nadam_lazy_step``: ``optimizers.Nadam(lazy=True)``, which
  reads and writes what lazy Adam does (no other library has a lazy Nadam).
* ``training_ops/lamb_lazy_step``: ``optimizers.Lamb(lazy=True)``, the same
  bytes again; each touched row takes two passes (its norms, then its step),
  the second over the row that the first left in cache.
* ``training_ops/adagrad_step_bfloat16`` and
  ``training_ops/adam_lazy_step_bfloat16``: the same steps on the table
  rounded to bfloat16, with ``slot_dtype="bfloat16"`` and
  ``stochastic_rounding=True`` (float32 arithmetic, one rounding per store)
  and the same float32 gradient values, against ``torch.optim.Adagrad`` and
  ``SparseAdam`` on a bfloat16 parameter (PyTorch takes only a bfloat16
  gradient for it, so its gradient values are rounded to bfloat16; its
  slots are bfloat16 too, rounded to nearest).  Floors from two-byte table
  and slot rows and the four-byte gradient.  The ``_nearest`` variants
  (sparsegrad alone) round to nearest: the difference is the cost of
  stochastic rounding.

``training_ops/adagrad_step`` and ``training_ops/adam_lazy_step`` report
sparsegrad's resident-memory growth (``Case.memory``), and their
``_bfloat16`` cases compare theirs with it (``Case.memory_baseline``): a
bfloat16 table and its slots should take half the memory.

Optimizer setups take ten steps before they return: PyTorch's first steps are
several times slower than its steady state, which is what training sees.

* ``training_ops/apply_adam``: dense ``apply_adam`` on 10,000,000 float32
  parameters against ``torch.optim.Adam(foreach=True).step()``, TensorFlow's
  ``ResourceApplyAdam`` and the update written with NumPy ufuncs in place.

The floor of an update: each touched row (or element) of the variable and of
every slot read and written once, the gradient and the ids read once.
"""

from . import inputs
from .case import Case
from .sizes import DENSE_UPDATE
from .slices import four_way_case

LEARNING_RATE = 0.01
WARMUP_STEPS = 10


def _sparse_state(quick, dtype="float32"):
    import ml_dtypes  # noqa: F401  (names "bfloat16" to NumPy)
    import numpy as np

    ids, grad, _ = inputs.sparse_gradient(quick)
    var = inputs.table(quick)
    dtype = np.dtype(dtype)
    grad, var = grad.astype(dtype), var.astype(dtype)
    return ids, grad, var, np.full_like(var, 0.1), np.zeros_like(var)


def _adagrad_sparsegrad(dtype):
    def setup(quick):
        from sparsegrad import training_ops

        ids, grad, var, accum, _ = _sparse_state(quick, dtype)
        return lambda: training_ops.sparse_apply_adagrad_v2(
            var, accum, LEARNING_RATE, 1e-7, grad, ids)

    return setup


def _ftrl_sparsegrad(dtype):
    def setup(quick):
        from sparsegrad import training_ops

        ids, grad, var, accum, linear = _sparse_state(quick, dtype)
        return lambda: training_ops.sparse_apply_ftrl(
            var, accum, linear, grad, ids, LEARNING_RATE, 0.01, 0.01, -0.5)

    return setup


def _tf_sparse_state(quick, dtype):
    import tensorflow as tf

    ids, grad, var, accum, linear = _sparse_state(quick, dtype)
    return (tf.constant(ids), tf.constant(grad), tf.Variable(var),
            tf.Variable(accum), tf.Variable(linear))


def _adagrad_tensorflow(dtype):
    def setup(quick):
        import tensorflow as tf

        ids, grad, var, accum, _ = _tf_sparse_state(quick, dtype)
        lr, eps = (tf.constant(x, dtype=dtype) for x in (LEARNING_RATE, 1e-7))
        return lambda: tf.raw_ops.ResourceSparseApplyAdagradV2(
            var=var.handle, accum=accum.handle, lr=lr, epsilon=eps, grad=grad,
            indices=ids)

    return setup


def _ftrl_tensorflow(dtype):
    def setup(quick):
        import tensorflow as tf

        ids, grad, var, accum, linear = _tf_sparse_state(quick, dtype)
        lr, l1, l2, power = (tf.constant(x, dtype=dtype)
                             for x in (LEARNING_RATE, 0.01, 0.01, -0.5))
        return lambda: tf.raw_ops.ResourceSparseApplyFtrl(
            var=var.handle, accum=accum.handle, linear=linear.handle, grad=grad,
            indices=ids, lr=lr, l1=l1, l2=l2, lr_power=power)

    return setup


def _raw_sparse_cases():
    """The raw sparse Adagrad and FTRL cases in float32, float16 and
    bfloat16: each type's own state, TensorFlow's kernel of that type, and a
    floor from that type's bytes."""
    cases = []
    for dtype, itemsize in (("float32", 4), ("float16", 2), ("bfloat16", 2)):
        suffix = "" if dtype == "float32" else f"_{dtype}"
        cases += [
            Case(
                f"training_ops/sparse_apply_adagrad_v2{suffix}",
                "raw sparse Adagrad kernel: 16,384 Zipf(1.1) ids x 64 "
                f"{dtype} into a 1,000,000 x 64 table",
                {"sparsegrad": _adagrad_sparsegrad(dtype),
                 "tensorflow": _adagrad_tensorflow(dtype)},
                lambda quick, n=itemsize: inputs.sparse_update_bytes(quick, 2, n),
            ),
            Case(
                f"training_ops/sparse_apply_ftrl{suffix}",
                "raw sparse FTRL kernel (l1 = l2 = 0.01, power -0.5) on the same "
                f"gradient, {dtype}",
                {"sparsegrad": _ftrl_sparsegrad(dtype),
                 "tensorflow": _ftrl_tensorflow(dtype)},
                lambda quick, n=itemsize: inputs.sparse_update_bytes(quick, 3, n),
            ),
        ]
    return cases


# ---------------------------------------------------------------------------
# Dense Adam.


def _dense_state(quick):
    import numpy as np

    n = DENSE_UPDATE.pick(quick)
    rng = np.random.default_rng(1)
    var = rng.standard_normal(n, dtype=np.float32)
    grad = rng.standard_normal(n, dtype=np.float32)
    return var, np.zeros(n, np.float32), np.zeros(n, np.float32), grad


def _adam_sparsegrad(quick):
    from sparsegrad import training_ops

    var, m, v, grad = _dense_state(quick)
    step = [0]

    def run():
        step[0] += 1
        t = step[0]
        training_ops.apply_adam(var, m, v, 0.9**t, 0.999**t, 1e-3, 0.9, 0.999,
                                1e-7, grad)

    return run


def _adam_torch(quick):
    import torch

    var, _, _, grad = _dense_state(quick)
    param = torch.nn.Parameter(torch.from_numpy(var))
    param.grad = torch.from_numpy(grad)
    opt = torch.optim.Adam([param], lr=1e-3, eps=1e-7, foreach=True)
    return opt.step


def _adam_tensorflow(quick):
    import tensorflow as tf

    var, m, v, grad = _dense_state(quick)
    var, m, v = tf.Variable(var), tf.Variable(m), tf.Variable(v)
    grad = tf.constant(grad)
    consts = {k: tf.constant(x) for k, x in
              (("lr", 1e-3), ("beta1", 0.9), ("beta2", 0.999), ("epsilon", 1e-7))}
    step = [0]

    def run():
        step[0] += 1
        t = step[0]
        tf.raw_ops.ResourceApplyAdam(
            var=var.handle, m=m.handle, v=v.handle,
            beta1_power=tf.constant(0.9**t), beta2_power=tf.constant(0.999**t),
            grad=grad, **consts)

    return run


def _adam_numpy(quick):
    import numpy as np

    var, m, v, grad = _dense_state(quick)
    scratch = np.empty_like(var)
    step = [0]

    def run():
        step[0] += 1
        t = step[0]
        lr = 1e-3 * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        # m += (1 - beta1) * (g - m); v += (1 - beta2) * (g * g - v)
        np.subtract(grad, m, out=scratch)
        np.multiply(scratch, np.float32(0.1), out=scratch)
        np.add(m, scratch, out=m)
        np.multiply(grad, grad, out=scratch)
        np.subtract(scratch, v, out=scratch)
        np.multiply(scratch, np.float32(0.001), out=scratch)
        np.add(v, scratch, out=v)
        # var -= lr * m / (sqrt(v) + eps)
        np.sqrt(v, out=scratch)
        np.add(scratch, np.float32(1e-7), out=scratch)
        np.divide(m, scratch, out=scratch)
        np.multiply(scratch, np.float32(lr), out=scratch)
        np.subtract(var, scratch, out=var)

    return run


def _adam_bytes(quick):
    n = DENSE_UPDATE.pick(quick)
    return 2 * 3 * n * 4 + n * 4


# ---------------------------------------------------------------------------
# Optimizer steps on the sparse gradient.


def _warmed(step):
    for _ in range(WARMUP_STEPS):
        step()
    return step


def optimizer_step(quick, make, dtype="float32"):
    """The step of the optimizer cases, before any warm-up.

    Parameters
    ----------
    quick : bool
        The reduced size.
    make : callable
        ``make(sg)`` -> the optimizer (``sg`` is the ``sparsegrad`` module).
    dtype : str, optional
        The table's dtype: the float32 table of :func:`.inputs.table` rounded
        to it (``"bfloat16"``: to nearest).  The gradient stays float32.

    Returns
    -------
    step : callable
        One ``apply_gradients`` of the case's gradient (an ``IndexedSlices``
        of the 16,384 Zipf ids, float32 values) to the table.
    table : sparsegrad.Variable
        The table it updates (its slots built).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> step, table = optimizer_step(
    ...     True, lambda sg: sg.optimizers.Adagrad(0.01, **HALF_SLOTS), "bfloat16")
    >>> before = table.numpy().copy()
    >>> _ = step()
    >>> str(table.dtype), bool((table.numpy() != before).any())
    ('bfloat16', True)
    """
    import numpy as np

    import sparsegrad as sg

    ids, values, shape = inputs.sparse_gradient(quick, scale=1e-2)
    table = sg.Variable(inputs.table(quick, scale=1e-2).astype(np.dtype(dtype)))
    grad = sg.IndexedSlices(values, ids, dense_shape=shape)
    opt = make(sg)
    opt.build([table])
    return (lambda: opt.apply_gradients([(grad, table)])), table


def _optimizer_sparsegrad(make, dtype="float32"):
    def setup(quick):
        return _warmed(optimizer_step(quick, make, dtype)[0])

    return setup


def _optimizer_torch(make, dtype="float32"):
    """PyTorch's step on a parameter of `dtype`: the float32 table rounded to
    it (to nearest, as ``Tensor.to`` does), and the gradient values too (a
    half parameter takes only a gradient of its own dtype)."""

    def setup(quick):
        import torch

        ids, values, shape = inputs.sparse_gradient(quick, scale=1e-2)
        t_dtype = getattr(torch, dtype)
        param = torch.nn.Parameter(
            torch.from_numpy(inputs.table(quick, scale=1e-2)).to(t_dtype))
        opt = make(torch, param)
        t_ids = torch.from_numpy(ids).reshape(1, -1)
        t_values = torch.from_numpy(values).to(t_dtype)

        def step():
            param.grad = torch.sparse_coo_tensor(t_ids, t_values, shape)
            opt.step()

        return _warmed(step)

    return setup


# The small step (issue 9's setting): 64 distinct rows of 16 float32 of a
# 100,000-row table, on one thread, where what surrounds the kernel is the cost.
SMALL_ROWS, SMALL_WIDTH, SMALL_IDS = 100_000, 16, 64


def _small_inputs():
    """The small step's (ids, gradient values, table): the same at every size
    (it is small already)."""
    import numpy as np

    rng = np.random.default_rng(0)
    ids = rng.choice(SMALL_ROWS, size=SMALL_IDS, replace=False).astype(np.int64)
    values = (rng.standard_normal((SMALL_IDS, SMALL_WIDTH)) * 1e-2).astype(np.float32)
    table = (rng.standard_normal((SMALL_ROWS, SMALL_WIDTH)) * 1e-2).astype(np.float32)
    return ids, values, table


def _small_sparsegrad(quick):
    import sparsegrad as sg

    ids, values, table = _small_inputs()
    var = sg.Variable(table)
    grad = sg.IndexedSlices(values, ids, dense_shape=table.shape)
    opt = sg.optimizers.Adagrad(LEARNING_RATE)
    return _warmed(lambda: opt.apply_gradients([(grad, var)]))


def _small_torch(quick):
    import torch

    ids, values, table = _small_inputs()
    param = torch.nn.Parameter(torch.from_numpy(table))
    opt = torch.optim.Adagrad([param], lr=LEARNING_RATE)
    t_ids, t_values = torch.from_numpy(ids).reshape(1, -1), torch.from_numpy(values)

    def step():
        param.grad = torch.sparse_coo_tensor(t_ids, t_values, table.shape)
        opt.step()

    return _warmed(step)


def _small_tensorflow(quick):
    import tensorflow as tf

    ids, values, table = _small_inputs()
    var = tf.Variable(table)
    accum = tf.Variable(tf.fill(table.shape, 0.1))
    lr, eps = tf.constant(LEARNING_RATE), tf.constant(1e-7)
    t_ids, t_values = tf.constant(ids), tf.constant(values)
    return _warmed(lambda: tf.raw_ops.ResourceSparseApplyAdagradV2(
        var=var.handle, accum=accum.handle, lr=lr, epsilon=eps, grad=t_values,
        indices=t_ids))


def _small_bytes(quick):
    """Each touched row of the table and the accumulator read and written,
    the gradient and the ids read."""
    row = SMALL_WIDTH * 4
    return 2 * 2 * SMALL_IDS * row + SMALL_IDS * row + SMALL_IDS * 8


# The options of the half-table optimizer cases: bfloat16 slots, stochastic
# rounding (what a user of half tables runs; the _nearest cases round to
# nearest instead, as PyTorch does).
HALF_SLOTS = {"slot_dtype": "bfloat16", "stochastic_rounding": True, "seed": 0}
NEAREST_SLOTS = {"slot_dtype": "bfloat16"}


def _half_step_cases():
    """Adagrad and lazy Adam on a bfloat16 table with bfloat16 slots (float32
    gradient values), with stochastic rounding against PyTorch's optimizer on
    a bfloat16 parameter, and rounding to nearest (sparsegrad alone); floors
    from two-byte table and slot rows and the four-byte gradient."""
    kinds = (
        ("adagrad_step", "Adagrad", 2,
         lambda sg, o: sg.optimizers.Adagrad(LEARNING_RATE, **o),
         lambda torch, p: torch.optim.Adagrad([p], lr=LEARNING_RATE),
         "torch.optim.Adagrad"),
        ("adam_lazy_step", "Adam(lazy=True)", 3,
         lambda sg, o: sg.optimizers.Adam(1e-3, lazy=True, **o),
         lambda torch, p: torch.optim.SparseAdam([p], lr=1e-3),
         "torch.optim.SparseAdam"),
    )
    cases = []
    for name, what, n_state, make, make_torch, torch_name in kinds:
        def floor(quick, n=n_state):
            return inputs.sparse_update_bytes(quick, n, 2, grad_itemsize=4)

        cases += [
            Case(
                f"training_ops/{name}_bfloat16",
                f"{what} on a bfloat16 table, bfloat16 slots, stochastic "
                "rounding, float32 gradient values, vs "
                f"{torch_name} on a bfloat16 parameter (bfloat16 gradient "
                "values: torch takes no float32 gradient for it; its slots "
                "bfloat16, rounded to nearest), after 10 steps",
                {"sparsegrad": _optimizer_sparsegrad(
                    lambda sg, m=make: m(sg, HALF_SLOTS), "bfloat16"),
                 "torch": _optimizer_torch(make_torch, "bfloat16")},
                floor,
                memory_baseline=f"training_ops/{name}",
            ),
            Case(
                f"training_ops/{name}_bfloat16_nearest",
                f"{what} on a bfloat16 table, bfloat16 slots, rounded to "
                f"nearest (the cost of stochastic rounding: compare with "
                f"{name}_bfloat16), after 10 steps",
                {"sparsegrad": _optimizer_sparsegrad(
                    lambda sg, m=make: m(sg, NEAREST_SLOTS), "bfloat16")},
                floor,
            ),
        ]
    return cases


CASES = [
    *_raw_sparse_cases(),
    four_way_case("training_ops/apply_adam", "dense Adam update of 10,000,000 "
                  "float32 parameters (torch: Adam(foreach=True).step(); NumPy: "
                  "in-place ufuncs)",
                  (_adam_sparsegrad, _adam_tensorflow, _adam_torch, _adam_numpy),
                  _adam_bytes),
    Case(
        "training_ops/adam_lazy_step",
        "Adam(lazy=True).apply_gradients on the sparse gradient vs "
        "torch.optim.SparseAdam, after 10 steps",
        {"sparsegrad": _optimizer_sparsegrad(
            lambda sg: sg.optimizers.Adam(1e-3, lazy=True)),
         "torch": _optimizer_torch(
            lambda torch, p: torch.optim.SparseAdam([p], lr=1e-3))},
        lambda quick: inputs.sparse_update_bytes(quick, 3),
        memory=True,
    ),
    Case(
        "training_ops/adagrad_step",
        "Adagrad.apply_gradients on the sparse gradient vs torch.optim.Adagrad "
        "(sparse COO grad), after 10 steps",
        {"sparsegrad": _optimizer_sparsegrad(
            lambda sg: sg.optimizers.Adagrad(LEARNING_RATE)),
         "torch": _optimizer_torch(
            lambda torch, p: torch.optim.Adagrad([p], lr=LEARNING_RATE))},
        lambda quick: inputs.sparse_update_bytes(quick, 2),
        memory=True,
    ),
    *_half_step_cases(),
    Case(
        "training_ops/small_adagrad_step",
        "a small sparse step on one thread, where the cost is what surrounds "
        "the kernel: Adagrad.apply_gradients of a 64 x 16 float32 "
        "IndexedSlices (64 distinct rows) on a 100,000 x 16 table, vs "
        "torch.optim.Adagrad (sparse COO grad) and TensorFlow's "
        "ResourceSparseApplyAdagradV2 op; 1,000 consecutive steps per process",
        {"sparsegrad": _small_sparsegrad, "torch": _small_torch,
         "tensorflow": _small_tensorflow},
        _small_bytes,
        threads=1,
        steps=1000,
        block=100,
    ),
    Case(
        "training_ops/lion_lazy_step",
        "Lion(lazy=True).apply_gradients on the sparse gradient (no other "
        "library has a sparse Lion), after 10 steps",
        {"sparsegrad": _optimizer_sparsegrad(
            lambda sg: sg.optimizers.Lion(1e-4, lazy=True))},
        lambda quick: inputs.sparse_update_bytes(quick, 2),
    ),
    Case(
        "training_ops/nadam_lazy_step",
        "Nadam(lazy=True).apply_gradients on the sparse gradient (the touched "
        "rows of the table, m and v), after 10 steps",
        {"sparsegrad": _optimizer_sparsegrad(
            lambda sg: sg.optimizers.Nadam(1e-3, lazy=True))},
        lambda quick: inputs.sparse_update_bytes(quick, 3),
    ),
    Case(
        "training_ops/lamb_lazy_step",
        "Lamb(lazy=True).apply_gradients on the sparse gradient (the touched "
        "rows of the table, m and v; a trust ratio per row), after 10 steps",
        {"sparsegrad": _optimizer_sparsegrad(
            lambda sg: sg.optimizers.Lamb(1e-3, lazy=True))},
        lambda quick: inputs.sparse_update_bytes(quick, 3),
    ),
]
