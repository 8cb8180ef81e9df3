"""The CUDA kernels, compiled at run time by CuPy.

Each ``<family>.cu`` here holds the raw kernels of one Cython module of
``sparsegrad._kernels`` and ``<family>.py`` their launchers, with the same
function names and the same Python-side signatures (``n_threads`` is accepted
and ignored: a GPU launch takes its own shape).  The arithmetic of both is
written once, in ``sparsegrad/_kernels/include/sg_<family>.h``, which the
``.cu`` includes and the Cython module declares ``cdef extern``: a ``.cu``
file holds only the GPU's drivers (threads, blocks, grouping, loads).  The
framework routes by array type (:mod:`sparsegrad.framework.backend`): a cupy
array runs these, a numpy array the Cython ones.

Rules every kernel follows
--------------------------
* Every kernel is ``extern "C" __global__``; one per value type, named with a
  ``_f32`` / ``_f64`` suffix (``#define``-d from one body in the ``.cu``;
  ``_f16`` / ``_bf16`` for the half training kernels, whose arrays and
  scalars are their bits, ``unsigned short``: a kernel's parameters are C
  types).  The launchers pass every scalar argument as a NumPy scalar of the
  exact C type (``np.int64`` for ``long long``, ``np.float32`` for
  ``float``, ``np.uint16`` for ``unsigned short``, ...).
* Arithmetic rounds as on the CPU: modules compile with ``--fmad=false`` (no
  contraction into FMA), IEEE division and square root, denormals kept
  (``--ftz=false``; :func:`function` compiles with NVRTC itself, since
  CuPy's ``RawModule`` appends ``-ftz=true`` to every option list), and the expressions
  are the shared header's, which the CPU compiles too.  Add, multiply,
  divide and ``sqrt`` then give the CPU's bits; ``exp``, ``log`` and ``pow``
  (CUDA's libdevice against glibc) may differ in the last bits.
* No warp intrinsics and no dynamic shared memory: blocks cooperate through
  fixed-size ``__shared__`` arrays and ``__syncthreads()`` only (what
  ``tests/gpu`` can emulate on a CPU).
* A kernel never checks: the Python layer validates every index before a
  kernel writes, exactly as for the Cython kernels.
* Results never depend on the launch shape or on scheduling: no float
  ``atomicAdd``; a reduction uses a fixed partition and a fixed-order sum.

CuPy is imported on first use only, never at package import.
"""

import glob
import hashlib
import os
import tempfile
import threading

__all__ = ["BLOCK", "OPTIONS", "source_dir", "include_dir", "compile_options",
           "families", "headers", "source", "function", "launch", "blocks_for", "cupy",
           "clear_cache"]

#: Threads per block of every launch (kernels size their shared arrays by it).
BLOCK = 256
#: The most blocks a grid-stride launch asks for.
MAX_BLOCKS = 65535
#: NVRTC options of every module (see the module docstring).
OPTIONS = ("--std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true",
           "--prec-sqrt=true", "-DSPARSEGRAD_BLOCK=256")

_modules = {}
_lock = threading.Lock()


def cupy():
    """The ``cupy`` module (imported on first use)."""
    import cupy as cp

    return cp


def source_dir():
    """The folder that holds the ``.cu`` drivers and ``common.cuh``."""
    return os.path.dirname(os.path.abspath(__file__))


def include_dir():
    """The folder of the kernel bodies shared with the Cython kernels
    (``sparsegrad/_kernels/include``: ``sg_<family>.h``)."""
    return os.path.join(os.path.dirname(source_dir()), "_kernels", "include")


def compile_options():
    """Every NVRTC option of a module: :data:`OPTIONS` and the include path
    (this folder's ``common.cuh``, the shared ``sg_*.h``)."""
    return OPTIONS + ("-I" + source_dir(), "-I" + include_dir())


def headers():
    """The text of every header a module may include (this folder's ``.cuh``
    files and the shared ``sg_*.h``), in a fixed order."""
    names = sorted(glob.glob(os.path.join(source_dir(), "*.cuh"))
                   + glob.glob(os.path.join(include_dir(), "*.h")))
    texts = []
    for name in names:
        with open(name, encoding="utf-8") as f:
            texts.append(f.read())
    return texts


def families():
    """The names of the CUDA modules (``<family>.cu``), sorted."""
    return sorted(name[:-3] for name in os.listdir(source_dir())
                  if name.endswith(".cu"))


def source(family):
    """The CUDA source text of module `family`: ``<family>.cu``, followed by
    what the launcher module ``sparsegrad._cuda.<family>`` generates from
    the kernels' table where it has one (its ``generated_source()``: the
    training ops' kernels, from ``sparsegrad._kernels.training_table``)."""
    import importlib

    with open(os.path.join(source_dir(), family + ".cu"), encoding="utf-8") as f:
        text = f.read()
    generate = getattr(importlib.import_module(f"{__name__}.{family}"),
                       "generated_source", None)
    return text if generate is None else text + generate()


def clear_cache():
    """Forget the compiled modules (tests swap the ``cupy`` module)."""
    with _lock:
        _modules.clear()


def _cache_path(digest):
    """Where the binary of `digest` is kept: CuPy's kernel cache folder."""
    folder = os.environ.get("CUPY_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cupy", "kernel_cache")
    return os.path.join(folder, f"sparsegrad-{digest}.cubin")


def _read_cached(path):
    """The cached binary at `path`, or None where it is missing or torn (its
    first 32 bytes are the SHA-256 of the rest)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    body = data[32:]
    intact = len(data) > 32 and hashlib.sha256(body).digest() == data[:32]
    return body if intact else None


def _write_cached(path, binary):
    """Keep `binary` at `path` (written aside, then renamed: readers never see
    half a file); a folder that cannot be written only loses the cache."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(binary).digest() + binary)
        os.replace(tmp, path)
    except OSError:
        pass


def _nvrtc_module(cp, family):
    """Module `family` compiled by NVRTC with exactly :func:`compile_options`
    for this GPU's architecture (the newest NVRTC knows, up to the GPU's) and
    loaded; the binary is cached on disk by source, headers, options and
    NVRTC version."""
    from cupy_backends.cuda.libs import nvrtc

    cc = int(cp.cuda.Device().compute_capability)
    archs = getattr(nvrtc, "getSupportedArchs", lambda: (cc,))()
    arch = max((a for a in archs if a <= cc), default=cc)
    code = source(family)
    options = compile_options() + (f"--gpu-architecture=sm_{arch}",)
    key = "\0".join((code, *headers(), *options, repr(nvrtc.getVersion())))
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    path = _cache_path(digest)
    binary = _read_cached(path)
    if binary is None:
        program = nvrtc.createProgram(code, f"{family}.cu", (), ())
        try:
            try:
                nvrtc.compileProgram(program, options)
            except nvrtc.NVRTCError as exc:
                raise RuntimeError(f"NVRTC could not compile {family}.cu:\n"
                                   f"{nvrtc.getProgramLog(program)}") from exc
            binary = nvrtc.getCUBIN(program)
        finally:
            nvrtc.destroyProgram(program)
        _write_cached(path, binary)
    module = cp.cuda.function.Module()
    module.load(binary)
    return module


def function(family, name):
    """The raw kernel `name` of ``<family>.cu``, compiled once per process
    (and cached on disk).

    CuPy's ``RawModule`` would append ``-ftz=true`` after our options, which
    flushes float32 denormals to zero in every operation: the host keeps them,
    so a real CuPy compiles through NVRTC here.  A stand-in ``cupy`` without
    ``cuda.function`` (the test suite's emulator) gets ``RawModule``.
    """
    cp = cupy()
    key = (id(cp), family)
    module = _modules.get(key)
    if module is None:
        with _lock:
            module = _modules.get(key)
            if module is None:
                if hasattr(cp.cuda, "function"):
                    module = _nvrtc_module(cp, family)
                else:
                    module = cp.RawModule(code=source(family),
                                          options=compile_options())
                _modules[key] = module
    return module.get_function(name)


def blocks_for(n, per_block=BLOCK):
    """Blocks of a grid-stride launch over `n` items, `per_block` a block."""
    return max(1, min(MAX_BLOCKS, -(-int(n) // per_block)))


def launch(family, name, n_blocks, args):
    """Launch kernel `name` of ``<family>.cu`` on `n_blocks` blocks of
    :data:`BLOCK` threads with `args` (arrays and exact-typed NumPy scalars)
    on the current stream."""
    function(family, name)((int(n_blocks),), (BLOCK,), tuple(args))


def suffix(dtype):
    """The kernel-name suffix of value type `dtype`: ``f32`` or ``f64``."""
    return {"float32": "f32", "float64": "f64"}[str(dtype)]
