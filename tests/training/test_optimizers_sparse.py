"""Sparse (IndexedSlices) gradients in the optimizers.

Every optimizer sums repeated indices and applies its update once per
distinct row.  Lazy optimizers (all but ``Adam``/``AdamW`` with
``lazy=False``) leave other rows and their slots untouched, so a sparse step
equals the dense step of the touched rows with the summed gradient.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import sparsegrad as sg

LAZY_CONFIGS = [
    ("SGD", {"learning_rate": 0.1}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.5}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.5, "nesterov": True}),
    ("Adagrad", {"learning_rate": 0.1}),
    ("RowwiseAdagrad", {"learning_rate": 0.1}),
    ("Adadelta", {"learning_rate": 1.0}),
    ("Adam", {"learning_rate": 0.1, "lazy": True}),
    ("AdamW", {"learning_rate": 0.1, "weight_decay": 0.1, "lazy": True}),
    ("Adamax", {"learning_rate": 0.1}),
    ("Ftrl", {"learning_rate": 0.1, "l1_regularization_strength": 0.01,
              "l2_regularization_strength": 0.1, "beta": 0.5}),
    ("Ftrl", {"learning_rate": 0.1, "l2_shrinkage_regularization_strength": 0.1}),
    ("RMSprop", {"learning_rate": 0.1}),
    ("RMSprop", {"learning_rate": 0.1, "momentum": 0.5, "centered": True}),
    ("ProximalGradientDescent", {"learning_rate": 0.1,
                                 "l1_regularization_strength": 0.01,
                                 "l2_regularization_strength": 0.1}),
    ("ProximalAdagrad", {"learning_rate": 0.1, "l1_regularization_strength": 0.01,
                         "l2_regularization_strength": 0.1}),
    ("Lion", {"learning_rate": 0.1, "lazy": True}),
]
# The sparse RMSprop kernels round differently from the dense ones
# (reference/training_ops.md 3.14, 3.15); everything else is bit-identical.
NOT_BITWISE = {"RMSprop"}

# duplicates, rows 2-4, 6, 7 untouched
INDICES = np.array([5, 1, 5, 0, 5, 1], dtype=np.int64)


def config_id(config):
    name, kwargs = config
    extras = [k for k in ("momentum", "nesterov", "centered", "lazy",
                          "l2_shrinkage_regularization_strength") if k in kwargs]
    return "-".join([name] + extras)


def make(name, kwargs):
    return getattr(sg.optimizers, name)(**kwargs)


def summed_rows(indices, values):
    unique = np.unique(indices)
    summed = np.zeros((unique.shape[0],) + values.shape[1:], values.dtype)
    for k, i in enumerate(indices):                  # in order, from zero
        summed[np.searchsorted(unique, i)] += values[k]
    return unique, summed


def assert_same(got, want, bitwise, msg=""):
    if bitwise:
        np.testing.assert_array_equal(got, want, err_msg=msg)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6 if got.dtype == np.float32
                                   else 1e-13, atol=0, err_msg=msg)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("config", LAZY_CONFIGS, ids=config_id)
def test_sparse_step_is_dense_step_of_touched_rows(config, dtype, rng):
    name, kwargs = config
    table = rng.standard_normal((8, 3)).astype(dtype)
    w = sg.Variable(table)
    opt = make(name, kwargs)
    for _ in range(2):                                # make the slots non-trivial
        opt.apply_gradients([(rng.standard_normal((8, 3)).astype(dtype), w)])
    before = {f: None if s is None else s.numpy()
              for f, s in opt.get_state(w)._asdict().items()}
    w_before = w.numpy()

    values = rng.standard_normal((INDICES.shape[0], 3)).astype(dtype)
    unique, summed = summed_rows(INDICES, values)

    # The reference: a second optimizer whose variable is just the touched rows.
    sub = sg.Variable(w_before[unique])
    ref = make(name, kwargs)
    ref.build([sub])
    for field, slot in ref.get_state(sub)._asdict().items():
        if slot is not None:
            slot._value[...] = before[field][unique]
    ref.iterations._value[...] = opt.iterations_count
    ref.apply_gradients([(summed, sub)])

    opt.apply_gradients([(sg.IndexedSlices(values, INDICES), w)])
    bitwise = name not in NOT_BITWISE
    untouched = np.setdiff1d(np.arange(8), unique)
    assert_same(w.numpy()[unique], sub.numpy(), bitwise, "touched rows of var")
    np.testing.assert_array_equal(w.numpy()[untouched], w_before[untouched])
    for field, slot in opt.get_state(w)._asdict().items():
        if slot is None:
            continue
        assert_same(slot.numpy()[unique], ref.get_slot(sub, field).numpy(), bitwise,
                    field)
        np.testing.assert_array_equal(slot.numpy()[untouched], before[field][untouched])
    assert opt.iterations_count == 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("config", [
    ("SGD", {"learning_rate": 0.1}),
    ("Adagrad", {"learning_rate": 0.1}),
    ("ProximalGradientDescent", {"learning_rate": 0.1}),
    ("Adam", {"learning_rate": 0.1}),                   # lazy=False: dense semantics
    ("Adam", {"learning_rate": 0.1, "amsgrad": True}),
    ("Lion", {"learning_rate": 0.1, "beta_1": 0.8}),    # lazy=False: dense semantics
], ids=config_id)
def test_sparse_equals_densified(config, dtype, rng):
    """Where zero gradient rows do not change anything (or lazy=False), the
    sparse step equals the dense step on the densified gradient, bit for bit."""
    name, kwargs = config
    table = rng.standard_normal((8, 3)).astype(dtype)
    w_sparse, w_dense = sg.Variable(table), sg.Variable(table)
    opt_sparse, opt_dense = make(name, kwargs), make(name, kwargs)
    for _ in range(3):
        values = rng.standard_normal((INDICES.shape[0], 3)).astype(dtype)
        grad = sg.IndexedSlices(values, INDICES, dense_shape=(8, 3))
        opt_sparse.apply_gradients([(grad, w_sparse)])
        opt_dense.apply_gradients([(grad.to_dense().numpy(), w_dense)])
    np.testing.assert_array_equal(w_sparse.numpy(), w_dense.numpy())
    for field in opt_dense.get_slot_names():
        if opt_dense.get_state(w_dense)._asdict()[field] is not None:
            np.testing.assert_array_equal(opt_sparse.get_slot(w_sparse, field).numpy(),
                                          opt_dense.get_slot(w_dense, field).numpy())


def test_non_lazy_adam_moves_untouched_rows(rng):
    w = sg.Variable(np.ones((4, 2)))
    opt = sg.optimizers.Adam(learning_rate=0.1)
    opt.apply_gradients([(np.ones((4, 2)), w)])
    after_dense = w.numpy()
    opt.apply_gradients([(sg.IndexedSlices(np.ones((1, 2)), [0]), w)])
    # Row 3 had no gradient, yet its momentum keeps moving it (TF semantics).
    assert np.all(w.numpy()[3] < after_dense[3])
    assert np.all(opt.get_slot(w, "v").numpy()[3] < opt.get_slot(w, "v").numpy()[0])


def lazy_adam_reference(var, m, v, step, lr, b1, b2, eps, unique, summed, wd=0.0):
    """TF-Addons LazyAdam with the kernel's operation order, in var's dtype."""
    T = var.dtype.type
    t = T(step)
    b1p, b2p = np.power(T(b1), t), np.power(T(b2), t)
    lr, b1, b2, eps, one = T(lr), T(b1), T(b2), T(eps), T(1)
    alpha = (lr * np.sqrt(one - b2p)) / (one - b1p)
    rows = var[unique]
    if wd:
        rows = rows - (rows * T(wd)) * lr
    mu = m[unique] + (summed - m[unique]) * (one - b1)
    vu = v[unique] + ((summed * summed) - v[unique]) * (one - b2)
    var[unique] = rows - (mu * alpha) / (np.sqrt(vu) + eps)
    m[unique], v[unique] = mu, vu


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weight_decay", [None, 0.25])
def test_lazy_adam_and_adamw_against_numpy(weight_decay, dtype, rng):
    n_rows, width = 50, 4
    table = rng.standard_normal((n_rows, width)).astype(dtype)
    w = sg.Variable(table)
    kwargs = dict(learning_rate=0.05, beta_1=0.8, beta_2=0.95, epsilon=1e-6, lazy=True)
    if weight_decay is None:
        opt = sg.optimizers.Adam(**kwargs)
    else:
        opt = sg.optimizers.AdamW(weight_decay=weight_decay, **kwargs)
    var, m, v = table.copy(), np.zeros_like(table), np.zeros_like(table)
    for step in range(1, 6):
        indices = rng.integers(0, n_rows, size=30)
        values = rng.standard_normal((30, width)).astype(dtype)
        opt.apply_gradients([(sg.IndexedSlices(values, indices), w)])
        unique, summed = summed_rows(indices, values)
        lazy_adam_reference(var, m, v, step, 0.05, 0.8, 0.95, 1e-6, unique, summed,
                            wd=weight_decay or 0.0)
        np.testing.assert_array_equal(opt.get_slot(w, "m").numpy(), m)
        np.testing.assert_array_equal(opt.get_slot(w, "v").numpy(), v)
        # Bit for bit in both dtypes: every scalar, the step size alpha
        # included, is computed in var's dtype, one rounding per operation.
        np.testing.assert_array_equal(w.numpy(), var)


def lion_reference(var, m, lr, b1, b2, rows, summed):
    """Keras 3's Lion on `rows` in NumPy, every operation in var's dtype."""
    T = var.dtype.type
    var, m = var.copy(), m.copy()
    lr, b1, b2 = T(lr), T(b1), T(b2)
    var[rows] = var[rows] - lr * np.sign(m[rows] * b1 + summed * (T(1) - b1))
    m[rows] = m[rows] * b2 + summed * (T(1) - b2)
    return var, m


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lion_lazy_and_non_lazy_against_numpy(dtype, rng):
    table = rng.standard_normal((8, 3)).astype(dtype)
    lazy = sg.optimizers.Lion(0.125, beta_1=0.75, beta_2=0.96875, lazy=True)
    dense = sg.optimizers.Lion(0.125, beta_1=0.75, beta_2=0.96875)
    w_lazy, w_dense = sg.Variable(table), sg.Variable(table)
    all_rows = np.arange(8)
    # a dense first step: every row's momentum is then non-zero
    first = rng.standard_normal((8, 3)).astype(dtype)
    lazy.apply_gradients([(first, w_lazy)])
    dense.apply_gradients([(first, w_dense)])
    var, m = lion_reference(table, np.zeros_like(table), 0.125, 0.75, 0.96875,
                            all_rows, first)
    var_d, m_d, before = var.copy(), m.copy(), var.copy()
    for _ in range(3):
        values = rng.standard_normal((INDICES.shape[0], 3)).astype(dtype)
        grad = sg.IndexedSlices(values, INDICES, dense_shape=(8, 3))
        lazy.apply_gradients([(grad, w_lazy)])
        dense.apply_gradients([(grad, w_dense)])
        unique, summed = summed_rows(INDICES, values)
        var, m = lion_reference(var, m, 0.125, 0.75, 0.96875, unique, summed)
        full = np.zeros_like(table)
        full[unique] = summed
        var_d, m_d = lion_reference(var_d, m_d, 0.125, 0.75, 0.96875, all_rows, full)
    # lazy: the touched rows by the rule, the others keep every bit
    assert w_lazy.numpy().tobytes() == var.tobytes()
    assert lazy.get_slot(w_lazy, "momentum").numpy().tobytes() == m.tobytes()
    untouched = np.setdiff1d(all_rows, INDICES)
    assert w_lazy.numpy()[untouched].tobytes() == before[untouched].tobytes()
    # non-lazy: Keras 3's dense semantics, every row's momentum decays
    assert w_dense.numpy().tobytes() == var_d.tobytes()
    assert dense.get_slot(w_dense, "m").numpy().tobytes() == m_d.tobytes()
    assert not np.array_equal(w_dense.numpy()[untouched], before[untouched])


def test_adamw_non_lazy_sparse_decays_only_touched_rows():
    w = sg.Variable(np.full((3, 2), 2.0))
    opt = sg.optimizers.AdamW(learning_rate=0.5, weight_decay=0.5)
    # Zero gradient rows: Adam moves nothing, so only the decay is visible.
    opt.apply_gradients([(sg.IndexedSlices(np.zeros((2, 2)), [2, 2]), w)])
    np.testing.assert_array_equal(w.numpy(), [[2.0, 2.0], [2.0, 2.0], [1.5, 1.5]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rowwise_adagrad_against_numpy(dtype, rng):
    table = rng.standard_normal((6, 3)).astype(dtype)
    w = sg.Variable(table)
    opt = sg.optimizers.RowwiseAdagrad(learning_rate=0.5,
                                       initial_accumulator_value=0.25,
                                       epsilon=1e-3)
    var, acc = table.copy(), np.full(6, 0.25, dtype)
    T = np.dtype(dtype).type

    def reference(rows, g):
        mean_sq = (g.astype(np.float64) ** 2).sum(axis=1) / g.shape[1]
        acc[rows] = acc[rows] + mean_sq.astype(dtype)
        mult = T(0.5) / (np.sqrt(acc[rows]) + T(1e-3))
        var[rows] = var[rows] - mult[:, None] * g

    g = rng.standard_normal((6, 3)).astype(dtype)
    opt.apply_gradients([(g, w)])
    reference(np.arange(6), g)
    np.testing.assert_allclose(w.numpy(), var,
                               rtol=1e-6 if dtype == np.float32 else 1e-15)
    indices = np.array([4, 0, 4])
    values = rng.standard_normal((3, 3)).astype(dtype)
    opt.apply_gradients([(sg.IndexedSlices(values, indices), w)])
    unique, summed = summed_rows(indices, values)
    reference(unique, summed)
    np.testing.assert_allclose(w.numpy(), var,
                               rtol=1e-6 if dtype == np.float32 else 1e-15)
    np.testing.assert_allclose(opt.get_slot(w, "accumulator").numpy(), acc,
                               rtol=1e-6 if dtype == np.float32 else 1e-15)
    assert opt.get_slot(w, "accumulator").shape == (6,)


def test_none_gradients_are_skipped(rng):
    a, b = sg.Variable(np.ones(3)), sg.Variable(np.ones(2))
    opt = sg.optimizers.Adam(learning_rate=0.1)
    opt.apply_gradients([(None, a), (np.ones(2), b)])
    np.testing.assert_array_equal(a.numpy(), np.ones(3))
    assert opt.get_state(a) is None              # no slots for a skipped variable
    assert opt.iterations_count == 1
    assert b.numpy()[0] < 1
    # All gradients None: nothing happens, not even the step count.
    opt.apply_gradients([(None, a), (None, b)])
    assert opt.iterations_count == 1


def test_sparse_results_do_not_depend_on_thread_count(rng, zipf):
    indices = zipf(rng, 4000, 300)
    values = rng.standard_normal((4000, 16)).astype(np.float32)
    table = rng.standard_normal((300, 16)).astype(np.float32)
    results = []
    for n_threads in (1, 2, 4):
        sg.set_num_threads(n_threads)
        w = sg.Variable(table)
        opt = sg.optimizers.Adam(learning_rate=0.01, lazy=True)
        for _ in range(2):
            opt.apply_gradients([(sg.IndexedSlices(values, indices), w)])
        results.append(w.numpy())
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_index_dtypes_and_3d_variables(index_dtype, rng):
    table = rng.standard_normal((5, 2, 3))
    w1, w2 = sg.Variable(table), sg.Variable(table)
    values = rng.standard_normal((4, 2, 3))
    indices = np.array([3, 1, 3, 4], dtype=index_dtype)
    sg.optimizers.Adagrad(0.1).apply_gradients(
        [(sg.IndexedSlices(values, indices), w1)])
    dense = np.zeros_like(table)
    np.add.at(dense, indices, values)
    sg.optimizers.Adagrad(0.1).apply_gradients([(dense, w2)])
    np.testing.assert_array_equal(w1.numpy(), w2.numpy())


def test_empty_indexed_slices_counts_a_step():
    w = sg.Variable(np.ones((3, 2)))
    opt = sg.optimizers.Adam(learning_rate=0.1, lazy=True)
    opt.apply_gradients(
        [(sg.IndexedSlices(np.zeros((0, 2)), np.zeros(0, np.int64)), w)])
    np.testing.assert_array_equal(w.numpy(), np.ones((3, 2)))
    assert opt.iterations_count == 1


@settings(max_examples=30, deadline=None)
@given(
    indices=hnp.arrays(np.int64, st.integers(0, 12), elements=st.integers(0, 6)),
    seed=st.integers(0, 2**31),
    name=st.sampled_from(["SGD", "Adagrad", "Adam"]),
)
def test_any_duplicates_sum_like_the_dense_gradient(indices, seed, name):
    """Property: for optimizers whose zero-gradient rows do not change (and
    non-lazy Adam), sparse == dense on the densified gradient, bit for bit."""
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((7, 2)).astype(np.float32)
    values = rng.standard_normal((indices.shape[0], 2)).astype(np.float32)
    w_sparse, w_dense = sg.Variable(table), sg.Variable(table)
    opt_sparse = getattr(sg.optimizers, name)(learning_rate=0.1)
    opt_dense = getattr(sg.optimizers, name)(learning_rate=0.1)
    grad = sg.IndexedSlices(values, indices, dense_shape=(7, 2))
    opt_sparse.apply_gradients([(grad, w_sparse)])
    opt_dense.apply_gradients([(grad.to_dense().numpy(), w_dense)])
    np.testing.assert_array_equal(w_sparse.numpy(), w_dense.numpy())


def test_gradient_that_views_the_variable_is_read_before_the_update():
    # A gradient viewing the variable's own buffer (weight decay written as
    # "the gradient is the value") must act like a copy of the old value.
    w = sg.Variable(np.array([1.0, 2.0, 4.0]))
    opt = sg.optimizers.Adagrad(learning_rate=0.5, initial_accumulator_value=0.0,
                                epsilon=0.0)
    opt.apply_gradients([(w.value(), w)])
    np.testing.assert_array_equal(w.numpy(), [0.5, 1.5, 3.5])


@pytest.mark.parametrize("config", LAZY_CONFIGS, ids=config_id)
def test_sparse_step_allocates_only_for_touched_rows(config, zipf):
    # Cost follows touched rows: on a 2,000,000 x 4 table (32 MB per array),
    # a step on 3,000 ids (a 48 KB gradient) may allocate scratch of the size
    # of the gradient, never of the table.
    import tracemalloc

    name, kwargs = config
    sg.set_num_threads(2)
    w = sg.Variable(np.zeros((2_000_000, 4), np.float32))
    opt = make(name, kwargs)
    opt.build([w])
    ids = zipf(np.random.default_rng(0), 3000, 2_000_000)
    grad = sg.IndexedSlices(np.ones((3000, 4), np.float32), ids, (2_000_000, 4))
    opt.apply_gradients([(grad, w)])                  # warm: caches, scratch
    tracemalloc.start()
    try:
        opt.apply_gradients([(grad, w)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{name}: peak allocation {peak / 2**20:.1f} MiB"
