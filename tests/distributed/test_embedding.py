"""ShardedEmbedding and uniform_rows.

The MPI jobs (2 and 3 ranks: even and uneven ownership of 11 rows) are
compared with one process holding the whole table: the lookups with
``uniform_rows`` (exactly), the shard gradients and a few Adam(lazy=True)
steps with ``sg.nn.embedding_lookup`` on the full table.  The single-process
tests run in the pytest process (a world of one rank).
"""

import json
import re

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.distributed import registry
from sparsegrad.distributed.embedding import ShardedEmbedding, uniform_rows
from sparsegrad.errors import InvalidArgumentError

NUM_ROWS, DIM, SEED, STEPS = 11, 3, 2024, 4
MASK = (1 << 64) - 1


# -- a plain-Python splitmix64, the reference of uniform_rows ------------------


def _mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def _reference_entry(seed, i, j, dim, scale=0.05):
    h = _mix((_mix(seed) + ((i * dim + j + 1) * 0x9E3779B97F4A7C15)) & MASK)
    return (h >> 11) * 2.0 ** -53 * (2 * scale) - scale


def test_uniform_rows_is_the_documented_hash():
    rows = np.array([0, 5, 2**40, 3])
    got = uniform_rows(rows, 4, seed=99, dtype="float64")
    expected = [[_reference_entry(99, int(i), j, 4) for j in range(4)] for i in rows]
    np.testing.assert_array_equal(got, np.array(expected))
    got32 = uniform_rows(rows, 4, seed=99)
    assert got32.dtype == np.float32
    np.testing.assert_array_equal(got32, np.array(expected).astype(np.float32))


def test_uniform_rows_depends_on_row_column_and_seed_only():
    full = uniform_rows(np.arange(3000), 40, seed=5)     # several hash blocks
    assert full.shape == (3000, 40)
    picked = np.array([2999, 0, 1234, 0])
    np.testing.assert_array_equal(uniform_rows(picked, 40, seed=5), full[picked])
    np.testing.assert_array_equal(uniform_rows(np.arange(3000), 40, seed=5), full)
    assert not np.array_equal(uniform_rows(np.arange(3000), 40, seed=6), full)
    wide = uniform_rows(np.arange(3000), 40, seed=5, dtype="float64")
    assert (wide >= -0.05).all() and (wide < 0.05).all()
    assert abs(wide.mean()) < 2e-3 and wide.min() < -0.0499 and wide.max() > 0.0499
    half = uniform_rows(np.arange(10), 8, seed=5, scale=1.0, dtype="float64")
    assert (np.abs(half) <= 1.0).all() and np.abs(half).max() > 0.5
    assert uniform_rows(np.array([], np.int64), 3).shape == (0, 3)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rows": [-1, 2]}, "rows must be >= 0"),
        ({"rows": [0.5]}, "rows must be int32 or int64"),
        ({"rows": [[0, 1]]}, "rows must be 1-D"),
        ({"dim": 0}, "dim must be >= 1"),
        ({"dim": 2.0}, "dim must be an int"),
        ({"seed": -1}, "seed must be >= 0"),
        ({"seed": 2**64}, "seed must be < 2**64"),
        ({"scale": 0.0}, "scale must be a positive finite number"),
        ({"scale": float("inf")}, "scale must be a positive finite number"),
        ({"dtype": "int32"}, "dtype must be a floating-point dtype"),
    ],
)
def test_uniform_rows_rejects_bad_arguments(kwargs, message):
    arguments = {"rows": [0, 1], "dim": 2, **kwargs}
    rows, dim = arguments.pop("rows"), arguments.pop("dim")
    with pytest.raises(InvalidArgumentError,
                       match=re.escape(f"uniform_rows: {message}")):
        uniform_rows(rows, dim, **arguments)


# -- one process ---------------------------------------------------------------


def test_single_rank_lookup_and_gradient_match_embedding_lookup():
    emb = ShardedEmbedding(7, 4, seed=1, dtype="float64", name="items")
    full = uniform_rows(np.arange(7), 4, seed=1, dtype="float64")
    assert (emb.rank, emb.size, emb.num_rows, emb.dim) == (0, 1, 7, 4)
    assert emb.shard.name == "items/shard-0-of-1" and emb.dtype == np.float64
    assert registry.is_sharded(emb.shard)
    np.testing.assert_array_equal(emb.shard.numpy(), full)
    ids = np.array([[3, 3, 0], [6, 3, 1]], np.int32)
    w = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    table = sg.Variable(full)
    with sg.GradientTape(persistent=True) as tape:
        rows = emb(ids)
        loss = sg.reduce_sum(rows * w)
        ref_loss = sg.reduce_sum(sg.nn.embedding_lookup(table, ids) * w)
    np.testing.assert_array_equal(rows.numpy(), full[ids])
    grad = tape.gradient(loss, emb.shard)
    expected = tape.gradient(ref_loss, table).to_dense().numpy()
    assert grad.dense_shape == (7, 4)
    assert sorted(grad.indices.numpy().tolist()) == [0, 1, 3, 6]  # one per id
    np.testing.assert_array_equal(grad.to_dense().numpy(), expected)


def test_single_rank_empty_ids_and_custom_initializer():
    emb = ShardedEmbedding(5, 2, initializer=lambda rows: np.stack([rows, -rows], 1))
    np.testing.assert_array_equal(emb.shard.numpy()[:, 1], -np.arange(5.0))
    assert emb.shard.dtype == np.float32
    with sg.GradientTape() as tape:
        rows = emb.lookup(np.zeros((2, 0), np.int64))
        loss = sg.reduce_sum(rows)
    assert rows.shape == (2, 0, 2)
    grad = tape.gradient(loss, emb.shard)
    assert grad.values.shape == (0, 2) and grad.dense_shape == (5, 2)
    np.testing.assert_array_equal(emb(sg.constant([4, 0])).numpy(), [[4, -4], [0, 0]])


@pytest.mark.parametrize(
    "args, kwargs, error, message",
    [
        ((0, 3), {}, InvalidArgumentError, "num_rows must be >= 1, got 0"),
        ((True, 3), {}, InvalidArgumentError, "num_rows must be an int"),
        ((4, 1.5), {}, InvalidArgumentError, "dim must be an int, got 1.5"),
        ((4, 3), {"dtype": "int64"}, InvalidArgumentError,
         "dtype must be a floating-point dtype"),
        ((4, 3), {"seed": -3}, InvalidArgumentError, "seed must be >= 0"),
        ((4, 3), {"initializer": lambda rows: np.zeros((len(rows), 2))},
         InvalidArgumentError, r"must return a numeric array of shape \(4, 3\)"),
        ((4, 3), {"initializer": 3}, TypeError, "initializer must be callable"),
        ((4, 3), {"comm": "world"}, TypeError, "comm must be an mpi4py"),
    ],
)
def test_construction_rejects_bad_arguments(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        ShardedEmbedding(*args, **kwargs)


@pytest.mark.parametrize(
    "ids, message",
    [
        ([0, 5], r"lookup: ids\[1\] = 5 is not in \[0, 5\)"),
        ([[0], [-1]], r"ids\[1,0\] = -1 is not in \[0, 5\)"),
        ([0.0, 1.0], "ids must be int32 or int64"),
    ],
)
def test_single_rank_lookup_rejects_bad_ids(ids, message):
    emb = ShardedEmbedding(5, 2)
    before = emb.shard.numpy()
    with pytest.raises(InvalidArgumentError, match=message):
        emb.lookup(ids)
    np.testing.assert_array_equal(emb.shard.numpy(), before)


# -- MPI jobs ------------------------------------------------------------------


def _inputs(size):
    """Every rank's ids (of different shapes; rank 1 of 3 has none) and
    weights, and the training batches."""
    rng = np.random.default_rng(size)
    shapes = {2: [(3, 4), (5,)], 3: [(3, 4), (0, 2), (6,)]}[size]
    setup = {"num_rows": NUM_ROWS, "dim": DIM, "seed": SEED, "steps": STEPS}
    for r, shape in enumerate(shapes):
        setup[f"ids_{r}"] = rng.integers(0, NUM_ROWS, size=shape)
        setup[f"w_{r}"] = rng.standard_normal(shape + (DIM,)).astype(np.float32)
        for step in range(STEPS):
            n = 4 + step + r
            setup[f"train_ids_{step}_{r}"] = rng.integers(0, NUM_ROWS, size=n)
            setup[f"train_w_{step}_{r}"] = rng.standard_normal(
                (n, DIM)).astype(np.float32)
    return setup


def _reference_training(setup, size):
    """The same steps with one process, on the whole table."""
    table = sg.Variable(uniform_rows(np.arange(NUM_ROWS), DIM, seed=SEED))
    opt = sg.optimizers.Adam(learning_rate=0.01, lazy=True)
    for step in range(STEPS):
        with sg.GradientTape() as tape:
            losses = []
            for r in range(size):
                batch = setup[f"train_ids_{step}_{r}"]
                rows = sg.nn.embedding_lookup(table, batch)
                losses.append(sg.reduce_sum(rows * setup[f"train_w_{step}_{r}"])
                              / batch.size)
            loss = sg.add_n(losses) / size
        opt.apply_gradients([(tape.gradient(loss, table), table)])
    return table.numpy()


def _owner_bytes(setup, size, rank):
    """Bytes rank `rank` sends in a lookup's forward and backward pass: each
    distinct id it needs from another rank (8 bytes) and, forward, each
    row other ranks need from it; backward, one gradient row per id it
    fetched."""
    row = 4 * DIM
    distinct = [np.unique(setup[f"ids_{r}"]) for r in range(size)]
    fetched = int(np.sum(distinct[rank] % size != rank))
    served = sum(int(np.sum(distinct[r] % size == rank))
                 for r in range(size) if r != rank)
    return 8 * fetched + row * served, row * fetched


@pytest.mark.parametrize("size", [2, 3])
def test_sharded_embedding_job(mpirun, tmp_path, size):
    setup = _inputs(size)
    np.savez(tmp_path / "input.npz", **setup)
    mpirun(size, "embedding_job.py", tmp_path, timeout=120)
    ranks = [np.load(tmp_path / f"rank-{r}.npz") for r in range(size)]
    errors = [json.loads((tmp_path / f"errors-{r}.json").read_text())
              for r in range(size)]
    full = uniform_rows(np.arange(NUM_ROWS), DIM, seed=SEED)

    # ownership and initial values: the table does not depend on the ranks
    owned = [np.arange(r, NUM_ROWS, size) for r in range(size)]
    for r, res in enumerate(ranks):
        np.testing.assert_array_equal(res["owned"], owned[r])
        np.testing.assert_array_equal(res["initial"], full[owned[r]])
        assert bool(res["sharded"])
    assert sum(len(o) for o in owned) == NUM_ROWS

    # forward: exact rows, in the shape of the ids (an empty one included)
    for r, res in enumerate(ranks):
        ids = setup[f"ids_{r}"]
        assert res["forward"].shape == ids.shape + (DIM,)
        np.testing.assert_array_equal(res["forward"], full[ids])

    # the shard gradient is the owned rows of the gradient of the summed losses
    table = sg.Variable(full)
    with sg.GradientTape() as tape:
        loss = sg.add_n([
            sg.reduce_sum(sg.nn.embedding_lookup(table, setup[f"ids_{r}"])
                          * setup[f"w_{r}"]) for r in range(size)])
    expected = tape.gradient(loss, table).to_dense().numpy()
    for r, res in enumerate(ranks):
        assert tuple(res["grad_dense_shape"]) == (len(owned[r]), DIM)
        grad = sg.IndexedSlices(res["grad_values"], res["grad_indices"],
                                dense_shape=(len(owned[r]), DIM))
        np.testing.assert_allclose(grad.to_dense().numpy(), expected[owned[r]],
                                   rtol=1e-6, atol=1e-6)
        # only distinct ids travel, and their rows once each way
        forward, backward = _owner_bytes(setup, size, r)
        assert int(res["forward_bytes"]) == forward
        assert int(res["backward_bytes"]) == backward

    # training: the shards follow the single-process run on the whole table
    trained = _reference_training(setup, size)
    assert not np.allclose(trained, full)
    for r, res in enumerate(ranks):
        np.testing.assert_allclose(res["trained"], trained[owned[r]],
                                   rtol=1e-5, atol=1e-7)
    # the lookup after the failed calls reads the trained shards
    assembled = np.empty_like(full)
    for r, res in enumerate(ranks):
        assembled[owned[r]] = res["trained"]
    for r, res in enumerate(ranks):
        np.testing.assert_array_equal(res["after_errors"],
                                      assembled[setup[f"ids_{r}"]])

    # bad input on one rank raises the same error on every rank
    checks = {
        "out_of_range": (size - 1, f"ids[1] = {NUM_ROWS} is not in [0, {NUM_ROWS})"),
        "float_ids": (0, "ids must be int32 or int64, got dtype float64"),
        "num_rows_differ": (None, "every rank must pass the same num_rows; the "
                            f"ranks passed num_rows = "
                            f"{[NUM_ROWS] * (size - 1) + [NUM_ROWS + 1]}"),
        "dim_zero_on_one_rank": (1, "dim must be >= 1, got 0"),
    }
    for label, (culprit, text) in checks.items():
        for r in range(size):
            got = errors[r][label]
            assert got is not None, f"{label}: rank {r} did not raise"
            assert got[0] == "InvalidArgumentError", (label, r, got)
            assert text in got[1], (label, r, got)
            if culprit is not None:
                assert got[1].startswith("" if r == culprit else
                                         f"on rank {culprit}: "), (label, r, got)
