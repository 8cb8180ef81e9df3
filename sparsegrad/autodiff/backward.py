"""The backward pass: gradient aggregation and the reverse run of a tape.

:class:`~sparsegrad.GradientTape` (:mod:`.tape`) calls :func:`run_backward`
with the keys of its targets and sources.

* The ops reachable from the targets are found through the tape's
  ``tensor id -> Operation`` map, ordered by op id (a consumer always has a
  larger id than its producers) and run backwards, each through the gradient
  function the registry holds for its type.
* Gradients meeting at one tensor aggregate through :func:`aggregate_gradients`
  (dense + dense adds, sparse + sparse concatenates, sparse + dense
  scatter-adds into a copy of the dense one).
"""

from operator import attrgetter

import numpy as np

from ..errors import FailedPreconditionError, InternalError
from ..framework import indexed_slices, sparse_rows
from ..framework.backend import backend_of
from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, convert_to_tensor, wrap
from ..framework.variable import Variable
from ..ops import array_ops, math_ops
from . import recording as recording_module
from . import registry
from .recording import WATCHED, set_current_gradient_op

__all__ = ["aggregate_gradients", "run_backward"]

# Ops whose missing output gradients stay None instead of being zero-filled.
_NONE_OK = {
    "SoftmaxCrossEntropyWithLogits": (1,),
    "SparseSoftmaxCrossEntropyWithLogits": (1,),
    "FusedBatchNorm": (1, 2, 3, 4),
}

_op_id_key = attrgetter("id")
_FLOAT32 = np.dtype(np.float32)


# -- aggregation ---------------------------------------------------------------

def aggregate_gradients(grads):
    """Sum the gradients that reach one tensor (DESIGN invariant 1).

    Dense + dense adds; IndexedSlices + IndexedSlices concatenates (no
    densifying, no deduplication); dense + IndexedSlices scatter-adds the rows
    into a copy of the dense sum.  While a tape is recording (higher order),
    the sum is built from differentiable ops.  Gradients of several floating
    dtypes (float32 and a half type: a half table read with and without
    ``dtype=float32``) are summed in the widest, float32 at least.

    Parameters
    ----------
    grads : list of Tensor, IndexedSlices or None
        The gradients of one tensor (None entries are skipped).

    Returns
    -------
    Tensor, IndexedSlices or None
        The sum; an IndexedSlices when every gradient is one; None when
        there is none.
    """
    grads = [g for g in grads if g is not None]
    if not grads:
        return None
    if len(grads) == 1:
        return grads[0]
    grads = _in_one_dtype(grads)
    dense = []
    sparse = []
    for g in grads:
        (sparse if isinstance(g, IndexedSlices) else dense).append(g)
    recording = recording_module.is_recording()
    if not sparse:
        if recording:
            return math_ops.add_n(dense)
        xp = backend_of(*(g._value for g in dense)).xp
        out = xp.asarray(xp.add(dense[0]._value, dense[1]._value))
        for g in dense[2:]:
            xp.add(out, g._value, out=out)
        return wrap(out)
    merged = (
        sparse[0]
        if len(sparse) == 1
        else indexed_slices.concat(
            sparse, join_values=_join_rows if recording else None
        )
    )
    if not dense:
        return merged
    if recording:
        total = dense[0] if len(dense) == 1 else math_ops.add_n(dense)
        return array_ops.tensor_scatter_add(total, merged.indices, merged.values)
    xp = backend_of(*(g._value for g in dense), merged.values._value).xp
    out = dense[0]._value.copy()
    for g in dense[1:]:
        xp.add(out, g._value, out=out)
    sparse_rows.scatter_add(
        out, merged.indices._value, xp.ascontiguousarray(merged.values._value)
    )
    return wrap(out)


def _in_one_dtype(grads):
    """The gradients of one tensor in one dtype: contributions of several
    floating dtypes (a half table read in its dtype and, elsewhere, with
    ``dtype=float32``) meet in the widest, float32 at least, so that none is
    rounded."""
    dtypes = {(g.values if isinstance(g, IndexedSlices) else g).dtype for g in grads}
    if len(dtypes) == 1:
        return grads
    wide = max(dtypes, key=attrgetter("itemsize"))
    if wide.itemsize < 4:     # float16 and bfloat16
        wide = _FLOAT32
    out = []
    for g in grads:
        if isinstance(g, IndexedSlices):
            g = IndexedSlices._from_trusted(array_ops.cast(g.values, wide),
                                            g.indices, g.dense_shape)
        else:
            g = array_ops.cast(g, wide)
        out.append(g)
    return out


def _join_rows(values):
    """Differentiable concatenation of the value rows (while a tape records)."""
    return array_ops.concat(values, axis=0)


# -- the backward pass ---------------------------------------------------------


def xp_of(like):
    """The array module of the device `like` (a Tensor or Variable) is on."""
    return backend_of(like._value).xp


def zeros_on(shape, dtype, like):
    """Zeros on the device of `like`."""
    return wrap(xp_of(like).zeros(shape, dtype))


def ones_on(shape, dtype, like):
    """Ones on the device of `like`."""
    return wrap(xp_of(like).ones(shape, dtype))


def tensor_key(x):
    if isinstance(x, Variable):
        return -x._uid
    return x._id


def run_backward(tape, target_keys, target_objs, seeds, source_keys, release):
    """Gradients of the targets w.r.t. each source key (None where unconnected).

    `seeds[i]` is the output gradient of target i (None: ones).  With
    `release`, the recorded ops are dropped as soon as they are used.
    """
    tt = tape.tensor_tape
    tt_get = tt.get
    sources = {k for k in source_keys if k in tt}

    # 1. the ops reachable from the targets (op -> its input keys)
    reachable = {}
    stack = list(target_keys)
    pop = stack.pop
    push = stack.append
    while stack:
        op = tt_get(pop())
        if op is None or op is WATCHED or op in reachable:
            continue
        ids = op.input_ids
        if ids is None:
            ids = op.input_ids = tuple([t._id for t in op.inputs])
        reachable[op] = ids
        for k in ids:
            if k in tt:
                push(k)

    # 2. of those, in recording order, the ops with a path to a source, and
    #    for each the inputs whose gradient nobody needs
    useful = set()
    plan = []
    for op in sorted(reachable, key=_op_id_key):
        ids = reachable[op]
        if len(ids) == 1:
            k = ids[0]
            if k not in sources and tt_get(k) not in useful:
                continue
            skip = ()
        else:
            skip = [
                i
                for i, k in enumerate(ids)
                if k not in sources and tt_get(k) not in useful
            ]
            if len(skip) == len(ids):
                continue
            skip = tuple(skip) if skip else ()
        useful.add(op)
        plan.append((op, ids, skip))
        if op.version is not None and op.version != op.inputs[0]._version:
            var = op.inputs[0]
            raise FailedPreconditionError(
                f"variable '{var.name}' was modified in place after the tape "
                f"recorded a read of it (version {op.version}, now "
                f"{var._version}); the gradient would use the new value. "
                "Compute gradients before updating the variable."
            )
    del reachable, useful

    # 3. seeds
    grads = {}
    for i, k in enumerate(target_keys):
        seed = seeds[i]
        if seed is None:
            producer = tt_get(k)
            if (producer is not None and producer is not WATCHED) or k in source_keys:
                t = target_objs[i]
                seed = ones_on(t.shape, t.dtype, t)
            else:
                continue
        if k in grads:
            grads[k].append(seed)
        else:
            grads[k] = [seed]
    if release:
        tt.clear()

    # 4. reverse recording order
    get_gradient_function = registry.gradient_lookup
    grads_get = grads.get
    grads_pop = grads.pop
    for n in range(len(plan) - 1, -1, -1):
        op, ids, skip = plan[n]
        if release:
            plan[n] = None
        outputs = op.outputs
        if len(outputs) == 1:
            k = outputs[0]._id
            g = grads_get(k) if k in sources else grads_pop(k, None)
            if g is None:
                continue
            if len(g) > 1:
                g[:] = [aggregate_gradients(g)]
            out_grads = (g[0],)
        else:
            out_grads = _output_gradients(op, grads, sources)
            if out_grads is None:
                continue
        set_current_gradient_op(op.type)
        fn = op.grad_fn
        if fn is not None:
            in_grads = fn(*out_grads)
        else:
            fn = get_gradient_function(op.type, _MISSING)
            if fn is None:  # not differentiable
                continue
            if fn is _MISSING:
                registry.get_gradient_function(op.type)  # raises LookupError
            op.skip_input_indices = skip
            in_grads = fn(op, *out_grads)
        if type(in_grads) is not tuple and type(in_grads) is not list:
            in_grads = (in_grads,)
        if len(in_grads) != len(ids):
            raise InternalError(
                f"Recorded operation '{op.type}' returned too "
                f"{'few' if len(in_grads) < len(ids) else 'many'} gradients. "
                f"Expected {len(ids)} but received {len(in_grads)}"
            )
        for i, k in enumerate(ids):
            g = in_grads[i]
            if g is None or (skip and i in skip):
                continue
            if type(g) is not Tensor and not isinstance(g, IndexedSlices):
                g = convert_to_tensor(g)
            pending = grads_get(k)
            if pending is None:
                grads[k] = [g]
            else:
                pending.append(g)

    set_current_gradient_op(None)
    result = []
    for k in source_keys:
        g = grads.get(k)
        if g is None:
            result.append(None)
        else:
            if len(g) > 1:
                g[:] = [aggregate_gradients(g)]
            result.append(g[0])
    return result


_MISSING = object()


def _output_gradients(op, grads, sources):
    """The output gradients of a multi-output op (None if it has none)."""
    out_grads = []
    any_grad = False
    for t in op.outputs:
        k = t._id
        g = grads.get(k) if k in sources else grads.pop(k, None)
        if g is None:
            out_grads.append(None)
            continue
        any_grad = True
        if len(g) > 1:
            g[:] = [aggregate_gradients(g)]
        out_grads.append(g[0])
    if not any_grad:
        return None
    none_ok = _NONE_OK.get(op.type, ())
    for j, t in enumerate(op.outputs):
        if out_grads[j] is None and j not in none_ok:
            out_grads[j] = zeros_on(t.shape, t.dtype, t)
    return out_grads


# -- GradientTape ----------------------------------------------------------------
