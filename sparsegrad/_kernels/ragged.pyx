"""Kernels of ragged tensors: RaggedRange, and row splits to value row ids.

Design
------
The Python layer (``sparsegrad.ragged``) checks ranks, lengths and dtypes,
converts the inputs to C-contiguous arrays of one dtype, allocates every
output and raises the errors; nothing here raises or checks data.

RaggedRange runs in three steps, so that every error is known before the
values are allocated:

1. ``range_sizes`` (parallel over rows) writes each row's size, or a negative
   code: ``SIZE_ZERO_DELTA`` for ``delta == 0``, ``SIZE_TOO_LARGE`` for a
   size above the splits' maximum (NaN included).  Integer sizes are exact:
   ``ceil(|limit - start| / |delta|)`` in unsigned 64-bit arithmetic (no
   overflow, even for ``delta = -2**63``); float sizes are
   ``ceil(|(limit - start) / delta|)`` in the values' precision (float32
   math in float32; bfloat16 math in float32 rounded to bfloat16 after each
   operation, as Eigen's bfloat16 does), as TensorFlow computes them.
2. ``range_splits`` (sequential; it is O(rows) and cheap next to the fill)
   scans the sizes in row order, stops at the first row whose code is
   negative or whose size overflows the running total, and otherwise writes
   the prefix sums into the splits.  It returns the failing row, so errors
   come in TensorFlow's order (row by row).
3. ``range_fill`` (parallel over rows; one thread owns each row) emits
   ``v = start; v = v + delta`` by repeated addition in the values' dtype,
   as TensorFlow does (float32 ``range(0, 1, 0.1)`` gives ``0.70000005``;
   a bfloat16 sum is rounded to bfloat16 at each step).
   Integer additions run in unsigned arithmetic of the values' width, so the
   addition after the last emitted value wraps instead of overflowing.

``row_splits_to_rowids`` writes each value's row (parallel over rows),
never outside its output whatever the splits.

The arithmetic (a row's size and its codes, the next value of a row, the
splits' overflow test) lives in ``include/sg_ragged.h``, shared with the CUDA
kernels (``sparsegrad/_cuda/ragged.cu``); these functions keep the threads,
the chunks and the loads and stores.

bfloat16 values come as their bits (``uint16_t``, the Python layer passes
``a.view(np.uint16)``): that member of the fused type means bfloat16, never
an integer range.
Results are the same bits for any thread count: every output element is
written by the one thread that owns its row, from that row's inputs only.
"""

from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint16_t, uint32_t, uint64_t

from ._openmp cimport threads_for
from ._typedefs cimport index_t


cdef extern from "sg_ragged.h" nogil:
    const int64_t SG_RANGE_ZERO_DELTA
    const int64_t SG_RANGE_TOO_LARGE
    int64_t sg_range_size_i32(int32_t start, int32_t limit, int32_t delta,
                              uint64_t max_size) noexcept
    int64_t sg_range_size_i64(int64_t start, int64_t limit, int64_t delta,
                              uint64_t max_size) noexcept
    int64_t sg_range_size_f32(float start, float limit, float delta,
                              uint64_t max_size) noexcept
    int64_t sg_range_size_f64(double start, double limit, double delta,
                              uint64_t max_size) noexcept
    int64_t sg_range_size_bf16(uint16_t start, uint16_t limit, uint16_t delta,
                               uint64_t max_size) noexcept
    uint32_t sg_range_at_i32(int32_t start, int32_t delta, int64_t j) noexcept
    uint64_t sg_range_at_i64(int64_t start, int64_t delta, int64_t j) noexcept
    uint32_t sg_range_next_i32(uint32_t v, uint32_t d) noexcept
    uint64_t sg_range_next_i64(uint64_t v, uint64_t d) noexcept
    float sg_range_next_f32(float v, float d) noexcept
    double sg_range_next_f64(double v, double d) noexcept
    uint16_t sg_range_next_bf16(uint16_t v, uint16_t d) noexcept
    bint sg_range_total_overflows(int64_t total, int64_t size,
                                  int64_t max_total) noexcept

# uint16_t: bfloat16 values as their bits (see the module docstring).
ctypedef fused range_t:
    int32_t
    int64_t
    float
    double
    uint16_t

# Codes written by range_sizes in place of a size (sg_ragged.h's).
SIZE_ZERO_DELTA = SG_RANGE_ZERO_DELTA
SIZE_TOO_LARGE = SG_RANGE_TOO_LARGE
# Rows per chunk of the fill and size loops.  Each row is written by one
# thread from its own inputs, so the schedule changes no bit; a dynamic one
# keeps a thread that was descheduled on a busy machine from holding up the
# others at the end.
cdef enum:
    FILL_ROWS = 256
    SIZE_ROWS = 4096


cdef inline int64_t _row_size(range_t start, range_t limit, range_t delta,
                              uint64_t max_size) noexcept nogil:
    if range_t is int32_t:
        return sg_range_size_i32(start, limit, delta, max_size)
    elif range_t is int64_t:
        return sg_range_size_i64(start, limit, delta, max_size)
    elif range_t is float:
        return sg_range_size_f32(start, limit, delta, max_size)
    elif range_t is double:
        return sg_range_size_f64(start, limit, delta, max_size)
    else:
        return sg_range_size_bf16(start, limit, delta, max_size)


def range_sizes(
    const range_t[::1] starts,      # IN  (1,) or (n_rows,)
    const range_t[::1] limits,      # IN  (1,) or (n_rows,)
    const range_t[::1] deltas,      # IN  (1,) or (n_rows,)
    int64_t[::1] sizes_out,         # OUT (n_rows,) size, or a negative code
    int64_t max_size,               # the splits dtype's maximum
    int n_threads,
):
    """Row sizes of RaggedRange (a length-1 input is broadcast)."""
    cdef Py_ssize_t i, n_rows = sizes_out.shape[0]
    cdef Py_ssize_t ss = starts.shape[0] > 1
    cdef Py_ssize_t ls = limits.shape[0] > 1
    cdef Py_ssize_t ds = deltas.shape[0] > 1
    cdef uint64_t max_u = <uint64_t> max_size
    cdef int threads = threads_for(n_rows * 8, n_threads)
    for i in prange(n_rows, nogil=True, schedule="dynamic", chunksize=SIZE_ROWS,
                    num_threads=threads):
        sizes_out[i] = _row_size(starts[i * ss], limits[i * ls], deltas[i * ds], max_u)


def range_splits(
    const int64_t[::1] sizes,       # IN  (n_rows,) from range_sizes
    index_t[::1] splits_out,        # OUT (n_rows + 1,)
):
    """Prefix sums of the sizes into the splits.

    Returns
    -------
    (int, int)
        ``(-1, 0)`` when every row is valid; else the first failing row and
        its cause: a negative code of ``range_sizes``, or ``0`` for a running
        total above the splits' maximum.
    """
    cdef Py_ssize_t i, n_rows = sizes.shape[0]
    cdef int64_t max_total = 2147483647 if index_t is int32_t else 9223372036854775807
    cdef int64_t total = 0, size
    cdef Py_ssize_t bad = -1
    cdef int64_t cause = 0
    with nogil:
        splits_out[0] = 0
        for i in range(n_rows):
            size = sizes[i]
            if size < 0:
                bad = i
                cause = size
                break
            if sg_range_total_overflows(total, size, max_total):
                bad = i
                break
            total = total + size
            splits_out[i + 1] = <index_t> total
    return bad, cause


def range_fill(
    const range_t[::1] starts,      # IN  (1,) or (n_rows,)
    const range_t[::1] deltas,      # IN  (1,) or (n_rows,)
    const index_t[::1] splits,      # IN  (n_rows + 1,) from range_splits
    range_t[::1] values_out,        # OUT (splits[n_rows],)
    int n_threads,
):
    """The values of RaggedRange, by repeated addition within each row."""
    cdef Py_ssize_t c, n_rows = splits.shape[0] - 1
    cdef Py_ssize_t n_chunks = (n_rows + FILL_ROWS - 1) // FILL_ROWS
    cdef Py_ssize_t ss = starts.shape[0] > 1
    cdef Py_ssize_t ds = deltas.shape[0] > 1
    cdef int threads = threads_for(values_out.shape[0], n_threads)
    if values_out.shape[0] == 0:
        return
    for c in prange(n_chunks, nogil=True, schedule="dynamic", num_threads=threads):
        _fill_chunk(&values_out[0], &splits[0], &starts[0], &deltas[0], ss, ds,
                    c * FILL_ROWS, min((c + 1) * FILL_ROWS, n_rows))


cdef inline void _fill_chunk(
    range_t *out, const index_t *splits, const range_t *starts,
    const range_t *deltas, Py_ssize_t ss, Py_ssize_t ds, Py_ssize_t first,
    Py_ssize_t stop,
) noexcept nogil:
    # Rows first..stop-1.  An integer row is one loop the compiler
    # vectorises.  A float (or bfloat16) row is a chain of dependent
    # additions, bound by their latency (about four cycles a value), so four
    # rows run side by side, each still summed in its own order: every round
    # advances the four rows by the shortest one's remaining length, then the
    # finished rows make room for the next ones.
    cdef Py_ssize_t i
    if range_t is int32_t or range_t is int64_t:
        for i in range(first, stop):
            _fill_row(out, splits[i], splits[i + 1], starts[i * ss], deltas[i * ds])
    else:
        _fill_rows_interleaved(out, splits, starts, deltas, ss, ds, first, stop)


cdef inline void _fill_rows_interleaved(
    range_t *out, const index_t *splits, const range_t *starts,
    const range_t *deltas, Py_ssize_t ss, Py_ssize_t ds, Py_ssize_t first,
    Py_ssize_t stop,
) noexcept nogil:
    # Float rows, four side by side (see _fill_chunk).
    cdef Py_ssize_t nxt = first, k, m
    cdef Py_ssize_t p0 = 0, p1 = 0, p2 = 0, p3 = 0
    cdef Py_ssize_t e0 = 0, e1 = 0, e2 = 0, e3 = 0
    cdef range_t v0 = 0, v1 = 0, v2 = 0, v3 = 0
    cdef range_t d0 = 0, d1 = 0, d2 = 0, d3 = 0
    while True:
        # refill the finished slots with the next non-empty rows
        while p0 == e0 and nxt < stop:
            p0 = splits[nxt]
            e0 = splits[nxt + 1]
            v0 = starts[nxt * ss]
            d0 = deltas[nxt * ds]
            nxt = nxt + 1
        while p1 == e1 and nxt < stop:
            p1 = splits[nxt]
            e1 = splits[nxt + 1]
            v1 = starts[nxt * ss]
            d1 = deltas[nxt * ds]
            nxt = nxt + 1
        while p2 == e2 and nxt < stop:
            p2 = splits[nxt]
            e2 = splits[nxt + 1]
            v2 = starts[nxt * ss]
            d2 = deltas[nxt * ds]
            nxt = nxt + 1
        while p3 == e3 and nxt < stop:
            p3 = splits[nxt]
            e3 = splits[nxt + 1]
            v3 = starts[nxt * ss]
            d3 = deltas[nxt * ds]
            nxt = nxt + 1
        if p0 == e0 or p1 == e1 or p2 == e2 or p3 == e3:
            break  # the chunk's rows ran out: finish the open ones alone
        m = min(min(e0 - p0, e1 - p1), min(e2 - p2, e3 - p3))
        for k in range(m):
            out[p0 + k] = v0
            v0 = _next(v0, d0)
            out[p1 + k] = v1
            v1 = _next(v1, d1)
            out[p2 + k] = v2
            v2 = _next(v2, d2)
            out[p3 + k] = v3
            v3 = _next(v3, d3)
        p0 = p0 + m
        p1 = p1 + m
        p2 = p2 + m
        p3 = p3 + m
    _fill_row(out, p0, e0, v0, d0)
    _fill_row(out, p1, e1, v1, d1)
    _fill_row(out, p2, e2, v2, d2)
    _fill_row(out, p3, e3, v3, d3)


cdef inline range_t _next(range_t v, range_t d) noexcept nogil:
    # The value after v in a row of step d (sg_range_next; an integer wraps;
    # bfloat16 bits give the rounded sum's bits).
    if range_t is int32_t:
        return <int32_t> sg_range_next_i32(<uint32_t> v, <uint32_t> d)
    elif range_t is int64_t:
        return <int64_t> sg_range_next_i64(<uint64_t> v, <uint64_t> d)
    elif range_t is float:
        return sg_range_next_f32(v, d)
    elif range_t is double:
        return sg_range_next_f64(v, d)
    else:
        return sg_range_next_bf16(v, d)


cdef inline void _fill_row(range_t *out, Py_ssize_t lo, Py_ssize_t hi,
                           range_t start, range_t delta) noexcept nogil:
    cdef Py_ssize_t k
    cdef uint32_t u32, d32
    cdef uint64_t u64, d64
    cdef range_t v
    if range_t is int32_t:
        u32 = sg_range_at_i32(start, delta, 0)
        d32 = <uint32_t> delta
        for k in range(lo, hi):
            out[k] = <int32_t> u32
            u32 = sg_range_next_i32(u32, d32)
    elif range_t is int64_t:
        u64 = sg_range_at_i64(start, delta, 0)
        d64 = <uint64_t> delta
        for k in range(lo, hi):
            out[k] = <int64_t> u64
            u64 = sg_range_next_i64(u64, d64)
    else:
        v = start
        for k in range(lo, hi):
            out[k] = v
            v = _next(v, delta)


def row_splits_to_rowids(
    const index_t[::1] splits,      # IN  (n_rows + 1,), valid, splits[0] == 0
    index_t[::1] rowids_out,        # OUT (splits[n_rows],)
    int n_threads,
):
    """``rowids_out[k] = i`` for ``splits[i] <= k < splits[i + 1]``.

    Each row's range is clamped to ``[0, len(rowids_out))``: valid splits
    lose nothing, and splits that no factory would accept still cannot make
    the loop write outside the output.
    """
    cdef Py_ssize_t i, k, lo, hi, n_rows = splits.shape[0] - 1
    cdef Py_ssize_t n_out = rowids_out.shape[0]
    cdef int threads = threads_for(n_out, n_threads)
    for i in prange(n_rows, nogil=True, schedule="static", num_threads=threads):
        lo = max(<Py_ssize_t> splits[i], 0)
        hi = min(<Py_ssize_t> splits[i + 1], n_out)
        for k in range(lo, hi):
            rowids_out[k] = <index_t> i
