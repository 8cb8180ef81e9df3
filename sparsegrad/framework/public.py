"""Public paths of names implemented elsewhere in the package."""

import types

__all__ = ["publish"]


def publish(module_name, namespace, names):
    """Give the classes and functions `names` of `namespace` the public module
    `module_name`, where users import them from (and where the API reference
    and ``repr`` show them).

    Parameters
    ----------
    module_name : str
        The public module, e.g. ``"sparsegrad.optimizers"``.
    namespace : dict
        The public module's globals, holding the re-exported objects.
    names : iterable of str
        The names to publish (the public module's ``__all__``); submodules
        among them are left as they are.

    Returns
    -------
    list of str
        `names`, as a list (for ``__all__``).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.optimizers.Adam.__module__
    'sparsegrad.optimizers'
    """
    names = list(names)
    for name in names:
        obj = namespace[name]
        if not isinstance(obj, types.ModuleType):
            obj.__module__ = module_name
    return names
