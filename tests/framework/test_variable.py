import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError


def test_construct_copies_and_names():
    init = np.array([1.0, 2.0], dtype=np.float32)
    v = sg.Variable(init, name="w")
    init[0] = 50.0
    assert v.numpy()[0] == 1.0
    assert v.name == "w" and v.trainable and v.dtype == np.float32
    assert v.shape == (2,) and v.ndim == 1 and v.size == 2 and len(v) == 2
    assert v.version == 0
    assert not sg.Variable(1.0, trainable=False).trainable
    assert sg.Variable(lambda: np.ones(3), dtype=np.float32).dtype == np.float32
    a, b = sg.Variable(0.0), sg.Variable(0.0)
    assert a.name != b.name


def test_construct_rejects_bad_values():
    with pytest.raises(TypeError, match="None"):
        sg.Variable(None)
    with pytest.raises(InvalidArgumentError, match="complex"):
        sg.Variable(np.ones(2, dtype=np.complex64))
    with pytest.raises(TypeError, match="name"):
        sg.Variable(1.0, name=3)


def test_value_is_a_readonly_view_that_sees_updates():
    v = sg.Variable(np.zeros(3))
    t = v.value()
    assert not np.asarray(t).flags.writeable
    v.assign([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])
    assert v.version == 1


def test_numpy_and_array_are_copies():
    v = sg.Variable([1.0, 2.0])
    a = np.asarray(v)
    a[0] = 99.0
    v.numpy()[1] = 99.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    ro = (
        np.asarray(v, copy=False)
        if np.lib.NumpyVersion(np.__version__) >= "2.0.0"
        else None
    )
    if ro is not None:
        assert not ro.flags.writeable


def test_assign_family_and_versions():
    v = sg.Variable(np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32))
    assert v.assign_add(1.0) is v
    np.testing.assert_array_equal(v.numpy(), [[2, 3], [4, 5]])
    v.assign_sub(np.array([1.0, 2.0]))  # float64 row broadcast into float32
    np.testing.assert_array_equal(v.numpy(), [[1, 1], [3, 3]])
    v.assign(sg.constant([[0.5, 0.5], [0.5, 0.5]]))
    np.testing.assert_array_equal(v.numpy(), np.full((2, 2), 0.5))
    assert v.version == 3
    assert v.dtype == np.float32


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_assign_errors_leave_variable_unchanged(method):
    v = sg.Variable(np.arange(6, dtype=np.int32).reshape(2, 3))
    before = v.numpy()
    with pytest.raises(InvalidArgumentError, match=r"shape \(2, 3\).*\(4,\)"):
        getattr(v, method)(np.ones(4, dtype=np.int32))
    with pytest.raises(InvalidArgumentError, match=r"float64 cannot be cast.*int32"):
        getattr(v, method)(np.ones((2, 3)))
    with pytest.raises(TypeError, match="scatter"):
        getattr(v, method)(sg.IndexedSlices([[1, 1, 1]], [0]))
    np.testing.assert_array_equal(v.numpy(), before)
    assert v.version == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_scatter_add_update_sub(dtype, index_dtype, rng):
    table = rng.standard_normal((10, 4)).astype(dtype)
    v = sg.Variable(table)
    idx = np.array([3, 0, 3, 9, 3], dtype=index_dtype)
    vals = rng.standard_normal((5, 4)).astype(dtype)
    expected = table.copy()
    np.add.at(expected, idx, vals)
    v.scatter_add(sg.IndexedSlices(vals, idx, dense_shape=(10, 4)))
    np.testing.assert_allclose(v.numpy(), expected, rtol=1e-6)
    np.subtract.at(expected, idx, vals)
    v.scatter_sub(sg.IndexedSlices(vals, idx))
    np.testing.assert_allclose(v.numpy(), expected, rtol=1e-5, atol=1e-6)
    v.scatter_update(sg.IndexedSlices(vals, idx))
    expected[[0, 9]] = vals[[1, 3]]
    expected[3] = vals[4]  # the last duplicate wins
    np.testing.assert_allclose(v.numpy(), expected, rtol=1e-5, atol=1e-6)
    assert v.version == 3


def test_scatter_on_integer_variable_uses_numpy_path():
    v = sg.Variable(np.zeros((3, 2), dtype=np.int64))
    v.scatter_add(sg.IndexedSlices(np.ones((3, 2), np.int64), [2, 2, 0]))
    np.testing.assert_array_equal(v.numpy(), [[1, 1], [0, 0], [2, 2]])
    v.scatter_update(sg.IndexedSlices(np.array([[5, 5], [7, 7]]), [1, 1]))
    np.testing.assert_array_equal(v.numpy(), [[1, 1], [7, 7], [2, 2]])


def test_scatter_errors_leave_variable_unchanged(rng):
    table = rng.standard_normal((4, 3))
    v = sg.Variable(table)
    with pytest.raises(
        InvalidArgumentError, match=r"indices\[1\] = 4 is not in \[0, 4\)"
    ):
        v.scatter_add(sg.IndexedSlices(np.ones((2, 3)), [0, 4]))
    with pytest.raises(InvalidArgumentError, match="dense_shape"):
        v.scatter_update(sg.IndexedSlices(np.ones((1, 3)), [0], dense_shape=(5, 3)))
    with pytest.raises(InvalidArgumentError, match="values of shape"):
        v.scatter_add(sg.IndexedSlices(np.ones((1, 2)), [0]))
    with pytest.raises(TypeError, match="IndexedSlices"):
        v.scatter_add(np.ones((4, 3)))
    with pytest.raises(InvalidArgumentError, match="scalar"):
        sg.Variable(1.0).scatter_add(sg.IndexedSlices([1.0], [0]))
    with pytest.raises(InvalidArgumentError, match="cannot be cast"):
        sg.Variable(np.zeros((2, 2), np.int32)).scatter_add(
            sg.IndexedSlices(np.ones((1, 2)), [0])
        )
    np.testing.assert_array_equal(v.numpy(), table)
    assert v.version == 0


def test_repr_names_variable():
    r = repr(sg.Variable([1.0], name="emb"))
    assert "emb" in r and "shape=(1,)" in r


@pytest.mark.parametrize("n_threads", [1, 2, 4])
@pytest.mark.parametrize("method", ["scatter_add", "scatter_sub", "scatter_update"])
def test_scatter_of_rows_read_from_the_variable_itself(method, n_threads):
    # The values view the buffer the scatter writes: they are read from a
    # copy (as np.add.at does), so the result is NumPy's, for any threads.
    sg.set_num_threads(n_threads)
    v = sg.Variable(np.arange(6000.0).reshape(3000, 2))
    rows = np.arange(1500)[::-1] * 2 + 1
    getattr(v, method)(sg.IndexedSlices(v.value()[:1500], rows, v.shape))
    expected = np.arange(6000.0).reshape(3000, 2)
    values = expected[:1500].copy()
    if method == "scatter_update":
        expected[rows] = values
    else:
        np.add.at(expected, rows, values if method == "scatter_add" else -values)
    np.testing.assert_array_equal(v.numpy(), expected)


def test_sparse_rows_scatter_with_indices_viewing_the_target():
    # Indices that are the target's own bytes are copied before the kernel
    # writes (they would change under it).
    out = np.zeros((8, 1))
    ids = out.reshape(-1)[:3].view(np.int64)
    ids[:] = [5, 6, 5]
    expected = out.copy()
    np.add.at(expected, [5, 6, 5], np.ones((3, 1)))
    sg.framework.sparse_rows.scatter_add(out, ids, np.ones((3, 1)))
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("shape", [(1000, 64), (3,), ()])
def test_values_start_on_a_cache_line(shape):
    # scattered row reads then touch no extra cache line per row
    for source in (np.ones(shape, np.float32), np.arange(int(np.prod(shape)))):
        v = sg.Variable(source.reshape(shape))
        assert v._value.ctypes.data % 64 == 0
        np.testing.assert_array_equal(v.numpy(), source.reshape(shape))
        assert v._value.flags.c_contiguous and v._value.flags.writeable


def test_dtype_conversion_on_creation():
    v = sg.Variable([1.7, -2.2], dtype=np.float32)
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v.numpy(), np.array([1.7, -2.2], np.float32))


def test_scalar_conversions_like_tensor():
    v = sg.Variable(np.float32(2.5))
    assert float(v) == 2.5 and int(v) == 2
    assert int(sg.Variable(np.int64(7))) == 7
    with pytest.raises(TypeError):
        float(sg.Variable(np.ones(3, np.float32)))
