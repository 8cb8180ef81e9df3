"""Thread control of the OpenMP kernels.

The count is set by :func:`set_num_threads`, or at import by the environment
variable ``SPARSEGRAD_NUM_THREADS``; threadpoolctl sees the same OpenMP pool and
its ``threadpool_limits`` lowers the count inside its block.  Results never
depend on the count: every kernel gives the same bits for any value.
"""

import ctypes
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

from .._kernels import parallel as _parallel

__all__ = ["set_num_threads", "get_num_threads", "openmp_enabled"]


def openmp_enabled():
    """True when the kernels were compiled with OpenMP.

    Returns
    -------
    bool
        Whether the kernels can run on several threads.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> isinstance(sg.openmp_enabled(), bool)
    True
    """
    return _parallel.OPENMP_ENABLED


#: The largest thread count a kernel is given: 4 threads per processor that
#: OpenMP sees, and never fewer than 16 (so that determinism tests on 8
#: threads run on a one-core machine).  More would only oversubscribe the
#: cores, and an absurd count makes the OpenMP runtime fail to create its
#: threads, which ends the process.
MAX_THREADS = max(16, 4 * _parallel.num_procs())


def _check_count(n, name):
    if isinstance(n, bool) or (not isinstance(n, int) and not hasattr(n, "__index__")):
        raise TypeError(f"{name} must be a positive int or None, got {n!r}")
    n = int(n.__index__())
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")
    if n > MAX_THREADS:
        raise ValueError(
            f"{name} must be at most {MAX_THREADS}, the limit on this machine "
            f"(4 x the {_parallel.num_procs()} processors OpenMP sees, and at "
            f"least 16); got {n}"
        )
    return n


def set_num_threads(n):
    """Set how many threads the kernels use.

    Parameters
    ----------
    n : int or None
        A count from 1 to ``max(16, 4 * processors)``, the processors being
        those OpenMP sees (``sparsegrad.framework.threads.MAX_THREADS``), or
        ``None`` to go back to OpenMP's default (the value of
        ``OMP_NUM_THREADS``, else the number of cores).  Without OpenMP the
        kernels always run on one thread; the value is still recorded.

    Returns
    -------
    None
        The count holds for the kernels called from then on.

    Raises
    ------
    TypeError
        If `n` is not an int or None.
    ValueError
        If `n` is smaller than 1 or larger than the limit above.  The count
        in use is unchanged then.

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
    current maximum (which ``threadpoolctl.threadpool_limits`` controls) and
    to the limit of :func:`set_num_threads` (an ``OMP_NUM_THREADS`` beyond it
    is not followed); 1 when the kernels were built without OpenMP.

    Returns
    -------
    int
        At least 1.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.get_num_threads() >= 1
    True
    """
    n = _parallel.effective_threads()
    return n if n <= MAX_THREADS else MAX_THREADS


# Worker threads of run_parts: (executor, its workers), made on first use and
# forgotten in a forked child (the threads are not copied into it).
_executor = [None, 0]
_executor_lock = threading.Lock()


def run_parts(parts):
    """Call every zero-argument callable of `parts`, side by side: the first
    in the calling thread, the others on worker threads.

    For NumPy calls on large arrays, which release the GIL (a binary ufunc
    over rows of its operands, say): each part must touch memory no other
    part writes, so the result does not depend on the count or the order.

    Parameters
    ----------
    parts : sequence of callable

    Returns
    -------
    list
        What each part returned, in order.

    Raises
    ------
    Exception
        The first part's exception (in order) that raised, after every part
        has finished.

    Examples
    --------
    >>> from sparsegrad.framework.threads import run_parts
    >>> run_parts([lambda: 1, lambda: 2, lambda: 3])
    [1, 2, 3]
    """
    if len(parts) == 1:
        return [parts[0]()]
    workers = len(parts) - 1
    with _executor_lock:
        pool, size = _executor
        if pool is None or size < workers:
            if pool is not None:
                pool.shutdown(wait=False)
            pool = ThreadPoolExecutor(workers, thread_name_prefix="sparsegrad")
            _executor[:] = [pool, workers]
    futures = [pool.submit(part) for part in parts[1:]]
    results, error = [None] * len(parts), None
    try:
        results[0] = parts[0]()
    except Exception as exc:      # the others still run to their end
        error = exc
    for k, future in enumerate(futures, 1):
        try:
            results[k] = future.result()
        except Exception as exc:
            error = exc if error is None else error
    if error is not None:
        raise error
    return results


def _init_from_environment():
    value = os.environ.get("SPARSEGRAD_NUM_THREADS", "").strip()
    if not value:
        return
    try:
        set_num_threads(int(value))
    except (TypeError, ValueError) as exc:
        reason = str(exc) if value.lstrip("+-").isdigit() else "not an integer"
        warnings.warn(
            f"SPARSEGRAD_NUM_THREADS={value!r} is ignored ({reason}); using "
            f"{get_num_threads()} threads",
            RuntimeWarning,
            stacklevel=2,
        )


_init_from_environment()


# ---------------------------------------------------------------------------
# NumPy's OpenBLAS on the kernels' OpenMP pool.

# Names of OpenBLAS's "run my jobs with your threads" setter, as the plain
# library and the builds bundled in NumPy and SciPy wheels export it.
_BLAS_CALLBACK_SETTERS = (
    "openblas_set_threads_callback_function",
    "scipy_openblas_set_threads_callback_function64_",
    "scipy_openblas_set_threads_callback_function",
)
_blas_setters = []


def _loaded_openblas_paths():
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def _share_blas_threads():
    """Give the OpenBLAS libraries loaded now (NumPy's, and SciPy's when it is
    loaded) the kernels' OpenMP pool for their threaded calls, unless
    ``SPARSEGRAD_SHARE_BLAS_THREADS=0``.  Returns the libraries' paths.

    OpenBLAS keeps its job split, so products give the same bits; its own
    threads stay asleep.  In the child of a fork the libraries get their own
    threads back, and the kernels run on one thread (see
    ``_parallel.mark_forked_child``)."""
    flag = os.environ.get("SPARSEGRAD_SHARE_BLAS_THREADS", "1").strip().lower()
    if flag in ("0", "false", "no", "off"):
        return []
    if not _parallel.OPENMP_ENABLED:
        return []
    shared = []
    for path in _loaded_openblas_paths():
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _BLAS_CALLBACK_SETTERS:
            setter = getattr(library, name, None)
            if setter is not None:
                setter.argtypes = [ctypes.c_void_p]
                setter.restype = None
                setter(ctypes.c_void_p(_parallel.blas_callback_address()))
                _blas_setters.append(setter)
                shared.append(path)
                break
    return shared


def _after_fork_in_child():
    _parallel.mark_forked_child()
    _executor[:] = [None, 0]
    for setter in _blas_setters:
        setter(None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
BLAS_SHARING_POOL = _share_blas_threads()
