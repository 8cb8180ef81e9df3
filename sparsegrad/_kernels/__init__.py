"""Compiled kernels (private).

Hot loops only.  Every function here trusts its inputs: shapes, dtypes,
contiguity and index ranges are checked by the Python layer that calls it.
"""
