"""An IndexedSlices keeps the grouping of its indices once it is computed:
a clip op followed by an optimizer step groups the ids once, and the update
kernel coalesces on those groups (the ``_grouped`` drivers) instead of
grouping them again (``_by_row``)."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.framework import sparse_rows
from sparsegrad.training.training_ops import core


@pytest.fixture
def counted(monkeypatch):
    """Counts of the grouping function's calls and of the sparse drivers
    run, by name."""
    counts = {"group_rows": 0}
    real = sparse_rows.group_rows

    def group_rows(indices, max_index, be=None):
        counts["group_rows"] += 1
        return real(indices, max_index, be)

    monkeypatch.setattr(sparse_rows, "group_rows", group_rows)
    kernels = core.kernels()

    def counting(name, real):
        def driver(*args):
            counts[name] = counts.get(name, 0) + 1
            return real(*args)
        return driver

    for name in dir(kernels):
        if name.startswith("sparse_"):
            monkeypatch.setattr(kernels, name, counting(name, getattr(kernels, name)))
    return counts


def _gradient(table, ids):
    with sg.GradientTape() as tape:
        loss = sg.reduce_sum(sg.nn.embedding_lookup(table, ids) ** 2)
    return tape.gradient(loss, table)


@pytest.mark.parametrize("make", [
    lambda: sg.optimizers.Adam(0.01, lazy=True),
    lambda: sg.optimizers.Adagrad(0.1),
    lambda: sg.optimizers.SGD(0.1, momentum=0.9),
    lambda: sg.optimizers.AdamW(0.01, lazy=True),   # its decay's rows too
])
def test_clip_then_apply_groups_the_ids_once(counted, make):
    rng = np.random.default_rng(0)
    table = sg.Variable(rng.standard_normal((50, 4)).astype(np.float32))
    grad = _gradient(table, np.array([3, 7, 3, 9, 7, 3]))
    assert isinstance(grad, sg.IndexedSlices)
    (clipped,), _ = sg.clip_by_global_norm([grad], 0.5)
    opt = make()
    opt.apply_gradients([(clipped, table)])
    assert counted["group_rows"] == 1
    drivers = {k: v for k, v in counted.items() if k != "group_rows"}
    assert drivers and all(k.endswith("_grouped") for k in drivers), drivers


def test_the_grouping_is_kept_and_shared():
    s = sg.IndexedSlices(np.ones((4, 2)), [5, 1, 5, 2], dense_shape=(8, 2))
    unique, order, starts = s._row_groups()
    np.testing.assert_array_equal(unique, [1, 2, 5])
    np.testing.assert_array_equal(order, [1, 3, 0, 2])
    np.testing.assert_array_equal(starts, [0, 1, 2, 4])
    assert s._row_groups() is s._row_groups()
    # new values on the same indices carry it; other indices do not
    assert (s * 2.0)._groups is s._groups
    (c,), _ = sg.clip_by_global_norm([s], 1.0)
    assert c._groups is s._groups
    assert s.deduplicate()._groups is None


def test_a_step_on_carried_groups_has_the_bits_of_one_without(counted):
    # the grouped drivers and the by-row ones give the same bits
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 30, 200)
    start = rng.standard_normal((30, 8)).astype(np.float32)
    results = []
    for pregroup in (False, True):
        table = sg.Variable(start.copy())
        opt = sg.optimizers.Adam(0.01, lazy=True)
        for _ in range(3):
            grad = _gradient(table, ids)
            if pregroup:
                grad._row_groups()
            opt.apply_gradients([(grad, table)])
        results.append(table.numpy())
    assert counted.get("sparse_adam_grouped", 0) == 3
    assert counted.get("sparse_adam_by_row", 0) == 3
    np.testing.assert_array_equal(results[0].view(np.uint32),
                                  results[1].view(np.uint32))


def test_global_clipnorm_groups_once_and_keeps_no_state_on_the_optimizer(counted):
    rng = np.random.default_rng(2)
    table = sg.Variable(rng.standard_normal((40, 3)).astype(np.float32))
    opt = sg.optimizers.AdamW(0.01, lazy=True, global_clipnorm=0.1)
    opt.apply_gradients([(_gradient(table, np.array([1, 4, 1, 2])), table)])
    before = dict(vars(opt))
    counted["group_rows"] = 0
    opt.apply_gradients([(_gradient(table, np.array([5, 5, 0])), table)])
    assert counted["group_rows"] == 1       # the norm, the decay and the update
    assert vars(opt).keys() == before.keys()
    assert all(vars(opt)[k] is v for k, v in before.items())


def test_the_stage_is_explicit():
    from sparsegrad.training.optimizers.base import GradientStage

    x = np.array([3.0, -1.5], np.float32)
    assert GradientStage().scaled(x) is x
    np.testing.assert_array_equal(GradientStage(0.5).scaled(x), [1.5, -0.75])
    assert GradientStage(0.5).scaled(x).dtype == np.float32
    ids = np.array([2, 2])
    groups = sparse_rows.group_rows(ids, 2)
    stage = GradientStage(0.5, ids, groups)
    assert stage.groups_of(ids) is groups
    assert stage.groups_of(ids.copy()) is None       # other indices: not theirs
    assert stage.unscaled() == GradientStage()


def test_clip_by_norm_and_deduplicate_group_once(counted):
    s = sg.IndexedSlices(np.arange(12.0).reshape(6, 2), [3, 0, 3, 1, 0, 3],
                         dense_shape=(4, 2))
    clipped = sg.clip_by_norm(s, 5.0)
    assert counted["group_rows"] == 1       # the norm and the represented rows
    d = clipped.deduplicate()
    assert counted["group_rows"] == 1       # the grouping the result carries
    np.testing.assert_array_equal(d.indices.numpy(), [0, 1, 3])
    dense = np.zeros((4, 2))
    np.add.at(dense, [3, 0, 3, 1, 0, 3], clipped.values.numpy())
    np.testing.assert_array_equal(d.values.numpy(), dense[[0, 1, 3]])
