"""The clip kernels against NumPy references, across dtypes and thread counts."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hynp

from sparsegrad._kernels import clip as K
from sparsegrad.framework import sparse_rows

FLOATS = [np.float32, np.float64]
THREADS = [1, 2, 3, 4]


def readonly(a):
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


def grouped(values, indices):
    """A kernel entry for IndexedSlices rows (values, indices)."""
    _, order, starts = sparse_rows.group_rows(np.asarray(indices, np.int64),
                                              int(np.max(indices)))
    return (readonly(values.reshape(len(indices), -1)), order, starts)


def represented_squares(values, indices):
    """sum of squares of the dense tensor: rows of one index summed in order,
    in the values' dtype, from zero (np.add.at is sequential)."""
    dense = np.zeros((int(np.max(indices)) + 1,) + values.shape[1:], values.dtype)
    np.add.at(dense, indices, values)
    return float(np.sum(dense.astype(np.float64) ** 2))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [0, 1, 3, 4, 4095, 4096, 4097, 100_003])
def test_dense_sum_of_squares_is_thread_invariant(dtype, n, rng):
    x = readonly(rng.standard_normal(n).astype(dtype))
    got = [K.sum_of_squares_list([(x,)], t) for t in THREADS]
    assert len({g.hex() for g in got}) == 1, "same bits for any thread count"
    np.testing.assert_allclose(got[0], np.sum(x.astype(np.float64) ** 2), rtol=1e-12)


def test_mixed_list_of_dtypes_shapes_and_slices(rng):
    dense32 = readonly(rng.standard_normal((300, 70)).astype(np.float32))
    dense64 = readonly(rng.standard_normal((5, 4, 3)))
    empty = readonly(np.zeros((0, 3), np.float32))
    scalar = readonly(np.array(2.5, np.float32))
    ids = rng.integers(0, 500, 20_000)                 # many repeats
    values = rng.standard_normal((20_000, 3)).astype(np.float32)
    entries = [(dense32,), (dense64,), (empty,), (scalar,), grouped(values, ids)]
    expected = (
        np.sum(dense32.astype(np.float64) ** 2)
        + np.sum(dense64 ** 2)
        + 6.25
        + represented_squares(values, ids)
    )
    got = [K.sum_of_squares_list(entries, t) for t in THREADS]
    assert len({g.hex() for g in got}) == 1
    np.testing.assert_allclose(got[0], expected, rtol=1e-12)


def test_repeated_rows_are_summed_before_squaring():
    values = np.array([[3.0], [4.0], [1.0]])
    entry = grouped(values, [5, 5, 2])
    assert K.sum_of_squares_list([entry], 1) == 49.0 + 1.0


def test_wide_rows_one_group_per_block(rng):
    # Rows wider than a block: each group is a block of its own.
    values = rng.standard_normal((6, 5000))
    ids = [3, 1, 3, 0, 1, 3]
    got = [K.sum_of_squares_list([grouped(values, ids)], t) for t in THREADS]
    assert len({g.hex() for g in got}) == 1
    np.testing.assert_allclose(got[0], represented_squares(values, np.array(ids)),
                               rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    ids=hynp.arrays(np.int64, st.integers(1, 300), elements=st.integers(0, 20)),
    width=st.integers(1, 9),
    dtype=st.sampled_from(FLOATS),
    seed=st.integers(0, 2**32 - 1),
)
def test_grouped_squares_match_the_dense_tensor(ids, width, dtype, seed):
    values = np.random.default_rng(seed).standard_normal((ids.shape[0], width))
    values = values.astype(dtype)
    got = [K.sum_of_squares_list([grouped(values, ids)], t) for t in (1, 4)]
    assert got[0].hex() == got[1].hex()
    np.testing.assert_allclose(got[0], represented_squares(values, ids), rtol=1e-12)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("d", [1.0, 3.0])
def test_scale_is_elementwise_in_the_dtype(dtype, d, rng):
    x = readonly(rng.standard_normal(70_001).astype(dtype))
    c = float(dtype(0.7))
    expected = (x * dtype(c)) / dtype(d) if d != 1.0 else x * dtype(c)
    for t in THREADS:
        out = np.empty_like(x)
        K.scale(x, c, d, out, t)
        assert out.tobytes() == expected.tobytes()


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip_values_follows_numpy_minimum_then_maximum(dtype, rng):
    x = rng.standard_normal(50_000).astype(dtype) * 3
    x[:6] = [np.nan, np.inf, -np.inf, 1.0, -1.0, 0.5]
    x = readonly(x)
    lo_full = readonly(rng.standard_normal(50_000).astype(dtype) - 1)
    hi_full = readonly(lo_full + rng.uniform(-0.5, 3, 50_000).astype(dtype))
    for lo, hi in [
        (np.array([-1.0], dtype), np.array([1.0], dtype)),
        (lo_full, hi_full),
        (np.array([2.0], dtype), np.array([-2.0], dtype)),     # min > max
        (np.array([np.nan], dtype), np.array([1.0], dtype)),
    ]:
        expected = np.maximum(np.minimum(x, hi), lo)
        for t in THREADS:
            out = np.empty_like(x)
            K.clip_values(x, readonly(lo), readonly(hi), out, t)
            np.testing.assert_array_equal(out, expected)


def _nan(dtype, payload):
    """A quiet NaN of `dtype` whose payload is `payload` (told apart by bits)."""
    if dtype == np.float32:
        return np.array([0x7FC00000 | payload], np.uint32).view(np.float32)[0]
    return np.array([0x7FF8000000000000 | payload], np.uint64).view(np.float64)[0]


def clip_edge_cases(dtype):
    """(x, lo, hi, expected) of clip_values' rule on ties of signed zeros and
    NaNs of two payloads: minimum(x, hi) then maximum(., lo), each keeping
    its first operand on a tie and a NaN first operand, taking a NaN second
    one."""
    a, b = _nan(dtype, 1), _nan(dtype, 2)
    rows = [  # x, lo, hi, expected
        (-0.0, -1.0, 0.0, -0.0),
        (0.0, -1.0, -0.0, 0.0),
        (-0.0, 0.0, 1.0, -0.0),
        (0.0, -0.0, 1.0, 0.0),
        (3.0, 0.0, -0.0, -0.0),
        (-3.0, 0.0, -0.0, 0.0),
        (a, 0.0, 1.0, a),
        (1.0, 0.0, b, b),
        (1.0, b, 2.0, b),
        (a, b, b, a),
        (np.inf, -np.inf, np.inf, np.inf),
        (-np.inf, 5.0, -np.inf, 5.0),
    ]
    x, lo, hi, expected = (np.array(col, dtype) for col in zip(*rows))
    return readonly(x), readonly(lo), readonly(hi), expected


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip_values_signed_zeros_and_nan_payloads_bit_for_bit(dtype):
    x, lo, hi, expected = clip_edge_cases(dtype)
    for t in THREADS:
        out = np.empty_like(x)
        K.clip_values(x, lo, hi, out, t)
        assert out.tobytes() == expected.tobytes()
    # bounds of length 1: a NaN lower bound is taken for every element but a
    # NaN x, which is kept
    out = np.empty_like(x)
    K.clip_values(x, readonly(lo[8:9]), readonly(np.array([np.inf], dtype)), out, 2)
    want = np.where(np.isnan(x), x, lo[8])
    assert out.tobytes() == want.tobytes()
