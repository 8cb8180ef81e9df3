import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

import sparsegrad as sg
from sparsegrad.demo.data import (
    DataFileError,
    hash_ids,
    load_svmlight,
    make_ctr_dataset,
)
from sparsegrad.demo.distributed import LAUNCHER_VARIABLES


def _bytes(data):
    parts = []
    for split in (data.train, data.test):
        parts += [split.X.data, split.X.indices, split.X.indptr, split.ids, split.y]
    return b"".join(np.ascontiguousarray(p).tobytes() for p in parts)


def test_same_seed_same_bytes_for_any_thread_count():
    sg.set_num_threads(1)
    first = make_ctr_dataset(3_000, seed=7)
    sg.set_num_threads(2)
    second = make_ctr_dataset(3_000, seed=7)
    assert _bytes(first) == _bytes(second)
    assert _bytes(make_ctr_dataset(3_000, seed=8)) != _bytes(first)


def test_shapes_dtypes_and_one_entry_per_field():
    data = make_ctr_dataset(5_000, seed=3)
    assert (data.n_fields, data.n_buckets) == (26, 2**20)
    assert data.train.y.shape == (4_000,) and data.test.y.shape == (1_000,)
    for split in (data.train, data.test):
        n = split.y.shape[0]
        assert split.X.shape == (n, 2**20) and split.X.dtype == np.float32
        assert split.ids.shape == (n, 26) and split.ids.dtype == np.int64
        assert split.y.dtype == np.float32
        np.testing.assert_array_equal(split.X.getnnz(axis=1), 26)
        np.testing.assert_array_equal(split.X.indices.reshape(n, 26), split.ids)
        np.testing.assert_array_equal(split.X.data, 1.0)
        assert split.ids.min() >= 0 and split.ids.max() < 2**20
        assert set(np.unique(split.y).tolist()) == {0.0, 1.0}


def test_click_rate_and_zipf_values():
    data = make_ctr_dataset(20_000, seed=1)
    assert abs(float(data.train.y.mean()) - 0.25) < 0.02
    # Field 2 has 200,000 values; under the Zipf law its most common value
    # alone is about 13% of the rows, and most rows hold a value seen often.
    _, counts = np.unique(data.train.ids[:, 2], return_counts=True)
    assert 0.08 < counts.max() / 16_000 < 0.2
    # Field 8 has 3 values: three buckets.
    assert np.unique(data.train.ids[:, 8]).size == 3


def test_fields_buckets_and_split_arguments():
    data = make_ctr_dataset(1_000, n_fields=3, n_buckets=64, seed=2, test_fraction=0.5)
    assert data.train.ids.shape == (500, 3) and data.test.X.shape == (500, 64)
    assert data.train.ids.max() < 64


@pytest.mark.parametrize("kwargs, error, fragment", [
    ({"n_examples": 1}, ValueError, "n_examples must be >= 2, got 1"),
    ({"n_examples": 2.5}, TypeError, "n_examples must be an int"),
    ({"n_examples": 10, "n_buckets": 0}, ValueError, "n_buckets must be in"),
    ({"n_examples": 10, "seed": -1}, ValueError, "seed must be >= 0, got -1"),
    ({"n_examples": 10, "test_fraction": 1.0}, ValueError, "test_fraction must be in"),
    ({"n_examples": 3, "test_fraction": 0.1}, ValueError, "0 test and 3 train"),
])
def test_bad_arguments(kwargs, error, fragment):
    with pytest.raises(error, match=fragment):
        make_ctr_dataset(**kwargs)


def test_load_svmlight_round_trip(tmp_path, rng):
    X = rng.random((50, 6)).astype(np.float32)
    X[X < 0.5] = 0.0
    X[:, 0] = np.arange(1, 51)          # the row number, to match rows below
    labels = np.where(rng.random(50) < 0.4, 1, -1)
    path = tmp_path / "small.svm"
    dump_svmlight_file(X, labels, str(path))        # ids 0..5
    data = load_svmlight(path, n_buckets=1024, seed=4)
    assert data.n_fields is None and data.n_buckets == 1024 and data.n_ids == 6
    assert data.train.ids is None and data.test.ids is None
    assert data.train.X.shape == (40, 1024) and data.test.X.shape == (10, 1024)
    columns = hash_ids(np.arange(6, dtype=np.uint64), 1024)
    assert np.unique(columns).size == 6             # no collision among these
    # The split is a shuffle of the rows: every row, with its label, once;
    # feature id k is in column columns[k], the others are empty.
    rows = np.vstack([data.train.X.toarray(), data.test.X.toarray()])
    y = np.concatenate([data.train.y, data.test.y])
    order = rows[:, columns[0]].astype(int) - 1
    np.testing.assert_array_equal(np.sort(order), np.arange(50))
    np.testing.assert_allclose(rows[:, columns], X[order], rtol=1e-6)
    assert np.count_nonzero(rows) == np.count_nonzero(X)
    np.testing.assert_array_equal(y, (labels[order] > 0).astype(np.float32))
    assert not np.array_equal(order, np.arange(50))


def test_load_svmlight_zero_one_labels(tmp_path):
    path = tmp_path / "zero_one.svm"
    path.write_text("0 1:1 3:1\n1 2:1\n1 1:1\n0 3:2.5\n")
    data = load_svmlight(path, test_fraction=0.25)
    assert sorted(np.concatenate([data.train.y, data.test.y]).tolist()) == [0, 0, 1, 1]
    assert data.train.X.dtype == np.float32


def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) % 2**64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) % 2**64
    return x ^ (x >> 31)


def test_hash_ids_is_splitmix64_modulo_the_buckets():
    ids = [0, 1, 2**31 - 1, 2**40, 2**63, 2**64 - 1]
    for n_buckets in (1, 7, 2**20, 2**31 - 1):
        got = hash_ids(np.array(ids, np.uint64), n_buckets)
        assert got.dtype == np.int64
        assert got.tolist() == [_splitmix64(i) % n_buckets for i in ids]


def test_huge_ids_are_hashed_and_comments_qid_and_collisions(tmp_path):
    # ids of any size below 2**64 land in one of n_buckets columns; two ids
    # sharing a column add up; qid and comments are skipped
    path = tmp_path / "huge.svm"
    path.write_text(f"# a header\n+1 qid:3 2147483647:1 {2**40}:2   # note\n\n"
                    f"-1 {2**64 - 1}:0.5 0:4 1:8\n-1 7:1\n+1 7:1\n")
    data = load_svmlight(path, n_buckets=1, test_fraction=0.25)
    assert data.n_ids == 6 and data.n_buckets == 1
    X = np.vstack([data.train.X.toarray(), data.test.X.toarray()])
    assert sorted(X[:, 0].tolist()) == [1.0, 1.0, 3.0, 12.5]
    data = load_svmlight(path, n_buckets=2**31 - 1, test_fraction=0.25)
    assert data.train.X.shape[1] == 2**31 - 1 and data.n_ids == 6


MALFORMED = [
    # (what, file bytes, message after "<path>: ")
    ("id 2**64", f"1 3:1\n-1 {2**64}:1\n",
     f"line 2: feature id '{2**64}' is too large (ids must be below 2**64)"),
    ("id of 400 digits", "1 3:1\n-1 " + "9" * 400 + ":1\n",
     "line 2: feature id '" + "9" * 37 + "'... is too large"),
    ("negative id", "1 3:1\n-1 -4:1\n", "line 2: feature id '-4' is negative"),
    ("nan", "1 3:1\n\n-1 4:nan\n",
     "line 3: the value 'nan' of feature 4 is not a finite float32 number"),
    ("inf", "1 3:1\n-1 4:-inf\n",
     "line 2: the value '-inf' of feature 4 is not a finite float32 number"),
    ("1e39", "1 3:1\n-1 4:1e39\n",
     "line 2: the value '1e39' of feature 4 is not a finite float32 number"),
    ("value not a number", "1 3:x\n0 1:1\n",
     "line 1: the value 'x' of feature 3 is not a number"),
    ("id not a number", "1 3:1\n0 a:1\n", "line 2: feature id 'a' is not an integer"),
    ("float id", "1 3.5:1\n0 1:1\n", "line 1: feature id '3.5' is not an integer"),
    ("no colon", "1 3:1\n-1 abc\n",
     "line 2: 'abc' is not a feature of the form id:value"),
    ("no value", "1 3:\n-1 1:1\n", "line 1: '3:' is not a feature of the form"),
    ("label", "1 3:1\n2 4:1\n", "line 2: the label '2' is not -1/+1 or 0/1"),
    ("label nan", "1 3:1\nnan 4:1\n", "line 2: the label 'nan' is not -1/+1 or 0/1"),
    ("label word", "1 3:1\nyes 4:1\n", "line 2: the label 'yes' is not a number"),
    ("two conventions", "1 3:1\n0 4:1\n-1 5:1\n",
     "line 3: the label '-1' and the label 0 of line 2 mix two conventions"),
    ("duplicate id", "1 2:1 3:1 02:1\n0 1:1\n",
     "line 1: feature id '02' appears twice"),
    ("binary", b"1 3:1\n\x80\x93NUMPY\x00\x01\n",
     "line 2: is not text (byte 0x80 at column 1 is not UTF-8); is it a binary file?"),
    ("NUL", b"1 3:1\n0 4:1\x00\n",
     "line 2: is not text (a NUL byte at column 6); is it a binary file?"),
    ("empty", "", "has no examples (no line with a label); at least 2 are needed"),
    ("comments only", "# nothing\n\n", "has no examples (no line with a label)"),
    ("one example", "1 2:1\n", "has only 1 example; at least 2 are needed"),
    ("one label", "1 2:1\n1 3:1\n1 4:1\n",
     "every one of its 3 examples has label 1; a model needs examples of both"),
    ("no features", "1\n0\n1\n", "has no features (no id:value on any line)"),
    ("split", "1 1:1\n0 1:1\n", "2 examples with test_fraction=0.2 leave 0 test"),
]


@pytest.mark.parametrize("what, content, message", MALFORMED,
                         ids=[case[0] for case in MALFORMED])
def test_malformed_files(tmp_path, what, content, message):
    path = tmp_path / "bad.svm"
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    with pytest.raises(DataFileError) as info:
        load_svmlight(path)
    assert str(info.value).startswith(f"{path}: {message}")
    assert "\n" not in str(info.value)


def test_load_svmlight_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.svm: no such file"):
        load_svmlight(tmp_path / "nope.svm")
    with pytest.raises(IsADirectoryError, match="is a directory, not an svmlight"):
        load_svmlight(tmp_path)
    ok = tmp_path / "ok.svm"
    ok.write_text("1 1:1\n0 2:1\n")
    with pytest.raises(ValueError, match=r"n_buckets must be in \[1, 2147483647\]"):
        load_svmlight(ok, n_buckets=2**31)
    with pytest.raises(TypeError, match="n_buckets must be an int"):
        load_svmlight(ok, n_buckets=2.0)


def _command_line(argv, cwd):
    """``python -m sparsegrad demo ARGV`` started in `cwd` (outside the source
    tree), importing the sparsegrad of this test process."""
    import sparsegrad

    root = str(pathlib.Path(sparsegrad.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    for name in LAUNCHER_VARIABLES:
        env.pop(name, None)
    return subprocess.Popen([sys.executable, "-m", "sparsegrad", "demo",
                             "--no-progress", *argv], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


# The kinds of MALFORMED the command line is tried on (one of each problem;
# a process costs a second, test_malformed_files has every case).
ON_THE_COMMAND_LINE = (
    "id 2**64", "negative id", "nan", "inf", "1e39", "value not a number",
    "id not a number", "no colon", "label", "label word", "binary", "empty",
    "one label", "duplicate id",
)


@pytest.fixture(scope="module")
def command_line_runs(tmp_path_factory):
    """The malformed files of ON_THE_COMMAND_LINE, a missing file and a
    directory, each given to its own ``python -m sparsegrad demo --data``, a
    few at a time: what -> (path, exit status, stdout, stderr)."""
    tmp = tmp_path_factory.mktemp("malformed")
    paths = {"missing file": tmp / "missing.svm", "directory": tmp / "folder"}
    paths["directory"].mkdir()
    for k, (what, content, _) in enumerate(MALFORMED):
        if what not in ON_THE_COMMAND_LINE:
            continue
        paths[what] = tmp / f"file{k}.svm"
        if isinstance(content, str):
            paths[what].write_text(content)
        else:
            paths[what].write_bytes(content)
    results, pending = {}, list(paths.items())
    while pending:
        batch, pending = pending[:4], pending[4:]
        started = [(what, path, _command_line(["--data", str(path)], tmp))
                   for what, path in batch]
        for what, path, process in started:
            out, err = process.communicate(timeout=120)
            results[what] = (path, process.returncode, out, err)
    return results


CLI_CASES = [case for case in MALFORMED if case[0] in ON_THE_COMMAND_LINE] + [
    ("missing file", None, "no such file"),
    ("directory", None, "is a directory, not an svmlight file")]


@pytest.mark.parametrize("what, message", [(c[0], c[2]) for c in CLI_CASES],
                         ids=[c[0] for c in CLI_CASES])
def test_malformed_files_on_the_command_line(command_line_runs, what, message):
    # one line naming the file, the line and the problem; exit status 2;
    # nothing on stdout: no training began
    path, status, out, err = command_line_runs[what]
    assert status == 2, err
    assert out == ""
    assert err.startswith(f"sparsegrad demo: error: --data {path}: {message}"), err
    assert err.count("\n") == 1 and err.endswith("\n")


def test_huge_ids_train_on_the_command_line(tmp_path, rng):
    # ids near 2**31, 2**40 and 2**64 are hashed into --buckets columns: no
    # table is sized by them.  The label follows the first feature.
    path = tmp_path / "huge.svm"
    big = [2**31 - 1, 2**40, 2**64 - 1, 2**63 + 5, 12]
    lines = []
    for _ in range(400):
        chosen = rng.choice(len(big), size=2, replace=False)
        label = 1 if chosen[0] < 2 else -1
        lines.append(f"{label} " + " ".join(f"{big[c]}:1" for c in sorted(chosen)))
    path.write_text("\n".join(lines) + "\n")
    process = _command_line(["--data", str(path), "--buckets", "64", "--epochs", "1",
                             "--batch-size", "50"], tmp_path)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert f"{path}: 5 feature ids hashed into 64 buckets; 320 train / 80 test" in out
    assert "FTRL logistic regression" in out and "embedding + MLP" in out
