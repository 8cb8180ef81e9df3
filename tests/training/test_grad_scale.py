"""The gradient scale of the optimizer path (``Spec.prepare_trusted(...,
grad_scale=s)``): the kernels multiply each gradient element by s as they read
it.

The update must be bit for bit the one of the same op on the explicitly scaled
copy ``grad * np.asarray(s, dtype)``, on every kernel driver (dense, sparse by
hash part, sparse by row, coalescing or not, the R == 1 scalar functions, and
the deduplicating path beyond the by-row drivers' limit), for any thread count
and either kernel build; and no scaled copy of the gradient may be allocated.
"""

import inspect
import tracemalloc

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad._kernels import training as baseline_kernels
from sparsegrad.training import training_ops
from sparsegrad.training.training_ops import core

# A valid value of every hyper-parameter argument of the raw ops.
HYPER_VALUES = {
    "alpha": 0.1, "lr": 0.1, "l1": 0.05, "l2": 0.2, "rho": 0.9, "epsilon": 1e-6,
    "momentum": 0.9, "beta1_power": 0.729, "beta2_power": 0.997, "beta1": 0.9,
    "beta2": 0.999, "global_step": 7, "l2_shrinkage": 0.1, "lr_power": -0.5,
    "logbase": 0.69, "sign_decay": 0.5, "beta": 0.9, "use_nesterov": True,
    "update_slots": True, "multiply_linear_by_lr": True,
}
# Nadam's step-dependent scalars.
HYPER_VALUES.update(u_t=0.468, u_t_1=0.47, u_product=0.25)
# The arguments of a raw op that are not hyper-parameters.
NOT_HYPER = {"var", "grad", "delta", "indices", "use_locking", "coalesce_duplicates"}
SIGNED_SLOTS = {"linear", "m", "mg", "mom", "gradient_accumulator"}
# 0.3 is not exact in float32: the scale is rounded to the value type first.
SCALES = (0.3, 0.0, -1.75)


def _specs():
    """{public op name: (spec, hyper-parameter arguments)} of every raw op."""
    found = {}
    for module in (m for m in vars(training_ops).values()
                   if inspect.ismodule(m) and m is not core):
        for attr, spec in vars(module).items():
            if isinstance(spec, core.Spec):
                name = attr.lower()
                params = inspect.signature(getattr(module, name)).parameters
                args = {p: HYPER_VALUES[p] for p in params
                        if p not in NOT_HYPER and p not in spec.slots}
                found[name] = (spec, args)
    return found


SPECS = _specs()
SPARSE = sorted(name for name, (spec, _) in SPECS.items() if spec.sparse)
DENSE = sorted(name for name, (spec, _) in SPECS.items() if not spec.sparse)


class _Spy:
    """A kernel module that records the drivers called."""

    def __init__(self, module):
        self._module = module
        self.called = []

    def __getattr__(self, name):
        attr = getattr(self._module, name)
        if not name.startswith(("dense_", "sparse_")):
            return attr

        def driver(*args):
            self.called.append(name)
            return attr(*args)

        return driver


def _modules():
    modules = [baseline_kernels]
    if core.kernels() is not baseline_kernels:
        modules.append(core.kernels())      # the AVX2 build
    return modules


MODULES = {module.__name__.rsplit(".", 1)[1]: module for module in _modules()}


def _state(spec, shape, dtype, rng):
    """var and the slots of `spec`, as Variables, for a var of `shape`."""
    var = sg.Variable(rng.normal(size=shape).astype(dtype))
    slots = []
    for name in spec.slots:
        slot_shape = shape[:1] if spec.rowwise else shape
        if name in SIGNED_SLOTS:
            value = 0.1 * rng.normal(size=slot_shape)
        else:
            value = rng.uniform(0.5, 1.5, size=slot_shape)
        slots.append(sg.Variable(value.astype(dtype)))
    return var, slots


def _bits(array):
    return array.view(np.uint32 if array.dtype == np.float32 else np.uint64)


def _step(spec, args, state, grad, indices, scale, coalesce):
    var, slots = state
    spec.prepare_trusted(var, slots, grad, indices, dict(args),
                         grad_scale=scale).run(coalesce=coalesce)


def _check_scaled_step(spec, args, shape, dtype, grad, indices, coalesce, seed):
    """The step scaled in the kernels against the step on a scaled copy."""
    for s in SCALES:
        s = float(np.asarray(s, dtype))
        fused = _state(spec, shape, dtype, np.random.default_rng(seed))
        copied = _state(spec, shape, dtype, np.random.default_rng(seed))
        _step(spec, args, fused, grad, indices, s, coalesce)
        _step(spec, args, copied, grad * np.asarray(s, dtype), indices, 1.0,
              coalesce)
        for name, a, b in zip(("var", *spec.slots), (fused[0], *fused[1]),
                              (copied[0], *copied[1])):
            np.testing.assert_array_equal(_bits(a.numpy()), _bits(b.numpy()),
                                          err_msg=f"{name}, grad_scale={s!r}")


# (n_rows, R, n occurrences): R == 1 (scalar functions) with enough work for
# two threads, narrow and wide rows, and a call too small for a second thread.
SPARSE_SHAPES = [(400, 1, 33000), (300, 8, 5000), (300, 24, 2000), (50, 3, 40)]


@pytest.mark.parametrize("module", sorted(MODULES))
@pytest.mark.parametrize(
    "driver, coalesce, n_threads",
    [("hash", False, 1), ("hash", False, 2), ("by_row", False, 2),
     ("by_row", True, 1), ("by_row", True, 2)],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", SPARSE)
def test_sparse_scaled_step_matches_a_scaled_copy(op, dtype, driver, coalesce,
                                                  n_threads, module, monkeypatch):
    spec, args = SPECS[op]
    # The by-row drivers run where rows are narrower than _NARROW_ROW (on
    # several threads) or to coalesce: force the driver either way.
    monkeypatch.setattr(core.spec, "_NARROW_ROW", 0 if driver == "hash" else 1 << 30)
    sg.set_num_threads(n_threads)
    spy = _Spy(MODULES[module])
    rng = np.random.default_rng(7)
    with core.use_kernels(spy):
        for n_rows, width, n in SPARSE_SHAPES:
            shape = (n_rows, width) if width > 1 else (n_rows,)
            indices = rng.integers(0, n_rows, size=n)       # many repeats
            grad = rng.normal(size=(n,) + shape[1:]).astype(dtype)
            _check_scaled_step(spec, args, shape, dtype, grad, indices, coalesce,
                               seed=n)
    # row-wise Adagrad coalesces on groups it makes (four rows at a time)
    wanted = spec.driver + ("_grouped" if spec.rowwise and coalesce else
                            "_by_row" if driver == "by_row" else "")
    assert set(spy.called) == {wanted}


@pytest.mark.parametrize("coalesce", [False, True])
@pytest.mark.parametrize("op", SPARSE)
def test_sparse_scaled_step_beyond_the_by_row_limit(op, coalesce, monkeypatch):
    # Beyond the by-row drivers' int32 links the duplicates are summed first:
    # the sums must be those of the scaled rows.  The limit is lowered here.
    spec, args = SPECS[op]
    monkeypatch.setattr(core.spec, "_BY_ROW_MAX_N", 100)
    rng = np.random.default_rng(8)
    for dtype in (np.float32, np.float64):
        indices = rng.integers(0, 60, size=500)
        grad = rng.normal(size=(500, 5)).astype(dtype)
        _check_scaled_step(spec, args, (60, 5), dtype, grad, indices, coalesce,
                           seed=9)


@pytest.mark.parametrize("module", sorted(MODULES))
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", DENSE)
def test_dense_scaled_step_matches_a_scaled_copy(op, dtype, n_threads, module):
    spec, args = SPECS[op]
    sg.set_num_threads(n_threads)
    spy = _Spy(MODULES[module])
    rng = np.random.default_rng(10)
    # Several chunks of the dense drivers, on two threads, and a last one
    # that ends in a partial piece; a single small chunk; a scalar variable.
    shapes = [(3000, 20), (7, 5), (5, 1)] if spec.rowwise else [(200, 205), (7, 5), ()]
    with core.use_kernels(spy):
        for shape in shapes:
            grad = rng.normal(size=shape).astype(dtype)
            _check_scaled_step(spec, args, shape, dtype, grad, None, False, seed=11)
    assert set(spy.called) == {spec.driver}


def test_unscaled_step_is_the_public_op(rng):
    # grad_scale=1.0, the default, is the raw op as it is.
    spec, args = SPECS["sparse_apply_adagrad_v2"]
    indices = np.array([3, 0, 3, 5, 3])
    grad = rng.normal(size=(5, 4)).astype(np.float32)
    var, (accum,) = _state(spec, (6, 4), np.float32, np.random.default_rng(1))
    want_var, want_accum = var.numpy().copy(), accum.numpy().copy()
    training_ops.sparse_apply_adagrad_v2(want_var, want_accum, grad=grad,
                                         indices=indices, **args)
    spec.prepare_trusted(var, [accum], grad, indices, args).run(coalesce=False)
    np.testing.assert_array_equal(_bits(var.numpy()), _bits(want_var))
    np.testing.assert_array_equal(_bits(accum.numpy()), _bits(want_accum))


def _peak_of(run):
    tracemalloc.start()
    try:
        run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("coalesce", [False, True])
def test_scaled_sparse_step_makes_no_scaled_copy(coalesce, n_threads):
    # A copy of the 16,384 x 64 float32 gradient would be 4 MiB; the per-thread
    # row buffers are 256 bytes each.  (A first step sizes the by-row drivers'
    # cached scratch.)
    spec, args = SPECS["sparse_apply_adagrad_v2"]
    sg.set_num_threads(n_threads)
    rng = np.random.default_rng(12)
    var = sg.Variable(np.zeros((200_000, 64), np.float32))
    accum = sg.Variable(np.full((200_000, 64), 0.1, np.float32))
    grad = rng.normal(size=(16_384, 64)).astype(np.float32)
    indices = rng.integers(0, 200_000, size=16_384)
    s = float(np.float32(0.3))
    step = spec.prepare_trusted(var, [accum], grad, indices, args, grad_scale=s)
    step.run(coalesce=coalesce)
    peak = _peak_of(lambda: spec.prepare_trusted(
        var, [accum], grad, indices, args, grad_scale=s).run(coalesce=coalesce))
    assert peak < 1 << 20, f"peak allocation {peak / 2**20:.2f} MiB"


@pytest.mark.parametrize("n_threads", [1, 2])
def test_scaled_dense_step_makes_no_scaled_copy(n_threads):
    # A copy of the 1,048,576-element float32 gradient would be 4 MiB; the
    # per-thread buffers hold 256 elements each.
    spec, args = SPECS["apply_adagrad_v2"]
    sg.set_num_threads(n_threads)
    var = sg.Variable(np.zeros((1024, 1024), np.float32))
    accum = sg.Variable(np.full((1024, 1024), 0.1, np.float32))
    grad = np.random.default_rng(13).normal(size=(1024, 1024)).astype(np.float32)
    peak = _peak_of(lambda: spec.prepare_trusted(
        var, [accum], grad, None, args, grad_scale=float(np.float32(0.3))).run())
    assert peak < 1 << 20, f"peak allocation {peak / 2**20:.2f} MiB"
