"""Held-out metrics of a click-through-rate model: log-loss and ROC AUC.

Both are computed in float64 with NumPy and SciPy and agree with
:func:`sklearn.metrics.log_loss` and :func:`sklearn.metrics.roc_auc_score`
(the tests check this), so the demo needs scikit-learn only to read svmlight
files.
"""

import numpy as np
from scipy.stats import rankdata

__all__ = ["log_loss", "roc_auc"]


def _labels_and_scores(y, p, name):
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    if y.shape != p.shape:
        raise ValueError(f"y has {y.size} values but {name} has {p.size}")
    if y.size == 0:
        raise ValueError("y is empty; a metric needs at least one example")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("y must hold only 0 and 1")
    if not np.isfinite(p).all():
        raise ValueError(f"{name} must be finite")
    return y, p


def log_loss(y, p, eps=1e-7):
    """Mean binary cross-entropy of the click probabilities `p` for labels `y`.

    ``-mean(y * log(p) + (1 - y) * log(1 - p))`` with `p` clipped to
    ``[eps, 1 - eps]``, so that a confident wrong prediction costs a large
    but finite amount.

    Parameters
    ----------
    y : array_like of shape (n,)
        Labels, 0 or 1.
    p : array_like of shape (n,)
        Predicted probabilities of label 1.
    eps : float, default=1e-7
        Clipping margin of `p`.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If `y` and `p` differ in size or are empty, `y` holds a value other
        than 0 and 1, or `p` is not finite.

    Examples
    --------
    >>> from sparsegrad.demo.metrics import log_loss
    >>> round(log_loss([1, 0], [0.5, 0.5]), 6)    # log(2)
    0.693147
    >>> round(log_loss([1, 0, 1], [0.9, 0.2, 0.6]), 4)
    0.2798
    """
    y, p = _labels_and_scores(y, p, "p")
    p = np.clip(p, eps, 1.0 - eps)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log1p(-p)))


def roc_auc(y, p):
    """Area under the ROC curve: how often a click outranks a non-click.

    Computed from the ranks of the scores (the Mann-Whitney statistic);
    tied scores count one half.

    Parameters
    ----------
    y : array_like of shape (n,)
        Labels, 0 or 1.
    p : array_like of shape (n,)
        Scores: probabilities, or anything that orders them (logits).

    Returns
    -------
    float
        In [0, 1]; 0.5 for a constant score.  NaN if `y` holds only one
        class (the AUC is undefined then).

    Raises
    ------
    ValueError
        If `y` and `p` differ in size or are empty, `y` holds a value other
        than 0 and 1, or `p` is not finite.

    Examples
    --------
    >>> from sparsegrad.demo.metrics import roc_auc
    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    >>> roc_auc([0, 1, 0, 1], [0.3, 0.3, 0.3, 0.3])
    0.5
    """
    y, p = _labels_and_scores(y, p, "p")
    positive = y == 1.0
    n_pos = int(positive.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(p)                        # ties get their average rank
    rank_sum = float(ranks[positive].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
