"""Variable: a mutable buffer with a version counter."""

import itertools
import operator

import numpy as np

from ..errors import InvalidArgumentError
from . import sparse_rows
from . import tensor as _tensor_module
from .backend import CPU, backend_of
from .buffers import aligned_empty
from .dtypes import can_cast_same_kind, check_numeric
from .indexed_slices import IndexedSlices
from .tensor import ArrayValue, Tensor, wrap

__all__ = ["Variable"]

_next_uid = itertools.count(1).__next__


class Variable(ArrayValue):
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

    def __init__(self, initial_value, trainable=True, name=None, dtype=None):
        if callable(initial_value):
            initial_value = initial_value()
        if isinstance(initial_value, (Variable, Tensor)):
            initial_value = initial_value._value
        if initial_value is None:
            raise TypeError("initial_value must be an array_like, got None")
        if (type(initial_value) is not np.ndarray
                and backend_of(initial_value).on_gpu):
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

    name = property(operator.attrgetter("_name"), doc="The name, a str.")
    trainable = property(operator.attrgetter("_trainable"),
                         doc="Whether tapes watch the variable automatically.")
    version = property(operator.attrgetter("_version"),
                       doc="How many in-place changes the variable has had.")

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

    def __array__(self, dtype=None, copy=None):
        value = self._host_value()
        if copy is False:
            if dtype is not None and np.dtype(dtype) != value.dtype:
                raise ValueError("converting the variable's dtype needs a copy")
            view = value.view()
            view.flags.writeable = False
            return view
        return np.array(value, dtype=dtype, copy=True)

    def __repr__(self):
        body = np.array2string(self.numpy(), separator=", ")
        return (
            f"<sparsegrad.Variable '{self._name}' shape={self.shape} "
            f"dtype={self.dtype.name}, numpy={body}>"
        )

    # -- in-place updates ------------------------------------------------------

    def _dense_update(self, value, what, update):
        """Check `value` as the operand of ``update(xp, buffer, array)``
        (the variable's dtype, broadcastable to its shape, on its device), run
        that in place, and bump the version.  Nothing changes when a check
        fails."""
        if isinstance(value, IndexedSlices):
            raise TypeError(
                f"{what}: got IndexedSlices; use scatter_add / scatter_update for "
                "sparse updates"
            )
        be = backend_of(self._value)
        array = self._same_device(value, be)
        check_numeric(array.dtype, what)
        if not can_cast_same_kind(array.dtype, self.dtype):
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
        update(be.xp, self._value, array)
        return self._bump()

    def _same_device(self, value, be):
        """`value` as an array on the variable's device (backend `be`).  A host
        value (number, list, ndarray, host Tensor) is copied to a GPU
        variable's device; a cupy value for a host variable raises ValueError
        (nothing leaves the GPU implicitly)."""
        if isinstance(value, (Variable, Tensor)):
            value = value._value
        if type(value) is np.ndarray or not backend_of(value).on_gpu:
            return be.asarray(np.asarray(value))
        if be is CPU:
            backend_of(self._value, value)   # raises: a host/GPU mix
        return value

    def _bump(self):
        self._version += 1
        return self

    def assign(self, value):
        """Set the value in place; `value` must broadcast to the shape.
        Returns ``self``.  Raises InvalidArgumentError, the variable
        unchanged, if the shape or dtype does not fit (as do
        :meth:`assign_add` and :meth:`assign_sub`)."""
        return self._dense_update(value, "assign", _copy_into)

    def assign_add(self, delta):
        """Add `delta` in place (broadcast to the shape). Returns ``self``."""
        return self._dense_update(delta, "assign_add", _add_into)

    def assign_sub(self, delta):
        """Subtract `delta` in place (broadcast to the shape). Returns ``self``."""
        return self._dense_update(delta, "assign_sub", _subtract_into)

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


def _copy_into(xp, buffer, array):
    xp.copyto(buffer, array, casting="unsafe")


def _add_into(xp, buffer, array):
    xp.add(buffer, array, out=buffer, casting="unsafe")


def _subtract_into(xp, buffer, array):
    xp.subtract(buffer, array, out=buffer, casting="unsafe")
