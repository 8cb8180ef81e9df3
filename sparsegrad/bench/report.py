"""The benchmark's report: durations with their units, the results table
and the JSON record of a run."""

from .sizes import QUICK_STEPS
from .sizes import describe as describe_sizes


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


def format_bytes(n_bytes):
    """A byte count in KiB, MiB or GiB with three or four significant digits.

    Examples
    --------
    >>> format_bytes(3 << 20), format_bytes(1536), format_bytes(None)
    ('3.00 MiB', '1.50 KiB', '—')
    >>> format_bytes(-(300 << 20))
    '-300 MiB'
    """
    if n_bytes is None:
        return "—"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n_bytes) >= scale or unit == "KiB":
            value = n_bytes / scale
            digits = 2 if abs(value) < 10 else 1 if abs(value) < 100 else 0
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
    the slowest block median over the fastest, and, when a case with
    ``memory`` is among the rows, its ``memory``: the resident-memory growth
    of its process; a peer's followed by its time over sparsegrad's), the
    floor and sparsegrad's time over the floor.  Under the table, a line per
    row with a ``memory_ratio`` compares its memory with its baseline's.
    """
    peers = [lib for lib in libraries if lib != "sparsegrad"]
    steady = any(row.get("steps") is not None for row in rows)
    ours_in = "sparsegrad" in libraries
    memory = ours_in and any(row.get("memory") for row in rows)
    header = ["case"]
    if ours_in:
        header += (["sparsegrad", "spread"] + (["blocks"] if steady else [])
                   + (["memory"] if memory else []))
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
                if memory:
                    line.append(format_bytes(res.get("rss_growth"))
                                if row.get("memory") else "—")
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
    if memory:
        legend.append("memory: the growth of sparsegrad's resident set size "
                      "from before the case's setup to after its warm-up, in "
                      "its own process (median over the processes; the JSON "
                      "has it for every library and case)")
    if legend:
        lines += [""] + legend
    for row in rows:
        if row.get("memory_ratio") is not None:
            base = row["memory_baseline"]
            (base_res,) = [r["results"]["sparsegrad"] for r in rows
                           if r["name"] == base]
            lines.append(
                f"memory: {row['name']} "
                f"{format_bytes(row['results']['sparsegrad']['rss_growth'])}, "
                f"{row['memory_ratio']:.2f}x {base} "
                f"({format_bytes(base_res['rss_growth'])})")
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
