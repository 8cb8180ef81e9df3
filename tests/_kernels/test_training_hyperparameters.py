"""The training kernels name the hyper-parameters of every op, and every raw
op's spec sets exactly those names."""

import inspect

from sparsegrad import training_ops
from sparsegrad._kernels import training as K
from sparsegrad._kernels.training_table import OWN_DRIVERS
from sparsegrad.training.training_ops import core


def _ops(prefix):
    return {
        name[len(prefix):]
        for name in dir(K)
        if name.startswith(prefix)
        and not name.endswith(("_by_row", "_grouped"))
    }


def test_every_op_names_its_hyperparameters():
    assert set(K.HYPERPARAMETERS) == _ops("dense_") | _ops("sparse_")
    for names in K.HYPERPARAMETERS.values():
        assert isinstance(names, tuple) and names
        assert len(set(names)) == len(names)
    assert K.HYPERPARAMETERS["adagrad_v2"] == ("lr", "epsilon", "update_slots")


def _specs():
    found = {}
    for module in (m for m in vars(training_ops.implementation).values()
                   if inspect.ismodule(m) and m is not core):
        for attr, value in vars(module).items():
            if isinstance(value, core.Spec):
                found[f"{module.__name__}.{attr}"] = value
    return found


def test_every_public_op_has_a_spec_on_an_existing_kernel():
    specs = _specs()
    names = {key.rsplit(".", 1)[1].lower() for key in specs}
    assert names == set(training_ops.__all__)
    for key, spec in specs.items():
        assert hasattr(K, spec.driver), key
        assert spec.hyper == K.HYPERPARAMETERS[spec.kernel], key
        assert {step.hyper for step in spec.hyper_steps} >= set(spec.hyper), key


def test_the_kernel_table_agrees_with_the_specs():
    # KERNELS (from the OPS table) drives the CUDA kernels: its slot count
    # decides which slots a GPU thread loads and stores, so it must be the
    # number of slots each spec passes.  (Row-wise Adagrad and Lamb have
    # kernels of their own on the GPU.)
    table = {entry[0]: entry for entry in K.KERNELS}
    assert {"rowwise_adagrad", "lamb"} == OWN_DRIVERS
    assert set(table) == set(K.HYPERPARAMETERS) - OWN_DRIVERS
    for key, spec in _specs().items():
        if spec.kernel in table:
            assert table[spec.kernel][4] == len(spec.slots), key
    for name, dense, sparse, scalar, _ in K.KERNELS:
        assert (dense is not None) == hasattr(K, f"dense_{name}"), name
        assert (sparse is not None) == hasattr(K, f"sparse_{name}"), name
        assert scalar is None or sparse is not None, name
