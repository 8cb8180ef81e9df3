"""Slots, variables(), get_config round trips, and save/restore of state."""

import io

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.optimizers import schedules

CONFIGS = [
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adagrad", {"learning_rate": 0.1, "initial_accumulator_value": 0.2}),
    ("RowwiseAdagrad", {"learning_rate": 0.1}),
    ("Adadelta", {"learning_rate": 1.0, "rho": 0.9}),
    ("Adam", {"learning_rate": schedules.ExponentialDecay(0.1, 2, 0.5), "amsgrad": True}),
    ("Adam", {"learning_rate": 0.01, "lazy": True}),
    ("AdamW", {"learning_rate": 0.01, "weight_decay": 0.1}),
    ("Adamax", {"learning_rate": 0.1, "clipnorm": 1.0}),
    ("Ftrl", {"learning_rate": 0.1, "l1_regularization_strength": 0.01,
              "l2_shrinkage_regularization_strength": 0.1, "beta": 0.1}),
    ("RMSprop", {"learning_rate": 0.01, "momentum": 0.5, "centered": True,
                 "global_clipnorm": 2.0}),
    ("ProximalGradientDescent", {"learning_rate": 0.1, "l1_regularization_strength": 0.01,
                                 "clipvalue": 0.5}),
    ("ProximalAdagrad", {"learning_rate": 0.1, "l2_regularization_strength": 0.01}),
]
IDS = [f"{n}-{k}" for k, (n, _) in enumerate(CONFIGS)]

# TensorFlow's slot names, and the Keras 3 names accepted as aliases.
SLOT_NAMES = {
    "SGD": ["momentum"], "Adagrad": ["accumulator"], "RowwiseAdagrad": ["accumulator"],
    "Adadelta": ["accum_grad", "accum_var"], "Adam": ["m", "v", "vhat"],
    "AdamW": ["m", "v", "vhat"], "Adamax": ["m", "v"], "Ftrl": ["accumulator", "linear"],
    "RMSprop": ["rms", "momentum", "mg"], "ProximalGradientDescent": [],
    "ProximalAdagrad": ["accumulator"],
}


def make(name, kwargs):
    return getattr(sg.optimizers, name)(**kwargs)


def gradient_stream(rng, steps):
    """Alternate dense and sparse (duplicate-index) gradients for two variables."""
    out = []
    for step in range(steps):
        g_table = sg.IndexedSlices(rng.standard_normal((5, 3)), rng.integers(0, 6, 5),
                                  dense_shape=(6, 3))
        if step % 2:
            g_table = g_table.to_dense().numpy()
        g_bias = None if step == 2 else rng.standard_normal(3)
        out.append((g_table, g_bias))
    return out


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_save_restore_continue_is_bit_identical(name, kwargs, rng, tmp_path):
    table, bias = rng.standard_normal((6, 3)), rng.standard_normal(3)
    stream = gradient_stream(rng, 6)
    if name == "RowwiseAdagrad":      # rows only: no 1-D bias for a row-wise slot
        stream = [(g, None) for g, _ in stream]

    def run(opt, w, b, grads):
        for g_table, g_bias in grads:
            opt.apply_gradients([(g_table, w), (g_bias, b)])

    w_ref, b_ref = sg.Variable(table), sg.Variable(bias)
    ref = make(name, kwargs)
    run(ref, w_ref, b_ref, stream)

    w, b = sg.Variable(table), sg.Variable(bias)
    first = make(name, kwargs)
    run(first, w, b, stream[:3])
    path = tmp_path / "state.npz"
    first.save_state(path)
    w_saved, b_saved = w.numpy(), b.numpy()
    del first

    # A new process would rebuild the model variables from a checkpoint.
    w2, b2 = sg.Variable(w_saved), sg.Variable(b_saved)
    second = make(name, kwargs)
    second.load_state(path, [w2, b2][: 1 if name == "RowwiseAdagrad" else 2])
    assert second.iterations_count == 3
    run(second, w2, b2, stream[3:])
    np.testing.assert_array_equal(w2.numpy(), w_ref.numpy())
    np.testing.assert_array_equal(b2.numpy(), b_ref.numpy())
    for v_ref, v_new in zip(ref.variables(), second.variables()):
        np.testing.assert_array_equal(v_new.numpy(), v_ref.numpy())


def test_save_state_to_a_file_object_and_default_var_list(rng):
    w = sg.Variable(rng.standard_normal((4, 2)))
    opt = sg.optimizers.Adam(learning_rate=0.1)
    opt.apply_gradients([(np.ones((4, 2)), w)])
    buf = io.BytesIO()
    opt.save_state(buf)
    m_saved = opt.get_slot(w, "m").numpy()
    opt.apply_gradients([(np.ones((4, 2)), w)])
    buf.seek(0)
    opt.load_state(buf)                        # tracked variables by default
    assert opt.iterations_count == 1
    np.testing.assert_array_equal(opt.get_slot(w, "m").numpy(), m_saved)


def test_load_state_rejects_mismatches_and_changes_nothing(rng, tmp_path):
    w = sg.Variable(rng.standard_normal((4, 2)))
    opt = sg.optimizers.Adam(learning_rate=0.1)
    opt.apply_gradients([(np.ones((4, 2)), w)])
    path = tmp_path / "adam.npz"
    opt.save_state(path)

    other = sg.optimizers.Adagrad()
    with pytest.raises(sg.errors.InvalidArgumentError, match="saved by Adam"):
        other.load_state(path, [w])

    fresh = sg.optimizers.Adam(learning_rate=0.1)
    fresh.apply_gradients([(np.full((4, 2), 2.0), w)])
    m_before, it_before = fresh.get_slot(w, "m").numpy(), fresh.iterations_count
    with pytest.raises(sg.errors.InvalidArgumentError, match="does not match"):
        fresh.load_state(path, [sg.Variable(np.zeros((3, 2)))])
    with pytest.raises(sg.errors.InvalidArgumentError, match="holds slots for 1"):
        fresh.load_state(path, [w, sg.Variable(np.zeros(2))])
    with pytest.raises(sg.errors.InvalidArgumentError, match="differ"):
        sg.optimizers.Adam(amsgrad=True).load_state(path, [w])
    np.testing.assert_array_equal(fresh.get_slot(w, "m").numpy(), m_before)
    assert fresh.iterations_count == it_before

    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros(2))
    with pytest.raises(sg.errors.InvalidArgumentError, match="not a sparsegrad"):
        fresh.load_state(bad, [w])
    with pytest.raises(sg.errors.InvalidArgumentError, match="cannot read"):
        fresh.load_state(tmp_path / "missing.npz", [w])


def test_load_state_restores_a_changed_learning_rate(tmp_path):
    w = sg.Variable(np.zeros(2))
    opt = sg.optimizers.SGD(learning_rate=0.1)
    opt.learning_rate = 0.25
    opt.apply_gradients([(np.ones(2), w)])
    opt.save_state(tmp_path / "s.npz")
    again = sg.optimizers.SGD(learning_rate=0.1)
    again.load_state(tmp_path / "s.npz", [w])
    assert again.learning_rate == 0.25


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_get_config_round_trip(name, kwargs):
    opt = make(name, kwargs)
    config = opt.get_config()
    again = type(opt).from_config(config)
    assert again.get_config() == config
    assert config["name"] == name
    via_serialize = sg.optimizers.deserialize(sg.optimizers.serialize(opt))
    assert type(via_serialize) is type(opt)
    assert via_serialize.get_config() == config
    if isinstance(kwargs["learning_rate"], schedules.LearningRateSchedule):
        assert config["learning_rate"]["class_name"] == "ExponentialDecay"
        assert again.learning_rate == kwargs["learning_rate"]


@pytest.mark.parametrize("name", sorted(SLOT_NAMES))
def test_slot_names_and_variables(name, rng):
    kwargs = {"momentum": 0.5} if name == "SGD" else {}
    if name in ("Adam", "AdamW"):
        kwargs = {"amsgrad": True}
    if name == "RMSprop":
        kwargs = {"centered": True}
    opt = make(name, kwargs)
    assert opt.get_slot_names() == SLOT_NAMES[name]
    w = sg.Variable(rng.standard_normal((3, 2)))
    with pytest.raises(sg.errors.NotFoundError, match="no slots"):
        opt.get_slot(w, SLOT_NAMES[name][0] if SLOT_NAMES[name] else "x")
    opt.apply_gradients([(rng.standard_normal((3, 2)), w)])
    slots = [opt.get_slot(w, s) for s in SLOT_NAMES[name]]
    for slot in slots:
        assert isinstance(slot, sg.Variable) and not slot.trainable
        assert slot.dtype == w.dtype
        assert slot.shape == ((3,) if name == "RowwiseAdagrad" else (3, 2))
    assert opt.variables()[0] is opt.iterations
    assert opt.variables()[1:] == slots
    assert opt.tracked_variables() == [w]
    with pytest.raises(sg.errors.NotFoundError, match="no slot 'nope'"):
        opt.get_slot(w, "nope")


def test_keras_slot_name_aliases(rng):
    w = sg.Variable(np.ones(2))
    adam = sg.optimizers.Adam(amsgrad=True)
    adam.apply_gradients([(np.ones(2), w)])
    assert adam.get_slot(w, "momentum") is adam.get_slot(w, "m")
    assert adam.get_slot(w, "velocity") is adam.get_slot(w, "v")
    assert adam.get_slot(w, "velocity_hat") is adam.get_slot(w, "vhat")
    rms = sg.optimizers.RMSprop()
    rms.apply_gradients([(np.ones(2), w)])
    assert rms.get_slot(w, "velocity") is rms.get_slot(w, "rms")
    with pytest.raises(sg.errors.NotFoundError):
        rms.get_slot(w, "mg")                          # not centered


def test_initial_slot_values_and_state_tuple():
    w = sg.Variable(np.ones((2, 2), np.float32))
    opt = sg.optimizers.Ftrl(initial_accumulator_value=0.5)
    opt.build([w])
    state = opt.get_state(w)
    assert isinstance(state, sg.optimizers.FtrlState)
    np.testing.assert_array_equal(state.accumulator.numpy(), np.full((2, 2), 0.5, np.float32))
    np.testing.assert_array_equal(state.linear.numpy(), np.zeros((2, 2), np.float32))
    assert opt.iterations_count == 0                   # build does not count a step


def test_iterations_count_once_per_apply_gradients(rng):
    a, b = sg.Variable(np.ones(2)), sg.Variable(np.ones(3))
    opt = sg.optimizers.SGD(0.1)
    opt.apply_gradients([(np.ones(2), a), (np.ones(3), b)])
    opt.apply_gradients([(np.ones(2), a)])
    assert opt.iterations_count == 2
    assert opt.iterations.dtype == np.int64
    assert opt.apply_gradients([(np.ones(2), a)]) is opt.iterations


def test_get_builds_optimizers():
    assert isinstance(sg.optimizers.get("rmsprop"), sg.optimizers.RMSprop)
    adam = sg.optimizers.Adam(learning_rate=0.5)
    assert sg.optimizers.get(adam) is adam
    assert sg.optimizers.get(sg.optimizers.serialize(adam)).learning_rate == 0.5
    with pytest.raises(sg.errors.InvalidArgumentError, match="unknown optimizer"):
        sg.optimizers.get("nope")
