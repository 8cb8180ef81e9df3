"""Raw training ops: TensorFlow's ``Apply*`` and ``SparseApply*`` kernels, in place.

The names are TensorFlow's op names in snake_case, without ``Resource``
(``ResourceSparseApplyAdagradV2`` is :func:`sparse_apply_adagrad_v2`), and the
arguments come in TensorFlow's order.  The arithmetic follows TensorFlow 2.21's
CPU kernels operation for operation, with the same rounding, except that
``rsqrt(x)`` is computed as ``1 / sqrt(x)`` (TensorFlow's float32 kernels use a
hardware estimate).

* `var` and its slots are updated in place.  Each is a writeable C-contiguous
  NumPy array of dtype float32 or float64, or a :class:`~sparsegrad.Variable`
  (whose version is bumped); all share one dtype.  Nothing is copied behind
  your back: a read-only or non-contiguous array is an error.
* Hyper-parameters are Python numbers or 0-d arrays, rounded to var's dtype.
* `grad` is any array_like; an array or Tensor must have var's dtype.
* ``use_locking=True`` holds a lock on each updated buffer, so that
  concurrent calls on the same arrays from several Python threads run one
  after another (the kernels release the GIL).
* Every failed check raises :class:`~sparsegrad.errors.InvalidArgumentError`
  with TensorFlow's message, before anything is written: on error `var` and
  the slots are bit-for-bit unchanged.

Sparse ops update the rows ``indices`` (int32 or int64, each in
``[0, var.shape[0])``) of `var` and of the slots with the rows of `grad`.  A
repeated index gets the full update once per occurrence, in order, as in
TensorFlow; distinct rows are processed in parallel and the result is the same
for any thread count.  With ``coalesce_duplicates=True`` the rows of a
repeated index are summed first (in their original order) and the update runs
once per distinct index, as Keras' optimizers do.  Rows not indexed are
untouched.  ``sparse_apply_gradient_descent``, ``sparse_apply_adam``,
``sparse_apply_ada_max`` and the row-wise Adagrad ops have no TensorFlow
kernel.

The kernels are compiled twice on x86: a baseline build and an AVX2 build,
used when the CPU has AVX2.  Both run the same operations without FMA, so they
give the same bits; ``SPARSEGRAD_DISABLE_AVX2=1`` (read at import) forces the
baseline.
"""

from .framework.public import publish
from .training import training_ops as implementation
from .training.training_ops import *  # noqa: F403

__all__ = publish(__name__, globals(), implementation.__all__)
