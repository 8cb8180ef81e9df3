"""Elementwise ops of RaggedTensors (sparsegrad/ragged/elementwise.py): values
against NumPy references, gradients by finite differences at ragged rank 1
and 2 (w.r.t. the flat values and w.r.t. a dense operand that broadcast),
the partition kept, and the errors.  TensorFlow's own cases are in
tests/ragged/tf_port/cases_elementwise.py."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.testing import check_gradients

RT = sg.RaggedTensor
SPLITS1 = np.array([0, 3, 3, 5])                     # rows of 3, 0 and 2 values
NESTED = (np.array([0, 2, 2, 5]), np.array([0, 2, 3, 3, 4, 6]))   # ragged rank 2


def _rng(seed=0):
    return np.random.default_rng(seed)


def _rows(flat, splits):
    """The rows of `flat` under `splits` (NumPy, for references)."""
    return [flat[a:b] for a, b in zip(splits[:-1], splits[1:])]


# -- values ---------------------------------------------------------------------


def test_same_partition_keeps_the_splits_objects():
    x = RT.from_row_splits(np.arange(5.0), SPLITS1)
    y = x * 2.0
    z = sg.add(x, y)
    assert z.row_splits is x.row_splits
    np.testing.assert_array_equal(z.flat_values.numpy(), np.arange(5.0) * 3)


def test_dense_column_gathered_by_row():
    flat = _rng().normal(size=5)
    col = np.array([[2.0], [3.0], [4.0]])
    z = sg.multiply(RT.from_row_splits(flat, SPLITS1), col)
    want = flat * np.repeat(col[:, 0], np.diff(SPLITS1))
    np.testing.assert_allclose(z.flat_values.numpy(), want)
    np.testing.assert_array_equal(z.row_splits, SPLITS1)
    assert z.flat_values.shape == (5,)          # no padded copy


def test_dense_of_higher_rank_adds_outer_dimensions():
    x = RT.from_row_splits(np.arange(5.0), SPLITS1)
    z = x + np.array([[[1.0]], [[2.0]]])        # (2, 1, 1) against (3, None)
    assert z.shape == (2, 3, None)
    assert z.to_list() == [[[1.0, 2.0, 3.0], [], [4.0, 5.0]],
                           [[2.0, 3.0, 4.0], [], [5.0, 6.0]]]


def test_ragged_rank_1_against_rank_2():
    x = sg.ragged.constant([[[1, 2], [3, 4]], [[5]]], ragged_rank=2)
    y = sg.ragged.constant([[[10], [20]], [[30]]], ragged_rank=1)
    assert (x + y).to_list() == [[[11, 12], [23, 24]], [[35]]]
    assert (y - x).to_list() == [[[9, 8], [17, 16]], [[25]]]


def test_uniform_rows_against_a_dense_row():
    # TensorFlow 2.21 refuses this one ("Last row partition does not match
    # flat_values"); the shapes (2, None) with rows of 2 and (2,) broadcast
    x = sg.ragged.constant([[1.0, 2.0], [3.0, 4.0]])
    assert (x + np.array([10.0, 20.0], np.float32)).to_list() == [
        [11.0, 22.0], [13.0, 24.0]]


def test_rank_1_operand_inside_rank_2_rows():
    # rows [[7, 8], [9]] repeat for each outer row (TensorFlow 2.21 fails here)
    x = sg.ragged.constant([[[1, 2], [3]], [[4, 5], [6]]], ragged_rank=2)
    y = sg.ragged.constant([[7, 8], [9]])
    assert (x + y).to_list() == [[[8, 10], [12]], [[11, 13], [15]]]


def test_inner_dimensions_and_int32_splits():
    flat = np.arange(12.0).reshape(6, 2)
    x = RT.from_row_splits(flat, np.array([0, 1, 1, 6], np.int32))
    z = x * np.array([[[1.0, 10.0]], [[2.0, 20.0]], [[3.0, 30.0]]])
    assert z.row_splits.dtype == np.int32
    want = flat * np.array([[1.0, 10.0]] + [[3.0, 30.0]] * 5)
    np.testing.assert_allclose(z.flat_values.numpy(), want)


def test_unary_ops_map_the_flat_values():
    flat = np.array([0.5, 1.5, 2.0, 4.0, 9.0, 0.25])
    x = RT.from_nested_row_splits(flat, NESTED)
    for op, ref in [(sg.sqrt, np.sqrt), (sg.exp, np.exp), (sg.floor, np.floor),
                    (sg.reciprocal, np.reciprocal), (sg.math.square, np.square)]:
        z = op(x)
        assert z.ragged_rank == 2
        np.testing.assert_allclose(z.flat_values.numpy(), ref(flat), rtol=1e-15)
    assert sg.cast(x, "int32").flat_values.dtype == np.int32
    assert sg.zeros_like(x).to_list() == [[[0, 0], [0]], [], [[], [0], [0, 0]]]
    assert sg.is_nan(x).flat_values.numpy().tolist() == [False] * 6


def test_where_add_n_and_coordinates():
    x = sg.ragged.constant([[1.0, 2.0], [3.0]])
    c = sg.ragged.constant([[True, False], [False]])
    assert sg.where(c, x, 0.0).to_list() == [[1.0, 0.0], [0.0]]
    assert sg.where(c, 10.0, x).to_list() == [[10.0, 2.0], [3.0]]
    assert sg.where(c).numpy().tolist() == [[0, 0]]
    assert sg.add_n([x, x, x]).to_list() == [[3.0, 6.0], [9.0]]


def test_operators():
    a = sg.ragged.constant([[True, True], [False]])
    b = sg.ragged.constant([[True, False], [False]])
    assert (~a).to_list() == [[False, False], [True]]
    assert (a & b).to_list() == [[True, False], [False]]
    assert (a | b).to_list() == [[True, True], [False]]
    assert (a ^ True).to_list() == [[False, False], [True]]
    x = sg.ragged.constant([[7.0, -7.0], [5.0]])
    assert (x // 2.0).to_list() == [[3.0, -4.0], [2.0]]
    assert (x % 3.0).to_list() == [[1.0, 2.0], [2.0]]
    assert (sg.constant(np.float32(1.0)) - x).to_list() == [[-6.0, 8.0], [-4.0]]
    with pytest.raises(TypeError, match="may not be used as a boolean"):
        bool(a)


def test_a_large_column_broadcast_matches_numpy():
    rng = _rng(1)
    lengths = rng.integers(0, 40, size=20_000)
    splits = np.concatenate([[0], np.cumsum(lengths)])
    flat = rng.normal(size=splits[-1]).astype(np.float32)
    col = rng.normal(size=(20_000, 1)).astype(np.float32)
    z = RT.from_row_splits(flat, splits) + col
    np.testing.assert_array_equal(z.flat_values.numpy(),
                                  flat + np.repeat(col[:, 0], lengths))


# -- gradients ----------------------------------------------------------------------


def _ragged1(flat):
    return RT.from_row_splits(flat, SPLITS1)


def _ragged2(flat):
    return RT.from_nested_row_splits(flat, NESTED)


@pytest.mark.parametrize("op", [sg.add, sg.subtract, sg.multiply, sg.divide,
                                sg.maximum, sg.squared_difference, sg.pow,
                                sg.floormod, sg.divide_no_nan])
def test_gradient_rank1_same_rows_and_dense_column(op):
    rng = _rng(2)
    x, y = rng.uniform(0.5, 2.0, 5), rng.uniform(0.5, 2.0, 5)
    col = rng.uniform(0.5, 2.0, (3, 1))
    check_gradients(lambda a, b: op(_ragged1(a), _ragged1(b)).flat_values, [x, y])
    check_gradients(lambda a, c: op(_ragged1(a), c).flat_values, [x, col])
    check_gradients(lambda a, c: op(c, _ragged1(a)).flat_values, [x, col])


@pytest.mark.parametrize("op", [sg.multiply, sg.divide, sg.minimum, sg.pow])
def test_gradient_rank2_dense_and_ragged_operands(op):
    rng = _rng(3)
    x = rng.uniform(0.5, 2.0, 6)
    cube = rng.uniform(0.5, 2.0, (3, 1, 1))         # one value per outer row
    inner = rng.uniform(0.5, 2.0, 5)                 # one per inner row
    check_gradients(lambda a, c: op(_ragged2(a), c).flat_values, [x, cube])
    check_gradients(
        lambda a, b: op(_ragged2(a), RT.from_row_splits(
            sg.reshape(b, (5, 1)), NESTED[0])).flat_values, [x, inner])


def test_gradient_unary_where_and_add_n():
    rng = _rng(4)
    x, y = rng.uniform(0.5, 2.0, 6), rng.uniform(0.5, 2.0, 6)
    cond = _ragged2(np.array([True, False, True, True, False, False]))
    for op in (sg.exp, sg.sqrt, sg.sigmoid, sg.tanh, sg.reciprocal, sg.expm1):
        check_gradients(lambda a, op=op: op(_ragged2(a)).flat_values, [x])
    check_gradients(lambda a, b: sg.where(cond, _ragged2(a), _ragged2(b)).flat_values,
                    [x, y])
    check_gradients(lambda a, b: sg.add_n([_ragged2(a), _ragged2(b)]).flat_values,
                    [x, y])
    check_gradients(lambda a: (-_ragged2(a) * 3.0 + 1.0).flat_values, [x], order=2)


def test_gradient_through_the_tape_sums_back_the_column():
    flat = sg.constant(np.arange(5.0))
    col = sg.constant(np.array([[1.0], [2.0], [3.0]]))
    with sg.GradientTape() as tape:
        tape.watch([flat, col])
        loss = sg.reduce_sum((_ragged1(flat) * col).flat_values)
    gflat, gcol = tape.gradient(loss, [flat, col])
    np.testing.assert_array_equal(gflat.numpy(), [1.0, 1.0, 1.0, 3.0, 3.0])
    np.testing.assert_array_equal(np.asarray(sg.convert_to_tensor(gcol)),
                                  [[3.0], [0.0], [7.0]])


# -- errors ---------------------------------------------------------------------


def test_errors_change_nothing():
    flat = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    x = _ragged1(flat)
    other = sg.ragged.constant([[1.0, 2.0], [3.0], [4.0, 5.0]])
    with pytest.raises(InvalidArgumentError, match="different row splits"):
        sg.add(x, other)
    with pytest.raises(InvalidArgumentError, match="do not broadcast"):
        x + np.ones((3, 2))
    with pytest.raises(InvalidArgumentError, match="different row splits"):
        sg.add_n([x, other])
    int32 = x.with_row_splits_dtype("int32")
    with pytest.raises(ValueError, match="mismatched row_splits dtypes"):
        x + int32
    with pytest.raises(ValueError, match="both None or both non-None"):
        sg.where(x > 1.0, x)
    with pytest.raises(InvalidArgumentError, match="must be bool"):
        sg.logical_and(x, x)
    with pytest.raises(InvalidArgumentError, match="Integer division by zero"):
        sg.ragged.constant([[1, 2], [3]]) // 0
    with pytest.raises(InvalidArgumentError, match="one dtype"):
        x + sg.constant(np.ones((3, 1), np.float32))
    np.testing.assert_array_equal(x.flat_values.numpy(), flat)
    np.testing.assert_array_equal(x.row_splits, SPLITS1)
