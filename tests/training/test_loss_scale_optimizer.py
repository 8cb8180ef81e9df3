"""sparsegrad.optimizers.LossScaleOptimizer: Keras 3's dynamic loss scaling.

Keras 3 goldens (fixtures/loss_scale_optimizer.npz, from
make_loss_scale_fixtures.py), Keras 3's own test cases
(keras/src/optimizers/loss_scale_optimizer_test.py) ported, a NumPy model of
the scale's dynamics under random steps, sparse and half gradients, the
all-or-nothing skip, save/restore and the argument errors.
"""

import io
import json
import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError

LSO = sg.optimizers.LossScaleOptimizer
FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures",
                       "loss_scale_optimizer.npz")
BF16 = np.dtype(ml_dtypes.bfloat16)


def bits(array):
    array = np.ascontiguousarray(array)
    return array.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[array.itemsize])


def snapshot(opt, variables):
    """Every bit of the variables and of the inner optimizer's variables
    (slots, step count), then the scale, the step counter and the inner step
    count, to compare before and after."""
    return ([bits(v.numpy()).copy() for v in variables]
            + [bits(np.asarray(v.numpy())).copy()
               for v in opt.inner_optimizer.variables()]
            + [opt.dynamic_scale, int(opt.step_counter.numpy()),
               opt.iterations_count])


def assert_same(before, after):
    assert len(before) == len(after)
    for a, b in zip(before, after):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b


def sgd(lr=0.5, **kwargs):
    return sg.optimizers.SGD(learning_rate=lr, **kwargs)


# -- Keras 3 goldens ------------------------------------------------------------

with np.load(FIXTURE) as _data:
    GOLDEN = {key: _data[key] for key in _data.files if not key.startswith("__")}
    GOLDEN_CASES = json.loads(str(_data["__cases__"]))


@pytest.mark.parametrize("case,inner_name,inner_kwargs,scale_kwargs,dtype",
                         GOLDEN_CASES, ids=[c[0] for c in GOLDEN_CASES])
def test_matches_keras3(case, inner_name, inner_kwargs, scale_kwargs, dtype):
    # Bit for bit: the unscaling is one IEEE division in the gradient's dtype
    # by the float32 scale, as Keras's ops.divide, and the inner SGD and Adam
    # match Keras 3 bit for bit (test_optimizers_golden.py).
    inner = getattr(sg.optimizers, inner_name)(**inner_kwargs)
    opt = LSO(inner, **scale_kwargs)
    w = sg.Variable(GOLDEN[f"{case}/w0"])
    b = sg.Variable(GOLDEN[f"{case}/b0"])
    assert w.dtype == np.dtype(dtype)
    gw, gb = GOLDEN[f"{case}/gw"], GOLDEN[f"{case}/gb"]
    assert not np.isfinite(gw).all() or not np.isfinite(gb).all()
    for step in range(gw.shape[0]):
        opt.apply_gradients([(gw[step], w), (gb[step], b)])
        where = f"{case} step {step}"
        np.testing.assert_array_equal(w.numpy(), GOLDEN[f"{case}/w"][step], where)
        np.testing.assert_array_equal(b.numpy(), GOLDEN[f"{case}/b"][step], where)
        assert opt.dynamic_scale == float(GOLDEN[f"{case}/scale"][step]), where
        assert int(opt.step_counter.numpy()) == GOLDEN[f"{case}/counter"][step]
        assert opt.iterations_count == GOLDEN[f"{case}/iterations"][step], where


# -- Keras 3's own cases --------------------------------------------------------

def test_finite_step():
    opt = LSO(sgd())
    var = sg.Variable(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    opt.apply_gradients([(np.array([1.0, 6.0, 7.0, 2.0], np.float32)
                          * opt.initial_scale, var)])
    np.testing.assert_array_equal(var.numpy(), [0.5, -1.0, -0.5, 3.0])
    assert opt.iterations_count == 1
    assert int(opt.step_counter.numpy()) == 1


def test_infinite_step():
    opt = LSO(sgd())
    var = sg.Variable(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    opt.apply_gradients([(np.full(4, np.inf, np.float32), var)])
    np.testing.assert_array_equal(var.numpy(), [1.0, 2.0, 3.0, 4.0])
    assert opt.dynamic_scale == 2.0**14
    assert opt.iterations_count == 0


def test_downscaling():
    opt = LSO(sgd(), initial_scale=400.0)
    var = sg.Variable(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    opt.build([var])
    for _ in range(4):
        opt.apply_gradients([(np.full(4, np.inf, np.float32), var)])
    assert float(opt.scale_loss(1.0).numpy()) == 25.0
    assert opt.dynamic_scale == 25.0


def test_upscaling():
    opt = LSO(sgd(), initial_scale=2.0, dynamic_growth_steps=2)
    var = sg.Variable(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    for _ in range(8):
        opt.apply_gradients([(np.array([1.0, 6.0, 7.0, 2.0], np.float32), var)])
    assert opt.dynamic_scale == 32.0
    assert float(opt.scale_loss(1.0).numpy()) == 32.0


def test_iterations_update():
    opt = LSO(sgd())
    var = sg.Variable(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    assert opt.iterations_count == 0
    for i in range(3):
        step = opt.apply_gradients([(np.array([1.0, 6.0, 7.0, 2.0]), var)])
        assert step is opt.inner_optimizer.iterations is opt.iterations
        assert opt.iterations_count == i + 1


def test_serialization():
    opt = LSO(sgd(momentum=0.25, nesterov=True), initial_scale=3.0,
              dynamic_growth_steps=2, name="test_opt")
    config = opt.get_config()
    assert len(config) == 4
    assert config["name"] == "test_opt"
    assert config["initial_scale"] == 3.0
    assert config["dynamic_growth_steps"] == 2
    assert config["inner_optimizer"] == sg.optimizers.serialize(opt.inner_optimizer)
    json.dumps(config)
    again = LSO.from_config(config)
    assert again.get_config() == config
    assert type(again.inner_optimizer) is sg.optimizers.SGD
    assert again.inner_optimizer is not opt.inner_optimizer
    # through the package's serialize / deserialize and get
    again = sg.optimizers.deserialize(sg.optimizers.serialize(opt))
    assert isinstance(again, LSO) and again.get_config() == config
    assert sg.optimizers.get(sg.optimizers.serialize(opt)).get_config() == config


def test_from_config_with_a_schedule_and_custom_objects():
    class MySGD(sg.optimizers.SGD):
        pass

    schedule = sg.optimizers.schedules.ExponentialDecay(0.5, 2, 0.5)
    opt = LSO(MySGD(learning_rate=schedule))
    config = opt.get_config()
    with pytest.raises(InvalidArgumentError, match="MySGD"):
        LSO.from_config(config)
    again = LSO.from_config(config, custom_objects={"MySGD": MySGD})
    assert type(again.inner_optimizer) is MySGD
    assert again.get_config() == config
    with pytest.raises(InvalidArgumentError, match="inner_optimizer"):
        LSO.from_config({"initial_scale": 2.0})
    inner = sgd()
    assert LSO.from_config({"inner_optimizer": inner}).inner_optimizer is inner


def test_init_dynamic_arg():
    LSO(sgd(), dynamic=True)
    with pytest.raises(InvalidArgumentError, match="set `loss_scale_factor`"):
        LSO(sgd(), dynamic=False)


def test_init_unsupported_arg():
    with pytest.raises(InvalidArgumentError, match="arguments: `foo`, `bar`"):
        LSO(sgd(), foo=True, bar=3)


@pytest.mark.parametrize("arg_name,arg_value", [
    ("weight_decay", 0.5), ("clipnorm", 0.5), ("global_clipnorm", 0.5),
    ("clipvalue", 0.5), ("use_ema", True), ("ema_momentum", 0.5),
    ("ema_overwrite_frequency", 2), ("loss_scale_factor", 0.5),
    ("gradient_accumulation_steps", 2),
])
def test_init_base_optimizer_unsupported_args(arg_name, arg_value):
    with pytest.raises(InvalidArgumentError,
                       match=f"`{arg_name}`. Instead, set `{arg_name}` on the "
                             "`inner_optimizer`"):
        LSO(sgd(), **{arg_name: arg_value})


def test_deserialization_backwards_compatibility():
    config = {
        "name": "loss_scale_optimizer", "weight_decay": None, "clipnorm": None,
        "global_clipnorm": None, "clipvalue": None, "use_ema": False,
        "ema_momentum": 0.99, "ema_overwrite_frequency": None,
        "loss_scale_factor": None, "gradient_accumulation_steps": None,
        "inner_optimizer": {"class_name": "SGD",
                            "config": {"name": "SGD", "learning_rate": 0.5}},
        "initial_scale": 2.0, "dynamic_growth_steps": 2,
    }
    opt = LSO.from_config(config)
    assert (opt.initial_scale, opt.dynamic_growth_steps) == (2.0, 2)
    assert opt.learning_rate == 0.5


# -- the scale's dynamics: a NumPy model under random steps ---------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(-3, 20),
       st.lists(st.tuples(st.sampled_from(["ok", "inf", "-inf", "nan"]),
                          st.integers(0, 1), st.integers(0, 5)),
                min_size=1, max_size=14),
       st.integers(0, 2**32 - 1))
def test_random_steps_follow_the_model(growth, log_scale, steps, seed):
    rng = np.random.default_rng(seed)
    w0 = rng.standard_normal((2, 3)).astype(np.float32)
    b0 = rng.standard_normal(3).astype(np.float32)
    opt = LSO(sgd(0.25), initial_scale=2.0**log_scale,
              dynamic_growth_steps=growth)
    w, b = sg.Variable(w0), sg.Variable(b0)
    model = {"w": w0.copy(), "b": b0.copy(), "scale": np.float32(2.0**log_scale),
             "counter": 0, "iterations": 0}
    for kind, which, position in steps:
        grads = {"w": (rng.standard_normal((2, 3)) * 8).astype(np.float32),
                 "b": (rng.standard_normal(3) * 8).astype(np.float32)}
        if kind != "ok":
            grads["wb"[which]].reshape(-1)[position % grads["wb"[which]].size] = \
                float(kind)
        opt.apply_gradients([(grads["w"], w), (grads["b"], b)])
        if kind == "ok":
            for key in "wb":
                model[key] = model[key] - np.float32(0.25) * (
                    grads[key] / model["scale"])
            model["iterations"] += 1
            if model["counter"] == growth - 1:
                model["counter"], model["scale"] = 0, model["scale"] * np.float32(2)
            else:
                model["counter"] += 1
        else:
            model["counter"], model["scale"] = 0, model["scale"] * np.float32(0.5)
        np.testing.assert_array_equal(w.numpy(), model["w"])
        np.testing.assert_array_equal(b.numpy(), model["b"])
        assert opt.dynamic_scale == float(model["scale"])
        assert int(opt.step_counter.numpy()) == model["counter"]
        assert opt.iterations_count == model["iterations"]


def test_the_scale_has_no_bounds_as_in_keras():
    # Doubling reaches inf (then every step is skipped and it stays inf),
    # halving reaches 0 (then g / 0 is applied), without warnings.
    var = sg.Variable(np.ones(2, np.float32))
    up = LSO(sgd(), initial_scale=2.0**127, dynamic_growth_steps=1)
    with np.errstate(all="raise"):
        up.apply_gradients([(np.ones(2, np.float32), var)])
        assert up.dynamic_scale == np.inf
        np.testing.assert_array_equal(var.numpy(), [1.0, 1.0])   # g / 2**127
        up.apply_gradients([(np.ones(2, np.float32), var)])    # 1 / inf = 0
        np.testing.assert_array_equal(var.numpy(), [1.0, 1.0])
        assert up.iterations_count == 2 and up.dynamic_scale == np.inf
        down = LSO(sgd(), initial_scale=2.0**-149)
        down.apply_gradients([(np.array([np.nan, 0.0], np.float32), var)])
        assert down.dynamic_scale == 0.0
        down.apply_gradients([(np.array([0.0, 1.0], np.float32), var)])
    assert np.isnan(var.numpy()[0]) and var.numpy()[1] == -np.inf


# -- all or nothing -------------------------------------------------------------

@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_a_skipped_step_changes_no_bit(bad, sparse, rng):
    table = sg.Variable(rng.standard_normal((6, 3)).astype(np.float32))
    bias = sg.Variable(rng.standard_normal(3).astype(np.float32))
    opt = LSO(sg.optimizers.Adam(learning_rate=0.01, amsgrad=True),
              initial_scale=64.0, dynamic_growth_steps=3)
    for _ in range(2):
        opt.apply_gradients([(rng.standard_normal((6, 3)), table),
                             (rng.standard_normal(3), bias)])
    assert int(opt.step_counter.numpy()) == 2
    before = snapshot(opt, [table, bias])
    g_bias = rng.standard_normal(3).astype(np.float32)
    if sparse:
        values = rng.standard_normal((3, 3)).astype(np.float32)
        values[1, 2] = bad
        g_table = sg.IndexedSlices(values, [4, 0, 4], dense_shape=(6, 3))
    else:
        g_table = rng.standard_normal((6, 3)).astype(np.float32)
        g_table[5, 0] = bad
    opt.apply_gradients([(g_table, table), (g_bias, bias)])
    after = snapshot(opt, [table, bias])
    assert after[-3:] == [32.0, 0, 2]       # halved, count reset, no step
    assert_same(before[:-3], after[:-3])     # variables, slots: same bits


def test_a_skipped_first_step_creates_no_slots():
    var = sg.Variable(np.ones(3, np.float32))
    opt = LSO(sg.optimizers.Adagrad())
    opt.apply_gradients([(np.array([1.0, np.nan, 1.0], np.float32), var)])
    assert opt.tracked_variables() == []
    assert opt.get_state(var) is None
    with pytest.raises(sg.errors.NotFoundError):
        opt.get_slot(var, "accumulator")


def test_bad_gradients_raise_on_skipped_and_applied_steps_alike(rng):
    w = sg.Variable(np.ones((4, 2), np.float32))
    b = sg.Variable(np.ones(2, np.float32))
    opt = LSO(sg.optimizers.Adam(), initial_scale=8.0)
    opt.apply_gradients([(np.ones((4, 2)), w), (np.ones(2), b)])
    before = snapshot(opt, [w, b])
    for bad_value in (1.0, np.inf):
        cases = [
            ([(np.full((4, 3), bad_value), w)], "same shape"),
            # a 4 TiB view: refused by its shape before anything is allocated
            ([(np.broadcast_to(np.float32(bad_value), (2**20, 2**20)), w)],
             r"has shape \(1048576, 1048576\), the variable \(4, 2\)"),
            ([(sg.IndexedSlices(np.full((1, 3), bad_value), [0]), w)],
             r"rows of shape \(3,\)"),
            ([(sg.IndexedSlices(np.full((1, 2), bad_value), [4]), w)],
             r"not in \[0, 4\)"),
            ([(np.full(2, bad_value), b), (np.ones(2), b)], "appears twice"),
            ([(np.full(2, bad_value), b), ([[1.0], [2.0, 3.0]], w)],
             "not convertible"),
            ([(np.full(2, bad_value), b), (np.array(["a", "b"]), w)], "dtype"),
            ([(np.full(2, bad_value), b), 3], "pair"),
        ]
        for pairs, match in cases:
            with pytest.raises(InvalidArgumentError, match=match):
                opt.apply_gradients(pairs)
        with pytest.raises(TypeError, match=r"sparsegrad\.Variable"):
            opt.apply_gradients([(np.full(2, bad_value), np.ones(2))])
        assert_same(before, snapshot(opt, [w, b]))


def test_all_none_gradients_change_nothing():
    var = sg.Variable(np.ones(2, np.float32))
    opt = LSO(sgd(), dynamic_growth_steps=1)
    assert opt.apply_gradients([(None, var)]) is opt.iterations
    assert opt.apply_gradients([]) is opt.iterations
    assert (opt.dynamic_scale, int(opt.step_counter.numpy())) == (2.0**15, 0)
    assert opt.iterations_count == 0


def test_none_entries_are_skipped_and_the_rest_applied():
    w = sg.Variable(np.ones(2, np.float32))
    b = sg.Variable(np.ones(2, np.float32))
    opt = LSO(sgd(), initial_scale=4.0)
    opt.apply_gradients([(None, w), (np.array([4.0, 8.0], np.float32), b)])
    np.testing.assert_array_equal(w.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(b.numpy(), [0.5, 0.0])
    assert int(opt.step_counter.numpy()) == 1


# -- sparse, float64 and half gradients -----------------------------------------

class RecordingSGD(sg.optimizers.SGD):
    """An SGD that keeps the gradients it was given."""

    def apply_gradients(self, grads_and_vars):
        self.seen = list(grads_and_vars)
        return super().apply_gradients(self.seen)


def test_sparse_gradients_stay_sparse_and_only_their_values_are_unscaled():
    table = sg.Variable(np.ones((5, 2), np.float32))
    inner = RecordingSGD(learning_rate=0.5, momentum=0.5)
    opt = LSO(inner, initial_scale=3.0)
    values = np.array([[3.0, 6.0], [1.0, 2.0], [9.0, 3.0]], np.float32)
    grad = sg.IndexedSlices(values, [3, 1, 3], dense_shape=(5, 2))
    opt.apply_gradients([(grad, table)])
    (given, var), = inner.seen
    assert var is table and isinstance(given, sg.IndexedSlices)
    np.testing.assert_array_equal(given.indices.numpy(), [3, 1, 3])
    assert given.dense_shape == (5, 2)
    assert given.values.dtype == np.float32
    np.testing.assert_array_equal(given.values.numpy(), values / np.float32(3.0))
    # lazy momentum: rows 0, 2 and 4 untouched, slots included
    expected = np.ones((5, 2), np.float32)
    summed = {1: values[1] / np.float32(3),
              3: values[0] / np.float32(3) + values[2] / np.float32(3)}
    for row, g in summed.items():
        expected[row] = np.float32(1) + (np.float32(0) - np.float32(0.5) * g)
    np.testing.assert_array_equal(table.numpy(), expected)
    assert not opt.get_slot(table, "momentum").numpy()[[0, 2, 4]].any()


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_a_nonfinite_value_in_a_sparse_gradient_skips(bad):
    table = sg.Variable(np.ones((4, 2), np.float32))
    opt = LSO(sgd(), initial_scale=4.0)
    grad = sg.IndexedSlices(np.array([[4.0, 8.0], [bad, 1.0]], np.float32), [0, 2],
                            dense_shape=(4, 2))
    opt.apply_gradients([(grad, table)])
    np.testing.assert_array_equal(table.numpy(), np.ones((4, 2)))
    assert opt.dynamic_scale == 2.0
    # Keras 3 gives these values after this step (checked with Keras 3.15.1)
    opt.apply_gradients([(sg.IndexedSlices(
        np.array([[4.0, 8.0], [2.0, 1.0]], np.float32), [0, 2],
        dense_shape=(4, 2)), table)])
    np.testing.assert_array_equal(
        table.numpy(), [[0.0, -1.0], [1.0, 1.0], [0.5, 0.75], [1.0, 1.0]])


def test_float64_gradients_are_unscaled_in_float64():
    var = sg.Variable(np.zeros(3))
    inner = RecordingSGD(learning_rate=1.0)
    opt = LSO(inner, initial_scale=3.0)
    g = np.array([1.0, 1e-300, 7.0])
    opt.apply_gradients([(g, var)])
    assert inner.seen[0][0].dtype == np.float64
    np.testing.assert_array_equal(var.numpy(), -(g / 3.0))
    # a float32 gradient of a float64 variable: divided in float32, as Keras
    var = sg.Variable(np.zeros(1))
    LSO(sgd(1.0), initial_scale=3.0).apply_gradients(
        [(np.array([1.0], np.float32), var)])
    np.testing.assert_array_equal(var.numpy(),
                                  [-np.float64(np.float32(1) / np.float32(3))])


@pytest.mark.parametrize("half", [np.dtype(np.float16), BF16], ids=str)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_half_gradients_checked_and_unscaled_on_their_values(half, sparse):
    # A half gradient of a float32 variable: the finiteness check reads the
    # half values (an overflow to inf skips the step) and the unscaling
    # widens them exactly to float32 before one float32 division.
    values = np.array([[3.0, 1000.0], [0.0078125, -7.0]], np.float32).astype(half)
    scale = 3.0

    def grad_of(vals):
        if sparse:
            return sg.IndexedSlices(vals, [0, 1], dense_shape=(2, 2))
        return vals

    var = sg.Variable(np.zeros((2, 2), np.float32))
    inner = RecordingSGD(learning_rate=1.0)
    opt = LSO(inner, initial_scale=scale)
    opt.apply_gradients([(grad_of(values), var)])
    given = inner.seen[0][0]
    given = given.values.numpy() if sparse else given
    assert given.dtype == np.float32
    want = values.astype(np.float32) / np.float32(scale)
    np.testing.assert_array_equal(given, want)
    np.testing.assert_array_equal(var.numpy(), -want)

    # 70000 is inf in float16 (its largest is 65504); bfloat16 holds it, so
    # for bfloat16 the overflow is written as an inf
    with np.errstate(over="ignore"):
        big = np.array([[70000.0, 1.0], [1.0, 1.0]], np.float32).astype(half)
    if half == BF16:
        big[0, 0] = np.inf
    assert not np.isfinite(big).all()
    before = var.numpy().copy()
    opt.apply_gradients([(grad_of(big), var)])
    np.testing.assert_array_equal(var.numpy(), before)
    assert opt.dynamic_scale == 1.5 and opt.iterations_count == 1


def test_int_gradients_are_unscaled_in_float32():
    var = sg.Variable(np.zeros(2, np.float32))
    inner = RecordingSGD(learning_rate=1.0)
    LSO(inner, initial_scale=4.0).apply_gradients([(np.array([4, 2]), var)])
    assert inner.seen[0][0].dtype == np.float32
    np.testing.assert_array_equal(var.numpy(), [-1.0, -0.5])


def test_float16_model_end_to_end():
    # A float16 variable and a float16 loss: at scale 2**16 the seed itself
    # is inf in float16 and the step is skipped; at 2**15 the gradient
    # 2 * w * 2**15 = [32768, -16384] is finite, unscaled in float32 to
    # [1, -0.5] and applied (every value here is exact in float16).
    w = sg.Variable(np.array([0.5, -0.25], np.float16))
    opt = LSO(sgd(0.125), initial_scale=2.0**16, dynamic_growth_steps=5)

    def loss():
        return sg.reduce_sum(w * w)

    with np.errstate(over="ignore"):
        opt.minimize(loss, [w])
    np.testing.assert_array_equal(w.numpy(), np.array([0.5, -0.25], np.float16))
    assert opt.dynamic_scale == 2.0**15 and opt.iterations_count == 0
    opt.minimize(loss, [w])
    assert w.dtype == np.float16
    np.testing.assert_array_equal(w.numpy(), np.array([0.375, -0.1875], np.float16))
    assert opt.iterations_count == 1 and int(opt.step_counter.numpy()) == 1


# -- scale_loss and minimize ----------------------------------------------------

@pytest.mark.parametrize("dtype,want", [
    (np.float16, np.float32), (BF16, np.float32), (np.float32, np.float32),
    (np.float64, np.float64), (np.int32, np.float32)])
def test_scale_loss_dtype_follows_keras(dtype, want):
    opt = LSO(sgd(), initial_scale=2.0**16)
    scaled = opt.scale_loss(sg.constant(np.array(3, dtype)))
    assert scaled.dtype == want
    assert float(scaled.numpy()) == 3.0 * 2.0**16     # no float16 overflow


def test_scale_loss_is_recorded_and_tracks_the_scale():
    w = sg.Variable(np.array([1.0, -2.0], np.float32))
    opt = LSO(sgd(), initial_scale=8.0)
    with sg.GradientTape() as tape:
        scaled = opt.scale_loss(sg.reduce_sum(w * w))
    np.testing.assert_array_equal(tape.gradient(scaled, w).numpy(), [16.0, -32.0])
    opt.apply_gradients([(np.array([np.nan, 0.0], np.float32), w)])
    assert float(opt.scale_loss(np.float32(1.0)).numpy()) == 4.0
    assert opt.scale_loss(1.0).dtype == np.float64      # a Python float


def test_minimize_scales_differentiates_and_unscales():
    x = np.array([0.5, -1.25, 3.0], np.float32)

    def run(kind):
        w = sg.Variable(x.copy())
        opt = LSO(sg.optimizers.Adam(learning_rate=0.125), initial_scale=2.0**10)
        if kind == "callable":
            opt.minimize(lambda: sg.reduce_sum(w * w * w), [w])
        elif kind == "callable_vars":
            opt.minimize(lambda: sg.reduce_sum(w * w * w), lambda: [w])
        elif kind == "tensor":
            with sg.GradientTape() as tape:
                loss = sg.reduce_sum(w * w * w)
            opt.minimize(loss, [w], tape=tape)
        else:   # by hand
            with sg.GradientTape() as tape:
                scaled = opt.scale_loss(sg.reduce_sum(w * w * w))
            opt.apply_gradients([(tape.gradient(scaled, w), w)])
        assert opt.iterations_count == 1
        return w.numpy()

    want = run("by hand")
    assert not np.array_equal(want, x)
    for kind in ("callable", "callable_vars", "tensor"):
        np.testing.assert_array_equal(run(kind), want)
    with pytest.raises(InvalidArgumentError, match="tape is required"):
        LSO(sgd()).minimize(sg.constant(1.0), [sg.Variable(1.0)])


def test_minimize_skips_a_step_whose_scaled_gradient_overflows():
    w = sg.Variable(np.array([1e38, 1.0], np.float32))
    opt = LSO(sgd(), initial_scale=4.0)
    with np.errstate(over="ignore"):
        opt.minimize(lambda: sg.reduce_sum(w * w), [w])     # 4 * 2e38 = inf
    np.testing.assert_array_equal(w.numpy(), np.array([1e38, 1.0], np.float32))
    assert opt.dynamic_scale == 2.0 and opt.iterations_count == 0


# -- delegation -----------------------------------------------------------------

def test_learning_rate_slots_and_variables_are_the_inner_optimizers():
    inner = sg.optimizers.SGD(learning_rate=0.5, momentum=0.5)
    opt = LSO(inner, initial_scale=2.0)
    assert opt.learning_rate == 0.5
    opt.learning_rate = 0.25
    assert inner.learning_rate == 0.25 and opt.current_learning_rate() == 0.25
    with pytest.raises(InvalidArgumentError, match="learning_rate"):
        opt.learning_rate = -1.0
    assert inner.learning_rate == 0.25
    var = sg.Variable(np.ones(2, np.float32))
    opt.build([var])
    assert opt.tracked_variables() == [var] == inner.tracked_variables()
    assert opt.get_slot(var, "momentum") is inner.get_slot(var, "momentum")
    assert opt.get_state(var) is inner.get_state(var)
    assert opt.get_slot_names() == ["momentum"]
    own = opt.variables()
    assert own[0] is opt.step_counter and own[0].dtype == np.int64
    assert own[1].dtype == np.float32 and float(own[1].numpy()) == 2.0
    assert own[2:] == inner.variables()
    assert opt.iterations is inner.iterations
    assert (opt.clipnorm, opt.clipvalue, opt.global_clipnorm) == (None,) * 3
    assert opt.name == "loss_scale_optimizer" and "SGD" in repr(opt)


# -- state ----------------------------------------------------------------------

STATE_INNERS = [
    ("Adam", {"learning_rate": 0.125, "amsgrad": True}),
    ("Nadam", {"learning_rate": 0.0625}),           # has state of its own
    ("SGD", {"learning_rate": sg.optimizers.schedules.ExponentialDecay(
        0.5, 2, 0.5), "momentum": 0.5}),
]


def _stream(rng, steps):
    out = []
    for step in range(steps):
        gt = sg.IndexedSlices(rng.standard_normal((3, 3)).astype(np.float32) * 64,
                              rng.integers(0, 5, 3), dense_shape=(5, 3))
        gb = rng.standard_normal(3).astype(np.float32) * 64
        if step in (2, 6):
            gb[1] = np.inf
        out.append((gt, gb))
    return out


@pytest.mark.parametrize("name,kwargs", STATE_INNERS, ids=[n for n, _ in STATE_INNERS])
def test_save_restore_continues_bit_for_bit(name, kwargs, rng, tmp_path):
    table0 = rng.standard_normal((5, 3)).astype(np.float32)
    bias0 = rng.standard_normal(3).astype(np.float32)
    stream = _stream(rng, 9)

    def make():
        return LSO(getattr(sg.optimizers, name)(**kwargs), initial_scale=256.0,
                   dynamic_growth_steps=2)

    def run(opt, table, bias, grads):
        for g_table, g_bias in grads:
            opt.apply_gradients([(g_table, table), (g_bias, bias)])

    ref, t_ref, b_ref = make(), sg.Variable(table0), sg.Variable(bias0)
    run(ref, t_ref, b_ref, stream)

    first, table, bias = make(), sg.Variable(table0), sg.Variable(bias0)
    run(first, table, bias, stream[:4])
    path = tmp_path / "state.npz"
    first.save_state(path)
    saved = (table.numpy(), bias.numpy(), first.dynamic_scale,
             int(first.step_counter.numpy()))
    assert saved[3] == 1 and saved[2] == 256.0      # a skip, then a finite step

    second = LSO.from_config(first.get_config())
    table2, bias2 = sg.Variable(saved[0]), sg.Variable(saved[1])
    second.load_state(path, [table2, bias2])
    assert (second.dynamic_scale, int(second.step_counter.numpy())) == saved[2:]
    assert second.iterations_count == first.iterations_count == 3
    run(second, table2, bias2, stream[4:])
    np.testing.assert_array_equal(table2.numpy(), t_ref.numpy())
    np.testing.assert_array_equal(bias2.numpy(), b_ref.numpy())
    assert second.dynamic_scale == ref.dynamic_scale
    for v_ref, v_new in zip(ref.variables(), second.variables()):
        np.testing.assert_array_equal(v_new.numpy(), v_ref.numpy())


def test_same_bits_for_any_thread_count(rng):
    table0 = rng.standard_normal((5, 3)).astype(np.float32)
    bias0 = rng.standard_normal(3).astype(np.float32)
    stream = _stream(rng, 8)
    results = []
    for threads in (1, 2, 3):
        sg.set_num_threads(threads)
        opt = LSO(sg.optimizers.Adam(learning_rate=0.125), initial_scale=256.0,
                  dynamic_growth_steps=2)
        table, bias = sg.Variable(table0), sg.Variable(bias0)
        for g_table, g_bias in stream:
            opt.apply_gradients([(g_table, table), (g_bias, bias)])
        results.append(snapshot(opt, [table, bias]))
    assert results[0][-3:] == [256.0, 1, 6]      # skips on steps 2 and 6
    for other in results[1:]:
        assert_same(results[0], other)


def _saved(opt, var):
    buf = io.BytesIO()
    opt.save_state(buf)
    return buf.getvalue()


def _edited(blob, **changes):
    with np.load(io.BytesIO(blob)) as data:
        arrays = {key: data[key] for key in data.files}
    arrays.update({f"optimizer/loss_scale/{k}": v for k, v in changes.items()})
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def test_load_state_rejects_bad_or_mismatched_states_and_changes_nothing(rng):
    var = sg.Variable(rng.standard_normal((3, 2)).astype(np.float32))
    saver = LSO(sg.optimizers.Adam(learning_rate=0.1), initial_scale=8.0,
                dynamic_growth_steps=4)
    for _ in range(3):
        saver.apply_gradients([(rng.standard_normal((3, 2)), var)])
    blob = _saved(saver, var)
    assert int(saver.step_counter.numpy()) == 3

    target = LSO(sg.optimizers.Adam(learning_rate=0.1), initial_scale=2.0,
                 dynamic_growth_steps=4)
    target.apply_gradients([(np.ones((3, 2)), var)])
    target.apply_gradients([(np.array([[np.nan] * 2] * 3), var)])
    before = snapshot(target, [var])

    def refused(data, match, opt=target):
        with pytest.raises(InvalidArgumentError, match=match):
            opt.load_state(io.BytesIO(data), [var])
        assert_same(before, snapshot(target, [var]))

    refused(b"not an archive", "cannot read")
    refused(blob[: len(blob) // 2], "cannot read")
    refused(_edited(blob, dynamic_scale=np.float32(np.nan)), "dynamic_scale")
    refused(_edited(blob, dynamic_scale=np.float32(-1.0)), "dynamic_scale")
    refused(_edited(blob, dynamic_scale=np.float64(1.0)), "dtype float64")
    refused(_edited(blob, step_counter=np.int64(4)), r"\[0, dynamic_growth_steps")
    refused(_edited(blob, step_counter=np.int64(-1)), "step_counter")
    refused(_edited(blob, inner_class=np.asarray("Nadam")), "inner_class")
    refused(_edited(blob, inner_class=np.asarray("Lion")), "inner optimizer Lion")
    with pytest.raises(InvalidArgumentError, match="dynamic_growth_steps = 2"):
        LSO(sg.optimizers.Adam(), dynamic_growth_steps=2).load_state(
            io.BytesIO(blob), [var])
    # another inner class, a plain optimizer's state, and the reverse
    with pytest.raises(InvalidArgumentError):
        LSO(sg.optimizers.Adagrad()).load_state(io.BytesIO(blob), [var])
    with pytest.raises(InvalidArgumentError, match="saved by Adam"):
        target.load_state(io.BytesIO(_saved(target.inner_optimizer, var)), [var])
    with pytest.raises(InvalidArgumentError, match="saved by LossScaleOptimizer"):
        sg.optimizers.Adam().load_state(io.BytesIO(blob), [var])
    with pytest.raises(InvalidArgumentError, match="does not match"):
        target.load_state(io.BytesIO(blob),
                          [sg.Variable(np.zeros((4, 2), np.float32))])
    assert_same(before, snapshot(target, [var]))

    target.load_state(io.BytesIO(blob), [var])          # the good one loads
    assert (target.dynamic_scale, int(target.step_counter.numpy())) == (8.0, 3)
    assert target.iterations_count == 3


# -- argument errors ------------------------------------------------------------

@pytest.mark.parametrize("inner,match", [
    (None, "inner_optimizer must be a sparsegrad optimizer"),
    ("sgd", "got 'sgd'"),
    (sg.optimizers.SGD, "inner_optimizer must be"),
    (LSO(sg.optimizers.SGD()), "cannot wrap another LossScaleOptimizer"),
])
def test_inner_optimizer_must_be_an_optimizer(inner, match):
    with pytest.raises(TypeError, match=match):
        LSO(inner)


@pytest.mark.parametrize("value,match", [
    (0.0, "initial_scale must be > 0.0, got 0.0"),
    (-2.0, "initial_scale must be > 0.0, got -2.0"),
    (float("inf"), "initial_scale must be finite, got inf"),
    (float("nan"), "initial_scale must be finite, got nan"),
    ("2", "initial_scale must be a real number, got '2'"),
    (True, "initial_scale must be a real number, got True"),
    (1e39, r"got 1e\+39, which is inf in float32"),
    (1e-50, "got 1e-50, which is 0.0 in float32"),
])
def test_initial_scale_errors(value, match):
    with pytest.raises(InvalidArgumentError, match=match):
        LSO(sgd(), initial_scale=value)


@pytest.mark.parametrize("value,match", [
    (0, r"dynamic_growth_steps must be in \[1, 2\*\*63 - 1\], got 0"),
    (-3, "got -3"),
    (2**63, "got 9223372036854775808"),
    (2.0, "dynamic_growth_steps must be an int, got 2.0"),
    (True, "must be an int, got True"),
    ("10", "must be an int, got '10'"),
])
def test_dynamic_growth_steps_errors(value, match):
    with pytest.raises(InvalidArgumentError, match=match):
        LSO(sgd(), dynamic_growth_steps=value)


def test_numpy_ints_and_integral_scales_are_taken():
    opt = LSO(sgd(), initial_scale=8, dynamic_growth_steps=np.int64(3),
              name="ls")
    assert (opt.initial_scale, opt.dynamic_growth_steps) == (8.0, 3)
    assert type(opt.dynamic_growth_steps) is int and opt.name == "ls"
    with pytest.raises(InvalidArgumentError, match="name must be a str"):
        LSO(sgd(), name=3)
