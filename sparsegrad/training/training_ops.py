"""Raw training ops: TensorFlow's ``Apply*`` / ``SparseApply*`` kernels, in place.

Each op validates its arguments in TensorFlow's order and with TensorFlow's
message texts (``reference/training_ops.md`` section 2.4), and only then calls
one kernel of ``sparsegrad._kernels.training``; a failed call leaves `var` and
every slot bit-for-bit unchanged.  The arithmetic lives in the kernels.

`var` and the slots are updated in place.  Each is a writeable C-contiguous
NumPy array of dtype float32 or float64, or a :class:`~sparsegrad.Variable`
(whose buffer is updated and whose version is bumped); all of them share one
dtype.  Nothing is ever copied silently: a read-only or non-contiguous array
is an error.  Hyper-parameters are Python numbers or 0-d arrays, rounded to the
dtype of `var`.  `grad` may be any array_like; an array or Tensor must have the
dtype of `var`, other inputs (lists, numbers) are converted to it.

Sparse ops (``sparse_apply_*``) update the rows ``indices`` of `var` (viewed as
``(var.shape[0], -1)``) and of the slots with the rows of `grad`.  A row that
occurs several times gets the full update once per occurrence, in order, as
TensorFlow's kernels do; distinct rows are processed in parallel, and the result
is the same for any thread count.  With ``coalesce_duplicates=True`` the rows of
each index are summed first (in their original order) and the update is applied
once per distinct index, which is what Keras' optimizers do.
"""

import math
import threading
import weakref

import numpy as np

from .._kernels import training as _baseline_kernels
from ..errors import InvalidArgumentError
from ..framework.backend import kernels_for_cpu
from ..framework.dtypes import FLOAT_DTYPES, INDEX_DTYPES
from ..framework.sparse_rows import deduplicate, first_out_of_range
from ..framework.threads import get_num_threads
from ..framework.variable import Variable

__all__ = [
    "apply_gradient_descent",
    "apply_proximal_gradient_descent",
    "apply_adadelta",
    "apply_adagrad",
    "apply_adagrad_v2",
    "apply_proximal_adagrad",
    "apply_adagrad_da",
    "apply_ftrl",
    "apply_ftrl_v2",
    "apply_momentum",
    "apply_keras_momentum",
    "apply_adam",
    "apply_adam_with_amsgrad",
    "apply_ada_max",
    "apply_rms_prop",
    "apply_centered_rms_prop",
    "apply_add_sign",
    "apply_power_sign",
    "apply_rowwise_adagrad",
    "sparse_apply_gradient_descent",
    "sparse_apply_proximal_gradient_descent",
    "sparse_apply_adadelta",
    "sparse_apply_adagrad",
    "sparse_apply_adagrad_v2",
    "sparse_apply_proximal_adagrad",
    "sparse_apply_adagrad_da",
    "sparse_apply_ftrl",
    "sparse_apply_ftrl_v2",
    "sparse_apply_momentum",
    "sparse_apply_keras_momentum",
    "sparse_apply_adam",
    "sparse_apply_ada_max",
    "sparse_apply_rms_prop",
    "sparse_apply_centered_rms_prop",
    "sparse_apply_rowwise_adagrad",
]


#: The kernel module in use (``sparsegrad._kernels.training`` or
#: ``training_avx2``); tests swap it to check that both give the same bits.
_k = kernels_for_cpu(_baseline_kernels, "training_avx2")


# ---------------------------------------------------------------------------
# Locks for use_locking=True: one per underlying buffer, held weakly.

# id(root array) -> Lock; an entry goes when its array is collected (ndarrays
# are not hashable, so a WeakKeyDictionary cannot hold them).
_LOCKS = {}
_LOCKS_GUARD = threading.Lock()


def _root(array):
    """The ndarray that owns the memory `array` views."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _lock_of(array):
    root = _root(array)
    key = id(root)
    with _LOCKS_GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = threading.Lock()
            weakref.finalize(root, _forget_lock, key)
        return lock


def _forget_lock(key):
    with _LOCKS_GUARD:
        _LOCKS.pop(key, None)


class _Held:
    """Hold the locks of several arrays, each once, in a fixed order."""

    def __init__(self, arrays):
        locks = {id(lock): lock for lock in map(_lock_of, arrays)}
        self._locks = [locks[key] for key in sorted(locks)]

    def __enter__(self):
        for lock in self._locks:
            lock.acquire()

    def __exit__(self, *exc):
        for lock in reversed(self._locks):
            lock.release()


class _NoLock:
    def __enter__(self):
        pass

    def __exit__(self, *exc):
        pass


# ---------------------------------------------------------------------------
# Validation helpers.  Each raises InvalidArgumentError with TF's text.


def _shape_str(shape):
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


class _Op:
    """Arguments of one call: the state arrays, in TensorFlow's order, checked.

    ``_Op(var, ("accum", accum), ...)`` resolves each to a writeable
    C-contiguous float array (the buffer of a Variable), checks that they share
    `var`'s dtype, and keeps the Variables so that their versions are bumped
    after the update.
    """

    def __init__(self, var, *slots):
        self.variables = []
        self.var = self._state(var, "var")
        self.dtype = self.var.dtype
        self.slots = {}
        for name, value in slots:
            array = self._state(value, name)
            if array.dtype != self.dtype:
                raise InvalidArgumentError(
                    f"{name} dtype {array.dtype} does not match var dtype "
                    f"{self.dtype}; every slot must have var's dtype"
                )
            self.slots[name] = array
        named = [("var", self.var)] + list(self.slots.items())
        for k, (name, array) in enumerate(named[1:], 1):
            self._check_disjoint(array, name, named[:k])

    @staticmethod
    def _check_disjoint(array, name, others):
        """Raise if `array` may share memory with one of the named `others`.

        The kernels write var and the slots while they read the others
        (grad, indices) on several threads: overlapping buffers would make
        the result depend on the thread count, and indices that change while
        the kernel runs could send it outside var.  var and the slots are
        C-contiguous, so overlapping bounds are overlapping elements.
        """
        for other_name, other in others:
            if np.may_share_memory(array, other):
                raise InvalidArgumentError(
                    f"{name} shares memory with {other_name}; training ops update "
                    "var and the slots in place, so every argument must be a "
                    f"separate array (pass a copy of {name})"
                )

    def _check_not_state(self, array, name):
        self._check_disjoint(
            array, name, [("var", self.var)] + list(self.slots.items())
        )

    def _state(self, value, name):
        if isinstance(value, Variable):
            self.variables.append(value)
            array = value._value
        elif isinstance(value, np.ndarray):
            array = value
        else:
            raise InvalidArgumentError(
                f"{name} must be a numpy array or a Variable to update in place, "
                f"got {type(value).__name__}"
            )
        if array.dtype not in FLOAT_DTYPES:
            raise InvalidArgumentError(
                f"{name} has dtype {array.dtype}; training ops update float32 or "
                "float64 arrays"
            )
        if not array.flags.writeable:
            raise InvalidArgumentError(
                f"{name} is read-only; training ops update it in place, so pass a "
                "writeable array"
            )
        if not array.flags.c_contiguous:
            raise InvalidArgumentError(
                f"{name} is not C-contiguous; training ops update it in place and "
                "never copy it, so pass np.ascontiguousarray(...) of it and keep "
                "that array"
            )
        return array

    # -- scalars ----------------------------------------------------------
    def _scalar_array(self, value, name):
        array = np.asarray(value)
        if array.dtype.kind not in "biuf":
            got = repr(value) if array.dtype.kind == "O" else f"dtype {array.dtype}"
            raise InvalidArgumentError(f"{name} must be a real number, got {got}")
        return array

    def scalar(self, value, name, label=None, sep=": "):
        """`value` rounded to the dtype of var, as a Python float."""
        if type(value) is float:                # the common case, made cheap
            return float(self.dtype.type(value))
        array = self._scalar_array(value, name)
        if array.ndim != 0:
            raise InvalidArgumentError(
                f"{label or name} is not a scalar{sep}{_shape_str(array.shape)}"
            )
        return float(array.astype(self.dtype))

    def checked_scalar(self, value, name, label, test, what):
        """A scalar that must pass `test`; TF prints the shape, not the value."""
        array = self._scalar_array(value, name)
        result = float(array.astype(self.dtype)) if array.ndim == 0 else None
        if result is None or not test(result):
            shown = f" (got {result!r})" if result is not None else ""
            raise InvalidArgumentError(
                f"{label} is not {what}: {_shape_str(array.shape)}{shown}"
            )
        return result

    def global_step(self, value):
        array = np.asarray(value)
        if array.ndim != 0:
            raise InvalidArgumentError(
                f"global_step is not a scalar: {_shape_str(array.shape)}"
            )
        if array.dtype.kind not in "iu":
            raise InvalidArgumentError(
                f"global_step must be an integer (int64), got dtype {array.dtype}"
            )
        return float(int(array))

    # -- shapes -----------------------------------------------------------
    def same_shape(self, name, shown=None, array=None):
        """var and slot `name` must have identical shapes."""
        other = self.slots[name] if array is None else array
        if other.shape != self.var.shape:
            raise InvalidArgumentError(
                f"var and {shown or name} do not have the same shape"
                f"{_shape_str(self.var.shape)} {_shape_str(other.shape)}"
            )

    def grad(self, grad, name="grad"):
        """`grad` as a C-contiguous array of var's dtype."""
        typed = isinstance(grad, np.ndarray) or hasattr(grad, "dtype")
        array = np.asarray(grad)
        if array.dtype.kind not in "biuf":
            raise InvalidArgumentError(f"{name} must be real, got dtype {array.dtype}")
        if array.dtype != self.dtype:
            if typed and array.dtype.kind == "f":
                raise InvalidArgumentError(
                    f"{name} dtype {array.dtype} does not match var dtype {self.dtype}"
                )
            array = array.astype(self.dtype)
        # np.asarray, not np.ascontiguousarray: the latter makes a 0-d array 1-D.
        array = np.asarray(array, order="C")
        self._check_not_state(array, name)
        return array

    def var_rank(self):
        if self.var.ndim < 1:
            raise InvalidArgumentError(
                "var must be at least 1 dimensional: var has shape "
                f"{_shape_str(self.var.shape)}"
            )

    def indices(self, indices):
        array = np.asarray(indices)
        if array.ndim != 1:
            raise InvalidArgumentError(
                "indices must be one-dimensional: indices has shape "
                f"{_shape_str(array.shape)}"
            )
        if array.dtype not in INDEX_DTYPES:
            if array.dtype.kind == "f" and array.size == 0:
                array = array.astype(np.int64)  # np.asarray([]) is float64
            elif array.dtype.kind in "iu" and array.dtype != np.bool_:
                if (
                    array.size
                    and array.dtype == np.uint64
                    and array.max() > (np.iinfo(np.int64).max)
                ):
                    raise InvalidArgumentError(
                        f"indices holds {array.max()}, which does not fit in int64"
                    )
                array = array.astype(np.int64)
            else:
                raise InvalidArgumentError(
                    f"indices must be int32 or int64, got dtype {array.dtype}"
                )
        array = np.ascontiguousarray(array)
        self._check_not_state(array, "indices")
        # The kernels take int64 indices only: widen int32 ones once, here.
        return array.astype(np.int64, copy=False)

    def sparse_grad(self, grad, indices):
        """TF's sparse-kernel shape checks (2.6 B), rank check included."""
        var = self.var
        if grad.ndim != var.ndim:
            raise InvalidArgumentError(
                "grad must have the same number of dimensions as var: grad has "
                f"shape {_shape_str(grad.shape)} and var {_shape_str(var.shape)}"
            )
        for d in range(1, var.ndim):
            if grad.shape[d] != var.shape[d]:
                raise InvalidArgumentError(
                    f"var and grad must match in dimension {d}: var has shape "
                    f"{_shape_str(var.shape)} and grad {_shape_str(grad.shape)}"
                )
        if grad.shape[0] != indices.shape[0]:
            raise InvalidArgumentError(
                "grad must be the same size as indices in the first dimension.: "
                f"grad has {grad.shape[0]} rows and indices {indices.shape[0]} "
                "entries"
            )

    def inner_positive(self):
        if _inner_dim(self.var) == 0:
            raise InvalidArgumentError(
                "Inner dimension should be greater than zero.: var has shape "
                f"{_shape_str(self.var.shape)}"
            )

    def in_range(self, indices, keras=False):
        n_rows = self.var.shape[0]
        bad = first_out_of_range(indices, n_rows)
        if bad is None:
            return
        if keras:
            raise InvalidArgumentError(
                f"indices[{bad}] = {indices[bad]} is not in [0, {n_rows})"
            )
        raise InvalidArgumentError(
            f"Index {indices[bad]} at offset {bad} in indices is out of range: "
            f"var has {n_rows} rows"
        )

    # -- dispatch ---------------------------------------------------------
    def _state_arrays(self):
        return [self.var] + list(self.slots.values())

    def _lock(self, use_locking):
        return _Held(self._state_arrays()) if use_locking else _NoLock()

    def _bump(self):
        for variable in self.variables:
            variable._bump()

    def run_dense(self, kernel, grad, hp, use_locking):
        if self.var.size:
            flat = [a.reshape(-1) for a in self._state_arrays()]
            flat += [flat[0]] * (4 - len(flat))
            with self._lock(use_locking):
                kernel(*flat, grad.reshape(-1), _hp(hp), get_num_threads())
        self._bump()

    def run_sparse(self, kernel, grad, indices, hp, use_locking, coalesce):
        width = _inner_dim(self.var)
        if indices.size and width:
            rows = [a.reshape(a.shape[0], -1) for a in self._state_arrays()]
            rows += [rows[0]] * (4 - len(rows))
            _sparse_kernel(
                kernel,
                rows,
                grad.reshape(indices.shape[0], -1),
                indices,
                hp,
                coalesce,
                self._lock(use_locking),
            )
        self._bump()


def _sparse_kernel(kernel, rows, grad, indices, hp, coalesce, lock):
    """Run ``sparse_<op>`` (each thread scans the indices for its own rows), or
    ``sparse_<op>_by_row``, which groups the occurrences by row first: to
    coalesce, and for narrow rows on several threads, where the scans would
    cost as much as the updates."""
    n_threads = get_num_threads()
    n, width = grad.shape
    if n >= _BY_ROW_MAX_N:
        # Beyond the by-row kernels' int32 links: sum the duplicates first
        # (in order, from zero: the same bits), then one update per row.
        if coalesce:
            indices, grad = deduplicate(indices, grad, rows[0].shape[0] - 1)
        with lock:
            kernel(*rows, grad, indices, _hp(hp), n_threads)
    elif coalesce or (n_threads > 1 and width < _NARROW_ROW):
        by_row = getattr(_k, kernel.__name__ + "_by_row")
        scratch = _scratch(_k.by_row_scratch_size(n, width, n_threads))
        with lock:
            by_row(*rows, grad, indices, _hp(hp), bool(coalesce), n_threads, scratch)
    else:
        with lock:
            kernel(*rows, grad, indices, _hp(hp), n_threads)


# The by-row kernels link occurrences with int32 offsets.
_BY_ROW_MAX_N = _baseline_kernels.BY_ROW_MAX_N
_scratch_cache = threading.local()


def _scratch(words):
    """An int32 work area of at least `words` entries for the by-row kernels,
    kept per Python thread (the kernels release the GIL) and grown on demand:
    fresh large buffers would cost page faults on every call."""
    buffer = getattr(_scratch_cache, "buffer", None)
    if buffer is None or buffer.shape[0] < words:
        buffer = np.empty(max(words, 1024), dtype=np.int32)
        _scratch_cache.buffer = buffer
    return buffer


# Rows narrower than this take the by-row sparse kernel on several threads.
_NARROW_ROW = 16


def _inner_dim(var):
    return math.prod(var.shape[1:]) if var.ndim >= 1 else 1


def _hp(values):
    return np.array([float(v) for v in values], dtype=np.float64)


def _positive(x):
    return x > 0


def _non_negative(x):
    return x >= 0


def _non_positive(x):
    return x <= 0


# ---------------------------------------------------------------------------
# Gradient descent.


def apply_gradient_descent(var, alpha, delta, use_locking=False):
    r"""Plain gradient descent: ``var -= delta * alpha``.

    TensorFlow's ``ResourceApplyGradientDescent``.

    Parameters
    ----------
    var : ndarray or Variable, float32 or float64
        Updated in place.
    alpha : float
        The learning rate (a scalar).
    delta : array_like of var's shape
        The gradient.
    use_locking : bool, default=False
        Hold a lock on `var` for the update, so that concurrent calls on the
        same array from several threads run one after another.

    Raises
    ------
    InvalidArgumentError
        If `alpha` is not a scalar or `delta` does not have var's shape.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var = np.array([1.0, 2.0])
    >>> training_ops.apply_gradient_descent(var, 0.5, [2.0, -2.0])
    >>> var
    array([0., 3.])
    """
    op = _Op(var)
    alpha = op.scalar(alpha, "alpha")
    delta = op.grad(delta, "delta")
    op.same_shape("delta", array=delta)
    op.run_dense(_k.dense_gradient_descent, delta, [alpha], use_locking)


def sparse_apply_gradient_descent(
    var, alpha, grad, indices, use_locking=False, *, coalesce_duplicates=False
):
    r"""Gradient descent on rows: ``var[indices[k]] -= grad[k] * alpha``.

    Not a TensorFlow kernel (TensorFlow scatter-adds ``-alpha * grad``); the
    result is the same: duplicates accumulate one after another.

    Parameters
    ----------
    var : ndarray or Variable of shape (n_rows, ...), float32 or float64
        Updated in place.
    alpha : float
        The learning rate.
    grad : array_like of shape (len(indices),) + var.shape[1:]
    indices : array_like of shape (n,), int32 or int64
        Rows of `var`, each in ``[0, n_rows)``; repeats allowed.
    use_locking : bool, default=False
    coalesce_duplicates : bool, default=False
        Sum the rows of each repeated index first (in order), then update once.

    Raises
    ------
    InvalidArgumentError
        On a non-scalar `alpha`, mismatched shapes, or an index out of range;
        nothing is written then.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var = np.zeros((3, 2))
    >>> training_ops.sparse_apply_gradient_descent(
    ...     var, 0.5, [[1.0, 2.0], [3.0, 4.0]], [2, 2])
    >>> var
    array([[ 0.,  0.],
           [ 0.,  0.],
           [-2., -3.]])
    """
    op = _Op(var)
    op.var_rank()
    alpha = op.scalar(alpha, "alpha")
    indices = op.indices(indices)
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    op.in_range(indices)
    op.run_sparse(
        _k.sparse_gradient_descent,
        grad,
        indices,
        [alpha],
        use_locking,
        coalesce_duplicates,
    )


def apply_proximal_gradient_descent(var, alpha, l1, l2, delta, use_locking=False):
    r"""Proximal gradient descent (FOBOS) with L1 and L2 regularisation.

    TensorFlow's ``ResourceApplyProximalGradientDescent``:

    .. math::

        p = var - \delta\,\alpha, \qquad
        var \leftarrow \frac{\operatorname{sign}(p)\max(|p| - \alpha l_1, 0)}
        {1 + l_2\alpha}

    (with ``l1 <= 0``, ``var = p / (1 + l2 * alpha)``).

    Parameters
    ----------
    var : ndarray or Variable, float32 or float64
        Updated in place.
    alpha, l1, l2 : float
        Learning rate and the regularisation strengths.
    delta : array_like of var's shape
        The gradient.
    use_locking : bool, default=False

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var = np.array([1.0, -1.0])
    >>> training_ops.apply_proximal_gradient_descent(var, 0.5, 0.2, 0.0, [1.0, 0.0])
    >>> var
    array([ 0.4, -0.9])
    """
    op = _Op(var)
    alpha = op.scalar(alpha, "alpha")
    l1 = op.scalar(l1, "l1", "l1 regularization strength")
    l2 = op.scalar(l2, "l2", "l2 regularization strength")
    delta = op.grad(delta, "delta")
    op.same_shape("delta", array=delta)
    op.run_dense(
        _k.dense_proximal_gradient_descent, delta, [alpha, l1, l2], use_locking
    )


def sparse_apply_proximal_gradient_descent(
    var,
    alpha,
    l1,
    l2,
    grad,
    indices,
    use_locking=False,
    *,
    coalesce_duplicates=False,
):
    r"""Sparse :func:`apply_proximal_gradient_descent` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyProximalGradientDescent``; when a row
    has one element (``R == 1``) the final division is done in float64, as
    TensorFlow's scalar path does.

    Parameters
    ----------
    var : ndarray or Variable of shape (n_rows, ...)
    alpha, l1, l2 : float
    grad : array_like of shape (len(indices),) + var.shape[1:]
    indices : array_like of shape (n,), int32 or int64
    use_locking : bool, default=False
    coalesce_duplicates : bool, default=False

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var = np.ones((3, 2))
    >>> training_ops.sparse_apply_proximal_gradient_descent(
    ...     var, 0.5, 0.0, 1.0, [[1.0, 1.0]], [1])
    >>> var
    array([[1.        , 1.        ],
           [0.33333333, 0.33333333],
           [1.        , 1.        ]])
    """
    op = _Op(var)
    op.var_rank()
    alpha = op.scalar(alpha, "alpha", "lr")
    l1 = op.scalar(l1, "l1", "l1 regularization strength")
    l2 = op.scalar(l2, "l2", "l2 regularization strength")
    indices = op.indices(indices)
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    op.inner_positive()
    op.in_range(indices)
    op.run_sparse(
        _k.sparse_proximal_gradient_descent,
        grad,
        indices,
        [alpha, l1, l2],
        use_locking,
        coalesce_duplicates,
    )


# ---------------------------------------------------------------------------
# Adadelta.


def apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, use_locking=False):
    r"""Adadelta, TensorFlow's ``ResourceApplyAdadelta``.

    .. math::

        accum &\leftarrow \rho\,accum + (1-\rho)\,g^2 \\
        u &= \sqrt{accum\_update + \epsilon}\,/\sqrt{accum + \epsilon}\;g \\
        var &\leftarrow var - lr\,u \\
        accum\_update &\leftarrow \rho\,accum\_update + (1-\rho)\,u^2

    Parameters
    ----------
    var, accum, accum_update : ndarray or Variable of one shape and dtype
        Updated in place.
    lr, rho, epsilon : float
    grad : array_like of var's shape
    use_locking : bool, default=False

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, update = np.ones(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_adadelta(var, accum, update, 1.0, 0.5, 1e-6, [1.0, 1.0])
    >>> accum
    array([0.5, 0.5])
    """
    op = _Op(var, ("accum", accum), ("accum_update", accum_update))
    lr = op.scalar(lr, "lr")
    rho = op.scalar(rho, "rho")
    epsilon = op.scalar(epsilon, "epsilon")
    op.same_shape("accum")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    op.same_shape("accum_update")
    op.run_dense(_k.dense_adadelta, grad, [lr, rho, epsilon], use_locking)


def sparse_apply_adadelta(
    var,
    accum,
    accum_update,
    lr,
    rho,
    epsilon,
    grad,
    indices,
    use_locking=False,
    *,
    coalesce_duplicates=False,
):
    r"""Sparse :func:`apply_adadelta` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyAdadelta`` (same formula per row).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, update = np.ones((3, 1)), np.zeros((3, 1)), np.zeros((3, 1))
    >>> training_ops.sparse_apply_adadelta(
    ...     var, accum, update, 1.0, 0.5, 1e-6, [[1.0]], [2])
    >>> accum.ravel()
    array([0. , 0. , 0.5])
    """
    op = _Op(var, ("accum", accum), ("accum_update", accum_update))
    op.same_shape("accum", "accum_grad")
    op.same_shape("accum_update")
    op.var_rank()
    lr = op.scalar(lr, "lr")
    rho = op.scalar(rho, "rho")
    epsilon = op.scalar(epsilon, "epsilon")
    indices = op.indices(indices)
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    op.in_range(indices)
    op.run_sparse(
        _k.sparse_adadelta,
        grad,
        indices,
        [lr, rho, epsilon],
        use_locking,
        coalesce_duplicates,
    )


# ---------------------------------------------------------------------------
# Adagrad and its variants.


def apply_adagrad(var, accum, lr, grad, use_locking=False, update_slots=True):
    r"""Adagrad without epsilon, TensorFlow's ``ResourceApplyAdagrad``.

    .. math::

        accum \leftarrow accum + g^2, \qquad
        var \leftarrow var - lr\,g / \sqrt{accum}

    ``1/sqrt`` is computed exactly (TensorFlow's float32 kernels use a
    hardware estimate, up to 4 ulp off).

    Parameters
    ----------
    var, accum : ndarray or Variable of one shape and dtype
    lr : float
    grad : array_like of var's shape
    use_locking : bool, default=False
    update_slots : bool, default=True
        When False, `accum` is left as it is.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones(2), np.zeros(2)
    >>> training_ops.apply_adagrad(var, accum, 0.1, [2.0, -1.0])
    >>> var
    array([0.9, 1.1])
    """
    op = _Op(var, ("accum", accum))
    lr = op.scalar(lr, "lr")
    op.same_shape("accum")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    op.run_dense(_k.dense_adagrad, grad, [lr, bool(update_slots)], use_locking)


def _sparse_adagrad_checks(op, lr, extra, grad, indices):
    op.same_shape("accum")
    op.var_rank()
    scalars = [op.scalar(lr, "lr")]
    for value, name in extra:
        scalars.append(op.scalar(value, name))
    indices = op.indices(indices)
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    op.inner_positive()
    op.in_range(indices)
    return scalars, grad, indices


def sparse_apply_adagrad(
    var,
    accum,
    lr,
    grad,
    indices,
    use_locking=False,
    update_slots=True,
    *,
    coalesce_duplicates=False,
):
    r"""Sparse :func:`apply_adagrad` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyAdagrad``.  With ``R == 1`` TensorFlow
    divides by ``sqrt(accum)`` instead of multiplying by its reciprocal, and so
    does this op.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((3, 1)), np.zeros((3, 1))
    >>> training_ops.sparse_apply_adagrad(var, accum, 0.1, [[2.0]], [0])
    >>> var.ravel()
    array([0.9, 1. , 1. ])
    """
    op = _Op(var, ("accum", accum))
    (lr,), grad, indices = _sparse_adagrad_checks(op, lr, [], grad, indices)
    op.run_sparse(
        _k.sparse_adagrad,
        grad,
        indices,
        [lr, bool(update_slots)],
        use_locking,
        coalesce_duplicates,
    )


def apply_adagrad_v2(
    var, accum, lr, epsilon, grad, use_locking=False, update_slots=True
):
    r"""Adagrad with epsilon outside the root, TensorFlow's ``ResourceApplyAdagradV2``.

    .. math::

        accum \leftarrow accum + g^2, \qquad
        var \leftarrow var - \frac{lr\,g}{\sqrt{accum} + \epsilon}

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones(2), np.zeros(2)
    >>> training_ops.apply_adagrad_v2(var, accum, 0.1, 0.0, [2.0, -1.0])
    >>> var
    array([0.9, 1.1])
    """
    op = _Op(var, ("accum", accum))
    lr = op.scalar(lr, "lr")
    epsilon = op.scalar(epsilon, "epsilon")
    op.same_shape("accum")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    op.run_dense(
        _k.dense_adagrad_v2, grad, [lr, epsilon, bool(update_slots)], use_locking
    )


def sparse_apply_adagrad_v2(
    var,
    accum,
    lr,
    epsilon,
    grad,
    indices,
    use_locking=False,
    update_slots=True,
    *,
    coalesce_duplicates=False,
):
    r"""Sparse :func:`apply_adagrad_v2` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyAdagradV2`` (what Keras' ``Adagrad``
    calls for sparse gradients).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((3, 2)), np.full((3, 2), 0.1)
    >>> training_ops.sparse_apply_adagrad_v2(
    ...     var, accum, 0.5, 1e-7, [[0.3, 0.4]], [1])
    >>> accum[1]
    array([0.19, 0.26])
    """
    op = _Op(var, ("accum", accum))
    (lr, epsilon), grad, indices = _sparse_adagrad_checks(
        op, lr, [(epsilon, "epsilon")], grad, indices
    )
    op.run_sparse(
        _k.sparse_adagrad_v2,
        grad,
        indices,
        [lr, epsilon, bool(update_slots)],
        use_locking,
        coalesce_duplicates,
    )


def apply_proximal_adagrad(var, accum, lr, l1, l2, grad, use_locking=False):
    r"""Proximal Adagrad, TensorFlow's ``ResourceApplyProximalAdagrad``.

    .. math::

        accum &\leftarrow accum + g^2, \quad \eta = lr/\sqrt{accum}, \quad
        p = var - \eta\,g \\
        var &\leftarrow \frac{\operatorname{sign}(p)\max(|p| - \eta l_1, 0)}
        {1 + \eta l_2}

    `lr` must be positive, `l1` and `l2` non-negative.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones(2), np.zeros(2)
    >>> training_ops.apply_proximal_adagrad(var, accum, 0.5, 0.0, 0.0, [1.0, 2.0])
    >>> var
    array([0.5, 0.5])
    """
    op = _Op(var, ("accum", accum))
    op.same_shape("accum")
    lr, l1, l2 = _proximal_adagrad_scalars(op, lr, l1, l2)
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    op.run_dense(_k.dense_proximal_adagrad, grad, [lr, l1, l2], use_locking)


def _proximal_adagrad_scalars(op, lr, l1, l2):
    return (
        op.checked_scalar(lr, "lr", "lr", _positive, "a positive scalar"),
        op.checked_scalar(
            l1,
            "l1",
            "l1 regularization strength",
            _non_negative,
            "a non-negative scalar",
        ),
        op.checked_scalar(
            l2,
            "l2",
            "l2 regularization strength",
            _non_negative,
            "a non-negative scalar",
        ),
    )


def sparse_apply_proximal_adagrad(
    var,
    accum,
    lr,
    l1,
    l2,
    grad,
    indices,
    use_locking=False,
    *,
    coalesce_duplicates=False,
):
    r"""Sparse :func:`apply_proximal_adagrad` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyProximalAdagrad``, including its ``R == 1``
    path (exact division, final division in float64).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((2, 2)), np.zeros((2, 2))
    >>> training_ops.sparse_apply_proximal_adagrad(
    ...     var, accum, 0.5, 0.0, 0.0, [[1.0, 2.0]], [1])
    >>> var
    array([[1. , 1. ],
           [0.5, 0.5]])
    """
    op = _Op(var, ("accum", accum))
    op.same_shape("accum")
    op.var_rank()
    lr, l1, l2 = _proximal_adagrad_scalars(op, lr, l1, l2)
    indices = op.indices(indices)
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    op.inner_positive()
    op.in_range(indices)
    op.run_sparse(
        _k.sparse_proximal_adagrad,
        grad,
        indices,
        [lr, l1, l2],
        use_locking,
        coalesce_duplicates,
    )


def _adagrad_da_scalars(op, lr, l1, l2, global_step):
    return (
        op.scalar(lr, "lr"),
        op.scalar(l1, "l1", "l1 regularization strength"),
        op.scalar(l2, "l2", "l2 regularization strength"),
        op.global_step(global_step),
    )


def apply_adagrad_da(
    var,
    gradient_accumulator,
    gradient_squared_accumulator,
    grad,
    lr,
    l1,
    l2,
    global_step,
    use_locking=False,
):
    r"""Adagrad dual averaging, TensorFlow's ``ResourceApplyAdagradDA``.

    .. math::

        a &\leftarrow a + g, \quad s \leftarrow s + g^2 \\
        var &\leftarrow \frac{-lr\,\operatorname{sign}(a)\max(|a| - t\,l_1, 0)}
        {l_2\,t\,lr + \sqrt{s}}

    where ``t`` is `global_step` rounded to float32 (as TensorFlow does, for
    float64 variables too).  The new `var` does not depend on the old one.

    Parameters
    ----------
    var, gradient_accumulator, gradient_squared_accumulator : ndarray or Variable
    grad : array_like of var's shape
    lr, l1, l2 : float
    global_step : int
    use_locking : bool, default=False

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, acc, sq = np.zeros(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_adagrad_da(var, acc, sq, [1.0, -2.0], 0.5, 0.0, 0.0, 1)
    >>> var
    array([-0.5,  0.5])
    """
    op = _Op(
        var,
        ("gradient_accumulator", gradient_accumulator),
        ("gradient_squared_accumulator", gradient_squared_accumulator),
    )
    op.same_shape("gradient_accumulator", "accum")
    op.same_shape("gradient_squared_accumulator", "accum")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    hp = _adagrad_da_scalars(op, lr, l1, l2, global_step)
    op.run_dense(_k.dense_adagrad_da, grad, hp, use_locking)


def sparse_apply_adagrad_da(
    var,
    gradient_accumulator,
    gradient_squared_accumulator,
    grad,
    indices,
    lr,
    l1,
    l2,
    global_step,
    use_locking=False,
    *,
    coalesce_duplicates=False,
):
    r"""Sparse :func:`apply_adagrad_da` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyAdagradDA``: note that `grad` and
    `indices` come before `lr`.  ``global_step == 0`` gives NaN or inf, as in
    TensorFlow.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, acc, sq = np.zeros((2, 2)), np.zeros((2, 2)), np.zeros((2, 2))
    >>> training_ops.sparse_apply_adagrad_da(
    ...     var, acc, sq, [[1.0, -2.0]], [0], 0.5, 0.0, 0.0, 1)
    >>> var
    array([[-0.5,  0.5],
           [ 0. ,  0. ]])
    """
    op = _Op(
        var,
        ("gradient_accumulator", gradient_accumulator),
        ("gradient_squared_accumulator", gradient_squared_accumulator),
    )
    op.same_shape("gradient_accumulator", "accum")
    op.same_shape("gradient_squared_accumulator", "accum")
    op.var_rank()
    indices = op.indices(indices)
    hp = _adagrad_da_scalars(op, lr, l1, l2, global_step)
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    op.inner_positive()
    op.in_range(indices)
    op.run_sparse(
        _k.sparse_adagrad_da, grad, indices, hp, use_locking, coalesce_duplicates
    )


# ---------------------------------------------------------------------------
# FTRL.


def _ftrl_dense(
    var,
    accum,
    linear,
    grad,
    lr,
    l1,
    l2,
    l2_shrinkage,
    lr_power,
    use_locking,
    multiply_linear_by_lr,
    v2,
):
    op = _Op(var, ("accum", accum), ("linear", linear))
    op.same_shape("accum")
    op.same_shape("linear")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    lr = op.scalar(lr, "lr")
    l1 = op.scalar(l1, "l1", "l1 regularization strength")
    l2 = op.scalar(l2, "l2", "l2 regularization strength")
    lr_power = op.scalar(lr_power, "lr_power", sep="")
    shrink = 0.0
    if v2:
        shrink = op.scalar(
            l2_shrinkage, "l2_shrinkage", "l2 shrinkage regularization strength"
        )
    hp = [lr, l1, l2, shrink, lr_power, bool(multiply_linear_by_lr), v2]
    op.run_dense(_k.dense_ftrl, grad, hp, use_locking)


def _ftrl_sparse(
    var,
    accum,
    linear,
    grad,
    indices,
    lr,
    l1,
    l2,
    l2_shrinkage,
    lr_power,
    use_locking,
    multiply_linear_by_lr,
    v2,
    coalesce,
):
    op = _Op(var, ("accum", accum), ("linear", linear))
    op.same_shape("accum")
    op.same_shape("linear")
    op.var_rank()
    indices = op.indices(indices)
    if multiply_linear_by_lr:
        lr = op.checked_scalar(
            lr,
            "lr",
            "lr",
            _non_negative,
            "a positive scalar (or zero if multiply_linear_by_lr is set)",
        )
    else:
        lr = op.checked_scalar(
            lr,
            "lr",
            "lr",
            _positive,
            "a positive scalar (or zero if multiply_linear_by_lr is set)",
        )
    l1 = op.checked_scalar(
        l1,
        "l1",
        "l1 regularization strength",
        _non_negative,
        "a non-negative scalar",
    )
    l2 = op.checked_scalar(
        l2,
        "l2",
        "l2 regularization strength",
        _non_negative,
        "a non-negative scalar",
    )
    lr_power = op.checked_scalar(
        lr_power, "lr_power", "lr_power", _non_positive, "a non-positive scalar"
    )
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    op.inner_positive()
    shrink = 0.0
    if v2:
        shrink = op.checked_scalar(
            l2_shrinkage,
            "l2_shrinkage",
            "l2 shrinkage regularization strength",
            _non_negative,
            "a non-negative scalar",
        )
    op.in_range(indices)
    hp = [lr, l1, l2, shrink, lr_power, bool(multiply_linear_by_lr), v2]
    op.run_sparse(_k.sparse_ftrl, grad, indices, hp, use_locking, coalesce)


def apply_ftrl(
    var,
    accum,
    linear,
    grad,
    lr,
    l1,
    l2,
    lr_power,
    use_locking=False,
    multiply_linear_by_lr=False,
):
    r"""FTRL-Proximal, TensorFlow's ``ResourceApplyFtrl``.

    With :math:`P(x) = x^{-p}` for ``p = lr_power`` (a square root when
    ``p == -0.5``):

    .. math::

        n' &= accum + g^2, \quad
        \sigma = (P(n') - P(accum)) / lr \\
        linear &\leftarrow linear + g - \sigma\,var \\
        var &\leftarrow \begin{cases}
            \dfrac{l_1 \operatorname{sign}(linear) - linear}{P(n')/lr + 2 l_2}
            & |linear| > l_1 \\ 0 & \text{otherwise}\end{cases}, \quad
        accum \leftarrow n'

    With ``multiply_linear_by_lr=True`` `linear` holds ``lr`` times the usual
    value and the formula is rearranged accordingly.  No value checks (a zero
    `lr` divides by zero), as in TensorFlow's dense kernel.

    Parameters
    ----------
    var, accum, linear : ndarray or Variable of one shape and dtype
    grad : array_like of var's shape
    lr, l1, l2, lr_power : float
    use_locking : bool, default=False
    multiply_linear_by_lr : bool, default=False

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, linear = np.zeros(2), np.full(2, 0.1), np.zeros(2)
    >>> training_ops.apply_ftrl(var, accum, linear, [1.0, 0.05], 0.1, 0.1, 0.0, -0.5)
    >>> linear
    array([1.  , 0.05])
    >>> var.round(6)
    array([-0.085812,  0.      ])
    """
    _ftrl_dense(
        var,
        accum,
        linear,
        grad,
        lr,
        l1,
        l2,
        None,
        lr_power,
        use_locking,
        multiply_linear_by_lr,
        False,
    )


def apply_ftrl_v2(
    var,
    accum,
    linear,
    grad,
    lr,
    l1,
    l2,
    l2_shrinkage,
    lr_power,
    use_locking=False,
    multiply_linear_by_lr=False,
):
    r"""FTRL with L2 shrinkage, TensorFlow's ``ResourceApplyFtrlV2``.

    As :func:`apply_ftrl`, with ``g + 2 * l2_shrinkage * var`` in place of ``g``
    in the `linear` update (`accum` still accumulates ``g**2``).  Note that
    `l2_shrinkage` comes before `lr_power`.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, linear = np.ones(2), np.full(2, 0.1), np.zeros(2)
    >>> training_ops.apply_ftrl_v2(
    ...     var, accum, linear, [0.0, 0.0], 0.1, 0.0, 0.0, 0.5, -0.5)
    >>> linear
    array([1., 1.])
    """
    _ftrl_dense(
        var,
        accum,
        linear,
        grad,
        lr,
        l1,
        l2,
        l2_shrinkage,
        lr_power,
        use_locking,
        multiply_linear_by_lr,
        True,
    )


def sparse_apply_ftrl(
    var,
    accum,
    linear,
    grad,
    indices,
    lr,
    l1,
    l2,
    lr_power,
    use_locking=False,
    multiply_linear_by_lr=False,
    *,
    coalesce_duplicates=False,
):
    r"""Sparse :func:`apply_ftrl` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyFtrl``, including the ``R == 1`` path
    and its value checks: ``lr > 0`` (``>= 0`` with `multiply_linear_by_lr`),
    ``l1 >= 0``, ``l2 >= 0``, ``lr_power <= 0``.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, linear = np.zeros((2, 2)), np.full((2, 2), 0.1), np.zeros((2, 2))
    >>> training_ops.sparse_apply_ftrl(
    ...     var, accum, linear, [[1.0, 0.05]], [1], 0.1, 0.1, 0.0, -0.5)
    >>> var.round(6)
    array([[ 0.      ,  0.      ],
           [-0.085812,  0.      ]])
    """
    _ftrl_sparse(
        var,
        accum,
        linear,
        grad,
        indices,
        lr,
        l1,
        l2,
        None,
        lr_power,
        use_locking,
        multiply_linear_by_lr,
        False,
        coalesce_duplicates,
    )


def sparse_apply_ftrl_v2(
    var,
    accum,
    linear,
    grad,
    indices,
    lr,
    l1,
    l2,
    l2_shrinkage,
    lr_power,
    use_locking=False,
    multiply_linear_by_lr=False,
    *,
    coalesce_duplicates=False,
):
    r"""Sparse :func:`apply_ftrl_v2` on the rows ``indices``.

    TensorFlow's ``ResourceSparseApplyFtrlV2``; each occurrence of a repeated
    index recomputes the shrinkage term from the current `var`.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum, linear = np.ones((2, 1)), np.full((2, 1), 0.1), np.zeros((2, 1))
    >>> training_ops.sparse_apply_ftrl_v2(
    ...     var, accum, linear, [[0.0]], [0], 0.1, 0.0, 0.0, 0.5, -0.5)
    >>> linear.ravel()
    array([1., 0.])
    """
    _ftrl_sparse(
        var,
        accum,
        linear,
        grad,
        indices,
        lr,
        l1,
        l2,
        l2_shrinkage,
        lr_power,
        use_locking,
        multiply_linear_by_lr,
        True,
        coalesce_duplicates,
    )


# ---------------------------------------------------------------------------
# Momentum.


def _momentum_dense(kernel, var, accum, lr, grad, momentum, use_locking, use_nesterov):
    op = _Op(var, ("accum", accum))
    lr = op.scalar(lr, "lr")
    op.same_shape("accum")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    momentum = op.scalar(momentum, "momentum")
    op.run_dense(kernel, grad, [lr, momentum, bool(use_nesterov)], use_locking)


def _momentum_sparse(
    kernel,
    var,
    accum,
    lr,
    grad,
    indices,
    momentum,
    use_locking,
    use_nesterov,
    coalesce,
    keras,
):
    op = _Op(var, ("accum", accum))
    op.same_shape("accum")
    op.var_rank()
    lr = op.scalar(lr, "lr", sep=" : ")
    indices = op.indices(indices)
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    momentum = op.scalar(momentum, "momentum")
    op.in_range(indices, keras=keras)
    op.run_sparse(
        kernel,
        grad,
        indices,
        [lr, momentum, bool(use_nesterov)],
        use_locking,
        coalesce,
    )


def apply_momentum(
    var, accum, lr, grad, momentum, use_locking=False, use_nesterov=False
):
    r"""Momentum, TensorFlow's ``ResourceApplyMomentum``.

    .. math::

        accum \leftarrow accum\cdot momentum + g, \qquad
        var \leftarrow var - lr\cdot accum

    With ``use_nesterov=True``:
    ``var -= g * lr + accum * momentum * lr``.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones(2), np.ones(2)
    >>> training_ops.apply_momentum(var, accum, 0.1, [1.0, 0.0], 0.5)
    >>> var
    array([0.85, 0.95])
    """
    _momentum_dense(
        _k.dense_momentum, var, accum, lr, grad, momentum, use_locking, use_nesterov
    )


def sparse_apply_momentum(
    var,
    accum,
    lr,
    grad,
    indices,
    momentum,
    use_locking=False,
    use_nesterov=False,
    *,
    coalesce_duplicates=False,
):
    r"""Sparse :func:`apply_momentum` on the rows ``indices`` (lazy).

    TensorFlow's ``ResourceSparseApplyMomentum``; `momentum` comes after
    `indices`.  Rows not indexed keep their `accum` and do not move.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((2, 1)), np.ones((2, 1))
    >>> training_ops.sparse_apply_momentum(var, accum, 0.1, [[1.0]], [0], 0.5)
    >>> var.ravel()
    array([0.85, 1.  ])
    """
    _momentum_sparse(
        _k.sparse_momentum,
        var,
        accum,
        lr,
        grad,
        indices,
        momentum,
        use_locking,
        use_nesterov,
        coalesce_duplicates,
        False,
    )


def apply_keras_momentum(
    var, accum, lr, grad, momentum, use_locking=False, use_nesterov=False
):
    r"""Keras-style momentum, TensorFlow's ``ResourceApplyKerasMomentum``.

    `accum` holds the velocity, with the learning rate folded in:

    .. math::

        accum \leftarrow accum\cdot momentum - lr\cdot g, \qquad
        var \leftarrow var + accum

    With ``use_nesterov=True``: ``var += accum * momentum - g * lr``.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones(2), np.zeros(2)
    >>> training_ops.apply_keras_momentum(var, accum, 0.5, [1.0, -1.0], 0.9)
    >>> var
    array([0.5, 1.5])
    """
    _momentum_dense(
        _k.dense_keras_momentum,
        var,
        accum,
        lr,
        grad,
        momentum,
        use_locking,
        use_nesterov,
    )


def sparse_apply_keras_momentum(
    var,
    accum,
    lr,
    grad,
    indices,
    momentum,
    use_locking=False,
    use_nesterov=False,
    *,
    coalesce_duplicates=False,
):
    r"""Sparse :func:`apply_keras_momentum` on the rows ``indices`` (lazy).

    TensorFlow's ``ResourceSparseApplyKerasMomentum``; its out-of-range message
    reads ``indices[i] = idx is not in [0, n_rows)``.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((2, 1)), np.zeros((2, 1))
    >>> training_ops.sparse_apply_keras_momentum(var, accum, 0.5, [[1.0]], [1], 0.9)
    >>> var.ravel()
    array([1. , 0.5])
    """
    _momentum_sparse(
        _k.sparse_keras_momentum,
        var,
        accum,
        lr,
        grad,
        indices,
        momentum,
        use_locking,
        use_nesterov,
        coalesce_duplicates,
        True,
    )


# ---------------------------------------------------------------------------
# Adam family.


def _adam_scalars(op, beta1_power, beta2_power, lr, beta1, beta2, epsilon,
                  ada_max=False):
    """The Adam kernels' hyper-parameters, checked in TF's order: the step size,
    then beta1, beta2, epsilon.

    The step size is computed here once, in var's dtype with one rounding per
    operation, as TF's kernels compute it: ``lr * sqrt(1 - beta2_power) / (1 -
    beta1_power)``, or ``lr / (1 - beta1_power)`` for AdaMax (`ada_max`, where
    `beta2_power` is not an argument and must be None).  For Adam a None
    `beta2_power` is an error like any other non-number.
    """
    b1p = op.scalar(beta1_power, "beta1_power")
    b2p = None if ada_max else op.scalar(beta2_power, "beta2_power")
    lr = op.scalar(lr, "lr", sep=" : ")
    rest = [op.scalar(beta1, "beta1"), op.scalar(beta2, "beta2"),
            op.scalar(epsilon, "epsilon")]
    if b1p == 1 or (b2p is not None and not b2p <= 1):
        with np.errstate(all="ignore"):         # inf or nan, as TF gets
            step = _adam_step(op.dtype.type, lr, b1p, b2p)
    else:
        step = _adam_step(op.dtype.type, lr, b1p, b2p)
    return [step] + rest


def _adam_step(t, lr, b1p, b2p):
    if b2p is None:
        return float(t(lr) / (t(1) - t(b1p)))
    return float((t(lr) * np.sqrt(t(1) - t(b2p))) / (t(1) - t(b1p)))


def apply_adam(
    var,
    m,
    v,
    beta1_power,
    beta2_power,
    lr,
    beta1,
    beta2,
    epsilon,
    grad,
    use_locking=False,
    use_nesterov=False,
):
    r"""Adam, TensorFlow's ``ResourceApplyAdam``.

    The caller passes ``beta1_power = beta1**t`` and ``beta2_power = beta2**t``;
    bias correction goes into the step size:

    .. math::

        \alpha &= lr\,\sqrt{1 - \beta_2^t} / (1 - \beta_1^t) \\
        m &\leftarrow m + (g - m)(1 - \beta_1), \quad
        v \leftarrow v + (g^2 - v)(1 - \beta_2) \\
        var &\leftarrow var - \alpha\, m / (\sqrt{v} + \epsilon)

    With ``use_nesterov=True`` the numerator is
    ``g * (1 - beta1) + beta1 * m``.

    .. warning::
        Epsilon is added outside the square root of the *uncorrected* ``v``
        ("epsilon hat"), as in TensorFlow; the paper and PyTorch add it after
        bias-correcting ``v``.

    Parameters
    ----------
    var, m, v : ndarray or Variable of one shape and dtype
    beta1_power, beta2_power, lr, beta1, beta2, epsilon : float
    grad : array_like of var's shape
    use_locking : bool, default=False
    use_nesterov : bool, default=False

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v = np.ones(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_adam(
    ...     var, m, v, 0.9, 0.999, 0.001, 0.9, 0.999, 1e-7, [1.0, -1.0])
    >>> var.round(6)
    array([0.999, 1.001])
    """
    op = _Op(var, ("m", m), ("v", v))
    hp = _adam_scalars(op, beta1_power, beta2_power, lr, beta1, beta2, epsilon)
    op.same_shape("m")
    op.same_shape("v")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    op.run_dense(_k.dense_adam, grad, hp + [bool(use_nesterov)], use_locking)


def sparse_apply_adam(
    var,
    m,
    v,
    beta1_power,
    beta2_power,
    lr,
    beta1,
    beta2,
    epsilon,
    grad,
    indices,
    use_locking=False,
    use_nesterov=False,
    *,
    coalesce_duplicates=False,
):
    r"""Lazy Adam on the rows ``indices`` (not a TensorFlow kernel).

    Each indexed row gets exactly :func:`apply_adam`'s update (same
    arithmetic, so indexing every row once equals the dense op bit for bit);
    rows not indexed keep their `m` and `v` and do not move.  This is TF
    Addons' ``LazyAdam`` (reference section 4.3) when duplicates are coalesced
    first (``coalesce_duplicates=True``); by default a repeated index gets one
    full update per occurrence, like TensorFlow's sparse kernels.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v = np.ones((3, 1)), np.zeros((3, 1)), np.zeros((3, 1))
    >>> training_ops.sparse_apply_adam(
    ...     var, m, v, 0.9, 0.999, 0.001, 0.9, 0.999, 1e-7, [[1.0]], [2])
    >>> var.ravel().round(6)
    array([1.   , 1.   , 0.999])
    """
    op = _Op(var, ("m", m), ("v", v))
    op.same_shape("m")
    op.same_shape("v")
    op.var_rank()
    hp = _adam_scalars(op, beta1_power, beta2_power, lr, beta1, beta2, epsilon)
    indices = op.indices(indices)
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    op.in_range(indices)
    op.run_sparse(
        _k.sparse_adam,
        grad,
        indices,
        hp + [bool(use_nesterov)],
        use_locking,
        coalesce_duplicates,
    )


def apply_adam_with_amsgrad(
    var,
    m,
    v,
    vhat,
    beta1_power,
    beta2_power,
    lr,
    beta1,
    beta2,
    epsilon,
    grad,
    use_locking=False,
):
    r"""AMSGrad, TensorFlow's ``ResourceApplyAdamWithAmsgrad``.

    As :func:`apply_adam`, then ``vhat = max(vhat, v)`` and
    ``var -= alpha * m / (sqrt(vhat) + epsilon)``.  Unlike TensorFlow, the
    shape of `vhat` is checked.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v, vhat = np.ones(1), np.zeros(1), np.zeros(1), np.ones(1)
    >>> training_ops.apply_adam_with_amsgrad(
    ...     var, m, v, vhat, 0.9, 0.999, 0.001, 0.9, 0.999, 1e-7, [1.0])
    >>> vhat
    array([1.])
    """
    op = _Op(var, ("m", m), ("v", v), ("vhat", vhat))
    hp = _adam_scalars(op, beta1_power, beta2_power, lr, beta1, beta2, epsilon)
    op.same_shape("m")
    op.same_shape("v")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    op.same_shape("vhat")
    op.run_dense(_k.dense_adam_with_amsgrad, grad, hp, use_locking)


def apply_ada_max(
    var, m, v, beta1_power, lr, beta1, beta2, epsilon, grad, use_locking=False
):
    r"""AdaMax, TensorFlow's ``ResourceApplyAdaMax``.

    .. math::

        m &\leftarrow m + (g - m)(1 - \beta_1), \quad
        v \leftarrow \max(\beta_2 v, |g|) \\
        var &\leftarrow var - \frac{lr}{1 - \beta_1^t}\,\frac{m}{v + \epsilon}

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v = np.ones(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_ada_max(var, m, v, 0.9, 0.001, 0.9, 0.999, 1e-7, [2.0, -2.0])
    >>> var.round(6)
    array([0.999, 1.001])
    """
    op = _Op(var, ("m", m), ("v", v))
    hp = _adam_scalars(
        op, beta1_power, None, lr, beta1, beta2, epsilon, ada_max=True
    )
    op.same_shape("m")
    op.same_shape("v")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    op.run_dense(_k.dense_ada_max, grad, hp, use_locking)


def sparse_apply_ada_max(
    var,
    m,
    v,
    beta1_power,
    lr,
    beta1,
    beta2,
    epsilon,
    grad,
    indices,
    use_locking=False,
    *,
    coalesce_duplicates=False,
):
    r"""Lazy AdaMax on the rows ``indices`` (not a TensorFlow kernel).

    Each indexed row gets :func:`apply_ada_max`'s update; rows not indexed keep
    their `m` and `v` and do not move (what Keras' Adamax does for sparse
    gradients, after coalescing duplicates).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m, v = np.ones((2, 1)), np.zeros((2, 1)), np.zeros((2, 1))
    >>> training_ops.sparse_apply_ada_max(
    ...     var, m, v, 0.9, 0.001, 0.9, 0.999, 1e-7, [[2.0]], [1])
    >>> var.ravel().round(6)
    array([1.   , 0.999])
    """
    op = _Op(var, ("m", m), ("v", v))
    op.same_shape("m")
    op.same_shape("v")
    op.var_rank()
    hp = _adam_scalars(
        op, beta1_power, None, lr, beta1, beta2, epsilon, ada_max=True
    )
    indices = op.indices(indices)
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    op.in_range(indices)
    op.run_sparse(
        _k.sparse_ada_max, grad, indices, hp, use_locking, coalesce_duplicates
    )


# ---------------------------------------------------------------------------
# RMSProp.


def _rms_scalars(op, lr, rho, momentum, epsilon, lr_sep):
    return [
        op.scalar(lr, "lr", sep=lr_sep),
        op.scalar(rho, "rho"),
        op.scalar(momentum, "momentum"),
        op.scalar(epsilon, "epsilon"),
    ]


def apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False):
    r"""RMSProp with momentum, TensorFlow's ``ResourceApplyRMSProp``.

    .. math::

        ms &\leftarrow ms + (g^2 - ms)(1 - \rho) \\
        mom &\leftarrow momentum\cdot mom + lr\,g / \sqrt{ms + \epsilon} \\
        var &\leftarrow var - mom

    Epsilon is inside the square root.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, ms, mom = np.ones(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_rms_prop(var, ms, mom, 0.1, 0.75, 0.0, 0.0, [2.0, -2.0])
    >>> var
    array([0.8, 1.2])
    """
    op = _Op(var, ("ms", ms), ("mom", mom))
    hp = _rms_scalars(op, lr, rho, momentum, epsilon, " : ")
    op.same_shape("ms")
    op.same_shape("mom")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    op.run_dense(_k.dense_rms_prop, grad, hp, use_locking)


def sparse_apply_rms_prop(
    var,
    ms,
    mom,
    lr,
    rho,
    momentum,
    epsilon,
    grad,
    indices,
    use_locking=False,
    *,
    coalesce_duplicates=False,
):
    r"""Sparse :func:`apply_rms_prop` on the rows ``indices`` (lazy).

    TensorFlow's ``ResourceSparseApplyRMSProp``, whose per-row arithmetic is
    arranged differently from the dense kernel's
    (``ms * rho + g**2 * (1 - rho)``), so results may differ in the last bit.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, ms, mom = np.ones((2, 1)), np.zeros((2, 1)), np.zeros((2, 1))
    >>> training_ops.sparse_apply_rms_prop(
    ...     var, ms, mom, 0.1, 0.75, 0.0, 0.0, [[2.0]], [0])
    >>> var.ravel()
    array([0.8, 1. ])
    """
    op = _Op(var, ("ms", ms), ("mom", mom))
    hp = _rms_scalars(op, lr, rho, momentum, epsilon, ": ")
    op.same_shape("ms")
    op.same_shape("mom")
    op.var_rank()
    indices = op.indices(indices)
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    op.in_range(indices)
    op.run_sparse(
        _k.sparse_rms_prop, grad, indices, hp, use_locking, coalesce_duplicates
    )


def apply_centered_rms_prop(
    var, mg, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False
):
    r"""Centered RMSProp, TensorFlow's ``ResourceApplyCenteredRMSProp``.

    .. math::

        ms &\leftarrow ms + (g^2 - ms)(1 - \rho), \quad
        mg \leftarrow mg + (g - mg)(1 - \rho) \\
        mom &\leftarrow momentum\cdot mom
              + lr\,g / \sqrt{ms - mg^2 + \epsilon} \\
        var &\leftarrow var - mom

    Note that `mg` comes before `ms`.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, mg, ms, mom = np.ones(1), np.zeros(1), np.zeros(1), np.zeros(1)
    >>> training_ops.apply_centered_rms_prop(
    ...     var, mg, ms, mom, 0.1, 0.5, 0.0, 0.0, [2.0])
    >>> mg, ms
    (array([1.]), array([2.]))
    """
    op = _Op(var, ("mg", mg), ("ms", ms), ("mom", mom))
    hp = _rms_scalars(op, lr, rho, momentum, epsilon, " : ")
    op.same_shape("mg")
    op.same_shape("ms")
    op.same_shape("mom")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    op.run_dense(_k.dense_centered_rms_prop, grad, hp, use_locking)


def sparse_apply_centered_rms_prop(
    var,
    mg,
    ms,
    mom,
    lr,
    rho,
    momentum,
    epsilon,
    grad,
    indices,
    use_locking=False,
    *,
    coalesce_duplicates=False,
):
    r"""Sparse :func:`apply_centered_rms_prop` on the rows ``indices`` (lazy).

    TensorFlow's ``ResourceSparseApplyCenteredRMSProp`` (per-row arithmetic
    arranged as in :func:`sparse_apply_rms_prop`).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, mg, ms, mom = (np.zeros((2, 1)) for _ in range(4))
    >>> training_ops.sparse_apply_centered_rms_prop(
    ...     var, mg, ms, mom, 0.1, 0.5, 0.0, 0.0, [[2.0]], [1])
    >>> mg.ravel(), ms.ravel()
    (array([0., 1.]), array([0., 2.]))
    """
    op = _Op(var, ("mg", mg), ("ms", ms), ("mom", mom))
    hp = _rms_scalars(op, lr, rho, momentum, epsilon, ": ")
    op.same_shape("mg")
    op.same_shape("ms")
    op.same_shape("mom")
    op.var_rank()
    indices = op.indices(indices)
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    op.in_range(indices)
    op.run_sparse(
        _k.sparse_centered_rms_prop,
        grad,
        indices,
        hp,
        use_locking,
        coalesce_duplicates,
    )


# ---------------------------------------------------------------------------
# Sign methods (Bello et al., 2017).


def apply_add_sign(var, m, lr, alpha, sign_decay, beta, grad, use_locking=False):
    r"""AddSign, TensorFlow's ``ResourceApplyAddSign``.

    .. math::

        m &\leftarrow \beta m + (1 - \beta) g \\
        var &\leftarrow var - lr\,(\alpha + d\,\operatorname{sign}(g)
              \operatorname{sign}(m))\,g

    with ``d = sign_decay``.  A non-scalar `sign_decay` is an error (TensorFlow
    checks `alpha` twice instead).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m = np.ones(2), np.zeros(2)
    >>> training_ops.apply_add_sign(var, m, 0.1, 1.0, 1.0, 0.9, [1.0, -1.0])
    >>> var
    array([0.8, 1.2])
    """
    op = _Op(var, ("m", m))
    hp = [
        op.scalar(lr, "lr"),
        op.scalar(alpha, "alpha"),
        op.scalar(sign_decay, "sign_decay"),
        op.scalar(beta, "beta"),
    ]
    op.same_shape("m")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    op.run_dense(_k.dense_add_sign, grad, hp, use_locking)


def apply_power_sign(var, m, lr, logbase, sign_decay, beta, grad, use_locking=False):
    r"""PowerSign, TensorFlow's ``ResourceApplyPowerSign``.

    .. math::

        m &\leftarrow \beta m + (1 - \beta) g \\
        var &\leftarrow var - lr\,\exp(\log b \cdot d\,\operatorname{sign}(g)
              \operatorname{sign}(m))\,g

    with ``log b = logbase`` and ``d = sign_decay``.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, m = np.ones(2), np.zeros(2)
    >>> training_ops.apply_power_sign(var, m, 0.1, 0.0, 1.0, 0.9, [1.0, -1.0])
    >>> var
    array([0.9, 1.1])
    """
    op = _Op(var, ("m", m))
    hp = [
        op.scalar(lr, "lr"),
        op.scalar(logbase, "logbase"),
        op.scalar(sign_decay, "sign_decay"),
        op.scalar(beta, "beta"),
    ]
    op.same_shape("m")
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    op.run_dense(_k.dense_power_sign, grad, hp, use_locking)


# ---------------------------------------------------------------------------
# Row-wise Adagrad (FBGEMM / TorchRec), beyond TensorFlow.


def _rowwise_checks(op, lr, epsilon):
    op.var_rank()
    accum = op.slots["accum"]
    if accum.shape != op.var.shape[:1]:
        raise InvalidArgumentError(
            "accum must have shape [var.shape[0]] (one accumulator per row of "
            f"var): var has shape {_shape_str(op.var.shape)} and accum "
            f"{_shape_str(accum.shape)}"
        )
    return [op.scalar(lr, "lr"), op.scalar(epsilon, "epsilon")]


def apply_rowwise_adagrad(var, accum, lr, epsilon, grad, use_locking=False):
    r"""Row-wise Adagrad: one accumulator per row of `var` (dense gradient).

    For each row ``i`` with gradient row ``g_i`` of ``R`` elements:

    .. math::

        accum_i &\leftarrow accum_i + \frac{1}{R}\sum_j g_{ij}^2 \\
        var_i &\leftarrow var_i - \frac{lr}{\sqrt{accum_i} + \epsilon}\, g_i

    as FBGEMM's and TorchRec's ``rowwise_adagrad`` do (epsilon outside the
    root).  The mean is accumulated in float64, in order, and rounded to the
    dtype of `var` once; the multiplier ``lr / (sqrt(accum_i) + epsilon)`` is
    computed in that dtype.  It keeps ``1/R`` of Adagrad's slot memory, which
    matters for embedding tables.

    Parameters
    ----------
    var : ndarray or Variable of shape (n_rows, ...), float32 or float64
    accum : ndarray or Variable of shape (n_rows,), var's dtype
    lr, epsilon : float
    grad : array_like of var's shape
    use_locking : bool, default=False

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((2, 2)), np.zeros(2)
    >>> grad = [[1.0, 1.0], [3.0, 4.0]]
    >>> training_ops.apply_rowwise_adagrad(var, accum, 0.5, 0.0, grad)
    >>> accum
    array([ 1. , 12.5])
    >>> var[0]
    array([0.5, 0.5])
    """
    op = _Op(var, ("accum", accum))
    hp = _rowwise_checks(op, lr, epsilon)
    grad = op.grad(grad)
    op.same_shape("grad", array=grad)
    op.inner_positive()
    if op.var.size:
        n_rows = op.var.shape[0]
        with op._lock(use_locking):
            _k.dense_rowwise_adagrad(
                op.var.reshape(n_rows, -1),
                op.slots["accum"].reshape(n_rows, 1),
                grad.reshape(n_rows, -1),
                _hp(hp),
                get_num_threads(),
            )
    op._bump()


def sparse_apply_rowwise_adagrad(
    var,
    accum,
    lr,
    epsilon,
    grad,
    indices,
    use_locking=False,
    *,
    coalesce_duplicates=False,
):
    r"""Row-wise Adagrad on the rows ``indices`` (see :func:`apply_rowwise_adagrad`).

    A repeated index gets one full update per occurrence, in order (or one
    update with the summed rows when ``coalesce_duplicates=True``, as FBGEMM
    does).  Rows not indexed are untouched.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, accum = np.ones((3, 2)), np.zeros(3)
    >>> training_ops.sparse_apply_rowwise_adagrad(
    ...     var, accum, 0.5, 0.0, [[3.0, 4.0]], [2])
    >>> accum
    array([ 0. ,  0. , 12.5])
    """
    op = _Op(var, ("accum", accum))
    hp = _rowwise_checks(op, lr, epsilon)
    indices = op.indices(indices)
    grad = op.grad(grad)
    op.sparse_grad(grad, indices)
    op.inner_positive()
    op.in_range(indices)
    n_rows = op.var.shape[0]
    if indices.size:
        acc2 = op.slots["accum"].reshape(n_rows, 1)
        rows = [op.var.reshape(n_rows, -1), acc2, acc2, acc2]
        _sparse_kernel(
            _k.sparse_rowwise_adagrad,
            rows,
            grad.reshape(indices.shape[0], -1),
            indices,
            hp,
            coalesce_duplicates,
            op._lock(use_locking),
        )
    op._bump()
