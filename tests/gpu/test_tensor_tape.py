"""Tensors, Variables and the tape on device arrays: CuPy in, CuPy out.

Results are compared with the same computation on NumPy arrays.  Elementwise
add / multiply / divide / max / where run the same IEEE operations on both,
so they are compared bit for bit.  Three things may differ in the last bits
on a real GPU, and are compared with a tolerance where they appear (and
everything computed from them): CuPy's ``matmul`` (cuBLAS, its own blocking
and summation order), its reductions (``sum`` / ``mean``: a tree order, not
NumPy's pairwise one) and its ``exp`` / ``log`` (libdevice, not our CPU
kernels).  The emulator runs NumPy underneath, so it is exact there too.
"""

import os

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError

# matmul / reductions / exp on the GPU: a few ulps of float32, amplified a
# little by the small models below
RTOL32 = 2e-5
ATOL32 = 1e-6


def _is_device(device, t):
    value = t._value if hasattr(t, "_value") else t
    return isinstance(value, device.xp.ndarray)


# Modules other parts of the GPU work route to the device (gather, segment
# ops, IndexedSlices rows); until they do, the tests that need them skip.
_ROUTED_ELSEWHERE = ("sparse_rows.py", "embedding_ops.py", "segment_ops.py",
                     "sparse_segment_ops.py", "indexed_slices.py",
                     *(f"embedding{os.sep}{m}.py"
                       for m in ("lookups", "clipping", "bags", "safe_bags")))


def _skip_if_not_routed(exc):
    """Skip when `exc` (a TypeError) was raised inside one of those modules;
    re-raise anything else."""
    tb = exc.__traceback__
    files = []
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    if any(f.endswith(_ROUTED_ELSEWHERE) for f in files):
        pytest.skip(f"not yet routed to the GPU in this tree: {exc}")
    raise exc


def _host(device, t):
    assert _is_device(device, t), type(t._value)
    return t.numpy()


# -- Tensor ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_tensor_round_trip(device, dtype):
    a = np.arange(12).reshape(3, 4).astype(dtype)
    d = device.asarray(a)
    t = sg.constant(d)
    assert _is_device(device, t) and t.dtype == dtype and t.shape == (3, 4)
    host = t.numpy()
    assert type(host) is np.ndarray and host.flags.writeable
    np.testing.assert_array_equal(host, a)
    # a private copy: writing the source array changes nothing
    d[0, 0] = 99
    assert t.numpy()[0, 0] == 0
    assert _is_device(device, sg.convert_to_tensor(d))
    assert sg.convert_to_tensor(t) is t
    cast = sg.constant(d, dtype=np.float64)
    assert _is_device(device, cast) and cast.dtype == np.float64
    assert float(sg.constant(device.asarray(np.float32(2.5)))) == 2.5
    assert "numpy=" in repr(t)


def test_np_asarray_of_device_tensor_raises(device):
    t = sg.constant(device.asarray(np.ones(3, np.float32)))
    with pytest.raises(TypeError, match=r"\.numpy\(\)"):
        np.asarray(t)
    v = sg.Variable(device.asarray(np.ones(3, np.float32)))
    with pytest.raises(TypeError, match=r"\.numpy\(\)"):
        np.asarray(v)


def test_operators_stay_on_device(device):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
    ta, tb = sg.constant(a), sg.constant(b)
    da, db = sg.constant(device.asarray(a)), sg.constant(device.asarray(b))
    exact = [
        lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y,
        lambda x, y: x / y, lambda x, y: x + 1.5, lambda x, y: 2.0 - x,
        lambda x, y: x * 3, lambda x, y: 1.0 / y, lambda x, y: -x,
        lambda x, y: abs(x), lambda x, y: x[1:, ::2], lambda x, y: x[0],
        lambda x, y: x < y, lambda x, y: x >= 0.0,
        lambda x, y: sg.maximum(x, y), lambda x, y: sg.where(x > 0, x, y),
        lambda x, y: sg.nn.relu(x), lambda x, y: sg.square(x),
        lambda x, y: sg.sqrt(y), lambda x, y: sg.reduce_max(x, axis=1),
        lambda x, y: sg.transpose(x), lambda x, y: sg.reshape(x, (4, 3)),
        lambda x, y: sg.concat([x, y], 0), lambda x, y: sg.stack([x, y]),
        lambda x, y: sg.cast(x, "float64"), lambda x, y: sg.zeros_like(x),
        lambda x, y: sg.one_hot(sg.cast(y, "int32"), 3),
    ]
    for k, fn in enumerate(exact):
        cpu, dev = fn(ta, tb), fn(da, db)
        assert _is_device(device, dev), k
        assert dev.dtype == cpu.dtype and dev.shape == cpu.shape, k
        np.testing.assert_array_equal(dev.numpy(), cpu.numpy(), err_msg=str(k))
    close = [  # cuBLAS / CuPy's reduction order / libdevice
        lambda x, y: x @ sg.transpose(y), lambda x, y: sg.reduce_sum(x),
        lambda x, y: sg.reduce_mean(x, axis=0), lambda x, y: sg.exp(x),
        lambda x, y: sg.sigmoid(x), lambda x, y: x ** 2.0,
        lambda x, y: sg.nn.softmax(x), lambda x, y: sg.log(y),
    ]
    for k, fn in enumerate(close):
        cpu, dev = fn(ta, tb), fn(da, db)
        assert _is_device(device, dev), k
        assert dev.dtype == cpu.dtype and dev.shape == cpu.shape, k
        np.testing.assert_allclose(dev.numpy(), cpu.numpy(), rtol=RTOL32,
                                   atol=ATOL32, err_msg=str(k))


def test_host_and_device_operands(device):
    d = sg.constant(device.asarray(np.ones(3, np.float32)))
    h = sg.constant(np.ones(3, np.float32))
    # two Tensors on different devices do not mix
    with pytest.raises(ValueError, match="mix numpy"):
        d + h
    with pytest.raises(ValueError, match="mix numpy"):
        h * d
    # a host argument (number, list, ndarray) goes to the Tensor's device
    for other in (np.float32(2), 2.0, [1.0, 2.0, 3.0], np.arange(3.0)):
        out = d * other
        assert _is_device(device, out) and out.dtype == np.float32
        np.testing.assert_array_equal(out.numpy(), (h * other).numpy())
    # a device argument never goes to the host implicitly
    with pytest.raises(ValueError, match="mix numpy"):
        h * device.asarray(np.ones(3, np.float32))
    with pytest.raises(InvalidArgumentError, match="dtype"):
        d + sg.constant(device.asarray(np.ones(3, np.float64)))


# -- Variable ----------------------------------------------------------------


def test_variable_round_trip_and_updates(device):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = sg.Variable(device.asarray(a), name="w")
    assert _is_device(device, v._value) and v.dtype == np.float32
    np.testing.assert_array_equal(v.numpy(), a)
    assert type(v.numpy()) is np.ndarray
    assert _is_device(device, v.value()) and _is_device(device, v + 1.0)
    v.assign(device.asarray(a * 2))
    v.assign_add(device.asarray(np.ones(3, np.float32)))   # broadcast
    v.assign_sub(0.5)
    np.testing.assert_array_equal(v.numpy(), a * 2 + 1 - 0.5)
    v.assign_add(np.full(3, 2.0, np.float32))   # a host argument is copied over
    np.testing.assert_array_equal(v.numpy(), a * 2 + 1 - 0.5 + 2)
    assert v.version == 4
    assert _is_device(device, v._value)
    w = sg.Variable(sg.constant(device.asarray(a)), dtype=np.float64)
    assert _is_device(device, w._value) and w.dtype == np.float64
    assert "numpy=" in repr(v)


def test_variable_bad_update_changes_nothing(device):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = sg.Variable(device.asarray(a))
    before = v.numpy()
    with pytest.raises(InvalidArgumentError, match="shape"):
        v.assign_add(device.asarray(np.ones((3, 2), np.float32)))
    with pytest.raises(InvalidArgumentError, match="shape"):
        v.assign(np.ones((3, 3), np.float32))
    h = sg.Variable(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="mix numpy"):
        h.assign(device.asarray(np.ones(3, np.float32)))
    np.testing.assert_array_equal(h.numpy(), np.zeros(3))
    np.testing.assert_array_equal(v.numpy(), before)
    assert v.version == 0
    n = sg.Variable(device.asarray(np.arange(3, dtype=np.int32)))
    with pytest.raises(InvalidArgumentError, match="cannot be cast"):
        n.assign_add(device.asarray(np.ones(3, np.float64)))
    np.testing.assert_array_equal(n.numpy(), [0, 1, 2])


# -- the tape ----------------------------------------------------------------


def _exact_model(w, b, x):
    # elementwise ops only, whose gradients are too: the same IEEE operations
    # in the same order on both devices
    h = sg.nn.relu(w * x + b)
    y = sg.maximum(h * h / 3.0, w) - sg.where(x > 0.0, w * 2.0, b) + abs(b)
    return y * y + h


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elementwise_gradients_bit_exact(device, dtype):
    rng = np.random.default_rng(1)
    w0, b0, x0 = (rng.standard_normal((5, 4)).astype(dtype) for _ in range(3))

    def grads(conv):
        w, b = sg.Variable(conv(w0)), sg.Variable(conv(b0))
        x = sg.constant(conv(x0))
        with sg.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = _exact_model(w, b, x)
        out = tape.gradient(y, [w, b, x])          # seed: ones of y's shape
        out.append(tape.gradient(y, w, output_gradients=sg.constant(conv(x0))))
        return out

    cpu = grads(lambda a: a)
    dev = grads(device.asarray)
    for c, d in zip(cpu, dev):
        assert d.dtype == c.dtype and d.shape == c.shape
        np.testing.assert_array_equal(_host(device, d), c.numpy())


def _mlp_loss(params, x, labels, targets):
    w1, b1, w2 = params
    h = sg.nn.relu(sg.matmul(x, w1) + b1)
    logits = sg.matmul(sg.sigmoid(h) * 2.0 - h / 3.0, w2)
    l1 = sg.reduce_mean(sg.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    l2 = sg.reduce_sum(sg.nn.sigmoid_cross_entropy_with_logits(
        labels=targets, logits=logits[:, :1]))
    l3 = sg.reduce_mean(sg.nn.softmax_cross_entropy_with_logits(
        labels=sg.one_hot(labels, 3), logits=logits))
    return l1 + l2 + l3 + sg.reduce_max(h) + sg.nn.l2_loss(w2)


def test_mlp_gradients_match_cpu(device):
    rng = np.random.default_rng(2)
    w1 = rng.standard_normal((6, 5)).astype(np.float32)
    b1 = rng.standard_normal(5).astype(np.float32)
    w2 = rng.standard_normal((5, 3)).astype(np.float32)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    labels = rng.integers(0, 3, 8)
    targets = (rng.random((8, 1)) > 0.5).astype(np.float32)

    def run(conv):
        params = [sg.Variable(conv(a)) for a in (w1, b1, w2)]
        with sg.GradientTape() as tape:
            loss = _mlp_loss(params, conv(x), conv(labels), conv(targets))
        return loss, tape.gradient(loss, params)

    cpu_loss, cpu_grads = run(lambda a: a)
    dev_loss, dev_grads = run(device.asarray)
    # matmul (cuBLAS), sums and exp/log on the GPU: a tolerance
    np.testing.assert_allclose(_host(device, dev_loss), cpu_loss.numpy(),
                               rtol=RTOL32, atol=ATOL32)
    for c, d in zip(cpu_grads, dev_grads):
        assert d.shape == c.shape and d.dtype == c.dtype
        np.testing.assert_allclose(_host(device, d), c.numpy(), rtol=1e-4,
                                   atol=1e-5)


def test_variable_read_twice_aggregates_on_device(device):
    v = sg.Variable(device.asarray(np.array([1.0, -2.0, 3.0])))
    with sg.GradientTape() as tape:
        y = v * v + v * 3.0 + sg.nn.relu(v)
    g = tape.gradient(y, v)
    np.testing.assert_array_equal(_host(device, g), [6.0, -1.0, 10.0])


def test_unconnected_zero_and_jacobian_on_device(device):
    v = sg.Variable(device.asarray(np.array([1.0, 2.0])))
    u = sg.Variable(device.asarray(np.array([5.0])))
    with sg.GradientTape(persistent=True) as tape:
        y = v * v
    g = tape.gradient(y, u, unconnected_gradients="zero")
    np.testing.assert_array_equal(_host(device, g), [0.0])
    jac = tape.jacobian(y, v)
    np.testing.assert_array_equal(_host(device, jac), [[2.0, 0.0], [0.0, 4.0]])


def test_gather_gradient_is_indexed_slices_on_device(device):
    table0 = np.arange(12.0, dtype=np.float32).reshape(6, 2)
    ids0 = np.array([1, 4, 1])

    def run(conv):
        table = sg.Variable(conv(table0))
        with sg.GradientTape() as tape:
            y = sg.reduce_sum(sg.gather(table, conv(ids0)) * 2.0) \
                + sg.reduce_sum(table * 0.5)
            z = sg.reduce_sum(sg.gather(table, conv(ids0[:1])))
        return tape.gradient([y, z], table), tape

    try:
        dev, _ = run(device.asarray)
    except TypeError as exc:
        _skip_if_not_routed(exc)
    cpu, _ = run(lambda a: a)
    # sparse + dense aggregate into a dense gradient on the device
    assert type(dev) is type(cpu)
    np.testing.assert_array_equal(_host(device, sg.convert_to_tensor(dev)),
                                  sg.convert_to_tensor(cpu).numpy())
    table = sg.Variable(device.asarray(table0))
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(sg.gather(table, device.asarray(ids0)))
    g = tape.gradient(y, table)
    assert isinstance(g, sg.IndexedSlices)
    assert _is_device(device, g.values) and _is_device(device, g.indices)


def test_borrowed_device_table_is_not_copied(device):
    # gather-like ops view a caller's table: no O(table) copy on the device
    from sparsegrad.ops._helpers import as_borrowed_tensor

    table = device.asarray(np.zeros((4, 2), np.float32))
    t = as_borrowed_tensor(table)
    assert _is_device(device, t)
    table[1, 0] = 5.0
    assert t.numpy()[1, 0] == 5.0


def test_ragged_ops_through_segment_and_gather_ops(device):
    # ragged reductions run the segment ops, the to_tensor gradient a gather
    values0 = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0], np.float32)
    splits0 = np.array([0, 4, 4, 7, 8, 8])

    def run(conv):
        v = sg.Variable(conv(values0))
        with sg.GradientTape() as tape:
            rt = sg.RaggedTensor.from_row_splits(v, conv(splits0))
            total = sg.reduce_sum(rt.to_tensor() * 2.0)
        return sg.reduce_max(rt, axis=1), tape.gradient(total, v)

    try:
        dev = run(device.asarray)
    except TypeError as exc:
        _skip_if_not_routed(exc)
    cpu = run(lambda a: a)
    for c, d in zip(cpu, dev):
        np.testing.assert_array_equal(_host(device, sg.convert_to_tensor(d)),
                                      sg.convert_to_tensor(c).numpy())


def test_custom_gradient_and_stop_gradient_on_device(device):
    @sg.custom_gradient
    def clip_grad(x):
        def grad(upstream):
            return sg.clip_by_value(upstream, -1.0, 1.0)
        return sg.identity(x), grad

    v = sg.Variable(device.asarray(np.array([1.0, 2.0, 3.0])))
    with sg.GradientTape() as tape:
        y = clip_grad(v * 3.0) * sg.constant(device.asarray(np.array([0.5, 2.0, -4.0])))
        y = y + sg.stop_gradient(v * v)
    g = tape.gradient(y, v)
    np.testing.assert_array_equal(_host(device, g), [1.5, 3.0, -3.0])
