"""The CUDA training kernels (sparsegrad/_cuda/training.cu) against the
Cython ones, bit for bit, and the raw training ops on device arrays.

Each kernel test runs the same update on the same inputs with the Cython
module (numpy arrays, one thread) and with its CUDA twin (device arrays), and
compares var and every slot with ``assert_array_equal``: the kernels mirror
the CPU's arithmetic (no FMA, the same parenthesisation and roundings), so
the bits are equal.  The exceptions, compared with a tolerance, are the
updates that call pow or exp (CUDA's libdevice against glibc may differ in
the last bits): FTRL with lr_power != -0.5, FTRL's sparse R == 1 function
(it calls pow even for lr_power == -0.5), and PowerSign.

The half section at the end does the same for float16 and bfloat16
(``sparsegrad._cuda.training_half`` against ``sparsegrad._kernels.
training_half``, on the arrays' uint16 bits), and runs the raw ops on device
half arrays against the host.
"""

import inspect

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad import training_ops
from sparsegrad._cuda import sort as gpu_sort
from sparsegrad._cuda import training as gpu
from sparsegrad._cuda import training_half as gpu_half
from sparsegrad._kernels import training as cpu
from sparsegrad._kernels import training_half as cpu_half
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework import sparse_rows
from sparsegrad.framework.backend import backend_of
from sparsegrad.framework.dtypes import BFLOAT16
from sparsegrad.training import training_ops as raw_ops
from sparsegrad.training.training_ops import core

DTYPES = (np.float32, np.float64)
N_ROWS = 6
# Occurrences of the sparse updates: duplicates (row 2 three times, row 4
# twice) and rows never touched.
INDICES = np.array([2, 4, 0, 2, 5, 2, 4], dtype=np.int64)

# The hyper-parameters of the tests, by name (rounded to the value type).
HP = {"alpha": 0.1, "lr": 0.05, "l1": 0.01, "l2": 0.02, "rho": 0.9, "epsilon": 1e-3,
      "update_slots": 1.0, "global_step": 3.0, "l2_shrinkage": 0.01,
      "lr_power": -0.5, "multiply_linear_by_lr": 0.0, "is_v2": 0.0,
      "momentum": 0.9, "use_nesterov": 0.0, "beta1": 0.9, "beta2": 0.999,
      "logbase": 0.7, "sign_decay": 0.9, "beta": 0.9}
# Nadam's step-dependent scalars (step 2), and Lamb's powers.
HP.update(u_t=0.9 * (1 - 0.5 * 0.96**2), u_t_1=0.9 * (1 - 0.5 * 0.96**3),
          u_product=0.2, beta2_power=0.999**2, beta1_power=0.9**2)
# Further settings of the ops whose row functions branch on them.
VARIANTS = {
    "proximal_gradient_descent": [{}, {"l1": 0.0}],
    "adagrad": [{}, {"update_slots": 0.0}],
    "adagrad_v2": [{}, {"update_slots": 0.0}],
    "proximal_adagrad": [{}, {"l1": 0.0}],
    "adagrad_da": [{}, {"l1": 0.0}],
    "ftrl": [{}, {"multiply_linear_by_lr": 1.0, "is_v2": 1.0},
             {"is_v2": 1.0}, {"lr_power": -0.6, "multiply_linear_by_lr": 1.0}],
    "momentum": [{}, {"use_nesterov": 1.0}],
    "keras_momentum": [{}, {"use_nesterov": 1.0}],
    "adam": [{}, {"use_nesterov": 1.0}],
}
SPARSE_OPS = [op for op in cpu.HYPERPARAMETERS if hasattr(cpu, f"sparse_{op}")]
# (dense_rowwise_adagrad has a signature of its own: tested on its own)
DENSE_OPS = [op for op in cpu.HYPERPARAMETERS
             if hasattr(cpu, f"dense_{op}") and op != "rowwise_adagrad"]


def _cases(ops):
    return [pytest.param(op, k, id=f"{op}-{k}")
            for op in ops for k in range(len(VARIANTS.get(op, [{}])))]


def _hp(op, variant, dtype):
    values = dict(HP, **VARIANTS.get(op, [{}])[variant])
    return np.array([float(dtype(values[name])) for name in cpu.HYPERPARAMETERS[op]])


def _exact(op, variant, sparse, R):
    """False where the update calls pow or exp (see the module docstring)."""
    if op == "power_sign":
        return False
    if op == "ftrl":
        lr_power = dict(HP, **VARIANTS["ftrl"][variant])["lr_power"]
        return lr_power == -0.5 and not (sparse and R == 1)
    return True


def _assert_same(cpu_arrays, device_arrays, device, exact, dtype):
    for want, got in zip(cpu_arrays, device_arrays):
        got = device.asnumpy(got)
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            # pow/exp: libdevice and glibc may differ in the last bits.
            tight = dtype == np.float64
            np.testing.assert_allclose(got, want, rtol=1e-10 if tight else 2e-5,
                                       atol=1e-12 if tight else 1e-6)


def _state(op, R, dtype, seed):
    """var and three slots (row-wise Adagrad: one accumulator, three times),
    and a gradient of one row per index, a zero among its elements."""
    rng = np.random.default_rng(seed)
    var = rng.uniform(-1, 1, (N_ROWS, R)).astype(dtype)
    if op == "rowwise_adagrad":
        accum = rng.uniform(0.1, 1.0, (N_ROWS, 1)).astype(dtype)
        slots = [accum] * 3
    else:
        slots = [rng.uniform(0.1, 1.0, (N_ROWS, R)).astype(dtype) for _ in range(3)]
    grad = rng.uniform(-1, 1, (INDICES.shape[0], R)).astype(dtype)
    grad[1, 0] = 0
    return var, slots, grad


def _to_device(device, arrays):
    out, seen = [], {}
    for a in arrays:                  # the same array stays one device array
        if id(a) not in seen:
            seen[id(a)] = device.asarray(a)
        out.append(seen[id(a)])
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op, variant", _cases(SPARSE_OPS))
def test_sparse_kernels_match_cpu(device, op, variant, dtype):
    hp = _hp(op, variant, dtype)
    odd = float(dtype(0.3))           # a factor whose products round
    for R in (1, 3):
        exact = _exact(op, variant, True, R)
        n = INDICES.shape[0]
        scratch = np.empty(max(1, cpu.by_row_scratch_size(n, R, 1)), np.int32)
        groups = sparse_rows.group_rows(INDICES, N_ROWS - 1)
        runs = [
            # (name, CPU extra arguments, device extra arguments)
            ("", (INDICES, hp, 1.0, 1), lambda d: (d, hp, 1.0, 1)),
            ("", (INDICES, hp, odd, 1), lambda d: (d, hp, odd, 1)),
            ("_by_row", (INDICES, hp, odd, False, 1, scratch),
             lambda d: (d, hp, odd, False, 1, None)),
            ("_by_row", (INDICES, hp, 1.0, True, 1, scratch),
             lambda d: (d, hp, 1.0, True, 1, None)),
            ("_grouped", (*groups, hp, odd, 1),
             lambda d: (*gpu_sort.group_rows(d), hp, odd, 1)),
        ]
        for suffix, cpu_extra, device_extra in runs:
            var, slots, grad = _state(op, R, dtype, seed=R)
            arrays = [var, *slots]
            dev = _to_device(device, arrays + [grad])
            dev_indices = device.asarray(INDICES)
            getattr(cpu, f"sparse_{op}{suffix}")(*arrays, grad, *cpu_extra)
            getattr(gpu, f"sparse_{op}{suffix}")(*dev, *device_extra(dev_indices))
            _assert_same(arrays, dev[:4], device, exact, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op, variant", _cases(DENSE_OPS))
def test_dense_kernels_match_cpu(device, op, variant, dtype):
    hp = _hp(op, variant, dtype)
    exact = _exact(op, variant, False, 3)
    for scale in (1.0, float(dtype(0.3))):
        var, slots, _ = _state(op, 3, dtype, seed=7)
        grad = np.random.default_rng(8).uniform(-1, 1, var.shape).astype(dtype)
        grad[0, 1] = 0
        arrays = [a.reshape(-1) for a in (var, *slots)]
        dev = _to_device(device, arrays + [grad.reshape(-1)])
        getattr(cpu, f"dense_{op}")(*arrays, grad.reshape(-1), hp, scale, 1)
        getattr(gpu, f"dense_{op}")(*dev, hp, scale, 1)
        _assert_same(arrays, dev[:4], device, exact, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (1, 5))
def test_dense_rowwise_adagrad_matches_cpu(device, R, dtype):
    hp = _hp("rowwise_adagrad", 0, dtype)
    for scale in (1.0, float(dtype(0.3))):
        var, (accum, _, _), _ = _state("rowwise_adagrad", R, dtype, seed=3)
        grad = np.random.default_rng(4).uniform(-1, 1, var.shape).astype(dtype)
        d_var, d_accum, d_grad = _to_device(device, [var, accum, grad])
        cpu.dense_rowwise_adagrad(var, accum, grad, hp, scale, 1)
        gpu.dense_rowwise_adagrad(d_var, d_accum, d_grad, hp, scale, 1)
        _assert_same([var, accum], [d_var, d_accum], device, True, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dense_lamb_over_several_chunks(device, dtype):
    # Three chunks of the whole-variable norms (SG_LAMB_CHUNK = 8192 values),
    # the last one partial: the chunks' sums are added in order.
    hp = _hp("lamb", 0, dtype)
    rng = np.random.default_rng(21)
    var, m, v, grad = (rng.uniform(0.1, 1, 2 * 8192 + 300).astype(dtype)
                       for _ in range(4))
    for scale in (1.0, float(dtype(0.3))):
        dev = _to_device(device, [var, m, v, grad])
        cpu.dense_lamb(var, m, v, var, grad, hp, scale, 2)
        gpu.dense_lamb(dev[0], dev[1], dev[2], dev[0], dev[3], hp, scale, 2)
        _assert_same([var, m, v], dev[:3], device, True, dtype)


def test_wide_rows_span_several_passes_of_the_block(device):
    # R > 256: each thread of a block owns several columns; the row-wise
    # reduction sums more columns than the block has threads.
    R = 300
    for op in ("gradient_descent", "rowwise_adagrad", "lamb"):
        hp = _hp(op, 0, np.float32)
        var, slots, grad = _state(op, R, np.float32, seed=11)
        arrays = [var, *slots]
        dev = _to_device(device, arrays + [grad])
        scratch = np.empty(max(1, cpu.by_row_scratch_size(7, R, 1)), np.int32)
        getattr(cpu, f"sparse_{op}_by_row")(*arrays, grad, INDICES, hp, 1.0, True, 1,
                                            scratch)
        getattr(gpu, f"sparse_{op}_by_row")(*dev, device.asarray(INDICES), hp, 1.0,
                                            True, 1, None)
        _assert_same(arrays, dev[:4], device, True, np.float32)


# A hot row: 19 occurrences of row 1 among others (two full batches of the
# kernels' SG_UNROLL = 8 loads ahead, then a partial one).
HOT = np.array([1, 3, 1, 1, 0, 1, 1, 1, 1, 5, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1,
                1, 1, 3, 1], dtype=np.int64)


def _by_row_both(device, op, dtype, seed, grad, indices, hp, scale, coalesce,
                 scratch, exact):
    """The row-wise kernel of `op` on the CPU and on the device, from the same
    state (``_state`` of `seed`, as wide as `grad`): the same results."""
    var, slots, _ = _state(op, grad.shape[1], dtype, seed=seed)
    arrays = [var, *slots]
    dev = _to_device(device, arrays + [grad])
    getattr(cpu, f"sparse_{op}_by_row")(*arrays, grad, indices, hp, scale,
                                        coalesce, 1, scratch)
    getattr(gpu, f"sparse_{op}_by_row")(*dev, device.asarray(indices), hp, scale,
                                        coalesce, 1, None)
    _assert_same(arrays, dev[:4], device, exact, dtype)


@pytest.mark.parametrize("heavy_min", (gpu.HEAVY_MIN, 2))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", SPARSE_OPS)
def test_hot_row_occurrences_in_order(device, op, dtype, heavy_min, monkeypatch):
    # The loads of a row's occurrences run ahead in batches; the updates (or
    # the coalesced sum) must still take them one after another, in order.
    # heavy_min 2: the rows met more than once go to the heavy kernel (tiles
    # in shared memory), every op through it.
    monkeypatch.setattr(gpu, "HEAVY_MIN", heavy_min)
    hp = _hp(op, 0, dtype)
    odd = float(dtype(0.3))
    n = HOT.shape[0]
    for R in (1, 3):
        exact = _exact(op, 0, True, R)
        scratch = np.empty(max(1, cpu.by_row_scratch_size(n, R, 1)), np.int32)
        for scale, coalesce in ((1.0, False), (odd, False), (odd, True)):
            grad = np.random.default_rng(R).uniform(-1, 1, (n, R)).astype(dtype)
            _by_row_both(device, op, dtype, R + 20, grad, HOT, hp, scale, coalesce,
                         scratch, exact)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ("adagrad_v2", "adam", "ftrl"))
def test_heavy_rows_stream_through_tiles(device, op, dtype):
    # Rows of HEAVY_MIN occurrences or more: a block per 16-column chunk
    # (R = 40: chunks of 16, 16 and 8; R = 1: one column), several tiles of
    # occurrences (float64: 128 occurrences of 16 columns a tile), with
    # light rows beside them; each occurrence in order, or their sum.
    rng = np.random.default_rng(9)
    hot = np.concatenate([np.full(600, 2), np.full(gpu.HEAVY_MIN, 5),
                          rng.integers(0, N_ROWS, 40)])
    hot = hot[rng.permutation(hot.shape[0])].astype(np.int64)
    n = hot.shape[0]
    hp = _hp(op, 0, dtype)
    odd = float(dtype(0.3))
    for R in (1, 40):
        scratch = np.empty(max(1, cpu.by_row_scratch_size(n, R, 1)), np.int32)
        for scale, coalesce in ((1.0, False), (odd, True)):
            grad = rng.uniform(-1, 1, (n, R)).astype(dtype)
            _by_row_both(device, op, dtype, R, grad, hot, hp, scale, coalesce,
                         scratch, _exact(op, 0, True, R))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("coalesce", (False, True))
def test_rowwise_wide_hot_row(device, coalesce, dtype):
    # Row-wise Adagrad, R > 256 (two rounds of squares through shared memory)
    # and a hot row, each occurrence applied or the sum once (coalesced: the
    # block's tiles, 16 (float32) or 8 (float64) rows of 256 columns a
    # tile, then 44 columns; row 3's two rows summed per thread); scaled.
    R = 300
    hp = _hp("rowwise_adagrad", 0, dtype)
    hot = np.concatenate([HOT, HOT])    # 38 occurrences of row 1: tiled
    n = hot.shape[0]
    var, slots, _ = _state("rowwise_adagrad", R, dtype, seed=5)
    grad = np.random.default_rng(6).uniform(-1, 1, (n, R)).astype(dtype)
    arrays = [var, *slots]
    dev = _to_device(device, arrays + [grad])
    scratch = np.empty(max(1, cpu.by_row_scratch_size(n, R, 1)), np.int32)
    odd = float(dtype(0.3))
    cpu.sparse_rowwise_adagrad_by_row(*arrays, grad, hot, hp, odd, coalesce, 1,
                                      scratch)
    gpu.sparse_rowwise_adagrad_by_row(*dev, device.asarray(hot), hp, odd, coalesce,
                                      1, None)
    _assert_same(arrays, dev[:4], device, True, dtype)


@pytest.mark.parametrize("R", (1, 100, 256))
def test_many_rows_over_several_blocks(device, R):
    # Narrow rows share a block (BLOCK // R of them): several blocks, and the
    # threads past the last whole row idle.
    rng = np.random.default_rng(R)
    n_rows = 2000 // R
    indices = rng.integers(0, n_rows, 3 * n_rows)
    var, accum = (rng.uniform(0.1, 1, (n_rows, R)) for _ in range(2))
    grad = rng.uniform(-1, 1, (indices.shape[0], R))
    hp = _hp("adagrad", 0, np.float64)
    dev = _to_device(device, [var, accum, grad])
    cpu.sparse_adagrad(var, accum, var, var, grad, indices, hp, 1.0, 1)
    gpu.sparse_adagrad(dev[0], dev[1], dev[0], dev[0], dev[2], device.asarray(indices),
                       hp, 1.0, 1)
    _assert_same([var, accum], dev[:2], device, True, np.float64)


def test_the_tables_match():
    assert gpu.HYPERPARAMETERS == cpu.HYPERPARAMETERS
    for name in dir(cpu):
        if name.startswith(("dense_", "sparse_")):
            assert callable(getattr(gpu, name)), name


# ---------------------------------------------------------------------------
# The raw ops (validation and dispatch in training_ops.core) on device arrays.


def _pair(device, *arrays):
    return [a.copy() for a in arrays], [device.asarray(a) for a in arrays]


@pytest.mark.parametrize("coalesce", (False, True))
def test_sparse_apply_on_device_matches_cpu(device, coalesce):
    rng = np.random.default_rng(5)
    var = rng.uniform(-1, 1, (N_ROWS, 2, 2))          # rows of shape (2, 2)
    accum = rng.uniform(0.1, 1, var.shape)
    grad = rng.uniform(-1, 1, (INDICES.shape[0], 2, 2))
    host, dev = _pair(device, var, accum)
    # (use_locking too: a lock per device buffer)
    training_ops.sparse_apply_adagrad(*host, 0.1, grad, INDICES.astype(np.int32),
                                      use_locking=coalesce,
                                      coalesce_duplicates=coalesce)
    training_ops.sparse_apply_adagrad(*dev, 0.1, device.asarray(grad),
                                      device.asarray(INDICES.astype(np.int32)),
                                      use_locking=coalesce,
                                      coalesce_duplicates=coalesce)
    _assert_same(host, dev, device, True, np.float64)


def test_dense_apply_on_device_matches_cpu(device):
    rng = np.random.default_rng(6)
    var, m, v = (rng.uniform(0, 1, (4, 3)).astype(np.float32) for _ in range(3))
    grad = rng.uniform(-1, 1, var.shape).astype(np.float32)
    host, dev = _pair(device, var, m, v)
    args = (0.9, 0.99, 0.01, 0.9, 0.999, 1e-7)
    training_ops.apply_adam(*host, *args, grad)
    training_ops.apply_adam(*dev, *args, device.asarray(grad))
    _assert_same(host, dev, device, True, np.float32)


def test_rowwise_ops_on_device_match_cpu(device):
    rng = np.random.default_rng(9)
    var = rng.uniform(-1, 1, (N_ROWS, 4))
    accum = rng.uniform(0.1, 1, N_ROWS)
    host, dev = _pair(device, var, accum)
    grad = rng.uniform(-1, 1, (INDICES.shape[0], 4))
    dense = rng.uniform(-1, 1, var.shape)
    training_ops.sparse_apply_rowwise_adagrad(*host, 0.5, 1e-3, grad, INDICES)
    training_ops.sparse_apply_rowwise_adagrad(*dev, 0.5, 1e-3, device.asarray(grad),
                                              device.asarray(INDICES))
    training_ops.apply_rowwise_adagrad(*host, 0.5, 1e-3, dense)
    training_ops.apply_rowwise_adagrad(*dev, 0.5, 1e-3, device.asarray(dense))
    _assert_same(host, dev, device, True, np.float64)


def _raised(fn, *args, **kwargs):
    with pytest.raises(InvalidArgumentError) as info:
        fn(*args, **kwargs)
    return str(info.value)


@pytest.mark.parametrize("bad", (N_ROWS, -1))
def test_out_of_range_index_on_device_raises_and_changes_nothing(device, bad):
    rng = np.random.default_rng(10)
    var = rng.uniform(-1, 1, (N_ROWS, 3))
    accum = rng.uniform(0.1, 1, var.shape)
    grad = rng.uniform(-1, 1, (4, 3))
    indices = np.array([1, 3, bad, 0])
    host, dev = _pair(device, var, accum)
    want = _raised(training_ops.sparse_apply_adagrad, *host, 0.1, grad, indices)
    got = _raised(training_ops.sparse_apply_adagrad, *dev, 0.1, device.asarray(grad),
                  device.asarray(indices))
    assert got == want
    for before, after in zip((var, accum), dev):
        np.testing.assert_array_equal(device.asnumpy(after), before)
    # Keras' momentum raises the gather/scatter text instead.
    want = _raised(training_ops.sparse_apply_keras_momentum, *host, 0.1, grad,
                   indices, 0.9)
    got = _raised(training_ops.sparse_apply_keras_momentum, *dev, 0.1,
                  device.asarray(grad), device.asarray(indices), 0.9)
    assert got == want
    for before, after in zip((var, accum), dev):
        np.testing.assert_array_equal(device.asnumpy(after), before)


def test_empty_indices_on_device_change_nothing(device):
    var = np.ones((3, 2))
    _, dev = _pair(device, var, np.ones_like(var))
    training_ops.sparse_apply_adagrad(*dev, 0.1, device.asarray(np.zeros((0, 2))),
                                      device.asarray(np.zeros(0, np.int64)))
    np.testing.assert_array_equal(device.asnumpy(dev[0]), var)


def test_host_gradient_for_a_device_variable_raises(device):
    var = np.ones((3, 2))
    dev = device.asarray(var)
    with pytest.raises(ValueError, match="mix numpy"):
        training_ops.apply_gradient_descent(dev, 0.1, np.ones((3, 2)))
    with pytest.raises(ValueError, match="mix numpy"):
        training_ops.sparse_apply_adagrad(dev, device.asarray(var), 0.1,
                                          device.asarray(np.ones((1, 2))),
                                          np.array([0]))
    np.testing.assert_array_equal(device.asnumpy(dev), var)


# ---------------------------------------------------------------------------
# float16 and bfloat16: the CUDA twin of the half kernels against the host's,
# on the arrays' bits (CuPy arrays of uint16 on the device, as the ops pass).

HALF = (np.dtype(np.float16), BFLOAT16)
HALF_IDS = ("float16", "bfloat16")
_U16 = np.uint16


def _half_hp(op, variant, dtype):
    return _hp(op, variant, dtype.type)


def _bits_of(arrays):
    """The uint16 views of half arrays (one view per distinct array, so that
    aliases stay aliases on the device)."""
    seen = {}
    return [seen.setdefault(id(a), a.view(_U16)) for a in arrays]


def _assert_same_half(want_bits, device_arrays, device, exact, dtype):
    for want, got in zip(want_bits, device_arrays):
        got = device.asnumpy(got)
        if exact:
            # the bits, but any NaN for a NaN: a GPU's arithmetic makes its
            # own NaN (0x7fffffff), an x86 CPU's its negative default NaN
            nan = np.isnan(got.view(dtype)) & np.isnan(want.view(dtype))
            np.testing.assert_array_equal(np.where(nan, 0, got), np.where(nan, 0, want))
        else:
            # pow/exp: libdevice and glibc may differ in the last bits of the
            # float, which may round to a neighbouring half value.
            eps = 2.0 ** (-10 if dtype == np.float16 else -7)
            np.testing.assert_allclose(got.view(dtype).astype(np.float32),
                                       want.view(dtype).astype(np.float32),
                                       rtol=4 * eps, atol=4 * eps)


def _host_half_sparse(op, bits, grad, indices, hp, dtype, scale, coalesce):
    """The host's half update (training_ops' _run_half on the host): the
    gradient scaled by NumPy first, duplicates summed first (in the storage
    type, in order, from zero), then each row applied."""
    if scale != 1.0:
        grad = grad * dtype.type(scale)
    if coalesce:
        unique, where = np.unique(indices, return_inverse=True)
        sums = np.zeros((unique.shape[0], grad.shape[1]), dtype)
        np.add.at(sums, where.reshape(-1), grad)
        indices, grad = unique, sums
    getattr(cpu_half, f"sparse_{op}")(*bits, grad.view(_U16), indices, hp,
                                      dtype == BFLOAT16, 1)


def _sparse_half_both(device, op, dtype, seed, grad, indices, hp, scale, coalesce,
                      exact):
    """The half update of `op` on the host and on the device from the same
    state (``_state`` of `seed`, as wide as `grad`): the same bits."""
    var, slots, _ = _state(op, grad.shape[1], dtype, seed=seed)
    bits = _bits_of([var, *slots])
    dev = _to_device(device, bits + [grad.view(_U16)])
    _host_half_sparse(op, bits, grad, indices, hp, dtype, scale, coalesce)
    getattr(gpu_half, f"sparse_{op}")(*dev, device.asarray(indices), hp,
                                      dtype == BFLOAT16, 1, grad_scale=scale,
                                      coalesce=coalesce)
    _assert_same_half(bits, dev[:4], device, exact, dtype)


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("op, variant", _cases(SPARSE_OPS))
def test_half_sparse_kernels_match_cpu(device, op, variant, dtype):
    # Each occurrence in order (duplicates: rows 2 and 4), R == 1 (the
    # scalar functions) and R == 3; the device's own scale and coalescing
    # against the host's NumPy pre-pass.
    hp = _half_hp(op, variant, dtype)
    odd = float(dtype.type(0.3))         # a factor whose products round
    for R in (1, 3):
        exact = _exact(op, variant, True, R)
        grad = np.random.default_rng(R).uniform(-1, 1, (INDICES.shape[0], R))
        grad = grad.astype(dtype)
        grad[1, 0] = 0
        for scale, coalesce in ((1.0, False), (odd, False), (1.0, True),
                                (odd, True)):
            _sparse_half_both(device, op, dtype, R, grad, INDICES, hp, scale,
                              coalesce, exact)


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("op, variant", _cases(DENSE_OPS))
def test_half_dense_kernels_match_cpu(device, op, variant, dtype):
    hp = _half_hp(op, variant, dtype)
    exact = _exact(op, variant, False, 3)
    bf16 = dtype == BFLOAT16
    for scale in (1.0, float(dtype.type(0.3))):
        var, slots, _ = _state(op, 3, dtype, seed=7)
        grad = np.random.default_rng(8).uniform(-1, 1, var.shape).astype(dtype)
        grad[0, 1] = 0
        bits = _bits_of([a.reshape(-1) for a in (var, *slots)])
        dev = _to_device(device, bits + [grad.reshape(-1).view(_U16)])
        host_grad = grad if scale == 1.0 else grad * dtype.type(scale)
        args = [host_grad.reshape(-1).view(_U16), hp, bf16, 1]
        if op == "lamb":
            args.append(np.empty(cpu_half.lamb_sums_size(var.size)))
        getattr(cpu_half, f"dense_{op}")(*bits, *args)
        getattr(gpu_half, f"dense_{op}")(*dev, hp, bf16, 1, grad_scale=scale)
        _assert_same_half(bits, dev[:4], device, exact, dtype)


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("R", (1, 5, 300))
def test_half_dense_rowwise_adagrad_matches_cpu(device, R, dtype):
    # R = 300: more columns than the block has threads (two rounds of squares)
    hp = _half_hp("rowwise_adagrad", 0, dtype)
    bf16 = dtype == BFLOAT16
    for scale in (1.0, float(dtype.type(0.3))):
        var, (accum, _, _), _ = _state("rowwise_adagrad", R, dtype, seed=3)
        grad = np.random.default_rng(4).uniform(-1, 1, var.shape).astype(dtype)
        bits = _bits_of([var, accum])
        dev = _to_device(device, bits + [grad.view(_U16)])
        host_grad = grad if scale == 1.0 else grad * dtype.type(scale)
        cpu_half.dense_rowwise_adagrad(*bits, host_grad.view(_U16), hp, bf16, 1)
        gpu_half.dense_rowwise_adagrad(*dev, hp, bf16, 1, grad_scale=scale)
        _assert_same_half(bits, dev[:2], device, True, dtype)


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
def test_half_dense_lamb_over_several_chunks(device, dtype):
    # Three chunks of the whole-variable norms (SG_LAMB_CHUNK = 8192 values),
    # the last one partial; the device's own sums buffer and one made there.
    hp = _half_hp("lamb", 0, dtype)
    bf16 = dtype == BFLOAT16
    rng = np.random.default_rng(21)
    var, m, v, grad = (rng.uniform(0.1, 1, 2 * 8192 + 300).astype(dtype)
                       for _ in range(4))
    for sums in (None, "device"):
        bits = _bits_of([var, m, v])
        dev = _to_device(device, bits + [grad.view(_U16)])
        n_sums = cpu_half.lamb_sums_size(var.size)
        assert gpu_half.lamb_sums_size(var.size) == n_sums == 6
        cpu_half.dense_lamb(*bits, bits[0], grad.view(_U16), hp, bf16, 2,
                            np.empty(n_sums))
        gpu_half.dense_lamb(dev[0], dev[1], dev[2], dev[0], dev[3], hp, bf16, 2,
                            None if sums is None else device.xp.empty(n_sums))
        _assert_same_half(bits, dev[:3], device, True, dtype)


@pytest.mark.parametrize("heavy_min", (gpu.HEAVY_MIN, 2))
@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("op", SPARSE_OPS)
def test_half_hot_row_occurrences_in_order(device, op, dtype, heavy_min,
                                           monkeypatch):
    # As test_hot_row_occurrences_in_order: batches of loads ahead, and with
    # heavy_min 2 every repeated row through the heavy kernel's tiles (which
    # hold the half values as floats).
    monkeypatch.setattr(gpu, "HEAVY_MIN", heavy_min)
    hp = _half_hp(op, 0, dtype)
    odd = float(dtype.type(0.3))
    n = HOT.shape[0]
    for R in (1, 3):
        exact = _exact(op, 0, True, R)
        grad = np.random.default_rng(R).uniform(-1, 1, (n, R)).astype(dtype)
        for scale, coalesce in ((1.0, False), (odd, False), (odd, True)):
            _sparse_half_both(device, op, dtype, R + 20, grad, HOT, hp, scale,
                              coalesce, exact)


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("op", ("adagrad_v2", "adam", "ftrl", "rowwise_adagrad",
                                "lamb"))
def test_half_heavy_rows_stream_through_tiles(device, op, dtype):
    # Rows of HEAVY_MIN occurrences or more beside light ones: 16-column
    # chunks (R = 40), several tiles of occurrences (4096 values a tile),
    # each occurrence in order or their sum (row-wise Adagrad: the block's
    # tiled column sums of a coalesced hot row).
    rng = np.random.default_rng(9)
    hot = np.concatenate([np.full(600, 2), np.full(gpu.HEAVY_MIN, 5),
                          rng.integers(0, N_ROWS, 40)])
    hot = hot[rng.permutation(hot.shape[0])].astype(np.int64)
    hp = _half_hp(op, 0, dtype)
    odd = float(dtype.type(0.3))
    for R in (1, 40):
        grad = rng.uniform(-1, 1, (hot.shape[0], R)).astype(dtype)
        for scale, coalesce in ((1.0, False), (odd, True)):
            _sparse_half_both(device, op, dtype, R, grad, hot, hp, scale, coalesce,
                              _exact(op, 0, True, R))


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("coalesce", (False, True))
@pytest.mark.parametrize("op", ("gradient_descent", "rowwise_adagrad", "lamb"))
def test_half_wide_rows(device, op, coalesce, dtype):
    # R > 256: each thread owns several columns, the row-wise sums span two
    # rounds of the block; a hot row (38 occurrences: tiled when coalesced).
    hot = np.concatenate([HOT, HOT])
    grad = np.random.default_rng(6).uniform(-1, 1, (hot.shape[0], 300))
    _sparse_half_both(device, op, dtype, 5, grad.astype(dtype), hot,
                      _half_hp(op, 0, dtype), float(dtype.type(0.3)), coalesce,
                      True)


def _special_floats():
    """float32 values at the edges of the half types: rounding ties and their
    neighbours, denormals, overflow, infinities, zeros, NaNs with payloads,
    and random values."""
    bits = [0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
            0xffc00001, 0x7f800001, 0x7fa00000, 0x7fbfffff, 0x477fe000,
            0x477ff000, 0x477fefff, 0x7f7fffff, 0x33000000, 0x33000001,
            0x337fffff, 0x38800000, 0x387fffff, 0x00000001, 0x807fffff]
    x = np.array(bits, dtype=np.uint32).view(np.float32)
    rng = np.random.default_rng(12)
    # floats whose low 16 bits are clear (from float16's denormals to past
    # its largest value), plus float16's tie (0x1000: half its ulp, after an
    # even or an odd last bit) or bfloat16's (0x8000), and their neighbours
    base = rng.integers(0x30000000, 0x48000000, 4000, dtype=np.uint32)
    base &= np.uint32(0xFFFF0000)
    ties = np.concatenate([base + d for d in (0x1000 - 1, 0x1000, 0x1000 + 1,
                                              0x3000, 0x8000 - 1, 0x8000,
                                              0x8000 + 1, 0x18000)])
    ties = ties.astype(np.uint32).view(np.float32)
    noise = rng.standard_normal(4000).astype(np.float32) * 1e3
    return np.concatenate([x, ties, -ties, noise, noise * 1e-9])


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
def test_half_conversions_match_cpu(device, dtype):
    # sg_half.h's conversions on the device (__float_as_uint on a GPU) and on
    # the host: every half value widened, float32 and float64 values rounded.
    bf16 = dtype == BFLOAT16
    every = np.arange(1 << 16, dtype=np.uint32).astype(_U16)
    want = np.empty(every.shape, np.float32)
    cpu_half.convert(every, want, 5 if bf16 else 4)   # bits -> float32
    got = device.xp.empty(every.shape, np.float32)
    gpu_half.widen_bits(device.asarray(every), got, bf16)
    np.testing.assert_array_equal(device.asnumpy(got).view(np.uint32),
                                  want.view(np.uint32))
    x = _special_floats()
    with np.errstate(invalid="ignore"):     # signalling NaNs among them
        wide = x.astype(np.float64) * (1 + 2e-9)
    # convert()'s kinds: float32 (0, 1) and float64 (2, 3) -> float16, bfloat16
    for name, values, kind in (("round_bits", x, 0), ("round_bits_f64", wide, 2)):
        want = np.empty(values.shape, _U16)
        cpu_half.convert(values, want, kind + bf16)
        got = device.xp.empty(values.shape, _U16)
        getattr(gpu_half, name)(device.asarray(values), got, bf16)
        np.testing.assert_array_equal(device.asnumpy(got), want, err_msg=name)


def test_half_tables_match():
    assert gpu_half.HYPERPARAMETERS == cpu.HYPERPARAMETERS
    for name in dir(cpu_half):
        if name.startswith(("dense_", "sparse_")) or name == "lamb_sums_size":
            assert callable(getattr(gpu_half, name)), name


# The raw ops on device half arrays (training_ops' _run_half through the
# backend) against the host: every op, the scale of the optimizers' path
# (prepare_trusted's grad_scale) and coalescing.

_HALF_HYPER = {
    "alpha": 0.1, "lr": 0.1, "l1": 0.05, "l2": 0.2, "rho": 0.9, "epsilon": 1e-3,
    "momentum": 0.9, "beta1_power": 0.729, "beta2_power": 0.997, "beta1": 0.9,
    "beta2": 0.999, "global_step": 7, "l2_shrinkage": 0.1, "lr_power": -0.5,
    "logbase": 0.69, "sign_decay": 0.5, "beta": 0.9, "use_nesterov": True,
    "update_slots": True, "multiply_linear_by_lr": True, "u_t": 0.468,
    "u_t_1": 0.47, "u_product": 0.25,
}
_NOT_HYPER = {"var", "grad", "delta", "indices", "use_locking", "coalesce_duplicates"}


def _half_specs():
    found = {}
    for module in (m for m in vars(raw_ops).values()
                   if inspect.ismodule(m) and m is not core):
        for attr, spec in vars(module).items():
            if isinstance(spec, core.Spec):
                params = inspect.signature(getattr(module, attr.lower())).parameters
                found[attr.lower()] = (spec, {
                    p: _HALF_HYPER[p] for p in params
                    if p not in _NOT_HYPER and p not in spec.slots})
    return found


HALF_SPECS = _half_specs()


def _device_half_dtypes(device):
    """The half dtypes the device's CuPy holds: bfloat16 from CuPy 14 (with
    ml_dtypes); the emulator holds both, as CuPy 14 does."""
    try:
        device.xp.asarray(np.zeros(1, BFLOAT16))
    except Exception:  # CuPy < 14: no bfloat16 array
        return HALF[:1]
    return HALF


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("name", sorted(HALF_SPECS))
def test_half_raw_ops_on_device_match_cpu(device, name, dtype):
    if dtype not in _device_half_dtypes(device):
        pytest.skip("this CuPy has no bfloat16 arrays")
    spec, args = HALF_SPECS[name]
    rng = np.random.default_rng(13)
    shape = (N_ROWS, 3)
    var = rng.uniform(-1, 1, shape).astype(dtype)
    slots = [rng.uniform(0.5, 1.5, shape[:1] if spec.rowwise else shape)
             .astype(dtype) for _ in spec.slots]
    n = INDICES.shape[0] if spec.sparse else N_ROWS
    grad = rng.uniform(-1, 1, (n, 3)).astype(dtype)
    indices = INDICES if spec.sparse else None
    exact = name not in ("apply_power_sign",)
    for scale in (1.0, float(dtype.type(0.3))):
        for coalesce in ((False, True) if spec.sparse else (False,)):
            host = [sg.Variable(a.copy()) for a in (var, *slots)]
            arrays = [device.asarray(a) for a in (var, *slots)]
            dev = [sg.Variable(a) for a in arrays]
            spec.prepare_trusted(host[0], host[1:], grad, indices, dict(args),
                                 grad_scale=scale).run(coalesce=coalesce)
            d_indices = None if indices is None else device.asarray(indices)
            spec.prepare_trusted(dev[0], dev[1:], device.asarray(grad), d_indices,
                                 dict(args), grad_scale=scale,
                                 be=backend_of(arrays[0])).run(coalesce=coalesce)
            _assert_same_half([h.numpy().view(_U16) for h in host],
                              [d.numpy().view(_U16) for d in dev], device, exact,
                              dtype)


@pytest.mark.parametrize("coalesce", (False, True))
def test_half_public_sparse_op_on_device(device, coalesce):
    # The public op with float16 device arrays (and use_locking): as on the
    # host, bit for bit.
    rng = np.random.default_rng(14)
    var = rng.uniform(-1, 1, (N_ROWS, 2, 2)).astype(np.float16)
    accum = rng.uniform(0.1, 1, var.shape).astype(np.float16)
    grad = rng.uniform(-1, 1, (INDICES.shape[0], 2, 2)).astype(np.float16)
    host, dev = _pair(device, var, accum)
    lr = np.float16(0.1)
    training_ops.sparse_apply_adagrad(*host, lr, grad, INDICES, use_locking=True,
                                      coalesce_duplicates=coalesce)
    training_ops.sparse_apply_adagrad(*dev, lr, device.asarray(grad),
                                      device.asarray(INDICES), use_locking=True,
                                      coalesce_duplicates=coalesce)
    _assert_same_half([h.view(_U16) for h in host], [d.view(_U16) for d in dev],
                      device, True, np.dtype(np.float16))
