"""Exception classes of sparsegrad.

They mirror TensorFlow's ``tf.errors`` classes that the reference documents use,
and each also derives from the Python built-in a NumPy user would catch, so that
``except ValueError`` keeps working for an :class:`InvalidArgumentError`.

Every message names the argument, the value it received and the form that was
expected.
"""

__all__ = [
    "OpError",
    "InvalidArgumentError",
    "FailedPreconditionError",
    "NotFoundError",
    "InternalError",
    "UnimplementedError",
    "DensifyWarning",
]


class OpError(Exception):
    """Base class of the errors an op raises on bad input or state."""


class InvalidArgumentError(OpError, ValueError):
    """An argument has the wrong shape, dtype, rank or value.

    Raised before anything is written: a variable or slot is bit-for-bit
    unchanged afterwards.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> try:
    ...     sg.IndexedSlices([[1.0]], [5], dense_shape=(3, 1))
    ... except sg.errors.InvalidArgumentError as e:
    ...     print(e)
    indices[0] = 5 is not in [0, 3)
    """


class FailedPreconditionError(OpError, RuntimeError):
    """The state an operation needs is not there (a stale or consumed value)."""


class NotFoundError(OpError, LookupError):
    """Something looked up by name (a kernel, a device, a slot) does not exist."""


class InternalError(OpError, RuntimeError):
    """An internal contract was broken, e.g. a gradient function returned too few
    gradients."""


class UnimplementedError(OpError, NotImplementedError):
    """The operation is not supported for these arguments."""


class DensifyWarning(UserWarning):
    """A sparse gradient or argument is being made dense, and it is large.

    Issued once per op type when an :class:`~sparsegrad.IndexedSlices` whose
    dense form has at least :func:`~sparsegrad.get_densify_warning_threshold`
    elements is converted because an op needs a dense value (TensorFlow's
    "Converting sparse IndexedSlices to a dense Tensor" warning, naming the op
    that caused it).  Silence it with :mod:`warnings` filters, or change the
    threshold with :func:`~sparsegrad.set_densify_warning_threshold`.

    Examples
    --------
    >>> import warnings
    >>> import sparsegrad as sg
    >>> warnings.simplefilter("ignore", sg.errors.DensifyWarning)
    """
