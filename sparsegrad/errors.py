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
    """Base class of the errors an op raises on bad input or state.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> try:
    ...     sg.reshape([1.0, 2.0, 3.0], (2, 2))
    ... except sg.errors.OpError as e:
    ...     print(type(e).__name__)
    InvalidArgumentError
    """


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
    """The state an operation needs is not there (a stale or consumed value).

    Examples
    --------
    A Variable changed in place after the tape read it, before the gradient
    that needs the value it had:

    >>> import sparsegrad as sg
    >>> w = sg.Variable([1.0, 2.0], name="w")
    >>> with sg.GradientTape() as tape:
    ...     loss = sg.reduce_sum(w * w)
    >>> _ = w.assign_add([1.0, 1.0])
    >>> try:
    ...     tape.gradient(loss, w)
    ... except sg.errors.FailedPreconditionError as e:
    ...     print(str(e)[:42])
    variable 'w' was modified in place after t
    """


class NotFoundError(OpError, LookupError):
    """Something looked up by name (a kernel, a device, a slot) does not exist.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> w = sg.Variable([1.0, 2.0], name="w")
    >>> opt = sg.optimizers.SGD()
    >>> _ = opt.apply_gradients([([0.5, 0.5], w)])
    >>> try:
    ...     opt.get_slot(w, "momentum")
    ... except sg.errors.NotFoundError as e:
    ...     print(e)
    SGD has no slot 'momentum' for variable 'w'; its slots are []
    """


class InternalError(OpError, RuntimeError):
    """An internal contract was broken, e.g. a gradient function returned too few
    gradients.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.autodiff.recording import record_operation
    >>> x = sg.constant(1.0)
    >>> with sg.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = sg.constant(2.0)
    ...     _ = record_operation("Twice", (x,), (y,),
    ...                          grad_fn=lambda dy: (dy * 2.0, dy))
    >>> try:
    ...     tape.gradient(y, x)
    ... except sg.errors.InternalError as e:
    ...     print(e)
    Recorded operation 'Twice' returned too many gradients. Expected 1 but received 2
    """


class UnimplementedError(OpError, NotImplementedError):
    """The operation is not supported for these arguments.

    It derives from :class:`NotImplementedError`, which is what to catch.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> issubclass(sg.errors.UnimplementedError, NotImplementedError)
    True
    """


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
