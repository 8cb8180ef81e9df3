"""Tests of nn.embedding_lookup_sparse (reference ragged.md section 6.1):
golden values, TensorFlow fixtures (SparseTensor ids as scipy.sparse, and
RaggedTensor ids), errors, IndexedSlices gradients, thread-count bits."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.testing import assert_indexed_slices_equal, check_gradients

from .test_sparse_segment_ops import _golden

# Op types whose gradients this module checks (the registry sweep reads it).
CHECKED_OPS = ("EmbeddingBag", "SparseSegmentReduceGrad")

els = sg.nn.embedding_lookup_sparse
P = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]], np.float32)
IDS = [0, 1, 3, 2]
INDPTR = [0, 2, 3, 4]
WEIGHTS = [0.1, 1.0, 0.5, 2.0]


class Ragged:
    """A minimal stand-in for sparsegrad.RaggedTensor: the attributes
    embedding_lookup_sparse reads (it is duck-typed; ids need not be valid
    ragged values, e.g. negative for safe_embedding_lookup_sparse)."""

    def __init__(self, values, row_splits):
        self.values = sg.constant(np.asarray(values))
        self.row_splits = np.asarray(row_splits, dtype=np.int64)

    def nrows(self):
        return self.row_splits.shape[0] - 1


def _csr(weights=None, indptr=INDPTR, ids=IDS, shape=None):
    w = np.ones(len(ids)) if weights is None else np.asarray(weights)
    return sp.csr_array((w, ids, indptr), shape=shape)


# -- golden values (section 6.1) ------------------------------------------------------

GOLDEN = {
    ("sum", False): [[4, 6], [7, 8], [5, 6]],
    ("sum", True): [[3.1, 4.2], [3.5, 4], [10, 12]],
    ("mean", False): [[2, 3], [7, 8], [5, 6]],
    ("mean", True): [[2.8181818, 3.8181818], [7, 8], [5, 6]],
    ("sqrtn", False): [[2.828427, 4.2426405], [7, 8], [5, 6]],
    ("sqrtn", True): [[3.084615, 4.1791558], [7, 8], [5, 6]],
}


@pytest.mark.parametrize("combiner,weighted", list(GOLDEN))
def test_goldens_csr_and_ragged(combiner, weighted):
    expected = GOLDEN[(combiner, weighted)]
    out = els(P, _csr(WEIGHTS if weighted else None), combiner=combiner)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    assert out.dtype == np.float32
    rt = Ragged(IDS, INDPTR)
    w = Ragged(np.float32(WEIGHTS), INDPTR) if weighted else None
    np.testing.assert_allclose(els(P, rt, w, combiner=combiner).numpy(), expected,
                               rtol=1e-6)


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_real_ragged_tensor(combiner):
    rt = sg.RaggedTensor.from_row_splits(np.array(IDS), np.array(INDPTR))
    w = sg.RaggedTensor.from_row_splits(np.float32(WEIGHTS), np.array(INDPTR))
    for weights, weighted in ((None, False), (w, True)):
        np.testing.assert_allclose(
            els(P, rt, weights, combiner=combiner).numpy(),
            GOLDEN[(combiner, weighted)], rtol=1e-6)
    v = sg.Variable(P)
    with sg.GradientTape() as tape:
        y = els(v, rt, w, combiner="sum")
    g = tape.gradient(y, v)
    assert_indexed_slices_equal(g, [[0.1, 0.1], [1, 1], [2, 2], [0.5, 0.5]],
                                rtol=1e-6)


def test_default_combiner_is_mean():
    np.testing.assert_allclose(els(P, _csr(), combiner=None).numpy(),
                               GOLDEN[("mean", False)])
    np.testing.assert_allclose(els(P, _csr()).numpy(), GOLDEN[("mean", False)])


def test_max_norm_golden():
    out = els(P, _csr(), combiner="sum", max_norm=5)
    np.testing.assert_allclose(
        out.numpy(), [[4, 6], [3.2925229, 3.762884], [3.200922, 3.841106]],
        rtol=1e-6)


@pytest.mark.parametrize(
    "weights,combiner,expected",
    [
        ([1, 2, -2], "sum", [[-1, 0]]),
        ([1, 2, -2], "mean", [[-1, 0]]),
        ([1, 2, -2], "sqrtn", [[-0.33333333, 0]]),
        (None, "sum", [[11, 14]]),
        (None, "mean", [[3.6666667, 4.6666667]]),
        (None, "sqrtn", [[6.350853, 8.082904]]),
        ([1, 1, -2], "mean", [[0, 0]]),
    ],
)
def test_one_row_goldens(weights, combiner, expected):
    ids = _csr(weights, indptr=[0, 3], ids=[1, 1, 2])
    np.testing.assert_allclose(els(P, ids, combiner=combiner).numpy(), expected,
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "weights,combiner,expected",
    [
        (None, "sum", {1: [2, 2], 2: [1, 1]}),
        (None, "mean", {1: [0.6666667] * 2, 2: [0.3333333] * 2}),
        (None, "sqrtn", {1: [1.1547] * 2, 2: [0.57735] * 2}),
        ([1, 2, -2], "sum", {1: [3, 3], 2: [-2, -2]}),
        ([1, 2, -2], "mean", {1: [3, 3], 2: [-2, -2]}),
        ([1, 2, -2], "sqrtn", {1: [1, 1], 2: [-0.6666667] * 2}),
    ],
)
def test_gradient_goldens(weights, combiner, expected):
    v = sg.Variable(P)
    with sg.GradientTape() as tape:
        y = els(v, _csr(weights, indptr=[0, 3], ids=[1, 1, 2]), combiner=combiner)
    g = tape.gradient(y, v)
    assert isinstance(g, sg.IndexedSlices) and g.dense_shape == (4, 2)
    np.testing.assert_array_equal(g.indices.numpy(), list(expected))
    np.testing.assert_allclose(g.values.numpy(), list(expected.values()),
                               rtol=1e-4)


# -- rows of the output


def test_csr_keeps_every_row_ragged_drops_trailing_empty_rows():
    csr = _csr(indptr=[0, 0, 2, 2, 4, 4, 4], shape=(6, 4))
    out = els(P, csr, combiner="sum").numpy()
    np.testing.assert_array_equal(
        out, [[0, 0], [4, 6], [0, 0], [12, 14], [0, 0], [0, 0]])
    rt = Ragged(IDS, [0, 0, 2, 2, 4, 4, 4])
    np.testing.assert_array_equal(els(P, rt, combiner="sum").numpy(), out[:4])
    empty = Ragged(np.zeros(0, np.int64), [0, 0, 0])
    assert els(P, empty).shape == (0, 2)
    assert els(P, sp.csr_array((3, 4))).numpy().tolist() == [[0, 0]] * 3


def test_csr_of_ones_equals_unweighted_bits(rng, zipf):
    table = rng.standard_normal((100, 8)).astype(np.float32)
    ids = zipf(rng, 500, 100)
    indptr = np.sort(rng.integers(0, 501, 51))
    indptr[0], indptr[-1] = 0, 500
    ones = els(table, sp.csr_array((np.ones(500), ids, indptr)), combiner="sqrtn")
    rt = els(table, Ragged(ids, indptr), combiner="sqrtn")
    n = rt.shape[0]
    assert ones.numpy()[:n].tobytes() == rt.numpy().tobytes()


def test_other_sparse_formats_and_shards():
    coo = _csr(WEIGHTS).tocoo()
    np.testing.assert_allclose(els(P, coo, combiner="sum").numpy(),
                               GOLDEN[("sum", True)], rtol=1e-6)
    mean = els(P, sp.csr_matrix(_csr()), combiner="mean")
    np.testing.assert_allclose(mean.numpy(), GOLDEN[("mean", False)], rtol=1e-6)
    shards = [sg.Variable(P[:2]), sg.Variable(P[2:])]
    with sg.GradientTape() as tape:
        out = els(shards, _csr(WEIGHTS), combiner="sum")
    np.testing.assert_allclose(out.numpy(), GOLDEN[("sum", True)], rtol=1e-6)
    g0, g1 = tape.gradient(out, shards)
    assert_indexed_slices_equal(g0, [[0.1, 0.1], [1, 1]], rtol=1e-6)
    assert_indexed_slices_equal(g1, [[2, 2], [0.5, 0.5]], rtol=1e-6)


# -- TensorFlow fixtures


@pytest.mark.parametrize("kind,combiner,num_segments,max_norm,weighted,case",
                         list(_golden(("sparse", "ragged"))))
def test_tensorflow_fixtures(kind, combiner, num_segments, max_norm, weighted,
                             case):
    del num_segments
    table, ids, splits = case["table"], case["ids"], case["splits"]
    weights = case["weights"] if weighted else None
    dtype = table.dtype
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    if kind == "ragged":
        sp_ids = Ragged(ids, splits)
        sp_w = None if weights is None else Ragged(weights, splits)
    else:
        data = np.ones(ids.size, dtype) if weights is None else weights
        sp_ids = sp.csr_array((data, ids, splits), shape=(splits.size - 1, 10))
        sp_w = None
    v = sg.Variable(table)
    with sg.GradientTape() as tape:
        out = els(v, sp_ids, sp_w, combiner=combiner, max_norm=max_norm)
    n_tf = case["out"].shape[0]
    np.testing.assert_allclose(out.numpy()[:n_tf], case["out"], rtol=rtol,
                               atol=rtol)
    np.testing.assert_array_equal(out.numpy()[n_tf:], 0)    # CSR: every row
    up = np.zeros(out.shape, dtype)
    up[:n_tf] = case["up"]
    g = tape.gradient(out, v, output_gradients=up)
    assert isinstance(g, sg.IndexedSlices)
    assert_indexed_slices_equal(g, case["grad"], rtol=rtol, atol=rtol)


# -- errors


def test_bad_combiner():
    with pytest.raises(ValueError, match="combiner must be one of 'mean', 'sqrtn' "
                                         "or 'sum', got max"):
        els(P, _csr(), combiner="max")


@pytest.mark.parametrize("bad", [[1, 2], np.array([[1, 2]]), "ids", None])
def test_bad_sp_ids_type(bad):
    with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
        els(P, bad)


def test_weights_with_csr_are_rejected():
    with pytest.raises(ValueError, match="sp_weights must be None"):
        els(P, _csr(), sp_weights=np.ones(4))


@pytest.mark.parametrize("max_norm", [None, 2.0])
@pytest.mark.parametrize("bad_id", [4, 7, -1])
def test_bad_id_changes_nothing(max_norm, bad_id):
    v = sg.Variable(P)
    before = v.numpy().copy()
    csr = sp.csr_array((np.ones(3), [0, bad_id if bad_id >= 0 else 0, 1],
                        [0, 2, 3]), shape=(2, 8))
    if bad_id < 0:
        # scipy will not build it with a negative column: a malformed matrix
        csr.indices[1] = -1
        match = r"sp_ids\.indices\[1\] = -1 is not in \[0, 8\)"
    else:
        match = r"\[1\] = .* is not in \[0, 4\)"
    with pytest.raises(InvalidArgumentError, match=match):
        els(v, csr, combiner="sum", max_norm=max_norm)
    np.testing.assert_array_equal(v.numpy(), before)
    with pytest.raises(InvalidArgumentError, match="not in"):
        els(v, Ragged([0, bad_id], [0, 2]))


def test_ragged_errors():
    with pytest.raises(InvalidArgumentError, match="row splits of sp_ids"):
        els(P, Ragged([0, 1], [0, 1, 2]), Ragged([1.0, 2.0], [0, 2, 2]))
    with pytest.raises(InvalidArgumentError, match="one weight per id"):
        els(P, Ragged([0, 1], [0, 1, 2]), np.ones(3))
    with pytest.raises(InvalidArgumentError, match="int32 or int64"):
        els(P, Ragged([0.5, 1.0], [0, 1, 2]))
    with pytest.raises(InvalidArgumentError, match="splits"):
        els(P, Ragged([0, 1], [0, 3, 2]))
    with pytest.raises(InvalidArgumentError, match="rank 1"):
        els(np.float32(1.0), Ragged([0], [0, 1]))


# -- gradients


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("max_norm", [None, 1.0])
def test_finite_differences(rng, combiner, weighted, max_norm):
    table = rng.standard_normal((6, 3))
    ids = np.array([5, 1, 1, 0, 3, 3, 3])
    w = np.array([0.5, -1.0, 2.0, 1.0, 0.25, 3.0, 1.5]) if weighted else np.ones(7)
    csr = sp.csr_array((w, ids, [0, 3, 3, 7, 7]), shape=(4, 6))
    check_gradients(lambda t: els(t, csr, combiner=combiner,
                                  max_norm=max_norm) ** 2, [table])


def test_gradient_has_one_row_per_distinct_id_and_costs_touched_rows(rng, zipf):
    import tracemalloc

    n_rows = 400_000
    table = sg.Variable(np.zeros((n_rows, 4), np.float32))      # 6.4 MB
    ids = zipf(rng, 2000, n_rows)
    csr = sp.csr_array((np.ones(2000), ids, np.arange(0, 2001, 20)),
                       shape=(100, n_rows))
    tracemalloc.start()
    with sg.GradientTape() as tape:
        y = els(table, csr, combiner="sum")
    g = tape.gradient(y, table)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1_500_000
    np.testing.assert_array_equal(g.indices.numpy(), np.unique(ids))
    np.testing.assert_array_equal(g.values.numpy()[:, 0],
                                  np.bincount(ids)[np.unique(ids)])


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_bits_do_not_depend_on_thread_count(rng, zipf, combiner):
    table = rng.standard_normal((5000, 32)).astype(np.float32)
    ids = zipf(rng, 20000, 5000)
    w = rng.uniform(0.5, 2.0, 20000)
    csr = sp.csr_array((w, ids, np.arange(0, 20001, 20)), shape=(1000, 5000))
    upstream = rng.standard_normal((1000, 32)).astype(np.float32)
    results = []
    for threads in (1, 2, 3):
        sg.set_num_threads(threads)
        v = sg.Variable(table)
        with sg.GradientTape() as tape:
            y = els(v, csr, combiner=combiner)
        g = tape.gradient(y, v, output_gradients=upstream)
        results.append((y.numpy(), g.indices.numpy(), g.values.numpy()))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert a.tobytes() == b.tobytes()


@settings(max_examples=50, deadline=None)
@given(
    combiner=st.sampled_from(["sum", "mean", "sqrtn"]),
    lengths=st.lists(st.integers(0, 4), min_size=1, max_size=6),
    weighted=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_matches_numpy_loop(combiner, lengths, weighted, seed):
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((7, 3))
    splits = np.concatenate([[0], np.cumsum(lengths)])
    ids = rng.integers(0, 7, splits[-1])
    w = rng.uniform(-1, 2, ids.size) if weighted else np.ones(ids.size)
    out = els(table, sp.csr_array((w, ids, splits), shape=(len(lengths), 7)),
              combiner=combiner).numpy()
    for r in range(len(lengths)):
        k = slice(splits[r], splits[r + 1])
        total = (w[k, None] * table[ids[k]]).sum(0)
        denom = {"sum": 1.0, "mean": w[k].sum(),
                 "sqrtn": np.sqrt((w[k] ** 2).sum())}[combiner]
        expected = total / denom if denom != 0 else np.zeros(3)
        if splits[r] == splits[r + 1]:
            expected = np.zeros(3)
        np.testing.assert_allclose(out[r], expected, rtol=1e-9, atol=1e-9)


# -- safe_embedding_lookup_sparse (section 6.2) --------------------------------------

safe = sg.nn.safe_embedding_lookup_sparse
SAFE_IDS = Ragged([1, 3, -1, 1, 2], [0, 2, 3, 4, 5, 5])
SAFE_W = np.array([2, 0.5, 1, 3, -1], np.float32)
SAFE_GOLDEN = {
    ("sum", False, None): [[10, 12], [0, 0], [3, 4], [5, 6], [0, 0]],
    ("sum", True, None): [[9.5, 12], [0, 0], [9, 12], [-5, -6], [0, 0]],
    ("sum", True, 0): [[9.5, 12], [1, 2], [9, 12], [-5, -6], [1, 2]],
    ("mean", False, None): [[5, 6], [0, 0], [3, 4], [5, 6], [0, 0]],
    ("mean", True, None): [[3.8, 4.8], [0, 0], [3, 4], [0, 0], [0, 0]],
    ("mean", True, 0): [[3.8, 4.8], [1, 2], [3, 4], [1, 2], [1, 2]],
    ("sqrtn", False, None): [[7.071068, 8.485281], [0, 0], [3, 4], [5, 6], [0, 0]],
    ("sqrtn", True, None): [[4.608177, 5.820855], [0, 0], [3, 4], [0, 0], [0, 0]],
}


@pytest.mark.parametrize("combiner,weighted,default_id", list(SAFE_GOLDEN))
def test_safe_goldens(combiner, weighted, default_id):
    out = safe(P, SAFE_IDS, SAFE_W if weighted else None, combiner=combiner,
               default_id=default_id)
    np.testing.assert_allclose(out.numpy(),
                               SAFE_GOLDEN[(combiner, weighted, default_id)],
                               rtol=1e-6)
    # the same through a scipy.sparse matrix (its values are the weights);
    # a matrix holds no negative column, so row 1 is empty from the start
    w = (SAFE_W if weighted else np.ones(5, np.float32))[[0, 1, 3, 4]]
    csr = sp.csr_array((w, [1, 3, 1, 2], [0, 2, 2, 3, 4, 4]), shape=(5, 4))
    np.testing.assert_allclose(
        safe(P, csr, combiner=combiner, default_id=default_id).numpy(),
        SAFE_GOLDEN[(combiner, weighted, default_id)], rtol=1e-6)


def test_safe_ragged_golden_and_errors():
    out = safe(P, Ragged([1, 3, -1, 2], [0, 2, 3, 3, 4]), combiner="mean")
    np.testing.assert_array_equal(out.numpy(), [[5, 6], [0, 0], [0, 0], [5, 6]])
    with pytest.raises(ValueError, match=r"Missing embedding_weights \[\]\."):
        safe([], SAFE_IDS)
    with pytest.raises(ValueError, match="combiner must be one of"):
        safe(P, SAFE_IDS, combiner="max")
    with pytest.raises(InvalidArgumentError, match="is not in"):
        safe(P, SAFE_IDS, default_id=9)
    with pytest.raises(InvalidArgumentError, match="is not in"):
        safe(P, Ragged([1, 4], [0, 2]))


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("default_id", [None, 2])
def test_safe_finite_differences(rng, combiner, default_id):
    table = rng.standard_normal((5, 3))
    ids = Ragged([4, -1, 1, 1, -1, 0, 3], [0, 3, 3, 5, 7])
    w = np.array([0.5, 1.0, 2.0, -1.0, 3.0, 1.5, 0.25])
    check_gradients(lambda t: safe(t, ids, w, combiner=combiner,
                                   default_id=default_id) ** 2, [table])


# -- TensorFlow's rules for max_norm, dtypes and default_id -------------------------


@pytest.mark.parametrize("ids", [
    sp.csr_array(([1.0, 1.0], [0, 1], [0, 1, 1, 2]), shape=(3, 4)),
    Ragged([0, 1], [0, 1, 1, 2]),
])
def test_safe_max_norm_inf_keeps_empty_rows_zero(ids):
    # every looked-up row is NaN (inf / inf, as in TensorFlow); the empty row
    # is chosen to be zeros, not multiplied by 0 (which left NaN)
    out = safe(P, ids, combiner="sum", max_norm=np.inf).numpy()
    assert np.isnan(out[[0, 2]]).all()
    np.testing.assert_array_equal(out[1], [0.0, 0.0])
    neg = safe(P, ids, combiner="sum", max_norm=-1.0).numpy()
    np.testing.assert_array_equal(neg, np.zeros((3, 2)))


def test_bags_max_norm_negative_is_zero():
    out = els(np.array([[3.0, 4.0]]), sp.csr_array(np.array([[1.0]])),
              combiner="sum", max_norm=-1.0)
    np.testing.assert_array_equal(out.numpy(), [[0.0, 0.0]])


def test_safe_dtype_of_weights_like_tensorflow():
    ids = Ragged([0, 3], [0, 1, 2])
    w32 = Ragged(np.float32([2.0, 0.5]), [0, 1, 2])
    table = sg.Variable(P.astype(np.float64))
    before = table.numpy().copy()
    with pytest.raises(ValueError, match=r"^safe_embedding_lookup_sparse: "
                       r"embedding_weights is a Variable of dtype float64 but "
                       r"sparse_weights has dtype float32"):
        safe(table, ids, w32)
    with pytest.raises(ValueError, match=r"embedding_weights\[1\] is a Tensor of "
                                         r"dtype float64"):
        safe([sg.Variable(P[:2]), sg.constant(P[2:].astype(np.float64))], ids,
             w32)
    np.testing.assert_array_equal(table.numpy(), before)
    # an array table is read in the weights' dtype, as TensorFlow converts it
    out = safe(P.astype(np.float64), ids, w32, combiner="sum")
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), [[2.0, 4.0], [3.5, 4.0]])
    # two shards given as Python lists: read in the weights' dtype
    listed = safe([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.1, 8.0]]],
                  Ragged([1, 3], [0, 2]),
                  Ragged(np.float64([1.0, 1.0]), [0, 2]), combiner="sum")
    assert listed.dtype == np.float64
    np.testing.assert_array_equal(listed.numpy(), [[3.0 + 7.1, 12.0]])
    # a matrix's values are its weights: cast to the table's dtype, no error
    csr = sp.csr_array(np.array([[2.0, 0, 0, 0.5]]))    # float64
    out = safe(sg.Variable(P.astype(np.float32)), csr, combiner="sum")
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), [[5.5, 8.0]])


@pytest.mark.parametrize("default_id,error,match", [
    (9, InvalidArgumentError,
     r"^safe_embedding_lookup_sparse: default_id = 9 is not in \[0, 4\)$"),
    (-1, InvalidArgumentError, r"default_id = -1 is not in \[0, 4\)$"),
    ("0", InvalidArgumentError, r"default_id must be an int, got '0'"),
    (True, InvalidArgumentError, r"default_id must be an int, got True"),
])
def test_bad_default_id_is_named(default_id, error, match):
    v = sg.Variable(P)
    with pytest.raises(error, match=match):
        safe(v, SAFE_IDS, default_id=default_id)
    np.testing.assert_array_equal(v.numpy(), P)


def test_unused_default_id_is_not_looked_up():
    # no row needs it (TensorFlow looks it up only for empty rows)
    out = safe(P, Ragged([1, 2], [0, 1, 2]), default_id=9, combiner="sum")
    np.testing.assert_array_equal(out.numpy(), P[[1, 2]])


def test_bad_ragged_splits_are_named():
    with pytest.raises(InvalidArgumentError,
                       match=r"sparse_ids\.row_splits must be non-decreasing, but "
                             r"row_splits\[2\] = 1 < row_splits\[1\] = 2"):
        safe(P, Ragged([0, 1], [0, 2, 1, 2]))
    with pytest.raises(InvalidArgumentError,
                       match=r"sp_ids\.row_splits must run from 0 to the number "
                             r"of ids \(2\), got 0 \.\.\. 3"):
        els(P, Ragged([0, 1], [0, 1, 3]))
    with pytest.raises(InvalidArgumentError,
                       match="sp_weights must be a RaggedTensor or one weight per "
                             "id when sp_ids is a RaggedTensor, got a scipy"):
        els(P, Ragged([0, 1], [0, 2]), sp.csr_array(np.ones((1, 2))))


def test_ragged_output_memory_is_checked():
    many = Ragged(np.zeros(1, np.int64), [0] + [1] * 2**17)
    with pytest.raises(InvalidArgumentError,
                       match=r"safe_embedding_lookup_sparse: the output of 131072 "
                             r"bags asks for"):
        safe(np.broadcast_to(1.0, (4, 2**20)), many)


def test_list_weights_take_the_tables_dtype():
    # a Python list has no dtype of its own: cast to the table's, at full
    # precision for a float64 table
    ids = Ragged([0, 3], [0, 2])
    p64 = P.astype(np.float64)
    table = sg.Variable(p64)
    out = safe(table, ids, [0.1, 0.2], combiner="sum")
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.numpy(), [0.1 * p64[0] + 0.2 * p64[3]])
    np.testing.assert_array_equal(els(table, ids, [0.1, 0.2], combiner="sum").numpy(),
                                  out.numpy())
