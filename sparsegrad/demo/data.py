"""Data for the demo: a synthetic click-through-rate set, or an svmlight file.

:func:`make_ctr_dataset` draws a data set shaped like the categorical half of
a display-advertising log: every example has one value in each of
``n_fields`` categorical fields, the values of a field follow a Zipf law (a
few values are very common, most are rare), and each (field, value) pair is
hashed into one of ``n_buckets`` feature columns.  The click label comes from
a hidden logistic model: a bias, one weight per (field, value), and a few
pairwise *crosses* ``c * u[f, a] * u[g, b]`` between the latent factors of the
values of two fields.  A linear model over the one-hot features can learn the
weights but not the crosses (their effect averages to zero over either field
alone); a model with per-value embeddings can learn both.

:func:`load_svmlight` reads a real data set in the svmlight/libsvm format.

Both return a :class:`CTRDataset` of two :class:`CTRSplit` (train and test).
"""

import math
import os
from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

__all__ = [
    "CTRSplit", "CTRDataset", "DataFileError", "make_ctr_dataset", "load_svmlight",
]

# Number of distinct values of each field (cycled when n_fields > 26): a mix of
# tiny, medium and huge vocabularies, as in the 26 categorical fields of the
# Criteo display-advertising data.
FIELD_CARDINALITIES = (
    1_000, 500, 200_000, 50_000, 300, 25, 10_000, 600, 3, 30_000, 5_000,
    100_000, 3_000, 30, 10_000, 80_000, 10, 4_000, 2_000, 4, 150_000, 15, 12,
    40_000, 80, 20_000,
)
# Exponent of the Zipf law of the values of every field.
ZIPF_EXPONENT = 1.1
# Standard deviation of the hidden per-value weights.
WEIGHT_SCALE = 0.35
# Pairs of fields whose values interact; pairs naming a field >= n_fields are
# left out.
CROSSES = ((0, 1), (4, 7), (5, 13), (10, 12), (17, 18), (24, 14))
# Strength of each cross: its term is CROSS_SCALE * u[f, a] * u[g, b] with
# standard normal latent factors u.
CROSS_SCALE = 0.8
# Mean click probability: the bias of the hidden logit is solved for it.
CLICK_RATE = 0.25

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


class CTRSplit(NamedTuple):
    """One split (train or test) of a click-through-rate data set."""

    #: scipy.sparse.csr_matrix of shape (n, n_buckets), float32: the features.
    #: For the synthetic set, the hashed one-hot encoding: one stored 1.0 per
    #: field per row, in field order, so that ``X.indices.reshape(n, n_fields)``
    #: equals `ids` (two fields of a row may share a bucket; the row then holds
    #: that column twice).
    X: sp.csr_matrix
    #: ndarray of shape (n, n_fields), int64: the bucket of each field of each
    #: row; None for data read from an svmlight file, which has no fields.
    ids: Optional[np.ndarray]
    #: ndarray of shape (n,), float32: the labels, 0.0 (no click) or 1.0 (click).
    y: np.ndarray


class CTRDataset(NamedTuple):
    """A click-through-rate data set: a train split, a test split and their sizes."""

    #: CTRSplit: the examples to train on.
    train: CTRSplit
    #: CTRSplit: the held-out examples.
    test: CTRSplit
    #: int or None: the number of categorical fields (None for svmlight data).
    n_fields: Optional[int]
    #: int: the number of feature columns (``X.shape[1]`` of both splits).
    n_buckets: int


class DataFileError(ValueError):
    """A data file that cannot be used: its message names the file and the problem."""


def _check_int(value, name, low, high=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return int(value)


def _check_fraction(test_fraction):
    fraction = float(test_fraction)
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    return fraction


def _split_sizes(n_examples, test_fraction):
    n_test = round(n_examples * test_fraction)
    if n_test < 1 or n_test >= n_examples:
        raise ValueError(
            f"{n_examples} examples with test_fraction={test_fraction} leave "
            f"{n_test} test and {n_examples - n_test} train examples; both need "
            "at least one")
    return n_examples - n_test


def _hash_buckets(field, values, n_buckets):
    """Bucket of each value of `field`: splitmix64 of ``(field << 32) | value``."""
    z = (np.uint64(field) << np.uint64(32)) | values.astype(np.uint64)
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = (z ^ (z >> np.uint64(31))) & _MASK64
    return (z % np.uint64(n_buckets)).astype(np.int64)


def _zipf_cdf(cardinality):
    # math.pow, one value at a time: NumPy's vectorised float64 power takes
    # CPU-specific SIMD paths, and the data must be the same on every CPU.
    weights = np.array([math.pow(k, -ZIPF_EXPONENT) for k in range(1, cardinality + 1)])
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _bias_for_rate(logit, rate):
    """The b with ``mean(sigmoid(logit + b)) == rate``, by Newton's method.

    The result is rounded to 1e-9: the iterations go through np.tanh, whose
    last bits depend on the CPU, and the rounding keeps them out of the data.
    """
    b = math.log(rate / (1.0 - rate)) - float(np.median(logit))
    for _ in range(20):
        p = _sigmoid(logit + b)
        step = (float(p.mean()) - rate) / max(float(np.mean(p * (1.0 - p))), 1e-12)
        b -= step
        if abs(step) < 1e-9:
            break
    return round(b, 9)


def _one_hot_csr(ids, n_buckets):
    n_rows, n_fields = ids.shape
    indptr = np.arange(0, n_rows * n_fields + 1, n_fields, dtype=np.int64)
    index_dtype = np.int32 if n_rows * n_fields < 2**31 else np.int64
    indptr = indptr.astype(index_dtype)
    data = np.ones(n_rows * n_fields, dtype=np.float32)
    indices = ids.astype(index_dtype).ravel()
    return sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_buckets))


def make_ctr_dataset(n_examples=500_000, *, n_fields=26, n_buckets=2**20, seed=0,
                     test_fraction=0.2):
    """Draw a synthetic click-through-rate data set.

    Field ``f`` takes ``FIELD_CARDINALITIES[f % 26]`` distinct values with
    Zipf-distributed frequencies (exponent ``ZIPF_EXPONENT``); the pair
    (field, value) is hashed into a bucket in ``[0, n_buckets)``.  The click
    probability is ``sigmoid(b + sum_f w[f, v_f] + sum_(f, g) CROSS_SCALE *
    u[f, v_f] * u[g, v_g])`` over the field pairs of ``CROSSES``, with hidden
    normal weights `w` (standard deviation ``WEIGHT_SCALE``), standard normal
    latent factors `u`, and the bias `b` that makes the mean probability
    ``CLICK_RATE``; the label is drawn from it.  The first
    ``n_examples - round(n_examples * test_fraction)`` examples are the train
    split, the rest the test split (the examples are independent).

    The result depends only on the arguments: the same seed gives the same
    bytes on any machine and for any thread count.

    Parameters
    ----------
    n_examples : int, default=500_000
        Number of examples, train and test together.
    n_fields : int, default=26
        Number of categorical fields.
    n_buckets : int, default=2**20
        Number of hash buckets (feature columns), at most ``2**31 - 1``.
    seed : int, default=0
        Seed of the hidden model and of the examples (>= 0).
    test_fraction : float, default=0.2
        Share of the examples held out as the test split, in (0, 1).

    Returns
    -------
    CTRDataset
        ``train`` and ``test`` splits with ``X`` (CSR float32 one-hot
        features), ``ids`` (int64 buckets, one column per field) and ``y``
        (float32 0/1 labels); ``n_fields`` and ``n_buckets``.

    Raises
    ------
    ValueError
        If a count is out of range (``n_examples must be >= 2, got 0``) or
        the split would leave the train or test split empty.
    TypeError
        If a count is not an int.

    Examples
    --------
    >>> from sparsegrad.demo.data import make_ctr_dataset
    >>> data = make_ctr_dataset(1_000, seed=1)
    >>> data.train.X.shape, data.test.ids.shape, data.n_fields
    ((800, 1048576), (200, 26), 26)
    >>> int(data.train.X.getnnz(axis=1).min()), int(data.train.X.getnnz(axis=1).max())
    (26, 26)
    >>> bool((data.train.X.indices.reshape(-1, 26) == data.train.ids).all())
    True
    >>> sorted(set(data.train.y.tolist()))
    [0.0, 1.0]
    """
    n_examples = _check_int(n_examples, "n_examples", 2)
    n_fields = _check_int(n_fields, "n_fields", 1)
    n_buckets = _check_int(n_buckets, "n_buckets", 1, 2**31 - 1)
    seed = _check_int(seed, "seed", 0)
    test_fraction = _check_fraction(test_fraction)
    n_train = _split_sizes(n_examples, test_fraction)

    model_seed, sample_seed = np.random.SeedSequence(seed).spawn(2)
    model_rng = np.random.default_rng(model_seed)
    sample_rng = np.random.default_rng(sample_seed)
    crosses = [(f, g) for f, g in CROSSES if f < n_fields and g < n_fields]
    crossed = sorted({f for pair in crosses for f in pair})

    cardinalities = [FIELD_CARDINALITIES[f % len(FIELD_CARDINALITIES)]
                     for f in range(n_fields)]
    weights = [model_rng.normal(0.0, WEIGHT_SCALE, size=c) for c in cardinalities]
    factors = {f: model_rng.standard_normal(cardinalities[f]) for f in crossed}

    ids = np.empty((n_examples, n_fields), dtype=np.int64)
    logit = np.zeros(n_examples)
    values = {}
    for f, cardinality in enumerate(cardinalities):
        value = np.searchsorted(_zipf_cdf(cardinality), sample_rng.random(n_examples),
                                side="right")
        np.minimum(value, cardinality - 1, out=value)   # u == cdf[-1] rounding
        ids[:, f] = _hash_buckets(f, value, n_buckets)
        logit += weights[f][value]
        if f in factors:
            values[f] = value
    for f, g in crosses:
        logit += CROSS_SCALE * factors[f][values[f]] * factors[g][values[g]]
    logit += _bias_for_rate(logit, CLICK_RATE)
    # A click is a draw of Bernoulli(sigmoid(logit)): logit plus standard
    # logistic noise is positive with exactly that probability.  (Generator
    # draws use the C library's log, not NumPy's CPU-specific SIMD loops.)
    click = logit + sample_rng.logistic(size=n_examples) > 0.0
    y = click.astype(np.float32)

    def split(rows):
        part = np.ascontiguousarray(ids[rows])
        return CTRSplit(_one_hot_csr(part, n_buckets), part, y[rows])

    return CTRDataset(split(slice(0, n_train)), split(slice(n_train, None)),
                      n_fields, n_buckets)


def load_svmlight(path, *, test_fraction=0.2, seed=0):
    """Read an svmlight/libsvm file and split it into train and test.

    The rows are shuffled with `seed` before the split (files are often
    sorted by label).  Labels -1/+1 or 0/1 become 0/1.  The features keep
    their stored values (use 1.0 for one-hot data).

    Parameters
    ----------
    path : str or os.PathLike
        The file, read by :func:`sklearn.datasets.load_svmlight_file`
        (needs scikit-learn, part of the ``demo`` extra).
    test_fraction : float, default=0.2
        Share of the rows held out as the test split, in (0, 1).
    seed : int, default=0
        Seed of the shuffle (>= 0).

    Returns
    -------
    CTRDataset
        Splits with ``X`` (CSR float32, sorted indices, duplicates summed),
        ``ids=None`` and ``y`` (float32 0/1); ``n_fields=None`` and
        ``n_buckets`` the number of columns.

    Raises
    ------
    FileNotFoundError
        If `path` does not exist (an ``OSError``; other read errors are
        ``OSError`` too).
    DataFileError
        A ``ValueError`` naming the file: the file is not in the svmlight
        format, has fewer than two rows or no features, or has a label other
        than -1/+1 or 0/1.
    ValueError
        If `test_fraction` or `seed` is out of range.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from sklearn.datasets import dump_svmlight_file
    >>> from sparsegrad.demo.data import load_svmlight
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.svm")
    >>> X = np.eye(10, 4, dtype=np.float32)
    >>> dump_svmlight_file(X, np.where(np.arange(10) % 2, 1, -1), path)
    >>> data = load_svmlight(path)
    >>> data.train.X.shape, data.test.X.shape, data.train.ids is None
    ((8, 4), (2, 4), True)
    >>> sorted(set(data.train.y.tolist()))
    [0.0, 1.0]
    """
    test_fraction = _check_fraction(test_fraction)
    seed = _check_int(seed, "seed", 0)
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory, not an svmlight file")
    from sklearn.datasets import load_svmlight_file

    try:
        X, labels = load_svmlight_file(path, dtype=np.float32)
    except (ValueError, UnicodeDecodeError, RuntimeError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        if len(reason) > 100:
            reason = reason[:97] + "..."
        raise DataFileError(f"{path}: not an svmlight/libsvm file ({reason})") from None
    n_rows = X.shape[0]
    if n_rows < 2:
        raise DataFileError(f"{path}: has {n_rows} rows; at least 2 are needed")
    if X.shape[1] == 0:
        raise DataFileError(f"{path}: has no features")
    kinds = np.unique(labels)
    if np.isin(kinds, (-1.0, 1.0)).all() and -1.0 in kinds:
        y = (labels > 0).astype(np.float32)
    elif np.isin(kinds, (0.0, 1.0)).all():
        y = labels.astype(np.float32)
    else:
        shown = ", ".join(f"{v:g}" for v in kinds[:5])
        raise DataFileError(
            f"{path}: labels must be -1/+1 or 0/1, found {shown}"
            + (", ..." if kinds.size > 5 else ""))
    X = sp.csr_matrix(X, dtype=np.float32)
    X.sum_duplicates()
    n_train = _split_sizes(n_rows, test_fraction)
    order = np.random.default_rng(seed).permutation(n_rows)
    train, test = order[:n_train], order[n_train:]
    return CTRDataset(CTRSplit(X[train], None, y[train]),
                      CTRSplit(X[test], None, y[test]), None, X.shape[1])
