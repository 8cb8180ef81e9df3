"""Helpers shared by the training-op tests: the TensorFlow golden fixtures."""

import json
import os

import ml_dtypes
import numpy as np

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


# The half fixtures store their values' bits, and the dtype by name.
HALF_DTYPES = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}


def load_golden(filename="training_ops.npz"):
    """{case: (meta, inputs, outputs)} from fixtures/`filename`.

    ``inputs`` maps each TensorFlow input name to a fresh array (state slots
    writeable, scalars 0-d), ``outputs`` each variable to TensorFlow's result.
    A case whose meta names a half ``dtype`` (training_ops_half.npz) holds
    the bits of its values; its arrays come back in that dtype.
    """
    cases = {}
    with np.load(os.path.join(FIXTURES, filename)) as data:
        names = sorted({key.rsplit("/", 1)[0] for key in data.files})
        for case in names:
            meta = json.loads(str(data[case + "/meta"]))
            flat = data[case + "/data"]
            if "dtype" in meta:
                flat = flat.view(HALF_DTYPES[meta["dtype"]])
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


_GOLDEN = {}


def golden_cases(filename="training_ops.npz"):
    if filename not in _GOLDEN:
        _GOLDEN[filename] = load_golden(filename)
    return _GOLDEN[filename]


def pytest_generate_tests(metafunc):
    """Parametrize ``golden_case`` (a (name, meta, inputs, outputs) tuple)
    over every fixture case, ``sparse_golden_case`` over the sparse ones,
    ``half_golden_case`` over the float16 and bfloat16 cases of
    training_ops_half.npz."""
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
    if "half_golden_case" in metafunc.fixturenames:
        cases = golden_cases("training_ops_half.npz")
        names = sorted(cases)
        metafunc.parametrize(
            "half_golden_case", [(n,) + cases[n] for n in names], ids=names
        )
