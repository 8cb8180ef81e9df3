"""Optimizers against Keras 3 / TensorFlow 2.21 goldens (dense gradients).

The fixture comes from tests/training/make_optimizer_fixtures.py: two
variables, five steps, float32 and float64.  Where our class and Keras 3 use
the same formula in the same operation order the results are bit-identical;
elsewhere the tolerance below says why they differ.
"""

import json
import os

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.training import optimizers as opt_mod

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
# optimizer_goldens_nadam.npz and _lamb.npz: the Nadam and Lamb cases (issue
# 27), made apart.
_FILES = [np.load(os.path.join(HERE, name))
          for name in ("optimizer_goldens.npz", "optimizer_goldens_nadam.npz",
                       "optimizer_goldens_lamb.npz")]
DATA = {key: f[key] for f in _FILES for key in f.files if not key.startswith("__")}
CASES = [case for f in _FILES for case in json.loads(str(f["__cases__"]))]

# Cases whose formulas and operation order match Keras 3 (or the TF raw op)
# exactly: compared bit for bit in both dtypes.
BIT_EXACT = {
    "sgd", "sgd_momentum", "sgd_nesterov", "sgd_clipnorm", "sgd_clipvalue",
    "adagrad_eps0", "adadelta", "adam", "adam_amsgrad", "adam_schedule", "adamw",
    "proximal_gd", "lion", "lion_schedule",
    "nadam", "nadam_schedule",
}
# Bit-exact in float32 only: Keras keeps Nadam's u_product in the first
# variable's dtype (float64 here), sparsegrad in float32.
FLOAT32_ONLY = {"nadam", "nadam_schedule"}


def tolerance(case, dtype):
    """(rtol, atol) for cases that are not bit-exact, with the reason."""
    if case.startswith("nadam") and dtype == "float64":
        # u_product in float32 (see FLOAT32_ONLY): relative 1e-7 at most.
        # (nadam_clipnorm in float32: the clipped gradient, an ulp apart.)
        return 1e-6, 1e-9
    if case.endswith("_defaults"):
        # Keras 3 rounds Python-float hyper-parameters (0.9, 0.999, 1e-7, 0.1)
        # through float32 before casting them to the variable's dtype.
        return 1e-6, 1e-7
    if case.startswith("lamb"):
        # Lamb's two norms: Keras sums the squares in the variable's dtype in
        # TensorFlow's order, sparsegrad in float64 in a fixed order, rounded
        # once; the rest is Keras's arithmetic (lamb_schedule and
        # lamb_defaults in float32 are bit-exact).
        return (2e-6, 1e-7) if dtype == "float32" else (1e-13, 1e-15)
    if case == "adagrad":
        # Keras 3: eps inside the sqrt; ApplyAdagradV2: outside.  O(eps) apart.
        return 1e-6, 1e-7
    if dtype == "float64":
        # Same formula, different operation order (Adamax, Ftrl's pow vs sqrt,
        # RMSprop's decay) or float64 vs float32 norms: rounding only.
        return 1e-12, 1e-15
    # float32: the same, plus TF's hardware rsqrt (ProximalAdagrad) and our
    # float64 global norm; a few ulp amplified over five steps.
    return 2e-5, 1e-6


def build(cls_name, kwargs):
    kwargs = dict(kwargs)
    lr = kwargs.get("learning_rate")
    if isinstance(lr, list):
        kwargs["learning_rate"] = getattr(opt_mod.schedules, lr[0])(**lr[1])
    return getattr(sg.optimizers, cls_name)(**kwargs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case,cls_name,kwargs", CASES, ids=[c[0] for c in CASES])
def test_matches_tensorflow(case, cls_name, kwargs, dtype):
    key = f"{case}/{dtype}"
    opt = build(cls_name, kwargs)
    w = sg.Variable(DATA[f"{key}/w0"])
    b = sg.Variable(DATA[f"{key}/b0"])
    assert w.dtype == np.dtype(dtype)
    for step in range(DATA[f"{key}/gw"].shape[0]):
        opt.apply_gradients([(DATA[f"{key}/gw"][step], w),
                             (DATA[f"{key}/gb"][step], b)])
        for got, want in ((w.numpy(), DATA[f"{key}/w"][step]),
                          (b.numpy(), DATA[f"{key}/b"][step])):
            if case in BIT_EXACT and not (case in FLOAT32_ONLY
                                          and dtype == "float64"):
                np.testing.assert_array_equal(got, want, err_msg=f"{key} step {step}")
            else:
                rtol, atol = tolerance(case, dtype)
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                           err_msg=f"{key} step {step}")
    assert opt.iterations_count == DATA[f"{key}/gw"].shape[0]


def test_fixture_covers_every_optimizer():
    covered = {c[1] for c in CASES}
    expected = set(sg.optimizers.__all__) - {"Optimizer", "schedules", "serialize",
                                            "deserialize", "get", "RowwiseAdagrad",
                                            "LossScaleOptimizer"}
    expected = {n for n in expected if not n.endswith("State")}
    # RowwiseAdagrad has no TensorFlow counterpart (tested against NumPy);
    # LossScaleOptimizer wraps the others (its Keras goldens:
    # test_loss_scale_optimizer.py).
    assert expected <= covered
