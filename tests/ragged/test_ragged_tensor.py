"""RaggedTensor: round trips through its encodings (row lengths, value row
ids, row splits, scipy, to_tensor against a NumPy padding loop), row
selection, arithmetic, conversions, errors, and gradients w.r.t. the values
(finite differences and GradientTape)."""

import hypothesis.strategies as st
import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.testing import check_gradients

CHECKED_OPS = ("RaggedToDense",)

RT = sg.RaggedTensor

rows_strategy = st.lists(st.lists(st.integers(-1000, 1000), max_size=6), max_size=8)


def _make(rows, dtype=np.float64, splits_dtype=np.int64):
    values = np.array([v for r in rows for v in r], dtype)
    lengths = np.array([len(r) for r in rows], splits_dtype)
    return RT.from_row_lengths(values, lengths)


def _pad(rows, default, n_rows=None, width=None):
    """The NumPy padding loop to_tensor must match."""
    n_rows = len(rows) if n_rows is None else n_rows
    natural = max((len(r) for r in rows), default=0)
    width = natural if width is None else width
    out = np.full((n_rows, width), default, np.float64)
    for i, row in enumerate(rows[:n_rows]):
        for j, v in enumerate(row[:width]):
            out[i, j] = v
    return out


@settings(max_examples=60, deadline=None)
@given(rows=rows_strategy, splits_dtype=st.sampled_from([np.int32, np.int64]))
def test_encodings_round_trip(rows, splits_dtype):
    rt = _make(rows, splits_dtype=splits_dtype)
    assert rt.to_list() == rows
    assert rt.row_splits.dtype == splits_dtype
    lengths = rt.row_lengths()
    np.testing.assert_array_equal(lengths, [len(r) for r in rows])
    ids = rt.value_rowids()
    np.testing.assert_array_equal(ids, np.repeat(np.arange(len(rows)), lengths))
    assert ids.dtype == splits_dtype
    v = rt.values
    assert RT.from_row_splits(v, rt.row_splits).to_list() == rows
    assert RT.from_value_rowids(v, ids, nrows=len(rows)).to_list() == rows
    assert (
        RT.from_value_rowids(v, ids, nrows=len(rows)).row_splits.dtype == splits_dtype
    )
    assert RT.from_row_lengths(v, lengths).to_list() == rows
    np.testing.assert_array_equal(rt.row_starts(), rt.row_splits[:-1])
    np.testing.assert_array_equal(rt.row_limits(), rt.row_splits[1:])
    assert rt.nrows() == len(rows) == len(rt)
    back = RT.from_scipy(rt.to_scipy())
    assert back.to_list() == rows
    np.testing.assert_array_equal(back.row_splits, rt.row_splits)


@settings(max_examples=60, deadline=None)
@given(
    rows=rows_strategy,
    default=st.integers(-3, 3),
    n_rows=st.none() | st.integers(0, 10),
    width=st.none() | st.integers(0, 8),
)
def test_to_tensor_matches_a_padding_loop(rows, default, n_rows, width):
    rt = _make(rows)
    shape = None if n_rows is None and width is None else (n_rows, width)
    dense = rt.to_tensor(default_value=default, shape=shape).numpy()
    np.testing.assert_array_equal(dense, _pad(rows, default, n_rows, width))


@settings(max_examples=40, deadline=None)
@given(rows=rows_strategy)
def test_scipy_round_trip(rows):
    values = np.array([v for r in rows for v in r], np.float32)
    n_cols = max((len(r) for r in rows), default=0) + 2
    m = scipy.sparse.csr_matrix(
        (
            values,
            np.concatenate([np.arange(len(r)) for r in rows] + [[]]).astype(np.int32),
            np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int32),
        ),
        shape=(len(rows), n_cols),
    )
    rt = RT.from_scipy(m)
    assert rt.to_list() == [[np.float32(v) for v in r] for r in rows]
    assert rt.row_splits.dtype == np.int32 and rt.dtype == np.float32
    back = rt.to_scipy(shape=m.shape)
    assert (back != m).nnz == 0
    np.testing.assert_array_equal(back.indptr, m.indptr)


def test_from_scipy_values_and_order():
    # column order as stored, duplicates kept, explicit zeros kept
    m = scipy.sparse.csr_matrix(
        (
            np.array([5.0, 0.0, 7.0, 7.0]),
            np.array([2, 0, 1, 1]),
            np.array([0, 2, 2, 4]),
        ),
        shape=(3, 3),
    )
    assert RT.from_scipy(m).to_list() == [[5.0, 0.0], [], [7.0, 7.0]]
    assert RT.from_scipy(m, values="indices").to_list() == [[2, 0], [], [1, 1]]
    coo = scipy.sparse.coo_matrix(([1.0, 2.0], ([1, 1], [0, 3])), shape=(2, 4))
    assert RT.from_scipy(coo).to_list() == [[], [1.0, 2.0]]
    with pytest.raises(InvalidArgumentError, match="'data' or 'indices'"):
        RT.from_scipy(m, values="rows")
    with pytest.raises(TypeError, match=r"scipy\.sparse"):
        RT.from_scipy(np.eye(2))


def test_structure_and_repr():
    rt = sg.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
    assert repr(rt) == "<RaggedTensor [[3, 1, 4, 1], [], [5, 9, 2], [6], []]>"
    assert rt.dtype == np.int32 and rt.row_splits.dtype == np.int64
    assert rt.shape == (5, None) and rt.ragged_rank == 1 and rt.ndim == 2
    assert rt.flat_values is rt.values
    assert rt.nested_row_splits[0] is rt.row_splits
    rows = rt.numpy()
    assert rows.dtype == object and rows.shape == (5,)
    np.testing.assert_array_equal(rows[2], [5, 9, 2])
    assert not rt.row_splits.flags.writeable
    with pytest.raises(ValueError, match="constructor is private"):
        RT(rt.values, rt.row_splits)
    with pytest.raises(TypeError, match="no dense NumPy form"):
        np.asarray(rt)
    assert sg.ragged.is_ragged(rt) and not sg.ragged.is_ragged(rt.values)


def test_inner_dims():
    # TensorFlow's rule: without ragged_rank or inner_shape every list level
    # above the scalars is ragged; ragged_rank=1 keeps the inner one uniform
    assert sg.ragged.constant([[[1, 2]], [], [[3, 4], [5, 6]]]).shape == (
        3, None, None)
    rt = sg.ragged.constant([[[1, 2]], [], [[3, 4], [5, 6]]], ragged_rank=1)
    assert rt.shape == (3, None, 2)
    assert sg.ragged.constant([[[1, 2]], [], [[3, 4], [5, 6]]],
                              inner_shape=(2,)).shape == (3, None, 2)
    dense = rt.to_tensor().numpy()
    assert dense.shape == (3, 2, 2)
    np.testing.assert_array_equal(dense[2], [[3, 4], [5, 6]])
    np.testing.assert_array_equal(dense[0, 1], [0, 0])
    with pytest.raises(ValueError, match="inner values have inconsistent shape"):
        sg.ragged.constant([[[1, 2]], [[3]]], ragged_rank=1)
    with pytest.raises(ValueError, match="requires scalar value depth greater"):
        sg.ragged.constant([[1]], ragged_rank=2)
    with pytest.raises(InvalidArgumentError, match="needs 1-D values"):
        rt.to_scipy()


def test_constant_dtypes():
    assert sg.ragged.constant([[1.0, 2], [3]]).dtype == np.float32
    assert sg.ragged.constant([[1, 2], [3]], dtype=np.float64).dtype == np.float64
    assert sg.ragged.constant([[]]).dtype == np.float32
    assert sg.ragged.constant([[2**40]]).dtype == np.int64
    assert (
        sg.ragged.constant([[1]], row_splits_dtype=np.int32).row_splits.dtype
        == np.int32
    )
    # a list less than 2 deep is a dense Tensor, as in TensorFlow
    dense = sg.ragged.constant([1, 2])
    assert not sg.ragged.is_ragged(dense)
    np.testing.assert_array_equal(dense.numpy(), np.array([1, 2], np.int32))


@pytest.mark.parametrize(
    "key, want",
    [
        (1, [1.0, 4.0]),
        (-1, [5.0, 9.0]),
        (0, []),
    ],
)
def test_getitem_row(key, want):
    rt = RT.from_row_lengths([1.0, 4.0, 1.0, 5.0, 9.0], [0, 2, 1, 2])
    assert rt[key].numpy().tolist() == want


@settings(max_examples=60, deadline=None)
@given(
    rows=rows_strategy,
    start=st.none() | st.integers(-10, 10),
    stop=st.none() | st.integers(-10, 10),
    step=st.none() | st.integers(-3, 3).filter(lambda s: s != 0),
)
def test_getitem_slices_like_a_list(rows, start, stop, step):
    rt = _make(rows)
    sub = rt[start:stop:step]
    assert isinstance(sub, RT)
    assert sub.to_list() == rows[start:stop:step]
    assert sub.row_splits.dtype == rt.row_splits.dtype


def test_getitem_errors():
    rt = sg.ragged.constant([[1], [2, 3]])
    with pytest.raises(IndexError, match="Row key 2 out of bounds"):
        rt[2]
    with pytest.raises(IndexError):
        rt[-3]
    with pytest.raises(sg.errors.InvalidArgumentError, match="Row key -3 out of"):
        rt[-3]
    with pytest.raises(TypeError, match="are valid indices, got 'a'"):
        rt["a"]


def test_arithmetic():
    a = sg.ragged.constant([[1.0, 2.0], [], [3.0]])
    b = sg.ragged.constant([[10.0, 20.0], [], [30.0]])
    assert (a + 1).to_list() == [[2.0, 3.0], [], [4.0]]
    assert (1 - a).to_list() == [[0.0, -1.0], [], [-2.0]]
    assert (a * b).to_list() == [[10.0, 40.0], [], [90.0]]
    assert (b / a).to_list() == [[10.0, 10.0], [], [10.0]]
    assert (a**2).to_list() == [[1.0, 4.0], [], [9.0]]
    assert (2**a).to_list() == [[2.0, 4.0], [], [8.0]]
    assert (-a).to_list() == [[-1.0, -2.0], [], [-3.0]]
    assert abs(-a).to_list() == a.to_list()
    assert (a + sg.constant(np.float32(1.0))).dtype == np.float32
    assert (a + np.float32(0.5)).row_splits is a.row_splits
    c = sg.ragged.constant([[1.0], [2.0, 3.0], []])
    with pytest.raises(InvalidArgumentError, match="different row splits"):
        a + c
    with pytest.raises(InvalidArgumentError, match="do not broadcast"):
        a + np.ones(3, np.float32)      # rows of 2, 0 and 1 values against 3


def test_with_values_and_splits_dtype():
    rt = sg.ragged.constant([[1, 2], [3]])
    assert rt.with_values([7.0, 8.0, 9.0]).to_list() == [[7.0, 8.0], [9.0]]
    with pytest.raises(InvalidArgumentError, match="must have 3 rows"):
        rt.with_values([1.0])
    r32 = rt.with_row_splits_dtype(np.int32)
    assert r32.row_splits.dtype == np.int32 and r32.to_list() == rt.to_list()
    assert rt.with_row_splits_dtype("int64") is rt
    with pytest.raises(InvalidArgumentError, match="row_splits_dtype"):
        rt.with_row_splits_dtype(np.float32)


def test_map_flat_values():
    rt = sg.ragged.constant([[1.0, 2.0], [3.0]])
    out = sg.ragged.map_flat_values(sg.multiply, rt, rt)
    assert out.to_list() == [[1.0, 4.0], [9.0]]
    with pytest.raises(ValueError, match="no argument is a RaggedTensor"):
        sg.ragged.map_flat_values(sg.square, 1.0)
    with pytest.raises(InvalidArgumentError):
        sg.ragged.map_flat_values(lambda v: v[:1], rt)


def test_factories_copy_their_inputs():
    splits = np.array([0, 1, 3])
    values = np.array([1.0, 2.0, 3.0])
    rt = RT.from_row_splits(values, splits)
    splits[1] = 3
    values[0] = 9.0
    assert rt.to_list() == [[1.0], [2.0, 3.0]]


def test_validate_false_still_keeps_operations_in_bounds():
    with pytest.raises(InvalidArgumentError, match="monotonic"):
        RT.from_row_splits([1.0, 2.0], [0, 2, 1], validate=False)
    with pytest.raises(InvalidArgumentError, match="_from_row_partition"):
        RT.from_row_splits([1.0, 2.0], [0, 3], validate=False)
    rt = RT.from_row_splits([1.0, 2.0, 3.0], [0, 1, 2], validate=False)
    assert rt.to_tensor().numpy().tolist() == [[1.0], [2.0]]
    assert (rt * 2).to_list() == [[2.0], [4.0]]


# -- gradients ------------------------------------------------------------------------


def test_to_tensor_gradient_by_finite_differences():
    splits = np.array([0, 2, 2, 5, 6])

    def f(v):
        return RT.from_row_splits(v, splits).to_tensor(default_value=0.5)

    check_gradients(f, [np.linspace(-1, 1, 6)], order=2)

    def g(v):
        return RT.from_row_splits(v, splits).to_tensor(shape=(3, 2))  # truncates

    check_gradients(g, [np.linspace(-1, 1, 6)])

    def h(v):
        return RT.from_row_splits(v, splits).to_tensor()

    check_gradients(h, [np.arange(12.0).reshape(6, 2) / 7])


def test_gradient_through_arithmetic_and_rows():
    v = sg.Variable([1.0, 2.0, 3.0, 4.0])
    with sg.GradientTape() as tape:
        rt = RT.from_row_lengths(v, [1, 0, 3])
        y = (rt * rt + 1.0) / 2.0
        total = (
            sg.reduce_sum(y.to_tensor())
            + sg.reduce_sum(rt[2])
            + sg.reduce_sum(rt[::2].values)
        )
    g = tape.gradient(total, v)
    g = g.to_dense() if isinstance(g, sg.IndexedSlices) else g
    # d/dv of (v**2 + 1) / 2 is v; rt[2] holds values 1..3; rt[::2] all of them
    np.testing.assert_allclose(
        np.asarray(g), [1.0 + 0 + 1, 2.0 + 1 + 1, 3.0 + 1 + 1, 4.0 + 1 + 1]
    )


def test_check_gradients_through_getitem_and_map():
    splits = np.array([0, 3, 3, 5])

    def f(v):
        rt = RT.from_row_splits(v, splits)
        squared = sg.ragged.map_flat_values(sg.square, rt)
        return [squared[::-1].values, (rt - rt * 3.0)[0], abs(-rt).to_tensor()]

    check_gradients(f, [np.array([0.5, -1.0, 2.0, 0.25, 3.0])])


def test_tensor_and_variable_on_the_left_defer_to_ragged():
    rt = sg.ragged.constant([[1.0, 2.0], [], [3.0]], dtype=np.float64)
    assert (sg.constant(2.0) * rt).to_list() == [[2.0, 4.0], [], [6.0]]
    assert (sg.constant(1.0) - rt).to_list() == [[0.0, -1.0], [], [-2.0]]
    assert (sg.constant(6.0) / rt).to_list() == [[6.0, 3.0], [], [2.0]]
    assert (sg.constant(2.0) ** rt).to_list() == [[2.0, 4.0], [], [8.0]]
    v = sg.Variable(2.0)
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum((v * rt + v).values)
    assert float(tape.gradient(loss, v)) == 9.0


def test_comparisons_give_bool_ragged_tensors():
    rt = sg.ragged.constant([[1.0, 2.0], [], [3.0]])
    other = sg.ragged.constant([[0.0, 5.0], [], [3.0]])
    assert (rt > 1.5).to_list() == [[False, True], [], [True]]
    assert (rt <= 2).to_list() == [[True, True], [], [False]]
    assert (2 < rt).to_list() == [[False, False], [], [True]]  # noqa: SIM300
    assert (np.float32(2) >= rt).to_list() == [[True, True], [], [False]]
    assert (sg.constant(np.float32(2)) < rt).to_list() == [[False, False], [], [True]]
    assert (rt < other).to_list() == [[False, True], [], [False]]
    assert (rt >= other).dtype == np.bool_
    assert rt == rt and rt != other  # identity, as for Tensor
    with pytest.raises(sg.errors.InvalidArgumentError):
        rt < sg.ragged.constant([[1.0], [2.0, 3.0], []])  # noqa: B015


def test_assert_ragged_equal():
    from sparsegrad.testing import assert_ragged_equal

    rt = sg.ragged.constant([[1.0, 2.0], [], [np.nan]])
    assert_ragged_equal(rt, [[1.0, 2.0], [], [np.nan]])
    assert_ragged_equal(rt, sg.ragged.constant([[1.0, 2.0], [], [np.nan]]))
    assert_ragged_equal(rt, [[1.0, 2.0 + 1e-9], [], [np.nan]], rtol=1e-6)
    with pytest.raises(AssertionError, match="row lengths differ"):
        assert_ragged_equal(rt, [[1.0], [2.0], [np.nan]])
    with pytest.raises(AssertionError):
        assert_ragged_equal(rt, [[1.0, 2.5], [], [np.nan]])
    with pytest.raises(AssertionError, match="expected a RaggedTensor"):
        assert_ragged_equal(np.ones(3), [[1.0]])
