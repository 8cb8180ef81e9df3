"""MPI job for tests/distributed/test_embedding.py.

``embedding_job.py DIR`` reads ``DIR/input.npz`` (the table's size and seed,
each rank's ids and weights, the training batches), runs on every rank:

1. construction (owned rows, initial shard);
2. one lookup and the shard's gradient of ``sum(lookup(ids_r) * w_r)``,
   with the bytes each direction sent;
3. a few Adam(lazy=True) steps on ``sum(lookup * w) / len(ids)``, the shard
   gradient divided by the number of ranks;
4. bad calls that must raise on every rank (ids out of range or not
   integers on one rank, ranks disagreeing at construction), then one more
   good lookup;

and writes ``DIR/rank-R.npz`` (arrays) and ``DIR/errors-R.json`` (the class
and message each bad call raised on this rank, or None).
"""

import json
import sys
from pathlib import Path

import numpy as np
from jobtools import attempt
from mpi4py import MPI

import sparsegrad as sg
from sparsegrad.distributed import registry
from sparsegrad.distributed.comm import bytes_sent, reset_bytes_sent
from sparsegrad.distributed.embedding import ShardedEmbedding


def main(out):
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    setup = np.load(out / "input.npz")
    num_rows, dim, seed = (int(setup[k]) for k in ("num_rows", "dim", "seed"))
    steps = int(setup["steps"])
    results, errors = {}, {}

    emb = ShardedEmbedding(num_rows, dim, seed=seed)
    results["owned"] = emb.owned_rows()
    results["initial"] = emb.shard.numpy()
    results["sharded"] = np.asarray(registry.is_sharded(emb.shard))

    ids, w = setup[f"ids_{rank}"], setup[f"w_{rank}"]
    reset_bytes_sent()
    with sg.GradientTape() as tape:
        rows = emb.lookup(ids)
        results["forward_bytes"] = np.asarray(bytes_sent())
        loss = sg.reduce_sum(rows * w)
    (grad,) = tape.gradient(loss, [emb.shard])
    results["backward_bytes"] = np.asarray(bytes_sent()) - results["forward_bytes"]
    results["forward"] = rows.numpy()
    results["grad_values"] = grad.values.numpy()
    results["grad_indices"] = grad.indices.numpy()
    results["grad_dense_shape"] = np.asarray(grad.dense_shape)

    opt = sg.optimizers.Adam(learning_rate=0.01, lazy=True)
    for step in range(steps):
        batch = setup[f"train_ids_{step}_{rank}"]
        weight = setup[f"train_w_{step}_{rank}"]
        with sg.GradientTape() as tape:
            loss = sg.reduce_sum(emb(batch) * weight) / batch.size
        g = tape.gradient(loss, emb.shard)
        opt.apply_gradients([(g / size, emb.shard)])
    results["trained"] = emb.shard.numpy()

    good = np.array([0, num_rows - 1])
    bad = np.array([1, num_rows])          # num_rows is out of range
    attempt(errors, "out_of_range",
            lambda: emb.lookup(bad if rank == size - 1 else good))
    attempt(errors, "float_ids",
            lambda: emb.lookup(np.array([0.5]) if rank == 0 else good))
    attempt(errors, "num_rows_differ",
            lambda: ShardedEmbedding(num_rows + (rank == size - 1), dim))
    attempt(errors, "dim_zero_on_one_rank",
            lambda: ShardedEmbedding(num_rows, 0 if rank == 1 else dim))
    # every rank went through the same collectives: the next lookup works
    results["after_errors"] = emb.lookup(ids).numpy()

    np.savez(out / f"rank-{rank}.npz", **results)
    (out / f"errors-{rank}.json").write_text(json.dumps(errors))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
