"""Generate the golden fixtures for tests/training/test_optimizers_golden.py.

Run once, with TensorFlow installed (CI never runs this)::

    /tmp/tfenv/bin/python tests/training/make_optimizer_fixtures.py

For each case it trains two variables (a (5, 3) matrix and a (3,) vector) for
five steps with a fixed stream of dense gradients and records the variables
after every step.  Optimizers that Keras 3 has come from ``tf.keras``
(Keras 3 in TensorFlow 2.21); ProximalGradientDescent and ProximalAdagrad come
from TensorFlow's raw training ops, which is what
``tf.compat.v1.train.Proximal*Optimizer`` run.

Hyper-parameters are exactly representable in float32 (powers of two and
their short sums) except in the ``*_defaults`` cases: Keras 3 keeps the learning
rate in a float32 variable and converts Python-float hyper-parameters to float32
tensors before casting them to a float64 variable's dtype, so only such values
mean the same number to both libraries.

Output: ``tests/training/fixtures/optimizer_goldens.npz`` (``... nadam``:
``optimizer_goldens_nadam.npz``, the Nadam cases; ``... lamb``:
``optimizer_goldens_lamb.npz``, the Lamb cases).  Each case ``c`` and
dtype ``d`` stores ``c/d/w0``, ``c/d/b0`` (initial values), ``c/d/gw``, ``c/d/gb``
(gradients, one per step) and ``c/d/w``, ``c/d/b`` (values after each step);
``__cases__`` holds the JSON list of ``[case, class name, kwargs]``.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

N_STEPS = 5
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "optimizer_goldens.npz")

# case name, sparsegrad class name, keyword arguments (shared by both libraries
# except where translated in `keras_optimizer`).
CASES = [
    ("sgd", "SGD", {"learning_rate": 0.125}),
    ("sgd_momentum", "SGD", {"learning_rate": 0.125, "momentum": 0.875}),
    (
        "sgd_nesterov",
        "SGD",
        {"learning_rate": 0.125, "momentum": 0.5, "nesterov": True},
    ),
    ("sgd_clipnorm", "SGD", {"learning_rate": 0.125, "clipnorm": 0.5}),
    ("sgd_global_clipnorm", "SGD", {"learning_rate": 0.125, "global_clipnorm": 0.75}),
    ("sgd_clipvalue", "SGD", {"learning_rate": 0.125, "clipvalue": 0.25}),
    ("adagrad", "Adagrad", {"learning_rate": 0.125, "initial_accumulator_value": 0.25}),
    (
        "adagrad_eps0",
        "Adagrad",
        {"learning_rate": 0.125, "epsilon": 0.0, "initial_accumulator_value": 0.5},
    ),
    ("adadelta", "Adadelta", {"learning_rate": 1.0, "rho": 0.875, "epsilon": 2.0**-20}),
    (
        "adam",
        "Adam",
        {
            "learning_rate": 0.0625,
            "beta_1": 0.875,
            "beta_2": 1 - 2.0**-9,
            "epsilon": 2.0**-20,
        },
    ),
    (
        "adam_amsgrad",
        "Adam",
        {
            "learning_rate": 0.0625,
            "amsgrad": True,
            "beta_1": 0.75,
            "beta_2": 0.875,
            "epsilon": 2.0**-20,
        },
    ),
    (
        "adam_schedule",
        "Adam",
        {
            "learning_rate": [
                "ExponentialDecay",
                {
                    "initial_learning_rate": 0.125,
                    "decay_steps": 2,
                    "decay_rate": 0.5,
                    "staircase": True,
                },
            ],
            "beta_1": 0.875,
            "beta_2": 0.96875,
            "epsilon": 2.0**-20,
        },
    ),
    (
        "adamw",
        "AdamW",
        {
            "learning_rate": 0.0625,
            "weight_decay": 0.25,
            "beta_1": 0.875,
            "beta_2": 0.96875,
            "epsilon": 2.0**-20,
        },
    ),
    (
        "adamax",
        "Adamax",
        {
            "learning_rate": 0.0625,
            "beta_1": 0.875,
            "beta_2": 0.96875,
            "epsilon": 2.0**-20,
        },
    ),
    ("ftrl", "Ftrl", {"learning_rate": 0.25, "initial_accumulator_value": 0.125}),
    (
        "ftrl_reg",
        "Ftrl",
        {
            "learning_rate": 0.25,
            "initial_accumulator_value": 0.125,
            "l1_regularization_strength": 0.0625,
            "l2_regularization_strength": 0.125,
            "l2_shrinkage_regularization_strength": 0.03125,
            "beta": 0.5,
        },
    ),
    (
        "ftrl_power",
        "Ftrl",
        {
            "learning_rate": 0.25,
            "learning_rate_power": -0.25,
            "initial_accumulator_value": 0.125,
            "l1_regularization_strength": 0.0625,
        },
    ),
    (
        "rmsprop",
        "RMSprop",
        {"learning_rate": 0.0625, "rho": 0.875, "epsilon": 2.0**-20},
    ),
    (
        "rmsprop_momentum",
        "RMSprop",
        {"learning_rate": 0.0625, "momentum": 0.5, "rho": 0.875, "epsilon": 2.0**-20},
    ),
    (
        "rmsprop_centered",
        "RMSprop",
        {"learning_rate": 0.0625, "centered": True, "rho": 0.875, "epsilon": 2.0**-20},
    ),
    (
        "rmsprop_centered_momentum",
        "RMSprop",
        {
            "learning_rate": 0.0625,
            "momentum": 0.5,
            "centered": True,
            "rho": 0.75,
            "epsilon": 2.0**-20,
        },
    ),
    (
        "proximal_gd",
        "ProximalGradientDescent",
        {
            "learning_rate": 0.125,
            "l1_regularization_strength": 0.02,
            "l2_regularization_strength": 0.5,
        },
    ),
    (
        "proximal_adagrad",
        "ProximalAdagrad",
        {
            "learning_rate": 0.125,
            "initial_accumulator_value": 0.1,
            "l1_regularization_strength": 0.02,
            "l2_regularization_strength": 0.5,
        },
    ),
    # Keras defaults: Keras 3 converts Python-float hyper-parameters (0.9,
    # 0.999, 1e-7, 0.1) to float32 before casting them to a float64
    # variable's dtype, so float64 results differ from ours in the 6th digit.
    ("adam_defaults", "Adam", {}),
    ("adagrad_defaults", "Adagrad", {}),
    ("rmsprop_defaults", "RMSprop", {"momentum": 0.9}),
    ("ftrl_defaults", "Ftrl", {}),
    ("lion", "Lion", {"learning_rate": 0.0625, "beta_1": 0.75, "beta_2": 0.96875}),
    (
        "lion_schedule",
        "Lion",
        {
            "learning_rate": [
                "ExponentialDecay",
                {
                    "initial_learning_rate": 0.125,
                    "decay_steps": 2,
                    "decay_rate": 0.5,
                    "staircase": True,
                },
            ],
            "beta_1": 0.5,
            "beta_2": 0.875,
            "clipnorm": 0.5,
        },
    ),
    ("lion_defaults", "Lion", {}),
]


# Nadam (issue 27), in a file of its own (``optimizer_goldens_nadam.npz``,
# written by ``make_optimizer_fixtures.py nadam``) so that adding it left the
# other goldens untouched.
NADAM_OUT = os.path.join(HERE, "fixtures", "optimizer_goldens_nadam.npz")
NADAM_CASES = [
    (
        "nadam",
        "Nadam",
        {
            "learning_rate": 0.0625,
            "beta_1": 0.875,
            "beta_2": 1 - 2.0**-9,
            "epsilon": 2.0**-20,
        },
    ),
    (
        "nadam_schedule",
        "Nadam",
        {
            "learning_rate": [
                "ExponentialDecay",
                {
                    "initial_learning_rate": 0.125,
                    "decay_steps": 2,
                    "decay_rate": 0.5,
                    "staircase": True,
                },
            ],
            "beta_1": 0.75,
            "beta_2": 0.96875,
            "epsilon": 2.0**-20,
        },
    ),
    ("nadam_clipnorm", "Nadam", {"learning_rate": 0.125, "clipnorm": 0.5}),
    ("nadam_defaults", "Nadam", {}),
]
# Lamb (issue 27), likewise apart (``make_optimizer_fixtures.py lamb``).
LAMB_OUT = os.path.join(HERE, "fixtures", "optimizer_goldens_lamb.npz")
LAMB_CASES = [
    (
        "lamb",
        "Lamb",
        {
            "learning_rate": 0.0625,
            "beta_1": 0.875,
            "beta_2": 1 - 2.0**-9,
            "epsilon": 2.0**-20,
        },
    ),
    (
        "lamb_schedule",
        "Lamb",
        {
            "learning_rate": [
                "ExponentialDecay",
                {
                    "initial_learning_rate": 0.125,
                    "decay_steps": 2,
                    "decay_rate": 0.5,
                    "staircase": True,
                },
            ],
            "beta_1": 0.75,
            "beta_2": 0.96875,
            "epsilon": 2.0**-20,
        },
    ),
    (
        "lamb_global_clipnorm",
        "Lamb",
        {
            "learning_rate": 0.125,
            "global_clipnorm": 0.75,
            "beta_1": 0.75,
            "beta_2": 0.9375,
            "epsilon": 2.0**-20,
        },
    ),
    ("lamb_defaults", "Lamb", {}),
]
SETS = {"main": (CASES, OUT, 20261122), "nadam": (NADAM_CASES, NADAM_OUT, 20270527),
        "lamb": (LAMB_CASES, LAMB_OUT, 20271127)}


def keras_optimizer(cls_name, kwargs):
    kwargs = dict(kwargs)
    lr = kwargs.get("learning_rate")
    if isinstance(lr, list):
        kwargs["learning_rate"] = getattr(tf.keras.optimizers.schedules, lr[0])(**lr[1])
    return getattr(tf.keras.optimizers, cls_name)(**kwargs)


def raw_op_runner(cls_name, kwargs, variables, dtype):
    """A step function built on tf.raw_ops, for the optimizers Keras lacks."""
    lr = tf.constant(kwargs["learning_rate"], dtype)
    l1 = tf.constant(kwargs["l1_regularization_strength"], dtype)
    l2 = tf.constant(kwargs["l2_regularization_strength"], dtype)
    if cls_name == "ProximalGradientDescent":

        def step(grads):
            for var, g in zip(variables, grads):
                tf.raw_ops.ResourceApplyProximalGradientDescent(
                    var=var.handle, alpha=lr, l1=l1, l2=l2, delta=g
                )

        return step
    accums = [
        tf.Variable(
            tf.fill(v.shape, tf.constant(kwargs["initial_accumulator_value"], dtype))
        )
        for v in variables
    ]

    def step(grads):
        for var, acc, g in zip(variables, accums, grads):
            tf.raw_ops.ResourceApplyProximalAdagrad(
                var=var.handle, accum=acc.handle, lr=lr, l1=l1, l2=l2, grad=g
            )

    return step


def main(which="main"):
    cases, out, seed = SETS[which]
    rng = np.random.default_rng(seed)
    arrays = {}
    for case, cls_name, kwargs in cases:
        for dtype in (np.float32, np.float64):
            key = f"{case}/{np.dtype(dtype).name}"
            w0 = rng.standard_normal((5, 3)).astype(dtype)
            b0 = rng.standard_normal(3).astype(dtype)
            gw = rng.standard_normal((N_STEPS, 5, 3)).astype(dtype)
            gb = rng.standard_normal((N_STEPS, 3)).astype(dtype)
            w = tf.Variable(w0)
            b = tf.Variable(b0)
            if cls_name in ("ProximalGradientDescent", "ProximalAdagrad"):
                step = raw_op_runner(cls_name, kwargs, [w, b], dtype)
            else:
                opt = keras_optimizer(cls_name, kwargs)

                def step(grads, opt=opt, w=w, b=b):
                    opt.apply_gradients(zip(grads, [w, b]))

            ws, bs = [], []
            for k in range(N_STEPS):
                step([tf.constant(gw[k]), tf.constant(gb[k])])
                ws.append(w.numpy())
                bs.append(b.numpy())
            arrays.update(
                {
                    f"{key}/w0": w0,
                    f"{key}/b0": b0,
                    f"{key}/gw": gw,
                    f"{key}/gb": gb,
                    f"{key}/w": np.stack(ws),
                    f"{key}/b": np.stack(bs),
                }
            )
    arrays["__cases__"] = np.array(json.dumps(cases))
    arrays["__versions__"] = np.array(
        json.dumps({"tensorflow": tf.__version__, "keras": tf.keras.__version__})
    )
    os.makedirs(os.path.dirname(out), exist_ok=True)
    np.savez_compressed(out, **arrays)
    print(f"wrote {out}: {len(cases)} cases x 2 dtypes")


if __name__ == "__main__":
    main(*sys.argv[1:])
