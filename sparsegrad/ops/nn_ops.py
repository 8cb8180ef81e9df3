"""Neural-network ops: activations and losses, each with its gradient below it.

The forward passes use numerically stable formulas (TensorFlow's), so large
logits give finite results.  The losses are fused ops with dedicated gradients:
the forward pass keeps the softmax it computed, and the gradient reuses it
instead of exponentiating again.  Every gradient is written with sparsegrad
ops, so an outer tape can differentiate it again.

Their exp, log and log1p are those of :mod:`sparsegrad.framework.elementwise`
(the same bits on every CPU), never NumPy's ufuncs, whose SIMD paths give
different bits on different CPUs.
"""

import numpy as np

from ..autodiff.recording import record_operation
from ..autodiff.registry import register_gradient
from ..errors import InvalidArgumentError
from ..framework import buffers
from ..framework import elementwise as _elementwise
from ..framework.backend import backend_of
from ..framework.dtypes import half_not_computed, is_floating
from ..framework.tensor import wrap
from . import array_ops, reduction_ops, unary_ops
from ._helpers import as_tensor, same_device


def _xp(array):
    """The array module of `array` (numpy, or cupy for a GPU array)."""
    return backend_of(array).xp


def _as(array, dtype, xp):
    """`array` as an array of `dtype` of array module `xp` (its own)."""
    return xp.asarray(array, dtype=dtype)

__all__ = [
    "l2_loss",
    "log_softmax",
    "relu",
    "sigmoid_cross_entropy_with_logits",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softplus",
    "sparse_softmax_cross_entropy_with_logits",
]


# -- argument checks -------------------------------------------------------------


def _float_input(x, name, op_name):
    """`x` as a Tensor of a floating dtype (InvalidArgumentError otherwise)."""
    t = as_tensor(x, name=name)
    if t.dtype.kind != "f":
        raise InvalidArgumentError(
            f"{op_name}: {name} must be float16, float32 or float64, got dtype "
            f"{t.dtype}"
        )
    return t


def _same_dtype(labels, logits, op_name):
    """Convert `labels` to a Tensor of the dtype of the Tensor `logits`."""
    if isinstance(labels, (list, tuple, int, float)):
        return as_tensor(same_device(np.asarray(labels, dtype=logits.dtype),
                                     logits._value), name="labels")
    labels = _float_input(labels, "labels", op_name)
    if labels.dtype != logits.dtype:
        raise InvalidArgumentError(
            f"{op_name}: labels and logits must have the same dtype, got "
            f"{labels.dtype} and {logits.dtype}"
        )
    return labels


def _check_axis(axis, ndim, op_name, name="logits"):
    """`axis` normalised to ``[0, ndim)``; `ndim` must be at least 1."""
    if ndim == 0:
        raise InvalidArgumentError(
            f"{op_name}: {name} must have at least 1 dimension, got a scalar"
        )
    try:
        axis = int(axis.__index__())
    except (AttributeError, TypeError):
        raise InvalidArgumentError(
            f"{op_name}: axis must be an int, got {axis!r}"
        ) from None
    if not -ndim <= axis < ndim:
        raise InvalidArgumentError(
            f"{op_name}: axis must be in the range [{-ndim}, {ndim}) for {name} of "
            f"rank {ndim}, got axis={axis}"
        )
    return axis % ndim


# -- relu --------------------------------------------------------------------------


def relu(features, name=None):
    """Rectified linear unit: ``max(features, 0)``.

    Parameters
    ----------
    features : array_like, Tensor or Variable
        Any real dtype (integers give integers).
    name : str, optional
        Ignored; kept for TensorFlow compatibility.

    Returns
    -------
    Tensor of the shape and dtype of `features`.

    Notes
    -----
    The gradient is ``grad * (output > 0)``: zero at 0, as in TensorFlow.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.nn.relu([-1.0, 0.0, 2.5]).numpy()
    array([0. , 0. , 2.5])
    """
    del name
    x = as_tensor(features, name="features")
    if is_floating(x.dtype) and x.dtype.kind != "f":    # bfloat16
        raise half_not_computed("relu", "features", x.dtype)
    if x.dtype.kind not in "iuf":
        raise InvalidArgumentError(
            f"relu: features must be of an integer or floating dtype, got {x.dtype}"
        )
    xp = _xp(x._value)
    zero = x._value.dtype.type(0)
    y = wrap(xp.maximum(x._value, zero) if xp is not np else
             np.maximum(x._value, zero, out=buffers.empty_like(x._value)))
    record_operation("Relu", (x,), (y,))
    return y


@register_gradient("Relu")
def _relu_grad(op, grad):
    return _relu_backprop(grad, op.outputs[0])


def _relu_backprop(grad, output):
    """``grad * (output > 0)``, recorded as a "ReluGrad" op."""
    grad = as_tensor(grad, name="grad")
    g = grad._value
    xp = _xp(g)
    on_host = xp is np
    mask = (np.greater(output._value, 0, out=buffers.empty_like(output._value, bool))
            if on_host else output._value > 0)
    if g.dtype.kind == "f" and g.dtype.itemsize in (2, 4, 8) and g.ndim \
            and mask.shape == g.shape:
        # The bits of g where the mask is set, else +0: an AND with an
        # all-ones or all-zeros word (np.where branches on each element, and
        # a relu mask is random: ten times slower).
        word = np.dtype(f"i{g.dtype.itemsize}")
        if on_host:
            keep = buffers.empty_like(mask, word)
            np.copyto(keep, mask.view(np.int8), casting="unsafe")
        else:
            keep = mask.view(np.int8).astype(word)
        xp.negative(keep, out=keep)
        result = xp.bitwise_and(xp.ascontiguousarray(g).view(word), keep,
                                out=keep).view(g.dtype)
    else:
        result = xp.where(mask, g, g.dtype.type(0))
    out = wrap(xp.asarray(result, dtype=g.dtype))
    record_operation("ReluGrad", (grad, output), (out,))
    return out


@register_gradient("ReluGrad")
def _relu_backprop_grad(op, grad):
    # Linear in the incoming gradient with the same mask; the mask is flat in
    # the relu output, whose gradient is zeros (as in TensorFlow).
    return _relu_backprop(grad, op.inputs[1]), array_ops.zeros_like(op.inputs[1])


# -- softplus ----------------------------------------------------------------------


def softplus(features, name=None):
    """Softplus: ``log(1 + exp(features))``, computed without overflow.

    Parameters
    ----------
    features : array_like, Tensor or Variable
        float16, float32 or float64.
    name : str, optional
        Ignored.

    Returns
    -------
    Tensor of the shape and dtype of `features`.

    Notes
    -----
    Computed as ``max(features, 0) + log1p(exp(-|features|))`` (the value of
    ``np.logaddexp(0, features)``, with the exp and log1p of
    :mod:`sparsegrad.framework.elementwise`): large inputs give themselves,
    very negative ones ``exp(features)``.  float16 is computed in float32 and
    rounded once.  The gradient is ``grad * sigmoid(features)``.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.nn.softplus([0.0, 100.0, -100.0]).numpy().round(6)
    array([  0.693147, 100.      ,   0.      ])
    """
    del name
    x = _float_input(features, "features", "softplus")
    y = wrap(_softplus_array(x._value, _xp(x._value)))
    record_operation("Softplus", (x,), (y,))
    return y


def _softplus_array(v, xp):
    """``log(1 + exp(v))`` without overflow; float16 goes through float32."""
    half = v.dtype.char == "e"
    if half:
        v = v.astype(np.float32)
    tail = _elementwise.log1p(_elementwise.exp(xp.negative(xp.abs(v))))
    out = xp.maximum(v, v.dtype.type(0)) + tail
    return xp.asarray(out.astype(np.float16) if half else out)


@register_gradient("Softplus")
def _softplus_grad(op, grad):
    return grad * unary_ops.sigmoid(op.inputs[0])


# -- softmax and log_softmax ------------------------------------------------------


def _shifted(x, axis, xp):
    """``x - max(x, axis)`` (where the maximum is finite), in x's dtype."""
    m = xp.max(x, axis=axis, keepdims=True)
    m = xp.where(xp.isfinite(m), m, m.dtype.type(0))
    return x - m


def _softmax_array(x, axis, xp):
    e = _elementwise.exp(_shifted(x, axis, xp))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax_array(x, axis, xp):
    s = _shifted(x, axis, xp)
    sum_e = xp.sum(_elementwise.exp(s), axis=axis, keepdims=True)
    return s - _elementwise.log(sum_e)


_ALONG_AXIS_DOC = """{summary}

Parameters
----------
logits : array_like, Tensor or Variable
    float16, float32 or float64, at least 1-D.
axis : int, default=-1{axis_note}
name : str, optional
    Ignored.

Returns
-------
Tensor of the shape and dtype of `logits`.

Raises
------
InvalidArgumentError
    If `logits` is a scalar or `axis` is out of range.

Notes
-----
{notes}

Examples
--------
>>> import sparsegrad as sg
>>> sg.nn.{name}({args}).numpy()
{result}
"""


def _along_axis(op_name, op_type, array_fn, doc):
    """The public op `op_name` of `logits` along `axis`: ``array_fn(value,
    axis, xp)`` of the checked float input, recorded as `op_type` with the
    axis attribute."""

    def op(logits, axis=-1, name=None):
        del name
        x = _float_input(logits, "logits", op_name)
        axis = _check_axis(axis, x.ndim, op_name)
        return _record_along(op_type, x, array_fn(x._value, axis, _xp(x._value)),
                             axis)

    op.__name__ = op.__qualname__ = op_name
    op.__doc__ = doc
    return op


def _record_along(op_type, x, value, axis):
    """Wrap `value` (the result of op `op_type` of `x` along `axis`) and
    record the op."""
    y = wrap(value)
    record_operation(op_type, (x,), (y,), {"axis": axis})
    return y


softmax = _along_axis("softmax", "Softmax", _softmax_array, _ALONG_AXIS_DOC.format(
    name="softmax",
    summary="Softmax along `axis`: ``exp(logits) / sum(exp(logits), axis)``.",
    axis_note="\n    The dimension the probabilities sum over.",
    notes="The maximum along `axis` is subtracted first, so large logits do not\n"
    "overflow.  The gradient is ``(grad - sum(grad * y, axis)) * y``.",
    args="[1000.0, 1000.0, -1000.0]", result="array([0.5, 0.5, 0. ])"))


@register_gradient("Softmax")
def _softmax_grad(op, grad):
    axis = op.get_attr("axis")
    y = op.outputs[0]
    return (grad - reduction_ops.reduce_sum(grad * y, axis=axis, keepdims=True)) * y


log_softmax = _along_axis(
    "log_softmax", "LogSoftmax", _log_softmax_array, _ALONG_AXIS_DOC.format(
        name="log_softmax",
        summary="Log of the softmax along `axis`: ``logits - logsumexp(logits, "
        "axis)``.", axis_note="",
        notes="The gradient is ``grad - sum(grad, axis) * exp(y)``.",
        args="[0.0, 0.0]", result="array([-0.69314718, -0.69314718])"))


@register_gradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    axis = op.get_attr("axis")
    y = op.outputs[0]
    total = reduction_ops.reduce_sum(grad, axis=axis, keepdims=True)
    return grad - total * unary_ops.exp(y)


# -- l2_loss -----------------------------------------------------------------------


def l2_loss(t, name=None):
    """Half the squared L2 norm: ``sum(t ** 2) / 2``.

    Parameters
    ----------
    t : array_like, Tensor or Variable
        float16, float32 or float64.
    name : str, optional
        Ignored.

    Returns
    -------
    Tensor
        A scalar of the dtype of `t`.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.nn.l2_loss([[1.0, 2.0], [3.0, 4.0]]).numpy()
    array(15.)
    """
    del name
    x = _float_input(t, "t", "l2_loss")
    v = x._value
    xp = _xp(v)
    y = wrap(_as(xp.sum(v * v) / v.dtype.type(2), v.dtype, xp))
    record_operation("L2Loss", (x,), (y,))
    return y


@register_gradient("L2Loss")
def _l2_loss_grad(op, grad):
    return op.inputs[0] * grad


# -- sigmoid cross-entropy ---------------------------------------------------------


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise logistic loss of `logits` against probabilities `labels`.

    With ``x = logits`` and ``z = labels`` the loss is ``z * -log(sigmoid(x)) +
    (1 - z) * -log(1 - sigmoid(x))``, computed as

    .. math:: \\max(x, 0) - x z + \\log(1 + e^{-|x|})

    which neither overflows nor loses precision for large ``|x|``.

    Parameters
    ----------
    labels : array_like, Tensor or Variable
        Same shape and dtype as `logits`, usually in ``[0, 1]``.
    logits : array_like, Tensor or Variable
        float16, float32 or float64.
    name : str, optional
        Ignored.

    Returns
    -------
    Tensor of the shape and dtype of `logits`.

    Raises
    ------
    InvalidArgumentError
        If the shapes differ, or the dtypes differ, or `logits` is not floating.

    Notes
    -----
    The gradient is ``grad * (sigmoid(x) - z)`` for the logits and ``-grad *
    x`` for the labels.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.nn.sigmoid_cross_entropy_with_logits(
    ...     labels=[1.0, 0.0, 1.0], logits=[100.0, 100.0, 0.0]).numpy().round(6)
    array([  0.      , 100.      ,   0.693147])
    """
    del name
    if labels is None or logits is None:
        raise TypeError(
            "sigmoid_cross_entropy_with_logits needs both labels= and logits="
        )
    x = _float_input(logits, "logits", "sigmoid_cross_entropy_with_logits")
    z = _same_dtype(labels, x, "sigmoid_cross_entropy_with_logits")
    if z.shape != x.shape:
        raise InvalidArgumentError(
            f"sigmoid_cross_entropy_with_logits: logits and labels must have the "
            f"same shape, got logits of shape {x.shape} and labels of shape "
            f"{z.shape}"
        )
    xv, zv = x._value, z._value
    zero = xv.dtype.type(0)
    xp = _xp(xv)
    tail = _elementwise.log1p(_elementwise.exp(xp.negative(xp.abs(xv))))
    loss = xp.maximum(xv, zero) - xv * zv + tail
    y = wrap(_as(loss, xv.dtype, xp))
    record_operation("SigmoidCrossEntropyWithLogits", (z, x), (y,))
    return y


@register_gradient("SigmoidCrossEntropyWithLogits")
def _sigmoid_cross_entropy_grad(op, grad):
    z, x = op.inputs
    grad_labels = None if 0 in op.skip_input_indices else -(grad * x)
    grad_logits = None
    if 1 not in op.skip_input_indices:
        grad_logits = grad * (unary_ops.sigmoid(x) - z)
    return grad_labels, grad_logits


# -- softmax cross-entropy ---------------------------------------------------------


def softmax_cross_entropy_with_logits(labels=None, logits=None, axis=-1, name=None):
    """Cross-entropy between a distribution `labels` and ``softmax(logits)``.

    The loss of each row is ``sum(labels * (logsumexp(logits) - logits),
    axis)``, computed from logits shifted by their maximum, so large logits
    stay finite.  Gradients flow to both `labels` and `logits`.

    Parameters
    ----------
    labels : array_like, Tensor or Variable
        Broadcastable to the shape of `logits` (usually equal), same dtype;
        each slice along `axis` is usually a probability distribution.
    logits : array_like, Tensor or Variable
        float16, float32 or float64, at least 1-D.
    axis : int, default=-1
        The class dimension.
    name : str, optional
        Ignored.

    Returns
    -------
    Tensor of the shape of `logits` without `axis`, dtype of `logits`.

    Raises
    ------
    InvalidArgumentError
        If `labels` does not broadcast to the shape of `logits`, the dtypes
        differ, `logits` is a scalar or `axis` is out of range.

    Notes
    -----
    The gradient is ``grad * (softmax(logits) - labels)`` for the logits and
    ``-grad * log_softmax(logits)`` for the labels (expanded along `axis`).

    .. warning::
       As in TensorFlow, the logits gradient assumes that each slice of
       `labels` along `axis` sums to 1; for other labels it is not the
       derivative of the returned loss (which is then ``sum(labels) *
       logsumexp(logits) - sum(labels * logits)``).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.nn.softmax_cross_entropy_with_logits(
    ...     labels=[[0.0, 1.0], [0.5, 0.5]], logits=[[0.0, 0.0], [1000.0, 0.0]]
    ... ).numpy()
    array([  0.69314718, 500.        ])
    """
    del name
    if labels is None or logits is None:
        raise TypeError(
            "softmax_cross_entropy_with_logits needs both labels= and logits="
        )
    op_name = "softmax_cross_entropy_with_logits"
    x = _float_input(logits, "logits", op_name)
    z = _same_dtype(labels, x, op_name)
    axis = _check_axis(axis, x.ndim, op_name)
    if z.shape != x.shape:
        try:
            np.broadcast_shapes(z.shape, x.shape)
            ok = (
                len(z.shape) <= len(x.shape)
                and np.broadcast_shapes(z.shape, x.shape) == x.shape
            )
        except ValueError:
            ok = False
        if not ok:
            raise InvalidArgumentError(
                f"{op_name}: labels of shape {z.shape} must have the shape of "
                f"logits {x.shape} or broadcast to it"
            )
        z = array_ops.broadcast_to(z, x.shape)
    xv, zv = x._value, z._value
    xp = _xp(xv)
    shifted = _shifted(xv, axis, xp)
    e = _elementwise.exp(shifted)
    sum_e = xp.sum(e, axis=axis, keepdims=True)
    loss = xp.sum(zv * (_elementwise.log(sum_e) - shifted), axis=axis)
    y = wrap(_as(loss, xv.dtype, xp))
    # The softmax is kept for the gradient (no second exp pass).
    record_operation(
        "SoftmaxCrossEntropyWithLogits",
        (x, z),
        (y,),
        {"axis": axis, "probs": e / sum_e},
    )
    return y


@register_gradient("SoftmaxCrossEntropyWithLogits")
def _softmax_cross_entropy_grad(op, grad):
    x, z = op.inputs
    axis = op.get_attr("axis")
    grad = array_ops.expand_dims(grad, axis)
    grad_logits = grad_labels = None
    if 0 not in op.skip_input_indices:
        probs = _record_along("Softmax", x, op.get_attr("probs"), axis)
        grad_logits = grad * (probs - z)
    if 1 not in op.skip_input_indices:
        log_probs = _record_along(
            "LogSoftmax", x, _log_softmax_array(x._value, axis, _xp(x._value)),
            axis)
        grad_labels = -(grad * log_probs)
    return grad_logits, grad_labels


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Cross-entropy of ``softmax(logits)`` against integer class ids.

    For each row the loss is ``logsumexp(logits) - logits[label]``, computed
    from logits shifted by their maximum.

    Parameters
    ----------
    labels : array_like or Tensor of shape logits.shape[:-1], int32 or int64
        Class ids in ``[0, logits.shape[-1])``.
    logits : array_like, Tensor or Variable of shape (..., n_classes)
        float16, float32 or float64, at least 1-D.
    name : str, optional
        Ignored.

    Returns
    -------
    Tensor of the shape of `labels` and the dtype of `logits`.

    Raises
    ------
    InvalidArgumentError
        If `labels` is not of an integer dtype, its shape is not
        ``logits.shape[:-1]``, or a label lies outside ``[0, n_classes)`` (the
        message names the bad label and lists the labels).

    Notes
    -----
    The gradient w.r.t. the logits is ``grad * (softmax(logits) -
    one_hot(labels))``; labels get no gradient.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> sg.nn.sparse_softmax_cross_entropy_with_logits(
    ...     labels=[1, 0], logits=[[0.0, 0.0], [1000.0, 0.0]]).numpy()
    array([0.69314718, 0.        ])
    """
    del name
    if labels is None or logits is None:
        raise TypeError(
            "sparse_softmax_cross_entropy_with_logits needs both labels= and logits="
        )
    op_name = "sparse_softmax_cross_entropy_with_logits"
    x = _float_input(logits, "logits", op_name)
    z = as_tensor(labels, name="labels")
    if z.dtype.kind not in "iu":
        raise InvalidArgumentError(
            f"{op_name}: labels must be int32 or int64 class ids, got dtype {z.dtype}"
        )
    if x.ndim == 0:
        raise InvalidArgumentError(
            f"{op_name}: logits must have at least 1 dimension, got a scalar"
        )
    if z.ndim != x.ndim - 1:
        raise InvalidArgumentError(
            f"{op_name}: the rank of labels must be the rank of logits minus 1; "
            f"got labels of shape {z.shape} (rank {z.ndim}) and logits of shape "
            f"{x.shape} (rank {x.ndim})"
        )
    if z.shape != x.shape[:-1]:
        raise InvalidArgumentError(
            f"{op_name}: labels.shape must equal logits.shape without its last "
            f"dimension; got labels of shape {z.shape} and logits of shape "
            f"{x.shape}"
        )
    n_classes = x.shape[-1]
    zv = z._value
    if zv.size and bool((zv.min() < 0) | (zv.max() >= n_classes)):
        # the error path: the labels go to the host for the message
        flat = backend_of(zv).host(zv).reshape(-1)
        bad = flat[np.flatnonzero((flat < 0) | (flat >= n_classes))[0]]
        shown = " ".join(str(v) for v in flat[:100])
        more = " ..." if flat.size > 100 else ""
        raise InvalidArgumentError(
            f"{op_name}: received a label value of {bad} which is outside the "
            f"valid range of [0, {n_classes}). Label values: {shown}{more}"
        )
    xv = x._value
    xp = _xp(xv)
    shifted = _shifted(xv, -1, xp)
    e = _elementwise.exp(shifted)
    sum_e = xp.sum(e, axis=-1, keepdims=True)
    picked = xp.take_along_axis(shifted, zv[..., None].astype(np.intp), axis=-1)
    loss = (_elementwise.log(sum_e) - picked)[..., 0]
    y = wrap(_as(loss, xv.dtype, xp))
    record_operation(
        "SparseSoftmaxCrossEntropyWithLogits",
        (x, z),
        (y,),
        {"probs": e / sum_e},
    )
    return y


@register_gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_cross_entropy_grad(op, grad):
    x, z = op.inputs
    probs_value = op.get_attr("probs")
    probs = _record_along("Softmax", x, probs_value, x.ndim - 1)
    xp = _xp(probs_value)
    # exactly 0 and 1 (labels were checked to lie in range)
    one_hot = (z._value[..., None] == xp.arange(probs_value.shape[-1])).astype(
        probs_value.dtype)
    grad = array_ops.expand_dims(grad, -1)
    return grad * (probs - wrap(one_hot)), None
