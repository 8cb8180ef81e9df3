"""The end-to-end benchmark case: the three models are one model."""

import numpy as np
import pytest

from sparsegrad.bench import end_to_end


def test_batches_are_skewed_hashed_ids_and_labels():
    batches = end_to_end.make_batches(quick=True)
    assert len(batches) == end_to_end.N_BATCHES
    ids, labels = batches[0]
    assert ids.shape == (256, 26) and ids.dtype == np.int64
    assert ids.min() >= 0 and ids.max() < 10_000
    # Repeats within a batch (Zipf), and fresh ids from one batch to the next.
    assert np.unique(ids).size < 0.6 * ids.size
    assert not np.array_equal(ids, batches[1][0])
    assert set(np.unique(labels)) == {0.0, 1.0}
    # The full size: about 45,000 distinct rows of the 106,496 ids.
    full_ids = end_to_end.make_batches(quick=False)[0][0]
    assert 43_000 < np.unique(full_ids).size < 47_000


def test_sparsegrad_step_trains_and_matches_torch():
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    ours = end_to_end.setup_sparsegrad(quick=True)
    theirs = end_to_end.setup_torch(quick=True)
    ours_losses = [float(np.asarray(ours())) for _ in range(5)]
    theirs_losses = [float(theirs().detach()) for _ in range(5)]
    # The same initial values and batch: the same first loss; Adam's epsilon
    # sits elsewhere in PyTorch, so later steps agree only closely.
    np.testing.assert_allclose(ours_losses[0], theirs_losses[0], rtol=1e-6)
    np.testing.assert_allclose(ours_losses, theirs_losses, rtol=2e-3)
    assert ours_losses[-1] < ours_losses[0]


def test_floor_counts_the_lookup_the_gradient_and_the_update():
    ids = [b[0] for b in end_to_end.make_batches(quick=True)]
    distinct = np.mean([np.unique(i).size for i in ids])
    n = ids[0].size
    want = n * 8 * 2 + n * 64 * 3 + distinct * 64 * 6
    assert abs(end_to_end.floor_bytes(quick=True) - want) <= 1
