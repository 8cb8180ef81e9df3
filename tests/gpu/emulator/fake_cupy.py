"""A stand-in for the ``cupy`` module that runs sparsegrad's CUDA kernels on
the CPU, for testing the GPU path on a machine without a GPU.

* :class:`ndarray` wraps a NumPy array ("device memory").  Like a real cupy
  array it refuses implicit conversion to NumPy (``np.asarray`` raises
  TypeError), does not mix with NumPy arrays in arithmetic, has no buffer
  protocol (so a Cython kernel cannot take it) and returns 0-d arrays from
  reductions.  ``.get()`` / :func:`asnumpy` copy to the host.
* Module functions (``zeros``, ``argsort``, ``cumsum``, ...) are NumPy's,
  unwrapping and wrapping arrays.  ``argsort`` is stable, as CuPy's is.
* Only CuPy's public API is there (``cupy_api.json``, dumped from CuPy 14.2
  by ``dump_cupy_api.py``): a module function, an ndarray attribute or a
  NumPy function dispatched on these arrays that CuPy lacks raises
  AttributeError / TypeError, as it would on a GPU.  ``flags`` has CuPy's
  fields only (no ``writeable``).
* :class:`RawModule` compiles the CUDA source with g++ against
  ``cuda_emu.h`` (blocks one after another, the threads of a block as fibers
  that switch at ``__syncthreads()``).  A launch checks every argument against
  the kernel's C signature: an array of the pointee's dtype, C-contiguous, for
  a pointer; a NumPy scalar of exactly the parameter's type for a scalar.
  Real CuPy checks neither, so a wrong dtype or a Python int would pass there
  and corrupt memory or read garbage.  The kernel runs on copies of its
  arguments' memory between poison bytes (:class:`_Region`): a read past an
  end gives NaN or -1, a write past an end raises.
"""

import ctypes
import functools
import glob
import hashlib
import json
import os
import re
import subprocess
import tempfile
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
__version__ = "0.0-emulated"

with open(os.path.join(HERE, "cupy_api.json")) as _f:
    API = {k: (frozenset(v) if isinstance(v, list) else v)
           for k, v in json.load(_f).items()}

_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use "
             "`.get()` to construct a NumPy array explicitly.")


class _MemoryPointer:
    def __init__(self, array):
        self.ptr = array.ctypes.data


class ndarray:
    """A "device" array: a NumPy array behind the cupy interface."""

    __slots__ = ("_a",)
    __hash__ = None

    def __init__(self, shape, dtype=float):
        self._a = np.empty(shape, dtype=dtype)

    # -- host transfers -------------------------------------------------
    def get(self):
        return self._a.copy()

    def __array__(self, *args, **kwargs):
        raise TypeError(_IMPLICIT)

    @property
    def data(self):
        return _MemoryPointer(self._a)

    @property
    def device(self):
        return _Device(0)

    # -- NumPy protocols: stay on the "device" --------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc.__name__ not in API["module"] or (
                method != "__call__" and method not in API["ufunc"]):
            return NotImplemented
        inputs = _unwrap(inputs)
        if "out" in kwargs:
            kwargs["out"] = _unwrap(kwargs["out"])
        return _wrap(getattr(ufunc, method)(*inputs, **kwargs))

    def __array_function__(self, func, types_, args, kwargs):
        if func.__name__ not in API["module"]:
            return NotImplemented      # numpy then raises TypeError
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    # -- attributes -----------------------------------------------------
    def __getattr__(self, name):
        if name.startswith("__") or name not in API["ndarray"]:
            raise AttributeError(f"'cupy.ndarray' object has no attribute '{name}'")
        attr = getattr(self._a, name)
        if callable(attr):
            @functools.wraps(attr)
            def method(*args, **kwargs):
                return _wrap(attr(*_unwrap(args), **_unwrap(kwargs)))
            return method
        return _wrap(attr)

    @property
    def shape(self):
        return self._a.shape

    @property
    def dtype(self):
        return self._a.dtype

    @property
    def ndim(self):
        return self._a.ndim

    @property
    def size(self):
        return self._a.size

    @property
    def flags(self):
        return _Flags(self._a.flags)

    @property
    def T(self):
        return ndarray._of(self._a.T)

    def item(self):
        return self._a.item()

    def tolist(self):
        return self._a.tolist()

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (_wrap(x) for x in self._a)

    def __bool__(self):
        return bool(self._a)

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __complex__(self):
        return complex(self._a)

    def __repr__(self):
        return repr(self._a)

    def __str__(self):
        return str(self._a)

    def __getitem__(self, key):
        return _wrap(self._a[_unwrap(key)])

    def __setitem__(self, key, value):
        self._a[_unwrap(key)] = _unwrap(value, allow_host=True)

    def __copy__(self):
        return ndarray._of(self._a.copy())

    def __deepcopy__(self, memo):
        return ndarray._of(self._a.copy())

    def __reduce__(self):
        return (_from_host, (self._a,))

    @staticmethod
    def _of(array):
        out = ndarray.__new__(ndarray)
        out._a = array
        return out


class _Flags:
    """CuPy's ``ndarray.flags``: contiguity and ownership, nothing else."""

    def __init__(self, flags):
        self.c_contiguous = flags.c_contiguous
        self.f_contiguous = flags.f_contiguous
        self.owndata = flags.owndata
        self.forc = self.c_contiguous or self.f_contiguous
        self.fnc = self.f_contiguous and not self.c_contiguous

    def __getitem__(self, name):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[name]


ndarray.__module__ = "cupy"
ndarray.__qualname__ = "ndarray"


def _from_host(array):
    return ndarray._of(np.array(array))


def _binary(name):
    def op(self, *args):
        return _wrap(getattr(self._a, name)(*_unwrap(args)))
    op.__name__ = name
    return op


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
              "and", "or", "xor", "lshift", "rshift", "divmod"):
    for _form in ("__%s__", "__r%s__", "__i%s__"):
        _dunder = _form % _name
        if hasattr(np.ndarray, _dunder) and _dunder != "__imatmul__":  # not CuPy's
            setattr(ndarray, _dunder, _binary(_dunder))
for _dunder in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__",
                "__neg__", "__pos__", "__abs__", "__invert__"):
    setattr(ndarray, _dunder, _binary(_dunder))


def _unwrap(x, allow_host=False):
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, np.ndarray) and not allow_host and x.ndim > 0:
        raise TypeError(
            f"Unsupported type {type(x)}: a numpy array where the emulated cupy "
            "expects device arrays (real CuPy refuses it too)")
    if isinstance(x, tuple):
        return tuple(_unwrap(v, allow_host) for v in x)
    if isinstance(x, list):
        return [_unwrap(v, allow_host) for v in x]
    if isinstance(x, dict):
        return {k: _unwrap(v, allow_host) for k, v in x.items()}
    return x


def _wrap(x):
    if isinstance(x, np.ndarray):
        return ndarray._of(x)
    if isinstance(x, np.generic):
        return ndarray._of(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


class _Namespace(types.ModuleType):
    """A module whose functions are NumPy's, on wrapped arrays."""

    def __init__(self, name, source, allowed):
        super().__init__(name)
        self._source = source
        self._allowed = allowed

    def __getattr__(self, name):
        if name.startswith("__") or name not in self._allowed:
            raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")
        attr = getattr(self._source, name)
        if isinstance(attr, types.ModuleType):
            attr = _Namespace(f"{self.__name__}.{name}", attr, API[name])
        elif isinstance(attr, (type, np.ufunc)) or not callable(attr):
            return attr
        else:
            func = attr

            @functools.wraps(func)
            def attr(*args, **kwargs):
                return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))
        setattr(self, name, attr)
        return attr


# ---------------------------------------------------------------------------
# Raw kernels


def _cache_dir():
    path = os.path.join(tempfile.gettempdir(), f"sparsegrad-cuda-emu-{os.getuid()}")
    os.makedirs(path, exist_ok=True)
    return path


_SIG = re.compile(r'extern\s+"C"\s+SG_KERNEL_MARK\s+void\s+(\w+)\s*\(([^)]*)\)')
_C_TYPES = {
    "float": np.float32, "double": np.float64, "i64": np.int64,
    "long long": np.int64, "long long int": np.int64, "int": np.int32,
    "unsigned int": np.uint32, "unsigned": np.uint32,
    "unsigned long long": np.uint64, "unsigned char": np.uint8,
    "signed char": np.int8, "char": np.int8, "bool": np.bool_, "short": np.int16,
    "unsigned short": np.uint16, "sg_u16": np.uint16,
}


def _param(text):
    """(C type text, base dtype, is pointer) of one parameter declaration."""
    text = " ".join(text.replace("*", " * ").split())
    words = text.split(" ")
    ctype = " ".join(words[:-1])                 # drop the parameter name
    is_pointer = "*" in words[:-1]
    base = " ".join(w for w in words[:-1]
                    if w not in ("const", "__restrict__", "__restrict", "*",
                                 "volatile"))
    if base not in _C_TYPES or ctype.count("*") > 1:
        raise TypeError(f"emulator: unsupported kernel parameter type {ctype!r}")
    return ctype, np.dtype(_C_TYPES[base]), is_pointer


def _compile(code, options):
    if re.search(r"#\s*include\s*<", code):
        raise RuntimeError("CUDA source includes a system header: NVRTC has none")
    flags = [o for o in options if o.startswith(("-I", "-D"))]
    parts = [code, *flags]
    # the headers the code may include (the shared kernel bodies among them)
    for folder in sorted(o[2:] for o in flags if o.startswith("-I")):
        for name in sorted(glob.glob(os.path.join(folder, "*.h"))
                           + glob.glob(os.path.join(folder, "*.cuh"))):
            with open(name) as f:
                parts.append(f.read())
    for name in ("cuda_emu.h", "cuda_emu_runtime.cpp"):
        with open(os.path.join(HERE, name)) as f:
            parts.append(f.read())
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]
    base = os.path.join(_cache_dir(), digest)
    so, sigs = base + ".so", base + ".sig"
    if not (os.path.exists(so) and os.path.exists(sigs)):
        # a file of this process's own: xdist workers compile the same
        # module side by side, and the trampolines are appended below
        src = base + f".{os.getpid()}.cpp"
        with open(src, "w") as f:
            f.write('#include "cuda_emu.h"\n' + code)
        common = ["g++", "-std=c++17", f"-I{HERE}", *flags, "-w"]
        scanned = subprocess.run(
            [*common, "-E", "-P", "-DSG_EMU_SCAN", "-D__global__=SG_KERNEL_MARK",
             src], check=True, capture_output=True, text=True).stdout
        kernels = _SIG.findall(scanned)
        tramps = []
        for name, params in kernels:
            decls = [p for p in (x.strip() for x in params.split(",")) if p]
            if decls == ["void"]:
                decls = []
            casts = ", ".join(f"*({_param(d)[0]}*)a[{i}]"
                              for i, d in enumerate(decls))
            tramps.append(f'extern "C" void sg_tramp_{name}(void** a) '
                          f"{{ {name}({casts}); }}")
        with open(src, "a") as f:
            f.write("\n" + "\n".join(tramps) + "\n")
        tmp = so + f".{os.getpid()}.tmp"
        result = subprocess.run(
            [*common, "-O1", "-fPIC", "-shared", "-ffp-contract=off",
             "-fno-fast-math", src, os.path.join(HERE, "cuda_emu_runtime.cpp"),
             "-o", tmp], capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(f"emulator: g++ failed:\n{result.stderr[-4000:]}")
        with open(sigs + f".{os.getpid()}.tmp", "w") as f:
            for name, params in kernels:
                f.write(name + "\t" + params.replace("\n", " ") + "\n")
        os.replace(sigs + f".{os.getpid()}.tmp", sigs)
        os.replace(tmp, so)
        os.remove(src)
    kernels = {}
    with open(sigs) as f:
        for line in f:
            name, params = line.rstrip("\n").split("\t")
            decls = [p for p in (x.strip() for x in params.split(",")) if p]
            kernels[name] = [_param(d) for d in decls if d != "void"]
    return ctypes.CDLL(so), kernels


class RawModule:
    """CuPy's ``RawModule(code=..., options=...)``, compiled for the CPU."""

    def __init__(self, code=None, options=(), name_expressions=None, **kwargs):
        if code is None:
            raise TypeError("emulator: RawModule needs code=")
        self.options = tuple(options)
        self._lib, self._kernels = _compile(code, self.options)
        self._lib.sg_emu_launch.restype = ctypes.c_int

    def get_function(self, name):
        if name not in self._kernels:
            raise AttributeError(f"emulator: no kernel {name!r} in the module "
                                 f"(has {sorted(self._kernels)})")
        return RawKernel._bound(self, name)


class RawKernel:
    """A kernel of a :class:`RawModule`: ``kernel(grid, block, args)``."""

    @classmethod
    def _bound(cls, module, name):
        self = cls.__new__(cls)
        self._module = module
        self.name = name
        self._params = module._kernels[name]
        self._tramp = ctypes.cast(getattr(module._lib, f"sg_tramp_{name}"),
                                  ctypes.c_void_p)
        return self

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None):
        if shared_mem:
            raise ValueError("emulator: no dynamic shared memory in sparsegrad")
        args = tuple(args)
        if len(args) != len(self._params):
            raise TypeError(f"{self.name}: {len(args)} arguments for "
                            f"{len(self._params)} parameters")
        keep, slots = [], (ctypes.c_void_p * max(1, len(args)))()
        pointers = []              # (slot, array, may write)
        for i, (arg, (ctype, dtype, is_pointer)) in enumerate(zip(args, self._params)):
            if is_pointer:
                if not isinstance(arg, ndarray):
                    raise TypeError(f"{self.name}: argument {i} ({ctype}) must be a "
                                    f"device array, got {type(arg).__name__}")
                if arg.dtype != dtype:
                    raise TypeError(f"{self.name}: argument {i} ({ctype}) has dtype "
                                    f"{arg.dtype}, the kernel reads {dtype}")
                if not arg._a.flags.c_contiguous:
                    raise ValueError(f"{self.name}: argument {i} is not C-contiguous")
                writes = "const" not in ctype.split("*")[0]
                if writes and not arg._a.flags.writeable:
                    raise ValueError(f"{self.name}: argument {i} is read-only but "
                                     f"the kernel may write it ({ctype})")
                pointers.append((i, arg._a, writes))
                continue
            if not isinstance(arg, np.generic) or arg.dtype != dtype:
                raise TypeError(
                    f"{self.name}: argument {i} ({ctype}) must be a NumPy "
                    f"{dtype} scalar, got {type(arg).__name__} {arg!r}")
            cell = np.array(arg)
            keep.append(cell)
            slots[i] = cell.ctypes.data
        regions = _guarded_regions(pointers)
        for region in regions:
            for i, address in region.slots:
                cell = ctypes.c_void_p(address)
                keep.append(cell)
                slots[i] = ctypes.addressof(cell)
        g = tuple(grid) + (1,) * (3 - len(grid))
        b = tuple(block) + (1,) * (3 - len(block))
        rc = self._module._lib.sg_emu_launch(
            self._tramp, slots, *(ctypes.c_uint(int(v)) for v in g + b))
        if rc:
            raise ValueError(f"{self.name}: bad launch shape grid={grid} block={block}")
        for region in regions:
            region.finish(self.name)


#: Bytes of poison around each argument's memory during a launch.
GUARD = 256


class _Region:
    """A padded copy of the memory of one or more (overlapping) arguments.

    The kernel runs on the copy: the guard bytes around it are 0xFF (a NaN in
    any float type, -1 in any integer type, so a read past an end poisons a
    result), and a write past an end is found afterwards.  The copy keeps the
    original's alignment modulo 256 (CuPy's allocation alignment, which the
    launchers' vector widths rely on) and the arguments' aliasing.
    """

    def __init__(self, start, stop, writes):
        self.start, self.stop, self.writes = start, stop, writes
        size = stop - start
        raw = np.full(size + 3 * GUARD, 0xFF, dtype=np.uint8)
        shift = (start - (raw.ctypes.data + GUARD)) % 256
        self.raw, self.base = raw, GUARD + shift
        ctypes.memmove(raw.ctypes.data + self.base, start, size)
        self.slots = []

    def finish(self, name):
        data = self.raw.ctypes.data + self.base
        before = self.raw[:self.base]
        after = self.raw[self.base + self.stop - self.start:]
        if (before != 0xFF).any() or (after != 0xFF).any():
            raise RuntimeError(f"emulator: kernel {name} wrote outside the memory "
                               "of its arguments")
        if self.writes:
            ctypes.memmove(self.start, data, self.stop - self.start)


def _guarded_regions(pointers):
    """Padded copies of the arguments' memory, overlapping ones merged."""
    spans = sorted((a.ctypes.data, a.ctypes.data + a.nbytes, i, w)
                   for i, a, w in pointers)
    regions, groups = [], []
    for start, stop, i, w in spans:
        if groups and start < groups[-1][1]:
            group = groups[-1]
            group[1] = max(group[1], stop)
            group[2].append((i, start))
            group[3] = group[3] or w
        else:
            groups.append([start, stop, [(i, start)], w])
    for start, stop, members, writes in groups:
        region = _Region(start, stop, writes)
        for i, address in members:
            region.slots.append((i, region.raw.ctypes.data + region.base
                                 + (address - start)))
        regions.append(region)
    return regions


# ---------------------------------------------------------------------------
# The module


def asarray(a, dtype=None, order=None):
    if isinstance(a, ndarray):
        out = a._a if dtype is None else a._a.astype(dtype, copy=False)
        return a if out is a._a else ndarray._of(out)
    return ndarray._of(np.array(a, dtype=dtype, order=order or "K", copy=True))


def array(obj, dtype=None, copy=True, order="K", ndmin=0):
    if isinstance(obj, ndarray):
        obj = obj._a
    return ndarray._of(np.array(obj, dtype=dtype, copy=True, order=order, ndmin=ndmin))


def ascontiguousarray(a, dtype=None):
    return ndarray._of(np.ascontiguousarray(_unwrap(a), dtype=dtype))


def asnumpy(a, stream=None):
    return a._a.copy() if isinstance(a, ndarray) else np.asarray(a)


def get_array_module(*args):
    return module if any(isinstance(a, ndarray) for a in args) else np


def argsort(a, axis=-1, kind=None):
    return ndarray._of(np.argsort(_unwrap(a), axis=axis, kind="stable"))


def sort(a, axis=-1, kind=None):
    return ndarray._of(np.sort(_unwrap(a), axis=axis, kind="stable"))


class _Device:
    def __init__(self, device=0):
        self.id = device

    def synchronize(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


class _Runtime:
    @staticmethod
    def getDeviceCount():
        return 1

    @staticmethod
    def getDeviceProperties(device):
        return {"name": b"sparsegrad CUDA emulator (CPU)", "totalGlobalMem": 0}


class _Stream:
    def synchronize(self):
        pass


def _make_module():
    mod = _Namespace("cupy", np, API["module"])
    mod.__file__ = __file__
    mod.__version__ = __version__
    mod.EMULATED = True
    for name, value in dict(
        ndarray=ndarray, RawModule=RawModule, RawKernel=RawKernel, asarray=asarray,
        array=array, ascontiguousarray=ascontiguousarray, asnumpy=asnumpy,
        get_array_module=get_array_module, argsort=argsort, sort=sort,
    ).items():
        setattr(mod, name, value)
    cuda = types.SimpleNamespace(
        runtime=_Runtime(), Device=_Device,
        get_current_stream=lambda: _Stream(), Stream=_Stream)
    mod.cuda = cuda
    return mod


module = _make_module()


class _DeviceCSR:
    """``cupyx.scipy.sparse.csr_matrix`` over "device" arrays: the product
    with a dense device array is SciPy's (cuSPARSE on a GPU)."""

    format = "csr"

    def __init__(self, arg, shape=None, dtype=None, copy=False):
        import scipy.sparse

        data, indices, indptr = arg
        for name, a in (("data", data), ("indices", indices), ("indptr", indptr)):
            if not isinstance(a, ndarray):
                raise TypeError(f"emulator: csr_matrix {name} must be a device array")
        if indices.dtype != np.int32 or indptr.dtype != np.int32:
            raise TypeError("emulator: cupyx's csr_matrix takes int32 indices")
        if data.dtype not in (np.float32, np.float64):
            raise TypeError("emulator: cuSPARSE products take float32 or float64")
        self._m = scipy.sparse.csr_array((data._a, indices._a, indptr._a),
                                         shape=shape)
        self.shape = self._m.shape
        self.dtype = self._m.dtype
        self.nnz = self._m.nnz

    def __matmul__(self, other):
        if not isinstance(other, ndarray):
            raise TypeError("emulator: csr_matrix @ needs a device array")
        if other.dtype != self.dtype:
            raise TypeError("emulator: csr_matrix @ dense of another dtype")
        return ndarray._of(np.ascontiguousarray(self._m @ other._a))


def _make_cupyx():
    cupyx = types.ModuleType("cupyx")
    scipy_ = types.ModuleType("cupyx.scipy")
    sparse = types.ModuleType("cupyx.scipy.sparse")
    sparse.csr_matrix = _DeviceCSR
    scipy_.sparse = sparse
    cupyx.scipy = scipy_
    return {"cupyx": cupyx, "cupyx.scipy": scipy_, "cupyx.scipy.sparse": sparse}


#: The ``cupyx`` modules that go with :data:`module`.
cupyx_modules = _make_cupyx()
