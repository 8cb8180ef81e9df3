"""The grouped sparse drivers (``sparse_<op>_grouped``) and the optimizers'
use of them.

An optimizer with ``global_clipnorm`` groups the indices of a sparse gradient
once (``sparse_rows.group_rows``), for the global norm, and hands the groups
to the update kernel, which coalesces on them, rows in ascending order.  The
update must be bit for bit the one of ``sparse_<op>_by_row`` with coalesce
(which groups by itself), for every row width (narrow rows in particular), any
thread count, scaled or not, and either kernel build.
"""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.framework import sparse_rows
from sparsegrad.ops import clip_ops
from sparsegrad.training.training_ops import core

from .test_grad_scale import MODULES, SPARSE, SPECS, _bits, _Spy, _state

# Row widths: the scalar functions (1), odd narrow rows, the CTR width (16),
# one past it, and a wide row.
WIDTHS = (1, 3, 16, 17, 64)


def _zipf_indices(rng, n, n_rows, dtype):
    """`n` skewed row ids in [0, n_rows): a few rows repeat many times."""
    return ((rng.zipf(1.3, size=n) - 1) % n_rows).astype(dtype)


def _run(spec, args, state, grad, indices, scale, groups):
    var, slots = state
    spec.prepare_trusted(var, slots, grad, indices, dict(args), grad_scale=scale,
                         groups=groups).run(coalesce=True)


@pytest.mark.parametrize("module", sorted(MODULES))
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", SPARSE)
def test_grouped_update_has_the_bits_of_the_by_row_update(op, dtype, n_threads,
                                                          module):
    spec, args = SPECS[op]
    sg.set_num_threads(n_threads)
    rng = np.random.default_rng(21)
    spy = _Spy(MODULES[module])
    with core.use_kernels(spy):
        for width in WIDTHS:
            n_rows = 500
            shape = (n_rows, width) if width > 1 else (n_rows,)
            # int32 ids (widened for the kernel; the groups' rows too) for
            # odd widths, int64 for even ones.
            index_dtype = np.int32 if width % 2 else np.int64
            indices = _zipf_indices(rng, 2000, n_rows, index_dtype)
            grad = rng.normal(size=(2000,) + shape[1:]).astype(dtype)
            groups = sparse_rows.group_rows(indices, n_rows - 1)
            for scale in (1.0, float(np.asarray(0.3, dtype))):
                grouped = _state(spec, shape, dtype, np.random.default_rng(5))
                by_row = _state(spec, shape, dtype, np.random.default_rng(5))
                _run(spec, args, grouped, grad, indices, scale, groups)
                _run(spec, args, by_row, grad, indices, scale, None)
                for name, a, b in zip(("var", *spec.slots),
                                      (grouped[0], *grouped[1]),
                                      (by_row[0], *by_row[1])):
                    np.testing.assert_array_equal(
                        _bits(a.numpy()), _bits(b.numpy()),
                        err_msg=f"{name}, width {width}, scale {scale}")
    # row-wise Adagrad groups by itself (its grouped driver takes four rows
    # at a time): both runs are grouped, compared with by_row below
    assert set(spy.called) == ({spec.driver + "_grouped"} if spec.rowwise else
                               {spec.driver + "_grouped", spec.driver + "_by_row"})


@pytest.mark.parametrize("module", sorted(MODULES))
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rowwise_grouped_four_at_a_time_has_the_bits_of_by_row(dtype, n_threads,
                                                               module):
    # The grouped row-wise driver sums the squares of four rows interleaved;
    # each row's chain must stay in its order: bit for bit the by-row driver
    # (one row at a time), for group counts that are no multiple of four.
    kernels = MODULES[module]
    rng = np.random.default_rng(23)
    hp = np.array([0.05, 1e-7])
    for width in WIDTHS:
        for n_rows, n in ((500, 2000), (7, 30), (3, 3)):
            indices = _zipf_indices(rng, n, n_rows, np.int64)
            grad = (rng.normal(size=(n, width))
                    * 10.0 ** rng.integers(-3, 3, size=(n, 1))).astype(dtype)
            unique, order, starts = sparse_rows.group_rows(indices, n_rows - 1)
            for scale in (1.0, float(np.asarray(0.3, dtype))):
                states = []
                for grouped in (True, False):
                    var = np.random.default_rng(5).normal(size=(n_rows, width))
                    var = var.astype(dtype)
                    acc = np.full((n_rows, 1), 0.1, dtype)
                    if grouped:
                        kernels.sparse_rowwise_adagrad_grouped(
                            var, acc, acc, acc, grad, unique.astype(np.int64),
                            order, starts, hp, scale, n_threads)
                    else:
                        scratch = np.empty(
                            kernels.by_row_scratch_size(n, width, n_threads),
                            np.int32)
                        kernels.sparse_rowwise_adagrad_by_row(
                            var, acc, acc, acc, grad, indices, hp, scale, True,
                            n_threads, scratch)
                    states.append((var, acc))
                for a, b in zip(*states):
                    np.testing.assert_array_equal(
                        _bits(a), _bits(b),
                        err_msg=f"width {width}, {len(unique)} rows, scale {scale}")


@pytest.mark.parametrize("n_threads", [1, 2])
def test_grouped_lazy_adam_matches_a_numpy_reference(n_threads):
    # Lazy Adam by hand: each distinct row once, its gradients summed in
    # order (float32), the formula in float32 with TensorFlow's order.
    sg.set_num_threads(n_threads)
    spec, _ = SPECS["sparse_apply_adam"]
    rng = np.random.default_rng(3)
    n_rows, width, n = 1000, 16, 6000
    indices = _zipf_indices(rng, n, n_rows, np.int64)
    grad = rng.normal(size=(n, width)).astype(np.float32)
    var0 = rng.normal(size=(n_rows, width)).astype(np.float32)
    m0 = (0.1 * rng.normal(size=(n_rows, width))).astype(np.float32)
    v0 = rng.uniform(0.5, 1.5, size=(n_rows, width)).astype(np.float32)
    var, m, v = sg.Variable(var0), sg.Variable(m0), sg.Variable(v0)
    args = {"beta1_power": 0.9, "beta2_power": 0.999, "lr": 0.01, "beta1": 0.9,
            "beta2": 0.999, "epsilon": 1e-7, "use_nesterov": False}
    groups = sparse_rows.group_rows(indices, n_rows - 1)
    spec.prepare_trusted(var, [m, v], grad, indices, args,
                         groups=groups).run(coalesce=True)

    f = np.float32
    summed = np.zeros((n_rows, width), f)
    np.add.at(summed, indices, grad)
    rows = np.unique(indices)
    g = summed[rows]
    alpha = f(f(0.01) * np.sqrt(f(1) - f(0.999))) / (f(1) - f(0.9))
    want_m, want_v, want_var = m0.copy(), v0.copy(), var0.copy()
    mr = m0[rows] + (g - m0[rows]) * (f(1) - f(0.9))
    vr = v0[rows] + (g * g - v0[rows]) * (f(1) - f(0.999))
    want_m[rows], want_v[rows] = mr, vr
    want_var[rows] = var0[rows] - (mr * alpha) / (np.sqrt(vr) + f(1e-7))
    np.testing.assert_array_equal(m.numpy(), want_m)
    np.testing.assert_array_equal(v.numpy(), want_v)
    np.testing.assert_allclose(var.numpy(), want_var, rtol=2e-6, atol=0)
    untouched = np.setdiff1d(np.arange(n_rows), rows)
    np.testing.assert_array_equal(var.numpy()[untouched], var0[untouched])


@pytest.mark.parametrize("n_threads", [1, 2])
def test_global_clipnorm_step_runs_on_the_groups_of_the_norm(n_threads):
    # A lazy Adam step with global_clipnorm takes the grouped driver, and its
    # bits are those of clip_by_global_norm followed by an unclipped step.
    sg.set_num_threads(n_threads)
    rng = np.random.default_rng(4)
    table0 = rng.normal(size=(2000, 16)).astype(np.float32)
    dense0 = rng.normal(size=(16, 8)).astype(np.float32)
    indices = _zipf_indices(rng, 5000, 2000, np.int64)
    values = rng.normal(size=(5000, 16)).astype(np.float32)
    dense_grad = rng.normal(size=(16, 8)).astype(np.float32)

    def grads():
        return [sg.IndexedSlices(values, indices, dense_shape=(2000, 16)), dense_grad]

    fused = [sg.Variable(table0), sg.Variable(dense0)]
    spy = _Spy(core.kernels())
    with core.use_kernels(spy):
        opt = sg.optimizers.Adam(0.01, lazy=True, global_clipnorm=1.0)
        for _ in range(2):
            opt.apply_gradients(zip(grads(), fused))
    assert "sparse_adam_grouped" in spy.called
    assert "sparse_adam_by_row" not in spy.called

    explicit = [sg.Variable(table0), sg.Variable(dense0)]
    opt = sg.optimizers.Adam(0.01, lazy=True)
    for _ in range(2):
        clipped, _ = sg.clip_by_global_norm(grads(), 1.0)
        opt.apply_gradients(zip(clipped, explicit))
    for a, b in zip(fused, explicit):
        np.testing.assert_array_equal(_bits(a.numpy()), _bits(b.numpy()))


@pytest.mark.parametrize("width", [1, 3, 16, 17, 64, 65, 130])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_of_squares_of_repeated_rows(width, dtype):
    # Rows wider than the kernel's column block (64) are summed block by
    # block; given groups or not, the same bits; near the NumPy value.
    rng = np.random.default_rng(width)
    n_rows = 300
    indices = _zipf_indices(rng, 2000, n_rows, np.int64)
    values = rng.normal(size=(2000, width)).astype(dtype)
    groups = sparse_rows.group_rows(indices, n_rows - 1)
    got = clip_ops.sum_of_squares([(values, indices, n_rows, groups)])
    again = clip_ops.sum_of_squares([(values, indices, n_rows)])
    assert np.float64(got).view(np.uint64) == np.float64(again).view(np.uint64)
    summed = np.zeros((n_rows, width), dtype)
    np.add.at(summed, indices, values)
    want = float(np.sum(summed.astype(np.float64) ** 2))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_sum_of_squares_with_groups_of_distinct_indices():
    # Groups of distinct indices: the values count as they are.
    values = np.arange(12, dtype=np.float32).reshape(4, 3)
    indices = np.array([7, 2, 5, 0])
    groups = sparse_rows.group_rows(indices, 7)
    got = clip_ops.sum_of_squares([(values, indices, 8, groups)])
    assert got == float(np.sum(values.astype(np.float64) ** 2)) == 506.0
