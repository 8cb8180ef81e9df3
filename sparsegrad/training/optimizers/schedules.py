"""Learning-rate schedules: functions of the optimizer's step count.

An optimizer calls its schedule once per :meth:`~Optimizer.apply_gradients`
with the number of steps taken *before* this one (0 on the first step), as
Keras does.  The values are computed in float64 and cast to each variable's
dtype by the optimizer.  (Keras evaluates schedules in float32, so float64
training with a non-representable schedule value differs from Keras in the
last bits.)
"""

import math
import numbers

from ...errors import InvalidArgumentError
from .registry import from_config, to_config

__all__ = [
    "LearningRateSchedule",
    "ExponentialDecay",
    "PiecewiseConstantDecay",
    "InverseTimeDecay",
    "serialize",
    "deserialize",
]


def _check_number(value, name, *, positive=False, non_negative=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise InvalidArgumentError(f"{name} must be finite, got {value!r}")
    if positive and not value > 0:
        raise InvalidArgumentError(f"{name} must be > 0, got {value!r}")
    if non_negative and not value >= 0:
        raise InvalidArgumentError(f"{name} must be >= 0, got {value!r}")
    return value


def _check_step(step):
    try:
        step = float(step)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"step must be a number, got {step!r}") from None
    if not step >= 0:
        raise InvalidArgumentError(f"step must be >= 0, got {step!r}")
    return step


class LearningRateSchedule:
    """Base class of learning-rate schedules.

    A schedule is called with the step count and returns the learning rate as
    a Python float.  Subclasses implement ``__call__(step)`` and
    ``get_config()``; :meth:`from_config` rebuilds one from its config.  Any
    other callable of one argument works as an optimizer's learning rate too,
    but only schedules survive :meth:`Optimizer.get_config`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> class Halving(sg.optimizers.schedules.LearningRateSchedule):
    ...     def __init__(self, initial):
    ...         self.initial = initial
    ...     def __call__(self, step):
    ...         return self.initial / 2 ** step
    ...     def get_config(self):
    ...         return {"initial": self.initial}
    >>> schedule = Halving(0.4)
    >>> schedule(0), schedule(2)
    (0.4, 0.1)
    >>> Halving.from_config(schedule.get_config()) == schedule
    True
    """

    def __call__(self, step):
        raise NotImplementedError(f"{type(self).__name__} does not define __call__")

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} does not define get_config")

    @classmethod
    def from_config(cls, config):
        """Build the schedule from the dict :meth:`get_config` returned."""
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        return type(self) is type(other) and self.get_config() == other.get_config()

    __hash__ = None


class _DecayOverSteps(LearningRateSchedule):
    """Shared by the schedules that decay by ``step / decay_steps``: their
    arguments, the (optionally floored) progress and the config."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False):
        self.initial_learning_rate = _check_number(
            initial_learning_rate, "initial_learning_rate")
        self.decay_steps = _check_number(decay_steps, "decay_steps", positive=True)
        self.decay_rate = _check_number(decay_rate, "decay_rate")
        self.staircase = bool(staircase)

    def _progress(self, step):
        """``step / decay_steps``, floored when `staircase`."""
        p = _check_step(step) / self.decay_steps
        if self.staircase:
            p = math.floor(p)
        return p

    def get_config(self):
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "decay_rate": self.decay_rate,
            "staircase": self.staircase,
        }


class ExponentialDecay(_DecayOverSteps):
    r"""Decay the learning rate by `decay_rate` every `decay_steps` steps.

    .. math::

        \mathrm{lr}(t) = \mathrm{lr}_0 \cdot r^{\,p}, \qquad
        p = t / \mathrm{decay\_steps}\ \text{(floored when staircase)}

    Parameters
    ----------
    initial_learning_rate : float
    decay_steps : int or float, > 0
    decay_rate : float
    staircase : bool, default=False
        Floor ``t / decay_steps``, so the rate changes in steps.

    Examples
    --------
    >>> s = sg.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10,
    ...                                              decay_rate=0.5)
    >>> round(s(0), 6), round(s(10), 6), round(s(5), 6)
    (0.1, 0.05, 0.070711)
    >>> sg.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5, staircase=True)(19)
    0.05
    """

    def __call__(self, step):
        p = self._progress(step)
        return self.initial_learning_rate * self.decay_rate**p


class PiecewiseConstantDecay(LearningRateSchedule):
    """A constant learning rate on each interval between boundaries.

    The rate is ``values[0]`` while ``step <= boundaries[0]``, ``values[i]``
    while ``boundaries[i-1] < step <= boundaries[i]``, and ``values[-1]`` once
    ``step > boundaries[-1]`` (Keras' convention: a boundary belongs to the
    interval before it).

    Parameters
    ----------
    boundaries : sequence of numbers, strictly increasing
    values : sequence of float, one longer than `boundaries`

    Examples
    --------
    >>> s = sg.optimizers.schedules.PiecewiseConstantDecay([100, 200],
    ...                                                    [1.0, 0.5, 0.1])
    >>> s(0), s(100), s(101), s(200), s(201)
    (1.0, 1.0, 0.5, 0.5, 0.1)
    """

    def __init__(self, boundaries, values):
        boundaries = [
            _check_number(b, f"boundaries[{i}]") for i, b in enumerate(boundaries)
        ]
        values = [_check_number(v, f"values[{i}]") for i, v in enumerate(values)]
        if len(values) != len(boundaries) + 1:
            raise InvalidArgumentError(
                f"values must have one more entry than boundaries: got "
                f"{len(boundaries)} boundaries and {len(values)} values"
            )
        for i in range(1, len(boundaries)):
            if not boundaries[i] > boundaries[i - 1]:
                raise InvalidArgumentError(
                    f"boundaries must be strictly increasing: boundaries[{i - 1}] = "
                    f"{boundaries[i - 1]!r} >= boundaries[{i}] = {boundaries[i]!r}"
                )
        self.boundaries = boundaries
        self.values = values

    def __call__(self, step):
        step = _check_step(step)
        for boundary, value in zip(self.boundaries, self.values):
            if step <= boundary:
                return value
        return self.values[-1]

    def get_config(self):
        return {"boundaries": list(self.boundaries), "values": list(self.values)}


class InverseTimeDecay(_DecayOverSteps):
    r"""Decay the learning rate as ``1 / (1 + decay_rate * t / decay_steps)``.

    .. math::

        \mathrm{lr}(t) = \frac{\mathrm{lr}_0}{1 + r \cdot p}, \qquad
        p = t / \mathrm{decay\_steps}\ \text{(floored when staircase)}

    Parameters
    ----------
    initial_learning_rate, decay_steps, decay_rate, staircase
        As for :class:`ExponentialDecay`.

    Examples
    --------
    >>> s = sg.optimizers.schedules.InverseTimeDecay(1.0, decay_steps=2,
    ...                                              decay_rate=0.5)
    >>> s(0), s(2), s(3)
    (1.0, 0.6666666666666666, 0.5714285714285714)
    >>> sg.optimizers.schedules.InverseTimeDecay(1.0, 2, 0.5, staircase=True)(3)
    0.6666666666666666
    """

    def __call__(self, step):
        p = self._progress(step)
        return self.initial_learning_rate / (1.0 + self.decay_rate * p)


_SCHEDULES = {
    cls.__name__: cls
    for cls in (ExponentialDecay, PiecewiseConstantDecay, InverseTimeDecay)
}


def serialize(schedule):
    """``{"class_name": ..., "config": ...}`` for a built-in schedule.

    Parameters
    ----------
    schedule : LearningRateSchedule

    Returns
    -------
    dict
        The class name and the schedule's ``get_config()``.

    Raises
    ------
    TypeError
        If `schedule` is not a LearningRateSchedule.

    Examples
    --------
    >>> config = sg.optimizers.schedules.serialize(
    ...     sg.optimizers.schedules.PiecewiseConstantDecay([10], [1.0, 0.5]))
    >>> config["class_name"], config["config"]
    ('PiecewiseConstantDecay', {'boundaries': [10.0], 'values': [1.0, 0.5]})
    """
    return to_config(schedule, LearningRateSchedule, "a LearningRateSchedule")


def deserialize(config, custom_objects=None):
    """Rebuild a schedule from :func:`serialize`'s dict.

    Parameters
    ----------
    config : dict
        ``{"class_name": ..., "config": ...}``, as :func:`serialize` gives.
    custom_objects : dict, optional
        Further class names mapped to schedule classes.

    Returns
    -------
    LearningRateSchedule

    Raises
    ------
    InvalidArgumentError
        If `config` lacks its keys or names an unknown class.

    Examples
    --------
    >>> s = sg.optimizers.schedules.deserialize({
    ...     "class_name": "InverseTimeDecay",
    ...     "config": {"initial_learning_rate": 1.0, "decay_steps": 1,
    ...                "decay_rate": 1.0}})
    >>> s(1)
    0.5
    """
    return from_config(config, _SCHEDULES, custom_objects, "a schedule")
