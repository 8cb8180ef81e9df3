"""The machine a benchmark runs on: its CPU, its memory copy bandwidth (the
floor each case is compared with) and the environment the libraries see."""

import os
import platform
from concurrent.futures import ThreadPoolExecutor

from .sizes import BANDWIDTH_MIB
from .timing import time_calls

# Bytes copied by each bandwidth measurement (a copy reads and writes them).
BANDWIDTH_BYTES = BANDWIDTH_MIB.full << 20


def cpu_model():
    """The CPU model named by ``/proc/cpuinfo`` (or :func:`platform.processor`).

    Returns
    -------
    str
        The model name, or ``"unknown CPU"`` when the system names none.

    Examples
    --------
    >>> isinstance(cpu_model(), str)
    True
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def copy_bandwidth(n_bytes=BANDWIDTH_BYTES, repeat=9, n_threads=1):
    """Bytes per second of a large ``np.copyto``, split over `n_threads` threads.

    Each thread copies one contiguous chunk (``np.copyto`` releases the GIL);
    the bytes counted are those read plus those written (twice `n_bytes`).
    The figure is that of the fastest of `repeat` copies, after one warm-up
    copy that also touches every page of the destination: the floor is a
    bound, and on a shared machine the slower copies measure the neighbours.

    Parameters
    ----------
    n_bytes : int, optional
        Size of the copied array.
    repeat : int, optional
        Number of timed copies.
    n_threads : int, optional
        Threads sharing the copy (1: a plain single-threaded ``np.copyto``).

    Returns
    -------
    float
        Bytes per second.

    Raises
    ------
    ValueError
        If `n_bytes` is below 4096 or `n_threads` below 1.

    Notes
    -----
    The best of the `repeat` copies counts: the floor is what the memory can
    do, not what it did on average.

    Examples
    --------
    >>> copy_bandwidth(n_bytes=1 << 20, repeat=3) > 0
    True
    """
    import numpy as np

    if n_bytes < 4096:
        raise ValueError(f"n_bytes must be at least 4096, got {n_bytes!r}")
    if n_threads < 1:
        raise ValueError(f"n_threads must be at least 1, got {n_threads!r}")
    src = np.ones(n_bytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    if n_threads == 1:
        times = time_calls(lambda: np.copyto(dst, src), repeat)
    else:
        edges = np.linspace(0, src.size, n_threads + 1).astype(np.int64)
        chunks = [(dst[a:b], src[a:b]) for a, b in zip(edges[:-1], edges[1:])]
        with ThreadPoolExecutor(n_threads) as pool:
            times = time_calls(
                lambda: list(pool.map(lambda c: np.copyto(*c), chunks)), repeat)
    return 2 * src.nbytes / min(times)


def measure_bandwidth(n_threads=None, n_bytes=BANDWIDTH_BYTES, repeat=9):
    """The bandwidth of the floor: the better of a one-thread and an all-core copy.

    Parameters
    ----------
    n_threads : int, optional
        Threads of the all-core copy (default: every processor).
    n_bytes, repeat : int, optional
        As for :func:`copy_bandwidth`.

    Returns
    -------
    dict
        ``single`` and ``all_cores`` (bytes per second of each copy),
        ``threads`` (of the all-core copy) and ``bandwidth`` (the larger).

    Examples
    --------
    >>> b = measure_bandwidth(n_threads=2, n_bytes=1 << 20, repeat=3)
    >>> b["bandwidth"] == max(b["single"], b["all_cores"])
    True
    """
    n_threads = n_threads or os.cpu_count() or 1
    single = copy_bandwidth(n_bytes, repeat, 1)
    every = copy_bandwidth(n_bytes, repeat, n_threads)
    return {"single": single, "all_cores": every, "threads": n_threads,
            "bandwidth": max(single, every)}


def machine_line(machine, bandwidth):
    """The header of the table: the machine, the threads and the bandwidth."""
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
    env = " ".join(f"{k}={v}" for k, v in machine.get("environment", {}).items())
    return (
        f"machine: {machine['cpu']} ({machine['arch']}), {machine['cores']} "
        f"processors, load {machine['load']:.2f}; threads per library "
        f"{machine['threads']} (sparsegrad OpenMP {machine['openmp']}); Python "
        f"{machine['python']}; {versions}"
        f"{'; ' + env if env else ''}\n"
        f"bandwidth: np.copyto {bandwidth['single'] / 1e9:.2f} GB/s, on "
        f"{bandwidth['threads']} threads {bandwidth['all_cores'] / 1e9:.2f} GB/s; "
        f"the floor uses {bandwidth['bandwidth'] / 1e9:.2f} GB/s"
        + ("" if "measurements" not in bandwidth else
           " (the better of the measurements before and after the cases: "
           + ", ".join(f"{m['bandwidth'] / 1e9:.2f}" for m in bandwidth["measurements"])
           + " GB/s)")
    )


# Environment variables that change how the libraries' threads behave.
_THREAD_VARIABLES = ("OMP_", "GOMP_", "KMP_", "MKL_", "OPENBLAS_", "TF_NUM_")


def describe_machine(threads):
    """The machine as a dict (CPU, processors, load, Python, NumPy, sparsegrad)."""
    import numpy as np

    import sparsegrad as sg

    return {
        "cpu": cpu_model(),
        "arch": platform.machine(),
        "cores": os.cpu_count(),
        "load": os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0,
        "threads": threads,
        "openmp": sg.openmp_enabled(),
        "python": platform.python_version(),
        "versions": {"sparsegrad": sg.__version__, "numpy": np.__version__},
        "environment": {k: v for k, v in sorted(_user_environment().items())
                        if k.startswith(_THREAD_VARIABLES)},
    }


def _user_environment():
    env = dict(os.environ)
    own_environment(env)
    return env


def own_environment(env):
    """Take sparsegrad's default ``OMP_WAIT_POLICY`` out of `env` (a mapping,
    changed in place) where the user did not set it, so that a peer library
    loads its OpenMP runtime with its own default, as it would in a process
    without sparsegrad."""
    from sparsegrad import _kernels

    if _kernels.OMP_WAIT_POLICY_DEFAULTED:
        env.pop("OMP_WAIT_POLICY", None)
