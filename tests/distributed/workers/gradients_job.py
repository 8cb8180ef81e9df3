"""MPI worker of tests/distributed/test_gradients.py.

Usage: mpiexec -n N python gradients_job.py OUTDIR

Every rank builds its share of a small data-parallel problem (``batch(rank,
size)``: ranks get batches of different sizes), combines gradients with
sparsegrad.distributed, trains a few steps with DistributedOptimizer, and
provokes errors on one rank; it writes what it saw to
``OUTDIR/rank<r>.npz`` (arrays) and ``OUTDIR/rank<r>.json`` (errors).  The
test computes the single-process reference with the functions below.
"""

import json
import sys

import numpy as np

import sparsegrad as sg

N_ROWS, DIM, HIDDEN = 40, 4, 3


def batch_sizes(size):
    """Uneven local batch sizes: rank r gets 5 + 3 * r examples."""
    return [5 + 3 * r for r in range(size)]


def batch(rank, size):
    """(ids, y) of rank `rank`: Zipf-ish ids, so ranks share popular rows."""
    rng = np.random.default_rng(100 + rank)
    n = batch_sizes(size)[rank]
    ids = (rng.zipf(1.3, size=(n, 2)) - 1) % N_ROWS
    y = rng.random((n, 1)).astype(np.float32)
    return ids.astype(np.int64), y


def full_batch(size):
    parts = [batch(r, size) for r in range(size)]
    return (np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]))


def model():
    """A table (sparse gradient) and a dense layer (dense gradient)."""
    rng = np.random.default_rng(7)
    table = sg.Variable(rng.standard_normal((N_ROWS, DIM)).astype(np.float32),
                        name="table")
    kernel = sg.Variable(rng.standard_normal((2 * DIM, HIDDEN)).astype(np.float32),
                         name="kernel")
    bias = sg.Variable(np.zeros((HIDDEN,), np.float32), name="bias")
    return [table, kernel, bias]


def loss(variables, ids, y, global_n, lookup=None):
    """Sum of the squared errors of the batch divided by `global_n`
    (`lookup`: a ShardedEmbedding in place of the table)."""
    table, kernel, bias = variables
    rows = lookup(ids) if lookup else sg.nn.embedding_lookup(table, ids)
    x = sg.reshape(rows, (-1, 2 * DIM))
    out = sg.reduce_sum(sg.matmul(x, kernel) + bias, axis=1, keepdims=True)
    return sg.reduce_sum(sg.square(out - y)) / np.float32(global_n)


def gradients(variables, ids, y, global_n, lookup=None):
    with sg.GradientTape() as tape:
        value = loss(variables, ids, y, global_n, lookup)
    return tape.gradient(value, variables)


SHARD_SEED = 3


def sharded_model(comm):
    """model() with the table replaced by a ShardedEmbedding (uniform_rows
    init; its shard takes the table's place in the variable list)."""
    from sparsegrad.distributed import ShardedEmbedding

    embedding = ShardedEmbedding(N_ROWS, DIM, comm, seed=SHARD_SEED)
    _, kernel, bias = model()
    return embedding, [embedding.shard, kernel, bias]


def full_sharded_model():
    """The single-process twin of sharded_model: the whole table."""
    from sparsegrad.distributed import uniform_rows

    _, kernel, bias = model()
    table = sg.Variable(uniform_rows(np.arange(N_ROWS), DIM, seed=SHARD_SEED),
                        name="table")
    return [table, kernel, bias]


def optimizer():
    return sg.optimizers.Adam(learning_rate=0.05, lazy=True, global_clipnorm=0.5)


STEPS = 3


def local_big(rank):
    """A float32 buffer of 40,001 entries, over SMALL_SUM_BYTES."""
    return np.random.default_rng(rank).standard_normal(40_001).astype(np.float32)


def _slices(prefix, g, out):
    out[f"{prefix}/indices"] = g.indices.numpy()
    out[f"{prefix}/values"] = g.values.numpy()


def main(outdir):
    from jobtools import attempt  # beside this file: on sys.path in a job only
    from mpi4py import MPI

    from sparsegrad import distributed as dist

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    ids, y = batch(rank, size)
    global_n = sum(batch_sizes(size))
    out, errors = {}, {}

    # 1. the sparse and the dense path of the same gradients, reduction="sum"
    variables = model()
    grads = gradients(variables, ids, y, global_n)
    dist.reset_bytes_sent()
    sparse = dist.allreduce_gradients(grads, comm, reduction="sum",
                                      sparse_as_dense_threshold=float("inf"))
    out["sparse_bytes"] = np.int64(dist.bytes_sent())
    out["local_rows"] = np.int64(np.unique(ids).shape[0])
    dense = dist.allreduce_gradients(grads, comm, reduction="sum",
                                     sparse_as_dense_threshold=0)
    auto = dist.allreduce_gradients(grads, comm, reduction="sum")
    for name, result in (("sparse", sparse), ("dense", dense), ("auto", auto)):
        _slices(f"{name}/table", result[0], out)
        out[f"{name}/kernel"] = result[1].numpy()
        out[f"{name}/bias"] = result[2].numpy()
    mean = dist.allreduce_gradients(grads, comm)
    _slices("mean/table", mean[0], out)
    out["mean/kernel"] = mean[1].numpy()

    # 2. None on the last rank (zeros there); a dense gradient on rank 0
    #    where the others pass IndexedSlices
    mixed = list(grads)
    if rank == size - 1:
        mixed[1] = None
    if rank == 0:
        mixed[0] = grads[0].to_dense()
    combined = dist.allreduce_gradients(mixed, comm, reduction="sum")
    out["mixed/table"] = combined[0].numpy()
    out["mixed/kernel"] = combined[1].numpy()

    # 3. bad input on one rank: every rank raises, nothing hangs
    def bad_shape():
        g = list(grads)
        if rank == 1:
            g[1] = np.zeros((3, 3), np.float32)
        dist.allreduce_gradients(g, comm)

    def no_dense_shape():
        g = list(grads)
        if rank == 0:
            g[0] = sg.IndexedSlices(grads[0].values, grads[0].indices)
        dist.allreduce_gradients(g, comm)

    def count():
        dist.allreduce_gradients(grads[: 3 if rank else 2], comm)

    def clip_dtype():
        t = [np.ones(3, np.float64 if rank == 1 else np.float32)]
        sg.clip_by_global_norm(t, 1.0, comm=comm)

    def bad_variable():
        opt = dist.DistributedOptimizer(optimizer(), comm)
        vs = model()
        g = list(grads)
        if rank == size - 1:
            g[2] = np.zeros((HIDDEN + 1,), np.float32)
        before = [v.numpy().copy() for v in vs]
        try:
            opt.apply_gradients(zip(g, vs))
        finally:
            out["bad_variable/unchanged"] = np.array(
                [np.array_equal(b, v.numpy()) for b, v in zip(before, vs)])

    def bad_pair():
        opt = dist.DistributedOptimizer(optimizer(), comm)
        vs = model()
        pairs = list(zip(grads, vs))
        if rank == 0:
            pairs[1] = (grads[1], vs[1], "extra")
        opt.apply_gradients(pairs)

    for name, run in (("bad_pair", bad_pair), ("bad_shape", bad_shape),
                      ("no_dense_shape", no_dense_shape), ("count", count),
                      ("clip_dtype", clip_dtype), ("bad_variable", bad_variable)):
        attempt(errors, name, run)

    # 4. the distributed norm: a replicated tensor and this rank's shard
    replicated = np.array([3.0, 4.0], np.float32)
    shard = np.full((rank + 1,), rank + 1.0, np.float32)
    clipped, norm = sg.clip_by_global_norm([replicated, shard], 1.0, comm=comm,
                                           sharded=[False, True])
    out["clip/norm"] = norm.numpy()
    out["clip/replicated"] = clipped[0].numpy()
    out["clip/shard"] = clipped[1].numpy()

    # 5. the chunked path of ordered_sum (beyond SMALL_SUM_BYTES, a length
    #    that the number of ranks does not divide)
    big = local_big(rank)
    out["ordered_sum"] = dist.comm.ordered_sum(comm, big)

    # 6. training: DistributedOptimizer with global_clipnorm
    variables = model()
    opt = dist.DistributedOptimizer(optimizer(), comm, reduction="sum")
    for _ in range(STEPS):
        opt.apply_gradients(zip(gradients(variables, ids, y, global_n), variables))
    for v in variables:
        out[f"trained/{v.name}"] = v.numpy()
    out["trained/m"] = opt.get_slot(variables[0], "m").numpy()

    # 7. a sharded table and replicated layers: DistributedOptimizer with a
    #    global norm over the shards and the replicated gradients
    embedding, variables = sharded_model(comm)
    opt = dist.DistributedOptimizer(optimizer(), comm, reduction="sum")
    for _ in range(STEPS):
        grads = gradients(variables, ids, y, global_n, embedding)
        opt.apply_gradients(zip(grads, variables))
    out["sharded/owned"] = embedding.owned_rows()
    out["sharded/shard"] = embedding.shard.numpy()
    out["sharded/kernel"] = variables[1].numpy()
    out["sharded/v"] = opt.get_slot(embedding.shard, "v").numpy()

    np.savez(f"{outdir}/rank{rank}.npz", **out)
    with open(f"{outdir}/rank{rank}.json", "w") as f:
        json.dump(errors, f)


if __name__ == "__main__":
    main(sys.argv[1])
