"""Tensor: an immutable n-dimensional array, and conversion to it."""

import itertools
import operator

import numpy as np

from ..errors import InvalidArgumentError
from . import buffers
from .backend import backend_of
from .buffers import check_allocation, copy_of
from .dtypes import check_numeric

__all__ = ["Tensor", "convert_to_tensor", "constant", "install_operators", "wrap"]

_next_id = itertools.count(1).__next__
_ndarray = np.ndarray

#: The op functions behind the Tensor and Variable operators (a namespace with
#: ``add``, ``multiply``, ..., ``read_variable``); :mod:`sparsegrad.ops`
#: installs it with :func:`install_operators` when the package is imported.
operators = None
#: The same functions by name, as the operator methods call them.
_installed = {}


def install_operators(namespace):
    """Install the namespace of op functions behind the operators.

    Parameters
    ----------
    namespace : object
        Has the attributes ``add``, ``subtract``, ``multiply``, ``divide``,
        ``matmul``, ``pow``, ``negative``, ``abs``, the comparisons,
        ``strided_slice`` and ``read_variable``.
    """
    global operators
    operators = namespace
    _installed.clear()
    _installed.update((name, getattr(namespace, name)) for name in dir(namespace)
                      if not name.startswith("_"))


def _freeze(array):
    """Mark a NumPy array read-only (CuPy arrays have no such flag)."""
    if isinstance(array, np.ndarray):
        array.flags.writeable = False
    return array


def _forward(op_name, defer=True):
    """An operator method calling ``operators.<op_name>(self, other)``;
    with `defer`, it returns NotImplemented for a :data:`DEFERRING_TYPES`
    operand (whose reflected operator then runs)."""
    if defer:
        def method(self, other):
            if type(other) in DEFERRING_TYPES:
                return NotImplemented
            return _installed[op_name](self, other)
    else:
        def method(self, other):
            return _installed[op_name](self, other)
    return method


def _reflected(op_name):
    """A reflected operator method: ``operators.<op_name>(other, self)``."""
    def method(self, other):
        return _installed[op_name](other, self)
    return method


def _unary(op_name):
    def method(self):
        return _installed[op_name](self)
    return method


class ArrayValue:
    """What a :class:`Tensor` and a
    :class:`~sparsegrad.framework.variable.Variable` share: the properties of
    the array they hold (``_value``, a NumPy or a CuPy array) and the
    operators, which call the op functions :mod:`sparsegrad.ops` installs
    (:func:`install_operators`; the ops are a layer above this one).

    ``==`` and ``!=`` keep identity semantics so both stay hashable; use
    ``sparsegrad.equal`` / ``sparsegrad.not_equal`` for elementwise comparison.
    """

    __slots__ = ()

    # ndarray (op) value defers to the value's reflected operators.
    __array_priority__ = 100

    @property
    def shape(self):
        """The shape, a tuple of ints."""
        return tuple(self._value.shape)

    dtype = property(operator.attrgetter("_value.dtype"),
                     doc="The NumPy dtype of the elements.")
    ndim = property(operator.attrgetter("_value.ndim"), doc="Number of dimensions.")

    @property
    def size(self):
        """Number of elements."""
        return int(self._value.size)

    @property
    def device(self):
        """``"cpu"`` for a NumPy-backed value, ``"gpu:N"`` for a CuPy one."""
        value = self._value
        if type(value) is not _ndarray and backend_of(value).on_gpu:
            return f"gpu:{value.device.id}"
        return "cpu"

    def numpy(self):
        """Return the value as a new, writeable NumPy array (a copy).

        A GPU value is copied to the host.
        """
        value = self._value
        if type(value) is not _ndarray and backend_of(value).on_gpu:
            return value.get()
        return np.array(value, copy=True)

    def _host_value(self):
        """The NumPy value, for ``__array__``: as CuPy itself, a GPU value is
        never copied to the host implicitly."""
        value = self._value
        if type(value) is not _ndarray and backend_of(value).on_gpu:
            name = type(self).__name__
            raise TypeError(
                f"a GPU {name} cannot be converted to a NumPy array implicitly; "
                "use .numpy() to copy it to the host"
            )
        return value

    def __len__(self):
        if self._value.ndim == 0:
            raise TypeError(f"len() of a 0-d {type(self).__name__}")
        return self._value.shape[0]

    def __float__(self):
        return float(self._value)

    def __int__(self):
        return int(self._value)

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError(f"iteration over a 0-d {type(self).__name__}")
        for i in range(self._value.shape[0]):
            yield operators.strided_slice(self, i)

    __add__, __radd__ = _forward("add"), _reflected("add")
    __sub__, __rsub__ = _forward("subtract"), _reflected("subtract")
    __mul__, __rmul__ = _forward("multiply"), _reflected("multiply")
    __truediv__, __rtruediv__ = _forward("divide"), _reflected("divide")
    __pow__, __rpow__ = _forward("pow"), _reflected("pow")
    __matmul__ = _forward("matmul", defer=False)
    __rmatmul__ = _reflected("matmul")
    __neg__, __abs__ = _unary("negative"), _unary("abs")
    __lt__, __le__ = _forward("less"), _forward("less_equal")
    __gt__, __ge__ = _forward("greater"), _forward("greater_equal")

    def __getitem__(self, key):
        return operators.strided_slice(self, key)

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


class Tensor(ArrayValue):
    """An immutable n-dimensional array.

    A Tensor wraps a NumPy array (or a CuPy array on the GPU) that nobody writes
    to: the array is a private copy, or the result of an op, and is marked
    read-only.  Ops take and return Tensors; ``np.asarray(t)`` gives the array
    back without a copy (a GPU Tensor refuses, as CuPy does: use
    :meth:`numpy`).  Ops on GPU Tensors return GPU Tensors.

    Use :func:`convert_to_tensor` (or :func:`constant`) to make one.

    Parameters
    ----------
    value : array_like
        Anything :func:`numpy.asarray` accepts, or a Tensor.
    dtype : str or numpy.dtype, optional
        Cast to this dtype.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> t = sg.convert_to_tensor([[1.0, 2.0], [3.0, 4.0]], dtype="float32")
    >>> t.shape, t.dtype
    ((2, 2), dtype('float32'))
    >>> t.numpy()
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    """

    __slots__ = ("_value", "_id", "__weakref__")

    def __init__(self, value, dtype=None):
        array = _to_array(value, dtype, "value")
        self._value = _freeze(array)
        self._id = _next_id()

    def __array__(self, dtype=None, copy=None):
        value = self._host_value()
        if copy:
            return np.array(value, dtype=dtype, copy=True)
        if dtype is not None and np.dtype(dtype) != value.dtype:
            if copy is False:
                raise ValueError(
                    f"converting a {value.dtype} Tensor to {np.dtype(dtype)} "
                    "needs a copy"
                )
            return value.astype(dtype)
        return value

    def __bool__(self):
        if self._value.size != 1:
            raise ValueError(
                f"the truth value of a Tensor with {self._value.size} elements is "
                "ambiguous; use sparsegrad ops or np.any / np.all"
            )
        return bool(self._value)

    def __index__(self):
        if self._value.dtype.kind not in "iu" or self._value.ndim != 0:
            raise TypeError(
                f"only 0-d integer Tensors can be used as an index, got a "
                f"{self._value.dtype} Tensor of shape {self.shape}"
            )
        return int(self._value)

    def __repr__(self):
        value = np.asarray(self.numpy())
        body = str(value[()]) if value.ndim == 0 else np.array2string(
            value, separator=", "
        )
        return (
            f"<sparsegrad.Tensor: shape={self.shape}, dtype={self.dtype.name}, "
            f"numpy=\n{body}>"
            if "\n" in body
            else f"<sparsegrad.Tensor: shape={self.shape}, dtype={self.dtype.name}, "
            f"numpy={body}>"
        )

    def __str__(self):
        return str(self.numpy())


#: Types whose reflected operators (``__radd__``, ...) handle a Tensor on the
#: left: a Tensor's own operators return NotImplemented for them (the
#: RaggedTensor registers itself here).
DEFERRING_TYPES = set()


def wrap(array):
    """A Tensor owning `array`, a fresh result nobody else holds (no copy).

    The one way to turn an array an op computed into a Tensor: the array is
    marked read-only and becomes the Tensor's value.  A NumPy scalar or an
    array_like becomes an ndarray first; a CuPy array is kept as it is.

    Parameters
    ----------
    array : ndarray, NumPy scalar or CuPy array
        Nobody may write it afterwards.

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.framework.tensor import wrap
    >>> t = wrap(np.arange(3.0))
    >>> np.asarray(t).flags.writeable
    False
    """
    if type(array) is not _ndarray:
        if isinstance(array, np.generic) or not backend_of(array).on_gpu:
            array = np.asarray(array)
        t = _new_tensor(Tensor)
        t._value = _freeze(array)
        t._id = _next_id()
        return t
    array.setflags(write=False)
    t = _new_tensor(Tensor)
    t._value = array
    t._id = _next_id()
    return t


_new_tensor = Tensor.__new__
# The older spelling of wrap(), kept for the callers that use it.
Tensor._wrap = staticmethod(wrap)


def _pooled_copy(value, dtype):
    """Whether the copy of `value` goes to recycled memory: a large
    C-contiguous ndarray of numbers (converting an upstream gradient or a
    batch each step then maps no fresh pages)."""
    if not isinstance(value, np.ndarray) or not value.flags.c_contiguous:
        return False
    dtype = value.dtype if dtype is None else np.dtype(dtype)
    return (dtype.kind in "biufc" and value.dtype.kind in "biufc"
            and value.size * dtype.itemsize >= buffers.MIN_POOLED_BYTES)


def _to_array(value, dtype, name):
    """A private array holding `value` (copied unless it is already frozen)."""
    if dtype is not None:
        dtype = np.dtype(dtype)
    if isinstance(value, Tensor):
        array = value._value
        if dtype is not None and array.dtype != dtype:
            array = array.astype(dtype)
        return array
    _reject_unconvertible(value, name)
    if isinstance(value, np.ndarray):
        # a broadcast or strided view: its copy may be far larger than the
        # memory the view holds
        check_allocation(copy_of(
            value, f"{name or 'value'} (a contiguous copy of a view)", dtype))
    if type(value) is not _ndarray and (be := backend_of(value)).on_gpu:
        array = be.xp.array(value, dtype=dtype, copy=True)
    elif _pooled_copy(value, dtype):
        array = buffers.copy(value, dtype)
    else:
        try:
            array = np.array(value, dtype=dtype, copy=True)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{name}: cannot convert {type(value).__name__} to a Tensor: {exc}"
            ) from None
    check_numeric(array.dtype, name)
    return array


def _reject_unconvertible(value, name):
    if value is None:
        raise TypeError(f"{name}: cannot convert None to a Tensor")
    if _is_scipy_sparse(value):
        raise TypeError(
            f"{name}: got a scipy.sparse {type(value).__name__}; densifying it "
            "silently could exhaust memory. Use sparsegrad.sparse ops, "
            "IndexedSlices.from_scipy, or call .toarray() yourself"
        )


def _is_scipy_sparse(value):
    module = type(value).__module__
    if not module.startswith("scipy.sparse"):
        return False
    import scipy.sparse

    return scipy.sparse.issparse(value)


def convert_to_tensor(value, dtype=None, name=None):
    """Convert `value` to a :class:`Tensor`.

    Parameters
    ----------
    value : Tensor, Variable, IndexedSlices, array_like or scalar
        A Tensor is returned as is; a Variable gives its current value; an
        IndexedSlices gives its dense form (duplicates summed, cost
        O(dense size)); arrays, scalars and nested lists are copied.
    dtype : str or numpy.dtype, optional
        The dtype of the result.  Python scalars and lists are converted to it;
        an existing Tensor, Variable or IndexedSlices must already have it.
    name : str, optional
        Names the argument in error messages.

    Returns
    -------
    Tensor

    Raises
    ------
    InvalidArgumentError
        If a Tensor, Variable or IndexedSlices has a dtype other than `dtype`,
        or the value is complex.
    TypeError
        If the value cannot be converted (None, strings, objects, a
        ``scipy.sparse`` matrix).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.convert_to_tensor(3.0)
    <sparsegrad.Tensor: shape=(), dtype=float64, numpy=3.0>
    >>> sg.convert_to_tensor([1, 2], dtype="float32").dtype
    dtype('float32')
    """
    label = name or "value"
    if isinstance(value, Tensor):
        _check_dtype_match(value.dtype, dtype, label)
        return value
    if hasattr(value, "_as_tensor"):  # Variable, IndexedSlices
        tensor = value._as_tensor()
        _check_dtype_match(tensor.dtype, dtype, label)
        return tensor
    if _is_frozen(value) and (dtype is None or np.dtype(dtype) == value.dtype):
        check_numeric(value.dtype, label)
        return wrap(value)  # nobody can write it: no copy needed
    return wrap(_to_array(value, dtype, label))


def _is_frozen(value):
    """True for a NumPy array that no array it views can write to."""
    if not isinstance(value, np.ndarray):
        return False
    while isinstance(value, np.ndarray):
        if value.flags.writeable:
            return False
        value = value.base
    return value is None


def _check_dtype_match(actual, wanted, name):
    if wanted is not None and np.dtype(wanted) != actual:
        raise InvalidArgumentError(
            f"{name}: conversion to dtype {np.dtype(wanted)} requested for a value "
            f"of dtype {actual}; cast it explicitly"
        )


def constant(value, dtype=None):
    """Create a Tensor from a scalar, nested list or array (always a copy).

    Parameters
    ----------
    value : array_like
        A number, a nested list, a NumPy array or a Tensor.
    dtype : dtype, optional
        The Tensor's dtype; by default the value's own (NumPy's rules).

    Returns
    -------
    Tensor
        An immutable copy of `value`.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsegrad as sg
    >>> source = np.array([1.0, 2.0])
    >>> t = sg.constant(source, dtype="float32")
    >>> source[0] = 9.0      # the Tensor holds its own copy
    >>> t.numpy()
    array([1., 2.], dtype=float32)
    """
    return Tensor(value, dtype=dtype)
