"""The elementwise transcendental kernels and their front end.

float32 results within the measured error bounds of our own float code (expm1
and pow: the float64 result rounded once), float64 results the C library's
(within an ulp of NumPy's), special values as NumPy's, and the bits must not
depend on the thread count or on the kernel build.
"""

import warnings

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad._kernels import elementwise as K
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework import elementwise as E

UNARY = ["exp", "log", "log1p", "expm1", "tanh"]
FLOATS = [np.float16, np.float32, np.float64]
THREADS = [1, 2, 4]
N = 200_000
# glibc's tanh is documented to be within 2 ulp; the others within 1.
MAX_ULP_VS_NUMPY = {"exp": 1, "log": 1, "log1p": 1, "expm1": 1, "tanh": 2, "pow": 1}


def _inputs(name, rng, n=N):
    """float64 inputs in the useful range of `name`, with small and large ones."""
    half = n // 2
    if name == "exp":
        return np.concatenate([rng.uniform(-87, 88, half), rng.normal(0, 1e-3, half)])
    if name == "log":
        return np.exp(rng.uniform(-80, 80, n))
    if name == "log1p":
        return np.concatenate(
            [rng.uniform(-0.999, 1e3, half), rng.normal(0, 1e-4, half)]
        )
    if name == "expm1":
        return np.concatenate([rng.uniform(-80, 88, half), rng.normal(0, 1e-4, half)])
    if name == "tanh":
        return np.concatenate([rng.uniform(-10, 10, half), rng.normal(0, 1e-3, half)])
    raise AssertionError(name)


def _pow_inputs(rng, n=N):
    x = np.concatenate(
        [rng.uniform(0.01, 100, n // 2), np.round(rng.uniform(-20, 20, n // 2))]
    )
    y = np.concatenate(
        [rng.uniform(-15, 15, n // 2), np.round(rng.uniform(-8, 8, n // 2))]
    )
    return x, y


def _same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# -- accuracy ---------------------------------------------------------------------


# float32 exp, log, log1p and tanh are our own float code (Cephes' polynomials):
# their error against the exact value, in ulps of the result, measured over
# all 2**32 inputs by check_elementwise_exhaustive.py.  expm1 and pow are the
# C library's double functions, rounded once.
MAX_ULP_F32 = {"exp": 0.99, "log": 0.83, "log1p": 2.47, "tanh": 1.33, "expm1": 0.5}


def _ulp_error(got, exact):
    """|got - exact| in ulps of the float32 result (subnormals: of FLT_MIN)."""
    tiny = np.finfo(np.float32).tiny
    magnitude = np.maximum(np.abs(exact), tiny)
    ulp = np.ldexp(1.0, np.frexp(magnitude)[1] - 24)
    return np.abs(got.astype(np.float64) - exact) / ulp


@pytest.mark.parametrize("name", UNARY)
def test_float32_error_bounds(name, rng):
    x = _inputs(name, rng).astype(np.float32)
    with np.errstate(over="ignore"):
        exact = getattr(np, name)(x.astype(np.longdouble)).astype(np.float64)
    got = getattr(E, name)(x)
    assert got.dtype == np.float32
    finite = np.isfinite(exact) & (np.abs(exact) < np.finfo(np.float32).max)
    error = _ulp_error(got[finite], exact[finite])
    assert error.max() <= MAX_ULP_F32[name] + 1e-3, (name, error.max())
    if name == "expm1":            # in double, rounded once: bit for bit
        expected = exact.astype(np.float32)
        assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("name", UNARY)
def test_baseline_and_avx2_builds_give_the_same_bits(name):
    # Every 251st float32 bit pattern (17 million values: NaNs, subnormals,
    # infinities, both signs), through both builds of the kernels.
    avx2 = pytest.importorskip("sparsegrad._kernels.elementwise_avx2")
    if not sg.framework.backend._parallel.cpu_has_avx2():
        pytest.skip("this CPU has no AVX2")
    x = np.arange(0, 2**32, 251, dtype=np.uint64).astype(np.uint32).view(np.float32)
    a, b = np.empty_like(x), np.empty_like(x)
    getattr(K, name)(x, a, 2)
    getattr(avx2, name)(x, b, 2)
    assert a.tobytes() == b.tobytes()


def test_pow_float32_is_the_float64_result_rounded_once(rng):
    x, y = (a.astype(np.float32) for a in _pow_inputs(rng))
    with np.errstate(over="ignore", divide="ignore"):
        expected = np.power(x.astype(np.float64), y.astype(np.float64))
        expected = expected.astype(np.float32)
    got = E.pow(x, y)
    mismatches = np.flatnonzero(got.view(np.int32) != expected.view(np.int32))
    assert mismatches.size == 0, (x[mismatches[:5]], y[mismatches[:5]])


@pytest.mark.parametrize("name", UNARY)
def test_float64_within_an_ulp_of_numpy(name, rng):
    x = _inputs(name, rng)
    got = getattr(E, name)(x)
    assert got.dtype == np.float64
    np.testing.assert_array_max_ulp(
        got, getattr(np, name)(x), maxulp=MAX_ULP_VS_NUMPY[name]
    )
    # ... and of the long double result (a more precise reference).
    reference = getattr(np, name)(x.astype(np.longdouble)).astype(np.float64)
    np.testing.assert_array_max_ulp(got, reference, maxulp=MAX_ULP_VS_NUMPY[name])


def test_pow_float64_within_an_ulp_of_numpy(rng):
    x, y = _pow_inputs(rng)
    got = E.pow(x, y)
    with np.errstate(divide="ignore"):  # 0 ** negative
        expected = np.power(x, y)
    np.testing.assert_array_max_ulp(got, expected, maxulp=1)


@pytest.mark.parametrize("name", UNARY)
def test_float16_every_value(name):
    # All 65536 float16 values, NaNs and infinities included.
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(x.astype(np.float64)).astype(np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = getattr(E, name)(x)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, expected)
    finite = ~np.isnan(got)
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(expected[finite]))


# -- special values -----------------------------------------------------------------

NON_FINITE = [np.inf, -np.inf, np.nan]
SPECIAL = np.array(
    NON_FINITE
    + [0.0, -0.0, -1.0, -2.0, 1.0, 2.0, 1e-30, -1e-30, 1e5, -1e5, 1e300]
    + [5e-324]  # the smallest subnormal
)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY)
def test_special_values_as_numpy_without_warnings(name, dtype):
    with np.errstate(all="ignore"):
        x = SPECIAL.astype(dtype)
        expected = getattr(np, name)(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = getattr(E, name)(x)
        # No floating-point flag the kernel raised leaks into later NumPy ops.
        np.add(np.ones(3, dtype), 1)
        np.float64(2.0) * np.float64(3.0)
    # Finite values may differ in the last bit; the special ones must not.
    special = ~np.isfinite(expected) | (expected == 0) | ~np.isfinite(got)
    np.testing.assert_array_equal(got[special], expected[special])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    number = ~np.isnan(got)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(expected[number]))


def test_named_special_values():
    f64 = np.float64
    assert E.log(np.array(0.0)) == -np.inf
    assert E.log(np.array(-0.0)) == -np.inf
    assert np.isnan(E.log(np.array(-1.0)))
    assert E.log1p(np.array(-1.0)) == -np.inf
    assert np.isnan(E.log1p(np.array(-2.0)))
    assert E.exp(np.array(1000.0)) == np.inf
    assert E.exp(np.array(-1000.0)) == 0
    assert E.exp(np.float32(89.0)) == np.inf  # overflows float32 only
    assert E.expm1(np.array(-np.inf)) == -1
    assert E.tanh(np.array(-np.inf)) == -1
    for name in ("log1p", "expm1", "tanh"):
        out = getattr(E, name)(np.array(-0.0))
        assert out == 0 and np.signbit(out), name
    assert E.pow(np.array(0.0), np.array(-1.0)) == np.inf
    assert np.isnan(E.pow(np.array(-8.0), np.array(1 / 3)))
    assert E.pow(np.array(np.nan), np.array(0.0)) == 1
    assert E.pow(np.array(1.0), np.array(np.nan)) == 1
    assert E.pow(np.array(-0.0), np.array(3.0)) == 0
    assert np.signbit(E.pow(np.array(-0.0), np.array(3.0)))
    assert E.pow(np.array(f64(10)), np.array(f64(400))) == np.inf


@pytest.mark.parametrize("dtype", FLOATS)
def test_pow_special_values_as_numpy(dtype):
    with np.errstate(all="ignore"):
        values = SPECIAL.astype(dtype)
        x, y = values[:, None], values[None, :]
        expected = np.power(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = E.pow(x, y)
    assert got.shape == expected.shape and got.dtype == dtype
    special = ~np.isfinite(expected) | (expected == 0) | (expected == 1)
    np.testing.assert_array_equal(got[special], expected[special])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    number = ~np.isnan(got)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(expected[number]))


# -- shapes and layouts ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY)
def test_zero_d_and_empty(name, dtype):
    f = getattr(E, name)
    out = f(np.array(0.5, dtype))
    assert type(out) is np.ndarray and out.shape == () and out.dtype == dtype
    assert out == getattr(np, name)(np.float64(0.5)).astype(dtype)
    for shape in [(0,), (2, 0, 3)]:
        out = f(np.empty(shape, dtype))
        assert out.shape == shape and out.dtype == dtype
    scalar = f(np.float32(0.5))  # a NumPy scalar gives a 0-d array too
    assert type(scalar) is np.ndarray and scalar.shape == ()


@pytest.mark.parametrize("name", UNARY)
def test_layouts_give_the_contiguous_result(name, rng):
    base = np.abs(rng.standard_normal((40, 30))).astype(np.float32)
    expected = getattr(E, name)(np.ascontiguousarray(base))
    views = {
        "strided": (base[::2, ::3], expected[::2, ::3]),
        "transposed": (base.T, expected.T),
        "fortran": (np.asfortranarray(base), expected),
        "big-endian": (base.astype(">f4"), expected),
    }
    for label, (x, want) in views.items():
        got = getattr(E, name)(x)
        assert got.flags.c_contiguous, label
        assert got.dtype == np.float32, label
        np.testing.assert_array_equal(got, want, err_msg=label)
    readonly = base.copy()
    readonly.flags.writeable = False
    np.testing.assert_array_equal(getattr(E, name)(readonly), expected)


def test_pow_broadcasting(rng):
    x = rng.uniform(0.1, 3, (5, 1)).astype(np.float32)
    y = rng.uniform(-2, 2, (1, 4)).astype(np.float32)
    expected = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    cases = [
        (x, y, expected),
        (x, np.float32(2.5), np.power(x.astype(np.float64), 2.5).astype(np.float32)),
        (np.float32(2.0), y, np.power(2.0, y.astype(np.float64)).astype(np.float32)),
        (x[:, 0], np.ones((3, 5), np.float32), np.broadcast_to(x[:, 0], (3, 5))),
        (np.float32(2.0), np.float32(10.0), np.array(1024.0, np.float32)),
        (np.ones((1, 0), np.float32), np.ones((3, 1), np.float32), np.ones((3, 0))),
    ]
    for a, b, want in cases:
        got = E.pow(a, b)
        assert got.shape == np.shape(want) and got.dtype == np.float32
        np.testing.assert_array_equal(got, want)


def test_pow_kernel_broadcasts_a_length_one_operand():
    x = np.array([1.0, 2.0, 3.0])
    out = np.empty(3)
    K.pow(x, np.array([2.0]), out, 1)
    np.testing.assert_array_equal(out, [1.0, 4.0, 9.0])
    K.pow(np.array([2.0]), x, out, 1)
    np.testing.assert_array_equal(out, [2.0, 4.0, 8.0])


def test_long_double_keeps_numpy():
    x = np.linspace(-3, 3, 11, dtype=np.longdouble)
    for name in UNARY:
        with np.errstate(all="ignore"):
            expected = getattr(np, name)(x)
        got = getattr(E, name)(x)
        assert got.dtype == np.longdouble
        np.testing.assert_array_equal(got, expected)
    with np.errstate(invalid="ignore"):  # negative ** non-integer
        expected = np.power(x, x[::-1])
    np.testing.assert_array_equal(E.pow(x, x[::-1]), expected)


# -- thread counts ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_bits_for_any_thread_count(dtype, rng):
    results = []
    for threads in THREADS:
        sg.set_num_threads(threads)
        row = [
            getattr(E, name)(_inputs(name, np.random.default_rng(1)).astype(dtype))
            for name in UNARY
        ]
        x, y = _pow_inputs(np.random.default_rng(2))
        row.append(E.pow(x.astype(dtype), y.astype(dtype)))
        results.append(row)
    for row in results[1:]:
        for got, first in zip(row, results[0]):
            assert _same_bits(got, first)


# -- errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", [np.arange(3), np.ones(2, np.complex128), np.array([True]), np.array(["a"])]
)
def test_non_floats_are_rejected(bad):
    for name in UNARY:
        with pytest.raises(InvalidArgumentError, match=f"{name}: x has dtype"):
            getattr(E, name)(bad)
    with pytest.raises(InvalidArgumentError, match="pow: x has dtype"):
        E.pow(bad, bad)


def test_pow_errors():
    with pytest.raises(InvalidArgumentError, match="float32 and y has dtype float64"):
        E.pow(np.ones(2, np.float32), np.ones(2))
    with pytest.raises(InvalidArgumentError, match=r"shapes \(3,\) and \(2,\)"):
        E.pow(np.ones(3), np.ones(2))


def test_kernel_build_selection(monkeypatch):
    pick = sg.framework.backend.kernels_for_cpu
    has_avx2 = sg.framework.backend._parallel.cpu_has_avx2()
    monkeypatch.delenv("SPARSEGRAD_DISABLE_AVX2", raising=False)
    chosen = pick(K, "elementwise_avx2")
    assert (chosen is not K) == has_avx2
    assert pick(K, "no_such_module_avx2") is K
    assert pick(K, "elementwise_avx2", same_source=lambda m: False) is K
    monkeypatch.setenv("SPARSEGRAD_DISABLE_AVX2", "1")
    assert pick(K, "elementwise_avx2") is K
