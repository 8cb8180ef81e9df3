"""Gradients of the clip ops on device arrays against the CPU, through
``sg.GradientTape``: the gradients stay on the device (a device array for
every device input) and IndexedSlices arguments stay IndexedSlices.

The gradient functions run the CPU's operations in its order with the
arrays' module.  Elementwise steps (add, multiply, divide, sqrt, compare)
and the kernels (the norm's sum of squares, the sums of repeated rows) give
the CPU's bits: those results are compared bit for bit everywhere.  A float64
sum over a slice (``xp.sum``) is CuPy's reduction on a GPU, in another order
than NumPy's pairwise sum, and clip_by_norm's ``n**3`` is libdevice's pow
there: results that depend on them are compared with a tolerance on a real
GPU, and bit for bit on the emulator (whose reductions are NumPy's).
"""

import numpy as np
import pytest

import sparsegrad as sg

FLOATS = (np.float32, np.float64)
# A float64 reduction in another order changes the last bits of a float64
# result, and may move a float32 one by an ulp; cancellations
# (``g - r * S / n**2``) enlarge that relative to the result.
RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-11,
        np.dtype(np.float16): 1e-2}


def _leaf(device, array, on_device):
    return sg.constant(device.asarray(array) if on_device else np.array(array))


def _flat(outputs):
    """Tensors of `outputs` (IndexedSlices: their values; None dropped)."""
    out = []
    for o in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
        if isinstance(o, (list, tuple)):
            out += _flat(o)
        elif isinstance(o, sg.IndexedSlices):
            out.append(o.values)
        elif o is not None:
            out.append(o)
    return out


def _run(device, fn, inputs, on_device, seed=11):
    """fn's outputs and the gradients of ``sum(upstream * output)`` w.r.t.
    every input, host or device (same upstreams on both)."""
    leaves = [_leaf(device, a, on_device) for a in inputs]
    with sg.GradientTape() as tape:
        tape.watch(leaves)
        result = fn(*leaves)
    outs = _flat(result)
    rng = np.random.default_rng(seed)
    ups = [rng.standard_normal(o.shape).astype(o.dtype) for o in outs]
    if on_device:
        ups = [device.asarray(u) for u in ups]
    grads = tape.gradient(outs, leaves, output_gradients=ups)
    return result, outs, grads


def _host(device, t):
    if isinstance(t, sg.IndexedSlices):
        t = t.values
    assert isinstance(t._value, device.xp.ndarray), "left the device"
    return device.asnumpy(t._value)


def _same(device, got, want, exact, what, scale=0.0):
    """`scale`: the size of the terms a value is the sum of, where they
    cancel (a result of 1e-17 that should be 0 is not compared to itself)."""
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if exact or device.name == "emulated":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        rtol = RTOL[want.dtype]
        atol = rtol * max(np.abs(want[np.isfinite(want)]).max(initial=0), scale)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def _check(device, fn, inputs, exact=(), exact_outputs=True, scales=None):
    """fn on host and device leaves: the same outputs and the same
    gradients, bit for bit on every backend for the outputs when
    `exact_outputs` and for gradient k when k is in `exact`, else within
    RTOL on a real GPU (see the module docstring), of the largest value or
    of ``scales[k]`` for a gradient that is a cancelling sum."""
    cpu_result, _, cpu_grads = _run(device, fn, inputs, False)
    dev_result, _, dev_grads = _run(device, fn, inputs, True)
    for k, (c, d) in enumerate(zip(_flat(cpu_result), _flat(dev_result))):
        _same(device, _host(device, d), c.numpy(), exact_outputs, f"output {k}")
    assert len(cpu_grads) == len(dev_grads)
    for k, (c, d) in enumerate(zip(cpu_grads, dev_grads)):
        assert (c is None) == (d is None), k
        if c is not None:
            _same(device, _host(device, d), c.numpy(), k in exact, f"gradient {k}",
                  (scales or {}).get(k, 0.0))
    return dev_result, dev_grads


def _slices(values, ids, n_rows):
    return sg.IndexedSlices(values, ids, dense_shape=(n_rows,) + values.shape[1:])


def _ids(device, ids, like):
    return device.asarray(ids) if isinstance(like._value, device.xp.ndarray) else ids


# -- clip_by_value -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip_by_value_gradients(device, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 3)).astype(dtype)
    x[0, :2] = [0.5, -0.25]  # ties with the bounds
    x[1, 0] = np.nan
    lo = np.array([-0.25, -0.5, -1.0], dtype)
    hi = np.asarray(0.5, dtype)
    # the bounds' gradients are sums over broadcast axes: CuPy's reductions
    _check(device, lambda t, a, b: sg.clip_by_value(t, a, b), [x, lo, hi],
           exact=(0,))
    _check(device, lambda t: sg.clip_by_value(t, -0.3, 0.4), [x], exact=(0,))


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip_by_value_of_slices_and_a_sparse_upstream(device, dtype):
    rng = np.random.default_rng(2)
    v = rng.standard_normal((5, 2)).astype(dtype)
    ids = np.array([3, 1, 3, 0, 7])

    def of_slices(t):
        out = sg.clip_by_value(_slices(t, _ids(device, ids, t), 8), -0.5, 0.5)
        assert isinstance(out, sg.IndexedSlices)
        return out

    _check(device, of_slices, [v], exact=(0,))
    # the op's upstream is an IndexedSlices (a gather of its output)
    _check(device, lambda t: sg.gather(sg.clip_by_value(t, -0.5, 0.5),
                                       _ids(device, np.array([4, 0, 4]), t)),
           [v], exact=(0,))


# -- clip_by_norm ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axes", [None, 1, (0, 2)])
def test_clip_by_norm_gradients(device, dtype, axes):
    x = np.random.default_rng(3).standard_normal((4, 3, 2)).astype(dtype)
    x[1] = 0  # a zero slice: the divisor 1, no NaN
    for c in (0.7, 50.0):  # on the norm's branch, and not
        # per-slice norms (axes given) are CuPy sums in the forward pass too
        _check(device, lambda t, cn: sg.clip_by_norm(t, cn, axes=axes),
               [x, np.asarray(c, dtype)], exact_outputs=axes is None)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axes", [None, 1])
def test_clip_by_norm_of_slices_with_repeated_rows(device, dtype, axes):
    rng = np.random.default_rng(4)
    v = rng.standard_normal((7, 3)).astype(dtype)
    ids = np.array([3, 1, 3, 0, 3, 1, 5])

    def of_slices(t, cn):
        out = sg.clip_by_norm(_slices(t, _ids(device, ids, t), 6), cn, axes=axes)
        assert isinstance(out, sg.IndexedSlices)
        return out

    _check(device, of_slices, [v, np.asarray(0.9, dtype)],
           exact_outputs=axes is None)


def test_clip_by_norm_clip_norm_on_the_host(device):
    # the values on the device, clip_norm a host Tensor: its gradient comes
    # back to the host (one scalar)
    x = np.random.default_rng(5).standard_normal((4, 3))
    c = sg.constant(0.5)
    t = _leaf(device, x, True)
    with sg.GradientTape() as tape:
        tape.watch([t, c])
        y = sg.clip_by_norm(t, c)
    gt, gc = tape.gradient(y, [t, c])
    assert isinstance(gt._value, device.xp.ndarray)
    assert isinstance(gc._value, np.ndarray)
    h = sg.constant(x)
    with sg.GradientTape() as tape:
        tape.watch([h, c])
        y = sg.clip_by_norm(h, c)
    want_t, want_c = tape.gradient(y, [h, c])
    np.testing.assert_allclose(device.asnumpy(gt._value), want_t.numpy(),
                               rtol=RTOL[np.dtype(np.float64)])
    np.testing.assert_allclose(gc.numpy(), want_c.numpy(),
                               rtol=RTOL[np.dtype(np.float64)])


# -- global_norm -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + (np.float16,))
def test_global_norm_gradients(device, dtype):
    # elementwise steps on the kernels' norm and rows: bit-exact everywhere
    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, 3)).astype(dtype)
    v = rng.standard_normal((6, 3)).astype(dtype)
    ids = np.array([2, 0, 2, 2, 5, 0])

    def fn(x, w):
        return sg.global_norm([x, None, _slices(w, _ids(device, ids, w), 7)])

    _check(device, fn, [a, v], exact=(0, 1))


def test_global_norm_of_zeros_has_nan_gradients(device):
    z = np.zeros((3, 2), np.float32)
    _, (g,) = _check(device, lambda t: sg.global_norm([t]), [z], exact=(0,))
    assert np.isnan(device.asnumpy(g._value)).all()  # 0 / 0, as on the CPU


# -- clip_by_global_norm -----------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("clip", [0.5, 30.0])
def test_clip_by_global_norm_gradients(device, dtype, clip):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 3)).astype(dtype)
    v = rng.standard_normal((5, 3)).astype(dtype)
    ids = np.array([1, 1, 0, 4, 1])

    def fn(x, w, c):
        clipped, norm = sg.clip_by_global_norm(
            [x, None, _slices(w, _ids(device, ids, w), 6)], c)
        assert clipped[1] is None and isinstance(clipped[2], sg.IndexedSlices)
        return clipped + [norm]

    # dL/dscale is a sum over every element (CuPy's reduction); where the
    # norm is below clip_norm the scale is 1 and the values' gradients do
    # not depend on it, and the gradient of clip_norm is 1/c - c/c**2 = 0
    # up to rounding (an H200 gave 0 where the CPU gave -2.8e-17)
    _check(device, fn, [a, v, np.asarray(clip, dtype)],
           exact=(0, 1) if clip > 10 else (), scales={2: 1.0 / clip})


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip_by_global_norm_use_norm_gradients(device, dtype):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((4, 3)).astype(dtype)
    v = rng.standard_normal((3, 2)).astype(dtype)

    def fn(x, w, c, n):
        clipped, norm = sg.clip_by_global_norm([x, w], c, use_norm=n)
        assert norm is n
        return clipped

    _check(device, fn, [a, v, np.asarray(1.5, dtype), np.asarray(4.0, dtype)])


def test_clip_by_global_norm_trains_a_device_variable(device):
    # the optimizer-facing use: clipped gradients of device variables
    rng = np.random.default_rng(9)
    w0 = rng.standard_normal((5, 2))
    results = []
    for on_device in (False, True):
        w = sg.Variable(device.asarray(w0) if on_device else w0)
        with sg.GradientTape() as tape:
            (cw,), norm = sg.clip_by_global_norm([w], 0.25)
            loss = sg.reduce_sum(cw * cw) + norm
        g = tape.gradient(loss, w)
        assert isinstance(g._value, device.xp.ndarray) == on_device
        results.append(device.asnumpy(g._value) if on_device else g.numpy())
    # reduce_sum and dL/dscale are reductions: CuPy's order on a GPU
    if device.name == "emulated":
        np.testing.assert_array_equal(results[1], results[0])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-11)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sparse_gradients_stay_sparse_through_clipping(device, dtype):
    # the rows of a table gathered into an IndexedSlices, clipped by the
    # global norm: the table's gradient is an IndexedSlices on the device
    rng = np.random.default_rng(10)
    table = rng.standard_normal((9, 2)).astype(dtype)
    ids = np.array([4, 1, 4, 7])
    results = []
    for on_device in (False, True):
        v = sg.Variable(device.asarray(table) if on_device else table.copy())
        dids = device.asarray(ids) if on_device else ids
        with sg.GradientTape() as tape:
            s = _slices(sg.gather(v, dids), dids, 9)
            (c,), norm = sg.clip_by_global_norm([s], 0.5)
            loss = sg.reduce_sum(c.values * c.values) + norm
        g = tape.gradient(loss, v)
        assert isinstance(g, sg.IndexedSlices)
        assert isinstance(g.values._value, device.xp.ndarray) == on_device
        results.append([device.asnumpy(a) if on_device else a
                        for a in (g.indices._value, g.values._value)])
    np.testing.assert_array_equal(results[1][0], results[0][0])
    # reduce_sum and dL/dscale are reductions: CuPy's order on a GPU
    _same(device, results[1][1], results[0][1], False, "values")
