"""Malformed row partitions through every public constructor, in subprocesses.

Each batch builds many partitions (cumulative sums that wrap int32 or
int64, the dtypes' extremes, negative, unsorted, mismatched lengths, huge
``nrows``, ranges whose arguments do not fit their dtype) and hands them to
``ragged_fuzz_worker.py`` in one subprocess.  For each case the worker
reports whether the constructor accepted it and, if it did, what every
ragged kernel and conversion did with it (reductions over each axis,
``to_list``, ``to_tensor``, row slices, ...).  The parent asserts:

* the process ended normally (on a crash, the case it was running is named:
  run that case alone to see it);
* a constructor accepts exactly the partitions that are valid, computed here
  with Python ints (no wrapping), and refuses the others with a clean error;
* an accepted RaggedTensor has valid splits equal to the exact ones, and
  every consumer runs and agrees with the rows taken by Python slicing.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import sparsegrad as sg

WORKER = pathlib.Path(__file__).with_name("ragged_fuzz_worker.py")
ROOT = pathlib.Path(sg.__file__).resolve().parents[1]

INT_DTYPES = ("int32", "int64")
# partitions of other dtypes every constructor refuses
OTHER_DTYPES = ("int16", "uint8", "uint32", "uint64", "float64")
NVALS = (0, 1, 8)
# sizes of nrows that no constructor may allocate splits for
HUGE = 1 << 20


def _extremes(dtype):
    info = np.iinfo(dtype)
    top, low = int(info.max), int(info.min)
    return [0, 1, 2, 3, 5, 8, 9, -1, -2, top, top - 1, low, low + 1]


def _spec(values, dtype):
    return {"array": values, "dtype": dtype}


def _fits(values, dtype):
    if dtype.startswith("float"):
        return True
    info = np.iinfo(dtype)
    return all(info.min <= v <= info.max for v in values)


# -- expected verdicts, in Python ints ---------------------------------------


def _valid_splits(s, nvals, validate):
    return (bool(s) and s[0] == 0 and all(a <= b for a, b in zip(s, s[1:]))
            and (s[-1] == nvals or (not validate and s[-1] <= nvals)))


def _splits_of_lengths(lengths):
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return out


def _splits_of_rowids(ids, nrows):
    return [sum(1 for i in ids if i < r) for r in range(nrows + 1)]


def _rowids_rows(ids, nrows):
    """The number of rows a valid (ids, nrows) makes, or None if invalid."""
    if any(a > b for a, b in zip(ids, ids[1:])) or (ids and ids[0] < 0):
        return None
    last = ids[-1] if ids else -1
    n = last + 1 if nrows is None else nrows
    if n < 0 or n < last + 1 or n > HUGE:
        return None
    return n


# -- the cases ------------------------------------------------------------------


def _splits_cases(rng):
    cases = []

    def add(values, dtype, nvals, validate=True, width=0, tensor=False):
        if not _fits(values, dtype):
            return
        spec = _spec(values, dtype)
        valid = dtype in INT_DTYPES and _valid_splits(values, nvals, validate)
        cases.append({
            "ctor": "from_row_splits", "nvals": nvals, "width": width,
            "args": {"row_splits": {"tensor": spec} if tensor else spec,
                     "validate": validate},
            "expect": {"valid": valid, "splits": values},
        })

    for dtype in INT_DTYPES:
        top, low = _extremes(dtype)[9], _extremes(dtype)[11]
        for validate in (True, False):
            for s in ([0, top, -2, 8], [0, top, 8], [0, low, 8], [0, 8, low],
                      [0, top, low, 8], [0, low, top, 8], [1, 8], [0, 9],
                      [0, 5, 3, 8], [0], [0, 8], [0, 0, 8, 8], [0, 4, 8],
                      [0, 4, 7], [-1, 8], [0, top], [top, 8], [low, 0, 8]):
                add(s, dtype, 8, validate)
            add([0], dtype, 0, validate)
            add([0, 0, 0], dtype, 0, validate, width=2)
            add([0, 3, 8], dtype, 8, validate, width=2)
            add([0, 2, 8], dtype, 8, validate, tensor=True)
    for dtype in OTHER_DTYPES:
        add([0, 4, 8], dtype, 8)
        add([0, 8], dtype, 8, validate=False)
    for k in range(160):
        dtype = INT_DTYPES[k % 2]
        nvals = NVALS[k % 3]
        pool = _extremes(dtype)
        length = int(rng.integers(1, 7))
        if k % 4 == 0:   # random extremes
            s = [int(rng.choice(pool)) for _ in range(length)]
        else:            # valid-looking, one entry maybe replaced by an extreme
            s = sorted(int(v) for v in rng.integers(0, nvals + 1, length))
            s[0], s[-1] = 0, nvals
            if k % 4 == 1:
                s[int(rng.integers(0, length))] = int(rng.choice(pool))
        add(s, dtype, nvals, validate=bool(k % 5))
    return cases


def _lengths_cases(rng):
    cases = []

    def add(values, dtype, nvals, width=0, tensor=False):
        if not _fits(values, dtype):
            return
        spec = _spec(values, dtype)
        valid = (dtype in INT_DTYPES and all(v >= 0 for v in values)
                 and sum(values) == nvals)
        cases.append({
            "ctor": "from_row_lengths", "nvals": nvals, "width": width,
            "args": {"row_lengths": {"tensor": spec} if tensor else spec},
            "expect": {"valid": valid, "splits": _splits_of_lengths(values)},
        })

    i64 = 2**63 - 1
    i32 = 2**31 - 1
    # running sums that wrap back to the number of values (8)
    add([i64, i64, 10], "int64", 8)
    add([2**62] * 4 + [8], "int64", 8)
    add([i64, 1, i64, i64, 11], "int64", 8)
    add([i32, i32, 10], "int32", 8)
    add([2**30] * 4 + [8], "int32", 8)
    add([i64, 1], "int64", 8)
    add([i32, 1], "int32", 8)
    add([-1, 9], "int64", 8)
    add([-(2**63), 8], "int64", 8)
    add([-(2**31), 8], "int32", 8)
    add([8, -(2**63)], "int64", 8)
    add([], "int64", 0)
    add([], "int64", 8)
    add([4, 0, 4], "int32", 8, width=2)
    add([4, 4], "int64", 8, tensor=True)
    for dtype in OTHER_DTYPES:
        add([4, 4], dtype, 8)
    for k in range(160):
        dtype = INT_DTYPES[k % 2]
        nvals = NVALS[k % 3]
        pool = _extremes(dtype)
        length = int(rng.integers(0, 6))
        if k % 3 == 0:
            values = [int(rng.choice(pool)) for _ in range(length)]
        else:
            values = [int(v) for v in rng.multinomial(nvals, [1 / (length or 1)]
                                                      * (length or 1))][:length]
            if k % 3 == 1 and length:
                values[int(rng.integers(0, length))] = int(rng.choice(pool))
        add(values, dtype, nvals)
    return cases


def _rowids_cases(rng):
    cases = []
    nrows_pool = [None, -1, 0, 1, 3, 4, 9, 2**31 - 1, 2**31, 2**40, 2**62,
                  2**63 - 1]

    def add(ids, dtype, nvals, nrows, width=0, tensor=False):
        if not _fits(ids, dtype):
            return
        spec = _spec(ids, dtype)
        n = _rowids_rows(ids, nrows)
        valid = (dtype in INT_DTYPES and n is not None and len(ids) == nvals
                 and n <= np.iinfo(dtype).max)
        args = {"value_rowids": {"tensor": spec} if tensor else spec}
        if nrows is not None:
            args["nrows"] = nrows
        cases.append({
            "ctor": "from_value_rowids", "nvals": nvals, "width": width,
            "args": args,
            "expect": {"valid": valid,
                       "splits": _splits_of_rowids(ids, n) if valid else None},
        })

    for dtype in INT_DTYPES:
        for nrows in nrows_pool:
            add([0, 0, 1, 1, 2, 2, 3, 3], dtype, 8, nrows)
            add([0, 2, 1, 3, 3, 3, 3, 3], dtype, 8, nrows)
            add([-1, 0, 0, 0, 1, 1, 1, 1], dtype, 8, nrows)
            add([], dtype, 0, nrows)
            add([0, 0, 1], dtype, 8, nrows)
        top, low = _extremes(dtype)[9], _extremes(dtype)[11]
        add([0, top], dtype, 2, None)
        add([low, 0], dtype, 2, None)
        add([0, 1, top - 1], dtype, 3, None)
        add([low, low], dtype, 2, 5)
        add([0, 1], dtype, 2, 2, width=2, tensor=True)
    for dtype in OTHER_DTYPES:
        add([0, 1], dtype, 2, None)
    for k in range(120):
        dtype = INT_DTYPES[k % 2]
        nvals = NVALS[k % 3]
        pool = _extremes(dtype)
        if k % 3 == 0:
            ids = [int(rng.choice(pool)) for _ in range(nvals)]
        else:
            ids = sorted(int(v) for v in rng.integers(0, 5, nvals))
            if k % 3 == 1 and nvals:
                ids[int(rng.integers(0, nvals))] = int(rng.choice(pool))
        add(ids, dtype, nvals, nrows_pool[int(rng.integers(0, len(nrows_pool)))])
    return cases


def _range_size(start, limit, delta):
    if delta == 0:
        return None
    if (delta > 0 and limit < start) or (delta < 0 and limit > start):
        return 0
    return -(-abs(limit - start) // abs(delta))


def _range_cases(rng):
    cases = []

    def add(ctor, starts, limits, deltas, dtype, tsplits, python=False):
        """One range; Python ints with `dtype` given (range), or arrays of
        `dtype` (range and the raw op)."""
        if not python and not _fits(starts + limits + deltas, dtype):
            return
        if ctor == "ragged_range":
            args = {"starts": _spec(starts, dtype), "limits": _spec(limits, dtype),
                    "deltas": _spec(deltas, dtype), "Tsplits": tsplits}
        elif python:
            args = {"starts": starts, "limits": limits, "deltas": deltas,
                    "dtype": dtype, "row_splits_dtype": tsplits}
        else:
            args = {"starts": _spec(starts, dtype), "limits": _spec(limits, dtype),
                    "deltas": _spec(deltas, dtype), "row_splits_dtype": tsplits}
        expect = {"fits": _fits(starts + limits + deltas, dtype)}
        if dtype.startswith("int") and expect["fits"]:
            n = max(len(starts), len(limits), len(deltas))
            rows = [(starts[i % len(starts)], limits[i % len(limits)],
                     deltas[i % len(deltas)]) for i in range(n)]
            sizes = [_range_size(*r) for r in rows]
            if None in sizes:
                expect["valid"] = False
            else:
                total = sum(sizes)
                if total > np.iinfo(tsplits).max or total >= 2**31:
                    expect["valid"] = False
                elif total <= 10**6:
                    expect["valid"] = True
                    expect["values"] = [v for s, lim, d in rows
                                        for v in range(s, lim, d)][:64]
        cases.append({"ctor": ctor, "args": args, "expect": expect})

    for dtype in ("int32", "int64"):
        top, low = _extremes(dtype)[9], _extremes(dtype)[11]
        for tsplits in INT_DTYPES:
            for s, lim, d in ([0], [top], [1]), ([low], [top], [top]), \
                    ([top], [low], [low]), ([5], [low], [low]), \
                    ([low + 1], [5], [1]), ([0, 0], [top, 1], [1, 1]), \
                    ([low], [top], [2]), ([0], [5], [0]), ([top - 1], [top], [1]), \
                    ([low], [low + 3], [1]), ([0, 3], [3, 0], [1, -1]):
                add("ragged_range", s, lim, d, dtype, tsplits)
                add("range", s, lim, d, dtype, tsplits)
    # Python ints the values' dtype cannot hold: refused, never wrapped
    for s, lim in ((2**40, 2**40 + 3), (-(2**40), -(2**40) + 3), (2**31, 2**31 + 2),
                   (0, 2**31), (-(2**31) - 1, 0)):
        add("range", [s], [lim], [1], "int32", "int64", python=True)
    add("range", [2**63], [2**63 + 2], [1], "int64", "int64", python=True)
    add("range", [2**64 + 1], [3], [1], "int64", "int64", python=True)
    for k in range(80):
        dtype = ("int32", "int64", "float32", "float64")[k % 4]
        tsplits = INT_DTYPES[k % 2]
        # no middling steps: a row is tiny, or too large for memory
        pool = [v for v in _extremes("int32" if dtype == "float32" else
                                     "int64" if dtype == "float64" else dtype)
                if v not in (5, 8, 9)]
        n = int(rng.integers(1, 4))
        args = [[int(rng.choice(pool)) for _ in range(n)] for _ in range(3)]
        add("ragged_range" if k % 2 else "range", *args, dtype, tsplits)
    for dtype in ("int16", "int64"):
        cases.append({"ctor": "constant",
                      "args": {"pylist": [[1, 2], [], [3]], "row_splits_dtype": dtype},
                      "expect": {"valid": dtype == "int64",
                                 "splits": [0, 2, 2, 3]}})
    return cases


def _batches():
    rng = np.random.default_rng(20230)
    batches = {
        "from_row_splits": _splits_cases(rng),
        "from_row_lengths": _lengths_cases(rng),
        "from_value_rowids": _rowids_cases(rng),
        "range": _range_cases(rng),
    }
    for name, cases in batches.items():
        for k, case in enumerate(cases):
            case["id"] = f"{name}-{k}"
    return batches


BATCHES = _batches()

# Consumers that may raise on a valid RaggedTensor, and when.
ALLOWED = {
    # rt[k] past the rows: an IndexError that is also an InvalidArgumentError
    "row_first": lambda rt: rt["splits"] == [0] and "_RowIndexError",
    "row_last": lambda rt: rt["splits"] == [0] and "_RowIndexError",
    "to_scipy": lambda rt: rt.get("width") and "InvalidArgumentError",
    # the dense reductions refuse an empty axis (sparsegrad.reduce_max)
    "reduce_max_None": lambda rt: rt["splits"][-1] == 0 and "InvalidArgumentError",
    "reduce_min_None": lambda rt: rt["splits"][-1] == 0 and "InvalidArgumentError",
}


def _run(cases):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    done = subprocess.run([sys.executable, str(WORKER)], input=json.dumps(cases),
                          capture_output=True, text=True, env=env, timeout=600)
    begun, reports = None, {}
    for line in done.stdout.splitlines():
        if line.startswith("BEGIN "):
            begun = line[6:]
        elif line.startswith("END "):
            report = json.loads(line[4:])
            reports[report["id"]] = report
            begun = None
    by_id = {c["id"]: c for c in cases}
    assert done.returncode == 0 and begun is None, (
        f"the worker ended with return code {done.returncode} while running case "
        f"{begun}: {json.dumps(by_id.get(begun))}\n{done.stderr[-3000:]}"
    )
    return reports


def _problems(case, report):
    """What is wrong with one case's report (an empty list: nothing)."""
    if "harness" in report:
        return [f"harness error: {report['harness']}"]
    expect = case["expect"]
    accepted = "error" not in report
    if not accepted:
        cls = report["error"].split(":")[0]
        if cls not in ("InvalidArgumentError", "ValueError", "TypeError"):
            return [f"refused with {report['error']}"]
        if expect.get("valid") is True:
            return [f"a valid partition was refused: {report['error']}"]
        return []
    problems = []
    if expect.get("valid") is False or expect.get("fits") is False:
        problems.append(f"accepted with splits {report['splits'][:12]}")
    s, nvals = report["splits"], report["nvals"]
    if not (s and s[0] == 0 and all(a <= b for a, b in zip(s, s[1:]))
            and s[-1] <= nvals):
        problems.append(f"invalid splits {s[:12]} for {nvals} values")
    if expect.get("splits") is not None and s != expect["splits"]:
        problems.append(f"splits {s[:12]} != {expect['splits'][:12]}")
    if "values" in expect and report["values"] != expect["values"]:
        problems.append(f"values {report['values'][:8]} != {expect['values'][:8]}")
    info = dict(report, width=case.get("width"))
    for name, outcome in report["consumers"].items():
        if outcome == "ok":
            continue
        allowed = ALLOWED.get(name, lambda rt: None)(info)
        if not allowed or not outcome.startswith(allowed + ":"):
            problems.append(f"{name}: {outcome}")
    return problems


@pytest.mark.parametrize("batch", sorted(BATCHES))
def test_public_constructors_refuse_malformed_partitions_and_never_crash(batch):
    cases = BATCHES[batch]
    reports = _run(cases)
    missing = [c["id"] for c in cases if c["id"] not in reports]
    assert not missing, f"no report for {missing[:5]}"
    failures = {}
    for case in cases:
        problems = _problems(case, reports[case["id"]])
        if problems:
            failures[case["id"]] = (case["args"], problems)
    assert not failures, "\n".join(
        f"{k}: {args} -> {p}" for k, (args, p) in list(failures.items())[:20])
    # the batch covers both verdicts
    verdicts = {"error" in reports[c["id"]] for c in cases}
    assert verdicts == {True, False}
