"""Ops: one module per op family, each forward next to its registered gradient."""

from types import SimpleNamespace as _Namespace

from ..framework import tensor as _tensor_module
from . import array_ops, math_ops
from ._helpers import read_variable as _read_variable

_tensor_module._install_operators(
    _Namespace(
        add=math_ops.add,
        subtract=math_ops.subtract,
        multiply=math_ops.multiply,
        divide=math_ops.divide,
        matmul=math_ops.matmul,
        pow=math_ops.pow,
        negative=math_ops.negative,
        abs=math_ops.abs,
        less=math_ops.less,
        less_equal=math_ops.less_equal,
        greater=math_ops.greater,
        greater_equal=math_ops.greater_equal,
        strided_slice=array_ops.strided_slice,
        read_variable=_read_variable,
    )
)
