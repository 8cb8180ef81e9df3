"""The backend object: the one place that decides where a call runs.

A public call (an op, a raw training op, an optimizer step, a clip call)
asks :func:`backend_of` once, with the arrays it was given, and gets a
:class:`Backend`: the host one (NumPy, the Cython kernels of ``_kernels``)
or the GPU one (CuPy, the CUDA kernels of ``_cuda``: the same names and
signatures).  Mixing host and GPU arrays raises there.  Everything below the
entry receives the object and uses ``be.xp``, ``be.on_gpu`` and
``be.kernels(family)``; it never looks at an array's type again.  Only this
module tells a CuPy array from others (:func:`is_cupy_array`).

CuPy is never imported at package import; it is looked at only when an argument
is a CuPy array, or when :func:`cupy_status` is asked.
"""

import contextlib
import importlib
import os

import numpy as np

from .._kernels import parallel as _parallel

_ndarray = np.ndarray


def is_cupy_array(x):
    """True for a ``cupy.ndarray`` (without importing CuPy)."""
    return type(x).__module__.split(".", 1)[0] == "cupy"


class Backend:
    """The array module and kernel sets of one device.

    There are two: :data:`CPU` (NumPy, ``sparsegrad._kernels``) and the GPU
    one (CuPy, ``sparsegrad._cuda``), made on first use.  Get one with
    :func:`backend_of`; do not build one.

    Attributes
    ----------
    name : str
        ``"cpu"`` or ``"gpu"``.
    on_gpu : bool
        True for the GPU backend.
    xp : module
        ``numpy`` or ``cupy``.

    Examples
    --------
    >>> be = backend_of(np.zeros(3), np.ones(2))
    >>> be.name, be.xp is np, be.on_gpu
    ('cpu', True, False)
    """

    __slots__ = ("name", "on_gpu", "xp", "_families", "_loaded")

    def __init__(self, name, xp, families):
        self.name = name
        self.on_gpu = name == "gpu"
        self.xp = xp
        self._families = families   # family -> loader
        self._loaded = {}

    def __repr__(self):
        return f"<sparsegrad backend {self.name!r}>"

    def kernels(self, family):
        """The kernel module of `family` on this device.

        Parameters
        ----------
        family : str
            ``"training"``, ``"training_half"`` (the float16 and bfloat16
            training kernels), ``"segment"``, ``"bags"`` (the
            segment kernels the embedding bags use: the AVX2 build on the host
            where the CPU has it), ``"slices"``, ``"clip"``, ``"ragged"``,
            ``"elementwise"`` (host only) or ``"sort"`` (GPU only).

        Returns
        -------
        module

        Raises
        ------
        KeyError
            If this device has no kernels of that family.

        Examples
        --------
        >>> CPU.kernels("slices").__name__
        'sparsegrad._kernels.slices'
        """
        try:
            return self._loaded[family]
        except KeyError:
            module = self._loaded[family] = self._families[family]()
            return module

    def host(self, array):
        """`array` as a NumPy array (a GPU array is copied to the host).

        Examples
        --------
        >>> CPU.host(np.arange(2))
        array([0, 1])
        """
        return array.get() if self.on_gpu and not isinstance(array, _ndarray) else array

    def asarray(self, value, dtype=None):
        """`value` as an array of this device (no copy where it already is one).

        Examples
        --------
        >>> CPU.asarray([1, 2], np.int32)
        array([1, 2], dtype=int32)
        """
        return self.xp.asarray(value, dtype)

    @contextlib.contextmanager
    def use_kernels(self, family, module):
        """Run `family` on kernel module `module` inside the block (for tests
        that compare the AVX2 and the baseline builds, which give the same
        bits).

        Examples
        --------
        >>> import sparsegrad._kernels.training as baseline
        >>> with CPU.use_kernels("training", baseline):
        ...     CPU.kernels("training") is baseline
        True
        """
        previous = self.kernels(family)
        self._loaded[family] = module
        try:
            yield module
        finally:
            self._loaded[family] = previous


def _kernel_module(name):
    return lambda: importlib.import_module(f"sparsegrad.{name}")


def _host_kernels(baseline, avx2_name):
    return lambda: kernels_for_cpu(
        importlib.import_module(f"sparsegrad._kernels.{baseline}"), avx2_name)


#: The host backend: NumPy and the Cython kernels.
CPU = Backend("cpu", np, {
    "training": _host_kernels("training", "training_avx2"),
    "training_half": _host_kernels("training_half", "training_half_avx2"),
    "segment": _host_kernels("segment", "segment_avx2"),
    "bags": _host_kernels("segment", "segment_avx2"),
    "slices": _kernel_module("_kernels.slices"),
    "clip": _kernel_module("_kernels.clip"),
    "ragged": _kernel_module("_kernels.ragged"),
    "elementwise": _host_kernels("elementwise", "elementwise_avx2"),
})

# The GPU backend of each cupy module seen (one in a program; the GPU tests
# put an emulator in cupy's place for some tests and the real one for others,
# and each must get its own array module).
_GPU = {}


def _gpu():
    import cupy

    be = _GPU.get(cupy)
    if be is None:
        be = _GPU[cupy] = Backend("gpu", cupy, {
            family: _kernel_module(f"_cuda.{family}")
            for family in ("training", "training_half", "segment", "slices", "clip",
                           "ragged", "sort")
        } | {"bags": _kernel_module("_cuda.segment")})
    return be


def backend_of(*arrays):
    """The :class:`Backend` of a call's arguments: the GPU one when they are
    CuPy arrays, else :data:`CPU` (``None``, scalars, lists and NumPy arrays
    are host values).

    Parameters
    ----------
    *arrays : array_like or None

    Returns
    -------
    Backend

    Raises
    ------
    ValueError
        If NumPy (or other host) and CuPy arrays are mixed: sparsegrad never
        copies between devices behind the user's back.

    Examples
    --------
    >>> backend_of(np.zeros(2), 3.0, None) is CPU
    True
    """
    gpu = host = False
    for a in arrays:
        if a is None:
            continue
        if type(a) is not _ndarray and is_cupy_array(a):
            gpu = True
        else:
            host = True
    if not gpu:
        return CPU
    if host:
        raise ValueError(
            "arguments mix numpy (host) and cupy (GPU) arrays; move them to one "
            "device first (cupy.asarray or cupy.asnumpy)"
        )
    return _gpu()


def array_backend_of(*values):
    """:func:`backend_of` of the arrays among `values` (the same
    :class:`Backend`, and the same ValueError on a host/GPU mix), where
    lists, scalars and None do not count: the caller converts them to that
    backend's arrays.

    Examples
    --------
    >>> array_backend_of(np.zeros(2), [1, 2], 3.0) is CPU
    True
    """
    return backend_of(*(v for v in values
                        if isinstance(v, _ndarray) or is_cupy_array(v)))


def get_array_module(*arrays):
    """Return ``numpy``, or ``cupy`` when the arguments are CuPy arrays
    (``backend_of(*arrays).xp``).

    Raises
    ------
    ValueError
        If NumPy and CuPy arrays are mixed.
    """
    return backend_of(*arrays).xp


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
