"""Training kernels, baseline build (see _training.pxi.tp)."""

include "_training.pxi"
