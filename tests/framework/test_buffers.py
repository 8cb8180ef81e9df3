"""The pool of large result buffers: a block is handed out again only when
nothing references it."""

import numpy as np

import sparsegrad as sg
from sparsegrad.framework import buffers

SHAPE = (1024, 512)  # 2 MiB of float32: pooled


def test_small_results_are_plain_arrays():
    a = buffers.empty((10, 10), np.float64)
    assert a.base is None and a.shape == (10, 10)


def test_a_block_in_use_is_never_handed_out_again():
    a = buffers.empty(SHAPE, np.float32)
    a[...] = 1.0
    view = a[3:5]                                 # a view keeps the block busy
    b = buffers.empty(SHAPE, np.float32)
    assert not np.shares_memory(a, b)
    del a
    c = buffers.empty(SHAPE, np.float32)
    assert not np.shares_memory(view, c)
    np.testing.assert_array_equal(view, 1.0)


def test_a_free_block_is_reused():
    a = buffers.empty(SHAPE, np.float32)
    address = a.__array_interface__["data"][0]
    del a
    b = buffers.empty((512, 1024), np.float32)     # same size, any shape
    assert b.__array_interface__["data"][0] == address
    assert b.flags.writeable and b.flags.c_contiguous


def test_clip_results_survive_the_next_call(rng):
    x = rng.standard_normal(SHAPE).astype(np.float32)
    first, _ = sg.clip_by_global_norm([x], 1.0)
    kept = first[0].numpy().copy()
    second, _ = sg.clip_by_global_norm([x * 2], 1.0)
    np.testing.assert_array_equal(first[0].numpy(), kept)
    assert not np.shares_memory(first[0].numpy(), second[0].numpy())
    arr = np.asarray(second[0])                    # a user's view keeps it
    del second
    third = sg.clip_by_value(x, 0.0, 0.0)
    assert not np.shares_memory(arr, third.numpy())
