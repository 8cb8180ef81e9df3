import sys

import numpy as np
import pytest
from sklearn import metrics as skm

from sparsegrad.demo.metrics import log_loss, roc_auc


def test_against_sklearn(rng):
    y = (rng.random(2_000) < 0.3).astype(np.float32)
    p = np.clip(0.3 + 0.2 * (y - 0.3) + 0.2 * rng.standard_normal(2_000), 0.01, 0.99)
    assert log_loss(y, p) == pytest.approx(skm.log_loss(y, p), rel=1e-12)
    assert roc_auc(y, p) == pytest.approx(skm.roc_auc_score(y, p), rel=1e-12)
    # Ties: scores rounded to one decimal.
    tied = np.round(p, 1)
    assert roc_auc(y, tied) == pytest.approx(skm.roc_auc_score(y, tied), rel=1e-12)


def test_hand_values():
    assert log_loss([1, 0], [0.5, 0.5]) == pytest.approx(np.log(2.0), rel=1e-15)
    expected = -(np.log(0.9) + np.log(0.8) + np.log(0.6)) / 3
    assert log_loss([1, 0, 1], [0.9, 0.2, 0.6]) == pytest.approx(expected, rel=1e-15)
    # One of the four (positive, negative) pairs is out of order.
    assert roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75
    assert roc_auc([1, 0, 1, 0], [0.2, 0.2, 0.2, 0.2]) == 0.5
    assert roc_auc([1, 1, 0], [0.9, 0.8, 0.1]) == 1.0


def test_edges():
    # A certain, wrong prediction is clipped: large but finite.
    assert log_loss([1], [0.0]) == pytest.approx(-np.log(1e-7))
    assert np.isnan(roc_auc([1, 1], [0.2, 0.3]))
    with pytest.raises(ValueError, match="y has 2 values but p has 3"):
        log_loss([0, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="only 0 and 1"):
        roc_auc([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="empty"):
        roc_auc([], [])
    with pytest.raises(ValueError, match="finite"):
        log_loss([0, 1], [0.1, np.nan])


def test_one_label_and_missing_sklearn(monkeypatch):
    # log-loss of one label is defined, its AUC is not
    assert log_loss([1, 1], [0.9, 0.8]) == pytest.approx(
        -(np.log(0.9) + np.log(0.8)) / 2, rel=1e-15)
    assert np.isnan(roc_auc([0, 0, 0], [0.1, 0.2, 0.3]))
    monkeypatch.setitem(sys.modules, "sklearn", None)       # import fails
    for metric in (log_loss, roc_auc):
        with pytest.raises(ImportError, match=r"the demo's metrics need scikit-learn "
                                              r".*pip install \"sparsegrad\[demo\]\""):
            metric([0, 1], [0.2, 0.7])
