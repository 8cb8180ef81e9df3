"""Evaluate a ported case and encode its outcome (TensorFlow or sparsegrad).

An outcome is a dict of NumPy arrays, the same for both libraries:

* ``kind``: "ragged", "dense", "python" or "error";
* ragged: ``dtype``, ``flat_values`` and ``splits_<k>`` for each level
  (with ``splits_dtype``);
* dense: ``dtype`` and ``values``;
* python (lists, shapes, ints, bools): ``text``, the value's repr after
  shapes became lists;
* error: ``error``, the class name (``InvalidArgumentError``, ``ValueError``,
  ``TypeError``, ...), and ``raised``, the exception itself (not stored).
"""

import types

import numpy as np


def _namespace(**names):
    return types.SimpleNamespace(**names)


_SEGMENTS = ("sum", "prod", "min", "max", "mean", "sqrt_n")
# elementwise ops at the top level and in tf.math (cases_elementwise.py)
_ELEMENTWISE = (
    "abs", "add", "add_n", "cast", "ceil", "divide", "divide_no_nan", "equal",
    "exp", "expm1", "floor", "floordiv", "floormod", "greater", "greater_equal",
    "identity", "is_finite", "is_inf", "is_nan", "less", "less_equal", "log",
    "log1p", "logical_and", "logical_not", "logical_or", "logical_xor",
    "maximum", "minimum", "multiply", "negative", "not_equal", "ones_like",
    "pow", "reciprocal", "rint", "round", "rsqrt", "sigmoid", "sign", "sqrt",
    "square", "squared_difference", "subtract", "tanh", "truediv",
    "truncatediv", "truncatemod", "where", "zeros_like",
)
_REDUCTIONS = ("sum", "prod", "min", "max", "mean", "variance", "std", "all", "any")


def shim():
    """sparsegrad under the TensorFlow names the ported cases use (imported
    here: the generator runs where only TensorFlow is installed)."""
    import sparsegrad as sg

    return _namespace(
        int32=np.int32, int64=np.int64, float16=np.float16, float32=np.float32,
        float64=np.float64, bool=np.bool_, int8=np.int8, int16=np.int16,
        uint8=np.uint8,
        constant=sg.constant,
        newaxis=None, expand_dims=sg.expand_dims,
        RaggedTensor=sg.RaggedTensor,
        GradientTape=sg.GradientTape, custom_gradient=sg.custom_gradient,
        gather=sg.gather,
        nn=_namespace(embedding_lookup_sparse=sg.nn.embedding_lookup_sparse,
                      safe_embedding_lookup_sparse=sg.nn.safe_embedding_lookup_sparse),
        ragged=_namespace(
            constant=sg.ragged.constant, range=sg.ragged.range,
        ),
        **{f"reduce_{k}": getattr(sg, f"reduce_{k}") for k in _REDUCTIONS},
        **{k: getattr(sg, k) for k in _ELEMENTWISE},
        math=_namespace(
            **{k: getattr(sg, k) for k in _ELEMENTWISE},
            **{f"reduce_{k}": getattr(sg.math, f"reduce_{k}") for k in _REDUCTIONS},
            **{f"{u}segment_{k}": getattr(sg.math, f"{u}segment_{k}")
               for u in ("", "unsorted_") for k in _SEGMENTS}),
    )


def _is_ragged(value):
    return hasattr(value, "flat_values") and hasattr(value, "nested_row_splits")


def _as_numpy(value):
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def _plain(value):
    """Shapes as lists, tuples as lists, NumPy scalars as Python ones."""
    if hasattr(value, "as_list"):       # a TensorShape
        try:
            return value.as_list()
        except ValueError:              # unknown rank
            return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode()
    return value


def encode(value):
    """The outcome of a case that returned `value`."""
    if _is_ragged(value):
        out = {"kind": "ragged", "dtype": str(np.dtype(_dtype(value.flat_values))),
               "flat_values": _as_numpy(value.flat_values)}
        splits = [_as_numpy(s) for s in value.nested_row_splits]
        for k, s in enumerate(splits):
            out[f"splits_{k}"] = s
        out["splits_dtype"] = str(splits[0].dtype)
        return {k: np.asarray(v) for k, v in out.items()}
    if hasattr(value, "numpy") or isinstance(value, np.ndarray):
        array = np.asarray(_as_numpy(value))   # a scalar's numpy() is no ndarray
        return {"kind": np.asarray("dense"), "dtype": np.asarray(str(array.dtype)),
                "values": array}
    return {"kind": np.asarray("python"), "text": np.asarray(repr(_plain(value)))}


def _dtype(values):
    dtype = values.dtype
    return getattr(dtype, "as_numpy_dtype", dtype)


def run(code, tf):
    """Evaluate `code` with `tf` bound to a library; its encoded outcome.
    `code` is an expression, or statements (several lines) that assign the
    outcome to ``result`` (a ``with tf.GradientTape() as tape:`` block...)."""
    names = {"tf": tf, "np": np}
    try:
        if "\n" in code.strip():
            exec(code, names)
            value = names["result"]
        else:
            value = eval(code, names)
    except Exception as e:
        return {"kind": np.asarray("error"), "error": np.asarray(type(e).__name__),
                "raised": e}
    return encode(value)
