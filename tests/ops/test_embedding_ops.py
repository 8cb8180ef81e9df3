"""Tests of gather and embedding_lookup: values, IndexedSlices gradients
(autodiff.md sections 4 and 5), finite differences and errors."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsegrad as sg
from sparsegrad.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
)
from sparsegrad.testing import check_gradients

# Op types whose gradients this module checks (the registry sweep reads it).
CHECKED_OPS = ("GatherV2", "GatherV2Grad")

V = [[0.0, 1.0, 2.0], [2.0, 3.0, 4.0], [4.0, 5.0, 6.0], [6.0, 7.0, 8.0]]


def _var(dtype=np.float32):
    return sg.Variable(np.array(V, dtype=dtype))


def _assert_slices(g, indices, values, dense_shape):
    assert isinstance(g, sg.IndexedSlices)
    np.testing.assert_array_equal(g.indices.numpy(), indices)
    np.testing.assert_array_equal(g.values.numpy(), values)
    assert g.dense_shape == tuple(dense_shape)


# -- forward -----------------------------------------------------------------------


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize(
    "shape,indices,axis",
    [
        ((5,), [4, 0, 4], 0),
        ((4, 3), [[1, 3], [1, 0]], 0),
        ((4, 3), 2, 0),
        ((4, 3), [2, 0, 0, 1], 1),
        ((2, 3, 4), [[3], [0]], -1),
        ((2, 3, 4), [1, 1], 1),
        ((2, 3, 4), [], 2),
    ],
)
def test_gather_matches_numpy(rng, shape, indices, axis, index_dtype):
    params = rng.standard_normal(shape).astype(np.float32)
    idx = np.array(indices, dtype=index_dtype)
    out = sg.gather(params, idx, axis=axis)
    expected = np.take(params, idx, axis=axis)
    assert out.shape == expected.shape and out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), expected)


def test_gather_accepts_tensors_variables_and_int_params():
    v = _var()
    np.testing.assert_array_equal(
        sg.gather(v, sg.constant([3, 1])).numpy(), np.array(V, np.float32)[[3, 1]]
    )
    ints = sg.gather(np.arange(6).reshape(3, 2), [2])
    np.testing.assert_array_equal(ints.numpy(), [[4, 5]])
    small = sg.gather(v, np.array([1], dtype=np.uint8))
    np.testing.assert_array_equal(small.numpy(), [V[1]])


# -- gradients: the golden cases of autodiff.md sections 4 and 5 ----------------------


def test_gather_grad_is_indexed_slices():
    v = _var()
    with sg.GradientTape() as tape:
        y = sg.gather(v, [1, 3])
    g = tape.gradient(y, v)
    _assert_slices(g, [1, 3], np.ones((2, 3)), (4, 3))
    assert g.dtype == np.float32


def test_gather_grad_with_upstream():
    v = _var()
    with sg.GradientTape() as tape:
        y = sg.gather(v, [1])
    g = tape.gradient(y, v, output_gradients=sg.constant([[1.0, 2.0, 3.0]], "float32"))
    _assert_slices(g, [1], [[1.0, 2.0, 3.0]], (4, 3))


def test_gather_grad_multidim_and_scalar_indices():
    v = _var()
    with sg.GradientTape(persistent=True) as tape:
        y = sg.gather(v, [[1, 3], [1, 0]])
        s = sg.gather(v, 2)
    assert y.shape == (2, 2, 3) and s.shape == (3,)
    _assert_slices(tape.gradient(y, v), [1, 3, 1, 0], np.ones((4, 3)), (4, 3))
    _assert_slices(tape.gradient(s, v), [2], np.ones((1, 3)), (4, 3))


def test_embedding_lookup_grad():
    v = _var()
    with sg.GradientTape() as tape:
        y = sg.nn.embedding_lookup(v, [2, 2, 0])
    np.testing.assert_array_equal(y.numpy(), np.array(V, np.float32)[[2, 2, 0]])
    _assert_slices(tape.gradient(y, v), [2, 2, 0], np.ones((3, 3)), (4, 3))


@pytest.mark.parametrize(
    "second_dtype,expected", [(np.int32, np.int32), (np.int64, np.int64)]
)
def test_two_gathers_concatenate(second_dtype, expected):
    v = _var()
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(
            sg.gather(v, np.array([1, 3], np.int32))
        ) + 2.0 * sg.reduce_sum(sg.gather(v, np.array([3, 0], second_dtype)))
    g = tape.gradient(loss, v)
    assert isinstance(g, sg.IndexedSlices)
    assert len(g) == 4
    assert g.indices.dtype == expected
    assert g.dense_shape == (4, 3)
    np.testing.assert_array_equal(
        g.to_dense().numpy(), [[2.0] * 3, [1.0] * 3, [0.0] * 3, [3.0] * 3]
    )
    order = np.argsort(g.indices.numpy(), kind="stable")
    np.testing.assert_array_equal(g.indices.numpy()[order], [0, 1, 3, 3])


def test_gather_plus_dense_use_is_dense():
    v = _var()
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(sg.gather(v, [1, 3])) + sg.reduce_sum(v * 1.0)
    g = tape.gradient(loss, v)
    assert isinstance(g, sg.Tensor)
    np.testing.assert_array_equal(
        g.numpy(), [[1, 1, 1], [2, 2, 2], [1, 1, 1], [2, 2, 2]]
    )


def test_same_row_twice_not_merged():
    v = _var()
    with sg.GradientTape() as tape:
        y = sg.gather(v, [0]) + sg.gather(v, [0])
    g = tape.gradient(y, v)
    assert isinstance(g, sg.IndexedSlices)
    np.testing.assert_array_equal(g.indices.numpy(), [0, 0])


def test_nested_gathers():
    w = sg.Variable(np.arange(6.0).reshape(3, 2))
    with sg.GradientTape() as tape:
        y = sg.gather(sg.gather(w, [2, 1]), [1, 1])
    g = tape.gradient(y, w)
    # composed: rows [2, 1][[1, 1]] = [1, 1], no dense intermediate
    _assert_slices(g, [1, 1], [[1.0, 1.0], [1.0, 1.0]], (3, 2))


def test_gather_of_computed_tensor_is_dense_for_the_variable():
    w = sg.Variable(np.arange(6.0).reshape(3, 2))
    with sg.GradientTape() as tape:
        y = sg.gather(w * 3.0, [1])
    g = tape.gradient(y, w)
    assert isinstance(g, sg.Tensor)
    np.testing.assert_array_equal(g.numpy(), [[0, 0], [3, 3], [0, 0]])


def test_gather_of_watched_tensor():
    x = sg.constant(np.arange(6.0).reshape(3, 2))
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.gather(x, [2, 2])
    _assert_slices(tape.gradient(y, x), [2, 2], np.ones((2, 2)), (3, 2))


def test_gather_axis1_grad_is_dense():
    v = _var(np.float64)
    with sg.GradientTape() as tape:
        y = sg.gather(v, [2, 0, 2], axis=1)
    g = tape.gradient(y, v)
    assert isinstance(g, sg.Tensor)
    np.testing.assert_array_equal(g.numpy(), np.tile([1.0, 0.0, 2.0], (4, 1)))


def test_incoming_indexed_slices_is_densified():
    # The inner gather's gradient arrives as IndexedSlices at the outer one,
    # which along axis 1 needs the dense form.
    w = sg.Variable(np.arange(12.0).reshape(3, 4))
    with sg.GradientTape() as tape:
        y = sg.gather(sg.gather(w, [3, 1], axis=1), [0, 0, 2])
    g = tape.gradient(y, w)
    assert isinstance(g, sg.Tensor)
    expected = np.zeros((3, 4))
    expected[0, [1, 3]] = 2.0
    expected[2, [1, 3]] = 1.0
    np.testing.assert_array_equal(g.numpy(), expected)


def test_jacobian_of_gather_is_dense():
    v = sg.Variable(np.arange(6.0).reshape(3, 2))
    with sg.GradientTape() as tape:
        y = sg.gather(v, [2, 0])
    j = np.asarray(tape.jacobian(y, v))
    assert j.shape == (2, 2, 3, 2)
    expected = np.zeros((2, 2, 3, 2))
    for r, i in enumerate([2, 0]):
        for c in range(2):
            expected[r, c, i, c] = 1.0
    np.testing.assert_array_equal(j, expected)


# -- finite differences and the sparse == dense property ------------------------------


@pytest.mark.parametrize(
    "shape,indices,axis",
    [
        ((5, 3), [4, 0, 4, 1], 0),
        ((5, 3), [[4, 0], [4, 2]], 0),
        ((4, 3), [2, 0, 0], 1),
        ((2, 3, 4), [[3], [0]], -1),
        ((2, 3, 4), 1, 1),
    ],
)
def test_gather_finite_differences(rng, shape, indices, axis):
    params = rng.standard_normal(shape)
    check_gradients(lambda p: sg.gather(p, indices, axis=axis), [params], order=2)


def test_embedding_lookup_finite_differences(rng):
    table = rng.standard_normal((6, 4))
    ids = np.array([[5, 1], [1, 1]])
    check_gradients(lambda t: sg.nn.embedding_lookup(t, ids), [table], order=2)
    check_gradients(
        lambda t: sg.nn.embedding_lookup(t, ids, max_norm=1.5), [table], order=1
    )


@settings(max_examples=40, deadline=None)
@given(
    n_rows=st.integers(1, 8),
    width=st.integers(1, 3),
    ids=st.lists(st.integers(0, 7), min_size=0, max_size=12),
    seed=st.integers(0, 2**16),
)
def test_sparse_gradient_equals_dense(n_rows, width, ids, seed):
    rng = np.random.default_rng(seed)
    ids = np.array([i % n_rows for i in ids], dtype=np.int64)
    table = rng.standard_normal((n_rows, width))
    upstream = rng.standard_normal((ids.size, width))
    v = sg.Variable(table)
    with sg.GradientTape() as tape:
        y = sg.nn.embedding_lookup(v, ids)
    g = tape.gradient(y, v, output_gradients=sg.constant(upstream))
    assert isinstance(g, sg.IndexedSlices)
    dense = np.zeros_like(table)
    np.add.at(dense, ids, upstream)
    np.testing.assert_allclose(g.to_dense().numpy(), dense, rtol=1e-14)


def test_second_order_through_gather_grad():
    # d/dx of sum((d/dw gather(w*x, idx, axis=1) . c)) exercises GatherV2Grad's
    # own gradient (a gather).
    w = sg.Variable(np.arange(6.0).reshape(2, 3))
    c = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = sg.reduce_sum(sg.gather(w, [2, 2, 0], axis=1) ** 2)
        g = inner.gradient(y, w)  # dense: 2 * w * count
        z = sg.reduce_sum(g * c)
    h = outer.gradient(z, w)
    count = np.array([1.0, 0.0, 2.0])
    np.testing.assert_allclose(np.asarray(g), 2 * np.arange(6.0).reshape(2, 3) * count)
    np.testing.assert_allclose(np.asarray(h), 2 * c * count)


def test_max_norm_clips_rows():
    table = sg.Variable([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    rows = sg.nn.embedding_lookup(table, [0, 1, 2, 0], max_norm=1.0)
    np.testing.assert_allclose(
        rows.numpy(), [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0], [0.6, 0.8]]
    )
    np.testing.assert_array_equal(table.numpy()[0], [3.0, 4.0])  # table untouched
    single = sg.nn.embedding_lookup([table], [1])
    np.testing.assert_allclose(single.numpy(), [[0.3, 0.4]])
    scalars = sg.nn.embedding_lookup(np.array([-3.0, 0.5]), [[0, 1]], max_norm=1.0)
    np.testing.assert_allclose(scalars.numpy(), [[-1.0, 0.5]])


def test_cost_follows_touched_rows():
    # A 4,000,000 x 64 float64 table (2 GB) that is a read-only broadcast view
    # of one row: any O(table) step (a copy, a dense gradient) would allocate
    # gigabytes, which tracemalloc sees (NumPy reports its allocations).
    row = np.arange(64.0)[None, :]
    row.flags.writeable = False
    table = sg.convert_to_tensor(np.broadcast_to(row, (4_000_000, 64)))
    ids = np.random.default_rng(0).integers(0, 4_000_000, size=1000)
    tracemalloc.start()
    try:
        with sg.GradientTape() as tape:
            tape.watch(table)
            loss = sg.reduce_sum(sg.gather(table, ids) * 2.0)
        g = tape.gradient(loss, table)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(g, sg.IndexedSlices) and g.dense_shape == (4_000_000, 64)
    assert peak < 20 * 2**20, f"peak allocation {peak / 2**20:.0f} MiB"
    np.testing.assert_array_equal(g.indices.numpy(), ids)
    np.testing.assert_array_equal(g.values.numpy(), np.full((1000, 64), 2.0))


# -- sharded tables ("div" layout) -------------------------------------------------


def test_sharded_lookup_matches_tensorflow():
    # TensorFlow 2.21: 10 rows in shards of 4, 3, 3 rows.
    a = sg.Variable(np.arange(8.0).reshape(4, 2))
    b = sg.Variable(100 + np.arange(6.0).reshape(3, 2))
    c = sg.Variable(200 + np.arange(6.0).reshape(3, 2))
    ids = np.array([[0, 9], [4, 3], [7, 7]], dtype=np.int32)
    with sg.GradientTape() as tape:
        y = sg.nn.embedding_lookup([a, b, c], ids)
    np.testing.assert_array_equal(
        y.numpy(),
        [[[0, 1], [204, 205]], [[100, 101], [6, 7]], [[200, 201], [200, 201]]],
    )
    ga, gb, gc = tape.gradient(y, [a, b, c])
    _assert_slices(ga, [0, 3], np.ones((2, 2)), (4, 2))
    _assert_slices(gb, [0], np.ones((1, 2)), (3, 2))
    _assert_slices(gc, [2, 0, 0], np.ones((3, 2)), (3, 2))
    assert ga.indices.dtype == np.int32


@pytest.mark.parametrize("sizes", [(3, 3), (2, 1, 1), (1, 1, 0), (5,)])
def test_sharded_lookup_equals_one_table(rng, sizes):
    n_rows = sum(sizes)
    table = rng.standard_normal((n_rows, 3))
    splits = np.cumsum(sizes)[:-1]
    shards = [sg.Variable(part) for part in np.split(table, splits)]
    ids = rng.integers(0, n_rows, size=(4, 2))
    upstream = rng.standard_normal((4, 2, 3))
    params = shards if len(shards) > 1 else [shards[0]]
    with sg.GradientTape() as tape:
        y = sg.nn.embedding_lookup(params, ids)
    np.testing.assert_array_equal(y.numpy(), table[ids])
    grads = tape.gradient(y, shards, output_gradients=sg.constant(upstream))
    dense = np.zeros_like(table)
    np.add.at(dense, ids.reshape(-1), upstream.reshape(-1, 3))
    for g, part in zip(grads, np.split(dense, splits)):
        assert isinstance(g, sg.IndexedSlices)
        np.testing.assert_allclose(g.to_dense().numpy(), part, rtol=1e-14)


@pytest.mark.parametrize("n_rows,n_shards", [(7, 3), (6, 3), (2, 3), (5, 1)])
def test_mod_sharded_lookup_equals_one_table(rng, n_rows, n_shards):
    # "mod": id i is row i // p of shard i % p, so shard s is table[s::p].
    table = rng.standard_normal((n_rows, 3))
    shards = [sg.Variable(table[s::n_shards]) for s in range(n_shards)]
    ids = rng.integers(0, n_rows, size=(5, 2)).astype(np.int32)
    upstream = rng.standard_normal((5, 2, 3))
    with sg.GradientTape() as tape:
        y = sg.nn.embedding_lookup(shards, ids, partition_strategy="mod")
    np.testing.assert_array_equal(y.numpy(), table[ids])
    grads = tape.gradient(y, shards, output_gradients=sg.constant(upstream))
    dense = np.zeros_like(table)
    np.add.at(dense, ids.reshape(-1), upstream.reshape(-1, 3))
    for s, g in enumerate(grads):
        assert isinstance(g, sg.IndexedSlices)
        assert g.dense_shape == shards[s].shape
        np.testing.assert_allclose(g.to_dense().numpy(), dense[s::n_shards], rtol=1e-14)
        # Each slice names a row of its own shard: local ids i // p.
        own = ids.reshape(-1)[ids.reshape(-1) % n_shards == s]
        np.testing.assert_array_equal(
            np.sort(g.indices.numpy()), np.sort(own // n_shards)
        )


def test_partition_strategy_errors():
    a, b = sg.Variable(np.ones((3, 2))), sg.Variable(np.ones((2, 2)))
    with pytest.raises(InvalidArgumentError, match="'div' or 'mod', got 'hash'"):
        sg.nn.embedding_lookup([a, b], [0], partition_strategy="hash")
    with pytest.raises(InvalidArgumentError, match=r"the 'mod' way, .* \[3, 2\]"):
        sg.nn.embedding_lookup([b, a], [0], partition_strategy="mod")
    with pytest.raises(
        InvalidArgumentError, match=r"^ids\[0\] = 5 is not in \[0, 5\)$"
    ):
        sg.nn.embedding_lookup([a, b], [5], partition_strategy="mod")


def test_sharded_lookup_finite_differences(rng):
    ids = np.array([[4, 0], [2, 2], [3, 1]])
    check_gradients(
        lambda a, b: sg.nn.embedding_lookup([a, b], ids, max_norm=2.0),
        [rng.standard_normal((3, 2)), rng.standard_normal((2, 2))],
        order=2,
    )
    check_gradients(
        lambda a, b: sg.nn.embedding_lookup([a, b], 3),
        [rng.standard_normal((3, 2)), rng.standard_normal((2, 2))],
    )


def test_sharded_lookup_errors():
    a, b = sg.Variable(np.ones((3, 2))), sg.Variable(np.ones((2, 2)))
    with pytest.raises(
        InvalidArgumentError, match=r"^ids\[1\] = 5 is not in \[0, 5\)$"
    ):
        sg.nn.embedding_lookup([a, b], [0, 5])
    with pytest.raises(
        InvalidArgumentError, match=r"shards of \[2, 3\] rows .* \[3, 2\]"
    ):
        sg.nn.embedding_lookup([b, a], [0])
    with pytest.raises(InvalidArgumentError, match="share dtype and row shape"):
        sg.nn.embedding_lookup([a, sg.Variable(np.ones((2, 3)))], [0])
    with pytest.raises(InvalidArgumentError, match="empty list"):
        sg.nn.embedding_lookup([], [0])


# -- errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "indices,match",
    [
        ([1, 7], r"^indices\[1\] = 7 is not in \[0, 4\)$"),
        ([[1, 0], [7, 1]], r"^indices\[1,0\] = 7 is not in \[0, 4\)$"),
        (7, r"^indices = 7 is not in \[0, 4\)$"),
        ([-1], r"^indices\[0\] = -1 is not in \[0, 4\)$"),
    ],
)
def test_gather_out_of_range(indices, match):
    v = _var()
    before = v.numpy()
    with sg.GradientTape() as tape, pytest.raises(InvalidArgumentError, match=match):
        sg.gather(v, indices)
    assert tape.watched_variables() == (v,) or tape.watched_variables() == ()
    np.testing.assert_array_equal(v.numpy(), before)


def test_gather_argument_errors():
    v = _var()
    with pytest.raises(
        InvalidArgumentError, match=r"indices\[1\] = 5 is not in \[0, 3\)"
    ):
        sg.gather(v, [1, 5], axis=1)
    with pytest.raises(InvalidArgumentError, match="indices must be int32 or int64"):
        sg.gather(v, [1.0])
    with pytest.raises(InvalidArgumentError, match="axis 2 is out of range"):
        sg.gather(v, [1], axis=2)
    with pytest.raises(InvalidArgumentError, match="params must be at least 1-D"):
        sg.gather(3.0, [0])
    with pytest.raises(
        InvalidArgumentError, match=r"indices\[1\] = 9 is not in \[0, 4\)"
    ):
        sg.nn.embedding_lookup(v, [1, 9])


@pytest.mark.parametrize(
    "indices,match",
    [
        ([[0, 1], [2]], r"^indices must be a rectangular array of ints, got the "
                        r"ragged \[\[0, 1\], \[2\]\]$"),
        ([1.5, 2.0], r"^indices must be int32 or int64, got dtype float64 "
                     r"\(\[1\.5, 2\.0\]\)$"),
        ("ab", r"^indices must be int32 or int64, got dtype <U2 \('ab'\)$"),
    ],
)
def test_bad_indices_are_named_with_their_value(indices, match):
    params = np.ones((4, 2))
    with pytest.raises(InvalidArgumentError, match=match):
        sg.gather(params, indices)
    with pytest.raises(InvalidArgumentError, match=match.replace("^indices", "^ids")):
        sg.nn.embedding_lookup([params[:2], params[2:]], indices)
    np.testing.assert_array_equal(params, 1.0)


# -- max_norm: TensorFlow's clip_by_norm of each looked-up row ---------------------


@pytest.mark.parametrize("shards", [False, True])
def test_max_norm_like_tensorflow(shards):
    table = sg.Variable([[3.0, 4.0], [0.0, 0.0], [-0.3, 0.4]])
    params = [table] if not shards else [sg.Variable([[3.0, 4.0], [0.0, 0.0]]),
                                         sg.Variable([[-0.3, 0.4]])]
    before = [p.numpy().copy() for p in params]

    def look(max_norm):
        return sg.nn.embedding_lookup(params, [0, 1, 2], max_norm=max_norm).numpy()

    # negative: taken as 0 (clip_by_norm's rule): zeros, signs and all
    negative = look(-1.0)
    np.testing.assert_array_equal(negative, np.zeros((3, 2)))
    assert np.signbit(negative[2, 0])          # -0.3 * 0 / 0.5, as TensorFlow
    np.testing.assert_array_equal(look(0), np.zeros((3, 2)))  # zero row: no NaN
    # infinite: inf / inf, NaN in every row (TensorFlow's formula)
    assert np.isnan(look(np.inf)).all()
    np.testing.assert_allclose(look(1.0), [[0.6, 0.8], [0, 0], [-0.3, 0.4]])
    np.testing.assert_allclose(look(np.float32(1.0)), look(sg.constant(1.0)))
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.numpy(), b)


def test_max_norm_zero_has_a_finite_gradient():
    table = sg.Variable([[3.0, 4.0], [0.0, 0.0]])
    with sg.GradientTape() as tape:
        rows = sg.nn.embedding_lookup(table, [0, 1], max_norm=-2.0)
    g = tape.gradient(rows, table)
    np.testing.assert_array_equal(g.to_dense().numpy(), [[0.0, 0.0], [0.0, 0.0]])


@pytest.mark.parametrize(
    "max_norm,error,match",
    [
        ("a", TypeError, r"^embedding_lookup: max_norm must be a real number, "
                         r"got 'a'$"),
        (True, TypeError, r"max_norm must be a real number, got True"),
        ([1.0, 2.0], InvalidArgumentError,
         r"^embedding_lookup: max_norm must be a scalar, got shape \(2,\)$"),
    ],
)
def test_bad_max_norm(max_norm, error, match):
    v = _var()
    before = v.numpy()
    with pytest.raises(error, match=match):
        sg.nn.embedding_lookup(v, [0], max_norm=max_norm)
    with pytest.raises(error, match=match.replace("embedding_lookup:",
                                                  "embedding_lookup_sparse:")):
        sg.nn.embedding_lookup_sparse(
            v, sg.RaggedTensor.from_row_splits([0], [0, 1]), max_norm=max_norm)
    np.testing.assert_array_equal(v.numpy(), before)


def test_modified_variable_is_detected():
    v = _var()
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(sg.nn.embedding_lookup(v, [1]) ** 2)
    v.assign_add(np.ones((4, 3), np.float32))
    with pytest.raises(FailedPreconditionError, match="modified in place"):
        tape.gradient(y, v)


# -- gather with batch_dims ----------------------------------------------------------


def _batched_gather_reference(params, indices, axis, b):
    out = np.empty(params.shape[:axis] + indices.shape[b:] + params.shape[axis + 1 :])
    for batch in np.ndindex(params.shape[:b]):
        out[batch] = np.take(params[batch], indices[batch], axis=axis - b)
    return out


def test_gather_batch_dims_matches_tensorflow():
    # TensorFlow 2.21: tf.gather(p, idx, axis=2, batch_dims=1) and the gradient
    # of sum(y * w) w.r.t. the variable p (a dense tensor).
    p = sg.Variable(np.arange(24.0).reshape(2, 3, 4))
    w = np.arange(12.0).reshape(2, 3, 2)
    with sg.GradientTape() as tape:
        y = sg.gather(p, [[3, 0], [1, 1]], axis=2, batch_dims=1)
        loss = sg.reduce_sum(y * w)
    np.testing.assert_array_equal(
        y.numpy(),
        [[[3, 0], [7, 4], [11, 8]], [[13, 13], [17, 17], [21, 21]]],
    )
    g = tape.gradient(loss, p)
    assert isinstance(g, sg.Tensor)
    np.testing.assert_array_equal(
        g.numpy(),
        [[[1, 0, 0, 0], [3, 0, 0, 2], [5, 0, 0, 4]],
         [[0, 13, 0, 0], [0, 17, 0, 0], [0, 21, 0, 0]]],
    )


@pytest.mark.parametrize(
    "shape,index_shape,axis,batch_dims",
    [
        ((2, 3, 4), (2, 5), None, 1),
        ((2, 3, 4, 5), (2, 3, 2), 2, 2),
        ((2, 3, 4, 5), (2, 6), 2, 1),
        ((2, 3, 4, 5), (2, 2, 3), -1, 1),
        ((2, 3, 4), (2, 3), 2, -1),
        ((3, 4), (3,), 1, 1),
        ((0, 4), (0, 2), 1, 1),
    ],
)
def test_gather_batch_dims_equals_a_loop_over_the_batch(
    rng, shape, index_shape, axis, batch_dims
):
    params = rng.standard_normal(shape)
    b = batch_dims % len(index_shape) if batch_dims < 0 else batch_dims
    a = b if axis is None else axis % len(shape)
    indices = rng.integers(0, shape[a], size=index_shape).astype(np.int32)
    got = sg.gather(params, indices, axis=axis, batch_dims=batch_dims)
    np.testing.assert_array_equal(
        got.numpy(), _batched_gather_reference(params, indices, a, b)
    )


def test_gather_batch_dims_finite_differences(rng):
    indices = np.array([[[2, 0], [1, 1]], [[0, 0], [2, 1]]])
    check_gradients(
        lambda p: sg.gather(p, indices, axis=2, batch_dims=1),
        [rng.standard_normal((2, 3, 3, 2))],
        order=2,
    )


def test_gather_batch_dims_errors():
    p = np.zeros((2, 3, 4))
    with pytest.raises(
        InvalidArgumentError, match=r"must be less than or equal to axis"
    ):
        sg.gather(p, [[0], [1]], axis=0, batch_dims=1)
    with pytest.raises(InvalidArgumentError, match=r"params.shape\[:1\] = \(2,\) and "
                       r"indices.shape\[:1\] = \(3,\) must be equal"):
        sg.gather(p, [[1], [2], [0]], batch_dims=1)
    with pytest.raises(InvalidArgumentError, match="batch_dims 3 is out of range"):
        sg.gather(p, [[1], [2]], axis=2, batch_dims=3)
    with pytest.raises(InvalidArgumentError, match="batch_dims must be an int"):
        sg.gather(p, [[1], [2]], batch_dims=1.5)
    with pytest.raises(
        InvalidArgumentError, match=r"^indices\[1,0\] = 4 is not in \[0, 4\)$"
    ):
        sg.gather(p, [[1], [4]], axis=2, batch_dims=1)


def test_a_caller_array_is_read_in_place_not_copied():
    # A writeable 4,000,000 x 16 float32 table (256 MB, zero pages that are
    # never touched): gathering 64 rows must cost the rows, not a copy of the
    # table (which it did: 40 ms and 256 MB per call).
    import scipy.sparse as sp

    table = np.zeros((4_000_000, 16), np.float32)
    ids = np.random.default_rng(1).integers(0, 4_000_000, size=64)
    table[ids] = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    x = sp.csr_array((np.arange(1.0, 17.0, dtype=np.float32), ids[:16] % 4_000_000,
                      np.arange(0, 17, 2)), shape=(8, 4_000_000))
    tracemalloc.start()
    try:
        rows = sg.gather(table, ids)
        looked_up = sg.nn.embedding_lookup(table, ids.reshape(8, 8))
        sharded = sg.nn.embedding_lookup([table[:2_000_000], table[2_000_000:]], ids)
        product = sg.sparse.sparse_dense_matmul(x, table)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, f"peak allocation {peak / 2**20:.1f} MiB"
    expected = table[ids].copy()
    np.testing.assert_array_equal(rows.numpy(), expected)
    np.testing.assert_array_equal(looked_up.numpy(), expected.reshape(8, 8, 16))
    np.testing.assert_array_equal(sharded.numpy(), expected)
    np.testing.assert_array_equal(product.numpy(), x @ table)
    # The caller's array stays theirs: writeable, and later writes do not
    # reach the results.
    assert table.flags.writeable
    table[ids] = -1.0
    np.testing.assert_array_equal(rows.numpy(), expected)
