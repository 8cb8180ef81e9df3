"""TensorFlow's ``ragged_segment_op_test.py`` (RaggedSegmentOpsTest), ported.

``testRaggedSegment_<dtype>_<i>_<op>`` is the i-th parameter set of
``testRaggedSegment_Int`` / ``_Float`` (in the file's order);
``ragged_math_ops.segment_<op>`` is called through the public name that
dispatches to it (``tf.math.unsorted_segment_<op>``).  The other tests keep
their names.  ``testShapeMismatchError2`` keeps its eager check (the second
half feeds placeholders: graph mode only).  The ``extra_*`` cases widen the
same checks: ragged rank 2 with int32 row splits, inner dense dimensions,
every op at ragged rank 2, ragged ids of ragged rank 2, and errors (ids out
of range or negative, a negative ``num_segments``, ids of the wrong length
or dtype, row splits dtypes that differ, sqrt_n of integers).
"""

OPS = ("sum", "prod", "min", "max", "mean", "sqrt_n")
IDS = ([0, 0, 1, 1, 2, 2], [0, 0, 0, 1, 1, 1], [5, 4, 3, 2, 1, 0],
       [0, 0, 0, 10, 10, 10])
INTS = [[0, 1, 2, 3], [4], [], [5, 6], [7], [8, 9]]
FLOATS = [[0.0, 1.0, 2.0, 3.0], [4.0], [], [5.0, 6.0], [7.0], [8.0, 9.0]]
RANK2 = [[[111, 112, 113, 114], [121]], [], [[], [321, 322], [331]],
         [[411, 412]]]


def _call(op, rt, ids, n):
    return f"tf.math.unsorted_segment_{op}({rt}, {ids}, {n})"


CASES = []
for _op in ("sum", "prod", "min", "max", "mean"):
    for _i, _ids in enumerate(IDS):
        CASES.append((f"testRaggedSegment_Int_{_i}_{_op}",
                      _call(_op, f"tf.ragged.constant({INTS})", _ids, max(_ids) + 1)))
for _op in OPS:
    for _i, _ids in enumerate(IDS):
        CASES.append((f"testRaggedSegment_Float_{_i}_{_op}",
                      _call(_op, f"tf.ragged.constant({FLOATS})", _ids,
                            max(_ids) + 1)))
CASES += [
    ("testRaggedRankTwo_1", _call("sum", f"tf.ragged.constant({RANK2})",
                                  [0, 2, 2, 2], 3)),
    ("testRaggedRankTwo_2", _call("sum", f"tf.ragged.constant({RANK2})",
                                  [1, 2, 1, 1], 3)),
    ("testRaggedSegmentIds",
     _call("sum", f"tf.ragged.constant({RANK2})",
           "tf.ragged.constant([[1, 2], [], [1, 1, 2], [2]])", 3)),
    ("testShapeMismatchError1",
     _call("sum", "tf.constant([1, 2, 3, 4, 5, 6])",
           "tf.ragged.constant([[1, 2], []])", 3)),
    ("testShapeMismatchError2",
     _call("sum", f"tf.ragged.constant({RANK2})",
           "tf.ragged.constant([[1, 2], [1], [1, 1, 2], [2]])", 3)),
]

_R2F = ("tf.ragged.constant([[[1.5, 2.0], [], [3.0, 4.0, 5.0]], [[6.0, 7.0], [],"
        " [8.0]], [], [[9.0]], [[-0.0, 1.0, 2.0, 3.0]]], dtype=tf.float32, "
        "row_splits_dtype=tf.int32)")
for _op in OPS:
    CASES += [
        (f"extra_rank2_int32_splits_{_op}", _call(_op, _R2F, [1, 0, 1, 1, 3], 4)),
        (f"extra_rank2_ragged_ids_{_op}",
         _call(_op, _R2F, "tf.ragged.constant([[[0, 1], [], [1, 1, 0]], [[2, 2], [],"
               " [0]], [], [[1]], [[0, 0, 1, 2]]], row_splits_dtype=tf.int32)", 3)),
        (f"extra_inner_dims_{_op}",
         _call(_op, "tf.RaggedTensor.from_row_splits(tf.constant(np.arange(24, "
               "dtype=np.float64).reshape(8, 3) / 7 + 1), "
               "tf.constant([0, 3, 3, 4, 8], dtype=tf.int64))", [2, 0, 2, 2], 3)),
        (f"extra_ragged_ids_dense_values_{_op}",
         _call(_op, "tf.ragged.constant([[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]])",
               "tf.ragged.constant([[0, 3], [3], [1, 0, 3]])", 4)),
        (f"extra_sorted_ids_{_op}",
         _call(_op, "tf.ragged.constant([[1.0, 2.0, 3.0], [4.0], [], [5.0, 6.0, 7.0, "
               "8.0], [9.0], [10.0, 11.0]], dtype=tf.float64)", [0, 0, 1, 3, 3, 3], 5)),
    ]
CASES += [
    ("extra_error_id_too_large", _call("sum", f"tf.ragged.constant({INTS})",
                                       [0, 0, 1, 1, 2, 9], 3)),
    ("extra_error_negative_id", _call("max", f"tf.ragged.constant({INTS})",
                                      [0, 0, 1, -1, 2, 2], 3)),
    ("extra_error_negative_num_segments", _call("sum", f"tf.ragged.constant({INTS})",
                                                [0, 0, 1, 1, 2, 2], -1)),
    ("extra_error_ids_length", _call("sum", f"tf.ragged.constant({INTS})",
                                     [0, 0, 1], 3)),
    ("extra_error_ids_rank", _call("sum", f"tf.ragged.constant({INTS})",
                                   [[0, 0, 1], [1, 2, 2]], 3)),
    ("extra_error_float_ids", _call("sum", f"tf.ragged.constant({INTS})",
                                    [0.0, 0, 1, 1, 2, 2], 3)),
    ("extra_error_splits_dtypes",
     _call("sum", "tf.ragged.constant([[1, 2], [3]])",
           "tf.ragged.constant([[0, 1], [1]], row_splits_dtype=tf.int32)", 2)),
    ("extra_error_ragged_ids_rows", _call("sum", "tf.ragged.constant([[1, 2], [3]])",
                                          "tf.ragged.constant([[0], [1], [1]])", 2)),
    ("extra_error_sqrt_n_int", _call("sqrt_n", f"tf.ragged.constant({INTS})",
                                     [0, 0, 1, 1, 2, 2], 3)),
    ("extra_error_dense_data_ragged_ids_mean",
     _call("mean", "tf.constant([1.0, 2.0, 3.0])",
           "tf.ragged.constant([[0, 1], [1]])", 2)),
]
