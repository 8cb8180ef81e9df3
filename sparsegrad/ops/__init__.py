"""Ops: one module per op family, each forward next to its registered gradient.

The ops record themselves through :mod:`sparsegrad.autodiff.recording`; the
op families call one another through module imports (the gradient of one
family is written with the ops of another, and the other way round).
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
        add=math_ops.add,
        subtract=math_ops.subtract,
        multiply=math_ops.multiply,
        divide=math_ops.divide,
        matmul=math_ops.matmul,
        pow=math_ops.pow,
        negative=unary_ops.negative,
        abs=unary_ops.abs,
        less=math_ops.less,
        less_equal=math_ops.less_equal,
        greater=math_ops.greater,
        greater_equal=math_ops.greater_equal,
        strided_slice=array_ops.strided_slice,
        read_variable=read_variable,
    )
)
