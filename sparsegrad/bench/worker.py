"""One benchmark measurement in a process of its own.

``python -m sparsegrad.bench.worker MODULE CASE LIBRARY --repeat N [--warmup W]
[--quick] [--threads T]`` imports ``LIBRARY``, gives it ``T`` threads, calls the
case's ``setup(quick)``, warms the returned callable up, times ``N`` calls and
prints one line of JSON: ``{"status": "ok", "times": [...], "version": ...,
"rss_growth": ..., "rss_source": ...}`` (the process's resident-memory growth
from before the setup to after the warm-up, :mod:`~sparsegrad.bench.memory`).
For a steady-state case the harness passes the case's steps as ``N``: the
``N`` calls are consecutive steps of one process, and the harness cuts their
times into blocks.  A library that is not installed, or whose
import fails while loading its native code (``ImportError``, ``OSError`` or
``RuntimeError``: an FBGEMM built for another PyTorch, say), gives
``{"status": "missing", "reason": ...}`` (one line) and exit status 3; so
does a setup that raises :class:`~sparsegrad.bench.case.Unsupported` (the
library cannot run that case).
``python -m sparsegrad.bench.worker --bandwidth`` measures the floor's
rates instead (update bandwidth, GEMM).  :mod:`sparsegrad.bench.harness`
starts these processes; nothing else should need to.
"""

import argparse
import importlib
import json
import os
import sys

from .case import Unsupported
from .harness import (
    IMPORT_NAMES,
    MISSING_STATUS,
    measure_bandwidth,
    module_path,
    own_environment,
    time_calls,
)
from .memory import growth, resident_bytes
from .sizes import BANDWIDTH_MIB, GEMM_N


def _set_threads(library, module, n_threads):
    """Give `library` (imported as `module`) `n_threads` threads."""
    if library in ("sparsegrad", "torch"):
        module.set_num_threads(n_threads)
    elif library == "fbgemm":
        # FBGEMM's CPU kernels run on PyTorch's intra-op thread pool.
        importlib.import_module("torch").set_num_threads(n_threads)
    elif library == "tensorflow":
        module.config.threading.set_intra_op_parallelism_threads(n_threads)
        module.config.threading.set_inter_op_parallelism_threads(n_threads)


def import_failure(library, name, exc):
    """The one-line reason why importing `library` (module `name`) failed.

    Parameters
    ----------
    library : str
        The library's name in the table.
    name : str
        The module imported.
    exc : Exception
        What the import raised.

    Returns
    -------
    str
        ``"<library> not installed"`` when the module itself is not found;
        otherwise ``"<library> cannot be loaded: <Error>: <first line>"``
        (at most 200 characters of the message).

    Examples
    --------
    >>> import_failure("fbgemm", "fbgemm_gpu",
    ...                ModuleNotFoundError("no", name="fbgemm_gpu"))
    'fbgemm not installed'
    >>> import_failure("fbgemm", "fbgemm_gpu", OSError("x.so: undefined symbol\\nmore"))
    'fbgemm cannot be loaded: OSError: x.so: undefined symbol'
    """
    if isinstance(exc, ModuleNotFoundError) and (
            exc.name == name or name.startswith(f"{exc.name}.")):
        return f"{library} not installed"
    lines = str(exc).strip().splitlines()
    first = lines[0][:200] if lines else "(no message)"
    return f"{library} cannot be loaded: {type(exc).__name__}: {first}"


def measure(module, case_name, library, repeat, warmup=1, quick=False,
            n_threads=None):
    """Time one case with one library in this process.

    Parameters
    ----------
    module : str
        The area module (``"clip"``) or an importable module name holding
        ``CASES``.
    case_name : str
        The case's name.
    library : str
        A key of the case's ``setups``.
    repeat, warmup : int
        Timed calls (consecutive, in this process: the steps of a
        steady-state case), and untimed calls made first.
    quick : bool
        Passed to the setup (the reduced size).
    n_threads : int, optional
        Threads for the library (default: every processor).

    Returns
    -------
    dict
        ``status`` ``"ok"``, ``times`` (seconds per call), ``version`` and,
        where the process's resident memory can be read, ``rss_growth``
        (bytes gained from before the setup to after the warm-up) and
        ``rss_source`` (:func:`~sparsegrad.bench.memory.growth`); or
        ``status`` ``"missing"`` and a one-line ``reason`` when the library
        cannot be imported (:func:`import_failure`) or its setup raises
        ``ImportError`` (the reason is the library's name and the message)
        or :class:`~sparsegrad.bench.case.Unsupported` (its message).

    Raises
    ------
    KeyError
        If the module has no case `case_name`, or the case no setup for
        `library`.
    ValueError
        If `warmup` is negative (or `repeat` below 1).
    """
    if warmup < 0:
        raise ValueError(f"warmup must be at least 0, got {warmup!r}")
    n_threads = n_threads or os.cpu_count() or 1
    cases = {c.name: c for c in importlib.import_module(module_path(module)).CASES}
    if case_name not in cases:
        raise KeyError(f"no case {case_name!r} in {module!r}; it has "
                       f"{sorted(cases)}")
    case = cases[case_name]
    if library not in case.setups:
        raise KeyError(f"case {case_name!r} has no setup for library {library!r}; "
                       f"it has {sorted(case.setups)}")
    n_threads = case.threads or n_threads
    if library != "sparsegrad":
        own_environment(os.environ)   # before the peer loads its OpenMP runtime
    name = IMPORT_NAMES.get(library, library)
    try:
        lib = importlib.import_module(name)
    except (ImportError, OSError, RuntimeError) as exc:
        return {"status": "missing", "reason": import_failure(library, name, exc)}
    _set_threads(library, lib, n_threads)
    before = resident_bytes()
    try:
        fn = case.setups[library](quick)
    except ImportError as exc:
        return {"status": "missing", "reason": f"{library}: {exc}"}
    except Unsupported as exc:
        return {"status": "missing", "reason": str(exc)}
    for _ in range(warmup):
        fn()
    memory = growth(before, resident_bytes())
    times = time_calls(fn, repeat, warmup=0)
    return {"status": "ok", "times": times,
            "version": getattr(lib, "__version__", None), **memory}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sparsegrad.bench.worker",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("module", nargs="?")
    parser.add_argument("case", nargs="?")
    parser.add_argument("library", nargs="?")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--bandwidth", action="store_true",
                        help="measure the floor's rates (update bandwidth, "
                        "GEMM) instead of a case")
    args = parser.parse_args(argv)
    if args.bandwidth:
        kwargs = ({"n_bytes": BANDWIDTH_MIB.quick << 20, "repeat": 3,
                   "gemm_n": GEMM_N.quick} if args.quick else {})
        print(json.dumps({"status": "ok",
                          **measure_bandwidth(args.threads, **kwargs)}))
        return 0
    if not (args.module and args.case and args.library):
        parser.error("MODULE, CASE and LIBRARY are required (or --bandwidth)")
    out = measure(args.module, args.case, args.library, args.repeat,
                  args.warmup, args.quick, args.threads)
    print(json.dumps(out))
    return 0 if out["status"] == "ok" else MISSING_STATUS


if __name__ == "__main__":
    sys.exit(main())
