"""The ``device`` fixture of the GPU tests: each test runs once per backend.

* ``cupy``: the real CuPy on a real GPU; skipped where either is missing.
* ``emulated``: ``emulator/fake_cupy.py`` stands in for ``cupy`` (arrays on
  the host behind the cupy interface; the ``.cu`` kernels compiled with g++
  against ``emulator/cuda_emu.h``); skipped where g++ is missing.  It runs the
  CUDA kernels and the whole routing on machines without a GPU.

While a test runs on a backend, ``sys.modules["cupy"]`` is that backend's
module, so ``sparsegrad`` (which imports CuPy lazily) sees it.
"""

import importlib.util
import os
import shutil
import sys

import numpy as np
import pytest

from sparsegrad import _cuda
from sparsegrad.autodiff.recording import Operation
from sparsegrad.autodiff.registry import get_gradient_function

_HERE = os.path.dirname(os.path.abspath(__file__))


_CUPYX = ("cupyx", "cupyx.scipy", "cupyx.scipy.sparse")


def _load_fake():
    """The emulator's ``cupy`` module and its ``cupyx`` modules by name."""
    name = "sparsegrad_tests_fake_cupy"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(_HERE, "emulator", "fake_cupy.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name].module, sys.modules[name].cupyx_modules


# The real CuPy and its cupyx modules, imported once and kept: a package
# imported a second time (after a test put the emulator in its place) gets a
# new module object without the attributes its already-loaded submodules set
# on the first one (``cupy._util``), and real CuPy then fails inside itself.
_REAL = {}


def _real_cupy():
    """The real ``cupy`` and ``cupyx`` modules by name when CuPy and a GPU are
    usable, else None and a skip reason."""
    if _REAL:
        return _REAL, None
    saved = {name: sys.modules.pop(name, None) for name in ("cupy", *_CUPYX)}
    try:
        import cupy
        import cupyx
        import cupyx.scipy.sparse
    except Exception as exc:  # ImportError, or a broken CUDA install
        _restore(saved)
        return None, f"CuPy not importable: {exc}"
    try:
        n_devices = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        n_devices, reason = 0, f"no usable GPU: {exc}"
    else:
        reason = "no GPU"
    if n_devices < 1:
        _restore(saved)
        return None, reason
    _restore(saved)
    _REAL.update({"cupy": cupy, "cupyx": cupyx, "cupyx.scipy": cupyx.scipy,
                  "cupyx.scipy.sparse": cupyx.scipy.sparse})
    return _REAL, None


def _restore(saved):
    for name, module in saved.items():
        if module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module


class Device:
    """One backend: its ``xp`` module and host <-> device copies."""

    def __init__(self, name, xp):
        self.name = name
        self.xp = xp

    def asarray(self, array):
        """A device copy of host array `array`."""
        return self.xp.asarray(np.asarray(array))

    def asnumpy(self, array):
        """A host copy of device array `array`."""
        return self.xp.asnumpy(array)

    def __repr__(self):
        return f"Device({self.name})"


@pytest.fixture(params=["cupy", "emulated"])
def device(request):
    names = ("cupy", *_CUPYX)
    saved = {name: sys.modules.get(name) for name in names}
    if request.param == "cupy":
        modules, reason = _real_cupy()
        if modules is None:
            pytest.skip(reason)
        xp = modules["cupy"]
    else:
        if shutil.which("g++") is None:
            pytest.skip("g++ not found: the CUDA emulator needs it")
        xp, cupyx = _load_fake()
        modules = {"cupy": xp, **cupyx}
    sys.modules.update(modules)
    _cuda.clear_cache()
    try:
        yield Device(request.param, xp)
    finally:
        _cuda.clear_cache()
        _restore(saved)


@pytest.fixture
def recorded_gradient(monkeypatch):
    """``recorded_gradient(module, f, args, upstream)``: run ``f(*args)``,
    then the registered gradient of the last op it recorded in `module` with
    `upstream` (a Tensor); the gradient w.r.t. that op's first input.  It
    calls an op's gradient function alone, with an upstream of the test's
    choosing (an IndexedSlices, say), on host and device arguments alike."""

    def run(module, f, args, upstream):
        ops = []

        def record(op_type, inputs, outputs, attrs=None, grad_fn=None):
            ops.append(Operation(op_type, inputs, outputs, attrs))

        with monkeypatch.context() as m:
            m.setattr(module, "record_operation", record)
            f(*args)
        op = ops[-1]
        return get_gradient_function(op.type)(op, upstream)[0]

    return run
