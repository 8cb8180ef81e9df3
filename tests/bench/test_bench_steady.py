"""Steady-state cases: many consecutive steps per process, cut into blocks."""

import argparse
import json
import statistics

import pytest

from sparsegrad.bench import cli, end_to_end, harness, segment
from sparsegrad.bench.case import Case


def bench(argv):
    parser = argparse.ArgumentParser(prog="sparsegrad bench")
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def test_block_medians_on_known_times():
    times = [3.0, 1.0, 2.0, 10.0, 30.0, 20.0, 5.0, 4.0, 6.0, 99.0]
    # blocks (3, 1, 2), (10, 30, 20), (5, 4, 6); the trailing 99 is no block
    assert harness.block_medians(times, 3) == [2.0, 20.0, 5.0]
    assert harness.block_medians(times, 5) == [3.0, 6.0]   # (20, 5, 4, 6, 99)
    assert harness.block_medians(times, 1) == times
    assert harness.block_medians(times, 10) == [5.5]
    assert harness.block_medians(times, 11) == []
    assert harness.block_medians([], 2) == []
    with pytest.raises(ValueError, match="block must be at least 1, got 0"):
        harness.block_medians(times, 0)


def test_block_ratio_is_slowest_over_fastest():
    assert harness.block_ratio([2.0, 20.0, 5.0]) == 10.0
    assert harness.block_ratio([4.0, 4.0]) == 1.0
    assert harness.block_ratio([4.0]) is None
    assert harness.block_ratio([]) is None
    assert harness.block_ratio([0.0, 1.0]) is None


def test_case_checks_steps_and_block():
    assert Case("a/b", "").steps is None and Case("a/b", "").block == 10
    with pytest.raises(ValueError, match="case 'a/b': steps must be at least 1, got 0"):
        Case("a/b", "", steps=0)
    with pytest.raises(ValueError, match="case 'a/b': block must be at least 1, got 0"):
        Case("a/b", "", steps=5, block=0)


def test_calls_per_process():
    steady, plain = Case("a/step", "", steps=100), Case("a/op", "")
    assert harness.calls_per_process(steady, harness.Settings()) == 100
    assert harness.calls_per_process(steady, harness.Settings(quick=True)) == 20
    assert harness.calls_per_process(steady, harness.Settings(steps=7)) == 7
    assert harness.calls_per_process(Case("a/s", "", steps=5),
                                     harness.Settings(quick=True)) == 5
    assert harness.calls_per_process(plain, harness.Settings(repeat=4, steps=7)) == 4


def test_the_training_steps_are_steady_state_cases():
    suite = {case.name: case for _, case in harness.load_suite().entries}
    for name in ("segment/embedding_bag_step", "segment/embedding_bag_step_rowwise",
                 "segment/embedding_bag_step_rowwise_fp16",
                 "segment/embedding_bag_step_rowwise_bf16", "end_to_end/ctr_step"):
        assert (suite[name].steps, suite[name].block) == (100, 10), name
    assert end_to_end.CASES[0].steps == 100
    assert suite["segment/embedding_bag_forward"].steps is None


STEADY_CASES = '''
from sparsegrad.bench.case import Case


def _count(quick):
    state = {"n": 0}

    def step():
        state["n"] += 1
        return sum(range(100 * state["n"]))

    return step


CASES = [
    Case("fake/step", "a step", {"sparsegrad": _count, "numpy": _count},
         steps=7, block=3),
    Case("fake/op", "an op", {"sparsegrad": _count}),
]
'''


@pytest.fixture
def steady_suite(make_suite):
    return make_suite("fakesteady", STEADY_CASES)


def test_a_steady_case_times_its_steps_per_process_in_blocks(steady_suite):
    settings = harness.Settings(libraries=("sparsegrad", "numpy"), rounds=2,
                                repeat=2)
    step, op = harness.run_cases(steady_suite.entries, settings, bandwidth=1e9)
    assert (step["steps"], step["block"]) == (7, 3)
    assert op["steps"] is None
    assert len(op["results"]["sparsegrad"]["times"]) == 4   # --repeat 2 x 2 rounds
    assert "blocks" not in op["results"]["sparsegrad"]
    for lib in ("sparsegrad", "numpy"):
        res = step["results"][lib]
        times = res["times"]
        assert len(times) == 14                 # 7 steps in each of 2 processes
        first, second = times[:7], times[7:]
        # two whole blocks of 3 per process; the seventh step is in none
        assert res["blocks"] == [
            [statistics.median(first[0:3]), statistics.median(first[3:6])],
            [statistics.median(second[0:3]), statistics.median(second[3:6])]]
        pooled = [m for b in res["blocks"] for m in b]
        assert res["block_ratio"] == max(pooled) / min(pooled)
        assert res["block_ratio_within"] == max(max(b) / min(b)
                                                for b in res["blocks"])
        assert res["median"] == statistics.median(times)

    table = harness.format_table([step, op], settings.libraries)
    header, _, step_line, op_line = table.splitlines()[:4]
    assert header.split()[:4] == ["case", "sparsegrad", "spread", "blocks"]
    ratio = step["results"]["sparsegrad"]["block_ratio"]
    assert step_line.split()[4] == f"{ratio:.2f}x"
    assert op_line.split()[4] == "—"
    assert "blocks: steady-state cases only" in table
    # without a steady-state case, no blocks column
    assert "blocks" not in harness.format_table([op], settings.libraries)


def test_steps_option_overrides_the_case(steady_suite):
    settings = harness.Settings(libraries=("sparsegrad",), rounds=1, steps=4)
    (step,) = harness.run_cases(steady_suite.entries[:1], settings, bandwidth=1e9)
    res = step["results"]["sparsegrad"]
    assert step["steps"] == 4 and len(res["times"]) == 4
    assert res["blocks"] == [[statistics.median(res["times"][:3])]]
    assert res["block_ratio"] is None and res["block_ratio_within"] is None


def test_quick_run_of_the_bag_step_writes_block_medians(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert bench(["--quick", "--filter", "segment/embedding_bag_step$",
                  "--libraries", "sparsegrad,fbgemm", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert ("; steady-state cases: 20 steps per process, blocks of 10; quick "
            "sizes:") in text
    data = json.loads(out.read_text())
    assert data["settings"]["quick_steps"] == 20 and data["settings"]["steps"] is None
    (case,) = data["cases"]
    assert case["name"] == "segment/embedding_bag_step"
    assert (case["steps"], case["block"]) == (20, 10)
    res = case["results"]["sparsegrad"]
    times = res["times"]
    assert len(times) == 20
    assert res["blocks"] == [[statistics.median(times[:10]),
                              statistics.median(times[10:])]]
    assert res["block_ratio"] == pytest.approx(max(res["blocks"][0])
                                               / min(res["blocks"][0]))
    assert case["results"]["fbgemm"] == {"status": "n/a"}   # not a peer of Adagrad
    (line,) = [x for x in text.splitlines()
               if x.startswith("segment/embedding_bag_step ")]
    assert f"{res['block_ratio']:.2f}x" in line


def test_bag_floors_count_rowwise_state_and_half_rows():
    ids, indptr = segment._bag_ids(True)
    width = 16
    n_bags, distinct = indptr.size - 1, len(set(ids.tolist()))
    lookup = ids.size * width * 4 + n_bags * width * 4
    floors = {c.name: c.floor_bytes(True) for c in segment.CASES}
    assert floors["segment/embedding_bag_forward"] == lookup
    # + upstream read, table and accumulator rows read and written
    assert floors["segment/embedding_bag_step"] == (
        lookup + n_bags * width * 4 + 4 * distinct * width * 4)
    # one float32 accumulator per row instead of a row of them
    assert floors["segment/embedding_bag_step_rowwise"] == (
        lookup + n_bags * width * 4 + 2 * distinct * (width * 4 + 4))
    # half table rows; float32 output, upstream and accumulators
    for name in ("fp16", "bf16"):
        assert floors[f"segment/embedding_bag_step_rowwise_{name}"] == (
            ids.size * width * 2 + 2 * n_bags * width * 4
            + 2 * distinct * (width * 2 + 4))
    assert floors["segment/embedding_bag_forward_float16"] == (
        ids.size * width * 2 + n_bags * width * 2)
