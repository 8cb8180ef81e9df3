"""RaggedTensors through GradientTape and custom_gradient: sources, targets,
output gradients, nests, unconnected sources, rank 2, custom_gradient with
ragged arguments and outputs.  TensorFlow's outcomes for the same programs
are replayed in tests/ragged/tf_port/cases_tape.py."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.testing import assert_ragged_equal

F32 = np.float32


def _rt(rows, ragged_rank=None):
    return sg.ragged.constant(rows, dtype=F32, ragged_rank=ragged_rank)


def test_ragged_source_gets_a_ragged_gradient_with_its_partition():
    rt = _rt([[1.0, 2.0], [], [3.0]])
    with sg.GradientTape() as tape:
        tape.watch(rt)
        y = sg.reduce_sum(rt * rt)
    g = tape.gradient(y, rt)
    assert isinstance(g, sg.RaggedTensor)
    assert g.row_splits is rt.row_splits or list(g.row_splits) == [0, 2, 2, 3]
    assert_ragged_equal(g, [[2.0, 4.0], [], [6.0]])
    assert g.dtype == F32


def test_ragged_target_and_ragged_output_gradients():
    rt = _rt([[1.0, 2.0], [3.0]])
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(rt)
        y = rt * 3.0
    assert_ragged_equal(tape.gradient(y, rt), [[3.0, 3.0], [3.0]])
    seed = _rt([[1.0, 2.0], [5.0]])
    assert_ragged_equal(tape.gradient(y, rt, output_gradients=seed),
                        [[3.0, 6.0], [15.0]])
    # a Tensor of the flat values' shape seeds it too (as in TensorFlow)
    flat = sg.constant(np.array([1.0, 0.0, 2.0], F32))
    assert_ragged_equal(tape.gradient(y, rt, output_gradients=[flat]),
                        [[3.0, 0.0], [6.0]])
    with pytest.raises(sg.errors.InvalidArgumentError, match="output_gradients"):
        tape.gradient(y, rt, output_gradients=_rt([[1.0], [2.0]]))


def test_nests_mix_ragged_and_dense_sources():
    rt = _rt([[1.0], [2.0, 3.0]])
    x = sg.constant(F32(2.0))
    with sg.GradientTape() as tape:
        tape.watch([rt, x])
        y = sg.reduce_sum(rt) * x
    g = tape.gradient(y, {"r": rt, "x": [x]})
    assert_ragged_equal(g["r"], [[2.0], [2.0, 2.0]])
    assert float(g["x"][0]) == 6.0


def test_unconnected_ragged_source():
    rt = _rt([[1.0, 2.0], [3.0]])
    x = sg.constant(F32(2.0))
    with sg.GradientTape(persistent=True) as tape:
        tape.watch([rt, x])
        y = x * 2.0
    assert tape.gradient(y, rt) is None
    zero = tape.gradient(y, rt, unconnected_gradients="zero")
    assert_ragged_equal(zero, [[0.0, 0.0], [0.0]])
    assert zero.dtype == F32


def test_ragged_rank_2_and_uniform_inner_dimension():
    r2 = _rt([[[1.0, 2.0], []], [[3.0]]])
    with sg.GradientTape() as tape:
        tape.watch(r2)
        y = sg.reduce_sum(r2 * r2)
    assert_ragged_equal(tape.gradient(y, r2), [[[2.0, 4.0], []], [[6.0]]])
    inner = sg.RaggedTensor.from_row_splits(
        sg.constant(np.arange(1.0, 7.0, dtype=F32).reshape(3, 2)), [0, 2, 3])
    with sg.GradientTape() as tape:
        tape.watch(inner)
        y = sg.reduce_sum(inner * inner)
    g = tape.gradient(y, inner)
    np.testing.assert_array_equal(g.flat_values.numpy(),
                                  2 * np.arange(1.0, 7.0).reshape(3, 2))


def test_gradient_through_a_gather_of_flat_values_is_made_dense():
    rt = _rt([[1.0, 2.0], [3.0]])
    with sg.GradientTape() as tape:
        tape.watch(rt)
        y = sg.gather(rt.flat_values, [0, 0])
    assert_ragged_equal(tape.gradient(y, rt), [[2.0, 0.0], [0.0]])


def test_watch_refuses_other_leaves_and_jacobian_refuses_ragged():
    rt = _rt([[1.0, 2.0], [3.0]])
    with sg.GradientTape(persistent=True) as tape:
        with pytest.raises(ValueError, match="RaggedTensor"):
            tape.watch([rt, np.ones(2)])
        tape.watch(rt)
        y = rt * rt
    with pytest.raises(ValueError, match="jacobian: got a RaggedTensor"):
        tape.jacobian(y, rt)
    with pytest.raises(ValueError, match="batch_jacobian: got a RaggedTensor"):
        tape.batch_jacobian(y, rt)
    # the flat values are the cheap way: a dense Jacobian
    np.testing.assert_array_equal(tape.jacobian(y.flat_values, rt.flat_values).numpy(),
                                  np.diag([2.0, 4.0, 6.0]))


def test_custom_gradient_with_ragged_argument_and_output():
    seen = []

    @sg.custom_gradient
    def scale(x, k):
        def grad(dy):
            seen.append(dy)
            return dy * 10.0, sg.reduce_sum(dy * x)
        return x * k, grad

    rt = _rt([[1.0, 2.0], [], [3.0]])
    k = sg.constant(F32(2.0))
    with sg.GradientTape() as tape:
        tape.watch([rt, k])
        y = scale(rt, k)
        loss = sg.reduce_sum(y)
    assert isinstance(y, sg.RaggedTensor)
    assert_ragged_equal(y, [[2.0, 4.0], [], [6.0]])
    g_rt, g_k = tape.gradient(loss, [rt, k])
    assert isinstance(seen[0], sg.RaggedTensor)
    assert_ragged_equal(seen[0], [[1.0, 1.0], [], [1.0]])
    assert_ragged_equal(g_rt, [[10.0, 10.0], [], [10.0]])
    assert float(g_k) == 6.0


def test_custom_gradient_nest_output_and_ragged_input_gradient():
    @sg.custom_gradient
    def f(x):
        def grad(d_doubled, d_total):
            return x.with_flat_values(d_doubled.flat_values * 2.0 + d_total)
        return {"doubled": x * 2.0, "total": sg.reduce_sum(x)}, grad

    rt = _rt([[1.0], [2.0, 3.0]])
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(rt)
        out = f(rt)
    # the output that got no gradient gives zeros to grad_fn
    assert_ragged_equal(tape.gradient(out["total"], rt), [[1.0], [1.0, 1.0]])
    assert_ragged_equal(tape.gradient(out["doubled"], rt), [[2.0], [2.0, 2.0]])


def test_custom_gradient_counts_a_ragged_argument_as_its_components():
    @sg.custom_gradient
    def f(x):
        def grad(dy):
            return dy, dy
        return x * 2.0, grad

    rt = _rt([[1.0], [2.0]])
    with sg.GradientTape() as tape:
        tape.watch(rt)
        y = f(rt)
    with pytest.raises(ValueError, match="expected to return 1 gradients, but "
                                         "returned 2"):
        tape.gradient(y, rt)


def test_custom_gradient_none_gradient_for_ragged_argument():
    @sg.custom_gradient
    def f(x):
        return x * 2.0, lambda dy: None

    rt = _rt([[1.0], [2.0]])
    with sg.GradientTape() as tape:
        tape.watch(rt)
        y = f(rt)
    assert tape.gradient(y, rt) is None
