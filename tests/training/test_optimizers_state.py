"""Slots, variables(), get_config round trips, and save/restore of state."""

import io
import json
import re
import struct
import zipfile

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.optimizers import schedules

CONFIGS = [
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adagrad", {"learning_rate": 0.1, "initial_accumulator_value": 0.2}),
    ("RowwiseAdagrad", {"learning_rate": 0.1}),
    ("Adadelta", {"learning_rate": 1.0, "rho": 0.9}),
    ("Adam", {"learning_rate": schedules.ExponentialDecay(0.1, 2, 0.5),
              "amsgrad": True}),
    ("Adam", {"learning_rate": 0.01, "lazy": True}),
    ("AdamW", {"learning_rate": 0.01, "weight_decay": 0.1}),
    ("Adamax", {"learning_rate": 0.1, "clipnorm": 1.0}),
    ("Ftrl", {"learning_rate": 0.1, "l1_regularization_strength": 0.01,
              "l2_shrinkage_regularization_strength": 0.1, "beta": 0.1}),
    ("RMSprop", {"learning_rate": 0.01, "momentum": 0.5, "centered": True,
                 "global_clipnorm": 2.0}),
    ("ProximalGradientDescent", {"learning_rate": 0.1,
                                 "l1_regularization_strength": 0.01,
                                 "clipvalue": 0.5}),
    ("ProximalAdagrad", {"learning_rate": 0.1, "l2_regularization_strength": 0.01}),
    ("Lion", {"learning_rate": schedules.ExponentialDecay(0.1, 2, 0.5),
              "lazy": True, "global_clipnorm": 2.0}),
    ("Lamb", {"learning_rate": schedules.ExponentialDecay(0.1, 2, 0.5),
              "lazy": True, "clipnorm": 2.0}),
    ("Lamb", {"learning_rate": 0.01, "beta_1": 0.8}),
]
IDS = [f"{n}-{k}" for k, (n, _) in enumerate(CONFIGS)]

# TensorFlow's slot names, and the Keras 3 names accepted as aliases.
SLOT_NAMES = {
    "SGD": ["momentum"], "Adagrad": ["accumulator"], "RowwiseAdagrad": ["accumulator"],
    "Adadelta": ["accum_grad", "accum_var"], "Adam": ["m", "v", "vhat"],
    "AdamW": ["m", "v", "vhat"], "Adamax": ["m", "v"],
    "Ftrl": ["accumulator", "linear"],
    "RMSprop": ["rms", "momentum", "mg"], "ProximalGradientDescent": [],
    "ProximalAdagrad": ["accumulator"], "Lion": ["m"],
    "Lamb": ["m", "v"],
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
    np.testing.assert_array_equal(state.accumulator.numpy(),
                                  np.full((2, 2), 0.5, np.float32))
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


# -- load_state on malformed files: InvalidArgumentError, optimizer unchanged --

MISSING = object()          # a mutation result: write no file at all


def _meta(arrays):
    return json.loads(arrays["meta"].item())


def _edit_meta(edit):
    """A mutation that applies `edit` to the parsed meta dict, in place."""
    def mutate(arrays):
        meta = _meta(arrays)
        edit(meta)
        arrays["meta"] = np.asarray(json.dumps(meta))
    return mutate


def _set_meta_text(text):
    def mutate(arrays):
        arrays["meta"] = np.asarray(text)
    return mutate


def _set_var_field(key, value):
    return _edit_meta(lambda meta: meta["variables"][0].__setitem__(key, value))


def _del_var_field(key):
    return _edit_meta(lambda meta: meta["variables"][0].pop(key))


def _set_array(key, value):
    def mutate(arrays):
        arrays[key] = value
    return mutate


def _drop(key):
    """A mutation that removes an array; `key` may be a function of the arrays."""
    def mutate(arrays):
        del arrays[key(arrays) if callable(key) else key]
    return mutate


def _last_slot(arrays, k):
    """The key of the last slot array of saved variable `k`."""
    return f"slot/{k}/{_meta(arrays)['variables'][k]['slots'][-1]}"


def _edit_slot(k, edit):
    def mutate(arrays):
        key = _last_slot(arrays, k)
        arrays[key] = edit(arrays[key])
    return mutate


def _npy(header, data):
    """The bytes of a .npy member: `header` (its dict) and then `data`."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + data


def _archive(members):
    """The bytes of a zip of `members` (name -> bytes), stored as np.savez does."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            z.writestr(name + ".npy", data)
    return buf.getvalue()


def _members(arrays):
    out = {}
    for key, value in arrays.items():
        buf = io.BytesIO()
        np.lib.format.write_array(buf, value)
        out[key] = buf.getvalue()
    return out


def _forge(key, header, data=b"\0" * 16):
    """A mutation that replaces entry `key` (a function of the arrays too)
    with a .npy member of `header` followed by `data` only."""
    def mutate(arrays):
        members = _members(arrays)
        members[key(arrays) if callable(key) else key] = _npy(header, data)
        return _archive(members)
    return mutate


def _huge(descr, shape):
    return {"descr": descr, "fortran_order": False, "shape": shape}


def _lie_about_size(key, size):
    """A mutation whose zip directory says member `key` holds `size` bytes."""
    def mutate(arrays):
        raw = bytearray(_archive(_members(arrays)))
        name = (key(arrays) if callable(key) else key).encode() + b".npy"
        at = raw.index(b"PK\x01\x02")     # the central directory's records
        while raw[at + 46: at + 46 + len(name)] != name:
            at = raw.index(b"PK\x01\x02", at + 4)
        struct.pack_into("<II", raw, at + 20, size, size)
        return bytes(raw)
    return mutate


def _npy_bytes(arrays):
    buf = io.BytesIO()
    np.save(buf, arrays["iterations"])
    return buf.getvalue()


MALFORMED = [
    # (description, mutation of the dict of arrays, fragment of the message)
    ("empty file", lambda a: b"", "the file is empty"),
    ("random bytes", lambda a: np.random.default_rng(0).bytes(300).lstrip(b"PK\x93"),
     "cannot read an optimizer state"),
    ("missing path", lambda a: MISSING, "No such file"),
    (".npy file", _npy_bytes, "a single .npy array, not an .npz archive"),
    ("pickled slot", _edit_slot(0, lambda s: np.array([object()], dtype=object)),
     "holds Python objects (dtype object); pickled arrays are not read"),
    # headers that declare more than the file holds: refused before any data
    # is read (a 1.5 kB file must not ask for 8 TiB)
    ("slot header of 2**40 elements",
     _forge(lambda a: _last_slot(a, 0), _huge("<f8", (2**40,))),
     "declares shape (1099511627776,) and dtype float64 (8796093022208 bytes) but "
     "holds 16 bytes of data"),
    ("iterations header of 2**40 elements",
     _forge("iterations", _huge("<i8", (2**40,))),
     "entry 'iterations' declares shape (1099511627776,)"),
    ("meta of 5e8 characters", _forge("meta", _huge("<U500000000", ())),
     "entry 'meta' declares shape () and dtype <U500000000 (2000000000 bytes)"),
    ("2**30 metas", _forge("meta", _huge("<U1000", (2**30,))),
     "entry 'meta' declares shape (1073741824,) and dtype <U1000"),
    ("truncated slot", _forge(lambda a: _last_slot(a, 0), _huge("<f8", (4, 3)),
                              b"\0" * 95),
     "declares shape (4, 3) and dtype float64 (96 bytes) but holds 95 bytes"),
    ("negative shape", _forge(lambda a: _last_slot(a, 0), _huge("<f8", (-4, 3))),
     "has the negative shape (-4, 3)"),
    ("zip directory claiming 4 GiB", _lie_about_size(lambda a: _last_slot(a, 0),
                                                     2**32 - 16),
     "claims 4294967280 bytes, more than the file can hold"),
    ("slot header of another dtype, no data",
     _forge(lambda a: _last_slot(a, 0), _huge("<i8", (4, 3)), b"\0" * 96),
     "has shape (4, 3) and dtype int64; expected (4, 3) and float64"),
    ("no meta", _drop("meta"), "it has no 'meta' array"),
    ("meta not a string", _set_array("meta", np.arange(3)),
     "'meta' must be a 0-d string array"),
    ("meta not JSON", _set_meta_text("{not json"), "'meta' is not valid JSON"),
    ("meta a list", _set_meta_text("[1, 2]"), "'meta' is not a JSON object: [1, 2]"),
    ("meta a number", _set_meta_text("3"), "'meta' is not a JSON object: 3"),
    ("meta a string", _set_meta_text('"x"'), "'meta' is not a JSON object: 'x'"),
    ("wrong format", _edit_meta(lambda m: m.update(format="other/1")),
     "meta 'format' is 'other/1'"),
    ("no format", _edit_meta(lambda m: m.pop("format")), "meta 'format' is None"),
    ("no class", _edit_meta(lambda m: m.pop("class")),
     "meta 'class' is missing or not a string"),
    ("class not a string", _edit_meta(lambda m: m.update({"class": ["Adam"]})),
     "meta 'class' is missing or not a string"),
    ("other class", _edit_meta(lambda m: m.update({"class": "Adagrad"})),
     "was saved by Adagrad"),
    ("no variables", _edit_meta(lambda m: m.pop("variables")),
     "meta 'variables' is missing or not a list"),
    ("variables not a list", _edit_meta(lambda m: m.update(variables={"a": 1})),
     "meta 'variables' is missing or not a list"),
    ("variable not an object", _edit_meta(lambda m: m["variables"].__setitem__(0, 5)),
     "meta 'variables'[0] is not an object: 5"),
    ("variable without name", _del_var_field("name"), "'variables'[0] has no 'name'"),
    ("variable without shape", _del_var_field("shape"),
     "'variables'[0] has no 'shape'"),
    ("variable without dtype", _del_var_field("dtype"),
     "'variables'[0] has no 'dtype'"),
    ("variable without slots", _del_var_field("slots"),
     "'variables'[0] has no 'slots'"),
    ("name not a string", _set_var_field("name", None),
     "'name' must be a string, got None"),
    ("shape a string", _set_var_field("shape", "4,3"),
     "'shape' must be a list of non-negative ints, got '4,3'"),
    ("shape negative", _set_var_field("shape", [-4, 3]),
     "'shape' must be a list of non-negative ints, got [-4, 3]"),
    ("shape of floats", _set_var_field("shape", [4.0, 3]),
     "'shape' must be a list of non-negative ints, got [4.0, 3]"),
    ("shape of bools", _set_var_field("shape", [True, 3]),
     "'shape' must be a list of non-negative ints, got [True, 3]"),
    ("dtype not a string", _set_var_field("dtype", 5), "'dtype' must be a string"),
    ("slots a string", _set_var_field("slots", "m"),
     "'slots' must be a list of strings, got 'm'"),
    ("slots of ints", _set_var_field("slots", [1]),
     "'slots' must be a list of strings, got [1]"),
    ("slots of another optimizer", _set_var_field("slots", ["momentum"]),
     "the slots ['momentum'] of 'w' in "),
    ("no iterations", _drop("iterations"), "it has no 'iterations' array"),
    ("float iterations", _set_array("iterations", np.float64(2.0)),
     "'iterations' must be a 0-d integer array, got shape () dtype float64"),
    ("bool iterations", _set_array("iterations", np.bool_(True)),
     "'iterations' must be a 0-d integer array, got shape () dtype bool"),
    ("1-d iterations", _set_array("iterations", np.array([2])),
     "'iterations' must be a 0-d integer array, got shape (1,) dtype int64"),
    ("negative iterations", _set_array("iterations", np.int64(-1)),
     "'iterations' must be in [0, 2**63 - 1] (int64), got -1"),
    ("iterations beyond int64", _set_array("iterations", np.uint64(2**64 - 1)),
     f"(int64), got {2**64 - 1}"),
    ("missing slot", _drop(lambda a: _last_slot(a, 0)), "') is missing"),
    ("slot of shape (1, 3)", _edit_slot(0, lambda s: s[:1]),
     "has shape (1, 3) and dtype float64; expected (4, 3) and float64"),
    ("scalar slot", _edit_slot(0, lambda s: s[0, 0]),
     "has shape () and dtype float64; expected (4, 3)"),
    ("complex slot", _edit_slot(0, lambda s: s.astype(np.complex128)),
     "dtype complex128; expected (4, 3) and float64"),
    ("int slot", _edit_slot(0, lambda s: s.astype(np.int64)),
     "dtype int64; expected (4, 3) and float64"),
    ("float64 slot of a float32 variable",
     _edit_slot(1, lambda s: s.astype(np.float64)),
     "dtype float64; expected (3,) and float32"),
    ("negative learning rate", _edit_meta(lambda m: m.update(learning_rate=-0.1)),
     "saved learning_rate: learning_rate must be >= 0.0, got -0.1"),
    ("NaN learning rate", _edit_meta(lambda m: m.update(learning_rate=float("nan"))),
     "saved learning_rate: learning_rate must be finite, got nan"),
    ("inf learning rate", _edit_meta(lambda m: m.update(learning_rate=float("inf"))),
     "saved learning_rate: learning_rate must be finite, got inf"),
    ("string learning rate", _edit_meta(lambda m: m.update(learning_rate="0.1")),
     "learning_rate must be a real number, got '0.1'"),
    ("bool learning rate", _edit_meta(lambda m: m.update(learning_rate=True)),
     "learning_rate must be a real number, got True"),
    ("huge learning rate", _edit_meta(lambda m: m.update(learning_rate=10**400)),
     "saved learning_rate: int too large"),
]

OPTIMIZERS = [
    ("Adam", {"learning_rate": 0.1}),
    ("Adam", {"learning_rate": 0.1, "amsgrad": True}),
    ("Ftrl", {"learning_rate": 0.1}),
]


def _train(opt, variables, rng, steps):
    for _ in range(steps):
        opt.apply_gradients([(rng.standard_normal(v.shape), v) for v in variables])


def _snapshot(opt):
    return (opt.iterations_count, opt.learning_rate, list(opt._slots.items()),
            [slot.numpy().copy() for slot in opt.variables()[1:]])


def _assert_unchanged(opt, before):
    iterations, learning_rate, slots, values = before
    assert opt.iterations_count == iterations
    assert opt.learning_rate == learning_rate
    assert list(opt._slots.items()) == slots
    for var, state in opt._slots.values():
        assert opt.get_state(var) is state
    after = opt.variables()[1:]
    assert len(after) == len(values)
    for slot, value in zip(after, values):
        np.testing.assert_array_equal(slot.numpy(), value)


@pytest.mark.parametrize("name,kwargs", OPTIMIZERS,
                         ids=[f"{n}-{k}" for k, (n, _) in enumerate(OPTIMIZERS)])
@pytest.mark.parametrize("what,mutate,fragment", MALFORMED,
                         ids=[case[0] for case in MALFORMED])
def test_load_state_rejects_a_malformed_file_and_changes_nothing(
        name, kwargs, what, mutate, fragment, rng, tmp_path):
    w = sg.Variable(rng.standard_normal((4, 3)), name="w")
    b = sg.Variable(rng.standard_normal(3).astype(np.float32), name="b")
    saver = make(name, kwargs)
    _train(saver, [w, b], rng, 2)
    buf = io.BytesIO()
    saver.save_state(buf)
    good = buf.getvalue()

    opt = make(name, kwargs)                # a state that differs everywhere
    _train(opt, [w, b], rng, 1)
    opt.learning_rate = 0.05
    before = _snapshot(opt)

    with np.load(io.BytesIO(good), allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    result = mutate(arrays)
    path = tmp_path / "state.npz"
    if isinstance(result, bytes):
        path.write_bytes(result)
    elif result is None:
        np.savez(path, **arrays)
    with pytest.raises(
        sg.errors.InvalidArgumentError, match=re.escape(fragment)
    ) as info:
        opt.load_state(path, [w, b])
    assert repr(path) in str(info.value)
    _assert_unchanged(opt, before)

    opt.load_state(io.BytesIO(good), [w, b])          # the good file does load
    assert opt.iterations_count == 2 and opt.learning_rate == 0.1
    for slot, saved in zip(opt.variables()[1:], saver.variables()[1:]):
        assert slot is not saved
        np.testing.assert_array_equal(slot.numpy(), saved.numpy())


def _saved_state(opt, variables, rng):
    _train(opt, variables, rng, 2)
    buf = io.BytesIO()
    opt.save_state(buf)
    buf.seek(0)
    return buf


def test_load_state_runs_the_learning_rate_hook_of_the_subclass(rng, tmp_path):
    w = sg.Variable(rng.standard_normal(3), name="w")
    for name, accepted in (("Adam", True), ("Ftrl", False)):
        buf = _saved_state(make(name, {"learning_rate": 0.1}), [w], rng)
        with np.load(buf) as data:
            arrays = {k: data[k] for k in data.files}
        _edit_meta(lambda m: m.update(learning_rate=0.0))(arrays)
        np.savez(tmp_path / "zero.npz", **arrays)
        opt = make(name, {"learning_rate": 0.1})
        _train(opt, [w], rng, 1)
        if accepted:
            opt.load_state(tmp_path / "zero.npz", [w])
            assert opt.learning_rate == 0.0 and opt.iterations_count == 2
            continue
        before = _snapshot(opt)
        with pytest.raises(sg.errors.InvalidArgumentError,
                           match=re.escape("Ftrl needs learning_rate > 0, got 0.0")):
            opt.load_state(tmp_path / "zero.npz", [w])
        _assert_unchanged(opt, before)


def test_load_state_keeps_a_schedule_and_accepts_a_null_learning_rate(rng):
    w = sg.Variable(rng.standard_normal(3), name="w")
    schedule = schedules.ExponentialDecay(0.1, 2, 0.5)
    buf = _saved_state(sg.optimizers.Adam(learning_rate=schedule), [w], rng)
    opt = sg.optimizers.Adam(learning_rate=0.3)        # null: keep this one's
    opt.load_state(buf, [w])
    assert opt.learning_rate == 0.3 and opt.iterations_count == 2
    buf = _saved_state(sg.optimizers.Adam(learning_rate=0.2), [w], rng)
    opt = sg.optimizers.Adam(learning_rate=schedule)   # a number: keep the schedule
    opt.load_state(buf, [w])
    assert opt.learning_rate is schedule and opt.iterations_count == 2


def test_load_state_rejects_a_repeated_variable_and_changes_nothing(rng):
    w = sg.Variable(rng.standard_normal((4, 3)), name="w")
    v = sg.Variable(rng.standard_normal((4, 3)), name="v")
    buf = _saved_state(sg.optimizers.Adam(amsgrad=True), [w, v], rng)
    opt = sg.optimizers.Adam(amsgrad=True)
    _train(opt, [w, v], rng, 1)
    before = _snapshot(opt)
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match=re.escape("var_list[1] ('w') appears twice")) as info:
        opt.load_state(buf, [w, w])
    assert repr(buf) in str(info.value)
    _assert_unchanged(opt, before)
    for var_list, fragment in (([w], "holds slots for 2 variables, var_list has 1"),
                               ([w, sg.Variable(np.zeros((4, 2)))], "does not match"),
                               ([w, sg.Variable(np.zeros((4, 3), np.float32))],
                                "does not match")):
        buf.seek(0)
        with pytest.raises(sg.errors.InvalidArgumentError,
                           match=re.escape(fragment)) as info:
            opt.load_state(buf, var_list)
        assert repr(buf) in str(info.value)
        _assert_unchanged(opt, before)


def test_load_state_of_a_forged_header_allocates_nothing_under_rlimit_as(
        tmp_path, run_limited):
    """A 1.5 kB state whose slot header declares 4 GiB: refused, naming the
    entry, in a process that could not even map 4 GiB (MemoryError before)."""
    w = sg.Variable(np.zeros((4, 3), np.float32), name="w")
    saver = sg.optimizers.Adam(learning_rate=0.1)
    saver.apply_gradients([(np.ones((4, 3), np.float32), w)])
    buf = io.BytesIO()
    saver.save_state(buf)
    with np.load(io.BytesIO(buf.getvalue())) as data:
        arrays = {k: data[k] for k in data.files}
    path = tmp_path / "forged.npz"
    path.write_bytes(_forge("slot/0/m", _huge("<f4", (2**30,)))(arrays))
    assert path.stat().st_size < 2000
    out = run_limited("""
        w = sg.Variable(np.zeros((4, 3), np.float32), name="w")
        opt = sg.optimizers.Adam(learning_rate=0.1)
        opt.apply_gradients([(np.ones((4, 3), np.float32), w)])
        before = opt.get_slot(w, "m").numpy().copy()
        limit(1 << 30)
        expect_refusal(lambda: opt.load_state(sys.argv[1], [w]))
        assert opt.iterations_count == 1
        assert (opt.get_slot(w, "m").numpy() == before).all()
    """, path)
    assert ("entry 'slot/0/m' declares shape (1073741824,) and dtype float32 "
            "(4294967296 bytes) but holds 16 bytes of data") in out
