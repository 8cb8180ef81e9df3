"""What the segment and sparse segment families share, below both (it
imports no op): the raw array of an argument and the shared sections of
their docstrings."""

import textwrap

from ..framework.tensor import Tensor
from ..framework.variable import Variable

__all__ = ["raw_value", "with_sections"]


def raw_value(x):
    """The array behind a Variable (its value, read) or a Tensor; anything
    else as it is.

    Parameters
    ----------
    x : Variable, Tensor or array_like

    Returns
    -------
    array_like

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework.tensor import wrap
    >>> raw_value(wrap(np.arange(2)))
    array([0, 1])
    """
    if isinstance(x, Variable):
        x = x.value()
    if isinstance(x, Tensor):
        x = x._value
    return x


def with_sections(**sections):
    """A decorator that puts the shared docstring `sections` (text written
    from column 0) where the docstring says ``{name}`` on a line of its own.

    Parameters
    ----------
    **sections : str
        The text of each placeholder.

    Returns
    -------
    callable
        The decorator (it returns the function, its ``__doc__`` filled in).

    Examples
    --------
    >>> @with_sections(args="Parameters\\n----------\\nx : int\\n")
    ... def f(x):
    ...     '''Nothing.
    ...
    ...     {args}
    ...     '''
    >>> print(f.__doc__.split("\\n")[2:5])
    ['    Parameters', '    ----------', '    x : int']
    """

    def fill(function):
        doc = function.__doc__
        for key, text in sections.items():
            doc = doc.replace("    {" + key + "}\n", textwrap.indent(text, "    "))
        function.__doc__ = doc
        return function

    return fill
