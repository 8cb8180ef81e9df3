"""Inputs shared by the benchmark areas: the embedding table and its Zipf ids.

The embedding setting of the suite (issues 2 to 4): a table of 1,000,000 x 64
float32 rows and a gradient of 16,384 row ids drawn from Zipf(1.1) (about
8,000 distinct rows, many repeated).  ``quick`` shrinks it to 10,000 x 16
rows and 512 ids.  Everything is drawn from fixed seeds, so every library of
a case gets the same numbers.
"""

import numpy as np

from .sizes import EMBEDDING

ZIPF_A = 1.1


def embedding_sizes(quick):
    """``(n_rows, width, n_ids)`` of the embedding setting.

    Examples
    --------
    >>> embedding_sizes(True)
    (10000, 16, 512)
    """
    return EMBEDDING.pick(quick)


def zipf_ids(n_ids, n_rows, seed=0):
    """`n_ids` int64 row ids of Zipf(1.1) popularity, folded into ``[0, n_rows)``.

    Examples
    --------
    >>> ids = zipf_ids(1000, 50)
    >>> ids.dtype.name, int(ids.min()) >= 0, int(ids.max()) < 50
    ('int64', True, True)
    """
    rng = np.random.default_rng(seed)
    return ((rng.zipf(ZIPF_A, size=n_ids) - 1) % n_rows).astype(np.int64)


def sparse_gradient(quick, seed=0, scale=1.0):
    """The ids and the float32 rows of the embedding gradient.

    Returns
    -------
    ids : ndarray of int64, shape (n_ids,)
    values : ndarray of float32, shape (n_ids, width)
    dense_shape : tuple of int
        ``(n_rows, width)``.

    Examples
    --------
    >>> ids, values, shape = sparse_gradient(True)
    >>> ids.shape, values.shape, shape
    ((512,), (512, 16), (10000, 16))
    """
    n_rows, width, n_ids = embedding_sizes(quick)
    ids = zipf_ids(n_ids, n_rows, seed)
    rng = np.random.default_rng(seed + 1)
    values = rng.standard_normal((n_ids, width), dtype=np.float32)
    if scale != 1.0:
        values *= np.float32(scale)
    return ids, values, (n_rows, width)


def table(quick, seed=2, scale=1.0):
    """The float32 embedding table, ``(n_rows, width)``, standard normal times `scale`.

    Examples
    --------
    >>> table(True).shape
    (10000, 16)
    """
    n_rows, width, _ = embedding_sizes(quick)
    out = np.random.default_rng(seed).standard_normal((n_rows, width), dtype=np.float32)
    if scale != 1.0:
        out *= np.float32(scale)
    return out


def n_distinct(ids):
    """The number of distinct values in `ids`.

    Examples
    --------
    >>> n_distinct(np.array([3, 1, 3]))
    2
    """
    return int(np.unique(ids).size)


def sparse_update_bytes(quick, n_state, itemsize=4, grad_itemsize=None):
    """Bytes a sparse row update must move: each touched row of the variable
    and of its ``n_state - 1`` slots read and written once, the gradient rows
    and the ids read once, for values of `itemsize` bytes (2 for float16 and
    bfloat16) and gradient values of `grad_itemsize` bytes (default
    `itemsize`; 4 for a float32 gradient of a half table).

    Examples
    --------
    >>> sparse_update_bytes(True, 1) > sparse_update_bytes(True, 1, itemsize=2)
    True
    >>> ids, values, _ = sparse_gradient(True)
    >>> (sparse_update_bytes(True, 2, 2, grad_itemsize=4)
    ...  - sparse_update_bytes(True, 2, 2)) == values.size * 2
    True
    """
    ids, values, (_, width) = sparse_gradient(quick)
    grad_itemsize = itemsize if grad_itemsize is None else grad_itemsize
    return (2 * n_state * n_distinct(ids) * width * itemsize
            + values.size * grad_itemsize + ids.nbytes)
