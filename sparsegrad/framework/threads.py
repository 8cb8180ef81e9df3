"""Thread control of the OpenMP kernels.

The count is set by :func:`set_num_threads`, or at import by the environment
variable ``SPARSEGRAD_NUM_THREADS``; threadpoolctl sees the same OpenMP pool and
its ``threadpool_limits`` lowers the count inside its block.  Results never
depend on the count: every kernel gives the same bits for any value.
"""

import os
import warnings

from .._kernels import parallel as _parallel

__all__ = ["set_num_threads", "get_num_threads", "openmp_enabled"]


def openmp_enabled():
    """True when the kernels were compiled with OpenMP.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> isinstance(sg.openmp_enabled(), bool)
    True
    """
    return _parallel.OPENMP_ENABLED


def _check_count(n, name):
    if isinstance(n, bool) or not isinstance(n, int) and not hasattr(n, "__index__"):
        raise TypeError(f"{name} must be a positive int or None, got {n!r}")
    n = int(n.__index__())
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")
    return n


def set_num_threads(n):
    """Set how many threads the kernels use.

    Parameters
    ----------
    n : int or None
        A positive count, or ``None`` to go back to OpenMP's default (the value
        of ``OMP_NUM_THREADS``, else the number of cores).  Without OpenMP the
        kernels always run on one thread; the value is still recorded.

    Raises
    ------
    TypeError
        If `n` is not an int or None.
    ValueError
        If `n` is smaller than 1.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.set_num_threads(1)
    >>> sg.get_num_threads()
    1
    >>> sg.set_num_threads(None)
    """
    if n is None:
        _parallel.set_requested_threads(0)
    else:
        _parallel.set_requested_threads(_check_count(n, "n"))


def get_num_threads():
    """The number of threads the next kernel call uses.

    This is the count given to :func:`set_num_threads`, lowered to OpenMP's
    current maximum (which ``threadpoolctl.threadpool_limits`` controls); 1 when
    the kernels were built without OpenMP.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.get_num_threads() >= 1
    True
    """
    return _parallel.effective_threads()


def _init_from_environment():
    value = os.environ.get("SPARSEGRAD_NUM_THREADS", "").strip()
    if not value:
        return
    try:
        set_num_threads(int(value))
    except (TypeError, ValueError):
        warnings.warn(
            f"SPARSEGRAD_NUM_THREADS={value!r} is not a positive integer; "
            "ignoring it",
            RuntimeWarning,
            stacklevel=2,
        )


_init_from_environment()
