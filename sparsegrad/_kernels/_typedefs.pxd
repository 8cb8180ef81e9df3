# The one home of the fused types shared by every kernel module.
from libc.stdint cimport int32_t, int64_t

# Index type of indices, segment ids and row splits.
ctypedef fused index_t:
    int32_t
    int64_t
