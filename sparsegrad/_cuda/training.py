"""Launchers of ``training.cu``: the twin of ``sparsegrad._kernels.training``.

The same function names and Python-side signatures as the Cython module
(``dense_<op>``, ``sparse_<op>``, ``sparse_<op>_by_row``,
``sparse_<op>_grouped``, ``dense_rowwise_adagrad``, ``by_row_scratch_size``,
:data:`HYPERPARAMETERS`, :data:`BY_ROW_MAX_N`), on cupy arrays.

On the GPU the three sparse drivers are one kernel: the occurrences are
grouped by row (:func:`sparsegrad._cuda.sort.group_rows`, or the caller's
groups for ``_grouped``), each distinct row goes to one block (narrow rows:
``BLOCK // R`` of them to a block), one thread per column, and each thread
applies its column's occurrences in their original order, or their sum in
that order (``coalesce``).  Rows with at least :data:`HEAVY_MIN` occurrences
(the hot ids of a skewed batch) go to a second kernel, in which a whole
block streams the gradients of a 16-column chunk of one row through shared
memory to the same per-column chains (the same bits).  ``sparse_<op>`` is
that pair without coalescing; ``_by_row`` takes no scratch (``scratch`` is
ignored, and :func:`by_row_scratch_size` is 0) and has no limit on n but
int64's.  No value comes back to the host: how many rows are heavy stays on
the device (the lists are sized by the bound ``n // HEAVY_MIN``).
"""

import numpy as np

from . import BLOCK, blocks_for, cupy, launch, suffix
from .sort import group_rows

__all__ = ["HYPERPARAMETERS", "BY_ROW_MAX_N", "HEAVY_MIN", "by_row_scratch_size",
           "dense_rowwise_adagrad"]

_FAMILY = "training"

#: The by-row drivers group with int64 offsets: no limit of their own.
BY_ROW_MAX_N = 2**63 - 1

#: The hyper-parameters each op reads from ``hp``, by name, in order (those of
#: ``sparsegrad._kernels.training.HYPERPARAMETERS``; a test checks that).
HYPERPARAMETERS = {
    "gradient_descent": ("alpha",),
    "proximal_gradient_descent": ("alpha", "l1", "l2"),
    "adadelta": ("lr", "rho", "epsilon"),
    "adagrad": ("lr", "update_slots"),
    "adagrad_v2": ("lr", "epsilon", "update_slots"),
    "proximal_adagrad": ("lr", "l1", "l2"),
    "adagrad_da": ("lr", "l1", "l2", "global_step"),
    "ftrl": ("lr", "l1", "l2", "l2_shrinkage", "lr_power", "multiply_linear_by_lr",
             "is_v2"),
    "momentum": ("lr", "momentum", "use_nesterov"),
    "keras_momentum": ("lr", "momentum", "use_nesterov"),
    "adam": ("alpha", "beta1", "beta2", "epsilon", "use_nesterov"),
    "adam_with_amsgrad": ("alpha", "beta1", "beta2", "epsilon"),
    "ada_max": ("alpha", "beta1", "beta2", "epsilon"),
    "rms_prop": ("lr", "rho", "momentum", "epsilon"),
    "centered_rms_prop": ("lr", "rho", "momentum", "epsilon"),
    "add_sign": ("lr", "alpha", "sign_decay", "beta"),
    "power_sign": ("lr", "logbase", "sign_decay", "beta"),
    "rowwise_adagrad": ("lr", "epsilon"),
}

# Ops with a dense kernel, and with a sparse one (the OPS table of
# _training.pxi.tp).
_DENSE = tuple(name for name in HYPERPARAMETERS if name != "rowwise_adagrad")
_SPARSE = tuple(name for name in HYPERPARAMETERS
                if name not in ("adam_with_amsgrad", "add_sign", "power_sign"))

# The kernels take the hyper-parameters as seven double scalars.
_N_HP = 7

#: Occurrences from which a distinct row goes to the heavy kernel.
HEAVY_MIN = 64
# Columns of a row that one block of the heavy kernel takes (SG_CHUNK_COLS).
_CHUNK_COLS = 16
# Blocks of a heavy launch: a few per SM of a large GPU (two fit on one).
# Its grid is sized by the bound n // HEAVY_MIN, not by the count, which
# stays on the device: a grid of that bound would be mostly blocks with
# nothing to do, each still scheduled.
_HEAVY_BLOCKS = 1024
# "No group is heavy" for the light kernel.
_NEVER = np.iinfo(np.int64).max


def _hp_args(hp):
    """The host float64 array `hp` as the kernels' seven double scalars."""
    values = [np.float64(x) for x in np.asarray(hp, dtype=np.float64).reshape(-1)]
    return values + [np.float64(0.0)] * (_N_HP - len(values))


def _scale_args(grad_scale, dtype):
    """(s, scaled): the factor in the value type, and whether to apply it."""
    return dtype.type(grad_scale), np.int32(grad_scale != 1.0)


def by_row_scratch_size(n, R, n_threads):
    """Mirrors ``by_row_scratch_size``: the GPU drivers need no scratch."""
    return 0


def _dense_launcher(name):
    def dense(var, s1, s2, s3, grad, hp, grad_scale, n_threads):
        size = var.shape[0]
        if size == 0:
            return
        launch(_FAMILY, f"dense_{name}_{suffix(var.dtype)}", blocks_for(size),
               (var, s1, s2, s3, grad, np.int64(size), *_hp_args(hp),
                *_scale_args(grad_scale, var.dtype)))

    dense.__name__ = dense.__qualname__ = f"dense_{name}"
    dense.__doc__ = (f"Mirrors ``dense_{name}``: flat arrays, one thread per "
                     "element (grid-stride).")
    return dense


def _run_sparse(name, rows, grad, unique, order, starts, hp, grad_scale,
                coalesce):
    """One block per group of (unique, order, starts); ``rows`` is var and
    the slots, shaped (n_rows, R) (the row-wise op: var and the (n_rows, 1)
    accumulator)."""
    var = rows[0]
    n_groups = unique.shape[0]
    if n_groups == 0 or var.size == 0:
        return
    R = var.shape[1]
    if unique.dtype != np.int64:
        unique = unique.astype(np.int64)
    args = (grad, unique, order, starts, np.int64(n_groups), np.int64(R),
            *_hp_args(hp), *_scale_args(grad_scale, var.dtype),
            np.int32(bool(coalesce)))
    kernel = f"sparse_{name}_{suffix(var.dtype)}"
    if name == "rowwise_adagrad":
        launch(_FAMILY, kernel, blocks_for(n_groups, 1), (var, rows[1], *args))
    else:
        # At most n // HEAVY_MIN groups are heavy: the lists are sized by
        # that bound, and how many there are stays on the device (no sync).
        n = order.shape[0]
        max_heavy = min(n_groups, n // HEAVY_MIN)
        heavy_min = np.int64(HEAVY_MIN if max_heavy else _NEVER)
        if max_heavy:
            cp = cupy()
            heavy = cp.empty((max_heavy,), dtype=np.int64)
            n_heavy = cp.zeros((1,), dtype=np.int64)
            launch(_FAMILY, "heavy_groups", blocks_for(n_groups),
                   (starts, np.int64(n_groups), heavy_min, heavy, n_heavy))
        # A block takes BLOCK // R rows at a time when they are narrower.
        per_block = BLOCK // R if R < BLOCK else 1
        launch(_FAMILY, kernel, blocks_for(n_groups, per_block),
               (*rows, *args, heavy_min))
        if max_heavy:
            n_chunks = -(-R // _CHUNK_COLS)
            launch(_FAMILY, f"sparse_heavy_{name}_{suffix(var.dtype)}",
                   min(_HEAVY_BLOCKS, max_heavy * n_chunks),
                   (*rows, grad, unique, order, starts, heavy, n_heavy,
                    np.int64(R), *_hp_args(hp), *_scale_args(grad_scale, var.dtype),
                    np.int32(bool(coalesce))))


def _sparse_launchers(name):
    def sparse(var, s1, s2, s3, grad, indices, hp, grad_scale, n_threads):
        if indices.shape[0] == 0:
            return
        unique, order, starts = group_rows(indices)
        _run_sparse(name, (var, s1, s2, s3), grad, unique, order, starts, hp,
                    grad_scale, False)

    def by_row(var, s1, s2, s3, grad, indices, hp, grad_scale, coalesce,
               n_threads, scratch=None):
        if indices.shape[0] == 0:
            return
        unique, order, starts = group_rows(indices)
        _run_sparse(name, (var, s1, s2, s3), grad, unique, order, starts, hp,
                    grad_scale, coalesce)

    def grouped(var, s1, s2, s3, grad, unique, order, starts, hp, grad_scale,
                n_threads):
        _run_sparse(name, (var, s1, s2, s3), grad, unique, order, starts, hp,
                    grad_scale, True)

    sparse.__doc__ = (f"Mirrors ``sparse_{name}``: each occurrence of a row in "
                      "order, from grad * grad_scale.")
    by_row.__doc__ = (f"Mirrors ``sparse_{name}_by_row`` (`scratch` is ignored): "
                      "each occurrence in order, or once with the row's "
                      "gradients summed (coalesce).")
    grouped.__doc__ = (f"Mirrors ``sparse_{name}_grouped``: one update per group, "
                       "by the group's gradient rows summed in order from zero.")
    out = {}
    for suffix_, fn in (("", sparse), ("_by_row", by_row), ("_grouped", grouped)):
        fn.__name__ = fn.__qualname__ = f"sparse_{name}{suffix_}"
        out[fn.__name__] = fn
    return out


def dense_rowwise_adagrad(var, accum, grad, hp, grad_scale, n_threads):
    """Mirrors ``dense_rowwise_adagrad``: every row of var (n_rows, R), one
    block a row."""
    n_rows, R = var.shape
    if var.size == 0:
        return
    launch(_FAMILY, f"dense_rowwise_adagrad_{suffix(var.dtype)}",
           blocks_for(n_rows, 1),
           (var, accum, grad, np.int64(n_rows), np.int64(R), *_hp_args(hp),
            *_scale_args(grad_scale, var.dtype)))


for _name in _DENSE:
    globals()[f"dense_{_name}"] = _dense_launcher(_name)
    __all__.append(f"dense_{_name}")
for _name in _SPARSE:
    for _fn_name, _fn in _sparse_launchers(_name).items():
        globals()[_fn_name] = _fn
        __all__.append(_fn_name)
del _name, _fn_name, _fn
