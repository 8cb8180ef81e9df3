"""Tape-based reverse-mode differentiation: GradientTape, the gradient
registry and custom_gradient."""

from .registry import no_gradient, register_gradient
from .tape import GradientTape, UnconnectedGradients, record_operation

__all__ = [
    "GradientTape",
    "UnconnectedGradients",
    "no_gradient",
    "record_operation",
    "register_gradient",
]
