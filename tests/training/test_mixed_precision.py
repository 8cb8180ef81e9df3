"""Mixed-precision optimizers: float16 and bfloat16 variables updated with
float32 arithmetic and one rounding per store (nearest or stochastic),
against the NumPy model of mixed_model.py."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad._kernels import parallel, training_half, training_table
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework.backend import CPU
from sparsegrad.training.training_ops import mixed

from . import mixed_model as mm

BF16, F16 = mm.BF16, mm.F16
HALF = [BF16, F16]
try:
    from sparsegrad._kernels import training_half_avx2
except ImportError:                     # built without the AVX2 twin
    training_half_avx2 = None
BUILDS = [training_half] + ([training_half_avx2] if training_half_avx2 is not None
                            and parallel.cpu_has_avx2() else [])


def _interesting_floats(rng, n=200_000):
    """Random floats of every magnitude, half values and their midpoints,
    the overflow and denormal edges, infinities and NaNs."""
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    halves = np.arange(2**16, dtype=np.uint16)
    edges = np.concatenate([
        halves.view(F16).astype(np.float32), halves.view(BF16).astype(np.float32),
        np.float32([65504, 65505, 65519, 65520, 65535.9, 65536, 1e9, -65520,
                    2.0**-14, 2.0**-14 * 0.999, 2.0**-24, 2.0**-25, 2.0**-26, 1e-30,
                    3.0e38, -3.4e38, 1e-45, np.inf, -np.inf, np.nan, -np.nan]),
        (halves.view(F16).astype(np.float32)
         + np.float32(2.0**-26) * rng.random(2**16, dtype=np.float32)),
    ])
    return np.concatenate([x, edges]).astype(np.float32)


pytestmark = pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning",
                                        "ignore:overflow:RuntimeWarning")


@pytest.mark.parametrize("dtype", HALF, ids=["bfloat16", "float16"])
@pytest.mark.parametrize("build", BUILDS, ids=lambda m: m.__name__.split(".")[-1])
def test_stores_match_the_model(build, dtype):
    rng = np.random.default_rng(7)
    x = _interesting_floats(rng)
    r = rng.integers(0, 2**32, x.shape[0], dtype=np.uint64).astype(np.uint32)
    bf16 = dtype == BF16
    for stochastic in (False, True):
        out = np.empty(x.shape[0], np.uint16)
        build.mixed_round(x, r, bf16, stochastic, out)
        expected = (mm.round_stochastic(x, dtype, r) if stochastic
                    else mm.round_nearest(x, dtype))
        np.testing.assert_array_equal(out, expected)
    # the blocks (eight lanes at once where the build has them) store the
    # same bits as one element at a time, with the words of their positions
    width = 37
    rows = x[: (x.shape[0] // width) * width].reshape(-1, width)
    picked = np.array([0, 3, 5, rows.shape[0] - 1], dtype=np.int64)
    for stochastic in (False, True):
        rounding = mixed.Rounding(stochastic, 11, 5, 2)
        mode = rounding.mode(dtype)
        out = np.zeros(rows.shape, np.uint16)
        build.mixed_store_rows(np.ascontiguousarray(rows[picked]), picked, out, mode,
                               2, 2)
        pos = (picked[:, None] * width + np.arange(width)).astype(np.uint64)
        expected = mm.store(rows[picked], dtype, rounding, 2, pos).view(np.uint16)
        np.testing.assert_array_equal(out[picked], expected)
        assert not out[np.setdiff1d(np.arange(rows.shape[0]), picked)].any()


def test_random_words_match_the_model():
    pos = np.concatenate([np.arange(1000, dtype=np.uint64),
                          np.uint64(2**32) + np.arange(-5, 5).astype(np.uint64),
                          np.uint64([2**40 + 3, 2**63, 2**64 - 1])])
    for build in BUILDS:
        out = np.empty(pos.shape[0], np.uint32)
        build.sr_words(0xDEADBEEF, 12345, pos, out)
        np.testing.assert_array_equal(out, mm.sr_words(0xDEADBEEF, 12345, pos))


@pytest.mark.parametrize("dtype", HALF, ids=["bfloat16", "float16"])
@pytest.mark.parametrize("build", BUILDS, ids=lambda m: m.__name__.split(".")[-1])
def test_a_store_across_a_multiple_of_2_to_the_32_keeps_each_positions_word(
        build, dtype):
    # 40 values at positions 2**32 - 13 .. 2**32 + 26: two high words in one
    # block, each element with the word of its own position
    rng = np.random.default_rng(9)
    x = (1 + rng.random(40)).astype(np.float32)
    rounding = mixed.Rounding(True, 1, 2, 3)
    start = 2**32 - 13
    out = np.empty(40, np.uint16)
    build.mixed_store(x, out, rounding.mode(dtype), 1, start)
    pos = np.arange(start, start + 40, dtype=np.uint64)
    np.testing.assert_array_equal(
        out, mm.store(x, dtype, rounding, 1, pos).view(np.uint16))


def test_stream_keys_depend_on_every_part():
    base = mixed.stream_keys(1, 2, 3)
    others = [mixed.stream_keys(0, 2, 3), mixed.stream_keys(1, 3, 3),
              mixed.stream_keys(1, 2, 4), mixed.stream_keys(1, 2, 3, salt=1)]
    for k0, k1 in others:
        assert not np.array_equal(k0, base[0])
        assert not np.array_equal(k1, base[1])
    assert len(set(base[0].tolist())) == 4


# ---------------------------------------------------------------------------
# Optimizers against the model: the float32 optimizer on upcast copies.

def _optimizers():
    return [
        ("SGD", dict(learning_rate=0.1)),
        ("SGD", dict(learning_rate=0.1, momentum=0.9, nesterov=True)),
        ("Adagrad", dict(learning_rate=0.1)),
        ("RowwiseAdagrad", dict(learning_rate=0.1)),
        ("Adam", dict(learning_rate=0.01)),
        ("Adam", dict(learning_rate=0.01, lazy=True)),
        ("Adam", dict(learning_rate=0.01, amsgrad=True)),
        ("AdamW", dict(learning_rate=0.01, weight_decay=0.1, lazy=True)),
        ("Adamax", dict(learning_rate=0.01)),
        ("Nadam", dict(learning_rate=0.01)),
        ("RMSprop", dict(learning_rate=0.01, momentum=0.5, centered=True)),
        ("Adadelta", dict(learning_rate=1.0)),
        ("Ftrl", dict(learning_rate=0.1, l1_regularization_strength=0.01)),
        ("Lion", dict(learning_rate=0.01, lazy=True)),
        ("Lamb", dict(learning_rate=0.01)),
        ("Lamb", dict(learning_rate=0.01, lazy=True)),
        ("ProximalGradientDescent", dict(learning_rate=0.1,
                                         l1_regularization_strength=0.01)),
        ("ProximalAdagrad", dict(learning_rate=0.1, l1_regularization_strength=0.01)),
        ("Ftrl", dict(learning_rate=0.1, learning_rate_power=-0.6)),
    ]


def _available(name):
    return getattr(sg.optimizers, name, None) is not None


@pytest.mark.parametrize("slot_half", [False, True], ids=["f32slots", "halfslots"])
@pytest.mark.parametrize("stochastic", [False, True], ids=["nearest", "stochastic"])
@pytest.mark.parametrize("dtype", HALF, ids=["bfloat16", "float16"])
@pytest.mark.parametrize("name, config", _optimizers(),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_optimizer_steps_match_the_model(name, config, dtype, stochastic, slot_half):
    if not _available(name):
        pytest.skip(f"no {name}")
    rng = np.random.default_rng(3)
    cls = getattr(sg.optimizers, name)
    opt = cls(**config, slot_dtype=dtype if slot_half else None,
              stochastic_rounding=stochastic, seed=99)
    var = sg.Variable(rng.normal(size=(9, 12)).astype(dtype))
    opt.build([var])
    model = mm.model_for(opt, var)
    model.build([model._model_var])
    for step in range(4):
        if step % 2:
            grad = rng.normal(size=(9, 12)).astype(np.float32 if step == 1 else dtype)
        else:
            idx = rng.integers(0, 9, 7)
            values = rng.normal(size=(7, 12)).astype(np.float32 if step else dtype)
            grad = sg.IndexedSlices(values, idx, (9, 12))
        expected_var, expected_slots = mm.optimizer_step(opt, model, var, grad)
        opt.apply_gradients([(grad, var)])
        np.testing.assert_array_equal(var.numpy().view(np.uint16),
                                      expected_var.view(np.uint16),
                                      err_msg=f"{name} step {step}")
        slots = [s for s in opt.get_state(var) if s is not None]
        assert len(slots) == len(expected_slots)
        for slot, want in zip(slots, expected_slots):
            assert slot.dtype == (dtype if slot_half else np.float32)
            np.testing.assert_array_equal(slot.numpy().view(np.uint8),
                                          want.view(np.uint8),
                                          err_msg=f"{name} step {step} {slot.name}")


@pytest.mark.parametrize("dtype", HALF, ids=["bfloat16", "float16"])
@pytest.mark.parametrize("name, config", _optimizers(),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_the_copies_path_gives_the_fused_kernels_bits(name, config, dtype,
                                                      monkeypatch):
    # what the GPU runs (the float32 kernel between loads and stores of the
    # touched rows) against the host's fused kernels, stochastic, half slots
    rng = np.random.default_rng(6)
    table = rng.normal(size=(11, 9)).astype(dtype)
    grads = [sg.IndexedSlices(rng.normal(size=(6, 9)).astype(np.float32),
                              rng.integers(0, 11, 6), (11, 9)),
             rng.normal(size=(11, 9)).astype(dtype)]
    out = []
    for copies in (set(), {op[0] for op in training_table.OPS}):
        monkeypatch.setattr(mixed, "THROUGH_COPIES", copies | {"lamb"})
        var = sg.Variable(table.copy())
        opt = getattr(sg.optimizers, name)(**config, slot_dtype=dtype,
                                           stochastic_rounding=True, seed=3)
        for g in grads:
            opt.apply_gradients([(g, var)])
        out.append([var.numpy().view(np.uint16).copy()]
                   + [s.numpy().view(np.uint16).copy()
                      for s in opt.get_state(var) if s is not None])
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", HALF, ids=["bfloat16", "float16"])
def test_thread_counts_and_builds_give_the_same_bits(dtype):
    rng = np.random.default_rng(5)
    table = rng.normal(size=(500, 40)).astype(dtype)
    ids = rng.zipf(1.2, 3000) % 500
    values = rng.normal(size=(3000, 40)).astype(np.float32)
    dense = rng.normal(size=(500, 40)).astype(dtype)
    results = []
    for build in BUILDS:
        for threads in (1, 2, 3):
            sg.set_num_threads(threads)
            try:
                with CPU.use_kernels("training_half", build):
                    out = []
                    for name in ("Adagrad", "RowwiseAdagrad", "Adam"):
                        var = sg.Variable(table.copy())
                        opt = getattr(sg.optimizers, name)(
                            0.01, stochastic_rounding=True, slot_dtype=dtype, seed=4)
                        opt.apply_gradients([(sg.IndexedSlices(values, ids), var)])
                        opt.apply_gradients([(dense, var)])
                        out.append(var.numpy().view(np.uint16).copy())
                        out += [s.numpy().view(np.uint16).copy()
                                for s in opt.get_state(var) if s is not None]
            finally:
                sg.set_num_threads(None)
            results.append(out)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def test_stochastic_rounding_keeps_small_updates_that_nearest_loses():
    # 1000 steps of SGD on one bfloat16 row, each moving it by 1/16 of its
    # last place: nearest rounding loses every step, stochastic rounding
    # moves the row by about the exact total
    start = np.float32(1.0)
    ulp = 2.0**-7                    # bfloat16's spacing in [1, 2)
    step = ulp / 16
    n_steps = 1000
    final = {}
    for stochastic in (False, True):
        var = sg.Variable(np.full((1, 256), start, BF16))
        opt = sg.optimizers.SGD(learning_rate=1.0, stochastic_rounding=stochastic,
                                seed=1)
        grad = sg.IndexedSlices(np.full((1, 256), -step, np.float32), [0])
        for _ in range(n_steps):
            opt.apply_gradients([(grad, var)])
        final[stochastic] = var.numpy().astype(np.float64)
    assert (final[False] == 1.0).all()                  # every update lost
    exact = 1.0 + n_steps * step
    mean = final[True].mean()
    # 256 independent walks: their mean is within a few standard errors
    assert abs(mean - exact) < 0.02 * (exact - 1.0)
    assert len(np.unique(final[True])) > 1              # really random per element


def test_stochastic_rounding_differs_from_nearest_and_is_unbiased():
    rng = np.random.default_rng(2)
    x = (1 + rng.random(100_000) * 0.99).astype(np.float32)
    r = rng.integers(0, 2**32, x.shape[0], dtype=np.uint64).astype(np.uint32)
    for dtype in HALF:
        out = np.empty(x.shape[0], np.uint16)
        training_half.mixed_round(x, r, dtype == BF16, True, out)
        sr = out.view(dtype).astype(np.float64)
        near = x.astype(dtype).astype(np.float64)
        assert (sr != near).mean() > 0.2
        ulp = 2.0**-7 if dtype == BF16 else 2.0**-10
        assert abs((sr - x).mean()) < ulp * 0.01
        # each value is one of its two neighbours
        assert (np.abs(sr - x) < ulp).all()


def test_nearest_is_the_default_and_changes_with_the_seed_only_when_stochastic():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(20, 16)).astype(BF16)
    grad = rng.normal(size=(20, 16)).astype(np.float32) * np.float32(1e-3)
    out = {}
    for key, kwargs in {"default": {}, "nearest": dict(seed=5),
                        "sr1": dict(stochastic_rounding=True, seed=1),
                        "sr2": dict(stochastic_rounding=True, seed=2)}.items():
        var = sg.Variable(table.copy())
        sg.optimizers.Adagrad(0.1, **kwargs).apply_gradients([(grad, var)])
        out[key] = var.numpy().view(np.uint16)
    np.testing.assert_array_equal(out["default"], out["nearest"])
    assert not np.array_equal(out["sr1"], out["sr2"])
    assert not np.array_equal(out["sr1"], out["nearest"])


def test_slot_dtype_and_seed_are_checked():
    with pytest.raises(InvalidArgumentError, match="slot_dtype"):
        sg.optimizers.Adam(slot_dtype="float64")
    with pytest.raises(InvalidArgumentError, match="slot_dtype"):
        sg.optimizers.Adam(slot_dtype="int8")
    with pytest.raises(InvalidArgumentError, match="seed"):
        sg.optimizers.Adam(seed=-1)
    with pytest.raises(InvalidArgumentError, match="seed"):
        sg.optimizers.Adam(seed=1.5)
    var = sg.Variable(np.ones((3, 2), F16))
    before = var.numpy().copy()
    opt = sg.optimizers.Adam(slot_dtype="bfloat16")
    with pytest.raises(InvalidArgumentError, match="slot_dtype bfloat16"):
        opt.apply_gradients([(np.ones((3, 2), np.float32), var)])
    np.testing.assert_array_equal(var.numpy(), before)
    assert opt.iterations_count == 0


def test_float32_variables_keep_their_own_slots_beside_half_ones():
    w32 = sg.Variable(np.ones((3, 2), np.float32))
    wh = sg.Variable(np.ones((3, 2), BF16))
    opt = sg.optimizers.Adam(0.1, slot_dtype="bfloat16")
    opt.apply_gradients([(np.ones((3, 2), np.float32), w32),
                         (np.ones((3, 2), np.float32), wh)])
    assert opt.get_slot(w32, "m").dtype == np.float32
    assert opt.get_slot(wh, "m").dtype == BF16


def test_config_round_trips():
    opt = sg.optimizers.Adagrad(0.1, slot_dtype="bfloat16", stochastic_rounding=True,
                                seed=2**63)
    config = opt.get_config()
    assert config["slot_dtype"] == "bfloat16" and config["seed"] == 2**63
    again = sg.optimizers.Adagrad.from_config(config)
    assert again.slot_dtype == BF16 and again.stochastic_rounding


@pytest.mark.parametrize("dtype", HALF, ids=["bfloat16", "float16"])
def test_state_saved_and_restored_continues_bit_for_bit(tmp_path, dtype):
    rng = np.random.default_rng(1)
    table = rng.normal(size=(30, 8)).astype(dtype)
    grads = [sg.IndexedSlices(rng.normal(size=(10, 8)).astype(np.float32),
                              rng.integers(0, 30, 10)) for _ in range(4)]

    def make():
        return sg.optimizers.Adam(0.01, lazy=True, slot_dtype=dtype,
                                  stochastic_rounding=True, seed=8)

    var = sg.Variable(table.copy())
    opt = make()
    for g in grads:
        opt.apply_gradients([(g, var)])
    var2 = sg.Variable(table.copy())
    opt2 = make()
    for g in grads[:2]:
        opt2.apply_gradients([(g, var2)])
    path = tmp_path / "state.npz"
    opt2.save_state(path)
    opt3 = make()
    opt3.load_state(path, [var2])
    for g in grads[2:]:
        opt3.apply_gradients([(g, var2)])
    np.testing.assert_array_equal(var.numpy().view(np.uint16),
                                  var2.numpy().view(np.uint16))


def test_global_clipnorm_on_a_half_variable_scales_in_float32():
    rng = np.random.default_rng(4)
    table = rng.normal(size=(6, 4)).astype(BF16)
    grad = (rng.normal(size=(6, 4)) * 10).astype(np.float32)
    var = sg.Variable(table.copy())
    sg.optimizers.SGD(0.1, global_clipnorm=1.0).apply_gradients([(grad, var)])
    scale = np.float32(1.0) / np.float32(np.sqrt(np.sum(
        grad.astype(np.float64) ** 2)))
    expected = (table.astype(np.float32) - (grad * scale) * np.float32(0.1))
    np.testing.assert_allclose(var.numpy().astype(np.float32), expected,
                               rtol=2**-7)


def test_a_half_gradient_of_another_dtype_is_applied_in_float32():
    var = sg.Variable(np.ones((2, 2), BF16))
    sg.optimizers.SGD(1.0).apply_gradients([(np.full((2, 2), 0.25), var)])  # float64
    np.testing.assert_array_equal(var.numpy().astype(np.float32), 0.75)
    with pytest.raises(InvalidArgumentError, match="shape"):
        sg.optimizers.SGD(1.0).apply_gradients([(np.ones((3, 2)), var)])
