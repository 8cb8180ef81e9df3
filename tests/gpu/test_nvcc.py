"""Every CUDA source compiles with nvcc (to cubins: ptxas checks the resource
limits) for Hopper and an older architecture, and with NVRTC where found.

Needs only ``nvcc`` (no GPU, no CuPy): a syntax or type error in a ``.cu``
file is caught on any machine with the CUDA toolkit.  The options are those
CuPy compiles with at run time (``sparsegrad._cuda.OPTIONS``).
"""

import functools
import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from sparsegrad import _cuda

FAMILIES = _cuda.families()
ARCHS = ("sm_90", "sm_75")
NVCC = shutil.which("nvcc")


def test_every_family_has_a_source():
    # one per Cython kernel module (parallel and elementwise have no twin:
    # thread control, and CuPy's own ufuncs)
    assert {"training", "slices", "clip", "segment", "ragged"} <= set(FAMILIES)


def _cache_dir():
    path = os.path.join(tempfile.gettempdir(), f"sparsegrad-nvcc-{os.getuid()}")
    os.makedirs(path, exist_ok=True)
    return path


@functools.cache
def _nvcc_version():
    return subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout


def _key(text, arch):
    """A digest of everything a compile depends on."""
    parts = [_nvcc_version(), arch, *_cuda.compile_options(), text, *_cuda.headers()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def _source_files(cache):
    """family -> a file holding its full source (``_cuda.source``: the
    ``.cu`` file and what its launcher generates), named by content."""
    paths = {}
    for family in FAMILIES:
        text = _cuda.source(family)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        path = os.path.join(cache, f"{family}.{digest}.cu")
        if not os.path.exists(path):
            with open(path + f".{os.getpid()}.tmp", "w") as f:
                f.write(text)
            os.replace(path + f".{os.getpid()}.tmp", path)
        paths[family] = (path, text)
    return paths


def _run_all(commands):
    """Run the commands ``label -> (argv, output path)`` at once (nvcc spends
    much of its time starting up), each writing a temporary file that becomes
    its output only on success; the failures' messages."""
    jobs = {}
    for label, (argv, out) in commands.items():
        tmp = f"{out}.{os.getpid()}.tmp"
        jobs[label] = (subprocess.Popen([*argv, "-o", tmp], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True), tmp, out)
    failures = []
    for label, (proc, tmp, out) in jobs.items():
        output = proc.communicate()[0]
        if proc.returncode:
            failures.append(f"{label}:\n{output}")
        else:
            os.replace(tmp, out)
    return failures


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_sources_compile():
    # PTX for every architecture, then ptxas on Hopper's: ptxas enforces what
    # PTX alone does not (48 KiB of static shared memory a block, registers),
    # which would otherwise fail only when CuPy loads the module on a GPU.
    # Results are cached by content (a second run, e.g. CI's, is instant).
    cache = _cache_dir()
    sources = _source_files(cache)
    ptx = {}
    commands = {}
    for name, (path, text) in sources.items():
        for arch in ARCHS:
            out = os.path.join(cache, f"{name}.{_key(text, arch)}.{arch}.ptx")
            ptx[(name, arch)] = out
            if not os.path.exists(out):
                commands[f"{name} ({arch})"] = (
                    [NVCC, "--ptx", f"-arch={arch}", *_cuda.compile_options(),
                     path], out)
    failures = _run_all(commands)
    assert not failures, "\n".join(failures)
    commands = {}
    for name in sources:
        out = ptx[(name, "sm_90")][:-len(".ptx")] + ".cubin"
        if not os.path.exists(out):
            commands[f"{name} (ptxas sm_90)"] = (
                [NVCC, "--cubin", "-arch=sm_90", ptx[(name, "sm_90")]], out)
    failures = _run_all(commands)
    assert not failures, "\n".join(failures)
    # --fmad=false must reach the code: no fma instruction in any kernel (the
    # CPU kernels round every product and every sum on its own).  CUDA's own
    # pow and exp use FMA inside; the kernels call them through functions
    # that are never inlined, so that those FMAs stay in their own bodies.
    for name in sources:
        with open(ptx[(name, "sm_90")]) as f:
            text = f.read()
        bodies = re.split(r"^(?=(?:\.visible |\.weak )?\.(?:entry|func)\b)", text,
                          flags=re.M)
        fused = [b.split("(")[0].split()[-1] for b in bodies
                 if ".entry" in b.split("\n")[0] and "fma." in b]
        assert not fused, (name, fused)


def _find_nvrtc():
    """A loadable libnvrtc: the system's, or the one of the PyPI package
    ``nvidia-cuda-nvrtc`` (CuPy's wheels use either); None if there is none."""
    import ctypes.util
    import site
    import sysconfig

    candidates = [ctypes.util.find_library("nvrtc")]
    roots = [sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    for root in roots:
        candidates += sorted(glob.glob(os.path.join(root, "nvidia", "*", "lib",
                                                    "libnvrtc.so*")))
    for candidate in candidates:
        if candidate and "builtins" not in candidate:
            try:
                return ctypes.CDLL(candidate)
            except OSError:
                continue
    return None


def test_sources_compile_with_nvrtc():
    # What CuPy's RawModule does at run time: NVRTC, with no system headers
    # (a macro such as INFINITY, which nvcc's headers define, fails here).
    # Runs where libnvrtc is found, e.g. after `pip install nvidia-cuda-nvrtc`.
    import ctypes

    lib = _find_nvrtc()
    if lib is None:
        pytest.skip("libnvrtc not found (pip install nvidia-cuda-nvrtc)")
    from concurrent.futures import ThreadPoolExecutor

    def compile_one(name, arch="compute_90"):   # test_sources_compile's arch
        # one program per call: NVRTC compiles programs side by side (ctypes
        # releases the GIL), which halves the test's time on two cores
        prog = ctypes.c_void_p()
        code = _cuda.source(name).encode()
        assert lib.nvrtcCreateProgram(ctypes.byref(prog), code,
                                      f"{name}.cu".encode(), 0, None, None) == 0
        options = [*_cuda.compile_options(), f"--gpu-architecture={arch}"]
        argv = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        rc = lib.nvrtcCompileProgram(prog, len(options), argv)
        failure = None
        if rc:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            failure = f"{name}.cu ({arch}):\n{log.value.decode(errors='replace')}"
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        return failure

    # the largest sources first, so that no long compile starts last
    names = sorted(FAMILIES, key=lambda name: -len(_cuda.source(name)))
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        failures = [f for f in pool.map(compile_one, names) if f]
    assert not failures, "\n".join(failures)


def test_binary_cache_round_trip_and_torn_files(tmp_path, monkeypatch):
    # _cuda keeps NVRTC's binaries behind their SHA-256; a torn or altered
    # file reads as missing (compiled again), never as a module
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "cache"))
    path = _cuda._cache_path("abc")
    assert path.startswith(str(tmp_path / "cache"))
    assert _cuda._read_cached(path) is None
    _cuda._write_cached(path, b"\x7fELF binary")
    assert _cuda._read_cached(path) == b"\x7fELF binary"
    with open(path, "r+b") as f:
        f.seek(40)
        f.write(b"X")
    assert _cuda._read_cached(path) is None
    with open(path, "wb") as f:
        f.write(b"short")
    assert _cuda._read_cached(path) is None
    assert not [p for p in os.listdir(tmp_path / "cache") if p.endswith(".tmp")]
