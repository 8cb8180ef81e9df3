"""Optimizer.minimize with the tape: callable losses, Tensor losses, sparse grads."""

import numpy as np
import pytest

import sparsegrad as sg


def loss_fn(table, bias, ids):
    rows = sg.gather(table, ids)
    return sg.reduce_sum(sg.square(sg.add(rows, bias)))


def test_minimize_callable_loss_equals_manual_step(rng):
    ids = np.array([3, 0, 3, 5])
    t0, b0 = rng.standard_normal((6, 2)), rng.standard_normal(2)
    table, bias = sg.Variable(t0), sg.Variable(b0)
    other = sg.Variable(np.ones(3))                    # unconnected: None gradient
    opt = sg.optimizers.Adam(learning_rate=0.1, lazy=True)
    opt.minimize(lambda: loss_fn(table, bias, ids), [table, bias, other])

    # By hand: d/drows = 2 (rows + bias); table gets them at ids, bias their sum.
    rows = t0[ids] + b0
    g_table = sg.IndexedSlices(2 * rows, ids, dense_shape=(6, 2))
    g_bias = (2 * rows).sum(axis=0)
    table2, bias2 = sg.Variable(t0), sg.Variable(b0)
    sg.optimizers.Adam(learning_rate=0.1, lazy=True).apply_gradients(
        [(g_table, table2), (g_bias, bias2)])
    np.testing.assert_allclose(table.numpy(), table2.numpy(), rtol=1e-14)
    np.testing.assert_allclose(bias.numpy(), bias2.numpy(), rtol=1e-14)
    np.testing.assert_array_equal(table.numpy()[[1, 2, 4]], t0[[1, 2, 4]])   # lazy
    np.testing.assert_array_equal(other.numpy(), np.ones(3))
    assert opt.get_state(other) is None
    assert opt.iterations_count == 1


def test_minimize_reduces_the_loss(rng):
    ids = np.array([1, 2, 2, 4])
    table, bias = sg.Variable(rng.standard_normal((5, 3))), sg.Variable(np.zeros(3))
    opt = sg.optimizers.SGD(learning_rate=0.05, momentum=0.5)
    losses = []
    for _ in range(20):
        losses.append(float(loss_fn(table, bias, ids)))
        opt.minimize(lambda: loss_fn(table, bias, ids), lambda: [table, bias])
    assert losses[-1] < 0.05 * losses[0]
    assert opt.iterations_count == 20


def test_minimize_tensor_loss_needs_the_tape(rng):
    table = sg.Variable(rng.standard_normal((4, 2)))
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(sg.square(table))
    opt = sg.optimizers.SGD(learning_rate=0.25)
    with pytest.raises(sg.errors.InvalidArgumentError, match="tape is required"):
        opt.minimize(loss, [table])
    before = table.numpy()
    opt.minimize(loss, [table], tape=tape)
    np.testing.assert_allclose(table.numpy(), before - 0.25 * 2 * before, rtol=1e-15)
