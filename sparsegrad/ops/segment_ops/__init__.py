"""Segment reductions: sorted (``segment_*``) and unsorted (``unsorted_segment_*``).

Row ``s`` of the result reduces the rows of `data` whose segment id is ``s``.
float32 and float64 data run the compiled kernels of ``_kernels/segment.pyx``
(each segment reduced by one thread, in the order of its rows, in the data's
dtype: the bits do not depend on the thread count).  Half data (float16,
bfloat16) is cast to float32 (exactly, a recorded cast), reduced by those
kernels and the result rounded once to the data's dtype (the mean and the
square-root-of-n ops divide in float32 before that one rounding; the empty
segments of the unsorted max and min get the half type's bounds, as in
TensorFlow); its gradients follow through the casts, so they too are the
float32 gradients rounded once.  Integers take a NumPy path.  Sorted ids are
checked in the same pass that reduces them; a problem is reported with
TensorFlow's message by
:func:`~sparsegrad.framework.sparse_rows.sorted_segment_splits`.

CuPy arrays (float32 / float64) run the CUDA twins of those kernels
(``_cuda/segment.cu``, through :mod:`sparsegrad.ops._device`): each output
element reduced by one device thread in the CPU's order, so the same bits;
the ids are checked with one device reduction and one read back first.
Integer CuPy data is reduced by CuPy operations in a fixed order, with the
CPU's results (integer sums and products wrap the same in any order);
float16 CuPy data is not supported (cast it to float32; CuPy has no
bfloat16).

Gradients w.r.t. `data` are dense Tensors (they cover every row of `data`);
segment ids and ``num_segments`` get None.  They are written with sparsegrad
ops (gather, divide, where, multiply), so they can be differentiated again;
the product's "product of the other rows" factor is computed by a kernel and
treated as a constant.

* :mod:`.common`: the reduction codes, argument checks, recording and the
  shared docstring sections.
* :mod:`.sorted_reductions`: ``segment_*``.
* :mod:`.unsorted_reductions`: ``unsorted_segment_*``.
* :mod:`.gradients`: the gradients of both kinds.

Every public op here is a :func:`~sparsegrad.framework.dispatch.api`: a
RaggedTensor `data` or `segment_ids` runs the handler of
:mod:`sparsegrad.ragged.segment_ops` (rows merged position by position).
"""

from . import common, gradients, sorted_reductions, unsorted_reductions  # noqa: F401
from .sorted_reductions import (
    segment_max,
    segment_mean,
    segment_min,
    segment_prod,
    segment_sqrt_n,
    segment_sum,
)
from .unsorted_reductions import (
    unsorted_segment_max,
    unsorted_segment_mean,
    unsorted_segment_min,
    unsorted_segment_prod,
    unsorted_segment_sqrt_n,
    unsorted_segment_sum,
)

__all__ = [
    "segment_sum",
    "segment_mean",
    "segment_max",
    "segment_min",
    "segment_prod",
    "segment_sqrt_n",
    "unsorted_segment_sum",
    "unsorted_segment_mean",
    "unsorted_segment_max",
    "unsorted_segment_min",
    "unsorted_segment_prod",
    "unsorted_segment_sqrt_n",
]
