"""Helpers shared by the training-op tests: the TensorFlow golden fixtures."""

import json
import os

import numpy as np

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def load_golden():
    """{case: (meta, inputs, outputs)} from fixtures/training_ops.npz.

    ``inputs`` maps each TensorFlow input name to a fresh array (state slots
    writeable, scalars 0-d), ``outputs`` each variable to TensorFlow's result.
    """
    cases = {}
    with np.load(os.path.join(FIXTURES, "training_ops.npz")) as data:
        names = sorted({key.rsplit("/", 1)[0] for key in data.files})
        for case in names:
            meta = json.loads(str(data[case + "/meta"]))
            flat = data[case + "/data"]
            inputs, outputs, offset = {}, {}, 0
            for field, shape in meta["fields"]:
                size = int(np.prod(shape, dtype=np.int64))
                value = flat[offset : offset + size].reshape(shape).copy()
                offset += size
                kind, name = field.split("/", 1)
                (inputs if kind == "in" else outputs)[name] = value
            for name, value in meta["ints"].items():
                inputs[name] = np.asarray(value, dtype=np.int64)
            cases[case] = (meta, inputs, outputs)
    return cases


_GOLDEN = None


def golden_cases():
    global _GOLDEN
    if _GOLDEN is None:
        _GOLDEN = load_golden()
    return _GOLDEN


def pytest_generate_tests(metafunc):
    """Parametrize ``golden_case`` (a (name, meta, inputs, outputs) tuple)
    over every fixture case, ``sparse_golden_case`` over the sparse ones."""
    if "golden_case" in metafunc.fixturenames:
        cases = golden_cases()
        names = sorted(cases)
        metafunc.parametrize("golden_case", [(n,) + cases[n] for n in names], ids=names)
    if "sparse_golden_case" in metafunc.fixturenames:
        cases = golden_cases()
        names = sorted(n for n in cases if n.startswith("sparse/"))
        metafunc.parametrize(
            "sparse_golden_case", [(n,) + cases[n] for n in names], ids=names
        )
