"""Kernels of the segment reductions: sorted segment ids to row splits.

Design
------
The Python layer (``sparsegrad.framework.sparse_rows.sorted_segment_splits``)
converts the ids, allocates the splits and turns a reported problem into
TensorFlow's error.  The kernel never raises and never writes outside
``splits_out``, whatever the ids hold.

* ``sorted_splits`` fills ``splits_out[s]`` with the first position whose id
  is at least ``s``, for ``s`` in ``[0, n_segments]``: at each position where
  the id changes (and at both ends) it writes the segments that start there.
  With sorted ids in ``[0, n_segments)`` every entry is written exactly once,
  by one thread.  The positions are cut into as many contiguous parts as
  threads; each part reports its first decrease, and the smallest of those is
  returned, so the answer does not depend on the thread count.

The sparse-segment (embedding-bag) kernels are in ``_sparse_segment.pxi``,
included at the end.
"""

from cython.parallel cimport prange
from libc.stdint cimport INT64_MIN, int64_t
from libc.stdlib cimport free, malloc

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


include "_sparse_segment.pxi"
