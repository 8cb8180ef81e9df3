"""Kernels of the clip ops: one sum of squares over a whole list of tensors,
scaling, and clipping by value.

Design
------
The Python layer (``sparsegrad.ops.clip_ops``) checks dtypes and shapes, makes
every array C-contiguous, groups the repeated indices of an IndexedSlices
(``sparse_rows.group_rows``) and allocates the outputs.  Nothing here raises
on data or checks it.

* ``sum_of_squares_list`` cuts every entry of the list into blocks that do not
  depend on the thread count: 4,096 elements of a dense entry, or groups of
  rows of an IndexedSlices entry totalling about 4,096 values.  The blocks of
  all entries form one table, worked through by one static ``prange``; each block
  sums its squares in float64 with a fixed pattern of eight accumulators, and
  the partial sums are added in table order.  So the total has the same bits
  for any thread count.  An IndexedSlices entry counts as the tensor it
  represents: the rows of a group (one index) are summed in their original
  order, starting from zero, in the values' dtype, as a scatter-add into zeros
  would, and that sum is squared.  The coalesced rows are never written out.
* ``scale`` computes ``(x * c) / d`` elementwise in the values' dtype (TF's
  ``clip_by_norm`` order of operations; ``d == 1`` skips the division, which
  would not change a bit), in fixed chunks.
* ``clip_values`` computes ``max(min(x, hi), lo)`` with NumPy's NaN rule (a
  NaN operand gives NaN), bounds of length 1 or of x's length.

The arithmetic (each square and accumulator step, the combine of the eight
accumulators, the scale, NumPy's clip) lives in
``sparsegrad/_kernels/include/sg_clip.h``, shared with the CUDA kernels of
``sparsegrad/_cuda/clip.cu``; here are the blocks, the threads, the loads and
the order of every sum.
"""

from cython cimport floating
from cython.parallel cimport prange
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

from ._openmp cimport threads_for
from ._prefetch cimport sparsegrad_prefetch_read


cdef extern from "sg_clip.h":
    double sg_square_f32(float x) noexcept nogil
    double sg_square_f64(double x) noexcept nogil
    double sg_square_add_f32(double a, float x) noexcept nogil
    double sg_square_add_f64(double a, double x) noexcept nogil
    double sg_combine8_f64(double a0, double a1, double a2, double a3, double a4,
                           double a5, double a6, double a7) noexcept nogil
    float sg_scale_f32(float x, float c, float d, int divide) noexcept nogil
    double sg_scale_f64(double x, double c, double d, int divide) noexcept nogil
    int sg_scale_divides_f32(float d) noexcept nogil
    int sg_scale_divides_f64(double d) noexcept nogil
    float sg_np_clip_f32(float x, float lo, float hi) noexcept nogil
    double sg_np_clip_f64(double x, double lo, double hi) noexcept nogil

# Elements per block of a sum of squares, and per chunk of the elementwise
# kernels: fixed, so that no result depends on the thread count.
cdef Py_ssize_t CHUNK = 1 << 12

cdef enum:
    F32 = 0
    F64 = 1
    # Columns of a repeated row that _group_squares sums at a time.
    GROUP_COLUMNS = 64


# How many grouped rows ahead _group_squares asks for a row.
cdef Py_ssize_t ROW_PREFETCH = 16


cdef struct Block:
    const void *values      # dense: the block's first element; grouped: values[0, 0]
    const int64_t *order    # grouped: rows of values, grouped; NULL when dense
    const int64_t *starts   # grouped: group bounds in order
    Py_ssize_t lo           # grouped: first group of the block
    Py_ssize_t hi           # dense: number of elements; grouped: end group
    Py_ssize_t width        # grouped: row width
    int kind                # F32 or F64


# The header's functions of each type, picked by the fused type (inlined).
cdef inline double _square(floating x) noexcept nogil:
    if floating is float:
        return sg_square_f32(x)
    else:
        return sg_square_f64(x)


cdef inline double _square_add(double a, floating x) noexcept nogil:
    if floating is float:
        return sg_square_add_f32(a, x)
    else:
        return sg_square_add_f64(a, x)


cdef inline floating _scale(floating x, floating c, floating d,
                            int divide) noexcept nogil:
    if floating is float:
        return sg_scale_f32(x, c, d, divide)
    else:
        return sg_scale_f64(x, c, d, divide)


cdef inline bint _scale_divides(floating d) noexcept nogil:
    if floating is float:
        return sg_scale_divides_f32(d)
    else:
        return sg_scale_divides_f64(d)


cdef inline floating _np_clip(floating x, floating lo, floating hi) noexcept nogil:
    if floating is float:
        return sg_np_clip_f32(x, lo, hi)
    else:
        return sg_np_clip_f64(x, lo, hi)


cdef inline double _squares(const floating *x, Py_ssize_t n) noexcept nogil:
    # Eight interleaved accumulators in a fixed pattern: deterministic, and
    # not bound by the latency of a chain of additions (the compiler turns
    # them into vector lanes).
    cdef double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0
    cdef Py_ssize_t k = 0
    while k + 8 <= n:
        a0 = _square_add(a0, x[k])
        a1 = _square_add(a1, x[k + 1])
        a2 = _square_add(a2, x[k + 2])
        a3 = _square_add(a3, x[k + 3])
        a4 = _square_add(a4, x[k + 4])
        a5 = _square_add(a5, x[k + 5])
        a6 = _square_add(a6, x[k + 6])
        a7 = _square_add(a7, x[k + 7])
        k = k + 8
    while k < n:
        a0 = _square_add(a0, x[k])
        k = k + 1
    return sg_combine8_f64(a0, a1, a2, a3, a4, a5, a6, a7)


cdef inline double _group_squares(
    const floating *values, const int64_t *order, Py_ssize_t first,
    Py_ssize_t stop, Py_ssize_t width, Py_ssize_t end,
) noexcept nogil:
    # Squares of the sum of rows order[first:stop] of values, each column
    # summed in order from zero in the values' dtype, the squares added in
    # column order.  The columns are summed GROUP_COLUMNS at a time, row by
    # row (each row read once, contiguously, and the inner loop vectorises);
    # each column's sum has the bits of a column-by-column loop.  The rows
    # are random in values: the row ROW_PREFETCH entries further in order
    # (before `end`, the block's last) is asked for early.
    cdef double total = 0
    cdef floating sums[GROUP_COLUMNS]
    cdef const floating *row
    cdef Py_ssize_t j, j0, m, k
    for k in range(first, stop):
        if k + ROW_PREFETCH < end:
            sparsegrad_prefetch_read(values + order[k + ROW_PREFETCH] * width,
                                     width * sizeof(floating))
    if stop - first == 1:
        return _squares(values + order[first] * width, width)
    j0 = 0
    while j0 < width:
        m = min(<Py_ssize_t> GROUP_COLUMNS, width - j0)
        for j in range(m):
            sums[j] = 0
        for k in range(first, stop):
            row = values + order[k] * width + j0
            for j in range(m):
                sums[j] = sums[j] + row[j]
        for j in range(m):
            total += _square(sums[j])
        j0 = j0 + m
    return total


cdef double _block_squares(const Block *b) noexcept nogil:
    cdef double total = 0
    cdef Py_ssize_t g
    if b.order == NULL:
        if b.kind == F32:
            return _squares(<const float *> b.values, b.hi)
        return _squares(<const double *> b.values, b.hi)
    cdef Py_ssize_t end = b.starts[b.hi]
    for g in range(b.lo, b.hi):
        if b.kind == F32:
            total += _group_squares(<const float *> b.values, b.order,
                                    b.starts[g], b.starts[g + 1], b.width, end)
        else:
            total += _group_squares(<const double *> b.values, b.order,
                                    b.starts[g], b.starts[g + 1], b.width, end)
    return total


cdef const void *_data(object array, int *kind):
    # The first element of a non-empty C-contiguous float32/float64 array.
    cdef const float[::1] f32
    cdef const double[::1] f64
    if array.dtype.itemsize == 4:
        kind[0] = F32
        f32 = array.reshape(-1)
        return &f32[0]
    kind[0] = F64
    f64 = array.reshape(-1)
    return &f64[0]


def sum_of_squares_list(list entries, int n_threads):
    """The sum of the squares of every tensor of `entries`, in float64.

    Parameters
    ----------
    entries : list of tuple
        ``(values,)``: a C-contiguous float32 or float64 array of any shape (a
        dense tensor).  ``(values, order, starts)``: an IndexedSlices, values
        of shape (n, width) C-contiguous float32 or float64, ``order`` and
        ``starts`` int64 from ``sparse_rows.group_rows`` of its indices; it
        counts as the tensor it represents (each group's rows summed first).
        Every array must stay alive during the call (the list holds them).
    n_threads : int

    Returns
    -------
    float
        The same bits for any `n_threads`.
    """
    cdef Py_ssize_t n_blocks = 0, n_work = 0, b, size, width, n_groups, per, g
    cdef Py_ssize_t itemsize
    cdef Block *blocks
    cdef double *partials
    cdef double total = 0
    cdef int kind = F32, threads
    cdef const void *data
    cdef const int64_t[::1] order
    cdef const int64_t[::1] starts
    for entry in entries:
        values = entry[0]
        if values.size == 0:
            continue
        if len(entry) == 1:
            n_blocks += (values.size + CHUNK - 1) // CHUNK
        else:
            width = values.shape[1]
            per = max(1, CHUNK // width)
            n_groups = entry[2].shape[0] - 1
            n_blocks += (n_groups + per - 1) // per
    if n_blocks == 0:
        return 0.0
    blocks = <Block *> malloc(n_blocks * sizeof(Block))
    partials = <double *> malloc(n_blocks * sizeof(double))
    if not blocks or not partials:
        free(blocks)
        free(partials)
        raise MemoryError("sum_of_squares_list: could not allocate the block table")
    b = 0
    for entry in entries:
        values = entry[0]
        size = values.size
        if size == 0:
            continue
        data = _data(values, &kind)
        itemsize = 4 if kind == F32 else 8
        n_work += size
        if len(entry) == 1:
            for g in range(0, size, CHUNK):
                blocks[b].values = <const char *> data + g * itemsize
                blocks[b].order = NULL
                blocks[b].hi = min(CHUNK, size - g)
                blocks[b].kind = kind
                b += 1
        else:
            order = entry[1]
            starts = entry[2]
            width = values.shape[1]
            per = max(1, CHUNK // width)
            n_groups = starts.shape[0] - 1
            for g in range(0, n_groups, per):
                blocks[b].values = data
                blocks[b].order = &order[0]
                blocks[b].starts = &starts[0]
                blocks[b].lo = g
                blocks[b].hi = min(g + per, n_groups)
                blocks[b].width = width
                blocks[b].kind = kind
                b += 1
    threads = threads_for(n_work, n_threads)
    # Static: each thread streams one contiguous part of the table (an
    # interleaved, dynamic schedule halved the bandwidth of two threads here).
    for b in prange(n_blocks, nogil=True, schedule="static", num_threads=threads):
        partials[b] = _block_squares(&blocks[b])
    for b in range(n_blocks):
        total += partials[b]
    free(blocks)
    free(partials)
    return total


def scale(
    const floating[::1] x,              # IN  (n,)
    double c,                           # IN  exactly representable in the dtype
    double d,                           # IN  exactly representable in the dtype
    floating[::1] out,                  # OUT (n,)
    int n_threads,
):
    """``out = (x * c) / d`` in the values' dtype (just ``x * c`` when d is 1)."""
    cdef Py_ssize_t n = x.shape[0], n_chunks = (n + CHUNK - 1) // CHUNK
    cdef Py_ssize_t ch, k, stop
    cdef floating fc = <floating> c, fd = <floating> d
    cdef bint divide = _scale_divides(fd)
    cdef int threads = threads_for(n, n_threads)
    for ch in prange(n_chunks, nogil=True, schedule="static", num_threads=threads):
        stop = min((ch + 1) * CHUNK, n)
        if divide:
            for k in range(ch * CHUNK, stop):
                out[k] = _scale(x[k], fc, fd, 1)
        else:
            for k in range(ch * CHUNK, stop):
                out[k] = _scale(x[k], fc, fd, 0)


def clip_values(
    const floating[::1] x,              # IN  (n,)
    const floating[::1] lo,             # IN  (1,) or (n,)
    const floating[::1] hi,             # IN  (1,) or (n,)
    floating[::1] out,                  # OUT (n,)
    int n_threads,
):
    """``out = maximum(minimum(x, hi), lo)``; a NaN operand gives NaN, and a tie
    keeps the first operand."""
    cdef Py_ssize_t n = x.shape[0], n_chunks = (n + CHUNK - 1) // CHUNK
    cdef Py_ssize_t ch, k, stop
    cdef Py_ssize_t lo_step = 1 if lo.shape[0] == n else 0
    cdef Py_ssize_t hi_step = 1 if hi.shape[0] == n else 0
    cdef int threads = threads_for(n, n_threads)
    for ch in prange(n_chunks, nogil=True, schedule="static", num_threads=threads):
        stop = min((ch + 1) * CHUNK, n)
        for k in range(ch * CHUNK, stop):
            out[k] = _np_clip(x[k], lo[k * lo_step], hi[k * hi_step])
