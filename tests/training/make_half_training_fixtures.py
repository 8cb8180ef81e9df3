"""Generate the float16 and bfloat16 golden fixtures of the training ops.

Run once, with an interpreter that has TensorFlow 2.21 (CI never does)::

    /work/peers/tfenv/bin/python tests/training/make_half_training_fixtures.py

For every raw op that TensorFlow has a CPU half kernel for (reference
section 2.3: float16 for all of them, bfloat16 for all but AdaMax and the
sparse RMSProp ops), dense and sparse, it calls ``tf.raw_ops.ResourceApply*``
/ ``ResourceSparseApply*`` eagerly on seeded inputs, a few steps in a row
(each step takes the state the previous one left), and writes
``tests/training/fixtures/training_ops_half.npz``.  The layout is that of
``training_ops.npz`` (``make_training_fixtures.py``) with the half arrays
stored as their bits: per case ``<case>/data``, a uint16 array (every input,
scalars included, then TensorFlow's state after each step), and
``<case>/meta``, a JSON string with our op name, ``dtype`` ("float16" or
"bfloat16", which npz cannot store), the attributes, ``state``, ``steps``,
``fields`` (``["in/<name>" or "out/<name>", shape]``: the gradient is
``[steps, ...]``, each output ``[steps, ...]``, the state after each step),
the integer inputs (``ints``: indices, the same at every step), ``kind``
("random" or "denormal": denormal values of T in var and grad, and a zero of
each sign) and ``special``: which of rsqrt, pow and exp the case's path uses
(reference 1.6 allows 1 ulp of T on them; the model of half_model.py needs
none, but its rsqrt rounds as Eigen's packets and scalar code do).
"""

import json
import os

import ml_dtypes
import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "training_ops_half.npz")
DTYPES = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}

_ADAM = dict(beta1_power=0.9**3, beta2_power=0.99**3, lr=0.01, beta1=0.9,
             beta2=0.99, epsilon=1e-7)
_RMS = dict(lr=0.01, rho=0.9, momentum=0.5, epsilon=1e-6)
_FTRL = dict(lr=0.1, l1=0.05, l2=0.2, lr_power=-0.5)
_MLR = [{"multiply_linear_by_lr": False}, {"multiply_linear_by_lr": True}]
_NESTEROV = [{"use_nesterov": False}, {"use_nesterov": True}]
ALL, F16 = ("float16", "bfloat16"), ("float16",)

# name -> (TF op suffix, state, dense gradient name, scalars, variants of
#          (scalar changes, attrs), dense dtypes, sparse dtypes or ())
OPS = {
    "gradient_descent": ("GradientDescent", ["var"], "delta", dict(alpha=0.1),
                         [({}, {})], ALL, ()),
    "adadelta": ("Adadelta", ["var", "accum", "accum_update"], "grad",
                 dict(lr=0.5, rho=0.9, epsilon=1e-6), [({}, {})], ALL, ALL),
    "adagrad": ("Adagrad", ["var", "accum"], "grad", dict(lr=0.1),
                [({}, {"update_slots": True}), ({}, {"update_slots": False})],
                ALL, ALL),
    "adagrad_v2": ("AdagradV2", ["var", "accum"], "grad",
                   dict(lr=0.1, epsilon=1e-7),
                   [({}, {"update_slots": True}), ({}, {"update_slots": False})],
                   ALL, ALL),
    "ftrl": ("Ftrl", ["var", "accum", "linear"], "grad", _FTRL,
             [({}, a) for a in _MLR]
             + [(dict(l1=0.0), _MLR[0]), (dict(lr_power=0.0), _MLR[0])]
             + [(dict(lr_power=-0.3), a) for a in _MLR],
             ALL, ALL),
    "ftrl_v2": ("FtrlV2", ["var", "accum", "linear"], "grad",
                dict(_FTRL, l2_shrinkage=0.1),
                [({}, a) for a in _MLR] + [(dict(lr_power=-0.3), _MLR[1])],
                ALL, ALL),
    "momentum": ("Momentum", ["var", "accum"], "grad", dict(lr=0.1, momentum=0.9),
                 [({}, a) for a in _NESTEROV], ALL, ALL),
    "keras_momentum": ("KerasMomentum", ["var", "accum"], "grad",
                       dict(lr=0.1, momentum=0.9), [({}, a) for a in _NESTEROV],
                       ALL, ALL),
    "adam": ("Adam", ["var", "m", "v"], "grad", _ADAM,
             [({}, a) for a in _NESTEROV], ALL, ()),
    "adam_with_amsgrad": ("AdamWithAmsgrad", ["var", "m", "v", "vhat"], "grad",
                          _ADAM, [({}, {})], ALL, ()),
    "ada_max": ("AdaMax", ["var", "m", "v"], "grad",
                dict(beta1_power=0.9**3, lr=0.01, beta1=0.9, beta2=0.99,
                     epsilon=1e-7),
                [({}, {})], F16, ()),
    "rms_prop": ("RMSProp", ["var", "ms", "mom"], "grad", _RMS, [({}, {})], ALL, F16),
    "centered_rms_prop": ("CenteredRMSProp", ["var", "mg", "ms", "mom"], "grad",
                          _RMS, [({}, {})], ALL, F16),
    "add_sign": ("AddSign", ["var", "m"], "grad",
                 dict(lr=0.1, alpha=1.0, sign_decay=0.5, beta=0.9), [({}, {})],
                 ALL, ()),
    "power_sign": ("PowerSign", ["var", "m"], "grad",
                   dict(lr=0.1, logbase=float(np.log(2.0)), sign_decay=0.5,
                        beta=0.9),
                   [({}, {})], ALL, ()),
}

# The paths that use rsqrt (reference 1.3).
RSQRT_DENSE = {"adadelta", "adagrad"}
RSQRT_SPARSE_ROW = {"adadelta", "adagrad", "rms_prop", "centered_rms_prop"}
RSQRT_SPARSE_SCALAR = {"adadelta", "rms_prop", "centered_rms_prop"}

INDICES = [3, 0, 3, 5, 3]
# The smallest denormal of each type, and how many multiples of it are
# denormal.
TINY = {"float16": (2.0**-24, 1023), "bfloat16": (2.0**-133, 127)}


def special(name, sparse, scalar_path, scalars):
    """The functions with results the reference rounds specially."""
    out = []
    p = scalars.get("lr_power", -0.5)
    if name.startswith("ftrl") and (p != -0.5 or (sparse and scalar_path)):
        out.append("pow")
    if name == "power_sign":
        out.append("exp")
    rsqrt = (RSQRT_SPARSE_SCALAR if scalar_path else RSQRT_SPARSE_ROW) if sparse \
        else RSQRT_DENSE
    if name in rsqrt:
        out.append("rsqrt")
    return out


def initial(name, shape, rng, dtype):
    if name in ("var", "linear", "m", "grad", "delta"):
        x = rng.normal(size=shape)
    elif name in ("mg", "mom"):
        x = 0.1 * rng.normal(size=shape)
    else:  # accumulators and second moments: positive
        x = rng.uniform(0.5, 1.5, size=shape)
    return np.asarray(x).astype(dtype)


def with_denormals(x, rng, tag):
    """`x` with about 40% of its values denormal, and a +0 and a -0."""
    tiny, most = TINY[tag]
    x = x.copy()
    flat = x.reshape(-1)
    mask = rng.random(flat.shape[0]) < 0.4
    values = rng.integers(1, most + 1, size=flat.shape[0]) * tiny
    values *= rng.choice([-1.0, 1.0], size=flat.shape[0])
    flat[mask] = values[mask].astype(x.dtype)
    if flat.shape[0] >= 2:
        flat[0], flat[-1] = 0.0, -0.0
    return x


def run_case(store, case, name, sparse, shape, tag, scalars, attrs, rng, steps,
             kind, indices=None):
    suffix, state, gname = OPS[name][:3]
    dtype = DTYPES[tag]
    if sparse:
        gname = "grad"
    inputs = {s: initial(s, shape, rng, dtype) for s in state}
    gshape = (len(indices),) + shape[1:] if sparse else shape
    grads = np.stack([initial("grad", gshape, rng, dtype) for _ in range(steps)])
    if kind == "denormal":
        inputs["var"] = with_denormals(inputs["var"], rng, tag)
        grads = with_denormals(grads, rng, tag)
    inputs[gname] = grads
    variables = {s: tf.Variable(inputs[s]) for s in state}
    kwargs = {s: variables[s].handle for s in state}
    for key, value in scalars.items():
        inputs[key] = np.asarray(value).astype(dtype)
        kwargs[key] = tf.constant(inputs[key])
    if sparse:
        kwargs["indices"] = tf.constant(indices, tf.int64)
    op = getattr(tf.raw_ops, ("ResourceSparseApply" if sparse else "ResourceApply")
                 + suffix)
    outs = {s: [] for s in state}
    for step in range(steps):
        kwargs[gname] = tf.constant(grads[step])
        op(**kwargs, **attrs)
        for s in state:
            outs[s].append(variables[s].numpy())
    fields, chunks = [], []
    for key, value in inputs.items():
        fields.append(["in/" + key, list(value.shape)])
        chunks.append(value.reshape(-1))
    for s in state:
        out = np.stack(outs[s])
        assert out.dtype == dtype
        fields.append(["out/" + s, list(out.shape)])
        chunks.append(out.reshape(-1))
    scalar_path = sparse and int(np.prod(shape[1:], dtype=np.int64)) == 1
    meta = dict(
        op=("sparse_apply_" if sparse else "apply_") + name,
        dtype=tag,
        attrs=attrs,
        state=state,
        steps=steps,
        fields=fields,
        ints={"indices": list(indices)} if sparse else {},
        kind=kind,
        special=special(name, sparse, scalar_path, scalars),
    )
    store[f"{case}/meta"] = np.asarray(json.dumps(meta))
    store[f"{case}/data"] = np.concatenate(
        [c.astype(dtype).view(np.uint16) for c in chunks])


def main():
    rng = np.random.default_rng(20270321)
    store = {}
    for name, (_, _, _, base, variants, dense_tags, sparse_tags) in OPS.items():
        for j, (change, attrs) in enumerate(variants):
            scalars = {**base, **change}
            for tag in ALL:
                common = (scalars, attrs, rng)
                if tag in dense_tags:
                    run_case(store, f"dense/{name}/{tag}/{j}/random", name, False,
                             (7, 5), tag, *common, 3, "random")
                    run_case(store, f"dense/{name}/{tag}/{j}/denormal", name, False,
                             (4, 6), tag, *common, 2, "denormal")
                if tag not in sparse_tags:
                    continue
                # rows of 4: Eigen's scalar code; of 19: two packets of 8
                # and a tail of 3 (rsqrt rounds differently in each)
                shapes = [(6, 4), (6,)] + ([(6, 1), (6, 19)] if j == 0 else [])
                for shape in shapes:
                    shape_tag = "x".join(map(str, shape))
                    run_case(store, f"sparse/{name}/{tag}/{j}/random/{shape_tag}",
                             name, True, shape, tag, *common, 2, "random", INDICES)
                run_case(store, f"sparse/{name}/{tag}/{j}/denormal/6x4", name, True,
                         (6, 4), tag, *common, 2, "denormal", INDICES)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    np.savez_compressed(OUT, **store)
    print(f"wrote {len(store) // 2} cases to {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
