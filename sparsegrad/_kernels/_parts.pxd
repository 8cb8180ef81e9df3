# Which thread owns a row in the sparse training kernels (the float ones of
# _training.pxi.tp and the half ones of _training_half.pxi.tp): one rule, so
# that both split the rows alike.
from libc.stdint cimport uint32_t, uint64_t


cdef inline int part_of(Py_ssize_t i, int n_parts) noexcept nogil:
    # Which of n_parts threads owns row i: a multiplicative hash, so that the
    # heavy rows of skewed ids (small ids under Zipf) spread over the threads.
    cdef uint32_t h = <uint32_t>(<uint64_t>i * 2654435761u)
    return <int>((<uint64_t>h * <uint64_t>n_parts) >> 32)
