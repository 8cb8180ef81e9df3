"""The slices kernels against NumPy, across the dtype matrix and thread counts."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hynp

import sparsegrad as sg
from sparsegrad._kernels import slices as K
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework import sparse_rows

FLOATS = [np.float32, np.float64]
INDEX = [np.int32, np.int64]
THREADS = [1, 2, 4]


def readonly(a):
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("index_dtype", INDEX)
def test_scatter_add_matches_add_at_and_is_thread_invariant(
    dtype, index_dtype, rng, zipf
):
    n_rows, width, n = 5000, 16, 20000  # large enough for the parallel path
    base = rng.standard_normal((n_rows, width)).astype(dtype)
    indices = readonly(zipf(rng, n, n_rows, dtype=index_dtype))
    values = readonly(rng.standard_normal((n, width)).astype(dtype))
    expected = base.copy()
    np.add.at(expected, indices, values)  # sequential, in order: same rounding
    results = []
    for threads in THREADS:
        out = base.copy()
        K.scatter_add(values, indices, out, threads)
        results.append(out)
    np.testing.assert_array_equal(results[0], expected)
    for r in results[1:]:
        assert r.tobytes() == results[0].tobytes()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("index_dtype", INDEX)
def test_scatter_update_last_wins(dtype, index_dtype, rng, zipf):
    n_rows, width, n = 3000, 12, 12000
    indices = readonly(zipf(rng, n, n_rows, dtype=index_dtype))
    values = readonly(rng.standard_normal((n, width)).astype(dtype))
    expected = np.zeros((n_rows, width), dtype)
    for k in range(n):
        expected[indices[k]] = values[k]
    for threads in THREADS:
        out = np.zeros((n_rows, width), dtype)
        K.scatter_update(values, indices, out, threads)
        np.testing.assert_array_equal(out, expected)


def _group_stable(keys, max_key):
    n = keys.size
    order = np.empty(n, np.int64)
    unique = np.empty(n, keys.dtype)
    starts = np.empty(n + 1, np.int64)
    scratch = np.empty((4, n), np.int64)
    n_unique = K.group_stable(keys, max_key, scratch, order, unique, starts)
    return order, unique[:n_unique], starts[: n_unique + 1]


def _check_grouping(keys, order, unique, starts):
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))
    np.testing.assert_array_equal(unique, np.unique(keys))
    counts = np.unique(keys, return_counts=True)[1] if keys.size else []
    np.testing.assert_array_equal(np.diff(starts), counts)
    assert starts[0] == 0


@pytest.mark.parametrize("index_dtype", INDEX)
@pytest.mark.parametrize("max_key", [0, 1, 7, 1023, 2047, 2048, 10**6, 2**31 - 1])
def test_group_stable_matches_numpy(index_dtype, max_key, rng):
    keys = readonly(rng.integers(0, max_key + 1, size=3001).astype(index_dtype))
    _check_grouping(keys, *_group_stable(keys, max_key))


def test_group_stable_large_int64_keys(rng):
    keys = rng.integers(0, 2**62, size=2000, dtype=np.int64)
    keys[::7] = keys[0]  # ties
    keys = readonly(keys)
    _check_grouping(keys, *_group_stable(keys, int(keys.max())))


def test_group_stable_empty():
    order, unique, starts = _group_stable(np.empty(0, np.int64), 0)
    assert order.size == 0 and unique.size == 0
    np.testing.assert_array_equal(starts, [0])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("index_dtype", INDEX)
def test_dedupe_matches_unique_add_at_and_is_thread_invariant(
    dtype, index_dtype, rng, zipf
):
    n_rows, width, n = 100000, 8, 30000
    indices = readonly(zipf(rng, n, n_rows, dtype=index_dtype))
    values = readonly(rng.standard_normal((n, width)).astype(dtype))
    unique, inverse = np.unique(indices, return_inverse=True)
    expected = np.zeros((unique.size, width), dtype)
    np.add.at(expected, inverse, values)
    outputs = []
    for threads in THREADS:
        sg.set_num_threads(threads)
        u, summed = sparse_rows.deduplicate(indices, values)
        assert u.dtype == index_dtype and summed.dtype == dtype
        outputs.append(summed)
        np.testing.assert_array_equal(u, unique)
    np.testing.assert_array_equal(outputs[0], expected)
    for o in outputs[1:]:
        assert o.tobytes() == outputs[0].tobytes()


def test_group_rows(rng):
    indices = np.array([5, 2, 5, 0, 2, 5], np.int32)
    unique, order, starts = sparse_rows.group_rows(indices, 5)
    np.testing.assert_array_equal(unique, [0, 2, 5])
    np.testing.assert_array_equal(order, [3, 1, 4, 0, 2, 5])
    np.testing.assert_array_equal(starts, [0, 1, 3, 6])


# -- the validated wrappers ------------------------------------------------------


def test_wrapper_errors_write_nothing(rng):
    out = rng.standard_normal((4, 3))
    before = out.copy()
    with pytest.raises(
        InvalidArgumentError, match=r"indices\[2\] = -1 is not in \[0, 4\)"
    ):
        sparse_rows.scatter_add(out, [0, 1, -1], np.ones((3, 3)))
    with pytest.raises(InvalidArgumentError, match=r"ids\[0\] = 9 is not in \[0, 4\)"):
        sparse_rows.scatter_update(out, [9], np.ones((1, 3)), name="ids")
    with pytest.raises(InvalidArgumentError, match="values of shape"):
        sparse_rows.scatter_add(out, [0], np.ones((2, 3)))
    with pytest.raises(InvalidArgumentError, match="1-D"):
        sparse_rows.scatter_add(out, [[0]], np.ones((1, 1, 3)))
    with pytest.raises(InvalidArgumentError, match="writeable C-contiguous"):
        sparse_rows.scatter_add(np.asfortranarray(out), [0], np.ones((1, 3)))
    frozen = out.copy()
    frozen.flags.writeable = False
    with pytest.raises(InvalidArgumentError, match="writeable"):
        sparse_rows.scatter_add(frozen, [0], np.ones((1, 3)))
    with pytest.raises(TypeError, match="numpy array"):
        sparse_rows.scatter_add([[0.0]], [0], [[1.0]])
    with pytest.raises(InvalidArgumentError, match="target must be at least 1-D"):
        sparse_rows.scatter_add(np.zeros(()), [0], np.ones(1))
    with pytest.raises(
        InvalidArgumentError, match=r"no row per index|one row per index"
    ):
        sparse_rows.deduplicate([0, 1], np.ones((3, 2)))
    with pytest.raises(InvalidArgumentError, match=r"indices\[1\] = -4"):
        sparse_rows.deduplicate([0, -4], np.ones((2, 2)))
    np.testing.assert_array_equal(out, before)


def test_uint64_index_overflow():
    with pytest.raises(InvalidArgumentError, match="does not fit in int64"):
        sparse_rows.as_index_array(np.array([2**63], dtype=np.uint64))


def test_wrapper_casts_values_to_target_dtype():
    out = np.zeros((2, 2), np.float32)
    sparse_rows.scatter_add(out, np.array([1], np.int32), np.array([[0.5, 1.5]]))
    np.testing.assert_array_equal(out, [[0, 0], [0.5, 1.5]])


@settings(max_examples=60, deadline=None)
@given(
    n_rows=st.integers(1, 50),
    data=st.data(),
    dtype=st.sampled_from(FLOATS),
    index_dtype=st.sampled_from(INDEX),
    threads=st.sampled_from(THREADS),
)
def test_property_scatter_add_equals_add_at(n_rows, data, dtype, index_dtype, threads):
    indices = data.draw(
        hynp.arrays(
            index_dtype, st.integers(0, 60), elements=st.integers(0, n_rows - 1)
        )
    )
    width = data.draw(st.integers(0, 4))
    values = data.draw(
        hynp.arrays(dtype, (indices.size, width),
                    elements=st.floats(-1e3, 1e3, width=32))
    )
    expected = np.zeros((n_rows, width), dtype)
    np.add.at(expected, indices, values)
    out = np.zeros((n_rows, width), dtype)
    sg.set_num_threads(threads)
    sparse_rows.scatter_add(out, indices, values)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize(
    "n_rows", [0, 1, 5, 2**31 - 1, 2**31, 2**31 + 5, 2**62, 2**63 - 1]
)
def test_all_in_range_at_the_edges(dtype, n_rows):
    info = np.iinfo(dtype)
    for x in (info.min, -1, 0, 1, 4, 5, 2**31 - 2, 2**31 - 1, info.max):
        if not info.min <= x <= info.max:
            continue
        indices = np.array([x, 0, 0], dtype)
        want = 0 <= x < n_rows and n_rows > 0
        assert K.all_in_range(indices, n_rows) == want, (x, n_rows)
        assert K.all_in_range(indices[::-1].copy(), n_rows) == want


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.integers(-(2**40), 2**40), max_size=40),
    n_rows=st.integers(0, 2**41),
)
def test_all_in_range_matches_numpy(values, n_rows):
    indices = np.array(values, dtype=np.int64)
    want = bool(np.all((indices >= 0) & (indices < n_rows)))
    assert K.all_in_range(indices, n_rows) == want
    big = np.repeat(indices, 1 + (1 << 18) // max(indices.size, 1))
    for threads in THREADS:  # above the threshold for several threads
        assert K.all_in_range(big, n_rows, threads) == want
