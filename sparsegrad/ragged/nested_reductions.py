"""The structure of a reduction over one ragged axis of a RaggedTensor of any
ragged rank: which output segment each flat value goes to, and the nested
row splits of the result.

A RaggedTensor of ragged rank ``r`` is a tree: the outer rows (level 0),
their rows (level 1), ..., the innermost rows (level ``r - 1``), whose
children are the flat values; ``splits[l]`` lists the children of the
level-``l`` nodes.  Axis ``a <= r`` is a node's position among its siblings
at level ``a`` (axis ``r``: a value's position in its innermost row).

Reducing axis ``a`` merges the siblings at level ``a`` position by position,
as TensorFlow does: under each parent (a level ``a - 1`` node, or the root
for axis 0) the merged node's children are the union of the siblings'
children by position (so its length is the longest sibling's), and so on
down to the values; each output value reduces the values that land on it.
An empty row gives an output position with no value (the reduction's empty
value: 0 for a sum, NaN for a mean, ...), and a parent with no children a
merged node with none.  Axis ``r`` (each innermost row to one value) is
the segment reduction by the values' row ids.

The functions here compute the segment of every flat value and the new
splits on the splits alone (NumPy or CuPy, whichever holds them); the
caller reduces the values with the segment ops, which are differentiable.
"""

import numpy as np

from ..ops import segment_ops
from .row_partition import rowids_from_splits

__all__ = ["merge_axis", "merge_segments", "reduce_innermost"]


def reduce_innermost(splits, be):
    """Reducing the innermost ragged axis (``r``): (the values' segments,
    the number of segments, the result's nested splits).  With keepdims the
    kept axis is a dense one of the values (the caller expands them), as in
    TensorFlow: an empty row then reduces to the reduction's empty value."""
    inner = splits[-1]
    return rowids_from_splits(inner, be), inner.shape[0] - 1, list(splits[:-1])


def merge_axis(splits, axis, keepdims, be):
    """Reducing ragged axis ``axis < r`` (see the module docstring):
    (the values' segments, the number of segments, the result's nested
    splits, ``r - 1`` levels, or ``r`` with `keepdims`).

    Parameters
    ----------
    splits : list of ndarray
        The nested row splits, outermost first (int32 or int64, valid).
    axis : int
        In ``[0, len(splits))``.
    keepdims : bool
        Keep the reduced axis with length 1.
    be : Backend
        The splits' backend.
    """
    xp = be.xp
    splits = [s.astype(np.int64, copy=False) for s in splits]
    if axis == 0:
        n_parents = 1
        node_map = xp.zeros(splits[0].shape[0] - 1, np.int64)
    else:
        n_parents = splits[axis - 1].shape[0] - 1
        node_map = rowids_from_splits(splits[axis - 1], be)
    new = list(splits[:max(axis - 1, 0)])
    if keepdims and axis > 0:
        new.append(xp.arange(n_parents + 1, dtype=np.int64))
    node_map, n_out, merged = _merge_levels(splits, axis, node_map, n_parents, be)
    new += merged
    if axis == 0 and not keepdims:
        new = new[1:]       # the root's single merged node is the new outer axis
    return node_map, n_out, new


def merge_segments(splits, segment_ids, n_segments, be):
    """Merging the outer rows by segment (the ragged segment ops): the rows
    with segment id ``s`` merge, position by position, into output row
    ``s``, as siblings merge under a parent in :func:`merge_axis`.

    Parameters
    ----------
    splits : list of ndarray
        The nested row splits, outermost first (int32 or int64, valid).
    segment_ids : ndarray
        One id in ``[0, n_segments)`` per outer row (checked by the caller).
    n_segments : int
        The number of output rows.
    be : Backend
        The splits' backend.

    Returns
    -------
    (ndarray, int, list of ndarray)
        The output position of every flat value (int64), the number of
        output values, and the result's nested splits (int64, as many
        levels as `splits`).

    Examples
    --------
    >>> from sparsegrad.framework.backend import CPU
    >>> index, n, new = merge_segments([np.array([0, 2, 3, 6])],
    ...                                np.array([1, 0, 1]), 2, CPU)
    >>> index.tolist(), n, new[0].tolist()
    ([1, 2, 0, 1, 2, 3], 4, [0, 1, 4])
    """
    splits = [s.astype(np.int64, copy=False) for s in splits]
    node_map = segment_ids.astype(np.int64, copy=False)
    return _merge_levels(splits, 0, node_map, n_segments, be)


def _merge_levels(splits, first, node_map, n_out, be):
    """Merge the nodes of level `first` into `n_out` groups by `node_map`,
    then their children level by level down to the values: (each value's
    merged position, the number of merged values, the merged splits of the
    levels ``first ..``)."""
    xp = be.xp
    new = []
    for level in range(first, len(splits)):
        # each merged node's length: the longest of the nodes merged into it
        lengths = xp.diff(splits[level])
        if lengths.size:    # (an empty merged node: the lowest int64, then 0)
            out_len = xp.maximum(segment_ops.unsorted_segment_max(
                lengths, node_map, n_out)._value, 0)
        else:
            out_len = xp.zeros(n_out, np.int64)
        out_splits = xp.zeros(n_out + 1, np.int64)
        xp.cumsum(out_len, out=out_splits[1:])
        new.append(out_splits)
        # the children land on the merged node's children, by position
        parent = rowids_from_splits(splits[level], be)
        position = xp.arange(parent.shape[0], dtype=np.int64) - splits[level][parent]
        node_map = out_splits[node_map[parent]] + position
        n_out = int(out_splits[-1])
    return node_map, n_out, new
