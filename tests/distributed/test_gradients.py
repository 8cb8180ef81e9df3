"""allreduce_gradients, the distributed global norm and DistributedOptimizer,
in real MPI jobs of 2 and 3 ranks (uneven batches) against one process."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import sparsegrad as sg

_spec = importlib.util.spec_from_file_location(
    "gradients_job", Path(__file__).resolve().parent / "workers" / "gradients_job.py")
job = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(job)

RANKS = (2, 3)


@pytest.fixture(scope="module", params=RANKS, ids=lambda n: f"{n}ranks")
def run(request, tmp_path_factory, mpirun):
    """(size, per-rank arrays, per-rank errors) of one job."""
    size = request.param
    outdir = tmp_path_factory.mktemp(f"gradients{size}")
    mpirun(size, "gradients_job.py", outdir)
    arrays = [dict(np.load(outdir / f"rank{r}.npz")) for r in range(size)]
    errors = [json.loads((outdir / f"rank{r}.json").read_text()) for r in range(size)]
    return size, arrays, errors


def reference(size):
    """Gradients of the whole batch in one process (loss: mean over it)."""
    ids, y = job.full_batch(size)
    variables = job.model()
    grads = job.gradients(variables, ids, y, ids.shape[0])
    return grads[0].deduplicate(), grads[1].numpy(), grads[2].numpy()


def test_sum_equals_the_gradient_of_the_concatenated_batch(run):
    size, arrays, _ = run
    table, kernel, bias = reference(size)
    for a in arrays:
        np.testing.assert_array_equal(a["sparse/table/indices"], table.indices.numpy())
        np.testing.assert_allclose(a["sparse/table/values"], table.values.numpy(),
                                   rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(a["sparse/kernel"], kernel, rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(a["sparse/bias"], bias, rtol=2e-6, atol=1e-7)


def test_every_rank_has_the_same_bits(run):
    _, arrays, _ = run
    for a in arrays[1:]:
        assert a.keys() == arrays[0].keys()
        for key in a:
            if key in ("sparse_bytes", "local_rows") or key.startswith(
                    ("clip/shard", "sharded/owned", "sharded/shard", "sharded/v")):
                continue
            np.testing.assert_array_equal(a[key], arrays[0][key], err_msg=key)


def test_dense_path_gives_the_sparse_path_bits(run):
    _, arrays, _ = run
    for a in arrays:
        for key in ("table/indices", "table/values", "kernel", "bias"):
            np.testing.assert_array_equal(a[f"dense/{key}"], a[f"sparse/{key}"])
            np.testing.assert_array_equal(a[f"auto/{key}"], a[f"sparse/{key}"])


def test_mean_divides_the_sum_by_the_number_of_ranks(run):
    size, arrays, _ = run
    for a in arrays:
        np.testing.assert_array_equal(a["mean/table/indices"],
                                      a["sparse/table/indices"])
        np.testing.assert_array_equal(a["mean/table/values"],
                                      a["sparse/table/values"] / np.float32(size))
        np.testing.assert_array_equal(a["mean/kernel"],
                                      a["sparse/kernel"] / np.float32(size))


def test_none_counts_as_zeros_and_dense_mixes_with_sparse(run):
    size, arrays, _ = run
    ids, y = job.full_batch(size)
    n_last = job.batch_sizes(size)[-1]
    table, _, _ = reference(size)
    variables = job.model()
    # the kernel's gradient without the last rank's examples
    head = job.gradients(variables, ids[:-n_last], y[:-n_last], ids.shape[0])
    dense_table = np.zeros((job.N_ROWS, job.DIM), np.float32)
    dense_table[table.indices.numpy()] = table.values.numpy()
    for a in arrays:
        np.testing.assert_allclose(a["mixed/kernel"], head[1].numpy(), rtol=2e-6,
                                   atol=1e-7)
        np.testing.assert_allclose(a["mixed/table"], dense_table, rtol=2e-6,
                                   atol=1e-7)


def test_bytes_sent_by_the_sparse_path(run):
    size, arrays, _ = run
    row_bytes = job.DIM * 4
    for a in arrays:
        rows = int(a["local_rows"])
        # indices and rows to every other rank, then the dense kernel and bias
        dense = (2 * job.DIM * job.HIDDEN + job.HIDDEN) * 4 * (size - 1)
        assert int(a["sparse_bytes"]) == rows * (8 + row_bytes) * (size - 1) + dense


@pytest.mark.parametrize("case, fragment", [
    ("bad_pair", "grads_and_vars[1] must be a (gradient, variable) pair"),
    ("bad_shape", "differs in shape or dtype across ranks"),
    ("no_dense_shape", "without a dense_shape"),
    ("count", "different numbers of gradients"),
    ("clip_dtype", "different dtypes"),
    ("bad_variable", "does not fit variables[2]"),
])
def test_bad_input_on_one_rank_raises_on_every_rank(run, case, fragment):
    _, _, errors = run
    for rank, e in enumerate(errors):
        assert e[case] is not None, f"rank {rank} did not raise for {case}"
        assert e[case][0] == "InvalidArgumentError", e[case]
        assert fragment in e[case][1], e[case]


def test_failed_update_changes_nothing(run):
    _, arrays, _ = run
    for a in arrays:
        assert a["bad_variable/unchanged"].all()


def test_distributed_global_norm(run):
    size, arrays, _ = run
    squares = 25.0 + sum((r + 1) * (r + 1.0) ** 2 for r in range(size))
    norm = np.float32(np.sqrt(squares))
    scale = np.float32(1.0) * np.minimum(np.float32(1) / norm, np.float32(1.0))
    for rank, a in enumerate(arrays):
        assert a["clip/norm"] == norm
        np.testing.assert_array_equal(a["clip/replicated"],
                                      np.float32([3.0, 4.0]) * scale)
        np.testing.assert_array_equal(a["clip/shard"],
                                      np.full(rank + 1, rank + 1.0, np.float32) * scale)


def test_ordered_sum_of_a_large_buffer_adds_in_rank_order(run):
    size, arrays, _ = run
    expected = job.local_big(0)
    assert expected.nbytes > sg.distributed.comm.SMALL_SUM_BYTES
    for r in range(1, size):
        expected = expected + job.local_big(r)
    for a in arrays:
        np.testing.assert_array_equal(a["ordered_sum"], expected)


def test_training_matches_one_process(run):
    size, arrays, _ = run
    ids, y = job.full_batch(size)
    variables = job.model()
    opt = job.optimizer()
    for _ in range(job.STEPS):
        opt.apply_gradients(zip(job.gradients(variables, ids, y, ids.shape[0]),
                                variables))
    for a in arrays:
        for v in variables:
            np.testing.assert_allclose(a[f"trained/{v.name}"], v.numpy(), rtol=1e-5,
                                       atol=1e-6, err_msg=v.name)
        np.testing.assert_allclose(a["trained/m"], opt.get_slot(variables[0],
                                                                "m").numpy(),
                                   rtol=1e-5, atol=1e-7)


def test_one_rank_without_mpiexec():
    """In one process (a world of one rank) the result is the local one."""
    from sparsegrad.distributed import allreduce_gradients

    g = sg.IndexedSlices(np.float32([[1.0], [2.0], [4.0]]), [3, 0, 3],
                         dense_shape=(5, 1))
    out, none = allreduce_gradients([g, None])
    assert none is None
    np.testing.assert_array_equal(out.indices.numpy(), [0, 3])
    np.testing.assert_array_equal(out.values.numpy(), [[2.0], [5.0]])


@pytest.mark.parametrize("kwargs, error, fragment", [
    ({"reduction": "max"}, sg.errors.InvalidArgumentError, "reduction"),
    ({"sparse_as_dense_threshold": -1}, sg.errors.InvalidArgumentError,
     "sparse_as_dense_threshold"),
    ({"sparse_as_dense_threshold": float("nan")}, sg.errors.InvalidArgumentError,
     "sparse_as_dense_threshold"),
    ({"comm": "world"}, TypeError, "comm must be"),
])
def test_bad_options(kwargs, error, fragment):
    from sparsegrad.distributed import allreduce_gradients

    with pytest.raises(error, match=fragment):
        allreduce_gradients([np.ones(2)], **kwargs)


def test_sharded_training_matches_one_process(run):
    """A ShardedEmbedding's rows, their Adam slots and the replicated layers
    after DistributedOptimizer steps clipped by the norm over all ranks."""
    size, arrays, _ = run
    ids, y = job.full_batch(size)
    variables = job.full_sharded_model()
    opt = job.optimizer()
    norms = []
    for _ in range(job.STEPS):
        grads = job.gradients(variables, ids, y, ids.shape[0])
        norms.append(float(sg.global_norm(grads).numpy()))
        opt.apply_gradients(zip(grads, variables))
    assert max(norms) > opt.global_clipnorm      # the clip is in play
    table, v = variables[0].numpy(), opt.get_slot(variables[0], "v").numpy()
    for a in arrays:
        owned = a["sharded/owned"]
        np.testing.assert_allclose(a["sharded/shard"], table[owned], rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(a["sharded/v"], v[owned], rtol=1e-4, atol=1e-9)
        np.testing.assert_allclose(a["sharded/kernel"], variables[1].numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert sorted(np.concatenate([a["sharded/owned"] for a in arrays]).tolist()) \
        == list(range(job.N_ROWS))


def test_same_bits_for_any_thread_count(run, mpirun, tmp_path):
    """The job again with two kernel threads per rank: every array the same."""
    size, arrays, _ = run
    mpirun(size, "gradients_job.py", tmp_path, env={"SPARSEGRAD_NUM_THREADS": "2"})
    for rank, a in enumerate(arrays):
        again = np.load(tmp_path / f"rank{rank}.npz")
        for key in a:
            np.testing.assert_array_equal(again[key], a[key], err_msg=key)
