"""sorted_segment_splits: TensorFlow's checks and messages, splits against
np.searchsorted, and arbitrary ids never crash the kernel."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework.sparse_rows import sorted_segment_splits

NOT_SORTED = "possibly because 'segment_ids' input is not sorted."


@pytest.mark.parametrize(
    ("ids", "num_segments", "message"),
    [
        ([0, 0, 0, -1], None, "segment ids must be >= 0"),
        ([0, 0, 0, -2], None, "segment ids must be >= 0"),
        ([0, 1, 0, 1], None, "segment ids are not increasing"),
        ([1, 0, 1], None, "segment ids are not increasing"),
        ([-1, -1, 0, 0], None, f"Segment id -1 out of range [0, 1), {NOT_SORTED}"),
        ([0, 1, 2, 0], None, f"Segment id 1 out of range [0, 1), {NOT_SORTED}"),
        ([-1, 0, 1], None, f"Segment id -1 out of range [0, 2), {NOT_SORTED}"),
        # the run before a decrease is range-checked after the decrease
        ([0, 5, 3], None, "segment ids are not increasing"),
        ([0, 5, 5, 3, 6], None, "segment ids are not increasing"),
        ([-1, 2, 1], None, f"Segment id -1 out of range [0, 2), {NOT_SORTED}"),
        ([0, 6, 7, 2, 3], None, f"Segment id 6 out of range [0, 4), {NOT_SORTED}"),
        ([0, 3], 2, "segment ids must be < num_segments"),
        ([-1, 0], 3, f"Segment id -1 out of range [0, 3), {NOT_SORTED}"),
        ([], -1, "segment ids must be >= 0"),
    ],
)
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_errors(ids, num_segments, message, dtype):
    with pytest.raises(InvalidArgumentError) as info:
        sorted_segment_splits(np.array(ids, dtype=dtype), num_segments)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("ids", "num_segments", "expected"),
    [
        ([0, 0, 2, 2, 2], None, [0, 2, 2, 5]),
        ([2, 2, 3], None, [0, 0, 0, 2, 3]),
        ([1, 1], 3, [0, 0, 2, 2]),
        ([], None, [0]),
        ([], 3, [0, 0, 0, 0]),
        ([0], None, [0, 1]),
    ],
)
def test_golden(ids, num_segments, expected):
    got = sorted_segment_splits(np.array(ids, dtype=np.int64), num_segments)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_against_searchsorted(rng, dtype, threads):
    sg.set_num_threads(threads)
    n_segments = 50_000
    ids = np.sort(rng.integers(0, n_segments - 7, size=200_000)).astype(dtype)
    got = sorted_segment_splits(ids, n_segments)
    np.testing.assert_array_equal(
        got, np.searchsorted(ids, np.arange(n_segments + 1), side="left")
    )


@settings(max_examples=300, deadline=None)
@given(
    ids=st.lists(st.integers(-5, 12), max_size=40),
    num_segments=st.one_of(st.none(), st.integers(0, 15)),
    threads=st.integers(1, 3),
)
def test_any_ids_against_a_python_scan(ids, num_segments, threads):
    """Any ids: the same outcome as TensorFlow's left-to-right scan of runs."""
    sg.set_num_threads(threads)
    array = np.array(ids, dtype=np.int64)
    expected = _tf_scan(ids, num_segments)
    if isinstance(expected, str):
        with pytest.raises(InvalidArgumentError) as info:
            sorted_segment_splits(array, num_segments)
        assert str(info.value) == expected
    else:
        np.testing.assert_array_equal(sorted_segment_splits(array, num_segments),
                                      expected)


def _tf_scan(ids, num_segments):
    last_plus_one = ids[-1] + 1 if ids else 0
    if ids and ids[-1] < 0:
        return "segment ids must be >= 0"
    k = last_plus_one if num_segments is None else num_segments
    if k < last_plus_one:
        return "segment ids must be < num_segments"
    start = 0
    while start < len(ids):
        end = start
        while end < len(ids) and ids[end] == ids[start]:
            end += 1
        if end < len(ids) and ids[end] < ids[start]:
            return "segment ids are not increasing"
        if not 0 <= ids[start] < k:
            return f"Segment id {ids[start]} out of range [0, {k}), {NOT_SORTED}"
        start = end
    return [sum(1 for i in ids if i < s) for s in range(k + 1)]


def test_huge_and_unsorted_ids_do_not_crash(rng):
    ids = rng.integers(-(2**62), 2**62, size=100_000)
    with pytest.raises(InvalidArgumentError):
        sorted_segment_splits(ids, 1000)
    ids = np.array([0, 2**40, 3], dtype=np.int64)
    with pytest.raises(InvalidArgumentError, match="not increasing"):
        sorted_segment_splits(ids)
    # TensorFlow fails to allocate; so does this, before allocating
    with pytest.raises(InvalidArgumentError, match="more than this machine's memory"):
        sorted_segment_splits(np.array([0, 1676240524292489355]))
