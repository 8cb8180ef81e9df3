import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError


def test_convert_scalars_lists_arrays():
    t = sg.convert_to_tensor([[1, 2], [3, 4]])
    assert t.shape == (2, 2) and t.ndim == 2 and t.size == 4
    assert t.dtype == np.int64
    np.testing.assert_array_equal(t.numpy(), [[1, 2], [3, 4]])
    s = sg.convert_to_tensor(2.5)
    assert s.shape == () and s.dtype == np.float64 and float(s) == 2.5
    f = sg.convert_to_tensor(np.arange(3), dtype=np.float32)
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f.numpy(), [0.0, 1.0, 2.0])


def test_tensor_is_immutable_and_independent_of_source():
    source = np.array([1.0, 2.0, 3.0])
    t = sg.convert_to_tensor(source)
    source[0] = 100.0
    assert t.numpy()[0] == 1.0
    view = np.asarray(t)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 5.0
    copy = t.numpy()
    copy[0] = 7.0
    assert t.numpy()[0] == 1.0


def test_frozen_array_is_wrapped_without_copy_but_readonly_view_of_writeable_is_copied(
):
    frozen = np.arange(4.0)
    frozen.flags.writeable = False
    assert np.shares_memory(np.asarray(sg.convert_to_tensor(frozen)), frozen)
    base = np.arange(4.0)
    view = base.view()
    view.flags.writeable = False
    t = sg.convert_to_tensor(view)
    base[0] = 9.0
    assert t.numpy()[0] == 0.0


def test_convert_tensor_returns_same_object_and_checks_dtype():
    t = sg.convert_to_tensor([1.0, 2.0])
    assert sg.convert_to_tensor(t) is t
    assert sg.convert_to_tensor(t, dtype=np.float64) is t
    with pytest.raises(InvalidArgumentError, match="float32"):
        sg.convert_to_tensor(t, dtype=np.float32)


def test_convert_variable_and_indexed_slices():
    v = sg.Variable([1.0, 2.0])
    np.testing.assert_array_equal(sg.convert_to_tensor(v).numpy(), [1.0, 2.0])
    s = sg.IndexedSlices([[1.0], [2.0]], [1, 1], dense_shape=(3, 1))
    np.testing.assert_array_equal(
        sg.convert_to_tensor(s).numpy(), [[0.0], [3.0], [0.0]]
    )


@pytest.mark.parametrize(
    "value, match",
    [
        (None, "None"),
        ("abc", "not numeric"),
        (np.array([1 + 2j]), "complex"),
        (object(), "not numeric"),
    ],
)
def test_convert_rejects(value, match):
    with pytest.raises((TypeError, InvalidArgumentError), match=match):
        sg.convert_to_tensor(value)


def test_convert_rejects_scipy_sparse():
    import scipy.sparse as sp

    with pytest.raises(TypeError, match=r"scipy\.sparse"):
        sg.convert_to_tensor(sp.eye(3, format="csr"))


def test_array_protocol_and_repr():
    t = sg.constant([[1.5, 2.0]], dtype=np.float32)
    assert np.asarray(t).dtype == np.float32
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    r = repr(t)
    assert "shape=(1, 2)" in r and "float32" in r and "1.5" in r
    assert len(t) == 1
    with pytest.raises(TypeError):
        len(sg.constant(1.0))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(sg.constant([1.0, 2.0]))
    assert bool(sg.constant([3.0]))
    assert int(sg.constant(7)) == 7
    assert [10, 20, 30][sg.constant(2)] == 30
    with pytest.raises(TypeError):
        [1][sg.constant(0.0)]


def test_tensor_ids_are_unique():
    ids = {sg.constant(1.0)._id for _ in range(100)}
    assert len(ids) == 100


def test_device_is_cpu():
    assert sg.constant([1.0]).device == "cpu"


@pytest.mark.parametrize("call", [
    lambda v: sg.exp(v),
    lambda v: sg.convert_to_tensor(v),
    lambda v: sg.add(v, 1.0),
])
def test_a_broadcast_view_too_large_to_copy_is_refused(call):
    view = np.broadcast_to(np.float64(1.0), (2**40,))
    shape = r"\(1099511627776,\)"
    with pytest.raises(InvalidArgumentError, match=r"contiguous copy.*" + shape):
        call(view)
