"""clipnorm / clipvalue / global_clipnorm on dense and sparse gradients.

SGD with learning rate 1 makes the applied update equal to the clipped
gradient: ``var_before - var_after == clipped``.  For IndexedSlices the
clipping acts on the tensor the slices represent (repeated indices summed
first, DESIGN.md), and the gradient stays sparse.
"""

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import sparsegrad as sg


def applied_update(grads, shapes, **clip):
    """The update SGD(learning_rate=1, **clip) applies for `grads`."""
    variables = [sg.Variable(np.zeros(shape)) for shape in shapes]
    sg.optimizers.SGD(learning_rate=1.0, **clip).apply_gradients(zip(grads, variables))
    return [-v.numpy() for v in variables]


def densify(grad, shape):
    if isinstance(grad, sg.IndexedSlices):
        out = np.zeros(shape)
        np.add.at(out, grad.indices.numpy(), grad.values.numpy())
        return out
    return np.asarray(grad, dtype=np.float64)


def np_clip_by_norm(t, c):
    norm = math.sqrt(float(np.sum(t * t)))
    return (t * c) / max(norm, c)


@pytest.mark.parametrize("clipnorm", [0.5, 2.0, 100.0])
def test_clipnorm_dense(clipnorm, rng):
    g = rng.standard_normal((4, 3))
    (update,) = applied_update([g], [(4, 3)], clipnorm=clipnorm)
    np.testing.assert_allclose(update, np_clip_by_norm(g, clipnorm), rtol=1e-15)
    assert np.linalg.norm(update) <= clipnorm * (1 + 1e-12)
    if clipnorm == 100.0:
        # Under the limit: (g * c) / c, i.e. g up to one rounding (TF's formula).
        np.testing.assert_allclose(update, g, rtol=4e-16, atol=0)


def test_clipnorm_sparse_uses_the_represented_tensor():
    # Values [3] and [4] at the same row represent 7: norm 7, not 5.
    g = sg.IndexedSlices(np.array([[3.0], [4.0]]), [1, 1])
    (update,) = applied_update([g], [(3, 1)], clipnorm=6.0)
    np.testing.assert_allclose(update, [[0.0], [6.0], [0.0]], rtol=1e-15)


@pytest.mark.parametrize("clipnorm", [0.5, 3.0])
def test_clipnorm_sparse_with_duplicates_matches_dense(clipnorm, rng):
    values = rng.standard_normal((6, 2))
    g = sg.IndexedSlices(values, [4, 0, 4, 2, 4, 0])
    (update,) = applied_update([g], [(5, 2)], clipnorm=clipnorm)
    np.testing.assert_allclose(update, np_clip_by_norm(densify(g, (5, 2)), clipnorm),
                               rtol=1e-14, atol=1e-16)


def test_clipvalue_dense_and_sparse(rng):
    g_dense = rng.standard_normal((3, 2)) * 3
    g_sparse = sg.IndexedSlices(np.array([[0.3, -2.0], [0.3, 0.5], [-0.1, 0.1]]),
                                [0, 0, 2])
    upd_dense, upd_sparse = applied_update([g_dense, g_sparse], [(3, 2), (4, 2)],
                                           clipvalue=0.5)
    np.testing.assert_array_equal(upd_dense, np.clip(g_dense, -0.5, 0.5))
    # Row 0 represents [0.6, -1.5]: clipped to [0.5, -0.5] (not [0.3+0.3, ...]).
    np.testing.assert_allclose(upd_sparse, [[0.5, -0.5], [0, 0], [-0.1, 0.1], [0, 0]])


@pytest.mark.parametrize("global_clipnorm", [0.25, 1.5, 1e3])
def test_global_clipnorm_dense_sparse_and_none(global_clipnorm, rng):
    g1 = rng.standard_normal((3, 2))
    g2 = sg.IndexedSlices(rng.standard_normal((4, 2)), [1, 3, 1, 1])
    updates = applied_update([g1, None, g2], [(3, 2), (2,), (5, 2)],
                             global_clipnorm=global_clipnorm)
    d1, d2 = densify(g1, (3, 2)), densify(g2, (5, 2))
    norm = math.sqrt(float(np.sum(d1 * d1) + np.sum(d2 * d2)))
    scale = global_clipnorm * min(1.0 / norm, 1.0 / global_clipnorm)
    np.testing.assert_allclose(updates[0], d1 * scale, rtol=1e-14)
    np.testing.assert_array_equal(updates[1], np.zeros(2))       # None: skipped
    np.testing.assert_allclose(updates[2], d2 * scale, rtol=1e-14, atol=1e-16)
    total = math.sqrt(float(np.sum(updates[0] ** 2) + np.sum(updates[2] ** 2)))
    assert total <= global_clipnorm * (1 + 1e-12)


def test_global_clipnorm_of_inf_gives_nan_like_tensorflow():
    (update, untouched) = applied_update([np.array([np.inf, 1.0]), None], [(2,), (2,)],
                                         global_clipnorm=1.0)
    assert np.isnan(update).all()
    np.testing.assert_array_equal(untouched, np.zeros(2))
    (zero,) = applied_update([np.zeros(2)], [(2,)], global_clipnorm=1.0)
    np.testing.assert_array_equal(zero, np.zeros(2))


OPTIMIZERS = {
    "sgd": lambda **k: sg.optimizers.SGD(0.5, **k),
    "momentum": lambda **k: sg.optimizers.SGD(0.5, momentum=0.9, **k),
    "adagrad": lambda **k: sg.optimizers.Adagrad(0.5, **k),
    "adam": lambda **k: sg.optimizers.Adam(0.5, **k),
    "lazy_adam": lambda **k: sg.optimizers.Adam(0.5, lazy=True, **k),
    "amsgrad": lambda **k: sg.optimizers.Adam(0.5, amsgrad=True, **k),
    "adamw": lambda **k: sg.optimizers.AdamW(0.5, **k),
    "adamax": lambda **k: sg.optimizers.Adamax(0.5, **k),
    "ftrl": lambda **k: sg.optimizers.Ftrl(0.5, **k),
    "rmsprop": lambda **k: sg.optimizers.RMSprop(0.5, momentum=0.5, centered=True,
                                                 **k),
    "adadelta": lambda **k: sg.optimizers.Adadelta(0.5, **k),
    "lion": lambda **k: sg.optimizers.Lion(0.5, **k),
    "lazy_lion": lambda **k: sg.optimizers.Lion(0.5, lazy=True, **k),
    "lamb": lambda **k: sg.optimizers.Lamb(0.5, **k),
    "lazy_lamb": lambda **k: sg.optimizers.Lamb(0.5, lazy=True, **k),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("clip", [0.3, 1e4])
def test_global_clipnorm_equals_clip_by_global_norm_then_step(name, dtype, clip, rng):
    # The kernels multiply each gradient row by the scale as they read it: the
    # same bits as clipping with sg.clip_by_global_norm first, then stepping.
    init = [rng.standard_normal((6, 3)).astype(dtype),
            rng.standard_normal((5, 3)).astype(dtype)]
    grads = [rng.standard_normal((6, 3)).astype(dtype),
             sg.IndexedSlices(rng.standard_normal((7, 3)).astype(dtype),
                              [4, 0, 4, 2, 4, 0, 1], dense_shape=(5, 3))]
    fused = [sg.Variable(v.copy()) for v in init]
    explicit = [sg.Variable(v.copy()) for v in init]
    opt_fused = OPTIMIZERS[name](global_clipnorm=clip)
    opt_explicit = OPTIMIZERS[name]()
    for _ in range(3):
        opt_fused.apply_gradients(zip(grads, fused))
        clipped, _ = sg.clip_by_global_norm(grads, clip)
        clipped = [clipped[0].numpy(), clipped[1]]
        opt_explicit.apply_gradients(zip(clipped, explicit))
    for a, b in zip(fused, explicit):
        assert a.numpy().tobytes() == b.numpy().tobytes()


def test_global_clipnorm_mixed_dtypes_uses_float64(rng):
    g32 = rng.standard_normal(4).astype(np.float32)
    g64 = rng.standard_normal(3)
    u32, u64 = applied_update([g32, g64], [(4,), (3,)], global_clipnorm=0.5)
    norm = math.sqrt(float(np.sum(g32.astype(np.float64) ** 2) + np.sum(g64 ** 2)))
    scale = 0.5 * min(1.0 / norm, 1.0 / 0.5)
    np.testing.assert_array_equal(u64, g64 * scale)
    np.testing.assert_allclose(u32, g32 * np.float32(scale), rtol=1e-7)


def test_global_clipnorm_writes_no_scaled_gradient_copy():
    # A scaled copy of the 16,384 x 64 float32 gradient would be 4 MiB.
    rng = np.random.default_rng(0)
    w = sg.Variable(np.zeros((200_000, 64), np.float32))
    ids = rng.integers(0, 200_000, 16_384)
    grad = sg.IndexedSlices(rng.standard_normal((16_384, 64)).astype(np.float32), ids,
                            dense_shape=(200_000, 64))
    opt = sg.optimizers.Adagrad(0.1, global_clipnorm=1.0)
    opt.apply_gradients([(grad, w)])             # slots created outside the count
    tracemalloc.start()
    opt.apply_gradients([(grad, w)])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < (1 << 20), peak


def test_clipping_float32_keeps_dtype(rng):
    g = rng.standard_normal((4,)).astype(np.float32)
    w = sg.Variable(np.zeros(4, np.float32))
    sg.optimizers.SGD(1.0, clipnorm=0.5).apply_gradients([(g, w)])
    assert w.dtype == np.float32
    np.testing.assert_allclose(-w.numpy(), np_clip_by_norm(g.astype(np.float64), 0.5),
                               rtol=1e-6)


@pytest.mark.parametrize("kwargs", [
    {"clipnorm": 1.0, "clipvalue": 1.0},
    {"clipnorm": 1.0, "global_clipnorm": 1.0},
    {"clipvalue": 1.0, "global_clipnorm": 1.0},
])
def test_only_one_clipping_argument(kwargs):
    with pytest.raises(sg.errors.InvalidArgumentError, match="only one of"):
        sg.optimizers.SGD(**kwargs)


@settings(max_examples=40, deadline=None)
@given(
    values=hnp.arrays(np.float64, (5, 2), elements=st.floats(-1e3, 1e3)),
    indices=hnp.arrays(np.int64, 5, elements=st.integers(0, 3)),
    dense=hnp.arrays(np.float64, (3,), elements=st.floats(-1e3, 1e3)),
    clip=st.floats(1e-3, 1e3),
)
def test_clipped_global_norm_is_at_most_clip(values, indices, dense, clip):
    g = sg.IndexedSlices(values, indices)
    out, _ = sg.clip_by_global_norm([dense, g], clip)
    out = [out[0].numpy(), out[1]]
    total = math.sqrt(float(np.sum(out[0] ** 2) + np.sum(densify(out[1], (4, 2)) ** 2)))
    assert total <= clip * (1 + 1e-12)
    norm = math.sqrt(float(np.sum(dense ** 2) + np.sum(densify(g, (4, 2)) ** 2)))
    if norm <= clip:
        np.testing.assert_allclose(out[0], dense, rtol=1e-15)
