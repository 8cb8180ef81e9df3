"""The scatter-add of rows and :func:`densify`, the one way a gradient that
may be an IndexedSlices becomes a dense Tensor (recorded while a tape
records, so that the dense form can be differentiated again).
"""

from ...autodiff.recording import (
    current_gradient_op,
    is_recording,
    record_operation,
)
from ...autodiff.registry import register_gradient
from ...errors import InvalidArgumentError
from ...framework import buffers, sparse_rows
from ...framework.backend import backend_of
from ...framework.buffers import check_allocation
from ...framework.densify_warning import warn_densify
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import Tensor, wrap
from .._helpers import as_borrowed_tensor, as_tensor
from .rows import gather_checked, index_tensor

__all__ = ["densify", "tensor_scatter_add"]


def tensor_scatter_add(tensor, indices, updates, name=None):
    """A copy of `tensor` with the rows ``updates[k]`` added at ``indices[k]``.

    Repeated indices accumulate.  This is how a sparse gradient meets a dense
    one while a tape records the gradient computation; cost O(size of
    `tensor`) for the copy.

    Parameters
    ----------
    tensor : Tensor of shape (n_rows, ...)
    indices : array_like of shape (nnz,), int32 or int64, in ``[0, n_rows)``
    updates : Tensor of shape (nnz, ...), the dtype of `tensor`
    name : str, optional
        Accepted for TensorFlow compatibility; not used.

    Returns
    -------
    Tensor
        Of the shape and dtype of `tensor`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.tensor_scatter_add([[0.0], [0.0]], [1, 1], [[1.0], [2.0]]).numpy()
    array([[0.],
           [3.]])
    """
    x = as_tensor(tensor, name="tensor")
    idx = as_tensor(indices, name="indices")
    values = as_tensor(updates, name="updates")
    if values.dtype != x.dtype:
        if isinstance(updates, (Tensor, IndexedSlices)):
            raise InvalidArgumentError(
                f"tensor_scatter_add: updates has dtype {values.dtype}, tensor has "
                f"{x.dtype}"
            )
        values = wrap(values._value.astype(x.dtype))
    if x._value.ndim == 0:
        raise InvalidArgumentError("tensor_scatter_add: tensor must have rank >= 1")
    index_array = sparse_rows.as_index_array(idx._value, "indices")
    sparse_rows.check_in_range(index_array, x._value.shape[0], "indices")
    if values._value.shape != index_array.shape + x._value.shape[1:]:
        raise InvalidArgumentError(
            f"tensor_scatter_add: updates has shape {values.shape}, expected "
            f"{index_array.shape + x.shape[1:]}"
        )
    xp = backend_of(x._value, values._value).xp
    check_allocation((x.shape, x.dtype, "tensor_scatter_add: tensor"),
                     buffers.copy_of(values._value, "tensor_scatter_add: updates"))
    out = x._value.copy()
    sparse_rows.scatter_add(out, index_array, xp.ascontiguousarray(values._value))
    z = wrap(out)
    record_operation("TensorScatterAdd", (x, idx, values), (z,))
    return z


@register_gradient("TensorScatterAdd")
def _tensor_scatter_add_grad(op, grad):
    _, idx, _ = op.inputs
    skip = op.skip_input_indices
    gu = None
    if 2 not in skip:   # gather(grad, idx): rows of the gradient
        rows, idx = as_borrowed_tensor(grad, "params"), index_tensor(idx)
        gu = gather_checked(rows, idx, 0, backend_of(rows._value, idx._value))
    return grad, None, gu


def densify(grad, op_name=None):
    """A gradient as a dense Tensor: an IndexedSlices is densified.

    Rows of repeated indices are summed.  While a tape records (a gradient
    being differentiated again) the dense form is built with
    :func:`tensor_scatter_add`, so the outer tape sees how it depends on the
    rows; otherwise with :meth:`IndexedSlices.to_dense
    <sparsegrad.IndexedSlices.to_dense>`.  The two give the same bits.  Cost
    O(dense size) for an IndexedSlices; a Tensor is returned as it is.  A
    large IndexedSlices (see :func:`~sparsegrad.set_densify_warning_threshold`)
    gets a :class:`~sparsegrad.errors.DensifyWarning` naming the op, once per
    op type.

    Parameters
    ----------
    grad : Tensor, IndexedSlices or array_like
    op_name : str, optional
        What needs the dense value, for the warning; by default the gradient
        of the op whose gradient function runs now.

    Returns
    -------
    Tensor

    Raises
    ------
    ValueError
        If `grad` is an IndexedSlices without a dense_shape.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> g = sg.IndexedSlices([[1.0], [2.0]], [1, 1], dense_shape=(3, 1))
    >>> from sparsegrad.ops.array_ops import densify
    >>> densify(g).numpy()
    array([[0.],
           [3.],
           [0.]])
    """
    if type(grad) is Tensor:
        return grad
    if isinstance(grad, IndexedSlices):
        shape = grad.dense_shape
        if shape is None:
            raise ValueError(
                f"densifying needs the dense_shape of the IndexedSlices, which is "
                f"None: {grad!r}"
            )
        if op_name is None:
            op_type = current_gradient_op()
            op_name = "densify" if op_type is None else f"gradient of {op_type}"
        warn_densify(shape, op_name)
        if is_recording():
            dense = (shape, grad.dtype, f"{op_name}: dense_shape")
            check_allocation(dense, dense)       # zeros, and their updated copy
            zeros = wrap(backend_of(grad.values._value).xp.zeros(shape, grad.dtype))
            return tensor_scatter_add(zeros, grad.indices, grad.values)
        return grad.to_dense()
    return as_tensor(grad)
