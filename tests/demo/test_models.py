"""The demo's models: the embedding model starts from the same weights with
and without MPI."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.demo.models import EMBEDDING_DIM, EmbeddingMLP
from sparsegrad.distributed import uniform_rows


def test_the_table_is_uniform_rows_of_the_seed():
    model = EmbeddingMLP(1000, 3, seed=5)
    expected = uniform_rows(np.arange(1000), EMBEDDING_DIM, seed=5)
    np.testing.assert_array_equal(model.table.numpy(), expected)
    assert model.table.numpy().dtype == np.float32
    # the same bits for any thread count
    threads = sg.get_num_threads()
    sg.set_num_threads(1 if threads > 1 else 2)
    try:
        again = EmbeddingMLP(1000, 3, seed=5)
    finally:
        sg.set_num_threads(threads)
    for a, b in zip(model.variables, again.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.name)
    assert not np.array_equal(EmbeddingMLP(1000, 3, seed=6).table.numpy(),
                              model.table.numpy())


def test_a_world_of_one_rank_starts_from_the_same_weights():
    MPI = pytest.importorskip("mpi4py.MPI")
    local = EmbeddingMLP(500, None, seed=3, hidden=(16,))
    sharded = EmbeddingMLP(500, None, seed=3, hidden=(16,), comm=MPI.COMM_WORLD)
    assert [v.name for v in local.variables][1:] == \
        [v.name for v in sharded.variables][1:]
    for a, b in zip(local.variables, sharded.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.name)
