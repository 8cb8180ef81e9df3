"""RaggedTensors whose flat values are float16 or bfloat16: the factories,
the values bit for bit, the conversions, sg.cast."""

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALVES = pytest.mark.parametrize("dtype", [BF16, F16], ids=["bfloat16", "float16"])


def _bits(array):
    return np.ascontiguousarray(array).view(np.uint16)


def _special(dtype):
    """A quiet NaN with a payload, -0.0, the smallest denormal, -inf, 1.5."""
    bits = {BF16: [0x7FC1, 0x8000, 0x0001, 0xFF80, 0x3FC0],
            F16: [0x7E01, 0x8000, 0x0001, 0xFC00, 0x3E00]}[dtype]
    return np.array(bits, np.uint16).view(dtype)


@HALVES
def test_factories_keep_the_flat_values_bit_for_bit(dtype):
    values = _special(dtype)
    made = [
        sg.RaggedTensor.from_row_splits(values, [0, 2, 2, 5]),
        sg.RaggedTensor.from_row_lengths(values, [2, 0, 3]),
        sg.RaggedTensor.from_value_rowids(values, [0, 0, 2, 2, 2], nrows=3),
        sg.RaggedTensor.from_row_splits(sg.constant(values), [0, 2, 2, 5]),
    ]
    for rt in made:
        assert rt.dtype == dtype and rt.flat_values.dtype == dtype
        np.testing.assert_array_equal(_bits(rt.flat_values.numpy()), _bits(values))
        np.testing.assert_array_equal(np.asarray(rt.row_splits), [0, 2, 2, 5])
    lists = made[0].to_list()
    assert [len(row) for row in lists] == [2, 0, 3]
    assert np.isnan(lists[0][0]) and lists[0][1] == 0.0 and lists[2][1] == -np.inf


@pytest.mark.parametrize("spelling", [ml_dtypes.bfloat16, "bfloat16", np.float16])
def test_constant_with_a_half_dtype_rounds_the_python_values(spelling):
    dtype = np.dtype(spelling)
    rt = sg.ragged.constant([[1.0, 1.00390625], [], [0.1, -0.0, 300.0]],
                            dtype=spelling)
    assert rt.dtype == dtype
    want = np.array([1.0, 1.00390625, 0.1, -0.0, 300.0]).astype(dtype)
    np.testing.assert_array_equal(_bits(rt.flat_values.numpy()), _bits(want))
    np.testing.assert_array_equal(np.asarray(rt.row_splits), [0, 2, 2, 5])
    nested = sg.ragged.constant([[[1.0, 2.0]], [[3.0, 4.0], [5.0, 6.0]]],
                                dtype=spelling, ragged_rank=1)
    assert nested.flat_values.dtype == dtype and nested.flat_values.shape == (3, 2)


@HALVES
def test_constant_infers_a_half_dtype_from_its_values(dtype):
    rows = [np.array([1.0, 2.0], dtype), np.array([3.0], dtype)]
    assert sg.ragged.constant(rows).dtype == dtype
    # a first scalar of a NumPy floating type gives its dtype
    assert sg.ragged.constant([[dtype.type(1.0), 2.0], [3.0]]).dtype == dtype
    # a half value is a float: no integer dtype takes it
    with pytest.raises(TypeError, match=f"cannot convert {dtype.name} values to "
                                        "dtype int32"):
        sg.ragged.constant(rows, dtype=np.int32)


@HALVES
def test_conversions_and_cast(dtype):
    rt = sg.RaggedTensor.from_row_splits(_special(dtype), [0, 2, 2, 5])
    dense = rt.to_tensor(default_value=7)
    assert dense.dtype == dtype
    want = np.full((3, 3), 7, dtype)
    want[0, :2] = _special(dtype)[:2]
    want[2] = _special(dtype)[2:]
    np.testing.assert_array_equal(_bits(dense.numpy()), _bits(want))
    back = sg.RaggedTensor.from_tensor(dense, lengths=[2, 0, 3])
    np.testing.assert_array_equal(_bits(back.flat_values.numpy()),
                                  _bits(_special(dtype)))
    wide = sg.cast(rt, np.float32)
    assert isinstance(wide, sg.RaggedTensor) and wide.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(wide.row_splits), [0, 2, 2, 5])
    finite = np.isfinite(_special(dtype).astype(np.float32))
    np.testing.assert_array_equal(wide.flat_values.numpy()[finite],
                                  _special(dtype).astype(np.float32)[finite])
    narrow = sg.cast(wide, dtype)
    assert narrow.dtype == dtype
    np.testing.assert_array_equal(_bits(narrow.flat_values.numpy())[finite],
                                  _bits(_special(dtype))[finite])
    swapped = rt.with_flat_values(np.arange(5, dtype=np.float32).astype(dtype))
    assert swapped.dtype == dtype and swapped.to_list() == [[0, 1], [], [2, 3, 4]]
