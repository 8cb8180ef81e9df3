"""Elementwise transcendental kernels, AVX2 build (see _elementwise.pxi).

The same source as ``elementwise``, compiled with -mavx2 by setup.py on x86:
no FMA (-mavx2 does not enable it; -ffp-contract=off), so the same bits with
twice the vector width.
"""

include "_elementwise.pxi"
