"""TensorFlow's ragged elementwise tests, ported: ``ragged_dispatch_test.py``
(``RaggedElementwiseOpsTest``, the successor of ``ragged_elementwise_ops_test
.py``: the same parameter lists, under ``tf.math`` names), the error and
broadcasting tests of ``ragged_elementwise_ops_test.py``, and
``ragged_operators_test.py``.

``unary_<op>`` / ``binary_<op>`` are the per-op parameter sets of
``testUnaryElementwiseOp`` / ``testBinaryElementwiseOp``; ``unary_shape_<i>``
and ``binary_shape_<i>`` their shape sets (called with ``tf.math.abs`` and
``tf.math.add``), ``list_<i>`` those of ``testListValuedElementwiseOp``.
Each case returns the op's result (TensorFlow's test compares it with the op
of the flat values; the fixture stores the result itself).  Dense Python
inputs are passed as ``tf.constant(..., dtype=tf.int32)`` (TensorFlow's
dtype for Python ints; sparsegrad reads Python ints as int64).  The
``extra_*`` cases widen the checks: ragged rank 2 with dense operands of
every rank, int32 splits, rows of length 1 against longer rows, errors.

Ops of the TensorFlow lists that sparsegrad does not have (not ported):
acos, acosh, angle, asin, asinh, atan, atanh, conj, cos, cosh, digamma, erf,
erfc, imag, lgamma, log_sigmoid, real, sin, sinh, tan (trigonometric and
special functions: NumPy's float32 loops give different bits on different
CPUs, see DESIGN.md's invariant 4, and the others have no NumPy function),
atan2, complex, realdiv, saturate_cast, check_numerics, clip_by_value (not a
dispatching op here), bitwise_and/or/xor, invert, left_shift, right_shift,
and the string ops (decode_base64, encode_base64, string_strip,
decode_compressed, unicode_script, string_to_hash_bucket*, string_to_number,
regex_full_match, regex_replace, substr, string_join).

Differences kept: ``==`` and ``!=`` on RaggedTensors compare identity (as on
sparsegrad Tensors, which stay hashable); ``testEqualityOperators`` is
ported with ``tf.math.equal`` / ``tf.math.not_equal``.
"""

RT = "tf.ragged.constant({}{})"
RR1, RR2 = ", ragged_rank=1", ", ragged_rank=2"


def _d(value):
    """A dense float32 constant."""
    return f"tf.constant({value}, dtype=tf.float32)"


def _rt(value, extra=""):
    return RT.format(value, extra)


def _arg(value):
    """A ported test argument: ('r', list, extra) a ragged constant, ('d',
    list) a dense int32 constant."""
    if value[0] == "r":
        return _rt(value[1], value[2] if len(value) > 2 else "")
    return f"tf.constant({value[1]}, dtype=tf.int32)"


UNARY_FLOAT = ["abs", "ceil", "exp", "expm1", "floor", "is_finite", "is_inf",
               "is_nan", "log", "log1p", "negative", "reciprocal", "rint",
               "round", "rsqrt", "sign", "sqrt", "square"]
UNARY_ARRAY = ["identity", "ones_like", "zeros_like"]
BINARY_FLOAT = ["add", "divide_no_nan", "divide", "equal", "floordiv", "floormod",
                "greater", "greater_equal", "less", "less_equal", "maximum",
                "minimum", "multiply", "not_equal", "pow", "squared_difference",
                "subtract", "truediv"]
BINARY_BOOL = ["logical_and", "logical_or", "logical_xor"]
BINARY_INT = ["truncatediv", "truncatemod"]

CASES = []

# -- testUnaryElementwiseOp -------------------------------------------------------
_UNARY_SHAPES = [
    ("d", 12), ("d", [1, -2, 3]), ("d", [[-2, 3], [-3, 4]]),
    ("r", [[-2, 3], [-3]], ", ragged_rank=1"),
    ("d", [[[-2, 3], [3, 4]], [[7, 6], [5, 4]]]),
    ("r", [[[-2, 3], [3, 4]], [[7, 6]]], ", ragged_rank=1"),
    ("r", [[[-2, 3, 4], []], [[7, 6]], []], ", ragged_rank=2"),
]
CASES += [(f"unary_shape_{i}", f"tf.math.abs({_arg(x)})")
          for i, x in enumerate(_UNARY_SHAPES)]
_F = _rt([[-2.0, 3.0], [-3.0]])
CASES += [(f"unary_{op}", f"tf.math.{op}({_F})") for op in UNARY_FLOAT]
CASES += [(f"unary_{op}", f"tf.{op}({_F})") for op in UNARY_ARRAY]
CASES += [
    ("unary_logical_not", f"tf.math.logical_not({_rt([[True, False], [True]])})"),
    ("unary_cast", f"tf.cast({_F}, dtype=tf.int32)"),
    # the same ops at ragged rank 2 and with uniform inner dimensions
    ("extra_unary_rank2_exp",
     f"tf.math.exp({_rt([[[0.5, -1.0], []], [[2.0]]])})"),
    ("extra_unary_inner_square",
     f"tf.math.square({_rt([[[1.0, 2.0]], [[3.0, 4.0], [5.0, 6.0]]], RR1)})"),
    ("extra_unary_tanh", f"tf.math.tanh({_F})"),
    ("extra_unary_sigmoid", f"tf.math.sigmoid({_F})"),
    ("extra_unary_cast_rank2",
     f"tf.cast({_rt([[[1.5, -2.5], []], [[3.7]]])}, tf.float64)"),
    ("extra_unary_zeros_like_dtype", f"tf.zeros_like({_F}, dtype=tf.int64)"),
    ("extra_unary_round_half", f"tf.math.round({_rt([[0.5, 1.5], [2.5, -0.5]])})"),
    ("extra_unary_int32_splits",
     "tf.math.negative(tf.RaggedTensor.from_row_splits([1.0, 2.0, 3.0], "
     "tf.constant([0, 2, 3], dtype=tf.int32)))"),
    ("extra_unary_floor_of_int", f"tf.math.floor({_rt([[1, 2], [3]])})"),
    ("extra_unary_logical_not_of_int",
     f"tf.math.logical_not({_rt([[1, 2], [3]])})"),
]

# -- testBinaryElementwiseOp ------------------------------------------------------
_BINARY_SHAPES = [
    (("d", 12), ("d", 8)),
    (("d", [7, 8, 9]), ("d", [1, -2, 3])),
    (("d", [[-2, 3], [-3, -4]]), ("d", [[1, 2], [3, 4]])),
    (("r", [[-2, 3], [-3]]), ("r", [[5, 6], [7]])),
    (("d", [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]),
     ("d", [[[9, 3], [3, 4]], [[5, 2], [7, 6]]])),
    (("r", [[[1, 2], [3], [4]], [[], [5, 7, 8]]]),
     ("r", [[[3, 8], [2], [5]], [[], [1, 9, 8]]])),
    (("r", [[[1, 2]], [[3, 4], [5, 6], [7, 8]]], ", ragged_rank=1"),
     ("r", [[[9, 3]], [[5, 2], [3, 4], [7, 6]]], ", ragged_rank=1")),
    (("d", 12), ("d", [1, -2, 3])),
    (("d", [12]), ("d", [1, -2, 3])),
    (("d", 12), ("d", [[1, 2], [3, 4]])),
    (("d", 12), ("d", [[1, 2], [3, 4]])),
    (("d", [[10], [20]]), ("d", [[1, 2], [3, 4]])),
    (("d", 10), ("r", [[1, 2], [3]], ", dtype=tf.int32")),
]
CASES += [(f"binary_shape_{i}", f"tf.math.add({_arg(x)}, {_arg(y)})")
          for i, (x, y) in enumerate(_BINARY_SHAPES)]
_KW = [
    ("r", [[[1, 2], [3], [4]], [[], [5, 7, 8]]]),
    ("r", [[[3, 8], [2], [5]], [[], [1, 9, 8]]]),
    ("r", [[[1, 2]], [[3, 4], [5, 6], [7, 8]]], ", ragged_rank=1"),
    ("r", [[[9, 3]], [[5, 2], [3, 4], [7, 6]]], ", ragged_rank=1"),
]
CASES += [
    ("binary_kwargs_0", f"tf.math.add(x={_arg(_KW[0])}, y={_arg(_KW[1])})"),
    ("binary_kwargs_1", f"tf.math.add(x={_arg(_KW[2])}, y={_arg(_KW[3])})"),
    ("binary_kwargs_2", f"tf.math.add({_arg(_KW[2])}, y={_arg(_KW[3])})"),
]
_FX, _FY = _rt([[-2.0, 3.0], [-3.0]]), _rt([[5.0, 1.0], [12.0]])
CASES += [(f"binary_{op}", f"tf.math.{op}({_FX}, {_FY})") for op in BINARY_FLOAT]
_IX, _IY = _rt([[-2, 3], [-3]]), _rt([[5, 1], [12]])
CASES += [(f"binary_{op}", f"tf.{op}({_IX}, {_IY})") for op in BINARY_INT]
_BX, _BY = _rt([[True, True], [False]]), _rt([[False, True], [False]])
CASES += [(f"binary_{op}", f"tf.math.{op}({_BX}, {_BY})") for op in BINARY_BOOL]

# -- testListValuedElementwiseOp --------------------------------------------------
_LISTS = [
    [("d", 12), ("d", 8), ("d", 3)],
    [("d", [1, 2, 3]), ("d", [7, 8, 9]), ("d", [3, 6, 9])],
    [("d", [[1, 2]]), ("d", [[3, 4]]), ("d", [[5, 6]])],
    [("r", [[1, 3], [-3]]), ("r", [[4, 7], [88]]), ("r", [[2, 9], [12]])],
    [("r", [[[1, 3], [-3]], [[1]]]), ("r", [[[4, 7], [88]], [[2]]]),
     ("r", [[[2, 9], [12]], [[8]]])],
    [("r", [[[1, 3], [3, 4]], [[1, 5]]], ", ragged_rank=1"),
     ("r", [[[4, 7], [1, 2]], [[2, 2]]], ", ragged_rank=1"),
     ("r", [[[2, 9], [5, 2]], [[8, 0]]], ", ragged_rank=1")],
]
CASES += [(f"list_{i}", "tf.math.add_n([" + ", ".join(_arg(x) for x in xs) + "])")
          for i, xs in enumerate(_LISTS)]
CASES += [
    ("list_kwargs", "tf.math.add_n(inputs=[" + ", ".join(
        _arg(x) for x in _LISTS[4]) + "])"),
    ("extra_list_mismatch", f"tf.math.add_n([{_rt([[1, 3], [-3]])}, "
     f"{_rt([[1], [2, 3]])}])"),
]

# -- testElementwiseOpBroadcast, testElementwiseOpShapeMismatch ------------------
CASES += [
    ("broadcast_0", f"{_rt([[1, 2], [3]])} + tf.constant([[10]], dtype=tf.int32)"),
    ("broadcast_1", f"{_rt([[[1, 2], [3, 4]], [[5]]], RR2)} + "
     f"{_rt([[[10], [20]], [[30]]], RR1)}"),
    ("broadcast_2", f"{_rt([[[1]]])} + {_rt([[1]])}"),
    ("shape_mismatch", f"tf.math.add({_rt([[1, 2, 3], [4, 5]])}, "
     f"{_rt([[1, 2, 3], [4, 5, 6]])})"),
    # ragged_elementwise_ops_test.py's testBroadcastError1, 2 and 4 (TensorFlow
    # 2.21 broadcasts the first and the fourth).  Not ported: the third
    # (rows [[7, 8], [9]] of ragged rank 1 against [[[1, 2], [3]], [[4, 5],
    # [6]]]): TensorFlow 2.21 raises InvalidArgumentError through tf.math.add
    # and returns one row through +, where the shapes broadcast; sparsegrad
    # broadcasts (tests/ragged/test_ragged_elementwise.py), as it does
    # [[1., 2.], [3., 4.]] + [10., 20.], which TensorFlow refuses ("Last row
    # partition does not match flat_values").
    ("old_broadcast_1", f"tf.math.add({_rt([[1, 2], [3]])}, "
     "tf.constant([[12]], dtype=tf.int32))"),
    ("old_broadcast_2", f"tf.math.add({_rt([[[1, 2], [3, 4]], [[5]]], RR2)}, "
     f"{_rt([[[8], [3]], [[2]]], RR1)})"),
    ("old_broadcast_4", f"tf.math.add({_rt([[[1]]])}, {_rt([[1]])})"),
]

# -- ragged_operators_test.py -----------------------------------------------------
_X, _Y = _rt([[1.0, -2.0], [8.0]]), _rt([[4.0, 4.0], [2.0]])
_ARITH = ["abs({x})", "-{x}", "{x} + {y}", "3.0 + {y}", "{x} + 3.0", "{x} - {y}",
          "3.0 - {y}", "{x} * {y}", "3.0 * {y}", "{x} * 3.0", "{x} / {y}",
          "{y} / {x}", "2.0 / {y}", "{x} / 2.0", "{x} // {y}", "{y} // {x}",
          "2.0 // {y}", "{x} // 2.0", "{x} % {y}", "{y} % {x}", "2.0 % {y}",
          "{x} % 2.0"]
CASES += [(f"operators_arithmetic_{i}", e.format(x=_X, y=_Y))
          for i, e in enumerate(_ARITH)]
_OX, _OY = _rt([[1, 5], [3]]), _rt([[4, 5], [1]])
CASES += [(f"operators_ordering_{i}", f"{_OX} {op} {_OY}")
          for i, op in enumerate([">", ">=", "<", "<="])]
_LA, _LB = _rt([[True, True], [False]]), _rt([[True, False], [False]])
_LOGIC = ["~{a}", "{a} & {b}", "{a} & True", "True & {b}", "{a} | {b}",
          "{a} | False", "False | {b}", "{a} ^ {b}", "{a} ^ True", "True ^ {b}"]
CASES += [(f"operators_logical_{i}", e.format(a=_LA, b=_LB))
          for i, e in enumerate(_LOGIC)]
_EA, _EB = _rt([[1, 2], [3]]), _rt([[4, 5], [3]])
CASES += [
    ("operators_equality_0", f"tf.math.equal({_EA}, {_EB})"),
    ("operators_equality_1", f"tf.math.not_equal({_EA}, {_EB})"),
    ("operators_equality_2", f"tf.math.equal({_EA}, 2)"),
    ("operators_equality_3", f"tf.math.not_equal({_EA}, 2)"),
    ("operators_dummy_bool", f"bool({_LA})"),
]

# -- where (ragged_dispatch_test's testRaggedDispatch, numbers for strings) ------
_C = _rt([[True, False], [True]])
CASES += [
    ("where_coordinates", f"tf.where({_C})"),
    ("where_select", f"tf.where({_C}, {_rt([[1, 2], [3]])}, {_rt([[10, 20], [30]])})"),
    ("extra_where_coordinates_rank2",
     f"tf.where({_rt([[[True, False], []], [[False, True, True]]])})"),
    ("extra_where_coordinates_inner",
     f"tf.where({_rt([[[True, False]], [[False, True], [True, True]]], RR1)})"),
    ("extra_where_scalar_y", f"tf.where({_C}, {_rt([[1.0, 2.0], [3.0]])}, 0.0)"),
    ("extra_where_dense_condition",
     f"tf.where(tf.constant([[True], [False]]), {_rt([[1.0, 2.0], [3.0]])}, "
     f"{_rt([[10.0, 20.0], [30.0]])})"),
    ("extra_where_one_none", f"tf.where({_C}, {_rt([[1, 2], [3]])})"),
]

# -- broadcasting beyond TensorFlow's own tests ------------------------------------
_R1 = _rt([[1.0, 2.0, 3.0], [], [4.0, 5.0]])
_R2 = _rt([[[1.0, 2.0], [3.0]], [], [[4.0], [], [5.0, 6.0]]])
_RI = _rt([[[1.0, 2.0]], [[3.0, 4.0], [5.0, 6.0]]], ", ragged_rank=1")
CASES += [
    ("extra_dense_column", f"{_R1} * {_d([[2.0], [3.0], [4.0]])}"),
    ("extra_dense_column_left", f"{_d([[2.0], [3.0], [4.0]])} - {_R1}"),
    ("extra_dense_scalar_tensor", f"{_R1} * {_d(2.0)}"),
    ("extra_dense_row_11", f"{_R1} + {_d([[10.0]])}"),
    ("extra_dense_3d_over_r1", f"{_R1} + {_d([[[1.0]], [[2.0]]])}"),
    ("extra_dense_rows_mismatch", f"{_R1} + {_d([10.0, 20.0])}"),
    ("extra_rank2_column", f"{_R2} * {_d([[2.0], [3.0], [4.0]])}"),
    ("extra_rank2_matrix",
     f"{_R2} * {_d([[[1.0]], [[2.0]], [[3.0]]])}"),
    ("extra_rank2_cube_mismatch",
     f"{_R2} * {_d([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])}"),
    ("extra_rank2_with_rank1",
     f"{_R2} + {_rt([[[1.0]], [], [[2.0], [3.0], [4.0]]], RR1)}"),
    ("extra_inner_vector", f"{_RI} * {_d([10.0, 100.0])}"),
    ("extra_inner_column", f"{_RI} * {_d([[10.0], [100.0]])}"),
    ("extra_inner_matrix", f"{_RI} + {_d([[[1.0, 2.0]], [[3.0, 4.0]]])}"),
    ("extra_length1_rows",
     f"{_rt([[1.0], [2.0], []])} + {_rt([[1.0, 2.0], [3.0], []])}"),
    ("extra_length1_rows_mismatch",
     f"{_rt([[1.0, 2.0], [2.0, 3.0]])} + {_rt([[1.0, 2.0, 3.0], [3.0]])}"),
    ("extra_nrows_mismatch", f"{_R1} + {_rt([[1.0], [2.0]])}"),
    ("extra_nrows_one", f"{_R1} + {_rt([[1.0, 2.0, 3.0]])}"),
    ("extra_int32_splits",
     "tf.RaggedTensor.from_row_splits([1.0, 2.0, 3.0], tf.constant([0, 2, 3], "
     "dtype=tf.int32)) * tf.constant([[2.0], [3.0]], dtype=tf.float32)"),
    ("extra_splits_dtype_mismatch",
     "tf.RaggedTensor.from_row_splits([1.0, 2.0, 3.0], tf.constant([0, 2, 3], "
     f"dtype=tf.int32)) + {_rt([[1.0, 2.0], [3.0]])}"),
    ("extra_dtype_mismatch", f"{_R1} + tf.constant([[1]], dtype=tf.int32)"),
    ("extra_python_list_adopts", f"{_R1} + [[1.0], [2.0], [3.0]]"),
    ("extra_pow_scalar", f"{_R1} ** 2.0"),
    ("extra_rpow", f"2.0 ** {_R1}"),
    ("extra_maximum_dense", f"tf.math.maximum({_R2}, {_d([[2.5], [0.0], [4.5]])})"),
    ("extra_floordiv_int_zero", f"{_rt([[1, 2], [3]])} // 0"),
    ("extra_empty", f"{_rt([[], []], ', dtype=tf.float32')} + {_d([[1.0], [2.0]])}"),
]
