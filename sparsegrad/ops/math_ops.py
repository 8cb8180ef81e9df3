"""Elementwise math, reductions and matmul, each with its gradient below it.

Every op converts its arguments (a Python scalar or array_like operand adopts
the dtype of the Tensor operand), computes with NumPy, wraps the result and
calls ``record_operation`` once when a tape is active.  Binary ops broadcast
as NumPy does; their gradients sum back to each input's shape.  Gradients are
written with these same ops, so they are differentiable again.

The transcendental functions of floats (exp, log, log1p, tanh, sigmoid, pow)
come from :mod:`sparsegrad.framework.elementwise` (the same bits on every CPU), not from
NumPy's ufuncs, whose SIMD paths give different bits on different CPUs.
"""

import numpy as np

from ..autodiff.registry import register_gradient
from ..autodiff.tape import _STATE, _record
from ..errors import InvalidArgumentError
from ..framework import elementwise as _elementwise
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor
from ._helpers import as_tensor, binary_operands, dense_gradient, normalize_axis, wrap

__all__ = [
    "abs",
    "add",
    "add_n",
    "divide",
    "equal",
    "exp",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "log",
    "log1p",
    "matmul",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "not_equal",
    "pow",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_sum",
    "rsqrt",
    "sigmoid",
    "sign",
    "sqrt",
    "square",
    "subtract",
    "tanh",
    "where",
]

_builtin_abs = abs
_builtin_pow = pow


def _record1(op_type, x, z):
    tapes = _STATE.tapes
    if tapes:
        _record(op_type, (x,), (z,), None, None, tapes)


def _record2(op_type, x, y, z):
    tapes = _STATE.tapes
    if tapes:
        _record(op_type, (x, y), (z,), None, None, tapes)


def _check_float(x, op_name):
    if x._value.dtype.kind != "f":
        raise InvalidArgumentError(
            f"{op_name}: x has dtype {x.dtype}; {op_name} needs a floating dtype "
            "(use sg.cast)"
        )


def _unbroadcast(grad, shape):
    """Sum `grad` (of the broadcast shape) back to `shape`."""
    if type(grad) is IndexedSlices:
        if grad.dense_shape == shape:
            return grad
        grad = dense_gradient(grad)
    gshape = grad._value.shape
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    axes = list(range(lead))
    for i, n in enumerate(shape):
        if n == 1 and gshape[lead + i] != 1:
            axes.append(lead + i)
    if axes:
        grad = reduce_sum(grad, axes)
    if grad._value.shape != shape:
        from .array_ops import reshape

        grad = reshape(grad, shape)
    return grad


_dense = dense_gradient


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
    _record2("AddV2", x, y, z)
    return z


def _apply2(ufunc, x, y, op_name):
    try:
        return ufunc(x._value, y._value)
    except ValueError as exc:
        raise InvalidArgumentError(
            f"{op_name}: shapes {x.shape} and {y.shape} do not broadcast ({exc})"
        ) from None


@register_gradient("AddV2")
def _add_grad(op, grad):
    x, y = op.inputs
    skip = op.skip_input_indices
    gx = None if 0 in skip else _unbroadcast(grad, x._value.shape)
    gy = None if 1 in skip else _unbroadcast(grad, y._value.shape)
    return gx, gy


def subtract(x, y, name=None):
    """Elementwise ``x - y`` with NumPy broadcasting.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.subtract([3.0, 2.0], 1.0).numpy()
    array([2., 1.])
    """
    x, y = binary_operands(x, y, "subtract")
    z = wrap(_apply2(np.subtract, x, y, "subtract"))
    _record2("Sub", x, y, z)
    return z


@register_gradient("Sub")
def _sub_grad(op, grad):
    x, y = op.inputs
    skip = op.skip_input_indices
    gx = None if 0 in skip else _unbroadcast(grad, x._value.shape)
    gy = None if 1 in skip else _unbroadcast(negative(grad), y._value.shape)
    return gx, gy


def add_n(inputs, name=None):
    """Sum a list of tensors of one shape and dtype.

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
    out = np.array(first._value, copy=True)
    for t in tensors[1:]:
        np.add(out, t._value, out=out)
    z = wrap(out)
    tapes = _STATE.tapes
    if tapes:
        _record("AddN", tuple(tensors), (z,), None, None, tapes)
    return z


@register_gradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


# -- multiply / divide -----------------------------------------------------------------


def multiply(x, y, name=None):
    """Elementwise ``x * y`` with NumPy broadcasting.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.multiply([1.0, 2.0], 3.0).numpy()
    array([3., 6.])
    """
    x, y = binary_operands(x, y, "multiply")
    z = wrap(_apply2(np.multiply, x, y, "multiply"))
    _record2("Mul", x, y, z)
    return z


@register_gradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    skip = op.skip_input_indices
    grad = _dense(grad)
    gx = None if 0 in skip else _unbroadcast(multiply(grad, y), x._value.shape)
    gy = None if 1 in skip else _unbroadcast(multiply(grad, x), y._value.shape)
    return gx, gy


def divide(x, y, name=None):
    """Elementwise true division ``x / y`` with NumPy broadcasting.

    Integer operands give float64 (as NumPy and ``tf.math.truediv`` do).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.divide([1.0, 3.0], 2.0).numpy()
    array([0.5, 1.5])
    """
    x, y = binary_operands(x, y, "divide")
    if x._value.dtype.kind != "f":
        x = wrap(x._value.astype(np.float64))
        y = wrap(y._value.astype(np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = wrap(_apply2(np.divide, x, y, "divide"))
    _record2("RealDiv", x, y, z)
    return z


@register_gradient("RealDiv")
def _real_div_grad(op, grad):
    x, y = op.inputs
    skip = op.skip_input_indices
    grad = _dense(grad)
    gx = None if 0 in skip else _unbroadcast(divide(grad, y), x._value.shape)
    gy = None
    if 1 not in skip:
        gy = _unbroadcast(
            multiply(grad, divide(divide(negative(x), y), y)), y._value.shape
        )
    return gx, gy


def pow(x, y, name=None):
    """Elementwise power ``x ** y`` with NumPy broadcasting.

    Floats are computed by :func:`sparsegrad.framework.elementwise.pow` (the C
    library's ``pow``, not NumPy's SIMD loop; float32 is correctly rounded, the
    same bits on every CPU), integers by ``np.power``.  The gradient with
    respect to `y` is ``x**y * log(x)`` where ``x > 0`` and 0 elsewhere (as in
    TensorFlow).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.pow([2.0, 3.0], 2.0).numpy()
    array([4., 9.])
    """
    x, y = binary_operands(x, y, "pow")
    if x._value.dtype.kind in "iu" and np.any(y._value < 0):
        raise InvalidArgumentError(
            "pow: integers to negative integer powers are not allowed"
        )
    if x._value.dtype.kind == "f":
        z = wrap(_elementwise.pow(x._value, y._value))  # checks the shapes
    else:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z = wrap(_apply2(np.power, x, y, "pow"))
    _record2("Pow", x, y, z)
    return z


@register_gradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs
    (z,) = op.outputs
    skip = op.skip_input_indices
    grad = _dense(grad)
    gx = gy = None
    if 0 not in skip:
        gx = _unbroadcast(
            multiply(grad, multiply(y, pow(x, subtract(y, 1)))), x._value.shape
        )
    if 1 not in skip:
        positive = greater(x, 0)
        safe_x = where(positive, x, 1)
        log_x = where(positive, log(safe_x), 0)
        gy = _unbroadcast(multiply(grad, multiply(z, log_x)), y._value.shape)
    return gx, gy


def maximum(x, y, name=None):
    """Elementwise maximum with NumPy broadcasting (NaN propagates).

    Where ``x == y`` the gradient goes to `x`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.maximum([1.0, 5.0], 3.0).numpy()
    array([3., 5.])
    """
    x, y = binary_operands(x, y, "maximum")
    z = wrap(_apply2(np.maximum, x, y, "maximum"))
    _record2("Maximum", x, y, z)
    return z


def minimum(x, y, name=None):
    """Elementwise minimum with NumPy broadcasting (NaN propagates).

    Where ``x == y`` the gradient goes to `x`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.minimum([1.0, 5.0], 3.0).numpy()
    array([1., 3.])
    """
    x, y = binary_operands(x, y, "minimum")
    z = wrap(_apply2(np.minimum, x, y, "minimum"))
    _record2("Minimum", x, y, z)
    return z


def _min_max_grad(op, grad, select_x):
    x, y = op.inputs
    skip = op.skip_input_indices
    grad = _dense(grad)
    zeros = zeros_like_dense(grad)
    gx = (
        None
        if 0 in skip
        else _unbroadcast(where(select_x, grad, zeros), x._value.shape)
    )
    gy = (
        None
        if 1 in skip
        else _unbroadcast(where(select_x, zeros, grad), y._value.shape)
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


def zeros_like_dense(t):
    return wrap(np.zeros(t._value.shape, t._value.dtype))


# -- unary ---------------------------------------------------------------------------


def _unary(x, op_name):
    if type(x) is not Tensor:
        x = as_tensor(x, name="x")
    return x


def negative(x, name=None):
    """Elementwise ``-x``.  An IndexedSlices gives an IndexedSlices.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.negative([1.0, -2.0]).numpy()
    array([-1.,  2.])
    """
    if type(x) is IndexedSlices:
        return IndexedSlices._from_trusted(negative(x.values), x.indices, x.dense_shape)
    x = _unary(x, "negative")
    z = wrap(np.negative(x._value))
    _record1("Neg", x, z)
    return z


@register_gradient("Neg")
def _neg_grad(op, grad):
    return negative(grad)


def square(x, name=None):
    """Elementwise ``x * x``.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.square([2.0, -3.0]).numpy()
    array([4., 9.])
    """
    x = _unary(x, "square")
    z = wrap(np.square(x._value))
    _record1("Square", x, z)
    return z


@register_gradient("Square")
def _square_grad(op, grad):
    (x,) = op.inputs
    return multiply(_dense(grad), multiply(x, 2))


def sqrt(x, name=None):
    """Elementwise square root (NaN for negative input).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.sqrt([4.0, 9.0]).numpy()
    array([2., 3.])
    """
    x = _unary(x, "sqrt")
    _check_float(x, "sqrt")
    with np.errstate(invalid="ignore"):
        z = wrap(np.sqrt(x._value))
    _record1("Sqrt", x, z)
    return z


@register_gradient("Sqrt")
def _sqrt_grad(op, grad):
    return _sqrt_grad_op(op.outputs[0], _dense(grad))


def _sqrt_grad_op(y, g):
    """``g * 0.5 / y``, the gradient of sqrt given its output `y` (op SqrtGrad)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = wrap(g._value * (0.5 / y._value))
    _record2("SqrtGrad", y, g, z)
    return z


@register_gradient("SqrtGrad")
def _sqrt_grad_grad(op, grad):
    y = op.inputs[0]
    (z,) = op.outputs
    grad = _dense(grad)
    gy = negative(multiply(grad, divide(z, y)))
    gg = _sqrt_grad_op(y, grad)
    return gy, gg


def rsqrt(x, name=None):
    """Elementwise ``1 / sqrt(x)`` (computed exactly, not TF's float32 estimate).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.rsqrt([4.0, 16.0]).numpy()
    array([0.5 , 0.25])
    """
    x = _unary(x, "rsqrt")
    _check_float(x, "rsqrt")
    with np.errstate(divide="ignore", invalid="ignore"):
        z = wrap(1 / np.sqrt(x._value))
    _record1("Rsqrt", x, z)
    return z


@register_gradient("Rsqrt")
def _rsqrt_grad(op, grad):
    return _rsqrt_grad_op(op.outputs[0], _dense(grad))


def _rsqrt_grad_op(y, g):
    """``-0.5 * g * y**3``, the gradient of rsqrt given its output (RsqrtGrad)."""
    y_value = y._value
    z = wrap((g._value * y_value * y_value * y_value) * np.asarray(-0.5, y_value.dtype))
    _record2("RsqrtGrad", y, g, z)
    return z


@register_gradient("RsqrtGrad")
def _rsqrt_grad_grad(op, grad):
    y, g = op.inputs
    grad = _dense(grad)
    gy = multiply(multiply(grad, g), multiply(square(y), -1.5))
    gg = _rsqrt_grad_op(y, grad)
    return gy, gg


def exp(x, name=None):
    """Elementwise ``e ** x``.

    Computed by :func:`sparsegrad.framework.elementwise.exp`, not NumPy's
    SIMD loop: the same bits on every CPU (float32 within 0.99 ulp).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.exp([0.0]).numpy()
    array([1.])
    """
    x = _unary(x, "exp")
    _check_float(x, "exp")
    z = wrap(_elementwise.exp(x._value))
    _record1("Exp", x, z)
    return z


@register_gradient("Exp")
def _exp_grad(op, grad):
    return multiply(_dense(grad), op.outputs[0])


def log(x, name=None):
    """Elementwise natural logarithm (``-inf`` at 0, NaN below).

    Computed by :func:`sparsegrad.framework.elementwise.log`, as :func:`exp`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.log([1.0]).numpy()
    array([0.])
    """
    x = _unary(x, "log")
    _check_float(x, "log")
    z = wrap(_elementwise.log(x._value))
    _record1("Log", x, z)
    return z


@register_gradient("Log")
def _log_grad(op, grad):
    return divide(_dense(grad), op.inputs[0])


def log1p(x, name=None):
    """Elementwise ``log(1 + x)``, accurate for small `x`.

    Computed by :func:`sparsegrad.framework.elementwise.log1p`, as :func:`exp`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.log1p([0.0]).numpy()
    array([0.])
    """
    x = _unary(x, "log1p")
    _check_float(x, "log1p")
    z = wrap(_elementwise.log1p(x._value))
    _record1("Log1p", x, z)
    return z


@register_gradient("Log1p")
def _log1p_grad(op, grad):
    return divide(_dense(grad), add(op.inputs[0], 1))


def abs(x, name=None):
    """Elementwise absolute value; the gradient at 0 is 0.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.abs([-1.5, 2.0]).numpy()
    array([1.5, 2. ])
    """
    x = _unary(x, "abs")
    z = wrap(np.abs(x._value))
    _record1("Abs", x, z)
    return z


@register_gradient("Abs")
def _abs_grad(op, grad):
    return multiply(_dense(grad), sign(op.inputs[0]))


def sign(x, name=None):
    """Elementwise sign (-1, 0 or 1; NaN stays NaN).

    Its gradient is zero everywhere (TensorFlow registers zeros, not None).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.sign([-2.0, 0.0, 3.0]).numpy()
    array([-1.,  0.,  1.])
    """
    x = _unary(x, "sign")
    z = wrap(np.sign(x._value))
    _record1("Sign", x, z)
    return z


@register_gradient("Sign")
def _sign_grad(op, grad):
    return zeros_like_dense(op.inputs[0])


def tanh(x, name=None):
    """Elementwise hyperbolic tangent.

    Computed by :func:`sparsegrad.framework.elementwise.tanh`, as :func:`exp`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.tanh([0.0]).numpy()
    array([0.])
    """
    x = _unary(x, "tanh")
    _check_float(x, "tanh")
    z = wrap(_elementwise.tanh(x._value))
    _record1("Tanh", x, z)
    return z


@register_gradient("Tanh")
def _tanh_grad(op, grad):
    return _tanh_grad_op(op.outputs[0], _dense(grad))


def _tanh_grad_op(y, g):
    """``g * (1 - y**2)`` for the output `y` of tanh (op TanhGrad)."""
    y_value = y._value
    z = wrap(g._value * (1 - y_value * y_value))
    _record2("TanhGrad", y, g, z)
    return z


@register_gradient("TanhGrad")
def _tanh_grad_grad(op, grad):
    y, g = op.inputs
    grad = _dense(grad)
    gy = multiply(multiply(grad, g), multiply(y, -2))
    gg = _tanh_grad_op(y, grad)
    return gy, gg


def sigmoid(x, name=None):
    """Elementwise logistic function ``1 / (1 + exp(-x))``, without overflow.

    ``exp`` is :func:`sparsegrad.framework.elementwise.exp` (as in :func:`exp`);
    float16 input is computed in float32 and rounded once.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.sigmoid([0.0]).numpy()
    array([0.5])
    """
    x = _unary(x, "sigmoid")
    _check_float(x, "sigmoid")
    # 1 / (1 + exp(-x)), full relative precision for very negative x.  -x is
    # capped where exp would overflow: below the cap the result is already
    # smaller than the dtype's smallest normal number.
    v = x._value
    half = v.dtype.char == "e"
    if half:  # float16's range is too small for the cap: compute in float32
        v = v.astype(np.float32)
    e = _elementwise.exp(np.minimum(np.negative(v), _EXP_CAP[v.dtype.char]))
    e += 1
    out = np.reciprocal(e, out=e)
    z = wrap(out.astype(np.float16) if half else out)
    _record1("Sigmoid", x, z)
    return z


# largest argument whose exp is finite, per dtype character
_EXP_CAP = {
    "f": np.float32(88.0),
    "d": np.float64(709.0),
    "g": np.longdouble(11356.0),
}


@register_gradient("Sigmoid")
def _sigmoid_grad(op, grad):
    return _sigmoid_grad_op(op.outputs[0], _dense(grad))


def _sigmoid_grad_op(y, g):
    """``g * y * (1 - y)`` for the output `y` of sigmoid (op SigmoidGrad)."""
    y_value = y._value
    z = wrap(g._value * (y_value * (1 - y_value)))
    _record2("SigmoidGrad", y, g, z)
    return z


@register_gradient("SigmoidGrad")
def _sigmoid_grad_grad(op, grad):
    y, g = op.inputs
    grad = _dense(grad)
    gy = multiply(multiply(grad, g), subtract(1, multiply(y, 2)))
    gg = _sigmoid_grad_op(y, grad)
    return gy, gg


# -- where -----------------------------------------------------------------------------


def where(condition, x=None, y=None, name=None):
    """Pick from `x` where `condition` is true and from `y` elsewhere.

    The three arguments broadcast together (NumPy rules).  With `x` and `y`
    both None, return the coordinates of the true elements instead: an int64
    Tensor of shape ``(n_true, condition.ndim)``.

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
        cond = wrap(cond._value.astype(bool))
    if x is None and y is None:
        return wrap(np.argwhere(cond._value).astype(np.int64))
    if x is None or y is None:
        raise InvalidArgumentError("where: give both x and y, or neither")
    x, y = binary_operands(x, y, "where")
    try:
        z = wrap(np.where(cond._value, x._value, y._value))
    except ValueError:
        raise InvalidArgumentError(
            f"where: shapes {cond.shape}, {x.shape} and {y.shape} do not broadcast"
        ) from None
    tapes = _STATE.tapes
    if tapes:
        _record("SelectV2", (cond, x, y), (z,), None, None, tapes)
    return z


@register_gradient("SelectV2")
def _select_grad(op, grad):
    cond, x, y = op.inputs
    skip = op.skip_input_indices
    grad = _dense(grad)
    zeros = zeros_like_dense(grad)
    gx = None if 1 in skip else _unbroadcast(where(cond, grad, zeros), x._value.shape)
    gy = None if 2 in skip else _unbroadcast(where(cond, zeros, grad), y._value.shape)
    return None, gx, gy


# -- comparisons (no gradient) ---------------------------------------------------------


def _compare(ufunc, x, y, op_name):
    x, y = binary_operands(x, y, op_name)
    return wrap(_apply2(ufunc, x, y, op_name))


def equal(x, y, name=None):
    """Elementwise ``x == y``, a bool Tensor (no gradient).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.equal([1.0, 2.0], 2.0).numpy()
    array([False,  True])
    """
    return _compare(np.equal, x, y, "equal")


def not_equal(x, y, name=None):
    """Elementwise ``x != y``, a bool Tensor (no gradient).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.not_equal([1.0, 2.0], 2.0).numpy()
    array([ True, False])
    """
    return _compare(np.not_equal, x, y, "not_equal")


def less(x, y, name=None):
    """Elementwise ``x < y``, a bool Tensor (no gradient).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.less([1.0, 2.0], 2.0).numpy()
    array([ True, False])
    """
    return _compare(np.less, x, y, "less")


def less_equal(x, y, name=None):
    """Elementwise ``x <= y``, a bool Tensor (no gradient).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.less_equal([1.0, 3.0], 2.0).numpy()
    array([ True, False])
    """
    return _compare(np.less_equal, x, y, "less_equal")


def greater(x, y, name=None):
    """Elementwise ``x > y``, a bool Tensor (no gradient).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.greater([1.0, 3.0], 2.0).numpy()
    array([False,  True])
    """
    return _compare(np.greater, x, y, "greater")


def greater_equal(x, y, name=None):
    """Elementwise ``x >= y``, a bool Tensor (no gradient).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.greater_equal([1.0, 2.0], 2.0).numpy()
    array([False,  True])
    """
    return _compare(np.greater_equal, x, y, "greater_equal")


# -- reductions ------------------------------------------------------------------------


def _reduce(np_fn, x, axis, keepdims, op_type, op_name):
    x = as_tensor(x, name="input_tensor")
    axes = normalize_axis(axis, x._value.ndim, op_name)
    value = x._value
    if op_type in ("Max", "Min") and any(value.shape[a] == 0 for a in axes):
        raise InvalidArgumentError(
            f"{op_name}: cannot reduce an empty axis of shape {x.shape}"
        )
    if op_type == "Sum":
        out = np.sum(value, axis=axes, keepdims=bool(keepdims), dtype=value.dtype)
    elif op_type == "Mean":
        if value.dtype.kind in "iu":
            out = np.mean(value, axis=axes, keepdims=bool(keepdims)).astype(value.dtype)
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                out = np.mean(
                    value, axis=axes, keepdims=bool(keepdims), dtype=value.dtype
                )
    else:
        out = np_fn(value, axis=axes, keepdims=bool(keepdims))
    z = wrap(np.asarray(out))
    tapes = _STATE.tapes
    if tapes:
        _record(
            op_type, (x,), (z,), {"axis": axes, "keepdims": bool(keepdims)}, None, tapes
        )
    return z


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over `axis` (all axes by default).

    Parameters
    ----------
    input_tensor : Tensor, Variable or array_like
    axis : int, sequence of int or None, default=None
        Negative axes count from the end.
    keepdims : bool, default=False
        Keep the reduced axes with size 1.

    Returns
    -------
    Tensor of the input's dtype.

    Raises
    ------
    InvalidArgumentError
        If an axis is out of range or repeated.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.reduce_sum([[1.0, 2.0], [3.0, 4.0]], axis=0).numpy()
    array([4., 6.])
    """
    return _reduce(np.sum, input_tensor, axis, keepdims, "Sum", "reduce_sum")


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over `axis` (all axes by default); integer input stays integer.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.reduce_mean([[1.0, 2.0], [3.0, 4.0]], axis=1).numpy()
    array([1.5, 3.5])
    """
    return _reduce(np.mean, input_tensor, axis, keepdims, "Mean", "reduce_mean")


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """Maximum over `axis`; tied maxima share the gradient equally.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.reduce_max([[1.0, 5.0], [3.0, 4.0]], axis=0).numpy()
    array([3., 5.])
    """
    return _reduce(np.max, input_tensor, axis, keepdims, "Max", "reduce_max")


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """Minimum over `axis`; tied minima share the gradient equally.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.reduce_min([[1.0, 5.0], [3.0, 4.0]], axis=0).numpy()
    array([1., 4.])
    """
    return _reduce(np.min, input_tensor, axis, keepdims, "Min", "reduce_min")


def _kept_shape(op):
    shape = op.inputs[0]._value.shape
    axes = op.attrs["axis"]
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _restore(op, grad):
    """`grad` of the reduced output, reshaped so it broadcasts to the input."""
    from .array_ops import reshape

    kept = _kept_shape(op)
    grad = _dense(grad)
    if grad._value.shape != kept:
        grad = reshape(grad, kept)
    return grad


@register_gradient("Sum")
def _sum_grad(op, grad):
    from .array_ops import broadcast_to

    return broadcast_to(_restore(op, grad), op.inputs[0]._value.shape)


@register_gradient("Mean")
def _mean_grad(op, grad):
    from .array_ops import broadcast_to

    x = op.inputs[0]
    count = 1
    for a in op.attrs["axis"]:
        count *= x._value.shape[a]
    scaled = divide(_restore(op, grad), max(count, 1) * 1.0)
    return broadcast_to(scaled, x._value.shape)


def _min_max_reduce_grad(op, grad):
    from .array_ops import cast, reshape

    x = op.inputs[0]
    y = op.outputs[0]
    kept = _kept_shape(op)
    y_kept = y if y._value.shape == kept else reshape(y, kept)
    indicators = cast(equal(y_kept, x), x.dtype)
    n_selected = reduce_sum(indicators, op.attrs["axis"], keepdims=True)
    return multiply(divide(indicators, n_selected), _restore(op, grad))


register_gradient("Max")(_min_max_reduce_grad)
register_gradient("Min")(_min_max_reduce_grad)


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
    av = np.swapaxes(a._value, -1, -2) if transpose_a else a._value
    bv = np.swapaxes(b._value, -1, -2) if transpose_b else b._value
    if av.shape[-1] != bv.shape[-2]:
        raise InvalidArgumentError(
            f"matmul: inner dimensions do not match: a is {av.shape} and b is "
            f"{bv.shape} (after transpose_a={transpose_a}, transpose_b={transpose_b})"
        )
    try:
        out = np.matmul(av, bv)
    except ValueError:
        raise InvalidArgumentError(
            f"matmul: batch shapes of {a.shape} and {b.shape} do not broadcast"
        ) from None
    z = wrap(out)
    tapes = _STATE.tapes
    if tapes:
        op_type = (
            "MatMul" if a._value.ndim == 2 and b._value.ndim == 2 else "BatchMatMulV2"
        )
        attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}
        _record(op_type, (a, b), (z,), attrs, None, tapes)
    return z


def _matmul_grad(op, grad):
    a, b = op.inputs
    ta = op.attrs["transpose_a"]
    tb = op.attrs["transpose_b"]
    skip = op.skip_input_indices
    g = _dense(grad)
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
        ga = _unbroadcast(ga, a._value.shape)
    if gb is not None:
        gb = _unbroadcast(gb, b._value.shape)
    return ga, gb


register_gradient("MatMul")(_matmul_grad)
register_gradient("BatchMatMulV2")(_matmul_grad)
