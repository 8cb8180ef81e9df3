# OpenMP entry points behind #ifdef _OPENMP, so that the kernels build (serial)
# with a compiler that has no OpenMP.  Call OpenMP only through this file.
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
