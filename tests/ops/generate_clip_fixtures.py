"""Generate tests/ops/data/clip_golden.npz from TensorFlow (run once, by hand).

    /tmp/tfenv/bin/python tests/ops/generate_clip_fixtures.py

Cases for ``clip_by_value``, ``clip_by_norm``, ``global_norm``,
``clip_by_global_norm`` and ``clip_by_average_norm``: the golden cases of
reference/clip_ops.md section 6, the gradient goldens of its sections 1.2,
2.2, 3 and 4 (upstream ones), a few verified edge cases, and random cases
(upstream a fixed random array).  For every case the file stores:

* ``a<k>``: the arrays of the call;
* ``up<k>``: the upstream gradient of output leaf ``k`` (every Tensor
  of the result, and the ``values`` of every IndexedSlices, in order);
* ``out<k>`` (and ``out<k>_indices`` for an IndexedSlices):
  TensorFlow's forward value of leaf ``k``;
* ``grad<k>`` and ``grad<k>_is_none``: the gradient, under
  ``tf.GradientTape`` with those upstreams, w.r.t. the ``k``-th
  differentiable input (floating tensors, and the ``values`` of
  IndexedSlices, in the order they appear in the call);
* ``sg_out<k>``: where sparsegrad deliberately differs from
  TensorFlow (DESIGN.md, "Decisions where TensorFlow is odd"), the value
  sparsegrad must give instead (TensorFlow's own stays in ``out<k>``).

The arrays of a case are stored flat in one float64 member named after the
case (see ``pack``); ``__meta__``, a JSON string, gives per case where each
array lies, its shape and dtype, the function, how to rebuild its arguments,
the structure of the result (dense_shape of IndexedSlices included), the
error TensorFlow raises, and notes.
tests/ops/test_clip_golden.py replays every case with sparsegrad; the case
names and the JSON layout are the contract between the two files.  CI never
installs TensorFlow.
"""

import json
import os

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(2027)
f16, f32, f64 = np.float16, np.float32, np.float64

FUNCTIONS = {
    "clip_by_value": tf.clip_by_value,
    "clip_by_norm": tf.clip_by_norm,
    "global_norm": tf.linalg.global_norm,
    "clip_by_global_norm": tf.clip_by_global_norm,
    "clip_by_average_norm": tf.compat.v1.clip_by_average_norm,
}

# -- argument builders (JSON-able descriptions; arrays stay numpy here) --------


def T(x, dtype=f32):
    """A tensor argument (watched when floating)."""
    return {"kind": "tensor", "array": np.asarray(x, dtype)}


def A(x, dtype=f32):
    """A plain numpy array argument (converted by the op, not watched)."""
    return {"kind": "array", "array": np.asarray(x, dtype)}


def P(x):
    """A (nested) Python list or scalar, passed as is."""
    return {"kind": "python", "value": x}


def IS(values, indices, dense_shape=None, dtype=f32):
    """An IndexedSlices; its values are watched.  dense_shape None, or a list."""
    return {
        "kind": "indexed_slices",
        "array": np.asarray(values, dtype),
        "indices": np.asarray(indices, np.int64),
        "dense_shape": None if dense_shape is None else list(dense_shape),
    }


def L(*items):
    return {"kind": "list", "items": list(items)}


def TUP(*items):
    return {"kind": "tuple", "items": list(items)}


NONE = {"kind": "none"}


def r(*shape, dtype=f32):
    return rng.standard_normal(shape).astype(dtype)


def unique_ids(n, n_rows):
    return np.sort(rng.choice(n_rows, size=n, replace=False)).astype(np.int64)


CASES = {}


def case(name, fn, *args, upstream="random", note=None, sg_out=None, **kwargs):
    """Register a case.  ``upstream``: "random", "ones", or one entry per
    output leaf ("random" / "ones" / "zeros").  ``sg_out``: {leaf: value}
    where sparsegrad deliberately differs (``note`` says why)."""
    assert name not in CASES, name
    CASES[name] = dict(
        fn=fn, args=list(args), kwargs=kwargs, upstream=upstream, note=note,
        sg_out=sg_out,
    )


X0 = [[-3.0, 0.0, 0.0], [4.0, 0.0, 0.0]]
X0_DIM = [[-3.0, 0.0, 0.0], [4.0, 0.0, 3.0]]
G0 = [[-2.0, 0.0, 0.0], [4.0, 0.0, 0.0]]  # with G1 global norm 5
G1 = [1.0, -2.0]
IS3 = [[[-3.0, 0.0, 0.0], [4.0, 0.0, 0.0]], [[0.0, 2.0, 0.0], [0.0, 0.0, -1.0]]]
INT_LIKE = {
    "float16": f16, "float32": f32, "float64": f64, "int16": np.int16,
    "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
}

# ---------------------------------------------------------------------------
# 6.1 tensorflow/python/kernel_tests/math_ops/clip_ops_test.py

case("value_gradient_scalar_bounds", "clip_by_value",
     T([1, 2, 3, 4]), T(0.5), T(3.5))
case("value_gradient_vector_bounds", "clip_by_value",
     T([1, 2, 3, 4]), T([0.5] * 4), T([3.5] * 4))
case("value_basic", "clip_by_value", T([[-5, 2, 3], [4, 5, 6]]), P(-4.4), P(4.4))
for dt_name, dt in INT_LIKE.items():
    x = [[1, 2, 3], [4, 5, 6]]
    case(f"value_0type_{dt_name}", "clip_by_value", T(x, dt), P(2), P(4))
    case(f"value_1type_{dt_name}", "clip_by_value",
         T(x, dt), T([[2, 2, 2], [3, 3, 3]], dt), P(4))
    case(f"value_2type_{dt_name}", "clip_by_value",
         T(x, dt), P(4), T([[6, 6, 6], [6, 6, 6]], dt))
    case(f"value_3type_{dt_name}", "clip_by_value",
         T(x, dt), T([[2, 2, 2], [5, 5, 5]], dt), T([[5, 5, 5], [7, 7, 7]], dt))
_bad = np.array([-5, 2, 3, 4, 5, 6], f32).reshape(2, 3, 1)
case("value_bad_shape", "clip_by_value", T(_bad), T([-1, -2]), T([1, 2]))
case("value_bad_shape_scalar_min", "clip_by_value", T(_bad), P(1.0), T([1, 2]))
case("value_nonfinite", "clip_by_value", T([np.nan, np.inf, -np.inf]), P(-4), P(4))
for suffix, lo, hi in (("m2_2", -2, 2), ("1_2", 1, 2), ("m2_m1", -2, -1)):
    case(f"value_indexed_slices_{suffix}", "clip_by_value",
         IS(IS3, [2, 6], [10, 2, 3]), P(lo), P(hi))
case("norm_clipped", "clip_by_norm", T(X0), P(4.0))
case("norm_bad_shape", "clip_by_norm", T(_bad), T([1.0, 2.0]))
case("norm_not_clipped", "clip_by_norm", T(X0), P(6.0))
case("norm_zero", "clip_by_norm", T(np.zeros((2, 3))), P(6.0))
case("norm_dim0", "clip_by_norm", T(X0_DIM), P(4.0), axes=[0])
case("norm_dim1", "clip_by_norm", T(X0_DIM), P(4.0), axes=[1])
case("norm_not_clipped_axes", "clip_by_norm", T(X0_DIM), P(6.0), axes=[1])
case("global_clipped", "clip_by_global_norm", L(T(G0), T(G1)), P(4.0))
case("global_clipped_tensor", "clip_by_global_norm", L(T(G0), T(G1)), T(4.0))
case("global_supports_none", "clip_by_global_norm",
     TUP(T(G0), NONE, T(G1), NONE), P(4.0))
case("global_indexed_slices", "clip_by_global_norm",
     L(T(G0), IS(G1, [3, 4])), P(4.0))
case("global_preserves_dense_shape", "clip_by_global_norm",
     L(IS([1.0], [0], [1])), P(1.0))
case("global_not_clipped", "clip_by_global_norm", L(T(G0), T(G1)), P(6.0))
case("global_zero", "clip_by_global_norm",
     L(T(np.zeros((2, 3))), T(np.zeros(2))), P(6.0),
     note="gradient NaN at an all-zero list (use_norm - use_norm, 1/use_norm)")
case("global_inf", "clip_by_global_norm",
     L(T([[-2, 0, np.inf], [4, 0, 0]]), T(G1)), P(6.0))
case("average_clipped", "clip_by_average_norm", T(X0), P(0.8))
case("average_clipped_tensor", "clip_by_average_norm", T(X0), T(0.8))
case("average_not_clipped", "clip_by_average_norm", T(X0), P(0.9))
case("average_zero", "clip_by_average_norm", T(np.zeros((2, 3))), P(0.9))
# testClipByAverageNormReplacedWithClipByNorm: equals average_clipped.
case("average_as_clip_by_norm", "clip_by_norm", T(X0), T(0.8 * 6))
for suffix, lo, hi in (("tt", "t", "t"), ("11", 1, 1), ("t1", "t", 1), ("1t", 1, "t")):
    empty = np.zeros((7, 0), f32)
    case(f"value_empty_{suffix}", "clip_by_value", T(empty),
         T(empty) if lo == "t" else P(lo), T(empty) if hi == "t" else P(hi))

# ---------------------------------------------------------------------------
# 6.2 tensorflow/python/ops/clip_ops_test.py

case("norm_zero_clip4", "clip_by_norm", T(np.zeros((2, 3))), P(4.0))
for suffix, axes in (("none", None), ("0", 0), ("1", 1), ("01", [0, 1]),
                     ("02", [0, 2]), ("12", [1, 2]), ("012", [0, 1, 2])):
    case(f"norm_indexed_slices_axes_{suffix}", "clip_by_norm",
         IS(IS3, [2, 6], [10, 2, 3]), P(4.0), axes=axes)

# ---------------------------------------------------------------------------
# 6.3 extra verified cases

case("value_extra_int_bounds", "clip_by_value",
     T([[-10, -1, 0], [0, 2, 10]]), P(-1), P(1))
case("value_extra_column_min", "clip_by_value",
     T([[-1, 0, 10], [-1, 0, 10]]), T([[2], [1]]), P(100))
case("value_extra_incompatible", "clip_by_value",
     T([[-1, 0, 10], [-1, 0, 10]]), T([[[2, 1]]]), P(100))
case("value_extra_int_float_bounds", "clip_by_value",
     T([[1, 2], [3, 4]], np.int32), P(-3.1), P(3.1))
case("norm_extra_row", "clip_by_norm", T([[1, 2, 3, 4, 5]]), P(2.0))
case("norm_indexed_slices_repeated", "clip_by_norm",
     IS([[3.0], [4.0]], [0, 0], [2, 1]), P(4.0),
     note="sparsegrad: norm of the represented tensor [[7], [0]], 7, not of "
          "the raw values (5)",
     sg_out={0: np.array([[3 * 4 / 7], [4 * 4 / 7]], f32)})
case("global_norm_extra_none", "global_norm", L(NONE, T([3, 4]), NONE))
case("global_norm_empty", "global_norm", L())
case("global_norm_all_none", "global_norm", L(NONE, NONE))
case("global_extra_float64", "clip_by_global_norm", L(T([3, 4], f64)), P(1.0))
case("global_extra_float16", "clip_by_global_norm", L(T([3, 4], f16)), P(1.0))
case("global_extra_use_norm_float64", "clip_by_global_norm",
     L(T([3, 4])), P(1.0), use_norm=T(10.0, f64))
case("average_extra_indexed_slices", "clip_by_average_norm",
     IS([[3.0], [4.0]], [0, 1], [2, 1]), P(0.5))

# ---------------------------------------------------------------------------
# 1.2 clip_by_value gradients (upstream ones)

case("value_grad_scalar_bounds", "clip_by_value",
     T([0, 1, 2, 3, 4]), T(1.0), T(3.0), upstream="ones")
case("value_grad_vector_bounds", "clip_by_value",
     T([0, 1, 2, 3, 4]), T([1.0] * 5), T([3.0] * 5), upstream="ones")
case("value_grad_ties", "clip_by_value", T([0, 2, 4]), T(2.0), T(2.0),
     upstream="ones")
case("value_grad_jacobian_diag", "clip_by_value",
     T([1, 2, 3, 4]), T(0.5), T(3.5), upstream="ones")
case("value_grad_nan", "clip_by_value", T([np.nan, 1]), T(0.0), T(0.5),
     upstream="ones")
case("value_grad_min_above_max", "clip_by_value", T([1, 5, 10]), T(6.0), T(4.0),
     upstream="ones")

# 2.1 / 2.2 clip_by_norm edge cases and gradients (upstream ones)

case("norm_grad_zeros", "clip_by_norm", T(np.zeros(3)), T(1.0), upstream="ones")
case("norm_grad_not_clipped", "clip_by_norm", T([1, 0]), T(2.0), upstream="ones")
case("norm_grad_not_clipped_dc", "clip_by_norm", T([3, 4]), T(10.0),
     upstream="ones")
case("norm_grad_clipped", "clip_by_norm", T([3, 4]), T(1.0), upstream="ones")
case("norm_grad_boundary", "clip_by_norm", T([3, 4]), T(5.0), upstream="ones")
case("norm_negative_clip", "clip_by_norm", T(X0_DIM), P(-1.0))
case("norm_negative_clip_tensor", "clip_by_norm", T(X0_DIM), T(-1.0))
case("norm_clip_zero", "clip_by_norm", T(X0_DIM), P(0.0))
case("norm_inf", "clip_by_norm", T([np.inf, 1]), P(1.0))
case("norm_nan_row", "clip_by_norm", T([[np.nan, 1], [2, 3]]), P(1.0), axes=1)
case("norm_empty", "clip_by_norm", T(np.zeros((0, 3))), P(1.0))
case("norm_zero_clip_zero", "clip_by_norm", T(np.zeros(3)), P(0.0),
     note="TensorFlow 0/0 = NaN; sparsegrad gives zeros (DESIGN.md)",
     sg_out={0: np.zeros(3, f32)})
case("norm_int_error", "clip_by_norm", T([3, 4], np.int32), P(1.0))
case("norm_clip_tensor_cast", "clip_by_norm", T([[3, 4], [0.5, 0.5]], f64),
     T(2.0, f32), axes=1)

# 3 global_norm

case("global_norm_grad", "global_norm", L(T(r(3, 4)), T(r(5))))
case("global_norm_grad_zero", "global_norm", L(T(np.zeros(3))),
     note="gradient 0/0 = NaN")
case("global_norm_overflow", "global_norm", L(T([3e20, 4e20])),
     note="sparsegrad accumulates the squares of float32 input in float64 (the "
          "clip-ops issue): 5e20, where TF's float32 squares overflow to inf",
     sg_out={0: np.array(5e20, f32)})
case("global_norm_inf", "global_norm", L(T([1.0, np.inf]), T([2.0])))
case("global_norm_nan", "global_norm", L(T([1.0, np.nan]), T([2.0])))
case("global_norm_indexed_slices_repeated", "global_norm",
     L(IS([[3.0], [4.0]], [0, 0], [2, 1])),
     note="sparsegrad: norm of the represented tensor (7), TensorFlow squares "
          "the raw values (5)",
     sg_out={0: np.array(7.0, f32)})
case("global_norm_float16", "global_norm", L(T([3, 4], f16), T([12], f16)))
case("global_norm_float64", "global_norm", L(T([3, 4], f64), T([12], f64)))
case("global_norm_mixed_dtypes", "global_norm", L(T([3, 4]), T([12], f64)))
case("global_norm_nested_list", "global_norm", L(P([[3.0, 4.0]])),
     note="sparsegrad converts Python floats by NumPy's rules (float64), "
          "TensorFlow to float32",
     sg_out={0: np.array(5.0, f64)})
case("global_norm_tuple", "global_norm", TUP(T([3, 4]), T([12])))
case("global_norm_tensor_arg", "global_norm", T([3, 4]))
case("global_norm_string_arg", "global_norm", P("abc"))

# 4 clip_by_global_norm

case("global_grad_golden", "clip_by_global_norm",
     L(T([3, 4]), T([0, 12])), P(1.0), upstream=["ones", "ones", "zeros"])
for suffix, clip in (("4", 4.0), ("6", 6.0), ("0", 0.0), ("neg1", -1.0),
                     ("inf", np.inf)):
    case(f"global_edge_clip_{suffix}", "clip_by_global_norm",
         L(T(G0), T(G1)), P(clip))
    case(f"global_edge_clip_{suffix}_tensor", "clip_by_global_norm",
         L(T(G0), T(G1)), T(clip))
case("global_edge_use_norm_0", "clip_by_global_norm",
     L(T(G0), T(G1)), P(4.0), use_norm=T(0.0))
case("global_edge_use_norm_8", "clip_by_global_norm",
     L(T(G0), T(G1)), P(4.0), use_norm=T(8.0))
case("global_clip_dtype_mismatch", "clip_by_global_norm",
     L(T(G0), T(G1)), T(4.0, f64))
case("global_mixed_dtypes", "clip_by_global_norm", L(T(G0), T(G1, f64)), P(4.0))
case("global_numpy_arrays", "clip_by_global_norm", L(A(G0), A(G1, f64)), P(4.0),
     use_norm=T(5.0))
case("global_numpy_arrays_computed_norm", "clip_by_global_norm",
     L(A(G0, f64), A(G1, f64)), P(4.0))
case("global_indexed_slices_repeated", "clip_by_global_norm",
     L(IS([[3.0], [4.0]], [0, 0], [2, 1]), T([0.0])), P(1.0),
     note="sparsegrad: the norm of the represented tensor (7), not 5",
     sg_out={0: np.array([[3 / 7], [4 / 7]], f32), 2: np.array(7.0, f32)})

# ---------------------------------------------------------------------------
# Random cases (upstream random)

for dt_name, dt in (("float32", f32), ("float64", f64)):
    lo = -np.abs(r(4, 1, dtype=dt)) - 0.2
    hi = np.abs(r(5, dtype=dt)) + 0.2
    case(f"value_random_broadcast_{dt_name}", "clip_by_value",
         T(r(3, 4, 5, dtype=dt), dt), T(lo, dt), T(hi, dt))
    case(f"value_random_broadcast_python_bounds_{dt_name}", "clip_by_value",
         T(r(3, 4, 5, dtype=dt), dt), P(-0.5), T(hi, dt))
    case(f"value_random_indexed_slices_{dt_name}", "clip_by_value",
         IS(r(4, 5, dtype=dt), unique_ids(4, 9), [9, 5], dt), T(lo[:1, 0], dt),
         T(hi, dt))
    x3 = r(3, 4, 5, dtype=dt)
    for suffix, axes in (("none", None), ("1", 1), ("02", [0, 2]), ("neg1", -1),
                         ("neg13", [-1, -3])):
        case(f"norm_random_axes_{suffix}_{dt_name}", "clip_by_norm",
             T(x3, dt), T(2.5, dt), axes=axes)
    case(f"norm_random_python_clip_{dt_name}", "clip_by_norm",
         T(x3, dt), P(2.5), axes=[1])
    case(f"norm_random_indexed_slices_{dt_name}", "clip_by_norm",
         IS(r(5, 2, 3, dtype=dt), unique_ids(5, 20), [20, 2, 3], dt), T(1.5, dt),
         axes=[1, 2])

    def mixed_list(dt=dt, inf=False):
        d0 = r(3, 4, dtype=dt)
        if inf:
            d0[1, 2] = np.inf
        return L(
            T(d0, dt),
            IS(r(4, 3, dtype=dt), unique_ids(4, 10), [10, 3], dt),
            T(r(5, dtype=dt), dt),
            IS(r(2, 2, 2, dtype=dt), unique_ids(2, 5), [5, 2, 2], dt),
            IS(r(3, 2, dtype=dt), unique_ids(3, 7), None, dt),
        )

    case(f"global_norm_random_mixed_{dt_name}", "global_norm", mixed_list())
    case(f"global_random_clipped_{dt_name}", "clip_by_global_norm",
         mixed_list(), T(1.0, dt))
    case(f"global_random_not_clipped_{dt_name}", "clip_by_global_norm",
         mixed_list(), T(100.0, dt))
    case(f"global_random_python_clip_{dt_name}", "clip_by_global_norm",
         mixed_list(), P(1.0))
    case(f"global_random_use_norm_{dt_name}", "clip_by_global_norm",
         mixed_list(), T(1.5, dt), use_norm=T(3.0, dt))
    case(f"global_random_inf_{dt_name}", "clip_by_global_norm",
         mixed_list(inf=True), T(1.0, dt))


# -- running a case -------------------------------------------------------------


def build(arg, sources):
    """The TF argument for `arg`, appending watched tensors to `sources`."""
    kind = arg["kind"]
    if kind == "tensor":
        t = tf.constant(arg["array"])
        if t.dtype.is_floating:
            sources.append(t)
        return t
    if kind == "array":
        return arg["array"]
    if kind == "python":
        return arg["value"]
    if kind == "none":
        return None
    if kind == "indexed_slices":
        values = tf.constant(arg["array"])
        sources.append(values)
        shape = arg["dense_shape"]
        return tf.IndexedSlices(
            values,
            tf.constant(arg["indices"]),
            None if shape is None else tf.constant(shape, tf.int64),
        )
    items = [build(item, sources) for item in arg["items"]]
    return items if kind == "list" else tuple(items)


def leaves(result, out):
    """Flatten a result into its Tensor leaves, returning its JSON structure."""
    if result is None:
        return {"kind": "none"}
    if isinstance(result, tf.IndexedSlices):
        shape = result.dense_shape
        out.append(result)
        return {
            "kind": "indexed_slices",
            "leaf": len(out) - 1,
            "dense_shape": None if shape is None else np.asarray(shape).tolist(),
        }
    if isinstance(result, (list, tuple)):
        return {
            "kind": "list" if isinstance(result, list) else "tuple",
            "items": [leaves(item, out) for item in result],
        }
    out.append(result)
    return {"kind": "tensor", "leaf": len(out) - 1}


def describe(arg, name, data, counter):
    """JSON description of `arg`; its arrays go into `data`."""
    kind = arg["kind"]
    if kind in ("tensor", "array", "indexed_slices"):
        key = f"{name}/a{counter[0]}"
        counter[0] += 1
        data[key] = arg["array"]
        desc = {"kind": kind, "key": key}
        if kind == "indexed_slices":
            data[key + "_indices"] = arg["indices"]
            desc["dense_shape"] = arg["dense_shape"]
        return desc
    if kind in ("list", "tuple"):
        return {
            "kind": kind,
            "items": [describe(item, name, data, counter) for item in arg["items"]],
        }
    return dict(arg)


def upstream_for(spec, k, leaf_value):
    kinds = spec["upstream"]
    kind = kinds[k] if isinstance(kinds, list) else kinds
    shape, dtype = leaf_value.shape, leaf_value.dtype.as_numpy_dtype
    if kind == "ones":
        return np.ones(shape, dtype)
    if kind == "zeros":
        return np.zeros(shape, dtype)
    return rng.standard_normal(shape).astype(dtype)


def run_case(name, spec, data):
    counter = [0]
    meta = {
        "fn": spec["fn"],
        "args": [describe(a, name, data, counter) for a in spec["args"]],
        "kwargs": {},
        "note": spec["note"],
    }
    for key, value in spec["kwargs"].items():
        if isinstance(value, dict) and "kind" in value:
            meta["kwargs"][key] = {"arg": describe(value, name, data, counter)}
        else:
            meta["kwargs"][key] = {"value": value}
    fn = FUNCTIONS[spec["fn"]]
    sources = []
    with tf.GradientTape() as tape:
        args = [build(a, sources) for a in spec["args"]]
        kwargs = {
            k: build(v, sources) if isinstance(v, dict) and "kind" in v else v
            for k, v in spec["kwargs"].items()
        }
        tape.watch(sources)
        try:
            result = fn(*args, **kwargs)
        except (TypeError, ValueError, tf.errors.OpError) as e:
            meta["error"] = {"type": type(e).__name__, "message": str(e)[:300]}
            return meta
    out = []
    meta["result"] = leaves(result, out)
    targets = [leaf.values if isinstance(leaf, tf.IndexedSlices) else leaf
               for leaf in out]
    ups = [upstream_for(spec, k, t) for k, t in enumerate(targets)]
    for k, (leaf, t, up) in enumerate(zip(out, targets, ups)):
        data[f"{name}/out{k}"] = t.numpy()
        data[f"{name}/up{k}"] = up
        if isinstance(leaf, tf.IndexedSlices):
            data[f"{name}/out{k}_indices"] = leaf.indices.numpy()
    for k, value in (spec["sg_out"] or {}).items():
        data[f"{name}/sg_out{k}"] = value
    meta["n_sources"] = len(sources)
    if sources and targets:
        grads = tape.gradient(
            targets, sources, output_gradients=[tf.constant(u) for u in ups]
        )
        for k, g in enumerate(grads):
            data[f"{name}/grad{k}"] = (
                np.zeros(0) if g is None else tf.convert_to_tensor(g).numpy()
            )
            data[f"{name}/grad{k}_is_none"] = np.array(g is None)
    return meta


def pack(name, data, meta):
    """One float64 array per case (every stored dtype, int64 indices and bools
    included, converts to float64 exactly; NaN, inf and -0.0 survive): a
    thousand small npz members would cost ~250 bytes of headers each.
    ``meta["arrays"]`` maps each key to [offset, shape, dtype]."""
    keys = sorted(k for k in data if k.startswith(name + "/"))
    layout, chunks, offset = {}, [], 0
    for key in keys:
        array = np.asarray(data.pop(key))
        flat = array.astype(np.float64).ravel()
        assert np.array_equal(flat.astype(array.dtype), array.ravel(), equal_nan=True)
        layout[key[len(name) + 1:]] = [offset, list(array.shape), array.dtype.str]
        chunks.append(flat)
        offset += flat.size
    meta["arrays"] = layout
    return np.concatenate(chunks) if chunks else np.zeros(0)


def main():
    tf.get_logger().setLevel("ERROR")
    data, meta, packed = {}, {}, {}
    for name, spec in CASES.items():
        meta[name] = run_case(name, spec, data)
        packed[name] = pack(name, data, meta[name])
    assert not data
    packed["__meta__"] = np.array(json.dumps(meta, sort_keys=True))
    path = os.path.join(os.path.dirname(__file__), "data", "clip_golden.npz")
    np.savez_compressed(path, **packed)
    print(
        f"wrote {len(CASES)} cases ({sum('error' in m for m in meta.values())} "
        f"errors) to {path}, {os.path.getsize(path)} bytes "
        f"(TensorFlow {tf.__version__})"
    )


if __name__ == "__main__":
    main()
