"""Embedding bags over RaggedTensor ids of ragged_rank 2 (TensorFlow's 3-D
SparseTensor ids): values against a NumPy reference written from TensorFlow's
definition, finite-difference gradients, the IndexedSlices gradient, errors.
TensorFlow's own outcomes are replayed in tests/ragged/tf_port/cases_bags.py."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.testing import check_gradients

IDS = [[[1, 2], [3]], [], [[4], [], [5, 0, 1]], []]
WEIGHTS = [[[1.0, 2.0], [3.0]], [], [[4.0], [], [5.0, 0.5, 1.0]], []]
TABLE = np.arange(12.0).reshape(6, 2) / 7.0


def _combine(table, ids, weights, combiner):
    ids = np.asarray(ids, dtype=np.int64)
    w = np.ones(len(ids)) if weights is None else np.asarray(weights, float)
    total = (table[ids] * w[:, None]).sum(axis=0)
    if combiner == "mean":
        den = w.sum()
    elif combiner == "sqrtn":
        den = np.sqrt((w * w).sum())
    else:
        den = 1.0
    return total / den if den != 0 else np.zeros(table.shape[1])


def _outer_reference(table, ids, weights, combiner):
    """embedding_lookup_sparse: every id of an outer row, up to the last row
    holding an id."""
    rows = []
    for r, row in enumerate(ids):
        flat = [i for inner in row for i in inner]
        w = None if weights is None else [x for inner in weights[r] for x in inner]
        rows.append(_combine(table, flat, w, combiner) if flat
                    else np.zeros(table.shape[1]))
    filled = [r for r, row in enumerate(ids) if any(row)]
    return np.array(rows[: filled[-1] + 1 if filled else 0]).reshape(-1, 2)


def _grid_reference(table, ids, weights, combiner, default_id=None):
    """safe_embedding_lookup_sparse: one bag per inner row on (d0, d1)."""
    d1 = max((len(row) for row in ids), default=0)
    out = np.zeros((len(ids), d1, table.shape[1]))
    for r, row in enumerate(ids):
        for k in range(d1):
            bag = row[k] if k < len(row) else []
            w = (None if weights is None or k >= len(row) else weights[r][k])
            keep = [j for j, i in enumerate(bag) if i >= 0
                    and (combiner == "sum" or w is None or w[j] > 0)]
            if keep:
                out[r, k] = _combine(table, [bag[j] for j in keep],
                                     None if w is None else [w[j] for j in keep],
                                     combiner)
            elif default_id is not None:
                out[r, k] = table[default_id]
    return out


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_lookup_sparse_combines_outer_rows(combiner, weighted):
    ids = sg.ragged.constant(IDS, dtype=np.int64)
    w = sg.ragged.constant(WEIGHTS) if weighted else None
    got = sg.nn.embedding_lookup_sparse(TABLE, ids, w, combiner=combiner)
    want = _outer_reference(TABLE, IDS, WEIGHTS if weighted else None, combiner)
    assert got.shape == (3, 2)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("default_id", [None, 3])
def test_safe_lookup_combines_inner_bags_on_the_grid(combiner, default_id):
    ids = [[[1, -2], [3]], [], [[4], [], [5, 0, 1]], [[-1]]]
    weights = [[[1.0, 2.0], [0.0]], [], [[4.0], [], [5.0, -0.5, 1.0]], [[1.0]]]
    got = sg.nn.safe_embedding_lookup_sparse(
        TABLE, sg.ragged.constant(ids), sg.ragged.constant(weights, np.float64),
        combiner=combiner, default_id=default_id)
    want = _grid_reference(TABLE, ids, weights, combiner, default_id)
    assert got.shape == (4, 3, 2)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_safe_lookup_edge_shapes():
    # no outer rows, and outer rows without inner rows: d1 = 0
    empty = sg.RaggedTensor.from_nested_row_splits(
        np.zeros(0, np.int64), [np.zeros(1, np.int64), np.zeros(1, np.int64)])
    assert sg.nn.safe_embedding_lookup_sparse(TABLE, empty).shape == (0, 0, 2)
    hollow = sg.ragged.constant([[], []], ragged_rank=2, dtype=np.int64)
    assert sg.nn.safe_embedding_lookup_sparse(TABLE, hollow).shape == (2, 0, 2)
    assert sg.nn.embedding_lookup_sparse(TABLE, hollow, None).shape == (0, 2)


def test_flat_weights_and_int32_splits():
    ids = sg.ragged.constant(IDS, dtype=np.int32, row_splits_dtype="int32")
    flat_w = [x for row in WEIGHTS for inner in row for x in inner]
    got = sg.nn.embedding_lookup_sparse(TABLE, ids, flat_w, combiner="mean")
    want = _outer_reference(TABLE, IDS, WEIGHTS, "mean")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("safe", [False, True])
@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_gradient_by_finite_differences(safe, combiner):
    ids = sg.ragged.constant(IDS, dtype=np.int64)
    weights = sg.ragged.constant(WEIGHTS, dtype=np.float64)
    op = sg.nn.safe_embedding_lookup_sparse if safe else sg.nn.embedding_lookup_sparse

    def f(table):
        return op(table, ids, weights, combiner=combiner)

    check_gradients(f, [TABLE])


@pytest.mark.parametrize("safe", [False, True])
def test_table_gradient_is_indexed_slices(safe):
    table = sg.Variable(TABLE)
    ids = sg.ragged.constant(IDS, dtype=np.int64)
    op = sg.nn.safe_embedding_lookup_sparse if safe else sg.nn.embedding_lookup_sparse
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(op(table, ids, None, combiner="sum"))
    grad = tape.gradient(loss, table)
    assert isinstance(grad, sg.IndexedSlices)
    dense = np.zeros_like(TABLE)
    np.add.at(dense, np.asarray(grad.indices), np.asarray(grad.values))
    counts = np.bincount([i for row in IDS for b in row for i in b], minlength=6)
    np.testing.assert_allclose(dense, counts[:, None] * np.ones((1, 2)))


def test_errors_name_the_argument_and_change_nothing():
    table = sg.Variable(TABLE)
    before = table.numpy().copy()
    ids = sg.ragged.constant([[[0, 9]], [[1]]], dtype=np.int64)
    for op in (sg.nn.embedding_lookup_sparse, sg.nn.safe_embedding_lookup_sparse):
        with pytest.raises(sg.errors.InvalidArgumentError, match="9"):
            op(table, ids, None)
    ok = sg.ragged.constant([[[0, 1]], [[1]]], dtype=np.int64)
    other = sg.ragged.constant([[[1.0], [1.0]], [[1.0]]])
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match="sp_weights must have the row splits of sp_ids"):
        sg.nn.embedding_lookup_sparse(table, ok, other)
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match=r"sparse_weights must hold one weight per id \(3\)"):
        sg.nn.safe_embedding_lookup_sparse(table, ok, [1.0, 2.0])
    floats = sg.ragged.constant([[[0.0]]])
    with pytest.raises(sg.errors.InvalidArgumentError, match=r"sp_ids\.values"):
        sg.nn.embedding_lookup_sparse(table, floats, None)
    np.testing.assert_array_equal(table.numpy(), before)


def test_inner_splits_that_do_not_cover_the_values_are_refused():
    inner = sg.RaggedTensor.from_row_splits(np.array([0, 1, 2, 3], np.int64),
                                            np.array([0, 1, 3]), validate=False)
    ids = sg.RaggedTensor.from_row_splits(inner, np.array([0, 2]))
    with pytest.raises(sg.errors.InvalidArgumentError, match="nested_row_splits"):
        sg.nn.safe_embedding_lookup_sparse(TABLE, ids)


def test_huge_grid_is_refused_before_allocating():
    # one outer row with many inner rows and many outer rows: d0 * d1 slots
    n = 200_000
    inner = np.arange(n + 1, dtype=np.int64)
    outer = np.concatenate([[0, n], np.full(n, n)]).astype(np.int64)
    ids = sg.RaggedTensor.from_nested_row_splits(np.zeros(n, np.int64),
                                                 [outer, inner])
    with pytest.raises(sg.errors.InvalidArgumentError, match=r"memory|larger"):
        sg.nn.safe_embedding_lookup_sparse(TABLE, ids)
