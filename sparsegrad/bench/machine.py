"""The machine a benchmark runs on: its CPU, the rates of the floor each case
is compared with (the bandwidth of an in-place update, the matrix-product
rate) and the environment the libraries see."""

import os
import platform
from concurrent.futures import ThreadPoolExecutor

from .sizes import BANDWIDTH_MIB, GEMM_N
from .timing import time_calls

# Bytes updated by each bandwidth measurement (an update reads and writes them).
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


def update_bandwidth(n_bytes=BANDWIDTH_BYTES, repeat=9, n_threads=1):
    """Bytes per second of an in-place update of a large array, split over
    `n_threads` threads: the way an optimizer's update uses memory.

    Each thread adds one to a contiguous chunk of a float32 array in place
    (``np.add(a, 1, out=a)``, which releases the GIL): every byte is read and
    then written back, and the bytes counted are both (twice `n_bytes`).  A
    copy would also read each destination line before writing it, a transfer
    it does not count; an update has no such hidden cost, so no case that
    reads and writes its bytes once can run below this floor.  The figure is
    that of the fastest of `repeat` updates, after one warm-up update that
    also touches every page.

    Parameters
    ----------
    n_bytes : int, optional
        Size of the updated array.
    repeat : int, optional
        Number of timed updates.
    n_threads : int, optional
        Threads sharing the update (1: a plain single-threaded ``np.add``).

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
    The best of the `repeat` updates counts: the floor is what the memory can
    do, not what it did on average.

    Examples
    --------
    >>> update_bandwidth(n_bytes=1 << 20, repeat=3) > 0
    True
    """
    import numpy as np

    if n_bytes < 4096:
        raise ValueError(f"n_bytes must be at least 4096, got {n_bytes!r}")
    if n_threads < 1:
        raise ValueError(f"n_threads must be at least 1, got {n_threads!r}")
    data = np.ones(n_bytes // 4, dtype=np.float32)
    one = np.float32(1)
    if n_threads == 1:
        times = time_calls(lambda: np.add(data, one, out=data), repeat)
    else:
        edges = np.linspace(0, data.size, n_threads + 1).astype(np.int64)
        chunks = [data[a:b] for a, b in zip(edges[:-1], edges[1:])]
        with ThreadPoolExecutor(n_threads) as pool:
            times = time_calls(lambda: list(pool.map(
                lambda c: np.add(c, one, out=c), chunks)), repeat)
    return 2 * data.nbytes / min(times)


def gemm_rate(n=GEMM_N.full, repeat=5):
    """Floating-point operations per second of NumPy's float32 matrix product
    (its BLAS, on the threads that BLAS chooses): the rate the matrix products
    of a case are bounded by.

    Parameters
    ----------
    n : int, optional
        The side of the square matrices multiplied (``2 n**3`` operations).
    repeat : int, optional
        Number of timed products; the fastest counts.

    Returns
    -------
    float
        Operations per second.

    Raises
    ------
    ValueError
        If `n` is below 16.

    Examples
    --------
    >>> gemm_rate(n=64, repeat=3) > 0
    True
    """
    import numpy as np

    if n < 16:
        raise ValueError(f"n must be at least 16, got {n!r}")
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    out = np.empty((n, n), np.float32)
    return 2.0 * n ** 3 / min(time_calls(lambda: np.matmul(a, b, out=out), repeat))


def measure_bandwidth(n_threads=None, n_bytes=BANDWIDTH_BYTES, repeat=9,
                      gemm_n=GEMM_N.full):
    """The rates of the floor: the better of a one-thread and an all-core
    in-place update (:func:`update_bandwidth`), and the matrix-product rate
    (:func:`gemm_rate`).

    Parameters
    ----------
    n_threads : int, optional
        Threads of the all-core update (default: every processor).
    n_bytes, repeat : int, optional
        As for :func:`update_bandwidth`.
    gemm_n : int, optional
        As `n` for :func:`gemm_rate`.

    Returns
    -------
    dict
        ``single`` and ``all_cores`` (bytes per second of each update),
        ``threads`` (of the all-core update), ``bandwidth`` (the larger) and
        ``gemm`` (operations per second).

    Examples
    --------
    >>> b = measure_bandwidth(n_threads=2, n_bytes=1 << 20, repeat=3, gemm_n=64)
    >>> b["bandwidth"] == max(b["single"], b["all_cores"]) and b["gemm"] > 0
    True
    """
    n_threads = n_threads or os.cpu_count() or 1
    single = update_bandwidth(n_bytes, repeat, 1)
    every = update_bandwidth(n_bytes, repeat, n_threads)
    return {"single": single, "all_cores": every, "threads": n_threads,
            "bandwidth": max(single, every), "gemm": gemm_rate(gemm_n)}


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
        f"floor: in-place update {bandwidth['single'] / 1e9:.2f} GB/s, on "
        f"{bandwidth['threads']} threads {bandwidth['all_cores'] / 1e9:.2f} GB/s; "
        f"the floor uses {bandwidth['bandwidth'] / 1e9:.2f} GB/s"
        + ("" if "measurements" not in bandwidth else
           " (the better of the measurements before and after the cases: "
           + ", ".join(f"{m['bandwidth'] / 1e9:.2f}" for m in bandwidth["measurements"])
           + " GB/s)")
        + ("" if "gemm" not in bandwidth else
           f" and float32 matrix products at {bandwidth['gemm'] / 1e9:.1f} GFLOP/s")
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
