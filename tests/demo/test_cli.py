import json
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

SMALL = ("--examples", "20000", "--epochs", "1", "--batch-size", "256")


def test_end_to_end_table_and_plot(demo, table, tmp_path):
    plot = tmp_path / "curves.png"
    status, out, err = demo(*SMALL, "--plot", str(plot))
    assert status == 0, err
    assert "16,000 train / 4,000 test examples" in out
    assert "ftrl      epoch 1/1" in out and "embedding epoch 1/1" in out
    rows = table(out)
    assert set(rows) == {"constant", "FTRL logistic regression", "embedding + MLP"}
    constant_loss, constant_auc = rows["constant"]
    assert constant_auc == 0.5
    for name in ("FTRL logistic regression", "embedding + MLP"):
        loss, auc = rows[name]
        assert auc > 0.6 and loss < constant_loss
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"curves written to {plot}" in out


def test_one_model(demo, table):
    status, out, _ = demo("--examples", "3000", "--epochs", "1", "--model", "ftrl")
    assert status == 0
    assert set(table(out)) == {"constant", "FTRL logistic regression"}
    assert "embedding" not in out


def _saved(directory):
    arrays = {}
    for name in ("ftrl", "embedding"):
        for part in ("weights", "optimizer"):
            with np.load(directory / f"{name}.{part}.npz") as f:
                arrays.update({f"{name}.{part}/{k}": f[k] for k in f.files})
    return arrays


def test_resume_gives_the_uninterrupted_result(demo, table, tmp_path):
    common = ("--examples", "6000", "--batch-size", "500", "--seed", "3")
    straight, first = tmp_path / "straight", tmp_path / "first"
    status, out_straight, _ = demo(*common, "--epochs", "2", "--save", str(straight))
    assert status == 0
    assert demo(*common, "--epochs", "1", "--save", str(first))[0] == 0
    status, out_resumed, _ = demo("--resume", str(first), "--epochs", "2")
    assert status == 0
    # The resumed run trains only epoch 2, from the saved data settings.
    assert "epoch 1/2" not in out_resumed and "ftrl      epoch 2/2" in out_resumed
    expected, got = _saved(straight), _saved(first)
    assert expected.keys() == got.keys()
    assert any(k.startswith("embedding.optimizer/slot") for k in got)
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key], value, err_msg=key)
    assert table(out_resumed) == table(out_straight)


def test_save_starts_fresh_and_resume_saves_elsewhere(demo, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    assert demo("--examples", "2000", "--epochs", "1", "--save", str(first))[0] == 0
    # A new run saved to the same directory replaces the old run's index.
    assert demo("--examples", "3000", "--epochs", "1", "--model", "ftrl",
                "--save", str(first))[0] == 0
    index = json.loads((first / "checkpoint.json").read_text())
    assert index["settings"]["examples"] == 3000
    assert list(index["models"]) == ["ftrl"]
    # Resuming a finished run with --save elsewhere copies it there.
    assert demo("--resume", str(first), "--epochs", "1", "--model", "ftrl",
                "--save", str(second))[0] == 0
    assert json.loads((second / "checkpoint.json").read_text()) == index
    with np.load(first / "ftrl.weights.npz") as a, \
            np.load(second / "ftrl.weights.npz") as b:
        np.testing.assert_array_equal(a["w"], b["w"])


def test_resume_errors(demo, tmp_path):
    saved = tmp_path / "saved"
    assert demo("--examples", "2000", "--epochs", "2", "--model", "ftrl",
                "--save", str(saved))[0] == 0
    cases = [
        (("--resume", str(saved), "--seed", "5"),
         f"--seed 5 differs from 0, the value of the run saved in {saved}"),
        (("--resume", str(saved), "--epochs", "1"),
         "--epochs 1: the ftrl model saved in"),
        (("--resume", str(tmp_path / "none")),
         f"--resume {tmp_path / 'none'}: no checkpoint.json there"),
    ]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "checkpoint.json").write_text("{not json")
    cases.append((("--resume", str(broken)), f"--resume {broken}: "))
    weightless = tmp_path / "weightless"
    weightless.mkdir()
    (weightless / "checkpoint.json").write_text((saved / "checkpoint.json").read_text())
    cases.append((("--resume", str(weightless)),
                  f"--resume {weightless}: the weights of the ftrl model are missing"))
    (saved / "ftrl.weights.npz").write_bytes(b"PK\x03\x04 truncated")
    cases.append((("--resume", str(saved)),
                  f"--resume {saved}: cannot read the saved weights of the ftrl "
                  f"model from {str(saved / 'ftrl.weights.npz')!r}: "))
    for argv, message in cases:
        status, out, err = demo(*argv)
        assert status == 2
        assert err.startswith(f"sparsegrad demo: error: {message}")
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "epoch" not in out                       # before any training


def test_damaged_checkpoint_is_refused_before_training(demo, tmp_path):
    saved = tmp_path / "saved"
    assert demo("--examples", "2000", "--epochs", "1", "--save", str(saved))[0] == 0
    good = (saved / "embedding.optimizer.npz").read_bytes()
    for damage in (good[:len(good) // 2], b"", b"\x93NUMPY garbage" * 10):
        (saved / "embedding.optimizer.npz").write_bytes(damage)
        status, out, err = demo("--resume", str(saved), "--epochs", "2")
        assert status == 2 and out == ""   # the ftrl model did not train first
        assert err.startswith(
            f"sparsegrad demo: error: --resume {saved}: cannot read the saved "
            f"optimizer of the embedding model from "
            f"{str(saved / 'embedding.optimizer.npz')!r}: "), err
        assert err.count("\n") == 1


def test_load_checkpoint_reads_through_read_npz(tmp_path):
    # a weights file of another model: a one-line ValueError, nothing changed
    from sparsegrad.demo.models import FtrlLogistic
    from sparsegrad.demo.train import load_checkpoint, save_checkpoint

    model = FtrlLogistic(6)
    save_checkpoint(tmp_path, FtrlLogistic(5), {"settings": {}, "models": {}})
    before = model.w.numpy().copy()
    with pytest.raises(ValueError, match=r"ftrl\.weights\.npz does not hold w of "
                                         r"shape \(6, 1\)"):
        load_checkpoint(tmp_path, model)
    (tmp_path / "ftrl.weights.npz").write_bytes(b"not an archive")
    with pytest.raises(ValueError, match="cannot read the saved weights of the ftrl"):
        load_checkpoint(tmp_path, model)
    np.testing.assert_array_equal(model.w.numpy(), before)


def _svmlight(path, rng, n=3_000, n_features=300):
    # Rows of five active features; clicks from a logistic model with one
    # interaction, labels -1/+1.
    cols = rng.integers(0, n_features, size=(n, 5))
    X = np.zeros((n, n_features), np.float32)
    np.put_along_axis(X, cols, 1.0, axis=1)
    w = rng.standard_normal(n_features)
    logit = X @ w - 1.0
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), 1, -1)
    dump_svmlight_file(X, y, str(path))


def test_svmlight_data(demo, table, tmp_path, rng):
    path = tmp_path / "train.svm"
    _svmlight(path, rng)
    status, out, err = demo("--data", str(path), "--epochs", "3", "--batch-size", "100")
    assert status == 0, err
    assert (f"{path}: 300 feature ids hashed into 1,048,576 buckets; 2,400 train / "
            "600 test examples, rate of label 1 0.") in out
    assert "click" not in out and "note:" not in out
    rows = table(out)
    assert rows["FTRL logistic regression"][1] > 0.6
    assert rows["embedding + MLP"][1] > 0.6
    assert out.count("constant (rate of label 1 0.") == 1


def test_small_test_split_says_so(demo, table):
    status, out, err = demo("--examples", "10", "--epochs", "1", "--model", "ftrl")
    assert status == 0, err
    assert "8 train / 2 test examples" in out
    lines = out.splitlines()
    note = next(line for line in lines if line.startswith("note: "))
    assert note.startswith("note: the test split has ")
    assert "with fewer than 50 of either, its log-loss and AUC are noise" in note
    assert note.endswith("(use more --examples)")
    assert ("(from 2 test examples: too few for these figures to mean anything; "
            "see the note above)") in lines
    # a large enough split: no note
    status, out, _ = demo("--examples", "3000", "--epochs", "1", "--model", "ftrl")
    assert status == 0 and "note" not in out


def test_buckets(demo, table):
    status, out, err = demo("--examples", "3000", "--epochs", "1", "--buckets", "4096")
    assert status == 0, err
    assert "26 fields hashed into 4,096 buckets" in out
    assert table(out)["FTRL logistic regression"][1] > 0.6


@pytest.mark.parametrize("argv, message", [
    (("--batch-size", "0"), "--batch-size must be >= 1, got 0"),
    (("--examples", "-5"), "--examples must be >= 2, got -5"),
    (("--epochs", "0"), "--epochs must be >= 1, got 0"),
    (("--threads", "0"), "--threads must be >= 1, got 0"),
    (("--seed", "-1"), "--seed must be >= 0, got -1"),
    (("--examples", "2"), "--examples 2: 2 examples with test_fraction=0.2 leave 0"),
    (("--buckets", "0"), "--buckets must be >= 1, got 0"),
    (("--buckets", str(2**31)), "--buckets must be <= 2,147,483,647, got "
                                "2,147,483,648"),
    (("--buckets", "2000000000", "--model", "embedding"),
     "--buckets 2,000,000,000: the weights of the embedding model asks for a "
     "result of shape (2000000000, 8)"),
    (("--examples", str(10**11)), f"--examples {10**11:,}: the synthetic data asks"),
    (("--epochs", "two"), "argument --epochs: invalid int value: 'two'"),
    (("--model", "deep"), "argument --model: invalid choice: 'deep'"),
])
def test_bad_options(demo, argv, message):
    status, out, err = demo(*argv)
    assert status == 2 and out == ""
    assert err.startswith(f"sparsegrad demo: error: {message}")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_files(demo, tmp_path):
    missing = tmp_path / "missing.svm"
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:1\nnot svmlight at all\n")
    labels = tmp_path / "labels.svm"
    labels.write_text("1 1:1\n2 2:1\n")
    cases = [
        (("--data", str(missing)), f"--data {missing}: no such file"),
        (("--data", str(bad)), f"--data {bad}: line 2: the label 'not' is not a "
                               "number"),
        (("--data", str(labels)), f"--data {labels}: line 2: the label '2' is not "
                                  "-1/+1 or 0/1"),
        (("--data", str(bad), "--examples", "10"),
         "--examples sets the size of the synthetic data"),
        (("--plot", str(tmp_path / "no" / "c.png")),
         f"--plot {tmp_path / 'no' / 'c.png'}: directory"),
        (("--plot", str(tmp_path / "c.xyz")), f"--plot {tmp_path / 'c.xyz'}: unknown"),
        (("--save", str(bad)), f"--save {bad}: exists and is not a directory"),
        (("--threads", "100000"), "--threads 100000: n must be at most"),
    ]
    for argv, message in cases:
        status, _, err = demo(*argv)
        assert status == 2, argv
        assert err.startswith(f"sparsegrad demo: error: {message}"), err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_command_line_entry(tmp_path):
    command = [sys.executable, "-m", "sparsegrad", "demo"]
    # outside the source tree, whose sparsegrad has no built kernels
    bad = subprocess.run(command + ["--batch-size", "0"], capture_output=True,
                         text=True, cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr == "sparsegrad demo: error: --batch-size must be >= 1, got 0\n"
    shown = subprocess.run(command + ["--help"], capture_output=True, text=True,
                           check=True, cwd=tmp_path)
    assert "--resume DIR" in shown.stdout and "embedding_lookup_sparse" in shown.stdout


@pytest.mark.parametrize("module, package", [("sklearn.metrics", "scikit-learn"),
                                             ("tqdm", "tqdm")])
def test_without_the_demo_extra(demo, monkeypatch, module, package):
    monkeypatch.setitem(sys.modules, module, None)          # import fails
    status, out, err = demo("--examples", "3000")
    assert status == 2 and out == ""
    assert err == (f"sparsegrad demo: error: the demo needs {package}, not "
                   'installed: pip install "sparsegrad[demo]"\n')


def test_device_gpu_without_a_gpu(demo, monkeypatch):
    # One line and status 2, before any data is made.
    from sparsegrad.framework import backend

    monkeypatch.setattr(backend, "cupy_status",
                        lambda: (False, "CuPy 14.2.0 installed, no GPU found"))
    status, out, err = demo("--device", "gpu")
    assert status == 2
    assert err.strip() == ("sparsegrad demo: error: --device gpu: CuPy 14.2.0 "
                           "installed, no GPU found")
    assert out == ""
