"""Elementwise transcendental kernels, baseline build (see _elementwise.pxi)."""

include "_elementwise.pxi"
