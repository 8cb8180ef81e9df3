"""``sparse_dense_matmul`` of a host ``scipy.sparse`` matrix and device
weights: the product and the IndexedSlices gradient on the device, the
CPU's numbers (cuSPARSE may sum a row in another order: a tolerance)."""

import numpy as np
import pytest
import scipy.sparse as sp

import sparsegrad as sg


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("adjoint_a", [False, True])
def test_product_and_gradient_match_the_cpu(device, dtype, adjoint_a):
    rng = np.random.default_rng(0)
    X = sp.random(6, 40, density=0.15, format="csr", dtype=dtype, random_state=1)
    if adjoint_a:
        X = X.T.tocsr()
    w0 = rng.standard_normal((40, 3)).astype(dtype)
    upstream = rng.standard_normal((6, 3)).astype(dtype)
    results = {}
    for name, put in (("cpu", np.asarray), ("device", device.asarray)):
        w = sg.Variable(put(w0))
        with sg.GradientTape() as tape:
            y = sg.sparse.sparse_dense_matmul(X, w, adjoint_a=adjoint_a)
            loss = sg.reduce_sum(y * put(upstream))
        g = tape.gradient(loss, w)
        assert isinstance(g, sg.IndexedSlices)
        results[name] = (y.numpy(), g.indices.numpy(), g.values.numpy())
        if name == "device":
            assert type(y._value) is device.xp.ndarray
            assert type(g.indices._value) is device.xp.ndarray
    (y_cpu, i_cpu, v_cpu), (y_dev, i_dev, v_dev) = results["cpu"], results["device"]
    np.testing.assert_array_equal(i_dev, i_cpu)
    tol = dict(rtol=1e-6 if dtype == np.float32 else 1e-14, atol=0)
    np.testing.assert_allclose(y_dev, y_cpu, **tol)
    np.testing.assert_allclose(v_dev, v_cpu, **tol)


def test_optimizer_step_on_device_weights(device):
    # The FTRL logistic-regression step of the demo, with the weights on the
    # device: the gradient is an IndexedSlices of device arrays.
    X = sp.random(8, 30, density=0.2, format="csr", dtype=np.float32, random_state=2)
    y = (np.arange(8) % 2).astype(np.float32).reshape(-1, 1)
    weights = {}
    for name, put in (("cpu", np.asarray), ("device", device.asarray)):
        w = sg.Variable(put(np.zeros((30, 1), np.float32)))
        opt = sg.optimizers.Ftrl(learning_rate=0.5, l1_regularization_strength=1e-3)
        for _ in range(3):
            with sg.GradientTape() as tape:
                logits = sg.sparse.sparse_dense_matmul(X, w)
                loss = sg.reduce_mean(sg.nn.sigmoid_cross_entropy_with_logits(
                    labels=put(y), logits=logits))
            (g,) = tape.gradient(loss, [w])
            opt.apply_gradients([(g, w)])
        weights[name] = w.numpy()
    np.testing.assert_allclose(weights["device"], weights["cpu"], rtol=1e-5, atol=1e-7)
