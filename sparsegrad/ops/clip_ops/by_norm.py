"""``clip_by_norm`` (over all axes or per slice) and its gradient, and the
deprecated ``clip_by_average_norm``."""

import math
import numbers
import warnings

import numpy as np

from ...autodiff.recording import record_operation
from ...framework import sparse_rows
from ...framework.backend import backend_of
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import Tensor, wrap
from ...framework.variable import Variable
from .. import array_ops, math_ops
from .._clip_gpu import (
    device_clip_by_norm,
    onto_device_of,
)
from .._helpers import as_tensor, normalize_axis
from .rows import (
    Rows,
    dense,
    float_values,
    rows_batches,
    rows_sum_of_squares,
    scalar_norm_arg,
    scaled,
)

__all__ = ["clip_by_norm", "clip_by_average_norm"]


# -- clip_by_norm ------------------------------------------------------------------


class _Slices:
    """The slices of a clip_by_norm: sums over `axes` of the represented
    tensor, for a dense argument or an IndexedSlices."""

    def __init__(self, be, rows, axes):
        self.axes = axes
        self.rep, self.row_group = rows.represented(be)
        self.groups = rows.groups(be)
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

    For half values (float16, bfloat16) the norm is accumulated wide (in
    float64, from the values converted to float32) and rounded once to the
    half type, so it overflows only where that norm exceeds the type's range
    (TensorFlow's half sum of squares overflows float16 once the norm passes
    256); then, as in TensorFlow, ``t * clip_norm`` is rounded to the half
    type and divided by ``maximum(norm, clip_norm)`` in it, each element
    rounded once per operation.

    For an IndexedSlices the values are scaled and an IndexedSlices over the
    same indices comes back; its norm is that of the tensor it represents
    (rows of a repeated index summed before squaring, TensorFlow squares the
    raw values: the same when the indices are distinct).  `axes` index the
    values, whose axis 0 is the row axis.

    Parameters
    ----------
    t : Tensor, Variable, IndexedSlices or array_like
        float16, bfloat16, float32 or float64.
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
        If t is not float16/bfloat16/float32/float64, `clip_norm` is not a
        scalar, or an axis is out of range or repeated.

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
    rows = Rows(t, "t")
    x = rows.values
    dtype = float_values(rows, "clip_by_norm", "t")
    c, c_tensor = scalar_norm_arg(clip_norm, dtype, "clip_by_norm", "clip_norm")
    c_raw = c
    c = np.maximum(c, np.asarray(0, dtype))
    xv = x._value
    axes = normalize_axis(axes, xv.ndim, "clip_by_norm")
    be = backend_of(xv)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        slices = None
        if be.on_gpu and len(axes) == xv.ndim:
            # the norm stays there
            z = device_clip_by_norm(be, rows_batches(be, [rows]), xv, c, dtype)
        elif len(axes) == xv.ndim:
            norm = np.asarray(math.sqrt(rows_sum_of_squares(be, [rows])), dtype)
            divisor = np.maximum(norm, c)
            if divisor == 0:
                divisor = np.asarray(1, dtype)  # zeros, not 0 / 0
            z = scaled(be, xv, c, divisor)
        else:
            xp = be.xp
            slices = _Slices(be, rows, axes)
            norm = xp.sqrt(slices.compact_squares()).astype(dtype)
            divisor = xp.maximum(norm, c[()])
            divisor = xp.where(divisor == 0, xp.ones_like(divisor), divisor)
            z = (xv * c[()]) / slices.to_rows(divisor)
    z = wrap(z)
    inputs = (x,) if c_tensor is None else (x, c_tensor)

    def grad_fn(grad):
        return _clip_by_norm_grad(
            be, dense(be, grad, xv), xv, rows, axes, slices, float(c), c_raw >= 0,
            inputs)

    record_operation("ClipByNorm", inputs, (z,), grad_fn=grad_fn)
    return rows.rewrap(z)


def _clip_by_norm_grad(be, g, xv, rows, axes, slices, c, c_used, inputs):
    """Gradients of ``(v * c) / maximum(n, c)`` w.r.t. v (and c).

    Where the norm n is the divisor (``n >= c``, Maximum's tie rule, and
    n > 0): ``dv = c/n * (g - r * S / n**2)`` with ``S = sum(g * v)`` over
    the slice and r the represented row of v; ``dc = S / n``.  Elsewhere
    ``dv = g`` (``g * c / c``) and ``dc = 0``.
    """
    xp = be.xp
    if slices is None:
        slices = _Slices(be, rows, axes)
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
            grads.append(wrap(onto_device_of(be, dc.astype(c_value.dtype), c_value)))
    return tuple(grads)


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
        float16, bfloat16, float32 or float64.
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
