# Prefetches of rows, shared by the kernel modules that touch rows scattered
# in memory: sparsegrad_prefetch_read (clip, slices) asks for up to 256 bytes
# to be read, sparsegrad_prefetch_row (the training kernels) for up to 512
# bytes to be written, one 64-byte cache line at a time, to be kept in every
# cache level.
cdef extern from *:
    """
    static inline void sparsegrad_prefetch_read(const void *p, Py_ssize_t nbytes) {
    #if defined(__GNUC__) || defined(__clang__)
        const char *c = (const char *)p;
        Py_ssize_t off;
        if (nbytes > 256) nbytes = 256;
        for (off = 0; off < nbytes; off += 64) __builtin_prefetch(c + off, 0, 3);
    #else
        (void)p; (void)nbytes;
    #endif
    }
    /* Ask for (up to 512 bytes of) a row that will be written soon. */
    static inline void sparsegrad_prefetch_row(const void *row, Py_ssize_t nbytes) {
    #if defined(__GNUC__) || defined(__clang__)
        const char *p = (const char *)row;
        Py_ssize_t off;
        if (nbytes > 512) nbytes = 512;
        for (off = 0; off < nbytes; off += 64) __builtin_prefetch(p + off, 1, 3);
    #else
        (void)row; (void)nbytes;
    #endif
    }
    """
    void sparsegrad_prefetch_row(const void* row, Py_ssize_t nbytes) noexcept nogil
    void sparsegrad_prefetch_read(const void* p, Py_ssize_t nbytes) noexcept nogil
