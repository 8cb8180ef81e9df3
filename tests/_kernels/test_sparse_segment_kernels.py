"""The bag kernels of _kernels/_sparse_segment.pxi, called directly: both
builds (baseline and AVX2) give the same bits, for every combiner, weighted or
not, float32 and float64, odd row widths (vector tails), and any thread
count."""

import numpy as np
import pytest

from sparsegrad._kernels import segment as baseline

BUILDS = [baseline]
try:
    from sparsegrad._kernels import segment_avx2
    from sparsegrad.framework.backend import _parallel

    if _parallel.cpu_has_avx2():
        BUILDS.append(segment_avx2)
except ImportError:  # pragma: no cover - depends on the build
    pass


def _inputs(rng, dtype, width, weighted):
    n_rows, n_bags = 300, 400
    lengths = rng.integers(0, 40, n_bags)
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    nnz = int(splits[-1])
    data = rng.standard_normal((n_rows, width)).astype(dtype)
    ids = rng.integers(0, n_rows, nnz).astype(np.int32)
    weights = (rng.uniform(-1, 2, nnz) if weighted else np.zeros(0)).astype(dtype)
    return data, ids, weights, splits


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 7, 64, 67])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("combiner", [0, 1, 2])
def test_forward_bits_for_every_build_and_thread_count(rng, dtype, width,
                                                       weighted, combiner):
    data, ids, weights, splits = _inputs(rng, dtype, width, weighted)
    results = []
    for build in BUILDS:
        for threads in (1, 2, 3):
            out = np.full((splits.size - 1, width), np.nan, dtype)
            build.sparse_segment_reduce(data, ids, weights, splits, combiner, out,
                                        threads)
            results.append(out)
    for out in results[1:]:
        assert out.tobytes() == results[0].tobytes()
    # and the values: a float64 loop
    expected = np.zeros((splits.size - 1, width))
    for s in range(splits.size - 1):
        k = slice(splits[s], splits[s + 1])
        w = weights[k].astype(float) if weighted else np.ones(splits[s + 1] - splits[s])
        total = (w[:, None] * data[ids[k]]).sum(0)
        denom = [1.0, w.sum(), np.sqrt((w * w).sum())][combiner]
        if denom != 0 and w.size:
            expected[s] = total / denom
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(results[0], expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scaled", [False, True])
def test_backward_bits_for_every_build_and_thread_count(rng, dtype, scaled):
    n_bags, width, nnz = 500, 33, 9000
    grad = rng.standard_normal((n_bags, width)).astype(dtype)
    segment_of = np.sort(rng.integers(0, n_bags, nnz))
    ids = rng.integers(0, 700, nnz)
    order = np.argsort(ids, kind="stable").astype(np.int64)
    unique, starts = np.unique(ids[order], return_index=True)
    starts = np.append(starts, nnz).astype(np.int64)
    coef = (rng.uniform(-1, 1, nnz) if scaled else np.zeros(0)).astype(dtype)
    results = []
    for build in BUILDS:
        for threads in (1, 2, 3):
            out = np.full((unique.size, width), np.nan, dtype)
            build.sparse_segment_reduce_grad(grad, order, starts, segment_of, coef,
                                             out, threads)
            results.append(out)
    for out in results[1:]:
        assert out.tobytes() == results[0].tobytes()
    c = coef.astype(float) if scaled else np.ones(nnz)
    expected = np.zeros((700, width))
    np.add.at(expected, ids, c[:, None] * grad[segment_of])
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(results[0], expected[unique], rtol=tol, atol=tol)
