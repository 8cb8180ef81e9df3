import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hynp

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError

FLOATS = [np.float32, np.float64]
INDEX = [np.int32, np.int64]


def dense_reference(values, indices, n_rows):
    out = np.zeros((n_rows,) + values.shape[1:], dtype=values.dtype)
    np.add.at(out, indices, values)
    return out


def test_golden_to_dense_sums_duplicates():
    # autodiff.md §6.3 golden case
    s = sg.IndexedSlices([[1, 2], [3, 4], [5, 6]], [0, 2, 0], dense_shape=[3, 2])
    np.testing.assert_array_equal(s.to_dense().numpy(), [[6, 8], [0, 0], [3, 4]])
    np.testing.assert_array_equal(np.asarray(s), [[6, 8], [0, 0], [3, 4]])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("index_dtype", INDEX)
def test_structure_and_dtypes_kept(dtype, index_dtype, rng):
    values = rng.standard_normal((4, 2, 3)).astype(dtype)
    indices = np.array([5, 1, 5, 0], dtype=index_dtype)
    s = sg.IndexedSlices(values, indices, dense_shape=(6, 2, 3))
    assert s.dtype == dtype and s.indices.dtype == index_dtype
    assert s.dense_shape == (6, 2, 3) == s.shape and len(s) == 4
    dense = s.to_dense()
    assert dense.dtype == dtype and dense.shape == (6, 2, 3)
    np.testing.assert_allclose(
        dense.numpy(), dense_reference(values, indices, 6), rtol=1e-6
    )
    d = s.deduplicate()
    np.testing.assert_array_equal(d.indices.numpy(), [0, 1, 5])
    assert d.indices.dtype == index_dtype and d.values.dtype == dtype
    np.testing.assert_allclose(d.to_dense().numpy(), dense.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(d.values.numpy()[2], values[0] + values[2])


def test_empty_slices():
    s = sg.IndexedSlices(np.zeros((0, 3), np.float32), np.zeros(0, np.int32),
                         dense_shape=(4, 3))
    np.testing.assert_array_equal(s.to_dense().numpy(), np.zeros((4, 3), np.float32))
    d = s.deduplicate()
    assert d.values.shape == (0, 3) and d.indices.shape == (0,)
    assert d.indices.dtype == np.int32
    e = sg.IndexedSlices(np.zeros((0, 3)), [], dense_shape=(4, 3))
    assert e.indices.dtype == np.int64
    assert sg.IndexedSlices.concat([s, s]).values.shape == (0, 3)


def test_one_d_values():
    s = sg.IndexedSlices([1.0, 2.0, 3.0], [2, 0, 2], dense_shape=(3,))
    np.testing.assert_array_equal(s.to_dense().numpy(), [2.0, 0.0, 4.0])
    np.testing.assert_array_equal(s.deduplicate().values.numpy(), [2.0, 4.0])


def test_other_integer_index_dtypes_become_int64():
    s = sg.IndexedSlices([[1.0]], np.array([2], dtype=np.uint8), dense_shape=(3, 1))
    assert s.indices.dtype == np.int64


@pytest.mark.parametrize(
    "values, indices, dense_shape, match",
    [
        ([[1.0]], [[0]], None, "indices must be 1-D"),
        ([[1.0]], 0, None, "indices must be 1-D"),
        ([[1.0]], [0.0], None, "indices must be int32 or int64, got dtype float64"),
        ([[1.0]], [True], None, "indices must be int32 or int64"),
        ([[1.0], [2.0]], [0], None, r"values.shape\[0\] must equal len\(indices\)"),
        (1.0, [0], None, "at least 1-D"),
        ([[1.0, 2.0]], [0], (3, 3), r"row shape of values \(2,\).*\(3,\)"),
        ([[1.0]], [3], (3, 1), r"indices\[0\] = 3 is not in \[0, 3\)"),
        ([[1.0], [1.0]], [0, -1], (3, 1), r"indices\[1\] = -1 is not in \[0, 3\)"),
        ([[1.0]], [-2], None, r"indices\[0\] = -2"),
        ([[1.0]], [0], (-1, 1), "non-negative"),
        ([[1.0]], [0], (2.5, 1), "non-negative ints"),
        ([[1.0]], [0], (), "non-empty"),
        ([[1.0]], [0], (2**63, 1), r"must fit in int64.*got 9223372036854775808"),
        ([[1.0]], [0], (2**70, 1), "must fit in int64"),
        ([[1.0]], [0], np.array([2**64 - 1, 1], np.uint64), "must fit in int64"),
        ([[1.0]], [0], ("3", 1), "non-negative ints"),
    ],
)
def test_validation_errors(values, indices, dense_shape, match):
    with pytest.raises(InvalidArgumentError, match=match):
        sg.IndexedSlices(values, indices, dense_shape)


def test_to_dense_without_dense_shape():
    s = sg.IndexedSlices([[1.0]], [0])
    assert s.dense_shape is None
    with pytest.raises(ValueError, match="dense_shape"):
        s.to_dense()
    # deduplicate works without a dense shape
    np.testing.assert_array_equal(
        sg.IndexedSlices([[1.0], [2.0]], [4, 4]).deduplicate().values.numpy(), [[3.0]]
    )


def test_negation_and_scaling():
    s = sg.IndexedSlices(np.array([[1.0, -2.0]], np.float32), [1], dense_shape=(2, 2))
    for result, factor in [(-s, -1.0), (s * 3, 3.0), (2.0 * s, 2.0), (s / 4, 0.25),
                           (s * np.float64(2.0), 2.0), (s * sg.constant(0.5), 0.5)]:
        assert isinstance(result, sg.IndexedSlices)
        assert result.dtype == np.float32, "a scalar does not change the dtype"
        assert result.dense_shape == (2, 2)
        np.testing.assert_array_equal(result.values.numpy(), [[factor, -2.0 * factor]])
    with pytest.raises(TypeError, match="scalar"):
        s * np.ones(2)
    with pytest.raises(TypeError):
        s * "x"
    with pytest.raises(TypeError):
        s + s


def test_concat_keeps_rows_and_promotes_indices():
    a = sg.IndexedSlices(
        np.ones((2, 3)), np.array([1, 3], np.int32), dense_shape=(4, 3)
    )
    b = sg.IndexedSlices(2 * np.ones((2, 3)), np.array([3, 0], np.int64))
    c = sg.IndexedSlices.concat([a, b])
    assert c.indices.dtype == np.int64 and c.dense_shape == (4, 3)
    np.testing.assert_array_equal(c.indices.numpy(), [1, 3, 3, 0])  # not merged
    np.testing.assert_array_equal(
        c.to_dense().numpy(), [[2] * 3, [1] * 3, [0] * 3, [3] * 3]
    )
    same = sg.IndexedSlices.concat([a, a])
    assert same.indices.dtype == np.int32


def test_concat_errors():
    a = sg.IndexedSlices(np.ones((1, 3)), [0], dense_shape=(4, 3))
    with pytest.raises(ValueError, match="at least one"):
        sg.IndexedSlices.concat([])
    with pytest.raises(TypeError, match="element 1"):
        sg.IndexedSlices.concat([a, np.ones((1, 3))])
    with pytest.raises(InvalidArgumentError, match="different dense shapes"):
        sg.IndexedSlices.concat([a, sg.IndexedSlices(np.ones((1, 3)), [0], (5, 3))])
    with pytest.raises(InvalidArgumentError, match="element 1"):
        sg.IndexedSlices.concat([a, sg.IndexedSlices(np.ones((1, 2)), [0])])
    with pytest.raises(InvalidArgumentError, match="float32"):
        sg.IndexedSlices.concat([a, sg.IndexedSlices(np.ones((1, 3), np.float32), [0])])


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil"])
def test_from_scipy_rows_with_stored_entries(fmt):
    dense = np.array([[0, 0, 0], [1, 0, 2], [0, 0, 0], [0, 3, 0]], dtype=np.float32)
    m = sp.csr_matrix(dense).asformat(fmt)
    s = sg.IndexedSlices.from_scipy(m)
    np.testing.assert_array_equal(s.indices.numpy(), [1, 3])
    np.testing.assert_array_equal(s.values.numpy(), dense[[1, 3]])
    assert s.dense_shape == (4, 3) and s.dtype == np.float32
    np.testing.assert_array_equal(s.to_dense().numpy(), dense)


def test_from_scipy_keeps_explicit_zero_rows_and_sums_duplicates():
    coo = sp.coo_array(([1.0, 2.0, 0.0], ([0, 0, 2], [1, 1, 0])), shape=(3, 2))
    s = sg.IndexedSlices.from_scipy(coo)
    np.testing.assert_array_equal(s.indices.numpy(), [0, 2])
    np.testing.assert_array_equal(s.values.numpy(), [[0.0, 3.0], [0.0, 0.0]])


def test_from_scipy_errors():
    with pytest.raises(TypeError, match=r"scipy\.sparse"):
        sg.IndexedSlices.from_scipy(np.eye(2))


def test_to_scipy_round_trip(rng):
    m = sp.random(30, 7, density=0.1, format="csr", random_state=1, dtype=np.float64)
    s = sg.IndexedSlices.from_scipy(m)
    back = s.to_scipy()
    assert isinstance(back, sp.csr_array)
    assert (back != m).nnz == 0
    dup = sg.IndexedSlices([[1.0, 0.0], [2.0, 5.0]], [1, 1], dense_shape=(3, 2))
    np.testing.assert_array_equal(dup.to_scipy().toarray(), [[0, 0], [3, 5], [0, 0]])
    assert dup.to_scipy().nnz == 2
    with pytest.raises(InvalidArgumentError, match="2-D"):
        sg.IndexedSlices([1.0], [0], dense_shape=(2,)).to_scipy()
    with pytest.raises(ValueError, match="dense_shape"):
        sg.IndexedSlices([[1.0]], [0]).to_scipy()


def test_repr():
    r = repr(sg.IndexedSlices([[1.0]], [2], dense_shape=(3, 1)))
    assert r.startswith("IndexedSlices(indices=") and "dense_shape=(3, 1)" in r


slices_strategy = st.integers(1, 12).flatmap(
    lambda n_rows: st.tuples(
        st.just(n_rows),
        hynp.arrays(np.int64, st.integers(0, 40), elements=st.integers(0, n_rows - 1)),
        st.sampled_from(FLOATS),
        st.sampled_from(INDEX),
        st.integers(0, 3),
    )
)


@settings(max_examples=80, deadline=None)
@given(slices_strategy, st.randoms(use_true_random=False))
def test_property_dedupe_then_densify_equals_densify(case, random):
    n_rows, indices, dtype, index_dtype, width = case
    rng = np.random.default_rng(random.randint(0, 2**32 - 1))
    values = rng.integers(-8, 8, size=(indices.size, width)).astype(dtype)
    s = sg.IndexedSlices(
        values, indices.astype(index_dtype), dense_shape=(n_rows, width)
    )
    d = s.deduplicate()
    # Integer-valued floats: sums are exact in any order.
    np.testing.assert_array_equal(d.to_dense().numpy(), s.to_dense().numpy())
    np.testing.assert_array_equal(d.indices.numpy(), np.unique(indices))
    np.testing.assert_array_equal(
        s.to_dense().numpy(), dense_reference(values, indices, n_rows)
    )


def test_dense_shape_up_to_int64_max_is_accepted():
    s = sg.IndexedSlices([[1.0]], [5], dense_shape=(2**63 - 1, 1))
    assert s.dense_shape == (2**63 - 1, 1)
    assert sg.IndexedSlices([[1.0]], [0], dense_shape=np.array([3, 1])).dense_shape \
        == (3, 1)


@pytest.mark.parametrize("factor", [1j, 2 + 0j, np.complex64(1j), np.complex128(2),
                                    np.array(1j), np.array(0.5j, np.complex64)])
@pytest.mark.parametrize("op", ["mul", "rmul", "div"])
def test_complex_factor_is_an_error(factor, op):
    # It used to be cast to the values' dtype: zeros and a ComplexWarning.
    s = sg.IndexedSlices(np.array([[1.0, 2.0]], np.float32), [1], dense_shape=(2, 2))
    with pytest.raises(InvalidArgumentError, match="complex"):
        {"mul": lambda: s * factor, "rmul": lambda: factor * s,
         "div": lambda: s / factor}[op]()
    np.testing.assert_array_equal(s.values.numpy(), [[1.0, 2.0]])


def test_integer_values_take_only_integer_factors():
    s = sg.IndexedSlices(np.array([[1, 2]], np.int32), [0], dense_shape=(1, 2))
    np.testing.assert_array_equal((s * 3).values.numpy(), [[3, 6]])
    assert (s * np.int64(2)).dtype == np.int32
    with pytest.raises(InvalidArgumentError, match="fractional part"):
        s * 0.5
    with pytest.raises(InvalidArgumentError, match="fractional part"):
        s * np.float32(2.0)
    with pytest.raises(InvalidArgumentError, match="does not fit in the values"):
        s * 2**40


# -- buffers sized by the arguments are checked before they are allocated ------


def test_broadcast_values_or_indices_are_checked_before_their_copies():
    n = 2**40
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "IndexedSlices: values asks for a result of shape (1099511627776, 4) "
            "and dtype float32")):
        sg.IndexedSlices(np.broadcast_to(np.float32(1), (n, 4)),
                         np.broadcast_to(np.int64(0), (n,)))
    values = sg.broadcast_to(np.float32(1), (n, 4))         # a Tensor: not copied
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "IndexedSlices: indices asks for a result of shape (1099511627776,) "
            "and dtype int64")):
        sg.IndexedSlices(values, np.broadcast_to(np.int32(0), (n,)))


def test_to_dense_checks_the_dense_shape_before_allocating():
    s = sg.IndexedSlices(np.ones((2, 3)), [0, 2**40 - 1], dense_shape=(2**40, 3))
    for densify in (s.to_dense, lambda: np.asarray(s)):
        with pytest.raises(InvalidArgumentError, match=re.escape(
                "IndexedSlices.to_dense: dense_shape asks for a result of shape "
                "(1099511627776, 3) and dtype float64")):
            densify()
    np.testing.assert_array_equal(s.values.numpy(), np.ones((2, 3)))
    small = sg.IndexedSlices(np.ones((2, 3)), [0, 0], dense_shape=(2, 3))
    np.testing.assert_array_equal(small.to_dense().numpy(), [[2, 2, 2], [0, 0, 0]])
