"""The elementwise comparisons: bool Tensors, no gradient."""

import numpy as np

from .broadcasting import binary_doc, binary_op

__all__ = [
    "equal",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "not_equal",
]


def _comparison(ufunc, op_name, symbol, args, result):
    summary = f"Elementwise ``x {symbol} y``, a bool Tensor (no gradient)."
    doc = binary_doc(op_name, summary, args, result,
                     returns="bool, of the broadcast shape.")
    return binary_op(ufunc, None, op_name, doc)


equal = _comparison(np.equal, "equal", "==", "[1.0, 2.0], 2.0",
                    "array([False,  True])")
not_equal = _comparison(np.not_equal, "not_equal", "!=", "[1.0, 2.0], 2.0",
                        "array([ True, False])")
less = _comparison(np.less, "less", "<", "[1.0, 2.0], 2.0",
                   "array([ True, False])")
less_equal = _comparison(np.less_equal, "less_equal", "<=", "[1.0, 3.0], 2.0",
                         "array([ True, False])")
greater = _comparison(np.greater, "greater", ">", "[1.0, 3.0], 2.0",
                      "array([False,  True])")
greater_equal = _comparison(np.greater_equal, "greater_equal", ">=",
                            "[1.0, 2.0], 2.0", "array([False,  True])")
