"""Training ops: semantics beyond the golden values, errors, threads, locking.

TensorFlow's arithmetic is checked in ``test_training_ops_golden.py``; here:
duplicate indices (sequential, or coalesced), the ops beyond TensorFlow against
NumPy references, every validation error and the unchanged-on-error guarantee,
identical bits for any thread count, and ``use_locking``.
"""

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsegrad as sg
from sparsegrad import training_ops
from sparsegrad.errors import InvalidArgumentError

# Sparse op -> (slots, hyper-parameters in TF order around grad/indices,
#               attrs, out-of-range message fragment, checks R > 0)
BOUNDS = "in indices is out of range"
KERAS_BOUNDS = "is not in [0, "
SPARSE_OPS = {
    "sparse_apply_gradient_descent": ([], dict(alpha=0.1), {}, BOUNDS, False),
    "sparse_apply_proximal_gradient_descent": (
        [],
        dict(alpha=0.1, l1=0.05, l2=0.2),
        {},
        BOUNDS,
        True,
    ),
    "sparse_apply_adadelta": (
        ["accum", "accum_update"],
        dict(lr=0.5, rho=0.9, epsilon=1e-6),
        {},
        BOUNDS,
        False,
    ),
    "sparse_apply_adagrad": (["accum"], dict(lr=0.1), {}, BOUNDS, True),
    "sparse_apply_adagrad_v2": (
        ["accum"],
        dict(lr=0.1, epsilon=1e-7),
        {},
        BOUNDS,
        True,
    ),
    "sparse_apply_proximal_adagrad": (
        ["accum"],
        dict(lr=0.1, l1=0.05, l2=0.2),
        {},
        BOUNDS,
        True,
    ),
    "sparse_apply_adagrad_da": (
        ["gradient_accumulator", "gradient_squared_accumulator"],
        dict(lr=0.1, l1=0.01, l2=0.2, global_step=7),
        {},
        BOUNDS,
        True,
    ),
    "sparse_apply_ftrl": (
        ["accum", "linear"],
        dict(lr=0.1, l1=0.05, l2=0.2, lr_power=-0.5),
        {},
        BOUNDS,
        True,
    ),
    "sparse_apply_ftrl_v2": (
        ["accum", "linear"],
        dict(lr=0.1, l1=0.05, l2=0.2, l2_shrinkage=0.1, lr_power=-0.5),
        {"multiply_linear_by_lr": True},
        BOUNDS,
        True,
    ),
    "sparse_apply_momentum": (
        ["accum"],
        dict(lr=0.1, momentum=0.9),
        {"use_nesterov": True},
        BOUNDS,
        False,
    ),
    "sparse_apply_keras_momentum": (
        ["accum"],
        dict(lr=0.1, momentum=0.9),
        {},
        KERAS_BOUNDS,
        False,
    ),
    "sparse_apply_adam": (
        ["m", "v"],
        dict(
            beta1_power=0.729,
            beta2_power=0.997,
            lr=0.01,
            beta1=0.9,
            beta2=0.999,
            epsilon=1e-7,
        ),
        {},
        BOUNDS,
        False,
    ),
    "sparse_apply_ada_max": (
        ["m", "v"],
        dict(beta1_power=0.729, lr=0.01, beta1=0.9, beta2=0.999, epsilon=1e-7),
        {},
        BOUNDS,
        False,
    ),
    "sparse_apply_lamb": (
        ["m", "v"],
        dict(
            beta1_power=0.81,
            beta2_power=0.998,
            lr=0.01,
            beta1=0.9,
            beta2=0.999,
            epsilon=1e-7,
        ),
        {},
        BOUNDS,
        False,
    ),
    "sparse_apply_nadam": (
        ["m", "v"],
        dict(
            u_t=0.468,
            u_t_1=0.47,
            u_product=0.25,
            beta2_power=0.997,
            lr=0.01,
            beta1=0.9,
            beta2=0.999,
            epsilon=1e-7,
        ),
        {},
        BOUNDS,
        False,
    ),
    "sparse_apply_rms_prop": (
        ["ms", "mom"],
        dict(lr=0.01, rho=0.9, momentum=0.5, epsilon=1e-6),
        {},
        BOUNDS,
        False,
    ),
    "sparse_apply_centered_rms_prop": (
        ["mg", "ms", "mom"],
        dict(lr=0.01, rho=0.9, momentum=0.5, epsilon=1e-6),
        {},
        BOUNDS,
        False,
    ),
    "sparse_apply_rowwise_adagrad": (
        ["accum"],
        dict(lr=0.1, epsilon=1e-8),
        {},
        BOUNDS,
        True,
    ),
    "sparse_apply_lion": (
        ["m"],
        dict(lr=0.1, beta1=0.9, beta2=0.99),
        {},
        BOUNDS,
        False,
    ),
}

DENSE_OPS = {
    "apply_gradient_descent": ([], dict(alpha=0.1), {}),
    "apply_proximal_gradient_descent": ([], dict(alpha=0.1, l1=0.05, l2=0.2), {}),
    "apply_adadelta": (
        ["accum", "accum_update"],
        dict(lr=0.5, rho=0.9, epsilon=1e-6),
        {},
    ),
    "apply_adagrad": (["accum"], dict(lr=0.1), {}),
    "apply_adagrad_v2": (["accum"], dict(lr=0.1, epsilon=1e-7), {}),
    "apply_proximal_adagrad": (["accum"], dict(lr=0.1, l1=0.05, l2=0.2), {}),
    "apply_adagrad_da": (
        ["gradient_accumulator", "gradient_squared_accumulator"],
        dict(lr=0.1, l1=0.01, l2=0.2, global_step=7),
        {},
    ),
    "apply_ftrl": (
        ["accum", "linear"],
        dict(lr=0.1, l1=0.05, l2=0.2, lr_power=-0.5),
        {},
    ),
    "apply_ftrl_v2": (
        ["accum", "linear"],
        dict(lr=0.1, l1=0.05, l2=0.2, l2_shrinkage=0.1, lr_power=-0.5),
        {},
    ),
    "apply_momentum": (["accum"], dict(lr=0.1, momentum=0.9), {}),
    "apply_keras_momentum": (
        ["accum"],
        dict(lr=0.1, momentum=0.9),
        {"use_nesterov": True},
    ),
    "apply_adam": (
        ["m", "v"],
        dict(
            beta1_power=0.729,
            beta2_power=0.997,
            lr=0.01,
            beta1=0.9,
            beta2=0.999,
            epsilon=1e-7,
        ),
        {},
    ),
    "apply_adam_with_amsgrad": (
        ["m", "v", "vhat"],
        dict(
            beta1_power=0.729,
            beta2_power=0.997,
            lr=0.01,
            beta1=0.9,
            beta2=0.999,
            epsilon=1e-7,
        ),
        {},
    ),
    "apply_ada_max": (
        ["m", "v"],
        dict(beta1_power=0.729, lr=0.01, beta1=0.9, beta2=0.999, epsilon=1e-7),
        {},
    ),
    "apply_lamb": (
        ["m", "v"],
        dict(
            beta1_power=0.81,
            beta2_power=0.998,
            lr=0.01,
            beta1=0.9,
            beta2=0.999,
            epsilon=1e-7,
        ),
        {},
    ),
    "apply_nadam": (
        ["m", "v"],
        dict(
            u_t=0.468,
            u_t_1=0.47,
            u_product=0.25,
            beta2_power=0.997,
            lr=0.01,
            beta1=0.9,
            beta2=0.999,
            epsilon=1e-7,
        ),
        {},
    ),
    "apply_rms_prop": (
        ["ms", "mom"],
        dict(lr=0.01, rho=0.9, momentum=0.5, epsilon=1e-6),
        {},
    ),
    "apply_centered_rms_prop": (
        ["mg", "ms", "mom"],
        dict(lr=0.01, rho=0.9, momentum=0.5, epsilon=1e-6),
        {},
    ),
    "apply_add_sign": (["m"], dict(lr=0.1, alpha=1.0, sign_decay=0.5, beta=0.9), {}),
    "apply_power_sign": (
        ["m"],
        dict(lr=0.1, logbase=0.69, sign_decay=0.5, beta=0.9),
        {},
    ),
    "apply_rowwise_adagrad": (["accum"], dict(lr=0.1, epsilon=1e-8), {}),
    "apply_lion": (["m"], dict(lr=0.1, beta1=0.9, beta2=0.99), {}),
}

SIGNED_SLOTS = {"linear", "m", "mg", "mom", "gradient_accumulator"}


def _slot(name, shape, rng, dtype):
    if name in SIGNED_SLOTS:
        return (0.1 * rng.normal(size=shape)).astype(dtype)
    return rng.uniform(0.5, 1.5, size=shape).astype(dtype)


def sparse_args(
    op,
    rng,
    shape=(6, 5),
    indices=(3, 0, 3, 5, 3),
    dtype=np.float64,
    index_dtype=np.int64,
):
    """Valid keyword arguments of a sparse op, fresh arrays."""
    slots, scalars, attrs, _, _ = SPARSE_OPS[op]
    indices = np.asarray(indices, dtype=index_dtype)
    kwargs = {"var": rng.normal(size=shape).astype(dtype)}
    for name in slots:
        slot_shape = shape[:1] if op.endswith("rowwise_adagrad") else shape
        kwargs[name] = _slot(name, slot_shape, rng, dtype)
    kwargs.update(scalars)
    kwargs.update(attrs)
    kwargs["grad"] = rng.normal(size=(len(indices),) + shape[1:]).astype(dtype)
    kwargs["indices"] = indices
    return kwargs


def dense_args(op, rng, shape=(7, 5), dtype=np.float64):
    slots, scalars, attrs = DENSE_OPS[op]
    kwargs = {"var": rng.normal(size=shape).astype(dtype)}
    for name in slots:
        slot_shape = shape[:1] if op.endswith("rowwise_adagrad") else shape
        kwargs[name] = _slot(name, slot_shape, rng, dtype)
    kwargs.update(scalars)
    kwargs.update(attrs)
    grad_name = (
        "delta"
        if op in ("apply_gradient_descent", "apply_proximal_gradient_descent")
        else "grad"
    )
    kwargs[grad_name] = rng.normal(size=shape).astype(dtype)
    return kwargs


def state_of(op, kwargs):
    slots = (SPARSE_OPS.get(op) or DENSE_OPS[op])[0]
    return ["var"] + list(slots)


def snapshot(op, kwargs):
    return {name: np.array(kwargs[name], copy=True) for name in state_of(op, kwargs)}


def assert_same(a, b):
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        assert a[name].tobytes() == b[name].tobytes(), name


def call(op, kwargs):
    getattr(training_ops, op)(**kwargs)


def test_public_names():
    assert set(training_ops.__all__) == set(SPARSE_OPS) | set(DENSE_OPS)
    for name in training_ops.__all__:
        assert callable(getattr(training_ops, name))
    assert sg.training_ops is training_ops


# ---------------------------------------------------------------------------
# Duplicates: sequential by default, summed with coalesce_duplicates.


@pytest.mark.parametrize("op", sorted(SPARSE_OPS))
@pytest.mark.parametrize("shape", [(6, 5), (6,), (6, 20)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_duplicates_apply_one_after_another(op, shape, dtype, n_threads, rng):
    # One thread: the scan kernel; two: the by-row kernel for narrow rows.
    sg.set_num_threads(n_threads)
    kwargs = sparse_args(op, rng, shape=shape, dtype=dtype)
    one_by_one = {
        k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v)
        for k, v in kwargs.items()
    }
    call(op, kwargs)
    grad, indices = one_by_one.pop("grad"), one_by_one.pop("indices")
    for k in range(len(indices)):
        call(op, dict(one_by_one, grad=grad[k : k + 1], indices=indices[k : k + 1]))
    assert_same(snapshot(op, kwargs), snapshot(op, one_by_one))


@pytest.mark.parametrize("op", sorted(SPARSE_OPS))
@pytest.mark.parametrize("shape", [(6, 5), (6,), (6, 2, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_coalesce_duplicates_sums_rows_first(op, shape, dtype, rng):
    kwargs = sparse_args(op, rng, shape=shape, dtype=dtype)
    deduped = {
        k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v)
        for k, v in kwargs.items()
    }
    call(op, dict(kwargs, coalesce_duplicates=True))
    # Reference: rows of each index summed in order from zero, then one update
    # per distinct index.
    grad, indices = deduped.pop("grad"), deduped.pop("indices")
    unique = np.unique(indices)
    summed = np.zeros((len(unique),) + grad.shape[1:], dtype=dtype)
    for u, i in enumerate(unique):
        for k in np.flatnonzero(indices == i):
            summed[u] = summed[u] + grad[k]
    call(op, dict(deduped, grad=summed, indices=unique))
    assert_same(snapshot(op, kwargs), snapshot(op, deduped))


@pytest.mark.parametrize("op", sorted(SPARSE_OPS))
def test_untouched_rows_do_not_change(op, rng):
    kwargs = sparse_args(op, rng)
    before = snapshot(op, kwargs)
    call(op, kwargs)
    after = snapshot(op, kwargs)
    for name in before:
        np.testing.assert_array_equal(after[name][[1, 2, 4]], before[name][[1, 2, 4]])
    assert not np.array_equal(after["var"][3], before["var"][3])


@pytest.mark.parametrize("op", sorted(SPARSE_OPS))
def test_empty_indices_are_a_no_op(op, rng):
    kwargs = sparse_args(op, rng, indices=[])
    before = snapshot(op, kwargs)
    assert kwargs["grad"].shape == (0, 5)
    call(op, kwargs)
    assert_same(before, snapshot(op, kwargs))
    call(op, dict(kwargs, indices=[], grad=np.zeros((0, 5))))
    assert_same(before, snapshot(op, kwargs))


# ---------------------------------------------------------------------------
# Ops beyond TensorFlow against NumPy references.


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_gradient_descent_is_a_scatter_add(dtype, rng):
    kwargs = sparse_args("sparse_apply_gradient_descent", rng, dtype=dtype)
    expected = kwargs["var"].copy()
    alpha = dtype(kwargs["alpha"])
    for k, i in enumerate(kwargs["indices"]):
        expected[i] = expected[i] - kwargs["grad"][k] * alpha
    call("sparse_apply_gradient_descent", kwargs)
    np.testing.assert_array_equal(kwargs["var"], expected)


def _adam_rows(var, m, v, b1p, b2p, lr, b1, b2, eps, g, T):
    """ApplyAdam's arithmetic in NumPy, every operation rounded to T."""
    b1p, b2p, lr, b1, b2, eps = map(T, (b1p, b2p, lr, b1, b2, eps))
    alpha = (lr * np.sqrt(T(1) - b2p)) / (T(1) - b1p)
    m = m + (g - m) * (T(1) - b1)
    v = v + (g * g - v) * (T(1) - b2)
    var = var - (m * alpha) / (np.sqrt(v) + eps)
    return var, m, v


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lazy_adam_matches_numpy_and_dense_adam(dtype, rng):
    op = "sparse_apply_adam"
    kwargs = sparse_args(op, rng, indices=[4, 1, 1], dtype=dtype)
    s = SPARSE_OPS[op][1]
    var, m, v = (kwargs[k].copy() for k in ("var", "m", "v"))
    call(op, dict(kwargs, coalesce_duplicates=True))
    g = np.zeros((2, 5), dtype=dtype)
    g[0] = g[0] + kwargs["grad"][1]
    g[0] = g[0] + kwargs["grad"][2]
    g[1] = g[1] + kwargs["grad"][0]
    rows = [1, 4]
    var[rows], m[rows], v[rows] = _adam_rows(
        var[rows],
        m[rows],
        v[rows],
        s["beta1_power"],
        s["beta2_power"],
        s["lr"],
        s["beta1"],
        s["beta2"],
        s["epsilon"],
        g,
        dtype,
    )
    rtol = 1e-6 if dtype == np.float32 else 1e-15
    np.testing.assert_allclose(kwargs["var"], var, rtol=rtol)
    np.testing.assert_allclose(kwargs["m"], m, rtol=rtol)
    np.testing.assert_allclose(kwargs["v"], v, rtol=rtol)
    # Indexing every row once is the dense op, bit for bit.
    dense = dense_args("apply_adam", rng, shape=(6, 5), dtype=dtype)
    sparse = {
        k: (np.array(x, copy=True) if isinstance(x, np.ndarray) else x)
        for k, x in dense.items()
    }
    training_ops.apply_adam(**dense)
    grad = sparse.pop("grad")
    training_ops.sparse_apply_adam(
        **sparse, grad=grad[::-1], indices=np.arange(6)[::-1]
    )
    for name in ("var", "m", "v"):
        np.testing.assert_array_equal(sparse[name], dense[name])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lazy_ada_max_matches_numpy(dtype, rng):
    op = "sparse_apply_ada_max"
    kwargs = sparse_args(op, rng, indices=[2, 5], dtype=dtype)
    s = {k: dtype(x) for k, x in SPARSE_OPS[op][1].items()}
    var, m, v = (kwargs[k].copy() for k in ("var", "m", "v"))
    call(op, kwargs)
    g, rows = kwargs["grad"], [2, 5]
    m[rows] = m[rows] + (g - m[rows]) * (dtype(1) - s["beta1"])
    v[rows] = np.maximum(s["beta2"] * v[rows], np.abs(g))
    step = s["lr"] / (dtype(1) - s["beta1_power"])
    var[rows] = var[rows] - step * (m[rows] / (v[rows] + s["epsilon"]))
    for name, want in (("var", var), ("m", m), ("v", v)):
        np.testing.assert_array_equal(kwargs[name], want, err_msg=name)


def _lion_rows(var, m, lr, b1, b2, g, T):
    """Keras 3's Lion in NumPy, every operation rounded to T."""
    lr, b1, b2 = T(lr), T(b1), T(b2)
    var = var - lr * np.sign(m * b1 + g * (T(1) - b1))
    m = m * b2 + g * (T(1) - b2)
    return var, m


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lion_matches_numpy_and_lazy_rows(dtype, rng):
    s = DENSE_OPS["apply_lion"][1]
    dense = dense_args("apply_lion", rng, shape=(6, 5), dtype=dtype)
    dense["grad"][0, :2] = 0.0          # sign(0) = 0 where m is zero too
    dense["m"][0, :2] = 0.0
    dense["grad"][1, 0] = np.nan
    var, m = _lion_rows(dense["var"], dense["m"], s["lr"], s["beta1"], s["beta2"],
                        dense["grad"], dtype)
    sparse = {k: (np.array(x, copy=True) if isinstance(x, np.ndarray) else x)
              for k, x in dense.items()}
    before = dense["var"].copy()
    call("apply_lion", dense)
    np.testing.assert_array_equal(dense["var"], var)
    np.testing.assert_array_equal(dense["m"], m)
    np.testing.assert_array_equal(dense["var"][0, :2], before[0, :2])
    assert np.isnan(dense["var"][1, 0]) and np.isnan(dense["m"][1, 0])
    # Indexing every row once (in any order) is the dense op, bit for bit.
    grad = sparse.pop("grad")
    call("sparse_apply_lion",
         dict(sparse, grad=grad[::-1], indices=np.arange(6)[::-1]))
    for name in ("var", "m"):
        assert sparse[name].tobytes() == dense[name].tobytes(), name
    # Lazy: rows 2 and 5 only, each by the NumPy rule; the others keep their bits.
    kwargs = sparse_args("sparse_apply_lion", rng, indices=[5, 2], dtype=dtype)
    var, m = kwargs["var"].copy(), kwargs["m"].copy()
    call("sparse_apply_lion", kwargs)
    rows = [5, 2]
    var[rows], m[rows] = _lion_rows(var[rows], m[rows], s["lr"], s["beta1"],
                                    s["beta2"], kwargs["grad"], dtype)
    for name, want in (("var", var), ("m", m)):
        assert kwargs[name].tobytes() == want.tobytes(), name
def _nadam_rows(var, m, v, s, g, T):
    """Keras 3's Nadam update in NumPy, every operation rounded to T."""
    s = {k: T(x) for k, x in s.items()}
    m = m + (g - m) * (T(1) - s["beta1"])
    v = v + (g * g - v) * (T(1) - s["beta2"])
    m_hat = (s["u_t_1"] * m) / (T(1) - s["u_product"] * s["u_t_1"]) + (
        (T(1) - s["u_t"]) * g) / (T(1) - s["u_product"])
    v_hat = v / (T(1) - s["beta2_power"])
    var = var - (m_hat * s["lr"]) / (np.sqrt(v_hat) + s["epsilon"])
    return var, m, v


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nadam_matches_numpy_and_lazy_rows(dtype, rng):
    kwargs = dense_args("apply_nadam", rng, shape=(6, 5), dtype=dtype)
    s = SPARSE_OPS["sparse_apply_nadam"][1]
    want = _nadam_rows(kwargs["var"], kwargs["m"], kwargs["v"], s,
                       kwargs["grad"], dtype)
    sparse = {k: (np.array(x, copy=True) if isinstance(x, np.ndarray) else x)
              for k, x in kwargs.items()}
    call("apply_nadam", kwargs)
    for name, w in zip(("var", "m", "v"), want):
        np.testing.assert_array_equal(kwargs[name], w, err_msg=name)
    # every row once, in any order, is the dense op bit for bit
    grad = sparse.pop("grad")
    training_ops.sparse_apply_nadam(**sparse, grad=grad[::-1],
                                    indices=np.arange(6)[::-1])
    for name in ("var", "m", "v"):
        np.testing.assert_array_equal(sparse[name], kwargs[name])
    # the lazy form: rows 2 and 5 (2 twice, in order), others bit for bit
    lazy = sparse_args("sparse_apply_nadam", rng, indices=[2, 5, 2], dtype=dtype)
    var, m, v = (lazy[k].copy() for k in ("var", "m", "v"))
    call("sparse_apply_nadam", lazy)
    for k, i in enumerate([2, 5, 2]):
        var[i], m[i], v[i] = _nadam_rows(var[i], m[i], v[i], s, lazy["grad"][k],
                                         dtype)
    for name, w in (("var", var), ("m", m), ("v", v)):
        np.testing.assert_array_equal(lazy[name], w, err_msg=name)


def _lamb_sum(squares):
    """Lamb's sum of a segment's float64 squares: 16 lanes (value j in lane
    j % 16), each in order from zero, the lanes then added pairwise."""
    lanes = np.zeros(16)
    for start in range(0, squares.size, 16):
        piece = squares[start:start + 16]
        lanes[:piece.size] += piece
    while lanes.size > 1:
        lanes = lanes[0::2] + lanes[1::2]
    return float(lanes[0])


def _lamb_rows(var, m, v, s, g, T, chunk=None):
    """Keras 3's Lamb in NumPy, every operation rounded to T, with the norms
    over all of `var` (summed by `_lamb_sum` in chunks of `chunk` values, the
    chunks' sums in order; None: one segment)."""
    h = {k: T(x) for k, x in s.items()}
    m = m + (g - m) * T(1.0 - s["beta1"])       # 1 - beta in float64, rounded
    v = v + (g * g - v) * T(1.0 - s["beta2"])
    u = (m / (T(1) - h["beta1_power"])) / (
        np.sqrt(v / (T(1) - h["beta2_power"])) + h["epsilon"])
    flat_w = var.astype(np.float64).ravel() ** 2
    flat_u = u.astype(np.float64).ravel() ** 2
    size = chunk or max(flat_w.size, 1)
    w2 = float(np.cumsum([0.0] + [_lamb_sum(flat_w[i:i + size])
                                  for i in range(0, flat_w.size, size)])[-1])
    u2 = float(np.cumsum([0.0] + [_lamb_sum(flat_u[i:i + size])
                                  for i in range(0, flat_u.size, size)])[-1])
    w_norm, u_norm = np.sqrt(T(w2)), np.sqrt(T(u2))
    ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else T(1)
    return var - (ratio * h["lr"]) * u, m, v


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(6, 5), (40, 300)])
def test_lamb_matches_numpy_and_lazy_rows(dtype, shape, rng):
    kwargs = dense_args("apply_lamb", rng, shape=shape, dtype=dtype)
    s = DENSE_OPS["apply_lamb"][1]
    want = _lamb_rows(kwargs["var"], kwargs["m"], kwargs["v"], s, kwargs["grad"],
                      dtype, chunk=8192)
    call("apply_lamb", kwargs)
    for name, w in zip(("var", "m", "v"), want):
        assert kwargs[name].tobytes() == w.tobytes(), name
    # the lazy form: a trust ratio per row; rows 2 and 5 (2 twice, in order),
    # the others bit for bit
    lazy = sparse_args("sparse_apply_lamb", rng, indices=[2, 5, 2],
                       shape=shape, dtype=dtype)
    var, m, v = (lazy[k].copy() for k in ("var", "m", "v"))
    call("sparse_apply_lamb", lazy)
    for k, i in enumerate([2, 5, 2]):
        var[i], m[i], v[i] = _lamb_rows(var[i], m[i], v[i], s, lazy["grad"][k],
                                        dtype)
    for name, w in (("var", var), ("m", m), ("v", v)):
        assert lazy[name].tobytes() == w.tobytes(), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("indices", [[5, 1, 5, 2], [3, 0, 7, 6, 1, 3, 2, 4, 5]])
def test_lamb_optimizer_lazy_rows_and_keras_sparse(dtype, indices, rng):
    # lazy: each touched row by the per-row rule (duplicates summed first),
    # the others keep every bit; lazy=False: the dense step of the scattered
    # sums, bit for bit (every row's moments decay; the whole table's norms),
    # whether or not the indices cover every row.
    T = dtype
    hyper = dict(beta_1=0.75, beta_2=0.96875, epsilon=2.0**-20)
    table = rng.standard_normal((8, 3)).astype(dtype)
    w_lazy, w_keras, w_dense = (sg.Variable(table) for _ in range(3))
    lazy = sg.optimizers.Lamb(0.125, lazy=True, **hyper)
    keras, dense = (sg.optimizers.Lamb(0.125, **hyper) for _ in range(2))
    var, m, v = table.copy(), np.zeros_like(table), np.zeros_like(table)
    indices = np.array(indices)
    for step in (1, 2, 3):
        values = rng.standard_normal((indices.size, 3)).astype(dtype)
        grad = sg.IndexedSlices(values, indices, dense_shape=(8, 3))
        lazy.apply_gradients([(grad, w_lazy)])
        keras.apply_gradients([(grad, w_keras)])
        full = np.zeros_like(table)
        for k, i in enumerate(indices):
            full[i] += values[k]
        dense.apply_gradients([(full, w_dense)])
        s = dict(beta1_power=np.float64(T(0.75)) ** step,
                 beta2_power=np.float64(T(0.96875)) ** step, lr=0.125, beta1=0.75,
                 beta2=0.96875, epsilon=2.0**-20)
        for i in np.unique(indices):
            var[i], m[i], v[i] = _lamb_rows(var[i], m[i], v[i], s, full[i], T)
    assert w_lazy.numpy().tobytes() == var.tobytes()
    assert lazy.get_slot(w_lazy, "m").numpy().tobytes() == m.tobytes()
    assert lazy.get_slot(w_lazy, "v").numpy().tobytes() == v.tobytes()
    untouched = np.setdiff1d(np.arange(8), indices)
    assert w_lazy.numpy()[untouched].tobytes() == table[untouched].tobytes()
    assert w_keras.numpy().tobytes() == w_dense.numpy().tobytes()
    assert keras.get_slot(w_keras, "v").numpy().tobytes() == \
        dense.get_slot(w_dense, "v").numpy().tobytes()


def test_lamb_trust_ratio_and_keras_factors():
    # |var| = 5, |u| = sqrt(2) (m and v start at zero: u = g / (1 + eps)):
    # the step is lr * 5 / sqrt(2) per unit of u.
    var, m, v = np.array([3.0, 4.0]), np.zeros(2), np.zeros(2)
    training_ops.apply_lamb(var, m, v, 0.9, 0.999, 0.01, 0.9, 0.999, 0.0,
                            [1.0, -1.0])
    step = 0.01 * 5 / np.sqrt(2)
    np.testing.assert_allclose(var, [3 - step, 4 + step], rtol=1e-14)
    # a zero variable or a zero direction: ratio 1
    var, m, v = np.zeros(2), np.zeros(2), np.zeros(2)
    training_ops.apply_lamb(var, m, v, 0.9, 0.999, 0.01, 0.9, 0.999, 0.0,
                            [1.0, -1.0])
    np.testing.assert_allclose(var, [-0.01, 0.01], rtol=1e-14)
    var, m, v = np.ones(2), np.zeros(2), np.zeros(2)
    training_ops.apply_lamb(var, m, v, 0.9, 0.999, 0.01, 0.9, 0.999, 1e-7,
                            [0.0, 0.0])
    np.testing.assert_array_equal(var, [1.0, 1.0])
    # float32: 1 - beta1 is Keras's float32(1 - 0.9), not 1 - float32(0.9)
    m = np.zeros(1, np.float32)
    training_ops.apply_lamb(np.ones(1, np.float32), m, np.zeros(1, np.float32),
                            0.9, 0.999, 0.01, 0.9, 0.999, 1e-7,
                            np.ones(1, np.float32))
    assert m[0] == np.float32(0.1) != np.float32(1) - np.float32(0.9)


def _rowwise_reference(var, accum, lr, eps, grad, rows):
    var, accum = var.astype(np.float64), accum.astype(np.float64)
    for k, i in enumerate(rows):
        g = grad[k].astype(np.float64).reshape(-1)
        accum[i] += np.mean(g * g)
        var[i] -= (lr / (np.sqrt(accum[i]) + eps) * g).reshape(var.shape[1:])
    return var, accum


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(6, 5), (6,), (6, 2, 3)])
def test_rowwise_adagrad_matches_numpy(dtype, shape, rng):
    rtol = 2e-6 if dtype == np.float32 else 1e-13
    kwargs = sparse_args("sparse_apply_rowwise_adagrad", rng, shape=shape, dtype=dtype)
    want = _rowwise_reference(
        kwargs["var"], kwargs["accum"], 0.1, 1e-8, kwargs["grad"], kwargs["indices"]
    )
    call("sparse_apply_rowwise_adagrad", kwargs)
    np.testing.assert_allclose(kwargs["var"], want[0], rtol=rtol)
    np.testing.assert_allclose(kwargs["accum"], want[1], rtol=rtol)
    dense = dense_args("apply_rowwise_adagrad", rng, shape=shape, dtype=dtype)
    want = _rowwise_reference(
        dense["var"], dense["accum"], 0.1, 1e-8, dense["grad"], range(shape[0])
    )
    call("apply_rowwise_adagrad", dense)
    np.testing.assert_allclose(dense["var"], want[0], rtol=rtol)
    np.testing.assert_allclose(dense["accum"], want[1], rtol=rtol)


def test_rowwise_adagrad_hand_computed():
    var, accum = np.ones((2, 2)), np.array([0.0, 1.0])
    training_ops.sparse_apply_rowwise_adagrad(var, accum, 1.0, 0.0, [[3.0, 4.0]], [1])
    # mean(9, 16) = 12.5; accum = 13.5; var -= g / sqrt(13.5)
    np.testing.assert_array_equal(accum, [0.0, 13.5])
    np.testing.assert_array_equal(var[1], 1.0 - np.array([3.0, 4.0]) / np.sqrt(13.5))


# ---------------------------------------------------------------------------
# Errors: TF's messages, raised before anything is written.


def _check_error(op, kwargs, fragment):
    before = snapshot(op, kwargs)
    with pytest.raises(InvalidArgumentError, match=fragment):
        call(op, kwargs)
    assert_same(before, snapshot(op, kwargs))


@pytest.mark.parametrize("op", sorted(SPARSE_OPS))
@pytest.mark.parametrize("bad", [6, -1, 100])
def test_sparse_out_of_range_changes_nothing(op, bad, rng):
    kwargs = sparse_args(op, rng, indices=[3, 0, 3, bad, 3])
    fragment = SPARSE_OPS[op][3]
    if fragment == BOUNDS:
        fragment = rf"Index {bad} at offset 3 in indices is out of range"
    else:
        fragment = rf"indices\[3\] = {bad} is not in \[0, 6\)"
    _check_error(op, kwargs, fragment)


@pytest.mark.parametrize("op", sorted(SPARSE_OPS))
def test_sparse_shape_errors(op, rng):
    kwargs = sparse_args(op, rng)
    _check_error(
        op,
        dict(kwargs, grad=kwargs["grad"][:4]),
        "grad must be the same size as indices in the first dimension",
    )
    _check_error(
        op,
        dict(kwargs, grad=np.zeros((5, 4))),
        "var and grad must match in dimension 1",
    )
    _check_error(
        op,
        dict(kwargs, grad=np.zeros(5)),
        "grad must have the same number of dimensions as var",
    )
    _check_error(
        op,
        dict(kwargs, indices=np.zeros((5, 1), np.int64)),
        "indices must be one-dimensional",
    )
    _check_error(
        op, dict(kwargs, indices=np.zeros(5)), "indices must be int32 or int64"
    )
    scalar = next(iter(SPARSE_OPS[op][1]))
    _check_error(
        op,
        dict(kwargs, **{scalar: [0.1, 0.2]}),
        r"is not a (non-negative |positive )?scalar",
    )
    slots = SPARSE_OPS[op][0]
    if slots:
        bad_slot = (
            np.zeros((6, 4)) if not op.endswith("rowwise_adagrad") else (np.zeros(5))
        )
        _check_error(
            op,
            dict(kwargs, **{slots[-1]: bad_slot}),
            "do not have the same shape|must have shape",
        )
    _check_error(
        op,
        dict(kwargs, var=np.ones(())),
        "var must be at least 1 dimensional|do not have the same shape|must have shape",
    )


@pytest.mark.parametrize("op", sorted(SPARSE_OPS))
def test_inner_dimension_zero(op, rng):
    kwargs = sparse_args(op, rng, shape=(6, 0), indices=[1, 2])
    if SPARSE_OPS[op][4]:
        _check_error(op, kwargs, "Inner dimension should be greater than zero")
    else:
        before = snapshot(op, kwargs)
        call(op, kwargs)
        assert_same(before, snapshot(op, kwargs))
        _check_error(op, dict(kwargs, indices=[1, 7]), "7")


@pytest.mark.parametrize("op", sorted(DENSE_OPS))
def test_dense_shape_and_scalar_errors(op, rng):
    kwargs = dense_args(op, rng)
    grad_name = "delta" if "delta" in kwargs else "grad"
    _check_error(
        op,
        dict(kwargs, **{grad_name: np.zeros((5, 7))}),
        rf"var and {grad_name} do not have the same shape\[7,5\] \[5,7\]",
    )
    for scalar in DENSE_OPS[op][1]:
        _check_error(
            op,
            dict(kwargs, **{scalar: np.zeros(2)}),
            r"is not a (non-negative |positive )?scalar( : |: |)\[2\]",
        )
    slots = DENSE_OPS[op][0]
    for slot in slots:
        bad = np.zeros(6) if op.endswith("rowwise_adagrad") else np.zeros((7, 4))
        _check_error(
            op,
            dict(kwargs, **{slot: bad}),
            "do not have the same shape|must have shape",
        )


def test_specific_messages(rng):
    kwargs = dense_args("apply_adam", rng)
    _check_error(
        "apply_adam", dict(kwargs, lr=np.ones(1)), r"lr is not a scalar : \[1\]"
    )
    kwargs = dense_args("apply_ftrl", rng)
    _check_error(
        "apply_ftrl",
        dict(kwargs, lr_power=np.ones(1)),
        r"lr_power is not a scalar\[1\]",
    )
    kwargs = dense_args("apply_proximal_adagrad", rng)
    _check_error(
        "apply_proximal_adagrad",
        dict(kwargs, lr=0.0),
        r"lr is not a positive scalar: \[\]",
    )
    _check_error(
        "apply_proximal_adagrad",
        dict(kwargs, l1=-1.0),
        "l1 regularization strength is not a non-negative scalar",
    )
    kwargs = sparse_args("sparse_apply_ftrl", rng)
    _check_error(
        "sparse_apply_ftrl",
        dict(kwargs, lr_power=0.5),
        "lr_power is not a non-positive scalar",
    )
    _check_error(
        "sparse_apply_ftrl",
        dict(kwargs, lr=0.0),
        r"lr is not a positive scalar \(or zero if multiply_linear_by_lr",
    )
    training_ops.sparse_apply_ftrl(**dict(kwargs, lr=0.0, multiply_linear_by_lr=True))
    kwargs = sparse_args("sparse_apply_ftrl_v2", rng)
    _check_error(
        "sparse_apply_ftrl_v2",
        dict(kwargs, l2_shrinkage=-0.1),
        "l2 shrinkage regularization strength is not a non-negative",
    )
    kwargs = dense_args("apply_add_sign", rng)
    _check_error(
        "apply_add_sign",
        dict(kwargs, sign_decay=np.ones(3)),
        r"sign_decay is not a scalar: \[3\]",
    )
    kwargs = dense_args("apply_adagrad_da", rng)
    _check_error(
        "apply_adagrad_da",
        dict(kwargs, global_step=np.ones(2, np.int64)),
        "global_step is not a scalar",
    )
    _check_error(
        "apply_adagrad_da",
        dict(kwargs, global_step=1.5),
        "global_step must be an integer",
    )
    kwargs = sparse_args("sparse_apply_adadelta", rng)
    _check_error(
        "sparse_apply_adadelta",
        dict(kwargs, accum=np.ones((6, 4))),
        r"var and accum_grad do not have the same shape\[6,5\] \[6,4\]",
    )
    kwargs = dense_args("apply_adadelta", rng)
    _check_error(
        "apply_adadelta",
        dict(kwargs, accum_update=np.ones((7, 4))),
        "var and accum_update do not have the same shape",
    )
    kwargs = dense_args("apply_adam_with_amsgrad", rng)
    _check_error(
        "apply_adam_with_amsgrad",
        dict(kwargs, vhat=np.ones(3)),
        "var and vhat do not have the same shape",
    )
    kwargs = dense_args("apply_centered_rms_prop", rng)
    _check_error(
        "apply_centered_rms_prop",
        dict(kwargs, mg=np.ones(3)),
        r"var and mg do not have the same shape\[7,5\] \[3\]",
    )


@pytest.mark.parametrize("op", ["apply_adagrad", "sparse_apply_adagrad"])
def test_state_must_be_writeable_contiguous_and_of_one_dtype(op, rng):
    args = dense_args if op.startswith("apply") else sparse_args
    kwargs = args(op, rng)
    frozen = kwargs["var"].copy()
    frozen.flags.writeable = False
    _check_error(op, dict(kwargs, var=frozen), "var is read-only")
    wide = np.zeros((kwargs["var"].shape[0], 10))
    view = wide[:, ::2]
    _check_error(op, dict(kwargs, var=view), "var is not C-contiguous")
    assert not wide.any()
    _check_error(
        op,
        dict(kwargs, accum=kwargs["accum"].astype(np.float32)),
        "accum dtype float32 does not match var dtype float64",
    )
    _check_error(
        op, dict(kwargs, var=kwargs["var"].astype(np.int64)), "var has dtype int64"
    )
    _check_error(
        op,
        dict(kwargs, var=kwargs["var"].astype(np.complex128)),
        "var has dtype complex128",
    )
    _check_error(
        op,
        dict(kwargs, var=kwargs["var"].tolist()),
        "var must be a numpy array or a Variable",
    )
    _check_error(
        op,
        dict(kwargs, grad=kwargs["grad"].astype(np.float32)),
        "grad dtype float32 does not match var dtype float64",
    )
    _check_error(op, dict(kwargs, lr="fast"), "lr must be a real number")
    # A Tensor of the right dtype and a list are fine as gradients.
    call(op, dict(kwargs, grad=sg.constant(kwargs["grad"])))
    call(op, dict(kwargs, grad=kwargs["grad"].tolist()))


def test_read_only_variable_value_is_rejected():
    var = sg.Variable(np.ones(3))
    tensor = var.value()
    with pytest.raises(InvalidArgumentError, match="numpy array or a Variable"):
        training_ops.apply_gradient_descent(tensor, 0.1, np.ones(3))
    training_ops.apply_gradient_descent(var, 0.5, np.ones(3))
    np.testing.assert_array_equal(var.numpy(), 0.5)
    assert var.version == 1


# ---------------------------------------------------------------------------
# Threads: the same bits for any count; use_locking serializes.


def _big_sparse(op, dtype, index_dtype, zipf, shape):
    rng = np.random.default_rng(7)
    indices = zipf(rng, 20000, 3000, dtype=index_dtype)
    return sparse_args(
        op, rng, shape=shape, indices=indices, dtype=dtype, index_dtype=index_dtype
    )


@pytest.mark.parametrize("op", sorted(SPARSE_OPS))
@pytest.mark.parametrize("coalesce", [False, True])
@pytest.mark.parametrize("shape", [(3000, 16), (3000, 3)])
def test_sparse_bits_do_not_depend_on_threads(op, coalesce, shape, zipf):
    # Big enough for the parallel paths (20000 Zipf ids).  Rows of 16: the scan
    # kernel on 1, 2 and 4 threads; rows of 3: the scan kernel on one thread,
    # the by-row kernel on 2 and 4.
    results = []
    for n_threads, dtype in ((1, np.float32), (2, np.float32), (4, np.float32)):
        sg.set_num_threads(n_threads)
        index_dtype = np.int32 if n_threads == 2 else np.int64
        kwargs = _big_sparse(op, dtype, index_dtype, zipf, shape)
        call(op, dict(kwargs, coalesce_duplicates=coalesce))
        results.append(snapshot(op, kwargs))
    assert_same(results[0], results[1])
    assert_same(results[0], results[2])


@pytest.mark.parametrize("op", sorted(DENSE_OPS))
def test_dense_bits_do_not_depend_on_threads(op):
    results = []
    for n_threads in (1, 2, 4):
        sg.set_num_threads(n_threads)
        kwargs = dense_args(
            op, np.random.default_rng(3), shape=(20011, 5), dtype=np.float32
        )
        call(op, kwargs)
        results.append(snapshot(op, kwargs))
    assert_same(results[0], results[1])
    assert_same(results[0], results[2])


@pytest.mark.parametrize("op", sorted(SPARSE_OPS) + sorted(DENSE_OPS))
def test_avx2_and_baseline_kernels_give_the_same_bits(op, zipf, monkeypatch):
    from sparsegrad._kernels import training as baseline
    from sparsegrad.training.training_ops import core

    if core.kernels() is baseline:
        pytest.skip("no AVX2 build in use (CPU without AVX2, or not built)")
    results = []
    for kernels in (core.kernels(), baseline):
        with core.use_kernels(kernels):
            if op in SPARSE_OPS:
                kwargs = _big_sparse(op, np.float32, np.int64, zipf, (3000, 20))
            else:
                kwargs = dense_args(
                    op, np.random.default_rng(3), shape=(2011, 7), dtype=np.float32
                )
            call(op, kwargs)
            results.append(snapshot(op, kwargs))
    assert_same(results[0], results[1])


def test_kernel_selection():
    from sparsegrad._kernels import training as baseline
    from sparsegrad.training.training_ops import core

    def public(module):
        return {name for name in dir(module) if not name.startswith("_")}

    assert public(core.kernels()) == public(baseline)
    assert isinstance(sg.framework.backend._parallel.cpu_has_avx2(), bool)
    if core.kernels() is not baseline:
        assert sg.framework.backend._parallel.cpu_has_avx2()


def test_use_locking_serializes_concurrent_updates():
    # Each call adds exactly 1.0 to every element of the indexed rows; with the
    # lock no update is lost, whatever the interleaving.
    var = np.zeros((64, 512), dtype=np.float64)
    indices = np.arange(64).repeat(8)
    grad = -np.ones((indices.size, 512))
    n_threads, n_calls = 4, 25

    def worker():
        for _ in range(n_calls):
            training_ops.sparse_apply_gradient_descent(
                var, 1.0, grad, indices, use_locking=True
            )

    threads = [threading.Thread(target=worker) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(var, n_threads * n_calls * 8)


def test_locks_are_per_buffer_and_weak():
    from sparsegrad.training.training_ops import locks as impl

    base = np.zeros((4, 3))
    assert impl._lock_of(base, False) is impl._lock_of(base.reshape(-1), False)
    assert impl._lock_of(base, False) is not impl._lock_of(np.zeros(3), False)
    n_before = len(impl._LOCKS)
    scratch = np.zeros(3)
    training_ops.apply_gradient_descent(scratch, 1.0, np.ones(3), use_locking=True)
    assert len(impl._LOCKS) == n_before + 1
    del scratch
    assert len(impl._LOCKS) == n_before


# ---------------------------------------------------------------------------
# Property: any index sequence is the one-by-one application.


@settings(max_examples=40, deadline=None)
@given(
    indices=st.lists(st.integers(0, 7), min_size=0, max_size=12),
    width=st.integers(1, 4),
    coalesce=st.booleans(),
)
def test_adagrad_v2_any_indices(indices, width, coalesce):
    rng = np.random.default_rng(len(indices) * 10 + width)
    var = rng.normal(size=(8, width))
    accum = rng.uniform(0.1, 1.0, size=(8, width))
    grad = rng.normal(size=(len(indices), width))
    want_var, want_accum = var.copy(), accum.copy()
    if coalesce:
        rows = sorted(set(indices))
        grads = [
            sum(
                (grad[k] for k in range(len(indices)) if indices[k] == i),
                np.zeros(width),
            )
            for i in rows
        ]
    else:
        rows, grads = indices, list(grad)
    for i, g in zip(rows, grads):
        want_accum[i] = want_accum[i] + g * g
        want_var[i] = want_var[i] - (g * 0.5) / (np.sqrt(want_accum[i]) + 1e-7)
    training_ops.sparse_apply_adagrad_v2(
        var,
        accum,
        0.5,
        1e-7,
        grad,
        np.asarray(indices, dtype=np.int64),
        coalesce_duplicates=coalesce,
    )
    np.testing.assert_array_equal(var, want_var)
    np.testing.assert_array_equal(accum, want_accum)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(2048, 5000),
    n_rows=st.sampled_from([1, 3, 64, 4099, 1 << 16]),
    n_threads=st.sampled_from([2, 3, 4, 8]),
    index_dtype=st.sampled_from([np.int32, np.int64]),
    seed=st.integers(0, 2**32 - 1),
)
def test_by_row_kernel_sums_each_rows_gradients_in_order(
    n, n_rows, n_threads, index_dtype, seed
):
    # Enough work (n * 16 >= 2**15) for the by-row kernel to run on several
    # threads, each grouping its own rows in a hash table: few rows (long
    # chains), rows that are multiples of a power of two (colliding low bits),
    # or a wide spread.  Reference: np.add.at, which adds in order from zero.
    rng = np.random.default_rng(seed)
    if n_rows == 1 << 16:
        indices = (rng.integers(0, 64, size=n) * 1024).astype(index_dtype)
    else:
        indices = rng.integers(0, n_rows, size=n).astype(index_dtype)
    grad = rng.normal(size=(n, 16)).astype(np.float32)
    var = rng.normal(size=(n_rows, 16)).astype(np.float32)
    summed = np.zeros_like(var)
    np.add.at(summed, indices, grad)
    touched = np.unique(indices)
    want = var.copy()
    want[touched] = var[touched] - summed[touched] * np.float32(0.25)
    sg.set_num_threads(n_threads)
    training_ops.sparse_apply_gradient_descent(
        var, 0.25, grad, indices, coalesce_duplicates=True
    )
    np.testing.assert_array_equal(var, want)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_more_indices_than_the_by_row_kernel_links(n_threads, monkeypatch, zipf):
    # Beyond 2**31 - 2 occurrences the by-row kernel's int32 links would
    # overflow: duplicates are summed first, then applied once per row.  The
    # limit is lowered here to take that path with a small gradient.
    from sparsegrad.training.training_ops import spec as impl

    sg.set_num_threads(n_threads)
    indices = zipf(np.random.default_rng(5), 20000, 3000, dtype=np.int64)
    grad = np.random.default_rng(6).normal(size=(20000, 3))
    var = np.random.default_rng(7).normal(size=(3000, 3))
    accum = np.full_like(var, 0.5)
    want_var, want_accum = var.copy(), accum.copy()
    training_ops.sparse_apply_adagrad(
        want_var, want_accum, 0.1, grad, indices, coalesce_duplicates=True
    )
    monkeypatch.setattr(impl, "_BY_ROW_MAX_N", 1000)
    training_ops.sparse_apply_adagrad(
        var, accum, 0.1, grad, indices, coalesce_duplicates=True
    )
    np.testing.assert_array_equal(var, want_var)
    np.testing.assert_array_equal(accum, want_accum)


def test_by_row_scratch_is_linear_in_the_indices_for_any_thread_count():
    # The by-row kernels' grouping scratch is at most 8 n + 16 int32 words per
    # thread however the rows split between threads (each thread's part is
    # sized after counting), not n words per thread; its head holds each
    # thread's counts (4 int64 each, and 2 more) and work row (R values of
    # at most 8 bytes).
    from sparsegrad.training.training_ops import core

    for n_threads in (1, 2, 16, 64):
        words = core.kernels().by_row_scratch_size(1_000_000, 64, n_threads)
        head = 2 * (4 * n_threads + 2) + 2 * n_threads * 64
        assert words == 8 * 1_000_000 + 16 * n_threads + head


# ---------------------------------------------------------------------------
# Hardening: None beta2_power, arrays that share memory, 0-d variables.


@pytest.mark.parametrize("op", ["apply_adam", "apply_adam_with_amsgrad",
                                "sparse_apply_adam"])
def test_adam_beta2_power_none_is_an_error(op, rng):
    # None used to select the AdaMax step size, 32x Adam's at these values.
    kwargs = (sparse_args if op.startswith("sparse") else dense_args)(op, rng)
    _check_error(op, dict(kwargs, beta2_power=None),
                 "beta2_power must be a real number, got None")


def _overlap_cases(op, kwargs):
    """(description, kwargs with one argument aliasing another, message)."""
    slots = state_of(op, kwargs)[1:]
    var = kwargs["var"]
    grad_name = "delta" if "delta" in kwargs else "grad"
    grad = kwargs[grad_name]
    # A view of var with the gradient's shape.
    aliased = var.reshape(-1)[: grad.size].reshape(grad.shape)
    cases = [(f"{grad_name} views var", {grad_name: aliased},
              f"{grad_name} shares memory with var")]
    for slot in slots:
        if kwargs[slot].shape == var.shape:
            cases.append((f"{slot} is var", {slot: var},
                          f"{slot} shares memory with var"))
    if len(slots) >= 2 and kwargs[slots[0]].shape == kwargs[slots[1]].shape:
        cases.append((f"{slots[1]} is {slots[0]}", {slots[1]: kwargs[slots[0]]},
                      f"{slots[1]} shares memory with {slots[0]}"))
    if slots and kwargs[slots[0]].size >= grad.size:
        view = kwargs[slots[0]].reshape(-1)[: grad.size].reshape(grad.shape)
        cases.append((f"{grad_name} views {slots[0]}", {grad_name: view},
                      f"{grad_name} shares memory with {slots[0]}"))
    return cases


@pytest.mark.parametrize("op", sorted(SPARSE_OPS) + sorted(DENSE_OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arguments_sharing_memory_are_rejected(op, dtype, rng):
    # Kernels write var and the slots on several threads while reading the
    # gradient: aliased buffers would give thread-dependent bits.
    make = sparse_args if op in SPARSE_OPS else dense_args
    kwargs = make(op, rng, dtype=dtype)
    for what, change, message in _overlap_cases(op, kwargs):
        bad = dict(kwargs, **change)
        before = {name: np.array(bad[name], copy=True) for name in state_of(op, bad)}
        with pytest.raises(InvalidArgumentError, match=message):
            call(op, bad)
        for name, value in before.items():
            assert bad[name].tobytes() == value.tobytes(), (what, name)


@pytest.mark.parametrize("op", sorted(SPARSE_OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_indices_viewing_var_are_rejected(op, dtype, rng):
    # Indices that are var's own bytes: in range when checked, but the
    # kernel's writes to var would change them under it (a crash, not just
    # wrong bits).  They are refused before anything is written.
    kwargs = sparse_args(op, rng, dtype=dtype)
    var = kwargs["var"]
    int_type = np.int32 if dtype == np.float32 else np.int64
    ids = var.reshape(-1)[:5].view(int_type)
    ids[:] = [3, 0, 3, 5, 3]                  # tiny subnormal floats in var
    kwargs["indices"] = ids
    before = snapshot(op, kwargs)
    with pytest.raises(InvalidArgumentError, match="indices shares memory with var"):
        call(op, kwargs)
    assert_same(before, snapshot(op, kwargs))


@pytest.mark.parametrize(
    "op", sorted(op for op in DENSE_OPS if op != "apply_rowwise_adagrad"))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_zero_d_variables_are_updated_like_one_element_ones(op, dtype, rng):
    scalar = dense_args(op, rng, shape=(), dtype=dtype)
    for name in state_of(op, scalar) + ["grad", "delta"]:
        if name in scalar:          # rng.normal(size=()) gives NumPy scalars
            scalar[name] = np.array(scalar[name], dtype=dtype)
    vector = {k: (np.array(v).reshape(1) if isinstance(v, np.ndarray) else v)
              for k, v in scalar.items()}
    call(op, scalar)
    call(op, vector)
    for name in state_of(op, scalar):
        assert scalar[name].shape == ()
        assert scalar[name].tobytes() == vector[name].tobytes(), name


def test_zero_d_gradient_descent_by_hand():
    var = np.array(2.0, np.float32)
    training_ops.apply_gradient_descent(var, 0.25, np.float32(4.0))
    assert var.shape == () and var == 1.0


# ---------------------------------------------------------------------------
# One validation layer: everything is checked before anything is converted.


def _rejected_without_copy(call_it, match):
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(InvalidArgumentError, match=match):
            call_it()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak        # nothing of the gradient's size was made


@pytest.mark.parametrize("grad_dtype", [np.float32, np.int64])
def test_huge_misshaped_broadcast_gradient_is_rejected_before_conversion(grad_dtype):
    # 2**31 x 16 rows would be 128 GiB once copied or cast: the shape check
    # must come first.
    var, accum = np.zeros((100, 16), np.float32), np.zeros((100, 16), np.float32)
    huge = np.broadcast_to(np.zeros(16, grad_dtype), (2**31, 16))
    _rejected_without_copy(
        lambda: training_ops.sparse_apply_adagrad_v2(
            var, accum, 0.1, 1e-7, huge, np.arange(64)),
        "grad must be the same size as indices")
    _rejected_without_copy(
        lambda: training_ops.apply_adagrad_v2(var, accum, 0.1, 1e-7, huge),
        "var and grad do not have the same shape")
    _rejected_without_copy(
        lambda: sg.optimizers.Adagrad(0.1).apply_gradients(
            [(huge, sg.Variable(var))]),
        "var and grad do not have the same shape")
    assert not var.any() and not accum.any()
