"""Learning-rate schedules against hand-computed values, and their use."""

import math

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.optimizers import schedules


def test_exponential_decay_values():
    s = schedules.ExponentialDecay(0.5, decay_steps=4, decay_rate=0.25)
    assert s(0) == 0.5
    assert s(4) == 0.125
    assert s(8) == 0.03125
    assert math.isclose(s(2), 0.25, rel_tol=1e-15)          # 0.5 * 0.25 ** 0.5
    assert math.isclose(s(1), 0.5 * 0.25**0.25, rel_tol=1e-15)


def test_exponential_decay_staircase():
    s = schedules.ExponentialDecay(0.5, decay_steps=4, decay_rate=0.25, staircase=True)
    assert [s(t) for t in (0, 3, 4, 7, 8)] == [0.5, 0.5, 0.125, 0.125, 0.03125]


def test_piecewise_constant_boundaries_belong_to_the_interval_before():
    s = schedules.PiecewiseConstantDecay([10, 20], [0.1, 0.01, 0.001])
    assert [s(t) for t in (0, 10, 11, 20, 21, 1000)] == [
        0.1, 0.1, 0.01, 0.01, 0.001, 0.001
    ]


def test_inverse_time_decay_values():
    s = schedules.InverseTimeDecay(1.0, decay_steps=10, decay_rate=0.5)
    assert s(0) == 1.0
    assert s(10) == 1 / 1.5
    assert s(5) == 1 / 1.25
    st = schedules.InverseTimeDecay(1.0, decay_steps=10, decay_rate=0.5, staircase=True)
    assert st(9) == 1.0
    assert st(10) == 1 / 1.5
    assert st(25) == 1 / 2.0


@pytest.mark.parametrize("schedule", [
    schedules.ExponentialDecay(0.1, 3, 0.9, staircase=True),
    schedules.PiecewiseConstantDecay([1, 2], [1.0, 0.5, 0.25]),
    schedules.InverseTimeDecay(0.1, 2, 1.0),
])
def test_serialize_round_trip(schedule):
    config = schedules.serialize(schedule)
    again = schedules.deserialize(config)
    assert again == schedule
    assert [again(t) for t in range(6)] == [schedule(t) for t in range(6)]


@pytest.mark.parametrize("make,match", [
    (lambda: schedules.ExponentialDecay(0.1, 0, 0.5), "decay_steps must be > 0"),
    (lambda: schedules.InverseTimeDecay(0.1, -1, 0.5), "decay_steps must be > 0"),
    (lambda: schedules.ExponentialDecay("a", 1, 0.5), "initial_learning_rate"),
    (lambda: schedules.PiecewiseConstantDecay([1, 2], [1.0, 2.0]), "one more entry"),
    (lambda: schedules.PiecewiseConstantDecay([2, 1], [1.0, 2.0, 3.0]), "increasing"),
    (lambda: schedules.deserialize({"class_name": "Nope", "config": {}}),
     "unknown schedule"),
])
def test_bad_arguments(make, match):
    with pytest.raises(sg.errors.InvalidArgumentError, match=match):
        make()


def test_optimizer_calls_schedule_with_completed_steps():
    seen = []

    def lr(step):
        seen.append(step)
        return 1.0 / (step + 1)

    w = sg.Variable(np.zeros(1))
    opt = sg.optimizers.SGD(learning_rate=lr)
    for _ in range(3):
        opt.apply_gradients([(np.ones(1), w)])
    assert seen == [0, 1, 2]
    np.testing.assert_allclose(w.numpy(), [-(1 + 1 / 2 + 1 / 3)], rtol=1e-15)
    assert opt.current_learning_rate() == 0.25


def test_schedule_drives_the_step_size():
    s = schedules.PiecewiseConstantDecay([0], [1.0, 0.25])
    w = sg.Variable(np.zeros(1))
    opt = sg.optimizers.SGD(learning_rate=s)
    opt.apply_gradients([(np.ones(1), w)])      # step 0: lr 1
    opt.apply_gradients([(np.ones(1), w)])      # step 1: lr 0.25
    np.testing.assert_array_equal(w.numpy(), [-1.25])


def test_callable_returning_bad_value_is_rejected_before_any_update():
    w = sg.Variable(np.ones(2))
    opt = sg.optimizers.SGD(learning_rate=lambda step: -1.0)
    with pytest.raises(sg.errors.InvalidArgumentError, match="learning-rate callable"):
        opt.apply_gradients([(np.ones(2), w)])
    np.testing.assert_array_equal(w.numpy(), np.ones(2))
    assert opt.iterations_count == 0
