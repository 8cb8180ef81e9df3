"""cast, identity, stop_gradient and the constructors zeros_like, ones_like
and one_hot (never recorded: their outputs do not depend on values)."""

import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import no_gradient, register_gradient
from ...errors import InvalidArgumentError
from ...framework import dispatch
from ...framework.buffers import check_allocation
from ...framework.dtypes import check_numeric, is_floating
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import wrap
from .._helpers import as_tensor, backend_for, same_device

__all__ = [
    "cast",
    "identity",
    "one_hot",
    "ones_like",
    "stop_gradient",
    "zeros_like",
]


@dispatch.api
def cast(x, dtype, name=None):
    """Convert `x` to `dtype` (float to int truncates toward zero).

    The gradient flows only between floating dtypes.

    Parameters
    ----------
    x : Tensor, Variable or array_like
    dtype : str or numpy.dtype
        Any real or bool dtype, bfloat16 (``ml_dtypes.bfloat16`` or
        ``"bfloat16"``) included: a float rounds to the nearest value (ties
        to even), a NaN stays a NaN of its sign (a cast to bfloat16 gives
        its quiet NaN, as TensorFlow's).
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of the shape of `x` and dtype `dtype`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.cast([1.7, -1.7], "int32").numpy()
    array([ 1, -1], dtype=int32)
    """
    x = as_tensor(x, name="x")
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        raise InvalidArgumentError(f"cast: complex dtype {dtype} is not supported")
    check_numeric(dtype, "cast: dtype")
    if x._value.dtype == dtype:
        z = wrap(x._value.view())
    else:
        check_allocation((x.shape, dtype, "cast: x"))
        with np.errstate(invalid="ignore", over="ignore"):
            z = wrap(x._value.astype(dtype))
    record_operation("Cast", (x,), (z,))
    return z


@register_gradient("Cast")
def _cast_grad(op, grad):
    x = op.inputs[0]
    if not (is_floating(x._value.dtype) and is_floating(op.outputs[0]._value.dtype)):
        return None   # (bfloat16 counts as floating)
    if type(grad) is IndexedSlices:
        return IndexedSlices._from_trusted(
            cast(grad.values, x.dtype), grad.indices, grad.dense_shape
        )
    return cast(grad, x._value.dtype)


_VIEW_DOC = """{summary}

Parameters
----------
input : Tensor, Variable or array_like
name : str, optional
    Ignored (TensorFlow compatibility).

Returns
-------
Tensor
    A new Tensor with the value of `input`.

Examples
--------
>>> import sparsegrad as sg
{example}
"""


def _view_op(op_name, op_type, summary, example):
    """The public op `op_name`: a new Tensor viewing the value of its input,
    recorded as `op_type` (dispatching: :mod:`sparsegrad.framework.dispatch`)."""

    def view_op(input, name=None):
        x = as_tensor(input, name="input")
        z = wrap(x._value.view())
        record_operation(op_type, (x,), (z,))
        return z

    view_op.__name__ = view_op.__qualname__ = op_name
    view_op.__doc__ = _VIEW_DOC.format(summary=summary, example=example)
    return dispatch.api(view_op)


identity = _view_op(
    "identity", "Identity",
    "A new Tensor with the same value; gradients pass through unchanged.",
    ">>> sg.identity([1.0, 2.0]).numpy()\narray([1., 2.])")


@register_gradient("Identity")
def _identity_grad(op, grad):
    return grad


stop_gradient = _view_op(
    "stop_gradient", "StopGradient",
    "The value of `input`, through which no gradient flows.",
    ">>> x = sg.constant(3.0)\n"
    ">>> with sg.GradientTape() as tape:\n"
    "...     tape.watch(x)\n"
    "...     y = sg.stop_gradient(x * x) * x\n"
    ">>> tape.gradient(y, x)\n"
    "<sparsegrad.Tensor: shape=(), dtype=float64, numpy=9.0>")


no_gradient("StopGradient")


# -- constructors (never recorded: their outputs do not depend on values) -----------


_FILLED_DOC = """{what} of the shape (and dtype, unless given) of `input`.

Parameters
----------
input : Tensor, Variable or array_like
dtype : str or numpy.dtype, optional
    The dtype of the result; by default that of `input`.
name : str, optional
    Ignored (TensorFlow compatibility).

Returns
-------
Tensor
    {what} of the shape of `input`.

Examples
--------
>>> import sparsegrad as sg
>>> sg.{name}({args}).numpy()
{result}
"""


def _filled_like(op_name, what, args, result):
    """The public constructor `op_name`: `what` ("Zeros" or "Ones", made by the
    array module's function of that name) of the shape of its input."""

    def filled_like(input, dtype=None, name=None):
        x = as_tensor(input, name="input")
        dtype = x._value.dtype if dtype is None else dtype
        check_allocation((x.shape, dtype, f"{op_name}: input"))  # (a view's shape)
        return wrap(getattr(backend_for(x._value).xp, what.lower())(
            x._value.shape, dtype))

    filled_like.__name__ = filled_like.__qualname__ = op_name
    filled_like.__doc__ = _FILLED_DOC.format(what=what, name=op_name, args=args,
                                             result=result)
    return dispatch.api(filled_like)


zeros_like = _filled_like("zeros_like", "Zeros", "[1.0, 2.0]", "array([0., 0.])")
ones_like = _filled_like("ones_like", "Ones", "[[1, 2]]", "array([[1, 1]])")


def one_hot(
    indices, depth, on_value=None, off_value=None, axis=-1, dtype=None, name=None
):
    """One-hot encode integer `indices` along a new axis of size `depth`.

    Indices outside ``[0, depth)`` give a row of `off_value` (as in
    TensorFlow).  The result is float32 unless `dtype` or the on/off values
    say otherwise.  Not differentiable.

    Parameters
    ----------
    indices : Tensor or array_like
        Of an integer dtype.
    depth : int
        The size of the new axis (at least 0).
    on_value, off_value : scalar, optional
        The values of the hot and the other entries (1 and 0 by default).
    axis : int, default=-1
        Where the new axis goes.
    dtype : str or numpy.dtype, optional
        The dtype of the result.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of shape ``indices.shape`` with an axis of size `depth` inserted at
        `axis`.

    Raises
    ------
    InvalidArgumentError
        For non-integer indices, a bad `depth` or `axis`, or a result that
        needs more memory than the process may allocate.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.one_hot([0, 2, 5], 3).numpy()
    array([[1., 0., 0.],
           [0., 0., 1.],
           [0., 0., 0.]], dtype=float32)
    """
    idx = as_tensor(indices, name="indices")
    if idx.dtype.kind not in "iu":
        raise InvalidArgumentError(
            f"one_hot: indices must be integers, got dtype {idx.dtype}"
        )
    if not isinstance(depth, (int, np.integer)) or depth < 0:
        raise InvalidArgumentError(f"one_hot: depth must be an int >= 0, got {depth!r}")
    if dtype is None:
        for v in (on_value, off_value):
            if v is not None and hasattr(v, "dtype"):
                dtype = v.dtype
                break
        else:
            dtype = np.float32
    dtype = np.dtype(dtype)
    be = backend_for(idx._value)
    on, off = (v.astype(dtype) if backend_for(v).on_gpu else np.asarray(v, dtype)
               for v in (1 if on_value is None else on_value,
                         0 if off_value is None else off_value))
    ndim = idx._value.ndim + 1
    if not -ndim <= axis < ndim:
        raise InvalidArgumentError(
            f"one_hot: axis {axis} is out of range for rank {ndim}"
        )
    # the comparison, the result and, moved to another axis, its copy
    shape, moved = idx.shape + (int(depth),), axis % ndim != ndim - 1
    result = (shape, dtype, "one_hot: depth")
    check_allocation((shape, np.bool_, "one_hot: depth"), result,
                     result if moved else None)
    xp = be.xp
    hot = idx._value[..., None] == xp.arange(depth)
    out = xp.where(hot, same_device(on, idx._value, be),
                   same_device(off, idx._value, be)).astype(dtype, copy=False)
    if axis % ndim != ndim - 1:
        out = xp.moveaxis(out, -1, axis % ndim)
    return wrap(xp.ascontiguousarray(out))


