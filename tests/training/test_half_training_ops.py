"""The raw training ops on float16 and bfloat16 arrays.

(a) Against TensorFlow 2.21's half kernels (training_ops_half.npz), bit for
bit; (b) every op against the NumPy model of half_model.py on random inputs
(duplicate indices, R == 1, denormals, NaN, infinities, zeros of either
sign); (c) the same bits on 1, 2 and 3 threads; (d) mismatched dtypes are
refused as for float32 and float64, changing nothing.

Where TensorFlow's half kernels depend on how Eigen evaluates them or on the
CPU's mode, sparsegrad makes one choice (see half_model's docstring):
SG_RSQRT and SG_FLUSHES_BFLOAT16_DENORMALS below.  On those elements (a)
expects sparsegrad's choice, which the model computes; test_half_model.py
checks that the model with TensorFlow's choices reproduces every fixture.
"""

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad import training_ops

from . import half_model as hm
from .conftest import golden_cases
from .test_half_model import SPARSE_SHAPES, half_args, tensorflow_model, tf_steps
from .test_training_ops import (
    DENSE_OPS,
    SPARSE_OPS,
    _check_error,
    dense_args,
    sparse_args,
)

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALF = pytest.mark.parametrize("dtype", [F16, BF16], ids=["float16", "bfloat16"])

# sg_half.h's sg_rsqrt: round_T(1 / sqrt(x)) in float32, everywhere
# (TensorFlow: only in Eigen's packets; its scalar code rounds twice).
SG_RSQRT = "float32"
# sg_half.h keeps denormals (TensorFlow's threads flush float32 denormals,
# and with them bfloat16's).
SG_FLUSHES_BFLOAT16_DENORMALS = False


def sg_model(op, kwargs):
    """The model of sparsegrad's half kernels."""
    ftz = SG_FLUSHES_BFLOAT16_DENORMALS and np.asarray(kwargs["var"]).dtype == BF16
    return hm.run(op, kwargs, ftz=ftz, rsqrt=SG_RSQRT)


def apply(op, kwargs):
    """sparsegrad's op on copies of the state in `kwargs`; the new state."""
    args = dict(kwargs)
    names = hm.state_names(op)
    for name in names:
        args[name] = np.array(kwargs[name], copy=True)
    getattr(training_ops, op)(**args)
    return {name: args[name] for name in names}


def assert_state(got, want, context):
    for name, expected in want.items():
        hm.assert_bits(got[name], expected, err_msg=f"{context}: {name}")


# ---------------------------------------------------------------------------
# (a) TensorFlow's half kernels.


@pytest.mark.parametrize("scalars", ["arrays", "floats"])
def test_matches_tensorflow(half_golden_case, scalars):
    # Hyper-parameters as 0-d arrays of T, or as Python floats (the same
    # values); indices int64, or int32 with the floats.
    case, meta, inputs, outputs = half_golden_case
    for step, (kwargs, want) in enumerate(tf_steps(meta, inputs, outputs)):
        ours, theirs = sg_model(meta["op"], kwargs), tensorflow_model(meta, kwargs)
        expected = {}
        for name, value in want.items():
            same = hm.ulp_difference(ours[name], theirs[name]) == 0
            expected[name] = np.where(same, value, ours[name])
        if scalars == "floats":
            for key, value in inputs.items():
                if value.ndim == 0:
                    kwargs[key] = float(value)
            if "indices" in kwargs:
                kwargs["indices"] = kwargs["indices"].astype(np.int32)
        assert_state(apply(meta["op"], kwargs), expected, f"{case} step {step}")


def test_bfloat16_denormals_are_kept():
    # TensorFlow reads 2**-130 as zero (var - 0 * 1 gives +0); sparsegrad
    # keeps it, and makes 2**-131 from 2**-130 * 0.5.
    var = np.array([2.0**-130, -(2.0**-133), 1.0], dtype=BF16)
    training_ops.apply_gradient_descent(var, 1.0, np.zeros(3, dtype=BF16))
    assert var.view(np.uint16).tolist() == [8, 0x8001, 0x3F80]
    var = np.zeros(2, dtype=BF16)
    training_ops.apply_gradient_descent(var, 0.5, np.array([2.0**-130, 1.0], BF16))
    assert var.view(np.uint16).tolist() == [0x8004, 0xBF00]


@HALF
def test_rsqrt_rounds_once_everywhere(dtype):
    # 1 / sqrt(0.02): float16 7.07 rounded once, 7.066 through sqrt's 0.1414
    # (TensorFlow's scalar code, e.g. a one-element dense op).
    accum = np.array([0.02, 0.26], dtype=dtype)
    once = (np.float32(1) / np.sqrt(accum.astype(np.float32))).astype(dtype)
    twice = (np.float32(1) / np.sqrt(accum).astype(np.float32)).astype(dtype)
    assert (once != twice).any()
    for op in ("apply_adagrad", "sparse_apply_rms_prop"):
        var = np.zeros(2, dtype=dtype)
        if op == "apply_adagrad":
            training_ops.apply_adagrad(var, accum.copy(), 1.0, np.ones(2, dtype),
                                       update_slots=False)
        else:
            # ms = ms * 1 + 1 * 0 = ms; mom = 0 * 0 + (rsqrt(ms + 0) * 1) * 1
            training_ops.sparse_apply_rms_prop(
                var, accum.copy(), np.zeros(2, dtype), 1.0, 1.0, 0.0, 0.0,
                np.ones(2, dtype), [0, 1])
        hm.assert_bits(var, -once, err_msg=op)


def test_sparsegrad_choices_differ_from_tensorflow_only_where_documented():
    # Where the model of sparsegrad differs from TensorFlow: rsqrt ops, and
    # bfloat16 denormal cases; nowhere else.
    for case, (meta, inputs, outputs) in golden_cases("training_ops_half.npz").items():
        for kwargs, want in tf_steps(meta, inputs, outputs):
            ours = sg_model(meta["op"], kwargs)
            differs = any(hm.ulp_difference(ours[n], want[n]).max() for n in want)
            if differs:
                flush = meta["dtype"] == "bfloat16" and meta["kind"] == "denormal"
                assert "rsqrt" in meta["special"] or flush, case


# ---------------------------------------------------------------------------
# (b) Every op against the model.


def test_every_op_has_a_model():
    assert set(DENSE_OPS) | set(SPARSE_OPS) == set(training_ops.__all__)
    for op in training_ops.__all__:
        assert hm.op_info(op)[0] in hm.OPS, op


@HALF
@pytest.mark.parametrize("kind", ["random", "denormal", "nonfinite"])
@pytest.mark.parametrize("op", sorted(DENSE_OPS))
def test_dense_ops_match_the_model(op, kind, dtype, rng):
    kwargs = half_args(op, rng, dtype, kind)
    assert_state(apply(op, kwargs), sg_model(op, kwargs), f"{op} {kind}")


@HALF
@pytest.mark.parametrize("kind", ["random", "denormal", "nonfinite"])
@pytest.mark.parametrize("shape", SPARSE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("op", sorted(SPARSE_OPS))
def test_sparse_ops_match_the_model(op, shape, kind, dtype, rng):
    kwargs = half_args(op, rng, dtype, kind, shape)
    assert_state(apply(op, kwargs), sg_model(op, kwargs), f"{op} {shape} {kind}")


@HALF
@pytest.mark.parametrize("op", ["apply_adagrad_da", "sparse_apply_adagrad_da",
                                "apply_proximal_adagrad",
                                "sparse_apply_proximal_adagrad",
                                "apply_proximal_gradient_descent",
                                "sparse_apply_proximal_gradient_descent"])
def test_l1_zero_branches_match_the_model(op, dtype, rng):
    for shape in ((6, 5), (6,)):
        kwargs = dict(half_args(op, rng, dtype, shape=shape), l1=0.0)
        assert_state(apply(op, kwargs), sg_model(op, kwargs), f"{op} {shape}")


@HALF
@pytest.mark.parametrize("op", ["apply_ftrl", "apply_ftrl_v2", "sparse_apply_ftrl",
                                "sparse_apply_ftrl_v2"])
@pytest.mark.parametrize("lr_power", [-0.5, -0.3, 0.0])
@pytest.mark.parametrize("mlr", [False, True])
def test_ftrl_variants_match_the_model(op, lr_power, mlr, dtype, rng):
    for shape in ((6, 5), (6,)):
        kwargs = half_args(op, rng, dtype, shape=shape)
        kwargs.update(lr_power=lr_power, multiply_linear_by_lr=mlr)
        assert_state(apply(op, kwargs), sg_model(op, kwargs), f"{op} {shape}")


@HALF
@pytest.mark.parametrize("op", ["apply_momentum", "sparse_apply_momentum",
                                "apply_keras_momentum", "sparse_apply_keras_momentum",
                                "apply_adam", "sparse_apply_adam"])
def test_nesterov_matches_the_model(op, dtype, rng):
    kwargs = dict(half_args(op, rng, dtype), use_nesterov=True)
    assert_state(apply(op, kwargs), sg_model(op, kwargs), op)


@HALF
@pytest.mark.parametrize("op", ["apply_adagrad", "sparse_apply_adagrad",
                                "apply_adagrad_v2", "sparse_apply_adagrad_v2"])
def test_update_slots_false_matches_the_model(op, dtype, rng):
    kwargs = dict(half_args(op, rng, dtype), update_slots=False)
    got = apply(op, kwargs)
    assert_state(got, sg_model(op, kwargs), op)
    hm.assert_bits(got["accum"], kwargs["accum"])


@HALF
def test_lamb_over_several_chunks_matches_the_model(dtype, rng):
    # Dense Lamb sums its squares by chunks of 8192 values.
    kwargs = half_args("apply_lamb", rng, dtype, shape=(2100, 9))
    assert_state(apply("apply_lamb", kwargs), sg_model("apply_lamb", kwargs), "lamb")


# ---------------------------------------------------------------------------
# (c) Threads.


def _on_each_thread_count(op, make_kwargs):
    """The op's new state on 1, 2 and 3 threads (``make_kwargs(n_threads)``
    gives its arguments), checked equal; that state and the last arguments."""
    results = []
    for n_threads in (1, 2, 3):
        sg.set_num_threads(n_threads)
        kwargs = make_kwargs(n_threads)
        results.append(apply(op, kwargs))
    for other in results[1:]:
        assert_state(other, results[0], op)
    return results[0], kwargs


@HALF
@pytest.mark.parametrize("op", sorted(DENSE_OPS))
def test_dense_bits_do_not_depend_on_threads(op, dtype):
    state, kwargs = _on_each_thread_count(op, lambda _: half_args(
        op, np.random.default_rng(3), dtype, shape=(20011, 5)))
    assert_state(state, sg_model(op, kwargs), f"{op} against the model")


@HALF
@pytest.mark.parametrize("op", sorted(SPARSE_OPS))
@pytest.mark.parametrize("shape", [(3000, 16), (3000, 3)])
def test_sparse_bits_do_not_depend_on_threads(op, shape, dtype):
    # 11000 uniform ids (a dozen occurrences of a row at most): enough work
    # for the parallel paths, on rows of 16 (two lane groups) and of 3 (the
    # scalar tail alone); int32 indices on two threads.
    indices = np.random.default_rng(4).integers(0, shape[0], size=11000)
    state, kwargs = _on_each_thread_count(op, lambda n_threads: half_args(
        op, np.random.default_rng(5), dtype, shape=shape,
        indices=indices.astype(np.int32 if n_threads == 2 else np.int64)))
    assert_state(state, sg_model(op, kwargs), f"{op} against the model")


@HALF
@pytest.mark.parametrize("op", sorted(SPARSE_OPS))
@pytest.mark.parametrize("coalesce", [False, True])
def test_sparse_bits_with_heavy_duplicates_do_not_depend_on_threads(
        op, coalesce, dtype, zipf):
    indices = zipf(np.random.default_rng(7), 20000, 3000)

    def make_kwargs(_):
        kwargs = half_args(op, np.random.default_rng(8), dtype, shape=(3000, 3),
                           indices=indices)
        kwargs["coalesce_duplicates"] = coalesce
        return kwargs

    _on_each_thread_count(op, make_kwargs)


# ---------------------------------------------------------------------------
# (d) Bad input: as for float32 and float64.

DTYPE_OPS = ["apply_gradient_descent", "apply_adagrad", "sparse_apply_adagrad",
             "apply_adam", "sparse_apply_ftrl", "sparse_apply_lamb",
             "apply_rowwise_adagrad"]
MISMATCHES = [(F16, np.dtype(np.float32)), (F16, BF16), (BF16, F16),
              (BF16, np.dtype(np.float32)), (BF16, np.dtype(np.float64)),
              (np.dtype(np.float32), F16), (np.dtype(np.float32), BF16)]


def _typed_args(op, rng, dtype):
    if op in SPARSE_OPS:
        return sparse_args(op, rng, dtype=dtype)
    return dense_args(op, rng, dtype=dtype)


@pytest.mark.parametrize("op", DTYPE_OPS)
@pytest.mark.parametrize("var_dtype,other", MISMATCHES,
                         ids=[f"{a.name}-{b.name}" for a, b in MISMATCHES])
def test_gradient_of_another_float_dtype_is_refused(op, var_dtype, other, rng):
    kwargs = _typed_args(op, rng, var_dtype)
    gname = hm.grad_name(op)
    bad = dict(kwargs, **{gname: kwargs[gname].astype(other)})
    _check_error(op, bad, f"{gname} dtype {other.name} does not match var dtype "
                          f"{var_dtype.name}")


@pytest.mark.parametrize("op", [op for op in DTYPE_OPS if hm.state_names(op)[1:]])
@pytest.mark.parametrize("var_dtype,other", MISMATCHES,
                         ids=[f"{a.name}-{b.name}" for a, b in MISMATCHES])
def test_slot_of_another_dtype_is_refused(op, var_dtype, other, rng):
    kwargs = _typed_args(op, rng, var_dtype)
    name = hm.state_names(op)[-1]
    bad = dict(kwargs, **{name: kwargs[name].astype(other)})
    _check_error(op, bad, f"{name} dtype {other.name} does not match var dtype "
                          f"{var_dtype.name}")


@HALF
@pytest.mark.parametrize("op", ["apply_adagrad", "sparse_apply_adagrad"])
def test_half_state_errors_change_nothing(op, dtype, rng):
    kwargs = _typed_args(op, rng, dtype)
    frozen = kwargs["var"].copy()
    frozen.flags.writeable = False
    _check_error(op, dict(kwargs, var=frozen), "var is read-only")
    wide = np.zeros((kwargs["var"].shape[0], 10), dtype=dtype)
    _check_error(op, dict(kwargs, var=wide[:, ::2]), "var is not C-contiguous")
    shape_error = ("must match in dimension 1" if op in SPARSE_OPS
                   else "var and grad do not have the same shape")
    _check_error(op, dict(kwargs, grad=kwargs["grad"][:, :3]), shape_error)
    _check_error(op, dict(kwargs, lr=np.ones(2, dtype=dtype)), "lr is not a scalar")


@HALF
@pytest.mark.parametrize("op", ["apply_adagrad", "sparse_apply_adagrad"])
def test_untyped_gradient_is_converted_to_the_half_type(op, dtype, rng):
    # A list (float64 values that are exact in T) updates as the T array.
    kwargs = _typed_args(op, rng, dtype)
    want = apply(op, kwargs)
    as_list = dict(kwargs, grad=kwargs["grad"].astype(np.float64).tolist())
    assert_state(apply(op, as_list), want, op)
    zero_d = dict(kwargs, lr=np.asarray(kwargs["lr"]).astype(dtype))
    assert_state(apply(op, zero_d), want, op)


# ---------------------------------------------------------------------------
# (e) The two builds: the AVX2 build's eight-lane F16C arithmetic and the
# baseline's (eight scalars per lane group), around multiples of eight.

try:
    from sparsegrad._kernels import training_half as _half_baseline
    from sparsegrad._kernels import training_half_avx2 as _half_avx2
except ImportError:  # pragma: no cover - not an x86 build
    _half_avx2 = None


@pytest.mark.skipif(_half_avx2 is None, reason="no AVX2 build")
@HALF
@pytest.mark.parametrize("kind", ["random", "nonfinite"])
@pytest.mark.parametrize("op", sorted({*DENSE_OPS, *SPARSE_OPS}))
def test_both_builds_give_the_same_bits(op, kind, dtype, rng):
    from sparsegrad._kernels import parallel
    from sparsegrad.framework.backend import CPU

    if not parallel.cpu_has_avx2():
        pytest.skip("this CPU cannot run the AVX2 build")
    widths = (1, 7, 8, 9, 16, 23, 40)
    for width in widths:
        shape = (6, width) if op in SPARSE_OPS else (3, width)
        kwargs = half_args(op, rng, dtype, kind, shape)
        results = []
        for module in (_half_baseline, _half_avx2):
            with CPU.use_kernels("training_half", module):
                results.append(apply(op, kwargs))
        assert_state(results[1], results[0], f"{op} width {width}")
        assert_state(results[0], sg_model(op, kwargs), f"{op} width {width}")
