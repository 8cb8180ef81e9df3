"""``global_norm``, ``clip_by_global_norm`` (optionally across ranks) and
their gradients, and TensorFlow's scale ``global_norm_scale``."""

import math

import numpy as np

from ...autodiff.recording import record_operation
from ...errors import InvalidArgumentError
from ...framework.tensor import Tensor, wrap
from ...framework.variable import Variable
from .._clip_gpu import (
    device_global_scale,
    device_norm,
    device_scaled,
    onto_device_of,
)
from .._helpers import as_tensor
from ..collective_ops import check_sharded, norm_across_ranks
from .rows import (
    FLOATS,
    as_list,
    dense,
    rows_batches,
    rows_sum_of_squares,
    scalar_norm_arg,
    scaled,
)

__all__ = ["global_norm", "global_norm_scale", "clip_by_global_norm"]


# -- global_norm -------------------------------------------------------------------


def _global_norm(be, entries, dtype):
    """``(norm as a 0-d array of dtype, float64 norm)`` of a list of Rows
    (for CuPy entries both 0-d device arrays)."""
    if be.on_gpu:
        norm, total = device_norm(be, rows_batches(be, entries), dtype)
        return norm, be.xp.sqrt(total)  # math.sqrt's bits
    norm64 = math.sqrt(rows_sum_of_squares(be, entries))
    with np.errstate(over="ignore"):  # past a half type's range: inf
        return np.asarray(norm64, dtype), norm64


def _norm_input_grads(be, entries, g_norm, norm64):
    """Gradients w.r.t. every entry's values of the global norm, times g_norm:
    ``g_norm * r / norm`` (r: the represented row of each value row)."""
    grads = []
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for rows in entries:
            rep, row_group = rows.represented(be)
            r = rep if row_group is None else rep[row_group]
            grads.append(g_norm * r / norm64)
    return grads


def global_norm(t_list, name=None):
    """The L2 norm of all the tensors of a list together.

    ``sqrt(sum of the squares of every element)``, accumulated in float64 (the same
    bits for any thread count) and rounded once to the tensors' dtype.  Half
    tensors (float16, bfloat16) are converted to float32 exactly for the sum (a
    large dense one piece by piece, never as a whole float32 copy), so their
    norm too is the wide norm rounded once: inf only when that norm exceeds the
    half type's range (TensorFlow, which sums the squares in the half type,
    gives a float16 inf once the norm passes 256).  The result has the tensors'
    dtype, as in TensorFlow, which also refuses a list of mixed dtypes.  `None`
    entries are skipped; an empty list (or only `None`) gives 0.0 as float32.
    An IndexedSlices counts as the tensor it represents: rows of a repeated
    index are summed before squaring (TensorFlow squares the raw values, so it
    counts a row hit k times as the sum of k squared norms; the two agree when
    the indices are distinct).  The coalesced rows are never written out.  The
    gradient is ``t / global_norm`` (NaN when the norm is 0, as in TensorFlow).

    Parameters
    ----------
    t_list : list or tuple
        Tensors, Variables, IndexedSlices, array_likes or None, all of one
        float dtype (float16, bfloat16, float32 or float64).
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        A 0-d Tensor of the tensors' dtype.

    Raises
    ------
    TypeError
        If `t_list` is not a list or tuple (a Tensor, a dict, a generator, a
        string).
    InvalidArgumentError
        If an entry is not float16/bfloat16/float32/float64, or the entries'
        dtypes differ.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsegrad as sg
    >>> sg.global_norm([np.array([3.0, 0.0]), None, np.array([[4.0]])]).numpy()
    array(5.)
    >>> s = sg.IndexedSlices(np.array([[3.0], [4.0]]), [0, 0], dense_shape=(2, 1))
    >>> sg.global_norm([s]).numpy()  # the row [3 + 4]
    array(7.)
    """
    entries, dtype, be = as_list(t_list, "global_norm")
    present = [r for r in entries if r is not None]
    norm, norm64 = _global_norm(be, present, dtype or np.dtype(np.float32))
    z = wrap(norm)

    def grad_fn(grad):
        g_norm = dense(be, grad, norm).astype(np.float64)
        return tuple(
            wrap(d.astype(r.values._value.dtype))
            for d, r in zip(_norm_input_grads(be, present, g_norm, norm64), present)
        )

    record_operation(
        "GlobalNorm", tuple(r.values for r in present), (z,), grad_fn=grad_fn
    )
    return z


# -- clip_by_global_norm -----------------------------------------------------------


def global_norm_scale(norm, clip_norm):
    """TensorFlow's clip-by-global-norm scale, in the dtype of `norm`.

    ``clip_norm * minimum(1 / norm, 1 / clip_norm) + (norm - norm)``: at most
    1 when everything is finite and positive, NaN when the norm is inf or NaN
    (so that every clipped tensor becomes NaN), 1 when the norm is 0.

    Parameters
    ----------
    norm, clip_norm : 0-d ndarray
        Of one float dtype.

    Returns
    -------
    0-d ndarray
        The scale, in that dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.ops.clip_ops import global_norm_scale
    >>> float(global_norm_scale(np.float32(5.0), np.float32(4.0)))
    0.800000011920929
    """
    one = np.asarray(1, norm.dtype)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return np.asarray(
            clip_norm * np.minimum(one / norm, one / clip_norm) + (norm - norm),
            norm.dtype,
        )


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None, *, comm=None,
                        sharded=None):
    """Scale a list of tensors so that their global norm is at most `clip_norm`.

    Every tensor is multiplied by one scale,
    ``clip_norm * minimum(1 / global_norm, 1 / clip_norm)``, i.e.
    ``clip_norm / maximum(global_norm, clip_norm)``, computed in the norm's
    dtype with TensorFlow's formula (so a negative `clip_norm` gives a scale
    of 1, and an infinite or NaN global norm makes every output entirely NaN).
    Each tensor is then multiplied by the scale cast to its dtype, every
    product rounded once to that dtype (TensorFlow's ``t * cast(scale,
    t.dtype)``).  For half tensors (float16, bfloat16) the norm is the wide
    norm rounded once (:func:`global_norm`), the scale is computed from it in
    the half type as TensorFlow computes it (each operation rounded to the
    half type), and each element's product with it is rounded once.
    `None` entries stay `None`; an IndexedSlices comes back as an
    IndexedSlices over the same indices.  The global norm is that of
    :func:`global_norm` (IndexedSlices count as the tensors they represent).

    Parameters
    ----------
    t_list : list or tuple
        Tensors, Variables, IndexedSlices, array_likes or None, all of one
        float dtype, float16, bfloat16, float32 or float64 (of any of them
        when `use_norm` is given: the scale is cast to each).
    clip_norm : Tensor, Variable or number
        A scalar.  A Tensor must have the norm's dtype and receives a
        gradient.
    use_norm : Tensor or number, optional
        The global norm to use instead of computing it; returned as given.
        A Tensor receives a gradient.
    name : str, optional
        Ignored (TensorFlow compatibility).
    comm : mpi4py.MPI.Comm, optional
        Use the norm of every rank's tensors together, with no gradient (a
        collective call; :mod:`sparsegrad.ops.collective_ops`).
    sharded : sequence of bool, optional
        With `comm`, the tensors that are this rank's part of a sharded whole;
        the others are replicated (the same on every rank).  Default: none.

    Returns
    -------
    list_clipped : list
        New arrays (the inputs are never modified), in a list even for a tuple
        argument.
    global_norm : Tensor
        The 0-d global norm: computed, or `use_norm` (as a Tensor).

    Raises
    ------
    TypeError
        If `t_list` is not a list or tuple, or a Tensor `clip_norm` has
        another dtype than the norm.
    InvalidArgumentError
        If `clip_norm` or `use_norm` is not a scalar (a ``ValueError``), or
        the tensors are not of one float dtype.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsegrad as sg
    >>> a = np.array([[-2.0, 0.0, 0.0], [4.0, 0.0, 0.0]])
    >>> s = sg.IndexedSlices(np.array([1.0, -2.0]), [3, 4])
    >>> (a2, s2), norm = sg.clip_by_global_norm([a, s], 4.0)
    >>> norm.numpy(), a2.numpy()[1, 0], s2.values.numpy()
    (array(5.), np.float64(3.2), array([ 0.8, -1.6]))
    """
    if comm is not None:
        use_norm = norm_across_ranks(
            comm, lambda: _rank_squares(t_list, sharded, use_norm))
    entries, dtype, be = as_list(t_list, "clip_by_global_norm", use_norm is None)
    present = [r for r in entries if r is not None]
    list_dtype = dtype or np.dtype(np.float32)
    if isinstance(use_norm, Variable):
        use_norm = as_tensor(use_norm)  # read once: the read is what the tape sees
    if isinstance(clip_norm, Variable):
        clip_norm = as_tensor(clip_norm)
    if use_norm is None:
        norm, norm64 = _global_norm(be, present, list_dtype)
        norm_tensor, given = wrap(norm), None
    else:
        if isinstance(use_norm, Tensor):
            norm_dtype = use_norm._value.dtype
            if norm_dtype not in FLOATS:
                raise InvalidArgumentError(
                    f"clip_by_global_norm: use_norm has dtype {norm_dtype}; "
                    "expected a float dtype"
                )
        else:
            norm_dtype = list_dtype
        norm, given = scalar_norm_arg(
            use_norm, norm_dtype, "clip_by_global_norm", "use_norm"
        )
        norm_tensor = given if given is not None else wrap(norm)
        norm64 = float(norm)
    if isinstance(clip_norm, Tensor) and clip_norm._value.dtype != norm.dtype:
        raise TypeError(
            f"clip_by_global_norm: clip_norm has dtype {clip_norm._value.dtype} but "
            f"the norm has dtype {norm.dtype}; they must have the same dtype"
        )
    c, c_tensor = scalar_norm_arg(clip_norm, norm.dtype, "clip_by_global_norm",
                                   "clip_norm")
    device = be.on_gpu and use_norm is None
    if device:
        # the norm stays on the device: so do the scale and its use
        scale = device_global_scale(be, norm, c)
        outputs = [
            None if r is None else wrap(device_scaled(be, r.values._value, scale))
            for r in entries
        ]
    else:
        scale = global_norm_scale(norm, c)
        outputs = [
            None
            if r is None
            else wrap(scaled(be, r.values._value, scale.astype(r.values.dtype)))
            for r in entries
        ]
    clipped = [None if r is None else r.rewrap(z) for r, z in zip(entries, outputs)]
    inputs = tuple(r.values for r in present)
    inputs += tuple(t for t in (c_tensor, given) if t is not None)
    recorded = tuple(z for z in outputs if z is not None)
    if given is None:
        recorded += (norm_tensor,)

    def grad_fn(*grads):
        return _clip_by_global_norm_grad(
            be, grads, present, norm64, float(c),
            scale[0].astype(np.float64) if device else float(scale), c_tensor, given
        )

    record_operation("ClipByGlobalNorm", inputs, recorded, grad_fn=grad_fn)
    return clipped, norm_tensor


def _rank_squares(t_list, sharded, use_norm):
    """This rank's part of a norm across ranks (``norm_across_ranks``)."""
    if use_norm is not None:
        raise InvalidArgumentError("clip_by_global_norm: use_norm or comm, not both")
    entries, dtype, be = as_list(t_list, "clip_by_global_norm")
    mask = check_sharded(sharded, len(entries))
    parts = [[r for r, f in zip(entries, mask) if r is not None and f is k]
             for k in (True, False)]  # sharded, replicated
    return ((dtype or np.dtype(np.float32)).name,
            *(float(rows_sum_of_squares(be, p)) for p in parts))


def _clip_by_global_norm_grad(be, grads, present, n, c, scale, c_tensor, given):
    """Gradients of ``t_i * s`` with ``s = c * minimum(1/n, 1/c) + (n - n)``.

    ``dL/ds = sum_i sum(g_i * t_i)``; where ``1/n <= 1/c`` (Minimum's tie
    rule) ``ds/dn = -c / n**2`` and ``ds/dc = 1/n``, elsewhere ``ds/dn = 0``
    and ``ds/dc = 0``.  The norm's own gradient (when computed here) adds to
    ``dL/dn``, which reaches each t_i as ``r_i / n`` or goes to `use_norm`.
    """
    values = [r.values._value for r in present]
    xp = be.xp
    # 0-d float64 arrays of the values' module (the CPU: NumPy's scalars)
    n, c = xp.asarray(n, dtype=np.float64), xp.asarray(c, dtype=np.float64)
    out_grads = [dense(be, g, v).astype(np.float64) for g, v in zip(grads, values)]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        d_scale = xp.zeros((), np.float64)
        for g, v in zip(out_grads, values):
            d_scale = d_scale + xp.sum(g * v)
        # TensorFlow's chain, operation by operation, so that the non-finite
        # cases (c = 0 or inf, n = 0) give its NaNs: s = c * minimum(1/n, 1/c)
        # + (n - n); the minimum passes its gradient to 1/n on ties, and a
        # reciprocal y = 1/x passes g as -g * y**2.
        inv_n, inv_c = 1.0 / n, 1.0 / c
        g_min = d_scale * c
        to_n = inv_n <= inv_c
        g_inv_n, g_inv_c = xp.where(to_n, g_min, 0.0), xp.where(to_n, 0.0, g_min)
        dn = -g_inv_n * (inv_n * inv_n) + (d_scale - d_scale)
        # min(inv_n, inv_c) as Python's min: inv_n unless inv_c is smaller
        dc = d_scale * xp.where(inv_c < inv_n, inv_c, inv_n) - g_inv_c * (inv_c * inv_c)
        if given is None:
            g_norm = grads[len(values)]
            dn = dn + (0.0 if g_norm is None else dense(be, g_norm, n))
            through_norm = _norm_input_grads(be, present, dn, n)
        else:
            through_norm = [0.0] * len(values)
        result = [
            wrap((g * scale + t).astype(v.dtype))
            for g, t, v in zip(out_grads, through_norm, values)
        ]
        for t, d in ((c_tensor, dc), (given, dn)):
            if t is not None:
                result.append(wrap(onto_device_of(be, d.astype(t._value.dtype),
                                                  t._value)))
    return tuple(result)
