"""Every CUDA source compiles with nvcc, for Hopper and an older architecture.

Needs only ``nvcc`` (no GPU, no CuPy): a syntax or type error in a ``.cu``
file is caught on any machine with the CUDA toolkit.  The options are those
CuPy compiles with at run time (``sparsegrad._cuda.OPTIONS``).
"""

import glob
import os
import re
import shutil
import subprocess

import pytest

from sparsegrad import _cuda

SOURCES = sorted(glob.glob(os.path.join(_cuda.source_dir(), "*.cu")))
ARCHS = ("sm_90", "sm_75")
NVCC = shutil.which("nvcc")


def test_every_family_has_a_source():
    names = {os.path.basename(p)[:-3] for p in SOURCES}
    # one per Cython kernel module (parallel and elementwise have no twin:
    # thread control, and CuPy's own ufuncs)
    assert {"training", "slices", "clip", "segment", "ragged"} <= names


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_sources_compile(tmp_path):
    # All compiles at once: nvcc spends most of its time starting up.
    jobs = {}
    for path in SOURCES:
        for arch in ARCHS:
            out = tmp_path / f"{os.path.basename(path)}.{arch}.ptx"
            cmd = [NVCC, "--ptx", f"-arch={arch}", *_cuda.OPTIONS,
                   "-I" + _cuda.source_dir(), "-o", str(out), path]
            jobs[(path, arch)] = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    failures = []
    for (path, arch), proc in jobs.items():
        output = proc.communicate()[0]
        if proc.returncode:
            failures.append(f"{os.path.basename(path)} ({arch}):\n{output}")
    assert not failures, "\n".join(failures)
    # --fmad=false must reach the code: no fma instruction in any kernel (the
    # CPU kernels round every product and every sum on its own).  CUDA's own
    # pow and exp use FMA inside; the kernels call them through functions
    # that are never inlined, so that those FMAs stay in their own bodies.
    for path in SOURCES:
        ptx = (tmp_path / f"{os.path.basename(path)}.sm_90.ptx").read_text()
        bodies = re.split(r"^(?=(?:\.visible |\.weak )?\.(?:entry|func)\b)", ptx,
                          flags=re.M)
        fused = [b.split("(")[0].split()[-1] for b in bodies
                 if ".entry" in b.split("\n")[0] and "fma." in b]
        assert not fused, (os.path.basename(path), fused)
