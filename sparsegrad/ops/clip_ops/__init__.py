"""Clipping: by value, by norm, by the global norm of a list, and that norm.

Each function takes Tensors, Variables, array_likes and
:class:`~sparsegrad.IndexedSlices`; an IndexedSlices comes back as an
IndexedSlices over the same indices (only its values change), so a sparse
gradient stays sparse through clipping.  Norms of an IndexedSlices are those
of the tensor it represents: rows of a repeated index are summed before they
are squared (TensorFlow squares the raw values instead; the two agree when the
indices are distinct).

Sums of squares are accumulated in float64 in an order fixed by the data, not
the thread count, in one kernel pass (``sparsegrad._kernels.clip``); each norm
is rounded once to the inputs' dtype; scalars such as the global-norm scale are
computed in that dtype with TensorFlow's formulas.  Half inputs (float16,
bfloat16) are converted to float32 for the kernel (exactly; a large dense
tensor piece by piece, ``rows.squares_batches``), so their norm is the wide
norm rounded once to the half type (TensorFlow sums their squares in the half
type, which overflows float16 once the norm passes 256); the clipped values are
computed in the half type as TensorFlow computes them.  Gradients w.r.t. half
inputs are computed in float64 and rounded once to the input's dtype.  Every
function records itself on active tapes; the gradient functions sit next to the
forward functions.  Their results are computed with the arrays' module (NumPy
or CuPy), not with sparsegrad ops, so a gradient of a clip op is not itself
differentiable (second-order gradients through clipping are not supported).

CuPy arguments are clipped on the GPU (``sparsegrad._cuda.clip``) with the
CPU's bits: sums of squares follow the CPU kernel's block order, and a norm
never leaves the device (a Tensor `clip_norm` or `use_norm` there is read back,
one scalar).  Gradients of GPU arguments are computed on the GPU with the CPU's
operations in its order (float64 sums by CuPy's reductions) and stay there.

* :mod:`.rows`: the arguments (values or IndexedSlices), sums of squares,
  scaling; ``sum_of_squares`` for the optimizers.
* :mod:`.by_value`: ``clip_by_value``.
* :mod:`.by_norm`: ``clip_by_norm``, ``clip_by_average_norm``.
* :mod:`.global_norm`: ``global_norm``, ``clip_by_global_norm``,
  ``global_norm_scale``.
"""

from .by_norm import clip_by_average_norm, clip_by_norm
from .by_value import clip_by_value
from .global_norm import (  # noqa: F401  (global_norm_scale: the optimizers')
    clip_by_global_norm,
    global_norm,
    global_norm_scale,
)
from .rows import sum_of_squares  # noqa: F401  (the optimizers')

__all__ = [
    "clip_by_average_norm",
    "clip_by_global_norm",
    "clip_by_norm",
    "clip_by_value",
    "global_norm",
]
