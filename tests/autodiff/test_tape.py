"""GradientTape: the golden cases of reference/autodiff.md (sections 2, 4, 7, 8
and 9), the backward pass, aggregation and every error the tape raises."""

import gc
import warnings
import weakref

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.autodiff.tape import TapeStateError, stop_recording
from sparsegrad.errors import (
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
)
from sparsegrad.testing import assert_indexed_slices_equal

# Op types whose gradients this module checks (read by test_registry.py).
CHECKED_OPS = ("ReadVariableOp",)


def _f(t):
    return None if t is None else float(np.asarray(t))


def _watched(*values):
    return [sg.constant(v) for v in values]


# -- section 9: golden list -----------------------------------------------------------


def test_square():
    (x,) = _watched(3.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert _f(tape.gradient(y, x)) == 6.0


def test_persistent_two_gradients_any_order_repeatable():
    (x,) = _watched(3.0)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert _f(tape.gradient(z, x)) == 108.0
    assert _f(tape.gradient(y, x)) == 6.0
    assert _f(tape.gradient(z, x)) == 108.0


def test_intermediate_as_source():
    (x,) = _watched(3.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert [_f(g) for g in tape.gradient(z, [x, y])] == [108.0, 18.0]


def test_nested_sources_structure():
    x1, x2, x3 = _watched(3.0, 3.1, 3.2)
    with sg.GradientTape() as tape:
        tape.watch([x1, x2, x3])
        y = x1 + 2 * x2 + 3 * x3
    g = tape.gradient(y, [x1, {"x2": x2, "x3": x3}])
    assert isinstance(g, list) and isinstance(g[1], dict)
    assert _f(g[0]) == 1.0 and _f(g[1]["x2"]) == 2.0 and _f(g[1]["x3"]) == 3.0
    g = tape_gradient_tuple()
    assert isinstance(g, tuple) and [_f(v) for v in g] == [2.0, 1.0]


def tape_gradient_tuple():
    a, b = _watched(1.0, 2.0)
    with sg.GradientTape() as tape:
        tape.watch([a, b])
        y = a * b
    return tape.gradient(y, (a, b))


def test_target_list_including_source():
    (x,) = _watched(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert _f(tape.gradient([x, y], x)) == 5.0


def test_target_without_op_seeded_twice():
    (x,) = _watched(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x
    assert _f(tape.gradient([y, y], x)) == 2.0


def test_targets_that_are_sources():
    x, y = _watched(3.0, 5.0)
    with sg.GradientTape() as tape:
        tape.watch([x, y])
        z = y * y
    assert [_f(g) for g in tape.gradient([x, y, z], [x, y])] == [1.0, 11.0]


def test_repeated_sources():
    x, y = _watched(3.0, 5.0)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        z = x * x + x * y
    assert [_f(g) for g in tape.gradient(z, [x, x])] == [11.0, 11.0]
    assert [_f(g) for g in tape.gradient(z, [y, x])] == [3.0, 11.0]


def test_output_gradients():
    x, y = _watched(1.0, 2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        loss = x * y
    assert [
        _f(g) for g in tape.gradient([loss, x], [x], output_gradients=[1.0, 2.0])
    ] == [4.0]


def test_output_gradients_none_entry_means_ones_and_length_checked():
    x, y = _watched(1.0, 2.0)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        loss = x * y
    assert _f(tape.gradient([loss, x], x, output_gradients=[None, 2.0])) == 4.0
    with pytest.raises(ValueError, match="1 entries but target has 2"):
        tape.gradient([loss, x], x, output_gradients=[1.0])


@pytest.mark.parametrize("seed, shown", [
    (np.ones(3), r"shape \(3,\)"),
    (np.ones((2, 1)), r"shape \(2, 1\)"),
    (2.0, r"shape \(\)"),
    (sg.constant(np.ones(3)), r"shape \(3,\)"),
    (sg.constant(np.ones(2, np.float32)), r"shape \(2,\) and dtype float32"),
    (sg.IndexedSlices(np.ones((1, 1)), [0], dense_shape=(2, 1)), r"shape \(2, 1\)"),
    (sg.IndexedSlices(np.ones((1, 3)), [0]), r"shape \(2, 3\)"),
])
def test_output_gradient_of_the_wrong_shape_or_dtype_names_output_gradients(
        seed, shown):
    # It used to surface as a shape error of the first gradient function.
    x = sg.constant([1.0, 2.0])
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(InvalidArgumentError,
                       match=rf"output_gradients\[0\] has {shown}.*target 0 has "
                             r"shape \(2,\) and dtype float64"):
        tape.gradient(y, x, output_gradients=[seed])
    good = sg.IndexedSlices(np.full((1,), 3.0), [1], dense_shape=(2,))
    np.testing.assert_array_equal(
        tape.gradient(y, x, output_gradients=[good]).numpy(), [0.0, 12.0])


def test_unconnected_none_and_zero():
    x = sg.constant([[1.0, 2.0], [3.0, 4.0]])
    v = sg.Variable([1.0, 2.0, 3.0])
    c = sg.constant(1.0)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = c * 2.0
    assert tape.gradient(y, [x, v]) == [None, None]
    for mode in ("zero", sg.UnconnectedGradients.ZERO):
        gx, gv = tape.gradient(y, [x, v], unconnected_gradients=mode)
        np.testing.assert_array_equal(gx.numpy(), np.zeros((2, 2)))
        np.testing.assert_array_equal(gv.numpy(), np.zeros(3))
    assert tape.gradient(y, x, unconnected_gradients="none") is None


def test_unconnected_gradients_bad_value():
    (x,) = _watched(1.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(
        ValueError, match="Unknown value for unconnected_gradients: 'nonsense'"
    ):
        tape.gradient(y, x, unconnected_gradients="nonsense")


def test_non_persistent_second_call_raises_runtime_error():
    (x,) = _watched(3.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(
        RuntimeError, match="non-persistent GradientTape can only be used"
    ):
        tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.jacobian(y, x)


def test_watch_rejects_arrays_and_numbers():
    with sg.GradientTape() as tape:
        with pytest.raises(ValueError, match="ndarray"):
            tape.watch(np.array(1.0))
        with pytest.raises(ValueError, match="float"):
            tape.watch(1.0)


def test_python_max_of_variables():
    vs = [sg.Variable(2.0), sg.Variable(3.0), sg.Variable(5.0)]
    with sg.GradientTape() as tape:
        y = max(vs, key=lambda v: float(v.numpy())) * 1.0
    assert [_f(g) for g in tape.gradient(y, vs)] == [None, None, 1.0]


def test_watch_accessed_variables_false():
    x1 = sg.Variable(2.0)
    x2 = sg.Variable(2.0)
    with sg.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x2)
        y = x1 * x1
        z = x2 * x2 * x2
    assert tape.watched_variables() == (x2,)
    assert [_f(g) for g in tape.gradient([y, z], [x1, x2])] == [None, 12.0]


def test_int_source_gets_none_and_watch_warns():
    x = sg.constant(3, dtype="int32")
    with sg.GradientTape() as tape:
        with pytest.warns(UserWarning, match="must be floating.*int32"):
            tape.watch(x)
        y = x + x
    assert tape.gradient(y, x) is None


def test_stop_recording_variable():
    v = sg.Variable(1.0)
    with sg.GradientTape() as tape, tape.stop_recording():
        y = v * v
    assert tape.gradient(y, v) is None


def test_stop_recording_intermediate():
    (x,) = _watched(1.0)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        x2 = x * 2
        with tape.stop_recording():
            y = x2 * x2
        z = x2 * x2
    assert tape.gradient(y, x2) is None
    assert _f(tape.gradient(z, x2)) == 4.0


def test_no_op_consistency():
    # the no-op results are made before the tape: each is its own leaf
    x = sg.constant(10.0)
    x1 = sg.identity(x)
    x2 = x + 0
    x3 = x - 0
    x4 = x * 1
    with sg.GradientTape() as tape:
        tape.watch([x, x1, x2, x3, x4])
        loss = 2 * x + 3 * x1 + 3 * x2 + 3 * x3 + 3 * x4
    assert [_f(g) for g in tape.gradient(loss, [x, x1, x2, x3, x4])] == [
        2.0,
        3.0,
        3.0,
        3.0,
        3.0,
    ]


# -- section 2: API --------------------------------------------------------------------


def test_reenter_continues_recording():
    (x,) = _watched(1.0)
    tape = sg.GradientTape()
    with tape:
        tape.watch(x)
        y = 2 * x
    with tape:
        z = 2 * y
    assert _f(tape.gradient(z, [x])[0]) == 4.0


def test_entering_a_recording_tape_raises_runtime_error():
    tape = sg.GradientTape()
    with tape:
        with pytest.raises(RuntimeError, match="Tape is still recording"):
            tape.__enter__()
        with pytest.raises(ValueError, match="re-enter"), tape:  # also TF's class
            pass
    assert issubclass(TapeStateError, RuntimeError)


def test_watch_before_enter_is_an_error():
    with pytest.raises(RuntimeError, match="entered"):
        sg.GradientTape().watch(sg.constant(1.0))


def test_watch_ignored_when_no_tape_is_active():
    x = sg.constant(3.0)
    g = sg.GradientTape()
    with g:
        pass
    g.watch(x)  # between blocks, no tape active: ignored
    with g:
        y = x * x
    assert g.gradient(y, x) is None

    g = sg.GradientTape()
    with sg.GradientTape():
        with g:
            pass
        g.watch(x)  # another tape is active: takes effect
        with g:
            y = x * x
    assert _f(g.gradient(y, x)) == 6.0


def test_watch_inside_own_stop_recording():
    x = sg.constant(3.0)
    g = sg.GradientTape()
    with g:
        with g.stop_recording():
            g.watch(x)
        y = x * x
    assert g.gradient(y, x) is None
    with sg.GradientTape():
        g = sg.GradientTape()
        with g:
            with g.stop_recording():
                g.watch(x)
            y = x * x
        assert _f(g.gradient(y, x)) == 6.0


def test_stop_recording_errors_and_other_tapes_keep_recording():
    with (
        pytest.raises(RuntimeError, match="not recording"),
        sg.GradientTape().stop_recording(),
    ):
        pass
    g = sg.GradientTape()
    with g:
        pass
    with pytest.raises(ValueError, match="Tape is not recording"), g.stop_recording():
        pass
    x = sg.constant(2.0)
    with sg.GradientTape() as outer:
        outer.watch(x)
        with sg.GradientTape() as inner:
            inner.watch(x)
            with inner.stop_recording():
                y = x * x
    assert inner.gradient(y, x) is None
    assert _f(outer.gradient(y, x)) == 4.0


def test_stop_recording_all_tapes():
    x = sg.constant(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        with stop_recording():
            y = x * x
        z = x * x
    assert tape.gradient([y, z], x) is not None
    with sg.GradientTape() as tape:
        tape.watch(x)
        with stop_recording():
            y = x * x
    assert tape.gradient(y, x) is None


def test_reset():
    v = sg.Variable(1.0)
    with sg.GradientTape() as tape:
        loss = v * v
        tape.reset()
        assert tape.watched_variables() == ()
        loss += v * v
    assert _f(tape.gradient(loss, v)) == 2.0
    with pytest.raises(ValueError, match="Tape is not recording"):
        tape.reset()


def test_watched_variables_in_creation_order_and_cached():
    b = sg.Variable(1.0, name="b")
    a = sg.Variable(2.0, name="a")
    frozen = sg.Variable(3.0, trainable=False)
    with sg.GradientTape() as tape:
        y = a * b * frozen
    assert tape.watched_variables() == (b, a)
    tape.gradient(y, [a, b])
    assert tape.watched_variables() == (b, a)


def test_non_trainable_variable_watched_explicitly():
    v = sg.Variable(3.0, trainable=False)
    with sg.GradientTape() as tape:
        y = v * v
    assert tape.gradient(y, v) is None
    with sg.GradientTape() as tape:
        tape.watch(v)
        y = v * v
    assert _f(tape.gradient(y, v)) == 6.0


def test_gradient_target_none_is_type_error():
    with sg.GradientTape() as tape:
        pass
    with pytest.raises(TypeError, match="received None"):
        tape.gradient(None, sg.constant(1.0))


def test_non_persistent_gradient_inside_context_stops_recording():
    (x,) = _watched(3.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        assert _f(tape.gradient(y, x)) == 6.0
        z = x * x  # not recorded, and the tape is consumed
    with pytest.raises(RuntimeError):
        tape.gradient(z, x)


def test_persistent_gradient_inside_context_warns_once_and_records():
    (x,) = _watched(3.0)
    import sparsegrad.autodiff.tape as tape_module

    tape_module._warned["persistent"] = False
    with sg.GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x * x
        with pytest.warns(UserWarning, match="significantly less efficient"):
            dy = g.gradient(y, x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            d2 = g.gradient(dy, x)
    d3 = g.gradient(d2, x)
    assert (_f(dy), _f(d2), _f(d3)) == (27.0, 18.0, 6.0)


def test_non_scalar_target_is_summed_and_multiple_targets_add():
    a = sg.constant([1.0, 2.0])
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(a)
        y = sg.stack([a * a, a])
        y1 = a * 3.0
        y2 = a * a
    np.testing.assert_array_equal(tape.gradient(y, a).numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(tape.gradient([y1, {"k": y2}], a).numpy(), [5.0, 7.0])


def test_target_is_its_own_source_even_unwatched_and_int():
    x = sg.constant(2.0)
    i = sg.constant(4, dtype="int32")
    with sg.GradientTape() as tape:
        pass
    gx, gi = tape.gradient([x, i], [x, i])
    assert _f(gx) == 1.0
    assert gi.dtype == np.int32 and int(gi) == 1


def test_constant_target_gives_none():
    (x,) = _watched(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.constant(3.0) * 2.0
    assert tape.gradient(y, x) is None


def test_gradient_dtype_follows_source():
    for dtype in ("float16", "float32", "float64"):
        x = sg.constant(2.0, dtype=dtype)
        with sg.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        g = tape.gradient(y, x)
        assert g.dtype == np.dtype(dtype) and float(g) == 4.0


def test_unwatched_constant_operand_gets_none_or_zero():
    x = sg.constant(2.0)
    c = sg.constant(5.0)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * c
    assert tape.gradient(y, [x, c])[1] is None
    assert _f(tape.gradient(y, [x, c], unconnected_gradients="zero")[1]) == 0.0


def test_source_type_errors():
    with sg.GradientTape() as tape:
        x = sg.constant(1.0)
        tape.watch(x)
        y = x * 2
    with pytest.raises(TypeError, match="sources"):
        tape.gradient(y, [np.ones(1)])


# -- jacobian / batch_jacobian ---------------------------------------------------------


def test_jacobian_goldens():
    x = sg.constant([1.0, 2.0])
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    np.testing.assert_array_equal(tape.jacobian(y, x).numpy(), [[2.0, 0.0], [0.0, 4.0]])

    x = sg.constant([1.0, 2.0])
    y = sg.constant([3.0, 4.0])
    with sg.GradientTape() as tape:
        tape.watch([x, y])
        z = x * x * y
    jx, jy = tape.jacobian(z, [x, y])
    np.testing.assert_array_equal(jx.numpy(), np.diag([6.0, 16.0]))
    np.testing.assert_array_equal(jy.numpy(), np.diag([1.0, 4.0]))

    x = sg.constant([[1.0, 2.0], [3.0, 4.0]])
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.matmul(x, x)
    j = tape.jacobian(y, x).numpy()
    assert j.shape == (2, 2, 2, 2)
    np.testing.assert_array_equal(j[0, 0], [[2, 3], [2, 0]])
    np.testing.assert_array_equal(j[0, 1], [[2, 5], [0, 2]])
    np.testing.assert_array_equal(j[1, 0], [[3, 0], [5, 3]])
    np.testing.assert_array_equal(j[1, 1], [[0, 3], [2, 8]])


def test_jacobian_of_gather_is_dense():
    v = sg.Variable(np.arange(6.0).reshape(3, 2))
    with sg.GradientTape() as tape:
        y = sg.gather(v, [2, 0])
    j = tape.jacobian(y, v)
    assert isinstance(j, sg.Tensor) and j.shape == (2, 2, 3, 2)
    expected = np.zeros((2, 2, 3, 2))
    for r, row in enumerate([2, 0]):
        for c in range(2):
            expected[r, c, row, c] = 1.0
    np.testing.assert_array_equal(j.numpy(), expected)


def test_jacobian_unconnected_and_scalar_target():
    x = sg.constant([1.0, 2.0])
    u = sg.constant([1.0, 2.0, 3.0])
    with sg.GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        y = sg.reduce_sum(x * x)
    jx, ju = tape.jacobian(y, [x, u])
    np.testing.assert_array_equal(jx.numpy(), [2.0, 4.0])
    assert ju is None
    ju = tape.jacobian(y, u, unconnected_gradients="zero")
    np.testing.assert_array_equal(ju.numpy(), np.zeros(3))
    with pytest.raises(RuntimeError, match="persistent=True to compute the jacobian"):
        sg.GradientTape().jacobian(y, x, experimental_use_pfor=False)


def test_hessian_through_nested_jacobian():
    x = sg.constant([1.0, 2.0])
    with sg.GradientTape() as outer:
        outer.watch(x)
        with sg.GradientTape() as inner:
            inner.watch(x)
            y = sg.reduce_sum(x * x * x)
        dy = inner.gradient(y, x)
    np.testing.assert_array_equal(
        outer.jacobian(dy, x).numpy(), [[6.0, 0.0], [0.0, 12.0]]
    )


def test_batch_jacobian_goldens_and_errors():
    x = sg.constant([[1.0, 2.0], [3.0, 4.0]])
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = sg.matmul(x, x)
        u = sg.constant([[1.0, 1.0], [1.0, 1.0]]) * 2.0
    np.testing.assert_array_equal(
        tape.batch_jacobian(y, x).numpy(), [[[2, 0], [0, 4]], [[6, 0], [0, 8]]]
    )
    np.testing.assert_array_equal(
        tape.batch_jacobian(z, x).numpy(), [[[5, 3], [2, 8]], [[7, 3], [2, 10]]]
    )
    unconnected = tape.batch_jacobian(u, x)
    assert unconnected.shape == (2, 2, 2) and not unconnected.numpy().any()
    with pytest.raises(ValueError, match=r"Shape \(2,\) must have rank at least 2"):
        tape.batch_jacobian(sg.constant([1.0, 2.0]), x)
    with pytest.raises(ValueError, match="Need first dimension of target shape"):
        tape.batch_jacobian(sg.constant(np.ones((3, 2))), x)


def test_batch_jacobian_rank3():
    x = sg.constant(np.arange(1.0, 7.0).reshape(2, 3))
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.reshape(sg.stack([x, x * x], axis=1), (2, 2, 3))
    j = tape.batch_jacobian(y, x).numpy()
    assert j.shape == (2, 2, 3, 3)
    xv = np.arange(1.0, 7.0).reshape(2, 3)
    for b in range(2):
        np.testing.assert_array_equal(j[b, 0], np.eye(3))
        np.testing.assert_array_equal(j[b, 1], np.diag(2 * xv[b]))


# -- section 4: aggregation, IndexedSlices ---------------------------------------------


def _v43():
    return sg.Variable(np.arange(12.0).reshape(4, 3))


def test_sparse_plus_sparse_concatenates():
    v = _v43()
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(sg.gather(v, [1, 3])) + 2 * sg.reduce_sum(
            sg.gather(v, [3, 0])
        )
    g = tape.gradient(y, v)
    assert isinstance(g, sg.IndexedSlices)
    assert len(g) == 4 and g.dense_shape == (4, 3)
    assert g.indices.dtype == np.int32 or g.indices.dtype == np.int64
    assert_indexed_slices_equal(g, [[2] * 3, [1] * 3, [0] * 3, [3] * 3])


def test_sparse_plus_sparse_mixed_index_dtypes_gives_int64():
    v = _v43()
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(sg.gather(v, np.array([1, 3], np.int32))) + sg.reduce_sum(
            sg.gather(v, np.array([3, 0], np.int64))
        )
    g = tape.gradient(y, v)
    assert isinstance(g, sg.IndexedSlices) and g.indices.dtype == np.int64
    assert_indexed_slices_equal(g, [[1] * 3, [1] * 3, [0] * 3, [2] * 3])


def test_sparse_plus_dense_scatter_adds_into_dense():
    v = _v43()
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(sg.gather(v, [1, 3])) + sg.reduce_sum(v * 1.0)
    g = tape.gradient(y, v)
    assert isinstance(g, sg.Tensor)
    np.testing.assert_array_equal(g.numpy(), [[1] * 3, [2] * 3, [1] * 3, [2] * 3])


def test_aggregation_does_not_mutate_a_tensor_someone_holds():
    v = _v43()
    seed = sg.constant(np.ones((4, 3)))
    with sg.GradientTape() as tape:
        a = sg.identity(v)
        y = [a, sg.gather(v, [0])]
    g = tape.gradient(y, v, output_gradients=[seed, np.ones((1, 3))])
    np.testing.assert_array_equal(seed.numpy(), np.ones((4, 3)))
    np.testing.assert_array_equal(g.numpy(), [[2] * 3, [1] * 3, [1] * 3, [1] * 3])


def test_repeated_gather_is_not_merged():
    v = _v43()
    with sg.GradientTape() as tape:
        y = sg.gather(v, [0]) + sg.gather(v, [0])
    g = tape.gradient(y, v)
    assert isinstance(g, sg.IndexedSlices)
    assert sorted(g.indices.numpy().tolist()) == [0, 0]


def test_dense_math_on_sparse_gradient_densifies():
    w = sg.Variable(np.arange(6.0).reshape(3, 2))
    with sg.GradientTape() as tape:
        y = sg.gather(w * 3.0, [1])
    g = tape.gradient(y, w)
    assert isinstance(g, sg.Tensor)
    np.testing.assert_array_equal(g.numpy(), [[0, 0], [3, 3], [0, 0]])


def test_nested_gathers():
    w = sg.Variable(np.arange(6.0).reshape(3, 2))
    with sg.GradientTape() as tape:
        y = sg.gather(sg.gather(w, [2, 1]), [1, 1])
    g = tape.gradient(y, w)
    assert isinstance(g, sg.IndexedSlices)
    assert_indexed_slices_equal(g, [[0, 0], [2, 2], [0, 0]])


def test_sparse_aggregation_under_an_outer_tape_is_differentiable():
    w = sg.Variable(np.arange(6.0).reshape(3, 2))
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = sg.reduce_sum(sg.gather(w, [0, 2]) * sg.gather(w, [2, 2]))
            y = y + sg.reduce_sum(w * w)
        g = inner.gradient(y, w)
        gg = sg.reduce_sum(g * g)
    # analytic: y = sum(w0*w2 + w2*w2) + sum(w*w)
    wv = np.arange(6.0).reshape(3, 2)
    dy = 2 * wv
    dy[0] += wv[2]
    dy[2] += wv[0] + 2 * wv[2]
    np.testing.assert_allclose(g.numpy(), dy)
    h = outer.gradient(gg, w)
    # d/dw sum(dy^2) = 2 * J^T dy with J = d dy / d w
    d = dy
    expected = 2 * 2 * d  # from the 2*w term
    expected[0] += 2 * d[2]
    expected[2] += 2 * (d[0] + 2 * d[2])
    np.testing.assert_allclose(h.numpy(), expected)


# -- section 7: no gradient ------------------------------------------------------------


def test_op_without_registered_gradient_raises_lookup_error():
    from sparsegrad.autodiff.tape import record_operation

    x = sg.constant(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.Tensor(np.asarray(4.0))
        record_operation("UnregisteredTestOp", (x,), (y,))
    with pytest.raises(
        LookupError, match="gradient registry has no entry for: UnregisteredTestOp"
    ):
        tape.gradient(y, x)


def test_no_gradient_op_gives_none():
    from sparsegrad.autodiff.tape import record_operation

    sg.no_gradient("TestNoGradientOp")
    x = sg.constant(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.Tensor(np.asarray(4.0))
        record_operation("TestNoGradientOp", (x,), (y,))
        z = y * x
    assert _f(tape.gradient(z, x)) == 4.0


def test_wrong_number_of_gradients_is_internal_error():
    from sparsegrad.autodiff.tape import record_operation

    @sg.register_gradient("TestTooFewGradsOp")
    def _grad(op, g):
        return []

    x = sg.constant(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.Tensor(np.asarray(4.0))
        record_operation("TestTooFewGradsOp", (x, x), (y,))
    with pytest.raises(
        InternalError, match=r"too few gradients\. Expected 2 but received 0"
    ):
        tape.gradient(y, x)


# -- section 8: higher order -----------------------------------------------------------


def test_second_derivative_nested_tapes():
    x = sg.constant(5.0)
    with sg.GradientTape() as g:
        g.watch(x)
        with sg.GradientTape() as gg:
            gg.watch(x)
            y = x * x
        dy = gg.gradient(y, x)
    assert _f(dy) == 10.0
    assert _f(g.gradient(dy, x)) == 2.0


def test_second_derivative_variable_cube():
    x = sg.Variable(1.0)
    with sg.GradientTape() as t1:
        with sg.GradientTape() as t2:
            y = x * x * x
        dy = t2.gradient(y, x)
    assert _f(dy) == 3.0
    assert _f(t1.gradient(dy, x)) == 6.0


def test_watching_is_tape_local():
    x1 = sg.Variable(2.0, trainable=False)
    x2 = sg.Variable(2.0, trainable=False)
    with sg.GradientTape() as tape1:
        with sg.GradientTape() as tape2:
            tape1.watch(x1)
            tape2.watch([x1, x2])
            y = x1**3
            z = x2**2
        dy, dz = tape2.gradient([y, z], [x1, x2])
    assert (_f(dy), _f(dz)) == (12.0, 4.0)
    g1, g2 = tape1.gradient([dy, dz], [x1, x2])
    assert _f(g1) == 12.0 and g2 is None


def test_third_order_through_three_tapes():
    x = sg.constant(0.7)
    with sg.GradientTape() as t1:
        t1.watch(x)
        with sg.GradientTape() as t2:
            t2.watch(x)
            with sg.GradientTape() as t3:
                t3.watch(x)
                y = sg.tanh(x)
            d1 = t3.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t1.gradient(d2, x)
    t = np.tanh(0.7)
    np.testing.assert_allclose(_f(d1), 1 - t**2)
    np.testing.assert_allclose(_f(d2), -2 * t * (1 - t**2))
    np.testing.assert_allclose(_f(d3), -2 * (1 - t**2) ** 2 + 4 * t**2 * (1 - t**2))


# -- invariant 5: mutation detection ---------------------------------------------------


def test_variable_changed_in_place_before_gradient_raises():
    v = sg.Variable([1.0, 2.0], name="weights")
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(v * v)
    v.assign_add([1.0, 1.0])
    with pytest.raises(
        FailedPreconditionError, match="'weights' was modified in place"
    ):
        tape.gradient(y, v)


def test_variable_changed_after_gradient_is_fine_and_reread_is_fine():
    v = sg.Variable([1.0, 2.0])
    with sg.GradientTape(persistent=True) as tape:
        y = sg.reduce_sum(v * v)
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2.0, 4.0])
    v.scatter_add(sg.IndexedSlices([1.0], [0]))
    with pytest.raises(RuntimeError, match="modified in place"):
        tape.gradient(y, v)
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(v * v)
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [4.0, 4.0])


# -- the backward pass: pruning and freeing --------------------------------------------


def test_backward_skips_ops_that_do_not_lead_to_sources():
    calls = []
    from sparsegrad.autodiff.tape import record_operation

    @sg.register_gradient("TestCountingOp")
    def _grad(op, g):
        calls.append(op)
        return g

    def counting(t):
        out = sg.Tensor(np.asarray(t))
        record_operation("TestCountingOp", (t,), (out,))
        return out

    x = sg.constant(1.0)
    w = sg.constant(2.0)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        branch = counting(w) * 3.0  # leads only to w
        y = x * 2.0 + branch
    assert _f(tape.gradient(y, x)) == 2.0
    assert calls == []
    assert _f(tape.gradient(y, w)) == 3.0
    assert len(calls) == 1


def test_non_persistent_tape_frees_what_it_recorded():
    x = sg.constant(np.ones(3))
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.tanh(x * 2.0)
        intermediate = weakref.ref(y)
        z = sg.reduce_sum(y)
    del y
    gc.collect()
    assert intermediate() is not None  # the tape keeps what backward needs
    tape.gradient(z, x)
    gc.collect()
    assert intermediate() is None


def test_second_order_through_sparse_gradient_meeting_dense_math(rng):
    from sparsegrad.testing import check_gradients

    w = rng.standard_normal((4, 3))
    # Gather's IndexedSlices gradient reaches Mul's gradient (dense math) and
    # an AddV2 with a broadcast operand; both densify differentiably.
    check_gradients(
        lambda t: sg.reduce_sum(
            sg.gather(t * 3.0 + sg.constant([1.0, 2.0, 3.0]), [1, 1, 3]) ** 2
        ),
        [w],
        order=2,
    )
    check_gradients(
        lambda t: sg.reduce_sum(sg.tanh(sg.gather(t, [0, 2]) - sg.gather(t, [2, 2]))),
        [w],
        order=2,
    )


def test_tapes_are_thread_local():
    import threading

    x = sg.constant(2.0)
    recorded_elsewhere = []
    with sg.GradientTape() as tape:
        tape.watch(x)

        def other_thread():
            recorded_elsewhere.append(x * x)

        th = threading.Thread(target=other_thread)
        th.start()
        th.join()
        y = x * 3.0
    with sg.GradientTape() as tape2:
        tape2.watch(x)
    assert tape2.gradient(recorded_elsewhere[0], x) is None
    assert tape.gradient([y, recorded_elsewhere[0]], x).numpy() == 3.0


def test_exception_inside_block_pops_the_tape():
    from sparsegrad.autodiff.recording import _STATE

    depth = len(_STATE.tapes)
    with pytest.raises(ZeroDivisionError), sg.GradientTape():
        raise ZeroDivisionError
    assert len(_STATE.tapes) == depth


def test_variable_value_and_convert_to_tensor_are_recorded_reads():
    v = sg.Variable([1.0, 2.0])
    with sg.GradientTape() as tape:
        a = v.value() * 2.0
        b = sg.convert_to_tensor(v) * 3.0
        c = v.read_value() * 4.0
    np.testing.assert_array_equal(tape.gradient([a, b, c], v).numpy(), [9.0, 9.0])
    assert tape.watched_variables() == (v,)


def test_variable_as_target_and_variable_operators():
    v = sg.Variable(3.0)
    with sg.GradientTape() as tape:
        y = -v + v**2 - 1 / v
    assert tape.gradient(y, v).numpy() == pytest.approx(-1 + 6 + 1 / 9)
    with sg.GradientTape() as tape:
        pass
    assert float(tape.gradient(v, v)) == 1.0
