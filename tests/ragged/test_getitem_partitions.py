"""RaggedTensor's TensorFlow-style indexing and the uniform/starts/limits
partitions, beyond the TensorFlow port: gradients, unchanged inputs,
allocation checks."""

import numpy as np
import pytest

import sparsegrad as sg

RT = sg.RaggedTensor


def test_inner_slice_matches_python_for_every_step():
    rows = [[1, 2, 3, 4, 5], [], [6], [7, 8, 9]]
    rt = sg.ragged.constant(rows)
    for start in (None, -7, -2, 0, 1, 6):
        for stop in (None, -7, -1, 0, 2, 9):
            for step in (-3, -1, 1, 2):
                got = rt[:, start:stop:step].to_list()
                assert got == [r[start:stop:step] for r in rows]


@pytest.mark.parametrize("key", [
    slice(2**62, 2**63 - 1), slice(-2**63, 2), slice(None, None, 2**63 - 1),
    slice(None, None, -2**63), slice(-2**63, 2**63 - 1, 3),
    slice(2**63 - 1, -2**63, -2)])
def test_inner_slice_with_int64_extremes_matches_python(key):
    # bounds and steps past any row length select as Python does (no
    # int64 overflow in the positions)
    rows = [[1, 2, 3, 4, 5], [6, 7], []]
    got = sg.ragged.constant(rows)[:, key].to_list()
    assert got == [row[key] for row in rows]


def test_getitem_gradient_reaches_the_flat_values():
    x = sg.Variable(np.arange(6.0))
    with sg.GradientTape() as tape:
        rt = RT.from_row_splits(x, [0, 3, 3, 6])
        y = sg.reduce_sum(rt[:, ::-2].flat_values * 10.0)
    g = np.asarray(sg.convert_to_tensor(tape.gradient(y, x)))
    np.testing.assert_array_equal(g, [10, 0, 10, 10, 0, 10])


def test_uniform_rows_survive_slices_and_with_values():
    rt = RT.from_uniform_row_length(np.arange(12), 3)
    assert rt.shape == (4, 3)
    assert rt[1:3].shape == (2, 3)
    assert rt[:, 1:].shape == (4, 2)
    assert rt.with_values(np.zeros(12)).shape == (4, 3)
    assert rt.uniform_row_length.dtype == np.int64
    np.testing.assert_array_equal(rt[:, -1].numpy(), [2, 5, 8, 11])
    with pytest.raises(sg.errors.InvalidArgumentError, match="out of bounds"):
        rt[:, 3]


def test_uniform_zero_length_refuses_huge_nrows_before_allocating():
    with pytest.raises(sg.errors.InvalidArgumentError):
        RT.from_uniform_row_length(np.zeros(0), 0, nrows=2**62)


def test_starts_and_limits_keep_inputs_unchanged():
    starts = np.array([0, 2, 2], np.int32)
    rt = RT.from_row_starts(np.arange(5), starts)
    assert rt.row_splits.tolist() == [0, 2, 2, 5]
    assert rt.row_splits.dtype == np.int32
    assert starts.tolist() == [0, 2, 2]
    with pytest.raises(sg.errors.InvalidArgumentError, match="from_row_limits"):
        RT.from_row_limits(np.arange(4), [0, 3, 2, 4])


def test_row_index_error_is_both_classes():
    rt = sg.ragged.constant([[1], [2]])
    for key in (2, -3):
        with pytest.raises(IndexError):
            rt[key]
        with pytest.raises(sg.errors.InvalidArgumentError):
            rt[key]
    assert [r.numpy().tolist() for r in rt] == [[1], [2]]


def test_bounding_shape_and_row_lengths_axis():
    rt = sg.ragged.constant([[[1, 2, 3], []], [], [[4]]])
    np.testing.assert_array_equal(rt.bounding_shape(), [3, 2, 3])
    assert rt.bounding_shape(axis=2, out_type="int32").dtype == np.int32
    assert rt.row_lengths(axis=-1).to_list() == [[3, 0], [], [1]]
    with pytest.raises(ValueError, match="out of bounds"):
        rt.row_lengths(axis=3)
