"""A NumPy model of the optimizers' mixed-precision updates (float16 and
bfloat16 variables, float32 arithmetic, one rounding per store).

The rounding rules of ``include/sg_mixed.h`` written again with NumPy's
uint32 and float32 arithmetic, and one optimizer step as the float32
optimizer's on upcast copies, each written array then rounded once.
"""

import ml_dtypes
import numpy as np

import sparsegrad as sg
from sparsegrad.training.training_ops import mixed

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
U32 = np.uint32


def mix32(x):
    """The bijective 32-bit hash of sg_mixed.h (uint32 arrays)."""
    x = np.asarray(x, dtype=U32).copy()
    x ^= x >> U32(16)
    x *= U32(0x7FEB352D)
    x ^= x >> U32(15)
    x *= U32(0x846CA68B)
    x ^= x >> U32(16)
    return x


def sr_words(k0, k1, pos):
    """The random word of each position (uint64 array) of stream (k0, k1)."""
    pos = np.asarray(pos, dtype=np.uint64)
    lo = (pos & np.uint64(0xFFFFFFFF)).astype(U32)
    hi = (pos >> np.uint64(32)).astype(U32)
    return mix32(lo ^ U32(k0) ^ mix32(hi ^ U32(k1)))


def round_nearest(x, dtype):
    """float32 values stored in half `dtype` to nearest (as uint16 bits); a
    NaN as sg_half.h stores it (float16: quiet, the top of its payload, as
    F16C; bfloat16: 0x7fc0 with its sign, as ml_dtypes)."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        bits = x.astype(dtype).view(np.uint16)
    if dtype == F16:
        u = x.view(U32)
        nan = (u & U32(0x7FFFFFFF)) > U32(0x7F800000)
        quiet = (((u >> U32(16)) & U32(0x8000)) | U32(0x7E00)
                 | ((u & U32(0x7FFFFF)) >> U32(13)))
        bits = np.where(nan, quiet.astype(np.uint16), bits)
    return bits


def round_stochastic(x, dtype, r):
    """float32 values stored in half `dtype` with random words r (the rule of
    sg_mixed.h): uint16 bits."""
    x = np.asarray(x, dtype=np.float32)
    u = x.view(U32)
    a = u & U32(0x7FFFFFFF)
    special = a >= U32(0x7F800000)
    near = round_nearest(x, dtype).astype(U32)
    if dtype == BF16:
        out = (u + (r & U32(0xFFFF))) >> U32(16)
    else:
        sign = (u >> U32(16)) & U32(0x8000)
        rr = r & U32(0x1FFF)
        with np.errstate(over="ignore"):
            normal = ((a + rr) >> U32(13)) - U32(112 << 10)
        normal = np.where(normal >= 0x7C00, U32(0x7C00), normal)
        small = np.where(a < U32(0x38800000), a, U32(0)).view(np.float32)
        y = small * np.float32(2.0**24)
        whole = y.astype(np.int32).astype(U32)
        d = ((y - whole.astype(np.float32)) * np.float32(8192)).astype(np.int32)
        tiny = whole + ((d.astype(U32) + rr) >> U32(13))
        out = sign | np.where(a >= U32(0x38800000), normal, tiny)
    return np.where(special, near, out).astype(np.uint16)


def store(x, dtype, rounding, stream, positions, salt=0):
    """float32 `x` stored in `dtype` as an update with `rounding` stores it
    (stream `stream`; `positions` the flat positions of x's elements): an
    array of `dtype` (float32 arrays as they are)."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == np.float32:
        return x.copy()
    if rounding.stochastic:
        k0, k1 = mixed.stream_keys(rounding.seed, rounding.step, rounding.variable,
                                   salt)
        bits = round_stochastic(x, dtype, sr_words(k0[stream], k1[stream],
                                                   positions))
    else:
        bits = round_nearest(x, dtype)
    return bits.view(dtype).reshape(x.shape)


def optimizer_step(opt, model, var, grad, variable_index=0):
    """One step of half-variable `var` under `opt`, as the model computes it:
    `model` (an optimizer of the same class and hyper-parameters on a
    float32 Variable that it owns, with the same iteration count) takes
    float32 copies of var and of opt's slots, applies the float32 gradient
    once, and its results are rounded as `opt` stores them.  Returns the
    expected (var, slots) arrays; `opt` itself is not run."""
    var32 = model._model_var
    rounding = (mixed.Rounding(True, opt.seed, opt.iterations_count, variable_index)
                if opt.stochastic_rounding else mixed.NEAREST)
    flat = np.arange(var.numpy().size, dtype=np.uint64)
    start = var.numpy()
    if getattr(opt, "weight_decay", 0):
        # AdamW: the decay of the rows the gradient touches is a store of
        # its own (Keras's decoupled decay is an assignment of its own),
        # with streams of salt 1
        start = _decayed(opt, start, grad, rounding, flat)
    var32.assign(start.astype(np.float32))
    state = opt.get_state(var)
    model_state = model.get_state(var32)
    if state is not None:
        for slot, mslot in zip(state, model_state or ()):
            if slot is not None:
                mslot.assign(slot.numpy().astype(np.float32))
    model._iterations.assign(opt.iterations_count)
    model.apply_gradients([(_upcast(grad), var32)])
    new_var = store(var32.numpy().reshape(-1), var.dtype, rounding, 0, flat)
    slots = []
    mstate = model.get_state(var32)
    order = [f for f in _kernel_order(opt, mstate) if getattr(mstate, f) is not None]
    for field in mstate._fields:
        if getattr(mstate, field) is None:
            continue
        value = getattr(mstate, field).numpy()
        pos = np.arange(value.size, dtype=np.uint64)
        # the streams follow the raw op's slot order (TensorFlow's)
        stream = order.index(field) + 1
        slots.append(store(value.reshape(-1), opt._slot_dtype(var), rounding, stream,
                           pos).reshape(value.shape))
    return new_var.reshape(var.shape), slots


def _kernel_order(opt, state):
    """The slots' fields in the order the optimizer passes them to its raw
    op (where it is not the State's)."""
    if type(opt).__name__ == "RMSprop" and opt.centered:
        return ("mg", "rms", "momentum")
    return state._fields


def model_for(opt, var):
    """A float32 model optimizer for `opt` (same class and config, float32
    variable of var's shape), for :func:`optimizer_step`."""
    config = opt.get_config()
    config.update(slot_dtype=None, stochastic_rounding=False, seed=0)
    if "weight_decay" in config:
        config["weight_decay"] = 0.0        # the model decays on its own
    model = type(opt).from_config(config)
    model._model_var = sg.Variable(var.numpy().astype(np.float32))
    return model


def _decayed(opt, value, grad, rounding, flat):
    """`value` after AdamW's decay of the rows `grad` touches (all for a
    dense one), in float32, rounded once."""
    rows2d = value.reshape(value.shape[0], -1)
    if isinstance(grad, sg.IndexedSlices):
        rows = np.unique(grad.indices.numpy())
    else:
        rows = np.arange(rows2d.shape[0])
    f = rows2d[rows].astype(np.float32)
    wd, lr = np.float32(opt.weight_decay), np.float32(opt.current_learning_rate())
    new = f - (f * wd) * lr
    pos = flat.reshape(rows2d.shape)[rows]
    out = rows2d.copy()
    out[rows] = store(new, value.dtype, rounding, 0, pos, salt=1)
    return out.reshape(value.shape)


def _upcast(grad):
    if isinstance(grad, sg.IndexedSlices):
        return sg.IndexedSlices(grad.values.numpy().astype(np.float32),
                                grad.indices.numpy(), grad.dense_shape)
    return np.asarray(grad).astype(np.float32)
