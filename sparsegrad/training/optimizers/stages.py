"""The clipping stage of :meth:`Optimizer.apply_gradients
<sparsegrad.training.optimizers.base.Optimizer.apply_gradients>`.

``clipnorm`` and ``clipvalue`` make new clipped gradients with
:mod:`sparsegrad.ops.clip_ops`; ``global_clipnorm`` gives one scale per
gradient, which the update kernels apply as they read each gradient row, so
that no scaled copy is written.  What the stage hands to the update of each
gradient is a :class:`GradientStage`, passed explicitly: the optimizer keeps
no per-call state.
"""

import math
from typing import NamedTuple

import numpy as np

from ...framework.backend import CPU
from ...framework.indexed_slices import IndexedSlices
from ...ops import clip_ops

__all__ = ["GradientStage", "UNIT_STAGE", "clip_gradients", "global_clip_scales"]


class GradientStage(NamedTuple):
    """What the clipping stage of :meth:`Optimizer.apply_gradients` hands to
    the update of one gradient, explicitly (the optimizer keeps no per-call
    state): the factor the update kernel multiplies the gradient by as it
    reads it (``global_clipnorm``; 1.0 otherwise), for a sparse gradient its
    indices and their grouping
    (:func:`~sparsegrad.framework.sparse_rows.group_rows`), on which the
    kernel coalesces, or None, and the backend of the variable and its
    gradient, chosen once where the step checked them.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegrad.training.optimizers.base import GradientStage
    >>> GradientStage(0.5).scaled(np.array([2.0, 4.0]))
    array([1., 2.])
    """

    scale: float = 1.0
    indices: object = None
    groups: tuple = None
    backend: object = CPU
    #: A half variable's mixed-precision rounding
    #: (:class:`~sparsegrad.training.training_ops.mixed.Rounding`), else None.
    rounding: object = None

    def scaled(self, values):
        """`values` times :attr:`scale` (each product rounded to their dtype):
        for an update that combines the gradient itself before its kernel
        (non-lazy Adam densifies a sparse one), which then runs with
        :meth:`unscaled`."""
        if self.scale == 1.0:
            return values
        return values * values.dtype.type(self.scale)

    def unscaled(self):
        """This stage with the scale 1.0 (already applied by :meth:`scaled`)
        and no groups, on the same backend, with the same rounding."""
        if self.backend is CPU and self.rounding is None:
            return UNIT_STAGE
        return GradientStage(backend=self.backend, rounding=self.rounding)

    def groups_of(self, indices):
        """The grouping of `indices` when they are this stage's, else None."""
        return self.groups if indices is self.indices else None


#: The stage of a host gradient that nothing scales or groups.
UNIT_STAGE = GradientStage()


def clip_gradients(grads, shapes, clipnorm, clipvalue):
    """clipnorm or clipvalue: new clipped gradients for a list of validated
    ones (dense arrays and ``(values, indices, slices)`` triples; `shapes`
    are the variables' shapes).  clipvalue coalesces an IndexedSlices first,
    so it bounds the rows of the represented tensor."""
    out = []
    for g, shape in zip(grads, shapes):
        sparse = isinstance(g, tuple)
        if sparse:
            g = IndexedSlices._from_trusted(g[0], g[1], shape, g[2]._groups)
        if clipnorm is not None:
            g = clip_ops.clip_by_norm(g, clipnorm)
        else:
            if sparse:
                g = g.deduplicate()
            g = clip_ops.clip_by_value(g, -clipvalue, clipvalue)
        out.append((g.values._value, g.indices._value, g) if sparse
                   else g._value)
    return out


def global_clip_scales(grads, variables, groups, global_clipnorm, dtypes):
    """global_clipnorm: the scale of each gradient, TensorFlow's
    ``clip_by_global_norm`` formula in the variables' math dtypes `dtypes`
    (float64 when they differ; float32 for half variables), rounded to each.
    `groups` holds :func:`~sparsegrad.framework.sparse_rows.group_rows` of
    each sparse gradient's indices (None for a dense one)."""
    total = clip_ops.sum_of_squares([
        (g[0], g[1], var.shape[0], grouped) if isinstance(g, tuple) else g
        for g, var, grouped in zip(grads, variables, groups)])
    distinct = set(dtypes)
    dtype = distinct.pop() if len(distinct) == 1 else np.dtype(np.float64)
    scale = clip_ops.global_norm_scale(
        np.asarray(math.sqrt(total), dtype),
        np.asarray(global_clipnorm, dtype))
    return [float(scale.astype(d)) for d in dtypes]
