"""Averaging gradients across the ranks of a data-parallel job.

:func:`allreduce_gradients` combines every rank's gradients into the same
result on every rank.  A dense gradient is summed with
:func:`~sparsegrad.distributed.comm.ordered_sum`.  An
:class:`~sparsegrad.IndexedSlices` stays sparse: each rank first sums its
own repeated rows (an embedding lookup of a Zipf-distributed batch repeats
its popular ids many times; Horovod sends every repeat), the distinct rows
of all ranks are gathered (``Allgatherv``) and summed again per row, in rank
order.  When the gathered rows would outweigh the table itself, the
gradient goes through a dense sum instead and comes back as an
IndexedSlices over the same rows, with the same values.
"""

import numbers

import numpy as np

from ..errors import InvalidArgumentError
from ..framework import sparse_rows
from ..framework.dtypes import is_kernel_float
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, convert_to_tensor, wrap
from ..framework.variable import Variable
from . import comm as mpi
from .registry import sharded_mask

__all__ = ["allreduce_gradients", "exchange"]

_REDUCTIONS = ("mean", "sum")
# bytes of one index in the exchange (int64)
_INDEX_BYTES = 8


def _check_options(reduction, threshold):
    if reduction not in _REDUCTIONS:
        raise InvalidArgumentError(
            f"allreduce_gradients: reduction must be 'mean' or 'sum', got "
            f"{reduction!r}")
    if threshold is None:
        return
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) \
            or not threshold >= 0:
        raise InvalidArgumentError(
            "allreduce_gradients: sparse_as_dense_threshold must be None or a "
            f"number >= 0, got {threshold!r}")


def _check_fits(grad_shape, dtype, var, k):
    """A gradient of `grad_shape` and `dtype` must fit variable `var`."""
    if var is None:
        return
    if not isinstance(var, Variable):
        raise TypeError(f"allreduce_gradients: variables[{k}] must be a Variable, "
                        f"got {type(var).__name__}")
    if tuple(grad_shape) != tuple(var.shape) or dtype != var.dtype:
        raise InvalidArgumentError(
            f"allreduce_gradients: grads[{k}] (shape {tuple(grad_shape)}, {dtype}) "
            f"does not fit variables[{k}] {var.name!r} (shape {tuple(var.shape)}, "
            f"{var.dtype})")


def _local(grad, k, sharded, var=None):
    """This rank's gradient `k`, checked: ``(kind, array(s), signature)``.

    kind is "none", "sharded", "dense" or "sparse" (then the arrays are the
    distinct indices, sorted, and their summed rows).  The signature is what
    the ranks must agree on.
    """
    where = f"grads[{k}]"
    if grad is None:
        return "none", None, ("none",)
    if sharded:
        if not isinstance(grad, IndexedSlices):
            grad = convert_to_tensor(grad)
        shape = grad.dense_shape if isinstance(grad, IndexedSlices) else grad.shape
        _check_fits(var.shape if shape is None else shape, grad.dtype, var, k)
        return "sharded", grad, ("sharded",)
    if isinstance(grad, IndexedSlices):
        shape = grad.dense_shape
        if shape is None:
            raise InvalidArgumentError(
                f"allreduce_gradients: {where} is an IndexedSlices without a "
                "dense_shape; the number of rows is needed to combine it")
        dtype = grad.dtype
        _check_fits(shape, dtype, var, k)
        if not is_kernel_float(dtype) and dtype != np.float16:
            raise InvalidArgumentError(
                f"allreduce_gradients: {where} has dtype {dtype}; expected a float "
                "dtype")
        indices = mpi.to_host(grad.indices._value).astype(np.int64, copy=False)
        values = mpi.to_host(grad.values._value)
        unique, summed = sparse_rows.deduplicate(indices, values,
                                                 max_index=shape[0] - 1)
        return "sparse", (unique, summed), ("sparse", tuple(shape), dtype.name,
                                            unique.shape[0])
    if isinstance(grad, Variable):
        grad = grad.value()
    if not isinstance(grad, Tensor):
        try:
            grad = convert_to_tensor(grad)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"allreduce_gradients: {where} is not a tensor: {exc}") from None
    value = grad._value
    if value.dtype.kind != "f":
        raise InvalidArgumentError(
            f"allreduce_gradients: {where} has dtype {value.dtype}; expected a "
            "float dtype")
    _check_fits(value.shape, value.dtype, var, k)
    return "dense", mpi.to_host(value), ("dense", tuple(value.shape),
                                         value.dtype.name)


def _agree(signatures, size):
    """The common description of gradient k from every rank's signature, or
    an InvalidArgumentError (raised on every rank alike: all ranks hold the
    same signatures)."""
    agreed = []
    for k in range(len(signatures[0])):
        seen = [sig[k] for sig in signatures]
        kinds = {s[0] for s in seen} - {"none"}
        if "sharded" in kinds and kinds != {"sharded"}:
            raise InvalidArgumentError(
                f"allreduce_gradients: grads[{k}] is the gradient of a sharded "
                "variable on some ranks and not on others")
        described = [s for s in seen if s[0] in ("dense", "sparse")]
        shapes = {s[1] for s in described}
        dtypes = {s[2] for s in described}
        if len(shapes) > 1 or len(dtypes) > 1:
            ranks = ", ".join(f"rank {r}: {s[1]} {s[2]}" for r, s in enumerate(seen)
                              if s[0] in ("dense", "sparse"))
            raise InvalidArgumentError(
                f"allreduce_gradients: grads[{k}] differs in shape or dtype across "
                f"ranks ({ranks})")
        if not kinds:
            agreed.append(("none",))
        elif kinds == {"sharded"}:
            agreed.append(("sharded",))
        else:
            rows = [s[3] if s[0] == "sparse" else None for s in seen]
            kind = "sparse" if kinds == {"sparse"} else "dense"
            agreed.append((kind, shapes.pop(), np.dtype(dtypes.pop()), rows))
    return agreed


def _use_dense(shape, dtype, rows, size, threshold):
    """Whether a sparse gradient goes through the dense sum."""
    total = sum(r for r in rows if r is not None)
    if threshold is not None:
        return total > threshold * shape[0]
    row_bytes = dtype.itemsize * int(np.prod(shape[1:], dtype=np.int64))
    # bytes each rank receives: the others' rows, or 2 (p - 1) / p of the table
    gathered = total * (row_bytes + _INDEX_BYTES) * (size - 1) / size
    dense = 2 * shape[0] * row_bytes * (size - 1) / size
    return gathered > dense


def allreduce_gradients(grads, comm=None, *, variables=None, reduction="mean",
                        sparse_as_dense_threshold=None):
    """Combine every rank's gradients into the same result on every rank.

    A collective call: every rank of `comm` passes its own gradients of the
    same variables, in the same order.

    Parameters
    ----------
    grads : list or tuple
        Dense gradients (Tensors, Variables, array_likes),
        :class:`~sparsegrad.IndexedSlices` (with a ``dense_shape``) or None.
        A None on some ranks counts as zeros there.  The ranks must agree on
        each gradient's shape and dtype; one may pass an IndexedSlices where
        another passes a dense gradient.
    comm : mpi4py.MPI.Intracomm, optional
        Default ``MPI.COMM_WORLD``.
    variables : list of Variable, optional
        The variables of `grads`, one each; each gradient must have its
        variable's shape and dtype.  The gradient of a sharded
        variable (:func:`~sparsegrad.distributed.is_sharded`, the ``shard``
        of a :class:`~sparsegrad.distributed.ShardedEmbedding`) is already
        complete on this rank; it is not exchanged, only divided by the
        number of ranks for ``reduction="mean"``.  Without `variables`,
        every gradient is exchanged.
    reduction : {"mean", "sum"}, default "mean"
        "mean" divides the sum over the ranks by their number: the gradient of
        the mean of the ranks' losses (the gradient of the concatenated batch
        when every rank's loss is its batch mean and the batches are of one
        size).  "sum" keeps the sum: for batches of different sizes, make each
        rank's loss its sum divided by the global batch size.
    sparse_as_dense_threshold : float, optional
        An IndexedSlices goes through a dense sum when the distinct rows of
        all ranks together (a row counted once per rank that has it) exceed
        this fraction of the table's rows.  Default: when gathering those rows
        would move more bytes than a dense sum of the table.  ``0`` always
        sums densely, ``float("inf")`` never does.

    Returns
    -------
    list
        One entry per gradient: a Tensor for a dense gradient, an
        IndexedSlices for a sparse one (sorted, distinct indices: the rows
        some rank touched; on every rank the same bits, whichever path was
        taken), None where every rank passed None.  Values are summed in rank
        order, then divided for "mean".  CuPy gradients come back on the
        device; they travel through host memory.

    Raises
    ------
    InvalidArgumentError
        On every rank, if any rank passes a bad gradient (not a float tensor,
        an IndexedSlices without ``dense_shape`` or with out-of-range
        indices, a gradient that does not fit its variable), or the ranks
        disagree on a gradient's shape, dtype or on
        the number of gradients, or an option is bad.
    TypeError
        If `comm` is not an mpi4py intracommunicator.
    ImportError
        If mpi4py is not installed.

    Examples
    --------
    In a job of one rank (``python``, no ``mpiexec``), the sum of the
    repeated rows is the result:

    >>> import numpy as np
    >>> import sparsegrad as sg
    >>> from sparsegrad.distributed import allreduce_gradients
    >>> g = sg.IndexedSlices(np.ones((3, 2), np.float32), [4, 1, 4],
    ...                      dense_shape=(10, 2))
    >>> dense, sparse = allreduce_gradients([np.float32([1.0, 2.0]), g])
    >>> dense.numpy(), sparse.indices.numpy(), sparse.values.numpy()[:, 0]
    (array([1., 2.], dtype=float32), array([1, 4]), array([1., 2.], dtype=float32))
    """
    def parse():
        if isinstance(grads, (str, bytes)) or not isinstance(grads, (list, tuple)):
            raise TypeError(f"allreduce_gradients: grads must be a list or tuple, "
                            f"got {type(grads).__name__}")
        return grads, variables

    return exchange(mpi.resolve(comm), parse, reduction, sparse_as_dense_threshold)[0]


def exchange(comm, parse, reduction, sparse_as_dense_threshold):
    """:func:`allreduce_gradients` for callers with checks of their own.

    ``parse()`` runs inside the checks that every rank agrees on, and returns
    ``(grads, variables or None)``; whatever it raises is raised on every
    rank.  Returns ``(combined gradients, variables, their sharded mask)``.
    """
    size = comm.Get_size()
    kept = []  # this rank's checked gradients: only their signatures travel

    def check():
        _check_options(reduction, sparse_as_dense_threshold)
        grads, variables = parse()
        mask, var_list = [False] * len(grads), [None] * len(grads)
        if variables is not None:
            var_list = list(variables)
            if len(var_list) != len(grads):
                raise InvalidArgumentError(
                    f"allreduce_gradients: {len(var_list)} variables for "
                    f"{len(grads)} gradients")
            mask = sharded_mask(var_list)
        local = [_local(g, k, s, v)
                 for k, (g, s, v) in enumerate(zip(grads, mask, var_list))]
        kept.extend((grads, None if variables is None else var_list, mask, local))
        return [sig for _, _, sig in local]

    signatures = mpi.checked_allgather(comm, check)
    grads, variables, mask, local = kept
    if len({len(s) for s in signatures}) > 1:
        counts = ", ".join(f"rank {r}: {len(s)}" for r, s in enumerate(signatures))
        raise InvalidArgumentError(
            f"allreduce_gradients: the ranks pass different numbers of gradients "
            f"({counts})")
    agreed = _agree(signatures, size)
    out = [None] * len(agreed)
    dense_jobs = []  # (k, host array to sum, how to finish it)
    for k, ((kind, arrays, _), spec) in enumerate(zip(local, agreed)):
        like = grads[k] if kind != "none" else None
        if spec[0] == "none":
            continue
        if spec[0] == "sharded":
            out[k] = _scaled(arrays, reduction, size)
            continue
        shape, dtype, rows = spec[1], spec[2], spec[3]
        if spec[0] == "sparse" and not _use_dense(shape, dtype, rows, size,
                                                  sparse_as_dense_threshold):
            out[k] = _sparse_sum(comm, arrays, shape, dtype, rows, reduction, size,
                                 like)
            continue
        dense = np.zeros(shape, dtype)
        rows_here = None
        if kind == "dense":
            dense[...] = arrays
        elif kind == "sparse":
            dense[arrays[0]] = arrays[1]    # distinct indices: a plain store
        if spec[0] == "sparse":  # every rank's is, or None
            rows_here = arrays[0] if kind == "sparse" else np.empty(0, np.int64)
        dense_jobs.append((k, dense, rows_here, like))
    _dense_sums(comm, dense_jobs, out, reduction, size)
    return out, variables, mask


def _device_of(like, host):
    """`host` on the device of the gradient `like` came from."""
    if isinstance(like, IndexedSlices):
        like = like.values._value
    elif isinstance(like, (Tensor, Variable)):
        like = like._value if isinstance(like, Tensor) else like.value()._value
    return mpi.like(like, host) if like is not None else host


def _divide(values, reduction, size):
    if reduction == "sum" or size == 1:
        return values
    return values / values.dtype.type(size)


def _scaled(grad, reduction, size):
    """A sharded variable's gradient, divided for "mean"."""
    if reduction == "sum" or size == 1:
        return grad
    if isinstance(grad, IndexedSlices):
        return grad / size
    return wrap(_divide(grad._value, reduction, size))


def _sparse_sum(comm, arrays, shape, dtype, rows, reduction, size, like):
    """Allgatherv of every rank's distinct rows, summed per row in rank order."""
    row_shape = tuple(shape[1:])
    if arrays is None:     # None on this rank: no rows
        arrays = (np.empty(0, np.int64), np.empty((0,) + row_shape, dtype))
    counts = [0 if r is None else r for r in rows]
    indices = mpi.allgatherv(comm, arrays[0], counts)
    values = mpi.allgatherv(comm, arrays[1].astype(dtype, copy=False), counts)
    unique, summed = sparse_rows.deduplicate(indices, values, max_index=shape[0] - 1)
    summed = _divide(summed, reduction, size)
    return IndexedSlices._from_trusted(
        wrap(_device_of(like, summed)), wrap(_device_of(like, unique)), shape)


def _dense_sums(comm, jobs, out, reduction, size):
    """Sum the dense buffers of `jobs` over the ranks, one exchange per dtype.

    A job is ``(k, dense buffer, rows or None, like)``: for a sparse gradient
    summed densely, `rows` are this rank's rows, and the result is an
    IndexedSlices over the rows any rank has."""
    touched = _touched_rows(comm, [(k, d.shape[0], rows) for k, d, rows, _ in jobs
                                   if rows is not None])
    by_dtype = {}
    for job in jobs:
        by_dtype.setdefault(job[1].dtype, []).append(job)
    for group in by_dtype.values():
        flat = np.concatenate([d.reshape(-1) for _, d, _, _ in group])
        total = _divide(mpi.ordered_sum(comm, flat), reduction, size)
        offset = 0
        for k, dense, rows, like in group:
            value = total[offset: offset + dense.size].reshape(dense.shape)
            offset += dense.size
            if rows is None:
                out[k] = wrap(_device_of(like, value))
                continue
            rows = touched[k]
            out[k] = IndexedSlices._from_trusted(
                wrap(_device_of(like, value[rows])), wrap(_device_of(like, rows)),
                dense.shape)


def _touched_rows(comm, jobs):
    """``{k: the rows any rank has, sorted}`` for the jobs ``(k, n_rows,
    this rank's rows)``: one exchange of a byte per row."""
    if not jobs:
        return {}
    flat = np.zeros(sum(n for _, n, _ in jobs), np.uint8)
    offset = 0
    for _, n, rows in jobs:
        flat[offset + rows] = 1
        offset += n
    union = mpi.logical_or(comm, flat)
    touched, offset = {}, 0
    for k, n, _ in jobs:
        touched[k] = np.flatnonzero(union[offset: offset + n])
        offset += n
    return touched
