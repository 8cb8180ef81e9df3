# distutils: extra_compile_args = -ffp-contract=off -fno-math-errno -fno-trapping-math
"""Elementwise transcendental kernels, baseline build (see _elementwise.pxi)."""

include "_elementwise.pxi"
