"""save_state / load_state of float16 and bfloat16 slots: the file keeps
their type and bits (write_npz), and a stored dtype that is not the slot's,
or a broken encoding, is refused with nothing changed.

The slots are built and filled directly, each in its variable's own type
(the ``half_slots_of_each_type`` fixture: one optimizer's ``slot_dtype``
names one half type), so that one file holds both encodings.
"""

import io
import json
import re

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.framework.archives import DTYPES_ENTRY, read_npz, write_npz

from ..conftest import bits as _bits

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)


# Slots of each variable's own type: float16 and bfloat16 in one file.
pytestmark = pytest.mark.usefixtures("half_slots_of_each_type")


def _variables():
    return [sg.Variable(np.zeros((256, 256), BF16), name="table"),
            sg.Variable(np.zeros(2**16, F16), name="bias"),
            sg.Variable(np.zeros(3, np.float32), name="scale")]


def _filled(opt, variables, seed):
    """`opt` with slots for `variables`, each slot holding every 16-bit
    pattern (NaN payloads, -0.0, denormals, infinities), shuffled by `seed`."""
    opt.build(variables)
    rng = np.random.default_rng(seed)
    for slot in opt.variables()[1:]:
        if slot.dtype in (BF16, F16):
            bits = rng.permutation(2**16).astype(np.uint16)
            slot._value[...] = bits.view(slot.dtype).reshape(slot.shape)
        else:
            slot._value[...] = rng.standard_normal(slot.shape)
    opt._iterations._value[...] = 40 + seed
    return opt


def _snapshot(opt):
    return (opt.iterations_count, opt.learning_rate, list(opt._slots.items()),
            [_bits(slot.numpy()).copy() for slot in opt.variables()[1:]])


def _assert_unchanged(opt, before):
    iterations, learning_rate, slots, bits = before
    assert opt.iterations_count == iterations
    assert opt.learning_rate == learning_rate
    assert list(opt._slots.items()) == slots
    after = opt.variables()[1:]
    assert len(after) == len(bits)
    for slot, old in zip(after, bits):
        np.testing.assert_array_equal(_bits(slot.numpy()), old)


@pytest.mark.parametrize("name,kwargs", [
    ("Adam", {"learning_rate": 0.01, "amsgrad": True}),
    ("Adagrad", {"learning_rate": 0.1}),
    ("Nadam", {"learning_rate": 0.01}),
])
def test_half_slots_come_back_bit_for_bit(name, kwargs, tmp_path):
    variables = _variables()
    saver = _filled(getattr(sg.optimizers, name)(**kwargs), variables, seed=1)
    path = tmp_path / "state.npz"
    saver.save_state(path)
    # in the file: the bits as uint16, the names beside them
    with np.load(path) as raw:
        names = json.loads(raw[DTYPES_ENTRY].item())
        assert all(raw[key].dtype == np.uint16 for key in names)
    assert {key.split("/")[1] for key in names} == {"0", "1"}   # not the float32
    assert set(names.values()) == {"bfloat16", "float16"}

    loader = _filled(getattr(sg.optimizers, name)(**kwargs), variables, seed=2)
    loader.load_state(path, variables)
    assert loader.iterations_count == 41
    loaded, saved = loader.variables()[1:], saver.variables()[1:]
    assert len(loaded) == len(saved)
    for slot, want in zip(loaded, saved):
        assert slot is not want and slot.dtype == want.dtype
        np.testing.assert_array_equal(_bits(slot.numpy()), _bits(want.numpy()))
    if name == "Nadam":
        np.testing.assert_array_equal(loader._state_arrays()["u_product"],
                                      saver._state_arrays()["u_product"])


def _saved(variables, seed=1):
    buf = io.BytesIO()
    _filled(sg.optimizers.Adam(0.01), variables, seed).save_state(buf)
    return buf.getvalue()


def _decoded(data):
    return read_npz(io.BytesIO(data), "cannot read")


def _rewritten(arrays):
    buf = io.BytesIO()
    write_npz(buf, arrays)
    return buf.getvalue()


def _raw(data):
    with np.load(io.BytesIO(data)) as z:
        return {key: z[key] for key in z.files}


def _savez(arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _meta_dtype(arrays, k, dtype):
    meta = json.loads(arrays["meta"].item())
    meta["variables"][k]["dtype"] = dtype
    arrays["meta"] = np.asarray(json.dumps(meta))
    return arrays


def _as(arrays, key, dtype):
    with np.errstate(invalid="ignore", over="ignore"):    # NaNs and infinities
        arrays[key] = arrays[key].astype(np.float32).astype(dtype)
    return arrays


def _dtypes_entry(text):
    def edit(raw):
        raw[DTYPES_ENTRY] = np.asarray(text)
        return _savez(raw)
    return edit


# (what, the file made from the good one, the message's fragment)
MISMATCHES = [
    ("a bfloat16 slot into a float16 one",
     lambda a: _rewritten(_as(_meta_dtype(a, 0, "float16"), "slot/0/m", BF16)),
     "slot 'm' of 'table' ('slot/0/m') has shape (256, 256) and dtype bfloat16; "
     "expected (256, 256) and float16"),
    ("a bfloat16 slot into a float32 one",
     lambda a: _rewritten(_as(_meta_dtype(a, 0, "float32"), "slot/0/m", BF16)),
     "'slot/0/m') has shape (256, 256) and dtype bfloat16; expected (256, 256) "
     "and float32"),
    ("a float16 slot into a bfloat16 one",
     lambda a: _rewritten(_as(a, "slot/0/v", F16)),
     "slot 'v' of 'table' ('slot/0/v') has shape (256, 256) and dtype float16; "
     "expected (256, 256) and bfloat16"),
    ("a float32 slot into a bfloat16 one",
     lambda a: _rewritten(_as(a, "slot/0/m", np.float32)),
     "('slot/0/m') has shape (256, 256) and dtype float32; expected (256, 256) and "
     "bfloat16"),
    ("a bfloat16 slot into a float16 one, bits only",
     lambda a: _rewritten(_as(a, "slot/1/m", BF16)),
     "slot 'm' of 'bias' ('slot/1/m') has shape (65536,) and dtype bfloat16; "
     "expected (65536,) and float16"),
]


def _encoding(edit):
    """A broken encoding: `edit` changes the raw entries of the good file."""
    return lambda arrays: edit(_raw(_rewritten(arrays)))


BROKEN = [
    ("an unknown dtype name",
     _encoding(_dtypes_entry(json.dumps({"slot/0/m": "bfloat17"}))),
     "entry '__dtypes__' gives entry 'slot/0/m' the dtype 'bfloat17'"),
    ("a name without bits",
     _encoding(_dtypes_entry(json.dumps({"slot/9/m": "bfloat16"}))),
     "entry '__dtypes__' names entry 'slot/9/m' (bfloat16), which the archive "
     "does not hold"),
    ("bits not stored as uint16",
     _encoding(lambda raw: _savez({**raw, "slot/0/m": raw["slot/0/m"].astype(
         np.int32)})),
     "entry 'slot/0/m' is bfloat16 stored as dtype int32; its bits must be stored "
     "as uint16"),
    ("no names: the bits alone",
     _encoding(lambda raw: _savez({k: v for k, v in raw.items()
                                   if k != DTYPES_ENTRY})),
     "slot 'm' of 'table' ('slot/0/m') has shape (256, 256) and dtype uint16; "
     "expected (256, 256) and bfloat16"),
    ("bfloat16 as np.savez writes it",
     lambda arrays: _savez(arrays),
     "entry 'slot/0/m' holds anonymous 2-byte records (dtype |V2)"),
    ("names that are not JSON",
     _encoding(_dtypes_entry("{")), "entry '__dtypes__' is not valid JSON"),
]


@pytest.mark.parametrize("what,make,fragment", MISMATCHES + BROKEN,
                         ids=[case[0] for case in MISMATCHES + BROKEN])
def test_a_mismatch_or_a_broken_encoding_is_refused_and_changes_nothing(
        what, make, fragment, tmp_path):
    variables = _variables()
    arrays = _decoded(_saved(variables))
    path = tmp_path / "bad.npz"
    path.write_bytes(make(arrays))
    if what in {case[0] for case in MISMATCHES}:   # variables as its meta says
        meta = json.loads(_decoded(path.read_bytes())["meta"].item())
        variables = [sg.Variable(np.zeros(v["shape"], v["dtype"]), name=v["name"])
                     for v in meta["variables"]]
    opt = _filled(sg.optimizers.Adam(0.05), variables, seed=3)
    before = _snapshot(opt)
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match=re.escape(fragment)) as info:
        opt.load_state(path, variables)
    message = str(info.value)
    assert repr(str(path)) in message or repr(path) in message
    assert message.startswith("load_state: ") and "\n" not in message
    _assert_unchanged(opt, before)


def test_a_state_saved_for_bfloat16_does_not_load_into_float16_variables():
    data = _saved(_variables())
    others = [sg.Variable(np.zeros((256, 256), F16), name="table"),
              sg.Variable(np.zeros(2**16, F16), name="bias"),
              sg.Variable(np.zeros(3, np.float32), name="scale")]
    opt = _filled(sg.optimizers.Adam(0.05), others, seed=3)
    before = _snapshot(opt)
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match=re.escape("var_list[0] ('table', (256, 256), float16) "
                                       "does not match variable 'table' ((256, "
                                       "256), bfloat16)")):
        opt.load_state(io.BytesIO(data), others)
    _assert_unchanged(opt, before)


def test_a_float32_state_file_of_the_old_writer_still_loads(rng):
    # written by np.savez, as before half-precision files: no __dtypes__
    w = sg.Variable(rng.standard_normal((4, 3)).astype(np.float32), name="w")
    saver = sg.optimizers.Adam(0.01)
    saver.apply_gradients([(rng.standard_normal((4, 3)).astype(np.float32), w)])
    buf = io.BytesIO()
    saver.save_state(buf)
    raw = _raw(buf.getvalue())
    assert DTYPES_ENTRY not in raw
    old = _savez(raw)
    opt = sg.optimizers.Adam(0.01)
    opt.load_state(io.BytesIO(old), [w])
    assert opt.iterations_count == 1
    for slot, want in zip(opt.variables()[1:], saver.variables()[1:]):
        np.testing.assert_array_equal(slot.numpy(), want.numpy())
