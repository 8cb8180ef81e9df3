"""TensorFlow's ``ragged_range_op_test.py`` (RaggedRangeOpTest), ported:
``ragged_math_ops.range`` is ``tf.ragged.range``; a test with several checks
gives ``<test>_<i>``.  ``testKernelErrors_2`` calls the generated op with
``Tsplits=int32``, the public ``row_splits_dtype=tf.int32``.  The ``extra_*``
cases add dtypes and argument errors.
"""

R = "tf.ragged.range"

CASES = [
    ("testDocStringExamples_0", f"{R}([3, 5, 2])"),
    ("testDocStringExamples_1", f"{R}([0, 5, 8], [3, 3, 12])"),
    ("testDocStringExamples_2", f"{R}([0, 5, 8], [3, 3, 12], 2)"),
    ("testBasicRanges_0", f"{R}([0, 3, 5])"),
    ("testBasicRanges_1", f"{R}([0, 3, 5], [2, 3, 10])"),
    ("testBasicRanges_2", f"{R}([0, 3, 5], [4, 4, 15], [2, 3, 4])"),
    ("testFloatRanges",
     f"{R}([0.0, 3.0, 5.0], [3.9, 4.0, 15.0], [0.4, 1.5, 2.2])"),
    ("testNegativeDeltas_0", f"{R}([0, 3, 5], limits=0, deltas=-1)"),
    ("testNegativeDeltas_1", f"{R}([0, -3, 5], limits=0, deltas=[-1, 1, -2])"),
    ("testBroadcast_0", f"{R}([0, 3, 5], [4, 4, 15], 3)"),
    ("testBroadcast_1", f"{R}(0, 5, 1)"),
    ("testEmptyRanges_0", f"{R}([0, 5, 3], [0, 3, 5])"),
    ("testEmptyRanges_1", f"{R}([0, 5, 5], [0, 3, 5], -1)"),
    ("testShapeFnErrors_0", f"{R}([[0]], 5)"),
    ("testShapeFnErrors_1", f"{R}(0, [[5]])"),
    ("testShapeFnErrors_2", f"{R}(0, 5, [[0]])"),
    ("testShapeFnErrors_3", f"{R}([0], [1, 2])"),
    ("testKernelErrors_0", f"{R}(0, 0, 0)"),
    ("testKernelErrors_1", f"{R}(0.1, 1e10, 1e-10)"),
    ("testKernelErrors_2",
     f"{R}([0, 0], [2**31 - 1, 1], [1, 1], row_splits_dtype=tf.int32)"),
    ("testShape_0", f"{R}(0, 0, 1).shape"),
    ("testShape_1", f"{R}([1, 2, 3]).shape"),
    ("testShape_2", f"{R}([1, 2, 3], [4, 5, 6]).shape"),
    ("testInt32Overflow", f"{R}(1136033460, -2110457150, -1849827689)"),
    # beyond TensorFlow's file
    ("extra_int32_splits", f"{R}([3, 0, 2], row_splits_dtype=tf.int32)"),
    ("extra_int64", f"{R}([0, 3], [4, 6], dtype=tf.int64)"),
    ("extra_float64", f"{R}([0.0, 1.0], [1.0, 2.0], 0.25, dtype=tf.float64)"),
    ("extra_float32_from_ints", f"{R}([0, 1], [2, 3], dtype=tf.float32)"),
    ("extra_mixed_int_float", f"{R}([0, 1], [2.5, 3.5])"),
    ("extra_float_step", f"{R}(0.0, 1.0, 0.1)"),
    ("extra_negative_float_step", f"{R}(1.0, 0.0, -0.3)"),
    ("extra_no_rows", f"{R}(np.zeros([0], np.int32))"),
    ("extra_int64_from_big", f"{R}([2**31 + 1], [2**31 + 3])"),
    ("extra_zero_delta_in_list", f"{R}([0, 1], [2, 3], [1, 0])"),
    ("extra_bad_splits_dtype",
     f"{R}([1, 2], row_splits_dtype=tf.float32)"),
    ("extra_bad_dtype", f"{R}([1, 2], dtype=tf.bool)"),
    ("extra_rank2_limits", f"{R}([[1, 2]])"),
    ("extra_mismatched_deltas", f"{R}([0, 1], [2, 3], [1, 1, 1])"),
]
