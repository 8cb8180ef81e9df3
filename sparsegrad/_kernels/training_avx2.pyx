"""Training kernels, AVX2 build (see _training.pxi.tp).

The same source as ``training``, compiled with -mavx2 by setup.py on x86: no
FMA (-mavx2 does not enable it; -ffp-contract=off), so the same bits with
twice the vector width.
"""

include "_training.pxi"
