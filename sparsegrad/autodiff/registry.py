"""The gradient registry: op type string -> gradient function.

A gradient function has the signature ``fn(op, *output_grads)`` and returns one
gradient per op input (a Tensor, an IndexedSlices or None).  It is written with
sparsegrad ops, so a gradient is itself differentiable by an outer tape.
"""

from ..errors import NotFoundError

__all__ = [
    "get_gradient_function",
    "gradient_lookup",
    "no_gradient",
    "register_gradient",
    "registered_ops",
]

# op type -> gradient function, or None for "not differentiable"
_GRADIENTS = {}

#: ``gradient_lookup(op_type, default)``: the gradient function registered for
#: `op_type` (None for a non-differentiable op), or `default` when nothing is
#: registered.  The backward pass's lookup; :func:`get_gradient_function`
#: raises instead.
gradient_lookup = _GRADIENTS.get


def _where(fn):
    code = getattr(fn, "__code__", None)
    if code is None:
        return repr(fn)
    return f"{getattr(fn, '__qualname__', fn)} {code.co_filename}:{code.co_firstlineno}"


def _register(op_type, fn):
    if not isinstance(op_type, str):
        raise TypeError(f"op_type must be a string, got {type(op_type).__name__}")
    if op_type in _GRADIENTS:
        previous = _GRADIENTS[op_type]
        where = "no_gradient" if previous is None else _where(previous)
        raise KeyError(
            f"Registering two gradient with name '{op_type}'! "
            f"(Previous registration was in {where})"
        )
    _GRADIENTS[op_type] = fn


def register_gradient(op_type):
    """Register the gradient function of an op type (a decorator).

    Parameters
    ----------
    op_type : str
        The op type that ops pass to ``record_operation``.

    Returns
    -------
    callable
        A decorator that registers ``fn(op, *output_grads)`` and returns it
        unchanged.  ``fn`` returns one gradient per input of the op (a tuple or
        list; a bare value for a one-input op); each is a Tensor, an
        IndexedSlices or None.  ``op`` has ``type``, ``inputs``, ``outputs``,
        ``attrs``, ``get_attr(name)`` and ``skip_input_indices`` (inputs whose
        gradient nobody needs; the function may return None there).

    Raises
    ------
    TypeError
        If `op_type` is not a string.
    KeyError
        If `op_type` already has a gradient (or was marked non-differentiable).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> @sg.register_gradient("DocExampleTimesThree")
    ... def _times_three_grad(op, grad):
    ...     return grad * 3.0
    """

    def decorator(fn):
        if not callable(fn):
            raise TypeError(f"the gradient function must be callable, got {fn!r}")
        _register(op_type, fn)
        return fn

    if not isinstance(op_type, str):
        raise TypeError(f"op_type must be a string, got {type(op_type).__name__}")
    return decorator


def no_gradient(op_type):
    """Declare an op type non-differentiable: its inputs get no gradient (None).

    Parameters
    ----------
    op_type : str
        The op type, as recorded on the tape.

    Returns
    -------
    None
        The registry maps `op_type` to "no gradient" from now on.

    Raises
    ------
    TypeError
        If `op_type` is not a string.
    KeyError
        If `op_type` is already registered.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.no_gradient("DocExampleArgmax")
    """
    _register(op_type, None)


def get_gradient_function(op_type):
    """The registered gradient function of `op_type` (None if non-differentiable).

    Parameters
    ----------
    op_type : str

    Returns
    -------
    callable or None
        ``fn(op, *output_grads)``, or None for a non-differentiable op.

    Raises
    ------
    LookupError
        (:class:`~sparsegrad.errors.NotFoundError`) if nothing is registered.
    """
    try:
        return _GRADIENTS[op_type]
    except KeyError:
        raise NotFoundError(f"gradient registry has no entry for: {op_type}") from None


def registered_ops():
    """A dict of every registered op type -> gradient function (or None).

    Returns
    -------
    dict
        A copy: op type -> gradient function (None where not differentiable).
    """
    return dict(_GRADIENTS)
