"""Learning-rate schedules.

The implementation lives in :mod:`sparsegrad.training.optimizers.schedules`;
this module re-exports its ``__all__``.
"""

from ..framework.public import publish
from ..training.optimizers import schedules as implementation
from ..training.optimizers.schedules import *  # noqa: F403

__all__ = publish(__name__, globals(), implementation.__all__)
