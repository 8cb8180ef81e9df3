"""The same bits on every x86-64 CPU, for any thread count and kernel build.

``trajectories.py`` trains every optimizer and runs every raw training op (and
two tape-driven loops) on fixed inputs and prints one hash of all the states.
It runs here in fresh processes under each setting that must not change a
bit, and every run must print the same hash:

* NumPy's SIMD dispatch as detected, with its AVX-512 paths off (what a CPU
  without AVX-512 runs), and with every dispatched path off (an x86-64 CPU
  with nothing beyond NumPy's baseline);
* 1 and 2 kernel threads;
* sparsegrad's AVX2 kernel build and its baseline build.

NumPy's float32 ``power`` and ``log1p`` and float64 ``exp``/``log`` take
different code on such CPUs and are not correctly rounded, so any of them
feeding a result would show here.
"""

import os
import subprocess
import sys

try:
    from numpy._core._multiarray_umath import __cpu_dispatch__
except ImportError:  # NumPy 1.x
    from numpy.core._multiarray_umath import __cpu_dispatch__

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trajectories.py")

# NumPy's dispatch targets that hold its AVX-512 code, under the names of this
# NumPy (2.x groups them as X86_V4 ...; 1.x names the extensions).
_AVX512 = [f for f in __cpu_dispatch__ if f.startswith(("X86_V4", "AVX512"))]
_ALL = list(__cpu_dispatch__)

SETTINGS = {
    "plain-2threads": {"SPARSEGRAD_NUM_THREADS": "2"},
    "plain-1thread": {"SPARSEGRAD_NUM_THREADS": "1"},
    "no-avx512-2threads": {"SPARSEGRAD_NUM_THREADS": "2",
                           "NPY_DISABLE_CPU_FEATURES": " ".join(_AVX512)},
    "no-avx512-1thread": {"SPARSEGRAD_NUM_THREADS": "1",
                          "NPY_DISABLE_CPU_FEATURES": " ".join(_AVX512)},
    "numpy-baseline-only": {"SPARSEGRAD_NUM_THREADS": "2",
                            "NPY_DISABLE_CPU_FEATURES": " ".join(_ALL)},
    "baseline-kernels": {"SPARSEGRAD_NUM_THREADS": "2",
                         "SPARSEGRAD_DISABLE_AVX2": "1"},
}


def _start(setting):
    env = dict(os.environ, **SETTINGS[setting])
    for key in ("NPY_DISABLE_CPU_FEATURES", "SPARSEGRAD_DISABLE_AVX2"):
        if key not in SETTINGS[setting]:
            env.pop(key, None)
    # From outside the source tree, so that the installed package is imported.
    return subprocess.Popen(
        [sys.executable, SCRIPT, "--verbose"], env=env, cwd=os.path.expanduser("~"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _finish(setting, process):
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, f"{setting}: trajectories.py failed:\n{err}"
    lines = out.strip().splitlines()
    return lines[-1], dict(line.split(None, 1)[::-1] for line in lines[:-1])


def test_one_fingerprint_for_every_cpu_dispatch_and_thread_count():
    processes = {s: _start(s) for s in SETTINGS}      # side by side
    results = {s: _finish(s, p) for s, p in processes.items()}
    reference, parts = results["plain-2threads"]
    assert len(parts) > 700           # every trajectory reported
    for setting, (digest, setting_parts) in results.items():
        differ = sorted(k for k in parts if setting_parts.get(k) != parts[k])
        assert digest == reference and not differ, (
            f"{setting} gives other bits than plain-2threads in {len(differ)} "
            f"trajectories, e.g. {differ[:8]}"
        )
