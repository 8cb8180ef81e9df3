"""The half-precision cases of ``sparsegrad bench`` (issue 31): they run at
the quick size, their steps agree with the float32 ones to half-precision
rounding, and the resident-memory figure reaches the table and the JSON."""

import argparse
import json

import ml_dtypes
import numpy as np
import pytest
import scipy.sparse

import sparsegrad as sg
from sparsegrad.bench import cli, harness, inputs, memory, segment, training_ops, worker
from sparsegrad.bench.case import Case, Unsupported

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
MiB = 1 << 20


def bench(argv):
    parser = argparse.ArgumentParser(prog="sparsegrad bench")
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


# ---------------------------------------------------------------------------
# Resident memory.


def test_resident_bytes_follows_touched_memory():
    before, source = memory.resident_bytes()
    assert source == "VmRSS" and before > 0           # Linux: /proc is there
    block = np.ones(64 * MiB, np.uint8)               # 64 MiB, every page touched
    after, _ = memory.resident_bytes()
    assert after - before >= 60 * MiB
    del block


def test_resident_bytes_falls_back_to_the_peak(tmp_path):
    no_line = tmp_path / "status"
    no_line.write_text("Name:\tpython\nVmPeak:\t 1 kB\n")
    for status in ("/no/such/status", str(no_line)):
        n_bytes, source = memory.resident_bytes(status)
        assert source == "ru_maxrss"
        # the peak is at least what is resident now
        assert n_bytes >= memory.resident_bytes()[0]


def test_growth_of_two_readings():
    assert memory.growth((10 * MiB, "VmRSS"), (74 * MiB, "VmRSS")) == {
        "rss_growth": 64 * MiB, "rss_source": "VmRSS"}
    assert memory.growth((5, "VmRSS"), (9, "ru_maxrss")) == {}
    assert memory.growth((None, None), (9, "VmRSS")) == {}


MEMORY_CASES = '''
from sparsegrad.bench.case import Case, Unsupported


def _allocates(quick):
    import numpy as np

    block = np.ones(48 << 20, np.uint8)      # kept by the callable
    return lambda: int(block[::4096].sum())


def _small(quick):
    return lambda: None


def _unsupported(quick):
    raise Unsupported("numpy has no kernel for float8 here")


CASES = [
    Case("mem/big", "keeps 48 MiB", {"sparsegrad": _allocates, "numpy": _small},
         memory=True),
    Case("mem/small", "keeps nothing", {"sparsegrad": _small},
         memory_baseline="mem/big"),
    Case("mem/unsupported", "a peer without the kernel",
         {"sparsegrad": _small, "numpy": _unsupported}),
]
'''


@pytest.fixture
def memory_suite(make_suite):
    return make_suite("membench", MEMORY_CASES)


def test_worker_reports_the_growth_of_its_setup(memory_suite):
    out = worker.measure("membench.cases", "mem/big", "sparsegrad", repeat=2,
                         quick=True)
    assert out["status"] == "ok" and len(out["times"]) == 2
    assert out["rss_source"] == "VmRSS"
    assert 46 * MiB <= out["rss_growth"] <= 64 * MiB
    with pytest.raises(ValueError, match="warmup must be at least 0, got -1"):
        worker.measure("membench.cases", "mem/big", "sparsegrad", repeat=1,
                       warmup=-1)


def test_an_unsupported_setup_is_a_missing_peer(memory_suite):
    out = worker.measure("membench.cases", "mem/unsupported", "numpy", repeat=1)
    assert out == {"status": "missing", "reason": "numpy has no kernel for float8 here"}


def test_memory_reaches_the_table_and_the_json(memory_suite):
    settings = harness.Settings(libraries=("sparsegrad", "numpy"), rounds=2,
                                repeat=1, quick=True)
    rows = harness.run_cases(memory_suite.entries, settings, bandwidth=1e9)
    big, small, unsupported = rows
    ours = big["results"]["sparsegrad"]
    assert len(ours["rss_growths"]) == 2                     # one per process
    assert ours["rss_growth"] == int(np.median(ours["rss_growths"]))
    assert ours["rss_growth"] >= 46 * MiB and ours["rss_source"] == "VmRSS"
    assert "rss_growth" in big["results"]["numpy"]           # every library
    assert (big["memory"], big["memory_baseline"], big["memory_ratio"]) == (
        True, None, None)
    assert (small["memory"], small["memory_baseline"]) == (True, "mem/big")
    assert small["memory_ratio"] == pytest.approx(
        small["results"]["sparsegrad"]["rss_growth"] / ours["rss_growth"])
    assert small["memory_ratio"] < 0.2
    assert unsupported["results"]["numpy"] == {
        "status": "missing", "reason": "numpy has no kernel for float8 here"}
    assert not unsupported["memory"] and unsupported["memory_ratio"] is None

    table = harness.format_table(rows, settings.libraries)
    header, _, first, second, third = table.splitlines()[:5]
    assert header.split()[:4] == ["case", "sparsegrad", "spread", "memory"]
    end = header.index("memory") + len("memory")    # the column is right-aligned
    assert first[:end].endswith(harness.format_bytes(ours["rss_growth"]))
    assert second[:end].endswith(
        harness.format_bytes(small["results"]["sparsegrad"]["rss_growth"]))
    assert third[:end].endswith("—")      # a case without memory shows none
    assert (f"memory: mem/small "
            f"{harness.format_bytes(small['results']['sparsegrad']['rss_growth'])}, "
            f"{small['memory_ratio']:.2f}x mem/big "
            f"({harness.format_bytes(ours['rss_growth'])})") in table
    assert "[1] numpy has no kernel for float8 here" in table
    # without a memory case, no memory column
    plain = harness.format_table([unsupported], settings.libraries)
    assert "memory" not in plain.splitlines()[0]


def test_case_memory_baseline_implies_memory():
    assert Case("a/b", "", memory_baseline="a/c").memory is True
    assert Case("a/b", "").memory is False
    assert str(Unsupported("why")) == "why"


# ---------------------------------------------------------------------------
# The cases exist, are described, and run at the quick size.

HALF_CASES = {
    "training_ops/adagrad_step_bfloat16": {"sparsegrad", "torch"},
    "training_ops/adagrad_step_bfloat16_nearest": {"sparsegrad"},
    "training_ops/adam_lazy_step_bfloat16": {"sparsegrad", "torch"},
    "training_ops/adam_lazy_step_bfloat16_nearest": {"sparsegrad"},
    "segment/embedding_bag_forward_float16": {"sparsegrad", "torch", "fbgemm"},
    "segment/embedding_bag_step_rowwise_fp16": {"sparsegrad", "fbgemm"},
    "segment/embedding_bag_step_rowwise_bf16": {"sparsegrad", "fbgemm"},
}


def test_the_half_cases_and_their_peers():
    suite = {case.name: case for _, case in harness.load_suite().entries}
    for name, libraries in HALF_CASES.items():
        assert set(suite[name].setups) == libraries, name
    for name in ("adagrad_step", "adam_lazy_step"):
        base = suite[f"training_ops/{name}"]
        half = suite[f"training_ops/{name}_bfloat16"]
        assert base.memory and base.memory_baseline is None
        assert half.memory and half.memory_baseline == base.name
        assert not suite[f"training_ops/{name}_bfloat16_nearest"].memory
    for name in ("segment/embedding_bag_step_rowwise_fp16",
                 "segment/embedding_bag_step_rowwise_bf16"):
        assert suite[name].steps == segment.BAG_STEPS


def test_half_floors_count_two_byte_rows_and_the_float32_gradient():
    ids, values, (_, width) = inputs.sparse_gradient(True)
    distinct = np.unique(ids).size
    floors = {c.name: c.floor_bytes(True) for c in training_ops.CASES}
    for name, n_state in (("adagrad_step", 2), ("adam_lazy_step", 3)):
        half = 2 * n_state * distinct * width * 2 + values.size * 4 + ids.nbytes
        full = 2 * n_state * distinct * width * 4 + values.size * 4 + ids.nbytes
        assert floors[f"training_ops/{name}"] == full
        assert floors[f"training_ops/{name}_bfloat16"] == half
        assert floors[f"training_ops/{name}_bfloat16_nearest"] == half


def test_quick_run_of_the_half_cases(tmp_path, capsys):
    out = tmp_path / "bench.json"
    names = [name for name in HALF_CASES] + ["training_ops/adagrad_step",
                                             "training_ops/adam_lazy_step"]
    status = bench(["--quick", "--libraries", "sparsegrad", "--repeat", "1",
                    "--steps", "2", "--json", str(out),
                    "--filter", ",".join(f"^{n}$" for n in names)])
    assert status == 0
    text = capsys.readouterr().out
    data = json.loads(out.read_text())
    rows = {row["name"]: row for row in data["cases"]}
    assert set(rows) == set(names)
    for name, row in rows.items():
        res = row["results"]["sparsegrad"]
        assert res["status"] == "ok", (name, res)
        assert len(res["times"]) == (2 if row["steps"] else 1)
        # every case's JSON has the resident-memory growth of its process
        assert isinstance(res["rss_growth"], int) and res["rss_source"] == "VmRSS"
        assert res["rss_growths"] == [res["rss_growth"]]
    for name in ("adagrad_step", "adam_lazy_step"):
        base, half = rows[f"training_ops/{name}"], rows[f"training_ops/{name}_bfloat16"]
        assert half["memory_baseline"] == base["name"]
        growth = (half["results"]["sparsegrad"]["rss_growth"],
                  base["results"]["sparsegrad"]["rss_growth"])
        if growth[1] > 0:
            assert half["memory_ratio"] == pytest.approx(growth[0] / growth[1])
            assert f"memory: {half['name']} " in text
        else:
            assert half["memory_ratio"] is None
    assert "memory" in text.splitlines()[5].split()       # the table's header


# ---------------------------------------------------------------------------
# The half steps agree with the float32 steps.


def _ulp(x, dtype):
    """The spacing of `dtype` at each value of `x` (float64)."""
    return np.spacing(np.abs(x).astype(dtype)).astype(np.float64)


OPTIMIZERS = {
    "adagrad": lambda sg, options: sg.optimizers.Adagrad(training_ops.LEARNING_RATE,
                                                         **options),
    "adam_lazy": lambda sg, options: sg.optimizers.Adam(1e-3, lazy=True, **options),
}


def _float32_reference(make, start, n_steps):
    """The float32 optimizer (float32 slots) from the upcast half table."""
    ids, values, shape = inputs.sparse_gradient(True, scale=1e-2)
    table = sg.Variable(start.astype(np.float32))
    opt = make(sg, {})
    grad = sg.IndexedSlices(values, ids, dense_shape=shape)
    for _ in range(n_steps):
        opt.apply_gradients([(grad, table)])
    return table.numpy().astype(np.float64), ids


@pytest.mark.parametrize("options", [training_ops.HALF_SLOTS,
                                     training_ops.NEAREST_SLOTS],
                         ids=["stochastic", "nearest"])
@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_the_bfloat16_step_rounds_the_float32_step(kind, options):
    make = OPTIMIZERS[kind]
    step, table = training_ops.optimizer_step(
        True, lambda sg: make(sg, options), "bfloat16")
    assert table.dtype == BFLOAT16
    start = table.numpy().copy()
    np.testing.assert_array_equal(
        start, inputs.table(True, scale=1e-2).astype(BFLOAT16))
    step()
    got = table.numpy().astype(np.float64)
    reference, ids = _float32_reference(make, start, 1)
    start = start.astype(np.float64)
    # each stored weight: the float32 step rounded once (within half a unit to
    # nearest, a unit stochastically), give or take what the bfloat16 slots'
    # own rounding moves the update (2**-7 of it)
    unit = 1.0 if options.get("stochastic_rounding") else 0.5
    bound = unit * _ulp(reference, BFLOAT16) + 2.0**-7 * np.abs(reference - start)
    assert np.all(np.abs(got - reference) <= bound)
    untouched = np.setdiff1d(np.arange(start.shape[0]), ids)
    np.testing.assert_array_equal(got[untouched], start[untouched])
    assert np.all(np.any(got[np.unique(ids)] != start[np.unique(ids)], axis=1))


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_ten_bfloat16_steps_follow_the_float32_trajectory(kind):
    make = OPTIMIZERS[kind]
    step, table = training_ops.optimizer_step(
        True, lambda sg: make(sg, training_ops.HALF_SLOTS), "bfloat16")
    start = table.numpy().astype(np.float64)
    for _ in range(10):
        step()
    got = table.numpy().astype(np.float64)
    reference, ids = _float32_reference(make, start.astype(BFLOAT16), 10)
    moved = np.linalg.norm(reference - start)
    assert moved > 0.1 * np.linalg.norm(start[np.unique(ids)])
    assert np.linalg.norm(got - reference) <= 0.1 * moved


def _bag_csr(ids, indptr, n_rows):
    return scipy.sparse.csr_array(
        (np.ones(ids.size, np.float32), ids.astype(np.int32), indptr),
        shape=(indptr.size - 1, n_rows))


def test_the_float16_bag_forward_rounds_the_float32_one():
    run, table = segment.sparsegrad_bag(True, step=False, dtype="float16")
    got = np.asarray(run())
    assert got.dtype == np.float16
    _, ids, indptr, _ = segment._bag_inputs(True)
    upcast = table.numpy().astype(np.float32)
    reference = np.asarray(sg.nn.embedding_lookup_sparse(
        sg.Variable(upcast), _bag_csr(ids, indptr, upcast.shape[0]),
        combiner="sum")).astype(np.float64)
    ulp = _ulp(reference, np.float16)
    assert np.all(np.abs(got.astype(np.float64) - reference) <= 0.5 * ulp)


def _check_half_bag_step(dtype):
    run, table = segment.sparsegrad_bag(True, step=True, rowwise=True, dtype=dtype)
    start = table.numpy()
    _, ids, indptr, upstream = segment._bag_inputs(True)
    np.testing.assert_array_equal(start, segment._bag_inputs(True)[0].astype(dtype))
    run()
    got = table.numpy()
    # the float32 step from the upcast table (the half step looks the table
    # up as float32: the same gradient), each weight rounded to nearest once
    ref = sg.Variable(start.astype(np.float32))
    with sg.GradientTape() as tape:
        out = sg.nn.embedding_lookup_sparse(ref, _bag_csr(ids, indptr, start.shape[0]),
                                            combiner="sum")
    grad = tape.gradient(out, ref, output_gradients=upstream)
    sg.optimizers.RowwiseAdagrad(segment.BAG_LEARNING_RATE).apply_gradients(
        [(grad, ref)])
    np.testing.assert_array_equal(got.view(np.uint16),
                                  ref.numpy().astype(dtype).view(np.uint16))
    touched = np.unique(ids)
    untouched = np.setdiff1d(np.arange(start.shape[0]), touched)
    np.testing.assert_array_equal(got[untouched], start[untouched])
    assert np.all(np.any(got[touched] != start[touched], axis=1))


def test_the_float16_rowwise_bag_step_rounds_the_float32_one():
    _check_half_bag_step("float16")


def test_the_bfloat16_rowwise_bag_step_rounds_the_float32_one():
    _check_half_bag_step(BFLOAT16)
