"""Bad hyper-parameters and bad gradients: a clear error, and nothing changes."""

import numpy as np
import pytest

import sparsegrad as sg

IAE = sg.errors.InvalidArgumentError


@pytest.mark.parametrize("make,match", [
    (lambda: sg.optimizers.SGD(learning_rate=-0.1), "learning_rate must be >= 0.0, got -0.1"),
    (lambda: sg.optimizers.SGD(learning_rate="fast"), "learning_rate must be a real number"),
    (lambda: sg.optimizers.SGD(learning_rate=float("nan")), "learning_rate must be finite"),
    (lambda: sg.optimizers.SGD(momentum=1.5), "momentum must be <= 1.0, got 1.5"),
    (lambda: sg.optimizers.SGD(momentum=-0.1), "momentum must be >= 0.0"),
    (lambda: sg.optimizers.SGD(clipnorm=0.0), "clipnorm must be > 0.0, got 0.0"),
    (lambda: sg.optimizers.SGD(clipvalue=-1), "clipvalue must be > 0.0"),
    (lambda: sg.optimizers.SGD(global_clipnorm=True), "global_clipnorm must be a real"),
    (lambda: sg.optimizers.Adagrad(initial_accumulator_value=-1),
     "initial_accumulator_value must be >= 0.0, got -1.0"),
    (lambda: sg.optimizers.Adagrad(epsilon=-1e-7), "epsilon must be >= 0.0"),
    (lambda: sg.optimizers.RowwiseAdagrad(epsilon=-1.0), "epsilon must be >= 0.0"),
    (lambda: sg.optimizers.Adadelta(rho=1.1), "rho must be <= 1.0, got 1.1"),
    (lambda: sg.optimizers.Adam(beta_1=1.0), "beta_1 must be < 1.0, got 1.0"),
    (lambda: sg.optimizers.Adam(beta_2=-0.5), "beta_2 must be >= 0.0"),
    (lambda: sg.optimizers.Adam(amsgrad=True, lazy=True), "amsgrad=True cannot be combined"),
    (lambda: sg.optimizers.AdamW(weight_decay=-0.1), "weight_decay must be >= 0.0"),
    (lambda: sg.optimizers.Adamax(beta_1=2.0), "beta_1 must be < 1.0"),
    (lambda: sg.optimizers.Ftrl(learning_rate_power=0.5),
     "learning_rate_power must be <= 0.0, got 0.5"),
    (lambda: sg.optimizers.Ftrl(learning_rate=0.0), "Ftrl needs learning_rate > 0, got 0.0"),
    (lambda: sg.optimizers.Ftrl(l1_regularization_strength=-1),
     "l1_regularization_strength must be >= 0.0"),
    (lambda: sg.optimizers.Ftrl(l2_regularization_strength=-1),
     "l2_regularization_strength must be >= 0.0"),
    (lambda: sg.optimizers.Ftrl(l2_shrinkage_regularization_strength=-1),
     "l2_shrinkage_regularization_strength must be >= 0.0"),
    (lambda: sg.optimizers.Ftrl(beta=-1), "beta must be >= 0.0"),
    (lambda: sg.optimizers.RMSprop(rho=-0.1), "rho must be >= 0.0"),
    (lambda: sg.optimizers.RMSprop(momentum=2), "momentum must be <= 1.0"),
    (lambda: sg.optimizers.ProximalGradientDescent(l1_regularization_strength=-1),
     "l1_regularization_strength must be >= 0.0"),
    (lambda: sg.optimizers.ProximalAdagrad(initial_accumulator_value=0.0),
     "initial_accumulator_value must be > 0.0"),
    (lambda: sg.optimizers.ProximalAdagrad(learning_rate=0.0), "needs learning_rate > 0"),
    (lambda: sg.optimizers.SGD(name=3), "name must be a str"),
])
def test_bad_hyper_parameters(make, match):
    with pytest.raises(IAE, match=match):
        make()


def test_learning_rate_setter_validates():
    opt = sg.optimizers.Ftrl()
    with pytest.raises(IAE, match="Ftrl needs learning_rate > 0"):
        opt.learning_rate = 0.0
    with pytest.raises(IAE, match="learning_rate must be >= 0"):
        sg.optimizers.SGD().learning_rate = -1.0
    assert opt.learning_rate == 0.001


def test_schedule_reaching_zero_is_rejected_for_ftrl_at_that_step():
    w = sg.Variable(np.ones(2))
    opt = sg.optimizers.Ftrl(learning_rate=lambda step: 0.1 if step == 0 else 0.0)
    opt.apply_gradients([(np.ones(2), w)])
    before = [v.numpy() for v in opt.variables()] + [w.numpy()]
    with pytest.raises(IAE, match="needs learning_rate > 0, got 0.0 at step 1"):
        opt.apply_gradients([(np.ones(2), w)])
    for v, old in zip(opt.variables() + [w], before):
        np.testing.assert_array_equal(v.numpy(), old)


def snapshot(opt, variables):
    return [v.numpy() for v in variables] + [v.numpy() for v in opt.variables()]


def assert_unchanged(opt, variables, before):
    after = snapshot(opt, variables)
    assert len(after) == len(before)
    for a, b in zip(after, before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["SGD", "Adam", "Adagrad", "Ftrl", "RMSprop"])
@pytest.mark.parametrize("bad,match", [
    (np.ones((3, 3)), r"var and grad do not have the same shape.*\(3, 2\).*\(3, 3\)"),
    (np.ones((2, 3)), "do not have the same shape"),
    (sg.IndexedSlices(np.ones((1, 3)), [0]), r"rows of shape \(3,\)"),
    (sg.IndexedSlices(np.ones((1, 2)), [3]), r"indices\[0\] = 3 is not in \[0, 3\)"),
    (sg.IndexedSlices(np.ones((1, 2)), [0], dense_shape=(4, 2)), "dense_shape"),
    (np.array([["a", "b"]] * 3), "dtype"),
])
def test_bad_gradient_changes_nothing(name, bad, match, rng):
    good_var = sg.Variable(rng.standard_normal((4,)))
    bad_var = sg.Variable(rng.standard_normal((3, 2)))
    opt = getattr(sg.optimizers, name)(learning_rate=0.1)
    opt.apply_gradients([(np.ones(4), good_var), (np.ones((3, 2)), bad_var)])
    before = snapshot(opt, [good_var, bad_var])
    with pytest.raises(IAE, match=match):
        # The good variable comes first: it must not be updated either.
        opt.apply_gradients([(np.ones(4), good_var), (bad, bad_var)])
    assert_unchanged(opt, [good_var, bad_var], before)
    assert opt.iterations_count == 1


def test_bad_pairs_and_variables():
    opt = sg.optimizers.SGD()
    w = sg.Variable(np.ones(2))
    with pytest.raises(TypeError, match="must be a sparsegrad.Variable"):
        opt.apply_gradients([(np.ones(2), np.ones(2))])
    with pytest.raises(IAE, match="must be a \\(gradient, variable\\) pair"):
        opt.apply_gradients([np.ones(3)])
    with pytest.raises(IAE, match="appears twice"):
        opt.apply_gradients([(np.ones(2), w), (np.ones(2), w)])
    with pytest.raises(IAE, match="dtype int64"):
        opt.apply_gradients([(np.ones(2), sg.Variable(np.ones(2, np.int64)))])
    with pytest.raises(IAE, match="cannot take an IndexedSlices"):
        opt.apply_gradients([(sg.IndexedSlices(np.ones((1,)), [0]), sg.Variable(1.0))])
    np.testing.assert_array_equal(w.numpy(), np.ones(2))
    assert opt.iterations_count == 0


def test_rowwise_adagrad_rejects_scalars_before_updating():
    a, s = sg.Variable(np.ones((2, 2))), sg.Variable(1.0)
    opt = sg.optimizers.RowwiseAdagrad(0.1)
    with pytest.raises(IAE, match="rows of at least one element"):
        opt.apply_gradients([(np.ones((2, 2)), a), (np.ones(()), s)])
    np.testing.assert_array_equal(a.numpy(), np.ones((2, 2)))


def test_float32_gradient_for_float64_variable_is_cast():
    w = sg.Variable(np.zeros(2))
    sg.optimizers.SGD(1.0).apply_gradients([(np.array([0.1, 0.2], np.float32), w)])
    np.testing.assert_array_equal(w.numpy(), -np.array([0.1, 0.2], np.float32).astype(np.float64))
