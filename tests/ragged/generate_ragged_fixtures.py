"""Generate tests/ragged/data/ragged_golden.npz from TensorFlow (run once, by hand).

    /tmp/tfenv/bin/python tests/ragged/generate_ragged_fixtures.py

Random ``RaggedRange`` calls (the raw op ``tf.raw_ops.RaggedRange``) for every
values dtype (int32, int64, float32, float64) and both splits dtypes, with
positive and negative deltas, scalar (broadcast) and vector arguments, empty
rows, rows near the integer limits, and float steps whose values show the
rounding of repeated addition.  Case ``k`` stores ``k_starts``, ``k_limits``,
``k_deltas`` (0-d or 1-d arrays of the values dtype), ``k_tsplits`` (the
splits dtype's name as a 0-d string array), and TensorFlow's outputs
``k_splits`` and ``k_values``.  ``__cases__`` lists the case names.
tests/ragged/test_ragged_golden.py replays every case bit for bit.
"""

import os

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(611)
OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "data", "ragged_golden.npz"
)


def _ints(dtype, n, small=False):
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    kind = 0 if small else rng.integers(0, 3)
    starts, limits, deltas = [], [], []
    for _ in range(n):
        if kind == 0:  # small values, small steps
            s, lim = int(rng.integers(-50, 50)), int(rng.integers(-50, 50))
            d = int(rng.integers(1, 7)) * int(rng.choice([-1, 1]))
        elif kind == 1:  # up to 40 values ending next to the dtype's limits
            d = int(rng.integers(1, 1000)) * int(rng.choice([-1, 1]))
            lim = (
                (hi - int(rng.integers(0, 5)))
                if d > 0
                else (lo + int(rng.integers(0, 5)))
            )
            s = lim - d * int(rng.integers(0, 40))
        else:  # big steps over the whole range
            s = int(rng.integers(lo, hi, endpoint=True))
            lim = int(rng.integers(lo, hi, endpoint=True))
            d = max(abs(lim - s) // int(rng.integers(1, 30)), 1)
            d = min(d, hi)
            if lim < s:
                d = -d
        starts.append(s)
        limits.append(lim)
        deltas.append(d)
    return (np.array(starts, dtype), np.array(limits, dtype), np.array(deltas, dtype))


def _floats(dtype, n, small=False):
    starts = rng.uniform(-10, 10, n)
    steps = [0.1, 0.3, 0.7, 2.2, 1 / 3, 0.4] + ([] if small else [1e-3])
    deltas = rng.choice(steps) * rng.uniform(0.5, 2, n)
    deltas *= rng.choice([-1, 1], n)
    steps = rng.integers(-3, 60, n)
    limits = starts + steps * deltas + rng.uniform(-0.5, 0.5, n) * deltas
    return starts.astype(dtype), limits.astype(dtype), deltas.astype(dtype)


def main():
    arrays = {}
    names = []
    k = 0
    for dtype in (np.int32, np.int64, np.float32, np.float64):
        for tsplits in ("int32", "int64"):
            for rep in range(6):
                n = int(rng.integers(0, 25)) if rep else 0
                make = _floats if np.dtype(dtype).kind == "f" else _ints
                s, lim, d = make(dtype, max(n, 1), small=rep >= 4)
                args = [s[:n], lim[:n], d[:n]]
                if rep >= 4:  # broadcast one or two scalars
                    for j in rng.choice(3, size=rep - 3, replace=False):
                        args[j] = np.asarray(
                            args[j][0] if n else make(dtype, 1, small=True)[j][0],
                            dtype=dtype,
                        )
                # tf.constant first: the raw op given NumPy arrays directly
                # sometimes reads wrong deltas in 2.21 ("Requires delta != 0"
                # for nonzero float deltas).
                splits, values = tf.raw_ops.RaggedRange(
                    starts=tf.constant(args[0]),
                    limits=tf.constant(args[1]),
                    deltas=tf.constant(args[2]),
                    Tsplits=getattr(tf, tsplits),
                )
                name = f"case{k:03d}"
                k += 1
                names.append(name)
                arrays[f"{name}_starts"] = args[0]
                arrays[f"{name}_limits"] = args[1]
                arrays[f"{name}_deltas"] = args[2]
                arrays[f"{name}_tsplits"] = np.array(tsplits)
                arrays[f"{name}_splits"] = splits.numpy()
                arrays[f"{name}_values"] = values.numpy()
    arrays["__cases__"] = np.array(names)
    np.savez_compressed(OUT, **arrays)
    print(
        f"{len(names)} cases, {sum(a.nbytes for a in arrays.values())} bytes -> {OUT}"
    )


if __name__ == "__main__":
    main()
