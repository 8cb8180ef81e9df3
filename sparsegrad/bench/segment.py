"""Segment reductions, ragged.range and the embedding bag (issue 11).

* ``segment/segment_sum_int32`` and ``_int64``: ``sg.math.segment_sum`` of
  10,000,000 float32 values into 200,000 sorted segments (ids uniform, then
  sorted) against ``tf.math.segment_sum`` and ``np.add.reduceat`` with the
  segment offsets given (no id pass, no checks, empty segments not filled).
* ``segment/unsorted_segment_sum_sorted`` and ``_shuffled``:
  ``sg.math.unsorted_segment_sum`` on the same int32 ids, as they are and
  shuffled together with the data, against ``tf.math.unsorted_segment_sum``,
  PyTorch ``index_add_`` and NumPy ``np.add.at`` (shuffled only).
* ``segment/ragged_range_int32`` and ``_float32``: ``sg.ragged.range`` over
  200,000 rows of lengths uniform in 0..99 (about 10 million values, int64
  row splits) against ``tf.ragged.range`` and, for int32, NumPy ``repeat`` +
  ``cumsum``.
* ``segment/ragged_reduce_sum_rank2``: ``sg.ragged.reduce_sum(rt, axis=2)``
  of a ragged-rank-2 RaggedTensor of 10 million float32 values (500,000
  inner rows of random lengths, in 100,000 outer rows), against
  ``tf.reduce_sum(rt, axis=2)`` on the same data.
* ``segment/ragged_segment_sum``: ``sg.math.unsorted_segment_sum(rt, ids,
  100000)`` of a RaggedTensor of 10 million float32 values (500,000 rows of
  random lengths, mean 20; int64 row splits) by sorted int64 row ids into
  100,000 segments, against ``tf.math.unsorted_segment_sum`` on the same
  RaggedTensor.
* ``segment/embedding_bag_forward``: ``sg.nn.embedding_lookup_sparse(combiner
  ="sum")`` of 16,384 bags of 20 Zipf(1.1) ids (a CSR matrix) on a 1,000,000
  x 64 float32 table, against ``torch.nn.EmbeddingBag(mode="sum")``,
  ``tf.nn.embedding_lookup_sparse`` and FBGEMM's CPU table-batched embedding
  (``SplitTableBatchedEmbeddingBagsCodegen``, one table on the host,
  ``PoolingMode.SUM``).
* ``segment/embedding_bag_step``: the same forward, the gradient for a fixed
  upstream gradient and a sparse Adagrad step (learning rate 0.1), against
  ``EmbeddingBag(sparse=True)`` + ``torch.optim.Adagrad`` and a TensorFlow
  ``tf.function`` with ``tf.compat.v1.train.AdagradOptimizer``.
* ``segment/embedding_bag_step_rowwise``: the same forward and gradient and a
  row-wise Adagrad step, ``sg.optimizers.RowwiseAdagrad(0.1)`` against
  FBGEMM's ``OptimType.EXACT_ROWWISE_ADAGRAD`` (float32 weights), whose
  backward applies the step itself (fused).  Both do the same math: per
  distinct row, ``a += mean(g**2)`` over the row's summed gradient ``g``,
  then ``w -= 0.1 * g / (sqrt(a) + 1e-7)``.  FBGEMM starts its accumulators
  at 0, so the setup fills them with sparsegrad's 0.1, and passes
  ``eps=1e-7`` (FBGEMM's default is 1e-8); after one step the two tables
  agree to float32 rounding.
* ``segment/embedding_bag_forward_float16``: the forward on the table
  rounded to float16 (the sums taken in float32, the output float16), against
  ``EmbeddingBag(mode="sum")`` with a float16 weight and FBGEMM with
  ``SparseType.FP16`` weights and output.  A peer whose CPU kernels lack
  float16 is reported missing with the reason (``case.Unsupported``).
* ``segment/embedding_bag_step_rowwise_fp16``: the row-wise step on a float16
  table: ``RowwiseAdagrad(0.1)`` (float32 accumulators, float32 arithmetic,
  each weight rounded to nearest once) on a float16 ``Variable`` looked up
  with ``dtype="float32"`` (float32 output, upstream gradient and gradient
  rows); FBGEMM's step with float16 weights
  (``weights_precision=SparseType.FP16``; float32 output and accumulators,
  as in the float32 case): the same setup on both sides.
* ``segment/embedding_bag_step_rowwise_bf16``: the same on a bfloat16 table;
  FBGEMM with ``SparseType.BF16`` weights where its CPU kernels take them
  (1.8.0's do not: its CPU forward has no bfloat16 kernel, and the table
  says so).

The bag steps and ``end_to_end/ctr_step`` are steady-state cases
(``Case.steps``): each process times 100 consecutive steps, and the table
shows how their blocks of 10 compare.

Floors: segment sums read the values and the ids and write the output;
``ragged.range`` reads its three inputs and writes the splits and values; the
ragged reduction reads the values and the inner splits and writes one sum per
inner row; the ragged segment sum reads the values, the splits and the ids
and writes the merged rows; the
bag forward reads every looked-up row and writes the output, and the step
adds reading the upstream gradient and reading and writing the table and
accumulator rows of every distinct id (random rows are bound by latency more
than bandwidth, so this floor is optimistic).  Row-wise Adagrad reads and
writes one float32 accumulator per distinct row instead of a row of them.
On a half table, its rows are half the bytes, and so are the forward's
output (the table's dtype); the steps' output and upstream gradient are
float32, as are the accumulators.
"""

from . import inputs
from .case import Case, Unsupported
from .sizes import BAGS, RAGGED_ROWS, RAGGED_SEGMENT, RAGGED_VALUES, SEGMENT

# ---------------------------------------------------------------------------
# Segment sums.


def _segment_sizes(quick):
    return SEGMENT.pick(quick)


def _segment_inputs(quick, id_dtype, shuffled=False):
    """Sorted ids and float32 data (or the same pairs shuffled together)."""
    import numpy as np

    n_values, n_segments = _segment_sizes(quick)
    rng = np.random.default_rng(4)
    ids = np.sort(rng.integers(0, n_segments, n_values)).astype(id_dtype)
    data = rng.standard_normal(n_values, dtype=np.float32)
    if shuffled:
        perm = rng.permutation(n_values)
        ids, data = ids[perm], data[perm]
    return ids, data, n_segments


def _segment_bytes(id_dtype):
    def floor(quick):
        import numpy as np

        n_values, n_segments = _segment_sizes(quick)
        return n_values * (4 + np.dtype(id_dtype).itemsize) + 4 * n_segments

    return floor


def _segment_sum_sparsegrad(id_dtype):
    def setup(quick):
        import sparsegrad as sg

        ids, data, _ = _segment_inputs(quick, id_dtype)
        return lambda: sg.math.segment_sum(data, ids)

    return setup


def _segment_sum_tensorflow(id_dtype):
    def setup(quick):
        import tensorflow as tf

        ids, data, _ = _segment_inputs(quick, id_dtype)
        t_ids, t_data = tf.constant(ids), tf.constant(data)
        return lambda: tf.math.segment_sum(t_data, t_ids)

    return setup


def _segment_sum_numpy(id_dtype):
    def setup(quick):
        import numpy as np

        ids, data, _ = _segment_inputs(quick, id_dtype)
        offsets = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        return lambda: np.add.reduceat(data, offsets)

    return setup


def _unsorted_sparsegrad(shuffled):
    def setup(quick):
        import numpy as np

        import sparsegrad as sg

        ids, data, n = _segment_inputs(quick, np.int32, shuffled)
        return lambda: sg.math.unsorted_segment_sum(data, ids, n)

    return setup


def _unsorted_tensorflow(shuffled):
    def setup(quick):
        import numpy as np
        import tensorflow as tf

        ids, data, n = _segment_inputs(quick, np.int32, shuffled)
        t_ids, t_data = tf.constant(ids), tf.constant(data)
        return lambda: tf.math.unsorted_segment_sum(t_data, t_ids, n)

    return setup


def _unsorted_torch(shuffled):
    def setup(quick):
        import numpy as np
        import torch

        ids, data, n = _segment_inputs(quick, np.int32, shuffled)
        t_ids, t_data = torch.from_numpy(ids.astype(np.int64)), torch.from_numpy(data)
        return lambda: torch.zeros(n).index_add_(0, t_ids, t_data)

    return setup


def _unsorted_numpy(quick):
    import numpy as np

    ids, data, n = _segment_inputs(quick, np.int32, shuffled=True)

    def run():
        out = np.zeros(n, np.float32)
        np.add.at(out, ids, data)
        return out

    return run


# ---------------------------------------------------------------------------
# The innermost reduction of a RaggedTensor of ragged rank 2.


def _rank2_inputs(quick):
    """flat values (float32) and the outer and inner row splits (int64):
    inner rows cut at random points (mean length 20), outer rows likewise
    (mean 5 inner rows)."""
    import numpy as np

    n_values = RAGGED_VALUES.pick(quick)
    n_inner, n_outer = n_values // 20, n_values // 100
    rng = np.random.default_rng(11)
    values = rng.standard_normal(n_values).astype(np.float32)
    inner = np.concatenate(
        [[0], np.sort(rng.integers(0, n_values + 1, n_inner - 1)), [n_values]])
    outer = np.concatenate(
        [[0], np.sort(rng.integers(0, n_inner + 1, n_outer - 1)), [n_inner]])
    return values, outer.astype(np.int64), inner.astype(np.int64)


def _rank2_bytes(quick):
    values, _, inner = _rank2_inputs(quick)
    return values.nbytes + inner.nbytes + 4 * (inner.size - 1)


def _rank2_sparsegrad(quick):
    import sparsegrad as sg

    values, outer, inner = _rank2_inputs(quick)
    rt = sg.RaggedTensor.from_nested_row_splits(values, [outer, inner])
    return lambda: sg.ragged.reduce_sum(rt, axis=2)


def _rank2_tensorflow(quick):
    import tensorflow as tf

    values, outer, inner = _rank2_inputs(quick)
    rt = tf.RaggedTensor.from_nested_row_splits(
        tf.constant(values), [tf.constant(outer), tf.constant(inner)])
    return lambda: tf.reduce_sum(rt, axis=2)


# ---------------------------------------------------------------------------
# The segment sum of a RaggedTensor's rows.


def _rsegment_inputs(quick):
    """flat values (float32), row splits (int64; rows cut at random points,
    mean length 20) and sorted row ids (int64, uniform over the segments)."""
    import numpy as np

    n_values, n_segments = RAGGED_SEGMENT.pick(quick)
    n_rows = n_values // 20
    rng = np.random.default_rng(12)
    values = rng.standard_normal(n_values).astype(np.float32)
    splits = np.concatenate(
        [[0], np.sort(rng.integers(0, n_values + 1, n_rows - 1)), [n_values]])
    ids = np.sort(rng.integers(0, n_segments, n_rows))
    return values, splits.astype(np.int64), ids, n_segments


def _rsegment_bytes(quick):
    import numpy as np

    values, splits, ids, n_segments = _rsegment_inputs(quick)
    longest = np.zeros(n_segments, np.int64)
    np.maximum.at(longest, ids, np.diff(splits))
    return values.nbytes + splits.nbytes + ids.nbytes + 4 * int(longest.sum())


def _rsegment_sparsegrad(quick):
    import sparsegrad as sg

    values, splits, ids, n_segments = _rsegment_inputs(quick)
    rt = sg.RaggedTensor.from_row_splits(values, splits)
    return lambda: sg.math.unsorted_segment_sum(rt, ids, n_segments)


def _rsegment_tensorflow(quick):
    import tensorflow as tf

    values, splits, ids, n_segments = _rsegment_inputs(quick)
    rt = tf.RaggedTensor.from_row_splits(tf.constant(values), tf.constant(splits))
    tids = tf.constant(ids)
    return lambda: tf.math.unsorted_segment_sum(rt, tids, n_segments)


# ---------------------------------------------------------------------------
# ragged.range.


def _range_inputs(quick, dtype):
    """starts, limits, deltas of rows with lengths uniform in 0..99."""
    import numpy as np

    n_rows = RAGGED_ROWS.pick(quick)
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 100, n_rows)
    starts = rng.integers(-1000, 1000, n_rows)
    deltas = rng.integers(1, 4, n_rows) * rng.choice([-1, 1], n_rows)
    if np.dtype(dtype).kind == "f":
        starts = starts + rng.uniform(0, 1, n_rows)
        deltas = deltas * 0.25
        # limits half a step before the end, so float lengths are not borderline
        limits = np.where(lengths == 0, starts, starts + (lengths - 0.5) * deltas)
    else:
        limits = starts + lengths * deltas
    return starts.astype(dtype), limits.astype(dtype), deltas.astype(dtype), lengths


def _range_bytes(dtype):
    def floor(quick):
        import numpy as np

        starts, _, _, lengths = _range_inputs(quick, dtype)
        itemsize = np.dtype(dtype).itemsize
        n_values = int(lengths.sum())
        return 3 * starts.nbytes + 8 * (lengths.size + 1) + itemsize * n_values

    return floor


def _range_sparsegrad(dtype):
    def setup(quick):
        import sparsegrad as sg

        starts, limits, deltas, _ = _range_inputs(quick, dtype)
        return lambda: sg.ragged.range(starts, limits, deltas)

    return setup


def _range_tensorflow(dtype):
    def setup(quick):
        import tensorflow as tf

        starts, limits, deltas, _ = _range_inputs(quick, dtype)
        s, lim, d = tf.constant(starts), tf.constant(limits), tf.constant(deltas)
        return lambda: tf.ragged.range(s, lim, d, row_splits_dtype=tf.int64)

    return setup


def _range_numpy(quick):
    import numpy as np

    starts, limits, deltas, _ = _range_inputs(quick, "int32")

    def run():
        # start + k * delta in each row (what repeated addition gives for ints)
        lengths = np.maximum(-(-(limits - starts) // deltas), 0).astype(np.int64)
        splits = np.zeros(lengths.size + 1, np.int64)
        np.cumsum(lengths, out=splits[1:])
        rows = np.repeat(np.arange(lengths.size), lengths)
        k = np.arange(splits[-1]) - splits[rows]
        return splits, (starts[rows] + k * deltas[rows]).astype(starts.dtype)

    return run


# ---------------------------------------------------------------------------
# The embedding bag.

BAG = 20
BAG_LEARNING_RATE = 0.1
# sparsegrad's RowwiseAdagrad defaults, given to FBGEMM too.
ROWWISE_INITIAL_ACCUMULATOR = 0.1
ROWWISE_EPSILON = 1e-7
# Timed steps per process of the bag steps (steady-state cases).
BAG_STEPS = 100


def _bag_ids(quick):
    """The flat ids of the bags and the CSR row pointer."""
    import numpy as np

    n_rows, _, _ = inputs.embedding_sizes(quick)
    n_bags = BAGS.pick(quick)
    ids = inputs.zipf_ids(n_bags * BAG, n_rows, seed=6)
    return ids, np.arange(0, n_bags * BAG + 1, BAG, dtype=np.int64)


def _bag_inputs(quick):
    """The table, the flat ids, the CSR row pointer and the upstream gradient."""
    import numpy as np

    ids, indptr = _bag_ids(quick)
    table = inputs.table(quick, scale=0.01)
    upstream = np.random.default_rng(7).standard_normal(
        (indptr.size - 1, table.shape[1]), dtype=np.float32)
    return table, ids, indptr, upstream


def _bag_bytes(step, rowwise=False, weight_bytes=4, out_bytes=4):
    """The floor of a bag case: `step` adds the gradient and the update;
    `rowwise` keeps one float32 accumulator per row; `weight_bytes` is the
    size of one table element and `out_bytes` that of one element of the
    output and of the upstream gradient."""

    def floor(quick):
        ids, indptr = _bag_ids(quick)
        width = inputs.embedding_sizes(quick)[1]
        row = width * weight_bytes
        out = (indptr.size - 1) * width * out_bytes
        n_bytes = ids.size * row + out
        if step:
            state = 4 if rowwise else width * 4
            n_bytes += out + 2 * inputs.n_distinct(ids) * (row + state)
        return n_bytes

    return floor


def sparsegrad_bag(quick, step, rowwise=False, dtype="float32"):
    """sparsegrad's embedding bag of the bag cases, before any call.

    Parameters
    ----------
    quick : bool
        The reduced size.
    step : bool
        The forward, its gradient and an optimizer step (else the forward
        alone).
    rowwise : bool, optional
        ``RowwiseAdagrad`` (float32 accumulators) instead of ``Adagrad``.
    dtype : str, optional
        The table's dtype: the cases' float32 table rounded to it to nearest
        (``"float16"``, ``"bfloat16"``).  The forward's output has this
        dtype; a step looks the table up with ``dtype="float32"`` (float32
        output, upstream gradient and gradient rows, as FBGEMM's).

    Returns
    -------
    run : callable
        One forward (``embedding_lookup_sparse(combiner="sum")`` of the CSR
        bags), or one step.
    table : sparsegrad.Variable
        The table it reads (and updates).

    Examples
    --------
    >>> run, table = sparsegrad_bag(True, step=True, rowwise=True, dtype="float16")
    >>> before = table.numpy().copy()
    >>> run()
    >>> str(table.dtype), bool((table.numpy() != before).any())
    ('float16', True)
    """
    import numpy as np
    import scipy.sparse

    import sparsegrad as sg

    table, ids, indptr, upstream = _bag_inputs(quick)
    dtype = np.dtype(dtype)
    var = sg.Variable(table.astype(dtype))
    csr = scipy.sparse.csr_array(
        (np.ones(ids.size, np.float32), ids.astype(np.int32), indptr),
        shape=(indptr.size - 1, table.shape[0]))
    if not step:
        return (lambda: sg.nn.embedding_lookup_sparse(var, csr, combiner="sum")), var
    opt = (sg.optimizers.RowwiseAdagrad(BAG_LEARNING_RATE) if rowwise
           else sg.optimizers.Adagrad(BAG_LEARNING_RATE))

    def run():
        with sg.GradientTape() as tape:
            out = sg.nn.embedding_lookup_sparse(var, csr, combiner="sum",
                                                dtype="float32")
        grad = tape.gradient(out, var, output_gradients=upstream)
        opt.apply_gradients([(grad, var)])

    return run, var


def _bag_sparsegrad(step, rowwise=False, dtype="float32"):
    def setup(quick):
        return sparsegrad_bag(quick, step, rowwise, dtype)[0]

    return setup


def _first_line(exc):
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:160] if lines else ''}"


def _bag_torch(step, dtype="float32"):
    def setup(quick):
        import warnings

        import torch

        table, ids, indptr, upstream = _bag_inputs(quick)
        t_dtype = getattr(torch, dtype)
        t_ids = torch.from_numpy(ids)
        offsets = torch.from_numpy(indptr[:-1].copy())
        up = torch.from_numpy(upstream).to(t_dtype)
        bag = torch.nn.EmbeddingBag(*table.shape, mode="sum", sparse=True,
                                    dtype=t_dtype)
        with torch.no_grad():
            bag.weight.copy_(torch.from_numpy(table))
        warnings.filterwarnings("ignore", message="Sparse invariant checks")
        if not step:
            def forward():
                with torch.no_grad():
                    return bag(t_ids, offsets)

            try:
                forward()
            except (RuntimeError, NotImplementedError) as exc:
                raise Unsupported(f"torch {torch.__version__}: EmbeddingBag has no "
                                  f"CPU kernel for {dtype} weights "
                                  f"({_first_line(exc)})") from None
            return forward
        opt = torch.optim.Adagrad(bag.parameters(), lr=BAG_LEARNING_RATE)

        def run():
            opt.zero_grad(set_to_none=True)
            bag(t_ids, offsets).backward(up)
            opt.step()

        return run

    return setup


def _bag_tensorflow(step):
    def setup(quick):
        import numpy as np
        import tensorflow as tf

        table, ids, indptr, upstream = _bag_inputs(quick)
        n_bags = indptr.size - 1
        rows = np.repeat(np.arange(n_bags), BAG)
        cols = np.tile(np.arange(BAG), n_bags)
        sp_ids = tf.SparseTensor(np.stack([rows, cols], 1), ids, (n_bags, BAG))
        var = tf.Variable(table)
        if not step:
            return lambda: tf.nn.embedding_lookup_sparse(var, sp_ids, None,
                                                         combiner="sum")
        up = tf.constant(upstream)
        opt = tf.compat.v1.train.AdagradOptimizer(BAG_LEARNING_RATE)

        @tf.function
        def run():
            with tf.GradientTape() as tape:
                out = tf.nn.embedding_lookup_sparse(var, sp_ids, None, combiner="sum")
            grad = tape.gradient(out, var, output_gradients=up)
            opt.apply_gradients([(grad, var)])

        return run

    return setup


# FBGEMM's SparseType of each dtype of the cases.
FBGEMM_TYPES = {"float32": "FP32", "float16": "FP16", "bfloat16": "BF16"}


def fbgemm_bag(quick, weights="float32", output="float32"):
    """FBGEMM's embedding bag of the bag cases, and its inputs as tensors.

    One host table of the cases' initial values (rounded to nearest to
    `weights`), run by FBGEMM's CPU kernels
    (``SplitTableBatchedEmbeddingBagsCodegen``), sum pooling, and the fused
    ``EXACT_ROWWISE_ADAGRAD`` of the bag steps: learning rate 0.1, ``eps``
    1e-7 and the float32 accumulators filled with 0.1 (sparsegrad's
    ``RowwiseAdagrad`` defaults; FBGEMM's own are 1e-8 and 0).

    Parameters
    ----------
    quick : bool
        The reduced size.
    weights : str, optional
        The table's dtype: ``"float32"``, ``"float16"`` (``SparseType.FP16``)
        or ``"bfloat16"`` (``SparseType.BF16``).
    output : str, optional
        The output's dtype, one of the same three; the upstream gradient
        returned has it too.

    Returns
    -------
    tuple
        ``(bag, ids, offsets, upstream)``: the module, the int64 ids, the
        int64 offsets (one per bag and the end) and the upstream gradient of
        the output.

    Raises
    ------
    ImportError
        If ``fbgemm_gpu`` is not installed.
    KeyError
        If `weights` or `output` is not one of the three dtypes.
    """
    import torch
    from fbgemm_gpu.split_table_batched_embeddings_ops_training import (
        ComputeDevice,
        EmbeddingLocation,
        OptimType,
        PoolingMode,
        SparseType,
        SplitTableBatchedEmbeddingBagsCodegen,
    )

    precision = SparseType[FBGEMM_TYPES[weights]]
    out_type = SparseType[FBGEMM_TYPES[output]]
    table, ids, indptr, upstream = _bag_inputs(quick)
    bag = SplitTableBatchedEmbeddingBagsCodegen(
        [(*table.shape, EmbeddingLocation.HOST, ComputeDevice.CPU)],
        optimizer=OptimType.EXACT_ROWWISE_ADAGRAD,
        learning_rate=BAG_LEARNING_RATE, eps=ROWWISE_EPSILON,
        pooling_mode=PoolingMode.SUM, weights_precision=precision,
        output_dtype=out_type)
    with torch.no_grad():
        (table_weights,) = bag.split_embedding_weights()
        table_weights.copy_(torch.from_numpy(table))
        ((accumulator,),) = bag.split_optimizer_states()
        accumulator.fill_(ROWWISE_INITIAL_ACCUMULATOR)
    return (bag, torch.from_numpy(ids), torch.from_numpy(indptr),
            torch.from_numpy(upstream).to(getattr(torch, output)))


def _bag_fbgemm(step, weights="float32", output="float32"):
    def setup(quick):
        import fbgemm_gpu
        import torch

        bag, ids, offsets, upstream = fbgemm_bag(quick, weights, output)

        def forward():
            with torch.no_grad():
                return bag(ids, offsets)

        try:
            forward()       # FBGEMM builds its CPU kernels for some dtypes only
        except (RuntimeError, NotImplementedError) as exc:
            raise Unsupported(f"fbgemm {fbgemm_gpu.__version__}: no CPU kernel for "
                              f"{weights} weights ({_first_line(exc)})") from None
        if not step:
            return forward

        def run():
            # The backward applies the row-wise Adagrad step (fused).
            bag(ids, offsets).backward(upstream)

        return run

    return setup


CASES = [
    Case(
        f"segment/segment_sum_{dtype}",
        f"10,000,000 float32 values into 200,000 sorted segments, {dtype} ids "
        "(NumPy: reduceat with the offsets given)",
        {"sparsegrad": _segment_sum_sparsegrad(dtype),
         "tensorflow": _segment_sum_tensorflow(dtype),
         "numpy": _segment_sum_numpy(dtype)},
        _segment_bytes(dtype),
    )
    for dtype in ("int32", "int64")
] + [
    Case(
        "segment/unsorted_segment_sum_sorted",
        "unsorted_segment_sum of the same values on the sorted int32 ids",
        {"sparsegrad": _unsorted_sparsegrad(False),
         "tensorflow": _unsorted_tensorflow(False),
         "torch": _unsorted_torch(False)},
        _segment_bytes("int32"),
    ),
    Case(
        "segment/unsorted_segment_sum_shuffled",
        "unsorted_segment_sum with the values and int32 ids shuffled together "
        "(torch: index_add_; NumPy: np.add.at)",
        {"sparsegrad": _unsorted_sparsegrad(True),
         "tensorflow": _unsorted_tensorflow(True),
         "torch": _unsorted_torch(True), "numpy": _unsorted_numpy},
        _segment_bytes("int32"),
    ),
] + [
    Case(
        f"segment/ragged_range_{dtype}",
        f"ragged.range of 200,000 rows of 0..99 {dtype} values, int64 splits"
        + (" (NumPy: repeat + cumsum)" if dtype == "int32" else ""),
        {"sparsegrad": _range_sparsegrad(dtype), "tensorflow": _range_tensorflow(dtype),
         **({"numpy": _range_numpy} if dtype == "int32" else {})},
        _range_bytes(dtype),
    )
    for dtype in ("int32", "float32")
] + [
    Case(
        "segment/ragged_reduce_sum_rank2",
        "reduce_sum over the innermost ragged axis of a ragged-rank-2 "
        "RaggedTensor of 10,000,000 float32 values in 500,000 inner rows",
        {"sparsegrad": _rank2_sparsegrad, "tensorflow": _rank2_tensorflow},
        _rank2_bytes,
    ),
    Case(
        "segment/ragged_segment_sum",
        "unsorted_segment_sum of a RaggedTensor of 10,000,000 float32 values "
        "(500,000 rows) into 100,000 sorted segments",
        {"sparsegrad": _rsegment_sparsegrad, "tensorflow": _rsegment_tensorflow},
        _rsegment_bytes,
    ),
] + [
    Case(
        "segment/embedding_bag_forward",
        "sum of 16,384 bags of 20 Zipf(1.1) ids on a 1,000,000 x 64 float32 "
        "table (torch: EmbeddingBag; tf: embedding_lookup_sparse; fbgemm: "
        "SplitTableBatchedEmbeddingBagsCodegen on the CPU)",
        {"sparsegrad": _bag_sparsegrad(False), "tensorflow": _bag_tensorflow(False),
         "torch": _bag_torch(False), "fbgemm": _bag_fbgemm(False)},
        _bag_bytes(False),
    ),
    Case(
        "segment/embedding_bag_forward_float16",
        "the bag forward on the table rounded to float16, float16 output "
        "(torch: EmbeddingBag with a float16 weight; fbgemm: SparseType.FP16 "
        "weights and output)",
        {"sparsegrad": _bag_sparsegrad(False, dtype="float16"),
         "torch": _bag_torch(False, dtype="float16"),
         "fbgemm": _bag_fbgemm(False, weights="float16", output="float16")},
        _bag_bytes(False, weight_bytes=2, out_bytes=2),
    ),
    Case(
        "segment/embedding_bag_step",
        "the bag forward, its gradient and a sparse Adagrad step "
        "(tf: in a tf.function); 100 steps per process",
        {"sparsegrad": _bag_sparsegrad(True), "tensorflow": _bag_tensorflow(True),
         "torch": _bag_torch(True)},
        _bag_bytes(True),
        steps=BAG_STEPS,
    ),
    Case(
        "segment/embedding_bag_step_rowwise",
        "the bag forward, its gradient and a row-wise Adagrad step (lr 0.1, "
        "eps 1e-7, accumulators from 0.1): RowwiseAdagrad against FBGEMM's "
        "fused EXACT_ROWWISE_ADAGRAD, float32; 100 steps per process",
        {"sparsegrad": _bag_sparsegrad(True, rowwise=True),
         "fbgemm": _bag_fbgemm(True)},
        _bag_bytes(True, rowwise=True),
        steps=BAG_STEPS,
    ),
    Case(
        "segment/embedding_bag_step_rowwise_fp16",
        "the row-wise step on a float16 table (float32 accumulators, output "
        "and upstream gradient; fbgemm: SparseType.FP16 weights); 100 steps "
        "per process",
        {"sparsegrad": _bag_sparsegrad(True, rowwise=True, dtype="float16"),
         "fbgemm": _bag_fbgemm(True, weights="float16")},
        _bag_bytes(True, rowwise=True, weight_bytes=2),
        steps=BAG_STEPS,
    ),
    Case(
        "segment/embedding_bag_step_rowwise_bf16",
        "the row-wise step on a bfloat16 table (float32 accumulators, output "
        "and upstream gradient); fbgemm: SparseType.BF16 weights, where its "
        "CPU kernels take them; 100 steps per process",
        {"sparsegrad": _bag_sparsegrad(True, rowwise=True, dtype="bfloat16"),
         "fbgemm": _bag_fbgemm(True, weights="bfloat16")},
        _bag_bytes(True, rowwise=True, weight_bytes=2),
        steps=BAG_STEPS,
    ),
]
