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

__all__ = ["merge_axis", "reduce_innermost"]


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
    r = len(splits)
    if axis == 0:
        n_parents = 1
        node_map = xp.zeros(splits[0].shape[0] - 1, np.int64)
    else:
        n_parents = splits[axis - 1].shape[0] - 1
        node_map = rowids_from_splits(splits[axis - 1], be)
    new = list(splits[:max(axis - 1, 0)])
    if keepdims and axis > 0:
        new.append(xp.arange(n_parents + 1, dtype=np.int64))
    n_out = n_parents
    for level in range(axis, r):
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
    if axis == 0 and not keepdims:
        new = new[1:]       # the root's single merged node is the new outer axis
    return node_map, n_out, new

