"""Elementwise arithmetic of two operands, where, comparisons and matmul.

The layer above :mod:`sparsegrad.ops.array_ops`.  Each op converts its
arguments (a Python scalar or array_like operand adopts the dtype of the
Tensor operand), computes with NumPy (CuPy for GPU operands), wraps the
result and records itself once through
:func:`~sparsegrad.autodiff.recording.record_operation`; its gradient is
registered beside it.  Binary ops broadcast as NumPy does; their gradients
sum back to each input's shape
(:func:`~sparsegrad.ops.array_ops.shapes.unbroadcast`).  Gradients are
written with sparsegrad ops, so they are differentiable again.

* :mod:`.broadcasting`: what the binary ops share (checks, the ufunc call,
  the gradients summed back, the docstring text);
* :mod:`.compare`: ``equal``, ``less``, ... (no gradient);
* :mod:`.select`: ``maximum``, ``minimum``, ``where``;
* :mod:`.arithmetic`: ``add``, ``subtract``, ``add_n``, ``multiply``,
  ``divide``, ``pow``, and ``negative`` and ``log``, which their gradients
  use (public in :mod:`sparsegrad.ops.unary_ops`);
* :mod:`.division`: ``floordiv``, ``floormod``, ``truncatediv``,
  ``truncatemod``, ``divide_no_nan``, ``squared_difference``, ``truediv``;
* :mod:`.logical`: ``logical_and``, ``logical_or``, ``logical_xor``,
  ``logical_not`` (bool Tensors);
* :mod:`.matmul`: ``matmul``.

Every public op here dispatches (:func:`sparsegrad.framework.dispatch.api`):
``sparsegrad.ragged`` serves RaggedTensor operands.
"""

from .arithmetic import add, add_n, divide, multiply, pow, subtract
from .compare import equal, greater, greater_equal, less, less_equal, not_equal
from .division import (
    divide_no_nan,
    floordiv,
    floormod,
    squared_difference,
    truediv,
    truncatediv,
    truncatemod,
)
from .logical import logical_and, logical_not, logical_or, logical_xor
from .matmul import matmul
from .select import maximum, minimum, where

__all__ = [
    "add",
    "add_n",
    "divide",
    "divide_no_nan",
    "floordiv",
    "floormod",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "squared_difference",
    "truediv",
    "truncatediv",
    "truncatemod",
    "equal",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "matmul",
    "maximum",
    "minimum",
    "multiply",
    "not_equal",
    "pow",
    "subtract",
    "where",
]
