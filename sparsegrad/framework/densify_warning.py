"""The warning issued when a large sparse value is made dense.

Converting an :class:`~sparsegrad.IndexedSlices` to a dense Tensor costs the
size of the whole table, which is what sparse gradients exist to avoid.
Where an op cannot do otherwise (its gradient, or its forward pass, needs a
dense value), the conversion goes through :func:`warn_densify`: above a
threshold of dense elements (10 million by default) it issues a
:class:`~sparsegrad.errors.DensifyWarning` naming the op and the shape, once
per op type.
"""

import threading
import warnings

import numpy as np

from ..errors import DensifyWarning, InvalidArgumentError

__all__ = [
    "DEFAULT_DENSIFY_WARNING_THRESHOLD",
    "get_densify_warning_threshold",
    "set_densify_warning_threshold",
    "warn_densify",
]

#: Dense elements from which making an IndexedSlices dense is warned about.
DEFAULT_DENSIFY_WARNING_THRESHOLD = 10_000_000

_LOCK = threading.Lock()
_STATE = {"threshold": DEFAULT_DENSIFY_WARNING_THRESHOLD, "warned": set()}


def set_densify_warning_threshold(n_elements):
    """Set the dense size from which densifying an IndexedSlices is warned about.

    Parameters
    ----------
    n_elements : int or None
        The number of elements of the dense form (``prod(dense_shape)``) from
        which a :class:`~sparsegrad.errors.DensifyWarning` is issued; None
        turns the warning off.  The default is 10,000,000.  Setting it also
        forgets which op types were already warned about.

    Returns
    -------
    int or None
        The previous threshold.

    Raises
    ------
    InvalidArgumentError
        If `n_elements` is not a non-negative integer or None.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> previous = sg.set_densify_warning_threshold(1000)
    >>> sg.get_densify_warning_threshold()
    1000
    >>> _ = sg.set_densify_warning_threshold(previous)
    """
    if n_elements is not None:
        try:
            value = int(n_elements.__index__())
        except (AttributeError, TypeError):
            value = -1
        if value < 0:
            raise InvalidArgumentError(
                f"set_densify_warning_threshold: n_elements must be a non-negative "
                f"int or None, got {n_elements!r}"
            )
        n_elements = value
    with _LOCK:
        previous = _STATE["threshold"]
        _STATE["threshold"] = n_elements
        _STATE["warned"] = set()
    return previous


def get_densify_warning_threshold():
    """The dense size from which densifying an IndexedSlices is warned about.

    Returns
    -------
    int or None
        See :func:`set_densify_warning_threshold`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.get_densify_warning_threshold()
    10000000
    """
    return _STATE["threshold"]


def warn_densify(dense_shape, op_name):
    """Warn, once per `op_name`, that an IndexedSlices of `dense_shape` is being
    made dense, when its dense form reaches the threshold.

    Parameters
    ----------
    dense_shape : tuple of int
    op_name : str
        What needs the dense value, e.g. ``"gradient of Tanh"``.

    Returns
    -------
    None

    Examples
    --------
    >>> import warnings
    >>> import sparsegrad as sg
    >>> from sparsegrad.framework.densify_warning import warn_densify
    >>> previous = sg.set_densify_warning_threshold(10)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_densify((4, 5), "gradient of Tanh")
    ...     warn_densify((4, 5), "gradient of Tanh")
    >>> len(caught)
    1
    >>> _ = sg.set_densify_warning_threshold(previous)
    """
    threshold = _STATE["threshold"]
    if threshold is None:
        return
    n = int(np.prod(dense_shape, dtype=object)) if len(dense_shape) else 1
    if n < threshold:
        return
    with _LOCK:
        if op_name in _STATE["warned"]:
            return
        _STATE["warned"].add(op_name)
    warnings.warn(
        f"{op_name}: converting an IndexedSlices of dense shape "
        f"{tuple(dense_shape)} ({n:,} elements) to a dense Tensor, because "
        f"{op_name} needs a dense value; this costs the size of the whole "
        f"table. (Warned once per op; see sparsegrad.set_densify_warning_threshold.)",
        DensifyWarning,
        stacklevel=3,
    )
