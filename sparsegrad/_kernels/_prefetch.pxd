# Read prefetch of a row, shared by the kernel modules that read rows
# scattered in memory (clip, slices): ask for up to 256 bytes, one 64-byte
# cache line at a time, to be kept in every cache level.
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
    """
    void sparsegrad_prefetch_read(const void* p, Py_ssize_t nbytes) noexcept nogil
