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
        return __builtin_cpu_supports("avx2") != 0 &&
               __builtin_cpu_supports("f16c") != 0;
    #else
        return 0;
    #endif
    }
    """
    int sparsegrad_cpu_has_avx2() noexcept nogil


def cpu_has_avx2():
    """True when this CPU (and its OS) can run the AVX2 builds of the kernels
    (AVX2 and F16C, which every AVX2 CPU has)."""
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


cdef bint _forked = False   # set in the child of os.fork


def mark_forked_child():
    """Run every kernel on one thread from now on: GNU OpenMP cannot start
    threads in the child of a fork once the parent has used them (its pool
    still lists the parent's threads, and a team would wait for them)."""
    global _forked
    _forked = True


def effective_threads():
    """The thread count the next kernel call uses."""
    if _forked:
        return 1
    cdef int max_threads = omp_get_max_threads()
    if _requested > 0 and _requested < max_threads:
        return _requested
    return max_threads


# ---------------------------------------------------------------------------
# OpenBLAS's jobs on this OpenMP pool.
#
# OpenBLAS (0.3.27 and later) lets its caller run the jobs of a threaded BLAS
# call: it hands over `numjobs` jobs that must run at the same time (a threaded
# GEMM job waits for the panels its siblings pack), and returns when the
# callback returns.  Run on this pool, the matrix products of a training step
# and the kernels around them share one set of threads; left to OpenBLAS, its
# own threads spin after each product and hold the cores the next kernel needs.
# The job split is OpenBLAS's own, so the results are the same bits.
cdef extern from *:
    """
    #include <stddef.h>
    #include <pthread.h>
    typedef void (*sparsegrad_blas_job)(int, void *, int);
    typedef struct {
        sparsegrad_blas_job job;
        void *data;
        int index, tag;
    } sparsegrad_blas_task;
    static volatile long sparsegrad_blas_calls = 0;

    static void *sparsegrad_blas_task_run(void *arg) {
        sparsegrad_blas_task *t = (sparsegrad_blas_task *)arg;
        t->job(t->index, t->data, t->tag);
        return NULL;
    }

    /* Jobs 1.. on fresh threads, job 0 here: for the rare call that cannot
       get a full OpenMP team (inside a parallel region, OMP_DYNAMIC, a
       thread limit).  Returns 0 when a thread could not be started. */
    static int sparsegrad_blas_on_pthreads(sparsegrad_blas_job job, int numjobs,
                                           size_t size, char *data, int tag) {
        pthread_t threads[64];
        sparsegrad_blas_task tasks[64];
        int started = 0, i, ok = 1;
        if (numjobs > 64) return 0;
        for (i = 1; i < numjobs; i++) {
            tasks[i].job = job; tasks[i].data = data + (size_t)i * size;
            tasks[i].index = i; tasks[i].tag = tag;
            if (pthread_create(&threads[i], NULL, sparsegrad_blas_task_run,
                               &tasks[i]) != 0) { ok = 0; break; }
            started = i;
        }
        if (ok) job(0, data, tag);
        for (i = 1; i <= started; i++) pthread_join(threads[i], NULL);
        return ok;
    }

    static void sparsegrad_blas_callback(int sync, sparsegrad_blas_job job,
                                         int numjobs, size_t size, void *jobdata,
                                         int tag) {
        char *data = (char *)jobdata;
        int i;
        (void)sync;
        __atomic_add_fetch(&sparsegrad_blas_calls, 1, __ATOMIC_RELAXED);
        if (numjobs <= 1) {
            for (i = 0; i < numjobs; i++) job(i, data, tag);
            return;
        }
    #ifdef _OPENMP
        if (!omp_in_parallel() && !omp_get_dynamic()
                && omp_get_thread_limit() >= numjobs) {
            #pragma omp parallel num_threads(numjobs)
            {
                int t = omp_get_thread_num();
                if (t < numjobs) job(t, data + (size_t)t * size, tag);
            }
            return;
        }
    #endif
        if (!sparsegrad_blas_on_pthreads(job, numjobs, size, data, tag)) {
            /* the system could not start a thread: run the jobs in order
               (a threaded GEMM whose jobs wait for each other would then
               hang, but so would OpenBLAS's own server without threads) */
            for (i = 0; i < numjobs; i++) job(i, data + (size_t)i * size, tag);
        }
    }

    static size_t sparsegrad_blas_callback_address(void) {
        return (size_t)&sparsegrad_blas_callback;
    }
    static long sparsegrad_blas_calls_so_far(void) {
        return __atomic_load_n(&sparsegrad_blas_calls, __ATOMIC_RELAXED);
    }
    """
    size_t sparsegrad_blas_callback_address() noexcept nogil
    long sparsegrad_blas_calls_so_far() noexcept nogil


def blas_callback_address():
    """Address of the C function that runs OpenBLAS's jobs on this pool (for
    ``openblas_set_threads_callback_function``)."""
    return sparsegrad_blas_callback_address()


def blas_callback_calls():
    """How many threaded BLAS calls the callback has run (for the tests)."""
    return sparsegrad_blas_calls_so_far()
