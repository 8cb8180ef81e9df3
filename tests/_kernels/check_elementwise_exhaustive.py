"""Every float32 input through the float32 transcendental kernels (not run by CI).

    python tests/_kernels/check_elementwise_exhaustive.py

For each of exp, log, log1p and tanh: the largest error against the float64
result in ulps of the float32 result (the bounds ``MAX_ULP_F32`` of
test_elementwise.py come from here), that special values are NumPy's, and that
the baseline and the AVX2 build give the same bits on all 2**32 inputs.
Takes a few minutes on two cores.
"""

import numpy as np

from sparsegrad._kernels import elementwise as baseline

try:
    from sparsegrad._kernels import elementwise_avx2 as avx2
except ImportError:
    avx2 = None

NAMES = ("exp", "log", "log1p", "tanh")
CHUNK = 1 << 24


def main():
    worst = {name: (0.0, None) for name in NAMES}
    builds_agree = {name: True for name in NAMES}
    tiny = np.finfo(np.float32).tiny
    big = float(np.finfo(np.float32).max)
    for start in range(0, 1 << 32, CHUNK):
        x = np.arange(start, start + CHUNK, dtype=np.uint64)
        x = x.astype(np.uint32).view(np.float32)
        with np.errstate(invalid="ignore"):      # signalling NaNs
            x64 = x.astype(np.float64)
        got, other = np.empty_like(x), np.empty_like(x)
        for name in NAMES:
            getattr(baseline, name)(x, got, 2)
            if avx2 is not None:
                getattr(avx2, name)(x, other, 2)
                builds_agree[name] &= got.tobytes() == other.tobytes()
            with np.errstate(all="ignore"):
                exact = getattr(np, name)(x64)
                expected = exact.astype(np.float32)
            special = ~np.isfinite(exact) | (np.abs(exact) > big)
            same = (got[special] == expected[special]) | (
                np.isnan(got[special]) & np.isnan(expected[special]))
            assert same.all(), (name, x[special][~same][:5])
            finite = ~special
            if not finite.any():
                continue
            magnitude = np.maximum(np.abs(exact[finite]), tiny)
            ulp = np.ldexp(1.0, np.frexp(magnitude)[1] - 24)
            error = np.abs(got[finite].astype(np.float64) - exact[finite]) / ulp
            k = int(np.argmax(error))
            if error[k] > worst[name][0]:
                worst[name] = (float(error[k]), float(x[finite][k]))
    for name in NAMES:
        err, at = worst[name]
        agree = "n/a (no AVX2 build)" if avx2 is None else builds_agree[name]
        print(f"{name:6s} max error {err:.3f} ulp at {at!r}; "
              f"baseline and AVX2 builds agree: {agree}")


if __name__ == "__main__":
    main()
