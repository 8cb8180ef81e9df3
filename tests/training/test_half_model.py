"""The NumPy model of the half training ops (half_model.py) against
TensorFlow 2.21's float16 and bfloat16 kernels (the fixtures of
make_half_training_fixtures.py), and its own arithmetic.

These tests need no sparsegrad kernel: they check the model that
test_half_training_ops.py holds sparsegrad to.
"""

import math

import ml_dtypes
import numpy as np
import pytest

from sparsegrad import training_ops

from . import half_model as hm
from .conftest import golden_cases
from .test_training_ops import SPARSE_OPS, dense_args, sparse_args

BF16 = ml_dtypes.bfloat16
ALL_OPS = sorted(training_ops.__all__)


def tf_steps(meta, inputs, outputs):
    """Each step of a fixture case: (keyword arguments of the call, from the
    state TensorFlow had before it; TensorFlow's state after it)."""
    gname = hm.grad_name(meta["op"])
    for step in range(meta["steps"]):
        kwargs = {key: value for key, value in inputs.items() if key != gname}
        kwargs[gname] = inputs[gname][step]
        if step:
            for name in meta["state"]:
                kwargs[name] = outputs[name][step - 1].copy()
        kwargs.update(meta["attrs"])
        yield kwargs, {name: outputs[name][step] for name in meta["state"]}


def tensorflow_model(meta, kwargs, **options):
    options.setdefault("ftz", meta["dtype"] == "bfloat16")
    options.setdefault("rsqrt", "tensorflow")
    return hm.run(meta["op"], kwargs, **options)


def _mismatches(cases, **options):
    """The cases of `cases` where the model with `options` differs from
    TensorFlow."""
    bad = []
    for case, (meta, inputs, outputs) in cases.items():
        for kwargs, want in tf_steps(meta, inputs, outputs):
            got = tensorflow_model(meta, kwargs, **options)
            if any(hm.ulp_difference(got[n], want[n]).max() for n in want):
                bad.append(case)
                break
    return bad


def test_model_matches_tensorflow_bit_for_bit(half_golden_case):
    # Every op, step and state variable, exactly: pow (FTRL's general
    # lr_power, its R == 1 path) and exp (PowerSign) included.
    case, meta, inputs, outputs = half_golden_case
    for step, (kwargs, want) in enumerate(tf_steps(meta, inputs, outputs)):
        got = tensorflow_model(meta, kwargs)
        for name in meta["state"]:
            hm.assert_bits(got[name], want[name], err_msg=f"{case} step {step} {name}")


def test_tensorflow_rsqrt_rounds_once_in_packets_and_twice_outside():
    cases = golden_cases("training_ops_half.npz")
    rsqrt = {c: v for c, v in cases.items() if "rsqrt" in v[0]["special"]}
    others = {c: v for c, v in cases.items() if c not in rsqrt}
    once = _mismatches(rsqrt, rsqrt="float32")
    twice = _mismatches(rsqrt, rsqrt="half")
    # One rounding (sparsegrad's rsqrt) misses elements of Eigen's scalar
    # code: dense tails, sparse rows of 1 and of 4, the tails of rows of 19.
    assert any(c.startswith("dense/") for c in once)
    assert any(c.endswith("/6") or c.endswith("/6x1") for c in once)
    assert any(c.endswith("/6x4") for c in once)
    # Two roundings miss elements of the packets, dense and in rows of 19;
    # rows narrower than a packet are all scalar code.
    assert any(c.startswith("dense/") for c in twice)
    assert any(c.endswith("/6x19") for c in twice)
    assert all(c.startswith("dense/") or c.endswith("/6x19") for c in twice)
    # The ops without rsqrt do not care.
    assert not _mismatches(others, rsqrt="float32")


def test_tensorflow_flushes_bfloat16_denormals():
    cases = golden_cases("training_ops_half.npz")
    bf16 = {c: v for c, v in cases.items() if v[0]["dtype"] == "bfloat16"}
    f16 = {c: v for c, v in cases.items() if v[0]["dtype"] == "float16"}
    kept = _mismatches(bf16, ftz=False)
    assert "dense/gradient_descent/bfloat16/0/denormal" in kept
    assert all(c.split("/")[4] == "denormal" for c in kept), kept
    assert not _mismatches(f16, ftz=False)


# Reference section 2.3: the CPU half kernels of TensorFlow 2.21.
TF_HALF_OPS = {
    "gradient_descent": (True, False),
    "adadelta": (True, True),
    "adagrad": (True, True),
    "adagrad_v2": (True, True),
    "ftrl": (True, True),
    "ftrl_v2": (True, True),
    "momentum": (True, True),
    "keras_momentum": (True, True),
    "adam": (True, False),
    "adam_with_amsgrad": (True, False),
    "ada_max": (True, False),
    "rms_prop": (True, True),
    "centered_rms_prop": (True, True),
    "add_sign": (True, False),
    "power_sign": (True, False),
}
NO_BF16 = {"apply_ada_max", "sparse_apply_rms_prop", "sparse_apply_centered_rms_prop"}


def test_every_tensorflow_half_kernel_has_cases():
    seen = {}
    for meta, _, _ in golden_cases("training_ops_half.npz").values():
        seen.setdefault(meta["op"], set()).add(meta["dtype"])
    want = set()
    for name, (dense, sparse) in TF_HALF_OPS.items():
        want |= {"apply_" + name} if dense else set()
        want |= {"sparse_apply_" + name} if sparse else set()
    assert set(seen) == want
    for op, dtypes in seen.items():
        assert dtypes == ({"float16"} if op in NO_BF16 else {"float16", "bfloat16"})


def test_fixtures_cover_duplicates_rows_of_one_denormals_and_flags():
    cases = golden_cases("training_ops_half.npz")
    sparse = [v for c, v in cases.items() if c.startswith("sparse/")]
    assert all(len(set(m["ints"]["indices"])) < len(m["ints"]["indices"])
               for m, _, _ in sparse)
    shapes = {tuple(i["var"].shape) for _, i, _ in sparse}
    assert {(6,), (6, 1), (6, 4), (6, 19)} <= shapes
    kinds = {m["kind"] for m, _, _ in cases.values()}
    assert kinds == {"random", "denormal"}
    attrs = {json_key for m, _, _ in cases.values() for json_key in
             (f"{k}={v}" for k, v in m["attrs"].items())}
    assert {"use_nesterov=True", "multiply_linear_by_lr=True",
            "update_slots=False"} <= attrs
    powers = {float(i["lr_power"]) for _, i, _ in cases.values() if "lr_power" in i}
    assert -0.5 in powers and len(powers) >= 3
    assert all(m["steps"] >= 2 for m, _, _ in cases.values())


# ---------------------------------------------------------------------------
# The model's formulas: in float32, the bits of sparsegrad's float32 kernels.

# bfloat16 has 8 bits: 0.999 rounds to 1 (Adam would not move).
HALF_SCALARS = {"beta2": 0.99, "beta2_power": 0.97}
SPARSE_SHAPES = [(6, 5), (6,), (6, 1), (6, 19)]
TINY = {
    np.dtype(np.float16): (2.0**-24, 1023),
    np.dtype(BF16): (2.0**-133, 127),
    np.dtype(np.float32): (2.0**-149, 2**23 - 1),
}


def _specials(x, rng, kind):
    """`x` with denormals and signed zeros, or NaN, infinities and zeros."""
    x = x.copy()
    flat = x.reshape(-1)
    n = flat.shape[0]
    if kind == "denormal":
        tiny, most = TINY[x.dtype]
        values = rng.integers(1, most + 1, size=n) * tiny * rng.choice([-1, 1], n)
        mask = rng.random(n) < 0.4
        flat[mask] = values[mask].astype(x.dtype)
        specials = [0.0, -0.0]
    else:
        specials = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    where = rng.choice(n, size=min(n, len(specials)), replace=False)
    flat[where] = np.asarray(specials[: len(where)]).astype(x.dtype)
    return x


def half_args(op, rng, dtype, kind="random", shape=None, indices=(3, 0, 3, 5, 3)):
    """Valid arguments of `op` in `dtype` (var and the gradient with
    special values unless `kind` is "random")."""
    if op in SPARSE_OPS:
        kwargs = sparse_args(op, rng, shape=shape or (6, 5), indices=indices,
                             dtype=dtype)
    else:
        kwargs = dense_args(op, rng, shape=shape or (7, 5), dtype=dtype)
    for key, value in HALF_SCALARS.items():
        if key in kwargs:
            kwargs[key] = value
    if kind != "random":
        gname = hm.grad_name(op)
        kwargs["var"] = _specials(kwargs["var"], rng, kind)
        kwargs[gname] = _specials(kwargs[gname], rng, kind)
    return kwargs



@pytest.mark.parametrize("kind", ["random", "denormal", "nonfinite"])
@pytest.mark.parametrize("op", ALL_OPS)
def test_model_in_float32_gives_the_float32_kernels_bits(op, kind, rng):
    # The element functions, the R == 1 paths, the double parts, Lamb's
    # lanes and chunks (18900 values: three chunks), row-wise Adagrad's
    # sums: transcribed from sg_training.h; the float32 kernels check them.
    shapes = SPARSE_SHAPES if op in SPARSE_OPS else [(7, 5), (2100, 9)]
    for shape in shapes:
        kwargs = half_args(op, rng, np.float32, kind, shape)
        want = hm.run(op, kwargs)
        args = dict(kwargs)
        for name in hm.state_names(op):
            args[name] = kwargs[name].copy()
        getattr(training_ops, op)(**args)
        for name in hm.state_names(op):
            got = args[name].view(np.uint32)
            same = (got == want[name].view(np.uint32)) | (
                np.isnan(args[name]) & np.isnan(want[name]))
            assert same.all(), (op, shape, kind, name, np.flatnonzero(~same)[:5])


# ---------------------------------------------------------------------------
# The model's own arithmetic.


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_each_operation_rounds_once_to_the_type(dtype):
    ar = hm.Arith(dtype)
    rng = np.random.default_rng(1)
    a = rng.normal(size=1000).astype(dtype)
    b = rng.normal(size=1000).astype(dtype)
    x, y = ar.of(a), ar.of(b)
    for got, exact in ((x + y, a.astype(np.float64) + b.astype(np.float64)),
                       (x * y, a.astype(np.float64) * b.astype(np.float64)),
                       (x / y, a.astype(np.float64) / b.astype(np.float64))):
        np.testing.assert_array_equal(got.store(), ar.from_double(exact).store())
    # NumPy's own half arithmetic rounds after each operation too.
    hm.assert_bits((x * y + x).store(), a * b + a)
    hm.assert_bits(hm.sqrt(ar.of(np.abs(a))).store(), np.sqrt(np.abs(a)))


def test_from_double_rounds_once():
    # 1 + 2**-8 + 2**-30 lies just above the midpoint of bfloat16's 1 and
    # 1 + 2**-7: one rounding goes up; through float32 (ml_dtypes' cast)
    # the midpoint is reached first, and ties go to even, down.
    ar = hm.Arith(BF16)
    x = 1 + 2.0**-8 + 2.0**-30
    assert float(ar.from_double(x).store()) == 1 + 2.0**-7
    assert float(np.asarray(x).astype(BF16)) == 1.0
    assert float(ar.scalar(x).store()) == 1.0           # a hyper-parameter's cast
    f16 = hm.Arith(np.float16)
    y = 1 + 2.0**-11 + 2.0**-40
    assert float(f16.from_double(y).store()) == 1 + 2.0**-10
    tiny = hm.Arith(np.float16).from_double(np.array([2.0**-25 * 1.0000001, -1e-30]))
    assert tiny.store().view(np.uint16).tolist() == [1, 0x8000]


def test_rsqrt_modes():
    x = np.array([3.0, 0.02, 0.08, 0.26], dtype=np.float16)
    once = hm.Arith(np.float16, rsqrt="float32")
    twice = hm.Arith(np.float16, rsqrt="half")
    want_once = (1 / np.sqrt(x.astype(np.float32))).astype(np.float16)
    want_twice = (np.float32(1) / np.sqrt(x).astype(np.float32)).astype(np.float16)
    hm.assert_bits(hm.rsqrt(once.of(x)).store(), want_once)
    hm.assert_bits(hm.rsqrt(twice.of(x)).store(), want_twice)
    # e.g. 1 / sqrt(0.02): 7.07 once, 7.066 through sqrt's 0.1414
    assert (want_once != want_twice).tolist() == [False, True, True, True]


def test_flush_reads_and_writes_bfloat16_denormals_as_zeros():
    tiny = np.array([2.0**-130, -(2.0**-133), 2.0**-120], dtype=BF16)
    flushed = hm.Arith(BF16, ftz=True)
    kept = hm.Arith(BF16)
    assert (flushed.of(tiny) + 0).store().view(np.uint16).tolist() == [0, 0, 896]
    hm.assert_bits((kept.of(tiny) + 0).store(), tiny)
    assert (flushed.of(tiny) * 2).store().view(np.uint16).tolist() == [
        0, 0x8000, 0x0400]
    half = flushed.of(np.array([2.0**-126], dtype=BF16)) * flushed.of(0.5)
    assert half.store().view(np.uint16).tolist() == [0]


def test_sign_max_min_as_the_kernels_compare():
    ar = hm.Arith(np.float16)
    x = ar.of(np.array([-0.0, 0.0, -2.0, 3.0, np.nan], dtype=np.float16))
    assert hm.sign(x).store().view(np.uint16).tolist()[:4] == [0, 0, 0xBC00, 0x3C00]
    assert math.isnan(float(hm.sign(x).store()[4]))
    nan = ar.of(np.float16(np.nan))
    one = ar.of(1)
    assert float(hm.maximum(one, nan).store()) == 1.0      # a < b ? b : a
    assert math.isnan(float(hm.maximum(nan, one).store()))
    assert float(hm.minimum(one, nan).store()) == 1.0


def test_lane_total_adds_lanes_in_order_then_pairwise():
    rng = np.random.default_rng(2)
    squares = rng.uniform(size=(3, 37)) * 10.0 ** rng.integers(-20, 20, size=(3, 37))
    lanes = np.zeros((3, 16))
    for j in range(37):
        lanes[:, j % 16] += squares[:, j]
    while lanes.shape[1] > 1:
        lanes = lanes[:, 0::2] + lanes[:, 1::2]
    np.testing.assert_array_equal(hm.lane_total(squares), lanes[:, 0])


def test_sparse_duplicates_apply_one_after_another():
    rng = np.random.default_rng(3)
    kwargs = dict(var=rng.normal(size=(4, 3)).astype(np.float16),
                  accum=rng.uniform(0.5, 1.5, size=(4, 3)).astype(np.float16),
                  lr=0.1, epsilon=1e-3,
                  grad=rng.normal(size=(3, 3)).astype(np.float16),
                  indices=np.array([2, 0, 2]))
    got = hm.run("sparse_apply_adagrad_v2", kwargs)
    state = {"var": kwargs["var"].copy(), "accum": kwargs["accum"].copy()}
    for i, row in enumerate(kwargs["indices"]):
        one = dict(kwargs, var=state["var"][row], accum=state["accum"][row],
                   grad=kwargs["grad"][i])
        out = hm.run("apply_adagrad_v2", one)
        state["var"][row], state["accum"][row] = out["var"], out["accum"]
    for name in state:
        hm.assert_bits(got[name], state[name], err_msg=name)
    hm.assert_bits(got["var"][[1, 3]], kwargs["var"][[1, 3]])
