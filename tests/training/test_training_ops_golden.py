"""Every training op against TensorFlow 2.21's raw kernels (golden fixtures).

The fixtures come from ``make_training_fixtures.py`` (run with TensorFlow);
each case holds the inputs, TensorFlow's outputs and the tolerance of the
reference (0: bit-exact; rsqrt, exp and pow cases: the rtol of reference
section 1.6).
"""

import copy

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad import training_ops


def _run(meta, inputs, index_dtype=np.int64, as_variables=False, **extra):
    kwargs = copy.deepcopy(inputs)
    if "indices" in kwargs:
        kwargs["indices"] = kwargs["indices"].astype(index_dtype)
    if "global_step" in kwargs:
        kwargs["global_step"] = int(kwargs["global_step"])
    if as_variables:
        for name in meta["state"]:
            kwargs[name] = sg.Variable(kwargs[name])
    kwargs.update(meta["attrs"])
    kwargs.update(extra)
    getattr(training_ops, meta["op"])(**kwargs)
    return {
        name: np.asarray(kwargs[name]._value if as_variables else kwargs[name])
        for name in meta["state"]
    }


def _compare(got, want, rtol, case):
    for name, expected in want.items():
        actual = got[name]
        assert actual.dtype == expected.dtype
        if rtol == 0:
            np.testing.assert_array_equal(
                actual, expected, err_msg=f"{case}: {name} not bit-exact"
            )
        else:
            scale = np.max(np.abs(expected)) if expected.size else 0.0
            # Cancellation in var - update magnifies a relative error of the
            # update (reference 5: up to 1.5e-5 on var): allow it in absolute
            # terms, scaled by the magnitude of the result.
            atol = (1e-5 if rtol >= 1e-3 else rtol) * scale
            np.testing.assert_allclose(
                actual, expected, rtol=rtol, atol=atol, err_msg=f"{case}: {name}"
            )


def test_matches_tensorflow(golden_case):
    case, meta, inputs, outputs = golden_case
    _compare(_run(meta, inputs), outputs, meta["rtol"], case)


def test_baseline_kernels_match_tensorflow(golden_case, monkeypatch):
    # The kernels in use may be the AVX2 build; check the baseline build too.
    from sparsegrad._kernels import training as baseline
    from sparsegrad.training.training_ops import core

    if core.kernels() is baseline:
        pytest.skip("the baseline kernels are the ones in use")
    case, meta, inputs, outputs = golden_case
    with core.use_kernels(baseline):
        _compare(_run(meta, inputs), outputs, meta["rtol"], case)


def test_sparse_matches_tensorflow_with_int32_indices(sparse_golden_case):
    case, meta, inputs, outputs = sparse_golden_case
    _compare(_run(meta, inputs, np.int32), outputs, meta["rtol"], case)


def test_matches_tensorflow_on_variables(golden_case):
    case, meta, inputs, outputs = golden_case
    kwargs = copy.deepcopy(inputs)
    for name in meta["state"]:
        kwargs[name] = sg.Variable(kwargs[name])
    before = {name: kwargs[name].version for name in meta["state"]}
    kwargs.update(meta["attrs"])
    if "global_step" in kwargs:
        kwargs["global_step"] = int(kwargs["global_step"])
    getattr(training_ops, meta["op"])(**kwargs)
    got = {name: kwargs[name].numpy() for name in meta["state"]}
    _compare(got, outputs, meta["rtol"], case)
    for name in meta["state"]:
        assert kwargs[name].version == before[name] + 1


# Every TensorFlow kernel the reference specifies, dense and sparse.
TF_OPS = {
    "apply_gradient_descent",
    "apply_proximal_gradient_descent",
    "apply_adadelta",
    "apply_adagrad",
    "apply_adagrad_v2",
    "apply_proximal_adagrad",
    "apply_adagrad_da",
    "apply_ftrl",
    "apply_ftrl_v2",
    "apply_momentum",
    "apply_keras_momentum",
    "apply_adam",
    "apply_adam_with_amsgrad",
    "apply_ada_max",
    "apply_rms_prop",
    "apply_centered_rms_prop",
    "apply_add_sign",
    "apply_power_sign",
    "sparse_apply_proximal_gradient_descent",
    "sparse_apply_adadelta",
    "sparse_apply_adagrad",
    "sparse_apply_adagrad_v2",
    "sparse_apply_proximal_adagrad",
    "sparse_apply_adagrad_da",
    "sparse_apply_ftrl",
    "sparse_apply_ftrl_v2",
    "sparse_apply_momentum",
    "sparse_apply_keras_momentum",
    "sparse_apply_rms_prop",
    "sparse_apply_centered_rms_prop",
}


def test_every_tensorflow_op_has_golden_cases():
    import json
    import os

    path = os.path.join(os.path.dirname(__file__), "fixtures", "training_ops.npz")
    seen = {}
    with np.load(path) as data:
        for key in data.files:
            if key.endswith("/meta"):
                meta = json.loads(str(data[key]))
                dtype = key.split("/")[2]
                seen.setdefault(meta["op"], set()).add(dtype)
    assert set(seen) == TF_OPS
    for op, dtypes in seen.items():
        assert dtypes == {"float32", "float64"}, op
    assert set(training_ops.__all__) >= TF_OPS
