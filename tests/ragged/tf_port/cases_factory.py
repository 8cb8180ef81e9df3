"""``tf.ragged.constant``'s tests, ported: TensorFlow's
``ragged_const_op_test.py`` (RaggedConstOpTest; the brief names
``ragged_factory_ops_test.py``, but that file only runs a ``constant`` through
``map_fn`` and a distributed dataset: its ``ragged_int64`` input is ported as
``testRaggedWithMapFn_0``, the rest needs tf.function, datasets and GPUs).

``testRaggedConst_<i>`` and ``testRaggedConstError_<i>`` are the i-th
parameter sets of those tests (the index counts the skipped ones too).
``testScalarAndMaxDepthHelper_<i>`` and ``testDefaultInnerShapeForPylistHelper
_<i>`` test private helpers of ``constant``; ported as ``tf.ragged.constant``
of the same list (and ragged_rank), which must succeed or fail the same way.
The ``extra_*`` cases add ``row_splits_dtype`` and more dtypes.

Skipped (string values: sparsegrad has no string tensors):
testRaggedConst_0 (b'x'), testRaggedConst_35 ([[b'a', b'b'], [b'c']]),
testRaggedConst_39 (dtype=string), testRaggedConst_45 (dtype=string),
testRaggedWithMapFn_1 and testRaggedWithDistributedDataset_* (tf.function,
MirroredStrategy on two GPUs).  ``tf.compat.v1.ragged.constant_value``
(ragged_constant_value_op_test.py): sparsegrad has no RaggedTensorValue, not
ported.

Not ported, a deliberate difference: an integer that an explicit integer
dtype cannot hold (``[[2**40]]`` as int32, ``[[256]]`` as uint8), which
TensorFlow wraps to 0 and sparsegrad refuses (InvalidArgumentError), as
``sg.ragged.range`` does.
"""

C = "tf.ragged.constant"
ND = "np.array({}, dtype=object)"
A3 = "[[[1, 2], np.array([3, np.array(4)])], np.array([]), [[5, 6], [7, 8], [9, 0]]]"
L3 = "[[[1, 2], [3, 4]], [], [[5, 6], [7, 8], [9, 0]]]"
L4 = "[[[[1, 2], [3, 4]], [[5, 6], [7, 8]]], [[[2, 4], [6, 8]], [[1, 5], [7, 9]]]]"
A4 = ("np.array([[[np.array([1, 2]), [3, 4]], [[5, 6], [7, 8]]], "
      "np.array([[[2, 4], [6, 8]], [[1, 5], [7, 9]]])])")

# testRaggedConst's parameters: (pylist source, keyword arguments); None for
# the string ones (skipped).
_CONST = [
    None,
    ("[1, 2, 3]", ""),
    ("[[1, 2, 3], [4], [5, 6]]", ""),
    ("[[1, 2, 3], [4, 5, 6], [7, 8, 9]]", ""),
    (L3, ""), (L3, "ragged_rank=1"), (L3, "inner_shape=(2,)"),
    (L3, "ragged_rank=1, inner_shape=(2,)"),
    (ND.format(A3), ""), (ND.format(A3), "ragged_rank=1"),
    (ND.format(A3), "inner_shape=(2,)"),
    (ND.format(A3), "ragged_rank=1, inner_shape=(2,)"),
    (L4, ""), (L4, "ragged_rank=1"), (L4, "inner_shape=(2,)"),
    (L4, "inner_shape=(2, 2)"),
    (A4, ""),
    ("[]", ""), ("[[], [], np.array([])]", ""), ("[[[], []], [], [[], [[]]]]", ""),
    (ND.format("[np.array([[], []]), np.array([]), [[], [[]]]]"), ""),
    ("[]", "ragged_rank=1"), ("[]", "ragged_rank=2"),
    ("[]", "inner_shape=(0, 100, 20)"),
    ("[]", "ragged_rank=1, inner_shape=(100, 20)"),
    ("[]", "ragged_rank=2, inner_shape=(100, 20)"),
    ("[[], [], []]", "ragged_rank=2"), ("[]", "inner_shape=(0,)"),
    ("[[]]", "inner_shape=(1, 0)"),
    ("np.array([])", "ragged_rank=1, inner_shape=(100, 20)"),
    ("[]", ""), ("[[[], [[[]], []]]]", ""), ("[[1, 2], [3], [4, 5, 6]]", ""),
    ("[[1., 2.], [], [4., 5., 6.]]", ""), ("[[1, 2], [3.], [4, 5, 6]]", ""),
    None,
    ("[[True]]", ""),
    (ND.format("[np.array([1, 2]), np.array([3.]), [4, 5, 6]]"), ""),
    ("[]", "dtype=tf.float32"),
    None,
    ("[[1, 2], [3], [4, 5, 6]]", "dtype=tf.int64"),
    ("[[1, 2], [3], [4, 5, 6]]", "dtype=tf.int32"),
    ("[[1, 2], [3], [4, 5, 6]]", "dtype=tf.float32"),
    ("[[1., 2.], [3.], [4., 5., 6.]]", "dtype=tf.float16"),
    ("[[1., 2.], [3.], [4., 5., 6.]]", "dtype=tf.float32"),
    None,
]
# The string ones are at 0, 35, 39 and 45 of this list (see the docstring).

_ERRORS = [
    ("12", "ragged_rank=1"), ("12", "inner_shape=(1,)"),
    ("[[[1], [2]]]", "ragged_rank=-1"), ("[[1, [2]]]", ""),
    ("[[[1]], [[[2]]]]", ""), ("[[1], [[]]]", ""), ("[1, 2, 3]", "ragged_rank=1"),
    ("[[1, 2, 3], [4, 5, 6], [7, 8, 9]]", "ragged_rank=2"),
    ("[1, 2, 3]", "inner_shape=(1, 1)"),
    ("[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]", "inner_shape=(2, 2), ragged_rank=1"),
    ("[[[1, 2], [3, 4]], [[5, 6], [7, 8, 9]]]", "ragged_rank=1"),
    ("[[[], [[]]]]", "ragged_rank=1"),
]

_DEPTH = [
    "9", "[9]", "[1, 2, 3]", "[[1], [2]]", "[[[1], [2]], [[3]]]", "[]", "[[]]",
    "[[], [], []]", "[[[], []], [[], [[[]]]], []]", "[1, [2]]", "[[1], 2]",
    "[[[[1]], []], [[2]]]",
]

_INNER = [
    ("[[1], [2, 3]]", 1), ("[[[1], [2]], [[3], [4], [5]]]", 1),
    ("[[[1], [2]], [[3], [4], [5]]]", 2),
    ("[[[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [2, 4, 6]]]]", 1),
    ("[[[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [2, 4, 6]]]]", 2),
    ("[[[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [2, 4, 6]]]]", 3),
    ("[[[1], [2, 3]]]", 1), ("[[[1], [[2]]]]", 1), ("[[[[1]], [2]]]", 1),
]


def _call(pylist, kwargs):
    return f"{C}({pylist}{', ' + kwargs if kwargs else ''})"


CASES = []
for _i, _p in enumerate(_CONST):
    if _p is None:
        continue
    CASES.append((f"testRaggedConst_{_i}", _call(*_p)))
    CASES.append((f"testRaggedConst_{_i}_shape", _call(*_p) + ".shape"))
CASES += [(f"testRaggedConstError_{i}", _call(*p)) for i, p in enumerate(_ERRORS)]
CASES += [(f"testScalarAndMaxDepthHelper_{i}", _call(p, ""))
          for i, p in enumerate(_DEPTH)]
CASES += [(f"testDefaultInnerShapeForPylistHelper_{i}", _call(p, f"ragged_rank={r}"))
          for i, (p, r) in enumerate(_INNER)]
CASES += [
    ("testRaggedWithMapFn_0", _call(
        "[[3, 1, 4, 1], [], [5, 9, 2], [6], [], [3, 1, 4, 1], [3, 1], "
        "[2, 1, 4, 1]]", "dtype=tf.int64")),
    # beyond TensorFlow's files
    ("extra_int32_splits", _call("[[1, 2], [], [3]]", "row_splits_dtype=tf.int32")),
    ("extra_int32_splits_rank2",
     _call("[[[1, 2], []], [[3]]]", "row_splits_dtype=tf.int32")),
    ("extra_int32_splits_rank3",
     _call("[[[[1], [2, 3]]], [[[4]]]]", "row_splits_dtype=tf.int32")),
    ("extra_int32_splits_inner",
     _call("[[[1, 2]], [[3, 4], [5, 6]]]", "ragged_rank=1, row_splits_dtype=tf.int32")),
    ("extra_bad_splits_dtype", _call("[[1, 2], [3]]", "row_splits_dtype=tf.float32")),
    ("extra_dense_rank0", _call("[[1, 2], [3, 4]]", "ragged_rank=0")),
    ("extra_float64", _call("[[1, 2], [3]]", "dtype=tf.float64")),
    ("extra_int8", _call("[[1, 2], [3]]", "dtype=tf.int8")),
    ("extra_uint8", _call("[[1, 2], [255]]", "dtype=tf.uint8")),
    ("extra_bool_dtype", _call("[[1, 0], [3]]", "dtype=tf.bool")),
    ("extra_int_from_float", _call("[[1.5, 2.0], [3.0]]", "dtype=tf.int32")),
    ("extra_big_int", _call("[[1, 2**40], [3]]", "")),
    ("extra_tuple", _call("((1, 2), (3,))", "")),
    ("extra_ndarray_rows", _call("[np.array([1, 2]), np.array([3])]", "")),
    ("extra_ndarray_float64_rows",
     _call("[np.array([1., 2.]), np.array([3.])]", "")),
    ("extra_inner_shape_mismatch", _call("[[1, 2], [3]]", "inner_shape=(2,)")),
    ("extra_inner_shape_empty_rows", _call("[[], []]", "inner_shape=(3,)")),
    ("extra_ragged_rank_3_of_4", _call(L4, "ragged_rank=3")),
    ("extra_ragged_rank_too_big", _call(L4, "ragged_rank=4")),
    ("extra_to_list", _call(L3, "") + ".to_list()"),
]
