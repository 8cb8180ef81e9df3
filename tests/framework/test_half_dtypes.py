"""Tensors, Variables and IndexedSlices of float16 and bfloat16 (storage
types): creation, ``.numpy()``, ``.dtype``, ``sg.cast`` to and from them,
reading and assigning a Variable; and the ops that do not compute in
bfloat16 saying so."""

import re

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework.dtypes import can_cast_same_kind

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALVES = pytest.mark.parametrize("dtype", [BF16, F16], ids=["bfloat16", "float16"])


def _bits(array):
    """The uint16 (or wider) bits of `array`, to compare NaNs and zeros."""
    array = np.ascontiguousarray(array)
    return array.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[array.itemsize])


def _every(dtype):
    """Every value of a 16-bit dtype: NaN payloads, -0.0, denormals, infs."""
    return np.arange(2**16, dtype=np.uint16).view(dtype)


@HALVES
def test_constant_and_variable_keep_every_bit_pattern(dtype):
    values = _every(dtype).reshape(256, 256)
    for make in (sg.constant, sg.convert_to_tensor, sg.Variable):
        x = make(values)
        assert x.dtype == dtype and x.shape == (256, 256)
        got = x.numpy()
        assert got.dtype == dtype
        np.testing.assert_array_equal(_bits(got), _bits(values))
    v = sg.Variable(values)
    read = v.read_value()
    assert isinstance(read, sg.Tensor) and read.dtype == dtype
    np.testing.assert_array_equal(_bits(read.numpy()), _bits(values))
    np.testing.assert_array_equal(_bits(v.value().numpy()), _bits(values))
    values[0, 0] = 1                     # the Variable holds its own copy
    assert _bits(v.numpy())[0, 0] == 0
    assert f"dtype={dtype.name}" in repr(v)


@pytest.mark.parametrize("spelling", [ml_dtypes.bfloat16, BF16, "bfloat16"])
def test_constant_and_variable_with_dtype_bfloat16(spelling):
    data = [1.0, 1.00390625, 1.01171875, -0.0, 3.0e38, 3.5e38, 1e-40]
    want = np.asarray(data, BF16)
    # ties to even: 1 + 2**-8 -> 1, 1 + 3 * 2**-8 -> 1 + 2**-6; 3.5e38 -> inf
    assert _bits(want).tolist() == [0x3F80, 0x3F80, 0x3F82, 0x8000, 0x7F62, 0x7F80,
                                    0x0001]
    for make in (sg.constant, sg.Variable):
        with np.errstate(over="ignore"):      # 3.5e38, as for float32
            x = make(data, dtype=spelling)
        assert x.dtype == BF16
        np.testing.assert_array_equal(_bits(x.numpy()), _bits(want))
    assert float(sg.constant(2.5, dtype=spelling)) == 2.5


@HALVES
def test_variable_assign_from_every_dtype(dtype):
    v = sg.Variable(np.zeros(5, dtype))
    sources = [
        np.array([1.0, -2.5, 0.1, 65504.0, np.nan], np.float32),
        np.array([1.0, -2.5, 0.1, 65504.0, -np.inf], np.float64),
        np.array([1.0, -2.5, 0.1, 65504.0, -0.0], np.float16),
        np.array([1.0, -2.5, 0.1, 3e38, -0.0], BF16),
        np.array([1, -2, 3, 4, 5], np.int32),
        np.array([True, False, True, False, True]),
    ]
    for source in sources:
        v.assign(source)
        with np.errstate(over="ignore"):
            want = source.astype(np.float32).astype(dtype) if source.dtype == BF16 \
                else source.astype(dtype)
        np.testing.assert_array_equal(_bits(v.numpy()), _bits(want),
                                      err_msg=str(source.dtype))
    v.assign([0.5, 1.5, 2.5, 3.5, 4.5])
    np.testing.assert_array_equal(v.numpy(), np.array([0.5, 1.5, 2.5, 3.5, 4.5]))
    v.assign(7.0)
    np.testing.assert_array_equal(v.numpy(), np.full(5, 7.0))


def test_a_float_variable_takes_a_bfloat16_value():
    value = np.array([1.5, -0.0, np.inf, 2.0**-133], BF16)
    for dtype in (np.float32, np.float64):
        v = sg.Variable(np.zeros(4, dtype))
        v.assign(value)
        np.testing.assert_array_equal(v.numpy(), value.astype(np.float32))
        assert np.signbit(v.numpy()[1])


@HALVES
def test_assign_add_and_sub_round_once_per_op(dtype):
    a = np.array([256.0, 1.0, -3.0, 1e-3], dtype)
    b = np.array([1.0, 2.0**-9, 0.5, 1e-3], dtype)
    v = sg.Variable(a)
    v.assign_add(b)
    # computed in float32, rounded to the storage type once (TensorFlow's
    # half arithmetic); 256 + 1 is a tie in bfloat16 that stays 256
    want = (a.astype(np.float32) + b.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(_bits(v.numpy()), _bits(want))
    v.assign_sub(b)
    want = (want.astype(np.float32) - b.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(_bits(v.numpy()), _bits(want))


def test_refused_assignments_change_nothing():
    v = sg.Variable(np.array([1.0, 2.0, np.nan], BF16), name="h")
    before = _bits(v.numpy()).copy()
    ints = sg.Variable(np.array([1, 2, 3], np.int32), name="i")
    cases = [
        (lambda: ints.assign(np.ones(3, BF16)),
         "assign: a value of dtype bfloat16 cannot be cast to the dtype int32 of "
         "variable 'i'"),
        (lambda: v.assign(np.ones(4, np.float32)), "cannot update variable 'h'"),
        (lambda: v.assign(np.ones(3, np.complex64)), "complex dtype complex64"),
        (lambda: v.assign(np.ones(3, ml_dtypes.float8_e4m3fn)),
         "dtype float8_e4m3fn is not numeric"),
    ]
    for call, fragment in cases:
        with pytest.raises(InvalidArgumentError, match=re.escape(fragment)):
            call()
    np.testing.assert_array_equal(_bits(v.numpy()), before)
    np.testing.assert_array_equal(ints.numpy(), [1, 2, 3])


@HALVES
def test_scatter_updates_of_a_half_variable(dtype):
    v = sg.Variable(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype))
    rows = sg.IndexedSlices(np.array([[0.5, -0.0], [10.0, np.inf]], dtype),
                            np.array([2, 0]), dense_shape=(3, 2))
    v.scatter_update(rows)
    np.testing.assert_array_equal(
        _bits(v.numpy()),
        _bits(np.array([[10.0, np.inf], [3.0, 4.0], [0.5, -0.0]], dtype)))
    v.scatter_add(sg.IndexedSlices(np.array([[1.0, 1.0]], np.float32),
                                   np.array([1]), dense_shape=(3, 2)))
    v.scatter_sub(sg.IndexedSlices(np.array([[0.25, 0.25]], dtype), np.array([2]),
                                   dense_shape=(3, 2)))
    np.testing.assert_array_equal(
        v.numpy().astype(np.float32),
        [[10.0, np.inf], [4.0, 5.0], [0.25, -0.25]])
    assert v.dtype == dtype


@HALVES
def test_indexed_slices_of_half_values(dtype):
    values = np.array([[1.0, -0.0], [2.0, np.nan], [256.0, 1.0]], dtype)
    s = sg.IndexedSlices(values=values, indices=np.array([3, 0, 1]),
                         dense_shape=(4, 2))
    assert s.dtype == dtype and s.values.dtype == dtype
    np.testing.assert_array_equal(_bits(s.values.numpy()), _bits(values))
    dense = s.to_dense()
    assert dense.dtype == dtype
    # the rows are summed into zeros (0 + -0.0 is 0.0, as TensorFlow's sum)
    want = np.zeros((4, 2), dtype)
    want[[3, 0, 1]] += values
    np.testing.assert_array_equal(_bits(dense.numpy()), _bits(want))
    from_tensor = sg.IndexedSlices(values=sg.constant(values),
                                   indices=np.array([0, 1, 2]), dense_shape=(3, 2))
    assert from_tensor.dtype == dtype
    scaled = s * 2
    assert scaled.dtype == dtype
    np.testing.assert_array_equal(scaled.values.numpy().astype(np.float32),
                                  values.astype(np.float32) * 2)
    other = BF16 if dtype == F16 else F16
    assert (s * np.array(0.5, other)).dtype == dtype   # a float scales any float
    assert (-s).dtype == dtype


def test_an_integer_indexed_slices_refuses_a_bfloat16_factor():
    s = sg.IndexedSlices(np.array([1, 2], np.int32), np.array([0, 1]),
                         dense_shape=(2,))
    with pytest.raises(InvalidArgumentError,
                       match="a factor of dtype bfloat16 cannot scale values of "
                             "dtype int32"):
        s * np.array(2, BF16)


# -- cast ----------------------------------------------------------------------


def test_cast_to_bfloat16_rounds_to_nearest_even():
    cases = {   # float32 bits -> bfloat16 bits
        0x3F800000: 0x3F80,   # 1
        0x3F808000: 0x3F80,   # 1 + 2**-8, a tie: even
        0x3F818000: 0x3F82,   # 1 + 3 * 2**-8, a tie: even
        0x3F808001: 0x3F81,   # just above the tie
        0xBF80C000: 0xBF81,   # -(1 + 3 * 2**-9)
        0x7F7FFFFF: 0x7F80,   # the largest float32 rounds to inf
        0x80000000: 0x8000,   # -0.0
        0x00010000: 0x0001,   # the smallest bfloat16 denormal
        0x7F800000: 0x7F80,
        0xFF800000: 0xFF80,
        0x7FC12345: 0x7FC0,   # NaN: the quiet NaN of its sign
        0xFF812345: 0xFFC0,
    }
    source = np.array(list(cases), np.uint32).view(np.float32)
    for x in (source, sg.constant(source)):
        got = sg.cast(x, ml_dtypes.bfloat16)
        assert got.dtype == BF16
        assert _bits(got.numpy()).tolist() == list(cases.values())
    got64 = sg.cast(source[:10].astype(np.float64), "bfloat16")
    assert _bits(got64.numpy()).tolist() == list(cases.values())[:10]


def test_cast_from_bfloat16_is_exact_to_wider_floats():
    every = _every(BF16)
    f32 = sg.cast(sg.constant(every), np.float32).numpy()
    assert f32.dtype == np.float32
    # a bfloat16 is the top half of a float32: NaN payloads, -0.0, denormals
    np.testing.assert_array_equal(_bits(f32), every.view(np.uint16).astype(
        np.uint32) << 16)
    f64 = sg.cast(sg.constant(every), np.float64).numpy()
    finite = ~np.isnan(f32)
    np.testing.assert_array_equal(f64[finite], f32[finite].astype(np.float64))
    assert np.isnan(f64[~finite]).all()
    np.testing.assert_array_equal(np.signbit(f64), np.signbit(f32))
    back = sg.cast(sg.constant(f32), BF16).numpy()
    np.testing.assert_array_equal(_bits(back)[finite], every.view(np.uint16)[finite])


def test_cast_between_the_two_halves_and_to_integers_and_bool():
    every = _every(BF16)
    f32 = every.astype(np.float32)
    finite = np.isfinite(f32)
    with np.errstate(over="ignore"):
        want16 = f32.astype(np.float16)          # one rounding from the exact value
    got16 = sg.cast(every, np.float16).numpy()
    assert got16.dtype == F16
    np.testing.assert_array_equal(_bits(got16)[finite], _bits(want16)[finite])
    assert np.isnan(got16[np.isnan(f32)]).all()
    halves = _every(F16)
    got = sg.cast(halves, BF16).numpy()
    h32 = halves.astype(np.float32)
    ok = ~np.isnan(h32)
    with np.errstate(invalid="ignore"):
        want = h32.astype(BF16)
    np.testing.assert_array_equal(_bits(got)[ok], _bits(want)[ok])
    # to integers: truncation toward zero, as from float32
    small = every[finite & (np.abs(f32) < 2**31)]
    np.testing.assert_array_equal(sg.cast(small, np.int32).numpy(),
                                  small.astype(np.float32).astype(np.int32))
    np.testing.assert_array_equal(sg.cast(np.array([1.75, -1.75], BF16), "int64")
                                  .numpy(), [1, -1])
    np.testing.assert_array_equal(
        sg.cast(np.array([0.0, -0.0, 2.0**-133, np.nan], BF16), bool).numpy(),
        [False, False, True, True])
    np.testing.assert_array_equal(_bits(sg.cast([3, -7, 300], BF16).numpy()),
                                  _bits(np.array([3.0, -7.0, 300.0], BF16)))


def test_cast_refuses_a_dtype_sparsegrad_does_not_hold():
    for dtype, fragment in ((ml_dtypes.float8_e4m3fn, "float8_e4m3fn is not numeric"),
                            (object, "dtype object is not numeric"),
                            (np.complex64, "complex dtype complex64")):
        with pytest.raises(InvalidArgumentError, match=re.escape(fragment)) as info:
            sg.cast(sg.constant([1.0]), dtype)
        assert str(info.value).startswith("cast: ")


def test_can_cast_same_kind_counts_bfloat16_a_float():
    for a in (BF16, F16, np.float32, np.float64):
        for b in (BF16, F16, np.float32, np.float64):
            assert can_cast_same_kind(a, b)
        for i in (np.int8, np.int32, np.int64, np.uint8, np.bool_):
            assert can_cast_same_kind(i, a)
            assert not can_cast_same_kind(a, i)
    assert can_cast_same_kind(np.int32, np.int64)
    assert not can_cast_same_kind(np.int64, np.bool_)


# -- ops that do not compute in bfloat16 ---------------------------------------


def test_binary_ops_take_one_dtype():
    x = sg.constant(np.array([1.0, 2.0], BF16))
    for other in (np.float32, np.float16):
        with pytest.raises(InvalidArgumentError,
                           match=f"add: x has dtype bfloat16 but y has dtype "
                                 f"{np.dtype(other).name}"):
            x + sg.constant(np.ones(2, other))
    # an array operand takes the Tensor's dtype; a float array never an int's
    got = x + np.array([0.5, 0.25], np.float32)
    assert got.dtype == BF16 and got.numpy().tolist() == [1.5, 2.25]
    with pytest.raises(InvalidArgumentError,
                       match="add: y has dtype bfloat16 but the other operand is "
                             "a int64 Tensor"):
        sg.constant(np.array([1, 2])) + np.array([0.5, 0.5], BF16)


@pytest.mark.parametrize("op,arg", [
    (lambda x: sg.sqrt(x), "sqrt: x"),
    (lambda x: sg.exp(x), "exp: x"),
    (lambda x: sg.math.is_nan(x), "is_nan: x"),
    (lambda x: sg.nn.relu(x), "relu: features"),
    (lambda x: sg.math.reduce_variance(x), "reduce_variance: input_tensor"),
])
def test_ops_without_bfloat16_arithmetic_say_so(op, arg):
    x = sg.constant(np.array([1.0, 4.0], BF16))
    name = arg.split(":")[0]
    with pytest.raises(InvalidArgumentError,
                       match=re.escape(f"{arg} has dtype bfloat16, which {name} "
                                       "does not compute in; cast it to float32 "
                                       "first (sg.cast)")):
        op(x)
    # the way out the message gives works
    assert op(sg.cast(x, np.float32)).dtype in (np.float32, np.bool_)
