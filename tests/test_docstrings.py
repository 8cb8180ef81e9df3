"""Every public name has a NumPy-style docstring: Parameters (for classes and
functions that take arguments, naming each argument) and Returns (for
functions); the API reference is built from them."""

import enum
import inspect
import re

import pytest

import sparsegrad as sg

MODULES = [sg, sg.nn, sg.sparse, sg.ragged, sg.optimizers, sg.optimizers.schedules,
           sg.training_ops, sg.testing, sg.distributed]


def _public():
    seen = {}
    for module in MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj) or id(obj) in seen:
                continue
            if inspect.isclass(obj) or inspect.isfunction(obj):
                seen[id(obj)] = (f"{module.__name__}.{name}", obj)
    return sorted(seen.values(), key=lambda item: item[0])


PUBLIC = _public()


def _section(doc, title):
    match = re.search(rf"^{title}\n-{{{len(title)}}}\n(.*?)(?=^\w[\w ]*\n-{{3,}}\n|\Z)",
                      doc, re.S | re.M)
    return None if match is None else match.group(1)


def _documented_names(section):
    names = set()
    for line in section.splitlines():
        if line and not line.startswith(" "):
            head = line.split(" : ")[0]
            names.update(n.strip().lstrip("*") for n in head.split(","))
    return names


def _parameters(obj):
    if inspect.isclass(obj):
        if issubclass(obj, BaseException) or hasattr(obj, "_fields"):
            return None     # errors and slot NamedTuples take no documented args
        if issubclass(obj, enum.Enum):
            return ["value"]
        obj = obj.__init__
        if obj is object.__init__:
            return []
    params = inspect.signature(obj).parameters.values()
    return [p.name for p in params if p.name not in ("self", "cls")
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def test_the_public_api_is_seen():
    names = {name for name, _ in PUBLIC}
    assert len(names) > 130
    assert "sparsegrad.training_ops.sparse_apply_ftrl" in names
    assert "sparsegrad.optimizers.Adam" in names


@pytest.mark.parametrize("name,obj", PUBLIC, ids=[n for n, _ in PUBLIC])
def test_docstring_sections(name, obj):
    doc = inspect.getdoc(obj) or ""
    params = _parameters(obj)
    if params is None:
        return
    if params:
        section = _section(doc, "Parameters")
        assert section is not None, f"{name}: no Parameters section"
        missing = set(params) - _documented_names(section)
        assert not missing, f"{name}: parameters not documented: {sorted(missing)}"
    if inspect.isfunction(obj):
        assert _section(doc, "Returns") is not None, f"{name}: no Returns section"
