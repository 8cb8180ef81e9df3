"""Segment ops over RaggedTensors (sg.math.segment_* and unsorted_segment_*
with ragged data or ragged ids): values against a NumPy model of
TensorFlow's construction, the kernel path's bits against the generic
unsorted op by output positions (every op, inner dims, thread counts, empty
rows, NaN and -0.0), errors, and gradients by finite differences at ragged
rank 1 and 2."""

import math

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.ragged import segment_ops as ragged_segment_ops
from sparsegrad.testing import check_gradients

KINDS = ("sum", "prod", "min", "max", "mean", "sqrt_n")
COMBINE = {"sum": sum, "min": min, "max": max, "prod": math.prod,
           "mean": lambda v: sum(v) / len(v),
           "sqrt_n": lambda v: sum(v) / math.sqrt(len(v))}


def _merge(rows, ids, n, combine):
    """TensorFlow's test model: output row s merges the rows with id s
    position by position (recursively for nested lists)."""
    groups = [[] for _ in range(n)]
    for row, s in zip(rows, ids):
        groups[s].append(row)
    return [_merge_rows(g, combine) for g in groups]


def _merge_rows(group, combine):
    if not group:
        return []
    longest = max(len(r) for r in group)
    out = []
    for p in range(longest):
        items = [r[p] for r in group if len(r) > p]
        if isinstance(items[0], list):
            out.append(_merge_rows(items, combine))
        else:
            out.append(combine(items))
    return out


def _close(got, want):
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)


R1 = [[0.0, 1.0, 2.0, 3.0], [4.0], [], [5.0, 6.0], [7.0], [8.0, 9.0]]
R2 = [[[1.0, 2.0, 3.0, 4.0], [5.0]], [], [[], [6.0, 7.0], [8.0]], [[9.0, 10.0]]]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("ids", [[0, 0, 1, 1, 2, 2], [5, 4, 3, 2, 1, 0],
                                 [0, 0, 0, 3, 3, 3], [2, 0, 2, 0, 2, 0]])
def test_rank1_matches_model(kind, ids):
    rt = sg.ragged.constant(R1, dtype=np.float64)
    n = max(ids) + 2
    got = getattr(sg.math, f"unsorted_segment_{kind}")(rt, ids, n)
    assert isinstance(got, sg.RaggedTensor)
    _close(got.to_list(), _merge(R1, ids, n, COMBINE[kind]))
    if ids == sorted(ids):
        sorted_got = getattr(sg.math, f"segment_{kind}")(rt, ids)
        _close(sorted_got.to_list(), _merge(R1, ids, max(ids) + 1, COMBINE[kind]))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("ids", [[1, 2, 1, 1], [0, 0, 2, 2], [3, 0, 0, 1]])
@pytest.mark.parametrize("splits_dtype", [np.int32, np.int64])
def test_rank2_matches_model(kind, ids, splits_dtype):
    rt = sg.ragged.constant(R2, dtype=np.float64, row_splits_dtype=splits_dtype)
    got = getattr(sg.math, f"unsorted_segment_{kind}")(rt, ids, 4)
    assert got.ragged_rank == 2 and got.row_splits.dtype == splits_dtype
    _close(got.to_list(), _merge(R2, ids, 4, COMBINE[kind]))


def test_ragged_ids():
    rt = sg.ragged.constant([[[111, 112, 113, 114], [121]], [],
                             [[], [321, 322], [331]], [[411, 412]]])
    ids = sg.ragged.constant([[1, 2], [], [1, 1, 2], [2]])
    got = sg.math.unsorted_segment_sum(rt, ids, 3)
    assert got.to_list() == [[], [432, 434, 113, 114], [863, 412]]
    mean = sg.math.unsorted_segment_mean(rt, ids, 3)
    assert mean.dtype == np.float64
    assert mean.to_list()[1] == [216.0, 217.0, 113.0, 114.0]
    # ragged ids of a ragged-rank-1 RaggedTensor leave dense values; a
    # segment no value reaches is 0 / 0 for a mean (TensorFlow's composition)
    flat = sg.ragged.constant([[1.0, 2.0], [3.0]])
    fids = sg.ragged.constant([[0, 2], [2]])
    out = sg.math.unsorted_segment_mean(flat, fids, 3)
    assert isinstance(out, sg.Tensor)
    np.testing.assert_array_equal(out.numpy(), [1.0, np.nan, 2.5])
    assert sg.math.segment_sum(flat, fids).numpy().tolist() == [1.0, 0.0, 5.0]


def _positions(splits, ids, n):
    """Each flat value's output position (NumPy, rank 1) and the result's
    splits."""
    lengths = np.diff(splits)
    out_len = np.zeros(n, np.int64)
    np.maximum.at(out_len, ids, lengths)
    out_splits = np.concatenate([[0], np.cumsum(out_len)])
    index = np.concatenate([out_splits[s] + np.arange(k)
                            for s, k in zip(ids, lengths)] + [np.zeros(0, int)])
    return index.astype(np.int64), out_splits


def _generic(kind, values, index, n_out):
    """The generic unsorted path (TensorFlow's composition for mean and
    sqrt_n: the sum over the counts)."""
    if kind in ("mean", "sqrt_n"):
        total = sg.math.unsorted_segment_sum(values, index, n_out).numpy()
        counts = np.bincount(index, minlength=n_out).astype(values.dtype)
        if kind == "sqrt_n":
            counts = np.sqrt(counts)
        counts = counts.reshape((-1,) + (1,) * (values.ndim - 1))
        with np.errstate(invalid="ignore", divide="ignore"):
            return total / counts
    return getattr(sg.math, f"unsorted_segment_{kind}")(values, index, n_out).numpy()


def _bits(a):
    """The bytes of `a` with every NaN made the same NaN: IEEE 754 leaves the
    sign and payload of a NaN from two NaN operands (NaN * -inf...) to the
    machine, and a compiler may swap the operands of a product; everything
    else, -0.0 included, must match bit for bit."""
    a = np.array(a, copy=True)
    a[np.isnan(a)] = np.nan
    return a.tobytes()


def _special_values(rng, n, inner, dtype):
    values = (rng.standard_normal((n,) + inner) * 10).astype(dtype)
    flat = values.reshape(-1)
    pick = rng.integers(0, flat.size, max(1, flat.size // 20))
    flat[pick[: len(pick) // 3]] = np.nan
    flat[pick[len(pick) // 3: 2 * len(pick) // 3]] = -0.0
    flat[pick[2 * len(pick) // 3:]] = -np.inf
    return values


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("inner", [(), (3,), (2, 2)])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_kernel_bits_equal_generic(kind, dtype, inner, threads, monkeypatch):
    rng = np.random.default_rng(len(kind) + len(inner) + threads)
    n_rows, n_segments = 3000, 400
    lengths = rng.integers(0, 12, n_rows)
    lengths[rng.random(n_rows) < 0.2] = 0                       # empty rows
    lengths[rng.random(n_rows) < 0.02] = 45                     # long rows
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = _special_values(rng, int(splits[-1]), inner, dtype)
    ids = np.sort(rng.integers(0, n_segments, n_rows))
    rt = sg.RaggedTensor.from_row_splits(values, splits)
    calls = []
    original = ragged_segment_ops._rows_kernel
    monkeypatch.setattr(ragged_segment_ops, "_rows_kernel",
                        lambda *a: calls.append(1) or original(*a))
    old = sg.get_num_threads()
    sg.set_num_threads(threads)
    try:
        got = getattr(sg.math, f"unsorted_segment_{kind}")(rt, ids, n_segments + 5)
        got_sorted = getattr(sg.math, f"segment_{kind}")(rt, ids)
    finally:
        sg.set_num_threads(old)
    assert len(calls) == 2, "the kernel path did not run"
    index, out_splits = _positions(splits, ids, n_segments + 5)
    want = _generic(kind, values, index, int(out_splits[-1]))
    assert _bits(got.flat_values.numpy()) == _bits(want)
    np.testing.assert_array_equal(got.row_splits, out_splits)
    n_sorted = int(ids[-1]) + 1
    want_sorted = want[: int(out_splits[n_sorted])]
    assert _bits(got_sorted.flat_values.numpy()) == _bits(want_sorted)


def test_sorted_positions_take_the_generic_path():
    # rows of one value ahead of the last one of their segment: the output
    # positions are sorted and the unsorted op sums runs of >= 8 values in
    # eight partial sums; the result keeps those bits
    rng = np.random.default_rng(3)
    lengths = np.array([1] * 20 + [5] + [1] * 9 + [3])
    ids = np.array([0] * 21 + [1] * 10)
    splits = np.concatenate([[0], np.cumsum(lengths)])
    values = rng.standard_normal(splits[-1]).astype(np.float32) * 1e3
    rt = sg.RaggedTensor.from_row_splits(values, splits)
    got = sg.math.unsorted_segment_sum(rt, ids, 2)
    index, out_splits = _positions(splits, ids, 2)
    want = sg.math.unsorted_segment_sum(values, index, int(out_splits[-1]))
    assert got.flat_values.numpy().tobytes() == want.numpy().tobytes()


@pytest.mark.parametrize("kind", KINDS)
def test_integer_data(kind):
    rt = sg.ragged.constant([[1, 2, 3], [4], [], [5, 6]], dtype=np.int32)
    if kind == "sqrt_n":
        with pytest.raises(InvalidArgumentError, match="floating dtype"):
            sg.math.unsorted_segment_sqrt_n(rt, [0, 1, 1, 0], 2)
        return
    got = getattr(sg.math, f"unsorted_segment_{kind}")(rt, [0, 1, 1, 0], 2)
    want = _merge([[1, 2, 3], [4], [], [5, 6]], [0, 1, 1, 0], 2, COMBINE[kind])
    assert got.dtype == (np.float64 if kind == "mean" else np.int32)
    _close(got.to_list(), want)


def test_errors_change_nothing():
    rt = sg.ragged.constant([[1.0, 2.0], [3.0]])
    before = rt.flat_values.numpy().copy()
    dense = sg.constant([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="segment_ids is ragged and data is not"):
        sg.math.unsorted_segment_sum(dense, sg.ragged.constant([[0, 1], [1]]), 2)
    with pytest.raises(ValueError, match="segment_ids is ragged and data is not"):
        sg.math.segment_mean(dense, sg.ragged.constant([[0, 1], [1]]))
    with pytest.raises(InvalidArgumentError, match="must be a prefix"):
        sg.math.unsorted_segment_sum(rt, sg.ragged.constant([[0], [1, 1]]), 2)
    with pytest.raises(InvalidArgumentError, match="must be a prefix"):
        sg.math.unsorted_segment_sum(rt, sg.ragged.constant([[0], [1], [1]]), 2)
    with pytest.raises(ValueError, match="mismatched row_splits dtypes"):
        sg.math.unsorted_segment_sum(
            rt, sg.ragged.constant([[0, 1], [1]], row_splits_dtype=np.int32), 2)
    with pytest.raises(ValueError, match="int32 or int64"):
        sg.math.unsorted_segment_sum(rt, [0.0, 1.0], 2)
    with pytest.raises(InvalidArgumentError, match=r"segment_ids\[1\] = 5 is out"):
        sg.math.unsorted_segment_sum(rt, [0, 5], 2)
    with pytest.raises(InvalidArgumentError, match=r"segment_ids\[1\] = -1"):
        sg.math.unsorted_segment_max(rt, [0, -1], 2)
    with pytest.raises(InvalidArgumentError, match="does not start with"):
        sg.math.unsorted_segment_sum(rt, [0], 2)
    with pytest.raises(InvalidArgumentError, match="must not be negative"):
        sg.math.unsorted_segment_sum(rt, [0, 1], -1)
    with pytest.raises(InvalidArgumentError, match="not increasing"):
        sg.math.segment_sum(rt, [1, 0])
    with pytest.raises(InvalidArgumentError, match="should be a vector"):
        sg.math.segment_sum(rt, [[0, 1]])
    np.testing.assert_array_equal(rt.flat_values.numpy(), before)


def test_empty_inputs():
    rt = sg.RaggedTensor.from_row_splits(np.zeros(0, np.float32), [0])
    got = sg.math.unsorted_segment_sum(rt, np.zeros(0, np.int64), 3)
    assert got.to_list() == [[], [], []]
    got = sg.math.segment_max(rt, np.zeros(0, np.int64))
    assert got.to_list() == []
    rt = sg.ragged.constant([[], []], dtype=np.float32)
    assert sg.math.unsorted_segment_prod(rt, [1, 1], 2).to_list() == [[], []]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("sorted_op", [False, True])
def test_gradients_rank1(kind, sorted_op):
    rng = np.random.default_rng(1)
    splits = np.array([0, 3, 3, 4, 8, 9, 12])
    values = rng.uniform(0.5, 2.0, (12, 2))
    ids = np.array([0, 0, 1, 1, 3, 3])

    def f(v):
        rt = sg.RaggedTensor.from_row_splits(v, splits)
        if sorted_op:
            out = getattr(sg.math, f"segment_{kind}")(rt, ids)
        else:
            out = getattr(sg.math, f"unsorted_segment_{kind}")(rt, ids, 4)
        return out.flat_values

    check_gradients(f, [values])


@pytest.mark.parametrize("kind", KINDS)
def test_gradients_rank2_and_ragged_ids(kind):
    rng = np.random.default_rng(2)
    values = rng.uniform(0.5, 2.0, 9)
    outer, inner = np.array([0, 2, 2, 5, 6]), np.array([0, 4, 5, 5, 7, 8, 9])
    op = getattr(sg.math, f"unsorted_segment_{kind}")

    def f(v):
        rt = sg.RaggedTensor.from_nested_row_splits(v, [outer, inner])
        return op(rt, [1, 2, 1, 1], 3).flat_values

    def g(v):
        rt = sg.RaggedTensor.from_nested_row_splits(v, [outer, inner])
        ids = sg.RaggedTensor.from_row_splits(np.array([1, 2, 1, 1, 2, 2]), outer)
        return op(rt, ids, 3).flat_values

    check_gradients(f, [values])
    check_gradients(g, [values])


def test_dense_segment_sqrt_n():
    got = sg.math.segment_sqrt_n(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
                                 [0, 0, 2])
    want = np.array([[4.0, 6.0], [0.0, 0.0], [5.0, 6.0]]) / np.sqrt([[2.0], [1], [1]])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-15)
    with pytest.raises(InvalidArgumentError, match="floating dtype"):
        sg.math.segment_sqrt_n([1, 2], [0, 0])
    check_gradients(lambda v: sg.math.segment_sqrt_n(v, [0, 0, 2]),
                    [np.array([1.0, 2.0, 3.0])])


def test_huge_num_segments_is_refused_before_allocating():
    # the per-segment bookkeeping is sized by num_segments: a corrupt value
    # gets InvalidArgumentError naming it, and the inputs stay as they were
    rt = sg.ragged.constant([[1.0, 2.0], [], [3.0]])
    ids = np.array([0, 1, 2])
    before = rt.flat_values.numpy().copy()
    with pytest.raises(InvalidArgumentError, match="num_segments asks for"):
        sg.math.unsorted_segment_sum(rt, ids, 2**60)
    assert rt.flat_values.numpy().tobytes() == before.tobytes()
    np.testing.assert_array_equal(ids, [0, 1, 2])
