"""The division, difference, rounding and logical ops added for TensorFlow's
elementwise API (floordiv, floormod, truncatediv, truncatemod, divide_no_nan,
squared_difference, expm1, reciprocal, floor, ceil, rint, round, is_nan,
is_inf, is_finite, logical_*): values against NumPy, gradients by finite
differences, errors."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.testing import check_gradients

CHECKED_OPS = ("FloorDiv", "FloorMod", "DivNoNan", "SquaredDifference", "Expm1",
               "Reciprocal", "Floor", "Ceil", "Rint", "Round")

X = np.array([7.0, -7.0, 5.5, -0.5, 3.0])
Y = np.array([2.0, 3.0, -2.0, 4.0, -1.5])


def test_values_match_numpy():
    np.testing.assert_array_equal(sg.floordiv(X, Y).numpy(), np.floor(X / Y))
    np.testing.assert_array_equal(sg.floormod(X, Y).numpy(), np.mod(X, Y))
    np.testing.assert_array_equal(sg.truncatediv(X, Y).numpy(), np.trunc(X / Y))
    np.testing.assert_array_equal(sg.truncatemod(X, Y).numpy(), np.fmod(X, Y))
    xi, yi = np.array([7, -7, 7, -7, 0]), np.array([2, 2, -2, -2, 3])
    np.testing.assert_array_equal(sg.floordiv(xi, yi).numpy(), xi // yi)
    np.testing.assert_array_equal(sg.truncatediv(xi, yi).numpy(), [3, -3, -3, 3, 0])
    np.testing.assert_array_equal(sg.truncatemod(xi, yi).numpy(), np.fmod(xi, yi))
    np.testing.assert_array_equal(
        sg.divide_no_nan([1.0, 0.0, np.nan], [2.0, 0.0, 0.0]).numpy(), [0.5, 0, 0])
    np.testing.assert_array_equal(sg.squared_difference(X, Y).numpy(), (X - Y) ** 2)
    np.testing.assert_array_equal(sg.round([0.5, 1.5, 2.5, -0.5]).numpy(),
                                  [0.0, 2.0, 2.0, -0.0])
    np.testing.assert_array_equal(sg.round([3, -4]).numpy(), [3, -4])
    np.testing.assert_array_equal(sg.rint(X).numpy(), np.rint(X))
    np.testing.assert_array_equal(sg.ceil(X).numpy(), np.ceil(X))
    np.testing.assert_array_equal(sg.floor(X).numpy(), np.floor(X))
    np.testing.assert_allclose(sg.expm1(X).numpy(), np.expm1(X), rtol=1e-15)
    np.testing.assert_array_equal(sg.reciprocal(Y).numpy(), 1 / Y)
    v = np.array([1.0, np.inf, -np.inf, np.nan])
    assert sg.is_nan(v).numpy().tolist() == [False, False, False, True]
    assert sg.is_inf(v).numpy().tolist() == [False, True, True, False]
    assert sg.is_finite(v).numpy().tolist() == [True, False, False, False]
    a, b = [True, True, False, False], [True, False, True, False]
    assert sg.logical_and(a, b).numpy().tolist() == [True, False, False, False]
    assert sg.logical_or(a, b).numpy().tolist() == [True, True, True, False]
    assert sg.logical_xor(a, b).numpy().tolist() == [False, True, True, False]
    assert sg.logical_not(a).numpy().tolist() == [False, False, True, True]
    assert sg.truediv is sg.divide


def test_gradients():
    y = np.array([2.0, 3.0, -2.5, 4.0, -1.5])
    x = np.array([7.3, -7.1, 5.6, -0.4, 3.2])
    for op in (sg.floormod, sg.divide_no_nan, sg.squared_difference):
        check_gradients(lambda a, b, op=op: op(a, b), [x, y])
        check_gradients(lambda a, b, op=op: op(a, b), [x, y[:1]])   # broadcast
    check_gradients(sg.expm1, [x / 4], order=2)
    check_gradients(sg.reciprocal, [y], order=2)
    check_gradients(lambda a: sg.divide_no_nan(a, [1.0, 0.0, 2.0, 0.0, 3.0]), [x])


@pytest.mark.parametrize("op", [sg.floor, sg.ceil, sg.rint, sg.round])
def test_roundings_and_floordiv_have_no_gradient(op):
    x = sg.constant(X)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        z = sg.reduce_sum(op(x))
        q = sg.reduce_sum(sg.floordiv(x, 2.0))
    assert tape.gradient(z, x) is None
    assert tape.gradient(q, x) is None


def test_errors():
    with pytest.raises(InvalidArgumentError, match="Integer division by zero"):
        sg.floormod([1, 2], [1, 0])
    with pytest.raises(InvalidArgumentError, match="Integer division by zero"):
        sg.truncatediv([1, 2], 0)
    with pytest.raises(InvalidArgumentError, match="must be floats"):
        sg.divide_no_nan([1, 2], [1, 2])
    with pytest.raises(InvalidArgumentError, match="must be bool"):
        sg.logical_or([1, 0], [True, False])
    with pytest.raises(InvalidArgumentError, match="must be bool"):
        sg.logical_not([1.0])
    with pytest.raises(InvalidArgumentError, match="float"):
        sg.floor([1, 2])
    with pytest.raises(InvalidArgumentError, match="float"):
        sg.is_nan([1, 2])
    with pytest.raises(InvalidArgumentError, match="do not broadcast"):
        sg.floordiv([1.0, 2.0], [1.0, 2.0, 3.0])
