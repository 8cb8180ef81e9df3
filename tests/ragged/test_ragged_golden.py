"""RaggedRange against TensorFlow 2.21: the random cases of
tests/ragged/data/ragged_golden.npz (made by generate_ragged_fixtures.py,
whose docstring describes the layout), replayed bit for bit, and the golden
tables of reference/ragged.md sections 1.4 and 5.2."""

import os

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError

PATH = os.path.join(os.path.dirname(__file__), "data", "ragged_golden.npz")
DATA = np.load(PATH)
CASES = [str(c) for c in DATA["__cases__"]]


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8)


def test_the_fixture_covers_every_dtype_pair():
    pairs = {(DATA[f"{c}_starts"].dtype.name, str(DATA[f"{c}_tsplits"])) for c in CASES}
    assert pairs == {
        (t, s)
        for t in ("int32", "int64", "float32", "float64")
        for s in ("int32", "int64")
    }
    assert any(DATA[f"{c}_deltas"].ndim == 0 for c in CASES)
    assert any((DATA[f"{c}_deltas"] < 0).any() for c in CASES)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("n_threads", [1, 3])
def test_fixture_case_bit_for_bit(case, n_threads):
    starts = DATA[f"{case}_starts"]
    limits = DATA[f"{case}_limits"]
    deltas = DATA[f"{case}_deltas"]
    tsplits = str(DATA[f"{case}_tsplits"])
    old = sg.get_num_threads()
    sg.set_num_threads(n_threads)
    try:
        splits, values = sg.ragged.ragged_range(starts, limits, deltas, Tsplits=tsplits)
    finally:
        sg.set_num_threads(old)
    want_splits = DATA[f"{case}_splits"]
    want_values = DATA[f"{case}_values"]
    assert splits.dtype == want_splits.dtype
    assert values.dtype == want_values.dtype
    np.testing.assert_array_equal(splits, want_splits)
    assert _bits(values).tobytes() == _bits(want_values).tobytes()


# -- reference section 1.4 -----------------------------------------------------------

R = sg.ragged.range
GOLDEN = [
    (lambda: R([3, 5, 2]), [[0, 1, 2], [0, 1, 2, 3, 4], [0, 1]]),
    (lambda: R([0, 5, 8], [3, 3, 12]), [[0, 1, 2], [], [8, 9, 10, 11]]),
    (lambda: R([0, 5, 8], [3, 3, 12], 2), [[0, 2], [], [8, 10]]),
    (lambda: R([0, 3, 5]), [[], [0, 1, 2], [0, 1, 2, 3, 4]]),
    (lambda: R([0, 3, 5], [2, 3, 10]), [[0, 1], [], [5, 6, 7, 8, 9]]),
    (lambda: R([0, 3, 5], [4, 4, 15], [2, 3, 4]), [[0, 2], [3], [5, 9, 13]]),
    (lambda: R([0, 3, 5], limits=0, deltas=-1), [[], [3, 2, 1], [5, 4, 3, 2, 1]]),
    (
        lambda: R([0, -3, 5], limits=0, deltas=[-1, 1, -2]),
        [[], [-3, -2, -1], [5, 3, 1]],
    ),
    (lambda: R([0, 3, 5], [4, 4, 15], 3), [[0, 3], [3], [5, 8, 11, 14]]),
    (lambda: R(0, 5, 1), [[0, 1, 2, 3, 4]]),
    (lambda: R([0, 5, 3], [0, 3, 5]), [[], [], [3, 4]]),
    (lambda: R([0, 5, 5], [0, 3, 5], -1), [[], [5, 4], []]),
    (lambda: R(10, 0, -3), [[10, 7, 4, 1]]),
    (lambda: R(1136033460, -2110457150, -1849827689), [[1136033460, -713794229]]),
    (
        lambda: R(np.int64(-(2**63)), np.int64(2**63 - 1), np.int64(2**62)),
        [[-(2**63), -(2**62), 0, 2**62]],
    ),
    (
        lambda: R(np.int32(-(2**31)), np.int32(2**31 - 1), np.int32(2**31 - 1)),
        [[-2147483648, -1, 2147483646]],
    ),
    (
        lambda: R(
            np.array([5], np.int32),
            np.array([-(2**31)], np.int32),
            np.array([-(2**31)], np.int32),
        ),
        [[5, -2147483643]],
    ),
    (lambda: R(0.0, 1.0, np.inf), [[]]),
]


@pytest.mark.parametrize("k", range(len(GOLDEN)))
def test_golden_range(k):
    make, want = GOLDEN[k]
    rt = make()
    assert rt.to_list() == want
    assert rt.row_splits.dtype == np.int64
    assert rt.shape == (len(want), None)


def test_golden_dtypes():
    rt = R([3, 5, 2])
    assert rt.dtype == np.int32
    np.testing.assert_array_equal(rt.row_splits, [0, 3, 8, 10])
    assert R([0, 1], [2.5, 3.5]).to_list() == [[0, 1, 2], [1, 2, 3]]
    assert R([0, 1], [2.5, 3.5]).dtype == np.float32
    # Python floats with a float64 tensor: float32 first, then float64.
    rt = R(np.float64(0.0), 1.0, 0.1)
    assert rt.dtype == np.float64
    assert rt.values.numpy()[1] == 0.10000000149011612


def test_golden_float_accumulation():
    rt = R([0.0, 3.0, 5.0], [3.9, 4.0, 15.0], [0.4, 1.5, 2.2])
    np.testing.assert_allclose(
        np.concatenate([np.asarray(r) for r in rt.numpy()]),
        [
            0,
            0.4,
            0.8,
            1.2,
            1.6,
            2.0,
            2.4,
            2.8,
            3.2,
            3.6,
            3.0,
            5.0,
            7.2,
            9.4,
            11.6,
            13.8,
        ],
        rtol=1e-6,
    )
    assert rt.values.numpy()[9] == np.float32(3.6000004)
    assert rt.row_lengths().tolist() == [10, 1, 5]
    got = R(0.0, 1.0, 0.1).values.numpy().astype(np.float64).tolist()
    assert got == [
        0.0,
        0.10000000149011612,
        0.20000000298023224,
        0.30000001192092896,
        0.4000000059604645,
        0.5,
        0.6000000238418579,
        0.7000000476837158,
        0.8000000715255737,
        0.9000000953674316,
    ]
    # The reference prints [1.0, 0.7, 0.39999998, 0.09999996]; TF 2.21's exact
    # float32 values are these.
    got = R(1.0, 0.0, -0.3).values.numpy().astype(np.float64).tolist()
    assert got == [1.0, 0.699999988079071, 0.3999999761581421, 0.09999996423721313]
    assert R(0.0, 0.3, 0.1).row_lengths().tolist() == [3]


def test_golden_shapes():
    assert R(0, 0, 1).shape == (1, None)
    assert R([1, 2, 3]).shape == (3, None)
    assert R([1, 2, 3], [4, 5, 6]).shape == (3, None)


MAX64 = "9223372036854775807"
MAX32 = "2147483647"
OVERFLOW = (
    "The total range size overflowed. Consider using int64 instead of int32 "
    "for row_splits_dtype."
)
ERRORS = [
    (lambda: R([[0]], 5), "starts must be a scalar or vector"),
    (lambda: R(0, [[5]]), "limits must be a scalar or vector"),
    (lambda: R(0, 5, [[0]]), "deltas must be a scalar or vector"),
    (lambda: R([0], [1, 2]), "starts, limits, and deltas must have the same shape"),
    (lambda: R(0, 0, 0), "Requires delta != 0"),
    (lambda: R(0.1, 1e10, 1e-10), f"Requires ((limit - start) / delta) <= {MAX64}"),
    (
        lambda: sg.ragged.ragged_range(
            np.array([0, 0], np.int32),
            np.array([2**31 - 1, 1], np.int32),
            np.array([1, 1], np.int32),
            Tsplits=np.int32,
        ),
        OVERFLOW,
    ),
    (
        lambda: sg.ragged.ragged_range(
            np.array([-(2**31)], np.int32),
            np.array([2**31 - 1], np.int32),
            np.array([1], np.int32),
            Tsplits=np.int32,
        ),
        f"Requires ((limit - start) / delta) <= {MAX32}",
    ),
    (
        lambda: sg.ragged.ragged_range(
            np.array([0], np.float32),
            np.array([3e9], np.float32),
            np.array([1], np.float32),
            Tsplits=np.int32,
        ),
        f"Requires ((limit - start) / delta) <= {MAX32}",
    ),
    (
        lambda: sg.ragged.ragged_range(
            np.zeros(3, np.int64), np.int64(2**62), np.int64(1)
        ),
        OVERFLOW,
    ),
    (lambda: R(0.0, np.inf, 1.0), f"Requires ((limit - start) / delta) <= {MAX64}"),
    (lambda: R(np.nan, 1.0, 1.0), f"Requires ((limit - start) / delta) <= {MAX64}"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_golden_errors(k):
    call, message = ERRORS[k]
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert str(info.value) == message


# -- reference section 5.2 -----------------------------------------------------------

V = [3, 1, 4, 1, 5, 9, 2, 6]
ROWS = [[3, 1, 4, 1], [], [5, 9, 2], [6], []]


def test_golden_factories():
    a = sg.RaggedTensor.from_row_splits(V, [0, 4, 4, 7, 8, 8])
    b = sg.RaggedTensor.from_row_lengths(V, [4, 0, 3, 1, 0])
    c = sg.RaggedTensor.from_value_rowids(V, [0, 0, 0, 0, 2, 2, 2, 3], nrows=5)
    for rt in (a, b, c):
        assert rt.to_list() == ROWS
        assert rt.row_splits.dtype == np.int64
        np.testing.assert_array_equal(rt.row_splits, [0, 4, 4, 7, 8, 8])
        np.testing.assert_array_equal(rt.row_lengths(), [4, 0, 3, 1, 0])
        np.testing.assert_array_equal(rt.value_rowids(), [0, 0, 0, 0, 2, 2, 2, 3])
        np.testing.assert_array_equal(rt.row_starts(), [0, 4, 4, 7, 8])
        np.testing.assert_array_equal(rt.row_limits(), [4, 4, 7, 8, 8])
        assert rt.nrows() == 5
    d = sg.RaggedTensor.from_value_rowids(V, [0, 0, 0, 0, 2, 2, 2, 3])
    assert d.to_list() == ROWS[:4]
    assert sg.RaggedTensor.from_value_rowids([], []).to_list() == []
    assert sg.RaggedTensor.from_value_rowids([], [], nrows=3).to_list() == [[], [], []]
    t = sg.RaggedTensor.from_row_splits(V, [0, 4, 7], validate=False)
    assert t.to_list() == [[3, 1, 4, 1], [5, 9, 2]]


FACTORY_ERRORS = [
    (
        lambda: sg.RaggedTensor.from_row_splits(V, []),
        InvalidArgumentError,
        "row_splits tensor may not be empty.",
    ),
    (
        lambda: sg.RaggedTensor.from_row_splits(V, [0.0, 8.0]),
        InvalidArgumentError,
        "row_splits must have dtype int32 or int64",
    ),
    (
        lambda: sg.RaggedTensor.from_row_splits(V, [[0, 8]]),
        InvalidArgumentError,
        "Shape (1, 2) must have rank 1",
    ),
    (
        lambda: sg.RaggedTensor.from_row_splits(V, [1, 4, 8]),
        InvalidArgumentError,
        "Arguments to from_row_splits do not form a valid RaggedTensor:zero",
    ),
    (
        lambda: sg.RaggedTensor.from_row_splits(V, [0, 5, 4, 8]),
        InvalidArgumentError,
        "Arguments to from_row_splits do not form a valid RaggedTensor:monotonic",
    ),
    (
        lambda: sg.RaggedTensor.from_row_splits(V, [0, 4, 7]),
        InvalidArgumentError,
        "Arguments to _from_row_partition do not form a valid RaggedTensor",
    ),
    (
        lambda: sg.RaggedTensor.from_row_lengths(V, [4, -1, 5]),
        InvalidArgumentError,
        "Arguments to from_row_lengths do not form a valid RowPartition",
    ),
    (
        lambda: sg.RaggedTensor.from_row_lengths(V, [4, 3]),
        InvalidArgumentError,
        "Arguments to _from_row_partition do not form a valid RaggedTensor",
    ),
    (
        lambda: sg.RaggedTensor.from_value_rowids(V, [0] * 8, nrows=-1),
        ValueError,
        "Expected nrows >= 0; got -1",
    ),
    (
        lambda: sg.RaggedTensor.from_value_rowids(V, [0, 0, 0, 0, 2, 2, 2, 3], nrows=3),
        ValueError,
        "Expected nrows >= value_rowids[-1] + 1; got nrows=3, value_rowids[-1]=3",
    ),
    (
        lambda: sg.RaggedTensor.from_value_rowids(V, [0, 1, 2]),
        ValueError,
        "Shapes (8,) and (3,) are incompatible",
    ),
    (
        lambda: sg.RaggedTensor.from_value_rowids(V, [-1, 0, 0, 0, 2, 2, 2, 3]),
        InvalidArgumentError,
        "Arguments to from_value_rowids do not form a valid RowPartition",
    ),
    (
        lambda: sg.RaggedTensor.from_value_rowids(V, [0, 0, 1, 0, 2, 2, 2, 3]),
        InvalidArgumentError,
        "Arguments to from_value_rowids do not form a valid RowPartition",
    ),
]


@pytest.mark.parametrize("k", range(len(FACTORY_ERRORS)))
def test_golden_factory_errors(k):
    call, cls, message = FACTORY_ERRORS[k]
    with pytest.raises(cls) as info:
        call()
    # TensorFlow's message first; sparsegrad may add the argument and value
    assert str(info.value).startswith(message)
