"""TensorFlow's ``RaggedTensor.__getitem__`` tests (ragged_tensor_test.py's
testRaggedTensorGetItem*, testStridedSlices, testGetItemNewAxis; now in
ragged_getitem_test.py), ported.  The 2-D example's strings b'a'..b'g' are
the ints 1..7.

Left out: the halves that wrap each int of the key in ``tf.constant`` or a
placeholder (graph mode; sparsegrad keys are Python ints and slices), and
testRaggedTensorGetItemErrorsWithPlaceholderShapes (unknown shapes exist in
graph mode only).
"""

RT2D = "tf.RaggedTensor.from_row_splits([1, 2, 3, 4, 5, 6, 7], [0, 2, 5, 6, 6, 7])"
RT4D = ("tf.RaggedTensor.from_nested_row_splits([[1, 2], [3, 4], [5, 6], [7, 8], "
        "[9, 10], [11, 12], [13, 14], [15, 16], [17, 18], [19, 20]], "
        "[[0, 2, 2, 3, 4], [0, 3, 6, 9, 10]])")
EMPTY = "tf.RaggedTensor.from_row_splits([], [0])"
NEWAXIS = ("tf.RaggedTensor.from_nested_row_splits([[1, 2], [3, 4], [5, 6]], "
           "[[0, 3, 3], [0, 2, 2, 3]])")

KEYS_2D = [
    "-5", "-4", "-1", "0", "1", "4",
    "-6:", "-3:", "-1:", "0:", "3:", "5:",
    ":-6", ":-3", ":-1", ":0", ":3", ":5",
    "0:3", "3:5", "-5:3", "3:1", "-1:1", "1:-1",
    "0, 1", "1, 2", "-1, 0", "-3, 0", ":", ":, :",
    "...", "2, ...", "..., :", "..., 2, 0", "2, ..., 0", "2, 0, ...",
    "tf.newaxis, :", ":, tf.newaxis",
    "-1:, 1:4", ":, 1:4", ":, -2:",
    "::2", "::-1", "::-2", "::-3", ":, ::2", ":, ::-1", ":, ::-2", ":, ::-3",
    ":, 2::-1", ":, -1::-1", "..., -1::-1", ":, 2::-2", "::-1, ::-1",
]
ERRORS_2D = [
    "5", "-6", "0, 2", "3, 0", ":, 3", ":1, 3", "..., 3",
    "0.5", "1:3:0.5", ":, 1:3:0.5", ":, 0.5:1.5", "'foo'", ":, 'foo':'foo'",
    "..., 0, 0, 0",
]
KEYS_4D = [
    "2, 0", "2, 0, 1", "2, 0, 1, 1", "2, 0, 1:", "2, 0, 1:, 1:", "2, 0, :, 1",
    "2, 0, 1, :",
    "0, :", "1, :", "0, :, :, 1", "1, :, :, 1", "2, :, :, 1", "3, :, :, 1",
    ":, :", ":, :, :, 1", "1:, :, :, 1", "-3:, :, :, 1",
    "...", "2, ...", "2, 0, ...", "..., 0", "2, ..., 0", "2, 0, ..., 0",
    "tf.newaxis, :", ":, tf.newaxis",
    ":, 1:4", ":, -2:", ":, :, :-1", ":, :, 1:2", "1:, 1:3, 1:2",
    "::2", "::-1", "::-2", "1::2", ":, ::2", ":, 1::2", ":, :, ::2", ":, :, 1::2",
    ":, :, ::-1", ":, :, ::-2", "..., ::-1, :", "..., ::-1",
]
ERRORS_4D = [":, 0", ":, :, 0", "1, 0", "0, 0, 3", "5", "0, 5"]


def _name(key):
    """A case-name suffix for a key's text."""
    table = {":": "c", ",": "_", " ": "", "-": "m", ".": "e", "'": "q",
             "tf.newaxis": "N"}
    out = key.replace("tf.newaxis", "N")
    for a, b in table.items():
        out = out.replace(a, b)
    return out


def _cases(test, rt, keys):
    return [(f"{test}[{_name(k)}]", f"{rt}[{k}]") for k in keys]


CASES = [
    *_cases("testRaggedTensorGetItemWithRaggedRank1", RT2D, KEYS_2D),
    ("testRaggedTensorGetItemWithRaggedRank1[emptylist]", f"{RT2D}[[]]"),
    ("testRaggedTensorGetItemWithRaggedRank1[emptytuple]", f"{RT2D}[()]"),
    *_cases("testRaggedTensorGetItemErrorsWithRaggedRank1", RT2D, ERRORS_2D),
    *_cases("testRaggedTensorGetItemWithRaggedRank2", RT4D, KEYS_4D),
    ("testRaggedTensorGetItemWithRaggedRank2[emptylist]", f"{RT4D}[[]]"),
    *_cases("testRaggedTensorGetItemErrorsWithRaggedRank2", RT4D, ERRORS_4D),
    *_cases("testRaggedTensorGetItemWithEmptyTensor", EMPTY, [":", "2:", ":-3"]),
    *_cases("testRaggedTensorGetItemErrorsWithEmptyTensor", EMPTY, ["0", "-1"]),
    *[(f"testGetItemNewAxis[{n}]", f"{NEWAXIS}[{k}]") for n, k in [
        ("0", "tf.newaxis"), ("1", ":, tf.newaxis"), ("2", ":, :, tf.newaxis"),
        ("3", ":, :, :, tf.newaxis"), ("4", ":, :, :, :, tf.newaxis")]],
    *[(f"testGetItemNewAxis[{n}]_ragged_rank", f"{NEWAXIS}[{k}].ragged_rank")
      for n, k in [("0", "tf.newaxis"), ("1", ":, tf.newaxis"),
                   ("2", ":, :, tf.newaxis"), ("3", ":, :, :, tf.newaxis"),
                   ("4", ":, :, :, :, tf.newaxis")]],
    *[(f"testGetItemNewAxis[{n}]_shape", f"{NEWAXIS}[{k}].shape")
      for n, k in [("0", "tf.newaxis"), ("1", ":, tf.newaxis"),
                   ("2", ":, :, tf.newaxis"), ("3", ":, :, :, tf.newaxis"),
                   ("4", ":, :, :, :, tf.newaxis")]],
    # uniform rows (from_uniform_row_length / from_tensor) index inner columns
    ("testGetItemUniform[c_1]",
     "tf.RaggedTensor.from_uniform_row_length(list(range(12)), 3)[:, 1]"),
    ("testGetItemUniform[c_m1]",
     "tf.RaggedTensor.from_uniform_row_length(list(range(12)), 3)[:, -1]"),
    ("testGetItemUniform[c_3]",
     "tf.RaggedTensor.from_uniform_row_length(list(range(12)), 3)[:, 3]"),
    ("testGetItemUniform[c_1c]",
     "tf.RaggedTensor.from_uniform_row_length(list(range(12)), 3)[:, 1:]"),
    ("testGetItemUniform[c_1c_shape]",
     "tf.RaggedTensor.from_uniform_row_length(list(range(12)), 3)[:, 1:].shape"),
    ("testGetItemUniform[1c_shape]",
     "tf.RaggedTensor.from_uniform_row_length(list(range(12)), 3)[1:].shape"),
    ("testGetItemUniform[from_tensor_c_1]",
     "tf.RaggedTensor.from_tensor([[1, 2, 3], [4, 5, 6]])[:, 1]"),
]
# testStridedSlices: every start/stop/step of TensorFlow's loop, outer and inner
_RT_STRIDED = ("tf.ragged.constant([[1, 2, 3, 4, 5], [6, 7], [8, 9, 10], [], [9], "
               "[1, 2, 3, 4, 5, 6, 7, 8]])")


def _bound(x):
    return "" if x is None else str(x)


for _start in [-2, -1, None, 0, 1, 2]:
    for _stop in [-2, -1, None, 0, 1, 2]:
        for _step in [-3, -2, -1, 1, 2, 3]:
            _key = f"{_bound(_start)}:{_bound(_stop)}:{_step}"
            CASES.append((f"testStridedSlices[outer_{_name(_key)}]",
                          f"{_RT_STRIDED}[{_key}]"))
            CASES.append((f"testStridedSlices[inner_{_name(_key)}]",
                          f"{_RT_STRIDED}[:, {_key}]"))
