"""sparsegrad/_kernels/include/sg_segment.h, the one source of the segment
family's arithmetic: compiled as C (as the Cython kernels compile it) and as
C++ (as the CUDA kernels and their emulator do), each instance gives NumPy's
values on special inputs (NaN, infinities, signed zeros), and the two
languages give the same bits.  The drivers (.pyx, .pxi, .cu) include it and
no longer write its rules themselves."""

import ctypes
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = os.path.join(ROOT, "sparsegrad", "_kernels")
INCLUDE = os.path.join(KERNELS, "include")

# One wrapper per header function and value type, over arrays (extern "C"
# in C++, so that both libraries export the same names).
WRAPPERS = """
#ifdef __cplusplus
#define SG_CALL(name, sfx) name
#define SG_EXPORT extern "C"
#else
#define SG_CALL(name, sfx) name##_##sfx
#define SG_EXPORT
#endif
#define SG_WRAP(T, sfx)                                                        \\
SG_EXPORT void t_binary_##sfx(int fn, const T* a, const T* b, T* out, long n) { \\
    for (long i = 0; i < n; ++i) {                                            \\
        if (fn == 0) out[i] = SG_CALL(sg_seg_max, sfx)(a[i], b[i]);           \\
        if (fn == 1) out[i] = SG_CALL(sg_seg_min, sfx)(a[i], b[i]);           \\
        if (fn == 2) out[i] = SG_CALL(sg_seg_prod, sfx)(a[i], b[i]);          \\
        if (fn == 3) out[i] = SG_CALL(sg_bag_scale, sfx)(a[i], b[i]);         \\
        if (fn >= 10 && fn < 15)                                              \\
            out[i] = SG_CALL(sg_seg_apply, sfx)(fn - 10, a[i], b[i]);         \\
        if (fn >= 20 && fn < 25)                                              \\
            out[i] = SG_CALL(sg_seg_with_fill, sfx)(fn - 20, a[i], b[i]);     \\
        if (fn >= 30 && fn < 33)                                              \\
            out[i] = SG_CALL(sg_bag_denom_add, sfx)(fn - 30, a[i], b[i]);     \\
    }                                                                         \\
}                                                                             \\
SG_EXPORT T t_sum_##sfx(const T* x, long n) {                                 \\
    return SG_CALL(sg_seg_sum_contiguous, sfx)(x, n);                         \\
}                                                                             \\
SG_EXPORT T t_mean_##sfx(T total, long count) {                               \\
    return SG_CALL(sg_seg_mean, sfx)(total, count);                           \\
}                                                                             \\
SG_EXPORT T t_denom_##sfx(int combiner, int weighted, T wsum, long count) {   \\
    return SG_CALL(sg_bag_denom, sfx)(combiner, weighted, wsum, count);       \\
}                                                                             \\
SG_EXPORT T t_bag_add_##sfx(T acc, T w, T v) {                                \\
    return SG_CALL(sg_bag_add, sfx)(acc, w, v);                               \\
}
SG_WRAP(float, f32)
SG_WRAP(double, f64)
"""

SUM, MEAN, MAX, MIN, PROD = range(5)
BAG_SUM, BAG_MEAN, BAG_SQRTN = range(3)
SFX = {np.float32: "f32", np.float64: "f64"}


def _build(tmp_path_factory, compiler, suffix):
    exe = shutil.which(compiler)
    if exe is None:
        pytest.skip(f"{compiler} not found")
    folder = tmp_path_factory.mktemp(compiler.replace("+", "x"))
    src = folder / f"wrap.{suffix}"
    src.write_text('#include "sg_segment.h"\n' + WRAPPERS)
    lib = folder / "wrap.so"
    subprocess.run([exe, "-O2", "-fPIC", "-shared", "-ffp-contract=off",
                    "-fno-math-errno", "-fno-trapping-math", f"-I{INCLUDE}",
                    str(src), "-o", str(lib), "-lm"], check=True)
    return ctypes.CDLL(str(lib))


@pytest.fixture(scope="module", params=["gcc", "g++"])
def lib(request, tmp_path_factory):
    return _build(tmp_path_factory, request.param, "c" if request.param == "gcc"
                  else "cpp")


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return (_build(tmp_path_factory, "gcc", "c"),
            _build(tmp_path_factory, "g++", "cpp"))


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def _binary(lib, fn, a, b):
    out = np.empty_like(a)
    f = getattr(lib, "t_binary_" + SFX[a.dtype.type])
    f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                  ctypes.c_long]
    f(fn, _ptr(a), _ptr(b), _ptr(out), a.size)
    return out


def _scalar_fn(lib, name, dtype, argtypes):
    ct = ctypes.c_float if dtype == np.float32 else ctypes.c_double
    f = getattr(lib, f"t_{name}_{SFX[dtype]}")
    f.restype = ct
    f.argtypes = [ct if t is None else t for t in argtypes]
    return f


SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 3.0, 1e30]


def _pairs(dtype):
    a, b = np.meshgrid(np.array(SPECIAL, dtype), np.array(SPECIAL, dtype))
    return a.ravel().copy(), b.ravel().copy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_min_prod_scale_values(lib, dtype):
    acc, v = _pairs(dtype)
    with np.errstate(all="ignore"):
        # a NaN row replaces the running value; a NaN running value stays
        want_max = np.where((v > acc) | np.isnan(v), v, acc)
        want_min = np.where((v < acc) | np.isnan(v), v, acc)
        want_scale = np.where(v == 0, dtype(0), acc / v)
        want_prod = acc * v
    for fn, want in ((0, want_max), (1, want_min), (2, want_prod), (3, want_scale)):
        np.testing.assert_array_equal(_binary(lib, fn, acc, v), want, err_msg=str(fn))
    # NaN wins from either side, and the op codes pick the same functions
    assert np.isnan(_binary(lib, 0, acc, v)[np.isnan(acc) | np.isnan(v)]).all()
    assert np.isnan(_binary(lib, 1, acc, v)[np.isnan(acc) | np.isnan(v)]).all()
    with np.errstate(all="ignore"):
        want_apply = {SUM: acc + v, MEAN: acc + v, MAX: want_max, MIN: want_min,
                      PROD: want_prod}
    for op, want in want_apply.items():
        np.testing.assert_array_equal(_binary(lib, 10 + op, acc, v), want)
    # a zero denominator gives +0.0 whatever the numerator (NaN included)
    zero = _binary(lib, 3, acc, np.zeros_like(acc))
    assert zero.tobytes() == np.zeros_like(acc).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_with_fill(lib, dtype):
    v, fill = _pairs(dtype)
    got = {op: _binary(lib, 20 + op, v, fill) for op in range(5)}
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got[SUM], fill + v)
    np.testing.assert_array_equal(got[MAX], np.where(v < fill, fill, v))
    np.testing.assert_array_equal(got[MIN], np.where(v > fill, fill, v))
    for op in (MEAN, PROD):
        assert got[op].tobytes() == v.tobytes()
    # a sum of -0.0 from the fill 0.0 becomes +0.0
    minus_zero = np.array([-0.0], dtype)
    out = _binary(lib, 20 + SUM, minus_zero, np.zeros(1, dtype))
    assert not np.signbit(out[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_mean_and_bag_denominators(lib, rng, dtype, contiguous_sum):
    f_sum = _scalar_fn(lib, "sum", dtype, [ctypes.c_void_p, ctypes.c_long])
    f_mean = _scalar_fn(lib, "mean", dtype, [None, ctypes.c_long])
    f_denom = _scalar_fn(lib, "denom", dtype,
                         [ctypes.c_int, ctypes.c_int, None, ctypes.c_long])
    f_add = _scalar_fn(lib, "bag_add", dtype, [None, None, None])
    for n in (1, 5, 7, 8, 9, 16, 23, 100):
        x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dtype)
        assert dtype(f_sum(_ptr(x), n)) == contiguous_sum(x)
    for total, count in ((dtype(7.0), 3), (dtype(-1.0), 2**24 + 1), (dtype(0), 5)):
        assert dtype(f_mean(total, count)) == total / dtype(count)
    # unweighted: the count, or its square root taken in double
    for count in (1, 2, 3, 10, 2**25 + 1):
        assert dtype(f_denom(BAG_MEAN, 0, 0, count)) == dtype(count)
        assert dtype(f_denom(BAG_SQRTN, 0, 0, count)) == dtype(np.sqrt(float(count)))
    # weighted: the sum of the weights, or the square root (in double) of the
    # sum of their squares, accumulated by sg_bag_denom_add
    w = rng.uniform(-1, 2, 50).astype(dtype)
    for combiner, term in ((BAG_MEAN, w), (BAG_SQRTN, w * w)):
        denom = np.zeros(1, dtype)
        want = dtype(0)
        for k in range(w.size):
            denom = _binary(lib, 30 + combiner, denom, w[k:k + 1])
            want = dtype(want + term[k])
        assert denom[0] == want
        final = dtype(f_denom(combiner, 1, denom[0], w.size))
        expected = want if combiner == BAG_MEAN else dtype(np.sqrt(float(want)))
        assert final == expected
    assert dtype(f_add(dtype(1.5), dtype(3.0), dtype(-0.25))) == dtype(1.5) + dtype(
        3.0) * dtype(-0.25)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_c_and_cxx_give_the_same_bits(both, rng, dtype):
    c, cxx = both
    acc, v = _pairs(dtype)
    a = np.concatenate([acc, rng.standard_normal(500).astype(dtype)])
    b = np.concatenate([v, rng.standard_normal(500).astype(dtype)])
    for fn in (0, 1, 2, 3, *range(10, 15), *range(20, 25), 30, 31):
        assert _binary(c, fn, a, b).tobytes() == _binary(cxx, fn, a, b).tobytes(), fn
    sums = [_scalar_fn(lib, "sum", dtype, [ctypes.c_void_p, ctypes.c_long])
            for lib in both]
    for n in (1, 7, 8, 9, 31, 64, 1001):
        x = rng.standard_normal(n).astype(dtype)
        assert dtype(sums[0](_ptr(x), n)) == dtype(sums[1](_ptr(x), n))


def _read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def test_drivers_include_the_header_and_do_not_repeat_it():
    cu = _read("sparsegrad", "_cuda", "segment.cu")
    pyx = _read("sparsegrad", "_kernels", "_segment.pxi")
    pxi = _read("sparsegrad", "_kernels", "_sparse_segment.pxi")
    assert '#include "sg_segment.h"' in cu
    assert 'cdef extern from "sg_segment.h"' in pyx
    assert 'cdef extern from "sg_segment.h"' in pxi
    for name, text in (("segment.cu", cu), ("_segment.pxi", pyx),
                       ("_sparse_segment.pxi", pxi)):
        code = "\n".join(line.split("//")[0].split("#")[0]
                         for line in text.splitlines())
        # the NaN rule of max and min, and the weighted terms of the bags
        assert not re.search(r"(\w+(\[[^\]]*\])?) != \1", code), name
        assert not re.search(r"\+= *\w+(\[\w+\])? \*", code), name
        assert not re.search(r"\bsqrt\(", code), name
