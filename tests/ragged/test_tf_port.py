"""TensorFlow's own ragged tests, ported (tests/ragged/tf_port): every case
evaluated with sparsegrad under TensorFlow's names and compared with what
TensorFlow 2.21 gave (the stored outcome): the kind of result, values
(integers and booleans exactly, floats to 1e-6 relative, NaN where NaN),
dtypes, every level's row splits and their dtype, Python results by their
repr, and the class of an error."""

import glob
import importlib.util
import os

import numpy as np
import pytest

import sparsegrad as sg

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tf_port")


def _load(name):
    spec = importlib.util.spec_from_file_location(
        f"tf_port_{name}", os.path.join(HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REPLAY = _load("replay")
SHIM = REPLAY.shim()
AREAS = sorted(os.path.basename(p)[len("cases_"):-3]
               for p in glob.glob(os.path.join(HERE, "cases_*.py")))
CASES = []
for _area in AREAS:
    _stored = np.load(os.path.join(HERE, "data", f"tf_port_{_area}.npz"))
    _codes = dict(_load(f"cases_{_area}").CASES)
    assert [str(c) for c in _stored["__cases__"]] == list(_codes), (
        f"cases_{_area}.py and its fixture disagree: run generate.py {_area}")
    for _name in _codes:
        _fields = {k.split("__", 1)[1]: _stored[k] for k in _stored.files
                   if k.startswith(f"{_name}__")}
        CASES.append(pytest.param(_codes[_name], _fields, id=f"{_area}:{_name}"))

# TensorFlow's error classes and the sparsegrad class each must be.
ERRORS = {
    "InvalidArgumentError": sg.errors.InvalidArgumentError,
    "ValueError": ValueError,
    "TypeError": TypeError,
    "IndexError": IndexError,
}


def _same_values(got, want, what):
    assert got.dtype == want.dtype, f"{what}: {got.dtype}, TensorFlow {want.dtype}"
    assert got.shape == want.shape, f"{what}: {got.shape}, TensorFlow {want.shape}"
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("code, want", CASES)
def test_case_matches_tensorflow(code, want):
    got = REPLAY.run(code, SHIM)
    kind = str(want["kind"])
    if kind == "error":
        expected = ERRORS.get(str(want["error"]), Exception)
        assert str(got["kind"]) == "error", (
            f"TensorFlow raised {want['error']}; sparsegrad gave a {got['kind']}")
        assert isinstance(got["raised"], expected), (
            f"sparsegrad raised {got['error']}: {got['raised']}; "
            f"TensorFlow {want['error']}")
        return
    assert str(got["kind"]) == kind, (
        f"sparsegrad gave a {got['kind']} result"
        + (f" ({got['error']}: {got['raised']})" if "error" in got else "")
        + f"; TensorFlow a {kind}")
    if kind == "python":
        assert str(got["text"]) == str(want["text"])
        return
    assert str(got["dtype"]) == str(want["dtype"])
    if kind == "dense":
        _same_values(got["values"], want["values"], "values")
        return
    _same_values(got["flat_values"], want["flat_values"], "flat_values")
    levels = sorted(k for k in want if k.startswith("splits_") and k != "splits_dtype")
    assert sorted(k for k in got if k.startswith("splits_") and k != "splits_dtype") \
        == levels, "ragged_rank"
    assert str(got["splits_dtype"]) == str(want["splits_dtype"])
    for level in levels:
        np.testing.assert_array_equal(got[level], want[level], err_msg=level)
