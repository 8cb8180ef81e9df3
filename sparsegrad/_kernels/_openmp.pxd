# OpenMP entry points behind #ifdef _OPENMP, so that the kernels build (serial)
# with a compiler that has no OpenMP, and the thread-count helper of every
# kernel.  Call OpenMP only through this file.
cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define SPARSEGRAD_OPENMP 1
    #else
    #define SPARSEGRAD_OPENMP 0
    static int omp_get_max_threads(void) { return 1; }
    static void omp_set_num_threads(int n) { (void)n; }
    static int omp_get_num_procs(void) { return 1; }
    #endif
    """
    bint SPARSEGRAD_OPENMP
    int omp_get_max_threads() noexcept nogil
    void omp_set_num_threads(int n) noexcept nogil
    int omp_get_num_procs() noexcept nogil


# How many threads a kernel call uses: below ``min_work`` elements touched
# (or when one thread is asked for) it runs on the calling thread alone, since
# starting an OpenMP team costs more than it saves.  Every kernel module
# decides with this one helper.
cdef enum:
    PARALLEL_MIN_WORK = 1 << 15


cdef inline int threads_for(Py_ssize_t work, int n_threads,
                            Py_ssize_t min_work=PARALLEL_MIN_WORK) noexcept nogil:
    if n_threads <= 1 or work < min_work:
        return 1
    return n_threads
