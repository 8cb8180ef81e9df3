"""OpenMP thread-count control.

The effective thread count of a kernel call is ``min(requested, max)`` where
``requested`` is what :func:`set_num_threads` (or ``SPARSEGRAD_NUM_THREADS``) asked
for and ``max`` is OpenMP's ``omp_get_max_threads()`` in the calling thread, which
is what threadpoolctl lowers inside ``threadpool_limits``.  Kernels receive the
count explicitly (``n_threads``) and their results do not depend on it.
"""

from ._openmp cimport (
    SPARSEGRAD_OPENMP,
    omp_get_max_threads,
    omp_get_num_procs,
    omp_set_num_threads,
)

OPENMP_ENABLED = bool(SPARSEGRAD_OPENMP)

cdef extern from *:
    """
    static int sparsegrad_cpu_has_avx2(void) {
    #if (defined(__GNUC__) || defined(__clang__)) && \\
        (defined(__x86_64__) || defined(__i386__))
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") != 0;
    #else
        return 0;
    #endif
    }
    """
    int sparsegrad_cpu_has_avx2() noexcept nogil


def cpu_has_avx2():
    """True when this CPU (and its OS) can run the AVX2 builds of the kernels."""
    return sparsegrad_cpu_has_avx2() != 0


cdef int _requested = 0   # 0: not set, use OpenMP's own maximum
cdef int _initial_max = omp_get_max_threads()   # OMP_NUM_THREADS or the cores


def openmp_max_threads():
    """``omp_get_max_threads()`` in the calling thread (1 without OpenMP)."""
    return omp_get_max_threads()


def num_procs():
    """Processors OpenMP sees (1 without OpenMP)."""
    return omp_get_num_procs()


def set_requested_threads(int n):
    """Record ``n`` (>= 1, validated by the caller; 0 resets) and tell OpenMP."""
    global _requested
    _requested = n
    if n > 0:
        omp_set_num_threads(n)
    else:
        omp_set_num_threads(_initial_max)


def requested_threads():
    return _requested


def effective_threads():
    """The thread count the next kernel call uses."""
    cdef int max_threads = omp_get_max_threads()
    if _requested > 0 and _requested < max_threads:
        return _requested
    return max_threads
