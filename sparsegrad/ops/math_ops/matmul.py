"""matmul (batched over leading axes) and its gradient."""

import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import register_gradient
from ...errors import InvalidArgumentError
from ...framework import buffers
from ...framework.backend import backend_of
from ...framework.buffers import check_allocation
from ...framework.tensor import wrap
from .._helpers import binary_operands
from ..array_ops import densify
from ..array_ops.shapes import unbroadcast

__all__ = ["matmul"]


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
    be = backend_of(a._value, b._value)
    xp = be.xp
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
    if not be.on_gpu:   # a large product in recycled memory
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
    g = densify(grad)
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
        ga = unbroadcast(ga, a._value.shape)
    if gb is not None:
        gb = unbroadcast(gb, b._value.shape)
    return ga, gb


register_gradient("MatMul")(_matmul_grad)
register_gradient("BatchMatMulV2")(_matmul_grad)
