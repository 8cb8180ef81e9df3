"""Elementwise arithmetic of two operands, where, comparisons and matmul.

Each op converts its arguments (a Python scalar or array_like operand adopts
the dtype of the Tensor operand), computes with NumPy, wraps the result and
records itself once through :func:`~sparsegrad.autodiff.recording.record_operation`;
its gradient is registered right below it.  Binary ops broadcast as NumPy
does; their gradients sum back to each input's shape
(:func:`~sparsegrad.ops.reduction_ops.unbroadcast`).  Gradients are written
with sparsegrad ops, so they are differentiable again.

``pow`` of floats comes from :mod:`sparsegrad.framework.elementwise` (the same
bits on every CPU), not from NumPy's ufunc.  The one-operand functions live in
:mod:`.unary_ops`, the reductions in :mod:`.reduction_ops`.
"""

import numpy as np

from ..autodiff.recording import record_operation
from ..autodiff.registry import register_gradient
from ..errors import InvalidArgumentError
from ..framework import backend, buffers
from ..framework import elementwise as _elementwise
from ..framework.buffers import UNCHECKED_BYTES, check_allocation, copy_of
from ..framework.tensor import Tensor, wrap
from . import array_ops, reduction_ops, unary_ops
from ._helpers import as_tensor, binary_operands

__all__ = [
    "add",
    "add_n",
    "divide",
    "equal",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "matmul",
    "maximum",
    "minimum",
    "multiply",
    "not_equal",
    "pow",
    "subtract",
    "where",
]


# -- add / subtract ------------------------------------------------------------------


def add(x, y, name=None):
    """Elementwise ``x + y`` with NumPy broadcasting.

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor of the broadcast shape.

    Raises
    ------
    InvalidArgumentError
        If the dtypes differ or the shapes do not broadcast.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.add([1.0, 2.0], 1.0).numpy()
    array([2., 3.])
    """
    x, y = binary_operands(x, y, "add")
    z = wrap(_apply2(np.add, x, y, "add"))
    record_operation("AddV2", (x, y), (z,))
    return z


# Operands whose sizes multiply to less than this make a result (and copies)
# too small for check_allocation to look at.
_SMALL_PRODUCT = UNCHECKED_BYTES // 32


def _check_result(op_name, names, operands, dtype=None, copies=None):
    """check_allocation of the result of a broadcasting op, of the broadcast
    shape of `operands` (Tensors, named `names`) and `dtype` (by default the
    first operand's; or a function giving it), with the op's copies of its
    operands in that dtype: those not already C-contiguous of the result's
    shape (``copies="strided"``), or all of them (``"all"``).

    An operand that holds its memory (C-contiguous) and has the result's
    shape (the others scalars or of its shape) bounds the result of an op
    that copies nothing: nothing to check then.  Broadcast operands
    (``broadcast_to`` views cost nothing) or other shapes may ask for any
    size.  Shapes that do not broadcast are left to the op's own error.
    """
    arrays = [t._value for t in operands]
    bound = 1           # the result has at most the product of the sizes
    for a in arrays:
        bound *= a.size
    if bound < _SMALL_PRODUCT:
        return
    widest = max(arrays, key=lambda a: a.ndim)
    if copies != "all" and widest.flags.c_contiguous and all(
            a.ndim == 0 or a.shape == widest.shape for a in arrays):
        return
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        return
    if callable(dtype):
        dtype = dtype()
    buffer = (shape, arrays[0].dtype if dtype is None else dtype,
              f"{op_name}: {' and '.join(names)}")
    n = 1 + sum(copies == "all" or (copies == "strided" and a.size > 1 and not (
        a.flags.c_contiguous and a.shape == shape)) for a in arrays)
    check_allocation(*[buffer] * n)


def _result_dtype(ufunc, x, y):
    """The dtype `ufunc` gives for the values of Tensors `x` and `y`."""
    try:
        return ufunc.resolve_dtypes((x._value.dtype, y._value.dtype, None))[-1]
    except (TypeError, ValueError):
        return np.result_type(x._value.dtype, y._value.dtype)


def _pooled_result(ufunc, x, y):
    """Memory from :func:`buffers.empty` (recycled when large) for the host
    result of a binary `ufunc`; None for operands too small for a result
    that large (a plain NumPy result, without the shape's computation)."""
    xv, yv = x._value, y._value
    if max(xv.size, yv.size) * 8 < buffers.MIN_POOLED_BYTES:
        return None
    try:
        shape = np.broadcast_shapes(xv.shape, yv.shape)
    except ValueError:
        return None   # the ufunc raises
    return buffers.empty(shape, _result_dtype(ufunc, x, y))


def _apply2(ufunc, x, y, op_name):
    if x._value.size * y._value.size >= _SMALL_PRODUCT:  # else: a small result
        _check_result(op_name, ("x", "y"), (x, y),
                      lambda: _result_dtype(ufunc, x, y))
    # NumPy's ufunc, or CuPy's of the same name for GPU operands
    xp = backend.get_array_module(x._value, y._value)
    if xp is not np:
        ufunc = getattr(xp, ufunc.__name__)
    try:
        out = _pooled_result(ufunc, x, y) if xp is np else None
        if out is None:
            return ufunc(x._value, y._value)
        return ufunc(x._value, y._value, out=out)
    except ValueError as exc:
        raise InvalidArgumentError(
            f"{op_name}: shapes {x.shape} and {y.shape} do not broadcast ({exc})"
        ) from None


@register_gradient("AddV2")
def _add_grad(op, grad):
    x, y = op.inputs
    skip = op.skip_input_indices
    gx = None if 0 in skip else reduction_ops.unbroadcast(grad, x._value.shape)
    gy = None if 1 in skip else reduction_ops.unbroadcast(grad, y._value.shape)
    return gx, gy


def subtract(x, y, name=None):
    """Elementwise ``x - y`` with NumPy broadcasting.

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the broadcast shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.subtract([3.0, 2.0], 1.0).numpy()
    array([2., 1.])
    """
    x, y = binary_operands(x, y, "subtract")
    z = wrap(_apply2(np.subtract, x, y, "subtract"))
    record_operation("Sub", (x, y), (z,))
    return z


@register_gradient("Sub")
def _sub_grad(op, grad):
    x, y = op.inputs
    skip = op.skip_input_indices
    gx = None if 0 in skip else reduction_ops.unbroadcast(grad, x._value.shape)
    gy = (
        None
        if 1 in skip
        else reduction_ops.unbroadcast(unary_ops.negative(grad), y._value.shape)
    )
    return gx, gy


def add_n(inputs, name=None):
    """Sum a list of tensors of one shape and dtype.

    Parameters
    ----------
    inputs : list of Tensor, Variable or array_like
        At least one; all of one shape and dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the inputs' shape and dtype.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.add_n([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).numpy()
    array([ 9., 12.])
    """
    if isinstance(inputs, (Tensor,)) or not isinstance(inputs, (list, tuple)):
        raise TypeError("add_n: inputs must be a list of tensors")
    if not inputs:
        raise InvalidArgumentError("add_n: inputs must not be empty")
    tensors = [as_tensor(t) for t in inputs]
    first = tensors[0]
    for k, t in enumerate(tensors[1:], 1):
        if t.dtype != first.dtype or t.shape != first.shape:
            raise InvalidArgumentError(
                f"add_n: inputs[{k}] has shape {t.shape} and dtype {t.dtype}, "
                f"inputs[0] has {first.shape} and {first.dtype}"
            )
    _check_result("add_n", ("inputs",), tensors)
    xp = backend.get_array_module(*(t._value for t in tensors))
    out = first._value.copy()
    for t in tensors[1:]:
        xp.add(out, t._value, out=out)
    z = wrap(out)
    record_operation("AddN", tuple(tensors), (z,))
    return z


@register_gradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


# -- multiply / divide -----------------------------------------------------------------


def multiply(x, y, name=None):
    """Elementwise ``x * y`` with NumPy broadcasting.

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the broadcast shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.multiply([1.0, 2.0], 3.0).numpy()
    array([3., 6.])
    """
    x, y = binary_operands(x, y, "multiply")
    z = wrap(_apply2(np.multiply, x, y, "multiply"))
    record_operation("Mul", (x, y), (z,))
    return z


@register_gradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    skip = op.skip_input_indices
    grad = array_ops.densify(grad)
    gx = (
        None
        if 0 in skip
        else reduction_ops.unbroadcast(multiply(grad, y), x._value.shape)
    )
    gy = (
        None
        if 1 in skip
        else reduction_ops.unbroadcast(multiply(grad, x), y._value.shape)
    )
    return gx, gy


def divide(x, y, name=None):
    """Elementwise true division ``x / y`` with NumPy broadcasting.

    Integer operands give float64 (as NumPy and ``tf.math.truediv`` do).

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the broadcast shape; float64 for integer operands.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.divide([1.0, 3.0], 2.0).numpy()
    array([0.5, 1.5])
    """
    x, y = binary_operands(x, y, "divide")
    if x._value.dtype.kind != "f":
        # float64 copies of both operands first (each may be a broadcast view)
        _check_result("divide", ("x", "y"), (x, y), np.float64, copies="all")
        x = wrap(x._value.astype(np.float64))
        y = wrap(y._value.astype(np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = wrap(_apply2(np.divide, x, y, "divide"))
    record_operation("RealDiv", (x, y), (z,))
    return z


@register_gradient("RealDiv")
def _real_div_grad(op, grad):
    x, y = op.inputs
    skip = op.skip_input_indices
    grad = array_ops.densify(grad)
    gx = (
        None
        if 0 in skip
        else reduction_ops.unbroadcast(divide(grad, y), x._value.shape)
    )
    gy = None
    if 1 not in skip:
        gy = reduction_ops.unbroadcast(
            multiply(grad, divide(divide(unary_ops.negative(x), y), y)), y._value.shape
        )
    return gx, gy


def pow(x, y, name=None):
    """Elementwise power ``x ** y`` with NumPy broadcasting.

    Floats are computed by :func:`sparsegrad.framework.elementwise.pow` (the C
    library's ``pow``, not NumPy's SIMD loop; float32 is correctly rounded, the
    same bits on every CPU), integers by ``np.power``.  The gradient with
    respect to `y` is ``x**y * log(x)`` where ``x > 0`` and 0 elsewhere (as in
    TensorFlow).

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the broadcast shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.pow([2.0, 3.0], 2.0).numpy()
    array([4., 9.])
    """
    x, y = binary_operands(x, y, "pow")
    if x._value.dtype.kind in "iu" and bool((y._value < 0).any()):
        raise InvalidArgumentError(
            "pow: integers to negative integer powers are not allowed"
        )
    if x._value.dtype.kind == "f":
        # the kernel reads both operands broadcast and contiguous
        _check_result("pow", ("x", "y"), (x, y), copies="strided")
        z = wrap(_elementwise.pow(x._value, y._value))  # checks the shapes
    else:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z = wrap(_apply2(np.power, x, y, "pow"))
    record_operation("Pow", (x, y), (z,))
    return z


@register_gradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs
    (z,) = op.outputs
    skip = op.skip_input_indices
    grad = array_ops.densify(grad)
    gx = gy = None
    if 0 not in skip:
        gx = reduction_ops.unbroadcast(
            multiply(grad, multiply(y, pow(x, subtract(y, 1)))), x._value.shape
        )
    if 1 not in skip:
        positive = greater(x, 0)
        safe_x = where(positive, x, 1)
        log_x = where(positive, unary_ops.log(safe_x), 0)
        gy = reduction_ops.unbroadcast(
            multiply(grad, multiply(z, log_x)), y._value.shape
        )
    return gx, gy


def maximum(x, y, name=None):
    """Elementwise maximum with NumPy broadcasting (NaN propagates).

    Where ``x == y`` the gradient goes to `x`.

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the broadcast shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.maximum([1.0, 5.0], 3.0).numpy()
    array([3., 5.])
    """
    x, y = binary_operands(x, y, "maximum")
    z = wrap(_apply2(np.maximum, x, y, "maximum"))
    record_operation("Maximum", (x, y), (z,))
    return z


def minimum(x, y, name=None):
    """Elementwise minimum with NumPy broadcasting (NaN propagates).

    Where ``x == y`` the gradient goes to `x`.

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the broadcast shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.minimum([1.0, 5.0], 3.0).numpy()
    array([1., 3.])
    """
    x, y = binary_operands(x, y, "minimum")
    z = wrap(_apply2(np.minimum, x, y, "minimum"))
    record_operation("Minimum", (x, y), (z,))
    return z


def _min_max_grad(op, grad, select_x):
    x, y = op.inputs
    skip = op.skip_input_indices
    grad = array_ops.densify(grad)
    zeros = array_ops.zeros_like(grad)
    gx = (
        None
        if 0 in skip
        else reduction_ops.unbroadcast(where(select_x, grad, zeros), x._value.shape)
    )
    gy = (
        None
        if 1 in skip
        else reduction_ops.unbroadcast(where(select_x, zeros, grad), y._value.shape)
    )
    return gx, gy


@register_gradient("Maximum")
def _maximum_grad(op, grad):
    x, y = op.inputs
    return _min_max_grad(op, grad, greater_equal(x, y))


@register_gradient("Minimum")
def _minimum_grad(op, grad):
    x, y = op.inputs
    return _min_max_grad(op, grad, less_equal(x, y))


# -- where -----------------------------------------------------------------------------


def where(condition, x=None, y=None, name=None):
    """Pick from `x` where `condition` is true and from `y` elsewhere.

    The three arguments broadcast together (NumPy rules).  With `x` and `y`
    both None, return the coordinates of the true elements instead: an int64
    Tensor of shape ``(n_true, condition.ndim)``.

    Parameters
    ----------
    condition : Tensor or array_like
        bool (numbers are converted: nonzero is true).
    x, y : Tensor, Variable or array_like, optional
        The values to pick from; give both or neither.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the broadcast shape of the three arguments; with `x` and `y`
        None, the int64 coordinates of the true elements.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.where([True, False], [1.0, 2.0], [10.0, 20.0]).numpy()
    array([ 1., 20.])
    >>> sg.where([[True, False], [False, True]]).numpy()
    array([[0, 0],
           [1, 1]])
    """
    cond = as_tensor(condition, name="condition")
    if cond.dtype != np.bool_:
        if cond.dtype.kind not in "iuf":
            raise InvalidArgumentError(
                f"where: condition must be bool, got dtype {cond.dtype}"
            )
        # a broadcast view's bool copy
        check_allocation(copy_of(cond._value, "where: condition", np.bool_))
        cond = wrap(cond._value.astype(bool))
    if x is None and y is None:
        xp = backend.get_array_module(cond._value)
        return wrap(xp.argwhere(cond._value).astype(np.int64))
    if x is None or y is None:
        raise InvalidArgumentError("where: give both x and y, or neither")
    x, y = binary_operands(x, y, "where")
    _check_result("where", ("condition", "x", "y"), (cond, x, y), x._value.dtype)
    try:
        xp = backend.get_array_module(cond._value, x._value, y._value)
        z = wrap(xp.where(cond._value, x._value, y._value))
    except ValueError:
        raise InvalidArgumentError(
            f"where: shapes {cond.shape}, {x.shape} and {y.shape} do not broadcast"
        ) from None
    record_operation("SelectV2", (cond, x, y), (z,))
    return z


@register_gradient("SelectV2")
def _select_grad(op, grad):
    cond, x, y = op.inputs
    skip = op.skip_input_indices
    grad = array_ops.densify(grad)
    zeros = array_ops.zeros_like(grad)
    gx = (
        None
        if 1 in skip
        else reduction_ops.unbroadcast(where(cond, grad, zeros), x._value.shape)
    )
    gy = (
        None
        if 2 in skip
        else reduction_ops.unbroadcast(where(cond, zeros, grad), y._value.shape)
    )
    return None, gx, gy


# -- comparisons (no gradient) ---------------------------------------------------------


def _compare(ufunc, x, y, op_name):
    x, y = binary_operands(x, y, op_name)
    return wrap(_apply2(ufunc, x, y, op_name))


def equal(x, y, name=None):
    """Elementwise ``x == y``, a bool Tensor (no gradient).

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        bool, of the broadcast shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.equal([1.0, 2.0], 2.0).numpy()
    array([False,  True])
    """
    return _compare(np.equal, x, y, "equal")


def not_equal(x, y, name=None):
    """Elementwise ``x != y``, a bool Tensor (no gradient).

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        bool, of the broadcast shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.not_equal([1.0, 2.0], 2.0).numpy()
    array([ True, False])
    """
    return _compare(np.not_equal, x, y, "not_equal")


def less(x, y, name=None):
    """Elementwise ``x < y``, a bool Tensor (no gradient).

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        bool, of the broadcast shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.less([1.0, 2.0], 2.0).numpy()
    array([ True, False])
    """
    return _compare(np.less, x, y, "less")


def less_equal(x, y, name=None):
    """Elementwise ``x <= y``, a bool Tensor (no gradient).

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        bool, of the broadcast shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.less_equal([1.0, 3.0], 2.0).numpy()
    array([ True, False])
    """
    return _compare(np.less_equal, x, y, "less_equal")


def greater(x, y, name=None):
    """Elementwise ``x > y``, a bool Tensor (no gradient).

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        bool, of the broadcast shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.greater([1.0, 3.0], 2.0).numpy()
    array([False,  True])
    """
    return _compare(np.greater, x, y, "greater")


def greater_equal(x, y, name=None):
    """Elementwise ``x >= y``, a bool Tensor (no gradient).

    Parameters
    ----------
    x, y : Tensor, Variable or array_like
        A Python scalar or array_like operand adopts the dtype of the Tensor
        operand; two Tensors must have one dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        bool, of the broadcast shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.greater_equal([1.0, 2.0], 2.0).numpy()
    array([False,  True])
    """
    return _compare(np.greater_equal, x, y, "greater_equal")


# -- matmul ----------------------------------------------------------------------------


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """Matrix product of the last two axes, batched over the leading ones.

    Parameters
    ----------
    a : Tensor or array_like of shape (..., n, k)
    b : Tensor or array_like of shape (..., k, m)
        Leading (batch) axes broadcast as in NumPy.
    transpose_a, transpose_b : bool, default=False
        Use the transpose of the last two axes of `a` / `b`.
    name : str, optional
        Accepted for TensorFlow compatibility; not used.

    Returns
    -------
    Tensor of shape (..., n, m).

    Raises
    ------
    InvalidArgumentError
        If an operand has rank below 2, the dtypes differ, or the inner
        dimensions do not match.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.matmul([[1.0, 2.0]], [[3.0], [4.0]]).numpy()
    array([[11.]])
    """
    a, b = binary_operands(a, b, "matmul")
    for arg, t in (("a", a), ("b", b)):
        if t._value.ndim < 2:
            raise InvalidArgumentError(
                f"matmul: {arg} has shape {t.shape}; it needs rank >= 2"
            )
    # CuPy's matmul is cuBLAS: its own summation order, so GPU products may
    # differ from the CPU's in the last bits
    xp = backend.get_array_module(a._value, b._value)
    av = xp.swapaxes(a._value, -1, -2) if transpose_a else a._value
    bv = xp.swapaxes(b._value, -1, -2) if transpose_b else b._value
    if av.shape[-1] != bv.shape[-2]:
        raise InvalidArgumentError(
            f"matmul: inner dimensions do not match: a is {av.shape} and b is "
            f"{bv.shape} (after transpose_a={transpose_a}, transpose_b={transpose_b})"
        )
    try:
        batch = np.broadcast_shapes(av.shape[:-2], bv.shape[:-2])
    except ValueError:
        raise InvalidArgumentError(
            f"matmul: batch shapes of {a.shape} and {b.shape} do not broadcast"
        ) from None
    shape = batch + (av.shape[-2], bv.shape[-1])
    dtype = np.result_type(av.dtype, bv.dtype)
    check_allocation((shape, dtype, "matmul: a and b"))
    if xp is np:   # a large product in recycled memory
        out = np.matmul(av, bv, out=buffers.empty(shape, dtype))
    else:
        out = xp.matmul(av, bv)
    z = wrap(out)
    op_type = "MatMul" if a._value.ndim == 2 and b._value.ndim == 2 else "BatchMatMulV2"
    attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}
    record_operation(op_type, (a, b), (z,), attrs)
    return z


def _matmul_grad(op, grad):
    a, b = op.inputs
    ta = op.attrs["transpose_a"]
    tb = op.attrs["transpose_b"]
    skip = op.skip_input_indices
    g = array_ops.densify(grad)
    ga = gb = None
    if not ta and not tb:
        if 0 not in skip:
            ga = matmul(g, b, transpose_b=True)
        if 1 not in skip:
            gb = matmul(a, g, transpose_a=True)
    elif not ta and tb:
        if 0 not in skip:
            ga = matmul(g, b)
        if 1 not in skip:
            gb = matmul(g, a, transpose_a=True)
    elif ta and not tb:
        if 0 not in skip:
            ga = matmul(b, g, transpose_b=True)
        if 1 not in skip:
            gb = matmul(a, g)
    else:
        if 0 not in skip:
            ga = matmul(b, g, transpose_a=True, transpose_b=True)
        if 1 not in skip:
            gb = matmul(g, a, transpose_a=True, transpose_b=True)
    if ga is not None:
        ga = reduction_ops.unbroadcast(ga, a._value.shape)
    if gb is not None:
        gb = reduction_ops.unbroadcast(gb, b._value.shape)
    return ga, gb


register_gradient("MatMul")(_matmul_grad)
register_gradient("BatchMatMulV2")(_matmul_grad)
