"""embedding_lookup_sparse (and embedding_lookup, safe_embedding_lookup_sparse)
with `max_norm` and with a sharded table (a list of shards) on device arrays,
against the CPU, forward and gradients (sg.GradientTape).

Sharded lookups move rows (gathers, a concatenation, the bags' kernels): the
device results are the CPU's bits.  `max_norm` clips each row by its norm, a
``reduce_sum`` over the row (CuPy's reduction on a real GPU, in its own
order): those results are compared with a tolerance on a real GPU and bit
for bit on the emulator (whose reductions are NumPy's).
"""

import numpy as np
import pytest
import scipy.sparse

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError

FLOATS = (np.float32, np.float64)


def _host(device, x):
    value = x._value if isinstance(x, sg.Tensor) else x
    assert isinstance(value, device.xp.ndarray), "left the device"
    return device.asnumpy(value)


def _same(device, got, want, exact):
    assert got.dtype == want.dtype and got.shape == want.shape
    if exact or device.name == "emulated":
        np.testing.assert_array_equal(got, want)
    else:
        # a row's norm is a CuPy reduction on a GPU (see the module docstring)
        rtol = 1e-5 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def _dense_grad(device, g, n_rows, on_device):
    """A table (or shard) gradient as a dense host array; an IndexedSlices
    stays an IndexedSlices of the values' device."""
    if isinstance(g, sg.IndexedSlices):
        values, indices = g.values._value, g.indices._value
        if on_device:
            values, indices = _host(device, values), _host(device, indices)
        out = np.zeros((n_rows,) + values.shape[1:], values.dtype)
        np.add.at(out, indices, values)
        return out
    return _host(device, g) if on_device else g.numpy()


def _shards(table, n_shards, strategy):
    if strategy == "div":
        return np.array_split(table, n_shards)
    return [table[s::n_shards] for s in range(n_shards)]


def _lookup_both(device, lookup, table, n_shards, strategy):
    """`lookup(params)` with the table (or its shards) as host, then device
    Variables: outputs and the gradients of ``sum(out * upstream)``."""
    results = []
    rng = np.random.default_rng(3)
    upstream = None
    for on_device in (False, True):
        parts = [table] if n_shards == 1 else _shards(table, n_shards, strategy)
        params = [sg.Variable(device.asarray(p) if on_device else p.copy())
                  for p in parts]
        with sg.GradientTape() as tape:
            out = lookup(params if n_shards > 1 else params[0])
            if upstream is None:
                upstream = rng.standard_normal(out.shape).astype(out.dtype)
            up = device.asarray(upstream) if on_device else upstream
            loss = sg.reduce_sum(out * up)
        grads = tape.gradient(loss, params)
        value = _host(device, out) if on_device else out.numpy()
        dense = [_dense_grad(device, g, p.shape[0], on_device)
                 for g, p in zip(grads, parts)]
        for g in grads:
            if isinstance(g, sg.IndexedSlices):
                assert isinstance(g.values._value, device.xp.ndarray) == on_device
        results.append((value, dense))
    return results


def _ids():
    # rows of several ids, an empty row, a repeated id, weights
    weights = np.array([1.0, 0.5, 2.0, 1.5, 1.0, 0.25, 3.0])
    return scipy.sparse.csr_array(
        (weights, [1, 9, 9, 0, 4, 6, 2], [0, 3, 3, 5, 7]), shape=(4, 10))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n_shards, strategy, max_norm, combiner", [
    (1, "div", 0.8, "mean"), (3, "div", None, "sum"), (3, "div", 0.8, "sqrtn"),
    (4, "mod", None, "mean"), (4, "mod", 0.8, "sum"),
])
def test_embedding_lookup_sparse_max_norm_and_shards(device, dtype, combiner,
                                                     n_shards, strategy, max_norm):
    table = np.random.default_rng(1).standard_normal((10, 3)).astype(dtype)
    table[4] *= 0.05  # a row already inside max_norm
    ids = _ids()

    def lookup(params):
        return sg.nn.embedding_lookup_sparse(params, ids, combiner=combiner,
                                             max_norm=max_norm)

    (want, want_g), (got, got_g) = _lookup_both(device, lookup, table, n_shards,
                                                strategy)
    exact = max_norm is None
    _same(device, got, want, exact)
    for g, w in zip(got_g, want_g):
        _same(device, g, w, exact)


@pytest.mark.parametrize("strategy, max_norm", [("div", None), ("mod", 0.5)])
def test_embedding_lookup_of_shards_with_device_ids(device, strategy, max_norm):
    table = np.random.default_rng(2).standard_normal((11, 2)).astype(np.float32)
    ids = np.array([[10, 0, 3], [3, 7, 5]])

    def lookup(params):
        ids_ = ids
        if isinstance(params[0]._value, device.xp.ndarray):
            ids_ = device.asarray(ids)  # device ids with device shards
        return sg.nn.embedding_lookup(params, ids_, max_norm=max_norm,
                                      partition_strategy=strategy)

    (want, want_g), (got, got_g) = _lookup_both(device, lookup, table, 3, strategy)
    _same(device, got, want, max_norm is None)
    for g, w in zip(got_g, want_g):
        _same(device, g, w, max_norm is None)


def test_sharded_lookup_errors_match_cpu(device):
    table = np.arange(12.0).reshape(6, 2)
    shards = np.array_split(table, 3)
    bad = np.array([1, 6])
    with pytest.raises(InvalidArgumentError) as cpu_error:
        sg.nn.embedding_lookup(shards, bad)
    dev_shards = [device.asarray(s) for s in shards]
    dev_bad = device.asarray(bad)
    with pytest.raises(InvalidArgumentError) as error:
        sg.nn.embedding_lookup(dev_shards, dev_bad)
    assert str(error.value) == str(cpu_error.value)
    np.testing.assert_array_equal(device.asnumpy(dev_bad), bad)
    with pytest.raises(ValueError, match="mix numpy"):
        sg.nn.embedding_lookup([dev_shards[0], shards[1], shards[2]], [0])


@pytest.mark.parametrize("default_id", [None, 1])
def test_safe_embedding_lookup_sparse_shards_max_norm(device, default_id):
    table = np.random.default_rng(4).standard_normal((10, 3))
    ids = _ids()

    def lookup(params):
        return sg.nn.safe_embedding_lookup_sparse(params, ids, default_id=default_id,
                                                  max_norm=0.8)

    (want, want_g), (got, got_g) = _lookup_both(device, lookup, table, 3, "div")
    _same(device, got, want, False)
    for g, w in zip(got_g, want_g):
        _same(device, g, w, False)
