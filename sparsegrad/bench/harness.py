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

The timing (:mod:`.timing`), the machine and its bandwidth floor
(:mod:`.machine`) and the table (:mod:`.report`) have modules of their own;
this one names their entries too.
"""

import json
import os
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Optional

from .case import LIBRARIES
from .machine import (  # noqa: F401 (the harness's API: cli and worker use them)
    BANDWIDTH_BYTES,
    cpu_model,
    describe_machine,
    gemm_rate,
    machine_line,
    measure_bandwidth,
    own_environment,
    update_bandwidth,
)
from .report import (  # noqa: F401
    format_bytes,
    format_seconds,
    format_table,
    results_json,
)
from .sizes import QUICK_STEPS
from .timing import block_medians, block_ratio, time_calls  # noqa: F401

# The area modules of the suite, in the order the table shows them.
AREAS = ("slices", "training_ops", "clip", "segment", "autodiff", "end_to_end")

# The worker's exit status when the library of a case is not installed.
MISSING_STATUS = 3

# The module to import to find out whether a library is there, and its version.
IMPORT_NAMES = {"sparsegrad": "sparsegrad", "tensorflow": "tensorflow",
                "torch": "torch", "fbgemm": "fbgemm_gpu", "numpy": "numpy"}


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


def _memory(readings):
    """The resident-memory growth of a library's processes: their median
    (bytes) and each process's figure, or nothing where none was read."""
    if not readings:
        return {}
    growths = [n for n, _ in readings]
    return {"rss_growth": int(statistics.median(growths)), "rss_growths": growths,
            "rss_source": readings[-1][1]}


def _blocks(processes, block):
    """The block medians of each process's timings and their ratios."""
    blocks = [block_medians(times, block) for times in processes]
    within = [r for r in map(block_ratio, blocks) if r is not None]
    return {"blocks": blocks,
            "block_ratio": block_ratio([m for b in blocks for m in b]),
            "block_ratio_within": max(within) if within else None}


def run_cases(entries, settings, bandwidth, progress=None, gemm=None):
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
    gemm : float, optional
        Floating-point operations per second of the floor's matrix products
        (needed only by a case with ``floor_flops``).

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
        such ratio inside one process).  Every ``"ok"`` result whose worker
        could read its resident memory has ``rss_growth`` (the median over
        its processes of the bytes gained from before the setup to after the
        warm-up), ``rss_growths`` (each process's) and ``rss_source``; each
        row has ``memory`` and ``memory_baseline`` (the case's) and
        ``memory_ratio`` (:func:`set_memory_ratios`).

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
        memory = {lib: [] for lib in libraries}
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
                    if "rss_growth" in out:
                        memory[lib].append((out["rss_growth"], out["rss_source"]))
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
                results[lib].update(_memory(memory[lib]))
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
            "floor_flops": (case.floor_flops(settings.quick) if case.floor_flops
                            else None),
            "results": results,
            "ratios": ratios,
            "steps": n_calls if case.steps is not None else None,
            "block": case.block,
            "memory": case.memory,
            "memory_baseline": case.memory_baseline,
        })
    set_floors(rows, bandwidth, gemm)
    set_memory_ratios(rows)
    return rows


def set_memory_ratios(rows):
    """Set each row's ``memory_ratio``: sparsegrad's resident-memory growth
    over that of the row named by its ``memory_baseline``, or None where the
    row has no baseline, the baseline did not run, or either lacks the
    figure.

    Examples
    --------
    >>> ok = lambda n: {"sparsegrad": {"status": "ok", "rss_growth": n}}
    >>> rows = [{"name": "a", "memory_baseline": None, "results": ok(400)},
    ...         {"name": "b", "memory_baseline": "a", "results": ok(200)}]
    >>> set_memory_ratios(rows)
    >>> [row["memory_ratio"] for row in rows]
    [None, 0.5]
    """
    growth = {row["name"]: row["results"].get("sparsegrad", {}).get("rss_growth")
              for row in rows}
    for row in rows:
        base = growth.get(row.get("memory_baseline"))
        ours = growth.get(row["name"])
        row["memory_ratio"] = (ours / base if ours is not None
                               and base is not None and base > 0 else None)


def set_floors(rows, bandwidth, gemm=None):
    """Set each row's ``floor`` (seconds: its ``floor_bytes`` over `bandwidth`,
    plus its ``floor_flops`` over `gemm` where it has them) and ``x_floor``
    (sparsegrad's median over the floor), or None for both where the row has
    no floor, no sparsegrad timing, or operations but no `gemm` rate.

    Examples
    --------
    >>> ok = {"sparsegrad": {"status": "ok", "median": 0.003}}
    >>> rows = [{"floor_bytes": 2e6, "floor_flops": 1e7, "results": ok}]
    >>> set_floors(rows, bandwidth=1e9, gemm=1e10)
    >>> round(rows[0]["floor"], 6), round(rows[0]["x_floor"], 3)
    (0.003, 1.0)
    """
    for row in rows:
        floor = row["floor_bytes"] / bandwidth if row["floor_bytes"] else None
        flops = row.get("floor_flops")
        if flops:
            floor = (floor or 0.0) + flops / gemm if gemm else None
        ours = row["results"].get("sparsegrad", {})
        ours_t = ours.get("median") if ours.get("status") == "ok" else None
        row["floor"] = floor
        row["x_floor"] = ours_t / floor if (ours_t and floor) else None


# ---------------------------------------------------------------------------
# The table.
