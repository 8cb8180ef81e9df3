"""Time sparsegrad against TensorFlow, PyTorch and NumPy, and against the
memory-bandwidth floor.

The suite ships with the package, one module per area (slices, training_ops,
clip, segment, autodiff, end_to_end).  Every (case, library) pair runs in a
fresh process of its own; for each case the libraries take turns for
``--rounds`` rounds and the table quotes the median of all timings.  A
steady-state case (a training step) times --steps consecutive steps in each
process instead of --repeat calls; its "blocks" column is sparsegrad's
slowest median of 10 consecutive steps over its fastest.  The floor
of a case is the bytes it must move divided by the better of a one-thread
and an all-core in-place update of a large array (each byte read, then
written: how the updates use memory), plus, for a case with matrix products,
their operations divided by NumPy's float32 matrix-product rate; both are
measured before and after the cases, and the better figure counts.  A peer that is
not installed (nor given an interpreter with --python) is not started; its
cells say so.  --list describes each case at its full size; --quick runs
every case smaller (its help lists the sizes).

examples:
  sparsegrad bench --list
  sparsegrad bench --filter clip/ --json clip.json
  sparsegrad bench --python tensorflow=/opt/tf/bin/python
  sparsegrad bench --filter segment/embedding_bag --python fbgemm=/opt/fb/bin/python
"""

import argparse
import sys

from . import sizes
from .case import LIBRARIES
from .sizes import QUICK_STEPS

HELP = ("time sparsegrad against TensorFlow, PyTorch, FBGEMM, NumPy and the "
        "bandwidth floor")


def _python_option(text):
    library, sep, path = text.partition("=")
    if not sep or not library or not path:
        raise argparse.ArgumentTypeError(
            f"--python takes LIBRARY=PATH, got {text!r}")
    return library, path


def _count(text, least):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected at least {least}, got {value}")
    return value


def _positive(text):
    return _count(text, 1)


def _non_negative(text):
    return _count(text, 0)


def add_arguments(parser):
    """Add the options of ``sparsegrad bench`` to `parser`."""
    parser.add_argument(
        "--filter", action="append", default=[], metavar="PATTERN",
        help="run the cases whose name contains PATTERN or matches it as a "
             "regular expression (repeatable, or comma separated)")
    parser.add_argument("--list", action="store_true",
                        help="list the cases and what they time, then exit")
    parser.add_argument("--json", metavar="FILE",
                        help="also write every timing and ratio to FILE as JSON")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: one round of 3 calls (at most "
                             f"{QUICK_STEPS} steps for the steady-state cases) "
                             "at small sizes (" + sizes.describe(True) + ")")
    parser.add_argument("--rounds", type=_positive, default=None,
                        help="turns each library takes per case (default 3, "
                             "1 with --quick)")
    parser.add_argument("--repeat", type=_positive, default=None,
                        help="timed calls per turn (default 9, 3 with --quick)")
    parser.add_argument("--steps", type=_positive, default=None,
                        help="timed steps per process of the steady-state cases "
                             "(default: the case's, 100; at most "
                             f"{QUICK_STEPS} with --quick)")
    parser.add_argument("--warmup", type=_non_negative, default=1,
                        help="untimed calls before the timed ones (default 1)")
    parser.add_argument("--threads", type=_positive, default=None,
                        help="threads each library uses (default: every processor)")
    parser.add_argument(
        "--libraries", default=None, metavar="LIST",
        help="comma-separated subset of " + ",".join(LIBRARIES))
    parser.add_argument(
        "--python", action="append", default=[], type=_python_option,
        metavar="LIBRARY=PATH",
        help="run LIBRARY's workers under another interpreter, e.g. "
             "tensorflow=/opt/tf/bin/python (repeatable)")


class _Progress:
    """One line on stderr, rewritten in place on a terminal."""

    def __init__(self, stream):
        self.stream = stream
        self.tty = stream.isatty()
        self.width = 0

    def __call__(self, text):
        if self.tty:
            pad = max(self.width - len(text), 0)
            self.stream.write("\r" + text + " " * pad)
            self.width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def done(self):
        if self.tty and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


def libraries_line(libraries, pythons):
    """The header line that names the libraries a run times and those it skips.

    Parameters
    ----------
    libraries : sequence of str
        The libraries asked for (``--libraries``, or all of them).
    pythons : dict
        Library -> interpreter (``--python``).

    Returns
    -------
    str

    Examples
    --------
    >>> libraries_line(["sparsegrad", "nosuchlib_xyz"], {})
    'libraries: sparsegrad; not run: nosuchlib_xyz not installed'
    """
    from . import harness

    absent = harness.absent_libraries(libraries, pythons)
    line = "libraries: " + ", ".join(
        lib + (f" (under {pythons[lib]})" if lib in pythons else "")
        for lib in libraries if lib not in absent)
    if absent:
        line += "; not run: " + ", ".join(absent.values())
    return line


def steady_line(entries, settings):
    """What the header says of the steady-state cases among `entries`.

    Parameters
    ----------
    entries : list of (str, Case)
        The cases run.
    settings : harness.Settings

    Returns
    -------
    str
        ``"; steady-state cases: 100 steps per process, blocks of 10"`` (one
        such clause per distinct setting), or ``""`` when none is run.

    Examples
    --------
    >>> from sparsegrad.bench.case import Case
    >>> from sparsegrad.bench.harness import Settings
    >>> steady_line([("m", Case("a/step", "", steps=100))], Settings())
    '; steady-state cases: 100 steps per process, blocks of 10'
    >>> steady_line([("m", Case("a/op", ""))], Settings())
    ''
    """
    from . import harness

    seen = []
    for _, case in entries:
        if case.steps is not None:
            kind = (harness.calls_per_process(case, settings), case.block)
            if kind not in seen:
                seen.append(kind)
    if not seen:
        return ""
    return "; steady-state cases: " + ", ".join(
        f"{n} steps per process, blocks of {block}" for n, block in seen)


def run(args):
    """Run ``sparsegrad bench`` with parsed `args`; return the exit status."""
    import json
    import os

    from . import harness

    suite = harness.load_suite()
    try:
        entries = harness.select(suite.entries, args.filter)
    except ValueError as exc:
        print(f"sparsegrad bench: {exc}", file=sys.stderr)
        return 2
    if not entries:
        print(f"sparsegrad bench: no case matches --filter "
              f"{', '.join(args.filter)}; --list shows the cases", file=sys.stderr)
        return 2
    if args.list:
        width = max(len(case.name) for _, case in entries)
        for _, case in entries:
            print(f"{case.name:<{width}}  {case.description}")
        for note in suite.notes:
            print(f"note: {note}")
        return 0

    libraries = LIBRARIES
    if args.libraries:
        wanted = [x.strip() for x in args.libraries.split(",") if x.strip()]
        unknown = [x for x in wanted if x not in LIBRARIES]
        if unknown or not wanted:
            print(f"sparsegrad bench: --libraries {args.libraries!r}: unknown "
                  f"{unknown}; choose from {', '.join(LIBRARIES)}", file=sys.stderr)
            return 2
        libraries = tuple(x for x in LIBRARIES if x in wanted)  # table order
    pythons = dict(args.python)
    for library, path in pythons.items():
        if library not in LIBRARIES:
            print(f"sparsegrad bench: --python {library}={path}: unknown library "
                  f"{library!r}; choose from {', '.join(LIBRARIES)}", file=sys.stderr)
            return 2
        if not os.access(path, os.X_OK):
            print(f"sparsegrad bench: --python {library}={path}: not an "
                  f"executable file", file=sys.stderr)
            return 2
    settings = harness.Settings(
        libraries=libraries,
        rounds=args.rounds or (1 if args.quick else 3),
        repeat=args.repeat or (3 if args.quick else 9),
        warmup=args.warmup,
        quick=args.quick,
        threads=args.threads or os.cpu_count() or 1,
        pythons=pythons,
        steps=args.steps,
    )

    progress = _Progress(sys.stderr)
    # The floor's rates are measured before and after the cases (the
    # all-core update on every processor, whatever --threads says); the
    # floor uses the better measurement, since a neighbour's load only ever
    # lowers it.
    measurements = []
    for when in ("before", "after"):
        progress(f"measuring the update bandwidth and GEMM rate ({when} the cases)")
        out = harness.run_worker(
            ["--bandwidth", "--quick"] if args.quick else ["--bandwidth"])
        if out["status"] != "ok":
            progress.done()
            print(f"sparsegrad bench: the bandwidth measurement failed: "
                  f"{out['reason']}", file=sys.stderr)
            return 1
        del out["status"]
        measurements.append(out)
        if when == "before":
            machine = harness.describe_machine(settings.threads)
            rows = harness.run_cases(entries, settings, out["bandwidth"], progress,
                                     out.get("gemm"))
    progress.done()
    bandwidth = dict(max(measurements, key=lambda m: m["bandwidth"]))
    bandwidth["gemm"] = max(m["gemm"] for m in measurements)
    bandwidth["measurements"] = measurements
    harness.set_floors(rows, bandwidth["bandwidth"], bandwidth["gemm"])
    for row in rows:
        for lib, res in row["results"].items():
            if res.get("version"):
                machine["versions"].setdefault(lib, res["version"])

    print(harness.machine_line(machine, bandwidth))
    print(f"medians of {settings.rounds} round(s) x {settings.repeat} calls"
          f"{steady_line(entries, settings)}"
          f"{'; quick sizes: ' + sizes.describe(True) if args.quick else ''}")
    print(libraries_line(libraries, pythons))
    print()
    print(harness.format_table(rows, libraries))
    for note in suite.notes:
        print(f"note: {note}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(harness.results_json(machine, bandwidth, settings, rows,
                                           suite.notes), f, indent=1)
    failed = [row["name"] for row in rows
              if row["results"].get("sparsegrad", {}).get("status") == "error"]
    if failed:
        print(f"sparsegrad bench: sparsegrad failed in {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


def main(argv=None, filters=()):
    """``sparsegrad bench`` for scripts (``benchmarks/bench_*.py``).

    Parameters
    ----------
    argv : list of str, optional
        The options (default: ``sys.argv[1:]``).  ``--tf-python PATH``, the
        option of the scripts that came before this command, is read as
        ``--python tensorflow=PATH``.
    filters : sequence of str, optional
        ``--filter`` patterns used when `argv` gives none.

    Returns
    -------
    int
        The exit status.
    """
    parser = argparse.ArgumentParser(
        prog="sparsegrad bench", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    for i, arg in enumerate(argv):
        if arg == "--tf-python":
            argv[i] = "--python"
            if i + 1 < len(argv):
                argv[i + 1] = f"tensorflow={argv[i + 1]}"
        elif arg.startswith("--tf-python="):
            argv[i] = f"--python=tensorflow={arg.split('=', 1)[1]}"
    if not any(a == "--filter" or a.startswith("--filter=") for a in argv):
        for pattern in filters:
            argv += ["--filter", pattern]
    return run(parser.parse_args(argv))
