"""The raw ops' specs and prepared calls: a :class:`Spec` checks a call and
gives a :class:`Prepared` one, which runs the kernel of the backend the call
chose at its entry (``be.kernels("training")``: the Cython module, its AVX2
build where the CPU has it, or ``sparsegrad._cuda.training``).
"""

import threading

import numpy as np

from ..._kernels import training as baseline_kernels
from ...framework import sparse_rows
from ...framework.backend import CPU
from ...framework.dtypes import BFLOAT16, is_half
from ...framework.threads import get_num_threads
from . import arrays, mixed
from .locks import Held
from .steps import Call

__all__ = ["Spec", "Prepared", "kernels", "use_kernels"]


def kernels():
    """The host kernel module in use: ``sparsegrad._kernels.training`` or its
    AVX2 build (the same bits; :func:`use_kernels` swaps it for a test)."""
    return CPU.kernels("training")


def use_kernels(module):
    """Context manager: run the training ops on the host kernel module
    `module` (``CPU.use_kernels("training", module)``), for tests that compare
    the AVX2 and the baseline builds."""
    return CPU.use_kernels("training", module)


class Spec:
    """One raw training op: its slots, its checks in TensorFlow's order, and
    its kernel.

    The kernel's hyper-parameters are named by the kernel module
    (``sparsegrad._kernels.training.HYPERPARAMETERS[kernel]``, in the order
    the kernel reads them); the steps must set each of them by that name, and
    :class:`Prepared` passes them in that order.

    Parameters
    ----------
    kernel : str
        The kernel's name without prefix: ``"adagrad_v2"`` runs
        ``dense_adagrad_v2`` or ``sparse_adagrad_v2``.
    slots : tuple of str
        The state arguments after var, in TensorFlow's order.
    steps : tuple of callables
        The checks, in TensorFlow's order (see the step factories).
    sparse : bool
        A ``sparse_apply_*`` op (indices, rows) or a dense one.
    rowwise : bool
        One accumulator per row of var (the row-wise Adagrad ops).
    """

    __slots__ = ("kernel", "slots", "steps", "hyper", "sparse", "rowwise",
                 "hyper_steps", "driver", "by_row_driver", "_hp_cache")

    def __init__(self, kernel, slots, steps, *, sparse, rowwise=False):
        self.kernel = kernel
        self.slots = tuple(slots)
        self.steps = tuple(steps)
        self.hyper = baseline_kernels.HYPERPARAMETERS[kernel]
        self.sparse = sparse
        self.rowwise = rowwise
        self.hyper_steps = tuple(s for s in self.steps
                                 if getattr(s, "hyper", None))
        #: The kernel function's name in the kernel module.
        self.driver = ("sparse_" if sparse else "dense_") + kernel
        self.by_row_driver = self.driver + "_by_row"
        self._hp_cache = {}
        missing = set(self.hyper) - {s.hyper for s in self.hyper_steps}
        if missing:
            raise AssertionError(f"{self.driver}: no step sets {sorted(missing)}")

    def call(self, args):
        """Check the arguments of a public call (by name), then run."""
        self.prepare(args).run(args.get("use_locking", False),
                               args.get("coalesce_duplicates", False))

    def prepare(self, args):
        """Run every check on `args`; return the :class:`Prepared` call."""
        call = Call(args, self.slots)
        for check in self.steps:
            check(call)
        grad, indices = arrays.kernel_arrays(call.grad, call.indices, call.dtype,
                                             call.be, self.driver)
        return Prepared(self, call.var, list(call.slots.values()),
                        call.variables, grad, indices, self.kernel_hyper(call.hyper),
                        be=call.be)

    def prepare_trusted(self, var, slots, grad, indices, args, *, grad_scale=1.0,
                        groups=None, be=CPU, rounding=None):
        """Prepare a call from an optimizer, on arrays it has checked.

        Only the hyper-parameter steps run, on `args`; nothing else is
        checked.

        Parameters
        ----------
        var : Variable
            The variable to update, owned by the optimizer.
        slots : sequence of Variable
            Its slots, in the spec's order.
        grad : ndarray
            The gradient, C-contiguous in var's dtype, sharing no memory with
            var or the slots.
        indices : ndarray or None
            Sparse ops: 1-D int32 or int64 rows of var, in range.  None for a
            dense op.
        args : dict
            The hyper-parameters' values, by the names the steps read.
        grad_scale : float, default=1.0
            A factor of the gradient: the update is bit for bit the one of
            ``grad * np.asarray(grad_scale, var.dtype)``, computed without
            that copy (the kernels scale each gradient row as they read it;
            coalescing sums the scaled rows).  A Python float that the caller
            has already rounded to var's dtype (e.g.
            ``float(np.float32(s))``); not checked.
        groups : tuple of ndarray, optional
            Sparse ops: ``(unique, order, starts)``, what
            :func:`sparsegrad.framework.sparse_rows.group_rows` gave for
            `indices` (the caller grouped them already, e.g. for a global
            norm): a coalesced update then runs on these groups, row by
            ascending row, instead of grouping the indices again.  The same
            bits either way.  Not checked.
        be : Backend, default=CPU
            The backend the optimizer chose for var at its entry (where the
            gradient's device was checked).
        rounding : mixed.Rounding, optional
            A half var (float16 or bfloat16) updated in mixed precision
            (:mod:`.mixed`): float32 arithmetic, hyper-parameters rounded to
            float32, slots float32 or var's type, the gradient float32 or
            var's type, each stored value rounded once as `rounding` says.
            None: the op's own semantics (TensorFlow's half kernels for a
            half var).

        Returns
        -------
        Prepared
            The call, ready to run.
        """
        array = var._value
        dtype = array.dtype
        if rounding is not None and is_half(dtype):
            dtype = mixed.MATH_DTYPE
        else:
            rounding = None
        # An optimizer passes the same hyper-parameters step after step:
        # their checked kernel array is kept (a small cache per spec).  Not
        # for zeros (0.0 and -0.0 are equal keys, but not the same bits) nor
        # unhashable values.
        key = hp = None
        try:
            if 0 not in args.values():
                key = (dtype, *args.items())
                hp = self._hp_cache.get(key)
        except (TypeError, ValueError):         # arrays among the values
            key = None
        if hp is None:
            call = Call.trusted(args, array, be, dtype)
            for check in self.hyper_steps:
                check(call)
            hp = self.kernel_hyper(call.hyper)
            if key is not None:
                if len(self._hp_cache) >= 64:
                    self._hp_cache.clear()
                self._hp_cache[key] = hp
        grad, indices = arrays.kernel_arrays(grad, indices, dtype, be, self.driver,
                                             trusted=True)
        return Prepared(self, array, [s._value for s in slots], [var, *slots], grad,
                        indices, hp, grad_scale, groups, be, rounding)

    def kernel_hyper(self, hyper):
        """The kernel's ``hp`` array: the hyper-parameters `hyper` (by name)
        in the order the kernel reads them, read-only."""
        hp = np.array([hyper[name] for name in self.hyper], dtype=np.float64)
        hp.flags.writeable = False
        return hp


class Prepared:
    """A checked call of a raw op, ready to run: nothing is left to fail.

    Parameters
    ----------
    spec : Spec
        The op.
    var : ndarray
        var's buffer, updated in place.
    slots : list of ndarray
        The slots' buffers, in the spec's order.
    variables : list of Variable
        The Variables among them, whose versions :meth:`run` bumps.
    grad : ndarray
        The gradient, C-contiguous in var's dtype.
    indices : ndarray or None
        Sparse ops: the rows, C-contiguous int64.  None for a dense op.
    hp : ndarray
        The kernel's hyper-parameters (:meth:`Spec.kernel_hyper`).
    grad_scale : float, default=1.0
        The factor the kernels apply to each gradient element as they read
        it, exactly representable in var's dtype (see
        :meth:`Spec.prepare_trusted`).
    groups : tuple of ndarray, optional
        Sparse ops: the groups of `indices` (see :meth:`Spec.prepare_trusted`).
    be : Backend, default=CPU
        The backend of the arrays, chosen at the call's entry.
    rounding : mixed.Rounding, optional
        A mixed-precision update of a half var (see
        :meth:`Spec.prepare_trusted`), or None.
    """

    __slots__ = ("spec", "var", "slots", "variables", "grad", "indices", "hp",
                 "grad_scale", "groups", "be", "rounding")

    def __init__(self, spec, var, slots, variables, grad, indices, hp,
                 grad_scale=1.0, groups=None, be=CPU, rounding=None):
        self.spec = spec
        self.var = var
        self.slots = slots
        self.variables = variables
        self.grad = grad
        self.indices = indices
        self.hp = hp
        self.grad_scale = grad_scale
        self.groups = groups
        self.be = be
        self.rounding = rounding

    def _call(self, use_locking, kernel, *args, **kwargs):
        """Run `kernel`, holding the locks of var and the slots if asked."""
        if use_locking:
            with Held([self.var, *self.slots], self.be):
                kernel(*args, **kwargs)
        else:
            kernel(*args, **kwargs)

    def run(self, use_locking=False, coalesce=True):
        """Run the kernel, then bump the versions of the Variables.

        On the GPU backend the kernels are those of
        :mod:`sparsegrad._cuda.training` (the same names and signatures);
        there every sparse update groups the indices on the device and runs
        one kernel (see :meth:`_sparse`).
        """
        spec, var = self.spec, self.var
        if self.rounding is not None:
            mixed.run(self, use_locking, self.rounding)
            for variable in self.variables:
                variable._bump()
            return
        if is_half(var.dtype):
            self._run_half(use_locking, coalesce)
            return
        k = self.be.kernels("training")
        driver = getattr(k, spec.driver)
        n_threads = get_num_threads()
        if not spec.sparse:
            if var.size:
                if spec.rowwise:
                    var_rows, accum = self._row_state()[:2]
                    self._call(use_locking, driver, var_rows, accum,
                               self.grad.reshape(var.shape[0], -1), self.hp,
                               self.grad_scale, n_threads)
                else:
                    self._call(use_locking, driver, *self._flat_state(),
                               self.grad.reshape(-1), self.hp, self.grad_scale,
                               n_threads)
        elif self.indices.shape[0] and var.size:
            self._sparse(k, driver, self._row_state(), coalesce, use_locking,
                         n_threads)
        for variable in self.variables:
            variable._bump()

    def _flat_state(self):
        """var and its slots flat, as the dense kernels take them: four
        arrays, var in the place of each slot the op lacks."""
        flat = [self.var.reshape(-1)] + [s.reshape(-1) for s in self.slots]
        return flat + [flat[0]] * (4 - len(flat))

    def _row_state(self):
        """var and its slots as rows ``(n_rows, -1)``, as the sparse kernels
        take them: four arrays, var in the place of each slot the op lacks;
        row-wise Adagrad's accumulator is ``(n_rows, 1)``, in all three slot
        places."""
        var = self.var
        n_rows = var.shape[0]
        if self.spec.rowwise:
            return [var.reshape(n_rows, -1)] + [self.slots[0].reshape(n_rows, 1)] * 3
        if var.ndim == 2:
            rows = [var, *self.slots]
        else:
            rows = [var.reshape(n_rows, -1)] + [s.reshape(n_rows, -1)
                                                for s in self.slots]
        return rows + [rows[0]] * (4 - len(rows))

    def _run_half(self, use_locking, coalesce):
        """:meth:`run` on float16 or bfloat16 arrays: the kernels of
        ``training_half`` (TensorFlow's half semantics, every operation
        rounded), on the arrays' ``uint16`` views.

        On the host, a scaled gradient is multiplied first (each product
        rounded once: the bits the float kernels get when they scale as they
        read) and duplicates are summed first when coalescing (in the storage
        type, in their original order, from zero), so the kernels only ever
        apply rows.  On the GPU (``sparsegrad._cuda.training_half``) the
        kernels do both as they read the gradient, with the same roundings
        and so the same bits: no copy, and none of CuPy's half arithmetic.
        A device bfloat16 array is a cupy array of dtype
        ``ml_dtypes.bfloat16``, which CuPy holds from version 14 (with
        ``ml_dtypes`` installed); a ``uint16`` array is never taken for one.
        """
        spec, var, hp, be = self.spec, self.var, self.hp, self.be
        k = be.kernels("training_half")
        bf16 = var.dtype == BFLOAT16
        n_threads = get_num_threads()
        grad = self.grad
        extra = {}                  # the device kernels' own arguments
        if self.grad_scale != 1.0:
            if be.on_gpu:
                extra["grad_scale"] = self.grad_scale
            else:
                grad = grad * var.dtype.type(self.grad_scale)
        if not spec.sparse:
            if not var.size:
                pass
            elif spec.rowwise:
                var_rows, accum = self._row_state()[:2]
                self._call(use_locking, k.dense_rowwise_adagrad, _bits(var_rows),
                           _bits(accum), _bits(grad.reshape(var.shape[0], -1)), hp,
                           bf16, n_threads, **extra)
            else:
                flat = [_bits(a) for a in self._flat_state()]
                args = [*flat, _bits(grad.reshape(-1)), hp, bf16, n_threads]
                if spec.kernel == "lamb":
                    args.append(be.xp.empty(k.lamb_sums_size(var.size)))
                self._call(use_locking, getattr(k, spec.driver), *args, **extra)
        elif self.indices.shape[0] and var.size:
            indices = self.indices
            rows = self._row_state()
            grad = grad.reshape(indices.shape[0], -1)
            if coalesce and be.on_gpu:
                extra["coalesce"] = True
            elif coalesce:
                indices, grad = sparse_rows.deduplicate(indices, grad,
                                                        var.shape[0] - 1)
            self._call(use_locking, getattr(k, spec.driver),
                       *[_bits(r) for r in rows], _bits(grad), indices, hp, bf16,
                       n_threads, **extra)
        for variable in self.variables:
            variable._bump()

    def _sparse(self, k, driver, rows, coalesce, use_locking, n_threads):
        """Run ``sparse_<op>`` (each thread scans the indices for its own
        rows), or ``sparse_<op>_by_row``, which groups the occurrences by row
        first: to coalesce, and for narrow rows on several threads, where the
        scans would cost as much as the updates; ``_grouped`` on the groups
        made by the caller (or here, row-wise).  On the GPU: ``_grouped`` on
        the caller's groups, else ``_by_row`` (see the comment below)."""
        indices = self.indices
        n = indices.shape[0]
        grad = self.grad
        scale = self.grad_scale
        if grad.ndim != 2:
            grad = grad.reshape(n, -1)
        width = grad.shape[1]
        on_gpu = self.be.on_gpu
        if (coalesce and self.groups is None and self.spec.rowwise
                and not on_gpu):  # grouped: four rows' squares at once
            self.groups = sparse_rows.group_rows(indices, rows[0].shape[0] - 1)
        if on_gpu and not (coalesce and self.groups is not None):
            # The GPU's by-row driver groups the indices on the device (a
            # stable sort) and needs no scratch; on the device it is the one
            # sparse driver, with or without coalescing, for every n.
            self._call(use_locking, getattr(k, self.spec.by_row_driver), *rows,
                       grad, indices, self.hp, scale, bool(coalesce), n_threads,
                       None)
        elif coalesce and self.groups is not None:
            # Grouped by the caller: one update per distinct row, the rows in
            # ascending order (memory in order: narrow rows share cache lines
            # and pages with their neighbours).
            unique, order, starts = self.groups
            if unique.dtype != _INT64:
                unique = unique.astype(_INT64)
            self._call(use_locking, getattr(k, self.spec.driver + "_grouped"), *rows,
                       grad, unique, order, starts, self.hp, scale, n_threads)
        elif n >= _BY_ROW_MAX_N:
            # Beyond the by-row kernels' int32 links: sum the duplicates first
            # (in order, from zero: the same bits), then one update per row.
            # The sums must be those of the scaled rows: scaled, the
            # gradient is copied times the factor first (the only copy made
            # for a scale, on this path alone).
            if coalesce:
                if scale != 1.0:
                    grad = grad * np.asarray(scale, grad.dtype)
                    scale = 1.0
                indices, grad = sparse_rows.deduplicate(
                    indices, grad, rows[0].shape[0] - 1)
            self._call(use_locking, driver, *rows, grad, indices, self.hp,
                       scale, n_threads)
        elif coalesce or (n_threads > 1 and width < _NARROW_ROW):
            scratch = _scratch(k.by_row_scratch_size(n, width, n_threads))
            self._call(use_locking, getattr(k, self.spec.by_row_driver), *rows,
                       grad, indices, self.hp, scale, bool(coalesce), n_threads,
                       scratch)
        else:
            self._call(use_locking, driver, *rows, grad, indices, self.hp,
                       scale, n_threads)


_INT64 = np.dtype(np.int64)
_UINT16 = np.dtype(np.uint16)


def _bits(array):
    """A half array's bits, as the half kernels take them."""
    return array.view(_UINT16)


# The by-row kernels link occurrences with int32 offsets.
_BY_ROW_MAX_N = baseline_kernels.BY_ROW_MAX_N
# Rows narrower than this take the by-row sparse kernel on several threads.
_NARROW_ROW = 16
_scratch_cache = threading.local()


def _scratch(words):
    """An int32 work area of at least `words` entries for the by-row kernels,
    kept per Python thread (the kernels release the GIL) and grown on demand:
    fresh large buffers would cost page faults on every call."""
    buffer = getattr(_scratch_cache, "buffer", None)
    if buffer is None or buffer.shape[0] < words:
        buffer = np.empty(max(words, 1024), dtype=np.int32)
        _scratch_cache.buffer = buffer
    return buffer
