"""save_checkpoint / load_checkpoint of float16 and bfloat16 variables and
optimizer slots, in one process (a world of one rank): bit for bit back, and
a stored dtype that is not the variable's refused with nothing changed.

The slots are built and filled directly, each in its variable's own type
(the ``half_slots_of_each_type`` fixture), so that one checkpoint holds both
encodings."""

import json
import re

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.distributed.checkpoint import load_checkpoint, save_checkpoint
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework.archives import DTYPES_ENTRY, read_npz, write_npz

from ..conftest import bits as _bits

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)


# Slots of each variable's own type: float16 and bfloat16 in one file.
pytestmark = pytest.mark.usefixtures("half_slots_of_each_type")


def _model(seed):
    """bfloat16 and float16 variables holding every 16-bit pattern (shuffled
    by `seed`), a float32 one, and an Adagrad with filled slots."""
    rng = np.random.default_rng(seed)
    every = [rng.permutation(2**16).astype(np.uint16) for _ in range(4)]
    variables = [
        sg.Variable(every[0].view(BF16).reshape(256, 256), name="table"),
        sg.Variable(every[1].view(F16), name="bias"),
        sg.Variable(rng.standard_normal(3).astype(np.float32), name="scale"),
    ]
    opt = sg.optimizers.Adagrad(0.1)
    opt.build(variables)
    opt.get_slot(variables[0], "accumulator")._value[...] = \
        every[2].view(BF16).reshape(256, 256)
    opt.get_slot(variables[1], "accumulator")._value[...] = every[3].view(F16)
    opt._iterations._value[...] = seed
    return variables, opt


def _state(variables, opt):
    return ([_bits(v.numpy()).copy() for v in variables],
            [_bits(s.numpy()).copy() for s in opt.variables()[1:]],
            opt.iterations_count)


def test_half_variables_and_slots_come_back_bit_for_bit(tmp_path):
    variables, opt = _model(seed=1)
    save_checkpoint(tmp_path, variables, opt)
    index = json.loads((tmp_path / "index.json").read_text())
    assert [e["dtype"] for e in index["ranks"][0]["variables"]] == [
        "bfloat16", "float16", "float32"]
    with np.load(tmp_path / "rank-0-of-1.npz") as raw:
        assert raw["variable/0"].dtype == np.uint16
        assert json.loads(raw[DTYPES_ENTRY].item()) == {
            "variable/0": "bfloat16", "variable/1": "float16"}
    targets, target_opt = _model(seed=2)
    load_checkpoint(tmp_path, targets, target_opt)
    for got, want in zip(_state(targets, target_opt)[:2], _state(variables, opt)[:2]):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    assert target_opt.iterations_count == 1
    assert [v.dtype for v in targets] == [BF16, F16, np.float32]


def test_a_saved_bfloat16_is_not_loaded_into_float16_and_nothing_changes(tmp_path):
    variables, opt = _model(seed=1)
    save_checkpoint(tmp_path / "ckpt", variables, opt)
    targets, target_opt = _model(seed=2)
    before = _state(targets, target_opt)
    wrong = sg.Variable(np.zeros((256, 256), F16), name="table16")
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "load_checkpoint: variables[0] ('table16', (256, 256), float16) does "
            "not match the saved 'table' ((256, 256), bfloat16) of rank 0")):
        load_checkpoint(tmp_path / "ckpt", [wrong] + targets[1:], target_opt)

    # a rank file whose bfloat16 entry became float16 (its index unchanged)
    rank_file = tmp_path / "ckpt" / "rank-0-of-1.npz"
    arrays = read_npz(rank_file, "cannot read")
    with np.errstate(invalid="ignore", over="ignore"):
        arrays["variable/0"] = arrays["variable/0"].astype(np.float32).astype(F16)
    write_npz(rank_file, arrays)
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "has shape (256, 256) and dtype float16, its index says (256, 256) "
            "and bfloat16")):
        load_checkpoint(tmp_path / "ckpt", targets, target_opt)

    # the names of the half entries lost: the bits alone are uint16
    with np.load(rank_file) as raw:
        plain = {k: raw[k] for k in raw.files if k != DTYPES_ENTRY}
    with open(rank_file, "wb") as f:
        np.savez(f, **plain)
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "variable 0 in ") + ".*" + re.escape(
            "has shape (256, 256) and dtype uint16, its index says (256, 256) and "
            "bfloat16")):
        load_checkpoint(tmp_path / "ckpt", targets, target_opt)

    # a broken optimizer file: the variables are not assigned either
    save_checkpoint(tmp_path / "ckpt2", variables, opt)
    optimizer_file = tmp_path / "ckpt2" / "rank-0-of-1.optimizer.npz"
    with np.load(optimizer_file) as raw:
        arrays = {k: raw[k] for k in raw.files}
    arrays[DTYPES_ENTRY] = np.asarray('{"slot/0/accumulator": "bfloat8"}')
    with open(optimizer_file, "wb") as f:
        np.savez(f, **arrays)
    with pytest.raises(InvalidArgumentError,
                       match="gives entry 'slot/0/accumulator' the dtype 'bfloat8'"):
        load_checkpoint(tmp_path / "ckpt2", targets, target_opt)

    after = _state(targets, target_opt)
    for got, want in zip(after[:2], before[:2]):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    assert after[2] == before[2]
