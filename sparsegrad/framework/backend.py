"""Backend dispatch: NumPy arrays go to ``_kernels``, CuPy arrays to ``_cuda``.

CuPy is never imported at package import; it is looked at only when an argument
is a CuPy array, or when :func:`cupy_status` is asked.
"""

import numpy as np


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
        return False, "CuPy not installed (pip install 'sparsegrad[gpu]')"
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
