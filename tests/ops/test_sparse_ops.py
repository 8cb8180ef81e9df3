"""Tests of sparse_dense_matmul: values against SciPy/NumPy, the IndexedSlices
gradient over the touched rows of `b`, higher order, errors."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.testing import check_gradients

# Op types whose gradients this module checks (the registry sweep reads it).
CHECKED_OPS = ("SparseDenseMatmul",)

FORMATS = [sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.coo_array]


def _random_sparse(rng, shape, density=0.3, fmt=sp.csr_array):
    dense = rng.standard_normal(shape) * (rng.uniform(size=shape) < density)
    return fmt(dense), dense


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("adjoint_a", [False, True])
@pytest.mark.parametrize("adjoint_b", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_matches_dense(rng, fmt, adjoint_a, adjoint_b, dtype):
    a_shape = (6, 5) if adjoint_a else (5, 6)
    a, dense_a = _random_sparse(rng, a_shape, fmt=fmt)
    b = rng.standard_normal((3, 6) if adjoint_b else (6, 3)).astype(dtype)
    out = sg.sparse.sparse_dense_matmul(a, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)
    opa = dense_a.T if adjoint_a else dense_a
    opb = b.T if adjoint_b else b
    assert out.dtype == dtype and out.shape == (5, 3)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(
        out.numpy(), opa @ opb.astype(np.float64), rtol=tol, atol=tol
    )


def test_integer_and_bool_matrices_are_cast():
    a = sp.csr_array(np.array([[1, 0, 2], [0, 0, 3]], dtype=np.int64))
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = sg.sparse.sparse_dense_matmul(a, b)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), [[8.0, 11.0], [12.0, 15.0]])
    mask = sp.csr_array(np.array([[True, False, True]]))
    np.testing.assert_array_equal(
        sg.sparse.sparse_dense_matmul(mask, b).numpy(), [[4.0, 6.0]]
    )


def test_gradient_is_indexed_slices_over_touched_rows(rng):
    # Columns 1 and 4 hold no entry; column 2 holds an explicit zero.
    dense_a = np.array(
        [
            [1.0, 0.0, 0.0, 2.0, 0.0, 0.5],
            [0.0, 0.0, 0.0, 3.0, 0.0, 0.0],
            [4.0, 0.0, 0.0, 0.0, 0.0, 1.0],
        ]
    )
    a = sp.csr_array(dense_a)
    a = sp.csr_array(
        (
            np.append(a.data, 0.0),
            np.append(a.indices, 2),
            np.append(a.indptr[:-1], a.nnz + 1),
        ),
        shape=a.shape,
    )
    w = sg.Variable(rng.standard_normal((6, 2)))
    upstream = rng.standard_normal((3, 2))
    with sg.GradientTape() as tape:
        y = sg.sparse.sparse_dense_matmul(a, w)
    g = tape.gradient(y, w, output_gradients=sg.constant(upstream))
    assert isinstance(g, sg.IndexedSlices)
    np.testing.assert_array_equal(g.indices.numpy(), [0, 2, 3, 5])
    assert g.indices.dtype == a.indices.dtype
    assert g.dense_shape == (6, 2)
    np.testing.assert_allclose(
        g.values.numpy(), dense_a[:, [0, 2, 3, 5]].T @ upstream, rtol=1e-13
    )
    np.testing.assert_allclose(g.to_dense().numpy(), dense_a.T @ upstream, rtol=1e-13)


@pytest.mark.parametrize("adjoint_a", [False, True])
@pytest.mark.parametrize("adjoint_b", [False, True])
def test_gradient_equals_dense(rng, adjoint_a, adjoint_b):
    a, dense_a = _random_sparse(rng, (7, 4) if adjoint_a else (4, 7))
    b0 = rng.standard_normal((3, 7) if adjoint_b else (7, 3)).astype(np.float32)
    b = sg.Variable(b0)
    upstream = rng.standard_normal((4, 3)).astype(np.float32)
    with sg.GradientTape() as tape:
        y = sg.sparse.sparse_dense_matmul(
            a, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b
        )
    g = tape.gradient(y, b, output_gradients=sg.constant(upstream))
    assert isinstance(g, sg.IndexedSlices) != adjoint_b
    assert g.dtype == np.float32
    opa = dense_a.T if adjoint_a else dense_a
    expected = opa.T @ upstream
    if adjoint_b:
        expected = expected.T
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-5, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(0, 5),
    k=st.integers(1, 9),
    n=st.integers(1, 3),
    density=st.floats(0.0, 1.0),
    adjoint_a=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_sparse_gradient_equals_dense_property(m, k, n, density, adjoint_a, seed):
    rng = np.random.default_rng(seed)
    a, dense_a = _random_sparse(
        rng, (k, m) if adjoint_a else (m, k), density, fmt=sp.coo_array
    )
    b = sg.Variable(rng.standard_normal((k, n)))
    upstream = rng.standard_normal((m, n))
    with sg.GradientTape() as tape:
        y = sg.sparse.sparse_dense_matmul(a, b, adjoint_a=adjoint_a)
    g = tape.gradient(y, b, output_gradients=sg.constant(upstream))
    opa = dense_a.T if adjoint_a else dense_a
    assert isinstance(g, sg.IndexedSlices)
    touched = np.flatnonzero((opa != 0).any(axis=0))
    np.testing.assert_array_equal(g.indices.numpy(), touched)
    np.testing.assert_allclose(
        g.to_dense().numpy(), opa.T @ upstream, rtol=1e-12, atol=1e-14
    )


@pytest.mark.parametrize("adjoint_a", [False, True])
@pytest.mark.parametrize("adjoint_b", [False, True])
def test_finite_differences(rng, adjoint_a, adjoint_b):
    a, _ = _random_sparse(rng, (5, 4), density=0.4)
    b = rng.standard_normal(
        (3, 5 if adjoint_a else 4) if adjoint_b else (5 if adjoint_a else 4, 3)
    )
    check_gradients(
        lambda t: sg.sparse.sparse_dense_matmul(
            a, t, adjoint_a=adjoint_a, adjoint_b=adjoint_b
        ),
        [b],
        order=2,
    )


def test_linear_model_with_loss(rng):
    # A logistic model over scipy.sparse features: the weight gradient stays sparse.
    x, dense_x = _random_sparse(rng, (8, 50), density=0.05)
    labels = (rng.uniform(size=(8, 1)) < 0.5).astype(np.float64)
    w = sg.Variable(rng.standard_normal((50, 1)) * 0.1)
    with sg.GradientTape() as tape:
        logits = sg.sparse.sparse_dense_matmul(x, w)
        loss = sg.reduce_sum(
            sg.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        )
    g = tape.gradient(loss, w)
    assert isinstance(g, sg.IndexedSlices)
    assert set(g.indices.numpy()) == set(np.flatnonzero(np.abs(dense_x).sum(0)))
    p = 1.0 / (1.0 + np.exp(-(dense_x @ w.numpy())))
    np.testing.assert_allclose(
        g.to_dense().numpy(), dense_x.T @ (p - labels), rtol=1e-12
    )


def test_second_order_through_gradient(rng):
    # The gradient values are a sparse @ dense product of the upstream gradient,
    # so they can be differentiated w.r.t. it.
    a, dense_a = _random_sparse(rng, (4, 6), density=0.5)
    b = sg.Variable(rng.standard_normal((6, 2)))
    u = sg.Variable(rng.standard_normal((4, 2)))
    c = rng.standard_normal((6, 2))
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = sg.sparse.sparse_dense_matmul(a, b)
        g = inner.gradient(y, b, output_gradients=u)
        z = sg.reduce_sum(g.values * c[g.indices.numpy()])
    du = outer.gradient(z, u)
    np.testing.assert_allclose(np.asarray(du), dense_a @ c, rtol=1e-12)


def test_cost_follows_touched_rows():
    # A million-row weight matrix and a batch touching three rows: the gradient
    # holds three rows.
    w = sg.Variable(np.zeros((1_000_000, 4), dtype=np.float32))
    a = sp.csr_array(
        ([1.0, 2.0, 3.0], ([0, 1, 1], [999_999, 5, 70])), shape=(2, 1_000_000)
    )
    with sg.GradientTape() as tape:
        y = sg.sparse.sparse_dense_matmul(a, w)
    tracemalloc.start()  # NumPy and SciPy report their allocations to it
    try:
        g = tape.gradient(y, w)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, f"peak allocation {peak / 2**20:.1f} MiB"  # w is 16 MiB
    np.testing.assert_array_equal(g.indices.numpy(), [5, 70, 999_999])
    np.testing.assert_array_equal(g.values.numpy(), [[2.0] * 4, [3.0] * 4, [1.0] * 4])


def test_indexed_slices_upstream_is_densified(rng):
    a, dense_a = _random_sparse(rng, (4, 5), density=0.5)
    w = sg.Variable(rng.standard_normal((5, 3)))
    with sg.GradientTape() as tape:
        y = sg.gather(sg.sparse.sparse_dense_matmul(a, w), [3, 1, 3])
    g = tape.gradient(y, w)
    upstream = np.zeros((4, 3))
    upstream[[1, 3]] = [[1.0] * 3, [2.0] * 3]
    np.testing.assert_allclose(np.asarray(g), dense_a.T @ upstream, rtol=1e-13)


def test_matrix_is_copied():
    a = sp.csr_array(np.array([[1.0, 2.0]]))
    b = sg.Variable([[1.0], [1.0]])
    with sg.GradientTape() as tape:
        y = sg.sparse.sparse_dense_matmul(a, b)
    a.data[:] = 100.0
    g = tape.gradient(y, b)
    np.testing.assert_array_equal(g.to_dense().numpy(), [[1.0], [2.0]])


# -- errors ------------------------------------------------------------------------


def test_argument_errors():
    a = sp.csr_array(np.ones((2, 3)))
    with pytest.raises(TypeError, match=r"sp_a must be a scipy\.sparse"):
        sg.sparse.sparse_dense_matmul(np.ones((2, 3)), np.ones((3, 1)))
    with pytest.raises(
        InvalidArgumentError,
        match=r"inner dimensions differ: op\(sp_a\) has shape \(2, 3\) "
        r"and op\(b\) has shape \(4, 1\)",
    ):
        sg.sparse.sparse_dense_matmul(a, np.ones((4, 1)))
    with pytest.raises(InvalidArgumentError, match=r"inner dimensions differ"):
        sg.sparse.sparse_dense_matmul(a, np.ones((3, 1)), adjoint_a=True)
    with pytest.raises(InvalidArgumentError, match=r"b must be 2-D, got shape \(3,\)"):
        sg.sparse.sparse_dense_matmul(a, np.ones(3))
    with pytest.raises(InvalidArgumentError, match="b must be float32 or float64"):
        sg.sparse.sparse_dense_matmul(a, np.ones((3, 1), dtype=np.int64))
    with pytest.raises(InvalidArgumentError, match="only real dtypes"):
        sg.sparse.sparse_dense_matmul(
            sp.csr_array(np.ones((2, 3)) * 1j), np.ones((3, 1))
        )
    if hasattr(sp, "coo_array"):
        try:
            one_d = sp.coo_array(np.ones(3))
        except (ValueError, TypeError):
            one_d = None
        if one_d is not None and len(one_d.shape) == 1:
            with pytest.raises(InvalidArgumentError, match="sp_a must be 2-D"):
                sg.sparse.sparse_dense_matmul(one_d, np.ones((3, 1)))
