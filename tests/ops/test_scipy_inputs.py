"""The ``scipy.sparse`` inputs of every entry that takes one
(sparse_dense_matmul, embedding_lookup_sparse, safe_embedding_lookup_sparse,
RaggedTensor.from_scipy, IndexedSlices.from_scipy): the structure check where
a matrix enters (error class, message, inputs unchanged, no crash), one
meaning for every format (each stored entry counts once: repeats kept,
explicit zeros kept, stored order within a row), and the memory check of the
buffers a matrix's shape sizes."""

import copy
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError

# subprocesses start outside the source tree, whose sparsegrad is unbuilt
OUTSIDE = os.path.expanduser("~")

P = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
SHAPE = (3, 4)

# entry -> (call on a matrix, op name, argument name)
ENTRIES = {
    "embedding_lookup_sparse": (
        lambda m: sg.nn.embedding_lookup_sparse(P, m, combiner="sqrtn"),
        "embedding_lookup_sparse", "sp_ids"),
    "safe_embedding_lookup_sparse": (
        lambda m: sg.nn.safe_embedding_lookup_sparse(P, m, combiner="sqrtn"),
        "safe_embedding_lookup_sparse", "sparse_ids"),
    "sparse_dense_matmul": (
        lambda m: sg.sparse.sparse_dense_matmul(m, P),
        "sparse_dense_matmul", "sp_a"),
    "RaggedTensor.from_scipy": (
        sg.RaggedTensor.from_scipy, "RaggedTensor.from_scipy", "matrix"),
    "IndexedSlices.from_scipy": (
        sg.IndexedSlices.from_scipy, "IndexedSlices.from_scipy", "matrix"),
}


# -- malformed matrices -------------------------------------------------------------


def _csr(**replace):
    m = sp.csr_array(([1.0, 2.0, 3.0], [0, 1, 2], [0, 2, 3, 3]), shape=SHAPE)
    for name, value in replace.items():
        setattr(m, name, np.asarray(value))
    return m


def _csc(**replace):
    m = sp.csc_array(([1.0, 2.0, 3.0], [0, 1, 2], [0, 2, 3, 3, 3]), shape=SHAPE)
    for name, value in replace.items():
        setattr(m, name, np.asarray(value))
    return m


def _coo(**replace):
    m = sp.coo_array(([1.0, 2.0], ([0, 1], [1, 2])), shape=SHAPE)
    for name, value in replace.items():
        setattr(m, name, np.asarray(value))
    return m


def _bsr_bad_block_column():
    m = sp.bsr_array(np.arange(12.0).reshape(SHAPE), blocksize=(1, 2))
    m.indices[0] = 2            # 2 block columns: [0, 2)
    return m


def _lil(rows=None, data=None):
    m = sp.lil_array(np.array([[1.0, 0, 2, 0], [0, 0, 0, 0], [0, 3, 0, 0]]))
    if rows is not None:
        m.rows[rows[0]] = rows[1]
    if data is not None:
        m.data[data[0]] = data[1]
    return m


def _dok_outside():
    m = sp.dok_array(SHAPE)
    m[0, 1] = 1.0
    store = getattr(m, "_dict", m)      # the dict behind the matrix
    dict.__setitem__(store, (5, 0), 2.0)
    return m


def _dia_bad_offsets():
    m = sp.dia_array((np.ones((1, 4)), [0]), shape=SHAPE)
    m.offsets = np.array([0, 1])
    return m


# name -> (build, message after "<op>: ", {n} standing for the argument)
MALFORMED = {
    "csr data shorter": (lambda: _csr(data=[1.0, 2.0]),
                         "{n}.indices has 3 entries but {n}.data 2"),
    "csr indptr short": (lambda: _csr(indptr=[0, 2, 3]),
                         "{n}.indptr must have shape[0] + 1 = 4 entries, got 3"),
    "csr indptr from 1": (lambda: _csr(indptr=[1, 2, 3, 3]),
                          "{n}.indptr must start at 0, got indptr[0] = 1"),
    "csr indptr decreasing": (lambda: _csr(indptr=[0, 2, 1, 3]),
                              "{n}.indptr must be non-decreasing, got indptr[2] = 1 "
                              "< indptr[1] = 2"),
    "csr indptr past the entries": (lambda: _csr(indptr=[0, 2, 3, 5]),
                                    "{n}.indptr ends at 5, past the 3 entries of "
                                    "{n}.indices and {n}.data"),
    "csr column too large": (lambda: _csr(indices=[0, 1, 9]),
                             "{n}.indices[2] = 9 is not in [0, 4)"),
    "csr negative column": (lambda: _csr(indices=[0, -1, 2]),
                            "{n}.indices[1] = -1 is not in [0, 4)"),
    "csr float indices": (lambda: _csr(indices=[0.0, 1.0, 2.0]),
                          "{n}.indices must be int32 or int64, got dtype float64"),
    "csc row too large": (lambda: _csc(indices=[0, 7, 2]),
                          "{n}.indices[1] = 7 is not in [0, 3)"),
    "csc indptr short": (lambda: _csc(indptr=[0, 2, 3, 3]),
                         "{n}.indptr must have shape[1] + 1 = 5 entries, got 4"),
    "coo row too large": (lambda: _coo(row=[0, 5]), "{n}.row[1] = 5 is not in [0, 3)"),
    "coo negative column": (lambda: _coo(col=[-2, 2]),
                            "{n}.col[0] = -2 is not in [0, 4)"),
    "coo data shorter": (lambda: _coo(data=[1.0]),
                         "{n}.row has 2 entries but {n}.col 2, {n}.data 1"),
    "bsr block column": (_bsr_bad_block_column, "{n}.indices[0] = 2 is not in [0, 2)"),
    "lil lengths differ": (lambda: _lil(rows=(0, [0, 1, 2])),
                           "{n}: row 0 holds 3 columns and 2 values"),
    "lil column too large": (lambda: _lil(rows=(2, [9])),
                             "{n}.rows[2] holds the column 9, which is not in [0, 4)"),
    "dok key outside": (_dok_outside, "{n} holds the key (5, 0), outside its shape"),
    "dia offsets": (_dia_bad_offsets, "{n}.data holds 1 diagonals but {n}.offsets 2"),
    "complex values": (lambda: sp.csr_array(np.ones(SHAPE) * 1j),
                       "{n} has dtype complex128; only real dtypes are supported"),
    "1-D": (lambda: sp.coo_array(np.ones(4)), "{n} must be 2-D, got shape (4,)"),
}


def _snapshot(m):
    """Deep copies of everything a matrix holds."""
    state = {}
    for name in ("indptr", "indices", "data", "row", "col", "offsets", "rows"):
        if hasattr(m, name):
            state[name] = copy.deepcopy(np.asarray(getattr(m, name)))
    if m.format == "dok":
        state["items"] = sorted(m.items())
    state["shape"] = m.shape
    return state


def _assert_same(before, after):
    assert before.keys() == after.keys()
    for name, value in before.items():
        if isinstance(value, np.ndarray) and value.dtype != object:
            assert value.dtype == after[name].dtype, name
            np.testing.assert_array_equal(value, after[name], err_msg=name)
        elif isinstance(value, np.ndarray):
            assert value.tolist() == after[name].tolist(), name
        else:
            assert value == after[name], name


@pytest.mark.parametrize("malformed", list(MALFORMED))
@pytest.mark.parametrize("entry", list(ENTRIES))
def test_a_malformed_matrix_is_refused_where_it_enters(entry, malformed):
    call, op, arg = ENTRIES[entry]
    build, message = MALFORMED[malformed]
    m = build()
    before = _snapshot(m)
    expected = f"{op}: " + message.format(n=arg)
    with pytest.raises(InvalidArgumentError, match=re.escape(expected)):
        call(m)
    _assert_same(before, _snapshot(m))


def test_no_malformed_matrix_crashes_an_entry():
    # Each malformation through each entry in a fresh process: every call
    # raises InvalidArgumentError, and the process ends normally.
    script = textwrap.dedent(f"""
        import importlib.util
        spec = importlib.util.spec_from_file_location("cases", {__file__!r})
        t = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(t)
        from sparsegrad.errors import InvalidArgumentError
        for entry, (call, _, _) in t.ENTRIES.items():
            for name, (build, _) in t.MALFORMED.items():
                try:
                    call(build())
                except InvalidArgumentError:
                    continue
                raise SystemExit(f"{{entry}} accepted {{name}}")
        print("all refused")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True,
                          text=True, timeout=300,
                          cwd=OUTSIDE)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "all refused"


def test_type_errors_name_the_argument():
    with pytest.raises(TypeError, match=r"sp_a must be a scipy\.sparse"):
        sg.sparse.sparse_dense_matmul(np.ones(SHAPE), P)
    with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
        sg.nn.embedding_lookup_sparse(P, np.ones(SHAPE))
    with pytest.raises(TypeError, match=r"scipy\.sparse"):
        sg.RaggedTensor.from_scipy(np.ones(SHAPE))
    with pytest.raises(TypeError, match=r"scipy\.sparse"):
        sg.IndexedSlices.from_scipy(np.ones(SHAPE))


# -- one meaning for every format -------------------------------------------------
#
# The entries of one matrix, in stored order: a repeated entry (0, 3), an
# explicit zero (1, 0), unsorted columns in rows 0 and 2, a negative value.
ENTRIES_RCV = [(0, 3, 1.0), (0, 1, 2.0), (0, 3, 1.0), (1, 0, 0.0), (2, 2, 3.0),
               (2, 0, -1.0)]


def _by_row():
    """CSR arrays of ENTRIES_RCV (stored order kept within a row)."""
    rows = np.array([r for r, _, _ in ENTRIES_RCV])
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=3))])
    return (np.array([v for *_, v in ENTRIES_RCV]),
            np.array([c for _, c, _ in ENTRIES_RCV]), indptr)


def _by_column():
    """CSC arrays of ENTRIES_RCV (stored order kept within a column)."""
    order = sorted(range(len(ENTRIES_RCV)), key=lambda k: ENTRIES_RCV[k][1])
    entries = [ENTRIES_RCV[k] for k in order]
    cols = np.array([c for _, c, _ in entries])
    indptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=4))])
    return (np.array([v for *_, v in entries]),
            np.array([r for r, _, _ in entries]), indptr)


def _coo_of(kind):
    rows, cols, values = zip(*ENTRIES_RCV)
    return kind((np.array(values), (np.array(rows), np.array(cols))), shape=SHAPE)


REPEATS = {
    "csr_array": lambda: sp.csr_array(_by_row(), shape=SHAPE),
    "csr_matrix": lambda: sp.csr_matrix(_by_row(), shape=SHAPE),
    "coo_array": lambda: _coo_of(sp.coo_array),
    "coo_matrix": lambda: _coo_of(sp.coo_matrix),
    "csc_array": lambda: sp.csc_array(_by_column(), shape=SHAPE),
    "csc_matrix": lambda: sp.csc_matrix(_by_column(), shape=SHAPE),
    "bsr_array": lambda: sp.bsr_array(
        (_by_row()[0].reshape(-1, 1, 1),) + _by_row()[1:], shape=SHAPE),
}

# Row by row, the (column, value) of each entry as the format stores it: a
# CSC row comes by column (its stored order within a column kept).
ROW_ORDER = [[(3, 1.0), (1, 2.0), (3, 1.0)], [(0, 0.0)], [(2, 3.0), (0, -1.0)]]
COLUMN_ORDER = [[(1, 2.0), (3, 1.0), (3, 1.0)], [(0, 0.0)], [(0, -1.0), (2, 3.0)]]


def _rows_of(fmt):
    return COLUMN_ORDER if fmt.startswith("csc") else ROW_ORDER


def _bags(rows, combiner):
    """NumPy reference of the bags: every entry an id with its weight."""
    out = np.zeros((len(rows), P.shape[1]))
    for r, entries in enumerate(rows):
        if not entries:
            continue
        total = sum(w * P[c] for c, w in entries)
        w = np.array([w for _, w in entries])
        denom = {"sum": 1.0, "mean": w.sum(), "sqrtn": np.sqrt((w**2).sum())}[combiner]
        out[r] = total / denom if denom != 0 else 0.0
    return out


@pytest.mark.parametrize("fmt", list(REPEATS))
@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_bags_count_every_stored_entry_in_every_format(fmt, combiner):
    m = REPEATS[fmt]()
    before = _snapshot(m)
    out = sg.nn.embedding_lookup_sparse(P, m, combiner=combiner).numpy()
    np.testing.assert_allclose(out, _bags(_rows_of(fmt), combiner), rtol=1e-14)
    # the same numbers from every format
    ref = sg.nn.embedding_lookup_sparse(P, REPEATS["csr_array"](), combiner=combiner)
    np.testing.assert_allclose(out, ref.numpy(), rtol=1e-14)
    # safe: weights <= 0 dropped (not "sum"), row 1 left empty gives zeros
    safe = sg.nn.safe_embedding_lookup_sparse(P, m, combiner=combiner).numpy()
    kept = [[(c, w) for c, w in row if combiner == "sum" or w > 0]
            for row in _rows_of(fmt)]
    np.testing.assert_allclose(safe, _bags(kept, combiner), rtol=1e-14)
    _assert_same(before, _snapshot(m))


def test_repeated_entries_are_not_summed_first():
    # the example of the issue: the id 2 twice in one bag; SciPy's tocsr()
    # would make it one entry of weight 2 (sqrtn [[0, 0, 1]])
    table = np.eye(3)
    coo = sp.coo_array(([1.0, 1.0], ([0, 0], [2, 2])), shape=(1, 3))
    csr = sp.csr_array(([1.0, 1.0], [2, 2], [0, 2]), shape=(1, 3))
    want = [[0.0, 0.0, np.sqrt(2.0)]]
    for m in (coo, csr, sp.csc_array(([1.0, 1.0], [0, 0], [0, 0, 0, 2]),
                                     shape=(1, 3))):
        got = sg.nn.embedding_lookup_sparse(table, m, combiner="sqrtn").numpy()
        np.testing.assert_allclose(got, want, rtol=1e-15)
    summed = sg.nn.embedding_lookup_sparse(table, coo.tocsr(), combiner="sqrtn")
    np.testing.assert_allclose(summed.numpy(), [[0.0, 0.0, 1.0]])


@pytest.mark.parametrize("fmt", list(REPEATS))
def test_other_entries_agree_in_every_format(fmt):
    m = REPEATS[fmt]()
    before = _snapshot(m)
    dense = sp.coo_array(_coo_of(sp.coo_array)).toarray()   # repeats summed
    np.testing.assert_allclose(sg.sparse.sparse_dense_matmul(m, P).numpy(),
                               dense @ P, rtol=1e-14)
    s = sg.IndexedSlices.from_scipy(m)
    np.testing.assert_array_equal(s.indices.numpy(), [0, 1, 2])   # explicit zero
    np.testing.assert_array_equal(s.values.numpy(), dense)
    rows = _rows_of(fmt)
    rt = sg.RaggedTensor.from_scipy(m)
    assert rt.to_list() == [[v for _, v in row] for row in rows]
    ids = sg.RaggedTensor.from_scipy(m, values="indices")
    assert ids.to_list() == [[c for c, _ in row] for row in rows]
    _assert_same(before, _snapshot(m))


CANONICAL = np.array([[0.0, 2.0, 0.0, 1.5], [0.0, 0.0, 0.0, 0.0],
                      [-1.0, 0.0, 3.0, 0.0]])
FORMATS = ["csr", "csc", "coo", "bsr", "dok", "lil", "dia"]


@pytest.mark.parametrize("kind", ["array", "matrix"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_gives_what_the_csr_gives(fmt, kind):
    make = getattr(sp, f"{fmt}_{kind}")
    m = make(CANONICAL)
    before = _snapshot(m)
    csr = sp.csr_array(CANONICAL)
    for combiner in ("sum", "mean", "sqrtn"):
        np.testing.assert_array_equal(
            sg.nn.embedding_lookup_sparse(P, m, combiner=combiner).numpy(),
            sg.nn.embedding_lookup_sparse(P, csr, combiner=combiner).numpy())
        np.testing.assert_array_equal(
            sg.nn.safe_embedding_lookup_sparse(P, m, combiner=combiner,
                                               default_id=3).numpy(),
            sg.nn.safe_embedding_lookup_sparse(P, csr, combiner=combiner,
                                               default_id=3).numpy())
    np.testing.assert_array_equal(sg.sparse.sparse_dense_matmul(m, P).numpy(),
                                  CANONICAL @ P)
    assert sg.RaggedTensor.from_scipy(m).to_list() == [[2.0, 1.5], [], [-1.0, 3.0]]
    np.testing.assert_array_equal(sg.IndexedSlices.from_scipy(m).to_dense().numpy(),
                                  CANONICAL)
    _assert_same(before, _snapshot(m))


def test_an_unsorted_csr_is_not_sorted_in_place():
    m = sp.csr_array(([1.0, 2.0, 3.0], [3, 0, 0], [0, 3, 3, 3]), shape=SHAPE)
    before = _snapshot(m)
    s = sg.IndexedSlices.from_scipy(m)
    np.testing.assert_array_equal(s.values.numpy(), [[5.0, 0.0, 0.0, 1.0]])
    sg.sparse.sparse_dense_matmul(m, P, adjoint_b=False)
    sg.nn.embedding_lookup_sparse(P, m)
    _assert_same(before, _snapshot(m))


def test_a_csr_with_longer_arrays_reads_indptr_entries():
    # SciPy's own rule: indices and data may run past indptr[-1]
    m = sp.csr_array(([1.0, 2.0], [1, 2], [0, 1, 2, 2]), shape=SHAPE)
    m.indices = np.array([1, 2, 3, 3])
    m.data = np.array([1.0, 2.0, 9.0, 9.0])
    out = sg.nn.embedding_lookup_sparse(P, m, combiner="sum").numpy()
    np.testing.assert_array_equal(out, [[3.0, 4.0], [10.0, 12.0], [0.0, 0.0]])
    assert sg.RaggedTensor.from_scipy(m).to_list() == [[1.0], [2.0], []]


# -- buffers sized by the shape ---------------------------------------------------


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_a_huge_shape_with_one_entry_is_refused_before_allocating(entry):
    call, op, _ = ENTRIES[entry]
    shape = (2, 2**45) if entry == "IndexedSlices.from_scipy" else (2**45, 4)
    m = sp.coo_array(([1.0], ([0], [0])), shape=shape)
    with pytest.raises(InvalidArgumentError, match=re.escape(f"{op}: ") + ".*asks for"):
        call(m)


def test_a_huge_table_row_times_rows_is_refused():
    # 2**17 bags of 2**20 floats: 1 TiB of output from a 1 MiB matrix
    m = sp.csr_array(([1.0], [0], [0] + [1] * 2**17), shape=(2**17, 2))
    with pytest.raises(InvalidArgumentError,
                       match=r"embedding_lookup_sparse: the output of 131072 bags "
                             r"asks for a result of shape \(131072, 1048576\)"):
        sg.nn.embedding_lookup_sparse(np.broadcast_to(1.0, (4, 2**20)), m)
