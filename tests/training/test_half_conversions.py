"""The half-precision conversions of ``include/sg_half.h``, bit for bit.

The training kernels of float16 and bfloat16 (``training_half`` and its AVX2
build) convert and round with the code of ``sg_half.h``, the same on every
CPU.  Its float16 conversions must give the bits of F16C's instructions
(what NumPy's float16 gives for every value but NaN payloads), its bfloat16
ones those of ``ml_dtypes``; denormals are kept, never flushed.  Checked here
over every float16 and bfloat16 value and over many floats: sweeps across
every exponent, the halfway points between neighbouring half values (ties to
even), the overflow edges, denormals, infinities and NaNs.
"""

import ml_dtypes
import numpy as np
import pytest

from sparsegrad._kernels import training_half

BF16 = np.dtype(ml_dtypes.bfloat16)
try:
    from sparsegrad._kernels import training_half_avx2
except ImportError:  # pragma: no cover - not an x86 build
    training_half_avx2 = None

BUILDS = [training_half] + ([training_half_avx2] if training_half_avx2 else [])
# convert()'s kinds (see _training_half.pxi.tp)
TO_F16, TO_BF16, F64_TO_F16, F64_TO_BF16, WIDEN_F16, WIDEN_BF16 = range(6)
ROUND_F16, ROUND_BF16 = 6, 7


def _floats():
    """float32 values that exercise every rounding case of both types."""
    rng = np.random.default_rng(7)
    bits = [
        rng.integers(0, 2**32, 2**20, dtype=np.uint64).astype(np.uint32),
        # every exponent, with mantissas around the half types' rounding
        # points: the float16 halfway bit (1 << 12) and bfloat16's (1 << 15),
        # each with the bits below it 0 (a tie), or not
        *((np.arange(512, dtype=np.uint32) << 23) | m
          for m in (0, 1 << 12, (1 << 12) | 1, (1 << 13) | (1 << 12), 1 << 15,
                    (1 << 15) | 1, (1 << 16) | (1 << 15), 0x7FFFFF, 0x7FEFFF)),
    ]
    x = np.concatenate(bits).view(np.float32)
    edges = np.array([65504, 65519.996, 65520, 65536, 2.0**-14, 2.0**-24,
                      2.0**-25, 1.5 * 2.0**-25, 2.0**-25 * 1.0000001, 2.0**-149,
                      3.3895314e38, 3.3961776e38, np.inf, np.nan, 0.0],
                     dtype=np.float32)
    return np.concatenate([x, edges, -edges])


def _f16c_reference(x):
    """F16C's float32 -> float16: NumPy's rounding, with a NaN's top payload
    bits kept and made quiet (NumPy keeps the payload without the quiet bit
    only where it is nonzero; the instruction always sets it)."""
    bits = x.view(np.uint32)
    with np.errstate(over="ignore"):
        out = x.astype(np.float16).view(np.uint16).copy()
    nan = np.isnan(x)
    out[nan] = ((bits[nan] >> 16) & 0x8000) | 0x7E00 | ((bits[nan] & 0x7FFFFF) >> 13)
    return out


def _bf16_reference(x):
    """ml_dtypes' float32 -> bfloat16, with NaN as 0x7fc0 and its sign."""
    out = x.astype(BF16).view(np.uint16).copy()
    nan = np.isnan(x)
    out[nan] = ((x[nan].view(np.uint32) >> 16) & 0x8000) | 0x7FC0
    return out


def _convert(module, x, kind, out_dtype):
    out = np.empty(x.shape[0], dtype=out_dtype)
    module.convert(x, out, kind)
    return out


@pytest.mark.parametrize("module", BUILDS, ids=lambda m: m.__name__.rsplit(".")[-1])
def test_float32_to_half_rounds_to_nearest_even(module):
    x = _floats()
    np.testing.assert_array_equal(_convert(module, x, TO_F16, np.uint16),
                                  _f16c_reference(x))
    np.testing.assert_array_equal(_convert(module, x, TO_BF16, np.uint16),
                                  _bf16_reference(x))


@pytest.mark.parametrize("module", BUILDS, ids=lambda m: m.__name__.rsplit(".")[-1])
def test_rounding_in_float_arithmetic_is_a_round_trip(module):
    # sg_round_f16 / sg_round_bf16 (what every operation of the kernels'
    # half arithmetic ends with) equal widen(narrow(x)) bit for bit.
    x = _floats()
    for narrow, widen, rnd in ((TO_F16, WIDEN_F16, ROUND_F16),
                               (TO_BF16, WIDEN_BF16, ROUND_BF16)):
        trip = _convert(module, _convert(module, x, narrow, np.uint16), widen,
                        np.float32)
        rounded = _convert(module, x, rnd, np.float32)
        np.testing.assert_array_equal(rounded.view(np.uint32), trip.view(np.uint32))


@pytest.mark.parametrize("module", BUILDS, ids=lambda m: m.__name__.rsplit(".")[-1])
def test_every_half_value_widens_exactly(module):
    h = np.arange(2**16, dtype=np.uint16)
    wide = _convert(module, h, WIDEN_F16, np.float32)
    expect = h.view(np.float16).astype(np.float32)
    finite = np.isfinite(expect)
    np.testing.assert_array_equal(wide[finite].view(np.uint32),
                                  expect[finite].view(np.uint32))
    # A NaN comes back quiet, with its payload in the top bits.
    nan = ~finite & (h & 0x3FF != 0)
    np.testing.assert_array_equal(
        wide[nan].view(np.uint32),
        ((h[nan].astype(np.uint32) & 0x8000) << 16) | 0x7FC00000
        | ((h[nan].astype(np.uint32) & 0x3FF) << 13))
    wide_b = _convert(module, h, WIDEN_BF16, np.float32)
    np.testing.assert_array_equal(wide_b.view(np.uint32), h.astype(np.uint32) << 16)
    # and back: every value (NaNs made quiet) is its own rounding
    back = _convert(module, wide, TO_F16, np.uint16)
    np.testing.assert_array_equal(back[~nan], h[~nan])
    np.testing.assert_array_equal(back[nan], h[nan] | 0x200)


@pytest.mark.parametrize("module", BUILDS, ids=lambda m: m.__name__.rsplit(".")[-1])
def test_denormals_are_kept(module):
    # The least denormals and their neighbours survive both ways (AVX-512
    # BF16's VCVTNEPS2BF16 would flush them; no kernel uses it).
    tiny = np.array([2.0**-24, 3 * 2.0**-24, 2.0**-133, 2.0**-126 * 0.75],
                    dtype=np.float32)
    f16 = _convert(module, tiny[:2], TO_F16, np.uint16)
    np.testing.assert_array_equal(f16, [1, 3])
    bf16 = _convert(module, tiny[2:], TO_BF16, np.uint16)
    np.testing.assert_array_equal(bf16, [1, 0x60])


@pytest.mark.parametrize("module", BUILDS, ids=lambda m: m.__name__.rsplit(".")[-1])
def test_double_conversions(module):
    rng = np.random.default_rng(3)
    scales = 10.0 ** rng.integers(-9, 6, 1 << 16)
    x = np.concatenate([rng.standard_normal(1 << 16) * scales,
                        [1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-8 + 2.0**-30, 65519.99,
                         65520.0, 2.0**-25 + 2.0**-60, 1e300, -1e300, 0.0, -0.0]])
    with np.errstate(over="ignore"):
        # float16: one rounding from double, as NumPy's cast
        np.testing.assert_array_equal(_convert(module, x, F64_TO_F16, np.uint16),
                                      x.astype(np.float16).view(np.uint16))
        # bfloat16: through float32, as ml_dtypes' and TensorFlow's casts
        np.testing.assert_array_equal(_convert(module, x, F64_TO_BF16, np.uint16),
                                      x.astype(BF16).view(np.uint16))


@pytest.mark.skipif(training_half_avx2 is None or not training_half_avx2.HAS_F16C,
                    reason="no F16C build")
def test_portable_float16_code_gives_f16c_bits():
    from sparsegrad._kernels import parallel

    if not parallel.cpu_has_avx2():
        pytest.skip("this CPU has no AVX2/F16C")
    x = _floats()
    h = np.arange(2**16, dtype=np.uint16)
    hw, hw_wide = np.empty(x.shape[0], np.uint16), np.empty(h.shape[0], np.float32)
    training_half_avx2.f16c_bits(x, hw, h, hw_wide)
    np.testing.assert_array_equal(_convert(training_half, x, TO_F16, np.uint16), hw)
    np.testing.assert_array_equal(
        _convert(training_half, h, WIDEN_F16, np.float32).view(np.uint32),
        hw_wide.view(np.uint32))
