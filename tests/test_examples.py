"""Every docstring example in the package runs and prints what it shows.

The Sphinx doctest builder runs the examples of the objects the API pages
document; this runs all of them, private helpers' and every module's too,
with ``np`` and ``sg`` in scope as the docs have them."""

import doctest
import importlib
import importlib.util
import pkgutil

import numpy as np
import pytest

import sparsegrad as sg

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(sg.__path__, "sparsegrad.")
    if not info.name.startswith(("sparsegrad._kernels.", "sparsegrad.__main__"))
)


# Modules whose examples run an optional dependency (the mpi extra).
NEEDS = {"mpi4py": ("sparsegrad.distributed", "sparsegrad.demo.distributed")}


def test_the_walk_sees_the_package():
    assert "sparsegrad.training.training_ops.adam" in MODULES
    assert "sparsegrad.ops.array_ops.shapes" in MODULES
    assert len(MODULES) > 100


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_of(name):
    for dependency, prefixes in NEEDS.items():
        if name.startswith(prefixes) and importlib.util.find_spec(dependency) is None:
            pytest.skip(f"the examples of {name} need {dependency}")
    try:
        module = importlib.import_module(name)
    except ImportError as exc:     # an optional dependency (mpi4py, ...)
        if (exc.name or "").startswith("sparsegrad"):
            raise
        pytest.skip(f"{name} needs {exc.name}")
    runner = doctest.DocTestRunner(
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    report = []
    for test in doctest.DocTestFinder().find(
            module, name, globs={"np": np, "sg": sg, **vars(module)}):
        if test.examples:
            runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
