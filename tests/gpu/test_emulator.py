"""The CUDA emulator itself: the execution model the GPU tests rely on."""

import numpy as np
import pytest

from sparsegrad import _cuda
from sparsegrad._cuda import sort

SOURCE = r'''
#include "common.cuh"
// Block sums of x through shared memory and barriers, in a fixed tree order.
extern "C" __global__ void block_sums_f32(const float* __restrict__ x, i64 n,
                                          float* __restrict__ out) {
    __shared__ float part[SPARSEGRAD_BLOCK];
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    part[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}
// A race: each thread reads its neighbour's slot, which the neighbour writes,
// with no barrier in between.
extern "C" __global__ void racy_f32(float* x) {
    x[threadIdx.x] = x[(threadIdx.x + 1) % blockDim.x] + 1.0f;
}
// Off by one: writes x[n], reads y[n].
extern "C" __global__ void past_end_f32(float* x, const float* y, i64 n) {
    if (threadIdx.x == 0) x[n] = 1.0f;
}
extern "C" __global__ void read_past_end_f32(float* x, const float* y, i64 n) {
    if (threadIdx.x == 0) x[0] = y[n];
}
extern "C" __global__ void count_f32(int* counter, i64 n) {
    SG_GRID_LOOP(i, n) { atomicAdd(counter, 1); }
}
'''


def _module(device):
    return device.xp.RawModule(code=SOURCE, options=_cuda.compile_options())


def _tree_sum(block):
    part = block.copy()
    s = part.size // 2
    while s:
        part[:s] = part[:s] + part[s:2 * s]
        s //= 2
    return part[0]


def test_barriers_and_shared_memory(device):
    x = np.random.default_rng(0).standard_normal(600).astype(np.float32)
    out = device.xp.zeros((3,), dtype=np.float32)
    kernel = _module(device).get_function("block_sums_f32")
    kernel((3,), (256,), (device.asarray(x), np.int64(600), out))
    padded = np.zeros(768, np.float32)
    padded[:600] = x
    want = [_tree_sum(padded[b * 256:(b + 1) * 256]) for b in range(3)]
    np.testing.assert_array_equal(device.asnumpy(out), want)


def test_grid_stride_and_atomics(device):
    counter = device.xp.zeros((1,), dtype=np.int32)
    _module(device).get_function("count_f32")((2,), (256,), (counter, np.int64(1000)))
    assert int(counter[0]) == 1000


def test_launch_arguments_are_checked(device):
    if device.name != "emulated":
        pytest.skip("real CuPy does not check argument types")
    kernel = _module(device).get_function("count_f32")
    counter = device.xp.zeros((1,), dtype=np.int32)
    with pytest.raises(TypeError, match="NumPy int64 scalar"):
        kernel((1,), (256,), (counter, 1000))
    with pytest.raises(TypeError, match="dtype int64"):
        kernel((1,), (256,), (device.xp.zeros((1,), dtype=np.int64), np.int64(1)))


def test_arrays_stay_on_the_device(device):
    x = device.asarray(np.arange(4.0))
    assert type(x + 1) is type(x)
    assert type(x.sum()) is type(x)
    with pytest.raises(TypeError):
        np.asarray(x)


def test_group_rows_matches_the_cpu(device):
    from sparsegrad.framework import sparse_rows

    idx = np.array([5, 2, 5, 0, 2, 5, 9], np.int64)
    want = sparse_rows.group_rows(idx, 9)
    got = sort.group_rows(device.asarray(idx))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(device.asnumpy(g), w)


def test_thread_order_exposes_races(device, monkeypatch):
    # SG_EMU_ORDER=reverse / shuffle runs blocks and threads in another
    # order: a racy kernel then gives other numbers (CI's second suite run
    # uses reverse, so every kernel is checked in two orders).
    if device.name != "emulated":
        pytest.skip("the run order is the emulator's")
    kernel = _module(device).get_function("racy_f32")
    results = {}
    for order in ("forward", "reverse", "shuffle"):
        monkeypatch.setenv("SG_EMU_ORDER", order)
        x = device.xp.zeros((8,), dtype=np.float32)
        kernel((1,), (8,), (x,))
        results[order] = device.asnumpy(x)
    np.testing.assert_array_equal(results["forward"], [1, 1, 1, 1, 1, 1, 1, 2])
    assert not np.array_equal(results["forward"], results["reverse"])


def test_out_of_bounds_is_caught(device):
    # Each argument runs in a copy between poison bytes: a write past an end
    # raises, a read past an end reads a NaN.
    if device.name != "emulated":
        pytest.skip("the guard bytes are the emulator's")
    module = _module(device)
    x = device.xp.zeros((4,), dtype=np.float32)
    y = device.xp.ones((4,), dtype=np.float32)
    with pytest.raises(RuntimeError, match="wrote outside"):
        module.get_function("past_end_f32")((1,), (32,), (x, y, np.int64(4)))
    module.get_function("read_past_end_f32")((1,), (32,), (x, y, np.int64(4)))
    assert np.isnan(device.asnumpy(x)[0])
