"""clip_by_value, clip_by_norm, global_norm, clip_by_global_norm and
clip_by_average_norm: the business rules BR-111-01..06 of the seed, the error
table, IndexedSlices against their densified form, gradients against finite
differences, and thread-count invariance.  (TensorFlow's own values are
replayed in test_clip_golden.py.)"""

import math
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.testing import check_gradients

f32 = np.float32

# Registered op types whose gradients are checked here (finite differences
# below); the others record a gradient function of their own.
CHECKED_OPS = ("ClipByValue",)


def dense_of(s):
    out = np.zeros(s.dense_shape, s.values.dtype)
    np.add.at(out, s.indices.numpy(), s.values.numpy())
    return out


# -- clip_by_value -----------------------------------------------------------------


def test_br_111_01_max_bound_first():
    out = sg.clip_by_value(np.array([1.0, 5.0, 10.0], f32), 6.0, 4.0)
    np.testing.assert_array_equal(out.numpy(), [6.0, 6.0, 6.0])


def test_non_finite_values():
    out = sg.clip_by_value(np.array([np.nan, np.inf, -np.inf, 2.0], f32), -4.0, 4.0)
    np.testing.assert_array_equal(out.numpy(), [np.nan, 4.0, -4.0, 2.0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8,
                                   np.int32, np.int64, np.uint8])
def test_dtypes_and_broadcast_bounds(dtype):
    t = np.array([[1, 2, 3], [4, 5, 6]], dtype)
    lo = np.array([[2, 2, 2], [5, 5, 5]], dtype)
    hi = np.array([[5, 5, 5], [7, 7, 7]], dtype)
    out = sg.clip_by_value(t, sg.constant(lo), sg.constant(hi))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.numpy(), [[2, 2, 3], [5, 5, 6]])
    np.testing.assert_array_equal(sg.clip_by_value(t, 2, 4).numpy(),
                                  [[2, 2, 3], [4, 4, 4]])
    np.testing.assert_array_equal(
        sg.clip_by_value(t, np.array([[2], [1]]), 100).numpy(), np.maximum(
            t, np.array([[2], [1]], dtype)))


def test_large_input_runs_the_kernel_on_every_thread_count(rng):
    x = rng.standard_normal((300, 400)).astype(f32)
    lo = rng.standard_normal(400).astype(f32) - 1
    expected = np.maximum(np.minimum(x, 0.5), lo)
    for threads in (1, 2, 4):
        sg.set_num_threads(threads)
        try:
            out = sg.clip_by_value(x, lo, 0.5).numpy()
        finally:
            sg.set_num_threads(2)
        assert out.tobytes() == expected.tobytes()


def test_br_111_02_bounds_may_not_enlarge_t():
    t = np.arange(6, dtype=f32).reshape(2, 3, 1)
    before = t.copy()
    clip = np.array([1.0, 2.0], f32)
    for lo, hi, arg in [(-clip, clip, "clip_value_min"), (1.0, clip, "clip_value_max")]:
        with pytest.raises(InvalidArgumentError, match=arg) as info:
            sg.clip_by_value(t, lo, hi)
        assert "(2, 3, 2)" in str(info.value)
        assert isinstance(info.value, ValueError)        # TF raises ValueError
    with pytest.raises(InvalidArgumentError, match="Incompatible shapes"):
        sg.clip_by_value(np.zeros((2, 3), f32), np.zeros((1, 1, 2), f32), 1.0)
    with pytest.raises(InvalidArgumentError, match="clip_value_min"):
        sg.clip_by_value(np.float32(1.0), np.zeros(2, f32), 1.0)
    np.testing.assert_array_equal(t, before)


@pytest.mark.parametrize("bound", [3.1, 3.0, np.float32(2.5), np.array([1.5, 2.5]),
                                   sg.constant(np.array(2.0, f32))])
def test_br_111_03_integer_t_with_float_bounds_is_a_type_error(bound):
    t = np.array([1, 2], np.int32)
    with pytest.raises(TypeError, match="clip_value_max"):
        sg.clip_by_value(t, 0, bound)


def test_tensor_bound_of_another_dtype_is_rejected():
    with pytest.raises(InvalidArgumentError, match="clip_value_min has dtype int32"):
        sg.clip_by_value(sg.constant(np.ones(2, f32)), sg.constant(np.int32(0)), 1.0)


def test_bool_and_complex_values_are_rejected():
    with pytest.raises(InvalidArgumentError, match="bool"):
        sg.clip_by_value(np.array([True]), False, True)
    with pytest.raises(InvalidArgumentError, match="complex"):
        sg.clip_by_value(np.array([1j]), 0, 1)


def test_empty_tensor():
    t = np.zeros((7, 0), f32)
    for lo, hi in [(t, t), (1.0, 1.0), (t, 1.0), (1.0, t)]:
        assert sg.clip_by_value(t, lo, hi).shape == (7, 0)


def test_indexed_slices_clip_only_values():
    values = np.array([[[-3, 0, 0], [4, 0, 0]], [[0, 2, 0], [0, 0, -1]]], f32)
    s = sg.IndexedSlices(values, [2, 6], dense_shape=(10, 2, 3))
    out = sg.clip_by_value(s, 1.0, 2.0)
    assert isinstance(out, sg.IndexedSlices)
    assert out.indices is s.indices and out.dense_shape == (10, 2, 3)
    np.testing.assert_array_equal(
        out.values.numpy(), [[[1, 1, 1], [2, 1, 1]], [[1, 2, 1], [1, 1, 1]]])
    np.testing.assert_array_equal(s.values.numpy(), values)     # input unchanged


def test_input_array_is_never_modified_nor_aliased(rng):
    x = rng.standard_normal(50_000).astype(f32)
    before = x.copy()
    out = sg.clip_by_value(x, -0.1, 0.1)
    assert not np.shares_memory(out.numpy(), x)
    np.testing.assert_array_equal(x, before)
    assert x.flags.writeable


def test_clip_by_value_gradient_rule_at_ties_and_nan():
    t = sg.constant(np.array([0, 1, 2, 3, 4], f32))
    lo, hi = sg.constant(np.ones(5, f32)), sg.constant(np.full(5, 3, f32))
    with sg.GradientTape() as tape:
        tape.watch([t, lo, hi])
        y = sg.clip_by_value(t, lo, hi)
    dt, dlo, dhi = tape.gradient(y, [t, lo, hi])
    np.testing.assert_array_equal(dt.numpy(), [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(dlo.numpy(), [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(dhi.numpy(), [0, 0, 0, 0, 1])
    t = sg.constant(np.array([np.nan, 1.0], f32))
    lo, hi = sg.constant(f32(0.0)), sg.constant(f32(0.5))
    with sg.GradientTape() as tape:
        tape.watch([t, lo, hi])
        y = sg.clip_by_value(t, lo, hi)
    dt, dlo, dhi = tape.gradient(y, [t, lo, hi])
    np.testing.assert_array_equal(dt.numpy(), [0, 0])
    assert float(dlo.numpy()) == 1.0 and float(dhi.numpy()) == 1.0
    t = sg.constant(np.array([1.0, 5.0, 10.0], f32))
    lo, hi = sg.constant(f32(6.0)), sg.constant(f32(4.0))
    with sg.GradientTape() as tape:
        tape.watch([t, lo, hi])
        y = sg.clip_by_value(t, lo, hi)
    dt, dlo, dhi = tape.gradient(y, [t, lo, hi])
    np.testing.assert_array_equal(dt.numpy(), [0, 0, 0])
    assert float(dlo.numpy()) == 3.0 and float(dhi.numpy()) == 0.0


def test_clip_by_value_finite_differences(rng):
    x = np.array([[-2.0, 0.3, 1.7], [0.9, -0.4, 2.5]])
    check_gradients(lambda t, lo, hi: sg.clip_by_value(t, lo, hi),
                    [x, np.array([-1.0, 0.0, -0.5]), np.array([[1.0], [2.0]])],
                    order=2)


# -- clip_by_norm ------------------------------------------------------------------


def np_clip_by_norm(x, c, axes=None):
    x = np.asarray(x, np.float64)
    axes = tuple(axes) if isinstance(axes, list) else axes
    n = np.sqrt(np.sum(x * x, axis=axes, keepdims=True))
    return (x * max(c, 0.0)) / np.where(np.maximum(n, c) == 0, 1, np.maximum(n, c))


@pytest.mark.parametrize("axes", [None, 0, 1, -1, [0, 2], (1, 2), [0, 1, 2]])
def test_clip_by_norm_matches_numpy(axes, rng):
    x = rng.standard_normal((4, 3, 5))
    for c in (0.3, 2.0, 100.0):
        np.testing.assert_allclose(sg.clip_by_norm(x, c, axes=axes).numpy(),
                                   np_clip_by_norm(x, c, axes), rtol=1e-14)


def test_br_111_04_negative_clip_norm_acts_as_zero():
    x = np.array([[-3.0, 0.0, 0.0], [4.0, 0.0, 3.0]], f32)
    for c in (-1.0, sg.constant(f32(-2.0))):
        out = sg.clip_by_norm(x, c).numpy()
        np.testing.assert_array_equal(out, np.zeros_like(x))
        assert np.signbit(out[0, 0])                      # -3 * 0 = -0


def test_zero_norm_gives_zeros_not_nan():
    for c in (6.0, 0.0):
        out = sg.clip_by_norm(np.zeros((2, 3), f32), c).numpy()
        np.testing.assert_array_equal(out, np.zeros((2, 3)))
        out = sg.clip_by_norm(np.zeros((2, 3), f32), c, axes=1).numpy()
        np.testing.assert_array_equal(out, np.zeros((2, 3)))


def test_clip_by_norm_non_finite():
    out = sg.clip_by_norm(np.array([np.inf, 1.0], f32), 1.0).numpy()
    assert np.isnan(out[0]) and out[1] == 0.0
    assert np.isnan(sg.clip_by_norm(np.array([np.nan, 1.0]), 1.0).numpy()).all()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_clip_by_norm_keeps_dtype(dtype):
    out = sg.clip_by_norm(np.array([3.0, 4.0], dtype), sg.constant(np.int32(1)))
    assert out.dtype == dtype
    np.testing.assert_allclose(out.numpy(), [0.6, 0.8], rtol=1e-3)


def test_clip_by_norm_errors():
    x = np.arange(6, dtype=f32).reshape(2, 3, 1)
    with pytest.raises(InvalidArgumentError, match="clip_norm must be a scalar"):
        sg.clip_by_norm(x, np.array([1.0, 2.0]))
    with pytest.raises(InvalidArgumentError, match="t has dtype int64"):
        sg.clip_by_norm(np.array([1, 2]), 1.0)
    with pytest.raises(InvalidArgumentError, match="axis 3 is out of range"):
        sg.clip_by_norm(x, 1.0, axes=3)
    with pytest.raises(TypeError, match="clip_norm"):
        sg.clip_by_norm(x, None)
    np.testing.assert_allclose(sg.clip_by_norm(x, [1.0]).numpy(),
                               np_clip_by_norm(x, 1.0), rtol=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    values=hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.just(2),
                                            st.just(3)),
                      elements=st.floats(-10, 10)),
    data=st.data(),
    clip=st.floats(0.0, 20.0),
    axes=st.sampled_from([None, 0, 1, 2, [0, 1], [0, 2], [1, 2], [0, 1, 2]]),
)
def test_indexed_slices_clip_by_norm_equals_dense(values, data, clip, axes):
    # Repeated indices included: the norm is that of the represented tensor.
    n = values.shape[0]
    ids = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, 4)))
    s = sg.IndexedSlices(values, ids, dense_shape=(5, 2, 3))
    out = sg.clip_by_norm(s, clip, axes=axes)
    assert isinstance(out, sg.IndexedSlices) and out.indices is s.indices
    expected = np_clip_by_norm(dense_of(s), clip, axes)
    np.testing.assert_allclose(dense_of(out), expected, rtol=1e-12, atol=1e-12)


def test_clip_by_norm_gradients_golden():
    for t, c, dt, dc in [
        ([3.0, 4.0], 1.0, [0.032, -0.024], 1.4),
        ([3.0, 4.0], 5.0, [0.16, -0.12], 1.4),      # boundary: the norm's branch
        ([0.0, 0.0, 0.0], 1.0, [1.0, 1.0, 1.0], 0.0),
        ([1.0, 0.0], 2.0, [1.0, 1.0], 0.0),
    ]:
        t, c = sg.constant(np.array(t)), sg.constant(c)
        with sg.GradientTape() as tape:
            tape.watch([t, c])
            y = sg.clip_by_norm(t, c)
        gt, gc = tape.gradient(y, [t, c])
        np.testing.assert_allclose(gt.numpy(), dt, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(gc.numpy(), dc, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("axes", [None, 1, [0, 2]])
def test_clip_by_norm_finite_differences(axes, rng):
    x = rng.standard_normal((3, 4, 2))
    check_gradients(lambda t, c: sg.clip_by_norm(t, c, axes=axes), [x, 0.7])
    check_gradients(lambda t: sg.clip_by_norm(t, 50.0, axes=axes), [x])


def test_clip_by_norm_of_slices_finite_differences(rng):
    ids = np.array([3, 1, 3, 0])

    def f(v, c):
        return sg.clip_by_norm(sg.IndexedSlices(v, ids, dense_shape=(5, 2)), c).values

    check_gradients(f, [rng.standard_normal((4, 2)), 0.9])
    check_gradients(lambda v, c: sg.clip_by_norm(
        sg.IndexedSlices(v, ids, dense_shape=(5, 2)), c, axes=1).values,
        [rng.standard_normal((4, 2)), 0.5])


# -- global_norm -------------------------------------------------------------------


def test_br_111_06_none_entries_are_skipped():
    assert sg.global_norm([None, [3.0, 4.0], None]).numpy() == 5.0
    zero = sg.global_norm([None, None])
    assert zero.numpy() == 0.0 and zero.dtype == np.float32
    assert sg.global_norm([]).numpy() == 0.0
    assert sg.linalg.global_norm is sg.global_norm


@pytest.mark.parametrize("bad", [sg.constant([1.0]), np.ones(2), "ab", {1: 2},
                                 (x for x in [np.ones(2)]), 3.0])
def test_t_list_must_be_a_sequence(bad):
    for fn in (sg.global_norm, lambda t: sg.clip_by_global_norm(t, 1.0)):
        with pytest.raises(TypeError, match="`t_list` should be a sequence"):
            fn(bad)


def test_global_norm_dtypes():
    for dtype in (np.float16, np.float32, np.float64):
        norm = sg.global_norm([np.array([3.0, 4.0], dtype)])
        assert norm.dtype == dtype and norm.numpy() == 5.0
    with pytest.raises(InvalidArgumentError, match=r"t_list\[1\] has dtype float64"):
        sg.global_norm([np.ones(2, f32), np.ones(2)])
    with pytest.raises(InvalidArgumentError, match=r"t_list\[0\] has dtype int64"):
        sg.global_norm([np.ones(2, np.int64)])
    with pytest.raises(InvalidArgumentError, match="complex"):
        sg.global_norm([np.ones(2, np.complex64)])
    assert sg.global_norm([np.array([3e20, 4e20], f32)]).numpy() == 5e20
    assert np.isinf(sg.global_norm([np.array([np.inf, 1.0])]).numpy())


def test_global_norm_counts_the_represented_tensor():
    s = sg.IndexedSlices(np.array([[3.0], [4.0]]), [0, 0], dense_shape=(2, 1))
    assert sg.global_norm([s]).numpy() == 7.0            # TensorFlow: 5.0
    unique = sg.IndexedSlices(np.array([[3.0], [4.0]]), [0, 1], dense_shape=(2, 1))
    assert sg.global_norm([unique]).numpy() == 5.0


def test_global_norm_is_thread_invariant_and_follows_touched_rows(rng):
    arrays = [rng.standard_normal((257, 301)).astype(f32) for _ in range(3)]
    ids = rng.integers(0, 10**9, 5000)
    s = sg.IndexedSlices(rng.standard_normal((5000, 16)).astype(f32), ids,
                         dense_shape=(10**9, 16))
    bits = set()
    for threads in (1, 2, 4):
        sg.set_num_threads(threads)
        try:
            bits.add(sg.global_norm(arrays + [s]).numpy().tobytes())
        finally:
            sg.set_num_threads(2)
    assert len(bits) == 1
    tracemalloc.start()
    clipped, _ = sg.clip_by_global_norm([s], 0.5)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 2 * 5000 * 16 * 4 + (1 << 20)          # the output, not the table
    assert clipped[0].dense_shape == (10**9, 16)


def test_global_norm_gradient():
    t = sg.constant(np.array([3.0, 4.0]))
    with sg.GradientTape() as tape:
        tape.watch(t)
        n = sg.global_norm([t, None])
    np.testing.assert_allclose(tape.gradient(n, t).numpy(), [0.6, 0.8], rtol=1e-15)
    z = sg.constant(np.zeros(2))
    with sg.GradientTape() as tape:
        tape.watch(z)
        n = sg.global_norm([z])
    assert np.isnan(tape.gradient(n, z).numpy()).all()       # 0 / 0, as in TF


def test_global_norm_finite_differences(rng):
    ids = np.array([2, 0, 2])
    check_gradients(
        lambda a, v: sg.global_norm([a, sg.IndexedSlices(v, ids, dense_shape=(3, 2))]),
        [rng.standard_normal((2, 3)), rng.standard_normal((3, 2))])


# -- clip_by_global_norm -----------------------------------------------------------


X0 = np.array([[-2.0, 0.0, 0.0], [4.0, 0.0, 0.0]], f32)
X1 = np.array([1.0, -2.0], f32)


def test_clip_by_global_norm_keeps_none_and_slices():
    s = sg.IndexedSlices(X1, [3, 4])
    out, norm = sg.clip_by_global_norm((X0, None, s, None), 4.0)
    assert isinstance(out, list) and out[1] is None and out[3] is None
    assert norm.numpy() == 5.0 and norm.dtype == np.float32
    np.testing.assert_allclose(out[0].numpy(), X0 * 0.8, rtol=1e-7)
    assert isinstance(out[2], sg.IndexedSlices) and out[2].dense_shape is None
    np.testing.assert_allclose(out[2].values.numpy(), [0.8, -1.6], rtol=1e-7)
    one = sg.IndexedSlices(np.array([1.0], f32), [0], dense_shape=(1,))
    assert sg.clip_by_global_norm([one], 1.0)[0][0].dense_shape == (1,)


@pytest.mark.parametrize("clip, scale", [(4.0, 0.8), (6.0, 1.0), (0.0, 0.0),
                                         (-1.0, 1.0)])
def test_scale_formula_edges(clip, scale):
    out, norm = sg.clip_by_global_norm([X0, X1], clip)
    assert norm.numpy() == 5.0
    np.testing.assert_array_equal(out[1].numpy(), X1 * f32(scale))


def test_br_111_05_infinite_or_nan_norm_makes_everything_nan():
    x0 = X0.copy()
    x0[0, 2] = np.inf
    out, norm = sg.clip_by_global_norm([x0, X1], 6.0)
    assert np.isinf(norm.numpy())
    assert all(np.isnan(o.numpy()).all() for o in out)
    out, _ = sg.clip_by_global_norm([X0, X1], np.inf)
    assert all(np.isnan(o.numpy()).all() for o in out)
    out, norm = sg.clip_by_global_norm([X0], 1.0, use_norm=sg.constant(f32(np.nan)))
    assert np.isnan(out[0].numpy()).all() and np.isnan(norm.numpy())


def test_use_norm():
    out, norm = sg.clip_by_global_norm([X0, X1], 4.0, use_norm=sg.constant(f32(0.0)))
    np.testing.assert_array_equal(out[1].numpy(), X1)
    given = sg.constant(10.0)                                 # float64
    out, norm = sg.clip_by_global_norm([np.array([3.0, 4.0], f32)], 1.0,
                                       use_norm=given)
    assert norm is given
    assert out[0].dtype == np.float32
    np.testing.assert_allclose(out[0].numpy(), [0.3, 0.4], rtol=1e-7)


def test_clip_by_global_norm_errors():
    before = X0.copy()
    with pytest.raises(InvalidArgumentError, match="clip_norm must be a scalar") as e:
        sg.clip_by_global_norm([X0], np.array([1.0, 2.0]))
    assert isinstance(e.value, ValueError)
    with pytest.raises(TypeError, match="clip_norm has dtype float64"):
        sg.clip_by_global_norm([X0], sg.constant(4.0))
    with pytest.raises(InvalidArgumentError, match="use_norm must be a scalar"):
        sg.clip_by_global_norm([X0], 1.0, use_norm=np.ones(2))
    with pytest.raises(InvalidArgumentError, match=r"t_list\[1\]"):
        sg.clip_by_global_norm([X0, np.ones(2)], 1.0)
    np.testing.assert_array_equal(X0, before)


def test_clip_by_global_norm_gradient_golden():
    a = sg.constant(np.array([3.0, 4.0], f32))
    b = sg.constant(np.array([0.0, 12.0], f32))
    with sg.GradientTape() as tape:
        tape.watch([a, b])
        (ca, cb), _ = sg.clip_by_global_norm([a, b], 1.0)
        loss = sg.reduce_sum(ca) + sg.reduce_sum(cb)
    da, db = tape.gradient(loss, [a, b])
    np.testing.assert_allclose(da.numpy(), [0.05097861, 0.04233046], rtol=1e-6)
    np.testing.assert_allclose(db.numpy(), [0.07692308, -0.02685479], rtol=1e-6)


@pytest.mark.parametrize("clip", [0.5, 30.0])
def test_clip_by_global_norm_finite_differences(clip, rng):
    ids = np.array([1, 1, 0])

    def f(a, v, c):
        s = sg.IndexedSlices(v, ids, dense_shape=(2, 2))
        out, norm = sg.clip_by_global_norm([a, None, s], c)
        return [out[0], out[2].values, norm]

    check_gradients(f, [rng.standard_normal((2, 3)), rng.standard_normal((3, 2)), clip])

    def g(a, n):
        out, _ = sg.clip_by_global_norm([a], clip, use_norm=n)
        return out[0]

    check_gradients(g, [rng.standard_normal(3), 2.0])


def test_variables_are_watched(rng):
    w = sg.Variable(rng.standard_normal(4))
    with sg.GradientTape() as tape:
        (cw,), _ = sg.clip_by_global_norm([w], 0.1)
        loss = sg.reduce_sum(cw)
    assert tape.gradient(loss, w) is not None


# -- clip_by_average_norm ----------------------------------------------------------


def test_clip_by_average_norm_is_deprecated_and_equals_clip_by_norm():
    x = np.array([[-3.0, 0.0, 0.0], [4.0, 0.0, 0.0]])
    with pytest.warns(DeprecationWarning, match="clip_by_norm"):
        out = sg.clip_by_average_norm(x, 0.8)
    np.testing.assert_array_equal(out.numpy(), sg.clip_by_norm(x, 0.8 * 6).numpy())
    np.testing.assert_allclose(out.numpy(), [[-2.88, 0, 0], [3.84, 0, 0]], rtol=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        np.testing.assert_allclose(sg.clip_by_average_norm(x, 0.9).numpy(), x,
                                   rtol=1e-15)
        s = sg.IndexedSlices(np.array([[3.0], [4.0]]), [0, 1], dense_shape=(2, 1))
        dense = sg.clip_by_average_norm(s, 0.5)
        assert isinstance(dense, sg.Tensor)
        np.testing.assert_allclose(dense.numpy(), [[0.6], [0.8]], rtol=1e-15)
        zeros = sg.clip_by_average_norm(np.zeros((2, 3)), 0.9).numpy()
        np.testing.assert_array_equal(zeros, np.zeros((2, 3)))


def test_math_of_scale_is_in_the_norm_dtype():
    # float32: 4 * min(1/5, 1/4) rounded in float32, then the values times it.
    out, _ = sg.clip_by_global_norm([X0, X1], 4.0)
    scale = f32(4.0) * min(f32(1.0) / f32(5.0), f32(1.0) / f32(4.0))
    assert out[0].numpy().tobytes() == (X0 * scale).tobytes()
    assert math.isclose(float(scale), 0.8, rel_tol=1e-7)
