"""Fail the build when a public name of sparsegrad is missing from the API pages.

"Public" means: every name in ``__all__`` of ``sparsegrad`` and of each public
submodule listed in :data:`PUBLIC_MODULES` that exists.  A name counts as
documented when the Python domain holds an object for it under any of the
modules that export it.
"""

import importlib

from sphinx.errors import ExtensionError

PUBLIC_MODULES = [
    "sparsegrad",
    "sparsegrad.errors",
    "sparsegrad.nn",
    "sparsegrad.math",
    "sparsegrad.sparse",
    "sparsegrad.linalg",
    "sparsegrad.ragged",
    "sparsegrad.training_ops",
    "sparsegrad.optimizers",
    "sparsegrad.optimizers.schedules",
    "sparsegrad.testing",
    "sparsegrad.distributed",
    "sparsegrad.demo.data",
    "sparsegrad.demo.metrics",
    "sparsegrad.demo.models",
    "sparsegrad.demo.train",
    "sparsegrad.demo.distributed",
]

SKIP = {"__version__"}


def _public_names():
    names = []
    for module_name in PUBLIC_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if name in SKIP or isinstance(obj, type(importlib)):
                continue  # submodules are documented by their own pages
            names.append((module_name, name, obj))
    return names


def _check(app, exception):
    if exception is not None or app.builder.name != "html":
        return
    documented = set(app.env.get_domain("py").objects)
    missing = []
    for module_name, name, obj in _public_names():
        candidates = {f"{module_name}.{name}"}
        home = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", name)
        if home:
            candidates.add(f"{home}.{qualname}")
        if not candidates & documented:
            missing.append(f"{module_name}.{name}")
    if missing:
        raise ExtensionError(
            "public names missing from the API docs: " + ", ".join(sorted(missing))
        )


def setup(app):
    app.connect("build-finished", _check)
    return {"parallel_read_safe": True}
