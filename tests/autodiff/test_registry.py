"""The gradient registry, and the sweep: every registered op type must be
gradient-checked by some test module.

How the sweep works: each test module under tests/ that checks gradients
declares a module-level tuple ``CHECKED_OPS = ("OpType", ...)`` naming the op
types it checks (with check_gradients or golden values).  The sweep reads those
tuples from the source files (with ``ast``, nothing is imported) and fails for
any op type in the registry that no module declares, or any declared name that
is not registered.
"""

import ast
import pathlib

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.autodiff import registry
from sparsegrad.errors import NotFoundError

TESTS = pathlib.Path(__file__).resolve().parents[1]

# op types registered by tests or docstring examples, not by the library
_NOT_LIBRARY_PREFIXES = ("Test", "DocExample")


def _declared_checked_ops():
    declared = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "CHECKED_OPS" for t in node.targets
            ):
                for name in ast.literal_eval(node.value):
                    declared.setdefault(name, []).append(path.relative_to(TESTS))
    return declared


def _import_everything():
    """Import every module of the package, so that every op is registered."""
    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(sg.__path__, "sparsegrad."):
        if info.name.startswith(("sparsegrad._cuda", "sparsegrad.__main__")):
            continue
        importlib.import_module(info.name)


def _library_ops():
    _import_everything()
    return {
        name
        for name in registry.registered_ops()
        if not name.startswith(_NOT_LIBRARY_PREFIXES)
    }


def test_every_registered_op_has_a_gradient_check():
    declared = _declared_checked_ops()
    missing = sorted(_library_ops() - set(declared))
    assert not missing, (
        f"registered op types without a gradient check: {missing}; add a check and "
        "list them in a CHECKED_OPS tuple of the test module"
    )


def test_every_declared_op_is_registered():
    _import_everything()
    registered = set(registry.registered_ops())
    unknown = {
        name: paths
        for name, paths in _declared_checked_ops().items()
        if name not in registered
    }
    assert not unknown, f"CHECKED_OPS names that are not registered: {unknown}"


def test_register_twice_is_key_error_naming_previous():
    @sg.register_gradient("TestRegisterTwice")
    def _first(op, grad):
        return grad

    with pytest.raises(
        KeyError,
        match=r"Registering two gradient with name 'TestRegisterTwice'.*_first",
    ):
        sg.register_gradient("TestRegisterTwice")(lambda op, grad: grad)
    with pytest.raises(KeyError, match="TestRegisterTwice"):
        sg.no_gradient("TestRegisterTwice")


def test_op_type_must_be_a_string():
    with pytest.raises(TypeError, match="op_type must be a string"):
        sg.register_gradient(3)
    with pytest.raises(TypeError, match="op_type must be a string"):
        sg.no_gradient(None)


def test_lookup_of_unknown_op_is_lookup_error():
    with pytest.raises(
        LookupError, match="gradient registry has no entry for: NoSuchOp"
    ):
        registry.get_gradient_function("NoSuchOp")
    assert issubclass(NotFoundError, LookupError)


def test_registered_gradient_is_used_and_sees_the_op():
    from sparsegrad.autodiff.tape import record_operation

    seen = {}

    @sg.register_gradient("TestCubeOp")
    def _cube_grad(op, grad):
        seen["type"] = op.type
        seen["power"] = op.get_attr("power")
        (x,) = op.inputs
        return grad * 3.0 * x * x

    x = sg.constant(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.Tensor(np.asarray(x) ** 3)
        op = record_operation("TestCubeOp", (x,), (y,), {"power": 3})
    assert op.outputs == (y,) and op.inputs == (x,)
    with pytest.raises(KeyError, match="no attribute 'nope'"):
        op.get_attr("nope")
    assert float(tape.gradient(y, x)) == 12.0
    assert seen == {"type": "TestCubeOp", "power": 3}


def test_record_operation_without_tape_is_a_no_op():
    from sparsegrad.autodiff.tape import record_operation

    x = sg.constant(1.0)
    assert record_operation("Mul", (x, x), (x,)) is None


def test_integer_inputs_do_not_record():
    from sparsegrad.autodiff.tape import record_operation

    i = sg.constant([1, 2])
    with sg.GradientTape() as tape:
        with pytest.warns(UserWarning):
            tape.watch(i)
        assert record_operation("Mul", (i, i), (sg.constant([1.0]),)) is None
