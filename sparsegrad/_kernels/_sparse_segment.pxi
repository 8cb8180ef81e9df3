# Sparse segment reductions ("embedding bags"), included by segment.pyx.
#
# Design
# ------
# A bag ``s`` is the stored entries ``k`` in ``[splits[s], splits[s + 1])``;
# entry ``k`` names row ``indices[k]`` of a 2-D C-contiguous table and, when
# weighted, carries the weight ``weights[k]``.  The Python layer
# (``sparsegrad.ops.sparse_segment_ops``) checks every index against the
# table, builds the splits (non-decreasing, within the entries), allocates
# the outputs and passes the thread count.  Nothing here checks or raises.
#
# * sparse_segment_reduce: one prange iteration per output bag; the bag's row
#   is accumulated in the values' dtype, in entry order, by one thread (so the
#   bits never depend on the thread count), then divided by the combiner's
#   denominator.  The table row of the entry PREFETCH_AHEAD places ahead (in
#   this bag or the thread's next ones) is prefetched, all its cache lines:
#   the rows are scattered over a table far larger than the caches, and the
#   loop is bound by memory latency, not bandwidth.
# * No FMA (setup.py compiles segment with -ffp-contract=off) and no sum
#   across vector lanes: each output element is its own chain of adds, so
#   the AVX2 build (segment_avx2) gives the baseline's bits.
# * The arithmetic (a weighted term, the combiner's denominator, the
#   division that gives zeros for a zero denominator) lives in
#   include/sg_segment.h, shared with the CUDA kernels (_cuda/segment.cu);
#   these loops only walk the entries.
# * sparse_segment_reduce_grad: the gradient w.r.t. the table as one row per
#   distinct index.  The entries arrive grouped by index (a stable sort, so
#   each group lists its entries in their original order); each group is
#   summed by one thread, in that order (the upstream row of the entry
#   PREFETCH_AHEAD places ahead is prefetched).

from cython cimport floating
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint16_t

from ._openmp cimport threads_for
from ._typedefs cimport index_t

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define SPARSEGRAD_PREFETCH(p) __builtin_prefetch((p), 0, 2)
    #else
    #define SPARSEGRAD_PREFETCH(p) ((void)(p))
    #endif
    """
    void SPARSEGRAD_PREFETCH(const void *p) noexcept nogil

cdef extern from "sg_half.h":
    void sg_half_row_to_f32(const uint16_t* src, float* dst, int64_t n,
                            int bf16) noexcept nogil
    void sg_half_row_from_f32(const float* src, uint16_t* dst, int64_t n,
                              int bf16) noexcept nogil

cdef extern from "sg_segment.h":
    # Combiners (the same numbers in sparsegrad.ops.sparse_segment_ops).
    enum:
        COMBINER_SUM "SG_BAG_SUM"
        COMBINER_MEAN "SG_BAG_MEAN"
        COMBINER_SQRTN "SG_BAG_SQRTN"
    float sg_bag_add_f32(float acc, float w, float v) noexcept nogil
    double sg_bag_add_f64(double acc, double w, double v) noexcept nogil
    float sg_bag_denom_add_f32(int combiner, float denom, float w) noexcept nogil
    double sg_bag_denom_add_f64(int combiner, double denom, double w) noexcept nogil
    float sg_bag_denom_f32(int combiner, int weighted, float wsum,
                           int64_t count) noexcept nogil
    double sg_bag_denom_f64(int combiner, int weighted, double wsum,
                            int64_t count) noexcept nogil
    float sg_bag_scale_f32(float x, float denom) noexcept nogil
    double sg_bag_scale_f64(double x, double denom) noexcept nogil

# How many entries ahead the table row is prefetched, and at most how many of
# its 64-byte cache lines.  The prefetch goes to the L2 cache and below
# (locality 2, prefetcht1): the L2 keeps more misses in flight than the L1's
# fill buffers, and Zipf-distributed ids come back to rows still cached.
cdef enum:
    PREFETCH_AHEAD = 16
    PREFETCH_LINES = 8
    # Columns summed in registers at a time (float32: 8 AVX2 registers).
    BLOCK = 64


# The header's functions for the fused type (C has no overloading).

cdef inline floating _bag_add(floating acc, floating w, floating v) noexcept nogil:
    if floating is float:
        return sg_bag_add_f32(acc, w, v)
    else:
        return sg_bag_add_f64(acc, w, v)


cdef inline floating _bag_denom_add(int combiner, floating denom,
                                    floating w) noexcept nogil:
    if floating is float:
        return sg_bag_denom_add_f32(combiner, denom, w)
    else:
        return sg_bag_denom_add_f64(combiner, denom, w)


cdef inline floating _bag_denom(int combiner, bint weighted, floating wsum,
                                int64_t count) noexcept nogil:
    if floating is float:
        return sg_bag_denom_f32(combiner, weighted, wsum, count)
    else:
        return sg_bag_denom_f64(combiner, weighted, wsum, count)


cdef inline floating _bag_scale(floating x, floating denom) noexcept nogil:
    if floating is float:
        return sg_bag_scale_f32(x, denom)
    else:
        return sg_bag_scale_f64(x, denom)


cdef inline void _prefetch_row(const void *start, Py_ssize_t n_bytes) noexcept nogil:
    """Prefetch every cache line that holds a byte of [start, start + n_bytes)
    (a row need not start on a line: NumPy's large arrays start 16 bytes
    into one, so a 256-byte row spans five lines)."""
    cdef size_t line = (<size_t> start) & ~(<size_t> 63)
    cdef size_t last = (<size_t> start) + n_bytes
    while line < last:
        SPARSEGRAD_PREFETCH(<const void *> line)
        line = line + 64


cdef inline void _bag(
    const floating[:, ::1] data,
    const index_t[::1] indices,
    const floating[::1] weights,
    int64_t lo,
    int64_t hi,
    int64_t end,
    int combiner,
    floating *row,
    Py_ssize_t width,
) noexcept nogil:
    """Reduce entries [lo, hi) into `row` (width values, overwritten)."""
    cdef Py_ssize_t j
    cdef int64_t k
    cdef floating w, denom = 0
    cdef const floating *src
    cdef bint weighted = weights.shape[0] > 0
    # The cache lines of a row (at most PREFETCH_LINES of them) are requested
    # PREFETCH_AHEAD entries before the row is read.
    cdef Py_ssize_t row_bytes = width * sizeof(floating)
    if row_bytes > PREFETCH_LINES * 64:
        row_bytes = PREFETCH_LINES * 64
    cdef floating acc[BLOCK]
    cdef Py_ssize_t j0 = 0
    # Whole blocks of BLOCK columns: a constant trip count, so the compiler
    # keeps `acc` in vector registers (no load and store of the sum per
    # entry); one pass over the bag's entries per block, the later passes
    # reading rows the first one brought into the cache.
    while j0 + BLOCK <= width:
        for j in range(BLOCK):
            acc[j] = 0
        for k in range(lo, hi):
            if j0 == 0 and k + PREFETCH_AHEAD < end:
                _prefetch_row(&data[indices[k + PREFETCH_AHEAD], 0], row_bytes)
            src = &data[indices[k], j0]
            if weighted:
                w = weights[k]
                for j in range(BLOCK):
                    acc[j] = _bag_add(acc[j], w, src[j])
            else:
                for j in range(BLOCK):
                    acc[j] += src[j]
        for j in range(BLOCK):
            row[j0 + j] = acc[j]
        j0 = j0 + BLOCK
    # The remaining columns (all of them when width < BLOCK), summed in place.
    if j0 < width:
        for j in range(j0, width):
            row[j] = 0
        for k in range(lo, hi):
            if j0 == 0 and k + PREFETCH_AHEAD < end:
                _prefetch_row(&data[indices[k + PREFETCH_AHEAD], 0], row_bytes)
            src = &data[indices[k], 0]
            if weighted:
                w = weights[k]
                for j in range(j0, width):
                    row[j] = _bag_add(row[j], w, src[j])
            else:
                for j in range(j0, width):
                    row[j] += src[j]
    if weighted and combiner != COMBINER_SUM:
        for k in range(lo, hi):
            denom = _bag_denom_add(combiner, denom, weights[k])
    if combiner == COMBINER_SUM or hi == lo:
        return
    # The count (unweighted) or the weights' sum, in the values' dtype.
    denom = _bag_denom(combiner, weighted, denom, hi - lo)
    for j in range(width):
        row[j] = _bag_scale(row[j], denom)


def sparse_segment_reduce(
    const floating[:, ::1] data,        # IN  (n_rows, width)
    const index_t[::1] indices,         # IN  (nnz,), each in [0, n_rows)
    const floating[::1] weights,        # IN  (nnz,), or (0,) when unweighted
    const int64_t[::1] splits,          # IN  (n_segments + 1,), rising in [0, nnz]
    int combiner,                       # IN  COMBINER_SUM, _MEAN or _SQRTN
    floating[:, ::1] out,               # OUT (n_segments, width), every row written
    int n_threads,
):
    """``out[s] = combine(w_k * data[indices[k]] for k in bag s)``.

    sum: the sum; mean: the sum over the count (weighted: over the sum of the
    weights); sqrtn: over the square root of the count (weighted: of the sum
    of the squared weights).  An empty bag, or a weighted one whose
    denominator is zero, gives zeros.
    """
    cdef Py_ssize_t n_segments = out.shape[0], width = out.shape[1]
    cdef Py_ssize_t s
    cdef int threads = threads_for(
        (splits[n_segments] - splits[0] + n_segments) * width, n_threads)
    if width == 0:
        return
    for s in prange(n_segments, nogil=True, schedule="static", num_threads=threads):
        _bag(data, indices, weights, splits[s], splits[s + 1],
             splits[n_segments], combiner,
             &out[s, 0], width)


cdef inline void _bag_half(
    const uint16_t[:, ::1] data,
    const index_t[::1] indices,
    const float[::1] weights,
    int64_t lo,
    int64_t hi,
    int64_t end,
    int combiner,
    float *row,
    Py_ssize_t width,
    bint bf16,
) noexcept nogil:
    """_bag of float16 or bfloat16 rows (their bits): each row read as
    float32 (BLOCK columns at a time, through `tmp`), everything else as
    _bag's float32 arithmetic, so the bits of _bag on the upcast table."""
    cdef Py_ssize_t j, j0 = 0, n
    cdef int64_t k
    cdef float w, denom = 0
    cdef bint weighted = weights.shape[0] > 0
    cdef Py_ssize_t row_bytes = width * sizeof(uint16_t)
    if row_bytes > PREFETCH_LINES * 64:
        row_bytes = PREFETCH_LINES * 64
    cdef float acc[BLOCK]
    cdef float tmp[BLOCK]
    while j0 < width:
        n = width - j0
        if n > BLOCK:
            n = BLOCK
        for j in range(n):
            acc[j] = 0
        for k in range(lo, hi):
            if j0 == 0 and k + PREFETCH_AHEAD < end:
                _prefetch_row(&data[indices[k + PREFETCH_AHEAD], 0], row_bytes)
            sg_half_row_to_f32(&data[indices[k], j0], tmp, n, bf16)
            if weighted:
                w = weights[k]
                for j in range(n):
                    acc[j] = sg_bag_add_f32(acc[j], w, tmp[j])
            else:
                for j in range(n):
                    acc[j] += tmp[j]
        for j in range(n):
            row[j0 + j] = acc[j]
        j0 = j0 + n
    if weighted and combiner != COMBINER_SUM:
        for k in range(lo, hi):
            denom = sg_bag_denom_add_f32(combiner, denom, weights[k])
    if combiner == COMBINER_SUM or hi == lo:
        return
    denom = sg_bag_denom_f32(combiner, weighted, denom, hi - lo)
    for j in range(width):
        row[j] = sg_bag_scale_f32(row[j], denom)


def sparse_segment_reduce_half(
    const uint16_t[:, ::1] data,        # IN  (n_rows, width) float16/bfloat16 bits
    const index_t[::1] indices,         # IN  (nnz,), each in [0, n_rows)
    const float[::1] weights,           # IN  (nnz,), or (0,) when unweighted
    const int64_t[::1] splits,          # IN  (n_segments + 1,), rising in [0, nnz]
    int combiner,                       # IN  COMBINER_SUM, _MEAN or _SQRTN
    float[:, ::1] out,                  # OUT (n_segments, width), every row written
    uint16_t[:, ::1] out_half,          # OUT (n_segments, width) or (0, width)
    bint bf16,                          # IN  bfloat16 bits (else float16)
    int n_threads,
):
    """sparse_segment_reduce of a half table in float32: the bits of the
    float32 kernel on the upcast table, reading only the bags' rows.  With
    rows in `out_half`, each bag is also rounded to the table's type there
    (to nearest, once), right after it is summed."""
    cdef Py_ssize_t n_segments = out.shape[0], width = out.shape[1]
    cdef Py_ssize_t s
    cdef int threads = threads_for(
        (splits[n_segments] - splits[0] + n_segments) * width, n_threads)
    if width == 0:
        return
    cdef bint rounded = out_half.shape[0] > 0
    for s in prange(n_segments, nogil=True, schedule="static", num_threads=threads):
        _bag_half(data, indices, weights, splits[s], splits[s + 1],
                  splits[n_segments], combiner, &out[s, 0], width, bf16)
        if rounded:
            sg_half_row_from_f32(&out[s, 0], &out_half[s, 0], width, bf16)


def sparse_segment_reduce_grad(
    const floating[:, ::1] grad,        # IN  (n_segments, width) upstream gradient
    const int64_t[::1] order,           # IN  (nnz,) entries grouped by index, stably
    const int64_t[::1] starts,          # IN  (n_unique + 1,) group bounds in order
    const index_t[::1] segment_of,      # IN  (nnz,) the bag of each entry
    const floating[::1] coef,           # IN  (nnz,) factor of each entry, or (0,) for 1
    floating[:, ::1] out,               # OUT (n_unique, width), every row written
    int n_threads,
):
    """``out[u] = sum(coef[k] * grad[segment_of[k]] for k in group u)``, in
    the order of ``order``."""
    cdef Py_ssize_t n_unique = out.shape[0], width = out.shape[1]
    cdef Py_ssize_t u, j
    cdef int64_t p, k
    cdef floating c
    cdef floating *row
    cdef const floating *src
    cdef bint scaled = coef.shape[0] > 0
    cdef int64_t nnz = order.shape[0]
    cdef Py_ssize_t row_bytes = width * sizeof(floating)
    if row_bytes > PREFETCH_LINES * 64:
        row_bytes = PREFETCH_LINES * 64
    cdef int threads = threads_for(
        (order.shape[0] + n_unique) * width, n_threads)
    if width == 0:
        return
    for u in prange(n_unique, nogil=True, schedule="static", num_threads=threads):
        row = &out[u, 0]
        for j in range(width):
            row[j] = 0
        for p in range(starts[u], starts[u + 1]):
            if p + PREFETCH_AHEAD < nnz:
                _prefetch_row(&grad[segment_of[order[p + PREFETCH_AHEAD]], 0],
                              row_bytes)
            k = order[p]
            src = &grad[segment_of[k], 0]
            if scaled:
                c = coef[k]
                for j in range(width):
                    row[j] = _bag_add(row[j], c, src[j])
            else:
                for j in range(width):
                    row[j] += src[j]
