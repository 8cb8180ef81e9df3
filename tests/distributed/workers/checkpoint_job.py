"""MPI job for tests/distributed/test_checkpoint.py.

``checkpoint_job.py MODE DIR`` trains a small model (a ShardedEmbedding, a
replicated weight vector and an untrained counter; Adam(lazy=True), the
dense gradient averaged with ordered_sum) and writes ``DIR/MODE-R.npz`` (the
variables and the optimizer state of rank R) and ``DIR/MODE-R.json`` (the
errors each attempted load raised on rank R):

* ``first``: K steps, save to ``DIR/ckpt``, M more steps;
* ``second``: another initialization and one step, then loads of the broken
  copies the test made (``DIR/bad-*``) and of a wrong variable list, each
  recorded with the values after it; then the good load and the M steps;
* ``third`` (another number of ranks): a load of ``DIR/ckpt``.
"""

import io
import json
import sys
from pathlib import Path

import numpy as np
from jobtools import attempt
from mpi4py import MPI

import sparsegrad as sg
from sparsegrad.distributed.checkpoint import load_checkpoint, save_checkpoint
from sparsegrad.distributed.comm import ordered_sum
from sparsegrad.distributed.embedding import ShardedEmbedding

K, M = 3, 3
NUM_ROWS, DIM = 13, 4
BROKEN = ("bad-missing-rank-file", "bad-corrupt-rank-file", "bad-optimizer-file",
          "bad-no-index")


class Model:
    def __init__(self, comm, seed, scale):
        self.comm = comm
        self.emb = ShardedEmbedding(NUM_ROWS, DIM, comm, seed=seed)
        self.w = sg.Variable(np.linspace(-1.0, 1.0, DIM, dtype=np.float32) * scale,
                             name="w")
        self.counter = sg.Variable(np.int64(seed), trainable=False, name="counter")
        self.opt = sg.optimizers.Adam(learning_rate=0.05, lazy=True)
        # the optimizer sees the shard first, the checkpoint lists w first
        self.variables = [self.w, self.emb.shard, self.counter]

    def step(self, step):
        comm = self.comm
        rank, size = comm.Get_rank(), comm.Get_size()
        ids = np.random.default_rng(1000 + 10 * step + rank).integers(
            0, NUM_ROWS, size=5 + rank)
        with sg.GradientTape() as tape:
            scores = sg.reduce_sum(self.emb(ids) * self.w, axis=1)
            loss = sg.reduce_sum(sg.square(scores - 1.0)) / ids.size
        g_shard, g_w = tape.gradient(loss, [self.emb.shard, self.w])
        g_w = ordered_sum(comm, g_w.numpy()) / np.float32(size)
        self.opt.apply_gradients([(g_shard / size, self.emb.shard), (g_w, self.w)])
        self.counter.assign_add(1)

    def record(self, prefix, out):
        for k, var in enumerate(self.variables):
            out[f"{prefix}/var{k}"] = var.numpy()
        state = io.BytesIO()
        self.opt.save_state(state)
        state.seek(0)
        with np.load(state) as data:
            for key in data.files:
                out[f"{prefix}/opt/{key}"] = data[key]


def main(mode, out):
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    results, errors = {}, {}
    ckpt = out / "ckpt"
    if mode == "first":
        model = Model(comm, seed=7, scale=1.0)
        for step in range(K):
            model.step(step)
        index = save_checkpoint(ckpt, model.variables, model.opt)
        results["index_path"] = np.asarray(index)
        model.record("saved", results)
        for step in range(K, K + M):
            model.step(step)
        model.record("final", results)
    elif mode == "second":
        model = Model(comm, seed=99, scale=-2.0)
        model.step(K + M)
        model.record("before", results)
        for name in BROKEN:
            attempt(errors, name,
                    lambda name=name: load_checkpoint(out / name, model.variables,
                                                      model.opt))
            model.record(name, results)
        attempt(errors, "fewer-variables",
                lambda: load_checkpoint(ckpt, model.variables[:2], model.opt))
        model.record("fewer-variables", results)
        load_checkpoint(ckpt, model.variables, model.opt)
        model.record("loaded", results)
        for step in range(K, K + M):
            model.step(step)
        model.record("final", results)
    else:
        model = Model(comm, seed=7, scale=1.0)
        attempt(errors, "other-size",
                lambda: load_checkpoint(ckpt, model.variables, model.opt))
    np.savez(out / f"{mode}-{rank}.npz", **results)
    (out / f"{mode}-{rank}.json").write_text(json.dumps(errors))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
