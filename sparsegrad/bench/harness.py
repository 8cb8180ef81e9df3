"""The benchmark harness: cases, worker processes, rounds, medians, the table.

Every (case, library) pair runs in a fresh process of its own
(:mod:`sparsegrad.bench.worker`), so no two libraries, nor their OpenMP
runtimes, share a process.  The libraries take turns: for each case, each
round runs every library once, and the figure quoted is the median over all
the timings of all the rounds.  The memory-bandwidth floor is measured once
per run, also in a worker process of its own.

A steady-state case (:attr:`~sparsegrad.bench.case.Case.steps`) times many
consecutive steps in each process instead of ``--repeat`` calls; the harness
splits each process's timings into blocks of
:attr:`~sparsegrad.bench.case.Case.block` steps (:func:`block_medians`) and
reports the slowest block median over the fastest (:func:`block_ratio`), so
that a step whose cost drifts or jumps over a run is seen, not averaged away.
"""

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Optional

from .case import LIBRARIES
from .sizes import BANDWIDTH_MIB, QUICK_STEPS
from .sizes import describe as describe_sizes

# The area modules of the suite, in the order the table shows them.
AREAS = ("slices", "training_ops", "clip", "segment", "autodiff", "end_to_end")

# The worker's exit status when the library of a case is not installed.
MISSING_STATUS = 3

# Bytes copied by each bandwidth measurement (a copy reads and writes them).
BANDWIDTH_BYTES = BANDWIDTH_MIB.full << 20

# The module to import to find out whether a library is there, and its version.
IMPORT_NAMES = {"sparsegrad": "sparsegrad", "tensorflow": "tensorflow",
                "torch": "torch", "fbgemm": "fbgemm_gpu", "numpy": "numpy"}


# ---------------------------------------------------------------------------
# Timing and the machine.


def time_calls(fn, repeat, warmup=1):
    """Seconds taken by each of `repeat` calls of `fn`, after `warmup` calls.

    Parameters
    ----------
    fn : callable
        Called with no arguments.
    repeat : int
        Number of timed calls (at least 1).
    warmup : int, optional
        Calls made first, not timed.

    Returns
    -------
    list of float
        One duration per timed call, measured with :func:`time.perf_counter`.

    Raises
    ------
    ValueError
        If `repeat` is below 1 or `warmup` below 0.

    Examples
    --------
    >>> times = time_calls(lambda: sum(range(100)), repeat=3)
    >>> len(times), all(t >= 0 for t in times)
    (3, True)
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat!r}")
    if warmup < 0:
        raise ValueError(f"warmup must be at least 0, got {warmup!r}")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def block_medians(times, block):
    """The median of each run of `block` consecutive timings.

    Only whole blocks count: the timings after the last whole block (fewer
    than `block`) are left out, and fewer than `block` timings give no block.

    Parameters
    ----------
    times : sequence of float
        Timings in the order they were taken.
    block : int
        Timings per block (at least 1).

    Returns
    -------
    list of float
        One median per whole block, in order.

    Raises
    ------
    ValueError
        If `block` is below 1.

    Examples
    --------
    >>> block_medians([1, 5, 2, 9, 9, 8, 4], block=3)
    [2, 9]
    >>> block_medians([1.0, 2.0], block=3)
    []
    """
    if block < 1:
        raise ValueError(f"block must be at least 1, got {block!r}")
    return [statistics.median(times[i:i + block])
            for i in range(0, len(times) - block + 1, block)]


def block_ratio(blocks):
    """The slowest block median over the fastest, over every block given.

    Parameters
    ----------
    blocks : sequence of float
        Block medians (:func:`block_medians`), of one process or of several.

    Returns
    -------
    float or None
        1.0 when every block took the same time; None for fewer than two
        blocks, or when the fastest took no time.

    Examples
    --------
    >>> block_ratio([2.0, 3.0, 2.5])
    1.5
    >>> block_ratio([2.0]) is None
    True
    """
    if len(blocks) < 2 or min(blocks) <= 0:
        return None
    return max(blocks) / min(blocks)


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


# ---------------------------------------------------------------------------
# Finding the cases.


@dataclass
class Suite:
    """The cases found, and why any area module was left out.

    Attributes
    ----------
    entries : list of (str, Case)
        The module each case lives in (as the worker imports it), and the case.
    notes : list of str
        One line per area module that could not be imported.
    """

    entries: list[tuple] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def module_path(module):
    """The importable name of an area module: ``"clip"`` is
    ``"sparsegrad.bench.clip"``; a dotted name is taken as it is."""
    return module if "." in module else f"{__package__}.{module}"


def load_suite(modules=AREAS):
    """Import the area modules and collect their ``CASES``.

    Parameters
    ----------
    modules : sequence of str, optional
        Area names (``"clip"``) or importable module names.

    Returns
    -------
    Suite
        The cases in order; a module that cannot be imported is skipped and
        named in :attr:`Suite.notes`.

    Raises
    ------
    ValueError
        If two cases share a name.

    Examples
    --------
    >>> suite = load_suite(["clip"])
    >>> all(name.startswith("clip/") for name in (c.name for _, c in suite.entries))
    True
    """
    import importlib

    suite = Suite()
    seen = set()
    for module in modules:
        path = module_path(module)
        try:
            mod = importlib.import_module(path)
        except ImportError as exc:
            suite.notes.append(f"area {module!r} skipped: {path} cannot be "
                               f"imported ({exc})")
            continue
        for case in getattr(mod, "CASES", ()):
            if case.name in seen:
                raise ValueError(f"two benchmark cases are named {case.name!r}")
            seen.add(case.name)
            suite.entries.append((path, case))
    return suite


def select(entries, patterns):
    """The entries whose case name matches any of `patterns`.

    A pattern matches when it is a substring of the name or, failing that,
    when it is a regular expression found in the name.  No pattern selects
    every entry.

    Parameters
    ----------
    entries : list of (str, Case)
        As in :attr:`Suite.entries`.
    patterns : list of str
        Substrings or regular expressions; each may hold several, separated
        by commas.

    Returns
    -------
    list of (str, Case)

    Raises
    ------
    ValueError
        If a pattern is neither a substring of a name nor a valid regular
        expression.

    Examples
    --------
    >>> from sparsegrad.bench.case import Case
    >>> entries = [("m", Case("a/x", "")), ("m", Case("b/y", ""))]
    >>> [c.name for _, c in select(entries, ["b/"])]
    ['b/y']
    >>> [c.name for _, c in select(entries, ["^a/.$,y"])]
    ['a/x', 'b/y']
    """
    wanted = [p.strip() for group in patterns or () for p in group.split(",")]
    wanted = [p for p in wanted if p]
    if not wanted:
        return list(entries)
    matchers = []
    for p in wanted:
        try:
            regex = re.compile(p)
        except re.error as exc:
            if not any(p in case.name for _, case in entries):
                raise ValueError(f"--filter {p!r} is neither part of a case name "
                                 f"nor a valid regular expression ({exc})") from None
            regex = None
        matchers.append((p, regex))
    return [
        (m, case) for m, case in entries
        if any(p in case.name or (r is not None and r.search(case.name))
               for p, r in matchers)
    ]


# ---------------------------------------------------------------------------
# Running workers.


def own_environment(env):
    """Take sparsegrad's default ``OMP_WAIT_POLICY`` out of `env` (a mapping,
    changed in place) where the user did not set it, so that a peer library
    loads its OpenMP runtime with its own default, as it would in a process
    without sparsegrad."""
    from sparsegrad import _kernels

    if _kernels.OMP_WAIT_POLICY_DEFAULTED:
        env.pop("OMP_WAIT_POLICY", None)


def worker_env():
    """The environment of a worker: this one, with the directory that holds
    this sparsegrad first on ``PYTHONPATH``, so that the worker (under this
    interpreter or another) imports the same package as this process, and
    without the ``OMP_WAIT_POLICY`` that importing sparsegrad sets when the
    user has not (see :func:`own_environment`)."""
    import sparsegrad

    env = dict(os.environ)
    own_environment(env)
    root = os.path.dirname(os.path.dirname(os.path.abspath(sparsegrad.__file__)))
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in parts if p != root])
    return env


def run_worker(argv, python=sys.executable, timeout=None):
    """Run ``python -m sparsegrad.bench.worker argv`` and read its JSON.

    Returns
    -------
    dict
        The worker's last line of output, parsed.  A worker that fails gives
        ``{"status": "error", "reason": ...}`` (its last line of stderr).
    """
    cmd = [python, "-m", f"{__package__}.worker", *argv]
    env = worker_env()
    # ``python -m`` puts the working directory first on sys.path: run in the
    # directory that holds this sparsegrad, so that a source tree in the
    # caller's directory (without built kernels) cannot shadow it.
    cwd = env["PYTHONPATH"].split(os.pathsep)[0]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                              env=env, cwd=cwd, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"status": "error", "reason": f"{type(exc).__name__}: {exc}"}
    lines = proc.stdout.strip().splitlines()
    if lines:
        try:
            out = json.loads(lines[-1])
        except json.JSONDecodeError:
            out = None
        if isinstance(out, dict) and "status" in out:
            return out
    last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"status": "error",
            "reason": f"exit status {proc.returncode}: {last[:300]}"}


def absent_libraries(libraries, pythons=None):
    """The libraries of `libraries` that no worker could import, and why.

    A library runs when this interpreter finds it (without importing it) or
    when `pythons` gives it an interpreter of its own; the others are not
    started at all, and their cells in the table say why.

    Parameters
    ----------
    libraries : sequence of str
        Library names, as in :data:`~sparsegrad.bench.case.LIBRARIES`.
    pythons : dict, optional
        Library -> the interpreter its workers run under (``--python``).

    Returns
    -------
    dict
        Library -> reason (``"tensorflow not installed"``), for each library
        that will not run; empty when every one will.

    Examples
    --------
    >>> absent_libraries(["sparsegrad", "nosuchlib_xyz"])
    {'nosuchlib_xyz': 'nosuchlib_xyz not installed'}
    >>> absent_libraries(["nosuchlib_xyz"], {"nosuchlib_xyz": "/opt/env/python"})
    {}
    """
    import importlib.util

    pythons = pythons or {}
    absent = {}
    for lib in libraries:
        if lib in pythons:
            continue
        try:
            found = importlib.util.find_spec(IMPORT_NAMES.get(lib, lib)) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            absent[lib] = f"{lib} not installed"
    return absent


@dataclass
class Settings:
    """How a run times its cases (the command line's options).

    ``steps``, when set, replaces the ``steps`` of every steady-state case;
    left None, a case times its own ``steps`` (at most :data:`QUICK_STEPS`
    with ``quick``).  Ordinary cases time ``repeat`` calls per process.
    """

    libraries: tuple = LIBRARIES
    rounds: int = 3
    repeat: int = 9
    warmup: int = 1
    quick: bool = False
    threads: Optional[int] = None
    pythons: dict[str, str] = field(default_factory=dict)
    steps: Optional[int] = None


def calls_per_process(case, settings):
    """The timed calls each worker process of `case` makes under `settings`.

    Parameters
    ----------
    case : Case
    settings : Settings

    Returns
    -------
    int
        ``settings.repeat`` for an ordinary case; for a steady-state case
        ``settings.steps`` if set, else the case's ``steps`` (at most
        :data:`QUICK_STEPS` in a quick run).

    Examples
    --------
    >>> from sparsegrad.bench.case import Case
    >>> steady = Case("a/step", "", steps=100)
    >>> calls_per_process(steady, Settings(quick=True))
    20
    >>> calls_per_process(Case("a/op", ""), Settings(repeat=5))
    5
    """
    if case.steps is None:
        return settings.repeat
    if settings.steps is not None:
        return settings.steps
    return min(case.steps, QUICK_STEPS) if settings.quick else case.steps


def _summary(times):
    ordered = sorted(times)
    q1, _, q3 = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else ordered * 3
    return {"median": statistics.median(ordered), "min": ordered[0],
            "max": ordered[-1], "q1": q1, "q3": q3}


def _blocks(processes, block):
    """The block medians of each process's timings and their ratios."""
    blocks = [block_medians(times, block) for times in processes]
    within = [r for r in map(block_ratio, blocks) if r is not None]
    return {"blocks": blocks,
            "block_ratio": block_ratio([m for b in blocks for m in b]),
            "block_ratio_within": max(within) if within else None}


def run_cases(entries, settings, bandwidth, progress=None):
    """Time every (case, library) pair, library after library, round after round.

    Parameters
    ----------
    entries : list of (str, Case)
        The cases, as :func:`load_suite` gives them.
    settings : Settings
    bandwidth : float
        Bytes per second of the floor.
    progress : callable, optional
        Called with one line before each worker starts.

    Returns
    -------
    list of dict
        Per case: ``name``, ``description``, ``floor_bytes``, ``floor``
        (seconds, or None), ``results`` (library -> ``status`` ``"ok"`` with
        ``times``, ``median``, ``min``, ``max``, ``q1``, ``q3`` and
        ``version``; ``"missing"`` or ``"error"`` with ``reason``; or
        ``"n/a"`` where the case has no setup for the library), ``ratios``
        (peer median / sparsegrad median) and ``x_floor``; ``steps`` (the
        calls each process timed, for a steady-state case, else None) and
        ``block``.  For a steady-state case each ``"ok"`` result also has
        ``blocks`` (per process, in the order the processes ran, the list
        of its block medians), ``block_ratio`` (slowest over fastest block
        median over all of them) and ``block_ratio_within`` (the largest
        such ratio inside one process).

    Notes
    -----
    A library that :func:`absent_libraries` finds missing gets no worker (and
    no progress line); it is reported ``"missing"`` in every case that has a
    setup for it.
    """
    threads = settings.threads or os.cpu_count() or 1
    absent = absent_libraries(settings.libraries, settings.pythons)
    rows = []
    for index, (module, case) in enumerate(entries, 1):
        libraries = [lib for lib in settings.libraries if lib in case.setups]
        n_calls = calls_per_process(case, settings)
        gathered = {lib: [] for lib in libraries}
        per_process = {lib: [] for lib in libraries}
        failed = {lib: {"status": "missing", "reason": absent[lib]}
                  for lib in libraries if lib in absent}
        versions = {}
        for r in range(settings.rounds):
            for lib in libraries:
                if lib in failed:
                    continue
                if progress:
                    progress(f"[{index}/{len(entries)}] {case.name} {lib} "
                             f"round {r + 1}/{settings.rounds}")
                argv = [module, case.name, lib, "--repeat", str(n_calls),
                        "--warmup", str(settings.warmup), "--threads", str(threads)]
                if settings.quick:
                    argv.append("--quick")
                out = run_worker(argv, settings.pythons.get(lib, sys.executable))
                if out["status"] == "ok":
                    gathered[lib].extend(out["times"])
                    per_process[lib].append(out["times"])
                    versions[lib] = out.get("version")
                else:
                    failed[lib] = out
        results = {}
        for lib in settings.libraries:
            if lib not in case.setups:
                results[lib] = {"status": "n/a"}
            elif lib in failed:
                results[lib] = {"status": failed[lib]["status"],
                                "reason": failed[lib].get("reason", "")}
            else:
                results[lib] = {"status": "ok", "version": versions.get(lib),
                                "times": gathered[lib], **_summary(gathered[lib])}
                if case.steps is not None:
                    results[lib].update(_blocks(per_process[lib], case.block))
        ours = results.get("sparsegrad", {})
        ours_t = ours.get("median") if ours.get("status") == "ok" else None
        ratios = {
            lib: res["median"] / ours_t
            for lib, res in results.items()
            if lib != "sparsegrad" and res["status"] == "ok" and ours_t
        }
        rows.append({
            "name": case.name,
            "module": module,
            "description": case.description,
            "floor_bytes": (case.floor_bytes(settings.quick) if case.floor_bytes
                            else None),
            "results": results,
            "ratios": ratios,
            "steps": n_calls if case.steps is not None else None,
            "block": case.block,
        })
    set_floors(rows, bandwidth)
    return rows


def set_floors(rows, bandwidth):
    """Set each row's ``floor`` (seconds: its ``floor_bytes`` over `bandwidth`)
    and ``x_floor`` (sparsegrad's median over the floor), or None for both
    where the row has no floor or no sparsegrad timing."""
    for row in rows:
        floor = row["floor_bytes"] / bandwidth if row["floor_bytes"] else None
        ours = row["results"].get("sparsegrad", {})
        ours_t = ours.get("median") if ours.get("status") == "ok" else None
        row["floor"] = floor
        row["x_floor"] = ours_t / floor if (ours_t and floor) else None


# ---------------------------------------------------------------------------
# The table.


def format_seconds(seconds):
    """A duration with a unit that keeps three or four significant digits.

    Examples
    --------
    >>> format_seconds(0.01234), format_seconds(2.5e-5), format_seconds(3.0)
    ('12.3 ms', '25.0 µs', '3.00 s')
    """
    if seconds is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale or unit == "µs":
            value = seconds / scale
            digits = 2 if value < 10 else 1 if value < 100 else 0
            return f"{value:.{digits}f} {unit}"
    raise AssertionError("unreachable")


def _spread(res):
    """Half the interquartile range, relative to the median."""
    return f"±{50 * (res['q3'] - res['q1']) / res['median']:.0f}%"


_SHORT = {"tensorflow": "tf", "fbgemm": "fb", "numpy": "np"}


def _ratio(value):
    return "—" if value is None else f"{value:.2f}x"


def format_table(rows, libraries):
    """The results as one text table, with a footnote per skipped library.

    Columns: the case, each library's median (sparsegrad's followed by its
    spread and, when a steady-state case is among the rows, its ``blocks``:
    the slowest block median over the fastest; a peer's followed by its time
    over sparsegrad's), the floor and sparsegrad's time over the floor.
    """
    peers = [lib for lib in libraries if lib != "sparsegrad"]
    steady = any(row.get("steps") is not None for row in rows)
    header = ["case"]
    if "sparsegrad" in libraries:
        header += ["sparsegrad", "spread"] + (["blocks"] if steady else [])
    for lib in peers:
        header += [lib, f"{_SHORT.get(lib, lib)}/sg"]
    header += ["floor", "x floor"]
    body = []
    notes = []
    for row in rows:
        line = [row["name"]]
        for lib in libraries:
            res = row["results"][lib]
            cell = format_seconds(res["median"]) if res["status"] == "ok" else "—"
            if res["status"] in ("missing", "error"):
                note = (f"{lib}: {res['reason']}" if res["status"] == "error"
                        else res["reason"])
                if note not in notes:
                    notes.append(note)
                cell += f" [{notes.index(note) + 1}]"
            line.append(cell)
            if lib == "sparsegrad":
                line.append(_spread(res) if res["status"] == "ok" else "—")
                if steady:
                    line.append(_ratio(res.get("block_ratio")))
            else:
                line.append(_ratio(row["ratios"].get(lib)))
        line += [format_seconds(row["floor"]) if row["floor"] else "—",
                 _ratio(row["x_floor"])]
        body.append(line)
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    fmt = [f"{{:<{widths[0]}}}"] + [f"{{:>{w}}}" for w in widths[1:]]
    lines = ["  ".join(f.format(c) for f, c in zip(fmt, header))]
    lines.append("-" * len(lines[0]))
    for line in body:
        lines.append("  ".join(f.format(c) for f, c in zip(fmt, line)))
    legend = []
    if peers:
        legend.append("spread: half the interquartile range of sparsegrad's "
                      "timings over their median; peer/sg: the peer's median "
                      "over sparsegrad's (above 1: sparsegrad is faster); x "
                      "floor: sparsegrad's median over the bandwidth floor; —: "
                      "not run")
    if steady and "sparsegrad" in libraries:
        legend.append("blocks: steady-state cases only; sparsegrad's slowest "
                      "median of a block of consecutive steps over its fastest, "
                      "over the blocks of every process (1.00x: every block "
                      "alike; the JSON has each process's block medians for "
                      "every library)")
    if legend:
        lines += [""] + legend
    for i, note in enumerate(notes, 1):
        lines.append(f"[{i}] {note}")
    return "\n".join(lines)


def results_json(machine, bandwidth, settings, rows, notes):
    """Everything a run measured, as a JSON-serialisable dict."""
    return {
        "machine": machine,
        "bandwidth": bandwidth,
        "settings": {"libraries": list(settings.libraries), "rounds": settings.rounds,
                     "repeat": settings.repeat, "steps": settings.steps,
                     "quick_steps": QUICK_STEPS, "warmup": settings.warmup,
                     "quick": settings.quick, "pythons": settings.pythons,
                     "sizes": describe_sizes(settings.quick)},
        "notes": notes,
        "cases": rows,
    }
