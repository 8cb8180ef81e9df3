"""The backend object: where a call runs is chosen once, at its entry."""

import sys

import numpy as np
import pytest
import scipy.sparse

import sparsegrad as sg
from sparsegrad import _kernels, training_ops
from sparsegrad._kernels import parallel
from sparsegrad.framework import backend
from sparsegrad.framework.backend import CPU, backend_of
from sparsegrad.ops.sparse_segment_ops import embedding_bag


def test_host_values_run_on_the_cpu():
    assert backend_of() is CPU
    assert backend_of(np.zeros(2), None, 3.0, [1, 2]) is CPU
    assert CPU.xp is np and not CPU.on_gpu and CPU.name == "cpu"
    array = np.arange(3)
    assert CPU.host(array) is array
    assert CPU.asarray([1, 2], np.int32).dtype == np.int32


def test_the_cpu_kernels_are_the_build_for_this_cpu():
    import sparsegrad._kernels.slices as slices

    assert CPU.kernels("slices") is slices
    avx2 = parallel.cpu_has_avx2()
    assert CPU.kernels("segment").__name__.endswith("segment_avx2") == avx2
    assert CPU.kernels("training").__name__.endswith("_avx2") == avx2
    assert CPU.kernels("bags").__name__.endswith("segment_avx2") == avx2
    with pytest.raises(KeyError):
        CPU.kernels("sort")          # grouping on the host is NumPy's sort


def test_use_kernels_swaps_and_restores_even_on_error():
    before = CPU.kernels("training")
    with pytest.raises(RuntimeError), \
            CPU.use_kernels("training", _kernels.training) as module:
        assert CPU.kernels("training") is module is _kernels.training
        raise RuntimeError
    assert CPU.kernels("training") is before


class _FakeDeviceArray:
    """Looks like a cupy array to the backend (its type's module is cupy's)."""


_FakeDeviceArray.__module__ = "cupy._core.core"


def test_a_host_and_device_mix_is_refused():
    with pytest.raises(ValueError, match="mix numpy \\(host\\) and cupy"):
        backend_of(np.zeros(2), _FakeDeviceArray())


def _count_backend_choices(fn):
    """Run `fn` and count the calls of backend_of in it."""
    code = backend_of.__code__
    calls = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            calls.append(frame.f_back.f_code.co_name)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def _table():
    return np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)


def test_a_raw_training_op_chooses_once():
    var, accum = _table(), np.full((50, 4), 0.1, np.float32)
    grad, ids = np.ones((3, 4), np.float32), np.array([1, 7, 1])
    calls = _count_backend_choices(lambda: training_ops.sparse_apply_adagrad_v2(
        var, accum, 0.1, 1e-7, grad, ids))
    assert len(calls) == 1, calls


def test_an_optimizer_step_chooses_once_per_pair():
    var = sg.Variable(_table())
    opt = sg.optimizers.Adam(0.01, lazy=True)
    grad = sg.IndexedSlices(np.ones((3, 4), np.float32), np.array([1, 7, 1]),
                            dense_shape=(50, 4))
    opt.apply_gradients([(grad, var)])              # slots made
    calls = _count_backend_choices(lambda: opt.apply_gradients([(grad, var)]))
    assert len(calls) == 1, calls


def test_gather_and_clip_choose_once():
    table, ids = _table(), np.array([3, 9, 3])
    assert len(_count_backend_choices(lambda: sg.gather(table, ids))) == 1
    grad = sg.IndexedSlices(np.ones((3, 4), np.float32), ids, dense_shape=(50, 4))
    calls = _count_backend_choices(lambda: sg.clip_by_global_norm([grad], 1.0))
    assert len(calls) == 1, calls


def test_the_module_alone_tells_a_cupy_array():
    assert backend.is_cupy_array(_FakeDeviceArray())
    assert not backend.is_cupy_array(np.zeros(1))


_D = np.arange(18, dtype=np.float32).reshape(6, 3)
_IDS = np.array([0, 0, 1, 2, 2, 2])
_T = np.arange(30, dtype=np.float32).reshape(10, 3)
_SP_IDS = scipy.sparse.csr_matrix(np.array([[1, 0, 2], [0, 3, 0]]))
_RT = sg.RaggedTensor.from_row_splits(_D, np.array([0, 2, 6]))
_RT1 = sg.RaggedTensor.from_row_splits(_D[:, 0], np.array([0, 2, 6]))
_RT_SAME_ROWS = sg.RaggedTensor.from_row_splits(_D + 1, np.array([0, 2, 6]))

ENTRIES = {
    "math.segment_sum": lambda: sg.math.segment_sum(_D, _IDS),
    "math.unsorted_segment_max": lambda: sg.math.unsorted_segment_max(_D, _IDS, 3),
    "sparse.segment_mean": lambda: sg.sparse.segment_mean(
        _T, np.array([1, 2, 3]), np.array([0, 0, 1])),
    "nn.embedding_lookup": lambda: sg.nn.embedding_lookup(_T, np.array([1, 2])),
    "nn.embedding_lookup_sparse": lambda: sg.nn.embedding_lookup_sparse(
        _T, _SP_IDS, None),
    "sparse.sparse_dense_matmul": lambda: sg.sparse.sparse_dense_matmul(
        scipy.sparse.csr_matrix(np.eye(3, 10, dtype=np.float32)), _T),
    "clip_by_norm": lambda: sg.clip_by_norm(_D, 1.0),
    "add": lambda: sg.add(_D, _D),
    "RaggedTensor.from_row_splits": lambda: sg.RaggedTensor.from_row_splits(
        _D, [0, 2, 6]),
    "ragged.range": lambda: sg.ragged.range([0, 1], [3, 4]),
    "nn.softmax": lambda: sg.nn.softmax(_D),
    "nn.l2_loss": lambda: sg.nn.l2_loss(_D),
    "nn.sigmoid_cross_entropy_with_logits": lambda: (
        sg.nn.sigmoid_cross_entropy_with_logits(labels=_D, logits=_D)),
    "nn.sparse_softmax_cross_entropy_with_logits": lambda: (
        sg.nn.sparse_softmax_cross_entropy_with_logits(
            labels=np.array([0, 2, 1, 0, 1, 2]), logits=_D)),
    "RaggedTensor.from_scipy": lambda: sg.RaggedTensor.from_scipy(_SP_IDS),
    "sparse.segment_sqrt_n": lambda: sg.sparse.segment_sqrt_n(
        _T, np.array([1, 2, 3]), np.array([0, 0, 1]), num_segments=3),
    "math.unsorted_segment_mean": lambda: sg.math.unsorted_segment_mean(
        _D[:, 0].astype(np.int32), _IDS, 4),
    "math.unsorted_segment_sqrt_n": lambda: sg.math.unsorted_segment_sqrt_n(
        _D, _IDS, 3),
    "nn.safe_embedding_lookup_sparse": lambda: sg.nn.safe_embedding_lookup_sparse(
        _T, _SP_IDS),
    "embedding_bag": lambda: embedding_bag(
        _T, np.array([1, 2, 3]), np.array([0, 2, 2, 3]),
        weights=np.array([1.0, 2.0, 0.5]), combiner="mean"),
    "ragged.range(scalar, vector)": lambda: sg.ragged.range(
        np.int64(1), np.array([3, 4]), 2),
    "ragged.ragged_range": lambda: sg.ragged.ragged_range(
        np.array([0, 1]), np.array([3, 4]), np.int64(1)),
    "RaggedTensor.from_row_lengths": lambda: sg.RaggedTensor.from_row_lengths(
        _D, np.array([2, 4])),
    "RaggedTensor.from_value_rowids": lambda: sg.RaggedTensor.from_value_rowids(
        _D, _IDS, nrows=4),
    # a fresh RaggedTensor (int32 splits, nothing cached, no backend asked):
    # to_tensor computes its row ids and lengths on its own backend
    "RaggedTensor.to_tensor": lambda: _RT.with_row_splits_dtype(np.int32).to_tensor(
        default_value=-1.0, shape=(3, 2, 3)),
    "RaggedTensor.to_scipy": lambda: _RT1.with_row_splits_dtype(np.int32).to_scipy(),
    "RaggedTensor * scalar": lambda: _RT * 2.0,
    # equal rows in other splits arrays: compared without asking
    "RaggedTensor + RaggedTensor": lambda: _RT + _RT_SAME_ROWS,
}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_a_public_op_chooses_its_backend_at_most_once(name):
    ENTRIES[name]()
    calls = _count_backend_choices(ENTRIES[name])
    assert len(calls) <= 1, calls
