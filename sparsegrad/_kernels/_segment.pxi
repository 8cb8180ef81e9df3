# The segment reductions: included by segment.pyx and segment_avx2.pyx
# (see segment.pyx for the design).

from cython cimport floating
from cython.parallel cimport prange
from libc.stdint cimport INT64_MIN, int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from ._openmp cimport threads_for
from ._typedefs cimport index_t


def sorted_splits(
    const index_t[::1] ids,         # IN  (n,), meant to be sorted
    int64_t[::1] splits_out,        # OUT (n_segments + 1,)
    int n_threads,
):
    """Row splits of sorted segment ids.

    Returns -1 when the ids never decrease, else the first position ``i`` with
    ``ids[i] < ids[i - 1]`` (then ``splits_out`` holds no meaning).  Ids
    outside ``[0, n_segments)`` are not reported (the caller checks the
    first and last id); the entries they would write are skipped.
    """
    cdef Py_ssize_t n = ids.shape[0]
    cdef int64_t n_segments = splits_out.shape[0] - 1
    cdef int n_parts = threads_for(n, n_threads)
    cdef Py_ssize_t c, lo, hi, i, first_bad = -1
    cdef int64_t a, b, s
    cdef Py_ssize_t *bad = <Py_ssize_t *> malloc(n_parts * sizeof(Py_ssize_t))
    if bad == NULL:
        raise MemoryError()
    try:
        for c in prange(n_parts, nogil=True, schedule="static", num_threads=n_parts):
            lo = c * (n + 1) // n_parts
            hi = (c + 1) * (n + 1) // n_parts
            bad[c] = -1
            for i in range(lo, hi):
                # The boundary before position i: ids a (left) and b (right);
                # the smallest int64 before the first id, n_segments after
                # the last.
                a = ids[i - 1] if i > 0 else INT64_MIN
                b = ids[i] if i < n else n_segments
                if b < a:
                    if bad[c] < 0 and i < n:
                        bad[c] = i
                elif b > a:
                    s = a + 1 if a + 1 > 0 else 0
                    while s <= b and s <= n_segments:
                        splits_out[s] = i
                        s = s + 1
        for c in range(n_parts):
            if bad[c] >= 0:
                first_bad = bad[c]
                break
    finally:
        free(bad)
    return first_bad


# Values per block of the sorted reductions (a block's rows start the
# segments one thread reduces).
cdef Py_ssize_t BLOCK_VALUES = 1 << 16
# Segments per prange block of segment_reduce_splits.
cdef Py_ssize_t SPLIT_SEGMENTS = 1 << 10

# Every thread of scatter_reduce walks all the ids (and the hardware pulls
# neighbouring rows of data it skips): with two or three threads that costs
# more than it saves (measured: 1 thread 21 ms, 2 threads 40-120 ms for 10M
# random ids of 1-D float32 data on a 2-vCPU machine, and 2 threads slower
# at every row width up to 16), so fewer threads than this run it serially.
cdef int MIN_SCATTER_THREADS = 4

cdef extern from "sg_segment.h":
    # Reduction codes (sg_segment.h), shared with sparsegrad.ops.segment_ops.
    enum:
        OP_SUM "SG_SEG_SUM"
        OP_MEAN "SG_SEG_MEAN"
        OP_MAX "SG_SEG_MAX"
        OP_MIN "SG_SEG_MIN"
        OP_PROD "SG_SEG_PROD"
    float sg_seg_max_f32(float acc, float v) noexcept nogil
    double sg_seg_max_f64(double acc, double v) noexcept nogil
    float sg_seg_min_f32(float acc, float v) noexcept nogil
    double sg_seg_min_f64(double acc, double v) noexcept nogil
    float sg_seg_prod_f32(float acc, float v) noexcept nogil
    double sg_seg_prod_f64(double acc, double v) noexcept nogil
    float sg_seg_sum_contiguous_f32(const float *x, int64_t n) noexcept nogil
    double sg_seg_sum_contiguous_f64(const double *x, int64_t n) noexcept nogil
    float sg_seg_mean_f32(float total, int64_t count) noexcept nogil
    double sg_seg_mean_f64(double total, int64_t count) noexcept nogil
    float sg_seg_with_fill_f32(int op, float v, float fill) noexcept nogil
    double sg_seg_with_fill_f64(int op, double v, double fill) noexcept nogil

cdef extern from "sg_segment_rows.h":
    # Sums of rows with few branches (the bits of sg_seg_sum_contiguous;
    # -0.0 for an empty row), reading ROW_READ(n) values from the row's start.
    Py_ssize_t ROW_READ "SG_SEG_ROW_READ"(Py_ssize_t n) noexcept nogil
    float sg_seg_sum_rows_f32(const float *x, int64_t n) noexcept nogil
    double sg_seg_sum_rows_f64(const double *x, int64_t n) noexcept nogil
    # o[0..n) += x[0..n), masked blocks for short rows under AVX2.
    void sg_seg_add_row_f32(float *o, const float *x, int64_t n) noexcept nogil
    void sg_seg_add_row_f64(double *o, const double *x, int64_t n) noexcept nogil
    # The ragged segment sums of 1-D values for segments [lo, hi).
    void sg_seg_ragged_sum_f32(const float *x, int64_t nx, const void *splits,
                               int wide,
                               const int64_t *seg, const int64_t *out_splits,
                               int64_t lo, int64_t hi, float fill,
                               float *out) noexcept nogil
    void sg_seg_ragged_sum_f64(const double *x, int64_t nx, const void *splits,
                               int wide,
                               const int64_t *seg, const int64_t *out_splits,
                               int64_t lo, int64_t hi, double fill,
                               double *out) noexcept nogil

SUM = OP_SUM
MEAN = OP_MEAN
MAX = OP_MAX
MIN = OP_MIN
PROD = OP_PROD


# The header's functions for the fused type (C has no overloading).

cdef inline floating _max(floating acc, floating v) noexcept nogil:
    if floating is float:
        return sg_seg_max_f32(acc, v)
    else:
        return sg_seg_max_f64(acc, v)


cdef inline floating _min(floating acc, floating v) noexcept nogil:
    if floating is float:
        return sg_seg_min_f32(acc, v)
    else:
        return sg_seg_min_f64(acc, v)


cdef inline floating _prod(floating acc, floating v) noexcept nogil:
    if floating is float:
        return sg_seg_prod_f32(acc, v)
    else:
        return sg_seg_prod_f64(acc, v)


cdef inline floating _sum_contiguous(const floating *x, Py_ssize_t n) noexcept nogil:
    """Sum of x[0..n), n >= 1: eight interleaved partial sums (sg_segment.h)."""
    if floating is float:
        return sg_seg_sum_contiguous_f32(x, n)
    else:
        return sg_seg_sum_contiguous_f64(x, n)


cdef inline floating _sum_rows(const floating *x, Py_ssize_t n) noexcept nogil:
    """Sum of x[0..n), n >= 0, reading x[0..ROW_READ(n)): the bits of
    _sum_contiguous, -0.0 when n is 0; a row shorter than 40 values takes
    no branch on n (sg_segment_rows.h)."""
    if floating is float:
        return sg_seg_sum_rows_f32(x, n)
    else:
        return sg_seg_sum_rows_f64(x, n)


cdef inline floating _mean(floating total, Py_ssize_t count) noexcept nogil:
    if floating is float:
        return sg_seg_mean_f32(total, count)
    else:
        return sg_seg_mean_f64(total, count)


cdef inline floating _fill_op(int op, floating v, floating fill) noexcept nogil:
    if floating is float:
        return sg_seg_with_fill_f32(op, v, fill)
    else:
        return sg_seg_with_fill_f64(op, v, fill)


cdef inline void _fill(floating *out, Py_ssize_t n, floating value) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n):
        out[k] = value


cdef inline Py_ssize_t _run_end(const index_t *ids, Py_ssize_t i,
                                Py_ssize_t n) noexcept nogil:
    """The first position from i on whose id differs from ids[i] (or n):
    blocks of eight ids are compared at once."""
    cdef index_t s = ids[i]
    cdef index_t diff
    cdef int k
    i = i + 1
    while i + 8 <= n:
        diff = 0
        for k in range(8):
            diff = diff | (ids[i + k] ^ s)
        if diff != 0:
            break
        i = i + 8
    while i < n and ids[i] == s:
        i = i + 1
    return i


cdef inline void _reduce_rows(
    const floating *data,               # IN  (n, width)
    Py_ssize_t width,
    const int64_t *order,               # IN  rows of the group, or NULL: start..stop
    Py_ssize_t start,
    Py_ssize_t stop,                    # > start
    int op,
    floating *out,                      # OUT (width,)
) noexcept nogil:
    """``out = op(rows start..stop-1)`` in that order, from the first row."""
    cdef Py_ssize_t k, j, row
    cdef const floating *x
    cdef floating acc
    row = order[start] if order != NULL else start
    if width == 1:
        acc = data[row]
        if (op == OP_SUM or op == OP_MEAN) and order == NULL:
            acc = _sum_contiguous(data + start, stop - start)
            if op == OP_MEAN:
                acc = _mean(acc, stop - start)
        elif op == OP_SUM or op == OP_MEAN:
            for k in range(start + 1, stop):
                row = order[k]
                acc = acc + data[row]
            if op == OP_MEAN:
                acc = _mean(acc, stop - start)
        elif op == OP_MAX:
            for k in range(start + 1, stop):
                row = order[k] if order != NULL else k
                acc = _max(acc, data[row])
        elif op == OP_MIN:
            for k in range(start + 1, stop):
                row = order[k] if order != NULL else k
                acc = _min(acc, data[row])
        else:
            for k in range(start + 1, stop):
                row = order[k] if order != NULL else k
                acc = _prod(acc, data[row])
        out[0] = acc
        return
    memcpy(out, data + row * width, width * sizeof(floating))
    for k in range(start + 1, stop):
        row = order[k] if order != NULL else k
        x = data + row * width
        if op == OP_SUM or op == OP_MEAN:
            for j in range(width):
                out[j] = out[j] + x[j]
        elif op == OP_MAX:
            for j in range(width):
                out[j] = _max(out[j], x[j])
        elif op == OP_MIN:
            for j in range(width):
                out[j] = _min(out[j], x[j])
        else:
            for j in range(width):
                out[j] = _prod(out[j], x[j])
    if op == OP_MEAN:
        for j in range(width):
            out[j] = _mean(out[j], stop - start)


cdef inline void _with_fill(floating *out, Py_ssize_t width, int op,
                            floating fill) noexcept nogil:
    """``out = op(fill, out)`` (sg_seg_with_fill), element by element."""
    cdef Py_ssize_t j
    for j in range(width):
        out[j] = _fill_op(op, out[j], fill)


cdef inline int _reduce_chunk(
    const floating *data, Py_ssize_t width, const index_t *ids, Py_ssize_t n,
    Py_ssize_t lo, Py_ssize_t hi, int op, floating fill, bint from_fill,
    floating *out, Py_ssize_t n_segments,
) noexcept nogil:
    """The segments starting in rows [lo, hi) (see the module docstring);
    0, or 1 if the ids decrease or reach n_segments."""
    cdef Py_ssize_t i = lo, start
    cdef int64_t s, previous = -1, first
    if lo > 0:
        previous = ids[lo - 1]
        while i < hi and ids[i] == previous:
            i = i + 1
    while i < hi:
        s = ids[i]
        if (i > 0 and s < ids[i - 1]) or s >= n_segments:
            return 1
        start = i
        i = _run_end(ids, i, n)
        if s >= 0:
            first = previous + 1 if previous >= 0 else 0
            _fill(out + first * width, (s - first) * width, fill)
            _reduce_rows(data, width, NULL, start, i, op, out + s * width)
            if from_fill:
                _with_fill(out + s * width, width, op, fill)
            if i == n:
                _fill(out + (s + 1) * width, (n_segments - s - 1) * width, fill)
        previous = s
    return 0


def segment_reduce_ids(
    const floating[:, ::1] data,        # IN  (n, width)
    const index_t[::1] ids,             # IN  (n,) segment ids, expected sorted
    int op,                             # IN  SUM, MEAN, MAX, MIN or PROD
    double fill,                        # IN  value of empty segments
    bint from_fill,                     # IN  reduce from fill (unsorted ops)
    floating[:, ::1] out,               # OUT (n_segments, width)
    int n_threads,
):
    """Reduce the rows of each segment of sorted `ids` into ``out``.

    Rows with negative ids (at the head) are skipped; segments without rows
    get `fill`.  With `from_fill` every segment is combined with `fill` too,
    as the unsorted ops (and ``scatter_reduce``) start from it: a sum of
    ``-0.0`` becomes ``0.0``, a maximum below the lowest finite value (-inf)
    becomes that value.  Returns 0, or 1 when the ids decrease somewhere or
    one is at least ``n_segments`` (``out`` is then partly written, never
    outside it).
    With no row of a non-negative id nothing is written: the caller fills.
    """
    cdef Py_ssize_t n = ids.shape[0], width = data.shape[1]
    cdef Py_ssize_t n_segments = out.shape[0]
    cdef Py_ssize_t b, n_blocks, block
    cdef int threads
    cdef int bad = 0
    cdef const floating *x
    cdef floating *o
    if n == 0 or width == 0:
        return 0
    x = &data[0, 0]
    o = &out[0, 0] if n_segments > 0 else NULL
    threads = threads_for(n * width, n_threads)
    # Blocks of about BLOCK_VALUES values, whatever the thread count, handed
    # out dynamically: a descheduled thread does not stall the call, and each
    # segment is still reduced by the block where it starts.
    block = BLOCK_VALUES // width if width < BLOCK_VALUES else 1
    n_blocks = (n + block - 1) // block
    # ``bad +=`` makes bad a reduction of the prange (a plain assignment
    # would make it lastprivate: only the last block's answer would count).
    for b in prange(n_blocks, nogil=True, schedule="dynamic", chunksize=1,
                    num_threads=threads):
        bad += _reduce_chunk(x, width, &ids[0], n, b * block,
                             min(n, (b + 1) * block), op, <floating>fill,
                             from_fill, o, n_segments)
    return 1 if bad else 0


def segment_reduce_splits(
    const floating[:, ::1] data,        # IN  (n, width)
    const index_t[::1] splits,          # IN  (n_segments + 1,) valid, last <= n
    int op,                             # IN  SUM, MEAN, MAX, MIN or PROD
    double fill,                        # IN  value of empty segments
    bint from_fill,                     # IN  reduce from fill (unsorted ops)
    floating[:, ::1] out,               # OUT (n_segments, width)
    int n_threads,
):
    """Reduce the rows ``splits[s]:splits[s + 1]`` of `data` into ``out[s]``
    for every segment s: the bits of :func:`segment_reduce_ids` on the row
    ids of the splits (each segment's rows in order, the same arithmetic),
    without reading ids.  The caller checks the splits (non-decreasing, from
    0, the last at most n)."""
    cdef Py_ssize_t n_segments = out.shape[0], width = data.shape[1]
    cdef Py_ssize_t b, n_blocks, s, s_stop, start, stop
    cdef Py_ssize_t block = SPLIT_SEGMENTS
    cdef int threads
    cdef const floating *x
    cdef floating *o
    if n_segments == 0 or width == 0:
        return
    x = &data[0, 0] if data.shape[0] > 0 else NULL
    o = &out[0, 0]
    threads = threads_for(<Py_ssize_t>splits[n_segments] * width, n_threads)
    n_blocks = (n_segments + block - 1) // block
    # Blocks of segments, handed out dynamically (rows differ in length); who
    # reduces a segment never changes its bits.
    for b in prange(n_blocks, nogil=True, schedule="dynamic", chunksize=1,
                    num_threads=threads):
        s_stop = min(n_segments, (b + 1) * block)
        if width == 1 and op == OP_SUM:
            _sum_splits(x, data.shape[0], &splits[0], b * block, s_stop,
                        <floating>fill, from_fill, o)
            continue
        for s in range(b * block, s_stop):
            start = splits[s]
            stop = splits[s + 1]
            if stop > start:
                _reduce_rows(x, width, NULL, start, stop, op, o + s * width)
                if from_fill:
                    _with_fill(o + s * width, width, op, <floating>fill)
            else:
                _fill(o + s * width, width, <floating>fill)


cdef inline void _sum_splits(
    const floating *x, Py_ssize_t n, const index_t *splits, Py_ssize_t lo,
    Py_ssize_t hi, floating fill, bint from_fill, floating *out,
) noexcept nogil:
    """segment_reduce_splits' sums of 1-D data for the segments [lo, hi):
    a row whose ROW_READ values from its start lie in x takes _sum_rows
    (random row lengths would mispredict the loops' exits), the last few
    the loops; the same bits either way."""
    cdef Py_ssize_t s, start, stop
    cdef floating acc
    for s in range(lo, hi):
        start = splits[s]
        stop = splits[s + 1]
        if start + ROW_READ(stop - start) <= n:
            acc = _sum_rows(x + start, stop - start)
        elif stop > start:
            acc = _sum_contiguous(x + start, stop - start)
        else:
            acc = -0.0
        if from_fill:
            # fill + acc: an empty row's -0.0 becomes the fill, 0.
            out[s] = _fill_op(OP_SUM, acc, fill)
        else:
            out[s] = acc if stop > start else fill


cdef inline int _scatter_part(
    const floating *x, Py_ssize_t width, const index_t *ids, Py_ssize_t n,
    int op, floating *out, Py_ssize_t n_segments, Py_ssize_t lo, Py_ssize_t hi,
) noexcept nogil:
    """The rows of segments [lo, hi) (1 if an id is at least n_segments): one
    inlined copy of the loop per op, the op a constant in each (a loop that
    tested it per row ran the shuffled sums about a fifth slower)."""
    if op == OP_SUM:
        return _scatter_loop(x, width, ids, n, OP_SUM, out, n_segments, lo, hi)
    if op == OP_MAX:
        return _scatter_loop(x, width, ids, n, OP_MAX, out, n_segments, lo, hi)
    if op == OP_MIN:
        return _scatter_loop(x, width, ids, n, OP_MIN, out, n_segments, lo, hi)
    return _scatter_loop(x, width, ids, n, OP_PROD, out, n_segments, lo, hi)


cdef inline int _scatter_loop(
    const floating *x, Py_ssize_t width, const index_t *ids, Py_ssize_t n,
    int op, floating *out, Py_ssize_t n_segments, Py_ssize_t lo, Py_ssize_t hi,
) noexcept nogil:
    """_scatter_part's loop for one op."""
    cdef Py_ssize_t k, j
    cdef int64_t s
    cdef int bad = 0
    cdef const floating *row
    cdef floating *o
    for k in range(n):
        s = ids[k]
        if s < lo or s >= hi:
            if s >= n_segments:
                bad = 1
            continue
        row = x + k * width
        o = out + s * width
        if op == OP_SUM:
            for j in range(width):
                o[j] = o[j] + row[j]
        elif op == OP_MAX:
            for j in range(width):
                o[j] = _max(o[j], row[j])
        elif op == OP_MIN:
            for j in range(width):
                o[j] = _min(o[j], row[j])
        else:
            for j in range(width):
                o[j] = _prod(o[j], row[j])
    return bad


def scatter_reduce(
    const floating[:, ::1] data,        # IN  (n, width)
    const index_t[::1] ids,             # IN  (n,) segment ids in any order
    int op,                             # IN  SUM, MAX, MIN or PROD
    floating[:, ::1] out,               # OUT (n_segments, width), pre-filled
    int n_threads,
):
    """``out[ids[k]] = op(out[ids[k]], data[k])`` for k in order; negative ids
    are skipped.  Returns 0, or 1 if an id is at least ``n_segments`` (its row
    is skipped too).

    The segments are cut into one contiguous range per thread; each thread
    walks all ids and handles the rows of its range, so every segment is
    reduced by one thread in the original order of its rows (from the fill
    value, as TensorFlow's unsorted kernels do).
    """
    cdef Py_ssize_t n = ids.shape[0], width = data.shape[1]
    cdef Py_ssize_t n_segments = out.shape[0]
    cdef int t, n_parts
    cdef int bad = 0
    cdef floating *o = NULL
    if n == 0 or width == 0:
        return 0
    if n_segments > 0:
        o = &out[0, 0]
    n_parts = threads_for(n * width, n_threads)
    if n_parts < MIN_SCATTER_THREADS:
        n_parts = 1
    if n_parts > n_segments:
        n_parts = <int>n_segments if n_segments > 0 else 1
    for t in prange(n_parts, nogil=True, schedule="static", num_threads=n_parts):
        bad += _scatter_part(&data[0, 0], width, &ids[0], n, op, o, n_segments,
                             n_segments * t // n_parts,
                             n_segments * (t + 1) // n_parts)
    return 1 if bad else 0


cdef inline void _others(const floating *x, floating *o, Py_ssize_t width,
                         const int64_t *order, Py_ssize_t lo,
                         Py_ssize_t hi) noexcept nogil:
    cdef Py_ssize_t k, j, row
    cdef floating acc
    for j in range(width):
        acc = 1
        for k in range(lo, hi):             # o[r] = product of the rows before r
            row = order[k]
            o[row * width + j] = acc
            acc = _prod(acc, x[row * width + j])
        acc = 1
        for k in range(hi - 1, lo - 1, -1):  # times the product of those after
            row = order[k]
            o[row * width + j] = _prod(o[row * width + j], acc)
            acc = _prod(acc, x[row * width + j])


def prod_others(
    const floating[:, ::1] data,        # IN  (n, width)
    const int64_t[::1] order,           # IN  (n_grouped,) rows of data, grouped
    const int64_t[::1] starts,          # IN  (n_groups + 1,) group bounds in order
    floating[:, ::1] out,               # OUT (n, width); grouped rows overwritten
    int n_threads,
):
    """``out[r] = product of the other rows of r's group`` (column-wise), as
    the product of the rows before r times the product of the rows after it,
    so zeros need no division."""
    cdef Py_ssize_t n_groups = starts.shape[0] - 1, width = data.shape[1], g
    cdef int threads = threads_for(order.shape[0] * width, n_threads)
    cdef const floating *x
    cdef floating *o
    if n_groups <= 0 or width == 0:
        return
    x = &data[0, 0]
    o = &out[0, 0]
    for g in prange(n_groups, nogil=True, schedule="static", num_threads=threads):
        _others(x, o, width, &order[0], starts[g], starts[g + 1])


# -- segments of ragged rows ----------------------------------------------------


def ragged_segment_plan(
    const index_t[::1] splits,          # IN  (n_rows + 1,) the rows' splits
    const int64_t[::1] ids,             # IN  (n_rows,) in [0, n_segments)
    int64_t[::1] counts,                # OUT (n_segments,) zeros: rows per segment
    int64_t[::1] longest,               # OUT (n_segments,) zeros: its longest row
):
    """The plan of a ragged segment op on the host, in one pass over the
    rows: the rows of each segment and its longest row, written into
    `counts` and `longest` (zeros on entry).  Returns ``(first, sorted)``:
    the first row whose id is below the previous one (-1 when the ids never
    decrease: then ``cumsum(counts)`` are the segments' row splits), and
    whether the values' output positions are sorted (as
    :func:`ragged_segment_lengths` reports it).  Ids are checked by the
    caller; the loop selects instead of branching (random row lengths)."""
    cdef Py_ssize_t n = ids.shape[0], r
    cdef Py_ssize_t first = -1
    cdef int64_t s, prev = -1, length, count = 0, most = 0
    cdef int same, long_before = 0, disordered = 0
    with nogil:
        for r in range(n):
            s = ids[r]
            length = splits[r + 1] - splits[r]
            if s < prev and first < 0:
                first = r
            # the current segment's count and longest row held in registers
            # and stored every row (sorted ids: the last store of a segment
            # is its total; unsorted ones are reported and the plan unused)
            # (integer arithmetic, no selects the compiler could branch on:
            # lengths are never negative, so most & -same is most or 0)
            same = s == prev
            count = count * same + 1
            most = most & -(<int64_t>same)
            most = length if length > most else most
            counts[s] = count
            longest[s] = most
            # within a segment: a non-empty row after one of several values
            long_before = long_before & same
            disordered |= long_before & (length > 0)
            long_before = (length > 1) | (long_before & (length == 0))
            prev = s
    return first, disordered == 0


def ragged_segment_lengths(
    const index_t[::1] splits,          # IN  (n_rows + 1,) the rows' splits
    const int64_t[::1] seg_splits,      # IN  (n_segments + 1,) rows of each segment
    int64_t[::1] out_lengths,           # OUT (n_segments,)
    int n_threads,
):
    """``out_lengths[s]``: the longest row of segment s (rows
    ``seg_splits[s]:seg_splits[s + 1]``, checked by the caller), 0 for a
    segment without rows.  Returns whether the values' output positions
    are sorted: in every segment, each non-empty row but the last has one
    value."""
    cdef Py_ssize_t n_segments = out_lengths.shape[0]
    cdef Py_ssize_t s, r
    cdef int64_t longest, length
    cdef int previous_long, disordered = 0
    cdef int threads = threads_for(<Py_ssize_t>seg_splits[n_segments], n_threads)
    for s in prange(n_segments, nogil=True, schedule="static", num_threads=threads):
        longest = 0
        previous_long = 0
        for r in range(seg_splits[s], seg_splits[s + 1]):
            length = splits[r + 1] - splits[r]
            if length > 0:
                if previous_long:
                    disordered += 1
                previous_long = length > 1
            if length > longest:
                longest = length
        out_lengths[s] = longest
    return disordered == 0


cdef inline void _combine_row(int op, floating *o, const floating *x,
                              Py_ssize_t m) noexcept nogil:
    """``o[k] = op(o[k], x[k])`` for k in [0, m)."""
    cdef Py_ssize_t k
    if op == OP_SUM or op == OP_MEAN:
        if floating is float:
            sg_seg_add_row_f32(o, x, m)
        else:
            sg_seg_add_row_f64(o, x, m)
    elif op == OP_MAX:
        for k in range(m):
            o[k] = _max(o[k], x[k])
    elif op == OP_MIN:
        for k in range(m):
            o[k] = _min(o[k], x[k])
    else:
        for k in range(m):
            o[k] = _prod(o[k], x[k])


def ragged_segment_rows(
    const floating[:, ::1] data,        # IN  (n_values, width) the flat values
    const index_t[::1] splits,          # IN  (n_rows + 1,) the rows' splits
    const int64_t[::1] seg_splits,      # IN  (n_segments + 1,) rows of each segment
    const int64_t[::1] out_splits,      # IN  (n_segments + 1,) the result's splits
    int op,                             # IN  SUM, MAX, MIN or PROD
    double fill,                        # IN  the unsorted ops' start value
    floating[:, ::1] out,               # OUT (out_splits[-1], width)
    int n_threads,
):
    """The rows of each segment merged position by position (the ragged
    segment ops): output row s (values ``out_splits[s]:out_splits[s + 1]``)
    starts at `fill`, and each row of ``seg_splits[s]:seg_splits[s + 1]``,
    in order, combines its value at position p into the output's value p.

    The bits of the unsorted reduction of the values by their output
    positions (``scatter_reduce``: fill, then the values in order); each
    output row is written by one thread, so they do not depend on the thread
    count.  The caller checks the splits (``out_splits`` from
    :func:`ragged_segment_lengths`)."""
    cdef Py_ssize_t n_segments = out_splits.shape[0] - 1, width = data.shape[1]
    cdef Py_ssize_t b, n_blocks, s, s_stop, r
    cdef Py_ssize_t block = SPLIT_SEGMENTS
    cdef int threads
    cdef const floating *x
    cdef floating *o
    if n_segments <= 0 or width == 0 or out.shape[0] == 0:
        return
    x = &data[0, 0]
    o = &out[0, 0]
    threads = threads_for(out.shape[0] * width, n_threads)
    n_blocks = (n_segments + block - 1) // block
    # Blocks of segments, handed out dynamically (segments differ in size).
    for b in prange(n_blocks, nogil=True, schedule="dynamic", chunksize=1,
                    num_threads=threads):
        s_stop = min(n_segments, (b + 1) * block)
        if width == 1 and op == OP_SUM:
            if floating is float:
                sg_seg_ragged_sum_f32(x, data.shape[0], &splits[0],
                                      index_t is int64_t, &seg_splits[0],
                                      &out_splits[0], b * block, s_stop,
                                      <float>fill, o)
            else:
                sg_seg_ragged_sum_f64(x, data.shape[0], &splits[0],
                                      index_t is int64_t, &seg_splits[0],
                                      &out_splits[0], b * block, s_stop,
                                      <double>fill, o)
            continue
        for s in range(b * block, s_stop):
            _fill(o + out_splits[s] * width,
                  (out_splits[s + 1] - out_splits[s]) * width, <floating>fill)
            for r in range(seg_splits[s], seg_splits[s + 1]):
                _combine_row(op, o + out_splits[s] * width, x + splits[r] * width,
                             (splits[r + 1] - splits[r]) * width)
