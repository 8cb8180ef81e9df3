"""RaggedTensor's conversions and shape methods, ported from TensorFlow's
tests of them (ragged_to_tensor_op_test.py, ragged_from_tensor_op_test.py,
ragged_merge_dims_op_test.py, and the bounding_shape examples of
ragged_tensor_bounding_shape_op_test.py) and from the docstrings of
``RaggedTensor.to_tensor / from_tensor / bounding_shape / merge_dims``.

Left out: the graph-mode and placeholder variants, the gradient tests of
to_tensor (sparsegrad's gradient tests cover RaggedToDense), string values,
and the ``to_tensor`` tests of the v1 op ``RaggedTensorToTensor``'s
partition types (ROW_IDS encodings).
"""

DT = "[[5, 7, 0], [0, 3, 0], [6, 0, 0]]"
DT3 = ("[[[5, 0], [7, 0], [0, 0]], [[0, 0], [3, 0], [0, 0]], "
       "[[6, 0], [0, 0], [0, 0]]]")
RT = "tf.ragged.constant([[9, 8, 7], [], [6, 5], [4]])"
RT3 = "tf.ragged.constant([[[1, 2], [3]], [], [[4, 5, 6]], [[7], [8], []]])"
RT_INNER = ("tf.ragged.constant([[[1, 2], [3, 4]], [], [[5, 6]]], "
            "ragged_rank=1)")
BBOX = "tf.ragged.constant([[1, 2, 3, 4], [5], [], [6, 7, 8, 9], [10]])"


def _all(prefix, items):
    return [(f"{prefix}_{n}", code) for n, code in items]


CASES = [
    # -- from_tensor (ragged_from_tensor_op_test) --------------------------
    *_all("testDocStringExamples_from_tensor", [
        ("plain", f"tf.RaggedTensor.from_tensor({DT})"),
        ("plain_shape", f"tf.RaggedTensor.from_tensor({DT}).shape"),
        ("plain_uniform_row_length",
         f"tf.RaggedTensor.from_tensor({DT}).uniform_row_length"),
        ("lengths", f"tf.RaggedTensor.from_tensor({DT}, lengths=[1, 0, 3])"),
        ("lengths_shape",
         f"tf.RaggedTensor.from_tensor({DT}, lengths=[1, 0, 3]).shape"),
        ("padding", f"tf.RaggedTensor.from_tensor({DT}, padding=0)"),
        ("lengths_nested",
         f"tf.RaggedTensor.from_tensor({DT3}, lengths=([2, 0, 3], [1, 1, 2, 0, 1]))"),
        ("padding_vector", f"tf.RaggedTensor.from_tensor({DT3}, padding=[0, 0])"),
        ("padding_vector_shape",
         f"tf.RaggedTensor.from_tensor({DT3}, padding=[0, 0]).shape"),
        ("ragged_rank2", f"tf.RaggedTensor.from_tensor({DT3}, ragged_rank=2)"),
        ("ragged_rank2_shape",
         f"tf.RaggedTensor.from_tensor({DT3}, ragged_rank=2).shape"),
        ("ragged_rank2_padding",
         f"tf.RaggedTensor.from_tensor({DT3}, padding=0, ragged_rank=2)"),
        ("ragged_rank2_padding_shape",
         f"tf.RaggedTensor.from_tensor({DT3}, padding=0, ragged_rank=2).shape"),
        ("ragged_rank2_lengths",
         f"tf.RaggedTensor.from_tensor({DT3}, lengths=[2, 0, 1, 1, 0, 2, 1, 0, 0], "
         "ragged_rank=2)"),
        ("int32_splits",
         f"tf.RaggedTensor.from_tensor({DT}, lengths=[1, 0, 3], "
         "row_splits_dtype=tf.int32)"),
        ("float", "tf.RaggedTensor.from_tensor(np.array([[1.5, 0.0], [2.5, 3.5]], "
         "np.float32), padding=0.0)"),
        ("lengths_past_ncols",
         f"tf.RaggedTensor.from_tensor({DT}, lengths=[5, -1, 2])"),
        ("empty_rows", "tf.RaggedTensor.from_tensor(np.zeros([0, 3], np.int32))"),
        ("empty_cols", "tf.RaggedTensor.from_tensor(np.zeros([2, 0], np.int32))"),
        ("empty_cols_padding",
         "tf.RaggedTensor.from_tensor(np.zeros([2, 0], np.int32), padding=0)"),
    ]),
    *_all("testErrors_from_tensor", [
        ("lengths_and_padding",
         f"tf.RaggedTensor.from_tensor({DT}, lengths=[1, 0, 3], padding=0)"),
        ("ragged_rank_0", f"tf.RaggedTensor.from_tensor({DT}, ragged_rank=0)"),
        ("rank_1", "tf.RaggedTensor.from_tensor([1, 2, 3])"),
        ("ragged_rank_too_big", f"tf.RaggedTensor.from_tensor({DT}, ragged_rank=2)"),
        ("padding_bad_shape", f"tf.RaggedTensor.from_tensor({DT}, padding=[0])"),
        ("lengths_rank_2",
         f"tf.RaggedTensor.from_tensor({DT}, lengths=[[1], [0], [3]])"),
        ("nested_lengths_wrong_ragged_rank",
         f"tf.RaggedTensor.from_tensor({DT3}, lengths=([2, 0, 3], [1, 1, 2, 0, 1]), "
         "ragged_rank=3)"),
    ]),
    # -- to_tensor (ragged_to_tensor_op_test) ------------------------------
    *_all("testDocStringExamples_to_tensor", [
        ("default", f"{RT}.to_tensor()"),
        ("default_value", f"{RT}.to_tensor(default_value=-1)"),
        ("shape_truncate", f"{RT}.to_tensor(shape=[3, 2])"),
        ("shape_pad", f"{RT}.to_tensor(default_value=-1, shape=[5, 4])"),
        ("shape_none", f"{RT}.to_tensor(shape=[None, 5])"),
        ("shape_none_rows", f"{RT}.to_tensor(shape=[2, None])"),
        ("rr2", f"{RT3}.to_tensor()"),
        ("rr2_default", f"{RT3}.to_tensor(default_value=-1)"),
        ("rr2_shape", f"{RT3}.to_tensor(shape=[2, 2, 2])"),
        ("rr2_shape_pad", f"{RT3}.to_tensor(default_value=9, shape=[5, 4, 4])"),
        ("rr2_shape_partial", f"{RT3}.to_tensor(shape=[None, 1, None])"),
        ("inner", f"{RT_INNER}.to_tensor()"),
        ("inner_default", f"{RT_INNER}.to_tensor(default_value=7)"),
        ("inner_shape", f"{RT_INNER}.to_tensor(shape=[2, 1, 2])"),
        ("float", "tf.ragged.constant([[1.5], [], [2.5, 3.5]]).to_tensor("
         "default_value=0.25)"),
        ("empty", "tf.ragged.constant([[], []]).to_tensor()"),
        ("no_rows", "tf.RaggedTensor.from_row_splits([], [0]).to_tensor()"),
        ("uniform", "tf.RaggedTensor.from_uniform_row_length([1, 2, 3, 4], 2)"
         ".to_tensor()"),
    ]),
    *_all("testErrors_to_tensor", [
        ("shape_wrong_rank", f"{RT}.to_tensor(shape=[2, 2, 2])"),
        ("inner_shape_mismatch", f"{RT_INNER}.to_tensor(shape=[3, 2, 3])"),
        ("default_value_not_scalar_rr1",
         f"{RT}.to_tensor(default_value=[1, 2])"),
    ]),
    # -- to_list -------------------------------------------------------------
    *_all("testToList", [
        ("rr1", f"{RT}.to_list()"),
        ("rr2", f"{RT3}.to_list()"),
        ("inner", f"{RT_INNER}.to_list()"),
        ("float", "tf.ragged.constant([[1.5], [], [2.5]]).to_list()"),
        ("bool", "tf.ragged.constant([[True], [False, True]]).to_list()"),
        ("rr3", "tf.ragged.constant([[[[1]], []], [[[2, 3]]]]).to_list()"),
    ]),
    # -- bounding_shape (ragged_tensor_bounding_shape_op_test) --------------
    *_all("testBoundingShape", [
        ("doc", f"{BBOX}.bounding_shape()"),
        ("axis0", f"{BBOX}.bounding_shape(axis=0)"),
        ("axis1", f"{BBOX}.bounding_shape(axis=1)"),
        ("axis_list", f"{BBOX}.bounding_shape(axis=[1, 0])"),
        ("out_type", f"{BBOX}.bounding_shape(out_type=tf.int32)"),
        ("axis1_out_type", f"{BBOX}.bounding_shape(axis=1, out_type=tf.int32)"),
        ("int32_splits", "tf.ragged.constant([[1, 2], [3]], "
         "row_splits_dtype=tf.int32).bounding_shape()"),
        ("rr2", f"{RT3}.bounding_shape()"),
        ("rr2_axis2", f"{RT3}.bounding_shape(axis=2)"),
        ("inner", f"{RT_INNER}.bounding_shape()"),
        ("inner_axis2", f"{RT_INNER}.bounding_shape(axis=2)"),
        ("empty_rows", "tf.RaggedTensor.from_row_splits([], [0]).bounding_shape()"),
        ("all_empty", "tf.ragged.constant([[], [], []]).bounding_shape()"),
    ]),
    # -- merge_dims (ragged_merge_dims_op_test) -----------------------------
    *_all("testMergeDims", [
        ("rr1_0_1", f"{RT}.merge_dims(0, 1)"),
        ("rr1_0_m1", f"{RT}.merge_dims(0, -1)"),
        ("rr2_0_1", f"{RT3}.merge_dims(0, 1)"),
        ("rr2_1_2", f"{RT3}.merge_dims(1, 2)"),
        ("rr2_0_2", f"{RT3}.merge_dims(0, 2)"),
        ("rr2_1_1", f"{RT3}.merge_dims(1, 1)"),
        ("inner_1_2", f"{RT_INNER}.merge_dims(1, 2)"),
        ("inner_0_1", f"{RT_INNER}.merge_dims(0, 1)"),
        ("inner_0_2", f"{RT_INNER}.merge_dims(0, 2)"),
        ("rr3_1_3", "tf.ragged.constant([[[[1]], []], [[[2, 3]]]]).merge_dims(1, 3)"),
        ("rr3_2_3", "tf.ragged.constant([[[[1]], []], [[[2, 3]]]]).merge_dims(2, 3)"),
        ("int32", "tf.ragged.constant([[[1, 2], [3]], [[4]]], "
         "row_splits_dtype=tf.int32).merge_dims(1, 2)"),
        ("uniform_0_1", "tf.RaggedTensor.from_tensor([[[1, 2], [3, 4]], "
         "[[5, 6], [7, 8]]], ragged_rank=2).merge_dims(0, 1)"),
    ]),
    *_all("testMergeDimsErrors", [
        ("outer_gt_inner", f"{RT3}.merge_dims(2, 1)"),
        ("outer_out_of_bounds", f"{RT3}.merge_dims(3, 3)"),
        ("inner_out_of_bounds", f"{RT3}.merge_dims(0, -4)"),
        ("float_axis", f"{RT3}.merge_dims(0.0, 1)"),
    ]),
]
