# Pieces shared by the drivers of the training kernels (the float ones of
# _training.pxi.tp and the half ones of _training_half.pxi.tp): which thread
# owns a row of a sparse update (one rule, so that both split the rows alike),
# and the return types of functions the C compiler must not inline, or must.
from libc.stdint cimport uint32_t, uint64_t

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define SPARSEGRAD_NOINLINE_VOID __attribute__((noinline)) void
    #define SPARSEGRAD_ALWAYS_INLINE_VOID __attribute__((always_inline)) void
    #elif defined(_MSC_VER)
    #define SPARSEGRAD_NOINLINE_VOID __declspec(noinline) void
    #define SPARSEGRAD_ALWAYS_INLINE_VOID __forceinline void
    #else
    #define SPARSEGRAD_NOINLINE_VOID void
    #define SPARSEGRAD_ALWAYS_INLINE_VOID void
    #endif
    """
    # ``void``, for a function that the C compiler must not inline.
    ctypedef void noinline_void "SPARSEGRAD_NOINLINE_VOID"
    # ``void``, for one it must inline (its literal arguments then make the
    # loops inside it branch-free).
    ctypedef void always_inline_void "SPARSEGRAD_ALWAYS_INLINE_VOID"


cdef inline int part_of(Py_ssize_t i, int n_parts) noexcept nogil:
    # Which of n_parts threads owns row i: a multiplicative hash, so that the
    # heavy rows of skewed ids (small ids under Zipf) spread over the threads.
    cdef uint32_t h = <uint32_t>(<uint64_t>i * 2654435761u)
    return <int>((<uint64_t>h * <uint64_t>n_parts) >> 32)
