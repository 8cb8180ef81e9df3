"""save_checkpoint / load_checkpoint.

MPI: a 2-rank job trains, saves and trains on; a second 2-rank job loads the
checkpoint into a model initialized otherwise and trains the same steps:
the variables and the optimizer state must end bit-for-bit equal.  The same
second job first tries broken copies of the checkpoint (a missing, a
truncated and a garbled file, no index) and a wrong variable list: every
rank must raise and nothing may change, on any rank.  A 3-rank job must
refuse the 2-rank checkpoint on every rank.  The single-process tests run in
the pytest process (a world of one rank).
"""

import io
import json
import shutil
import zipfile

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.distributed.checkpoint import FORMAT, load_checkpoint, save_checkpoint
from sparsegrad.distributed.embedding import ShardedEmbedding
from sparsegrad.errors import InvalidArgumentError

NUM_ROWS = 13


def _break_copies(ckpt, out):
    """The broken copies the second job tries, named as in the worker."""
    copies = {}
    for name in ("bad-missing-rank-file", "bad-corrupt-rank-file",
                 "bad-optimizer-file", "bad-no-index"):
        copies[name] = out / name
        shutil.copytree(ckpt, copies[name])
    (copies["bad-missing-rank-file"] / "rank-1-of-2.npz").unlink()
    corrupt = copies["bad-corrupt-rank-file"] / "rank-0-of-2.npz"
    corrupt.write_bytes(corrupt.read_bytes()[: corrupt.stat().st_size // 2])
    (copies["bad-optimizer-file"] / "rank-1-of-2.optimizer.npz").write_bytes(
        b"not an archive")
    (copies["bad-no-index"] / "index.json").unlink()


def _group(arrays, prefix):
    return {k[len(prefix) + 1:]: arrays[k] for k in arrays.files
            if k.startswith(prefix + "/")}


def _assert_same(got, expected, what):
    assert sorted(got) == sorted(expected), what
    for key, value in expected.items():
        assert got[key].dtype == value.dtype, (what, key)
        np.testing.assert_array_equal(got[key], value, err_msg=f"{what}: {key}")


def _assert_all_raised(errors, label, text, culprit=None):
    for r, ranks_errors in enumerate(errors):
        got = ranks_errors[label]
        assert got is not None, f"{label}: rank {r} did not raise"
        assert got[0] == "InvalidArgumentError", (label, r, got)
        assert text in got[1], (label, r, got)
        if culprit is not None and r != culprit:
            assert got[1].startswith(f"on rank {culprit}: "), (label, r, got)


def test_checkpoint_jobs(mpirun, tmp_path):
    mpirun(2, "checkpoint_job.py", "first", tmp_path, timeout=120)
    ckpt = tmp_path / "ckpt"
    assert sorted(p.name for p in ckpt.iterdir()) == [
        "index.json", "rank-0-of-2.npz", "rank-0-of-2.optimizer.npz",
        "rank-1-of-2.npz", "rank-1-of-2.optimizer.npz"]
    index = json.loads((ckpt / "index.json").read_text())
    assert (index["format"], index["size"], index["optimizer"]) == (FORMAT, 2, True)
    for r, entry in enumerate(index["ranks"]):
        rows = len(range(r, NUM_ROWS, 2))
        assert entry["variables"] == [
            {"name": "w", "shape": [4], "dtype": "float32", "sharded": False},
            {"name": f"embeddings/shard-{r}-of-2", "shape": [rows, 4],
             "dtype": "float32", "sharded": True},
            {"name": "counter", "shape": [], "dtype": "int64", "sharded": False},
        ]
        assert entry["optimizer_variables"] == [1, 0]
    _break_copies(ckpt, tmp_path)
    mpirun(2, "checkpoint_job.py", "second", tmp_path, timeout=120)
    mpirun(3, "checkpoint_job.py", "third", tmp_path, timeout=120)

    first = [np.load(tmp_path / f"first-{r}.npz") for r in range(2)]
    second = [np.load(tmp_path / f"second-{r}.npz") for r in range(2)]
    errors = [json.loads((tmp_path / f"second-{r}.json").read_text())
              for r in range(2)]
    for r in range(2):
        saved, before = _group(first[r], "saved"), _group(second[r], "before")
        assert int(saved["var2"]) == 7 + 3 and int(before["var2"]) == 99 + 1
        assert not np.array_equal(saved["var1"], before["var1"])
        _assert_same(_group(second[r], "loaded"), saved, f"rank {r} after load")
        _assert_same(_group(second[r], "final"), _group(first[r], "final"),
                     f"rank {r} after the steps that followed")
        # the failed loads changed nothing (variables, optimizer state)
        for label in ("bad-missing-rank-file", "bad-corrupt-rank-file",
                      "bad-optimizer-file", "bad-no-index", "fewer-variables"):
            _assert_same(_group(second[r], label), before, f"rank {r}, {label}")

    _assert_all_raised(errors, "bad-missing-rank-file",
                       "rank-1-of-2.npz' is missing", culprit=1)
    _assert_all_raised(errors, "bad-corrupt-rank-file", "cannot read", culprit=0)
    _assert_all_raised(errors, "bad-optimizer-file",
                       "load_state: cannot read an optimizer state", culprit=1)
    _assert_all_raised(errors, "bad-no-index", "holds no index.json", culprit=0)
    _assert_all_raised(errors, "fewer-variables",
                       "saved 3 variables in", culprit=0)
    third = [json.loads((tmp_path / f"third-{r}.json").read_text())
             for r in range(3)]
    _assert_all_raised(third, "other-size",
                       "was saved by 2 ranks, this job has 3", culprit=0)


# -- one process ---------------------------------------------------------------


def _model(seed):
    emb = ShardedEmbedding(6, 3, seed=seed)
    w = sg.Variable(np.full(3, 0.5, np.float32), name="w")
    return emb, w, sg.optimizers.Adagrad(learning_rate=0.2)


def _train(emb, w, opt, steps):
    for step in steps:
        ids = np.array([step % 6, (step * 5) % 6, 1])
        with sg.GradientTape() as tape:
            loss = sg.reduce_sum(sg.square(sg.reduce_sum(emb(ids) * w, axis=1) - 1))
        grads = tape.gradient(loss, [w, emb.shard])
        opt.apply_gradients(zip(grads, [w, emb.shard]))


def test_single_rank_round_trip_resumes_exactly(tmp_path):
    emb, w, opt = _model(seed=1)
    _train(emb, w, opt, range(3))
    save_checkpoint(tmp_path, [emb.shard, w], opt)
    _train(emb, w, opt, range(3, 6))
    other_emb, other_w, other_opt = _model(seed=2)
    load_checkpoint(tmp_path, [other_emb.shard, other_w], other_opt)
    assert int(other_opt.iterations.numpy()) == 3
    _train(other_emb, other_w, other_opt, range(3, 6))
    np.testing.assert_array_equal(other_emb.shard.numpy(), emb.shard.numpy())
    np.testing.assert_array_equal(other_w.numpy(), w.numpy())
    np.testing.assert_array_equal(
        other_opt.get_slot(other_emb.shard, "accumulator").numpy(),
        opt.get_slot(emb.shard, "accumulator").numpy())
    # saving again over it replaces the checkpoint
    save_checkpoint(tmp_path, [emb.shard, w])
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["optimizer"] is False and index["size"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "index.json", "rank-0-of-1.npz"]
    with pytest.raises(InvalidArgumentError, match="holds no optimizer state"):
        load_checkpoint(tmp_path, [other_emb.shard, other_w], other_opt)


def test_single_rank_bad_loads_change_nothing(tmp_path):
    emb, w, opt = _model(seed=1)
    _train(emb, w, opt, range(2))
    save_checkpoint(tmp_path / "ckpt", [emb.shard, w], opt)
    target_emb, target_w, target_opt = _model(seed=3)
    _train(target_emb, target_w, target_opt, range(1))
    before = [target_emb.shard.numpy(), target_w.numpy(),
              target_opt.get_slot(target_w, "accumulator").numpy()]
    wrong = sg.Variable(np.zeros(4, np.float32))
    wrong_dtype = sg.Variable(np.zeros(3, np.float64))
    cases = [
        (tmp_path / "nowhere", [target_emb.shard, target_w], "holds no index.json"),
        (tmp_path / "ckpt", [target_emb.shard, wrong],
         r"variables\[1\] \('Variable:\d+', \(4,\), float32\) does not match the "
         r"saved 'w' \(\(3,\), float32\)"),
        (tmp_path / "ckpt", [target_emb.shard, wrong_dtype], "does not match"),
        (tmp_path / "ckpt", [target_w, target_emb.shard], "does not match"),
        (tmp_path / "ckpt", [target_emb.shard], "saved 2 variables"),
    ]
    no_optimizer = tmp_path / "no-optimizer-file"
    shutil.copytree(tmp_path / "ckpt", no_optimizer)
    (no_optimizer / "rank-0-of-1.optimizer.npz").unlink()
    foreign = tmp_path / "foreign-rank-file"
    shutil.copytree(tmp_path / "ckpt", foreign)
    with open(foreign / "rank-0-of-1.npz", "wb") as f:
        np.savez(f, **{"variable/0": emb.shard.numpy(), "variable/1": w.numpy()})
    both = [target_emb.shard, target_w]
    cases += [
        (no_optimizer, both, "the optimizer file .* is missing"),
        (foreign, both, "is not the file of rank 0 of 1 in a checkpoint"),
    ]
    for directory, variables, message in cases:
        with pytest.raises(InvalidArgumentError, match=message):
            load_checkpoint(directory, variables, target_opt)
    (tmp_path / "ckpt" / "index.json").write_text("{\"format\": \"other\"}")
    with pytest.raises(InvalidArgumentError, match="is not a checkpoint index"):
        load_checkpoint(tmp_path / "ckpt", [target_emb.shard, target_w], target_opt)
    after = [target_emb.shard.numpy(), target_w.numpy(),
             target_opt.get_slot(target_w, "accumulator").numpy()]
    for old, new in zip(before, after):
        np.testing.assert_array_equal(new, old)
    assert int(target_opt.iterations.numpy()) == 1
    load_checkpoint(no_optimizer, both)   # without optimizer: the variables
    np.testing.assert_array_equal(target_w.numpy(), w.numpy())
    np.testing.assert_array_equal(target_emb.shard.numpy(), emb.shard.numpy())


def test_single_rank_save_rejects_bad_arguments(tmp_path):
    emb, w, opt = _model(seed=1)
    _train(emb, w, opt, range(1))
    with pytest.raises(InvalidArgumentError, match="appears twice"):
        save_checkpoint(tmp_path / "a", [w, emb.shard, w])
    with pytest.raises(InvalidArgumentError, match="holds slots for variable 'w', "
                       "which is not in variables"):
        save_checkpoint(tmp_path / "b", [emb.shard], opt)
    with pytest.raises(TypeError, match=r"variables\[1\] must be a sparsegrad"):
        save_checkpoint(tmp_path / "c", [w, np.zeros(3)])
    with pytest.raises(TypeError, match="directory must be a str"):
        save_checkpoint(3.5, [w])
    # nothing was left behind by the refused saves
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _forged(path, key, shape, descr="<f4"):
    """Rewrite the archive at `path` with entry `key`'s header declaring
    `shape` and only 16 bytes of data behind it."""
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, value in arrays.items():
            buf = io.BytesIO()
            if name == key:
                np.lib.format.write_array_header_1_0(
                    buf, {"descr": descr, "fortran_order": False, "shape": shape})
                buf.write(b"\0" * 16)
            else:
                np.lib.format.write_array(buf, value)
            z.writestr(name + ".npy", buf.getvalue())


@pytest.mark.parametrize("file,key,shape,fragment", [
    ("rank-0-of-1.npz", "variable/0", (2**40, 3),
     "entry 'variable/0' declares shape \\(1099511627776, 3\\) and dtype float32 "
     "\\(13194139533312 bytes\\) but holds 16 bytes of data"),
    ("rank-0-of-1.npz", "variable/1", (4,),     # 16 bytes: it holds them
     "variable 1 in .* has shape \\(4,\\) and dtype float32, its index says "
     "\\(3,\\) and float32"),
    ("rank-0-of-1.npz", "meta", (2**40,),
     "entry 'meta' declares shape \\(1099511627776,\\)"),
    ("rank-0-of-1.optimizer.npz", "slot/0/accumulator", (2**40,),
     "load_state: cannot read an optimizer state from .*entry "
     "'slot/0/accumulator' declares shape \\(1099511627776,\\)"),
])
def test_single_rank_forged_headers_are_refused_before_reading(
        tmp_path, file, key, shape, fragment):
    emb, w, opt = _model(seed=1)
    _train(emb, w, opt, range(2))
    save_checkpoint(tmp_path, [emb.shard, w], opt)
    _forged(tmp_path / file, key, shape)
    target_emb, target_w, target_opt = _model(seed=3)
    _train(target_emb, target_w, target_opt, range(1))
    before = [target_emb.shard.numpy(), target_w.numpy(),
              target_opt.get_slot(target_w, "accumulator").numpy()]
    with pytest.raises(InvalidArgumentError, match=fragment):
        load_checkpoint(tmp_path, [target_emb.shard, target_w], target_opt)
    after = [target_emb.shard.numpy(), target_w.numpy(),
             target_opt.get_slot(target_w, "accumulator").numpy()]
    for old, new in zip(before, after):
        np.testing.assert_array_equal(new, old)
    assert int(target_opt.iterations.numpy()) == 1
