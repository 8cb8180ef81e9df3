"""Generate the golden fixtures of the training-op tests from TensorFlow.

Run once, with an interpreter that has TensorFlow (CI never does)::

    /tmp/tfenv/bin/python tests/training/make_training_fixtures.py

It calls ``tf.raw_ops.ResourceApply*`` / ``ResourceSparseApply*`` eagerly on
seeded inputs and writes ``tests/training/fixtures/training_ops.npz`` with two
entries per case: ``<case>/data``, every float input (scalars included) and
every variable after the op, flattened and concatenated in the variable's
dtype, and ``<case>/meta``, a JSON string with our op name, its attributes, the
layout of ``data`` (``fields``: ``["in/<name>" or "out/<name>", shape]``), the
integer inputs (indices, global_step), and the tolerance the reference
prescribes (``rtol``, 0 for bit-exact).  The tests call ``sparsegrad.training_ops`` with
the same keyword arguments (our argument names are TensorFlow's).
"""

import json
import os

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "training_ops.npz")

# name -> (TF op suffix, state inputs, gradient name, scalars, attr variants)
DENSE = {
    "gradient_descent": ("GradientDescent", ["var"], "delta", dict(alpha=0.1), [{}]),
    "proximal_gradient_descent": (
        "ProximalGradientDescent",
        ["var"],
        "delta",
        dict(alpha=0.1, l1=0.05, l2=0.2),
        [{}],
    ),
    "adadelta": (
        "Adadelta",
        ["var", "accum", "accum_update"],
        "grad",
        dict(lr=0.5, rho=0.9, epsilon=1e-6),
        [{}],
    ),
    "adagrad": (
        "Adagrad",
        ["var", "accum"],
        "grad",
        dict(lr=0.1),
        [{"update_slots": True}, {"update_slots": False}],
    ),
    "adagrad_v2": (
        "AdagradV2",
        ["var", "accum"],
        "grad",
        dict(lr=0.1, epsilon=1e-7),
        [{"update_slots": True}, {"update_slots": False}],
    ),
    "proximal_adagrad": (
        "ProximalAdagrad",
        ["var", "accum"],
        "grad",
        dict(lr=0.1, l1=0.05, l2=0.2),
        [{}],
    ),
    "adagrad_da": (
        "AdagradDA",
        ["var", "gradient_accumulator", "gradient_squared_accumulator"],
        "grad",
        dict(lr=0.1, l1=0.01, l2=0.2, global_step=7),
        [{}],
    ),
    "ftrl": (
        "Ftrl",
        ["var", "accum", "linear"],
        "grad",
        dict(lr=0.1, l1=0.05, l2=0.2, lr_power=-0.5),
        [{"multiply_linear_by_lr": False}, {"multiply_linear_by_lr": True}],
    ),
    "ftrl_v2": (
        "FtrlV2",
        ["var", "accum", "linear"],
        "grad",
        dict(lr=0.1, l1=0.05, l2=0.2, l2_shrinkage=0.1, lr_power=-0.5),
        [{"multiply_linear_by_lr": False}, {"multiply_linear_by_lr": True}],
    ),
    "momentum": (
        "Momentum",
        ["var", "accum"],
        "grad",
        dict(lr=0.1, momentum=0.9),
        [{"use_nesterov": False}, {"use_nesterov": True}],
    ),
    "keras_momentum": (
        "KerasMomentum",
        ["var", "accum"],
        "grad",
        dict(lr=0.1, momentum=0.9),
        [{"use_nesterov": False}, {"use_nesterov": True}],
    ),
    "adam": (
        "Adam",
        ["var", "m", "v"],
        "grad",
        dict(
            beta1_power=0.9**3,
            beta2_power=0.999**3,
            lr=0.01,
            beta1=0.9,
            beta2=0.999,
            epsilon=1e-7,
        ),
        [{"use_nesterov": False}, {"use_nesterov": True}],
    ),
    "adam_with_amsgrad": (
        "AdamWithAmsgrad",
        ["var", "m", "v", "vhat"],
        "grad",
        dict(
            beta1_power=0.9**3,
            beta2_power=0.999**3,
            lr=0.01,
            beta1=0.9,
            beta2=0.999,
            epsilon=1e-7,
        ),
        [{}],
    ),
    "ada_max": (
        "AdaMax",
        ["var", "m", "v"],
        "grad",
        dict(beta1_power=0.9**3, lr=0.01, beta1=0.9, beta2=0.999, epsilon=1e-7),
        [{}],
    ),
    "rms_prop": (
        "RMSProp",
        ["var", "ms", "mom"],
        "grad",
        dict(lr=0.01, rho=0.9, momentum=0.5, epsilon=1e-6),
        [{}],
    ),
    "centered_rms_prop": (
        "CenteredRMSProp",
        ["var", "mg", "ms", "mom"],
        "grad",
        dict(lr=0.01, rho=0.9, momentum=0.5, epsilon=1e-6),
        [{}],
    ),
    "add_sign": (
        "AddSign",
        ["var", "m"],
        "grad",
        dict(lr=0.1, alpha=1.0, sign_decay=0.5, beta=0.9),
        [{}],
    ),
    "power_sign": (
        "PowerSign",
        ["var", "m"],
        "grad",
        dict(lr=0.1, logbase=float(np.log(2.0)), sign_decay=0.5, beta=0.9),
        [{}],
    ),
}

SPARSE = [
    "proximal_gradient_descent",
    "adadelta",
    "adagrad",
    "adagrad_v2",
    "proximal_adagrad",
    "adagrad_da",
    "ftrl",
    "ftrl_v2",
    "momentum",
    "keras_momentum",
    "rms_prop",
    "centered_rms_prop",
]

# Extra FTRL variants: l1 = 0 and a general lr_power (pow, tolerance).
FTRL_EXTRA = [
    dict(l1=0.0),
    dict(lr_power=0.0),
    dict(lr_power=-0.3),
]

RSQRT_DENSE = {"adadelta", "adagrad", "proximal_adagrad"}
RSQRT_SPARSE_ROW = {
    "adadelta",
    "adagrad",
    "proximal_adagrad",
    "rms_prop",
    "centered_rms_prop",
}
RSQRT_SPARSE_SCALAR = {"adadelta", "rms_prop", "centered_rms_prop"}


def initial(name, shape, rng, dtype):
    if name in (
        "var",
        "linear",
        "m",
        "gradient_accumulator",
        "accum_update_signed",
    ) or name in ("grad", "delta"):
        x = rng.normal(size=shape)
    elif name == "mg" or name == "mom":
        x = 0.1 * rng.normal(size=shape)
    else:  # accumulators and second moments: positive
        x = rng.uniform(0.5, 1.5, size=shape)
    return x.astype(dtype)


def tolerance(name, dtype, sparse, scalar_path, scalars):
    """rtol from reference section 1.6 (0 = bit-exact)."""
    p = scalars.get("lr_power", -0.5)
    general_pow = name.startswith("ftrl") and p not in (-0.5, 0.0)
    if dtype == np.float64:
        if name == "power_sign":  # Eigen's exp is not libm's: 1 ulp seen
            return 1e-15
        return 1e-12 if general_pow else 0.0
    if general_pow:
        return 2e-3
    if name == "power_sign":
        return 3e-7
    if not sparse and name in RSQRT_DENSE:
        return 1e-6
    if sparse:
        rs = RSQRT_SPARSE_SCALAR if scalar_path else RSQRT_SPARSE_ROW
        if name in rs:
            return 1e-6
    return 0.0


def tf_op(name, sparse):
    suffix = DENSE[name][0]
    return getattr(
        tf.raw_ops, ("ResourceSparseApply" if sparse else "ResourceApply") + suffix
    )


def run_case(
    store, case, name, sparse, shape, dtype, scalars, attrs, rng, indices=None
):
    _, state, gname, _, _ = DENSE[name]
    if sparse:
        gname = "grad"
    inputs = {s: initial(s, shape, rng, dtype) for s in state}
    gshape = (len(indices),) + shape[1:] if sparse else shape
    inputs[gname] = initial("grad", gshape, rng, dtype)
    tf_dtype = tf.as_dtype(dtype)
    variables = {s: tf.Variable(inputs[s]) for s in state}
    kwargs = {s: variables[s].handle for s in state}
    kwargs[gname] = tf.constant(inputs[gname])
    for key, value in scalars.items():
        if key == "global_step":
            kwargs[key] = tf.constant(value, tf.int64)
            inputs[key] = np.asarray(value, np.int64)
        else:
            inputs[key] = np.asarray(value, dtype)
            kwargs[key] = tf.constant(inputs[key], tf_dtype)
    if sparse:
        kwargs["indices"] = tf.constant(indices, tf.int64)
        inputs["indices"] = np.asarray(indices, np.int64)
    tf_op(name, sparse)(**kwargs, **attrs)
    op = ("sparse_apply_" if sparse else "apply_") + name
    scalar_path = sparse and int(np.prod(shape[1:], dtype=np.int64)) == 1
    fields, chunks, ints = [], [], {}
    for key, value in inputs.items():
        if value.dtype.kind == "i":
            ints[key] = value.tolist()
        else:
            fields.append(["in/" + key, list(value.shape)])
            chunks.append(value.ravel())
    for s in state:
        out = variables[s].numpy()
        fields.append(["out/" + s, list(out.shape)])
        chunks.append(out.ravel())
    meta = dict(
        op=op,
        attrs=attrs,
        state=state,
        fields=fields,
        ints=ints,
        rtol=tolerance(name, dtype, sparse, scalar_path, scalars),
    )
    store[f"{case}/meta"] = np.asarray(json.dumps(meta))
    store[f"{case}/data"] = np.concatenate(chunks).astype(dtype)


def main():
    rng = np.random.default_rng(20261122)
    store = {}
    dense_shape = (7, 5)
    sparse_shapes = [(6, 5), (6,)]
    indices = [3, 0, 3, 5, 3]
    for dtype in (np.float32, np.float64):
        tag = np.dtype(dtype).name
        for name, (_, _, _, scalars, variants) in DENSE.items():
            extra = FTRL_EXTRA if name.startswith("ftrl") else []
            all_scalars = [scalars] + [{**scalars, **e} for e in extra]
            for k, sc in enumerate(all_scalars):
                for j, attrs in enumerate(variants):
                    run_case(
                        store,
                        f"dense/{name}/{tag}/{k}{j}",
                        name,
                        False,
                        dense_shape,
                        dtype,
                        sc,
                        attrs,
                        rng,
                    )
                    if name not in SPARSE:
                        continue
                    for shape in sparse_shapes:
                        shape_tag = "x".join(map(str, shape))
                        run_case(
                            store,
                            f"sparse/{name}/{tag}/{k}{j}/{shape_tag}",
                            name,
                            True,
                            shape,
                            dtype,
                            sc,
                            attrs,
                            rng,
                            indices,
                        )
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    np.savez_compressed(OUT, **store)
    print(f"wrote {len(store)} arrays to {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
