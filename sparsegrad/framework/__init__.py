"""Core types: Tensor, Variable, IndexedSlices; dtypes, threads and dispatch."""

from .indexed_slices import IndexedSlices
from .tensor import Tensor, constant, convert_to_tensor
from .threads import get_num_threads, openmp_enabled, set_num_threads
from .variable import Variable

__all__ = [
    "Tensor",
    "Variable",
    "IndexedSlices",
    "convert_to_tensor",
    "constant",
    "set_num_threads",
    "get_num_threads",
    "openmp_enabled",
]
