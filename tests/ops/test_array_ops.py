"""Shape ops, slicing, cast, identity, stop_gradient and the constructors."""

import re

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.testing import assert_indexed_slices_equal, check_gradients

# Op types whose gradients this module checks (read by tests/autodiff/test_registry.py).
CHECKED_OPS = (
    "Reshape",
    "BroadcastTo",
    "Transpose",
    "ExpandDims",
    "Squeeze",
    "ConcatV2",
    "Pack",
    "StridedSlice",
    "StridedSliceGrad",
    "Cast",
    "Identity",
    "StopGradient",
    "TensorScatterAdd",
)


def test_reshape(rng):
    x = rng.standard_normal((2, 6))
    np.testing.assert_array_equal(sg.reshape(x, (3, -1)).numpy(), x.reshape(3, 4))
    check_gradients(
        lambda t: sg.reshape(t, (4, 3)) * sg.reshape(t, (4, 3)), [x], order=2
    )
    with pytest.raises(InvalidArgumentError, match=r"shape \(2, 6\).*\(5, -1\)"):
        sg.reshape(x, (5, -1))


def test_broadcast_to(rng):
    x = rng.standard_normal((3, 1))
    np.testing.assert_array_equal(
        sg.broadcast_to(x, (2, 3, 4)).numpy(), np.broadcast_to(x, (2, 3, 4))
    )
    check_gradients(lambda t: sg.square(sg.broadcast_to(t, (2, 3, 4))), [x], order=2)
    with pytest.raises(InvalidArgumentError, match="cannot broadcast"):
        sg.broadcast_to(x, (2, 2))


@pytest.mark.parametrize("perm", [None, (1, 0, 2), (2, 0, 1), (-1, 0, 1)])
def test_transpose(perm, rng):
    x = rng.standard_normal((2, 3, 4))
    np_perm = None if perm is None else tuple(p % 3 for p in perm)
    np.testing.assert_array_equal(
        sg.transpose(x, perm).numpy(), np.transpose(x, np_perm)
    )
    check_gradients(lambda t: sg.square(sg.transpose(t, perm)), [x], order=2)


def test_transpose_rejects_bad_perm():
    with pytest.raises(InvalidArgumentError, match="permutation"):
        sg.transpose(np.ones((2, 3)), (0, 0))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_expand_dims(axis, rng):
    x = rng.standard_normal((2, 3))
    np.testing.assert_array_equal(
        sg.expand_dims(x, axis).numpy(), np.expand_dims(x, axis)
    )
    check_gradients(lambda t: sg.square(sg.expand_dims(t, axis)), [x], order=2)
    with pytest.raises(InvalidArgumentError, match="out of range"):
        sg.expand_dims(x, 3)


def test_squeeze(rng):
    x = rng.standard_normal((1, 3, 1, 2))
    assert sg.squeeze(x).shape == (3, 2)
    assert sg.squeeze(x, axis=2).shape == (1, 3, 2)
    assert sg.squeeze(x, axis=[0, -2]).shape == (3, 2)
    check_gradients(lambda t: sg.square(sg.squeeze(t, axis=0)), [x], order=2)
    with pytest.raises(InvalidArgumentError, match=r"axis 1.*size is 3"):
        sg.squeeze(x, axis=1)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis, rng):
    a = rng.standard_normal((2, 3))
    b = rng.standard_normal((2, 3))
    c = rng.standard_normal((2, 3))
    np.testing.assert_array_equal(
        sg.concat([a, b, c], axis).numpy(), np.concatenate([a, b, c], axis)
    )
    check_gradients(
        lambda x, y, z: sg.square(sg.concat([x, y, z], axis)), [a, b, c], order=2
    )


def test_concat_errors():
    with pytest.raises(InvalidArgumentError, match="values\\[1\\] has shape"):
        sg.concat([np.ones((2, 3)), np.ones((3, 2))], 0)
    with pytest.raises(InvalidArgumentError, match="dtype"):
        sg.concat([sg.constant([1.0], "float32"), sg.constant([1.0], "float64")], 0)
    with pytest.raises(InvalidArgumentError, match="scalars"):
        sg.concat([1.0, 2.0], 0)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack(axis, rng):
    a = rng.standard_normal((2, 3))
    b = rng.standard_normal((2, 3))
    np.testing.assert_array_equal(
        sg.stack([a, b], axis).numpy(), np.stack([a, b], axis)
    )
    check_gradients(lambda x, y: sg.square(sg.stack([x, y], axis)), [a, b], order=2)
    with pytest.raises(InvalidArgumentError, match="values\\[1\\] has shape"):
        sg.stack([a, np.ones(3)])


KEYS = [
    1,
    -1,
    slice(1, None),
    (slice(None), 2),
    (Ellipsis, 1),
    (1, slice(None, None, -1)),
    (slice(None, None, 2), None, slice(1, 3)),
    (None, 0, 1),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_getitem(key, rng):
    x = rng.standard_normal((3, 4))
    t = sg.constant(x)
    np.testing.assert_array_equal(t[key].numpy(), x[key])
    check_gradients(lambda v: sg.square(v[key]), [x], order=2)


def test_getitem_errors_and_iteration():
    t = sg.constant([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(IndexError, match="out of bounds"):
        t[2]
    with pytest.raises(InvalidArgumentError):
        t[0, -3]
    with pytest.raises(IndexError, match="too many"):
        t[0, 0, 0]
    with pytest.raises(TypeError, match="gather"):
        t[[0, 1]]
    rows = [r.numpy() for r in t]
    np.testing.assert_array_equal(rows, [[1.0, 2.0], [3.0, 4.0]])
    v = sg.Variable([5.0, 6.0])
    np.testing.assert_array_equal([float(r) for r in v], [5.0, 6.0])


def test_getitem_of_variable_gives_dense_gradient():
    v = sg.Variable([[1.0, 2.0], [3.0, 4.0]])
    with sg.GradientTape() as tape:
        y = v[1] * 2.0
    g = tape.gradient(y, v)
    assert isinstance(g, sg.Tensor)
    np.testing.assert_array_equal(g.numpy(), [[0.0, 0.0], [2.0, 2.0]])


def test_cast(rng):
    x = rng.standard_normal((2, 3))
    assert sg.cast(x, "float32").dtype == np.float32
    np.testing.assert_array_equal(sg.cast([1.7, -1.7], np.int64).numpy(), [1, -1])
    check_gradients(
        lambda t: sg.square(sg.cast(sg.cast(t, "float32"), "float64")),
        [x],
        order=2,
        delta=1e-2,
        rtol=1e-4,
        atol=1e-4,
    )
    # float32 gradient cast back to the float64 source
    xt = sg.constant(x)
    with sg.GradientTape() as tape:
        tape.watch(xt)
        y = sg.cast(xt, "float32") * 2.0
    g = tape.gradient(y, xt)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g.numpy(), np.full((2, 3), 2.0))
    # through an integer cast: no gradient
    with sg.GradientTape() as tape:
        tape.watch(xt)
        y = sg.cast(sg.cast(xt, "int32"), "float64") * 2.0
    assert tape.gradient(y, xt) is None


def test_identity_passes_gradient_and_keeps_sparse():
    x = sg.constant([1.0, 2.0])
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.identity(x) * 3.0
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3.0, 3.0])
    w = sg.Variable(np.arange(6.0).reshape(3, 2))
    with sg.GradientTape() as tape:
        y = sg.gather(sg.identity(w), [2, 2])
    assert_indexed_slices_equal(tape.gradient(y, w), [[0, 0], [0, 0], [2, 2]])


def test_stop_gradient():
    # golden: y = stop_gradient(x*x) * x at x=3 -> 9;
    # gradient(stop_gradient(x), x) None / 0
    x = sg.constant(3.0)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = sg.stop_gradient(x * x) * x
        s = sg.stop_gradient(x)
    assert float(tape.gradient(y, x)) == 9.0
    assert tape.gradient(s, x) is None
    assert float(tape.gradient(s, x, unconnected_gradients="zero")) == 0.0


def test_constructors():
    x = sg.constant([[1, 2]], dtype="int32")
    z = sg.zeros_like(x)
    o = sg.ones_like(x, dtype="float32")
    assert z.dtype == np.int32 and z.shape == (1, 2) and not z.numpy().any()
    assert o.dtype == np.float32
    np.testing.assert_array_equal(o.numpy(), [[1.0, 1.0]])
    np.testing.assert_array_equal(
        sg.one_hot([1, -1, 3], 3).numpy(), [[0, 1, 0], [0, 0, 0], [0, 0, 0]]
    )
    np.testing.assert_array_equal(
        sg.one_hot(
            [0, 2], 3, on_value=5.0, off_value=-1.0, axis=0, dtype="float64"
        ).numpy(),
        [[5.0, -1.0], [-1.0, -1.0], [-1.0, 5.0]],
    )
    assert sg.one_hot([0], 2).dtype == np.float32
    with pytest.raises(InvalidArgumentError, match="integers"):
        sg.one_hot([0.5], 2)
    # a watched input gets no gradient through zeros_like / ones_like
    t = sg.constant([1.0, 2.0])
    with sg.GradientTape() as tape:
        tape.watch(t)
        y = sg.zeros_like(t) + sg.ones_like(t)
    assert tape.gradient(y, t) is None


def test_tensor_scatter_add(rng):
    base = rng.standard_normal((4, 2))
    updates = rng.standard_normal((3, 2))
    idx = np.array([3, 0, 3])
    expected = base.copy()
    np.add.at(expected, idx, updates)
    np.testing.assert_allclose(
        sg.tensor_scatter_add(base, idx, updates).numpy(), expected
    )
    check_gradients(
        lambda b, u: sg.square(sg.tensor_scatter_add(b, idx, u)),
        [base, updates],
        order=2,
    )
    with pytest.raises(
        InvalidArgumentError, match=r"indices\[1\] = 4 is not in \[0, 4\)"
    ):
        sg.tensor_scatter_add(base, [0, 4], updates[:2])
    with pytest.raises(InvalidArgumentError, match="updates has shape"):
        sg.tensor_scatter_add(base, [0], updates)


# -- results sized by an argument are checked before they are allocated --------

HUGE_VIEW = (2**40,)   # a broadcast view of this shape costs nothing


def _big():
    return sg.broadcast_to(np.float32(1), HUGE_VIEW)


@pytest.mark.parametrize("call,fragment", [
    (lambda: sg.one_hot([1, 2], 2**40),
     "one_hot: depth asks for a result of shape (2, 1099511627776) and dtype float32"),
    (lambda: sg.one_hot(np.zeros(2**20, np.int64), 2**20, axis=0),
     "one_hot: depth asks for a result of shape (1048576, 1048576)"),
    (lambda: sg.zeros_like(_big()),
     "zeros_like: input asks for a result of shape (1099511627776,)"),
    (lambda: sg.ones_like(_big(), dtype=np.float64),
     "ones_like: input asks for a result of shape (1099511627776,) and dtype float64"),
    (lambda: sg.cast(_big(), np.float64),
     "cast: x asks for a result of shape (1099511627776,) and dtype float64"),
    (lambda: sg.reshape(sg.transpose(sg.broadcast_to(           # strides (0, 4)
        np.arange(2**20, dtype=np.float32)[:, None], (2**20, 2**20))), (-1,)),
     "reshape: tensor asks for a result of shape (1099511627776,)"),
    (lambda: sg.concat([_big(), _big()], 0),
     "concat: values asks for a result of shape (2199023255552,)"),
    (lambda: sg.stack([_big(), _big()]),
     "stack: values asks for a result of shape (2, 1099511627776)"),
    (lambda: sg.tensor_scatter_add(_big(), [0], [1.0]),
     "tensor_scatter_add: tensor asks for a result of shape (1099511627776,)"),
], ids=["one_hot", "one_hot-axis", "zeros_like", "ones_like", "cast", "reshape",
        "concat", "stack", "tensor_scatter_add"])
def test_results_sized_by_an_argument_are_checked_first(call, fragment):
    with pytest.raises(InvalidArgumentError, match=re.escape(fragment)):
        call()


def test_reshape_of_a_broadcast_view_stays_a_view_when_it_can():
    out = sg.reshape(_big(), (2**20, 2**20))       # no copy: nothing to refuse
    assert out.shape == (2**20, 2**20) and np.asarray(out).strides == (0, 0)
    with pytest.raises(InvalidArgumentError, match="cannot reshape"):
        sg.reshape(_big(), (3, -1))


def test_densify_while_recording_checks_the_dense_shape():
    from sparsegrad.ops.array_ops import densify

    grad = sg.IndexedSlices([[1.0]], [0], dense_shape=(2**40, 1))
    with sg.GradientTape() as tape, pytest.warns(sg.errors.DensifyWarning):
        tape.watch(grad.values)
        with pytest.raises(InvalidArgumentError, match=re.escape(
                "densify: dense_shape asks for a result of shape (1099511627776, 1)")):
            densify(grad, "densify")
    np.testing.assert_array_equal(grad.values.numpy(), [[1.0]])
