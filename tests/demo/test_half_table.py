"""The demo's embedding model on a half-precision table (``--table-dtype``):
mixed-precision training reaches the float32 model's AUC, and the final table
shows the table's memory."""

import re

import ml_dtypes
import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.demo import data as demo_data
from sparsegrad.demo import train
from sparsegrad.demo.models import EmbeddingMLP

BF16 = np.dtype(ml_dtypes.bfloat16)


def _one_epoch(data, table_dtype, stochastic=True):
    model = EmbeddingMLP(data.n_buckets, data.n_fields, seed=0,
                         table_dtype=table_dtype)
    if table_dtype != "float32" and not stochastic:
        model.optimizer = sg.optimizers.Adam(learning_rate=0.002, lazy=True,
                                             slot_dtype=table_dtype)
    history = {"epochs": [], "curve": []}
    train.fit(model, data, epochs=1, batch_size=256, history=history, progress=False)
    return model, history["epochs"][-1]["test_auc"]


def test_bfloat16_tables_train_to_the_float32_auc():
    data = demo_data.make_ctr_dataset(40_000, n_buckets=2**14, seed=1)
    _, auc32 = _one_epoch(data, "float32")
    nearest_model, auc_nearest = _one_epoch(data, "bfloat16", stochastic=False)
    model, auc_sr = _one_epoch(data, "bfloat16")
    assert auc32 > 0.65                             # it learned something
    assert abs(auc_nearest - auc32) < 0.01
    assert abs(auc_sr - auc32) < 0.01
    # the table and its slots are bfloat16: half the float32 bytes
    assert model.table.dtype == BF16
    state = model.optimizer.get_state(model.table)
    assert state.m.dtype == BF16 and state.v.dtype == BF16
    assert model.table_memory() == (3 * 2**14 * 8 * 2, "bfloat16")
    # the two roundings are really different runs
    assert not np.array_equal(model.table.numpy().view(np.uint16),
                              nearest_model.table.numpy().view(np.uint16))


def test_the_command_line_trains_a_bfloat16_table(demo, table):
    status, out, err = demo("--examples", "6000", "--epochs", "1", "--model",
                            "embedding", "--table-dtype", "bfloat16",
                            "--buckets", "4096")
    assert status == 0, err
    rows = table(out)
    assert rows["embedding + MLP"][1] > 0.5
    # table + slots: 4096 rows of 8 bfloat16 values, three times
    assert re.search(r"0\.2 MiB \(bfloat16\)", out), out


@pytest.mark.parametrize("argv, message", [
    (("--table-dtype", "bfloat16", "--device", "gpu"),
     "--table-dtype bfloat16 trains on the CPU in one process; it cannot be "
     "combined with --device gpu"),
    (("--table-dtype", "float64",), "invalid choice: 'float64'"),
])
def test_bad_table_dtypes(demo, argv, message):
    status, _, err = demo("--examples", "3000", *argv)
    assert status == 2
    assert message in err


def test_resume_keeps_the_table_dtype(demo, tmp_path):
    status, _, err = demo("--examples", "3000", "--epochs", "1", "--model",
                          "embedding", "--table-dtype", "bfloat16", "--buckets", "1024",
                          "--save", str(tmp_path))
    assert status == 0, err
    status, _, err = demo("--epochs", "2", "--model", "embedding", "--table-dtype",
                          "float16", "--resume", str(tmp_path))
    assert status == 2
    assert "--table-dtype float16 differs from bfloat16" in err
    status, out, err = demo("--epochs", "2", "--model", "embedding",
                            "--resume", str(tmp_path))
    assert status == 0, err
    assert "(bfloat16)" in out
