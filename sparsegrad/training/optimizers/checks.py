"""The optimizers' hyper-parameter checks."""

import math
import numbers

from ...errors import InvalidArgumentError
from . import schedules as _schedules

__all__ = ["check_number", "check_learning_rate", "check_clip"]


def check_number(value, name, *, low=None, high=None, low_open=False, high_open=False):
    """A finite real hyper-parameter within bounds, as a Python float.

    Raises InvalidArgumentError naming `name` and the value otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise InvalidArgumentError(f"{name} must be finite, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        relation = ">" if low_open else ">="
        raise InvalidArgumentError(f"{name} must be {relation} {low}, got {value!r}")
    if high is not None and (value >= high if high_open else value > high):
        relation = "<" if high_open else "<="
        raise InvalidArgumentError(f"{name} must be {relation} {high}, got {value!r}")
    return value


def check_learning_rate(learning_rate):
    """A schedule or callable as it is, else a float >= 0."""
    if isinstance(learning_rate, _schedules.LearningRateSchedule):
        return learning_rate
    if callable(learning_rate):
        return learning_rate
    return check_number(learning_rate, "learning_rate", low=0.0)


def check_clip(value, name):
    """None, or a float > 0 (clipnorm, clipvalue, global_clipnorm)."""
    if value is None:
        return None
    return check_number(value, name, low=0.0, low_open=True)

