import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

import sparsegrad as sg
from sparsegrad.demo.data import (
    DataFileError,
    load_svmlight,
    make_ctr_dataset,
)


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
    dump_svmlight_file(X, labels, str(path))
    data = load_svmlight(path, seed=4)
    assert data.n_fields is None and data.n_buckets == 6
    assert data.train.ids is None and data.test.ids is None
    assert data.train.X.shape == (40, 6) and data.test.X.shape == (10, 6)
    # The split is a shuffle of the rows: every row, with its label, once.
    rows = np.vstack([data.train.X.toarray(), data.test.X.toarray()])
    y = np.concatenate([data.train.y, data.test.y])
    order = rows[:, 0].astype(int) - 1
    np.testing.assert_array_equal(np.sort(order), np.arange(50))
    np.testing.assert_allclose(rows, X[order], rtol=1e-6)
    np.testing.assert_array_equal(y, (labels[order] > 0).astype(np.float32))
    assert not np.array_equal(order, np.arange(50))


def test_load_svmlight_zero_one_labels(tmp_path):
    path = tmp_path / "zero_one.svm"
    path.write_text("0 1:1 3:1\n1 2:1\n1 1:1\n0 3:2.5\n")
    data = load_svmlight(path, test_fraction=0.25)
    assert sorted(np.concatenate([data.train.y, data.test.y]).tolist()) == [0, 0, 1, 1]
    assert data.train.X.dtype == np.float32


def test_load_svmlight_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.svm: no such file"):
        load_svmlight(tmp_path / "nope.svm")
    bad = tmp_path / "bad.svm"
    bad.write_text("this is not svmlight\n")
    with pytest.raises(DataFileError, match=r"bad\.svm: not an svmlight/libsvm file"):
        load_svmlight(bad)
    three = tmp_path / "three.svm"
    three.write_text("3 1:1\n1 2:1\n")
    with pytest.raises(DataFileError, match=r"must be -1/\+1 or 0/1, found 1, 3"):
        load_svmlight(three)
    single = tmp_path / "single.svm"
    single.write_text("1 1:1\n")
    with pytest.raises(DataFileError, match="has 1 rows"):
        load_svmlight(single)
