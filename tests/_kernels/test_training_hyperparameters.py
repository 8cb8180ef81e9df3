"""The training kernels name the hyper-parameters of every op."""

from sparsegrad._kernels import training as K


def test_every_op_names_its_hyperparameters():
    ops = {
        name[len("sparse_") :]
        for name in dir(K)
        if name.startswith("sparse_") and not name.endswith("_by_row")
    }
    assert set(K.HYPERPARAMETERS) == ops
    for names in K.HYPERPARAMETERS.values():
        assert isinstance(names, tuple) and names
        assert len(set(names)) == len(names)
    assert K.HYPERPARAMETERS["adagrad_v2"] == ("lr", "epsilon", "update_slots")
