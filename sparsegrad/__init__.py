"""sparsegrad: sparse-first autodiff and training kernels for NumPy and scipy.sparse.

A step of training costs what the rows it touches cost, never the size of the
table.
"""

from . import errors
from ._version import __version__
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

__all__ = [
    "__version__",
    "errors",
    "Tensor",
    "Variable",
    "IndexedSlices",
    "convert_to_tensor",
    "constant",
    "set_num_threads",
    "get_num_threads",
    "openmp_enabled",
]
