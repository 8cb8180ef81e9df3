"""The one validation layer of the raw training ops, in one namespace.

Every raw op (``apply_<name>`` and ``sparse_apply_<name>``) is a
:class:`~.spec.Spec`: the names of its state slots in TensorFlow's input
order, its checks as a tuple of *steps* in TensorFlow's order (each raising
:class:`~sparsegrad.errors.InvalidArgumentError` with TensorFlow's text), the
names of the hyper-parameters its kernel reads, and the kernel.  The public
function (made by :func:`~.docs.define` from a signature, the spec and the
op's own docstring text) hands its arguments to :meth:`Spec.call`, which

1. resolves var and the slots (Variables or writeable C-contiguous float
   arrays of one dtype, pairwise disjoint) and chooses the backend once,
   from var, the slots, the gradient and the indices (:class:`~.steps.Call`),
2. runs the steps in order on the arguments as given (nothing converted or
   copied yet: a mis-shaped ``np.broadcast_to`` gradient is rejected at once),
3. converts what the kernel needs (the gradient to var's dtype, C-contiguous;
   the indices to int64) and returns a :class:`~.spec.Prepared` call,

and :meth:`Prepared.run` then runs the backend's kernel and bumps the
Variables' versions.  The optimizers use :meth:`Spec.prepare_trusted`, which
takes arrays the optimizer has already checked, with the backend it chose,
and runs only the hyper-parameter steps: an ``apply_gradients`` prepares every
(gradient, variable) pair, hyper-parameters in each variable's dtype
included, before it runs any.  It can also scale the gradient
(``grad_scale``, e.g. the factor of clipping by global norm): the kernels
multiply each gradient element as they read it, so that no scaled copy of the
gradient is made.

The parts: :mod:`.steps` (the call's state and the checks), :mod:`.spec`
(specs, prepared calls, kernel choice), :mod:`.docs` (the public functions and
their shared parameter texts), :mod:`.locks` (``use_locking``) and
:mod:`.arrays` (the kernels' argument conversions).
"""

from . import docs, spec, steps
from .docs import *  # noqa: F403
from .spec import *  # noqa: F403
from .steps import *  # noqa: F403

__all__ = [*spec.__all__, *docs.__all__, *steps.__all__]
