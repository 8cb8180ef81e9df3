"""Raw training ops check the buffers their arguments' sizes
ask for (contiguous copies of broadcast views, int64 copies of indices, the
sparse kernels' scratch) before allocating any: InvalidArgumentError naming
the op and the argument, every variable and slot unchanged."""

import re

import numpy as np
import pytest

from sparsegrad import training_ops
from sparsegrad.errors import InvalidArgumentError

N = 2**40   # a broadcast view of N rows costs nothing; a copy, terabytes


def _state(shape=(10, 4), dtype=np.float32):
    return np.zeros(shape, dtype), np.full(shape, 0.5, dtype)


SPARSE_CALLS = {
    "sparse_apply_adagrad": lambda var, acc, g, i: training_ops.sparse_apply_adagrad(
        var, acc, 0.1, g, i),
    "sparse_apply_adagrad_v2": lambda var, acc, g, i:
        training_ops.sparse_apply_adagrad_v2(var, acc, 0.1, 1e-7, g, i),
    "sparse_apply_momentum": lambda var, acc, g, i:
        training_ops.sparse_apply_momentum(var, acc, 0.1, g, i, 0.9),
    "sparse_apply_proximal_gradient_descent": lambda var, acc, g, i:
        training_ops.sparse_apply_proximal_gradient_descent(var, 0.1, 0.0, 0.0, g, i),
}


@pytest.mark.parametrize("op", sorted(SPARSE_CALLS))
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_broadcast_indices_and_gradient_are_checked_before_their_copies(
        op, index_dtype):
    var, acc = _state()
    grad = np.broadcast_to(np.float32(1), (N, 4))
    indices = np.broadcast_to(index_dtype(3), (N,))
    with pytest.raises(InvalidArgumentError) as info:
        SPARSE_CALLS[op](var, acc, grad, indices)
    message = str(info.value)
    assert re.match(rf"{op}: (grad|indices) asks for a result of shape "
                    rf"\({N}, \d\)", message), message
    assert "with the call's other buffers" in message
    assert not var.any() and (acc == 0.5).all()


def test_a_contiguous_gradient_with_broadcast_indices_still_runs():
    var, acc = _state()
    indices = np.broadcast_to(np.int64(3), (1000,))
    training_ops.sparse_apply_adagrad(var, acc, 0.1, np.ones((1000, 4), np.float32),
                                      indices)
    expected = np.full(4, 0.5, np.float32)
    for _ in range(1000):       # one duplicate after another, as TensorFlow
        expected += np.float32(1)
    np.testing.assert_array_equal(acc[3], expected)
    assert (acc[:3] == 0.5).all() and (var[3] < 0).all()


def test_narrow_broadcast_indices_are_checked_before_their_int64_copy():
    var, acc = _state()
    grad = np.broadcast_to(np.float32(1), (2**36, 4))
    indices = np.broadcast_to(np.uint8(3), (2**36,))
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "indices asks for a result of shape (68719476736,) and dtype int64")):
        training_ops.sparse_apply_adagrad(var, acc, 0.1, grad, indices)
    assert not var.any() and (acc == 0.5).all()


def test_a_2_31_element_broadcast_index_array_is_refused_under_rlimit_as(run_limited):
    """Issue 23: the 2**31-element broadcast index array, in a process that
    cannot map its 16 GiB copy: InvalidArgumentError, not MemoryError."""
    out = run_limited("""
        var = np.zeros((10, 1), np.float32)
        acc = np.full((10, 1), 0.5, np.float32)
        sg.training_ops.sparse_apply_adagrad(             # warm up the kernels
            var, acc, 0.1, np.ones((1, 1), np.float32), np.array([0]))
        before = var.copy(), acc.copy()
        limit(1 << 30)
        grad = np.broadcast_to(np.float32(1), (2**31, 1))
        indices = np.broadcast_to(np.int64(3), (2**31,))
        expect_refusal(lambda: sg.training_ops.sparse_apply_adagrad(
            var, acc, 0.1, grad, indices))
        assert (var == before[0]).all() and (acc == before[1]).all()
    """)
    assert out.startswith("refused: sparse_apply_adagrad: ")
    assert "(2147483648," in out and "RLIMIT_AS" in out
