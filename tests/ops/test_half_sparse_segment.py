"""Sparse segment reductions of float16 and bfloat16 data.

TensorFlow 2.21 returns the data's dtype, and its gradient too
(``tf.sparse.segment_sum/mean/sqrt_n`` on float16 and bfloat16), and sums
the rows in float32: ``2048 + 1 + 1`` in float16 gives 2050 (258 for ``256
+ 1 + 1`` in bfloat16), and the mean of ``2048, 1, 1, 1`` is 513 in float16
(65 for ``256, 1, 1, 1`` in bfloat16).  Here each result is the float32
result of the upcast data rounded once (bit for bit), or that float32 result
itself with ``dtype=float32``; the gradients likewise.
"""

import re

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError

from .half_bits import assert_same_bits as _assert_same_bits

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
HALVES = pytest.mark.parametrize("half", [BF16, F16], ids=["bfloat16", "float16"])
OUT = pytest.mark.parametrize("dtype", [None, "float32"], ids=["half", "float32"])
OPS = pytest.mark.parametrize("op", [sg.sparse.segment_sum, sg.sparse.segment_mean,
                                     sg.sparse.segment_sqrt_n],
                              ids=["sum", "mean", "sqrt_n"])


def _case(half, seed=0):
    rng = np.random.default_rng(seed)
    data = (rng.standard_normal((9, 2, 3)) * 5).astype(half)
    indices = np.array([4, 0, 4, 8, 1, 1, 1, 7, 3, 4])
    segment_ids = np.array([0, 0, 0, 2, 2, 3, 3, 3, 3, 5])
    return data, indices, segment_ids


def _forward_and_gradient(op, data, indices, segment_ids, dtype, upstream=None):
    v = sg.Variable(data)
    with sg.GradientTape() as tape:
        y = op(v, indices, segment_ids, num_segments=7, dtype=dtype)
    if upstream is None:
        rng = np.random.default_rng(1)
        upstream = rng.standard_normal(y.shape)
    g = tape.gradient(y, v, output_gradients=sg.constant(upstream.astype(y.dtype)))
    return y, g, upstream


@HALVES
@OUT
@OPS
def test_half_data_is_reduced_in_float32_and_rounded_once(half, dtype, op):
    data, indices, segment_ids = _case(half)
    y, g, upstream = _forward_and_gradient(op, data, indices, segment_ids, dtype)
    y32, g32, _ = _forward_and_gradient(op, data.astype(np.float32), indices,
                                        segment_ids, None, upstream.astype(y.dtype))
    out = half if dtype is None else F32
    assert y.dtype == out
    _assert_same_bits(y.numpy(), y32.numpy().astype(out))
    assert isinstance(g, sg.IndexedSlices) and g.dense_shape == data.shape
    assert g.indices.numpy().tolist() == [0, 1, 3, 4, 7, 8]   # distinct, sorted
    np.testing.assert_array_equal(g.indices.numpy(), g32.indices.numpy())
    assert g.values.dtype == out
    _assert_same_bits(g.values.numpy(), g32.values.numpy().astype(out))


@pytest.mark.parametrize("half,big,sum_,mean", [(F16, 2048.0, 2050.0, 513.0),
                                                (BF16, 256.0, 258.0, 65.0)])
def test_the_values_tensorflow_gives(half, big, sum_, mean):
    data = np.array([[big], [1.0], [1.0]], half)
    got = sg.sparse.segment_sum(data, [0, 1, 2], [0, 0, 0])
    assert got.dtype == half and got.numpy().tolist() == [[sum_]]
    got = sg.sparse.segment_mean(data, [0, 1, 2, 1], [0, 0, 0, 0])
    assert got.dtype == half and got.numpy().tolist() == [[mean]]
    wide = sg.sparse.segment_mean(data, [0, 1, 2, 1], [0, 0, 0, 0], dtype=np.float32)
    assert wide.dtype == F32 and wide.numpy().tolist() == [[(big + 3) / 4]]


@HALVES
@OPS
def test_the_same_bits_on_one_two_and_three_threads(half, op):
    rng = np.random.default_rng(5)
    data = (rng.standard_normal((400, 33)) * 10).astype(half)
    indices = rng.integers(0, 400, 6000)
    segment_ids = np.sort(rng.integers(0, 150, 6000))
    old = sg.get_num_threads()
    runs = []
    try:
        for n in (1, 2, 3):
            sg.set_num_threads(n)
            v = sg.Variable(data)
            with sg.GradientTape() as tape:
                y = op(v, indices, segment_ids)
            runs.append((y.numpy(), tape.gradient(y, v).values.numpy()))
    finally:
        sg.set_num_threads(old)
    for y, g in runs[1:]:
        _assert_same_bits(y, runs[0][0])
        _assert_same_bits(g, runs[0][1])


@HALVES
def test_a_half_array_is_read_in_place(half):
    data, indices, segment_ids = _case(half)
    before = data.copy()
    got = sg.sparse.segment_sqrt_n(data, indices, segment_ids, dtype="float32")
    want = sg.sparse.segment_sqrt_n(data.astype(np.float32), indices, segment_ids)
    _assert_same_bits(got.numpy(), want.numpy())
    _assert_same_bits(data, before)


@pytest.mark.parametrize("data_dtype,dtype", [
    (F16, "float64"), (BF16, F16), ("float64", "float32"), ("int32", "float32"),
    ("float32", "nope"),
])
def test_another_dtype_is_refused(data_dtype, dtype):
    shown = "'nope'" if dtype == "nope" else np.dtype(dtype).name
    data_dtype = np.dtype(data_dtype)
    v = sg.Variable(np.arange(6).reshape(3, 2).astype(data_dtype))
    before = v.numpy().copy()
    with pytest.raises(InvalidArgumentError, match=re.escape(
            f"sparse_segment_sum: dtype must be None, the table's dtype "
            f"({data_dtype}) or float32 for a float16 or bfloat16 table, got "
            f"{shown}")):
        sg.sparse.segment_sum(v, [0, 2], [0, 1], dtype=dtype)
    np.testing.assert_array_equal(v.numpy(), before)


def test_integer_sums_keep_their_dtype():
    data = np.array([[1, 2], [3, 4]], np.int32)
    got = sg.sparse.segment_sum(data, [1, 0, 1], [0, 0, 1], dtype=np.int32)
    assert got.dtype == np.int32 and got.numpy().tolist() == [[4, 6], [3, 4]]
    with pytest.raises(InvalidArgumentError, match="floating-point tensor"):
        sg.sparse.segment_mean(data, [0], [0], dtype=np.int32)


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)],
                         ids=["float16", "bfloat16"])
@pytest.mark.parametrize("width", [1, 7, 8, 13, 64, 70, 130])
def test_the_half_bag_kernel_of_both_builds_reads_rows_as_float32(dtype, width):
    # sparse_segment_reduce_half of the baseline and AVX2 builds (F16C's
    # eight-wide conversions) against the float32 kernel on the upcast table
    from sparsegrad._kernels import parallel, segment
    builds = [segment]
    if parallel.cpu_has_avx2():
        from sparsegrad._kernels import segment_avx2
        builds.append(segment_avx2)
    rng = np.random.default_rng(width)
    bits = rng.integers(0, 2**16, (50, width), dtype=np.uint64).astype(np.uint16)
    table = bits.view(dtype)
    table[~np.isfinite(table.astype(np.float32))] = 1     # finite rows
    ids = rng.integers(0, 50, 300).astype(np.int64)
    splits = np.array([0, 0, 5, 90, 91, 300], np.int64)
    weights = rng.normal(size=300).astype(np.float32)
    for combiner in (0, 1, 2):
        for w in (np.zeros(0, np.float32), weights):
            want = np.empty((5, width), np.float32)
            segment.sparse_segment_reduce(table.astype(np.float32), ids, w, splits,
                                          combiner, want, 2)
            for build in builds:
                got = np.full((5, width), np.nan, np.float32)
                rounded = np.zeros((5, width), np.uint16)
                build.sparse_segment_reduce_half(table.view(np.uint16), ids, w, splits,
                                                 combiner, got, rounded,
                                                 dtype != np.float16, 2)
                np.testing.assert_array_equal(got.view(np.uint32),
                                              want.view(np.uint32))
                # rounded once to the table's type (sg_half.h's nearest)
                np.testing.assert_array_equal(rounded,
                                              want.astype(dtype).view(np.uint16))
