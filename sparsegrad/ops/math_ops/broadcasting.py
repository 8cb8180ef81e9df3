"""What the broadcasting binary ops share: the result's allocation check,
the ufunc call, the gradients summed back to each input's shape, and the
docstring text of their common parameters."""

import numpy as np

from ...autodiff.recording import record_operation
from ...errors import InvalidArgumentError
from ...framework import buffers, dispatch
from ...framework.backend import backend_of
from ...framework.buffers import UNCHECKED_BYTES, check_allocation
from ...framework.tensor import wrap
from ...framework.threads import get_num_threads, run_parts
from .._helpers import binary_operands
from ..array_ops.shapes import unbroadcast
from .unary import elementwise_doc

__all__ = [
    "apply_binary",
    "binary_doc",
    "binary_op",
    "check_result",
    "pooled_result",
    "result_dtype",
    "unbroadcast_pair",
]


# Operands whose sizes multiply to less than this make a result (and copies)
# too small for check_allocation to look at.
SMALL_PRODUCT = UNCHECKED_BYTES // 32


def check_result(op_name, names, operands, dtype=None, copies=None):
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
    if bound < SMALL_PRODUCT:
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


def result_dtype(ufunc, x, y):
    """The dtype `ufunc` gives for the values of Tensors `x` and `y`."""
    try:
        return ufunc.resolve_dtypes((x._value.dtype, y._value.dtype, None))[-1]
    except (TypeError, ValueError):
        return np.result_type(x._value.dtype, y._value.dtype)


def pooled_result(ufunc, x, y):
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
    return buffers.empty(shape, result_dtype(ufunc, x, y))


#: Bytes of a host result from which a binary ufunc runs on several threads
#: (NumPy's loops are single-threaded; each thread takes a band of rows).
PARALLEL_BYTES = 1 << 23


def _ufunc_in_bands(ufunc, xv, yv, out, n_threads):
    """``ufunc(xv, yv, out=out)`` in `n_threads` bands of out's first axis,
    side by side; each element is computed as NumPy computes it alone, so
    the bits are NumPy's for any count.  The floating-point error state of
    the calling thread holds in every band."""
    n = out.shape[0]
    edges = [n * k // n_threads for k in range(n_threads + 1)]
    errors = np.geterr()

    def band(a, b):
        xs = xv[a:b] if xv.ndim == out.ndim and xv.shape[0] == n else xv
        ys = yv[a:b] if yv.ndim == out.ndim and yv.shape[0] == n else yv

        def run():
            with np.errstate(**errors):
                ufunc(xs, ys, out=out[a:b])
        return run

    run_parts([band(a, b) for a, b in zip(edges[:-1], edges[1:])])
    return out


def apply_binary(ufunc, x, y, op_name, be=None):
    """`ufunc` (NumPy's, or CuPy's of that name for GPU operands) of the
    values of Tensors `x` and `y`, its result checked and, when large, in
    recycled memory (`be`: their backend, where the caller has chosen it)."""
    if x._value.size * y._value.size >= SMALL_PRODUCT:  # else: a small result
        check_result(op_name, ("x", "y"), (x, y),
                      lambda: result_dtype(ufunc, x, y))
    # NumPy's ufunc, or CuPy's of the same name for GPU operands
    if be is None:
        be = backend_of(x._value, y._value)
    if be.on_gpu:
        ufunc = getattr(be.xp, ufunc.__name__)
    try:
        out = None if be.on_gpu else pooled_result(ufunc, x, y)
        if out is None:
            return ufunc(x._value, y._value)
        if out.nbytes >= PARALLEL_BYTES and out.ndim and out.shape[0] > 1:
            n_threads = min(get_num_threads(), out.shape[0])
            if n_threads > 1:
                return _ufunc_in_bands(ufunc, x._value, y._value, out, n_threads)
        return ufunc(x._value, y._value, out=out)
    except ValueError as exc:
        raise InvalidArgumentError(
            f"{op_name}: shapes {x.shape} and {y.shape} do not broadcast ({exc})"
        ) from None



def unbroadcast_pair(op, grad_x, grad_y, first=0):
    """The gradients of the two broadcast operands ``op.inputs[first]`` and
    ``op.inputs[first + 1]``: ``grad_x()`` and ``grad_y()`` (called in that
    order, only for an input whose gradient is wanted) summed back to the
    operands' shapes; None for a skipped input."""
    x, y = op.inputs[first], op.inputs[first + 1]
    skip = op.skip_input_indices
    gx = None if first in skip else unbroadcast(grad_x(), x._value.shape)
    gy = None if first + 1 in skip else unbroadcast(grad_y(), y._value.shape)
    return gx, gy


_BINARY_PARAMETERS = """x, y : Tensor, Variable or array_like
    A Python scalar or array_like operand adopts the dtype of the Tensor
    operand; two Tensors must have one dtype."""

_RAISES = """
Raises
------
InvalidArgumentError
    If the dtypes differ or the shapes do not broadcast.
"""


def binary_doc(name, summary, args, result, returns="Of the broadcast shape.",
               raises=False):
    """The docstring of binary op `name`: `summary`, the shared parameters,
    `returns`, a Raises section if `raises`, and the example
    ``sg.name(args)`` printing `result`."""
    return elementwise_doc(name, summary, _BINARY_PARAMETERS, "Tensor\n    " + returns,
                           args, result, _RAISES if raises else "")


def binary_op(ufunc, op_type, op_name, doc):
    """The public binary op `op_name`: ``ufunc(x, y)`` of the converted
    operands (:func:`~sparsegrad.ops._helpers.binary_operands`), recorded as
    `op_type` (not recorded when it is None: a comparison), with docstring
    `doc`; dispatching (:func:`~sparsegrad.framework.dispatch.api`), so a
    RaggedTensor operand goes to its handler."""

    def op(x, y, name=None):
        x, y = binary_operands(x, y, op_name)
        z = wrap(apply_binary(ufunc, x, y, op_name))
        if op_type is not None:
            record_operation(op_type, (x, y), (z,))
        return z

    op.__name__ = op.__qualname__ = op_name
    op.__doc__ = doc
    return dispatch.api(op)
