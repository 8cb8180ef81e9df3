"""Kernels behind IndexedSlices: scatter into a dense array, dedupe.

Design
------
Values are viewed as 2-D ``(n, row_width)`` C-contiguous arrays; the Python layer
(``sparsegrad.framework.indexed_slices``) reshapes, checks dtypes, checks that
every index lies in ``[0, n_rows)`` and allocates the outputs.  Nothing here
raises or checks.

Determinism: every output element is accumulated by exactly one thread, in the
original order of its contributions, so the bits never depend on the thread
count.
* scatter_add / scatter_update: the output rows are split into ``n_parts``
  classes ``row % n_parts``; class ``p`` is one prange iteration, which walks all
  indices in order and handles the rows of its class.
* dedupe: a stable LSD radix argsort groups equal indices (keeping their original
  order), then each group is summed by one thread.
* gather_rows: a copy, row by row (any dtype, as bytes); each output row is
  written by one thread.

The arithmetic (the index range test, the addition of a contribution to an
output element) lives in ``include/sg_slices.h``, shared with the CUDA kernels
(``sparsegrad/_cuda/slices.cu``); these functions keep the threads, the
grouping, the prefetches and the loads and stores.
"""

from cython cimport floating
from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from ._openmp cimport threads_for
from ._prefetch cimport sparsegrad_prefetch_read
from ._typedefs cimport index_t


cdef extern from "sg_slices.h" nogil:
    void sg_index_last_i32(uint32_t *last, int64_t n_rows) noexcept
    void sg_index_last_i64(uint64_t *last, int64_t n_rows) noexcept
    uint32_t sg_index_bits_i32(int32_t x, uint32_t last) noexcept
    uint64_t sg_index_bits_i64(int64_t x, uint64_t last) noexcept
    bint sg_index_bits_ok_i32(uint32_t bits) noexcept
    bint sg_index_bits_ok_i64(uint64_t bits) noexcept
    float sg_slices_acc_f32(float acc, float x) noexcept
    double sg_slices_acc_f64(double acc, double x) noexcept

# Radix digit width of the argsort.
cdef int RADIX_BITS = 11
# Rows per prange chunk of gather_rows, and how many rows ahead it prefetches
# (the rows of a large table are random in memory: the copy waits on memory,
# not on bandwidth, unless later rows are asked for early).
cdef Py_ssize_t GATHER_CHUNK = 1 << 10
cdef Py_ssize_t GATHER_PREFETCH = 16


cdef inline floating _acc(floating acc, floating x) noexcept nogil:
    if floating is float:
        return sg_slices_acc_f32(acc, x)
    else:
        return sg_slices_acc_f64(acc, x)


def all_in_range(
    const index_t[::1] indices,         # IN  (n,)
    int64_t n_rows,                     # IN  the exclusive upper bound, >= 0
    int n_threads=1,
):
    """True when every index lies in ``[0, n_rows)``.

    With ``last = n_rows - 1``, an index x is in range exactly when neither x
    nor ``last - x`` is negative, so the sign bit of the OR of ``x | (last -
    x)`` over all indices answers (wrapping unsigned arithmetic: no overflow,
    no branch; the loop vectorises with plain SSE2; the formulas are
    ``sg_slices.h``'s).  An OR does not depend on the order, so the threads'
    parts combine to the same answer.
    """
    cdef Py_ssize_t k, n = indices.shape[0]
    cdef uint32_t acc32 = 0, last32
    cdef uint64_t acc64 = 0, last64
    # memory-bound: a second thread pays off only on a long array
    cdef int threads = threads_for(n, n_threads, 1 << 18)
    if index_t is int32_t:
        sg_index_last_i32(&last32, n_rows)
        for k in prange(n, nogil=True, schedule="static", num_threads=threads):
            acc32 |= sg_index_bits_i32(indices[k], last32)
        return sg_index_bits_ok_i32(acc32)
    else:
        sg_index_last_i64(&last64, n_rows)
        for k in prange(n, nogil=True, schedule="static", num_threads=threads):
            acc64 |= sg_index_bits_i64(indices[k], last64)
        return sg_index_bits_ok_i64(acc64)


def scatter_add(
    const floating[:, ::1] values,      # IN  (n, row_width)
    const index_t[::1] indices,         # IN  (n,), each in [0, out.shape[0])
    floating[:, ::1] out,               # OUT (n_rows, row_width), added to in place
    int n_threads,
):
    """``out[indices[k]] += values[k]`` for k in order (duplicates accumulate)."""
    cdef Py_ssize_t n = indices.shape[0], row_width = values.shape[1]
    cdef Py_ssize_t k, j, i
    cdef int p, n_parts = threads_for(n * row_width, n_threads)
    for p in prange(n_parts, nogil=True, schedule="static", num_threads=n_parts):
        for k in range(n):
            i = indices[k]
            if i % n_parts != p:
                continue
            for j in range(row_width):
                out[i, j] = _acc(out[i, j], values[k, j])


def scatter_update(
    const floating[:, ::1] values,      # IN  (n, row_width)
    const index_t[::1] indices,         # IN  (n,), each in [0, out.shape[0])
    floating[:, ::1] out,               # OUT (n_rows, row_width), rows overwritten
    int n_threads,
):
    """``out[indices[k]] = values[k]`` for k in order (the last duplicate wins)."""
    cdef Py_ssize_t n = indices.shape[0], row_width = values.shape[1]
    cdef Py_ssize_t k, i
    cdef int p, n_parts = threads_for(n * row_width, n_threads)
    cdef size_t row_bytes = row_width * sizeof(floating)
    if row_width == 0:
        return
    for p in prange(n_parts, nogil=True, schedule="static", num_threads=n_parts):
        for k in range(n):
            i = indices[k]
            if i % n_parts == p:
                memcpy(&out[i, 0], &values[k, 0], row_bytes)


def group_stable(
    const index_t[::1] keys,            # IN  (n,), each in [0, max_key]
    int64_t max_key,                    # IN  an upper bound of the keys
    int64_t[:, ::1] scratch,            # (4, n) work space
    int64_t[::1] order_out,             # OUT (n,) permutation sorting keys stably
    index_t[::1] unique_out,            # OUT (>= n_unique,) sorted distinct keys
    int64_t[::1] starts_out,            # OUT (>= n_unique + 1,) group bounds in order
):
    """Group equal keys stably; returns the number of distinct keys.

    A stable LSD radix argsort (single-threaded) whose passes split the key
    bits evenly into digits of at most RADIX_BITS bits (20-bit keys: two
    passes of 10 bits), then one sequential scan of the sorted keys for the
    group bounds.  The caller passes the work space (recycled memory: on a
    virtual machine the page faults of fresh buffers cost more than the sort).
    """
    cdef Py_ssize_t n = keys.shape[0], k, n_unique = 0
    cdef int key_bits = 1, n_passes, digit_bits, n_buckets, shift = 0, b, _pass
    cdef uint64_t mask, digit
    cdef int64_t total, count
    cdef uint64_t *key_cur
    cdef uint64_t *key_nxt
    cdef uint64_t *key_tmp
    cdef int64_t *pos_cur
    cdef int64_t *pos_nxt
    cdef int64_t *pos_tmp
    cdef int64_t *hist
    if n == 0:
        starts_out[0] = 0
        return 0
    while key_bits < 64 and (<uint64_t> max_key >> key_bits) != 0:
        key_bits = key_bits + 1
    n_passes = (key_bits + RADIX_BITS - 1) // RADIX_BITS
    digit_bits = (key_bits + n_passes - 1) // n_passes
    n_buckets = 1 << digit_bits
    mask = n_buckets - 1
    key_cur = <uint64_t *> &scratch[0, 0]
    key_nxt = <uint64_t *> &scratch[1, 0]
    pos_cur = &scratch[2, 0]
    pos_nxt = &scratch[3, 0]
    hist = <int64_t *> malloc(n_buckets * sizeof(int64_t))
    if not hist:
        raise MemoryError("group_stable: could not allocate the histogram")
    with nogil:
        for k in range(n):
            key_cur[k] = <uint64_t> keys[k]
            pos_cur[k] = k
        for _pass in range(n_passes):
            memset(hist, 0, n_buckets * sizeof(int64_t))
            for k in range(n):
                hist[(key_cur[k] >> shift) & mask] += 1
            total = 0
            for b in range(n_buckets):
                count = hist[b]
                hist[b] = total
                total = total + count
            for k in range(n):
                digit = (key_cur[k] >> shift) & mask
                key_nxt[hist[digit]] = key_cur[k]
                pos_nxt[hist[digit]] = pos_cur[k]
                hist[digit] += 1
            key_tmp = key_cur
            key_cur = key_nxt
            key_nxt = key_tmp
            pos_tmp = pos_cur
            pos_cur = pos_nxt
            pos_nxt = pos_tmp
            shift = shift + digit_bits
        memcpy(&order_out[0], pos_cur, n * sizeof(int64_t))
        # the sorted keys are at hand: the group bounds in one sequential scan
        for k in range(n):
            if k == 0 or key_cur[k] != key_cur[k - 1]:
                unique_out[n_unique] = <index_t> key_cur[k]
                starts_out[n_unique] = k
                n_unique = n_unique + 1
        starts_out[n_unique] = n
    free(hist)
    return n_unique


def gather_group_sum(
    const floating[:, ::1] values,      # IN  (n, row_width)
    const int64_t[::1] order,           # IN  (n,) rows of values, grouped
    const int64_t[::1] starts,          # IN  (n_groups + 1,) group bounds in order
    floating[:, ::1] out,               # OUT (n_groups, row_width), zero-filled
    int n_threads,
):
    """``out[g] = sum(values[order[starts[g]:starts[g + 1]]])``, in that order."""
    cdef Py_ssize_t n_groups = out.shape[0], row_width = values.shape[1]
    cdef Py_ssize_t g, k, j, row
    cdef int threads = threads_for(values.shape[0] * row_width, n_threads)
    for g in prange(n_groups, nogil=True, schedule="dynamic", chunksize=16,
                    num_threads=threads):
        for k in range(starts[g], starts[g + 1]):
            row = order[k]
            for j in range(row_width):
                out[g, j] = _acc(out[g, j], values[row, j])


def gather_rows(
    const unsigned char[:, ::1] table,  # IN  (n_rows, row_bytes), rows as bytes
    const index_t[::1] indices,         # IN  (n,), each in [0, n_rows)
    unsigned char[:, ::1] out,          # OUT (n, row_bytes)
    int n_threads,
):
    """``out[k] = table[indices[k]]``: fixed chunks of rows in a prange, the
    rows GATHER_PREFETCH ahead asked for early."""
    cdef Py_ssize_t n = indices.shape[0], row_bytes = table.shape[1]
    cdef Py_ssize_t n_chunks = (n + GATHER_CHUNK - 1) // GATHER_CHUNK
    cdef Py_ssize_t c, k, stop
    cdef int threads = threads_for(n * row_bytes // 4, n_threads)
    if row_bytes == 0 or n == 0:
        return
    for c in prange(n_chunks, nogil=True, schedule="static", num_threads=threads):
        stop = min(c * GATHER_CHUNK + GATHER_CHUNK, n)
        for k in range(c * GATHER_CHUNK, stop):
            if k + GATHER_PREFETCH < stop:
                sparsegrad_prefetch_read(&table[indices[k + GATHER_PREFETCH], 0],
                                         row_bytes)
            memcpy(&out[k, 0], &table[indices[k], 0], row_bytes)
