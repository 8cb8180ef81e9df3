"""Fixtures of the bench tests."""

import textwrap

import pytest

from sparsegrad.bench import harness


@pytest.fixture
def make_suite(tmp_path, monkeypatch):
    """``make_suite(package, source)``: the suite of a package ``package.cases``
    written from `source` (Python defining ``CASES``), importable here and by
    the worker processes."""

    def make(package, source):
        folder = tmp_path / package
        folder.mkdir()
        (folder / "__init__.py").write_text("")
        (folder / "cases.py").write_text(textwrap.dedent(source))
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setenv("PYTHONPATH", str(tmp_path))
        return harness.load_suite([f"{package}.cases"])

    return make


@pytest.fixture(scope="session")
def bfloat16_bags():
    """None where sparsegrad's embedding bags read and differentiate bfloat16
    tables; else why not (the reason the bfloat16 bag cases are skipped)."""
    import ml_dtypes
    import numpy as np
    import scipy.sparse

    import sparsegrad as sg

    table = sg.Variable(np.ones((3, 2), ml_dtypes.bfloat16))
    bags = scipy.sparse.csr_array(np.array([[1.0, 0.0, 1.0]], np.float32))
    try:
        with sg.GradientTape() as tape:
            out = sg.nn.embedding_lookup_sparse(table, bags, combiner="sum")
        if tape.gradient(out, table) is None:
            return "the tape does not record bfloat16 bags"
    except (sg.errors.InvalidArgumentError, TypeError) as exc:
        return f"sparsegrad cannot bag a bfloat16 table here: {exc}"
    return None
