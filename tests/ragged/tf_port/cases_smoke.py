"""A few cases that exercise every kind of outcome (the port's own check)."""

CASES = [
    ("ragged_result",
     "tf.reduce_sum(tf.ragged.constant([[[1, 2], [3]], [[4]]]), axis=2)"),
    ("dense_result", "tf.reduce_mean(tf.ragged.constant([[1.0, 2.0], [3.0]]), axis=1)"),
    ("python_result", "tf.ragged.constant([[1, 2], []]).to_list()"),
    ("shape_result", "tf.ragged.constant([[[1], [2, 3]], []]).shape"),
    ("error_result", "tf.RaggedTensor.from_row_splits([1, 2], [1, 2])"),
]
