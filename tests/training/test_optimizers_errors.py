"""Bad hyper-parameters and bad gradients: a clear error, and nothing changes."""

import numpy as np
import pytest

import sparsegrad as sg

IAE = sg.errors.InvalidArgumentError


@pytest.mark.parametrize("make,match", [
    (lambda: sg.optimizers.SGD(learning_rate=-0.1),
     "learning_rate must be >= 0.0, got -0.1"),
    (lambda: sg.optimizers.SGD(learning_rate="fast"),
     "learning_rate must be a real number"),
    (lambda: sg.optimizers.SGD(learning_rate=float("nan")),
     "learning_rate must be finite"),
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
    (lambda: sg.optimizers.Adam(amsgrad=True, lazy=True),
     "amsgrad=True cannot be combined"),
    (lambda: sg.optimizers.AdamW(weight_decay=-0.1), "weight_decay must be >= 0.0"),
    (lambda: sg.optimizers.Adamax(beta_1=2.0), "beta_1 must be < 1.0"),
    (lambda: sg.optimizers.Lion(beta_1=0.0), "beta_1 must be > 0.0, got 0.0"),
    (lambda: sg.optimizers.Lion(beta_1=1.5), "beta_1 must be <= 1.0, got 1.5"),
    (lambda: sg.optimizers.Lion(beta_2=float("inf")), "beta_2 must be finite"),
    (lambda: sg.optimizers.Lamb(beta_2=1.0), "beta_2 must be < 1.0, got 1.0"),
    (lambda: sg.optimizers.Lamb(epsilon=-1e-7), "epsilon must be >= 0.0"),
    (lambda: sg.optimizers.Lamb(beta_1=float("nan")), "beta_1 must be"),
    (lambda: sg.optimizers.Ftrl(learning_rate_power=0.5),
     "learning_rate_power must be <= 0.0, got 0.5"),
    (lambda: sg.optimizers.Ftrl(learning_rate=0.0),
     "Ftrl needs learning_rate > 0, got 0.0"),
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
    (lambda: sg.optimizers.ProximalAdagrad(learning_rate=0.0),
     "needs learning_rate > 0"),
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
    with pytest.raises(IAE, match=r"needs learning_rate > 0, got 0\.0 at step 1"):
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
    with pytest.raises(TypeError, match=r"must be a sparsegrad\.Variable"):
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
    np.testing.assert_array_equal(
        w.numpy(), -np.array([0.1, 0.2], np.float32).astype(np.float64)
    )


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -0.5, np.float32("inf")])
def test_learning_rate_callable_must_return_a_finite_non_negative_number(value):
    w = sg.Variable(np.ones(2))
    opt = sg.optimizers.SGD(learning_rate=lambda step: value)
    with pytest.raises(IAE, match=r"learning-rate callable returned .* at step 0; "
                                  "expected a finite number >= 0"):
        opt.apply_gradients([(np.ones(2), w)])
    np.testing.assert_array_equal(w.numpy(), np.ones(2))
    assert opt.iterations_count == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scalar_variable_trains(dtype):
    # SGD(0.25) on w = 2 with the tape's gradient of w**2 (4): exactly 1.
    w = sg.Variable(dtype(2.0))
    with sg.GradientTape() as tape:
        loss = w**2
    grad = tape.gradient(loss, w)
    sg.optimizers.SGD(0.25).apply_gradients([(grad, w)])
    assert w.shape == () and w.dtype == dtype
    assert w.numpy() == 1.0
    for name in ["Adam", "Adagrad", "Ftrl", "RMSprop", "Adadelta", "Adamax",
                 "ProximalAdagrad", "ProximalGradientDescent"]:
        v, ref = sg.Variable(dtype(2.0)), sg.Variable(np.full(1, 2.0, dtype))
        a, b = getattr(sg.optimizers, name)(0.1), getattr(sg.optimizers, name)(0.1)
        for _ in range(3):
            a.apply_gradients([(dtype(1.5), v)])
            b.apply_gradients([(np.full(1, 1.5, dtype), ref)])
        assert v.shape == ()
        assert v.numpy().tobytes() == ref.numpy().tobytes(), name


@pytest.mark.parametrize("sparse", [False, True])
def test_gradient_viewing_a_slot_is_copied_first(sparse):
    # The update writes the slots: a gradient that is a view of one is read
    # from a copy, so the step is the one of an independent gradient.
    def run(alias):
        w = sg.Variable(np.linspace(-1, 1, 8).reshape(4, 2))
        opt = sg.optimizers.Adam(0.1)
        opt.apply_gradients([(np.full((4, 2), 0.5), w)])
        m = opt.get_slot(w, "m")
        values = m._value[:2] if alias else m.numpy()[:2]
        grad = sg.IndexedSlices._from_trusted(values, np.array([3, 1]), (4, 2)) \
            if sparse else (m._value if alias else m.numpy())
        opt.apply_gradients([(grad, w)])
        return [v.numpy() for v in [w] + opt.variables()]

    for a, b in zip(run(True), run(False)):
        assert a.tobytes() == b.tobytes()
