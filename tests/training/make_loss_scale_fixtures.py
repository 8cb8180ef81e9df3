"""Generate the Keras 3 goldens of tests/training/test_loss_scale_optimizer.py.

Run once, with TensorFlow and Keras 3 installed (CI never runs this)::

    /work/peers/tfenv/bin/python tests/training/make_loss_scale_fixtures.py

Each case wraps an inner optimizer (SGD or Adam, hyper-parameters that
float32 holds exactly) in ``keras.optimizers.LossScaleOptimizer`` and trains
two dense variables, a (5, 3) matrix ``w`` and a (3,) vector ``b``, with a
fixed stream of already-scaled gradients (the same arrays for both libraries,
whatever the scale: no loss is replayed).  On the steps a case lists, one
element of one gradient is +inf, -inf or NaN, so the step is skipped and the
scale halves; between them ``dynamic_growth_steps`` is small (1 to 3) so the
scale also doubles.

Output: ``tests/training/fixtures/loss_scale_optimizer.npz``.  Case ``c``
stores ``c/w0``, ``c/b0`` (initial values), ``c/gw``, ``c/gb`` (the gradient
given at each step) and, after every step, ``c/w``, ``c/b`` (the variables),
``c/scale`` (``dynamic_scale``, float32), ``c/counter`` (``step_counter``)
and ``c/iterations`` (the inner optimizer's); ``__cases__`` holds the JSON
list of ``[case, inner class name, inner kwargs, loss-scale kwargs, dtype]``.
"""

import json
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "loss_scale_optimizer.npz")
SEED = 20280131

ADAM = {"learning_rate": 0.0625, "beta_1": 0.875, "beta_2": 1 - 2.0**-9,
        "epsilon": 2.0**-20}

# case, inner class, inner kwargs, LossScaleOptimizer kwargs, dtype,
# number of steps, {step: (variable, flat position, bad value)}
CASES = [
    ("sgd_growth2", "SGD", {"learning_rate": 0.125},
     {"initial_scale": 4.0, "dynamic_growth_steps": 2}, "float32", 9,
     {2: ("b", 1, "inf"), 6: ("b", 0, "nan")}),
    ("sgd_growth2_float64", "SGD", {"learning_rate": 0.125},
     {"initial_scale": 4.0, "dynamic_growth_steps": 2}, "float64", 9,
     {2: ("b", 1, "inf"), 6: ("b", 0, "nan")}),
    ("sgd_momentum_growth3", "SGD", {"learning_rate": 0.125, "momentum": 0.5},
     {"initial_scale": 2.0**10, "dynamic_growth_steps": 3}, "float32", 12,
     {1: ("w", 7, "-inf"), 5: ("b", 2, "nan"), 6: ("b", 2, "inf")}),
    ("adam_growth2", "Adam", ADAM,
     {"initial_scale": 2.0**15, "dynamic_growth_steps": 2}, "float32", 10,
     {3: ("b", 0, "nan"), 4: ("w", 14, "inf")}),
    # a scale that is not a power of two: the unscaled gradients round
    ("adam_growth1_scale3", "Adam", ADAM,
     {"initial_scale": 3.0, "dynamic_growth_steps": 1}, "float32", 8,
     {2: ("b", 1, "inf"), 5: ("w", 0, "nan")}),
    # 0.1 is rounded to float32 for the scale variable
    ("sgd_scale_tenth", "SGD", {"learning_rate": 0.25},
     {"initial_scale": 0.1, "dynamic_growth_steps": 3}, "float32", 8,
     {4: ("b", 2, "-inf")}),
]


def gradients(rng, n_steps, dtype, bad):
    """Per-step gradients of w (5, 3) and b (3,): float32 normal values times
    a factor the scale would give, with the listed bad elements."""
    gw = (rng.standard_normal((n_steps, 5, 3)) * 64).astype(np.float32)
    gb = (rng.standard_normal((n_steps, 3)) * 64).astype(np.float32)
    gw, gb = gw.astype(dtype), gb.astype(dtype)
    for step, (which, position, value) in bad.items():
        target = gw if which == "w" else gb
        target[step].reshape(-1)[position] = float(value)
    return gw, gb


def run_case(rng, inner_name, inner_kwargs, scale_kwargs, dtype, n_steps, bad):
    w0 = rng.standard_normal((5, 3)).astype(np.float32).astype(dtype)
    b0 = rng.standard_normal(3).astype(np.float32).astype(dtype)
    gw, gb = gradients(rng, n_steps, dtype, bad)
    inner = getattr(keras.optimizers, inner_name)(**inner_kwargs)
    opt = keras.optimizers.LossScaleOptimizer(inner, **scale_kwargs)
    w = keras.Variable(w0, dtype=dtype)
    b = keras.Variable(b0, dtype=dtype)
    opt.build([w, b])
    out = {"w0": w0, "b0": b0, "gw": gw, "gb": gb, "w": [], "b": [],
           "scale": [], "counter": [], "iterations": []}
    for step in range(n_steps):
        opt.apply([gw[step], gb[step]], [w, b])
        out["w"].append(np.asarray(w.numpy()))
        out["b"].append(np.asarray(b.numpy()))
        out["scale"].append(np.asarray(opt.dynamic_scale.numpy()))
        out["counter"].append(np.asarray(opt.step_counter.numpy()))
        out["iterations"].append(np.asarray(opt.iterations.numpy()))
    for key in ("w", "b", "scale", "counter", "iterations"):
        out[key] = np.stack(out[key])
    assert out["scale"].dtype == np.float32, out["scale"].dtype
    return out


def main():
    rng = np.random.default_rng(SEED)
    arrays = {}
    listed = []
    for case, inner_name, inner_kwargs, scale_kwargs, dtype, n, bad in CASES:
        out = run_case(rng, inner_name, inner_kwargs, scale_kwargs, dtype, n, bad)
        for key, value in out.items():
            arrays[f"{case}/{key}"] = value
        listed.append([case, inner_name, inner_kwargs, scale_kwargs, dtype])
    arrays["__cases__"] = np.asarray(json.dumps(listed))
    arrays["__versions__"] = np.asarray(json.dumps(
        {"keras": keras.__version__, "backend": keras.backend.backend()}))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT}: {len(listed)} cases")


if __name__ == "__main__":
    main()
