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

:func:`load_svmlight` reads a real data set in the svmlight/libsvm format,
checking every line, and hashes its feature ids into ``n_buckets`` columns
(:func:`hash_ids`), so that no id, however large, sizes an allocation.

Both return a :class:`CTRDataset` of two :class:`CTRSplit` (train and test).
"""

import math
import os
from array import array
from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

__all__ = [
    "CTRSplit", "CTRDataset", "DataFileError", "make_ctr_dataset", "load_svmlight",
    "hash_ids", "ID_LIMIT",
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

#: Feature ids of an svmlight file are integers below this bound (a 64-bit
#: hash of a feature's name, for instance).
ID_LIMIT = 2**64

_FLOAT32_MAX = float(np.finfo(np.float32).max)


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
    #: int or None: the number of distinct feature ids of an svmlight file,
    #: hashed into the `n_buckets` columns (None for the synthetic set).
    n_ids: Optional[int] = None


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


def _splitmix64(z):
    """splitmix64 of each element of the uint64 array `z` (a new array; the
    products wrap modulo 2**64)."""
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _hash_buckets(field, values, n_buckets):
    """Bucket of each value of `field`: splitmix64 of ``(field << 32) | value``."""
    return hash_ids((np.uint64(field) << np.uint64(32)) | values.astype(np.uint64),
                    n_buckets)


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


def load_svmlight(path, *, n_buckets=2**20, test_fraction=0.2, seed=0):
    """Read an svmlight/libsvm file, hash its feature ids, split it in two.

    Each line is ``label id:value id:value ...``: the label is -1/+1 or 0/1
    (one convention per file; both become 0/1), the ids are integers in
    ``[0, 2**64)`` in any order, none twice on a line, and the values are
    finite float32 numbers.  A ``qid:N`` token is skipped; ``#`` starts a
    comment; blank lines are skipped.  Each id is hashed into one of
    `n_buckets` columns (splitmix64 of the id, modulo `n_buckets`), so the
    size of the features is set by `n_buckets`, never by the ids; ids that
    share a column add their values (the hashing trick).  The rows are
    shuffled with `seed` before the split (files are often sorted by
    label).

    The whole file is checked before anything is returned: a malformed
    file raises :class:`DataFileError` naming the file, the line (where the
    problem has one) and the problem.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    n_buckets : int, default=2**20
        Number of feature columns the ids are hashed into, in
        ``[1, 2**31 - 1]``.
    test_fraction : float, default=0.2
        Share of the rows held out as the test split, in (0, 1).
    seed : int, default=0
        Seed of the shuffle (>= 0).

    Returns
    -------
    CTRDataset
        Splits with ``X`` (CSR float32 of `n_buckets` columns, sorted
        indices, colliding ids summed), ``ids=None`` and ``y`` (float32
        0/1); ``n_fields=None``, ``n_buckets`` and ``n_ids`` (the number of
        distinct feature ids of the file).

    Raises
    ------
    FileNotFoundError
        If `path` does not exist (an ``OSError``, as are the other errors
        of reading it, e.g. ``IsADirectoryError``); the message starts with
        `path`.
    DataFileError
        A ``ValueError`` whose message starts with `path`: a line that is
        not text, a label or feature that does not parse or is out of range
        (``line 7: feature id -3 is negative``), an id twice on a line, a
        file of fewer than two examples, with no features, or with one
        label only.
    ValueError
        If `n_buckets`, `test_fraction` or `seed` is out of range.
    TypeError
        If `n_buckets` or `seed` is not an int.

    Examples
    --------
    >>> import os, tempfile
    >>> from sparsegrad.demo.data import load_svmlight
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.svm")
    >>> with open(path, "w") as f:
    ...     for k in range(10):
    ...         _ = f.write(f"{k % 2 * 2 - 1} {k}:1 {2**40 + k}:0.5\\n")
    >>> data = load_svmlight(path, n_buckets=64)
    >>> data.train.X.shape, data.test.X.shape, data.n_ids
    ((8, 64), (2, 64), 20)
    >>> sorted(set(data.train.y.tolist()))
    [0.0, 1.0]
    >>> with open(path, "a") as f:
    ...     _ = f.write("1 3:nan\\n")
    >>> load_svmlight(path)
    Traceback (most recent call last):
    ...
    sparsegrad.demo.data.DataFileError: ...tiny.svm: line 11: the value 'nan' of \
feature 3 is not a finite float32 number
    """
    n_buckets = _check_int(n_buckets, "n_buckets", 1, 2**31 - 1)
    test_fraction = _check_fraction(test_fraction)
    seed = _check_int(seed, "seed", 0)
    path = os.fspath(path)
    labels, ids, values, indptr = _read_svmlight(path)
    n_rows = labels.shape[0]
    if n_rows < 2:
        what = "no examples (no line with a label)" if n_rows == 0 else \
            "only 1 example"
        raise DataFileError(f"{path}: has {what}; at least 2 are needed, to train "
                            "and to test")
    if ids.shape[0] == 0:
        raise DataFileError(f"{path}: has no features (no id:value on any line)")
    y = (labels > 0).astype(np.float32)
    if y.min() == y.max():
        raise DataFileError(
            f"{path}: every one of its {n_rows} examples has label "
            f"{labels[0]}; a model needs examples of both labels")
    try:
        n_train = _split_sizes(n_rows, test_fraction)
    except ValueError as exc:
        raise DataFileError(f"{path}: {exc}") from None
    # (sorted and counted: NumPy 2's hashing np.unique takes seconds here)
    ordered = np.sort(ids)
    n_ids = int(np.count_nonzero(ordered[1:] != ordered[:-1])) + 1
    X = sp.csr_matrix((values, hash_ids(ids, n_buckets), indptr),
                      shape=(n_rows, n_buckets))
    X.sum_duplicates()
    order = np.random.default_rng(seed).permutation(n_rows)
    train, test = order[:n_train], order[n_train:]
    return CTRDataset(CTRSplit(X[train], None, y[train]),
                      CTRSplit(X[test], None, y[test]), None, n_buckets, n_ids)


def hash_ids(ids, n_buckets):
    """The column of each feature id: splitmix64 of the id, modulo `n_buckets`.

    Parameters
    ----------
    ids : array_like of uint64
        Feature ids in ``[0, 2**64)``.
    n_buckets : int
        Number of columns, >= 1.

    Returns
    -------
    ndarray of int64
        Columns in ``[0, n_buckets)``, the shape of `ids`; the same on every
        machine.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.demo.data import hash_ids
    >>> columns = hash_ids(np.array([0, 1, 2**64 - 1], np.uint64), 1000)
    >>> columns.dtype, bool(((0 <= columns) & (columns < 1000)).all())
    (dtype('int64'), True)
    """
    z = _splitmix64(np.asarray(ids, dtype=np.uint64))
    return (z % np.uint64(n_buckets)).astype(np.int64)


class _BadLine(ValueError):
    """What is wrong with one line of an svmlight file (the caller adds the
    file and the line number)."""


def _open(path):
    """`path` opened for binary reading; an OSError naming it otherwise."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory, not an svmlight file")
    try:
        return open(path, "rb")
    except OSError as exc:
        raise type(exc)(f"{path}: cannot open it ({exc.strerror or exc})") from None


def _read_svmlight(path):
    """Parse and check every line of `path`: (labels int8, ids uint64,
    values float32, indptr int64) as NumPy arrays."""
    labels = array("b")
    ids = array("Q")
    values = array("f")
    indptr = array("q", [0])
    first = {}                          # label -> the line it was first seen on
    lineno = 0
    with _open(path) as f:
        try:
            for lineno, raw in enumerate(f, 1):
                text = _text(raw)
                cut = text.find("#")
                parts = (text if cut < 0 else text[:cut]).split()
                if not parts:
                    continue
                label = _label(parts[0], lineno, first)
                _features(parts, ids, values)
                labels.append(label)
                indptr.append(len(ids))
        except _BadLine as exc:
            raise DataFileError(f"{path}: line {lineno}: {exc}") from None
        except OSError as exc:
            raise type(exc)(f"{path}: cannot read it ({exc.strerror or exc})") from None
    return (np.frombuffer(labels, np.int8), np.frombuffer(ids, np.uint64),
            np.frombuffer(values, np.float32), np.frombuffer(indptr, np.int64))


def _text(raw):
    """Line `raw` decoded as UTF-8; _BadLine if it is not text."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _BadLine(f"is not text (byte 0x{raw[exc.start]:02x} at column "
                       f"{exc.start + 1} is not UTF-8); is it a binary file?") from None
    if "\0" in text:
        raise _BadLine(f"is not text (a NUL byte at column {text.index(chr(0)) + 1}); "
                       "is it a binary file?")
    return text


def _shown(token):
    """`token` quoted for a message, cut short if long."""
    return repr(token) if len(token) <= 40 else repr(token[:37]) + "..."


def _label(token, lineno, first):
    """The label of a line, -1, 0 or 1; the first line of each is kept in
    `first` to refuse a file that mixes -1 with 0."""
    try:
        value = float(token)
    except ValueError:
        raise _BadLine(f"the label {_shown(token)} is not a number") from None
    if value not in (-1.0, 0.0, 1.0):
        raise _BadLine(f"the label {_shown(token)} is not -1/+1 or 0/1")
    label = int(value)
    if label not in first:
        other = {-1: 0, 0: -1}.get(label)
        if other in first:
            raise _BadLine(f"the label {token!r} and the label {other} of line "
                           f"{first[other]} mix two conventions (labels are -1/+1 "
                           "or 0/1)")
        first[label] = lineno
    return label


def _features(parts, ids, values):
    """Append the features of a line's tokens (after its label) to `ids` and
    `values`."""
    row = set()
    for token in parts[1:]:
        key, colon, number = token.partition(":")
        if not (colon and key and number):
            raise _BadLine(f"{_shown(token)} is not a feature of the form id:value")
        if key.isascii() and key.isdigit():
            if len(key) > 20 or int(key) >= ID_LIMIT:
                raise _BadLine(f"feature id {_shown(key)} is too large (ids must be "
                               "below 2**64)")
            feature = int(key)
        elif key == "qid" and number.isascii() and number.isdigit():
            continue
        elif key[0] == "-" and key[1:].isascii() and key[1:].isdigit():
            raise _BadLine(f"feature id {_shown(key)} is negative")
        else:
            raise _BadLine(f"feature id {_shown(key)} is not an integer")
        try:
            value = float(number)
        except ValueError:
            raise _BadLine(f"the value {_shown(number)} of feature {key} is not a "
                           "number") from None
        if not abs(value) <= _FLOAT32_MAX:
            raise _BadLine(f"the value {_shown(number)} of feature {key} is not a "
                           "finite float32 number")
        if feature in row:
            raise _BadLine(f"feature id {key!r} appears twice")
        row.add(feature)
        ids.append(feature)
        values.append(value)
