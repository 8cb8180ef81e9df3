"""Shared fixtures: every test is seeded, and the thread count is restored."""

import numpy as np
import pytest

import sparsegrad as sg


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def _restore_threads():
    before = sg.framework.threads._parallel.requested_threads()
    yield
    sg.framework.threads._parallel.set_requested_threads(before)


def zipf_indices(rng, n, n_rows, a=1.1, dtype=np.int64):
    """Zipf-distributed row ids in [0, n_rows) (heavy rows first)."""
    ids = rng.zipf(a, size=n) - 1
    return (ids % n_rows).astype(dtype)


@pytest.fixture
def zipf():
    return zipf_indices
