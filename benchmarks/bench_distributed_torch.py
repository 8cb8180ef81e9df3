"""The PyTorch peer of part ``bytes`` of ``bench_distributed.py``.

Run by every rank of its own MPI job (``mpiexec -n P``); it never imports
sparsegrad, and ``bench_distributed.py --all`` launches it after
sparsegrad's jobs, with the same rank counts and repeat count.  MPI only
starts the processes: the ranks meet through ``torch.distributed`` with the
gloo backend, rank and size read from the launcher's environment
(``PMI_RANK``/``PMI_SIZE`` under MPICH's Hydra, ``OMPI_COMM_WORLD_*`` under
Open MPI), ``MASTER_ADDR=127.0.0.1`` and a free ``MASTER_PORT`` chosen by
the driver.  Every rank gets the same gradient as in sparsegrad's job: the
ids of ``bench_distributed.zipf_ids`` and the rows of
``bench_distributed.rank_rows``.

``sparse``
    The gradient that ``nn.Embedding(1_000_000, 64, sparse=True)`` produces
    for those ids when the rows are the gradient of its output: an
    uncoalesced COO tensor of 16,384 rows, one per id, duplicates included.
    It is built directly with ``torch.sparse_coo_tensor``; before timing,
    each rank checks once that a real ``Embedding`` backward gives the same
    indices and values.  Combined with ``dist.all_reduce(grad)``.

    What gloo does with it (PyTorch 2.13,
    ``torch/csrc/distributed/c10d/ProcessGroupGlooDetail.hpp``, class
    ``AsyncSparseAllreduceWork``): it **coalesces the tensor first**, so a
    rank sends its ``d`` distinct rows, not its 16,384 ids; then three ring
    all-gathers: 9 int64 of metadata per rank (the sizes and the nnz), the
    int64 indices (``gloo::allgatherv``) and the float32 values
    (``gloo::allgatherv``); every rank then adds the P gathered sparse
    tensors and coalesces the sum, which is copied into the input tensor.
    gloo's ring all-gather forwards the blocks: rank ``r`` sends to rank
    ``r + 1`` every block except that of rank ``r + 1``, so rank ``r``
    sends ``(P - 1) 72 + 264 sum_{j != r + 1} d_j`` bytes; averaged over
    the ranks, ``(P - 1) (72 + 264 mean(d))``, sparsegrad's count plus the
    metadata.

``dense``
    ``dist.all_reduce`` of the dense 1,000,000 x 64 float32 gradient, the
    one ``nn.Embedding(sparse=False)`` would produce (built outside the
    timing; sparsegrad's dense row also densifies its IndexedSlices and
    keeps the touched rows, inside its timing).  gloo's ``allreduce`` for
    CPU tensors is a ring (reduce-scatter then all-gather, in segments):
    each rank sends ``2 (P - 1) / P`` of the 256 MB buffer.

PyTorch has no byte counter: the bytes are the analytic counts above.  As
a cross-check, each rank also reads the bytes its process wrote through
system calls (``wchar`` of ``/proc/self/io``) around one call: gloo's TCP
transport on the loopback writes with ``writev``, so this is the payload
plus gloo's small message headers (``-1`` where ``/proc/self/io`` is not
readable).

The time of a call is the slowest rank's (``dist.barrier()``, the call,
then the maximum over the ranks), the median of ``--repeat`` calls after
one untimed call; a fresh copy of the input is made before each call,
outside the timing, since ``all_reduce`` overwrites it.  Rank 0 writes the
result as JSON (``--json``) and the combined sparse gradient (sorted
indices and their rows) to ``--result``, so that the driver can compare it
with sparsegrad's.
"""

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_distributed import IDS_PER_RANK, ROWS, WIDTH, close, rank_rows, zipf_ids


def launcher_rank_size():
    """Rank and size from the MPI launcher's environment."""
    for rank, size in (("PMI_RANK", "PMI_SIZE"),
                       ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if rank in os.environ and size in os.environ:
            return int(os.environ[rank]), int(os.environ[size])
    raise SystemExit("no PMI_RANK/PMI_SIZE (or OMPI_COMM_WORLD_*): run me "
                     "under mpiexec")


def written_bytes():
    """Bytes this process has written by system calls, or -1."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("wchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def gather_list(value):
    """`value` of every rank, as a list (on every rank)."""
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


def slowest(seconds):
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def embedding_gradient(ids, rows):
    """The sparse gradient of a real ``nn.Embedding(sparse=True)`` backward
    whose output gradient is `rows`."""
    table = torch.nn.Embedding(ROWS, WIDTH, sparse=True)
    out = table(torch.from_numpy(ids))
    out.backward(torch.from_numpy(rows))
    return table.weight.grad


def run(repeat, result_path):
    rank, size = launcher_rank_size()
    dist.init_process_group("gloo", rank=rank, world_size=size,
                            timeout=datetime.timedelta(minutes=10))
    torch.set_num_threads(1)
    ids = zipf_ids(rank)
    rows = rank_rows(rank)
    grad = torch.sparse_coo_tensor(torch.from_numpy(ids)[None], torch.from_numpy(rows),
                                   (ROWS, WIDTH), check_invariants=False)
    reference = embedding_gradient(ids, rows)
    as_embedding = bool(
        not reference.is_coalesced() and reference._nnz() == IDS_PER_RANK
        and torch.equal(reference._indices(), grad._indices())
        and torch.equal(reference._values(), grad._values()))
    del reference
    dense = torch.zeros(ROWS, WIDTH)
    dense.index_add_(0, torch.from_numpy(ids), torch.from_numpy(rows))
    distinct = int(np.unique(ids).size)

    inputs = {"sparse": lambda: grad.clone(), "dense": lambda: dense.clone()}
    result = {"library": "torch", "torch": torch.__version__, "ranks": size,
              "distinct_per_rank": gather_list(distinct),
              "as_embedding_grad": all(gather_list(as_embedding)), "paths": {}}
    outputs = {}
    for path, make in inputs.items():
        tensor = make()
        dist.barrier()
        before = written_bytes()
        dist.all_reduce(tensor)
        after = written_bytes()
        outputs[path] = tensor
        times = []
        for _ in range(repeat):
            tensor = make()
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(tensor)
            times.append(slowest(time.perf_counter() - start))
            del tensor
        written = after - before if before >= 0 and after >= 0 else -1
        result["paths"][path] = {"bytes_written": gather_list(written),
                                 "seconds": times}
    sparse = outputs["sparse"]
    indices = sparse._indices()[0].numpy()
    values = sparse._values().numpy()
    touched = np.flatnonzero(outputs["dense"].abs().sum(1).numpy())
    same = bool(sparse.is_coalesced()
                and np.isin(touched, indices).all()
                and close(outputs["dense"].numpy()[indices], values))
    result["same_result"] = all(gather_list(same))
    result["distinct_all"] = int(indices.size)
    if rank == 0 and result_path:
        np.savez(result_path, indices=indices, values=values)
    dist.destroy_process_group()
    return result if rank == 0 else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7,
                        help="timed calls of each path")
    parser.add_argument("--json", metavar="FILE",
                        help="rank 0 writes the result here")
    parser.add_argument("--result", metavar="FILE.npz",
                        help="rank 0 writes the combined sparse gradient here")
    args = parser.parse_args(argv)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    result = run(args.repeat, args.result)
    if result is not None:
        text = json.dumps(result)
        if args.json:
            Path(args.json).write_text(text)
        else:
            print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
