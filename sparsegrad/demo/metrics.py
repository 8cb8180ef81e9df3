"""Held-out metrics of a click-through-rate model: log-loss and ROC AUC.

Both are scikit-learn's (:func:`sklearn.metrics.log_loss` and
:func:`sklearn.metrics.roc_auc_score`, in float64), behind the checks of the
demo: a one-line error for labels and scores that do not fit, the
probabilities clipped away from 0 and 1, and NaN for the AUC of a split with
one class.  scikit-learn comes with the ``demo`` extra; without it, both
raise an ImportError that says how to install it.
"""

import numpy as np

__all__ = ["log_loss", "roc_auc"]


def _sklearn():
    """sklearn.metrics (imported on first use: it takes a while); an
    ImportError naming the extra when it is missing."""
    try:
        from sklearn import metrics
    except ImportError as exc:
        raise ImportError(f"the demo's metrics need scikit-learn ({exc}); install "
                          'it with pip install "sparsegrad[demo]"') from None
    return metrics


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


# The Raises section both metrics share (their checks are one function).
_RAISES = """Raises
    ------
    ValueError
        If `y` and `p` differ in size or are empty, `y` holds a value other
        than 0 and 1, or `p` is not finite.
    ImportError
        If scikit-learn is not installed."""


def _checked_metric(metric):
    """`metric` with the shared Raises section in its docstring."""
    metric.__doc__ = metric.__doc__.format(raises=_RAISES)
    return metric


@_checked_metric
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

    {raises}

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
    return float(_sklearn().log_loss(y, p, labels=[0.0, 1.0]))


@_checked_metric
def roc_auc(y, p):
    """Area under the ROC curve: how often a click outranks a non-click.

    :func:`sklearn.metrics.roc_auc_score`: tied scores count one half.

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

    {raises}

    Examples
    --------
    >>> from sparsegrad.demo.metrics import roc_auc
    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    >>> roc_auc([0, 1, 0, 1], [0.3, 0.3, 0.3, 0.3])
    0.5
    """
    y, p = _labels_and_scores(y, p, "p")
    metrics = _sklearn()
    if y.min() == y.max():
        return float("nan")
    return float(metrics.roc_auc_score(y, p))
