"""FBGEMM as a peer of the embedding-bag cases: missing when it cannot be
loaded, and (where it is installed) the same numbers as sparsegrad."""

import argparse

import numpy as np
import pytest
import scipy.sparse

import sparsegrad as sg
from sparsegrad.bench import cli, harness, segment, worker


def bench(argv):
    parser = argparse.ArgumentParser(prog="sparsegrad bench")
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def _broken_package(root, name, raise_line):
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text(f"import sys\n{raise_line}\n")


@pytest.mark.parametrize("raise_line, reason", [
    ('raise OSError("libfbgemm.so: undefined symbol: _ZN3c10\\nsecond line")',
     "fbgemm cannot be loaded: OSError: libfbgemm.so: undefined symbol: _ZN3c10"),
    ('raise RuntimeError("operator fbgemm::x already registered")',
     "fbgemm cannot be loaded: RuntimeError: operator fbgemm::x already registered"),
    ("import nosuchdependency_xyz",
     "fbgemm cannot be loaded: ModuleNotFoundError: No module named "
     "'nosuchdependency_xyz'"),
])
def test_a_library_that_fails_to_load_is_missing(tmp_path, monkeypatch, raise_line,
                                                 reason):
    _broken_package(tmp_path, "fakefbgemm_xyz", raise_line)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(harness.IMPORT_NAMES, "fbgemm", "fakefbgemm_xyz")
    out = worker.measure("segment", "segment/embedding_bag_step_rowwise", "fbgemm",
                         repeat=1, quick=True)
    assert out == {"status": "missing", "reason": reason}
    monkeypatch.setitem(harness.IMPORT_NAMES, "fbgemm", "nosuchlib_xyz")
    out = worker.measure("segment", "segment/embedding_bag_step_rowwise", "fbgemm",
                         repeat=1, quick=True)
    assert out == {"status": "missing", "reason": "fbgemm not installed"}


def test_a_worker_whose_fbgemm_cannot_load_gives_a_footnote(tmp_path, monkeypatch):
    # a package named fbgemm_gpu that fails as a build for another PyTorch
    # does; the worker process imports it and reports it missing
    _broken_package(tmp_path, "fbgemm_gpu",
                    'raise OSError("fbgemm_gpu_py.so: undefined symbol: _ZN2at")')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    suite = harness.load_suite(["segment"])
    entries = harness.select(suite.entries, ["embedding_bag_step_rowwise_fp16"])
    settings = harness.Settings(libraries=("sparsegrad", "fbgemm"), rounds=2,
                                quick=True, steps=2)
    lines = []
    (row,) = harness.run_cases(entries, settings, bandwidth=1e9,
                               progress=lines.append)
    reason = ("fbgemm cannot be loaded: OSError: fbgemm_gpu_py.so: undefined "
              "symbol: _ZN2at")
    assert row["results"]["sparsegrad"]["status"] == "ok"
    assert row["results"]["fbgemm"] == {"status": "missing", "reason": reason}
    assert row["ratios"] == {}
    name = "segment/embedding_bag_step_rowwise_fp16"
    assert lines == [f"[1/1] {name} sparsegrad round 1/2",
                     f"[1/1] {name} fbgemm round 1/2",
                     f"[1/1] {name} sparsegrad round 2/2"]
    table = harness.format_table([row], settings.libraries)
    assert f"[1] {reason}" in table
    assert "— [1]" in table.splitlines()[2]


def test_bench_runs_the_bag_cases_without_fbgemm(monkeypatch, capsys):
    # fbgemm stands for a peer that is not installed here, whatever is
    monkeypatch.setitem(harness.IMPORT_NAMES, "fbgemm", "nosuchlib_xyz")
    assert bench(["--quick", "--filter", "embedding_bag_step_rowwise(_fp16)?$",
                  "--libraries", "sparsegrad,fbgemm", "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "libraries: sparsegrad; not run: fbgemm not installed" in out
    rowwise = [x for x in out.splitlines()
               if x.startswith("segment/embedding_bag_step_rowwise ")]
    fp16 = [x for x in out.splitlines()
            if x.startswith("segment/embedding_bag_step_rowwise_fp16 ")]
    assert len(rowwise) == len(fp16) == 1
    assert "— [1]" in rowwise[0] and "— [1]" in fp16[0]
    assert "[1] fbgemm not installed" in out


def test_list_shows_the_fbgemm_cases(capsys):
    assert bench(["--list", "--filter", "segment/embedding_bag"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == ["segment/embedding_bag_forward",
                     "segment/embedding_bag_forward_float16",
                     "segment/embedding_bag_step",
                     "segment/embedding_bag_step_rowwise",
                     "segment/embedding_bag_step_rowwise_fp16",
                     "segment/embedding_bag_step_rowwise_bf16"]
    cases = {c.name: c for c in segment.CASES}
    for name in ("forward", "forward_float16"):
        assert "fbgemm" in cases[f"segment/embedding_bag_{name}"].setups
    for name in ("", "_fp16", "_bf16"):
        assert set(cases[f"segment/embedding_bag_step_rowwise{name}"].setups) == {
            "sparsegrad", "fbgemm"}


def _fbgemm_or_skip():
    try:
        import fbgemm_gpu.split_table_batched_embeddings_ops_training  # noqa: F401
    except (ImportError, OSError, RuntimeError) as exc:
        pytest.skip(f"fbgemm_gpu cannot be loaded: {exc}")


def _reference_step(table, ids, indptr, upstream):
    """The row-wise Adagrad step of the bag cases in float64."""
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    grad = np.zeros(table.shape)
    np.add.at(grad, ids, upstream.astype(np.float64)[rows])
    touched = np.unique(ids)
    acc = segment.ROWWISE_INITIAL_ACCUMULATOR + (grad[touched] ** 2).mean(1)
    out = table.astype(np.float64)
    out[touched] -= (segment.BAG_LEARNING_RATE * grad[touched]
                     / (np.sqrt(acc) + segment.ROWWISE_EPSILON)[:, None])
    return out


def test_fbgemm_bag_agrees_with_sparsegrad():
    _fbgemm_or_skip()
    table, ids, indptr, upstream = segment._bag_inputs(True)
    bag, t_ids, offsets, up = segment.fbgemm_bag(True)
    var = sg.Variable(table)
    csr = scipy.sparse.csr_array(
        (np.ones(ids.size, np.float32), ids.astype(np.int32), indptr),
        shape=(indptr.size - 1, table.shape[0]))
    with sg.GradientTape() as tape:
        ours = sg.nn.embedding_lookup_sparse(var, csr, combiner="sum")
    theirs = bag(t_ids, offsets)
    np.testing.assert_allclose(theirs.detach().numpy(), np.asarray(ours),
                               rtol=1e-6, atol=1e-7)
    # one row-wise Adagrad step each
    theirs.backward(up)
    grad = tape.gradient(ours, var, output_gradients=upstream)
    sg.optimizers.RowwiseAdagrad(segment.BAG_LEARNING_RATE).apply_gradients(
        [(grad, var)])
    ours_w = var.numpy()
    theirs_w = bag.split_embedding_weights()[0].detach().numpy()
    reference = _reference_step(table, ids, indptr, upstream)
    assert np.sum(np.any(theirs_w != table, axis=1)) == np.unique(ids).size
    for got in (ours_w, theirs_w):
        assert np.linalg.norm(got - reference) <= 2e-7 * np.linalg.norm(reference)
    assert np.linalg.norm(theirs_w - ours_w) <= 2e-7 * np.linalg.norm(ours_w)
    np.testing.assert_allclose(theirs_w, ours_w, rtol=0, atol=1e-6)


def test_fbgemm_half_step_rounds_the_float_step():
    _fbgemm_or_skip()
    table, ids, indptr, upstream = segment._bag_inputs(True)
    bag, t_ids, offsets, up = segment.fbgemm_bag(True, weights="float16")
    bag(t_ids, offsets).backward(up)
    got = bag.split_embedding_weights()[0].detach().float().numpy()
    reference = _reference_step(table.astype(np.float16), ids, indptr, upstream)
    # each stored value is the float64 step rounded to nearest float16 (half
    # a unit; 0.51 leaves room for the float32 arithmetic before rounding)
    ulp = np.spacing(np.abs(reference).astype(np.float16)).astype(np.float64)
    assert np.all(np.abs(got - reference) <= 0.51 * ulp)


def test_fbgemm_and_sparsegrad_float16_steps_agree():
    # both round the same float32 row-wise step to float16 when given the
    # same upstream gradient: sparsegrad's is float16 (its bag's output is),
    # so FBGEMM gets that one, as float32 (with the cases' float32 one, rows
    # whose repeats cancel differ by more than a unit)
    _fbgemm_or_skip()
    table = segment._bag_inputs(True)[0]
    bag, t_ids, offsets, up = segment.fbgemm_bag(True, weights="float16")
    bag(t_ids, offsets).backward(up.half().float())
    theirs = bag.split_embedding_weights()[0].detach().float().numpy()
    run, var = segment.sparsegrad_bag(True, step=True, rowwise=True,
                                      dtype="float16")
    run()
    ours = var.numpy().astype(np.float32)
    start = table.astype(np.float16).astype(np.float32)
    ulp = np.spacing(np.abs(theirs).astype(np.float16)).astype(np.float32)
    assert np.all(np.abs(ours - theirs) <= ulp + 2.0**-9 * np.abs(theirs - start))
    assert np.array_equal(np.any(ours != start, axis=1),
                          np.any(theirs != start, axis=1))


def test_fbgemm_float16_forward_agrees_with_sparsegrad():
    _fbgemm_or_skip()
    bag, t_ids, offsets, _ = segment.fbgemm_bag(True, weights="float16",
                                                output="float16")
    theirs = bag(t_ids, offsets).detach().float().numpy()
    run, _ = segment.sparsegrad_bag(True, step=False, dtype="float16")
    ours = np.asarray(run()).astype(np.float32)
    ulp = np.spacing(np.abs(ours).astype(np.float16)).astype(np.float32)
    assert np.all(np.abs(ours - theirs) <= ulp)
