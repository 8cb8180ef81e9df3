"""Clipping: by value, by norm, by the global norm of a list, and that norm.

Each function takes Tensors, Variables, array_likes and
:class:`~sparsegrad.IndexedSlices`; an IndexedSlices comes back as an
IndexedSlices over the same indices (only its values change), so a sparse
gradient stays sparse through clipping.  Norms of an IndexedSlices are those
of the tensor it represents: rows of a repeated index are summed before they
are squared (TensorFlow squares the raw values instead; the two agree when the
indices are distinct).

Sums of squares are accumulated in float64 in an order fixed by the data, not
the thread count, in one kernel pass (``sparsegrad._kernels.clip``); each norm
is rounded once to the inputs' dtype; scalars such as the global-norm scale are
computed in that dtype with TensorFlow's formulas. Every function records
itself on active tapes; the gradient functions sit next to the forward
functions. Their results are computed with the arrays' module (NumPy or CuPy),
not with sparsegrad ops, so a gradient of a clip op is not itself
differentiable (second-order gradients through clipping are not supported).

CuPy arguments are clipped on the GPU (``sparsegrad._cuda.clip``) with the
CPU's bits: sums of squares follow the CPU kernel's block order, and a norm
never leaves the device (a Tensor `clip_norm` or `use_norm` there is read back,
one scalar).  Gradients of GPU arguments are computed on the GPU with the CPU's
operations in its order (float64 sums by CuPy's reductions) and stay there.
"""

import collections.abc
import math
import numbers
import warnings

import numpy as np

from .._cuda import clip as _cuda_clip
from .._kernels import clip as _clip
from ..autodiff.recording import record_operation
from ..autodiff.registry import register_gradient
from ..errors import InvalidArgumentError
from ..framework import backend, buffers, sparse_rows
from ..framework.dtypes import check_numeric, is_kernel_float
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, wrap
from ..framework.threads import get_num_threads
from ..framework.variable import Variable
from . import array_ops, math_ops, reduction_ops
from ._clip_gpu import (
    device_clip_by_norm,
    device_global_scale,
    device_norm,
    device_scaled,
    on_device,
    onto_module_of,
)
from ._helpers import as_borrowed_tensor, as_tensor, convert_like, normalize_axis
from .collective_ops import check_sharded, norm_across_ranks

__all__ = [
    "clip_by_average_norm",
    "clip_by_global_norm",
    "clip_by_norm",
    "clip_by_value",
    "global_norm",
]

_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


# -- arguments ---------------------------------------------------------------------


class _Rows:
    """One argument of a clip op: its values as a Tensor and, for an
    IndexedSlices, how its rows group by index (the IndexedSlices' own
    grouping, computed once and kept on it)."""

    __slots__ = ("values", "slices")

    def __init__(self, t, name):
        if isinstance(t, IndexedSlices):
            self.slices = t
            self.values = t.values
        else:
            self.slices = None
            self.values = as_borrowed_tensor(t, name=name)

    def rewrap(self, values):
        """`values` in the form of the argument (an IndexedSlices when it was
        one, keeping the grouping of its indices)."""
        if self.slices is None:
            return values
        return IndexedSlices._from_trusted(
            values, self.slices.indices, self.slices.dense_shape,
            self.slices._groups,
        )

    def groups(self):
        """``(order, starts)`` of the repeated indices, or None when the rows
        are the tensor's own (dense, or distinct indices)."""
        if self.slices is None or self.slices.indices.shape[0] < 2:
            return None
        return _repeated(self.slices._row_groups())

    def squares_entry(self):
        """This argument as an entry of ``_clip.sum_of_squares_list``."""
        return _squares_entry(self.values._value, self.groups())

    def represented(self):
        """``(rows, row_group)``: the rows of the represented tensor in float64
        and, for repeated indices, the row of each value row (else None).

        The rows of an index are summed in the values' dtype, in their original
        order, from zero (``sparse_rows.group_sum`` on the grouping the
        IndexedSlices keeps), as the norm kernel sums them."""
        values = self.values._value
        if self.groups() is None:
            return values.astype(np.float64), None
        indices = self.slices.indices._value
        unique, order, starts = self.slices._row_groups()
        rows = sparse_rows.group_sum(values, order, starts)
        xp = sparse_rows.module_of(indices)
        return rows.astype(np.float64), xp.searchsorted(unique, indices)


def _repeated(grouped):
    """``(order, starts)`` of a :func:`sparse_rows.group_rows` result, or None
    when its indices are distinct (the rows are then the tensor's own)."""
    _, order, starts = grouped
    return (order, starts) if starts.shape[0] - 1 < order.shape[0] else None


def _squares_entry(values, groups):
    """An entry of ``_clip.sum_of_squares_list``: `values` (rows grouped by
    `groups` when not None)."""
    if not is_kernel_float(values.dtype):
        values = values.astype(np.float32)  # float16: exact in float32
    values = sparse_rows.module_of(values).ascontiguousarray(values)
    if groups is None:
        return (values,)
    return (values.reshape(values.shape[0], -1),) + groups


def sum_of_squares(grads):
    """The float64 sum of squares of a list of gradients, of any float dtypes.

    For the optimizers, whose gradients are already checked: no conversion,
    no copy (float16 excepted).  The same bits for any thread count.

    Parameters
    ----------
    grads : list
        ndarrays (dense), ``(values, indices, n_rows)`` tuples (rows of a
        variable with `n_rows` rows: they count as the tensor they represent,
        repeated indices summed first) or None (skipped).  A tuple may carry
        a fourth item, the ``(unique, order, starts)`` that
        :func:`sparsegrad.framework.sparse_rows.group_rows` gave for its
        indices, so that a caller who needs those groups again (the lazy
        optimizers' update kernels) groups the indices once.

    Returns
    -------
    float
        For CuPy gradients, a 0-d float64 CuPy array (nothing read back).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.ops.clip_ops import sum_of_squares
    >>> sum_of_squares([np.array([1.0, 2.0]), (np.array([[1.0], [2.0]]),
    ...                 np.array([0, 0]), 3)])
    14.0
    """
    entries = []
    for g in grads:
        if g is None:
            continue
        if isinstance(g, tuple):
            values, indices, n_rows = g[:3]
            if indices.shape[0] < 2:
                groups = None
            elif len(g) > 3:
                groups = _repeated(g[3])
            else:
                groups = _repeated(sparse_rows.group_rows(indices, n_rows - 1))
            entries.append(_squares_entry(values, groups))
        else:
            entries.append(_squares_entry(g, None))
    return _squares_kernels(entries).sum_of_squares_list(entries, get_num_threads())


def _squares_kernels(entries):
    """The clip kernels for sum-of-squares `entries` (the CUDA ones for CuPy
    arrays; NumPy and CuPy arrays must not mix)."""
    xp = sparse_rows.module_of(*(a for entry in entries for a in entry))
    return _clip if xp is np else _cuda_clip


def _float_values(rows, op_name, arg):
    """The dtype of `rows`, which must be float16, float32 or float64."""
    dtype = rows.values._value.dtype
    check_numeric(dtype, f"{op_name}: {arg}")
    if dtype not in _FLOATS:
        raise InvalidArgumentError(
            f"{op_name}: {arg} has dtype {dtype}; norms need float16, float32 or "
            "float64 values (cast integers first)"
        )
    return dtype


def _as_list(t_list, op_name, one_dtype=True):
    """The entries of `t_list` as _Rows (None kept), of float dtypes, all one
    (that of the first) when `one_dtype`."""
    if isinstance(t_list, (str, bytes)) or not isinstance(
        t_list, collections.abc.Sequence
    ):
        raise TypeError(
            f"{op_name}: `t_list` should be a sequence of tensors. Received "
            f"{type(t_list).__name__}."
        )
    entries, dtype, first = [], None, None
    for i, t in enumerate(t_list):
        if t is None:
            entries.append(None)
            continue
        rows = _Rows(t, f"t_list[{i}]")
        this = _float_values(rows, op_name, f"t_list[{i}]")
        if dtype is None:
            dtype, first = this, i
        elif this != dtype and one_dtype:
            raise InvalidArgumentError(
                f"{op_name}: t_list[{i}] has dtype {this} but t_list[{first}] has "
                f"dtype {dtype}; every tensor of the list must have one dtype"
            )
        entries.append(rows)
    sparse_rows.module_of(*(r.values._value for r in entries if r is not None))
    return entries, dtype


def _scalar_norm_arg(value, dtype, op_name, arg):
    """A clip_norm / use_norm argument: ``(value as a 0-d array of `dtype`,
    the Tensor to differentiate or None)``.  Python and NumPy numbers adopt
    `dtype`; a Tensor must be a scalar of a float dtype."""
    if isinstance(value, Variable):
        value = as_tensor(value)
    if isinstance(value, Tensor):
        array = value._value
        if backend.is_cupy_array(array):
            array = array.get()  # a scalar argument: read back once
        tensor = value
    else:
        if isinstance(value, (bool, np.bool_)) or value is None:
            raise TypeError(f"{op_name}: {arg} must be a number, got {value!r}")
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):
            raise TypeError(
                f"{op_name}: {arg} must be a number, got {value!r}"
            ) from None
        tensor = None
    check_numeric(array.dtype, f"{op_name}: {arg}")
    if array.dtype.kind == "b":
        raise TypeError(f"{op_name}: {arg} must be a number, got {value!r}")
    if array.size != 1 or (array.ndim and tensor is not None):
        raise InvalidArgumentError(
            f"{op_name}: {arg} must be a scalar, got shape {tuple(array.shape)}"
        )
    return np.asarray(array.reshape(()), dtype=dtype), tensor


def _sum_of_squares(entries):
    """The float64 sum of squares of a list of _Rows (None skipped)."""
    return _clip.sum_of_squares_list(
        [r.squares_entry() for r in entries if r is not None], get_num_threads()
    )


def _scaled(x, c, d=1.0):
    """``(x * c) / d`` in x's dtype, a new array (c and d are in that dtype)."""
    if x.size and is_kernel_float(x.dtype):
        if on_device(x):
            xp = sparse_rows.module_of(x)
            out = xp.empty(x.shape, x.dtype)
            _cuda_clip.scale(xp.ascontiguousarray(x).reshape(-1), float(c),
                             float(d), out.reshape(-1), 1)
            return out
        out = buffers.empty(x.shape, x.dtype)
        _clip.scale(
            np.ascontiguousarray(x).reshape(-1), float(c), float(d),
            out.reshape(-1), get_num_threads(),
        )
        return out
    c, d = np.asarray(c, x.dtype)[()], np.asarray(d, x.dtype)[()]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return x * c if d == 1 else (x * c) / d


def _dense(grad, like):
    """An output gradient as an array of `like`'s shape and module (None:
    float64 zeros)."""
    if grad is None:
        return sparse_rows.module_of(like).zeros(like.shape)
    return array_ops.densify(grad)._value


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
    rows = _Rows(t, "t")
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
    z = wrap(_clipped_values(x._value, lo._value, hi._value))
    record_operation("ClipByValue", (x, lo, hi), (z,))
    return rows.rewrap(z)


def _clipped_values(x, lo, hi):
    xp = sparse_rows.module_of(x)
    if xp is not np:
        # host bounds (numbers, arrays) go to the device: they are arguments
        lo, hi = sparse_rows.as_array_of(xp, lo), sparse_rows.as_array_of(xp, hi)
    if not (x.size and is_kernel_float(x.dtype)):
        return xp.maximum(xp.minimum(x, hi), lo)

    def flat(bound):
        if bound.size == 1:
            return xp.ascontiguousarray(bound.reshape(1))
        return xp.ascontiguousarray(xp.broadcast_to(bound, x.shape)).reshape(-1)

    if xp is np:
        out = buffers.empty(x.shape, x.dtype)
        kernels = _clip
    else:
        out = xp.empty(x.shape, x.dtype)
        kernels = _cuda_clip
    kernels.clip_values(
        xp.ascontiguousarray(x).reshape(-1), flat(lo), flat(hi), out.reshape(-1),
        get_num_threads(),
    )
    return out


@register_gradient("ClipByValue")
def _clip_by_value_grad(op, grad):
    x, lo, hi = op.inputs
    xv = x._value
    xp = sparse_rows.module_of(xv)
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
        glo = wrap(onto_module_of(glo._value, lo._value))
    ghi = None
    if 2 not in skip:
        ghi = reduction_ops.unbroadcast(
            math_ops.where(~below_hi & above_lo, grad, zeros), hiv.shape
        )
        ghi = wrap(onto_module_of(ghi._value, hi._value))
    return gx, glo, ghi


# -- clip_by_norm ------------------------------------------------------------------


class _Slices:
    """The slices of a clip_by_norm: sums over `axes` of the represented
    tensor, for a dense argument or an IndexedSlices."""

    def __init__(self, rows, axes):
        self.axes = axes
        self.rep, self.row_group = rows.represented()
        self.groups = rows.groups()
        self.across_rows = 0 in axes

    def compact_sum(self, per_row):
        """Sums of `per_row` (shaped like the values) over each slice, in the
        compact shape of the slices."""
        if self.row_group is None:
            return per_row.sum(axis=self.axes, keepdims=True)
        inner = tuple(a for a in self.axes if a != 0)
        s = per_row.sum(axis=inner, keepdims=True)
        if self.across_rows:
            return s.sum(axis=0, keepdims=True)
        # each represented row from zero, its value rows in their order
        return sparse_rows.group_sum(s, *self.groups)

    def compact_squares(self):
        """The sums of squares of the represented tensor over each slice."""
        return (self.rep * self.rep).sum(axis=self.axes, keepdims=True)

    def to_rows(self, compact):
        """A compact per-slice array broadcast against the value rows."""
        if self.row_group is None or self.across_rows:
            return compact
        return compact[self.row_group]

    def rep_rows(self):
        """The represented row of every value row."""
        return self.rep if self.row_group is None else self.rep[self.row_group]


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """Scale `t` so that its L2 norm (over `axes`) is at most `clip_norm`.

    ``(t * clip_norm) / maximum(norm, clip_norm)`` with the norm taken over
    all elements, or over `axes` for each slice along the other axes: a slice
    whose norm is at most `clip_norm` is unchanged up to one rounding.  A
    negative `clip_norm` acts as 0.  A zero slice comes back as zeros (no
    NaN), even with `clip_norm` 0 (where TensorFlow gives NaN).  Any NaN or
    inf in a slice makes the norm NaN or inf, and the slice NaN (or zeros
    where it was finite and the norm is inf).

    For an IndexedSlices the values are scaled and an IndexedSlices over the
    same indices comes back; its norm is that of the tensor it represents
    (rows of a repeated index summed before squaring, TensorFlow squares the
    raw values: the same when the indices are distinct).  `axes` index the
    values, whose axis 0 is the row axis.

    Parameters
    ----------
    t : Tensor, Variable, IndexedSlices or array_like
        float16, float32 or float64.
    clip_norm : Tensor, Variable or number
        A scalar (a one-element array is accepted); a Python or NumPy number
        adopts t's dtype; a Tensor is cast to it and receives a gradient.
    axes : int or sequence of int, optional
        The axes of each norm (negative ones count from the end); None: all.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor or IndexedSlices
        A new array of t's shape and dtype.

    Raises
    ------
    InvalidArgumentError
        If t is not float16/32/64, `clip_norm` is not a scalar, or an axis is
        out of range or repeated.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.clip_by_norm([[-3.0, 0.0, 0.0], [4.0, 0.0, 0.0]], 4.0).numpy()
    array([[-2.4,  0. ,  0. ],
           [ 3.2,  0. ,  0. ]])
    >>> sg.clip_by_norm([[-3.0, 0.0, 0.0], [4.0, 0.0, 3.0]], 4.0, axes=1).numpy()
    array([[-3. ,  0. ,  0. ],
           [ 3.2,  0. ,  2.4]])
    """
    rows = _Rows(t, "t")
    x = rows.values
    dtype = _float_values(rows, "clip_by_norm", "t")
    c, c_tensor = _scalar_norm_arg(clip_norm, dtype, "clip_by_norm", "clip_norm")
    c_raw = c
    c = np.maximum(c, np.asarray(0, dtype))
    xv = x._value
    axes = normalize_axis(axes, xv.ndim, "clip_by_norm")
    device = on_device(xv)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        slices = None
        if device and len(axes) == xv.ndim:
            z = device_clip_by_norm(rows, xv, c, dtype)  # the norm stays there
        elif len(axes) == xv.ndim:
            norm = np.asarray(math.sqrt(_sum_of_squares([rows])), dtype)
            divisor = np.maximum(norm, c)
            if divisor == 0:
                divisor = np.asarray(1, dtype)  # zeros, not 0 / 0
            z = _scaled(xv, c, divisor)
        else:
            xp = sparse_rows.module_of(xv)
            slices = _Slices(rows, axes)
            norm = xp.sqrt(slices.compact_squares()).astype(dtype)
            divisor = xp.maximum(norm, c[()])
            divisor = xp.where(divisor == 0, xp.ones_like(divisor), divisor)
            z = (xv * c[()]) / slices.to_rows(divisor)
    z = wrap(z)
    inputs = (x,) if c_tensor is None else (x, c_tensor)

    def grad_fn(grad):
        return _clip_by_norm_grad(
            _dense(grad, xv), xv, rows, axes, slices, float(c), c_raw >= 0, inputs
        )

    record_operation("ClipByNorm", inputs, (z,), grad_fn=grad_fn)
    return rows.rewrap(z)


def _clip_by_norm_grad(g, xv, rows, axes, slices, c, c_used, inputs):
    """Gradients of ``(v * c) / maximum(n, c)`` w.r.t. v (and c).

    Where the norm n is the divisor (``n >= c``, Maximum's tie rule, and
    n > 0): ``dv = c/n * (g - r * S / n**2)`` with ``S = sum(g * v)`` over
    the slice and r the represented row of v; ``dc = S / n``.  Elsewhere
    ``dv = g`` (``g * c / c``) and ``dc = 0``.
    """
    xp = sparse_rows.module_of(xv)
    if slices is None:
        slices = _Slices(rows, axes)
    g = g.astype(np.float64)
    v = xv.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        n = xp.sqrt(slices.compact_squares())
        s = slices.compact_sum(g * v)
        on_norm = (n >= c) & (n > 0)
        divisor = xp.maximum(n, c)  # NaN in a slice holding a NaN, as the forward
        divisor = xp.where(divisor == 0, 1.0, divisor)
        coef = xp.where(on_norm, c * s / n**3, 0.0)
        dv = g * c / slices.to_rows(divisor) - slices.to_rows(coef) * slices.rep_rows()
        grads = [wrap(dv.astype(xv.dtype))]
        if len(inputs) == 2:
            c_value = inputs[1]._value
            dc = (xp.sum(xp.where(on_norm, s / n, 0.0)) if c_used
                  else xp.zeros((), np.float64))
            grads.append(wrap(onto_module_of(dc.astype(c_value.dtype), c_value)))
    return tuple(grads)


# -- global_norm -------------------------------------------------------------------


def _global_norm(entries, dtype):
    """``(norm as a 0-d array of dtype, float64 norm)`` of a list of _Rows
    (for CuPy entries both 0-d device arrays)."""
    if entries and on_device(entries[0].values._value):
        norm, total = device_norm(entries, dtype)
        return norm, sparse_rows.module_of(total).sqrt(total)  # math.sqrt's bits
    norm64 = math.sqrt(_sum_of_squares(entries))
    return np.asarray(norm64, dtype), norm64


def _norm_input_grads(entries, g_norm, norm64):
    """Gradients w.r.t. every entry's values of the global norm, times g_norm:
    ``g_norm * r / norm`` (r: the represented row of each value row)."""
    grads = []
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for rows in entries:
            rep, row_group = rows.represented()
            r = rep if row_group is None else rep[row_group]
            grads.append(g_norm * r / norm64)
    return grads


def global_norm(t_list, name=None):
    """The L2 norm of all the tensors of a list together.

    ``sqrt(sum of the squares of every element)``, accumulated in float64
    (the same bits for any thread count) and rounded once to the tensors'
    dtype.  `None` entries are skipped; an empty list (or only `None`) gives
    0.0 as float32.  An IndexedSlices counts as the tensor it represents: rows
    of a repeated index are summed before squaring (TensorFlow squares the raw
    values, so it counts a row hit k times as the sum of k squared norms; the
    two agree when the indices are distinct).  The coalesced rows are never
    written out.  The gradient is ``t / global_norm`` (NaN when the norm is 0,
    as in TensorFlow).

    Parameters
    ----------
    t_list : list or tuple
        Tensors, Variables, IndexedSlices, array_likes or None, all of one
        float dtype (float16, float32 or float64).
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
        If an entry is not float16/32/64, or the entries' dtypes differ.

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
    entries, dtype = _as_list(t_list, "global_norm")
    present = [r for r in entries if r is not None]
    norm, norm64 = _global_norm(present, dtype or np.dtype(np.float32))
    z = wrap(norm)

    def grad_fn(grad):
        g_norm = _dense(grad, norm).astype(np.float64)
        return tuple(
            wrap(d.astype(r.values._value.dtype))
            for d, r in zip(_norm_input_grads(present, g_norm, norm64), present)
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
    `None` entries stay `None`; an IndexedSlices comes back as an
    IndexedSlices over the same indices.  The global norm is that of
    :func:`global_norm` (IndexedSlices count as the tensors they represent).

    Parameters
    ----------
    t_list : list or tuple
        Tensors, Variables, IndexedSlices, array_likes or None, all of one
        float dtype (of any float dtypes when `use_norm` is given: the scale
        is cast to each).
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
    entries, dtype = _as_list(t_list, "clip_by_global_norm", use_norm is None)
    present = [r for r in entries if r is not None]
    list_dtype = dtype or np.dtype(np.float32)
    if isinstance(use_norm, Variable):
        use_norm = as_tensor(use_norm)  # read once: the read is what the tape sees
    if isinstance(clip_norm, Variable):
        clip_norm = as_tensor(clip_norm)
    if use_norm is None:
        norm, norm64 = _global_norm(present, list_dtype)
        norm_tensor, given = wrap(norm), None
    else:
        if isinstance(use_norm, Tensor):
            norm_dtype = use_norm._value.dtype
            if norm_dtype not in _FLOATS:
                raise InvalidArgumentError(
                    f"clip_by_global_norm: use_norm has dtype {norm_dtype}; "
                    "expected a float dtype"
                )
        else:
            norm_dtype = list_dtype
        norm, given = _scalar_norm_arg(
            use_norm, norm_dtype, "clip_by_global_norm", "use_norm"
        )
        norm_tensor = given if given is not None else wrap(norm)
        norm64 = float(norm)
    if isinstance(clip_norm, Tensor) and clip_norm._value.dtype != norm.dtype:
        raise TypeError(
            f"clip_by_global_norm: clip_norm has dtype {clip_norm._value.dtype} but "
            f"the norm has dtype {norm.dtype}; they must have the same dtype"
        )
    c, c_tensor = _scalar_norm_arg(clip_norm, norm.dtype, "clip_by_global_norm",
                                   "clip_norm")
    device = on_device(norm)
    if device:
        # the norm stays on the device: so do the scale and its use
        scale = device_global_scale(norm, c)
        outputs = [
            None if r is None else wrap(device_scaled(r.values._value, scale))
            for r in entries
        ]
    else:
        scale = global_norm_scale(norm, c)
        outputs = [
            None
            if r is None
            else wrap(_scaled(r.values._value, scale.astype(r.values.dtype)))
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
            grads, present, norm64, float(c),
            scale[0].astype(np.float64) if device else float(scale), c_tensor, given
        )

    record_operation("ClipByGlobalNorm", inputs, recorded, grad_fn=grad_fn)
    return clipped, norm_tensor


def _rank_squares(t_list, sharded, use_norm):
    """This rank's part of a norm across ranks (``norm_across_ranks``)."""
    if use_norm is not None:
        raise InvalidArgumentError("clip_by_global_norm: use_norm or comm, not both")
    entries, dtype = _as_list(t_list, "clip_by_global_norm")
    mask = check_sharded(sharded, len(entries))
    parts = [[r for r, f in zip(entries, mask) if r is not None and f is k]
             for k in (True, False)]  # sharded, replicated
    return ((dtype or np.dtype(np.float32)).name,
            *(float(_sum_of_squares(p)) for p in parts))


def _clip_by_global_norm_grad(grads, present, n, c, scale, c_tensor, given):
    """Gradients of ``t_i * s`` with ``s = c * minimum(1/n, 1/c) + (n - n)``.

    ``dL/ds = sum_i sum(g_i * t_i)``; where ``1/n <= 1/c`` (Minimum's tie
    rule) ``ds/dn = -c / n**2`` and ``ds/dc = 1/n``, elsewhere ``ds/dn = 0``
    and ``ds/dc = 0``.  The norm's own gradient (when computed here) adds to
    ``dL/dn``, which reaches each t_i as ``r_i / n`` or goes to `use_norm`.
    """
    values = [r.values._value for r in present]
    xp = sparse_rows.module_of(*values)
    # 0-d float64 arrays of the values' module (the CPU: NumPy's scalars)
    n, c = xp.asarray(n, dtype=np.float64), xp.asarray(c, dtype=np.float64)
    out_grads = [_dense(g, v).astype(np.float64) for g, v in zip(grads, values)]
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
            dn = dn + (0.0 if g_norm is None else _dense(g_norm, n))
            through_norm = _norm_input_grads(present, dn, n)
        else:
            through_norm = [0.0] * len(values)
        result = [
            wrap((g * scale + t).astype(v.dtype))
            for g, t, v in zip(out_grads, through_norm, values)
        ]
        for t, d in ((c_tensor, dc), (given, dn)):
            if t is not None:
                result.append(wrap(onto_module_of(d.astype(t._value.dtype), t._value)))
    return tuple(result)


# -- clip_by_average_norm ----------------------------------------------------------


def clip_by_average_norm(t, clip_norm, name=None):
    """Deprecated: use ``clip_by_norm(t, clip_norm * size(t))``.

    Scales `t` so that its average L2 norm (the norm divided by the number of
    elements) is at most `clip_norm`; exactly
    ``clip_by_norm(t, clip_norm * t.size)``.  An IndexedSlices is densified
    (as in TensorFlow, differentiably) and a dense Tensor comes back.  Emits a
    ``DeprecationWarning``.

    Parameters
    ----------
    t : Tensor, Variable, IndexedSlices or array_like
        float16, float32 or float64.
    clip_norm : Tensor, Variable or number
        A scalar.
    name : str, optional
        Ignored (TensorFlow compatibility).

    Returns
    -------
    Tensor
        Of t's dense shape and dtype.

    Raises
    ------
    InvalidArgumentError
        As :func:`clip_by_norm`.

    Examples
    --------
    >>> import warnings
    >>> import sparsegrad as sg
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     y = sg.clip_by_average_norm([[-3.0, 0.0, 0.0], [4.0, 0.0, 0.0]], 0.8)
    >>> y.numpy()
    array([[-2.88,  0.  ,  0.  ],
           [ 3.84,  0.  ,  0.  ]])
    """
    warnings.warn(
        "clip_by_average_norm is deprecated; use "
        "sparsegrad.clip_by_norm(t, clip_norm * size(t)) instead",
        DeprecationWarning,
        stacklevel=2,
    )
    t = array_ops.densify(t) if isinstance(t, IndexedSlices) else as_tensor(t, name="t")
    size = t._value.size
    if isinstance(clip_norm, (Tensor, Variable)):
        clip_norm = math_ops.multiply(clip_norm, size)
    elif isinstance(clip_norm, numbers.Real) and not isinstance(clip_norm, bool):
        clip_norm = clip_norm * size
    return clip_by_norm(t, clip_norm)
