"""Reductions of a RaggedTensor: ``reduce_sum / prod / min / max / mean``,
``reduce_variance / std`` and ``reduce_any / all``.

Over the ragged axis (``axis=1``) row ``i`` of the result reduces the values
of row ``i``; the work is the unsorted segment reduction of
:mod:`sparsegrad.math` with the values' row ids as segment ids (TensorFlow's
construction), so an empty row gets that op's empty value: 0 for a sum, 1 for
a product, the dtype's largest finite value for a minimum and its lowest for
a maximum, NaN for a mean.  Over ``axis=0`` entry ``j`` reduces the ``j``-th
value of every row that has one (``max(row_lengths)`` entries).  Axes past 1
reduce the values' own dimensions.  Every reduction is differentiable w.r.t.
the values (through the segment ops' gradients).
"""

import numpy as np

from ..errors import InvalidArgumentError
from ..framework.backend import backend_of
from ..framework.buffers import check_allocation
from ..framework.tensor import wrap
from ..ops import array_ops, math_ops, reduction_ops, segment_ops, unary_ops
from .ragged_tensor import RaggedTensor
from .row_partition import require_ragged_rank_1

__all__ = [
    "reduce_sum",
    "reduce_prod",
    "reduce_min",
    "reduce_max",
    "reduce_mean",
    "reduce_variance",
    "reduce_std",
    "reduce_any",
    "reduce_all",
]

_SEGMENT = {
    "sum": segment_ops.unsorted_segment_sum,
    "prod": segment_ops.unsorted_segment_prod,
    "min": segment_ops.unsorted_segment_min,
    "max": segment_ops.unsorted_segment_max,
    "mean": segment_ops.unsorted_segment_sum,  # divided by the counts below
}
_DENSE = {
    "sum": reduction_ops.reduce_sum,
    "min": reduction_ops.reduce_min,
    "max": reduction_ops.reduce_max,
    "mean": reduction_ops.reduce_mean,
}


def _axes(axis, ndim, what):
    """`axis` (None, an int or a list of ints) as a sorted tuple in [0, ndim)."""
    if axis is None:
        return tuple(range(ndim))
    items = list(axis) if isinstance(axis, (list, tuple, np.ndarray)) else [axis]
    axes = set()
    for a in items:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"{what}: axis must be an int; got {type(a).__name__}")
        if not -ndim <= a < ndim:
            raise InvalidArgumentError(
                f"{what}: axis {int(a)} is out of range for a RaggedTensor of rank "
                f"{ndim} (expected {-ndim} <= axis < {ndim})"
            )
        axes.add(int(a) % ndim)
    return tuple(sorted(axes))


def _float_values(values, kind):
    """The values a mean divides: integers become float64 (TensorFlow's
    true division)."""
    if kind == "mean" and values.dtype.kind in "iub":
        return array_ops.cast(values, np.float64)
    return values


def _segment_reduce(kind, values, ids, n_segments, xp):
    """``unsorted_segment_<kind>(values, ids, n_segments)``; a mean divides the
    sum by the count of each segment (0 / 0 = NaN for an empty one).  `xp`:
    the array module of `ids`."""
    values = _float_values(values, kind)
    out = _SEGMENT[kind](values, ids, n_segments)
    if kind != "mean":
        return out
    counts = xp.bincount(ids, minlength=n_segments).astype(values.dtype)
    counts = counts.reshape((n_segments,) + (1,) * (values.ndim - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return math_ops.divide(out, wrap(counts))


def _dense_reduce(kind, x, axes, keepdims, xp):
    """A reduction of the dense values over `axes` (their own axes); `xp`: the
    array module of `x`."""
    if not axes:
        return x
    if kind != "prod":
        x = _float_values(x, kind)
        return _DENSE[kind](x, axis=list(axes), keepdims=keepdims)
    # product: move the reduced axes to the front, one segment holds them all
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = array_ops.transpose(x, list(axes) + rest)
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    flat = array_ops.reshape(moved, (n,) + tuple(x.shape[a] for a in rest))
    out = segment_ops.unsorted_segment_prod(flat, xp.zeros(n, np.int64), 1)
    shape = tuple(1 if a in axes else x.shape[a] for a in range(x.ndim)) \
        if keepdims else tuple(x.shape[a] for a in rest)
    return array_ops.reshape(out, shape)


def _check_sizes(kind, values, n_out, ids_dtype, what):
    """Refuse a reduction whose buffers (the result, the segment id of each
    value and, for a mean, the counts) need more memory than the process
    has, before any is allocated."""
    dtype = np.float64 if kind == "mean" and values.dtype.kind in "iub" \
        else values.dtype
    check_allocation(
        ((n_out,) + tuple(values.shape[1:]), dtype, f"{what}: the rows of rt"),
        ((values.shape[0],), ids_dtype, f"{what}: the values' segment ids"),
        ((n_out,), dtype, f"{what}: the counts of the rows"),
    )


def _reduce(kind, rt, axis, keepdims, what):
    values = _used(rt, what)
    axes = _axes(axis, rt.ndim, what)
    if not axes:
        return rt
    be = backend_of(rt.row_splits)
    xp = be.xp
    inner = tuple(a - 1 for a in axes if a >= 2)
    if inner:  # the values' own dimensions first
        values = _dense_reduce(kind, values, inner, keepdims, xp)
        if 0 not in axes and 1 not in axes:
            return rt.with_values(values)
    nrows = rt.nrows()
    if 0 in axes and 1 in axes:  # every value of every row
        out = _dense_reduce(kind, values, (0,), keepdims, xp)
        return array_ops.reshape(out, (1,) + tuple(out.shape)) if keepdims else out
    if 1 in axes:  # along each row
        _check_sizes(kind, values, nrows, rt.row_splits.dtype, what)
        out = _segment_reduce(kind, values, rt._rowids(be), nrows, xp)
        return array_ops.expand_dims(out, 1) if keepdims else out
    # axis 0: entry j reduces the j-th value of every row
    longest = int(rt._lengths(be).max()) if nrows else 0
    _check_sizes(kind, values, longest, np.int64, what)
    rowids = rt._rowids(be)
    position = xp.arange(values.shape[0], dtype=np.int64) - \
        rt.row_splits[:-1].astype(np.int64)[rowids]
    out = _segment_reduce(kind, values, position, longest, xp)
    return array_ops.expand_dims(out, 0) if keepdims else out


_DOC = """{verb} the values of each row of a RaggedTensor (or along `axis`).

    {empty}  Differentiable w.r.t. the values.

    Parameters
    ----------
    rt : RaggedTensor
    axis : int, list of int or None, default=1
        The axes to reduce, in ``[-rt.ndim, rt.ndim)``: 1 (or -1 for a 2-D
        ``rt``) reduces each row, 0 reduces across rows, None every axis.
        Note the default: ``tf.math.{tf_name}`` reduces every axis by
        default.
    keepdims : bool, default=False
        Keep each reduced axis with length 1.
    name : str, optional
        Ignored.

    Returns
    -------
    Tensor or RaggedTensor
        A Tensor of shape ``(nrows,) + values.shape[1:]`` for ``axis=1`` and
        ``(max(row_lengths),) + values.shape[1:]`` for ``axis=0``; a
        RaggedTensor with the same rows when only the values' own axes (2
        and up) are reduced.  {dtype}

    Raises
    ------
    TypeError
        If `rt` is not a RaggedTensor (or one of ragged_rank >= 2: not
        supported yet), or an axis is not an int.
    InvalidArgumentError
        If an axis is out of range, or the result (with the segment ids
        and counts it needs) takes more memory than the process has
        (checked before anything is allocated).

    Examples
    --------
    >>> import sparsegrad as sg
    {example}
    """


def _used(rt, what):
    """The values the rows of `rt` cover (validate=False may leave more)."""
    if not isinstance(rt, RaggedTensor):
        raise TypeError(
            f"{what}: expected a RaggedTensor, got {type(rt).__name__} (use "
            f"sparsegrad.{what} for dense tensors)"
        )
    require_ragged_rank_1(rt, what)
    values = rt.values
    n_used = int(rt.row_splits[-1])
    return values if values.shape[0] == n_used else values[:n_used]


def _moment(kind, rt, axis, keepdims):
    """TensorFlow's ragged variance: ``max(mean(x**2) - mean(x)**2, 0)``
    (clipped, so that equal values give exactly 0); std is its square root."""
    what = f"reduce_{kind}"
    values = _used(rt, what)
    if values.dtype.kind != "f":
        raise TypeError(
            f"{what}: the values must be floating-point, got dtype {values.dtype}"
        )
    rt = rt.with_values(values)
    mean = _reduce("mean", rt, axis, keepdims, what)
    mean_sq = _reduce("mean", rt * rt, axis, keepdims, what)
    ragged = isinstance(mean, RaggedTensor)
    m, m2 = (mean.values, mean_sq.values) if ragged else (mean, mean_sq)
    var = math_ops.maximum(m2 - m * m, np.zeros((), m.dtype))
    if kind == "std":
        var = unary_ops.sqrt(var)
    return mean.with_values(var) if ragged else var


def _logical(kind, rt, axis, keepdims):
    """TensorFlow's ragged any / all: the bools as int32, a sum (any) or a
    product (all), then compared with 0: an empty row is False / True."""
    what = f"reduce_{kind}"
    values = _used(rt, what)
    if values.dtype != np.bool_:
        raise TypeError(f"{what}: the values must be bool, got dtype {values.dtype}")
    ints = rt.with_values(array_ops.cast(values, np.int32))
    out = _reduce("sum" if kind == "any" else "prod", ints, axis, keepdims, what)
    if isinstance(out, RaggedTensor):
        return out.with_values(math_ops.not_equal(out.values, 0))
    return math_ops.not_equal(out, 0)


def _documented(kind, verb, empty, rows, result, dtype="The dtype of the values.",
                impl=None):
    """``reduce_<kind>``, documented from `_DOC`; its example reduces the
    ragged constant `rows` (source text) to `result` (the printed array,
    maybe followed by more example lines)."""
    example = (f">>> rt = sg.ragged.constant({rows})\n"
               f"    >>> sg.ragged.reduce_{kind}(rt).numpy()\n    {result}")

    def reduce(rt, axis=1, keepdims=False, name=None):
        del name
        if impl is not None:
            return impl(kind, rt, axis, keepdims)
        return _reduce(kind, rt, axis, keepdims, f"reduce_{kind}")

    reduce.__name__ = reduce.__qualname__ = f"reduce_{kind}"
    reduce.__doc__ = _DOC.format(verb=verb, empty=empty, tf_name=f"reduce_{kind}",
                                 dtype=dtype, example=example)
    return reduce


reduce_sum = _documented(
    "sum", "Sum", "An empty row sums to 0.",
    "[[3, 1, 4], [], [1, 5]]",
    """array([8, 0, 6], dtype=int32)
    >>> sg.ragged.reduce_sum(rt, axis=0).numpy()
    array([4, 6, 4], dtype=int32)""",
)
reduce_prod = _documented(
    "prod", "Multiply", "An empty row gives 1.",
    "[[3, 1, 4], [], [1, 5]]",
    "array([12,  1,  5], dtype=int32)",
)
reduce_min = _documented(
    "min", "Take the minimum of",
    "An empty row gives the largest finite value of the dtype (what\n"
    "    TensorFlow's kernel does; its docstring says otherwise).",
    "[[3, 1, 4], [], [1, 5]]",
    "array([         1, 2147483647,          1], dtype=int32)",
)
reduce_max = _documented(
    "max", "Take the maximum of",
    "An empty row gives the lowest finite value of the dtype (not -inf).",
    "[[3.0, 1.0, 4.0], [], [1.0, 5.0]]",
    "array([ 4.0000000e+00, -3.4028235e+38,  5.0000000e+00], dtype=float32)",
)
reduce_mean = _documented(
    "mean", "Average", "An empty row gives NaN (0 / 0).",
    "[[3, 1, 4], [], [1, 5]]",
    "array([2.66666667,        nan, 3.        ])",
    dtype="float64 for integer values (true division), else their dtype.",
)

reduce_variance = _documented(
    "variance", "Take the variance of",
    "Computed as ``max(mean(x**2) - mean(x)**2, 0)``, as TensorFlow does\n"
    "    (equal values give exactly 0); an empty row gives NaN.  The values\n"
    "    must be floating-point (TypeError otherwise).",
    "[[3.0, 1.0, 4.0], [], [2.0, 2.0]]",
    "array([1.5555553,       nan, 0.       ], dtype=float32)",
    impl=_moment,
)
reduce_std = _documented(
    "std", "Take the standard deviation of",
    "The square root of :func:`reduce_variance`; an empty row gives NaN.",
    "[[1.0, 3.0], [], [2.0]]",
    "array([ 1., nan,  0.], dtype=float32)",
    impl=_moment,
)
reduce_any = _documented(
    "any", "Take the logical or of",
    "The values must be bool (TypeError otherwise); an empty row gives\n"
    "    False.  Not differentiable.",
    "[[True, False], [], [False]]",
    "array([ True, False, False])",
    dtype="bool.", impl=_logical,
)
reduce_all = _documented(
    "all", "Take the logical and of",
    "The values must be bool (TypeError otherwise); an empty row gives\n"
    "    True.  Not differentiable.",
    "[[True, False], [], [True]]",
    "array([False,  True,  True])",
    dtype="bool.", impl=_logical,
)


# sparsegrad.reduce_sum / mean / max / min of a RaggedTensor come here, as
# tf.reduce_sum does (with their default axis, None: every axis).
reduction_ops.DISPATCH[RaggedTensor] = {
    f"reduce_{kind}": (lambda x, axis, keepdims, kind=kind:
                       _reduce(kind, x, axis, keepdims, f"reduce_{kind}"))
    for kind in ("sum", "mean", "max", "min")
}
