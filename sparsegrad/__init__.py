"""sparsegrad: sparse-first autodiff and training kernels for NumPy and scipy.sparse.

A step of training costs what the rows it touches cost, never the size of the
table.
"""

# autodiff comes first: its recording layer sits below the ops, and its tape
# module imports the ops (see sparsegrad.autodiff).
from . import autodiff, errors, linalg, nn, optimizers, sparse, testing, training_ops
from ._version import __version__
from .autodiff import (
    GradientTape,
    UnconnectedGradients,
    no_gradient,
    register_gradient,
)
from .autodiff.custom_gradient import custom_gradient
from .framework import (
    IndexedSlices,
    Tensor,
    Variable,
    constant,
    convert_to_tensor,
    get_num_threads,
    openmp_enabled,
    set_num_threads,
)
from .framework.densify_warning import (
    get_densify_warning_threshold,
    set_densify_warning_threshold,
)
from .ops.array_ops import (
    broadcast_to,
    cast,
    concat,
    expand_dims,
    identity,
    one_hot,
    ones_like,
    reshape,
    squeeze,
    stack,
    stop_gradient,
    strided_slice,
    tensor_scatter_add,
    transpose,
    zeros_like,
)
from .ops.clip_ops import (
    clip_by_average_norm,
    clip_by_global_norm,
    clip_by_norm,
    clip_by_value,
    global_norm,
)
from .ops.embedding_ops import gather, gather_nd
from .ops.math_ops import (
    add,
    add_n,
    divide,
    equal,
    greater,
    greater_equal,
    less,
    less_equal,
    matmul,
    maximum,
    minimum,
    multiply,
    not_equal,
    pow,
    subtract,
    where,
)
from .ops.reduction_ops import reduce_max, reduce_mean, reduce_min, reduce_sum
from .ops.unary_ops import (
    abs,
    exp,
    log,
    log1p,
    negative,
    rsqrt,
    sigmoid,
    sign,
    sqrt,
    square,
    tanh,
)

__all__ = [
    "autodiff",
    "optimizers",
    "nn",
    "sparse",
    "gather",
    "gather_nd",
    "__version__",
    "errors",
    "training_ops",
    "Tensor",
    "Variable",
    "IndexedSlices",
    "convert_to_tensor",
    "constant",
    "set_num_threads",
    "get_densify_warning_threshold",
    "set_densify_warning_threshold",
    "get_num_threads",
    "openmp_enabled",
    # autodiff
    "GradientTape",
    "UnconnectedGradients",
    "custom_gradient",
    "register_gradient",
    "no_gradient",
    "stop_gradient",
    "testing",
    # math ops
    "add",
    "subtract",
    "multiply",
    "divide",
    "negative",
    "square",
    "sqrt",
    "rsqrt",
    "exp",
    "log",
    "log1p",
    "abs",
    "pow",
    "maximum",
    "minimum",
    "tanh",
    "sigmoid",
    "sign",
    "where",
    "add_n",
    "reduce_sum",
    "reduce_mean",
    "reduce_max",
    "reduce_min",
    "matmul",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    # array ops
    "reshape",
    "transpose",
    "expand_dims",
    "squeeze",
    "concat",
    "stack",
    "strided_slice",
    "cast",
    "identity",
    "one_hot",
    "zeros_like",
    "ones_like",
    "broadcast_to",
    "tensor_scatter_add",
    # clipping
    "linalg",
    "clip_by_value",
    "clip_by_norm",
    "global_norm",
    "clip_by_global_norm",
    "clip_by_average_norm",
]
