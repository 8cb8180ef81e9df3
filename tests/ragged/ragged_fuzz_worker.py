"""Worker of ``test_ragged_fuzz.py``, run in a subprocess: reads a JSON list
of cases on stdin, and for each one builds a RaggedTensor through a public
constructor and, when the constructor accepts it, runs the ragged kernels and
conversions on it.

Before each case it prints ``BEGIN <id>`` and after it ``END <json>`` (both
flushed), so that when a case ends the process the parent knows which one.
The address space is capped a few GiB above what the imports use, so that a
huge request is refused (``buffers.check_allocation`` reads the cap) instead
of swapping.
"""

import json
import resource
import sys
import traceback

import numpy as np

import sparsegrad as sg

HEADROOM = 2 << 30


def _cap_address_space():
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    cap = used + HEADROOM
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _array(spec):
    """An argument from its JSON form: {"array": list, "dtype": name},
    {"tensor": ...} (the same, as a sparsegrad Tensor) or a plain value."""
    if isinstance(spec, dict) and "array" in spec:
        dtype = spec["dtype"]
        if dtype == "object":
            return np.array(spec["array"], dtype=object)
        return np.array(spec["array"], dtype=dtype)
    if isinstance(spec, dict) and "tensor" in spec:
        return sg.constant(_array(spec["tensor"]))
    if isinstance(spec, dict) and "float" in spec:
        return float(spec["float"])
    return spec


def _values(nvals, width):
    base = np.arange(1, nvals + 1, dtype=np.float32)
    if width:
        return np.stack([base * (k + 1) for k in range(width)], axis=1)
    return base


def build(case):
    """The constructor call of a case."""
    kind = case["ctor"]
    args = {k: _array(v) for k, v in case.get("args", {}).items()}
    if kind in ("from_row_splits", "from_row_lengths", "from_value_rowids"):
        values = _values(case["nvals"], case.get("width", 0))
        return getattr(sg.RaggedTensor, kind)(values, **args)
    if kind == "range":
        return sg.ragged.range(**args)
    if kind == "ragged_range":
        splits, values = sg.ragged.ragged_range(**args)
        return sg.RaggedTensor.from_row_splits(values, splits)
    if kind == "constant":
        return sg.ragged.constant(**args)
    raise AssertionError(kind)


def _rows(rt):
    """The rows by Python slicing of the values and splits (the reference)."""
    values = rt.values.numpy().tolist()
    splits = [int(s) for s in rt.row_splits.tolist()]
    return [values[a:b] for a, b in zip(splits[:-1], splits[1:])], splits


def consumers(rt):
    """name -> zero-argument call of every consumer run on an accepted rt."""
    out = {
        "to_list": rt.to_list,
        "numpy": rt.numpy,
        "repr": lambda: repr(rt),
        "row_lengths": rt.row_lengths,
        "value_rowids": rt.value_rowids,
        "to_tensor": rt.to_tensor,
        "to_tensor_shape": lambda: rt.to_tensor(
            shape=(2, 3) + tuple(rt.values.shape[1:])),
        "slice_step_2": lambda: rt[::2].to_list(),
        "slice_reversed": lambda: rt[::-1].to_list(),
        "slice_tail": lambda: rt[1:].to_list(),
        "row_first": lambda: rt[0],
        "row_last": lambda: rt[-1],
        "splits_int32": lambda: rt.with_row_splits_dtype(np.int32).to_list(),
        "splits_int64": lambda: rt.with_row_splits_dtype(np.int64).to_list(),
        "times_two": lambda: (rt * 2).to_list(),
        "plus_self": lambda: (rt + rt).to_list(),
        "map_flat_values": lambda: sg.ragged.map_flat_values(sg.negative, rt),
        "to_scipy": rt.to_scipy,
    }
    numeric = rt.dtype.kind in "iuf"
    for red in ("sum", "max", "min", "mean", "prod"):
        if not numeric:
            continue
        fn = getattr(sg.ragged, f"reduce_{red}")
        for axis in (0, 1, None):
            out[f"reduce_{red}_{axis}"] = (lambda fn=fn, axis=axis:
                                           fn(rt, axis=axis))
        out[f"reduce_{red}_keepdims"] = lambda fn=fn: fn(rt, axis=1, keepdims=True)
    if rt.dtype.kind == "f":
        out["reduce_variance"] = lambda: sg.ragged.reduce_variance(rt)
    return out


def check(rt, exact_sums):
    """Run every consumer; compare the main ones with the Python reference
    (the row sums too when `exact_sums`: small whole numbers).
    Returns name -> "ok", "WRONG: ..." or "<ErrorClass>: message"."""
    rows, splits = _rows(rt)
    results = {}
    for name, call in consumers(rt).items():
        try:
            got = call()
        except Exception as error:   # a clean exception: recorded
            results[name] = f"{type(error).__name__}: {str(error)[:200]}"
            continue
        wrong = None
        if name == "to_list" and got != rows:
            wrong = f"to_list {got!r:.100} != {rows!r:.100}"
        elif name == "value_rowids":
            want = [i for i, r in enumerate(rows) for _ in r]
            if np.asarray(got).tolist() != want:
                wrong = "value_rowids differ from the rows"
        elif name == "reduce_sum_1" and exact_sums and rt.values.ndim == 1:
            want = [float(sum(r)) for r in rows]
            if np.asarray(got.numpy(), np.float64).tolist() != want:
                wrong = f"row sums {got.numpy()!r:.100} != {want!r:.100}"
        elif name == "slice_reversed" and got != rows[::-1]:
            wrong = "reversed rows differ"
        elif name == "to_tensor":
            dense = got.numpy()
            for i, r in enumerate(rows):
                if dense[i, :len(r)].tolist() != r:
                    wrong = f"to_tensor row {i} differs"
                    break
        results[name] = "ok" if wrong is None else "WRONG: " + wrong
    return results, splits


def main():
    cases = json.loads(sys.stdin.read())
    _cap_address_space()
    for case in cases:
        print("BEGIN", case["id"], flush=True)
        report = {"id": case["id"]}
        try:
            rt = build(case)
        except Exception as error:
            report["error"] = f"{type(error).__name__}: {str(error)[:300]}"
        else:
            try:
                exact = case["ctor"].startswith("from_")
                report["consumers"], report["splits"] = check(rt, exact)
                report["nvals"] = int(rt.values.shape[0])
                report["splits_dtype"] = str(rt.row_splits.dtype)
                if case["ctor"] in ("range", "ragged_range"):
                    report["values"] = rt.values.numpy().tolist()[:64]
            except Exception:
                report["harness"] = traceback.format_exc()[-600:]
        print("END", json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
