"""The demo's checkpoints (``--save`` / ``--resume``: train.save_checkpoint
and train.load_checkpoint) with float16 and bfloat16 weights and slots: bit
for bit back; a stored dtype that is not the model's refused with the entry
and both dtypes named, nothing changed; files of the old writer still load.

A stand-in model (``name``, ``variables``, ``optimizer``) carries float16
and bfloat16 weights, with slots of each one's own type (the
``half_slots_of_each_type`` fixture)."""

import re
import types

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.demo.models import FtrlLogistic
from sparsegrad.demo.train import LocalRunner, load_checkpoint, save_checkpoint
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework.archives import DTYPES_ENTRY

from ..conftest import bits as _bits

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
STATE = {"settings": {}, "models": {}}


# Slots of each variable's own type: float16 and bfloat16 in one file.
pytestmark = pytest.mark.usefixtures("half_slots_of_each_type")


def _model(seed, table_dtype=BF16):
    """A stand-in model: every 16-bit pattern (shuffled by `seed`) in its
    half weights and slots."""
    rng = np.random.default_rng(seed)
    every = [rng.permutation(2**16).astype(np.uint16) for _ in range(4)]
    with np.errstate(invalid="ignore", over="ignore"):
        table = every[0].view(BF16).astype(np.float32).astype(table_dtype)
    variables = [sg.Variable(table.reshape(256, 256), name="table"),
                 sg.Variable(every[1].view(F16), name="bias"),
                 sg.Variable(rng.standard_normal(2).astype(np.float32), name="w")]
    opt = sg.optimizers.Adagrad(0.1)
    opt.build(variables)
    if table_dtype == BF16:
        opt.get_slot(variables[0], "accumulator")._value[...] = \
            every[2].view(BF16).reshape(256, 256)
    opt.get_slot(variables[1], "accumulator")._value[...] = every[3].view(F16)
    opt._iterations._value[...] = seed
    return types.SimpleNamespace(name="half", variables=variables, optimizer=opt)


def _state(model):
    return ([_bits(v.numpy()).copy() for v in model.variables],
            [_bits(s.numpy()).copy() for s in model.optimizer.variables()[1:]],
            model.optimizer.iterations_count)


def _assert_same(got, want):
    for a_list, b_list in zip(got[:2], want[:2]):
        assert len(a_list) == len(b_list)
        for a, b in zip(a_list, b_list):
            np.testing.assert_array_equal(a, b)
    assert got[2] == want[2]


def test_half_weights_and_slots_resume_bit_for_bit(tmp_path):
    saved = _model(seed=1)
    save_checkpoint(tmp_path, saved, STATE)
    with np.load(tmp_path / "half.weights.npz") as raw:
        assert raw["table"].dtype == np.uint16 and raw["bias"].dtype == np.uint16
        assert raw[DTYPES_ENTRY].item() == '{"bias": "float16", "table": "bfloat16"}'
    LocalRunner().check(tmp_path, "half")          # the --resume pre-check reads it
    model = _model(seed=2)
    load_checkpoint(tmp_path, model)
    _assert_same(_state(model), _state(saved))
    assert [v.dtype for v in model.variables] == [BF16, F16, np.float32]


def test_bfloat16_weights_do_not_load_into_float16_and_nothing_changes(tmp_path):
    save_checkpoint(tmp_path, _model(seed=1), STATE)
    model = _model(seed=2, table_dtype=F16)
    before = _state(model)
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "half.weights.npz does not hold table of shape (256, 256) and dtype "
            "float16: its entry 'table' has shape (256, 256) and dtype "
            "bfloat16")):
        load_checkpoint(tmp_path, model)
    _assert_same(_state(model), before)


def test_a_broken_encoding_is_refused_before_training(tmp_path):
    save_checkpoint(tmp_path, _model(seed=1), STATE)
    path = tmp_path / "half.weights.npz"
    with np.load(path) as raw:
        arrays = {k: raw[k] for k in raw.files}
    arrays[DTYPES_ENTRY] = np.asarray('{"table": "bfloat16", "gone": "float16"}')
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    fragment = ("cannot read the saved weights of the half model from "
                f"{str(path)!r}: entry '__dtypes__' names entry 'gone' (float16), "
                "which the archive does not hold")
    with pytest.raises(InvalidArgumentError, match=re.escape(fragment)):
        LocalRunner().check(tmp_path, "half")
    model = _model(seed=2)
    before = _state(model)
    with pytest.raises(InvalidArgumentError, match=re.escape(fragment)):
        load_checkpoint(tmp_path, model)
    _assert_same(_state(model), before)


def test_float32_weights_of_the_old_writer_still_load(tmp_path, rng):
    saved = FtrlLogistic(5)
    saved.w.assign(rng.standard_normal((5, 1)).astype(np.float32))
    saved.optimizer.apply_gradients(
        [(rng.standard_normal(v.shape).astype(np.float32), v)
         for v in saved.variables])
    save_checkpoint(tmp_path, saved, STATE)
    for part in ("weights", "optimizer"):
        path = tmp_path / f"ftrl.{part}.npz"
        with np.load(path) as raw:
            assert DTYPES_ENTRY not in raw.files
            arrays = {k: raw[k] for k in raw.files}
        with open(path, "wb") as f:          # as np.savez wrote them before
            np.savez(f, **arrays)
    model = FtrlLogistic(5)
    load_checkpoint(tmp_path, model)
    np.testing.assert_array_equal(model.w.numpy(), saved.w.numpy())
    assert model.optimizer.iterations_count == 1
    for slot, want in zip(model.optimizer.variables()[1:],
                          saved.optimizer.variables()[1:]):
        np.testing.assert_array_equal(slot.numpy(), want.numpy())
