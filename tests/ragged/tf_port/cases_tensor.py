"""TensorFlow's ``ragged_tensor_test.py`` (RaggedTensorTest), ported.

String values of TensorFlow's examples (b'a'...) became the ints 1..7 (a
RaggedTensor of strings has no sparsegrad counterpart).  Each case is named
after the TensorFlow test it comes from, with a suffix for the assertion.
The ``__getitem__`` cases are in ``cases_tensor_getitem.py``; to_tensor /
from_tensor / bounding_shape / merge_dims in ``cases_tensor_convert.py``.

Left out, with the reason:

* testRaggedTensorValueConstruction, testRaggedTensorValueStr,
  testFromNumpyComponents: RaggedTensorValue is TF1 graph-mode only.
* testRaggedTensorConstruction(Errors): the private constructor's argument
  types (TensorFlow's internal RowPartition); sparsegrad's refuses any call
  without ``internal=True`` (checked in tests/ragged).
* testFromValueRowIdsWithDerivedNRowsDynamic, ...WithPlaceholders,
  testGraphMismatch, testCondWithTensorsFromValueIds, testSessionRun*,
  testConsumers, the placeholder halves of testFactoryValidation: graph mode
  and placeholders.
* the ``assertIs`` halves (cached tensors kept by identity): TensorFlow's
  caching, not a value.
* testRaggedTensorStr: the repr's text ("<tf.RaggedTensor ...>").
* testRaggedToVariant, testVariantRoundTrip, testFromVariantInvalidParams,
  testUnbatchVariant*, testToVariantInvalidParams, testRaggedVariant*:
  variant encodings.
* testDatasetUnbatch*, testUnbatchToTensor, testBatchToTensor: tf.data and
  type specs; RaggedTensorSpecTest: type specs.
* testRaggedTensorSetShape*: the private ``_set_shape`` of graph mode.
* testGradient*, testHigherOrderGradient, testStopGradient*: gradients
  (tapes; sparsegrad's own gradient tests cover RaggedTensor).
"""

VALUES7 = "[1, 2, 3, 4, 5, 6, 7]"
RT_SPLITS = f"tf.RaggedTensor.from_row_splits({VALUES7}, [0, 2, 2, 5, 6, 7])"
RT_ROWIDS = f"tf.RaggedTensor.from_value_rowids({VALUES7}, [0, 0, 2, 2, 2, 3, 4])"
PAIRS = "[[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13]]"
RT3_SPLITS = f"tf.RaggedTensor.from_row_splits({PAIRS}, [0, 2, 2, 5, 6, 7])"
RT3_ROWIDS = f"tf.RaggedTensor.from_value_rowids({PAIRS}, [0, 0, 2, 2, 2, 3, 4])"
RR2_SPLITS = (f"tf.RaggedTensor.from_nested_row_splits({VALUES7}, "
              "[[0, 2, 3, 3, 5], [0, 2, 2, 5, 6, 7]])")
RR2_ROWIDS = (f"tf.RaggedTensor.from_nested_value_rowids({VALUES7}, "
              "[[0, 0, 1, 3, 3], [0, 0, 2, 2, 2, 3, 4]])")
SIXTEEN = "list(range(1, 17))"
A1 = f"tf.RaggedTensor.from_uniform_row_length({SIXTEEN}, 2)"
B1 = f"tf.RaggedTensor.from_uniform_row_length({A1}, 2)"
C1 = f"tf.RaggedTensor.from_uniform_row_length({B1}, 2)"


def _accessors(prefix, rts, nested):
    """testRaggedTensorAccessors_*: every accessor of each RaggedTensor."""
    out = []
    for tag, rt in rts:
        names = [
            ("values", f"{rt}.values"),
            ("value_rowids", f"{rt}.value_rowids()"),
            ("nrows", f"int({rt}.nrows())"),
            ("row_splits", f"{rt}.row_splits"),
            ("row_starts", f"{rt}.row_starts()"),
            ("row_limits", f"{rt}.row_limits()"),
            ("row_lengths", f"{rt}.row_lengths()"),
            ("flat_values", f"{rt}.flat_values"),
            ("nested_row_splits_len", f"len({rt}.nested_row_splits)"),
            ("nested_row_splits_0", f"{rt}.nested_row_splits[0]"),
            ("values_nrows", f"int({rt}.values.shape[0])"),
            ("to_list", f"{rt}.to_list()"),
        ]
        if nested:
            names += [("nested_row_splits_1", f"{rt}.nested_row_splits[1]"),
                      ("nested_value_rowids_1", f"{rt}.nested_value_rowids()[1]")]
        names += [("nested_value_rowids_len", f"len({rt}.nested_value_rowids())"),
                  ("nested_value_rowids_0", f"{rt}.nested_value_rowids()[0]")]
        out += [(f"{prefix}_{tag}_{n}", code) for n, code in names]
    return out


def _validation():
    """testFactoryValidation: each bad argument set (eager half)."""
    bad = [
        ("value_rowids_bad_rank", "from_value_rowids",
         "values=[[1, 2], [3, 4]], value_rowids=[[1, 2], [3, 4]], nrows=10"),
        ("nrows_bad_rank", "from_value_rowids",
         "values=[1, 2, 3, 4], value_rowids=[1, 2, 3, 4], nrows=[10]"),
        ("len_values_ne_len_value_rowids", "from_value_rowids",
         "values=[1, 2, 3, 4], value_rowids=[1, 2, 3, 4, 5], nrows=10"),
        ("negative_value_rowid", "from_value_rowids",
         "values=[1, 2, 3, 4], value_rowids=[-5, 2, 3, 4], nrows=10"),
        ("decreasing_value_rowid", "from_value_rowids",
         "values=[1, 2, 3, 4], value_rowids=[4, 3, 2, 1], nrows=10"),
        ("value_rowid_gt_nrows", "from_value_rowids",
         "values=[1, 2, 3, 4], value_rowids=[1, 2, 3, 4], nrows=2"),
        ("value_rowids_values_scalar", "from_value_rowids",
         "values=10, value_rowids=[1, 2, 3, 4], nrows=10"),
        ("row_splits_bad_rank", "from_row_splits",
         "values=[[1, 2], [3, 4]], row_splits=[[1, 2], [3, 4]]"),
        ("row_splits_0_ne_0", "from_row_splits",
         "values=[1, 2, 3, 4], row_splits=[2, 3, 4]"),
        ("row_splits_decreasing", "from_row_splits",
         "values=[1, 2, 3, 4], row_splits=[0, 3, 2, 4]"),
        ("row_splits_last_ne_nvals", "from_row_splits",
         "values=[1, 2, 3, 4], row_splits=[0, 2, 3, 5]"),
        ("row_splits_values_scalar", "from_row_splits",
         "values=10, row_splits=[0, 1]"),
        ("row_lengths_bad_rank", "from_row_lengths",
         "values=[1, 2, 3, 4], row_lengths=[[1, 2], [1, 0]]"),
        ("row_lengths_negative", "from_row_lengths",
         "values=[1, 2, 3, 4], row_lengths=[3, -1, 2]"),
        ("row_lengths_sum_ne_nvals", "from_row_lengths",
         "values=[1, 2, 3, 4], row_lengths=[2, 4, 2, 8]"),
        ("row_lengths_values_scalar", "from_row_lengths",
         "values=10, row_lengths=[0, 1]"),
        ("row_starts_bad_rank", "from_row_starts",
         "values=[[1, 2], [3, 4]], row_starts=[[1, 2], [3, 4]]"),
        ("row_starts_0_ne_0", "from_row_starts",
         "values=[1, 2, 3, 4], row_starts=[2, 3, 4]"),
        ("row_starts_decreasing", "from_row_starts",
         "values=[1, 2, 3, 4], row_starts=[0, 3, 2, 4]"),
        ("row_starts_past_nvals", "from_row_starts",
         "values=[1, 2, 3, 4], row_starts=[0, 2, 3, 5]"),
        ("row_starts_values_scalar", "from_row_starts",
         "values=10, row_starts=[0, 1]"),
        ("row_limits_bad_rank", "from_row_limits",
         "values=[[1, 2], [3, 4]], row_limits=[[1, 2], [3, 4]]"),
        ("row_limits_negative", "from_row_limits",
         "values=[1, 2, 3, 4], row_limits=[-1, 3, 4]"),
        ("row_limits_decreasing", "from_row_limits",
         "values=[1, 2, 3, 4], row_limits=[0, 3, 2, 4]"),
        ("row_limits_last_ne_nvals", "from_row_limits",
         "values=[1, 2, 3, 4], row_limits=[0, 2, 3, 5]"),
        ("row_limits_values_scalar", "from_row_limits",
         "values=10, row_limits=[0, 1]"),
        ("uniform_rowlen_times_nrows_ne_nvals_1", "from_uniform_row_length",
         "values=[1, 2, 3, 4, 5], uniform_row_length=3"),
        ("uniform_rowlen_times_nrows_ne_nvals_2", "from_uniform_row_length",
         "values=[1, 2, 3, 4, 5], uniform_row_length=6"),
        ("uniform_rowlen_times_nrows_ne_nvals_3", "from_uniform_row_length",
         "values=[1, 2, 3, 4, 5, 6], uniform_row_length=3, nrows=3"),
        ("uniform_rowlen_not_scalar", "from_uniform_row_length",
         "values=[1, 2, 3, 4], uniform_row_length=[2]"),
        ("uniform_rowlen_negative", "from_uniform_row_length",
         "values=[1, 2, 3, 4], uniform_row_length=-1"),
    ]
    return [(f"testFactoryValidation_{d}", f"tf.RaggedTensor.{f}({args})")
            for d, f, args in bad]


def _type_preference():
    """testFactoryTypePreference: a Python-list partition over RaggedTensor
    values whose splits are int32 takes int32."""
    rows = [
        ("from_value_rowids", "value_rowids", "[0, 0, 1, 1, 2, 2]",
         "value_rowids=[0, 1, 2], nrows=10", "value_rowids()"),
        ("from_row_splits", "row_splits", "[0, 2, 4, 6]",
         "row_splits=[0, 1, 2, 3]", "row_splits"),
        ("from_row_lengths", "row_lengths", "[2, 2, 2]",
         "row_lengths=[1, 1, 1]", "row_lengths()"),
        ("from_row_starts", "row_starts", "[0, 2, 4]",
         "row_starts=[0, 1, 2]", "row_starts()"),
        ("from_row_limits", "row_limits", "[2, 4, 6]",
         "row_limits=[3]", "row_limits()"),
        ("from_uniform_row_length", "uniform_row_length", "2",
         "uniform_row_length=3", "row_splits"),
    ]
    out = []
    for factory, field, value, kwargs, test in rows:
        inner = (f"tf.RaggedTensor.{factory}(values=[1, 2, 3, 4, 5, 6], "
                 f"{field}=tf.constant({value}, dtype=tf.int32))")
        outer = f"tf.RaggedTensor.{factory}(values={inner}, {kwargs})"
        out += [(f"testFactoryTypePreference_{factory}", outer),
                (f"testFactoryTypePreference_{factory}_field", f"{outer}.{test}")]
    return out


CASES = [
    # -- testClassDocStringExamples -------------------------------------------
    ("testClassDocStringExamples_from_row_splits",
     "tf.RaggedTensor.from_row_splits(values=[3, 1, 4, 1, 5, 9, 2, 6], "
     "row_splits=[0, 4, 4, 7, 8, 8])"),
    ("testClassDocStringExamples_from_row_lengths",
     "tf.RaggedTensor.from_row_lengths([3, 1, 4, 1, 5, 9, 2, 6], "
     "row_lengths=[4, 0, 3, 1, 0])"),
    ("testClassDocStringExamples_from_value_rowids",
     "tf.RaggedTensor.from_value_rowids([3, 1, 4, 1, 5, 9, 2, 6], "
     "value_rowids=[0, 0, 0, 0, 2, 2, 2, 3], nrows=5)"),
    ("testClassDocStringExamples_from_row_starts",
     "tf.RaggedTensor.from_row_starts([3, 1, 4, 1, 5, 9, 2, 6], "
     "row_starts=[0, 4, 4, 7, 8])"),
    ("testClassDocStringExamples_from_row_limits",
     "tf.RaggedTensor.from_row_limits([3, 1, 4, 1, 5, 9, 2, 6], "
     "row_limits=[4, 4, 7, 8, 8])"),
    ("testClassDocStringExamples_multiple_ragged_dimensions",
     "tf.RaggedTensor.from_row_splits(values=tf.RaggedTensor.from_row_splits("
     "values=[3, 1, 4, 1, 5, 9, 2, 6], row_splits=[0, 4, 4, 7, 8, 8]), "
     "row_splits=[0, 3, 3, 5])"),
    ("testClassDocStringExamples_multiple_ragged_dimensions_ragged_rank",
     "tf.RaggedTensor.from_row_splits(values=tf.RaggedTensor.from_row_splits("
     "values=[3, 1, 4, 1, 5, 9, 2, 6], row_splits=[0, 4, 4, 7, 8, 8]), "
     "row_splits=[0, 3, 3, 5]).ragged_rank"),
    ("testClassDocStringExamples_from_nested_row_splits",
     "tf.RaggedTensor.from_nested_row_splits(flat_values=[3, 1, 4, 1, 5, 9, 2, 6], "
     "nested_row_splits=([0, 3, 3, 5], [0, 4, 4, 7, 8, 8]))"),
    ("testClassDocStringExamples_uniform_inner_dimensions",
     "tf.RaggedTensor.from_row_splits(values=np.ones([5, 3], np.float32), "
     "row_splits=[0, 2, 5])"),
    ("testClassDocStringExamples_uniform_inner_dimensions_shape",
     "tf.RaggedTensor.from_row_splits(values=np.ones([5, 3], np.float32), "
     "row_splits=[0, 2, 5]).shape"),
    # -- factories --------------------------------------------------------------
    ("testFromValueRowIdsWithDerivedNRows",
     f"tf.RaggedTensor.from_value_rowids({VALUES7}, "
     "tf.constant([0, 0, 2, 2, 2, 3, 4], tf.int64), validate=False)"),
    ("testFromValueRowIdsWithDerivedNRows_shape",
     f"tf.RaggedTensor.from_value_rowids({VALUES7}, "
     "tf.constant([0, 0, 2, 2, 2, 3, 4], tf.int64), validate=False).shape"),
    ("testFromValueRowIdsWithDerivedNRows_value_rowids",
     f"tf.RaggedTensor.from_value_rowids({VALUES7}, "
     "tf.constant([0, 0, 2, 2, 2, 3, 4], tf.int64)).value_rowids()"),
    ("testFromValueRowIdsWithExplicitNRows",
     f"tf.RaggedTensor.from_value_rowids({VALUES7}, "
     "tf.constant([0, 0, 2, 2, 2, 3, 4], tf.int64), 7, validate=False)"),
    ("testFromValueRowIdsWithExplicitNRows_shape",
     f"tf.RaggedTensor.from_value_rowids({VALUES7}, "
     "tf.constant([0, 0, 2, 2, 2, 3, 4], tf.int64), 7).shape"),
    ("testFromValueRowIdsWithExplicitNRows_tensor_nrows",
     f"tf.RaggedTensor.from_value_rowids({VALUES7}, "
     "tf.constant([0, 0, 2, 2, 2, 3, 4], tf.int64), tf.constant(7, tf.int64))"),
    ("testFromValueRowIdsWithExplicitNRowsEqualToDefault",
     f"tf.RaggedTensor.from_value_rowids({VALUES7}, "
     "tf.constant([0, 0, 2, 2, 2, 3, 4], tf.int64), 5, validate=False)"),
    ("testFromValueRowIdsWithEmptyValues",
     "tf.RaggedTensor.from_value_rowids([], [])"),
    ("testFromValueRowIdsWithEmptyValues_shape",
     "tf.RaggedTensor.from_value_rowids([], []).shape"),
    ("testFromValueRowIdsWithEmptyValues_values_shape",
     "tf.RaggedTensor.from_value_rowids([], []).values.shape"),
    ("testFromValueRowIdsWithEmptyValues_value_rowids",
     "tf.RaggedTensor.from_value_rowids([], []).value_rowids()"),
    ("testFromRowSplits",
     f"tf.RaggedTensor.from_row_splits({VALUES7}, "
     "tf.constant([0, 2, 2, 5, 6, 7], tf.int64), validate=False)"),
    ("testFromRowSplits_shape",
     f"tf.RaggedTensor.from_row_splits({VALUES7}, "
     "tf.constant([0, 2, 2, 5, 6, 7], tf.int64)).shape"),
    ("testFromRowSplitsWithDifferentSplitTypes_list",
     f"tf.RaggedTensor.from_row_splits({VALUES7}, [0, 2, 2, 5, 6, 7])"),
    ("testFromRowSplitsWithDifferentSplitTypes_np_int64",
     f"tf.RaggedTensor.from_row_splits({VALUES7}, "
     "np.array([0, 2, 2, 5, 6, 7], np.int64))"),
    ("testFromRowSplitsWithDifferentSplitTypes_np_int32",
     f"tf.RaggedTensor.from_row_splits({VALUES7}, "
     "np.array([0, 2, 2, 5, 6, 7], np.int32))"),
    ("testFromRowSplitsWithDifferentSplitTypes_tensor_int64",
     f"tf.RaggedTensor.from_row_splits({VALUES7}, "
     "tf.constant([0, 2, 2, 5, 6, 7], tf.int64))"),
    ("testFromRowSplitsWithDifferentSplitTypes_tensor_int32",
     f"tf.RaggedTensor.from_row_splits({VALUES7}, "
     "tf.constant([0, 2, 2, 5, 6, 7], tf.int32))"),
    ("testFromRowSplitsWithEmptySplits", "tf.RaggedTensor.from_row_splits([], [])"),
    ("testFromRowStarts",
     f"tf.RaggedTensor.from_row_starts({VALUES7}, "
     "tf.constant([0, 2, 2, 5, 6], tf.int64), validate=False)"),
    ("testFromRowStarts_shape",
     f"tf.RaggedTensor.from_row_starts({VALUES7}, [0, 2, 2, 5, 6]).shape"),
    ("testFromRowStarts_row_starts",
     f"tf.RaggedTensor.from_row_starts({VALUES7}, "
     "tf.constant([0, 2, 2, 5, 6], tf.int64)).row_starts()"),
    ("testFromRowLimits",
     f"tf.RaggedTensor.from_row_limits({VALUES7}, "
     "tf.constant([2, 2, 5, 6, 7], tf.int64), validate=False)"),
    ("testFromRowLimits_shape",
     f"tf.RaggedTensor.from_row_limits({VALUES7}, [2, 2, 5, 6, 7]).shape"),
    ("testFromRowLimits_row_limits",
     f"tf.RaggedTensor.from_row_limits({VALUES7}, "
     "tf.constant([2, 2, 5, 6, 7], tf.int64)).row_limits()"),
    ("testFromRowLimits_empty", "tf.RaggedTensor.from_row_limits([], [])"),
    ("testFromRowStarts_empty", "tf.RaggedTensor.from_row_starts([], [])"),
    ("testFromRowLengths",
     f"tf.RaggedTensor.from_row_lengths({VALUES7}, "
     "tf.constant([2, 0, 3, 1, 1], tf.int64), validate=False)"),
    ("testFromRowLengths_shape",
     f"tf.RaggedTensor.from_row_lengths({VALUES7}, [2, 0, 3, 1, 1]).shape"),
    ("testFromRowLengths_row_lengths",
     f"tf.RaggedTensor.from_row_lengths({VALUES7}, "
     "tf.constant([2, 0, 3, 1, 1], tf.int64)).row_lengths()"),
    ("testFromUniformRowLength_a1", A1),
    ("testFromUniformRowLength_a2",
     f"tf.RaggedTensor.from_uniform_row_length({SIXTEEN}, 2, 8)"),
    ("testFromUniformRowLength_a1_shape", f"{A1}.shape"),
    ("testFromUniformRowLength_a1_uniform_row_length", f"{A1}.uniform_row_length"),
    ("testFromUniformRowLength_b1", B1),
    ("testFromUniformRowLength_b2",
     f"tf.RaggedTensor.from_uniform_row_length({A1}, 2, 4)"),
    ("testFromUniformRowLength_b1_shape", f"{B1}.shape"),
    ("testFromUniformRowLength_c1", C1),
    ("testFromUniformRowLength_c2",
     f"tf.RaggedTensor.from_uniform_row_length({B1}, 2, 2)"),
    ("testFromUniformRowLength_c1_shape", f"{C1}.shape"),
    ("testFromUniformRowLength_c1_to_list", f"{C1}.to_list()"),
    ("testFromUniformRowLength_int32",
     "tf.RaggedTensor.from_uniform_row_length([1, 2, 3, 4], "
     "tf.constant(2, tf.int32))"),
    ("testFromUniformRowLengthWithEmptyValues_a",
     "tf.RaggedTensor.from_uniform_row_length([], 0, nrows=10)"),
    ("testFromUniformRowLengthWithEmptyValues_a_shape",
     "tf.RaggedTensor.from_uniform_row_length([], 0, nrows=10).shape"),
    ("testFromUniformRowLengthWithEmptyValues_b_shape",
     "tf.RaggedTensor.from_uniform_row_length("
     "tf.RaggedTensor.from_uniform_row_length([], 0, nrows=10), 2).shape"),
    ("testFromUniformRowLengthWithEmptyValues_c_shape",
     "tf.RaggedTensor.from_uniform_row_length([], 0).shape"),
    ("testFromUniformRowLengthWithEmptyValues_d_shape",
     "tf.RaggedTensor.from_uniform_row_length([], 0, nrows=0).shape"),
    ("testFromUniformRowLength_negative_nrows",
     "tf.RaggedTensor.from_uniform_row_length([], 0, nrows=-1)"),
    ("testFromUniformRowLength_nrows_with_remainder",
     "tf.RaggedTensor.from_uniform_row_length([1, 2, 3, 4, 5], 2, nrows=2)"),
    ("testFromUniformRowLength_float_length",
     "tf.RaggedTensor.from_uniform_row_length([1, 2, 3, 4], 2.0)"),
    ("testFromNestedValueRowIdsWithDerivedNRows", RR2_ROWIDS),
    ("testFromNestedValueRowIdsWithDerivedNRows_shape", f"{RR2_ROWIDS}.shape"),
    ("testFromNestedValueRowIdsWithDerivedNRows_ragged_rank",
     f"{RR2_ROWIDS}.ragged_rank"),
    ("testFromNestedValueRowIdsWithExplicitNRows",
     f"tf.RaggedTensor.from_nested_value_rowids({VALUES7}, "
     "[tf.constant([0, 0, 1, 3, 3, 3], tf.int64), "
     "tf.constant([0, 0, 2, 2, 2, 3, 4], tf.int64)], "
     "[tf.constant(6, tf.int64), tf.constant(6, tf.int64)])"),
    ("testFromNestedValueRowIdsWithExplicitNRows_shape",
     f"tf.RaggedTensor.from_nested_value_rowids({VALUES7}, "
     "[[0, 0, 1, 3, 3, 3], [0, 0, 2, 2, 2, 3, 4]], [6, 6]).shape"),
    ("testFromNestedValueRowIdsWithExplicitNRowsMismatch",
     f"tf.RaggedTensor.from_nested_value_rowids({VALUES7}, "
     "[[0, 0, 1, 3, 3, 3], [0, 0, 2, 2, 2, 3, 4]], [6])"),
    ("testFromNestedValueRowIdsWithNonListInput_rowids",
     "tf.RaggedTensor.from_nested_value_rowids([1, 2, 3], "
     "tf.constant([[0, 1, 2], [0, 1, 2]], tf.int64))"),
    ("testFromNestedValueRowIdsWithNonListInput_nrows",
     "tf.RaggedTensor.from_nested_value_rowids([1, 2, 3], "
     "[[0, 1, 2], [0, 1, 2]], tf.constant([3, 3]))"),
    ("testFromNestedRowSplits",
     f"tf.RaggedTensor.from_nested_row_splits({VALUES7}, "
     "[tf.constant([0, 2, 3, 3, 5], tf.int64), "
     "tf.constant([0, 2, 2, 5, 6, 7], tf.int64)], validate=False)"),
    ("testFromNestedRowSplits_shape", f"{RR2_SPLITS}.shape"),
    ("testFromNestedRowSplits_int32",
     f"tf.RaggedTensor.from_nested_row_splits({VALUES7}, "
     "[tf.constant([0, 2, 3, 3, 5], tf.int32), "
     "tf.constant([0, 2, 2, 5, 6, 7], tf.int32)])"),
    ("testFromNestedRowSplits_mixed_dtypes",
     f"tf.RaggedTensor.from_nested_row_splits({VALUES7}, "
     "[tf.constant([0, 2, 3, 3, 5], tf.int32), "
     "tf.constant([0, 2, 2, 5, 6, 7], tf.int64)])"),
    ("testFromNestedRowSplits_bad_inner_level",
     f"tf.RaggedTensor.from_nested_row_splits({VALUES7}, "
     "[[0, 2, 3, 3, 5], [0, 2, 2, 5, 6, 8]])"),
    ("testFromNestedRowSplits_bad_outer_level",
     f"tf.RaggedTensor.from_nested_row_splits({VALUES7}, "
     "[[0, 2, 3, 3, 4], [0, 2, 2, 5, 6, 7]])"),
    ("testFromNestedRowSplits_outer_not_zero",
     f"tf.RaggedTensor.from_nested_row_splits({VALUES7}, "
     "[[1, 2, 3, 3, 5], [0, 2, 2, 5, 6, 7]])"),
    ("testFromNestedRowSplits_inner_decreasing",
     f"tf.RaggedTensor.from_nested_row_splits({VALUES7}, "
     "[[0, 2, 3, 3, 5], [0, 2, 1, 5, 6, 7]])"),
    ("testFromNestedRowSplits_empty_list",
     "tf.RaggedTensor.from_nested_row_splits(np.array([1, 2], np.int32), [])"),
    ("testFromNestedRowLengths",
     f"tf.RaggedTensor.from_nested_row_lengths({VALUES7}, "
     "[[2, 1, 0, 2], [2, 0, 3, 1, 1]])"),
    ("testFromNestedRowLengths_bad_outer_sum",
     f"tf.RaggedTensor.from_nested_row_lengths({VALUES7}, "
     "[[2, 1, 0, 1], [2, 0, 3, 1, 1]])"),
    ("testFromNestedRowLengths_negative_inner",
     f"tf.RaggedTensor.from_nested_row_lengths({VALUES7}, "
     "[[2, 1, 0, 2], [2, 0, 3, 3, -1]])"),
    ("testFromNestedValueRowIds_bad_inner_level",
     f"tf.RaggedTensor.from_nested_value_rowids({VALUES7}, "
     "[[0, 0, 1, 3, 3], [0, 0, 2, 2, 1, 3, 4]])"),
    ("testFromNestedValueRowIds_bad_outer_level",
     f"tf.RaggedTensor.from_nested_value_rowids({VALUES7}, "
     "[[0, 0, 1, 3, -3], [0, 0, 2, 2, 2, 3, 4]])"),
    ("testFromNestedRowSplitsWithNonListInput",
     "tf.RaggedTensor.from_nested_row_splits([1, 2], "
     "tf.constant([[0, 1, 2], [0, 1, 2]], tf.int64))"),
    ("testFromValueRowIdsWithBadNRows_negative",
     f"tf.RaggedTensor.from_value_rowids(values={VALUES7}, "
     "value_rowids=tf.constant([0, 0, 2, 2, 2, 3, 4], tf.int64), nrows=-2)"),
    ("testFromValueRowIdsWithBadNRows_2",
     f"tf.RaggedTensor.from_value_rowids(values={VALUES7}, "
     "value_rowids=tf.constant([0, 0, 2, 2, 2, 3, 4], tf.int64), nrows=2)"),
    ("testFromValueRowIdsWithBadNRows_4",
     f"tf.RaggedTensor.from_value_rowids(values={VALUES7}, "
     "value_rowids=tf.constant([0, 0, 2, 2, 2, 3, 4], tf.int64), nrows=4)"),
    ("testFromValueRowIdsWithBadNRows_rowids_rank2",
     f"tf.RaggedTensor.from_value_rowids(values={VALUES7}, "
     "value_rowids=np.array([[0], [0], [2], [2], [2], [3], [4]], np.int64), "
     "nrows=tf.constant(5, tf.int64))"),
    ("testFromValueRowIdsWithBadNRows_nrows_rank1",
     f"tf.RaggedTensor.from_value_rowids(values={VALUES7}, "
     "value_rowids=tf.constant([0, 0, 2, 2, 2, 3, 4], tf.int64), "
     "nrows=tf.constant([5], tf.int64))"),
    # -- accessors ----------------------------------------------------------------
    *_accessors("testRaggedTensorAccessors_2d",
                [("splits", RT_SPLITS), ("rowids", RT_ROWIDS)], False),
    *_accessors("testRaggedTensorAccessors_3d_with_ragged_rank_1",
                [("splits", RT3_SPLITS), ("rowids", RT3_ROWIDS)], False),
    *_accessors("testRaggedTensorAccessors_3d_with_ragged_rank_2",
                [("splits", RR2_SPLITS), ("rowids", RR2_ROWIDS)], True),
    # -- shape -------------------------------------------------------------------
    ("testShape_rt1", "tf.RaggedTensor.from_row_splits([1, 2, 3, 4, 5, 6, 7], "
     "[0, 2, 5, 6, 6, 7]).shape"),
    ("testShape_rt2", f"tf.RaggedTensor.from_row_splits({PAIRS}, "
     "[0, 2, 5, 6, 6, 7]).shape"),
    ("testShape_rt3", "tf.RaggedTensor.from_row_splits([[[1, 2], [3, 4]], "
     "[[5, 6], [7, 8]], [[9, 10], [11, 12]]], [0, 2, 2, 3]).shape"),
    ("testShape_rt4", "tf.RaggedTensor.from_row_splits("
     "tf.RaggedTensor.from_row_splits([[[1, 2], [3, 4]], [[5, 6], [7, 8]], "
     "[[9, 10], [11, 12]]], [0, 2, 2, 3]), [0, 1, 3, 3]).shape"),
    ("testGetShape", f"{RT_SPLITS}.get_shape()"),
    ("testShape_ndim_rt4", "len(tf.RaggedTensor.from_row_splits("
     "tf.RaggedTensor.from_row_splits([[[1, 2], [3, 4]], [[5, 6], [7, 8]], "
     "[[9, 10], [11, 12]]], [0, 2, 2, 3]), [0, 1, 3, 3]).shape)"),
    # -- with_values / with_flat_values ------------------------------------------
    ("testWithValues_rt1_plus_10",
     "(lambda rt: rt.with_values(rt.values + 10))("
     "tf.ragged.constant([[1, 2], [3, 4, 5], [6], [], [7]]))"),
    ("testWithValues_rt2_times_10",
     "(lambda rt: rt.with_flat_values(rt.flat_values * 10))("
     "tf.ragged.constant([[[1, 2], [3, 4, 5]], [[6]], [], [[], [7]]]))"),
    ("testWithValues_rt1_expanded",
     "(lambda rt: rt.with_values(tf.expand_dims(rt.values, axis=1)))("
     "tf.ragged.constant([[1, 2], [3, 4, 5], [6], [], [7]]))"),
    ("testWithValues_wrong_length",
     "tf.ragged.constant([[1, 2], [3]]).with_values([1, 2])"),
    ("testWithValues_ragged_values",
     "tf.ragged.constant([[1, 2], [3]]).with_values("
     "tf.ragged.constant([[1], [], [2, 3]]))"),
    ("testWithFlatValues_wrong_length",
     "tf.ragged.constant([[[1, 2]], [[3]]]).with_flat_values([1, 2])"),
    ("testWithFlatValues_uniform_keeps_shape",
     f"{B1}.with_flat_values(np.arange(16.0)).shape"),
    ("testWithRowSplitsDtype_int32",
     "tf.ragged.constant([[[1, 2]], [[3]], []]).with_row_splits_dtype(tf.int32)"),
    ("testWithRowSplitsDtype_int64",
     "tf.ragged.constant([[1, 2], [3]], row_splits_dtype=tf.int32)"
     ".with_row_splits_dtype(tf.int64)"),
    # -- iteration and numpy() ----------------------------------------------------
    ("testEagerForLoop",
     "[r.numpy().tolist() for r in "
     "tf.ragged.constant([[1., 2.], [3., 4., 5.], [6.]])]"),
    ("testEagerForLoop_rr2",
     "[r.to_list() for r in tf.ragged.constant([[[1], [2, 3]], [], [[4]]])]"),
    ("testRaggedTensorNumpy_Shape_2_R",
     "repr(tf.ragged.constant([[1, 2], [3, 4, 5]], dtype=tf.int32).numpy())"),
    ("testRaggedTensorNumpy_Shape_2_2",
     "repr(tf.ragged.constant([[1, 2], [3, 4]], dtype=tf.int32).numpy())"),
    ("testRaggedTensorNumpy_Shape_2_R_2",
     "repr(tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], dtype=tf.int32, "
     "ragged_rank=1).numpy())"),
    ("testRaggedTensorNumpy_Shape_3_2_R",
     "repr(tf.ragged.constant([[[1], []], [[2, 3], [4]], [[], [5, 6, 7]]], "
     "dtype=tf.int32).numpy())"),
    ("testRaggedTensorNumpy_Shape_0_R",
     "repr(tf.ragged.constant([], ragged_rank=1, dtype=tf.int32).numpy())"),
    ("testRaggedTensorNumpy_Shape_0_R_2",
     "repr(tf.ragged.constant([], ragged_rank=1, inner_shape=(2,), "
     "dtype=tf.int32).numpy())"),
    ("testRaggedTensorStrWithZeroSizeInnerShape",
     "tf.RaggedTensor.from_row_lengths(np.zeros([9, 0], np.float32), [4, 3, 2])"
     ".to_list()"),
    # -- row_lengths(axis), nested_row_lengths ------------------------------------
    ("testRowLengths_axis0",
     "tf.ragged.constant([[[3, 1, 4], [1]], [], [[5, 9], [2]], [[6]], []])"
     ".row_lengths(axis=0)"),
    ("testRowLengths_axis1",
     "tf.ragged.constant([[[3, 1, 4], [1]], [], [[5, 9], [2]], [[6]], []])"
     ".row_lengths(axis=1)"),
    ("testRowLengths_axis2",
     "tf.ragged.constant([[[3, 1, 4], [1]], [], [[5, 9], [2]], [[6]], []])"
     ".row_lengths(axis=2)"),
    ("testRowLengths_axis_minus1",
     "tf.ragged.constant([[[3, 1, 4], [1]], [], [[5, 9], [2]], [[6]], []])"
     ".row_lengths(axis=-1)"),
    ("testRowLengths_axis3_out_of_bounds",
     "tf.ragged.constant([[[3, 1, 4], [1]], [], [[5, 9], [2]], [[6]], []])"
     ".row_lengths(axis=3)"),
    ("testRowLengths_uniform_inner_axis2",
     "tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1)"
     ".row_lengths(axis=2)"),
    ("testRowLengths_uniform_inner_axis2_int32",
     "tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1, "
     "row_splits_dtype=tf.int32).row_lengths(axis=2)"),
    ("testRowLengths_rr3_axis3",
     "tf.ragged.constant([[[[1], [2, 3]]], [[[4, 5, 6]], []]]).row_lengths(axis=3)"),
    ("testNestedRowLengths_0",
     "tf.ragged.constant([[[3, 1, 4], [1]], [], [[5, 9], [2]]])"
     ".nested_row_lengths()[0]"),
    ("testNestedRowLengths_1",
     "tf.ragged.constant([[[3, 1, 4], [1]], [], [[5, 9], [2]]])"
     ".nested_row_lengths()[1]"),
    ("testNestedRowLengths_len",
     "len(tf.ragged.constant([[[3, 1, 4], [1]], [], [[5, 9], [2]]])"
     ".nested_row_lengths())"),
    ("testUniformRowLength_ragged", "tf.ragged.constant([[1], [2, 3]])"
     ".uniform_row_length is None"),
    *_validation(),
    *_type_preference(),
]
