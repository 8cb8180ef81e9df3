"""sparsegrad.testing: the gradient checker must catch wrong gradients."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.autodiff.tape import record_operation
from sparsegrad.testing import assert_indexed_slices_equal, check_gradients

# A deliberately wrong gradient (d/dx x^2 claimed to be 3x) and one whose
# first derivative is right but whose gradient-of-gradient is wrong.


@sg.register_gradient("TestWrongSquare")
def _wrong_square_grad(op, grad):
    return grad * 3.0 * op.inputs[0]


def _wrong_square(x):
    x = sg.convert_to_tensor(x)
    y = sg.Tensor(np.asarray(x) ** 2)
    record_operation("TestWrongSquare", (x,), (y,))
    return y


@sg.register_gradient("TestStaleSquare")
def _stale_square_grad(op, grad):
    # right value, but built from a constant: its own derivative is lost
    return grad * sg.constant(2.0 * np.asarray(op.inputs[0]))


def _stale_square(x):
    x = sg.convert_to_tensor(x)
    y = sg.Tensor(np.asarray(x) ** 2)
    record_operation("TestStaleSquare", (x,), (y,))
    return y


def test_check_gradients_passes_on_correct_gradients():
    check_gradients(lambda x, y: sg.tanh(x) * y, [[0.1, 0.2], 2.0], order=2)


def test_check_gradients_catches_a_wrong_first_derivative():
    with pytest.raises(AssertionError, match="gradient of input 0 does not match"):
        check_gradients(_wrong_square, [[1.0, 2.0]])


def test_check_gradients_catches_a_wrong_second_derivative():
    check_gradients(_stale_square, [[1.0, 2.0]])
    with pytest.raises(AssertionError, match="does not match"):
        check_gradients(_stale_square, [[1.0, 2.0]], order=2)


def test_check_gradients_treats_none_as_zero_and_skips_integer_inputs():
    # x does not affect the output: its None gradient equals the zero differences
    check_gradients(
        lambda x, i: sg.cast(i, "float64") * 2.0 + 0.0 * sg.stop_gradient(x),
        [np.array([1.0]), np.array([3])],
    )
    with pytest.raises(AssertionError):
        check_gradients(lambda x: sg.stop_gradient(x) * x, [np.array([1.0])])


def test_assert_indexed_slices_equal():
    s = sg.IndexedSlices([[1.0], [2.0]], [1, 1], dense_shape=(3, 1))
    assert_indexed_slices_equal(s, [[0.0], [3.0], [0.0]])
    with pytest.raises(AssertionError):
        assert_indexed_slices_equal(s, [[0.0], [2.0], [0.0]])
    with pytest.raises(AssertionError, match="expected IndexedSlices"):
        assert_indexed_slices_equal(sg.constant([1.0]), [1.0])
