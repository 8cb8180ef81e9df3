"""Tapes record bfloat16 (as they record float16): watched tensors, Variables
read inside the block, and the ops whose gradients compute in bfloat16.  Ops
without bfloat16 arithmetic keep refusing it with their clear error."""

import re
import warnings

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.autodiff import tape as tape_module
from sparsegrad.errors import InvalidArgumentError

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALVES = pytest.mark.parametrize("dtype", [BF16, F16], ids=["bfloat16", "float16"])


def _bits(array):
    array = np.asarray(array)
    return array.view(np.uint16) if array.dtype.itemsize == 2 else array


@HALVES
def test_a_watched_half_tensor_gets_a_gradient_of_its_dtype(dtype):
    x = sg.constant(np.array([1.5, -2.0, 3.0], dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # no "gets no gradient" warning
        with sg.GradientTape() as tape:
            tape.watch(x)
            y = sg.reduce_sum(x * x)
    g = tape.gradient(y, x)
    assert g.dtype == dtype
    assert g.numpy().astype(np.float32).tolist() == [3.0, -4.0, 6.0]


@HALVES
def test_a_half_variable_read_in_the_block_is_watched(dtype):
    v = sg.Variable(np.array([[1.0, 2.0], [3.0, 4.0]], dtype))
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(v * 3.0)
    assert tape.watched_variables() == (v,)
    g = tape.gradient(loss, v)
    assert g.dtype == dtype
    np.testing.assert_array_equal(g.numpy().astype(np.float32), np.full((2, 2), 3.0))


def test_bfloat16_gradients_are_the_float32_ones_rounded():
    # ml_dtypes computes each bfloat16 ufunc in float32 and rounds once, so
    # a gradient made of one such op is the float32 gradient rounded once
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 5)).astype(BF16)
    b = rng.standard_normal((4, 5)).astype(BF16)
    x, y = sg.Variable(a), sg.constant(b)
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(x * y)
    got = tape.gradient(loss, x)
    assert got.dtype == BF16
    np.testing.assert_array_equal(_bits(got.numpy()), _bits(b))
    with sg.GradientTape() as tape:
        q = x / y
    got = tape.gradient(q, x)
    want = (np.float32(1) / b.astype(np.float32)).astype(BF16)
    np.testing.assert_array_equal(_bits(got.numpy()), _bits(want))


def test_a_cast_through_float32_carries_the_gradient_back_to_bfloat16():
    v = sg.Variable(np.array([0.5, 1.5, -2.0], BF16))
    with sg.GradientTape() as tape:
        wide = sg.cast(v, np.float32)
        y = sg.cast(wide * wide, BF16)
    g = tape.gradient(y, v)
    assert g.dtype == BF16
    assert g.numpy().astype(np.float32).tolist() == [1.0, 3.0, -4.0]


def test_gather_of_a_bfloat16_variable_gives_bfloat16_indexed_slices():
    v = sg.Variable(np.arange(8, dtype=np.float32).reshape(4, 2).astype(BF16))
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(sg.gather(v, [3, 1, 3]) * 2.0)
    g = tape.gradient(loss, v)
    assert isinstance(g, sg.IndexedSlices) and g.values.dtype == BF16
    assert g.indices.numpy().tolist() == [3, 1, 3]
    assert g.values.numpy().astype(np.float32).tolist() == [[2.0, 2.0]] * 3


def test_ops_without_bfloat16_arithmetic_still_refuse_it_on_a_tape():
    v = sg.Variable(np.array([1.0, 4.0], BF16))
    with sg.GradientTape() as tape:
        with pytest.raises(InvalidArgumentError, match=re.escape(
                "sqrt: x has dtype bfloat16, which sqrt does not compute in")):
            sg.sqrt(v)
        y = v ** v
    # the gradient w.r.t. an exponent needs log, which refuses bfloat16
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "log: x has dtype bfloat16, which log does not compute in")):
        tape.gradient(y, v)
    assert v.numpy().astype(np.float32).tolist() == [1.0, 4.0]


def test_an_integer_watch_still_warns(monkeypatch):
    monkeypatch.setitem(tape_module._warned, "int_watch", 0)
    x = sg.constant(np.array([1, 2], np.int32))
    with pytest.warns(UserWarning, match="must be floating .* got int32"), \
            sg.GradientTape() as tape:
        tape.watch(x)
        y = x * 2
    assert tape.gradient(y, x) is None


@HALVES
def test_half_and_float32_gradients_of_one_table_meet_in_float32(dtype):
    # the table read in its dtype and as float32: each contribution as it
    # came, summed in float32 (no rounding to half)
    table = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype)
    v = sg.Variable(table)
    with sg.GradientTape(persistent=True) as tape:
        wide = sg.reduce_sum(sg.gather(v, [1, 2], dtype="float32") * 1.0009765625)
        narrow = sg.reduce_sum(sg.gather(v, [2, 0]))
        dense = sg.reduce_sum(v)
        sparse_sparse = wide + sg.cast(narrow, np.float32)
        sparse_dense = wide + sg.cast(dense, np.float32)
        columns = sg.gather(v, [0, 1], axis=1, dtype="float32")   # dense float32
        dense_dense = sg.reduce_sum(columns[1:] * 1.0009765625) + \
            sg.cast(dense, np.float32)
    g = tape.gradient(sparse_sparse, v)
    assert isinstance(g, sg.IndexedSlices) and g.values.dtype == np.float32
    # 1 + 2**-10 is no bfloat16, and 2 + 2**-10 neither float16 nor bfloat16
    assert g.to_dense().numpy()[:, 0].tolist() == [1.0, 1.0009765625, 2.0009765625]
    for y in (sparse_dense, dense_dense):
        g = tape.gradient(y, v)
        assert g.dtype == np.float32
        assert g.numpy()[:, 0].tolist()[1:] == [2.0009765625] * 2
