# distutils: language = c++
"""Training kernels of the half storage types, baseline build (see
_training_half.pxi.tp): the portable float16 conversions."""

include "_training_half.pxi"
include "_training_mixed.pxi"
