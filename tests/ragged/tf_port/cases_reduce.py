"""TensorFlow's ``ragged_reduce_op_test.py`` (RaggedReduceOpsTest), ported.

``testReduce_<i>_<op>`` is the i-th parameter set of ``testReduce`` (in the
file's order); ``ragged_math_ops.reduce_<op>`` is called through the public
name that dispatches to it (``tf.reduce_sum``, ``tf.math.reduce_variance``,
...).  The other tests keep their names; the ``extra_*`` cases widen the
same checks (int32 row splits at ragged rank 2 and 3, ragged rank 3, more
dtypes, dense inputs, tuple axes, errors).

The ``*WithTensorInputs`` tests pass Python lists of floats, float32 in
TensorFlow; sparsegrad reads Python values by NumPy's rules (float64), so the
port passes them as float32 Tensors (``tf.constant(..., dtype=tf.float32)``).

Skipped: ``testErrors``' first check (an axis from a placeholder: graph mode
only).
"""

OPS = {
    "sum": "tf.reduce_sum", "prod": "tf.reduce_prod", "min": "tf.reduce_min",
    "max": "tf.reduce_max", "mean": "tf.reduce_mean",
    "variance": "tf.math.reduce_variance", "std": "tf.math.reduce_std",
    "any": "tf.reduce_any", "all": "tf.reduce_all",
}

DOC = [[3, 1, 4], [1, 5], [9], [2, 6]]
BOOLS = [[True, True], [True, True, False, True], [False, True]]
R1 = [[0, 1, 2, 3], [4], [], [5, 6], [7], [8, 9]]
R2 = [[[1, 2], [], [3, 4, 5]], [[6, 7], [], [8]], [], [[9]]]
R2M = [[[1, 2], [3, 4, 5]], [[6, 7], [8]], [[9]]]
SMALL = [[[0.214441]] * 7]

# testReduce's parameters: (op, rt_input, axis, keepdims), in the file's order.
_REDUCE = []
for _kd in (False, True):
    _REDUCE += [
        ("sum", DOC, 0, _kd), ("sum", DOC, -2, _kd), ("sum", DOC, 1, _kd),
        ("sum", DOC, -1, _kd), ("prod", DOC, 0, _kd), ("prod", DOC, 1, _kd),
        ("min", DOC, 0, _kd), ("min", DOC, 1, _kd), ("max", DOC, 0, _kd),
        ("max", DOC, 1, _kd), ("mean", DOC, 0, _kd),
        ("variance", [[3, 1, 4], [1, 1], [9], [2, 1]], 0, _kd),
        ("std", [[3, 1, 4], [3, 1], [2], [2, 1]], 0, _kd),
        ("any", BOOLS, 0, _kd), ("any", BOOLS, 1, _kd),
        ("all", BOOLS, 0, _kd), ("all", BOOLS, 1, _kd),
    ]
_REDUCE += [(op, R1, None, False) for op in
            ("sum", "prod", "min", "max", "mean", "variance", "std")]
_REDUCE += [(op, R1, 0, False) for op in ("sum", "prod", "min", "max", "mean")]
_REDUCE += [
    ("variance", [[0, 1, 2, 3], [1], [], [2, 1], [3], [4, 1]], 0, False),
    ("std", [[1, 1, 2, 3], [1], [], [1, 1], [1], [1, 1]], 0, False),
]
_REDUCE += [(op, R1, 1, False) for op in ("sum", "prod", "min", "max")]
for _kd in (False, True):
    _REDUCE += [("sum", R2, ax, _kd) for ax in
                ([], None, 0, 1, 2, [0, 1], [0, 2], [1, 2], [0, 1, 2])]
_REDUCE += [("mean", R2M, ax, False) for ax in (0, 1, 2)]
_REDUCE += [
    ("variance", [[[6, 2], [3, 4, 5]], [[6, 7], [8]], [[9]]], 0, False),
    ("variance", [[[6, 2], [3, 4, 5]], [[6, 7], [8]], [[9]]], 1, False),
    ("variance", [[[6, 2], [6, 9, 9]], [[6, 7], [8]], [[9]]], 2, False),
    ("std", [[[6, 2], [3, 4, 5]], [[6, 7], [8]], [[9]]], 0, False),
    ("std", [[[6, 2], [3, 4, 5]], [[6, 7], [8]], [[9]]], 1, False),
    ("std", [[[6, 2], [6, 9, 9]], [[6, 7], [8]], [[9]]], 2, False),
    ("sum", R2, [-2, -1], False),
    ("sum", R2, [-3, -2, -1], False),
    ("variance", SMALL, [1], False),
    ("std", SMALL, [1], False),
]


def _call(op, rt, axis, keepdims=False):
    return f"{OPS[op]}({rt}, {axis!r}, keepdims={keepdims})"


CASES = [
    (f"testReduce_{i}_{op}", _call(op, f"tf.ragged.constant({rt!r})", axis, kd))
    for i, (op, rt, axis, kd) in enumerate(_REDUCE)
]

CASES += [
    ("testReduceKeepsInnerDimensionShape",
     "tf.reduce_sum(tf.ragged.constant([[[[1, 1]]]], ragged_rank=2), axis=2)"),
    ("testReduceKeepsInnerDimensionShape_shape",
     "tf.reduce_sum(tf.ragged.constant([[[[1, 1]]]], ragged_rank=2), axis=2).shape"),
    ("testMeanNan", f"tf.reduce_mean(tf.ragged.constant({R1!r}), axis=1)"),
    ("testVarianceNan",
     f"tf.math.reduce_variance(tf.ragged.constant({R1!r}), axis=1)"),
    ("testStdNan", "tf.math.reduce_std(tf.ragged.constant("
     "[[0, 1, 1, 0], [4], [], [5, 6], [7], [8, 9]]), axis=1)"),
    ("testMeanWithTensorInputs",
     "tf.reduce_mean(tf.constant([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]], "
     "dtype=tf.float32), axis=1)"),
    ("testVarianceWithTensorInputs",
     "tf.math.reduce_variance(tf.constant([[6.0, 9.0, 6.0], [60.0, 90.0, 60.0]], "
     "dtype=tf.float32), axis=1)"),
    ("testStdWithTensorInputs",
     "tf.math.reduce_std(tf.constant([[1.0, 2.0, 2.0, 1.0], "
     "[10.0, 20.0, 20.0, 10.0]], dtype=tf.float32), axis=1)"),
    ("testErrors_axis_str",
     "tf.reduce_sum(tf.ragged.constant([[1, 2, 3], [4, 5]]), ['x'])"),
]

# Beyond TensorFlow's file: the same reductions over more inputs.
R3 = [[[[1, 2], []], [[3]]], [], [[[4, 5, 6]], [[7], [8, 9]]]]
I32 = "row_splits_dtype=tf.int32"
_EXTRA = []
for _op in OPS:
    _rt2 = (f"tf.ragged.constant({R2!r}, {I32})" if _op not in ("any", "all") else
            f"tf.ragged.constant([[[True, False], []], [[False]], []], {I32})")
    for _ax in (None, 0, 1, 2, (0, 2), -1):
        for _kd in (False, True):
            _EXTRA.append((f"extra_rank2_int32_{_op}_{_ax}_{_kd}",
                           _call(_op, _rt2, _ax, _kd)))
for _op in ("sum", "max", "mean", "variance"):
    for _ax in (None, 0, 1, 2, 3, [1, 3], [0, -1]):
        for _kd in (False, True):
            _EXTRA.append((f"extra_rank3_{_op}_{_ax}_{_kd}",
                           _call(_op, f"tf.ragged.constant({R3!r})", _ax, _kd)))
    _EXTRA.append((f"extra_rank3_int32_{_op}_1",
                   _call(_op, f"tf.ragged.constant({R3!r}, {I32})", 1)))
for _dtype in ("int64", "float16", "float64", "int8", "uint8"):
    for _op in ("sum", "prod", "min", "max", "mean", "variance", "std"):
        for _ax in (None, 0, 1):
            _EXTRA.append((f"extra_{_dtype}_{_op}_{_ax}", _call(
                _op, f"tf.ragged.constant({DOC!r}, dtype=tf.{_dtype})", _ax)))
for _op in ("sum", "prod", "min", "max", "mean", "variance", "std"):
    _EXTRA += [
        (f"extra_inner_{_op}_{_ax}", _call(
            _op, "tf.ragged.constant([[[1., 2.], [3., 4.]], [], [[5., 7.]]], "
            "ragged_rank=1)", _ax))
        for _ax in (None, 0, 1, 2, (1, 2), (0, 2))
    ]
    _EXTRA += [
        (f"extra_dense_{_op}_{_ax}_{_kd}", _call(
            _op, "tf.constant([[1., 2., 4.], [3., 5., 8.]], dtype=tf.float32)",
            _ax, _kd))
        for _ax in (None, 0, 1, [0, 1]) for _kd in (False, True)
    ]
    _EXTRA += [
        (f"extra_dense_int_{_op}_{_ax}",
         _call(_op, "tf.constant([[1, 2, 4], [3, 5, 8]], dtype=tf.int32)", _ax))
        for _ax in (None, 1)
    ]
    _EXTRA += [
        (f"extra_default_axis_{_op}",
         f"{OPS[_op]}(tf.ragged.constant({R1!r}, dtype=tf.float32))"),
        (f"extra_empty_rows_{_op}",
         _call(_op, "tf.ragged.constant([[], []], dtype=tf.float32)", 1)),
        (f"extra_axis_out_of_range_{_op}",
         _call(_op, f"tf.ragged.constant({DOC!r})", 2)),
        (f"extra_axis_negative_out_of_range_{_op}",
         _call(_op, f"tf.ragged.constant({DOC!r})", -3)),
    ]
for _op in ("any", "all"):
    _EXTRA += [
        (f"extra_dense_{_op}_{_ax}",
         _call(_op, "tf.constant([[True, False], [True, True]])", _ax))
        for _ax in (None, 0, 1)
    ]
    _EXTRA += [
        (f"extra_default_axis_{_op}", f"{OPS[_op]}(tf.ragged.constant({BOOLS!r}))"),
        (f"extra_int_values_{_op}", _call(_op, f"tf.ragged.constant({DOC!r})", 1)),
        (f"extra_empty_rows_{_op}",
         _call(_op, "tf.ragged.constant([[], [True]], dtype=tf.bool)", 1)),
    ]
_EXTRA += [
    ("extra_bool_variance", _call("variance", f"tf.ragged.constant({BOOLS!r})", 1)),
    ("extra_bool_sum", _call("sum", f"tf.ragged.constant({BOOLS!r})", 1)),
    ("extra_axis_float",
     "tf.reduce_sum(tf.ragged.constant([[1, 2, 3], [4, 5]]), 1.0)"),
    ("extra_axis_repeated",
     "tf.reduce_sum(tf.ragged.constant([[1, 2, 3], [4, 5]]), [1, 1])"),
    ("extra_axis_repeated_negative",
     "tf.reduce_sum(tf.ragged.constant([[1, 2, 3], [4, 5]]), [1, -1])"),
    ("extra_axis_tuple",
     "tf.reduce_sum(tf.ragged.constant([[1, 2, 3], [4, 5]]), (0, 1))"),
    ("extra_min_empty_float",
     "tf.reduce_min(tf.ragged.constant([[1.0], []]), axis=1)"),
    ("extra_prod_keepdims_inner",
     "tf.reduce_prod(tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], "
     "ragged_rank=1), axis=2, keepdims=True)"),
]
CASES += _EXTRA
