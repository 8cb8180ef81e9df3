"""Reductions of RaggedTensors of ragged rank 2: TensorFlow's own cases
(ragged_reduce_op_test, the ragged_rank=2 examples, ported with their
expected values), the segment structure of ``nested_reductions`` on its own,
and gradients by finite differences."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.framework.backend import CPU
from sparsegrad.ragged import nested_reductions
from sparsegrad.testing import check_gradients

R = sg.ragged
RT2 = [[[1, 2], [], [3, 4, 5]], [[6, 7], [], [8]], [], [[9]]]
ALL = sum(range(1, 10))


def _mean(*v):
    return sum(v) / len(v)


def _variance(*v):
    return _mean(*[x * x for x in v]) - _mean(*v) ** 2


def _std(*v):
    return np.sqrt(_variance(*v))


def _as_list(x):
    if isinstance(x, sg.RaggedTensor):
        return x.to_list()
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x).tolist()


SUM_CASES = [
    # (axis, keepdims, expected): TensorFlow's ragged_rank=2 reduce_sum cases
    ([], False, RT2),
    (None, False, ALL),
    (0, False, [[1 + 6 + 9, 2 + 7], [], [3 + 8, 4, 5]]),
    (1, False, [[1 + 3, 2 + 4, 5], [6 + 8, 7], [], [9]]),
    (2, False, [[1 + 2, 0, 3 + 4 + 5], [6 + 7, 0, 8], [], [9]]),
    ([0, 1], False, [1 + 3 + 6 + 8 + 9, 2 + 4 + 7, 5]),
    ([0, 2], False, [1 + 6 + 9 + 2 + 7, 0, 3 + 8 + 4 + 5]),
    ([1, 2], False, [1 + 2 + 3 + 4 + 5, 6 + 7 + 8, 0, 9]),
    ([0, 1, 2], False, ALL),
    ([], True, RT2),
    (None, True, [[[ALL]]]),
    (0, True, [[[1 + 6 + 9, 2 + 7], [], [3 + 8, 4, 5]]]),
    (1, True, [[[1 + 3, 2 + 4, 5]], [[6 + 8, 7]], [[]], [[9]]]),
    (2, True, [[[1 + 2], [0], [3 + 4 + 5]], [[6 + 7], [0], [8]], [], [[9]]]),
    ([0, 1], True, [[[1 + 3 + 6 + 8 + 9, 2 + 4 + 7, 5]]]),
    ([0, 2], True, [[[1 + 6 + 9 + 2 + 7], [0], [3 + 8 + 4 + 5]]]),
    ([1, 2], True, [[[1 + 2 + 3 + 4 + 5]], [[6 + 7 + 8]], [[0]], [[9]]]),
    ([0, 1, 2], True, [[[ALL]]]),
    ([-2, -1], False, [1 + 2 + 3 + 4 + 5, 6 + 7 + 8, 0, 9]),
    ([-3, -2, -1], False, ALL),
]


@pytest.mark.parametrize("axis, keepdims, expected", SUM_CASES)
def test_reduce_sum_of_ragged_rank_2_as_tensorflow(axis, keepdims, expected):
    out = R.reduce_sum(R.constant(RT2), axis=axis, keepdims=keepdims)
    assert _as_list(out) == expected


RT_MEAN = [[[1, 2], [3, 4, 5]], [[6, 7], [8]], [[9]]]


@pytest.mark.parametrize("op, rows, axis, expected", [
    (R.reduce_mean, RT_MEAN, 0, [[_mean(1, 6, 9), _mean(2, 7)], [_mean(3, 8), 4, 5]]),
    (R.reduce_mean, RT_MEAN, 1, [[_mean(1, 3), _mean(2, 4), 5], [_mean(6, 8), 7],
                                 [9]]),
    (R.reduce_mean, RT_MEAN, 2, [[_mean(1, 2), _mean(3, 4, 5)], [_mean(6, 7), 8],
                                 [9]]),
    (R.reduce_variance, [[[6, 2], [3, 4, 5]], [[6, 7], [8]], [[9]]], 0,
     [[_variance(6, 6, 9), _variance(2, 7)], [_variance(3, 8), 0.0, 0.0]]),
    (R.reduce_variance, [[[6, 2], [3, 4, 5]], [[6, 7], [8]], [[9]]], 1,
     [[_variance(6, 3), _variance(2, 4), 0.0], [_variance(6, 8), 0.0], [0.0]]),
    (R.reduce_variance, [[[6, 2], [6, 9, 9]], [[6, 7], [8]], [[9]]], 2,
     [[_variance(6, 2), _variance(6, 9, 9)], [_variance(6, 7), 0.0], [0.0]]),
    (R.reduce_std, [[[6, 2], [3, 4, 5]], [[6, 7], [8]], [[9]]], 0,
     [[_std(6, 6, 9), _std(2, 7)], [_std(3, 8), 0.0, 0.0]]),
    (R.reduce_std, [[[6, 2], [3, 4, 5]], [[6, 7], [8]], [[9]]], 1,
     [[_std(6, 3), _std(2, 4), 0.0], [_std(6, 8), 0.0], [0.0]]),
    (R.reduce_std, [[[6, 2], [6, 9, 9]], [[6, 7], [8]], [[9]]], 2,
     [[_std(6, 2), _std(6, 9, 9)], [_std(6, 7), 0.0], [0.0]]),
    (R.reduce_variance, [[[0.214441]] * 7], [1], [[0.0]]),
    (R.reduce_std, [[[0.214441]] * 7], [1], [[0.0]]),
])
def test_mean_variance_std_of_ragged_rank_2_as_tensorflow(op, rows, axis, expected):
    out = op(R.constant(rows), axis=axis)
    got = out.to_list()
    assert len(got) == len(expected)
    for g, w in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g, dtype=float).ravel()
                                   if not isinstance(g[0], list) else
                                   np.concatenate([np.ravel(x) for x in g]),
                                   np.asarray(w, dtype=float).ravel()
                                   if not isinstance(w[0], list) else
                                   np.concatenate([np.ravel(x) for x in w]),
                                   rtol=1e-12, atol=1e-12)


def test_min_max_prod_any_all_and_empty_rows():
    rt = R.constant(RT2)
    imax = np.iinfo(np.int32).max
    assert _as_list(R.reduce_min(rt, axis=2)) == [[1, imax, 3], [6, imax, 8], [], [9]]
    assert _as_list(R.reduce_max(rt, axis=0)) == [[9, 7], [], [8, 4, 5]]
    assert _as_list(R.reduce_prod(rt, axis=1)) == [[3, 8, 5], [48, 7], [], [9]]
    flags = R.constant([[[True, False], []], [[False]]])
    assert _as_list(R.reduce_any(flags, axis=2)) == [[True, False], [False]]
    assert _as_list(R.reduce_all(flags, axis=2)) == [[False, True], [False]]
    assert _as_list(R.reduce_all(flags, axis=0)) == [[False, False], []]


def test_merge_axis_structure():
    # the splits of RT2 and where each value lands
    s0, s1 = np.array([0, 3, 6, 6, 7]), np.array([0, 2, 2, 5, 7, 7, 8, 9])
    seg, n, new = nested_reductions.merge_axis([s0, s1], 1, False, CPU)
    assert n == 6 and seg.tolist() == [0, 1, 0, 1, 2, 3, 4, 3, 5]
    assert [s.tolist() for s in new] == [[0, 3, 5, 5, 6]]
    seg, n, new = nested_reductions.merge_axis([s0, s1], 0, True, CPU)
    assert n == 5 and [s.tolist() for s in new] == [[0, 3], [0, 2, 2, 5]]
    seg, n, new = nested_reductions.reduce_innermost([s0, s1], CPU)
    assert n == 7 and [s.tolist() for s in new] == [[0, 3, 6, 6, 7]]
    assert seg.tolist() == [0, 0, 2, 2, 2, 3, 3, 5, 6]
    # nothing at all: no rows
    seg, n, new = nested_reductions.merge_axis(
        [np.array([0]), np.array([0])], 0, False, CPU)
    assert n == 0 and seg.size == 0 and [s.tolist() for s in new] == [[0]]


@pytest.mark.parametrize("op, axis", [
    (op, axis) for op in (R.reduce_sum, R.reduce_mean, R.reduce_max,
                          R.reduce_variance)
    for axis in (0, 1, 2, [0, 2], None)] + [(R.reduce_std, None)])
def test_gradients_of_ragged_rank_2_reductions(op, axis):
    # (reduce_std only where no group has one value: sqrt is not
    # differentiable at a zero variance)
    splits = [np.array([0, 2, 2, 4]), np.array([0, 2, 3, 6, 7])]
    values = np.array([0.3, -1.2, 2.5, 0.7, 1.9, -0.4, 1.1])

    def f(v):
        rt = sg.RaggedTensor.from_nested_row_splits(v, splits)
        out = op(rt, axis=axis)
        return out.flat_values if isinstance(out, sg.RaggedTensor) else out

    check_gradients(f, [values])


def test_reduce_keeps_the_inner_dimensions():
    # TensorFlow's testReduceKeepsInnerDimensionShape
    rt = R.constant([[[[1, 1]]]], ragged_rank=2)
    assert rt.shape == (1, None, None, 2)
    out = R.reduce_sum(rt, axis=2)
    assert out.shape == (1, None, 2)
    assert out.to_list() == [[[1, 1]]]
    out = R.reduce_max(rt, axis=3)
    assert out.shape == (1, None, None) and out.to_list() == [[[1]]]


def test_ragged_rank_3_innermost_and_outer_axes():
    rows = [[[[1, 2], [3]], []], [[[4]], [[5, 6], []]]]
    rt = R.constant(rows)
    assert rt.ragged_rank == 3
    assert R.reduce_sum(rt, axis=3).to_list() == [[[3, 3], []], [[4], [11, 0]]]
    assert R.reduce_sum(rt, axis=0).to_list() == [[[5, 2], [3]], [[5, 6], []]]
    assert R.reduce_sum(rt, axis=None).numpy() == 21


def test_top_level_reductions_dispatch_at_ragged_rank_2():
    rt = R.constant(RT2)
    assert sg.reduce_sum(rt).numpy() == ALL
    assert sg.reduce_sum(rt, axis=2).to_list() == [[3, 0, 12], [13, 0, 8], [],
                                                    [9]]
    np.testing.assert_allclose(sg.reduce_mean(rt, axis=[1, 2]).numpy(),
                               [3.0, 7.0, np.nan, 9.0])


def test_max_min_without_values_as_tensorflow():
    # TensorFlow 2.21's values: every axis (axis=None) reduces the flat
    # values themselves (an infinity, or the integer dtype's extreme); a
    # reduction through the rows gives the segment ops' finite extreme for
    # an empty row, and an infinity only where no row is left
    low, high = np.finfo(np.float32).min, np.finfo(np.float32).max
    empty = np.zeros(0, np.float32)
    rows = sg.RaggedTensor.from_row_splits(empty, np.array([0, 0, 0]))
    none = sg.RaggedTensor.from_row_splits(empty, np.array([0]))
    nested = sg.RaggedTensor.from_nested_row_splits(
        empty, [np.array([0, 1]), np.array([0, 0])])
    ints = sg.RaggedTensor.from_nested_row_splits(
        np.zeros(0, np.int32), [np.array([0]), np.array([0])])
    assert sg.reduce_max(rows).numpy() == -np.inf
    assert sg.reduce_max(rows, axis=[0, 1]).numpy() == low
    np.testing.assert_array_equal(
        sg.reduce_min(rows, axis=[0, 1], keepdims=True).numpy(), [[high]])
    np.testing.assert_array_equal(sg.reduce_max(rows, axis=1).numpy(), [low, low])
    assert sg.reduce_max(none, axis=[0, 1]).numpy() == -np.inf
    np.testing.assert_array_equal(
        sg.reduce_min(nested, keepdims=True).numpy(), [[[np.inf]]])
    assert sg.reduce_max(nested, axis=-1).to_list() == [[low]]
    assert sg.reduce_max(ints).numpy() == np.iinfo(np.int32).min
    assert sg.reduce_min(ints, keepdims=True).numpy().tolist() == [[[2**31 - 1]]]


def test_mean_and_variance_of_nothing_are_nan_without_warnings():
    import warnings

    rt = sg.RaggedTensor.from_row_splits(np.zeros(0), np.array([0, 0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(sg.reduce_mean(rt).numpy())
        assert np.isnan(sg.reduce_variance(rt, keepdims=True).numpy()).all()
