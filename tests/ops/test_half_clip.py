"""global_norm and the clip ops on float16 and bfloat16 inputs.

The reference of every norm is the float path on the inputs converted to
float32 (exact) with its float64 sum of squares, the norm rounded once to the
half type; of every clipped value, TensorFlow's half arithmetic (each
operation computed exactly and rounded once to the half type), written here
with float32 operations (exact for a product of two half values; for a
quotient, rounding to float32 first gives the same half value).  TensorFlow's
own results (tests/ops/data/half_reduce_golden.npz, from
generate_half_reduce_fixtures.py) pin the dtypes and the order of operations.
"""

import math
import os

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.ops.clip_ops import rows as clip_rows
from sparsegrad.ops.clip_ops import sum_of_squares

from .half_bits import assert_half_bits as assert_bits
from .half_bits import half_bits as bits

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALVES = [F16, BF16]
GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "data",
                              "half_reduce_golden.npz"))
A = [[1.0, 2.0], [3.0, -4.0]]
B = [2.0, 0.0, -1.0]
ROWS = [[1.0, 2.0], [3.0, 4.0], [5.0, -6.0]]


def golden(dtype, case, what):
    return GOLDEN[f"{np.dtype(dtype).name}/{case}/{what}"].astype(dtype)


def half(rng, shape, dtype, scale=3.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def wide_norm(arrays, dtype):
    """The reference norm: the float64 sum of squares of the arrays converted
    to float32 (sum_of_squares, the optimizers' float path; a ``(values,
    indices, n_rows)`` tuple for the rows of an IndexedSlices), rounded once."""
    items = [(a[0].astype(np.float32),) + a[1:] if isinstance(a, tuple)
             else np.asarray(a).astype(np.float32) for a in arrays]
    return np.asarray(math.sqrt(sum_of_squares(items)), dtype)


def half_scale(norm, clip_norm, dtype):
    """TensorFlow's clip_by_global_norm scale in the half type, each
    operation rounded to it."""
    n, c = np.asarray(norm, dtype), np.asarray(clip_norm, dtype)

    def r(x):
        return np.asarray(x, np.float32).astype(dtype)

    one = np.float32(1)
    inv_n, inv_c = r(one / n.astype(np.float32)), r(one / c.astype(np.float32))
    m = np.minimum(inv_n.astype(np.float32), inv_c.astype(np.float32))
    s = r(c.astype(np.float32) * m)
    return r(s.astype(np.float32) + r(n.astype(np.float32) - n.astype(np.float32)))


def times(x, scale, dtype):
    """``x * scale`` in the half type: the exact product rounded once."""
    return (np.asarray(x, dtype).astype(np.float32)
            * np.asarray(scale, dtype).astype(np.float32)).astype(dtype)


# -- TensorFlow's results ------------------------------------------------------


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_tensorflow_golden_norms_and_clips(dtype):
    a, b = np.asarray(A, dtype), np.asarray(B, dtype)
    norm = sg.global_norm([a, b])
    assert_bits(norm, golden(dtype, "global_norm", "out0"), dtype)
    (ca, cb), n2 = sg.clip_by_global_norm([a, b], 3.0)
    for got, k in ((ca, 0), (cb, 1), (n2, 2)):
        assert_bits(got, golden(dtype, "clip_by_global_norm", f"out{k}"), dtype)
    assert_bits(sg.clip_by_norm(a, 2.0), golden(dtype, "clip_by_norm", "out0"),
                dtype)
    assert_bits(sg.clip_by_norm(a, 2.0, axes=1),
                golden(dtype, "clip_by_norm_axes", "out0"), dtype)
    s = sg.IndexedSlices(np.asarray(ROWS, dtype), [4, 0, 2], dense_shape=(5, 2))
    clipped = sg.clip_by_norm(s, 3.0)
    assert isinstance(clipped, sg.IndexedSlices)
    np.testing.assert_array_equal(clipped.indices.numpy(), [4, 0, 2])
    assert_bits(clipped.values, golden(dtype, "clip_by_norm_slices", "out0"), dtype)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_tensorflow_golden_scale_with_use_norm(dtype):
    x = golden(dtype, "use_norm", "in0")
    y = golden(dtype, "use_norm", "in1")
    (cx, cy), norm = sg.clip_by_global_norm([x, y], 2.0,
                                            use_norm=np.asarray(7.3, dtype))
    assert_bits(cx, golden(dtype, "use_norm", "out0"), dtype)
    assert_bits(cy, golden(dtype, "use_norm", "out1"), dtype)
    assert norm.dtype == dtype
    scale = half_scale(np.asarray(7.3, dtype), 2.0, dtype)
    assert_bits(cx, times(x, scale, dtype), dtype)
    # a float32 use_norm with a half and a float32 tensor: each keeps its dtype
    z = GOLDEN[f"{dtype.name}/use_norm_mixed/in1"]
    use = sg.constant(np.float32(7.3))
    (mx, mz), n32 = sg.clip_by_global_norm([x, z], 2.0, use_norm=use)
    assert_bits(mx, golden(dtype, "use_norm_mixed", "out0"), dtype)
    assert mz.dtype == np.float32 and n32.dtype == np.float32
    np.testing.assert_array_equal(mz.numpy(),
                                  GOLDEN[f"{dtype.name}/use_norm_mixed/out1"])


# -- global_norm -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_global_norm_is_the_wide_norm_rounded_once(dtype, rng):
    a, b = half(rng, (40, 7), dtype), half(rng, (33,), dtype)
    vals = half(rng, (6, 7), dtype)
    s = sg.IndexedSlices(vals, [5, 1, 5, 0, 1, 9], dense_shape=(10, 7))
    norm = sg.global_norm([a, None, s, sg.constant(b)])
    assert norm.dtype == dtype
    expected = wide_norm([a, (vals, np.array([5, 1, 5, 0, 1, 9]), 10), b], dtype)
    assert_bits(norm, expected, dtype)
    # with distinct indices, also the float64 norm of the upcast inputs
    s2 = sg.IndexedSlices(vals, [5, 1, 4, 0, 2, 9], dense_shape=(10, 7))
    n64 = sg.global_norm([a.astype(np.float64), vals.astype(np.float64),
                          b.astype(np.float64)]).numpy()
    assert_bits(sg.global_norm([a, s2, b]), np.asarray(n64, dtype), dtype)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_repeated_rows_are_summed_in_float32_before_squaring(dtype):
    # 1 + tiny (the next half value after 1) and -1: their sum, exact in
    # float32, is the represented row (not the squares of the raw rows)
    tiny = {F16: 2.0**-10, BF16: 2.0**-7}[dtype]
    vals = np.array([[1 + tiny], [-1.0]], dtype)
    s = sg.IndexedSlices(vals, [3, 3], dense_shape=(4, 1))
    assert_bits(sg.global_norm([s]), np.asarray(tiny, dtype), dtype)
    clipped = sg.clip_by_norm(s, tiny / 2)  # the row's norm is tiny: halved
    assert_bits(clipped.values, vals.astype(np.float32) * np.float32(0.5), dtype)


def test_wide_accumulation_does_not_overflow_float16():
    # 100 * 300**2 overflows float16 (TensorFlow's half sum gives inf)
    x = np.full(100, 300.0, np.float16)
    assert_bits(sg.global_norm([x]), np.float16(3000.0), F16)
    assert_bits(sg.clip_by_norm(x, 30.0), np.full(100, 3.0), F16)
    # a norm past float16's range is inf, and clipping by it gives NaN
    big = np.full(4, 60000.0, np.float16)
    assert np.isposinf(sg.global_norm([big]).numpy())
    (c,), _ = sg.clip_by_global_norm([big], 1.0)
    assert np.isnan(c.numpy()).all()


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_non_finite_inputs(dtype):
    inf = np.array([np.inf, 1.0], dtype)
    nan = np.array([np.nan, 1.0], dtype)
    assert np.isposinf(sg.global_norm([inf]).numpy())
    assert np.isnan(sg.global_norm([nan]).numpy())
    for t in (inf, nan):
        clipped, norm = sg.clip_by_global_norm([t, np.ones(2, dtype)], 1.0)
        assert norm.dtype == dtype
        for c in clipped:
            assert c.dtype == dtype and np.isnan(c.numpy()).all()
    # clip_by_norm: an inf norm zeroes the finite elements (as the float path)
    np.testing.assert_array_equal(
        bits(sg.clip_by_norm(inf, 1.0)),
        bits(sg.clip_by_norm(inf.astype(np.float32), 1.0).numpy().astype(dtype)))


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_empty_inputs(dtype):
    empty = np.zeros((0, 3), dtype)
    assert_bits(sg.global_norm([empty]), 0.0, dtype)
    assert sg.global_norm([]).dtype == np.float32
    (c,), norm = sg.clip_by_global_norm([empty], 1.0)
    assert c.dtype == dtype and c.shape == (0, 3)
    assert_bits(norm, 0.0, dtype)
    out = sg.clip_by_norm(empty, 1.0)
    assert out.dtype == dtype and out.shape == (0, 3)
    s = sg.IndexedSlices(np.zeros((0, 2), dtype), np.zeros(0, np.int64),
                         dense_shape=(4, 2))
    assert_bits(sg.global_norm([s]), 0.0, dtype)
    assert sg.clip_by_norm(s, 1.0).values.dtype == dtype


# -- clip_by_global_norm and clip_by_norm -----------------------------------------


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_clip_by_global_norm_applies_the_half_scale(dtype, rng):
    a, vals = half(rng, (20, 5), dtype), half(rng, (4, 5), dtype)
    s = sg.IndexedSlices(vals, [2, 7, 2, 0], dense_shape=(8, 5))
    (ca, cs), norm = sg.clip_by_global_norm([a, s], 2.5)
    expected_norm = wide_norm([a, (vals, np.array([2, 7, 2, 0]), 8)], dtype)
    assert_bits(norm, expected_norm, dtype)
    scale = half_scale(expected_norm, 2.5, dtype)
    assert_bits(ca, times(a, scale, dtype), dtype)
    assert isinstance(cs, sg.IndexedSlices)
    assert_bits(cs.values, times(vals, scale, dtype), dtype)
    np.testing.assert_array_equal(cs.indices.numpy(), [2, 7, 2, 0])


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("axes", [None, 1, (0, 2)])
def test_clip_by_norm_rounds_like_tensorflow(dtype, axes, rng):
    x = half(rng, (6, 4, 3), dtype)
    c = np.asarray(2.75, dtype)
    out = sg.clip_by_norm(x, 2.75, axes=axes)
    x64 = x.astype(np.float64)
    ax = tuple(range(3)) if axes is None else np.atleast_1d(axes)
    norm = np.sqrt((x64 * x64).sum(axis=tuple(ax), keepdims=True)).astype(dtype)
    if axes is None:  # the kernel's sum: the same norm once rounded
        assert_bits(norm.reshape(()), wide_norm([x], dtype), dtype)
    divisor = np.maximum(norm, c).astype(np.float32)
    product = (x.astype(np.float32) * c.astype(np.float32)).astype(dtype)
    expected = (product.astype(np.float32) / divisor).astype(dtype)
    assert_bits(out, expected, dtype)


def test_clip_by_average_norm_on_half():
    x = np.array([[-3.0, 0.0], [4.0, 0.0]], np.float16)
    with pytest.warns(DeprecationWarning):
        out = sg.clip_by_average_norm(x, 0.5)  # clip_by_norm(x, 2.0)
    assert_bits(out, sg.clip_by_norm(x, 2.0), F16)


# -- determinism and the pieces of large inputs ------------------------------------


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_bits_do_not_depend_on_threads(dtype, rng):
    a = half(rng, (300, 257), dtype)
    vals = half(rng, (900, 64), dtype)
    ids = rng.integers(0, 200, 900)
    results = []
    for n_threads in (1, 2, 3):
        sg.set_num_threads(n_threads)
        s = sg.IndexedSlices(vals, ids, dense_shape=(200, 64))
        (ca, cs), norm = sg.clip_by_global_norm([a, s], 1.0)
        results.append([bits(norm), bits(ca), bits(cs.values),
                        bits(sg.clip_by_norm(a, 1.0)), bits(sg.clip_by_norm(s, 1.0)
                                                            .values)])
    for other in results[1:]:
        for x, y in zip(results[0], other):
            np.testing.assert_array_equal(x, y)


def _recording_kernel(monkeypatch):
    """Record the entries of every sum-of-squares kernel call."""
    kernels = sg.framework.backend.backend_of(np.zeros(1)).kernels("clip")
    calls = []
    original = kernels.sum_of_squares_list

    def recording(entries, n_threads):
        calls.append([e[0].size for e in entries])
        return original(entries, n_threads)

    monkeypatch.setattr(kernels, "sum_of_squares_list", recording)
    return calls


def test_large_dense_half_tensors_are_converted_piece_by_piece(monkeypatch, rng):
    monkeypatch.setattr(clip_rows, "HALF_BATCH", 8192)
    a = half(rng, (5, 4000), F16)  # 20,000 elements: pieces of 8192
    b = half(rng, 100, F16)
    calls = _recording_kernel(monkeypatch)
    norm = sg.global_norm([a, b])
    assert calls == [[8192], [8192], [3616, 100]]
    flat = a.reshape(-1).astype(np.float32)
    total = (sum_of_squares([flat[:8192]]) + sum_of_squares([flat[8192:16384]])
             + sum_of_squares([flat[16384:], b.astype(np.float32)]))
    assert_bits(norm, np.asarray(math.sqrt(total), F16), F16)
    n64 = sg.global_norm([a.astype(np.float64), b.astype(np.float64)]).numpy()
    assert abs(float(norm.numpy()) - n64) <= 2.0**-10 * n64
    # at most HALF_BATCH converted elements: one call, the converted inputs' bits
    small = half(rng, (2, 4000), F16)
    expected = wide_norm([small], F16)
    calls.clear()
    assert_bits(sg.global_norm([small]), expected, F16)
    assert calls == [[8000]]


def test_float_inputs_keep_one_call(monkeypatch, rng):
    monkeypatch.setattr(clip_rows, "HALF_BATCH", 8192)
    calls = _recording_kernel(monkeypatch)
    x = rng.standard_normal(20000).astype(np.float32)
    sg.global_norm([x, x])
    assert calls == [[20000, 20000]]


# -- sum_of_squares (the optimizers') and gradients --------------------------------


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_sum_of_squares_of_half_gradients(dtype, rng):
    g = half(rng, (30, 4), dtype)
    vals = half(rng, (5, 4), dtype)
    ids = np.array([3, 1, 3, 3, 0])
    half_total = sum_of_squares([g, (vals, ids, 10), None])
    wide_total = sum_of_squares([g.astype(np.float32),
                                 (vals.astype(np.float32), ids, 10)])
    assert half_total == wide_total
    mixed = sum_of_squares([g, g.astype(np.float32)])
    assert mixed == sum_of_squares([g.astype(np.float32)] * 2)


def test_float16_gradients_are_the_wide_gradients_rounded_once(rng):
    x = half(rng, (4, 3), F16)
    up = half(rng, (4, 3), F16)
    # (clip_norm exact in float16; the global scale is 1 for 1024 > the norm)
    for fn in (lambda t: sg.clip_by_norm(t, 2.0),
               lambda t: sg.clip_by_norm(t, 2.0, axes=1),
               lambda t: sg.clip_by_global_norm([t], 1024.0)[0][0]):
        v = sg.Variable(x)
        v64 = sg.Variable(x.astype(np.float64))
        with sg.GradientTape() as tape:
            y = fn(v)
        g = tape.gradient(y, v, output_gradients=sg.constant(up))
        with sg.GradientTape() as tape:
            y64 = fn(v64)
        g64 = tape.gradient(y64, v64, output_gradients=sg.constant(
            up.astype(np.float64)))
        assert_bits(g, g64.numpy().astype(F16), F16)
    v = sg.Variable(x)
    with sg.GradientTape() as tape:
        n = sg.global_norm([v])
    g = tape.gradient(n, v)
    x64 = x.astype(np.float64)
    assert_bits(g, x64 / np.sqrt((x64 * x64).sum()), F16)


# -- errors ------------------------------------------------------------------------


def test_errors_are_unchanged(rng):
    a16, a32 = np.ones(2, np.float16), np.ones(2, np.float32)
    bf = np.ones(2, BF16)
    with pytest.raises(InvalidArgumentError, match=r"t_list\[1\] has dtype float32 "
                       r"but t_list\[0\] has dtype float16"):
        sg.global_norm([a16, a32])
    with pytest.raises(InvalidArgumentError, match=r"t_list\[1\] has dtype bfloat16 "
                       r"but t_list\[0\] has dtype float16"):
        sg.clip_by_global_norm([a16, bf], 1.0)
    with pytest.raises(TypeError, match="clip_norm has dtype float32 but the norm "
                       "has dtype bfloat16"):
        sg.clip_by_global_norm([bf], sg.constant(np.float32(1.0)))
    with pytest.raises(InvalidArgumentError, match="norms need float16, bfloat16, "
                       "float32 or float64"):
        sg.clip_by_norm(np.ones(2, np.int32), 1.0)
    with pytest.raises(InvalidArgumentError, match="clip_norm must be a scalar"):
        sg.clip_by_norm(bf, np.ones(2))
    np.testing.assert_array_equal(bf.astype(np.float32), [1.0, 1.0])
