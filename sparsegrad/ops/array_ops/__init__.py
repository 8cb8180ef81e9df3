"""Array ops: the base layer of the ops, importing no other op family.

Shape ops, slicing, joins, casts and constructors, the scatter-add of rows
and :func:`densify`, each with its gradient beside it; also the Sum op and
:func:`unbroadcast` (a broadcast's gradient is a sum) and the recorded row
gather that the scatter-add's gradient needs.  One module per sub-family:

* :mod:`.rows`: the checked GatherV2 and the index conversion;
* :mod:`.dense`: ``tensor_scatter_add`` and ``densify``;
* :mod:`.shapes`: ``reshape``, ``broadcast_to``, ``transpose``,
  ``expand_dims``, ``squeeze``, ``reduce_sum`` and ``unbroadcast``;
* :mod:`.slicing`: ``strided_slice``;
* :mod:`.joins`: ``concat`` and ``stack``;
* :mod:`.values`: ``cast``, ``identity``, ``stop_gradient``, ``zeros_like``,
  ``ones_like`` and ``one_hot``.
"""

from .dense import densify, tensor_scatter_add
from .joins import concat, stack
from .shapes import (
    broadcast_to,
    expand_dims,
    reshape,
    squeeze,
    transpose,
)
from .slicing import strided_slice
from .values import cast, identity, one_hot, ones_like, stop_gradient, zeros_like

__all__ = [
    "broadcast_to",
    "cast",
    "concat",
    "densify",
    "expand_dims",
    "identity",
    "one_hot",
    "ones_like",
    "reshape",
    "squeeze",
    "stack",
    "stop_gradient",
    "strided_slice",
    "tensor_scatter_add",
    "transpose",
    "zeros_like",
]

