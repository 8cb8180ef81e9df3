"""Lookups and embedding bags on float16 and bfloat16 tables.

The reference of every test is the float32 path on the upcast table: a half
lookup's result is that result rounded once to the half type (bit for bit),
its result with ``dtype=float32`` is that result itself, and so are the
gradients (rounded once for a half result, the float32 gradient itself with
``dtype=float32``).  TensorFlow 2.21 gives the table's dtype for the result
and the gradient of every op here (checked with its float16 and bfloat16
kernels); the bags' sums in float32 match its sparse segment kernels
(``2048 + 1 + 1`` gives 2050 in float16, 258 for ``256 + 1 + 1`` in
bfloat16).
"""

import re
import tracemalloc

import ml_dtypes
import numpy as np
import pytest
import scipy.sparse as sp

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.ops.sparse_segment_ops import embedding_bag

from .half_bits import assert_same_bits as _assert_same_bits

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
HALVES = pytest.mark.parametrize("half", [BF16, F16], ids=["bfloat16", "float16"])
OUT = pytest.mark.parametrize("dtype", [None, "float32"], ids=["half", "float32"])


def _table(half, shape=(7, 3), seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 3).astype(half)


def _run(f, table, dtype, upstream_seed=1):
    """``(result, gradient w.r.t. the table)`` of ``f(Variable(table),
    dtype)`` under a tape, the gradient seeded with a fixed upstream in the
    result's dtype."""
    v = sg.Variable(table)
    with sg.GradientTape() as tape:
        y = f(v, dtype)
    rng = np.random.default_rng(upstream_seed)
    upstream = rng.standard_normal(y.shape).astype(y.dtype)
    g = tape.gradient(y, v, output_gradients=sg.constant(upstream))
    return y, g, upstream


def _check_against_float32(f, table, dtype):
    """The half run of `f` against the float32 run on the upcast table."""
    y, g, upstream = _run(f, table, dtype)
    out = table.dtype if dtype is None else np.dtype(dtype)
    assert y.dtype == out
    v32 = sg.Variable(table.astype(np.float32))
    with sg.GradientTape() as tape:
        y32 = f(v32, None)
    g32 = tape.gradient(y32, v32,
                        output_gradients=sg.constant(upstream.astype(np.float32)))
    _assert_same_bits(y.numpy(), y32.numpy().astype(out))
    assert type(g) is type(g32)
    if isinstance(g, sg.IndexedSlices):
        assert g.dense_shape == g32.dense_shape
        np.testing.assert_array_equal(g.indices.numpy(), g32.indices.numpy())
        g, g32 = g.values, g32.values
    # with dtype=float32 the float32 gradient itself; else it rounded once
    _assert_same_bits(g.numpy(), g32.numpy().astype(out))
    return y, g


# -- gather and embedding_lookup ------------------------------------------------


@HALVES
@OUT
def test_gather_reads_half_rows_in_their_dtype_or_float32(half, dtype):
    table = _table(half)
    y, g = _check_against_float32(
        lambda v, d: sg.gather(v, [[4, 0], [4, 6]], dtype=d), table, dtype)
    assert g.dtype == y.dtype
    _assert_same_bits(y.numpy().astype(half), table[[[4, 0], [4, 6]]])


@HALVES
@OUT
def test_gather_along_another_axis_and_with_batch_dims(half, dtype):
    table = _table(half, (3, 5, 2))
    _check_against_float32(lambda v, d: sg.gather(v, [4, 1, 4], axis=1, dtype=d),
                           table, dtype)
    _check_against_float32(
        lambda v, d: sg.gather(v, [[0, 4], [2, 2], [1, 3]], axis=1, batch_dims=1,
                               dtype=d), table, dtype)


@HALVES
@OUT
def test_embedding_lookup_of_a_half_table(half, dtype):
    table = _table(half)
    y, g = _check_against_float32(
        lambda v, d: sg.nn.embedding_lookup(v, [[3, 3], [0, 6]], dtype=d),
        table, dtype)
    assert isinstance(g, sg.Tensor) and g.dtype == y.dtype


def _check_shards_against_float32(f, table, dtype):
    """`f(shards, dtype)` on three half shard Variables of `table` against
    the float32 run on the upcast shards: results and each shard's
    IndexedSlices gradient (one row per id occurrence, each the float32 row
    rounded once, or itself with ``dtype=float32``)."""
    pieces = [table[:3], table[3:5], table[5:]]
    shards = [sg.Variable(p) for p in pieces]
    shards32 = [sg.Variable(p.astype(np.float32)) for p in pieces]
    with sg.GradientTape() as tape:
        y = f(shards, dtype)
    upstream = np.linspace(-2, 2, y.numpy().size).reshape(y.shape).astype(y.dtype)
    grads = tape.gradient(y, shards, output_gradients=sg.constant(upstream))
    with sg.GradientTape() as tape:
        y32 = f(shards32, None)
    grads32 = tape.gradient(y32, shards32, output_gradients=sg.constant(
        upstream.astype(np.float32)))
    out = table.dtype if dtype is None else F32
    _assert_same_bits(y.numpy(), y32.numpy().astype(out))
    for g, g32 in zip(grads, grads32):
        assert g.values.dtype == out
        np.testing.assert_array_equal(g.indices.numpy(), g32.indices.numpy())
        _assert_same_bits(g.values.numpy(), g32.values.numpy().astype(out))


@HALVES
@OUT
@pytest.mark.parametrize("strategy", ["div", "mod"])
def test_embedding_lookup_of_half_shards(half, dtype, strategy):
    _check_shards_against_float32(
        lambda shards, d: sg.nn.embedding_lookup(
            shards, [6, 0, 4, 4, 2], partition_strategy=strategy, dtype=d),
        _table(half), dtype)


@HALVES
@OUT
@pytest.mark.parametrize("max_norm", [0.5, 4.0, 0.0])
def test_max_norm_clips_half_rows_in_float32(half, dtype, max_norm):
    table = _table(half)
    table[2] = 0          # a zero row stays zeros
    y, g = _check_against_float32(
        lambda v, d: sg.nn.embedding_lookup(v, [1, 2, 5, 1], max_norm=max_norm,
                                            dtype=d), table, dtype)
    assert isinstance(g, np.ndarray) or g.dtype == y.dtype


def test_max_norm_on_float16_rows_is_no_longer_computed_in_float16():
    # |(300, 400)| = 500: 300**2 + 400**2 overflows float16 (inf), which
    # clipped the row to zeros; in float32 the row is scaled to norm 1.
    table = np.array([[300.0, 400.0]], np.float16)
    got = sg.nn.embedding_lookup(table, [0], max_norm=1.0)
    assert got.dtype == F16
    np.testing.assert_array_equal(got.numpy(), np.array([[0.6, 0.8]], np.float16))


@HALVES
def test_the_table_is_not_changed_and_the_rows_have_their_values(half):
    table = _table(half)
    before = table.copy()
    for kind in (np.asarray, sg.constant, sg.Variable):
        y = sg.nn.embedding_lookup(kind(table), [5, 1], dtype=np.float32)
        np.testing.assert_array_equal(y.numpy(), before[[5, 1]].astype(np.float32))
        y = sg.gather(kind(table), [5, 1])
        _assert_same_bits(y.numpy(), before[[5, 1]])
    _assert_same_bits(table, before)


# -- embedding bags ---------------------------------------------------------------


_IDS = sp.csr_array(([0.5, 1.0, 2.0, 1.0, 3.0, 1.25, 0.75],
                     [0, 1, 3, 5, 1, 6, 1], [0, 2, 2, 5, 7]), shape=(4, 7))


@HALVES
@OUT
@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("max_norm", [None, 2.0])
def test_embedding_lookup_sparse_sums_in_float32(half, dtype, combiner, max_norm):
    table = _table(half)
    y, g = _check_against_float32(
        lambda v, d: sg.nn.embedding_lookup_sparse(
            v, _IDS, combiner=combiner, max_norm=max_norm, dtype=d),
        table, dtype)
    assert g.dtype == y.dtype


@HALVES
@OUT
@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_embedding_lookup_sparse_with_ragged_ids_and_weights(half, dtype, combiner):
    table = _table(half)
    ids = sg.RaggedTensor.from_row_splits([3, 0, 3, 6, 1, 2], [0, 3, 3, 6])
    weights = sg.RaggedTensor.from_row_splits(
        np.array([0.5, 2.0, 1.5, 1.0, 0.25, 3.0], np.float32), [0, 3, 3, 6])
    _check_against_float32(
        lambda v, d: sg.nn.embedding_lookup_sparse(v, ids, weights, combiner=combiner,
                                                   dtype=d), table, dtype)
    # weights of the table's half dtype are read exactly in float32
    half_w = sg.RaggedTensor.from_row_splits(
        np.array([0.5, 2.0, 1.5, 1.0, 0.25, 3.0], half), [0, 3, 3, 6])
    got = sg.nn.embedding_lookup_sparse(table, ids, half_w, combiner=combiner,
                                        dtype=dtype)
    want = sg.nn.embedding_lookup_sparse(table, ids, weights, combiner=combiner,
                                         dtype=dtype)
    _assert_same_bits(got.numpy(), want.numpy())


@HALVES
@OUT
@pytest.mark.parametrize("max_norm", [None, 1.5])
def test_embedding_lookup_sparse_over_shards(half, dtype, max_norm):
    # one gradient row per id occurrence (the rows go through the sharded
    # lookup), each the float32 one rounded once
    _check_shards_against_float32(
        lambda shards, d: sg.nn.embedding_lookup_sparse(
            shards, _IDS, combiner="sqrtn", max_norm=max_norm, dtype=d),
        _table(half), dtype)


@HALVES
@OUT
@pytest.mark.parametrize("combiner", ["sum", "mean"])
def test_safe_embedding_lookup_sparse(half, dtype, combiner):
    table = _table(half)
    ids = sg.RaggedTensor.from_row_splits([3, -1, 5, 1, 1], [0, 3, 3, 5])
    for default_id in (None, 2):
        _check_against_float32(
            lambda v, d, k=default_id: sg.nn.safe_embedding_lookup_sparse(
                v, ids, combiner=combiner, default_id=k, max_norm=3.0, dtype=d),
            table, dtype)


@HALVES
@OUT
def test_embedding_bag(half, dtype):
    table = _table(half)
    ids, splits = [0, 6, 6, 2, 1], [0, 3, 3, 5]
    weights = np.array([0.1, 2.0, 0.5, 1.0, 3.0])
    for combiner in ("sum", "mean", "sqrtn"):
        _check_against_float32(
            lambda v, d, c=combiner: embedding_bag(v, ids, splits, weights, c,
                                                   dtype=d),
            table, dtype)


@pytest.mark.parametrize("half,big,want", [(F16, 2048.0, 2050.0),
                                           (BF16, 256.0, 258.0)])
def test_a_bag_is_summed_in_float32_and_rounded_once(half, big, want):
    # 2048 + 1 is a tie that float16 rounds back to 2048 (256 + 1 in
    # bfloat16): summed in the half type, the ones would be lost.
    table = np.array([[big], [1.0], [1.0]], half)
    ids = sp.csr_array(([1.0, 1.0, 1.0], [0, 1, 2], [0, 3]), shape=(1, 3))
    for dtype, out in ((None, half), ("float32", F32)):
        got = sg.nn.embedding_lookup_sparse(table, ids, combiner="sum", dtype=dtype)
        assert got.dtype == out and got.numpy().tolist() == [[want]]


# -- cost and threads -------------------------------------------------------------


@HALVES
def test_only_the_looked_up_rows_are_converted(half):
    big = np.ones((200_000, 16), half)       # 6.4 MB; its float32 copy: 12.8 MB
    ids = sp.csr_array(([1.0, 1.0, 1.0], [5, 7, 5], [0, 2, 3]), shape=(2, 200_000))
    tracemalloc.start()
    rows = sg.nn.embedding_lookup(big, [5, 7], dtype=np.float32)
    bags = sg.nn.embedding_lookup_sparse(big, ids, dtype=np.float32)
    half_bags = sg.nn.embedding_lookup_sparse(big, ids, combiner="sqrtn")
    clipped = sg.nn.embedding_lookup(big, [5, 7], max_norm=1.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1_000_000
    assert rows.dtype == bags.dtype == F32 and half_bags.dtype == clipped.dtype == half
    np.testing.assert_array_equal(bags.numpy(), np.ones((2, 16), np.float32))


@HALVES
@OUT
def test_the_same_bits_on_one_two_and_three_threads(half, dtype):
    rng = np.random.default_rng(7)
    table = (rng.standard_normal((300, 24)) * 10).astype(half)
    ids = rng.integers(0, 300, 5000)
    splits = np.concatenate([[0], np.sort(rng.integers(0, 5000, 99)), [5000]])
    weights = rng.uniform(0.1, 2.0, 5000)
    results = []
    old = sg.get_num_threads()
    try:
        for n in (1, 2, 3):
            sg.set_num_threads(n)
            results.append(_run(
                lambda v, d: embedding_bag(v, ids, splits, weights, "sqrtn", dtype=d),
                table, dtype))
    finally:
        sg.set_num_threads(old)
    for y, g, _ in results[1:]:
        _assert_same_bits(y.numpy(), results[0][0].numpy())
        _assert_same_bits(g.values.numpy(), results[0][1].values.numpy())


# -- the dtype argument -----------------------------------------------------------


def _refused(call, message):
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        call()


@pytest.mark.parametrize("table_dtype,dtype", [
    (F16, "float64"), (F16, BF16), (BF16, np.float16), ("float32", "float16"),
    ("float64", "float32"), ("float32", "not a dtype"), ("int32", "float32"),
])
def test_another_dtype_is_refused_and_nothing_changes(table_dtype, dtype):
    shown = "'not a dtype'" if dtype == "not a dtype" else np.dtype(dtype).name
    table_dtype = np.dtype(table_dtype)
    v = sg.Variable(np.arange(6).reshape(3, 2).astype(table_dtype))
    before = v.numpy().copy()
    ids = sp.csr_array(([1.0, 1.0], [0, 2], [0, 1, 2]), shape=(2, 3))
    ragged = sg.RaggedTensor.from_row_splits([0, 2], [0, 1, 2])
    tail = (f"dtype must be None, the table's dtype ({table_dtype}) or float32 for "
            f"a float16 or bfloat16 table, got {shown}")
    with sg.GradientTape():
        _refused(lambda: sg.gather(v, [0], dtype=dtype), "gather: " + tail)
        _refused(lambda: sg.nn.embedding_lookup(v, [0], dtype=dtype),
                 "embedding_lookup: " + tail)
        _refused(lambda: sg.nn.embedding_lookup([v, v], [0], dtype=dtype),
                 "embedding_lookup: " + tail)
        _refused(lambda: embedding_bag(v, [0], [0, 1], dtype=dtype),
                 "embedding_bag: " + tail)
        if table_dtype.kind != "i":
            _refused(lambda: sg.nn.embedding_lookup_sparse(v, ids, dtype=dtype),
                     "embedding_lookup_sparse: " + tail)
            _refused(lambda: sg.nn.safe_embedding_lookup_sparse(v, ragged,
                                                                dtype=dtype),
                     "safe_embedding_lookup_sparse: " + tail)
    np.testing.assert_array_equal(v.numpy(), before)


def test_the_table_dtype_itself_may_be_named():
    table = np.arange(6.0).reshape(3, 2)
    for dtype in ("float64", np.float64, np.dtype(np.float64)):
        got = sg.nn.embedding_lookup(table, [2, 0], dtype=dtype)
        assert got.dtype == np.float64 and got.numpy().tolist() == [[4, 5], [0, 1]]


def test_a_half_table_read_as_weights_of_another_dtype_follows_tensorflow():
    # an array table takes the dtype of weights that have one (TensorFlow's
    # rule); dtype must then name that dtype (or float32 for half weights)
    table = _table(F16)
    ids = sg.RaggedTensor.from_row_splits([1, 2], [0, 1, 2])
    weights = sg.RaggedTensor.from_row_splits(np.array([2.0, 0.5], BF16), [0, 1, 2])
    got = sg.nn.safe_embedding_lookup_sparse(table, ids, weights, combiner="sum")
    assert got.dtype == BF16
    wide = sg.nn.safe_embedding_lookup_sparse(table, ids, weights, combiner="sum",
                                              dtype="float32")
    assert wide.dtype == F32
    _assert_same_bits(wide.numpy().astype(BF16), got.numpy())
    _refused(lambda: sg.nn.safe_embedding_lookup_sparse(
        table, ids, weights, combiner="sum", dtype="float16"),
        "safe_embedding_lookup_sparse: dtype must be None, the table's dtype "
        "(bfloat16) or float32")
