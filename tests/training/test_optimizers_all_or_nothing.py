"""apply_gradients is all or nothing: every (gradient, variable) pair is
prepared, hyper-parameters in each variable's dtype included, before any
update runs; on an error no variable, slot or step count changes and no slot
is registered for a new variable."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.training.training_ops import core

opts = sg.optimizers

OPTIMIZERS = {
    "SGD": lambda lr: opts.SGD(lr),
    "SGD-momentum": lambda lr: opts.SGD(lr, momentum=0.9, nesterov=True),
    "Adagrad": lambda lr: opts.Adagrad(lr),
    "RowwiseAdagrad": lambda lr: opts.RowwiseAdagrad(lr),
    "Adadelta": lambda lr: opts.Adadelta(lr),
    "Adam": lambda lr: opts.Adam(lr),
    "Adam-lazy": lambda lr: opts.Adam(lr, lazy=True),
    "Adam-amsgrad": lambda lr: opts.Adam(lr, amsgrad=True),
    "AdamW": lambda lr: opts.AdamW(lr, weight_decay=0.1),
    "AdamW-lazy": lambda lr: opts.AdamW(lr, weight_decay=0.1, lazy=True),
    "Adamax": lambda lr: opts.Adamax(lr),
    "Ftrl": lambda lr: opts.Ftrl(lr, l1_regularization_strength=0.01, beta=0.1),
    "Ftrl-shrinkage": lambda lr: opts.Ftrl(
        lr, l2_shrinkage_regularization_strength=0.1),
    "RMSprop": lambda lr: opts.RMSprop(lr, momentum=0.5),
    "RMSprop-centered": lambda lr: opts.RMSprop(lr, centered=True),
    "ProximalGradientDescent": lambda lr: opts.ProximalGradientDescent(lr, 0.01, 0.01),
    "ProximalAdagrad": lambda lr: opts.ProximalAdagrad(
        lr, l1_regularization_strength=0.01),
    "Lion": lambda lr: opts.Lion(lr),
    "Lion-lazy": lambda lr: opts.Lion(lr, lazy=True),
    "Nadam": lambda lr: opts.Nadam(lr),
    "Nadam-lazy": lambda lr: opts.Nadam(lr, lazy=True),
    "Lamb": lambda lr: opts.Lamb(lr),
    "Lamb-lazy": lambda lr: opts.Lamb(lr, lazy=True),
}


def _pairs(sparse, rng):
    a = sg.Variable(rng.standard_normal((5, 3)), name="a")
    b = sg.Variable(rng.standard_normal((5, 3)).astype(np.float32), name="b")
    out = []
    for var in (a, b):
        if sparse:
            values = rng.standard_normal((3, 3)).astype(var.dtype)
            grad = sg.IndexedSlices(values, np.array([4, 1, 4]), dense_shape=(5, 3))
        else:
            grad = rng.standard_normal((5, 3)).astype(var.dtype)
        out.append((grad, var))
    return out


def _snapshot(opt, pairs):
    state = [var.numpy().tobytes() for _, var in pairs]
    state += [v.numpy().tobytes() for v in opt.variables()]
    return state, len(opt.tracked_variables()), opt.iterations_count


def _warm(opt, rng, sparse):
    """One successful step, so that slots exist and hold non-trivial values."""
    pairs = _pairs(sparse, rng)
    opt.apply_gradients(pairs)
    return pairs


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("warm", [False, True], ids=["new", "warm"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_failing_second_pair_changes_nothing(name, warm, sparse, monkeypatch):
    # The second pair's preparation fails (injected): the first pair was
    # prepared but must not have run.
    rng = np.random.default_rng(0)
    opt = OPTIMIZERS[name](0.05)
    pairs = _warm(opt, rng, sparse) if warm else _pairs(sparse, rng)
    before = _snapshot(opt, pairs)
    calls = []
    original = core.Spec.prepare_trusted

    def failing(self, *args, **kwargs):
        calls.append(self)
        if len(calls) == 2:
            raise InvalidArgumentError("injected failure")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(core.Spec, "prepare_trusted", failing)
    with pytest.raises(InvalidArgumentError, match="injected failure"):
        opt.apply_gradients(pairs)
    assert len(calls) == 2
    assert _snapshot(opt, pairs) == before
    monkeypatch.undo()
    # And the optimizer still works, with the same result as a fresh one.
    opt.apply_gradients(pairs)
    assert opt.iterations_count == before[2] + 1


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", ["Ftrl", "Ftrl-shrinkage", "ProximalAdagrad"])
def test_learning_rate_checked_in_each_variables_dtype(name, sparse):
    # 1e-50 is a positive float64 but 0 in float32: the float32 variable's
    # kernel cannot take it, so neither variable changes.
    rng = np.random.default_rng(1)
    opt = OPTIMIZERS[name](1e-50)
    pairs = _pairs(sparse, rng)
    before = _snapshot(opt, pairs)
    with pytest.raises(InvalidArgumentError, match=r"1e-50 is 0\.0 in float32"):
        opt.apply_gradients(pairs)
    assert _snapshot(opt, pairs) == before
    assert not np.isnan(pairs[1][1].numpy()).any()


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_bad_hyper_parameter_in_second_variable_changes_nothing(name):
    # A hyper-parameter the raw op rejects (not a scalar), found while the
    # second variable is prepared; the first is untouched.
    rng = np.random.default_rng(2)
    opt = OPTIMIZERS[name](0.05)
    pairs = _pairs(True, rng)
    before = _snapshot(opt, pairs)
    original = core.Spec.prepare_trusted

    def second_bad(self, var, slots, grad, indices, args, **kwargs):
        if var is pairs[1][1] and "lr" in args:
            args = dict(args, lr=np.ones(2))
        elif var is pairs[1][1] and "alpha" in args:
            args = dict(args, alpha=np.ones(2))
        return original(self, var, slots, grad, indices, args, **kwargs)

    core.Spec.prepare_trusted = second_bad
    try:
        with pytest.raises(InvalidArgumentError,
                           match=r"(lr|alpha) is not a (positive )?scalar"):
            opt.apply_gradients(pairs)
    finally:
        core.Spec.prepare_trusted = original
    assert _snapshot(opt, pairs) == before


def test_hyper_parameter_cache_keeps_the_sign_of_zero():
    # The prepared hyper-parameters are cached per spec; 0.0 and -0.0 compare
    # equal but give different bits: var - g * (-0.0) turns -0.0 into +0.0.
    var = sg.Variable(np.array([-0.0, -0.0]))
    opt = opts.SGD(0.0)
    opt.apply_gradients([(np.ones(2), var)])
    assert np.signbit(var.numpy()).all()
    opt.learning_rate = -0.0
    opt.apply_gradients([(np.ones(2), var)])
    assert not np.signbit(var.numpy()).any()


def test_hyper_parameter_cache_follows_a_schedule():
    # A new learning rate at every step: each step uses its own.
    var = sg.Variable(np.zeros(3, np.float32))
    opt = opts.SGD(lambda step: 0.5 ** step)
    for _ in range(70):                      # past the cache's 64 entries
        opt.apply_gradients([(np.ones(3, np.float32), var)])
    expected = np.float32(0)
    for step in range(70):
        expected = np.float32(expected - np.float32(1) * np.float32(0.5 ** step))
    assert var.numpy().tolist() == [expected] * 3
