"""Variable: a mutable buffer with a version counter."""

import itertools

import numpy as np

from ..errors import InvalidArgumentError
from . import backend, sparse_rows
from . import tensor as _tensor_module
from .buffers import aligned_empty
from .dtypes import check_numeric
from .indexed_slices import IndexedSlices
from .tensor import DEFERRING_TYPES, Tensor, wrap

__all__ = ["Variable"]

_next_uid = itertools.count(1).__next__


class Variable:
    """A mutable array that training updates in place.

    Reading a Variable (:meth:`value`, or passing it to an op) gives a Tensor
    that views the buffer without copying.  Every in-place change bumps
    :attr:`version`; a recorded read remembers the version it saw, which is how
    the tape detects a gradient that would use a stale value.

    Parameters
    ----------
    initial_value : array_like or callable
        The initial contents (copied), or a function of no arguments that
        returns them.  A cupy array (or a GPU Tensor) makes a GPU variable:
        its buffer, reads and updates stay on the device.
    trainable : bool, default=True
        Whether tapes watch the variable automatically when it is read.
    name : str, optional
        Shown in messages; defaults to ``"Variable:<n>"``.
    dtype : str or numpy.dtype, optional
        Convert the initial value to this dtype.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> v = sg.Variable([[1.0, 2.0], [3.0, 4.0]], dtype="float32")
    >>> v.assign_add([[1.0, 1.0], [1.0, 1.0]]).numpy()
    array([[2., 3.],
           [4., 5.]], dtype=float32)
    >>> v.scatter_add(sg.IndexedSlices([[10.0, 10.0]], [1])).numpy()
    array([[ 2.,  3.],
           [14., 15.]], dtype=float32)
    >>> v.version
    2
    """

    __slots__ = ("_value", "_trainable", "_name", "_version", "_uid", "__weakref__")

    __array_priority__ = 100

    def __init__(self, initial_value, trainable=True, name=None, dtype=None):
        if callable(initial_value):
            initial_value = initial_value()
        if isinstance(initial_value, (Variable, Tensor)):
            initial_value = initial_value._value
        if initial_value is None:
            raise TypeError("initial_value must be an array_like, got None")
        if backend.is_cupy_array(initial_value):
            # a GPU variable: a private device copy
            check_numeric(initial_value.dtype, "initial_value")
            value = initial_value.astype(
                initial_value.dtype if dtype is None else np.dtype(dtype),
                copy=True)
            check_numeric(value.dtype, "initial_value")
            self._init(value, trainable, name)
            return
        try:
            source = np.asarray(initial_value)
            # a cache-line aligned copy: scattered row reads touch no extra line
            value = aligned_empty(source.shape, source.dtype if dtype is None
                                  else np.dtype(dtype))
            np.copyto(value, source, casting="unsafe")
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"initial_value: cannot convert {type(initial_value).__name__} to an "
                f"array: {exc}"
            ) from None
        check_numeric(value.dtype, "initial_value")
        self._init(value, trainable, name)

    def _init(self, value, trainable, name):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {name!r}")
        self._value = value
        self._trainable = bool(trainable)
        self._uid = _next_uid()
        self._name = name if name is not None else f"Variable:{self._uid}"
        self._version = 0

    # -- properties ------------------------------------------------------------

    @property
    def shape(self):
        """The shape, a tuple of ints."""
        return tuple(self._value.shape)

    @property
    def dtype(self):
        """The NumPy dtype."""
        return self._value.dtype

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def size(self):
        return int(self._value.size)

    @property
    def name(self):
        return self._name

    @property
    def trainable(self):
        return self._trainable

    @property
    def version(self):
        """How many in-place changes the variable has had."""
        return self._version

    # -- reading ---------------------------------------------------------------

    def value(self):
        """The current value as a Tensor that views the buffer (no copy).

        The view is read-only; a later in-place update of the variable shows
        through it, and bumps :attr:`version`.  While a GradientTape records,
        the read is recorded (the tape watches a trainable variable it reads).
        """
        hook = _tensor_module.operators
        if hook is not None:
            return hook.read_variable(self)
        view = self._value.view()
        return wrap(view)

    read_value = value

    def _as_tensor(self):
        return self.value()

    @property
    def device(self):
        """``"cpu"`` for a NumPy-backed Variable, ``"gpu:N"`` for a CuPy one."""
        if backend.is_cupy_array(self._value):
            return f"gpu:{self._value.device.id}"
        return "cpu"

    def numpy(self):
        """A copy of the current value as a writeable NumPy array (a GPU
        variable is copied to the host)."""
        if backend.is_cupy_array(self._value):
            return self._value.get()
        return self._value.copy()

    def __array__(self, dtype=None, copy=None):
        if backend.is_cupy_array(self._value):
            raise TypeError(
                "a GPU Variable cannot be converted to a NumPy array implicitly; "
                "use .numpy() to copy it to the host"
            )
        if copy is False:
            if dtype is not None and np.dtype(dtype) != self.dtype:
                raise ValueError("converting the variable's dtype needs a copy")
            view = self._value.view()
            view.flags.writeable = False
            return view
        return np.array(self._value, dtype=dtype, copy=True)

    # -- operators (reading the variable; see Tensor) ---------------------------

    def __add__(self, other):
        if type(other) in DEFERRING_TYPES:
            return NotImplemented
        return _tensor_module.operators.add(self, other)

    def __radd__(self, other):
        return _tensor_module.operators.add(other, self)

    def __sub__(self, other):
        if type(other) in DEFERRING_TYPES:
            return NotImplemented
        return _tensor_module.operators.subtract(self, other)

    def __rsub__(self, other):
        return _tensor_module.operators.subtract(other, self)

    def __mul__(self, other):
        if type(other) in DEFERRING_TYPES:
            return NotImplemented
        return _tensor_module.operators.multiply(self, other)

    def __rmul__(self, other):
        return _tensor_module.operators.multiply(other, self)

    def __truediv__(self, other):
        if type(other) in DEFERRING_TYPES:
            return NotImplemented
        return _tensor_module.operators.divide(self, other)

    def __rtruediv__(self, other):
        return _tensor_module.operators.divide(other, self)

    def __matmul__(self, other):
        return _tensor_module.operators.matmul(self, other)

    def __rmatmul__(self, other):
        return _tensor_module.operators.matmul(other, self)

    def __pow__(self, other):
        if type(other) in DEFERRING_TYPES:
            return NotImplemented
        return _tensor_module.operators.pow(self, other)

    def __rpow__(self, other):
        return _tensor_module.operators.pow(other, self)

    def __neg__(self):
        return _tensor_module.operators.negative(self)

    def __abs__(self):
        return _tensor_module.operators.abs(self)

    def __getitem__(self, key):
        return _tensor_module.operators.strided_slice(self, key)

    def __lt__(self, other):
        return _tensor_module.operators.less(self, other)

    def __le__(self, other):
        return _tensor_module.operators.less_equal(self, other)

    def __gt__(self, other):
        return _tensor_module.operators.greater(self, other)

    def __ge__(self, other):
        return _tensor_module.operators.greater_equal(self, other)

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__

    def __len__(self):
        if self._value.ndim == 0:
            raise TypeError("len() of a 0-d Variable")
        return self._value.shape[0]

    def __float__(self):
        return float(self._value)

    def __int__(self):
        return int(self._value)

    def __repr__(self):
        body = np.array2string(self.numpy(), separator=", ")
        return (
            f"<sparsegrad.Variable '{self._name}' shape={self.shape} "
            f"dtype={self.dtype.name}, numpy={body}>"
        )

    # -- in-place updates ------------------------------------------------------

    def _dense_operand(self, value, what):
        """`value` cast to the variable's dtype and broadcastable to its shape."""
        if isinstance(value, IndexedSlices):
            raise TypeError(
                f"{what}: got IndexedSlices; use scatter_add / scatter_update for "
                "sparse updates"
            )
        array = self._same_device(value)
        check_numeric(array.dtype, what)
        if not np.can_cast(array.dtype, self.dtype, casting="same_kind"):
            raise InvalidArgumentError(
                f"{what}: a value of dtype {array.dtype} cannot be cast to the "
                f"dtype {self.dtype} of variable '{self._name}'"
            )
        try:
            shape = np.broadcast_shapes(array.shape, self.shape)
        except ValueError:
            shape = None
        if shape != self.shape:
            raise InvalidArgumentError(
                f"{what}: cannot update variable '{self._name}' of shape "
                f"{self.shape} with a value of shape {tuple(array.shape)}; the "
                "shapes must be equal (or the value broadcastable to the variable)"
            )
        return array

    def _same_device(self, value):
        """`value` as an array on the variable's device.  A host value (number,
        list, ndarray, host Tensor) is copied to a GPU variable's device; a
        cupy value for a host variable raises ValueError (nothing leaves the
        GPU implicitly)."""
        if isinstance(value, (Variable, Tensor)):
            value = value._value
        if not backend.is_cupy_array(self._value):
            if backend.is_cupy_array(value):
                backend.get_array_module(self._value, value)   # raises
            return np.asarray(value)
        if not backend.is_cupy_array(value):
            import cupy

            value = cupy.asarray(np.asarray(value))
        return value

    def _bump(self):
        self._version += 1
        return self

    def assign(self, value):
        """Set the value in place; `value` must broadcast to the shape.

        Returns
        -------
        Variable
            ``self``.

        Raises
        ------
        InvalidArgumentError
            If the shape or dtype does not fit; the variable is unchanged.
        """
        array = self._dense_operand(value, "assign")
        backend.get_array_module(self._value).copyto(self._value, array,
                                                     casting="unsafe")
        return self._bump()

    def assign_add(self, delta):
        """Add `delta` in place (broadcast to the shape). Returns ``self``."""
        array = self._dense_operand(delta, "assign_add")
        xp = backend.get_array_module(self._value)
        xp.add(self._value, array, out=self._value, casting="unsafe")
        return self._bump()

    def assign_sub(self, delta):
        """Subtract `delta` in place (broadcast to the shape). Returns ``self``."""
        array = self._dense_operand(delta, "assign_sub")
        xp = backend.get_array_module(self._value)
        xp.subtract(self._value, array, out=self._value, casting="unsafe")
        return self._bump()

    def _sparse_operand(self, sparse_delta, what):
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(
                f"{what}: sparse_delta must be IndexedSlices, got "
                f"{type(sparse_delta).__name__}"
            )
        if self._value.ndim == 0:
            raise InvalidArgumentError(
                f"{what}: variable '{self._name}' is a scalar; it has no rows"
            )
        shape = sparse_delta.dense_shape
        if shape is not None and shape != self.shape:
            raise InvalidArgumentError(
                f"{what}: sparse_delta has dense_shape {shape}, variable "
                f"'{self._name}' has shape {self.shape}"
            )
        values = sparse_delta.values
        if isinstance(values, Tensor):
            values = values._value
        else:
            values = np.asarray(values)
        return sparse_delta.indices._value, values

    def scatter_add(self, sparse_delta):
        """Add the rows of `sparse_delta` in place; repeated indices accumulate.

        Parameters
        ----------
        sparse_delta : IndexedSlices
            Rows of shape ``shape[1:]``, indices in ``[0, shape[0])``.

        Returns
        -------
        Variable
            ``self``.

        Raises
        ------
        InvalidArgumentError
            If an index is out of range or the rows do not fit; the variable is
            unchanged.
        """
        indices, values = self._sparse_operand(sparse_delta, "scatter_add")
        sparse_rows.scatter_add(self._value, indices, values)
        return self._bump()

    def scatter_sub(self, sparse_delta):
        """Subtract the rows of `sparse_delta` in place. Returns ``self``."""
        indices, values = self._sparse_operand(sparse_delta, "scatter_sub")
        sparse_rows.scatter_add(self._value, indices, -values)
        return self._bump()

    def scatter_update(self, sparse_delta):
        """Overwrite the rows of `sparse_delta` in place; for a repeated index the
        last row wins. Returns ``self``."""
        indices, values = self._sparse_operand(sparse_delta, "scatter_update")
        sparse_rows.scatter_update(self._value, indices, values)
        return self._bump()
