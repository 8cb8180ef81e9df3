"""Raw training ops: TensorFlow's ``Apply*`` / ``SparseApply*`` kernels, in place.

Each op validates its arguments in TensorFlow's order and with TensorFlow's
message texts (``reference/training_ops.md`` section 2.4), and only then calls
one kernel of ``sparsegrad._kernels.training``; a failed call leaves `var` and
every slot bit-for-bit unchanged.  The arithmetic lives in the kernels.

`var` and the slots are updated in place.  Each is a writeable C-contiguous
NumPy array of dtype float32, float64, float16 or bfloat16
(``ml_dtypes.bfloat16``), or a :class:`~sparsegrad.Variable` (whose buffer is
updated and whose version is bumped); all of them share one dtype.  The half
types follow TensorFlow's half kernels: each operation is done in float32 and
rounded back to the storage type at once (the ``training_half`` kernels).
Nothing is ever copied silently: a read-only or non-contiguous array
is an error.  Hyper-parameters are Python numbers or 0-d arrays, rounded to the
dtype of `var`.  `grad` may be any array_like; an array or Tensor must have the
dtype of `var`, other inputs (lists, numbers) are converted to it.

Sparse ops (``sparse_apply_*``) update the rows ``indices`` of `var` (viewed as
``(var.shape[0], -1)``) and of the slots with the rows of `grad`.  A row that
occurs several times gets the full update once per occurrence, in order, as
TensorFlow's kernels do; distinct rows are processed in parallel, and the result
is the same for any thread count.  With ``coalesce_duplicates=True`` the rows of
each index are summed first (in their original order) and the update is applied
once per distinct index, which is what Keras' optimizers do.

Layout: one module per family (``gradient_descent``, ``adadelta``, ``adagrad``,
``ftrl``, ``momentum``, ``adam``, ``rms_prop``, ``sign``), each holding its ops'
specs and public functions; :mod:`.core` holds the one validation layer (the
checks, the spec machinery, kernel dispatch and locks).  The public path is
:mod:`sparsegrad.training_ops`.
"""

from . import (
    adadelta,
    adagrad,
    adam,
    core,  # noqa: F401  (the validation layer, for tests and optimizers)
    ftrl,
    gradient_descent,
    momentum,
    rms_prop,
    sign,
)
from .adadelta import *  # noqa: F403
from .adagrad import *  # noqa: F403
from .adam import *  # noqa: F403
from .ftrl import *  # noqa: F403
from .gradient_descent import *  # noqa: F403
from .momentum import *  # noqa: F403
from .rms_prop import *  # noqa: F403
from .sign import *  # noqa: F403

__all__ = [
    *gradient_descent.__all__,
    *adadelta.__all__,
    *adagrad.__all__,
    *ftrl.__all__,
    *momentum.__all__,
    *adam.__all__,
    *rms_prop.__all__,
    *sign.__all__,
]
