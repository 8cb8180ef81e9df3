"""Layering rules of the package, checked on the source with ``ast``.

* No module imports a private name (``_x``; dunders such as ``__version__``
  are fine) from another sparsegrad module; the compiled kernel modules of
  ``sparsegrad._kernels`` and the CUDA launchers of ``sparsegrad._cuda`` may
  be imported by name.
* ``sparsegrad._cuda`` is a kernel layer: it imports no other part of the
  package but the kernels' tables (``sparsegrad._kernels.<family>_table``:
  pure data that imports nothing, from which the Cython kernels are rendered
  too).
* framework/, autodiff/, ops/ and testing.py import the package's own modules
  at the top only, never inside a function (a function-level import is how a
  cycle between layers gets hidden).
* The layers point one way: framework/ imports no autodiff, ops or user-facing
  module; the bottom of autodiff (registry, recording, nest) imports no op
  and not the tape; the ops reach autodiff only through registry and
  recording.
"""

import ast
import pathlib

import pytest

# Paths (relative to the repository root) the rules do not cover: the kernels
# are Cython; __main__ imports lazily on purpose (a diagnostics command).
EXEMPT = (
    "sparsegrad/_kernels/",
    "sparsegrad/__main__.py",
)

# Where function-level imports of the package's own modules are forbidden.
NO_LOCAL_IMPORTS = (
    "sparsegrad/framework/",
    "sparsegrad/autodiff/",
    "sparsegrad/ops/",
    "sparsegrad/testing.py",
    "sparsegrad/training/",
    "sparsegrad/optimizers/",
    "sparsegrad/training_ops.py",
    "sparsegrad/ragged/",
)

# What sits above the framework layer.
ABOVE_FRAMEWORK = (
    "sparsegrad.autodiff",
    "sparsegrad.ops",
    "sparsegrad.nn",
    "sparsegrad.sparse",
    "sparsegrad.testing",
    "sparsegrad.training",
    "sparsegrad.optimizers",
    "sparsegrad.ragged",
)

# module prefix -> sparsegrad modules it must not import (prefix match)
FORBIDDEN = {
    # the CUDA kernels' launchers are a kernel layer, like _kernels
    "sparsegrad._cuda": ("sparsegrad.framework", *ABOVE_FRAMEWORK,
                         "sparsegrad._kernels"),
    "sparsegrad.framework": ABOVE_FRAMEWORK,
    "sparsegrad.autodiff.registry": ("sparsegrad.ops", "sparsegrad.autodiff.tape",
                                    "sparsegrad.autodiff.backward"),
    "sparsegrad.autodiff.recording": ("sparsegrad.ops", "sparsegrad.autodiff.tape",
                                     "sparsegrad.autodiff.backward"),
    "sparsegrad.autodiff.nest": ("sparsegrad.ops", "sparsegrad.autodiff.tape",
                                "sparsegrad.autodiff.backward"),
    "sparsegrad.ops": (
        "sparsegrad.autodiff.tape",
        "sparsegrad.autodiff.backward",
        "sparsegrad.autodiff.custom_gradient",
        "sparsegrad.autodiff.nest",
        "sparsegrad.testing",
        "sparsegrad.nn",
        "sparsegrad.sparse",
        "sparsegrad.ragged",
    ),
}

# Modules a layer may import although FORBIDDEN names a prefix of them.
ALLOWED = {
    "sparsegrad._cuda": ("sparsegrad._kernels.training_table",),
}

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "sparsegrad"


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(EXEMPT):
            yield rel, path


def _module_name(rel):
    parts = rel[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(rel, node):
    """The absolute module an ImportFrom reads from (None if not sparsegrad)."""
    if node.level == 0:
        module = node.module or ""
        return module if module.split(".")[0] == "sparsegrad" else None
    package = _module_name(rel).split(".")
    if not rel.endswith("__init__.py"):
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imported_modules(rel, node):
    """The sparsegrad modules an Import / ImportFrom node names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "sparsegrad"]
    source = _resolve(rel, node)
    if source is None:
        return []
    return [source] + [f"{source}.{a.name}" for a in node.names]


def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_imports(rel, tree):
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        source = _resolve(rel, node)
        if source is None:
            continue
        for alias in node.names:
            if not _is_private(alias.name):
                continue
            kernel_layers = ("sparsegrad._kernels", "sparsegrad._cuda")
            kernels = source.startswith(kernel_layers) or (
                source == "sparsegrad" and alias.name in ("_kernels", "_cuda")
            )
            if not kernels:
                bad.append(f"{rel}:{node.lineno} imports {alias.name} from {source}")
    return bad


def _local_imports(rel, tree):
    bad = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and _imported_modules(
                rel, node
            ):
                bad.append(f"{rel}:{node.lineno} imports inside {func.name}()")
    return bad


def _upward_imports(rel, tree):
    name = _module_name(rel)
    forbidden = [
        banned
        for prefix, targets in FORBIDDEN.items()
        if name == prefix or name.startswith(prefix + ".")
        for banned in targets
    ]
    allowed = [
        module
        for prefix, modules in ALLOWED.items()
        if name == prefix or name.startswith(prefix + ".")
        for module in modules
    ]
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for target in _imported_modules(rel, node):
            if any(target == m or target.startswith(m + ".") for m in allowed):
                continue
            for banned in forbidden:
                if target == banned or target.startswith(banned + "."):
                    bad.append(f"{rel}:{node.lineno} imports {target}")
    return sorted(set(bad))


def _parsed():
    return [
        (rel, ast.parse(path.read_text(encoding="utf-8"), filename=rel))
        for rel, path in _modules()
    ]


def test_the_rules_see_the_modules():
    names = {rel for rel, _ in _modules()}
    assert "sparsegrad/autodiff/tape.py" in names
    assert "sparsegrad/ops/math_ops/arithmetic.py" in names
    assert "sparsegrad/training/training_ops/core.py" in names


def test_no_private_name_is_imported_from_another_module():
    bad = [line for rel, tree in _parsed() for line in _private_imports(rel, tree)]
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def test_no_function_level_import_of_the_package_in_core_layers():
    bad = [
        line
        for rel, tree in _parsed()
        if rel.startswith(NO_LOCAL_IMPORTS)
        for line in _local_imports(rel, tree)
    ]
    assert not bad, "function-level imports of sparsegrad modules:\n" + "\n".join(bad)


def test_layers_import_downwards_only():
    bad = [line for rel, tree in _parsed() for line in _upward_imports(rel, tree)]
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from ..autodiff.tape import _STATE\n", 1),
        ("from .._kernels import slices as _slices\n", 0),
        ("from .. import _kernels\n", 0),
        ("from .._version import __version__\n", 0),
        ("from numpy import _private\n", 0),
    ],
)
def test_private_rule_on_examples(source, expected):
    tree = ast.parse(source)
    assert len(_private_imports("sparsegrad/ops/x.py", tree)) == expected


@pytest.mark.parametrize(
    "source, expected",
    [
        ("def f():\n    from . import math_ops\n", 1),
        ("def f():\n    import sparsegrad.ops\n", 1),
        ("def f():\n    import scipy.sparse\n", 0),
        ("from . import math_ops\n", 0),
    ],
)
def test_local_import_rule_on_examples(source, expected):
    tree = ast.parse(source)
    assert len(_local_imports("sparsegrad/ops/x.py", tree)) == expected


def test_upward_rule_on_examples():
    tree = ast.parse("from ..autodiff.tape import GradientTape\n")
    assert _upward_imports("sparsegrad/ops/x.py", tree)
    tree = ast.parse("from ..autodiff.recording import record_operation\n")
    assert not _upward_imports("sparsegrad/ops/x.py", tree)
    tree = ast.parse("from ..ops import array_ops\n")
    assert _upward_imports("sparsegrad/framework/x.py", tree)


def test_no_source_module_is_over_1000_lines():
    # Generated files (a template's rendering) are not sources; their
    # templates are.
    long = []
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix not in (".py", ".pyx", ".pxd", ".pxi", ".tp"):
            continue
        if path.with_name(path.name + ".tp").exists():
            continue
        n_lines = path.read_text(encoding="utf-8").count("\n")
        if n_lines > 1000:
            long.append(f"{path.relative_to(ROOT)}: {n_lines} lines")
    assert not long, "modules over 1,000 lines:\n" + "\n".join(long)


def test_the_allowed_tables_import_nothing():
    # what the CUDA layer may read from the kernels is data: no import at all
    for modules in ALLOWED.values():
        for module in modules:
            path = ROOT / (module.replace(".", "/") + ".py")
            tree = ast.parse(path.read_text(encoding="utf-8"))
            imports = [n.lineno for n in ast.walk(tree)
                       if isinstance(n, (ast.Import, ast.ImportFrom))]
            assert not imports, f"{module} imports on lines {imports}"


def test_the_layer_rule_still_catches_a_compiled_kernel():
    tree = ast.parse("from .._kernels import training\n"
                     "from .._kernels.training_table import KERNELS\n")
    assert _upward_imports("sparsegrad/_cuda/training.py", tree) == [
        "sparsegrad/_cuda/training.py:1 imports sparsegrad._kernels",
        "sparsegrad/_cuda/training.py:1 imports sparsegrad._kernels.training",
    ]


# -- the layered ops package and the one device choice ---------------------
# The op modules import one another downward only (no circle); no `.py`
# module is over MAX_LINES (a family that outgrows one file is a subpackage);
# only the backend module tells a CuPy array from others: a public call asks
# backend_of once and hands the Backend down.

MAX_LINES = 800

# The modules that may contain is_cupy_array (the issue allows five at most).
IS_CUPY_PLACES = {
    "sparsegrad/framework/backend.py",
}


def _import_graph(prefix):
    """{module: the modules under `prefix` it imports at its top level}."""
    parsed = {_module_name(rel): (rel, tree) for rel, tree in _parsed()}
    graph = {}
    for name, (rel, tree) in parsed.items():
        if not name.startswith(prefix):
            continue
        deps = set()
        for node in tree.body:
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            else:
                source = _resolve(rel, node)
                found = [] if source is None else [
                    f"{source}.{a.name}" if f"{source}.{a.name}" in parsed
                    else source for a in node.names]
            for target in found:
                while target and target not in parsed:
                    target = target.rpartition(".")[0]
                if target.startswith(prefix) and target != name:
                    deps.add(target)
        graph[name] = deps
    return graph


def _circles(graph):
    """The groups of two or more nodes that reach one another (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_circle_finder_finds_circles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [{"a", "b", "c"}]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_op_module_is_in_an_import_circle():
    circles = _circles(_import_graph("sparsegrad.ops"))
    assert not circles, "op modules importing one another in a circle: " + "; ".join(
        " <-> ".join(sorted(c)) for c in circles)


def test_no_module_is_over_the_line_limit():
    over = []
    for path in sorted(PACKAGE.rglob("*.py")):
        with open(path, encoding="utf-8") as f:
            n_lines = sum(1 for _ in f)
        if n_lines > MAX_LINES:
            over.append(f"{path.relative_to(ROOT).as_posix()}: {n_lines} lines")
    assert not over, (f"over {MAX_LINES} lines (make the family a subpackage):\n"
                      + "\n".join(over))


def test_only_the_backend_module_tells_a_cupy_array():
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if "is_cupy_array" in path.read_text(encoding="utf-8"):
            found.add(path.relative_to(ROOT).as_posix())
    assert len(IS_CUPY_PLACES) <= 5
    assert found <= IS_CUPY_PLACES, (
        f"is_cupy_array outside the backend module: {sorted(found - IS_CUPY_PLACES)}"
        " (take the Backend from the call's entry: backend_of)")
    assert found == IS_CUPY_PLACES
