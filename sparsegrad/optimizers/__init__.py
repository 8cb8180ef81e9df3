"""Keras-style optimizers: ``sparsegrad.optimizers.Adam`` and friends.

The implementation lives in :mod:`sparsegrad.training.optimizers`; this module
re-exports its ``__all__``.
"""

import importlib

from ..framework.public import publish
from ..training import optimizers as implementation
from ..training.optimizers import *  # noqa: F403

# The public schedules module, not the implementation's that the line above
# bound (``from . import schedules`` would find that attribute and stop).
schedules = importlib.import_module(f"{__name__}.schedules")

__all__ = publish(__name__, globals(), implementation.__all__)
