"""``sparsegrad bench``: the command line, the worker processes, the JSON."""

import argparse
import json
import statistics
import textwrap

import pytest

from sparsegrad import _kernels
from sparsegrad.bench import cli, harness, worker
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
    assert "slices/deduplicate" in table and "bandwidth:" in table

    data = json.loads(out.read_text())
    assert data["settings"]["libraries"] == ["sparsegrad", "numpy"]
    assert data["settings"]["rounds"] == 1 and data["settings"]["quick"] is True
    bandwidth = data["bandwidth"]
    assert bandwidth["bandwidth"] == max(bandwidth["single"], bandwidth["all_cores"])
    assert bandwidth["bandwidth"] > 0
    before, after = bandwidth["measurements"]
    assert bandwidth["bandwidth"] == max(before["bandwidth"], after["bandwidth"])
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
def fake_suite(tmp_path, monkeypatch):
    """A package ``fakebench.cases`` of test cases, importable here and by
    the worker processes."""
    package = tmp_path / "fakebench"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "cases.py").write_text(textwrap.dedent(FAKE_CASES))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return harness.load_suite(["fakebench.cases"])


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
    # a library that failed once is not started again in the next round
    assert lines == ["[1/2] fake/sum sparsegrad round 1/2",
                     "[1/2] fake/sum nosuchlib_xyz round 1/2",
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
