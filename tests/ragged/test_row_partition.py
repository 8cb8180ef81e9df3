"""Row partitions (``sparsegrad/ragged/row_partition.py``) and the argument
conversions of ``ragged.range``: every finding of issue 23 and its siblings
raise the documented class, with a message naming the argument and the
value, before anything sized by the data is allocated, and leave the inputs
as they were."""

import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError

# subprocesses start outside the source tree, whose sparsegrad is unbuilt
OUTSIDE = os.path.expanduser("~")

RT = sg.RaggedTensor
V = np.arange(8, dtype=np.float32)
I64 = 2**63 - 1
I32 = 2**31 - 1


def _raises_unchanged(cls, fragment, call, *inputs):
    """`call()` raises `cls` with `fragment` in its message; the array
    `inputs` are bit-for-bit as they were."""
    before = [np.array(a, copy=True) for a in inputs]
    with pytest.raises(cls) as info:
        call()
    assert fragment in str(info.value), str(info.value)
    for a, b in zip(inputs, before):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return str(info.value)


# -- cumulative sums that wrap -------------------------------------------------


@pytest.mark.parametrize("lengths, dtype, fragment", [
    # the issue's case: int64 sums 2**63 - 1, 2**64 - 2 (wraps to -2), 2**64 + 8
    ([I64, I64, 10], np.int64, "row_lengths[1] = 9223372036854775807"),
    ([2**62] * 4 + [8], np.int64, "row_lengths[:2]"),
    ([I64, 1], np.int64, "is more than 9223372036854775807"),
    # int32 lengths whose int32 sum would wrap back to 8
    ([I32, I32, 10], np.int32, "row_lengths sum to 4294967304, more than int32"),
    ([2**30] * 4 + [8], np.int32, "more than int32 row splits hold: 2147483647"),
])
def test_row_lengths_whose_sums_overflow_are_refused(lengths, dtype, fragment):
    lengths = np.array(lengths, dtype)
    message = _raises_unchanged(
        InvalidArgumentError, fragment,
        lambda: RT.from_row_lengths(V, lengths), lengths)
    assert message.startswith(
        "Arguments to from_row_lengths do not form a valid RowPartition")


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_row_splits_that_wrap_are_refused(dtype):
    top, low = int(np.iinfo(dtype).max), int(np.iinfo(dtype).min)
    # a difference of these wraps to a positive one: compared, not subtracted
    splits = np.array([0, top, -2, 8], dtype)
    _raises_unchanged(
        InvalidArgumentError,
        f"RaggedTensor:monotonic (row_splits[2] = -2 < row_splits[1] = {top})",
        lambda: RT.from_row_splits(V, splits), splits)
    splits = np.array([0, low, 8], dtype)
    _raises_unchanged(InvalidArgumentError, f"row_splits[1] = {low} < row_splits[0]",
                      lambda: RT.from_row_splits(V, splits, validate=False), splits)
    splits = np.array([0, 4, top], dtype)
    _raises_unchanged(InvalidArgumentError,
                      f"row_splits[-1] = {top}, but values has 8 rows",
                      lambda: RT.from_row_splits(V, splits, validate=False), splits)
    splits = np.array([3, 8], dtype)
    _raises_unchanged(InvalidArgumentError, "RaggedTensor:zero (row_splits[0] = 3",
                      lambda: RT.from_row_splits(V, splits), splits)


def test_the_issue_reproducer_reduces_in_a_subprocess_without_crashing():
    code = (
        "import numpy as np, sparsegrad as sg\n"
        "try:\n"
        "    sg.RaggedTensor.from_row_lengths(np.arange(8, dtype=np.float32),\n"
        "        np.array([2**63 - 1, 2**63 - 1, 10]))\n"
        "except sg.errors.InvalidArgumentError:\n"
        "    print('refused')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=120,
                          cwd=OUTSIDE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused"


def test_rowids_kernel_stays_in_its_output_for_any_splits():
    # splits no factory accepts, through the private constructor: the row
    # ids kernel clamps each row to its output instead of writing past it
    code = (
        "import numpy as np, sparsegrad as sg\n"
        "splits = np.array([0, 2**63 - 1, -2, 8])\n"
        "rt = sg.RaggedTensor(sg.constant(np.arange(8.0)), splits, internal=True)\n"
        "print(rt.value_rowids().tolist())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=120,
                          cwd=OUTSIDE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([2] * 8)


# -- partition dtypes agree with the docs --------------------------------------


@pytest.mark.parametrize("dtype", [np.int16, np.int8, np.uint8, np.uint32,
                                   np.uint64, np.float64])
def test_partitions_of_other_dtypes_are_refused(dtype):
    name = np.dtype(dtype).name
    splits = np.array([0, 4, 8], dtype)
    _raises_unchanged(InvalidArgumentError,
                      f"row_splits must have dtype int32 or int64, got {name}",
                      lambda: RT.from_row_splits(V, splits), splits)
    lengths = np.array([4, 4], dtype)
    _raises_unchanged(InvalidArgumentError,
                      f"row_lengths must have dtype int32 or int64, got {name}",
                      lambda: RT.from_row_lengths(V, lengths), lengths)
    ids = np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype)
    _raises_unchanged(InvalidArgumentError,
                      f"value_rowids must have dtype int32 or int64, got {name}",
                      lambda: RT.from_value_rowids(V, ids), ids)
    with pytest.raises(InvalidArgumentError, match=f"got {name}"):
        RT.from_row_splits(V, sg.constant(splits))


def test_partition_dtypes_kept_and_python_lists_int64():
    for dtype in (np.int32, np.int64):
        assert RT.from_row_splits(V, np.array([0, 8], dtype)).row_splits.dtype == dtype
        assert RT.from_row_lengths(V, np.array([8], dtype)).row_splits.dtype == dtype
        ids = np.zeros(8, dtype)
        assert RT.from_value_rowids(V, ids).row_splits.dtype == dtype
    assert RT.from_row_splits(V, [0, 3, 8]).row_splits.dtype == np.int64
    assert RT.from_row_lengths(V, [3, 5]).row_splits.dtype == np.int64
    assert RT.from_row_lengths([], []).to_list() == []
    # a Python int past int64 is a dtype error, not a wrap
    with pytest.raises(InvalidArgumentError,
                       match="row_splits holds 9223372036854775808, past int64"):
        RT.from_row_splits(V, [0, 2**63, 8])
    with pytest.raises(InvalidArgumentError,
                       match="row_lengths holds 1180591620717411303424, past int64"):
        RT.from_row_lengths(V, [2**70, 8])


def test_constant_splits_dtype():
    with pytest.raises(InvalidArgumentError, match="attr 'row_splits_dtype' of int16"):
        sg.ragged.constant([[1, 2], [3]], row_splits_dtype=np.int16)
    rt = sg.ragged.constant([[1, 2], [3]], row_splits_dtype=np.int32)
    assert rt.row_splits.dtype == np.int32 and rt.to_list() == [[1, 2], [3]]


# -- value row ids and nrows ------------------------------------------------------


def test_value_rowids_errors_name_the_id():
    ids = np.array([0, 0, 2, 1, 3, 3, 3, 3])
    _raises_unchanged(InvalidArgumentError,
                      "value_rowids[3] = 1 < value_rowids[2] = 2: not sorted",
                      lambda: RT.from_value_rowids(V, ids, nrows=5), ids)
    ids = np.array([-4, 0, 0, 0, 1, 1, 1, 1])
    _raises_unchanged(InvalidArgumentError, "value_rowids[0] = -4 is negative",
                      lambda: RT.from_value_rowids(V, ids), ids)
    ids = np.array([-(2**63)] * 8)
    _raises_unchanged(InvalidArgumentError, "is negative",
                      lambda: RT.from_value_rowids(V, ids, nrows=3), ids)


def test_nrows_that_does_not_fit_or_is_huge_is_refused_before_allocating():
    ids = np.zeros(8, np.int32)
    _raises_unchanged(InvalidArgumentError,
                      "from_value_rowids: nrows = 2147483648 does not fit in int32",
                      lambda: RT.from_value_rowids(V, ids, nrows=2**31), ids)
    ids = np.zeros(8, np.int64)
    tracemalloc.start()
    for nrows in (2**40, 2**62, I64):
        _raises_unchanged(InvalidArgumentError, "from_value_rowids: nrows asks for",
                          lambda nrows=nrows: RT.from_value_rowids(V, ids, nrows=nrows),
                          ids)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1 << 20
    with pytest.raises(InvalidArgumentError, match="asks for"):
        RT.from_value_rowids(V, np.array([0] * 7 + [2**40]))   # nrows from the ids
    with pytest.raises(ValueError, match="Expected nrows >= 0; got -5"):
        RT.from_value_rowids(V, ids, nrows=-5)
    with pytest.raises(TypeError, match="nrows must be an int"):
        RT.from_value_rowids(V, ids, nrows=3.0)


# -- ragged.range: arguments the dtype cannot hold -------------------------------


@pytest.mark.parametrize("call, fragment", [
    (lambda: sg.ragged.range(2**40, 2**40 + 3, dtype=np.int32),
     "starts = 1099511627776 does not fit in int32"),
    (lambda: sg.ragged.range(0, 2**31, dtype=np.int32),
     "limits = 2147483648 does not fit in int32"),
    (lambda: sg.ragged.range(0, 5, -(2**31) - 1, dtype=np.int32),
     "deltas = -2147483649 does not fit in int32"),
    (lambda: sg.ragged.range(2**64 - 1), "limits = 18446744073709551615 does not "
     "fit in int64"),
    (lambda: sg.ragged.range([1, 2**70]), "limits = 1180591620717411303424 does not "
     "fit in int64"),
    (lambda: sg.ragged.range(1e300), "limits = 1e+300 is out of range for float32"),
    (lambda: sg.ragged.range(0.0, 1e300, dtype=np.float32), "limits = 1e+300"),
])
def test_python_numbers_that_do_not_fit_are_errors_not_wraps(call, fragment):
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert "ragged.range: " + fragment in str(info.value)


@pytest.mark.parametrize("array, dtype, fragment", [
    (np.array([2**40]), np.int32, "limits = 1099511627776 does not fit in int32"),
    (np.array([-(2**31) - 1, 0]), np.int32, "limits = -2147483649"),
    (np.array([2**63], np.uint64), np.int64, "limits = 9223372036854775808"),
    (np.array([3.5]), np.int32, "limits = 3.5 is not an integer"),
    (np.array([np.nan]), np.int64, "limits = nan is not an integer"),
    (np.array([np.inf], np.float32), np.int32, "limits = inf is not an integer"),
    (np.array([2.0**63]), np.int64, "limits = 9.223372036854776e+18 does not fit"),
    (np.array([2.0**31]), np.int32, "limits = 2147483648.0 does not fit in int32"),
    (np.array([1e300]), np.float32, "limits = 1e+300 is out of range for float32"),
])
def test_arrays_that_do_not_fit_the_dtype_are_errors(array, dtype, fragment):
    _raises_unchanged(InvalidArgumentError, "ragged.range: " + fragment,
                      lambda: sg.ragged.range(array, dtype=dtype), array)
    tensor = sg.constant(array)
    _raises_unchanged(InvalidArgumentError, fragment,
                      lambda: sg.ragged.range(tensor, dtype=dtype), tensor.numpy())


def test_exact_conversions_still_work():
    assert sg.ragged.range(np.array([3.0]), dtype=np.int32).to_list() == [[0, 1, 2]]
    assert sg.ragged.range(2**31 - 3, 2**31 - 1, dtype=np.int32).to_list() == \
        [[2**31 - 3, 2**31 - 2]]
    rt = sg.ragged.range(np.array([-(2**31)], np.int64), -(2**31) + 2, dtype=np.int32)
    assert rt.values.dtype == np.int32 and rt.to_list() == [[-(2**31), -(2**31) + 1]]
    # int to float rounds to the nearest float, as a cast does
    rt = sg.ragged.range(2**24 + 1, 2**24 + 2, dtype=np.float32)
    assert rt.values.dtype == np.float32 and rt.values.numpy()[0] == 2**24
    assert sg.ragged.range(np.array([np.inf]), 0.0, dtype=np.float32).to_list() == [[]]


def test_range_dtype_errors_agree_with_the_docs():
    # a dtype outside the four: TensorFlow's attr error (InvalidArgumentError)
    for dtype in (np.int8, np.int16, np.float16, np.uint32):
        with pytest.raises(InvalidArgumentError, match="Value for attr 'T' of"):
            sg.ragged.range(3, dtype=dtype)
    # no dtype and an argument of another dtype: TypeError (TF: AssertionError)
    with pytest.raises(TypeError, match="unsupported dtype int8"):
        sg.ragged.range(np.array([3], np.int8))
    # a Python float with an integer dtype: TypeError, as TensorFlow
    with pytest.raises(TypeError, match=r"Cannot convert 3\.0 to EagerTensor"):
        sg.ragged.range(3.0, dtype=np.int64)
    with pytest.raises(InvalidArgumentError, match="attr 'Tsplits' of int16"):
        sg.ragged.range(3, row_splits_dtype=np.int16)


def test_raw_ragged_range_does_not_wrap_either():
    # Python ints past int64 give uint64 or object arrays: refused
    with pytest.raises(InvalidArgumentError, match="attr 'T' of uint64"):
        sg.ragged.ragged_range(np.asarray(0, np.uint64), 2**64 - 1, np.uint64(1))
    with pytest.raises(InvalidArgumentError, match="got dtype object"):
        sg.ragged.ragged_range(0, 2**70, 1)
    splits, values = sg.ragged.ragged_range(2**40, 2**40 + 2, 1)
    assert splits.tolist() == [0, 2] and values.dtype == np.int64
    assert values.tolist() == [2**40, 2**40 + 1]


# -- allocations sized by the data ---------------------------------------------


def test_to_tensor_shape_checks():
    rt = sg.ragged.constant([[1.0, 2.0], [3.0]])
    tracemalloc.start()
    with pytest.raises(InvalidArgumentError, match="to_tensor: shape asks for"):
        rt.to_tensor(shape=(2**31, 2**31))
    with pytest.raises(InvalidArgumentError, match="to_tensor: shape asks for"):
        rt.to_tensor(shape=(None, 2**62))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1 << 20
    with pytest.raises(TypeError, match="to_tensor: shape must be an int"):
        rt.to_tensor(shape=(2.5, None))
    with pytest.raises(InvalidArgumentError, match="negative size"):
        rt.to_tensor(shape=(-1, None))
    assert rt.to_tensor(shape=(np.int64(1), None)).numpy().tolist() == [[1.0, 2.0]]


def test_reductions_check_their_output_before_allocating():
    # 2**20 rows over one wide value: a (2**20, 2**20) float64 result
    values = np.zeros((1, 2**20))
    lengths = np.zeros(2**20, np.int64)
    lengths[0] = 1
    rt = RT.from_row_lengths(values, lengths)
    rt.row_lengths()   # cached: the size of the splits, not of the result
    tracemalloc.start()
    for reduce in (sg.ragged.reduce_sum, sg.ragged.reduce_mean, sg.ragged.reduce_max):
        with pytest.raises(InvalidArgumentError, match="the rows of rt asks for"):
            reduce(rt)
    with pytest.raises(InvalidArgumentError, match="to_tensor: shape asks for"):
        rt.to_tensor()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1 << 20
    assert sg.ragged.reduce_sum(rt, axis=0).shape == (1, 2**20)


def test_validate_false_keeps_the_bounds_facts():
    rt = RT.from_row_splits(V, np.array([0, 3, 5], np.int32), validate=False)
    assert rt.to_list() == [[0.0, 1.0, 2.0], [3.0, 4.0]]
    np.testing.assert_array_equal(sg.ragged.reduce_sum(rt).numpy(), [3.0, 7.0])
    assert sg.ragged.map_flat_values(sg.negative, rt).to_list() == \
        [[-0.0, -1.0, -2.0], [-3.0, -4.0]]
    for bad in ([0, 9], [0, 5, 4], [1, 5]):
        with pytest.raises(InvalidArgumentError):
            RT.from_row_splits(V, bad, validate=False)
