"""RaggedTensors of ragged_rank 2 and above: structure, conversions, checks.

The expected values are written out by hand (several of them are the cases of
TensorFlow's ragged_tensor_test.py, ragged_factory_ops_test.py and
ragged_from_tensor_op_test.py, as literals)."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.testing import assert_ragged_equal

RT = sg.RaggedTensor

# TensorFlow's testFromNestedRowSplits / testFromNestedValueRowIds structure,
# with ints for its strings 'a'..'g'
NESTED_LIST = [[[0, 1], []], [[2, 3, 4]], [], [[5], [6]]]
NESTED_SPLITS = ([0, 2, 3, 3, 5], [0, 2, 2, 5, 6, 7])


def _splits(rt):
    return [s.tolist() for s in rt.nested_row_splits]


# -- factories -----------------------------------------------------------------


def test_from_nested_row_splits():
    rt = RT.from_nested_row_splits(np.arange(7), NESTED_SPLITS)
    assert rt.to_list() == NESTED_LIST
    assert rt.ragged_rank == 2 and rt.ndim == 3 and rt.shape == (4, None, None)
    assert _splits(rt) == [list(s) for s in NESTED_SPLITS]
    assert rt.values.to_list() == [[0, 1], [], [2, 3, 4], [5], [6]]
    np.testing.assert_array_equal(rt.flat_values.numpy(), np.arange(7))
    assert rt.dtype == np.int64 and rt.row_splits_dtype == np.int64
    lengths = [x.tolist() for x in rt.nested_row_lengths()]
    assert lengths == [[2, 1, 0, 2], [2, 0, 3, 1, 1]]
    np.testing.assert_array_equal(rt.row_lengths(), [2, 1, 0, 2])
    np.testing.assert_array_equal(rt.value_rowids(), [0, 0, 1, 3, 3])
    np.testing.assert_array_equal(rt.values.value_rowids(), [0, 0, 2, 2, 2, 3, 4])
    assert rt.nrows() == 4 and rt.values.nrows() == 5 and len(rt) == 4


def test_from_nested_row_lengths_and_value_rowids():
    by_lengths = RT.from_nested_row_lengths(np.arange(7),
                                            ([2, 1, 0, 2], [2, 0, 3, 1, 1]))
    assert by_lengths.to_list() == NESTED_LIST
    by_ids = RT.from_nested_value_rowids(
        np.arange(7), ([0, 0, 1, 3, 3], [0, 0, 2, 2, 2, 3, 4]))
    assert by_ids.to_list() == NESTED_LIST
    with_nrows = RT.from_nested_value_rowids(
        np.arange(7), ([0, 0, 1, 3, 3], [0, 0, 2, 2, 2, 3, 4]), nested_nrows=[6, 5])
    assert with_nrows.to_list() == NESTED_LIST + [[], []]


def test_from_row_splits_of_a_ragged_tensor():
    inner = RT.from_row_splits(np.arange(7), NESTED_SPLITS[1])
    rt = RT.from_row_splits(inner, NESTED_SPLITS[0])
    assert rt.to_list() == NESTED_LIST
    assert RT.from_row_lengths(inner, [2, 1, 0, 2]).to_list() == NESTED_LIST
    assert RT.from_value_rowids(inner, [0, 0, 1, 3, 3]).to_list() == NESTED_LIST
    # three levels
    rt3 = RT.from_row_splits(rt, [0, 1, 4])
    assert rt3.ragged_rank == 3 and rt3.shape == (2, None, None, None)
    assert rt3.to_list() == [[NESTED_LIST[0]], NESTED_LIST[1:]]
    # a Python list takes the dtype of the values' splits (TensorFlow's hint)
    inner32 = inner.with_row_splits_dtype("int32")
    rt32 = RT.from_row_splits(inner32, [0, 2, 3, 3, 5])
    assert [s.dtype for s in rt32.nested_row_splits] == [np.int32, np.int32]


def test_empty_nested_lists():
    assert RT.from_nested_row_splits([1, 2], []).numpy().tolist() == [1, 2]
    rt = RT.from_nested_row_splits(np.zeros(0), ([0], [0]))
    assert rt.to_list() == [] and rt.shape == (0, None, None)
    assert rt.to_tensor().shape == (0, 0, 0)


# -- sg.ragged.constant -----------------------------------------------------------


@pytest.mark.parametrize(
    "pylist, kwargs, ragged_rank, shape, splits",
    [
        # ragged_factory_ops_test.testRaggedConst
        ([[[1, 2], [3]], [[4, 5, 6]]], {}, 2, (2, None, None),
         [[0, 2, 3], [0, 2, 3, 6]]),
        ([[[1, 2], [3, 4]], [], [[5, 6]]], dict(inner_shape=(2,)), 1,
         (3, None, 2), [[0, 2, 2, 3]]),
        ([[[1, 2], [3, 4]], [], [[5, 6]]], dict(ragged_rank=1), 1,
         (3, None, 2), [[0, 2, 2, 3]]),
        ([[[1, 2], [3, 4]], [], [[5, 6]]], dict(ragged_rank=1, inner_shape=(2,)),
         1, (3, None, 2), [[0, 2, 2, 3]]),
        ([[[[1], [2]], [[3], [4]]], [], [[[5], [6]]]], dict(ragged_rank=1), 1,
         (3, None, 2, 1), [[0, 2, 2, 3]]),
        ([[[[1], [2]], [[3], [4]]], [], [[[5], [6]]]], {}, 3,
         (3, None, None, None), [[0, 2, 2, 3], [0, 2, 4, 6], [0, 1, 2, 3, 4, 5, 6]]),
        ([[[[1], [2]], [[3], [4]]], [], [[[5], [6]]]], dict(ragged_rank=2), 2,
         (3, None, None, 1), [[0, 2, 2, 3], [0, 2, 4, 6]]),
        ([[], [[]]], {}, 2, (2, None, None), [[0, 0, 1], [0, 0]]),
        ([[], []], dict(ragged_rank=2), 2, (2, None, None), [[0, 0, 0], [0]]),
        ([[[]]], {}, 2, (1, None, None), [[0, 1], [0, 0]]),
    ],
)
def test_constant(pylist, kwargs, ragged_rank, shape, splits):
    rt = sg.ragged.constant(pylist, **kwargs)
    assert rt.ragged_rank == ragged_rank
    assert rt.shape == shape
    assert _splits(rt) == splits
    assert rt.to_list() == pylist


def test_constant_dtypes_and_dense_results():
    rt = sg.ragged.constant([[[1.5], []], [[2.0, 3.0]]], row_splits_dtype="int32")
    assert rt.dtype == np.float32
    assert [s.dtype for s in rt.nested_row_splits] == [np.int32, np.int32]
    assert sg.ragged.constant([[[1]]], dtype=np.float64).dtype == np.float64
    assert sg.ragged.constant([[[]]]).dtype == np.float32
    # ragged_rank 0, or less than two levels: a dense Tensor
    dense = sg.ragged.constant([[1, 2], [3, 4]], ragged_rank=0)
    assert not sg.ragged.is_ragged(dense)
    np.testing.assert_array_equal(dense.numpy(), [[1, 2], [3, 4]])
    assert sg.ragged.constant(5).numpy() == 5
    assert sg.ragged.constant([]).numpy().shape == (0,)
    # TensorFlow reshapes a too shallow list to inner_shape
    assert sg.ragged.constant([[1, 2]], inner_shape=(2,)).numpy().tolist() == [1, 2]


@pytest.mark.parametrize(
    "pylist, kwargs, fragment",
    [
        ([[1, 2], [[3]]], {}, "all scalar values must have the same nesting depth"),
        ([1, [2]], {}, "all scalar values must have the same nesting depth"),
        ([[1], [[]]], {},
         "empty list nesting is greater than scalar value nesting"),
        ([[1, 2], [3]], dict(ragged_rank=-1),
         r"Invalid ragged_rank=-1: must be nonnegative"),
        ([[1, 2], [3]], dict(ragged_rank=3),
         "max depth smaller than ragged_rank=3"),
        ([[[1, 2]], [[3]]], dict(ragged_rank=1),
         "inner values have inconsistent shape"),
        ([[1, 2]], dict(ragged_rank=1, inner_shape=(1,)),
         r"incompatible with ragged_rank=1 and dim\(inner_shape\)=1"),
        ([[1]], dict(ragged_rank=2),
         "pylist has scalar values depth 2, but ragged_rank=2 requires scalar "
         "value depth greater than 2"),
        (5, dict(ragged_rank=1), "Invalid pylist=5: incompatible with ragged_rank=1"),
        (5, dict(inner_shape=(1,)),
         r"Invalid pylist=5: incompatible with dim\(inner_shape\)=1"),
    ],
)
def test_constant_errors(pylist, kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        sg.ragged.constant(pylist, **kwargs)


def test_constant_refuses_a_ragged_tensor():
    with pytest.raises(TypeError, match="pylist may not be a RaggedTensor"):
        sg.ragged.constant(sg.ragged.constant([[1]]))


# -- conversions -------------------------------------------------------------------


def test_to_tensor():
    rt = sg.ragged.constant([[[1, 2], [3]], [], [[4, 5, 6], [7], []]])
    want = [[[1, 2, 0], [3, 0, 0], [0, 0, 0]],
            [[0, 0, 0], [0, 0, 0], [0, 0, 0]],
            [[4, 5, 6], [7, 0, 0], [0, 0, 0]]]
    dense = rt.to_tensor()
    assert dense.numpy().tolist() == want and dense.dtype == np.int32
    assert rt.to_tensor(default_value=-1).numpy().tolist() == [
        [[1, 2, -1], [3, -1, -1], [-1, -1, -1]],
        [[-1, -1, -1], [-1, -1, -1], [-1, -1, -1]],
        [[4, 5, 6], [7, -1, -1], [-1, -1, -1]]]
    # shape: truncate and pad every dimension, None keeps the natural size
    assert rt.to_tensor(shape=[2, 1, 2]).numpy().tolist() == [[[1, 2]], [[0, 0]]]
    assert rt.to_tensor(shape=[4, None, 4], default_value=9).numpy().tolist() == [
        [[1, 2, 9, 9], [3, 9, 9, 9], [9, 9, 9, 9]],
        [[9, 9, 9, 9], [9, 9, 9, 9], [9, 9, 9, 9]],
        [[4, 5, 6, 9], [7, 9, 9, 9], [9, 9, 9, 9]],
        [[9, 9, 9, 9], [9, 9, 9, 9], [9, 9, 9, 9]]]
    # a uniform inner dimension below two ragged ones
    inner = sg.ragged.constant([[[[1, 2]], []], [[[3, 4], [5, 6]]]], ragged_rank=2)
    assert inner.shape == (2, None, None, 2)
    assert inner.to_tensor().numpy().tolist() == [
        [[[1, 2], [0, 0]], [[0, 0], [0, 0]]],
        [[[3, 4], [5, 6]], [[0, 0], [0, 0]]]]
    with pytest.raises(InvalidArgumentError, match="must have rank 3"):
        rt.to_tensor(shape=[2, 2])
    with pytest.raises(InvalidArgumentError, match="does not match"):
        inner.to_tensor(shape=[2, 2, 2, 3])


def test_to_tensor_gradient():
    flat = sg.Variable(np.array([1.0, 2.0, 3.0, 4.0]))
    with sg.GradientTape() as tape:
        rt = RT.from_nested_row_splits(flat, ([0, 2, 3], [0, 1, 1, 4]))
        dense = rt.to_tensor(shape=[2, 2, 2])
        loss = sg.reduce_sum(dense * np.arange(1.0, 9.0).reshape(2, 2, 2))
    # kept: flat[0] at [0, 0, 0], flat[1] at [1, 0, 0], flat[2] at [1, 0, 1]
    assert dense.numpy().tolist() == [[[1, 0], [0, 0]], [[2, 3], [0, 0]]]
    np.testing.assert_array_equal(tape.gradient(loss, flat).numpy(), [1, 5, 6, 0])


def test_to_list_repr_and_getitem():
    rt = sg.ragged.constant(NESTED_LIST)
    assert repr(rt) == str(rt) == f"<RaggedTensor {NESTED_LIST!r}>"
    assert rt[0].to_list() == [[0, 1], []] and rt[0].ragged_rank == 1
    assert rt[-1].to_list() == [[5], [6]]
    assert rt[2].to_list() == [] and rt[2].shape == (0, None)
    assert rt[1][0].numpy().tolist() == [2, 3, 4]
    assert rt[1:3].to_list() == NESTED_LIST[1:3] and rt[1:3].ragged_rank == 2
    assert rt[::2].to_list() == NESTED_LIST[::2]
    assert rt[::-1].to_list() == NESTED_LIST[::-1]
    assert [row.to_list() for row in rt] == NESTED_LIST
    with pytest.raises(IndexError, match="Row key 4 out of bounds"):
        rt[4]


def test_with_values_and_flat_values():
    rt = sg.ragged.constant([[[1, 2], []], [[3]]])
    assert rt.with_flat_values(np.array([1.5, 2.5, 3.5])).to_list() == [
        [[1.5, 2.5], []], [[3.5]]]
    new_inner = RT.from_row_splits([7, 8, 9], [0, 0, 3, 3])
    assert rt.with_values(new_inner).to_list() == [[[], [7, 8, 9]], [[]]]
    assert rt.with_row_splits_dtype("int32").nested_row_splits[1].dtype == np.int32
    with pytest.raises(InvalidArgumentError, match="must have 3 rows"):
        rt.with_flat_values([1, 2])
    with pytest.raises(InvalidArgumentError, match="must have 3 rows"):
        rt.with_values(RT.from_row_splits([1], [0, 1]))
    with pytest.raises(ValueError, match="self and new_values have mismatched "
                                         "row_splits dtypes"):
        rt.with_values(new_inner.with_row_splits_dtype("int32"))


def test_arithmetic_and_map_flat_values():
    rt = sg.ragged.constant([[[1.0, 2.0], []], [[3.0]]])
    assert (rt * 2 + 1).to_list() == [[[3.0, 5.0], []], [[7.0]]]
    assert (1 - rt).to_list() == [[[0.0, -1.0], []], [[-2.0]]]
    assert (rt * rt).to_list() == [[[1.0, 4.0], []], [[9.0]]]
    assert (-rt).to_list() == [[[-1.0, -2.0], []], [[-3.0]]]
    assert sg.ragged.map_flat_values(sg.square, rt).to_list() == [
        [[1.0, 4.0], []], [[9.0]]]
    other = sg.ragged.constant([[[1.0], [2.0]], [[3.0]]])   # same outer splits
    with pytest.raises(InvalidArgumentError, match="different row splits"):
        rt + other
    with pytest.raises(InvalidArgumentError, match="different row splits"):
        sg.ragged.map_flat_values(sg.add, rt, other)
    with pytest.raises(InvalidArgumentError, match="different row splits"):
        rt + sg.ragged.constant([[1.0, 2.0], [3.0]])   # ragged_rank 1


def test_arithmetic_gradient():
    flat = sg.Variable(np.array([1.0, 2.0, 3.0]))
    with sg.GradientTape() as tape:
        rt = RT.from_nested_row_lengths(flat, ([2, 1], [2, 0, 1]))
        loss = sg.reduce_sum((rt * rt).flat_values)
    np.testing.assert_array_equal(tape.gradient(loss, flat).numpy(), [2.0, 4.0, 6.0])


@pytest.mark.parametrize(
    "tensor, kwargs, want, splits",
    [
        # TensorFlow's from_tensor docstring
        ([[5, 7, 0], [0, 3, 0], [6, 0, 0]], {},
         [[5, 7, 0], [0, 3, 0], [6, 0, 0]], [[0, 3, 6, 9]]),
        ([[5, 7, 0], [0, 3, 0], [6, 0, 0]], dict(lengths=[1, 0, 3]),
         [[5], [], [6, 0, 0]], [[0, 1, 1, 4]]),
        ([[5, 7, 0], [0, 3, 0], [6, 0, 0]], dict(padding=0),
         [[5, 7], [0, 3], [6]], [[0, 2, 4, 5]]),
        # lengths clamped to [0, ncols]
        ([[1, 2], [3, 4]], dict(lengths=[5, -1]), [[1, 2], []], [[0, 2, 2]]),
        # a padding of the inner shape
        ([[[1, 0], [2, 3]], [[0, 0], [4, 0]]], dict(padding=[0, 0]),
         [[[1, 0], [2, 3]], [[0, 0], [4, 0]]], [[0, 2, 4]]),
        ([[[1, 0], [0, 0]], [[0, 0], [4, 0]]], dict(padding=[0, 0]),
         [[[1, 0]], [[0, 0], [4, 0]]], [[0, 1, 3]]),
        # ragged_rank 2 (ragged_from_tensor_op_test)
        ([[[1, 0], [2, 3]], [[0, 0], [4, 0]]], dict(ragged_rank=2, padding=0),
         [[[1], [2, 3]], [[], [4]]], [[0, 2, 4], [0, 1, 3, 3, 4]]),
        ([[[1, 0], [2, 3]], [[0, 0], [4, 0]]],
         dict(ragged_rank=2, lengths=[1, 2, 0, 1]),
         [[[1], [2, 3]], [[], [4]]], [[0, 2, 4], [0, 1, 3, 3, 4]]),
        ([[[1, 0], [2, 3]], [[0, 0], [4, 0]]], dict(ragged_rank=2),
         [[[1, 0], [2, 3]], [[0, 0], [4, 0]]], [[0, 2, 4], [0, 2, 4, 6, 8]]),
        # a tuple of the lengths of every level (TensorFlow's docstring)
        ([[[5, 0], [7, 0], [0, 0]], [[0, 0], [3, 0], [0, 0]], [[6, 0], [0, 0], [0, 0]]],
         dict(lengths=([2, 0, 3], [1, 1, 2, 0, 1])),
         [[[5], [7]], [], [[6, 0], [], [0]]], [[0, 2, 2, 5], [0, 1, 2, 4, 4, 5]]),
        ([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], dict(lengths=[[1, 2], [2, 0, 1]]),
         [[[1, 2]], [[], [7]]], [[0, 1, 3], [0, 2, 2, 3]]),
    ],
)
def test_from_tensor(tensor, kwargs, want, splits):
    rt = RT.from_tensor(np.array(tensor), **kwargs)
    assert rt.to_list() == want
    assert _splits(rt) == splits
    assert rt.ragged_rank == len(splits)
    assert all(s.dtype == np.int64 for s in rt.nested_row_splits)


def test_from_tensor_splits_dtype_and_gradient():
    rt = RT.from_tensor(np.ones((2, 2, 2)), ragged_rank=2, row_splits_dtype="int32")
    assert [s.dtype for s in rt.nested_row_splits] == [np.int32, np.int32]
    x = sg.Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(RT.from_tensor(x, lengths=[2, 1]).flat_values)
    np.testing.assert_array_equal(tape.gradient(loss, x).numpy(),
                                  [[1, 1, 0], [1, 0, 0]])


@pytest.mark.parametrize(
    "tensor, kwargs, error, fragment",
    [
        ([[1]], dict(lengths=[1], padding=0), ValueError,
         "Specify argument `lengths` or `padding`, but not both."),
        ([[1]], dict(ragged_rank="bad"), TypeError,
         "Argument `ragged_rank` must be an int. Received bad."),
        ([[1]], dict(ragged_rank=0), ValueError,
         "Argument `ragged_rank` must be greater than 0. Received 0."),
        ([[1]], dict(ragged_rank=-1), ValueError,
         "Argument `ragged_rank` must be greater than 0. Received -1."),
        ([1, 2], {}, ValueError,
         "The rank of a RaggedTensor must be greater than 1"),
        ([[1, 2]], dict(ragged_rank=2), ValueError,
         r"Shape \(1, 2\) must have rank at least 3"),
        ([[1]], dict(padding=[1]), ValueError,
         r"Shapes \(1,\) and \(\) are incompatible"),
        ([[[1]]], dict(padding=1), ValueError,
         r"Shapes \(\) and \(1,\) are incompatible"),
        ([[1, 2], [3, 4]], dict(lengths=[1]), InvalidArgumentError,
         r"lengths must have one entry per row \(2\), got 1"),
        ([[1, 2], [3, 4]], dict(lengths=np.array([[1], [1]])), InvalidArgumentError,
         "must have rank 1"),
        # a list of lists: the lengths of every level (TensorFlow's testErrors)
        ([[1, 2, 3]], dict(lengths=[[1], [1]]), ValueError,
         r"Shape \(1, 3\) must have rank at least 3"),
        ([[[[1, 0], [2, 3]], [[0, 0], [4, 0]]], [[[5, 6], [7, 0]], [[0, 8], [0, 0]]]],
         dict(lengths=([2, 2], [2, 2, 2, 2]), ragged_rank=3), ValueError,
         r"If Argument `lengths` is a tuple of row_lengths, argument `ragged_rank` "
         r"must be len\(lengths\): 2. Received ragged_rank: 3."),
        ([[[1, 2], [3, 4]]], dict(lengths=([2], [1, 3])), InvalidArgumentError,
         r"lengths\[1\] holds 3, more than dimension 2 of the tensor \(2\)"),
        ([[[1, 2], [3, 4]]], dict(lengths=([2, 0], [1, 1])), InvalidArgumentError,
         r"lengths\[0\] must have one entry per row \(1\), got 2"),
        ([[[1, 2], [3, 4]]], dict(lengths=([1], [1, 1])), InvalidArgumentError,
         r"nested_row_lengths\[0\]: .*row_lengths sum to 1, but values has 2 rows"),
        ([[[1, 2], [3, 4]]], dict(lengths=([2], [-1, 1])), InvalidArgumentError,
         r"row_lengths\[0\] = -1 is negative"),
        ([[1, 2], [3, 4]], dict(lengths=[1.5, 1.0]), TypeError,
         "lengths must be of type integer"),
    ],
)
def test_from_tensor_errors(tensor, kwargs, error, fragment):
    with pytest.raises(error, match=fragment):
        RT.from_tensor(np.array(tensor), **kwargs)


def test_merge_dims():
    # TensorFlow's merge_dims docstring and ragged_merge_dims_op_test cases
    rt = sg.ragged.constant([[[1, 2], [3]], [[4, 5, 6]]])
    assert rt.merge_dims(0, 1).to_list() == [[1, 2], [3], [4, 5, 6]]
    assert rt.merge_dims(1, 2).to_list() == [[1, 2, 3], [4, 5, 6]]
    assert rt.merge_dims(-2, -1).to_list() == [[1, 2, 3], [4, 5, 6]]
    assert rt.merge_dims(0, 2).numpy().tolist() == [1, 2, 3, 4, 5, 6]
    assert rt.merge_dims(1, 1) is rt
    uniform = sg.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1)
    assert uniform.merge_dims(1, 2).to_list() == [[1, 2, 3, 4], [5, 6]]
    assert uniform.merge_dims(0, 1).numpy().tolist() == [[1, 2], [3, 4], [5, 6]]
    deep = sg.ragged.constant([[[[1], [2]], [[3]]], [[[4, 5]]]])
    assert deep.merge_dims(2, 3).to_list() == [[[1, 2], [3]], [[4, 5]]]
    assert deep.merge_dims(1, 3).to_list() == [[1, 2, 3], [4, 5]]
    assert deep.merge_dims(0, 2).to_list() == [[1], [2], [3], [4, 5]]
    with pytest.raises(ValueError, match="outer_axis=3 out of bounds: expected "
                                         "-3<=outer_axis<3"):
        rt.merge_dims(3, 3)
    with pytest.raises(ValueError, match="inner_axis=-4 out of bounds"):
        rt.merge_dims(0, -4)
    with pytest.raises(ValueError, match=r"Expected outer_axis \(2\) to be less "
                                         r"than or equal to inner_axis \(1\)"):
        rt.merge_dims(2, 1)
    with pytest.raises(TypeError, match="outer_axis must be an int"):
        rt.merge_dims(0.0, 1)


# -- validation of every level --------------------------------------------------


@pytest.mark.parametrize(
    "factory, partitions, error, fragment",
    [
        ("from_nested_row_splits", ([0, 2, 3], [1, 2, 2, 5]), InvalidArgumentError,
         r"nested_row_splits\[1\]: Arguments to from_row_splits do not form a "
         r"valid RaggedTensor:zero \(row_splits\[0\] = 1"),
        ("from_nested_row_splits", ([0, 2, 1], [0, 2, 2, 5]), InvalidArgumentError,
         r"nested_row_splits\[0\]: Arguments to from_row_splits do not form a "
         r"valid RaggedTensor:monotonic \(row_splits\[2\] = 1 < row_splits\[1\] = 2"),
        ("from_nested_row_splits", ([0, 2, 4], [0, 2, 2, 5]), InvalidArgumentError,
         r"nested_row_splits\[0\]: Arguments to _from_row_partition do not form a "
         r"valid RaggedTensor \(row_splits\[-1\] = 4, but values has 3 rows"),
        ("from_nested_row_splits", ([0, 2, 3], [0, 2, 2, 6]), InvalidArgumentError,
         r"nested_row_splits\[1\]: .*row_splits\[-1\] = 6, but values has 5 rows"),
        ("from_nested_row_splits", ([], [0, 2, 2, 5]), InvalidArgumentError,
         r"nested_row_splits\[0\]: row_splits tensor may not be empty"),
        ("from_nested_row_splits", ([0, 3], [[0, 2, 2, 5]]), InvalidArgumentError,
         r"nested_row_splits\[1\]: Shape \(1, 4\) must have rank 1"),
        ("from_nested_row_splits", ([0, 3], [0.0, 5.0]), InvalidArgumentError,
         r"nested_row_splits\[1\]: row_splits must have dtype int32 or int64"),
        ("from_nested_row_lengths", ([2, 2], [2, 0, 3]), InvalidArgumentError,
         r"nested_row_lengths\[0\]: .*row_lengths sum to 4, but values has 3 rows"),
        ("from_nested_row_lengths", ([2, 1], [2, -1, 4]), InvalidArgumentError,
         r"nested_row_lengths\[1\]: Arguments to from_row_lengths do not form a "
         r"valid RowPartition \(row_lengths\[1\] = -1 is negative"),
        ("from_nested_value_rowids", ([0, 0, 1], [0, 0, 2, 1, 2]),
         InvalidArgumentError,
         r"nested_value_rowids\[1\]: Arguments to from_value_rowids do not form "
         r"a valid RowPartition \(value_rowids\[3\] = 1 < value_rowids\[2\] = 2"),
        ("from_nested_value_rowids", ([0, 0], [0, 0, 2, 2, 2]), ValueError,
         r"Shapes \(3,\) and \(2,\) are incompatible"),
        ("from_nested_row_splits", np.array([[0, 5]]), TypeError,
         "Argument `nested_row_splits` must be a list of Tensors"),
        ("from_nested_row_lengths", np.array([[5]]), TypeError,
         "Argument `nested_row_lengths` must be a list of Tensors"),
        ("from_nested_value_rowids", np.array([[0]]), TypeError,
         "Argument `nested_value_rowids` must be a list of Tensors"),
    ],
)
def test_nested_factory_errors(factory, partitions, error, fragment):
    with pytest.raises(error, match=fragment):
        getattr(RT, factory)(np.arange(5), partitions)


def test_nested_nrows_errors():
    with pytest.raises(ValueError, match=r"Argument `nested_nrows` must have the "
                                         r"same length .* len\(nested_nrows\) = 1"):
        RT.from_nested_value_rowids(np.arange(3), ([0], [0, 0, 0]), nested_nrows=[1])
    with pytest.raises(TypeError, match="Argument `nested_nrows` must be a list"):
        RT.from_nested_value_rowids(np.arange(3), ([0], [0, 0, 0]), nested_nrows=1)
    with pytest.raises(ValueError, match=r"Expected nrows >= value_rowids\[-1\] \+ 1"):
        RT.from_nested_value_rowids(np.arange(3), ([0], [0, 0, 1]),
                                    nested_nrows=[1, 1])


def test_validate_false_keeps_every_level_in_bounds():
    inner = RT.from_row_splits(np.arange(5), [0, 2, 2, 5])
    # a smaller last split truncates (TensorFlow's validate=False) ...
    rt = RT.from_row_splits(inner, [0, 1, 2], validate=False)
    assert rt.to_list() == [[[0, 1]], [[]]]
    assert rt.to_tensor().numpy().tolist() == [[[0, 1]], [[0, 0]]]
    assert rt.merge_dims(0, 1).to_list() == [[0, 1], []]
    assert (rt + 1).to_list() == [[[1, 2]], [[]]]
    # ... a larger one, or a bad inner level, is refused all the same
    with pytest.raises(InvalidArgumentError, match="but values has 3 rows"):
        RT.from_row_splits(inner, [0, 1, 4], validate=False)
    with pytest.raises(InvalidArgumentError, match=r"nested_row_splits\[1\]"):
        RT.from_nested_row_splits(np.arange(5), ([0, 1], [0, 6]), validate=False)


def test_splits_dtype_mismatch():
    inner = RT.from_row_splits(np.arange(5), np.array([0, 2, 5], np.int32))
    with pytest.raises(ValueError, match=r"with name: row_splits must have same "
                                         r"dtype as Argument `values`. \(int64 vs. "
                                         r"int32\)"):
        RT.from_row_splits(inner, np.array([0, 2], np.int64))
    with pytest.raises(ValueError, match="with name: row_lengths must have same"):
        RT.from_row_lengths(inner, np.array([2], np.int64))
    with pytest.raises(ValueError, match="with name: value_rowids must have same"):
        RT.from_value_rowids(inner, np.array([0, 0], np.int64))


# -- operations that handle ragged_rank 1 only --------------------------------------


NOT_YET = "ragged_rank >= 2 are not supported by {op} yet"


@pytest.mark.parametrize(
    "op, call",
    [
        ("to_scipy", lambda rt: rt.to_scipy()),
    ],
)
def test_not_supported_yet(op, call):
    rt = sg.ragged.constant([[[1.0, 2.0], []], [[3.0]]])
    with pytest.raises(TypeError, match=NOT_YET.format(op=op)):
        call(rt)


def test_bags_refuse_ragged_rank_3_and_weights_of_another_rank():
    # ragged_rank 2 ids are bags (tests/ops/test_ragged_bags.py); 3 is refused
    ids3 = sg.ragged.constant([[[[0]]]])
    for op in (sg.nn.embedding_lookup_sparse, sg.nn.safe_embedding_lookup_sparse):
        with pytest.raises(TypeError, match="ragged_rank >= 3 are not supported"):
            op(np.ones((4, 2)), ids3, None)
    ids = sg.ragged.constant([[0, 1], [2]])
    weights = RT.from_row_splits(RT.from_row_splits([1.0, 1.0, 1.0], [0, 2, 3]),
                                 [0, 2])
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match="sp_weights must have the ragged_rank of sp_ids"):
        sg.nn.embedding_lookup_sparse(np.ones((4, 2)), ids, weights)


def test_assert_ragged_equal_of_nested():
    rt = sg.ragged.constant([[[1.0], []], [[2.0, 3.0]]])
    assert_ragged_equal(rt, [[[1.0], []], [[2.0, 3.0]]])
    assert_ragged_equal(rt, sg.ragged.constant([[[1.0], []], [[2.0, 3.0]]]))
    with pytest.raises(AssertionError, match="row lengths of level 1 differ"):
        assert_ragged_equal(rt, [[[1.0], [2.0]], [[3.0]]])
    with pytest.raises(AssertionError):
        assert_ragged_equal(rt, [[[1.0], []], [[2.0, 4.0]]])
    with pytest.raises(AssertionError, match="ragged ranks differ"):
        assert_ragged_equal(rt, sg.ragged.constant([[1.0], [2.0]]))


def test_from_tensor_nested_lengths_gradient_and_numpy_ints():
    x = sg.Variable(np.arange(8.0).reshape(2, 2, 2))
    with sg.GradientTape() as tape:
        rt = RT.from_tensor(x, lengths=([2, 1], np.array([1, 2, 0], np.int32)),
                            row_splits_dtype="int32")
        loss = sg.reduce_sum(rt.flat_values * 2.0)
    assert rt.to_list() == [[[0.0], [2.0, 3.0]], [[]]]
    assert [s.dtype for s in rt.nested_row_splits] == [np.int32, np.int32]
    np.testing.assert_array_equal(tape.gradient(loss, x).numpy(),
                                  [[[2, 0], [2, 2]], [[0, 0], [0, 0]]])
    # a list of NumPy ints is one vector of lengths, not one per level
    flat = RT.from_tensor(np.arange(4).reshape(2, 2), lengths=list(np.array([1, 2])))
    assert flat.to_list() == [[0], [2, 3]]
