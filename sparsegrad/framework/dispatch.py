"""Public ops that types from higher layers extend, and values the tape takes
apart: the two protocols through which ``ops`` and ``autodiff`` serve a
RaggedTensor without importing ``sparsegrad.ragged``.

Dispatch (TensorFlow's ``dispatch_for_api``)
--------------------------------------------
A public op made with :func:`api` looks at its arguments' types before it
runs: when one of them (or an item of a list or tuple argument) is a type
that :func:`register` gave a handler for this op, the handler runs in its
place with the same arguments.  Otherwise the op runs as written; the check
costs one dict lookup per argument, and nothing at all for an op that no
type extends.  The ragged package registers its handlers when it is
imported (``sparsegrad.ragged.dispatch``).

Composite values
----------------
A composite value (a RaggedTensor) is made of Tensors and structure that is
not differentiated (row partitions).  Its type defines two methods:

``__sg_components__(self)``
    The differentiable parts: a tuple of Tensors.
``__sg_rebuild__(self, parts)``
    The same structure with `parts` in their place (one per component, each
    a Tensor or an IndexedSlices of the component's shape).

:func:`components` and :func:`rebuild` call them; the tape watches and
differentiates the components of a composite source or target and hands
back a rebuilt composite gradient.
"""

import functools

__all__ = ["api", "register", "handler_for", "is_composite", "components", "rebuild"]

# api key -> {type: handler}
_HANDLERS = {}


def _key(fn):
    return f"{fn.__module__}.{fn.__qualname__}"


def api(fn):
    """Make the public op `fn` extendable by :func:`register`.

    Parameters
    ----------
    fn : callable
        The op.

    Returns
    -------
    callable
        A wrapper with `fn`'s name and docstring that hands a call to the
        handler registered for the type of one of its arguments (checked in
        order: positional ones, then keywords; the items of a list or tuple
        argument count), and calls `fn` otherwise.

    Examples
    --------
    >>> from sparsegrad.framework import dispatch
    >>> @dispatch.api
    ... def double(x):
    ...     return 2 * x
    >>> class Box:
    ...     def __init__(self, v):
    ...         self.v = v
    >>> dispatch.register(double, Box, lambda x: Box(double(x.v)))
    >>> double(3), double(Box(3)).v
    (6, 6)
    """
    table = _HANDLERS.setdefault(_key(fn), {})

    @functools.wraps(fn)
    def dispatching(*args, **kwargs):
        if table:
            handler = _find(table, args, kwargs)
            if handler is not None:
                return handler(*args, **kwargs)
        return fn(*args, **kwargs)

    dispatching.__sg_dispatch__ = table
    return dispatching


def _find(table, args, kwargs):
    for value in (*args, *kwargs.values()):
        handler = table.get(type(value))
        if handler is not None:
            return handler
        if isinstance(value, (list, tuple)):
            for item in value:
                handler = table.get(type(item))
                if handler is not None:
                    return handler
    return None


def register(op, cls, handler):
    """Run `handler` for calls of `op` that pass a `cls` value.

    Parameters
    ----------
    op : callable
        A public op made with :func:`api`.
    cls : type
        The argument type the handler serves (exactly this type).
    handler : callable
        Takes the op's arguments.

    Raises
    ------
    TypeError
        If `op` was not made with :func:`api`.
    """
    table = getattr(op, "__sg_dispatch__", None)
    if table is None:
        raise TypeError(f"{getattr(op, '__name__', op)!r} is not a dispatching op")
    table[cls] = handler


def handler_for(op, value):
    """The handler `op` runs for `value` (None if it runs itself).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.framework import dispatch
    >>> dispatch.handler_for(sg.add, 1.0) is None
    True
    """
    table = getattr(op, "__sg_dispatch__", None)
    return None if table is None else table.get(type(value))


def is_composite(value):
    """Whether `value` is a composite value (its type defines the protocol).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.framework import dispatch
    >>> dispatch.is_composite(sg.ragged.constant([[1.0], []]))
    True
    >>> dispatch.is_composite(sg.constant([1.0]))
    False
    """
    return hasattr(type(value), "__sg_components__")


def components(value):
    """The differentiable Tensors of a composite `value` (a tuple).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.framework import dispatch
    >>> rt = sg.ragged.constant([[1.0, 2.0], [3.0]])
    >>> [c.numpy() for c in dispatch.components(rt)]
    [array([1., 2., 3.], dtype=float32)]
    """
    return tuple(value.__sg_components__())


def rebuild(value, parts):
    """`value`'s structure around new components `parts`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.framework import dispatch
    >>> rt = sg.ragged.constant([[1.0, 2.0], [3.0]])
    >>> dispatch.rebuild(rt, [sg.constant([4.0, 5.0, 6.0])]).to_list()
    [[4.0, 5.0], [6.0]]
    """
    return value.__sg_rebuild__(tuple(parts))
