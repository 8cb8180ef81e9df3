# distutils: language = c++
"""Training kernels of the half storage types, AVX2 build (see
_training_half.pxi.tp): compiled with -mavx2 -mf16c, so float16 converts
through F16C's instructions, whose bits the portable code of the baseline
build gives too."""

include "_training_half.pxi"
include "_training_mixed.pxi"
