"""``clip_by_value`` and its gradient."""


import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import register_gradient
from ...errors import InvalidArgumentError
from ...framework import buffers, sparse_rows
from ...framework.backend import backend_of
from ...framework.dtypes import check_numeric, is_kernel_float
from ...framework.tensor import Tensor, wrap
from ...framework.threads import get_num_threads
from ...framework.variable import Variable
from .. import array_ops, math_ops, reduction_ops
from .._clip_gpu import (
    onto_device_of,
)
from .._helpers import as_tensor, convert_like
from .rows import Rows

__all__ = ["clip_by_value"]


# -- clip_by_value -----------------------------------------------------------------


def _bound(value, x, arg):
    """A clip_by_value bound as a Tensor of t's dtype."""
    if isinstance(value, Variable):
        value = as_tensor(value)
    if x.dtype.kind in "iu":
        if isinstance(value, Tensor):
            kind = value._value.dtype.kind
        else:
            try:
                kind = np.asarray(value).dtype.kind
            except (TypeError, ValueError):
                kind = None
        if kind == "f":
            raise TypeError(
                f"clip_by_value: {arg}={value!r} is a float but t has integer dtype "
                f"{x.dtype}; pass integer bounds or cast t to a float dtype"
            )
    if isinstance(value, Tensor):
        if value._value.dtype != x.dtype:
            raise InvalidArgumentError(
                f"clip_by_value: {arg} has dtype {value._value.dtype} but t has "
                f"dtype {x.dtype}; a Tensor bound must have t's dtype"
            )
        return value
    return convert_like(value, x, "clip_by_value", arg)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Clip every element of `t` to ``[clip_value_min, clip_value_max]``.

    Computed as ``maximum(minimum(t, clip_value_max), clip_value_min)``: the
    upper bound first, so where ``clip_value_min > clip_value_max`` every
    element becomes `clip_value_min`.  NaN stays NaN; +-inf go to the bounds.
    For an IndexedSlices only the values are clipped, and an IndexedSlices over
    the same indices comes back.

    The gradient passes to `t` where ``clip_value_min <= t <= clip_value_max``
    (ties included), to `clip_value_max` where t is above it and to
    `clip_value_min` where ``minimum(t, clip_value_max)`` is below it; a NaN
    element passes its gradient to `clip_value_min`.  TensorFlow's rule.

    Parameters
    ----------
    t : Tensor, Variable, IndexedSlices or array_like
        Any real dtype (not bool).
    clip_value_min, clip_value_max : Tensor, Variable or array_like
        Scalars, or arrays that broadcast to t's shape (to the values' shape
        for an IndexedSlices) without enlarging it.  Python numbers and arrays
        adopt t's dtype; a Tensor must have t's dtype.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor or IndexedSlices
        A new array of t's shape and dtype (t is never modified).

    Raises
    ------
    TypeError
        If t has an integer dtype and a bound is a float.
    InvalidArgumentError
        If the bounds do not broadcast to t's shape, or would enlarge it; if a
        Tensor bound has another dtype; if t is bool or complex.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.clip_by_value([[-5.0, 2.0, 3.0], [4.0, 5.0, 6.0]], -4.4, 4.4).numpy()
    array([[-4.4,  2. ,  3. ],
           [ 4. ,  4.4,  4.4]])
    >>> s = sg.IndexedSlices([[-3.0, 9.0]], [4], dense_shape=(10, 2))
    >>> sg.clip_by_value(s, -1.0, 1.0).values.numpy()
    array([[-1.,  1.]])
    """
    rows = Rows(t, "t")
    x = rows.values
    check_numeric(x.dtype, "clip_by_value: t")
    if x.dtype.kind == "b":
        raise InvalidArgumentError("clip_by_value: t has dtype bool; expected a number")
    lo = _bound(clip_value_min, x, "clip_value_min")
    hi = _bound(clip_value_max, x, "clip_value_max")
    shape = x._value.shape
    try:
        out_shape = np.broadcast_shapes(shape, lo._value.shape, hi._value.shape)
    except ValueError:
        raise InvalidArgumentError(
            f"clip_by_value: Incompatible shapes: t {shape}, clip_value_min "
            f"{lo._value.shape}, clip_value_max {hi._value.shape}"
        ) from None
    if out_shape != shape:
        arg, bound = (
            ("clip_value_min", lo)
            if np.broadcast_shapes(shape, lo._value.shape) != shape
            else ("clip_value_max", hi)
        )
        raise InvalidArgumentError(
            f"clip_by_value: {arg} of shape {bound._value.shape} would broadcast t "
            f"of shape {shape} to {out_shape}; the bounds may broadcast to t's "
            "shape but not enlarge it"
        )
    z = wrap(_clipped_values(backend_of(x._value), x._value, lo._value, hi._value))
    record_operation("ClipByValue", (x, lo, hi), (z,))
    return rows.rewrap(z)


def _clipped_values(be, x, lo, hi):
    xp = be.xp
    if be.on_gpu:
        # host bounds (numbers, arrays) go to the device: they are arguments
        lo, hi = sparse_rows.as_array_of(xp, lo), sparse_rows.as_array_of(xp, hi)
    if not (x.size and is_kernel_float(x.dtype)):
        return xp.maximum(xp.minimum(x, hi), lo)

    def flat(bound):
        if bound.size == 1:
            return xp.ascontiguousarray(bound.reshape(1))
        return xp.ascontiguousarray(xp.broadcast_to(bound, x.shape)).reshape(-1)

    out = xp.empty(x.shape, x.dtype) if be.on_gpu else buffers.empty(
        x.shape, x.dtype)
    be.kernels("clip").clip_values(
        xp.ascontiguousarray(x).reshape(-1), flat(lo), flat(hi), out.reshape(-1),
        get_num_threads(),
    )
    return out


@register_gradient("ClipByValue")
def _clip_by_value_grad(op, grad):
    x, lo, hi = op.inputs
    xv = x._value
    be = backend_of(xv)
    xp = be.xp
    # host bounds beside device values went to the device in the forward too
    lov, hiv = sparse_rows.as_array_of(xp, lo._value), sparse_rows.as_array_of(
        xp, hi._value)
    with np.errstate(invalid="ignore"):
        # minimum(t, hi) passes its gradient to t where t <= hi (ties too), and
        # maximum(., lo) passes it on where minimum(t, hi) >= lo: a NaN element
        # fails both, so its gradient goes to clip_value_min.
        below_hi = xv <= hiv
        above_lo = xp.minimum(xv, hiv) >= lov
    grad = array_ops.densify(grad)
    zeros = array_ops.zeros_like(grad)
    skip = op.skip_input_indices
    gx = math_ops.where(below_hi & above_lo, grad, zeros)
    glo = None
    if 1 not in skip:
        glo = reduction_ops.unbroadcast(
            math_ops.where(~above_lo, grad, zeros), lov.shape
        )
        glo = wrap(onto_device_of(be, glo._value, lo._value))
    ghi = None
    if 2 not in skip:
        ghi = reduction_ops.unbroadcast(
            math_ops.where(~below_hi & above_lo, grad, zeros), hiv.shape
        )
        ghi = wrap(onto_device_of(be, ghi._value, hi._value))
    return gx, glo, ghi
