"""Products of a ``scipy.sparse`` matrix with a dense Tensor.

``sparse_dense_matmul(a, b)`` is how a linear model over ``scipy.sparse``
features gets a sparse gradient: the gradient w.r.t. the dense weights `b`
touches only the rows of `b` that meet a stored entry of `a`, and is returned
as an :class:`~sparsegrad.IndexedSlices` computed in O(nnz x n_out).  The
sparse operand `a` is a constant (it gets no gradient).

With `b` on a GPU (a CuPy array), `a` stays a host ``scipy.sparse`` matrix (the
batch's features): each product copies its CSR arrays to the device, O(nnz),
and multiplies there with ``cupyx.scipy.sparse`` (cuSPARSE); the product and
the gradient's values and indices are CuPy arrays.
"""

import numpy as np
import scipy.sparse

from ..autodiff.recording import record_operation
from ..autodiff.registry import register_gradient
from ..errors import InvalidArgumentError
from ..framework import scipy_input
from ..framework.backend import backend_of
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import wrap
from . import array_ops
from ._helpers import as_borrowed_tensor, backend_of_arguments

__all__ = ["sparse_dense_matmul"]


def _checked(a):
    """`a`, a 2-D scipy.sparse matrix or array, with its structure checked
    (:mod:`sparsegrad.framework.scipy_input`)."""
    if not scipy_input.is_scipy_sparse(a):
        raise TypeError(
            f"sparse_dense_matmul: sp_a must be a scipy.sparse matrix or array, "
            f"got {type(a).__name__}; use matmul for dense operands"
        )
    return scipy_input.check(a, "sp_a", "sparse_dense_matmul", kinds="biuf")


def _private_csr(checked, dtype, buffers):
    """A private CSR copy of the checked matrix, values cast to `dtype` (the
    recorded op must not see later edits of the caller's matrix)."""
    indptr, indices, data, shape = checked.to_csr(*buffers)
    csr = scipy.sparse.csr_array(
        (data.astype(dtype, copy=True), indices.copy(), indptr.copy()), shape=shape
    )
    return csr


def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """Multiply a ``scipy.sparse`` matrix by a dense matrix: ``op(sp_a) @ op(b)``.

    ``op(x)`` is ``x.T`` when the matching `adjoint_*` flag is set (the
    adjoint of a real matrix is its transpose).

    Parameters
    ----------
    sp_a : scipy.sparse matrix or array of shape (m, k), or (k, m) with `adjoint_a`
        Any format (CSR, CSC, COO, BSR, DOK, LIL, DIA; matrix or array) and
        any real dtype; its values are cast to the dtype of `b`.  Its stored
        entries are read as they are: entries repeated at one place add up
        in the product (the matrix SciPy's ``toarray()`` shows), whatever the
        format.  A constant: it gets no gradient; the op keeps its own copy.
    b : Tensor, Variable or array_like of shape (k, n), or (n, k) with `adjoint_b`
        float32 or float64.
    adjoint_a, adjoint_b : bool, default=False
    name : str, optional
        Ignored.

    Returns
    -------
    Tensor of shape (m, n) and the dtype of `b`.

    Raises
    ------
    TypeError
        If `sp_a` is not a ``scipy.sparse`` matrix.
    InvalidArgumentError
        If either operand is not 2-D, the inner dimensions differ, `b` is
        not float32 or float64, `sp_a` holds complex values or is malformed
        (checked before any use: an ``indptr`` of the wrong length, not from
        0 or decreasing, index and value arrays of different lengths, an
        index outside the shape, e.g. ``sparse_dense_matmul:
        sp_a.indices[2] = 7 is not in [0, 4)``), or the product is larger
        than the memory the process has.

    Notes
    -----
    Without `adjoint_b` the gradient w.r.t. `b` is an
    :class:`~sparsegrad.IndexedSlices` over the rows of `b` whose index is a
    column of ``op(sp_a)`` holding a stored entry (sorted), with values
    ``op(sp_a)[:, cols].T @ grad``: cost O(nnz x n), independent of
    ``b.shape[0]``.  With `adjoint_b` the gradient is dense, of the shape of
    `b` (cost O(nnz x n + b.size)).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> import sparsegrad as sg
    >>> a = sp.csr_array([[1.0, 0.0, 0.0, 2.0], [0.0, 0.0, 0.0, 3.0]])
    >>> w = sg.Variable(np.ones((4, 2)))
    >>> with sg.GradientTape() as tape:
    ...     y = sg.sparse.sparse_dense_matmul(a, w)
    >>> y.numpy()
    array([[3., 3.],
           [3., 3.]])
    >>> g = tape.gradient(y, w)
    >>> g.indices.numpy(), g.values.numpy()
    (array([0, 3], dtype=int32), array([[1., 1.],
           [5., 5.]]))
    """
    del name
    # the one choice: b's device (sp_a is a host matrix; its CSR arrays are
    # copied to b's device for the product)
    be = backend_of_arguments(b)
    bt = as_borrowed_tensor(b, "b", be)  # an ndarray b is not copied
    if bt.dtype not in (np.float32, np.float64):
        raise InvalidArgumentError(
            f"sparse_dense_matmul: b must be float32 or float64, got dtype {bt.dtype}"
        )
    if bt.ndim != 2:
        raise InvalidArgumentError(
            f"sparse_dense_matmul: b must be 2-D, got shape {bt.shape}"
        )
    checked = _checked(sp_a)
    adjoint_a, adjoint_b = bool(adjoint_a), bool(adjoint_b)
    op_shape = checked.shape[::-1] if adjoint_a else checked.shape
    b_value = bt._value.T if adjoint_b else bt._value
    if op_shape[1] != b_value.shape[0]:
        raise InvalidArgumentError(
            f"sparse_dense_matmul: inner dimensions differ: op(sp_a) has shape "
            f"{op_shape} and op(b) has shape {b_value.shape} (sp_a of shape "
            f"{checked.shape}, adjoint_a={adjoint_a}; b of shape {bt.shape}, "
            f"adjoint_b={adjoint_b})"
        )
    what = f"sparse_dense_matmul: sp_a of shape {checked.shape}"
    buffers = [((checked.shape[1] + 1,), np.int64, what)] if adjoint_a else []
    if not be.on_gpu:  # the product, on the host
        buffers.append(((op_shape[0], b_value.shape[1]), bt.dtype,
                        f"sparse_dense_matmul: the product of {op_shape[0]} rows"))
    csr = _private_csr(checked, bt.dtype, buffers)
    if adjoint_a:
        csr = csr.T.tocsr()
    return _matmul(csr, bt, adjoint_b, be)


def _device_csr(csr):
    """A ``cupyx.scipy.sparse`` copy of host CSR array `csr` (cuSPARSE takes
    int32 indices)."""
    import cupy
    import cupyx.scipy.sparse

    if max(csr.shape) > _INT32_MAX or csr.nnz > _INT32_MAX:
        raise InvalidArgumentError(
            f"sparse_dense_matmul: on the GPU sp_a must have fewer than 2**31 "
            f"rows, columns and stored entries, got shape {csr.shape} and "
            f"{csr.nnz} entries"
        )
    arrays = (cupy.asarray(csr.data), cupy.asarray(csr.indices.astype(np.int32)),
              cupy.asarray(csr.indptr.astype(np.int32)))
    return cupyx.scipy.sparse.csr_matrix(arrays, shape=csr.shape)


_INT32_MAX = 2**31 - 1


def _matmul(csr, b, adjoint_b, be):
    """``csr @ op(b)`` for a validated CSR array of b's dtype; recorded (`be`:
    the backend of `b`)."""
    b_value = b._value.T if adjoint_b else b._value
    if be.on_gpu:
        out = be.xp.ascontiguousarray(
            _device_csr(csr) @ be.xp.ascontiguousarray(b_value))
    else:
        out = np.ascontiguousarray(np.asarray(csr @ b_value, dtype=b._value.dtype))
    if out.shape != (csr.shape[0], b_value.shape[1]):  # scipy never differs
        raise AssertionError("sparse product of unexpected shape")
    y = wrap(out)
    record_operation(
        "SparseDenseMatmul", (b,), (y,), {"a": csr, "adjoint_b": adjoint_b}
    )
    return y


def _touched_columns(csr):
    """The sorted distinct columns of `csr` holding a stored entry, and the
    transpose of `csr` restricted to them, as a CSR array of shape
    (n_cols_touched, m).  Cost O(nnz log nnz + m), independent of the number
    of columns."""
    cols, compact = np.unique(csr.indices, return_inverse=True)
    index_dtype = csr.indices.dtype
    narrow = scipy.sparse.csr_array(
        (csr.data, compact.astype(index_dtype, copy=False), csr.indptr),
        shape=(csr.shape[0], cols.size),
    )
    return cols.astype(index_dtype, copy=False), narrow.T.tocsr()


@register_gradient("SparseDenseMatmul")
def _sparse_dense_matmul_grad(op, grad):
    csr = op.get_attr("a")
    (b,) = op.inputs
    grad = array_ops.densify(grad)  # an IndexedSlices grad is densified (recorded)
    be = backend_of(grad._value)
    if op.get_attr("adjoint_b"):
        # y = A @ B.T  ->  dB = grad.T @ A = (A.T @ grad).T, dense.
        return array_ops.transpose(_matmul(csr.T.tocsr(), grad, False, be))
    cols, narrow_t = _touched_columns(csr)
    values = _matmul(narrow_t, grad, False, be)
    if be.on_gpu:
        cols = be.asarray(cols)       # the indices live with the values
    return IndexedSlices._from_trusted(values, wrap(cols), b.shape)
