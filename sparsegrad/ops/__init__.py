"""Ops: one module (or subpackage) per op family, each forward next to its
registered gradient.

The ops record themselves through :mod:`sparsegrad.autodiff.recording`.  The
families are layered, each importing only those below it, so there is no
import circle:

1. :mod:`.array_ops`, the base: shapes, joins, slicing, values and dense
   scatter (with :mod:`._helpers`, the argument conversion);
2. :mod:`.math_ops`: elementwise arithmetic, comparisons, where and matmul;
3. :mod:`.reduction_ops` and :mod:`.unary_ops`;
4. the families built on them: :mod:`.nn_ops`, :mod:`.embedding`
   (:mod:`.embedding_ops`), :mod:`.segment_ops`, :mod:`.sparse_segment_ops`,
   :mod:`.clip_ops`, :mod:`.sparse_ops` and :mod:`.collective_ops`.

A gradient is written with the ops of its own layer and those below it.
"""

from types import SimpleNamespace as _Namespace

from ..framework import tensor as _tensor_module
from . import (
    array_ops,
    embedding_ops,
    math_ops,
    nn_ops,
    reduction_ops,
    segment_ops,
    sparse_ops,
    unary_ops,
)
from ._helpers import read_variable

__all__ = [
    "array_ops",
    "embedding_ops",
    "math_ops",
    "nn_ops",
    "reduction_ops",
    "segment_ops",
    "sparse_ops",
    "unary_ops",
]

_tensor_module.install_operators(
    _Namespace(
        **{name: getattr(math_ops, name) for name in (
            "add", "subtract", "multiply", "divide", "matmul", "pow", "less",
            "less_equal", "greater", "greater_equal")},
        negative=unary_ops.negative,
        abs=unary_ops.abs,
        strided_slice=array_ops.strided_slice,
        read_variable=read_variable,
    )
)
