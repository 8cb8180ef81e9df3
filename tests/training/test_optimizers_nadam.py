"""Nadam: lazy and non-lazy sparse gradients, u_product and its state."""

import io

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError


def _grads(rng, rows, dtype=np.float32):
    values = rng.standard_normal((len(rows), 4)).astype(dtype)
    return sg.IndexedSlices(values, np.array(rows, np.int64), dense_shape=(6, 4))


def test_non_lazy_sparse_equals_dense():
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((6, 4)).astype(np.float32)
    a, b = sg.Variable(w0.copy()), sg.Variable(w0.copy())
    opt_a, opt_b = sg.optimizers.Nadam(0.1), sg.optimizers.Nadam(0.1)
    for _ in range(3):
        g = _grads(rng, [0, 3, 3, 5])
        dense = np.zeros((6, 4), np.float32)
        for k, i in enumerate(g.indices):
            dense[i] = dense[i] + g.values[k]
        opt_a.apply_gradients([(g, a)])
        opt_b.apply_gradients([(dense, b)])
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    for name in ("m", "v"):
        np.testing.assert_array_equal(opt_a.get_slot(a, name).numpy(),
                                      opt_b.get_slot(b, name).numpy())
    assert opt_a.u_product == opt_b.u_product


def test_lazy_touches_only_its_rows():
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((6, 4)).astype(np.float32)
    w = sg.Variable(w0.copy())
    ref = sg.Variable(w0.copy())
    opt = sg.optimizers.Nadam(0.1, lazy=True)
    dense_opt = sg.optimizers.Nadam(0.1)
    g = _grads(rng, [1, 4, 1])
    opt.apply_gradients([(g, w)])
    untouched = [0, 2, 3, 5]
    np.testing.assert_array_equal(w.numpy()[untouched], w0[untouched])
    for name in ("m", "v"):
        assert not opt.get_slot(w, name).numpy()[untouched].any()
    # the touched rows: the dense update of the summed rows (first step)
    dense = np.zeros((6, 4), np.float32)
    for k, i in enumerate(g.indices):
        dense[i] = dense[i] + g.values[k]
    dense_opt.apply_gradients([(dense, ref)])
    np.testing.assert_array_equal(w.numpy()[[1, 4]], ref.numpy()[[1, 4]])


def test_u_product_follows_keras_and_round_trips():
    rng = np.random.default_rng(2)
    w = sg.Variable(rng.standard_normal((6, 4)).astype(np.float32))
    opt = sg.optimizers.Nadam(0.05, beta_1=0.8, lazy=True)
    assert opt.u_product == 1.0
    want = np.float32(1)
    for step in range(1, 4):
        opt.apply_gradients([(_grads(rng, [step, 0]), w)])
        p = np.float32(np.float32(0.96).astype(np.float64) ** step)
        want = (want * np.float32(0.8)) * (np.float32(1) - np.float32(0.5) * p)
        assert opt.u_product == float(want)
    buf = io.BytesIO()
    opt.save_state(buf)
    g = _grads(rng, [2, 5])
    w_saved = w.numpy().copy()
    opt.apply_gradients([(g, w)])
    after, u_after = w.numpy().copy(), opt.u_product
    w2 = sg.Variable(w_saved)
    again = sg.optimizers.Nadam(0.05, beta_1=0.8, lazy=True)
    buf.seek(0)
    again.load_state(buf, [w2])
    assert again.u_product == float(want)
    again.apply_gradients([(g, w2)])
    np.testing.assert_array_equal(w2.numpy(), after)
    assert again.u_product == u_after


@pytest.mark.parametrize("bad,fragment", [
    (np.float32(1.5), "u_product is 1.5"),
    (np.float32(np.nan), "u_product is nan"),
    (np.float64(0.5), "dtype float64"),
])
def test_load_state_rejects_a_bad_u_product(bad, fragment):
    w = sg.Variable(np.ones((2, 2), np.float32))
    opt = sg.optimizers.Nadam(0.1)
    opt.apply_gradients([(np.ones((2, 2), np.float32), w)])
    buf = io.BytesIO()
    opt.save_state(buf)
    buf.seek(0)
    data = dict(np.load(buf))
    data["optimizer/u_product"] = np.asarray(bad)
    out = io.BytesIO()
    np.savez(out, **data)
    out.seek(0)
    fresh = sg.optimizers.Nadam(0.1)
    with pytest.raises(InvalidArgumentError, match=fragment):
        fresh.load_state(out, [w])
    assert fresh.u_product == 1.0 and fresh.iterations_count == 0
    missing = {k: v for k, v in data.items() if k != "optimizer/u_product"}
    out = io.BytesIO()
    np.savez(out, **missing)
    out.seek(0)
    with pytest.raises(InvalidArgumentError, match="u_product' is missing"):
        fresh.load_state(out, [w])
