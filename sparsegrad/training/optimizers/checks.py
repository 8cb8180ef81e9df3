"""The optimizers' hyper-parameter checks, and the one declaration of each
optimizer's constructor hyper-parameters (:class:`Hyper`), from which the
constructor checks and stores them, ``get_config`` lists them and the class
docstring's Parameters section is written."""

import functools
import inspect
import math
import numbers
from typing import Callable, NamedTuple

import numpy as np

from ...errors import InvalidArgumentError
from ...framework.dtypes import BFLOAT16, FLOAT16
from . import schedules as _schedules

__all__ = ["check_number", "check_learning_rate", "check_clip", "check_slot_dtype",
           "Hyper", "real",
           "flag", "parameters_section", "gradient_pairs"]


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


def check_slot_dtype(value):
    """None, or the dtype float32, float16 or bfloat16 that `value` names."""
    if value is None:
        return None
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    if dtype not in (np.dtype(np.float32), FLOAT16, BFLOAT16):
        raise InvalidArgumentError(
            f"slot_dtype must be None, float32, float16 or bfloat16, got {value!r}")
    return dtype


class Hyper(NamedTuple):
    """One constructor hyper-parameter of an optimizer.

    An optimizer lists them in ``_hyperparameters`` (name -> Hyper, in the
    constructor's order); :class:`~.base.Optimizer` checks and stores each
    value the constructor passes on, lists them in ``_config_keys`` and
    writes them into the docstring's Parameters section.
    """

    #: The type as the docstring names it, e.g. ``"float in [0, 1)"``.
    kind: str
    #: ``check(value, name)``: the value to store, or InvalidArgumentError.
    check: Callable
    #: Further text for the docstring (may be empty).
    note: str = ""


def real(low=None, high=None, *, low_open=False, high_open=False, note=""):
    """A real hyper-parameter within bounds (:func:`check_number`)."""
    if low is not None and high is not None:
        kind = (f"float in {'(' if low_open else '['}{low:g}, "
                f"{high:g}{')' if high_open else ']'}")
    elif low is not None:
        kind = f"float {'>' if low_open else '>='} {low:g}"
    elif high is not None:
        kind = f"float {'<' if high_open else '<='} {high:g}"
    else:
        kind = "float"
    check = functools.partial(check_number, low=low, high=high, low_open=low_open,
                              high_open=high_open)
    return Hyper(kind, check, note)


def _as_bool(value, name):
    del name
    return bool(value)


def flag(note=""):
    """A boolean hyper-parameter (any value, taken as its truth)."""
    return Hyper("bool", _as_bool, note)


def _entry(head, note):
    return head + ("\n    " + note if note else "")


def parameters_section(cls, learning_rate_note=""):
    """The Parameters section of optimizer class `cls`: the learning rate,
    its ``_hyperparameters`` and the common arguments, with the defaults of
    its constructor."""
    defaults = {name: p.default
                for name, p in inspect.signature(cls.__init__).parameters.items()}
    lines = [_entry("learning_rate : float, LearningRateSchedule or callable, "
                    f"default={defaults['learning_rate']!r}", learning_rate_note)]
    for name, hyper in cls._hyperparameters.items():
        lines.append(_entry(f"{name} : {hyper.kind}, default={defaults[name]!r}",
                            hyper.note))
    lines.append(f'name : str, default="{defaults["name"]}"')
    lines.append("clipnorm, clipvalue, global_clipnorm : float, optional\n"
                 "    See :class:`Optimizer` (at most one of them).")
    lines.append("slot_dtype, stochastic_rounding, seed : optional\n"
                 "    Half-precision variables: see :class:`Optimizer`.")
    return "Parameters\n----------\n" + "\n".join(lines) + "\n"


def gradient_pairs(grads_and_vars):
    """Yield ``(k, gradient, variable)`` for each entry of `grads_and_vars`.

    Raises InvalidArgumentError naming the entry that is not a pair.
    """
    for k, pair in enumerate(grads_and_vars):
        try:
            grad, var = pair
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"grads_and_vars[{k}] must be a (gradient, variable) pair, got "
                f"{pair!r}"
            ) from None
        yield k, grad, var
