"""The framework helpers issue 26 added: array_backend_of, sparse_rows.int_tuple,
the optional ``be`` of the framework functions, the operators Tensor and
Variable share."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.framework import elementwise, sparse_rows
from sparsegrad.framework.backend import CPU, array_backend_of


def test_array_backend_of_counts_arrays_only():
    assert array_backend_of(np.zeros(2), [1, 2], 3.0, None) is CPU
    assert array_backend_of() is CPU


def test_int_tuple():
    assert sparse_rows.int_tuple([2, np.int64(3), np.array(4)]) == (2, 3, 4)
    assert sparse_rows.int_tuple((2, 1.5)) is None
    assert sparse_rows.int_tuple(["2"]) is None


def test_a_passed_backend_gives_the_same_bits():
    x = np.linspace(-3.0, 3.0, 11)
    np.testing.assert_array_equal(elementwise.exp(x, be=CPU), elementwise.exp(x))
    out_a, out_b = np.zeros((4, 2)), np.zeros((4, 2))
    idx, vals = np.array([3, 1, 3]), np.arange(6.0).reshape(3, 2)
    sparse_rows.scatter_add(out_a, idx, vals)
    sparse_rows.scatter_add(out_b, idx, vals, be=CPU)
    np.testing.assert_array_equal(out_a, out_b)
    np.testing.assert_array_equal(out_a, [[0, 0], [2, 3], [0, 0], [4, 6]])


def test_scatter_update_keeps_the_last_duplicate_and_checks_first():
    out = np.zeros((3, 1), np.int32)
    sparse_rows.scatter_update(out, [2, 0, 2], np.array([[1], [2], [3]], np.int32))
    np.testing.assert_array_equal(out, [[2], [0], [3]])
    before = out.copy()
    with pytest.raises(sg.errors.InvalidArgumentError, match=r"indices\[1\] = 3"):
        sparse_rows.scatter_update(out, [0, 3], np.ones((2, 1), np.int32))
    np.testing.assert_array_equal(out, before)


def test_tensor_and_variable_share_the_operators():
    v = sg.Variable([1.0, 2.0])
    t = sg.constant([3.0, 5.0])
    np.testing.assert_array_equal((v + t).numpy(), [4.0, 7.0])
    np.testing.assert_array_equal((t - v).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal((v < t).numpy(), [True, True])
    assert [float(x) for x in v] == [1.0, 2.0]
    with pytest.raises(TypeError, match="0-d Variable"):
        len(sg.Variable(1.0))
    with pytest.raises(TypeError, match="0-d Tensor"):
        len(sg.constant(1.0))
    assert v.dtype == t.dtype == np.float64 and v.ndim == t.ndim == 1
    assert v.device == t.device == "cpu"
