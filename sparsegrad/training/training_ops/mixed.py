"""Mixed precision: the optimizers' updates of half-precision variables.

A float16 or bfloat16 variable trained by a Keras-style optimizer is updated
with float32 arithmetic and rounded once when it is stored: its values (and
those of half slots) are read into float32, the float32 op runs (the
float32 kernels' own element functions, hyper-parameters rounded to
float32), and each result is stored back rounded to the variable's type, to
nearest (ties to even) or stochastically.  Slots are float32, or the
variable's half type.  So an update is bit for bit the float32 op on upcast
arrays followed by one rounding of each array it writes: the tests' NumPy
model.

Stochastic rounding draws one random word per stored element from a
counter-based stream: a hash of the element's flat position in its array
and of a key that :func:`stream_keys` derives from the seed, the step, the
variable's index in its optimizer and the array (var, or slot 1 to 3).  The
bits depend on nothing else: not on the thread count, the CPU, or the device.
``include/sg_mixed.h`` states the rounding rule.

The host kernels are ``mixed_dense``, ``mixed_sparse`` (coalesced on
groups) and ``mixed_dense_rowwise`` of ``sparsegrad._kernels.training_half``;
Lamb, whose norms span whole rows or the whole variable, runs the float32
Lamb kernel on float32 copies of the touched rows between
``mixed_load_rows`` and ``mixed_store_rows``.
"""

from typing import NamedTuple

import numpy as np

from ...errors import InvalidArgumentError
from ...framework import sparse_rows
from ...framework.backend import backend_of
from ...framework.dtypes import BFLOAT16, is_half
from ...framework.threads import get_num_threads

__all__ = ["Rounding", "NEAREST", "stream_keys", "check_seed", "run",
           "through_copies", "update_rows", "THROUGH_COPIES", "MATH_DTYPE"]

#: The arithmetic of every mixed-precision update.
MATH_DTYPE = np.dtype(np.float32)
_MASK64 = (1 << 64) - 1
_UINT16 = np.dtype(np.uint16)


def _splitmix64(z):
    """One step of SplitMix64's output function on a 64-bit integer."""
    z = (z + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def check_seed(seed):
    """`seed` as an int in [0, 2**64), or InvalidArgumentError naming it."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InvalidArgumentError(
            f"seed must be an int in [0, 2**64), got {seed!r}")
    seed = int(seed)
    if not 0 <= seed <= _MASK64:
        raise InvalidArgumentError(f"seed must be an int in [0, 2**64), got {seed}")
    return seed


def stream_keys(seed, step, variable, salt=0):
    """The keys of the four random streams of one update: ``(k0, k1)``, two
    uint32 arrays of 4 (stream 0: var; 1..3: the slots), from the seed, the
    step (the optimizer's iteration count), the variable's index among
    the optimizer's variables, and `salt` (0 for the update itself; another
    value for a second store of the same step, e.g. AdamW's decay).

    Examples
    --------
    >>> k0, k1 = stream_keys(0, 0, 0)
    >>> k0.dtype, k0.shape
    (dtype('uint32'), (4,))
    """
    base = _splitmix64(_splitmix64(_splitmix64(seed) ^ (step & _MASK64))
                       ^ (variable & _MASK64))
    base = _splitmix64(base ^ salt)
    words = [_splitmix64(base + stream) for stream in range(4)]
    k0 = np.array([w & 0xFFFFFFFF for w in words], dtype=np.uint32)
    k1 = np.array([w >> 32 for w in words], dtype=np.uint32)
    return k0, k1


class Rounding(NamedTuple):
    """How one mixed-precision update stores: to nearest, or stochastically
    with the streams of (seed, step, variable) (:func:`stream_keys`)."""

    stochastic: bool = False
    seed: int = 0
    step: int = 0
    variable: int = 0

    def mode(self, dtype, salt=0):
        """The kernels' ``mode`` array for a variable of half `dtype`."""
        mode = np.zeros(10, dtype=np.uint32)
        mode[0] = dtype == BFLOAT16
        if self.stochastic:
            mode[1] = 1
            mode[2:6], mode[6:10] = stream_keys(self.seed, self.step,
                                                self.variable, salt)
        return mode


#: Rounding to nearest: what an optimizer does unless asked otherwise.
NEAREST = Rounding()


def _bits(array):
    """A half array's bits (the kernels take ``uint16``); float32 as it is."""
    return array.view(_UINT16) if is_half(array.dtype) else array


def run(prepared, use_locking, rounding):
    """Run the checked call `prepared` (a ``Prepared`` of the spec layer,
    whose var is half and whose hyper-parameters are float32's) as a
    mixed-precision update with `rounding`; sparse updates coalesce.

    On the host the ops run the fused kernels (``mixed_dense``,
    ``mixed_sparse``, ``mixed_dense_rowwise``), Lamb :func:`through_copies`;
    on the GPU every op runs through copies, with the same bits."""
    spec, var, be = prepared.spec, prepared.var, prepared.be
    if not var.size or (spec.sparse and not prepared.indices.shape[0]):
        return
    if be.on_gpu or spec.kernel in THROUGH_COPIES:
        prepared._call(use_locking, through_copies, prepared, rounding)
        return
    k = be.kernels("training_half")
    mode = rounding.mode(var.dtype)
    n_threads = get_num_threads()
    grad = _bits(prepared.grad)
    hp, scale = prepared.hp, prepared.grad_scale
    call = prepared._call
    if not spec.sparse and spec.rowwise:
        var_rows, accum = prepared._row_state()[:2]
        call(use_locking, k.mixed_dense_rowwise, _bits(var_rows), _bits(accum),
             grad.reshape(var.shape[0], -1), hp, scale, mode, n_threads)
    elif not spec.sparse:
        flat = _unused_as_first(spec, prepared._flat_state())
        call(use_locking, k.mixed_dense, k.MIXED_OPS[spec.kernel],
             *[_bits(a) for a in flat], grad.reshape(-1), hp, scale, mode,
             n_threads)
    else:
        rows = prepared._row_state()
        if not spec.rowwise:
            rows = _unused_as_first(spec, rows)
        unique, order, starts = _groups(prepared)
        call(use_locking, k.mixed_sparse, k.MIXED_OPS[spec.kernel],
             *[_bits(r) for r in rows], grad.reshape(order.shape[0], -1), unique,
             order, starts, hp, scale, mode, n_threads)


#: The host ops that run :func:`through_copies` (their update spans whole
#: rows; every op does on the GPU).
THROUGH_COPIES = {"lamb"}


def _unused_as_first(spec, state):
    """var and its slots for the mixed kernels: a slot the op lacks is its
    first slot (the kernels take the slots in one type) or var when it has
    none."""
    n_slots = len(spec.slots)
    if n_slots == 0:
        return state
    return state[:1 + n_slots] + [state[1]] * (3 - n_slots)


def _groups(prepared):
    """The groups of the call's indices: the caller's, or made here."""
    be = prepared.be
    if prepared.groups is not None:
        groups = prepared.groups
    else:
        groups = sparse_rows.group_rows(prepared.indices, prepared.var.shape[0] - 1,
                                        be)
    return tuple(a if a.dtype == np.int64 else a.astype(np.int64) for a in groups)


def through_copies(prepared, rounding):
    """The float32 kernel of the op run on float32 copies of the rows the
    update touches (every row for a dense op), each copy then stored back
    rounded once: the bits of the fused kernels, for the ops whose update
    spans whole rows (Lamb) and on the GPU (``sparsegrad._cuda``'s float32
    kernels between ``mixed_load_rows`` and ``mixed_store_rows``)."""
    spec, var, be = prepared.spec, prepared.var, prepared.be
    xp = be.xp
    k16, k32 = be.kernels("training_half"), be.kernels("training")
    n_threads = get_num_threads()
    n_rows = var.shape[0] if var.ndim else 1
    state = [var.reshape(n_rows, -1)]
    if spec.rowwise:
        state.append(prepared.slots[0].reshape(n_rows, 1))
    else:
        state += [s.reshape(n_rows, -1) for s in prepared.slots]
    grad = prepared.grad
    if grad.dtype != MATH_DTYPE:
        grad = _widened(k16, grad, n_threads, xp)
    hp, scale = prepared.hp, prepared.grad_scale
    if spec.sparse:
        unique, order, starts = _groups(prepared)
        rows = unique
    else:
        rows = xp.arange(n_rows, dtype=np.int64)
    copies = [_load_rows(k16, a, rows, n_threads, xp) for a in state]
    # the float32 kernels' layout: a slot the op lacks is var
    four = copies + [copies[0]] * (4 - len(copies))
    if spec.rowwise and not spec.sparse:
        k32.dense_rowwise_adagrad(copies[0], copies[1],
                                  grad.reshape(n_rows, -1), hp, scale, n_threads)
    elif not spec.sparse:
        getattr(k32, spec.driver)(*[c.reshape(-1) for c in four], grad.reshape(-1),
                                  hp, scale, n_threads)
    else:
        if spec.rowwise:
            four = [copies[0]] + [copies[1]] * 3
        getattr(k32, spec.driver + "_grouped")(
            *four, grad.reshape(order.shape[0], -1),
            xp.arange(rows.shape[0], dtype=np.int64), order, starts, hp, scale,
            n_threads)
    mode = rounding.mode(var.dtype)
    for stream, (array, copy) in enumerate(zip(state, copies)):
        if is_half(array.dtype):
            k16.mixed_store_rows(copy, rows, _bits(array), mode, stream, n_threads)
        else:
            array[rows] = copy


def update_rows(array, rows, fn, rounding, salt):
    """Rows `rows` (distinct; None: every row) of the half array `array`
    (host or device, viewed as ``(shape[0], -1)``) replaced by ``fn(float32
    copy)``, rounded once as `rounding` says with streams of `salt` (stream
    0): a float32 update of a half array outside the kernels (AdamW's
    decay)."""
    be = backend_of(array)
    xp = be.xp
    k = be.kernels("training_half")
    n_threads = get_num_threads()
    rows2d = array.reshape(array.shape[0] if array.ndim else 1, -1)
    if rows is None:
        rows = xp.arange(rows2d.shape[0], dtype=np.int64)
    elif rows.dtype != np.int64:
        rows = rows.astype(np.int64)
    new = xp.ascontiguousarray(fn(_load_rows(k, rows2d, rows, n_threads, xp)),
                               dtype=MATH_DTYPE)
    k.mixed_store_rows(new, rows, _bits(rows2d), rounding.mode(array.dtype, salt), 0,
                       n_threads)


def _load_rows(k, array, rows, n_threads, xp):
    """Rows `rows` of `array` (half or float32) as a new float32 array."""
    if not is_half(array.dtype):
        return array[rows]
    out = xp.empty((rows.shape[0], array.shape[1]), dtype=MATH_DTYPE)
    k.mixed_load_rows(_bits(array), rows, out, array.dtype == BFLOAT16, n_threads)
    return out


def _widened(k, array, n_threads, xp):
    """A gradient as float32 (exact from the half types)."""
    if not is_half(array.dtype):
        return array.astype(MATH_DTYPE)
    flat = array.reshape(1, -1)
    out = _load_rows(k, flat, xp.zeros(1, dtype=np.int64), n_threads, xp)
    return out.reshape(array.shape)
