"""RaggedTensors on the device through the elementwise ops, the tape and
custom_gradient (issue 29): the host's values, results kept on the device."""

import numpy as np

import sparsegrad as sg


def _pair(device, rows):
    host = sg.ragged.constant(rows, dtype=np.float32)
    dev = sg.RaggedTensor.from_nested_row_splits(
        device.asarray(host.flat_values.numpy()),
        [device.asarray(s) for s in host.nested_row_splits])
    return host, dev


def _same(device, got, want):
    assert isinstance(got.flat_values._value, device.xp.ndarray)
    np.testing.assert_array_equal(got.flat_values.numpy(), want.flat_values.numpy())
    for g, w in zip(got.nested_row_splits, want.nested_row_splits):
        np.testing.assert_array_equal(device.asnumpy(g), w)


def test_elementwise_ops_on_device(device):
    rows = [[[1.0, 2.0], []], [[3.0, -4.0, 5.0]], []]
    host, dev = _pair(device, rows)
    _same(device, dev * 2.0 + dev, host * 2.0 + host)
    _same(device, sg.maximum(dev, 1.5), sg.maximum(host, 1.5))
    _same(device, sg.square(sg.abs(dev)), sg.square(sg.abs(host)))
    column = np.array([[10.0], [20.0], [30.0]], np.float32)
    _same(device, dev + device.asarray(column[..., None]),
          host + column[..., None])


def test_tape_and_custom_gradient_on_device(device):
    host, dev = _pair(device, [[1.0, 2.0], [], [3.0]])

    @sg.custom_gradient
    def double(x):
        return x * 2.0, lambda g: g * 2.0

    grads = []
    for rt in (host, dev):
        with sg.GradientTape() as tape:
            tape.watch(rt)
            y = sg.reduce_sum(double(rt) * rt)
        grads.append(tape.gradient(y, rt))
    assert isinstance(grads[1], sg.RaggedTensor)
    _same(device, grads[1], grads[0])
    np.testing.assert_array_equal(grads[0].flat_values.numpy(), [4.0, 8.0, 12.0])
