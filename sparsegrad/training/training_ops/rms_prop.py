"""RMSProp, plain and centered."""

from . import core as c

__all__ = [
    "apply_rms_prop",
    "sparse_apply_rms_prop",
    "apply_centered_rms_prop",
    "sparse_apply_centered_rms_prop",
]


def _specs(kernel, slots):
    """The dense and the sparse spec of an RMSProp kernel with `slots`."""
    hyper = (c.scalar("rho"), c.scalar("momentum"), c.scalar("epsilon"),
             *map(c.same_shape, slots))
    dense = c.Spec(kernel, slots,
                   (c.scalar("lr", sep=" : "), *hyper, c.GRAD, c.GRAD_SHAPE),
                   sparse=False)
    sparse = c.Spec(kernel, slots,
                    (c.scalar("lr", sep=": "), *hyper, c.VAR_RANK, c.INDICES,
                     c.GRAD, c.SPARSE_GRAD, c.IN_RANGE),
                    sparse=True)
    return dense, sparse


APPLY_RMS_PROP, SPARSE_APPLY_RMS_PROP = _specs("rms_prop", ("ms", "mom"))
APPLY_CENTERED_RMS_PROP, SPARSE_APPLY_CENTERED_RMS_PROP = _specs(
    "centered_rms_prop", ("mg", "ms", "mom"))


apply_rms_prop = c.define(
    "apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False)",
    APPLY_RMS_PROP,
    r"""RMSProp with momentum, TensorFlow's ``ResourceApplyRMSProp``.

    .. math::

        ms &\leftarrow ms + (g^2 - ms)(1 - \rho) \\
        mom &\leftarrow momentum\cdot mom + lr\,g / \sqrt{ms + \epsilon} \\
        var &\leftarrow var - mom

    Epsilon is inside the square root.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, ms, mom = np.ones(2), np.zeros(2), np.zeros(2)
    >>> training_ops.apply_rms_prop(var, ms, mom, 0.1, 0.75, 0.0, 0.0, [2.0, -2.0])
    >>> var
    array([0.8, 1.2])
    """)


sparse_apply_rms_prop = c.define(
    "sparse_apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, indices, "
    "use_locking=False)",
    SPARSE_APPLY_RMS_PROP,
    """Sparse :func:`apply_rms_prop` on the rows ``indices`` (lazy).

    TensorFlow's ``ResourceSparseApplyRMSProp``, whose per-row arithmetic is
    arranged differently from the dense kernel's
    (``ms * rho + g**2 * (1 - rho)``), so results may differ in the last bit.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, ms, mom = np.ones((2, 1)), np.zeros((2, 1)), np.zeros((2, 1))
    >>> training_ops.sparse_apply_rms_prop(
    ...     var, ms, mom, 0.1, 0.75, 0.0, 0.0, [[2.0]], [0])
    >>> var.ravel()
    array([0.8, 1. ])
    """)


apply_centered_rms_prop = c.define(
    "apply_centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad, "
    "use_locking=False)",
    APPLY_CENTERED_RMS_PROP,
    r"""Centered RMSProp, TensorFlow's ``ResourceApplyCenteredRMSProp``.

    .. math::

        ms &\leftarrow ms + (g^2 - ms)(1 - \rho), \quad
        mg \leftarrow mg + (g - mg)(1 - \rho) \\
        mom &\leftarrow momentum\cdot mom
              + lr\,g / \sqrt{ms - mg^2 + \epsilon} \\
        var &\leftarrow var - mom

    Note that `mg` comes before `ms`.

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, mg, ms, mom = np.ones(1), np.zeros(1), np.zeros(1), np.zeros(1)
    >>> training_ops.apply_centered_rms_prop(
    ...     var, mg, ms, mom, 0.1, 0.5, 0.0, 0.0, [2.0])
    >>> mg, ms
    (array([1.]), array([2.]))
    """)


sparse_apply_centered_rms_prop = c.define(
    "sparse_apply_centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, "
    "grad, indices, use_locking=False)",
    SPARSE_APPLY_CENTERED_RMS_PROP,
    """Sparse :func:`apply_centered_rms_prop` on the rows ``indices`` (lazy).

    TensorFlow's ``ResourceSparseApplyCenteredRMSProp`` (per-row arithmetic
    arranged as in :func:`sparse_apply_rms_prop`).

    Examples
    --------
    >>> from sparsegrad import training_ops
    >>> var, mg, ms, mom = (np.zeros((2, 1)) for _ in range(4))
    >>> training_ops.sparse_apply_centered_rms_prop(
    ...     var, mg, ms, mom, 0.1, 0.5, 0.0, 0.0, [[2.0]], [1])
    >>> mg.ravel(), ms.ravel()
    (array([0., 1.]), array([0., 2.]))
    """)
