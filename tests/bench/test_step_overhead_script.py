"""benchmarks/bench_step_overhead.py runs (it calls a compiled driver by its
positional signature, which a kernel change can break unseen)."""

import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "benchmarks", "bench_step_overhead.py")


def test_the_step_overhead_script_runs():
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--repeat", "1", "--number", "3"],
        capture_output=True, text=True, timeout=300, cwd=os.path.expanduser("~"),
    )
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("  ")[0]: line.split()[-2:] for line in proc.stdout.splitlines()
            if line.startswith(("Adagrad.apply", "training_ops.", "kernel only"))}
    assert len(rows) == 3, proc.stdout
    for median, best in rows.values():
        assert 0 < float(best) <= float(median)
