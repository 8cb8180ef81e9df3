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
