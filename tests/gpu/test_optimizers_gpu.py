"""The optimizers on Variables that hold device arrays: a few steps with an
IndexedSlices gradient (repeated rows) and a dense one, against the same
steps on the CPU, bit for bit (var and every slot).

FTRL with learning_rate_power != -0.5 calls pow (libdevice against glibc may
differ in the last bits): compared with a tolerance.
"""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.framework.indexed_slices import IndexedSlices
from sparsegrad.framework.variable import Variable

CASES = [
    ("SGD", {"learning_rate": 0.1}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adagrad", {"learning_rate": 0.1}),
    ("RowwiseAdagrad", {"learning_rate": 0.1}),
    ("Adam", {"learning_rate": 0.01, "lazy": True}),
    ("AdamW", {"learning_rate": 0.01, "lazy": True, "weight_decay": 0.1}),
    ("Adamax", {"learning_rate": 0.01}),
    ("Ftrl", {"learning_rate": 0.1, "l1_regularization_strength": 0.01,
              "l2_regularization_strength": 0.01}),
    ("Ftrl", {"learning_rate": 0.1, "learning_rate_power": -0.6}),
    ("RMSprop", {"learning_rate": 0.01, "momentum": 0.5, "centered": True}),
    ("RMSprop", {"learning_rate": 0.01}),
    ("Adadelta", {"learning_rate": 1.0}),
    ("ProximalGradientDescent", {"learning_rate": 0.1,
                                 "l1_regularization_strength": 0.01}),
    ("ProximalAdagrad", {"learning_rate": 0.1, "l1_regularization_strength": 0.01}),
    ("Lion", {"learning_rate": 0.01, "lazy": True}),
    ("Lion", {"learning_rate": 0.01, "beta_1": 0.8, "beta_2": 0.95}),
    ("Lamb", {"learning_rate": 0.01, "lazy": True}),
    ("Lamb", {"learning_rate": 0.01, "beta_1": 0.8, "epsilon": 1e-6}),
]

INDICES = np.array([3, 1, 3, 0, 3], dtype=np.int64)


def _variables(device, dtype):
    rng = np.random.default_rng(0)
    emb = rng.uniform(-1, 1, (5, 3)).astype(dtype)
    w = rng.uniform(-1, 1, (4,)).astype(dtype)
    host = [Variable(emb), Variable(w)]
    dev = [Variable(emb), Variable(w)]
    for v, value in zip(dev, (emb, w)):
        v._value = device.asarray(value)       # a Variable on the device
    return host, dev


def _train_both(host_opt, dev_opt, device, dtype, steps):
    """`steps` steps of each optimizer on its own copy of the variables, the
    same gradients on the host and on the device; ``(host, dev)`` variables."""
    host, dev = _variables(device, dtype)
    for step in range(steps):
        host_opt.apply_gradients(zip(_gradients(step, dtype, np.asarray), host))
        dev_opt.apply_gradients(zip(_gradients(step, dtype, device.asarray), dev))
    return host, dev


def _gradients(step, dtype, to):
    rng = np.random.default_rng(step + 1)
    values = rng.uniform(-1, 1, (INDICES.shape[0], 3)).astype(dtype)
    dense = rng.uniform(-1, 1, (4,)).astype(dtype)
    sparse = IndexedSlices(to(values), to(INDICES), (5, 3))
    return sparse, to(dense)


def _compare(host_opt, dev_opt, host, dev, device, exact):
    for hv, dv in zip(host, dev):
        pairs = [(hv._value, dv._value)]
        for field, hs in host_opt.get_state(hv)._asdict().items():
            ds = getattr(dev_opt.get_state(dv), field)
            if hs is None:
                assert ds is None
                continue
            pairs.append((hs._value, ds._value))
        for want, got in pairs:
            got = device.asnumpy(got)
            if exact:
                np.testing.assert_array_equal(got, want)
            else:
                # pow: libdevice against glibc, last bits.
                np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("name, kwargs", CASES,
                         ids=[f"{n}-{k}" for k, (n, _) in enumerate(CASES)])
def test_optimizer_steps_on_device_match_cpu(device, name, kwargs, dtype):
    cls = getattr(sg.optimizers, name)
    host_opt, dev_opt = cls(**kwargs), cls(**kwargs)
    host, dev = _train_both(host_opt, dev_opt, device, dtype, 3)
    # Slots live on the device.
    for dv in dev:
        for slot in dev_opt.get_state(dv):
            if slot is not None:
                assert type(slot._value) is type(dv._value)
    exact = kwargs.get("learning_rate_power", -0.5) == -0.5
    _compare(host_opt, dev_opt, host, dev, device, exact)
    assert dev_opt.iterations_count == 3


def test_learning_rate_schedule_on_device(device):
    schedule = sg.optimizers.schedules.ExponentialDecay(0.1, 1, 0.5)
    host_opt = sg.optimizers.Adagrad(schedule)
    dev_opt = sg.optimizers.Adagrad(schedule)
    host, dev = _train_both(host_opt, dev_opt, device, np.float32, 2)
    _compare(host_opt, dev_opt, host, dev, device, True)


def test_out_of_range_sparse_gradient_on_device_changes_nothing(device):
    _, dev = _variables(device, np.float64)
    before = device.asnumpy(dev[0]._value)
    values = device.asarray(np.ones((2, 3)))
    bad = IndexedSlices(values, device.asarray(np.array([1, 7])))
    opt = sg.optimizers.Adagrad(0.1)
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match=r"indices\[1\] = 7 is not in \[0, 5\)"):
        opt.apply_gradients([(bad, dev[0])])
    np.testing.assert_array_equal(device.asnumpy(dev[0]._value), before)
    assert opt.iterations_count == 0


@pytest.mark.parametrize("name, kwargs", [
    ("Adam", {"learning_rate": 0.01}),       # densified by sparse_rows.scatter_add
    ("Adam", {"learning_rate": 0.01, "global_clipnorm": 0.5}),
    ("Adagrad", {"learning_rate": 0.1, "global_clipnorm": 0.5}),
    ("Adagrad", {"learning_rate": 0.1, "clipnorm": 0.5}),
    ("SGD", {"learning_rate": 0.1, "clipvalue": 0.3}),
])
def test_paths_through_framework_helpers_on_device(device, name, kwargs):
    # Non-lazy Adam and the clipping options go through the framework's
    # device helpers (scatter_add, group_rows, the clip ops) before the
    # kernels; global_clipnorm hands the kernels a grad_scale != 1 and the
    # groups of the indices.
    cls = getattr(sg.optimizers, name)
    host_opt, dev_opt = cls(**kwargs), cls(**kwargs)
    host, dev = _train_both(host_opt, dev_opt, device, np.float32, 2)
    _compare(host_opt, dev_opt, host, dev, device, True)


def test_state_saved_on_device_loads_on_device(device, tmp_path):
    opt = sg.optimizers.Adam(0.01, lazy=True)
    _, dev = _variables(device, np.float32)
    opt.apply_gradients(zip(_gradients(0, np.float32, device.asarray), dev))
    opt.save_state(tmp_path / "state.npz")
    restored = sg.optimizers.Adam(0.01, lazy=True)
    restored.load_state(tmp_path / "state.npz", dev)
    for var in dev:
        for saved, loaded in zip(opt.get_state(var), restored.get_state(var)):
            if saved is None:
                assert loaded is None
                continue
            assert type(loaded._value) is type(var._value)
            np.testing.assert_array_equal(device.asnumpy(loaded._value),
                                          device.asnumpy(saved._value))
    assert restored.iterations_count == 1


HALF_CASES = [
    ("Adagrad", {"learning_rate": 0.1}),
    ("RowwiseAdagrad", {"learning_rate": 0.1}),
    ("Adam", {"learning_rate": 0.01, "lazy": True}),
    ("AdamW", {"learning_rate": 0.01, "lazy": True, "weight_decay": 0.1}),
    ("Ftrl", {"learning_rate": 0.1, "l1_regularization_strength": 0.01}),
    ("RMSprop", {"learning_rate": 0.01, "momentum": 0.5, "centered": True}),
    ("Lamb", {"learning_rate": 0.01, "lazy": True}),
]


@pytest.mark.parametrize("stochastic", (False, True), ids=("nearest", "stochastic"))
@pytest.mark.parametrize("half_slots", (False, True), ids=("f32slots", "halfslots"))
@pytest.mark.parametrize("name, kwargs", HALF_CASES,
                         ids=[n for n, _ in HALF_CASES])
def test_mixed_precision_steps_on_device_match_cpu(device, name, kwargs,
                                                   half_slots, stochastic):
    # float16 tables (bfloat16 device arrays need CuPy 14 with ml_dtypes):
    # float32 arithmetic through copies of the rows on the device, stored
    # back rounded once, with the host's fused kernels' bits
    dtype = np.dtype(np.float16)
    cls = getattr(sg.optimizers, name)
    extra = {"stochastic_rounding": stochastic, "seed": 5,
             "slot_dtype": dtype if half_slots else None}
    host_opt, dev_opt = cls(**kwargs, **extra), cls(**kwargs, **extra)
    host, dev = _train_both(host_opt, dev_opt, device, dtype, 3)
    for hv, dv in zip(host, dev):
        assert dv.dtype == dtype
        states = [(hv._value, dv._value)] + [
            (hs._value, ds._value) for hs, ds in zip(host_opt.get_state(hv),
                                                     dev_opt.get_state(dv))
            if hs is not None]
        for want, got in states:
            np.testing.assert_array_equal(device.asnumpy(got).view(np.uint8),
                                          want.view(np.uint8))
