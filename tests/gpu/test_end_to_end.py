"""The GPU path end to end, and the routing by array type.

A small embedding model (lookup, MLP, sigmoid cross-entropy, clip by global
norm, lazy Adam on the table and Adam on the dense weights; an FTRL variant
over a segment-sum bag) trains for a few steps on host arrays and on device
arrays; the device run must give the CPU's numbers.  Meanwhile every Cython
kernel is replaced by a tripwire (a cupy array must never reach one) and the
CUDA launches are counted; on host arrays the CUDA loader is the tripwire (a
numpy array must never reach a CUDA kernel).
"""

import inspect

import numpy as np

import sparsegrad as sg
from sparsegrad import _cuda

B, F, D, ROWS = 16, 3, 4, 50


def _inputs():
    rng = np.random.default_rng(0)
    return dict(
        table=rng.standard_normal((ROWS, D)).astype(np.float32),
        w1=(rng.standard_normal((F * D, 8)) * 0.3).astype(np.float32),
        w2=(rng.standard_normal((8, 1)) * 0.3).astype(np.float32),
        ids=((rng.zipf(1.3, size=(3, B, F)) - 1) % ROWS).astype(np.int64),
        y=(rng.random((3, B, 1)) < 0.3).astype(np.float32),
    )


def _train(asarray, asnumpy):
    x = _inputs()
    table = sg.Variable(asarray(x["table"]))
    w1 = sg.Variable(asarray(x["w1"]))
    w2 = sg.Variable(asarray(x["w2"]))
    sparse_opt = sg.optimizers.Adam(0.05, lazy=True)
    dense_opt = sg.optimizers.Adam(0.05)
    losses = []
    for step in range(3):
        ids, y = asarray(x["ids"][step]), asarray(x["y"][step])
        with sg.GradientTape() as tape:
            emb = sg.nn.embedding_lookup(table, ids)
            h = sg.nn.relu(sg.matmul(sg.reshape(emb, (B, F * D)), w1))
            logits = sg.matmul(h, w2)
            loss = sg.reduce_mean(
                sg.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
        g_table, g1, g2 = tape.gradient(loss, [table, w1, w2])
        assert isinstance(g_table, sg.IndexedSlices)
        (g_table, g1, g2), _ = sg.clip_by_global_norm([g_table, g1, g2], 0.5)
        sparse_opt.apply_gradients([(g_table, table)])
        dense_opt.apply_gradients([(g1, w1), (g2, w2)])
        losses.append(float(loss))
    return losses, [asnumpy(v.numpy() if hasattr(v, "numpy") else v)
                    for v in (table, w1, w2)]


def _cython_kernels():
    for mod_name in ("slices", "clip", "segment", "ragged", "training",
                     "training_avx2", "segment_avx2", "elementwise",
                     "elementwise_avx2"):
        try:
            mod = getattr(__import__(f"sparsegrad._kernels.{mod_name}").
                          _kernels, mod_name)
        except (ImportError, AttributeError):
            continue
        for name, value in vars(mod).items():
            if callable(value) and not inspect.isclass(value) \
                    and not name.startswith("_"):
                yield mod, name


def test_host_arrays_never_reach_cuda(monkeypatch):
    def tripwire(*args, **kwargs):
        raise AssertionError("a CUDA kernel was asked for on host arrays")

    monkeypatch.setattr(_cuda, "function", tripwire)
    losses, _ = _train(np.asarray, np.asarray)
    assert np.all(np.isfinite(losses))


def test_device_run_matches_the_cpu(device, monkeypatch):
    want_losses, want = _train(np.asarray, np.asarray)
    launches = []
    real_function = _cuda.function

    def counted(family, name):
        launches.append((family, name))
        return real_function(family, name)

    monkeypatch.setattr(_cuda, "function", counted)
    for mod, name in _cython_kernels():
        def tripwire(*args, _name=f"{mod.__name__}.{name}", **kwargs):
            raise AssertionError(f"{_name} (Cython) ran on device arrays")
        monkeypatch.setattr(mod, name, tripwire)
    got_losses, got = _train(device.asarray, device.asnumpy)
    families = {family for family, _ in launches}
    assert {"training", "clip"} <= families, families
    # matmul (cuBLAS) and exp/log (libdevice) are not the CPU's: a tolerance.
    np.testing.assert_allclose(got_losses, want_losses, rtol=2e-5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
