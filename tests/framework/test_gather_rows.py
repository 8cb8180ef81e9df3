"""sparse_rows.gather_rows: the rows of a table, on the kernel threads when the
gather is large, always equal to ``np.take``."""

import re

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework import sparse_rows


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize(
    "dtype, row_shape",
    [(np.float32, (16,)), (np.float64, (3, 5)), (np.float32, ()), (np.int8, (7,)),
     (np.complex128, (2,)), (np.dtype(">f4"), (17,))],
)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_large_gathers_equal_take(dtype, row_shape, index_dtype, n_threads):
    sg.set_num_threads(n_threads)
    rng = np.random.default_rng(1)
    table = rng.normal(size=(5000,) + row_shape).astype(dtype)
    # Enough rows for the kernel (above 256 KiB), in a 2-D batch of ids.
    n = 1 + (1 << 18) // max(1, table[0].nbytes)
    indices = rng.integers(0, 5000, size=(n, 3)).astype(index_dtype)
    got = sparse_rows.gather_rows(table, indices)
    assert got.shape == indices.shape + row_shape and got.dtype == table.dtype
    np.testing.assert_array_equal(got, np.take(table, indices, axis=0))


def test_strided_indices_and_small_gathers():
    table = np.arange(40.0, dtype=np.float32).reshape(10, 4)
    indices = np.arange(20000)[::2] % 10            # not contiguous
    np.testing.assert_array_equal(sparse_rows.gather_rows(table, indices),
                                  table[indices])
    small = np.array([[9, 0], [3, 3]])
    np.testing.assert_array_equal(sparse_rows.gather_rows(table, small), table[small])
    empty = sparse_rows.gather_rows(np.zeros((0, 4)), np.zeros(0, np.int64))
    assert empty.shape == (0, 4)


def test_embedding_lookup_of_a_large_batch_takes_the_rows():
    rng = np.random.default_rng(2)
    table = sg.Variable(rng.normal(size=(3000, 16)).astype(np.float32))
    ids = rng.integers(0, 3000, size=(4096, 26))
    out = sg.nn.embedding_lookup(table, ids)
    np.testing.assert_array_equal(out.numpy(), table.numpy()[ids])


def test_a_result_beyond_memory_is_refused_before_allocating():
    table = np.zeros((2, 2**20), np.float32)            # 8 MiB
    ids = np.zeros(2**20, np.int64)                     # 8 MiB; 4 TiB of rows
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "gather: indices asks for a result of shape (1048576, 1048576) and "
            "dtype float32")):
        sparse_rows.gather_rows(table, ids)
