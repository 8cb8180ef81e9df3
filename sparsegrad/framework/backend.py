"""Backend dispatch: NumPy arrays go to the Cython kernels of ``_kernels``,
CuPy arrays to their CUDA twins in ``_cuda`` (same names and signatures);
each call site picks by :func:`is_cupy_array`, and :func:`get_array_module`
gives the array module of a call's arguments.

CuPy is never imported at package import; it is looked at only when an argument
is a CuPy array, or when :func:`cupy_status` is asked.
"""

import importlib
import os

import numpy as np

from .._kernels import parallel as _parallel


def is_cupy_array(x):
    """True for a ``cupy.ndarray`` (without importing CuPy)."""
    return type(x).__module__.split(".", 1)[0] == "cupy"


def get_array_module(*arrays):
    """Return ``numpy``, or ``cupy`` when the arguments are CuPy arrays.

    Raises
    ------
    ValueError
        If NumPy and CuPy arrays are mixed: sparsegrad never copies between
        devices behind the user's back.
    """
    kinds = {is_cupy_array(a) for a in arrays if a is not None}
    if kinds == {True, False}:
        raise ValueError(
            "arguments mix numpy (host) and cupy (GPU) arrays; move them to one "
            "device first (cupy.asarray or cupy.asnumpy)"
        )
    if kinds == {True}:
        import cupy

        return cupy
    return np


def cupy_status():
    """``(usable, description)`` of the CuPy installation and its GPU."""
    try:
        import cupy
    except ImportError:
        return False, ("CuPy not installed (pip install 'sparsegrad[gpu-cuda12]' "
                       "or 'sparsegrad[gpu-cuda13]')")
    except Exception as exc:  # a broken install raises many things
        return False, f"CuPy failed to import: {exc}"
    try:
        n_devices = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"CuPy {cupy.__version__} installed, no usable GPU: {exc}"
    if n_devices == 0:
        return False, f"CuPy {cupy.__version__} installed, no GPU found"
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return True, f"CuPy {cupy.__version__}, {n_devices} GPU(s), device 0: {name}"


def kernels_for_cpu(baseline, avx2_name, same_source=None):
    """The AVX2 build of a kernel module where the CPU has AVX2, else `baseline`.

    Both builds compile one source without FMA, so they give the same bits;
    the AVX2 one has twice the vector width.  ``SPARSEGRAD_DISABLE_AVX2=1``
    forces the baseline (tests compare the two).

    Parameters
    ----------
    baseline : module
        The baseline build, e.g. ``sparsegrad._kernels.training``.
    avx2_name : str
        The AVX2 build's module name under ``sparsegrad._kernels``.
    same_source : callable, optional
        ``same_source(avx2_module)`` is False for a stale AVX2 build (it is
        then not used).
    """
    if os.environ.get("SPARSEGRAD_DISABLE_AVX2", "").strip() not in ("", "0"):
        return baseline
    if not _parallel.cpu_has_avx2():
        return baseline
    try:
        avx2 = importlib.import_module(f"sparsegrad._kernels.{avx2_name}")
    except ImportError:
        return baseline
    if same_source is not None and not same_source(avx2):
        return baseline
    return avx2
