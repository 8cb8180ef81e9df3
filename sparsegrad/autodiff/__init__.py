"""Tape-based reverse-mode differentiation: GradientTape, the gradient
registry and custom_gradient.

Layers, bottom to top: :mod:`.registry` (op type -> gradient function) and
:mod:`.recording` (the tape stack and :func:`record_operation`) sit below the
ops, which record themselves through them; :mod:`.backward` (the backward pass
and gradient aggregation), :mod:`.tape` (GradientTape) and
:mod:`.custom_gradient` sit above the ops and import them.
This package is imported before :mod:`sparsegrad.ops`, so by the time an op
module asks for the recording layer it is complete.
"""

from . import nest, recording, registry
from .recording import record_operation
from .registry import no_gradient, register_gradient
from .tape import GradientTape, UnconnectedGradients

__all__ = [
    "GradientTape",
    "UnconnectedGradients",
    "nest",
    "no_gradient",
    "record_operation",
    "recording",
    "register_gradient",
    "registry",
]
