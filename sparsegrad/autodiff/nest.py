"""Nests: lists, tuples and dicts of leaves, as targets, sources and results."""

__all__ = ["flatten", "pack_as"]


def _flatten(structure, out):
    if isinstance(structure, (list, tuple)):
        for item in structure:
            _flatten(item, out)
    elif isinstance(structure, dict):
        for k in sorted(structure):
            _flatten(structure[k], out)
    else:
        out.append(structure)
    return out


def flatten(structure):
    """The leaves of a nest of lists, tuples and dicts (dict keys sorted).

    Parameters
    ----------
    structure : object
        A leaf, or a list, tuple or dict of nests.

    Returns
    -------
    list
        The leaves in order.

    Examples
    --------
    >>> from sparsegrad.autodiff.nest import flatten
    >>> flatten({"b": [1, 2], "a": (3,)})
    [3, 1, 2]
    """
    return _flatten(structure, [])


def pack_as(structure, flat):
    """Rebuild `structure` with the leaves taken in order from `flat`.

    Parameters
    ----------
    structure : object
        The nest whose shape to copy (namedtuples and dict subclasses keep
        their type).
    flat : iterable
        The new leaves, in the order :func:`flatten` gives.

    Returns
    -------
    object
        A nest shaped like `structure`.

    Examples
    --------
    The leaves replace those of `structure` one for one:

    >>> from sparsegrad.autodiff.nest import pack_as
    >>> pack_as({"b": [0, 0], "a": (0,)}, [3, 1, 2])
    {'b': [1, 2], 'a': (3,)}
    """
    # a module-level recursion: a nested function that calls itself is a
    # reference cycle (function -> closure cell -> function) that would keep
    # the iterator, and with it every leaf, alive until the garbage collector
    # runs: gradients of several MiB outlived their training step
    return _build(structure, iter(flat))


def _build(s, it):
    if isinstance(s, (list, tuple)):
        items = [_build(x, it) for x in s]
        if isinstance(s, list):
            return items
        if hasattr(s, "_fields"):  # namedtuple
            return type(s)(*items)
        return type(s)(items)
    if isinstance(s, dict):
        built = {k: _build(s[k], it) for k in sorted(s)}
        return (
            type(s)((k, built[k]) for k in s)
            if type(s) is not dict
            else {k: built[k] for k in s}
        )
    return next(it)
