"""Learning-rate schedules.

The implementation lives in :mod:`sparsegrad.training.optimizers.schedules`.
"""

from ..training.optimizers.schedules import (
    ExponentialDecay,
    InverseTimeDecay,
    LearningRateSchedule,
    PiecewiseConstantDecay,
    deserialize,
    serialize,
)

__all__ = [
    "LearningRateSchedule",
    "ExponentialDecay",
    "PiecewiseConstantDecay",
    "InverseTimeDecay",
    "serialize",
    "deserialize",
]
