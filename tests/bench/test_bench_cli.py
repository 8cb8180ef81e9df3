"""``sparsegrad bench``: the command line, the worker processes, the JSON."""

import argparse
import json
import statistics
import sys

import pytest

from sparsegrad import _kernels
from sparsegrad.bench import cli, harness, sizes, worker
from sparsegrad.bench.case import LIBRARIES


def bench(argv):
    """Run ``sparsegrad bench argv`` as ``sparsegrad.__main__`` does."""
    parser = argparse.ArgumentParser(prog="sparsegrad bench")
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def test_quick_run_writes_consistent_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    status = bench(["--quick", "--filter", "slices/deduplicate", "--libraries",
                    "sparsegrad,numpy", "--repeat", "2", "--json", str(out)])
    assert status == 0
    table = capsys.readouterr().out
    assert "slices/deduplicate" in table and "floor: in-place update" in table
    assert "GFLOP/s" in table

    data = json.loads(out.read_text())
    assert data["settings"]["libraries"] == ["sparsegrad", "numpy"]
    assert data["settings"]["rounds"] == 1 and data["settings"]["quick"] is True
    bandwidth = data["bandwidth"]
    assert bandwidth["bandwidth"] == max(bandwidth["single"], bandwidth["all_cores"])
    assert bandwidth["bandwidth"] > 0
    before, after = bandwidth["measurements"]
    assert bandwidth["bandwidth"] == max(before["bandwidth"], after["bandwidth"])
    assert bandwidth["gemm"] == max(before["gemm"], after["gemm"]) > 0
    (case,) = data["cases"]
    assert case["name"] == "slices/deduplicate"
    from sparsegrad.bench import slices

    (expected,) = [c for c in slices.CASES if c.name == "slices/deduplicate"]
    assert case["floor_bytes"] == expected.floor_bytes(True) > 0
    assert case["floor"] == pytest.approx(case["floor_bytes"] / bandwidth["bandwidth"])
    ours, theirs = case["results"]["sparsegrad"], case["results"]["numpy"]
    for res in (ours, theirs):
        assert res["status"] == "ok"
        assert len(res["times"]) == 2          # one round of two calls
        assert all(t > 0 for t in res["times"])
        assert res["median"] == statistics.median(res["times"])
        assert res["min"] <= res["median"] <= res["max"]
    assert ours["version"] == data["machine"]["versions"]["sparsegrad"]
    assert case["ratios"] == {"numpy": pytest.approx(theirs["median"] / ours["median"])}
    assert case["x_floor"] == pytest.approx(ours["median"] / case["floor"])


FAKE_CASES = '''
from sparsegrad.bench.case import Case


def _ok(quick):
    import numpy as np

    data = np.arange(100 if quick else 1000, dtype=np.float64)
    return data.sum


def _no_module(quick):
    raise ImportError("No module named 'fakelib'")


def _broken(quick):
    raise RuntimeError("setup went wrong")


CASES = [
    Case("fake/sum", "sum of a range",
         {"sparsegrad": _ok, "nosuchlib_xyz": _ok, "numpy": _no_module},
         lambda quick: 800 if quick else 8000),
    Case("fake/broken", "a setup that fails", {"sparsegrad": _broken}),
]
'''


@pytest.fixture
def fake_suite(make_suite):
    """A package ``fakebench.cases`` of test cases, importable here and by
    the worker processes."""
    return make_suite("fakebench", FAKE_CASES)


def test_missing_and_failing_libraries_are_reported(fake_suite):
    settings = harness.Settings(libraries=("sparsegrad", "nosuchlib_xyz", "numpy"),
                                rounds=2, repeat=2, quick=True)
    lines = []
    rows = harness.run_cases(fake_suite.entries, settings, bandwidth=1e9,
                             progress=lines.append)
    first, second = rows
    res = first["results"]
    assert res["sparsegrad"]["status"] == "ok"
    assert len(res["sparsegrad"]["times"]) == 4   # two rounds of two calls
    # the library cannot be imported; the setup raises ImportError
    assert res["nosuchlib_xyz"] == {"status": "missing",
                                    "reason": "nosuchlib_xyz not installed"}
    assert res["numpy"] == {"status": "missing",
                            "reason": "numpy: No module named 'fakelib'"}
    assert first["ratios"] == {}
    assert first["floor"] == pytest.approx(800 / 1e9)
    assert first["x_floor"] == pytest.approx(res["sparsegrad"]["median"] / 800e-9)
    # a library that is not installed is never started (no progress line);
    # one that failed once is not started again in the next round
    assert lines == ["[1/2] fake/sum sparsegrad round 1/2",
                     "[1/2] fake/sum numpy round 1/2",
                     "[1/2] fake/sum sparsegrad round 2/2",
                     "[2/2] fake/broken sparsegrad round 1/2"]
    broken = second["results"]
    assert broken["sparsegrad"]["status"] == "error"
    assert "RuntimeError: setup went wrong" in broken["sparsegrad"]["reason"]
    assert broken["numpy"] == {"status": "n/a"}
    assert second["floor"] is None and second["x_floor"] is None

    table = harness.format_table(rows, settings.libraries)
    assert "[1] nosuchlib_xyz not installed" in table
    assert "[2] numpy: No module named 'fakelib'" in table
    assert "[3] sparsegrad: exit status 1: RuntimeError: setup went wrong" in table
    (fake_sum,) = [line for line in table.splitlines() if line.startswith("fake/sum")]
    assert "— [1]" in fake_sum and "— [2]" in fake_sum


def test_worker_measures_in_process(fake_suite):
    out = worker.measure("fakebench.cases", "fake/sum", "sparsegrad", repeat=3,
                         quick=True)
    assert out["status"] == "ok" and len(out["times"]) == 3
    with pytest.raises(KeyError, match="no case 'fake/nope'"):
        worker.measure("fakebench.cases", "fake/nope", "numpy", repeat=1)
    with pytest.raises(KeyError, match="no setup for library 'torch'"):
        worker.measure("fakebench.cases", "fake/broken", "torch", repeat=1)


def test_list_names_every_case_of_every_area(capsys):
    assert bench(["--list"]) == 0
    listed = capsys.readouterr().out
    suite = harness.load_suite()
    assert {"slices", "training_ops", "clip", "segment", "autodiff"} <= {
        path.rsplit(".", 1)[-1] for path, _ in suite.entries}
    for _, case in suite.entries:
        assert f"{case.name}  " in listed
        assert case.description in listed


def test_filter_selects_by_substring_comma_and_regex(capsys):
    assert bench(["--list", "--filter", "clip/global_norm,^slices/dedup"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()
             if not line.startswith("note:")]
    assert names == ["slices/deduplicate", "clip/global_norm"]


def test_filter_without_match_is_an_error(capsys):
    assert bench(["--filter", "no/such/case"]) == 2
    err = capsys.readouterr().err
    assert "no case matches --filter no/such/case" in err
    assert bench(["--filter", "(unclosed"]) == 2
    assert "neither part of a case name nor a valid regular expression" in \
        capsys.readouterr().err


def test_bad_libraries_and_python_options(capsys):
    assert bench(["--libraries", "sparsegrad,jax"]) == 2
    assert "unknown ['jax']" in capsys.readouterr().err
    assert bench(["--python", "tensorflow=/no/such/python"]) == 2
    assert "not an executable file" in capsys.readouterr().err
    for bad in (["--python", "tensorflow"], ["--repeat", "0"], ["--warmup", "-1"],
                ["--rounds", "two"]):
        with pytest.raises(SystemExit) as exc:
            bench(bad)
        assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--python takes LIBRARY=PATH, got 'tensorflow'" in err
    assert "expected at least 1, got 0" in err and "expected at least 0, got -1" in err
    assert "expected a whole number, got 'two'" in err


def test_select_and_format_helpers():
    from sparsegrad.bench.case import Case

    entries = [("m", Case("a/one", "")), ("m", Case("a/two", "")),
               ("m", Case("b/one", ""))]
    everything = ["a/one", "a/two", "b/one"]
    assert [c.name for _, c in harness.select(entries, [])] == everything
    assert [c.name for _, c in harness.select(entries, ["one", "a/t"])] == [
        "a/one", "a/two", "b/one"]
    assert [c.name for _, c in harness.select(entries, ["^b/"])] == ["b/one"]
    assert harness.format_seconds(1.5e-6) == "1.50 µs"
    assert harness.format_seconds(0.25) == "250 ms"
    assert harness.format_seconds(None) == "—"
    assert LIBRARIES[0] == "sparsegrad"


def test_script_entry_point_defaults_and_legacy_option(capsys):
    assert cli.main(["--list"], filters=["autodiff/tape_chain"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()
             if not line.startswith("note:")]
    assert names == ["autodiff/tape_chain"]
    # a --filter of the caller's own replaces the script's
    assert cli.main(["--list", "--filter", "clip/global_norm"],
                    filters=["autodiff/"]) == 0
    assert capsys.readouterr().out.startswith("clip/global_norm ")
    # --tf-python PATH is read as --python tensorflow=PATH (checked, then refused)
    assert cli.main(["--tf-python", "/no/such/python"], filters=["clip/"]) == 2
    assert "--python tensorflow=/no/such/python: not an executable" in \
        capsys.readouterr().err


def test_peers_get_their_own_openmp_wait_policy(monkeypatch):
    # Importing sparsegrad sets OMP_WAIT_POLICY=PASSIVE when the user did not;
    # a peer's worker must load its OpenMP runtime without that choice.
    monkeypatch.setattr(_kernels, "OMP_WAIT_POLICY_DEFAULTED", True)
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    assert "OMP_WAIT_POLICY" not in harness.worker_env()
    monkeypatch.setattr(_kernels, "OMP_WAIT_POLICY_DEFAULTED", False)
    assert harness.worker_env()["OMP_WAIT_POLICY"] == "PASSIVE"


def test_progress_names_only_the_libraries_that_run(fake_suite):
    libraries = ("sparsegrad", "nosuchlib_xyz")
    lines = []
    rows = harness.run_cases(fake_suite.entries[:1],
                             harness.Settings(libraries=libraries, repeat=1),
                             bandwidth=1e9, progress=lines.append)
    assert lines == [f"[1/1] fake/sum sparsegrad round {r}/3" for r in (1, 2, 3)]
    assert rows[0]["results"]["nosuchlib_xyz"] == {
        "status": "missing", "reason": "nosuchlib_xyz not installed"}
    # given an interpreter of its own, the library is started (once: its
    # worker finds it missing, and a failed library is not started again)
    lines.clear()
    settings = harness.Settings(libraries=libraries, repeat=1,
                                pythons={"nosuchlib_xyz": sys.executable})
    rows = harness.run_cases(fake_suite.entries[:1], settings, bandwidth=1e9,
                             progress=lines.append)
    assert "[1/1] fake/sum nosuchlib_xyz round 1/3" in lines
    assert sum("nosuchlib_xyz" in line for line in lines) == 1
    assert rows[0]["results"]["nosuchlib_xyz"] == {
        "status": "missing", "reason": "nosuchlib_xyz not installed"}


def test_absent_libraries():
    assert harness.absent_libraries(["sparsegrad", "numpy"]) == {}
    assert harness.absent_libraries(["numpy", "nosuchlib_xyz", "no_such.sub"]) == {
        "nosuchlib_xyz": "nosuchlib_xyz not installed",
        "no_such.sub": "no_such.sub not installed"}
    assert harness.absent_libraries(["nosuchlib_xyz"],
                                    {"nosuchlib_xyz": sys.executable}) == {}
    assert cli.libraries_line(["sparsegrad", "numpy", "nosuchlib_xyz"], {}) == (
        "libraries: sparsegrad, numpy; not run: nosuchlib_xyz not installed")
    assert cli.libraries_line(["sparsegrad", "nosuchlib_xyz"],
                              {"nosuchlib_xyz": "/env/python"}) == (
        "libraries: sparsegrad, nosuchlib_xyz (under /env/python)")


def test_bench_command_skips_a_peer_that_is_not_installed(monkeypatch, capsys):
    # tensorflow stands for a peer that is not installed here, whatever is
    monkeypatch.setitem(harness.IMPORT_NAMES, "tensorflow", "nosuchlib_xyz")
    assert bench(["--quick", "--filter", "clip/global_norm", "--libraries",
                  "sparsegrad,tensorflow", "--repeat", "1"]) == 0
    captured = capsys.readouterr()
    progress = [line for line in captured.err.splitlines() if line.startswith("[")]
    assert progress == ["[1/1] clip/global_norm sparsegrad round 1/1"]
    header = captured.out.splitlines()
    assert header[2] == ("medians of 1 round(s) x 1 calls; quick sizes: "
                         + sizes.describe(True))
    assert header[3] == "libraries: sparsegrad; not run: tensorflow not installed"
    assert "[1] tensorflow not installed" in captured.out


def test_quick_help_states_the_sizes(capsys):
    parser = argparse.ArgumentParser(prog="sparsegrad bench")
    cli.add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("--quick a smoke run: one round of 3 calls (at most 20 steps for the "
            "steady-state cases) at small sizes (" + sizes.describe(True) + ")") in text
    assert sizes.QUICK_STEPS == 20
    assert ("--steps STEPS timed steps per process of the steady-state cases "
            "(default: the case's, 100; at most 20 with --quick)") in text
    assert sizes.describe(True).startswith(
        "embedding table 10,000 x 16 float32, 512 Zipf ids; dense Adam 10,000 "
        "float32; clip 10 dense 64 x 64 float32; segment sums 10,000 values into "
        "200 segments; ragged.range 2,000 rows; ragged reduce 20,000 float32 "
        "values; embedding bag 128 bags; CTR step "
        "batch 256, table 10,000 rows; bandwidth update 16 MiB; GEMM rate 128 x 128 "
        "float32")
    assert sizes.describe(False).startswith(
        "embedding table 1,000,000 x 64 float32, 16,384 Zipf ids")


def test_the_stated_sizes_are_those_run():
    from sparsegrad.bench import end_to_end, inputs, training_ops

    n_rows, width, n_ids = sizes.EMBEDDING.quick
    assert inputs.table(True).shape == (n_rows, width)
    assert inputs.sparse_gradient(True)[1].shape == (n_ids, width)
    assert inputs.table(False).shape == sizes.EMBEDDING.full[:2]
    batch, table_rows = sizes.END_TO_END.quick
    ids, labels = end_to_end.make_batches(True)[0]
    assert ids.shape == (batch, end_to_end.FIELDS) and labels.shape == (batch,)
    assert end_to_end.initial_values(True)[0].shape == (table_rows, end_to_end.WIDTH)
    (adam,) = [c for c in training_ops.CASES if c.name == "training_ops/apply_adam"]
    # var, m and v read and written, the gradient read: 7 float32 per element
    assert adam.floor_bytes(True) == 7 * 4 * sizes.DENSE_UPDATE.quick
    assert adam.floor_bytes(False) == 7 * 4 * sizes.DENSE_UPDATE.full


def test_the_update_floor_counts_bytes_read_and_written(monkeypatch):
    # update_bandwidth adds one in place: 2 x n_bytes over the fastest call
    from sparsegrad.bench import machine

    seen = []

    def fake_time_calls(fn, repeat):
        fn()
        seen.append(repeat)
        return [0.5, 0.25, 1.0]

    monkeypatch.setattr(machine, "time_calls", fake_time_calls)
    assert machine.update_bandwidth(n_bytes=1 << 20, repeat=3) == 2 * (1 << 20) / 0.25
    assert machine.update_bandwidth(n_bytes=1 << 20, repeat=3, n_threads=2) == \
        2 * (1 << 20) / 0.25
    assert machine.gemm_rate(n=64, repeat=3) == 2 * 64 ** 3 / 0.25
    assert seen == [3, 3, 3]
    for bad in (dict(n_bytes=100), dict(n_threads=0)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            machine.update_bandwidth(**bad)
    with pytest.raises(ValueError, match="n must be"):
        machine.gemm_rate(n=8)


def test_the_ctr_floor_adds_its_matrix_products():
    from sparsegrad.bench import end_to_end

    (case,) = end_to_end.CASES
    batch, _ = sizes.END_TO_END.full
    # forward, weights' gradient and input's gradient of 416 -> 64 -> 1
    assert case.floor_flops(False) == 3 * 2 * batch * (416 * 64 + 64)
    rows = [{"floor_bytes": 1e9, "floor_flops": case.floor_flops(False),
             "results": {"sparsegrad": {"status": "ok", "median": 1.0}}}]
    harness.set_floors(rows, bandwidth=1e10, gemm=1e11)
    assert rows[0]["floor"] == pytest.approx(0.1 + case.floor_flops(False) / 1e11)
    harness.set_floors(rows, bandwidth=1e10)     # no rate: no floor
    assert rows[0]["floor"] is None and rows[0]["x_floor"] is None


def test_small_step_case_runs_on_one_thread():
    from sparsegrad.bench import training_ops

    (case,) = [c for c in training_ops.CASES
               if c.name == "training_ops/small_adagrad_step"]
    assert case.steps == 1000 and case.threads == 1
    assert set(case.setups) == {"sparsegrad", "torch", "tensorflow"}
    assert case.floor_bytes(True) == 4 * 64 * 16 * 4 + 64 * 16 * 4 + 64 * 8
    import sparsegrad as sg

    before = sg.get_num_threads()
    try:
        out = worker.measure("training_ops", case.name, "sparsegrad", repeat=3,
                             warmup=0, quick=True, n_threads=2)
        assert out["status"] == "ok" and len(out["times"]) == 3
        assert sg.get_num_threads() == 1        # the case's, not the run's 2
    finally:
        sg.set_num_threads(before)
