"""Tests of sparse.segment_sum / segment_mean / segment_sqrt_n (reference
ragged.md section 4): golden values, TensorFlow fixtures, errors, IndexedSlices
gradients (finite differences, densified == dense), NumPy loop, thread-count
bit identity."""

import os
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.ops.sparse_segment_ops import embedding_bag
from sparsegrad.testing import assert_indexed_slices_equal, check_gradients

# Op types whose gradients this module checks (the registry sweep reads it).
CHECKED_OPS = (
    "SparseSegmentSum",
    "SparseSegmentMean",
    "SparseSegmentSqrtN",
    "SparseSegmentReduceGrad",
    "EmbeddingBag",
)

OPS = {
    "sum": sg.sparse.segment_sum,
    "mean": sg.sparse.segment_mean,
    "sqrtn": sg.sparse.segment_sqrt_n,
}
C = np.array([[1.0, 2, 3, 4], [-1, -2, -3, -4], [5, 6, 7, 8]], dtype=np.float32)
X40 = np.arange(1, 41, dtype=np.float32).reshape(10, 4)


def numpy_bags(data, indices, segment_ids, n_segments, combiner):
    """The reference: a plain loop in float64."""
    out = np.zeros((n_segments,) + data.shape[1:])
    counts = np.zeros(n_segments)
    for i, s in zip(indices, segment_ids):
        out[s] += data[i]
        counts[s] += 1
    shape = (-1,) + (1,) * (data.ndim - 1)
    if combiner == "mean":
        out /= np.maximum(counts, 1).reshape(shape)
    elif combiner == "sqrtn":
        out /= np.sqrt(np.maximum(counts, 1)).reshape(shape)
    return out


def numpy_grad(upstream, n_rows, indices, segment_ids, combiner):
    counts = np.bincount(segment_ids, minlength=upstream.shape[0]).astype(float)
    scale = {"sum": np.ones_like(counts), "mean": 1 / np.maximum(counts, 1),
             "sqrtn": 1 / np.sqrt(np.maximum(counts, 1))}[combiner]
    dense = np.zeros((n_rows,) + upstream.shape[1:])
    shape = (-1,) + (1,) * (upstream.ndim - 1)
    np.add.at(dense, indices, (upstream * scale.reshape(shape))[segment_ids])
    return dense


# -- golden values (section 4) -------------------------------------------------------


def test_forward_goldens():
    out = sg.sparse.segment_sum(X40, [8, 3, 0, 9], [0, 2, 2, 2])
    np.testing.assert_array_equal(
        out.numpy(), [[33, 34, 35, 36], [0, 0, 0, 0], [51, 54, 57, 60]])
    assert out.dtype == np.float32
    mean = sg.sparse.segment_mean(X40, [8, 3, 0, 9], [0, 2, 2, 2])
    np.testing.assert_array_equal(mean.numpy()[2], [17, 18, 19, 20])
    five = sg.sparse.segment_sum(X40, [8, 3, 0, 9], [0, 2, 2, 2], num_segments=5)
    np.testing.assert_array_equal(five.numpy()[:3], out.numpy())
    np.testing.assert_array_equal(five.numpy()[3:], 0)
    lead = sg.sparse.segment_sum(X40, [8, 3, 0, 9], [1, 2, 2, 2])
    np.testing.assert_array_equal(lead.numpy()[0], 0)
    np.testing.assert_array_equal(lead.numpy()[1], X40[8])


@pytest.mark.parametrize(
    "indices,segment_ids,expected",
    [
        ([0, 1], [0, 0], [[0, 0, 0, 0]]),
        ([0, 1], [0, 1], [[1, 2, 3, 4], [-1, -2, -3, -4]]),
        ([0, 1, 2], [0, 0, 1], [[0, 0, 0, 0], [5, 6, 7, 8]]),
    ],
)
def test_docstring_goldens(indices, segment_ids, expected):
    np.testing.assert_array_equal(
        sg.sparse.segment_sum(C, indices, segment_ids).numpy(), expected)


def test_duplicate_index_goldens():
    np.testing.assert_array_equal(
        sg.sparse.segment_sum(C, [2, 2], [0, 0]).numpy(), [[10, 12, 14, 16]])
    np.testing.assert_array_equal(
        sg.sparse.segment_mean(C, [2, 2], [0, 0]).numpy(), [[5, 6, 7, 8]])
    np.testing.assert_allclose(
        sg.sparse.segment_sqrt_n(C, [2, 2], [0, 0]).numpy(),
        [[7.071068, 8.485281, 9.899495, 11.313708]], rtol=1e-6)


GRAD_GOLDEN = {
    "sum": {0: [5, 6], 3: [8, 10], 8: [1, 2], 9: [5, 6]},
    "mean": {0: [1.6666667, 2], 3: [4.666667, 6], 8: [1, 2], 9: [1.6666667, 2]},
    "sqrtn": {0: [2.8867512, 3.4641016], 3: [5.886751, 7.464102], 8: [1, 2],
              9: [2.8867512, 3.4641016]},
}


@pytest.mark.parametrize("combiner", list(OPS))
def test_gradient_goldens(combiner):
    v = sg.Variable(np.zeros((10, 2), np.float32))
    with sg.GradientTape() as tape:
        y = OPS[combiner](v, [8, 3, 0, 9, 3], [0, 1, 2, 2, 2])
    g = tape.gradient(y, v, output_gradients=np.array(
        [[1, 2], [3, 4], [5, 6]], np.float32))
    assert isinstance(g, sg.IndexedSlices) and g.dense_shape == (10, 2)
    # TensorFlow's V2 form: sorted unique indices, one accumulated row each.
    np.testing.assert_array_equal(g.indices.numpy(), [0, 3, 8, 9])
    np.testing.assert_allclose(
        g.values.numpy(), list(GRAD_GOLDEN[combiner].values()), rtol=1e-6)
    assert g.values.dtype == np.float32


def test_empty_inputs():
    out = sg.sparse.segment_sum(X40, [], [])
    assert out.shape == (0, 4) and out.dtype == np.float32
    out = sg.sparse.segment_mean(X40, np.zeros(0, np.int32), [], num_segments=5)
    np.testing.assert_array_equal(out.numpy(), np.zeros((5, 4)))
    v = sg.Variable(X40)
    with sg.GradientTape() as tape:
        y = sg.sparse.segment_sqrt_n(v, [], [], num_segments=2)
    g = tape.gradient(y, v)
    assert g.indices.shape == (0,) and g.values.shape == (0, 4)


# -- TensorFlow fixtures ---------------------------------------------------------------


def _golden(kind):
    path = os.path.join(os.path.dirname(__file__), "data", "bag_golden.npz")
    data = np.load(path)
    for line in str(data["__cases__"]).split("\n"):
        k, name, combiner, num_segments, max_norm, weighted = line.split("|")
        if k not in kind:
            continue
        members = {key.split("__", 1)[1]: data[key] for key in data.files
                   if key.startswith(name + "__")}
        yield pytest.param(
            k, combiner, None if num_segments == "-" else int(num_segments),
            None if max_norm == "-" else float(max_norm), weighted == "1",
            members, id=name)


@pytest.mark.parametrize("kind,combiner,num_segments,max_norm,weighted,case",
                         list(_golden(("segment",))))
def test_tensorflow_fixtures(kind, combiner, num_segments, max_norm, weighted,
                             case):
    del kind, max_norm, weighted
    dtype = case["data"].dtype
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    v = sg.Variable(case["data"])
    with sg.GradientTape() as tape:
        out = OPS[combiner](v, case["indices"], case["segment_ids"],
                            num_segments=num_segments)
    np.testing.assert_allclose(out.numpy(), case["out"], rtol=rtol, atol=rtol)
    assert out.dtype == dtype
    g = tape.gradient(out, v, output_gradients=case["up"])
    assert_indexed_slices_equal(g, case["grad"], rtol=rtol, atol=rtol)


# -- errors


@pytest.mark.parametrize(
    "indices,segment_ids,kwargs,message",
    [
        ([0, 7], [0, 1], {}, "Bad: indices[1] == 7 out of range [0, 3)"),
        ([0, -1], [0, 1], {}, "indices[1] == -1 out of range [0, 3)"),
        ([0, 1], [0], {}, "segment_ids and indices should have same size."),
        ([0, 1, 2], [0, 0, -1], {}, "segment ids must be >= 0"),
        ([0, 1, 2, 0], [0, 1, 0, 1], {}, "segment ids are not increasing"),
        ([0, 1, 2], [-1, 0, 1], {},
         "Segment id -1 out of range [0, 2), possibly because 'segment_ids' "
         "input is not sorted."),
        ([0, 1], [0, 2], {"num_segments": 2},
         "segment ids must be < num_segments"),
        ([0, 1], [0, 1], {"num_segments": -1}, "negative value for num_segments"),
        ([0, 1], [[0, 1]], {}, "segment_ids must be 1-D"),
        ([0.0, 1.0], [0, 1], {}, "indices must be int32 or int64"),
    ],
)
@pytest.mark.parametrize("combiner", list(OPS))
def test_errors(combiner, indices, segment_ids, kwargs, message):
    v = sg.Variable(C)
    before = v.numpy().copy()
    with sg.GradientTape() as tape, pytest.raises(InvalidArgumentError) as info:
        OPS[combiner](v, indices, segment_ids, **kwargs)
    assert message in str(info.value)
    np.testing.assert_array_equal(v.numpy(), before)
    assert tape.gradient(sg.constant(1.0), v) is None


def test_scalar_data_and_integer_mean_are_rejected():
    with pytest.raises(InvalidArgumentError, match="Shape must be at least rank 1"):
        sg.sparse.segment_sum(3.0, [0], [0])
    ints = np.arange(6).reshape(3, 2)
    np.testing.assert_array_equal(
        sg.sparse.segment_sum(ints, [2, 0, 2], [0, 0, 1]).numpy(), [[4, 6], [4, 5]])
    assert sg.sparse.segment_sum(ints, [2], [0]).dtype == ints.dtype
    for fn in (sg.sparse.segment_mean, sg.sparse.segment_sqrt_n):
        with pytest.raises(InvalidArgumentError, match="floating-point"):
            fn(ints, [0], [0])


def test_huge_segment_id_is_an_error_not_a_crash():
    with pytest.raises(InvalidArgumentError, match="memory"):
        sg.sparse.segment_sum(C, [0], [1676240524292489355])


def _refused(fragment, call, *args, **kwargs):
    with pytest.raises(InvalidArgumentError, match=re.escape(fragment)) as info:
        call(*args, **kwargs)
    assert str(info.value).endswith(" bytes)") and "more than" in str(info.value)


def test_the_512_gib_segment_sum_is_refused_before_allocating():
    """Issue 23: int32 ids [0, 2**31 - 1] ask for 2**31 rows of 64 floats and
    the splits beside them; checked together (MemoryError before)."""
    data = np.ones((5, 64), np.float32)
    ids = np.array([0, 2**31 - 1], np.int32)
    _refused("sparse_segment_sum: segment_ids asks for a result of shape "
             "(2147483648, 64) and dtype float32 (549755813888 bytes); with the "
             "call's other buffers, 566935683080 bytes, more than ",
             sg.sparse.segment_sum, data, [0, 2], ids)
    np.testing.assert_array_equal(data, 1.0)                 # inputs untouched
    np.testing.assert_array_equal(ids, [0, 2**31 - 1])
    _refused("sparse_segment_sum: segment_ids asks for a result of shape "
             "(4294967298, 64)", sg.sparse.segment_sum, data, [0, 2],
             np.array([0, 2**32 + 1]))


@pytest.mark.parametrize("combiner", list(OPS))
def test_a_huge_num_segments_is_refused_before_allocating(combiner):
    name = "sqrt_n" if combiner == "sqrtn" else combiner
    _refused(f"sparse_segment_{name}: num_segments asks for a result of shape "
             "(1099511627776, 4) and dtype float32",
             OPS[combiner], C, [0, 1], [0, 0], num_segments=2**40)


def test_gathered_rows_off_the_kernel_are_counted():
    # integer tables take NumPy's gather: nnz rows of the table, 4 TiB here,
    # from 16 MiB of ids and a 4 MiB table
    table = np.ones((1, 2**20), np.int32)
    ids = np.zeros(2**20, np.int64)
    _refused("sparse_segment_sum: indices asks for a result of shape (1048576, "
             "1048576) and dtype int32", sg.sparse.segment_sum, table, ids, ids)
    # a non-contiguous float16 table's gathered rows and their float32 copy
    # (a C-contiguous one goes to the half kernel, which gathers nothing)
    half = np.ones((1, 2**21), np.float16)[:, ::2]
    _refused("sparse_segment_sum: indices asks for a result of shape (1048576, "
             "1048576) and dtype float32", sg.sparse.segment_sum, half, ids, ids)


def test_embedding_bag_checks_its_bags_before_allocating():
    table = np.ones((1, 2**20), np.float32)
    splits = np.zeros(2**20 + 1, np.int64)          # 2**20 empty bags
    _refused("embedding_bag: splits asks for a result of shape (1048576, "
             "1048576) and dtype float32", embedding_bag, table, [], splits)
    np.testing.assert_array_equal(
        embedding_bag(table[:, :2], [], splits[:4]).numpy(), np.zeros((3, 2)))


def test_embedding_bag_splits_whose_difference_wraps_are_refused():
    # 2**63 - 1 then -2: np.diff wraps the step to a positive one, and the
    # kernel read past its ids (SIGSEGV before)
    table = np.ones((4, 2))
    splits = np.array([0, 2**63 - 1, -2, 8])
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "embedding_bag: splits must be non-decreasing, but splits[2] = -2 < "
            "splits[1] = 9223372036854775807")):
        embedding_bag(table, np.zeros(8, np.int64), splits)
    assert splits.tolist() == [0, 2**63 - 1, -2, 8]


def test_a_broadcast_index_array_is_checked_before_its_copy():
    ids = np.broadcast_to(np.int64(0), (2**40,))
    _refused("indices asks for a result of shape (1099511627776,) and dtype int64",
             sg.sparse.segment_sum, C, ids, ids)


# -- gradients


@pytest.mark.parametrize("combiner", list(OPS))
def test_finite_differences_to_second_order(rng, combiner):
    data = rng.standard_normal((6, 2, 3))
    indices = np.array([4, 0, 4, 2, 5, 5, 5])
    segment_ids = np.array([0, 0, 2, 2, 2, 3, 3])
    def f(d):
        return OPS[combiner](d, indices, segment_ids, num_segments=5) ** 2

    check_gradients(f, [data], order=2)


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_embedding_bag_finite_differences(rng, combiner):
    table = rng.standard_normal((5, 3))
    ids = np.array([1, 1, 4, 0, 2, 2])
    splits = np.array([0, 3, 3, 6])
    weights = np.array([0.5, -1.0, 2.0, 1.0, 0.25, 3.0])
    check_gradients(lambda t: embedding_bag(t, ids, splits, weights,
                                            combiner) ** 2, [table], order=2)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("combiner", list(OPS))
def test_sparse_gradient_equals_dense(rng, zipf, combiner, dtype, index_dtype):
    n_rows, nnz = 50, 300
    data = rng.standard_normal((n_rows, 5)).astype(dtype)
    indices = zipf(rng, nnz, n_rows, dtype=index_dtype)
    segment_ids = np.sort(rng.integers(0, 40, nnz)).astype(index_dtype)
    upstream = rng.standard_normal((40, 5)).astype(dtype)
    v = sg.Variable(data)
    with sg.GradientTape() as tape:
        y = OPS[combiner](v, indices, segment_ids, num_segments=40)
    g = tape.gradient(y, v, output_gradients=upstream)
    assert g.values.dtype == dtype and g.dense_shape == (n_rows, 5)
    assert np.all(np.diff(g.indices.numpy()) > 0)          # sorted, distinct
    np.testing.assert_array_equal(g.indices.numpy(), np.unique(indices))
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(
        g.to_dense().numpy(),
        numpy_grad(upstream.astype(float), n_rows, indices, segment_ids, combiner),
        rtol=rtol, atol=rtol)


def test_indexed_slices_upstream_is_densified():
    v = sg.Variable(X40)
    with sg.GradientTape() as tape:
        y = sg.sparse.segment_mean(v, [8, 3, 0, 9], [0, 2, 2, 2])
        z = sg.gather(y, [2, 2])      # an IndexedSlices flows back into y
    g = tape.gradient(z, v)
    np.testing.assert_array_equal(g.indices.numpy(), [0, 3, 8, 9])
    np.testing.assert_allclose(g.values.numpy(), [[2 / 3] * 4, [2 / 3] * 4,
                                                  [0] * 4, [2 / 3] * 4], rtol=1e-6)


# -- against a NumPy loop


@settings(max_examples=60, deadline=None)
@given(
    combiner=st.sampled_from(list(OPS)),
    n_rows=st.integers(1, 8),
    lengths=st.lists(st.integers(0, 4), min_size=0, max_size=6),
    extra=st.integers(0, 2),
    width=st.integers(0, 3),
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_matches_numpy_loop(combiner, n_rows, lengths, extra, width, seed, dtype):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((n_rows, width)).astype(dtype)
    segment_ids = np.repeat(np.arange(len(lengths)), lengths)
    indices = rng.integers(0, n_rows, segment_ids.size)
    n_segments = len(lengths) + extra
    out = OPS[combiner](data, indices, segment_ids, num_segments=n_segments)
    expected = numpy_bags(data.astype(float), indices, segment_ids, n_segments,
                          combiner)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    assert out.shape == (n_segments, width) and out.dtype == dtype


# -- determinism, dtypes, no copies


@pytest.mark.parametrize("combiner", list(OPS))
def test_bits_do_not_depend_on_thread_count(rng, zipf, combiner):
    n_rows, nnz, width = 3000, 40000, 16
    data = rng.standard_normal((n_rows, width)).astype(np.float32)
    indices = zipf(rng, nnz, n_rows)
    segment_ids = np.sort(rng.integers(0, 2000, nnz))
    upstream = rng.standard_normal((2000, width)).astype(np.float32)
    results = []
    for threads in (1, 2, 3):
        sg.set_num_threads(threads)
        v = sg.Variable(data)
        with sg.GradientTape() as tape:
            y = OPS[combiner](v, indices, segment_ids, num_segments=2000)
        g = tape.gradient(y, v, output_gradients=upstream)
        results.append((y.numpy(), g.indices.numpy(), g.values.numpy()))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert a.tobytes() == b.tobytes()


def test_read_only_and_non_contiguous_data(rng):
    data = rng.standard_normal((6, 8))
    data.flags.writeable = False
    expected = numpy_bags(data, [5, 1, 1], [0, 0, 2], 3, "mean")
    np.testing.assert_allclose(
        sg.sparse.segment_mean(data, [5, 1, 1], [0, 0, 2]).numpy(), expected)
    strided = np.asfortranarray(data)
    np.testing.assert_allclose(
        sg.sparse.segment_mean(strided, [5, 1, 1], [0, 0, 2]).numpy(), expected)


def test_float16_is_accumulated_in_float32():
    data = np.full((2, 3), 1000.0, np.float16)
    out = sg.sparse.segment_sum(data, [0, 1, 0, 1, 0], [0, 0, 0, 0, 0])
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out.numpy(), np.float16(5000.0))


def test_ndarray_data_is_not_copied():
    import tracemalloc

    big = np.ones((200_000, 16), np.float32)      # 12.8 MB
    tracemalloc.start()
    sg.sparse.segment_sum(big, [5, 7], [0, 0])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1_000_000
