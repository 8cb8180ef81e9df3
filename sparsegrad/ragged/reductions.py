"""Reductions of a RaggedTensor: ``reduce_sum / prod / min / max / mean``,
``reduce_variance / std`` and ``reduce_any / all``.

Over the ragged axis (``axis=1``) row ``i`` of the result reduces the values
of row ``i``; the work is the unsorted segment reduction of
:mod:`sparsegrad.math` with the values' row ids as segment ids (TensorFlow's
construction), so an empty row gets that op's empty value: 0 for a sum, 1 for
a product, the dtype's largest finite value for a minimum and its lowest for
a maximum, NaN for a mean.  Over ``axis=0`` entry ``j`` reduces the ``j``-th
value of every row that has one (``max(row_lengths)`` entries).  Axes past 1
reduce the values' own dimensions.  At ragged rank 2 and above each ragged
axis is one segment reduction, from the innermost out (the segments and the
result's splits come from :mod:`.nested_reductions`).  Every reduction is
differentiable w.r.t. the values (through the segment ops' gradients).
"""

import numpy as np

from ..errors import InvalidArgumentError
from ..framework import dispatch
from ..framework.backend import backend_of
from ..framework.buffers import check_allocation
from ..framework.dtypes import true_division_dtype
from ..framework.tensor import convert_to_tensor, wrap
from ..ops import array_ops, math_ops, reduction_ops, segment_ops, unary_ops
from ..ops.segment_ops.unsorted_reductions import unsorted_segment_reduce_rows
from . import nested_reductions
from .ragged_tensor import RaggedTensor

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


def _axes(axis, ndim, what, noun="a RaggedTensor"):
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
                f"{what}: axis {int(a)} is out of range for {noun} of rank "
                f"{ndim} (expected {-ndim} <= axis < {ndim})"
            )
        if int(a) % ndim in axes:
            raise InvalidArgumentError(
                f"{what}: axis {int(a)} is repeated in {items!r}")
        axes.add(int(a) % ndim)
    return tuple(sorted(axes))


def _float_values(values, kind):
    """The sums a mean divides: integers become TensorFlow's truediv dtype
    (float32 for 8- and 16-bit integers, float64 for wider ones) after they
    are summed in their own dtype, as TensorFlow's ragged mean does."""
    if kind == "mean" and values.dtype.kind in "iub":
        return array_ops.cast(values, true_division_dtype(values.dtype))
    return values


def _segment_reduce(kind, values, ids, n_segments, xp, splits=None):
    """``unsorted_segment_<kind>(values, ids, n_segments)``; a mean divides the
    sum by the count of each segment (0 / 0 = NaN for an empty one).  `xp`:
    the array module of `ids`.  `splits`: the row splits whose row ids `ids`
    are, when the segments are rows (then reduced from the splits)."""
    if splits is not None:
        out = unsorted_segment_reduce_rows(
            values, splits, ids, "sum" if kind == "mean" else kind)
    else:
        out = _SEGMENT[kind](values, ids, n_segments)
    if kind != "mean":
        return out
    out = _float_values(out, kind)
    values = out
    if splits is not None:
        counts = xp.diff(splits).astype(values.dtype)
    else:
        counts = xp.bincount(ids, minlength=n_segments).astype(values.dtype)
    counts = counts.reshape((n_segments,) + (1,) * (values.ndim - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return math_ops.divide(out, wrap(counts))


def _dense_reduce(kind, x, axes, keepdims, xp):
    """A reduction of the dense values over `axes` (their own axes); `xp`: the
    array module of `x`."""
    if not axes:
        return x
    if kind in ("max", "min") and any(x.shape[a] == 0 for a in axes):
        shape = tuple(1 if a in axes else n for a, n in enumerate(x.shape)) \
            if keepdims else tuple(n for a, n in enumerate(x.shape) if a not in axes)
        return _extreme_identity(kind, x.dtype, shape, xp)
    if kind == "mean" and x.dtype.kind in "iub":   # summed, then divided
        total = _float_values(reduction_ops.reduce_sum(
            x, axis=list(axes), keepdims=keepdims), kind)
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        with np.errstate(invalid="ignore", divide="ignore"):
            return math_ops.divide(total, np.asarray(count, total.dtype))
    if kind != "prod":
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
    dtype = true_division_dtype(values.dtype) if kind == "mean" else values.dtype
    check_allocation(
        ((n_out,) + tuple(values.shape[1:]), dtype, f"{what}: the rows of rt"),
        ((values.shape[0],), ids_dtype, f"{what}: the values' segment ids"),
        ((n_out,), dtype, f"{what}: the counts of the rows"),
    )


def _reduce(kind, rt, axis, keepdims, what):
    if rt.ragged_rank > 1:
        return _reduce_nested(kind, rt, axis, keepdims, what)
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
        if kind in ("max", "min") and values.shape[0] == 0 and nrows:
            # TensorFlow reduces the rows first: empty ones give the
            # segment ops' lowest (highest) finite value, not an infinity
            _check_sizes(kind, values, nrows, rt.row_splits.dtype, what)
            values = _segment_reduce(kind, values, rt._rowids(be), nrows, xp,
                                     rt.row_splits)
        out = _dense_reduce(kind, values, (0,), keepdims, xp)
        return array_ops.reshape(out, (1,) + tuple(out.shape)) if keepdims else out
    if 1 in axes:  # along each row
        _check_sizes(kind, values, nrows, rt.row_splits.dtype, what)
        out = _segment_reduce(kind, values, rt._rowids(be), nrows, xp,
                              rt.row_splits)
        return array_ops.expand_dims(out, 1) if keepdims else out
    # axis 0: entry j reduces the j-th value of every row
    longest = int(rt._lengths(be).max()) if nrows else 0
    _check_sizes(kind, values, longest, np.int64, what)
    rowids = rt._rowids(be)
    position = xp.arange(values.shape[0], dtype=np.int64) - \
        rt.row_splits[:-1].astype(np.int64)[rowids]
    out = _segment_reduce(kind, values, position, longest, xp)
    return array_ops.expand_dims(out, 0) if keepdims else out


def _reduce_nested(kind, rt, axis, keepdims, what):
    """A reduction of a RaggedTensor of ragged rank >= 2: the flat values'
    own axes first, then each ragged axis from the innermost out, one
    segment reduction each (:mod:`.nested_reductions` gives the segments and
    the result's splits); a mean is the sum over the count, as TensorFlow
    computes it."""
    axes = _axes(axis, rt.ndim, what)
    if not axes:
        return rt
    if kind == "mean":
        total = _reduce_nested("sum", rt, axes, keepdims, what)
        ones = rt.with_flat_values(array_ops.ones_like(rt.flat_values))
        count = _reduce_nested("sum", ones, axes, keepdims, what)
        if isinstance(total, RaggedTensor):
            return total.with_flat_values(
                math_ops.divide(total.flat_values, count.flat_values))
        return math_ops.divide(total, count)
    splits = list(rt.nested_row_splits)
    be = backend_of(splits[0])
    xp = be.xp
    values = rt.flat_values
    n_used = int(splits[-1][-1])
    if values.shape[0] != n_used:
        values = values[:n_used]
    r = len(splits)
    inner = tuple(a - r for a in axes if a > r)
    values = _dense_reduce(kind, values, inner, keepdims, xp)
    row_splits = None       # the splits of the segments, when they are rows
    for a in sorted((a for a in axes if a <= r), reverse=True):
        if not splits:      # every ragged axis below is gone: a dense axis
            values = _dense_reduce(kind, values, (a,), keepdims, xp)
            continue
        innermost = a == len(splits)
        if innermost and len(splits) == r:
            # the innermost level's own row ids, computed once and kept
            level = rt
            while isinstance(level.values, RaggedTensor):
                level = level.values
            seg, n, splits = level._rowids(be), level.nrows(), splits[:-1]
            row_splits = level.row_splits
        elif innermost:
            seg, n, splits = nested_reductions.reduce_innermost(splits, be)
        else:
            seg, n, splits = nested_reductions.merge_axis(splits, a, keepdims, be)
        _check_sizes(kind, values, n, np.int64, what)
        values = _segment_reduce(kind, values, seg, n, xp, row_splits)
        row_splits = None
        if innermost and keepdims:      # a dense axis of length 1
            values = array_ops.expand_dims(values, 1)
        if a == 0 and keepdims and len(splits) == 1:
            # the kept outer axis over a dense result (TensorFlow's
            # expand_dims of the reduction without keepdims)
            splits = []
            values = array_ops.expand_dims(values, 0)
    if not splits:
        return values
    return RaggedTensor._from_trusted_splits(values, splits, rt.row_splits.dtype)


_DOC = """{verb} the values of each row of a RaggedTensor (or along `axis`).

    {empty}  Differentiable w.r.t. the values.

    Parameters
    ----------
    rt : RaggedTensor or array_like
        A dense input (a Tensor, an array or nested lists) is reduced as a
        dense tensor over the same axes, as TensorFlow's ragged reductions
        do (a mean divides the sum by the count).
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
        If an axis is not an int, or the values' dtype does not suit the
        reduction.
    InvalidArgumentError
        If an axis is out of range, or the result (with the segment ids
        and counts it needs) takes more memory than the process has
        (checked before anything is allocated).

    Examples
    --------
    >>> import sparsegrad as sg
    {example}
    """


def _dense_input(kind, x, axis, keepdims):
    """A reduction of a dense `x` (not a RaggedTensor), as TensorFlow's
    ragged reductions do it: by the dense reduction (a mean divides the sum
    by the count, so integers give the true-division dtype; variance and std
    by the ragged formula)."""
    what = f"reduce_{kind}"
    x = convert_to_tensor(x)
    axes = _axes(axis, x.ndim, what, "a dense tensor")
    xp = backend_of(x._value).xp
    if kind in ("variance", "std"):
        _check_moment_dtype(x.dtype, what)
        mean = _dense_reduce("mean", x, axes, keepdims, xp)
        mean_sq = _dense_reduce("mean", x * x, axes, keepdims, xp)
        return _variance(kind, mean, mean_sq)
    if kind in ("any", "all"):
        _check_logical_dtype(x.dtype, what)
        ints = array_ops.cast(x, np.int32)
        out = _dense_reduce("sum" if kind == "any" else "prod", ints, axes,
                            keepdims, xp)
        return math_ops.not_equal(out, 0)
    return _dense_reduce(kind, x, axes, keepdims, xp)


def _used(rt, what):
    """The values the rows of `rt` cover (validate=False may leave more)."""
    values = rt.values
    n_used = int(rt.row_splits[-1])
    return values if values.shape[0] == n_used else values[:n_used]


def _moment(kind, rt, axis, keepdims):
    """TensorFlow's ragged variance: ``max(mean(x**2) - mean(x)**2, 0)``
    (clipped, so that equal values give exactly 0); std is its square root.
    Integers are squared in their dtype (wrapping as TensorFlow's do) and
    their means are of the truediv dtype."""
    what = f"reduce_{kind}"
    _check_moment_dtype(rt.flat_values.dtype, what)
    if rt.ragged_rank == 1:
        rt = rt.with_values(_used(rt, what))
    mean = _reduce("mean", rt, axis, keepdims, what)
    flat = rt.flat_values
    mean_sq = _reduce("mean", rt.with_flat_values(flat * flat), axis, keepdims, what)
    if isinstance(mean, RaggedTensor):
        return mean.with_flat_values(
            _variance(kind, mean.flat_values, mean_sq.flat_values))
    return _variance(kind, mean, mean_sq)


def _check_moment_dtype(dtype, what):
    if dtype == np.bool_:   # TensorFlow: no kernel squares bools
        raise InvalidArgumentError(
            f"{what}: the values must be integers or floating-point, got dtype "
            f"{dtype}"
        )
    if dtype.kind not in "iuf":
        raise TypeError(
            f"{what}: the values must be integers or floating-point, got dtype "
            f"{dtype}"
        )


def _variance(kind, m, m2):
    """``max(m2 - m * m, 0)`` from the means of x and of x**2; its square
    root for std."""
    var = math_ops.maximum(m2 - m * m, np.zeros((), m.dtype))
    return unary_ops.sqrt(var) if kind == "std" else var


def _logical(kind, rt, axis, keepdims):
    """TensorFlow's ragged any / all: the bools as int32, a sum (any) or a
    product (all), then compared with 0: an empty row is False / True."""
    what = f"reduce_{kind}"
    ints = rt.with_flat_values(array_ops.cast(rt.flat_values, np.int32))
    out = _reduce("sum" if kind == "any" else "prod", ints, axis, keepdims, what)
    if isinstance(out, RaggedTensor):
        return out.with_flat_values(math_ops.not_equal(out.flat_values, 0))
    return math_ops.not_equal(out, 0)


def _extreme_identity(kind, dtype, shape, xp):
    """TensorFlow's max / min over an empty axis: -inf / +inf for floats,
    the integer dtype's lowest / highest (a Tensor of `shape`)."""
    if dtype.kind == "f":
        value = -np.inf if kind == "max" else np.inf
    else:
        info = np.iinfo(dtype)
        value = info.min if kind == "max" else info.max
    return wrap(xp.full(shape, value, dtype=dtype))


def _check_logical_dtype(dtype, what):
    if dtype != np.bool_:
        raise TypeError(f"{what}: the values must be bool, got dtype {dtype}")


def _documented(kind, verb, empty, rows, result, dtype="The dtype of the values.",
                impl=None):
    """``reduce_<kind>``, documented from `_DOC`; its example reduces the
    ragged constant `rows` (source text) to `result` (the printed array,
    maybe followed by more example lines)."""
    example = (f">>> rt = sg.ragged.constant({rows})\n"
               f"    >>> sg.ragged.reduce_{kind}(rt).numpy()\n    {result}")

    def reduce(rt, axis=1, keepdims=False, name=None):
        del name
        if not isinstance(rt, RaggedTensor):
            return _dense_input(kind, rt, axis, keepdims)
        if axis is None and kind in ("max", "min") and rt.flat_values.shape[0] == 0:
            # every axis: TensorFlow reduces the flat values themselves
            return _extreme_identity(kind, rt.dtype, (1,) * rt.ndim if keepdims else (),
                                     backend_of(rt.row_splits).xp)
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
    dtype="For integer values TensorFlow's true-division dtype (float32 for\n"
    "        8- and 16-bit integers, float64 for wider ones), else their dtype.",
)

reduce_variance = _documented(
    "variance", "Take the variance of",
    "Computed as ``max(mean(x**2) - mean(x)**2, 0)``, as TensorFlow does\n"
    "    (equal values give exactly 0); an empty row gives NaN.  Integer\n"
    "    values are squared in their dtype and averaged in TensorFlow's\n"
    "    true-division dtype (int32 gives float64); bool values raise\n"
    "    InvalidArgumentError.",
    "[[3.0, 1.0, 4.0], [], [2.0, 2.0]]",
    "array([1.5555553,       nan, 0.       ], dtype=float32)",
    dtype="For integer values TensorFlow's true-division dtype (float32 for\n"
    "        8- and 16-bit integers, float64 for wider ones), else their dtype.",
    impl=_moment,
)
reduce_std = _documented(
    "std", "Take the standard deviation of",
    "The square root of :func:`reduce_variance`; an empty row gives NaN.",
    "[[1.0, 3.0], [], [2.0]]",
    "array([ 1., nan,  0.], dtype=float32)",
    dtype="As :func:`reduce_variance`'s.",
    impl=_moment,
)
reduce_any = _documented(
    "any", "Take the logical or of",
    "A RaggedTensor's values may have any number dtype: cast to int32\n"
    "    first, as TensorFlow does (0.5 counts as 0); a dense input must be\n"
    "    bool (TypeError otherwise).  An empty row gives False.  Not\n"
    "    differentiable.",
    "[[True, False], [], [False]]",
    "array([ True, False, False])",
    dtype="bool.", impl=_logical,
)
reduce_all = _documented(
    "all", "Take the logical and of",
    "A RaggedTensor's values may have any number dtype: cast to int32\n"
    "    first, as TensorFlow does (0.5 counts as 0); a dense input must be\n"
    "    bool (TypeError otherwise).  An empty row gives True.  Not\n"
    "    differentiable.",
    "[[True, False], [], [True]]",
    "array([False,  True,  True])",
    dtype="bool.", impl=_logical,
)


def _tf_defaults(fn):
    """``sparsegrad.reduce_<kind>``'s handler of a RaggedTensor: `fn` with
    TensorFlow's default axis (None: every axis)."""
    return lambda input_tensor, axis=None, keepdims=False, name=None: fn(
        input_tensor, axis=axis, keepdims=keepdims)


# sparsegrad.reduce_<kind> of a RaggedTensor comes here, as tf.reduce_sum's
# does (framework/dispatch.py).
for _fn in (reduce_sum, reduce_prod, reduce_mean, reduce_max, reduce_min,
            reduce_variance, reduce_std, reduce_any, reduce_all):
    dispatch.register(getattr(reduction_ops, _fn.__name__), RaggedTensor,
                      _tf_defaults(_fn))
