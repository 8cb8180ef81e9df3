"""gather_nd (TensorFlow golden cases, errors, gradients), the composed
gradient of a gather of a gather, and the densify warning."""

import pathlib
import warnings

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import DensifyWarning, InvalidArgumentError
from sparsegrad.testing import check_gradients

CHECKED_OPS = ["GatherNd"]

GOLDEN = np.load(pathlib.Path(__file__).parent / "data" / "gather_nd_golden.npz")


@pytest.mark.parametrize("k", range(int(GOLDEN["n_cases"])))
def test_tensorflow_golden(k):
    params = GOLDEN[f"case{k}_params"]
    idx = GOLDEN[f"case{k}_indices"]
    b = int(GOLDEN[f"case{k}_batch_dims"])
    w = GOLDEN[f"case{k}_weights"]
    v = sg.Variable(params)
    with sg.GradientTape() as tape:
        out = sg.gather_nd(v, idx, batch_dims=b)
        loss = sg.reduce_sum(out * w)
    np.testing.assert_array_equal(out.numpy(), GOLDEN[f"case{k}_out"])
    g = tape.gradient(loss, v)
    whole_rows = idx.shape[-1] == 1 and b == 0
    assert isinstance(g, sg.IndexedSlices) == whole_rows
    np.testing.assert_allclose(np.asarray(g), GOLDEN[f"case{k}_grad"], rtol=1e-14)


def _numpy_gather_nd(params, idx):
    lead = idx.shape[:-1]
    flat = idx.reshape(int(np.prod(lead)), idx.shape[-1])
    rows = [params[tuple(t)] for t in flat]
    return np.array(rows).reshape(lead + params.shape[idx.shape[-1]:])


@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_against_numpy(rng, depth):
    params = rng.standard_normal((5, 4, 3)).astype(np.float32)
    idx = np.stack(
        [rng.integers(0, d, size=(2, 3)) for d in params.shape[:depth]], axis=-1
    ) if depth else np.zeros((2, 3, 0), dtype=np.int64)
    out = sg.gather_nd(params, idx)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), _numpy_gather_nd(params, idx))


@pytest.mark.parametrize(
    ("indices", "batch_dims", "message"),
    [
        ([[2, 0]], 0, "indices[0] = [2, 0] does not index into param shape [2,3]"),
        ([[0, 3]], 0, "indices[0] = [0, 3] does not index into param shape [2,3]"),
        ([[-1, 0]], 0, "indices[0] = [-1, 0] does not index into param shape [2,3]"),
        ([[[1]], [[2]]], 0, "indices[1,0] = [2] does not index into param shape [2,3]"),
        ([[0, 0, 0]], 0,
         "index innermost dimension length must be <= params rank; saw: 3 vs. 2"),
        (1, 0, "gather_nd: indices must be at least a vector"),
        ([[0.5]], 0, "indices must be int32 or int64, got dtype float64"),
        ([[1]], 2, "gather_nd: batch_dims must be in [0, 1]"),
        ([[1], [0], [1]], 1, "params.shape[:1] = (2,) and indices.shape[:1] = (3,)"),
    ],
)
def test_errors(indices, batch_dims, message):
    p = sg.Variable(np.arange(6.0).reshape(2, 3))
    before = p.numpy().copy()
    with pytest.raises(InvalidArgumentError) as info:
        sg.gather_nd(p, indices, batch_dims=batch_dims)
    assert message in str(info.value)
    np.testing.assert_array_equal(p.numpy(), before)


@pytest.mark.parametrize(
    ("indices", "batch_dims"),
    [
        ([[1, 2], [0, 1], [1, 2]], 0),
        ([[1], [0], [1]], 0),
        ([[[1], [0]], [[1], [1]]], 0),
        ([[[1, 2]], [[0, 0]]], 1),
        (np.zeros((3, 0), dtype=np.int64), 0),
        ([[1, 2, 3]], 0),
        ([1, 0], 0),
    ],
)
def test_gradients_finite_differences(rng, indices, batch_dims):
    x = rng.standard_normal((2, 3, 4))
    check_gradients(lambda x: sg.gather_nd(x, indices, batch_dims=batch_dims), [x],
                    order=2)


def test_whole_rows_gradient_is_indexed_slices_and_equals_dense(rng):
    table = rng.standard_normal((50, 8))
    idx = rng.integers(0, 50, size=(20, 1))
    v = sg.Variable(table)
    w = rng.standard_normal((20, 8))
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(sg.gather_nd(v, idx) * w)
    g = tape.gradient(loss, v)
    assert isinstance(g, sg.IndexedSlices) and g.values.shape == (20, 8)
    dense = np.zeros_like(table)
    np.add.at(dense, idx[:, 0], w)
    np.testing.assert_allclose(np.asarray(g), dense, rtol=1e-15)


# -- a gather of a gather: the gradient is composed, never dense -----------------


def test_gather_of_gather_composes_indexed_slices(rng):
    table = rng.standard_normal((100, 4))
    a = rng.integers(0, 100, size=30)
    b = rng.integers(0, 30, size=12)
    v = sg.Variable(table)
    w = rng.standard_normal((12, 4))
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(sg.gather(sg.gather(v, a), b) * w)
    g = tape.gradient(loss, v)
    assert isinstance(g, sg.IndexedSlices)
    np.testing.assert_array_equal(g.indices.numpy(), a[b])
    np.testing.assert_array_equal(g.values.numpy(), w)
    dense = np.zeros_like(table)
    np.add.at(dense, a[b], w)
    np.testing.assert_allclose(np.asarray(g), dense, rtol=1e-15)


def test_gather_of_gather_with_2d_inner_indices(rng):
    table = rng.standard_normal((20, 3))
    a = rng.integers(0, 20, size=(6, 2))
    v = sg.Variable(table)
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(sg.gather(sg.gather(v, a), [5, 0, 5]) * 2.0)
    g = tape.gradient(loss, v)
    assert isinstance(g, sg.IndexedSlices)
    np.testing.assert_array_equal(g.indices.numpy(), a[[5, 0, 5]].reshape(-1))
    dense = np.zeros_like(table)
    np.add.at(dense, a[[5, 0, 5]].reshape(-1), 2.0)
    np.testing.assert_allclose(np.asarray(g), dense)


def test_gather_of_gather_second_order(rng):
    x = rng.standard_normal((7, 3))
    check_gradients(
        lambda x: sg.gather(sg.gather(x, [6, 1, 1, 3]), [3, 0, 2]) ** 2, [x], order=2
    )


def test_gather_of_gather_does_not_warn_even_when_large(rng):
    v = sg.Variable(np.zeros((1000, 4)))
    previous = sg.set_densify_warning_threshold(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DensifyWarning)
            with sg.GradientTape() as tape:
                loss = sg.reduce_sum(sg.gather(sg.gather(v, [1, 2, 3]), [0]))
            tape.gradient(loss, v)
    finally:
        sg.set_densify_warning_threshold(previous)


# -- the densify warning -----------------------------------------------------------


@pytest.fixture
def threshold():
    previous = sg.set_densify_warning_threshold(100)
    yield
    sg.set_densify_warning_threshold(previous)


def test_warning_names_the_op_and_shape_once_per_op(threshold):
    v = sg.Variable(np.ones((50, 4)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with sg.GradientTape() as tape:
                # the gather's gradient is sparse; Mul's gradient needs it dense
                loss = sg.reduce_sum(sg.gather(v * 2.0, [1, 2]))
            tape.gradient(loss, v)
    messages = [str(w.message) for w in caught if w.category is DensifyWarning]
    assert len(messages) == 1, messages
    assert messages[0].startswith("gradient of Mul:"), messages
    assert "(50, 4)" in messages[0]
    assert "200 elements" in messages[0]


def test_warning_for_each_op_type_then_reset_by_set(threshold):
    v = sg.Variable(np.ones((50, 4)))

    def run():
        with sg.GradientTape() as tape:
            y = sg.gather(v, [1, 2])
            loss = sg.reduce_sum(sg.gather(v, [0], axis=0)) + sg.reduce_sum(y)
        return tape.gradient(loss, v)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sg.ops.array_ops.densify(sg.IndexedSlices(np.ones((1, 4)), [0], (50, 4)))
        sg.ops.array_ops.densify(sg.IndexedSlices(np.ones((1, 4)), [0], (50, 4)))
        sg.set_densify_warning_threshold(100)
        sg.ops.array_ops.densify(sg.IndexedSlices(np.ones((1, 4)), [0], (50, 4)))
        run()  # gradients aggregate by concatenation: nothing is densified
    messages = [str(w.message) for w in caught if w.category is DensifyWarning]
    assert len(messages) == 2
    assert all(m.startswith("densify:") for m in messages)


def test_below_threshold_or_disabled_no_warning():
    v = sg.IndexedSlices(np.ones((1, 4)), [0], (50, 4))
    for value in (None, 201):
        previous = sg.set_densify_warning_threshold(value)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", DensifyWarning)
                sg.ops.array_ops.densify(v)
                np.asarray(v)          # an explicit conversion never warns
                v.to_dense()
        finally:
            sg.set_densify_warning_threshold(previous)


def test_forward_op_given_indexed_slices_warns(threshold):
    s = sg.IndexedSlices(np.ones((1, 4)), [0], (50, 4))
    with pytest.warns(DensifyWarning, match="an op given an IndexedSlices argument"):
        sg.reduce_sum(s)


@pytest.mark.parametrize("bad", [-1, 2.5, "10"])
def test_threshold_validation(bad):
    before = sg.get_densify_warning_threshold()
    with pytest.raises(InvalidArgumentError, match="n_elements"):
        sg.set_densify_warning_threshold(bad)
    assert sg.get_densify_warning_threshold() == before


def test_default_threshold():
    assert sg.get_densify_warning_threshold() == 10_000_000
