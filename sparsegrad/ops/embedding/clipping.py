"""`max_norm`: the clipping of looked-up rows, for embedding_lookup and the bags.

TensorFlow clips the rows of a lookup with ``clip_by_norm(rows, max_norm,
axes=<the embedding axes>)``: ``rows * max_norm / maximum(norm, max_norm)``,
a negative `max_norm` taken as 0.  Here the same formula is built from
differentiable ops, so that second derivatives work, with the one change
DESIGN.md makes for ``clip_by_norm``: a zero row with `max_norm` 0 gives
zeros, not ``0 / 0``.
"""

import numpy as np

from ...errors import InvalidArgumentError
from ...framework.backend import backend_of
from ...framework.tensor import Tensor, wrap
from ...framework.variable import Variable
from .. import math_ops, reduction_ops, unary_ops

__all__ = ["check_max_norm", "clip_rows"]


def check_max_norm(max_norm, op):
    """`max_norm` as a Python float (negative values become 0), or None.

    Parameters
    ----------
    max_norm : number, 0-d array, Tensor, Variable or None
    op : str
        The op's name, for the messages.

    Returns
    -------
    float or None

    Raises
    ------
    TypeError
        If `max_norm` is not a real number (a string, a bool, ...).
    InvalidArgumentError
        If it holds more than one number.

    Examples
    --------
    >>> from sparsegrad.ops.embedding.clipping import check_max_norm
    >>> check_max_norm(-1, "embedding_lookup"), check_max_norm(None, "op")
    (0.0, None)
    """
    if max_norm is None:
        return None
    value = max_norm.value() if isinstance(max_norm, Variable) else max_norm
    if isinstance(value, Tensor):
        value = value._value
    if backend_of(value).on_gpu:
        value = value.get()  # one scalar, read back once
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = np.asarray(None)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{op}: max_norm must be a real number, got {max_norm!r}")
    if array.size != 1:
        raise InvalidArgumentError(
            f"{op}: max_norm must be a scalar, got shape {array.shape}"
        )
    c = float(array.reshape(()))
    return 0.0 if c < 0 else c


def clip_rows(rows, max_norm, ids_rank):
    """Clip each embedding of `rows` (its dims after `ids_rank`) to norm `max_norm`.

    Parameters
    ----------
    rows : Tensor
        Looked-up rows, of shape ``ids.shape + row shape``.
    max_norm : float
        Checked by :func:`check_max_norm` (not negative).
    ids_rank : int
        The number of leading dims that index embeddings.

    Returns
    -------
    Tensor
        ``rows * max_norm / maximum(norm, max_norm)``, the norm taken over
        each embedding; a zero embedding stays zeros.
    """
    axes = tuple(range(ids_rank, rows.ndim))
    # inf * 0 and inf / inf are NaN, as in TensorFlow, without a warning
    with np.errstate(invalid="ignore", over="ignore"):
        if not axes:  # scalar embeddings: the norm is the absolute value
            norm = unary_ops.abs(rows)
        else:
            sq = reduction_ops.reduce_sum(rows * rows, axis=axes, keepdims=True)
            positive = wrap(sq._value > 0)
            ones = backend_of(sq._value).xp.ones_like(sq._value)
            safe = math_ops.where(positive, sq, wrap(ones))
            norm = math_ops.where(positive, unary_ops.sqrt(safe), sq)
        divisor = math_ops.maximum(norm, max_norm)
        if max_norm == 0:  # zeros, not 0 / 0, for a zero embedding
            xp = backend_of(divisor._value).xp
            divisor = math_ops.where(wrap(divisor._value > 0), divisor,
                                     wrap(xp.ones_like(divisor._value)))
        return rows * max_norm / divisor
