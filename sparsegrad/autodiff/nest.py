"""Nests: lists, tuples and dicts of leaves, as targets, sources and results.

A composite value (a RaggedTensor, see :mod:`sparsegrad.framework.dispatch`)
is a leaf of a nest; :func:`expand_composites` replaces such leaves by their
differentiable components where Tensors are needed, and
:func:`rebuild_composites` puts them back together.
"""

from ..framework import dispatch

__all__ = ["expand_composites", "flatten", "pack_as", "rebuild_composites"]


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


def expand_composites(leaves):
    """`leaves` with each composite value replaced by its components.

    Parameters
    ----------
    leaves : list
        Flattened leaves (:func:`flatten`); a composite (a RaggedTensor) is
        one of them.

    Returns
    -------
    list
        The Tensors and other leaves in order, a composite's components in
        its place.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.autodiff.nest import expand_composites
    >>> rt = sg.ragged.constant([[1.0, 2.0], [3.0]])
    >>> [getattr(x, "shape", x) for x in expand_composites([None, rt])]
    [None, (3,)]
    """
    out = []
    for leaf in leaves:
        if dispatch.is_composite(leaf):
            out.extend(dispatch.components(leaf))
        else:
            out.append(leaf)
    return out


def rebuild_composites(leaves, flat, missing=None):
    """The inverse of :func:`expand_composites`: the items of `flat` grouped
    back into `leaves`' places, each composite rebuilt around its parts.

    Parameters
    ----------
    leaves : list
        The leaves that were expanded.
    flat : list
        One item per expanded entry.
    missing : callable, optional
        ``missing(component)`` gives the part for a None item of a composite
        that has other parts; a composite whose parts are all None gives None.
        By default a None part is passed on as it is.

    Returns
    -------
    list
        One item per leaf.
    """
    out, k = [], 0
    for leaf in leaves:
        if not dispatch.is_composite(leaf):
            out.append(flat[k])
            k += 1
            continue
        comps = dispatch.components(leaf)
        parts = list(flat[k:k + len(comps)])
        k += len(comps)
        if all(p is None for p in parts):
            out.append(None)
            continue
        if missing is not None:
            parts = [missing(c) if p is None else p for p, c in zip(parts, comps)]
        out.append(dispatch.rebuild(leaf, parts))
    return out
